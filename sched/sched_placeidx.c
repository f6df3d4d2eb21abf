/* SPDX-License-Identifier: MIT */
/*
 * The placement index: servers grouped by what a placement can take from them, so that
 * sched_place() looks at the few groups that can hold a request instead of every server
 * (issue 16: 16,384 servers). The groups are few (a key per free-NPU pattern that the
 * HCCS rules tell apart: at most a few hundred per server type); each is a set of server
 * indices kept as a two-level bitmap, so "the first member in inventory order from i" is
 * a couple of word scans. What placement reads live (schedulable, suspect, the request's
 * type) is not in the key: a server that is cordoned or suspect stays in its bucket and
 * placement skips it. Only the count of whole free schedulable servers per type and leaf
 * switch (what a whole-server placement chooses its switches by) follows cordons and
 * server states: sched_server_recount() and sched_placeidx_update() keep it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* A set of server indices: bit i of w; bit k of sum is set when w[k] is not zero. */
struct idxset {
	uint64_t *w;
	uint64_t *sum;
};

struct bucket {
	struct sched_placekey key;
	size_t size;
	struct idxset set;
};

struct sched_placeidx {
	size_t servers, words, sum_words;
	unsigned *bucket_of;		/* per server: its bucket */
	bool *whole_of;			/* per server: in its type's whole set */
	struct bucket *b;
	size_t nb, cap;
	struct idxset whole[16];	/* per c->types entry */
	unsigned type_servers[16];	/* per c->types entry: servers in the inventory */
	/* whole free and schedulable (sched_server_is_whole_free()), per server and per
	 * type and leaf switch: avail[type * switches + switch] */
	bool *avail_of;
	unsigned *avail;
	bool *unsched_of;		/* per server: not sched_server_is_schedulable() */
	unsigned unsched[16];		/* per c->types entry: how many */
	size_t switches;
	unsigned *sw_start, *sw_list;	/* the servers of switch k, inventory order:
					 * sw_list[sw_start[k] .. sw_start[k + 1]) */
};

#define NO_BUCKET UINT32_MAX

static int set_init(struct sched_placeidx *x, struct idxset *s)
{
	s->w = calloc(x->words ? x->words : 1, sizeof(*s->w));
	s->sum = calloc(x->sum_words ? x->sum_words : 1, sizeof(*s->sum));
	return s->w && s->sum ? 0 : -ENOMEM;
}

static void set_release(struct idxset *s)
{
	free(s->w);
	free(s->sum);
}

static void set_put(struct idxset *s, size_t i, bool on)
{
	size_t k = i / 64;

	if (on)
		s->w[k] |= 1ull << (i % 64);
	else
		s->w[k] &= ~(1ull << (i % 64));
	if (s->w[k])
		s->sum[k / 64] |= 1ull << (k % 64);
	else
		s->sum[k / 64] &= ~(1ull << (k % 64));
}

static size_t set_next(const struct sched_placeidx *x, const struct idxset *s, size_t from)
{
	size_t k = from / 64, j;
	uint64_t m;

	if (from >= x->servers)
		return SIZE_MAX;
	m = s->w[k] & (~0ull << (from % 64));
	if (m)
		return k * 64 + (size_t)__builtin_ctzll(m);
	/* the next non-zero word after k, through the summary */
	k++;
	if (k >= x->words)
		return SIZE_MAX;
	j = k / 64;
	m = s->sum[j] & (~0ull << (k % 64));
	while (!m) {
		if (++j >= x->sum_words)
			return SIZE_MAX;
		m = s->sum[j];
	}
	k = j * 64 + (size_t)__builtin_ctzll(m);
	return k * 64 + (size_t)__builtin_ctzll(s->w[k]);
}

static bool key_equal(const struct sched_placekey *a, const struct sched_placekey *b)
{
	return a->type == b->type && a->healthy == b->healthy && a->busy == b->busy &&
	       a->npus_free == b->npus_free && memcmp(a->fit, b->fit, sizeof(a->fit)) == 0;
}

/* The bucket of @k, made when new; NO_BUCKET without memory. */
static unsigned bucket_for(struct sched_placeidx *x, const struct sched_placekey *k)
{
	for (size_t i = 0; i < x->nb; i++)
		if (key_equal(&x->b[i].key, k))
			return (unsigned)i;
	if (x->nb == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 16;
		struct bucket *n = realloc(x->b, cap * sizeof(*n));

		if (!n)
			return NO_BUCKET;
		x->b = n;
		x->cap = cap;
	}
	x->b[x->nb].key = *k;
	x->b[x->nb].size = 0;
	if (set_init(x, &x->b[x->nb].set) < 0) {
		set_release(&x->b[x->nb].set);
		return NO_BUCKET;
	}
	return (unsigned)x->nb++;
}

static bool server_is_whole(const struct sched_server *s)
{
	return s->jobs_running == 0 && s->npus_free == s->conf->npu_count;
}

/* Put server @s where its key says. Returns 0 or -ENOMEM (the index is then unusable). */
static int place_server(struct sched_cluster *c, struct sched_placeidx *x,
			const struct sched_server *s)
{
	size_t i = s->index;
	struct sched_placekey k;
	unsigned b;
	bool whole = server_is_whole(s), avail, sched;

	sched_place_key(c, s, &k);
	if (x->bucket_of[i] == NO_BUCKET || !key_equal(&x->b[x->bucket_of[i]].key, &k)) {
		b = bucket_for(x, &k);
		if (b == NO_BUCKET)
			return -ENOMEM;
		if (x->bucket_of[i] != NO_BUCKET) {
			set_put(&x->b[x->bucket_of[i]].set, i, false);
			x->b[x->bucket_of[i]].size--;
		}
		set_put(&x->b[b].set, i, true);
		x->b[b].size++;
		x->bucket_of[i] = b;
	}
	if (whole != x->whole_of[i]) {
		set_put(&x->whole[k.type], i, whole);
		x->whole_of[i] = whole;
	}
	sched = sched_server_is_schedulable(c, s);
	if (!sched != x->unsched_of[i]) {
		x->unsched[k.type] += sched ? -1u : 1u;
		x->unsched_of[i] = !sched;
	}
	avail = whole && sched;
	if (avail != x->avail_of[i]) {
		x->avail[k.type * x->switches + s->switch_index] += avail ? 1u : -1u;
		x->avail_of[i] = avail;
	}
	return 0;
}

static void idx_free(struct sched_placeidx *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nb; i++)
		set_release(&x->b[i].set);
	for (size_t t = 0; t < 16; t++)
		set_release(&x->whole[t]);
	free(x->b);
	free(x->bucket_of);
	free(x->whole_of);
	free(x->avail_of);
	free(x->avail);
	free(x->unsched_of);
	free(x->sw_start);
	free(x->sw_list);
	free(x);
}

void sched_placeidx_free(struct sched_cluster *c)
{
	idx_free(c->placeidx);
	c->placeidx = NULL;
}

int sched_placeidx_build(struct sched_cluster *c)
{
	struct sched_placeidx *x = calloc(1, sizeof(*x));
	size_t n = c->server_count;

	sched_placeidx_free(c);
	if (!x)
		return -ENOMEM;
	x->servers = n;
	x->words = (n + 63) / 64;
	x->sum_words = (x->words + 63) / 64;
	x->bucket_of = malloc((n ? n : 1) * sizeof(*x->bucket_of));
	x->whole_of = calloc(n ? n : 1, sizeof(*x->whole_of));
	x->switches = c->switch_count;
	x->avail_of = calloc(n ? n : 1, sizeof(*x->avail_of));
	x->avail = calloc(c->type_count * x->switches + 1,
			  sizeof(*x->avail));
	x->sw_start = calloc(x->switches + 1, sizeof(*x->sw_start));
	x->sw_list = malloc((n ? n : 1) * sizeof(*x->sw_list));
	x->unsched_of = calloc(n ? n : 1, sizeof(*x->unsched_of));
	if (!x->bucket_of || !x->whole_of || !x->avail_of || !x->avail || !x->sw_start ||
	    !x->sw_list || !x->unsched_of)
		goto fail;
	/* servers by switch, inventory order within one (a counting sort) */
	for (size_t i = 0; i < n; i++)
		x->sw_start[c->servers[i].switch_index + 1]++;
	for (size_t k = 0; k < x->switches; k++)
		x->sw_start[k + 1] += x->sw_start[k];
	{
		unsigned *fill = calloc(x->switches ? x->switches : 1, sizeof(*fill));

		if (!fill)
			goto fail;
		for (size_t i = 0; i < n; i++) {
			unsigned k = c->servers[i].switch_index;

			x->sw_list[x->sw_start[k] + fill[k]++] = (unsigned)i;
		}
		free(fill);
	}
	for (size_t i = 0; i < n; i++)
		x->bucket_of[i] = NO_BUCKET;
	for (size_t t = 0; t < c->type_count; t++)
		if (set_init(x, &x->whole[t]) < 0)
			goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct sched_server *s = &c->servers[i];
		size_t t;

		/* a type beyond c->types (more than 16 types) has no key: scan instead */
		for (t = 0; t < c->type_count && c->types[t] != s->conf->type; t++)
			;
		if (t == c->type_count || place_server(c, x, s) < 0)
			goto fail;
		x->type_servers[t]++;
	}
	c->placeidx = x;
	return 0;
fail:
	idx_free(x);
	return -ENOMEM;
}

void sched_placeidx_update(struct sched_cluster *c, const struct sched_server *s)
{
	if (c && c->placeidx && place_server(c, c->placeidx, s) < 0)
		sched_placeidx_free(c); /* without memory: scan from now on */
}

size_t sched_placeidx_buckets(const struct sched_placeidx *x)
{
	return x->nb;
}

const struct sched_placekey *sched_placeidx_key(const struct sched_placeidx *x, size_t b)
{
	return &x->b[b].key;
}

size_t sched_placeidx_size(const struct sched_placeidx *x, size_t b)
{
	return x->b[b].size;
}

unsigned sched_placeidx_avail(const struct sched_placeidx *x, size_t type, size_t sw)
{
	return x->avail[type * x->switches + sw];
}

const unsigned *sched_placeidx_switch_servers(const struct sched_placeidx *x, size_t sw,
					      size_t *ret_count)
{
	*ret_count = x->sw_start[sw + 1] - x->sw_start[sw];
	return x->sw_list + x->sw_start[sw];
}

unsigned sched_placeidx_unschedulable(const struct sched_placeidx *x, size_t type)
{
	return x->unsched[type];
}

unsigned sched_placeidx_type_servers(const struct sched_placeidx *x, size_t type)
{
	return x->type_servers[type];
}

size_t sched_placeidx_next(const struct sched_placeidx *x, size_t b, size_t from)
{
	return set_next(x, &x->b[b].set, from);
}

size_t sched_placeidx_whole_next(const struct sched_placeidx *x, size_t type, size_t from)
{
	return set_next(x, &x->whole[type], from);
}

int sched_placeidx_check(const struct sched_cluster *c, char *reason)
{
	const struct sched_placeidx *x = c->placeidx;

	unsigned per_type[16] = { 0 }, unsched[16] = { 0 }, *avail;

	if (!x)
		return 0;
	avail = calloc(c->type_count * x->switches + 1,
		       sizeof(*avail));
	if (!avail)
		return 0; /* cannot tell */
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];
		struct sched_placekey k;
		unsigned b = x->bucket_of[i];
		bool in_whole;

		sched_place_key(c, s, &k);
		in_whole = (x->whole[k.type].w[i / 64] >> (i % 64)) & 1;
		if (b == NO_BUCKET || !key_equal(&x->b[b].key, &k) ||
		    !((x->b[b].set.w[i / 64] >> (i % 64)) & 1) ||
		    in_whole != server_is_whole(s) || in_whole != x->whole_of[i]) {
			sched_reason(reason,
				     "server %s: the placement index is stale (%u free NPUs, %u "
				     "jobs; was a change made without sched_server_recount?)",
				     s->conf->name, s->npus_free, s->jobs_running);
			free(avail);
			return -EUCLEAN;
		}
		per_type[k.type]++;
		unsched[k.type] += !sched_server_is_schedulable(c, s);
		avail[k.type * x->switches + s->switch_index] +=
			sched_server_is_whole_free(c, (unsigned)i, NULL);
	}
	for (size_t t = 0; t < c->type_count; t++) {
		if (per_type[t] != x->type_servers[t] || unsched[t] != x->unsched[t]) {
			sched_reason(reason,
				     "the placement index counts %u %s servers (%u not "
				     "schedulable), not %u (%u)",
				     x->type_servers[t], c->types[t]->name, x->unsched[t],
				     per_type[t], unsched[t]);
			free(avail);
			return -EUCLEAN;
		}
		for (size_t k = 0; k < x->switches; k++) {
			if (avail[t * x->switches + k] != x->avail[t * x->switches + k]) {
				sched_reason(reason,
					     "the placement index counts %u whole free %s servers "
					     "under %s, not %u (a cordon or a server's state changed "
					     "without sched_placeidx_update?)",
					     x->avail[t * x->switches + k], c->types[t]->name,
					     c->switch_names[k], avail[t * x->switches + k]);
				free(avail);
				return -EUCLEAN;
			}
		}
	}
	free(avail);
	return 0;
}
