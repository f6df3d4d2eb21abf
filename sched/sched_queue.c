/* SPDX-License-Identifier: MIT */
/*
 * Queue order, fair share, quotas and pending reasons: in which order the pass serves
 * pending jobs (queue priority, then job priority, then the smaller share used/weight
 * between queues, then submission), what a quota change does to running jobs, the
 * per-queue usage figures, and how a pending reason is set without formatting it again.
 * The quota tests themselves (quota_applies, within_quota) are in sched_pass.h.
 *
 * The service order within a queue and the pending order kept between passes are in
 * sched_pend_order.c.
 *
 * Calls: sched_job.c (sched_job_transition, sched_job_touch); none of the other files of
 * the pass (sched_pass.h says the direction).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sched_pass.h"

/* ---- pending reasons ---- */

const char *sched_fmt_time(uint64_t usec, char *buf, size_t len)
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

/* Is @j already pending for the reason @key stands for? (skip formatting it again) */
bool sched_pending_same(const struct sched_job *j, uint64_t key)
{
	return key && j->state == SCHED_JOB_PENDING && j->reason_key == mix(key, j->requeue_cause);
}

static void set_pending_v(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			  uint64_t key, const char *fmt, va_list ap)
{
	char body[SCHED_REASON_MAX], full[SCHED_REASON_MAX];
	const char *reason = body;

	vsnprintf(body, sizeof(body), fmt, ap);
	/* a job that ran before waits to resume, not to start: say so */
	if (j->requeue_cause == SCHED_REQUEUE_FAULT) {
		snprintf(full, sizeof(full), "recovering from a fault; waits for capacity: %.400s",
			 body);
		reason = full;
	} else if (j->requeue_cause == SCHED_REQUEUE_REQUESTED) {
		snprintf(full, sizeof(full), "requeued; waits to start again from its newest "
					     "checkpoint: %.400s",
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
	if (j->state == SCHED_JOB_PENDING)
		sched_job_set_pending_reason(c, j, now_usec, reason);
	else
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec, reason);
}

void sched_set_pending(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       uint64_t key, const char *fmt, ...)
{
	va_list ap;

	key = key ? mix(key, j->requeue_cause) : 0;
	if (key && j->state == SCHED_JOB_PENDING && j->reason_key == key)
		return;
	va_start(ap, fmt);
	set_pending_v(c, j, now_usec, key, fmt, ap);
	va_end(ap);
}

void sched_set_pending_shared(struct pass *p, struct sched_job *j, uint64_t key,
			      const char *fmt, ...)
{
	/* the "preempted by" prefix names the job's own preemptor: not shared */
	bool shared = j->requeue_cause != SCHED_REQUEUE_PREEMPTED;
	typeof(p->shared_reason[0]) *e;
	va_list ap;

	key = mix(key, j->requeue_cause);
	if (j->state == SCHED_JOB_PENDING && j->reason_key == key)
		return;
	e = &p->shared_reason[(key ^ key >> 29) & 31];
	if (shared && e->text && e->key == key && j->state == SCHED_JOB_PENDING) {
		j->reason_key = key;
		if (j->reason != e->text) {
			sched_job_share_reason(p->c, j, e->text);
			sched_job_set_pending_reason(p->c, j, p->now, j->reason);
		}
		return;
	}
	va_start(ap, fmt);
	set_pending_v(p->c, j, p->now, key, fmt, ap);
	va_end(ap);
	if (!shared || j->reason_key != key)
		return;
	sched_reason_put(e->text);
	e->key = key;
	e->text = sched_reason_get(j->reason);
}

void sched_pass_shared_reasons_free(struct pass *p)
{
	for (size_t i = 0; i < sizeof(p->shared_reason) / sizeof(p->shared_reason[0]); i++) {
		sched_reason_put(p->shared_reason[i].text);
		p->shared_reason[i].text = NULL;
	}
}

/* ---- usage ---- */

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

/* ---- service order ---- */

/* Which queue serves next: sched_serve_before() between the queues' first jobs. */
static bool queue_before(const struct sched_cluster *c, const struct qlist *ql, size_t a,
			 size_t b)
{
	return sched_serve_before(c, a, &ql[a].jobs[ql[a].next], b, &ql[b].jobs[ql[b].next],
				  c->place_now_usec);
}

/* Move queue @l's head past jobs that are no longer pending; false when it is empty. */
bool sched_queue_head_valid(struct qlist *l)
{
	while (l->next < l->n && l->jobs[l->next].job->state != SCHED_JOB_PENDING)
		l->next++;
	return l->next < l->n;
}

size_t sched_queue_next(const struct sched_cluster *c, const struct qlist *ql, size_t nq)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < nq; i++)
		if (ql[i].live && (best == SIZE_MAX || queue_before(c, ql, i, best)))
			best = i;
	return best;
}

void sched_queue_rebalance_borrowing(struct sched_cluster *c, size_t queue_index, unsigned npus)
{
	unsigned used = 0;

	/* the oldest runs fill the new quota; later ones borrow */
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		unsigned held = sched_job_total_npus(j);

		if (!j->spec || j->queue_index != queue_index || !held)
			continue;
		if (j->borrowing != (npus && used + held > npus)) {
			j->borrowing = !j->borrowing;
			sched_job_touch(c, j);
		}
		used += held;
	}
}
