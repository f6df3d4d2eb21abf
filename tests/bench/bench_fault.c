/* SPDX-License-Identifier: MIT */
/*
 * bench_fault: time from a Critical health report to the job's new rank table, inside
 * the daemon's logic (sched_server_report: isolate, recover, re-place; then render the
 * rank table), on a 1,024-server Atlas 800T A2 cluster (8,192 NPUs, 32 leaf switches)
 * half full of 32-NPU jobs. Baseline in the same run: rendering the rank table alone,
 * which every read of ranktable.json costs anyway. Figures only (style.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ascend_sched.h"
#include "conf.h"

#define SERVERS 1024
#define SWITCHES 32
#define JOBS 120 /* 32-NPU jobs: 480 of 1,024 servers */
#define REPS 400

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

static char *cluster_yaml(size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	/* a long hold and a high escalation count: every rep faults a fresh NPU */
	fprintf(f, "cluster:\n  name: bench\n  fault_escalate_count: 0\n"
		   "resource:\n  total_npu: %d\n"
		   "servers:\n",
		SERVERS * 8);
	for (unsigned i = 0; i < SERVERS; i++) {
		fprintf(f, "  - name: node-%04u\n    host_ip: 10.1.%u.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-%02u\n    device_ips: [",
			i, i / 250, i % 250 + 1, i / (SERVERS / SWITCHES));
		for (unsigned d = 0; d < 8; d++)
			fprintf(f, "%s10.%u.%u.%u", d ? ", " : "", 16 + d, i / 250, i % 250 + 1);
		fprintf(f, "]\n");
	}
	fclose(f);
	*ret_len = len;
	return text;
}

static void print_row(const char *what, double *t, size_t n)
{
	qsort(t, n, sizeof(*t), cmp_double);
	printf("%-44s p50 %8.1f us   p99 %8.1f us   max %8.1f us\n", what, t[n / 2],
	       t[(size_t)((double)n * 0.99)], t[n - 1]);
}

int main(void)
{
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_error err;
	uint64_t now = 1700000000000000ull;
	static double fault_t[REPS], render_t[REPS];
	size_t len;
	char *yaml = cluster_yaml(&len), msg[600];

	if (!yaml || conf_cluster_parse(yaml, len, "bench.yaml", &conf, &err) < 0) {
		fprintf(stderr, "bench_fault: %s\n", conf_error_format(&err, msg, sizeof(msg)));
		return 1;
	}
	free(yaml);
	if (sched_cluster_new(conf, &c) < 0)
		return 1;
	for (unsigned k = 0; k < JOBS; k++) {
		struct conf_job_spec *s = calloc(1, sizeof(*s));
		char reason[SCHED_REASON_MAX];

		s->name = malloc(32);
		snprintf(s->name, 32, "job-%03u", k);
		s->queue = strdup("default");
		s->npus = s->npus_min = s->npus_max = 32;
		s->priority = 500;
		s->max_restarts = 1000000;
		if (sched_job_submit(c, s, 1000, 1000, now += 1000, reason, NULL) < 0) {
			fprintf(stderr, "bench_fault: submit: %s\n", reason);
			return 1;
		}
	}
	for (unsigned r = 0; r < REPS; r++) {
		struct sched_job *j = c->jobs[r % JOBS];
		struct conf_health_report rep = { .npu_count = 1 };
		unsigned server = j->slices[r % j->slice_count].server;
		double t0, t1;
		char *text;
		size_t tl;

		rep.npus[0].id = r % 8;
		rep.npus[0].has_level = true;
		rep.npus[0].level = CONF_HEALTH_CRITICAL;
		t0 = mono_usec();
		sched_server_report(c, server, &rep, now += 1000);
		if (sched_render_ranktable(c, j, &text, &tl) < 0)
			return 1;
		t1 = mono_usec();
		free(text);
		fault_t[r] = t1 - t0;
		t0 = mono_usec();
		if (sched_render_ranktable(c, j, &text, &tl) < 0)
			return 1;
		render_t[r] = mono_usec() - t0;
		free(text);
		/* return the NPU so the cluster does not drain over the run */
		sched_server_clear_npu(c, c->servers[server].conf->name, r % 8, now += 1000);
	}
	printf("\nfault to new rank table, %d reps, %d servers, %d running 32-NPU jobs\n", REPS,
	       SERVERS, JOBS);
	print_row("Critical report -> recovered + new table", fault_t, REPS);
	print_row("baseline: render the rank table alone", render_t, REPS);
	printf("ratio (p50): %.1fx; recoveries: %" PRIu64 "\n", fault_t[REPS / 2] / render_t[REPS / 2],
	       c->recoveries);
	sched_cluster_free(c);
	return 0;
}
