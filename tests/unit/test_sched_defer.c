/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of deferred scheduling passes (sched/sched_pass.c): with deferral off a
 * request runs its pass at once, as sched_schedule() did; with deferral on, N requests
 * then one owed pass give the same placements, states, reasons and per-job events as N
 * immediate ones where the order cannot matter (everything at one instant, one queue,
 * served in submission order either way), the pass runs once, and nothing is owed after.
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
#include "test_chaos.h"

#define T0 1700000000000000ull

/* 4 servers of 8 NPUs: 32 in all; the sizes below ask for 39, so some wait */
static const unsigned burst_npus[] = { 8, 1, 2, 4, 1, 8, 2, 1, 4, 8 };
#define BURST_COUNT (sizeof(burst_npus) / sizeof(burst_npus[0]))

static struct sched_cluster *cluster_of(unsigned servers)
{
	struct fx_opts o = { .servers = servers };

	return fx_cluster(&o);
}

static void submit_at(struct sched_cluster *c, const char *name, unsigned npus, uint64_t now)
{
	char reason[SCHED_REASON_MAX] = "";
	int r = sched_job_submit(c, fx_spec(name, npus), FX_UID, FX_GID, now, reason, NULL);

	if (r != 0)
		fail_msg("submit %s: %d: %s", name, r, reason);
	fx_check(c);
}

static void submit_burst(struct sched_cluster *c, uint64_t now)
{
	for (size_t i = 0; i < BURST_COUNT; i++) {
		char name[32];

		snprintf(name, sizeof(name), "job-%zu", i);
		submit_at(c, name, burst_npus[i], now);
	}
}

/* Job @name's events, one line each (kind, state, reason), in order; new string. */
static char *job_events(const struct sched_cluster *c, const char *name)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	for (const struct sched_event *e = sched_event_next(c, 0); e;
	     e = sched_event_next(c, e->seq))
		if (strcmp(e->job, name) == 0)
			fprintf(f, "%s %s %s\n", sched_event_kind_name(e->kind),
				e->state ? e->state : "-", e->reason);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* Both clusters hold the same jobs in the same states, places and events. */
static void expect_same_outcome(const struct sched_cluster *a, const struct sched_cluster *b)
{
	assert_int_equal(a->job_count, b->job_count);
	assert_int_equal(a->npus_allocated, b->npus_allocated);
	for (size_t i = 0; i < a->job_count; i++) {
		const struct sched_job *x = a->jobs[i], *y = b->jobs[i];
		char *ex, *ey;

		assert_string_equal(x->name, y->name);
		if (x->state != y->state)
			fail_msg("job %s: %s at once, %s deferred", x->name,
				 sched_job_state_name(x->state), sched_job_state_name(y->state));
		assert_string_equal(x->reason, y->reason);
		assert_int_equal(x->generation, y->generation);
		fx_expect_same_slices(x, y);
		ex = job_events(a, x->name);
		ey = job_events(b, y->name);
		assert_string_equal(ex, ey);
		free(ex);
		free(ey);
	}
}

static void test_defer_off_runs_each_pass_at_once(void **state)
{
	struct sched_cluster *c = cluster_of(4);

	(void)state;
	assert_false(c->defer_passes);
	submit_at(c, "a", 8, T0);
	assert_int_equal(sched_cluster_find_job(c, "a")->state, SCHED_JOB_RUNNING);
	assert_false(sched_pass_is_owed(c));
	assert_int_equal(c->pass_requests, 1);
	assert_int_equal(c->passes_run, 1);
	/* nothing owed: running it is a no-op */
	assert_int_equal(sched_pass_run_owed(c, T0), 0);
	assert_int_equal(c->passes_run, 1);
	sched_cluster_free(c);
}

static void test_defer_burst_shares_one_pass(void **state)
{
	struct sched_cluster *now = cluster_of(4), *later = cluster_of(4);
	uint64_t placed_before;

	(void)state;
	sched_cluster_set_deferred_passes(later, true);
	submit_burst(now, T0);
	submit_burst(later, T0);

	/* deferred: every job waits for the pass, none holds an NPU */
	assert_true(sched_pass_is_owed(later));
	assert_int_equal(later->pass_requests, BURST_COUNT);
	assert_int_equal(later->passes_run, 0);
	assert_int_equal(later->npus_allocated, 0);
	for (size_t i = 0; i < later->job_count; i++) {
		assert_int_equal(later->jobs[i]->state, SCHED_JOB_PENDING);
		assert_string_equal(later->jobs[i]->reason, "waiting for the first scheduling pass");
	}

	placed_before = now->npus_allocated;
	assert_true(placed_before > 0 && placed_before <= now->npus_total);
	assert_true(sched_pass_run_owed(later, T0) > 0);
	fx_check(later);
	assert_false(sched_pass_is_owed(later));
	assert_int_equal(later->passes_run, 1);
	assert_int_equal(now->passes_run, BURST_COUNT);
	expect_same_outcome(now, later);

	/* nothing owed afterwards: a second call runs nothing */
	assert_int_equal(sched_pass_run_owed(later, T0), 0);
	assert_int_equal(later->passes_run, 1);
	sched_cluster_free(now);
	sched_cluster_free(later);
}

/* A cancel frees NPUs: the job waiting for them starts in the owed pass, as it did at once. */
static void test_defer_cancel_starts_waiting_job_in_owed_pass(void **state)
{
	struct sched_cluster *now = cluster_of(1), *later = cluster_of(1);
	struct sched_cluster *both[] = { now, later };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		submit_at(both[i], "big", 8, T0);
		submit_at(both[i], "next", 8, T0);
	}
	expect_same_outcome(now, later);
	assert_int_equal(sched_cluster_find_job(later, "next")->state, SCHED_JOB_PENDING);

	sched_cluster_set_deferred_passes(later, true);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(sched_job_cancel(both[i], "big", FX_UID, T0 + 1000000), 0);
	assert_int_equal(sched_cluster_find_job(now, "next")->state, SCHED_JOB_RUNNING);
	/* deferred: cancelled, its NPUs free, the next job not placed yet */
	assert_int_equal(sched_cluster_find_job(later, "big")->state, SCHED_JOB_CANCELLED);
	assert_int_equal(sched_cluster_find_job(later, "next")->state, SCHED_JOB_PENDING);
	assert_int_equal(later->npus_allocated, 0);
	assert_true(sched_pass_is_owed(later));

	assert_int_equal(sched_pass_run_owed(later, T0 + 1000000), 1);
	fx_check(later);
	assert_false(sched_pass_is_owed(later));
	expect_same_outcome(now, later);
	sched_cluster_free(now);
	sched_cluster_free(later);
}

/* Turning deferral off keeps an owed pass owed; later requests run at once again. */
static void test_defer_off_again_keeps_owed_pass(void **state)
{
	struct sched_cluster *c = cluster_of(2);

	(void)state;
	sched_cluster_set_deferred_passes(c, true);
	submit_at(c, "a", 8, T0);
	sched_cluster_set_deferred_passes(c, false);
	assert_true(sched_pass_is_owed(c));
	assert_int_equal(sched_cluster_find_job(c, "a")->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_pass_run_owed(c, T0), 1);
	assert_int_equal(sched_cluster_find_job(c, "a")->state, SCHED_JOB_RUNNING);
	submit_at(c, "b", 8, T0);
	assert_int_equal(sched_cluster_find_job(c, "b")->state, SCHED_JOB_RUNNING);
	assert_false(sched_pass_is_owed(c));
	assert_int_equal(c->pass_requests, 2);
	assert_int_equal(c->passes_run, 2);
	sched_cluster_free(c);
}

/*
 * An owed pass that an allocation failure cut short is owed again, so that the next
 * round (the daemon's heartbeat thread runs owed passes each second) makes up for it:
 * each allocation of the pass fails in turn, the owed pass is then run again while
 * owed, and a full pass after that has nothing left to place. Before, the owed flag was
 * cleared first and the cut pass was lost until some other request.
 */
static void test_defer_pass_cut_short_by_no_memory_stays_owed(void **state)
{
#ifdef TEST_CHAOS

	(void)state;
	if (!chaos_hooks_work())
		return;
	for (long n = 0;; n++) {
		struct sched_cluster *c = cluster_of(4);
		bool injected;

		sched_cluster_set_deferred_passes(c, true);
		submit_burst(c, T0);
		assert_true(sched_pass_is_owed(c));
		chaos_injected = false;
		chaos_countdown = n;
		sched_pass_run_owed(c, T0);
		chaos_countdown = -1;
		injected = chaos_injected;
		/* no retry at the same instant (every request would pay for one), one a
		 * second later (the heartbeat's round) */
		if (sched_pass_is_owed(c)) {
			uint64_t v = c->version;

			assert_int_equal(sched_pass_run_owed(c, T0 + 1000), 0);
			assert_int_equal(c->version, v);
		}
		for (int round = 1; round <= 3 && sched_pass_is_owed(c); round++)
			sched_pass_run_owed(c, T0 + round * 1000000ull);
		if (sched_schedule(c, T0 + 4000000ull) != 0)
			fail_msg("allocation %ld failed in the owed pass, and the pass that made "
				 "up for it left jobs to place", n);
		assert_false(sched_pass_is_owed(c));
		fx_check(c);
		sched_cluster_free(c);
		if (!injected)
			break;
	}
#else
	(void)state;
	print_message("allocation-failure injection needs glibc without a sanitizer; not run\n");
#endif
}

#ifdef TEST_CHAOS
/* One 8-NPU server held by a job with a time limit, and an 8-NPU job owed its first pass:
 * that pass reserves the server for it. */
static struct sched_cluster *reservation_case(void)
{
	struct sched_cluster *c = cluster_of(1);
	struct conf_job_spec *s = fx_spec("holder", 8);

	s->time_limit_sec = 3600;
	fx_submit_spec(c, s, FX_UID);
	sched_cluster_set_deferred_passes(c, true);
	fx_submit(c, "waiter", 8);
	assert_true(sched_pass_is_owed(c));
	return c;
}
#endif

/*
 * The same where the pass reserves NPUs: an allocation failure while it works out the
 * reservation cut the pass short too. After each failure in turn the pass is owed again,
 * or the waiting job says, as the pass with memory does, that the server is reserved for
 * it (or that its reason was not kept); before, it was told there was no room, as if nothing could be reserved.
 */
static void test_defer_reservation_cut_short_by_no_memory_stays_owed(void **state)
{
#ifdef TEST_CHAOS
	struct sched_cluster *ref;
	const char *want;

	(void)state;
	if (!chaos_hooks_work())
		return;
	ref = reservation_case();
	sched_pass_run_owed(ref, fx_now());
	want = sched_cluster_find_job(ref, "waiter")->reason;
	if (!strstr(want, "first in line: node-0 reserved"))
		fail_msg("the pass with memory reserves nothing: \"%s\"", want);
	sched_cluster_free(ref);
	for (long n = 0;; n++) {
		struct sched_cluster *c = reservation_case();
		const struct sched_job *j;
		bool injected;

		chaos_injected = false;
		chaos_countdown = n;
		sched_pass_run_owed(c, fx_now());
		chaos_countdown = -1;
		injected = chaos_injected;
		j = sched_cluster_find_job(c, "waiter");
		if (!sched_pass_is_owed(c) && !strstr(j->reason, "first in line: node-0 reserved") &&
		    !strstr(j->reason, "reason not kept"))
			fail_msg("allocation %ld failed, the pass is not owed and the job says \"%s\"",
				 n, j->reason);
		fx_check(c);
		sched_cluster_free(c);
		if (!injected)
			break;
	}
#else
	(void)state;
	print_message("allocation-failure injection needs glibc without a sanitizer; not run\n");
#endif
}

#ifdef TEST_CHAOS
/* One 8-NPU server held by a job of a low-priority queue, and an 8-NPU job of a
 * high-priority queue owed its first pass: that pass preempts the first. */
static struct sched_cluster *preemption_case(void)
{
	static const char queues[] = "  - name: prod\n"
				     "    priority: 900\n"
				     "  - name: batch\n"
				     "    priority: 100\n";
	struct fx_opts o = { .servers = 1, .queues = queues };
	struct sched_cluster *c = fx_cluster(&o);

	fx_submit_spec(c, fx_spec_full("low", 8, "batch", 500), FX_UID);
	assert_int_equal(sched_cluster_find_job(c, "low")->state, SCHED_JOB_RUNNING);
	sched_cluster_set_deferred_passes(c, true);
	fx_submit_spec(c, fx_spec_full("hi", 8, "prod", 500), FX_UID);
	assert_true(sched_pass_is_owed(c));
	return c;
}
#endif

/*
 * The same where the pass preempts: an allocation failure while it chooses the victims
 * is a pass cut short, not a search that found none. After each failure in turn the
 * pass is owed again, or the low-priority job is stopping for the other (or the other's
 * reason was not kept).
 */
static void test_defer_preemption_cut_short_by_no_memory_stays_owed(void **state)
{
#ifdef TEST_CHAOS
	struct sched_cluster *ref;

	(void)state;
	if (!chaos_hooks_work())
		return;
	ref = preemption_case();
	sched_pass_run_owed(ref, fx_now());
	assert_int_equal(sched_cluster_find_job(ref, "low")->state, SCHED_JOB_STOPPING);
	sched_cluster_free(ref);
	for (long n = 0;; n++) {
		struct sched_cluster *c = preemption_case();
		bool injected;

		chaos_injected = false;
		chaos_countdown = n;
		sched_pass_run_owed(c, fx_now());
		chaos_countdown = -1;
		injected = chaos_injected;
		if (!sched_pass_is_owed(c) &&
		    sched_cluster_find_job(c, "low")->state != SCHED_JOB_STOPPING &&
		    !strstr(sched_cluster_find_job(c, "hi")->reason, "reason not kept"))
			fail_msg("allocation %ld failed, the pass is not owed and nothing was "
				 "preempted: \"%s\"", n, sched_cluster_find_job(c, "hi")->reason);
		fx_check(c);
		sched_cluster_free(c);
		if (!injected)
			break;
	}
#else
	(void)state;
	print_message("allocation-failure injection needs glibc without a sanitizer; not run\n");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defer_off_runs_each_pass_at_once),
		cmocka_unit_test(test_defer_burst_shares_one_pass),
		cmocka_unit_test(test_defer_cancel_starts_waiting_job_in_owed_pass),
		cmocka_unit_test(test_defer_off_again_keeps_owed_pass),
		cmocka_unit_test(test_defer_pass_cut_short_by_no_memory_stays_owed),
		cmocka_unit_test(test_defer_reservation_cut_short_by_no_memory_stays_owed),
		cmocka_unit_test(test_defer_preemption_cut_short_by_no_memory_stays_owed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
