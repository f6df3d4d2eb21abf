/* SPDX-License-Identifier: MIT */
/*
 * Voluntary disruptions of services: a service's disruption budget (max_unavailable),
 * whether preemption may take its instances (preemptible), and the drain that moves
 * instances off a draining server as the budget allows. The rules: ascend_sched.h
 * ("Disruptions"). Faults are not disruptions: sched_recover.c moves their instances.
 *
 * Calls: sched_service.c (instances of a service), sched_place.c, sched_cluster.c,
 * sched_job.c; called by sched_preempt.c and sched_tick() (sched_pass.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* Does instance @j serve now, as the budget counts? */
static bool available(const struct sched_cluster *c, const struct sched_job *j)
{
	if (j->state != SCHED_JOB_RUNNING || !j->slice_count)
		return false;
	if (sched_job_is_ready(j))
		return true;
	/* nothing probes an instance whose first server has no agent */
	return !c->servers[j->slices[0].server].last_report_usec;
}

unsigned sched_service_available(struct sched_cluster *c, const struct sched_job *svc)
{
	unsigned avail = 0;

	if (!svc->spec || svc->state != SCHED_JOB_SERVING)
		return 0;

	for (unsigned i = 0; i < svc->spec->replicas; i++) {
		const struct sched_job *j = sched_service_instance(c, svc, i);

		avail += j && available(c, j);
	}
	return avail;
}

unsigned sched_service_disruptions_allowed(struct sched_cluster *c, const struct sched_job *svc)
{
	unsigned avail, want;

	if (!svc->spec || svc->state != SCHED_JOB_SERVING)
		return 0;
	avail = sched_service_available(c, svc);
	want = svc->spec->replicas > svc->spec->max_unavailable ?
		       svc->spec->replicas - svc->spec->max_unavailable : 0;
	return avail > want ? avail - want : 0;
}

bool sched_service_may_preempt(struct sched_cluster *c, const struct sched_job *j)
{
	const struct sched_job *svc;

	if (!sched_job_is_instance(j))
		return true;
	if (!j->spec || !j->spec->preemptible)
		return false;
	svc = sched_service_of(c, j->name);
	/* an instance whose service ended is on its way out anyway */
	return !svc || !available(c, j) || sched_service_disruptions_allowed(c, svc) > 0;
}

bool sched_service_may_borrow(const struct sched_job *j)
{
	return !sched_job_is_instance(j) || (j->spec && j->spec->preemptible);
}

bool sched_service_victims_fit_budget(struct sched_cluster *c, struct sched_job *const *v,
				      size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct sched_job *svc;
		unsigned taken = 0;
		size_t k;

		if (!sched_job_is_instance(v[i]))
			continue;
		/* each service once: at its first victim */
		for (k = 0; k < i && strcmp(v[k]->service, v[i]->service) != 0; k++)
			;
		if (k < i)
			continue;
		svc = sched_service_of(c, v[i]->name);
		if (!svc)
			continue;
		for (k = i; k < n; k++)
			taken += strcmp(v[k]->service, v[i]->service) == 0 && available(c, v[k]);
		if (taken > sched_service_disruptions_allowed(c, svc))
			return false;
	}
	return true;
}

void sched_service_hold_note(struct sched_cluster *c, struct sched_job *const *held,
			     const bool *lower, size_t n, char *buf, size_t len)
{
	const struct sched_job *first = NULL;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < n && len; i++) {
		const struct sched_job *svc;
		unsigned taken = 0, allowed;

		if (!sched_job_is_instance(held[i]) || !held[i]->spec)
			continue;
		svc = sched_service_of(c, held[i]->name);
		if (!svc)
			continue;
		if (!lower[i] || !c->conf->preemption) {
			first = first ? first : svc;
			continue;
		}
		if (!held[i]->spec->preemptible) {
			snprintf(buf, len, "service %s holds them; its instances run until it is "
					   "cancelled or scaled down, and preemption passes over "
					   "them (its spec does not say preemptible: true)",
				 svc->name);
			return;
		}
		for (size_t k = 0; k < n; k++)
			taken += lower[k] && strcmp(held[k]->service, held[i]->service) == 0 &&
				 available(c, held[k]);
		allowed = sched_service_disruptions_allowed(c, svc);
		if (taken > allowed) {
			snprintf(buf, len, "service %s holds them, and preempting its %u %s there "
					   "would take more than its disruption budget allows now "
					   "(%u: max_unavailable %u, %u of %u replicas available)",
				 svc->name, taken, conf_plural(taken, "instance", "instances"),
				 allowed, svc->spec->max_unavailable,
				 sched_service_available(c, svc), svc->spec->replicas);
			return;
		}
	}
	if (first && len)
		snprintf(buf, len, "service %s holds them; its instances run until it is cancelled "
				   "or scaled down, and %s",
			 first->name, c->conf->preemption ?
					      "their priority is not below this job's" :
					      "preemption is off on this cluster (resource.preemption: "
					      "false)");
}

/* Say once per wait, and again when the cause (@why_kind: 1 budget, 2 room) changes,
 * why the drain leaves @j where it is. */
static void note_wait(struct sched_cluster *c, struct sched_job *j, const char *server,
		      uint64_t now_usec, unsigned char why_kind, const char *why)
{
	if (j->drain_noted == why_kind)
		return;
	j->drain_noted = why_kind;
	sched_event_add(c, now_usec, SCHED_EV_SERVER, j, server, -1,
			"drain of %s waits: %s not moved yet: %s", server, j->name, why);
}

/*
 * Move running instance @j off its draining servers (@bad, one per slice): keep its other
 * servers when whole free ones replace the draining ones, else place it anew. Nothing
 * changes when it has no room: returns -ENOSPC with @reason, or -ENOMEM.
 */
static int move(struct sched_cluster *c, struct sched_job *j, const bool *bad, size_t nbad,
		uint64_t now_usec, char *reason)
{
	struct sched_slice *slices = NULL;
	size_t count = 0, kept = 0;
	char from[160] = "";
	int r = -ENOSPC;

	sched_place_begin(c, now_usec);
	if (j->slice_count > nbad) {
		r = sched_replace(c, j, bad, &slices, &count);
		kept = r == 0 ? j->slice_count - nbad : 0;
	}
	if (r == -ENOSPC)
		/* the draining servers take no new work: a placement now avoids them */
		r = sched_place_job(c, j, j->spec->npus_min, &slices, &count, reason);
	if (r < 0)
		return r;
	for (size_t i = 0, len = 0; i < j->slice_count && len < sizeof(from) - 1; i++)
		if (bad[i])
			len += (size_t)snprintf(from + len, sizeof(from) - len, "%s%s",
						len ? ", " : "",
						c->servers[j->slices[i].server].conf->name);
	sched_alloc_release(c, j);
	sched_alloc_apply(c, j, slices, count);
	j->sched_port = sched_pick_port(c, j, slices[0].server);
	sched_job_begin_generation(c, j, now_usec);
	j->drain_noted = 0;
	sched_reason(reason, "moved off draining server %s (a drain, not a fault: no restart "
			     "counted); kept %zu server%s, placed on %zu; generation %u",
		     from, kept, kept == 1 ? "" : "s", count - kept, j->generation);
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_MOVED, now_usec, reason);
	return 0;
}

unsigned sched_service_drain(struct sched_cluster *c, uint64_t now_usec)
{
	unsigned moved = 0;
	size_t s;

	for (s = 0; s < c->server_count && !c->servers[s].draining; s++)
		;
	if (s == c->server_count)
		return 0;
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		bool bad[CONF_SERVICE_NPUS_MAX];
		char reason[SCHED_REASON_MAX], why[SCHED_REASON_MAX];
		const char *first = NULL;
		struct sched_job *svc;
		size_t nbad = 0;
		int r;

		if (j->state != SCHED_JOB_RUNNING || !sched_job_is_instance(j) ||
		    j->slice_count > CONF_SERVICE_NPUS_MAX)
			continue;
		for (size_t k = 0; k < j->slice_count; k++) {
			const struct sched_server *sv = &c->servers[j->slices[k].server];

			bad[k] = sv->draining;
			nbad += bad[k];
			if (bad[k] && !first)
				first = sv->conf->name;
		}
		if (!nbad)
			continue;
		svc = sched_service_of(c, j->name);
		if (!svc)
			continue; /* its service ended: it stops anyway */
		if (available(c, j) && !sched_service_disruptions_allowed(c, svc)) {
			if (!svc->spec->max_unavailable)
				snprintf(why, sizeof(why), "service %s allows no instance to be "
							   "unavailable (max_unavailable: 0); "
							   "uncordon the server, or cancel the service "
							   "and submit it with max_unavailable: 1",
					 svc->name);
			else
				snprintf(why, sizeof(why), "service %s has %u of %u instances "
							   "unavailable already (max_unavailable: "
							   "%u); moves when one is ready again",
					 svc->name, svc->spec->replicas - sched_service_available(c, svc),
					 svc->spec->replicas, svc->spec->max_unavailable);
			note_wait(c, j, first, now_usec, 1, why);
			continue;
		}
		/* a preemptor waits for NPUs its victims free: leave them to the pass */
		if (sched_recover_preemption_waits(c, j))
			continue;
		r = move(c, j, bad, nbad, now_usec, reason);
		if (r == 0) {
			moved++;
			continue;
		}
		if (r == -ENOSPC) {
			snprintf(why, sizeof(why), "no room elsewhere for its %u NPUs: %.300s",
				 sched_job_total_npus(j), reason);
			note_wait(c, j, first, now_usec, 2, why);
		}
	}
	return moved;
}
