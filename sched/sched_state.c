/* SPDX-License-Identifier: MIT */
/*
 * Save and restore: the cluster's durable state as JSON documents, one per job, one per
 * server and one for the rest, for the daemon's store to keep (sched/ does no I/O).
 * What a scheduling pass derives again (reservations, pending-reason keys, the order of
 * pending jobs) is not saved; the first pass after a restore rebuilds it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_internal.h"

/*
 * Server and meta records are format 1. Job records are format 2: besides what names,
 * orders, says and owns the job (always written), a field at its default (0, false,
 * "", null, an empty list; requeue cause "none", stop target "draft"; the first start
 * equal to the start) is left out, which a format 1 record never did. With 100,000
 * jobs held, most of them pending, a record is under half the size. Both formats load.
 */
#define FORMAT_VERSION 1
#define JOB_FORMAT_VERSION 2

static const char *const requeue_names[] = {
	[SCHED_REQUEUE_NONE] = "none",
	[SCHED_REQUEUE_FAULT] = "fault",
	[SCHED_REQUEUE_PREEMPTED] = "preempted",
	[SCHED_REQUEUE_REQUESTED] = "requested",
};

/* enum sched_job_hold, as a record says it ("hold", absent: none) */
static const char *const hold_names[] = {
	[SCHED_HOLD_NONE] = "none",
	[SCHED_HOLD_USER] = "user",
	[SCHED_HOLD_ADMIN] = "admin",
};

static const char *const server_state_names[] = {
	[SCHED_SERVER_UNKNOWN] = "unknown",
	[SCHED_SERVER_READY] = "ready",
	[SCHED_SERVER_UNREACHABLE] = "unreachable",
};

static int name_index(const char *const *names, size_t count, const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < count; i++)
		if (names[i] && strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

static int state_from_name(const char *name)
{
	for (int s = 0; s < SCHED_JOB_STATE_COUNT; s++)
		if (name && strcmp(sched_job_state_name((enum sched_job_state)s), name) == 0)
			return s;
	return -1;
}

static int health_from_name(const char *name)
{
	for (int h = SCHED_HEALTH_OK; h <= SCHED_HEALTH_UNKNOWN; h++)
		if (name && strcmp(sched_health_name((enum sched_health)h), name) == 0)
			return h;
	return -1;
}

static int isolation_from_name(const char *name)
{
	for (int i = SCHED_ISOLATION_NONE; i <= SCHED_ISOLATION_MANUAL; i++)
		if (name && strcmp(sched_isolation_name((enum sched_isolation)i), name) == 0)
			return i;
	return -1;
}

/*
 * jansson 2.14 does not always tell an allocation failure from a bad document, nor
 * fail a build it could not complete: its lexer drops a character it could not append
 * and parses on ("node-0" read as "node-"), json_pack() can lose a key, and some
 * failures come back as syntax errors. So its allocations go through these, which note
 * a failure of the calling thread's (the restore decodes on several); a document parsed
 * or built while one failed is out of memory, whatever jansson returned. Installed once,
 * by the first document: jansson's allocators are the process's, and these call malloc
 * and free as jansson's own do, so blocks allocated before are freed alike.
 */
static _Thread_local bool json_alloc_failed;
static pthread_once_t json_alloc_once = PTHREAD_ONCE_INIT;

static void *json_alloc(size_t size)
{
	void *p = malloc(size);

	if (!p)
		json_alloc_failed = true;
	return p;
}

static void json_alloc_install(void)
{
	json_set_alloc_funcs(json_alloc, free);
}

/* From here, a failed allocation of this thread's is noted (json_alloc_failed). */
static void json_watch_begin(void)
{
	pthread_once(&json_alloc_once, json_alloc_install);
	json_alloc_failed = false;
}

/* ---- building documents: every setter latches an allocation failure ---- */

struct doc {
	json_t *o;
	bool failed;
};

/* A document to build (its object, or the failure latched). */
static struct doc doc_new(void)
{
	json_watch_begin();
	return (struct doc){ .o = json_object() };
}

static void put(struct doc *d, const char *key, json_t *v)
{
	if (!v || json_object_set_new(d->o, key, v) < 0)
		d->failed = true;
}

static void put_u64(struct doc *d, const char *key, uint64_t v)
{
	/* every saved counter and time fits a JSON integer (int64): times are usec since
	 * 1970, counters count events */
	put(d, key, json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v)));
}

static void put_str(struct doc *d, const char *key, const char *s)
{
	put(d, key, s ? json_string(s) : json_null());
}

/* The same, left out when at the default the loader puts back (0, false, "", NULL). */
static void put_u64_opt(struct doc *d, const char *key, uint64_t v)
{
	if (v)
		put_u64(d, key, v);
}

static void put_bool_opt(struct doc *d, const char *key, bool v)
{
	if (v)
		put(d, key, json_true());
}

static void put_str_opt(struct doc *d, const char *key, const char *s)
{
	if (s && s[0])
		put_str(d, key, s);
}

/* An array, left out when empty (then freed here). */
static void put_array_opt(struct doc *d, const char *key, json_t *arr)
{
	if (arr && json_array_size(arr) == 0)
		json_decref(arr);
	else
		put(d, key, arr);
}

static int doc_finish(struct doc *d, char **ret, size_t *ret_len)
{
	char *text;

	if (d->failed || !d->o) {
		json_decref(d->o);
		return -ENOMEM;
	}
	text = json_dumps(d->o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(d->o);
	if (text && json_alloc_failed) {
		free(text);
		text = NULL;
	}
	if (!text)
		return -ENOMEM;
	*ret = text;
	*ret_len = strlen(text);
	return 0;
}

/* ---- reading documents ---- */

static bool get_u64(const json_t *o, const char *key, uint64_t *ret)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*ret = (uint64_t)json_integer_value(v);
	return true;
}

static bool get_uint(const json_t *o, const char *key, unsigned *ret)
{
	uint64_t v;

	if (!get_u64(o, key, &v) || v > UINT32_MAX)
		return false;
	*ret = (unsigned)v;
	return true;
}

static bool get_bool(const json_t *o, const char *key, bool *ret)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_boolean(v))
		return false;
	*ret = json_is_true(v);
	return true;
}

/* A string member that fits @size bytes with its NUL ("" when @null_ok and null). */
static bool get_str(const json_t *o, const char *key, char *buf, size_t size)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_string(v) || json_string_length(v) >= size ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return false;
	memcpy(buf, json_string_value(v), json_string_length(v) + 1);
	return true;
}

/*
 * The same for a member that a format 2 job record leaves out at its default: absent is
 * the default (0, false, ""); present, it must be well formed.
 */
static bool opt_u64(const json_t *o, const char *key, uint64_t *ret)
{
	*ret = 0;
	return !json_object_get(o, key) || get_u64(o, key, ret);
}

static bool opt_uint(const json_t *o, const char *key, unsigned *ret)
{
	*ret = 0;
	return !json_object_get(o, key) || get_uint(o, key, ret);
}

static bool opt_bool(const json_t *o, const char *key, bool *ret)
{
	*ret = false;
	return !json_object_get(o, key) || get_bool(o, key, ret);
}

static bool opt_str(const json_t *o, const char *key, const char *dflt, char *buf,
		    size_t size)
{
	if (json_object_get(o, key))
		return get_str(o, key, buf, size);
	snprintf(buf, size, "%s", dflt);
	return true;
}

/* A string member or null, duplicated into *ret (NULL for null or absent). */
static int get_dup(const json_t *o, const char *key, char **ret)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return -EINVAL;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

/*
 * The JSON value in @text into *@ret: 0, -EINVAL (not JSON; @reason names @what), or
 * -ENOMEM (not the document's fault, so never a reason to set a record aside).
 */
static int load_json(const char *text, size_t len, const char *what, char *reason, json_t **ret)
{
	json_error_t err;

	json_watch_begin();
	*ret = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (json_alloc_failed) {
		json_decref(*ret);
		*ret = NULL;
		return -ENOMEM;
	}
	if (*ret)
		return 0;
	sched_reason(reason, "%s: not JSON (%s at character %d)", what, err.text, err.position);
	return -EINVAL;
}

/* The object in @text, of a format from 1 to @newest, into *@ret: 0, -EINVAL
 * (@reason) or -ENOMEM. */
static int parse_doc(const char *text, size_t len, const char *what, int newest, char *reason,
		     json_t **ret)
{
	json_int_t format;
	json_t *o;
	int r = load_json(text, len, what, reason, &o);

	if (r < 0)
		return r;
	format = json_integer_value(json_object_get(o, "format"));
	if (!json_is_object(o) || format < 1 || format > newest) {
		sched_reason(reason, "%s: not a record of format %s%d (written by a newer "
				     "ascendfs?)", what, newest > 1 ? "1 to " : "", newest);
		json_decref(o);
		return -EINVAL;
	}
	*ret = o;
	return 0;
}

/* ---- jobs ---- */

/* One server's share of a placement: {server, first_rank, devices}; NULL without memory
 * (nothing leaked). */
static json_t *slice_json(const char *server, unsigned first_rank, const unsigned *device_ids,
			  unsigned npu_count)
{
	json_t *devs = json_array();

	for (unsigned k = 0; devs && k < npu_count; k++)
		if (json_array_append_new(devs, json_integer(device_ids[k])) < 0) {
			json_decref(devs);
			return NULL;
		}
	/* "o" steals devs, also when the pack fails */
	return devs ? json_pack("{s:s, s:I, s:o}", "server", server, "first_rank",
				(json_int_t)first_rank, "devices", devs) :
		      NULL;
}

static json_t *history_json(const struct sched_cluster *c, const struct sched_job *j,
			    struct doc *d);

int sched_job_save(const struct sched_cluster *c, const struct sched_job *j, char **ret,
		   size_t *ret_len)
{
	struct doc d = doc_new();
	json_t *slices = json_array(), *exits = json_array();

	/* always there: what names, orders and says the job */
	put(&d, "format", json_integer(JOB_FORMAT_VERSION));
	put_str(&d, "name", j->name);
	put_u64(&d, "serial", j->serial);
	put_str(&d, "state", sched_job_state_name(j->state));
	put_u64(&d, "queue_seq", j->queue_seq);
	put_u64(&d, "submit_usec", j->submit_usec);
	if (j->eligible_usec != j->submit_usec)
		put_u64(&d, "eligible_usec", j->eligible_usec);
	put_u64(&d, "change_usec", j->change_usec);
	put_str(&d, "reason", j->reason);
	put_u64(&d, "uid", j->uid); /* never by default: who owns the job */
	put_u64(&d, "gid", j->gid);
	put_str_opt(&d, "spec", j->spec_text);
	put_str_opt(&d, "service", j->service); /* an instance's service */
	/* an array's element: its array's record and its index */
	put_u64_opt(&d, "array_serial", j->array_serial);
	put_u64_opt(&d, "array_index", j->array_index);
	if (j->array) { /* an array's record: how each element stands */
		char text[CONF_ARRAY_INDEX_MAX + 2];

		put_str(&d, "array_elements", sched_array_save(j, text, sizeof(text)));
		put_str_opt(&d, "array_cancel", j->array->cancel_why);
	}
	put_u64_opt(&d, "ready_generation", j->ready_generation);
	put_u64_opt(&d, "ready_usec", j->ready_usec);
	/* an instance's restart back-off, and the restart it holds */
	put_u64_opt(&d, "backoff_usec", j->backoff_usec);
	put_u64_opt(&d, "backoff_from_usec", j->backoff_from_usec);
	if (j->restart_at_usec) {
		put_u64(&d, "restart_at_usec", j->restart_at_usec);
		put_str(&d, "restart_why", j->restart_why ? j->restart_why : "");
		if (j->restart_server >= 0 && (size_t)j->restart_server < c->server_count)
			put_str(&d, "restart_server", c->servers[j->restart_server].conf->name);
		put_u64(&d, "restart_process", (uint64_t)j->restart_process);
	}
	/* a disaggregated service's role runs (sched_service_roles.c): their generations,
	 * so that a restart leaves a running role alone */
	for (int k = 0; j->roles && k < SCHED_ROLE_COUNT; k++) {
		char key[48];

		snprintf(key, sizeof(key), "%s_generation", sched_role_name((enum sched_role)k));
		put_u64_opt(&d, key, j->roles[k].generation);
		snprintf(key, sizeof(key), "%s_restart_at_usec",
			 sched_role_name((enum sched_role)k));
		put_u64_opt(&d, key, j->roles[k].restart_at_usec);
	}
	/* the rest only when not at the default (opt_*() in the loader) */
	if (j->requeue_cause != SCHED_REQUEUE_NONE)
		put_str(&d, "requeue_cause", requeue_names[j->requeue_cause]);
	put_u64_opt(&d, "generation", j->generation);
	put_u64_opt(&d, "restarts", j->restarts);
	put_u64_opt(&d, "generation_usec", j->generation_usec);
	put_u64_opt(&d, "start_usec", j->start_usec);
	put_u64_opt(&d, "end_usec", j->end_usec);
	put_u64_opt(&d, "run_since_usec", j->run_since_usec);
	put_u64_opt(&d, "run_accum_usec", j->run_accum_usec);
	put_u64_opt(&d, "stop_deadline_usec", j->stop_deadline_usec);
	if (j->stop_to != SCHED_JOB_DRAFT)
		put_str(&d, "stop_to", sched_job_state_name(j->stop_to));
	put_bool_opt(&d, "stop_cancelled", j->stop_cancelled);
	put_bool_opt(&d, "stop_forget", j->stop_forget);
	put_bool_opt(&d, "stop_requeue", j->stop_requeue);
	if (j->hold_kind != SCHED_HOLD_NONE)
		put_str(&d, "hold", hold_names[j->hold_kind]);
	if (j->deps && j->spec) { /* `after:`: the records waited for, and which were met */
		json_t *deps = json_array();

		for (unsigned k = 0; deps && k < j->spec->after_count; k++) {
			json_t *e = json_object();

			json_object_set_new(e, "serial", json_integer((json_int_t)j->deps[k].serial));
			json_object_set_new(e, "met", json_boolean(j->deps[k].met));
			json_array_append_new(deps, e);
		}
		put_array_opt(&d, "after", deps);
	}
	put_str_opt(&d, "preempted_by", j->preempted_by);
	put_u64_opt(&d, "preempted_by_serial", j->preempted_by_serial);
	put_u64_opt(&d, "preemptions", j->preemptions);
	put_bool_opt(&d, "borrowing", j->borrowing);
	put_u64_opt(&d, "sched_port", j->sched_port);
	put_u64_opt(&d, "checkpoint_step", j->checkpoint_step);
	if (j->checkpoint_path)
		put_str(&d, "checkpoint_path", j->checkpoint_path);
	put_u64_opt(&d, "checkpoint_usec", j->checkpoint_usec);
	put_bool_opt(&d, "checkpoint_reported", j->checkpoint_reported);
	if (j->resume_path)
		put_str(&d, "resume_path", j->resume_path);
	put_bool_opt(&d, "resume_scan_pending", j->resume_scan_pending);
	put_u64_opt(&d, "resume_scan_since_usec", j->resume_scan_since_usec);
	put_u64_opt(&d, "restart_counted_usec", j->restart_counted_usec);
	put_u64_opt(&d, "restarts_coalesced", j->restarts_coalesced);
	put_u64_opt(&d, "exits_generation", j->exits_generation);
	for (size_t i = 0; exits && i < j->exited_count; i++)
		if (json_array_append_new(exits, json_boolean(j->exited_ok[i])) < 0)
			d.failed = true;
	put_array_opt(&d, "exited_ok", exits);
	/* exits with another status (absent: none), for the recovery ladder */
	{
		bool any = false;

		for (size_t i = 0; j->exited_bad && i < j->exited_count; i++)
			any |= j->exited_bad[i];
		if (any) {
			json_t *bad = json_array();

			for (size_t i = 0; bad && i < j->exited_count; i++)
				if (json_array_append_new(bad, json_boolean(j->exited_bad[i])) < 0)
					d.failed = true;
			put_array_opt(&d, "exited_bad", bad);
		}
	}
	for (size_t i = 0; slices && i < j->slice_count; i++) {
		const struct sched_slice *sl = &j->slices[i];
		json_t *so = slice_json(c->servers[sl->server].conf->name, sl->first_rank,
					sl->device_ids, sl->npu_count);

		/* in-place restarts of the share (absent: none) */
		if (so && sl->attempt &&
		    json_object_set_new(so, "attempt", json_integer(sl->attempt)) < 0)
			d.failed = true;
		/* kept by a process-level recovery (absent: started with the generation) */
		if (so && sl->kept_from &&
		    json_object_set_new(so, "kept_from", json_integer(sl->kept_from)) < 0)
			d.failed = true;
		if (json_array_append_new(slices, so) < 0)
			d.failed = true;
	}
	if (!slices)
		d.failed = true;
	put_array_opt(&d, "placement", slices);
	/* absent: the same as the start */
	if (j->first_start_usec != j->start_usec)
		put_u64(&d, "first_start_usec", j->first_start_usec);
	put_u64_opt(&d, "runs_dropped", j->runs_dropped);
	put_u64_opt(&d, "dropped_npu_usec", j->dropped_npu_usec);
	put_u64_opt(&d, "dropped_faults", j->dropped_faults);
	put_array_opt(&d, "history", history_json(c, j, &d));
	/* only a job that ever walked its recovery ladder has one to keep */
	if (j->ladder.request || j->ladder.active)
		put(&d, "ladder", sched_ladder_save(j));
	return doc_finish(&d, ret, ret_len);
}

/* History record @r as an object (NULL without memory; nothing leaked); with
 * @placement_omitted, without its placement (the loader takes the job's). */
static json_t *run_json(const struct sched_job_run *r, bool placement_omitted)
{
	json_t *sl = json_array(), *o;

	for (size_t k = 0; sl && !placement_omitted && k < r->slice_count; k++)
		if (json_array_append_new(sl, slice_json(r->slices[k].server, r->slices[k].first_rank,
							 r->slices[k].device_ids,
							 r->slices[k].npu_count)) < 0) {
			json_decref(sl);
			sl = NULL;
		}
	if (!sl)
		return NULL;
	/* "o" steals each value, also when the pack fails (then NULL: no memory) */
	o = json_pack("{s:I, s:i, s:I, s:I, s:s, s:o, s:o}", "run", (json_int_t)r->number,
		      "generation", (int)r->generation, "start_usec", (json_int_t)r->start_usec,
		      "end_usec", (json_int_t)r->end_usec, "end", sched_run_end_name(r->end),
		      "exit_code", r->has_exit ? json_integer(r->exit_code) : json_null(),
		      "reason", r->reason ? json_string(r->reason) : json_null());
	if (placement_omitted) {
		json_decref(sl);
		return o;
	}
	if (o && json_object_set_new(o, "placement", sl) < 0) {
		json_decref(o);
		return NULL;
	}
	if (!o)
		json_decref(sl);
	return o;
}

/* Does history record @r hold @j's current placement (server names, ranks, devices)? */
static bool run_is_current_placement(const struct sched_cluster *c, const struct sched_job *j,
				     const struct sched_job_run *r)
{
	if (r->end_usec || r->generation != j->generation || r->slice_count != j->slice_count)
		return false;
	for (size_t k = 0; k < j->slice_count; k++) {
		const struct sched_slice *sl = &j->slices[k];
		const struct sched_run_slice *rs = &r->slices[k];

		if (rs->first_rank != sl->first_rank || rs->npu_count != sl->npu_count ||
		    strcmp(rs->server, c->servers[sl->server].conf->name) != 0 ||
		    memcmp(rs->device_ids, sl->device_ids, sl->npu_count * sizeof(unsigned)) != 0)
			return false;
	}
	return true;
}

/*
 * The history records of @j the store does not hold apart, as an array (an allocation
 * failure latches in @d). The open generation's placement is the job's, which the
 * record holds already: it is left out (half the record of a running job).
 */
static json_t *history_json(const struct sched_cluster *c, const struct sched_job *j,
			    struct doc *d)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < j->run_count; i++) {
		json_t *o;

		if (j->runs[i].saved)
			continue;
		o = run_json(&j->runs[i], run_is_current_placement(c, j, &j->runs[i]));
		if (!o || json_array_append_new(arr, o) < 0)
			d->failed = true;
	}
	if (!arr)
		d->failed = true;
	return arr;
}

int sched_job_run_save(const struct sched_job *j, size_t index, char **ret, size_t *ret_len)
{
	struct doc d;

	if (index >= j->run_count || !j->runs[index].end_usec)
		return -EINVAL;
	json_watch_begin();
	d.o = run_json(&j->runs[index], false);
	d.failed = false;
	return doc_finish(&d, ret, ret_len);
}

/*
 * One history entry @o into @r (zeroed by the caller; freed by it on failure too).
 * Its number: "run", or @number when the entry has none (records older than it). An
 * open entry without "placement" ran on @job_placement (the job record's; NULL: none).
 */
static int load_run(const json_t *o, uint64_t number, const json_t *job_placement,
		    struct sched_job_run *r)
{
	const json_t *pl = json_object_get(o, "placement");
	const json_t *code = json_object_get(o, "exit_code");
	char end[32];
	int e, rr;

	if (!json_is_object(o) || (json_object_get(o, "run") && !get_u64(o, "run", &number)) ||
	    !get_uint(o, "generation", &r->generation) ||
	    !get_u64(o, "start_usec", &r->start_usec) ||
	    !get_u64(o, "end_usec", &r->end_usec) || !get_str(o, "end", end, sizeof(end)) ||
	    (e = sched_run_end_from_name(end)) < 0 ||
	    (!pl && (r->end_usec || !(pl = job_placement))) || !json_is_array(pl) ||
	    json_array_size(pl) > 4096 || (!json_is_null(code) && !json_is_integer(code)) ||
	    (code && json_is_integer(code) &&
	     (json_integer_value(code) < INT32_MIN || json_integer_value(code) > INT32_MAX)))
		return -EINVAL;
	r->number = number;
	r->end = (enum sched_run_end)e;
	r->has_exit = json_is_integer(code);
	r->exit_code = r->has_exit ? (int)json_integer_value(code) : 0;
	rr = get_dup(o, "reason", &r->reason);
	if (rr < 0)
		return rr;
	r->slice_count = json_array_size(pl);
	r->slices = calloc(r->slice_count ? r->slice_count : 1, sizeof(*r->slices));
	if (!r->slices)
		return -ENOMEM;
	for (size_t k = 0; k < r->slice_count; k++) {
		const json_t *so = json_array_get(pl, k), *devs = json_object_get(so, "devices");
		struct sched_run_slice *sl = &r->slices[k];

		if (!get_str(so, "server", sl->server, sizeof(sl->server)) ||
		    !get_uint(so, "first_rank", &sl->first_rank) || !json_is_array(devs) ||
		    json_array_size(devs) > CONF_SERVER_NPUS_MAX)
			return -EINVAL;
		sl->npu_count = (unsigned)json_array_size(devs);
		for (unsigned n = 0; n < sl->npu_count; n++) {
			const json_t *v = json_array_get(devs, n);

			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) >= CONF_SERVER_NPUS_MAX)
				return -EINVAL;
			sl->device_ids[n] = (unsigned)json_integer_value(v);
		}
	}
	return 0;
}

/*
 * Load the history entries the record of @j holds from @arr (absent in records written
 * before it existed: then the job has none). Servers are kept by name: a record may name
 * a server that is no longer in the inventory. Returns 0, -EINVAL (malformed) or -ENOMEM.
 */
static int load_history(struct sched_job *j, const json_t *arr, const json_t *placement)
{
	size_t n = json_array_size(arr);

	if (!arr)
		return 0;
	if (!json_is_array(arr) || n > SCHED_JOB_RUNS_MAX)
		return -EINVAL;
	if (!n)
		return 0;
	j->runs = calloc(n, sizeof(*j->runs));
	if (!j->runs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int r;

		j->run_count = i + 1;
		r = load_run(json_array_get(arr, i), i ? j->runs_dropped + i : 0, placement,
			     &j->runs[i]);
		if (r < 0)
			return r;
		if (i && j->runs[i].number <= j->runs[i - 1].number)
			return -EINVAL;
	}
	return 0;
}

int sched_job_run_load(struct sched_job *j, const char *text, size_t len, char *reason)
{
	struct sched_job_run r = { 0 }, *n;
	char what[CONF_NAME_MAX + 32];
	size_t at = 0;
	json_t *o;
	int rc;

	snprintf(what, sizeof(what), "a history record of job %s", j->name);
	rc = load_json(text, len, what, reason, &o);
	if (rc < 0)
		return rc;
	/* without "run" it could not be put in its place */
	rc = json_object_get(o, "run") ? load_run(o, 0, NULL, &r) : -EINVAL;
	json_decref(o);
	if (rc == -ENOMEM)
		goto out;
	while (at < j->run_count && j->runs[at].saved)
		at++;
	if (rc == 0 && !r.end_usec)
		rc = -EINVAL, sched_reason(reason, "history record %llu of job %s: not closed "
					   "(\"end_usec\": 0)", (unsigned long long)r.number, j->name);
	else if (rc == 0 && ((at && j->runs[at - 1].number >= r.number) ||
			     (at < j->run_count && j->runs[at].number <= r.number)))
		rc = -EINVAL, sched_reason(reason, "history record %llu of job %s: out of order "
					   "with the job's other records", (unsigned long long)r.number,
					   j->name);
	else if (rc < 0)
		sched_reason(reason, "a history record of job %s is malformed", j->name);
	if (rc < 0)
		goto out;
	n = realloc(j->runs, (j->run_count + 1) * sizeof(*n));
	if (!n) {
		rc = -ENOMEM;
		goto out;
	}
	j->runs = n;
	memmove(&j->runs[at + 1], &j->runs[at], (j->run_count - at) * sizeof(*n));
	r.saved = true;
	j->runs[at] = r;
	j->run_count++;
	/* more than a job keeps (a generation the load began besides them): the first and
	 * the newest stay, as sched_history.c keeps them */
	if (j->run_count > SCHED_JOB_RUNS_MAX) {
		sched_run_drop(j, &j->runs[1]);
		memmove(&j->runs[1], &j->runs[2], (j->run_count - 2) * sizeof(*n));
		j->run_count--;
		j->runs_dropped++;
	}
	return 0;
out:
	sched_job_run_release(&r);
	return rc;
}

/*
 * Would slice @sl be placed this way on its server as configured now (design.md §5): of
 * the job's server_type if it names one; several slices take whole servers; one slice
 * has a legal size, inside one ring (910) or of whole pairs (A3).
 */
static bool slice_is_legal(const struct sched_cluster *c, const struct sched_job *j,
			   const struct sched_slice *sl, size_t count, char *reason)
{
	const struct sched_server *s = &c->servers[sl->server];
	const struct conf_server_type *t = s->conf->type;
	unsigned n = sl->npu_count, g = t->hccs_group_size ? t->hccs_group_size : 1;

	if (j->spec && j->spec->server_type && strcmp(j->spec->server_type, t->name) != 0) {
		sched_reason(reason, "server %s of its placement is an %s now, not the %s it "
				     "asks for", s->conf->name, t->product, j->spec->server_type);
		return false;
	}
	if (count > 1 ? n != s->conf->npu_count :
			n >= 32 || !(t->legal_sizes_mask & (1u << n)))
		goto illegal;
	if (count == 1 && t->hccs == CONF_HCCS_RING && n <= g)
		for (unsigned k = 1; k < n; k++)
			if (sl->device_ids[k] / g != sl->device_ids[0] / g)
				goto illegal;
	if (count == 1 && t->hccs == CONF_HCCS_PAIR && n % 2 == 0)
		for (unsigned k = 0; k < n; k += 2)
			if (sl->device_ids[k] % 2 || sl->device_ids[k + 1] != sl->device_ids[k] + 1)
				goto illegal;
	return true;

illegal:
	sched_reason(reason, "server %s of its placement is an %s now, where %u NPU%s placed "
			     "so break the HCCS rules",
		     s->conf->name, t->product, n, n == 1 ? "" : "s");
	return false;
}

/*
 * The placement of a saved job, checked against the cluster as configured now: servers
 * by name, device ids in range, each NPU free, ranks 0..N-1 in order, the topology rules
 * of each server's type. -ESTALE with the reason when it no longer fits (the inventory
 * changed); -EINVAL when malformed.
 */
static int load_slices(const struct sched_cluster *c, const struct sched_job *j, const json_t *arr,
		       struct sched_slice **ret, size_t *ret_count, char *reason)
{
	size_t n = json_array_size(arr), i;
	struct sched_slice *sl;
	unsigned next_rank = 0;
	bool seen[CONF_SERVER_NPUS_MAX];

	if (arr && !json_is_array(arr))
		return -EINVAL;
	if (n == 0) { /* absent: none */
		*ret = NULL;
		*ret_count = 0;
		return 0;
	}
	sl = calloc(n, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const json_t *o = json_array_get(arr, i);
		const json_t *devs = json_object_get(o, "devices");
		char server[CONF_NAME_MAX + 1];
		int idx;

		if (!get_str(o, "server", server, sizeof(server)) ||
		    !get_uint(o, "first_rank", &sl[i].first_rank) || !json_is_array(devs) ||
		    json_array_size(devs) == 0 || json_array_size(devs) > CONF_SERVER_NPUS_MAX ||
		    sl[i].first_rank != next_rank ||
		    (json_object_get(o, "attempt") && !get_uint(o, "attempt", &sl[i].attempt)) ||
		    (json_object_get(o, "kept_from") &&
		     !get_uint(o, "kept_from", &sl[i].kept_from)))
			goto malformed;
		idx = sched_cluster_find_server(c, server);
		if (idx < 0) {
			sched_reason(reason, "server %s of its placement is no longer in the "
					     "inventory", server);
			goto stale;
		}
		for (size_t k = 0; k < i; k++)
			if (sl[k].server == (unsigned)idx)
				goto malformed;
		sl[i].server = (unsigned)idx;
		sl[i].npu_count = (unsigned)json_array_size(devs);
		memset(seen, 0, sizeof(seen));
		for (unsigned k = 0; k < sl[i].npu_count; k++) {
			const json_t *v = json_array_get(devs, k);
			json_int_t dev = json_integer_value(v);
			const struct sched_server *s = &c->servers[idx];

			if (!json_is_integer(v) || dev < 0 || dev >= CONF_SERVER_NPUS_MAX ||
			    seen[dev] || (k > 0 && (unsigned)dev <= sl[i].device_ids[k - 1]))
				goto malformed;
			seen[dev] = true;
			if ((unsigned)dev >= s->conf->npu_count) {
				sched_reason(reason, "server %s of its placement has no NPU %u "
						     "now", server, (unsigned)dev);
				goto stale;
			}
			if (s->npus[dev].job) {
				sched_reason(reason, "NPU %u of server %s in its placement is "
						     "held by job %s", (unsigned)dev, server,
					     s->npus[dev].job->name);
				goto stale;
			}
			sl[i].device_ids[k] = (unsigned)dev;
		}
		next_rank += sl[i].npu_count;
	}
	for (i = 0; i < n; i++)
		if (!slice_is_legal(c, j, &sl[i], n, reason))
			goto stale;
	*ret = sl;
	*ret_count = n;
	return 0;

malformed:
	free(sl);
	return -EINVAL;
stale:
	free(sl);
	return -ESTALE;
}

/* Fields a job takes from its spec and the cluster (as sched_job_submit sets them). */
static int job_derive(struct sched_cluster *c, struct sched_job *j, char *reason)
{
	struct conf_job_spec *spec = j->spec;
	const struct conf_queue *q;

	q = conf_cluster_find_queue(c->conf, spec->queue);
	if (!q) {
		sched_reason(reason, "its queue %s is no longer configured", spec->queue);
		return -ESTALE;
	}
	if (spec->server_type && !sched_job_type(c, j)) {
		sched_reason(reason, "its server_type %s is no longer in the inventory",
			     spec->server_type);
		return -ESTALE;
	}
	if (spec->npus_min != spec->npus_max) {
		unsigned lo = sched_elastic_min(c, spec, sched_job_type(c, j));

		if (lo == 0) {
			sched_reason(reason, "no size between %u and %u NPUs fits the cluster "
					     "as configured now", spec->npus_min, spec->npus_max);
			return -ESTALE;
		}
		spec->npus_min = lo;
		spec->npus = lo;
	} else if (sched_check_feasible(c, spec->npus, sched_job_type(c, j), reason) < 0) {
		return -ESTALE;
	}
	j->queue_index = (size_t)(q - c->conf->queues);
	j->prio = spec->priority;
	j->need_min = spec->npus_min;
	j->need_max = spec->npus_max;
	j->type_mask = sched_type_mask(c, spec->npus_min, sched_job_type(c, j));
	if (spec->time_limit_sec) {
		uint64_t limit = spec->time_limit_sec * 1000000u;

		j->limit_left_usec = j->run_accum_usec < limit ? limit - j->run_accum_usec : 0;
	} else {
		j->limit_left_usec = UINT64_MAX;
	}
	return 0;
}

void sched_restore_shift(struct sched_cluster *c, int64_t shift_usec)
{
	c->restore_shift_usec = shift_usec;
}

/* Saved time @t (0: none) on this daemon's clock (sched_restore_shift()). */
static uint64_t shifted(const struct sched_cluster *c, uint64_t t)
{
	int64_t d = c->restore_shift_usec;

	if (t == 0 || d == 0)
		return t;
	if (d > 0)
		return t > UINT64_MAX - (uint64_t)d ? UINT64_MAX : t + (uint64_t)d;
	/* -(d + 1) + 1: no overflow at INT64_MIN */
	return t > (uint64_t)(-(d + 1)) + 1 ? t - ((uint64_t)(-(d + 1)) + 1) : 1;
}

/* What sched_job_decode() makes of a record: the document, and its spec parsed. */
struct sched_job_decoded {
	json_t *o;
	char *spec_text;	    /* "spec"; NULL when null or absent */
	struct conf_job_spec *spec; /* spec_text parsed; NULL if none or it did not parse */
	char *spec_error;	    /* why spec_text did not parse (a sentence) */
	bool spec_malformed;	    /* "spec" is neither a string nor null */
};

void sched_job_decoded_free(struct sched_job_decoded *d)
{
	if (!d)
		return;
	json_decref(d->o);
	free(d->spec_text);
	conf_job_spec_free(d->spec);
	free(d->spec_error);
	free(d);
}

int sched_job_decode(const char *text, size_t len, struct sched_job_decoded **ret, char *reason)
{
	struct sched_job_decoded *d = calloc(1, sizeof(*d));
	char name[CONF_NAME_MAX + 1], file[CONF_NAME_MAX + 16];
	struct conf_error err;
	int r;

	*ret = NULL;
	if (!d)
		return -ENOMEM;
	r = parse_doc(text, len, "job record", JOB_FORMAT_VERSION, reason, &d->o);
	if (r < 0) {
		free(d);
		return r;
	}
	r = get_dup(d->o, "spec", &d->spec_text);
	if (r == -ENOMEM)
		goto nomem;
	d->spec_malformed = r < 0;
	/* a record without a valid name is refused by the load, spec or not */
	if (d->spec_text && get_str(d->o, "name", name, sizeof(name)) &&
	    conf_job_name_is_valid(name)) {
		snprintf(file, sizeof(file), "%s.yaml", name);
		r = conf_job_spec_parse(d->spec_text, strlen(d->spec_text), file, name, &d->spec,
					&err);
		if (r == -ENOMEM)
			goto nomem;
		if (r < 0) {
			char msg[SCHED_REASON_MAX - 64];

			d->spec_error = strdup(conf_error_format(&err, msg, sizeof(msg)));
			if (!d->spec_error)
				goto nomem;
		}
	}
	*ret = d;
	return 0;

nomem:
	sched_job_decoded_free(d);
	return -ENOMEM;
}

/*
 * A format 1 record wrote every field it knew, so one without them is malformed (fields
 * added while format 1 was written, resume scans, restart windows, stop ends and the
 * history, may be absent: records older than them have none).
 */
static bool format1_has_its_fields(const json_t *o)
{
	static const char *const fields[] = {
		"requeue_cause",      "reason",		   "spec",	      "generation",
		"restarts",	      "generation_usec",   "start_usec",      "end_usec",
		"run_since_usec",     "run_accum_usec",	   "stop_deadline_usec", "stop_to",
		"preempted_by",	      "preempted_by_serial", "preemptions",     "borrowing",
		"sched_port",	      "checkpoint_step",   "checkpoint_path", "checkpoint_usec",
		"checkpoint_reported", "resume_path",	   "exits_generation", "exited_ok",
		"placement",
	};

	if (json_integer_value(json_object_get(o, "format")) != 1)
		return true;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!json_object_get(o, fields[i]))
			return false;
	return true;
}

static int load_job_fields(struct sched_cluster *c, struct sched_job_decoded *d,
			   struct sched_job *j, int *ret_state, char *reason)
{
	const json_t *o = d->o;
	char state[32], stop_to[32], requeue[32], hold[16], why[SCHED_REASON_MAX];
	char preemptor[CONF_NAME_MAX + 1], held_server[CONF_NAME_MAX + 1];
	unsigned role_generations[SCHED_ROLE_COUNT] = { 0 };
	uint64_t role_restart_at[SCHED_ROLE_COUNT] = { 0 };
	uint64_t held_process;
	const json_t *exits = json_object_get(o, "exited_ok");
	uint64_t uid, gid, first_start;
	int s, r;

	/* what every record has; the rest is absent at its default (format 2), and fields
	 * added since format 1 began (resume scans, restart windows, stop ends, the
	 * history) are absent in the records written before them, at the same default */
	if (!format1_has_its_fields(o) || !get_str(o, "name", j->name, sizeof(j->name)) ||
	    !conf_job_name_is_valid(j->name) || !get_u64(o, "serial", &j->serial) ||
	    !get_str(o, "state", state, sizeof(state)) ||
	    !get_u64(o, "queue_seq", &j->queue_seq) ||
	    !get_u64(o, "submit_usec", &j->submit_usec) ||
	    !opt_u64(o, "eligible_usec", &j->eligible_usec) ||
	    !get_u64(o, "change_usec", &j->change_usec) || !get_u64(o, "uid", &uid) ||
	    !get_u64(o, "gid", &gid) || uid > UINT32_MAX || gid > UINT32_MAX ||
	    !opt_str(o, "reason", "", why, sizeof(why)) ||
	    !opt_str(o, "requeue_cause", requeue_names[SCHED_REQUEUE_NONE], requeue,
		     sizeof(requeue)) ||
	    !opt_uint(o, "generation", &j->generation) || !opt_uint(o, "restarts", &j->restarts) ||
	    !opt_u64(o, "generation_usec", &j->generation_usec) ||
	    !opt_u64(o, "start_usec", &j->start_usec) || !opt_u64(o, "end_usec", &j->end_usec) ||
	    !opt_u64(o, "run_since_usec", &j->run_since_usec) ||
	    !opt_u64(o, "run_accum_usec", &j->run_accum_usec) ||
	    !opt_u64(o, "stop_deadline_usec", &j->stop_deadline_usec) ||
	    !opt_str(o, "stop_to", sched_job_state_name(SCHED_JOB_DRAFT), stop_to,
		     sizeof(stop_to)) ||
	    !opt_bool(o, "stop_cancelled", &j->stop_cancelled) ||
	    !opt_bool(o, "stop_forget", &j->stop_forget) ||
	    !opt_bool(o, "stop_requeue", &j->stop_requeue) ||
	    !opt_str(o, "hold", hold_names[SCHED_HOLD_NONE], hold, sizeof(hold)) ||
	    !opt_str(o, "preempted_by", "", preemptor, sizeof(preemptor)) ||
	    !opt_u64(o, "preempted_by_serial", &j->preempted_by_serial) ||
	    !opt_uint(o, "preemptions", &j->preemptions) ||
	    !opt_bool(o, "borrowing", &j->borrowing) ||
	    !opt_uint(o, "sched_port", &j->sched_port) ||
	    !opt_u64(o, "checkpoint_step", &j->checkpoint_step) ||
	    !opt_u64(o, "checkpoint_usec", &j->checkpoint_usec) ||
	    !opt_bool(o, "checkpoint_reported", &j->checkpoint_reported) ||
	    !opt_bool(o, "resume_scan_pending", &j->resume_scan_pending) ||
	    !opt_u64(o, "resume_scan_since_usec", &j->resume_scan_since_usec) ||
	    !opt_u64(o, "restart_counted_usec", &j->restart_counted_usec) ||
	    !opt_uint(o, "restarts_coalesced", &j->restarts_coalesced) ||
	    !opt_uint(o, "exits_generation", &j->exits_generation) ||
	    (exits && !json_is_array(exits)) || !opt_u64(o, "first_start_usec", &first_start) ||
	    !opt_uint(o, "runs_dropped", &j->runs_dropped) ||
	    !opt_u64(o, "dropped_npu_usec", &j->dropped_npu_usec) ||
	    !opt_uint(o, "dropped_faults", &j->dropped_faults) ||
	    !opt_str(o, "service", "", j->service, sizeof(j->service)) ||
	    !opt_u64(o, "array_serial", &j->array_serial) ||
	    !opt_uint(o, "array_index", &j->array_index) ||
	    j->array_index > CONF_ARRAY_INDEX_MAX ||
	    !opt_uint(o, "ready_generation", &j->ready_generation) ||
	    !opt_u64(o, "ready_usec", &j->ready_usec) ||
	    !opt_u64(o, "backoff_usec", &j->backoff_usec) ||
	    !opt_u64(o, "backoff_from_usec", &j->backoff_from_usec) ||
	    !opt_u64(o, "restart_at_usec", &j->restart_at_usec) ||
	    !opt_str(o, "restart_server", "", held_server, sizeof(held_server)) ||
	    !opt_u64(o, "restart_process", &held_process) || held_process > INT32_MAX ||
	    !opt_uint(o, "controller_generation", &role_generations[SCHED_ROLE_CONTROLLER]) ||
	    !opt_uint(o, "coordinator_generation", &role_generations[SCHED_ROLE_COORDINATOR]) ||
	    !opt_u64(o, "controller_restart_at_usec", &role_restart_at[SCHED_ROLE_CONTROLLER]) ||
	    !opt_u64(o, "coordinator_restart_at_usec",
		     &role_restart_at[SCHED_ROLE_COORDINATOR]) ||
	    (j->service[0] && !conf_job_name_is_valid(j->service)))
		goto malformed;
	/* absent: its submission (and so in the records older than priority aging) */
	if (!j->eligible_usec)
		j->eligible_usec = j->submit_usec;
	/* absent: the same as the start (and so in the records older than the history) */
	j->first_start_usec = json_object_get(o, "first_start_usec") ? first_start : j->start_usec;
	/* the times intervals are measured from, on this daemon's clock */
	/* a run's start too: preempt_exempt_time is measured from it (an ended job's start
	 * stays as it was, beside its end) */
	if (j->run_since_usec)
		j->start_usec = shifted(c, j->start_usec);
	j->run_since_usec = shifted(c, j->run_since_usec);
	j->backoff_from_usec = shifted(c, j->backoff_from_usec);
	j->restart_at_usec = shifted(c, j->restart_at_usec);
	for (int k = 0; k < SCHED_ROLE_COUNT; k++)
		role_restart_at[k] = shifted(c, role_restart_at[k]);
	/* a server gone from the inventory: the restart names none */
	j->restart_server = sched_cluster_find_server(c, held_server);
	j->restart_process = (long)held_process;
	j->stop_deadline_usec = shifted(c, j->stop_deadline_usec);
	j->generation_usec = shifted(c, j->generation_usec);
	j->resume_scan_since_usec = shifted(c, j->resume_scan_since_usec);
	j->restart_counted_usec = shifted(c, j->restart_counted_usec);
	j->uid = (uid_t)uid;
	j->gid = (gid_t)gid;
	sched_job_set_reason(c, j, why);
	sched_text_set(c, &j->preempted_by, preemptor, sizeof(preemptor));
	s = state_from_name(state);
	r = state_from_name(stop_to);
	if (s < 0 || r < 0 || name_index(requeue_names, 4, requeue) < 0 ||
	    name_index(hold_names, 3, hold) < 0)
		goto malformed;
	*ret_state = s;
	/* a pending job's age (priority_weight_age) is measured on this daemon's clock too */
	if (s == SCHED_JOB_PENDING)
		j->eligible_usec = shifted(c, j->eligible_usec);
	j->stop_to = (enum sched_job_state)r;
	j->requeue_cause = (enum sched_requeue_cause)name_index(requeue_names, 4, requeue);
	/* a hold binds a job that is pending, or will be once its stop ends */
	if (s == SCHED_JOB_PENDING || (s == SCHED_JOB_STOPPING && r == SCHED_JOB_PENDING))
		j->hold_kind = (unsigned char)name_index(hold_names, 3, hold);
	r = get_dup(o, "checkpoint_path", &j->checkpoint_path);
	if (r == 0)
		r = get_dup(o, "resume_path", &j->resume_path);
	if (r == 0 && j->restart_at_usec)
		r = get_dup(o, "restart_why", &j->restart_why);
	if (r == 0 && s == SCHED_JOB_SERVING)
		r = sched_service_roles_restore(j, role_generations, role_restart_at);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || d->spec_malformed)
		goto malformed;
	j->spec_text = d->spec_text;
	d->spec_text = NULL;
	r = load_history(j, json_object_get(o, "history"), json_object_get(o, "placement"));
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		goto malformed;
	if (json_array_size(exits) > 0) {
		j->exited_ok = calloc(json_array_size(exits), sizeof(*j->exited_ok));
		if (!j->exited_ok)
			return -ENOMEM;
		j->exited_count = json_array_size(exits);
		for (size_t i = 0; i < j->exited_count; i++) {
			if (!json_is_boolean(json_array_get(exits, i)))
				goto malformed;
			j->exited_ok[i] = json_is_true(json_array_get(exits, i));
		}
	}
	if (json_object_get(o, "exited_bad")) {
		const json_t *bad = json_object_get(o, "exited_bad");

		if (!json_is_array(bad) || json_array_size(bad) != j->exited_count)
			goto malformed;
		j->exited_bad = calloc(j->exited_count ? j->exited_count : 1,
				       sizeof(*j->exited_bad));
		if (!j->exited_bad)
			return -ENOMEM;
		for (size_t i = 0; i < j->exited_count; i++) {
			if (!json_is_boolean(json_array_get(bad, i)))
				goto malformed;
			j->exited_bad[i] = json_is_true(json_array_get(bad, i));
		}
	}
	/* a draft has no spec; a job that was accepted has one (a rejected or cancelled
	 * draft may have none) */
	if (s == SCHED_JOB_DRAFT ? j->spec_text != NULL
				 : !j->spec_text && s != SCHED_JOB_REJECTED &&
					   s != SCHED_JOB_CANCELLED)
		goto malformed;
	if (j->spec_text) {
		j->spec_len = strlen(j->spec_text);
		if (!d->spec) {
			sched_reason(reason, "job %s: its saved spec no longer parses: %s", j->name,
				     d->spec_error ? d->spec_error : "(no reason)");
			return -EINVAL;
		}
		j->spec = d->spec;
		d->spec = NULL;
	}
	/* here, not in job_derive(): a record it cannot run again is still an array's */
	j->array_record = sched_job_is_array(j);
	/* an array's record: its elements' states (none saved: none made yet) */
	if (sched_job_is_array(j) && s != SCHED_JOB_DRAFT) {
		const json_t *els = json_object_get(o, "array_elements");

		if (els && !json_is_string(els))
			goto malformed;
		r = sched_array_restore(j, els ? json_string_value(els) : NULL);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || !opt_str(o, "array_cancel", "", j->array->cancel_why,
				      sizeof(j->array->cancel_why)))
			goto malformed;
	}
	if (json_object_get(o, "after")) {
		const json_t *deps = json_object_get(o, "after");
		uint64_t serials[CONF_JOB_AFTER_MAX];
		bool met[CONF_JOB_AFTER_MAX];
		size_t n = json_array_size(deps);

		if (!json_is_array(deps) || n > CONF_JOB_AFTER_MAX)
			goto malformed;
		for (size_t k = 0; k < n; k++)
			if (!get_u64(json_array_get(deps, k), "serial", &serials[k]) ||
			    !get_bool(json_array_get(deps, k), "met", &met[k]))
				goto malformed;
		r = sched_deps_restore(j, (enum sched_job_state)s, serials, met, (unsigned)n);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			goto malformed;
	}
	return 0;

malformed:
	sched_reason(reason, "job record %s is malformed", j->name[0] ? j->name : "(unnamed)");
	return -EINVAL;
}

static void clamp_to(uint64_t *t, uint64_t latest)
{
	if (*t > latest)
		*t = latest;
}

/*
 * Whatever the saved clock said (a store written before the clock mark, a step the mark
 * could not see): no run began after @now_usec, and no stop lasts longer from the
 * restore than a stop takes (@stop_usec).
 */
static void not_after_now(struct sched_job *j, int state, uint64_t now_usec, uint64_t stop_usec)
{
	clamp_to(&j->run_since_usec, now_usec);
	clamp_to(&j->generation_usec, now_usec);
	if (j->run_since_usec)
		clamp_to(&j->start_usec, now_usec);
	if (state == SCHED_JOB_PENDING)
		clamp_to(&j->eligible_usec, now_usec);
	clamp_to(&j->resume_scan_since_usec, now_usec);
	clamp_to(&j->restart_counted_usec, now_usec);
	clamp_to(&j->stop_deadline_usec, now_usec + stop_usec);
}

int sched_job_load(struct sched_cluster *c, const char *text, size_t len, uint64_t now_usec,
		   char *reason)
{
	struct sched_job_decoded *d;
	int r = sched_job_decode(text, len, &d, reason);

	return r < 0 ? r : sched_job_load_decoded(c, d, now_usec, reason);
}

int sched_job_load_decoded(struct sched_cluster *c, struct sched_job_decoded *d,
			   uint64_t now_usec, char *reason)
{
	json_t *o = d->o;
	struct sched_slice *slices = NULL;
	size_t slice_count = 0;
	struct sched_job *j;
	char moved[SCHED_REASON_MAX] = "", unfit[SCHED_REASON_MAX] = "";
	bool stale = false, unrunnable = false;
	int state, r;

	/* what ends while the records load is settled once all are in
	 * (sched_restore_finish()) */
	c->deps_loading = true;

	j = sched_job_alloc();
	if (!j) {
		sched_job_decoded_free(d);
		return -ENOMEM;
	}
	j->reason = j->preempted_by = j->stop_server = "";
	r = load_job_fields(c, d, j, &state, reason);
	if (r < 0)
		goto fail;
	not_after_now(j, state, now_usec, sched_stop_overhead_usec(c));
	if (sched_cluster_find_job(c, j->name)) {
		sched_reason(reason, "job record %s: a second record of that name", j->name);
		r = -EINVAL;
		goto fail;
	}
	if (c->job_count == c->job_cap) {
		size_t cap = c->job_cap ? c->job_cap * 2 : 64;
		struct sched_job **n = realloc(c->jobs, cap * sizeof(*n));

		if (!n) {
			r = -ENOMEM;
			goto fail;
		}
		c->jobs = n;
		c->job_cap = cap;
	}
	r = load_slices(c, j, json_object_get(o, "placement"), &slices, &slice_count, moved);
	if (r == -EINVAL)
		sched_reason(reason, "job record %s: malformed placement", j->name);
	if (r == -EINVAL || r == -ENOMEM)
		goto fail;
	stale = r == -ESTALE;
	if (j->spec && job_derive(c, j, unfit) < 0)
		unrunnable = true;
	r = j->spec ? sched_ladder_load(c, j, json_object_get(o, "ladder")) : 0;
	if (r == -EINVAL)
		sched_reason(reason, "job record %s: malformed recovery ladder", j->name);
	if (r < 0)
		goto fail;
	sched_job_decoded_free(d);

	j->state = (enum sched_job_state)state;
	j->version = 1;
	if (j->serial > c->next_job_serial)
		c->next_job_serial = j->serial;
	if (j->queue_seq >= c->next_queue_seq)
		c->next_queue_seq = j->queue_seq + 1;
	/* an array keeps the numbers after its own for its elements (sched_job.c) */
	if (sched_job_is_array(j) && j->queue_seq + CONF_ARRAY_INDEX_MAX + 2 > c->next_queue_seq)
		c->next_queue_seq = j->queue_seq + CONF_ARRAY_INDEX_MAX + 2;
	sched_jobs_append(c, j);

	/* an instance ended or made while the daemon was down: its service looks again */
	if (j->service[0])
		c->services_dirty = true;
	if (sched_job_state_is_terminal(j->state) || j->state == SCHED_JOB_DRAFT || !j->spec) {
		free(slices); /* a finished job or a draft holds nothing */
		return 0;
	}
	/* a service holds nothing itself: its instances are records of their own */
	if (j->state == SCHED_JOB_SERVING && !unrunnable) {
		free(slices);
		c->services_dirty = true;
		return 0;
	}
	/* nor does an array: its elements are (sched_array_restored() counts them) */
	if (j->state == SCHED_JOB_ARRAY && !unrunnable) {
		free(slices);
		c->arrays_dirty = true;
		return 0;
	}
	/* the configuration changed under an active job: one that can never run now fails,
	 * one whose NPUs are gone waits again (and resumes from its checkpoint); both say
	 * why in an event */
	if (unrunnable) {
		free(slices);
		sched_job_transition(c, j, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec, unfit);
		return 0;
	}
	/* a job stopping to an end (cancel, complete, failure) whose placement is gone with
	 * the configuration (or was not saved) ends there: it must not run again */
	if ((stale || slice_count == 0) && j->state == SCHED_JOB_STOPPING &&
	    (j->stop_cancelled || sched_job_state_is_terminal(j->stop_to))) {
		enum sched_job_state to = j->stop_cancelled ? SCHED_JOB_CANCELLED : j->stop_to;
		char why[SCHED_REASON_MAX];

		free(slices);
		sched_reason(why, "%.200s; its placement could not be restored: %.200s",
			     j->stop_cancelled ? "cancelled while stopping" : j->reason,
			     stale ? moved : "not saved");
		sched_job_transition(c, j, to, to == SCHED_JOB_COMPLETED ? SCHED_EV_COMPLETED :
				     to == SCHED_JOB_FAILED ? SCHED_EV_FAILED : SCHED_EV_CANCELLED,
				     now_usec, why);
		return 0;
	}
	if (stale && j->state != SCHED_JOB_PENDING) {
		char why[SCHED_REASON_MAX];

		free(slices);
		if (j->state == SCHED_JOB_STOPPING && j->stop_to == SCHED_JOB_TIMEOUT &&
		    !j->stop_cancelled) {
			sched_job_transition(c, j, SCHED_JOB_TIMEOUT, SCHED_EV_TIMEOUT, now_usec,
					     j->reason);
			return 0;
		}
		/* stopping to fail (a rank table that never completed): it fails */
		if (j->state == SCHED_JOB_STOPPING && j->stop_to == SCHED_JOB_FAILED) {
			sched_job_transition(c, j, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec,
					     j->reason);
			return 0;
		}
		sched_reason(why, "its placement could not be restored: %s", moved);
		j->requeue_cause = SCHED_REQUEUE_FAULT;
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_REQUEUED, now_usec, why);
		return 0;
	}
	if (slice_count == 0 && j->state != SCHED_JOB_PENDING) {
		j->requeue_cause = SCHED_REQUEUE_FAULT;
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_REQUEUED, now_usec,
				     "its placement was not saved; it waits to be placed again");
		return 0;
	}
	if (slice_count > 0 && j->state != SCHED_JOB_PENDING) {
		sched_alloc_apply(c, j, slices, slice_count);
		sched_history_restored(c, j, now_usec);
	} else
		free(slices);
	/* a step of the recovery ladder waits again, for what is left of its time */
	if (j->state == SCHED_JOB_RECOVERING) {
		uint64_t timeout = (uint64_t)c->conf->recovery_timeout_sec * 1000000u;

		j->ladder.began_usec = shifted(c, j->ladder.began_usec);
		j->ladder.deadline_usec = shifted(c, j->ladder.deadline_usec);
		clamp_to(&j->ladder.began_usec, now_usec);
		clamp_to(&j->ladder.deadline_usec, now_usec + timeout);
	}
	sched_ladder_restored(c, j, now_usec);
	/* a generation saved while it waited for its checkpoint scan waits again */
	if (j->resume_scan_pending && j->state == SCHED_JOB_RUNNING)
		c->resume_scan_wanted = true;
	else
		sched_job_set_resume_scan_pending(c, j, false);
	return 0;

fail:
	sched_job_decoded_free(d);
	free(slices);
	j->slice_count = 0;
	sched_job_free(j);
	return r;
}

/* ---- servers ---- */

int sched_server_save(const struct sched_cluster *c, unsigned server, char **ret,
		      size_t *ret_len)
{
	const struct sched_server *s = &c->servers[server];
	struct doc d = doc_new();
	json_t *npus = json_array();

	put(&d, "format", json_integer(FORMAT_VERSION));
	put_str(&d, "name", s->conf->name);
	put_str(&d, "state", server_state_names[s->state]);
	put(&d, "cordoned", json_boolean(s->cordoned));
	put(&d, "draining", json_boolean(s->draining));
	put_str(&d, "node_health", sched_health_name(s->node_health));
	put(&d, "ips_confirmed", json_boolean(s->ips_confirmed));
	put_str(&d, "agent", s->agent);
	for (unsigned i = 0; npus && i < s->conf->npu_count; i++) {
		const struct sched_npu *n = &s->npus[i];
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:s, s:s}", "health",
				      sched_health_name(n->health), "isolation",
				      sched_isolation_name(n->isolation), "last_fault_usec",
				      (json_int_t)n->last_fault_usec, "ok_since_usec",
				      (json_int_t)n->ok_since_usec, "window_start_usec",
				      (json_int_t)n->window_start_usec, "window_faults",
				      (int)n->window_faults, "fault", n->fault, "reported_ip",
				      n->reported_ip);

		/* the super-pod identity the agent reported (A3), null when none */
		if (o && json_object_set_new(o, "sdid",
					     n->has_sdid ?
						     json_pack("{s:I, s:I, s:I}", "sdid",
							       (json_int_t)n->sdid, "super_pod_id",
							       (json_int_t)n->super_pod_id,
							       "server_index",
							       (json_int_t)n->server_index) :
						     json_null()) < 0)
			d.failed = true;
		if (!o || json_array_append_new(npus, o) < 0)
			d.failed = true;
	}
	put(&d, "npus", npus);
	return doc_finish(&d, ret, ret_len);
}

/* The saved "sdid" of an NPU: absent (records older than it) or null, or the three
 * numbers, each below 2^32 (server_index at most CONF_SDID_SERVER_INDEX_MAX). */
static bool sdid_is_valid(const json_t *v)
{
	uint64_t u[3];

	if (!v || json_is_null(v))
		return true;
	return json_is_object(v) && get_u64(v, "sdid", &u[0]) && u[0] <= UINT32_MAX &&
	       get_u64(v, "super_pod_id", &u[1]) && u[1] <= UINT32_MAX &&
	       get_u64(v, "server_index", &u[2]) && u[2] <= CONF_SDID_SERVER_INDEX_MAX;
}

static void sdid_load(const json_t *v, struct sched_npu *p)
{
	uint64_t u[3] = { 0, 0, 0 };

	p->has_sdid = false;
	if (!v || !json_is_object(v))
		return;
	get_u64(v, "sdid", &u[0]);
	get_u64(v, "super_pod_id", &u[1]);
	get_u64(v, "server_index", &u[2]);
	p->has_sdid = true;
	p->sdid = (uint32_t)u[0];
	p->super_pod_id = (uint32_t)u[1];
	p->server_index = (unsigned)u[2];
}

int sched_server_load(struct sched_cluster *c, const char *text, size_t len, uint64_t now_usec,
		      char *reason)
{
	char name[CONF_NAME_MAX + 1] = "", state[32], node_health[32];
	char agent[sizeof(((struct sched_server *)0)->agent)] = "";
	struct sched_server tmp, *s;
	const json_t *npus;
	int idx, st, nh;
	json_t *o;

	idx = parse_doc(text, len, "server record", FORMAT_VERSION, reason, &o);
	if (idx < 0)
		return idx;
	npus = json_object_get(o, "npus");
	if (!get_str(o, "name", name, sizeof(name)) || !get_str(o, "state", state, sizeof(state)) ||
	    !get_str(o, "node_health", node_health, sizeof(node_health)) ||
	    !get_bool(o, "cordoned", &tmp.cordoned) || !get_bool(o, "draining", &tmp.draining) ||
	    !get_bool(o, "ips_confirmed", &tmp.ips_confirmed) || !json_is_array(npus))
		goto malformed;
	/* the agent whose reports count (records written before it was kept have none) */
	if (json_object_get(o, "agent") && !get_str(o, "agent", agent, sizeof(agent)))
		goto malformed;
	st = name_index(server_state_names, 3, state);
	nh = health_from_name(node_health);
	if (st < 0 || nh < 0)
		goto malformed;
	idx = sched_cluster_find_server(c, name);
	if (idx < 0) {
		json_decref(o);
		sched_reason(reason, "server %s is no longer in the inventory; its saved state "
				     "is dropped", name);
		return -ENOENT;
	}
	s = &c->servers[idx];
	/* check every NPU before changing anything */
	for (size_t i = 0; i < json_array_size(npus); i++) {
		const json_t *n = json_array_get(npus, i);
		uint64_t u;
		unsigned f;
		char w[200];

		if (!json_is_object(n) || !get_str(n, "health", w, 32) ||
		    health_from_name(w) < 0 || !get_str(n, "isolation", w, 32) ||
		    isolation_from_name(w) < 0 || !get_u64(n, "last_fault_usec", &u) ||
		    !get_u64(n, "ok_since_usec", &u) || !get_u64(n, "window_start_usec", &u) ||
		    !get_uint(n, "window_faults", &f) ||
		    !get_str(n, "fault", w, SCHED_FAULT_MAX) ||
		    !get_str(n, "reported_ip", w, sizeof(s->npus[0].reported_ip)) ||
		    !sdid_is_valid(json_object_get(n, "sdid")))
			goto malformed;
	}
	s->state = (enum sched_server_state)st;
	s->cordoned = tmp.cordoned;
	s->draining = tmp.draining;
	s->node_health = (enum sched_health)nh;
	/* a server that was unreachable had lost its agent already: any may take it now */
	snprintf(s->agent, sizeof(s->agent), "%s", st == SCHED_SERVER_READY ? agent : "");
	/* an inventory that changed the NPU count needs the agent to confirm again */
	s->ips_confirmed = tmp.ips_confirmed && json_array_size(npus) == s->conf->npu_count;
	/* the daemon was down, so no agent could report: each gets a full heartbeat
	 * timeout from the restart */
	s->last_report_usec = s->state == SCHED_SERVER_UNKNOWN ? 0 : now_usec;
	s->restored_heartbeat = s->last_report_usec != 0;
	for (size_t i = 0; i < json_array_size(npus) && i < s->conf->npu_count; i++) {
		const json_t *n = json_array_get(npus, i);
		struct sched_npu *p = &s->npus[i];
		char w[32];

		get_str(n, "health", w, sizeof(w));
		p->health = (enum sched_health)health_from_name(w);
		get_str(n, "isolation", w, sizeof(w));
		p->isolation = (enum sched_isolation)isolation_from_name(w);
		p->isolated = p->isolation != SCHED_ISOLATION_NONE;
		get_u64(n, "last_fault_usec", &p->last_fault_usec);
		get_u64(n, "ok_since_usec", &p->ok_since_usec);
		get_u64(n, "window_start_usec", &p->window_start_usec);
		p->last_fault_usec = shifted(c, p->last_fault_usec);
		p->ok_since_usec = shifted(c, p->ok_since_usec);
		p->window_start_usec = shifted(c, p->window_start_usec);
		clamp_to(&p->last_fault_usec, now_usec);
		clamp_to(&p->ok_since_usec, now_usec);
		clamp_to(&p->window_start_usec, now_usec);
		get_uint(n, "window_faults", &p->window_faults);
		{
			char fault[SCHED_FAULT_MAX];

			get_str(n, "fault", fault, sizeof(fault));
			sched_text_set(c, &p->fault, fault, sizeof(fault));
		}
		get_str(n, "reported_ip", p->reported_ip, sizeof(p->reported_ip));
		sdid_load(json_object_get(n, "sdid"), p);
		sched_devip_changed(c, s->index, (unsigned)i);
	}
	sched_server_recount(s);
	s->version++;
	sched_cluster_changed(c);
	json_decref(o);
	return 0;

malformed:
	json_decref(o);
	sched_reason(reason, "server record %s is malformed", name);
	return -EINVAL;
}

/* ---- the rest: sequences, counters, queue quotas ---- */

int sched_meta_save(const struct sched_cluster *c, char **ret, size_t *ret_len)
{
	struct doc d = doc_new();
	json_t *quotas = json_object();

	put(&d, "format", json_integer(FORMAT_VERSION));
	put_u64(&d, "next_event_seq", c->next_event_seq);
	put_u64(&d, "next_queue_seq", c->next_queue_seq);
	put_u64(&d, "next_job_serial", c->next_job_serial);
	put_u64(&d, "recoveries", c->recoveries);
	put_u64(&d, "preemptions", c->preemptions);
	put_u64(&d, "backfilled", c->backfilled);
	put_u64(&d, "timeouts", c->timeouts);
	put_u64(&d, "resizes", c->resizes);
	/* each queue's quota with the file's value it overrides, so that a restart can tell
	 * whether the file changed since */
	for (size_t i = 0; quotas && i < c->conf->queue_count; i++)
		if (json_object_set_new(quotas, c->conf->queues[i].name,
					json_pack("{s:i, s:i}", "npus",
						  (int)c->conf->queues[i].quota_npus, "file",
						  (int)c->queue_quota_file[i])) < 0)
			d.failed = true;
	put(&d, "quota_npus", quotas);
	return doc_finish(&d, ret, ret_len);
}

int sched_meta_load(struct sched_cluster *c, const char *text, size_t len, char *reason)
{
	const json_t *quotas;
	uint64_t v[8];
	const char *key;
	json_t *val, *o;
	int r = parse_doc(text, len, "cluster record", FORMAT_VERSION, reason, &o);

	if (r < 0)
		return r;
	quotas = json_object_get(o, "quota_npus");
	if (!get_u64(o, "next_event_seq", &v[0]) || !get_u64(o, "next_queue_seq", &v[1]) ||
	    !get_u64(o, "next_job_serial", &v[2]) || !get_u64(o, "recoveries", &v[3]) ||
	    !get_u64(o, "preemptions", &v[4]) || !get_u64(o, "backfilled", &v[5]) ||
	    !get_u64(o, "timeouts", &v[6]) || !get_u64(o, "resizes", &v[7]) ||
	    !json_is_object(quotas) || v[0] == 0) {
		json_decref(o);
		sched_reason(reason, "the cluster record is malformed");
		return -EINVAL;
	}
	/* sequences only move forward: events or jobs loaded first may be ahead */
	if (v[0] > c->next_event_seq)
		c->next_event_seq = v[0];
	if (v[1] > c->next_queue_seq)
		c->next_queue_seq = v[1];
	if (v[2] > c->next_job_serial)
		c->next_job_serial = v[2];
	c->recoveries = v[3];
	c->preemptions = v[4];
	c->backfilled = v[5];
	c->timeouts = v[6];
	c->resizes = v[7];
	/* a quota set at run time outlives a restart, unless the file changed that queue's
	 * quota meanwhile; a queue no longer configured is dropped, and a quota beyond the
	 * cluster as configured now is capped */
	reason[0] = '\0';
	json_object_foreach((json_t *)quotas, key, val) {
		struct conf_queue *q = (struct conf_queue *)conf_cluster_find_queue(c->conf, key);
		uint64_t npus, file;
		size_t qi;

		if (!q || !get_u64(val, "npus", &npus) || !get_u64(val, "file", &file))
			continue;
		qi = (size_t)(q - c->conf->queues);
		if (file != c->queue_quota_file[qi]) {
			if (npus != file)
				sched_reason(reason, "queue %s: quota_npus is %u in the configuration "
						     "file now (was %u): the %u set at run time is "
						     "dropped",
					     key, c->queue_quota_file[qi], (unsigned)file,
					     (unsigned)npus);
			continue;
		}
		q->quota_npus = npus > c->npus_total ? c->npus_total : (unsigned)npus;
	}
	sched_cluster_changed(c);
	json_decref(o);
	return 0;
}

/* ---- events ---- */

int sched_event_load(struct sched_cluster *c, uint64_t seq, uint64_t time_usec, const char *kind,
		     const char *job, const char *server, int npu, const char *state,
		     const char *reason, const char *line)
{
	int k = -1, s = -1;

	for (int i = 0; i < SCHED_EV_KIND_COUNT; i++)
		if (kind && strcmp(sched_event_kind_name((enum sched_event_kind)i), kind) == 0)
			k = i;
	if (state)
		s = state_from_name(state);
	if (k < 0 || (state && s < 0) || seq == 0 ||
	    (c->event_count > 0 && seq != c->next_event_seq))
		return -EINVAL;
	c->next_event_seq = seq;
	sched_event_put(c, time_usec, (enum sched_event_kind)k, job, server, npu,
			state ? sched_job_state_name((enum sched_job_state)s) : NULL, reason, line);
	return 0;
}

void sched_event_forget_all(struct sched_cluster *c)
{
	for (size_t i = 0; i < c->event_count; i++)
		free(c->events[(c->event_head + i) % c->event_cap].line);
	c->event_head = 0;
	c->event_count = 0;
	c->event_bytes = 0;
	sched_cluster_changed(c);
}

int sched_restore_finish(struct sched_cluster *c, uint64_t now_usec, char *reason)
{
	int r;

	for (size_t i = 0; i < c->server_count; i++)
		sched_server_recount(&c->servers[i]);
	sched_array_restored(c, now_usec);
	sched_deps_restored(c, now_usec);
	r = sched_check_invariants(c, reason);
	if (r < 0)
		return r;
	sched_pass_request(c, now_usec);
	return 0;
}
