/* SPDX-License-Identifier: MIT */
/* Cross-file internals of sched/. Not for use outside this folder. */
#ifndef ASCENDFS_SCHED_INTERNAL_H
#define ASCENDFS_SCHED_INTERNAL_H

#include "ascend_sched.h"

/* Sentinel "from" state of a job that is being created. */
#define SCHED_JOB_NONE SCHED_JOB_STATE_COUNT

/*
 * sched_event_add() - append an event (printf-style reason). Never fails: when the ring
 * is full the oldest event is dropped; sequence numbers keep counting.
 */
void sched_event_add(struct sched_cluster *c, uint64_t now_usec, enum sched_event_kind kind,
		     const struct sched_job *j, const char *server, int npu, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/*
 * sched_job_transition() - the one place a job changes state. Checks the transition is
 * legal (assert: an illegal one is a programmer error), sets reason (may be NULL to keep
 * an empty reason), timestamps, versions, and appends the event of @kind.
 */
void sched_job_transition(struct sched_cluster *c, struct sched_job *j,
			  enum sched_job_state to, enum sched_event_kind kind, uint64_t now_usec,
			  const char *reason);

/* sched_alloc_apply() - give @j the NPUs of @slices (stolen array of @count). */
void sched_alloc_apply(struct sched_cluster *c, struct sched_job *j, struct sched_slice *slices,
		       size_t count);

/* sched_alloc_release() - take every NPU back from @j. */
void sched_alloc_release(struct sched_cluster *c, struct sched_job *j);

/* sched_npu_is_placeable() - free, not isolated, health OK or Warning. */
bool sched_npu_is_placeable(const struct sched_npu *n);

/* sched_job_free() - free a job and what it owns (it must hold no NPUs). */
void sched_job_free(struct sched_job *j);

/*
 * sched_type_mask() - bit i set when a job of @npus could run on the i-th server type
 * of the cluster (inventory order; restricted to @type when not NULL). Jobs whose masks
 * do not meet compete for no server.
 */
uint32_t sched_type_mask(const struct sched_cluster *c, unsigned npus,
			 const struct conf_server_type *type);

/*
 * sched_fits_when_idle() - would @npus fit on the servers that are schedulable now if
 * every running job ended? False when cordons, lost servers or isolated NPUs leave too
 * little: such a job waits for capacity that no job's end will bring.
 */
bool sched_fits_when_idle(const struct sched_cluster *c, unsigned npus,
			  const struct conf_server_type *type);

/*
 * sched_event_render_line() - render @e as one compact JSON object into e->line
 * (replacing what was there). Returns 0 or -ENOMEM (e->line left as it was).
 */
int sched_event_render_line(struct sched_event *e);

/* sched_reason() - snprintf into a SCHED_REASON_MAX buffer. */
void sched_reason(char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
