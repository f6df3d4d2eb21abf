/* SPDX-License-Identifier: MIT */
/*
 * Queue order, fair share, quotas and pending reasons: in which order the pass serves
 * pending jobs (queue priority, then job priority, then the smaller share used/weight
 * between queues, then submission), what a quota change does to running jobs, the
 * per-queue usage figures, and how a pending reason is set without formatting it again.
 * The quota tests themselves (quota_applies, within_quota) are in sched_pass.h.
 *
 * Calls: sched_job.c (sched_job_transition); none of the other files of the pass
 * (sched_pass.h says the direction).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

void sched_set_pending(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
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

int sched_pend_cmp(const void *a, const void *b)
{
	const struct pend *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

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

/* Move queue @l's head past jobs that are no longer pending; false when it is empty. */
bool sched_queue_head_valid(struct qlist *l)
{
	while (l->next < l->n && l->jobs[l->next].job->state != SCHED_JOB_PENDING)
		l->next++;
	return l->next < l->n;
}

/*
 * Sort @n entries by priority (high first), then submission: a stable counting sort by
 * priority (0-1000) keeps the jobs' list order, which is nearly submission order, and an
 * insertion pass fixes the rest; qsort when that would be long.
 */
void sched_pend_sort(struct pend *e, size_t n, struct pend *tmp, unsigned *count)
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

		while (k > 0 && sched_pend_cmp(&e[k - 1], &x) > 0) {
			e[k] = e[k - 1];
			k--;
			if (++moves > 4 * n + 64) {
				e[k] = x;
				qsort(e, n, sizeof(*e), sched_pend_cmp);
				return;
			}
		}
		e[k] = x;
	}
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

/* ---- the pending order, kept between passes ---- */

/*
 * Per queue: v[0..sorted) in service order (sched_pend_cmp), where a job that left the
 * pending state leaves a hole (job NULL, its keys kept, so the search still works);
 * v[sorted..n) the jobs that entered since the last pass, in arrival order. The pass
 * sorts the few arrivals and merges (sched_pend_order_take): O(pending) copying, no
 * sweep over finished or running jobs, no sort of the whole backlog. A job's keys
 * (j->prio, j->queue_seq, j->queue_index) do not change while it is pending.
 */
struct sched_pend_order {
	struct pend *v;
	size_t n, cap, sorted;
};

void sched_pend_order_invalidate(struct sched_cluster *c)
{
	c->pend_order_valid = false;
}

void sched_pend_order_free(struct sched_cluster *c)
{
	for (size_t q = 0; q < c->pend_order_count; q++)
		free(c->pend_order[q].v);
	free(c->pend_order);
	c->pend_order = NULL;
	c->pend_order_count = 0;
	c->pend_order_valid = false;
}

/* The first entry of v[0..sorted) not before @key. */
static size_t order_lower_bound(const struct sched_pend_order *o, const struct pend *key)
{
	size_t lo = 0, hi = o->sorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sched_pend_cmp(&o->v[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void sched_pend_order_note(struct sched_cluster *c, struct sched_job *j, bool entered)
{
	struct pend key = { j->prio, j->queue_seq, j };
	struct sched_pend_order *o;

	if (!c->pend_order_valid)
		return; /* the next pass rebuilds it */
	if (j->queue_index >= c->pend_order_count) {
		c->pend_order_valid = false;
		return;
	}
	o = &c->pend_order[j->queue_index];
	if (entered) {
		if (o->n == o->cap) {
			size_t cap = o->cap ? o->cap * 2 : 64;
			struct pend *v = realloc(o->v, cap * sizeof(*v));

			if (!v) {
				c->pend_order_valid = false;
				return;
			}
			o->v = v;
			o->cap = cap;
		}
		o->v[o->n++] = key;
		return;
	}
	for (size_t i = order_lower_bound(o, &key);
	     i < o->sorted && sched_pend_cmp(&o->v[i], &key) == 0; i++)
		if (o->v[i].job == j) {
			o->v[i].job = NULL;
			return;
		}
	for (size_t i = o->sorted; i < o->n; i++)
		if (o->v[i].job == j) {
			o->v[i] = o->v[--o->n];
			return;
		}
	c->pend_order_valid = false; /* not listed: never expected; rebuild */
}

/* Build every queue's order from the jobs (at the first pass, or after invalidation). */
static int order_rebuild(struct sched_cluster *c)
{
	size_t nq = c->conf->queue_count;

	sched_pend_order_free(c);
	c->pend_order = calloc(nq ? nq : 1, sizeof(*c->pend_order));
	if (!c->pend_order)
		return -ENOMEM;
	c->pend_order_count = nq;
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		struct sched_pend_order *o;

		if (j->state != SCHED_JOB_PENDING)
			continue;
		if (j->queue_index >= nq)
			return -EINVAL;
		o = &c->pend_order[j->queue_index];
		if (o->n == o->cap) {
			size_t cap = o->cap ? o->cap * 2 : 64;
			struct pend *v = realloc(o->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			o->v = v;
			o->cap = cap;
		}
		/* in the jobs' order, as the sort of every pass did before */
		o->v[o->n++] = (struct pend){ j->prio, j->queue_seq, j };
	}
	c->pend_order_valid = true;
	return 0;
}

int sched_pend_order_take(struct sched_cluster *c, struct qlist *ql, struct pend **ret_all,
			  size_t *ret_n)
{
	size_t nq = c->conf->queue_count, total = 0, off = 0;
	struct pend *all, *tmp = NULL;
	unsigned *count = NULL;

	if ((!c->pend_order_valid || c->pend_order_count != nq) && order_rebuild(c) < 0) {
		sched_pend_order_free(c);
		return -ENOMEM;
	}
	for (size_t q = 0; q < nq; q++)
		total += c->pend_order[q].n;
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t q = 0; q < nq; q++) {
		struct sched_pend_order *o = &c->pend_order[q];
		struct pend *out = all + off, *tail = o->v + o->sorted;
		size_t ntail = o->n - o->sorted, i = 0, k = 0, w = 0;

		/* the arrivals in order: few, so the same sort as a whole backlog is cheap */
		if (ntail > 1) {
			if (!tmp) {
				tmp = malloc((total ? total : 1) * sizeof(*tmp));
				count = malloc(1002 * sizeof(*count));
			}
			if (tmp && count)
				sched_pend_sort(tail, ntail, tmp, count);
			else
				qsort(tail, ntail, sizeof(*tail), sched_pend_cmp);
		}
		while (i < o->sorted || k < ntail) {
			if (i < o->sorted && !o->v[i].job) {
				i++;
				continue;
			}
			if (k == ntail || (i < o->sorted && sched_pend_cmp(&o->v[i], &tail[k]) <= 0))
				out[w++] = o->v[i++];
			else
				out[w++] = tail[k++];
		}
		if (w) /* an empty queue may have no array yet */
			memcpy(o->v, out, w * sizeof(*out));
		o->n = o->sorted = w;
		ql[q].jobs = out;
		ql[q].n = w;
		off += w;
	}
	free(tmp);
	free(count);
	*ret_all = all;
	*ret_n = off;
	return 0;
}

/* Is pending job @a of queue @qa served after @b of queue @qb, the shares as they are?
 * While a pass places nothing the shares stay put and the service order is this one:
 * queue priority, job priority, share, submission (queue_before() as a total order). */
static bool pend_after(const struct sched_cluster *c, size_t qa, const struct pend *a,
		       size_t qb, const struct pend *b)
{
	const struct conf_queue *x = &c->conf->queues[qa], *y = &c->conf->queues[qb];

	if (x->priority != y->priority)
		return x->priority < y->priority;
	if (a->prio != b->prio)
		return a->prio < b->prio;
	if (qa != qb) {
		uint64_t sa = (uint64_t)c->queue_used[qa] * y->weight;
		uint64_t sb = (uint64_t)c->queue_used[qb] * x->weight;

		if (sa != sb)
			return sa > sb;
	}
	return a->seq > b->seq;
}

int sched_pend_order_take_new(struct sched_cluster *c, struct qlist *ql, bool any_last,
			      size_t last_queue, const struct pend *last, struct pend **ret_all,
			      size_t *ret_n)
{
	size_t nq = c->conf->queue_count, total = 0, off = 0;
	struct pend *all, *tmp;
	unsigned *count;

	if (!c->pend_order_valid || c->pend_order_count != nq || (any_last && last_queue >= nq))
		return -EAGAIN;
	for (size_t q = 0; q < nq; q++) {
		const struct sched_pend_order *o = &c->pend_order[q];

		for (size_t i = o->sorted; any_last && i < o->n; i++)
			if (!pend_after(c, q, &o->v[i], last_queue, last))
				return -EAGAIN;
		total += o->n - o->sorted;
	}
	all = malloc((total ? total : 1) * sizeof(*all));
	tmp = malloc((total ? total : 1) * sizeof(*tmp));
	count = malloc(1002 * sizeof(*count));
	if (!all || !tmp || !count) {
		free(all);
		free(tmp);
		free(count);
		return -ENOMEM;
	}
	for (size_t q = 0; q < nq; q++) {
		const struct sched_pend_order *o = &c->pend_order[q];
		size_t k = o->n - o->sorted;

		if (k)
			memcpy(all + off, o->v + o->sorted, k * sizeof(*all));
		sched_pend_sort(all + off, k, tmp, count);
		ql[q].jobs = all + off;
		ql[q].n = k;
		off += k;
	}
	free(tmp);
	free(count);
	*ret_all = all;
	*ret_n = off;
	return 0;
}

void sched_pend_order_settle_new(struct sched_cluster *c)
{
	size_t nq = c->conf->queue_count, most = 0;
	struct pend *tmp;
	unsigned *count;

	if (!c->pend_order_valid || c->pend_order_count != nq)
		return;
	for (size_t q = 0; q < nq; q++)
		if (c->pend_order[q].n - c->pend_order[q].sorted > most)
			most = c->pend_order[q].n - c->pend_order[q].sorted;
	if (!most)
		return;
	tmp = malloc(most * sizeof(*tmp));
	count = malloc(1002 * sizeof(*count));
	for (size_t q = 0; tmp && count && q < nq; q++) {
		struct sched_pend_order *o = &c->pend_order[q];

		if (o->n == o->sorted)
			continue;
		sched_pend_sort(o->v + o->sorted, o->n - o->sorted, tmp, count);
		/* a hole keeps its keys: the last sorted entry bounds the part */
		if (!o->sorted || sched_pend_cmp(&o->v[o->sorted - 1], &o->v[o->sorted]) < 0)
			o->sorted = o->n;
	}
	free(tmp);
	free(count);
	/* without memory the arrivals stay arrivals: the next full take merges them */
}

int sched_pend_order_check(const struct sched_cluster *c, char *reason)
{
	size_t nq = c->conf->queue_count, listed = 0, pending = 0;

	if (!c->pend_order_valid)
		return 0; /* the next pass rebuilds it from the jobs */
	if (c->pend_order_count != nq) {
		sched_reason(reason, "pending order kept for %zu queues, the cluster has %zu",
			     c->pend_order_count, nq);
		return -EINVAL;
	}
	for (size_t i = 0; i < c->job_count; i++)
		pending += c->jobs[i]->state == SCHED_JOB_PENDING;
	for (size_t q = 0; q < nq; q++) {
		const struct sched_pend_order *o = &c->pend_order[q];
		const struct pend *prev = NULL;

		for (size_t i = 0; i < o->n; i++) {
			const struct pend *e = &o->v[i];

			if (i == o->sorted)
				prev = NULL;
			if (!e->job)
				goto next;
			listed++;
			if (e->job->state != SCHED_JOB_PENDING || e->job->queue_index != q ||
			    e->job->prio != e->prio || e->job->queue_seq != e->seq) {
				sched_reason(reason, "pending order of queue %s lists job %s (%s, "
						     "queue %zu, priority %u, seq %llu) as priority "
						     "%u, seq %llu",
					     c->conf->queues[q].name, e->job->name,
					     sched_job_state_name(e->job->state),
					     e->job->queue_index, e->job->prio,
					     (unsigned long long)e->job->queue_seq, e->prio,
					     (unsigned long long)e->seq);
				return -EINVAL;
			}
			/* strictly in service order, so no job is listed twice there */
			if (i < o->sorted && prev && sched_pend_cmp(prev, e) >= 0) {
				sched_reason(reason, "pending order of queue %s: job %s is not after "
						     "job %s as a fresh sort puts them",
					     c->conf->queues[q].name, e->job->name, prev->job->name);
				return -EINVAL;
			}
			/* an arrival is listed once, and not among the sorted ones */
			for (size_t k = o->sorted; k < i && i >= o->sorted; k++)
				if (o->v[k].job == e->job)
					goto twice;
			if (i >= o->sorted) {
				size_t lo = order_lower_bound(o, e);

				for (; lo < o->sorted && sched_pend_cmp(&o->v[lo], e) == 0; lo++)
					if (o->v[lo].job == e->job)
						goto twice;
			}
			if (i < o->sorted)
				prev = e;
			goto next;
twice:
			sched_reason(reason, "pending order of queue %s lists job %s twice",
				     c->conf->queues[q].name, e->job->name);
			return -EINVAL;
next:
			;
		}
	}
	if (listed != pending) {
		sched_reason(reason, "pending order lists %zu jobs; %zu are pending", listed, pending);
		return -EINVAL;
	}
	return 0;
}
