/* SPDX-License-Identifier: MIT */
/*
 * NPU and server health, isolation and heartbeats (design.md §6). Levels follow
 * npu-smi's Health column; the default handling is Ascend's: Warning is logged, Alarm
 * pre-isolates, Critical/UNKNOWN isolate the NPU and hand its job to the recovery ladder
 * (sched_ladder.c). Suspicion is sched_suspect.c's, job-level recovery sched_recover.c's.
 *
 * A Critical report whose code is one of the cluster's retry_fault_codes is a transient
 * fault (MindCluster's RestartRequest level: the request is executed again, the chip is
 * not taken out): when the NPU's job can retry (sched_job_retry_applies()), the NPU
 * stays in service and the job's ladder recomputes the step; with no job on it, it
 * stays in service too. Its reports go on saying Critical until the agent sees the
 * fault gone: those during the retry step (also one restored after a daemon restart),
 * or within two report intervals (fault_check_interval) of the first, are the same
 * incident, counted once. It is a lasting fault, isolated as any, when the NPU is still
 * Critical after both, when the job cannot retry, when the faults escalate
 * (fault_escalate_count), or when the retry step fails (sched_ladder.c isolates it
 * then). A report below Critical ends the incident.
 */
#include <stdarg.h>
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
		int npu = -1;

		/* a job whose ladder waits is told too: that server's processes will not answer */
		if (hit[i]->state != SCHED_JOB_RUNNING &&
		    !(hit[i]->state == SCHED_JOB_RECOVERING && hit[i]->ladder.active))
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
				npu = (int)d;
				break;
			}
		}
		/* its events carry the server and NPU their reasons name */
		sched_job_subject(c, hit[i], s->conf->name, npu);
		sched_job_recover(c, hit[i], now_usec, reason);
		sched_job_subject(c, NULL, NULL, -1);
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
		sched_npu_set_isolation(n, SCHED_ISOLATION_NONE);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
				(int)n->device_id, "healthy again: back in service");
	} else if (n->isolation == SCHED_ISOLATION_FAULT) {
		if (!n->ok_since_usec)
			n->ok_since_usec = now_usec;
		if (elapsed(now_usec, n->ok_since_usec) >= hold) {
			sched_npu_set_isolation(n, SCHED_ISOLATION_NONE);
			n->ok_since_usec = 0;
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
					(int)n->device_id,
					"healthy for the hold time (%u s): back in service",
					c->conf->fault_hold_sec);
		}
	}
}

/*
 * A Critical report of @n with one of retry_fault_codes (@fault: level, code, message):
 * returns 0 when its job retries the step (or it has none), 1 when it is the incident
 * its job's retry step handles now, -1 when it is a lasting fault to isolate, -2 when
 * the faults escalate (counted here: isolate until `clear`).
 */
static int transient_fault(struct sched_cluster *c, struct sched_server *s,
			   struct sched_npu *n, const char *fault, uint64_t now_usec)
{
	struct sched_job *j = n->job;
	char why[160];

	if (j && j->state == SCHED_JOB_RECOVERING && j->ladder.active &&
	    j->ladder.strategy == CONF_RECOVERY_RETRY) {
		/* the step its retry handles (also after a daemon restart, which forgets
		 * retry_pending) */
		if (!n->retry_pending) {
			n->retry_pending = true;
			n->retry_since_usec = now_usec;
		}
		return 1;
	}
	if (n->retry_pending) {
		uint64_t window = 2 * (uint64_t)c->conf->fault_check_interval_sec * 1000000u;

		if (elapsed(now_usec, n->retry_since_usec) < window)
			return 1; /* the agent has not seen it gone yet */
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
				(int)n->device_id, "%s still, %.0f s after it was retried: a "
				"lasting fault", fault,
				(double)elapsed(now_usec, n->retry_since_usec) / 1e6);
		return -1;
	}
	if (!j) {
		/* counted once per incident; still Critical after the window, isolated */
		sched_text_set(c, &n->fault, fault, SCHED_FAULT_MAX);
		if (count_fault(c, n, now_usec))
			return -2;
		n->retry_pending = true;
		n->retry_since_usec = now_usec;
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
				(int)n->device_id, "%s: a transient fault (retry_fault_codes) "
				"with no job on it: stays in service", fault);
		return 0;
	}
	if (!sched_job_retry_applies(c, j, why, sizeof(why))) {
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
				(int)n->device_id, "%s: a transient fault (retry_fault_codes), "
				"but %s", fault, why);
		return -1;
	}
	sched_text_set(c, &n->fault, fault, SCHED_FAULT_MAX);
	if (count_fault(c, n, now_usec))
		return -2;
	n->retry_pending = n->retry_due = true;
	n->retry_since_usec = now_usec;
	sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, (int)n->device_id,
			"%s: a transient fault (retry_fault_codes): stays in service, job %s "
			"recomputes its step", fault, j->name);
	return 0;
}

/* The retries the report's levels called for (transient_fault()), each job once. */
static void retry_hit_jobs(struct sched_cluster *c, struct sched_server *s, uint64_t now_usec)
{
	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		struct sched_npu *n = &s->npus[d];
		char reason[SCHED_REASON_MAX];

		if (!n->retry_due)
			continue;
		n->retry_due = false;
		if (!n->job || n->job->state != SCHED_JOB_RUNNING)
			continue; /* another NPU of the report started its retry */
		snprintf(reason, sizeof(reason), "NPU %u of %s: %s (transient)", d, s->conf->name,
			 n->fault);
		sched_job_subject(c, n->job, s->conf->name, (int)d);
		sched_job_retry(c, n->job, now_usec, reason);
		sched_job_subject(c, NULL, NULL, -1);
	}
}

/* Apply one NPU's level. Returns true when a running job must move. */
static bool apply_level(struct sched_cluster *c, struct sched_server *s, struct sched_npu *n,
			enum conf_health_level level, const char *code, const char *message,
			uint64_t now_usec)
{
	const char *server = s->conf->name;
	enum sched_health old = n->health;
	char fault[SCHED_FAULT_MAX];
	int transient = -1;

	n->health = (enum sched_health)level;
	/* every view shows the health: a change no event announces (OK again while
	 * isolated manually) must still move the version readers cache by */
	if (old != n->health)
		sched_cluster_changed(c);
	switch (level) {
	case CONF_HEALTH_OK:
		n->retry_pending = false;
		if (old != SCHED_HEALTH_OK && n->isolation == SCHED_ISOLATION_NONE)
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server,
					(int)n->device_id,
					"OK again");
		heal(c, s, n, now_usec);
		return false;
	case CONF_HEALTH_WARNING:
		n->retry_pending = false;
		if (old != SCHED_HEALTH_WARNING)
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server,
					(int)n->device_id,
					"Warning %s %s (logged only)", code, message);
		heal(c, s, n, now_usec);
		return false;
	case CONF_HEALTH_ALARM:
		n->ok_since_usec = 0;
		if (n->isolation == SCHED_ISOLATION_NONE) {
			sched_npu_set_isolation(n, SCHED_ISOLATION_ALARM);
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
			sched_text_set(c, &n->fault, fault, SCHED_FAULT_MAX);
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server,
					(int)n->device_id, "%s: still isolated", n->fault);
		}
		return false;
	}
	/* a transient fault its job retries stays in service; -2: escalated, counted */
	if (level == CONF_HEALTH_CRITICAL && conf_cluster_code_is_retry(c->conf, code)) {
		transient = transient_fault(c, s, n, fault, now_usec);
		if (transient >= 0)
			return false;
	}
	sched_text_set(c, &n->fault, fault, SCHED_FAULT_MAX);
	if (transient == -2 || count_fault(c, n, now_usec)) {
		sched_npu_set_isolation(n, SCHED_ISOLATION_MANUAL);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server, (int)n->device_id,
				"%s: isolated until `clear %u` (%u faults within %u s)", n->fault,
				n->device_id, n->window_faults, c->conf->fault_escalate_window_sec);
	} else {
		sched_npu_set_isolation(n, SCHED_ISOLATION_FAULT);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, server, (int)n->device_id,
				"%s: isolated", n->fault);
	}
	n->retry_pending = false;
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
		sched_devip_changed(c, s->index, h->id);
		sched_cluster_changed(c);
	}
	for (unsigned d = 0; d < s->conf->npu_count; d++)
		known += s->npus[d].reported_ip[0] != '\0';
	if (known == s->conf->npu_count && !s->ips_confirmed) {
		s->ips_confirmed = true;
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1,
				"agent confirmed the device IPs of all %u NPUs", known);
	}
}

/* Does @r's `running` line list any generation of job @name? */
static bool report_lists_job(const struct conf_health_report *r, const char *name)
{
	for (size_t i = 0; i < r->running_count && i < CONF_HEALTH_RUNNING_MAX; i++)
		if (strcmp(r->running[i].job, name) == 0)
			return true;
	return false;
}

/*
 * A report with a `running` line from server @server: each stopping job holding NPUs
 * here that it does not list has no process left here; one with none left anywhere
 * releases its NPUs. Returns how many stops finished.
 */
static unsigned stops_note_running(struct sched_cluster *c, unsigned server,
				   const struct conf_health_report *r, uint64_t now_usec)
{
	struct sched_server *s = &c->servers[server];
	struct sched_job *seen[CONF_SERVER_NPUS_MAX];
	size_t n = 0;
	unsigned finished = 0;

	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		struct sched_job *j = s->npus[d].job;
		size_t k;

		if (!j || j->state != SCHED_JOB_STOPPING)
			continue;
		for (k = 0; k < n && seen[k] != j; k++)
			;
		if (k == n)
			seen[n++] = j;
	}
	for (size_t k = 0; k < n; k++) {
		struct sched_job *j = seen[k];

		if (report_lists_job(r, j->name))
			continue;
		for (size_t i = 0; i < j->slice_count; i++)
			if (j->slices[i].server == server && !j->slices[i].gone) {
				j->slices[i].gone = true;
				sched_job_touch(c, j);
			}
		finished += sched_job_stop_check_gone(c, j, now_usec) > 0;
	}
	return finished;
}

/*
 * Keep what the report says each job generation's cgroup used on @server: per server,
 * the newest generation reported (an older one still stopping there reports too). No
 * event and no version, of the job or the cluster: not a state change, nothing to save
 * or announce (a version bump with every report would make every report wait for the
 * store); the daemon renders status.json afresh at every open (fs_snapshot()).
 */
static void note_usage(struct sched_cluster *c, unsigned server,
		       const struct conf_health_report *r)
{
	for (size_t i = 0; i < r->usage_count && i < CONF_HEALTH_USAGE_MAX; i++) {
		const struct conf_health_usage *u = &r->usage[i];
		struct sched_job *j = sched_cluster_find_job(c, u->job);
		struct sched_job_usage *e = NULL, *n;

		if (!j || u->generation > j->generation)
			continue; /* not this job (a name reused since), or not yet */
		for (size_t k = 0; k < j->usage_count && !e; k++)
			if (j->usage[k].server == server)
				e = &j->usage[k];
		if (!e) {
			n = realloc(j->usage, (j->usage_count + 1) * sizeof(*n));
			if (!n)
				continue; /* out of memory: the next report tries again */
			j->usage = n;
			e = &j->usage[j->usage_count++];
			e->server = server;
			e->generation = 0;
		}
		if (u->generation < e->generation)
			continue;
		e->generation = u->generation;
		e->cpu_usec = u->cpu_usec;
		e->memory_bytes = u->memory_bytes;
	}
}

/* Keep the super-pod identity each NPU reported (A3 `sdid` lines). */
static void check_sdids(struct sched_cluster *c, struct sched_server *s,
			const struct conf_health_report *r, uint64_t now_usec)
{
	unsigned changed = 0, first = 0;

	for (size_t i = 0; i < r->npu_count; i++) {
		const struct conf_health_npu *h = &r->npus[i];
		struct sched_npu *n = &s->npus[h->id];

		if (!h->has_sdid || (n->has_sdid && n->sdid == h->sdid &&
				     n->super_pod_id == h->super_pod_id &&
				     n->server_index == h->server_index))
			continue;
		if (!changed++)
			first = h->id;
		n->has_sdid = true;
		n->sdid = h->sdid;
		n->super_pod_id = h->super_pod_id;
		n->server_index = h->server_index;
	}
	if (!changed)
		return;
	sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1,
			"agent reported the SDIDs of %u NPU%s: super pod %u, server index %u",
			changed, changed == 1 ? "" : "s", (unsigned)s->npus[first].super_pod_id,
			s->npus[first].server_index);
	sched_cluster_changed(c);
}

/* The device IP the report @r gives NPU @d, or NULL. */
static const char *report_gives_ip(const struct conf_health_report *r, unsigned d)
{
	for (size_t i = 0; i < r->npu_count; i++)
		if (r->npus[i].id == d && r->npus[i].device_ip[0])
			return r->npus[i].device_ip;
	return NULL;
}

/* The device IP NPU @d of @s would have after @r: its own, reported or inventory's. */
static const char *report_ip(const struct sched_server *s, const struct conf_health_report *r,
			     unsigned d)
{
	const char *ip = report_gives_ip(r, d);

	if (ip)
		return ip;
	if (s->npus[d].reported_ip[0])
		return s->npus[d].reported_ip;
	return s->conf->device_ips[d];
}

static int refuse(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int sched_server_check_report(const struct sched_cluster *c, unsigned server,
			      const struct conf_health_report *r, char *why, size_t why_len)
{
	const struct sched_server *s;
	const char *first_ip = NULL;
	unsigned first_id = 0;
	int family = 0;

	if (why_len)
		why[0] = '\0';
	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	/* the device IPs this server's NPUs would have after the report */
	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		const char *ip = report_ip(s, r, d);
		unsigned other_server;
		int other, f;

		if (!ip)
			continue;
		if (sched_devip_find(c, ip, server, &other_server, &other)) {
			if (!report_gives_ip(r, d))
				continue; /* not this report's doing */
			if (other < 0)
				return refuse(why, why_len,
					      "ip %u: %s is the host_ip of server %s; a device IP is "
					      "the address of the NPU's own RoCE NIC",
					      d, ip, c->servers[other_server].conf->name);
			return refuse(why, why_len,
				      "ip %u: %s is already the device IP of NPU %d of server %s; "
				      "every NPU has its own (hccn_tool -i %u -ip -g shows this "
				      "one's)",
				      d, ip, other, c->servers[other_server].conf->name, d);
		}
		for (unsigned e = 0; e < d; e++) {
			const char *mine = report_ip(s, r, e);

			if (mine && strcmp(mine, ip) == 0 &&
			    (report_gives_ip(r, d) || report_gives_ip(r, e)))
				return refuse(why, why_len,
					      "ip %u: %s is already the device IP of NPU %u of this "
					      "server; every NPU has its own",
					      report_gives_ip(r, d) ? d : e, ip,
					      report_gives_ip(r, d) ? e : d);
		}
		f = strchr(ip, ':') ? 6 : 4;
		if (!family) {
			family = f;
			first_ip = ip;
			first_id = d;
		} else if (f != family && (report_gives_ip(r, d) || report_gives_ip(r, first_id))) {
			unsigned bad = report_gives_ip(r, d) ? d : first_id;

			return refuse(why, why_len,
				      "ip %u: %s is IPv%d but NPU %u has %s (IPv%d); the NPUs of a "
				      "server use one address family (HCCL refuses a rank table "
				      "that mixes them)",
				      bad, bad == d ? ip : first_ip, bad == d ? f : family,
				      bad == d ? first_id : d, bad == d ? first_ip : ip,
				      bad == d ? family : f);
		}
	}
	return 0;
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
	/* a server's NPUs are a run of the cluster's array: an id past its count would be
	 * another server's */
	for (size_t i = 0; i < r->npu_count; i++)
		if (r->npus[i].id >= s->conf->npu_count)
			return -EINVAL;
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
	note_usage(c, server, r);
	check_sdids(c, s, r, now_usec);

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
	retry_hit_jobs(c, s, now_usec);
	/* no version bump for a mere heartbeat: every visible change added an event */
	if (move) {
		snprintf(why, sizeof(why), "NPU fault on %s", s->conf->name);
		recover_hit_jobs(c, s, now_usec, why);
	}
	s->reports_running = r->has_running;
	if (r->has_running)
		stops_note_running(c, server, r, now_usec);
	sched_pass_request(c, now_usec);
	return 0;
}

/* The machine part of an agent identity: up to its first '/' (ascend-agent sends
 * "<host name>:<machine-id>/<pid>.<boot id>", older agents the machine part alone). */
static bool agents_share_machine(const char *x, const char *y)
{
	size_t n = strcspn(x, "/");

	return n == strcspn(y, "/") && memcmp(x, y, n) == 0;
}

/* The pid of an identity's instance part ("/<pid>.<boot id>"), 0 when it has none. */
static unsigned long agent_pid(const char *agent)
{
	const char *p = strchr(agent, '/');
	unsigned long pid = 0;

	if (!p)
		return 0;
	for (p++; *p >= '0' && *p <= '9' && pid < 100000000ul; p++)
		pid = pid * 10 + (unsigned long)(*p - '0');
	return *p == '.' || *p == '\0' ? pid : 0;
}

uint64_t sched_agent_takeover_usec(const struct conf_cluster *conf, bool same_machine)
{
	uint64_t timeout = (uint64_t)conf->heartbeat_timeout_sec * 1000000u;
	uint64_t restart = (uint64_t)conf->fault_check_interval_sec * 2000000u;

	return same_machine && restart < timeout ? restart : timeout;
}

int sched_server_check_agent(const struct sched_cluster *c, unsigned server, const char *agent,
			     uint64_t now_usec, char *why, size_t why_len)
{
	const struct sched_server *s;
	char stop[64] = "";
	uint64_t takeover, age;
	bool same;

	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	if (!agent || !agent[0] || !s->agent[0] || strcmp(agent, s->agent) == 0 ||
	    !s->last_report_usec)
		return 0;
	same = agents_share_machine(agent, s->agent);
	takeover = sched_agent_takeover_usec(c->conf, same);
	age = elapsed(now_usec, s->last_report_usec);
	if (age > takeover)
		return 0;
	if (!same) {
		snprintf(why, why_len, "agent %.160s reports for %s, but agent %.160s %s %.1f s "
			 "ago: two agents use the node name %s; give each server its own (--node, "
			 "or the host name); the other agent takes over after %u s of its silence",
			 agent, s->conf->name, s->agent,
			 s->restored_heartbeat ? "had it when the daemon restarted" : "did",
			 (double)age / 1e6, s->conf->name, c->conf->heartbeat_timeout_sec);
		return -EEXIST;
	}
	if (agent_pid(s->agent))
		snprintf(stop, sizeof(stop), " (kill -TERM %lu there)", agent_pid(s->agent));
	snprintf(why, why_len, "agent %.160s reports for %s, but agent %.160s of the same machine "
		 "%s %.1f s ago: two agents run for %s on one machine, each would start the "
		 "jobs' processes on the same NPUs; stop one of them%s; a restarted agent takes "
		 "over after %.1f s of the other's silence",
		 agent, s->conf->name, s->agent,
		 s->restored_heartbeat ? "had it when the daemon restarted" : "did",
		 (double)age / 1e6, s->conf->name, stop, (double)takeover / 1e6);
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

void sched_heartbeats_grace(struct sched_cluster *c, uint64_t now_usec)
{
	for (size_t i = 0; i < c->server_count; i++) {
		struct sched_server *s = &c->servers[i];

		if (s->restored_heartbeat && s->last_report_usec && s->last_report_usec < now_usec)
			s->last_report_usec = now_usec;
	}
}

unsigned sched_check_heartbeats(struct sched_cluster *c, uint64_t now_usec)
{
	uint64_t timeout = (uint64_t)c->conf->heartbeat_timeout_sec * 1000000u;
	unsigned marked = 0;
	bool *lost = calloc(c->server_count ? c->server_count : 1, sizeof(*lost));

	/*
	 * Every server found lost in this pass is marked before any job recovers: a job on
	 * three of them moves once, not three times onto servers about to be marked.
	 */
	for (size_t i = 0; i < c->server_count; i++) {
		struct sched_server *s = &c->servers[i];
		char why[SCHED_REASON_MAX];

		if (s->state != SCHED_SERVER_READY || !s->last_report_usec ||
		    elapsed(now_usec, s->last_report_usec) <= timeout)
			continue;
		s->state = SCHED_SERVER_UNREACHABLE;
		s->version++;
		c->mutations++;
		snprintf(why, sizeof(why), "server %s unreachable: no health report for %u s",
			 s->conf->name,
			 (unsigned)(elapsed(now_usec, s->last_report_usec) / 1000000u));
		for (unsigned d = 0; d < s->conf->npu_count; d++) {
			struct sched_npu *n = &s->npus[d];

			if (n->isolation == SCHED_ISOLATION_MANUAL)
				continue;
			n->health = SCHED_HEALTH_UNKNOWN;
			sched_text_set(c, &n->fault, "heartbeat lost", SCHED_FAULT_MAX);
			n->last_fault_usec = now_usec;
			n->ok_since_usec = 0;
			sched_npu_set_isolation(n, SCHED_ISOLATION_FAULT);
		}
		sched_server_recount(s);
		sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name, -1, "%s", why);
		if (lost)
			lost[i] = true;
		else
			recover_hit_jobs(c, s, now_usec, why); /* no memory: one at a time */
		marked++;
	}
	for (size_t i = 0; lost && i < c->server_count; i++) {
		struct sched_server *s = &c->servers[i];
		char why[SCHED_REASON_MAX];

		if (!lost[i])
			continue;
		snprintf(why, sizeof(why), "server %s unreachable: no health report for %u s",
			 s->conf->name,
			 (unsigned)(elapsed(now_usec, s->last_report_usec) / 1000000u));
		recover_hit_jobs(c, s, now_usec, why);
	}
	free(lost);
	if (marked)
		sched_pass_request(c, now_usec);
	return marked;
}
