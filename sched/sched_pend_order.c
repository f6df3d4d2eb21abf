/* SPDX-License-Identifier: MIT */
/*
 * The pending order: the service order of pending jobs within a queue (priority, then
 * submission: sched_pend_cmp, sched_pend_sort), and each queue's pending jobs in that
 * order, kept between passes (sched_pend_order_*). sched_job_transition() notes every job
 * entering or leaving the pending state here, sched_control.c a pending job held (it
 * leaves the order), released or given a new priority; the pass takes the order
 * (sched_pass.c).
 *
 * Calls: sched_cluster.c (sched_reason, sched_job_state_name: text only); neither
 * sched_job.c nor any file of the pass (sched_pass.h says the direction).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_pass.h"

/* ---- service order within a queue ---- */

int sched_pend_cmp(const void *a, const void *b)
{
	const struct pend *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
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
	struct pend key = sched_pend_of(j, j->prio);
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

		if (j->state != SCHED_JOB_PENDING || sched_job_is_held(j))
			continue; /* a held job is passed by (sched_job_hold()) */
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
		o->v[o->n++] = sched_pend_of(j, j->prio);
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

/* Would a full pass serve job @e, new in queue @q, after every job served so far, where
 * the kept pass left that queue as @end (struct pass_queue_end)? */
static bool comes_after(const struct sched_cluster *c, size_t q, const struct pend *e,
			const struct pass_queue_end *end, uint64_t now_usec)
{
	if (end->has_last && sched_pend_cmp(&end->last, e) >= 0)
		return false;
	return !end->has_floor ||
	       sched_serve_key_before(c, end->floor_queue, &end->floor, q, e, now_usec);
}

int sched_pend_order_take_new(struct sched_cluster *c, struct qlist *ql,
			      const struct pass_queue_end *qend, struct pend **ret_all,
			      size_t *ret_n)
{
	size_t nq = c->conf->queue_count, total = 0, off = 0;
	struct pend *all, *tmp;
	unsigned *count;

	if (!c->pend_order_valid || c->pend_order_count != nq || !qend)
		return -EAGAIN;
	for (size_t q = 0; q < nq; q++) {
		const struct sched_pend_order *o = &c->pend_order[q];

		if (qend[q].has_floor && qend[q].floor_queue >= nq)
			return -EAGAIN;
		for (size_t i = o->sorted; i < o->n; i++)
			if (!comes_after(c, q, &o->v[i], &qend[q], c->place_now_usec))
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
		pending += c->jobs[i]->state == SCHED_JOB_PENDING && !sched_job_is_held(c->jobs[i]);
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
			if (e->job->state != SCHED_JOB_PENDING || sched_job_is_held(e->job) ||
			    e->job->queue_index != q ||
			    e->job->prio != e->prio || e->job->queue_seq != e->seq ||
			    sched_pend_of(e->job, e->prio).eligible_sec != e->eligible_sec) {
				sched_reason(reason, "pending order of queue %s lists job %s (%s, "
						     "queue %u, priority %u, seq %llu, eligible %llu "
						     "s) as priority %u, seq %llu, eligible %u s",
					     c->conf->queues[q].name, e->job->name,
					     sched_job_state_name(e->job->state),
					     e->job->queue_index, e->job->prio,
					     (unsigned long long)e->job->queue_seq,
					     (unsigned long long)(e->job->eligible_usec / 1000000u),
					     e->prio, (unsigned long long)e->seq, e->eligible_sec);
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
