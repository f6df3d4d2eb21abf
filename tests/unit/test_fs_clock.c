/* SPDX-License-Identifier: MIT */
/*
 * fs_clock.c: the downtime between two daemons is measured on CLOCK_BOOTTIME within one
 * boot, whatever the wall clock did; across a reboot it is the wall clock's difference,
 * never negative and never more than FS_RESTART_DOWNTIME_MAX_SEC; the mark round-trips
 * through its text and anything else is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "fs.h"

#define SEC 1000000ull
#define DAY (86400ull * SEC)
#define T0 (1800000000ull * SEC)
#define BOOT "bedff6ea-5e59-4057-9dab-4c6e976cb72a"

static struct fs_clock_mark mark(uint64_t clock, uint64_t boottime, const char *boot)
{
	struct fs_clock_mark m = { .clock_usec = clock, .boottime_usec = boottime };

	strcpy(m.boot_id, boot);
	return m;
}

/* One boot: +2 days and -1 day of wall clock over 5 s of downtime are steps, not time. */
static void test_clock_same_boot_measures_boottime(void **state)
{
	struct fs_clock_mark saved = mark(T0, 1000 * SEC, BOOT), now;
	uint64_t down = 0;
	bool measured = false;

	(void)state;
	now = mark(T0 + 2 * DAY, 1005 * SEC, BOOT);
	assert_int_equal(fs_clock_restart_shift(&saved, &now, &down, &measured),
			 (int64_t)(2 * DAY - 5 * SEC));
	assert_int_equal(down, 5 * SEC);
	assert_true(measured);
	now = mark(T0 - DAY, 1005 * SEC, BOOT);
	assert_int_equal(fs_clock_restart_shift(&saved, &now, &down, &measured),
			 -(int64_t)(DAY + 5 * SEC));
	assert_int_equal(down, 5 * SEC);
	/* no step: nothing moves */
	now = mark(T0 + 5 * SEC, 1005 * SEC, BOOT);
	assert_int_equal(fs_clock_restart_shift(&saved, &now, &down, NULL), 0);
}

/* Another boot: the wall clock's gap, at least 0, at most the bound. */
static void test_clock_other_boot_bounds_the_wall_clock(void **state)
{
	struct fs_clock_mark saved = mark(T0, 1000 * SEC, BOOT), now;
	const uint64_t max = (uint64_t)FS_RESTART_DOWNTIME_MAX_SEC * SEC;
	uint64_t down = 1;
	bool measured = true;

	(void)state;
	now = mark(T0 + 90 * SEC, 20 * SEC, "0ff0ff6e-5e59-4057-9dab-4c6e976cb72a");
	assert_int_equal(fs_clock_restart_shift(&saved, &now, &down, &measured), 0);
	assert_int_equal(down, 90 * SEC);
	assert_false(measured);
	now.clock_usec = T0 + 2 * DAY;
	assert_int_equal(fs_clock_restart_shift(&saved, &now, &down, NULL),
			 (int64_t)(2 * DAY - max));
	assert_int_equal(down, max);
	now.clock_usec = T0 - DAY;
	assert_int_equal(fs_clock_restart_shift(&saved, &now, &down, NULL), -(int64_t)DAY);
	assert_int_equal(down, 0);
	/* no boot id, or boottime that went backwards: not one boot */
	saved.boot_id[0] = '\0';
	now = mark(T0 + 2 * DAY, 1005 * SEC, "");
	fs_clock_restart_shift(&saved, &now, &down, &measured);
	assert_false(measured);
	assert_int_equal(down, max);
	saved = mark(T0, 1000 * SEC, BOOT);
	now = mark(T0 + 10 * SEC, 999 * SEC, BOOT);
	fs_clock_restart_shift(&saved, &now, &down, &measured);
	assert_false(measured);
	assert_int_equal(down, 10 * SEC);
}

static void test_clock_mark_text_round_trip(void **state)
{
	const char *bad[] = { NULL, "", "0 5 " BOOT, "1 2", "1 2 " BOOT " x", "x 2 -",
			      "99999999999999999999 1 -", "9223372036854775808 1 -", "1 -2x -" };
	struct fs_clock_mark m, back, keep;
	char buf[96];

	(void)state;
	fs_clock_mark_now(&m);
	assert_true(m.clock_usec > 0);
	assert_int_equal(fs_clock_mark_format(&m, buf, sizeof(buf)), 0);
	assert_int_equal(fs_clock_mark_parse(buf, &back), 0);
	assert_int_equal(back.clock_usec, m.clock_usec);
	assert_int_equal(back.boottime_usec, m.boottime_usec);
	assert_string_equal(back.boot_id, m.boot_id);
	m.boot_id[0] = '\0';
	assert_int_equal(fs_clock_mark_format(&m, buf, sizeof(buf)), 0);
	assert_int_equal(fs_clock_mark_parse(buf, &back), 0);
	assert_string_equal(back.boot_id, "");
	assert_int_equal(fs_clock_mark_format(&m, buf, 8), -ENOSPC);
	keep = back;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fs_clock_mark_parse(bad[i], &back) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i] ? bad[i] : "(null)");
		assert_memory_equal(&back, &keep, sizeof(back));
	}
}

/* Deadlines are on CLOCK_MONOTONIC, as the condition variables wait. */
static void test_clock_deadlines_are_monotonic(void **state)
{
	pthread_cond_t cv;
	struct timespec ts;

	(void)state;
	assert_int_equal(fs_cond_init(&cv), 0);
	fs_deadline_in(&ts, 0);
	assert_true(fs_deadline_passed(&ts));
	fs_deadline_in(&ts, 3600 * 1000L);
	assert_false(fs_deadline_passed(&ts));
	pthread_cond_destroy(&cv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_same_boot_measures_boottime),
		cmocka_unit_test(test_clock_other_boot_bounds_the_wall_clock),
		cmocka_unit_test(test_clock_mark_text_round_trip),
		cmocka_unit_test(test_clock_deadlines_are_monotonic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
