/* SPDX-License-Identifier: MIT */
/*
 * NPU and server health, isolation, heartbeats and job recovery (design.md §6).
 * Levels follow npu-smi's Health column; the default handling is Ascend's: Warning is
 * logged, Alarm pre-isolates, Critical/UNKNOWN isolate and move the job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

static const char *const isolation_names[] = {
	[SCHED_ISOLATION_NONE] = "none",
	[SCHED_ISOLATION_ALARM] = "alarm",
	[SCHED_ISOLATION_FAULT] = "fault",
	[SCHED_ISOLATION_MANUAL] = "manual",
};

const char *sched_isolation_name(enum sched_isolation i)
{
	if ((unsigned)i > SCHED_ISOLATION_MANUAL)
		return "unknown";
	return isolation_names[i];
}

/* @now - @then, or 0 when a caller's clock went backwards. */
static uint64_t elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static void set_isolation(struct sched_npu *n, enum sched_isolation i)
{
	n->isolation = i;
	n->isolated = i != SCHED_ISOLATION_NONE;
}

/* Record a fault of @n; returns true when it escalates to a manual isolation. */
static bool count_fault(const struct sched_cluster *c, struct sched_npu *n, uint64_t now_usec)
{
	const struct conf_cluster *cf = c->conf;
	uint64_t window = (uint64_t)cf->fault_escalate_window_sec * 1000000u;

	n->last_fault_usec = now_usec;
	if (!n->window_faults || elapsed(now_usec, n->window_start_usec) > window) {
		n->window_start_usec = now_usec;
		n->window_faults = 0;
	}
	n->window_faults++;
	return cf->fault_escalate_count && n->window_faults >= cf->fault_escalate_count;
}

/* Jobs holding NPUs of @s that are now unusable, each once. */
static size_t jobs_hit(const struct sched_server *s, struct sched_job **out)
{
	size_t n = 0;

	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		struct sched_job *j = s->npus[d].job;
		size_t k;

		if (!j || !s->npus[d].isolated || s->npus[d].isolation == SCHED_ISOLATION_ALARM)
			continue;
		for (k = 0; k < n && out[k] != j; k++)
			;
		if (k == n)
			out[n++] = j;
	}
	return n;
}

static void recover_hit_jobs(struct sched_cluster *c, struct sched_server *s, uint64_t now_usec,
			     const char *why)
{
	struct sched_job *hit[CONF_SERVER_NPUS_MAX];
	size_t n = jobs_hit(s, hit);

	for (size_t i = 0; i < n; i++) {
		char reason[SCHED_REASON_MAX];

		if (hit[i]->state != SCHED_JOB_RUNNING)
			continue;
		/* name this job's own failed NPU when there is one */
		snprintf(reason, sizeof(reason), "%s", why);
		for (unsigned d = 0; d < s->conf->npu_count; d++) {
			const struct sched_npu *np = &s->npus[d];

			if (np->job == hit[i] && np->isolated &&
			    np->isolation != SCHED_ISOLATION_ALARM && np->fault[0] &&
			    s->state != SCHED_SERVER_UNREACHABLE) {
				snprintf(reason, sizeof(reason), "NPU %u of %s: %s", d,
					 s->conf->name,
					 np->fault);
				break;
			}
		}
		sched_job_recover(c, hit[i], now_usec, reason);
	}
}

/*
 * OK or Warning (which is "log only"): an Alarm isolation ends at once, a fault one once
 * the NPU has reported healthy for the whole hold time.
 */
static void heal(struct sched_cluster *c, struct sched_server *s, struct sched_npu *n,
		 uint64_t now_usec)
{
	uint64_t hold = (uint64_t)c->conf->fault_hold_sec * 1000000u;

	if (n->isolation == SCHED_ISOLATION_ALARM) {
		set_isolation(n, SCHED_ISOLATION_NONE);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
				(int)n->device_id, "healthy again: back in service");
	} else if (n->isolation == SCHED_ISOLATION_FAULT) {
		if (!n->ok_since_usec)
			n->ok_since_usec = now_usec;
		if (elapsed(now_usec, n->ok_since_usec) >= hold) {
			set_isolation(n, SCHED_ISOLATION_NONE);
			n->ok_since_usec = 0;
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
					(int)n->device_id,
					"healthy for the hold time (%u s): back in service",
					c->conf->fault_hold_sec);
		}
	}
}

/* Apply one NPU's level. Returns true when a running job must move. */
static bool apply_level(struct sched_cluster *c, struct sched_server *s, struct sched_npu *n,
			enum conf_health_level level, const char *code, const char *message,
			uint64_t now_usec)
{
	const char *server = s->conf->name;
	enum sched_health old = n->health;
	char fault[sizeof(n->fault)];

	n->health = (enum sched_health)level;
	switch (level) {
	case CONF_HEALTH_OK:
		if (old != SCHED_HEALTH_OK && n->isolation == SCHED_ISOLATION_NONE)
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server,
					(int)n->device_id,
					"OK again");
		heal(c, s, n, now_usec);
		return false;
	case CONF_HEALTH_WARNING:
		if (old != SCHED_HEALTH_WARNING)
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server,
					(int)n->device_id,
					"Warning %s %s (logged only)", code, message);
		heal(c, s, n, now_usec);
		return false;
	case CONF_HEALTH_ALARM:
		n->ok_since_usec = 0;
		if (n->isolation == SCHED_ISOLATION_NONE) {
			set_isolation(n, SCHED_ISOLATION_ALARM);
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server,
					(int)n->device_id,
					"Alarm %s %s: pre-isolated (no new work; a running job "
					"keeps it)",
					code, message);
		}
		return false;
	case CONF_HEALTH_CRITICAL:
	case CONF_HEALTH_UNKNOWN:
		break;
	}
	snprintf(fault, sizeof(fault), "%s%s%s%s%s", conf_health_level_name(level),
		 code[0] ? " " : "", code, message[0] ? " " : "", message);
	n->ok_since_usec = 0;
	if (n->isolation == SCHED_ISOLATION_FAULT || n->isolation == SCHED_ISOLATION_MANUAL) {
		/* the same fault, still there: the hold time starts again from now */
		n->last_fault_usec = now_usec;
		if (strcmp(fault, n->fault) != 0) {
			snprintf(n->fault, sizeof(n->fault), "%s", fault);
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server,
					(int)n->device_id, "%s: still isolated", n->fault);
		}
		return false;
	}
	snprintf(n->fault, sizeof(n->fault), "%s", fault);
	if (count_fault(c, n, now_usec)) {
		set_isolation(n, SCHED_ISOLATION_MANUAL);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server, (int)n->device_id,
				"%s: isolated until `clear %u` (%u faults within %u s)", n->fault,
				n->device_id, n->window_faults, c->conf->fault_escalate_window_sec);
	} else {
		set_isolation(n, SCHED_ISOLATION_FAULT);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server, (int)n->device_id,
				"%s: isolated", n->fault);
	}
	return n->job != NULL;
}

static void check_ips(struct sched_cluster *c, struct sched_server *s,
		      const struct conf_health_report *r, uint64_t now_usec)
{
	unsigned known = 0;

	for (size_t i = 0; i < r->npu_count; i++) {
		const struct conf_health_npu *h = &r->npus[i];
		struct sched_npu *n = &s->npus[h->id];
		const char *inv = s->conf->device_ips[h->id];

		if (!h->device_ip[0] || strcmp(n->reported_ip, h->device_ip) == 0)
			continue;
		if (inv && strcmp(inv, h->device_ip) != 0)
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
					(int)h->id,
					"device_ip reported as %s but the inventory says %s; "
					"the rank "
					"table uses the reported address: fix the inventory",
					h->device_ip, inv);
		snprintf(n->reported_ip, sizeof(n->reported_ip), "%s", h->device_ip);
		c->version++;
	}
	for (unsigned d = 0; d < s->conf->npu_count; d++)
		known += s->npus[d].reported_ip[0] != '\0';
	if (known == s->conf->npu_count && !s->ips_confirmed) {
		s->ips_confirmed = true;
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1,
				"agent confirmed the device IPs of all %u NPUs", known);
	}
}

int sched_server_report(struct sched_cluster *c, unsigned server,
			const struct conf_health_report *r, uint64_t now_usec)
{
	struct sched_server *s;
	bool move = false;
	char why[SCHED_REASON_MAX];

	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	s->version++;
	if (s->state != SCHED_SERVER_READY) {
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1,
				s->state == SCHED_SERVER_UNREACHABLE ?
					"agent reports again: server reachable" :
					"first report from the agent: server ready");
		/* NPUs isolated by the lost heartbeat come back through their own levels */
		s->state = SCHED_SERVER_READY;
	}
	s->last_report_usec = now_usec;
	s->restored_heartbeat = false;
	free(s->last_refusal);
	s->last_refusal = NULL;
	if (r->agent[0] && strcmp(s->agent, r->agent) != 0) {
		if (s->agent[0])
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1,
					"reports now come from agent %s (was %s)", r->agent,
					s->agent);
		memcpy(s->agent, r->agent, sizeof(s->agent));
	}
	check_ips(c, s, r, now_usec);

	if (r->has_node) {
		enum conf_health_level l = r->node;

		if (s->node_health != (enum sched_health)l)
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1,
					"node %s", conf_health_level_name(l));
		s->node_health = (enum sched_health)l;
		/* a server-wide level applies to every NPU the report does not name */
		for (unsigned d = 0; d < s->conf->npu_count; d++) {
			bool named = false;

			for (size_t i = 0; i < r->npu_count && !named; i++)
				named = r->npus[i].id == d && r->npus[i].has_level;
			if (!named && l != CONF_HEALTH_OK)
				move |= apply_level(c, s, &s->npus[d], l, "", "server-wide",
						    now_usec);
		}
	}
	for (size_t i = 0; i < r->npu_count; i++) {
		const struct conf_health_npu *h = &r->npus[i];

		if (h->has_level)
			move |= apply_level(c, s, &s->npus[h->id], h->level, h->code, h->message,
					    now_usec);
	}
	sched_server_recount(s);
	/* no version bump for a mere heartbeat: every visible change added an event */
	if (move) {
		snprintf(why, sizeof(why), "NPU fault on %s", s->conf->name);
		recover_hit_jobs(c, s, now_usec, why);
	}
	sched_schedule(c, now_usec);
	return 0;
}

int sched_server_check_agent(const struct sched_cluster *c, unsigned server, const char *agent,
			     uint64_t now_usec, char *why, size_t why_len)
{
	const struct sched_server *s;
	uint64_t timeout;

	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	timeout = (uint64_t)c->conf->heartbeat_timeout_sec * 1000000u;
	if (!agent || !agent[0] || !s->agent[0] || strcmp(agent, s->agent) == 0 ||
	    !s->last_report_usec || elapsed(now_usec, s->last_report_usec) > timeout)
		return 0;
	snprintf(why, why_len, "agent %.160s reports for %s, but agent %.160s %s %.1f s ago: two "
		 "agents use the node name %s; give each server its own (--node, or the host "
		 "name); the other agent takes over after %u s of its silence",
		 agent, s->conf->name, s->agent,
		 s->restored_heartbeat ? "had it when the daemon restarted" : "did",
		 (double)elapsed(now_usec, s->last_report_usec) / 1e6, s->conf->name,
		 c->conf->heartbeat_timeout_sec);
	return -EEXIST;
}

int sched_server_note_refusal(struct sched_cluster *c, unsigned server, const char *reason,
			      uint64_t now_usec)
{
	struct sched_server *s;
	char *copy;

	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	sched_event_add(c, now_usec, SCHED_EV_REFUSED, NULL, s->conf->name, -1, "%s", reason);
	copy = strdup(reason);
	if (!copy)
		return -ENOMEM;
	free(s->last_refusal);
	s->last_refusal = copy;
	s->last_refusal_usec = now_usec;
	return 0;
}

unsigned sched_check_heartbeats(struct sched_cluster *c, uint64_t now_usec)
{
	uint64_t timeout = (uint64_t)c->conf->heartbeat_timeout_sec * 1000000u;
	unsigned marked = 0;

	for (size_t i = 0; i < c->server_count; i++) {
		struct sched_server *s = &c->servers[i];
		char why[SCHED_REASON_MAX];

		if (s->state != SCHED_SERVER_READY || !s->last_report_usec ||
		    elapsed(now_usec, s->last_report_usec) <= timeout)
			continue;
		s->state = SCHED_SERVER_UNREACHABLE;
		s->version++;
		snprintf(why, sizeof(why), "server %s unreachable: no health report for %u s",
			 s->conf->name,
			 (unsigned)(elapsed(now_usec, s->last_report_usec) / 1000000u));
		for (unsigned d = 0; d < s->conf->npu_count; d++) {
			struct sched_npu *n = &s->npus[d];

			if (n->isolation == SCHED_ISOLATION_MANUAL)
				continue;
			n->health = SCHED_HEALTH_UNKNOWN;
			snprintf(n->fault, sizeof(n->fault), "heartbeat lost");
			n->last_fault_usec = now_usec;
			n->ok_since_usec = 0;
			set_isolation(n, SCHED_ISOLATION_FAULT);
		}
		sched_server_recount(s);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1, "%s", why);
		recover_hit_jobs(c, s, now_usec, why);
		marked++;
	}
	if (marked)
		sched_schedule(c, now_usec);
	return marked;
}

/* Is slice @sl unusable now (its server lost, or one of its NPUs isolated by a fault)? */
static bool slice_is_bad(const struct sched_cluster *c, const struct sched_slice *sl)
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

/* Is a preempted job still stopping, for a preemptor, on servers of a type @j can use? */
static bool preemption_in_flight(const struct sched_cluster *c, const struct sched_job *j)
{
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *v = c->jobs[i];
		const struct conf_server_type *t;
		size_t k;

		if (v->state != SCHED_JOB_STOPPING || v->stop_to != SCHED_JOB_PENDING ||
		    !v->slice_count)
			continue;
		t = c->servers[v->slices[0].server].conf->type;
		for (k = 0; k < c->type_count && c->types[k] != t; k++)
			;
		if (k < 32 && (j->type_mask & (1u << k)))
			return true;
	}
	return false;
}

void sched_job_recover(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why)
{
	bool bad[4096];
	struct sched_slice *slices = NULL;
	size_t count = 0, nbad = 0, nkeep;
	char reason[SCHED_REASON_MAX];
	unsigned had = sched_job_total_npus(j), now_npus;
	int r = -ENOSPC;

	if (j->state != SCHED_JOB_RUNNING)
		return;
	if (!c->conf->enable_fault_recovery) {
		sched_alloc_release(c, j);
		snprintf(reason, sizeof(reason), "%s; fault recovery is disabled "
						 "(enable_fault_recovery: false)", why);
		sched_job_transition(c, j, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec, reason);
		return;
	}
	j->restarts++;
	if (j->restarts > j->spec->max_restarts) {
		sched_alloc_release(c, j);
		snprintf(reason, sizeof(reason), "%s; max_restarts (%u) exhausted", why,
			 j->spec->max_restarts);
		sched_job_transition(c, j, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec, reason);
		return;
	}
	c->recoveries++;
	snprintf(reason, sizeof(reason), "%.400s; restart %u of %u", why, j->restarts,
		 j->spec->max_restarts);
	sched_job_transition(c, j, SCHED_JOB_RECOVERING, SCHED_EV_RECOVERING, now_usec, reason);

	/* keep the healthy servers, replace the failed ones (multi-server jobs) */
	for (size_t i = 0; i < j->slice_count && i < sizeof(bad) / sizeof(bad[0]); i++) {
		bad[i] = slice_is_bad(c, &j->slices[i]);
		nbad += bad[i];
	}
	nkeep = j->slice_count - nbad;
	/*
	 * While a preemptor waits for its victims to stop, the free NPUs it will need are
	 * held only by the pass's reservation: re-place this job through the pass (which
	 * runs right after), not around it.
	 */
	if (preemption_in_flight(c, j)) {
		sched_alloc_release(c, j);
		j->requeue_cause = SCHED_REQUEUE_FAULT;
		j->reason_key = 0;
		snprintf(reason, sizeof(reason), "recovering from a fault; waits for capacity: "
						 "re-placed by the next pass (%.300s)", why);
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_PENDING, now_usec, reason);
		return;
	}
	if (j->slice_count > 1 && nkeep > 0 && j->slice_count <= sizeof(bad) / sizeof(bad[0]))
		r = sched_replace(c, j, bad, &slices, &count);
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
	sched_job_begin_generation(j, now_usec);
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

void sched_job_restart(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why)
{
	char reason[SCHED_REASON_MAX];

	if (j->state != SCHED_JOB_RUNNING)
		return;
	j->restarts++;
	if (j->restarts > j->spec->max_restarts) {
		sched_alloc_release(c, j);
		snprintf(reason, sizeof(reason), "%.400s; max_restarts (%u) exhausted", why,
			 j->spec->max_restarts);
		sched_job_transition(c, j, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec, reason);
		sched_schedule(c, now_usec);
		return;
	}
	snprintf(reason, sizeof(reason), "%.400s; restart %u of %u", why, j->restarts,
		 j->spec->max_restarts);
	sched_job_transition(c, j, SCHED_JOB_RECOVERING, SCHED_EV_RECOVERING, now_usec, reason);
	sched_job_begin_generation(j, now_usec);
	snprintf(reason, sizeof(reason), "restarted on the same NPUs; generation %u",
		 j->generation);
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_PLACED, now_usec, reason);
}
