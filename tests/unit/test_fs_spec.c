/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of a spec's release (fs/fs_spec.c) without a mount: the "submitted" log line
 * written after the durability wait is about the job this release submitted, not about
 * whatever job carries its name by then.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "fs_internal.h"
#include "sched_fixture.h"

static const char spec_yaml[] = "name: a\nnpus: 8\ncommand: run\n";

struct fixture {
	struct fs_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct fx_opts o = { .servers = 2 };

	assert_non_null(f);
	f->ctx.cluster = fx_cluster(&o);
	f->ctx.conf = f->ctx.cluster->conf;
	f->ctx.log_level = 2;
	pthread_mutex_init(&f->ctx.lock, NULL);
	pthread_cond_init(&f->ctx.notify_cv, NULL);
	pthread_cond_init(&f->ctx.scan_cv, NULL);
	pthread_cond_init(&f->ctx.commit_cv, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sched_cluster_free(f->ctx.cluster);
	pthread_cond_destroy(&f->ctx.commit_cv);
	pthread_cond_destroy(&f->ctx.scan_cv);
	pthread_cond_destroy(&f->ctx.notify_cv);
	pthread_mutex_destroy(&f->ctx.lock);
	free(f);
	return 0;
}

/* Release an upload jobs/a.yaml of spec_yaml by FX_UID, as fs_release() does. */
static bool release_upload(struct fs_ctx *ctx)
{
	struct fs_handle h = { .kind = H_UPLOAD, .uid = FX_UID, .gid = FX_GID };
	bool submitted;

	h.path.kind = FS_JOB_UPLOAD;
	snprintf(h.path.job, sizeof(h.path.job), "a");
	snprintf(h.path.ext, sizeof(h.path.ext), "yaml");
	h.buf = strdup(spec_yaml);
	assert_non_null(h.buf);
	h.len = h.cap = strlen(spec_yaml);
	h.dirty = true;
	submitted = fs_spec_release(ctx, &h);
	free(h.buf);
	return submitted;
}

/* What fs_spec_log_submitted() writes to stderr (one line at most), into @out. */
static void log_submitted_into(struct fs_ctx *ctx, char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	fs_spec_log_submitted(ctx, "a", FX_UID);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
}

static void test_spec_log_submitted_names_its_state(void **state)
{
	struct fixture *f = *state;
	char line[1024];

	assert_true(release_upload(&f->ctx));
	log_submitted_into(&f->ctx, line, sizeof(line));
	print_message("%s", line);
	assert_non_null(strstr(line, "job a submitted by uid "));
	assert_non_null(strstr(line, sched_job_state_name(
		sched_cluster_find_job(f->ctx.cluster, "a")->state)));
}

static void test_spec_log_submitted_not_a_resubmission(void **state)
{
	struct fixture *f = *state;
	char line[1024], expect[128];

	assert_true(release_upload(&f->ctx));
	/* before its log line (the durability wait): cancelled, removed, submitted again */
	assert_int_equal(sched_job_cancel(f->ctx.cluster, "a", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_remove(f->ctx.cluster, "a", FX_UID, fx_now()), 0);
	fx_run(f->ctx.cluster, "a", 8);
	log_submitted_into(&f->ctx, line, sizeof(line));
	print_message("%s", line);
	snprintf(expect, sizeof(expect), "job a submitted by uid %u: removed since",
		 (unsigned)FX_UID);
	assert_non_null(strstr(line, expect));
	assert_null(strstr(line, "running"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_spec_log_submitted_names_its_state, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_spec_log_submitted_not_a_resubmission, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
