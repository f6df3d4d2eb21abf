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

/* One row's fields, as printed. */
struct row {
	const char *name, *state, *queue;
	char uid[16], npus[16], age[32];
};

static void row_of(const struct sched_job *j, uint64_t now_usec, struct row *r)
{
	/* what it holds; what it asks for while it holds none */
	unsigned npus = sched_job_total_npus(j);

	if (!npus && j->spec && !sched_job_is_service(j))
		npus = j->spec->npus;
	r->name = j->name;
	r->state = sched_job_state_name(j->state);
	r->queue = j->spec && j->spec->queue ? j->spec->queue : "-";
	snprintf(r->uid, sizeof(r->uid), "%u", (unsigned)j->uid);
	snprintf(r->npus, sizeof(r->npus), "%u", npus);
	elapsed(now_usec > j->submit_usec ? now_usec - j->submit_usec : 0, r->age, sizeof(r->age));
}

static int widest(int w, const char *s)
{
	int n = (int)strlen(s);

	return n > w ? n : w;
}

int sched_render_jobs_table(const struct sched_cluster *c, uint64_t now_usec, char **ret,
			    size_t *ret_len)
{
	struct sched_buf b = { 0 };
	/* each column as wide as its widest field (names and queues are up to 63) */
	int w[6] = { 3, 5, 5, 3, 4, 3 };
	struct row r;

	for (size_t i = 0; i < c->job_count; i++) {
		if (sched_job_state_is_terminal(c->jobs[i]->state))
			continue;
		row_of(c->jobs[i], now_usec, &r);
		w[0] = widest(w[0], r.name);
		w[1] = widest(w[1], r.state);
		w[2] = widest(w[2], r.queue);
		w[3] = widest(w[3], r.uid);
		w[4] = widest(w[4], r.npus);
		w[5] = widest(w[5], r.age);
	}
	sched_buf_printf(&b, "%-*s  %-*s  %-*s  %*s  %*s  %*s  %s\n", w[0], "JOB", w[1], "STATE",
			 w[2], "QUEUE", w[3], "UID", w[4], "NPUS", w[5], "AGE", "REASON");
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];
		char reason[SCHED_REASON_MAX];

		if (sched_job_state_is_terminal(j->state))
			continue;
		row_of(j, now_usec, &r);
		/* a line per job, whatever a reason holds */
		snprintf(reason, sizeof(reason), "%s", j->reason && j->reason[0] ? j->reason : "-");
		for (char *p = reason; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
		sched_buf_printf(&b, "%-*s  %-*s  %-*s  %*s  %*s  %*s  %s\n", w[0], r.name, w[1],
				 r.state, w[2], r.queue, w[3], r.uid, w[4], r.npus, w[5], r.age,
				 reason);
	}
	return sched_buf_finish(&b, ret, ret_len);
}
