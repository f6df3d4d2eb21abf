/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the topology-blind placement (SCHED_PLACE_BLIND, sched/sched_place.c's
 * place_blind(); ascend-sim's "blind" engine): Volcano's binpack order over what is
 * left of the gang, any count of NPUs, ranks in the order servers were taken, all or
 * nothing; and that a new cluster places by the topology rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "test_util.h"

/* Three 910B servers with 5, 2 and 8 free NPUs (jobs of 3 and 6 on the first two). */
static struct sched_cluster *fragmented(void)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);

	sched_cluster_set_placement(c, SCHED_PLACE_BLIND);
	fx_run_on(c, "a", 3, 0);
	fx_run_on(c, "b", 6, 1);
	assert_int_equal(c->servers[0].npus_free, 5);
	assert_int_equal(c->servers[1].npus_free, 2);
	assert_int_equal(c->servers[2].npus_free, 8);
	return c;
}

/* sched_place(@npus) must give the slices "server:ids" of @want, in rank order. */
static void expect_slices(const struct sched_cluster *c, unsigned npus, const char *const *want,
			  size_t n)
{
	struct sched_slice *sl = NULL;
	size_t count = 0;
	unsigned rank = 0;
	char reason[SCHED_REASON_MAX] = "", ids[128], got[160];
	int r = sched_place(c, npus, NULL, &sl, &count, reason);

	if (r != 0)
		fail_msg("sched_place(%u): %d: %s", npus, r, reason);
	assert_int_equal(count, n);
	for (size_t k = 0; k < n; k++) {
		snprintf(got, sizeof(got), "%u:%s", sl[k].server, fx_ids(&sl[k], ids, sizeof(ids)));
		if (strcmp(got, want[k]) != 0)
			fail_msg("sched_place(%u) slice %zu: got %s, want %s", npus, k, got,
				 want[k]);
		assert_int_equal(sl[k].first_rank, rank);
		rank += sl[k].npu_count;
	}
	assert_int_equal(rank, npus);
	free(sl);
}

static void test_blind_is_not_the_default(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(c->placement, SCHED_PLACE_TOPOLOGY);
	assert_int_equal(sched_check_feasible(c, 12, NULL, reason), -EINVAL);
	sched_cluster_set_placement(c, SCHED_PLACE_BLIND);
	assert_int_equal(sched_check_feasible(c, 12, NULL, reason), 0);
	assert_int_equal(sched_check_feasible(c, 17, NULL, reason), -ENOSPC);
	assert_non_null(strstr(reason, "more than the 16 NPUs"));
	sched_cluster_free(c);
}

/* The fullest server that holds what is still needed; else the fullest, all of it. */
static void test_blind_binpacks_the_rest(void **state)
{
	struct sched_cluster *c = fragmented();

	(void)state;
	expect_slices(c, 2, (const char *const[]){ "1:6,7" }, 1);
	expect_slices(c, 4, (const char *const[]){ "0:3,4,5,6" }, 1);
	expect_slices(c, 8, (const char *const[]){ "2:0,1,2,3,4,5,6,7" }, 1);
	/* none holds 10: server 1's 2, then the 8 left fit server 2 only */
	expect_slices(c, 10, (const char *const[]){ "1:6,7", "2:0,1,2,3,4,5,6,7" }, 2);
	/* 12: server 1's 2, then none holds 10: server 0's 5, then 5 of server 2 */
	expect_slices(c, 12, (const char *const[]){ "1:6,7", "0:3,4,5,6,7", "2:0,1,2,3,4" }, 3);
	fx_expect_no_place(c, 16, -ENOSPC, "15 are free");
	sched_cluster_free(c);
}

/* 910 rings mean nothing to it: 3 NPUs across both rings of a server are fine. */
static void test_blind_ignores_rings(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";

	(void)state;
	sched_cluster_set_placement(c, SCHED_PLACE_BLIND);
	assert_int_equal(sched_check_feasible(c, 3, NULL, reason), 0);
	fx_isolate(c, 0, 0);
	fx_isolate(c, 0, 1);
	fx_isolate(c, 0, 2);
	expect_slices(c, 3, (const char *const[]){ "0:3,4,5" }, 1);
	sched_cluster_free(c);
}

/* A submitted job runs as one gang over fragments, or waits whole. */
static void test_blind_gang_runs_or_waits(void **state)
{
	struct sched_cluster *c = fragmented();
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "big", 12);
	assert_int_equal(j->slice_count, 3);
	assert_int_equal(sched_job_total_npus(j), 12);
	fx_check(c);
	j = fx_submit(c, "more", 4);
	assert_int_equal(j->state, SCHED_JOB_PENDING);
	assert_int_equal(c->npus_allocated, 3 + 6 + 12);
	sched_cluster_free(c);
}

/*
 * A gang larger than a server runs over fragments with no server whole: the pass's quick
 * "could it fit now" check counts free NPUs anywhere under blind placement, not whole
 * servers. Before, it said no, the job never reached place_blind(), and with backfill
 * its reservation held NPUs idle while small jobs came and went (a 32-NPU job waited
 * 300 h on a replay where whole-server placement waited 27 h).
 */
static void test_blind_gang_over_fragments_only(void **state)
{
	struct sched_cluster *c = fragmented();
	struct sched_job *j;

	(void)state;
	fx_run_on(c, "c", 1, 2); /* 5, 2 and 7 free: no server whole */
	j = fx_submit(c, "big", 12);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(j), 12);
	fx_check(c);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blind_is_not_the_default),
		cmocka_unit_test(test_blind_binpacks_the_rest),
		cmocka_unit_test(test_blind_ignores_rings),
		cmocka_unit_test(test_blind_gang_runs_or_waits),
		cmocka_unit_test(test_blind_gang_over_fragments_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
