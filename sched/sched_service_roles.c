/* SPDX-License-Identifier: MIT */
/*
 * The disaggregated layout's controller and coordinator, when ascendfs runs them: one
 * process each, no NPUs, on the server the spec names, started again whenever it ends
 * while the service serves. The rules are in ascend_sched.h (above enum sched_role).
 *
 * A role is no job of its own: it has no placement, rank table or queue, and holds
 * nothing a pass decides on. It is a run of the service's record, with a generation
 * the agent's listing, the role's env file and its exit reports share, as a job's
 * generation is shared (sched_render_server_jobs(), sched_render_role_env()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

static const char *const role_names[SCHED_ROLE_COUNT] = { "controller", "coordinator" };

const char *sched_role_name(enum sched_role role)
{
	return (unsigned)role < SCHED_ROLE_COUNT ? role_names[role] : NULL;
}

int sched_role_from_name(const char *name)
{
	for (int i = 0; i < SCHED_ROLE_COUNT; i++)
		if (strcmp(name, role_names[i]) == 0)
			return i;
	return -1;
}

/* The spec's server and command of @role (NULL when not given). */
static const char *role_server(const struct conf_job_spec *s, enum sched_role role)
{
	return role == SCHED_ROLE_CONTROLLER ? s->controller : s->coordinator;
}

static const char *role_command(const struct conf_job_spec *s, enum sched_role role)
{
	return role == SCHED_ROLE_CONTROLLER ? s->controller_command : s->coordinator_command;
}

int sched_service_role_server(const struct sched_cluster *c, const struct sched_job *svc,
			      enum sched_role role)
{
	const char *name;

	if (!svc->spec || !svc->spec->prefill || (unsigned)role >= SCHED_ROLE_COUNT)
		return -1;
	name = role_server(svc->spec, role);
	return name ? sched_cluster_find_server(c, name) : -1;
}

const struct sched_role_run *sched_service_role_run(const struct sched_job *svc,
						    enum sched_role role)
{
	if (!svc->roles || (unsigned)role >= SCHED_ROLE_COUNT ||
	    svc->state != SCHED_JOB_SERVING || !svc->roles[role].generation)
		return NULL;
	return &svc->roles[role];
}

/* Does @svc's spec have a role ascendfs runs? */
static bool runs_roles(const struct sched_job *svc)
{
	return svc->spec && svc->spec->prefill &&
	       (svc->spec->controller_command || svc->spec->coordinator_command);
}

/* Start generation @run->generation + 1 of @role: the agent of its server sees it in its
 * listing (the service's record is touched, which announces the server's listing). */
static void role_start(struct sched_cluster *c, struct sched_job *svc, enum sched_role role,
		       uint64_t now_usec, const char *why)
{
	struct sched_role_run *run = &svc->roles[role];

	if (run->generation)
		run->restarts++;
	run->generation++;
	run->started_usec = now_usec;
	run->restart_at_usec = 0;
	svc->change_usec = now_usec;
	sched_job_touch(c, svc);
	sched_cluster_changed(c);
	sched_event_add(c, now_usec, SCHED_EV_PLACED, svc, NULL, -1,
			"%s %s.%s generation %u on %s: %s", role_names[role], svc->name,
			role_names[role], run->generation, role_server(svc->spec, role), why);
}

void sched_service_roles_sync(struct sched_cluster *c, struct sched_job *svc, uint64_t now_usec)
{
	if (svc->state != SCHED_JOB_SERVING || !runs_roles(svc)) {
		if (svc->roles) {
			/* ended with the service: its listing lines go, the agent stops them */
			free(svc->roles);
			svc->roles = NULL;
			sched_job_touch(c, svc);
			sched_cluster_changed(c);
		}
		return;
	}
	if (!svc->roles) {
		svc->roles = calloc(SCHED_ROLE_COUNT, sizeof(*svc->roles));
		if (!svc->roles) {
			c->services_dirty = true; /* tried again at the next tick */
			return;
		}
		for (int i = 0; i < SCHED_ROLE_COUNT; i++)
			svc->roles[i].last_exit = -1;
	}
	for (int i = 0; i < SCHED_ROLE_COUNT; i++)
		if (role_command(svc->spec, (enum sched_role)i) && !svc->roles[i].generation)
			role_start(c, svc, (enum sched_role)i, now_usec, "the service serves");
}

int sched_service_roles_restore(struct sched_job *svc, const unsigned *generations,
				const uint64_t *restart_at_usec)
{
	bool any = false;

	for (int i = 0; i < SCHED_ROLE_COUNT; i++)
		any = any || generations[i];
	if (!any)
		return 0;
	svc->roles = calloc(SCHED_ROLE_COUNT, sizeof(*svc->roles));
	if (!svc->roles)
		return -ENOMEM;
	for (int i = 0; i < SCHED_ROLE_COUNT; i++) {
		svc->roles[i].generation = generations[i];
		/* an ended generation waiting out its back-off: the next starts then (its
		 * process is gone; the agent reported it already) */
		svc->roles[i].restart_at_usec = generations[i] ? restart_at_usec[i] : 0;
		svc->roles[i].last_exit = -1;
	}
	return 0;
}

int sched_service_role_exit(struct sched_cluster *c, const char *name, uid_t uid,
			    enum sched_role role, unsigned generation, const char *server,
			    int status, uint64_t now_usec, char *reason)
{
	struct sched_job *svc = sched_cluster_find_job(c, name);
	struct sched_role_run *run;
	uint64_t ran, delay;
	int where;

	if (!svc)
		return -ENOENT;
	if (uid != 0 && uid != svc->uid)
		return -EPERM;
	if (!sched_job_is_service(svc) || (unsigned)role >= SCHED_ROLE_COUNT ||
	    !svc->spec->prefill || !role_command(svc->spec, role)) {
		sched_reason(reason, "job %s runs no %s: only a disaggregated service whose "
				     "spec gives disaggregated.%s.command has one",
			     name, sched_role_name(role) ? sched_role_name(role) : "such role",
			     sched_role_name(role) ? sched_role_name(role) : "<role>");
		return -EINVAL;
	}
	if (svc->state != SCHED_JOB_SERVING || !svc->roles)
		return -EBUSY;
	where = sched_service_role_server(c, svc, role);
	if (where < 0 || strcmp(c->servers[where].conf->name, server) != 0) {
		sched_reason(reason, "service %s's %s runs on %s, not on %s", name,
			     role_names[role], role_server(svc->spec, role), server);
		return -EINVAL;
	}
	run = &svc->roles[role];
	if (generation > run->generation) {
		sched_reason(reason, "service %s's %s has not run generation %u (its newest is "
				     "%u)", name, role_names[role], generation, run->generation);
		return -EINVAL;
	}
	/* an older generation's end, or one told twice: its next start is decided */
	if (generation != run->generation || run->restart_at_usec)
		return 0;
	run->last_exit = status;
	/* the restart back-off of an instance (ascend_sched.h, SCHED_BACKOFF_*) */
	ran = run->started_usec && now_usec > run->started_usec ? now_usec - run->started_usec :
								  SCHED_BACKOFF_RESET_USEC;
	if (ran >= SCHED_BACKOFF_RESET_USEC)
		run->backoff_usec = 0;
	delay = run->backoff_usec;
	run->backoff_usec = !delay ? SCHED_BACKOFF_INITIAL_USEC :
		delay * 2 > SCHED_BACKOFF_MAX_USEC ? SCHED_BACKOFF_MAX_USEC : delay * 2;
	if (!delay) {
		char why[SCHED_REASON_MAX];

		snprintf(why, sizeof(why), "generation %u ended with status %d after %.1f s; "
			 "started again", generation, status, (double)ran / 1e6);
		role_start(c, svc, role, now_usec, why);
		return 0;
	}
	run->restart_at_usec = now_usec + delay;
	svc->change_usec = now_usec;
	sched_job_touch(c, svc);
	sched_cluster_changed(c);
	sched_event_add(c, now_usec, SCHED_EV_BACKOFF, svc, NULL, -1,
			"back-off: %s %s.%s generation %u ended with status %d %.1f s after it "
			"started; started again in %llu s (restart back-off: doubles on each end "
			"within %llu min of a start, to at most %llu s)",
			role_names[role], svc->name, role_names[role], generation, status,
			(double)ran / 1e6, (unsigned long long)(delay / 1000000u),
			(unsigned long long)(SCHED_BACKOFF_RESET_USEC / 60000000u),
			(unsigned long long)(SCHED_BACKOFF_MAX_USEC / 1000000u));
	return 0;
}

unsigned sched_service_roles_due(struct sched_cluster *c, struct sched_job *svc,
				 uint64_t now_usec)
{
	unsigned started = 0;

	if (!svc->roles || svc->state != SCHED_JOB_SERVING)
		return 0;
	for (int i = 0; i < SCHED_ROLE_COUNT; i++) {
		struct sched_role_run *run = &svc->roles[i];
		char why[SCHED_REASON_MAX];

		if (!run->restart_at_usec || now_usec < run->restart_at_usec)
			continue;
		snprintf(why, sizeof(why), "generation %u ended with status %d; started again "
			 "after its restart back-off", run->generation, run->last_exit);
		role_start(c, svc, (enum sched_role)i, now_usec, why);
		started++;
	}
	return started;
}

void sched_service_roles_list(const struct sched_cluster *c, const struct sched_job *svc,
			      unsigned server, struct sched_buf *b)
{
	for (int k = 0; svc->roles && k < SCHED_ROLE_COUNT; k++) {
		const struct sched_role_run *run = sched_service_role_run(svc, (enum sched_role)k);

		if (!run || sched_service_role_server(c, svc, (enum sched_role)k) != (int)server)
			continue;
		/* no NPUs and one process: its role is its launch word */
		sched_buf_printf(b, "%s.%s %u %s 0 0 0 %u %u %" PRIu64 " 0 0\n", svc->name,
				 role_names[k], run->generation, role_names[k], (unsigned)svc->uid,
				 (unsigned)svc->gid, svc->serial);
	}
}
