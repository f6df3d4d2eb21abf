/* SPDX-License-Identifier: MIT */
/*
 * bench_sched: the scheduling pass under load (issue 4's measurements).
 *
 * Part A, pass time. A 1,024-server Atlas 800T A2 cluster (8,192 NPUs, 32 leaf switches
 * of 32, 4 queues with weights 4/2/1/1) is filled with running jobs of mixed sizes
 * (1-8 NPUs and 16-128 on whole servers, all with time limits), then 10,000 pending
 * jobs (--pending N) of mixed size, priority and time_limit are submitted (seeded PRNG).
 * Then PASSES times: the virtual clock moves one second (sched_tick), one running job
 * completes (sched_job_complete, which runs a pass itself), every SUBMIT_EVERY-th time one
 * more job is submitted, and one sched_schedule() is timed with clock_gettime(CLOCK_MONOTONIC).
 * Configuration under test: resource.backfill and resource.preemption on. Baseline in
 * the same run: the same workload with both off (strict priority FIFO).
 *
 * Part B, utilization. A discrete-event replay of the Philly trace (Jeon et al., ATC'19;
 * see the trace's README) with a virtual clock: one GPU is one NPU, jobs above 8 NPUs
 * take whole 8-NPU servers, each virtual cluster (VC) is a queue of weight 1, time_limit
 * is the run time rounded up to the hour, and a job completes at its start plus its
 * run time. It prints the allocated share of NPUs while jobs wait, queueing delay and
 * JCT, with EASY backfill and, as the baseline, with strict FIFO (backfill off).
 * Preemption is off in both. By default: the first 20,000 jobs by submit time on 64
 * servers (512 NPUs), where the work offered over the busy part of that window exceeds
 * what the cluster can run, so it saturates; 32 servers saturate too, but the backlog
 * then grows all along and the replay takes several times as long.
 *
 * Figures only: nothing here asserts anything about time (style.md). The exit status
 * is non-zero only for a real error: an API call that fails, or a breach found by
 * sched_check_invariants() at a checkpoint.
 *
 * Run: meson test -C build --benchmark -v sched
 *  or: bench_sched [--part a|b] [--philly PATH] [--philly-jobs N] [--philly-servers N]
 *                  [--pending N]  (part A's backlog; 100000 for the issue-16 row)
 * Profile only part A's timed steps of the configuration under test: BENCH_PERF_CTL names
 * the control FIFO of `perf record --control fifo:CTL -D -1`, told "enable" before them
 * and "disable" after (mkfifo CTL first).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ascend_sched.h"
#include "conf.h"

#define NPUS_PER_SERVER 8
#define OWNER_UID 1000u
#define OWNER_GID 1000u
#define T0_USEC 1700000000000000ull
#define USEC_PER_SEC 1000000ull

/* Part A */
#define A_SERVERS 1024
#define A_SWITCHES 32
#define A_PENDING 10000 /* default of --pending */
#define A_PASSES 200
#define A_SUBMIT_EVERY 4
#define A_CHECK_EVERY 50
#define A_SEED 0x5c4ed001u

/* Part B */
#define B_SERVERS 64
#define B_SWITCHES 4
#define B_JOBS 20000
#define B_CHECK_EVERY 20000 /* events between invariant checks */

/* ---- small helpers ---- */

static uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 2685821657736338717ull;
}

/* An index into @weights (@n entries, per cent or any scale) drawn by weight. */
static size_t rng_pick(uint64_t *state, const unsigned *weights, size_t n)
{
	unsigned total = 0, x, acc = 0;

	for (size_t i = 0; i < n; i++)
		total += weights[i];
	x = (unsigned)(rng_next(state) % total);
	for (size_t i = 0; i < n; i++) {
		acc += weights[i];
		if (x < acc)
			return i;
	}
	return n - 1;
}

static double mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double p50, p99, max, mean;
};

/* Sorts @t (@n > 0 entries). */
static struct stats stats_of(double *t, size_t n)
{
	struct stats s = { 0 };
	double sum = 0;

	qsort(t, n, sizeof(*t), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += t[i];
	s.p50 = t[n / 2];
	s.p99 = t[(size_t)((double)n * 0.99) < n ? (size_t)((double)n * 0.99) : n - 1];
	s.max = t[n - 1];
	s.mean = sum / (double)n;
	return s;
}

struct cluster_opts {
	unsigned servers, switches;
	bool backfill, preemption;
	const char *queues;	/* YAML items under `queues:`, or NULL */
};

/* A new cluster from generated YAML, the daemon's path (conf_cluster_parse). */
static int cluster_new(const struct cluster_opts *o, struct sched_cluster **ret)
{
	struct conf_cluster *conf = NULL;
	struct conf_error err;
	char *text = NULL, msg[1024];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f)
		return -ENOMEM;
	/* one uid submits the whole backlog: room for it under the record limits */
	fprintf(f, "cluster:\n  name: bench\n  scheduler_ip: 10.0.0.1\n"
		   "  max_job_count: 2000000\n  max_job_count_per_user: 2000000\n"
		   "resource:\n  total_npu: %u\n  allow_mix_task: true\n"
		   "  backfill: %s\n  preemption: %s\n",
		o->servers * NPUS_PER_SERVER, o->backfill ? "true" : "false",
		o->preemption ? "true" : "false");
	if (o->queues)
		fprintf(f, "queues:\n%s", o->queues);
	fprintf(f, "servers:\n");
	for (unsigned i = 0; i < o->servers; i++) {
		fprintf(f, "  - name: node-%04u\n    host_ip: 10.1.%u.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-%02u\n    device_ips: [",
			i, i / 250, i % 250 + 1, i / (o->servers / o->switches));
		for (unsigned d = 0; d < NPUS_PER_SERVER; d++)
			fprintf(f, "%s10.%u.%u.%u", d ? ", " : "", 16 + d, i / 250, i % 250 + 1);
		fprintf(f, "]\n");
	}
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	memset(&err, 0, sizeof(err));
	r = conf_cluster_parse(text, len, "bench.yaml", &conf, &err);
	free(text);
	if (r < 0) {
		fprintf(stderr, "bench_sched: cluster config refused: %s\n",
			conf_error_format(&err, msg, sizeof(msg)));
		return r;
	}
	return sched_cluster_new(conf, ret);
}

/* A new job spec (stolen by sched_job_submit), or NULL. */
static struct conf_job_spec *job_spec(const char *name, unsigned npus, const char *queue,
				      unsigned priority, uint64_t time_limit_sec)
{
	struct conf_job_spec *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->name = strdup(name);
	s->queue = strdup(queue);
	if (!s->name || !s->queue) {
		conf_job_spec_free(s);
		return NULL;
	}
	s->npus = s->npus_min = s->npus_max = npus;
	s->priority = priority;
	s->launch = CONF_LAUNCH_MSRUN;
	s->max_restarts = 3;
	s->time_limit_sec = time_limit_sec;
	return s;
}

/* Submit; any refusal is an error here (every request is legal on these clusters). */
static int submit(struct sched_cluster *c, const char *name, unsigned npus, const char *queue,
		  unsigned priority, uint64_t time_limit_sec, uint64_t now_usec,
		  struct sched_job **ret)
{
	char reason[SCHED_REASON_MAX] = "";
	struct conf_job_spec *s = job_spec(name, npus, queue, priority, time_limit_sec);
	int r;

	if (!s)
		return -ENOMEM;
	r = sched_job_submit(c, s, OWNER_UID, OWNER_GID, now_usec, reason, ret);
	if (r < 0)
		fprintf(stderr, "bench_sched: submit %s (%u NPUs): %s: %s\n", name, npus,
			strerror(-r), reason);
	return r;
}

static int check(const struct sched_cluster *c, const char *where)
{
	char why[SCHED_REASON_MAX] = "";
	int r = sched_check_invariants(c, why);

	if (r < 0)
		fprintf(stderr, "bench_sched: invariant broken %s: %s\n", where, why);
	return r;
}

/* Walk the events after *@cursor; -EIO when the ring dropped some we had not seen. */
static int events_drain(const struct sched_cluster *c, uint64_t *cursor,
			int (*fn)(void *arg, const struct sched_event *e), void *arg)
{
	const struct sched_event *e;

	while ((e = sched_event_next(c, *cursor))) {
		int r;

		if (e->seq != *cursor + 1) {
			fprintf(stderr, "bench_sched: events %" PRIu64 "-%" PRIu64 " dropped\n",
				*cursor + 1, e->seq - 1);
			return -EIO;
		}
		*cursor = e->seq;
		r = fn(arg, e);
		if (r < 0)
			return r;
	}
	return 0;
}

static unsigned jobs_in_state(const struct sched_cluster *c, enum sched_job_state s)
{
	unsigned n = 0;

	for (size_t i = 0; i < c->job_count; i++)
		n += c->jobs[i]->state == s;
	return n;
}

/* ---- part A: pass time ---- */

static unsigned a_pending = A_PENDING;

static const char a_queues_yaml[] = "  - name: prod\n    weight: 4\n"
				    "  - name: research\n    weight: 2\n"
				    "  - name: dev\n    weight: 1\n"
				    "  - name: batch\n    weight: 1\n";
static const char *const a_queues[] = { "prod", "research", "dev", "batch" };

static const unsigned a_sizes[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
static const unsigned a_fill_w[] = { 25, 10, 10, 25, 12, 10, 6, 2 };
static const unsigned a_pend_w[] = { 30, 10, 10, 25, 10, 8, 5, 2 };
static const unsigned a_prios[] = { 100, 500, 900 };
/* Low-priority running jobs and a few urgent pending ones give preemption work to do;
 * more would preempt most of the cluster while the backlog is built. */
static const unsigned a_fill_prio_w[] = { 10, 90, 0 };
static const unsigned a_pend_prio_w[] = { 20, 79, 1 };
static const unsigned a_limits_h[] = { 1, 2, 4, 8, 24, 48 };

struct a_result {
	unsigned fill_jobs, fill_npus;
	double fill_ms, pend_sec;
	unsigned pre_running, pre_pending, pre_stopping, pre_alloc;
	uint64_t pre_preemptions;
	double pass[A_PASSES], complete[A_PASSES], tick[A_PASSES];
	bool idle[A_PASSES];	/* NPUs were free during the timed pass */
	/* per step: job records put on the store's dirty list (what the daemon's committer
	 * writes) and jobs whose files are announced (its notifier) */
	double records[A_PASSES], announced[A_PASSES];
	double sub[A_PASSES / A_SUBMIT_EVERY + 1];
	size_t nsub;
	unsigned placed, placed_by_pass, completed;
	uint64_t preemptions, backfilled;
	unsigned post_running, post_pending;
};

/* Take every job off dirty list @l: how many there were. */
static size_t drain(struct sched_cluster *c, enum sched_dirty_list l)
{
	size_t n = 0;

	while (sched_dirty_pop(c, l))
		n++;
	return n;
}

static int count_placed(void *arg, const struct sched_event *e)
{
	*(unsigned *)arg += e->kind == SCHED_EV_PLACED;
	return 0;
}

/* A random running job, or NULL. */
static struct sched_job *a_pick_running(struct sched_cluster *c, uint64_t *rng)
{
	size_t start;

	if (!c->job_count)
		return NULL;
	start = (size_t)(rng_next(rng) % c->job_count);
	for (size_t k = 0; k < c->job_count; k++) {
		struct sched_job *j = c->jobs[(start + k) % c->job_count];

		if (j->state == SCHED_JOB_RUNNING)
			return j;
	}
	return NULL;
}

static int a_submit_pending(struct sched_cluster *c, uint64_t *rng, const char *prefix,
			    unsigned k, uint64_t now)
{
	char name[32];
	unsigned npus = a_sizes[rng_pick(rng, a_pend_w, 8)];
	unsigned prio = a_prios[rng_pick(rng, a_pend_prio_w, 3)];
	const char *queue = a_queues[rng_next(rng) % 4];
	uint64_t limit = a_limits_h[rng_next(rng) % 6] * 3600;

	snprintf(name, sizeof(name), "%s-%05u", prefix, k);
	return submit(c, name, npus, queue, prio, limit, now, NULL);
}

/* Tell `perf record --control` (BENCH_PERF_CTL, a FIFO) to @cmd; nothing without it. */
static void perf_ctl(const char *cmd)
{
	const char *path = getenv("BENCH_PERF_CTL");
	FILE *f = path && *path ? fopen(path, "w") : NULL;

	if (!f)
		return;
	fprintf(f, "%s\n", cmd);
	fclose(f);
}

static int a_run(bool easy, struct a_result *res)
{
	struct cluster_opts o = { A_SERVERS, A_SWITCHES, easy, easy, a_queues_yaml };
	struct sched_cluster *c = NULL;
	uint64_t rng = A_SEED, now = T0_USEC, cursor, pre0, bf0;
	unsigned misses = 0;
	double t0;
	int r;

	memset(res, 0, sizeof(*res));
	r = cluster_new(&o, &c);
	if (r < 0)
		return r;

	/* fill: sizes that fit now, until the cluster is full (no pending job is made) */
	t0 = mono_usec();
	for (unsigned k = 0; misses < 400 && c->npus_allocated < c->npus_total; k++) {
		unsigned npus = a_sizes[rng_pick(&rng, a_fill_w, 8)];
		unsigned prio = a_prios[rng_pick(&rng, a_fill_prio_w, 3)];
		const char *queue = a_queues[rng_next(&rng) % 4];
		uint64_t limit = a_limits_h[rng_next(&rng) % 6] * 3600;
		struct sched_slice *sl = NULL;
		struct sched_job *j = NULL;
		size_t n = 0;
		char name[32], reason[SCHED_REASON_MAX];

		r = sched_place(c, npus, NULL, &sl, &n, reason);
		free(sl);
		if (r == -ENOSPC) {
			misses++;
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "bench_sched: sched_place(%u): %s\n", npus, reason);
			goto out;
		}
		misses = 0;
		snprintf(name, sizeof(name), "run-%05u", k);
		r = submit(c, name, npus, queue, prio, limit, now += 1000, &j);
		if (r < 0)
			goto out;
		if (!j || j->state != SCHED_JOB_RUNNING) {
			fprintf(stderr, "bench_sched: %s did not start: %s\n", name,
				j ? j->reason : "(no job)");
			r = -EIO;
			goto out;
		}
		res->fill_jobs++;
	}
	res->fill_npus = c->npus_allocated;
	res->fill_ms = (mono_usec() - t0) / 1e3;

	/* the backlog */
	t0 = mono_usec();
	for (unsigned k = 0; k < a_pending; k++) {
		r = a_submit_pending(c, &rng, "pend", k, now += 1000);
		if (r < 0)
			goto out;
	}
	res->pend_sec = (mono_usec() - t0) / 1e6;
	/* let preemption victims of the backlog's passes finish stopping */
	now += 120 * USEC_PER_SEC;
	sched_tick(c, now);
	r = check(c, "after setup");
	if (r < 0)
		goto out;
	res->pre_running = jobs_in_state(c, SCHED_JOB_RUNNING);
	res->pre_pending = jobs_in_state(c, SCHED_JOB_PENDING);
	res->pre_stopping = jobs_in_state(c, SCHED_JOB_STOPPING);
	res->pre_alloc = c->npus_allocated;
	res->pre_preemptions = c->preemptions;

	/* measure */
	drain(c, SCHED_DIRTY_STORE);
	drain(c, SCHED_DIRTY_NOTIFY);
	cursor = c->next_event_seq - 1;
	pre0 = c->preemptions;
	bf0 = c->backfilled;
	if (easy)
		perf_ctl("enable");
	for (unsigned i = 0; i < A_PASSES; i++) {
		struct sched_job *j;

		now += USEC_PER_SEC;
		t0 = mono_usec();
		sched_tick(c, now);
		res->tick[i] = mono_usec() - t0;
		j = a_pick_running(c, &rng);
		res->complete[i] = 0;
		if (j) {
			char name[CONF_NAME_MAX + 1];

			snprintf(name, sizeof(name), "%s", j->name);
			t0 = mono_usec();
			r = sched_job_complete(c, name, OWNER_UID, now);
			res->complete[i] = mono_usec() - t0;
			if (r < 0) {
				fprintf(stderr, "bench_sched: complete %s: %s\n", name, strerror(-r));
				goto out;
			}
			res->completed++;
		}
		if (i % A_SUBMIT_EVERY == 0) {
			t0 = mono_usec();
			r = a_submit_pending(c, &rng, "new", i, now);
			res->sub[res->nsub++] = mono_usec() - t0;
			if (r < 0)
				goto out;
		}
		/* free NPUs with 10,000 jobs waiting are held for the job first in line */
		res->idle[i] = c->npus_allocated < c->npus_total;
		t0 = mono_usec();
		res->placed_by_pass += sched_schedule(c, now);
		res->pass[i] = mono_usec() - t0;
		/* what the step gave the daemon's committer and notifier (x 1000: a_row's ms) */
		res->records[i] = 1e3 * drain(c, SCHED_DIRTY_STORE);
		res->announced[i] = 1e3 * drain(c, SCHED_DIRTY_NOTIFY);
		r = events_drain(c, &cursor, count_placed, &res->placed);
		if (r < 0)
			goto out;
		if ((i + 1) % A_CHECK_EVERY == 0) {
			r = check(c, "during measurement");
			if (r < 0)
				goto out;
		}
	}
	res->preemptions = c->preemptions - pre0;
	res->backfilled = c->backfilled - bf0;
	if (easy)
		perf_ctl("disable");
	res->post_running = jobs_in_state(c, SCHED_JOB_RUNNING);
	res->post_pending = jobs_in_state(c, SCHED_JOB_PENDING);
	r = 0;
out:
	sched_cluster_free(c);
	return r;
}

/* Pass times split by whether NPUs stood idle (held for the first job in line). */
static void a_split(const char *who, const struct a_result *x)
{
	double with[A_PASSES], without[A_PASSES];
	size_t nw = 0, nwo = 0;

	for (size_t i = 0; i < A_PASSES; i++) {
		if (x->idle[i])
			with[nw++] = x->pass[i];
		else
			without[nwo++] = x->pass[i];
	}
	printf("%s: %zu passes with idle NPUs held for the job first in line", who, nw);
	if (nw) {
		struct stats s = stats_of(with, nw);

		printf(" (p50 %.2f, p99 %.2f ms)", s.p50 / 1e3, s.p99 / 1e3);
	}
	printf("; %zu with none", nwo);
	if (nwo) {
		struct stats s = stats_of(without, nwo);

		printf(" (p50 %.2f, p99 %.2f ms)", s.p50 / 1e3, s.p99 / 1e3);
	}
	printf("\n");
}

/* One row of the table; @easy and @fifo (@n <= A_PASSES entries) are left unsorted. */
static void a_row(const char *what, const double *easy, const double *fifo, size_t n)
{
	double x[A_PASSES], y[A_PASSES];
	struct stats e, f;

	memcpy(x, easy, n * sizeof(*x));
	memcpy(y, fifo, n * sizeof(*y));
	e = stats_of(x, n);
	f = stats_of(y, n);

	printf("  %-27s %7.2f %7.2f %7.2f   %7.2f %7.2f %7.2f   %6.1fx\n", what, e.p50 / 1e3,
	       e.p99 / 1e3, e.max / 1e3, f.p50 / 1e3, f.p99 / 1e3, f.max / 1e3,
	       f.p99 > 0 ? e.p99 / f.p99 : 0.0);
}

/* The goal of one pass's p99 at a_pending pending jobs (issue 16). */
static double a_goal_ms(void)
{
	return a_pending <= 10000 ? 2.0 : a_pending <= 100000 ? 20.0 : 200.0;
}

static int part_a(void)
{
	static struct a_result easy, fifo;
	double pass_p99;
	int r;

	printf("== part A: pass time at %u pending, %u Atlas 800T A2 servers (%u NPUs, %u leaf "
	       "switches), 4 queues (weights 4/2/1/1)\n",
	       a_pending, A_SERVERS, A_SERVERS * NPUS_PER_SERVER, A_SWITCHES);
	r = a_run(true, &easy);
	if (r < 0)
		return r;
	r = a_run(false, &fifo);
	if (r < 0)
		return r;
	for (int k = 0; k < 2; k++) {
		const struct a_result *x = k ? &fifo : &easy;

		printf("%s: fill %u running jobs (%u NPUs, %.1f%%) in %.0f ms; %u pending "
		       "submitted in %.1f s (%.2f ms per submit)\n"
		       "    before measuring: %u running, %u pending, %u stopping, %u NPUs "
		       "allocated; %" PRIu64 " preemptions during setup\n",
		       k ? "baseline (backfill off, preemption off)" :
			   "under test (backfill on, preemption on)",
		       x->fill_jobs, x->fill_npus, 100.0 * x->fill_npus / (A_SERVERS * 8.0),
		       x->fill_ms, a_pending, x->pend_sec, x->pend_sec * 1e3 / a_pending,
		       x->pre_running, x->pre_pending, x->pre_stopping, x->pre_alloc,
		       x->pre_preemptions);
	}
	printf("\n%u passes, each after a 1 s tick, one completion and (every %u) one submission;"
	       " ms per call (CLOCK_MONOTONIC)\n",
	       A_PASSES, A_SUBMIT_EVERY);
	printf("  %-27s %-25s %-25s %s\n", "", "backfill+preemption", "strict FIFO (baseline)",
	       "p99");
	printf("  %-27s %7s %7s %7s   %7s %7s %7s   %7s\n", "call", "p50", "p99", "max", "p50",
	       "p99", "max", "ratio");
	{
		double tmp[A_PASSES];

		memcpy(tmp, easy.pass, sizeof(tmp));
		pass_p99 = stats_of(tmp, A_PASSES).p99 / 1e3;
	}
	a_row("sched_schedule", easy.pass, fifo.pass, A_PASSES);
	a_row("sched_job_complete (+pass)", easy.complete, fifo.complete, A_PASSES);
	a_row("sched_job_submit (+pass)", easy.sub, fifo.sub, easy.nsub);
	a_row("sched_tick", easy.tick, fifo.tick, A_PASSES);
	printf("  per step, in jobs (not ms):\n");
	a_row("records to write", easy.records, fifo.records, A_PASSES);
	a_row("jobs whose files changed", easy.announced, fifo.announced, A_PASSES);
	for (int k = 0; k < 2; k++) {
		const struct a_result *x = k ? &fifo : &easy;

		printf("%s: %u completions; %u jobs placed during measurement (%u by the timed "
		       "passes), %" PRIu64 " backfilled, %" PRIu64 " preempted; after: %u running, "
		       "%u pending\n",
		       k ? "baseline  " : "under test", x->completed, x->placed, x->placed_by_pass,
		       x->backfilled, x->preemptions, x->post_running, x->post_pending);
	}
	a_split("under test", &easy);
	a_split("baseline  ", &fifo);
	/* issue 16: < 2 ms at 10,000 pending, < 20 ms at 100,000 */
	printf("goal p99 < %.0f ms per pass at %u pending (backfill+preemption): %.2f ms, %s\n\n",
	       a_goal_ms(), a_pending, pass_p99, pass_p99 < a_goal_ms() ? "met" : "NOT met");
	return 0;
}

/* ---- part B: the Philly trace ---- */

struct tjob {
	uint64_t submit_sec, dur_sec;
	unsigned npus;
	unsigned vc;		/* index into the VC table */
	size_t line;		/* for a stable sort */
};

struct trace {
	struct tjob *jobs;
	size_t n;
	char (*vcs)[16];
	size_t nvc;
};

static int tjob_cmp(const void *a, const void *b)
{
	const struct tjob *x = a, *y = b;

	if (x->submit_sec != y->submit_sec)
		return x->submit_sec < y->submit_sec ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int trace_vc(struct trace *t, const char *hash, unsigned *ret)
{
	size_t i;

	for (i = 0; i < t->nvc && strcmp(t->vcs[i], hash) != 0; i++)
		;
	if (i == t->nvc) {
		char (*n)[16] = realloc(t->vcs, (t->nvc + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->vcs = n;
		snprintf(t->vcs[t->nvc++], sizeof(t->vcs[0]), "%s", hash);
	}
	*ret = (unsigned)i;
	return 0;
}

/* Read the whole trace, sorted by submit time. */
static int trace_load(const char *path, struct trace *t)
{
	FILE *f = fopen(path, "re");
	char line[256];
	size_t cap = 0, lineno = 0;
	int r = 0;

	memset(t, 0, sizeof(*t));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct tm tm;
		char *p, *end, hash[16];
		double dur;
		long gpus;
		struct tjob *j;

		if (lineno++ == 0 && strncmp(line, "timestamp,", 10) == 0)
			continue;
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue; /* a blank line (the file ends with one) */
		memset(&tm, 0, sizeof(tm));
		p = strptime(line, "%Y-%m-%d %H:%M:%S", &tm);
		if (!p || *p != ',')
			goto bad;
		dur = strtod(p + 1, &end);
		if (end == p + 1 || *end != ',' || dur < 0)
			goto bad;
		gpus = strtol(end + 1, &end, 10);
		if (*end != ',' || gpus < 1 || gpus > 4096)
			goto bad;
		p = strchr(end + 1, ','); /* gpu_time: not needed */
		if (!p || sscanf(p + 1, "%15[0-9a-f]", hash) != 1)
			goto bad;
		if (t->n == cap) {
			size_t nc = cap ? cap * 2 : 4096;
			struct tjob *nj = realloc(t->jobs, nc * sizeof(*nj));

			if (!nj) {
				r = -ENOMEM;
				goto out;
			}
			t->jobs = nj;
			cap = nc;
		}
		j = &t->jobs[t->n];
		j->submit_sec = (uint64_t)timegm(&tm);
		/* a zero run time would complete at its start: a job runs at least 1 s */
		j->dur_sec = dur < 1 ? 1 : (uint64_t)(dur + 0.5);
		j->npus = gpus <= NPUS_PER_SERVER ? (unsigned)gpus :
						     (unsigned)(gpus + 7) / 8 * 8;
		j->line = lineno;
		r = trace_vc(t, hash, &j->vc);
		if (r < 0)
			goto out;
		t->n++;
		continue;
bad:
		fprintf(stderr, "bench_sched: %s:%zu: not a trace row (timestamp,duration,num_gpus,"
				"gpu_time,cluster)\n",
			path, lineno);
		r = -EINVAL;
		goto out;
	}
	if (ferror(f))
		r = -EIO;
	qsort(t->jobs, t->n, sizeof(*t->jobs), tjob_cmp);
out:
	fclose(f);
	return r;
}

static void trace_free(struct trace *t)
{
	free(t->jobs);
	free(t->vcs);
}

/* A min-heap of completions: (time, job index). */
struct cheap {
	struct { uint64_t t; size_t j; } *h;
	size_t n, cap;
};

static int cheap_push(struct cheap *q, uint64_t t, size_t j)
{
	size_t i;

	if (q->n == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 1024;
		void *nh = realloc(q->h, nc * sizeof(q->h[0]));

		if (!nh)
			return -ENOMEM;
		q->h = nh;
		q->cap = nc;
	}
	i = q->n++;
	while (i > 0 && q->h[(i - 1) / 2].t > t) {
		q->h[i] = q->h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->h[i].t = t;
	q->h[i].j = j;
	return 0;
}

static size_t cheap_pop(struct cheap *q)
{
	size_t top = q->h[0].j, i = 0;

	q->h[0] = q->h[--q->n];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < q->n && q->h[l].t < q->h[m].t)
			m = l;
		if (l + 1 < q->n && q->h[l + 1].t < q->h[m].t)
			m = l + 1;
		if (m == i)
			break;
		{
			typeof(q->h[0]) x = q->h[i];

			q->h[i] = q->h[m];
			q->h[m] = x;
		}
		i = m;
	}
	return top;
}

struct b_result {
	double busy_sat, time_sat;	/* NPU-seconds allocated / seconds, while jobs wait */
	double busy_win, time_win;	/* the same over the busy window (see b_window) */
	double wait_win;		/* seconds of the busy window with jobs waiting */
	double busy_sat_win;		/* NPU-seconds allocated then */
	double time_all;		/* first arrival to last completion */
	double wait_sum, jct_sum, wait_max;
	double *waits;			/* per job, for the median */
	size_t started, done, never;
	unsigned max_pending;
	uint64_t timeouts, backfilled, passes_api;
	double wall_sec;
};

struct b_sim {
	struct sched_cluster *c;
	const struct tjob *jobs;
	size_t njobs;
	uint64_t *start_sec;		/* per job; UINT64_MAX until placed */
	struct cheap done;
	uint64_t now_sec;
	unsigned pending;
	struct b_result *res;
};

static int b_on_event(void *arg, const struct sched_event *e)
{
	struct b_sim *s = arg;
	unsigned long idx;
	char *end;

	if (e->kind != SCHED_EV_PLACED || strncmp(e->job, "p-", 2) != 0)
		return 0; /* timeouts are counted by the cluster (c->timeouts) */
	idx = strtoul(e->job + 2, &end, 10);
	if (*end || idx >= s->njobs || s->start_sec[idx] != UINT64_MAX) {
		fprintf(stderr, "bench_sched: job %s placed twice\n", e->job);
		return -EIO;
	}
	s->start_sec[idx] = s->now_sec;
	s->pending--;
	s->res->started++;
	return cheap_push(&s->done, s->now_sec + s->jobs[idx].dur_sec, idx);
}

/*
 * The busy window: from the arrival of the job at the 1st percentile to the last arrival.
 * The trace opens with a few sparse weeks (about 70 jobs in 20 days) that would dilute
 * every average over the arrival window.
 */
static void b_window(const struct trace *t, size_t njobs, uint64_t *ret_from, uint64_t *ret_to)
{
	*ret_from = t->jobs[njobs / 100].submit_sec;
	*ret_to = t->jobs[njobs - 1].submit_sec;
}

static int b_run(const struct trace *t, size_t njobs, unsigned servers, bool backfill,
		 struct b_result *res)
{
	struct cluster_opts o = { servers, B_SWITCHES, backfill, false, NULL };
	struct sched_cluster *c = NULL;
	struct b_sim s = { 0 };
	char *queues = NULL;
	size_t qlen = 0, ai = 0, events = 0;
	uint64_t cursor = 0, w0, w1, prev;
	double t0 = mono_usec();
	FILE *f;
	int r = -ENOMEM;

	memset(res, 0, sizeof(*res));
	f = open_memstream(&queues, &qlen);
	if (!f)
		return -ENOMEM;
	for (size_t v = 0; v < t->nvc; v++)
		fprintf(f, "  - name: vc-%s\n    weight: 1\n", t->vcs[v]);
	if (fclose(f) != 0)
		goto out;
	o.queues = queues;
	r = cluster_new(&o, &c);
	if (r < 0)
		goto out;
	r = -ENOMEM;
	s.c = c;
	s.jobs = t->jobs;
	s.njobs = njobs;
	s.res = res;
	s.start_sec = malloc(njobs * sizeof(*s.start_sec));
	res->waits = malloc(njobs * sizeof(*res->waits));
	if (!s.start_sec || !res->waits)
		goto out;
	for (size_t i = 0; i < njobs; i++)
		s.start_sec[i] = UINT64_MAX;
	cursor = c->next_event_seq - 1;
	b_window(t, njobs, &w0, &w1);
	prev = t->jobs[0].submit_sec;
	while (ai < njobs || s.done.n) {
		uint64_t next = UINT64_MAX;
		double dt, busy;

		if (ai < njobs)
			next = t->jobs[ai].submit_sec;
		if (s.done.n && s.done.h[0].t < next)
			next = s.done.h[0].t;
		/* what held since the last event */
		dt = (double)(next - prev);
		busy = (double)c->npus_allocated * dt;
		res->time_all += dt;
		if (next > w0 && prev < w1) {
			double w = (double)((next < w1 ? next : w1) - (prev > w0 ? prev : w0));

			res->busy_win += (double)c->npus_allocated * w;
			res->time_win += w;
			if (s.pending) {
				res->wait_win += w;
				res->busy_sat_win += (double)c->npus_allocated * w;
			}
		}
		if (s.pending) {
			res->busy_sat += busy;
			res->time_sat += dt;
		}
		prev = s.now_sec = next;

		/* completions first: a job whose limit equals its run time ends, not times out */
		while (s.done.n && s.done.h[0].t == next) {
			size_t j = cheap_pop(&s.done);
			char name[32];

			snprintf(name, sizeof(name), "p-%zu", j);
			r = sched_job_complete(c, name, OWNER_UID, next * USEC_PER_SEC);
			if (r == 0)
				r = sched_job_remove(c, name, OWNER_UID, next * USEC_PER_SEC);
			if (r < 0) {
				fprintf(stderr, "bench_sched: complete %s: %s\n", name, strerror(-r));
				goto out;
			}
			res->passes_api += 2;
			res->done++;
			res->waits[res->done - 1] = (double)(s.start_sec[j] - t->jobs[j].submit_sec);
			res->wait_sum += res->waits[res->done - 1];
			if (res->waits[res->done - 1] > res->wait_max)
				res->wait_max = res->waits[res->done - 1];
			res->jct_sum += (double)(next - t->jobs[j].submit_sec);
			r = events_drain(c, &cursor, b_on_event, &s);
			if (r < 0)
				goto out;
		}
		while (ai < njobs && t->jobs[ai].submit_sec == next) {
			const struct tjob *tj = &t->jobs[ai];
			uint64_t limit = (tj->dur_sec + 3599) / 3600 * 3600;
			char name[32], queue[24];

			snprintf(name, sizeof(name), "p-%zu", ai);
			snprintf(queue, sizeof(queue), "vc-%s", t->vcs[tj->vc]);
			s.pending++;
			r = submit(c, name, tj->npus, queue, 500, limit, next * USEC_PER_SEC, NULL);
			if (r < 0)
				goto out;
			res->passes_api++;
			ai++;
			r = events_drain(c, &cursor, b_on_event, &s);
			if (r < 0)
				goto out;
		}
		sched_tick(c, next * USEC_PER_SEC);
		r = events_drain(c, &cursor, b_on_event, &s);
		if (r < 0)
			goto out;
		if (s.pending > res->max_pending)
			res->max_pending = s.pending;
		if (++events % B_CHECK_EVERY == 0) {
			r = check(c, "during the replay");
			if (r < 0)
				goto out;
		}
		if (ai == njobs && !s.done.n && s.pending) {
			/* nothing left to happen: one more pass, then give up on the rest */
			sched_schedule(c, next * USEC_PER_SEC);
			r = events_drain(c, &cursor, b_on_event, &s);
			if (r < 0)
				goto out;
			if (!s.done.n)
				break;
		}
	}
	r = check(c, "at the end of the replay");
	if (r < 0)
		goto out;
	res->never = s.pending;
	res->timeouts = c->timeouts;
	res->backfilled = c->backfilled;
	res->wall_sec = (mono_usec() - t0) / 1e6;
	r = 0;
out:
	free(s.done.h);
	free(s.start_sec);
	free(queues);
	sched_cluster_free(c);
	return r;
}

static double median_of(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static int part_b(const char *path, size_t want, unsigned servers)
{
	struct trace t;
	struct b_result easy = { 0 }, fifo = { 0 };
	size_t n;
	double work = 0, work_busy = 0, span, span_busy, load, load_busy;
	uint64_t w0, w1;
	unsigned big = 0;
	int r;

	r = trace_load(path, &t);
	if (r == -ENOENT) {
		printf("== part B skipped: no trace at %s (bench_sched --philly PATH, or meson "
		       "-Dphilly_trace=PATH)\n",
		       path);
		return 0;
	}
	if (r < 0) {
		fprintf(stderr, "bench_sched: %s: %s\n", path, strerror(-r));
		trace_free(&t);
		return r;
	}
	n = want && want < t.n ? want : t.n;
	if (n < 2) {
		fprintf(stderr, "bench_sched: %s: fewer than 2 jobs\n", path);
		trace_free(&t);
		return -EINVAL;
	}
	b_window(&t, n, &w0, &w1);
	for (size_t i = 0; i < n; i++) {
		double w = (double)t.jobs[i].npus * (double)t.jobs[i].dur_sec;

		work += w;
		work_busy += t.jobs[i].submit_sec >= w0 ? w : 0;
		big += t.jobs[i].npus > NPUS_PER_SERVER;
	}
	span = (double)(t.jobs[n - 1].submit_sec - t.jobs[0].submit_sec);
	span_busy = (double)(w1 - w0);
	load = work / ((double)servers * NPUS_PER_SERVER * span);
	load_busy = work_busy / ((double)servers * NPUS_PER_SERVER * span_busy);
	printf("== part B: Philly trace replay (%s), first %zu of %zu jobs by submit time, "
	       "%zu VCs as queues of weight 1\n",
	       path, n, t.n, t.nvc);
	printf("cluster: %u Atlas 800T A2 servers (%u NPUs); %u jobs take whole servers "
	       "(> 8 NPUs); arrivals span %.1f days,\n"
	       "  the busy window (1st-percentile arrival to the last) %.1f days\n",
	       servers, servers * NPUS_PER_SERVER, big, span / 86400, span_busy / 86400);
	printf("offered load = sum(npus * run time) / (NPUs * span): %.2f over all arrivals, "
	       "%.2f over the busy window\n  (> 1: more work arrives than the cluster can run; "
	       "it saturates and a backlog builds)\n",
	       load, load_busy);
	fflush(stdout);
	r = b_run(&t, n, servers, true, &easy);
	if (r == 0)
		r = b_run(&t, n, servers, false, &fifo);
	if (r < 0) {
		free(easy.waits);
		free(fifo.waits);
		trace_free(&t);
		return r;
	}
	{
		double sat_e = 100 * easy.busy_sat / (easy.time_sat * servers * 8);
		double sat_f = 100 * fifo.busy_sat / (fifo.time_sat * servers * 8);
		double sw_e = 100 * easy.busy_sat_win / (easy.wait_win * servers * 8);
		double sw_f = 100 * fifo.busy_sat_win / (fifo.wait_win * servers * 8);
		double win_e = 100 * easy.busy_win / (easy.time_win * servers * 8);
		double win_f = 100 * fifo.busy_win / (fifo.time_win * servers * 8);
		double qe = easy.wait_sum / (double)easy.done, qf = fifo.wait_sum / (double)fifo.done;
		double je = easy.jct_sum / (double)easy.done, jf = fifo.jct_sum / (double)fifo.done;
		double me = median_of(easy.waits, easy.done), mf = median_of(fifo.waits, fifo.done);

		printf("\n  %-44s %12s %12s %8s\n", "", "EASY backfill", "FIFO (base)", "ratio");
		printf("  %-44s %11.1f%% %11.1f%% %7.2fx\n",
		       "allocated share while jobs wait (goal >= 90%)", sat_e, sat_f, sat_e / sat_f);
		printf("  %-44s %11.1f%% %11.1f%% %7.2fx\n", "  the same, within the busy window", sw_e,
		       sw_f, sw_e / sw_f);
		printf("  %-44s %11.1f%% %11.1f%% %7.2fx\n", "allocated share, busy window", win_e,
		       win_f, win_e / win_f);
		printf("  %-44s %11.1f%% %11.1f%%\n", "time with jobs waiting, of the busy window",
		       100 * easy.wait_win / easy.time_win, 100 * fifo.wait_win / fifo.time_win);
		printf("  %-44s %10.2f h %10.2f h %7.2fx\n", "average queueing delay (start - submit)",
		       qe / 3600, qf / 3600, qe / qf);
		printf("  %-44s %10.2f h %10.2f h\n", "median queueing delay", me / 3600, mf / 3600);
		printf("  %-44s %10.1f h %10.1f h\n", "longest queueing delay", easy.wait_max / 3600,
		       fifo.wait_max / 3600);
		printf("  %-44s %10.2f h %10.2f h %7.2fx\n", "average JCT (end - submit)", je / 3600,
		       jf / 3600, je / jf);
		printf("  %-44s %10.1f d %10.1f d\n", "replay length (first arrival to last end)",
		       easy.time_all / 86400, fifo.time_all / 86400);
		printf("  %-44s %12u %12u\n", "most jobs pending at once", easy.max_pending,
		       fifo.max_pending);
		printf("  %-44s %12" PRIu64 " %12" PRIu64 "\n", "jobs backfilled", easy.backfilled,
		       fifo.backfilled);
		printf("  %-44s %12" PRIu64 " %12" PRIu64 "\n", "time limits reached (expected 0)",
		       easy.timeouts, fifo.timeouts);
		printf("  %-44s %12zu %12zu\n", "jobs that never started", easy.never, fifo.never);
		printf("  %-44s %10.1f s %10.1f s\n", "wall time of the replay", easy.wall_sec,
		       fifo.wall_sec);
		printf("  %-44s %12" PRIu64 " %12" PRIu64 "\n", "API calls that run a pass",
		       easy.passes_api, fifo.passes_api);
		printf("(shares while jobs wait cover different intervals per policy: FIFO keeps its "
		       "backlog longer, into the trace's tail)\n");
		printf("goal allocated share >= 90%% while jobs wait (EASY backfill): %.1f%%, %s\n",
		       sat_e, sat_e >= 90 ? "met" : "NOT met");
	}
	free(easy.waits);
	free(fifo.waits);
	trace_free(&t);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "part", required_argument, NULL, 'p' },
		{ "philly", required_argument, NULL, 'f' },
		{ "philly-jobs", required_argument, NULL, 'n' },
		{ "philly-servers", required_argument, NULL, 's' },
		{ "pending", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = "philly.csv";
	bool run_a = true, run_b = true;
	size_t jobs = B_JOBS;
	unsigned servers = B_SERVERS;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			run_a = strcmp(optarg, "a") == 0;
			run_b = strcmp(optarg, "b") == 0;
			if (!run_a && !run_b)
				goto usage;
			break;
		case 'f':
			path = optarg;
			break;
		case 'n':
			jobs = strtoul(optarg, NULL, 10);
			break;
		case 's':
			servers = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'P':
			a_pending = (unsigned)strtoul(optarg, NULL, 10);
			if (a_pending < 1 || a_pending > 1000000)
				goto usage;
			break;
		default:
usage:
			fprintf(stderr, "usage: bench_sched [--part a|b] [--philly PATH] "
					"[--philly-jobs N (0 = all)] [--philly-servers N] "
					"[--pending N (part A's backlog, 1-1000000)]\n");
			return 2;
		}
	}
	if (servers < 16 || servers % B_SWITCHES) {
		fprintf(stderr, "bench_sched: --philly-servers must be a multiple of %d, at least "
				"16 (the largest job takes 16 servers)\n",
			B_SWITCHES);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (run_a && part_a() < 0)
		return 1;
	if (run_b && part_b(path, jobs, servers) < 0)
		return 1;
	return 0;
}
