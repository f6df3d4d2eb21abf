/* SPDX-License-Identifier: MIT */
/* The cluster model: servers, switches, NPU bookkeeping and the event ring. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

static const char *const health_names[] = {
	[SCHED_HEALTH_OK] = "OK",
	[SCHED_HEALTH_WARNING] = "Warning",
	[SCHED_HEALTH_ALARM] = "Alarm",
	[SCHED_HEALTH_CRITICAL] = "Critical",
	[SCHED_HEALTH_UNKNOWN] = "UNKNOWN",
};

const char *sched_health_name(enum sched_health h)
{
	if ((unsigned)h >= sizeof(health_names) / sizeof(health_names[0]))
		return "UNKNOWN";
	return health_names[h];
}

static const char *const state_names[SCHED_JOB_STATE_COUNT] = {
	[SCHED_JOB_DRAFT] = "draft",
	[SCHED_JOB_PENDING] = "pending",
	[SCHED_JOB_RUNNING] = "running",
	[SCHED_JOB_RECOVERING] = "recovering",
	[SCHED_JOB_STOPPING] = "stopping",
	[SCHED_JOB_COMPLETED] = "completed",
	[SCHED_JOB_FAILED] = "failed",
	[SCHED_JOB_CANCELLED] = "cancelled",
	[SCHED_JOB_REJECTED] = "rejected",
	[SCHED_JOB_TIMEOUT] = "timeout",
	[SCHED_JOB_SERVING] = "serving",
	[SCHED_JOB_ARRAY] = "array",
};

const char *sched_job_state_name(enum sched_job_state s)
{
	if ((unsigned)s >= SCHED_JOB_STATE_COUNT)
		return "unknown";
	return state_names[s];
}

static const char *const event_names[SCHED_EV_KIND_COUNT] = {
	[SCHED_EV_SUBMITTED] = "submitted",
	[SCHED_EV_REJECTED] = "rejected",
	[SCHED_EV_PENDING] = "pending",
	[SCHED_EV_PLACED] = "placed",
	[SCHED_EV_COMPLETED] = "completed",
	[SCHED_EV_FAILED] = "failed",
	[SCHED_EV_CANCELLED] = "cancelled",
	[SCHED_EV_REMOVED] = "removed",
	[SCHED_EV_CHECKPOINT] = "checkpoint",
	[SCHED_EV_SERVER] = "server",
	[SCHED_EV_REFUSED] = "refused",
	[SCHED_EV_HEALTH] = "health",
	[SCHED_EV_RECOVERING] = "recovering",
	[SCHED_EV_PREEMPTED] = "preempted",
	[SCHED_EV_REQUEUED] = "requeued",
	[SCHED_EV_TIMEOUT] = "timeout",
	[SCHED_EV_RESIZED] = "resized",
	[SCHED_EV_QUEUE] = "queue",
	[SCHED_EV_RECOVERY] = "recovery",
	[SCHED_EV_READY] = "ready",
	[SCHED_EV_BACKOFF] = "backoff",
	[SCHED_EV_MOVED] = "moved",
	[SCHED_EV_HELD] = "held",
	[SCHED_EV_RELEASED] = "released",
	[SCHED_EV_UPDATED] = "updated",
	[SCHED_EV_DEPENDENCY] = "dependency",
	[SCHED_EV_LEADER] = "leader",
};

const char *sched_event_kind_name(enum sched_event_kind k)
{
	if ((unsigned)k >= SCHED_EV_KIND_COUNT)
		return "unknown";
	return event_names[k];
}

void sched_reason(char *reason, const char *fmt, ...)
{
	va_list ap;

	if (!reason)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, SCHED_REASON_MAX, fmt, ap);
	va_end(ap);
}

static int switch_index_of(struct sched_cluster *c, char *name)
{
	for (size_t i = 0; i < c->switch_count; i++)
		if (strcmp(c->switch_names[i], name) == 0)
			return (int)i;
	c->switch_names[c->switch_count] = name;
	return (int)c->switch_count++;
}

int sched_cluster_new(struct conf_cluster *conf, struct sched_cluster **ret)
{
	struct sched_cluster *c;
	size_t npu_count = 0;

	c = calloc(1, sizeof(*c));
	if (!c)
		goto fail_conf;
	c->conf = conf;
	c->server_count = conf->server_count;
	c->servers = calloc(conf->server_count ? conf->server_count : 1, sizeof(*c->servers));
	c->switch_names = calloc(conf->server_count ? conf->server_count : 1, sizeof(char *));
	for (size_t i = 0; i < conf->server_count; i++)
		npu_count += conf->servers[i].npu_count;
	c->npu_store = calloc(npu_count ? npu_count : 1, sizeof(*c->npu_store));
	c->event_cap = conf->event_history < 64 ? conf->event_history : 64; /* grows to
			 * conf->event_history, then wraps */
	c->events = malloc(c->event_cap * sizeof(*c->events));
	c->queue_used = calloc(conf->queue_count ? conf->queue_count : 1, sizeof(*c->queue_used));
	c->queue_quota_file = calloc(conf->queue_count ? conf->queue_count : 1,
				     sizeof(*c->queue_quota_file));
#ifdef ASCENDFS_PARANOID
	c->check_invariants = true;
#endif
	if (!c->servers || !c->switch_names || !c->npu_store || !c->events || !c->queue_used ||
	    !c->queue_quota_file)
		goto fail_cluster;
	for (size_t i = 0; i < conf->queue_count; i++)
		c->queue_quota_file[i] = conf->queues[i].quota_npus;

	for (size_t i = 0; i < conf->server_count; i++) {
		struct sched_server *s = &c->servers[i];

		s->conf = &conf->servers[i];
		s->index = (unsigned)i;
		s->cluster = c;
		s->switch_index = (unsigned)switch_index_of(c, conf->servers[i].leaf_switch);
		s->state = SCHED_SERVER_UNKNOWN;
		s->npus = c->npu_store + c->npus_total;
		for (unsigned d = 0; d < s->conf->npu_count; d++) {
			s->npus[d].device_id = d;
			s->npus[d].health = SCHED_HEALTH_OK;
			s->npus[d].fault = "";
		}
		s->npus_free = s->conf->npu_count;
		c->npus_total += s->conf->npu_count;
		{
			size_t k;

			for (k = 0; k < c->type_count && c->types[k] != s->conf->type; k++)
				;
			if (k == c->type_count && k < 16)
				c->types[c->type_count++] = s->conf->type;
		}
	}
	c->next_event_seq = 1;
	c->next_queue_seq = 1;
	sched_devip_index_build(c); /* without it, lookups scan */
	sched_placeidx_build(c);    /* without it, placement scans */
	*ret = c;
	return 0;

fail_cluster:
	free(c->queue_used);
	free(c->queue_quota_file);
	free(c->servers);
	free(c->npu_store);
	free(c->switch_names);
	free(c->events);
	sched_account_free(c);
	free(c);
fail_conf:
	conf_cluster_free(conf);
	return -ENOMEM;
}

void sched_cluster_set_placement(struct sched_cluster *c, enum sched_placement p)
{
	c->placement = p;
}

void sched_cluster_free(struct sched_cluster *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->job_count; i++) {
		free(c->jobs[i]->slices);
		c->jobs[i]->slices = NULL;
		c->jobs[i]->slice_count = 0;
		sched_job_free(c->jobs[i]);
	}
	for (size_t i = 0; i < c->event_count; i++)
		free(c->events[(c->event_head + i) % c->event_cap].line);
	free(c->jobs);
	sched_pass_kept_free(c);
	sched_pend_order_free(c);
	sched_holds_free(c);
	for (size_t i = 0; i < c->server_count; i++) {
		free(c->servers[i].last_refusal);
		for (unsigned d = 0; d < c->servers[i].conf->npu_count; d++)
			sched_reason_put(c->servers[i].npus[d].fault);
	}
	sched_devip_index_free(c);
	sched_placeidx_free(c);
	free(c->servers);
	free(c->npu_store);
	free(c->switch_names);
	free(c->events);
	sched_account_free(c);
	free(c->util);
	free(c->queue_used);
	free(c->queue_quota_file);
	free(c->removed_serials);
	free(c->job_index);
	free(c->uid_jobs);
	sched_reason_table_free(c);
	conf_cluster_free(c->conf);
	free(c);
}

size_t sched_name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return (size_t)h;
}

static void index_put(struct sched_job **slots, size_t cap, struct sched_job *j)
{
	size_t i = sched_name_hash(j->name) & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = j;
}

/* Room for one more job at a load of at most one half; on allocation failure (then and
 * ever after) lookups scan c->jobs instead. */
static void index_grow(struct sched_cluster *c)
{
	size_t cap = c->job_index_cap ? c->job_index_cap : 256;
	struct sched_job **n;

	if (!c->job_index && c->job_index_cap)
		return;
	if (c->job_index && (c->job_count + 1) * 2 <= cap)
		return;
	while ((c->job_count + 1) * 2 > cap)
		cap *= 2;
	n = calloc(cap, sizeof(*n));
	free(c->job_index);
	c->job_index = n;
	c->job_index_cap = cap;
	if (!n)
		return;
	for (size_t i = 0; i < c->job_count; i++)
		index_put(n, cap, c->jobs[i]);
}

void sched_jobs_append(struct sched_cluster *c, struct sched_job *j)
{
	index_grow(c);
	c->jobs[c->job_count++] = j;
	if (c->job_index)
		index_put(c->job_index, c->job_index_cap, j);
	sched_limits_account(c, j, SCHED_JOB_NONE, j->state);
	if (j->state == SCHED_JOB_PENDING) /* restored: no transition told the pending order */
		sched_pend_order_invalidate(c);
	if (j->deps_waiting) /* restored waiting for its `after:` jobs (sched_deps.c) */
		c->deps_jobs++;
	/* restored waiting for its checkpoint scan: on the list the tick looks at */
	sched_job_set_resume_scan_pending(c, j, j->resume_scan_pending);
}

void sched_jobs_unindex(struct sched_cluster *c, const struct sched_job *j)
{
	size_t cap = c->job_index_cap, i, k;

	if (j->state == SCHED_JOB_PENDING)
		sched_pend_order_invalidate(c);
	if (j->deps_waiting)
		c->deps_jobs--;
	if (!c->job_index)
		return;
	i = sched_name_hash(j->name) & (cap - 1);
	while (c->job_index[i] && c->job_index[i] != j)
		i = (i + 1) & (cap - 1);
	if (!c->job_index[i])
		return;
	/* backward-shift deletion keeps every probe sequence unbroken */
	c->job_index[i] = NULL;
	for (k = (i + 1) & (cap - 1); c->job_index[k]; k = (k + 1) & (cap - 1)) {
		struct sched_job *m = c->job_index[k];
		size_t home = sched_name_hash(m->name) & (cap - 1);

		/* m may move to the hole at i unless its home lies in (i, k] */
		if ((k > i) ? (home <= i || home > k) : (home <= i && home > k)) {
			c->job_index[i] = m;
			c->job_index[k] = NULL;
			i = k;
		}
	}
}

struct sched_job *sched_cluster_find_job(struct sched_cluster *c, const char *name)
{
	if (c->job_index) {
		size_t cap = c->job_index_cap, i = sched_name_hash(name) & (cap - 1);

		for (; c->job_index[i]; i = (i + 1) & (cap - 1))
			if (strcmp(c->job_index[i]->name, name) == 0)
				return c->job_index[i];
		return NULL;
	}
	for (size_t i = 0; i < c->job_count; i++)
		if (strcmp(c->jobs[i]->name, name) == 0)
			return c->jobs[i];
	return NULL;
}

int sched_cluster_find_server(const struct sched_cluster *c, const char *name)
{
	for (size_t i = 0; i < c->server_count; i++)
		if (strcmp(c->servers[i].conf->name, name) == 0)
			return (int)i;
	return -ENOENT;
}

bool sched_npu_is_placeable(const struct sched_npu *n)
{
	return !n->job && !n->isolated && !n->reserved &&
	       (n->health == SCHED_HEALTH_OK || n->health == SCHED_HEALTH_WARNING);
}

bool sched_server_is_schedulable(const struct sched_cluster *c, const struct sched_server *s)
{
	if (s->cordoned || s->draining || s->state == SCHED_SERVER_UNREACHABLE)
		return false;
	if (c->conf->require_agent && s->state == SCHED_SERVER_UNKNOWN)
		return false;
	return true;
}

static const char *const npu_use_names[SCHED_NPU_USE_COUNT] = {
	[SCHED_NPU_ALLOCATED] = "allocated",
	[SCHED_NPU_FREE] = "free",
	[SCHED_NPU_ISOLATED] = "isolated",
	[SCHED_NPU_UNAVAILABLE] = "unavailable",
};

const char *sched_npu_use_name(enum sched_npu_use u)
{
	if ((unsigned)u >= SCHED_NPU_USE_COUNT)
		return "unknown";
	return npu_use_names[u];
}

enum sched_npu_use sched_npu_use(const struct sched_cluster *c, const struct sched_server *s,
				 const struct sched_npu *n)
{
	/* the order is the rule: held beats isolated (an Alarm NPU its job keeps), isolated
	 * beats the server's state (a lost server's NPUs are isolated themselves) */
	if (n->job)
		return SCHED_NPU_ALLOCATED;
	if (n->isolated || (n->health != SCHED_HEALTH_OK && n->health != SCHED_HEALTH_WARNING))
		return SCHED_NPU_ISOLATED;
	if (!sched_server_is_schedulable(c, s))
		return SCHED_NPU_UNAVAILABLE;
	return SCHED_NPU_FREE;
}

void sched_npu_count(const struct sched_cluster *c, int server, struct sched_npu_counts *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		if (server >= 0 && (size_t)server != i)
			continue;
		for (unsigned d = 0; d < s->conf->npu_count; d++)
			ret->by_use[sched_npu_use(c, s, &s->npus[d])]++;
		ret->total += s->conf->npu_count;
	}
}

static const char *const server_condition_names[SCHED_SERVER_CONDITION_COUNT] = {
	[SCHED_SERVER_IS_UNKNOWN] = "unknown",
	[SCHED_SERVER_IS_READY] = "ready",
	[SCHED_SERVER_IS_CORDONED] = "cordoned",
	[SCHED_SERVER_IS_DRAINING] = "draining",
	[SCHED_SERVER_IS_UNREACHABLE] = "unreachable",
};

const char *sched_server_condition_name(enum sched_server_condition k)
{
	if ((unsigned)k >= SCHED_SERVER_CONDITION_COUNT)
		return "unknown";
	return server_condition_names[k];
}

enum sched_server_condition sched_server_condition(const struct sched_server *s)
{
	if (s->state == SCHED_SERVER_UNREACHABLE)
		return SCHED_SERVER_IS_UNREACHABLE;
	if (s->draining)
		return SCHED_SERVER_IS_DRAINING;
	if (s->cordoned)
		return SCHED_SERVER_IS_CORDONED;
	return s->state == SCHED_SERVER_READY ? SCHED_SERVER_IS_READY : SCHED_SERVER_IS_UNKNOWN;
}

void sched_server_recount(struct sched_server *s)
{
	struct sched_job *seen[CONF_SERVER_NPUS_MAX];
	unsigned nseen = 0;

	s->npus_free = 0;
	s->newest_fault_usec = 0;
	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		struct sched_npu *n = &s->npus[d];
		unsigned k;

		if (n->last_fault_usec > s->newest_fault_usec)
			s->newest_fault_usec = n->last_fault_usec;
		if (sched_npu_is_placeable(n))
			s->npus_free++;
		if (!n->job)
			continue;
		for (k = 0; k < nseen && seen[k] != n->job; k++)
			;
		if (k == nseen)
			seen[nseen++] = n->job;
	}
	s->jobs_running = nseen;
	sched_placeidx_update(s->cluster, s);
}

void sched_npu_set_isolation(struct sched_npu *n, enum sched_isolation i)
{
	n->isolation = i;
	n->isolated = i != SCHED_ISOLATION_NONE;
}

void sched_alloc_apply(struct sched_cluster *c, struct sched_job *j, struct sched_slice *slices,
		       size_t count)
{
	assert(j->slice_count == 0);
	j->slices = slices;
	j->slice_count = count;
	for (size_t i = 0; i < count; i++) {
		struct sched_server *s = &c->servers[slices[i].server];

		for (unsigned k = 0; k < slices[i].npu_count; k++) {
			struct sched_npu *n = &s->npus[slices[i].device_ids[k]];

			assert(!n->job);
			n->job = j;
			n->rank = slices[i].first_rank + k;
		}
		c->npus_allocated += slices[i].npu_count;
		if (j->spec)
			c->queue_used[j->queue_index] += slices[i].npu_count;
		sched_server_recount(s);
	}
	sched_cluster_changed(c);
}

void sched_alloc_release(struct sched_cluster *c, struct sched_job *j)
{
	for (size_t i = 0; i < j->slice_count; i++) {
		struct sched_server *s = &c->servers[j->slices[i].server];

		for (unsigned k = 0; k < j->slices[i].npu_count; k++) {
			struct sched_npu *n = &s->npus[j->slices[i].device_ids[k]];

			assert(n->job == j);
			n->job = NULL;
			n->rank = 0;
		}
		c->npus_allocated -= j->slices[i].npu_count;
		if (j->spec)
			c->queue_used[j->queue_index] -= j->slices[i].npu_count;
		sched_server_recount(s);
		if (s->draining && s->jobs_running == 0) {
			s->draining = false;
			s->cordoned = true;
			s->version++;
			sched_placeidx_update(c, s);
		}
	}
	free(j->slices);
	j->slices = NULL;
	j->slice_count = 0;
	sched_cluster_changed(c);
}

unsigned sched_job_total_npus(const struct sched_job *j)
{
	unsigned n = 0;

	for (size_t i = 0; i < j->slice_count; i++)
		n += j->slices[i].npu_count;
	return n;
}

size_t sched_event_size(const struct sched_event *e)
{
	if (!e->line)
		return 0;
	return (size_t)(e->reason + strlen(e->reason) + 1 - e->line);
}

void sched_event_release(struct sched_event *e)
{
	free(e->line);
	e->line = NULL;
	e->line_len = 0;
	e->job = e->server = e->reason = "";
}

int sched_event_copy(struct sched_event *dst, const struct sched_event *src)
{
	size_t n = sched_event_size(src);

	*dst = *src;
	if (!src->line)
		return 0;
	dst->line = malloc(n);
	if (!dst->line) {
		sched_event_release(dst);
		return -ENOMEM;
	}
	memcpy(dst->line, src->line, n);
	dst->job = dst->line + (src->job - src->line);
	dst->server = dst->line + (src->server - src->line);
	dst->reason = dst->line + (src->reason - src->line);
	return 0;
}

/*
 * The next slot of the ring, its old event (if any) released. Growing only while the
 * ring has not wrapped (head 0) keeps it linear, so realloc moves it whole; the new part
 * is left untouched (no memset): slots are read only below event_count, so the pages
 * of a ring that never fills are never faulted in.
 */
static struct sched_event *event_slot(struct sched_cluster *c)
{
	struct sched_event *e;

	if (c->event_count == c->event_cap && c->event_cap < c->conf->event_history) {
		size_t cap = c->event_cap * 2;
		struct sched_event *n;

		if (cap > c->conf->event_history)
			cap = c->conf->event_history;
		n = realloc(c->events, cap * sizeof(*n));
		if (n) {
			c->events = n;
			c->event_cap = cap;
		}
	}
	if (c->event_count < c->event_cap) {
		e = &c->events[(c->event_head + c->event_count) % c->event_cap];
		c->event_count++;
	} else {
		/* full (or could not grow): the oldest event makes room */
		e = &c->events[c->event_head];
		c->event_head = (c->event_head + 1) % c->event_cap;
		c->event_bytes -= sched_event_size(e);
		free(e->line);
	}
	return e;
}

/* Copy @src (NULL: "") into @dst of @size bytes, cut to fit; returns its length. */
static size_t copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = src ? strnlen(src, size - 1) : 0;

	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
	return n;
}

void sched_event_put(struct sched_cluster *c, uint64_t time_usec, enum sched_event_kind kind,
		     const char *job, const char *server, int npu, const char *state,
		     const char *reason, const char *line)
{
	/* cut as the fields always were (names never exceed CONF_NAME_MAX) */
	char job_cut[CONF_NAME_MAX + 1], server_cut[CONF_NAME_MAX + 1];
	char reason_cut[SCHED_REASON_MAX];
	size_t job_len = copy_cut(job_cut, sizeof(job_cut), job);
	size_t server_len = copy_cut(server_cut, sizeof(server_cut), server);
	size_t reason_len = copy_cut(reason_cut, sizeof(reason_cut), reason);
	size_t extra = job_len + server_len + reason_len + 3;
	struct sched_event *e = event_slot(c);
	char *p;

	c->mutations++; /* whatever an event announces may matter to the next pass */
	*e = (struct sched_event){
		.seq = c->next_event_seq++,
		.time_usec = time_usec,
		.kind = kind,
		.npu = npu,
		.state = state,
		.job = job_cut,
		.server = server_cut,
		.reason = reason_cut,
	};
	if (line) {
		e->line_len = strlen(line);
		e->line = malloc(e->line_len + 1 + extra);
		if (e->line)
			memcpy(e->line, line, e->line_len + 1);
	} else {
		e->line = sched_event_render_line(e, extra, &e->line_len);
	}
	if (!e->line) {
		/* out of memory: the slot keeps the seq without text; say how many */
		sched_event_release(e);
		c->events_dropped++;
	} else {
		p = e->line + e->line_len + 1;
		e->job = memcpy(p, job_cut, job_len + 1);
		p += job_len + 1;
		e->server = memcpy(p, server_cut, server_len + 1);
		p += server_len + 1;
		e->reason = memcpy(p, reason_cut, reason_len + 1);
		c->event_bytes += e->line_len + 1 + extra;
	}
	sched_cluster_changed(c);
}

void sched_event_add(struct sched_cluster *c, uint64_t now_usec, enum sched_event_kind kind,
		     const struct sched_job *j, const char *server, int npu, const char *fmt, ...)
{
	char reason[SCHED_REASON_MAX] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(reason, sizeof(reason), fmt, ap);
		va_end(ap);
	}
	sched_event_put(c, now_usec, kind, j ? j->name : NULL, server, npu,
			j ? sched_job_state_name(j->state) : NULL, reason, NULL);
}

void sched_cluster_note_refusal(struct sched_cluster *c, const char *server, const char *reason,
				uint64_t now_usec)
{
	sched_event_add(c, now_usec, SCHED_EV_REFUSED, NULL, server && server[0] ? server : NULL,
			-1, "%s", reason);
}

const struct sched_event *sched_event_next(const struct sched_cluster *c, uint64_t after_seq)
{
	uint64_t first, idx;

	if (c->event_count == 0)
		return NULL;
	first = c->events[c->event_head].seq;
	if (after_seq < first)
		after_seq = first - 1;
	idx = after_seq + 1 - first;
	if (idx >= c->event_count)
		return NULL;
	return &c->events[(c->event_head + idx) % c->event_cap];
}

int sched_server_set_cordon(struct sched_cluster *c, const char *name, bool cordon, bool drain,
			    uint64_t now_usec)
{
	int idx = sched_cluster_find_server(c, name);
	struct sched_server *s;

	if (idx < 0)
		return idx;
	s = &c->servers[idx];
	s->version++;
	c->mutations++;
	if (!cordon) {
		s->cordoned = false;
		s->draining = false;
		sched_placeidx_update(c, s);
		sched_event_add(c, now_usec, SCHED_EV_SERVER, NULL, name, -1, "uncordoned");
		sched_pass_request(c, now_usec);
		return 0;
	}
	if (drain && s->jobs_running > 0) {
		bool instances = false;

		for (unsigned d = 0; d < s->conf->npu_count; d++) {
			instances |= s->npus[d].job && s->npus[d].job->service[0];
			/* a new drain: what keeps an instance here is said anew */
			if (s->npus[d].job)
				s->npus[d].job->drain_noted = 0;
		}
		s->draining = true;
		sched_event_add(c, now_usec, SCHED_EV_SERVER, NULL, name, -1,
				"draining: no new work; %u running %s until %s%s",
				s->jobs_running,
				conf_plural(s->jobs_running, "job keeps its NPUs", "jobs keep their NPUs"),
				conf_plural(s->jobs_running, "it ends", "they end"),
				instances ? ", but services' instances move elsewhere as their "
					    "disruption budgets allow (max_unavailable)" : "");
	} else {
		s->cordoned = true;
		s->draining = false;
		sched_event_add(c, now_usec, SCHED_EV_SERVER, NULL, name, -1,
				drain ? "drained: no job runs here" : "cordoned: no new work");
	}
	sched_placeidx_update(c, s);
	return 0;
}

int sched_server_clear_npu(struct sched_cluster *c, const char *name, unsigned npu,
			   uint64_t now_usec)
{
	int idx = sched_cluster_find_server(c, name);
	struct sched_server *s;

	if (idx < 0)
		return idx;
	s = &c->servers[idx];
	if (npu >= s->conf->npu_count)
		return -EINVAL;
	s->version++;
	c->mutations++;
	s->npus[npu].isolated = false;
	s->npus[npu].isolation = SCHED_ISOLATION_NONE;
	s->npus[npu].health = SCHED_HEALTH_OK;
	s->npus[npu].window_faults = 0;
	sched_text_set(c, &s->npus[npu].fault, "", SCHED_FAULT_MAX);
	sched_server_recount(s);
	sched_event_add(c, now_usec, SCHED_EV_SERVER, NULL, name, (int)npu,
			"NPU %u cleared by root: back in service", npu);
	sched_pass_request(c, now_usec);
	return 0;
}

/* The list the tick looks at holds exactly the jobs waiting for their checkpoint scan. */
static int resume_wait_check(const struct sched_cluster *c, char *reason)
{
	size_t waiting = 0, listed = 0;

	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		waiting += j->resume_scan_pending;
		if (j->resume_scan_pending != j->resume_wait.linked) {
			sched_reason(reason, "job %s: resume_scan_pending %d but %son the list of "
					     "generations waiting for their scan", j->name,
				     j->resume_scan_pending, j->resume_wait.linked ? "" : "not ");
			return -EUCLEAN;
		}
	}
	for (const struct sched_job *j = c->resume_wait_head; j; j = j->resume_wait.next)
		if (++listed > waiting)
			break;
	if (listed != waiting || c->resume_wait_count != waiting) {
		sched_reason(reason, "%zu generations wait for their scan; the list holds %zu, "
				     "its count says %zu", waiting, listed, c->resume_wait_count);
		return -EUCLEAN;
	}
	return 0;
}

int sched_check_invariants(const struct sched_cluster *c, char *reason)
{
	unsigned allocated = 0;
	int r = sched_limits_check_counts(c, reason);

	if (r < 0 || (r = sched_pend_order_check(c, reason)) < 0 ||
	    (r = sched_placeidx_check(c, reason)) < 0 || (r = sched_holds_check(c, reason)) < 0)
		return r;
	r = resume_wait_check(c, reason);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];
		uint64_t newest = 0;

		for (unsigned d = 0; d < s->conf->npu_count; d++)
			if (s->npus[d].last_fault_usec > newest)
				newest = s->npus[d].last_fault_usec;
		if (newest != s->newest_fault_usec) {
			sched_reason(reason, "server %s: newest_fault_usec %llu, its NPUs' %llu",
				     s->conf->name, (unsigned long long)s->newest_fault_usec,
				     (unsigned long long)newest);
			return -EUCLEAN;
		}
	}
	{
		unsigned waiting = 0;

		for (size_t i = 0; i < c->job_count; i++) {
			const struct sched_job *j = c->jobs[i];

			waiting += j->deps_waiting != 0;
			if (j->array_record != sched_job_is_array(j)) {
				sched_reason(reason, "job %s: array_record says %d, its spec and "
						     "array_serial %d", j->name, j->array_record,
					     sched_job_is_array(j));
				return -EUCLEAN;
			}
			if (j->deps_waiting && j->state != SCHED_JOB_PENDING) {
				sched_reason(reason, "job %s is %s but waits for %u dependencies",
					     j->name, sched_job_state_name(j->state),
					     j->deps_waiting);
				return -EUCLEAN;
			}
		}
		if (waiting != c->deps_jobs) {
			sched_reason(reason, "%u jobs wait for dependencies but the counter says %u",
				     waiting, c->deps_jobs);
			return -EUCLEAN;
		}
	}

	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		for (unsigned d = 0; d < s->conf->npu_count; d++)
			if (s->npus[d].job)
				allocated++;
	}
	if (allocated != c->npus_allocated) {
		sched_reason(reason, "%u NPUs are held but the counter says %u", allocated,
			     c->npus_allocated);
		return -EUCLEAN;
	}
	allocated = 0;
	for (size_t i = 0, steps = 0; i <= c->job_count; i++) {
		if (i == c->job_count) {
			if (steps != c->ladder_active) {
				sched_reason(reason, "%zu recovery steps wait but the counter says "
						     "%u", steps, c->ladder_active);
				return -EUCLEAN;
			}
			break;
		}
		steps += c->jobs[i]->ladder.counted;
		if (c->jobs[i]->ladder.counted &&
		    (!c->jobs[i]->ladder.active || c->jobs[i]->state != SCHED_JOB_RECOVERING)) {
			sched_reason(reason, "job %s is %s with a recovery step counted", c->jobs[i]->name,
				     sched_job_state_name(c->jobs[i]->state));
			return -EUCLEAN;
		}
	}
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];
		unsigned next_rank = 0;

		if (j->slice_count && j->state != SCHED_JOB_RUNNING &&
		    j->state != SCHED_JOB_RECOVERING && j->state != SCHED_JOB_STOPPING) {
			sched_reason(reason, "job %s is %s but holds NPUs", j->name,
				     sched_job_state_name(j->state));
			return -EUCLEAN;
		}
		for (size_t k = 0; k < j->slice_count; k++) {
			const struct sched_slice *sl = &j->slices[k];

			if (sl->first_rank != next_rank) {
				sched_reason(reason, "job %s: slice %zu starts at rank %u, not %u",
					     j->name, k, sl->first_rank, next_rank);
				return -EUCLEAN;
			}
			for (unsigned d = 0; d < sl->npu_count; d++) {
				const struct sched_npu *n =
					&c->servers[sl->server].npus[sl->device_ids[d]];

				if (n->job != j || n->rank != next_rank) {
					sched_reason(reason,
						     "job %s: NPU %u of %s is not its rank %u",
						     j->name, sl->device_ids[d],
						     c->servers[sl->server].conf->name, next_rank);
					return -EUCLEAN;
				}
				next_rank++;
			}
			allocated += sl->npu_count;
		}
	}
	if (allocated != c->npus_allocated) {
		sched_reason(reason, "jobs hold %u NPUs, servers show %u", allocated,
			     c->npus_allocated);
		return -EUCLEAN;
	}
	for (size_t q = 0; q < c->conf->queue_count; q++) {
		unsigned used = 0;

		for (size_t i = 0; i < c->job_count; i++)
			if (c->jobs[i]->spec && c->jobs[i]->queue_index == q)
				used += sched_job_total_npus(c->jobs[i]);
		if (used != c->queue_used[q]) {
			sched_reason(reason, "queue %s: its jobs hold %u NPUs, its counter says %u",
				     c->conf->queues[q].name, used, c->queue_used[q]);
			return -EUCLEAN;
		}
	}
	return 0;
}

void sched_note_leader(struct sched_cluster *c, uint64_t now_usec, const char *reason)
{
	sched_event_add(c, now_usec, SCHED_EV_LEADER, NULL, NULL, -1, "%s", reason);
	c->version++;
}
