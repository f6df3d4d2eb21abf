/* SPDX-License-Identifier: MIT */
/* What both engines share: faults, the event heap, the job model and the figures. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void sim_options_default(struct sim_options *o)
{
	memset(o, 0, sizeof(*o));
	o->mtbf_sec = 0;
	o->repair_sec = 8 * 3600;
	o->checkpoint_sec = 30 * 60;
	o->restart_cost_sec = 0;
	o->dump = false;
	o->dump_save_sec = 10;
	o->process = false;
	o->rebuild_sec = 30;
	o->retry = false;
	o->transient_share = 0;
	o->retry_sec = 10;
	o->step_sec = 5;
	o->sample_sec = 3600;
	o->seed = 1;
	o->tp = 8;
	o->max_restarts = 100;
	o->time_limit = SIM_LIMIT_HOUR;
	o->spine_oversub = 2.0;
	/* an assumption near what Megatron-LM reaches on large dense models (Narayanan et
	 * al., SC'21: 44-52% of peak on A100s); only compute time depends on it */
	o->mfu = 0.4;
}

/* ---- faults ---- */

static uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 2685821657736338717ull;
}

/* Uniform in (0, 1]. */
static double rng_unit(uint64_t *state)
{
	return ((double)(rng_next(state) >> 11) + 1.0) / 9007199254740992.0;
}

static void faults_draw(struct sim_faults *f, const struct sched_cluster *c, uint64_t from_sec)
{
	uint64_t k;
	double gap;

	if (f->mean_gap_sec <= 0) {
		f->next_sec = UINT64_MAX;
		return;
	}
	gap = -log(rng_unit(&f->rng)) * f->mean_gap_sec;
	if (!(gap < (double)SIM_TIME_MAX) || from_sec > UINT64_MAX / 2) {
		f->next_sec = UINT64_MAX; /* beyond any replay */
		return;
	}
	f->next_sec = from_sec + (uint64_t)(gap < 1 ? 1 : gap);
	k = rng_next(&f->rng) % c->npus_total;
	for (size_t s = 0; s < c->server_count; s++) {
		unsigned n = c->servers[s].conf->npu_count;

		if (k < n) {
			f->server = (unsigned)s;
			f->npu = (unsigned)k;
			return;
		}
		k -= n;
	}
	f->next_sec = UINT64_MAX; /* not reached: npus_total is the sum */
}

void sim_faults_init(struct sim_faults *f, const struct sched_cluster *c,
		     const struct sim_options *o)
{
	memset(f, 0, sizeof(*f));
	{
		/* splitmix64 of the seed: every seed its own non-zero xorshift state */
		uint64_t z = o->seed + 0x9e3779b97f4a7c15ull;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		f->rng = z ? z : 1;
	}
	f->mean_gap_sec = o->mtbf_sec && c->npus_total ?
				  (double)o->mtbf_sec / (double)c->npus_total : 0;
	faults_draw(f, c, 0);
}

void sim_faults_advance(struct sim_faults *f, const struct sched_cluster *c)
{
	if (f->next_sec != UINT64_MAX)
		faults_draw(f, c, f->next_sec);
}

void sim_faults_skip_idle(struct sim_faults *f, const struct sched_cluster *c,
			  struct sim_result *r, uint64_t repair_sec, uint64_t until_sec)
{
	while (f->next_sec != UINT64_MAX && f->next_sec + repair_sec < until_sec) {
		r->faults++;
		r->faults_absorbed++;
		sim_faults_advance(f, c);
	}
}

/* ---- the event heap ---- */

static bool item_before(const struct sim_heap_item *a, const struct sim_heap_item *b)
{
	return a->t_sec != b->t_sec ? a->t_sec < b->t_sec : a->order < b->order;
}

int sim_heap_push(struct sim_heap *q, uint64_t t_sec, enum sim_ev kind, size_t job,
		  unsigned gen)
{
	struct sim_heap_item it = { t_sec, kind, job, gen, q->pushed++ };
	size_t i;

	if (q->n == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 1024;
		struct sim_heap_item *nh = realloc(q->h, nc * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		q->h = nh;
		q->cap = nc;
	}
	i = q->n++;
	while (i > 0 && item_before(&it, &q->h[(i - 1) / 2])) {
		q->h[i] = q->h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->h[i] = it;
	return 0;
}

struct sim_heap_item sim_heap_pop(struct sim_heap *q)
{
	struct sim_heap_item top = q->h[0], last = q->h[--q->n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m = l;

		if (l >= q->n)
			break;
		if (l + 1 < q->n && item_before(&q->h[l + 1], &q->h[l]))
			m = l + 1;
		if (!item_before(&q->h[m], &last))
			break;
		q->h[i] = q->h[m];
		i = m;
	}
	if (q->n)
		q->h[i] = last;
	return top;
}

uint64_t sim_next_time(const struct sim_trace *t, size_t ai, unsigned running, unsigned waiting,
		       const struct sim_heap *heap, struct sim_faults *f,
		       const struct sched_cluster *c, struct sim_result *r,
		       const struct sim_options *o)
{
	uint64_t next = UINT64_MAX;

	if (ai >= t->n && !running && !waiting)
		return UINT64_MAX;
	if (ai < t->n) {
		next = t->jobs[ai].submit_sec;
		if (!running && !waiting)
			sim_faults_skip_idle(f, c, r, o->repair_sec, next);
	}
	if (heap->n && heap->h[0].t_sec < next)
		next = heap->h[0].t_sec;
	if (f->next_sec < next)
		next = f->next_sec;
	return next;
}

/* ---- results ---- */

int sim_result_init(struct sim_result *r, const char *engine, const struct sim_trace *t,
		    unsigned npus_total)
{
	memset(r, 0, sizeof(*r));
	r->engine = engine;
	r->npus_total = npus_total;
	r->njobs = t->n;
	r->jobs = calloc(t->n ? t->n : 1, sizeof(*r->jobs));
	if (!r->jobs)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		r->jobs[i].first_start_sec = UINT64_MAX;
		r->jobs[i].end_sec = UINT64_MAX;
		r->jobs[i].npus = t->jobs[i].npus;
		r->jobs[i].stop_tick_gen = UINT64_MAX;
	}
	return 0;
}

void sim_result_free(struct sim_result *r)
{
	if (!r)
		return;
	free(r->jobs);
	free(r->buckets);
	r->jobs = NULL;
	r->buckets = NULL;
}

/* Make room for bucket @b; false without memory (the series then stops growing). */
static bool bucket_reserve(struct sim_result *r, size_t b)
{
	if (b < r->nbuckets)
		return true;
	if (b >= SIM_SERIES_MAX) {
		r->series_cut = true;
		return false;
	}
	{
		size_t nn = b + 1 > r->nbuckets * 2 ? b + 1 : r->nbuckets * 2;

		if (nn > SIM_SERIES_MAX)
			nn = SIM_SERIES_MAX;
		struct sim_bucket *nb = realloc(r->buckets, nn * sizeof(*nb));

		if (!nb)
			return false;
		memset(nb + r->nbuckets, 0, (nn - r->nbuckets) * sizeof(*nb));
		r->buckets = nb;
		r->nbuckets = nn;
	}
	return true;
}

void sim_acct_advance(struct sim_result *r, const struct sim_trace *t,
		      const struct sim_options *o, uint64_t *prev_sec, uint64_t now_sec,
		      const struct sim_level *l)
{
	uint64_t from = *prev_sec, last_arrival = t->n ? t->jobs[t->n - 1].submit_sec : 0;
	double dt;

	if (now_sec <= from)
		return;
	dt = (double)(now_sec - from);
	r->alloc_all += l->alloc * dt;
	r->used_all += l->used * dt;
	r->time_all += dt;
	if (l->pending) {
		r->alloc_wait += l->alloc * dt;
		r->used_wait += l->used * dt;
		r->time_wait += dt;
	}
	if (from < last_arrival) {
		double w = (double)((now_sec < last_arrival ? now_sec : last_arrival) - from);

		r->alloc_win += l->alloc * w;
		r->used_win += l->used * w;
		r->time_win += w;
	}
	if (l->pending > r->max_pending)
		r->max_pending = l->pending;
	/* the buckets this interval covers */
	for (uint64_t s = from; s < now_sec;) {
		size_t b = (size_t)(s / o->sample_sec);
		uint64_t end = ((uint64_t)b + 1) * o->sample_sec;
		double w;

		if (end > now_sec)
			end = now_sec;
		w = (double)(end - s);
		if (!bucket_reserve(r, b))
			break;
		r->buckets[b].alloc_npu_sec += l->alloc * w;
		r->buckets[b].used_npu_sec += l->used * w;
		r->buckets[b].healthy_npu_sec += l->healthy * w;
		r->buckets[b].pending_sec += l->pending * w;
		r->buckets[b].running_sec += l->running * w;
		r->buckets[b].span_sec += w;
		if (b + 1 > r->nseries)
			r->nseries = b + 1;
		s = end;
	}
	*prev_sec = now_sec;
}

uint64_t sim_acct_start(struct sim_result *r, const struct sim_trace *t,
			const struct sim_options *o, size_t idx, unsigned gen, unsigned npus,
			unsigned servers, uint64_t now_sec, uint64_t base_sec)
{
	struct sim_jobrec *j = &r->jobs[idx];
	uint64_t dur = t->jobs[idx].dur_sec, cost = 0;

	if (j->first_start_sec == UINT64_MAX) {
		j->first_start_sec = now_sec;
	} else if (o->process && j->last_cause == SIM_LAST_FAULT && now_sec == j->fault_sec &&
		   servers > 1 && j->last_servers > 1) {
		/* replaced at once, some servers kept: process-level (sched_ladder.c) */
		cost = o->rebuild_sec;
		r->process_recoveries++;
	} else {
		cost = o->restart_cost_sec + (j->dumped ? o->dump_save_sec : 0);
	}
	j->dumped = false;
	j->last_servers = servers;
	if (base_sec > dur)
		base_sec = 0; /* not a checkpoint of this job */
	if (base_sec < j->ckpt_sec) {
		/* it resumes from older work than its newest checkpoint: redone again */
		double lost = (double)(j->ckpt_sec - base_sec) * npus;

		if (j->last_cause == SIM_LAST_PREEMPT)
			j->lost_preempt_npu_sec += lost;
		else
			j->lost_fault_npu_sec += lost;
		r->interruptions_over_bound++;
	}
	j->restarts += j->last_cause == SIM_LAST_FAULT;
	j->last_cause = SIM_LAST_NONE;
	j->ckpt_sec = base_sec;
	j->base_sec = base_sec;
	j->running = true;
	j->gen = gen;
	j->npus = npus;
	j->run_start_sec = now_sec;
	j->cost_sec = cost;
	r->runs_stretched |= o->stretch_runs;
	/* the rest of the run at this placement's speed (stretch 1: the trace's) */
	j->done_at_sec = now_sec + cost + (uint64_t)ceil((double)(dur - base_sec) *
							  (j->stretch > 1 ? j->stretch : 1));
	r->placements++;
	return j->done_at_sec;
}

uint64_t sim_acct_retry(struct sim_result *r, const struct sim_options *o, size_t idx,
			uint64_t now_sec)
{
	struct sim_jobrec *j = &r->jobs[idx];

	(void)now_sec;
	/* the work redone is the step; the pause costs time as a restart does */
	j->lost_fault_npu_sec += (double)o->step_sec * j->npus;
	j->done_at_sec += o->step_sec + o->retry_sec;
	r->retries++;
	return j->done_at_sec;
}

uint64_t sim_acct_interrupt(struct sim_result *r, const struct sim_options *o, size_t idx,
			    uint64_t now_sec, enum sim_cause cause, bool checkpointing)
{
	struct sim_jobrec *j = &r->jobs[idx];
	uint64_t elapsed = now_sec - j->run_start_sec;
	uint64_t cost = j->cost_sec, work, saved = 0, lost_sec;
	double bound;

	work = elapsed > cost ? elapsed - cost : 0;
	/* progress is in the trace's run time; a stretched placement makes less a second */
	if (j->stretch > 1)
		work = (uint64_t)((double)work / j->stretch);
	if (checkpointing && o->checkpoint_sec)
		saved = work / o->checkpoint_sec * o->checkpoint_sec;
	if (checkpointing && (o->dump || o->process) && cause == SIM_CAUSE_FAULT) {
		/* the survivors save the last whole step (sched_ladder.c's dump), or
		 * pause after it (process-level) */
		saved = o->step_sec ? work / o->step_sec * o->step_sec : work;
		j->dumped = true;
	}
	/* the wall time whose work is lost */
	lost_sec = elapsed - (j->stretch > 1 ? (uint64_t)((double)saved * j->stretch) : saved);
	if (lost_sec > elapsed)
		lost_sec = 0;
	j->ckpt_sec = checkpointing ? j->base_sec + saved : 0;
	j->running = false;
	j->run_total_sec += elapsed;
	if (cause == SIM_CAUSE_FAULT)
		j->fault_sec = now_sec;
	if (cause == SIM_CAUSE_FAULT) {
		j->fault_restarts++;
		j->last_cause = SIM_LAST_FAULT;
		j->lost_fault_npu_sec += (double)lost_sec * j->npus;
	} else if (cause == SIM_CAUSE_PREEMPT) {
		j->preemptions++;
		j->last_cause = SIM_LAST_PREEMPT;
		j->lost_preempt_npu_sec += (double)lost_sec * j->npus;
	}
	if (cause != SIM_CAUSE_OTHER && o->checkpoint_sec) {
		/* a checkpoint interval of run time takes stretch times as long on the wall */
		bound = (double)o->checkpoint_sec * (j->stretch > 1 ? j->stretch : 1) + (double)cost;
		if ((double)lost_sec > bound)
			r->interruptions_over_bound++;
		if ((double)lost_sec / bound > r->worst_loss_ratio)
			r->worst_loss_ratio = (double)lost_sec / bound;
	}
	return j->ckpt_sec;
}

void sim_acct_finish(struct sim_result *r, const struct sim_trace *t, size_t idx,
		     uint64_t now_sec, enum sim_outcome outcome)
{
	struct sim_jobrec *j = &r->jobs[idx];

	if (j->running)
		j->run_total_sec += now_sec - j->run_start_sec;
	j->running = false;
	j->outcome = outcome;
	j->end_sec = now_sec;
	if (outcome == SIM_DONE)
		r->useful_npu_sec += (double)t->jobs[idx].dur_sec * j->npus;
	if (outcome == SIM_FAILED || outcome == SIM_TIMEOUT) {
		/* all of its work is thrown away; what faults and preemption cost is counted */
		double all = (double)j->run_total_sec * j->npus;
		double counted = j->lost_fault_npu_sec + j->lost_preempt_npu_sec;

		j->lost_abandoned_npu_sec = all > counted ? all - counted : 0;
	}
}

unsigned sim_least_switches(const unsigned *per_switch, size_t nswitch, unsigned servers)
{
	bool used[4096] = { false };
	unsigned n = 0, got = 0;

	if (nswitch > 4096)
		nswitch = 4096;
	while (got < servers) {
		unsigned best = 0;
		size_t bi = 0;

		for (size_t k = 0; k < nswitch; k++)
			if (!used[k] && per_switch[k] > best) {
				best = per_switch[k];
				bi = k;
			}
		if (!best)
			return 0;
		got += best;
		used[bi] = true;
		n++;
	}
	return n;
}

/* The fewest leaf switches whose servers add up to @servers in an empty cluster. */
static unsigned min_switches(const struct sched_cluster *c, unsigned servers)
{
	unsigned sizes[4096] = { 0 }, n;
	size_t sw = c->switch_count < 4096 ? c->switch_count : 4096;

	for (size_t s = 0; s < c->server_count; s++)
		if (c->servers[s].switch_index < sw)
			sizes[c->servers[s].switch_index]++;
	n = sim_least_switches(sizes, sw, servers);
	return n ? n : 1;
}

/*
 * The domain server @s counts in for an empty-cluster placement of @type: its super
 * pod on A3 (numbered by the pod's first server in the inventory), else its leaf switch.
 */
static size_t domain_of(const struct sched_cluster *c, const struct conf_server_type *type,
			size_t s)
{
	const char *pod = c->servers[s].conf->super_pod;

	if (strcmp(type->rank_table_version, "1.2") != 0 || !pod)
		return c->servers[s].switch_index;
	for (size_t k = 0; k < s; k++)
		if (c->servers[k].conf->super_pod && strcmp(c->servers[k].conf->super_pod, pod) == 0)
			return k;
	return s;
}

/*
 * The step of the same job on an empty cluster, the reference its placements are
 * measured against: one server when it fits one (devices 0..npus-1, inside one HCCS
 * ring or pair when that holds it), else whole servers of @type taken switch by switch
 * from the one with the most (ranks in order). @scratch has room for @npus locations.
 * 0 when it cannot be modelled.
 */
static double ideal_step(const struct sched_cluster *c, const struct sched_comm_params *p,
			 const struct sched_parallel *par, const struct sched_train_model *m,
			 const struct conf_server_type *type, unsigned npus,
			 struct sched_npu_loc *scratch)
{
	struct sched_step_cost cost;
	unsigned rank = 0, per = type->npu_count;
	/* A3 (super pods) by pod, as placement fills one pod first; else by leaf switch */
	size_t ndomains = strcmp(type->rank_table_version, "1.2") == 0 ? c->server_count :
									    c->switch_count;
	bool *taken = calloc(c->server_count ? c->server_count : 1, sizeof(*taken));
	size_t *count = calloc(ndomains ? ndomains : 1, sizeof(*count));
	double step = 0;

	if (!taken || !count)
		goto out;
	for (size_t s = 0; s < c->server_count; s++)
		if (c->servers[s].conf->type == type)
			count[domain_of(c, type, s)]++;
	while (rank < npus) {
		size_t best = SIZE_MAX;

		/* the domain with the most servers of the type not yet taken */
		for (size_t d = 0; d < ndomains; d++)
			if (count[d] && (best == SIZE_MAX || count[d] > count[best]))
				best = d;
		if (best == SIZE_MAX)
			goto out;
		for (size_t s = 0; s < c->server_count && rank < npus; s++) {
			if (c->servers[s].conf->type != type || domain_of(c, type, s) != best ||
			    taken[s])
				continue;
			taken[s] = true;
			for (unsigned d = 0; d < per && rank < npus; d++, rank++)
				scratch[rank] = (struct sched_npu_loc){ (unsigned)s, d };
		}
		count[best] = 0;
	}
	if (sched_comm_step(c, p, par, m, scratch, npus, &cost) == 0)
		step = cost.step_usec;
out:
	free(taken);
	free(count);
	return step;
}

/*
 * The modelled step of job @idx's placement, @count shares of @npus in all: its figures
 * when it is the job's @first, and with stretch_runs how much slower than on an empty
 * cluster it runs (j->stretch, at least 1).
 */
static void acct_step(struct sim_result *r, const struct sim_trace *t,
		      const struct sim_options *o, const struct sched_cluster *c, size_t idx,
		      const struct sim_share *shares, size_t count, unsigned npus, bool first)
{
	struct sim_jobrec *j = &r->jobs[idx];
	struct sched_comm_params p;
	struct sched_train_model m;
	struct sched_parallel par;
	struct sched_step_cost cost;
	struct sched_npu_loc *loc;
	unsigned rank = 0;
	double weight, ideal;

	j->stretch = 1;
	if (!first && !o->stretch_runs)
		return;
	if (sim_model_layout(&t->jobs[idx], npus, o, &par) < 0)
		return; /* its sizes do not divide what it got: no figure */
	loc = malloc(npus * sizeof(*loc));
	if (!loc)
		return; /* a figure fewer, said by its empty column */
	for (size_t k = 0; k < count; k++)
		for (unsigned d = 0; d < shares[k].npus; d++, rank++) {
			loc[rank].server = shares[k].server;
			loc[rank].device = shares[k].device_ids ? shares[k].device_ids[d] : d;
		}
	sim_model_train(&t->jobs[idx], &par, o, &m);
	sched_comm_params_for(c->servers[shares[0].server].conf->type->chip, o->spine_oversub, &p);
	if (sched_comm_step(c, &p, &par, &m, loc, npus, &cost) < 0 || !(cost.compute_usec > 0)) {
		free(loc);
		return;
	}
	ideal = ideal_step(c, &p, &par, &m, c->servers[shares[0].server].conf->type, npus, loc);
	if (o->stretch_runs && ideal > 0 && cost.step_usec > ideal)
		j->stretch = cost.step_usec / ideal;
	if (first) {
		j->step_usec = cost.step_usec;
		j->compute_usec = cost.compute_usec;
		memcpy(j->comm_usec, cost.comm_usec, sizeof(j->comm_usec));
		j->ideal_step_usec = ideal;
		j->roce_leaf_bytes = cost.bytes[SCHED_LINK_ROCE_LEAF];
		j->roce_spine_bytes = cost.bytes[SCHED_LINK_ROCE_SPINE];
		r->roce_leaf_bytes += j->roce_leaf_bytes;
		r->roce_spine_bytes += j->roce_spine_bytes;
		weight = (double)npus * (double)t->jobs[idx].dur_sec;
		r->step_sum += weight * cost.step_usec / cost.compute_usec;
		r->step_weight += weight;
	}
	free(loc);
}

void sim_acct_placement(struct sim_result *r, const struct sim_trace *t,
			const struct sim_options *o, const struct sched_cluster *c, size_t idx,
			const struct sim_share *shares, size_t count, unsigned least_now)
{
	struct sim_jobrec *j = &r->jobs[idx];
	unsigned npus = 0, tp, server_npus, spanned = 0, least;
	bool seen[4096] = { false }, first = j->servers == 0;

	for (size_t k = 0; k < count; k++) {
		unsigned sw = c->servers[shares[k].server].switch_index;

		npus += shares[k].npus;
		if (sw < 4096 && !seen[sw]) {
			seen[sw] = true;
			spanned++;
		}
	}
	if (!npus)
		return;
	/* the best layout on the job's own server type: whole servers, ranks in order */
	server_npus = c->servers[shares[0].server].conf->npu_count;
	tp = t->jobs[idx].tp ? t->jobs[idx].tp : o->tp;
	tp = tp < npus ? tp : npus;
	if (!tp)
		tp = 1;
	/* groups of tp consecutive ranks; a share holds ranks [first, first + npus) */
	for (unsigned g = 0; g * tp < npus; g++) {
		unsigned lo = g * tp, hi = (g + 1) * tp < npus ? (g + 1) * tp : npus, at = 0;
		bool crossed = true;

		for (size_t k = 0; k < count; k++) {
			if (lo >= at && hi <= at + shares[k].npus) {
				crossed = false;
				break;
			}
			at += shares[k].npus;
		}
		r->tp_groups++;
		if (crossed) {
			r->tp_cross++;
			/* avoidable: the job fits one server, or that layout keeps it whole */
			r->tp_cross_avoidable += npus <= server_npus ||
						 lo / server_npus == (hi - 1) / server_npus;
		}
	}
	if (j->servers == 0) {
		j->servers = (unsigned)count;
		j->switches = spanned;
	}
	if (count > 1) {
		least = min_switches(c, (unsigned)count);
		r->multi_placements++;
		r->multi_extra_switch += spanned > least;
		r->multi_extra_switch_avoidable += least_now && spanned > least_now;
	}
	acct_step(r, t, o, c, idx, shares, count, npus, first);
}

/* ---- fitting a trace to a cluster ---- */

int sim_trace_fit(struct sim_trace *t, const struct sched_cluster *c, size_t *ret_raised,
		  size_t *ret_removed)
{
	unsigned *legal = calloc((size_t)c->npus_total + 1, sizeof(*legal));
	size_t raised = 0, removed = 0, w = 0;
	char reason[SCHED_REASON_MAX];

	if (!legal)
		return -ENOMEM;
	/* legal[n]: the smallest legal size >= n, 0 = none (computed from the top) */
	for (unsigned n = c->npus_total, next = 0; n >= 1; n--) {
		if (sched_check_feasible(c, n, NULL, reason) == 0)
			next = n;
		legal[n] = next;
	}
	for (size_t i = 0; i < t->n; i++) {
		struct sim_tjob *j = &t->jobs[i];
		unsigned fit = j->npus <= c->npus_total ? legal[j->npus] : 0;
		unsigned unit = sim_tjob_unit(j);

		/* a legal size its parallel layout divides */
		while (fit && fit % unit)
			fit = fit < c->npus_total ? legal[fit + 1] : 0;
		if (!fit) {
			removed++;
			continue;
		}
		raised += fit != j->npus;
		j->npus = fit;
		t->jobs[w++] = *j;
	}
	t->n = w;
	if (w && t->jobs[0].submit_sec) {
		/* times count from the first job kept */
		uint64_t base = t->jobs[0].submit_sec;

		t->origin_sec += base;
		for (size_t i = 0; i < w; i++)
			t->jobs[i].submit_sec -= base;
	}
	free(legal);
	*ret_raised = raised;
	*ret_removed = removed;
	return 0;
}
