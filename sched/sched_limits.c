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
 * The cluster-wide counts (everyone's and each uid's drafts and active jobs) are kept at
 * every transition, so that a check costs nothing however many records exist; a queue's
 * counts are taken from the job list, and only for a queue that sets a limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

struct sched_uid_jobs {
	uid_t uid;
	bool used;
	size_t live;
};

static bool is_live(enum sched_job_state s)
{
	return s != SCHED_JOB_NONE && !sched_job_state_is_terminal(s);
}

static size_t uid_home(uid_t uid, size_t cap)
{
	return ((size_t)uid * 2654435761u) & (cap - 1);
}

static struct sched_uid_jobs *uid_find(const struct sched_cluster *c, uid_t uid)
{
	size_t i;

	if (!c->uid_jobs)
		return NULL;
	for (i = uid_home(uid, c->uid_jobs_cap); c->uid_jobs[i].used;
	     i = (i + 1) & (c->uid_jobs_cap - 1))
		if (c->uid_jobs[i].uid == uid)
			return &c->uid_jobs[i];
	return NULL;
}

/* The slot of @uid, added (the table grown at three quarters) when new; NULL: no memory. */
static struct sched_uid_jobs *uid_add(struct sched_cluster *c, uid_t uid)
{
	struct sched_uid_jobs *s = uid_find(c, uid);
	size_t i;

	if (s)
		return s;
	if ((c->uid_jobs_used + 1) * 4 > c->uid_jobs_cap * 3) {
		size_t cap = c->uid_jobs_cap ? c->uid_jobs_cap * 2 : 64;
		struct sched_uid_jobs *n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t k = 0; k < c->uid_jobs_cap; k++) {
			if (!c->uid_jobs[k].used)
				continue;
			for (i = uid_home(c->uid_jobs[k].uid, cap); n[i].used; i = (i + 1) & (cap - 1))
				;
			n[i] = c->uid_jobs[k];
		}
		free(c->uid_jobs);
		c->uid_jobs = n;
		c->uid_jobs_cap = cap;
	}
	for (i = uid_home(uid, c->uid_jobs_cap); c->uid_jobs[i].used;
	     i = (i + 1) & (c->uid_jobs_cap - 1))
		;
	c->uid_jobs[i].used = true;
	c->uid_jobs[i].uid = uid;
	c->uid_jobs_used++;
	return &c->uid_jobs[i];
}

void sched_limits_account(struct sched_cluster *c, const struct sched_job *j,
			  enum sched_job_state from, enum sched_job_state to)
{
	struct sched_uid_jobs *s;

	if (is_live(from) == is_live(to))
		return;
	if (is_live(to))
		c->live_job_count++;
	else
		c->live_job_count--;
	if (c->uid_jobs_lost)
		return;
	s = is_live(to) ? uid_add(c, j->uid) : uid_find(c, j->uid);
	if (!s) {
		/* no memory: the counts are scanned from now on */
		free(c->uid_jobs);
		c->uid_jobs = NULL;
		c->uid_jobs_cap = c->uid_jobs_used = 0;
		c->uid_jobs_lost = true;
		return;
	}
	if (is_live(to))
		s->live++;
	else
		s->live--;
}

size_t sched_limits_user_jobs(const struct sched_cluster *c, uid_t uid)
{
	const struct sched_uid_jobs *s;
	size_t n = 0;

	if (c->uid_jobs_lost) {
		for (size_t i = 0; i < c->job_count; i++)
			n += c->jobs[i]->uid == uid && is_live(c->jobs[i]->state);
		return n;
	}
	s = uid_find(c, uid);
	return s ? s->live : 0;
}

int sched_limits_check_counts(const struct sched_cluster *c, char *reason)
{
	size_t live = 0, kept = 0;

	for (size_t i = 0; i < c->job_count; i++)
		live += is_live(c->jobs[i]->state);
	for (size_t i = 0; i < c->uid_jobs_cap; i++)
		kept += c->uid_jobs[i].used ? c->uid_jobs[i].live : 0;
	if (live != c->live_job_count || (!c->uid_jobs_lost && kept != live)) {
		sched_reason(reason, "%zu drafts and active jobs, but the counters say %zu (%zu by "
				     "uid)", live, c->live_job_count, kept);
		return -EUCLEAN;
	}
	return 0;
}

/* @q's active jobs: @uid's and everyone's (one pass, for a queue that sets a limit). */
static void count_queue(const struct sched_cluster *c, const struct conf_queue *q, uid_t uid,
			size_t *ret_user, size_t *ret_all)
{
	size_t qi = (size_t)(q - c->conf->queues);

	*ret_user = *ret_all = 0;
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (!is_live(j->state) || j->state == SCHED_JOB_DRAFT || !j->spec ||
		    j->queue_index != qi)
			continue;
		(*ret_all)++;
		if (j->uid == uid)
			(*ret_user)++;
	}
}

int sched_limits_check(struct sched_cluster *c, const char *name,
		       const struct conf_queue *q, uid_t uid, bool is_operator, char *reason)
{
	const struct conf_cluster *conf = c->conf;
	const struct sched_job *old = sched_cluster_find_job(c, name);
	/* filling one's draft keeps its record: it counts already */
	bool new_record = !old || old->state != SCHED_JOB_DRAFT;
	size_t users_max, user_live, queue_user = 0, queue_all = 0;
	char who[96];

	if (uid == 0 || is_operator)
		return 0;
	user_live = sched_limits_user_jobs(c, uid);
	if (q && (q->max_submit_jobs_per_user || q->max_submit_jobs))
		count_queue(c, q, uid, &queue_user, &queue_all);
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
	if (new_record && c->live_job_count >= users_max) {
		sched_reason(reason, "the last %u of the cluster's %u job records are kept for "
				     "root%s (reserved_job_count) and %zu drafts and active jobs "
				     "hold the others; submit again when some have ended",
			     conf->reserved_job_count, conf->max_job_count,
			     conf->operator_group ? " and operators" : "", c->live_job_count);
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
