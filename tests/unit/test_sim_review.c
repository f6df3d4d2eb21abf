/* SPDX-License-Identifier: MIT */
/*
 * ascend-sim review: figures that come out wrong on small cases one can work out by
 * hand. Each case says what the right figure is and why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched_fixture.h"
#include "sim.h"

static void trace_ok(const char *csv, struct sim_trace *t)
{
	char err[SIM_ERR_MAX] = "";

	if (sim_trace_parse(csv, strlen(csv), "trace.csv", t, err) < 0)
		fail_msg("trace refused: %s", err);
}

static struct sched_cluster *cluster_of_yaml(const char *yaml)
{
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_error err;
	char msg[1024];

	memset(&err, 0, sizeof(err));
	if (conf_cluster_parse(yaml, strlen(yaml), "review.yaml", &conf, &err) < 0)
		fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
	assert_int_equal(sched_cluster_new(conf, &c), 0);
	return c;
}

/*
 * --tp 6 on 8-NPU servers: a 16-NPU job takes two whole servers and ranks 6-11 must
 * straddle them whatever the placement, so that crossing is not "avoidable" and must
 * not turn the goal "no tensor-parallel group across servers where one server could
 * hold it" into NOT met.
 */
static void test_sim_tp_crossing_that_no_placement_avoids(void **state)
{
	struct fx_opts fo = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&fo);
	const struct sim_share whole[] = { { 0, 8 }, { 1, 8 } };
	struct sim_result r;
	struct sim_options o;
	struct sim_trace t;

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,100,16,,\n", &t);
	sim_options_default(&o);
	o.tp = 6;
	assert_int_equal(sim_result_init(&r, "x", &t, c->npus_total), 0);
	sim_acct_placement(&r, &t, &o, c, 0, whole, 2, 1);
	assert_int_equal(r.tp_groups, 3);
	assert_int_equal(r.tp_cross, 1);
	assert_int_equal(r.tp_cross_avoidable, 0);
	sim_result_free(&r);
	sim_trace_free(&t);
	sched_cluster_free(c);
}

/*
 * A2 (8 NPUs) and A3 (16 NPUs) servers: a 24-NPU job can only run on three A2 servers
 * (24 is no multiple of 16), so with --tp 16 its first group must cross two A2
 * servers. The A3 server elsewhere in the cluster does not make that avoidable.
 */
static void test_sim_tp_crossing_judged_by_the_jobs_server_type(void **state)
{
	char *yaml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);
	struct sched_cluster *c;
	const struct sim_share a2[] = { { 0, 8 }, { 1, 8 }, { 2, 8 } };
	char reason[SCHED_REASON_MAX];
	struct sim_result r;
	struct sim_options o;
	struct sim_trace t;

	(void)state;
	fprintf(f, "cluster:\n  name: mixed\n  scheduler_ip: 10.0.0.1\n"
		   "resource:\n  total_npu: 40\n  allow_mix_task: true\nservers:\n");
	for (unsigned i = 0; i < 3; i++) {
		fprintf(f, "  - name: a2-%u\n    host_ip: 10.1.0.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-0\n    device_ips: [",
			i, i + 1);
		for (unsigned d = 0; d < 8; d++)
			fprintf(f, "%s10.%u.0.%u", d ? ", " : "", 16 + d, i + 1);
		fprintf(f, "]\n");
	}
	fprintf(f, "  - name: a3-0\n    host_ip: 10.1.1.1\n    type: atlas900-a3\n"
		   "    switch: leaf-1\n    super_pod: \"p0\"\n    device_ips: [");
	for (unsigned d = 0; d < 16; d++)
		fprintf(f, "%s10.%u.1.1", d ? ", " : "", 16 + d);
	fprintf(f, "]\n");
	assert_int_equal(fclose(f), 0);
	c = cluster_of_yaml(yaml);
	free(yaml);
	/* the premise: 24 NPUs fit the A2 servers and no A3 placement */
	assert_int_equal(sched_check_feasible(c, 24, conf_server_type_find("atlas800t-a2"),
					      reason),
			 0);
	assert_true(sched_check_feasible(c, 24, conf_server_type_find("atlas900-a3"), reason) <
		    0);
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,100,24,,\n", &t);
	sim_options_default(&o);
	o.tp = 16;
	assert_int_equal(sim_result_init(&r, "x", &t, c->npus_total), 0);
	sim_acct_placement(&r, &t, &o, c, 0, a2, 3, 1);
	assert_int_equal(r.tp_groups, 2);
	assert_int_equal(r.tp_cross, 1);
	assert_int_equal(r.tp_cross_avoidable, 0);
	sim_result_free(&r);
	sim_trace_free(&t);
	sched_cluster_free(c);
}

/*
 * The static workflow gives a 1-NPU job a whole 8-NPU server, but its rank table lists
 * one device: a fault on one of the other seven does not kill it (sim.h: "a fault on
 * any NPU of a job kills it"). Over many seeds about 1 in 8 faults should hit it, as
 * under ascendfs; the static engine kills it on every fault on the server.
 */
static void test_sim_static_fault_on_a_device_the_job_does_not_use(void **state)
{
	struct fx_opts fo = { .servers = 1 };
	uint64_t st_hit = 0, st_faults = 0, as_hit = 0, as_faults = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct sched_cluster *view = fx_cluster(&fo);
		struct conf_cluster *conf = NULL;
		struct sim_result st, as;
		struct sim_options o;
		struct sim_trace t;
		struct conf_error err;
		char *yaml = fx_cluster_yaml(&fo), msg[1024], e[SIM_ERR_MAX] = "";

		trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,20000,1,,\n", &t);
		sim_options_default(&o);
		o.seed = seed;
		o.mtbf_sec = 80000; /* 8 NPUs: a fault every ~10000 s */
		o.repair_sec = 1;
		memset(&err, 0, sizeof(err));
		if (conf_cluster_parse(yaml, strlen(yaml), "fixture.yaml", &conf, &err) < 0)
			fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
		free(yaml);
		if (sim_run_static(&t, view, &o, &st, e) < 0)
			fail_msg("static replay: %s", e);
		if (sim_run_ascendfs(&t, conf, &o, &as, e) < 0)
			fail_msg("ascendfs replay: %s", e);
		st_hit += st.faults_hit;
		st_faults += st.faults - st.faults_absorbed;
		as_hit += as.faults_hit;
		as_faults += as.faults - as.faults_absorbed;
		sim_result_free(&st);
		sim_result_free(&as);
		sim_trace_free(&t);
		sched_cluster_free(view);
	}
	print_message("static: %llu of %llu faults hit the job; ascendfs: %llu of %llu\n",
		      (unsigned long long)st_hit, (unsigned long long)st_faults,
		      (unsigned long long)as_hit, (unsigned long long)as_faults);
	assert_true(as_faults > 0 && st_faults > 0);
	assert_true(as_hit * 2 < as_faults);
	assert_true(st_hit * 2 < st_faults);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_tp_crossing_that_no_placement_avoids),
		cmocka_unit_test(test_sim_tp_crossing_judged_by_the_jobs_server_type),
		cmocka_unit_test(test_sim_static_fault_on_a_device_the_job_does_not_use),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
