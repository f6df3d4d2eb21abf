/* SPDX-License-Identifier: MIT */
/*
 * bench_place: the cost of one placement decision on a large, partly full cluster.
 *
 * Builds a 1,024-server Atlas 800T A2 inventory (8,192 NPUs) under 32 leaf switches from
 * cluster YAML (the daemon's path: conf_cluster_parse + sched_cluster_new), places 1,000
 * jobs of mixed sizes (1-64 NPUs, seeded PRNG; some complete again, which leaves the
 * cluster fragmented), then times sched_place() for one more job of 1, 8 and 32 NPUs,
 * REPS times each, with clock_gettime(CLOCK_MONOTONIC) around every call.
 * As a baseline, in the same run and over the same servers, it times a topology-blind
 * first-fit scan that only looks for the first k servers with room, and prints the ratio.
 *
 * Figures only, no timed assertions (style.md). Run: meson test --benchmark -v place
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

#define SERVERS 1024
#define SWITCHES 32
#define NPUS_PER_SERVER 8
#define FILL_JOBS 1000
#define REPS 2000
#define SEED 0x5eed2024u

static uint64_t rng_state = SEED;

static uint64_t rng_next(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 2685821657736338717ull;
}

static uint64_t fake_now(void)
{
	static uint64_t t = 1700000000000000ull;

	return t += 1000;
}

static char *cluster_yaml(size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fprintf(f, "cluster:\n  name: bench\n  scheduler_ip: 10.0.0.1\n"
		   "resource:\n  total_npu: %d\n  allow_mix_task: true\n"
		   "servers:\n",
		SERVERS * NPUS_PER_SERVER);
	for (unsigned i = 0; i < SERVERS; i++) {
		fprintf(f, "  - name: node-%04u\n    host_ip: 10.1.%u.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-%02u\n    device_ips: [",
			i, i / 250, i % 250 + 1, i / (SERVERS / SWITCHES));
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

static struct conf_job_spec *job_spec(const char *name, unsigned npus)
{
	struct conf_job_spec *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->name = strdup(name);
	s->queue = strdup("default");
	if (!s->name || !s->queue) {
		conf_job_spec_free(s);
		return NULL;
	}
	s->npus = s->npus_min = s->npus_max = npus;
	s->priority = 500;
	s->max_restarts = 3;
	return s;
}

/* Job sizes and their weights (per cent): mostly small jobs, a few big ones. */
static const unsigned fill_sizes[] = { 1, 2, 4, 8, 16, 32, 64 };
static const unsigned fill_weights[] = { 30, 20, 20, 15, 8, 5, 2 };

static unsigned pick_size(void)
{
	unsigned x = (unsigned)(rng_next() % 100), acc = 0;

	for (size_t i = 0; i < sizeof(fill_sizes) / sizeof(fill_sizes[0]); i++) {
		acc += fill_weights[i];
		if (x < acc)
			return fill_sizes[i];
	}
	return 1;
}

struct fill_stats {
	unsigned placed, skipped, completed;
};

/* Place FILL_JOBS jobs (skipping sizes that do not fit now); complete one in five again. */
static int fill(struct sched_cluster *c, struct fill_stats *st)
{
	char reason[SCHED_REASON_MAX], name[32];

	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; st->placed < FILL_JOBS && i < FILL_JOBS * 4; i++) {
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
		r = sched_job_submit(c, job_spec(name, npus), 1000, 1000, fake_now(), reason, &j);
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
				r = sched_job_complete(c, v->name, 1000, fake_now());
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

static double usec_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e6 + (double)(b->tv_nsec - a->tv_nsec) / 1e3;
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

static volatile unsigned sink;

static int bench_size(const struct sched_cluster *c, unsigned npus, double *t, double *ratio)
{
	struct timespec a, b;
	char reason[SCHED_REASON_MAX] = "", where[64] = "";
	unsigned out[SERVERS];
	struct stats sp, nf;
	int r = 0;

	for (unsigned i = 0; i < REPS + 50; i++) {
		struct sched_slice *sl = NULL;
		size_t count = 0;

		clock_gettime(CLOCK_MONOTONIC, &a);
		r = sched_place(c, npus, NULL, &sl, &count, reason);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (r == 0 && i == 0)
			snprintf(where, sizeof(where), "%zu server%s from %s", count,
				 count == 1 ? "" : "s", c->servers[sl[0].server].conf->name);
		free(sl);
		if (r < 0 && r != -ENOSPC) {
			fprintf(stderr, "bench_place: sched_place(%u): %d %s\n", npus, r, reason);
			return r;
		}
		if (i >= 50) /* the first 50 warm caches up */
			t[i - 50] = usec_between(&a, &b);
	}
	sp = stats_of(t, REPS);
	printf("%5u  %-14s %9.2f %9.2f %9.2f   %s\n", npus, "sched_place", sp.p50, sp.p99, sp.max,
	       r == 0 ? where : reason);

	for (unsigned i = 0; i < REPS + 50; i++) {
		unsigned found;

		clock_gettime(CLOCK_MONOTONIC, &a);
		found = naive_first_fit(c, npus, out);
		clock_gettime(CLOCK_MONOTONIC, &b);
		sink += found;
		if (i == 0)
			snprintf(where, sizeof(where), "%u server%s from %s", found,
				 found == 1 ? "" : "s",
				 found ? c->servers[out[0]].conf->name : "(none)");
		if (i >= 50)
			t[i - 50] = usec_between(&a, &b);
	}
	nf = stats_of(t, REPS);
	printf("%5u  %-14s %9.2f %9.2f %9.2f   %s\n", npus, "first-fit scan", nf.p50, nf.p99,
	       nf.max, where);
	*ratio = nf.p50 > 0 ? sp.p50 / nf.p50 : 0;
	printf("%5u  %-14s %9.1fx\n", npus, "ratio p50", *ratio);
	return 0;
}

int main(void)
{
	static const unsigned sizes[] = { 1, 8, 32 };
	struct sched_cluster *c = NULL;
	struct conf_cluster *conf = NULL;
	struct conf_error err;
	struct fill_stats st;
	struct timespec a, b;
	double *t, ratios[3];
	unsigned whole = 0, sw_fit = 0, per_sw[SWITCHES] = { 0 };
	char msg[1024];
	size_t len = 0;
	char *yaml;
	int r;

	yaml = cluster_yaml(&len);
	t = calloc(REPS, sizeof(*t));
	if (!yaml || !t) {
		fprintf(stderr, "bench_place: out of memory\n");
		return 1;
	}
	memset(&err, 0, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = conf_cluster_parse(yaml, len, "bench.yaml", &conf, &err);
	if (r < 0) {
		fprintf(stderr, "bench_place: %s\n", conf_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	free(yaml);
	if (sched_cluster_new(conf, &c) < 0) {
		fprintf(stderr, "bench_place: out of memory\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("bench_place: %zu atlas800t-a2 servers (%u NPUs) under %zu leaf switches; "
	       "config parsed and modelled in %.1f ms\n",
	       c->server_count, c->npus_total, c->switch_count, usec_between(&a, &b) / 1e3);

	clock_gettime(CLOCK_MONOTONIC, &a);
	r = fill(c, &st);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (r < 0) {
		sched_cluster_free(c);
		return 1;
	}
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		if (s->npus_free == NPUS_PER_SERVER && !s->jobs_running) {
			whole++;
			per_sw[s->switch_index]++;
		}
	}
	for (size_t i = 0; i < c->switch_count; i++)
		sw_fit += per_sw[i] >= 4;
	printf("fill (seed %#x): %u jobs placed, %u sizes skipped (no room), %u completed again, "
	       "in %.1f ms\n",
	       SEED, st.placed, st.skipped, st.completed, usec_between(&a, &b) / 1e3);
	printf("state: %u of %u NPUs allocated (%.1f%%), %u whole servers free, "
	       "%u switches with >= 4 whole free servers\n\n",
	       c->npus_allocated, c->npus_total, 100.0 * c->npus_allocated / c->npus_total, whole,
	       sw_fit);

	printf("%u calls per row, microseconds per call (CLOCK_MONOTONIC)\n", REPS);
	printf("%5s  %-14s %9s %9s %9s   %s\n", "npus", "placer", "p50", "p99", "max", "result");
	printf("-----  -------------- --------- --------- ---------   ------\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (bench_size(c, sizes[i], t, &ratios[i]) < 0) {
			sched_cluster_free(c);
			free(t);
			return 1;
		}
	}
	/* the timer's own cost, for reading the smallest figures */
	for (unsigned i = 0; i < REPS; i++) {
		struct timespec x;

		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_MONOTONIC, &x);
		t[i] = usec_between(&a, &x);
	}
	printf("\ntimer overhead p50: %.3f us; sched_place / first-fit p50: %.0fx (1), %.0fx (8), "
	       "%.0fx (32)\n",
	       stats_of(t, REPS).p50, ratios[0], ratios[1], ratios[2]);
	sched_cluster_free(c);
	free(t);
	return 0;
}
