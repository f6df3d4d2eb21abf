/* SPDX-License-Identifier: MIT */
/*
 * Accounting: a record of every job that ended, kept apart from the job's record so that
 * it outlives it (a resubmission of the name, max_job_count dropping finished records),
 * as Slurm's accounting keeps finished jobs for sacct. The ring and its file
 * (cluster/accounting, jobs/<job>/accounting); the rules are in ascend_sched.h
 * (struct sched_acct).
 *
 * Calls: sched_json.c, sched_history.c's names (sched_run_end_name: text only); called
 * by sched_job.c (sched_account_note, at a terminal transition).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "sched_json.h"

/* NPU-hours of @usec NPU-microseconds, to 4 decimals. */
static json_t *npu_hours(uint64_t npu_usec)
{
	return json_real((double)(uint64_t)((double)npu_usec / 3.6e9 * 1e4 + 0.5) / 1e4);
}

/*
 * The record's line. Fields, as sacct names them where it has them: seq, job (JobName,
 * also the id), serial (unique per submission), uid, gid, queue (Partition), priority,
 * service (an instance's service, else null), state (completed, failed, cancelled,
 * timeout), exit_code (the last generation's first non-zero exit, 0, or null when no
 * process reported one), reason, submit, start (the first generation's, null if it never
 * ran), end, elapsed_sec (time it ran in all, as time_limit counts it), npus (of its
 * last generation; 0 if it never ran), npu_hours (the sum over the generations its
 * history keeps: every one but those beyond SCHED_JOB_RUNS_MAX), generations ([first,
 * last], [] if it never ran), restarts, preemptions, faults (generations a fault ended),
 * servers (every server it ran on, in order of first use).
 */
static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The record's line. Fields, as sacct names them where it has them: seq, job (JobName,
 * also the id), serial (unique per submission), uid, gid, queue (Partition), priority,
 * service (an instance's service, else null), state (completed, failed, cancelled,
 * timeout), exit_code (the last generation's first non-zero exit, 0, or null when no
 * process reported one), reason, submit, start (the first generation's, null if it never
 * ran), end, elapsed_sec (time it ran in all, as time_limit counts it), npus (of its
 * last generation; 0 if it never ran), npu_hours (every generation's NPUs x its time),
 * generations ([first, last], [] if it never ran), restarts, preemptions, faults
 * (generations a fault of an NPU or server ended), servers (of the generations its
 * history keeps, sorted).
 */
static char *record_line(const struct sched_job *j, uint64_t seq, uint64_t now_usec)
{
	json_t *o = json_object(), *gens = json_array(), *servers = json_array();
	const struct sched_job_run *last = j->run_count ? &j->runs[j->run_count - 1] : NULL;
	uint64_t npu_usec = j->dropped_npu_usec;
	unsigned faults = j->dropped_faults, npus = 0;
	const char **names;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < j->run_count; i++)
		cap += j->runs[i].slice_count;
	names = malloc((cap ? cap : 1) * sizeof(*names));
	for (size_t i = 0; i < j->run_count; i++) {
		const struct sched_job_run *r = &j->runs[i];

		for (size_t k = 0; names && k < r->slice_count; k++)
			names[n++] = r->slices[k].server;
		npu_usec += sched_run_npu_usec(r, now_usec);
		faults += r->end == SCHED_RUN_NODE_FAIL;
	}
	for (size_t k = 0; last && k < last->slice_count; k++)
		npus += last->slices[k].npu_count;
	/* sorted, each once: O(n log n) for a job of many servers and generations */
	if (names) {
		qsort(names, n, sizeof(*names), by_name);
		for (size_t k = 0; k < n; k++)
			if (!k || strcmp(names[k], names[k - 1]) != 0)
				sched_jpush(servers, sched_jstr(names[k]));
		free(names);
	} else {
		json_decref(servers);
		servers = NULL; /* latched: no line */
	}
	if (last) {
		sched_jpush(gens, json_integer(j->runs[0].generation));
		sched_jpush(gens, json_integer(last->generation));
	}
	sched_jset(o, "seq", json_integer((json_int_t)seq));
	sched_jset(o, "job", sched_jstr(j->name));
	sched_jset(o, "serial", json_integer((json_int_t)j->serial));
	sched_jset(o, "uid", json_integer(j->uid));
	sched_jset(o, "gid", json_integer(j->gid));
	sched_jset(o, "queue", j->spec ? sched_jstr(j->spec->queue) : json_null());
	sched_jset(o, "priority", j->spec ? json_integer(j->spec->priority) : json_null());
	sched_jset(o, "service", j->service[0] ? sched_jstr(j->service) : json_null());
	sched_jset(o, "state", sched_jstr(sched_job_state_name(j->state)));
	sched_jset(o, "exit_code", last && last->has_exit ? json_integer(last->exit_code) :
							    json_null());
	sched_jset(o, "reason", sched_jstr(j->reason));
	sched_jtime(o, "submit", j->submit_usec);
	sched_jtime(o, "start", j->first_start_usec);
	sched_jtime(o, "end", now_usec);
	sched_jset(o, "elapsed_sec", sched_jsec(j->run_accum_usec));
	sched_jset(o, "npus", json_integer(npus));
	sched_jset(o, "npu_hours", npu_hours(npu_usec));
	sched_jset(o, "generations", gens);
	sched_jset(o, "restarts", json_integer(j->restarts));
	sched_jset(o, "preemptions", json_integer(j->preemptions));
	sched_jset(o, "faults", json_integer(faults));
	sched_jset(o, "servers", servers);
	return sched_json_line(o);
}

/* A free slot at the ring's end (the oldest record dropped when it is full), or NULL. */
static struct sched_acct *ring_push(struct sched_cluster *c)
{
	unsigned cap_max = c->conf->accounting_history;
	struct sched_acct *a;

	if (c->acct_count == c->acct_cap && c->acct_cap < cap_max) {
		size_t cap = c->acct_cap ? c->acct_cap * 2 : 64;
		struct sched_acct *n;

		if (cap > cap_max)
			cap = cap_max;
		n = malloc(cap * sizeof(*n));
		if (n) {
			/* unwrap into the new array, oldest first */
			for (size_t i = 0; i < c->acct_count; i++)
				n[i] = c->acct[(c->acct_head + i) % c->acct_cap];
			free(c->acct);
			c->acct = n;
			c->acct_cap = cap;
			c->acct_head = 0;
		}
	}
	if (!c->acct_cap)
		return NULL;
	if (c->acct_count == c->acct_cap) {
		/* full: the oldest goes */
		a = &c->acct[c->acct_head];
		free(a->line);
		c->acct_head = (c->acct_head + 1) % c->acct_cap;
		c->acct_count--;
	}
	a = &c->acct[(c->acct_head + c->acct_count) % c->acct_cap];
	c->acct_count++;
	memset(a, 0, sizeof(*a));
	return a;
}

void sched_account_note(struct sched_cluster *c, const struct sched_job *j, uint64_t now_usec)
{
	uint64_t seq = c->next_acct_seq ? c->next_acct_seq : 1;
	char *line;

	/* a service's record holds no NPUs: its instances have theirs */
	if (c->accounting_off || sched_job_is_service(j) || sched_job_is_array(j))
		return;
	line = record_line(j, seq, now_usec);
	struct sched_acct *a = line ? ring_push(c) : NULL;

	c->next_acct_seq = seq + 1;
	if (!a) {
		free(line);
		c->acct_lost++;
		return;
	}
	a->seq = seq;
	a->time_usec = now_usec;
	snprintf(a->job, sizeof(a->job), "%s", j->name);
	a->line = line;
	a->line_len = strlen(line);
}

void sched_cluster_set_accounting(struct sched_cluster *c, bool on)
{
	c->accounting_off = !on;
}

void sched_account_free(struct sched_cluster *c)
{
	for (size_t i = 0; i < c->acct_count; i++)
		free(c->acct[(c->acct_head + i) % c->acct_cap].line);
	free(c->acct);
	c->acct = NULL;
	c->acct_head = c->acct_count = c->acct_cap = 0;
}

const struct sched_acct *sched_account_next(const struct sched_cluster *c, uint64_t after_seq)
{
	size_t lo = 0, hi = c->acct_count;

	/* seqs increase along the ring: the first one past @after_seq */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->acct[(c->acct_head + mid) % c->acct_cap].seq <= after_seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->acct_count ? &c->acct[(c->acct_head + lo) % c->acct_cap] : NULL;
}

int sched_account_load(struct sched_cluster *c, uint64_t seq, uint64_t time_usec,
		       const char *job, const char *line)
{
	struct sched_acct *a;
	char *copy;

	if (!seq || (c->next_acct_seq && seq < c->next_acct_seq) || !job ||
	    !conf_job_name_is_valid(job) || !line || !*line || strchr(line, '\n'))
		return -EINVAL;
	copy = strdup(line);
	if (!copy)
		return -ENOMEM;
	a = ring_push(c);
	if (!a) {
		free(copy);
		return -ENOMEM;
	}
	a->seq = seq;
	a->time_usec = time_usec;
	snprintf(a->job, sizeof(a->job), "%s", job);
	a->line = copy;
	a->line_len = strlen(copy);
	c->next_acct_seq = seq + 1;
	return 0;
}

int sched_render_accounting(const struct sched_cluster *c, const char *job, char **ret,
			    size_t *ret_len)
{
	struct sched_buf b = { 0 };

	for (size_t i = 0; i < c->acct_count && !b.err; i++) {
		const struct sched_acct *a = &c->acct[(c->acct_head + i) % c->acct_cap];

		if (job && strcmp(a->job, job) != 0)
			continue;
		sched_buf_put(&b, a->line, a->line_len);
		sched_buf_put(&b, "\n", 1);
	}
	return sched_buf_finish(&b, ret, ret_len);
}
