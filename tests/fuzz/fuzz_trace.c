/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: ascend-sim's trace parser (a CSV a user hands the simulator) and the
 * replays behind it. Whatever parses must be sorted, start at time 0, and hold legal
 * values; small traces are then replayed through both engines on four servers with
 * NPU faults, which must end with no job left running, every started job's times in
 * order, and no interruption losing more than a checkpoint interval under ascendfs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sim.h"

static const char cluster_yaml[] =
	"cluster:\n  name: fuzz\nresource:\n  total_npu: 32\n"
	"queues:\n  - name: default\n  - name: research\n    priority: 700\n"
	"servers:\n"
	"  - {name: a2-node-01, host_ip: 10.0.1.1, type: atlas800t-a2, switch: leaf-1}\n"
	"  - {name: a2-node-02, host_ip: 10.0.1.2, type: atlas800t-a2, switch: leaf-1}\n"
	"  - {name: a2-node-03, host_ip: 10.0.1.3, type: atlas800t-a2, switch: leaf-2}\n"
	"  - {name: a2-node-04, host_ip: 10.0.1.4, type: atlas800t-a2, switch: leaf-2}\n";

static struct conf_cluster *conf_new(void)
{
	struct conf_cluster *conf = NULL;
	struct conf_error err;

	if (conf_cluster_parse(cluster_yaml, sizeof(cluster_yaml) - 1, "fuzz.yaml", &conf, &err) <
	    0)
		abort();
	return conf;
}

static void check_result(const struct sim_trace *t, const struct sim_result *r)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct sim_jobrec *j = &r->jobs[i];

		if (j->outcome == SIM_RUNNING || j->running)
			abort(); /* the replay ended with a job still running */
		if (j->first_start_sec != UINT64_MAX && j->first_start_sec < t->jobs[i].submit_sec)
			abort(); /* started before it was submitted */
		if (j->outcome == SIM_DONE && j->end_sec < j->first_start_sec + t->jobs[i].dur_sec)
			abort(); /* finished faster than its run time */
		if (j->lost_fault_npu_sec < 0 || j->lost_preempt_npu_sec < 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sched_cluster *view = NULL;
	struct sim_result st, as;
	struct sim_options o;
	struct sim_trace t;
	char err[SIM_ERR_MAX];
	size_t raised, removed;

	if (sim_trace_parse((const char *)data, size, "fuzz.csv", &t, err) < 0)
		return 0;
	if (t.n == 0 || t.jobs[0].submit_sec != 0)
		abort();
	for (size_t i = 0; i < t.n; i++) {
		const struct sim_tjob *j = &t.jobs[i];

		if ((i && j->submit_sec < t.jobs[i - 1].submit_sec) || j->dur_sec < 1 ||
		    j->npus < 1 || j->priority > 1000 || j->queue >= t.nqueue)
			abort();
	}
	for (size_t q = 0; q < t.nqueue; q++)
		if (!conf_name_is_valid(t.queues[q]))
			abort();
	if (t.n > 64) {
		sim_trace_free(&t);
		return 0; /* the replays are for small traces: keep each run short */
	}
	if (sched_cluster_new(conf_new(), &view) < 0 ||
	    sim_trace_fit(&t, view, &raised, &removed) < 0)
		abort();
	sim_options_default(&o);
	o.mtbf_sec = 500 * 3600;
	o.repair_sec = 3600;
	o.restart_cost_sec = 60;
	o.max_restarts = 5;
	if (t.n) {
		if (sim_run_static(&t, view, &o, &st, err) < 0 ||
		    sim_run_ascendfs(&t, conf_new(), &o, &as, err) < 0)
			abort();
		check_result(&t, &st);
		check_result(&t, &as);
		if (as.interruptions_over_bound)
			abort();
		sim_result_free(&st);
		sim_result_free(&as);
	}
	sched_cluster_free(view);
	sim_trace_free(&t);
	return 0;
}
