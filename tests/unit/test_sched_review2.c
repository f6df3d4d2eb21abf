/* SPDX-License-Identifier: MIT */
/*
 * Second adversarial review of issue 4 (queues, quotas, preemption, backfill, elastic
 * jobs), after the fixes whose regressions live in test_sched_break.c. Each test states
 * the promise it checks (README "Sharing the cluster" or ascend_sched.h) and the
 * suspected cause; each fails on the code it was written against.
 *
 * c->check_invariants is on (fx_cluster); a SIGABRT handler turns an abort inside sched
 * into a failure of the running test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "sched_policy_fixture.h"
#include "test_util.h"

/* ================= fewest victims on ring and pair topologies ================= */

/*
 * README: "It takes the fewest whole jobs whose NPUs make a legal placement under the
 * topology rules". One Atlas 800 (910) server: ring 0 holds x (2 NPUs) and y (2 NPUs),
 * ring 1 holds z (1 NPU) and 3 free NPUs. A 4-NPU job needs one whole ring: stopping
 * z alone frees ring 1. victims_single adds candidates largest share first (x, y, z)
 * until the server fits, so it stops x and y (two jobs) and can only drop from that
 * prefix, never swap in z. Largest-first is optimal on a mesh, not on rings.
 * Suspected cause: sched_policy.c victims_single (prefix of on_server_cmp order).
 */
static void test_review2_ring_preempt_not_fewest(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *x, *y, *z, *hi;

	(void)state;
	x = run(c, spec("x", 2, NULL, 100, 0));
	y = run(c, spec("y", 2, NULL, 100, 0));
	z = run(c, spec("z", 1, NULL, 100, 0));
	assert_int_equal(x->slices[0].device_ids[0] / 4, 0);
	assert_int_equal(y->slices[0].device_ids[0] / 4, 0);
	assert_int_equal(z->slices[0].device_ids[0] / 4, 1);
	hi = submit(c, spec("hi", 4, NULL, 900, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	if (count_state(c, SCHED_JOB_STOPPING) != 1 || z->state != SCHED_JOB_STOPPING)
		fail_msg("%u victims for a 4-NPU job on a 910 ring (x %s, y %s, z %s); "
			 "stopping z alone frees ring 1",
			 count_state(c, SCHED_JOB_STOPPING), sched_job_state_name(x->state),
			 sched_job_state_name(y->state), sched_job_state_name(z->state));
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/*
 * Same on A3 (pairs of dies; an even request takes whole pairs). Pairs 0-3 hold
 * priority-900 jobs. Pair 4 holds e (die 8, the other die free), pair 5 holds f (die
 * 10, the other free), pairs 6 and 7 hold a, b, c, d (one die each); all of priority
 * 100, e and f started first. A 4-NPU job needs two whole pairs: stopping e and f (two
 * jobs, two NPUs) is the fewest. Candidates of equal share are added newest first
 * (d, c, b, a, f, e) until the server fits, so d, c, b and a stop: four jobs.
 * Suspected cause: sched_policy.c victims_single (prefix of on_server_cmp order).
 */
static void test_review2_a3_pair_preempt_not_fewest(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *e, *f, *hi;
	char n[16];

	(void)state;
	for (unsigned p = 0; p < 4; p++) {
		snprintf(n, sizeof(n), "top%u", p);
		run(c, spec(n, 2, NULL, 900, 0));
	}
	e = run(c, spec("e", 1, NULL, 100, 0));
	run(c, spec("tmp1", 1, NULL, 100, 0));
	f = run(c, spec("f", 1, NULL, 100, 0));
	run(c, spec("tmp2", 1, NULL, 100, 0));
	run(c, spec("a", 1, NULL, 100, 0));
	run(c, spec("b", 1, NULL, 100, 0));
	run(c, spec("c", 1, NULL, 100, 0));
	run(c, spec("d", 1, NULL, 100, 0));
	assert_int_equal(fx_cancel(c, "tmp1", FX_UID, adv(1)), 0);
	assert_int_equal(fx_cancel(c, "tmp2", FX_UID, adv(1)), 0);
	fx_check(c);
	assert_int_equal(c->servers[0].npus_free, 2);
	assert_int_equal(e->slices[0].device_ids[0] / 2, 4);
	assert_int_equal(f->slices[0].device_ids[0] / 2, 5);
	hi = submit(c, spec("hi", 4, NULL, 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	if (count_state(c, SCHED_JOB_STOPPING) != 2 || e->state != SCHED_JOB_STOPPING ||
	    f->state != SCHED_JOB_STOPPING)
		fail_msg("%u victims for a 4-NPU job on A3 (e %s, f %s); stopping e and f "
			 "frees two whole pairs", count_state(c, SCHED_JOB_STOPPING),
			 sched_job_state_name(e->state), sched_job_state_name(f->state));
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* ================= preemptor reason in the borrow phase ================= */

/*
 * ascend_sched.h: a job that preempts says "preempting N jobs (...); starts when they
 * have stopped". Queue finetune (quota 8, may_borrow false) gets f1 (8 NPUs) while a
 * batch job fills the only server; f1 preempts it. The same pass then serves the
 * borrow phase, whose filter counts f1's own commitment (committed[] now holds f1's 8)
 * as if it were another job's: f1 looks over quota, is considered again, and its
 * reason becomes "queue finetune uses 0 of 8 NPUs; job needs 8" -- which stays for the
 * whole grace period (no pass runs until the victim stops).
 * Suspected cause: sched_policy.c serve (borrow filter) / consider (own is false for a
 * preemption made in this pass: p->stopping is built before the pass).
 */
static void test_review2_preemptor_reason_overwritten_by_borrow_phase(void **state)
{
	static const char queues[] = "  - name: batch\n"
				     "    priority: 100\n"
				     "  - name: finetune\n"
				     "    priority: 500\n"
				     "    quota_npus: 8\n"
				     "    may_borrow: false\n";
	struct fx_opts o = { .servers = 1, .queues = queues, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *b, *f1;

	(void)state;
	b = run(c, spec("b", 8, "batch", 500, 0));
	f1 = submit(c, spec("f1", 8, "finetune", 500, 0));
	expect_state(b, SCHED_JOB_STOPPING);
	expect_state(f1, SCHED_JOB_PENDING);
	if (!strstr(f1->reason, "preempting"))
		fail_msg("f1 preempted b but says: \"%s\"", f1->reason);
	stop_all(c);
	expect_state(f1, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* Same with may_borrow: true: the reason becomes "... may borrow only idle NPUs". */
static void test_review2_preemptor_reason_overwritten_borrowing_queue(void **state)
{
	static const char queues[] = "  - name: batch\n"
				     "    priority: 100\n"
				     "  - name: finetune\n"
				     "    priority: 500\n"
				     "    quota_npus: 8\n"
				     "    may_borrow: true\n";
	struct fx_opts o = { .servers = 1, .queues = queues, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *b, *f1;

	(void)state;
	b = run(c, spec("b", 8, "batch", 500, 0));
	f1 = submit(c, spec("f1", 8, "finetune", 500, 0));
	expect_state(b, SCHED_JOB_STOPPING);
	if (!strstr(f1->reason, "preempting"))
		fail_msg("f1 preempted b but says: \"%s\"", f1->reason);
	stop_all(c);
	expect_state(f1, SCHED_JOB_RUNNING);
	assert_false(f1->borrowing);
	sched_cluster_free(c);
}

/* ================= elastic growth vs quota commitments ================= */

/*
 * Quota commitments: NPUs promised to a preemptor whose victims are still stopping
 * count against its queue (the fix of test_regress_queue_at_quota_still_preempts).
 * grow_elastic does not count them. Queue q (quota 16, may_borrow false, priority 900)
 * runs elastic e (8..16, Atlas 800 only) at 8 while a batch job holds the other 910
 * server. p (q, 8 NPUs, A2 only) preempts the batch job on the A2 server, promising q's
 * last 8 NPUs to p. Then the batch 910 job ends: e grows to 16 in that pass (p waits
 * only on A2, so waiting_mask does not cover the 910 type) and q is at 16 of 16. When
 * the victim has stopped p may not start ("queue q uses 16 of 16 NPUs"): the batch job
 * was stopped for nothing.
 * Suspected cause: sched_policy.c grow_elastic (quota room ignores p->committed).
 */
static void test_review2_elastic_growth_takes_committed_quota(void **state)
{
	const char *yaml =
		"cluster:\n  name: mixed\n  scheduler_ip: 10.0.0.1\n"
		"resource:\n  total_npu: 24\n  enable_quota_limit: true\n"
		"queues:\n"
		"  - name: q\n    priority: 900\n    quota_npus: 16\n    may_borrow: false\n"
		"  - name: batch\n    priority: 100\n"
		"servers:\n"
		"  - name: n0\n    host_ip: 10.1.0.1\n    type: atlas800\n    switch: leaf-0\n"
		"  - name: n1\n    host_ip: 10.1.0.2\n    type: atlas800\n    switch: leaf-0\n"
		"  - name: n2\n    host_ip: 10.1.0.3\n    type: atlas800t-a2\n"
		"    switch: leaf-0\n";
	struct sched_cluster *c = cluster_yaml(yaml);
	struct sched_job *b910, *ba2, *e, *p;

	(void)state;
	b910 = run_on(c, typed(spec("b910", 8, "batch", 500, 0), "atlas800"), 0);
	ba2 = run(c, typed(spec("ba2", 8, "batch", 500, 0), "atlas800t-a2"));
	e = run(c, typed(elastic_job("e", 8, 16, "q", 500), "atlas800"));
	assert_int_equal(sched_job_total_npus(e), 8);
	p = submit(c, typed(spec("p", 8, "q", 500, 0), "atlas800t-a2"));
	expect_state(ba2, SCHED_JOB_STOPPING);
	expect_state(p, SCHED_JOB_PENDING);
	/* the other 910 server frees while p's victim stops */
	assert_int_equal(fx_complete(c, b910->name, FX_UID, adv(1)), 0);
	fx_check(c);
	stop_all(c);
	if (p->state != SCHED_JOB_RUNNING)
		fail_msg("p (promised q's last 8 NPUs when it preempted ba2) is %s: \"%s\"; e "
			 "grew to %u NPUs meanwhile", sched_job_state_name(p->state), p->reason,
			 sched_job_total_npus(e));
	sched_cluster_free(c);
}

/* ================= recovery while an unrelated preemption is in flight ================= */

/* a health report for NPU @npu of @server, a second after the last one */
static void report_npu(struct sched_cluster *c, unsigned server, unsigned npu,
		       enum conf_health_level level)
{
	fx_report_npu(c, server, npu, level, adv(1));
}

/*
 * README: "Recovery: the job goes recovering, keeps its healthy servers and replaces
 * only the failed ones when whole free servers allow". r (16 NPUs, A2) runs on n0+n1
 * (leaf-0); n2+n3 (leaf-1) are free. On the lone 910 server, hi910 preempts lo910 (an
 * unrelated preemption, another server type). NPU 0 of n0 fails: a whole free A2
 * server exists, so r should keep n1 and replace n0. sched_job_recover's new branch
 * sees "a preemption in flight" anywhere in the cluster, releases ALL of r and lets
 * the pass place it anew: the pass prefers the emptier switch, so r lands on n2+n3 and
 * loses its healthy server (and goes through the queue, where any job ahead of it may
 * take n1).
 * Suspected cause: sched_health.c sched_job_recover (preemption_in_flight is
 * cluster-wide, not limited to the server types / NPUs the preemptor's reservation
 * needs).
 */
static void test_review2_recovery_drops_healthy_servers_on_unrelated_preemption(void **state)
{
	const char *yaml =
		"cluster:\n  name: mixed\n  scheduler_ip: 10.0.0.1\n"
		"resource:\n  total_npu: 40\n"
		"queues:\n  - name: default\n"
		"servers:\n"
		"  - name: n0\n    host_ip: 10.1.0.1\n    type: atlas800t-a2\n    switch: leaf-0\n"
		"  - name: n1\n    host_ip: 10.1.0.2\n    type: atlas800t-a2\n    switch: leaf-0\n"
		"  - name: n2\n    host_ip: 10.1.0.3\n    type: atlas800t-a2\n    switch: leaf-1\n"
		"  - name: n3\n    host_ip: 10.1.0.4\n    type: atlas800t-a2\n    switch: leaf-1\n"
		"  - name: n4\n    host_ip: 10.1.0.5\n    type: atlas800\n    switch: leaf-2\n";
	struct sched_cluster *c = cluster_yaml(yaml);
	struct sched_job *r, *lo, *hi;
	bool keeps_n1 = false;

	(void)state;
	/* control: with no preemption in flight r keeps n1 and takes a free server */
	{
		struct sched_cluster *c0 = cluster_yaml(yaml);
		struct sched_job *r0 = run(c0, typed(spec("r", 16, NULL, 500, 0),
						     "atlas800t-a2"));

		report_npu(c0, 0, 0, CONF_HEALTH_CRITICAL);
		expect_state(r0, SCHED_JOB_RUNNING);
		assert_int_equal(r0->slice_count, 2);
		assert_true(r0->slices[0].server == 1 || r0->slices[1].server == 1);
		sched_cluster_free(c0);
	}
	r = run(c, typed(spec("r", 16, NULL, 500, 0), "atlas800t-a2"));
	assert_int_equal(r->slice_count, 2);
	assert_int_equal(r->slices[0].server, 0);
	assert_int_equal(r->slices[1].server, 1);
	lo = run(c, typed(spec("lo910", 8, NULL, 100, 0), "atlas800"));
	hi = submit(c, typed(spec("hi910", 4, NULL, 900, 0), "atlas800"));
	expect_state(lo, SCHED_JOB_STOPPING);
	expect_state(hi, SCHED_JOB_PENDING);
	report_npu(c, 0, 0, CONF_HEALTH_CRITICAL);
	expect_state(r, SCHED_JOB_RUNNING);
	for (size_t i = 0; i < r->slice_count; i++)
		keeps_n1 |= r->slices[i].server == 1;
	if (!keeps_n1)
		fail_msg("r recovered onto %s+%s, dropping its healthy server n1 (%s)",
			 fx_server_name(c, r->slices[0].server),
			 r->slice_count > 1 ? fx_server_name(c, r->slices[1].server) : "-",
			 r->reason);
	sched_cluster_free(c);
}

/* ---- an abort (assert or invariant breach) fails the running test, not the binary ---- */

static void on_abort(int sig)
{
	(void)sig;
	fail_msg("SIGABRT: an assert or invariant check in sched aborted (see stderr)");
}

static int setup_abort(void **state)
{
	struct sigaction sa;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_abort;
	sa.sa_flags = SA_NODEFER | SA_RESETHAND;
	sigaction(SIGABRT, &sa, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_review2_ring_preempt_not_fewest, setup_abort),
		cmocka_unit_test_setup(test_review2_a3_pair_preempt_not_fewest, setup_abort),
		cmocka_unit_test_setup(test_review2_preemptor_reason_overwritten_by_borrow_phase,
				       setup_abort),
		cmocka_unit_test_setup(test_review2_preemptor_reason_overwritten_borrowing_queue,
				       setup_abort),
		cmocka_unit_test_setup(test_review2_elastic_growth_takes_committed_quota,
				       setup_abort),
		cmocka_unit_test_setup(
			test_review2_recovery_drops_healthy_servers_on_unrelated_preemption,
			setup_abort),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
