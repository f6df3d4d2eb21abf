/* SPDX-License-Identifier: MIT */
/*
 * The dry run (issue 19 item 6), Slurm's `sbatch --test-only`: what would become of a
 * spec submitted now, without changing anything. The cluster is copied through its own
 * saved documents (sched_state.c: the same a restart loads, so the copy decides as the
 * cluster would), the spec is submitted to the copy, whose pass places it, reserves for
 * it or preempts for it, and the copy is read and thrown away. Taking the documents is
 * the only part that reads the cluster (its caller's lock held); the rest works on the
 * copy alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_internal.h"
#include "sched_json.h"

struct sched_whatif_snapshot {
	char *conf;		/* the configuration as the cluster has it (quotas changed
				 * since included) */
	size_t conf_len;
	char *meta;
	char **servers, **jobs;
	size_t server_count, job_count;
};

void sched_whatif_snapshot_free(struct sched_whatif_snapshot *s)
{
	if (!s)
		return;
	free(s->conf);
	free(s->meta);
	for (size_t i = 0; i < s->server_count; i++)
		free(s->servers[i]);
	for (size_t i = 0; i < s->job_count; i++)
		free(s->jobs[i]);
	free(s->servers);
	free(s->jobs);
	free(s);
}

int sched_whatif_snapshot(const struct sched_cluster *c, struct sched_whatif_snapshot **ret)
{
	struct sched_whatif_snapshot *s = calloc(1, sizeof(*s));
	size_t len;
	int r = -ENOMEM;

	if (!s)
		return -ENOMEM;
	s->servers = calloc(c->server_count ? c->server_count : 1, sizeof(char *));
	s->jobs = calloc(c->job_count ? c->job_count : 1, sizeof(char *));
	if (!s->servers || !s->jobs)
		goto fail;
	r = conf_cluster_render_yaml(c->conf, &s->conf, &s->conf_len);
	if (r == 0)
		r = sched_meta_save(c, &s->meta, &len);
	for (unsigned i = 0; r == 0 && i < c->server_count; i++, s->server_count++)
		r = sched_server_save(c, i, &s->servers[i], &len);
	for (size_t i = 0; r == 0 && i < c->job_count; i++, s->job_count++)
		r = sched_job_save(c, c->jobs[i], &s->jobs[i], &len);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	sched_whatif_snapshot_free(s);
	return r < 0 ? r : -ENOMEM;
}

/* The copy of the cluster the snapshot describes, as of @now_usec. */
static int copy_of(const struct sched_whatif_snapshot *s, uint64_t now_usec,
		   struct sched_cluster **ret, char *reason)
{
	struct conf_cluster *conf = NULL;
	struct conf_error err;
	struct sched_cluster *w = NULL;
	int r = conf_cluster_parse(s->conf, s->conf_len, "cluster", &conf, &err);

	if (r < 0) {
		sched_reason(reason, "the cluster's configuration does not read back: %s",
			     err.msg);
		return r;
	}
	r = sched_cluster_new(conf, &w); /* steals conf */
	if (r < 0) {
		sched_reason(reason, "out of memory");
		return r;
	}
	r = sched_meta_load(w, s->meta, strlen(s->meta), reason);
	for (size_t i = 0; r == 0 && i < s->server_count; i++)
		r = sched_server_load(w, s->servers[i], strlen(s->servers[i]), now_usec, reason);
	for (size_t i = 0; r == 0 && i < s->job_count; i++)
		r = sched_job_load(w, s->jobs[i], strlen(s->jobs[i]), now_usec, reason);
	if (r == 0)
		r = sched_restore_finish(w, now_usec, reason);
	if (r < 0) {
		sched_cluster_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

int sched_whatif_run(const struct sched_whatif_snapshot *s, const struct conf_job_spec *spec,
		     uid_t uid, gid_t gid, bool is_operator, uint64_t now_usec, char **ret,
		     size_t *ret_len)
{
	struct sched_cluster *w = NULL;
	struct conf_job_spec *copy = conf_job_spec_dup(spec, spec->name);
	char reason[SCHED_REASON_MAX] = "", *status = NULL, *text;
	json_t *o = json_object(), *preempts = json_array(), *st = NULL;
	struct sched_job *j = NULL;
	const char *would;
	size_t len;
	int r;

	if (!copy || !o || !preempts) {
		conf_job_spec_free(copy); /* not submitted: still ours */
		r = -ENOMEM;
		goto out;
	}
	r = copy_of(s, now_usec, &w, reason);
	if (r < 0) {
		conf_job_spec_free(copy);
		goto out;
	}
	r = sched_job_submit_as(w, copy, uid, gid, is_operator, now_usec, reason, &j);
	if (r < 0) {
		would = "refused";
	} else {
		/* the copy defers no pass: the submission ran its own, as the daemon's does
		 * before the close that submits returns */
		would = j->state == SCHED_JOB_RUNNING ? "start" :
			j->state == SCHED_JOB_PENDING ? "wait" : sched_job_state_name(j->state);
		snprintf(reason, sizeof(reason), "%s", j->reason);
		/* an array: start when an element would (its status.json says which) */
		if (j->state == SCHED_JOB_ARRAY)
			would = "wait";
		for (size_t i = 0; j->state == SCHED_JOB_ARRAY && i < w->job_count; i++)
			if (w->jobs[i]->array_serial == j->serial &&
			    w->jobs[i]->state == SCHED_JOB_RUNNING)
				would = "start";
		for (size_t i = 0; i < w->job_count; i++) {
			const struct sched_job *v = w->jobs[i], *by;

			if (v == j || v->state != SCHED_JOB_STOPPING || !v->preempted_by_serial)
				continue;
			by = sched_cluster_find_job(w, v->preempted_by);
			if (v->preempted_by_serial == j->serial ||
			    (by && by->serial == v->preempted_by_serial && by->array_serial == j->serial))
				sched_jpush(preempts, sched_jstr(v->name));
		}
		if (sched_render_job_status_json(w, j, &status, &len) == 0)
			st = json_loads(status, 0, NULL);
	}
	r = 0;
	sched_jset(o, "dry_run", json_true());
	sched_jset(o, "job", sched_jstr(spec->name));
	/* start: placed now; wait: pending (reserved_start says when, if known); refused:
	 * the submission would fail (reason) */
	sched_jset(o, "would", sched_jstr(would));
	sched_jset(o, "reason", sched_jstr(reason));
	sched_jset(o, "preempts", preempts);
	preempts = NULL;
	sched_jset(o, "placement", st && json_object_get(st, "placement") ?
					   json_incref(json_object_get(st, "placement")) :
					   json_array());
	sched_jset(o, "reserved_start", st && json_object_get(st, "reserved_start") ?
						json_incref(json_object_get(st, "reserved_start")) :
						json_null());
	sched_jset(o, "status", st ? json_incref(st) : json_null());
	text = json_dumps(o, JSON_INDENT(2));
	if (!text) {
		r = -ENOMEM;
		goto out;
	}
	len = strlen(text);
	{
		char *grown = realloc(text, len + 2);

		if (!grown) {
			free(text);
			r = -ENOMEM;
			goto out;
		}
		grown[len++] = '\n';
		grown[len] = '\0';
		*ret = grown;
		*ret_len = len;
	}
out:
	json_decref(st);
	json_decref(preempts);
	json_decref(o);
	free(status);
	sched_cluster_free(w);
	return r;
}
