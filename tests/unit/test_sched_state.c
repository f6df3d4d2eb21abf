/* SPDX-License-Identifier: MIT */
/*
 * sched_state.c: a cluster saved as documents and loaded into a fresh cluster built from
 * the same configuration is the same cluster (every rendered file byte for byte); the
 * version counters the daemon's store relies on move whenever a saved document would
 * change; bad documents are refused without changing anything; a changed inventory
 * requeues or fails what no longer fits, and says why.
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

#include <jansson.h>

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "sched_policy_fixture.h"
#include "test_util.h"
#include "test_chaos.h"

/* Everything a store would keep, as documents. */
struct saved {
	char *meta;
	char **servers;
	size_t server_count;
	char **jobs;
	size_t job_count;
	struct sched_event *events; /* copies; line owned */
	size_t event_count;
	/* closed history records a store keeps apart (sched_job_run_save()), with the
	 * name of their job, in the store's order: by job, then by number */
	char **runs, **run_jobs;
	size_t run_count;
};

static void saved_free(struct saved *s)
{
	free(s->meta);
	for (size_t i = 0; i < s->server_count; i++)
		free(s->servers[i]);
	for (size_t i = 0; i < s->job_count; i++)
		free(s->jobs[i]);
	for (size_t i = 0; i < s->event_count; i++)
		free(s->events[i].line);
	for (size_t i = 0; i < s->run_count; i++) {
		free(s->runs[i]);
		free(s->run_jobs[i]);
	}
	free(s->runs);
	free(s->run_jobs);
	free(s->servers);
	free(s->jobs);
	free(s->events);
	memset(s, 0, sizeof(*s));
}

static void save_all(const struct sched_cluster *c, struct saved *s)
{
	size_t len;

	memset(s, 0, sizeof(*s));
	assert_int_equal(sched_meta_save(c, &s->meta, &len), 0);
	assert_int_equal(strlen(s->meta), len);
	s->servers = calloc(c->server_count, sizeof(char *));
	s->jobs = calloc(c->job_count + 1, sizeof(char *));
	s->events = calloc(c->event_count + 1, sizeof(*s->events));
	assert_non_null(s->servers);
	assert_non_null(s->jobs);
	assert_non_null(s->events);
	for (unsigned i = 0; i < c->server_count; i++)
		assert_int_equal(sched_server_save(c, i, &s->servers[s->server_count++], &len), 0);
	for (size_t i = 0; i < c->job_count; i++)
		assert_int_equal(sched_job_save(c, c->jobs[i], &s->jobs[s->job_count++], &len), 0);
	for (const struct sched_event *e = sched_event_next(c, 0); e;
	     e = sched_event_next(c, e->seq)) {
		struct sched_event *d = &s->events[s->event_count++];

		assert_int_equal(sched_event_copy(d, e), 0);
		assert_non_null(d->line);
	}
}

/* Load @s into @c (fresh) in the documented order; every document must load. */
static void load_all(struct sched_cluster *c, const struct saved *s, uint64_t now)
{
	char why[SCHED_REASON_MAX] = "";
	int r;

	for (size_t i = 0; i < s->event_count; i++) {
		const struct sched_event *e = &s->events[i];

		assert_int_equal(sched_event_load(c, e->seq, e->time_usec,
						  sched_event_kind_name(e->kind), e->job, e->server,
						  e->npu, e->state, e->reason, e->line),
				 0);
	}
	r = sched_meta_load(c, s->meta, strlen(s->meta), why);
	if (r != 0)
		fail_msg("meta: %d %s", r, why);
	for (size_t i = 0; i < s->server_count; i++) {
		r = sched_server_load(c, s->servers[i], strlen(s->servers[i]), now, why);
		if (r != 0)
			fail_msg("server %zu: %d %s", i, r, why);
	}
	for (size_t i = 0; i < s->job_count; i++) {
		r = sched_job_load(c, s->jobs[i], strlen(s->jobs[i]), now, why);
		if (r != 0)
			fail_msg("job %zu: %d %s\n%s", i, r, why, s->jobs[i]);
	}
	for (size_t i = 0; i < s->run_count; i++) {
		struct sched_job *j = sched_cluster_find_job(c, s->run_jobs[i]);

		assert_non_null(j);
		r = sched_job_run_load(j, s->runs[i], strlen(s->runs[i]), why);
		if (r != 0)
			fail_msg("history record %zu of %s: %d %s", i, s->run_jobs[i], r, why);
	}
	r = sched_restore_finish(c, now, why);
	if (r != 0)
		fail_msg("restore: %d %s", r, why);
}

static void dump_states(const struct sched_cluster *c)
{
	for (size_t i = 0; i < c->job_count; i++)
		print_message("# %s %s: %s\n", c->jobs[i]->name,
			      sched_job_state_name(c->jobs[i]->state), c->jobs[i]->reason);
}

typedef int (*render_fn)(const struct sched_cluster *, const struct sched_job *, char **,
			 size_t *);

static void expect_same_text(const char *what, int ra, char **a, int rb, char **b)
{
	assert_int_equal(ra, rb);
	if (ra == 0 && strcmp(*a, *b) != 0)
		fail_msg("%s differs after the restore:\n--- before\n%s\n--- after\n%s", what,
			 *a, *b);
	free(*a);
	free(*b);
	*a = *b = NULL;
}

/* Every file a user could read, compared between @a and @b. */
static void expect_same_cluster(const struct sched_cluster *a, const struct sched_cluster *b,
				uint64_t now)
{
	struct sched_render_ctx ctx = { .mount_path = "/ascend" };
	char *x = NULL, *y = NULL;
	size_t lx, ly;
	int rx, ry;

	rx = sched_render_cluster_status(a, &x, &lx);
	ry = sched_render_cluster_status(b, &y, &ly);
	expect_same_text("cluster/status", rx, &x, ry, &y);
	rx = sched_render_topology(a, &x, &lx);
	ry = sched_render_topology(b, &y, &ly);
	expect_same_text("topology.json", rx, &x, ry, &y);
	rx = sched_render_events(a, NULL, &x, &lx);
	ry = sched_render_events(b, NULL, &y, &ly);
	expect_same_text("cluster/events", rx, &x, ry, &y);
	rx = sched_render_metrics(a, now, &x, &lx);
	ry = sched_render_metrics(b, now, &y, &ly);
	expect_same_text("metrics", rx, &x, ry, &y);
	for (unsigned i = 0; i < a->server_count; i++) {
		rx = sched_render_server_npus(a, i, &x, &lx);
		ry = sched_render_server_npus(b, i, &y, &ly);
		expect_same_text("nodes/<server>/npus", rx, &x, ry, &y);
		rx = sched_render_server_health(a, i, &x, &lx);
		ry = sched_render_server_health(b, i, &y, &ly);
		expect_same_text("nodes/<server>/health", rx, &x, ry, &y);
		rx = sched_render_server_jobs(a, i, &x, &lx);
		ry = sched_render_server_jobs(b, i, &y, &ly);
		expect_same_text("nodes/<server>/jobs", rx, &x, ry, &y);
	}
	for (size_t q = 0; q < a->conf->queue_count; q++) {
		rx = sched_render_queue_status(a, &a->conf->queues[q], &x, &lx);
		ry = sched_render_queue_status(b, &b->conf->queues[q], &y, &ly);
		expect_same_text("queues/<q>/status", rx, &x, ry, &y);
	}
	assert_int_equal(a->job_count, b->job_count);
	for (size_t i = 0; i < a->job_count; i++) {
		const struct sched_job *ja = a->jobs[i], *jb = b->jobs[i];
		render_fn fns[] = { sched_render_job_status_json, sched_render_ranktable,
				    sched_render_job_history };
		const char *names[] = { "status.json", "ranktable.json", "history" };

		assert_string_equal(ja->name, jb->name);
		assert_int_equal(ja->serial, jb->serial);
		for (size_t f = 0; f < 3; f++) {
			rx = fns[f](a, ja, &x, &lx);
			ry = fns[f](b, jb, &y, &ly);
			expect_same_text(names[f], rx, &x, ry, &y);
		}
		rx = sched_render_job_env(a, ja, &ctx, &x, &lx);
		ry = sched_render_job_env(b, jb, &ctx, &y, &ly);
		expect_same_text("env", rx, &x, ry, &y);
		for (size_t k = 0; k < ja->slice_count; k++) {
			rx = sched_render_host_env(a, ja, k, &ctx, &x, &lx);
			ry = sched_render_host_env(b, jb, k, &ctx, &y, &ly);
			expect_same_text("hosts/<server>.env", rx, &x, ry, &y);
		}
		assert_int_equal(ja->queue_seq, jb->queue_seq);
		assert_int_equal(ja->need_min, jb->need_min);
		assert_int_equal(ja->type_mask, jb->type_mask);
	}
	assert_int_equal(a->next_event_seq, b->next_event_seq);
	assert_int_equal(a->next_job_serial, b->next_job_serial);
	assert_int_equal(a->next_queue_seq, b->next_queue_seq);
}

static void report(struct sched_cluster *c, unsigned server, const char *text, uint64_t now)
{
	struct conf_health_report rep;
	struct conf_error err;

	assert_int_equal(conf_health_parse(text, strlen(text), "health",
					   c->servers[server].conf->npu_count, &rep, &err),
			 0);
	assert_int_equal(sched_server_report(c, server, &rep, now), 0);
}

static const char *const QUEUES = "  - name: default\n    priority: 500\n"
				  "  - name: batch\n    priority: 100\n    quota_npus: 16\n"
				  "    may_borrow: true\n";

/* A cluster with a job in every state, faults, cordons and a quota changed at run time. */
static struct sched_cluster *busy_cluster(const struct fx_opts *o)
{
	struct sched_cluster *c = fx_cluster(o);
	run(c, spec("big", 16, NULL, 500, 0));			/* two whole servers */
	run(c, spec("small", 2, "batch", 100, 3600));	/* a time limit */
	assert_int_equal(sched_job_checkpoint(c, "small", FX_UID, 42, "/ckpt/small-1_42.ckpt",
					      adv(1)), 0);
	run(c, spec("done", 1, NULL, 500, 0));
	assert_int_equal(fx_complete(c, "done", FX_UID, adv(1)), 0);
	run(c, spec("gone", 1, NULL, 500, 0));
	assert_int_equal(fx_cancel(c, "gone", FX_UID, adv(1)), 0);
	assert_int_equal(sched_job_create_draft(c, "draft", FX_UID, FX_GID, adv(1), NULL), 0);
	assert_int_equal(sched_job_reject(c, "nope", FX_UID, FX_GID, "npus: 3 is odd", adv(1)),
			 0);
	submit(c, elastic_job("elastic", 8, 16, "batch", 100));
	run(c, spec("victim", 8, "batch", 100, 0));
	submit(c, spec("waits", 32, "batch", 100, 0));	/* over its queue's quota */
	/* a fault moves "big"; repeated faults make one NPU's isolation manual */
	report(c, 0, "agent host-a:0123\nnode OK\nnpu 3 Critical 0x80C98000 HBM ECC\n", adv(1));
	report(c, 1, "node OK\nnpu 5 Alarm 0x1 hot\n", adv(1));
	for (int i = 0; i < 3; i++) {
		report(c, 2, "node OK\nnpu 7 Critical 0x2 link down\n", adv(1));
		report(c, 2, "node OK\nnpu 7 OK\n", adv(1));
		report(c, 2, "node OK\nnpu 7 OK\n", adv(60)); /* past the hold time */
	}
	assert_int_equal(sched_server_set_cordon(c, "node-3", true, false, adv(1)), 0);
	assert_int_equal(sched_queue_set_quota(c, "batch", 24, adv(1)), 0);
	/* a high-priority job preempts: the victim is stopping */
	submit(c, spec("urgent", 8, NULL, 900, 0));
	sched_tick(c, adv(1));
	fx_check(c);
	return c;
}

static void test_state_round_trip_same_files(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2, .quota = true, .queues = QUEUES };
	struct sched_cluster *a, *b;
	struct saved s;
	unsigned states = 0;

	(void)state;
	a = busy_cluster(&o);
	for (size_t i = 0; i < a->job_count; i++)
		states |= 1u << a->jobs[i]->state;
	/* the fixture really has a job in each state the store must keep */
	for (int st = SCHED_JOB_DRAFT; st <= SCHED_JOB_REJECTED; st++)
		if (st != SCHED_JOB_RECOVERING && st != SCHED_JOB_FAILED && !(states & (1u << st))) {
			dump_states(a);
			fail_msg("the fixture has no %s job", sched_job_state_name(st));
		}
	save_all(a, &s);
	b = fx_cluster(&o);
	load_all(b, &s, clk);
	expect_same_cluster(a, b, clk);
	/* and both go on the same way: the stop deadline passes, the victim requeues */
	sched_tick(a, adv(120));
	sched_tick(b, clk);
	expect_same_cluster(a, b, clk);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/* Dependencies are saved: a job restored waiting goes on when its job completes after. */
static void test_state_dependencies_survive_restart(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *w = spec("w", 8, NULL, 500, 0), *m = spec("m", 8, NULL, 500, 0);
	struct sched_job *rw, *rm;
	struct saved s;

	(void)state;
	run(a, spec("p", 8, NULL, 500, 0));
	run(a, spec("q", 8, NULL, 500, 0));
	fx_after(w, "p", false);
	fx_after(fx_after(m, "q", true), "p", false);
	submit(a, w);
	submit(a, m);
	assert_int_equal(fx_cancel(a, "q", FX_UID, adv(1)), 0); /* m: one of two met */
	fx_check(a);
	assert_int_equal(sched_cluster_find_job(a, "m")->deps_waiting, 1);
	save_all(a, &s);
	b = fx_cluster(&o);
	load_all(b, &s, clk);
	expect_same_cluster(a, b, clk);
	rw = sched_cluster_find_job(b, "w");
	rm = sched_cluster_find_job(b, "m");
	assert_int_equal(rw->deps_waiting, 1);
	assert_int_equal(rm->deps_waiting, 1);
	assert_true(rm->deps[0].met);
	assert_int_equal(b->deps_jobs, 2);
	assert_int_equal(rw->state, SCHED_JOB_PENDING); /* q's server is free: still waits */
	assert_int_equal(fx_complete(b, "p", FX_UID, adv(1)), 0);
	fx_check(b);
	assert_int_equal(rw->state, SCHED_JOB_RUNNING);
	assert_int_equal(rm->state, SCHED_JOB_RUNNING);
	assert_int_equal(b->deps_jobs, 0);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * What ends while the records load (a queue no longer configured fails its jobs) is
 * settled once every record is in: the jobs waiting for it go on or are cancelled, in
 * whatever order the records load (a draft's record, older than what it waits for,
 * loads first).
 */
static void test_state_dependencies_settled_after_load(void **state)
{
	struct fx_opts o = { .servers = 3, .queues = "  - name: default\n  - name: research\n" };
	struct fx_opts o2 = { .servers = 3, .queues = "  - name: default\n" };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *ww = spec("ww", 8, NULL, 500, 0), *wa = spec("wa", 8, NULL, 500, 0);
	struct conf_job_spec *w = spec("w", 8, NULL, 500, 0);
	struct sched_job *d;
	struct saved s;

	(void)state;
	assert_int_equal(sched_job_create_draft(a, "w", FX_UID, FX_GID, adv(1), &d), 0);
	run(a, spec("dd", 8, "research", 500, 0));
	run(a, spec("x", 8, NULL, 500, 0));
	fx_after(ww, "dd", false);
	fx_after(wa, "dd", true);
	fx_after(w, "x", false);
	submit(a, ww);
	submit(a, wa);
	submit(a, w); /* the draft's record: a serial older than x's */
	assert_int_equal(a->deps_jobs, 3);
	save_all(a, &s);
	b = fx_cluster(&o2);
	load_all(b, &s, clk);
	fx_check(b);
	assert_int_equal(sched_cluster_find_job(b, "dd")->state, SCHED_JOB_FAILED);
	assert_int_equal(sched_cluster_find_job(b, "ww")->state, SCHED_JOB_CANCELLED);
	assert_int_equal(sched_cluster_find_job(b, "wa")->state, SCHED_JOB_RUNNING);
	/* w waits on for x, which runs */
	assert_int_equal(sched_cluster_find_job(b, "w")->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_cluster_find_job(b, "w")->deps_waiting, 1);
	assert_int_equal(sched_cluster_find_job(b, "x")->dependents, 1);
	assert_int_equal(b->deps_jobs, 1);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/* Job control's state is saved: a hold (whose), and a requeue's stop (sched_control.c). */
static void test_state_hold_and_requeue_survive_restart(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&o), *b;
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *ra, *rc;
	struct saved s;

	(void)state;
	run(a, spec("a", 8, NULL, 500, 0));
	run(a, spec("b", 8, NULL, 500, 0));
	submit(a, spec("c", 8, NULL, 500, 0));
	report(a, 0, "node OK\n", adv(1)); /* agents run there: a stop waits for them */
	report(a, 1, "node OK\n", adv(1));
	assert_int_equal(sched_job_requeue(a, "a", FX_UID, false, adv(1), why), 0);
	assert_int_equal(sched_job_hold(a, "a", FX_UID, adv(1), why), 0);
	assert_int_equal(sched_job_hold(a, "c", 0, adv(1), why), 0);
	fx_check(a);
	save_all(a, &s);
	b = fx_cluster(&o);
	load_all(b, &s, clk);
	expect_same_cluster(a, b, clk);
	ra = sched_cluster_find_job(b, "a");
	rc = sched_cluster_find_job(b, "c");
	assert_int_equal(ra->state, SCHED_JOB_STOPPING);
	assert_true(ra->stop_requeue);
	assert_int_equal(ra->hold_kind, SCHED_HOLD_USER);
	assert_int_equal(rc->hold_kind, SCHED_HOLD_ADMIN);
	/* the stop ends: "a" is pending and held, and "c" (held) does not take its NPUs */
	fx_report_gone(b, "a", adv(1));
	fx_check(b);
	assert_int_equal(ra->state, SCHED_JOB_PENDING);
	assert_int_equal(ra->requeue_cause, SCHED_REQUEUE_REQUESTED);
	assert_int_equal(rc->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_release(b, "c", FX_UID, adv(1), why), -EPERM);
	assert_int_equal(sched_job_release(b, "c", 0, adv(1), why), 0);
	fx_check(b);
	assert_int_equal(rc->state, SCHED_JOB_RUNNING);
	assert_int_equal(ra->state, SCHED_JOB_PENDING);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}


/*
 * Job records of format 1, as ascendfs wrote them until job records left out fields at
 * their defaults (tests/data/state/jobs-format1.jsonl: the jobs of busy_cluster() with
 * the options below, one per line, saved by commit 9be61f9), restore the same cluster
 * as today's records do. A store written before the change keeps every job.
 */
static void test_state_format1_job_records_still_load(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2, .quota = true, .queues = QUEUES };
	struct sched_cluster *a, *b;
	struct saved s;
	char *old = test_read_file("tests/data/state/jobs-format1.jsonl", NULL), *line, *save;
	char *a_doc;
	uint64_t was = clk;
	size_t n = 0;

	(void)state;
	clk = 1800000000ull * SEC; /* the clock busy_cluster() began at when the file was saved */
	a = busy_cluster(&o);
	save_all(a, &s);
	a_doc = strdup(s.jobs[1]); /* format 2 */
	assert_non_null(a_doc);
	for (line = strtok_r(old, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		assert_true(n < s.job_count);
		assert_non_null(strstr(line, "{\"format\":1,"));
		free(s.jobs[n]);
		s.jobs[n] = strdup(line);
		assert_non_null(s.jobs[n++]);
	}
	/* the fixture has not changed since the file was saved */
	assert_int_equal(n, s.job_count);
	b = fx_cluster(&o);
	load_all(b, &s, clk);
	expect_same_cluster(a, b, clk);
	/* a format 1 record without a field format 1 always wrote is malformed, and a job
	 * record of any format names its owner */
	{
		static const char *const drop[][2] = {
			{ "{\"format\":1,", "\"uid\":1000," },
			{ "{\"format\":1,", "\"stop_to\":\"draft\"," },
			{ "{\"format\":1,", "\"exited_ok\":[]," },
			{ "{\"format\":2,", "\"gid\":1000," },
		};
		struct sched_cluster *e = fx_cluster(&o);
		char why[SCHED_REASON_MAX];

		for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
			const char *src = strstr(drop[i][0], ":1") ? s.jobs[1] : a_doc;
			char *bad = strdup(src), *p = strstr(bad, drop[i][1]);

			assert_non_null(p);
			memmove(p, p + strlen(drop[i][1]), strlen(p + strlen(drop[i][1])) + 1);
			assert_int_equal(sched_job_load(e, bad, strlen(bad), clk, why), -EINVAL);
			assert_int_equal(e->job_count, 0);
			free(bad);
		}
		sched_cluster_free(e);
	}
	clk = clk > was ? clk : was;
	free(a_doc);
	free(old);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * A pending job's record holds what it is, not the defaults of what it has not done:
 * no run, restart, stop, preemption or checkpoint field (format 2), so 100,000 of them
 * read back in about half the time. Whatever is not at its default is kept (the round
 * trips above).
 */
static void test_state_pending_record_leaves_out_defaults(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const absent[] = {
		"generation",	"restarts",	   "start_usec",      "end_usec",
		"run_since_usec", "stop_to",	   "stop_cancelled",  "preempted_by",
		"preemptions",	"borrowing",	   "sched_port",      "checkpoint_path",
		"resume_path",	"exited_ok",	   "placement",	      "history",
		"runs_dropped", "first_start_usec", "requeue_cause", "ladder",
	};
	json_t *doc;
	char *text;
	size_t len;

	(void)state;
	run(c, spec("fits", 16, NULL, 500, 0));
	submit(c, spec("waits", 16, NULL, 500, 0));
	assert_int_equal(c->jobs[1]->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_save(c, c->jobs[1], &text, &len), 0);
	doc = json_loads(text, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "format")), 2);
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
		if (json_object_get(doc, absent[i]))
			fail_msg("a pending job's record has %s: %s", absent[i], text);
	assert_string_equal(json_string_value(json_object_get(doc, "state")), "pending");
	assert_string_equal(json_string_value(json_object_get(doc, "name")), "waits");
	assert_non_null(json_object_get(doc, "spec"));
	assert_non_null(json_object_get(doc, "reason"));
	json_decref(doc);
	free(text);
	sched_cluster_free(c);
}

/* Is @j on dirty list @l? */
static bool on_dirty_list(const struct sched_cluster *c, const struct sched_job *j, int l)
{
	for (const struct sched_job *k = c->dirty_head[l]; k; k = k->dirty[l].next)
		if (k == j)
			return true;
	return false;
}

/*
 * One decision renames the reason of every job waiting behind it: a job of higher
 * priority takes the reservation, and each job behind the old holder now waits behind
 * the new one. Those reasons are the pass's to give, and the first pass after a restore
 * gives them again, so they are not records to write (with 10,000 jobs waiting, one
 * such pass wrote 10,000 records): the notifier announces them, the store keeps the
 * older records, and a restore from those shows the same files.
 */
static void test_state_new_pending_reasons_are_not_records_to_write(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct sched_job *behind[5], *urgent;
	struct saved s, t;
	size_t n = 0;
	char name[16];

	(void)state;
	/* above every job that waits: nobody preempts them */
	run(a, spec("a", 8, NULL, 950, 3600));
	run(a, spec("b", 8, NULL, 950, 7200));
	submit(a, spec("big", 16, NULL, 500, 0));
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "long-%d", i);
		behind[i] = submit(a, spec(name, 8, NULL, 500, 86400));
		assert_non_null(strstr(behind[i]->reason, "waiting behind job \"big\""));
	}
	/* what the store holds now: every record, then nothing left to write */
	save_all(a, &s);
	while (sched_dirty_pop(a, SCHED_DIRTY_STORE))
		;
	while (sched_dirty_pop(a, SCHED_DIRTY_NOTIFY))
		;
	urgent = submit(a, spec("urgent", 16, NULL, 900, 0));
	assert_non_null(strstr(urgent->reason, "first in line"));
	assert_int_equal(urgent->state, SCHED_JOB_PENDING);
	for (int i = 0; i < 5; i++) {
		assert_non_null(strstr(behind[i]->reason, "waiting behind job \"urgent\""));
		assert_false(on_dirty_list(a, behind[i], SCHED_DIRTY_STORE));
		assert_true(on_dirty_list(a, behind[i], SCHED_DIRTY_NOTIFY));
	}
	assert_false(on_dirty_list(a, sched_cluster_find_job(a, "big"), SCHED_DIRTY_STORE));
	/* the new job is a record to write, and the only one */
	for (const struct sched_job *k = a->dirty_head[SCHED_DIRTY_STORE]; k;
	     k = k->dirty[SCHED_DIRTY_STORE].next)
		n++;
	assert_int_equal(n, 1);
	assert_true(on_dirty_list(a, urgent, SCHED_DIRTY_STORE));
	/* the store as the committer leaves it: every record on its list written anew, the
	 * others as they were (and the events and sequences as they are) */
	save_all(a, &t);
	for (size_t i = 0; i < s.job_count; i++)
		if (!on_dirty_list(a, a->jobs[i], SCHED_DIRTY_STORE)) {
			free(t.jobs[i]);
			t.jobs[i] = strdup(s.jobs[i]);
			assert_non_null(t.jobs[i]);
		}
	b = fx_cluster(&o);
	load_all(b, &t, clk);
	for (int i = 0; i < 5; i++)
		assert_string_equal(sched_cluster_find_job(b, behind[i]->name)->reason,
				    behind[i]->reason);
	expect_same_cluster(a, b, clk);
	saved_free(&s);
	saved_free(&t);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * A generation saved while it waited for its checkpoint scan waits again after the
 * restore, on the list the tick looks at (resume_wait_head), and the bound ends it.
 */
/*
 * A daemon restart during a dying-gasp save (recovery: [dump, job]): the step waits on
 * with what is left of its time, and the survivor's answer restarts the job from it.
 */
static void test_state_restored_dump_step_waits_on(void **state)
{
	struct fx_opts o = { .servers = 3, .cluster_extra = "  recovery_timeout: 60\n" };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *s = spec("d", 16, NULL, 500, 0);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *j;
	struct saved saved;
	unsigned s0, s1;
	uint64_t t = adv(1);

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		fx_report_ok(a, i, t);
	s->checkpoint_dir = strdup("/data/ckpt");
	assert_non_null(s->checkpoint_dir);
	s->recovery[0] = CONF_RECOVERY_DUMP;
	s->recovery[1] = CONF_RECOVERY_JOB;
	s->recovery_count = 2;
	j = run(a, s);
	s0 = j->slices[0].server;
	s1 = j->slices[1].server;
	fx_report_npu(a, s0, j->slices[0].device_ids[0], CONF_HEALTH_CRITICAL, adv(1));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	save_all(a, &saved);
	b = fx_cluster(&o);
	load_all(b, &saved, adv(1));
	j = sched_cluster_find_job(b, "d");
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_true(j->ladder.active);
	assert_int_equal(b->ladder_active, 1);
	assert_int_equal(j->ladder.request, 1);
	assert_int_equal(j->ladder.waited_count, 1);
	assert_true(j->ladder.deadline_usec > adv(0));
	fx_check(b);
	assert_int_equal(sched_job_recovery_answer(b, "d", FX_UID, 1, b->servers[s1].conf->name, -1,
						   SCHED_ANSWER_SAVED, 42, "/data/ckpt/d-1_42.ckpt",
						   adv(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_string_equal(j->resume_path, "/data/ckpt/d-1_42.ckpt");
	assert_int_equal(b->ladder_active, 0);
	fx_check(b);
	saved_free(&saved);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * A daemon restart during an in-place restart (recovery: [in-place, job]): the restarted
 * share's attempt, the answers so far and the step come back; the restarted process's
 * join then resumes the job in the same generation.
 */
static void test_state_restored_in_place_step_waits_on(void **state)
{
	struct fx_opts o = { .servers = 3, .cluster_extra = "  recovery_timeout: 60\n" };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *s = spec("ip", 16, NULL, 500, 0);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *j;
	struct saved saved;
	unsigned s0, s1;
	uint64_t t = adv(1);

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		fx_report_ok(a, i, t);
	s->recovery[0] = CONF_RECOVERY_IN_PLACE;
	s->recovery[1] = CONF_RECOVERY_JOB;
	s->recovery_count = 2;
	j = run(a, s);
	s0 = j->slices[0].server;
	s1 = j->slices[1].server;
	assert_int_equal(sched_job_process_exit(a, "ip", FX_UID, 1, a->servers[s1].conf->name, -1,
						3, adv(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(sched_job_recovery_answer(a, "ip", FX_UID, 1, a->servers[s0].conf->name,
						   -1, SCHED_ANSWER_PAUSED, 33, NULL, adv(1), why),
			 0);
	save_all(a, &saved);
	b = fx_cluster(&o);
	load_all(b, &saved, adv(1));
	j = sched_cluster_find_job(b, "ip");
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_true(j->ladder.active);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_IN_PLACE);
	assert_int_equal(j->ladder.restarted, 1);
	assert_int_equal(j->ladder.waited_count, 0);
	assert_int_equal(j->ladder.answered_count, 1); /* the survivor's pause, not the join */
	assert_int_equal(j->ladder.saved_step, 33);
	assert_int_equal(j->slices[1].attempt, 1);
	assert_int_equal(j->slices[0].attempt, 0);
	fx_check(b);
	assert_int_equal(sched_job_recovery_answer(b, "ip", FX_UID, 1, b->servers[s1].conf->name,
						   -1, SCHED_ANSWER_JOINED, 0, NULL, adv(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 1);
	assert_true(j->ladder.resumed);
	assert_int_equal(j->ladder.resume_step, 33);
	assert_int_equal(b->ladder_active, 0);
	fx_check(b);
	/* the resume notice survives a restart too */
	saved_free(&saved);
	save_all(b, &saved);
	sched_cluster_free(a);
	a = fx_cluster(&o);
	load_all(a, &saved, adv(1));
	j = sched_cluster_find_job(a, "ip");
	assert_true(j->ladder.resumed);
	assert_int_equal(j->ladder.resume_step, 33);
	assert_int_equal(j->ladder.request, 2);
	assert_int_equal(j->slices[1].attempt, 1);
	saved_free(&saved);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * A daemon restart during a process-level step (recovery: [process, job]): the new
 * generation's placement with its kept share, the new processes to wait for and the
 * survivor's answer come back; the new process's join then runs the job.
 */
static void test_state_restored_process_step_waits_on(void **state)
{
	struct fx_opts o = { .servers = 3, .cluster_extra = "  recovery_timeout: 60\n" };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *s = spec("pl", 16, NULL, 500, 0);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *j;
	struct saved saved;
	unsigned s0, spare;
	uint64_t t = adv(1);

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		fx_report_ok(a, i, t);
	s->recovery[0] = CONF_RECOVERY_PROCESS;
	s->recovery[1] = CONF_RECOVERY_JOB;
	s->recovery_count = 2;
	j = run(a, s);
	s0 = j->slices[0].server;
	fx_report_npu(a, j->slices[1].server, j->slices[1].device_ids[0], CONF_HEALTH_CRITICAL,
		      adv(1));
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	spare = j->slices[1].server;
	assert_int_equal(sched_job_recovery_answer(a, "pl", FX_UID, 1, a->servers[s0].conf->name,
						   -1, SCHED_ANSWER_PAUSED, 12, NULL, adv(1), why),
			 0);
	save_all(a, &saved);
	b = fx_cluster(&o);
	load_all(b, &saved, adv(1));
	j = sched_cluster_find_job(b, "pl");
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->slices[0].server, s0);
	assert_int_equal(j->slices[0].kept_from, 1);
	assert_int_equal(j->slices[1].server, spare);
	assert_int_equal(j->slices[1].kept_from, 0);
	assert_non_null(j->ladder.joining);
	assert_true(j->ladder.joining[1]);
	assert_false(j->ladder.joining[0]);
	assert_int_equal(j->ladder.waited_count, 1);
	assert_int_equal(j->ladder.saved_step, 12);
	fx_check(b);
	assert_int_equal(sched_job_recovery_answer(b, "pl", FX_UID, 1, b->servers[spare].conf->name,
						   -1, SCHED_ANSWER_JOINED, 0, NULL, adv(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->ladder.resume_step, 12);
	assert_int_equal(b->ladder_active, 0);
	fx_check(b);
	saved_free(&saved);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * A daemon restart during a retry step (recovery: [retry, job]): the step waits on, and
 * the NPU's next Critical report (the restart forgot that it was being retried) is the
 * same fault, not a lasting one: the NPU stays in service and the answers resume it.
 */
static void test_state_restored_retry_step_waits_on(void **state)
{
	struct fx_opts o = { .servers = 3, .cluster_extra = "  recovery_timeout: 60\n"
							   "  retry_fault_codes: [80C98008]\n" };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *s = spec("rt", 16, NULL, 500, 0);
	struct conf_health_report r = { .npu_count = 1 };
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *j;
	struct saved saved;
	unsigned s0, s1;
	uint64_t t = adv(1);

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		fx_report_ok(a, i, t);
	s->recovery[0] = CONF_RECOVERY_RETRY;
	s->recovery[1] = CONF_RECOVERY_JOB;
	s->recovery_count = 2;
	j = run(a, s);
	s0 = j->slices[0].server;
	s1 = j->slices[1].server;
	r.npus[0].id = j->slices[1].device_ids[0];
	r.npus[0].has_level = true;
	r.npus[0].level = CONF_HEALTH_CRITICAL;
	snprintf(r.npus[0].code, sizeof(r.npus[0].code), "80C98008");
	assert_int_equal(sched_server_report(a, s1, &r, adv(1)), 0);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_RETRY);
	save_all(a, &saved);
	b = fx_cluster(&o);
	load_all(b, &saved, adv(1));
	j = sched_cluster_find_job(b, "rt");
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_RETRY);
	assert_int_equal(sched_server_report(b, s1, &r, adv(1)), 0);
	assert_false(b->servers[s1].npus[r.npus[0].id].isolated);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	for (unsigned k = 0; k < 2; k++)
		assert_int_equal(sched_job_recovery_answer(b, "rt", FX_UID, 1,
							   b->servers[k ? s1 : s0].conf->name, -1,
							   SCHED_ANSWER_PAUSED, 9, NULL, adv(1), why),
				 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 1);
	fx_check(b);
	saved_free(&saved);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/* The restarted process joined before the survivor paused: restored, the join is not
 * counted among the pauses (the outcome's count and a timeout's "N of M" use them). */
static void test_state_restored_in_place_join_is_not_a_pause(void **state)
{
	struct fx_opts o = { .servers = 3, .cluster_extra = "  recovery_timeout: 60\n" };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *s = spec("ip", 16, NULL, 500, 0);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *j;
	struct saved saved;
	unsigned s0, s1;
	uint64_t t = adv(1);

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		fx_report_ok(a, i, t);
	s->recovery[0] = CONF_RECOVERY_IN_PLACE;
	s->recovery[1] = CONF_RECOVERY_JOB;
	s->recovery_count = 2;
	j = run(a, s);
	s0 = j->slices[0].server;
	s1 = j->slices[1].server;
	assert_int_equal(sched_job_process_exit(a, "ip", FX_UID, 1, a->servers[s1].conf->name, -1,
						3, adv(1), why),
			 0);
	assert_int_equal(sched_job_recovery_answer(a, "ip", FX_UID, 1, a->servers[s1].conf->name,
						   -1, SCHED_ANSWER_JOINED, 0, NULL, adv(1), why),
			 0);
	save_all(a, &saved);
	b = fx_cluster(&o);
	load_all(b, &saved, adv(1));
	j = sched_cluster_find_job(b, "ip");
	assert_true(j->ladder.joined);
	assert_int_equal(j->ladder.answered_count, 0);
	assert_int_equal(j->ladder.waited_count, 1);
	assert_int_equal(sched_job_recovery_answer(b, "ip", FX_UID, 1, b->servers[s0].conf->name,
						   -1, SCHED_ANSWER_PAUSED, 5, NULL, adv(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_non_null(strstr(j->ladder.outcome, "1 survivor goes on from step 5"));
	fx_check(b);
	saved_free(&saved);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * Two jobs wait on dumps; the restore drops the server one of them held (it requeues):
 * the other's step is still counted, and times out (review: the counter drifted to 0
 * and the step waited forever).
 */
static void test_state_restored_dump_steps_stay_counted(void **state)
{
	struct fx_opts o4 = { .servers = 4, .cluster_extra = "  recovery_timeout: 5\n" };
	struct fx_opts o3 = { .servers = 3, .cluster_extra = "  recovery_timeout: 5\n" };
	struct sched_cluster *a = fx_cluster(&o4), *b = fx_cluster(&o3);
	struct sched_job *ja, *jb;
	char *text[2], why[SCHED_REASON_MAX] = "", *meta;
	const char *names[2] = { "ja", "jb" };
	size_t len;
	uint64_t now = adv(1);

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		fx_report_ok(a, i, now);
	for (int i = 0; i < 2; i++) {
		struct conf_job_spec *s = spec(names[i], 16, NULL, 500, 0);

		s->checkpoint_dir = strdup("/data/ckpt");
		assert_non_null(s->checkpoint_dir);
		s->recovery[0] = CONF_RECOVERY_DUMP;
		s->recovery[1] = CONF_RECOVERY_JOB;
		s->recovery_count = 2;
		run(a, s);
	}
	ja = sched_cluster_find_job(a, "ja");
	jb = sched_cluster_find_job(a, "jb");
	if (ja->slices[0].server == 3 || ja->slices[1].server == 3) {
		struct sched_job *t = ja;

		ja = jb;
		jb = t;
	}
	assert_true(jb->slices[0].server == 3 || jb->slices[1].server == 3);
	fx_report_npu(a, ja->slices[0].server, ja->slices[0].device_ids[0], CONF_HEALTH_CRITICAL,
		      adv(1));
	fx_report_npu(a, jb->slices[0].server, jb->slices[0].device_ids[0], CONF_HEALTH_CRITICAL,
		      adv(1));
	assert_int_equal(a->ladder_active, 2);
	assert_int_equal(sched_meta_save(a, &meta, &len), 0);
	assert_int_equal(sched_job_save(a, ja, &text[0], &len), 0);
	assert_int_equal(sched_job_save(a, jb, &text[1], &len), 0);
	now = adv(1);
	assert_int_equal(sched_meta_load(b, meta, strlen(meta), why), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(sched_job_load(b, text[i], strlen(text[i]), now, why), 0);
	assert_int_equal(sched_restore_finish(b, now, why), 0);
	ja = sched_cluster_find_job(b, ja->name);
	assert_int_equal(ja->state, SCHED_JOB_RECOVERING);
	assert_int_equal(b->ladder_active, 1);
	fx_check(b);
	sched_tick(b, adv(6));
	assert_int_not_equal(ja->state, SCHED_JOB_RECOVERING);
	assert_int_equal(b->ladder_active, 0);
	fx_check(b);
	free(meta);
	free(text[0]);
	free(text[1]);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

static void test_state_restored_scan_wait_is_listed(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&o), *b;
	struct conf_job_spec *s = spec("w", 8, NULL, 500, 0);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j;
	struct saved saved;

	(void)state;
	a->scan_resume_at_start = true;
	s->checkpoint_dir = strdup("/data/ckpt");
	assert_non_null(s->checkpoint_dir);
	j = run(a, s);
	assert_int_equal(sched_job_process_exit(a, "w", FX_UID, 1,
						a->servers[j->slices[0].server].conf->name, -1, 1,
						adv(1), reason), 0);
	assert_true(j->resume_scan_pending);
	save_all(a, &saved);
	b = fx_cluster(&o);
	b->scan_resume_at_start = true;
	load_all(b, &saved, adv(1));
	j = sched_cluster_find_job(b, "w");
	assert_true(j->resume_scan_pending);
	assert_int_equal(b->resume_wait_count, 1);
	assert_ptr_equal(b->resume_wait_head, j);
	fx_check(b);
	sched_tick(b, adv(SCHED_RESUME_SCAN_TIMEOUT_SEC));
	assert_false(j->resume_scan_pending);
	assert_int_equal(b->resume_wait_count, 0);
	fx_check(b);
	saved_free(&saved);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

static void test_state_round_trip_keeps_quota_and_isolation(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2, .quota = true, .queues = QUEUES };
	struct sched_cluster *a = busy_cluster(&o), *b = fx_cluster(&o);
	struct saved s;

	(void)state;
	save_all(a, &s);
	load_all(b, &s, clk);
	assert_int_equal(b->conf->queues[1].quota_npus, 24);
	assert_int_equal(b->servers[2].npus[7].isolation, SCHED_ISOLATION_MANUAL);
	assert_int_equal(b->servers[1].npus[5].isolation, SCHED_ISOLATION_ALARM);
	assert_true(b->servers[3].cordoned);
	/* a server that reported gets a fresh heartbeat timeout from the restore */
	assert_int_equal(b->servers[0].last_report_usec, clk);
	assert_int_equal(b->servers[4].last_report_usec, 0);
	/* and its agent keeps it for that long: a second agent of the name is refused */
	assert_string_equal(b->servers[0].agent, "host-a:0123");
	assert_string_equal(b->servers[1].agent, "");
	{
		char why[SCHED_REASON_MAX];
		uint64_t t = (uint64_t)b->conf->heartbeat_timeout_sec * 1000000u;

		assert_int_equal(sched_server_check_agent(b, 0, "host-b:4567", clk + 1, why,
							  sizeof(why)),
				 -EEXIST);
		assert_non_null(strstr(why, "agent host-a:0123 had it when the daemon restarted"));
		assert_int_equal(sched_server_check_agent(b, 0, "host-a:0123", clk + 1, why,
							  sizeof(why)),
				 0);
		assert_int_equal(sched_server_check_agent(b, 0, "host-b:4567", clk + t + 1, why,
							  sizeof(why)),
				 0);
	}
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * A restore that takes longer than heartbeat_timeout (100,000 records from etcd took 8 s):
 * no agent could report meanwhile, so the timeouts count from when the daemon begins to
 * serve (sched_heartbeats_grace()), not from the restore's start, which made every server
 * unreachable at once. A server heard since the restore keeps its own report's time.
 */
static void test_state_heartbeat_timeout_counts_from_serving(void **state)
{
	struct fx_opts o = { .servers = 3, .switches = 1 };
	struct sched_cluster *a = fx_cluster(&o), *b = fx_cluster(&o), *d = fx_cluster(&o);
	unsigned t = a->conf->heartbeat_timeout_sec;
	uint64_t restored, serving;
	struct saved s;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		report(a, i, "node OK\n", adv(1));
	save_all(a, &s);
	restored = adv(5);
	load_all(b, &s, restored);
	load_all(d, &s, restored);
	/* the restore read for longer than the timeout; server 2's agent got through */
	report(b, 2, "node OK\n", adv(t + 2));
	serving = adv(1);
	sched_heartbeats_grace(b, serving);
	/* without the grace every server is lost the moment the daemon serves */
	assert_int_equal(sched_check_heartbeats(d, serving), 3);
	assert_int_equal(sched_check_heartbeats(b, serving + (uint64_t)(t - 1) * SEC), 0);
	/* server 2 reported 1 s before serving began: its own time counts, not the grace */
	assert_int_equal(sched_check_heartbeats(b, serving + (uint64_t)t * SEC), 1);
	assert_int_equal(b->servers[2].state, SCHED_SERVER_UNREACHABLE);
	assert_int_equal(b->servers[0].state, SCHED_SERVER_READY);
	assert_int_equal(sched_check_heartbeats(b, serving + (uint64_t)t * SEC + 1), 2);
	assert_int_equal(b->servers[0].state, SCHED_SERVER_UNREACHABLE);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
	sched_cluster_free(d);
}

/* An agent that had gone silent (its server unreachable) holds no name after a restore. */
static void test_state_unreachable_server_keeps_no_agent(void **state)
{
	struct fx_opts o = { .servers = 2, .switches = 1 };
	struct sched_cluster *a = fx_cluster(&o), *b = fx_cluster(&o);
	unsigned t = a->conf->heartbeat_timeout_sec;
	char why[SCHED_REASON_MAX];
	struct saved s;

	(void)state;
	report(a, 0, "agent host-a:1\nnode OK\n", adv(1));
	report(a, 1, "agent host-b:1\nnode OK\n", clk);
	report(a, 1, "agent host-b:1\nnode OK\n", adv(t - 1));
	assert_int_equal(sched_check_heartbeats(a, adv(2)), 1);
	assert_int_equal(a->servers[0].state, SCHED_SERVER_UNREACHABLE);
	assert_int_equal(a->servers[1].state, SCHED_SERVER_READY);
	save_all(a, &s);
	load_all(b, &s, clk);
	assert_string_equal(b->servers[0].agent, "");
	assert_string_equal(b->servers[1].agent, "host-b:1");
	assert_int_equal(sched_server_check_agent(b, 0, "host-c:1", clk + 1, why, sizeof(why)), 0);
	assert_int_equal(sched_server_check_agent(b, 1, "host-c:1", clk + 1, why, sizeof(why)),
			 -EEXIST);
	/* once that agent reports after the restart, the message says when it did */
	report(b, 1, "agent host-b:1\nnode OK\n", adv(2));
	assert_int_equal(sched_server_check_agent(b, 1, "host-c:1", clk + SEC / 2, why,
						  sizeof(why)),
			 -EEXIST);
	assert_non_null(strstr(why, "agent host-b:1 did 0.5 s ago"));
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * The store saves a job or server only when its version moved. Random operations; after
 * each, any job or server whose version did not move must save to the same document,
 * and every dropped record must be listed in removed_serials.
 */
struct seen {
	uint64_t serial, version;
	char *doc;
};

static void audit(struct sched_cluster *c, struct seen *jobs, size_t *njobs, uint64_t *sv,
		  char **sdocs, const char *op)
{
	size_t len;

	for (size_t i = 0; i < *njobs; i++) {
		bool present = false, listed = false;

		for (size_t k = 0; k < c->job_count; k++)
			present |= c->jobs[k]->serial == jobs[i].serial;
		for (size_t k = 0; k < c->removed_count; k++)
			listed |= c->removed_serials[k] == jobs[i].serial;
		if (!present && !listed)
			fail_msg("after %s: job serial %llu vanished without being listed", op,
				 (unsigned long long)jobs[i].serial);
		if (!present) {
			free(jobs[i].doc);
			jobs[i--] = jobs[--*njobs];
		}
	}
	c->removed_count = 0;
	for (size_t k = 0; k < c->job_count; k++) {
		const struct sched_job *j = c->jobs[k];
		char *doc;
		size_t i;

		assert_int_equal(sched_job_save(c, j, &doc, &len), 0);
		for (i = 0; i < *njobs && jobs[i].serial != j->serial; i++)
			;
		if (i == *njobs) {
			jobs[(*njobs)++] = (struct seen){ j->serial, j->version, doc };
			continue;
		}
		if (jobs[i].version == j->version && strcmp(jobs[i].doc, doc) != 0) {
			size_t at = 0;

			while (jobs[i].doc[at] == doc[at])
				at++;
			at = at > 40 ? at - 40 : 0;
			fail_msg("after %s: job %s changed without a version bump:\n...%.100s\n"
				 "...%.100s", op, j->name, jobs[i].doc + at, doc + at);
		}
		free(jobs[i].doc);
		jobs[i].doc = doc;
		jobs[i].version = j->version;
	}
	for (unsigned i = 0; i < c->server_count; i++) {
		char *doc;

		assert_int_equal(sched_server_save(c, i, &doc, &len), 0);
		if (sdocs[i] && sv[i] == c->servers[i].version && strcmp(sdocs[i], doc) != 0)
			fail_msg("after %s: server %u changed without a version bump:\n%s\n%s", op,
				 i, sdocs[i], doc);
		free(sdocs[i]);
		sdocs[i] = doc;
		sv[i] = c->servers[i].version;
	}
}

static void test_state_versions_cover_every_change(void **state)
{
	struct fx_opts o = { .servers = 4, .quota = true, .queues = QUEUES, .grace_sec = 5 };
	struct sched_cluster *c = fx_cluster(&o);
	struct seen jobs[4096];
	size_t njobs = 0;
	uint64_t sv[4] = { 0 };
	char *sdocs[4] = { 0 };
	unsigned seed = 12345;
	char name[32], op[96], why[SCHED_REASON_MAX];

	(void)state;
	c->track_removals = true;
	for (int step = 0; step < 3000; step++) {
		unsigned r = (seed = seed * 1103515245u + 12345u) >> 8;
		unsigned pick = r % 13, n = (r >> 4) % 24;
		struct conf_job_spec *sp;
		struct sched_job *j;

		snprintf(name, sizeof(name), "j%u", n);
		j = sched_cluster_find_job(c, name);
		switch (pick) {
		case 0:
		case 1: {
			static const unsigned sizes[] = { 1, 2, 4, 8, 16 };

			sp = spec(name, sizes[(r >> 9) % 5], (r >> 12) & 1 ? "batch" : NULL,
				  (r >> 13) & 1 ? 900 : 100, (r >> 14) & 1 ? 30 : 0);
			snprintf(op, sizeof(op), "submit %s", name);
			sched_job_submit(c, sp, FX_UID, FX_GID, adv(1), why, NULL);
			break;
		}
		case 2:
			snprintf(op, sizeof(op), "cancel %s", name);
			fx_cancel(c, name, FX_UID, adv(1));
			break;
		case 3:
			snprintf(op, sizeof(op), "complete %s", name);
			fx_complete(c, name, FX_UID, adv(1));
			break;
		case 4:
			snprintf(op, sizeof(op), "checkpoint %s", name);
			sched_job_checkpoint(c, name, FX_UID, r % 1000, "/ckpt/x-1_1.ckpt", adv(1));
			break;
		case 5:
			snprintf(op, sizeof(op), "fault on node-%u", n % 4);
			report(c, n % 4, (r >> 10) & 1 ? "npu 1 Critical 0x1 ecc\n" : "npu 1 OK\n",
			       adv(1));
			break;
		case 6:
			snprintf(op, sizeof(op), "tick");
			sched_tick(c, adv((r >> 10) % 40));
			break;
		case 7:
			snprintf(op, sizeof(op), "heartbeats");
			sched_check_heartbeats(c, adv((r >> 10) % 40));
			break;
		case 8:
			snprintf(op, sizeof(op), "cordon/drain node-%u", n % 4);
			sched_server_set_cordon(c, fx_server_name(c, n % 4), (r >> 10) % 3 != 0,
						(r >> 10) % 3 == 2, adv(1));
			break;
		case 9:
			snprintf(op, sizeof(op), "clear node-%u npu 1", n % 4);
			sched_server_clear_npu(c, fx_server_name(c, n % 4), 1, adv(1));
			break;
		case 10:
			snprintf(op, sizeof(op), "exit of %s", name);
			if (j && j->slice_count)
				sched_job_process_exit(c, name, 0, j->generation,
						       fx_server_name(c, j->slices[0].server), -1,
						       (r >> 10) & 1, adv(1), why);
			break;
		case 11:
			snprintf(op, sizeof(op), "remove %s", name);
			fx_remove(c, name, FX_UID, adv(1));
			break;
		default:
			snprintf(op, sizeof(op), "quota");
			sched_queue_set_quota(c, "batch", (r >> 10) % 32, adv(1));
			break;
		}
		fx_check(c);
		assert_true(njobs < 4000);
		audit(c, jobs, &njobs, sv, sdocs, op);
	}
	for (size_t i = 0; i < njobs; i++)
		free(jobs[i].doc);
	for (int i = 0; i < 4; i++)
		free(sdocs[i]);
	sched_cluster_free(c);
}

/* Bad documents are refused with a sentence, and change nothing. */
static void test_state_load_refuses_bad_documents(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&o), *b = fx_cluster(&o);
	char *doc, why[SCHED_REASON_MAX];
	size_t len;
	static const char *const bad_jobs[] = {
		"",
		"{",
		"[]",
		"{\"format\": 2}",
		"{\"format\": 1, \"name\": \"x\"}",
		"{\"format\": 1, \"name\": \"x\", \"name\": \"y\"}",
	};

	(void)state;
	run(a, spec("one", 8, NULL, 500, 0));
	assert_int_equal(sched_job_save(a, a->jobs[0], &doc, &len), 0);
	for (size_t i = 0; i < sizeof(bad_jobs) / sizeof(bad_jobs[0]); i++) {
		why[0] = '\0';
		assert_int_equal(sched_job_load(b, bad_jobs[i], strlen(bad_jobs[i]), clk, why),
				 -EINVAL);
		assert_true(why[0] != '\0');
		assert_int_equal(b->job_count, 0);
	}
	/* every truncation of a good document is refused (or, whole, accepted) */
	for (size_t cut = 0; cut < len; cut++) {
		assert_int_equal(sched_job_load(b, doc, cut, clk, why), -EINVAL);
		assert_int_equal(b->job_count, 0);
		assert_int_equal(b->npus_allocated, 0);
	}
	/* a field of the wrong type or out of range */
	{
		static const char *const swaps[][2] = {
			{ "\"state\":\"running\"", "\"state\":\"sleeping\"" },
			{ "\"generation\":1", "\"generation\":-1" },
			{ "\"devices\":[0,1,2,3,4,5,6,7]", "\"devices\":[0,1,2,3,4,5,6,99]" },
			{ "\"devices\":[0,1,2,3,4,5,6,7]", "\"devices\":[0,0,2,3,4,5,6,7]" },
			{ "\"first_rank\":0", "\"first_rank\":3" },
			{ "\"uid\":1000", "\"uid\":\"root\"" },
		};

		for (size_t i = 0; i < sizeof(swaps) / sizeof(swaps[0]); i++) {
			char *p = strstr(doc, swaps[i][0]), *bad;

			if (!p)
				fail_msg("fixture: %s not in %s", swaps[i][0], doc);
			assert_true(asprintf(&bad, "%.*s%s%s", (int)(p - doc), doc, swaps[i][1],
					     p + strlen(swaps[i][0])) > 0);
			assert_int_equal(sched_job_load(b, bad, strlen(bad), clk, why), -EINVAL);
			assert_int_equal(b->job_count, 0);
			assert_int_equal(b->npus_allocated, 0);
			free(bad);
		}
	}
	/* the good one loads; a second record of the same name does not */
	assert_int_equal(sched_job_load(b, doc, len, clk, why), 0);
	assert_int_equal(b->npus_allocated, 8);
	assert_int_equal(sched_job_load(b, doc, len, clk, why), -EINVAL);
	assert_int_equal(b->job_count, 1);
	assert_int_equal(b->npus_allocated, 8);
	assert_int_equal(sched_server_load(b, "{\"format\":1}", 12, clk, why), -EINVAL);
	/* an agent that is not a string, or longer than any agent id, is malformed */
	{
		char *sdoc, *bad;
		size_t slen;

		assert_int_equal(sched_server_save(a, 0, &sdoc, &slen), 0);
		assert_non_null(strstr(sdoc, "\"agent\":\"\""));
		for (int k = 0; k < 2; k++) {
			char *p = strstr(sdoc, "\"agent\":\"\"");

			assert_true(asprintf(&bad, "%.*s\"agent\":%s%s", (int)(p - sdoc), sdoc,
					     k ? "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
						 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
						 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
						 "xxxxxxxxxxxxxxxxxxxx\"" :
						 "7",
					     p + strlen("\"agent\":\"\"")) > 0);
			assert_int_equal(sched_server_load(b, bad, strlen(bad), clk, why), -EINVAL);
			free(bad);
		}
		/* a record from before agents were kept loads, with none */
		{
			char *p = strstr(sdoc, ",\"agent\":\"\"");

			assert_non_null(p);
			assert_true(asprintf(&bad, "%.*s%s", (int)(p - sdoc), sdoc,
					     p + strlen(",\"agent\":\"\"")) > 0);
			assert_int_equal(sched_server_load(b, bad, strlen(bad), clk, why), 0);
			assert_string_equal(b->servers[0].agent, "");
			free(bad);
		}
		free(sdoc);
	}
	assert_int_equal(sched_meta_load(b, "{\"format\":1}", 12, why), -EINVAL);
	assert_int_equal(sched_event_load(b, 5, clk, "no-such-kind", NULL, NULL, -1, NULL, "",
					  NULL),
			 -EINVAL);
	fx_check(b);
	free(doc);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * The inventory shrank between save and restore: a running job on a server that is gone
 * waits again (requeued, the event says why) and resumes later; one that can never fit
 * the smaller cluster fails; a finished job is kept as it was.
 */
static void test_state_inventory_changed(void **state)
{
	struct fx_opts big = { .servers = 5 }, small = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&big), *b = fx_cluster(&small);
	char why[SCHED_REASON_MAX];
	struct sched_job *j;
	struct saved s;

	(void)state;
	run_on(a, spec("on-three", 8, NULL, 500, 0), 3);
	run(a, spec("huge", 24, NULL, 500, 0));
	run(a, spec("fin", 1, NULL, 500, 0));
	assert_int_equal(fx_complete(a, "fin", FX_UID, adv(1)), 0);
	save_all(a, &s);
	for (size_t i = 0; i < s.event_count; i++)
		assert_int_equal(sched_event_load(b, s.events[i].seq, s.events[i].time_usec,
						  sched_event_kind_name(s.events[i].kind),
						  s.events[i].job, s.events[i].server,
						  s.events[i].npu, s.events[i].state,
						  s.events[i].reason, s.events[i].line),
				 0);
	assert_int_equal(sched_meta_load(b, s.meta, strlen(s.meta), why), 0);
	assert_int_equal(sched_server_load(b, s.servers[3], strlen(s.servers[3]), clk, why),
			 -ENOENT);
	assert_non_null(strstr(why, "node-3"));
	for (size_t i = 0; i < s.job_count; i++)
		if (sched_job_load(b, s.jobs[i], strlen(s.jobs[i]), clk, why) != 0)
			fail_msg("%s", why);
	assert_int_equal(sched_restore_finish(b, clk, why), 0);
	j = sched_cluster_find_job(b, "on-three");
	assert_non_null(j);
	/* requeued, then placed again by the pass on the servers that are left */
	assert_true(has_event(b, SCHED_EV_REQUEUED, "on-three", "node-3"));
	expect_state(j, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2); /* a new generation, from its checkpoint */
	expect_state(sched_cluster_find_job(b, "huge"), SCHED_JOB_FAILED);
	assert_true(has_event(b, SCHED_EV_FAILED, "huge", NULL));
	expect_state(sched_cluster_find_job(b, "fin"), SCHED_JOB_COMPLETED);
	/* the sequence goes on after the saved events, without a gap */
	assert_true(b->next_event_seq > s.events[s.event_count - 1].seq);
	fx_check(b);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}


/*
 * stophold: a job stopping to an end survives a restart holding its NPUs, still
 * cancelled-to-be (not requeued), and ends when an agent reports its processes gone;
 * one whose server left the inventory ends cancelled, never pending again.
 */
static void test_state_stopping_cancel_survives_restart(void **state)
{
	struct fx_opts big = { .servers = 5 }, small = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&big), *b = fx_cluster(&big), *d = fx_cluster(&small);
	struct sched_job *j;
	struct saved s;
	char why[SCHED_REASON_MAX];

	(void)state;
	report(a, 0, "node OK\n", adv(1)); /* agents run on node-0 and node-3 */
	report(a, 3, "node OK\n", adv(1));
	run_on(a, spec("held", 8, NULL, 500, 0), 0);
	run_on(a, spec("on-three", 8, NULL, 500, 0), 3);
	assert_int_equal(sched_job_cancel(a, "held", FX_UID, adv(1)), 0);
	assert_int_equal(sched_job_remove(a, "on-three", FX_UID, adv(1)), 0);
	save_all(a, &s);
	load_all(b, &s, clk);
	j = sched_cluster_find_job(b, "held");
	expect_state(j, SCHED_JOB_STOPPING);
	assert_int_equal(j->stop_to, SCHED_JOB_CANCELLED);
	assert_int_equal(sched_job_total_npus(j), 8);
	assert_true(sched_cluster_find_job(b, "on-three")->stop_forget);
	report(b, 0, "node OK\nrunning -\n", adv(1));
	expect_state(j, SCHED_JOB_CANCELLED);
	report(b, 3, "node OK\nrunning -\n", adv(1));
	assert_null(sched_cluster_find_job(b, "on-three"));
	fx_check(b);
	/* node-3 is gone from the inventory: on-three ends cancelled there */
	for (size_t i = 0; i < s.event_count; i++)
		assert_int_equal(sched_event_load(d, s.events[i].seq, s.events[i].time_usec,
						  sched_event_kind_name(s.events[i].kind),
						  s.events[i].job, s.events[i].server,
						  s.events[i].npu, s.events[i].state,
						  s.events[i].reason, s.events[i].line),
				 0);
	assert_int_equal(sched_meta_load(d, s.meta, strlen(s.meta), why), 0);
	for (size_t i = 0; i < s.job_count; i++)
		if (sched_job_load(d, s.jobs[i], strlen(s.jobs[i]), clk, why) != 0)
			fail_msg("%s", why);
	assert_int_equal(sched_restore_finish(d, clk, why), 0);
	expect_state(sched_cluster_find_job(d, "on-three"), SCHED_JOB_CANCELLED);
	expect_state(sched_cluster_find_job(d, "held"), SCHED_JOB_STOPPING);
	fx_check(d);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
	sched_cluster_free(d);
}
/*
 * A quota set at run time survives a restart, unless the configuration file changed that
 * queue's quota since: then the file wins and the load says so.
 */
static void test_state_quota_file_wins_when_changed(void **state)
{
	static const char *const q16 = "  - name: default\n  - name: batch\n    quota_npus: 16\n";
	static const char *const q32 = "  - name: default\n  - name: batch\n    quota_npus: 32\n";
	struct fx_opts o16 = { .servers = 6, .quota = true, .queues = q16 };
	struct fx_opts o32 = { .servers = 6, .quota = true, .queues = q32 };
	struct sched_cluster *a = fx_cluster(&o16), *b = fx_cluster(&o16), *c = fx_cluster(&o32);
	char why[SCHED_REASON_MAX], *meta;
	size_t len;

	(void)state;
	assert_int_equal(sched_queue_set_quota(a, "batch", 24, adv(1)), 0);
	assert_int_equal(sched_meta_save(a, &meta, &len), 0);
	assert_int_equal(sched_meta_load(b, meta, len, why), 0);
	assert_int_equal(b->conf->queues[1].quota_npus, 24);
	assert_string_equal(why, "");
	assert_int_equal(sched_meta_load(c, meta, len, why), 0);
	assert_int_equal(c->conf->queues[1].quota_npus, 32);
	assert_non_null(strstr(why, "dropped"));
	free(meta);
	sched_cluster_free(a);
	sched_cluster_free(b);
	sched_cluster_free(c);
}

/*
 * The servers changed type between save and restore (Atlas 800T A2 -> Atlas 800, rings of
 * four): a 2-NPU placement across two rings breaks the 910's rules and is requeued, then
 * placed again by them; a 3-NPU job can never run there and fails; an 8-NPU whole server
 * is still legal and keeps its NPUs.
 */
static void test_state_type_change_requeues_illegal_placement(void **state)
{
	struct fx_opts a2 = { .servers = 2 }, a1 = { .type = "atlas800", .servers = 2 };
	struct sched_cluster *a = fx_cluster(&a2), *b = fx_cluster(&a1);
	char why[SCHED_REASON_MAX], *doc[3];
	size_t len;
	struct sched_job *j;

	(void)state;
	run(a, spec("three", 3, NULL, 500, 0));
	run(a, spec("two", 2, NULL, 500, 0));
	run(a, spec("whole", 8, NULL, 500, 0));
	assert_int_equal(a->jobs[1]->slices[0].device_ids[0], 3); /* 3-4 on a mesh */
	for (int i = 0; i < 3; i++)
		assert_int_equal(sched_job_save(a, a->jobs[i], &doc[i], &len), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sched_job_load(b, doc[i], strlen(doc[i]), clk, why), 0);
	assert_int_equal(sched_restore_finish(b, clk, why), 0);
	/* 3 NPUs can never run on a 910: failed, saying why */
	expect_state(sched_cluster_find_job(b, "three"), SCHED_JOB_FAILED);
	assert_true(has_event(b, SCHED_EV_FAILED, "three", "rings of 4"));
	/* devices 3 and 4 straddle two rings: requeued, then placed inside one ring */
	assert_true(has_event(b, SCHED_EV_REQUEUED, "two", "HCCS"));
	j = sched_cluster_find_job(b, "two");
	expect_state(j, SCHED_JOB_RUNNING);
	assert_int_equal(j->slices[0].device_ids[0] / 4, j->slices[0].device_ids[1] / 4);
	assert_false(has_event(b, SCHED_EV_REQUEUED, "whole", NULL));
	j = sched_cluster_find_job(b, "whole");
	expect_state(j, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 1);
	fx_check(b);
	for (int i = 0; i < 3; i++)
		free(doc[i]);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/* After sched_event_forget_all() the next kept event may start anywhere; numbering goes on. */
static void test_state_event_history_restarts_after_a_bad_row(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	assert_int_equal(sched_event_load(c, 1, clk, "submitted", "x", NULL, -1, "pending", "", NULL),
			 0);
	assert_int_equal(sched_event_load(c, 2, clk, "no-such-kind", NULL, NULL, -1, NULL, "", NULL),
			 -EINVAL);
	sched_event_forget_all(c);
	c->next_event_seq = 3;
	assert_int_equal(sched_event_load(c, 3, clk, "placed", "x", NULL, -1, "running", "", NULL),
			 0);
	assert_int_equal(sched_event_next(c, 0)->seq, 3);
	assert_null(sched_event_next(c, 3));
	sched_cluster_free(c);
}


/*
 * A job's history goes through its state document: every generation (a fault moved
 * "big"), the first start, and a malformed history refuses the record; a record
 * written before histories existed loads with its current generation's record.
 */
static void test_state_history_round_trip(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2, .quota = true, .queues = QUEUES };
	struct sched_cluster *a, *b;
	struct sched_job *big, *big_b;
	char *doc = NULL, *bad, *at, why[SCHED_REASON_MAX];
	size_t len;
	struct saved s;

	(void)state;
	a = busy_cluster(&o);
	big = sched_cluster_find_job(a, "big");
	assert_non_null(big);
	assert_int_equal(big->run_count, 2);
	assert_int_equal(big->runs[0].end, SCHED_RUN_NODE_FAIL);
	assert_true(big->runs[0].end_usec > 0);
	assert_int_equal(big->runs[1].end, SCHED_RUN_OPEN);
	assert_true(big->first_start_usec < big->generation_usec);
	save_all(a, &s);
	b = fx_cluster(&o);
	load_all(b, &s, clk);
	big_b = sched_cluster_find_job(b, "big");
	assert_int_equal(big_b->run_count, 2);
	assert_int_equal(big_b->first_start_usec, big->first_start_usec);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(big_b->runs[i].generation, big->runs[i].generation);
		assert_int_equal(big_b->runs[i].start_usec, big->runs[i].start_usec);
		assert_int_equal(big_b->runs[i].end_usec, big->runs[i].end_usec);
		assert_int_equal(big_b->runs[i].slice_count, big->runs[i].slice_count);
		assert_string_equal(big_b->runs[i].slices[0].server, big->runs[i].slices[0].server);
		assert_memory_equal(big_b->runs[i].slices[0].device_ids,
				    big->runs[i].slices[0].device_ids,
				    sizeof(big->runs[i].slices[0].device_ids));
	}
	assert_string_equal(big_b->runs[0].reason, big->runs[0].reason);
	sched_cluster_free(b);

	/* a malformed history refuses the whole record */
	assert_int_equal(sched_job_save(a, big, &doc, &len), 0);
	at = strstr(doc, "\"history\":[");
	assert_non_null(at);
	bad = malloc(len + 8);
	assert_non_null(bad);
	snprintf(bad, len + 8, "%.*s\"history\":[7,%s", (int)(at - doc), doc,
		 at + strlen("\"history\":["));
	b = fx_cluster(&o);
	assert_int_equal(sched_job_load(b, bad, strlen(bad), clk, why), -EINVAL);
	assert_null(sched_cluster_find_job(b, "big"));
	sched_cluster_free(b);
	free(bad);
	/* an older record without history or first start: its generation gets a record */
	{
		json_t *o2 = json_loads(doc, 0, NULL);
		char *old;

		assert_non_null(o2);
		json_object_del(o2, "history");
		json_object_del(o2, "first_start_usec");
		json_object_del(o2, "runs_dropped");
		old = json_dumps(o2, JSON_COMPACT);
		json_decref(o2);
		b = fx_cluster(&o);
		assert_int_equal(sched_job_load(b, old, strlen(old), clk, why), 0);
		big_b = sched_cluster_find_job(b, "big");
		assert_non_null(big_b);
		assert_int_equal(big_b->first_start_usec, big->start_usec);
		assert_int_equal(big_b->run_count, 1);
		assert_int_equal(big_b->runs[0].generation, big->generation);
		assert_int_equal(big_b->runs[0].end, SCHED_RUN_OPEN);
		free(old);
		sched_cluster_free(b);
	}
	free(doc);
	saved_free(&s);
	sched_cluster_free(a);
}

/*
 * As a store keeps them (issue 16): every closed history record of every job saved
 * apart, once, and marked saved; their documents into @s (appended).
 */
static void save_closed_runs(struct sched_cluster *c, struct saved *s)
{
	size_t len;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		for (size_t k = 0; k < j->run_count; k++) {
			if (!j->runs[k].end_usec || j->runs[k].saved)
				continue;
			s->runs = realloc(s->runs, (s->run_count + 1) * sizeof(char *));
			s->run_jobs = realloc(s->run_jobs, (s->run_count + 1) * sizeof(char *));
			assert_non_null(s->runs);
			assert_non_null(s->run_jobs);
			assert_int_equal(sched_job_run_save(j, k, &s->runs[s->run_count], &len), 0);
			assert_int_equal(strlen(s->runs[s->run_count]), len);
			s->run_jobs[s->run_count++] = strdup(j->name);
			j->runs[k].saved = true;
		}
	}
}

/* A job's record, as a store would write it now. */
static size_t record_len(const struct sched_cluster *c, const struct sched_job *j)
{
	char *doc;
	size_t len;

	assert_int_equal(sched_job_save(c, j, &doc, &len), 0);
	free(doc);
	return len;
}

/*
 * Closed history records saved apart (issue 16: each fault of a 512-NPU job rewrote up
 * to 32 generations of placement in its record): the record then holds only the open
 * one and does not grow with the generations; the records load back in their places, so
 * the history file is the same, the dropped ones stay dropped and the numbering goes on;
 * a record malformed, not closed, without its number or out of order is refused and
 * changes nothing.
 */
static void test_state_history_records_saved_apart(void **state)
{
	/* two servers more than busy_cluster() fills */
	struct fx_opts o = { .servers = 8, .switches = 2, .quota = true, .queues = QUEUES };
	struct sched_cluster *a = busy_cluster(&o), *b;
	struct conf_job_spec *sp = spec("hist", 8, NULL, 900, 0);
	size_t hist_runs = 0;
	char why[SCHED_REASON_MAX], *doc, *open_doc;
	struct sched_job *j, *jb;
	size_t len, one_run = 0, all_inline;
	struct saved s = { 0 };
	int r;

	(void)state;
	sp->max_restarts = 1000;
	j = run(a, sp);
	for (unsigned g = 1; g <= 40; g++) {
		unsigned gen = j->generation;
		const char *server = a->servers[j->slices[0].server].conf->name;

		r = sched_job_process_exit(a, "hist", FX_UID, gen, server, -1, 1, adv(1), why);
		if (r != 0)
			fail_msg("exit %u: %d %s", g, r, why);
		sched_tick(a, adv(1));
		if (j->state != SCHED_JOB_RUNNING || j->generation != gen + 1)
			fail_msg("after exit %u: %s generation %u: %s", g,
				 sched_job_state_name(j->state), j->generation, j->reason);
		if (g == 1)
			one_run = record_len(a, j);
	}
	/* the first and the newest 31 of 41 generations, numbered 0 and 10 to 40 */
	assert_int_equal(j->run_count, SCHED_JOB_RUNS_MAX);
	assert_int_equal(j->runs_dropped, 41 - SCHED_JOB_RUNS_MAX);
	assert_int_equal(j->runs[0].number, 0);
	assert_int_equal(j->runs[1].number, 10);
	assert_int_equal(j->runs[SCHED_JOB_RUNS_MAX - 1].number, 40);
	all_inline = record_len(a, j);
	assert_true(all_inline > 10 * one_run / 2);

	save_closed_runs(a, &s);
	for (size_t k = 0; k < s.run_count; k++)
		hist_runs += strcmp(s.run_jobs[k], "hist") == 0;
	assert_int_equal(hist_runs, SCHED_JOB_RUNS_MAX - 1);
	assert_true(s.run_count > hist_runs); /* "big" has a closed one too */
	/* the record now holds the open generation only: no bigger than after one exit,
	 * when it held two */
	assert_true(record_len(a, j) <= one_run);
	assert_int_equal(sched_job_save(a, j, &open_doc, &len), 0);
	assert_non_null(strstr(open_doc, "\"run\":40,"));
	assert_null(strstr(open_doc, "\"run\":39,"));
	{
		/* the open generation's placement is the job's: written once */
		json_t *rec = json_loads(open_doc, 0, NULL), *h;

		assert_non_null(rec);
		h = json_array_get(json_object_get(rec, "history"), 0);
		assert_non_null(h);
		assert_null(json_object_get(h, "placement"));
		assert_int_equal(json_array_size(json_object_get(rec, "placement")), 1);
		json_decref(rec);
	}
	/* a closed record's document says it all; an open one has none */
	assert_int_equal(sched_job_run_save(j, SCHED_JOB_RUNS_MAX - 1, &doc, &len), -EINVAL);

	{
		struct saved all;

		save_all(a, &all);
		all.runs = s.runs;
		all.run_jobs = s.run_jobs;
		all.run_count = s.run_count;
		s.runs = s.run_jobs = NULL;
		s.run_count = 0;
		b = fx_cluster(&o);
		load_all(b, &all, clk);
		expect_same_cluster(a, b, clk);
		jb = sched_cluster_find_job(b, "hist");
		assert_int_equal(jb->run_count, SCHED_JOB_RUNS_MAX);
		assert_int_equal(jb->runs_dropped, j->runs_dropped);
		for (size_t k = 0; k < SCHED_JOB_RUNS_MAX; k++) {
			assert_int_equal(jb->runs[k].number, j->runs[k].number);
			assert_int_equal(jb->runs[k].saved, k < SCHED_JOB_RUNS_MAX - 1);
		}
		/* the next generation goes on from 41 and drops number 10 */
		r = sched_job_process_exit(b, "hist", FX_UID, jb->generation,
					   b->servers[jb->slices[0].server].conf->name, -1, 1,
					   adv(1), why);
		assert_int_equal(r, 0);
		sched_tick(b, adv(1));
		assert_int_equal(jb->runs[SCHED_JOB_RUNS_MAX - 1].number, 41);
		assert_int_equal(jb->runs[1].number, 11);
		assert_int_equal(jb->runs_dropped, j->runs_dropped + 1);

		/* refusals, on the record alone: nothing changes */
		sched_cluster_free(b);
		b = fx_cluster(&o);
		assert_int_equal(sched_job_load(b, open_doc, strlen(open_doc), clk, why), 0);
		jb = sched_cluster_find_job(b, "hist");
		assert_int_equal(jb->run_count, 1);
		why[0] = '\0';
		assert_int_equal(sched_job_run_load(jb, "{\"run\": 3", 10, why), -EINVAL);
		assert_non_null(strstr(why, "not JSON"));
		doc = strdup(all.runs[all.run_count - 1]); /* hist's newest closed: 39 */
		assert_non_null(strstr(doc, "\"run\":39,"));
		/* without its number it has no place */
		memcpy(strstr(doc, "\"run\":39,"), "\"nur\"", 5);
		assert_int_equal(sched_job_run_load(jb, doc, strlen(doc), why), -EINVAL);
		free(doc);
		/* not closed */
		doc = strdup(all.runs[all.run_count - 1]);
		{
			char *end = strstr(doc, "\"end_usec\":");
			char *num = end + strlen("\"end_usec\":");

			assert_non_null(end);
			while (*num >= '0' && *num <= '9')
				*num++ = ' ';
			num[-1] = '0';
		}
		why[0] = '\0';
		assert_int_equal(sched_job_run_load(jb, doc, strlen(doc), why), -EINVAL);
		assert_non_null(strstr(why, "not closed"));
		free(doc);
		assert_int_equal(jb->run_count, 1);
		/* in order: 38, then 39; 38 again, or 37 after 39, is out of order */
		assert_int_equal(sched_job_run_load(jb, all.runs[all.run_count - 2],
						    strlen(all.runs[all.run_count - 2]), why), 0);
		assert_int_equal(sched_job_run_load(jb, all.runs[all.run_count - 1],
						    strlen(all.runs[all.run_count - 1]), why), 0);
		for (size_t k = 2; k <= 3; k++) {
			why[0] = '\0';
			assert_int_equal(sched_job_run_load(jb, all.runs[all.run_count - k],
							    strlen(all.runs[all.run_count - k]), why),
					 -EINVAL);
			assert_non_null(strstr(why, "out of order"));
		}
		assert_int_equal(jb->run_count, 3);
		assert_int_equal(jb->runs[0].number, 38);
		assert_int_equal(jb->runs[2].number, 40);
		sched_cluster_free(b);
		saved_free(&all);
	}
	free(open_doc);
	saved_free(&s);
	sched_cluster_free(a);
}

#ifdef TEST_CHAOS
/* A closed history record's document (two servers), as sched_job_run_save() writes it. */
static const char run_doc[] =
	"{\"run\":3,\"generation\":4,\"start_usec\":1000,\"end_usec\":2000,\"end\":\"node_fail\","
	"\"exit_code\":null,\"reason\":\"npu 3 of node-0 is Critical\",\"placement\":["
	"{\"server\":\"node-0\",\"first_rank\":0,\"devices\":[0,1,2,3,4,5,6,7]},"
	"{\"server\":\"node-1\",\"first_rank\":8,\"devices\":[0,1,2,3,4,5,6,7]}]}";

/* Load run_doc into a job of its own, save it again, free all: the first error. */
static int chaos_history_record(const void *arg)
{
	struct sched_job j;
	char why[SCHED_REASON_MAX], *doc = NULL;
	size_t len;
	int r;

	(void)arg;
	memset(&j, 0, sizeof(j));
	snprintf(j.name, sizeof(j.name), "chaos");
	r = sched_job_run_load(&j, run_doc, strlen(run_doc), why);
	if (r == 0) {
		assert_int_equal(j.run_count, 1);
		r = sched_job_run_save(&j, 0, &doc, &len);
		if (r == 0)
			assert_string_equal(doc, run_doc);
	} else {
		assert_int_equal(j.run_count, 0);
	}
	free(doc);
	for (size_t i = 0; i < j.run_count; i++) {
		free(j.runs[i].reason);
		free(j.runs[i].slices);
	}
	free(j.runs);
	return r;
}

/* What the chaos runs of a job record use: a cluster, a job of it, its record. */
struct chaos_record {
	const struct sched_cluster *c;
	const struct sched_job *j;
	const char *doc;
};

/* Save the job's record again: the same text, or the first error. */
static int chaos_job_save(const void *arg)
{
	const struct chaos_record *cr = arg;
	char *doc = NULL;
	size_t len;
	int r = sched_job_save(cr->c, cr->j, &doc, &len);

	if (r == 0)
		assert_string_equal(doc, cr->doc);
	free(doc);
	return r;
}

/* Decode the job's record (JSON and the spec's YAML): the first error. */
static int chaos_job_decode(const void *arg)
{
	const struct chaos_record *cr = arg;
	struct sched_job_decoded *d = NULL;
	char why[SCHED_REASON_MAX];
	int r = sched_job_decode(cr->doc, strlen(cr->doc), &d, why);

	sched_job_decoded_free(d);
	return r;
}

/* @fn with the Nth allocation failing, N = 0, 1, ... until a run sees none: each failing
 * run returns -ENOMEM and frees all it allocated. The number of sites. */
static long chaos_each(int (*fn)(const void *), const void *arg)
{
	long n;

	for (n = 0;; n++) {
		long live_before = chaos_live;
		int r;

		chaos_injected = false;
		chaos_countdown = n;
		r = fn(arg);
		chaos_countdown = -1;
		if (!chaos_injected) {
			assert_int_equal(r, 0);
			return n;
		}
		if (r != -ENOMEM)
			fail_msg("allocation %ld failed but the result was %d", n, r);
		if (chaos_live != live_before)
			fail_msg("allocation %ld failed and %ld allocations leaked", n,
				 chaos_live - live_before);
	}
}
#endif

/*
 * Every allocation of loading and saving records fails in turn (a history record, a job
 * record with its spec): -ENOMEM, never "malformed" nor a record other than the
 * document (jansson 2.14's lexer drops a character it cannot append, its json_pack() a
 * key), nothing loaded, nothing leaked (jansson's test_chaos.c).
 */
static void test_state_records_out_of_memory(void **state)
{
	(void)state;
#ifdef TEST_CHAOS
	struct fx_opts o = { .servers = 6, .switches = 2, .quota = true, .queues = QUEUES };
	struct sched_cluster *c;
	struct chaos_record cr;
	char *doc;
	size_t len;

	if (!chaos_hooks_work())
		return;
	assert_true(chaos_each(chaos_history_record, NULL) > 5);
	c = busy_cluster(&o);
	cr.c = c;
	cr.j = sched_cluster_find_job(c, "big"); /* a spec, a placement, two generations */
	assert_int_equal(sched_job_save(c, cr.j, &doc, &len), 0);
	cr.doc = doc;
	assert_true(chaos_each(chaos_job_save, &cr) > 5);
	assert_true(chaos_each(chaos_job_decode, &cr) > 5);
	free(doc);
	sched_cluster_free(c);
#else
	print_message("allocation failures cannot be injected here (sanitizers); not run\n");
#endif
}

/*
 * Job-count limits (issue 15 item 5) count what a restart restored: jobs loaded over a
 * limit lowered since all come back (a limit bounds new drafts and submissions, never
 * accepted ones), and the user's next submission is refused until enough have ended.
 */
static void test_state_job_limits_count_restored_jobs(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *a = fx_cluster(&o), *b = fx_cluster(&o);
	char reason[SCHED_REASON_MAX];
	struct saved s;

	(void)state;
	run(a, spec("j1", 8, NULL, 500, 0));
	submit(a, spec("j2", 8, NULL, 500, 0));
	submit(a, spec("j3", 8, NULL, 500, 0));
	assert_int_equal(sched_job_create_draft(a, "d", FX_UID, FX_GID, adv(1), NULL), 0);
	submit(a, spec("done", 8, NULL, 500, 0)); /* pending, then finished */
	assert_int_equal(fx_cancel(a, "done", FX_UID, adv(1)), 0);
	save_all(a, &s);
	b->conf->max_job_count_per_user = 2;
	load_all(b, &s, clk);
	assert_int_equal(b->job_count, 5);
	assert_int_equal(sched_job_submit(b, spec("j4", 8, NULL, 500, 0), FX_UID, FX_GID, adv(1),
					  reason, NULL),
			 -EAGAIN);
	if (!strstr(reason, "uid 1000 already has 4 drafts and active jobs"))
		fail_msg("reason: %s", reason);
	assert_int_equal(fx_cancel(b, "j2", FX_UID, adv(1)), 0);
	assert_int_equal(fx_cancel(b, "j3", FX_UID, adv(1)), 0);
	assert_int_equal(sched_job_submit(b, spec("j4", 8, NULL, 500, 0), FX_UID, FX_GID, adv(1),
					  reason, NULL),
			 -EAGAIN);
	assert_int_equal(fx_remove(b, "d", FX_UID, adv(1)), 0);
	assert_int_equal(sched_job_submit(b, spec("j4", 8, NULL, 500, 0), FX_UID, FX_GID, adv(1),
					  reason, NULL),
			 0);
	fx_check(b);
	saved_free(&s);
	sched_cluster_free(a);
	sched_cluster_free(b);
}

/*
 * Issue 15 item 11: the wall clock steps across a restart. The daemon passes the step it
 * measured (sched_restore_shift(): the clock moved more than the real downtime), and a
 * job's run time and a stop's deadline count the downtime, never the step. Without a
 * measured step (a store written before the clock mark), a stop still ends within one
 * stop's time of the restore, and no run began in the future.
 */
static void test_state_clock_step_across_restart(void **state)
{
	const uint64_t day = 86400ull * SEC, down = 5 * SEC;
	uint64_t overhead, saved_at;
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *a = fx_cluster(&o), *b, *d;
	struct sched_job *j;
	struct saved s;

	(void)state;
	report(a, 0, "node OK\n", adv(1)); /* agents run the jobs: a cancel stops */
	report(a, 1, "node OK\n", adv(1));
	run(a, spec("day", 8, NULL, 500, 86400)); /* time_limit: 1d */
	run(a, spec("held", 8, NULL, 500, 0));
	adv(1); /* "day" has run about a second */
	assert_int_equal(sched_job_cancel(a, "held", FX_UID, adv(0)), 0);
	expect_state(sched_cluster_find_job(a, "held"), SCHED_JOB_STOPPING);
	overhead = sched_cluster_find_job(a, "held")->stop_deadline_usec - clk;
	saved_at = clk;
	save_all(a, &s);

	/* +2 days: the daemon measured 5 s of downtime, so the step is 2 days - 5 s */
	b = fx_cluster(&o);
	clk = saved_at + 2 * day;
	sched_restore_shift(b, (int64_t)(2 * day - down));
	load_all(b, &s, clk);
	j = sched_cluster_find_job(b, "day");
	expect_state(j, SCHED_JOB_RUNNING);
	assert_true(sched_job_run_usec(j, clk) < 10 * SEC);
	assert_true(sched_job_run_usec(j, clk) >= down);
	sched_tick(b, adv(1));
	expect_state(j, SCHED_JOB_RUNNING);
	/* the stop's deadline is where it was in real time: 5 s of it went by */
	j = sched_cluster_find_job(b, "held");
	expect_state(j, SCHED_JOB_STOPPING);
	assert_int_equal(j->stop_deadline_usec, saved_at + overhead + 2 * day - down);
	fx_check(b);

	/* -1 day, 5 s down: the step is -1 day - 5 s; the stop ends by its real deadline */
	d = fx_cluster(&o);
	clk = saved_at - day;
	sched_restore_shift(d, -(int64_t)(day + down));
	load_all(d, &s, clk);
	j = sched_cluster_find_job(d, "held");
	expect_state(j, SCHED_JOB_STOPPING);
	assert_true(j->stop_deadline_usec <= clk - down + overhead);
	clk = clk - down + overhead;
	sched_tick(d, clk);
	expect_state(j, SCHED_JOB_CANCELLED);
	assert_int_equal(sched_job_total_npus(j), 0);
	j = sched_cluster_find_job(d, "day");
	expect_state(j, SCHED_JOB_RUNNING);
	assert_true(sched_job_run_usec(j, clk) <= overhead + 2 * SEC);
	fx_check(d);
	sched_cluster_free(b);
	sched_cluster_free(d);

	/* no measured step, -1 day: the stop ends one stop's time after the restore at
	 * the latest, and the run has not gone negative (it began no later than now) */
	b = fx_cluster(&o);
	clk = saved_at - day;
	load_all(b, &s, clk);
	j = sched_cluster_find_job(b, "held");
	assert_true(j->stop_deadline_usec <= clk + overhead);
	sched_tick(b, clk + overhead);
	expect_state(j, SCHED_JOB_CANCELLED);
	j = sched_cluster_find_job(b, "day");
	assert_true(j->run_since_usec <= clk);
	expect_state(j, SCHED_JOB_RUNNING);
	fx_check(b);
	sched_cluster_free(b);
	clk = saved_at + 3 * day; /* the file's clock only moves forward */
	saved_free(&s);
	sched_cluster_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_round_trip_same_files),
		cmocka_unit_test(test_state_hold_and_requeue_survive_restart),
		cmocka_unit_test(test_state_dependencies_survive_restart),
		cmocka_unit_test(test_state_dependencies_settled_after_load),
		cmocka_unit_test(test_state_format1_job_records_still_load),
		cmocka_unit_test(test_state_pending_record_leaves_out_defaults),
		cmocka_unit_test(test_state_new_pending_reasons_are_not_records_to_write),
		cmocka_unit_test(test_state_restored_scan_wait_is_listed),
		cmocka_unit_test(test_state_restored_dump_step_waits_on),
		cmocka_unit_test(test_state_restored_dump_steps_stay_counted),
		cmocka_unit_test(test_state_restored_in_place_step_waits_on),
		cmocka_unit_test(test_state_restored_process_step_waits_on),
		cmocka_unit_test(test_state_restored_retry_step_waits_on),
		cmocka_unit_test(test_state_restored_in_place_join_is_not_a_pause),
		cmocka_unit_test(test_state_history_round_trip),
		cmocka_unit_test(test_state_history_records_saved_apart),
		cmocka_unit_test(test_state_records_out_of_memory),
		cmocka_unit_test(test_state_round_trip_keeps_quota_and_isolation),
		cmocka_unit_test(test_state_heartbeat_timeout_counts_from_serving),
		cmocka_unit_test(test_state_unreachable_server_keeps_no_agent),
		cmocka_unit_test(test_state_versions_cover_every_change),
		cmocka_unit_test(test_state_load_refuses_bad_documents),
		cmocka_unit_test(test_state_inventory_changed),
		cmocka_unit_test(test_state_stopping_cancel_survives_restart),
		cmocka_unit_test(test_state_quota_file_wins_when_changed),
		cmocka_unit_test(test_state_type_change_requeues_illegal_placement),
		cmocka_unit_test(test_state_event_history_restarts_after_a_bad_row),
		cmocka_unit_test(test_state_job_limits_count_restored_jobs),
		cmocka_unit_test(test_state_clock_step_across_restart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
