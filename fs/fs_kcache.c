/* SPDX-License-Identifier: MIT */
/*
 * The kernel's page cache for the files that change only with a job's generation
 * (ranktable.json, topology.json, env, hosts/<server>.env, ranks/<rank>.env; issue 16): a
 * `cat` of a rank table then costs one OPEN round trip, not a READ of every byte through
 * the daemon.
 *
 * The page cache of an inode is shared by all its open files, so the per-open snapshot
 * holds only if every page in it is of one snapshot, and every open file that reads
 * through it has those bytes. Hence one slot per path: the bytes (a blob reference) the
 * cached-mode opens of that path read, and how many are open. An open whose snapshot has
 * those bytes joins them (keep_cache); one with other bytes while any is open reads around
 * the cache (direct_io), and one with other bytes when none is open takes the slot over
 * (keep_cache off: the kernel drops the old pages at open, and is told the size it keeps
 * is stale, so it asks the size at the first read). Pages are filled only through
 * cached-mode opens (the kernel reads a page through the file that misses it), all of one
 * snapshot.
 *
 * The kernel clamps cached reads to i_size, which any stat() of the path sets: while
 * cached-mode opens exist, getattr of that path reports their size (fs_kcache_size()), so
 * that a reader holding the old bytes never sees them cut short by the new size. The
 * kernel does not keep a size that is not the file's own (fs_lowlevel.c): a stat() after the
 * last of those opens is released asks again and gets the file's (between its close()
 * and the RELEASE, which the kernel sends a little later, still theirs).
 */
#include <stdint.h>
#include <string.h>

#include "fs.h"

bool fs_kcache_kind(enum fs_node_kind k)
{
	return k == FS_JOB_RANKTABLE || k == FS_JOB_TOPOLOGY || k == FS_JOB_ENV ||
	       k == FS_JOB_HOST_ENV || k == FS_JOB_RANK_ENV;
}

static bool path_equal(const struct fs_path *a, const struct fs_path *b)
{
	return a->kind == b->kind && a->rank == b->rank && strcmp(a->job, b->job) == 0 &&
	       strcmp(a->item, b->item) == 0;
}

/* FNV-1a of what names the file; the slot index starts there. */
static size_t path_hash(const struct fs_path *p)
{
	uint64_t h = 14695981039346656037ull;

	h = (h ^ (unsigned)p->kind) * 1099511628211ull;
	h = (h ^ p->rank) * 1099511628211ull;
	for (const unsigned char *s = (const unsigned char *)p->job; *s; s++)
		h = (h ^ *s) * 1099511628211ull;
	for (const unsigned char *s = (const unsigned char *)p->item; *s; s++)
		h = (h ^ *s) * 1099511628211ull;
	return (size_t)(h % FS_KCACHE_SLOTS);
}

/*
 * The slot of @p, or with @make one to take for it (free, or the least recently used one
 * no open file holds); NULL when none is found within FS_KCACHE_PROBE slots.
 */
static struct fs_kcache_slot *slot_find(struct fs_ctx *ctx, const struct fs_path *p, bool make)
{
	size_t start = path_hash(p);
	struct fs_kcache_slot *victim = NULL;

	for (size_t i = 0; i < FS_KCACHE_PROBE; i++) {
		struct fs_kcache_slot *s = &ctx->kcache[(start + i) % FS_KCACHE_SLOTS];

		if (s->blob && path_equal(&s->path, p))
			return s;
		if (s->open_count)
			continue;
		if (!victim || !s->blob || (victim->blob && s->last_use < victim->last_use))
			victim = s;
	}
	return make ? victim : NULL;
}

static bool same_bytes(const struct fs_blob *b, const struct fs_view *v)
{
	return b->len == v->len && memcmp(b->data, v->blob->data + v->off, v->len) == 0;
}

int fs_kcache_open(struct fs_ctx *ctx, const struct fs_path *p, const struct fs_view *v,
		   struct fs_kcache_slot **ret)
{
	struct fs_kcache_slot *s;
	bool same;

	if (!fs_kcache_kind(p->kind) || v->off != 0 || v->len != v->blob->len)
		return -1;
	s = slot_find(ctx, p, true);
	if (!s)
		return -1;
	s->last_use = ++ctx->cache_clock;
	same = s->blob && path_equal(&s->path, p) &&
	       (s->blob == v->blob || same_bytes(s->blob, v));
	if (same && s->open_count) {
		/* a blob rendered since with the same bytes: compare pointers next time */
		if (s->blob != v->blob) {
			fs_blob_put(s->blob);
			s->blob = fs_blob_get(v->blob);
		}
		s->open_count++;
		*ret = s;
		return 1;
	}
	if (s->open_count) /* other bytes while the cache serves these: read around it */
		return -1;
	/*
	 * None open: this open takes the slot. The same blob as before means nothing was
	 * rendered since, so every size the kernel was told is this one: keep the pages.
	 * Anything else (new bytes, or the same bytes rendered again, between which others
	 * may have been stat()ed) drops pages and attributes.
	 */
	if (same && s->blob == v->blob) {
		s->open_count = 1;
		*ret = s;
		return 1;
	}
	fs_blob_put(s->blob);
	s->path = *p;
	s->blob = fs_blob_get(v->blob);
	s->open_count = 1;
	*ret = s;
	return 0;
}

void fs_kcache_release(struct fs_kcache_slot *s)
{
	if (s && s->open_count)
		s->open_count--;
}

bool fs_kcache_size(struct fs_ctx *ctx, const struct fs_path *p, size_t *ret)
{
	const struct fs_kcache_slot *s;

	if (!fs_kcache_kind(p->kind) || !(s = slot_find(ctx, p, false)) || !s->open_count)
		return false;
	*ret = s->blob->len;
	return true;
}

bool fs_kcache_slot_size(struct fs_ctx *ctx, const struct fs_path *p, size_t *ret)
{
	const struct fs_kcache_slot *s;

	if (!fs_kcache_kind(p->kind) || !(s = slot_find(ctx, p, false)))
		return false;
	*ret = s->blob->len;
	return true;
}

void fs_kcache_clear(struct fs_ctx *ctx)
{
	for (size_t i = 0; i < FS_KCACHE_SLOTS; i++) {
		fs_blob_put(ctx->kcache[i].blob);
		memset(&ctx->kcache[i], 0, sizeof(ctx->kcache[i]));
	}
}
