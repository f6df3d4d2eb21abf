/* SPDX-License-Identifier: MIT */
/*
 * Job-count limits (issue 15 item 5: one user's 200 pending jobs filled max_job_count and
 * root's cp then failed with EAGAIN). What a user may hold at once, checked at every
 * draft and submission:
 *   cluster.max_job_count_per_user  drafts and active jobs of one user, across queues
 *   cluster.reserved_job_count      records of max_job_count only root and operators
 *                                   may take: everyone's drafts and active jobs stop
 *                                   this far short of it
 *   queue max_submit_jobs_per_user  one user's active jobs in the queue (Slurm's QOS
 *                                   MaxSubmitJobsPerUser)
 *   queue max_submit_jobs           everyone's active jobs in the queue (GrpSubmitJobs)
 * Active means pending, running, recovering or stopping: the records that cannot be
 * dropped. A finished record never counts: at max_job_count the one that ended first is
 * dropped for a new job (sched_job.c), so finished records block nobody. Root and
 * members of operator_group are exempt, as from the job caps; root still meets
 * max_job_count itself.
 *
 * The counts are kept at every transition (sched_limits_account()), so that a check costs
 * nothing however many records exist: one table, keyed by (queue, uid), holds each uid's
 * drafts and active jobs (queue 0) and, per queue (1 + its index), each uid's active jobs
 * and everyone's (the key marked `all`). A job's queue and uid never change while it
 * counts. Should the table not grow (no memory), the counts are scanned from the records
 * from then on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

struct sched_uid_jobs {
	size_t queue;	/* 0: the cluster's drafts and active jobs; 1 + queue index */
	bool all;	/* with a queue: everyone's active jobs there (uid 0) */
	bool used;
	uid_t uid;
	size_t live;
};

static bool is_live(enum sched_job_state s)
{
	return s != SCHED_JOB_NONE && !sched_job_state_is_terminal(s);
}

/* Counted in its queue: pending, running, recovering or stopping (not a draft, nor an
 * array's record, which runs nothing there: its elements are counted). */
static bool is_queued(const struct sched_job *j, enum sched_job_state s)
{
	return is_live(s) && s != SCHED_JOB_DRAFT && j->spec &&
	       !(j->spec->array.count && !j->array_serial);
}

static size_t key_home(size_t queue, bool all, uid_t uid, size_t cap)
{
	return (((size_t)uid * 2654435761u) ^ (queue * 40503u) ^ (all ? 0x9e37u : 0)) & (cap - 1);
}

static struct sched_uid_jobs *key_find(const struct sched_cluster *c, size_t queue, bool all,
				       uid_t uid)
{
	size_t i;

	if (!c->uid_jobs)
		return NULL;
	for (i = key_home(queue, all, uid, c->uid_jobs_cap); c->uid_jobs[i].used;
	     i = (i + 1) & (c->uid_jobs_cap - 1)) {
		const struct sched_uid_jobs *e = &c->uid_jobs[i];

		if (e->queue == queue && e->all == all && e->uid == uid)
			return &c->uid_jobs[i];
	}
	return NULL;
}

static size_t free_slot(const struct sched_uid_jobs *t, size_t cap, const struct sched_uid_jobs *e)
{
	size_t i;

	for (i = key_home(e->queue, e->all, e->uid, cap); t[i].used; i = (i + 1) & (cap - 1))
		;
	return i;
}

/* The entry of the key, added (the table grown at three quarters) when new; NULL: no memory. */
static struct sched_uid_jobs *key_add(struct sched_cluster *c, size_t queue, bool all, uid_t uid)
{
	struct sched_uid_jobs *e = key_find(c, queue, all, uid), key = { queue, all, true, uid, 0 };

	if (e)
		return e;
	if ((c->uid_jobs_used + 1) * 4 > c->uid_jobs_cap * 3) {
		size_t cap = c->uid_jobs_cap ? c->uid_jobs_cap * 2 : 64;
		struct sched_uid_jobs *n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t k = 0; k < c->uid_jobs_cap; k++)
			if (c->uid_jobs[k].used)
				n[free_slot(n, cap, &c->uid_jobs[k])] = c->uid_jobs[k];
		free(c->uid_jobs);
		c->uid_jobs = n;
		c->uid_jobs_cap = cap;
	}
	e = &c->uid_jobs[free_slot(c->uid_jobs, c->uid_jobs_cap, &key)];
	*e = key;
	c->uid_jobs_used++;
	return e;
}

/* Add @delta (+1 or -1) to the key's count; false when the table could not grow. */
static bool key_count(struct sched_cluster *c, size_t queue, bool all, uid_t uid, int delta)
{
	struct sched_uid_jobs *e = delta > 0 ? key_add(c, queue, all, uid) :
					       key_find(c, queue, all, uid);

	if (!e)
		return delta < 0; /* a key that counts nothing has nothing to take away */
	if (delta > 0)
		e->live++;
	else if (e->live)
		e->live--;
	return true;
}

void sched_limits_account(struct sched_cluster *c, const struct sched_job *j,
			  enum sched_job_state from, enum sched_job_state to)
{
	int live = (int)is_live(to) - (int)is_live(from);
	int queued = (int)is_queued(j, to) - (int)is_queued(j, from);
	size_t q = 1 + j->queue_index;
	bool ok = true;

	if (live > 0)
		c->live_job_count++;
	else if (live < 0)
		c->live_job_count--;
	if (c->uid_jobs_lost)
		return;
	if (live)
		ok = key_count(c, 0, false, j->uid, live);
	if (ok && queued)
		ok = key_count(c, q, false, j->uid, queued) && key_count(c, q, true, 0, queued);
	if (!ok) {
		free(c->uid_jobs);
		c->uid_jobs = NULL;
		c->uid_jobs_cap = c->uid_jobs_used = 0;
		c->uid_jobs_lost = true;
	}
}

/* The count of a key, from the table or (lost) from the records. */
static size_t key_live(const struct sched_cluster *c, size_t queue, bool all, uid_t uid)
{
	const struct sched_uid_jobs *e;
	size_t n = 0;

	if (!c->uid_jobs_lost) {
		e = key_find(c, queue, all, uid);
		return e ? e->live : 0;
	}
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (!all && j->uid != uid)
			continue;
		n += queue ? is_queued(j, j->state) && 1 + j->queue_index == queue :
			     is_live(j->state);
	}
	return n;
}

size_t sched_limits_user_jobs(const struct sched_cluster *c, uid_t uid)
{
	return key_live(c, 0, false, uid);
}

int sched_limits_check_counts(const struct sched_cluster *c, char *reason)
{
	size_t live = 0, queued = 0, kept = 0, kept_queued = 0, kept_all = 0;

	for (size_t i = 0; i < c->job_count; i++) {
		live += is_live(c->jobs[i]->state);
		queued += is_queued(c->jobs[i], c->jobs[i]->state);
	}
	for (size_t i = 0; i < c->uid_jobs_cap; i++) {
		const struct sched_uid_jobs *e = &c->uid_jobs[i];

		if (!e->used)
			continue;
		if (!e->queue)
			kept += e->live;
		else if (e->all)
			kept_all += e->live;
		else
			kept_queued += e->live;
	}
	if (live != c->live_job_count ||
	    (!c->uid_jobs_lost && (kept != live || kept_queued != queued || kept_all != queued))) {
		sched_reason(reason, "%zu drafts and active jobs and %zu in queues, but the counters "
				     "say %zu, %zu by uid, %zu and %zu in queues",
			     live, queued, c->live_job_count, kept, kept_queued, kept_all);
		return -EUCLEAN;
	}
	return 0;
}

static int check(struct sched_cluster *c, const char *name, const struct conf_queue *q,
		 uid_t uid, bool is_operator, size_t credit, char *reason)
{
	const struct conf_cluster *conf = c->conf;
	const struct sched_job *old = sched_cluster_find_job(c, name);
	/* filling one's draft keeps its record: it counts already */
	bool new_record = !old || old->state != SCHED_JOB_DRAFT;
	size_t users_max, user_live, all_live, queue_user = 0, queue_all = 0;
	char who[96];

	if (uid == 0 || is_operator)
		return 0;
	user_live = sched_limits_user_jobs(c, uid);
	if (q) {
		size_t key = 1 + (size_t)(q - conf->queues);

		queue_user = key_live(c, key, false, uid);
		queue_all = key_live(c, key, true, 0);
	}
	all_live = c->live_job_count;
	/* records that stand for this one (an array's for its first element) */
	user_live -= credit < user_live ? credit : user_live;
	all_live -= credit < all_live ? credit : all_live;
	/* checked submissions not made yet are the jobs they will be (item 1 of issue 15:
	 * concurrent closes must not all pass one limit); a draft being filled counts
	 * already as a draft, not yet in its queue */
	for (const struct sched_hold *h = c->holds; h; h = h->next) {
		const struct sched_job *hj;

		if (strcmp(h->name, name) == 0)
			continue;
		hj = sched_cluster_find_job(c, h->name);
		if (!hj || !is_live(hj->state)) {
			all_live++;
			user_live += h->uid == uid;
		}
		if (q && h->queue == q) {
			queue_all++;
			queue_user += h->uid == uid;
		}
	}
	if (conf->operator_group)
		snprintf(who, sizeof(who),
			 "only root and members of operator_group \"%s\" may exceed it",
			 conf->operator_group);
	else
		snprintf(who, sizeof(who), "only root may exceed it");
	if (new_record && user_live >= conf->max_job_count_per_user) {
		sched_reason(reason, "uid %u already has %zu drafts and active jobs, the cluster's "
				     "max_job_count_per_user %u (%s); wait for some to end, cancel "
				     "some or remove drafts you do not need (rmdir jobs/<name>; "
				     "finished jobs do not count), or ask an operator",
			     (unsigned)uid, user_live, conf->max_job_count_per_user, who);
		return -EAGAIN;
	}
	users_max = conf->max_job_count > conf->reserved_job_count ?
			    conf->max_job_count - conf->reserved_job_count :
			    0;
	if (new_record && all_live >= users_max) {
		sched_reason(reason, "the last %u of the cluster's %u job records are kept for "
				     "root%s (reserved_job_count) and %zu drafts and active jobs "
				     "hold the others; submit again when some have ended",
			     conf->reserved_job_count, conf->max_job_count,
			     conf->operator_group ? " and operators" : "", all_live);
		return -EAGAIN;
	}
	if (q && q->max_submit_jobs_per_user && queue_user >= q->max_submit_jobs_per_user) {
		sched_reason(reason, "uid %u already has %zu pending or running jobs in queue "
				     "\"%s\", its max_submit_jobs_per_user %u (%s); wait for some to "
				     "end, cancel some, use another queue or ask an operator",
			     (unsigned)uid, queue_user, q->name, q->max_submit_jobs_per_user,
			     who);
		return -EAGAIN;
	}
	if (q && q->max_submit_jobs && queue_all >= q->max_submit_jobs) {
		sched_reason(reason, "queue \"%s\" already has %zu pending or running jobs, its "
				     "max_submit_jobs %u (%s); wait for some to end, use another "
				     "queue or ask an operator",
			     q->name, queue_all, q->max_submit_jobs, who);
		return -EAGAIN;
	}
	return 0;
}

int sched_limits_check(struct sched_cluster *c, const char *name, const struct conf_queue *q,
		       uid_t uid, bool is_operator, char *reason)
{
	return check(c, name, q, uid, is_operator, 0, reason);
}

int sched_limits_check_first_element(struct sched_cluster *c, const char *name,
				     const struct conf_queue *q, uid_t uid, char *reason)
{
	return check(c, name, q, uid, false, 1, reason);
}
