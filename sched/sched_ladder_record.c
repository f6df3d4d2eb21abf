/* SPDX-License-Identifier: MIT */
/*
 * The recovery ladder as the outside sees it (issue 17): jobs/<id>/recovery, the file
 * a job's processes watch for the ladder's requests, and the "ladder" object of the job
 * record in the store (sched_state.c). The steps themselves are sched_ladder.c's; this
 * file only reads and writes struct sched_ladder.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_internal.h"

/* ---- jobs/<id>/recovery ---- */

static int jset(json_t *o, const char *key, json_t *v)
{
	return v ? json_object_set_new(o, key, v) : -1;
}

static json_t *time_or_null(uint64_t usec)
{
	char t[64];

	if (!usec)
		return json_null();
	sched_iso_time(usec, t, sizeof(t));
	return json_string(t);
}

int sched_render_job_recovery(const struct sched_cluster *c, const struct sched_job *j,
			      char **ret, size_t *ret_len)
{
	const struct sched_ladder *l = &j->ladder;
	json_t *o = json_object(), *ladder = json_array(), *procs = json_array();
	bool per_rank = j->spec && j->spec->launch == CONF_LAUNCH_PER_RANK;
	bool in_place = l->active && l->strategy == CONF_RECOVERY_IN_PLACE;
	bool process = l->active && l->strategy == CONF_RECOVERY_PROCESS && l->joining;
	bool retry = l->active && l->strategy == CONF_RECOVERY_RETRY;
	int bad = !o || !ladder || !procs;
	const char *action = !l->active ? (l->resumed ? "resume" : "none") :
			     in_place ? "pause" : process ? "rebuild" : retry ? "retry" : "save";
	char *text;

	for (size_t i = 0; !bad && j->spec && i < j->spec->recovery_count; i++)
		bad |= json_array_append_new(ladder,
					     json_string(conf_recovery_name(j->spec->recovery[i])));
	for (size_t i = 0; !bad && l->active && i < l->process_count; i++) {
		const struct sched_slice *sl;
		json_t *p;

		bool restarted = in_place && (long)i == l->restarted;
		bool joining = process && l->joining[i];
		const char *role = restarted ? "restart" : in_place ? "pause" :
				   joining ? "join" : process ? "rebuild" : retry ? "retry" : "save";

		if (!l->waited[i] && !l->answered[i] && !restarted)
			continue;
		sl = &j->slices[sched_job_process_slice(j, i)];
		p = json_object();
		bad |= !p || jset(p, "server", json_string(c->servers[sl->server].conf->name)) ||
		       jset(p, "node_rank", json_integer((json_int_t)sched_job_process_slice(j, i))) ||
		       jset(p, "rank", per_rank ? json_integer((json_int_t)i) : json_null()) ||
		       jset(p, "role", json_string(role)) ||
		       jset(p, "answered", json_boolean(restarted ? l->joined : l->answered[i])) ||
		       json_array_append_new(procs, p);
	}
	bad |= jset(o, "job", json_string(j->name)) ||
	       jset(o, "generation", json_integer(j->generation)) ||
	       jset(o, "request", json_integer(l->request)) ||
	       jset(o, "action", json_string(action)) ||
	       jset(o, "step", !l->active && l->resumed ?
				       json_integer((json_int_t)l->resume_step) : json_null()) ||
	       jset(o, "strategy", l->active ? json_string(conf_recovery_name(l->strategy)) :
					      json_null()) ||
	       jset(o, "master_addr", process && j->slice_count ?
			json_string(c->servers[j->slices[0].server].conf->host_ip) : json_null()) ||
	       jset(o, "ladder", json_incref(ladder)) ||
	       jset(o, "fault", l->active && l->why ? json_string(l->why) : json_null()) ||
	       jset(o, "began", l->active ? time_or_null(l->began_usec) : json_null()) ||
	       jset(o, "deadline", l->active ? time_or_null(l->deadline_usec) : json_null()) ||
	       jset(o, "timeout_sec", json_integer(c->conf->recovery_timeout_sec)) ||
	       jset(o, "processes", json_incref(procs)) ||
	       jset(o, "last_outcome", l->outcome ? json_string(l->outcome) : json_null());
	json_decref(ladder);
	json_decref(procs);
	if (bad) {
		json_decref(o);
		return -ENOMEM;
	}
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	*ret_len = strlen(text);
	{
		char *n = realloc(text, *ret_len + 2);

		if (!n) {
			free(text);
			return -ENOMEM;
		}
		text = n;
	}
	text[(*ret_len)++] = '\n';
	text[*ret_len] = '\0';
	*ret = text;
	return 0;
}

/* ---- the job record's "ladder" (sched_state.c) ---- */

static json_t *bools(const bool *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_boolean(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *sched_ladder_save(const struct sched_job *j)
{
	const struct sched_ladder *l = &j->ladder;
	json_t *o = json_object();

	if (!o || jset(o, "request", json_integer(l->request)) ||
	    jset(o, "active", json_boolean(l->active)) ||
	    jset(o, "strategy", json_string(conf_recovery_name(l->strategy))) ||
	    jset(o, "rung", json_integer((json_int_t)l->rung)) ||
	    jset(o, "began_usec", json_integer((json_int_t)l->began_usec)) ||
	    jset(o, "deadline_usec", json_integer((json_int_t)l->deadline_usec)) ||
	    jset(o, "why", l->why ? json_string(l->why) : json_null()) ||
	    jset(o, "process_fault", json_boolean(l->process_fault)) ||
	    jset(o, "fault_server", json_integer(l->fault_server)) ||
	    jset(o, "waited", bools(l->waited, l->active ? l->process_count : 0)) ||
	    jset(o, "answered", bools(l->answered, l->active ? l->process_count : 0)) ||
	    jset(o, "saved_step", json_integer((json_int_t)l->saved_step)) ||
	    jset(o, "saved_path", l->saved_path ? json_string(l->saved_path) : json_null()) ||
	    jset(o, "outcome", l->outcome ? json_string(l->outcome) : json_null()) ||
	    jset(o, "restarted", json_integer(l->active ? (json_int_t)l->restarted : -1)) ||
	    jset(o, "joined", json_boolean(l->joined)) ||
	    jset(o, "resumed", json_boolean(l->resumed)) ||
	    jset(o, "resume_step", json_integer((json_int_t)l->resume_step)) ||
	    jset(o, "joining", l->active && l->joining ? bools(l->joining, l->process_count) :
							 json_null()) ||
	    jset(o, "joiners_stateless", json_boolean(l->joiners_stateless)) ||
	    jset(o, "kept_unanswered", json_boolean(l->kept_unanswered))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int dup_or_null(const json_t *v, char **ret)
{
	if (!v || json_is_null(v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return -EINVAL;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int load_bools(const json_t *a, bool **ret, size_t n)
{
	if (!json_is_array(a) || json_array_size(a) != n)
		return -EINVAL;
	*ret = calloc(n ? n : 1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!json_is_boolean(json_array_get(a, i)))
			return -EINVAL;
		(*ret)[i] = json_is_true(json_array_get(a, i));
	}
	return 0;
}

static bool get_uint64(const json_t *o, const char *key, uint64_t *ret)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*ret = (uint64_t)json_integer_value(v);
	return true;
}

int sched_ladder_load(struct sched_cluster *c, struct sched_job *j, const json_t *o)
{
	struct sched_ladder *l = &j->ladder;
	uint64_t request, rung, began, deadline, step;
	const json_t *srv = json_object_get(o, "fault_server");
	const char *strategy = json_string_value(json_object_get(o, "strategy"));
	int r;

	if (!o)
		return 0; /* a record saved before the ladder */
	if (!json_is_object(o) || !get_uint64(o, "request", &request) || request > UINT32_MAX ||
	    !get_uint64(o, "rung", &rung) || !get_uint64(o, "began_usec", &began) ||
	    !get_uint64(o, "deadline_usec", &deadline) || !get_uint64(o, "saved_step", &step) ||
	    !json_is_boolean(json_object_get(o, "active")) ||
	    !json_is_boolean(json_object_get(o, "process_fault")) || !json_is_integer(srv) ||
	    json_integer_value(srv) < -1 || json_integer_value(srv) >= (json_int_t)c->server_count ||
	    !strategy)
		return -EINVAL;
	sched_ladder_free(l);
	l->request = (unsigned)request;
	l->strategy = CONF_RECOVERY_COUNT;
	for (unsigned k = 0; k < CONF_RECOVERY_COUNT; k++)
		if (strcmp(strategy, conf_recovery_name((enum conf_recovery)k)) == 0)
			l->strategy = (enum conf_recovery)k;
	if (l->strategy == CONF_RECOVERY_COUNT)
		return -EINVAL;
	l->rung = (size_t)rung;
	/* fields an older record lacks: no in-place step, no resume notice */
	{
		const json_t *rs = json_object_get(o, "restarted");
		uint64_t resume = 0;

		if (rs && (!json_is_integer(rs) || json_integer_value(rs) < -1))
			return -EINVAL;
		l->restarted = rs ? (long)json_integer_value(rs) : -1;
		l->joined = json_is_true(json_object_get(o, "joined"));
		l->joiners_stateless = json_is_true(json_object_get(o, "joiners_stateless"));
		l->kept_unanswered = json_is_true(json_object_get(o, "kept_unanswered"));
		l->resumed = json_is_true(json_object_get(o, "resumed"));
		if (json_object_get(o, "resume_step") && !get_uint64(o, "resume_step", &resume))
			return -EINVAL;
		l->resume_step = resume;
	}
	l->process_fault = json_is_true(json_object_get(o, "process_fault"));
	l->fault_server = (int)json_integer_value(srv);
	l->saved_step = step;
	if ((r = dup_or_null(json_object_get(o, "why"), &l->why)) < 0 ||
	    (r = dup_or_null(json_object_get(o, "saved_path"), &l->saved_path)) < 0 ||
	    (r = dup_or_null(json_object_get(o, "outcome"), &l->outcome)) < 0)
		return r;
	if (!json_is_true(json_object_get(o, "active")))
		return 0;
	/* a step in progress: sched_ladder_restored() decides whether it waits on */
	l->process_count = json_array_size(json_object_get(o, "waited"));
	if ((r = load_bools(json_object_get(o, "waited"), &l->waited, l->process_count)) < 0 ||
	    (r = load_bools(json_object_get(o, "answered"), &l->answered, l->process_count)) < 0)
		return r;
	if (l->strategy == CONF_RECOVERY_PROCESS &&
	    (r = load_bools(json_object_get(o, "joining"), &l->joining, l->process_count)) < 0)
		return r;
	for (size_t i = 0; i < l->process_count; i++) {
		l->waited_count += l->waited[i];
		l->answered_count += l->answered[i];
	}
	if (!j->spec || l->rung >= j->spec->recovery_count || l->why == NULL ||
	    (l->strategy == CONF_RECOVERY_IN_PLACE && (l->restarted < 0 ||
	     (size_t)l->restarted >= l->process_count)))
		return -EINVAL;
	l->began_usec = began;
	l->deadline_usec = deadline;
	l->active = true;
	return 0;
}
