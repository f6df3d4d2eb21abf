/* SPDX-License-Identifier: MIT */
/*
 * bench_place: the cost of one placement decision on a large cluster, with no job
 * waiting and with 10,000 jobs queued.
 *
 * Both parts build a 1,024-server Atlas 800T A2 inventory (8,192 NPUs) under 32 leaf
 * switches (part 1 also 16,384 servers, 131,072 NPUs, under 512) from cluster YAML (the daemon's path: conf_cluster_parse + sched_cluster_new),
 * then time sched_place() for one more job of 1, 8 and 32 NPUs, REPS times each, with
 * clock_gettime(CLOCK_MONOTONIC) around every call, and print p50, p99 and max.
 * As a baseline, in the same run and over the same servers, each table also times a
 * topology-blind first-fit scan that only looks for the first k servers with room, and
 * prints the ratio sched_place / first-fit at p50 and at p99. The rows of a table take
 * turns (BLOCK calls each), so that load from elsewhere on the machine falls on all of
 * them alike.
 *
 * 1. Partly full, nothing queued: 1,000 jobs of mixed sizes (1-64 NPUs, seeded PRNG)
 *    are placed, and some complete again, which leaves the cluster fragmented. Then the
 *    same at 16,384 servers with 16,000 jobs (as full; skip it with --no-16k).
 * 2. Full, 10,000 jobs queued: bench_sched part A's set-up, same seed, so the same
 *    cluster state its scheduling passes are timed on: 4 weighted queues, backfill and
 *    preemption on; running jobs of mixed sizes (1-128 NPUs) until no size fits, then
 *    10,000 jobs submitted through sched_job_submit (each submission runs a pass), which
 *    stay pending, then 120 s on the virtual clock for preempted jobs to stop. The
 *    reference is a second cluster built the same way whose pending jobs are then all
 *    cancelled: the same jobs on the same NPUs (checked), without the queue. It prints
 *    sched_place with / without the queue.
 *
 * sched_place() reads servers only (the cluster is const; it never walks the job list
 * or the queues), so its cost should not depend on how many jobs wait: it depends on how
 * full and how fragmented the servers are. Part 2 measures it anyway, to show that, and its
 * reference separates the queue from the occupancy the queue leaves behind. What a queue
 * costs is the pass that tries to place each waiting job (bench_sched part A).
 *
 * The last lines, "TABLE|figure|measured|reference|goal", are issue 16's rows for
 * bench_table.sh. Figures only, no timed assertions (style.md).
 * Run: meson test --benchmark -v place   or: bench_place [--no-16k]
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

#define SERVERS_MAX 16384
#define SERVERS_PER_SWITCH 32
#define SWITCHES_MAX (SERVERS_MAX / SERVERS_PER_SWITCH)
#define NPUS_PER_SERVER 8
#define FILL_JOBS_PER_1024 1000 /* part 1's fill scales with the servers: as full */
#define REPS 2000
#define SEED 0x5eed2024u
#define QUEUED_JOBS 10000
#define QUEUED_SEED 0x5c4ed001u /* bench_sched part A's, for the same cluster state */
#define OWNER_UID 1000u
#define OWNER_GID 1000u
#define USEC_PER_SEC 1000000ull

static uint64_t rng_state = SEED;
static unsigned servers = 1024; /* the inventory's size: 1,024 or --servers */

static uint64_t rng_next(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 2685821657736338717ull;
}

/* An index into @weights (@n entries) drawn by weight. */
static size_t rng_pick(const unsigned *weights, size_t n)
{
	unsigned total = 0, x, acc = 0;

	for (size_t i = 0; i < n; i++)
		total += weights[i];
	x = (unsigned)(rng_next() % total);
	for (size_t i = 0; i < n; i++) {
		acc += weights[i];
		if (x < acc)
			return i;
	}
	return n - 1;
}

static uint64_t fake_now(void)
{
	static uint64_t t = 1700000000000000ull;

	return t += 1000;
}

static double usec_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e6 + (double)(b->tv_nsec - a->tv_nsec) / 1e3;
}

/* The inventory as cluster YAML; @queues: YAML items under `queues:`, or NULL. */
static char *cluster_yaml(const char *queues, size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	/*
	 * One owner holds every job here: 16,000 fill jobs at 16,384 servers, part 2's
	 * running and queued jobs: above the default max_job_count_per_user (a tenth).
	 */
	fprintf(f, "cluster:\n  name: bench\n  scheduler_ip: 10.0.0.1\n"
		   "  max_job_count_per_user: 100000\n");
	fprintf(f, "resource:\n  total_npu: %d\n  allow_mix_task: true\n",
		servers * NPUS_PER_SERVER);
	if (queues)
		fprintf(f, "queues:\n%s", queues);
	fprintf(f, "servers:\n");
	for (unsigned i = 0; i < servers; i++) {
		fprintf(f, "  - name: node-%04u\n    host_ip: 10.1.%u.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-%02u\n    device_ips: [",
			i, i / 250, i % 250 + 1, i / SERVERS_PER_SWITCH);
		for (unsigned d = 0; d < NPUS_PER_SERVER; d++)
			fprintf(f, "%s10.%u.%u.%u", d ? ", " : "", 16 + d, i / 250, i % 250 + 1);
		fprintf(f, "]\n");
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	*ret_len = len;
	return text;
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

/* Job sizes and their weights (per cent): mostly small jobs, a few big ones. */
static const unsigned fill_sizes[] = { 1, 2, 4, 8, 16, 32, 64 };
static const unsigned fill_weights[] = { 30, 20, 20, 15, 8, 5, 2 };

static unsigned pick_size(void)
{
	return fill_sizes[rng_pick(fill_weights, sizeof(fill_weights) / sizeof(fill_weights[0]))];
}

struct fill_stats {
	unsigned placed, skipped, completed;
};

/*
 * Place FILL_JOBS_PER_1024 jobs per 1,024 servers (skipping sizes that do not fit now);
 * complete one in five again.
 */
static int fill(struct sched_cluster *c, struct fill_stats *st)
{
	char reason[SCHED_REASON_MAX], name[32];
	unsigned fill_jobs = FILL_JOBS_PER_1024 * servers / 1024;

	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; st->placed < fill_jobs && i < fill_jobs * 4; i++) {
		unsigned npus = pick_size();
		struct sched_slice *sl = NULL;
		struct sched_job *j = NULL;
		size_t count = 0;
		int r;

		r = sched_place(c, npus, NULL, &sl, &count, reason);
		free(sl);
		if (r == -ENOSPC) {
			st->skipped++;
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "bench_place: sched_place(%u): %s\n", npus, reason);
			return r;
		}
		snprintf(name, sizeof(name), "fill-%u", i);
		r = sched_job_submit(c, job_spec(name, npus, "default", 500, 0), OWNER_UID,
				     OWNER_GID, fake_now(), reason, &j);
		if (r < 0 || !j || j->state != SCHED_JOB_RUNNING) {
			fprintf(stderr, "bench_place: submit %s: %d %s\n", name, r, reason);
			return r < 0 ? r : -EIO;
		}
		st->placed++;
		if (rng_next() % 5 == 0) {
			/* complete a random running job: frees NPUs in the middle of the cluster */
			for (unsigned tries = 0; tries < 16; tries++) {
				struct sched_job *v = c->jobs[rng_next() % c->job_count];

				if (v->state != SCHED_JOB_RUNNING)
					continue;
				r = sched_job_complete(c, v->name, OWNER_UID, fake_now());
				if (r < 0)
					return r;
				st->completed++;
				break;
			}
		}
	}
	return 0;
}

/*
 * Part 2's workload, copied from bench_sched part A (a_queues_yaml, a_sizes, a_fill_w,
 * ...): with the same seed and the same order of draws it builds the same state.
 */
static const char queues_yaml[] = "  - name: prod\n    weight: 4\n"
				  "  - name: research\n    weight: 2\n"
				  "  - name: dev\n    weight: 1\n"
				  "  - name: batch\n    weight: 1\n";
static const char *const queue_names[] = { "prod", "research", "dev", "batch" };
static const unsigned q_sizes[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
static const unsigned q_run_w[] = { 25, 10, 10, 25, 12, 10, 6, 2 };
static const unsigned q_pend_w[] = { 30, 10, 10, 25, 10, 8, 5, 2 };
static const unsigned q_prios[] = { 100, 500, 900 };
static const unsigned q_run_prio_w[] = { 10, 90, 0 };
static const unsigned q_pend_prio_w[] = { 20, 79, 1 };
static const unsigned q_limits_h[] = { 1, 2, 4, 8, 24, 48 };

struct job_pick {
	unsigned npus, priority;
	const char *queue;
	uint64_t time_limit_sec;
};

/* One job of part A's mix; the draws in part A's order. */
static struct job_pick pick_job(const unsigned *size_w, const unsigned *prio_w)
{
	struct job_pick p;

	p.npus = q_sizes[rng_pick(size_w, 8)];
	p.priority = q_prios[rng_pick(prio_w, 3)];
	p.queue = queue_names[rng_next() % 4];
	p.time_limit_sec = q_limits_h[rng_next() % 6] * 3600;
	return p;
}

static int submit(struct sched_cluster *c, const char *name, const struct job_pick *p,
		  uint64_t now_usec, struct sched_job **ret)
{
	char reason[SCHED_REASON_MAX] = "";
	struct conf_job_spec *s = job_spec(name, p->npus, p->queue, p->priority,
					   p->time_limit_sec);
	int r;

	if (!s)
		return -ENOMEM;
	r = sched_job_submit(c, s, OWNER_UID, OWNER_GID, now_usec, reason, ret);
	if (r < 0)
		fprintf(stderr, "bench_place: submit %s (%u NPUs): %s: %s\n", name, p->npus,
			strerror(-r), reason);
	return r;
}

struct queued_stats {
	unsigned running;
	double run_ms, queue_sec;
};

/*
 * Fill @c with running jobs until no size fits, then submit QUEUED_JOBS jobs that wait,
 * then let the jobs preempted meanwhile stop. *@now is the virtual clock (usec).
 */
static int queued_setup(struct sched_cluster *c, uint64_t *now, struct queued_stats *st)
{
	char reason[SCHED_REASON_MAX], name[32];
	struct timespec a, b;
	unsigned misses = 0;
	int r;

	memset(st, 0, sizeof(*st));
	rng_state = QUEUED_SEED;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned k = 0; misses < 400 && c->npus_allocated < c->npus_total; k++) {
		struct job_pick p = pick_job(q_run_w, q_run_prio_w);
		struct sched_slice *sl = NULL;
		struct sched_job *j = NULL;
		size_t count = 0;

		r = sched_place(c, p.npus, NULL, &sl, &count, reason);
		free(sl);
		if (r == -ENOSPC) {
			misses++;
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "bench_place: sched_place(%u): %s\n", p.npus, reason);
			return r;
		}
		misses = 0;
		snprintf(name, sizeof(name), "run-%05u", k);
		r = submit(c, name, &p, *now += 1000, &j);
		if (r < 0)
			return r;
		if (!j || j->state != SCHED_JOB_RUNNING) {
			fprintf(stderr, "bench_place: %s did not start\n", name);
			return -EIO;
		}
		st->running++;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	st->run_ms = usec_between(&a, &b) / 1e3;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned k = 0; k < QUEUED_JOBS; k++) {
		struct job_pick p = pick_job(q_pend_w, q_pend_prio_w);

		snprintf(name, sizeof(name), "pend-%05u", k);
		r = submit(c, name, &p, *now += 1000, NULL);
		if (r < 0)
			return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	st->queue_sec = usec_between(&a, &b) / 1e6;
	*now += 120 * USEC_PER_SEC;
	sched_tick(c, *now);
	return 0;
}

/*
 * Cancel every pending job, newest first, and the jobs holding a backfill reservation
 * last, all at one virtual time @now_usec: while a job first in line still waits and
 * the clock stands still, no pass can start another job, so the servers stay as the
 * queue left them. Each cancellation runs a pass; running jobs are left alone.
 */
static int queue_empty(struct sched_cluster *c, uint64_t now_usec, unsigned *ret_cancelled)
{
	char (*names)[CONF_NAME_MAX + 1] = calloc(c->job_count, sizeof(*names));
	size_t n = 0;
	int r = 0;

	if (!names)
		return -ENOMEM;
	for (int holders = 1; holders >= 0; holders--)
		for (size_t i = 0; i < c->job_count; i++)
			if (c->jobs[i]->state == SCHED_JOB_PENDING &&
			    (c->jobs[i]->reserved_start_usec != 0) == holders)
				snprintf(names[n++], sizeof(names[0]), "%s", c->jobs[i]->name);
	*ret_cancelled = 0;
	while (n-- > 0) {
		const struct sched_job *j = sched_cluster_find_job(c, names[n]);

		if (!j || j->state != SCHED_JOB_PENDING)
			continue;
		r = sched_job_cancel(c, names[n], OWNER_UID, now_usec);
		if (r < 0) {
			fprintf(stderr, "bench_place: cancel %s: %s\n", names[n], strerror(-r));
			break;
		}
		(*ret_cancelled)++;
	}
	free(names);
	return r;
}

/*
 * The baseline: a topology-blind first fit. One server's worth or less: the first
 * schedulable server with enough free NPUs. More: the first k entirely free servers.
 * Returns the number of servers found (k on success).
 */
static unsigned naive_first_fit(const struct sched_cluster *c, unsigned npus, unsigned *out)
{
	unsigned k = npus <= NPUS_PER_SERVER ? 1 : npus / NPUS_PER_SERVER, found = 0;

	for (size_t i = 0; i < c->server_count && found < k; i++) {
		const struct sched_server *s = &c->servers[i];

		if (!sched_server_is_schedulable(c, s))
			continue;
		if (npus <= NPUS_PER_SERVER ? s->npus_free >= npus :
					      s->npus_free == NPUS_PER_SERVER && !s->jobs_running)
			out[found++] = (unsigned)i;
	}
	return found;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double p50, p99, max;
};

static struct stats stats_of(double *v, size_t n)
{
	struct stats s;

	qsort(v, n, sizeof(*v), cmp_double);
	s.p50 = v[n / 2];
	s.p99 = v[(n * 99) / 100];
	s.max = v[n - 1];
	return s;
}

static double ratio_of(double x, double y)
{
	return y > 0 ? x / y : 0;
}

/*
 * One row of a table: a placer on a cluster. The rows of a table take turns, BLOCK calls
 * at a time, so that load from elsewhere on the machine or a change of clock speed falls
 * on every row alike and the ratios between rows stay fair.
 */
#define BLOCK 250
#define BLOCK_WARMUP 10 /* calls at the start of each turn, not counted: caches warm up */
_Static_assert(REPS % BLOCK == 0, "REPS is a whole number of turns");

struct subject {
	const char *label;
	const struct sched_cluster *c;
	bool first_fit;			/* the baseline instead of sched_place */
	double t[REPS];			/* microseconds per call */
	struct stats st;
	char result[SCHED_REASON_MAX];	/* what the first call found, or why not */
};

static const unsigned sizes[] = { 1, 8, 32 };
#define SIZE_COUNT (sizeof(sizes) / sizeof(sizes[0]))

static volatile unsigned sink;

/* One call of @s's placer for @npus; *@ret_usec: how long it took. */
static int time_one(struct subject *s, unsigned npus, bool describe, double *ret_usec)
{
	char reason[SCHED_REASON_MAX] = "";
	struct timespec a, b;

	if (s->first_fit) {
		static unsigned out[SERVERS_MAX];
		unsigned found;

		clock_gettime(CLOCK_MONOTONIC, &a);
		found = naive_first_fit(s->c, npus, out);
		clock_gettime(CLOCK_MONOTONIC, &b);
		sink += found;
		if (describe)
			snprintf(s->result, sizeof(s->result), "%u server%s from %s", found,
				 found == 1 ? "" : "s",
				 found ? s->c->servers[out[0]].conf->name : "(none)");
	} else {
		struct sched_slice *sl = NULL;
		size_t count = 0;
		int r;

		clock_gettime(CLOCK_MONOTONIC, &a);
		r = sched_place(s->c, npus, NULL, &sl, &count, reason);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (describe && r == 0)
			snprintf(s->result, sizeof(s->result), "%zu server%s from %s", count,
				 count == 1 ? "" : "s", s->c->servers[sl[0].server].conf->name);
		else if (describe)
			snprintf(s->result, sizeof(s->result), "%s", reason);
		free(sl);
		if (r < 0 && r != -ENOSPC) {
			fprintf(stderr, "bench_place: sched_place(%u): %d %s\n", npus, r, reason);
			return r;
		}
	}
	*ret_usec = usec_between(&a, &b);
	return 0;
}

/* Time each of @subjects (@n entries) REPS times for @npus, in turns; fills in ->st. */
static int bench_subjects(struct subject *subjects, size_t n, unsigned npus)
{
	for (size_t done = 0; done < REPS; done += BLOCK) {
		for (size_t k = 0; k < n; k++) {
			for (size_t i = 0; i < BLOCK_WARMUP + BLOCK; i++) {
				double usec;
				int r = time_one(&subjects[k], npus, done == 0 && i == 0, &usec);

				if (r < 0)
					return r;
				if (i >= BLOCK_WARMUP)
					subjects[k].t[done + i - BLOCK_WARMUP] = usec;
			}
		}
	}
	for (size_t k = 0; k < n; k++)
		subjects[k].st = stats_of(subjects[k].t, REPS);
	return 0;
}

static void print_header(void)
{
	printf("%u calls per row, rows taking turns of %u calls; microseconds per call "
	       "(CLOCK_MONOTONIC)\n",
	       REPS, BLOCK);
	printf("%5s  %-30s %9s %9s %9s   %s\n", "npus", "placer", "p50", "p99", "max", "result");
	printf("-----  ------------------------------ --------- --------- ---------   ------\n");
}

static void print_row(unsigned npus, const struct subject *s)
{
	printf("%5u  %-30s %9.2f %9.2f %9.2f   %s\n", npus, s->label, s->st.p50, s->st.p99,
	       s->st.max, s->result);
}

/* @x / @y at p50 and at p99. */
static void print_ratio(unsigned npus, const char *label, const struct subject *x,
			const struct subject *y)
{
	printf("%5u  %-30s %8.1fx %8.1fx\n", npus, label, ratio_of(x->st.p50, y->st.p50),
	       ratio_of(x->st.p99, y->st.p99));
}

/* The inventory from YAML, the daemon's path; *@ret_ms: how long that took. */
static int cluster_build(const char *queues, struct sched_cluster **ret, double *ret_ms)
{
	struct conf_cluster *conf = NULL;
	struct conf_error err;
	struct timespec a, b;
	char msg[1024];
	size_t len = 0;
	char *yaml = cluster_yaml(queues, &len);
	int r;

	if (!yaml)
		return -ENOMEM;
	memset(&err, 0, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = conf_cluster_parse(yaml, len, "bench.yaml", &conf, &err);
	free(yaml);
	if (r < 0) {
		fprintf(stderr, "bench_place: %s\n", conf_error_format(&err, msg, sizeof(msg)));
		return r;
	}
	r = sched_cluster_new(conf, ret);
	clock_gettime(CLOCK_MONOTONIC, &b);
	*ret_ms = usec_between(&a, &b) / 1e3;
	return r;
}

static unsigned jobs_in_state(const struct sched_cluster *c, enum sched_job_state s)
{
	unsigned n = 0;

	for (size_t i = 0; i < c->job_count; i++)
		n += c->jobs[i]->state == s;
	return n;
}

static void print_state(const struct sched_cluster *c)
{
	unsigned whole = 0, sw_fit = 0, per_sw[SWITCHES_MAX] = { 0 };

	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		if (s->npus_free == NPUS_PER_SERVER && !s->jobs_running) {
			whole++;
			per_sw[s->switch_index]++;
		}
	}
	for (size_t i = 0; i < c->switch_count; i++)
		sw_fit += per_sw[i] >= 4;
	printf("state: %u of %u NPUs allocated (%.1f%%), %u whole servers free, "
	       "%u switches with >= 4 whole free servers; jobs: %u running, %u pending, "
	       "%u stopping\n",
	       c->npus_allocated, c->npus_total, 100.0 * c->npus_allocated / c->npus_total, whole,
	       sw_fit, jobs_in_state(c, SCHED_JOB_RUNNING), jobs_in_state(c, SCHED_JOB_PENDING),
	       jobs_in_state(c, SCHED_JOB_STOPPING));
}

/* Do @a and @b give every NPU to a job of the same name (or to none)? */
static bool servers_match(const struct sched_cluster *a, const struct sched_cluster *b)
{
	if (a->server_count != b->server_count)
		return false;
	for (size_t i = 0; i < a->server_count; i++) {
		const struct sched_server *x = &a->servers[i], *y = &b->servers[i];

		if (x->npus_free != y->npus_free || x->jobs_running != y->jobs_running)
			return false;
		for (unsigned d = 0; d < x->conf->npu_count; d++) {
			const struct sched_job *jx = x->npus[d].job, *jy = y->npus[d].job;

			if (!jx != !jy || (jx && strcmp(jx->name, jy->name) != 0))
				return false;
		}
	}
	return true;
}

/* Part 1's tables: [size][sched_place, first-fit], at 1,024 and at 16,384 servers. */
static struct subject partly[SIZE_COUNT][2], partly_16k[SIZE_COUNT][2];

/*
 * Part 1 on @servers servers: 1,000 jobs per 1,024 servers placed on the empty cluster,
 * some completed again. Fills in @table.
 */
static int part_partly_full(struct subject (*table)[2])
{
	struct sched_cluster *c = NULL;
	struct fill_stats st;
	struct timespec a, b;
	double ms;
	int r;

	rng_state = SEED;
	r = cluster_build(NULL, &c, &ms);
	if (r < 0)
		return r;
	printf("== 1. partly full, nothing queued, %u servers\n"
	       "%zu atlas800t-a2 servers (%u NPUs) under %zu leaf switches; "
	       "config parsed and modelled in %.1f ms\n",
	       servers, c->server_count, c->npus_total, c->switch_count, ms);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = fill(c, &st);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (r < 0)
		goto out;
	printf("fill (seed %#x): %u jobs placed, %u sizes skipped (no room), %u completed again, "
	       "in %.1f ms\n",
	       SEED, st.placed, st.skipped, st.completed, usec_between(&a, &b) / 1e3);
	print_state(c);
	printf("\n");
	print_header();
	for (size_t i = 0; i < SIZE_COUNT; i++) {
		struct subject *row = table[i];

		row[0] = (struct subject){ .label = "sched_place", .c = c };
		row[1] = (struct subject){ .label = "first-fit scan", .c = c, .first_fit = true };
		r = bench_subjects(row, 2, sizes[i]);
		if (r < 0)
			goto out;
		print_row(sizes[i], &row[0]);
		print_row(sizes[i], &row[1]);
		print_ratio(sizes[i], "ratio sched_place / first-fit", &row[0], &row[1]);
	}
out:
	sched_cluster_free(c);
	return r;
}

/* Part 2's table: [size][sched_place queued, first-fit queued, the same emptied]. */
static struct subject queued[SIZE_COUNT][4];

/* A cluster in part 2's state: full, QUEUED_JOBS waiting; *@now: its virtual clock. */
static int queued_cluster(struct sched_cluster **ret, uint64_t *now)
{
	struct queued_stats st;
	double ms;
	int r;

	*now = 1700000000000000ull;
	r = cluster_build(queues_yaml, ret, &ms);
	if (r < 0)
		return r;
	r = queued_setup(*ret, now, &st);
	if (r < 0) {
		sched_cluster_free(*ret);
		*ret = NULL;
		return r;
	}
	printf("seed %#x: %u running jobs submitted until no size fits, in %.0f ms; %u jobs "
	       "submitted to wait, in %.1f s (%.2f ms per submission, each runs a pass); "
	       "%" PRIu64 " preemptions\n",
	       QUEUED_SEED, st.running, st.run_ms, QUEUED_JOBS, st.queue_sec,
	       st.queue_sec * 1e3 / QUEUED_JOBS, (*ret)->preemptions);
	print_state(*ret);
	return 0;
}

/* Part 2: full with QUEUED_JOBS waiting, and the same servers without them. */
static int part_queued(void)
{
	struct sched_cluster *c = NULL, *ref = NULL;
	struct timespec a, b;
	uint64_t now, ref_now;
	unsigned cancelled;
	int r;

	printf("\n== 2. full, %u jobs queued (bench_sched part A's set-up: 4 queues weighted "
	       "4/2/1/1, backfill and preemption on)\n",
	       QUEUED_JOBS);
	r = queued_cluster(&c, &now);
	if (r < 0)
		return r;
	printf("reference: the same set-up again, then every pending job cancelled\n");
	r = queued_cluster(&ref, &ref_now);
	if (r < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = queue_empty(ref, ref_now, &cancelled);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (r < 0)
		goto out;
	printf("%u pending jobs cancelled (holders of a reservation last) in %.1f s\n", cancelled,
	       usec_between(&a, &b) / 1e6);
	print_state(ref);
	printf("every NPU held by the same job as with the queue: %s\n\n",
	       servers_match(c, ref) ? "yes" : "NO (the reference differs in more than the queue)");

	print_header();
	for (size_t i = 0; i < SIZE_COUNT; i++) {
		struct subject *row = queued[i];

		row[0] = (struct subject){ .label = "sched_place, queued", .c = c };
		row[1] = (struct subject){ .label = "first-fit scan, queued", .c = c,
					   .first_fit = true };
		row[2] = (struct subject){ .label = "sched_place, queue emptied", .c = ref };
		row[3] = (struct subject){ .label = "first-fit scan, queue emptied", .c = ref,
					   .first_fit = true };
		r = bench_subjects(row, 4, sizes[i]);
		if (r < 0)
			goto out;
		print_row(sizes[i], &row[0]);
		print_row(sizes[i], &row[1]);
		print_ratio(sizes[i], "ratio sched_place / first-fit", &row[0], &row[1]);
		print_row(sizes[i], &row[2]);
		print_row(sizes[i], &row[3]);
		print_ratio(sizes[i], "ratio sched_place / first-fit", &row[2], &row[3]);
		print_ratio(sizes[i], "ratio queued / emptied (place)", &row[0], &row[2]);
	}
out:
	sched_cluster_free(ref);
	sched_cluster_free(c);
	return r;
}

/* Column @k's p99 figures of @table as "a / b / c (p50 d / e / f)", into @buf. */
static const char *p99_list(struct subject (*table)[2], size_t k, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < SIZE_COUNT && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%.1f", i ? " / " : "",
				      table[i][k].st.p99);
	for (size_t i = 0; i < SIZE_COUNT && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%.1f%s", i ? " / " : " (p50 ",
				      table[i][k].st.p50, i + 1 == SIZE_COUNT ? ")" : "");
	return buf;
}

int main(int argc, char **argv)
{
	struct timespec a, x;
	double t[REPS];
	char m1[128], r1[128], m16[128], r16[128];
	bool big = true;

	/* --no-16k: the 1,024-server parts only (the 16,384-server fill takes a while) */
	if (argc > 1 && strcmp(argv[1], "--no-16k") == 0)
		big = false;
	else if (argc > 1) {
		fprintf(stderr, "usage: bench_place [--no-16k]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (part_partly_full(partly) < 0)
		return 1;
	if (big) {
		servers = SERVERS_MAX;
		printf("\n");
		if (part_partly_full(partly_16k) < 0)
			return 1;
		servers = 1024;
	}
	if (part_queued() < 0)
		return 1;

	/* the timer's own cost, for reading the smallest figures */
	for (unsigned i = 0; i < REPS; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_MONOTONIC, &x);
		t[i] = usec_between(&a, &x);
	}
	printf("\ntimer overhead p50: %.3f us\nsummary, ratios at p50 (p99) for npus:",
	       stats_of(t, REPS).p50);
	for (size_t i = 0; i < SIZE_COUNT; i++)
		printf("%s %u", i ? "," : "", sizes[i]);
	printf("\n  sched_place / first-fit, partly full:   ");
	for (size_t i = 0; i < SIZE_COUNT; i++)
		printf(" %5.1fx (%4.1fx)", ratio_of(partly[i][0].st.p50, partly[i][1].st.p50),
		       ratio_of(partly[i][0].st.p99, partly[i][1].st.p99));
	if (big) {
		printf("\n  the same at 16,384 servers:             ");
		for (size_t i = 0; i < SIZE_COUNT; i++)
			printf(" %5.1fx (%4.1fx)",
			       ratio_of(partly_16k[i][0].st.p50, partly_16k[i][1].st.p50),
			       ratio_of(partly_16k[i][0].st.p99, partly_16k[i][1].st.p99));
	}
	printf("\n  sched_place / first-fit, 10,000 queued: ");
	for (size_t i = 0; i < SIZE_COUNT; i++)
		printf(" %5.1fx (%4.1fx)", ratio_of(queued[i][0].st.p50, queued[i][1].st.p50),
		       ratio_of(queued[i][0].st.p99, queued[i][1].st.p99));
	printf("\n  sched_place, queued / queue emptied:    ");
	for (size_t i = 0; i < SIZE_COUNT; i++)
		printf(" %5.1fx (%4.1fx)", ratio_of(queued[i][0].st.p50, queued[i][2].st.p50),
		       ratio_of(queued[i][0].st.p99, queued[i][2].st.p99));
	printf("\n");
	/* for bench_table.sh: figure | measured | reference | goal */
	p99_list(partly, 0, m1, sizeof(m1));
	p99_list(partly, 1, r1, sizeof(r1));
	printf("TABLE|placement of one job (1/8/32 NPUs), p99, 1,024 servers|%s us|first-fit "
	       "scan: %s us|< 20 us\n",
	       m1, r1);
	if (big) {
		p99_list(partly_16k, 0, m16, sizeof(m16));
		p99_list(partly_16k, 1, r16, sizeof(r16));
		printf("TABLE|placement of one job (1/8/32 NPUs), p99, 16,384 servers|%s us|"
		       "first-fit scan: %s us|< 100 us\n",
		       m16, r16);
	}
	return 0;
}
