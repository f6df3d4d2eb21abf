/* SPDX-License-Identifier: MIT */
/*
 * ascend-sim: replay a job trace against the scheduler with a virtual clock.
 *
 * Three engines see the same trace and the same hardware faults:
 *  - "ascendfs": the sched library the daemon runs (sched_job_submit, sched_tick,
 *    sched_server_report, sched_job_checkpoint ...), with the cluster configuration's
 *    policies (queues, backfill, preemption, fine-grained topology-aware placement) and
 *    recovery from the newest checkpoint;
 *  - "blind": the same library and policies with SCHED_PLACE_BLIND placement
 *    (ascend_sched.h): fine-grained but topology-blind, any free NPUs as a gang, bin
 *    packed as Volcano's binpack plugin orders nodes; what Kubernetes with Volcano
 *    gives without Ascend's topology plugin. Only where NPUs are taken differs;
 *  - "static": today's workflow of a hand-written rank table and an MPI/msrun launch,
 *    modelled here in a few lines: whole servers per job, one FIFO line, the first
 *    free servers in inventory order (topology-blind), no backfill, and a fault kills
 *    the job, which starts again from scratch on other servers.
 * Everything runs on one thread; time is virtual (seconds since the first arrival of
 * the trace slice). The library reads no clock; ascend-sim times the replays.
 */
#ifndef ASCENDFS_SIM_H
#define ASCENDFS_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ascend_sched.h"
#include "conf.h"
#include "sched_comm.h"

#define SIM_ERR_MAX 512
#define SIM_SERIES_MAX 262144	/* time-series buckets kept per engine (30 years of hours) */
#define SIM_TIME_MAX (100ull * 365 * 86400) /* longest duration or trace span accepted */
#define SIM_STALL_SEC (365ull * 86400)	/* a replay where jobs wait, nothing runs and no
					 * job starts for this long is stopped */

/* ---- the trace (sim_trace.c) ---- */

enum sim_trace_format {
	SIM_TRACE_PHILLY,	/* timestamp,duration,num_gpus,gpu_time,cluster */
	SIM_TRACE_PLAIN,	/* submit_sec,duration_sec,npus,queue,priority[,tp,pp,ep,cp,
				 * model in any order, any of them] */
};

/* One job of a trace. */
struct sim_tjob {
	uint64_t submit_sec;	/* after sim_trace_parse: seconds since the first arrival */
	uint64_t dur_sec;	/* run time without interruptions, >= 1 */
	unsigned npus;		/* as the trace asks; sim_trace_fit() may raise it */
	unsigned queue;		/* index into sim_trace.queues */
	unsigned priority;	/* 0-1000 (Philly has none: 500) */
	size_t line;		/* line in the file, for messages and a stable order */
	/* the parallel layout (plain format's optional columns; 0 = not given): tp*cp*pp*ep
	 * divides npus; see sim_model_layout() for what is not given */
	unsigned tp, pp, ep, cp;
	unsigned model;		/* index of a model preset (sim_model_find()); 0 = the
				 * default dense model sized by npus */
};

/* sim_tjob_unit() - tp*pp*cp*ep of @j, each not given as 1: npus must be a multiple. */
static inline unsigned sim_tjob_unit(const struct sim_tjob *j)
{
	return (j->tp ? j->tp : 1) * (j->pp ? j->pp : 1) * (j->cp ? j->cp : 1) *
	       (j->ep ? j->ep : 1);
}

struct sim_trace {
	enum sim_trace_format format;
	struct sim_tjob *jobs;	/* owned; n entries, by submit time then line */
	size_t n;
	char (*queues)[CONF_NAME_MAX + 1]; /* owned; nqueue queue names */
	size_t nqueue;
	uint64_t origin_sec;	/* absolute time of the first arrival (Philly: Unix time) */
	char file[256];		/* the name it was parsed under, for messages */
};

/*
 * sim_trace_parse() - parse a trace CSV of @len bytes at @buf (need not end in NUL).
 * The header line says the format: `timestamp,duration,num_gpus,gpu_time,cluster`
 * (the Philly trace, Jeon et al., ATC'19: one GPU is taken as one NPU, the virtual
 * cluster hash becomes queue "vc-<hash>") or `submit_sec,duration_sec,npus,queue,
 * priority` (queue and priority may be empty: "default", 500), optionally followed by
 * any of the columns `tp`, `pp`, `ep`, `cp` (parallel sizes, 1 to npus, empty = not
 * given; their product must divide npus) and `model` (a preset of sim_model_find(),
 * empty = the default dense model), in any order. Durations are rounded
 * to whole seconds, at least 1. Jobs are sorted by submit time (then file order) and
 * times made relative to the first arrival. @file names the input in messages.
 * On success fills *@ret (release with sim_trace_free()). Returns 0, -EINVAL with
 * @err ("file:line: what is wrong and how to fix it"), or -ENOMEM.
 */
int sim_trace_parse(const char *buf, size_t len, const char *file, struct sim_trace *ret,
		    char err[SIM_ERR_MAX]);

/* sim_trace_free() - release what sim_trace_parse() filled. Zeroed or NULL is fine. */
void sim_trace_free(struct sim_trace *t);

/*
 * sim_trace_slice() - keep jobs [@from, @to) in submit order (@to clamped to n) and
 * make times relative to the first kept arrival again. Returns 0 or -EINVAL (an empty
 * slice), with @err.
 */
int sim_trace_slice(struct sim_trace *t, size_t from, size_t to, char err[SIM_ERR_MAX]);

/*
 * sim_trace_scale_load() - multiply the arrival rate by @factor (> 0): every submit time
 * is divided by it, run times stay. 2 offers twice the load. Returns 0 or -EINVAL.
 */
int sim_trace_scale_load(struct sim_trace *t, double factor);

/* ---- options and results (sim_run.c, sim_static.c, sim_acct.c) ---- */

struct sim_options {
	uint64_t mtbf_sec;		/* mean time between failures of one NPU; 0 = none */
	uint64_t repair_sec;		/* a failed NPU is back in service after this */
	uint64_t checkpoint_sec;	/* jobs checkpoint every this much run time; 0 = never */
	uint64_t restart_cost_sec;	/* run time a restarted job spends before it makes
					 * progress again (relaunch, HCCL init, loading) */
	bool dump;			/* ascendfs's ladder is recovery: [dump, job]: at a
					 * fault the survivors save the step they finished
					 * (modelled in the accounting: the work lost is the
					 * step in flight, and the restart costs dump_save_sec
					 * more); false: job-level from the newest checkpoint */
	uint64_t dump_save_sec;		/* how long the dying-gasp save takes */
	bool process;			/* the ladder is recovery: [process, dump, job]: as
					 * dump, and a fault of a job of several servers that
					 * is placed again at once keeping some of them (the
					 * scheduler's replacement of the failed ones, which
					 * process-level recovery uses) costs rebuild_sec
					 * instead of the restart and the save: only the
					 * failed servers' processes start, the others rebuild
					 * their communicator */
	uint64_t rebuild_sec;		/* process-level: start on the replacement, link
					 * set-up and the state taken from replicas */
	bool retry;			/* the ladder is recovery: [retry, process, dump,
					 * job]: as process, and a transient fault (a share
					 * transient_share of the faults, drawn from the
					 * fault sequence) of a running job costs it the step
					 * in flight and retry_sec, nothing else: it runs on
					 * and the NPU stays in service */
	double transient_share;		/* 0-1: faults that are transient (retry_fault_codes) */
	uint64_t retry_sec;		/* a retry's pause and the recomputation's start */
	uint64_t step_sec;		/* one training step: what a dump loses at most */
	uint64_t sample_sec;		/* width of a time-series bucket */
	uint64_t seed;			/* fault sequence */
	unsigned tp;			/* tensor-parallel group size (ranks); jobs smaller
					 * than it are one group */
	unsigned max_restarts;		/* restarts after faults before a job fails, both
					 * engines (the spec's max_restarts) */
	enum { SIM_LIMIT_NONE, SIM_LIMIT_EXACT, SIM_LIMIT_HOUR } time_limit;
	double spine_oversub;		/* leaf-to-spine oversubscription (1 = non-blocking),
					 * for the step model (sched_comm_params_for) */
	double mfu;			/* model FLOP utilization for the step model's
					 * compute time (sim_model_compute_usec) */
	bool stretch_runs;		/* a placement whose modelled step is slower than the
					 * job's step on an empty cluster runs longer by that
					 * ratio (sim_jobrec.stretch); off: the trace's run
					 * times whatever the placement */
};

/* sim_options_default() - the defaults ascend-sim documents (--help). */
void sim_options_default(struct sim_options *o);

enum sim_outcome {
	SIM_NEVER,	/* never started */
	SIM_RUNNING,	/* started, not finished when the replay stopped */
	SIM_DONE,
	SIM_FAILED,	/* gave up (max_restarts) */
	SIM_TIMEOUT,	/* stopped at its time_limit */
};

/* What became of one trace job under one engine. */
struct sim_jobrec {
	uint64_t first_start_sec, end_sec;	/* UINT64_MAX while unknown */
	unsigned npus;				/* NPUs it ran with (last placement) */
	unsigned fault_restarts;		/* interruptions by faults */
	unsigned restarts;			/* placements after a fault interruption */
	unsigned preemptions;
	enum sim_cause_kind { SIM_LAST_NONE, SIM_LAST_FAULT, SIM_LAST_PREEMPT } last_cause;
	uint64_t run_total_sec;			/* run time of every placement so far */
	double lost_abandoned_npu_sec;		/* failed or timed out: all its other work */
	double lost_fault_npu_sec;		/* run time redone after faults, x NPUs */
	double lost_preempt_npu_sec;		/* the same after preemption */
	unsigned servers, switches;		/* of its first placement */
	/* the step model of its first placement (sched_comm_step()); 0 when not placed or
	 * its layout does not fit the NPUs it got */
	double step_usec, compute_usec;
	double comm_usec[SCHED_DIM_COUNT];	/* exposed communication per dimension */
	double stretch;				/* the running placement's step / ideal step,
						 * >= 1 (1 without stretch_runs or a model):
						 * its wall time per second of the trace's run */
	double ideal_step_usec;			/* the same job on an empty cluster: whole
						 * servers, one leaf when one holds it, ranks
						 * in order (0 when not modelled) */
	double roce_leaf_bytes, roce_spine_bytes; /* one step sends, all ranks */
	enum sim_outcome outcome;
	/* the running model */
	bool running;
	bool dumped;				/* its last fault was saved by a dump: the
						 * next placement pays dump_save_sec */
	uint64_t fault_sec;			/* when its last fault interrupted it */
	unsigned last_servers;			/* servers of its current (last) placement */
	unsigned gen;				/* placement the sim knows of */
	uint64_t run_start_sec;			/* of the current placement */
	uint64_t base_sec;			/* progress it resumed from */
	uint64_t cost_sec;			/* restart cost of this placement */
	uint64_t ckpt_sec;			/* newest checkpoint (progress, s) */
	uint64_t done_at_sec;			/* planned completion */
	uint64_t stop_tick_gen;			/* a tick is queued for this stop */
};

/* Time series, one bucket per sample_sec of virtual time. */
struct sim_bucket {
	double alloc_npu_sec;	/* NPUs held by jobs (whole servers for static) */
	double used_npu_sec;	/* NPUs jobs asked for, while they ran */
	double healthy_npu_sec;	/* NPUs not failed */
	double pending_sec;	/* jobs waiting, x seconds */
	double running_sec;	/* jobs running, x seconds */
	double span_sec;	/* seconds of the bucket the replay covered */
};

struct sim_result {
	bool runs_stretched;	/* placements ran at their modelled speed (stretch_runs) */
	const char *engine;		/* "static", "ascendfs" or "blind" (static string) */
	struct sim_jobrec *jobs;	/* owned; one per trace job */
	size_t njobs;
	struct sim_bucket *buckets;	/* owned; nbuckets allocated, nseries filled (up to
					 * the replay's end) */
	size_t nbuckets, nseries;
	bool series_cut;		/* the replay outlasted SIM_SERIES_MAX buckets */
	unsigned npus_total;
	/* integrals, NPU-seconds or job-seconds */
	double alloc_wait, used_wait, time_wait; /* while at least one job waited */
	double alloc_win, used_win, time_win; /* over the arrival window */
	double alloc_all, used_all, time_all; /* first arrival to the last end */
	/* placements */
	uint64_t placements, tp_groups, tp_cross, tp_cross_avoidable;
	uint64_t multi_placements, multi_extra_switch;
	uint64_t multi_extra_switch_avoidable;	/* more switches than the servers free at
						 * that moment needed */
	double step_sum, step_weight;		/* sum of npus x run time x modelled step
						 * / compute, and of npus x run time, over
						 * jobs' first placements */
	double roce_leaf_bytes, roce_spine_bytes; /* sums over jobs' first placements of
						 * what one step sends over RoCE */
	/* faults */
	uint64_t faults, faults_hit, faults_absorbed;
	uint64_t process_recoveries;		/* restarts after faults that process-level
						 * recovery handled (options.process) */
	uint64_t retries;			/* transient faults a running job retried
						 * (options.retry): not restarts */
	uint64_t interruptions_over_bound;	/* losses above npus x (checkpoint + cost) */
	double worst_loss_ratio;		/* max over interruptions of loss /
						 * (npus x (checkpoint + restart cost)) */
	uint64_t preemptions, backfilled, timeouts;
	bool stalled;				/* stopped by the SIM_STALL_SEC rule */
	unsigned max_pending;
	double useful_npu_sec;			/* sum of npus x run time of finished jobs */
	double wall_sec;			/* set by the caller that timed the replay */
};

/* sim_result_free() - release @r's arrays. */
void sim_result_free(struct sim_result *r);

/*
 * sim_run_ascendfs() - replay @t on a cluster built from @conf (stolen; freed on every
 * path) through the sched library. Trace queues the configuration lacks are added
 * (conf_cluster_add_queue). @t's npus must fit (sim_trace_fit). Every server reports
 * healthy at time 0, as a running agent would (cluster.require_agent). Fills *@res.
 * Returns 0; -EINVAL with @err ("file:line: ...") when the configuration refuses a job
 * of the trace outright (a queue quota smaller than the job, a queue closed to its
 * groups), checked before anything runs; or another negative errno with @err (an API
 * call refused what every legal replay does, or a scheduler invariant broke).
 */
int sim_run_ascendfs(const struct sim_trace *t, struct conf_cluster *conf,
		     const struct sim_options *o, struct sim_result *res, char err[SIM_ERR_MAX]);

/*
 * sim_run_sched() - sim_run_ascendfs() with the cluster's placement set to @placement
 * (SCHED_PLACE_TOPOLOGY: the "ascendfs" engine; SCHED_PLACE_BLIND: "blind"). Same
 * contract and errors.
 */
int sim_run_sched(const struct sim_trace *t, struct conf_cluster *conf,
		  enum sched_placement placement, const struct sim_options *o,
		  struct sim_result *res, char err[SIM_ERR_MAX]);

/*
 * sim_run_static() - replay @t with the static workflow on the servers of @c (borrowed:
 * its inventory and switches only). Fills *@res. Returns 0, -ENOMEM or -EINVAL (a job
 * that no set of servers of one type can hold) with @err.
 */
int sim_run_static(const struct sim_trace *t, const struct sched_cluster *c,
		   const struct sim_options *o, struct sim_result *res, char err[SIM_ERR_MAX]);

/*
 * sim_trace_fit() - make every job's NPU count legal on @c: sizes the placement rules
 * refuse, or that are not a multiple of the job's sim_tjob_unit(), are raised to the
 * next legal size that is (a 12-NPU job takes two 8-NPU servers: 16).
 * Jobs no size up to the cluster's NPU count fits are removed, and times count from
 * the first job kept again. Reports how many were raised and removed.
 * Returns 0 or -ENOMEM.
 */
int sim_trace_fit(struct sim_trace *t, const struct sched_cluster *c, size_t *ret_raised,
		  size_t *ret_removed);

/* ---- the step model's presets (sim_model.c) ---- */

/*
 * sim_model_find() - the index of model preset @name ("llama70b", "moe"), >= 1; -1 when
 * there is none. 0 is the default dense model, which has no name.
 */
int sim_model_find(const char *name);

/* sim_model_name() - the preset's name, "dense" for 0 (static). */
const char *sim_model_name(unsigned model);

/* sim_model_names() - "llama70b, moe": the presets, for messages (static). */
const char *sim_model_names(void);

/*
 * sim_model_layout() - the parallel layout of trace job @j run on @npus NPUs: pp, cp and
 * ep as the trace gives them (not given: 1); tp as given, else the largest size of at
 * most --tp (o->tp) that npus / (pp x cp x ep) divides into; dp the rest (ep inside
 * it). Returns 0 or -EINVAL (the given sizes do not divide @npus).
 */
int sim_model_layout(const struct sim_tjob *j, unsigned npus, const struct sim_options *o,
		     struct sched_parallel *ret);

/*
 * sim_model_train() - the step shape of @j laid out as @par: its preset's layers,
 * hidden size, sequence and parameters (the default dense model: 1e9 parameters per
 * NPU up to 70e9), micro-batch 1, 4 x pp micro-batches per step, bf16 activations,
 * fp32 gradients, half the DP all-reduce overlapped, and compute_usec = 6 x active
 * parameters x tokens per step / (NPUs x 910B peak x o->mfu).
 */
void sim_model_train(const struct sim_tjob *j, const struct sched_parallel *par,
		     const struct sim_options *o, struct sched_train_model *ret);

/* ---- shared accounting (sim_acct.c) ---- */

/* A fault source shared by both engines: the same seed gives the same sequence. */
struct sim_faults {
	uint64_t rng;
	double mean_gap_sec;	/* cluster-wide: NPU MTBF / NPU count */
	uint64_t next_sec;	/* UINT64_MAX without faults */
	unsigned server, npu;	/* where the next fault strikes */
};

/* sim_faults_init() - the first fault of @c's NPUs (every NPU equally likely). */
void sim_faults_init(struct sim_faults *f, const struct sched_cluster *c,
		     const struct sim_options *o);

/* sim_faults_advance() - draw the fault after the current one. */
void sim_faults_advance(struct sim_faults *f, const struct sched_cluster *c);

/*
 * sim_faults_skip_idle() - while the cluster is idle (nothing runs or waits), count the
 * faults that would be repaired (@repair_sec) before @until_sec, the next arrival, in
 * @r->faults without injecting them: they can change nothing. The sequence stays the
 * one every engine draws. Keeps a long empty stretch of a trace from costing a
 * scheduling pass per fault.
 */
void sim_faults_skip_idle(struct sim_faults *f, const struct sched_cluster *c,
			  struct sim_result *r, uint64_t repair_sec, uint64_t until_sec);

/* A min-heap of timed engine events. */
enum sim_ev { SIM_EV_COMPLETE, SIM_EV_TICK, SIM_EV_REPAIR };

struct sim_heap_item {
	uint64_t t_sec;
	enum sim_ev kind;
	size_t job;		/* COMPLETE: trace job; REPAIR: server */
	unsigned gen;		/* COMPLETE: placement; REPAIR: npu */
	uint64_t order;		/* ties: first pushed first */
};

struct sim_heap {
	struct sim_heap_item *h;
	size_t n, cap;
	uint64_t pushed;
};

int sim_heap_push(struct sim_heap *q, uint64_t t_sec, enum sim_ev kind, size_t job,
		  unsigned gen);
struct sim_heap_item sim_heap_pop(struct sim_heap *q);

/*
 * sim_next_time() - the next moment something happens in a replay of @t whose next
 * arrival is t->jobs[@ai] (@ai == t->n: all arrived): that arrival, the earliest item
 * of @heap, or the next fault of @f while any job is to come, waits or runs. An idle
 * cluster skips faults that would be repaired before the next arrival
 * (sim_faults_skip_idle, counted in @r). UINT64_MAX when nothing is left to happen.
 */
uint64_t sim_next_time(const struct sim_trace *t, size_t ai, unsigned running, unsigned waiting,
		       const struct sim_heap *heap, struct sim_faults *f,
		       const struct sched_cluster *c, struct sim_result *r,
		       const struct sim_options *o);

/* sim_result_init() - zero @r and allocate per-job records and buckets. */
int sim_result_init(struct sim_result *r, const char *engine, const struct sim_trace *t,
		    unsigned npus_total);

/* The cluster state held since the last call, integrated into @r up to @now_sec. */
struct sim_level {
	unsigned alloc, used, healthy, pending, running;
};
void sim_acct_advance(struct sim_result *r, const struct sim_trace *t,
		      const struct sim_options *o, uint64_t *prev_sec, uint64_t now_sec,
		      const struct sim_level *l);

/*
 * sim_acct_retry() - a transient fault of running job @idx at @now_sec, retried
 * (options.retry): the step in flight is work redone (lost), and its planned completion
 * moves by the step and retry_sec. Returns the new completion time.
 */
uint64_t sim_acct_retry(struct sim_result *r, const struct sim_options *o, size_t idx,
			uint64_t now_sec);

/*
 * sim_acct_start() - job @idx starts a placement of @servers servers (0: an engine
 * without ascendfs's ladder) at @now_sec resuming from progress @base_sec; returns the
 * planned completion time. A restart first spends restart_cost_sec (and dump_save_sec
 * after a dump); a process-level recovery (options.process, see there) rebuild_sec
 * instead. Work its newest checkpoint held that the placement does not resume from is
 * lost again.
 */
uint64_t sim_acct_start(struct sim_result *r, const struct sim_trace *t,
			const struct sim_options *o, size_t idx, unsigned gen, unsigned npus,
			unsigned servers, uint64_t now_sec, uint64_t base_sec);

enum sim_cause { SIM_CAUSE_FAULT, SIM_CAUSE_PREEMPT, SIM_CAUSE_OTHER };

/*
 * sim_acct_interrupt() - job @idx stops running at @now_sec. With @checkpointing its
 * newest checkpoint (every checkpoint_sec of progress) is kept; without, progress
 * starts again from zero. The run time not covered by a checkpoint is lost.
 * Returns the newest checkpoint's progress in seconds.
 */
uint64_t sim_acct_interrupt(struct sim_result *r, const struct sim_options *o, size_t idx,
			    uint64_t now_sec, enum sim_cause cause, bool checkpointing);

/* sim_acct_finish() - job @idx ends at @now_sec with @outcome. */
void sim_acct_finish(struct sim_result *r, const struct sim_trace *t, size_t idx,
		     uint64_t now_sec, enum sim_outcome outcome);

/* One server's share of a placement, in rank order. */
struct sim_share {
	unsigned server;
	unsigned npus;
	const unsigned *device_ids;	/* borrowed, npus entries; NULL: devices 0..npus-1 */
};

/*
 * sim_acct_placement() - topology figures of a placement of @count shares (rank order)
 * for job @idx: tensor-parallel groups crossing servers (groups of the job's tp, else
 * --tp), leaf switches spanned beyond the fewest that could hold that many servers in
 * an empty cluster and beyond @least_now (the fewest the servers free at that moment
 * allowed; 0 = unknown), and, for its first placement, the modelled step
 * (sim_model_layout(), sim_model_train(), sched_comm_step() with the figures of the
 * first share's chip) into the job's record and the engine's sums.
 */
void sim_acct_placement(struct sim_result *r, const struct sim_trace *t,
			const struct sim_options *o, const struct sched_cluster *c, size_t idx,
			const struct sim_share *shares, size_t count, unsigned least_now);

/*
 * sim_least_switches() - the fewest leaf switches that together hold @servers servers
 * when switch k offers @per_switch[k] of them (@nswitch entries); 0 when they cannot.
 */
unsigned sim_least_switches(const unsigned *per_switch, size_t nswitch, unsigned servers);

/* ---- output (sim_report.c) ---- */

/* Summary figures of one engine's result, derived once. */
struct sim_summary {
	double alloc_wait_pct, used_wait_pct, alloc_win_pct, used_win_pct, useful_pct;
	double wait_mean, wait_median, wait_p99, wait_max;	/* seconds */
	double jct_mean, jct_median, jct_p99;			/* seconds */
	/* JCT with each job's run time stretched by its first placement's modelled step
	 * over its ideal step (end - submit + duration * (step / ideal - 1)): what a
	 * slower placement costs the job, the queue's feedback left out */
	double jct_step_mean, jct_step_median, jct_step_p99;	/* seconds */
	size_t started, done, failed, timeout, never, unfinished;
	double tp_cross_pct, extra_switch_pct, avoidable_switch_pct;
	double step_factor;		/* modelled step / compute, NPU-time weighted; 1 =
					 * no communication */
	double roce_leaf_gb, roce_spine_gb; /* per step, summed over jobs */
	uint64_t restarts, fault_hits, preemptions;
	size_t jobs_rerun;
	double lost_fault_npu_h, lost_preempt_npu_h, lost_abandoned_npu_h;
	double makespan_sec;
};

/* sim_summarize() - derive @s from @r, a replay of @t. Returns 0 or -ENOMEM. */
int sim_summarize(const struct sim_trace *t, const struct sim_result *r, struct sim_summary *s);

/*
 * sim_report_table() - print the side-by-side table of static (@st, @ss), ascendfs (@as,
 * @sa) and blind (@bl, @sb) with the ratios ascendfs / static and ascendfs / blind to
 * @out.
 */
void sim_report_table(FILE *out, const struct sim_result *st, const struct sim_summary *ss,
		      const struct sim_result *as, const struct sim_summary *sa,
		      const struct sim_result *bl, const struct sim_summary *sb);

/*
 * sim_report_files() - write summary.csv, utilization.csv, jobs.csv and utilization.gp
 * into directory @dir (made when missing) and, with @plot ("svg", "png" or NULL for
 * none), run gnuplot on it. The three engines as for sim_report_table(); the blind
 * engine's columns come after the other two's in every file. Returns 0, or a negative
 * errno with @err; a missing gnuplot is reported in @err with 1 returned (files
 * written, no plot).
 */
int sim_report_files(const char *dir, const struct sim_trace *t, const struct sim_result *st,
		     const struct sim_summary *ss, const struct sim_result *as,
		     const struct sim_summary *sa, const struct sim_result *bl,
		     const struct sim_summary *sb, const struct sim_options *o, const char *plot,
		     char err[SIM_ERR_MAX]);

#endif
