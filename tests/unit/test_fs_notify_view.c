/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of what a standby's notifier carries from one view of the state to the next
 * (fs_notify_view_swapped(), fs/fs_notify.c): a job the watchers were told of and that
 * did not change is not announced again; one that changed, is new, or whose change the
 * notifier had not announced yet when the next view came, is; and marking them touches
 * nothing but the notifier's list (no record written again, no kept pass lost).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "sched_fixture.h"

/* A view as a standby builds one: the records of @leader restored into a new cluster,
 * on no dirty list (a restore touches nothing). */
static struct sched_cluster *view_of(struct sched_cluster *leader)
{
	struct fx_opts o = { .servers = 8 };
	struct sched_cluster *v = fx_cluster(&o);

	fx_save_and_restore(leader, v);
	while (sched_dirty_pop(v, SCHED_DIRTY_NOTIFY))
		;
	while (sched_dirty_pop(v, SCHED_DIRTY_STORE))
		;
	return v;
}

/* What the notifier's round does with a job it takes: told as it is now. */
static void notifier_tells_all(struct sched_cluster *c)
{
	struct sched_job *j;

	while ((j = sched_dirty_pop(c, SCHED_DIRTY_NOTIFY))) {
		j->notified_state = (int)j->state + 1;
		j->notified_generation = j->generation;
		j->notified_version = j->version;
	}
}

static bool on_notify_list(const struct sched_cluster *c, const char *name)
{
	for (const struct sched_job *j = c->dirty_head[SCHED_DIRTY_NOTIFY]; j;
	     j = j->dirty[SCHED_DIRTY_NOTIFY].next)
		if (strcmp(j->name, name) == 0)
			return true;
	return false;
}

/* Put view @v in place of the one @ctx serves (which is freed), as swap_in() does: what
 * it marks is for the notifier alone (no record to write again, no kept pass lost, no
 * job's version moved). */
static void swap(struct fs_ctx *ctx, struct sched_cluster *v, bool first)
{
	struct sched_cluster *old = ctx->cluster;
	uint64_t mutations = v->mutations, versions = 0, after = 0;

	for (size_t i = 0; i < v->job_count; i++)
		versions += v->jobs[i]->version;
	ctx->cluster = v;
	fs_notify_view_swapped(ctx, old, first);
	sched_cluster_free(old);
	for (size_t i = 0; i < v->job_count; i++)
		after += v->jobs[i]->version;
	assert_int_equal(v->mutations, mutations);
	assert_int_equal(after, versions);
	assert_null(v->dirty_head[SCHED_DIRTY_STORE]);
}

/* A standby's context serving its first view of @leader. */
static void standby_of(struct fs_ctx *ctx, struct sched_cluster *leader)
{
	struct fx_opts o = { .servers = 8 };

	memset(ctx, 0, sizeof(*ctx));
	pthread_cond_init(&ctx->notify_cv, NULL);
	ctx->cluster = fx_cluster(&o); /* the empty state a standby mounts with */
	swap(ctx, view_of(leader), true);
}

static void standby_free(struct fs_ctx *ctx)
{
	fs_job_dirs_free(ctx);
	sched_cluster_free(ctx->cluster);
	pthread_cond_destroy(&ctx->notify_cv);
}

static void test_only_what_changed_is_announced(void **state)
{
	struct fx_opts o = { .servers = 8 };
	struct sched_cluster *leader = fx_cluster(&o);
	struct fs_ctx ctx;

	(void)state;
	fx_submit(leader, "same", 1);
	fx_submit(leader, "cancelled", 1);
	standby_of(&ctx, leader);
	/* the first view: nothing announced */
	assert_null(ctx.cluster->dirty_head[SCHED_DIRTY_NOTIFY]);
	assert_int_equal(ctx.view_swaps, 1);
	/* the leader cancels one and takes a new one */
	assert_int_equal(fx_cancel(leader, "cancelled", FX_UID, fx_now()), 0);
	fx_submit(leader, "new", 1);
	swap(&ctx, view_of(leader), false);
	assert_false(on_notify_list(ctx.cluster, "same"));
	assert_true(on_notify_list(ctx.cluster, "cancelled"));
	assert_true(on_notify_list(ctx.cluster, "new"));
	/* a third view before the notifier's round: what it had not announced still is */
	swap(&ctx, view_of(leader), false);
	assert_false(on_notify_list(ctx.cluster, "same"));
	assert_true(on_notify_list(ctx.cluster, "cancelled"));
	assert_true(on_notify_list(ctx.cluster, "new"));
	/* told, then the same again: nothing */
	notifier_tells_all(ctx.cluster);
	swap(&ctx, view_of(leader), false);
	assert_null(ctx.cluster->dirty_head[SCHED_DIRTY_NOTIFY]);
	assert_int_equal(ctx.view_swaps, 4);
	standby_free(&ctx);
	sched_cluster_free(leader);
}

/* A job replaced by another of its name (a new serial) is new to the view. */
static void test_a_replaced_job_is_new(void **state)
{
	struct fx_opts o = { .servers = 8 };
	struct sched_cluster *leader = fx_cluster(&o);
	struct fs_ctx ctx;

	(void)state;
	fx_submit(leader, "again", 1);
	standby_of(&ctx, leader);
	assert_int_equal(fx_cancel(leader, "again", FX_UID, fx_now()), 0);
	assert_int_equal(fx_remove(leader, "again", FX_UID, fx_now()), 0);
	fx_submit(leader, "again", 1);
	swap(&ctx, view_of(leader), false);
	assert_true(on_notify_list(ctx.cluster, "again"));
	assert_int_equal(sched_cluster_find_job(ctx.cluster, "again")->notified_state, 0);
	/* the old one's directory is looked for by the next round's sweep */
	assert_int_not_equal(ctx.notified_jobs_dropped, ctx.cluster->jobs_dropped);
	standby_free(&ctx);
	sched_cluster_free(leader);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_what_changed_is_announced),
		cmocka_unit_test(test_a_replaced_job_is_new),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
