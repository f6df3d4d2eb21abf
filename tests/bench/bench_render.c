/* SPDX-License-Identifier: MIT */
/*
 * bench_render: what a read of a changed rank table or status.json costs the daemon (a
 * render under its lock, issue 16), for a 512-NPU job (64 whole Atlas 800T A2 servers)
 * in inventories of 1,024 and 16,384 servers. Until December 2026 both built jansson
 * values, and the rank table's check of device IPs against every host's address built
 * a hash of the whole inventory: 1.9 ms a read at 16,384 servers.
 *
 * Reference in the same run: jansson parsing the same rank table and dumping it again
 * (JSON_INDENT(2)), the least that building it as jansson values costs.
 * Figures only; nothing is asserted about time (style.md).
 * Usage: bench_render [REPS]   (default 2000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ascend_sched.h"
#include "conf.h"

#define NPUS_PER_SERVER 8
#define JOB_NPUS 512

static double now_usec(void)
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

/* An inventory of @servers Atlas 800T A2 servers under leaf switches of 16. */
static struct sched_cluster *cluster_of(unsigned servers)
{
	struct sched_cluster *c = NULL;
	struct conf_cluster *conf;
	struct conf_error err;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fprintf(f, "cluster:\n  name: bench-render\nresource:\n  total_npu: %u\nservers:\n",
		servers * NPUS_PER_SERVER);
	for (unsigned i = 0; i < servers; i++) {
		fprintf(f, "  - name: node-%05u\n    host_ip: 10.1.%u.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-%u\n    device_ips: [",
			i, i / 250, i % 250 + 1, i / 16);
		for (unsigned d = 0; d < NPUS_PER_SERVER; d++)
			fprintf(f, "%s10.%u.%u.%u", d ? ", " : "", 16 + d, i / 250, i % 250 + 1);
		fprintf(f, "]\n");
	}
	if (fclose(f) != 0 || conf_cluster_parse(text, len, "bench.yaml", &conf, &err) < 0 ||
	    sched_cluster_new(conf, &c) < 0) {
		fprintf(stderr, "bench_render: the inventory: %s\n", err.msg);
		c = NULL;
	}
	free(text);
	return c;
}

typedef int (*render_fn)(const struct sched_cluster *, const struct sched_job *, char **,
			 size_t *);

/* p50 and p99 in microseconds of @reps calls of @fn; its length in *@ret_len. */
static int time_render(const struct sched_cluster *c, const struct sched_job *j, render_fn fn,
		       unsigned reps, double *p50, double *p99, size_t *ret_len)
{
	double *t = calloc(reps, sizeof(*t));

	if (!t)
		return -1;
	for (unsigned i = 0; i < reps; i++) {
		double t0 = now_usec();
		char *text;

		if (fn(c, j, &text, ret_len) < 0) {
			free(t);
			return -1;
		}
		t[i] = now_usec() - t0;
		free(text);
	}
	qsort(t, reps, sizeof(*t), cmp_double);
	*p50 = t[reps / 2];
	*p99 = t[(size_t)((double)reps * 0.99)];
	free(t);
	return 0;
}

/* The reference: jansson parses @text and dumps it again, @reps times. */
static int time_jansson(const char *text, size_t len, unsigned reps, double *p50, double *p99)
{
	double *t = calloc(reps, sizeof(*t));

	if (!t)
		return -1;
	for (unsigned i = 0; i < reps; i++) {
		double t0 = now_usec();
		json_t *v = json_loadb(text, len, 0, NULL);
		char *again = v ? json_dumps(v, JSON_INDENT(2)) : NULL;

		json_decref(v);
		if (!again) {
			free(t);
			return -1;
		}
		free(again);
		t[i] = now_usec() - t0;
	}
	qsort(t, reps, sizeof(*t), cmp_double);
	*p50 = t[reps / 2];
	*p99 = t[(size_t)((double)reps * 0.99)];
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	static const unsigned sizes[] = { 1024, 16384 };
	unsigned reps = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000;

	if (!reps) {
		fprintf(stderr, "usage: bench_render [REPS]\n");
		return 2;
	}
	printf("# renders of a %u-NPU job's files, %u each; us\n", JOB_NPUS, reps);
	printf("%-8s %-34s %9s %9s %9s\n", "servers", "file", "p50", "p99", "bytes");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct sched_cluster *c = cluster_of(sizes[s]);
		struct conf_job_spec *spec = calloc(1, sizeof(*spec));
		char why[SCHED_REASON_MAX], *table;
		struct sched_job *j = NULL;
		double p50, p99;
		size_t len;

		if (!c || !spec)
			return 1;
		spec->name = strdup("big");
		spec->queue = strdup("default");
		spec->npus = spec->npus_min = spec->npus_max = JOB_NPUS;
		spec->launch = CONF_LAUNCH_MSRUN;
		if (!spec->name || !spec->queue ||
		    sched_job_submit(c, spec, 0, 0, 1700000000000000ull, why, &j) < 0) {
			fprintf(stderr, "bench_render: submit: %s\n", why);
			return 1;
		}
		sched_pass_run_owed(c, 1700000001000000ull);
		if (j->state != SCHED_JOB_RUNNING) {
			fprintf(stderr, "bench_render: the job is %s: %s\n",
				sched_job_state_name(j->state), j->reason);
			return 1;
		}
		if (time_render(c, j, sched_render_ranktable, reps, &p50, &p99, &len) < 0)
			return 1;
		printf("%-8u %-34s %9.1f %9.1f %9zu\n", sizes[s], "ranktable.json", p50, p99, len);
		if (time_render(c, j, sched_render_job_status_json, reps, &p50, &p99, &len) < 0)
			return 1;
		printf("%-8u %-34s %9.1f %9.1f %9zu\n", sizes[s], "status.json", p50, p99, len);
		if (sched_render_ranktable(c, j, &table, &len) < 0 ||
		    time_jansson(table, len, reps, &p50, &p99) < 0)
			return 1;
		printf("%-8u %-34s %9.1f %9.1f %9zu\n", sizes[s],
		       "reference: jansson parse+dump table", p50, p99, len);
		free(table);
		sched_cluster_free(c);
	}
	return 0;
}
