/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the job directories announced to inotify watchers (fs/fs_notify_dirs.c)
 * without a mount: when a pending mkdir of the notify helper's is dropped. It was
 * dropped 5 s after its line was written, so a helper that a busy daemon answered slowly
 * (and a burst of submissions before that) lost announcements while it was only behind.
 * And what watchers are told of a directory that goes and comes back, or comes and goes,
 * before the helper made the first announcement.
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

#define SEC 1000000ull
#define JOBS 3000

struct fixture {
	struct fs_ctx ctx;
	struct sched_job jobs[JOBS];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	for (unsigned i = 0; i < JOBS; i++) {
		snprintf(f->jobs[i].name, sizeof(f->jobs[i].name), "job-%u", i);
		f->jobs[i].serial = i + 1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fs_job_dirs_free(&f->ctx);
	free(f);
	return 0;
}

/* Job @i is new to watchers: its mkdir is pending (asserted). */
static void announce(struct fixture *f, unsigned i)
{
	bool announce = false;

	assert_true(fs_job_dirs_new(&f->ctx, &f->jobs[i], &announce));
	assert_true(announce);
}

static int pending(struct fixture *f, unsigned i)
{
	return fs_notify_job_dir(&f->ctx, f->jobs[i].name, 0);
}

/* The helper's mkdir of job @i's directory: the pending one is taken. */
static void helper_makes(struct fixture *f, unsigned i)
{
	assert_int_equal(fs_notify_job_dir(&f->ctx, f->jobs[i].name, 1), 1);
	assert_int_equal(pending(f, i), 0);
}

/* A helper behind its lines keeps what it has not reached, however long it takes; what
 * it passed without making goes when it makes a later one. */
static void test_pending_kept_while_the_helper_is_behind(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = fs_now_usec();

	for (unsigned i = 0; i < 4; i++)
		announce(f, i);
	fs_job_dirs_written(&f->ctx, t0, false);
	/* 10 s on: the helper, slow, has made none yet */
	fs_job_dirs_expire(&f->ctx, t0 + 10 * SEC);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(pending(f, i), 1);
	/* it makes job-2's: it passed job-0's and job-1's lines */
	helper_makes(f, 2);
	assert_int_equal(pending(f, 0), 0);
	assert_int_equal(pending(f, 1), 0);
	assert_int_equal(pending(f, 3), 1);
	/* a job known by its serial is not new again */
	{
		bool announce = true;

		assert_false(fs_job_dirs_new(&f->ctx, &f->jobs[3], &announce));
		assert_false(announce);
	}
	helper_makes(f, 3);
}

/* A helper that made none for 30 s since the lines were written is stuck: they go. */
static void test_pending_dropped_when_the_helper_stalls(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = fs_now_usec();

	announce(f, 0);
	announce(f, 1);
	fs_job_dirs_written(&f->ctx, t0, false);
	fs_job_dirs_expire(&f->ctx, t0 + 29 * SEC);
	assert_int_equal(pending(f, 0), 1);
	fs_job_dirs_expire(&f->ctx, t0 + 31 * SEC);
	assert_int_equal(pending(f, 0), 0);
	assert_int_equal(pending(f, 1), 0);
}

/* Lines not yet written never expire; a helper that is gone makes none: all go. */
static void test_pending_unwritten_kept_and_gone_helper(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = fs_now_usec();

	announce(f, 0);
	fs_job_dirs_expire(&f->ctx, t0 + 3600 * SEC);
	assert_int_equal(pending(f, 0), 1);
	fs_job_dirs_written(&f->ctx, t0, true);
	assert_int_equal(pending(f, 0), 0);
}

/* Thousands pending (a burst): each found by name, taken in order, tables grown. */
static void test_pending_burst_taken_in_order(void **state)
{
	struct fixture *f = *state;

	for (unsigned i = 0; i < JOBS; i++)
		announce(f, i);
	fs_job_dirs_written(&f->ctx, fs_now_usec(), false);
	for (unsigned i = 0; i < JOBS; i += 2)
		assert_int_equal(pending(f, i), 1);
	for (unsigned i = 0; i < JOBS; i++)
		helper_makes(f, i);
	/* a resubmission under a known name (a new serial) has its directory already */
	{
		struct sched_job again = f->jobs[7];
		bool announce = true;

		again.serial = JOBS + 7;
		assert_true(fs_job_dirs_new(&f->ctx, &again, &announce));
		assert_false(announce);
		assert_int_equal(pending(f, 7), 0);
	}
}

/* The announcements a sweep asked for: @gone[] the names, @announced[] whether an rmdir
 * line is to be written. */
struct swept {
	unsigned n;
	char names[8][CONF_NAME_MAX + 1];
	bool announced[8];
};

static void on_gone(void *arg, const char *name, bool announce)
{
	struct swept *w = arg;

	if (w->n < 8) {
		snprintf(w->names[w->n], sizeof(w->names[0]), "%s", name);
		w->announced[w->n++] = announce;
	}
}

/* A context with a cluster of 8 servers (the sweep asks it which records are there). */
static void with_cluster(struct fs_ctx *ctx)
{
	struct fx_opts o = { .servers = 8 };

	memset(ctx, 0, sizeof(*ctx));
	ctx->cluster = fx_cluster(&o);
	ctx->conf = ctx->cluster->conf;
}

/* Job @name's record goes: cancelled, then removed. */
static void record_goes(struct fs_ctx *ctx, const char *name)
{
	assert_int_equal(fx_cancel(ctx->cluster, name, FX_UID, fx_now()), 0);
	assert_int_equal(fx_remove(ctx->cluster, name, FX_UID, fx_now()), 0);
	assert_null(sched_cluster_find_job(ctx->cluster, name));
}

/*
 * A job's record went (its rmdir pending for the helper) and a new job of that name came
 * before the helper made it: watchers are told it went, then that it is back. The
 * mkdir was skipped: they saw IN_DELETE of a directory that exists.
 */
static void test_a_directory_back_before_its_rmdir_is_announced_again(void **state)
{
	struct fs_ctx ctx;
	struct swept w = { 0 };
	bool announce = false;

	(void)state;
	with_cluster(&ctx);
	assert_true(fs_job_dirs_new(&ctx, fx_submit(ctx.cluster, "x", 1), &announce));
	assert_true(announce);
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 1), 1); /* the helper's mkdir */
	record_goes(&ctx, "x");
	fs_job_dirs_sweep(&ctx, on_gone, &w);
	assert_int_equal(w.n, 1);
	assert_true(w.announced[0]);
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 0), 2);
	/* back before the helper made the rmdir */
	assert_true(fs_job_dirs_new(&ctx, fx_submit(ctx.cluster, "x", 1), &announce));
	assert_true(announce);
	/* the helper comes to the rmdir first, then to the mkdir */
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 0), 2);
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 1), 2); /* not the mkdir's turn */
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 2), 2);
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 0), 1);
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 1), 1);
	assert_int_equal(fs_notify_job_dir(&ctx, "x", 0), 0);
	assert_true(fs_notify_job_dir_settled(&ctx, "x"));
	fs_job_dirs_free(&ctx);
	sched_cluster_free(ctx.cluster);
}

/*
 * A job's record went before the helper made its mkdir: nothing is announced (its mkdir
 * is dropped, no rmdir follows). The mkdir stayed: watchers saw IN_CREATE of a directory
 * that is gone, and nothing after.
 */
static void test_a_directory_gone_before_its_mkdir_is_never_announced(void **state)
{
	struct fs_ctx ctx;
	struct swept w = { 0 };
	bool announce = false;

	(void)state;
	with_cluster(&ctx);
	assert_true(fs_job_dirs_new(&ctx, fx_submit(ctx.cluster, "y", 1), &announce));
	assert_true(announce);
	record_goes(&ctx, "y");
	fs_job_dirs_sweep(&ctx, on_gone, &w);
	assert_int_equal(w.n, 1);
	assert_string_equal(w.names[0], "y");
	assert_false(w.announced[0]);
	assert_int_equal(fs_notify_job_dir(&ctx, "y", 0), 0);
	/* the helper had its line already: its mkdir finds nothing pending */
	assert_int_equal(fs_notify_job_dir(&ctx, "y", 1), 0);
	fs_job_dirs_free(&ctx);
	sched_cluster_free(ctx.cluster);
}

/*
 * A user's own mkdir or rmdir of a name is announced by the kernel: what the helper was
 * still to announce of it goes (its rmdir after the user's mkdir told watchers the
 * directory went; its mkdir after the user's rmdir, that it came).
 */
static void test_a_users_mkdir_or_rmdir_ends_what_was_pending(void **state)
{
	struct fs_ctx ctx;
	struct swept w = { 0 };
	bool announce = false;

	(void)state;
	with_cluster(&ctx);
	/* a mkdir pending, then the user's rmdir */
	assert_true(fs_job_dirs_new(&ctx, fx_submit(ctx.cluster, "z", 1), &announce));
	assert_int_equal(fs_notify_job_dir(&ctx, "z", 0), 1);
	fs_notify_job_dir_user(&ctx, "z", 0, false);
	assert_int_equal(fs_notify_job_dir(&ctx, "z", 0), 0);
	/* an rmdir pending (a record that went), then the user's mkdir of the name */
	assert_true(fs_job_dirs_new(&ctx, fx_submit(ctx.cluster, "v", 1), &announce));
	assert_int_equal(fs_notify_job_dir(&ctx, "v", 1), 1);
	record_goes(&ctx, "v");
	fs_job_dirs_sweep(&ctx, on_gone, &w);
	assert_int_equal(fs_notify_job_dir(&ctx, "v", 0), 2);
	fs_notify_job_dir_user(&ctx, "v", 99, true);
	assert_int_equal(fs_notify_job_dir(&ctx, "v", 0), 0);
	assert_int_equal(fs_notify_job_dir(&ctx, "v", 2), 0); /* the helper's rmdir fails */
	fs_job_dirs_free(&ctx);
	sched_cluster_free(ctx.cluster);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pending_kept_while_the_helper_is_behind,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_dropped_when_the_helper_stalls,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_unwritten_kept_and_gone_helper,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_burst_taken_in_order, setup,
						teardown),
		cmocka_unit_test(test_a_directory_back_before_its_rmdir_is_announced_again),
		cmocka_unit_test(test_a_directory_gone_before_its_mkdir_is_never_announced),
		cmocka_unit_test(test_a_users_mkdir_or_rmdir_ends_what_was_pending),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
