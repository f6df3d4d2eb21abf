/* SPDX-License-Identifier: MIT */
/*
 * Job dependencies (issue 19 item 5), Slurm's --dependency=afterok/afterany: a spec's
 * `after:` names jobs that must have completed (afterok, the default) or ended however
 * (afterany) before it may start. Until then the job is pending and passed by as a held
 * one is (sched_job_is_held()): out of the pending order, no reservation, it preempts
 * nobody. A dependency that can no longer be met (an afterok job that failed, was
 * cancelled or timed out) cancels the job, as Slurm's kill_invalid_depend does, and so
 * on down a chain: a pipeline whose step failed does not leave its later steps waiting
 * forever.
 *
 * A dependency is on the job record the name had at submission (its serial): submitting
 * the name again later is another job. Only existing jobs may be named, so no cycle can
 * form.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* Has job @d ended in a way that meets a dependency of kind @any on it? */
static bool meets(const struct sched_job *d, bool any)
{
	if (!sched_job_state_is_terminal(d->state))
		return false;
	return any || d->state == SCHED_JOB_COMPLETED;
}

/* The record of dependency @k of @j, or NULL when it is gone. */
static struct sched_job *dep_job(struct sched_cluster *c, const struct sched_job *j,
				 unsigned k)
{
	struct sched_job *d = sched_cluster_find_job(c, j->spec->after[k].name);

	return d && d->serial == j->deps[k].serial ? d : NULL;
}

int sched_deps_check(struct sched_cluster *c, const struct conf_job_spec *spec,
		     char *reason)
{
	for (unsigned k = 0; k < spec->after_count; k++) {
		const struct conf_job_after *a = &spec->after[k];
		const struct sched_job *d = sched_cluster_find_job(c, a->name);
		const struct sched_job *owner = sched_array_owning_name(c, a->name);

		/* an element of an active array not made yet (or a record of an earlier
		 * run of it): no job to wait for yet */
		if (owner && (!d || d->array_serial != owner->serial)) {
			sched_reason(reason, "after: job %s is an element of array %s not made "
					     "yet; wait for the whole array (after: [%s])",
				     a->name, owner->name, owner->name);
			return -EINVAL;
		}
		if (!d || d->state == SCHED_JOB_DRAFT) {
			sched_reason(reason, "after: job %s %s; a job waits only for jobs "
					     "submitted before it",
				     a->name, d ? "is a draft, not a job yet" : "does not exist");
			return -EINVAL;
		}
		if (sched_job_is_service(d) || sched_job_is_instance(d)) {
			sched_reason(reason, "after: job %s is %s, which runs until it is "
					     "cancelled; wait for a job that ends",
				     a->name, sched_job_is_service(d) ? "a service" :
									 "a service's instance");
			return -EINVAL;
		}
		if (!a->any && sched_job_state_is_terminal(d->state) &&
		    d->state != SCHED_JOB_COMPLETED) {
			sched_reason(reason, "after: job %s ended %s, so it can never complete "
					     "(afterok); submit it again first, or wait for it "
					     "with afterany:%s",
				     a->name, sched_job_state_name(d->state), a->name);
			return -EINVAL;
		}
	}
	return 0;
}

/* "waiting for job prep to complete (afterok) and 2 more jobs" into @why. */
static void waiting_reason(const struct sched_job *j, char *why)
{
	unsigned first = 0, n = 0;
	char more[48] = "";

	for (unsigned k = 0; k < j->spec->after_count; k++)
		if (!j->deps[k].met && n++ == 0)
			first = k;
	if (n > 1)
		snprintf(more, sizeof(more), " and %u more job%s", n - 1, n > 2 ? "s" : "");
	sched_reason(why, "waiting for job %s to %s (%s)%s", j->spec->after[first].name,
		     j->spec->after[first].any ? "end" : "complete",
		     j->spec->after[first].any ? "afterany" : "afterok", more);
}

/* @j no longer waits on its unmet dependencies (met, or it ends): their counts drop. */
static void drop_dependents(struct sched_cluster *c, const struct sched_job *j)
{
	for (unsigned k = 0; k < j->spec->after_count; k++) {
		struct sched_job *d;

		if (j->deps[k].met || !(d = dep_job(c, j, k)) || !d->dependents)
			continue;
		d->dependents--;
	}
}

/* A dependency of pending job @j that can never be met: cancel it. */
static void never(struct sched_cluster *c, struct sched_job *j, unsigned k,
		  const struct sched_job *d, uint64_t now_usec)
{
	char why[SCHED_REASON_MAX];

	if (d)
		sched_reason(why, "dependency never satisfied: job %s ended %s and this one "
				  "waited for it to complete (afterok); cancelled",
			     d->name, sched_job_state_name(d->state));
	else
		sched_reason(why, "dependency never satisfied: the record of job %s it waited "
				  "for is gone; cancelled",
			     j->spec->after[k].name);
	sched_job_transition(c, j, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED, now_usec, why);
}

/* Look at @j's dependencies again: met ones counted, a hopeless one cancels it. */
static void reconsider(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	char why[SCHED_REASON_MAX];
	unsigned before = j->deps_waiting;

	for (unsigned k = 0; k < j->spec->after_count && j->deps_waiting; k++) {
		struct sched_job *d;

		if (j->deps[k].met)
			continue;
		d = dep_job(c, j, k);
		if (d && !sched_job_state_is_terminal(d->state))
			continue;
		if (d && meets(d, j->spec->after[k].any)) {
			if (d->dependents)
				d->dependents--;
			j->deps[k].met = true;
			j->deps_waiting--;
			sched_event_add(c, now_usec, SCHED_EV_DEPENDENCY, j, NULL, -1,
					"dependency met: job %s %s (%s)", d->name,
					sched_job_state_name(d->state),
					j->spec->after[k].any ? "afterany" : "afterok");
			continue;
		}
		if (!d && j->spec->after[k].any) { /* gone: it ended, however */
			j->deps[k].met = true;
			j->deps_waiting--;
			sched_event_add(c, now_usec, SCHED_EV_DEPENDENCY, j, NULL, -1,
					"dependency met: the record of job %s is gone, so it "
					"ended (afterany)", j->spec->after[k].name);
			continue;
		}
		never(c, j, k, d, now_usec);
		return;
	}
	if (j->deps_waiting == before)
		return;
	if (j->deps_waiting) {
		if (j->hold_kind) /* a hold says what to do first */
			sched_job_hold_reason(j, why);
		else
			waiting_reason(j, why);
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec, why);
		return;
	}
	c->deps_jobs--;
	j->change_usec = now_usec;
	j->eligible_usec = now_usec; /* the wait for its `after:` jobs does not age it */
	if (sched_job_is_array(j)) { /* an array's record is never placed: it goes on */
		sched_array_deps_met(c, j, now_usec);
		return;
	}
	if (!j->hold_kind) {
		sched_pend_order_note(c, j, true);
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec,
				     "dependencies met; waits for the next scheduling pass");
	} else {
		sched_job_hold_reason(j, why);
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec, why);
	}
	sched_pass_request(c, now_usec);
}

struct sched_dep *sched_deps_prepare(struct sched_cluster *c, const struct conf_job_spec *spec)
{
	struct sched_dep *deps;

	if (!spec->after_count)
		return NULL;
	deps = calloc(spec->after_count, sizeof(*deps));
	for (unsigned k = 0; deps && k < spec->after_count; k++) {
		const struct sched_job *d = sched_cluster_find_job(c, spec->after[k].name);

		/* as the check at the close saw it: what is met now stays met, whatever
		 * becomes of the record (a full table drops the oldest ended one) */
		deps[k].serial = d ? d->serial : 0;
		deps[k].met = d && meets(d, spec->after[k].any);
	}
	return deps;
}

int sched_deps_attach(struct sched_cluster *c, struct sched_job *j, struct sched_dep *deps,
		      uint64_t now_usec)
{
	char why[SCHED_REASON_MAX];

	if (!j->spec || !j->spec->after_count || j->state != SCHED_JOB_PENDING) {
		free(deps);
		return 0;
	}
	if (!deps)
		return -ENOMEM;
	j->deps = deps;
	j->deps_waiting = 0;
	for (unsigned k = 0; k < j->spec->after_count; k++) {
		struct sched_job *d;

		if (j->deps[k].met)
			continue;
		j->deps_waiting++;
		if ((d = dep_job(c, j, k)))
			d->dependents++;
	}
	if (!j->deps_waiting)
		return 0; /* every one had ended as asked */
	c->deps_jobs++;
	/* out of the pending order, as a held job is (an array's record never was in it) */
	if (!j->hold_kind && !sched_job_is_array(j))
		sched_pend_order_note(c, j, false);
	waiting_reason(j, why);
	sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec, why);
	sched_event_add(c, now_usec, SCHED_EV_DEPENDENCY, j, NULL, -1, "%s", why);
	reconsider(c, j, now_usec); /* a record gone since the close */
	return 0;
}

/* Look again at every waiting job, until nothing more changes (each cancel below ends
 * a job, whose dependents are looked at by this loop, not by a call in a call). */
static void settle(struct sched_cluster *c, uint64_t now_usec)
{
	c->deps_resolving = true;
	while (c->deps_again && c->deps_jobs) {
		c->deps_again = false;
		for (size_t i = 0; i < c->job_count; i++) {
			struct sched_job *w = c->jobs[i];

			if (w->deps_waiting && w->state == SCHED_JOB_PENDING)
				reconsider(c, w, now_usec);
		}
	}
	c->deps_again = false;
	c->deps_resolving = false;
}

void sched_deps_job_ended(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	if (j->deps_waiting) { /* it ended before its dependencies did (cancelled) */
		drop_dependents(c, j);
		j->deps_waiting = 0;
		c->deps_jobs--;
	}
	/* most jobs that end have nobody waiting for them: no look at the others */
	if (!j->dependents || !c->deps_jobs)
		return;
	c->deps_again = true;
	if (c->deps_resolving || c->deps_loading)
		return; /* the loop running (or the restore's end) looks */
	settle(c, now_usec);
}

void sched_deps_restored(struct sched_cluster *c, uint64_t now_usec)
{
	c->deps_loading = false;
	/* the counts of who waits for whom, from the records as loaded */
	for (size_t i = 0; i < c->job_count; i++)
		c->jobs[i]->dependents = 0;
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *w = c->jobs[i];

		if (!w->deps_waiting)
			continue;
		for (unsigned k = 0; k < w->spec->after_count; k++) {
			struct sched_job *d;

			if (!w->deps[k].met && (d = dep_job(c, w, k)))
				d->dependents++;
		}
	}
	/* what ended while the records loaded (a queue no longer configured fails its
	 * jobs), or before a crash let its dependents hear of it */
	c->deps_again = true;
	settle(c, now_usec);
}

int sched_deps_restore(struct sched_job *j, enum sched_job_state state,
		       const uint64_t *serials, const bool *met, unsigned count)
{
	if (!j->spec || count != j->spec->after_count || !count)
		return count ? -EINVAL : 0;
	j->deps = calloc(count, sizeof(*j->deps));
	if (!j->deps)
		return -ENOMEM;
	j->deps_waiting = 0;
	for (unsigned k = 0; k < count; k++) {
		j->deps[k].serial = serials[k];
		j->deps[k].met = met[k];
		/* only a pending job still waits (sched_jobs_append() counts it) */
		j->deps_waiting += !met[k] && state == SCHED_JOB_PENDING;
	}
	return 0;
}

const char *sched_dep_state(const struct sched_cluster *c, const struct sched_job *j,
			    unsigned k)
{
	const struct sched_job *d;

	if (j->deps[k].met)
		return "met";
	/* a lookup: the name index is not changed by it */
	d = dep_job((struct sched_cluster *)c, j, k);
	return d ? sched_job_state_name(d->state) : "gone";
}
