/* SPDX-License-Identifier: MIT */
/* Cross-file internals of sched/. Not for use outside this folder. */
#ifndef ASCENDFS_SCHED_INTERNAL_H
#define ASCENDFS_SCHED_INTERNAL_H

#include "ascend_sched.h"

/* Sentinel "from" state of a job that is being created. */
#define SCHED_JOB_NONE SCHED_JOB_STATE_COUNT

/*
 * A quota written while resource.enable_quota_limit is false is kept (an admin may stage
 * quotas before turning enforcement on, as Slurm keeps association limits that
 * AccountingStorageEnforce does not enforce yet), but every place that shows it says it
 * has no effect and how to turn it on: the event, queues/<q>/status, the daemon's log.
 */
#define SCHED_QUOTA_OFF_NOTE(c, npus)                                                        \
	((npus) && !(c)->conf->enable_quota_limit ?                                          \
		 "; not enforced: resource.enable_quota_limit is false (set it to true in "  \
		 "the configuration and restart the daemon)" :                               \
		 "")

/*
 * sched_event_add() - append an event (printf-style reason). Never fails: when the ring
 * is full the oldest event is dropped; sequence numbers keep counting.
 */
void sched_event_add(struct sched_cluster *c, uint64_t now_usec, enum sched_event_kind kind,
		     const struct sched_job *j, const char *server, int npu, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/*
 * sched_event_slot() - a new, zeroed event with the next sequence number (the oldest is
 * dropped when the ring is full); the caller fills in the rest. Never fails.
 */
struct sched_event *sched_event_slot(struct sched_cluster *c);

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

/*
 * sched_jobs_append() - add @j to c->jobs (room must have been reserved) and to the
 * name index. sched_jobs_unindex() - take @j out of the index (before it leaves
 * c->jobs).
 */
void sched_jobs_append(struct sched_cluster *c, struct sched_job *j);
void sched_jobs_unindex(struct sched_cluster *c, const struct sched_job *j);

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

/*
 * sched_job_recover() - a fault took NPUs from running job @j: restarts + 1; beyond
 * max_restarts, or with enable_fault_recovery off, the job fails with @why. Otherwise
 * it goes recovering, keeps its healthy servers and replaces the failed ones when whole
 * free servers allow (else a whole new placement), generation + 1, and runs; with no
 * capacity it goes pending with the reason and resumes when capacity returns. While a
 * preemption is in flight (victims stopping) it goes pending at once and the caller's
 * pass re-places it, so it cannot take NPUs the preemptor's reservation needs.
 * An elastic job shrinks (down to npus.min) rather than wait.
 */
void sched_job_recover(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why);

/*
 * sched_job_restart() - a task fault (a process exited non-zero): restarts + 1; beyond
 * max_restarts the job fails with @why; else it stays on its NPUs as a new generation
 * (its processes restart from the newest checkpoint).
 */
void sched_job_restart(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why);

/*
 * sched_replace() - a placement for @j keeping its slices whose @bad entry is false and
 * replacing the others by whole free servers of the same type (same leaf switch first).
 * New array (free()) in topology order with ranks assigned. Nothing is changed.
 * Returns 0, -ENOSPC (not enough whole free servers) or -ENOMEM.
 */
int sched_replace(const struct sched_cluster *c, const struct sched_job *j, const bool *bad,
		  struct sched_slice **ret_slices, size_t *ret_count);

/* sched_pick_port() - MS_SCHED_PORT for @self with rank 0 on server @master. */
unsigned sched_pick_port(const struct sched_cluster *c, const struct sched_job *self,
			 unsigned master);

/*
 * sched_job_begin_generation() - generation + 1, and freeze the checkpoint it resumes
 * from (every process of one generation must load the same one).
 */
void sched_job_begin_generation(struct sched_job *j, uint64_t now_usec);

/*
 * sched_place_now() - sched_place() without the feasibility check (the caller knows the
 * request is legal on this cluster): -ENOSPC with @reason when there is no room now.
 */
int sched_place_now(const struct sched_cluster *c, unsigned npus,
		    const struct conf_server_type *type, struct sched_slice **ret_slices,
		    size_t *ret_count, char *reason);

/* sched_size_is_legal() - @n NPUs on one server of type @t obey its HCCS rule. */
bool sched_size_is_legal(const struct conf_server_type *t, unsigned n);

/*
 * sched_server_can_hold() - could a job of @npus (at most one server) land on server
 * @server now (of @type when not NULL), by the same rules as sched_place()?
 */
bool sched_server_can_hold(const struct sched_cluster *c, unsigned server, unsigned npus,
			   const struct conf_server_type *type);

/* sched_server_is_whole_free() - @server accepts work of @type and all its NPUs are free. */
bool sched_server_is_whole_free(const struct sched_cluster *c, unsigned server,
				const struct conf_server_type *type);

/*
 * sched_place_sizes() - the legal sizes for @j between @lo and @hi NPUs, largest first,
 * on the server types it may use (single-server sizes by HCCS rule, whole-server
 * multiples above, multiples of tp * pp), starting below what is free now; the smallest
 * legal size is always last. Writes at most @max sizes to @out; returns the count.
 */
size_t sched_place_sizes(const struct sched_cluster *c, const struct sched_job *j, unsigned lo,
			 unsigned hi, unsigned *out, size_t max);

/*
 * sched_elastic_min() - the smallest size in [npus_min, npus_max] of @sp that is legal
 * (HCCS rule, whole servers, a multiple of tp * pp) and could ever run on this cluster,
 * on @type when not NULL; 0 when there is none.
 */
unsigned sched_elastic_min(const struct sched_cluster *c, const struct conf_job_spec *sp,
			   const struct conf_server_type *type);

/*
 * sched_job_type() - the server type job @j is restricted to (spec server_type), or NULL
 * for any.
 */
const struct conf_server_type *sched_job_type(const struct sched_cluster *c,
					      const struct sched_job *j);

/*
 * sched_place_job() - place @j now at the largest legal size in [npus_min, @hi]
 * (elastic jobs; others have one size). Same contract as sched_place_now().
 */
int sched_place_job(const struct sched_cluster *c, const struct sched_job *j, unsigned hi,
		    struct sched_slice **ret_slices, size_t *ret_count, char *reason);

/* sched_server_recount() - recompute a server's free NPUs and job count. */
void sched_server_recount(struct sched_server *s);

/* sched_reason() - snprintf into a SCHED_REASON_MAX buffer. */
void sched_reason(char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
