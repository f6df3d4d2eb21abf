/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the scheduling policy (sched/sched_policy.c): queue order and weights,
 * quotas and borrowing, preemption of the fewest whole jobs, EASY backfill with
 * reservations, time limits, elastic jobs; and the known failures of other schedulers
 * (a gang holding NPUs while pending, one member of many gangs evicted, over-eviction,
 * a big job blocking small ones forever, fractional shares where nothing runs, a
 * pending job with no reason). The invariants are checked after every transition
 * (fx_cluster turns c->check_invariants on) and after every step (fx_check).
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
#include "sched_policy_fixture.h"
#include "test_util.h"

static const char queues_two[] = "  - name: prod\n"
				 "    priority: 900\n"
				 "  - name: batch\n"
				 "    priority: 100\n";

/* ---- preemption ---- */

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

/* ---- quotas and borrowing ---- */

static const char queues_quota[] = "  - name: train\n"
				   "    quota_npus: 8\n"
				   "  - name: finetune\n"
				   "    quota_npus: 8\n"
				   "    may_borrow: true\n"
				   "  - name: strict\n"
				   "    quota_npus: 8\n"
				   "    may_borrow: false\n";

static void test_quota_wait_reason_and_borrowing(void **state)
{
	struct fx_opts o = { .servers = 4, .queues = queues_quota, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *s1, *s2, *f1, *f2;
	struct sched_queue_usage u;

	(void)state;
	s1 = run(c, spec("s1", 6, "strict", 500, 0));
	s2 = submit(c, spec("s2", 4, "strict", 500, 0));
	expect_state(s2, SCHED_JOB_PENDING);
	assert_string_equal(s2->reason, "queue strict uses 6 of 8 NPUs; job needs 4");
	/* a queue that may borrow takes idle NPUs beyond its quota */
	f1 = run(c, spec("f1", 8, "finetune", 500, 0));
	assert_false(f1->borrowing);
	f2 = run(c, spec("f2", 8, "finetune", 500, 0));
	assert_true(f2->borrowing);
	expect_reason(f2, "borrowing");
	sched_queue_usage(c, 1, &u);
	assert_int_equal(u.used_npus, 16);
	assert_int_equal(u.borrowed_npus, 8);
	assert_int_equal(u.running, 2);
	(void)s1;

	/* train, within its quota, reclaims the borrowed server: f2 goes, f1 stays */
	{
		struct sched_job *t1;

		run(c, spec("fill", 8, "default", 500, 0)); /* the last free server */
		t1 = submit(c, spec("t1", 8, "train", 500, 0));
		expect_state(t1, SCHED_JOB_PENDING);
		expect_state(f2, SCHED_JOB_STOPPING);
		expect_state(f1, SCHED_JOB_RUNNING);
		assert_true(has_event(c, SCHED_EV_PREEMPTED, "f2", "reclaims"));
		stop_all(c);
		expect_state(t1, SCHED_JOB_RUNNING);
		expect_state(f2, SCHED_JOB_PENDING);
	}
	expect_reasons(c);
	fx_check(c);
	sched_cluster_free(c);
}

/* Quota changes at run time; lowering it turns the newest runs into borrowers. */
static void test_quota_set_at_run_time(void **state)
{
	struct fx_opts o = { .servers = 2, .queues = queues_quota, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *w;

	(void)state;
	a = run(c, spec("a", 4, "strict", 500, 0));
	b = run(c, spec("b", 4, "strict", 500, 0));
	w = submit(c, spec("w", 4, "strict", 500, 0));
	expect_state(w, SCHED_JOB_PENDING);
	assert_int_equal(sched_queue_set_quota(c, "strict", 12, adv(1)), 0);
	expect_state(w, SCHED_JOB_RUNNING);
	assert_true(has_event(c, SCHED_EV_QUEUE, "", "quota set to 12"));
	assert_int_equal(sched_queue_set_quota(c, "strict", 4, adv(1)), 0);
	assert_false(a->borrowing);
	assert_true(b->borrowing);
	assert_true(w->borrowing);
	assert_int_equal(sched_queue_set_quota(c, "nosuch", 4, adv(1)), -ENOENT);
	assert_int_equal(sched_queue_set_quota(c, "strict", 17, adv(1)), -EINVAL);
	assert_int_equal(c->conf->queues[2].quota_npus, 4);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * Known failure: two queues with fractional shares where neither job ever runs. With
 * weights 1 and 2 an 8-NPU server is "deserved" 2.67 and 5.33 NPUs; an 8-NPU job of each
 * queue must still run, one after the other, the smaller share first.
 */
static void test_fractional_shares_never_starve(void **state)
{
	static const char queues[] = "  - name: a\n    weight: 1\n  - name: b\n    weight: 2\n";
	struct fx_opts o = { .servers = 1, .queues = queues, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *ja, *jb, *ja2;

	(void)state;
	ja = run(c, spec("ja", 8, "a", 500, 0));
	jb = submit(c, spec("jb", 8, "b", 500, 0));
	ja2 = submit(c, spec("ja2", 8, "a", 500, 0));
	expect_state(jb, SCHED_JOB_PENDING);
	expect_reasons(c);
	assert_int_equal(sched_job_total_npus(ja), 8);
	/* a uses 8 of weight 1, b uses 0: b is served first though ja2 is older in a */
	assert_int_equal(fx_complete(c, "ja", FX_UID, adv(1)), 0);
	expect_state(jb, SCHED_JOB_RUNNING);
	expect_state(ja2, SCHED_JOB_PENDING);
	assert_int_equal(fx_complete(c, "jb", FX_UID, adv(1)), 0);
	expect_state(ja2, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* Weights order service: with equal use the heavier queue goes first, then shares
 * alternate (smallest used/weight first). */
static void test_weights_order_queues(void **state)
{
	static const char queues[] = "  - name: light\n    weight: 1\n"
				     "  - name: heavy\n    weight: 3\n";
	struct fx_opts o = { .servers = 1, .queues = queues };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *blk, *l[3], *h[3];

	(void)state;
	blk = run(c, spec("blk", 8, "default", 500, 0));
	for (int i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "l%d", i);
		l[i] = submit(c, spec(name, 2, "light", 500, 0));
		snprintf(name, sizeof(name), "h%d", i);
		h[i] = submit(c, spec(name, 2, "heavy", 500, 0));
	}
	(void)blk;
	/* 8 NPUs for six 2-NPU jobs: shares 0/1 vs 0/3 tie -> older l0; then heavy
	 * (0/3 < 2/1) h0, h1 (2/3 < 2/1), h2 (4/3 < 2/1): light gets 2, heavy 6 */
	assert_int_equal(fx_complete(c, "blk", FX_UID, adv(1)), 0);
	expect_state(l[0], SCHED_JOB_RUNNING);
	expect_state(h[0], SCHED_JOB_RUNNING);
	expect_state(h[1], SCHED_JOB_RUNNING);
	expect_state(h[2], SCHED_JOB_RUNNING);
	expect_state(l[1], SCHED_JOB_PENDING);
	expect_state(l[2], SCHED_JOB_PENDING);
	fx_check(c);
	sched_cluster_free(c);
}

/* ---- backfill ---- */

/*
 * A reservation's start moves whenever a running job ends; the jobs waiting behind it
 * keep their reason and get no new event then (with 10,000 of them, re-rendering every
 * reason made such a pass cost over 10 ms). The holder's status.json says when.
 */
static void test_backfill_waiting_reason_survives_a_moved_reservation(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *big, *lng;
	const struct sched_event *e;
	uint64_t start, cursor;
	char before[SCHED_REASON_MAX];
	unsigned events = 0;

	(void)state;
	run(c, spec("a", 8, NULL, 500, 3600));
	run(c, spec("b", 8, NULL, 500, 7200));
	big = submit(c, spec("big", 16, NULL, 500, 0));
	expect_reason(big, "first in line");
	start = big->reserved_start_usec;
	lng = submit(c, spec("long", 8, NULL, 500, 86400));
	expect_state(lng, SCHED_JOB_PENDING);
	expect_reason(lng, "waiting behind job \"big\"");
	expect_reason(lng, "status.json");
	snprintf(before, sizeof(before), "%s", lng->reason);
	cursor = c->next_event_seq - 1;

	/* b ends early: big's reservation now starts when a's time_limit ends */
	assert_int_equal(fx_complete(c, "b", FX_UID, adv(60)), 0);
	assert_true(big->reserved_start_usec < start);
	expect_state(lng, SCHED_JOB_PENDING);
	assert_string_equal(lng->reason, before);
	while ((e = sched_event_next(c, cursor))) {
		cursor = e->seq;
		events += strcmp(e->job, "long") == 0;
	}
	assert_int_equal(events, 0);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * Known failure: a big pending job blocks small ones forever. The head job gets a
 * reservation from running jobs' time limits; a short job starts on the reserved NPUs
 * (it ends before they are needed), a long one does not, and a job with no time_limit
 * starts only on NPUs outside the reservation.
 */
static void test_backfill_short_jobs_around_reservation(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *big, *shrt, *lng, *nolim, *off;

	(void)state;
	a = run(c, spec("a", 8, NULL, 500, 3600));       /* node-0 for an hour at most */
	off = run(c, spec("off", 4, NULL, 500, 0));      /* half of a server, no limit */
	big = submit(c, spec("big", 16, NULL, 500, 0));
	expect_state(big, SCHED_JOB_PENDING);
	expect_reason(big, "first in line");
	assert_true(big->reserved_start_usec > clk);
	assert_true(big->reserved_start_usec <= clk + (3600 + 30 + 5) * SEC); /* + the stop */
	/* nothing is held for big between passes */
	assert_int_equal(sched_job_total_npus(big), 0);
	expect_no_reserved(c);

	shrt = submit(c, spec("short", 8, NULL, 500, 600));
	expect_state(shrt, SCHED_JOB_RUNNING);
	expect_reason(shrt, "backfilled");
	lng = submit(c, spec("long", 8, NULL, 500, 7200));
	expect_state(lng, SCHED_JOB_PENDING);
	expect_reason(lng, "waiting behind job \"big\"");
	expect_reason(lng, "time_limit runs past");
	/* the unreserved half server takes a small job with no limit at all */
	nolim = submit(c, spec("nolim", 4, NULL, 500, 0));
	expect_state(nolim, SCHED_JOB_RUNNING);
	expect_reasons(c);
	assert_true(c->backfilled >= 1);

	/* big starts when a and short are done, before long */
	assert_int_equal(fx_complete(c, "short", FX_UID, adv(60)), 0);
	expect_state(big, SCHED_JOB_PENDING);
	assert_int_equal(fx_complete(c, "a", FX_UID, adv(60)), 0);
	expect_state(big, SCHED_JOB_RUNNING);
	expect_state(lng, SCHED_JOB_PENDING);
	expect_state(a, SCHED_JOB_COMPLETED);
	(void)off;
	expect_no_reserved(c);
	fx_check(c);
	sched_cluster_free(c);
}

/* With backfill off the blocked job holds the line for its server type (strict order). */
static void test_backfill_off_is_strict(void **state)
{
	struct fx_opts o = { .servers = 2, .no_backfill = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *big, *shrt;

	(void)state;
	run(c, spec("a", 8, NULL, 500, 3600));
	big = submit(c, spec("big", 16, NULL, 500, 0));
	shrt = submit(c, spec("short", 1, NULL, 500, 60));
	expect_state(big, SCHED_JOB_PENDING);
	expect_state(shrt, SCHED_JOB_PENDING);
	expect_reason(shrt, "behind job \"big\"");
	sched_cluster_free(c);
}

/* Known failure: a gang holds NPUs while pending. It never does here. */
static void test_pending_gang_holds_nothing(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *g;

	(void)state;
	run(c, spec("a", 8, NULL, 500, 0));
	run(c, spec("b", 8, NULL, 500, 0));
	g = submit(c, spec("g", 24, NULL, 500, 0));
	expect_state(g, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_total_npus(g), 0);
	assert_int_equal(c->npus_allocated, 16);
	assert_int_equal(c->servers[2].npus_free + c->servers[3].npus_free, 16);
	expect_no_reserved(c);
	fx_check(c);
	sched_cluster_free(c);
}

/* ---- time limits ---- */

static void test_time_limit_stops_job(void **state)
{
	struct fx_opts o = { .servers = 1, .grace_sec = 10 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j, *next;

	(void)state;
	j = run(c, spec("t", 8, NULL, 500, 120));
	next = submit(c, spec("next", 8, NULL, 500, 0));
	assert_int_equal(sched_tick(c, adv(100)), 0);
	expect_state(j, SCHED_JOB_RUNNING);
	assert_true(sched_job_run_usec(j, clk) >= 100 * SEC);
	assert_int_equal(sched_tick(c, adv(20)), 1);
	expect_state(j, SCHED_JOB_STOPPING);
	expect_reason(j, "time limit of 120 s reached");
	assert_true(has_event(c, SCHED_EV_TIMEOUT, "t", "time limit"));
	/* grace 10 s + one report interval (5 s) */
	assert_int_equal(sched_tick(c, adv(10)), 0);
	expect_state(next, SCHED_JOB_PENDING);
	assert_int_equal(sched_tick(c, adv(5)), 1);
	expect_state(j, SCHED_JOB_TIMEOUT);
	assert_true(sched_job_state_is_terminal(j->state));
	assert_string_equal(sched_job_state_name(j->state), "timeout");
	assert_int_equal(sched_job_total_npus(j), 0);
	expect_state(next, SCHED_JOB_RUNNING);
	assert_int_equal(c->timeouts, 1);
	fx_check(c);
	sched_cluster_free(c);
}

/* A preempted job's time_limit counts its earlier run too (as Slurm does). */
static void test_time_limit_counts_earlier_runs(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_two, .grace_sec = -1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *lo;

	(void)state;
	lo = run(c, spec("lo", 8, "batch", 500, 1000));
	adv(600);
	submit(c, spec("hi", 8, "prod", 500, 0));
	stop_all(c);
	expect_state(lo, SCHED_JOB_PENDING);
	assert_int_equal(fx_complete(c, "hi", FX_UID, adv(3000)), 0);
	expect_state(lo, SCHED_JOB_RUNNING);
	/* ran ~606 s before; 394 s more reach the limit */
	assert_int_equal(sched_tick(c, adv(380)), 0);
	assert_int_equal(sched_tick(c, adv(30)), 1);
	expect_state(lo, SCHED_JOB_STOPPING);
	sched_cluster_free(c);
}

/* ---- elastic ---- */

static struct conf_job_spec *elastic(const char *name, unsigned lo, unsigned hi)
{
	struct conf_job_spec *s = spec(name, lo, NULL, 500, 0);

	s->npus_min = lo;
	s->npus_max = hi;
	return s;
}

static void test_elastic_start_grow_shrink(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *e, *x;
	struct conf_health_report r = { .npu_count = 1 };

	(void)state;
	x = run(c, spec("x", 16, NULL, 500, 0));
	e = run(c, elastic("e", 8, 32));
	/* starts with what fits: two whole servers */
	assert_int_equal(sched_job_total_npus(e), 16);
	assert_int_equal(e->generation, 1);
	/* grows when capacity frees and nobody waits */
	assert_int_equal(fx_complete(c, "x", FX_UID, adv(1)), 0);
	assert_int_equal(sched_job_total_npus(e), 32);
	assert_int_equal(e->generation, 2);
	assert_true(has_event(c, SCHED_EV_RESIZED, "e", "grew from 16 to 32"));

	/* a server fails and no spare exists: shrink instead of waiting */
	r.npus[0].id = 0;
	r.npus[0].has_level = true;
	r.npus[0].level = CONF_HEALTH_CRITICAL;
	assert_int_equal(sched_server_report(c, e->slices[1].server, &r, adv(1)), 0);
	fx_check(c);
	expect_state(e, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(e), 24);
	expect_reason(e, "shrank from 32 to 24");
	assert_int_equal(e->generation, 3);
	(void)x;
	fx_check(c);
	sched_cluster_free(c);
}

/* Each resize restarts a job: it grows only once its generation ran elastic_grow_delay,
 * and the once-a-second tick starts that growth without any other event. */
static void test_elastic_grows_after_delay(void **state)
{
	struct fx_opts o = { .servers = 2, .grow_delay_sec = 600 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *e;

	(void)state;
	run(c, spec("x", 8, NULL, 500, 0));
	e = run(c, elastic("e", 8, 16));
	assert_int_equal(sched_job_total_npus(e), 8);
	sched_tick(c, adv(1));
	assert_int_equal(fx_complete(c, "x", FX_UID, adv(10)), 0);
	assert_int_equal(sched_job_total_npus(e), 8); /* too soon */
	assert_int_equal(sched_tick(c, adv(500)), 0);
	assert_int_equal(sched_job_total_npus(e), 8);
	sched_tick(c, adv(100));
	assert_int_equal(sched_job_total_npus(e), 16);
	assert_int_equal(e->generation, 2);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * A queue's max_npus bounds an elastic job's max (Slurm's MaxNodes applies to the upper
 * end of a node range too): a user's range above it is refused, one within it grows no
 * further than its max however much is free, and an operator's may exceed it.
 */
static void test_elastic_max_bounded_by_queue_max_npus(void **state)
{
	static const char queues[] = "  - name: default\n"
				     "    max_npus: 16\n";
	struct fx_opts o = { .servers = 4, .queues = queues };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *e, *op = NULL;

	(void)state;
	assert_int_equal(sched_job_submit(c, elastic("wide", 8, 32), FX_UID, FX_GID, adv(1),
					  reason, NULL),
			 -EACCES);
	if (!strstr(reason, "npus max 32 exceeds queue \"default\"'s max_npus 16"))
		fail_msg("reason: %s", reason);
	assert_null(sched_cluster_find_job(c, "wide"));
	e = run(c, elastic("e", 8, 16));
	sched_tick(c, adv(1));
	assert_int_equal(sched_job_total_npus(e), 16); /* 16 NPUs idle, but 16 is its max */
	sched_cluster_free(c);

	c = fx_cluster(&o);
	assert_int_equal(sched_job_submit_as(c, elastic("op", 8, 32), FX_UID, FX_GID, true,
					     adv(1), reason, &op),
			 0);
	sched_tick(c, adv(1));
	assert_int_equal(sched_job_total_npus(op), 32);
	fx_check(c);
	sched_cluster_free(c);
}

/* An elastic job does not grow while another job waits for those NPUs. */
static void test_elastic_no_growth_while_others_wait(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *e, *w;

	(void)state;
	run(c, spec("x", 8, NULL, 500, 0));
	e = run(c, elastic("e", 1, 8));
	assert_int_equal(sched_job_total_npus(e), 8);
	w = submit(c, spec("w", 8, NULL, 500, 0));
	expect_state(w, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_total_npus(e), 8);
	assert_int_equal(e->generation, 1);
	fx_check(c);
	sched_cluster_free(c);
}

/* ---- fine-grained sharing ---- */

/* 1-, 2- and 4-NPU jobs of different queues share one 910 server by its ring rules,
 * each with its own devices; no NPU is given twice. */
static void test_fine_grained_sharing_on_rings(void **state)
{
	static const char queues[] = "  - name: q1\n  - name: q2\n  - name: q3\n";
	struct fx_opts o = { .servers = 1, .type = "atlas800", .queues = queues };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *d;
	bool used[8] = { false };

	(void)state;
	a = run(c, spec("a", 4, "q1", 500, 0));
	b = run(c, spec("b", 2, "q2", 500, 0));
	d = run(c, spec("d", 1, "q3", 500, 0));
	/* a takes a whole ring; b and d share the other ring */
	assert_true(a->slices[0].device_ids[0] == 0 || a->slices[0].device_ids[0] == 4);
	assert_true((b->slices[0].device_ids[0] < 4) == (d->slices[0].device_ids[0] < 4));
	assert_true((a->slices[0].device_ids[0] < 4) != (b->slices[0].device_ids[0] < 4));
	{
		const struct sched_job *js[] = { a, b, d };

		for (int k = 0; k < 3; k++)
			for (unsigned i = 0; i < js[k]->slices[0].npu_count; i++) {
				unsigned id = js[k]->slices[0].device_ids[i];

				assert_false(used[id]);
				used[id] = true;
			}
	}
	fx_check(c);
	sched_cluster_free(c);
}

/* ---- a random mix: invariants and reasons hold at every step ---- */

static void test_random_mix_keeps_invariants(void **state)
{
	static const char queues[] = "  - name: prod\n    priority: 900\n"
				     "  - name: train\n    quota_npus: 32\n    weight: 2\n"
				     "  - name: dev\n    quota_npus: 8\n    may_borrow: true\n";
	struct fx_opts o = { .servers = 8, .switches = 2, .queues = queues, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	static const unsigned sizes[] = { 1, 2, 4, 8, 16, 24 };
	static const char *const qs[] = { "prod", "train", "dev", "default" };
	uint64_t seed = 42;

	(void)state;
	for (int step = 0; step < 600; step++) {
		unsigned op = (unsigned)(fx_rand(&seed) % 10);
		char name[16];

		if (op < 5) {
			struct conf_job_spec *s;
			char reason[SCHED_REASON_MAX];

			snprintf(name, sizeof(name), "j%d", step);
			s = spec(name, sizes[fx_rand(&seed) % 6], qs[fx_rand(&seed) % 4],
				 (unsigned)(fx_rand(&seed) % 3) * 400 + 100,
				 fx_rand(&seed) % 2 ? 60 + fx_rand(&seed) % 600 : 0);
			if (fx_rand(&seed) % 5 == 0 && s->npus >= 8) {
				s->npus_max = s->npus + 16;
			}
			(void)sched_job_submit(c, s, FX_UID, FX_GID, adv(1), reason, NULL);
		} else if (op < 8 && c->job_count) {
			struct sched_job *j = c->jobs[fx_rand(&seed) % c->job_count];

			if (j->state == SCHED_JOB_RUNNING)
				fx_complete(c, j->name, FX_UID, adv(1));
			else if (!sched_job_state_is_terminal(j->state) && op == 7)
				fx_cancel(c, j->name, FX_UID, adv(1));
		} else {
			sched_tick(c, adv((unsigned)(fx_rand(&seed) % 120)));
		}
		fx_check(c);
		expect_no_reserved(c);
		expect_reasons(c);
		for (size_t i = 0; i < c->job_count; i++)
			if (c->jobs[i]->state == SCHED_JOB_PENDING)
				assert_int_equal(sched_job_total_npus(c->jobs[i]), 0);
	}
	assert_true(c->preemptions > 0);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preempt_whole_job_then_resume),
		cmocka_unit_test(test_preempt_never_equal_priority_or_when_off),
		cmocka_unit_test(test_preempt_takes_whole_gangs_not_members),
		cmocka_unit_test(test_preempt_fewest_jobs_never_more),
		cmocka_unit_test(test_preempt_multi_server_uses_free_servers_first),
		cmocka_unit_test(test_preempt_multi_server_takes_lowest_priority),
		cmocka_unit_test(test_quota_wait_reason_and_borrowing),
		cmocka_unit_test(test_quota_set_at_run_time),
		cmocka_unit_test(test_fractional_shares_never_starve),
		cmocka_unit_test(test_weights_order_queues),
		cmocka_unit_test(test_backfill_waiting_reason_survives_a_moved_reservation),
		cmocka_unit_test(test_backfill_short_jobs_around_reservation),
		cmocka_unit_test(test_backfill_off_is_strict),
		cmocka_unit_test(test_pending_gang_holds_nothing),
		cmocka_unit_test(test_time_limit_stops_job),
		cmocka_unit_test(test_time_limit_counts_earlier_runs),
		cmocka_unit_test(test_elastic_start_grow_shrink),
		cmocka_unit_test(test_elastic_no_growth_while_others_wait),
		cmocka_unit_test(test_elastic_grows_after_delay),
		cmocka_unit_test(test_elastic_max_bounded_by_queue_max_npus),
		cmocka_unit_test(test_fine_grained_sharing_on_rings),
		cmocka_unit_test(test_random_mix_keeps_invariants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
