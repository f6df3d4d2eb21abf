/* SPDX-License-Identifier: MIT */
/*
 * Job arrays (`array: 0-99%8`, Slurm's sbatch --array): an array record, state array,
 * and its elements, jobs named <array>.<index> placed as any job. The rules are in
 * ascend_sched.h ("job arrays").
 *
 * Elements are made as they may run (the throttle, Kubernetes' Indexed Job parallelism),
 * not all at submission: an array of 1,000 at %8 holds 9 records while it runs, and the
 * array's record keeps how each element ended, so a full table dropping an old element's
 * record loses nothing of the array's count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_internal.h"

static const char el_chars[SCHED_EL_COUNT] = { '.', 'a', 'c', 'f', 'x', 't' };

bool sched_job_is_array(const struct sched_job *j)
{
	return j->spec && j->spec->array.count && !j->array_serial;
}

bool sched_job_is_array_element(const struct sched_job *j)
{
	return j->array_serial != 0;
}

static int element_name(const char *array, unsigned index, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.%u", array, index);

	return n < 0 || (size_t)n >= len || n > CONF_NAME_MAX ? -ENAMETOOLONG : 0;
}

/* The record named by @name up to its last '.', or NULL. */
static struct sched_job *record_before_dot(struct sched_cluster *c, const char *name,
					   const char **ret_dot)
{
	char array[CONF_NAME_MAX + 1];
	const char *dot = strrchr(name, '.');
	size_t len;

	if (!dot || dot == name || (len = (size_t)(dot - name)) > CONF_ARRAY_NAME_MAX)
		return NULL;
	memcpy(array, name, len);
	array[len] = '\0';
	*ret_dot = dot;
	return sched_cluster_find_job(c, array);
}

struct sched_job *sched_array_of(struct sched_cluster *c, const struct sched_job *j)
{
	const char *dot;
	struct sched_job *a;

	if (!j->array_serial)
		return NULL;
	a = record_before_dot(c, j->name, &dot);
	return a && a->serial == j->array_serial && a->array ? a : NULL;
}

struct sched_job *sched_array_owning_name(struct sched_cluster *c, const char *name)
{
	const char *dot;
	struct sched_job *a = record_before_dot(c, name, &dot);
	unsigned long index;
	char *end;

	/* active: making elements, or pending on its after: (its names kept for it) */
	if (!a || (a->state != SCHED_JOB_ARRAY && a->state != SCHED_JOB_PENDING) ||
	    !sched_job_is_array(a))
		return NULL;
	/* the element's own spelling: digits, no leading zero */
	if (!dot[1] || dot[1] < '0' || dot[1] > '9' || (dot[1] == '0' && dot[2]))
		return NULL;
	index = strtoul(dot + 1, &end, 10);
	if (*end || index > CONF_ARRAY_INDEX_MAX)
		return NULL;
	return conf_job_array_has(&a->spec->array, (unsigned)index) ? a : NULL;
}

int sched_array_check(struct sched_cluster *c, const struct conf_job_spec *spec, uid_t uid,
		      char *reason)
{
	const struct conf_job_array *set = &spec->array;

	for (unsigned i = 0; set->count && i <= CONF_ARRAY_INDEX_MAX; i++) {
		char name[CONF_NAME_MAX + 1];
		const struct sched_job *old;

		if (!conf_job_array_has(set, i))
			continue;
		if (element_name(spec->name, i, name, sizeof(name)) < 0) {
			sched_reason(reason, "array: element %s.%u would be a name longer than "
					     "%d characters; shorten the array's name",
				     spec->name, i, CONF_NAME_MAX);
			return -EINVAL;
		}
		old = sched_cluster_find_job(c, name);
		if (!old)
			continue;
		if (!sched_job_state_is_terminal(old->state)) {
			sched_reason(reason, "array: its element %u is named %s, and job %s is %s; "
					     "cancel or remove it (rmdir jobs/%s), or name the "
					     "array otherwise",
				     i, name, name, sched_job_state_name(old->state), name);
			return -EEXIST;
		}
		if (uid != 0 && old->uid != uid) {
			sched_reason(reason, "array: its element %u is named %s, the record of "
					     "another user's job (uid %u); its owner may remove it "
					     "(rmdir jobs/%s), or name the array otherwise",
				     i, name, (unsigned)old->uid, name);
			return -EEXIST;
		}
	}
	return 0;
}

/* Make element @index of @a, which has @active elements active. 0 made, 1 it is active
 * already (a restore found its record), or -errno with @reason: it waits. */
static int element_make(struct sched_cluster *c, struct sched_job *a, unsigned index,
			unsigned active, uint64_t now_usec, char *reason)
{
	char name[CONF_NAME_MAX + 1];
	struct conf_job_spec *spec;
	const struct sched_job *old;
	int r;

	if (element_name(a->name, index, name, sizeof(name)) < 0)
		return -ENAMETOOLONG; /* the check at its submission refused it */
	old = sched_cluster_find_job(c, name);
	if (old && !sched_job_state_is_terminal(old->state)) {
		if (old->array_serial == a->serial)
			return 1;
		sched_reason(reason, "job %s is %s (not of this array); it waits until that "
				     "job ends or is removed", name, sched_job_state_name(old->state));
		return -EBUSY;
	}
	if (old && a->uid != 0 && old->uid != a->uid && old->array_serial != a->serial) {
		sched_reason(reason, "%s is another user's record (uid %u); it waits until its "
				     "owner removes it", name, (unsigned)old->uid);
		return -EPERM;
	}
	/* the job-count limits, as at a submission (not an operator's leave); the array's
	 * record counts as one of its owner's jobs and one of the cluster's records (never
	 * in a queue), and stands for its first element: with none active, the next is
	 * counted as that record, so an array never waits for itself */
	r = active ? sched_limits_check(c, name, conf_cluster_find_queue(c->conf, a->spec->queue),
					a->uid, false, reason) :
		     sched_limits_check_first_element(c, name,
						      conf_cluster_find_queue(c->conf, a->spec->queue),
						      a->uid, reason);
	if (r < 0)
		return r;
	spec = conf_job_spec_dup(a->spec, name);
	if (!spec) {
		sched_reason(reason, "out of memory");
		return -ENOMEM;
	}
	memset(&spec->array, 0, sizeof(spec->array));
	/* the array waited for its `after:` as a whole, on the records named at its
	 * submission: its elements wait for nothing */
	free(spec->after);
	spec->after = NULL;
	spec->after_count = 0;
	return sched_job_admit_element(c, spec, a, index, now_usec, reason);
}

/* How @a's elements stand: one count per enum sched_array_el. */
static void count_els(const struct sched_job *a, unsigned counts[SCHED_EL_COUNT])
{
	const struct conf_job_array *set = &a->spec->array;

	memset(counts, 0, SCHED_EL_COUNT * sizeof(*counts));
	for (unsigned i = 0; i <= CONF_ARRAY_INDEX_MAX; i++)
		if (conf_job_array_has(set, i) && a->array->el[i] < SCHED_EL_COUNT)
			counts[a->array->el[i]]++;
}

/* The array's reason while active: how its elements stand, and what waits. */
static void active_reason(struct sched_cluster *c, struct sched_job *a,
			  const unsigned counts[SCHED_EL_COUNT], uint64_t now_usec)
{
	const struct conf_job_array *set = &a->spec->array;
	char text[SCHED_REASON_MAX], limit[48] = "";
	int n;

	if (set->throttle)
		snprintf(limit, sizeof(limit), ", at most %u at once", set->throttle);
	n = snprintf(text, sizeof(text),
		     "array of %u %s%s: %u active, %u waiting, %u completed, %u failed, %u "
		     "cancelled, %u timed out",
		     set->count, conf_plural(set->count, "element", "elements"), limit,
		     counts[SCHED_EL_ACTIVE], counts[SCHED_EL_WAITING], counts[SCHED_EL_COMPLETED],
		     counts[SCHED_EL_FAILED], counts[SCHED_EL_CANCELLED], counts[SCHED_EL_TIMEOUT]);
	if (a->array->waits[0] && n > 0 && (size_t)n < sizeof(text))
		snprintf(text + n, sizeof(text) - (size_t)n, "; %.300s", a->array->waits);
	if (strcmp(a->reason, text) == 0)
		return;
	sched_job_set_reason(c, a, text);
	a->change_usec = now_usec;
	sched_job_touch(c, a);
	sched_cluster_changed(c);
}

/* Every element of @a has ended: so has @a. */
static void finish(struct sched_cluster *c, struct sched_job *a,
		   const unsigned counts[SCHED_EL_COUNT], uint64_t now_usec)
{
	const struct conf_job_array *set = &a->spec->array;
	char why[SCHED_REASON_MAX];

	a->array->waits[0] = '\0';
	if (a->array->cancel_why[0]) {
		sched_job_transition(c, a, SCHED_JOB_CANCELLED, SCHED_EV_CANCELLED, now_usec,
				     a->array->cancel_why);
		return;
	}
	if (counts[SCHED_EL_COMPLETED] == set->count) {
		sched_reason(why, "every element completed (%u)", set->count);
		sched_job_transition(c, a, SCHED_JOB_COMPLETED, SCHED_EV_COMPLETED, now_usec, why);
		return;
	}
	sched_reason(why, "%u of %u elements did not complete: %u failed, %u cancelled, %u "
			  "timed out (status.json's array.elements says which)",
		     set->count - counts[SCHED_EL_COMPLETED], set->count, counts[SCHED_EL_FAILED],
		     counts[SCHED_EL_CANCELLED], counts[SCHED_EL_TIMEOUT]);
	sched_job_transition(c, a, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec, why);
}

/* Cancel @a's active elements (it ended while they ran). Returns how many. */
static unsigned cancel_elements(struct sched_cluster *c, struct sched_job *a,
				uint64_t now_usec)
{
	char why[SCHED_REASON_MAX];
	unsigned n = 0;

	sched_reason(why, "cancelled with its array %s", a->name);
	for (unsigned i = 0; i <= CONF_ARRAY_INDEX_MAX; i++) {
		char name[CONF_NAME_MAX + 1];
		struct sched_job *j;

		if (a->array->el[i] != SCHED_EL_ACTIVE ||
		    element_name(a->name, i, name, sizeof(name)) < 0)
			continue;
		j = sched_cluster_find_job(c, name);
		if (!j || j->array_serial != a->serial || sched_job_state_is_terminal(j->state))
			continue;
		sched_job_cancel_for(c, j, why, now_usec);
		n++;
	}
	return n;
}

static unsigned reconcile(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec)
{
	const struct conf_job_array *set;
	unsigned counts[SCHED_EL_COUNT], made = 0;
	char waits[SCHED_REASON_MAX] = "";

	if (!a->array || !sched_job_is_array(a))
		return 0;
	if (a->state != SCHED_JOB_ARRAY)
		return cancel_elements(c, a, now_usec);
	set = &a->spec->array;
	count_els(a, counts);
	if (a->array->cancel_why[0]) { /* cancelled: it ends once its elements have */
		char why[SCHED_REASON_MAX];

		if (!counts[SCHED_EL_ACTIVE]) {
			finish(c, a, counts, now_usec);
			return 1;
		}
		sched_reason(why, "%.300s; waiting for %u %s to stop", a->array->cancel_why,
			     counts[SCHED_EL_ACTIVE],
			     conf_plural(counts[SCHED_EL_ACTIVE], "element", "elements"));
		if (strcmp(a->reason, why) != 0) {
			sched_job_set_reason(c, a, why);
			a->change_usec = now_usec;
			sched_job_touch(c, a);
			sched_cluster_changed(c);
		}
		return 0;
	}
	for (unsigned i = 0; i <= CONF_ARRAY_INDEX_MAX && counts[SCHED_EL_WAITING]; i++) {
		char reason[SCHED_REASON_MAX];
		int r;

		if (set->throttle && counts[SCHED_EL_ACTIVE] >= set->throttle)
			break;
		if (!conf_job_array_has(set, i) || a->array->el[i] != SCHED_EL_WAITING)
			continue;
		/* active before it is made: an element that ends at once (a dependency that
		 * can never be met) is counted as it ends */
		a->array->el[i] = SCHED_EL_ACTIVE;
		r = element_make(c, a, i, counts[SCHED_EL_ACTIVE], now_usec, reason);
		if (r < 0) {
			a->array->el[i] = SCHED_EL_WAITING;
			if (!waits[0])
				snprintf(waits, sizeof(waits), "element %u not made yet, tried "
					 "again every second: %.380s", i, reason);
			c->arrays_dirty = true;
			/* its name held: the next may go; no room (a limit): none may */
			if (r == -EBUSY || r == -EPERM)
				continue;
			break;
		}
		made += r == 0;
		count_els(a, counts);
	}
	if (strcmp(waits, a->array->waits) != 0) {
		snprintf(a->array->waits, sizeof(a->array->waits), "%s", waits);
		/* a new trouble is an event; its end shows in the reason */
		if (waits[0])
			sched_event_add(c, now_usec, SCHED_EV_PENDING, a, NULL, -1, "%s", waits);
	}
	if (made)
		sched_job_touch(c, a); /* the element states saved with the record */
	if (!counts[SCHED_EL_WAITING] && !counts[SCHED_EL_ACTIVE]) {
		finish(c, a, counts, now_usec);
		return made + 1;
	}
	active_reason(c, a, counts, now_usec);
	return made;
}

int sched_array_alloc(struct sched_job *a)
{
	if (!a->array)
		a->array = calloc(1, sizeof(*a->array));
	return a->array ? 0 : -ENOMEM;
}

void sched_array_deps_met(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec)
{
	sched_job_transition(c, a, SCHED_JOB_ARRAY, SCHED_EV_PENDING, now_usec,
			     "dependencies met; making its elements");
	/* made at the next tick: this runs inside the dependencies' own loop, which a new
	 * record (one replaced) must not disturb */
	c->arrays_dirty = true;
}

void sched_array_cancel(struct sched_cluster *c, struct sched_job *a, const char *why,
			uint64_t now_usec)
{
	if (!a->array || a->state != SCHED_JOB_ARRAY || a->array->cancel_why[0])
		return;
	snprintf(a->array->cancel_why, sizeof(a->array->cancel_why), "%s", why);
	sched_event_add(c, now_usec, SCHED_EV_CANCELLED, a, NULL, -1,
			"%s; its active elements are cancelled, and it ends once they have", why);
	cancel_elements(c, a, now_usec);
	sched_job_touch(c, a);
	reconcile(c, a, now_usec);
}

unsigned sched_array_admitted(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec)
{
	if (!a->array) {
		a->array = calloc(1, sizeof(*a->array));
		if (!a->array) {
			sched_job_transition(c, a, SCHED_JOB_FAILED, SCHED_EV_FAILED, now_usec,
					     "out of memory for its elements");
			return 0;
		}
	}
	return reconcile(c, a, now_usec);
}

void sched_array_cancelled(struct sched_cluster *c, struct sched_job *a, uint64_t now_usec)
{
	reconcile(c, a, now_usec);
}

void sched_array_element_ended(struct sched_cluster *c, const struct sched_job *j)
{
	struct sched_job *a = sched_array_of(c, j);
	enum sched_array_el el;

	if (!a || j->array_index > CONF_ARRAY_INDEX_MAX)
		return;
	switch (j->state) {
	case SCHED_JOB_COMPLETED:
		el = SCHED_EL_COMPLETED;
		break;
	case SCHED_JOB_CANCELLED:
		el = SCHED_EL_CANCELLED;
		break;
	case SCHED_JOB_TIMEOUT:
		el = SCHED_EL_TIMEOUT;
		break;
	default:
		el = SCHED_EL_FAILED;
		break;
	}
	a->array->el[j->array_index] = (unsigned char)el;
	sched_job_touch(c, a);
	sched_cluster_changed(c);
	if (a->state == SCHED_JOB_ARRAY)
		c->arrays_dirty = true;
}

unsigned sched_array_tick(struct sched_cluster *c, uint64_t now_usec)
{
	struct sched_job **active;
	unsigned changed = 0;
	size_t n = 0;

	if (!c->arrays_dirty)
		return 0;
	/* listed first: making an element may replace a record (an ended one of its
	 * name), which moves the others in c->jobs, never an active array's */
	active = malloc((c->job_count ? c->job_count : 1) * sizeof(*active));
	if (!active)
		return 0; /* dirty still: the next tick tries again */
	c->arrays_dirty = false;
	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i]->state == SCHED_JOB_ARRAY)
			active[n++] = c->jobs[i];
	for (size_t i = 0; i < n; i++)
		changed += reconcile(c, active[i], now_usec);
	free(active);
	return changed;
}

char *sched_array_save(const struct sched_job *j, char *buf, size_t len)
{
	size_t n = 0;

	for (unsigned i = 0; j->array && i <= CONF_ARRAY_INDEX_MAX && n + 1 < len; i++)
		if (conf_job_array_has(&j->spec->array, i))
			buf[n++] = j->array->el[i] < SCHED_EL_COUNT ? el_chars[j->array->el[i]] :
								      'f';
	if (len)
		buf[n] = '\0';
	return buf;
}

int sched_array_restore(struct sched_job *j, const char *text)
{
	size_t k = 0;

	if (!sched_job_is_array(j))
		return text ? -EINVAL : 0;
	if (text && strlen(text) != j->spec->array.count)
		return -EINVAL;
	j->array = calloc(1, sizeof(*j->array));
	if (!j->array)
		return -ENOMEM;
	for (unsigned i = 0; text && i <= CONF_ARRAY_INDEX_MAX; i++) {
		const char *at;

		if (!conf_job_array_has(&j->spec->array, i))
			continue;
		at = memchr(el_chars, text[k++], sizeof(el_chars));
		if (!at || !text[k - 1]) {
			free(j->array);
			j->array = NULL;
			return -EINVAL;
		}
		j->array->el[i] = (unsigned char)(at - el_chars);
	}
	return 0;
}

void sched_array_restored(struct sched_cluster *c, uint64_t now_usec)
{
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *a = c->jobs[i];

		/* pending only while it waits for its after: (a record saved otherwise) */
		if (a->array && a->state == SCHED_JOB_PENDING && !a->deps_waiting)
			sched_array_deps_met(c, a, now_usec);
		if (!a->array || a->state != SCHED_JOB_ARRAY)
			continue;
		for (unsigned k = 0; k <= CONF_ARRAY_INDEX_MAX; k++) {
			char name[CONF_NAME_MAX + 1];
			const struct sched_job *e;

			if (a->array->el[k] != SCHED_EL_ACTIVE ||
			    element_name(a->name, k, name, sizeof(name)) < 0)
				continue;
			e = sched_cluster_find_job(c, name);
			if (e && e->array_serial == a->serial &&
			    !sched_job_state_is_terminal(e->state))
				continue;
			/* it ended before the array's record heard of it, or its record is
			 * gone (removed with it) */
			if (e && e->array_serial == a->serial)
				sched_array_element_ended(c, e);
			else
				a->array->el[k] = SCHED_EL_CANCELLED;
		}
		c->arrays_dirty = true;
	}
}

json_t *sched_array_status_json(const struct sched_cluster *c, const struct sched_job *j)
{
	static const char *const el_names[SCHED_EL_COUNT] = {
		"waiting", "active", "completed", "failed", "cancelled", "timeout",
	};
	/* the lookups change nothing: find_job takes a mutable cluster */
	struct sched_cluster *mc = (struct sched_cluster *)c;
	unsigned pending = 0, running = 0, counts[SCHED_EL_COUNT];
	json_t *o = json_object(), *els = json_object();
	char text[CONF_ARRAY_TEXT_MAX];

	if (!o || !els || !j->array) {
		json_decref(o);
		json_decref(els);
		return NULL;
	}
	count_els(j, counts);
	for (unsigned i = 0; i <= CONF_ARRAY_INDEX_MAX; i++) {
		char name[CONF_NAME_MAX + 1], key[16];
		const char *state = el_names[j->array->el[i] % SCHED_EL_COUNT];

		/* an array that ended (cancelled) makes none of those it had not */
		if (j->array->el[i] == SCHED_EL_WAITING && sched_job_state_is_terminal(j->state))
			state = "not made";
		const struct sched_job *e;

		if (!conf_job_array_has(&j->spec->array, i))
			continue;
		if (j->array->el[i] == SCHED_EL_ACTIVE &&
		    element_name(j->name, i, name, sizeof(name)) == 0 &&
		    (e = sched_cluster_find_job(mc, name)) && e->array_serial == j->serial) {
			state = sched_job_state_name(e->state);
			pending += e->state == SCHED_JOB_PENDING;
			running += e->state != SCHED_JOB_PENDING &&
				   !sched_job_state_is_terminal(e->state);
		}
		snprintf(key, sizeof(key), "%u", i);
		json_object_set_new(els, key, json_string(state));
	}
	json_object_set_new(o, "indexes",
			    json_string(conf_job_array_text(&j->spec->array, false, text,
							    sizeof(text))));
	json_object_set_new(o, "throttle", json_integer(j->spec->array.throttle));
	json_object_set_new(o, "count", json_integer(j->spec->array.count));
	json_object_set_new(o, "waits", j->array->waits[0] ? json_string(j->array->waits) :
							    json_null());
	json_object_set_new(o, "waiting", json_integer(sched_job_state_is_terminal(j->state) ? 0 :
						       counts[SCHED_EL_WAITING]));
	json_object_set_new(o, "not_made", json_integer(sched_job_state_is_terminal(j->state) ?
							counts[SCHED_EL_WAITING] : 0));
	json_object_set_new(o, "pending", json_integer(pending));
	json_object_set_new(o, "running", json_integer(running));
	json_object_set_new(o, "completed", json_integer(counts[SCHED_EL_COMPLETED]));
	json_object_set_new(o, "failed", json_integer(counts[SCHED_EL_FAILED]));
	json_object_set_new(o, "cancelled", json_integer(counts[SCHED_EL_CANCELLED]));
	json_object_set_new(o, "timeout", json_integer(counts[SCHED_EL_TIMEOUT]));
	json_object_set_new(o, "elements", els);
	return o;
}
