/* SPDX-License-Identifier: MIT */
/*
 * Services (kind: service): a record that serves, and its instances, jobs named
 * <service>.<index> placed as any job. The rules are in ascend_sched.h ("services").
 *
 * The names follow a StatefulSet's: an instance keeps its index for its life and a
 * replacement takes the same name (its old record replaced, its generations counted on),
 * so the files a gateway or an operator reads, jobs/<service>.<index>/, stay put; scaling
 * down cancels the highest indexes first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_internal.h"

bool sched_job_is_service(const struct sched_job *j)
{
	return j->spec && j->spec->kind == CONF_JOB_SERVICE && !j->service[0];
}

bool sched_job_is_instance(const struct sched_job *j)
{
	return j->service[0] != '\0';
}

int sched_service_instance_name(const char *service, unsigned index, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.%u", service, index);

	return n < 0 || (size_t)n >= len || n > CONF_NAME_MAX ? -ENAMETOOLONG : 0;
}

struct sched_job *sched_service_instance(struct sched_cluster *c, const struct sched_job *svc,
					 unsigned index)
{
	char name[CONF_NAME_MAX + 1];
	struct sched_job *j;

	if (sched_service_instance_name(svc->name, index, name, sizeof(name)) < 0)
		return NULL;
	j = sched_cluster_find_job(c, name);
	return j && strcmp(j->service, svc->name) == 0 ? j : NULL;
}

/* The serving service named by @name up to @dot (its last '.'), or NULL. */
static struct sched_job *serving_before(struct sched_cluster *c, const char *name,
					const char *dot)
{
	char service[CONF_NAME_MAX + 1];
	struct sched_job *svc;
	size_t len = (size_t)(dot - name);

	if (len == 0 || len > CONF_SERVICE_NAME_MAX)
		return NULL;
	memcpy(service, name, len);
	service[len] = '\0';
	svc = sched_cluster_find_job(c, service);
	return svc && svc->state == SCHED_JOB_SERVING ? svc : NULL;
}

struct sched_job *sched_service_of(struct sched_cluster *c, const char *name)
{
	const char *dot = strrchr(name, '.');

	if (!dot || !dot[1] || strspn(dot + 1, "0123456789") != strlen(dot + 1))
		return NULL;
	return serving_before(c, name, dot);
}

struct sched_job *sched_service_owning_name(struct sched_cluster *c, const char *name)
{
	const char *dot = strrchr(name, '.');
	struct sched_job *svc = sched_service_of(c, name);

	if (svc || !dot || sched_role_from_name(dot + 1) < 0)
		return svc;
	svc = serving_before(c, name, dot);
	return svc && svc->spec && svc->spec->prefill ? svc : NULL;
}

/* May instance @index of a service named @service, owned by @uid, take its name now? */
static int name_free(struct sched_cluster *c, const char *service, unsigned index, uid_t uid,
		     char *reason)
{
	char name[CONF_NAME_MAX + 1];
	struct sched_job *old;

	if (sched_service_instance_name(service, index, name, sizeof(name)) < 0)
		return -ENAMETOOLONG;
	old = sched_cluster_find_job(c, name);
	if (!old || (sched_job_state_is_terminal(old->state) &&
		     (strcmp(old->service, service) == 0 || old->uid == uid)))
		return 0;
	if (!sched_job_state_is_terminal(old->state) && strcmp(old->service, service) == 0)
		return -EALREADY; /* it serves already */
	sched_reason(reason, "job %s %s; a service's instances are named <service>.<index>: "
			     "%s it, or name the service otherwise",
		     name, sched_job_state_is_terminal(old->state) ? "is another user's record" :
								      "is active",
		     sched_job_state_is_terminal(old->state) ? "its owner may remove" :
							      "cancel or remove");
	return -EEXIST;
}

int sched_service_check(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
			char *reason)
{
	/* the disaggregated layout's controller and coordinator run on servers of ours */
	const char *roles[2] = { "controller", "coordinator" };
	const char *names[2] = { spec->controller, spec->coordinator };
	const char *commands[2] = { spec->controller_command, spec->coordinator_command };

	if (spec->kind != CONF_JOB_SERVICE)
		return 0;
	/* the names it gives its runs must be names: <name>.<index>, <name>.<role> (the
	 * parser cannot tell a service's spec from its instances' copies of it) */
	if (strlen(spec->name) > CONF_SERVICE_NAME_MAX) {
		sched_reason(reason, "name: a service's name has at most %d characters (its "
				     "instances are named <name>.<index>); this one has %zu",
			     CONF_SERVICE_NAME_MAX, strlen(spec->name));
		return -EINVAL;
	}
	if ((commands[0] || commands[1]) && strlen(spec->name) > CONF_SERVICE_ROLE_NAME_MAX) {
		sched_reason(reason, "name: a disaggregated service whose controller or "
				     "coordinator ascendfs runs has at most %d characters (the role "
				     "runs as <name>.coordinator); this one has %zu",
			     CONF_SERVICE_ROLE_NAME_MAX, strlen(spec->name));
		return -EINVAL;
	}
	for (int i = 0; spec->prefill && i < 2; i++) {
		char run[CONF_NAME_MAX + 16];
		const struct sched_job *other;

		if (sched_cluster_find_server(c, names[i]) < 0) {
			sched_reason(reason, "disaggregated.%s: no server %s in the cluster; name "
					     "one of nodes/ for MindIE MS's %s",
				     roles[i], names[i], roles[i]);
			return -EINVAL;
		}
		/* its run's name is its own: no active job may hold it */
		snprintf(run, sizeof(run), "%s.%s", spec->name, roles[i]);
		other = commands[i] ? sched_cluster_find_job(c, run) : NULL;
		if (other && !sched_job_state_is_terminal(other->state)) {
			sched_reason(reason, "disaggregated.%s: its run is named %s, and job %s is "
					     "%s; cancel it, or name the service otherwise",
				     roles[i], run, run, sched_job_state_name(other->state));
			return -EEXIST;
		}
	}
	for (unsigned i = 0; spec->kind == CONF_JOB_SERVICE && i < spec->replicas; i++) {
		int r = name_free(c, spec->name, i, uid, reason);

		if (r == -EALREADY) {
			/* an instance of an earlier service of this name, still stopping */
			char name[CONF_NAME_MAX + 1];

			sched_service_instance_name(spec->name, i, name, sizeof(name));
			sched_reason(reason, "job %s, an instance of an earlier service %s, is "
					     "still active; submit again once it has ended",
				     name, spec->name);
			return -EEXIST;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Make instance @index of @svc anew. Returns 0 (made), 1 (it serves already) or -errno
 * with @reason. */
static int instance_make(struct sched_cluster *c, struct sched_job *svc, unsigned index,
			 uint64_t now_usec, char *reason)
{
	char name[CONF_NAME_MAX + 1];
	struct conf_job_spec *spec;
	int r = name_free(c, svc->name, index, svc->uid, reason);

	if (r == -EALREADY)
		return 1;
	if (r < 0)
		return r;
	sched_service_instance_name(svc->name, index, name, sizeof(name));
	spec = conf_job_spec_dup(svc->spec, name);
	if (!spec) {
		sched_reason(reason, "out of memory");
		return -ENOMEM;
	}
	/* one instance; a disaggregated layout's copy keeps prefill + decode, which its
	 * counts imply (and its saved spec reads back as) */
	if (!spec->prefill)
		spec->replicas = 1;
	return sched_job_admit_instance(c, spec, svc, now_usec, reason);
}

/* Cancel instance @j of @svc: its cancel, or its scale going down. */
static void instance_cancel(struct sched_cluster *c, const struct sched_job *svc,
			    struct sched_job *j, uint64_t now_usec)
{
	char why[SCHED_REASON_MAX];

	if (svc->state == SCHED_JOB_SERVING)
		snprintf(why, sizeof(why), "cancelled: service %s scaled to %u %s", svc->name,
			 svc->spec->replicas, conf_plural(svc->spec->replicas, "replica", "replicas"));
	else
		snprintf(why, sizeof(why), "cancelled with its service %s", svc->name);
	sched_job_cancel_for(c, j, why, now_usec);
}

/* Make @svc's instances match its replicas. Returns how many changed. */
/* What a serving service's reason says: its count, and the first instance it could not
 * make (@failed < 0: none) and why. */
static void serving_reason(struct sched_cluster *c, struct sched_job *svc, int failed,
			   const char *why, uint64_t now_usec)
{
	const struct conf_job_spec *s = svc->spec;
	char text[SCHED_REASON_MAX];
	int n = snprintf(text, sizeof(text), "serving: %u %s of %u %s on port %u", s->replicas,
			 conf_plural(s->replicas, "replica", "replicas"), s->npus,
			 conf_plural(s->npus, "NPU", "NPUs"), s->port);

	if (failed >= 0 && n > 0 && (size_t)n < sizeof(text))
		snprintf(text + n, sizeof(text) - (size_t)n, "; instance %d not made, tried "
			 "again every second: %s", failed, why);
	if (strcmp(svc->reason, text) == 0)
		return;
	sched_job_set_reason(c, svc, text);
	svc->change_usec = now_usec;
	sched_job_touch(c, svc);
	sched_cluster_changed(c);
	/* a new trouble is an event; its end shows in the reason and the instance's own */
	if (failed >= 0)
		sched_event_add(c, now_usec, SCHED_EV_REFUSED, svc, NULL, -1, "%s", text);
}

static unsigned reconcile(struct sched_cluster *c, struct sched_job *svc, uint64_t now_usec)
{
	char why[SCHED_REASON_MAX] = "";
	unsigned changed = 0;
	int failed = -1;

	for (unsigned i = 0; i < CONF_SERVICE_REPLICAS_MAX; i++) {
		char reason[SCHED_REASON_MAX];
		struct sched_job *j;
		int r;

		if (svc->state == SCHED_JOB_SERVING && i < svc->spec->replicas) {
			r = instance_make(c, svc, i, now_usec, reason);
			if (r == 0)
				changed++;
			else if (r < 0 && failed < 0) {
				failed = (int)i;
				snprintf(why, sizeof(why), "%.300s", reason);
			}
			continue;
		}
		j = sched_service_instance(c, svc, i);
		if (j && !sched_job_state_is_terminal(j->state)) {
			instance_cancel(c, svc, j, now_usec);
			changed++;
		}
	}
	sched_service_roles_sync(c, svc, now_usec);
	if (svc->state == SCHED_JOB_SERVING) {
		serving_reason(c, svc, failed, why, now_usec);
		/* what could not be made (no record free, a name taken) is tried again */
		if (failed >= 0)
			c->services_dirty = true;
	}
	return changed;
}

unsigned sched_service_admitted(struct sched_cluster *c, struct sched_job *svc,
				uint64_t now_usec)
{
	return reconcile(c, svc, now_usec);
}

void sched_service_cancelled(struct sched_cluster *c, struct sched_job *svc, uint64_t now_usec)
{
	reconcile(c, svc, now_usec);
}

unsigned sched_service_tick(struct sched_cluster *c, uint64_t now_usec)
{
	unsigned changed = 0;

	struct sched_job **serving;
	size_t n = 0;

	if (!c->services_dirty)
		return 0;
	/* listed first: making an instance may replace a record (an ended instance's),
	 * which moves the others in c->jobs, never a service's */
	serving = malloc((c->job_count ? c->job_count : 1) * sizeof(*serving));
	if (!serving)
		return 0; /* dirty still: the next tick tries again */
	c->services_dirty = false;
	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i]->state == SCHED_JOB_SERVING)
			serving[n++] = c->jobs[i];
	for (size_t i = 0; i < n; i++)
		changed += reconcile(c, serving[i], now_usec);
	free(serving);
	return changed;
}

const char *sched_service_role(const struct sched_job *j)
{
	const char *dot = strrchr(j->name, '.');

	if (!sched_job_is_instance(j) || !j->spec || !j->spec->prefill || !dot)
		return NULL;
	return strtoul(dot + 1, NULL, 10) < j->spec->prefill ? "prefill" : "decode";
}

int sched_service_scale(struct sched_cluster *c, const char *name, uid_t uid, unsigned replicas,
			uint64_t now_usec, char *reason)
{
	struct sched_job *svc = sched_cluster_find_job(c, name);
	char why[SCHED_REASON_MAX];
	unsigned was;
	char *text = NULL;
	size_t len = 0;

	if (!svc)
		return -ENOENT;
	if (uid != 0 && uid != svc->uid)
		return -EPERM;
	if (svc->state != SCHED_JOB_SERVING) {
		sched_reason(reason, "job %s is not a serving service (it is %s); only a "
				     "service's replicas scale",
			     name, sched_job_state_name(svc->state));
		return -EINVAL;
	}
	if (svc->spec->prefill) {
		sched_reason(reason, "service %s is disaggregated (%u prefill, %u decode "
				     "instances): its counts are in its spec; not yet scaled at run "
				     "time: cancel it and submit it with new counts",
			     name, svc->spec->prefill, svc->spec->decode);
		return -EINVAL;
	}
	if (replicas > CONF_SERVICE_REPLICAS_MAX) {
		sched_reason(reason, "scale %u: a service has 0 to %u replicas", replicas,
			     CONF_SERVICE_REPLICAS_MAX);
		return -EINVAL;
	}
	was = svc->spec->replicas;
	if (was == replicas)
		return 0;
	/* what spec shows says the count it serves with, and a restart restores it */
	svc->spec->replicas = replicas;
	if (conf_job_spec_render_yaml(svc->spec, &text, &len) < 0) {
		svc->spec->replicas = was;
		sched_reason(reason, "out of memory");
		return -ENOMEM;
	}
	free(svc->spec_text);
	svc->spec_text = text;
	svc->spec_len = len;
	sched_reason(why, "serving: scaled from %u to %u %s by %s", was, replicas,
		     conf_plural(replicas, "replica", "replicas"),
		     uid == svc->uid ? "its owner" : "root");
	sched_job_transition(c, svc, SCHED_JOB_SERVING, SCHED_EV_RESIZED, now_usec, why);
	reconcile(c, svc, now_usec);
	return 0;
}

/* ---- restart back-off (the rule: ascend_sched.h, above sched_service_hold_restart()) -- */

bool sched_service_hold_restart(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
				const char *why, int server, long process)
{
	uint64_t from = j->generation_usec > j->backoff_from_usec ? j->generation_usec :
								   j->backoff_from_usec;
	uint64_t ran = now_usec > from ? now_usec - from : 0, delay;
	char reason[SCHED_REASON_MAX];

	if (j->restart_at_usec)
		return true; /* the restart held already starts this process too */
	if (ran >= SCHED_BACKOFF_RESET_USEC)
		j->backoff_usec = 0;
	delay = j->backoff_usec;
	j->backoff_usec = !delay ? SCHED_BACKOFF_INITIAL_USEC :
		delay * 2 > SCHED_BACKOFF_MAX_USEC ? SCHED_BACKOFF_MAX_USEC : delay * 2;
	if (!delay || asprintf(&j->restart_why, "%.400s (held %llu s by restart back-off)", why,
			       (unsigned long long)(delay / 1000000u)) < 0) {
		j->restart_why = NULL;
		j->backoff_from_usec = now_usec;
		return false;
	}
	j->restart_at_usec = now_usec + delay;
	j->restart_server = server;
	j->restart_process = process;
	snprintf(reason, sizeof(reason),
		 "back-off: %.300s %.1f s after it started; started again in %llu s (restart "
		 "back-off: doubles on each end within %llu min of a start, to at most %llu s)",
		 why, (double)ran / 1e6, (unsigned long long)(delay / 1000000u),
		 (unsigned long long)(SCHED_BACKOFF_RESET_USEC / 60000000u),
		 (unsigned long long)(SCHED_BACKOFF_MAX_USEC / 1000000u));
	sched_job_set_reason(c, j, reason);
	j->change_usec = now_usec;
	sched_job_touch(c, j);
	sched_cluster_changed(c);
	sched_event_add(c, now_usec, SCHED_EV_BACKOFF, j, NULL, -1, "%s", reason);
	return true;
}

void sched_service_hold_clear(struct sched_job *j)
{
	free(j->restart_why);
	j->restart_why = NULL;
	j->restart_at_usec = 0;
}

unsigned sched_service_restart_due(struct sched_cluster *c, struct sched_job *j,
				   uint64_t now_usec)
{
	char why[SCHED_REASON_MAX];

	if (!j->restart_at_usec || now_usec < j->restart_at_usec)
		return 0;
	snprintf(why, sizeof(why), "%s", j->restart_why ? j->restart_why : "a process ended");
	sched_service_hold_clear(j);
	j->backoff_from_usec = now_usec;
	if (j->state != SCHED_JOB_RUNNING || j->restart_process < 0)
		return 0;
	if ((size_t)j->restart_server >= c->server_count)
		j->restart_server = -1; /* gone from the inventory (a restored hold) */
	/* the restart's events name the server, as an exit's own */
	sched_job_subject(c, j, j->restart_server >= 0 ?
				c->servers[j->restart_server].conf->name : NULL, -1);
	sched_job_restart(c, j, now_usec, why, j->restart_server, j->restart_process);
	sched_job_subject(c, NULL, NULL, -1);
	if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_STOPPING &&
	    j->state != SCHED_JOB_RECOVERING)
		sched_pass_request(c, now_usec); /* it failed, and its NPUs are free */
	return 1;
}

/* "<host_ip>:<port>" of placed instance @j's first server */
static int endpoint_text(const struct sched_cluster *c, const struct sched_job *j, char *buf,
			 size_t len)
{
	const struct conf_server *master;

	if (!j->slice_count || !j->spec)
		return -ENOENT;
	master = c->servers[j->slices[0].server].conf;
	/* an IPv6 address in brackets, as a URL and a socket address take it */
	snprintf(buf, len, strchr(master->host_ip, ':') ? "[%s]:%u" : "%s:%u", master->host_ip,
		 j->spec->port);
	return 0;
}

int sched_render_service_endpoints(const struct sched_cluster *c, const struct sched_job *svc,
				   char **ret, size_t *ret_len)
{
	/* each line: a name and an address, both bounded */
	size_t cap = CONF_SERVICE_REPLICAS_MAX * (CONF_NAME_MAX + 72) + 1, len = 0;
	char *out = malloc(cap);

	if (!out)
		return -ENOMEM;
	out[0] = '\0';
	for (unsigned i = 0; svc->spec && svc->state == SCHED_JOB_SERVING &&
			     i < svc->spec->replicas; i++) {
		/* the lookup changes nothing: find_job takes a mutable cluster */
		const struct sched_job *j =
			sched_service_instance((struct sched_cluster *)c, svc, i);
		char addr[80];

		if (!j || !sched_job_is_ready(j) || endpoint_text(c, j, addr, sizeof(addr)) < 0)
			continue;
		len += (size_t)snprintf(out + len, cap - len, "%s %s\n", j->name, addr);
	}
	*ret = out;
	*ret_len = len;
	return 0;
}

bool sched_job_is_ready(const struct sched_job *j)
{
	return j->state == SCHED_JOB_RUNNING && j->ready_generation &&
	       j->ready_generation == j->generation;
}

int sched_service_ready(struct sched_cluster *c, const char *name, uid_t uid,
			unsigned generation, bool ready, uint64_t now_usec, char *reason)
{
	struct sched_job *j = sched_cluster_find_job(c, name);
	char addr[80];

	if (!j)
		return -ENOENT;
	if (uid != 0 && uid != j->uid)
		return -EPERM;
	if (!sched_job_is_instance(j)) {
		sched_reason(reason, "job %s is no service's instance; only an instance reports "
				     "ready", name);
		return -EINVAL;
	}
	/* a probe of a generation gone meanwhile */
	if (generation != j->generation)
		return 0;
	if (j->state != SCHED_JOB_RUNNING)
		return -EBUSY;
	if (sched_job_is_ready(j) == ready)
		return 0;
	j->ready_generation = ready ? generation : 0;
	j->ready_usec = now_usec;
	sched_job_touch(c, j);
	sched_cluster_changed(c);
	endpoint_text(c, j, addr, sizeof(addr));
	if (ready)
		sched_event_add(c, now_usec, SCHED_EV_READY, j, NULL, -1,
				"ready: %s answers; in %s's endpoints", addr, j->service);
	else
		sched_event_add(c, now_usec, SCHED_EV_READY, j, NULL, -1,
				"not ready: %s no longer answers; out of %s's endpoints", addr,
				j->service);
	return 0;
}

int sched_render_instance_endpoint(const struct sched_cluster *c, const struct sched_job *j,
				   char **ret, size_t *ret_len)
{
	char addr[80];
	int n;

	if (!sched_job_is_instance(j) || endpoint_text(c, j, addr, sizeof(addr)) < 0)
		return -ENOENT;
	n = asprintf(ret, "%s\n", addr);
	if (n < 0)
		return -ENOMEM;
	*ret_len = (size_t)n;
	return 0;
}

int sched_render_instance_mindie(const struct sched_cluster *c, const struct sched_job *j,
				 char **ret, size_t *ret_len)
{
	const struct sched_slice *sl;
	json_t *ids, *doc;
	char *text;
	int n;

	if (!sched_job_is_instance(j) || !j->slice_count || !j->spec)
		return -ENOENT;
	(void)c;
	sl = &j->slices[0];
	ids = json_array();
	for (unsigned k = 0; ids && k < sl->npu_count; k++)
		if (json_array_append_new(ids, json_integer(sl->device_ids[k])) < 0) {
			json_decref(ids);
			ids = NULL;
		}
	if (!ids)
		return -ENOMEM;
	doc = json_pack("{s:{s:i}, s:{s:b, s:[o], s:{s:[{s:i}]}}}",
			"ServerConfig", "port", (json_int_t)j->spec->port,
			"BackendConfig", "multiNodesInferEnabled", j->slice_count > 1,
			"npuDeviceIds", ids,
			"ModelDeployConfig", "ModelConfig", "worldSize", (json_int_t)sl->npu_count);
	if (!doc)
		return -ENOMEM;
	text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	/* one trailing newline, as every file of the mount */
	n = asprintf(ret, "%s\n", text);
	free(text);
	if (n < 0)
		return -ENOMEM;
	*ret_len = (size_t)n;
	return 0;
}
