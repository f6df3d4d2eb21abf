/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of preemption and reclaim (sched/sched_preempt.c): the fewest whole jobs on
 * every topology (mesh, 910 rings, A3 pairs and super pods, switches), reclaim of
 * borrowed NPUs by quota, victims that stop for their grace period while faults,
 * cancels and rmdir hit them, and how preemption meets reservations, time limits,
 * recovery and the per-pass preemption budget. Each test states the promise it checks
 * (README "Sharing the cluster" or ascend_sched.h); where its comment tells a bug's
 * story, it reproduces a defect found in review and failed before its fix.
 *
 * c->check_invariants is on (fx_cluster), so a breach aborts inside the scheduler;
 * setup_abort turns that into a failure of the running test.
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

static const char queues_two[] = "  - name: prod\n"
				 "    priority: 900\n"
				 "  - name: batch\n"
				 "    priority: 100\n";

/* ---- the fewest whole jobs ---- */

/*
 * A high-priority job that does not fit preempts a lower-priority whole job; the victim
 * stops for the grace period (gone from its server's jobs list at once), then goes back
 * to pending and later resumes from its checkpoint as a new generation.
 */
static void test_preempt_whole_job_then_resume(void **state)
{
	struct fx_opts o = { .servers = 2, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *hi;
	char *list = NULL;
	size_t len;

	(void)state;
	a = run(c, spec("a", 8, "batch", 500, 0));
	b = run(c, spec("b", 8, "batch", 500, 0));
	assert_int_equal(sched_job_checkpoint(c, "b", FX_UID, 40, "/ckpt/b/40", adv(1)), 0);
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	expect_reason(hi, "preempting 1 job");
	/* exactly one victim, the newest run (least work lost), and never both */
	expect_state(b, SCHED_JOB_STOPPING);
	expect_state(a, SCHED_JOB_RUNNING);
	assert_string_equal(b->preempted_by, "hi");
	assert_true(has_event(c, SCHED_EV_PREEMPTED, "b", "preempted by job hi"));
	assert_true(has_event(c, SCHED_EV_PREEMPTED, "b", "queue prod priority 900"));
	/* the stopping job keeps its NPUs but its agent no longer runs it */
	assert_int_equal(sched_job_total_npus(b), 8);
	assert_int_equal(sched_render_server_jobs(c, b->slices[0].server, &list, &len), 0);
	assert_null(strstr(list, "\nb "));
	free(list);
	assert_int_equal(c->npus_allocated, 16);

	/* before the deadline nothing moves; a second pass preempts nobody else */
	sched_tick(c, adv(1));
	sched_schedule(c, adv(1));
	expect_state(b, SCHED_JOB_STOPPING);
	expect_state(a, SCHED_JOB_RUNNING);
	expect_reason(hi, "waiting for the jobs it preempted to stop");

	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	expect_state(b, SCHED_JOB_PENDING);
	expect_reason(b, "preempted by job \"hi\"");
	assert_true(has_event(c, SCHED_EV_REQUEUED, "b", "preempted by job hi"));
	assert_int_equal(b->preemptions, 1);
	assert_int_equal(c->preemptions, 1);

	/* capacity returns: b resumes from its checkpoint as generation 2 */
	assert_int_equal(fx_complete(c, "a", FX_UID, adv(1)), 0);
	expect_state(b, SCHED_JOB_RUNNING);
	assert_int_equal(b->generation, 2);
	assert_string_equal(b->resume_path, "/ckpt/b/40");
	expect_no_reserved(c);
	fx_check(c);
	sched_cluster_free(c);
}

/* Equal or higher priority is never preempted, and `preemption: false` turns it off. */
static void test_preempt_never_equal_priority_or_when_off(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b;

	(void)state;
	a = run(c, spec("a", 8, "prod", 500, 0));
	b = submit(c, spec("b", 8, "prod", 500, 0));
	expect_state(b, SCHED_JOB_PENDING);
	expect_state(a, SCHED_JOB_RUNNING);
	b = submit(c, spec("c", 8, "batch", 900, 0)); /* a lower queue priority wins nothing */
	expect_state(b, SCHED_JOB_PENDING);
	expect_state(a, SCHED_JOB_RUNNING);
	expect_reasons(c);
	sched_cluster_free(c);

	o.no_preemption = true;
	c = fx_cluster(&o);
	a = run(c, spec("low", 8, "batch", 100, 0));
	b = submit(c, spec("high", 8, "prod", 900, 0));
	expect_state(b, SCHED_JOB_PENDING);
	expect_state(a, SCHED_JOB_RUNNING);
	assert_int_equal(c->preemptions, 0);
	sched_cluster_free(c);
}

/*
 * resource.max_preemptions_per_job (LSF's MAX_JOB_PREEMPT): a job preempted that many
 * times is no longer a victim of priority preemption; the higher-priority job waits for
 * capacity instead, and says so. Without the bound the same job is preempted again.
 */
static void test_preempt_bound_per_job(void **state)
{
	for (unsigned bound = 0; bound <= 1; bound++) {
		struct fx_opts o = { .servers = 1, .queues = queues_two, .max_preemptions = bound };
		struct sched_cluster *c = fx_cluster(&o);
		struct sched_job *low, *hi;

		(void)state;
		low = run(c, spec("low", 8, "batch", 500, 0));
		hi = submit(c, spec("hi", 8, "prod", 500, 0));
		expect_state(low, SCHED_JOB_STOPPING);
		stop_all(c);
		expect_state(hi, SCHED_JOB_RUNNING);
		assert_int_equal(low->preemptions, 1);
		assert_int_equal(sched_job_complete(c, "hi", FX_UID, adv(1)), 0);
		stop_all(c);
		sched_schedule(c, adv(1));
		expect_state(low, SCHED_JOB_RUNNING);

		hi = submit(c, spec("hi2", 8, "prod", 500, 0));
		if (bound) {
			expect_state(low, SCHED_JOB_RUNNING);
			expect_state(hi, SCHED_JOB_PENDING);
			assert_int_equal(c->preemptions, 1);
		} else {
			expect_state(low, SCHED_JOB_STOPPING);
			assert_int_equal(c->preemptions, 2);
		}
		expect_reasons(c);
		sched_cluster_free(c);
	}
}

/*
 * Known failure: preemption that evicts one member of many gangs. Two 2-server gangs
 * run; a 2-server job of higher priority must take one whole gang (both its servers),
 * not one server of each.
 */
static void test_preempt_takes_whole_gangs_not_members(void **state)
{
	struct fx_opts o = { .servers = 4, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *g1, *g2, *hi;

	(void)state;
	g1 = run(c, spec("g1", 16, "batch", 500, 0));
	g2 = run(c, spec("g2", 16, "batch", 500, 0));
	hi = submit(c, spec("hi", 16, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	/* exactly one gang stops, entirely; the other is untouched */
	assert_true((g1->state == SCHED_JOB_STOPPING) != (g2->state == SCHED_JOB_STOPPING));
	assert_int_equal(c->preemptions, 1);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	assert_int_equal(hi->slice_count, 2);
	assert_true(g1->state == SCHED_JOB_RUNNING || g2->state == SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(g1) + sched_job_total_npus(g2), 16);
	expect_no_reserved(c);
	sched_cluster_free(c);
}

/*
 * Known failure: over-eviction. A 2-NPU job needs room on one server: of the low
 * priority jobs, it takes exactly the one 2-NPU job that makes room, not the 8-NPU job
 * and not several small ones.
 */
static void test_preempt_fewest_jobs_never_more(void **state)
{
	struct fx_opts o = { .servers = 2, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *big, *s[4], *hi;

	(void)state;
	big = run(c, spec("big", 8, "batch", 500, 0));
	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "s%d", i);
		s[i] = run(c, spec(name, 2, "batch", 500, 0));
	}
	assert_int_equal(c->npus_allocated, 16);
	hi = submit(c, spec("hi", 2, "prod", 500, 0));
	expect_state(big, SCHED_JOB_RUNNING);
	assert_int_equal(c->preemptions, 1);
	{
		int stopping = 0;

		for (int i = 0; i < 4; i++)
			stopping += s[i]->state == SCHED_JOB_STOPPING;
		assert_int_equal(stopping, 1);
	}
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	/* a 16-NPU high-priority job needs both servers: then every job goes, once */
	sched_cluster_free(c);

	c = fx_cluster(&o);
	big = run(c, spec("big", 8, "batch", 100, 0));
	s[0] = run(c, spec("x", 4, "batch", 500, 0));
	s[1] = run(c, spec("y", 4, "batch", 500, 0));
	/* 8 NPUs needed on one server: evicting big (one job) beats x and y (two) */
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	expect_state(big, SCHED_JOB_STOPPING);
	expect_state(s[0], SCHED_JOB_RUNNING);
	expect_state(s[1], SCHED_JOB_RUNNING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* A multi-server preemptor takes whole servers: a free one plus the fewest victims. */
static void test_preempt_multi_server_uses_free_servers_first(void **state)
{
	struct fx_opts o = { .servers = 4, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *small, *hi;

	(void)state;
	a = run(c, spec("a", 8, "batch", 500, 0));
	b = run(c, spec("b", 8, "batch", 500, 0));
	small = run(c, spec("small", 1, "batch", 500, 0));
	/* one whole server is free; a 16-NPU job needs one more */
	hi = submit(c, spec("hi", 16, "prod", 500, 0));
	assert_int_equal(c->preemptions, 1);
	assert_int_equal((a->state == SCHED_JOB_STOPPING) + (b->state == SCHED_JOB_STOPPING) +
				 (small->state == SCHED_JOB_STOPPING),
			 1);
	/* the free whole server stays free for hi while the victim stops */
	{
		struct sched_job *late = submit(c, spec("late", 8, "batch", 500, 0));

		expect_state(late, SCHED_JOB_PENDING);
	}
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	assert_int_equal(hi->slice_count, 2);
	expect_no_reserved(c);
	fx_check(c);
	sched_cluster_free(c);
}

/* Among whole servers the preemptor takes the lowest-priority jobs (not the first in
 * inventory order), and only as many as it needs. */
static void test_preempt_multi_server_takes_lowest_priority(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *l0, *l1, *l2, *l3, *hi;

	(void)state;
	l0 = run(c, spec("low0", 8, NULL, 300, 0));
	l1 = run(c, spec("low1", 8, NULL, 300, 0));
	l2 = run(c, spec("low2", 8, NULL, 100, 0));
	l3 = run(c, spec("low3", 8, NULL, 100, 0));
	hi = submit(c, spec("hi", 16, NULL, 900, 0));
	expect_state(l0, SCHED_JOB_RUNNING);
	expect_state(l1, SCHED_JOB_RUNNING);
	expect_state(l2, SCHED_JOB_STOPPING);
	expect_state(l3, SCHED_JOB_STOPPING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);

	/* two 4-NPU jobs on one server cost two victims; one 8-NPU job costs one */
	o.servers = 3;
	c = fx_cluster(&o);
	l0 = run(c, spec("a", 8, NULL, 100, 0));
	l1 = run(c, spec("b", 8, NULL, 100, 0));
	l2 = run(c, spec("c4", 4, NULL, 100, 0));
	l3 = run(c, spec("d4", 4, NULL, 100, 0));
	hi = submit(c, spec("hi", 16, NULL, 900, 0));
	assert_int_equal(c->preemptions, 2);
	expect_state(l2, SCHED_JOB_RUNNING);
	expect_state(l3, SCHED_JOB_RUNNING);
	expect_state(l0, SCHED_JOB_STOPPING);
	expect_state(l1, SCHED_JOB_STOPPING);
	(void)hi;
	sched_cluster_free(c);
}

/*
 * README: "It takes the fewest whole jobs whose NPUs make a legal placement".
 * node-0: a(1, prio 10) b(1, prio 20) c(6, prio 30): c alone frees 6.
 * node-1: d(2, prio 40) e(2, prio 40) f(4, prio 900): d and e free 4 together.
 * A 4-NPU job of priority 500 needs ONE victim (c). The per-server search adds victims
 * in priority order until the server fits (a, b, c = 3 on node-0; d, e = 2 on node-1),
 * compares those prefix counts, takes node-1 and stops two jobs.
 */
static void test_preempt_single_server_fewest_victims(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *cc, *d, *e, *f, *hi;

	(void)state;
	a = run_on(c, spec("a", 1, NULL, 10, 0), 0);
	b = run_on(c, spec("b", 1, NULL, 20, 0), 0);
	cc = run_on(c, spec("c", 6, NULL, 30, 0), 0);
	d = run_on(c, spec("d", 2, NULL, 40, 0), 1);
	e = run_on(c, spec("e", 2, NULL, 40, 0), 1);
	f = run_on(c, spec("f", 4, NULL, 900, 0), 1);
	hi = submit(c, spec("hi", 4, NULL, 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	expect_state(f, SCHED_JOB_RUNNING);
	if (count_state(c, SCHED_JOB_STOPPING) != 1)
		fail_msg("%u victims for a 4-NPU job (a %s, b %s, c %s, d %s, e %s); one (c) "
			 "was enough", count_state(c, SCHED_JOB_STOPPING),
			 sched_job_state_name(a->state), sched_job_state_name(b->state),
			 sched_job_state_name(cc->state), sched_job_state_name(d->state),
			 sched_job_state_name(e->state));
	expect_state(cc, SCHED_JOB_STOPPING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/*
 * Whole-server preemption: a 16-NPU gang G spans node-0 and node-1; h2 and h3 hold
 * node-2 and node-3 alone; all of equal priority. A 16-NPU job needs two whole
 * servers: stopping G alone (one job) is the fewest. The greedy search takes the
 * server with the fewest new victims and breaks the tie on NPUs (8 < 16), so it picks
 * h2, then h3: two jobs stopped where one would do.
 */
static void test_preempt_whole_servers_fewest_jobs(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *g, *h2, *h3, *hi;

	(void)state;
	g = run(c, spec("g", 16, NULL, 100, 0));
	h2 = run(c, spec("h2", 8, NULL, 100, 0));
	h3 = run(c, spec("h3", 8, NULL, 100, 0));
	assert_int_equal(c->npus_allocated, 32);
	hi = submit(c, spec("hi", 16, NULL, 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	if (count_state(c, SCHED_JOB_STOPPING) != 1)
		fail_msg("%u victims (g %s, h2 %s, h3 %s); the gang g alone frees two whole "
			 "servers", count_state(c, SCHED_JOB_STOPPING),
			 sched_job_state_name(g->state), sched_job_state_name(h2->state),
			 sched_job_state_name(h3->state));
	expect_state(g, SCHED_JOB_STOPPING);
	sched_cluster_free(c);
}

/* Guard: never part of a gang, and victims keep every NPU until they stop. */
static void test_preempt_gang_whole_and_held_while_stopping(void **state)
{
	struct fx_opts o = { .servers = 4, .switches = 2, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *g, *x, *hi;

	(void)state;
	g = run(c, spec("g", 24, "batch", 500, 0));
	x = run(c, spec("x", 8, "prod", 500, 0));
	hi = submit(c, spec("hi", 8, "prod", 900, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	expect_state(g, SCHED_JOB_STOPPING);
	expect_state(x, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(g), 24);
	assert_int_equal(g->slice_count, 3);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	expect_state(g, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_total_npus(g), 0);
	expect_no_reserved(c);
	sched_cluster_free(c);
}

/* Guard: a preemptor that needs servers under two switches gets a legal placement. */
static void test_preempt_across_switches(void **state)
{
	static const unsigned per[] = { 2, 2 };
	struct fx_opts o = { .switches = 2, .per_switch = per, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v[4], *hi;
	unsigned sw[2] = { 0, 0 };

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		char n[8];

		snprintf(n, sizeof(n), "v%u", i);
		v[i] = run_on(c, spec(n, 8, "batch", 100 + i, 0), i);
	}
	/* 24 NPUs: three whole servers, so two switches whatever is chosen */
	hi = submit(c, spec("hi", 24, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	assert_int_equal(count_state(c, SCHED_JOB_STOPPING), 3);
	/* the lowest priorities go: v0, v1, v2; v3 (prio 103) stays */
	expect_state(v[3], SCHED_JOB_RUNNING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	for (size_t i = 0; i < hi->slice_count; i++)
		sw[c->servers[hi->slices[i].server].switch_index]++;
	assert_int_equal(sw[0] + sw[1], 3);
	assert_true(sw[0] && sw[1]);
	sched_cluster_free(c);
}

/* Guard: queue priority outranks job priority both ways, and a victim requeued from a
 * lower-priority queue never preempts back, however high its own job priority. */
static void test_queue_priority_outranks_job_priority_no_preempt_back(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_two, .grace_sec = -1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *p;

	(void)state;
	v = run(c, spec("v", 8, "batch", 1000, 0));
	p = submit(c, spec("p", 8, "prod", 0, 0));
	expect_state(v, SCHED_JOB_STOPPING);
	for (unsigned i = 0; i < 30; i++)
		sched_tick(c, adv(1));
	expect_state(p, SCHED_JOB_RUNNING);
	expect_state(v, SCHED_JOB_PENDING);
	assert_int_equal(c->preemptions, 1);
	assert_int_equal(p->generation, 1);
	/* a second batch job of top job priority does not preempt prod either */
	expect_state(submit(c, spec("v2", 8, "batch", 1000, 0)), SCHED_JOB_PENDING);
	expect_state(p, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* ---- A3 super pods and pairs, 910 rings ---- */

/*
 * A3, two pods of three servers. Free: node-0, node-1 (pod p0) and node-3 (pod p1);
 * low-priority v on node-2 (p0); high-priority a, b on node-4, node-5 (p1). A 48-NPU
 * job needs three servers in one pod (a 3-server job cannot be split evenly over two
 * pods): stopping v makes p0 whole. The whole-server search counts three free servers,
 * decides no victim is needed, finds the placement illegal and gives up: the job waits
 * forever behind a priority-100 job.
 */
static void test_preempt_a3_makes_a_super_pod_whole(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 6, .servers_per_pod = 3,
			     .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *a, *b, *hi;

	(void)state;
	v = run_on(c, spec("v", 16, "batch", 100, 0), 2);
	a = run_on(c, spec("a", 16, "prod", 900, 0), 4);
	b = run_on(c, spec("b", 16, "prod", 900, 0), 5);
	hi = submit(c, spec("hi", 48, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	expect_state(a, SCHED_JOB_RUNNING);
	expect_state(b, SCHED_JOB_RUNNING);
	if (v->state != SCHED_JOB_STOPPING)
		fail_msg("v (batch, priority 100) is %s; hi waits: %s",
			 sched_job_state_name(v->state), hi->reason);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* Guard: A3: a 4-NPU job needs two whole die pairs; with 2-NPU jobs on every pair of
 * node-0 and nothing else preemptible, the two lowest-priority ones go, no more. */
static void test_a3_preempt_whole_pairs(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 4, .servers_per_pod = 2,
			     .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *small[8], *p4;
	char n[16];

	(void)state;
	for (unsigned i = 0; i < 8; i++) {
		snprintf(n, sizeof(n), "s%u", i);
		small[i] = run_on(c, spec(n, 2, "batch", 100 + i, 0), 0);
	}
	run(c, spec("w1", 16, "prod", 900, 3600));
	run(c, spec("w2", 32, "prod", 900, 7200));
	assert_int_equal(c->npus_allocated, 64);
	p4 = submit(c, spec("p4", 4, "prod", 500, 0));
	expect_state(p4, SCHED_JOB_PENDING);
	assert_int_equal(count_state(c, SCHED_JOB_STOPPING), 2);
	expect_state(small[0], SCHED_JOB_STOPPING);
	expect_state(small[1], SCHED_JOB_STOPPING);
	stop_all(c);
	expect_state(p4, SCHED_JOB_RUNNING);
	for (unsigned k = 0; k < p4->slices[0].npu_count; k += 2) {
		assert_int_equal(p4->slices[0].device_ids[k] % 2, 0);
		assert_int_equal(p4->slices[0].device_ids[k + 1], p4->slices[0].device_ids[k] + 1);
	}
	fx_check(c);
	expect_no_reserved(c);
	sched_cluster_free(c);
}

/* Guard: 910 rings: a 4-NPU preemptor needs one whole ring; the lone ring it can empty
 * holds two jobs, both go; the high-priority ring stays. */
static void test_atlas800_ring_preemption(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *h, *hi;

	(void)state;
	h = run(c, spec("h", 4, "prod", 900, 0));
	a = run(c, spec("a", 2, "batch", 100, 0));
	b = run(c, spec("b", 1, "batch", 100, 0));
	assert_int_equal(c->servers[0].npus_free, 1);
	hi = submit(c, spec("hi", 4, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	expect_state(h, SCHED_JOB_RUNNING);
	expect_state(a, SCHED_JOB_STOPPING);
	expect_state(b, SCHED_JOB_STOPPING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	assert_int_equal(hi->slices[0].device_ids[0] / 4, hi->slices[0].device_ids[3] / 4);
	sched_cluster_free(c);
}

/*
 * README: "It takes the fewest whole jobs whose NPUs make a legal placement under the
 * topology rules". One Atlas 800 (910) server: ring 0 holds x (2 NPUs) and y (2 NPUs),
 * ring 1 holds z (1 NPU) and 3 free NPUs. A 4-NPU job needs one whole ring: stopping
 * z alone frees ring 1. victims_single adds candidates largest share first (x, y, z)
 * until the server fits, so it stops x and y (two jobs) and can only drop from that
 * prefix, never swap in z. Largest-first is optimal on a mesh, not on rings.
 * Suspected cause: sched_preempt.c victims_single (prefix of on_server_cmp order).
 */
static void test_preempt_ring_fewest_victims(void **state)
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
 * Suspected cause: sched_preempt.c victims_single (prefix of on_server_cmp order).
 */
static void test_preempt_a3_pair_fewest_victims(void **state)
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

/* ---- reclaim and quotas ---- */

static const char queues_reclaim[] = "  - name: a\n"
				     "    quota_npus: 8\n"
				     "    may_borrow: true\n"
				     "  - name: b\n"
				     "    quota_npus: 8\n";

/*
 * Queue b (quota 8) submits b1 and b2 (8 each) while queue a (quota 8) runs a1 in
 * quota and borrows with a2 and a3. Only 8 NPUs of b are within its quota, so only one
 * borrowed job may be reclaimed. b1's pending request is not counted in b's usage, so
 * b2 also looks "within quota" and reclaims a2 too; when they stop, b2 starts
 * *borrowing* beyond b's quota on the NPUs it reclaimed from a.
 */
static void test_reclaim_counts_the_queue_own_pending_reclaims(void **state)
{
	struct fx_opts o = { .servers = 3, .queues = queues_reclaim, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a1, *a2, *a3, *b1, *b2;

	(void)state;
	a1 = run(c, spec("a1", 8, "a", 500, 0));
	a2 = run(c, spec("a2", 8, "a", 500, 0));
	a3 = run(c, spec("a3", 8, "a", 500, 0));
	assert_true(a2->borrowing && a3->borrowing);
	b1 = submit(c, spec("b1", 8, "b", 500, 0));
	expect_state(a3, SCHED_JOB_STOPPING);
	b2 = submit(c, spec("b2", 8, "b", 500, 0));
	expect_state(a1, SCHED_JOB_RUNNING);
	if (a2->state != SCHED_JOB_RUNNING)
		fail_msg("a2 is %s (%s): reclaimed for b2, which is beyond queue b's quota",
			 sched_job_state_name(a2->state), a2->reason);
	stop_all(c);
	expect_state(b1, SCHED_JOB_RUNNING);
	assert_false(b2->state == SCHED_JOB_RUNNING && b2->borrowing);
	sched_cluster_free(c);
}

/*
 * Same cause, plain priority: queue finetune (quota 8, may_borrow false) gets f1 and f2
 * of 8 NPUs each while batch (lower priority) fills the cluster. Only one of them can
 * ever run inside the quota, yet both preempt a batch job: f2 counts finetune's usage
 * without f1, whose victims are still stopping. When they have stopped f1 runs, f2
 * waits "queue finetune uses 8 of 8 NPUs", and its victim restarts: a pointless
 * preemption (also reproduced through the mount).
 */
static void test_queue_at_quota_does_not_preempt(void **state)
{
	static const char queues[] = "  - name: batch\n"
				     "    priority: 100\n"
				     "  - name: finetune\n"
				     "    priority: 500\n"
				     "    quota_npus: 8\n"
				     "    may_borrow: false\n";
	struct fx_opts o = { .servers = 2, .queues = queues, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *f1, *f2;

	(void)state;
	run(c, spec("a1", 8, "batch", 500, 0));
	run(c, spec("a2", 8, "batch", 500, 0));
	f1 = submit(c, spec("f1", 8, "finetune", 500, 0));
	f2 = submit(c, spec("f2", 8, "finetune", 500, 0));
	if (count_state(c, SCHED_JOB_STOPPING) != 1)
		fail_msg("%u batch jobs preempted for finetune, which may use only 8 NPUs "
			 "(f2: %s)", count_state(c, SCHED_JOB_STOPPING), f2->reason);
	stop_all(c);
	expect_state(f1, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* Guard: a reclaimed borrower with a HIGHER priority than the reclaimer does not come
 * back and preempt it (no thrash), and the events say who reclaimed what. */
static void test_reclaim_higher_priority_victim_no_thrash(void **state)
{
	static const char queues[] = "  - name: hi\n"
				     "    priority: 900\n"
				     "    quota_npus: 8\n"
				     "    may_borrow: true\n"
				     "  - name: lo\n"
				     "    priority: 100\n"
				     "    quota_npus: 8\n";
	struct fx_opts o = { .servers = 2, .queues = queues, .quota = true, .grace_sec = -1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *h1, *h2, *l1;

	(void)state;
	h1 = run(c, spec("h1", 8, "hi", 500, 0));
	h2 = run(c, spec("h2", 8, "hi", 1000, 0));
	assert_true(h2->borrowing);
	l1 = submit(c, spec("l1", 8, "lo", 0, 0));
	expect_state(h2, SCHED_JOB_STOPPING);
	assert_true(has_event(c, SCHED_EV_PREEMPTED, "h2", "reclaims"));
	for (unsigned i = 0; i < 20; i++) {
		sched_tick(c, adv(1));
		fx_check(c);
	}
	expect_state(l1, SCHED_JOB_RUNNING);
	expect_state(h1, SCHED_JOB_RUNNING);
	expect_state(h2, SCHED_JOB_PENDING);
	assert_int_equal(count_events(c, SCHED_EV_PREEMPTED, NULL), 1);
	assert_int_equal(l1->generation, 1);
	/* h1 ends: h2 is within quota again and comes back on h1's NPUs, l1 untouched */
	assert_int_equal(fx_complete(c, "h1", FX_UID, adv(1)), 0);
	expect_state(h2, SCHED_JOB_RUNNING);
	expect_state(l1, SCHED_JOB_RUNNING);
	assert_false(h2->borrowing);
	sched_cluster_free(c);
}

/* Guard: a quota lowered while jobs stop counts the stopping ones; raising it lets the
 * waiting job in; the reason quotes the numbers of the moment. */
static void test_quota_change_while_stopping(void **state)
{
	static const char queues[] = "  - name: prod\n"
				     "    priority: 900\n"
				     "    quota_npus: 16\n"
				     "  - name: batch\n"
				     "    priority: 100\n";
	struct fx_opts o = { .servers = 2, .queues = queues, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *p1, *p2;
	struct sched_queue_usage u;

	(void)state;
	v = run(c, spec("v", 8, "batch", 500, 0));
	p1 = run(c, spec("p1", 8, "prod", 500, 0));
	p2 = submit(c, spec("p2", 8, "prod", 500, 0));
	expect_state(v, SCHED_JOB_STOPPING);
	/* the quota drops under what prod asks for while v stops */
	assert_int_equal(sched_queue_set_quota(c, "prod", 8, adv(1)), 0);
	expect_state(p2, SCHED_JOB_PENDING);
	expect_reason(p2, "queue prod uses 8 of 8 NPUs; job needs 8");
	stop_all(c);
	expect_state(p2, SCHED_JOB_PENDING);
	/* v was stopped for nothing: it must at least come back at once */
	expect_state(v, SCHED_JOB_RUNNING);
	sched_queue_usage(c, 0, &u);
	assert_int_equal(u.used_npus, 8);
	assert_int_equal(u.borrowed_npus, 0);
	(void)p1;
	sched_cluster_free(c);
}

/* ---- the preemptor's reason ---- */

/*
 * ascend_sched.h: a job that preempts says "preempting N jobs (...); starts when they
 * have stopped". Queue finetune (quota 8, may_borrow false) gets f1 (8 NPUs) while a
 * batch job fills the only server; f1 preempts it. The same pass then serves the
 * borrow phase, whose filter counts f1's own commitment (committed[] now holds f1's 8)
 * as if it were another job's: f1 looks over quota, is considered again, and its
 * reason becomes "queue finetune uses 0 of 8 NPUs; job needs 8" -- which stays for the
 * whole grace period (no pass runs until the victim stops).
 * Suspected cause: sched_pass.c serve (borrow filter) / consider (own is false for a
 * preemption made in this pass: p->stopping is built before the pass).
 */
static void test_preemptor_reason_kept_through_borrow_phase(void **state)
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
static void test_preemptor_reason_kept_in_a_borrowing_queue(void **state)
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

/* ---- preemption and time limits ---- */

/*
 * A victim whose time_limit is used up when it is preempted (the tick had not yet seen
 * it) must end as timeout, not be requeued and started again. The stop itself does not
 * count as run time: a victim with time left is requeued with exactly what it ran.
 */
static void test_victim_without_time_left_times_out(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_two }; /* grace 30 + 5 s */
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *hi, *l;

	(void)state;
	v = run(c, spec("v", 8, "batch", 900, 60));
	sched_tick(c, adv(59));
	expect_state(v, SCHED_JOB_RUNNING);
	/* preempted past its limit, before a tick stopped it */
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	expect_state(v, SCHED_JOB_STOPPING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	expect_state(v, SCHED_JOB_TIMEOUT);
	l = submit(c, spec("l", 8, "batch", 100, 0));
	assert_int_equal(fx_complete(c, "hi", FX_UID, adv(1)), 0);
	expect_state(l, SCHED_JOB_RUNNING);
	sched_cluster_free(c);

	/* time left: requeued, and the 35 s stop did not count */
	c = fx_cluster(&o);
	v = run(c, spec("v", 8, "batch", 900, 60));
	sched_tick(c, adv(20));
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	stop_all(c);
	expect_state(v, SCHED_JOB_PENDING);
	assert_true(sched_job_run_usec(v, clk) < 30 * SEC);
	sched_cluster_free(c);
}

/*
 * Backfill onto reserved NPUs is allowed when a job's time_limit ends before the
 * reservation starts. A reservation that waits for preempted jobs starts at their stop
 * deadline (grace + interval), but a backfilled job keeps its NPUs for its time_limit
 * PLUS the same grace + interval. So a 10 s job backfills in front of a preemptor whose
 * victim stops in 35 s and holds the reserved server until 45 s; the preemptor finds it
 * taken and preempts a second job. "Never more than needed" is broken.
 */
static void test_backfill_counts_grace_before_a_reservation(void **state)
{
	struct fx_opts o = { .servers = 3, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v1, *v2, *hi, *s;

	(void)state;
	v1 = run_on(c, spec("v1", 8, "batch", 500, 0), 1);
	v2 = run_on(c, spec("v2", 8, "batch", 500, 0), 2);
	hi = submit(c, spec("hi", 16, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	assert_int_equal(count_state(c, SCHED_JOB_STOPPING), 1);
	s = submit(c, spec("s", 1, "batch", 100, 10));
	/* s may start only if it gives the NPUs back before hi needs them */
	for (unsigned i = 0; i < 60; i++) {
		sched_tick(c, adv(1));
		fx_check(c);
	}
	expect_state(hi, SCHED_JOB_RUNNING);
	/* s (10 s + 35 s to stop it) would still hold the NPU when hi's victim is gone */
	assert_false(has_event(c, SCHED_EV_PLACED, "s", "backfilled ahead of a reservation"));
	if (c->preemptions != 1)
		fail_msg("%llu preemptions for one 16-NPU job (v1 %s, v2 %s, s %s); one was "
			 "enough", (unsigned long long)c->preemptions,
			 sched_job_state_name(v1->state), sched_job_state_name(v2->state),
			 sched_job_state_name(s->state));
	sched_cluster_free(c);
}

/* ---- stopping jobs hit by faults, cancels, rmdir ---- */

/* Guard: a Critical NPU under a stopping victim neither recovers nor restarts it. */
static void test_fault_on_stopping_victim(void **state)
{
	struct fx_opts o = { .servers = 2, .queues = queues_two, .grace_sec = -1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *w, *hi;

	(void)state;
	v = run(c, spec("v", 8, "batch", 100, 0));
	w = run(c, spec("w", 8, "batch", 500, 0));
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	expect_state(v, SCHED_JOB_STOPPING);
	report_npu(c, v->slices[0].server, 5, CONF_HEALTH_CRITICAL);
	expect_state(v, SCHED_JOB_STOPPING);
	assert_int_equal(v->restarts, 0);
	assert_int_equal(sched_job_total_npus(v), 8);
	stop_all(c);
	expect_state(v, SCHED_JOB_PENDING);
	/* the freed server has an isolated NPU: hi cannot have it and takes w instead */
	expect_state(hi, SCHED_JOB_PENDING);
	expect_state(w, SCHED_JOB_STOPPING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* Guard: a stopping victim cancelled, and another rmdir'd: the NPUs free at once and
 * the preemptor starts in the same call. */
static void test_cancel_and_remove_stopping_victims(void **state)
{
	struct fx_opts o = { .servers = 2, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v1, *v2, *hi;

	(void)state;
	v1 = run(c, spec("v1", 8, "batch", 100, 0));
	v2 = run(c, spec("v2", 8, "batch", 100, 0));
	hi = submit(c, spec("hi", 16, "prod", 500, 0));
	expect_state(v1, SCHED_JOB_STOPPING);
	expect_state(v2, SCHED_JOB_STOPPING);
	assert_int_equal(fx_cancel(c, "v1", FX_UID, adv(1)), 0);
	expect_state(v1, SCHED_JOB_CANCELLED);
	expect_state(hi, SCHED_JOB_PENDING);
	assert_int_equal(fx_remove(c, "v2", FX_UID, adv(1)), 0);
	assert_null(sched_cluster_find_job(c, "v2"));
	expect_state(hi, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* Guard: the preemptor is cancelled while its victim stops: the victim is requeued and
 * runs again at once; nobody else is preempted. */
static void test_preemptor_cancelled_while_victims_stop(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *hi;

	(void)state;
	v = run(c, spec("v", 8, "batch", 100, 0));
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	expect_state(v, SCHED_JOB_STOPPING);
	assert_int_equal(fx_cancel(c, "hi", FX_UID, adv(1)), 0);
	stop_all(c);
	expect_state(v, SCHED_JOB_RUNNING);
	assert_int_equal(v->generation, 2);
	assert_int_equal(c->preemptions, 1);
	(void)hi;
	sched_cluster_free(c);
}

/*
 * The preemptor is removed (rmdir) while its victim stops and a different job is
 * submitted under the same name. "Victims stopping for me" is matched by NAME, so the
 * new job says "waiting for the jobs it preempted to stop" though it preempted
 * nobody, and it is not even allowed to preempt on its own meanwhile.
 */
static void test_preemptor_identity_survives_name_reuse(void **state)
{
	struct fx_opts o = { .servers = 2, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *w, *hi;

	(void)state;
	v = run(c, spec("v", 8, "batch", 100, 0));
	w = run(c, spec("w", 8, "batch", 100, 0));
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	assert_int_equal(count_state(c, SCHED_JOB_STOPPING), 1);
	assert_int_equal(fx_remove(c, "hi", FX_UID, adv(1)), 0);
	/* a new, unrelated 16-NPU job called hi */
	hi = submit(c, spec("hi", 16, "prod", 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	if (strstr(hi->reason, "waiting for the jobs it preempted"))
		fail_msg("the new job hi (serial %llu) claims the old hi's victims: \"%s\"",
			 (unsigned long long)hi->serial, hi->reason);
	(void)v;
	(void)w;
	sched_cluster_free(c);
}

/*
 * A preemptor waits for its victim; meanwhile a fault hits a lower-priority job, whose
 * recovery is placed at once, outside the pass, on the free server the preemptor was
 * promised (its backfill reservation). When the victim has stopped, the preemptor
 * cannot start and preempts the recovered job: two preemptions and a pointless move.
 */
static void test_recovery_keeps_off_a_preemptor_reservation(void **state)
{
	struct fx_opts o = { .servers = 4, .queues = queues_two, .grace_sec = -1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *r, *x, *hi;

	(void)state;
	v = run_on(c, spec("v", 8, "batch", 100, 0), 1);
	r = run_on(c, spec("r", 8, "batch", 900, 0), 2);
	x = run_on(c, spec("x", 8, "prod", 900, 0), 3);
	hi = submit(c, spec("hi", 16, "prod", 500, 0));
	expect_state(v, SCHED_JOB_STOPPING);
	expect_state(r, SCHED_JOB_RUNNING);
	report_npu(c, 2, 0, CONF_HEALTH_CRITICAL);
	for (unsigned i = 0; i < 20; i++)
		sched_tick(c, adv(1));
	expect_state(hi, SCHED_JOB_RUNNING);
	if (c->preemptions != 1)
		fail_msg("%llu preemptions (v %s, r %s gen %u); the recovery of r took the "
			 "server reserved for hi", (unsigned long long)c->preemptions,
			 sched_job_state_name(v->state), sched_job_state_name(r->state),
			 r->generation);
	(void)x;
	sched_cluster_free(c);
}

/* Guard: cordoned and draining servers are never used by a preemptor, and jobs on them
 * are not stopped for it. */
static void test_preempt_skips_cordoned_and_draining(void **state)
{
	struct fx_opts o = { .servers = 3, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v0, *v1, *v2, *hi;

	(void)state;
	v0 = run_on(c, spec("v0", 8, "batch", 100, 0), 0);
	v1 = run_on(c, spec("v1", 8, "batch", 100, 0), 1);
	v2 = run_on(c, spec("v2", 8, "batch", 200, 0), 2);
	assert_int_equal(sched_server_set_cordon(c, "node-0", true, false, adv(1)), 0);
	assert_int_equal(sched_server_set_cordon(c, "node-1", true, true, adv(1)), 0);
	hi = submit(c, spec("hi", 8, "prod", 500, 0));
	expect_state(v0, SCHED_JOB_RUNNING);
	expect_state(v1, SCHED_JOB_RUNNING);
	expect_state(v2, SCHED_JOB_STOPPING);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	assert_int_equal(hi->slices[0].server, 2);
	/* a 16-NPU prod job cannot get two schedulable servers: it preempts nobody */
	{
		struct sched_job *big = submit(c, spec("big", 16, "prod", 900, 0));

		expect_state(big, SCHED_JOB_PENDING);
		expect_state(v0, SCHED_JOB_RUNNING);
		expect_state(v1, SCHED_JOB_RUNNING);
		expect_state(hi, SCHED_JOB_RUNNING);
		expect_reason(big, "cordoned");
	}
	sched_cluster_free(c);
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
static void test_recovery_keeps_healthy_servers_during_a_preemption(void **state)
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

/* ---- preemption and reservations ---- */

/*
 * Mixed cluster, no server_type: a 32-NPU job may run on four A2 servers or two A3
 * servers. The A2 servers hold four priority-100 jobs; on the A3 side one server is
 * free and the other runs a priority-900 job. Stopping the four A2 jobs is the only
 * way in. The whole-server search takes k (servers needed) from the first type and
 * then counts servers of BOTH types towards it: the free A3 server plus three A2
 * victims make "4", the placement check fails and the job never preempts.
 */
static void test_preempt_whole_servers_of_one_type(void **state)
{
	char *yaml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);
	struct sched_cluster *c;
	struct sched_job *hi;

	(void)state;
	fprintf(f, "cluster:\n  name: mixed\n  scheduler_ip: 10.0.0.1\n"
		   "resource:\n  total_npu: %u\n", 4 * 8 + 2 * 16);
	fprintf(f, "queues:\n  - name: default\n");
	fprintf(f, "servers:\n");
	for (unsigned i = 0; i < 6; i++)
		fprintf(f, "  - name: n%u\n    host_ip: 10.1.0.%u\n    type: %s\n"
			   "    switch: leaf-0\n%s", i, i + 1,
			i < 4 ? "atlas800t-a2" : "atlas900-a3",
			i < 4 ? "" : "    super_pod: p0\n");
	fclose(f);
	c = cluster_yaml(yaml);
	free(yaml);
	for (unsigned i = 0; i < 4; i++) {
		char n[16];

		snprintf(n, sizeof(n), "low%u", i);
		run_on(c, spec(n, 8, NULL, 100, 0), i);
	}
	run_on(c, spec("top", 16, NULL, 900, 0), 4);
	hi = submit(c, spec("hi", 32, NULL, 500, 0));
	expect_state(hi, SCHED_JOB_PENDING);
	if (count_state(c, SCHED_JOB_STOPPING) != 4)
		fail_msg("%u victims; hi: %s", count_state(c, SCHED_JOB_STOPPING), hi->reason);
	stop_all(c);
	expect_state(hi, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/*
 * EASY: "later jobs start ahead of it only on other NPUs, or on the reserved ones when
 * their own time_limit ends before the reservation starts". B (priority 800, 16 NPUs)
 * cannot preempt H (900) and is first in line with node-0 + node-1 reserved from L's
 * time_limit end. P (600, no time_limit) may not backfill there, so it preempts L
 * instead, ignoring the reservation. Once L has stopped, node-1 is reserved for B
 * again and P cannot start either: L was stopped for nothing (both now wait).
 */
static void test_preempt_respects_a_reservation(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *l, *b, *p;

	(void)state;
	run_on(c, spec("h", 8, NULL, 900, 100), 0);
	l = run_on(c, spec("l", 8, NULL, 100, 200), 1);
	b = submit(c, spec("b", 16, NULL, 800, 0));
	expect_state(b, SCHED_JOB_PENDING);
	expect_reason(b, "first in line");
	assert_true(b->reserved_start_usec && b->reserved_start_usec != UINT64_MAX);
	p = submit(c, spec("p", 8, NULL, 600, 0));
	expect_state(p, SCHED_JOB_PENDING);
	if (l->state == SCHED_JOB_RUNNING) {
		sched_cluster_free(c);
		return; /* p respects the reservation: fine */
	}
	stop_all(c);
	if (p->state != SCHED_JOB_RUNNING)
		fail_msg("l was preempted for p, but p cannot start (%s); l is %s: %s",
			 p->reason, sched_job_state_name(l->state), l->reason);
	fail_msg("p (no time_limit) took node-1, reserved for b: b now waits: %s", b->reason);
}

/*
 * Mixed cluster (the sim's ascend_cluster_mixed.yaml in small): three 910 servers and
 * two A2 servers. r (priority 900, typed A2) waits behind the A2 jobs and holds the
 * reservation of the A2 type. p (16 NPUs, no server_type, so either type) needs two
 * whole servers; when t ends, node 2 is free and stopping v (priority 0) on node 0
 * makes room. But p's reservation was refused because r already held one for a type
 * p may use, so nothing kept the NPUs p counted on: w (priority 0) was backfilled onto
 * node 2 at once, and when v had stopped p preempted w, then v was backfilled into its
 * own hole, and so on every stop (about every 35 s): ~100 preemptions an hour, p never
 * started (the simulator's trace: 151 preemptions, two jobs preempted 75 times each).
 */
static void test_preemptor_reserved_beside_another_type_reservation(void **state)
{
	static const char yaml[] =
		"cluster:\n  name: mixed\n  scheduler_ip: 10.0.0.1\n"
		"resource:\n  total_npu: 40\n"
		"queues:\n  - name: default\n"
		"servers:\n"
		"  - name: a800-0\n    host_ip: 10.1.0.1\n    type: atlas800\n"
		"    switch: leaf-0\n"
		"  - name: a800-1\n    host_ip: 10.1.0.2\n    type: atlas800\n"
		"    switch: leaf-0\n"
		"  - name: a800-2\n    host_ip: 10.1.0.3\n    type: atlas800\n"
		"    switch: leaf-0\n"
		"  - name: a2-0\n    host_ip: 10.1.0.4\n    type: atlas800t-a2\n"
		"    switch: leaf-1\n"
		"  - name: a2-1\n    host_ip: 10.1.0.5\n    type: atlas800t-a2\n"
		"    switch: leaf-1\n";
	struct sched_cluster *c = cluster_yaml(yaml);
	struct sched_job *v, *w, *r, *p, *t;
	uint64_t end;

	(void)state;
	v = run_on(c, spec("v", 8, NULL, 0, 0), 0);
	run_on(c, spec("h", 8, NULL, 900, 0), 1);
	t = run_on(c, spec("t", 8, NULL, 900, 0), 2);
	run_on(c, spec("b0", 8, NULL, 900, 0), 3);
	run_on(c, spec("b1", 8, NULL, 900, 0), 4);
	w = submit(c, spec("w", 8, NULL, 0, 0));
	r = submit(c, typed(spec("r", 8, NULL, 900, 0), "atlas800t-a2"));
	p = submit(c, spec("p", 16, NULL, 500, 0));
	expect_state(w, SCHED_JOB_PENDING);
	expect_state(r, SCHED_JOB_PENDING);
	expect_state(p, SCHED_JOB_PENDING);
	assert_int_equal(c->preemptions, 0);
	/* node 2 frees: v's server and node 2 make p's placement */
	assert_int_equal(fx_complete(c, t->name, FX_UID, adv(1)), 0);
	expect_state(v, SCHED_JOB_STOPPING);
	/* an hour of the daemon's 1 s ticks */
	end = clk + 3600 * SEC;
	while (clk < end) {
		sched_tick(c, adv(1));
		fx_check(c);
	}
	if (p->state != SCHED_JOB_RUNNING || c->preemptions != 1)
		fail_msg("%llu preemptions in an hour (v %u, w %u); p is %s: %s",
			 (unsigned long long)c->preemptions, v->preemptions, w->preemptions,
			 sched_job_state_name(p->state), p->reason);
	assert_false(has_event(c, SCHED_EV_PLACED, "w", NULL));
	expect_state(v, SCHED_JOB_PENDING);
	expect_state(w, SCHED_JOB_PENDING);
	expect_no_reserved(c);
	sched_cluster_free(c);
}

/*
 * The same livelock through the order of the queues. qa and qb have the same priority,
 * their head jobs too, so the queue with the smaller share goes first. p (qa) preempts
 * v (qb) for v's server and the free one while qb's share is the larger; v's stop makes
 * the shares equal and h (qb, older, 24 NPUs, no victims it may take) goes first in the
 * pass of that instant: its reservation, from b's time limit, takes the two servers
 * just freed, p cannot start, and v (time limit 1 h, done before h's start) is
 * backfilled into its own hole. At the next pass qb's share is the larger again and p
 * preempts v again: once per pass, for as long as h waits.
 */
static void test_preemptor_keeps_freed_npus_from_a_reservation_ahead(void **state)
{
	static const char queues[] = "  - name: qa\n"
				     "    priority: 500\n"
				     "  - name: qb\n"
				     "    priority: 500\n";
	struct fx_opts o = { .servers = 6, .queues = queues };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *v, *h, *p;
	uint64_t end;

	(void)state;
	run(c, spec("a", 16, "qa", 1000, 0));
	run(c, spec("b", 16, "qb", 1000, 36000));
	v = run(c, spec("v", 8, "qb", 0, 3600));
	h = submit(c, spec("h", 24, "qb", 1000, 0));
	expect_state(h, SCHED_JOB_PENDING);
	assert_int_equal(c->preemptions, 0);
	p = submit(c, spec("p", 16, "qa", 1000, 0));
	expect_state(v, SCHED_JOB_STOPPING);
	/* an hour of 1 s ticks; other activity (submissions, reports) runs a pass a minute */
	end = clk + 3600 * SEC;
	for (unsigned i = 0; clk < end; i++) {
		sched_tick(c, adv(1));
		if (i % 60 == 59)
			sched_schedule(c, clk);
		fx_check(c);
	}
	if (p->state != SCHED_JOB_RUNNING || c->preemptions != 1)
		fail_msg("%llu preemptions in an hour (v %u); p is %s: %s",
			 (unsigned long long)c->preemptions, v->preemptions,
			 sched_job_state_name(p->state), p->reason);
	expect_state(h, SCHED_JOB_PENDING);
	expect_no_reserved(c);
	sched_cluster_free(c);
}

/* ---- starvation by the preemption budget ---- */

/*
 * A pass tries preemption for at most 8 jobs (PREEMPT_TRIES_PER_PASS) and "the next
 * pass goes on". But every pass serves jobs in the same order, so 8 big jobs that can
 * never preempt (on other servers) use the budget up in every pass, and a small job
 * that could preempt a priority-10 job on its own servers waits forever.
 */
static void test_preempt_budget_serves_later_jobs(void **state)
{
	char *yaml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);
	struct sched_cluster *c;
	struct sched_job *low, *small;

	(void)state;
	fprintf(f, "cluster:\n  name: mixed\n  scheduler_ip: 10.0.0.1\n"
		   "resource:\n  total_npu: %u\n", 10 * 8 + 2 * 8);
	fprintf(f, "queues:\n  - name: default\n");
	fprintf(f, "servers:\n");
	for (unsigned i = 0; i < 12; i++)
		fprintf(f, "  - name: n%u\n    host_ip: 10.1.0.%u\n    type: %s\n"
			   "    switch: leaf-0\n", i, i + 1, i < 10 ? "atlas800" : "atlas800t-a2");
	fclose(f);
	c = cluster_yaml(yaml);
	free(yaml);
	/* 910 servers: a priority-900 4-NPU job on each (nobody may preempt them) */
	for (unsigned i = 0; i < 10; i++) {
		char n[16];
		struct conf_job_spec *s;

		snprintf(n, sizeof(n), "h%u", i);
		s = spec(n, 4, NULL, 900, 0);
		s->server_type = strdup("atlas800");
		run(c, s);
	}
	/* A2: a priority-10 job fills both servers */
	{
		struct conf_job_spec *s = spec("low", 16, NULL, 10, 0);

		s->server_type = strdup("atlas800t-a2");
		low = run(c, s);
	}
	/* eight 910 whole-server jobs of priority 600: each needs whole servers, none can
	 * preempt (the 900 jobs sit on every 910 server) */
	for (unsigned k = 0; k < 8; k++) {
		char n[16];
		struct conf_job_spec *s;

		snprintf(n, sizeof(n), "big%u", k);
		s = spec(n, 80 - 8 * k, NULL, 600, 0);
		s->server_type = strdup("atlas800");
		expect_state(submit(c, s), SCHED_JOB_PENDING);
	}
	{
		struct conf_job_spec *s = spec("small", 8, NULL, 500, 0);

		s->server_type = strdup("atlas800t-a2");
		small = submit(c, s);
	}
	for (unsigned i = 0; i < 5; i++)
		sched_schedule(c, adv(1));
	if (low->state == SCHED_JOB_RUNNING)
		fail_msg("small (priority 500) never preempts low (priority 10): %s",
			 small->reason);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_preempt_whole_job_then_resume, setup_abort),
		cmocka_unit_test_setup(test_preempt_never_equal_priority_or_when_off, setup_abort),
		cmocka_unit_test_setup(test_preempt_bound_per_job, setup_abort),
		cmocka_unit_test_setup(test_preempt_takes_whole_gangs_not_members, setup_abort),
		cmocka_unit_test_setup(test_preempt_fewest_jobs_never_more, setup_abort),
		cmocka_unit_test_setup(test_preempt_multi_server_uses_free_servers_first,
				       setup_abort),
		cmocka_unit_test_setup(test_preempt_multi_server_takes_lowest_priority,
				       setup_abort),
		cmocka_unit_test_setup(test_preempt_single_server_fewest_victims, setup_abort),
		cmocka_unit_test_setup(test_preempt_whole_servers_fewest_jobs, setup_abort),
		cmocka_unit_test_setup(test_preempt_gang_whole_and_held_while_stopping,
				       setup_abort),
		cmocka_unit_test_setup(test_preempt_across_switches, setup_abort),
		cmocka_unit_test_setup(test_queue_priority_outranks_job_priority_no_preempt_back,
				       setup_abort),
		cmocka_unit_test_setup(test_preempt_a3_makes_a_super_pod_whole, setup_abort),
		cmocka_unit_test_setup(test_a3_preempt_whole_pairs, setup_abort),
		cmocka_unit_test_setup(test_atlas800_ring_preemption, setup_abort),
		cmocka_unit_test_setup(test_preempt_ring_fewest_victims, setup_abort),
		cmocka_unit_test_setup(test_preempt_a3_pair_fewest_victims, setup_abort),
		cmocka_unit_test_setup(test_reclaim_counts_the_queue_own_pending_reclaims,
				       setup_abort),
		cmocka_unit_test_setup(test_queue_at_quota_does_not_preempt, setup_abort),
		cmocka_unit_test_setup(test_reclaim_higher_priority_victim_no_thrash, setup_abort),
		cmocka_unit_test_setup(test_quota_change_while_stopping, setup_abort),
		cmocka_unit_test_setup(test_preemptor_reason_kept_through_borrow_phase,
				       setup_abort),
		cmocka_unit_test_setup(test_preemptor_reason_kept_in_a_borrowing_queue,
				       setup_abort),
		cmocka_unit_test_setup(test_victim_without_time_left_times_out, setup_abort),
		cmocka_unit_test_setup(test_backfill_counts_grace_before_a_reservation,
				       setup_abort),
		cmocka_unit_test_setup(test_fault_on_stopping_victim, setup_abort),
		cmocka_unit_test_setup(test_cancel_and_remove_stopping_victims, setup_abort),
		cmocka_unit_test_setup(test_preemptor_cancelled_while_victims_stop, setup_abort),
		cmocka_unit_test_setup(test_preemptor_identity_survives_name_reuse, setup_abort),
		cmocka_unit_test_setup(test_recovery_keeps_off_a_preemptor_reservation,
				       setup_abort),
		cmocka_unit_test_setup(test_preempt_skips_cordoned_and_draining, setup_abort),
		cmocka_unit_test_setup(test_recovery_keeps_healthy_servers_during_a_preemption,
				       setup_abort),
		cmocka_unit_test_setup(test_preempt_whole_servers_of_one_type, setup_abort),
		cmocka_unit_test_setup(test_preempt_respects_a_reservation, setup_abort),
		cmocka_unit_test_setup(test_preemptor_reserved_beside_another_type_reservation,
				       setup_abort),
		cmocka_unit_test_setup(test_preemptor_keeps_freed_npus_from_a_reservation_ahead,
				       setup_abort),
		cmocka_unit_test_setup(test_preempt_budget_serves_later_jobs, setup_abort),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
