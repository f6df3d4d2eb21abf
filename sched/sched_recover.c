/* SPDX-License-Identifier: MIT */
/*
 * Job-level recovery, the last rung of the recovery ladder (sched_ladder.c): the job's
 * failed servers are replaced (its healthy ones kept when it can) and every process
 * restarts as a new generation from the newest checkpoint; a task fault restarts it on
 * the same NPUs.
 *
 * Which restarts count against max_restarts (issue 14 item 11). Servers that fail
 * together (a rack's power, a switch) reach the daemon one by one: NPU reports once per
 * report interval each, lost heartbeats heartbeat_timeout after each server's last
 * report. Counting each of them moved a job three times in a second and spent its
 * whole budget ("restart 3 of 3") on one incident, and on generations that never ran.
 * The rule here: a fault-driven recovery counts when it ends a generation that began
 * before the last counted restart, or when heartbeat_timeout has passed since that
 * restart's fault; a fault that ends a generation begun by the incident's own recovery
 * within heartbeat_timeout of it is the same incident, is not counted, and says so in
 * its event (restarts_coalesced, "restarts_not_counted" in status.json). The window is
 * heartbeat_timeout because it bounds how far apart the daemon learns of faults that
 * happened at one moment (every agent reports within one fault_check_interval, and
 * heartbeat_timeout is at least that). The budget still ends a job that keeps failing:
 * at most one restart is free per window, and each needs a new fault. A process that
 * exits non-zero counts always (its processes ran), unless it ran on a suspect server:
 * then it is that server's fault and follows the rule above. Peers do the same in
 * spirit: Volcano's job controller counts one retry per RestartJob action and handles
 * further pod events of a job already Restarting without counting them again
 * (pkg/controllers/job/state, maxRetry/retryCount); MindX DL's Resilience-Controller
 * "does not handle the new fault of the job" while it is rescheduling it (MindX DL
 * user guide, resumable training constraints); the Kubernetes Job backoffLimit resets
 * when no new failure comes between its checks.
 *
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* @now - @then, or 0 when a caller's clock went backwards. */
static uint64_t elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

bool sched_slice_is_bad(const struct sched_cluster *c, const struct sched_slice *sl)
{
	const struct sched_server *s = &c->servers[sl->server];

	if (s->state == SCHED_SERVER_UNREACHABLE)
		return true;
	for (unsigned k = 0; k < sl->npu_count; k++) {
		const struct sched_npu *n = &s->npus[sl->device_ids[k]];

		if (n->isolated && n->isolation != SCHED_ISOLATION_ALARM)
			return true;
	}
	return false;
}

bool sched_recover_preemption_waits(const struct sched_cluster *c, const struct sched_job *j)
{
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *v = c->jobs[i];
		const struct conf_server_type *t;
		size_t k;

		/* a requeue (sched_job_requeue()) frees NPUs for no preemptor */
		if (v->state != SCHED_JOB_STOPPING || v->stop_to != SCHED_JOB_PENDING ||
		    v->stop_requeue || !v->slice_count)
			continue;
		t = c->servers[v->slices[0].server].conf->type;
		for (k = 0; k < c->type_count && c->types[k] != t; k++)
			;
		if (k < 32 && (j->type_mask & (1u << k)))
			return true;
	}
	return false;
}

/*
 * Does a fault now, ending @j's current generation, belong to the incident of the last
 * counted restart (see the top of this file)?
 */
static bool fault_is_same_incident(const struct sched_cluster *c, const struct sched_job *j,
				   uint64_t now_usec)
{
	uint64_t window = (uint64_t)c->conf->heartbeat_timeout_sec * 1000000u;

	return j->restart_counted_usec && j->generation_usec >= j->restart_counted_usec &&
	       elapsed(now_usec, j->restart_counted_usec) < window;
}

static bool job_holds_server(const struct sched_job *j, unsigned server)
{
	for (size_t i = 0; i < j->slice_count; i++)
		if (j->slices[i].server == server)
			return true;
	return false;
}

/* Servers of @j that are suspect but not failed: replaced too when clean ones are free. */
static size_t mark_suspects(const struct sched_cluster *c, const struct sched_job *j, bool *bad)
{
	size_t n = 0;

	for (size_t i = 0; i < j->slice_count; i++)
		if (!bad[i] && c->servers[j->slices[i].server].suspect) {
			bad[i] = true;
			n++;
		}
	return n;
}

/*
 * The recovery of sched_job_recover(); @also_bad is a server index whose share must move
 * too (a process exit taken for its fault), or -1.
 */

const char *sched_restart_of(const struct sched_job *j, char *buf, size_t len)
{
	if (j->spec->max_restarts == CONF_RESTARTS_UNLIMITED)
		snprintf(buf, len, " (a service's instance: no limit)");
	else
		snprintf(buf, len, " of %u", j->spec->max_restarts);
	return buf;
}

/*
 * @j goes recovering for @reason; one that already is (an earlier rung of its ladder
 * ran, sched_ladder.c) says so in an event of the same kind.
 */
static void to_recovering(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			  const char *reason)
{
	if (j->state == SCHED_JOB_RECOVERING) {
		sched_job_set_reason(c, j, reason);
		j->change_usec = now_usec;
		sched_job_touch(c, j);
		sched_event_add(c, now_usec, SCHED_EV_RECOVERING, j,
				c->subject_job == j ? c->subject_server : NULL,
				c->subject_job == j ? c->subject_npu : -1, "%s", reason);
		return;
	}
	sched_job_transition(c, j, SCHED_JOB_RECOVERING, SCHED_EV_RECOVERING, now_usec, reason);
}

static void recover(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		    const char *why, int also_bad)
{
	char of[48];
	bool bad[4096], bad_only[4096];
	struct sched_slice *slices = NULL;
	size_t count = 0, nbad = 0, nkeep;
	char reason[SCHED_REASON_MAX];
	unsigned had = sched_job_total_npus(j), now_npus;
	bool same_incident;
	int r = -ENOSPC;

	if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_RECOVERING)
		return;
	if (!c->conf->enable_fault_recovery) {
		/* the processes on its other servers run on: hold the NPUs until they stop */
		snprintf(reason, sizeof(reason), "%.300s; fault recovery is disabled "
						 "(enable_fault_recovery: false)", why);
		sched_job_fail_stop(c, j, now_usec, reason);
		return;
	}
	sched_place_begin(c, now_usec);
	same_incident = fault_is_same_incident(c, j, now_usec);
	if (same_incident) {
		uint64_t ran_from = j->generation_usec > j->run_since_usec ? j->generation_usec :
									      j->run_since_usec;

		j->restarts_coalesced++;
		/* a generation of the incident barely ran: its time is not the job's */
		if (j->run_since_usec && now_usec > ran_from)
			j->run_since_usec += now_usec - ran_from;
		snprintf(reason, sizeof(reason),
			 "%.300s; not counted against max_restarts: generation %u began %.1f s "
			 "after the fault of restart %u, within heartbeat_timeout (%u s), so it is "
			 "the same incident",
			 why, j->generation,
			 (double)elapsed(j->generation_usec, j->restart_counted_usec) / 1e6,
			 j->restarts, c->conf->heartbeat_timeout_sec);
	} else {
		j->restarts++;
		if (j->restarts > j->spec->max_restarts) {
			snprintf(reason, sizeof(reason), "%.300s; max_restarts (%u) exhausted", why,
				 j->spec->max_restarts);
			sched_job_fail_stop(c, j, now_usec, reason);
			return;
		}
		j->restart_counted_usec = now_usec;
		snprintf(reason, sizeof(reason), "%.400s; restart %u%s", why, j->restarts,
			 sched_restart_of(j, of, sizeof(of)));
	}
	c->recoveries++;
	to_recovering(c, j, now_usec, reason);

	/* keep the healthy servers, replace the failed ones (multi-server jobs) */
	for (size_t i = 0; i < j->slice_count && i < sizeof(bad) / sizeof(bad[0]); i++) {
		bad[i] = sched_slice_is_bad(c, &j->slices[i]) ||
			 (also_bad >= 0 && j->slices[i].server == (unsigned)also_bad);
		bad_only[i] = bad[i];
		nbad += bad[i];
	}
	nkeep = j->slice_count - nbad;
	/*
	 * While a preemptor waits for its victims to stop, the free NPUs it will need are
	 * held only by the pass's reservation: re-place this job through the pass (which
	 * runs right after), not around it.
	 */
	if (sched_recover_preemption_waits(c, j)) {
		sched_alloc_release(c, j);
		j->requeue_cause = SCHED_REQUEUE_FAULT;
		j->reason_key = 0;
		snprintf(reason, sizeof(reason), "recovering from a fault; waits for capacity: "
						 "re-placed by the next pass (%.300s)", why);
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec, reason);
		return;
	}
	if (j->slice_count > 1 && nkeep > 0 && j->slice_count <= sizeof(bad) / sizeof(bad[0])) {
		/* suspect servers it holds go too when clean ones can take their place */
		size_t nsus = mark_suspects(c, j, bad);

		r = -ENOSPC;
		if (nsus && nkeep > nsus) {
			r = sched_replace(c, j, bad, &slices, &count);
			/* only for clean replacements: never one suspect for another */
			for (size_t i = 0; r == 0 && i < count; i++)
				if (c->servers[slices[i].server].suspect &&
				    !job_holds_server(j, slices[i].server)) {
					free(slices);
					slices = NULL;
					r = -ENOSPC;
				}
		}
		if (r == -ENOSPC)
			r = sched_replace(c, j, bad_only, &slices, &count);
		else if (r == 0)
			nkeep -= nsus;
	}
	sched_alloc_release(c, j);
	if (r == -ENOSPC || r == -ENOMEM) {
		/*
		 * Whole new placement on what is healthy now; an elastic job shrinks (down to
		 * npus.min) rather than wait.
		 */
		nkeep = 0;
		r = sched_place_job(c, j, had > j->spec->npus_min ? had : j->spec->npus_min,
				    &slices, &count, reason);
		if (r < 0) {
			char pending[SCHED_REASON_MAX];

			j->requeue_cause = SCHED_REQUEUE_FAULT;
			j->reason_key = 0;
			snprintf(pending, sizeof(pending),
				 "recovering from a fault; waits for capacity: %.400s", reason);
			sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec,
					     pending);
			return;
		}
	}
	sched_alloc_apply(c, j, slices, count);
	j->sched_port = sched_pick_port(c, j, slices[0].server);
	sched_job_begin_generation(c, j, now_usec);
	now_npus = sched_job_total_npus(j);
	if (now_npus != had) {
		c->resizes++;
		snprintf(reason, sizeof(reason),
			 "recovered: shrank from %u to %u %s (elastic, min %u) rather than wait; "
			 "placed on %zu server%s, generation %u",
			 had, now_npus, conf_plural(now_npus, "NPU", "NPUs"), j->spec->npus_min, count,
			 count == 1 ? "" : "s",
			 j->generation);
	} else if (nkeep)
		snprintf(reason, sizeof(reason),
			 "recovered: kept %zu server%s, replaced %zu; generation %u", nkeep,
			 nkeep == 1 ? "" : "s", count - nkeep, j->generation);
	else
		snprintf(reason, sizeof(reason), "recovered: placed anew on %zu server%s; "
						 "generation %u",
			 count, count == 1 ? "" : "s", j->generation);
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_PLACED, now_usec, reason);
}

void sched_recover_job_level(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			     const char *why, int also_bad)
{
	recover(c, j, now_usec, why, also_bad);
}

void sched_restart_job_level(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			     const char *why, int server)
{
	char of[48];
	char reason[SCHED_REASON_MAX];

	if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_RECOVERING)
		return;
	/* processes that die on a server under suspicion: that server's fault, not the task's */
	if (server >= 0 && (size_t)server < c->server_count &&
	    sched_server_is_suspect(c, &c->servers[server], now_usec)) {
		snprintf(reason, sizeof(reason), "%.300s, a server under suspicion (a recent fault "
						 "or a late report): moving off it",
			 why);
		recover(c, j, now_usec, reason, server);
		sched_pass_request(c, now_usec); /* the suspect server's NPUs are free for others */
		return;
	}
	j->restarts++;
	j->restart_counted_usec = now_usec;
	if (j->restarts > j->spec->max_restarts) {
		/* one process failed; the others (other ranks, other servers) may run on */
		snprintf(reason, sizeof(reason), "%.300s; max_restarts (%u) exhausted", why,
			 j->spec->max_restarts);
		sched_job_fail_stop(c, j, now_usec, reason);
		return;
	}
	snprintf(reason, sizeof(reason), "%.400s; restart %u%s", why, j->restarts,
		 sched_restart_of(j, of, sizeof(of)));
	to_recovering(c, j, now_usec, reason);
	sched_job_begin_generation(c, j, now_usec);
	snprintf(reason, sizeof(reason), "restarted on the same NPUs; generation %u",
		 j->generation);
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_PLACED, now_usec, reason);
}
