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
 * The counts are taken from the job list at each check rather than kept, so that they
 * stay right across every transition, resubmission, draft and restore without a second
 * bookkeeping: one pass over the records, as job_index() already makes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sched_internal.h"

struct job_counts {
	size_t live;		/* everyone's drafts and active jobs */
	size_t user_live;	/* @uid's drafts and active jobs */
	size_t queue_user;	/* @uid's active jobs in the queue */
	size_t queue_all;	/* everyone's active jobs in the queue */
};

static void count_jobs(const struct sched_cluster *c, uid_t uid, const struct conf_queue *q,
		       struct job_counts *n)
{
	size_t qi = q ? (size_t)(q - c->conf->queues) : 0;

	memset(n, 0, sizeof(*n));
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (sched_job_state_is_terminal(j->state))
			continue;
		n->live++;
		if (j->uid == uid)
			n->user_live++;
		if (!q || j->state == SCHED_JOB_DRAFT || !j->spec || j->queue_index != qi)
			continue;
		n->queue_all++;
		if (j->uid == uid)
			n->queue_user++;
	}
}

int sched_limits_check(struct sched_cluster *c, const char *name,
		       const struct conf_queue *q, uid_t uid, bool is_operator, char *reason)
{
	const struct conf_cluster *conf = c->conf;
	const struct sched_job *old = sched_cluster_find_job(c, name);
	/* filling one's draft keeps its record: it counts already */
	bool new_record = !old || old->state != SCHED_JOB_DRAFT;
	size_t users_max;
	struct job_counts n;
	char who[96];

	if (uid == 0 || is_operator)
		return 0;
	count_jobs(c, uid, q, &n);
	if (conf->operator_group)
		snprintf(who, sizeof(who),
			 "only root and members of operator_group \"%s\" may exceed it",
			 conf->operator_group);
	else
		snprintf(who, sizeof(who), "only root may exceed it");
	if (new_record && n.user_live >= conf->max_job_count_per_user) {
		sched_reason(reason, "uid %u already has %zu drafts and active jobs, the cluster's "
				     "max_job_count_per_user %u (%s); wait for some to end, cancel "
				     "some or remove drafts you do not need (rmdir jobs/<name>; "
				     "finished jobs do not count), or ask an operator",
			     (unsigned)uid, n.user_live, conf->max_job_count_per_user, who);
		return -EAGAIN;
	}
	users_max = conf->max_job_count > conf->reserved_job_count ?
			    conf->max_job_count - conf->reserved_job_count :
			    0;
	if (new_record && n.live >= users_max) {
		sched_reason(reason, "the last %u of the cluster's %u job records are kept for "
				     "root%s (reserved_job_count) and %zu drafts and active jobs "
				     "hold the others; submit again when some have ended",
			     conf->reserved_job_count, conf->max_job_count,
			     conf->operator_group ? " and operators" : "", n.live);
		return -EAGAIN;
	}
	if (q && q->max_submit_jobs_per_user && n.queue_user >= q->max_submit_jobs_per_user) {
		sched_reason(reason, "uid %u already has %zu pending or running jobs in queue "
				     "\"%s\", its max_submit_jobs_per_user %u (%s); wait for some to "
				     "end, cancel some, use another queue or ask an operator",
			     (unsigned)uid, n.queue_user, q->name, q->max_submit_jobs_per_user,
			     who);
		return -EAGAIN;
	}
	if (q && q->max_submit_jobs && n.queue_all >= q->max_submit_jobs) {
		sched_reason(reason, "queue \"%s\" already has %zu pending or running jobs, its "
				     "max_submit_jobs %u (%s); wait for some to end, use another "
				     "queue or ask an operator",
			     q->name, n.queue_all, q->max_submit_jobs, who);
		return -EAGAIN;
	}
	return 0;
}
