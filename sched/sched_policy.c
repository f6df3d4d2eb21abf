/* SPDX-License-Identifier: MIT */
/*
 * The scheduling pass: queue order and quotas, preemption, EASY backfill, elastic
 * sizes, time limits. The rules are stated at sched_schedule() in ascend_sched.h.
 *
 * Backfill and preemption need "what if" questions (would this job fit if those jobs
 * ended?). They are answered on the real cluster by taking NPUs away from jobs for the
 * length of one question (sim_release) and giving them back (sim_restore) before
 * anything else runs; nothing is visible outside the pass. Reserved NPUs of a backfill
 * reservation are marked `reserved` (not placeable) while the pass runs and unmarked at
 * its end, so a gang never holds NPUs between passes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched_internal.h"

/* Preemption searches per pass: each costs a few placements; the next pass goes on. */
#define PREEMPT_TRIES_PER_PASS 8

/* ---- what-if: take a job's NPUs away for one question, then give them back ---- */

static void sim_release(struct sched_cluster *c, const struct sched_job *j)
{
	for (size_t i = 0; i < j->slice_count; i++) {
		struct sched_server *s = &c->servers[j->slices[i].server];

		for (unsigned k = 0; k < j->slices[i].npu_count; k++)
			s->npus[j->slices[i].device_ids[k]].job = NULL;
		sched_server_recount(s);
	}
}

static void sim_restore(struct sched_cluster *c, struct sched_job *j)
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

/* ---- small helpers ---- */

const struct conf_server_type *sched_job_type(const struct sched_cluster *c,
					      const struct sched_job *j)
{
	if (!j->spec || !j->spec->server_type)
		return NULL;
	for (size_t s = 0; s < c->server_count; s++)
		if (strcmp(c->servers[s].conf->type->name, j->spec->server_type) == 0)
			return c->servers[s].conf->type;
	return NULL;
}

static const struct conf_queue *job_queue(const struct sched_cluster *c,
					  const struct sched_job *j)
{
	return &c->conf->queues[j->queue_index];
}

/* Effective priority: queue priority first, then the job's own (both 0-1000). */
static unsigned eff_priority(const struct sched_cluster *c, const struct sched_job *j)
{
	return job_queue(c, j)->priority * 1001u + j->prio;
}

static bool quota_applies(const struct sched_cluster *c, const struct conf_queue *q)
{
	return c->conf->enable_quota_limit && q->quota_npus;
}

/* Would @npus more NPUs keep the queue of @j within its quota, counting @committed NPUs
 * promised to its preemptors whose victims are still stopping? */
static bool within_quota(const struct sched_cluster *c, const struct sched_job *j,
			 unsigned npus, unsigned committed)
{
	const struct conf_queue *q = job_queue(c, j);

	return !quota_applies(c, q) ||
	       c->queue_used[j->queue_index] + committed + npus <= q->quota_npus;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

/* The time a running or stopping job is expected to give its NPUs back; UINT64_MAX when
 * it has no time_limit. */
uint64_t sched_stop_overhead_usec(const struct sched_cluster *c)
{
	/* the agent notices within one report interval, then SIGTERM, grace, SIGKILL */
	return ((uint64_t)c->conf->stop_grace_sec + c->conf->fault_check_interval_sec) * 1000000u;
}

/* When a running, stopping or pending job @j gives (would give) its NPUs back at the
 * latest: the end of its time_limit plus the time a stop takes; UINT64_MAX without a
 * time_limit. */
static uint64_t expected_end(const struct sched_cluster *c, const struct sched_job *j,
			     uint64_t now_usec)
{
	uint64_t limit, ran;

	if (j->state == SCHED_JOB_STOPPING)
		return j->stop_deadline_usec;
	if (j->state == SCHED_JOB_PENDING) /* what is left, kept on the job's first line */
		return j->limit_left_usec == UINT64_MAX ? UINT64_MAX :
		       now_usec + j->limit_left_usec + sched_stop_overhead_usec(c);
	if (!j->spec || !j->spec->time_limit_sec)
		return UINT64_MAX;
	limit = j->spec->time_limit_sec * 1000000u;
	ran = sched_job_run_usec(j, now_usec);
	return now_usec + (ran < limit ? limit - ran : 0) + sched_stop_overhead_usec(c);
}

/* "2026-11-30T04:05:06Z" (UTC) into @buf, or "unknown" for UINT64_MAX. */
static const char *fmt_time(uint64_t usec, char *buf, size_t len)
{
	time_t t = (time_t)(usec / 1000000u);
	struct tm tm;

	if (usec == UINT64_MAX || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "unknown");
		return buf;
	}
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

/*
 * Set a pending reason. @key summarizes its inputs: when the job is already pending
 * with the same key the sentence is not formatted again (a pass over 10,000 pending jobs
 * must not print 10,000 strings). Key 0 always formats.
 */
static void set_pending(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			uint64_t key, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Is @j already pending for the reason @key stands for? (skip formatting it again) */
static bool pending_same(const struct sched_job *j, uint64_t key)
{
	return key && j->state == SCHED_JOB_PENDING && j->reason_key == mix(key, j->requeue_cause);
}

static void set_pending(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			uint64_t key, const char *fmt, ...)
{
	char body[SCHED_REASON_MAX], full[SCHED_REASON_MAX];
	const char *reason = body;
	va_list ap;

	key = key ? mix(key, j->requeue_cause) : 0;
	if (key && j->state == SCHED_JOB_PENDING && j->reason_key == key)
		return;
	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	/* a job that ran before waits to resume, not to start: say so */
	if (j->requeue_cause == SCHED_REQUEUE_FAULT) {
		snprintf(full, sizeof(full), "recovering from a fault; waits for capacity: %.400s",
			 body);
		reason = full;
	} else if (j->requeue_cause == SCHED_REQUEUE_PREEMPTED) {
		snprintf(full, sizeof(full), "preempted by job \"%s\"; waits to resume from its "
					     "checkpoint: %.380s",
			 j->preempted_by, body);
		reason = full;
	}
	j->reason_key = key;
	if (j->state == SCHED_JOB_PENDING && strcmp(j->reason, reason) == 0)
		return;
	sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec, reason);
}

void sched_queue_usage(const struct sched_cluster *c, size_t queue_index,
		       struct sched_queue_usage *u)
{
	const struct conf_queue *q = &c->conf->queues[queue_index];

	memset(u, 0, sizeof(*u));
	u->used_npus = c->queue_used[queue_index];
	if (quota_applies(c, q) && u->used_npus > q->quota_npus)
		u->borrowed_npus = u->used_npus - q->quota_npus;
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (!j->spec || j->queue_index != queue_index)
			continue;
		u->pending += j->state == SCHED_JOB_PENDING;
		u->running += j->state == SCHED_JOB_RUNNING || j->state == SCHED_JOB_RECOVERING;
		u->stopping += j->state == SCHED_JOB_STOPPING;
	}
}

/* ---- sizes (elastic jobs) ---- */

/* NPUs per parallel group: elastic sizes must stay multiples of tp * pp. */
static unsigned size_unit(const struct conf_job_spec *sp)
{
	return (sp->tp ? sp->tp : 1) * (sp->pp ? sp->pp : 1);
}

/* Is @size legal for @sp on server type @t (HCCS rule, whole servers, tp * pp)? */
static bool size_ok(const struct conf_job_spec *sp, const struct conf_server_type *t,
		    unsigned size)
{
	if (size == 0 || size % size_unit(sp))
		return false;
	return size <= t->npu_count ? sched_size_is_legal(t, size) : size % t->npu_count == 0;
}

unsigned sched_elastic_min(const struct sched_cluster *c, const struct conf_job_spec *sp,
			   const struct conf_server_type *type)
{
	unsigned total = 0;

	for (size_t i = 0; i < c->server_count; i++)
		if (!type || c->servers[i].conf->type == type)
			total += c->servers[i].conf->npu_count;
	for (unsigned size = sp->npus_min; size <= sp->npus_max && size <= total; size++)
		for (size_t t = 0; t < c->type_count; t++) {
			const struct conf_server_type *ty = c->types[t];
			char why[SCHED_REASON_MAX];

			if ((type && ty != type) || !size_ok(sp, ty, size))
				continue;
			if (sched_check_feasible(c, size, ty, why) == 0)
				return size;
		}
	return 0;
}

static bool size_fits_some_type(const struct sched_cluster *c, const struct sched_job *j,
				const struct conf_server_type *want, unsigned size)
{
	for (size_t t = 0; t < c->type_count; t++)
		if ((!want || c->types[t] == want) && size_ok(j->spec, c->types[t], size))
			return true;
	return false;
}

size_t sched_place_sizes(const struct sched_cluster *c, const struct sched_job *j, unsigned lo,
			 unsigned hi, unsigned *out, size_t max)
{
	const struct conf_server_type *want = sched_job_type(c, j);
	unsigned bound = 0, total = 0, whole[16] = { 0 }, most[16] = { 0 };
	size_t n = 0;

	/* no size above what is free now can fit: start there, not at a huge max */
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];
		size_t t;

		if (want && s->conf->type != want)
			continue;
		for (t = 0; t < c->type_count && c->types[t] != s->conf->type; t++)
			;
		total += s->conf->npu_count;
		if (t == c->type_count || !sched_server_is_schedulable(c, s))
			continue;
		if (sched_server_is_whole_free(c, (unsigned)i, s->conf->type))
			whole[t]++;
		if (s->npus_free > most[t])
			most[t] = s->npus_free;
	}
	for (size_t t = 0; t < c->type_count; t++) {
		unsigned b = whole[t] > 1 ? whole[t] * c->types[t]->npu_count : most[t];

		if (b > bound)
			bound = b;
	}
	if (hi > total)
		hi = total;
	/* the smallest legal size: when nothing bigger can fit it is the one to try, and its
	 * failure is the reason the job waits */
	while (lo <= hi && !size_fits_some_type(c, j, want, lo))
		lo++;
	if (lo > hi || max == 0)
		return 0;
	if (bound < lo)
		hi = lo;
	else if (hi > bound)
		hi = bound;
	for (unsigned size = hi; size >= lo && size > 0 && n < max; size--)
		if (size_fits_some_type(c, j, want, size))
			out[n++] = size;
	if (n == max && out[n - 1] != lo)
		out[n - 1] = lo;
	return n;
}

int sched_place_job(const struct sched_cluster *c, const struct sched_job *j, unsigned hi,
		    struct sched_slice **ret_slices, size_t *ret_count, char *reason)
{
	const struct conf_server_type *type = sched_job_type(c, j);
	unsigned sizes[64];
	size_t n;
	int r = -ENOSPC;

	if (j->spec->npus_min == j->spec->npus_max || hi <= j->spec->npus_min)
		return sched_place_now(c, j->spec->npus_min, type, ret_slices, ret_count, reason);
	n = sched_place_sizes(c, j, j->spec->npus_min, hi, sizes, 64);
	for (size_t i = 0; i < n; i++) {
		/* the reason of the smallest size is the one that explains the wait */
		r = sched_place_now(c, sizes[i], type, ret_slices, ret_count, reason);
		if (r != -ENOSPC)
			return r;
	}
	return r;
}

/* ---- the pass ---- */

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
	uint64_t seq;
	struct sched_job *job;
};

struct pass {
	struct sched_cluster *c;
	uint64_t now;
	struct resv resv[32];
	size_t nresv;
	uint32_t resv_mask;		/* server types covered by a reservation */
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
	 * (frees_for_preemptor), sorted by preemptor */
	struct sched_job **stopping;
	size_t nstopping;
	/* their pending preemptors, by priority (find_preemptors) */
	struct pend *first;
	size_t nfirst, next_first;
	/* lowest effective priority among running jobs, and whether any borrow */
	unsigned min_running_prio;
	bool any_borrowing;
	bool any_elastic;		/* a running job may grow */
	/* sched_fits_when_idle() answers: the cluster's usable capacity is fixed in a pass */
	struct { unsigned need; uint32_t mask; bool fits, used; } idle_cache[256];
};

static void idx_put(struct pass *p, size_t i, int sign)
{
	struct sched_cluster *c = p->c;
	const struct sched_server *s = &c->servers[i];
	int t = p->idx.type_of[i];

	if (t < 0)
		return;
	if (sign > 0) {
		bool accepts = sched_server_is_schedulable(c, s) &&
			       (c->conf->allow_mix_task || s->jobs_running == 0);

		p->idx.free_of[i] = (unsigned char)(accepts ? s->npus_free : 0);
		p->idx.whole_of[i] = accepts && s->jobs_running == 0 &&
				     p->idx.free_of[i] == s->conf->npu_count;
		p->idx.hist[t][p->idx.free_of[i]]++;
		p->idx.whole[t] += p->idx.whole_of[i];
	} else {
		p->idx.hist[t][p->idx.free_of[i]]--;
		p->idx.whole[t] -= p->idx.whole_of[i];
	}
}

static void idx_build(struct pass *p)
{
	struct sched_cluster *c = p->c;
	size_t n = c->server_count ? c->server_count : 1;

	p->idx.free_of = calloc(n, 1);
	p->idx.whole_of = calloc(n, sizeof(bool));
	p->idx.type_of = calloc(n, 1);
	if (!p->idx.free_of || !p->idx.whole_of || !p->idx.type_of)
		return; /* without the index every job takes the slow path */
	for (size_t i = 0; i < c->server_count; i++) {
		const struct conf_server_type *t = c->servers[i].conf->type;
		size_t k;

		for (k = 0; k < p->ntypes && p->types[k] != t; k++)
			;
		if (k == p->ntypes && p->ntypes < 32)
			p->types[p->ntypes++] = t;
		p->idx.type_of[i] = (signed char)(k < 32 ? (int)k : -1);
		idx_put(p, i, +1);
	}
	p->idx_ok = true;
}

static void idx_free(struct pass *p)
{
	free(p->idx.free_of);
	free(p->idx.whole_of);
	free(p->idx.type_of);
}

static void idx_slices(struct pass *p, const struct sched_slice *sl, size_t count, int sign)
{
	if (!p->idx_ok)
		return;
	for (size_t i = 0; i < count; i++)
		idx_put(p, sl[i].server, sign);
}

/* Could @npus fit now on some type of @mask (ignoring reservations)? False is certain. */
static bool idx_may_fit(const struct pass *p, uint32_t mask, unsigned npus)
{
	if (!p->idx_ok)
		return true;
	for (size_t t = 0; t < p->ntypes; t++) {
		unsigned per = p->types[t]->npu_count;

		if (!(mask & (1u << t)))
			continue;
		if (npus <= per) {
			for (unsigned f = npus; f <= CONF_SERVER_NPUS_MAX; f++)
				if (p->idx.hist[t][f])
					return true;
		} else if (p->idx.whole[t] >= npus / per) {
			return true;
		}
	}
	return false;
}

static void mark_reserved(struct pass *p, const struct resv *r, bool on)
{
	struct sched_cluster *c = p->c;

	for (size_t i = 0; i < r->count; i++) {
		struct sched_server *s = &c->servers[r->slices[i].server];

		if (p->idx_ok)
			idx_put(p, r->slices[i].server, -1);
		for (unsigned k = 0; k < r->slices[i].npu_count; k++) {
			struct sched_npu *n = &s->npus[r->slices[i].device_ids[k]];

			/* held ones too: a preemption must not free them for someone else */
			n->reserved = on;
		}
		sched_server_recount(s);
		if (p->idx_ok)
			idx_put(p, r->slices[i].server, +1);
	}
}

static void unmark_all(struct pass *p)
{
	for (size_t i = 0; i < p->nresv; i++)
		mark_reserved(p, &p->resv[i], false);
}

static void mark_all(struct pass *p)
{
	for (size_t i = 0; i < p->nresv; i++)
		mark_reserved(p, &p->resv[i], true);
}

static void start_job(struct pass *p, struct sched_job *j, struct sched_slice *slices,
		      size_t count, bool borrowing, bool backfilled)
{
	struct sched_cluster *c = p->c;
	unsigned npus = 0;
	char reason[SCHED_REASON_MAX];

	for (size_t i = 0; i < count; i++)
		npus += slices[i].npu_count;
	idx_slices(p, slices, count, -1);
	sched_alloc_apply(c, j, slices, count);
	idx_slices(p, slices, count, +1);
	j->sched_port = sched_pick_port(c, j, slices[0].server);
	j->borrowing = borrowing;
	j->requeue_cause = SCHED_REQUEUE_NONE;
	j->reason_key = 0;
	sched_job_begin_generation(c, j, p->now);
	c->backfilled += backfilled;
	if (eff_priority(c, j) < p->min_running_prio)
		p->min_running_prio = eff_priority(c, j);
	p->any_borrowing |= borrowing;
	sched_reason(reason, "placed on %zu server%s (%u %s), generation %u%s%s", count,
		     count == 1 ? "" : "s", npus, conf_plural(npus, "NPU", "NPUs"), j->generation,
		     borrowing ? "; borrowing idle NPUs beyond its queue's quota" : "",
		     backfilled ? "; backfilled ahead of a reservation it does not delay" : "");
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_PLACED, p->now, reason);
	p->placed++;
}

/*
 * Place @j now, keeping clear of reservations: on unreserved NPUs, or on reserved ones
 * when its time_limit ends before every reservation it would touch begins.
 * Returns 0 with the slices, or -ENOSPC with *ret_delays set when only reserved NPUs
 * would do.
 */
static int place_around(struct pass *p, struct sched_job *j, unsigned hi,
			struct sched_slice **ret, size_t *ret_count, bool *ret_backfill,
			const struct resv **ret_delays, char *reason)
{
	struct sched_cluster *c = p->c;
	struct sched_slice *sl;
	size_t n;
	uint64_t end;
	bool opened = false;
	int r;

	*ret_backfill = false;
	*ret_delays = NULL;
	r = sched_place_job(c, j, hi, &sl, &n, reason);
	if (r == 0) {
		*ret = sl;
		*ret_count = n;
		*ret_backfill = (p->resv_mask & j->type_mask) != 0;
		return 0;
	}
	if (r != -ENOSPC || !p->nresv || !(p->resv_mask & j->type_mask))
		return r;
	/* on reserved NPUs only if it is done before they are needed (a pending job's
	 * expected end is now + what is left of its time_limit; none: never) */
	end = expected_end(p->c, j, p->now);
	for (size_t i = 0; i < p->nresv; i++) {
		if (!(p->resv[i].mask & j->type_mask))
			continue;
		/* an unknown start may come at any moment: keep off those NPUs */
		if (end > p->resv[i].start || p->resv[i].start == UINT64_MAX) {
			if (!*ret_delays)
				*ret_delays = &p->resv[i];
		} else {
			mark_reserved(p, &p->resv[i], false);
			opened = true;
		}
	}
	if (!opened)
		return -ENOSPC;
	r = sched_place_job(c, j, hi, &sl, &n, reason);
	mark_all(p);
	if (r == 0) {
		*ret = sl;
		*ret_count = n;
		*ret_backfill = true;
		*ret_delays = NULL;
	}
	return r;
}

/* ---- reservations (EASY backfill) ---- */

struct holder {
	struct sched_job *job;
	uint64_t end;
};

static int holder_cmp(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;

	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	/* without a limit: the oldest run is taken to end first */
	if (x->job->start_usec != y->job->start_usec)
		return x->job->start_usec < y->job->start_usec ? -1 : 1;
	return x->job->serial < y->job->serial ? -1 : x->job->serial > y->job->serial;
}

/*
 * When, and on which NPUs, could @j start if running jobs ended at their expected ends?
 * Fills @out (slices owned) and returns 0, or -ENOSPC / -ENOMEM.
 */
static int compute_reservation(struct pass *p, struct sched_job *j, struct resv *out)
{
	struct sched_cluster *c = p->c;
	const struct conf_server_type *type = sched_job_type(c, j);
	struct holder *h;
	size_t nh = 0, released = 0;
	struct sched_slice *sl = NULL;
	size_t n = 0;
	char why[SCHED_REASON_MAX];
	int r = -ENOSPC;

	h = malloc((c->job_count ? c->job_count : 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *o = c->jobs[i];

		if (o->slice_count && o != j)
			h[nh++] = (struct holder){ o, expected_end(c, o, p->now) };
	}
	qsort(h, nh, sizeof(*h), holder_cmp);
	unmark_all(p);
	while (released < nh) {
		const struct sched_job *o = h[released].job;
		bool maybe = false;

		sim_release(c, o);
		released++;
		/* jobs ending at the same moment go together */
		if (released < nh && h[released].end == h[released - 1].end &&
		    h[released].end != UINT64_MAX)
			continue;
		/* a fit can only appear on servers that just changed */
		for (size_t k = 0; k < o->slice_count && !maybe; k++) {
			unsigned s = o->slices[k].server;

			maybe = j->spec->npus_min > c->servers[s].conf->npu_count ?
					sched_server_is_whole_free(c, s, type) :
					sched_server_can_hold(c, s, j->spec->npus_min, type);
		}
		if (!maybe)
			continue;
		r = sched_place_now(c, j->spec->npus_min, type, &sl, &n, why);
		if (r != -ENOSPC)
			break;
	}
	for (size_t i = 0; i < released; i++)
		sim_restore(c, h[i].job);
	mark_all(p);
	if (r == 0) {
		out->job = j;
		out->start = h[released - 1].end;
		out->mask = j->type_mask;
		out->slices = sl;
		out->count = n;
	}
	free(h);
	return r;
}

static void describe_slices(const struct sched_cluster *c, const struct sched_slice *sl,
			    size_t n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off + 1 < len; i++) {
		if (i == 3) {
			snprintf(buf + off, len - off, " and %zu more", n - 3);
			return;
		}
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
					c->servers[sl[i].server].conf->name);
	}
}

/* ---- preemption ---- */

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
	if (eff_priority(c, v) < eff_priority(c, pre))
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
	r = sched_place_now(c, j->spec->npus_min, sched_job_type(c, j), ret, ret_count, why);
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
	if (r < 0 || !best.n) {
		free(best.v);
		return r < 0 ? r : -ENOSPC;
	}
	*out = best;
	return 0;
}

/*
 * Does victim @j free its NPUs for its preemptor in the pass at @now_usec: it is stopping
 * for it, or it stopped at this instant (the pass in which the preemptor is to start)?
 */
static bool frees_for_preemptor(const struct sched_job *j, uint64_t now_usec)
{
	if (j->state == SCHED_JOB_STOPPING)
		return j->stop_to == SCHED_JOB_PENDING;
	return j->state == SCHED_JOB_PENDING && j->requeue_cause == SCHED_REQUEUE_PREEMPTED &&
	       j->preempted_by_serial && j->change_usec == now_usec;
}

/* The jobs of p->stopping preempted for @j: p->stopping[*ret_first ...), how many. */
static size_t stopping_for(const struct pass *p, const struct sched_job *j, size_t *ret_first)
{
	size_t lo = 0, hi = p->nstopping, n = 0;

	/* p->stopping is sorted by preemptor serial: find the first of j's */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->stopping[mid]->preempted_by_serial < j->serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + n < p->nstopping && p->stopping[lo + n]->preempted_by_serial == j->serial)
		n++;
	*ret_first = lo;
	return n;
}

/* Are jobs preempted for @j still stopping? *ret_deadline: when the last one is done. */
static bool has_stopping_for(const struct pass *p, const struct sched_job *j,
			     uint64_t *ret_deadline)
{
	size_t first, n = stopping_for(p, j, &first);
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
 * Hold for preemptor @j, from @start, the NPUs it gets once the @n jobs @v that stop
 * for it are gone: the placement keeps off NPUs other reservations hold. Unlike
 * reserve_for() this does not yield to an earlier reservation of a server type @j may
 * use (the first blocked job of another type): without it, backfill hands the NPUs the
 * preemption counted on (its victims' included, once they have stopped) to other
 * jobs, the victims first, and @j preempts again when they have stopped. Returns the
 * reservation, or NULL (no placement: other jobs took NPUs it counted on).
 */
static const struct resv *reserve_preempted(struct pass *p, struct sched_job *j,
					    struct sched_job *const *v, size_t n, uint64_t start)
{
	struct sched_cluster *c = p->c;
	struct resv *rv = &p->resv[p->nresv];
	char why[SCHED_REASON_MAX];
	int r;

	if (p->nresv >= 32)
		return NULL;
	for (size_t i = 0; i < n; i++)
		sim_release(c, v[i]);
	r = sched_place_now(c, j->spec->npus_min, sched_job_type(c, j), &rv->slices, &rv->count,
			    why);
	for (size_t i = 0; i < n; i++)
		sim_restore(c, v[i]);
	if (r < 0)
		return NULL;
	rv->job = j;
	rv->start = start;
	rv->mask = j->type_mask;
	p->nresv++;
	p->resv_mask |= rv->mask;
	mark_reserved(p, rv, true);
	j->reserved_start_usec = rv->start;
	return rv;
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

static bool try_preempt(struct pass *p, struct sched_job *j, bool inq)
{
	struct sched_cluster *c = p->c;
	struct victims vs = { 0 };
	typeof(p->preempt_failed[0]) *slot;
	char names[SCHED_REASON_MAX], when[40];
	size_t off = 0;
	unsigned npus = 0;
	uint64_t deadline = 0;

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
	if (!preempt_possible(p, j, inq) ||
	    (p->preempt_tries++, choose_victims(p, j, inq, &vs) < 0) || vs.n == 0) {
		if (!slot->used || slot->need != j->need_min || slot->mask != j->type_mask ||
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
		snprintf(v->preempted_by, sizeof(v->preempted_by), "%s", j->name);
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
	set_pending(c, j, p->now, 0,
		    "preempting %zu job%s (%.200s; %u %s); starts when they have stopped, by %s",
		    vs.n, vs.n == 1 ? "" : "s", names, npus, conf_plural(npus, "NPU", "NPUs"),
		    fmt_time(deadline, when, sizeof(when)));
	reserve_preempted(p, j, vs.v, vs.n, deadline);
	free(vs.v);
	return true;
}

/* Give @j the reservation of its server types (EASY: the first blocked job only). */
static const struct resv *reserve_for(struct pass *p, struct sched_job *j)
{
	struct resv *rv = &p->resv[p->nresv];

	if ((p->resv_mask & j->type_mask) || p->nresv >= 32 ||
	    compute_reservation(p, j, rv) < 0)
		return NULL;
	p->nresv++;
	p->resv_mask |= rv->mask;
	mark_reserved(p, rv, true);
	j->reserved_start_usec = rv->start;
	return rv;
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

/* ---- one job of the pass ---- */

/* Would @j end before some reservation of its server types starts (so it may use those
 * NPUs)? */
static bool may_use_reserved(const struct pass *p, const struct sched_job *j)
{
	uint64_t latest = 0, end;

	/* the latest known start first: most jobs are rejected without reading more */
	for (size_t i = 0; i < p->nresv; i++)
		if ((p->resv[i].mask & j->type_mask) && p->resv[i].start != UINT64_MAX &&
		    p->resv[i].start > latest)
			latest = p->resv[i].start;
	if (!latest || j->limit_left_usec == UINT64_MAX)
		return false;
	end = expected_end(p->c, j, p->now);
	for (size_t i = 0; i < p->nresv; i++)
		if ((p->resv[i].mask & j->type_mask) && p->resv[i].start != UINT64_MAX &&
		    end <= p->resv[i].start)
			return true;
	return false;
}

/* Fill @reason (when still empty) with what keeps @j from fitting now. */
static void explain(struct pass *p, const struct sched_job *j, unsigned hi, char *reason)
{
	struct sched_slice *tmp;
	size_t n;

	if (reason[0])
		return;
	/* reservations are not the reason here: ask about the NPUs as they are */
	unmark_all(p);
	if (sched_place_job(p->c, j, hi, &tmp, &n, reason) == 0) {
		free(tmp);
		sched_reason(reason, "needs %u NPU%s that are held for a reservation",
			     j->spec->npus_min, j->spec->npus_min == 1 ? "" : "s");
	}
	mark_all(p);
}

/* backfill off: @j holds the line for the server types it needs */
static void hold_line(struct pass *p, const struct sched_job *j)
{
	if (p->c->conf->backfill)
		return;
	p->blocked |= j->type_mask;
	for (unsigned t = 0; t < 32; t++)
		if ((j->type_mask & (1u << t)) && !p->blocker_of[t])
			p->blocker_of[t] = j;
}

/* Reason keys: what a reason depends on, without formatting it. */
enum { KEY_QUOTA = 1, KEY_BEHIND, KEY_NOROOM, KEY_RESV, KEY_STOPPING, KEY_BORROW };

/* @j waits behind reservation @h: say whose, from when, and what would let it start. */
static void wait_behind(struct pass *p, struct sched_job *j, const struct resv *h,
			unsigned need)
{
	/*
	 * The reservation's start is not part of the reason: it moves whenever a running job
	 * ends, and re-rendering (and announcing) the reason of every job waiting behind it
	 * then cost a pass with 10,000 waiting jobs over 10 ms. The holder's status.json
	 * (reserved_start) says when.
	 */
	uint64_t key = mix(mix(mix(mix(KEY_RESV, h->job->serial), need), h->start == UINT64_MAX),
			   j->spec->time_limit_sec);

	if (pending_same(j, key))
		return;
	set_pending(p->c, j, p->now, key,
		    "waiting behind job \"%s\", first in line with NPUs reserved %s: needs %u "
		    "NPU%s and none are free outside that reservation; %s",
		    h->job->name, h->start == UINT64_MAX ? "until running jobs without a "
							    "time_limit end" :
							    "(its status.json says from when)",
		    need, need == 1 ? "" : "s",
		    h->start == UINT64_MAX ? "it starts when they do" :
		    j->spec->time_limit_sec ? "its time_limit runs past that start" :
		    "with a time_limit that ends before then it could start at once");
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

	own = p->committed && has_stopping_for(p, j, &deadline);
	others = p->committed ? p->committed[j->queue_index] - (own ? need : 0) : 0;
	inq = within_quota(c, j, need, others);
	if (!inq && !q->may_borrow) {
		if (need > q->quota_npus)
			set_pending(c, j, p->now, mix(mix(KEY_QUOTA, need), q->quota_npus),
				    "queue %s now has a quota of %u %s and this job needs %u; it "
				    "waits until root raises the quota (queues/%s/quota), or "
				    "cancel it",
				    q->name, q->quota_npus, conf_plural(q->quota_npus, "NPU", "NPUs"),
				    need, q->name);
		else
			set_pending(c, j, p->now,
				    mix(mix(KEY_QUOTA, c->queue_used[j->queue_index]),
					q->quota_npus),
				    "queue %s uses %u of %u %s; job needs %u", q->name,
				    c->queue_used[j->queue_index], q->quota_npus,
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
		set_pending(c, j, p->now, mix(KEY_BEHIND, b->serial),
			    "waiting behind job \"%s\" (first in line for the same servers; "
			    "jobs start in priority then submission order)", b->name);
		p->waiting_mask |= j->type_mask;
		return;
	}
	/* no sentence is written while trying: most waiting jobs never need theirs */
	if (idx_may_fit(p, j->type_mask, need) || may_use_reserved(p, j)) {
		r = place_around(p, j, hi, &sl, &n, &backfill, &delays, NULL);
		if (r == 0) {
			start_job(p, j, sl, n, !inq, backfill);
			return;
		}
		if (r != -ENOSPC) /* -ENOMEM: the next pass retries */
			return;
	}
	reason[0] = '\0';
	p->waiting_mask |= j->type_mask;
	if (borrow_phase && !inq) {
		set_pending(c, j, p->now, mix(mix(KEY_BORROW, c->queue_used[j->queue_index]),
					      q->quota_npus),
			    "queue %s uses %u of %u %s; job needs %u and may borrow only idle "
			    "NPUs, and none fit",
			    q->name, c->queue_used[j->queue_index], q->quota_npus,
			    conf_plural(q->quota_npus, "NPU", "NPUs"), need);
		return;
	}
	/* victims of an earlier pass are still stopping for this job */
	if (own) {
		size_t first, nv = stopping_for(p, j, &first);

		hold_line(p, j);
		if (!pending_same(j, mix(KEY_STOPPING, deadline)))
			set_pending(c, j, p->now, mix(KEY_STOPPING, deadline),
				    "waiting for the jobs it preempted to stop, by %s",
				    fmt_time(deadline, when, sizeof(when)));
		/* nothing else takes its place meanwhile */
		if (!reserve_preempted(p, j, &p->stopping[first], nv, deadline))
			reserve_for(p, j);
		return;
	}
	if (try_preempt(p, j, inq)) {
		hold_line(p, j);
		reserve_for(p, j); /* when try_preempt could not hold its placement */
		return;
	}
	if (!fits_when_idle(p, j)) {
		explain(p, j, hi, reason);
		set_pending(c, j, p->now, 0, "%.300s; it cannot fit until cordoned, unreachable "
					     "or isolated capacity returns, so jobs behind it may "
					     "start", reason);
		return;
	}
	if (!c->conf->backfill) {
		hold_line(p, j);
		explain(p, j, hi, reason);
		set_pending(c, j, p->now, 0, "%s", reason);
		return;
	}
	if (delays) {
		wait_behind(p, j, delays, need);
		return;
	}
	if (!(p->resv_mask & j->type_mask)) {
		const struct resv *rv = reserve_for(p, j);
		char where[200];

		if (rv) {
			explain(p, j, hi, reason);
			describe_slices(c, rv->slices, rv->count, where, sizeof(where));
			if (rv->start == UINT64_MAX)
				set_pending(c, j, p->now, 0,
					    "%.200s; first in line: %s reserved for it, from when "
					    "running jobs end (some have no time_limit)",
					    reason, where);
			else
				set_pending(c, j, p->now, 0,
					    "%.200s; first in line: %s reserved for it from %s "
					    "(running jobs' time limits)",
					    reason, where, fmt_time(rv->start, when, sizeof(when)));
			return;
		}
	}
	{
		const struct resv *h = NULL;

		for (size_t i = 0; i < p->nresv && !h; i++)
			if (p->resv[i].mask & j->type_mask)
				h = &p->resv[i];
		if (h) {
			wait_behind(p, j, h, need);
		} else if (!pending_same(j, mix(KEY_NOROOM, need))) {
			explain(p, j, hi, reason);
			set_pending(c, j, p->now, mix(KEY_NOROOM, need), "%s", reason);
		}
	}
}

/* ---- elastic growth ---- */

static void grow_elastic(struct pass *p)
{
	struct sched_cluster *c = p->c;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		unsigned cur, hi, sizes[64];
		size_t ns;

		if (j->state != SCHED_JOB_RUNNING || !j->spec ||
		    j->spec->npus_min == j->spec->npus_max || (j->type_mask & p->waiting_mask) ||
		    j->borrowing)
			continue;
		cur = sched_job_total_npus(j);
		hi = j->spec->npus_max;
		if (cur >= hi)
			continue;
		/* every resize restarts the job from a checkpoint: not at every freed NPU */
		if (p->now < j->generation_usec +
				     (uint64_t)c->conf->elastic_grow_delay_sec * 1000000u)
			continue;
		if (quota_applies(c, job_queue(c, j))) {
			unsigned q = job_queue(c, j)->quota_npus;
			/* what the queue's other jobs hold, and what its preemptors were promised */
			unsigned others = c->queue_used[j->queue_index] - cur +
					  (p->committed ? p->committed[j->queue_index] : 0);

			if (others >= q || q - others <= cur)
				continue;
			if (hi > q - others)
				hi = q - others;
		}
		sim_release(c, j);
		ns = sched_place_sizes(c, j, cur + 1, hi, sizes, 64);
		sim_restore(c, j);
		for (size_t k = 0; k < ns; k++) {
			struct sched_slice *sl;
			size_t n;
			char why[SCHED_REASON_MAX], reason[SCHED_REASON_MAX];
			int r;

			sim_release(c, j);
			r = sched_place_now(c, sizes[k], sched_job_type(c, j), &sl, &n, why);
			sim_restore(c, j);
			if (r < 0)
				continue;
			idx_slices(p, j->slices, j->slice_count, -1);
			sched_alloc_release(c, j);
			sched_alloc_apply(c, j, sl, n);
			idx_slices(p, sl, n, +1);
			j->sched_port = sched_pick_port(c, j, sl[0].server);
			sched_job_begin_generation(c, j, p->now);
			c->resizes++;
			sched_reason(reason, "grew from %u to %u NPUs (elastic, max %u) on freed "
					     "capacity; generation %u resumes from its checkpoint",
				     cur, sizes[k], j->spec->npus_max, j->generation);
			sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_RESIZED, p->now,
					     reason);
			break;
		}
	}
}

/* ---- service order ---- */

static int by_preemptor(const void *a, const void *b)
{
	uint64_t x = (*(struct sched_job *const *)a)->preempted_by_serial;
	uint64_t y = (*(struct sched_job *const *)b)->preempted_by_serial;

	return x < y ? -1 : x > y;
}

static int fifo_cmp(const void *a, const void *b)
{
	const struct pend *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct qlist {
	struct pend *jobs;
	size_t n, next;
	bool live;		/* jobs[next] is a pending job */
};

/* Which queue serves next: queue priority, head job priority, smaller share, older. */
static bool queue_before(const struct sched_cluster *c, const struct qlist *ql, size_t a,
			 size_t b)
{
	const struct conf_queue *qa = &c->conf->queues[a], *qb = &c->conf->queues[b];
	const struct pend *ja = &ql[a].jobs[ql[a].next], *jb = &ql[b].jobs[ql[b].next];
	uint64_t sa, sb;

	if (qa->priority != qb->priority)
		return qa->priority > qb->priority;
	if (ja->prio != jb->prio)
		return ja->prio > jb->prio;
	/* used/weight, compared without division */
	sa = (uint64_t)c->queue_used[a] * qb->weight;
	sb = (uint64_t)c->queue_used[b] * qa->weight;
	if (sa != sb)
		return sa < sb;
	return ja->seq < jb->seq;
}

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
	own = has_stopping_for(p, j, &dl);
	committed = p->committed ? p->committed[j->queue_index] : 0;
	return within_quota(p->c, j, need, committed - (own && committed >= need ? need : 0));
}

/* Move queue @l's head past jobs that are no longer pending; false when it is empty. */
static bool head_valid(struct qlist *l)
{
	while (l->next < l->n && l->jobs[l->next].job->state != SCHED_JOB_PENDING)
		l->next++;
	return l->next < l->n;
}

/*
 * Preemptions in flight come first among the jobs of their priority: a preemptor whose
 * victims are stopping, or stopped at this instant, was promised their NPUs (and the free
 * ones it counted on) when it chose them. In queue order its turn may come after a job
 * of the same priority (of a queue whose share the stop just made the smaller) that
 * reserves those NPUs; the victims are backfilled there, and it preempts them again at
 * the next pass. A job of higher priority still goes first, and takes the NPUs if it
 * fits. find_preemptors() lists them (p->first, highest priority first); serve() gives
 * them their turn before the first job of no higher priority.
 */
static void find_preemptors(struct pass *p)
{
	struct sched_cluster *c = p->c;
	size_t first;

	p->first = malloc(p->nstopping * sizeof(*p->first));
	if (!p->first)
		return; /* they wait their turn in the queues */
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		if (j->state != SCHED_JOB_PENDING || !j->spec || !stopping_for(p, j, &first))
			continue;
		p->first[p->nfirst++] = (struct pend){ eff_priority(c, j), j->queue_seq, j };
	}
	qsort(p->first, p->nfirst, sizeof(*p->first), fifo_cmp);
}

/* Is @j one of p->first (its turn comes from serve_preemptors)? */
static bool is_preemptor_first(const struct pass *p, const struct sched_job *j)
{
	size_t first;

	return p->first && stopping_for(p, j, &first);
}

/* The turn of the preemptors in flight of priority @prio or higher. */
static void serve_preemptors(struct pass *p, struct qlist *ql, unsigned prio)
{
	while (p->next_first < p->nfirst && p->first[p->next_first].prio >= prio) {
		struct sched_job *j = p->first[p->next_first++].job;

		if (j->state != SCHED_JOB_PENDING)
			continue;
		consider(p, j, false);
		ql[j->queue_index].live = head_valid(&ql[j->queue_index]);
	}
}

static void serve(struct pass *p, struct qlist *ql, size_t nq, bool borrow_phase)
{
	struct sched_cluster *c = p->c;

	/* only the queue just served moves (and those of preemptors served before it): a
	 * pass changes no other pending job's state */
	for (size_t i = 0; i < nq; i++) {
		ql[i].next = 0;
		ql[i].live = head_valid(&ql[i]);
	}
	for (;;) {
		size_t best = SIZE_MAX;
		struct sched_job *j;

		for (size_t i = 0; i < nq; i++)
			if (ql[i].live && (best == SIZE_MAX || queue_before(c, ql, i, best)))
				best = i;
		if (best == SIZE_MAX)
			break;
		j = ql[best].jobs[ql[best].next++].job;
		if (borrow_phase) {
			if (!had_turn(p, j))
				consider(p, j, true);
		} else {
			serve_preemptors(p, ql, eff_priority(c, j));
			if (!is_preemptor_first(p, j))
				consider(p, j, false);
		}
		ql[best].live = head_valid(&ql[best]);
	}
}

/*
 * Sort @n entries by priority (high first), then submission: a stable counting sort by
 * priority (0-1000) keeps the jobs' list order, which is nearly submission order, and an
 * insertion pass fixes the rest; qsort when that would be long.
 */
static void sort_pending(struct pend *e, size_t n, struct pend *tmp, unsigned *count)
{
	size_t moves = 0;

	memset(count, 0, 1002 * sizeof(*count));
	for (size_t i = 0; i < n; i++)
		count[1000 - (e[i].prio > 1000 ? 1000 : e[i].prio) + 1]++;
	for (size_t k = 1; k < 1002; k++)
		count[k] += count[k - 1];
	for (size_t i = 0; i < n; i++)
		tmp[count[1000 - (e[i].prio > 1000 ? 1000 : e[i].prio)]++] = e[i];
	memcpy(e, tmp, n * sizeof(*e));
	for (size_t i = 1; i < n; i++) {
		struct pend x = e[i];
		size_t k = i;

		while (k > 0 && fifo_cmp(&e[k - 1], &x) > 0) {
			e[k] = e[k - 1];
			k--;
			if (++moves > 4 * n + 64) {
				e[k] = x;
				qsort(e, n, sizeof(*e), fifo_cmp);
				return;
			}
		}
		e[k] = x;
	}
}

unsigned sched_schedule(struct sched_cluster *c, uint64_t now_usec)
{
	struct pass *p;
	struct qlist *ql;
	struct pend *all;
	size_t nq = c->conf->queue_count, n = 0;
	unsigned placed;

	p = calloc(1, sizeof(*p));
	ql = calloc(nq ? nq : 1, sizeof(*ql));
	if (!p || !ql) {
		free(p);
		free(ql);
		return 0; /* the next pass retries; nothing was changed */
	}
	p->c = c;
	p->now = now_usec;
	p->min_running_prio = UINT32_MAX;
	sched_place_begin(c, now_usec); /* suspect servers are the last choice (sched_health.c) */
	/* one sweep over the jobs: what the pass needs to know up front */
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		switch (j->state) {
		case SCHED_JOB_PENDING:
			n++;
			ql[j->queue_index].n++;
			/* reservations last one pass: this pass says again who holds one */
			j->reserved_start_usec = 0;
			p->nstopping += frees_for_preemptor(j, now_usec);
			break;
		case SCHED_JOB_RUNNING:
			if (!j->spec)
				break;
			if (eff_priority(c, j) < p->min_running_prio)
				p->min_running_prio = eff_priority(c, j);
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
	all = malloc((n ? n : 1) * sizeof(*all));
	if (!all) {
		free(p);
		free(ql);
		return 0;
	}
	if (p->nstopping) {
		p->stopping = malloc(p->nstopping * sizeof(*p->stopping));
		p->nstopping = 0;
		for (size_t i = 0; p->stopping && i < c->job_count; i++)
			if (frees_for_preemptor(c->jobs[i], now_usec))
				p->stopping[p->nstopping++] = c->jobs[i];
		if (p->stopping)
			qsort(p->stopping, p->nstopping, sizeof(*p->stopping), by_preemptor);
	}
	p->committed = calloc(nq ? nq : 1, sizeof(*p->committed));
	for (size_t i = 0; p->committed && p->nstopping && i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		uint64_t dl;

		if (j->state == SCHED_JOB_PENDING && has_stopping_for(p, j, &dl))
			p->committed[j->queue_index] += j->spec->npus_min;
	}
	/* per queue, in job priority then submission order */
	n = 0;
	for (size_t q = 0; q < nq; q++) {
		ql[q].jobs = all + n;
		n += ql[q].n;
		ql[q].n = 0;
	}
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		struct qlist *l = &ql[j->queue_index];

		if (j->state == SCHED_JOB_PENDING)
			l->jobs[l->n++] = (struct pend){ j->prio, j->queue_seq, j };
	}
	{
		struct pend *tmp = malloc((n ? n : 1) * sizeof(*tmp));
		unsigned *count = malloc(1002 * sizeof(*count));

		for (size_t q = 0; q < nq; q++) {
			if (tmp && count)
				sort_pending(ql[q].jobs, ql[q].n, tmp, count);
			else
				qsort(ql[q].jobs, ql[q].n, sizeof(ql[q].jobs[0]), fifo_cmp);
		}
		free(tmp);
		free(count);
	}
	if (n)
		idx_build(p);
	if (n && p->nstopping)
		find_preemptors(p);
	/* queues within quota first; then borrowers on what is left */
	if (n)
		serve(p, ql, nq, false);
	if (n && c->conf->enable_quota_limit)
		serve(p, ql, nq, true);
	unmark_all(p);
	if (p->any_elastic)
		grow_elastic(p);
	for (size_t i = 0; i < p->nresv; i++)
		free(p->resv[i].slices);
	placed = p->placed;
	idx_free(p);
	free(p->stopping);
	free(p->first);
	free(p->committed);
	free(p);
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
	bool grow = false;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		/* an elastic job below its max may grow once its delay has passed */
		if (j->state == SCHED_JOB_RUNNING && j->spec && sched_job_total_npus(j) <
		    j->spec->npus_max) {
			uint64_t at = j->generation_usec +
				      (uint64_t)c->conf->elastic_grow_delay_sec * 1000000u;

			grow |= at > c->last_tick_usec && at <= now_usec;
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
		if (j->state == SCHED_JOB_STOPPING && now_usec >= j->stop_deadline_usec) {
			changed++;
			if (sched_job_finish_stop(c, j, false, now_usec))
				i--; /* the record was dropped (rmdir): jobs[i] is the next */
		}
	}
	changed += sched_job_resume_scan_expire(c, now_usec);
	c->last_tick_usec = now_usec;
	if (changed || grow)
		sched_schedule(c, now_usec);
	return changed;
}

int sched_queue_set_quota(struct sched_cluster *c, const char *queue, unsigned npus,
			  uint64_t now_usec)
{
	struct conf_queue *q = NULL;
	size_t qi = 0;
	unsigned used = 0;

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
	/* the oldest runs fill the new quota; later ones borrow */
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		unsigned held = sched_job_total_npus(j);

		if (!j->spec || j->queue_index != qi || !held)
			continue;
		if (j->borrowing != (npus && used + held > npus)) {
			j->borrowing = !j->borrowing;
			sched_job_touch(c, j);
		}
		used += held;
	}
	sched_event_add(c, now_usec, SCHED_EV_QUEUE, NULL, NULL, -1,
			"queue %s: quota set to %u NPU%s%s%s", q->name, npus, npus == 1 ? "" : "s",
			npus ? "" : " (no limit)", SCHED_QUOTA_OFF_NOTE(c, npus));
	c->version++;
	sched_schedule(c, now_usec);
	return 0;
}
