/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of incremental scheduling passes (sched/sched_pass.c, struct
 * sched_kept_pass): a pass that resumes the kept one and tries only the new jobs must
 * decide exactly what a full pass decides. Two clusters get the same seeded random
 * operations (submissions alone and in bursts, at one instant and later; cancels,
 * completions, faults, OK reports, quota changes, ticks, passes with nothing new), one
 * with incremental passes on, one with them off (every pass a full one). After every
 * operation both hold the same jobs in the same states, reasons, places and
 * reservations, and have announced the same events. The incremental side must really
 * have resumed passes, or the comparison proves nothing.
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

#define T0 1700000000000000ull

static const char queues_prio[] = "  - name: prod\n"
				  "    priority: 900\n"
				  "    weight: 2\n"
				  "  - name: batch\n"
				  "    priority: 100\n"
				  "  - name: research\n"
				  "    priority: 100\n"
				  "    weight: 3\n";

/* priorities an age of up to 200 bridges (resource.priority_weight_age) */
static const char queues_age[] = "  - name: prod\n"
				 "    priority: 650\n"
				 "  - name: batch\n"
				 "    priority: 500\n"
				 "  - name: research\n"
				 "    priority: 500\n"
				 "    weight: 3\n";

static const char queues_quota[] = "  - name: train\n"
				   "    quota_npus: 16\n"
				   "  - name: finetune\n"
				   "    quota_npus: 8\n"
				   "    may_borrow: true\n"
				   "  - name: strict\n"
				   "    quota_npus: 8\n"
				   "    may_borrow: false\n";

struct pair {
	struct sched_cluster *inc, *full;
	uint64_t now, seen_seq, rng;
	unsigned next_name;
	bool plain;		/* every spec of the same priority and queue, no elastic */
	bool one_prio;		/* every spec of priority 500, no elastic (queues vary) */
	uint64_t limit_sec;	/* when not 0: every spec's time_limit */
	const char *const *queues;
	size_t queue_count;
};

/* The events after @after of @c, one line each; new string. */
static char *events_after(const struct sched_cluster *c, uint64_t after, uint64_t *ret_last)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	*ret_last = after;
	for (const struct sched_event *e = sched_event_next(c, after); e;
	     e = sched_event_next(c, e->seq)) {
		fprintf(f, "%llu %llu %s %s %s %d %s %s\n", (unsigned long long)e->seq,
			(unsigned long long)e->time_usec, sched_event_kind_name(e->kind), e->job,
			e->server, e->npu, e->state ? e->state : "-", e->reason);
		*ret_last = e->seq;
	}
	assert_int_equal(fclose(f), 0);
	return text;
}

static void expect_same(struct pair *pr, const char *after_what)
{
	const struct sched_cluster *a = pr->inc, *b = pr->full;
	uint64_t la, lb;
	char *ea, *eb;

	fx_check(a);
	fx_check(b);
	assert_int_equal(a->job_count, b->job_count);
	assert_int_equal(a->npus_allocated, b->npus_allocated);
	for (size_t i = 0; i < a->job_count; i++) {
		const struct sched_job *x = a->jobs[i], *y = b->jobs[i];

		assert_string_equal(x->name, y->name);
		if (x->state != y->state || strcmp(x->reason, y->reason) != 0 ||
		    x->reserved_start_usec != y->reserved_start_usec)
			fail_msg("after %s: job %s is %s (%s; reserved from %llu) incrementally, "
				 "%s (%s; reserved from %llu) with full passes",
				 after_what, x->name, sched_job_state_name(x->state), x->reason,
				 (unsigned long long)x->reserved_start_usec,
				 sched_job_state_name(y->state), y->reason,
				 (unsigned long long)y->reserved_start_usec);
		assert_int_equal(x->generation, y->generation);
		fx_expect_same_slices(x, y);
	}
	ea = events_after(a, pr->seen_seq, &la);
	eb = events_after(b, pr->seen_seq, &lb);
	if (strcmp(ea, eb) != 0)
		fail_msg("after %s: events differ\nincremental:\n%s\nfull passes:\n%s", after_what,
			 ea, eb);
	assert_int_equal(la, lb);
	pr->seen_seq = la;
	free(ea);
	free(eb);
}

static void expect_reason_has(const struct sched_job *j, const char *needle)
{
	assert_non_null(j);
	if (!strstr(j->reason, needle))
		fail_msg("job %s: reason \"%s\" lacks \"%s\"", j->name, j->reason, needle);
}

static unsigned pick(struct pair *pr, unsigned n)
{
	return (unsigned)(fx_rand(&pr->rng) % n);
}

/* A random spec, the same for both clusters (two copies: each submission steals one). */
static void random_specs(struct pair *pr, struct conf_job_spec **x, struct conf_job_spec **y)
{
	static const unsigned sizes[] = { 1, 1, 1, 2, 2, 4, 8, 8, 16 };
	static const unsigned prios[] = { 100, 500, 500, 500, 900 };
	static const uint64_t limits[] = { 0, 0, 0, 600, 7200 };
	char name[32];
	unsigned npus = sizes[pick(pr, sizeof(sizes) / sizeof(sizes[0]))];
	unsigned prio = prios[pick(pr, sizeof(prios) / sizeof(prios[0]))];
	uint64_t limit = limits[pick(pr, sizeof(limits) / sizeof(limits[0]))];
	const char *queue = pr->queues[pick(pr, (unsigned)pr->queue_count)];
	bool elastic = pick(pr, 20) == 0;

	if (pr->plain || pr->one_prio) {
		prio = 500;
		elastic = false;
	}
	if (pr->plain)
		queue = pr->queues[0];
	if (pr->limit_sec)
		limit = pr->limit_sec;
	struct conf_job_spec **both[2] = { x, y };

	snprintf(name, sizeof(name), "j%u", pr->next_name++);
	for (int k = 0; k < 2; k++) {
		struct conf_job_spec *s = fx_spec_full(name, npus, queue, prio);

		s->time_limit_sec = limit;
		if (elastic) {
			s->npus_min = 2;
			s->npus = 2;
			s->npus_max = 8;
		}
		*both[k] = s;
	}
}

static void submit_one(struct pair *pr)
{
	struct conf_job_spec *x, *y;
	char reason[SCHED_REASON_MAX];
	int ra, rb;

	random_specs(pr, &x, &y);
	ra = sched_job_submit(pr->inc, x, FX_UID, FX_GID, pr->now, reason, NULL);
	rb = sched_job_submit(pr->full, y, FX_UID, FX_GID, pr->now, reason, NULL);
	assert_int_equal(ra, rb);
}

/* A job of @c (same index in both) in state @want, or NULL. */
static const char *random_job(struct pair *pr, enum sched_job_state want)
{
	size_t n = 0, k;

	for (size_t i = 0; i < pr->inc->job_count; i++)
		n += pr->inc->jobs[i]->state == want;
	if (!n)
		return NULL;
	k = pick(pr, (unsigned)n);
	for (size_t i = 0; i < pr->inc->job_count; i++)
		if (pr->inc->jobs[i]->state == want && k-- == 0)
			return pr->inc->jobs[i]->name;
	return NULL;
}


/* Operations on servers and records: cordon, drain, uncordon, NPU clear, rmdir, a lost
 * heartbeat (time moves on, some servers report), checkpoint reports, reports that only
 * move the suspect servers, job control (hold, release, priority, requeue, resize), passes at
 * later instants. */
static void more_step(struct pair *pr)
{
	unsigned op = pick(pr, 100), ns = (unsigned)pr->inc->server_count;
	unsigned s = pick(pr, ns);
	char name[CONF_NAME_MAX + 1];
	const char *what, *j;

	if (op < 12) {
		bool drain = pick(pr, 2);

		what = drain ? "a drain" : "a cordon";
		assert_int_equal(sched_server_set_cordon(pr->inc, fx_server_name(pr->inc, s), true,
							 drain, pr->now),
				 sched_server_set_cordon(pr->full, fx_server_name(pr->full, s),
							 true, drain, pr->now));
	} else if (op < 24) {
		what = "an uncordon";
		assert_int_equal(sched_server_set_cordon(pr->inc, fx_server_name(pr->inc, s), false,
							 false, pr->now),
				 sched_server_set_cordon(pr->full, fx_server_name(pr->full, s),
							 false, false, pr->now));
	} else if (op < 32) {
		unsigned d = pick(pr, 8);

		what = "an NPU clear";
		assert_int_equal(sched_server_clear_npu(pr->inc, fx_server_name(pr->inc, s), d,
							pr->now),
				 sched_server_clear_npu(pr->full, fx_server_name(pr->full, s), d,
							pr->now));
	} else if (op < 42) {
		static const enum sched_job_state states[] = { SCHED_JOB_PENDING,
							       SCHED_JOB_RUNNING,
							       SCHED_JOB_COMPLETED };

		what = "a remove";
		j = random_job(pr, states[pick(pr, 3)]);
		if (!j)
			return;
		snprintf(name, sizeof(name), "%s", j);
		assert_int_equal(fx_remove(pr->inc, name, FX_UID, pr->now),
				 fx_remove(pr->full, name, FX_UID, pr->now));
	} else if (op < 54) {
		uint64_t hb = (uint64_t)pr->inc->conf->heartbeat_timeout_sec * 1000000u;

		/* every server but @s reports on time; @s is lost when the time is up */
		what = "time moving on, heartbeats checked";
		pr->now += hb / 2 + pick(pr, 3) * hb / 4;
		for (unsigned k = 0; k < ns; k++)
			if (k != s || pick(pr, 3) == 0) {
				fx_report_ok(pr->inc, k, pr->now);
				fx_report_ok(pr->full, k, pr->now);
			}
		assert_int_equal(sched_check_heartbeats(pr->inc, pr->now),
				 sched_check_heartbeats(pr->full, pr->now));
		sched_tick(pr->inc, pr->now);
		sched_tick(pr->full, pr->now);
	} else if (op < 66) {
		uint64_t iv = (uint64_t)pr->inc->conf->fault_check_interval_sec * 1000000u;

		/* deferred: the reports move which servers are late, the pass comes after */
		what = "reports of some servers, a pass later";
		sched_cluster_set_deferred_passes(pr->inc, true);
		sched_cluster_set_deferred_passes(pr->full, true);
		for (unsigned k = 0; k < ns; k++)
			if (pick(pr, 2)) {
				fx_report_ok(pr->inc, k, pr->now);
				fx_report_ok(pr->full, k, pr->now);
			}
		pr->now += iv / 2 + pick(pr, 4) * iv / 2;
		sched_pass_run_owed(pr->inc, pr->now);
		sched_pass_run_owed(pr->full, pr->now);
		sched_schedule(pr->inc, pr->now);
		sched_schedule(pr->full, pr->now);
		sched_cluster_set_deferred_passes(pr->inc, false);
		sched_cluster_set_deferred_passes(pr->full, false);
	} else if (op < 76) {
		uint64_t step = 1 + pick(pr, 50);

		what = "a checkpoint report";
		j = random_job(pr, SCHED_JOB_RUNNING);
		if (!j)
			return;
		snprintf(name, sizeof(name), "%s", j);
		assert_int_equal(sched_job_checkpoint(pr->inc, name, FX_UID, step, "/ckpt/x",
						      pr->now),
				 sched_job_checkpoint(pr->full, name, FX_UID, step, "/ckpt/x",
						      pr->now));
	} else if (op < 88) {
		unsigned d = pick(pr, 8);
		enum conf_health_level l = pick(pr, 2) ? CONF_HEALTH_ALARM : CONF_HEALTH_WARNING;

		what = "an NPU alarm or warning";
		fx_report_npu(pr->inc, s, d, l, pr->now);
		fx_report_npu(pr->full, s, d, l, pr->now);
	} else if (op < 94) {
		unsigned kind = pick(pr, 5);
		char why[SCHED_REASON_MAX];
		int ri, rf;

		/* job control (sched_control.c): a hold takes a job out of the pending order,
		 * a release and a new priority put it back */
		j = random_job(pr, kind == 3 || ((kind == 2 || kind == 4) && pick(pr, 2)) ?
					   SCHED_JOB_RUNNING :
					   SCHED_JOB_PENDING);
		if (!j)
			return;
		snprintf(name, sizeof(name), "%s", j);
		if (kind == 0) {
			what = "a hold";
			ri = sched_job_hold(pr->inc, name, FX_UID, pr->now, why);
			rf = sched_job_hold(pr->full, name, FX_UID, pr->now, why);
		} else if (kind == 1) {
			what = "a release";
			ri = sched_job_release(pr->inc, name, FX_UID, pr->now, why);
			rf = sched_job_release(pr->full, name, FX_UID, pr->now, why);
		} else if (kind == 2) {
			unsigned prio = 100 * pick(pr, 10);

			what = "a new priority";
			ri = sched_job_update(pr->inc, name, FX_UID, true, SCHED_FIELD_PRIORITY, prio,
					      pr->now, why);
			rf = sched_job_update(pr->full, name, FX_UID, true, SCHED_FIELD_PRIORITY,
					      prio, pr->now, why);
		} else if (kind == 4) {
			unsigned npus = 1u << pick(pr, 5); /* 1 to 16 */

			what = "a resize";
			ri = sched_job_resize(pr->inc, name, FX_UID, true, npus, pr->now, why);
			rf = sched_job_resize(pr->full, name, FX_UID, true, npus, pr->now, why);
			if (ri == 0 && pick(pr, 2)) {
				fx_report_gone(pr->inc, name, pr->now);
				fx_report_gone(pr->full, name, pr->now);
			}
		} else {
			what = "a requeue";
			ri = sched_job_requeue(pr->inc, name, FX_UID, false, pr->now, why);
			rf = sched_job_requeue(pr->full, name, FX_UID, false, pr->now, why);
			if (ri == 0 && pick(pr, 2)) {
				fx_report_gone(pr->inc, name, pr->now);
				fx_report_gone(pr->full, name, pr->now);
			}
		}
		assert_int_equal(ri, rf);
	} else {
		what = "a submission at a later instant";
		pr->now += (1 + pick(pr, 900)) * 1000000ull;
		submit_one(pr);
	}
	expect_same(pr, what);
}


static void one_step(struct pair *pr)
{
	unsigned op = pick(pr, 100);
	const char *what;

	if (pick(pr, 4) == 0) {
		more_step(pr);
		return;
	}
	char name[CONF_NAME_MAX + 1];
	const char *j;

	if (op < 45) {
		what = "a submission";
		submit_one(pr);
	} else if (op < 65) {
		unsigned k = 2 + pick(pr, 6);

		/* the daemon's way: requests deferred, one owed pass for the burst */
		what = "a deferred burst";
		sched_cluster_set_deferred_passes(pr->inc, true);
		sched_cluster_set_deferred_passes(pr->full, true);
		for (unsigned i = 0; i < k; i++)
			submit_one(pr);
		sched_pass_run_owed(pr->inc, pr->now);
		sched_pass_run_owed(pr->full, pr->now);
		sched_cluster_set_deferred_passes(pr->inc, false);
		sched_cluster_set_deferred_passes(pr->full, false);
	} else if (op < 72) {
		what = "a tick";
		pr->now += (1 + pick(pr, 120)) * 1000000ull;
		sched_tick(pr->inc, pr->now);
		sched_tick(pr->full, pr->now);
	} else if (op < 78) {
		what = "a pass with nothing new, later";
		pr->now += (1 + pick(pr, 30)) * 1000000ull;
		sched_schedule(pr->inc, pr->now);
		sched_schedule(pr->full, pr->now);
	} else if (op < 84) {
		what = "a completion";
		j = random_job(pr, SCHED_JOB_RUNNING);
		if (!j)
			return;
		snprintf(name, sizeof(name), "%s", j);
		assert_int_equal(fx_complete(pr->inc, name, FX_UID, pr->now),
				 fx_complete(pr->full, name, FX_UID, pr->now));
	} else if (op < 90) {
		what = "a cancel";
		j = random_job(pr, pick(pr, 2) ? SCHED_JOB_PENDING : SCHED_JOB_RUNNING);
		if (!j)
			return;
		snprintf(name, sizeof(name), "%s", j);
		assert_int_equal(fx_cancel(pr->inc, name, FX_UID, pr->now),
				 fx_cancel(pr->full, name, FX_UID, pr->now));
	} else if (op < 93) {
		unsigned s = pick(pr, (unsigned)pr->inc->server_count), d = pick(pr, 8);

		what = "an NPU fault";
		fx_report_npu(pr->inc, s, d, CONF_HEALTH_CRITICAL, pr->now);
		fx_report_npu(pr->full, s, d, CONF_HEALTH_CRITICAL, pr->now);
	} else if (op < 97) {
		unsigned s = pick(pr, (unsigned)pr->inc->server_count);

		what = "an OK report";
		fx_report_ok(pr->inc, s, pr->now);
		fx_report_ok(pr->full, s, pr->now);
	} else {
		unsigned q = pick(pr, (unsigned)pr->inc->conf->queue_count);
		unsigned npus = 8 * pick(pr, 4);

		what = "a quota change";
		assert_int_equal(
			sched_queue_set_quota(pr->inc, pr->inc->conf->queues[q].name, npus, pr->now),
			sched_queue_set_quota(pr->full, pr->full->conf->queues[q].name, npus,
					      pr->now));
	}
	expect_same(pr, what);
}

/* @steps random operations on two clusters built from @o, @seeds times; returns how many
 * passes the incremental side resumed. */
static uint64_t run_pairs_as(const struct fx_opts *o, const char *const *queues, size_t nq,
			     unsigned seeds, unsigned steps, bool one_prio)
{
	uint64_t resumed = 0, passes = 0;

	for (unsigned seed = 1; seed <= seeds; seed++) {
		struct pair pr = { .now = T0, .rng = 0x9e3779b97f4a7c15ull * seed,
				   .queues = queues, .queue_count = nq,
				   .one_prio = one_prio };

		pr.inc = fx_cluster(o);
		pr.full = fx_cluster(o);
		sched_cluster_set_incremental(pr.full, false);
		for (unsigned i = 0; i < steps; i++)
			one_step(&pr);
		assert_int_equal(pr.full->passes_incremental, 0);
		resumed += pr.inc->passes_incremental;
		passes += pr.inc->passes_run + pr.inc->pass_requests;
		sched_cluster_free(pr.inc);
		sched_cluster_free(pr.full);
	}
	print_message("%llu passes resumed of about %llu\n", (unsigned long long)resumed,
		      (unsigned long long)passes / 2);
	return resumed;
}

static uint64_t run_pairs(const struct fx_opts *o, const char *const *queues, size_t nq,
			  unsigned seeds, unsigned steps)
{
	return run_pairs_as(o, queues, nq, seeds, steps, false) +
	       run_pairs_as(o, queues, nq, seeds / 2, steps, true);
}

static const char *const q_default[] = { "default" };
static const char *const q_prio[] = { "prod", "batch", "research" };
static const char *const q_quota[] = { "train", "finetune", "strict" };

static void test_one_queue_backfill_preemption(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2 };

	(void)state;
	assert_true(run_pairs(&o, q_default, 1, 30, 250) > 50);
}

static void test_queue_priorities_and_shares(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2, .queues = queues_prio };

	(void)state;
	assert_true(run_pairs(&o, q_prio, 3, 30, 250) > 50);
}

/* Priority aging moves queues past each other as time passes and as new jobs become
 * their queue's first (a cycle: an old job of A before B's, B's before A's new urgent
 * one, which is before A's old one inside A): with it no pass is resumed, and the two
 * sides must still agree. Queue priorities 20 apart are passed within minutes. */
static void test_priority_aging(void **state)
{
	static const char close_queues[] = "  - name: prod\n"
					   "    priority: 520\n"
					   "  - name: batch\n"
					   "  - name: research\n"
					   "    weight: 3\n";
	struct fx_opts o = { .servers = 6, .switches = 2, .queues = queues_age,
			     .resource_extra = "  priority_weight_age: 200\n"
					       "  priority_max_age: 2h\n" };

	(void)state;
	assert_true(run_pairs(&o, q_prio, 3, 20, 250) > 50);
	o.queues = close_queues;
	assert_true(run_pairs(&o, q_prio, 3, 20, 250) > 50);
}

/* resource.preempt_exempt_time: a kept pass is not resumed once a run's exemption has
 * ended (preemption may then take it), and is before that. */
static void test_preempt_exempt_time(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2, .queues = queues_prio,
			     .resource_extra = "  preempt_exempt_time: 20m\n" };

	(void)state;
	assert_true(run_pairs(&o, q_prio, 3, 30, 250) > 50);
}

static void test_quotas_and_borrowing(void **state)
{
	struct fx_opts o = { .servers = 6, .queues = queues_quota, .quota = true };

	(void)state;
	assert_true(run_pairs(&o, q_quota, 3, 30, 250) > 50);
}

static void test_strict_order_no_preemption(void **state)
{
	struct fx_opts a = { .servers = 5, .no_backfill = true };
	struct fx_opts b = { .servers = 5, .no_preemption = true, .queues = queues_prio };

	(void)state;
	assert_true(run_pairs(&a, q_default, 1, 30, 250) > 50);
	assert_true(run_pairs(&b, q_prio, 3, 30, 250) > 50);
}

/* The case the kept pass is for: a full cluster and a long queue (of queues @queues);
 * each new submission is tried alone (more than @min_resumed of 200), also as time
 * moves on by @step_usec between submissions, and the pass after a completion is a full
 * one again. */
static void long_queue_limited(const struct fx_opts *o, const char *const *queues, size_t nq,
			       uint64_t step_usec, uint64_t min_resumed, uint64_t limit_sec)
{
	struct pair pr = { .now = T0, .rng = 7, .queues = queues, .queue_count = nq,
			   .plain = nq == 1, .one_prio = nq > 1, .limit_sec = limit_sec };
	char name[CONF_NAME_MAX + 1];
	uint64_t before;

	pr.inc = fx_cluster(o);
	pr.full = fx_cluster(o);
	sched_cluster_set_incremental(pr.full, false);
	for (int i = 0; i < 200; i++) {
		submit_one(&pr);
		expect_same(&pr, "a submission");
		if (!step_usec)
			continue;
		pr.now += step_usec; /* the daemon's tick: limits reached, stops ended */
		sched_tick(pr.inc, pr.now);
		sched_tick(pr.full, pr.now);
		expect_same(&pr, "a tick");
	}
	print_message("%llu of 200 submissions' passes resumed\n",
		      (unsigned long long)pr.inc->passes_incremental);
	assert_true(pr.inc->passes_incremental > min_resumed);
	/* a completion frees NPUs: its pass is a full one, with the same outcome */
	before = pr.inc->passes_incremental;
	snprintf(name, sizeof(name), "%s", random_job(&pr, SCHED_JOB_RUNNING));
	assert_int_equal(fx_complete(pr.inc, name, FX_UID, pr.now), 0);
	assert_int_equal(fx_complete(pr.full, name, FX_UID, pr.now), 0);
	expect_same(&pr, "a completion");
	assert_int_equal(pr.inc->passes_incremental, before);
	sched_cluster_free(pr.inc);
	sched_cluster_free(pr.full);
}

static void long_queue(const struct fx_opts *o, const char *const *queues, size_t nq,
		       uint64_t step_usec, uint64_t min_resumed)
{
	long_queue_limited(o, queues, nq, step_usec, min_resumed, 0);
}

static void test_full_cluster_long_queue(void **state)
{
	struct fx_opts o = { .servers = 4 };

	(void)state;
	long_queue(&o, q_default, 1, 0, 150);
	long_queue(&o, q_default, 1, 1000000, 150);
}

/*
 * Every job with a time_limit (as Slurm sites ask, and a queue's default_time_limit
 * gives): the reservation of the job first in line has a known start, and the jobs
 * behind it are measured against it. Those outcomes hold while no waiting job that could
 * end before the start yet stops being able to, and no running job passes its limit; a
 * submission a second later is tried alone (it was not: a kept pass with a known start
 * was never resumed at another instant, and the example cluster's submissions of 'npus:
 * 1, time_limit: 1h' fell from 721/s at 5,000 held to 163/s at 15,000). Limits of an hour
 * and of ten minutes, submissions 1 s and 30 s apart.
 */
static void test_full_cluster_long_queue_with_time_limits(void **state)
{
	struct fx_opts o = { .servers = 4 };

	(void)state;
	long_queue_limited(&o, q_default, 1, 1000000, 150, 3600);
	long_queue_limited(&o, q_default, 1, 30000000, 150, 600);
}

/* With priority aging a long queue is served as cheaply: within a step of the age the
 * order between queues stands still, and a new job that comes after every job served
 * since its queue's list ran out is tried alone (a submission cost O(pending) with
 * aging on: the example cluster's curve of submissions/s fell from 1,659/s at 5,000 jobs
 * held to 95/s at 30,000). One queue, at one instant and 1 s apart (steps of the age are
 * 36 s here: some passes cross one); three queues of one priority 1 s apart, where the
 * ages, then the shares decide between queues (a new job of the queue served last is
 * tried alone: a third of them, as without aging). */
static void test_full_cluster_long_queue_with_aging(void **state)
{
	static const char equal_queues[] = "  - name: prod\n"
					   "    weight: 2\n"
					   "  - name: batch\n"
					   "  - name: research\n"
					   "    weight: 3\n";
	struct fx_opts o = { .servers = 4, .queues = equal_queues,
			     .resource_extra = "  priority_weight_age: 200\n"
					       "  priority_max_age: 2h\n" };
	struct fx_opts one = { .servers = 4,
			       .resource_extra = "  priority_weight_age: 200\n"
						 "  priority_max_age: 2h\n" };

	(void)state;
	long_queue(&one, q_default, 1, 0, 150);
	long_queue(&one, q_default, 1, 1000000, 150);
	long_queue(&o, q_prio, 3, 1000000, 50);
}

/*
 * The shipped example cluster (examples/ascend_cluster.yaml: aging, a preemption
 * exemption, backfill, queues with quotas) as users fill it: 400 jobs of the default
 * queue, 1 to 8 NPUs, half of them with a time_limit, 100 ms apart with the daemon's
 * ticks. Once the cluster is full each one waits behind the others and must be tried
 * alone (a setting of the example that makes every pass a full one made a submission's
 * cost grow with the jobs held twice before, unseen by any test); the outcomes match full
 * passes throughout.
 */
static void test_example_cluster_submissions_are_tried_alone(void **state)
{
	static const unsigned sizes[] = { 1, 1, 2, 4, 8 };
	struct conf_cluster *conf[2];
	struct conf_error err;
	char *path = test_path("examples/ascend_cluster.yaml"), reason[SCHED_REASON_MAX];
	struct pair pr = { .now = T0, .queues = q_default, .queue_count = 1 };

	(void)state;
	for (int k = 0; k < 2; k++)
		if (conf_cluster_load(path, &conf[k], &err) != 0)
			fail_msg("%s: %s", path, conf_error_format(&err, reason, sizeof(reason)));
	free(path);
	assert_int_equal(sched_cluster_new(conf[0], &pr.inc), 0);
	assert_int_equal(sched_cluster_new(conf[1], &pr.full), 0);
	sched_cluster_set_incremental(pr.full, false);
	for (unsigned i = 0; i < 400; i++) {
		char name[32];

		snprintf(name, sizeof(name), "job%u", i);
		for (int k = 0; k < 2; k++) {
			struct conf_job_spec *s = fx_spec_full(name, sizes[i % 5], NULL, 500);

			s->time_limit_sec = i % 2 ? 3600 : 0;
			assert_int_equal(sched_job_submit(k ? pr.full : pr.inc, s, FX_UID, FX_GID,
							  pr.now, reason, NULL),
					 0);
		}
		expect_same(&pr, "a submission");
		pr.now += 100000;
		sched_tick(pr.inc, pr.now);
		sched_tick(pr.full, pr.now);
		expect_same(&pr, "a tick");
	}
	print_message("%llu of 400 submissions' passes resumed\n",
		      (unsigned long long)pr.inc->passes_incremental);
	assert_true(pr.inc->passes_incremental > 300);
	sched_cluster_free(pr.inc);
	sched_cluster_free(pr.full);
}

/*
 * A pass that placed nothing and preempted nothing, run again at the same instant on the
 * same cluster, changes nothing: no event, no reason, no reservation moves. (What the
 * kept pass relies on; a victim whose pending reason had just changed once counted as
 * requeued at that instant, and the second pass served preemptors first.)
 */
static void test_settled_pass_is_idempotent(void **state)
{
	static const struct {
		struct fx_opts o;
		const char *const *queues;
		size_t nq;
	} cases[] = {
		{ { .servers = 6, .switches = 2 }, q_default, 1 },
		{ { .servers = 6, .switches = 2, .queues = queues_prio }, q_prio, 3 },
		{ { .servers = 6, .queues = queues_quota, .quota = true }, q_quota, 3 },
	};
	unsigned checked = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (unsigned seed = 1; seed <= 30; seed++) {
			struct pair pr = { .now = T0, .rng = 0x51ed27a3ull * seed,
					   .queues = cases[k].queues,
					   .queue_count = cases[k].nq,
					   .one_prio = seed % 2 };

			/* both sides full passes: the pair's comparison still runs */
			pr.inc = fx_cluster(&cases[k].o);
			pr.full = fx_cluster(&cases[k].o);
			sched_cluster_set_incremental(pr.inc, false);
			sched_cluster_set_incremental(pr.full, false);
			for (unsigned i = 0; i < 250; i++) {
				struct sched_cluster *c = pr.full;
				uint64_t pre = c->preemptions, seq;
				char **reasons;

				unsigned placed;

				one_step(&pr);
				placed = sched_schedule(c, pr.now);
				sched_schedule(pr.inc, pr.now);
				expect_same(&pr, "a pass right after");
				if (placed || c->preemptions != pre)
					continue;
				seq = c->next_event_seq;
				reasons = calloc(c->job_count, sizeof(*reasons));
				assert_non_null(reasons);
				for (size_t j = 0; j < c->job_count; j++)
					assert_non_null(reasons[j] = strdup(c->jobs[j]->reason));
				if (sched_schedule(c, pr.now) == 0 && c->preemptions == pre) {
					checked++;
					for (size_t j = 0; j < c->job_count; j++)
						if (strcmp(reasons[j], c->jobs[j]->reason) != 0)
							fail_msg("seed %u step %u: a second pass at "
								 "the same instant changed job %s: "
								 "\"%s\" -> \"%s\"",
								 seed, i, c->jobs[j]->name,
								 reasons[j], c->jobs[j]->reason);
					assert_int_equal(c->next_event_seq, seq);
				}
				for (size_t j = 0; j < c->job_count; j++)
					free(reasons[j]);
				free(reasons);
				sched_schedule(pr.inc, pr.now); /* keep the pair in step */
				expect_same(&pr, "a second pass");
			}
			sched_cluster_free(pr.inc);
			sched_cluster_free(pr.full);
		}
	assert_true(checked > 1000);
}


/* ---- deterministic cases: each once diverged ---- */

/* A pair for a hand-written case, both sides deferring their passes (the daemon's way):
 * a pass runs only where the case says. */
static void pair_begin(struct pair *pr, const struct fx_opts *o)
{
	*pr = (struct pair){ .now = T0, .rng = 1, .queues = q_default, .queue_count = 1 };
	pr->inc = fx_cluster(o);
	pr->full = fx_cluster(o);
	sched_cluster_set_incremental(pr->full, false);
	sched_cluster_set_deferred_passes(pr->inc, true);
	sched_cluster_set_deferred_passes(pr->full, true);
}

static void pair_end(struct pair *pr)
{
	sched_cluster_free(pr->inc);
	sched_cluster_free(pr->full);
}

static void pair_pass(struct pair *pr, const char *after_what)
{
	sched_pass_run_owed(pr->inc, pr->now);
	sched_pass_run_owed(pr->full, pr->now);
	expect_same(pr, after_what);
}

static void pair_schedule(struct pair *pr, const char *after_what)
{
	sched_schedule(pr->inc, pr->now);
	sched_schedule(pr->full, pr->now);
	expect_same(pr, after_what);
}

static void pair_submit(struct pair *pr, const char *name, unsigned npus, const char *queue,
			unsigned prio)
{
	char reason[SCHED_REASON_MAX];

	assert_int_equal(sched_job_submit(pr->inc, fx_spec_full(name, npus, queue, prio), FX_UID,
					  FX_GID, pr->now, reason, NULL),
			 0);
	assert_int_equal(sched_job_submit(pr->full, fx_spec_full(name, npus, queue, prio), FX_UID,
					  FX_GID, pr->now, reason, NULL),
			 0);
}

static void pair_report_ok(struct pair *pr, unsigned server)
{
	fx_report_ok(pr->inc, server, pr->now);
	fx_report_ok(pr->full, server, pr->now);
}

/*
 * Which servers are suspect moves with time and with heartbeats that change nothing else
 * (a late report makes a server the last choice): the kept pass holds only while the
 * same servers are suspect. Server 2 suspect when the pass was kept, servers 0 and 1 when
 * it is resumed: a signature that sums a linear function of the index cannot tell {2}
 * from {0, 1}, and the kept reservation stayed on node-0, which a full pass moves.
 */
static void test_suspect_servers_change_exactly(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct pair pr;
	uint64_t interval;

	(void)state;
	pair_begin(&pr, &o);
	interval = (uint64_t)pr.inc->conf->fault_check_interval_sec * 1000000u;
	for (unsigned s = 0; s < 4; s++)
		pair_report_ok(&pr, s);
	pair_pass(&pr, "reports");
	pair_submit(&pr, "all", 32, NULL, 500);
	pair_pass(&pr, "a job on every server");
	pair_submit(&pr, "next", 8, NULL, 500);
	pair_pass(&pr, "a job that waits with a reservation");
	/* node-0, 1 and 3 report again; node-2 becomes late */
	pr.now += interval;
	pair_report_ok(&pr, 0);
	pair_report_ok(&pr, 1);
	pair_report_ok(&pr, 3);
	pr.now += interval * 6 / 10;
	pair_schedule(&pr, "a pass with node-2 late");
	/* node-2 and 3 report again; node-0 and 1 become late */
	pr.now += 1000000;
	pair_report_ok(&pr, 2);
	pair_report_ok(&pr, 3);
	pr.now += interval - 1000000;
	pair_schedule(&pr, "a pass with node-0 and node-1 late");
	pair_end(&pr);
}

/*
 * Priority aging: the order between two queues' first jobs moves with time alone. "old"
 * (batch, 500) waits 100 minutes before "new" (prod, 650) arrives and is first in line
 * (500 + 166 > 650); 70 minutes later its age has stopped at 200 and "new"'s has not
 * (700 < 650 + 116): "new" is first. A submission then must not resume the pass kept from
 * before, which served "old" first.
 */
static void test_aging_reorders_queues_without_a_change(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_age,
			     .resource_extra = "  priority_weight_age: 200\n"
					       "  priority_max_age: 2h\n" };
	struct pair pr;

	(void)state;
	pair_begin(&pr, &o);
	pair_submit(&pr, "blk", 8, "prod", 500);
	pair_pass(&pr, "a job on the server");
	pr.now += 1000000;
	pair_submit(&pr, "old", 8, "batch", 500);
	pair_pass(&pr, "a batch job waits");
	pr.now += 100 * 60 * 1000000ull;
	pair_submit(&pr, "new", 8, "prod", 500);
	pair_pass(&pr, "a prod job waits behind the older batch job");
	expect_reason_has(sched_cluster_find_job(pr.inc, "old"), "first in line:");
	pr.now += 70 * 60 * 1000000ull;
	pair_submit(&pr, "later", 8, "batch", 500);
	pair_pass(&pr, "a submission after the ages moved the order");
	expect_reason_has(sched_cluster_find_job(pr.inc, "new"), "first in line:");
	pair_end(&pr);
}

/*
 * With aging, the jobs served after a queue's list ran out are not served in one order:
 * "y" (priority 800, new) is served before "o" (priority 100, five steps of the age
 * older) because inside their queue priority goes first, though across queues "o" comes
 * first. A new prod job "n" (priority 900, new) comes after "o" but before "y" across
 * queues: a full pass serves it first (it heads prod, and beats "y" heading batch), and
 * gives it the reservation. The kept pass must not be resumed for it: checking "n"
 * against the last job served ("o") alone would let it in behind "y".
 */
static void test_aging_new_job_between_served_jobs(void **state)
{
	static const char queues[] = "  - name: prod\n"
				     "  - name: batch\n";
	struct fx_opts o = { .servers = 1, .queues = queues, .no_preemption = true,
			     .resource_extra = "  priority_weight_age: 200\n"
					       "  priority_max_age: 2h\n" };
	struct pair pr;

	(void)state;
	pair_begin(&pr, &o);
	pair_submit(&pr, "blk", 8, "batch", 500);
	pair_pass(&pr, "a job on the server");
	pr.now += 1000000;
	pair_submit(&pr, "o", 8, "batch", 100);
	pair_pass(&pr, "an old job waits");
	pr.now += 5 * 36 * 1000000ull; /* five steps of the age (2h / 200 = 36 s each) */
	pair_submit(&pr, "y", 8, "batch", 800);
	pair_pass(&pr, "a young job of higher priority waits before it");
	expect_reason_has(sched_cluster_find_job(pr.inc, "y"), "first in line:");
	pr.now += 1000000;
	pair_submit(&pr, "n", 8, "prod", 900);
	pair_pass(&pr, "a prod job served between the two");
	expect_reason_has(sched_cluster_find_job(pr.inc, "n"), "first in line:");
	pair_end(&pr);
}

/*
 * A new job that preempts moves its queue's promised NPUs (committed): a job of that queue
 * that had its turn within the quota before may now be beyond it, and the borrowing
 * phase of a full pass gives it a turn (a new reason). The resumed pass must too.
 */
static void test_preemption_by_new_job_moves_quota_standing(void **state)
{
	static const char queues[] = "  - name: a\n"
				     "    quota_npus: 24\n"
				     "    may_borrow: true\n"
				     "  - name: b\n";
	struct fx_opts o = { .servers = 3, .queues = queues, .quota = true };
	struct pair pr;

	(void)state;
	pair_begin(&pr, &o);
	assert_int_equal(sched_server_set_cordon(pr.inc, "node-2", true, false, pr.now), 0);
	assert_int_equal(sched_server_set_cordon(pr.full, "node-2", true, false, pr.now), 0);
	pair_pass(&pr, "a cordon");
	pair_submit(&pr, "victim", 8, "b", 100);
	pair_submit(&pr, "keeper", 8, "b", 900);
	pair_pass(&pr, "two running jobs");
	pair_submit(&pr, "big", 24, "a", 500);
	pair_pass(&pr, "a job that cannot fit while node-2 is cordoned");
	pr.now += 1000000;
	pair_submit(&pr, "small", 8, "a", 500);
	pair_pass(&pr, "a new job that preempts");
	pair_end(&pr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_queue_backfill_preemption),
		cmocka_unit_test(test_queue_priorities_and_shares),
		cmocka_unit_test(test_priority_aging),
		cmocka_unit_test(test_preempt_exempt_time),
		cmocka_unit_test(test_aging_reorders_queues_without_a_change),
		cmocka_unit_test(test_aging_new_job_between_served_jobs),
		cmocka_unit_test(test_quotas_and_borrowing),
		cmocka_unit_test(test_strict_order_no_preemption),
		cmocka_unit_test(test_full_cluster_long_queue),
		cmocka_unit_test(test_full_cluster_long_queue_with_aging),
		cmocka_unit_test(test_full_cluster_long_queue_with_time_limits),
		cmocka_unit_test(test_example_cluster_submissions_are_tried_alone),
		cmocka_unit_test(test_settled_pass_is_idempotent),
		cmocka_unit_test(test_suspect_servers_change_exactly),
		cmocka_unit_test(test_preemption_by_new_job_moves_quota_standing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
