/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the job directories announced to inotify watchers (fs/fs_notify_dirs.c)
 * without a mount: when a pending mkdir of the notify helper's is dropped. It was
 * dropped 5 s after its line was written, so a helper that a busy daemon answered slowly
 * (and a burst of submissions before that) lost announcements while it was only behind.
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
