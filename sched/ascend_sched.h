/* SPDX-License-Identifier: MIT */
/*
 * sched: the cluster model and every scheduling decision, as pure C.
 *
 * No FUSE, no threads, no clock and no file I/O: time is an argument (`now_usec`,
 * microseconds since the Unix epoch) and every input arrives as a parsed struct, so the
 * same code serves the daemon, the unit tests and a simulator. A struct sched_cluster is
 * NOT thread-safe: the caller serializes all calls on one cluster (the daemon holds one
 * state lock around them).
 *
 * Every job state change goes through one function (sched_job_transition, in
 * sched_job.c), which checks that the transition is legal and appends an event; a
 * durable store can hook in there.
 *
 * errno vocabulary:
 *   -EINVAL   malformed request (bad name, illegal size for the topology, unknown queue)
 *   -ENOSPC   no room: from sched_job_submit/sched_check_feasible the request can never
 *             fit this cluster (a rejection); from sched_place, no room now
 *   -EEXIST   a job with that name is active
 *   -ENOENT   unknown job or server
 *   -EPERM    caller is not the job's owner (nor root)
 *   -EACCES   the submitter may not ask for this: a queue cap (max_priority, max_npus,
 *             max_time_limit) that only root and operators may exceed; the daemon's
 *             queue `groups` refusal uses the same errno
 *   -EBUSY    the operation conflicts with the job's state, or its name is held for
 *             another submitter (sched_job_check_hold)
 *   -EAGAIN   no room for a job record now: max_job_count records exist and none is
 *             finished (none can be dropped), or a job-count limit binds the submitter
 *             (cluster.max_job_count_per_user, reserved_job_count, a queue's
 *             max_submit_jobs_per_user or max_submit_jobs; sched_job_check_as)
 *   -ENOMEM   allocation failed
 * Reasons are written into caller buffers as one lowercase sentence, no final period.
 */
#ifndef ASCENDFS_ASCEND_SCHED_H
#define ASCENDFS_ASCEND_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"

#define SCHED_REASON_MAX 512
#define SCHED_FAULT_MAX 200 /* an NPU's last fault text, its NUL included */
/* Events kept by default (conf event_history); older ones are dropped, sequence numbers
 * keep counting. */
#define SCHED_EVENTS_MAX 65536

enum sched_job_state {
	SCHED_JOB_DRAFT,      /* directory made with mkdir, no spec yet */
	SCHED_JOB_PENDING,    /* accepted, waiting for NPUs (reason says why) */
	SCHED_JOB_RUNNING,    /* placed; rank table final */
	SCHED_JOB_RECOVERING, /* a fault took NPUs away; being re-placed */
	SCHED_JOB_STOPPING,   /* preempted, past its time_limit, cancelled, completed or
			       * failed while its processes may still run: gone from its
			       * servers' jobs lists (the agents SIGTERM it), NPUs held
			       * until every server it held has reported (a `running`
			       * line, after the stop began) that none of its processes
			       * runs, or stop_deadline_usec at the latest; then stop_to
			       * (pending again when preempted) */
	SCHED_JOB_COMPLETED,  /* finished successfully */
	SCHED_JOB_FAILED,     /* gave up (max_restarts, fault without recovery) */
	SCHED_JOB_CANCELLED,  /* cancelled by its owner or an admin */
	SCHED_JOB_REJECTED,   /* spec refused; nothing was allocated */
	SCHED_JOB_TIMEOUT,    /* stopped at its time_limit (Slurm's TIMEOUT) */
	SCHED_JOB_SERVING,    /* a service (kind: service): holds no NPUs itself; its
			       * instances, jobs of their own, serve (sched_service.c),
			       * until it is cancelled */
	SCHED_JOB_ARRAY,      /* a job array's record (`array:`): holds no NPUs itself; its
			       * elements, jobs of their own, run (sched_array.c), until
			       * each has ended */
	SCHED_JOB_STATE_COUNT
};

/* sched_job_state_name() - "pending", "running", ... (static string). */
const char *sched_job_state_name(enum sched_job_state s);

/* sched_job_state_is_terminal() - completed, failed, cancelled, rejected or timeout. */
bool sched_job_state_is_terminal(enum sched_job_state s);

enum sched_health {
	SCHED_HEALTH_OK,
	SCHED_HEALTH_WARNING,
	SCHED_HEALTH_ALARM,
	SCHED_HEALTH_CRITICAL,
	SCHED_HEALTH_UNKNOWN,
};

/* sched_health_name() - npu-smi's Health words: "OK", "Warning", ... (static). */
const char *sched_health_name(enum sched_health h);

struct sched_job;
struct sched_hold;
struct sched_uid_jobs;
struct sched_reason_str;

/* Why an NPU takes no new work (design.md §6). */
enum sched_isolation {
	SCHED_ISOLATION_NONE,
	SCHED_ISOLATION_ALARM,	/* pre-isolated by an Alarm: its running job stays */
	SCHED_ISOLATION_FAULT,	/* Critical/UNKNOWN or a lost server: back after the hold time
				 * once it reports OK */
	SCHED_ISOLATION_MANUAL,	/* repeated faults (or admin): back only with `clear` */
};

/* sched_isolation_name() - "none", "alarm", "fault", "manual" (static). */
const char *sched_isolation_name(enum sched_isolation i);

/* One NPU of a server. */
struct sched_npu {
	unsigned device_id;	/* physical id, 0..npu_count-1 */
	enum sched_health health;
	bool isolated;		/* no new work may be placed here (isolation != NONE) */
	enum sched_isolation isolation;
	struct sched_job *job;	/* borrowed; NULL when free */
	unsigned rank;		/* rank_id within job when job != NULL */
	uint64_t last_fault_usec;	/* 0 = never */
	uint64_t ok_since_usec;		/* first healthy report since the fault; 0 = none */
	uint64_t window_start_usec;	/* escalation window */
	unsigned window_faults;		/* faults since window_start_usec */
	const char *fault;		/* last fault: code and message, "" (at most
					 * SCHED_FAULT_MAX - 1 bytes; interned, shared with the
					 * NPUs that say the same: sched_text_set()) */
	bool retry_pending;		/* a transient fault (retry_fault_codes) its job's
					 * retry step handles; the NPU stays in service until
					 * it reports below Critical (cleared) or is still
					 * Critical once the step ended and two report
					 * intervals passed since retry_since_usec (isolated:
					 * a lasting fault) */
	uint64_t retry_since_usec;	/* when that transient fault was first reported */
	bool retry_due;			/* during a report only: its job's retry starts once
					 * every level of the report is applied */
	char reported_ip[48];		/* device_ip the agent reported, "" */
	bool has_sdid;			/* the agent reported the NPU's super-pod identity
					 * (A3: the report's `sdid` line) */
	uint32_t sdid;			/* its SDID, the rank table's super_device_id */
	uint32_t super_pod_id;		/* the physical super pod npu-smi names */
	unsigned server_index;		/* the server's index in that pod */
	bool reserved;			/* during a scheduling pass only: free but held for a
					 * backfill reservation (not placeable) */
};

enum sched_server_state {
	SCHED_SERVER_UNKNOWN,	  /* never reported (schedulable unless require_agent) */
	SCHED_SERVER_READY,	  /* reported and healthy */
	SCHED_SERVER_UNREACHABLE, /* heartbeat lost */
};

struct sched_server {
	const struct conf_server *conf; /* borrowed from the cluster's conf */
	unsigned index;			/* position in the inventory */
	unsigned switch_index;		/* index into sched_cluster.switch_names */
	enum sched_server_state state;
	bool cordoned;			/* admin: no new work */
	bool draining;			/* admin: no new work; cordoned until empty */
	uint64_t last_report_usec;	/* 0 = never */
	char *last_refusal;		/* why the last refused health report was refused,
					 * NULL when none since the last accepted one (owned) */
	uint64_t last_refusal_usec;	/* when it was refused */
	char agent[CONF_HEALTH_AGENT_MAX]; /* the `agent` of the last accepted report that
					 * named one; "" = none yet */
	bool restored_heartbeat;	/* last_report_usec is the restore, not a report */
	enum sched_health node_health;	/* the `node` line of the last report */
	bool ips_confirmed;		/* the agent reported a device_ip for every NPU */
	bool reports_running;		/* the last accepted report had a `running` line: its
					 * agent says which job generations still run */
	struct sched_cluster *cluster;	/* borrowed: the cluster it belongs to (its placement
					 * index is kept by sched_server_recount()) */
	bool suspect;			/* sched_server_is_suspect() as of the cluster's
					 * place_now_usec (sched_place_begin()): placement
					 * takes it last */
	struct sched_npu *npus;		/* conf->npu_count, by device id: a run of the
					 * cluster's one array of NPUs (borrowed; sized to
					 * the server, so 8-NPU servers do not pay for 16) */
	unsigned npus_free;		/* free and placeable NPUs */
	unsigned jobs_running;		/* distinct jobs holding NPUs here */
	uint64_t newest_fault_usec;	/* the newest last_fault_usec of its NPUs, 0 = none
					 * (sched_server_recount(), which every change of one
					 * is followed by): whether the server is suspect,
					 * asked of every server at each pass, reads no NPU */
	uint64_t version;		/* bumped when what sched_server_save() keeps may have
					 * changed (a report, cordon, clear, lost heartbeat) */
	uint64_t saved_version;		/* for the embedding program's store: what it saved */
};

/* Where one server's share of a job landed. */
struct sched_slice {
	unsigned server;		/* index into cluster->servers */
	unsigned npu_count;
	unsigned device_ids[CONF_SERVER_NPUS_MAX]; /* ascending physical ids */
	unsigned first_rank;		/* rank of device_ids[0]; ranks are contiguous */
	bool gone;			/* the job is stopping and this server's agent has
					 * reported since the stop began that none of the
					 * job's processes runs here (not saved: after a
					 * restart the next report says it again) */
	unsigned attempt;		/* in-place restarts of this server's share within
					 * the generation (0 = as first started); its agent
					 * starts again those of its processes that exited
					 * when it rises (nodes/<server>/jobs) */
	unsigned kept_from;		/* process-level recovery kept this server's share:
					 * its processes run on since this earlier
					 * generation (its agent keeps the run of any
					 * generation from kept_from on, not restarting it);
					 * 0 = its processes start with this generation */
};

/* Why a job that has run before is pending again (it resumes from its checkpoint). */
enum sched_requeue_cause {
	SCHED_REQUEUE_NONE,	/* never ran */
	SCHED_REQUEUE_FAULT,	/* a fault took its NPUs and no capacity was left */
	SCHED_REQUEUE_PREEMPTED, /* preempted by a higher-priority job or a reclaim */
	SCHED_REQUEUE_REQUESTED, /* its owner or root requeued it (sched_job_requeue()) */
};

/*
 * What one server's agent last reported of a job generation's cgroup (a `usage` line of
 * its health report, conf.h): CPU time in microseconds and memory in bytes (the peak
 * where the kernel has memory.peak, else the current use; 0 without the memory
 * controller). Not saved: the agents report it again while the generation runs.
 */
struct sched_job_usage {
	unsigned server;		/* index in the cluster's servers */
	unsigned generation;
	uint64_t cpu_usec;
	uint64_t memory_bytes;
};

/*
 * ---- job history (sched_history.c) ----
 * One record per generation of a job (Slurm's sacct shows a job's steps the same way):
 * where it ran (servers by name and device ids, so a record outlives a changed
 * inventory), when it began and ended, how it ended and why, and the exit status its
 * agents reported. A record is opened when a generation begins (sched_job_begin_generation)
 * and closed when the generation ends: a fault, a task fault, a resize, a preemption, a
 * time limit, cancel or completion. Records are kept with the job (saved in its state
 * document) until its record is dropped: the first generation and the newest
 * SCHED_JOB_RUNS_MAX - 1; the ones between are counted in runs_dropped.
 */
#define SCHED_JOB_RUNS_MAX 32

/* How a generation ended; names are sacct's State words in lowercase. */
enum sched_run_end {
	SCHED_RUN_OPEN,		/* still running (or stopping: `end` not reached yet) */
	SCHED_RUN_COMPLETED,	/* every process exited 0, or `complete` */
	SCHED_RUN_FAILED,	/* a process exited non-zero (task fault), or the job failed */
	SCHED_RUN_NODE_FAIL,	/* an NPU fault or a lost server took its NPUs (recovered) */
	SCHED_RUN_PREEMPTED,	/* stopped for a higher-priority job or a reclaim */
	SCHED_RUN_TIMEOUT,	/* stopped at its time_limit */
	SCHED_RUN_CANCELLED,	/* cancelled by its owner or root */
	SCHED_RUN_RESIZED,	/* an elastic job grew or shrank: the next generation follows */
	SCHED_RUN_REQUEUED,	/* taken off its NPUs to wait again (the inventory changed),
				 * or moved to others by a drain */
	SCHED_RUN_END_COUNT
};

/* sched_run_end_name() - "running", "completed", "failed", "node_fail", ... (static). */
const char *sched_run_end_name(enum sched_run_end e);

/* One server's share of a generation, by name. */
struct sched_run_slice {
	char server[CONF_NAME_MAX + 1];
	unsigned npu_count;
	unsigned first_rank;
	unsigned device_ids[CONF_SERVER_NPUS_MAX]; /* ascending physical ids */
};

/*
 * A job's recovery ladder (sched_ladder.c, issue 17): the step in progress, if any, and
 * how the last one ended. jobs/<id>/recovery shows it to the job's processes; it is
 * saved with the job record. Processes are indexed as sched_job_process_index() says.
 */
struct sched_ladder {
	unsigned request;		/* number of the newest request to the processes (0 =
					 * none yet); +1 per step that asks them something */
	bool active;			/* a step waits for the processes (the job is
					 * recovering) */
	bool counted;			/* active and counted in c->ladder_active (a step
					 * restored from a record is not until
					 * sched_ladder_restored()) */
	enum conf_recovery strategy;	/* the active step's, or the last one's */
	size_t rung;			/* its index in spec->recovery */
	uint64_t began_usec;		/* when the active step began */
	uint64_t deadline_usec;		/* when it falls back (recovery_timeout) */
	char *why;			/* owned: the fault, a sentence; NULL when none */
	bool process_fault;		/* a process exit (sched_job_restart()), not a lost
					 * NPU or server */
	int fault_server;		/* the exit's server index, the server taken for
					 * faulty with it, or -1 */
	bool *waited;			/* owned: per process, asked and not yet answered
					 * nor gone */
	bool *answered;			/* owned: per process, answered */
	size_t process_count;		/* entries of waited and answered */
	size_t waited_count, answered_count;
	uint64_t saved_step;		/* the newest step a process saved (dump) or paused
					 * after (in-place, process); for a retry the oldest
					 * (the last step every process finished); 0 = none */
	char *saved_path;		/* owned: its checkpoint; NULL = none */
	char *outcome;			/* owned: how the last step ended; NULL = none yet */
	long restarted;			/* in-place: the process restarting on its NPUs
					 * (sched_job_process_index()), -1 = none */
	bool joined;			/* in-place: that process answered `joined` */
	bool resumed;			/* the last step ended in an in-place resume: the
					 * processes are told to go on from resume_step
					 * (request is that notice's number) */
	uint64_t resume_step;		/* the step they go on from (valid when resumed) */
	bool *joining;			/* owned: process step, per process: started on a
					 * replacement server, answers `joined` (waited and
					 * answered track it as the others); NULL otherwise */
	bool transient;			/* the fault being walked is a transient NPU fault
					 * (retry_fault_codes): only retry applies to it as
					 * such; false once a rung fell back (not saved) */
	bool kept_unanswered;		/* a process step fell back with kept processes that
					 * had not answered: they are still of the older
					 * generation and ignore the new one's requests, so
					 * no later dump waits for them */
	bool joiners_stateless;		/* a process step fell back: the processes it
					 * started hold no state, so a later rung does not
					 * count them among the survivors */
};

/* What a process answers to a request of its job's recovery ladder (jobs/<id>/ctl). */
enum sched_recovery_answer {
	SCHED_ANSWER_SAVED,		/* dump: saved (or its part written) */
	SCHED_ANSWER_SAVE_FAILED,	/* dump: could not save */
	SCHED_ANSWER_PAUSED,		/* in-place, process: stopped after a step (process:
					 * and rebuilt its communicator from the new rank
					 * table), waits to resume */
	SCHED_ANSWER_JOINED,		/* in-place, process: a restarted (or newly
					 * started) process is up and waits for the step to
					 * go on from */
};

/* One generation of a job. */
struct sched_job_run {
	uint64_t number;		/* 0 for the job's first record, then one more for
					 * each (dropped ones keep theirs: never reused) */
	bool saved;			/* closed, and its document is in the embedding
					 * program's store apart from the job record
					 * (sched_job_run_save()); sched_job_save() leaves it
					 * out. Set by that program */
	unsigned generation;
	uint64_t start_usec;		/* when it began */
	uint64_t end_usec;		/* when it ended; 0 while open */
	enum sched_run_end end;		/* SCHED_RUN_OPEN until it ends (a stopping job's
					 * generation has its cause here before end_usec) */
	bool has_exit;			/* an agent reported an exit status for it */
	int exit_code;			/* the first non-zero one, else 0 */
	char *reason;			/* owned: why it ended (the job's reason then), NULL */
	struct sched_run_slice *slices;	/* owned, slice_count entries, rank order */
	size_t slice_count;
};

/*
 * Dirty lists: the jobs whose record or files changed, one list per reader of changes in
 * the embedding program (the daemon's state store and its inotify notifier), so each
 * takes them at its own pace and neither walks every job. sched_job_touch() puts a job
 * on every list it is not on yet; a reader takes jobs off its own list
 * (sched_dirty_pop()); a record that is dropped leaves every list.
 */
enum sched_dirty_list {
	SCHED_DIRTY_STORE,	/* records to write */
	SCHED_DIRTY_NOTIFY,	/* files to announce */
	SCHED_DIRTY_ATTRS,	/* files whose attributes a kernel may hold stale */
	SCHED_DIRTY_LIST_COUNT
};

struct sched_dirty_link {
	struct sched_job *prev, *next;	/* borrowed; oldest touch first */
	bool linked;			/* on the list (then touching it again adds nothing) */
};

/* One dependency of a job (its spec's after[] of the same index): the job record it waits
 * for, by the serial the name had when it was submitted (a name submitted again is
 * another job). */
struct sched_dep {
	uint64_t serial;
	bool met;		/* it completed (afterok), or ended (afterany) */
};

struct sched_job {
	/* fields a scheduling pass reads for every pending job, sched_job_is_held()'s
	 * included, kept in the first 64 bytes: one cache line (sched_job_alloc() aligns
	 * the record; a _Static_assert in sched_job.c checks the end) */
	enum sched_job_state state;
	unsigned char requeue_cause;	/* enum sched_requeue_cause */
	unsigned char hold_kind;	/* enum sched_job_hold: a pending (or stopping to
					 * pending) job the pass passes by; a held job is not
					 * in the pending order (sched_pend_order.c) */
	bool array_record;		/* sched_job_is_array(), kept here: the pass asks
					 * it of every waiting job (sched_job_is_held()), and
					 * the spec it is made of is a cache miss away (set
					 * where the spec and array_serial are; checked by
					 * sched_check_invariants()) */
	unsigned deps_waiting;		/* of them not met yet: while > 0 the job is passed by
					 * as a held one is (sched_job_is_held()) */
	uint32_t type_mask;		/* server types it can run on (sched_type_mask) */
	unsigned prio;			/* spec priority, and npus_min/npus_max (as raised */
	unsigned need_min, need_max;	/* at submission), copied here for the pass */
	unsigned queue_index;		/* into conf->queues; set at submission */
	uint64_t queue_seq;		/* FIFO order among pending jobs */
	uint64_t serial;		/* unique per job object (a resubmitted name: new) */
	uint64_t reason_key;		/* key of the pending reason (sched_queue.c) */
	uint64_t limit_left_usec;	/* pending: time_limit minus run time so far;
					 * UINT64_MAX without a time_limit */
	/* end of the first cache line; then what a pass writes of a waiting job whose
	 * reason changes (sched_job_set_pending_reason()): when the job first in line
	 * changes, that is every job waiting behind it */
	const char *reason;		/* pending reason / rejection / failure: at most
					 * SCHED_REASON_MAX - 1 bytes, never NULL once the
					 * job is in c->jobs; shared by every job of the same
					 * text (interned, sched_reason.c): read-only, changed
					 * by sched_job_set_reason() only */
	uint64_t change_usec;		/* the last change of state or reason */
	uint64_t version;		/* bumped on every change (cache key for readers), by
					 * sched_job_touch() only */
	struct sched_dirty_link dirty[SCHED_DIRTY_LIST_COUNT]; /* see sched_job_touch() */
	struct conf_job_spec *spec;	/* owned; NULL for drafts and some rejections */
	char name[CONF_NAME_MAX + 1];	/* also the job id */
	uid_t uid;			/* owner (submitting uid) */
	gid_t gid;
	char *spec_text;		/* owned; normalized spec YAML, NULL without spec */
	size_t spec_len;
	unsigned generation;		/* +1 per placement; a resubmitted name continues from
					 * the old job's count (1 on a new name's first) */
	unsigned restarts;
	uint64_t generation_usec;	/* when the current generation began */
	uint64_t submit_usec, start_usec, end_usec;
	uint64_t pending_since_usec;	/* when it last entered the pending state (a new
					 * reason while pending does not move it); not saved */
	uint64_t eligible_usec;		/* since when it may start, for the age of
					 * priority_weight_age: its submission (an array
					 * element: the array's), moved to its release from a
					 * hold and to the moment its `after:` jobs were met;
					 * a preemption or requeue keeps it (wall clock, as
					 * submit_usec) */
	uint64_t run_since_usec;	/* start of the current run (running or recovering;
					 * a stop does not count); 0 otherwise */
	uint64_t run_accum_usec;	/* run time of earlier runs; time_limit counts the
					 * total, as Slurm does for a requeued job */
	uint64_t stop_deadline_usec;	/* stopping: NPUs are released at this time at the
					 * latest (stop_grace_period + fault_check_interval
					 * after the stop began) */
	enum sched_job_state stop_to;	/* stopping: pending (preempted), timeout, cancelled,
					 * completed or failed (also: rank table not
					 * completed in time): the state it ends in */
	bool stop_cancelled;		/* stopping: cancelled during a stop of another kind
					 * (preemption, time limit): ends cancelled */
	bool stop_forget;		/* stopping: removed (rmdir) while active; the record
					 * is dropped once its NPUs are released */
	bool stop_requeue;		/* stopping to pending: requeued by request
					 * (sched_job_requeue()), not preempted */
	struct sched_dep *deps;		/* its spec's `after:` (sched_deps.c): one per
					 * spec->after entry, or NULL */
	unsigned dependents;		/* unmet dependencies of waiting jobs on this record:
					 * its end looks at the others only when > 0 */
	const char *stop_server;	/* stopping: the server (and stop_npu, -1 = none)
					 * of the fault it stops for, "" when none: the event
					 * that ends the stop names them too; interned as
					 * reason is (sched_text_set()) */
	int stop_npu;
	const char *preempted_by;	/* last preemptor, "": interned as reason is,
					 * changed by sched_text_set() only */
	uint64_t preempted_by_serial;	/* its serial (0 = none) */
	unsigned preemptions;		/* times preempted */
	bool borrowing;			/* placed beyond its queue's quota (reclaimable) */
	uint64_t reserved_start_usec;	/* backfill reservation held by this pending job:
					 * the latest expected start; 0 = none,
					 * UINT64_MAX = after running jobs without a
					 * time_limit end */
	struct sched_slice *slices;	/* owned; slice_count entries, topology order */
	size_t slice_count;
	unsigned sched_port;		/* MS_SCHED_PORT of this placement */
	uint64_t checkpoint_step;	/* newest reported checkpoint; 0 = none */
	char *checkpoint_path;		/* owned; NULL = none */
	uint64_t checkpoint_usec;	/* when it was written (report time, or file mtime) */
	bool checkpoint_reported;	/* it came from `checkpoint STEP PATH`, not the disk */
	char *resume_path;		/* owned: the checkpoint this generation resumes from
					 * (ASCEND_RESUME_CHECKPOINT), frozen when it began */
	bool resume_scan_pending;	/* a generation after the job's first began and waits
					 * for the embedding program to look in checkpoint_dir
					 * (scan_resume_at_start): its servers' job lists leave
					 * it out until sched_job_resume_scanned() or the
					 * SCHED_RESUME_SCAN_TIMEOUT_SEC bound */
	uint64_t resume_scan_since_usec; /* when that wait began */
	struct sched_dirty_link resume_wait; /* on sched_cluster.resume_wait_head while
					 * resume_scan_pending (sched_job_set_resume_scan_pending) */
	uint64_t restart_counted_usec;	/* the fault of the last restart that counted against
					 * max_restarts (0 = none); see sched_health.c */
	unsigned restarts_coalesced;	/* restarts not counted: same incident as a counted
					 * one (sched_health.c) */
	bool *exited_ok;		/* owned: per process of this generation (per server for
					 * msrun, per rank for per-rank), exited with status 0 */
	bool *exited_bad;		/* owned: the same processes, exited with another status
					 * and not started again in place since; NULL = none */
	size_t exited_count;		/* entries of exited_ok (and exited_bad) */
	unsigned exits_generation;	/* generation exited_ok belongs to */
	uint64_t first_start_usec;	/* when the first generation began (status.json's
					 * `started`; start_usec is the current run's) */
	struct sched_job_run *runs;	/* owned: the job's history (sched_history.c), oldest
					 * first, run_count entries: the first generation and
					 * the newest SCHED_JOB_RUNS_MAX - 1 */
	size_t run_count;
	unsigned runs_dropped;		/* generations dropped between runs[0] and runs[1] */
	uint64_t dropped_npu_usec;	/* their NPU-microseconds, and how many a fault */
	unsigned dropped_faults;	/* ended, for the accounting record (saved) */
	uint64_t notified_version;	/* for the embedding program: what it last announced */
	bool held;			/* a sched_hold names it: its holder's submission
					 * replaces it, max_job_count never drops it */
	uint64_t saved_version;		/* for the embedding program's store: what it saved */
	int notified_state;		/* (the daemon's inotify pokes); see fs_notify.c */
	unsigned notified_generation;
	struct sched_job_usage *usage;	/* owned: per server, its newest generation's
					 * last usage report; usage_count entries */
	size_t usage_count;
	struct sched_ladder ladder;	/* its recovery ladder (sched_ladder.c) */
	uint64_t array_serial;		/* an array's element: its array's record (serial;
					 * its name is <array>.<array_index>); 0 for every
					 * other job (sched_array.c) */
	unsigned array_index;
	struct sched_array *array;	/* owned: an array's record: its elements' states;
					 * NULL for every other job */
	char service[CONF_NAME_MAX + 1]; /* an instance of a service: that service's name
					 * (its own is <service>.<index>); "" for every
					 * other job (sched_service.c) */
	unsigned ready_generation;	/* an instance: the generation whose master answered
					 * on the service's port (sched_service_ready()); it
					 * is ready while that is its generation */
	uint64_t ready_usec;		/* when it became ready, or stopped being so */
	unsigned char drain_noted;	/* an instance: why a drain cannot move it yet, as
					 * an event last said (1 its budget, 2 no room; 0
					 * none): said again when the why changes or a drain
					 * of its server begins (sched_server_set_cordon();
					 * not saved) */
	uint64_t backoff_usec;		/* an instance: how long its next quick end waits
					 * before it starts again (restart back-off,
					 * sched_service_hold_restart()); 0 = at once */
	uint64_t backoff_from_usec;	/* when its processes last started again */
	uint64_t restart_at_usec;	/* a held restart is due then; 0 = none */
	char *restart_why;		/* owned: the held restart's cause, or NULL */
	struct sched_role_run *roles;	/* owned: a disaggregated service's controller and
					 * coordinator runs, SCHED_ROLE_COUNT entries, once
					 * it serves with a role ascendfs runs; else NULL
					 * (sched_service_roles.c) */
	int restart_server;		/* the held restart's server index */
	long restart_process;		/* and process index (sched_job_restart()) */
};

enum sched_event_kind {
	SCHED_EV_SUBMITTED,
	SCHED_EV_REJECTED,
	SCHED_EV_PENDING,
	SCHED_EV_PLACED,
	SCHED_EV_COMPLETED,
	SCHED_EV_FAILED,
	SCHED_EV_CANCELLED,
	SCHED_EV_REMOVED,
	SCHED_EV_CHECKPOINT,
	SCHED_EV_SERVER,	/* cordon, uncordon, drain */
	SCHED_EV_REFUSED,	/* a request about a job was refused; the job is unchanged */
	SCHED_EV_HEALTH,	/* an NPU or server changed health or isolation */
	SCHED_EV_RECOVERING,	/* a fault took NPUs from a running job */
	SCHED_EV_PREEMPTED,	/* a job was chosen as a preemption victim (who, by whom, why) */
	SCHED_EV_REQUEUED,	/* a stopped victim is pending again, to resume later */
	SCHED_EV_TIMEOUT,	/* a job reached its time_limit (stopping, then timeout) */
	SCHED_EV_RESIZED,	/* an elastic job grew or shrank: a new generation */
	SCHED_EV_QUEUE,		/* a queue's quota changed */
	SCHED_EV_RECOVERY,	/* a step of a job's recovery ladder began, ended or fell
				 * back (sched_ladder.c) */
	SCHED_EV_READY,		/* a service's instance became ready, or no longer is
				 * (sched_service.c) */
	SCHED_EV_BACKOFF,	/* an instance's restart waits out its back-off */
	SCHED_EV_MOVED,		/* a drain moved an instance, or cannot yet (why) */
	SCHED_EV_HELD,		/* a pending job was held (sched_job_hold()) */
	SCHED_EV_RELEASED,	/* a held job was released */
	SCHED_EV_UPDATED,	/* a job's priority or time_limit was changed */
	SCHED_EV_DEPENDENCY,	/* a job waits for the jobs its `after:` names, or one of
				 * them was met (sched_deps.c) */
	SCHED_EV_LEADER,	/* a head took the leadership (sched_note_leader()) */
	SCHED_EV_KIND_COUNT
};

/* sched_event_kind_name() - "submitted", "placed", ... (static string). */
const char *sched_event_kind_name(enum sched_event_kind k);

/*
 * sched_note_leader() - an event of kind "leader": the head that now runs this cluster
 * (the embedding program's election, e.g. on an etcd lease), @reason saying who and
 * since when. A change to save like any other.
 */
void sched_note_leader(struct sched_cluster *c, uint64_t now_usec, const char *reason);

/*
 * One kept event. Its strings live in one allocation sized to their content: @line, its
 * rendered JSON line (line_len bytes and a NUL), followed by the NUL-terminated @job,
 * @server and @reason, which point into it. When that allocation failed, @line is NULL
 * and the three strings are "" (static): readers skip an event without a line. The
 * slots of the ring (struct sched_cluster.events) are valid from event_head for
 * event_count entries only. Copy one with sched_event_copy(), never by assignment.
 */
struct sched_event {
	uint64_t seq;		/* 1, 2, 3 ... never reused, no gaps */
	uint64_t time_usec;
	enum sched_event_kind kind;
	int npu;		/* -1 when not about one NPU */
	const char *state;	/* job state after the event, or NULL; static */
	const char *job;	/* "" when not about a job; in @line's allocation */
	const char *server;	/* "" when not about a server; likewise */
	const char *reason;	/* at most SCHED_REASON_MAX - 1 bytes; likewise */
	char *line;		/* owned: the JSON line, rendered when added, then the
				 * strings above */
	size_t line_len;
};

/*
 * One accounting record (sched_account.c): a job that ended, as Slurm's accounting keeps
 * a finished job for sacct. Made when a submitted job reaches completed, failed,
 * cancelled or timeout (not a rejection, a draft dropped, nor a service's own record:
 * its instances have theirs), unless sched_cluster_set_accounting() turned them off;
 * kept, newest
 * conf->accounting_history, in memory and by the embedding program's store, whatever
 * becomes of the job's record (a resubmission of the name, max_job_count). Its line is
 * the JSON object cluster/accounting prints (sched_account.c, record_line(), says the
 * fields).
 */
struct sched_acct {
	uint64_t seq;		/* 1, 2, 3 ... never reused, no gaps */
	uint64_t time_usec;	/* when the job ended */
	char job[CONF_NAME_MAX + 1];
	char *line;		/* owned: the JSON line, without a newline */
	size_t line_len;
};

/*
 * sched_event_size() - bytes of @e's own allocation (its line and strings), 0 without
 * one. What struct sched_cluster.event_bytes sums.
 */
size_t sched_event_size(const struct sched_event *e);

/*
 * sched_event_copy() - make @dst a copy of @src (borrowed) with an allocation of its own
 * (release it with sched_event_release()). Returns 0 or -ENOMEM (then @dst is a copy
 * without a line, which owns nothing).
 */
int sched_event_copy(struct sched_event *dst, const struct sched_event *src);

/* sched_event_release() - free what a copy owns; @e is then an event without a line. */
void sched_event_release(struct sched_event *e);

/*
 * Where sched_place() takes NPUs (sched_cluster.placement). Everything else (queues,
 * priorities, backfill, preemption, recovery) is the same under both.
 */
enum sched_placement {
	SCHED_PLACE_TOPOLOGY,	/* design.md §5 (sched_place()): the default, and the only
				 * placement the daemon uses */
	SCHED_PLACE_BLIND,	/* fine-grained and topology-blind, what Kubernetes with
				 * Volcano's gang and binpack plugins gives without Ascend's
				 * topology plugin: any free NPUs, as a gang, of one server
				 * type; no HCCS ring or pair rules, no whole servers above
				 * one, no switch or super pod preference, no suspicion. Set
				 * only by ascend-sim (its "blind" engine), never by the
				 * daemon: rank tables of such placements break the HCCS
				 * rules sched_job_load() checks. sched_cluster_set_placement() */
};

struct sched_cluster {
	struct conf_cluster *conf;	/* owned */
	struct sched_server *servers;	/* conf->server_count entries */
	size_t server_count;
	struct sched_npu *npu_store;	/* every server's NPUs, in inventory order (owned;
					 * each server's npus is its run) */
	const struct conf_server_type *types[16]; /* server types present, inventory order */
	size_t type_count;
	char **switch_names;		/* borrowed from conf, first-seen order */
	size_t switch_count;
	struct sched_job **jobs;	/* owned; active and finished, in submission order */
	size_t job_count, job_cap;
	struct sched_job **job_index;	/* open-addressing hash of jobs by name (borrowed
					 * entries), job_index_cap slots, a power of two;
					 * NULL when it could not be allocated (then lookups
					 * scan jobs) */
	size_t job_index_cap;
	struct sched_devip_index *devip; /* owned: who has which host and device IP
					 * (sched_devip.c); NULL without memory */
	uint64_t next_queue_seq;
	/* pending jobs per queue in service order, kept between passes (sched_pend_order.c);
	 * rebuilt by the next pass when not valid */
	struct sched_pend_order *pend_order;	/* pend_order_count entries */
	size_t pend_order_count;
	bool pend_order_valid;
	uint64_t next_job_serial;
	bool services_dirty;		/* an instance ended, or a service changed, since
					 * sched_service_tick() looked (sched_service.c) */
	bool arrays_dirty;		/* an element ended, or an array changed, since
					 * sched_array_tick() looked (sched_array.c) */
	const char *spread_service;	/* while an instance of this service is placed:
					 * servers that hold another of its instances are
					 * the last choice (sched_place_job()); NULL else */
	struct sched_event *events;	/* ring of event_cap slots, grown (doubling, not
					 * zeroed ahead of use) up to conf->event_history */
	size_t event_head, event_count, event_cap;
	size_t event_bytes;		/* the kept events' own allocations:
					 * sum of sched_event_size() */
	uint64_t next_event_seq;
	struct sched_acct *acct;	/* ring of acct_cap slots (doubling up to
					 * conf->accounting_history): ended jobs
					 * (sched_account.c) */
	size_t acct_head, acct_count, acct_cap;
	uint64_t next_acct_seq;
	uint64_t acct_lost;		/* records not kept for want of memory */
	bool accounting_off;		/* keep no accounting records (ascend-sim, which
					 * reads none: sched_cluster_set_accounting()) */
	struct sched_util_sample *util;	/* SCHED_UTIL_SAMPLES slots once sampled
					 * (sched_util.c) */
	size_t util_head, util_count;
	uint64_t util_last_usec;	/* the last sample's time; 0 none */
	uint64_t events_dropped;	/* events whose own allocation failed since
					 * sched_cluster_new: their seq is used, their text
					 * lost, no view shows them (cluster/status says how
					 * many) */
	uint64_t version;		/* bumped on every change anywhere */
	uint64_t recoveries;		/* jobs moved off failed NPUs or servers */
	unsigned ladder_active;		/* jobs whose recovery ladder has a step waiting
					 * (sched_ladder.c) */
	uint64_t notified_event_seq;	/* for the embedding program, like notified_version */
	uint64_t notified_acct_seq;	/* likewise, of next_acct_seq */
	struct sched_job *dirty_head[SCHED_DIRTY_LIST_COUNT]; /* borrowed: each dirty list,
					 * oldest first, linked by sched_job.dirty[list] */
	struct sched_job *dirty_tail[SCHED_DIRTY_LIST_COUNT];
	size_t dirty_count[SCHED_DIRTY_LIST_COUNT];
	unsigned deps_jobs;		/* jobs whose deps_waiting > 0 (sched_deps.c) */
	bool deps_resolving, deps_again; /* sched_deps_job_ended() is looking, and must
					 * look again */
	bool deps_loading;		/* records are being loaded (sched_job_load()) until
					 * sched_restore_finish() settles them */
	uint64_t jobs_dropped;		/* job records dropped so far (never goes down): an
					 * embedding program compares it to know whether a name
					 * it holds may have gone */
	unsigned npus_total, npus_allocated;
	unsigned *queue_used;		/* per conf->queues entry: NPUs its jobs hold */
	unsigned *queue_quota_file;	/* per conf->queues entry: quota_npus as the
					 * configuration file says (conf's may be changed at
					 * run time) */
	uint64_t preemptions, backfilled, timeouts, resizes; /* counters for metrics */
	uint64_t last_tick_usec;	/* the previous sched_tick() */
	int64_t restore_shift_usec;	/* sched_restore_shift(): added to the saved run
					 * times and deadlines that loads restore */
	uint64_t *removed_serials;	/* with track_removals: serials of job records dropped
					 * since the embedding program last emptied it */
	size_t removed_count, removed_cap;
	bool track_removals;
	bool removed_overflow;		/* a serial could not be recorded (no memory): the
					 * store must compare all of its records */
	const struct sched_job *subject_job; /* while set (by a fault's handler): the job
					 * whose events are about subject_server and
					 * subject_npu (-1 = no one NPU), as their reasons say */
	const char *subject_server;
	int subject_npu;
	enum sched_placement placement;	/* SCHED_PLACE_TOPOLOGY unless
					 * sched_cluster_set_placement() said otherwise */
	bool check_invariants;		/* run sched_check_invariants() after every job
					 * transition and abort on a breach (tests; on by
					 * default in debug builds) */
	bool scan_resume_at_start;	/* set by an embedding program that reads checkpoint
					 * directories (the daemon): a generation of a job with
					 * a checkpoint_dir begins in resume_scan_pending */
	bool resume_scan_wanted;	/* a generation began that waits for that scan; the
					 * embedding program clears it when it collects them */
	struct sched_job *resume_wait_head, *resume_wait_tail; /* borrowed: the jobs with
					 * resume_scan_pending, oldest wait first, linked by
					 * sched_job.resume_wait: what the tick looks at */
	size_t resume_wait_count;
	uint64_t place_now_usec;	/* time of the entry point that is placing jobs now
					 * (sched_server_is_suspect() during placement) */
	unsigned suspect_count;		/* servers with suspect set */
	uint64_t suspect_sig;		/* which ones, as a signature (the kept pass holds
					 * only while the same servers are suspect) */
	struct sched_placeidx *placeidx; /* owned: servers by what a placement can take
					 * from them (sched_placeidx.c); NULL without memory
					 * (then placement scans every server) */
	struct sched_hold *holds;	/* owned: checked submissions not made yet, each
					 * holding a record (sched_job_check_hold) */
	size_t hold_count;
	struct sched_hold **hold_index;	/* owned: the holds by name, hold_index_cap
					 * chains (a power of two; NULL without memory:
					 * then the list is searched). Closes that came
					 * back before their releases were served hold a
					 * name each: a burst holds thousands */
	size_t hold_index_cap;
	size_t live_job_count;		/* drafts and active jobs (records that cannot be
					 * dropped): what reserved_job_count bounds */
	struct sched_uid_jobs *uid_jobs; /* the job-count limits' counts: each uid's
					 * drafts and active jobs, each uid's and everyone's
					 * active jobs per queue; open addressing,
					 * uid_jobs_cap slots, a power of two; kept by
					 * sched_limits.c at every transition */
	size_t uid_jobs_cap, uid_jobs_used;
	bool uid_jobs_lost;		/* the table could not grow (no memory): the count
					 * scans jobs from then on */
	bool defer_passes;		/* sched_cluster_set_deferred_passes(): a change that
					 * asks for a pass marks it owed instead of running it */
	bool pass_owed;			/* a deferred pass waits for sched_pass_run_owed() */
	uint64_t pass_retry_usec;	/* an owed pass that memory cut short runs again from
					 * then on, not before (0: at once) */
	uint64_t pass_requests;		/* sched_pass_request() calls, deferred or not */
	uint64_t passes_run;		/* passes they ran: at once, or owed and run */
	uint64_t mutations;		/* bumped by every change a pass's decisions depend
					 * on (sched_job_touch(), sched_cluster_changed(),
					 * every event): what tells an incremental pass
					 * whether the kept state still holds */
	struct sched_kept_pass *kept_pass; /* owned (sched_pass.c): where the last pass
					 * ended, while nothing but new submissions came
					 * since (kept_mark == mutations); NULL when not kept */
	uint64_t kept_mark;
	bool incremental_off;		/* sched_cluster_set_incremental(c, false) */
	uint64_t passes_incremental;	/* passes that tried only the new jobs */
	struct sched_reason_str **reason_table; /* the interned job reasons and preemptors
					 * (sched_reason.c):
					 * chained hash, reason_table_cap buckets (a power of
					 * two, 0 before the first), reason_count strings
					 * (a kept pass holds up to 32 that no job may hold
					 * any more: its shared reasons, sched_pass.h) */
	size_t reason_table_cap, reason_count;
};

/*
 * sched_cluster_new() - build the model from @conf (stolen: freed with the cluster, and
 * freed on failure too). Returns 0 and *ret, or -ENOMEM.
 */
int sched_cluster_new(struct conf_cluster *conf, struct sched_cluster **ret);

/* sched_cluster_free() - free @c, its jobs, events and conf. NULL is fine. */
void sched_cluster_free(struct sched_cluster *c);

/* sched_cluster_find_job() - the job called @name or NULL (borrowed). */
struct sched_job *sched_cluster_find_job(struct sched_cluster *c, const char *name);

/*
 * sched_job_touch() - @j (borrowed, in c->jobs) changed: bump j->version and put it on
 * every dirty list it is not on yet, at the tail. O(1); touching a job already on a list
 * keeps its place there. Every change to a job goes through it (never j->version++):
 * a job whose version moved is on each list until that list's reader takes it, except
 * a pending job whose only change is the reason a pass gave it: that is not on the
 * store's list (sched_job_set_pending_reason() in sched_internal.h).
 */
void sched_job_touch(struct sched_cluster *c, struct sched_job *j);

/*
 * sched_job_mark_unannounced() - put @j (borrowed, in c->jobs) on the notifier's list
 * (SCHED_DIRTY_NOTIFY) alone, its version and the cluster's mutations unchanged: for an
 * embedding program that puts a restored cluster in place of another and finds @j
 * changed since its watchers were last told (the daemon's standby views). Nothing is
 * written again, and a kept pass stays usable. O(1).
 */
void sched_job_mark_unannounced(struct sched_cluster *c, struct sched_job *j);

/*
 * sched_dirty_pop() - take the oldest job off dirty list @list: the job (borrowed), or
 * NULL when the list is empty. A job touched after it was taken is put back, at the
 * tail: a reader that takes jobs, releases its lock and writes them sees the later
 * change on its next round. To look without taking, walk c->dirty_head[list] through
 * j->dirty[list].next (no change to the cluster meanwhile).
 */
struct sched_job *sched_dirty_pop(struct sched_cluster *c, enum sched_dirty_list list);

/* sched_cluster_find_server() - index of the server called @name, or -ENOENT. */
int sched_cluster_find_server(const struct sched_cluster *c, const char *name);

/*
 * sched_job_create_draft() - a job directory made with mkdir: state draft, owned by
 * @uid/@gid. Returns 0 (*ret borrowed, may be NULL), -EINVAL bad name, -EEXIST an active
 * job or draft of that name exists, -EPERM another user's finished job has it, -EAGAIN
 * no record for it (max_job_count, or for anyone but root the job-count limits, see
 * sched_job_check_as(); a "refused" event says why), -ENOMEM. A terminal job of that
 * name is replaced. @uid is taken for no operator: see sched_job_create_draft_as().
 */
int sched_job_create_draft(struct sched_cluster *c, const char *name, uid_t uid, gid_t gid,
			   uint64_t now_usec, struct sched_job **ret);

/*
 * sched_job_create_draft_as() - sched_job_create_draft() by a member of
 * cluster.operator_group when @is_operator (exempt from the job-count limits as root
 * is). On -EAGAIN @reason (SCHED_REASON_MAX bytes, may be NULL) gets the sentence.
 */
int sched_job_create_draft_as(struct sched_cluster *c, const char *name, uid_t uid, gid_t gid,
			      bool is_operator, uint64_t now_usec, char *reason,
			      struct sched_job **ret);

/*
 * sched_job_may_submit() - may @uid submit a job called @name now? Returns 0, -EINVAL
 * (not a valid job name), -EEXIST (an active job has it) or -EPERM (a draft or finished
 * job of another user has it; only its owner or root may replace it).
 */
int sched_job_may_submit(struct sched_cluster *c, const char *name, uid_t uid);

/*
 * sched_job_check() - would sched_job_submit() accept @spec (borrowed) from @uid now?
 * The same checks, no state change: name, ownership, queue, the queue's job caps, quota,
 * server type and whether the job could ever fit. Returns 0 or an error as
 * sched_job_submit() does, with @reason filled. @uid is taken for no operator: callers
 * that know the submitter's groups use sched_job_check_as().
 */
int sched_job_check(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
		    char *reason);

/*
 * sched_job_check_as() - sched_job_check() for a submitter who is a member of
 * cluster.operator_group when @is_operator (the caller resolves membership: sched makes
 * no system calls). Root (@uid 0) and operators are exempt from the job caps of the
 * spec's queue (struct conf_queue: max_priority, max_npus, max_time_limit); for anyone
 * else a spec over one is -EACCES with a @reason that names the value, the cap, the
 * queue and the uid, who may exceed it and what to do, e.g.
 * `priority 1000 exceeds queue "default"'s max_priority 900 for uid 1000 (only root may
 * exceed it); lower priority to at most 900 or ask an operator`. The caps are checked
 * after the name and the queue's existence, before quota and size.
 * Then the job-count limits (issue 15 item 5; sched_limits.c), which bind all but root
 * and operators: the submitter's drafts and active jobs (pending, running, recovering,
 * stopping) under cluster.max_job_count_per_user, everyone's under max_job_count less
 * cluster.reserved_job_count, and the submitter's and everyone's active jobs in the
 * queue under its max_submit_jobs_per_user and max_submit_jobs (0 = none). Finished
 * records never count (at max_job_count the oldest is dropped); filling one's own draft
 * adds no record. Over one: -EAGAIN, as for max_job_count (no room for a record now,
 * nothing is recorded), with a @reason naming the count, the limit, the queue and the
 * fix, e.g. `uid 1000 already has 2 pending or running jobs in queue "debug", its
 * max_submit_jobs_per_user 2 (only root may exceed it); wait for some to end, cancel
 * some, use another queue or ask an operator`.
 */
int sched_job_check_as(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
		       bool is_operator, char *reason);

/*
 * sched_job_check_hold() - sched_job_check_as(), and on success a hold (*@io_hold, owned
 * by the caller until it passes it to sched_job_submit_held() or sched_hold_drop()):
 * for a caller that answers "accepted" now and submits later (the daemon checks a spec
 * at close and submits it at release). While held, a record under max_job_count is set
 * aside for @spec->name (held records and holds never exceed it, and a held finished
 * record is never dropped to make room), and the name is the holder's: anyone else's
 * check, submission, rejection or draft of it is -EBUSY. The checks' answer stands:
 * sched_job_submit_held() does not repeat them.
 * @io_hold: in, NULL or this caller's hold from an earlier check of the same name and
 * @uid (kept: a second check under one hold takes no second record; a hold of another
 * name or uid is dropped first); out, the hold on success, NULL on failure (the hold is
 * dropped: what a later check refused, no earlier check holds).
 * Returns 0 or an error as sched_job_check_as(), -EBUSY (held for another), -ENOMEM.
 */
int sched_job_check_hold(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
			 bool is_operator, char *reason, struct sched_hold **io_hold);

/*
 * sched_job_submit_held() - admit @spec (stolen, freed on failure too) as a hold's
 * submission: the hold *@hold (consumed: *@hold is NULL on return, failure too) must be
 * of @spec->name and @uid, from sched_job_check_hold() of this spec. Nothing checked at
 * the hold is checked again (a quota lowered meanwhile leaves the job pending, as it
 * would an older one); the hold guarantees the record. Returns 0 and *ret (borrowed,
 * may be NULL), -ENOMEM, or -EINVAL when the hold is not this spec's (a caller's bug).
 */
int sched_job_submit_held(struct sched_cluster *c, struct sched_hold **hold,
			  struct conf_job_spec *spec, uid_t uid, gid_t gid, uint64_t now_usec,
			  char *reason, struct sched_job **ret);

/* sched_hold_drop() - give up the hold *@hold (NULL is fine); *@hold becomes NULL. */
void sched_hold_drop(struct sched_cluster *c, struct sched_hold **hold);

/*
 * sched_job_submit() - admit @spec (stolen, freed on failure too) for @uid/@gid.
 * The job becomes pending, then a scheduling pass runs, so it may be running on return
 * (with deferred passes, sched_pass_request(), the pass is owed instead: pending until
 * sched_pass_run_owed()).
 * A job that can never fit, names an unknown queue or asks for an illegal size is NOT
 * created: returns -EINVAL or -ENOSPC with the sentence in @reason (size
 * SCHED_REASON_MAX); the caller records it with sched_job_reject().
 * An existing draft of the same name owned by @uid (or @uid 0) is filled in; a
 * terminal job of the same name owned by @uid (or @uid 0) is replaced; an active one
 * gives -EEXIST, another user's -EPERM (see sched_job_may_submit).
 * A spec without time_limit gets its queue's default_time_limit, or else its
 * max_time_limit (Slurm's DefaultTime, then MaxTime), whoever submits it; the job's
 * spec_text shows it.
 * Returns 0 and *ret (borrowed, may be NULL), or -EINVAL, -ENOSPC, -EEXIST, -EPERM,
 * -EACCES (over a job cap, see sched_job_check_as), -EAGAIN (max_job_count or a
 * job-count limit: no record is made, a "refused" event of no job says
 * `job <name> by uid <uid> not submitted: <reason>`), -ENOMEM, with @reason
 * filled for all but -ENOMEM. @uid is taken for no operator (sched_job_submit_as).
 */
int sched_job_submit(struct sched_cluster *c, struct conf_job_spec *spec, uid_t uid, gid_t gid,
		     uint64_t now_usec, char *reason, struct sched_job **ret);

/*
 * sched_job_submit_as() - sched_job_submit() by a member of cluster.operator_group when
 * @is_operator: exempt from the job caps as root is (sched_job_check_as).
 */
int sched_job_submit_as(struct sched_cluster *c, struct conf_job_spec *spec, uid_t uid,
			gid_t gid, bool is_operator, uint64_t now_usec, char *reason,
			struct sched_job **ret);

/*
 * sched_job_reject() - record a refused submission of job @name: the job shows state
 * rejected and @reason (borrowed), and a rejected event is appended. Replaces a draft or
 * terminal job of that name; an active job of that name is left alone and -EEXIST is
 * returned (its reason is not overwritten), and another user's record -EPERM.
 * No NPU, queue or other job changes. Returns 0, -EINVAL (bad name), -EEXIST, -EPERM
 * or -ENOMEM.
 */
int sched_job_reject(struct sched_cluster *c, const char *name, uid_t uid, gid_t gid,
		     const char *reason, uint64_t now_usec);

/*
 * sched_job_cancel() - cancel @name on behalf of @uid (0 = root may cancel any).
 * A draft or pending job (no NPUs) is cancelled at once. A running job goes stopping
 * (stop_to cancelled, event "cancelled" with state "stopping"): it leaves its servers'
 * jobs lists, so the agents SIGTERM its processes, and it keeps its NPUs until they are
 * gone (see SCHED_JOB_STOPPING: the agents' `running` lines, or stop_deadline_usec);
 * then it is cancelled and a pass runs. A server that has never reported has no agent:
 * nothing there starts or stops processes or reports them gone, so its share counts as
 * gone at once (a cluster without agents cancels at once, as before). A job already
 * stopping keeps its deadline and
 * ends cancelled (stop_cancelled). Cancelling a terminal job, or again a job stopping
 * to cancelled, is a no-op returning 0. A service (serving) is cancelled at once, and
 * each of its active instances as above. Returns -ENOENT, -EPERM.
 */
int sched_job_cancel(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec);

/*
 * ---- job arrays (sched_array.c) ----
 * A training spec with `array:` (struct conf_job_array, Slurm's sbatch --array) is
 * admitted as an array record, state array, which holds no NPUs, and one job per index,
 * its elements: named <array>.<index>, each a copy of the spec without `array:`, placed
 * as a gang of its own by the same rules, queue and priority as any job, owned by the
 * array's owner, with ASCEND_ARRAY_JOB, ASCEND_ARRAY_INDEX and ASCEND_ARRAY_COUNT in its
 * environment (Slurm's SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT).
 * Rules:
 *  - elements are made in index order, at most the throttle (%N) active at once (all
 *    at once without one); the next is made within a tick of one ending
 *    (sched_array_tick()); each takes the array's place in its queue (queue_seq: the
 *    array keeps the CONF_ARRAY_INDEX_MAX + 1 numbers after its own), in index order;
 *  - an array admitted again removes its earlier run's ended element records;
 *  - an element that cannot be made yet (no job record free under max_job_count, its
 *    owner's job-count limits, its name held by another active job) waits, the array's
 *    reason says why, and it is tried again every tick (a later index whose name is
 *    free goes first); the array's record counts as one of its owner's jobs and one
 *    of the cluster's records, never in its queue, and stands for its first element:
 *    with none active, the next is counted as that record, so an array never waits
 *    for itself;
 *  - an element runs, fails, is requeued, held, changed or cancelled as any job (its
 *    cancel or rmdir ends that element only); how it ended is kept in the array's
 *    record, whatever becomes of the element's own record later;
 *  - the array ends once every element has ended: completed when all completed, else
 *    failed (its reason counts how they ended), which is what an afterok dependency on
 *    the array waits for (Slurm: a dependency on an array job is on all its elements);
 *    cancelling the array cancels its active elements and makes no more, and it ends
 *    cancelled once they have stopped (rmdir: at once);
 *  - while the array is active (pending on its after:, or making elements) no other job
 *    may take a name <array>.<index> of its indexes (sched_array_owning_name());
 *  - `after:` is the array's as a whole: it is pending (held, never placed) until those
 *    jobs, the records named at its submission, ended as asked, then makes elements,
 *    which wait for nothing; one that can never be met cancels the array;
 *  - an `after:` naming an element the active array has not made is refused.
 */

/* sched_job_is_array() - is @j an array's record (active or ended)? */
bool sched_job_is_array(const struct sched_job *j);
/* sched_job_is_array_element() - is @j an element of an array (j->array_serial)? */
bool sched_job_is_array_element(const struct sched_job *j);

/*
 * sched_array_of() - the array record element @j belongs to, or NULL (no element, or
 * its array's record is gone or is another of the same name).
 */
struct sched_job *sched_array_of(struct sched_cluster *c, const struct sched_job *j);

/*
 * sched_array_owning_name() - the active array that owns name @name (<array>.<index>,
 * an index of its set), or NULL: no other job may take that name.
 */
struct sched_job *sched_array_owning_name(struct sched_cluster *c, const char *name);

/*
 * sched_array_tick() - make the elements each active array may make now, and end the
 * arrays whose elements have all ended. Cheap while nothing changed since the last call
 * (c->arrays_dirty). Called by sched_tick(). Returns how many elements it made plus how
 * many arrays ended.
 */
unsigned sched_array_tick(struct sched_cluster *c, uint64_t now_usec);

/*
 * ---- services (sched_service.c) ----
 * A spec of kind service is admitted as a service record, state serving, which holds no
 * NPUs, and `replicas` instances: jobs named <service>.<index> (index 0 to replicas - 1),
 * each a copy of the spec placed as a gang of its own, by the same rules, queue and
 * priority as any job, owned by the service's owner. An instance's processes are started
 * again whenever they end, with any status, and a fault moves it as any job's; an
 * instance that ends anyway (failed, timed out) is replaced by a new one of the same
 * name within a tick (sched_service_tick()), while its service serves. The service's
 * cancel cancels its instances; its instances are not cancelled or removed one by one
 * (the caller refuses that: the service's `scale` says how many there are). While a
 * service serves, no other job may take a name <service>.<digits>.
 */

/* sched_job_is_service() - is @j a service's record (serving or ended)? */
bool sched_job_is_service(const struct sched_job *j);
/* sched_job_is_instance() - is @j an instance of a service (j->service)? */
bool sched_job_is_instance(const struct sched_job *j);

/*
 * sched_service_instance_name() - "<service>.<index>" into @buf (@len bytes; a service's
 * name leaves room: CONF_SERVICE_NAME_MAX). Returns 0 or -ENAMETOOLONG.
 */
int sched_service_instance_name(const char *service, unsigned index, char *buf, size_t len);

/*
 * sched_service_instance() - the record named <@svc's name>.<@index> when it is an
 * instance of @svc, else NULL (none, or another job's name).
 */
struct sched_job *sched_service_instance(struct sched_cluster *c,
					 const struct sched_job *svc, unsigned index);

/*
 * sched_service_of() - the serving service that owns name @name (<service>.<digits>),
 * or NULL: no job but its instance may take such a name while it serves.
 */
struct sched_job *sched_service_of(struct sched_cluster *c, const char *name);

/*
 * sched_service_owning_name() - the serving service that owns name @name, or NULL: an
 * instance's (sched_service_of()), or <service>.controller / <service>.coordinator of a
 * disaggregated service (its roles' runs, enum sched_role). No job takes such a name.
 */
struct sched_job *sched_service_owning_name(struct sched_cluster *c, const char *name);

/*
 * sched_service_scale() - set service @name's replicas to @replicas (0 to
 * CONF_SERVICE_REPLICAS_MAX) on behalf of @uid (its owner or 0): instances below the new
 * count are made as needed, those at or above it cancelled (the highest indexes go
 * first, as a StatefulSet scales down). An event says from and to. Returns 0,
 * -ENOENT, -EPERM, -EINVAL (not a serving service, or @replicas out of range: @reason,
 * SCHED_REASON_MAX, says which) or -ENOMEM.
 */
int sched_service_scale(struct sched_cluster *c, const char *name, uid_t uid, unsigned replicas,
			uint64_t now_usec, char *reason);

/*
 * sched_service_ready() - instance @name's master answers on the service's port
 * (@ready), or no longer does, in @generation, as its agent's probe or the process
 * itself reports (ctl "ready <generation>" / "unready <generation>"), on behalf of @uid
 * (the owner or 0). A report of an older generation, or one that changes nothing, is
 * ignored (0). A change is an event "ready" with the address. Returns 0, -ENOENT,
 * -EPERM, -EINVAL (not a service's instance: @reason says so) or -EBUSY (not running).
 */
int sched_service_ready(struct sched_cluster *c, const char *name, uid_t uid,
			unsigned generation, bool ready, uint64_t now_usec, char *reason);

/*
 * sched_service_role() - "prefill" or "decode": instance @j's role in its service's
 * disaggregated layout (indexes below the spec's prefill count are prefill instances),
 * or NULL (no instance, or no disaggregated layout). Static string.
 */
const char *sched_service_role(const struct sched_job *j);

/*
 * The disaggregated layout's controller and coordinator (MindIE MS's ms_controller and
 * ms_coordinator: no NPUs, one process each), when the spec gives a role as `{server,
 * command}` (conf_job_spec.controller_command, coordinator_command); a role given by
 * its server alone is the site's to start. Rules (sched_service_roles.c):
 *  - while the service serves, each such role runs: run <service>.<role> on its server,
 *    in nodes/<server>/jobs as "<service>.<role> <generation> <role> 0 0 0 <uid> <gid>
 *    <serial> 0 0" (sched_render_server_jobs()), with jobs/<service>/roles/<role>.env
 *    (sched_render_role_env()); its agent runs the command and reports its end with
 *    ctl "exit <generation> <server> <status> <role>" (sched_service_role_exit());
 *  - a role that ends (any status: it serves until its service is cancelled) starts
 *    again as the next generation, after the restart back-off an instance has
 *    (SCHED_BACKOFF_*: at once when it ran SCHED_BACKOFF_RESET_USEC, else a wait that
 *    doubles); events "backoff" and "placed" say so, status.json's "roles" shows it;
 *  - the role stays on the server its spec names: a fault or a drain of that server
 *    does not move it (a site that wants it elsewhere submits the service again);
 *  - the generations are saved with the service's record, and so is a back-off's end,
 *    so a daemon restart leaves a running role's process alone and starts an ended one
 *    when it was due; the back-off's length is not (after a restart the next quick end
 *    starts again at once, as a first one does).
 */
struct sched_render_ctx;

enum sched_role {
	SCHED_ROLE_CONTROLLER,
	SCHED_ROLE_COORDINATOR,
	SCHED_ROLE_COUNT
};

/* One role's run, an entry of sched_job.roles. */
struct sched_role_run {
	unsigned generation;		/* from 1, +1 per start; 0: this role is not run */
	uint64_t started_usec;		/* when this generation began (0 restored) */
	uint64_t backoff_usec;		/* the next quick end's wait; 0 = at once */
	uint64_t restart_at_usec;	/* an end waits out its back-off until then; 0 none */
	unsigned restarts;		/* starts after the first, since the daemon started */
	int last_exit;			/* the status of the last end, -1 = none */
};

/* sched_role_name() - "controller" or "coordinator"; NULL for another value. */
const char *sched_role_name(enum sched_role role);

/* sched_role_from_name() - the role named @name, or -1. */
int sched_role_from_name(const char *name);

/*
 * sched_service_role_server() - the server index service @svc's @role runs on, or -1
 * (not a disaggregated service, or its server is not in the inventory).
 */
int sched_service_role_server(const struct sched_cluster *c, const struct sched_job *svc,
			      enum sched_role role);

/*
 * sched_service_role_run() - @svc's run of @role, or NULL when ascendfs does not run it
 * (no command, or the service does not serve). Borrowed.
 */
const struct sched_role_run *sched_service_role_run(const struct sched_job *svc,
						    enum sched_role role);

/*
 * sched_service_role_exit() - the process of @svc's (@name) @role ended with @status on
 * @server in @generation, as its agent reports (ctl "exit <generation> <server> <status>
 * <role>"), on behalf of @uid (the owner or 0). The role starts again: now, or after its
 * back-off (sched_service_roles_due()). A report of an older generation, or of a role
 * that restarts already, is ignored (0). Returns 0, -ENOENT, -EPERM, -EBUSY (the service
 * does not serve) or -EINVAL (@role is not run by ascendfs, @server is not its server, or
 * @generation is newer than its newest: @reason, SCHED_REASON_MAX, says so).
 */
int sched_service_role_exit(struct sched_cluster *c, const char *name, uid_t uid,
			    enum sched_role role, unsigned generation, const char *server,
			    int status, uint64_t now_usec, char *reason);

/*
 * sched_service_roles_due() - start again the roles of @svc whose back-off ended by
 * @now_usec (sched_tick()). Returns how many started.
 */
unsigned sched_service_roles_due(struct sched_cluster *c, struct sched_job *svc,
				 uint64_t now_usec);

/*
 * sched_service_roles_restore() - after a restore, @svc's runs as saved: @generations
 * and @restart_at_usec (SCHED_ROLE_COUNT entries each; generation 0 = none saved; a
 * restart time, on this daemon's clock, 0 = none: a generation that ended and waits out
 * its back-off). Returns 0 or -ENOMEM.
 */
int sched_service_roles_restore(struct sched_job *svc, const unsigned *generations,
				const uint64_t *restart_at_usec);

/*
 * sched_render_role_env() - jobs/<service>/roles/<role>.env of serving service @svc:
 * ASCEND_JOB_ID (<service>.<role>), ASCEND_JOB_GENERATION (the role's), ASCEND_JOB_DIR
 * (the service's directory), ASCEND_SERVICE, ASCEND_SERVICE_ROLE (the role),
 * ASCEND_SERVICE_PORT, GLOBAL_RANK_TABLE_FILE_PATH (the table MindIE MS's controller
 * reads), the role server's HOST_IP, POD_IP and MIES_CONTAINER_IP (MindIE MS's
 * deployment names the process's own address POD_IP), and ASCEND_SERVER_NAME. *ret new
 * (free()). 0, -ENOENT (the role is not run) or -ENOMEM.
 */
int sched_render_role_env(const struct sched_cluster *c, const struct sched_job *svc,
			  enum sched_role role, const struct sched_render_ctx *ctx, char **ret,
			  size_t *ret_len);

/*
 * sched_render_global_ranktable() - jobs/<service>/global_ranktable.json of a
 * disaggregated service @svc (sched_global_ranktable.c says the shape and its source,
 * MindIE Motor's controller): the coordinator's and controller's servers, then one group
 * per running instance whose rank table is completed, prefill ones first. *ret new
 * (free()). 0, -ENOENT (not a disaggregated service) or -ENOMEM.
 */
int sched_render_global_ranktable(const struct sched_cluster *c, const struct sched_job *svc,
				  char **ret, size_t *ret_len);

/* sched_job_is_ready() - is instance @j running and ready in its generation? */
bool sched_job_is_ready(const struct sched_job *j);

/*
 * sched_render_service_endpoints() - jobs/<service>/endpoints: one line per instance
 * below its replicas that runs and is ready (sched_service_ready()), in index order:
 * "<instance> <host_ip>:<port>\n", host_ip the instance's first server's (rank 0's, the
 * MindIE master, the only one that takes requests), port the spec's. Empty when none
 * runs. *ret new (free()). 0 or -ENOMEM.
 *
 * sched_render_instance_endpoint() - jobs/<service>.<index>/endpoint: "<host_ip>:<port>\n"
 * of a placed instance, as above. 0, -ENOENT (not a placed instance) or -ENOMEM.
 */
int sched_render_service_endpoints(const struct sched_cluster *c, const struct sched_job *svc,
				   char **ret, size_t *ret_len);
int sched_render_instance_endpoint(const struct sched_cluster *c, const struct sched_job *j,
				   char **ret, size_t *ret_len);

/*
 * sched_render_instance_mindie() - jobs/<service>.<index>/mindie.json: what of MindIE
 * Server's config.json (MindIE Server configuration reference) the placement decides,
 * for a launcher to merge into the model's own config.json before it starts
 * mindieservice_daemon (MIES_CONFIG_JSON_PATH names the merged file):
 *   {"ServerConfig": {"port": <port>},
 *    "BackendConfig": {"multiNodesInferEnabled": <more than one server>,
 *      "npuDeviceIds": [[<the first server's device ids>]],
 *      "ModelDeployConfig": {"ModelConfig": [{"worldSize": <NPUs on one server>}]}}}
 * With multi-node inference MindIE takes the devices and world from the rank table
 * (RANK_TABLE_FILE); ServerConfig.ipAddress is left out: MIES_CONTAINER_IP (env) names
 * each server's own address, which MindIE prefers. 0, -ENOENT (not a placed instance) or
 * -ENOMEM.
 */
int sched_render_instance_mindie(const struct sched_cluster *c, const struct sched_job *j,
				 char **ret, size_t *ret_len);

/*
 * Restart back-off (Kubernetes' CrashLoopBackOff: the kubelet's restart delay doubles
 * from 10 s to 300 s and resets after 10 min of running; Kubernetes docs, "Pod
 * Lifecycle", container restarts). An instance has no restart budget, so a process that
 * exits at once (a bad model path, a port taken) would otherwise start again many times
 * a second, each a generation, an event and a history line. The rule here: an ended
 * process of an instance starts again at once when its processes ran
 * SCHED_BACKOFF_RESET_USEC since they last started (or never backed off); otherwise its
 * restart waits the instance's back-off, which starts at SCHED_BACKOFF_INITIAL_USEC
 * (shorter than Kubernetes' 10 s: a service waits for it, and one quick end is often a
 * peer's) and doubles on each wait up to SCHED_BACKOFF_MAX_USEC. While it waits the
 * instance runs its other processes in the same generation, is not ready, and says
 * "back-off" in its reason with the time it starts again (event "backoff"); a fault of
 * its NPUs meanwhile moves it as before, and the move ends the wait. Faults of NPUs or
 * servers are not backed off: they are not the instance's doing. Training jobs are not
 * backed off: max_restarts ends their loops.
 */
#define SCHED_BACKOFF_INITIAL_USEC	1000000ull
#define SCHED_BACKOFF_MAX_USEC		300000000ull
#define SCHED_BACKOFF_RESET_USEC	600000000ull

/*
 * sched_service_hold_restart() - a process of instance @j (index @process, on server
 * index @server) ended at @now_usec for @why, and its restart is due: start it now
 * (false: the caller restarts it, sched_job_restart()) or hold it for the back-off
 * (true: sched_tick() restarts it when due; @why copied). An end while a restart is
 * held already joins it (true). Without memory to hold it the restart happens now.
 */
bool sched_service_hold_restart(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
				const char *why, int server, long process);

/*
 * sched_service_restart_due() - @j's held restart is due at @now_usec: run it
 * (sched_job_restart(), the recovery ladder) and clear the hold. Returns 1 when it ran,
 * 0 when nothing was held or due.
 */
unsigned sched_service_restart_due(struct sched_cluster *c, struct sched_job *j,
				   uint64_t now_usec);

/* sched_service_hold_clear() - forget @j's held restart (a new generation began). */
void sched_service_hold_clear(struct sched_job *j);

/*
 * Disruptions (Kubernetes' PodDisruptionBudget, "Disruptions" in its docs; Volcano's
 * `preemptable` annotation). Faults are involuntary and move an instance whatever this
 * says; preemption and a drain are voluntary and follow it:
 *  - an instance is available while it runs and is ready (sched_job_is_ready()), or
 *    runs on a first server whose agent never reported (nothing probes it there);
 *  - a service may lose at most `max_unavailable` instances below its replicas to
 *    voluntary disruptions: one more may be disrupted while more than replicas -
 *    max_unavailable are available (sched_service_disruptions_allowed()); an instance
 *    that is not available costs nothing to disrupt;
 *  - preemption passes over a service's instances unless its spec says `preemptible:
 *    true`, and then takes no more available instances of it than the budget allows (a
 *    set of victims that would waits; the preemptor tries again each pass, and its
 *    pending reason names the service and the rule, sched_service_hold_note());
 *  - an instance of a service that may not be preempted is never placed beyond its
 *    queue's quota (it could not give borrowed NPUs back): it waits for quota instead;
 *  - a drain (sched_server_set_cordon(), drain) moves the instances on the draining
 *    server, each as soon as the budget allows: a new generation on other servers
 *    (kept servers of a multi-server instance stay), not a restart (restarts and
 *    back-off are untouched), event "moved"; so with the default budget of 1 the
 *    replicas move one at a time, each once the one before is ready again. An instance
 *    with no room elsewhere, or whose service allows no disruption, stays and keeps the
 *    server draining; an event says so once. Training jobs on it run to their end.
 */

/*
 * sched_service_disruptions_allowed() - how many more available instances of service
 * @svc voluntary disruptions may take now: available ones below replicas, less replicas
 * - max_unavailable (never below 0).
 */
unsigned sched_service_disruptions_allowed(struct sched_cluster *c, const struct sched_job *svc);
/* sched_service_available() - available instances of @svc below its replicas (0 when it
 * does not serve). */
unsigned sched_service_available(struct sched_cluster *c, const struct sched_job *svc);

/*
 * sched_service_may_preempt() - may preemption take instance @j at all (its spec says
 * preemptible, and it is not available or its service's budget allows one)?
 * sched_service_victims_fit_budget() - does victim set @v (@n jobs, any kinds) take no
 * more available instances of any service than its budget allows? Both true for jobs
 * that are no instance.
 */
bool sched_service_may_preempt(struct sched_cluster *c, const struct sched_job *j);
/* sched_service_may_borrow() - may @j be placed beyond its queue's quota (any job but an
 * instance of a service that may not be preempted)? */
bool sched_service_may_borrow(const struct sched_job *j);
bool sched_service_victims_fit_budget(struct sched_cluster *c, struct sched_job *const *v,
				      size_t n);

/*
 * sched_service_hold_note() - why the instances among @held (@n running jobs on the
 * NPUs a job waits for; @lower[i]: held[i]'s priority is below that job's) do not make
 * way: a clause for the job's pending reason into @buf (size @len, NUL-terminated). It
 * names the first service whose instances of lower priority preemption passes over,
 * and by what (its spec does not say preemptible, or taking those of @held would spend
 * more than its budget allows now); else the first service among @held at all (its
 * instances run until it is cancelled or scaled down, and their priority, or the
 * cluster's resource.preemption: false, keeps them); "" when @held holds no instance.
 */
void sched_service_hold_note(struct sched_cluster *c, struct sched_job *const *held,
			     const bool *lower, size_t n, char *buf, size_t len);

/*
 * sched_service_drain() - move the instances on draining servers as their services'
 * budgets allow (above). Called by sched_tick(); costs O(servers) while none drains.
 * Returns how many instances it moved.
 */
unsigned sched_service_drain(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_service_tick() - make every serving service's instances match its replicas:
 * an instance below the count that is missing or ended is made anew (the name's old
 * record replaced), one at or above it is cancelled. Cheap while no instance ended
 * since the last call (c->services_dirty). Called by sched_tick(). Returns how many
 * instances it made or cancelled.
 */
unsigned sched_service_tick(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_job_complete() - the owner says running job @name is done: it goes stopping
 * (stop_to completed, event "completed" with state "stopping") and is completed once
 * its processes are gone, as sched_job_cancel() does. Returns -ENOENT, -EPERM, -EBUSY
 * (not running: a job already stopping included).
 */
int sched_job_complete(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec);

/*
 * ---- job control (sched_control.c): Slurm's scontrol hold, release, requeue, update ----
 * Each is asked for by the job's owner or root (@uid 0), through jobs/<job>/ctl; on
 * failure @reason (SCHED_REASON_MAX) says why and what to do, and nothing changed.
 * A service's instances are its service's to manage (-EINVAL), and a service record
 * is not a job that runs (-EBUSY).
 *
 * A hold keeps a pending job from starting. It stays pending (status "pending", as
 * Slurm shows a held job PD), every scheduling pass passes it by (no placement, no
 * backfill reservation, no preemption on its behalf), and its reason says who held it
 * and how to release it. The owner's hold (Slurm's user hold) is released by the owner
 * or root, root's hold of another user's job (an admin hold) by root only. A job
 * stopping towards pending (preempted or requeued) may be held too: it is pending and
 * held once its processes are gone. A hold does not call off a preemption the job
 * began: its victims still stop and wait pending like any job (released, the job may
 * preempt again). A hold is saved with the job.
 */
enum sched_job_hold {
	SCHED_HOLD_NONE,
	SCHED_HOLD_USER,	/* by its owner: the owner or root releases it */
	SCHED_HOLD_ADMIN,	/* by root, of another's job: root releases it */
};

/*
 * sched_job_hold() - hold pending @name (or one stopping towards pending). Holding a
 * held job again is a no-op (0), except that root's hold makes a user hold an admin
 * hold. Event "held". Returns 0, -ENOENT, -EPERM, -EINVAL (an instance), -EBUSY (any
 * other state: a running job is requeued first, "requeue" then "hold").
 */
int sched_job_hold(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec,
		   char *reason);

/*
 * sched_job_release() - let held @name start again: it takes its turn in its queue as
 * before the hold (its priority and submission order), at the next pass. Releasing a
 * job that is not held is a no-op (0). Event "released". Returns 0, -ENOENT, -EPERM
 * (not the owner, or the owner and an admin hold: @reason says so).
 */
int sched_job_release(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec,
		      char *reason);

/*
 * sched_job_requeue() - stop running (or recovering) @name and make it pending again,
 * as Slurm's `scontrol requeue`: it goes stopping (stop_to pending, event "requeued"),
 * keeps its NPUs until its processes are gone, then is pending with the cause
 * SCHED_REQUEUE_REQUESTED and starts again as a new generation from its newest
 * checkpoint, in its place in its queue. Its time_limit counts the time it ran, as
 * after a preemption (one used up ends it timeout instead). With @hold it is held too,
 * in the same request (Slurm's `requeuehold`: event "held"), so it stays pending. Another
 * job's recovery does not take a requeue in flight for a preemption. A job already
 * stopping towards pending is not stopped again (with @hold, it is held). Returns 0,
 * -ENOENT, -EPERM, -EINVAL (an instance), -EBUSY (pending, finished or another stop:
 * @reason says what to do instead).
 */
int sched_job_requeue(struct sched_cluster *c, const char *name, uid_t uid, bool hold,
		      uint64_t now_usec, char *reason);

/* What sched_job_update() changes. */
enum sched_job_field {
	SCHED_FIELD_PRIORITY,	/* 0-1000: the spec's priority */
	SCHED_FIELD_TIME_LIMIT,	/* seconds, 1 to CONF_TIME_LIMIT_MAX_SEC */
	SCHED_FIELD_NPUS,	/* NPUs: sched_job_update() hands it to sched_job_resize() */
};

/*
 * sched_job_update() - set @field of pending, running, recovering or stopping @name to
 * @value, as Slurm's `scontrol update JobId=... Priority=|TimeLimit=`. The job's spec
 * (and so jobs/<job>/spec, and what a restart restores) says the new value. A new
 * priority orders the pending job anew in its queue and counts for preemption; a new
 * time_limit counts the time already run: a running job over it ends timeout at the
 * next tick, as in Slurm, and a pending job is not given one it has used up (-EINVAL).
 * Anyone but root (@uid 0) and operators (@is_operator) stays within the job's queue's
 * cap of the field changed (max_priority, max_time_limit: -EACCES naming it, as at
 * submission; another field over its cap, let past by root, does not count) and only
 * shortens the time_limit of a job that has started (it may run on the promise of it:
 * backfill let it start ahead of a reservation; Slurm lets only admins raise a
 * TimeLimit). Event "updated" (from and to). Setting the value it has is a no-op (0).
 * Returns 0, -ENOENT, -EPERM, -EACCES, -EINVAL (@value out of range or used up, an
 * instance, a spec that no longer parses), -EBUSY (a draft, service or finished job),
 * -ENOMEM.
 */
int sched_job_update(struct sched_cluster *c, const char *name, uid_t uid, bool is_operator,
		     enum sched_job_field field, uint64_t value, uint64_t now_usec, char *reason);

/*
 * sched_job_resize() - give pending, running or recovering training job @name @npus NPUs
 * (AscendCluster's manual scaling of a running job, its script unchanged): its spec's
 * npus becomes @npus (jobs/<job>/spec says it). A pending job waits for the new size; a
 * running one stops as a requeue does (event "resized", history "resized"), keeps its
 * NPUs until its processes are gone, and starts again at the new size as a new
 * generation from its newest checkpoint, in its place in its queue. @npus must be a
 * size the cluster can run (the HCCS rule, whole servers above one server, a multiple
 * of tp * cp * pp; sched_check_feasible()), within the queue's max_npus unless by root or an
 * operator (@is_operator), and within a quota its queue may not borrow past. An elastic
 * job is sized by the scheduler (-EINVAL: give it a fixed size by resubmitting). The
 * same size is a no-op (0). Returns 0, -ENOENT, -EPERM, -EACCES, -EINVAL, -ENOSPC (never
 * fits), -EBUSY (a draft, service or finished job, or one stopping), -ENOMEM; @reason
 * says why.
 */
int sched_job_resize(struct sched_cluster *c, const char *name, uid_t uid, bool is_operator,
		     unsigned npus, uint64_t now_usec, char *reason);

/*
 * sched_job_checkpoint() - record that job @name wrote checkpoint @step at @path
 * (borrowed, absolute). It becomes the resume point unless an earlier report named a
 * higher step (a report always replaces a checkpoint found on disk). Returns -ENOENT,
 * -EPERM, -EINVAL, -EBUSY (the job is not active), -ENOMEM.
 */
int sched_job_checkpoint(struct sched_cluster *c, const char *name, uid_t uid, uint64_t step,
			 const char *path, uint64_t now_usec);

/*
 * sched_job_recovery_answer() - a process of job @name answers request @request of its
 * recovery ladder (jobs/<id>/recovery): the process on server @server (a name) with
 * rank @rank (per-rank launch; -1 for msrun, one process per server) answers @answer:
 * - during a dump, SCHED_ANSWER_SAVED: it saved step @step at @path (absolute; NULL:
 *   it saved nothing itself, another process writes the checkpoint), or
 *   SCHED_ANSWER_SAVE_FAILED: it could not (the step falls back to the next strategy
 *   at once). When every process asked has answered, the newest saved checkpoint
 *   becomes the job's and the job restarts from it (job-level); without one the step
 *   falls back.
 * - during an in-place restart, SCHED_ANSWER_PAUSED from a surviving process: it
 *   stopped after step @step; SCHED_ANSWER_JOINED from the restarted process: it is up.
 *   When every survivor has paused and the restarted process has joined, the job runs
 *   again in the same generation and the recovery file tells every process to go on
 *   from the newest step paused at (request + 1, action "resume").
 * A repeated answer is accepted and changes nothing. @uid must own the job or be 0.
 * Returns 0, -ENOENT (no such job), -EPERM, -ESTALE (@request is not the open request;
 * @reason says which is), -EINVAL (@reason: not a process of the job, not asked, an
 * answer of the other strategy, a relative path) or -ENOMEM (nothing changed).
 */
int sched_job_recovery_answer(struct sched_cluster *c, const char *name, uid_t uid,
			      unsigned request, const char *server, int rank,
			      enum sched_recovery_answer answer, uint64_t step, const char *path,
			      uint64_t now_usec, char *reason);

/*
 * sched_ladder_expire() - steps of recovery ladders whose recovery_timeout passed by
 * @now_usec fall back to their next strategy (sched_tick() calls it). Returns how many.
 */
unsigned sched_ladder_expire(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_job_process_exit() - a process of job @name's generation @generation exited
 * with @code, as its node agent reports it: with `launch: msrun` one process per server
 * (@rank < 0), with `per-rank` one per rank. Reports for another generation (processes
 * stopped by a recovery) are ignored. Code 0 from every process of the generation
 * completes the job; any other code is a task fault: the job restarts on the same
 * placement from its newest checkpoint (generation + 1) until max_restarts, then
 * fails; when @server is under suspicion (sched_server_is_suspect()) the exit is taken
 * for that server's fault and the job recovers off it, as from a fault (restart
 * counting in sched_health.c). @server must hold a share of the job (and @rank be one
 * of its ranks).
 * Completing or failing goes through stopping as sched_job_cancel() does: a server
 * whose agent sends `running` lines (sched_server.reports_running) must report its
 * processes gone, since a launcher's exit does not end what it started (msrun's
 * workers, a process that left its group); on one that does not, the reported exits
 * are all that can be known and count as gone (so without such agents a completion
 * frees the NPUs at once, as before). A failure (another process still runs elsewhere)
 * waits for every server.
 * Returns 0, -ENOENT, -EPERM, -EINVAL (@server or @rank not the job's) with @reason.
 */
int sched_job_process_exit(struct sched_cluster *c, const char *name, uid_t uid,
			   unsigned generation, const char *server, int rank, int code,
			   uint64_t now_usec, char *reason);

/*
 * sched_job_process_exit_attempt() - sched_job_process_exit() for a process started in
 * attempt @attempt of its server's share (sched_slice.attempt; 0 = as first started):
 * the exit of an earlier attempt than the share's (a report sent again after the
 * process was started again in place) is ignored and returns 0. What the agents'
 * `exit` lines go through.
 */
int sched_job_process_exit_attempt(struct sched_cluster *c, const char *name, uid_t uid,
				   unsigned generation, unsigned attempt, const char *server,
				   int rank, int code, uint64_t now_usec, char *reason);

/*
 * sched_job_note_refusal() - append a "refused" event for job @name saying @reason
 * (borrowed), so a refused ctl request is readable in the job's events. Changes nothing
 * else. Returns 0 or -ENOENT.
 */
int sched_job_note_refusal(struct sched_cluster *c, const char *name, const char *reason,
			   uint64_t now_usec);

/*
 * sched_cluster_note_refusal() - append a "refused" event about no job: a refused create
 * or mkdir in jobs/, or a refused line of cluster/ctl or nodes/<server>/ctl, so the user
 * reads why in cluster/events and not only in the daemon's log. @server (borrowed, NULL
 * or "" when the request names none) fills the event's "server"; @reason (borrowed)
 * should say who asked (the uid) and must hold user bytes only escaped
 * (fs_text_escape). Changes nothing else; never fails.
 */
void sched_cluster_note_refusal(struct sched_cluster *c, const char *server, const char *reason,
				uint64_t now_usec);

/*
 * sched_job_checkpoint_found() - a checkpoint file @path (borrowed) of job @name was
 * found on disk, written at @mtime_usec, ordered by @step. It becomes the resume point
 * when it is newer than the current one (a reported checkpoint counts from the time it
 * was reported). Returns 1 when it did, 0 when not, -ENOENT, -ENOMEM.
 */
int sched_job_checkpoint_found(struct sched_cluster *c, const char *name, uint64_t step,
			       const char *path, uint64_t mtime_usec, uint64_t now_usec);

/*
 * How long a new generation waits for the embedding program's look into its
 * checkpoint_dir (resume_scan_pending) before it starts with the newest checkpoint
 * already known: a checkpoint directory on a dead network filesystem must not hold a
 * recovery forever. Seconds.
 */
#define SCHED_RESUME_SCAN_TIMEOUT_SEC 10

/*
 * sched_job_resume_scanned() - the embedding program looked into job @name's
 * checkpoint_dir for generation @generation, after that generation began: @path
 * (borrowed; NULL when the directory holds no checkpoint) with @step and @mtime_usec is
 * the newest file there. It is recorded as sched_job_checkpoint_found() does; then, when
 * the job is still at @generation and waits for this scan, its resume point
 * (ASCEND_RESUME_CHECKPOINT) becomes the newest checkpoint known, the wait ends, the
 * time spent waiting is not counted against time_limit, and its servers' job lists show
 * it (event "checkpoint": "generation N resumes from ..."). Returns 1 when the wait
 * ended, 0 when the job was not waiting for this generation's scan, -ENOENT, -ENOMEM.
 */
int sched_job_resume_scanned(struct sched_cluster *c, const char *name, unsigned generation,
			     const char *path, uint64_t step, uint64_t mtime_usec,
			     uint64_t now_usec);

/*
 * sched_job_remove() - forget job @name (rmdir). A terminal job, draft or pending job
 * is dropped at once (cancelled first when active). A running or stopping job is
 * cancelled as sched_job_cancel() does and marked stop_forget: its record (and its
 * directory) stays, state stopping, while it holds NPUs, so that what holds them stays
 * visible, and is dropped once they are released. Returns 0, -ENOENT, -EPERM.
 */
int sched_job_remove(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec);

/*
 * ---- the dry run (sched_whatif.c), Slurm's sbatch --test-only ----
 * What would become of a spec submitted now, without changing anything: the cluster is
 * copied through its saved documents (the ones a restart loads) and the spec submitted
 * to the copy. Costs a copy of the whole state (the documents, then a cluster built from
 * them): an occasional question, not a loop's.
 */
struct sched_whatif_snapshot;

/*
 * sched_whatif_snapshot() - the documents of @c as they are (the caller's lock on @c
 * held; the only step that reads @c), in *@ret (new; sched_whatif_snapshot_free()).
 * Returns 0 or -ENOMEM.
 */
int sched_whatif_snapshot(const struct sched_cluster *c, struct sched_whatif_snapshot **ret);

/* sched_whatif_snapshot_free() - free @s (NULL allowed). */
void sched_whatif_snapshot_free(struct sched_whatif_snapshot *s);

/*
 * sched_whatif_run() - submit a copy of @spec (borrowed) as @uid/@gid (@is_operator:
 * exempt from the caps and limits as at a real submission) to a copy of the cluster
 * @s describes, as of @now_usec, run its pass, and describe the outcome in *@ret (new,
 * NUL-terminated JSON and a newline, *@ret_len bytes): {"dry_run": true, "job", "would":
 * "start" (placed now) | "wait" (pending) | "refused" (the submission would fail) | a
 * terminal state, "reason" (the job's, or the refusal's), "preempts" (the jobs its
 * placement would stop), "placement" and "reserved_start" (as status.json), "status"
 * (the job's status.json in the copy, null when refused)}. Touches nothing but the
 * copy. Returns 0 (a refusal too: it is the answer) or -ENOMEM, -EINVAL (the documents
 * do not load back; never for a snapshot of a consistent cluster).
 */
int sched_whatif_run(const struct sched_whatif_snapshot *s, const struct conf_job_spec *spec,
		     uid_t uid, gid_t gid, bool is_operator, uint64_t now_usec, char **ret,
		     size_t *ret_len);

/*
 * sched_schedule() - one scheduling pass (sched_pass.c). Pending jobs are served in
 * order: queue priority, job priority, then the queue with the smallest share (used
 * NPUs / weight, so weights never leave NPUs idle), then submission order. With
 * priority aging (resource.priority_weight_age, priority_max_age: Slurm's
 * PriorityWeightAge and PriorityMaxAge) a queue's priority is raised by the age of the
 * job first in it, one unit per priority_max_age / priority_weight_age seconds since the
 * job became eligible (submitted, released from a hold, its `after:` met), up to
 * priority_weight_age: a queue's long wait overtakes a higher queue's new jobs; the order
 * inside a queue does not change (sched_serve_before() in sched_pass.h). Each is
 * placed all-or-nothing (a gang never holds NPUs while pending) or gets a reason:
 *  - quota (enable_quota_limit): a queue at its quota waits ("queue finetune uses 30 of
 *    32 NPUs; job needs 8"), unless may_borrow and the NPUs are idle (then the job is
 *    `borrowing`); a wait for quota never holds up other queues;
 *  - preemption (resource.preemption): a job that does not fit may stop running jobs of
 *    lower priority (queue priority, then job priority), and a queue within its quota
 *    may reclaim borrowed NPUs: the fewest whole jobs whose NPUs make a legal placement,
 *    none more than needed, never part of a gang. Victims go stopping, then pending,
 *    and resume from their checkpoint; the preemptor starts when they have stopped.
 *    The age never makes a preemptor. A job that started (or restarted after a fault)
 *    less than resource.preempt_exempt_time ago (Slurm's PreemptExemptTime) is no
 *    victim of any preemption;
 *  - backfill (resource.backfill, EASY): the first job that still does not fit gets a
 *    reservation (NPUs and the latest start, from running jobs' time limits); later jobs
 *    start ahead only on other NPUs, or when their time_limit ends before that start.
 *    With backfill off, a blocked job holds the line for the server types it needs;
 *  - elastic jobs (npus {min, max}) start with the largest legal size that fits, and
 *    grow at the end of a pass when nothing waits for the NPUs.
 * Cost: a full pass is O(jobs + pending) (one sweep, one turn per pending job). When the
 * last pass changed nothing but reasons and reservations and only submissions came
 * since, the pass resumes it instead and costs O(servers + new jobs), with the same
 * outcome (sched_cluster_set_incremental()); never across a step of the age, nor from
 * the instant one of its outcomes could change (a run's preempt_exempt_time ends, a
 * waiting job's time_limit no longer ends before a reservation's start, a running job
 * passes its limit), nor for a job that comes before jobs already waiting (a higher
 * queue or priority). sched_tick() asks for a pass when a step of the age or a run's
 * exemption ends.
 * Returns the number of jobs placed.
 */
unsigned sched_schedule(struct sched_cluster *c, uint64_t now_usec);

/*
 * Deferred passes (sched_pass.c). Every entry point that changes what a pass would
 * decide (a submission, cancel, completion, process exit, rmdir, health report, lost
 * heartbeat, uncordon, NPU clear, the end of a restore) asks for a pass with
 * sched_pass_request() instead of running sched_schedule() itself. By default (the
 * library, the unit tests, ascend-sim) the request runs the pass at once, exactly as a
 * direct call did. An embedding program that serves many requests (the daemon) turns
 * deferral on: a request then only marks one pass owed, so that a burst of N
 * submissions shares one pass instead of running N, and the state until that pass runs
 * is what the entry points left (a new job pending, reason "waiting for the first
 * scheduling pass"; freed NPUs unused). Whoever enabled deferral must run the owed pass
 * with sched_pass_run_owed() before anyone reads or answers with the state those
 * requests changed: the daemon's committer before it collects each batch (so the
 * placements are durable with the submissions), a request without a state store
 * before it answers, the heartbeat thread after each tick. sched_tick() and
 * sched_queue_set_quota() request their pass the same way (owed when deferred).
 * Locking: like every sched call, under the caller's one lock of the cluster; the owed
 * pass must run under the same lock hold as whatever must see its outcome.
 */

/*
 * sched_cluster_set_deferred_passes() - with @deferred, later sched_pass_request()
 * calls mark a pass owed instead of running it; without, they run it at once (the
 * default). Turning deferral off leaves an owed pass owed: run it with
 * sched_pass_run_owed().
 */
void sched_cluster_set_deferred_passes(struct sched_cluster *c, bool deferred);

/*
 * sched_pass_request() - a change at @now_usec needs a scheduling pass: without
 * deferral, run it now (sched_schedule()) and return what it returns; with deferral,
 * mark one owed (once, however many requests) and return 0.
 */
unsigned sched_pass_request(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_cluster_set_incremental() - incremental passes on (the default) or off. A pass
 * that changed nothing but pending reasons and reservations is kept; while nothing but
 * new submissions comes after it, the next pass resumes it and gives a turn to the new
 * jobs only (O(new jobs) instead of O(jobs + pending)), which decides exactly what a
 * full pass would: the rules and the conditions are at struct sched_kept_pass in
 * sched_pass.c, and tests/unit/test_sched_incremental.c runs both side by side. Off,
 * every pass is a full one (the reference; kept state is freed).
 */
void sched_cluster_set_incremental(struct sched_cluster *c, bool on);

/* sched_pass_is_owed() - does a deferred pass wait to be run? */
bool sched_pass_is_owed(const struct sched_cluster *c);

/*
 * sched_pass_run_owed() - when a pass is owed, run it at @now_usec (one pass, for every
 * request since the last) and return what sched_schedule() returns; else 0, nothing
 * done. A request made during that pass leaves a pass owed again, and so does a pass
 * that an allocation failure cut short (with deferral on): a run from 1 s later makes up
 * for it (at once after a new request), so that a shortage of memory does not cost a
 * full pass at every call.
 */
unsigned sched_pass_run_owed(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_tick() - what time alone changes, at @now_usec (the daemon calls it every
 * second): running jobs past their spec time_limit begin stopping (event "timeout");
 * running jobs launched from their rank table (enable_dynamic_network false) whose
 * table sched_ranktable_waiting_for() still waits for when hccl_connect_timeout has
 * passed since their generation began begin stopping, then fail (event "failed", the
 * reason naming what was missing; looked at once, as the bound passes);
 * stopping jobs past stop_deadline_usec release their NPUs and become pending again
 * (preempted: event "requeued"), timeout, cancelled, completed or failed (stop_to),
 * whatever the agents said; then, when anything changed or an elastic
 * job's elastic_grow_delay has just passed, a scheduling pass. Returns the number of
 * jobs that changed state.
 */
unsigned sched_tick(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_queue_set_quota() - set the quota of queue @queue to @npus (0 = no limit), as
 * root writes queues/<q>/quota. Running jobs keep their NPUs (a queue now over its
 * quota counts the excess as borrowed, reclaimable by preemption); pending jobs are
 * reconsidered at once. Appends a "queue" event. Returns 0, -ENOENT (no such queue) or
 * -EINVAL (@npus over the cluster's NPU count).
 */
int sched_queue_set_quota(struct sched_cluster *c, const char *queue, unsigned npus,
			  uint64_t now_usec);

/* What a queue uses now (queues/<q>/status). */
struct sched_queue_usage {
	unsigned used_npus;	/* NPUs held by its jobs (stopping ones included) */
	unsigned borrowed_npus;	/* of those, beyond quota_npus (0 without a quota or with
				 * enable_quota_limit off) */
	unsigned pending, running, stopping; /* jobs; running includes recovering */
};

/* sched_queue_usage() - fill @u for queue @queue_index (into conf->queues). */
void sched_queue_usage(const struct sched_cluster *c, size_t queue_index,
		       struct sched_queue_usage *u);

/*
 * sched_job_run_usec() - how long @j has run in all, at @now_usec: earlier runs plus the
 * current one. time_limit is compared with this.
 */
uint64_t sched_job_run_usec(const struct sched_job *j, uint64_t now_usec);

/*
 * sched_server_set_cordon() - cordon (no new work) or uncordon server @name.
 * @drain: cordon and mark draining (running jobs stay until they end).
 * Returns 0 or -ENOENT.
 */
int sched_server_set_cordon(struct sched_cluster *c, const char *name, bool cordon, bool drain,
			    uint64_t now_usec);

/*
 * sched_server_clear_npu() - return NPU @npu of server @name to service (admin `clear`):
 * drops any isolation (manual included), forgets its fault history, sets its health to
 * OK until the next report, and schedules. Returns 0, -ENOENT (server) or -EINVAL.
 */
int sched_server_clear_npu(struct sched_cluster *c, const char *name, unsigned npu,
			   uint64_t now_usec);

/*
 * sched_server_report() - apply health report @r (borrowed, already validated against
 * the server's NPU count) from the agent of server @server, received at @now_usec.
 * The write is also the heartbeat: an unknown or unreachable server becomes ready.
 * Per NPU (and for the whole server with the `node` line), design.md §6:
 *   OK       back to service: an Alarm at once, a fault once the NPU has reported OK (or
 *            Warning) for conf->fault_hold_sec; a manual isolation stays until
 *            sched_server_clear_npu(). A fault reported again restarts the hold.
 *   Warning  an event only (healthy for the rules above)
 *   Alarm    pre-isolate: no new work; a running job keeps the NPU
 *   Critical, UNKNOWN  isolate and recover the job holding it (sched_job_recover rules);
 *            fault_escalate_count faults within fault_escalate_window make the
 *            isolation manual
 * Reported device IPs are compared with the inventory (a difference is an event; the
 * reported address is what the rank table uses); a server whose agent reported every
 * NPU's IP is confirmed. A reported super-pod identity (`sdid` line) is kept per NPU
 * (sched_npu.sdid ...; a change is an event) and is what A3 rank tables use. The
 * report's `agent`, when given, becomes the server's agent (check it first with
 * sched_server_check_agent()).
 * A report with a `running` line (r->has_running) ends the wait of every stopping job
 * holding NPUs here whose name it does not list (any generation): this server's slice is
 * gone, and a job whose slices are all gone releases its NPUs now and ends in stop_to,
 * before this report's pass. A report without one leaves stopping jobs to their
 * deadline. Returns 0, -ENOENT (no such server) or -EINVAL (an NPU id at or past the
 * server's count: nothing was applied).
 */
int sched_server_report(struct sched_cluster *c, unsigned server,
			const struct conf_health_report *r, uint64_t now_usec);

/*
 * sched_server_check_report() - may report @r (borrowed, already parsed for server
 * @server) be applied? Refused, for a device IP the report gives (what one report alone
 * can be refused for is conf_health_parse()'s): the host_ip of any server of the
 * inventory (a device IP is the address of the NPU's own RoCE NIC); the device IP of an
 * NPU of another server (reported, else the inventory's); the device IP another NPU of
 * this server keeps (from an earlier report or the inventory); an address of the other
 * family than this server's other NPUs have. An address the report does not give is not
 * its doing and refuses nothing (a report is also the heartbeat); families mixed across
 * servers are not refused: the rank tables that would hold both stay "initializing" and
 * say why (sched_ranktable_waiting_for()). Costs the same whatever the cluster's size
 * (sched_devip.c). @why (@why_len bytes) receives the sentence, or "". Changes nothing.
 * Returns 0, -EINVAL (refused) or -ENOENT (no such server).
 */
int sched_server_check_report(const struct sched_cluster *c, unsigned server,
			      const struct conf_health_report *r, char *why, size_t why_len);

/*
 * sched_server_check_agent() - may a report from agent @agent ("" = it names none) count
 * for server @server at @now_usec? Not while another agent's report counted within
 * sched_agent_takeover_usec(): two agents that use one node name would each run the jobs
 * listed for it. Identities are "<machine>/<instance>" (ascend-agent sends
 * "<host name>:<machine-id>/<pid>.<boot id>"; an identity without '/' is a machine
 * alone). Agents of two machines (a copied host name or --node) are refused while the
 * other reported within conf->heartbeat_timeout_sec; two agents of one machine (a
 * second one started, or one restarted) while the other reported within two
 * fault_check_intervals: a live agent reports every interval, so one that alternates
 * with it is always refused, and a restarted one takes over before the server's
 * heartbeat times out (with the default heartbeat_timeout of three intervals). Once the other has been silent that long, the new agent may.
 * A report without an agent is not checked (older agents, hand-written reports).
 * @why (@why_len bytes) receives the reason on refusal: which agent holds the server
 * (with its pid, when its identity has one), how long ago it reported, and when the
 * newcomer takes over.
 * Returns 0, -EEXIST (refuse the report) or -ENOENT (no such server).
 */
int sched_server_check_agent(const struct sched_cluster *c, unsigned server, const char *agent,
			     uint64_t now_usec, char *why, size_t why_len);

/*
 * sched_agent_takeover_usec() - how long the agent whose reports count for a server must
 * have been silent before another may take over (microseconds): with @same_machine (the
 * identities' machine parts agree) 2 conf->fault_check_interval_sec, at most the
 * heartbeat timeout; else conf->heartbeat_timeout_sec.
 */
uint64_t sched_agent_takeover_usec(const struct conf_cluster *conf, bool same_machine);

/*
 * sched_server_note_refusal() - append a "refused" event about server @server (a health
 * report that was refused; nothing else changes, not even the heartbeat) and keep
 * @reason as the server's last refusal (sched_render_server_info shows it until the next
 * accepted report: an agent on a network mount, whose close() cannot carry the error,
 * reads it there). Returns 0, -ENOENT or -ENOMEM (the event is added either way).
 */
int sched_server_note_refusal(struct sched_cluster *c, unsigned server, const char *reason,
			      uint64_t now_usec);

/*
 * sched_check_heartbeats() - mark servers whose last report is older than
 * conf->heartbeat_timeout_sec unreachable, isolate their NPUs and recover their jobs;
 * every server found lost in one call is marked before any job recovers, so a job on
 * several of them moves once. Servers that never reported are left alone. Returns how
 * many servers it marked.
 */
unsigned sched_check_heartbeats(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_heartbeats_grace() - the daemon begins to serve at @now_usec (its mount is up, or
 * it took over the lead): no agent could report while it restored its state, however long
 * that took, so each server whose last report is the restored one (none heard since) gets
 * a full heartbeat_timeout from @now_usec, as Kubernetes' node controller counts its grace
 * from what it observed itself. Servers that never reported stay as they are.
 */
void sched_heartbeats_grace(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_server_is_suspect() - is @s under suspicion at @now_usec, so that a placement
 * takes it only when no clean server will do (sched_health.c)? True when one of its
 * NPUs had a fault (Critical, UNKNOWN, or the server's heartbeat lost) within
 * fault_escalate_window, or its last report is overdue by half a report interval
 * (fault_check_interval * 1.5 old) though not yet heartbeat_timeout: a server that
 * died with another that was just found lost. Placement still uses a suspect server
 * when there is no other choice.
 */
bool sched_server_is_suspect(const struct sched_cluster *c, const struct sched_server *s,
			     uint64_t now_usec);

/*
 * sched_server_is_schedulable() - new work may land on @s: not cordoned, not
 * unreachable, and (when conf->require_agent) it has reported.
 */
bool sched_server_is_schedulable(const struct sched_cluster *c, const struct sched_server *s);

/*
 * ---- one answer per fact, for every view (sched_cluster.c) ----
 * cluster/status, metrics, topology.json, nodes/<server>/{info,npus,health} and
 * queues/<q>/status all take an NPU's use and a server's state from these, so that no
 * two files can disagree about them.
 */

/* What an NPU is doing now: every NPU is in exactly one. */
enum sched_npu_use {
	SCHED_NPU_ALLOCATED,	/* held by a job (stopping ones too; an Alarm NPU its job
				 * keeps is allocated, and isolated:alarm besides) */
	SCHED_NPU_FREE,		/* new work may use it now */
	SCHED_NPU_ISOLATED,	/* not held, isolated or not healthy (a lost server's NPUs
				 * are isolated too) */
	SCHED_NPU_UNAVAILABLE,	/* healthy and not held, but its server takes no new work:
				 * cordoned, draining, or never reported with require_agent */
	SCHED_NPU_USE_COUNT
};

/* sched_npu_use_name() - "allocated", "free", "isolated", "unavailable" (static). */
const char *sched_npu_use_name(enum sched_npu_use u);

/* sched_npu_use() - the use of NPU @n (borrowed) of server @s (borrowed) of @c. */
enum sched_npu_use sched_npu_use(const struct sched_cluster *c, const struct sched_server *s,
				 const struct sched_npu *n);

/* NPUs by use; by_use[] sums to total. */
struct sched_npu_counts {
	unsigned total;
	unsigned by_use[SCHED_NPU_USE_COUNT];
};

/* sched_npu_count() - fill @ret for server @server (index), or the cluster when < 0. */
void sched_npu_count(const struct sched_cluster *c, int server, struct sched_npu_counts *ret);

/* A server's state as every view shows it: one word, the first that holds. */
enum sched_server_condition {
	SCHED_SERVER_IS_UNKNOWN,	/* never reported */
	SCHED_SERVER_IS_READY,		/* reported, takes work */
	SCHED_SERVER_IS_CORDONED,	/* admin: no new work */
	SCHED_SERVER_IS_DRAINING,	/* admin: no new work, running jobs stay */
	SCHED_SERVER_IS_UNREACHABLE,	/* heartbeat lost (cordoned or not) */
	SCHED_SERVER_CONDITION_COUNT
};

/* sched_server_condition() - the state of @s: unreachable, draining, cordoned, ready or
 * unknown, in that order of precedence. */
enum sched_server_condition sched_server_condition(const struct sched_server *s);

/* sched_server_condition_name() - "unknown", "ready", "cordoned", "draining",
 * "unreachable" (static). */
const char *sched_server_condition_name(enum sched_server_condition k);

/*
 * sched_place() - find a placement for @npus NPUs without changing anything.
 * Follows design.md §5: a request that fits one server stays on one server (910 ring
 * preferences, 910B best fit, A3 whole pairs); larger requests take whole servers,
 * preferring one leaf switch, then one super pod, then the fewest switches.
 * Under SCHED_PLACE_BLIND (sched_cluster_set_placement()) instead: the first server type
 * in inventory order whose free NPUs add up to @npus, and on it, server after server,
 * the one with the fewest free NPUs that holds all still needed, else the one with the
 * fewest free NPUs (all of them taken), lowest device ids first: Volcano's binpack
 * order (fullest node that fits first) applied to what is left of the gang. Ranks go
 * in the order servers were taken. Any count of NPUs up to a type's total is feasible.
 * @type: restrict to that server type (NULL: any type that can hold the job).
 * @ret_slices: new array (free()) of *ret_count slices in rank order, ranks assigned.
 * @reason: why not, when -ENOSPC (no free capacity now) or -EINVAL (never legal).
 * Returns 0, -ENOSPC, -EINVAL or -ENOMEM.
 */
int sched_place(const struct sched_cluster *c, unsigned npus, const struct conf_server_type *type,
		struct sched_slice **ret_slices, size_t *ret_count, char *reason);

/*
 * sched_check_feasible() - could a job of @npus NPUs ever run on this cluster if it
 * were empty and healthy? Returns 0, or -EINVAL/-ENOSPC with @reason.
 */
int sched_check_feasible(const struct sched_cluster *c, unsigned npus,
			 const struct conf_server_type *type, char *reason);

/*
 * sched_check_invariants() - verify that no NPU is held by two jobs, counters match, and
 * every placed job's ranks are 0..N-1 contiguous. Returns 0 or -EUCLEAN with @reason.
 */
int sched_check_invariants(const struct sched_cluster *c, char *reason);

/* sched_job_total_npus() - NPUs job @j holds now (sum of its slices; 0 when unplaced). */
unsigned sched_job_total_npus(const struct sched_job *j);

/*
 * sched_event_next() - the oldest kept event with seq > @after_seq, or NULL at the end.
 * Borrowed: valid until the next call that changes @c (a new event may overwrite the
 * oldest slot of the ring).
 */
const struct sched_event *sched_event_next(const struct sched_cluster *c, uint64_t after_seq);

/*
 * ---- saving and restoring (sched_state.c) ----
 * The durable state of a cluster as compact JSON documents (UTF-8, ASCII-escaped), for
 * the embedding program to store: one per job record, one per server and one "meta"
 * (event/queue/serial sequences, counters, queue quotas set at run time), plus the
 * events. Restoring builds the same state on a fresh cluster made from the (possibly
 * changed) configuration: call sched_event_load() for the kept events in sequence order,
 * then sched_meta_load(), sched_server_load() for each server, sched_job_load() for each
 * job in submission (serial) order, sched_job_run_load() for the history records saved
 * apart, and sched_restore_finish() last. What a pass
 * derives (backfill reservations, the order of pending jobs) is not saved; heartbeat
 * times are not saved either: every server that had reported gets a full
 * heartbeat_timeout from the restore, as the daemon could not hear its agent.
 * Which objects changed since the last save: sched_job.version != saved_version (each
 * such job is on the SCHED_DIRTY_STORE list, see sched_job_touch(), but for a pending
 * job's new reason from a pass, which the first pass after a restore gives again),
 * sched_server.version != saved_version (the caller updates saved_version), records
 * dropped since (track_removals, removed_serials), events with a newer seq.
 * Documents are new (free()); *ret_len excludes the NUL. Save functions return 0 or
 * -ENOMEM. Load functions never crash on a bad document: -EINVAL with the sentence in
 * @reason (SCHED_REASON_MAX) and nothing changed; -ENOMEM is never a bad document (an
 * allocation that failed while jansson parsed or built one, which jansson 2.14 does
 * not always report, is -ENOMEM too).
 */

/*
 * sched_restore_shift() - before the loads: the clock that wrote the saved documents
 * reads @shift_usec less than the @now_usec of the loads would have, had it not stepped
 * (positive: the wall clock stepped forward across the restart). The loads add it to the
 * timestamps that measure intervals (a run's start for time_limit, a stop's deadline, a
 * generation's start, restart and fault windows), so a job's run time and its deadlines
 * count the real downtime, never the step; timestamps that are shown (submitted,
 * started, events) stay as they were written. 0 (the default) moves nothing. A moved
 * time is never earlier than 1 (0 means "none" in the records) nor past UINT64_MAX.
 */
void sched_restore_shift(struct sched_cluster *c, int64_t shift_usec);

/*
 * sched_job_save() - job record @j (borrowed) as one document, of format 2. Always
 * written: format, name, serial, state, queue_seq, submit_usec, change_usec, reason,
 * uid, gid, and spec unless it has none. Every other field is left out at its default:
 * 0, false, an empty list, a null checkpoint_path/resume_path, an empty preempted_by,
 * requeue_cause "none", stop_to "draft", and first_start_usec equal to start_usec.
 * "history" holds the history records not marked saved (struct sched_job_run), each with
 * its number ("run"). sched_job_load() reads format 1 (every field written) too, and
 * records whose history entries have no number (numbered by position: 0 for the first,
 * then runs_dropped + i).
 */
int sched_job_save(const struct sched_cluster *c, const struct sched_job *j, char **ret,
		   size_t *ret_len);

/*
 * A job's closed history records may be stored apart from its record, one document
 * each, written once: a change of the job then writes its record, not every generation
 * it ran (issue 16: each fault of a 512-NPU job rewrote up to 32 generations of
 * placement, 150 KB, under the daemon's lock). A closed record never changes.
 *
 * sched_job_run_save() - @j's history record runs[@index] (index < run_count; closed,
 * end_usec != 0, else -EINVAL) as one document: the same object as an entry of the job
 * record's "history", with its "run" number. The caller marks it saved (runs[@index].saved)
 * in the same step that takes the job record, so that record leaves it out. 0 or -ENOMEM.
 *
 * sched_job_run_load() - restore: after sched_job_load() of @j, and before
 * sched_restore_finish(), one saved record in @text (@len bytes, borrowed), marked
 * saved. Records of one job are loaded in increasing number; each goes after the saved
 * ones loaded before it and before the records the job record held (which are newer).
 * Past SCHED_JOB_RUNS_MAX records the first and the newest stay (runs_dropped counts
 * the others). Returns 0; -EINVAL with @reason (SCHED_REASON_MAX) when the document is
 * malformed, has no "run", is not closed, or is not newer than the saved record before
 * it and older than the first the job record held (nothing changed); -ENOMEM.
 */
int sched_job_run_save(const struct sched_job *j, size_t index, char **ret, size_t *ret_len);
int sched_job_run_load(struct sched_job *j, const char *text, size_t len, char *reason);

/*
 * sched_job_load() - add the job saved in @text (@len bytes). Its spec is parsed again
 * and checked against the cluster as configured now, and its placement given back its
 * NPUs (the same device ids and ranks). When the configuration changed under it, an
 * active job whose servers, NPUs, queue or size no longer exist waits again (pending,
 * event "requeued", to resume from its checkpoint) or, if it can never run now, fails;
 * the event says why. Returns 0, -EINVAL (malformed, or a second record of one name;
 * @reason), -ENOMEM.
 */
int sched_job_load(struct sched_cluster *c, const char *text, size_t len, uint64_t now_usec,
		   char *reason);

/*
 * sched_job_load() in two steps, for a restore that reads many records: most of the
 * time of a load (the JSON, and the spec's YAML parsed again) needs no cluster, and is
 * sched_job_decode(); it touches nothing shared, so threads may decode records at once
 * (each its own). sched_job_load_decoded() then does the rest, in serial order like
 * sched_job_load(), with the same results and reasons.
 *
 * sched_job_decode() - parse the record in @text (@len bytes, borrowed). Returns 0 and
 * a new *ret, -EINVAL (not JSON, or not a job record of a format this version reads;
 * @reason, SCHED_REASON_MAX) or -ENOMEM. A spec that does not parse is not an error
 * here: the load reports it.
 * sched_job_load_decoded() - sched_job_load() of @d (not NULL), which it takes over
 * (freed on every return).
 * sched_job_decoded_free() - free @d (NULL: nothing) without loading it.
 */
struct sched_job_decoded;
int sched_job_decode(const char *text, size_t len, struct sched_job_decoded **ret,
		     char *reason);
int sched_job_load_decoded(struct sched_cluster *c, struct sched_job_decoded *d,
			   uint64_t now_usec, char *reason);
void sched_job_decoded_free(struct sched_job_decoded *d);

/*
 * sched_server_save() - server @server's health, isolation, cordon and the agent whose
 * reports count as one document.
 */
int sched_server_save(const struct sched_cluster *c, unsigned server, char **ret,
		      size_t *ret_len);

/*
 * sched_server_load() - restore a saved server, found by name. A server that had reported
 * gets a full heartbeat_timeout from @now_usec, and its agent keeps it for that long
 * against another agent (a record without "agent" restores none). Returns 0, -ENOENT (no
 * server of that name now; @reason says its state is dropped), -EINVAL (@reason).
 */
int sched_server_load(struct sched_cluster *c, const char *text, size_t len, uint64_t now_usec,
		      char *reason);

/* sched_meta_save() - sequences, counters and queue quotas as one document. */
int sched_meta_save(const struct sched_cluster *c, char **ret, size_t *ret_len);

/*
 * sched_meta_load() - restore them: sequences only move forward. A quota set at run time
 * is kept unless the configuration file now gives that queue another quota than it did
 * when it was set (then the file wins, and @reason says so although 0 is returned);
 * quotas of queues no longer configured are dropped, ones beyond the cluster's NPUs
 * capped. Returns 0 (@reason "" or that note), -EINVAL (@reason) or -ENOMEM.
 */
int sched_meta_load(struct sched_cluster *c, const char *text, size_t len, char *reason);

/*
 * sched_event_load() - append a kept event with its saved fields (strings borrowed;
 * @job, @server, @state, @line may be NULL; @line is its rendered JSON line, rendered
 * again when NULL). Events must come in sequence order without gaps. Returns 0 or
 * -EINVAL (unknown kind or state, or @seq out of order).
 */
int sched_event_load(struct sched_cluster *c, uint64_t seq, uint64_t time_usec, const char *kind,
		     const char *job, const char *server, int npu, const char *state,
		     const char *reason, const char *line);

/*
 * ---- utilization history (sched_util.c) ----
 * What the cluster held, sampled once a minute (SCHED_UTIL_INTERVAL_USEC) for the last
 * day (SCHED_UTIL_SAMPLES), in memory only (Prometheus keeps the long history): the
 * monitoring panel's chart, and cluster/utilization.
 */
#define SCHED_UTIL_INTERVAL_USEC (60 * 1000000ull)
#define SCHED_UTIL_SAMPLES 1440

struct sched_util_sample {
	uint64_t time_usec;
	unsigned npus_total, npus_allocated, npus_isolated, npus_unavailable;
	unsigned jobs_pending, jobs_running;
};

/*
 * sched_util_sample() - take a sample at @now_usec when SCHED_UTIL_INTERVAL_USEC passed
 * since the last one (the first call always does). O(jobs) then, O(1) else. Returns
 * true when it sampled; false without memory too (the sample is skipped).
 */
bool sched_util_sample(struct sched_cluster *c, uint64_t now_usec);

/*
 * sched_render_utilization() - the kept samples, oldest first, one JSON line each:
 * {time, npus_total, npus_allocated, npus_isolated, npus_unavailable, utilization
 * (allocated / total, 4 decimals), jobs_pending, jobs_running}. New text in *@ret
 * (free()). Returns 0 or -ENOMEM.
 */
int sched_render_utilization(const struct sched_cluster *c, char **ret, size_t *ret_len);

/*
 * ---- accounting (sched_account.c) ----
 * sched_account_next() - the oldest kept record with seq > @after_seq, or NULL.
 * Borrowed: valid until the next call that changes @c.
 */
const struct sched_acct *sched_account_next(const struct sched_cluster *c, uint64_t after_seq);

/*
 * sched_account_load() - append a kept record as saved (@job, @line borrowed: the line
 * as sched_account_next() gave it). Records must come in increasing seq order (gaps are
 * fine: the store may have trimmed). Returns 0, -EINVAL (out of order, a bad name, an
 * empty line) or -ENOMEM.
 */
int sched_account_load(struct sched_cluster *c, uint64_t seq, uint64_t time_usec,
		       const char *job, const char *line);

/*
 * sched_cluster_set_placement() - where sched_place() takes NPUs from now on (enum
 * sched_placement; SCHED_PLACE_TOPOLOGY from sched_cluster_new()). Set it before any job
 * is submitted: placements made under the other rule are not moved.
 */
void sched_cluster_set_placement(struct sched_cluster *c, enum sched_placement p);

/*
 * sched_cluster_set_accounting() - keep accounting records (@on, the default) or not (a
 * program that reads none, as ascend-sim: each costs a JSON line at a job's end).
 */
void sched_cluster_set_accounting(struct sched_cluster *c, bool on);

/*
 * sched_render_accounting() - the kept records, oldest first, one JSON line each (Slurm's
 * sacct: one per job that ended), of job @job only when not NULL (the ends of every
 * submission of that name). New text in *@ret (free()). Returns 0 or -ENOMEM.
 */
int sched_render_accounting(const struct sched_cluster *c, const char *job, char **ret,
			    size_t *ret_len);

/*
 * sched_event_forget_all() - drop every kept event (a restore that meets an event it
 * cannot load keeps the ones after it, so that the kept history has no gap); the
 * sequence goes on.
 */
void sched_event_forget_all(struct sched_cluster *c);

/*
 * sched_restore_finish() - after the loads: check the invariants (no NPU held twice,
 * counters, ranks) and run a scheduling pass (sched_pass_request(): owed when deferred).
 * Returns 0 or -EUCLEAN with @reason.
 */
int sched_restore_finish(struct sched_cluster *c, uint64_t now_usec, char *reason);

/*
 * ---- rendering (sched_render.c; the rank table sched_ranktable.c) ----
 * Every output is new (free()) with its length in *ret_len, NUL-terminated. Each function
 * returns 0, -ENOMEM, or -ENOENT where noted; on failure *ret is untouched. Strings that
 * are not UTF-8 are rendered with '?' in place of their non-ASCII bytes.
 */

/*
 * Where the job's files are seen by the processes that use them: the mount point,
 * e.g. "/ascend". ASCEND_JOB_DIR = <mount>/jobs/<name>; in rank-table mode
 * RANK_TABLE_FILE = <mount>/jobs/<name>/ranktable.json.
 */
struct sched_render_ctx {
	const char *mount_path;
};

/*
 * sched_render_ranktable() - rank table JSON for a placed job (design.md §4: version
 * "1.0"/"1.2", every value a string, server_count, server_list with server_id,
 * host_ip, pod_ip, host_nic_ip "reserve", device list of device_id/device_ip/rank_id;
 * version "1.2" (A3) adds each device's super_device_id, the SDID its agent reported,
 * and super_pod_list; status "completed" when sched_ranktable_waiting_for() waits for
 * nothing, else "initializing", which HCCL polls). -ENOENT when the job holds no
 * placement. Laid out as jansson's JSON_INDENT(2) lays it out, with a final newline.
 * Costs what the job holds: 0.16 ms for 512 NPUs, in 1,024 or 16,384 servers
 * (bench_render).
 */
int sched_render_ranktable(const struct sched_cluster *c, const struct sched_job *j, char **ret,
			   size_t *ret_len);

/*
 * sched_render_job_topology() - jobs/<name>/topology.json of placed job @j
 * (sched_job_topology.c): the layout its generation runs with (sched_comm.h's rank order,
 * sched_parallel_from_spec() at the NPUs it holds), each rank's server, host_ip,
 * device_id, HCCS group, leaf switch, super pod and coordinate per dimension; per
 * dimension the groups (ranks, servers spanned, slowest link class by
 * sched_group_link()); per pair of consecutive pipeline stages the slowest link between
 * matching ranks; and sched_comm_params_for()'s figures (chip of its servers, the
 * cluster's spine_oversubscription) for each class used. fs/fs.h says
 * the exact shape. JSON_INDENT(2), keys in a fixed order, a final newline. *ret new
 * (free()). 0, -ENOENT (the job holds no placement) or -ENOMEM. Costs what the job holds
 * (its groups' links are pairwise: the size of a group squared, summed over groups).
 */
int sched_render_job_topology(const struct sched_cluster *c, const struct sched_job *j,
			      char **ret, size_t *ret_len);

/*
 * sched_ranktable_waiting_for() - what placed job @j's rank table waits for before it
 * can be "completed", as one sentence into @why (@why_len bytes), naming the servers,
 * NPUs and field; "" when nothing. The rules, from what HCCL refuses (hcomm
 * topoinfo_ranktableConcise.cc GetSingleDeviceIp(), CheckSuperPodInfo(),
 * HcclCommunicatorAttrs::CheckSuperDeviceId()) and tests/hccl_check.h:
 *   device_ip   every device has one on Atlas 800 (910: its rank table template has
 *               device_ip on every device), on 910B when the job spans servers, and on
 *               A3 when it spans super pods (within one pod HCCL links over the vnic
 *               and needs none); the reported address, else the inventory's
 *   agents      with cluster.require_agent, every server of the job has had its device
 *               IPs confirmed by its agent (A3 within one pod: its SDIDs instead)
 *   valid       every device_ip passes conf_device_ip_problem() and is no server's
 *               host_ip; no address twice in the table; one address family
 *   SDIDs (A3)  every device has a reported SDID; the servers of one configured super
 *               pod report one physical super pod; no SDID twice within a pod
 * Waiting ("device_ip of NPUs 0-7 on node-1 (no agent has reported them) and of 2 more
 * servers") and conflicts ("device_ip 10.0.0.1 is NPU 0 of node-0 and NPU 3 of node-1;
 * HCCL refuses a duplicate device_ip") both keep the table "initializing": each names
 * the first problem found, in the order above. Costs what the job holds, not the
 * cluster (the host addresses are the cluster's index of them, sched_devip.c). Returns
 * 1 (waiting; @why set), 0 (completed; @why ""), or -ENOENT (not placed).
 */
int sched_ranktable_waiting_for(const struct sched_cluster *c, const struct sched_job *j,
				char *why, size_t why_len);

/*
 * sched_render_job_env() - job-wide shell exports (`. env`). -ENOENT when unplaced.
 * By the cluster's enable_dynamic_network (rules and their MindSpore sources in
 * sched_render.c): false (rank-table mode) exports RANK_TABLE_FILE and no MS_*; true
 * (dynamic mode) MS_SCHED_HOST, MS_SCHED_PORT, MS_WORKER_NUM and no RANK_TABLE_FILE.
 * Both: ASCEND_JOB_ID, ASCEND_JOB_GENERATION, ASCEND_RESUME_CHECKPOINT, ASCEND_JOB_DIR,
 * RANK_SIZE, SERVER_COUNT, HCCL_*, ASCEND_* of the spec; an array's element also
 * ASCEND_ARRAY_JOB, ASCEND_ARRAY_INDEX, ASCEND_ARRAY_COUNT, ASCEND_ARRAY_MIN and
 * ASCEND_ARRAY_MAX (sched_render.c, array_lines()).
 */
int sched_render_job_env(const struct sched_cluster *c, const struct sched_job *j,
			 const struct sched_render_ctx *ctx, char **ret, size_t *ret_len);

/*
 * sched_render_host_env() - exports for slice @slice (index) plus MSRUN_ARGS: the job's,
 * with msrun's MS_SCHED_* in both modes, and --rank_table_file in rank-table mode.
 */
int sched_render_host_env(const struct sched_cluster *c, const struct sched_job *j, size_t slice,
			  const struct sched_render_ctx *ctx, char **ret, size_t *ret_len);

/*
 * sched_render_rank_env() - per-process exports for @rank. -ENOENT when out of range.
 * Rank-table mode: the job's, RANK_ID and the physical DEVICE_ID, no MS_* and no
 * ASCEND_RT_VISIBLE_DEVICES. Dynamic mode: an msrun worker's, MS_ROLE=MS_WORKER,
 * MS_NODE_ID = RANK_ID = @rank, ASCEND_RT_VISIBLE_DEVICES = the slice's NPUs, DEVICE_ID
 * = the local rank (@rank - first rank of its slice), which MindSpore makes the device;
 * the agent of slice 0 adds the MS_SCHED process (agent_env_scheduler()).
 */
int sched_render_rank_env(const struct sched_cluster *c, const struct sched_job *j, unsigned rank,
			  const struct sched_render_ctx *ctx, char **ret, size_t *ret_len);

/*
 * sched_render_job_recovery() - jobs/<id>/recovery, the file a job's processes watch
 * (inotify) for requests of its recovery ladder (sched_ladder.c): one JSON object and a
 * newline: job, generation, request (the newest request's number, 0 = none yet; a
 * process acts on a request once), action ("save": save the step you finished and
 * answer; "none"), strategy ("dump" while a step waits, else null), ladder (the spec's
 * recovery list), fault (the sentence of the fault, null when idle), began and deadline
 * (RFC 3339, null when idle), timeout_sec (recovery_timeout), processes (while a step
 * waits: those asked, in rank order, [{server, node_rank (the server's place in the
 * job, MS_NODE_RANK), rank (per-rank launch: RANK_ID; null for msrun), answered}]: the
 * first one listed writes the checkpoint, the others only answer),
 * last_outcome (how the last step ended, null before any). *ret new (free()). Returns
 * 0 or -ENOMEM.
 */
int sched_render_job_recovery(const struct sched_cluster *c, const struct sched_job *j,
			      char **ret, size_t *ret_len);

/*
 * sched_render_job_status_json() - JSON: job, state, reason, owner_uid; ranktable_status
 * ("completed"/"initializing", null when not placed) and ranktable_waiting_for (the
 * sentence of sched_ranktable_waiting_for(), null when nothing); from the spec
 * (when there is one) queue, priority, npus, npus_min, npus_max, time_limit_sec (0 =
 * none); run_accum_sec (run time of earlier runs, seconds) and run_since (start of the
 * current run, RFC 3339, null when not running): time_limit counts their sum with now;
 * borrowing (placed beyond its queue's quota), preemptions, preempted_by ("" when never);
 * reserved_start (pending with a backfill reservation: its latest start, RFC 3339, or
 * "unknown" while it waits for jobs without a time_limit; else null); stop_deadline
 * (stopping: when its NPUs are released at the latest; else null); stop_to (stopping: the
 * state it ends in, "cancelled", "completed", "failed", "timeout" or "pending"; else
 * null) and stop_waits_for (stopping: the servers whose agents have not yet reported
 * its processes gone; else []), stop_removes (stopping after an rmdir: the record goes
 * when the stop ends); generation, restarts (counted against max_restarts),
 * restarts_not_counted (recoveries of the same incident as a counted one,
 * sched_health.c), resume_scan_pending (the generation waits for its checkpoint_dir to
 * be read), npus_allocated, placement, MS_SCHED host/port, checkpoint, timestamps:
 * submitted, started (when the first generation began; never moved by a later one),
 * generation_started (when the current generation began; null while unplaced), ended,
 * changed.
 */
int sched_render_job_status_json(const struct sched_cluster *c, const struct sched_job *j,
				 char **ret, size_t *ret_len);

/*
 * sched_render_job_history() - the job's history as JSON lines, one object per kept
 * generation, oldest first (the first generation, then the newest SCHED_JOB_RUNS_MAX - 1:
 * a gap in "generation" shows dropped ones): job, generation, state ("running",
 * "stopping", or how it ended: sched_run_end_name()), start and end (RFC 3339, end null
 * while open), elapsed_sec (integer seconds, null while open), npus, placement
 * ([{server, device_ids, first_rank}]), exit_code (the first non-zero status an agent
 * reported, 0, or null when none reported) and reason (why it ended, null while open).
 * Empty for a job that never ran.
 */
int sched_render_job_history(const struct sched_cluster *c, const struct sched_job *j,
			     char **ret, size_t *ret_len);

/* sched_render_events() - JSON lines of events (all when @job is NULL, else that job's). */
int sched_render_events(const struct sched_cluster *c, const char *job, char **ret,
			size_t *ret_len);

/*
 * sched_render_cluster_status() - JSON: npus {total, and by sched_npu_use(): allocated,
 * free, isolated, unavailable}, servers {total, schedulable, and by
 * sched_server_condition()}, jobs by state, utilization, event_seq, events_dropped (events
 * since the start whose text could not be allocated: cluster/events skips their seq).
 */
int sched_render_cluster_status(const struct sched_cluster *c, char **ret, size_t *ret_len);

/*
 * sched_render_topology() - JSON: switches, super pods, servers (state by
 * sched_server_condition(), schedulable, npus_free and npu_counts by sched_npu_use()),
 * per NPU: device_ip, hccs_group, health, isolated, isolation, fault (while isolated,
 * else null), job, rank, state (sched_npu_use_name()).
 */
int sched_render_topology(const struct sched_cluster *c, char **ret, size_t *ret_len);

/*
 * sched_render_metrics() - Prometheus text exposition format: NPU health
 * (npu_chip_info_health_status), ascendfs_npu_state{id,node,state,isolation} 1 per NPU,
 * ascendfs_npus by state (total and sched_npu_use(), which sum to it), jobs by state,
 * ascendfs_servers by sched_server_condition(), counters
 * ascendfs_{recoveries,preemptions,backfilled,timeouts,resizes,events}_total, per queue
 * ascendfs_queue_used_npus and ascendfs_queue_pending_jobs, per serving service
 * ascendfs_service_{replicas,instances_ready,disruptions_allowed}.
 */
int sched_render_metrics(const struct sched_cluster *c, uint64_t now_usec, char **ret,
			 size_t *ret_len);

/* sched_render_server_npus() - one line per NPU: id device_ip health job rank. */
int sched_render_server_npus(const struct sched_cluster *c, unsigned server, char **ret,
			     size_t *ret_len);

/*
 * sched_render_server_info() - JSON: host_ip, type, switch, super pod, state and
 * schedulable, npus_free and npu_counts (as sched_render_topology()), heartbeat age
 * ("heartbeat_age_sec", null before the first report), "agent" (the agent of the last
 * accepted report that named one, or null), and "last_refused_report":
 * {"reason", "age_sec"} of the last refused health report since the last accepted one,
 * else null; "jobs", the jobs running here, and "roles", the disaggregated services'
 * controllers and coordinators run here ("<service>.<role>"; they hold no NPUs and a
 * drain leaves them: a drained server with roles still runs them).
 */
int sched_render_server_info(const struct sched_cluster *c, unsigned server, uint64_t now_usec,
			     char **ret, size_t *ret_len);

/*
 * sched_render_server_jobs() - what server @server must run, for its agent: one line per
 * running job with a share here, "<job> <generation> <msrun|per-rank> <node_rank>
 * <first_rank> <npu_count> <uid> <gid> <serial> <attempt> <kept_from>" (attempt: the
 * share's in-place restarts, sched_slice.attempt; kept_from: the generation since which
 * a process-level recovery kept its processes running, 0 = none, sched_slice.kept_from),
 * after a "# ..." header line, and among them a line for each serving service's
 * controller and coordinator that runs here (enum sched_role's rules:
 * "<service>.<role> <generation> <role> 0 0 0 <uid> <gid> <serial> 0 0"). A
 * generation waiting for its checkpoint scan (resume_scan_pending) is left out until
 * the scan ends, so no process starts from an older checkpoint than the newest.
 */
int sched_render_server_jobs(const struct sched_cluster *c, unsigned server, char **ret,
			     size_t *ret_len);

/*
 * sched_render_jobs_table() - cluster/jobs, the active jobs (not ended) as Slurm's squeue
 * lists them: a header line "JOB STATE QUEUE UID NPUS AGE REASON", then a line per job
 * in c->jobs order, each column as wide as its widest field (two spaces between) and the
 * reason last (control characters as spaces): its name, state, queue, owner's uid, NPUs
 * (held; asked for while it holds none; a service's record holds none), time since it
 * was submitted as [D-]HH:MM:SS at @now_usec, and its reason ("-" when none). *ret new
 * (free()). 0 or -ENOMEM.
 */
int sched_render_jobs_table(const struct sched_cluster *c, uint64_t now_usec, char **ret,
			    size_t *ret_len);

/* sched_render_server_health() - normalized health: "node <state>\nnpu N <level>\n...". */
int sched_render_server_health(const struct sched_cluster *c, unsigned server, char **ret,
			       size_t *ret_len);

/*
 * sched_render_queue_status() - JSON for queue @q (borrowed; must be one of
 * c->conf->queues): queue, quota_npus (0 = none), enable_quota_limit (whether quotas are
 * enforced at all), priority, weight, may_borrow, groups (names), and from
 * sched_queue_usage(): used_npus, borrowed_npus, pending, running (recovering included),
 * stopping.
 */
int sched_render_queue_status(const struct sched_cluster *c, const struct conf_queue *q,
			      char **ret, size_t *ret_len);

/*
 * sched_shell_quote() - append @value single-quoted for POSIX sh to @buf (a growing
 * string: *buf may be NULL; *len and *cap track it). Returns 0 or -ENOMEM.
 */
int sched_shell_quote(char **buf, size_t *len, size_t *cap, const char *value);

#endif
