/* SPDX-License-Identifier: MIT */
/*
 * Utilization history: what the cluster held, a sample a minute for the last day
 * (ascend_sched.h, "utilization history"). Calls sched_cluster.c's counts and
 * sched_json.c; nothing calls back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "sched_json.h"

bool sched_util_sample(struct sched_cluster *c, uint64_t now_usec)
{
	struct sched_util_sample *s;
	struct sched_npu_counts n;

	if (c->util_last_usec && now_usec < c->util_last_usec + SCHED_UTIL_INTERVAL_USEC)
		return false;
	if (!c->util) {
		c->util = calloc(SCHED_UTIL_SAMPLES, sizeof(*c->util));
		if (!c->util)
			return false;
	}
	if (c->util_count == SCHED_UTIL_SAMPLES) {
		c->util_head = (c->util_head + 1) % SCHED_UTIL_SAMPLES;
		c->util_count--;
	}
	s = &c->util[(c->util_head + c->util_count++) % SCHED_UTIL_SAMPLES];
	memset(s, 0, sizeof(*s));
	sched_npu_count(c, -1, &n);
	s->time_usec = now_usec;
	s->npus_total = n.total;
	s->npus_allocated = n.by_use[SCHED_NPU_ALLOCATED];
	s->npus_isolated = n.by_use[SCHED_NPU_ISOLATED];
	s->npus_unavailable = n.by_use[SCHED_NPU_UNAVAILABLE];
	for (size_t i = 0; i < c->job_count; i++) {
		s->jobs_pending += c->jobs[i]->state == SCHED_JOB_PENDING;
		s->jobs_running += c->jobs[i]->state == SCHED_JOB_RUNNING ||
				   c->jobs[i]->state == SCHED_JOB_RECOVERING;
	}
	c->util_last_usec = now_usec;
	return true;
}

int sched_render_utilization(const struct sched_cluster *c, char **ret, size_t *ret_len)
{
	struct sched_buf b = { 0 };

	for (size_t i = 0; i < c->util_count && !b.err; i++) {
		const struct sched_util_sample *s = &c->util[(c->util_head + i) % SCHED_UTIL_SAMPLES];
		json_t *o = json_object();

		sched_jtime(o, "time", s->time_usec);
		sched_jset(o, "npus_total", json_integer(s->npus_total));
		sched_jset(o, "npus_allocated", json_integer(s->npus_allocated));
		sched_jset(o, "npus_isolated", json_integer(s->npus_isolated));
		sched_jset(o, "npus_unavailable", json_integer(s->npus_unavailable));
		sched_jset(o, "utilization", sched_jratio(s->npus_allocated, s->npus_total));
		sched_jset(o, "jobs_pending", json_integer(s->jobs_pending));
		sched_jset(o, "jobs_running", json_integer(s->jobs_running));
		sched_json_buf_line(&b, o);
	}
	return sched_buf_finish(&b, ret, ret_len);
}
