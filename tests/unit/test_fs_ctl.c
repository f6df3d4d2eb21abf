/* SPDX-License-Identifier: MIT */
/*
 * fs_ctl(): a ctl line is taken whole or refused with a sentence; a refused line
 * changes nothing. A line with more words than its command takes is refused, not cut
 * (a path with a space in it would have been taken for its first word: review of the
 * recovery ladder's `saved` verb).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fs.h"
#include "sched_fixture.h"
#include "test_util.h"

#define SEC 1000000ull

static uint64_t clock_usec = 1800000000ull * SEC;

static uint64_t tick(unsigned sec)
{
	clock_usec += (uint64_t)sec * SEC;
	return clock_usec;
}

/* A job of 16 NPUs with recovery [dump, job], its first server's NPU failed: a save waits. */
static struct sched_job *dump_waits(struct fs_ctx *ctx)
{
	struct fx_opts o = { .servers = 3 };
	struct conf_job_spec *s = fx_spec("big", 16);
	struct sched_job *j;
	uint64_t t = tick(1);

	memset(ctx, 0, sizeof(*ctx));
	ctx->cluster = fx_cluster(&o);
	ctx->conf = ctx->cluster->conf;
	for (unsigned i = 0; i < 3; i++)
		fx_report_ok(ctx->cluster, i, t);
	s->checkpoint_dir = strdup("/data/ckpt");
	assert_non_null(s->checkpoint_dir);
	s->recovery[0] = CONF_RECOVERY_DUMP;
	s->recovery[1] = CONF_RECOVERY_JOB;
	s->recovery_count = 2;
	j = fx_submit_spec(ctx->cluster, s, FX_UID);
	fx_report_npu(ctx->cluster, j->slices[0].server, j->slices[0].device_ids[0],
		      CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	return j;
}

static int ctl(struct fs_ctx *ctx, const char *line, char *why)
{
	struct fs_path p;

	assert_int_equal(fs_path_parse("/jobs/big/ctl", &p), 0);
	return fs_ctl(ctx, &p, line, FX_UID, false, tick(1), why);
}

static void test_ctl_saved_with_a_spaced_path_is_refused(void **state)
{
	struct fs_ctx ctx;
	struct sched_job *j = dump_waits(&ctx);
	char why[SCHED_REASON_MAX] = "", line[256];

	(void)state;
	snprintf(line, sizeof(line), "saved 1 %s - 42 /data/my ckpt/x.ckpt",
		 fx_server_name(ctx.cluster, j->slices[1].server));
	assert_int_equal(ctl(&ctx, line, why), -EINVAL);
	assert_non_null(strstr(why, "too many words"));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.answered_count, 0);
	snprintf(line, sizeof(line), "saved 1 %s - 42 /data/ckpt/x.ckpt",
		 fx_server_name(ctx.cluster, j->slices[1].server));
	assert_int_equal(ctl(&ctx, line, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_string_equal(j->resume_path, "/data/ckpt/x.ckpt");
	sched_cluster_free(ctx.cluster);
}

static void test_ctl_answers_say_what_is_wrong(void **state)
{
	struct fs_ctx ctx;
	struct sched_job *j = dump_waits(&ctx);
	const char *srv = fx_server_name(ctx.cluster, j->slices[1].server);
	char why[SCHED_REASON_MAX] = "", line[256];

	(void)state;
	assert_int_equal(ctl(&ctx, "saved 1", why), -EINVAL);
	assert_non_null(strstr(why, "usage: saved"));
	snprintf(line, sizeof(line), "saved x %s - 42", srv);
	assert_int_equal(ctl(&ctx, line, why), -EINVAL);
	assert_non_null(strstr(why, "usage: saved"));
	snprintf(line, sizeof(line), "saved 1 %s - 42 relative/x.ckpt", srv);
	assert_int_equal(ctl(&ctx, line, why), -EINVAL);
	snprintf(line, sizeof(line), "saved 1 %s - 99999999999999999999 /data/x", srv);
	assert_int_equal(ctl(&ctx, line, why), -EINVAL);
	snprintf(line, sizeof(line), "saved 2 %s - 42 /data/x", srv);
	assert_int_equal(ctl(&ctx, line, why), -ESTALE);
	assert_non_null(strstr(why, "has no request 2; the open request is 1"));
	snprintf(line, sizeof(line), "saved 1 %s 3 42 /data/x", srv);
	assert_int_equal(ctl(&ctx, line, why), -EINVAL);
	assert_non_null(strstr(why, "answer with \"-\""));
	snprintf(line, sizeof(line), "saved 0 %s - 42 /data/x", srv);
	assert_int_equal(ctl(&ctx, line, why), -ESTALE);
	assert_non_null(strstr(why, "has no request 0"));
	assert_int_equal(ctl(&ctx, "saved 1 no-such-server - 42 /data/x", why), -EINVAL);
	assert_non_null(strstr(why, "holds no part"));
	assert_int_equal(ctl(&ctx, "cancel now please", why), -EINVAL);
	/* nothing of the above changed the job */
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.answered_count, 0);
	assert_int_equal(j->ladder.waited_count, 1);
	snprintf(line, sizeof(line), "save-failed 1 %s -", srv);
	assert_int_equal(ctl(&ctx, line, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	sched_cluster_free(ctx.cluster);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctl_saved_with_a_spaced_path_is_refused),
		cmocka_unit_test(test_ctl_answers_say_what_is_wrong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
