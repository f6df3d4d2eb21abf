/* SPDX-License-Identifier: MIT */
/*
 * The specs open for writing (ctx->uploads): a list in opening order for the jobs/
 * listing, a hash by name for every lookup of one job, and a count per user for
 * cluster.max_uploads_per_user. Each operation costs the same however many uploads are
 * open (issue 15 item 6: a client holding 20,000 must not slow anybody else down).
 * Per user also how many are closing (close() returned; the kernel's RELEASE, sent after
 * it, on its way), so that a create at the limit right after a close waits for that
 * release rather than fail. Everything here runs under ctx->lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

static size_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

/* Rehash into twice the buckets once there are as many entries as buckets. */
static int index_reserve(struct fs_ctx *ctx)
{
	size_t cap = ctx->upload_cap ? ctx->upload_cap * 2 : 64;
	struct fs_upload **n;

	if (ctx->upload_count < ctx->upload_cap)
		return 0;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->upload_cap; i++)
		while (ctx->upload_index[i]) {
			struct fs_upload *u = ctx->upload_index[i];
			size_t b = name_hash(u->name) & (cap - 1);

			ctx->upload_index[i] = u->hnext;
			u->hnext = n[b];
			n[b] = u;
		}
	free(ctx->upload_index);
	ctx->upload_index = n;
	ctx->upload_cap = cap;
	return 0;
}

static int users_reserve(struct fs_ctx *ctx)
{
	size_t cap = ctx->upload_user_cap ? ctx->upload_user_cap * 2 : 16;
	struct fs_upload_user **n;

	if (ctx->upload_user_count < ctx->upload_user_cap)
		return 0;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->upload_user_cap; i++)
		while (ctx->upload_users[i]) {
			struct fs_upload_user *w = ctx->upload_users[i];
			size_t b = fs_uid_hash(w->uid) & (cap - 1);

			ctx->upload_users[i] = w->next;
			w->next = n[b];
			n[b] = w;
		}
	free(ctx->upload_users);
	ctx->upload_users = n;
	ctx->upload_user_cap = cap;
	return 0;
}

static struct fs_upload_user **user_slot(const struct fs_ctx *ctx, uid_t uid)
{
	struct fs_upload_user **pp;

	if (!ctx->upload_user_cap)
		return NULL;
	pp = &ctx->upload_users[fs_uid_hash(uid) & (ctx->upload_user_cap - 1)];
	while (*pp && (*pp)->uid != uid)
		pp = &(*pp)->next;
	return pp;
}

unsigned fs_upload_count(const struct fs_ctx *ctx, uid_t uid)
{
	struct fs_upload_user **pp = user_slot(ctx, uid);

	return pp && *pp ? (*pp)->open_count : 0;
}

struct fs_upload *fs_upload_find(const struct fs_ctx *ctx, const char *name)
{
	struct fs_upload *u;

	if (!ctx->upload_cap)
		return NULL;
	for (u = ctx->upload_index[name_hash(name) & (ctx->upload_cap - 1)]; u; u = u->hnext)
		if (strcmp(u->name, name) == 0)
			return u;
	return NULL;
}

int fs_upload_add(struct fs_ctx *ctx, struct fs_upload *u, unsigned max_per_user)
{
	struct fs_upload_user **wp, *w;
	size_t b;

	if (fs_upload_find(ctx, u->name))
		return -EBUSY;
	if (max_per_user && fs_upload_count(ctx, u->uid) >= max_per_user)
		return -EMFILE;
	if (index_reserve(ctx) < 0 || users_reserve(ctx) < 0)
		return -ENOMEM;
	wp = user_slot(ctx, u->uid);
	if (!*wp) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return -ENOMEM;
		w->uid = u->uid;
		*wp = w;
		ctx->upload_user_count++;
	}
	(*wp)->open_count++;
	b = name_hash(u->name) & (ctx->upload_cap - 1);
	u->hnext = ctx->upload_index[b];
	ctx->upload_index[b] = u;
	ctx->upload_count++;
	u->prev = NULL;
	u->next = ctx->uploads;
	if (u->next)
		u->next->prev = u;
	ctx->uploads = u;
	return 0;
}

void fs_upload_set_closing(struct fs_ctx *ctx, struct fs_upload *u, bool closing,
			   uint64_t now_usec)
{
	struct fs_upload_user **wp;

	if (u->closing == closing)
		return;
	u->closing = closing;
	if (closing)
		u->closing_usec = now_usec;
	if (fs_upload_find(ctx, u->name) != u || !(wp = user_slot(ctx, u->uid)) || !*wp)
		return; /* not listed */
	if (!closing) {
		(*wp)->closing_count--;
		return;
	}
	(*wp)->closing_count++;
	if (now_usec > (*wp)->closing_usec)
		(*wp)->closing_usec = now_usec;
}

int fs_upload_add_after_releases(struct fs_ctx *ctx, struct fs_upload *u, unsigned max_per_user)
{
	struct timespec deadline;
	int r = -EMFILE;

	if (!ctx->multithreaded)
		return r;
	fs_deadline_in(&deadline, FS_RELEASE_WAIT_MSEC);
	for (;;) {
		struct fs_upload_user **wp = user_slot(ctx, u->uid);
		struct fs_upload_user *w = wp ? *wp : NULL;
		int t;

		/* only a close within the window: a descriptor held open after one of its
		 * duplicates closed makes no room */
		if (!w || !w->closing_count || w->waiter ||
		    fs_now_usec() - w->closing_usec >= (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u)
			return r;
		w->waiter = true;
		t = pthread_cond_timedwait(&ctx->uploads_cv, &ctx->lock, &deadline);
		/* the entry may have gone with the user's last upload, and come back */
		wp = user_slot(ctx, u->uid);
		if (wp && *wp)
			(*wp)->waiter = false;
		r = fs_upload_add(ctx, u, max_per_user);
		if (r != -EMFILE || t == ETIMEDOUT)
			return r;
	}
}

void fs_upload_remove(struct fs_ctx *ctx, struct fs_upload *u)
{
	struct fs_upload **pp;
	struct fs_upload_user **wp;

	if (!ctx->upload_cap)
		return; /* nothing listed */
	pp = &ctx->upload_index[name_hash(u->name) & (ctx->upload_cap - 1)];
	wp = user_slot(ctx, u->uid);
	while (*pp && *pp != u)
		pp = &(*pp)->hnext;
	if (!*pp)
		return; /* not listed */
	*pp = u->hnext;
	ctx->upload_count--;
	if (u->prev)
		u->prev->next = u->next;
	else
		ctx->uploads = u->next;
	if (u->next)
		u->next->prev = u->prev;
	u->prev = u->next = u->hnext = NULL;
	if (wp && *wp && u->closing)
		(*wp)->closing_count--;
	if (wp && *wp && --(*wp)->open_count == 0) {
		struct fs_upload_user *w = *wp;

		*wp = w->next;
		free(w);
		ctx->upload_user_count--;
	}
}

void fs_uploads_free_all(struct fs_ctx *ctx)
{
	while (ctx->uploads) {
		struct fs_upload *u = ctx->uploads;

		ctx->uploads = u->next;
		free(u);
	}
	for (size_t i = 0; i < ctx->upload_user_cap; i++)
		while (ctx->upload_users[i]) {
			struct fs_upload_user *w = ctx->upload_users[i];

			ctx->upload_users[i] = w->next;
			free(w);
		}
	free(ctx->upload_users);
	free(ctx->upload_index);
	ctx->upload_users = NULL;
	ctx->upload_index = NULL;
	ctx->upload_cap = ctx->upload_count = ctx->upload_user_cap = ctx->upload_user_count = 0;
}
