/* SPDX-License-Identifier: MIT */
/*
 * Job control, as Slurm's scontrol gives it: hold and release, requeue, and update of a
 * job's priority or time_limit (ascend_sched.h, "job control"). Each is a request of
 * the job's owner or root; a refusal changes nothing and says why.
 *
 * Calls: sched_job.c (transitions, stops), sched_pend_order.c (a hold takes a pending
 * job out of the service order, a release or a new priority puts it back), sched_pass
 * (sched_pass_request()); nothing calls back here but the embedding program.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

static const char *who(const struct sched_job *j, uid_t uid)
{
	return uid == j->uid ? "its owner" : "root";
}

/* Job control is for jobs that run: a service's instances follow their service. */
static int controllable(const struct sched_job *j, const char *verb, char *reason)
{
	if (sched_job_is_instance(j)) {
		sched_reason(reason, "%s is an instance of service %s, which starts, stops and "
				     "moves it; %s the service's jobs by scaling it (echo scale <n> "
				     "> jobs/%s/ctl) or cancel the service",
			     j->name, j->service, verb, j->service);
		return -EINVAL;
	}
	if (sched_job_is_service(j)) {
		sched_reason(reason, "%s is a service: it runs no processes itself; scale it "
				     "(echo scale <n> > jobs/%s/ctl) or cancel it",
			     j->name, j->name);
		return -EBUSY;
	}
	return 0;
}

int sched_job_hold(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec,
		   char *reason)
{
	enum sched_job_hold kind;
	char why[SCHED_REASON_MAX];
	struct sched_job *j;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0 || (r = controllable(j, "hold", reason)) < 0)
		return r;
	/* root's hold of another's job is an admin hold; an owner's (root's own too) not */
	kind = uid != j->uid ? SCHED_HOLD_ADMIN : SCHED_HOLD_USER;
	if (j->state != SCHED_JOB_PENDING &&
	    !(j->state == SCHED_JOB_STOPPING && j->stop_to == SCHED_JOB_PENDING &&
	      !j->stop_cancelled)) {
		if (j->state == SCHED_JOB_RUNNING || j->state == SCHED_JOB_RECOVERING)
			sched_reason(reason, "job %s is %s: only a pending job is held; to stop it "
					     "and keep it from starting again, requeue it first "
					     "(echo requeue hold > jobs/%s/ctl)",
				     name, sched_job_state_name(j->state), name);
		else
			sched_reason(reason, "job %s is %s: only a pending job is held", name,
				     sched_job_state_name(j->state));
		return -EBUSY;
	}
	if (j->hold_kind >= kind)
		return 0;
	if (j->state == SCHED_JOB_PENDING && !j->hold_kind)
		sched_pend_order_note(c, j, false);
	j->hold_kind = (unsigned char)kind;
	j->reserved_start_usec = 0;
	j->reason_key = 0;
	j->change_usec = now_usec;
	if (j->state == SCHED_JOB_PENDING) {
		sched_job_hold_reason(j, why);
		sched_job_set_pending_reason(c, j, now_usec, why);
	}
	sched_job_touch(c, j);
	sched_cluster_changed(c);
	sched_event_add(c, now_usec, SCHED_EV_HELD, j, NULL, -1, "held by %s%s", who(j, uid),
			j->state == SCHED_JOB_STOPPING ?
				"; it stays pending once its processes are gone" :
				"; it does not start until released");
	/* what it reserved or was promised goes to the others */
	sched_pass_request(c, now_usec);
	return 0;
}

int sched_job_release(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec,
		      char *reason)
{
	struct sched_job *j;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0)
		return r;
	if (!j->hold_kind)
		return 0;
	if (j->hold_kind == SCHED_HOLD_ADMIN && uid != 0) {
		sched_reason(reason, "job %s is held by root (an admin hold): only root releases "
				     "it; ask an administrator",
			     name);
		return -EPERM;
	}
	j->hold_kind = SCHED_HOLD_NONE;
	j->reason_key = 0;
	j->change_usec = now_usec;
	if (j->state == SCHED_JOB_PENDING) {
		sched_pend_order_note(c, j, true);
		sched_job_set_pending_reason(c, j, now_usec,
					     "released; waits for the next scheduling pass");
	}
	sched_job_touch(c, j);
	sched_cluster_changed(c);
	sched_event_add(c, now_usec, SCHED_EV_RELEASED, j, NULL, -1,
			"released by %s; it takes its turn in queue %s again", who(j, uid),
			j->spec ? j->spec->queue : "?");
	sched_pass_request(c, now_usec);
	return 0;
}

int sched_job_requeue(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec,
		      char *reason)
{
	char why[SCHED_REASON_MAX];
	struct sched_job *j;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0 || (r = controllable(j, "requeue", reason)) < 0)
		return r;
	if (j->state == SCHED_JOB_STOPPING && j->stop_to == SCHED_JOB_PENDING && !j->stop_cancelled)
		return 0;
	if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_RECOVERING) {
		if (sched_job_state_is_terminal(j->state) && j->state != SCHED_JOB_REJECTED)
			sched_reason(reason, "job %s is %s: a finished job starts again when its "
					     "spec is written again (cp jobs/%s/spec /tmp/%s.yaml && "
					     "cp /tmp/%s.yaml jobs/)",
				     name, sched_job_state_name(j->state), name, name, name);
		else
			sched_reason(reason, "job %s is %s: only a running job is requeued", name,
				     sched_job_state_name(j->state));
		return -EBUSY;
	}
	snprintf(why, sizeof(why), "requeued by %s", who(j, uid));
	sched_job_stop_for(c, j, SCHED_JOB_PENDING, SCHED_EV_REQUEUED, now_usec, why);
	j->stop_requeue = true;
	/* no preemptor counts on its NPUs */
	j->preempted_by_serial = 0;
	sched_job_stop_check_gone(c, j, now_usec);
	sched_pass_request(c, now_usec);
	return 0;
}

/* @j's spec as written, with @field set to @value: its new normalized text, or NULL. */
static char *spec_text_with(const struct sched_job *j, enum sched_job_field field,
			    uint64_t value, size_t *ret_len)
{
	struct conf_job_spec *s = NULL;
	struct conf_error err = { 0 };
	char file[CONF_NAME_MAX + 8], *text = NULL;

	/* from the text, not j->spec: an elastic job's spec says the size it runs at */
	snprintf(file, sizeof(file), "%s.yaml", j->name);
	if (conf_job_spec_parse(j->spec_text, j->spec_len, file, j->name, &s, &err) < 0)
		return NULL;
	if (field == SCHED_FIELD_PRIORITY)
		s->priority = (unsigned)value;
	else
		s->time_limit_sec = value;
	if (conf_job_spec_render_yaml(s, &text, ret_len) < 0)
		text = NULL;
	conf_job_spec_free(s);
	return text;
}

int sched_job_update(struct sched_cluster *c, const char *name, uid_t uid, bool is_operator,
		     enum sched_job_field field, uint64_t value, uint64_t now_usec, char *reason)
{
	const char *what = field == SCHED_FIELD_PRIORITY ? "priority" : "time_limit";
	const struct conf_queue *q;
	struct conf_job_spec want;
	struct sched_job *j;
	uint64_t was;
	size_t len;
	char *text;
	bool in_order;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0 || (r = controllable(j, "update", reason)) < 0)
		return r;
	if (!j->spec || !j->spec_text || j->state == SCHED_JOB_DRAFT ||
	    sched_job_state_is_terminal(j->state)) {
		sched_reason(reason, "job %s is %s: only a pending or running job is updated", name,
			     sched_job_state_name(j->state));
		return -EBUSY;
	}
	if (field == SCHED_FIELD_PRIORITY ? value > 1000 :
					    value == 0 || value > CONF_TIME_LIMIT_MAX_SEC) {
		if (field == SCHED_FIELD_PRIORITY)
			sched_reason(reason, "priority %llu: use a whole number from 0 to 1000, or "
					     "low, normal or high",
				     (unsigned long long)value);
		else
			sched_reason(reason, "time_limit: use a duration from 1s to %ud, e.g. 90m "
					     "or 12h",
				     CONF_TIME_LIMIT_MAX_SEC / 86400);
		return -EINVAL;
	}
	was = field == SCHED_FIELD_PRIORITY ? j->spec->priority : j->spec->time_limit_sec;
	if (was == value)
		return 0;
	/* the queue's caps bind the new value as they bound the spec (issue 14) */
	q = conf_cluster_find_queue(c->conf, j->spec->queue);
	want = *j->spec;
	if (field == SCHED_FIELD_PRIORITY)
		want.priority = (unsigned)value;
	else
		want.time_limit_sec = value;
	if (q && (r = sched_job_caps_check(c, q, &want, uid, is_operator, reason)) < 0)
		return r;
	text = spec_text_with(j, field, value, &len);
	if (!text) {
		sched_reason(reason, "out of memory");
		return -ENOMEM;
	}
	free(j->spec_text);
	j->spec_text = text;
	j->spec_len = len;
	in_order = j->state == SCHED_JOB_PENDING && !j->hold_kind;
	if (field == SCHED_FIELD_PRIORITY) {
		/* the order's keys do not change while a job is listed: out, then in */
		if (in_order)
			sched_pend_order_note(c, j, false);
		j->spec->priority = (unsigned)value;
		j->prio = (unsigned)value;
		if (in_order)
			sched_pend_order_note(c, j, true);
	} else {
		uint64_t ran = sched_job_run_usec(j, now_usec), limit = value * 1000000u;

		j->spec->time_limit_sec = value;
		if (j->state == SCHED_JOB_PENDING)
			j->limit_left_usec = ran < limit ? limit - ran : 0;
	}
	j->reason_key = 0;
	j->change_usec = now_usec;
	sched_job_touch(c, j);
	sched_cluster_changed(c);
	if (field == SCHED_FIELD_PRIORITY)
		sched_event_add(c, now_usec, SCHED_EV_UPDATED, j, NULL, -1,
				"priority %llu -> %llu by %s", (unsigned long long)was,
				(unsigned long long)value, who(j, uid));
	else
		sched_event_add(c, now_usec, SCHED_EV_UPDATED, j, NULL, -1,
				"%s %llu s -> %llu s by %s", what, (unsigned long long)was,
				(unsigned long long)value, who(j, uid));
	sched_pass_request(c, now_usec);
	return 0;
}
