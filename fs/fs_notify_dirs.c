/* SPDX-License-Identifier: MIT */
/*
 * Job directories and inotify: which job directories watchers have been told of, and
 * which mkdir or rmdir the notify helper is still to make (fs.h says why the helper makes
 * them, fs_notify.c when). Both are looked up by name on every request of the helper
 * about a job directory and on every lookup of one (fs_lowlevel.c asks whether the kernel
 * may keep its name), so both are hashed by name: a lookup costs the same with 10 or
 * 100,000 jobs, and with 10 or 10,000 announcements pending after a burst of submissions
 * (a list walked per lookup made a burst of n submissions cost n^2 under ctx->lock, and an
 * unmount right after 40,000 of them wait 14 s). Everything here needs ctx->lock.
 *
 * A pending mkdir or rmdir is dropped when the helper makes it; when it makes a later one
 * (it reads its lines in order: it has passed this one, which it did not make, e.g. one
 * whose line could not be formatted); when the helper is gone (never started, broken, told
 * to end: fs_job_dirs_written()); and, should the helper stall, when it has made none for
 * DIR_POKE_STALL_USEC since the line was written. Never for being queued behind others:
 * dropped 5 s after it was queued, bursts of submissions lost hundreds, and a busy daemon
 * that answers the helper slowly lost some with the helper only its pipe behind.
 */
#include <stdlib.h>
#include <string.h>

#include "fs.h"

#define DIR_POKE_STALL_USEC (30 * 1000000ull)

/* A job directory watchers were told of: one per job, sized to its name. */
struct known_dir {
	struct known_dir *next;	/* hash chain */
	uint64_t serial;
	char name[];
};

/* A mkdir (kind 1) or rmdir (kind 2) the helper is to make. */
struct pending_dir {
	struct pending_dir *next;		/* hash chain */
	struct pending_dir *older, *newer;	/* in the order announced */
	uint64_t serial;
	uint64_t written_usec;	/* when its round was written to the helper; 0 before */
	int kind;
	char name[];
};

struct fs_job_dirs {
	struct known_dir **known;	/* known_cap buckets (a power of two, 0 = none yet) */
	size_t known_cap, known_count;
	struct pending_dir **pending;	/* pending_cap buckets (likewise) */
	size_t pending_cap, pending_count;
	struct pending_dir *oldest, *newest;
	uint64_t last_made_usec;	/* when the helper last made a pending mkdir/rmdir */
};

/* FNV-1a of @name, as a bucket of @cap (a power of two, not 0). */
static size_t name_bucket(const char *name, size_t cap)
{
	uint64_t h = 14695981039346656037ull;

	for (const unsigned char *s = (const unsigned char *)name; *s; s++)
		h = (h ^ *s) * 1099511628211ull;
	return (size_t)(h & (cap - 1));
}

static struct fs_job_dirs *dirs_of(struct fs_ctx *ctx)
{
	if (!ctx->job_dirs)
		ctx->job_dirs = calloc(1, sizeof(*ctx->job_dirs));
	return ctx->job_dirs;
}

/*
 * Make room for one more entry: a full table doubles and is rehashed. False without
 * memory and without buckets (with buckets the chains get longer, still right).
 */
static bool known_grow(struct fs_job_dirs *t)
{
	size_t cap = t->known_cap ? t->known_cap * 2 : 1024;
	struct known_dir **n;

	if (t->known_count < t->known_cap)
		return true;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return t->known_cap != 0;
	for (size_t i = 0; i < t->known_cap; i++)
		for (struct known_dir *d = t->known[i], *next; d; d = next) {
			size_t b = name_bucket(d->name, cap);

			next = d->next;
			d->next = n[b];
			n[b] = d;
		}
	free(t->known);
	t->known = n;
	t->known_cap = cap;
	return true;
}

static bool pending_grow(struct fs_job_dirs *t)
{
	size_t cap = t->pending_cap ? t->pending_cap * 2 : 1024;
	struct pending_dir **n;

	if (t->pending_count < t->pending_cap)
		return true;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return t->pending_cap != 0;
	/* the order announced is kept apart: every entry is on it */
	for (struct pending_dir *d = t->oldest; d; d = d->newer) {
		size_t b = name_bucket(d->name, cap);

		d->next = n[b];
		n[b] = d;
	}
	free(t->pending);
	t->pending = n;
	t->pending_cap = cap;
	return true;
}

/* A directory watchers have seen; false without memory (a missed announcement later). */
static bool known_add(struct fs_job_dirs *t, const char *name, uint64_t serial)
{
	size_t len = strnlen(name, CONF_NAME_MAX), b;
	struct known_dir *d;

	if (!known_grow(t))
		return false;
	d = malloc(sizeof(*d) + len + 1);
	if (!d)
		return false;
	memcpy(d->name, name, len);
	d->name[len] = '\0';
	d->serial = serial;
	b = name_bucket(d->name, t->known_cap);
	d->next = t->known[b];
	t->known[b] = d;
	t->known_count++;
	return true;
}

/* Is @serial known (under its job's @name only)? *@same_name: another serial is. */
static bool known_has(const struct fs_job_dirs *t, uint64_t serial, const char *name,
		      bool *same_name)
{
	if (!t->known_cap)
		return false;
	for (const struct known_dir *d = t->known[name_bucket(name, t->known_cap)]; d;
	     d = d->next) {
		if (d->serial == serial)
			return true;
		if (strcmp(d->name, name) == 0)
			*same_name = true;
	}
	return false;
}

/*
 * A name has at most two pending, an rmdir and then a mkdir (its directory went and came
 * back before the helper made the rmdir); a chain holds the newer first (pushed at its
 * head, rehashed oldest first). pending_find() gives the link of the older, the one the
 * helper comes to first; pending_newest() the newer.
 */
static struct pending_dir **pending_find(struct fs_job_dirs *t, const char *name)
{
	struct pending_dir **pp, **found = NULL;

	if (!t->pending_cap)
		return NULL;
	for (pp = &t->pending[name_bucket(name, t->pending_cap)]; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			found = pp;
	return found;
}

static struct pending_dir **pending_newest(struct fs_job_dirs *t, const char *name)
{
	struct pending_dir **pp;

	if (!t->pending_cap)
		return NULL;
	for (pp = &t->pending[name_bucket(name, t->pending_cap)]; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			return pp;
	return NULL;
}

/* Unlink *@pp (a pending entry's place in its chain) and free it. */
static void pending_drop(struct fs_job_dirs *t, struct pending_dir **pp)
{
	struct pending_dir *d = *pp;

	*pp = d->next;
	if (d->older)
		d->older->newer = d->newer;
	else
		t->oldest = d->newer;
	if (d->newer)
		d->newer->older = d->older;
	else
		t->newest = d->older;
	t->pending_count--;
	free(d);
}

/* A mkdir (@kind 1) or rmdir (2) of jobs/@name for the helper; false without memory. */
static bool pending_push(struct fs_job_dirs *t, const char *name, uint64_t serial, int kind)
{
	size_t len = strnlen(name, CONF_NAME_MAX), b;
	struct pending_dir *d;

	if (!pending_grow(t))
		return false;
	d = calloc(1, sizeof(*d) + len + 1);
	if (!d)
		return false;
	memcpy(d->name, name, len);
	d->name[len] = '\0';
	d->serial = serial;
	d->kind = kind;
	b = name_bucket(d->name, t->pending_cap);
	d->next = t->pending[b];
	t->pending[b] = d;
	d->older = t->newest;
	if (t->newest)
		t->newest->newer = d;
	else
		t->oldest = d;
	t->newest = d;
	t->pending_count++;
	return true;
}

void fs_notify_job_dir_user(struct fs_ctx *ctx, const char *name, uint64_t serial, bool made)
{
	struct fs_job_dirs *t = dirs_of(ctx);
	struct pending_dir **pend;

	if (!t)
		return;
	/* the kernel told watchers where the directory is now: what the helper was still to
	 * tell is past (an rmdir made after this mkdir would tell them it went) */
	while ((pend = pending_newest(t, name)))
		pending_drop(t, pend);
	if (made) {
		known_add(t, name, serial);
		return;
	}
	if (!t->known_cap)
		return;
	for (struct known_dir **pp = &t->known[name_bucket(name, t->known_cap)]; *pp;) {
		struct known_dir *d = *pp;

		if (strcmp(d->name, name) == 0) {
			*pp = d->next;
			free(d);
			t->known_count--;
		} else {
			pp = &d->next;
		}
	}
}

int fs_notify_job_dir(struct fs_ctx *ctx, const char *name, int take)
{
	struct pending_dir **pp = ctx->job_dirs ? pending_find(ctx->job_dirs, name) : NULL;
	int kind;

	if (!pp)
		return 0;
	kind = (*pp)->kind;
	if (take == kind) {
		struct fs_job_dirs *t = ctx->job_dirs;
		const struct pending_dir *made = *pp;

		/* the helper has passed the lines before this one (each drop may free the
		 * link @pp is: found again after) */
		while (t->oldest != made)
			pending_drop(t, pending_find(t, t->oldest->name));
		pending_drop(t, pending_find(t, made->name));
		t->last_made_usec = fs_now_usec();
	}
	return kind;
}

bool fs_notify_job_dir_settled(struct fs_ctx *ctx, const char *name)
{
	const struct sched_job *j = sched_cluster_find_job(ctx->cluster, name);
	bool replaced = false;

	return j && ctx->job_dirs && known_has(ctx->job_dirs, j->serial, name, &replaced) &&
	       !fs_notify_job_dir(ctx, name, 0);
}

void fs_job_dirs_know_all(struct fs_ctx *ctx)
{
	struct fs_job_dirs *t = dirs_of(ctx);

	for (size_t i = 0; t && i < ctx->cluster->job_count; i++)
		known_add(t, ctx->cluster->jobs[i]->name, ctx->cluster->jobs[i]->serial);
}

bool fs_job_dirs_new(struct fs_ctx *ctx, const struct sched_job *j, bool *ret_announce)
{
	struct fs_job_dirs *t = dirs_of(ctx);
	bool replaced = false;

	struct pending_dir **newest;

	*ret_announce = false;
	if (!t || known_has(t, j->serial, j->name, &replaced))
		return false;
	/* a name whose job was replaced by a new one (a resubmission): its directory stayed;
	 * one with a mkdir of the helper's pending: that one announces it; with an rmdir
	 * pending (the old job's record went), a mkdir after it: watchers are told it went,
	 * then that it is back */
	if (!known_add(t, j->name, j->serial) || replaced)
		return true;
	newest = pending_newest(t, j->name);
	if (newest && (*newest)->kind == 1)
		return true;
	*ret_announce = pending_push(t, j->name, j->serial, 1);
	return true;
}

/*
 * The directory of @name (serial @serial) went by the daemon's doing: an rmdir for the
 * helper to make (true: a line to write), unless a mkdir of the helper's is still
 * pending, which is then dropped instead (the directory came and went before watchers
 * were told; should the helper have its line already, its mkdir finds nothing pending
 * and fails, unannounced).
 */
static bool dir_goes(struct fs_job_dirs *t, const char *name, uint64_t serial)
{
	struct pending_dir **newest = pending_newest(t, name);

	if (newest && (*newest)->kind == 1) {
		pending_drop(t, newest);
		return false;
	}
	return !newest && pending_push(t, name, serial, 2);
}

void fs_job_dirs_sweep(struct fs_ctx *ctx, void (*gone)(void *arg, const char *name,
							bool announce), void *arg)
{
	struct fs_job_dirs *t = ctx->job_dirs;

	for (size_t i = 0; t && i < t->known_cap; i++) {
		for (struct known_dir **pp = &t->known[i]; *pp;) {
			struct known_dir *d = *pp;
			const struct sched_job *j = sched_cluster_find_job(ctx->cluster, d->name);

			if (j && j->serial == d->serial) {
				pp = &d->next;
				continue;
			}
			*pp = d->next;
			t->known_count--;
			gone(arg, d->name, !j && dir_goes(t, d->name, d->serial));
			free(d);
		}
	}
}

void fs_job_dirs_written(struct fs_ctx *ctx, uint64_t now_usec, bool helper_gone)
{
	struct fs_job_dirs *t = ctx->job_dirs;

	/* nobody will make them */
	while (helper_gone && t && t->oldest)
		pending_drop(t, pending_find(t, t->oldest->name));
	/* the round's are the newest: pushed by the notifier alone, after the last round's */
	for (struct pending_dir *d = t ? t->newest : NULL; d && !d->written_usec; d = d->older)
		d->written_usec = now_usec ? now_usec : 1;
}

void fs_job_dirs_expire(struct fs_ctx *ctx, uint64_t now_usec)
{
	struct fs_job_dirs *t = ctx->job_dirs;

	/* a helper that made none since the line was written, for that long, is stuck */
	while (t && t->oldest && t->oldest->written_usec &&
	       now_usec - t->oldest->written_usec > DIR_POKE_STALL_USEC &&
	       now_usec - t->last_made_usec > DIR_POKE_STALL_USEC)
		pending_drop(t, pending_find(t, t->oldest->name));
}

void fs_job_dirs_free(struct fs_ctx *ctx)
{
	struct fs_job_dirs *t = ctx->job_dirs;

	if (!t)
		return;
	for (size_t i = 0; i < t->known_cap; i++)
		for (struct known_dir *d = t->known[i], *next; d; d = next) {
			next = d->next;
			free(d);
		}
	for (struct pending_dir *d = t->oldest, *next; d; d = next) {
		next = d->newer;
		free(d);
	}
	free(t->known);
	free(t->pending);
	free(t);
	ctx->job_dirs = NULL;
}
