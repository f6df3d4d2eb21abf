/* SPDX-License-Identifier: MIT */
/* Job lifecycle: every state change passes through sched_job_transition(). */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

bool sched_job_state_is_terminal(enum sched_job_state s)
{
	return s == SCHED_JOB_COMPLETED || s == SCHED_JOB_FAILED || s == SCHED_JOB_CANCELLED ||
	       s == SCHED_JOB_REJECTED || s == SCHED_JOB_TIMEOUT;
}

/* States whose time counts against time_limit (not the stop after a preemption). */
static bool state_runs(enum sched_job_state s)
{
	return s == SCHED_JOB_RUNNING || s == SCHED_JOB_RECOVERING;
}

uint64_t sched_job_run_usec(const struct sched_job *j, uint64_t now_usec)
{
	uint64_t cur = 0;

	if (state_runs(j->state) && j->run_since_usec && now_usec > j->run_since_usec)
		cur = now_usec - j->run_since_usec;
	return j->run_accum_usec + cur;
}

/* Legal transitions, [from][to]; from SCHED_JOB_NONE is creation. */
static bool transition_is_legal(enum sched_job_state from, enum sched_job_state to)
{
	switch (from) {
	case SCHED_JOB_NONE:
		return to == SCHED_JOB_DRAFT || to == SCHED_JOB_PENDING ||
		       to == SCHED_JOB_REJECTED || to == SCHED_JOB_SERVING ||
		       to == SCHED_JOB_ARRAY;
	case SCHED_JOB_DRAFT:
		return to == SCHED_JOB_PENDING || to == SCHED_JOB_REJECTED ||
		       to == SCHED_JOB_CANCELLED || to == SCHED_JOB_SERVING ||
		       to == SCHED_JOB_ARRAY;
	case SCHED_JOB_ARRAY:
		/* it ends when its elements have (completed, failed), or is cancelled */
		return to == SCHED_JOB_COMPLETED || to == SCHED_JOB_FAILED ||
		       to == SCHED_JOB_CANCELLED;
	case SCHED_JOB_SERVING:
		/* serving -> serving: its replicas changed; failed: restored on a cluster
		 * where it can never run */
		return to == SCHED_JOB_SERVING || to == SCHED_JOB_CANCELLED ||
		       to == SCHED_JOB_FAILED;
	case SCHED_JOB_PENDING:
		/* array: an array's record once its after: is met */
		return to == SCHED_JOB_PENDING || to == SCHED_JOB_RUNNING ||
		       to == SCHED_JOB_CANCELLED || to == SCHED_JOB_FAILED ||
		       to == SCHED_JOB_ARRAY;
	case SCHED_JOB_RUNNING:
		/* running -> running: an elastic resize (a new generation) */
		return to == SCHED_JOB_COMPLETED || to == SCHED_JOB_FAILED ||
		       to == SCHED_JOB_CANCELLED || to == SCHED_JOB_RECOVERING ||
		       to == SCHED_JOB_PENDING || to == SCHED_JOB_STOPPING ||
		       to == SCHED_JOB_RUNNING;
	case SCHED_JOB_RECOVERING:
		return to == SCHED_JOB_RUNNING || to == SCHED_JOB_PENDING ||
		       to == SCHED_JOB_FAILED || to == SCHED_JOB_CANCELLED ||
		       to == SCHED_JOB_STOPPING;
	case SCHED_JOB_STOPPING:
		return to == SCHED_JOB_PENDING || to == SCHED_JOB_TIMEOUT ||
		       to == SCHED_JOB_CANCELLED || to == SCHED_JOB_FAILED ||
		       to == SCHED_JOB_COMPLETED;
	default:
		return false; /* terminal jobs are replaced, never revived */
	}
}

/* sched_job_touch() for the dirty lists of @lists (a bit per enum sched_dirty_list). */
static void touch_lists(struct sched_cluster *c, struct sched_job *job, unsigned lists);

/* sched_job_transition(), where a pending job's new reason alone is written to the store
 * only with @record_reason (sched_job_set_pending_reason()). */
static void transition(struct sched_cluster *c, struct sched_job *j, enum sched_job_state to,
		       enum sched_event_kind kind, uint64_t now_usec, const char *reason,
		       bool record_reason)
{
	enum sched_job_state from = j->state;

	uint64_t ran = from == SCHED_JOB_NONE ? 0 : sched_job_run_usec(j, now_usec);

	assert(transition_is_legal(from, to));
	/* a stop, a cancel, a failure ends a step of the ladder that waits */
	if (from == SCHED_JOB_RECOVERING && j->ladder.active)
		sched_ladder_release(c, j);
	j->state = to;
	sched_limits_account(c, j, from, to);
	/* a held job is not in the pending order (sched_control.c notes its hold) */
	if ((from == SCHED_JOB_PENDING) != (to == SCHED_JOB_PENDING) && !sched_job_is_held(j))
		sched_pend_order_note(c, j, to == SCHED_JOB_PENDING);
	if (sched_job_state_is_terminal(to))
		j->hold_kind = SCHED_HOLD_NONE;
	sched_job_set_reason(c, j, reason);
	j->change_usec = now_usec;
	if (to == SCHED_JOB_PENDING && from != SCHED_JOB_PENDING)
		j->pending_since_usec = now_usec;
	/* (a resume in place goes on in the same generation: it did not start again) */
	if (to == SCHED_JOB_RUNNING && from != SCHED_JOB_RUNNING &&
	    !(from == SCHED_JOB_RECOVERING && j->ladder.resumed && kind == SCHED_EV_RECOVERY))
		j->start_usec = now_usec;
	if (to == SCHED_JOB_RUNNING && !j->first_start_usec)
		j->first_start_usec = now_usec;
	/* run time for time_limit: counts while the job holds NPUs */
	if (state_runs(to) && (from == SCHED_JOB_NONE || !state_runs(from)))
		j->run_since_usec = now_usec;
	if (!state_runs(to) && from != SCHED_JOB_NONE && state_runs(from)) {
		j->run_accum_usec = ran;
		j->run_since_usec = 0;
	}
	if (to != SCHED_JOB_PENDING)
		j->reserved_start_usec = 0;
	else if (j->spec && j->spec->time_limit_sec) {
		uint64_t limit = j->spec->time_limit_sec * 1000000u;

		j->limit_left_usec = j->run_accum_usec < limit ? limit - j->run_accum_usec : 0;
	} else {
		j->limit_left_usec = UINT64_MAX;
	}
	if (sched_job_state_is_terminal(to))
		j->end_usec = now_usec;
	/* an instance that ended is replaced while its service serves */
	if (j->service[0] && sched_job_state_is_terminal(to))
		c->services_dirty = true;
	/* an element that ended is counted by its array, which may make the next */
	if (j->array_serial && sched_job_state_is_terminal(to) && to != from)
		sched_array_element_ended(c, j);
	sched_history_note(c, j, from, to, kind, now_usec);
	/* a submitted job that ended: its accounting record (not a rejection or a draft) */
	if (sched_job_state_is_terminal(to) && to != SCHED_JOB_REJECTED &&
	    from != SCHED_JOB_NONE && from != SCHED_JOB_DRAFT)
		sched_account_note(c, j, now_usec);
	/* A pending job that stays pending with a new reason is not worth an event each pass
	 * (nor, from a pass, a record write: sched_job_set_pending_reason()). */
	if (from == to && from == SCHED_JOB_PENDING) {
		touch_lists(c, j, record_reason ? ~0u : ~(1u << SCHED_DIRTY_STORE));
		sched_cluster_changed(c);
		return;
	}
	sched_job_touch(c, j);
	/* a placement's reason names where it went, not the fault it came from */
	if (c->subject_job == j && kind != SCHED_EV_PLACED)
		sched_event_add(c, now_usec, kind, j, c->subject_server, c->subject_npu, "%s",
				j->reason);
	else
		sched_event_add(c, now_usec, kind, j, NULL, -1, "%s", j->reason);
	/* the jobs whose `after:` names it go on, or are cancelled */
	if (sched_job_state_is_terminal(to) && to != from)
		sched_deps_job_ended(c, j, now_usec);
	if (c->check_invariants) {
		char why[SCHED_REASON_MAX];

		if (sched_check_invariants(c, why) < 0) {
			fprintf(stderr, "sched: invariant broken after %s -> %s of job %s: %s\n",
				sched_job_state_name(from == SCHED_JOB_NONE ? to : from),
				sched_job_state_name(to), j->name, why);
			abort();
		}
	}
}

void sched_job_transition(struct sched_cluster *c, struct sched_job *j,
			  enum sched_job_state to, enum sched_event_kind kind, uint64_t now_usec,
			  const char *reason)
{
	transition(c, j, to, kind, now_usec, reason, true);
}

void sched_job_set_pending_reason(struct sched_cluster *c, struct sched_job *j,
				  uint64_t now_usec, const char *reason)
{
	assert(j->state == SCHED_JOB_PENDING);
	/* what transition() does when a pending job stays pending, less what cannot change
	 * then (its limits, run time and history): a pass does this for thousands of jobs
	 * at once, reading only their first cache line */
	sched_job_set_reason(c, j, reason);
	j->change_usec = now_usec;
	touch_lists(c, j, ~(1u << SCHED_DIRTY_STORE));
	sched_cluster_changed(c);
}

struct sched_job *sched_job_alloc(void)
{
	void *j;

	if (posix_memalign(&j, 64, sizeof(struct sched_job)) != 0)
		return NULL;
	return memset(j, 0, sizeof(struct sched_job));
}

/* What a pass reads of every pending job stays within the job's first 64 bytes. */
_Static_assert(offsetof(struct sched_job, limit_left_usec) + sizeof(uint64_t) <= 64,
	       "the fields a pass reads fit in a job's first 64 bytes");

void sched_job_subject(struct sched_cluster *c, const struct sched_job *j, const char *server,
		       int npu)
{
	c->subject_job = j;
	c->subject_server = j ? server : NULL;
	c->subject_npu = j ? npu : -1;
}

/*
 * Every path that begins a generation passes here: the first placement, a fault
 * recovery, a process-exit restart, a preemption or requeue resume, an elastic resize.
 * The resume point is frozen now from the newest checkpoint known; with
 * scan_resume_at_start every generation after the job's first (which starts afresh:
 * checkpoints left by an earlier job of the same name or directory are not its own)
 * then waits until the embedding program has
 * looked into checkpoint_dir (sched_job_resume_scanned()), because a periodic scan
 * alone may be a whole fault_check_interval old, and a recovery a few seconds after a
 * save would resume from the save before it (issue 14 item 10).
 */
void sched_job_begin_generation(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	char *resume = j->checkpoint_path ? strdup(j->checkpoint_path) : NULL;

	j->generation++;
	j->generation_usec = now_usec;
	sched_service_hold_clear(j); /* what a held restart would start, this one starts */
	/* in-place restarts count within a generation, and a resume notice was for the
	 * one before */
	for (size_t i = 0; i < j->slice_count; i++) {
		j->slices[i].attempt = 0;
		j->slices[i].kept_from = 0; /* a process-level recovery sets its own */
	}
	j->ladder.resumed = false;
	j->ladder.joiners_stateless = false; /* every process of it starts afresh */
	j->ladder.kept_unanswered = false;
	/* on allocation failure the generation resumes from nothing rather than a mix */
	free(j->resume_path);
	j->resume_path = resume;
	/* a job's first run starts afresh, as it always has; every later one resumes */
	sched_job_set_resume_scan_pending(c, j, c->scan_resume_at_start && j->spec &&
						j->spec->checkpoint_dir && j->start_usec != 0);
	if (j->resume_scan_pending) {
		j->resume_scan_since_usec = now_usec;
		c->resume_scan_wanted = true;
	}
}

/* End @j's wait for its scan: freeze the newest checkpoint known, refund the wait. */
static void resume_scan_end(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			    const char *how)
{
	char *resume = NULL;

	if (j->checkpoint_path) {
		resume = strdup(j->checkpoint_path);
		if (!resume)
			return; /* keep waiting: the next scan or the tick tries again */
	}
	free(j->resume_path);
	j->resume_path = resume;
	sched_job_set_resume_scan_pending(c, j, false);
	/* its processes did not run while it waited: no time_limit spent */
	if (j->run_since_usec && now_usec > j->resume_scan_since_usec) {
		uint64_t from = j->resume_scan_since_usec > j->run_since_usec ?
					j->resume_scan_since_usec : j->run_since_usec;

		if (now_usec > from)
			j->run_since_usec += now_usec - from;
	}
	j->change_usec = now_usec;
	sched_job_touch(c, j);
	sched_cluster_changed(c);
	sched_event_add(c, now_usec, SCHED_EV_CHECKPOINT, j, NULL, -1,
			"generation %u resumes from %s (%s)", j->generation,
			j->resume_path ? j->resume_path : "no checkpoint", how);
}

int sched_job_resume_scanned(struct sched_cluster *c, const char *name, unsigned generation,
			     const char *path, uint64_t step, uint64_t mtime_usec,
			     uint64_t now_usec)
{
	struct sched_job *j = sched_cluster_find_job(c, name);
	int r;

	if (!j)
		return -ENOENT;
	if (path) {
		r = sched_job_checkpoint_found(c, name, step, path, mtime_usec, now_usec);
		if (r < 0)
			return r;
	}
	if (!j->resume_scan_pending || j->generation != generation)
		return 0;
	resume_scan_end(c, j, now_usec, "checkpoint_dir read when the generation began");
	return j->resume_scan_pending ? -ENOMEM : 1;
}

void sched_job_set_resume_scan_pending(struct sched_cluster *c, struct sched_job *j,
				       bool pending)
{
	struct sched_dirty_link *d = &j->resume_wait;

	j->resume_scan_pending = pending;
	if (pending && !d->linked) {
		d->linked = true;
		d->next = NULL;
		d->prev = c->resume_wait_tail;
		if (d->prev)
			d->prev->resume_wait.next = j;
		else
			c->resume_wait_head = j;
		c->resume_wait_tail = j;
		c->resume_wait_count++;
	} else if (!pending && d->linked) {
		if (d->prev)
			d->prev->resume_wait.next = d->next;
		else
			c->resume_wait_head = d->next;
		if (d->next)
			d->next->resume_wait.prev = d->prev;
		else
			c->resume_wait_tail = d->prev;
		memset(d, 0, sizeof(*d));
		c->resume_wait_count--;
	}
}

unsigned sched_job_resume_scan_expire(struct sched_cluster *c, uint64_t now_usec)
{
	uint64_t bound = (uint64_t)SCHED_RESUME_SCAN_TIMEOUT_SEC * 1000000u;
	struct sched_job *j, *next;
	unsigned n = 0;
	char how[128];

	/* next taken first: a wait that ends leaves the list */
	for (j = c->resume_wait_head; j; j = next) {
		next = j->resume_wait.next;
		if (now_usec < j->resume_scan_since_usec + bound)
			continue;
		snprintf(how, sizeof(how), "checkpoint_dir did not answer within %u s; the newest "
					   "checkpoint known before", SCHED_RESUME_SCAN_TIMEOUT_SEC);
		resume_scan_end(c, j, now_usec, how);
		n++;
	}
	return n;
}

void sched_job_free(struct sched_job *j)
{
	if (!j)
		return;
	assert(j->slice_count == 0);
	conf_job_spec_free(j->spec);
	free(j->spec_text);
	free(j->slices);
	free(j->checkpoint_path);
	free(j->resume_path);
	free(j->restart_why);
	free(j->roles);
	free(j->exited_ok);
	free(j->exited_bad);
	free(j->usage);
	free(j->deps);
	free(j->array);
	sched_ladder_free(&j->ladder);
	sched_history_free(j);
	sched_reason_put(j->reason);
	sched_reason_put(j->preempted_by);
	sched_reason_put(j->stop_server);
	free(j);
}

static int jobs_reserve(struct sched_cluster *c)
{
	struct sched_job **n;
	size_t cap;

	if (c->job_count < c->job_cap)
		return 0;
	cap = c->job_cap ? c->job_cap * 2 : 64;
	n = realloc(c->jobs, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->jobs = n;
	c->job_cap = cap;
	return 0;
}

void sched_job_touch(struct sched_cluster *c, struct sched_job *job)
{
	touch_lists(c, job, ~0u);
}

/* Put @job at the tail of dirty list @l, unless it is on it. */
static void dirty_link(struct sched_cluster *c, struct sched_job *job, int l)
{
	struct sched_dirty_link *d = &job->dirty[l];

	if (d->linked)
		return;
	d->linked = true;
	d->next = NULL;
	d->prev = c->dirty_tail[l];
	if (d->prev)
		d->prev->dirty[l].next = job;
	else
		c->dirty_head[l] = job;
	c->dirty_tail[l] = job;
	c->dirty_count[l]++;
}

static void touch_lists(struct sched_cluster *c, struct sched_job *job, unsigned lists)
{
	job->version++;
	c->mutations++;
	for (int l = 0; l < SCHED_DIRTY_LIST_COUNT; l++)
		if (lists & (1u << l))
			dirty_link(c, job, l);
}

void sched_job_mark_unannounced(struct sched_cluster *c, struct sched_job *job)
{
	dirty_link(c, job, SCHED_DIRTY_NOTIFY);
}

static void dirty_unlink(struct sched_cluster *c, struct sched_job *j, int l)
{
	struct sched_dirty_link *d = &j->dirty[l];

	if (!d->linked)
		return;
	if (d->prev)
		d->prev->dirty[l].next = d->next;
	else
		c->dirty_head[l] = d->next;
	if (d->next)
		d->next->dirty[l].prev = d->prev;
	else
		c->dirty_tail[l] = d->prev;
	memset(d, 0, sizeof(*d));
	c->dirty_count[l]--;
}

struct sched_job *sched_dirty_pop(struct sched_cluster *c, enum sched_dirty_list list)
{
	struct sched_job *j = c->dirty_head[list];

	if (j)
		dirty_unlink(c, j, list);
	return j;
}

static void jobs_remove_at(struct sched_cluster *c, size_t i)
{
	if (c->track_removals) {
		if (c->removed_count == c->removed_cap) {
			size_t cap = c->removed_cap ? c->removed_cap * 2 : 64;
			uint64_t *n = realloc(c->removed_serials, cap * sizeof(*n));

			if (n) {
				c->removed_serials = n;
				c->removed_cap = cap;
			}
		}
		if (c->removed_count < c->removed_cap)
			c->removed_serials[c->removed_count++] = c->jobs[i]->serial;
		else
			c->removed_overflow = true;
	}
	for (int l = 0; l < SCHED_DIRTY_LIST_COUNT; l++)
		dirty_unlink(c, c->jobs[i], l);
	sched_job_set_resume_scan_pending(c, c->jobs[i], false);
	c->jobs_dropped++;
	sched_jobs_unindex(c, c->jobs[i]);
	sched_limits_account(c, c->jobs[i], c->jobs[i]->state, SCHED_JOB_NONE);
	sched_job_free(c->jobs[i]);
	memmove(&c->jobs[i], &c->jobs[i + 1], (c->job_count - i - 1) * sizeof(c->jobs[0]));
	c->job_count--;
	sched_cluster_changed(c);
}

/* Position in c->jobs of the job called @name, or -1: the name index answers whether
 * there is one (a submission of a new name costs no walk); only a record about to be
 * dropped is looked for in the array, by pointer, as its removal moves the rest anyway. */
static ssize_t job_index(struct sched_cluster *c, const char *name)
{
	const struct sched_job *j = sched_cluster_find_job(c, name);

	if (!j)
		return -1;
	for (size_t i = c->job_count; i-- > 0;)
		if (c->jobs[i] == j)
			return (ssize_t)i;
	return -1;
}

/*
 * Index of the finished record that ended first, or -1 when every job is active. A held
 * one (sched_hold) is not a candidate: its holder's submission replaces it.
 */
static ssize_t oldest_finished(const struct sched_cluster *c)
{
	ssize_t best = -1;

	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (sched_job_state_is_terminal(j->state) && !j->held &&
		    (best < 0 || j->end_usec < c->jobs[best]->end_usec))
			best = (ssize_t)i;
	}
	return best;
}

/* ---- max_job_count: records, and holds on records a submission will need ---- */

/*
 * A sched_hold is a record under max_job_count set aside for a submission that has been
 * checked and will be made later (the daemon checks a spec at close and submits it at
 * release): it is what makes the check's answer the submission's. The rule all of this
 * keeps: the records no new job may push out (active ones, drafts, held finished ones)
 * plus the holds without a record of their own never exceed max_job_count, so every
 * hold's submission finds a record (its own, a free slot, or an unheld finished one to
 * drop). A held name is the holder's: anyone else's submission, rejection or draft of
 * it is -EBUSY.
 */

static struct sched_hold *hold_find(const struct sched_cluster *c, const char *name)
{
	struct sched_hold *h;

	if (!c->hold_index) {
		for (h = c->holds; h; h = h->next)
			if (strcmp(h->name, name) == 0)
				return h;
		return NULL;
	}
	for (h = c->hold_index[sched_name_hash(name) & (c->hold_index_cap - 1)]; h;
	     h = h->index_next)
		if (strcmp(h->name, name) == 0)
			return h;
	return NULL;
}

static void hold_index_put(struct sched_hold **index, size_t cap, struct sched_hold *h)
{
	struct sched_hold **head = &index[sched_name_hash(h->name) & (cap - 1)];

	h->index_next = *head;
	*head = h;
}

/* Index @h, new on the list: the index grows with the holds (twice the chains at one
 * hold a chain); without memory it stays as it is, or goes (the list is searched). */
static void hold_index_add(struct sched_cluster *c, struct sched_hold *h)
{
	if (c->hold_count >= c->hold_index_cap) {
		size_t cap = c->hold_index_cap ? 2 * c->hold_index_cap : 64;
		struct sched_hold **grown = calloc(cap, sizeof(*grown));

		if (grown) {
			for (struct sched_hold *o = c->holds; o; o = o->next)
				if (o != h)
					hold_index_put(grown, cap, o);
			free(c->hold_index);
			c->hold_index = grown;
			c->hold_index_cap = cap;
		}
	}
	if (c->hold_index)
		hold_index_put(c->hold_index, c->hold_index_cap, h);
}

static void hold_index_remove(struct sched_cluster *c, const struct sched_hold *h)
{
	struct sched_hold **pp;

	if (!c->hold_index)
		return;
	pp = &c->hold_index[sched_name_hash(h->name) & (c->hold_index_cap - 1)];
	while (*pp && *pp != h)
		pp = &(*pp)->index_next;
	if (*pp)
		*pp = h->index_next;
}

/*
 * Records no new job may push out (drafts and active ones, which sched_limits.c counts
 * at every transition, and held finished ones), plus the holds that will need a record of
 * their own: O(holds), which open uploads bound, not O(records), so that a cluster whose
 * history is full (job_count at max_job_count, the steady state) checks in constant time.
 */
static size_t records_spoken_for(struct sched_cluster *c)
{
	size_t n = c->live_job_count;

	for (const struct sched_hold *h = c->holds; h; h = h->next) {
		const struct sched_job *j = sched_cluster_find_job(c, h->name);

		n += !j || sched_job_state_is_terminal(j->state);
	}
	return n;
}

/*
 * Is there room under max_job_count for an active record (pending, running or a draft) of
 * @name, held by @own (NULL = none)? A record the name has that already counts is
 * replaced in place; any other takes one more.
 */
static bool job_room(struct sched_cluster *c, const char *name, const struct sched_hold *own)
{
	const struct sched_job *old = sched_cluster_find_job(c, name);

	if (own && strcmp(own->name, name) == 0)
		return true; /* counted since the hold was taken */
	if (old && (!sched_job_state_is_terminal(old->state) || old->held))
		return true;
	/* records and holds together bound what is spoken for: the common case is O(1) */
	if (c->job_count + c->hold_count < c->conf->max_job_count)
		return true;
	return records_spoken_for(c) < c->conf->max_job_count;
}

int sched_holds_check(const struct sched_cluster *c, char *reason)
{
	size_t n = 0, indexed = 0;

	for (const struct sched_hold *h = c->holds; h && n <= c->hold_count; h = h->next, n++)
		if (hold_find(c, h->name) != h) {
			sched_reason(reason, "hold of %s is not found by its name", h->name);
			return -EUCLEAN;
		}
	for (size_t i = 0; c->hold_index && i < c->hold_index_cap; i++)
		for (const struct sched_hold *h = c->hold_index[i]; h && indexed <= n;
		     h = h->index_next)
			indexed++;
	if (n != c->hold_count || (c->hold_index && indexed != n)) {
		sched_reason(reason, "%zu holds listed, %zu indexed, but the counter says %zu", n,
			     indexed, c->hold_count);
		return -EUCLEAN;
	}
	return 0;
}

void sched_holds_free(struct sched_cluster *c)
{
	while (c->holds) {
		struct sched_hold *h = c->holds;

		c->holds = h->next;
		free(h);
	}
	c->hold_count = 0;
	free(c->hold_index);
	c->hold_index = NULL;
	c->hold_index_cap = 0;
}

void sched_hold_drop(struct sched_cluster *c, struct sched_hold **hold)
{
	struct sched_hold *h = *hold;
	struct sched_job *j;

	if (!h)
		return;
	*hold = NULL;
	if (h->prev)
		h->prev->next = h->next;
	else
		c->holds = h->next;
	if (h->next)
		h->next->prev = h->prev;
	hold_index_remove(c, h);
	c->hold_count--;
	j = sched_cluster_find_job(c, h->name);
	if (j)
		j->held = false;
	free(h);
}

/* A new hold on @name for @uid (the caller checked room and the name). */
static int hold_take(struct sched_cluster *c, const char *name, uid_t uid,
		     const struct conf_queue *queue, struct sched_hold **ret)
{
	struct sched_hold *h = calloc(1, sizeof(*h));
	struct sched_job *j;

	if (!h)
		return -ENOMEM;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->uid = uid;
	h->queue = queue;
	h->next = c->holds;
	if (h->next)
		h->next->prev = h;
	c->holds = h;
	hold_index_add(c, h);
	c->hold_count++;
	j = sched_cluster_find_job(c, name);
	if (j)
		j->held = true;
	*ret = h;
	return 0;
}

/*
 * A new job object in state NONE appended to the list (replacing a terminal one). One
 * that is to be @active (not a rejection) needs room under max_job_count (job_room);
 * any needs a record, freed by dropping the finished one that ended first when all are
 * taken.
 */
static int job_new(struct sched_cluster *c, const char *name, bool active, uid_t uid,
		   gid_t gid, uint64_t now_usec, struct sched_job **ret)
{
	struct sched_job *j;
	ssize_t old = job_index(c, name);

	if (active && !job_room(c, name, NULL))
		return -EAGAIN;
	/* at max_job_count: drop the finished record that ended first (as Slurm purges) */
	if (old < 0 && c->job_count >= c->conf->max_job_count) {
		ssize_t drop = oldest_finished(c);

		if (drop < 0)
			return -EAGAIN;
		sched_event_add(c, now_usec, SCHED_EV_REMOVED, c->jobs[drop], NULL, -1,
				"finished record dropped: the cluster keeps at most %u jobs "
				"(max_job_count)", c->conf->max_job_count);
		jobs_remove_at(c, (size_t)drop);
	}
	/* allocate first: a refused submission must not lose the old record */
	if (jobs_reserve(c) < 0)
		return -ENOMEM;
	j = sched_job_alloc();
	if (!j)
		return -ENOMEM;
	j->reason = j->preempted_by = j->stop_server = "";
	if (old >= 0) {
		/* generations go on counting: a report about the old job's processes (an
		 * exit, a log dir) can never be taken for the new one's */
		j->generation = c->jobs[old]->generation;
		jobs_remove_at(c, (size_t)old);
	}
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->serial = ++c->next_job_serial;
	j->uid = uid;
	j->gid = gid;
	j->state = SCHED_JOB_NONE;
	j->submit_usec = now_usec;
	j->eligible_usec = now_usec;
	j->change_usec = now_usec;
	sched_jobs_append(c, j);
	/* a new record is a change for every reader (its directory appears) */
	sched_job_touch(c, j);
	*ret = j;
	return 0;
}

/* May @uid, holding @own (NULL = no hold), use @name now? 0 or -EINVAL, -EBUSY, -EEXIST, -EPERM. */
static int job_name_check(struct sched_cluster *c, const char *name, uid_t uid,
			  const struct sched_hold *own, struct sched_job **ret_existing)
{
	struct sched_job *old;
	const struct sched_hold *h;

	if (!conf_job_name_is_valid(name))
		return -EINVAL;
	old = sched_cluster_find_job(c, name);
	*ret_existing = old;
	/* <service>.<digits> is a serving service's instance name, never a job's own; nor
	 * are <service>.controller and .coordinator, its roles' runs */
	if (sched_service_owning_name(c, name) || sched_array_owning_name(c, name))
		return -EEXIST;
	h = c->holds ? hold_find(c, name) : NULL;
	if (h && h != own)
		return -EBUSY; /* checked and accepted for someone, submitted soon */
	if (!old)
		return 0;
	if (!sched_job_state_is_terminal(old->state) && old->state != SCHED_JOB_DRAFT)
		return -EEXIST;
	/* a finished job's record and a draft belong to their owner */
	if (uid != 0 && uid != old->uid)
		return -EPERM;
	return 0;
}

int sched_job_may_submit(struct sched_cluster *c, const char *name, uid_t uid)
{
	struct sched_job *old;

	return job_name_check(c, name, uid, NULL, &old);
}

int sched_job_create_draft(struct sched_cluster *c, const char *name, uid_t uid, gid_t gid,
			   uint64_t now_usec, struct sched_job **ret)
{
	return sched_job_create_draft_as(c, name, uid, gid, false, now_usec, NULL, ret);
}

/*
 * A refusal for want of a record (-EAGAIN: max_job_count or a job-count limit) is a
 * "refused" event of cluster/events, as a refused create is: the writer sees only the
 * errno, and no record of the job exists to carry the reason. @name is a valid job name.
 */
static void __attribute__((format(printf, 3, 4)))
note_no_room(struct sched_cluster *c, uint64_t now_usec, const char *fmt, ...)
{
	char line[SCHED_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sched_cluster_note_refusal(c, NULL, line, now_usec);
}

static void max_job_count_reason(const struct sched_cluster *c, char *reason)
{
	sched_reason(reason, "the cluster already holds %u active jobs, its max_job_count; "
			     "submit again when some have ended",
		     c->conf->max_job_count);
}

int sched_job_create_draft_as(struct sched_cluster *c, const char *name, uid_t uid, gid_t gid,
			      bool is_operator, uint64_t now_usec, char *reason,
			      struct sched_job **ret)
{
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *old, *j;
	uint64_t mark = c->mutations;
	int r;

	r = job_name_check(c, name, uid, NULL, &old);
	if (r < 0)
		return r;
	if (old && old->state == SCHED_JOB_DRAFT)
		return -EEXIST;
	/* as sched_job_check_as: max_job_count first, then the job-count limits */
	if (!job_room(c, name, NULL)) {
		max_job_count_reason(c, why);
		r = -EAGAIN;
	} else {
		r = sched_limits_check(c, name, NULL, uid, is_operator, why);
	}
	if (r == 0)
		r = job_new(c, name, true, uid, gid, now_usec, &j);
	if (r == -EAGAIN) {
		note_no_room(c, now_usec, "mkdir jobs/%.64s by uid %u refused: %.400s", name,
			     (unsigned)uid, why);
		if (reason)
			snprintf(reason, SCHED_REASON_MAX, "%s", why);
	}
	if (r < 0)
		return r;
	sched_job_transition(c, j, SCHED_JOB_DRAFT, SCHED_EV_SUBMITTED, now_usec,
			     "draft: write a spec into spec to submit it");
	sched_pass_absorb(c, mark); /* a draft is nothing to a pass (it waits for its spec) */
	if (ret)
		*ret = j;
	return 0;
}

static const struct conf_server_type *cluster_type(const struct sched_cluster *c,
						   const char *name)
{
	for (size_t i = 0; i < c->server_count; i++)
		if (strcmp(c->servers[i].conf->type->name, name) == 0)
			return c->servers[i].conf->type;
	return NULL;
}

static void queue_list(const struct sched_cluster *c, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < c->conf->queue_count && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
					c->conf->queues[i].name);
}

/* @sec as the shortest duration a spec may write: "90m", "5h", "2d" */
static void duration_text(uint64_t sec, char *buf, size_t len)
{
	if (sec && sec % 86400 == 0)
		snprintf(buf, len, "%llud", (unsigned long long)(sec / 86400));
	else if (sec && sec % 3600 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(sec / 3600));
	else if (sec && sec % 60 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(sec / 60));
	else
		snprintf(buf, len, "%llus", (unsigned long long)sec);
}

/*
 * The job caps of queue @q (issue 14: a user's priority-1000 job for the whole cluster
 * preempted root's). As Slurm's partition MaxTime and MaxNodes bind users but not root
 * or SlurmUser (slurm.conf(5)), and Volcano leaves priority classes to the cluster
 * admin, root and operators may exceed them; anyone else gets -EACCES, like a queue's
 * `groups`.
 */
int sched_job_caps_check(const struct sched_cluster *c, const struct conf_queue *q,
			 const struct conf_job_spec *spec, uid_t uid, bool is_operator,
			 char *reason)
{
	char who[96], want[32], cap[32];
	bool elastic = spec->npus_min != spec->npus_max;

	if (uid == 0 || is_operator)
		return 0;
	if (c->conf->operator_group)
		snprintf(who, sizeof(who),
			 "only root and members of operator_group \"%s\" may exceed it",
			 c->conf->operator_group);
	else
		snprintf(who, sizeof(who), "only root may exceed it");
	if (spec->priority > q->max_priority) {
		sched_reason(reason, "priority %u exceeds queue \"%s\"'s max_priority %u for uid %u "
				     "(%s); lower priority to at most %u or ask an operator",
			     spec->priority, q->name, q->max_priority, (unsigned)uid, who,
			     q->max_priority);
		return -EACCES;
	}
	if (q->max_npus && spec->npus_max > q->max_npus) {
		sched_reason(reason, "npus %s%u exceeds queue \"%s\"'s max_npus %u for uid %u (%s); "
				     "ask for at most %u NPUs%s or ask an operator",
			     elastic ? "max " : "", spec->npus_max, q->name, q->max_npus,
			     (unsigned)uid, who, q->max_npus, elastic ? " as the max" : "");
		return -EACCES;
	}
	if (q->max_time_limit_sec && spec->time_limit_sec > q->max_time_limit_sec) {
		duration_text(spec->time_limit_sec, want, sizeof(want));
		duration_text(q->max_time_limit_sec, cap, sizeof(cap));
		sched_reason(reason, "time_limit %s exceeds queue \"%s\"'s max_time_limit %s for "
				     "uid %u (%s); ask for at most %s (or leave time_limit out) or "
				     "ask an operator",
			     want, q->name, cap, (unsigned)uid, who, cap);
		return -EACCES;
	}
	return 0;
}

int sched_job_check(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
		    char *reason)
{
	return sched_job_check_as(c, spec, uid, false, reason);
}

/* sched_job_check_as() for a submitter holding @own (NULL = none) */
static int job_check(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
		     bool is_operator, const struct sched_hold *own, char *reason)
{
	const struct conf_queue *queue;
	const struct conf_server_type *type = NULL;
	struct sched_job *old;
	char known[256];
	int r;

	r = job_name_check(c, spec->name, uid, own, &old);
	if (r == -EBUSY) {
		sched_reason(reason, "job \"%s\" is being submitted by another open file, its "
				     "spec accepted at a close; try again once that file is closed, "
				     "or choose another name", spec->name);
		return r;
	}
	if (r == -EINVAL) {
		sched_reason(reason, "name: \"%s\" is not a valid job name; use lowercase letters, "
				     "digits, '.', '_' and '-' (at most 63)", spec->name);
		return r;
	}
	if (r == -EEXIST && sched_service_owning_name(c, spec->name)) {
		sched_reason(reason, "job \"%s\" is a name of service %s's instances "
				     "(<service>.<index>) or roles (<service>.controller, "
				     "<service>.coordinator); choose another name",
			     spec->name, sched_service_owning_name(c, spec->name)->name);
		return r;
	}
	if (r == -EEXIST && sched_array_owning_name(c, spec->name)) {
		sched_reason(reason, "job \"%s\" is the name of an element of array %s "
				     "(<array>.<index>), active; choose another name",
			     spec->name, sched_array_owning_name(c, spec->name)->name);
		return r;
	}
	if (r == -EEXIST) {
		sched_reason(reason, "job \"%s\" already exists and is %s; cancel or remove it "
				     "first, or choose another name",
			     spec->name, sched_job_state_name(old->state));
		return r;
	}
	if (r == -EPERM) {
		sched_reason(reason, "job \"%s\" belongs to uid %u; choose another name",
			     spec->name, (unsigned)old->uid);
		return r;
	}
	if (!job_room(c, spec->name, own)) {
		max_job_count_reason(c, reason);
		return -EAGAIN;
	}
	r = sched_service_check(c, spec, uid, reason);
	if (r < 0)
		return r;
	r = sched_array_check(c, spec, uid, reason);
	if (r < 0)
		return r;
	r = sched_deps_check(c, spec, reason);
	if (r < 0)
		return r;
	queue = conf_cluster_find_queue(c->conf, spec->queue);
	if (!queue) {
		queue_list(c, known, sizeof(known));
		sched_reason(reason, "queue: unknown queue \"%s\"; known queues: %s", spec->queue,
			     known);
		return -EINVAL;
	}
	r = sched_job_caps_check(c, queue, spec, uid, is_operator, reason);
	if (r < 0)
		return r;
	r = sched_limits_check(c, spec->name, queue, uid, is_operator, reason);
	if (r < 0)
		return r;
	if (c->conf->enable_quota_limit) {
		const struct conf_queue *q = conf_cluster_find_queue(c->conf, spec->queue);

		/* a queue that may borrow can run it on idle NPUs beyond its quota */
		if (q->quota_npus && spec->npus_min > q->quota_npus && !q->may_borrow) {
			sched_reason(reason, "queue %s has a quota of %u %s and this job needs "
					     "%u; use a queue with a larger quota or ask for fewer",
				     q->name, q->quota_npus,
				     conf_plural(q->quota_npus, "NPU", "NPUs"), spec->npus_min);
			return -ENOSPC;
		}
	}
	for (size_t i = 0; i < spec->recovery_count; i++)
		if (!(c->conf->recovery_allowed & (1u << spec->recovery[i]))) {
			enum conf_recovery allowed[CONF_RECOVERY_COUNT];
			size_t n = 0;

			for (unsigned k = 0; k < CONF_RECOVERY_COUNT; k++)
				if (c->conf->recovery_allowed & (1u << k))
					allowed[n++] = (enum conf_recovery)k;
			conf_recovery_list_text(allowed, n, known, sizeof(known));
			sched_reason(reason, "recovery: %s is not allowed on this cluster "
					     "(cluster: recovery_strategies: [%s]); leave it out "
					     "of the list or ask the cluster's operators",
				     conf_recovery_name(spec->recovery[i]), known);
			return -EINVAL;
		}
	if (spec->server_type) {
		type = cluster_type(c, spec->server_type);
		if (!type) {
			sched_reason(reason, "server_type: this cluster has no \"%s\" servers",
				     spec->server_type);
			return -EINVAL;
		}
	}
	if (spec->npus_min != spec->npus_max) {
		/* the step of its sizes (sched_elastic.c size_unit()) */
		unsigned unit = (spec->tp ? spec->tp : 1) * (spec->cp ? spec->cp : 1) *
				(spec->pp ? spec->pp : 1) * (spec->ep ? spec->ep : 1);

		/* elastic: some size of the range must be legal and able to run here */
		if (sched_elastic_min(c, spec, type))
			return 0;
		r = sched_check_feasible(c, spec->npus_min, type, reason);
		sched_reason(reason, "npus: no size from %u to %u%s can run on this cluster "
				     "(sizes must suit the HCCS rule, be whole servers above one "
				     "server%s); for %u: %.200s",
			     spec->npus_min, spec->npus_max,
			     unit > 1 ? " that is a multiple of tp * cp * pp * ep" : "",
			     unit > 1 ? " and multiples of tp * cp * pp * ep" : "",
			     spec->npus_min, r < 0 ? reason : "it does not suit tp * cp * pp * ep");
		return r < 0 ? r : -EINVAL;
	}
	return sched_check_feasible(c, spec->npus, type, reason);
}

int sched_job_submit(struct sched_cluster *c, struct conf_job_spec *spec, uid_t uid, gid_t gid,
		     uint64_t now_usec, char *reason, struct sched_job **ret)
{
	return sched_job_submit_as(c, spec, uid, gid, false, now_usec, reason, ret);
}

int sched_job_check_as(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
		       bool is_operator, char *reason)
{
	return job_check(c, spec, uid, is_operator, NULL, reason);
}

int sched_job_check_hold(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
			 bool is_operator, char *reason, struct sched_hold **io_hold)
{
	int r;

	if (*io_hold && (strcmp((*io_hold)->name, spec->name) != 0 || (*io_hold)->uid != uid))
		sched_hold_drop(c, io_hold);
	r = job_check(c, spec, uid, is_operator, *io_hold, reason);
	if (r == 0 && *io_hold) /* a spec written again may name another queue */
		(*io_hold)->queue = conf_cluster_find_queue(c->conf, spec->queue);
	if (r == 0 && !*io_hold &&
	    hold_take(c, spec->name, uid, conf_cluster_find_queue(c->conf, spec->queue),
		      io_hold) < 0) {
		sched_reason(reason, "out of memory");
		r = -ENOMEM;
	}
	if (r < 0)
		sched_hold_drop(c, io_hold);
	return r;
}

/*
 * Array @a was admitted: the ended records of an earlier run's elements (its names,
 * sched_array_check() found them ended and its owner's) go, so that no record of that
 * run reads as this one's.
 */
static void forget_elements(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec)
{
	for (unsigned i = 0; i <= CONF_ARRAY_INDEX_MAX; i++) {
		char name[CONF_NAME_MAX + 16];
		ssize_t k;

		if (!conf_job_array_has(&a->spec->array, i))
			continue;
		snprintf(name, sizeof(name), "%s.%u", a->name, i);
		k = job_index(c, name);
		/* (one an open file's submission is to replace stays: sched_hold) */
		if (k < 0 || !sched_job_state_is_terminal(c->jobs[k]->state) || c->jobs[k]->held)
			continue;
		sched_event_add(c, now_usec, SCHED_EV_REMOVED, c->jobs[k], NULL, -1,
				"record removed: array %s was submitted again", a->name);
		jobs_remove_at(c, (size_t)k);
	}
}

/*
 * Admit @spec (stolen), checked by the caller, as job @spec->name of @uid/@gid; with
 * @service, as an instance of that service (sched_service.c); with @array, as its
 * element @index (sched_array.c).
 */
static int job_admit_as(struct sched_cluster *c, struct conf_job_spec *spec, uid_t uid,
			gid_t gid, const char *service, const struct sched_job *array,
			unsigned index, uint64_t now_usec, char *reason, struct sched_job **ret)
{
	const struct conf_queue *q;
	struct sched_job *old, *j;
	struct sched_dep *deps = NULL;
	char *text = NULL;
	size_t len = 0;
	uint64_t mark = c->mutations;
	int r;

	/* Slurm: a job without a time limit gets the partition's DefaultTime, else MaxTime;
	 * a service runs until cancelled */
	q = conf_cluster_find_queue(c->conf, spec->queue);
	if (!spec->time_limit_sec && spec->kind != CONF_JOB_SERVICE)
		spec->time_limit_sec = q->default_time_limit_sec ? q->default_time_limit_sec :
								   q->max_time_limit_sec;
	r = conf_job_spec_render_yaml(spec, &text, &len);
	if (r < 0) {
		sched_reason(reason, "out of memory");
		goto fail;
	}
	deps = sched_deps_prepare(c, spec); /* before job_new() may drop a record */
	old = sched_cluster_find_job(c, spec->name);
	if (old && old->state == SCHED_JOB_DRAFT) {
		j = old;
	} else {
		r = job_new(c, spec->name, true, uid, gid, now_usec, &j);
		if (r < 0) {
			free(text);
			free(deps);
			if (r == -EAGAIN)
				max_job_count_reason(c, reason);
			else
				sched_reason(reason, "out of memory");
			goto fail;
		}
	}
	j->spec_text = text;
	j->spec_len = len;
	j->spec = spec;
	/* an elastic range starts at its smallest usable size (spec_text keeps what was
	 * written) */
	if (spec->npus_min != spec->npus_max) {
		spec->npus_min = sched_elastic_min(c, spec, sched_job_type(c, j));
		spec->npus = spec->npus_min;
	}
	j->submit_usec = now_usec;
	j->eligible_usec = array ? array->eligible_usec : now_usec;
	/* an array's elements take its place in the queue, in index order: it keeps the
	 * numbers after its own for them (Slurm: an array's tasks keep its submit time) */
	if (array) {
		j->queue_seq = array->queue_seq + 1 + index;
	} else {
		j->queue_seq = c->next_queue_seq++;
		if (spec->array.count)
			c->next_queue_seq += CONF_ARRAY_INDEX_MAX + 1;
	}
	j->queue_index = (size_t)(conf_cluster_find_queue(c->conf, spec->queue) - c->conf->queues);
	j->prio = spec->priority;
	j->need_min = spec->npus_min;
	j->need_max = spec->npus_max;
	j->type_mask = sched_type_mask(c, spec->npus_min, sched_job_type(c, j));
	if (service)
		snprintf(j->service, sizeof(j->service), "%s", service);
	if (array) {
		j->array_serial = array->serial;
		j->array_index = index;
	}
	j->array_record = sched_job_is_array(j);
	if (spec->array.count && !array) {
		char set[CONF_ARRAY_TEXT_MAX], why[SCHED_REASON_MAX];
		bool waits = false;

		for (unsigned k = 0; deps && k < spec->after_count; k++)
			waits |= !deps[k].met;
		sched_reason(why, "array %.300s of %u %s: %s",
			     conf_job_array_text(&spec->array, true, set, sizeof(set)),
			     spec->array.count, conf_plural(spec->array.count, "element",
							    "elements"),
			     waits ? "waiting for its dependencies" : "making its elements");
		if (ret)
			*ret = j;
		forget_elements(c, j, now_usec);
		if (!waits) {
			free(deps);
			sched_job_transition(c, j, SCHED_JOB_ARRAY, SCHED_EV_SUBMITTED, now_usec,
					     why);
			sched_array_admitted(c, j, now_usec);
			return 0;
		}
		/* it waits as a whole, pending (never placed: sched_job_is_held()), on the
		 * records its after: named now; then its elements are made */
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_SUBMITTED, now_usec, why);
		if (sched_array_alloc(j) < 0) {
			free(deps);
			deps = NULL;
		}
		if (!deps || sched_deps_attach(c, j, deps, now_usec) < 0)
			sched_job_transition(c, j, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED,
					     now_usec, "out of memory for its dependencies; "
						       "cancelled");
		return 0;
	}
	if (spec->kind == CONF_JOB_SERVICE && !service) {
		char why[SCHED_REASON_MAX];

		free(deps); /* none: a service has no after: */

		sched_reason(why, "serving: %u %s of %u %s on port %u", spec->replicas,
			     conf_plural(spec->replicas, "replica", "replicas"), spec->npus,
			     conf_plural(spec->npus, "NPU", "NPUs"), spec->port);
		sched_job_transition(c, j, SCHED_JOB_SERVING, SCHED_EV_SUBMITTED, now_usec, why);
		if (ret)
			*ret = j;
		sched_service_admitted(c, j, now_usec);
		return 0;
	}
	sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_SUBMITTED, now_usec,
			     "waiting for the first scheduling pass");
	/* `after:`: it waits for those jobs (or is cancelled, one having failed since the
	 * check at the close) */
	if (sched_deps_attach(c, j, deps, now_usec) < 0)
		sched_job_transition(c, j, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED, now_usec,
				     "out of memory for its dependencies; cancelled");
	sched_pass_absorb(c, mark); /* a new pending job: the kept pass gives it a turn */
	sched_pass_request(c, now_usec);
	if (ret)
		*ret = j;
	return 0;

fail:
	if (r == -EAGAIN)
		note_no_room(c, now_usec, "job %.64s by uid %u not submitted: %.400s", spec->name,
			     (unsigned)uid, reason ? reason : "");
	conf_job_spec_free(spec);
	return r;
}

static int job_admit(struct sched_cluster *c, struct conf_job_spec *spec, uid_t uid, gid_t gid,
		     uint64_t now_usec, char *reason, struct sched_job **ret)
{
	return job_admit_as(c, spec, uid, gid, NULL, NULL, 0, now_usec, reason, ret);
}

int sched_job_admit_instance(struct sched_cluster *c, struct conf_job_spec *spec,
			     const struct sched_job *svc, uint64_t now_usec, char *reason)
{
	return job_admit_as(c, spec, svc->uid, svc->gid, svc->name, NULL, 0, now_usec, reason,
			    NULL);
}

int sched_job_admit_element(struct sched_cluster *c, struct conf_job_spec *spec,
			    const struct sched_job *a, unsigned index, uint64_t now_usec,
			    char *reason)
{
	/* no record free: it waits, and says so in its array's reason, not in an event
	 * every tick */
	if (!job_room(c, spec->name, NULL)) {
		max_job_count_reason(c, reason);
		conf_job_spec_free(spec);
		return -EAGAIN;
	}
	return job_admit_as(c, spec, a->uid, a->gid, NULL, a, index, now_usec, reason, NULL);
}

int sched_job_submit_as(struct sched_cluster *c, struct conf_job_spec *spec, uid_t uid,
			gid_t gid, bool is_operator, uint64_t now_usec, char *reason,
			struct sched_job **ret)
{
	int r = sched_job_check_as(c, spec, uid, is_operator, reason);

	if (r < 0) {
		if (r == -EAGAIN) /* no record: cluster/events tells why */
			note_no_room(c, now_usec, "job %.64s by uid %u not submitted: %.400s",
				     spec->name, (unsigned)uid, reason ? reason : "");
		conf_job_spec_free(spec);
		return r;
	}
	return job_admit(c, spec, uid, gid, now_usec, reason, ret);
}

int sched_job_submit_held(struct sched_cluster *c, struct sched_hold **hold,
			  struct conf_job_spec *spec, uid_t uid, gid_t gid, uint64_t now_usec,
			  char *reason, struct sched_job **ret)
{
	struct sched_job *old;
	int r;

	if (!*hold || strcmp((*hold)->name, spec->name) != 0 || (*hold)->uid != uid) {
		sched_hold_drop(c, hold);
		conf_job_spec_free(spec);
		sched_reason(reason, "internal error: submitted under another job's hold");
		return -EINVAL;
	}
	/* the hold kept the name the holder's and its record: only these can have changed */
	r = job_name_check(c, spec->name, uid, *hold, &old);
	sched_hold_drop(c, hold);
	if (r < 0) {
		conf_job_spec_free(spec);
		sched_reason(reason, "job \"%s\" changed hands while its hold was taken",
			     spec->name);
		return r;
	}
	return job_admit(c, spec, uid, gid, now_usec, reason, ret);
}

int sched_job_reject(struct sched_cluster *c, const char *name, uid_t uid, gid_t gid,
		     const char *reason, uint64_t now_usec)
{
	struct sched_job *old, *j;
	int r;

	r = job_name_check(c, name, uid, NULL, &old);
	if (r < 0)
		return r;
	if (old && old->state == SCHED_JOB_DRAFT) {
		j = old;
	} else {
		r = job_new(c, name, false, uid, gid, now_usec, &j);
		if (r < 0)
			return r;
	}
	sched_job_transition(c, j, SCHED_JOB_REJECTED, SCHED_EV_REJECTED, now_usec, reason);
	return 0;
}

/* ---- stopping: NPUs stay held while the processes may still run ---- */

/*
 * What the reason of a job stopping towards a terminal state adds while it waits, and
 * what the final reason keeps: the text before it.
 */
#define STOP_HOLD_NOTE "; stopping: its NPUs stay held until its processes are gone"

void sched_job_begin_stop(struct sched_cluster *c, struct sched_job *j, enum sched_job_state to,
			  enum sched_event_kind kind, uint64_t now_usec, const char *reason)
{
	j->stop_deadline_usec = now_usec + sched_stop_overhead_usec(c);
	j->stop_to = to;
	j->stop_cancelled = false;
	j->stop_forget = false;
	j->stop_requeue = false;
	/* a fault's handler is running: the stop's end is about the same server and NPU */
	sched_text_set(c, &j->stop_server,
		       c->subject_job == j && c->subject_server ? c->subject_server : "",
		       CONF_NAME_MAX + 1);
	j->stop_npu = c->subject_job == j ? c->subject_npu : -1;
	for (size_t i = 0; i < j->slice_count; i++)
		j->slices[i].gone = false;
	sched_job_transition(c, j, SCHED_JOB_STOPPING, kind, now_usec, reason);
}

void sched_job_stop_for(struct sched_cluster *c, struct sched_job *j, enum sched_job_state to,
			enum sched_event_kind kind, uint64_t now_usec, const char *why)
{
	char reason[SCHED_REASON_MAX];

	snprintf(reason, sizeof(reason), "%.300s" STOP_HOLD_NOTE " (reported by its agents, or "
		 "in %u s at the latest)", why,
		 (unsigned)(sched_stop_overhead_usec(c) / 1000000u));
	sched_job_begin_stop(c, j, to, kind, now_usec, reason);
	for (size_t i = 0; i < j->slice_count; i++) {
		const struct sched_server *s = &c->servers[j->slices[i].server];

		if (s->state == SCHED_SERVER_UNKNOWN && !s->last_report_usec)
			j->slices[i].gone = true;
	}
}

static enum sched_event_kind end_kind(enum sched_job_state to)
{
	switch (to) {
	case SCHED_JOB_COMPLETED:
		return SCHED_EV_COMPLETED;
	case SCHED_JOB_FAILED:
		return SCHED_EV_FAILED;
	case SCHED_JOB_TIMEOUT:
		return SCHED_EV_TIMEOUT;
	default:
		return SCHED_EV_CANCELLED;
	}
}

static ssize_t job_index(struct sched_cluster *c, const char *name);
static void jobs_remove_at(struct sched_cluster *c, size_t i);

bool sched_job_finish_stop(struct sched_cluster *c, struct sched_job *j, bool gone,
			   uint64_t now_usec)
{
	char reason[SCHED_REASON_MAX];
	const char *how = gone ? "" : "; NPUs released at the stop deadline (no report said its "
				      "processes were gone)";
	enum sched_job_state to = j->stop_cancelled ? SCHED_JOB_CANCELLED : j->stop_to;
	char *cut;

	sched_alloc_release(c, j);
	if (to == SCHED_JOB_PENDING && j->spec && j->spec->time_limit_sec &&
	    sched_job_run_usec(j, now_usec) >= j->spec->time_limit_sec * 1000000u) {
		/* a victim whose time is used up does not run again */
		c->timeouts++;
		if (j->stop_requeue)
			sched_reason(reason, "requeued when its time limit of %llu s was used up; "
					     "not started again",
				     (unsigned long long)j->spec->time_limit_sec);
		else
			sched_reason(reason, "preempted by job %s when its time limit of %llu s "
					     "was used up; not requeued",
				     j->preempted_by, (unsigned long long)j->spec->time_limit_sec);
		sched_job_transition(c, j, SCHED_JOB_TIMEOUT, SCHED_EV_TIMEOUT, now_usec, reason);
	} else if (to == SCHED_JOB_PENDING) {
		j->requeue_cause = j->stop_requeue ? SCHED_REQUEUE_REQUESTED :
						     SCHED_REQUEUE_PREEMPTED;
		j->reason_key = 0;
		if (j->hold_kind)
			sched_job_hold_reason(j, reason);
		else if (j->stop_requeue)
			sched_reason(reason, "requeued; stopped, waits to start again from its "
					     "newest checkpoint");
		else
			sched_reason(reason, "preempted by job %s; stopped, waits to resume from "
					     "its checkpoint",
				     j->preempted_by);
		sched_job_transition(c, j, SCHED_JOB_PENDING, SCHED_EV_REQUEUED, now_usec, reason);
	} else if (to == SCHED_JOB_TIMEOUT) {
		c->timeouts++;
		sched_job_transition(c, j, SCHED_JOB_TIMEOUT, SCHED_EV_TIMEOUT, now_usec, j->reason);
	} else {
		snprintf(reason, sizeof(reason), "%s", j->reason);
		cut = strstr(reason, STOP_HOLD_NOTE);
		if (cut)
			*cut = '\0';
		else if (j->stop_cancelled)
			snprintf(reason, sizeof(reason), "cancelled while stopping");
		snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason), "%s", how);
		if (j->stop_server[0] && !j->stop_cancelled && c->subject_job != j) {
			const struct sched_job *was = c->subject_job;
			const char *was_server = c->subject_server;
			int was_npu = c->subject_npu;

			sched_job_subject(c, j, j->stop_server, j->stop_npu);
			sched_job_transition(c, j, to, end_kind(to), now_usec, reason);
			sched_job_subject(c, was, was_server, was_npu);
		} else {
			sched_job_transition(c, j, to, end_kind(to), now_usec, reason);
		}
	}
	if (!j->stop_forget)
		return false;
	sched_event_add(c, now_usec, SCHED_EV_REMOVED, j, NULL, -1,
			"job directory removed (rmdir while active): record dropped now that "
			"its NPUs are released");
	jobs_remove_at(c, (size_t)job_index(c, j->name));
	return true;
}

int sched_job_stop_check_gone(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	if (j->state != SCHED_JOB_STOPPING)
		return 0;
	for (size_t i = 0; i < j->slice_count; i++)
		if (!j->slices[i].gone)
			return 0;
	return sched_job_finish_stop(c, j, true, now_usec) ? 2 : 1;
}

void sched_job_fail_stop(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			 const char *why)
{
	sched_job_stop_for(c, j, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec, why);
	sched_job_stop_check_gone(c, j, now_usec);
}

/*
 * Stopping @j is cancelled too (a cancel or rmdir during a stop of another kind): it
 * keeps its deadline and ends cancelled. Returns true when something changed.
 */
static bool cancel_while_stopping(struct sched_cluster *c, struct sched_job *j, uid_t uid,
				  uint64_t now_usec)
{
	if (j->stop_cancelled || j->stop_to == SCHED_JOB_CANCELLED)
		return false;
	j->stop_cancelled = true;
	sched_job_touch(c, j);
	j->change_usec = now_usec;
	sched_cluster_changed(c);
	sched_event_add(c, now_usec, SCHED_EV_CANCELLED, j, NULL, -1,
			"cancelled by %s while stopping; its NPUs stay held until its processes "
			"are gone, then it ends cancelled",
			uid == j->uid ? "its owner" : "root");
	return true;
}

void sched_job_hold_reason(const struct sched_job *j, char *reason)
{
	if (j->hold_kind == SCHED_HOLD_ADMIN)
		sched_reason(reason, "held by root (an admin hold): it does not start until "
				     "root releases it (echo release > jobs/%s/ctl)", j->name);
	else
		sched_reason(reason, "held by its owner: it does not start until released (echo "
				     "release > jobs/%s/ctl)", j->name);
}

int sched_job_for_owner(struct sched_cluster *c, const char *name, uid_t uid,
			 struct sched_job **ret)
{
	struct sched_job *j = sched_cluster_find_job(c, name);

	if (!j)
		return -ENOENT;
	if (uid != 0 && uid != j->uid)
		return -EPERM;
	*ret = j;
	return 0;
}

int sched_job_cancel(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec)
{
	struct sched_job *j;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0)
		return r;
	if (sched_job_state_is_terminal(j->state))
		return 0;
	if (j->state == SCHED_JOB_STOPPING) {
		cancel_while_stopping(c, j, uid, now_usec);
		return 0;
	}
	sched_job_cancel_for(c, j, uid == j->uid ? "cancelled by its owner" : "cancelled by root",
			     now_usec);
	return 0;
}

void sched_job_cancel_for(struct sched_cluster *c, struct sched_job *j, const char *why,
			  uint64_t now_usec)
{
	if (sched_job_state_is_terminal(j->state))
		return;
	if (j->state == SCHED_JOB_STOPPING) {
		cancel_while_stopping(c, j, 0, now_usec);
		return;
	}
	if (j->state == SCHED_JOB_ARRAY) {
		/* it ends once its elements have stopped */
		sched_array_cancel(c, j, why, now_usec);
		return;
	}
	if (j->slice_count) {
		/* its processes may run on: the NPUs stay with it until they are gone */
		sched_job_stop_for(c, j, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED, now_usec, why);
		if (sched_job_stop_check_gone(c, j, now_usec))
			sched_pass_request(c, now_usec);
		return;
	}
	sched_job_transition(c, j, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED, now_usec, why);
	if (sched_job_is_service(j))
		sched_service_cancelled(c, j, now_usec);
	if (sched_job_is_array(j))
		sched_array_cancelled(c, j, now_usec);
	sched_pass_request(c, now_usec);
}

int sched_job_complete(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec)
{
	struct sched_job *j;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0)
		return r;
	if (j->state != SCHED_JOB_RUNNING)
		return -EBUSY;
	sched_job_stop_for(c, j, SCHED_JOB_COMPLETED, SCHED_EV_COMPLETED, now_usec,
			    "every rank finished");
	if (sched_job_stop_check_gone(c, j, now_usec))
		sched_pass_request(c, now_usec);
	return 0;
}

int sched_job_checkpoint(struct sched_cluster *c, const char *name, uid_t uid, uint64_t step,
			 const char *path, uint64_t now_usec)
{
	struct sched_job *j;
	char *copy;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0)
		return r;
	if (!path || path[0] != '/' || step > INT64_MAX)
		return -EINVAL;
	if (sched_job_state_is_terminal(j->state) || j->state == SCHED_JOB_DRAFT ||
	    sched_job_is_array(j))
		return -EBUSY; /* an array's record runs nothing: its elements checkpoint */
	if (j->checkpoint_path && j->checkpoint_reported && step < j->checkpoint_step)
		return 0; /* an older reported step never replaces a newer one */
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	free(j->checkpoint_path);
	j->checkpoint_path = copy;
	j->checkpoint_step = step;
	j->checkpoint_usec = now_usec;
	j->checkpoint_reported = true;
	j->change_usec = now_usec;
	sched_job_touch(c, j);
	sched_event_add(c, now_usec, SCHED_EV_CHECKPOINT, j, NULL, -1, "step %llu at %s",
			(unsigned long long)step, path);
	return 0;
}

int sched_job_checkpoint_found(struct sched_cluster *c, const char *name, uint64_t step,
			       const char *path, uint64_t mtime_usec, uint64_t now_usec)
{
	struct sched_job *j = sched_cluster_find_job(c, name);
	char *copy;

	if (!j)
		return -ENOENT;
	if (sched_job_state_is_terminal(j->state) || j->state == SCHED_JOB_DRAFT)
		return 0;
	if (j->checkpoint_path && (mtime_usec <= j->checkpoint_usec ||
				   strcmp(j->checkpoint_path, path) == 0))
		return 0;
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	free(j->checkpoint_path);
	j->checkpoint_path = copy;
	j->checkpoint_step = step;
	j->checkpoint_usec = mtime_usec;
	j->checkpoint_reported = false;
	j->change_usec = now_usec;
	sched_job_touch(c, j);
	sched_event_add(c, now_usec, SCHED_EV_CHECKPOINT, j, NULL, -1,
			"found on disk: %s", path);
	return 1;
}

size_t sched_job_process_count(const struct sched_job *j)
{
	return j->spec && j->spec->launch == CONF_LAUNCH_PER_RANK ? sched_job_total_npus(j) :
								     j->slice_count;
}

int sched_job_process_index(const struct sched_cluster *c, const struct sched_job *j,
			    const char *server, int rank, size_t *ret, char *reason)
{
	size_t slice = SIZE_MAX;

	for (size_t i = 0; i < j->slice_count; i++)
		if (strcmp(c->servers[j->slices[i].server].conf->name, server) == 0)
			slice = i;
	if (slice == SIZE_MAX) {
		sched_reason(reason, "server %s holds no part of job %s generation %u", server,
			     j->name, j->generation);
		return -EINVAL;
	}
	if (j->spec->launch == CONF_LAUNCH_PER_RANK) {
		const struct sched_slice *sl = &j->slices[slice];

		if (rank < (int)sl->first_rank || rank >= (int)(sl->first_rank + sl->npu_count)) {
			sched_reason(reason, "rank %d is not on server %s (its ranks are %u-%u)",
				     rank, server, sl->first_rank, sl->first_rank + sl->npu_count - 1);
			return -EINVAL;
		}
		*ret = (size_t)rank;
	} else {
		*ret = slice;
	}
	return 0;
}

size_t sched_job_process_slice(const struct sched_job *j, size_t idx)
{
	if (j->spec->launch != CONF_LAUNCH_PER_RANK)
		return idx;
	for (size_t i = 0; i < j->slice_count; i++)
		if (idx < j->slices[i].first_rank + j->slices[i].npu_count)
			return i;
	return j->slice_count - 1;
}

int sched_job_process_exit_attempt(struct sched_cluster *c, const char *name, uid_t uid,
				   unsigned generation, unsigned attempt, const char *server,
				   int rank, int code, uint64_t now_usec, char *reason)
{
	const struct sched_job *j = sched_cluster_find_job(c, name);
	int s = sched_cluster_find_server(c, server);

	/* (a stranger's report goes on to be refused) */
	if (j && (uid == 0 || uid == j->uid) && generation == j->generation && s >= 0)
		for (size_t k = 0; k < j->slice_count; k++)
			if (j->slices[k].server == (unsigned)s && attempt < j->slices[k].attempt)
				return 0; /* that process was started again since */
	return sched_job_process_exit(c, name, uid, generation, server, rank, code, now_usec,
				      reason);
}

bool sched_job_process_exited(const struct sched_job *j, size_t idx)
{
	return j->exits_generation == j->generation && idx < j->exited_count &&
	       (j->exited_ok[idx] || (j->exited_bad && j->exited_bad[idx]));
}

/* @j's exits of its generation become @ok and @bad (owned from here, @count entries). */
static void install_exits(struct sched_job *j, bool *ok, bool *bad, size_t count)
{
	free(j->exited_ok);
	free(j->exited_bad);
	j->exited_ok = ok;
	j->exited_bad = bad;
	j->exited_count = count;
	j->exits_generation = j->generation;
}

int sched_job_keep_finished(struct sched_job *j, const bool *ok, const bool *replaced)
{
	size_t count = sched_job_process_count(j);
	bool *n, *b;

	if (!ok)
		return 0;
	n = calloc(count ? count : 1, sizeof(*n));
	b = calloc(count ? count : 1, sizeof(*b));
	if (!n || !b) {
		free(n);
		free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		n[i] = ok[i] && !replaced[sched_job_process_slice(j, i)];
	install_exits(j, n, b, count);
	return 0;
}

/*
 * Is @generation, older than @j's, one whose processes on @server run on in @j's current
 * generation (a process-level recovery kept that server's share, sched_slice.kept_from)?
 * Its agent reports them under the current generation once it has seen the listing;
 * an exit it reported before that is still theirs.
 */
static bool kept_run(const struct sched_cluster *c, const struct sched_job *j,
		     unsigned generation, const char *server)
{
	int s = sched_cluster_find_server(c, server);

	for (size_t k = 0; s >= 0 && k < j->slice_count; k++)
		if (j->slices[k].server == (unsigned)s && j->slices[k].kept_from &&
		    generation >= j->slices[k].kept_from && generation < j->generation)
			return true;
	return false;
}

int sched_job_process_exit(struct sched_cluster *c, const char *name, uid_t uid,
			   unsigned generation, const char *server, int rank, int code,
			   uint64_t now_usec, char *reason)
{
	struct sched_job *j;
	size_t slice, idx, count;
	bool per_rank;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0)
		return r;
	if (generation != j->generation && !kept_run(c, j, generation, server))
		return 0; /* a process of an earlier generation, stopped on purpose */
	if (j->state != SCHED_JOB_RUNNING &&
	    !(j->state == SCHED_JOB_RECOVERING && j->ladder.active))
		return 0;
	r = sched_job_process_index(c, j, server, rank, &idx, reason);
	if (r < 0)
		return r;
	slice = sched_job_process_slice(j, idx);
	per_rank = j->spec->launch == CONF_LAUNCH_PER_RANK;
	count = sched_job_process_count(j);
	if (j->exits_generation != j->generation || j->exited_count != count || !j->exited_bad) {
		bool *n = calloc(count, sizeof(*n)), *b = calloc(count, sizeof(*b));

		if (!n || !b) {
			free(n);
			free(b);
			return -ENOMEM;
		}
		/* the same generation's (a record saved before exited_bad): kept */
		for (size_t i = 0; j->exits_generation == j->generation && i < count &&
				   i < j->exited_count; i++) {
			n[i] = j->exited_ok[i];
			b[i] = j->exited_bad && j->exited_bad[i];
		}
		install_exits(j, n, b, count);
	}
	sched_history_note_exit(j, code);
	if (code != 0)
		j->exited_bad[idx] = true;
	if (j->state == SCHED_JOB_RECOVERING) {
		/* a process the ladder's step waits for will not answer now */
		if (code == 0)
			j->exited_ok[idx] = true;
		sched_ladder_process_gone(c, j, idx, code, now_usec);
		return 0;
	}
	/* a service's instance serves until cancelled: any end of a process is a restart */
	if (code != 0 || sched_job_is_instance(j)) {
		const char *instance = code == 0 ? " (an instance of a service: started again)" :
						   "";
		char why[SCHED_REASON_MAX];

		if (per_rank)
			snprintf(why, sizeof(why), "rank %d on %s exited with status %d%s", rank,
				 server, code, instance);
		else
			snprintf(why, sizeof(why), "%s on %s exited with status %d%s",
				 sched_job_is_instance(j) ? "the process" : "msrun", server, code,
				 instance);
		/* an instance that ends again soon waits out its back-off */
		if (sched_job_is_instance(j) &&
		    sched_service_hold_restart(c, j, now_usec, why, (int)j->slices[slice].server,
					       (long)idx))
			return 0;
		/* the restart's events name the server (and for a rank, its NPU) */
		sched_job_subject(c, j, c->servers[j->slices[slice].server].conf->name,
				  per_rank ? (int)j->slices[slice].device_ids[rank -
						(int)j->slices[slice].first_rank] : -1);
		sched_job_restart(c, j, now_usec, why, (int)j->slices[slice].server, (long)idx);
		sched_job_subject(c, NULL, NULL, -1);
		if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_STOPPING &&
		    j->state != SCHED_JOB_RECOVERING)
			sched_pass_request(c, now_usec); /* it failed, and its NPUs are free */
		return 0;
	}
	j->exited_ok[idx] = true;
	for (size_t i = 0; i < count; i++)
		if (!j->exited_ok[i])
			return 0;
	sched_job_stop_for(c, j, SCHED_JOB_COMPLETED, SCHED_EV_COMPLETED, now_usec,
			    "every process exited with status 0");
	/* where the agent says nothing about processes, the exits are all there is to know */
	for (size_t i = 0; i < j->slice_count; i++)
		if (!c->servers[j->slices[i].server].reports_running)
			j->slices[i].gone = true;
	if (sched_job_stop_check_gone(c, j, now_usec))
		sched_pass_request(c, now_usec);
	return 0;
}

int sched_job_note_refusal(struct sched_cluster *c, const char *name, const char *reason,
			   uint64_t now_usec)
{
	struct sched_job *j = sched_cluster_find_job(c, name);

	if (!j)
		return -ENOENT;
	sched_event_add(c, now_usec, SCHED_EV_REFUSED, j, NULL, -1, "%s", reason);
	return 0;
}

int sched_job_remove(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now_usec)
{
	struct sched_job *j;
	bool active, freed = false;
	int r = sched_job_for_owner(c, name, uid, &j);

	if (r < 0)
		return r;
	if (j->state == SCHED_JOB_STOPPING || j->slice_count) {
		/* its processes may run on: the record holds the NPUs until they are gone,
		 * and goes then */
		if (j->state == SCHED_JOB_STOPPING)
			cancel_while_stopping(c, j, uid, now_usec);
		else
			sched_job_stop_for(c, j, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED,
					    now_usec, "removed (rmdir) while active");
		/* on servers without an agent there is nothing to wait for */
		r = sched_job_stop_check_gone(c, j, now_usec);
		if (r == 2) { /* an earlier rmdir's record, dropped now */
			sched_pass_request(c, now_usec);
			return 0;
		}
		freed = r == 1;
		if (!freed) {
			if (!j->stop_forget) {
				j->stop_forget = true;
				sched_job_touch(c, j);
				sched_event_add(c, now_usec, SCHED_EV_REMOVED, j, NULL, -1,
						"job directory removed while its processes may "
						"run: the record stays until its NPUs are "
						"released");
			}
			return 0;
		}
	}
	active = !sched_job_state_is_terminal(j->state);
	if (active)
		sched_job_transition(c, j, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED, now_usec,
				     "removed (rmdir) while active");
	/* a service's instances end with it */
	if (active && sched_job_is_service(j))
		sched_service_cancelled(c, j, now_usec);
	if (active && sched_job_is_array(j))
		sched_array_cancelled(c, j, now_usec);
	sched_event_add(c, now_usec, SCHED_EV_REMOVED, j, NULL, -1, "job directory removed");
	jobs_remove_at(c, (size_t)job_index(c, name));
	if (active || freed) /* forgetting a finished job frees nothing */
		sched_pass_request(c, now_usec);
	return 0;
}

static bool sched_port_is_used(const struct sched_cluster *c, const struct sched_job *self,
			       unsigned master, unsigned port)
{
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (j != self && j->slice_count && j->slices[0].server == master &&
		    j->sched_port == port)
			return true;
	}
	return false;
}

/*
 * MS_SCHED_PORT: the base port, or the next one free on the job's rank-0 server
 * (wrapping to 1024 past 65535), so two jobs never share a scheduler endpoint.
 */
unsigned sched_pick_port(const struct sched_cluster *c, const struct sched_job *self,
			 unsigned master)
{
	unsigned base = c->conf->scheduler_port, port = base;

	do {
		if (!sched_port_is_used(c, self, master, port))
			return port;
		port = port >= 65535 ? 1024 : port + 1;
	} while (port != base);
	return base; /* 64,512 jobs on one server: cannot happen before NPUs run out */
}
