/* SPDX-License-Identifier: MIT */
/*
 * Job reasons, interned (issue 16). Every job carried a 512-byte reason buffer, most of
 * it unused, and the pending jobs of a busy cluster mostly say the same sentence: one
 * reference-counted copy per distinct text, looked up in a chained hash, is what a job
 * holds now (and so are the names of its last preemptor and of the server it stops
 * for, and each NPU's last fault text). The empty text is the static "" and never in
 * the table. Only the holder of the
 * cluster's lock reads or changes them, as every other field of a job.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

struct sched_reason_str {
	struct sched_reason_str *next, **pprev; /* bucket chain; pprev: what points here */
	struct sched_cluster *c;		/* whose table (for the count) */
	size_t refs;
	size_t hash;
	char text[];
};

/* What a job says when its reason could not be kept (no memory for a new text). */
static const char no_memory_reason[] = "(reason not kept: the daemon was out of memory)";

static size_t text_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (size_t)h;
}

static struct sched_reason_str *str_of(const char *text)
{
	return (struct sched_reason_str *)(void *)(text - offsetof(struct sched_reason_str, text));
}

static bool is_interned(const char *text)
{
	return text && text[0] && text != no_memory_reason;
}

static void table_link(struct sched_reason_str **bucket, struct sched_reason_str *s)
{
	s->next = *bucket;
	if (s->next)
		s->next->pprev = &s->next;
	*bucket = s;
	s->pprev = bucket;
}

/* Twice the buckets once there are more strings than buckets (keeps chains short). */
static void table_grow(struct sched_cluster *c)
{
	size_t cap = c->reason_table_cap ? 2 * c->reason_table_cap : 64;
	struct sched_reason_str **n = calloc(cap, sizeof(*n));

	if (!n)
		return; /* longer chains, still right */
	for (size_t i = 0; i < c->reason_table_cap; i++)
		while (c->reason_table[i]) {
			struct sched_reason_str *s = c->reason_table[i];

			c->reason_table[i] = s->next;
			table_link(&n[s->hash & (cap - 1)], s);
		}
	free(c->reason_table);
	c->reason_table = n;
	c->reason_table_cap = cap;
}

/* A new reference to the interned @text (@len bytes, not empty); NULL without memory. */
static const char *intern(struct sched_cluster *c, const char *text, size_t len)
{
	size_t h = text_hash(text, len);
	struct sched_reason_str *s;

	if (c->reason_count >= c->reason_table_cap)
		table_grow(c);
	if (!c->reason_table_cap)
		return NULL;
	for (s = c->reason_table[h & (c->reason_table_cap - 1)]; s; s = s->next)
		if (s->hash == h && strncmp(s->text, text, len) == 0 && s->text[len] == '\0') {
			s->refs++;
			return s->text;
		}
	s = malloc(sizeof(*s) + len + 1);
	if (!s)
		return NULL;
	s->c = c;
	s->refs = 1;
	s->hash = h;
	memcpy(s->text, text, len);
	s->text[len] = '\0';
	table_link(&c->reason_table[h & (c->reason_table_cap - 1)], s);
	c->reason_count++;
	return s->text;
}

void sched_reason_put(const char *text)
{
	struct sched_reason_str *s;

	if (!is_interned(text))
		return;
	s = str_of(text);
	if (--s->refs)
		return;
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	s->c->reason_count--;
	free(s);
}

const char *sched_reason_get(const char *text)
{
	if (!is_interned(text))
		return NULL;
	str_of(text)->refs++;
	return text;
}

void sched_job_share_reason(struct sched_cluster *c, struct sched_job *j, const char *text)
{
	const char *old = j->reason;

	if (text == old)
		return;
	if (!is_interned(text)) { /* "" or the out-of-memory text: nothing to share */
		sched_job_set_reason(c, j, text);
		return;
	}
	j->reason = sched_reason_get(text);
	sched_reason_put(old);
}

void sched_text_set(struct sched_cluster *c, const char **slot, const char *text, size_t max)
{
	const char *old = *slot;
	size_t len;

	if (text && text == old)
		return; /* the same text, not even compared */
	len = text ? strnlen(text, max - 1) : 0;
	if (len == 0) {
		*slot = "";
	} else if (old && strncmp(old, text, len) == 0 && old[len] == '\0') {
		return; /* the same text (also when @text is *@slot) */
	} else {
		*slot = intern(c, text, len);
		if (!*slot)
			*slot = no_memory_reason;
	}
	sched_reason_put(old);
}

void sched_job_set_reason(struct sched_cluster *c, struct sched_job *j, const char *reason)
{
	sched_text_set(c, &j->reason, reason, SCHED_REASON_MAX);
}

void sched_reason_table_free(struct sched_cluster *c)
{
	/* every job released its reason before: what is left leaked a reference */
	for (size_t i = 0; i < c->reason_table_cap; i++)
		while (c->reason_table[i]) {
			struct sched_reason_str *s = c->reason_table[i];

			c->reason_table[i] = s->next;
			free(s);
		}
	free(c->reason_table);
	c->reason_table = NULL;
	c->reason_table_cap = c->reason_count = 0;
}
