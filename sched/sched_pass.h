/* SPDX-License-Identifier: MIT */
/*
 * The scheduling pass's cross-file internals: the state of one pass (struct pass), the
 * small rules every part of it shares, and the functions one part of the pass offers
 * another. Only the files of the pass include it (sched_pass.c, sched_queue.c,
 * sched_backfill.c, sched_preempt.c, sched_elastic.c, sched_pend_order.c); the rest of
 * sched/ sees the pass through sched_internal.h and ascend_sched.h.
 *
 * Direction of calls (no file calls one above it):
 *   sched_pass.c      the pass driver: sched_schedule(), one job's turn (consider),
 *                     sched_tick(), sched_queue_set_quota()
 *     -> sched_preempt.c    victim choice, preemptions in flight
 *       -> sched_backfill.c reservations, EASY backfill, the capacity index
 *         -> sched_elastic.c  job sizes, elastic growth
 *         -> sched_queue.c    queue order, fair share, quotas, pending reasons
 *           -> sched_pend_order.c  the service order within a queue, the pending order
 *                                  kept between passes
 * sched_pass.c calls every file below it; sched_elastic.c and sched_queue.c call none
 * of the others; sched_pend_order.c calls none of them, nor sched_job.c, so that
 * sched_job_transition() (sched_job.c, called by the pass) may note a job entering or
 * leaving the pending state there without a cycle.
 */
#ifndef SCHED_PASS_H
#define SCHED_PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched_internal.h"

/* Preemption searches per pass: each costs a few placements; the next pass goes on. */
#define PREEMPT_TRIES_PER_PASS 8

/* A backfill reservation: NPUs a blocked job will get at @start (UINT64_MAX unknown). */
struct resv {
	struct sched_job *job;
	uint64_t start;
	uint32_t mask;
	struct sched_slice *slices;	/* owned */
	size_t count;
};

/* Per server type: how many accepting servers have f placeable NPUs (f = 0..16), and how
 * many are whole and free. A necessary condition for a fit, kept up to date as the pass
 * places jobs and marks reservations, so that jobs that cannot fit cost O(1). Reserved
 * NPUs do not count (a job that may use them takes the slow path). */
struct capidx {
	unsigned hist[32][CONF_SERVER_NPUS_MAX + 1];
	unsigned whole[32];
	unsigned char *free_of;		/* per server: what it contributes now */
	bool *whole_of;
	signed char *type_of;		/* per server: index into the cluster's types, -1 */
};

/* A pending job with its sort keys beside it (no pointer chasing while sorting). */
struct pend {
	unsigned prio;
	uint32_t eligible_sec;	/* the job's eligible_usec in seconds (its age) */
	uint64_t seq;
	struct sched_job *job;
};

/* qsort order of struct pend, the service order inside a queue (sched_pend_order.c):
 * priority (high first), then queue_seq. */
int sched_pend_cmp(const void *a, const void *b);

/* The entry of pending job @j in the pending order (with @prio its sort priority). */
static inline struct pend sched_pend_of(const struct sched_job *j, unsigned prio)
{
	uint64_t s = j->eligible_usec / 1000000u;

	return (struct pend){ prio, s > UINT32_MAX ? UINT32_MAX : (uint32_t)s, j->queue_seq,
			      (struct sched_job *)j };
}

struct pass {
	struct sched_cluster *c;
	uint64_t now;
	struct resv resv[32];
	size_t nresv;
	uint32_t resv_mask;		/* server types covered by a reservation */
	uint32_t finite_resv_mask;	/* ... by one with a known start (backfill may use it) */
	uint64_t latest_start[32];	/* per server type: the latest known start of a
					 * reservation covering it (0: none) */
	uint32_t blocked;		/* backfill off: types held by a blocked job */
	const struct sched_job *blocker_of[32];
	uint32_t waiting_mask;		/* types some job waits for (no elastic growth) */
	unsigned preempt_tries;
	/* preemption searches that found nothing: a job of no higher priority needing no
	 * fewer NPUs of the same server types finds nothing either */
	struct { unsigned prio, need; uint32_t mask; bool inq, used; } preempt_failed[256];
	unsigned placed;
	const struct conf_server_type *types[32];
	size_t ntypes;
	struct capidx idx;
	bool idx_ok;
	/* per queue: NPUs promised to its preemptors whose victims are still stopping */
	unsigned *committed;
	/* jobs that chose victims in this pass (their NPUs are in committed too) */
	uint64_t preempted_now[PREEMPT_TRIES_PER_PASS];
	size_t npreempted_now;
	/* jobs stopping because they were preempted, or requeued at this pass's instant
	 * (sched_frees_for_preemptor), sorted by preemptor */
	struct sched_job **stopping;
	size_t nstopping;
	/* stopping[i]->preempted_by_serial, side by side: every pending job of a pass is
	 * looked up here (a few cached lines, not a job's record each step) */
	uint64_t *stopping_by;
	/* their pending preemptors, by priority (sched_find_preemptors) */
	struct pend *first;
	size_t nfirst, next_first;
	/* lowest effective priority among running jobs, and whether any borrow */
	unsigned min_running_prio;
	uint64_t stale_from;		/* the first instant at which what this pass decided
					 * may come out otherwise (UINT64_MAX never; only time
					 * moves it): a kept pass is resumed before it only
					 * (sched_pass_stale_from) */
	bool any_borrowing;
	bool any_elastic;		/* a running job may grow */
	/* sched_fits_when_idle() answers: the cluster's usable capacity is fixed in a pass */
	struct { unsigned need; uint32_t mask; bool fits, used; } idle_cache[256];
	/* per queue (c->conf->queue_count entries; NULL without memory, and then the pass
	 * is not kept): where the first phase left it, so that a kept pass tries only jobs
	 * a full pass would serve after every job it served (sched_pend_order_take_new) */
	struct pass_queue_end *qend;
	/* the latest job (across queues) served since floors were last folded into qend */
	struct pend run_max;
	size_t run_max_queue;
	bool has_run_max;
	unsigned borrow_turns;		/* jobs the borrowing phase gave a turn */
	uint64_t suspect_sig;		/* c->suspect_sig the pass placed with */
	unsigned char *suspect;		/* kept pass only: each server's suspect flag it
					 * placed with (c->server_count entries; the
					 * signature alone cannot tell every set apart) */
	bool incomplete;		/* a turn was cut short (no memory) */
	/* sentences whose key alone decides them for every job (sched_set_pending_shared):
	 * the text each key gave, one reference held, so that when a job first in line
	 * changes the thousands waiting behind it take the new one without formatting */
	struct { uint64_t key; const char *text; } shared_reason[32];
};

/*
 * sched_pass_stale_from() - an outcome of pass @p holds until the instant before @t_usec
 * and may differ from then: a preempt_exempt_time ends (preemption may take the run),
 * a waiting job's time_limit would no longer end before a reservation's known start (it
 * could use the reserved NPUs: now + what is left of its limit <= the start), a running
 * job passes its time_limit (its expected end then moves with the clock). Nothing else a
 * pass decides depends on the instant: reservations start when running jobs' limits end,
 * and reasons name no time that moves (sched_wait_behind()).
 */
static inline void sched_pass_stale_from(struct pass *p, uint64_t t_usec)
{
	if (t_usec < p->stale_from)
		p->stale_from = t_usec;
}

/* Reason keys: what a reason depends on, without formatting it. */
enum { KEY_QUOTA = 1, KEY_BEHIND, KEY_NOROOM, KEY_RESV, KEY_STOPPING, KEY_BORROW };
struct qlist {
	struct pend *jobs;
	size_t n, next;
	bool live;		/* jobs[next] is a pending job */
};

/*
 * Where the first phase of a pass (and the kept passes resumed from it) left one queue.
 * A job new to the queue is served by a full pass after every job served so far when it
 * comes after @last inside the queue (sched_pend_cmp), and after @floor across queues
 * (sched_serve_key_before): every job served since this queue's list ran out was the
 * best head then, and the new job, this queue's head from that point in a full pass,
 * would have lost to each. Without aging the jobs are served in one total order and
 * @floor is the last job served; with it the age can put a later head before an earlier
 * one, so the latest of them in that order is kept. serve() compares each job served
 * with one running maximum (struct pass run_max) and folds that into the floors of the
 * queues that ran out whenever another runs out and at its end: O(1) a job.
 */
struct pass_queue_end {
	struct pend last;	/* the queue's last job served (has_last) */
	struct pend floor;	/* of the jobs served since its list ran out, the one served
				 * latest in order across queues (has_floor) */
	size_t floor_queue;	/* @floor's queue */
	bool has_last, has_floor;
	bool done;		/* its list ran out */
};

/* ---- what-if: take a job's NPUs away for one question, then give them back ---- */

static inline void sim_release(struct sched_cluster *c, const struct sched_job *j)
{
	for (size_t i = 0; i < j->slice_count; i++) {
		struct sched_server *s = &c->servers[j->slices[i].server];

		for (unsigned k = 0; k < j->slices[i].npu_count; k++)
			s->npus[j->slices[i].device_ids[k]].job = NULL;
		sched_server_recount(s);
	}
}

static inline void sim_restore(struct sched_cluster *c, struct sched_job *j)
{
	for (size_t i = 0; i < j->slice_count; i++) {
		struct sched_server *s = &c->servers[j->slices[i].server];

		for (unsigned k = 0; k < j->slices[i].npu_count; k++) {
			struct sched_npu *n = &s->npus[j->slices[i].device_ids[k]];

			n->job = j;
			n->rank = j->slices[i].first_rank + k;
		}
		sched_server_recount(s);
	}
}
static inline const struct conf_queue *job_queue(const struct sched_cluster *c,
					  const struct sched_job *j)
{
	return &c->conf->queues[j->queue_index];
}

/* Effective priority: queue priority first, then the job's own (both 0-1000). */
static inline unsigned eff_priority(const struct sched_cluster *c, const struct sched_job *j)
{
	return job_queue(c, j)->priority * 1001u + j->prio;
}

/*
 * Priority aging (resource.priority_weight_age, priority_max_age; Slurm's
 * PriorityWeightAge and PriorityMaxAge): the units a job eligible since @eligible_sec has
 * gained at @now_usec, 0 to priority_weight_age. One unit per step of priority_max_age /
 * priority_weight_age (in microseconds: 7 days over 1000 is 604.8 s), counted on one
 * clock for every job (steps of the epoch, not of each job's wait), so the order between
 * queues changes only when a step ends: sched_age_epoch() tells the tick that must run a
 * pass then (sched_pass.c).
 */
static inline uint64_t sched_age_step_usec(const struct conf_cluster *cf)
{
	uint64_t step = cf->priority_weight_age ? (uint64_t)cf->priority_max_age_sec * 1000000u /
							  cf->priority_weight_age :
						  0;

	return step ? step : 1;
}

static inline uint64_t sched_age_epoch(const struct conf_cluster *cf, uint64_t now_usec)
{
	return cf->priority_weight_age ? now_usec / sched_age_step_usec(cf) : 0;
}

static inline unsigned sched_age_units(const struct conf_cluster *cf, uint32_t eligible_sec,
				       uint64_t now_usec)
{
	uint64_t now = sched_age_epoch(cf, now_usec), from;

	if (!cf->priority_weight_age)
		return 0;
	from = (uint64_t)eligible_sec * 1000000u / sched_age_step_usec(cf);
	if (now <= from)
		return 0;
	return now - from > cf->priority_weight_age ? cf->priority_weight_age :
						      (unsigned)(now - from);
}

/* The service order across queues with the queues' shares as they are, also between
 * two jobs of one queue: queue priority plus age, job priority, share, submission
 * (sched_serve_before() says why). */
static inline bool sched_serve_key_before(const struct sched_cluster *c, size_t qa,
					  const struct pend *a, size_t qb, const struct pend *b,
					  uint64_t now_usec)
{
	const struct conf_queue *x = &c->conf->queues[qa], *y = &c->conf->queues[qb];
	unsigned pa = x->priority, pb = y->priority;
	uint64_t sa = (uint64_t)c->queue_used[qa] * y->weight;
	uint64_t sb = (uint64_t)c->queue_used[qb] * x->weight;

	if (c->conf->priority_weight_age) {
		pa += sched_age_units(c->conf, a->eligible_sec, now_usec);
		pb += sched_age_units(c->conf, b->eligible_sec, now_usec);
	}
	if (pa != pb)
		return pa > pb;
	if (a->prio != b->prio)
		return a->prio > b->prio;
	if (sa != sb) /* equal within one queue */
		return sa < sb;
	return a->seq < b->seq;
}

/*
 * The service order between pending jobs @a of queue @qa and @b of queue @qb at
 * @now_usec, the queues' shares as they are: is @a served first? Queue priority plus
 * the age of the job (sched_age_units; 0 without aging), then job priority, then the
 * smaller share used/weight between queues, then submission. Inside one queue the pass
 * serves jobs by job priority then submission (sched_pend_cmp), and the job first in a
 * queue is its oldest of its highest priority: the age moves queues past each other,
 * never a job past another of its own queue. Waiting long makes a job first in line, not
 * a preemptor: preemption is by eff_priority() (a job its age served first is kept from
 * the higher queue's preemption only by resource.preempt_exempt_time). Between queues'
 * first jobs this is sched_serve_key_before(), a total order; over all jobs it is not
 * with aging (a new job of higher job priority becomes its queue's first and brings its
 * own age), so a kept pass is resumed only for jobs that come after what was served
 * since their queue ran out (struct pass_queue_end).
 */
static inline bool sched_serve_before(const struct sched_cluster *c, size_t qa,
				      const struct pend *a, size_t qb, const struct pend *b,
				      uint64_t now_usec)
{
	if (qa == qb)
		return sched_pend_cmp(a, b) < 0;
	return sched_serve_key_before(c, qa, a, qb, b, now_usec);
}

/* Is running job @j within resource.preempt_exempt_time of its start (its last
 * placement or restart) at @now_usec, so no preemption may take it? */
static inline bool sched_preempt_exempt(const struct sched_cluster *c, const struct sched_job *j,
					uint64_t now_usec)
{
	uint64_t exempt = (uint64_t)c->conf->preempt_exempt_sec * 1000000u;

	return exempt && now_usec < j->start_usec + exempt;
}

static inline bool quota_applies(const struct sched_cluster *c, const struct conf_queue *q)
{
	return c->conf->enable_quota_limit && q->quota_npus;
}

/* Would @npus more NPUs keep the queue of @j within its quota, counting @committed NPUs
 * promised to its preemptors whose victims are still stopping? */
static inline bool within_quota(const struct sched_cluster *c, const struct sched_job *j,
			 unsigned npus, unsigned committed)
{
	const struct conf_queue *q = job_queue(c, j);

	return !quota_applies(c, q) ||
	       c->queue_used[j->queue_index] + committed + npus <= q->quota_npus;
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

/* ---- sched_queue.c: queue order, fair share, quotas, pending reasons ---- */

/* "2026-11-30T04:05:06Z" (UTC) into @buf (@len bytes), or "unknown" for UINT64_MAX;
 * returns @buf. */
const char *sched_fmt_time(uint64_t usec, char *buf, size_t len);

/*
 * sched_set_pending() - make @j pending (an event) with the reason @fmt, unless it is
 * pending with that reason already. @key summarizes the reason's inputs: when the job is
 * already pending with the same key the sentence is not formatted again (a pass over
 * 10,000 pending jobs must not print 10,000 strings). Key 0 always formats.
 */
void sched_set_pending(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       uint64_t key, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/*
 * sched_set_pending_shared() - sched_set_pending() for a sentence that @key decides for
 * every job alike (not only for @j: a reason naming who a job waits behind, not one
 * explaining its own placement). The first job given @key in pass @p formats it; the
 * others take the same text (interned) without formatting, comparing or hashing it.
 */
void sched_set_pending_shared(struct pass *p, struct sched_job *j, uint64_t key,
			      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* sched_pass_shared_reasons_free() - release what @p->shared_reason holds. */
void sched_pass_shared_reasons_free(struct pass *p);

/* Is @j already pending for the reason @key stands for? (skip formatting it again) */
bool sched_pending_same(const struct sched_job *j, uint64_t key);

/* Move queue @l's head past jobs that are no longer pending; false when it is empty. */
bool sched_queue_head_valid(struct qlist *l);

/*
 * sched_pend_order_take_new() - for an incremental pass: only the jobs that entered the
 * pending state since the last take, per queue in service order, into *ret_all (new,
 * caller frees; *ret_n entries; ql[q] points into it as with sched_pend_order_take()).
 * Every one must come after where the kept pass left its queue (@qend, one per queue:
 * struct pass_queue_end), with the queues' shares and ages as they are now; otherwise
 * -EAGAIN and nothing is changed: the pass must be a full one. -ENOMEM likewise changes
 * nothing. The kept order is not changed: sched_pend_order_settle_new() does that after
 * the pass.
 */
int sched_pend_order_take_new(struct sched_cluster *c, struct qlist *ql,
			      const struct pass_queue_end *qend, struct pend **ret_all,
			      size_t *ret_n);

/*
 * sched_pend_order_settle_new() - after a pass that sched_pend_order_take_new() fed: the
 * new jobs still pending join the sorted part of their queue's kept order (they come
 * after every job there, which is what take_new checked).
 */
void sched_pend_order_settle_new(struct sched_cluster *c);

/* The queue (index into @ql, @nq entries) whose head job is served next: queue
 * priority, head job priority, smaller share (used/weight), older; SIZE_MAX when no
 * queue is live. */
size_t sched_queue_next(const struct sched_cluster *c, const struct qlist *ql, size_t nq);

/* After queue @queue_index's quota became @npus: the oldest runs fill it, later ones
 * borrow (their borrowing flag and version change). */
void sched_queue_rebalance_borrowing(struct sched_cluster *c, size_t queue_index, unsigned npus);

/* ---- sched_pend_order.c: the service order within a queue, the kept pending order ---- */

/* Sort @n entries of @e by sched_pend_cmp(); @tmp holds @n entries, @count 1002. */
void sched_pend_sort(struct pend *e, size_t n, struct pend *tmp, unsigned *count);

/*
 * sched_pend_order_take() - the pending jobs of every queue in service order, for one
 * pass: *ret_all (new, caller frees; *ret_n entries) holds them queue after queue, and
 * ql[q].jobs / ql[q].n (@ql: conf->queue_count entries) point into it. The order kept in
 * the cluster is compacted on the way (sched_internal.h, sched_pend_order_note).
 * Returns 0, or -ENOMEM with nothing changed but the kept order (then rebuilt).
 */
int sched_pend_order_take(struct sched_cluster *c, struct qlist *ql, struct pend **ret_all,
			  size_t *ret_n);

/* ---- sched_elastic.c: job sizes, elastic growth (also sched_internal.h) ---- */

/* Grow running elastic jobs onto NPUs left free at the end of pass @p. */
void sched_grow_elastic(struct pass *p);

/* ---- sched_backfill.c: reservations, EASY backfill, the capacity index ---- */

/* The capacity index of @p (struct capidx): build from the cluster as it is; free;
 * update for @count slices @sl (sign -1 before they change, +1 after). */
void sched_capidx_build(struct pass *p);
void sched_capidx_free(struct pass *p);
void sched_capidx_slices(struct pass *p, const struct sched_slice *sl, size_t count, int sign);

/* Could @npus fit now on some type of @mask (ignoring reservations)? False is certain. */
bool sched_capidx_may_fit(const struct pass *p, uint32_t mask, unsigned npus);

/* Unmark the reserved NPUs of every reservation of @p (at the end of the pass); mark
 * them again (a kept pass that goes on). */
void sched_resv_unmark_all(struct pass *p);
void sched_resv_mark_all(struct pass *p);

/*
 * Place @j now, keeping clear of reservations: on unreserved NPUs, or on reserved ones
 * when its time_limit ends before every reservation it would touch begins.
 * Returns 0 with the slices (new, caller frees), or -ENOSPC with *ret_delays set when
 * only reserved NPUs would do; *ret_backfill says whether it goes ahead of one.
 */
int sched_place_around(struct pass *p, struct sched_job *j, unsigned hi, struct sched_slice **ret,
		       size_t *ret_count, bool *ret_backfill, const struct resv **ret_delays,
		       char *reason);

/* Give @j the reservation of its server types (EASY: the first blocked job only);
 * NULL when one is held already or it has no placement even when jobs end. */
const struct resv *sched_reserve_for(struct pass *p, struct sched_job *j);

/* Hold for preemptor @j, from @start, the NPUs it gets once the @n jobs @v that stop
 * for it are gone; NULL when other jobs took NPUs it counted on. */
const struct resv *sched_reserve_preempted(struct pass *p, struct sched_job *j,
					   struct sched_job *const *v, size_t n, uint64_t start);

/* Would @j end before some reservation of its server types starts? */
bool sched_may_use_reserved(struct pass *p, const struct sched_job *j);

/* Fill @reason (SCHED_REASON_MAX, when still empty) with what keeps @j from fitting. */
void sched_explain(struct pass *p, const struct sched_job *j, unsigned hi, char *reason);

/* Backfill off: @j holds the line for the server types it needs. */
void sched_hold_line(struct pass *p, const struct sched_job *j);

/* @j waits behind reservation @h: its pending reason says whose and what would help. */
void sched_wait_behind(struct pass *p, struct sched_job *j, const struct resv *h, unsigned need);

/* "a2-node-01, a2-node-02 and 3 more" for @n slices @sl into @buf (@len bytes). */
void sched_describe_slices(const struct sched_cluster *c, const struct sched_slice *sl, size_t n,
			   char *buf, size_t len);

/* ---- sched_preempt.c: victim choice, preemptions in flight ---- */

/* Does victim @j free its NPUs for its preemptor in the pass at @now_usec? */
bool sched_frees_for_preemptor(const struct sched_job *j, uint64_t now_usec);

/* The jobs of p->stopping preempted for @j: p->stopping[*ret_first ...), how many. */
size_t sched_stopping_for(const struct pass *p, const struct sched_job *j, size_t *ret_first);

/* Are jobs preempted for @j still stopping? *ret_deadline: when the last one is done. */
bool sched_has_stopping_for(const struct pass *p, const struct sched_job *j,
			    uint64_t *ret_deadline);

/* Try to preempt running jobs for pending @j (@inq: its queue stays within its quota);
 * true when victims were chosen and are stopping (j's reason says so). */
bool sched_try_preempt(struct pass *p, struct sched_job *j, bool inq);

/* List in p->first the pending preemptors with victims in p->stopping. */
void sched_find_preemptors(struct pass *p);

/* Is @j one of p->first (its turn comes from serve_preemptors)? */
bool sched_is_preemptor_first(const struct pass *p, const struct sched_job *j);

/* Fill p->stopping (sorted by preemptor; p->nstopping counts them on entry) and
 * p->committed from the jobs of the cluster. */
void sched_preempt_collect(struct pass *p);

#endif
