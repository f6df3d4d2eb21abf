/* SPDX-License-Identifier: MIT */
/*
 * The static engine: today's workflow of a hand-written rank table and an MPI/msrun
 * launch, as a baseline (sim.h). A job gets whole servers (one rank table lists
 * servers, and nobody shares a server with another team's job), from one FIFO line,
 * on the first free servers in inventory order (the file is written from a host list,
 * not the switch layout), and nothing runs ahead of a blocked job (no backfill).
 * A fault on any NPU of a job kills it; its servers are freed and it goes back to the
 * front of the line to start again from scratch (no automatic checkpoint resume:
 * someone edits the rank table and relaunches; modelled as instant, which favours the
 * baseline). The failed NPU's server stays out of the rank tables until repaired.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct st_engine {
	const struct sched_cluster *c;
	const struct sim_trace *t;
	const struct sim_options *o;
	struct sim_result *r;
	struct sim_heap heap;
	struct sim_faults faults;
	uint64_t now, prev;
	ssize_t *server_job;		/* per server: trace job on it, -1 free */
	unsigned *server_used;		/* per server: NPUs its job runs on, devices 0.. */
	uint32_t *type_ok;		/* per job: server types (c->types) it is legal on */
	uint64_t progress_sec;		/* the last start or end */
	uint64_t *server_down;		/* per server: failed NPUs not yet repaired */
	size_t *line;			/* FIFO of trace jobs, a ring */
	size_t head, count, cap;
	unsigned *job_servers;		/* per job: servers it holds (a slice of slots) */
	unsigned waiting, running, used, alloc, down_npus;
	struct sim_share *shares;	/* scratch, server_count entries */
};

static int line_push_back(struct st_engine *e, size_t idx)
{
	e->line[(e->head + e->count++) % e->cap] = idx;
	return 0;
}

static void line_push_front(struct st_engine *e, size_t idx)
{
	e->head = (e->head + e->cap - 1) % e->cap;
	e->line[e->head] = idx;
	e->count++;
}

static bool server_free(const struct st_engine *e, size_t s)
{
	return e->server_job[s] < 0 && e->server_down[s] == 0;
}

/*
 * First fit: the first free servers of one type, in inventory order, whose NPUs add up
 * to the job's. Returns the number of servers taken (shares filled), 0 when it does
 * not fit now.
 */
static size_t first_fit(struct st_engine *e, size_t idx)
{
	unsigned need = e->t->jobs[idx].npus;

	for (size_t k = 0; k < e->c->type_count; k++) {
		const struct conf_server_type *type = e->c->types[k];
		unsigned got = 0;
		size_t n = 0;

		/* only shapes a rank table of that type allows (whole servers beyond one) */
		if (k < 32 && !(e->type_ok[idx] & (1u << k)))
			continue;
		for (size_t s = 0; s < e->c->server_count && got < need; s++) {
			unsigned take;

			if (e->c->servers[s].conf->type != type || !server_free(e, s))
				continue;
			take = need - got < type->npu_count ? need - got : type->npu_count;
			e->shares[n].server = (unsigned)s;
			e->shares[n].npus = take;
			e->shares[n].device_ids = NULL; /* devices 0.. (server_used) */
			n++;
			got += take;
		}
		if (got >= need)
			return n;
	}
	return 0;
}

static int start(struct st_engine *e, size_t idx, size_t n)
{
	struct sim_jobrec *rec = &e->r->jobs[idx];
	unsigned per[4096] = { 0 }, least = 1;
	size_t nsw = e->c->switch_count < 4096 ? e->c->switch_count : 4096;
	uint64_t done;

	if (n > 1) {
		/* what the free servers of its type allowed (they include its own) */
		const struct conf_server_type *type = e->c->servers[e->shares[0].server].conf->type;

		for (size_t s = 0; s < e->c->server_count; s++)
			if (e->c->servers[s].conf->type == type && server_free(e, s) &&
			    e->c->servers[s].switch_index < nsw)
				per[e->c->servers[s].switch_index]++;
		least = sim_least_switches(per, nsw, (unsigned)n);
	}
	for (size_t k = 0; k < n; k++) {
		e->server_job[e->shares[k].server] = (ssize_t)idx;
		e->server_used[e->shares[k].server] = e->shares[k].npus;
		e->alloc += e->c->servers[e->shares[k].server].conf->npu_count;
	}
	/* (0 servers: the static workflow has no recovery ladder) */
	/* the placement first: its modelled speed sets when the run ends */
	sim_acct_placement(e->r, e->t, e->o, e->c, idx, e->shares, n, least);
	done = sim_acct_start(e->r, e->t, e->o, idx, rec->gen + 1, e->t->jobs[idx].npus, 0, e->now,
			      0);
	rec->outcome = SIM_RUNNING;
	e->progress_sec = e->now;
	e->waiting--;
	e->running++;
	e->used += rec->npus;
	return sim_heap_push(&e->heap, done, SIM_EV_COMPLETE, idx, rec->gen);
}

/* Free the servers of job @idx. */
static void release(struct st_engine *e, size_t idx)
{
	for (size_t s = 0; s < e->c->server_count; s++)
		if (e->server_job[s] == (ssize_t)idx) {
			e->server_job[s] = -1;
			e->alloc -= e->c->servers[s].conf->npu_count;
		}
}

/* Start jobs from the front of the line while they fit (FIFO, no backfill). */
static int schedule(struct st_engine *e)
{
	while (e->count) {
		size_t idx = e->line[e->head], n = first_fit(e, idx);
		int r;

		if (!n)
			return 0;
		e->head = (e->head + 1) % e->cap;
		e->count--;
		r = start(e, idx, n);
		if (r < 0)
			return r;
	}
	return 0;
}

static int fault(struct st_engine *e)
{
	unsigned s = e->faults.server, d = e->faults.npu;
	uint64_t bit = 1ull << (d % 64);

	e->r->faults++;
	if (e->server_down[s] & bit) {
		e->r->faults_absorbed++;
		return 0;
	}
	/* the job dies when the NPU is one of its own; the server takes no new job anyway */
	if (e->server_job[s] >= 0 && d < e->server_used[s]) {
		size_t idx = (size_t)e->server_job[s];

		e->r->faults_hit++;
		sim_acct_interrupt(e->r, e->o, idx, e->now, SIM_CAUSE_FAULT, false);
		release(e, idx);
		e->running--;
		e->used -= e->r->jobs[idx].npus;
		if (e->r->jobs[idx].fault_restarts > e->o->max_restarts) {
			/* as sched does at max_restarts: someone gives up on it */
			sim_acct_finish(e->r, e->t, idx, e->now, SIM_FAILED);
		} else {
			e->waiting++;
			line_push_front(e, idx);
		}
	}
	e->server_down[s] |= bit;
	e->down_npus++;
	return sim_heap_push(&e->heap, e->now + e->o->repair_sec, SIM_EV_REPAIR, s, d);
}

static int replay(struct st_engine *e)
{
	const struct sim_trace *t = e->t;
	size_t ai = 0;
	int r;

	for (;;) {
		uint64_t next = sim_next_time(t, ai, e->running, e->waiting, &e->heap, &e->faults,
					      e->c, e->r, e->o);

		if (next == UINT64_MAX)
			return 0;
		if (ai == t->n && !e->running && e->heap.n == 0)
			return 0; /* what waits cannot start: the rest never runs */
		if (ai == t->n && !e->running && next - e->progress_sec >= SIM_STALL_SEC) {
			e->r->stalled = true; /* faults keep what waits from ever fitting */
			return 0;
		}
		{
			struct sim_level l = { e->alloc, e->used, e->r->npus_total - e->down_npus,
					       e->waiting, e->running };

			sim_acct_advance(e->r, t, e->o, &e->prev, next, &l);
		}
		e->now = next;
		while (e->heap.n && e->heap.h[0].t_sec == next) {
			struct sim_heap_item it = sim_heap_pop(&e->heap);
			struct sim_jobrec *rec = &e->r->jobs[it.job < t->n ? it.job : 0];

			if (it.kind == SIM_EV_COMPLETE && rec->running && rec->gen == it.gen) {
				release(e, it.job);
				e->running--;
				e->used -= rec->npus;
				sim_acct_finish(e->r, t, it.job, e->now, SIM_DONE);
				e->progress_sec = e->now;
			} else if (it.kind == SIM_EV_REPAIR) {
				e->server_down[it.job] &= ~(1ull << (it.gen % 64));
				e->down_npus--;
			}
		}
		while (e->faults.next_sec == next) {
			r = fault(e);
			if (r < 0)
				return r;
			sim_faults_advance(&e->faults, e->c);
		}
		while (ai < t->n && t->jobs[ai].submit_sec == next) {
			char reason[SCHED_REASON_MAX];

			e->type_ok[ai] = 0;
			for (size_t k = 0; k < e->c->type_count && k < 32; k++)
				if (sched_check_feasible(e->c, t->jobs[ai].npus, e->c->types[k],
							 reason) == 0)
					e->type_ok[ai] |= 1u << k;
			e->progress_sec = next;
			line_push_back(e, ai++);
			e->waiting++;
		}
		r = schedule(e);
		if (r < 0)
			return r;
	}
}

int sim_run_static(const struct sim_trace *t, const struct sched_cluster *c,
		   const struct sim_options *o, struct sim_result *res, char err[SIM_ERR_MAX])
{
	struct st_engine e = { 0 };
	int r;

	e.c = c;
	e.t = t;
	e.o = o;
	e.r = res;
	r = sim_result_init(res, "static", t, c->npus_total);
	e.cap = t->n ? t->n : 1;
	e.server_job = malloc(c->server_count * sizeof(*e.server_job));
	e.server_used = calloc(c->server_count, sizeof(*e.server_used));
	e.type_ok = calloc(t->n ? t->n : 1, sizeof(*e.type_ok));
	e.server_down = calloc(c->server_count, sizeof(*e.server_down));
	e.line = malloc(e.cap * sizeof(*e.line));
	e.shares = malloc((c->server_count ? c->server_count : 1) * sizeof(*e.shares));
	if (r < 0 || !e.server_job || !e.server_used || !e.type_ok || !e.server_down || !e.line ||
	    !e.shares) {
		snprintf(err, SIM_ERR_MAX, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s < c->server_count; s++)
		e.server_job[s] = -1;
	for (size_t s = 0; s < c->server_count; s++)
		if (c->servers[s].conf->npu_count > 64) {
			snprintf(err, SIM_ERR_MAX, "server %s has more than 64 NPUs",
				 c->servers[s].conf->name);
			r = -EINVAL;
			goto out;
		}
	sim_faults_init(&e.faults, c, o);
	r = replay(&e);
	if (r < 0)
		snprintf(err, SIM_ERR_MAX, "out of memory");
out:
	free(e.heap.h);
	free(e.server_job);
	free(e.server_used);
	free(e.type_ok);
	free(e.server_down);
	free(e.line);
	free(e.shares);
	return r;
}
