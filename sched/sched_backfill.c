/* SPDX-License-Identifier: MIT */
/*
 * Reservations and EASY backfill: when a running job is expected to give its NPUs back,
 * the reservation of the first blocked job of each server type (compute_reservation),
 * the one held for a preemptor until its victims have stopped, placing a job around
 * reservations (on reserved NPUs only when its time_limit ends before they are needed),
 * the capacity index that lets jobs which cannot fit cost O(1), and the reasons of jobs
 * that wait behind a reservation or, with backfill off, behind the first blocked job.
 *
 * Reserved NPUs are marked `reserved` (not placeable) while the pass runs and unmarked at
 * its end (sched_resv_unmark_all), so a gang never holds NPUs between passes.
 *
 * Calls: sched_elastic.c (sched_place_job), sched_queue.c (sched_set_pending), sched_place.c;
 * never sched_preempt.c or sched_pass.c (sched_pass.h says the direction).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_pass.h"

/* The time a running or stopping job is expected to give its NPUs back; UINT64_MAX when
 * it has no time_limit. */
/* ---- when running jobs give their NPUs back ---- */

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

/* Holder @o's expected end is fixed while it runs within its time_limit (the end of
 * the limit); past it, or for a pending holder with a limit, the end moves with the clock:
 * note when pass @p's reservations may come out otherwise. */
static void note_end_moves(struct pass *p, const struct sched_job *o)
{
	uint64_t limit, ran;

	if (o->state == SCHED_JOB_STOPPING)
		return; /* its deadline */
	if (o->state == SCHED_JOB_PENDING) {
		if (o->limit_left_usec != UINT64_MAX)
			sched_pass_stale_from(p, p->now + 1);
		return;
	}
	if (!o->spec || !o->spec->time_limit_sec)
		return;
	limit = o->spec->time_limit_sec * 1000000u;
	ran = sched_job_run_usec(o, p->now);
	sched_pass_stale_from(p, p->now + (ran < limit ? limit - ran : 0) + 1);
}

/* ---- the capacity index ---- */

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

void sched_capidx_build(struct pass *p)
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

void sched_capidx_free(struct pass *p)
{
	free(p->idx.free_of);
	free(p->idx.whole_of);
	free(p->idx.type_of);
}

void sched_capidx_slices(struct pass *p, const struct sched_slice *sl, size_t count, int sign)
{
	if (!p->idx_ok)
		return;
	for (size_t i = 0; i < count; i++)
		idx_put(p, sl[i].server, sign);
}

/* Could @npus fit now on some type of @mask (ignoring reservations)? False is certain. */
bool sched_capidx_may_fit(const struct pass *p, uint32_t mask, unsigned npus)
{
	if (!p->idx_ok)
		return true;
	for (size_t t = 0; t < p->ntypes; t++) {
		unsigned per = p->types[t]->npu_count;

		if (!(mask & (1u << t)))
			continue;
		if (p->c->placement == SCHED_PLACE_BLIND) {
			/* a blind gang takes free NPUs anywhere on servers of one type */
			uint64_t free_npus = 0;

			for (unsigned f = 1; f <= CONF_SERVER_NPUS_MAX; f++)
				free_npus += (uint64_t)f * p->idx.hist[t][f];
			if (free_npus >= npus)
				return true;
		} else if (npus <= per) {
			for (unsigned f = npus; f <= CONF_SERVER_NPUS_MAX; f++)
				if (p->idx.hist[t][f])
					return true;
		} else if (p->idx.whole[t] >= npus / per) {
			return true;
		}
	}
	return false;
}

/* ---- reserved NPUs, and placing around them ---- */

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

void sched_resv_unmark_all(struct pass *p)
{
	for (size_t i = 0; i < p->nresv; i++)
		mark_reserved(p, &p->resv[i], false);
}

void sched_resv_mark_all(struct pass *p)
{
	for (size_t i = 0; i < p->nresv; i++)
		mark_reserved(p, &p->resv[i], true);
}

/*
 * Place @j now, keeping clear of reservations: on unreserved NPUs, or on reserved ones
 * when its time_limit ends before every reservation it would touch begins.
 * Returns 0 with the slices, or -ENOSPC with *ret_delays set when only reserved NPUs
 * would do.
 */
int sched_place_around(struct pass *p, struct sched_job *j, unsigned hi, struct sched_slice **ret,
		       size_t *ret_count, bool *ret_backfill, const struct resv **ret_delays,
		       char *reason)
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
			/* later the end moves past the start with the clock */
			sched_pass_stale_from(p, p->now + (p->resv[i].start - end) + 1);
			mark_reserved(p, &p->resv[i], false);
			opened = true;
		}
	}
	if (!opened)
		return -ENOSPC;
	r = sched_place_job(c, j, hi, &sl, &n, reason);
	sched_resv_mark_all(p);
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

		if (o->slice_count && o != j) {
			h[nh++] = (struct holder){ o, expected_end(c, o, p->now) };
			note_end_moves(p, o);
		}
	}
	qsort(h, nh, sizeof(*h), holder_cmp);
	sched_resv_unmark_all(p);
	while (released < nh) {
		const struct sched_job *o = h[released].job;
		bool maybe = false;

		sim_release(c, o);
		released++;
		/* jobs ending at the same moment go together */
		if (released < nh && h[released].end == h[released - 1].end &&
		    h[released].end != UINT64_MAX)
			continue;
		/* a fit can only appear on servers that just changed (a topology-blind one
		 * gathers NPUs from anywhere: try each time) */
		maybe = c->placement == SCHED_PLACE_BLIND;
		for (size_t k = 0; k < o->slice_count && !maybe; k++) {
			unsigned s = o->slices[k].server;

			maybe = j->spec->npus_min > c->servers[s].conf->npu_count ?
					sched_server_is_whole_free(c, s, type) :
					sched_server_can_hold(c, s, j->spec->npus_min, type);
		}
		if (!maybe)
			continue;
		r = sched_place_now(c, j->spec->npus_min, type, sched_job_stages(j), &sl, &n,
				    why);
		if (r != -ENOSPC)
			break;
	}
	for (size_t i = 0; i < released; i++)
		sim_restore(c, h[i].job);
	sched_resv_mark_all(p);
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

void sched_describe_slices(const struct sched_cluster *c, const struct sched_slice *sl, size_t n,
			   char *buf, size_t len)
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

/* Count @rv, filled in at p->resv[p->nresv], among @p's reservations, and hold its NPUs. */
static void resv_add(struct pass *p, struct resv *rv)
{
	p->nresv++;
	p->resv_mask |= rv->mask;
	if (rv->start != UINT64_MAX) {
		p->finite_resv_mask |= rv->mask;
		for (unsigned t = 0; t < 32; t++)
			if ((rv->mask & (1u << t)) && rv->start > p->latest_start[t])
				p->latest_start[t] = rv->start;
	}
	mark_reserved(p, rv, true);
	rv->job->reserved_start_usec = rv->start;
}

/*
 * Hold for preemptor @j, from @start, the NPUs it gets once the @n jobs @v that stop
 * for it are gone: the placement keeps off NPUs other reservations hold. Unlike
 * sched_reserve_for() this does not yield to an earlier reservation of a server type @j may
 * use (the first blocked job of another type): without it, backfill hands the NPUs the
 * preemption counted on (its victims' included, once they have stopped) to other
 * jobs, the victims first, and @j preempts again when they have stopped. Returns the
 * reservation, or NULL (no placement: other jobs took NPUs it counted on).
 */
const struct resv *sched_reserve_preempted(struct pass *p, struct sched_job *j,
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
	r = sched_place_now(c, j->spec->npus_min, sched_job_type(c, j), sched_job_stages(j),
			    &rv->slices, &rv->count,
			    why);
	for (size_t i = 0; i < n; i++)
		sim_restore(c, v[i]);
	if (r < 0)
		return NULL;
	rv->job = j;
	rv->start = start;
	rv->mask = j->type_mask;
	resv_add(p, rv);
	return rv;
}

/* Give @j the reservation of its server types (EASY: the first blocked job only). */
const struct resv *sched_reserve_for(struct pass *p, struct sched_job *j)
{
	struct resv *rv = &p->resv[p->nresv];
	int r;

	if ((p->resv_mask & j->type_mask) || p->nresv >= 32)
		return NULL;
	r = compute_reservation(p, j, rv);
	if (r == -ENOMEM)
		p->incomplete = true; /* not "no room": the pass is owed again */
	if (r < 0)
		return NULL;
	resv_add(p, rv);
	return rv;
}

/* ---- reasons of jobs that wait for reserved NPUs ---- */

/* Would @j end before some reservation of its server types starts (so it may use those
 * NPUs)? */
bool sched_may_use_reserved(struct pass *p, const struct sched_job *j)
{
	uint32_t types = p->finite_resv_mask & j->type_mask;
	uint64_t latest = 0, end;

	/* no reservation of its types has a known start, or it has no time limit: the case
	 * of most waiting jobs, answered without a loop */
	if (!types || j->limit_left_usec == UINT64_MAX)
		return false;
	/* it ends before some known start exactly when it ends before the latest one */
	for (unsigned t = 0; t < 32; t++)
		if ((types & (1u << t)) && p->latest_start[t] > latest)
			latest = p->latest_start[t];
	if (!latest)
		return false;
	end = expected_end(p->c, j, p->now);
	if (end > latest)
		return false; /* and later still more so */
	sched_pass_stale_from(p, p->now + (latest - end) + 1);
	return true;
}

/* Fill @reason (when still empty) with what keeps @j from fitting now. */
/*
 * When the first run of lower priority than @j that @j could take NPUs from leaves its
 * preempt_exempt_time (UINT64_MAX: none is exempt now). O(jobs): only for the sentences
 * a pass writes.
 */
static uint64_t first_exempt_end(const struct pass *p, const struct sched_job *j)
{
	const struct sched_cluster *c = p->c;
	uint64_t first = UINT64_MAX;

	if (!c->conf->preemption || !c->conf->preempt_exempt_sec ||
	    p->min_running_prio >= eff_priority(c, j))
		return UINT64_MAX;
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *v = c->jobs[i];
		uint64_t end = v->start_usec + (uint64_t)c->conf->preempt_exempt_sec * 1000000u;

		if (v->state == SCHED_JOB_RUNNING && v->spec && (v->type_mask & j->type_mask) &&
		    eff_priority(c, v) < eff_priority(c, j) && sched_preempt_exempt(c, v, p->now) &&
		    end < first)
			first = end;
	}
	return first;
}

void sched_explain(struct pass *p, const struct sched_job *j, unsigned hi, char *reason)
{
	struct sched_slice *tmp;
	uint64_t exempt_end;
	size_t n;

	if (reason[0])
		return;
	/* reservations are not the reason here: ask about the NPUs as they are */
	sched_resv_unmark_all(p);
	if (sched_place_job(p->c, j, hi, &tmp, &n, reason) == 0) {
		free(tmp);
		sched_reason(reason, "needs %u NPU%s that are held for a reservation",
			     j->spec->npus_min, j->spec->npus_min == 1 ? "" : "s");
	}
	sched_resv_mark_all(p);
	/* a preemption that waits for an exemption to end: say until when, first (the
	 * callers may cut the sentence's end) */
	exempt_end = first_exempt_end(p, j);
	if (exempt_end != UINT64_MAX) {
		char when[40], rest[SCHED_REASON_MAX];

		snprintf(rest, sizeof(rest), "%s", reason);
		snprintf(reason, SCHED_REASON_MAX,
			 "may preempt a lower-priority job from %s, when its "
			 "preempt_exempt_time ends; %.300s",
			 sched_fmt_time(exempt_end, when, sizeof(when)), rest);
	}
}

/* backfill off: @j holds the line for the server types it needs */
void sched_hold_line(struct pass *p, const struct sched_job *j)
{
	if (p->c->conf->backfill)
		return;
	p->blocked |= j->type_mask;
	for (unsigned t = 0; t < 32; t++)
		if ((j->type_mask & (1u << t)) && !p->blocker_of[t])
			p->blocker_of[t] = j;
}

/* @j waits behind reservation @h: say whose, from when, and what would let it start. */
void sched_wait_behind(struct pass *p, struct sched_job *j, const struct resv *h, unsigned need)
{
	/*
	 * The reservation's start is not part of the reason: it moves whenever a running job
	 * ends, and re-rendering (and announcing) the reason of every job waiting behind it
	 * then cost a pass with 10,000 waiting jobs over 10 ms. The holder's status.json
	 * (reserved_start) says when.
	 */
	/* what the sentence depends on, from the job's first cache line (a pending job has
	 * limit_left_usec UINT64_MAX exactly when its spec has no time_limit): a pass
	 * reads this for every job waiting behind a reservation */
	uint64_t key = mix(mix(mix(mix(KEY_RESV, h->job->serial), need), h->start == UINT64_MAX),
			   j->limit_left_usec != UINT64_MAX);

	sched_set_pending_shared(
		p, j, key,
		"waiting behind job \"%s\", first in line with NPUs reserved %s: "
		"needs %u NPU%s and none are free outside that reservation; %s",
		h->job->name,
		h->start == UINT64_MAX ? "until running jobs without a time_limit end" :
					 "(its status.json says from when)",
		need, need == 1 ? "" : "s",
		h->start == UINT64_MAX ? "it starts when they do" :
		/* not j->spec: the arguments are read for every job, the sentence is made
		 * only when the key changed */
		j->limit_left_usec != UINT64_MAX ? "its time_limit runs past that start" :
		"with a time_limit that ends before then it could start at once");
}
