/* SPDX-License-Identifier: MIT */
/*
 * Preemption: which running jobs a pending job may take NPUs from (lower effective
 * priority, or borrowing beyond their queue's quota), the fewest whole jobs whose NPUs
 * let it start (victim choice), stopping them, and the preemptions in flight: the jobs
 * stopping for a preemptor, the NPUs promised to its queue, and its turn before the
 * other jobs of its priority.
 *
 * Victim choice asks "what if" questions (would this job fit if those jobs ended?) on the
 * real cluster by taking NPUs away from jobs for the length of one question (sim_release)
 * and giving them back (sim_restore) before anything else runs.
 *
 * Calls: sched_backfill.c (sched_reserve_preempted), sched_queue.c (sched_set_pending),
 * sched_place.c, sched_job.c, sched_disrupt.c (services' preemptible and budget); never
 * sched_pass.c (sched_pass.h says the direction).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_pass.h"

/* ---- victim choice ---- */

struct victims {
	struct sched_job **v;
	size_t n, cap;
};

static bool victims_has(const struct victims *vs, const struct sched_job *j)
{
	for (size_t i = 0; i < vs->n; i++)
		if (vs->v[i] == j)
			return true;
	return false;
}

static int victims_add(struct victims *vs, struct sched_job *j)
{
	if (vs->n == vs->cap) {
		size_t cap = vs->cap ? vs->cap * 2 : 16;
		struct sched_job **n = realloc(vs->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		vs->v = n;
		vs->cap = cap;
	}
	vs->v[vs->n++] = j;
	return 0;
}

/* May @pre take the NPUs of @v? Lower effective priority, or @v borrows beyond its
 * queue's quota and @pre's queue stays within its own. */
static bool may_preempt(const struct pass *p, const struct sched_job *pre,
			const struct sched_job *v, bool pre_within_quota)
{
	const struct sched_cluster *c = p->c;

	if (v->state != SCHED_JOB_RUNNING || !v->spec || !(v->type_mask & pre->type_mask))
		return false;
	/* a service's instance: its spec and disruption budget say (sched_disrupt.c) */
	if (!sched_service_may_preempt(p->c, v))
		return false;
	/* Slurm's PreemptExemptTime: a run that just began is not stopped, whatever for */
	if (sched_preempt_exempt(c, v, p->now))
		return false;
	/* a job preempted max_preemptions_per_job times has lost enough work to priority */
	if (eff_priority(c, v) < eff_priority(c, pre) &&
	    (!c->conf->max_preemptions_per_job ||
	     v->preemptions < c->conf->max_preemptions_per_job))
		return true;
	return pre_within_quota && v->borrowing && v->queue_index != pre->queue_index &&
	       quota_applies(c, job_queue(c, v)) &&
	       c->queue_used[v->queue_index] > job_queue(c, v)->quota_npus;
}

/* Order of preference among victims: lowest priority, then the newest run (least work
 * lost), then the smallest. */
static int victim_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_cluster *c = arg;
	const struct sched_job *x = *(struct sched_job *const *)a;
	const struct sched_job *y = *(struct sched_job *const *)b;
	unsigned px = eff_priority(c, x), py = eff_priority(c, y);

	if (px != py)
		return px < py ? -1 : 1;
	if (x->start_usec != y->start_usec)
		return x->start_usec > y->start_usec ? -1 : 1;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* Score of a victim set: fewer jobs, then lower top priority, fewer NPUs, newer runs. */
struct set_score {
	size_t n;
	unsigned top_prio, npus;
	uint64_t oldest_start;
};

static struct set_score score_of(const struct sched_cluster *c, struct sched_job *const *v,
				 size_t n)
{
	struct set_score s = { n, 0, 0, UINT64_MAX };

	for (size_t i = 0; i < n; i++) {
		if (eff_priority(c, v[i]) > s.top_prio)
			s.top_prio = eff_priority(c, v[i]);
		s.npus += sched_job_total_npus(v[i]);
		if (v[i]->start_usec < s.oldest_start)
			s.oldest_start = v[i]->start_usec;
	}
	return s;
}

/* Is victim set @a (@na jobs) a better choice than @b? */
static bool set_better(const struct sched_cluster *c, struct sched_job *const *a, size_t na,
		       struct sched_job *const *b, size_t nb)
{
	struct set_score x = score_of(c, a, na), y = score_of(c, b, nb);

	if (x.n != y.n)
		return x.n < y.n;
	if (x.top_prio != y.top_prio)
		return x.top_prio < y.top_prio;
	if (x.npus != y.npus)
		return x.npus < y.npus;
	return x.oldest_start > y.oldest_start;
}

static bool fits_with(struct pass *p, struct sched_job *j, struct victims *vs,
		      struct sched_slice **ret, size_t *ret_count)
{
	struct sched_cluster *c = p->c;
	char why[SCHED_REASON_MAX];
	int r;

	for (size_t i = 0; i < vs->n; i++)
		sim_release(c, vs->v[i]);
	r = sched_place_now(c, j->spec->npus_min, sched_job_type(c, j), sched_job_stages(j), ret,
			    ret_count, why);
	for (size_t i = 0; i < vs->n; i++)
		sim_restore(c, vs->v[i]);
	return r == 0;
}

/* Drop victims that are not needed (the most valuable first); the rest still fit. */
static void minimize(struct pass *p, struct sched_job *j, struct victims *vs)
{
	/* preference order: the last ones are the most valuable, tried first */
	qsort_r(vs->v, vs->n, sizeof(vs->v[0]), victim_cmp, p->c);
	for (size_t i = vs->n; i-- > 0;) {
		struct sched_job *keep = vs->v[i];
		struct sched_slice *sl;
		size_t n;

		memmove(&vs->v[i], &vs->v[i + 1], (vs->n - i - 1) * sizeof(vs->v[0]));
		vs->n--;
		if (fits_with(p, j, vs, &sl, &n)) {
			free(sl);
			continue; /* not needed */
		}
		memmove(&vs->v[i + 1], &vs->v[i], (vs->n - i) * sizeof(vs->v[0]));
		vs->v[i] = keep;
		vs->n++;
	}
}

/* Jobs holding NPUs on server @s, each once (at most one per NPU). */
static size_t jobs_on(const struct sched_server *s, struct sched_job **out)
{
	size_t n = 0;

	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		struct sched_job *o = s->npus[d].job;
		size_t k;

		if (!o)
			continue;
		for (k = 0; k < n && out[k] != o; k++)
			;
		if (k == n)
			out[n++] = o;
	}
	return n;
}

/* Larger share of server @arg first, then the victim preference order. */
struct on_server_arg {
	const struct sched_cluster *c;
	const struct sched_server *s;
};

static unsigned npus_here(const struct sched_server *s, const struct sched_job *j)
{
	unsigned n = 0;

	for (unsigned d = 0; d < s->conf->npu_count; d++)
		n += s->npus[d].job == j;
	return n;
}

static int on_server_cmp(const void *a, const void *b, void *arg)
{
	const struct on_server_arg *o = arg;
	const struct sched_job *x = *(struct sched_job *const *)a;
	const struct sched_job *y = *(struct sched_job *const *)b;
	unsigned nx = npus_here(o->s, x), ny = npus_here(o->s, y);

	if (nx != ny)
		return nx > ny ? -1 : 1;
	return victim_cmp(a, b, (void *)o->c);
}

/* Could the NPUs of @vs (taken away) let @need land on server @s? */
static bool server_fits_without(struct pass *p, unsigned s, unsigned need,
				const struct conf_server_type *type, struct sched_job **vs,
				size_t n)
{
	bool ok;

	for (size_t i = 0; i < n; i++)
		sim_release(p->c, vs[i]);
	ok = sched_server_can_hold(p->c, s, need, type);
	for (size_t i = 0; i < n; i++)
		sim_restore(p->c, vs[i]);
	return ok;
}

/*
 * A set of fewer than @k of the @n candidates of server @s that lets @need land there:
 * by size, then set_better. Moves it to the front of @cand and returns its size, or 0.
 */
static size_t smaller_set(struct pass *p, unsigned s, unsigned need,
			  const struct conf_server_type *type, struct sched_job **cand, size_t n,
			  size_t k)
{
	struct sched_job *pick[CONF_SERVER_NPUS_MAX], *best[CONF_SERVER_NPUS_MAX];

	for (size_t m = 1; m < k; m++) {
		size_t nbest = 0;

		for (uint32_t mask = 1; mask < (1u << n); mask++) {
			size_t cnt = 0;

			if ((size_t)__builtin_popcount(mask) != m)
				continue;
			for (size_t i = 0; i < n; i++)
				if (mask & (1u << i))
					pick[cnt++] = cand[i];
			if (!server_fits_without(p, s, need, type, pick, cnt))
				continue;
			if (!nbest || set_better(p->c, pick, cnt, best, nbest)) {
				memcpy(best, pick, cnt * sizeof(pick[0]));
				nbest = cnt;
			}
		}
		if (nbest) {
			/* best first, then the others, so cand[0..nbest) is the set */
			struct sched_job *rest[CONF_SERVER_NPUS_MAX];
			size_t nrest = 0;

			for (size_t i = 0; i < n; i++) {
				bool in = false;

				for (size_t x = 0; x < nbest; x++)
					in |= best[x] == cand[i];
				if (!in)
					rest[nrest++] = cand[i];
			}
			memcpy(cand, best, nbest * sizeof(cand[0]));
			memcpy(cand + nbest, rest, nrest * sizeof(cand[0]));
			return nbest;
		}
	}
	return 0;
}

/*
 * Single-server requests: per server, its preemptible jobs, largest share first, until
 * the job fits; then drop the ones not needed (most valuable first). The best server's
 * set wins (set_better).
 */
static int victims_single(struct pass *p, struct sched_job *j, bool inq, struct victims *best)
{
	struct sched_cluster *c = p->c;
	const struct conf_server_type *type = sched_job_type(c, j);
	unsigned need = j->spec->npus_min;

	for (size_t s = 0; s < c->server_count; s++) {
		struct sched_server *sv = &c->servers[s];
		struct sched_job *on[CONF_SERVER_NPUS_MAX], *cand[CONF_SERVER_NPUS_MAX];
		struct on_server_arg arg = { c, sv };
		size_t non, ncand = 0, k;

		if ((type && sv->conf->type != type) || need > sv->conf->npu_count ||
		    !sched_size_is_legal(sv->conf->type, need) ||
		    !sched_server_is_schedulable(c, sv))
			continue;
		non = jobs_on(sv, on);
		for (size_t i = 0; i < non; i++)
			if (may_preempt(p, j, on[i], inq))
				cand[ncand++] = on[i];
		if (!ncand)
			continue;
		qsort_r(cand, ncand, sizeof(cand[0]), on_server_cmp, &arg);
		for (k = 1; k <= ncand; k++)
			if (server_fits_without(p, (unsigned)s, need, type, cand, k))
				break;
		if (k > ncand)
			continue;
		/*
		 * On a mesh the largest shares first is the fewest; under ring and pair rules
		 * where the jobs sit matters: look for a smaller set among few candidates.
		 */
		if (k > 1 && sv->conf->type->hccs != CONF_HCCS_MESH && ncand <= 12) {
			size_t m = smaller_set(p, (unsigned)s, need, type, cand, ncand, k);

			if (m)
				k = m; /* cand[0..m) now holds it */
		}
		/* spare what is not needed, the most valuable first */
		qsort_r(cand, k, sizeof(cand[0]), victim_cmp, c);
		for (size_t i = k; i-- > 0;) {
			struct sched_job *keep = cand[i];

			memmove(&cand[i], &cand[i + 1], (k - i - 1) * sizeof(cand[0]));
			if (server_fits_without(p, (unsigned)s, need, type, cand, k - 1)) {
				k--;
				continue;
			}
			memmove(&cand[i + 1], &cand[i], (k - 1 - i) * sizeof(cand[0]));
			cand[i] = keep;
		}
		if (!best->n || set_better(c, cand, k, best->v, best->n)) {
			best->n = 0;
			for (size_t i = 0; i < k; i++)
				if (victims_add(best, cand[i]) < 0)
					return -ENOMEM;
		}
	}
	return 0;
}

/* May server @sv of @t become whole for @j once @chosen and @extra go? */
static bool freeable(struct pass *p, struct sched_job *j, bool inq, const struct sched_server *sv,
		     const struct victims *chosen, struct sched_job *const *extra, size_t nextra)
{
	if (!sched_server_is_schedulable(p->c, sv))
		return false;
	for (unsigned d = 0; d < sv->conf->npu_count; d++) {
		const struct sched_npu *n = &sv->npus[d];
		size_t k;

		if (n->isolated || n->reserved ||
		    (n->health != SCHED_HEALTH_OK && n->health != SCHED_HEALTH_WARNING))
			return false;
		if (!n->job || victims_has(chosen, n->job))
			continue;
		for (k = 0; k < nextra && extra[k] != n->job; k++)
			;
		if (k == nextra && !may_preempt(p, j, n->job, inq))
			return false;
		if (k == nextra && extra)
			return false; /* a job outside the candidate set stays */
	}
	return true;
}

/*
 * Whole-server requests on type @t: repeatedly add the server whose new victims make the
 * most servers whole per victim (a gang over two servers beats two one-server jobs),
 * ties by set_better, until the job has a legal placement (super pods included); then
 * drop the victims not needed.
 */
static int victims_whole(struct pass *p, struct sched_job *j, bool inq,
			 const struct conf_server_type *t, struct victims *out)
{
	struct sched_cluster *c = p->c;
	struct victims chosen = { 0 };
	int r = -ENOSPC;

	for (size_t round = 0; round <= c->server_count; round++) {
		struct sched_job *best_new[CONF_SERVER_NPUS_MAX];
		size_t best_n = 0;
		unsigned best_gain = 0;
		bool found = false;
		struct sched_slice *sl;
		size_t n;

		if (chosen.n && fits_with(p, j, &chosen, &sl, &n)) {
			free(sl);
			minimize(p, j, &chosen);
			*out = chosen;
			return 0;
		}
		for (size_t s = 0; s < c->server_count; s++) {
			struct sched_server *sv = &c->servers[s];
			struct sched_job *on[CONF_SERVER_NPUS_MAX], *fresh[CONF_SERVER_NPUS_MAX];
			size_t non, nfresh = 0;
			unsigned gain = 0;

			if (sv->conf->type != t || !freeable(p, j, inq, sv, &chosen, NULL, 0))
				continue;
			non = jobs_on(sv, on);
			for (size_t i = 0; i < non; i++)
				if (!victims_has(&chosen, on[i]))
					fresh[nfresh++] = on[i];
			if (!nfresh)
				continue; /* whole already (or becomes so with what is chosen) */
			/* servers that become whole with these: this one and others they hold */
			for (size_t i = 0; i < nfresh; i++)
				for (size_t k = 0; k < fresh[i]->slice_count; k++) {
					const struct sched_server *o =
						&c->servers[fresh[i]->slices[k].server];
					bool seen = false;

					for (size_t x = 0; x < i && !seen; x++)
						for (size_t y = 0; y < fresh[x]->slice_count; y++)
							seen |= fresh[x]->slices[y].server ==
								fresh[i]->slices[k].server;
					if (!seen && o->conf->type == t &&
					    freeable(p, j, inq, o, &chosen, fresh, nfresh))
						gain++;
				}
			if (!gain)
				continue;
			/* most servers per victim: gain/nfresh, compared without division */
			if (!found || gain * best_n > best_gain * nfresh ||
			    (gain * best_n == best_gain * nfresh &&
			     set_better(c, fresh, nfresh, best_new, best_n))) {
				memcpy(best_new, fresh, nfresh * sizeof(fresh[0]));
				best_n = nfresh;
				best_gain = gain;
				found = true;
			}
		}
		if (!found)
			break;
		for (size_t i = 0; i < best_n; i++)
			if (victims_add(&chosen, best_new[i]) < 0) {
				r = -ENOMEM;
				break;
			}
		if (r == -ENOMEM)
			break;
	}
	free(chosen.v);
	return r;
}

/*
 * The fewest whole jobs whose NPUs let @j start (legal placement by the topology rules,
 * reserved NPUs of other jobs left alone). Returns 0 with @out filled, -ENOSPC, -ENOMEM.
 */
static int choose_victims(struct pass *p, struct sched_job *j, bool inq, struct victims *out)
{
	struct sched_cluster *c = p->c;
	const struct conf_server_type *type = sched_job_type(c, j);
	struct victims best = { 0 };
	int r;

	r = victims_single(p, j, inq, &best);
	for (size_t t = 0; r == 0 && t < c->type_count; t++) {
		const struct conf_server_type *ty = c->types[t];
		struct victims got = { 0 };
		unsigned need = j->spec->npus_min;

		if ((type && ty != type) || need <= ty->npu_count || need % ty->npu_count)
			continue;
		r = victims_whole(p, j, inq, ty, &got);
		if (r == -ENOSPC) {
			r = 0;
			continue;
		}
		if (r == 0 && (!best.n || set_better(c, got.v, got.n, best.v, best.n))) {
			free(best.v);
			best = got;
		} else {
			free(got.v);
		}
	}
	/* more instances of one service than its budget allows: wait (ascend_sched.h) */
	if (r == 0 && best.n && !sched_service_victims_fit_budget(c, best.v, best.n))
		best.n = 0;
	if (r < 0 || !best.n) {
		free(best.v);
		return r < 0 ? r : -ENOSPC;
	}
	*out = best;
	return 0;
}

/* ---- preemptions in flight ---- */

/*
 * Does victim @j free its NPUs for its preemptor in the pass at @now_usec: it is stopping
 * for it, or it stopped at this instant (the pass in which the preemptor is to start)?
 * Stopped: became pending at this instant, not merely given a new pending reason (that
 * made a second pass at one instant serve preemptors first and move reservations).
 */
bool sched_frees_for_preemptor(const struct sched_job *j, uint64_t now_usec)
{
	if (j->state == SCHED_JOB_STOPPING)
		return j->stop_to == SCHED_JOB_PENDING;
	return j->state == SCHED_JOB_PENDING && j->requeue_cause == SCHED_REQUEUE_PREEMPTED &&
	       j->preempted_by_serial && j->pending_since_usec == now_usec;
}

/* The jobs of p->stopping preempted for @j: p->stopping[*ret_first ...), how many. */
size_t sched_stopping_for(const struct pass *p, const struct sched_job *j, size_t *ret_first)
{
	size_t lo = 0, hi = p->nstopping, n = 0;

	/* sorted by preemptor serial: find the first of j's */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->stopping_by[mid] < j->serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + n < p->nstopping && p->stopping_by[lo + n] == j->serial)
		n++;
	*ret_first = lo;
	return n;
}

/* Are jobs preempted for @j still stopping? *ret_deadline: when the last one is done. */
bool sched_has_stopping_for(const struct pass *p, const struct sched_job *j, uint64_t *ret_deadline)
{
	size_t first, n = sched_stopping_for(p, j, &first);
	bool any = false;

	*ret_deadline = 0;
	for (size_t i = first; i < first + n; i++) {
		const struct sched_job *o = p->stopping[i];

		if (o->state != SCHED_JOB_STOPPING)
			continue;
		any = true;
		if (o->stop_deadline_usec > *ret_deadline)
			*ret_deadline = o->stop_deadline_usec;
	}
	return any;
}

/*
 * Could preemption possibly make room for @j? A cheap necessary condition, so that jobs
 * that cannot preempt spend no search: whole-server requests need enough servers whose
 * every job may be preempted; single-server ones a server with enough free or
 * preemptible NPUs.
 */
static bool preempt_possible(struct pass *p, struct sched_job *j, bool inq)
{
	struct sched_cluster *c = p->c;
	const struct conf_server_type *type = sched_job_type(c, j);
	unsigned need = j->spec->npus_min;

	for (size_t t = 0; t < c->type_count; t++) {
		const struct conf_server_type *ty = c->types[t];
		unsigned whole = 0;

		if ((type && ty != type) || !(j->type_mask & (1u << t)))
			continue;
		if (need > ty->npu_count ? need % ty->npu_count != 0 :
					   !sched_size_is_legal(ty, need))
			continue;
		for (size_t s = 0; s < c->server_count; s++) {
			const struct sched_server *sv = &c->servers[s];
			unsigned room = 0;
			bool all = true;

			if (sv->conf->type != ty || !sched_server_is_schedulable(c, sv))
				continue;
			for (unsigned d = 0; d < sv->conf->npu_count; d++) {
				const struct sched_npu *n = &sv->npus[d];
				bool healthy = !n->isolated && !n->reserved &&
					       (n->health == SCHED_HEALTH_OK ||
						n->health == SCHED_HEALTH_WARNING);

				if (healthy && (!n->job || may_preempt(p, j, n->job, inq)))
					room++;
				else
					all = false;
			}
			if (need <= ty->npu_count && room >= need)
				return true;
			whole += all;
		}
		if (need > ty->npu_count && whole >= need / ty->npu_count)
			return true;
	}
	return false;
}

bool sched_try_preempt(struct pass *p, struct sched_job *j, bool inq)
{
	struct sched_cluster *c = p->c;
	struct victims vs = { 0 };
	typeof(p->preempt_failed[0]) *slot;
	char names[SCHED_REASON_MAX], when[40];
	size_t off = 0;
	unsigned npus = 0;
	uint64_t deadline = 0;
	int r;

	if (!c->conf->preemption || p->preempt_tries >= PREEMPT_TRIES_PER_PASS || !p->committed)
		return false;
	/* nobody to take from: no lower priority running and nothing borrowed */
	if (p->min_running_prio >= eff_priority(c, j) && !p->any_borrowing)
		return false;
	/* a search for the same need, types and quota standing failed for a job of no
	 * lower priority: this one fails too (direct-mapped, collisions just search) */
	slot = &p->preempt_failed[(j->need_min * 2654435761u ^ j->type_mask * 40503u ^ inq) & 255];
	if (slot->used && slot->need == j->need_min && slot->mask == j->type_mask &&
	    slot->inq == inq && slot->prio >= eff_priority(c, j))
		return false;
	/* the budget is spent only on searches that may succeed */
	r = -ENOSPC;
	if (preempt_possible(p, j, inq)) {
		p->preempt_tries++;
		r = choose_victims(p, j, inq, &vs);
	}
	if (r < 0 || vs.n == 0) {
		if (r == -ENOMEM) /* not a search that found nothing: the pass is owed again */
			p->incomplete = true;
		else if (!slot->used || slot->need != j->need_min || slot->mask != j->type_mask ||
			 slot->inq != inq || slot->prio < eff_priority(c, j))
			*slot = (typeof(*slot)){ eff_priority(c, j), j->need_min, j->type_mask, inq,
						 true };
		free(vs.v);
		return false;
	}
	p->committed[j->queue_index] += j->spec->npus_min;
	if (p->npreempted_now < PREEMPT_TRIES_PER_PASS)
		p->preempted_now[p->npreempted_now++] = j->serial;
	names[0] = '\0';
	for (size_t i = 0; i < vs.n; i++) {
		struct sched_job *v = vs.v[i];
		bool reclaim = eff_priority(c, v) >= eff_priority(c, j);
		char reason[SCHED_REASON_MAX];
		unsigned held = sched_job_total_npus(v);

		if (reclaim)
			sched_reason(reason, "preempted by job %s of queue %s: queue %s borrowed "
					     "these %u %s beyond its quota of %u and queue %s "
					     "reclaims them; stopping, then pending to resume "
					     "from its checkpoint",
				     j->name, job_queue(c, j)->name, job_queue(c, v)->name, held,
				     conf_plural(held, "NPU", "NPUs"),
				     job_queue(c, v)->quota_npus, job_queue(c, j)->name);
		else
			sched_reason(reason, "preempted by job %s (queue %s priority %u, job "
					     "priority %u) over this job (queue %s priority %u, "
					     "job priority %u) to free %u %s; stopping, then "
					     "pending to resume from its checkpoint",
				     j->name, job_queue(c, j)->name, job_queue(c, j)->priority,
				     j->spec->priority, job_queue(c, v)->name,
				     job_queue(c, v)->priority, v->spec->priority, held,
				     conf_plural(held, "NPU", "NPUs"));
		sched_text_set(c, &v->preempted_by, j->name, CONF_NAME_MAX + 1);
		v->preempted_by_serial = j->serial;
		v->preemptions++;
		c->preemptions++;
		sched_job_begin_stop(c, v, SCHED_JOB_PENDING, SCHED_EV_PREEMPTED, p->now, reason);
		if (v->stop_deadline_usec > deadline)
			deadline = v->stop_deadline_usec;
		npus += held;
		if (off < sizeof(names))
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
						i ? ", " : "", v->name);
	}
	sched_set_pending(
		c, j, p->now, 0,
		"preempting %zu job%s (%.200s; %u %s); starts when they have stopped, by %s", vs.n,
		vs.n == 1 ? "" : "s", names, npus, conf_plural(npus, "NPU", "NPUs"),
		sched_fmt_time(deadline, when, sizeof(when)));
	sched_reserve_preempted(p, j, vs.v, vs.n, deadline);
	free(vs.v);
	return true;
}

static int by_preemptor(const void *a, const void *b)
{
	uint64_t x = (*(struct sched_job *const *)a)->preempted_by_serial;
	uint64_t y = (*(struct sched_job *const *)b)->preempted_by_serial;

	return x < y ? -1 : x > y;
}

/*
 * Preemptions in flight come first among the jobs of their priority: a preemptor whose
 * victims are stopping, or stopped at this instant, was promised their NPUs (and the free
 * ones it counted on) when it chose them. In queue order its turn may come after a job
 * of the same priority (of a queue whose share the stop just made the smaller) that
 * reserves those NPUs; the victims are backfilled there, and it preempts them again at
 * the next pass. A job of higher priority still goes first, and takes the NPUs if it
 * fits. sched_find_preemptors() lists them (p->first, highest priority first); serve() gives
 * them their turn before the first job of no higher priority.
 */
void sched_find_preemptors(struct pass *p)
{
	struct sched_cluster *c = p->c;
	size_t first;

	p->first = malloc(p->nstopping * sizeof(*p->first));
	if (!p->first)
		return; /* they wait their turn in the queues */
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		/* the lookup first: it reads what every check before it read (the record's
		 * first line), and rules out almost every job */
		if (j->state != SCHED_JOB_PENDING || !sched_stopping_for(p, j, &first) ||
		    sched_job_is_held(j) || !j->spec)
			continue;
		p->first[p->nfirst++] = sched_pend_of(j, eff_priority(c, j));
	}
	qsort(p->first, p->nfirst, sizeof(*p->first), sched_pend_cmp);
}

/* Is @j one of p->first (its turn comes from serve_preemptors)? */
bool sched_is_preemptor_first(const struct pass *p, const struct sched_job *j)
{
	size_t first;

	return p->first && sched_stopping_for(p, j, &first);
}

void sched_preempt_collect(struct pass *p)
{
	struct sched_cluster *c = p->c;
	size_t nq = c->conf->queue_count;

	if (p->nstopping) {
		p->stopping = malloc(p->nstopping * sizeof(*p->stopping));
		p->incomplete |= !p->stopping; /* owed again: its preemptions were not seen */
		p->nstopping = 0;
		for (size_t i = 0; p->stopping && i < c->job_count; i++)
			if (sched_frees_for_preemptor(c->jobs[i], p->now))
				p->stopping[p->nstopping++] = c->jobs[i];
		if (p->stopping)
			qsort(p->stopping, p->nstopping, sizeof(*p->stopping), by_preemptor);
		p->stopping_by = malloc((p->nstopping ? p->nstopping : 1) * sizeof(*p->stopping_by));
		if (!p->stopping_by) {
			free(p->stopping);
			p->stopping = NULL;
			p->nstopping = 0;
			p->incomplete = true;
		}
		for (size_t i = 0; i < p->nstopping; i++)
			p->stopping_by[i] = p->stopping[i]->preempted_by_serial;
	}
	p->committed = calloc(nq ? nq : 1, sizeof(*p->committed));
	p->incomplete |= !p->committed; /* owed again: it could preempt nothing */
	for (size_t i = 0; p->committed && p->nstopping && i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		uint64_t dl;

		if (j->state == SCHED_JOB_PENDING && sched_has_stopping_for(p, j, &dl) &&
		    !sched_job_is_held(j))
			p->committed[j->queue_index] += j->spec->npus_min;
	}
}
