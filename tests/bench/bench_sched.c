/* SPDX-License-Identifier: MIT */
/*
 * bench_sched: the scheduling pass under load (issue 4's measurements).
 *
 * Part A, pass time. A 1,024-server Atlas 800T A2 cluster (8,192 NPUs, 32 leaf switches
 * of 32, 4 queues with weights 4/2/1/1) is filled with running jobs of mixed sizes
 * (1-8 NPUs and 16-128 on whole servers, all with time limits), then 10,000 pending
 * jobs of mixed size, priority and time_limit are submitted (seeded PRNG). Then PASSES
 * times: the virtual clock moves one second (sched_tick), one running job completes
 * (sched_job_complete, which runs a pass itself), every SUBMIT_EVERY-th time one more job
 * is submitted, and one sched_schedule() is timed with clock_gettime(CLOCK_MONOTONIC).
 * Configuration under test: resource.backfill and resource.preemption on. Baseline in
 * the same run: the same workload with both off (strict priority FIFO).
 *
 * Figures only: nothing here asserts anything about time (style.md). The exit status
 * is non-zero only for a real error: an API call that fails, or a breach found by
 * sched_check_invariants() at a checkpoint.
 *
 * Run: meson test -C build --benchmark -v sched
 */
#include <errno.h>
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
#define A_PENDING 10000
#define A_PASSES 200
#define A_SUBMIT_EVERY 4
#define A_CHECK_EVERY 50
#define A_SEED 0x5c4ed001u

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
	fprintf(f, "cluster:\n  name: bench\n  scheduler_ip: 10.0.0.1\n"
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
	double sub[A_PASSES / A_SUBMIT_EVERY + 1];
	size_t nsub;
	unsigned placed, placed_by_pass, completed;
	uint64_t preemptions, backfilled;
	unsigned post_running, post_pending;
};

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
	for (unsigned k = 0; k < A_PENDING; k++) {
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
	cursor = c->next_event_seq - 1;
	pre0 = c->preemptions;
	bf0 = c->backfilled;
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

static int part_a(void)
{
	static struct a_result easy, fifo;
	double pass_p99;
	int r;

	printf("== part A: pass time, %u Atlas 800T A2 servers (%u NPUs, %u leaf switches), "
	       "4 queues (weights 4/2/1/1)\n",
	       A_SERVERS, A_SERVERS * NPUS_PER_SERVER, A_SWITCHES);
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
		       x->fill_ms, A_PENDING, x->pend_sec, x->pend_sec * 1e3 / A_PENDING,
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
	printf("goal p99 < 10 ms per pass (backfill+preemption): %.2f ms, %s\n\n", pass_p99,
	       pass_p99 < 10.0 ? "met" : "NOT met");
	return 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	return part_a() < 0 ? 1 : 0;
}
