/* SPDX-License-Identifier: MIT */
/*
 * A job's history: one record per generation (where it ran, from when to when, how it
 * ended and why). Slurm's sacct keeps the same per step (NodeList, Start, End, State,
 * ExitCode); the words of `end` are its State names in lowercase. Records are written
 * from the one place a job changes state (sched_job_transition), so no path that starts
 * or ends a generation can skip them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

static const char *const run_end_names[SCHED_RUN_END_COUNT] = {
	[SCHED_RUN_OPEN] = "running",
	[SCHED_RUN_COMPLETED] = "completed",
	[SCHED_RUN_FAILED] = "failed",
	[SCHED_RUN_NODE_FAIL] = "node_fail",
	[SCHED_RUN_PREEMPTED] = "preempted",
	[SCHED_RUN_TIMEOUT] = "timeout",
	[SCHED_RUN_CANCELLED] = "cancelled",
	[SCHED_RUN_RESIZED] = "resized",
	[SCHED_RUN_REQUEUED] = "requeued",
};

const char *sched_run_end_name(enum sched_run_end e)
{
	if ((unsigned)e >= SCHED_RUN_END_COUNT)
		return "unknown";
	return run_end_names[e];
}

int sched_run_end_from_name(const char *name)
{
	for (int e = 0; name && e < SCHED_RUN_END_COUNT; e++)
		if (strcmp(run_end_names[e], name) == 0)
			return e;
	return -1;
}

void sched_job_run_release(struct sched_job_run *r)
{
	free(r->reason);
	free(r->slices);
	memset(r, 0, sizeof(*r));
}

void sched_history_free(struct sched_job *j)
{
	for (size_t i = 0; i < j->run_count; i++)
		sched_job_run_release(&j->runs[i]);
	free(j->runs);
	j->runs = NULL;
	j->run_count = 0;
}

/* The record of the generation that has not ended yet, or NULL. */
static struct sched_job_run *open_run(struct sched_job *j)
{
	struct sched_job_run *r = j->run_count ? &j->runs[j->run_count - 1] : NULL;

	return r && !r->end_usec ? r : NULL;
}

uint64_t sched_run_npu_usec(const struct sched_job_run *r, uint64_t now_usec)
{
	uint64_t end = r->end_usec ? r->end_usec : now_usec;
	unsigned n = 0;

	for (size_t k = 0; k < r->slice_count; k++)
		n += r->slices[k].npu_count;
	return end > r->start_usec ? (uint64_t)n * (end - r->start_usec) : 0;
}

void sched_run_drop(struct sched_job *j, struct sched_job_run *r)
{
	j->dropped_npu_usec += sched_run_npu_usec(r, r->end_usec);
	j->dropped_faults += r->end == SCHED_RUN_NODE_FAIL;
	sched_job_run_release(r);
}

/* The slot for a new record: the array grows to SCHED_JOB_RUNS_MAX, then the oldest
 * record after the first makes room (the first start stays). NULL without memory. */
static struct sched_job_run *new_run(struct sched_job *j)
{
	uint64_t number = j->run_count ? j->runs[j->run_count - 1].number + 1 : 0;

	if (j->run_count == SCHED_JOB_RUNS_MAX) {
		sched_run_drop(j, &j->runs[1]);
		memmove(&j->runs[1], &j->runs[2],
			(SCHED_JOB_RUNS_MAX - 2) * sizeof(j->runs[0]));
		j->run_count--;
		j->runs_dropped++;
	} else {
		struct sched_job_run *n = realloc(j->runs, (j->run_count + 1) * sizeof(*n));

		if (!n)
			return NULL;
		j->runs = n;
	}
	memset(&j->runs[j->run_count], 0, sizeof(j->runs[0]));
	j->runs[j->run_count].number = number;
	return &j->runs[j->run_count++];
}

/* Open the record of @j's current generation on its current placement. */
static void begin_run(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	struct sched_run_slice *sl = calloc(j->slice_count ? j->slice_count : 1, sizeof(*sl));
	struct sched_job_run *r = sl ? new_run(j) : NULL;

	if (!r) {
		/* out of memory: the history misses this generation, the job runs on */
		free(sl);
		return;
	}
	for (size_t i = 0; i < j->slice_count; i++) {
		const struct sched_slice *s = &j->slices[i];

		snprintf(sl[i].server, sizeof(sl[i].server), "%s",
			 c->servers[s->server].conf->name);
		sl[i].npu_count = s->npu_count;
		sl[i].first_rank = s->first_rank;
		memcpy(sl[i].device_ids, s->device_ids, sizeof(sl[i].device_ids));
	}
	r->generation = j->generation;
	r->start_usec = j->generation_usec ? j->generation_usec : now_usec;
	r->slices = sl;
	r->slice_count = j->slice_count;
}

static void set_end(struct sched_job_run *r, enum sched_run_end end, const char *reason)
{
	char *copy = strdup(reason ? reason : "");

	r->end = end;
	if (copy) {
		free(r->reason);
		r->reason = copy;
	}
}

static enum sched_run_end end_of_state(enum sched_job_state to, enum sched_run_end other)
{
	switch (to) {
	case SCHED_JOB_COMPLETED:
		return SCHED_RUN_COMPLETED;
	case SCHED_JOB_FAILED:
		return SCHED_RUN_FAILED;
	case SCHED_JOB_CANCELLED:
		return SCHED_RUN_CANCELLED;
	case SCHED_JOB_TIMEOUT:
		return SCHED_RUN_TIMEOUT;
	default:
		return other;
	}
}

void sched_history_note(struct sched_cluster *c, struct sched_job *j, enum sched_job_state from,
			enum sched_job_state to, enum sched_event_kind kind, uint64_t now_usec)
{
	struct sched_job_run *r = open_run(j);

	if (r && to == SCHED_JOB_STOPPING &&
	    (from == SCHED_JOB_RUNNING ||
	     (from == SCHED_JOB_RECOVERING &&
	      (kind == SCHED_EV_REQUEUED || kind == SCHED_EV_RESIZED)))) {
		/* its processes are being stopped: the cause is known, the end is not */
		enum sched_run_end e = SCHED_RUN_PREEMPTED;

		if (kind == SCHED_EV_REQUEUED) /* sched_job_requeue() */
			e = SCHED_RUN_REQUEUED;
		else if (kind == SCHED_EV_RESIZED) /* sched_job_resize() */
			e = SCHED_RUN_RESIZED;
		else if (j->stop_to == SCHED_JOB_TIMEOUT || kind == SCHED_EV_TIMEOUT)
			e = SCHED_RUN_TIMEOUT;
		else if (j->stop_to == SCHED_JOB_CANCELLED || kind == SCHED_EV_CANCELLED)
			e = SCHED_RUN_CANCELLED;
		else if (j->stop_to == SCHED_JOB_COMPLETED || kind == SCHED_EV_COMPLETED)
			e = SCHED_RUN_COMPLETED;
		set_end(r, e, j->reason);
		return;
	}
	if (r && from == SCHED_JOB_STOPPING) {
		if (sched_job_state_is_terminal(to) || r->end == SCHED_RUN_OPEN)
			set_end(r, end_of_state(to, SCHED_RUN_PREEMPTED), j->reason);
		r->end_usec = now_usec;
		r = NULL;
	} else if (r && from == SCHED_JOB_RUNNING && to == SCHED_JOB_RECOVERING &&
		   j->ladder.active && (j->ladder.strategy == CONF_RECOVERY_IN_PLACE ||
					j->ladder.strategy == CONF_RECOVERY_RETRY)) {
		/* an in-place restart or a retry: the generation runs on, its record stays
		 * open */
		return;
	} else if (r && from == SCHED_JOB_RECOVERING && to == SCHED_JOB_RUNNING &&
		   r->generation == j->generation) {
		/* resumed in place: the exit that opened the step did not end the generation */
		r->has_exit = false;
		r->exit_code = 0;
		return;
	} else if (r && from == SCHED_JOB_RECOVERING && to != SCHED_JOB_STOPPING) {
		/* an in-place restart that fell back: the generation ended with the fault */
		set_end(r, end_of_state(to, r->has_exit && r->exit_code != 0 ?
						    SCHED_RUN_FAILED : SCHED_RUN_NODE_FAIL),
			j->reason);
		r->end_usec = now_usec;
		r = NULL;
	} else if (r && from == SCHED_JOB_RUNNING && to != SCHED_JOB_RUNNING) {
		enum sched_run_end e = SCHED_RUN_REQUEUED;

		if (to == SCHED_JOB_RECOVERING)
			e = r->has_exit && r->exit_code != 0 ? SCHED_RUN_FAILED :
							       SCHED_RUN_NODE_FAIL;
		else if (to == SCHED_JOB_PENDING && kind == SCHED_EV_PREEMPTED)
			e = SCHED_RUN_PREEMPTED;
		set_end(r, end_of_state(to, e), j->reason);
		r->end_usec = now_usec;
		r = NULL;
	} else if (r && to == SCHED_JOB_RUNNING && r->generation != j->generation) {
		/* running -> running with a new generation: an elastic resize, or an
		 * instance a drain moved (sched_disrupt.c) */
		set_end(r, kind == SCHED_EV_MOVED ? SCHED_RUN_REQUEUED : SCHED_RUN_RESIZED,
			j->reason);
		r->end_usec = now_usec;
		r = NULL;
	}
	if (to == SCHED_JOB_RUNNING && !r && j->slice_count)
		begin_run(c, j, now_usec);
}

void sched_history_note_exit(struct sched_job *j, int code)
{
	struct sched_job_run *r = open_run(j);

	if (!r || (r->has_exit && r->exit_code != 0))
		return; /* the first failure is the one that ended the generation */
	r->has_exit = true;
	r->exit_code = code;
}

void sched_history_restored(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	const struct sched_job_run *last = j->run_count ? &j->runs[j->run_count - 1] : NULL;

	if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_STOPPING)
		return;
	if (!last || last->generation != j->generation)
		begin_run(c, j, now_usec);
}
