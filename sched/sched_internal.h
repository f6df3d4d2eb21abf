/* SPDX-License-Identifier: MIT */
/* Cross-file internals of sched/. Not for use outside this folder. */
#ifndef ASCENDFS_SCHED_INTERNAL_H
#define ASCENDFS_SCHED_INTERNAL_H

#include <jansson.h>

#include "ascend_sched.h"

/*
 * sched_cluster_changed() - something the views or the pass depend on changed outside a
 * job record: bump c->version (readers' caches) and c->mutations (the kept pass,
 * sched_pass.c). Use it, never c->version++, in sched/.
 */
static inline void sched_cluster_changed(struct sched_cluster *c)
{
	c->version++;
	c->mutations++;
}

/*
 * sched_pass_absorb() - the changes since c->mutations was @mark are new submissions
 * only (a job entered the pending state, with its records and events): when the kept
 * pass (sched_pass.c) was valid at @mark it stays valid, and its next resume gives those
 * jobs their turn. Call it only for that, or for a new draft (which no pass looks at). sched_pass_kept_free() - drop the kept pass
 * (sched_cluster_free, or incremental passes turned off).
 */
void sched_pass_absorb(struct sched_cluster *c, uint64_t mark);
void sched_pass_kept_free(struct sched_cluster *c);

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
 * sched_event_put() - append an event with the next sequence number and these fields
 * (strings borrowed, copied into the event's one allocation; NULL means ""; @reason cut
 * at SCHED_REASON_MAX - 1 bytes; @state static or NULL; @line its rendered JSON line,
 * rendered here when NULL). The oldest event is dropped when the ring is full. Never
 * fails: without memory the event is kept without its line (and with "" strings).
 */
void sched_event_put(struct sched_cluster *c, uint64_t time_usec, enum sched_event_kind kind,
		     const char *job, const char *server, int npu, const char *state,
		     const char *reason, const char *line);

/*
 * sched_job_transition() - the one place a job changes state. Checks the transition is
 * legal (assert: an illegal one is a programmer error), sets reason (may be NULL to keep
 * an empty reason), timestamps, versions, and appends the event of @kind.
 */
void sched_job_transition(struct sched_cluster *c, struct sched_job *j,
			  enum sched_job_state to, enum sched_event_kind kind, uint64_t now_usec,
			  const char *reason);

/*
 * sched_job_set_pending_reason() - pending job @j waits on, for the new @reason a pass
 * gave it: sched_job_transition() to pending, but the record is not put on the store's
 * dirty list for that (its files are, for the notifier). A reason a pass gives, the
 * first pass after a restore gives again, and one decision (who is first in line for a
 * type of server) can rename the reason of every job waiting behind it: 10,000 of them
 * at once, which must not cost 10,000 record writes. Whatever else changes in the job
 * later writes its record, reason and all.
 */
void sched_job_set_pending_reason(struct sched_cluster *c, struct sched_job *j,
				  uint64_t now_usec, const char *reason);

/*
 * sched_job_subject() - until sched_job_subject(c, NULL, NULL, -1): the events of @j
 * that sched_job_transition() adds name server @server (borrowed, must outlive the
 * subject) and NPU @npu (-1 = none), because their reasons do (a fault's recovery).
 */
void sched_job_subject(struct sched_cluster *c, const struct sched_job *j, const char *server,
		       int npu);

/*
 * sched_npu_set_isolation() - @n's isolation becomes @i (and isolated follows); when an
 * NPU is isolated is sched_health.c's rule (and sched_ladder.c's for a failed retry).
 * The caller recounts its server (sched_server_recount()).
 */
void sched_npu_set_isolation(struct sched_npu *n, enum sched_isolation i);

/* sched_alloc_apply() - give @j the NPUs of @slices (stolen array of @count). */
void sched_alloc_apply(struct sched_cluster *c, struct sched_job *j, struct sched_slice *slices,
		       size_t count);

/*
 * sched_stop_overhead_usec() - how long a stop may take at most: the agent notices within
 * one report interval (fault_check_interval), then SIGTERM, stop_grace_period, SIGKILL.
 */
uint64_t sched_stop_overhead_usec(const struct sched_cluster *c);

/*
 * sched_job_is_held() - is pending job @j passed by: held (hold_kind) or waiting for the
 * jobs its `after:` names (deps_waiting), or an array's record (pending only while it
 * waits for its `after:`; its elements are placed, never it)? Such a job is not in the
 * pending order, gets no reservation and preempts nobody.
 */
static inline bool sched_job_is_held(const struct sched_job *j)
{
	return j->hold_kind || j->deps_waiting || j->array_record;
}

/* ---- job dependencies (sched_deps.c) ---- */

/*
 * sched_deps_check() - may a job with @spec's `after:` be submitted now? Each job it
 * names must exist (not a draft, not a service), and one it must see complete must not
 * have ended otherwise. Returns 0 or -EINVAL with @reason ("after: ...").
 */
int sched_deps_check(struct sched_cluster *c, const struct conf_job_spec *spec,
		     char *reason);

/*
 * sched_deps_prepare() - the dependencies of @spec as the cluster has them now, before
 * the job's record is made (which may drop the oldest ended record, one it names): one
 * per spec->after entry, new (calloc), or NULL (none, or out of memory).
 * sched_deps_attach() - job @j was admitted pending with an `after:`: @deps (stolen,
 * from sched_deps_prepare()) become its; it waits for those not met (out of the
 * pending order, its reason says for what, a "dependency" event), or (a record it
 * waited for gone since) it is cancelled. Returns 0 or -ENOMEM (@deps NULL).
 */
struct sched_dep *sched_deps_prepare(struct sched_cluster *c, const struct conf_job_spec *spec);
int sched_deps_attach(struct sched_cluster *c, struct sched_job *j, struct sched_dep *deps,
		      uint64_t now_usec);

/*
 * sched_deps_restored() - every record is loaded (sched_restore_finish()): count who
 * waits for whom, and settle what ended while they loaded (sched_job_load() sets
 * deps_loading, under which an end only notes that there is something to look at).
 */
void sched_deps_restored(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_deps_job_ended() - job @j reached a terminal state (sched_job_transition()): the
 * jobs waiting for it go on (into the pending order once nothing else holds them) or,
 * waiting for it to complete when it did not, are cancelled, and so down their chains.
 */
void sched_deps_job_ended(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec);

/*
 * sched_deps_restore() - @j's dependencies as saved (its spec restored): @count serials
 * and met flags (the spec's after_count of them); a job restored in @state pending
 * waits for those not met (sched_jobs_append() counts it in deps_jobs). Returns 0,
 * -EINVAL (a count that does not match the spec) or -ENOMEM.
 */
int sched_deps_restore(struct sched_job *j, enum sched_job_state state,
		       const uint64_t *serials, const bool *met, unsigned count);

/* sched_dep_state() - dependency @k of @j: "met", the state of the job it waits for, or
 * "gone" (its record was dropped). Static string. */
const char *sched_dep_state(const struct sched_cluster *c, const struct sched_job *j,
			    unsigned k);

/*
 * The pending jobs of each queue in service order (priority, then queue_seq), kept
 * between passes so that a pass neither sweeps every job nor sorts (sched_pend_order.c).
 * sched_pend_order_note() - job @j entered (@entered) or left the pending state; called
 * by sched_job_transition(), and by sched_control.c for a pending job held, released or
 * given a new priority (a held job is not in the order). sched_pend_order_invalidate() - a job became or
 * stopped being pending without a transition (a record restored or dropped): the next
 * pass rebuilds the order from the jobs. sched_pend_order_free() - at sched_cluster_free.
 * sched_pend_order_check() - does the kept order equal a fresh sort of the pending jobs?
 * 0, or -EINVAL with @reason (SCHED_REASON_MAX) filled; for sched_check_invariants().
 */
void sched_pend_order_note(struct sched_cluster *c, struct sched_job *j, bool entered);

/*
 * sched_job_stop_for() - stop running @j towards @to (a terminal state, or pending for a
 * requeue) for @why (event @kind), the wait said in its reason. A server that has never
 * reported has no agent: nothing started processes there that anything would stop or
 * report gone, so its slice is gone at once (with no agent anywhere, the job ends at
 * once, as before agents said what runs). The caller then calls
 * sched_job_stop_check_gone().
 */
void sched_job_stop_for(struct sched_cluster *c, struct sched_job *j, enum sched_job_state to,
			enum sched_event_kind kind, uint64_t now_usec, const char *why);

/*
 * sched_account_note() - job @j entered terminal state @j->state at @now_usec (called by
 * sched_job_transition() after the history closed its generation): append its
 * accounting record. Never fails: without memory the record is not kept (counted in
 * c->acct_lost). sched_account_free() - at sched_cluster_free().
 */
void sched_account_note(struct sched_cluster *c, const struct sched_job *j, uint64_t now_usec);
void sched_account_free(struct sched_cluster *c);

/*
 * sched_run_drop() - history record @r of @j leaves the kept ones (more generations than
 * SCHED_JOB_RUNS_MAX): what accounting needs of it is added up in @j first.
 */
void sched_run_drop(struct sched_job *j, struct sched_job_run *r);

/* sched_run_npu_usec() - NPUs x microseconds of closed record @r (@now_usec for an open
 * one). */
uint64_t sched_run_npu_usec(const struct sched_job_run *r, uint64_t now_usec);

/* sched_job_hold_reason() - held @j's pending reason (who held it, how to release it). */
void sched_job_hold_reason(const struct sched_job *j, char *reason);

/*
 * sched_job_for_owner() - job @name, when @uid is its owner or root: 0 and *@ret
 * (borrowed), -ENOENT or -EPERM.
 */
int sched_job_for_owner(struct sched_cluster *c, const char *name, uid_t uid,
			struct sched_job **ret);

/*
 * sched_job_caps_check() - is @spec within queue @q's job caps (max_priority, max_npus,
 * max_time_limit) for @uid? Root and operators (@is_operator) may exceed them. 0, or
 * -EACCES with @reason naming the cap and the fix (sched_job.c, issue 14).
 */
int sched_job_caps_check(const struct sched_cluster *c, const struct conf_queue *q,
			 const struct conf_job_spec *spec, uid_t uid, bool is_operator,
			 char *reason);
void sched_pend_order_invalidate(struct sched_cluster *c);
void sched_pend_order_free(struct sched_cluster *c);
int sched_pend_order_check(const struct sched_cluster *c, char *reason);

/*
 * sched_job_begin_stop() - running @j goes stopping towards @to (pending for a
 * preemption victim, timeout, cancelled, completed, failed), with event @kind and
 * @reason; its NPUs stay held until sched_job_finish_stop(). Slices are marked not gone.
 */
void sched_job_begin_stop(struct sched_cluster *c, struct sched_job *j, enum sched_job_state to,
			  enum sched_event_kind kind, uint64_t now_usec, const char *reason);

/*
 * sched_job_finish_stop() - stopping @j releases its NPUs and ends in its stop_to
 * (cancelled when stop_cancelled); @gone: its processes were reported gone (else the
 * deadline passed). A stop_forget record is then dropped: returns true when @j was freed
 * (the caller's index into c->jobs now names the next job). Runs no pass.
 */
bool sched_job_finish_stop(struct sched_cluster *c, struct sched_job *j, bool gone,
			   uint64_t now_usec);

/*
 * sched_job_stop_check_gone() - if every slice of stopping @j is gone, finish the stop
 * (sched_job_finish_stop with gone). Returns 0 (still stopping), 1 (finished) or 2
 * (finished and the record dropped: @j is freed). Runs no pass.
 */
int sched_job_stop_check_gone(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec);

/*
 * sched_job_fail_stop() - running @j fails for @why (borrowed): it goes stopping towards
 * failed, holding its NPUs until its processes are gone (the others of a job whose one
 * process failed, or whose server faulted, run on). Runs no pass.
 */
void sched_job_fail_stop(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			 const char *why);

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

/* sched_holds_free() - free every sched_hold of @c (the cluster is being freed). */
void sched_holds_free(struct sched_cluster *c);
/* sched_holds_check() - 0 when every hold of @c is on its list and in its index once and
 * hold_count counts them, else -EUCLEAN with @reason (sched_check_invariants()). */
int sched_holds_check(const struct sched_cluster *c, char *reason);

/*
 * sched_job_alloc() - a zeroed job record on a cache line of its own start, so the
 * fields a pass reads of every waiting job (the first 64 bytes) are one line; NULL
 * without memory. Freed by sched_job_free() (free()).
 */
struct sched_job *sched_job_alloc(void);

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
 * sched_event_render_line() - @e (its fields; e->line is not read) as one compact JSON
 * object: a new string (free()) of *ret_len bytes, with room for @extra bytes after its
 * NUL. NULL without memory.
 */
char *sched_event_render_line(const struct sched_event *e, size_t extra, size_t *ret_len);

/*
 * Job-level recovery, the ladder's last rung (sched_recover.c); the ladder
 * (sched_ladder.c: sched_job_recover(), sched_job_restart()) calls these for a job that
 * is running or, after an earlier rung, recovering.
 *
 * sched_recover_job_level() - a fault took NPUs from @j: restarts + 1; beyond
 * max_restarts, or with enable_fault_recovery off, the job fails with @why. Otherwise
 * it goes recovering, keeps its healthy servers and replaces the failed ones (those
 * sched_slice_is_bad() says, and server index @also_bad unless -1) when whole free
 * servers allow (else a whole new placement), generation + 1, and runs; with no
 * capacity it goes pending with the reason and resumes when capacity returns. While a
 * preemption is in flight (victims stopping) it goes pending at once and the caller's
 * pass re-places it, so it cannot take NPUs the preemptor's reservation needs.
 * An elastic job shrinks (down to npus.min) rather than wait.
 */
void sched_recover_job_level(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			     const char *why, int also_bad);

/*
 * sched_recover_preemption_waits() - is a preempted job still stopping, for a preemptor,
 * on servers of a type @j can use? Its free NPUs are then the preemptor's: a recovery
 * must not take them outside the pass.
 */
bool sched_recover_preemption_waits(const struct sched_cluster *c, const struct sched_job *j);

/*
 * sched_restart_job_level() - a task fault (a process exited non-zero on server index
 * @server, or -1): restarts + 1; beyond max_restarts the job fails with @why; else it
 * stays on its NPUs as a new generation (its processes restart from the newest
 * checkpoint). When @server is under suspicion (sched_server_is_suspect()) the exit is
 * taken for that server's fault: the job recovers as from a fault
 * (sched_recover_job_level() rules, counting included), off that server when a clean one
 * can take its share.
 */
void sched_restart_job_level(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			     const char *why, int server);

/* sched_slice_is_bad() - is @sl unusable now (its server lost, or one of its NPUs
 * isolated by a fault, not an Alarm)? */
bool sched_slice_is_bad(const struct sched_cluster *c, const struct sched_slice *sl);

/*
 * The recovery ladder (sched_ladder.c, issue 17). A fault walks the job's spec->recovery
 * list: the first strategy that applies is used, and a step that fails falls back to
 * the next one. Every step is an event (SCHED_EV_RECOVERY) with its reason.
 *
 * sched_job_recover() - a fault (an NPU isolated, a server lost) took NPUs from @j,
 * which is running (anything else is ignored), or one of its servers failed while a
 * step of its ladder waits (that step's processes there are no longer waited for).
 */
void sched_job_recover(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why);

/*
 * sched_job_restart() - a task fault: process @process of @j's generation (index as
 * sched_job_process_index() gives, or -1) exited non-zero on server index @server
 * (or -1). Walks the ladder as sched_job_recover() does; job-level is
 * sched_restart_job_level().
 */
void sched_job_restart(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why, int server, long process);

/*
 * sched_ladder_process_gone() - process @process of @j's generation exited with @code
 * while a step of its ladder waits: a dump no longer waits for it; an in-place restart
 * falls back (the restarted process failed again, or a survivor's state is gone).
 */
void sched_ladder_process_gone(struct sched_cluster *c, struct sched_job *j, size_t process,
			       int code, uint64_t now_usec);

/* sched_ladder_release() - forget @j's step in progress, if any (the job is stopping,
 * cancelled or freed): what it owned is freed, the outcome kept. */
void sched_ladder_release(struct sched_cluster *c, struct sched_job *j);

/*
 * sched_job_retry_applies() - would a transient fault of an NPU of running @j (its code
 * in retry_fault_codes) be recomputed by @j's retry rung? Its ladder names retry, the
 * cluster allows it, fault recovery is on, its processes have started, and at least one
 * of them runs on a server with an agent to answer. False (and @why, @why_len bytes,
 * says why) otherwise: the fault is then handled as any fault (the NPU isolated).
 */
bool sched_job_retry_applies(const struct sched_cluster *c, const struct sched_job *j,
			     char *why, size_t why_len);

/*
 * sched_job_retry() - a transient fault (@why) of an NPU of running @j, for which
 * sched_job_retry_applies() said yes: the job's ladder starts at its retry rung (every
 * process drops the step in flight, pauses and recomputes it, the NPU in service); a
 * failure of it walks on to the next rungs.
 */
void sched_job_retry(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		     const char *why);

/* sched_ladder_free() - free everything @j's ladder owns (sched_job_free()). */
void sched_ladder_free(struct sched_ladder *l);

/*
 * sched_ladder_lists() - is slice @slice of @j listed for its agent while a step of the
 * ladder waits (the job is recovering): its server did not fail, so its processes run on
 * to answer.
 */
bool sched_ladder_lists(const struct sched_cluster *c, const struct sched_job *j,
			size_t slice);

/* sched_ladder_save() - @j's ladder as a JSON object (new reference), NULL on ENOMEM. */
json_t *sched_ladder_save(const struct sched_job *j);

/*
 * sched_ladder_load() - restore @j's ladder from @o (a record's "ladder"; NULL: a
 * record saved before the ladder, nothing to do), after @j's spec. A step in progress
 * keeps its saved began_usec and deadline_usec (the caller moves them to this daemon's
 * clock) and does not count yet: sched_ladder_restored() follows once the job's state
 * and placement are restored. Returns 0, -EINVAL (malformed) or -ENOMEM.
 */
int sched_ladder_load(struct sched_cluster *c, struct sched_job *j, const json_t *o);

/*
 * sched_ladder_restored() - @j's state and placement are restored: a job recovering
 * waits on its step (counted in c->ladder_active), or, when the record had no usable
 * step (none saved, another placement), one that falls back at @now_usec's tick;
 * any other job keeps no step.
 */
void sched_ladder_restored(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec);

/* sched_iso_time() - @usec (wall clock) as "2025-01-31T12:00:00.123Z" into @out; "" for 0
 * (sched_json.c). */
void sched_iso_time(uint64_t usec, char *out, size_t len);

/*
 * sched_job_process_count() - how many processes a generation of @j has: one per
 * server for msrun, one per rank for per-rank.
 */
size_t sched_job_process_count(const struct sched_job *j);

/* sched_job_process_slice() - the slice of @j (placed) holding process @idx
 * (sched_job_process_index()). */
size_t sched_job_process_slice(const struct sched_job *j, size_t idx);

/*
 * sched_job_process_index() - the index (0 to sched_job_process_count() - 1) of the
 * process of @j on server @server (a name) with rank @rank (per-rank; < 0 for msrun),
 * into *ret. Returns 0, or -EINVAL with @reason (the server holds no part of the job,
 * the rank is not on it).
 */
int sched_job_process_index(const struct sched_cluster *c, const struct sched_job *j,
			    const char *server, int rank, size_t *ret, char *reason);

/*
 * sched_job_process_exited() - has process @idx of @j's generation exited (with any
 * status; one started again in place since counts as running)?
 */
bool sched_job_process_exited(const struct sched_job *j, size_t idx);

/*
 * sched_job_keep_finished() - process-level recovery (sched_ladder.c): in @j's new
 * generation, the processes of slices @replaced leaves (j->slice_count entries) that
 * had finished with status 0 (@ok: the older generation's exited_ok, one entry per
 * process, or NULL for none) stay finished: their agents will not report them again.
 * Returns 0 or -ENOMEM (the generation then knows of no exit).
 */
int sched_job_keep_finished(struct sched_job *j, const bool *ok, const bool *replaced);

/*
 * sched_replace() - a placement for @j keeping its slices whose @bad entry is false and
 * replacing the others by whole free servers of the same type (first as many under each
 * leaf switch as failed there, then under a switch the job keeps, then any; clean
 * servers before suspect ones).
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
 * from (every process of one generation must load the same one). With
 * c->scan_resume_at_start and a checkpoint_dir the generation waits for the embedding
 * program's scan (resume_scan_pending; c->resume_scan_wanted set).
 */
void sched_job_begin_generation(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec);

/*
 * sched_job_set_resume_scan_pending() - set j->resume_scan_pending to @pending, and keep
 * @j on the cluster's list of waiting generations (resume_wait_head) exactly while it
 * is set. @j must be in c->jobs (sched_jobs_append() calls it for a restored job).
 * Every write of the flag passes here, so the tick looks at the waiting jobs only.
 */
void sched_job_set_resume_scan_pending(struct sched_cluster *c, struct sched_job *j,
				       bool pending);

/*
 * sched_job_resume_scan_expire() - end the scan wait of every generation that has
 * waited SCHED_RESUME_SCAN_TIMEOUT_SEC: it starts with the newest checkpoint known
 * (sched_tick()). Returns how many. O(waiting generations), not O(jobs).
 */
unsigned sched_job_resume_scan_expire(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_place_now() - sched_place() without the feasibility check (the caller knows the
 * request is legal on this cluster): -ENOSPC with @reason when there is no room now.
 * @stages: the pipeline stages the job's ranks form (sched_job_stages(); 1 = none): a
 * job of whole servers spread over leaf switches takes whole stages from each switch
 * when it can, so that no stage straddles the spine.
 */
int sched_place_now(const struct sched_cluster *c, unsigned npus,
		    const struct conf_server_type *type, unsigned stages,
		    struct sched_slice **ret_slices, size_t *ret_count, char *reason);

/* sched_job_stages() - the pipeline stages of @j's ranks: its spec's parallel.pp, 1 when
 * not given. */
unsigned sched_job_stages(const struct sched_job *j);

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
 * multiples above, multiples of tp * cp * pp * ep), starting below what is free now; the smallest
 * legal size is always last. Writes at most @max sizes to @out; returns the count.
 */
size_t sched_place_sizes(const struct sched_cluster *c, const struct sched_job *j, unsigned lo,
			 unsigned hi, unsigned *out, size_t max);

/*
 * sched_elastic_min() - the smallest size in [npus_min, npus_max] of @sp that is legal
 * (HCCS rule, whole servers, a multiple of tp * cp * pp * ep) and could ever run on this cluster,
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
 * (elastic jobs; others have one size). Same contract as sched_place_now(). An
 * instance of a service goes to a server none of its sibling instances holds when one
 * can take it (c->spread_service while it is placed): one server's fault then never
 * takes every instance a service could have spread.
 */
int sched_place_job(struct sched_cluster *c, const struct sched_job *j, unsigned hi,
		    struct sched_slice **ret_slices, size_t *ret_count, char *reason);

/* sched_server_holds_sibling() - does @s hold an instance of c->spread_service (never
 * without one)? sched_place.c reads it as it reads suspicion. */
bool sched_server_holds_sibling(const struct sched_cluster *c, const struct sched_server *s);

/*
 * sched_place_begin() - placement is about to happen at @now_usec (a scheduling pass, a
 * recovery): note the time and cache every server's sched_server_is_suspect() in
 * its suspect flag (and c->suspect_count), so placement reads one flag per server.
 */
void sched_place_begin(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_server_recount() - recompute a server's free NPUs and job count, and its entry
 * in the cluster's placement index: call after every change of its NPUs' job, health,
 * isolation or reservation.
 */
void sched_server_recount(struct sched_server *s);

/*
 * ---- the placement index (sched_placeidx.c) ----
 * Every server sits in one bucket of servers with the same key: what sched_place() can
 * take from it by its NPUs alone (the server's schedulability, suspicion and the
 * request's type are read live by the placement), and in its type's set of whole free
 * servers (no job, every NPU placeable), counted per leaf switch when schedulable too.
 * A placement then looks only at the buckets that can hold it and, in each, at the first
 * servers in inventory order. Kept by sched_server_recount() (and, for a cordon, by
 * sched_placeidx_update()); sched_check_invariants() compares it with a fresh computation.
 */
struct sched_placekey {
	unsigned char type;		/* index into c->types */
	bool healthy;			/* every NPU OK and not isolated */
	bool busy;			/* some job holds NPUs here */
	unsigned char npus_free;	/* as sched_server.npus_free */
	signed char fit[CONF_SERVER_NPUS_MAX + 1]; /* [n]: rank of the best device choice
					 * for n NPUs (lower is better), -1: cannot hold n */
};

/* sched_place_key() - the key of server @s (sched_place.c: the HCCS rules live there). */
void sched_place_key(const struct sched_cluster *c, const struct sched_server *s,
		     struct sched_placekey *ret);

/*
 * sched_placeidx_build() - (re)build c->placeidx from every server. Returns 0, or
 * -ENOMEM (c->placeidx is then NULL: placement scans every server, as it always gives
 * the same answer). sched_placeidx_free() - free it; NULL after.
 * sched_placeidx_update() - @s changed (its NPUs, its jobs, its cordon or state): move it
 * to its bucket and recount it (no-op without an index).
 */
int sched_placeidx_build(struct sched_cluster *c);
void sched_placeidx_free(struct sched_cluster *c);
void sched_placeidx_update(struct sched_cluster *c, const struct sched_server *s);

/*
 * sched_placeidx_buckets() - how many buckets @x has (some may be empty now);
 * sched_placeidx_key() / sched_placeidx_size() - bucket @b's key (borrowed) and how many
 * servers it holds; sched_placeidx_next() - the first server index >= @from in bucket
 * @b, SIZE_MAX when none; sched_placeidx_whole_next() - the same over the whole free
 * servers of type index @type; sched_placeidx_type_servers() - how many servers of type
 * index @type the inventory has.
 */
size_t sched_placeidx_buckets(const struct sched_placeidx *x);
const struct sched_placekey *sched_placeidx_key(const struct sched_placeidx *x, size_t b);
size_t sched_placeidx_size(const struct sched_placeidx *x, size_t b);
size_t sched_placeidx_next(const struct sched_placeidx *x, size_t b, size_t from);
size_t sched_placeidx_whole_next(const struct sched_placeidx *x, size_t type, size_t from);
unsigned sched_placeidx_type_servers(const struct sched_placeidx *x, size_t type);
/*
 * sched_placeidx_avail() - how many servers of type index @type under switch @sw are
 * whole free and schedulable (sched_server_is_whole_free(); suspicion not counted): kept
 * by sched_server_recount() and by sched_placeidx_update() after a cordon or a change of
 * a server's state. sched_placeidx_switch_servers() - the servers of switch @sw in
 * inventory order (borrowed, *@ret_count entries).
 */
unsigned sched_placeidx_avail(const struct sched_placeidx *x, size_t type, size_t sw);
/* sched_placeidx_unschedulable() - servers of type index @type that are not
 * sched_server_is_schedulable(), kept as sched_placeidx_avail() is. */
unsigned sched_placeidx_unschedulable(const struct sched_placeidx *x, size_t type);
const unsigned *sched_placeidx_switch_servers(const struct sched_placeidx *x, size_t sw,
					      size_t *ret_count);

/* sched_placeidx_check() - does c->placeidx match every server? 0 or -EUCLEAN. */
int sched_placeidx_check(const struct sched_cluster *c, char *reason);

/*
 * ---- job history (sched_history.c) ----
 * sched_history_note() - called by sched_job_transition() for every change of @j from
 * @from to @to (by an event of @kind), after j->reason is set: closes the record of the
 * generation that ended (with j->reason) and opens the record of one that began.
 * Never fails: without memory a generation goes unrecorded.
 * sched_history_note_exit() - an agent reported exit status @code for a process of
 * @j's current generation (the first non-zero status is kept).
 * sched_history_free() - free j->runs. sched_job_run_release() - free what @r owns.
 * sched_run_end_from_name() - the enum of a sched_run_end_name(), or -1.
 */
void sched_history_note(struct sched_cluster *c, struct sched_job *j, enum sched_job_state from,
			enum sched_job_state to, enum sched_event_kind kind, uint64_t now_usec);
void sched_history_note_exit(struct sched_job *j, int code);
/* sched_history_restored() - a running or stopping job restored from a record written
 * before histories were kept gets the record of its current generation. */
void sched_history_restored(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec);
void sched_history_free(struct sched_job *j);
void sched_job_run_release(struct sched_job_run *r);
int sched_run_end_from_name(const char *name);

/*
 * A record under max_job_count set aside for a submission checked at a close and made at
 * release (sched_job_check_hold(); sched_job.c keeps the list): it counts as the job it
 * will be, for max_job_count there and for the job-count limits in sched_limits.c.
 */
struct sched_hold {
	char name[CONF_NAME_MAX + 1];
	uid_t uid;
	const struct conf_queue *queue; /* the held spec's queue (c->conf's) */
	struct sched_hold *prev, *next;
	struct sched_hold *index_next;	/* c->hold_index's chain */
};

/*
 * sched_name_hash() - FNV-1a of job name @s, for the indexes by name (jobs, holds): job
 * names are short and need no protection against crafted collisions beyond the name
 * syntax (the indexes are per daemon, keyed by validated names).
 */
size_t sched_name_hash(const char *s);

/*
 * ---- job-count limits (sched_limits.c) ----
 * sched_limits_check() - may @uid (a member of operator_group when @is_operator) add a
 * draft (@q NULL) or a job of queue @q called @name (a draft of that name being filled
 * adds no record) under cluster.max_job_count_per_user, cluster.reserved_job_count and
 * @q's max_submit_jobs_per_user and max_submit_jobs? Holds of other names count as the
 * jobs they will be (a hold of @name is the caller's own). Root and operators always may.
 * Returns 0, or -EAGAIN with @reason (SCHED_REASON_MAX, may be NULL) naming the limit,
 * the queue and what to do. Changes nothing.
 */
int sched_limits_check(struct sched_cluster *c, const char *name, const struct conf_queue *q,
		       uid_t uid, bool is_operator, char *reason);
/* sched_limits_check_first_element() - sched_limits_check() for a non-operator's array
 * element when none of its array's is active: the array's record (a draft or active job
 * of its owner, one of the cluster's records; never counted in a queue) stands for it,
 * so an array never waits for itself. */
int sched_limits_check_first_element(struct sched_cluster *c, const char *name,
				     const struct conf_queue *q, uid_t uid, char *reason);
/*
 * sched_limits_account() - job @j (its uid) went from state @from to @to
 * (SCHED_JOB_NONE: it was not, or is no longer, in c->jobs): keep live_job_count and
 * the uid's count. Called by sched_job_transition(), sched_jobs_append() and the
 * removal of a record; never fails (without memory the count falls back to a scan).
 * sched_limits_user_jobs() - @uid's drafts and active jobs.
 */
void sched_limits_account(struct sched_cluster *c, const struct sched_job *j,
			  enum sched_job_state from, enum sched_job_state to);
size_t sched_limits_user_jobs(const struct sched_cluster *c, uid_t uid);
/* sched_limits_check_counts() - do the kept counts match the records? 0 or -EUCLEAN. */
int sched_limits_check_counts(const struct sched_cluster *c, char *reason);

/*
 * sched_restart_of() - what follows "restart N" in a reason: " of <max_restarts>", or
 * that a service's instance has no limit (sched_recover.c). Into @buf (@len bytes, 48
 * suffice); returns @buf.
 */
const char *sched_restart_of(const struct sched_job *j, char *buf, size_t len);

/*
 * ---- job arrays (sched_array.c; the rules in ascend_sched.h) ----
 * struct sched_array: an array record's elements, one state byte per index 0 to
 * CONF_ARRAY_INDEX_MAX (those of its spec's set count).
 */
enum sched_array_el {
	SCHED_EL_WAITING,	/* not made yet */
	SCHED_EL_ACTIVE,	/* made; its record says how it goes */
	SCHED_EL_COMPLETED,	/* ended so (the same for the rest) */
	SCHED_EL_FAILED,
	SCHED_EL_CANCELLED,
	SCHED_EL_TIMEOUT,
	SCHED_EL_COUNT
};

struct sched_array {
	unsigned char el[CONF_ARRAY_INDEX_MAX + 1]; /* enum sched_array_el per index */
	char waits[SCHED_REASON_MAX];	/* why the next element is not made yet; "" */
	char cancel_why[SCHED_REASON_MAX]; /* cancelled (why) while elements stop; "" */
};

/*
 * sched_array_check() - may array spec @spec of @uid take its elements' names (no other
 * active job holds one, no other user's record)? 0, or -EEXIST with @reason. A spec
 * without `array:`: 0.
 * sched_array_admitted() - array @a was just admitted (state array): make the elements
 * it may make now. Returns how many it made.
 * sched_array_alloc() - @a's element states, all waiting (a pending array, waiting for
 * its `after:`). 0 or -ENOMEM.
 * sched_array_deps_met() - pending array @a's `after:` is met (sched_deps.c): it becomes
 * active (state array); its elements are made at the next tick.
 * sched_array_cancel() - cancel active array @a for @why: its active elements are
 * cancelled, no more are made, and it ends cancelled once they have ended (it stays
 * in state array meanwhile, its reason saying so).
 * sched_array_cancelled() - @a ended while active (cancel, rmdir): cancel its active
 * elements.
 * sched_array_element_ended() - element @j reached a terminal state: its array counts it
 * (from sched_job_transition()).
 * sched_job_admit_element() - admit @spec (stolen; named <array>.<index>, checked free)
 * as element @index of array @a (sched_job.c). 0 or -errno with @reason.
 * sched_array_save() - @a's element states as text, one character per index of its set
 * in order ('.' waiting, 'a' active, 'c' completed, 'f' failed, 'x' cancelled, 't'
 * timeout) into @buf (@len >= CONF_ARRAY_INDEX_MAX + 2). Returns @buf.
 * sched_array_restore() - array record @j's element states from @text as saved (NULL:
 * none saved: all waiting). 0, -EINVAL (not its set's length or an unknown character)
 * or -ENOMEM.
 * sched_array_restored() - every record is loaded: an active element whose record ended
 * while the daemon was down, or is gone, is counted.
 * sched_array_status_json() - status.json's "array" of array record @j: {"indexes",
 * "throttle" (0: none), "count", "waits" (why the next is not made, or null), counts
 * "waiting", "pending", "running" (running, recovering or stopping), "completed",
 * "failed", "cancelled", "timeout", "not_made" (an ended array's never made; those are
 * "waiting" while it is active), and "elements": {"<index>": state, "not made"}}. New
 * reference, or NULL without memory.
 */
int sched_array_check(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
		      char *reason);
unsigned sched_array_admitted(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec);
int sched_array_alloc(struct sched_job *a);
void sched_array_deps_met(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec);
void sched_array_cancel(struct sched_cluster *c, struct sched_job *a, const char *why,
			uint64_t now_usec);
void sched_array_cancelled(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec);
void sched_array_element_ended(struct sched_cluster *c, const struct sched_job *j);
int sched_job_admit_element(struct sched_cluster *c, struct conf_job_spec *spec,
			    const struct sched_job *a, unsigned index, uint64_t now_usec,
			    char *reason);
char *sched_array_save(const struct sched_job *j, char *buf, size_t len);
int sched_array_restore(struct sched_job *j, const char *text);
void sched_array_restored(struct sched_cluster *c, uint64_t now_usec);
json_t *sched_array_status_json(const struct sched_cluster *c, const struct sched_job *j);

/*
 * ---- services (sched_service.c; the rules in ascend_sched.h) ----
 * sched_service_check() - may service spec @spec of @uid take its instances' names (no
 * other active job holds one), and are the servers its disaggregated layout names ours?
 * 0, or -EEXIST / -EINVAL with @reason. A training spec: 0.
 * sched_service_admitted() - service @svc was just admitted (serving): make its
 * instances. Returns how many it made.
 * sched_service_cancelled() - @svc stopped serving: cancel its active instances.
 * sched_job_admit_instance() - admit @spec (stolen; named <service>.<index>, checked
 * free) as an instance of @svc (sched_job.c). 0 or -errno with @reason.
 */
int sched_service_check(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
			char *reason);
unsigned sched_service_admitted(struct sched_cluster *c, struct sched_job *svc,
				uint64_t now_usec);
void sched_service_cancelled(struct sched_cluster *c, struct sched_job *svc, uint64_t now_usec);
int sched_job_admit_instance(struct sched_cluster *c, struct conf_job_spec *spec,
			     const struct sched_job *svc, uint64_t now_usec, char *reason);

/*
 * sched_job_cancel_for() - cancel active @j as sched_job_cancel() does (for root), its
 * reason @why (borrowed): a service's cancel of its instances says so (sched_job.c).
 */
void sched_job_cancel_for(struct sched_cluster *c, struct sched_job *j, const char *why,
			  uint64_t now_usec);

/*
 * ---- job reasons (sched_reason.c) ----
 * sched_job_set_reason() - @j's reason becomes @reason (borrowed; NULL or "" for none; cut
 * at SCHED_REASON_MAX - 1 bytes, as the buffer it replaced cut it): a reference to the
 * one copy of that text in @c's table, shared with every job that says the same; the
 * old one is released. @reason may be j->reason itself. Never fails: without memory for
 * a new text the job says so instead. sched_reason_put() - release a reason (NULL, "" or
 * one sched_job_set_reason() gave; sched_job_free() releases the job's).
 * sched_reason_table_free() - free the table (sched_cluster_free, after every job and
 * every NPU released its texts).
 * sched_text_set() - the same for another interned text field (@slot, e.g.
 * &j->preempted_by, or an NPU's &n->fault), cut at @max - 1 bytes.
 */
void sched_job_set_reason(struct sched_cluster *c, struct sched_job *j, const char *reason);

/*
 * sched_service_roles_sync() - make @svc's role runs match its state (sched_service.c's
 * reconcile): a serving service with a role ascendfs runs starts it (generation 1, or
 * keeps the generation restored); one that no longer serves forgets its runs, which
 * leaves them out of the listings (the agents stop them). sched_service_roles.c.
 */
void sched_service_roles_sync(struct sched_cluster *c, struct sched_job *svc, uint64_t now_usec);
/*
 * sched_reason_get() - a new reference to @text, one sched_job_set_reason() gave (a job's
 * reason); NULL for "" and for the out-of-memory text (nothing to hold).
 * sched_job_share_reason() - @j's reason becomes @text, an interned text from
 * sched_reason_get() (another reference taken; the old one released), neither compared
 * nor hashed: for a pass giving thousands of jobs one sentence.
 */
const char *sched_reason_get(const char *text);
void sched_job_share_reason(struct sched_cluster *c, struct sched_job *j, const char *text);
void sched_text_set(struct sched_cluster *c, const char **slot, const char *text, size_t max);
void sched_reason_put(const char *reason);
void sched_reason_table_free(struct sched_cluster *c);

/* sched_reason() - snprintf into a SCHED_REASON_MAX buffer. */
void sched_reason(char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * ---- who has which address (sched_devip.c) ----
 * sched_devip_index_build() - (re)build c->devip, the hash of every server's host_ip and
 * every NPU's device IP (reported, else the inventory's). Returns 0 or -ENOMEM (then
 * c->devip is NULL and sched_devip_find() looks at every address).
 * sched_devip_index_free() - free c->devip; NULL after.
 * sched_devip_changed() - NPU @npu of server @server has another device IP now: call
 * after every change of its reported_ip.
 * sched_devip_find() - is @ip the host_ip of a server, or the device IP of an NPU of a
 * server other than @skip_server? Then *@ret_server and *@ret_npu (-1: the host_ip) say
 * whose (one of them, when several). Changes nothing.
 */
int sched_devip_index_build(struct sched_cluster *c);
/* sched_npu_device_ip() - the device IP HCCL uses for NPU @npu of @s: what its agent
 * reported, else the inventory's; NULL when neither gives one. Borrowed. */
const char *sched_npu_device_ip(const struct sched_server *s, unsigned npu);
void sched_devip_index_free(struct sched_cluster *c);
void sched_devip_changed(struct sched_cluster *c, unsigned server, unsigned npu);
bool sched_devip_find(const struct sched_cluster *c, const char *ip, unsigned skip_server,
		      unsigned *ret_server, int *ret_npu);
/* sched_devip_find_host() - the server whose host_ip is @ip (the first, when several),
 * or -1. */
int sched_devip_find_host(const struct sched_cluster *c, const char *ip);

/* sched_slice_server() - the server slice @sl of a job lies on (borrowed). */
static inline const struct sched_server *sched_slice_server(const struct sched_cluster *c,
							   const struct sched_slice *sl)
{
	return &c->servers[sl->server];
}

/*
 * ---- text the renders build (sched_text.c) ----
 * struct sched_buf: a NUL-terminated text that grows; zero-initialized it is empty. The
 * first failure latches in err (-ENOMEM; -EINVAL from a bad format) and every later
 * call does nothing. sched_buf_finish() hands the text over (*ret, free()) or frees it
 * and returns err.
 */
struct sched_buf {
	char *p;
	size_t len, cap;
	int err;
};

void sched_buf_grow(struct sched_buf *b, size_t more);
void sched_buf_put(struct sched_buf *b, const char *s, size_t n);
void sched_buf_printf(struct sched_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int sched_buf_finish(struct sched_buf *b, char **ret, size_t *ret_len);

/*
 * sched_service_roles_list() - the lines of nodes/<server>/jobs for @svc's roles that
 * run on server index @server (the format: ascend_sched.h, above enum sched_role).
 */
void sched_service_roles_list(const struct sched_cluster *c, const struct sched_job *svc,
			      unsigned server, struct sched_buf *b);

/*
 * JSON written into a sched_buf as jansson's json_dumps() writes it with
 * JSON_INDENT(@indent) (and without JSON_ENSURE_ASCII): the same bytes for the same
 * values, so a file may move from one to the other unseen. sched_jw_open() and
 * sched_jw_close() take '{'/'}' or '['/']'; in an object each value follows
 * sched_jw_key(), in an array sched_jw_item(); a value is sched_jw_string(), text put
 * with sched_buf_put()/sched_buf_printf() (a number), or a nested open ... close.
 * Deeper than SCHED_JW_DEPTH_MAX, or a close without an open, latches -EINVAL in the
 * buffer. sched_jw_string() escapes as json_dumps() does; a string that is not UTF-8
 * has its bytes above 0x7f written as '?' (sched_render.c's jstr() does the same).
 */
#define SCHED_JW_DEPTH_MAX 8
struct sched_jw {
	struct sched_buf *b;
	unsigned indent;
	unsigned depth;
	bool has_items[SCHED_JW_DEPTH_MAX];
};

void sched_jw_open(struct sched_jw *w, char kind);
void sched_jw_close(struct sched_jw *w, char kind);
void sched_jw_key(struct sched_jw *w, const char *key);
void sched_jw_item(struct sched_jw *w);
void sched_jw_string(struct sched_buf *b, const char *s);

#endif
