/* SPDX-License-Identifier: MIT */
/*
 * Snapshots: the bytes an open read-only file reads, shared as far as they can be (issue
 * 15 item 4). The render cache hands every open of an unchanged node the same blob; a
 * stream makes a file of a ring of lines (cluster/events, jobs/<job>/events,
 * cluster/accounting, jobs/<job>/accounting) one append-only blob, so that opens between
 * changes share it too, each holding only a view (offset, length) of it. What a user's open files hold beyond the current state is counted and
 * bounded (the tally).
 *
 * Why the streams: each refused request is an event, so a user can change an events
 * file before every open; with one rendered blob per version, 1,000 opens held 1,000
 * copies of the event history.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* The least a stream blob grows by; also its size with no events. */
#define STREAM_SLACK_BYTES (16u << 10)

static struct fs_blob *blob_new(char *data, size_t len, size_t cap)
{
	struct fs_blob *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->refs = 1;
	b->len = len;
	b->cap = cap;
	b->data = data;
	return b;
}

void fs_blob_put(struct fs_blob *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(b->data);
		free(b);
	}
}

struct fs_blob *fs_blob_get(struct fs_blob *b)
{
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
	return b;
}

static struct fs_blob *blob_get(struct fs_blob *b)
{
	return fs_blob_get(b);
}

/* Drop the reference of the cache or the stream (ctx->lock held): no longer current. */
static void blob_unlive(struct fs_blob *b)
{
	if (!b)
		return;
	b->live = false;
	fs_blob_put(b);
}

static bool path_equal(const struct fs_path *a, const struct fs_path *b)
{
	return a->kind == b->kind && a->rank == b->rank && strcmp(a->job, b->job) == 0 &&
	       strcmp(a->item, b->item) == 0 && strcmp(a->ext, b->ext) == 0;
}

static void stream_clear(struct fs_event_stream *s)
{
	blob_unlive(s->blob);
	free(s->lines);
	memset(s, 0, sizeof(*s));
}

void fs_cache_forget(struct fs_ctx *ctx)
{
	for (size_t i = 0; i < FS_CACHE_SLOTS; i++) {
		blob_unlive(ctx->cache[i].blob);
		ctx->cache[i].blob = NULL;
	}
	for (size_t i = 0; i < FS_EVENT_STREAMS; i++)
		stream_clear(&ctx->events[i]);
}

void fs_cache_clear(struct fs_ctx *ctx)
{
	fs_cache_forget(ctx);
	fs_kcache_clear(ctx);
}

/* One kept line of a stream's ring, whichever ring it is. */
struct src_line {
	uint64_t seq;
	const char *job;	/* "" when about no job */
	const char *line;	/* NULL: the event's line could not be rendered */
	size_t len;
};

/* The kept line of @s's ring after @after (0: the first), in *@ret; false at the end. */
static bool src_next(const struct fs_ctx *ctx, const struct fs_event_stream *s,
		     uint64_t after, struct src_line *ret)
{
	if (s->accounting) {
		const struct sched_acct *a = sched_account_next(ctx->cluster, after);

		if (!a)
			return false;
		*ret = (struct src_line){ a->seq, a->job, a->line, a->line_len };
		return true;
	}
	const struct sched_event *e = sched_event_next(ctx->cluster, after);

	if (!e)
		return false;
	*ret = (struct src_line){ e->seq, e->job, e->line, e->line_len };
	return true;
}

/* The seq the next line of @s's ring will have. */
static uint64_t src_next_seq(const struct fs_ctx *ctx, const struct fs_event_stream *s)
{
	if (s->accounting)
		return ctx->cluster->next_acct_seq ? ctx->cluster->next_acct_seq : 1;
	return ctx->cluster->next_event_seq;
}

static bool stream_wants(const struct fs_event_stream *s, const struct src_line *e)
{
	return e->line && (!s->job[0] || strcmp(e->job, s->job) == 0);
}

static int lines_push(struct fs_event_stream *s, uint64_t seq, size_t start)
{
	if (s->line_count == s->line_cap) {
		size_t cap = s->line_cap ? 2 * s->line_cap : 64;
		struct fs_event_line *n = realloc(s->lines, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->lines = n;
		s->line_cap = cap;
	}
	s->lines[s->line_count++] = (struct fs_event_line){ seq, start };
	return 0;
}

/*
 * A new live blob of @s's kept lines, with room to append as many bytes again (at least
 * STREAM_SLACK_BYTES): copying is then paid once per that many new bytes.
 */
static int stream_rebuild(struct fs_ctx *ctx, struct fs_event_stream *s)
{
	struct fs_event_stream n = { 0 };
	struct src_line e;
	size_t kept = 0, cap, len = 0;
	char *data;
	int r;

	for (bool ok = src_next(ctx, s, 0, &e); ok; ok = src_next(ctx, s, e.seq, &e))
		if (stream_wants(s, &e))
			kept += e.len + 1;
	cap = kept + (kept / 2 > STREAM_SLACK_BYTES ? kept / 2 : STREAM_SLACK_BYTES);
	data = malloc(cap);
	if (!data)
		return -ENOMEM;
	n.accounting = s->accounting;
	memcpy(n.job, s->job, sizeof(n.job));
	n.last_use = s->last_use;
	n.last_seq = src_next_seq(ctx, s) - 1;
	for (bool ok = src_next(ctx, s, 0, &e); ok; ok = src_next(ctx, s, e.seq, &e)) {
		if (!stream_wants(s, &e))
			continue;
		if ((r = lines_push(&n, e.seq, len)) < 0) {
			free(n.lines);
			free(data);
			return r;
		}
		memcpy(data + len, e.line, e.len);
		len += e.len;
		data[len++] = '\n';
	}
	n.blob = blob_new(data, len, cap);
	if (!n.blob) {
		free(n.lines);
		free(data);
		return -ENOMEM;
	}
	n.blob->live = true;
	n.blob->version = UINT64_MAX;
	stream_clear(s);
	*s = n;
	return 0;
}

/* Append the lines after s->last_seq; false when they do not fit (rebuild instead). */
static bool stream_append(struct fs_ctx *ctx, struct fs_event_stream *s)
{
	struct fs_blob *b = s->blob;
	struct src_line e;

	for (bool ok = src_next(ctx, s, s->last_seq, &e); ok;
	     ok = src_next(ctx, s, e.seq, &e)) {
		if (stream_wants(s, &e)) {
			if (e.len + 1 > b->cap - b->len || lines_push(s, e.seq, b->len) < 0)
				return false;
			/* beyond every view handed out: nobody reads these bytes yet */
			memcpy(b->data + b->len, e.line, e.len);
			b->data[b->len + e.len] = '\n';
			b->len += e.len + 1;
		}
		s->last_seq = e.seq;
	}
	return true;
}

/* The index of @s's first line the ring still keeps (line_count: none). */
static size_t stream_first_kept(const struct fs_ctx *ctx, const struct fs_event_stream *s)
{
	struct src_line first;
	size_t lo = 0, hi = s->line_count;

	if (!src_next(ctx, s, 0, &first))
		return s->line_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->lines[mid].seq < first.seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct fs_event_stream *stream_find(struct fs_ctx *ctx, bool accounting, const char *job)
{
	struct fs_event_stream *victim = &ctx->events[0];

	for (size_t i = 0; i < FS_EVENT_STREAMS; i++) {
		struct fs_event_stream *s = &ctx->events[i];

		if (s->blob && s->accounting == accounting && strcmp(s->job, job) == 0)
			return s;
		if (!s->blob || (victim->blob && s->last_use < victim->last_use))
			victim = s;
	}
	stream_clear(victim);
	victim->accounting = accounting;
	snprintf(victim->job, sizeof(victim->job), "%s", job);
	return victim;
}

/* The view of a file of a ring of lines: the events' or the accounting records'. */
static int stream_snapshot(struct fs_ctx *ctx, bool accounting, const char *job,
			   struct fs_view *ret)
{
	struct fs_event_stream *s = stream_find(ctx, accounting, job);
	size_t first;
	int r;

	s->last_use = ++ctx->cache_clock;
	/* sequence numbers only grow while the daemon serves; anything else (a reload of
	 * the ring) starts the stream over */
	if (s->blob && src_next_seq(ctx, s) - 1 < s->last_seq)
		stream_clear(s);
	if (!s->blob) {
		s->accounting = accounting;
		snprintf(s->job, sizeof(s->job), "%s", job);
	}
	if ((!s->blob || !stream_append(ctx, s)) && (r = stream_rebuild(ctx, s)) < 0) {
		if (!s->blob)
			stream_clear(s);
		return r;
	}
	first = stream_first_kept(ctx, s);
	if (first > s->line_count / 2 && first > 64) {
		/* the lines the ring dropped: forget them (their bytes stay until a rebuild) */
		memmove(s->lines, s->lines + first, (s->line_count - first) * sizeof(*s->lines));
		s->line_count -= first;
		first = 0;
	}
	ret->blob = blob_get(s->blob);
	ret->off = first < s->line_count ? s->lines[first].start : s->blob->len;
	ret->len = s->blob->len - ret->off;
	return 0;
}

int fs_snapshot(struct fs_ctx *ctx, const struct fs_path *p, uint64_t now_usec,
		struct fs_view *ret)
{
	uint64_t version = ctx->cluster->version;
	/* heartbeat age changes with the clock, not with the state; a job's usage with
	 * every health report, which bumps no version (sched_server_report()) */
	bool cacheable = p->kind != FS_NODE_INFO && p->kind != FS_JOB_STATUS_JSON &&
			 p->kind != FS_CLUSTER_UTILIZATION; /* a sample bumps no version */
	/* cluster/jobs' ages move with the clock in whole seconds: a render is kept for
	 * its second (readers in a loop, through the mount or over HTTP, render it once a
	 * second at most) */
	uint64_t second = p->kind == FS_CLUSTER_JOBS ? now_usec / 1000000u : 0;
	struct fs_cache_slot *victim = &ctx->cache[0];
	struct fs_blob *b;
	char *buf;
	size_t len;
	int r;

	if (p->kind == FS_CLUSTER_EVENTS || p->kind == FS_CLUSTER_ACCOUNTING)
		return stream_snapshot(ctx, p->kind == FS_CLUSTER_ACCOUNTING, "", ret);
	if (p->kind == FS_JOB_EVENTS || p->kind == FS_JOB_ACCOUNTING)
		return sched_cluster_find_job(ctx->cluster, p->job) ?
			       stream_snapshot(ctx, p->kind == FS_JOB_ACCOUNTING, p->job, ret) :
			       -ENOENT;
	if (cacheable) {
		for (size_t i = 0; i < FS_CACHE_SLOTS; i++) {
			struct fs_cache_slot *s = &ctx->cache[i];

			if (s->blob && s->version == version && s->second == second &&
			    path_equal(&s->path, p)) {
				s->last_use = ++ctx->cache_clock;
				ctx->cache_hits++;
				*ret = (struct fs_view){ blob_get(s->blob), 0, s->blob->len };
				return 0;
			}
			if (!s->blob || s->version != version)
				victim = s; /* empty or stale: reuse first */
			else if (victim->blob && victim->version == version &&
				 s->last_use < victim->last_use)
				victim = s;
		}
	}
	ctx->cache_misses++;
	r = fs_render(ctx, p, now_usec, &buf, &len);
	if (r < 0)
		return r;
	/* the rendered buffer becomes the blob: no second copy of a large render */
	b = blob_new(buf, len, len + 1);
	if (!b) {
		free(buf);
		return -ENOMEM;
	}
	if (cacheable) {
		blob_unlive(victim->blob);
		victim->path = *p;
		victim->version = version;
		victim->second = second;
		victim->last_use = ++ctx->cache_clock;
		victim->blob = blob_get(b);
		b->live = true;
		b->version = version;
	}
	*ret = (struct fs_view){ b, 0, len };
	return 0;
}

void fs_snapshot_tally_begin(struct fs_ctx *ctx, struct fs_snapshot_tally *t)
{
	*t = (struct fs_snapshot_tally){ .epoch = ++ctx->admit_epoch,
					 .version = ctx->cluster->version };
}

void fs_snapshot_tally_add(struct fs_snapshot_tally *t, struct fs_blob *b)
{
	t->count++;
	if ((b->live && (b->version == t->version || b->version == UINT64_MAX)) ||
	    b->mark == t->epoch)
		return;
	b->mark = t->epoch;
	t->bytes += b->cap;
}

void fs_snapshot_tally_add_buffer(struct fs_snapshot_tally *t, size_t bytes)
{
	t->count++;
	t->bytes += bytes;
}

int fs_snapshot_tally_check(const struct fs_snapshot_tally *t, uid_t uid)
{
	if (uid == 0)
		return 0;
	if (t->count > FS_OPEN_FILES_PER_USER || t->bytes > FS_SNAPSHOT_BYTES_PER_USER)
		return -EMFILE;
	return 0;
}
