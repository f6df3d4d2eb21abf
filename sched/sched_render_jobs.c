/* SPDX-License-Identifier: MIT */
/*
 * cluster/jobs: the active jobs a line each, as Slurm's squeue lists them
 * (ascend_sched.h, sched_render_jobs_table()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sched_internal.h"

/* @usec as Slurm's elapsed time, [days-]hours:minutes:seconds. */
static void elapsed(uint64_t usec, char *buf, size_t len)
{
	uint64_t s = usec / 1000000u;

	if (s >= 86400u)
		snprintf(buf, len, "%" PRIu64 "-%02u:%02u:%02u", s / 86400u,
			 (unsigned)(s % 86400u / 3600u), (unsigned)(s % 3600u / 60u),
			 (unsigned)(s % 60u));
	else
		snprintf(buf, len, "%02u:%02u:%02u", (unsigned)(s / 3600u),
			 (unsigned)(s % 3600u / 60u), (unsigned)(s % 60u));
}

int sched_render_jobs_table(const struct sched_cluster *c, uint64_t now_usec, char **ret,
			    size_t *ret_len)
{
	struct sched_buf b = { 0 };

	sched_buf_printf(&b, "%-24s %-10s %-12s %6s %5s %12s %s\n", "JOB", "STATE", "QUEUE",
			 "UID", "NPUS", "AGE", "REASON");
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];
		char age[32], reason[SCHED_REASON_MAX];
		unsigned npus;

		if (sched_job_state_is_terminal(j->state))
			continue;
		/* what it holds; what it asks for while it holds nothing */
		npus = sched_job_total_npus(j);
		if (!npus && j->spec && !sched_job_is_service(j))
			npus = j->spec->npus;
		elapsed(now_usec > j->submit_usec ? now_usec - j->submit_usec : 0, age, sizeof(age));
		/* a line per job, whatever a reason holds */
		snprintf(reason, sizeof(reason), "%s", j->reason && j->reason[0] ? j->reason : "-");
		for (char *r = reason; *r; r++)
			if ((unsigned char)*r < 0x20)
				*r = ' ';
		sched_buf_printf(&b, "%-24s %-10s %-12s %6u %5u %12s %s\n", j->name,
				 sched_job_state_name(j->state),
				 j->spec && j->spec->queue ? j->spec->queue : "-", (unsigned)j->uid,
				 npus, age, reason);
	}
	return sched_buf_finish(&b, ret, ret_len);
}
