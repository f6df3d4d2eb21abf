/* SPDX-License-Identifier: MIT */
/*
 * The scheduling pass: sched_schedule() serves the queues in order (sched_queue.c), gives
 * each pending job its turn (consider: quota, then a placement around reservations, then
 * preemption, then a reservation or the reason it waits), lets elastic jobs grow, and
 * ends with no NPU reserved. The rules are stated at sched_schedule() in ascend_sched.h.
 * Also here: the entry points that end in a pass, sched_tick() (time limits, stops that
 * are overdue, the rank-table deadline) and sched_queue_set_quota(), and the deferral of
 * passes (sched_pass_request()): a pass costs O(jobs + pending) whatever changed, so one
 * per submission makes a burst quadratic; the daemon defers them and runs one for every
 * request that arrived while its committer wrote the previous batch, the way that batch
 * shares one fsync.
 *
 * Calls: every other file of the pass (sched_preempt.c, sched_backfill.c,
 * sched_elastic.c, sched_queue.c), sched_place.c, sched_job.c; none of them calls here
 * (sched_pass.h says the direction).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_pass.h"

/*
 * When the NPUs reserved for @j (@rv, from no known time) are held by a service's
 * instances: a clause saying which service, and what keeps them (its rules, or their
 * priority; sched_service_hold_note()), else "". Without it the reason would promise
 * the NPUs "from when running jobs end", and a service never ends.
 */
static void held_by_services(struct pass *p, const struct sched_job *j, const struct resv *rv,
			     char *buf, size_t len)
{
	struct sched_cluster *c = p->c;
	struct sched_job *held[64];
	bool lower[64];
	size_t n = 0;

	for (size_t i = 0; i < rv->count; i++) {
		const struct sched_server *sv = &c->servers[rv->slices[i].server];

		for (unsigned d = 0; d < rv->slices[i].npu_count; d++) {
			struct sched_job *o = sv->npus[rv->slices[i].device_ids[d]].job;
			size_t k;

			if (!o || o->state != SCHED_JOB_RUNNING)
				continue;
			for (k = 0; k < n && held[k] != o; k++)
				;
			if (k == n && n < sizeof(held) / sizeof(held[0])) {
				lower[n] = eff_priority(c, o) < eff_priority(c, j);
				held[n++] = o;
			}
		}
	}
	sched_service_hold_note(c, held, lower, n, buf, len);
}

/* ---- one job's turn ---- */

/* Running job @j's exemption from preemption (preempt_exempt_time) ends at its start plus
 * the time: the first such end after the pass is when a kept pass goes stale. */
static void note_exempt(struct pass *p, const struct sched_job *j)
{
	uint64_t end = j->start_usec + (uint64_t)p->c->conf->preempt_exempt_sec * 1000000u;

	if (p->c->conf->preempt_exempt_sec && end > p->now)
		sched_pass_stale_from(p, end);
}

static void start_job(struct pass *p, struct sched_job *j, struct sched_slice *slices,
		      size_t count, bool borrowing, bool backfilled)
{
	struct sched_cluster *c = p->c;
	unsigned npus = 0;
	char reason[SCHED_REASON_MAX];

	for (size_t i = 0; i < count; i++)
		npus += slices[i].npu_count;
	sched_capidx_slices(p, slices, count, -1);
	sched_alloc_apply(c, j, slices, count);
	sched_capidx_slices(p, slices, count, +1);
	j->sched_port = sched_pick_port(c, j, slices[0].server);
	j->borrowing = borrowing;
	j->requeue_cause = SCHED_REQUEUE_NONE;
	j->reason_key = 0;
	sched_job_begin_generation(c, j, p->now);
	c->backfilled += backfilled;
	if (eff_priority(c, j) < p->min_running_prio)
		p->min_running_prio = eff_priority(c, j);
	note_exempt(p, j);
	p->any_borrowing |= borrowing;
	sched_reason(reason, "placed on %zu server%s (%u %s), generation %u%s%s", count,
		     count == 1 ? "" : "s", npus, conf_plural(npus, "NPU", "NPUs"), j->generation,
		     borrowing ? "; borrowing idle NPUs beyond its queue's quota" : "",
		     backfilled ? "; backfilled ahead of a reservation it does not delay" : "");
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_PLACED, p->now, reason);
	p->placed++;
}

static bool fits_when_idle(struct pass *p, const struct sched_job *j)
{
	typeof(p->idle_cache[0]) *e =
		&p->idle_cache[(j->need_min * 2654435761u ^ j->type_mask * 40503u) & 255];

	/* the usable capacity does not change during a pass: one answer per size/types */
	if (e->used && e->need == j->need_min && e->mask == j->type_mask)
		return e->fits;
	*e = (typeof(*e)){ j->need_min, j->type_mask,
			   sched_fits_when_idle(p->c, j->need_min, sched_job_type(p->c, j)), true };
	return e->fits;
}

static void consider(struct pass *p, struct sched_job *j, bool borrow_phase)
{
	struct sched_cluster *c = p->c;
	const struct conf_queue *q = job_queue(c, j);
	unsigned need = j->need_min, hi = j->need_max;
	struct sched_slice *sl;
	size_t n;
	bool backfill = false, inq, own;
	unsigned others;
	const struct resv *delays = NULL;
	uint64_t deadline;
	char reason[SCHED_REASON_MAX], when[40];
	int r;

	if (sched_job_is_held(j))
		return; /* held, or waiting for its dependencies: passed by (not in the pending order; a preemptor's turn) */
	deadline = 0;
	own = p->committed && p->nstopping && sched_has_stopping_for(p, j, &deadline);
	others = p->committed ? p->committed[j->queue_index] - (own ? need : 0) : 0;
	inq = within_quota(c, j, need, others);
	if (!inq && !q->may_borrow) {
		if (need > q->quota_npus)
			sched_set_pending(
				c, j, p->now, mix(mix(KEY_QUOTA, need), q->quota_npus),
				"queue %s now has a quota of %u %s and this job needs %u; it "
				"waits until root raises the quota (queues/%s/quota), or "
				"cancel it",
				q->name, q->quota_npus, conf_plural(q->quota_npus, "NPU", "NPUs"),
				need, q->name);
		else
			sched_set_pending(
				c, j, p->now,
				mix(mix(KEY_QUOTA, c->queue_used[j->queue_index]), q->quota_npus),
				"queue %s uses %u of %u %s; job needs %u", q->name,
				c->queue_used[j->queue_index], q->quota_npus,
				conf_plural(q->quota_npus, "NPU", "NPUs"), need);
		return;
	}
	if (!inq && !sched_service_may_borrow(j)) {
		sched_set_pending(c, j, p->now,
				  mix(mix(KEY_QUOTA, c->queue_used[j->queue_index]), q->quota_npus),
				  "queue %s uses %u of %u %s; job needs %u; an instance of a "
				  "service that may not be preempted (preemptible: false) is not "
				  "placed beyond its queue's quota, as it could not give borrowed "
				  "NPUs back",
				  q->name, c->queue_used[j->queue_index], q->quota_npus,
				  conf_plural(q->quota_npus, "NPU", "NPUs"), need);
		return;
	}
	if (!inq && !borrow_phase)
		return; /* borrowers get what is left, after every queue within quota */
	if (inq && quota_applies(c, q)) {
		/* an elastic job grows only within the quota */
		unsigned room = q->quota_npus - c->queue_used[j->queue_index] - others;

		if (hi > room)
			hi = room > need ? room : need;
	}
	if (!c->conf->backfill && (j->type_mask & p->blocked)) {
		const struct sched_job *b = NULL;

		for (unsigned t = 0; t < 32 && !b; t++)
			if (j->type_mask & p->blocked & (1u << t))
				b = p->blocker_of[t];
		sched_set_pending_shared(p, j, mix(KEY_BEHIND, b->serial),
					 "waiting behind job \"%s\" (first in line for the same "
					 "servers; jobs start in priority then submission order)",
					 b->name);
		p->waiting_mask |= j->type_mask;
		return;
	}
	/* no sentence is written while trying: most waiting jobs never need theirs */
	if (sched_capidx_may_fit(p, j->type_mask, need) || sched_may_use_reserved(p, j)) {
		r = sched_place_around(p, j, hi, &sl, &n, &backfill, &delays, NULL);
		if (r == 0) {
			start_job(p, j, sl, n, !inq, backfill);
			return;
		}
		if (r != -ENOSPC) { /* -ENOMEM: the next pass retries */
			p->incomplete = true;
			return;
		}
	}
	reason[0] = '\0';
	p->waiting_mask |= j->type_mask;
	if (borrow_phase && !inq) {
		sched_set_pending(
			c, j, p->now,
			mix(mix(KEY_BORROW, c->queue_used[j->queue_index]), q->quota_npus),
			"queue %s uses %u of %u %s; job needs %u and may borrow only idle "
			"NPUs, and none fit",
			q->name, c->queue_used[j->queue_index], q->quota_npus,
			conf_plural(q->quota_npus, "NPU", "NPUs"), need);
		return;
	}
	/* victims of an earlier pass are still stopping for this job */
	if (own) {
		size_t first, nv = sched_stopping_for(p, j, &first);

		sched_hold_line(p, j);
		if (!sched_pending_same(j, mix(KEY_STOPPING, deadline)))
			sched_set_pending(c, j, p->now, mix(KEY_STOPPING, deadline),
					  "waiting for the jobs it preempted to stop, by %s",
					  sched_fmt_time(deadline, when, sizeof(when)));
		/* nothing else takes its place meanwhile */
		if (!sched_reserve_preempted(p, j, &p->stopping[first], nv, deadline))
			sched_reserve_for(p, j);
		return;
	}
	if (sched_try_preempt(p, j, inq)) {
		sched_hold_line(p, j);
		sched_reserve_for(p, j); /* when sched_try_preempt could not hold its placement */
		return;
	}
	if (!fits_when_idle(p, j)) {
		sched_explain(p, j, hi, reason);
		sched_set_pending(c, j, p->now, 0,
				  "%.300s; it cannot fit until cordoned, unreachable "
				  "or isolated capacity returns, so jobs behind it may "
				  "start",
				  reason);
		return;
	}
	if (!c->conf->backfill) {
		sched_hold_line(p, j);
		sched_explain(p, j, hi, reason);
		sched_set_pending(c, j, p->now, 0, "%s", reason);
		return;
	}
	if (delays) {
		sched_wait_behind(p, j, delays, need);
		return;
	}
	if (!(p->resv_mask & j->type_mask)) {
		const struct resv *rv = sched_reserve_for(p, j);
		char where[200];

		if (rv) {
			char kept[SCHED_REASON_MAX];

			sched_explain(p, j, hi, reason);
			sched_describe_slices(c, rv->slices, rv->count, where, sizeof(where));
			if (rv->start == UINT64_MAX)
				held_by_services(p, j, rv, kept, sizeof(kept));
			if (rv->start == UINT64_MAX && kept[0])
				sched_set_pending(c, j, p->now, 0,
						  "%.200s; first in line: %s reserved for it; %.250s",
						  reason, where, kept);
			else if (rv->start == UINT64_MAX)
				sched_set_pending(
					c, j, p->now, 0,
					"%.200s; first in line: %s reserved for it, from when "
					"running jobs end (some have no time_limit)",
					reason, where);
			else
				sched_set_pending(
					c, j, p->now, 0,
					"%.200s; first in line: %s reserved for it from %s "
					"(running jobs' time limits)",
					reason, where,
					sched_fmt_time(rv->start, when, sizeof(when)));
			return;
		}
	}
	{
		const struct resv *h = NULL;

		for (size_t i = 0; i < p->nresv && !h; i++)
			if (p->resv[i].mask & j->type_mask)
				h = &p->resv[i];
		if (h) {
			sched_wait_behind(p, j, h, need);
		} else if (!sched_pending_same(j, mix(KEY_NOROOM, need))) {
			sched_explain(p, j, hi, reason);
			sched_set_pending(c, j, p->now, mix(KEY_NOROOM, need), "%s", reason);
		}
	}
}

/* ---- service order ---- */

/* Was @j already handled in the first phase (within its quota, or a preemptor)? */
static bool had_turn(struct pass *p, const struct sched_job *j)
{
	uint64_t dl;
	bool own = false;
	unsigned need = j->spec->npus_min, committed;

	for (size_t i = 0; i < p->npreempted_now; i++)
		own |= p->preempted_now[i] == j->serial;
	if (own)
		return true;
	own = sched_has_stopping_for(p, j, &dl);
	committed = p->committed ? p->committed[j->queue_index] : 0;
	return within_quota(p->c, j, need, committed - (own && committed >= need ? need : 0));
}

/* The turn of the preemptors in flight of priority @prio or higher. */
static void serve_preemptors(struct pass *p, struct qlist *ql, unsigned prio)
{
	while (p->next_first < p->nfirst && p->first[p->next_first].prio >= prio) {
		struct sched_job *j = p->first[p->next_first++].job;

		if (j->state != SCHED_JOB_PENDING)
			continue;
		consider(p, j, false);
		ql[j->queue_index].live = sched_queue_head_valid(&ql[j->queue_index]);
	}
}

/* The latest job served since the last fold (p->run_max) joins the floor of every queue
 * whose list had run out before it (struct pass_queue_end). */
static void fold_floors(struct pass *p, size_t nq)
{
	if (!p->qend || !p->has_run_max)
		return;
	for (size_t q = 0; q < nq; q++) {
		struct pass_queue_end *e = &p->qend[q];

		if (e->done && (!e->has_floor ||
				sched_serve_key_before(p->c, e->floor_queue, &e->floor,
						       p->run_max_queue, &p->run_max, p->now))) {
			e->floor = p->run_max;
			e->floor_queue = p->run_max_queue;
			e->has_floor = true;
		}
	}
	p->has_run_max = false;
}

/* Queue @q's list ran out (or, @live, is served again): from here its floor is the latest
 * of the jobs served (what came before is folded into the others'). */
static void note_end(struct pass *p, size_t q, bool live, size_t nq)
{
	struct pass_queue_end *e = p->qend ? &p->qend[q] : NULL;

	if (!e || e->done == !live)
		return;
	fold_floors(p, nq);
	e->done = !live;
	e->has_floor = false;
}

/* Job @h of queue @b was served: the queue's last, and the latest since the last fold
 * when it comes later than that one (one comparison a job; floors follow at each fold). */
static void note_served(struct pass *p, size_t b, const struct pend *h)
{
	if (!p->qend)
		return;
	p->qend[b].last = *h;
	p->qend[b].has_last = true;
	if (!p->has_run_max ||
	    sched_serve_key_before(p->c, p->run_max_queue, &p->run_max, b, h, p->now)) {
		p->run_max = *h;
		p->run_max_queue = b;
		p->has_run_max = true;
	}
}

static void serve(struct pass *p, struct qlist *ql, size_t nq, bool borrow_phase)
{
	struct sched_cluster *c = p->c;

	/* only the queue just served moves (and those of preemptors served before it): a
	 * pass changes no other pending job's state */
	for (size_t i = 0; i < nq; i++) {
		ql[i].next = 0;
		ql[i].live = sched_queue_head_valid(&ql[i]);
	}
	for (size_t i = 0; !borrow_phase && i < nq; i++)
		note_end(p, i, ql[i].live, nq);
	for (;;) {
		size_t best = sched_queue_next(c, ql, nq);
		struct sched_job *j;

		if (best == SIZE_MAX)
			break;
		j = ql[best].jobs[ql[best].next++].job;
		if (borrow_phase) {
			if (!had_turn(p, j)) {
				p->borrow_turns++;
				consider(p, j, true);
			}
		} else {
			size_t first = p->next_first;

			serve_preemptors(p, ql, eff_priority(c, j));
			for (size_t i = 0; first != p->next_first && i < nq; i++)
				note_end(p, i, ql[i].live, nq);
			note_served(p, best, &ql[best].jobs[ql[best].next - 1]);
			if (!sched_is_preemptor_first(p, j))
				consider(p, j, false);
		}
		ql[best].live = sched_queue_head_valid(&ql[best]);
		if (!borrow_phase)
			note_end(p, best, ql[best].live, nq);
	}
	if (!borrow_phase)
		fold_floors(p, nq);
}

/* ---- the pass ---- */

/*
 * The kept pass. A pass that changed nothing but pending reasons and reservations (it
 * placed no job, chose no victims, had preemption searches to spare, no preemption in
 * flight, no elastic job running, gave no borrowing turn) is settled: run again on the
 * same cluster at the same instant it decides the same, job by job. So while nothing
 * else changes (c->mutations, absorbed only for new submissions and drafts:
 * sched_pass_absorb),
 * the next pass is that one resumed: the kept reservations, masks, counters and caches,
 * and a turn for each new job only. That is exact when a full pass would serve every new
 * job after every job the kept pass served (sched_pend_order_take_new checks it against
 * where the pass left each queue, struct pass_queue_end): it would give each old job the
 * same turn with the same outcome before the first new one, and then the new ones, as
 * here. Time: a kept pass is not resumed from the instant one of its outcomes could
 * come out otherwise (sched_pass_stale_from: an exemption from preemption ends, a
 * comparison of a time_limit with a reservation's known start flips); nor one placed
 * with another set of suspect servers (compared server by server); nor, with aging, one
 * of another step of the age (the order between queues moves only then).
 */
struct sched_kept_pass {
	struct pass *p;
};

/* How long a pass cut short without memory waits to be run again: the daemon runs owed
 * passes at almost every request, and a full pass each while memory is short would only
 * make it shorter. */
#define PASS_RETRY_USEC 1000000u

/* A pass at @now_usec cut short without memory: with deferred passes it is owed again,
 * from PASS_RETRY_USEC on (the daemon's heartbeat thread runs owed passes each second);
 * a new request makes it due at once. */
static void owe_again(struct sched_cluster *c, uint64_t now_usec)
{
	if (!c->defer_passes)
		return;
	c->pass_owed = true;
	c->pass_retry_usec = now_usec + PASS_RETRY_USEC;
}

static void pass_free(struct pass *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nresv; i++)
		free(p->resv[i].slices);
	sched_pass_shared_reasons_free(p);
	sched_capidx_free(p);
	free(p->stopping);
	free(p->stopping_by);
	free(p->first);
	free(p->committed);
	free(p->suspect);
	free(p->qend);
	free(p);
}

void sched_pass_kept_free(struct sched_cluster *c)
{
	if (!c->kept_pass)
		return;
	pass_free(c->kept_pass->p);
	free(c->kept_pass);
	c->kept_pass = NULL;
}

void sched_pass_absorb(struct sched_cluster *c, uint64_t mark)
{
	if (c->kept_pass && c->kept_mark == mark)
		c->kept_mark = c->mutations;
}

void sched_cluster_set_incremental(struct sched_cluster *c, bool on)
{
	c->incremental_off = !on;
	if (!on)
		sched_pass_kept_free(c);
}

static bool pass_settled(const struct pass *p)
{
	return !p->placed && !p->npreempted_now && p->preempt_tries < PREEMPT_TRIES_PER_PASS &&
	       !p->nstopping && !p->nfirst && !p->any_elastic && !p->borrow_turns &&
	       !p->incomplete && p->committed && p->qend;
}

/* End pass @p (its reservations unmarked): keep it when settled, else free it. */
static void pass_end(struct sched_cluster *c, struct pass *p)
{
	sched_pass_kept_free(c);
	if (!c->incremental_off && pass_settled(p) && !p->suspect)
		p->suspect = malloc(c->server_count ? c->server_count : 1);
	if (c->incremental_off || !pass_settled(p) || !p->suspect ||
	    !(c->kept_pass = malloc(sizeof(*c->kept_pass)))) {
		pass_free(p);
		return;
	}
	for (size_t i = 0; i < c->server_count; i++)
		p->suspect[i] = c->servers[i].suspect;
	c->kept_pass->p = p;
	c->kept_mark = c->mutations;
}

/* May the kept pass be resumed at @now_usec? */
static struct pass *kept_usable(struct sched_cluster *c, uint64_t now_usec)
{
	struct pass *p = c->kept_pass ? c->kept_pass->p : NULL;

	if (!p || c->incremental_off || c->kept_mark != c->mutations)
		return NULL;
	/* every rule below counts forward from the kept pass's instant (a clock stepped
	 * back could make a waiting job fit a reservation again, or a run exempt again) */
	if (now_usec < p->now)
		return NULL;
	/* with aging the order between queues moves when a step of the age ends */
	if (sched_age_epoch(c->conf, now_usec) != sched_age_epoch(c->conf, p->now))
		return NULL;
	/* a run's exemption from preemption ended, a job's limit would now run past a
	 * reservation it fitted before, a running job passed its limit */
	if (now_usec >= p->stale_from)
		return NULL;
	return p;
}

/* Are the servers suspect now those kept pass @p placed with? */
static bool same_suspects(const struct sched_cluster *c, const struct pass *p)
{
	if (c->suspect_sig != p->suspect_sig)
		return false;
	for (size_t i = 0; i < c->server_count; i++)
		if (p->suspect[i] != c->servers[i].suspect)
			return false;
	return true;
}

/* Resume kept pass @p at @now_usec with the new jobs; false when it may not (nothing
 * was changed then). */
static bool pass_resume(struct sched_cluster *c, struct pass *p, uint64_t now_usec,
			unsigned *ret_placed)
{
	size_t nq = c->conf->queue_count, n = 0;
	struct qlist *ql = calloc(nq ? nq : 1, sizeof(*ql));
	struct pend *fresh = NULL;

	/* suspect servers are the last choice: which ones they are moves with time and
	 * heartbeats, and with it where reservations go */
	sched_place_begin(c, now_usec);
	if (!same_suspects(c, p) || !ql ||
	    sched_pend_order_take_new(c, ql, p->qend, &fresh, &n) < 0) {
		free(ql);
		return false;
	}
	c->kept_pass->p = NULL;
	sched_pass_kept_free(c);
	p->now = now_usec;
	p->placed = 0;
	if (n) {
		if (!p->idx_ok) { /* the kept pass had no one to index for */
			sched_capidx_free(p);
			memset(&p->idx, 0, sizeof(p->idx));
			p->ntypes = 0;
			sched_capidx_build(p);
		}
		sched_resv_mark_all(p);
		serve(p, ql, nq, false);
		if (c->conf->enable_quota_limit && !p->placed && !p->npreempted_now) {
			/* every old job had its turn within quota, and still has (a preemptor
			 * moves its queue's committed NPUs: then every job is asked again) */
			serve(p, ql, nq, true);
		} else if (c->conf->enable_quota_limit) {
			struct qlist *all_ql = calloc(nq ? nq : 1, sizeof(*all_ql));
			struct pend *all = NULL;
			size_t nall;

			/* placements moved the shares: every job's standing is asked again,
			 * in the order a full pass has here */
			sched_pend_order_settle_new(c);
			if (all_ql && sched_pend_order_take(c, all_ql, &all, &nall) == 0 && nall)
				serve(p, all_ql, nq, true);
			else if (!all_ql || !all)
				p->incomplete = true;
			free(all);
			free(all_ql);
		}
		sched_resv_unmark_all(p);
	}
	sched_pend_order_settle_new(c);
	c->passes_incremental++;
	*ret_placed = p->placed;
	if (p->incomplete)
		owe_again(c, now_usec);
	pass_end(c, p);
	free(ql);
	free(fresh);
	return true;
}

unsigned sched_schedule(struct sched_cluster *c, uint64_t now_usec)
{
	struct pass *p;
	struct qlist *ql;
	struct pend *all;
	size_t nq = c->conf->queue_count, n = 0;
	unsigned placed;

	p = kept_usable(c, now_usec);
	if (p && pass_resume(c, p, now_usec, &placed))
		return placed;
	sched_pass_kept_free(c);
	p = calloc(1, sizeof(*p));
	ql = calloc(nq ? nq : 1, sizeof(*ql));
	if (!p || !ql) {
		free(p);
		free(ql);
		owe_again(c, now_usec); /* nothing was changed */
		return 0;
	}
	p->c = c;
	p->now = now_usec;
	p->qend = calloc(nq ? nq : 1, sizeof(*p->qend)); /* without it the pass is not kept */
	p->min_running_prio = UINT32_MAX;
	p->stale_from = UINT64_MAX;
	sched_place_begin(c, now_usec); /* suspect servers are the last choice (sched_health.c) */
	p->suspect_sig = c->suspect_sig;
	/* one sweep over the jobs: what the pass needs to know up front */
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		switch (j->state) {
		case SCHED_JOB_PENDING:
			/* reservations last one pass: this pass says again who holds one */
			j->reserved_start_usec = 0;
			p->nstopping += sched_frees_for_preemptor(j, now_usec);
			break;
		case SCHED_JOB_RUNNING:
			if (!j->spec)
				break;
			if (eff_priority(c, j) < p->min_running_prio)
				p->min_running_prio = eff_priority(c, j);
			note_exempt(p, j);
			p->any_borrowing |= j->borrowing;
			p->any_elastic |= j->spec->npus_min != j->spec->npus_max;
			break;
		case SCHED_JOB_STOPPING:
			p->nstopping += j->stop_to == SCHED_JOB_PENDING;
			break;
		default:
			break;
		}
	}
	/* per queue, in job priority then submission order: kept between passes */
	if (sched_pend_order_take(c, ql, &all, &n) < 0) {
		free(p);
		free(ql);
		owe_again(c, now_usec);
		return 0;
	}
	sched_preempt_collect(p);
	if (n)
		sched_capidx_build(p);
	if (n && p->nstopping)
		sched_find_preemptors(p);
	/* queues within quota first; then borrowers on what is left */
	if (n)
		serve(p, ql, nq, false);
	if (n && c->conf->enable_quota_limit)
		serve(p, ql, nq, true);
	sched_resv_unmark_all(p);
	if (p->any_elastic)
		sched_grow_elastic(p);
	placed = p->placed;
	if (p->incomplete)
		owe_again(c, now_usec);
	pass_end(c, p);
	free(ql);
	free(all);
	return placed;
}

/* ---- time ---- */

/*
 * Has running job @j's rank table, which its processes read (rank table launch), just
 * passed hccl_connect_timeout since its generation began without completing? HCCL
 * gives up on a peer after HCCL_CONNECT_TIMEOUT, so a table later than that starts
 * nothing. Looked at once, when the bound passes, so that idle ticks cost nothing.
 */
static bool ranktable_overdue(const struct sched_cluster *c, const struct sched_job *j,
			      uint64_t now_usec)
{
	uint64_t at = j->generation_usec + (uint64_t)c->conf->hccl_connect_timeout_sec * 1000000u;

	if (c->conf->enable_dynamic_network || !c->conf->hccl_connect_timeout_sec)
		return false;
	if (at <= c->last_tick_usec || at > now_usec)
		return false;
	return sched_ranktable_waiting_for(c, j, NULL, 0) > 0;
}

unsigned sched_tick(struct sched_cluster *c, uint64_t now_usec)
{
	unsigned changed = 0;
	bool due = false, aged = false;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		/* an elastic job below its max may grow once its delay has passed */
		if (j->state == SCHED_JOB_RUNNING && j->spec && sched_job_total_npus(j) <
		    j->spec->npus_max) {
			uint64_t at = j->generation_usec +
				      (uint64_t)c->conf->elastic_grow_delay_sec * 1000000u;

			due |= at > c->last_tick_usec && at <= now_usec;
		}

		/* a run's preempt_exempt_time ended: preemption may take it now */
		if (j->state == SCHED_JOB_RUNNING && c->conf->preempt_exempt_sec) {
			uint64_t at = j->start_usec +
				      (uint64_t)c->conf->preempt_exempt_sec * 1000000u;

			due |= at > c->last_tick_usec && at <= now_usec;
		}
		if (j->state == SCHED_JOB_RUNNING && j->spec && j->spec->time_limit_sec &&
		    sched_job_run_usec(j, now_usec) >= j->spec->time_limit_sec * 1000000u) {
			char reason[SCHED_REASON_MAX];

			sched_reason(reason, "time limit of %llu s reached; stopped (SIGTERM, then "
					     "SIGKILL after the %u s grace period)",
				     (unsigned long long)j->spec->time_limit_sec,
				     c->conf->stop_grace_sec);
			sched_job_begin_stop(c, j, SCHED_JOB_TIMEOUT, SCHED_EV_TIMEOUT, now_usec, reason);
			changed++;
		}
		if (j->state == SCHED_JOB_RUNNING && ranktable_overdue(c, j, now_usec)) {
			char why[SCHED_REASON_MAX], reason[SCHED_REASON_MAX];

			sched_ranktable_waiting_for(c, j, why, sizeof(why));
			sched_reason(reason, "rank table not completed within hccl_connect_timeout "
					     "(%u s), so HCCL cannot start; stopped, then failed: "
					     "waiting for %s",
				     c->conf->hccl_connect_timeout_sec, why);
			sched_job_begin_stop(c, j, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec,
					     reason);
			changed++;
		}
		if (j->restart_at_usec)
			changed += sched_service_restart_due(c, j, now_usec);
		if (j->roles)
			changed += sched_service_roles_due(c, j, now_usec);
		if (j->state == SCHED_JOB_STOPPING && now_usec >= j->stop_deadline_usec) {
			changed++;
			if (sched_job_finish_stop(c, j, false, now_usec))
				i--; /* the record was dropped (rmdir): jobs[i] is the next */
		}
	}
	changed += sched_job_resume_scan_expire(c, now_usec);
	changed += sched_ladder_expire(c, now_usec);
	changed += sched_service_tick(c, now_usec);
	changed += sched_array_tick(c, now_usec);
	changed += sched_service_drain(c, now_usec);
	/* a step of priority aging ended: the order between queues may have changed, and
	 * with it who is first in line (Slurm recomputes priorities every
	 * PriorityCalcPeriod; here at each step of the age) */
	if (c->conf->priority_weight_age &&
	    sched_age_epoch(c->conf, now_usec) != sched_age_epoch(c->conf, c->last_tick_usec))
		aged = true;
	c->last_tick_usec = now_usec;
	if (changed || due || aged)
		sched_pass_request(c, now_usec);
	return changed;
}


int sched_queue_set_quota(struct sched_cluster *c, const char *queue, unsigned npus,
			  uint64_t now_usec)
{
	struct conf_queue *q = NULL;
	size_t qi = 0;

	for (size_t i = 0; i < c->conf->queue_count && !q; i++)
		if (strcmp(c->conf->queues[i].name, queue) == 0) {
			q = &c->conf->queues[i];
			qi = i;
		}
	if (!q)
		return -ENOENT;
	if (npus > c->npus_total)
		return -EINVAL;
	q->quota_npus = npus;
	sched_queue_rebalance_borrowing(c, qi, npus);
	sched_event_add(c, now_usec, SCHED_EV_QUEUE, NULL, NULL, -1,
			"queue %s: quota set to %u NPU%s%s%s", q->name, npus, npus == 1 ? "" : "s",
			npus ? "" : " (no limit)", SCHED_QUOTA_OFF_NOTE(c, npus));
	sched_cluster_changed(c);
	sched_pass_request(c, now_usec);
	return 0;
}

/* ---- deferred passes (the rules: sched_pass_request() in ascend_sched.h) ---- */

void sched_cluster_set_deferred_passes(struct sched_cluster *c, bool deferred)
{
	c->defer_passes = deferred;
}

unsigned sched_pass_request(struct sched_cluster *c, uint64_t now_usec)
{
	c->pass_requests++;
	if (c->defer_passes) {
		c->pass_owed = true;
		c->pass_retry_usec = 0; /* due at once, a retry too */
		return 0;
	}
	c->passes_run++;
	return sched_schedule(c, now_usec);
}

bool sched_pass_is_owed(const struct sched_cluster *c)
{
	return c->pass_owed;
}

unsigned sched_pass_run_owed(struct sched_cluster *c, uint64_t now_usec)
{
	if (!c->pass_owed)
		return 0;
	/* a retry after a pass cut short waits its turn (unless the clock went back) */
	if (now_usec < c->pass_retry_usec && c->pass_retry_usec - now_usec <= PASS_RETRY_USEC)
		return 0;
	/* cleared first: what the pass itself asks for is owed again, not lost */
	c->pass_owed = false;
	c->passes_run++;
	return sched_schedule(c, now_usec);
}
