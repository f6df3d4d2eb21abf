/* SPDX-License-Identifier: MIT */
/*
 * The ascendfs and blind engines: the trace driven through the sched library, as the
 * daemon drives it, with a virtual clock (sim.h); blind with SCHED_PLACE_BLIND.
 *
 * The simulator plays the parts outside sched: users submit (sched_job_submit), jobs
 * end (their agents report every process's exit 0, sched_job_process_exit, then
 * sched_job_remove as a user's rmdir), jobs report their
 * newest checkpoint when they are interrupted (sched_job_checkpoint), node agents
 * report a Critical NPU (sched_server_report) and an admin returns the repaired NPU
 * (sched_server_clear_npu), and the daemon's 1 s timer becomes sched_tick() at every
 * moment something is due. What sched decides is read back from its events and its job
 * records: placements, generations, preemptions, and the checkpoint a new generation
 * resumes from (resume_path), which is what the job's progress restarts from.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SIM_UID 1000u
/* A trace's priorities and sizes are what the scheduler was given: the simulator models
 * scheduling, not admission, so its submitter is exempt from the queues' job caps. */
#define SIM_IS_OPERATOR true
#define SIM_GID 1000u
#define USEC 1000000ull
#define CHECK_EVERY 20000	/* event times between invariant checks */
#define CKPT_FMT "/sim/ckpt/j-%zu/step-%" PRIu64

struct engine {
	struct sched_cluster *c;
	const struct sim_trace *t;
	const struct sim_options *o;
	struct sim_result *r;
	struct sim_heap heap;
	struct sim_faults faults;
	uint64_t now, prev, cursor;
	unsigned waiting, running, used, down;
	uint64_t progress_sec;	/* the last arrival, start or end */
	bool *npu_down;		/* server * CONF_SERVER_NPUS_MAX + npu */
	size_t *touched;	/* trace jobs named by events since the last reconcile */
	size_t ntouched;
	bool *is_touched;
	bool *submitted;
	char *err;
};

static int job_index(const struct engine *e, const char *name, size_t *ret)
{
	char *end;
	unsigned long long v;

	if (strncmp(name, "j-", 2) != 0)
		return -ENOENT;
	v = strtoull(name + 2, &end, 10);
	if (*end || v >= e->t->n)
		return -ENOENT;
	*ret = (size_t)v;
	return 0;
}

static struct conf_job_spec *job_spec(const struct engine *e, size_t idx)
{
	const struct sim_tjob *tj = &e->t->jobs[idx];
	struct conf_job_spec *s = calloc(1, sizeof(*s));
	char name[32];

	if (!s)
		return NULL;
	snprintf(name, sizeof(name), "j-%zu", idx);
	s->name = strdup(name);
	s->queue = strdup(e->t->queues[tj->queue]);
	s->checkpoint_dir = strdup("/sim/ckpt");
	if (!s->name || !s->queue || !s->checkpoint_dir) {
		conf_job_spec_free(s);
		return NULL;
	}
	s->npus = s->npus_min = s->npus_max = tj->npus;
	s->priority = tj->priority;
	s->launch = CONF_LAUNCH_MSRUN;
	s->max_restarts = e->o->max_restarts;
	switch (e->o->time_limit) {
	case SIM_LIMIT_NONE:
		break;
	case SIM_LIMIT_EXACT:
	case SIM_LIMIT_HOUR: {
		/*
		 * What a user who knows faults happen asks for: the run time plus what a
		 * few restarts may redo (one checkpoint interval and restart each). The same
		 * with and without --mtbf, so that the two replays differ only in faults.
		 */
		uint64_t lim = tj->dur_sec + 3 * (e->o->checkpoint_sec + e->o->restart_cost_sec);

		if (e->o->time_limit == SIM_LIMIT_HOUR)
			lim = (lim + 3599) / 3600 * 3600;
		s->time_limit_sec = lim;
		break;
	}
	}
	return s;
}

__attribute__((format(printf, 3, 4))) static int fail(struct engine *e, int r, const char *fmt,
						      ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->err, SIM_ERR_MAX, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -EIO;
}

static struct sim_level level(const struct engine *e)
{
	struct sim_level l = { e->c->npus_allocated, e->used, e->c->npus_total - e->down,
			       e->waiting, e->running };

	return l;
}

static int report_checkpoint(struct engine *e, size_t idx, uint64_t progress_sec)
{
	char name[32], path[96];
	int r;

	if (!progress_sec)
		return 0;
	snprintf(name, sizeof(name), "j-%zu", idx);
	snprintf(path, sizeof(path), CKPT_FMT, idx, progress_sec);
	r = sched_job_checkpoint(e->c, name, SIM_UID, progress_sec, path, e->now * USEC);
	if (r < 0 && r != -EBUSY)
		return fail(e, r, "checkpoint of %s refused: %s", name, strerror(-r));
	return 0;
}

/* The progress a new generation resumes from: the step of its resume_path. */
static uint64_t resume_progress(const struct sched_job *j, size_t idx)
{
	size_t got_idx;
	uint64_t step;
	char tail;

	if (!j->resume_path || !*j->resume_path)
		return 0;
	if (sscanf(j->resume_path, "/sim/ckpt/j-%zu/step-%" SCNu64 "%c", &got_idx, &step, &tail) !=
		    2 ||
	    got_idx != idx)
		return 0;
	return step;
}

/*
 * The fewest leaf switches the servers free when a job of @n whole servers was placed
 * (its own included) would have allowed.
 */
static unsigned least_now(const struct engine *e, const struct sim_share *shares, size_t n)
{
	const struct sched_cluster *c = e->c;
	unsigned per[4096] = { 0 };
	size_t nsw = c->switch_count < 4096 ? c->switch_count : 4096;

	for (size_t s = 0; s < c->server_count; s++) {
		const struct sched_server *sv = &c->servers[s];
		bool own = false;

		for (size_t k = 0; k < n && !own; k++)
			own = shares[k].server == s;
		if (sv->switch_index < nsw &&
		    (own || (sv->npus_free == sv->conf->npu_count &&
			     sched_server_is_schedulable(c, sv))))
			per[sv->switch_index]++;
	}
	return sim_least_switches(per, nsw, (unsigned)n);
}

/* Bring the simulator's view of job @idx in line with what sched decided. */
static int reconcile(struct engine *e, size_t idx)
{
	struct sim_jobrec *rec = &e->r->jobs[idx];
	char name[32];
	struct sched_job *j;
	int r;

	snprintf(name, sizeof(name), "j-%zu", idx);
	j = sched_cluster_find_job(e->c, name);
	if (!j || (rec->outcome != SIM_NEVER && rec->outcome != SIM_RUNNING))
		return 0;
	if (rec->running && (j->state != SCHED_JOB_RUNNING || j->generation != rec->gen)) {
		enum sim_cause cause = SIM_CAUSE_OTHER;
		uint64_t ckpt;

		if ((j->state == SCHED_JOB_STOPPING && j->stop_to == SCHED_JOB_PENDING) ||
		    (j->state == SCHED_JOB_PENDING && j->requeue_cause == SCHED_REQUEUE_PREEMPTED))
			cause = SIM_CAUSE_PREEMPT;
		else if (j->state == SCHED_JOB_PENDING || j->state == SCHED_JOB_RUNNING)
			cause = SIM_CAUSE_FAULT;
		ckpt = sim_acct_interrupt(e->r, e->o, idx, e->now, cause, true);
		e->running--;
		e->waiting++;
		e->used -= rec->npus;
		if (!sched_job_state_is_terminal(j->state)) {
			r = report_checkpoint(e, idx, ckpt);
			if (r < 0)
				return r;
		}
	}
	if (j->state == SCHED_JOB_RUNNING && !rec->running) {
		struct sim_share shares[4096];
		size_t n = j->slice_count < 4096 ? j->slice_count : 4096;
		uint64_t done, run_sec;

		for (size_t k = 0; k < n; k++) {
			shares[k].server = j->slices[k].server;
			shares[k].npus = j->slices[k].npu_count;
			shares[k].device_ids = j->slices[k].device_ids;
		}
		/* the placement first: its modelled speed sets when the run ends */
		sim_acct_placement(e->r, e->t, e->o, e->c, idx, shares, n,
				   n > 1 ? least_now(e, shares, n) : 1);
		done = sim_acct_start(e->r, e->t, e->o, idx, j->generation, sched_job_total_npus(j),
				      (unsigned)n, e->now, resume_progress(j, idx));
		rec->outcome = SIM_RUNNING;
		e->progress_sec = e->now;
		e->running++;
		e->waiting--;
		e->used += rec->npus;
		r = sim_heap_push(&e->heap, done, SIM_EV_COMPLETE, idx, j->generation);
		if (r == 0 && j->spec && j->spec->time_limit_sec) {
			run_sec = sched_job_run_usec(j, e->now * USEC) / USEC;
			if (run_sec < j->spec->time_limit_sec)
				r = sim_heap_push(&e->heap, e->now + (j->spec->time_limit_sec - run_sec),
						  SIM_EV_TICK, idx, 0);
		}
		if (r < 0)
			return fail(e, r, "out of memory");
	}
	if (j->state == SCHED_JOB_STOPPING && rec->stop_tick_gen != j->generation) {
		rec->stop_tick_gen = j->generation;
		r = sim_heap_push(&e->heap, (j->stop_deadline_usec + USEC - 1) / USEC, SIM_EV_TICK,
				  idx, 0);
		if (r < 0)
			return fail(e, r, "out of memory");
	}
	if (sched_job_state_is_terminal(j->state)) {
		enum sim_outcome out = j->state == SCHED_JOB_TIMEOUT ? SIM_TIMEOUT :
				       j->state == SCHED_JOB_COMPLETED ? SIM_DONE :
									 SIM_FAILED;

		sim_acct_finish(e->r, e->t, idx, e->now, out);
		e->progress_sec = e->now;
		e->waiting--;
		e->r->timeouts += out == SIM_TIMEOUT;
		r = sched_job_remove(e->c, name, SIM_UID, e->now * USEC);
		if (r < 0)
			return fail(e, r, "removing %s: %s", name, strerror(-r));
	}
	return 0;
}

/* Read every new event, then reconcile the jobs they name, until nothing new. */
static int drain(struct engine *e)
{
	for (;;) {
		const struct sched_event *ev;
		int r;

		while ((ev = sched_event_next(e->c, e->cursor))) {
			size_t idx;

			if (ev->seq != e->cursor + 1) {
				snprintf(e->err, SIM_ERR_MAX,
					 "events %" PRIu64 "-%" PRIu64 " were dropped before they "
					 "were read (raise cluster.event_history)",
					 e->cursor + 1, ev->seq - 1);
				return -EIO;
			}
			e->cursor = ev->seq;
			if (job_index(e, ev->job, &idx) == 0 && !e->is_touched[idx]) {
				e->is_touched[idx] = true;
				e->touched[e->ntouched++] = idx;
			}
		}
		if (!e->ntouched)
			return 0;
		for (size_t k = 0; k < e->ntouched; k++) {
			size_t idx = e->touched[k];

			e->is_touched[idx] = false;
			r = reconcile(e, idx);
			if (r < 0)
				return r;
		}
		e->ntouched = 0;
	}
}

/*
 * Every process of job @name's current generation exits 0, as its agents report it: one
 * per server for msrun, one per rank for per-rank. The simulated servers send no
 * `running` lines, so the exits are what is known and the job completes at once.
 */
static int report_exits(struct engine *e, const char *name)
{
	struct sched_job *j = sched_cluster_find_job(e->c, name);
	char why[SCHED_REASON_MAX];
	bool per_rank;
	int r = 0;

	if (!j || j->state != SCHED_JOB_RUNNING)
		return -EBUSY;
	per_rank = j->spec->launch == CONF_LAUNCH_PER_RANK;
	for (size_t i = 0; r == 0 && i < j->slice_count && j->state == SCHED_JOB_RUNNING; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const char *server = e->c->servers[sl->server].conf->name;
		unsigned gen = j->generation;

		if (!per_rank) {
			r = sched_job_process_exit(e->c, name, SIM_UID, gen, server, -1, 0,
						   e->now * USEC, why);
			continue;
		}
		for (unsigned k = 0; r == 0 && k < sl->npu_count && j->state == SCHED_JOB_RUNNING;
		     k++)
			r = sched_job_process_exit(e->c, name, SIM_UID, gen, server,
						   (int)(sl->first_rank + k), 0, e->now * USEC,
						   why);
	}
	return r;
}

static int complete(struct engine *e, size_t idx, unsigned gen)
{
	struct sim_jobrec *rec = &e->r->jobs[idx];
	char name[32];
	int r;

	if (!rec->running || rec->gen != gen || e->now < rec->done_at_sec)
		return 0; /* interrupted since (cancelled), or put off by a retry */
	snprintf(name, sizeof(name), "j-%zu", idx);
	e->running--;
	e->used -= rec->npus;
	sim_acct_finish(e->r, e->t, idx, e->now, SIM_DONE);
	e->progress_sec = e->now;
	r = report_exits(e, name);
	if (r == 0)
		r = sched_job_remove(e->c, name, SIM_UID, e->now * USEC);
	if (r < 0)
		return fail(e, r, "completing %s: %s", name, strerror(-r));
	return 0;
}

/*
 * Is the fault now (the sequence's e->r->faults-th) transient? A draw of its own from the
 * seed and the fault's number, so that the fault sequence itself is the same with and
 * without --recovery retry.
 */
static bool fault_is_transient(const struct engine *e)
{
	uint64_t x = e->o->seed * 0x9E3779B97F4A7C15ull + e->r->faults;

	/* splitmix64's finalizer */
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	x ^= x >> 31;
	return (double)(x >> 11) / 9007199254740992.0 < e->o->transient_share;
}

static int inject_fault(struct engine *e)
{
	unsigned s = e->faults.server, d = e->faults.npu;
	struct sched_npu *npu = &e->c->servers[s].npus[d];
	struct conf_health_report rep;
	size_t idx;
	int r;

	e->r->faults++;
	if (e->npu_down[(size_t)s * CONF_SERVER_NPUS_MAX + d]) {
		e->r->faults_absorbed++; /* already failed, not yet repaired */
		return 0;
	}
	if (e->o->retry && fault_is_transient(e) && npu->job &&
	    npu->job->state == SCHED_JOB_RUNNING && job_index(e, npu->job->name, &idx) == 0 &&
	    e->r->jobs[idx].running) {
		/* the job's retry rung: the step again, no restart, the NPU in service */
		uint64_t done = sim_acct_retry(e->r, e->o, idx, e->now);

		e->r->faults_hit++;
		r = sim_heap_push(&e->heap, done, SIM_EV_COMPLETE, idx, e->r->jobs[idx].gen);
		return r < 0 ? fail(e, r, "out of memory") : 0;
	}
	if (npu->job && npu->job->state == SCHED_JOB_RUNNING &&
	    job_index(e, npu->job->name, &idx) == 0 && e->r->jobs[idx].running) {
		uint64_t ckpt = sim_acct_interrupt(e->r, e->o, idx, e->now, SIM_CAUSE_FAULT, true);

		e->r->faults_hit++;
		e->running--;
		e->waiting++;
		e->used -= e->r->jobs[idx].npus;
		r = report_checkpoint(e, idx, ckpt);
		if (r < 0)
			return r;
	}
	memset(&rep, 0, sizeof(rep));
	rep.npu_count = 1;
	rep.npus[0].id = d;
	rep.npus[0].has_level = true;
	rep.npus[0].level = CONF_HEALTH_CRITICAL;
	snprintf(rep.npus[0].code, sizeof(rep.npus[0].code), "0x80C98000");
	snprintf(rep.npus[0].message, sizeof(rep.npus[0].message), "simulated fault");
	r = sched_server_report(e->c, s, &rep, e->now * USEC);
	if (r < 0)
		return fail(e, r, "health report for %s: %s", e->c->servers[s].conf->name,
			    strerror(-r));
	e->npu_down[(size_t)s * CONF_SERVER_NPUS_MAX + d] = true;
	e->down++;
	r = sim_heap_push(&e->heap, e->now + e->o->repair_sec, SIM_EV_REPAIR, s, d);
	return r < 0 ? fail(e, r, "out of memory") : 0;
}

static int repair(struct engine *e, unsigned s, unsigned d)
{
	int r = sched_server_clear_npu(e->c, e->c->servers[s].conf->name, d, e->now * USEC);

	if (r < 0)
		return fail(e, r, "clearing an NPU of %s: %s", e->c->servers[s].conf->name,
			    strerror(-r));
	e->npu_down[(size_t)s * CONF_SERVER_NPUS_MAX + d] = false;
	e->down--;
	return 0;
}

static int submit(struct engine *e, size_t idx)
{
	char reason[SCHED_REASON_MAX] = "";
	struct conf_job_spec *s = job_spec(e, idx);
	int r;

	if (!s)
		return fail(e, -ENOMEM, "out of memory");
	r = sched_job_submit_as(e->c, s, SIM_UID, SIM_GID, SIM_IS_OPERATOR, e->now * USEC, reason,
				NULL);
	if (r < 0) {
		char what[64];

		snprintf(what, sizeof(what), "trace line %zu (%u NPUs)", e->t->jobs[idx].line,
			 e->t->jobs[idx].npus);
		return fail(e, r, "submitting %s refused: %s", what, reason);
	}
	e->progress_sec = e->now;
	e->waiting++;
	return 0;
}

static int check(struct engine *e)
{
	char why[SCHED_REASON_MAX] = "";
	int r = sched_check_invariants(e->c, why);

	if (r < 0)
		snprintf(e->err, SIM_ERR_MAX, "scheduler invariant broken at t=%" PRIu64 " s: %.400s",
			 e->now, why);
	return r;
}

/*
 * Before anything runs: every job must be one the configuration accepts (else -EINVAL
 * naming its trace line), and every server reports healthy, as its agent would.
 */
static int admit_all(struct engine *e)
{
	struct conf_health_report ok;
	int r;

	for (size_t i = 0; i < e->t->n; i++) {
		char reason[SCHED_REASON_MAX] = "";
		struct conf_job_spec *s = job_spec(e, i);

		if (!s)
			return fail(e, -ENOMEM, "out of memory");
		r = sched_job_check_as(e->c, s, SIM_UID, SIM_IS_OPERATOR, reason);
		if (r < 0) {
			fail(e, r, "%.200s:%zu: the configuration refuses this job (%u NPUs, queue "
				   "%s): %.200s; change the configuration or leave the row out",
			     e->t->file, e->t->jobs[i].line, s->npus, s->queue, reason);
			conf_job_spec_free(s);
			return -EINVAL;
		}
		conf_job_spec_free(s);
	}
	memset(&ok, 0, sizeof(ok));
	ok.has_node = true;
	ok.node = CONF_HEALTH_OK;
	for (size_t s = 0; s < e->c->server_count; s++) {
		r = sched_server_report(e->c, (unsigned)s, &ok, 0);
		if (r < 0)
			return fail(e, r, "first report of %s: %s", e->c->servers[s].conf->name,
				    strerror(-r));
	}
	e->cursor = e->c->next_event_seq - 1;
	return 0;
}

static int replay(struct engine *e)
{
	const struct sim_trace *t = e->t;
	size_t ai = 0, steps = 0;
	int r;

	e->cursor = e->c->next_event_seq - 1;
	for (;;) {
		uint64_t next = sim_next_time(t, ai, e->running, e->waiting, &e->heap, &e->faults,
					      e->c, e->r, e->o);

		if (next == UINT64_MAX)
			break;
		if (ai == t->n && !e->running && next - e->progress_sec >= SIM_STALL_SEC) {
			e->r->stalled = true; /* faults keep what waits from ever fitting */
			return check(e);
		}
		if (ai == t->n && !e->running && e->heap.n == 0) {
			/* only faults could come: one more pass, then the rest never starts */
			sched_schedule(e->c, e->now * USEC);
			r = drain(e);
			if (r < 0 || !e->running)
				return r;
			continue;
		}
		{
			struct sim_level l = level(e);

			sim_acct_advance(e->r, t, e->o, &e->prev, next, &l);
		}
		e->now = next;
		while (e->heap.n && e->heap.h[0].t_sec == next) {
			struct sim_heap_item it = sim_heap_pop(&e->heap);

			if (it.kind == SIM_EV_COMPLETE)
				r = complete(e, it.job, it.gen);
			else if (it.kind == SIM_EV_REPAIR)
				r = repair(e, (unsigned)it.job, it.gen);
			else
				r = 0; /* a tick: below */
			if (r == 0)
				r = drain(e);
			if (r < 0)
				return r;
		}
		while (e->faults.next_sec == next) {
			r = inject_fault(e);
			if (r == 0)
				r = drain(e);
			if (r < 0)
				return r;
			sim_faults_advance(&e->faults, e->c);
		}
		while (ai < t->n && t->jobs[ai].submit_sec == next) {
			r = submit(e, ai++);
			if (r == 0)
				r = drain(e);
			if (r < 0)
				return r;
		}
		sched_tick(e->c, next * USEC);
		r = drain(e);
		if (r < 0)
			return r;
		if (++steps % CHECK_EVERY == 0 && (r = check(e)) < 0)
			return r;
	}
	return check(e);
}

int sim_run_ascendfs(const struct sim_trace *t, struct conf_cluster *conf,
		     const struct sim_options *o, struct sim_result *res, char err[SIM_ERR_MAX])
{
	return sim_run_sched(t, conf, SCHED_PLACE_TOPOLOGY, o, res, err);
}

int sim_run_sched(const struct sim_trace *t, struct conf_cluster *conf,
		  enum sched_placement placement, const struct sim_options *o,
		  struct sim_result *res, char err[SIM_ERR_MAX])
{
	struct engine e = { 0 };
	int r;

	e.t = t;
	e.o = o;
	e.r = res;
	e.err = err;
	memset(res, 0, sizeof(*res));
	for (size_t q = 0; q < t->nqueue; q++) {
		r = conf_cluster_add_queue(conf, t->queues[q]);
		if (r < 0 && r != -EEXIST) {
			snprintf(err, SIM_ERR_MAX, "adding queue %s: %s", t->queues[q], strerror(-r));
			conf_cluster_free(conf);
			return r;
		}
	}
	/* every event is read back: keep enough of them between two reads */
	conf->event_history = 1048576;
	r = sched_cluster_new(conf, &e.c);
	if (r < 0) {
		snprintf(err, SIM_ERR_MAX, "building the cluster: %s", strerror(-r));
		return r;
	}
#ifndef ASCENDFS_PARANOID
	e.c->check_invariants = false; /* checked every CHECK_EVERY steps instead */
#endif
	/* the replay keeps its own figures: no accounting records to render */
	sched_cluster_set_accounting(e.c, false);
	sched_cluster_set_placement(e.c, placement);
	r = sim_result_init(res, placement == SCHED_PLACE_BLIND ? "blind" : "ascendfs", t,
			    e.c->npus_total);
	e.npu_down = calloc(e.c->server_count * CONF_SERVER_NPUS_MAX, sizeof(*e.npu_down));
	e.touched = calloc(t->n ? t->n : 1, sizeof(*e.touched));
	e.is_touched = calloc(t->n ? t->n : 1, sizeof(*e.is_touched));
	if (r < 0 || !e.npu_down || !e.touched || !e.is_touched) {
		snprintf(err, SIM_ERR_MAX, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	r = admit_all(&e);
	if (r < 0)
		goto out;
	sim_faults_init(&e.faults, e.c, o);
	r = replay(&e);
	res->preemptions = e.c->preemptions;
	res->backfilled = e.c->backfilled;
out:
	free(e.heap.h);
	free(e.npu_down);
	free(e.touched);
	free(e.is_touched);
	sched_cluster_free(e.c);
	return r;
}
