/* SPDX-License-Identifier: MIT */
/*
 * Job control, as Slurm's scontrol gives it: hold and release, requeue, update of a
 * job's priority or time_limit, and resize (ascend_sched.h, "job control"). Each is a request of
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
	if (sched_job_is_array(j)) {
		sched_reason(reason, "%s is a job array: it runs no processes itself; %s its "
				     "elements one by one (jobs/%s.<index>/ctl), or cancel the "
				     "array", j->name, verb, j->name);
		return -EBUSY;
	}
	return 0;
}

/* Hold @j (pending, or stopping towards pending) as @uid asks; a no-op when held so. */
static void hold_job(struct sched_cluster *c, struct sched_job *j, uid_t uid,
		     uint64_t now_usec)
{
	/* root's hold of another's job is an admin hold; an owner's (root's own too) not */
	enum sched_job_hold kind = uid != j->uid ? SCHED_HOLD_ADMIN : SCHED_HOLD_USER;
	char why[SCHED_REASON_MAX];

	if (j->hold_kind >= kind)
		return;
	if (j->state == SCHED_JOB_PENDING && !sched_job_is_held(j))
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
}

static bool stops_to_pending(const struct sched_job *j)
{
	return j->state == SCHED_JOB_STOPPING && j->stop_to == SCHED_JOB_PENDING &&
	       !j->stop_cancelled;
}

int sched_job_hold(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec,
		   char *reason)
{
	struct sched_job *j;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0 || (r = controllable(j, "hold", reason)) < 0)
		return r;
	if (j->state != SCHED_JOB_PENDING && !stops_to_pending(j)) {
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
	hold_job(c, j, uid, now_usec);
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
	j->eligible_usec = now_usec; /* time held does not age it (Slurm's eligible time) */
	if (j->state == SCHED_JOB_PENDING && j->deps_waiting) {
		sched_job_set_pending_reason(c, j, now_usec,
					     "released; still waiting for the jobs its after: "
					     "names (status.json, dependencies)");
	} else if (j->state == SCHED_JOB_PENDING) {
		sched_pend_order_note(c, j, true);
		sched_job_set_pending_reason(c, j, now_usec,
					     "released; waits for the next scheduling pass");
	}
	sched_job_touch(c, j);
	sched_cluster_changed(c);
	if (j->deps_waiting)
		sched_event_add(c, now_usec, SCHED_EV_RELEASED, j, NULL, -1,
				"released by %s; it still waits for the jobs its after: names",
				who(j, uid));
	else
		sched_event_add(c, now_usec, SCHED_EV_RELEASED, j, NULL, -1,
				"released by %s; it takes its turn in queue %s again", who(j, uid),
				j->spec ? j->spec->queue : "?");
	sched_pass_request(c, now_usec);
	return 0;
}

int sched_job_requeue(struct sched_cluster *c, const char *name, uid_t uid, bool hold,
		      uint64_t now_usec, char *reason)
{
	char why[SCHED_REASON_MAX];
	struct sched_job *j;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0 || (r = controllable(j, "requeue", reason)) < 0)
		return r;
	if (stops_to_pending(j)) {
		if (hold)
			hold_job(c, j, uid, now_usec);
		return 0;
	}
	if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_RECOVERING) {
		if (sched_job_state_is_terminal(j->state) && sched_array_owning_name(c, name))
			sched_reason(reason, "job %s is %s, an element of array %s, which is "
					     "active: its name is the array's until the array "
					     "ends; run it again then (cp jobs/%s/spec /tmp/%s.yaml && "
					     "cp /tmp/%s.yaml jobs/), or as a job of another name",
				     name, sched_job_state_name(j->state),
				     sched_array_owning_name(c, name)->name, name, name, name);
		else if (sched_job_state_is_terminal(j->state) && j->state != SCHED_JOB_REJECTED)
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
	/* held before its stop can end: it is pending and held when it does, in one step */
	if (hold)
		hold_job(c, j, uid, now_usec);
	sched_job_stop_check_gone(c, j, now_usec);
	sched_pass_request(c, now_usec);
	return 0;
}

/*
 * @j's spec as written, with @field set to @value: its new normalized text in *@ret (and
 * *@ret_len), read back to check it (the parser's rules hold, e.g. npus a multiple of
 * tp * cp * pp). 0, -EINVAL (the text no longer parses, or the new value breaks a rule of the
 * spec: @reason says why) or -ENOMEM.
 */
static int spec_text_with(const struct sched_job *j, enum sched_job_field field,
			  uint64_t value, char **ret, size_t *ret_len, char *reason)
{
	struct conf_job_spec *s = NULL, *back = NULL;
	struct conf_error err = { 0 };
	char file[CONF_NAME_MAX + 8], msg[SCHED_REASON_MAX - 96];
	int r;

	/* from the text, not j->spec: an elastic job's spec says the size it runs at */
	snprintf(file, sizeof(file), "%s.yaml", j->name);
	r = conf_job_spec_parse(j->spec_text, j->spec_len, file, j->name, &s, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		conf_error_format(&err, msg, sizeof(msg));
		sched_reason(reason, "job %s's spec no longer parses (%s); resubmit it", j->name,
			     msg);
		return -EINVAL;
	}
	if (field == SCHED_FIELD_PRIORITY)
		s->priority = (unsigned)value;
	else if (field == SCHED_FIELD_TIME_LIMIT)
		s->time_limit_sec = value;
	else {
		s->npus = s->npus_min = s->npus_max = (unsigned)value;
		/* data parallel is what a resize scales: dp follows the new size */
		s->dp = 0;
	}
	r = conf_job_spec_render_yaml(s, ret, ret_len);
	conf_job_spec_free(s);
	if (r < 0)
		return r;
	r = conf_job_spec_parse(*ret, *ret_len, file, j->name, &back, &err);
	conf_job_spec_free(back);
	if (r < 0) {
		free(*ret);
		*ret = NULL;
		if (r == -ENOMEM)
			return r;
		/* the parser's sentence (what is wrong and what to do), cut to fit */
		sched_reason(reason, "%.400s", err.msg);
		return -EINVAL;
	}
	return 0;
}

/* j->spec_text, as spec_text_with() makes it; on failure @reason says why. */
static int replace_spec_text(struct sched_job *j, enum sched_job_field field, uint64_t value,
			     char *reason)
{
	char *text = NULL;
	size_t len;
	int r = spec_text_with(j, field, value, &text, &len, reason);

	if (r < 0) {
		if (r == -ENOMEM)
			sched_reason(reason, "out of memory");
		return r;
	}
	free(j->spec_text);
	j->spec_text = text;
	j->spec_len = len;
	return 0;
}

int sched_job_update(struct sched_cluster *c, const char *name, uid_t uid, bool is_operator,
		     enum sched_job_field field, uint64_t value, uint64_t now_usec, char *reason)
{
	const char *what = field == SCHED_FIELD_PRIORITY ? "priority" : "time_limit";
	const struct conf_queue *q;
	struct conf_job_spec want;
	struct sched_job *j;
	uint64_t was, ran;
	bool in_order;
	int r;

	if (field == SCHED_FIELD_NPUS) /* a size is a resize's */
		return sched_job_resize(c, name, uid, is_operator,
					value > UINT32_MAX ? UINT32_MAX : (unsigned)value, now_usec,
					reason);
	r = sched_job_for_owner(c, name, uid, &j);
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
	ran = sched_job_run_usec(j, now_usec);
	if (field == SCHED_FIELD_TIME_LIMIT && j->state == SCHED_JOB_PENDING &&
	    ran >= value * 1000000u) {
		sched_reason(reason, "job %s has run %llu s: a time_limit of %llu s is used up (it "
				     "would start only to time out); give more, or cancel it",
			     name, (unsigned long long)(ran / 1000000u),
			     (unsigned long long)value);
		return -EINVAL;
	}
	if (field == SCHED_FIELD_TIME_LIMIT && value > was && was && uid != 0 && !is_operator &&
	    j->state != SCHED_JOB_PENDING) {
		sched_reason(reason, "job %s has started: its time_limit is only shortened by its "
				     "owner (it may run ahead of a reservation on the promise of "
				     "%llu s; as in Slurm, only root or an operator raises it)",
			     name, (unsigned long long)was);
		return -EACCES;
	}
	/* the queue's cap of this field binds the new value as it bound the spec (issue
	 * 14); the other fields count as within theirs: root may have let them past */
	q = conf_cluster_find_queue(c->conf, j->spec->queue);
	want = *j->spec;
	want.priority = field == SCHED_FIELD_PRIORITY ? (unsigned)value : 0;
	want.time_limit_sec = field == SCHED_FIELD_TIME_LIMIT ? value : 0;
	want.npus_min = want.npus_max = 1;
	if (q && (r = sched_job_caps_check(c, q, &want, uid, is_operator, reason)) < 0)
		return r;
	r = replace_spec_text(j, field, value, reason);
	if (r < 0)
		return r;
	in_order = j->state == SCHED_JOB_PENDING && !sched_job_is_held(j);
	if (field == SCHED_FIELD_PRIORITY) {
		/* the order's keys do not change while a job is listed: out, then in */
		if (in_order)
			sched_pend_order_note(c, j, false);
		j->spec->priority = (unsigned)value;
		j->prio = (unsigned)value;
		if (in_order)
			sched_pend_order_note(c, j, true);
	} else {
		uint64_t limit = value * 1000000u;

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

int sched_job_resize(struct sched_cluster *c, const char *name, uid_t uid, bool is_operator,
		     unsigned npus, uint64_t now_usec, char *reason)
{
	const struct conf_queue *q;
	struct conf_job_spec want;
	struct sched_job *j;
	char why[SCHED_REASON_MAX];
	unsigned was;
	bool in_order;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0 || (r = controllable(j, "resize", reason)) < 0)
		return r;
	if (!j->spec || !j->spec_text ||
	    (j->state != SCHED_JOB_PENDING && j->state != SCHED_JOB_RUNNING &&
	     j->state != SCHED_JOB_RECOVERING)) {
		sched_reason(reason, "job %s is %s: only a pending or running job is resized", name,
			     sched_job_state_name(j->state));
		return -EBUSY;
	}
	if (j->spec->npus_min != j->spec->npus_max) {
		sched_reason(reason, "job %s is elastic (npus: {min: %u, max: %u}): the scheduler "
				     "sizes it; to fix its size, cancel it and resubmit it with "
				     "`npus: N`",
			     name, j->spec->npus_min, j->spec->npus_max);
		return -EINVAL;
	}
	was = j->spec->npus;
	if (npus == was)
		return 0;
	if (!npus) {
		sched_reason(reason, "resize 0: a job has at least 1 NPU; cancel it instead");
		return -EINVAL;
	}
	q = conf_cluster_find_queue(c->conf, j->spec->queue);
	/* the queue's max_npus binds the new size as it bound the spec (issue 14) */
	want = *j->spec;
	want.priority = 0;
	want.time_limit_sec = 0;
	want.npus = want.npus_min = want.npus_max = npus;
	if (q && (r = sched_job_caps_check(c, q, &want, uid, is_operator, reason)) < 0)
		return r;
	r = sched_check_feasible(c, npus, sched_job_type(c, j), reason);
	if (r < 0)
		return r;
	if (q && c->conf->enable_quota_limit && q->quota_npus && npus > q->quota_npus &&
	    !q->may_borrow) {
		sched_reason(reason, "queue %s has a quota of %u NPUs and may not borrow; resize "
				     "to at most %u",
			     q->name, q->quota_npus, q->quota_npus);
		return -ENOSPC;
	}
	r = replace_spec_text(j, SCHED_FIELD_NPUS, npus, reason);
	if (r < 0)
		return r;
	in_order = j->state == SCHED_JOB_PENDING && !sched_job_is_held(j);
	if (in_order)
		sched_pend_order_note(c, j, false);
	j->spec->npus = j->spec->npus_min = j->spec->npus_max = npus;
	j->spec->dp = 0; /* as in the new text: dp follows the size */
	j->need_min = j->need_max = npus;
	j->type_mask = sched_type_mask(c, npus, sched_job_type(c, j));
	if (in_order)
		sched_pend_order_note(c, j, true);
	j->reason_key = 0;
	j->reserved_start_usec = 0;
	sched_reason(why, "resized from %u to %u %s by %s", was, npus,
		     conf_plural(npus, "NPU", "NPUs"), who(j, uid));
	if (j->state == SCHED_JOB_PENDING) {
		j->change_usec = now_usec;
		sched_job_touch(c, j);
		sched_cluster_changed(c);
		sched_event_add(c, now_usec, SCHED_EV_RESIZED, j, NULL, -1, "%s", why);
	} else {
		/* a new generation at the new size, from its newest checkpoint */
		c->resizes++;
		sched_job_stop_for(c, j, SCHED_JOB_PENDING, SCHED_EV_RESIZED, now_usec, why);
		j->stop_requeue = true;
		j->preempted_by_serial = 0;
		sched_job_stop_check_gone(c, j, now_usec);
	}
	sched_pass_request(c, now_usec);
	return 0;
}
