/* SPDX-License-Identifier: MIT */
/*
 * What every handle kind shares: the list of each user's open files (and the per-user
 * bound on them), the write buffer, who the opener is, and the "refused" note for a
 * request that names no job.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "fs_internal.h"

static int users_reserve(struct fs_ctx *ctx)
{
	size_t cap = ctx->handle_user_cap ? ctx->handle_user_cap * 2 : 16;
	struct fs_handle_user **n;

	if (ctx->handle_user_count < ctx->handle_user_cap)
		return 0;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->handle_user_cap; i++)
		while (ctx->handle_users[i]) {
			struct fs_handle_user *w = ctx->handle_users[i];
			size_t b = fs_uid_hash(w->uid) & (cap - 1);

			ctx->handle_users[i] = w->next;
			w->next = n[b];
			n[b] = w;
		}
	free(ctx->handle_users);
	ctx->handle_users = n;
	ctx->handle_user_cap = cap;
	return 0;
}

/* @uid's slot in its bucket (*slot NULL: no entry), or NULL with no buckets yet. */
static struct fs_handle_user **user_slot(const struct fs_ctx *ctx, uid_t uid)
{
	struct fs_handle_user **pp;

	if (!ctx->handle_user_cap)
		return NULL;
	pp = &ctx->handle_users[fs_uid_hash(uid) & (ctx->handle_user_cap - 1)];
	while (*pp && (*pp)->uid != uid)
		pp = &(*pp)->next;
	return pp;
}

int fs_handle_list(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct fs_handle_user **wp;

	if (users_reserve(ctx) < 0)
		return -ENOMEM;
	wp = user_slot(ctx, h->uid);
	if (!*wp) {
		struct fs_handle_user *w = calloc(1, sizeof(*w));

		if (!w)
			return -ENOMEM;
		w->uid = h->uid;
		*wp = w;
		ctx->handle_user_count++;
	}
	h->prev = NULL;
	h->next = (*wp)->head;
	if (h->next)
		h->next->prev = h;
	(*wp)->head = h;
	(*wp)->count++;
	return 0;
}

void fs_handle_unlist(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct fs_handle_user **wp = user_slot(ctx, h->uid);
	struct fs_handle_user *w = wp ? *wp : NULL;

	if (!w || (!h->prev && w->head != h))
		return; /* not listed (a listed file without a predecessor heads the list) */
	if (h->prev)
		h->prev->next = h->next;
	else
		w->head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->prev = h->next = NULL;
	w->count--;
	if (h->closing) {
		h->closing = false;
		w->closing_count--;
		w->releases++;
		if (w->waiter)
			pthread_cond_broadcast(&ctx->handles_cv);
	}
	if (w->count == 0 && !w->waiter) { /* a waiter's entry stays until it has looked */
		*wp = w->next;
		free(w);
		ctx->handle_user_count--;
	}
}

struct fs_handle *fs_handles_of(const struct fs_ctx *ctx, uid_t uid)
{
	struct fs_handle_user **wp = user_slot(ctx, uid);

	return wp && *wp ? (*wp)->head : NULL;
}

struct fs_handle *fs_handle_unlist_any(struct fs_ctx *ctx)
{
	for (size_t i = 0; i < ctx->handle_user_cap; i++)
		while (ctx->handle_users[i]) {
			struct fs_handle_user *w = ctx->handle_users[i];
			struct fs_handle *h = w->head;

			if (h) {
				w->waiter = false; /* at exit nobody waits */
				fs_handle_unlist(ctx, h);
				return h;
			}
			ctx->handle_users[i] = w->next;
			free(w);
			ctx->handle_user_count--;
		}
	free(ctx->handle_users);
	ctx->handle_users = NULL;
	ctx->handle_user_cap = 0;
	return NULL;
}

int fs_handle_admit(struct fs_ctx *ctx, uid_t uid, struct fs_blob *b)
{
	struct fs_snapshot_tally t;

	if (uid == 0)
		return 0;
	fs_snapshot_tally_begin(ctx, &t);
	for (struct fs_handle *h = fs_handles_of(ctx, uid); h; h = h->next) {
		if (h->kind == H_SNAPSHOT)
			fs_snapshot_tally_add(&t, h->snap.blob);
		else if (h->kind == H_CTL || h->kind == H_LOG || h->kind == H_WHATIF)
			fs_snapshot_tally_add_buffer(&t, CTL_BUFFER_MAX_BYTES);
	}
	if (b)
		fs_snapshot_tally_add(&t, b);
	else
		fs_snapshot_tally_add_buffer(&t, CTL_BUFFER_MAX_BYTES);
	return fs_snapshot_tally_check(&t, uid);
}

void fs_handle_set_closing(struct fs_ctx *ctx, struct fs_handle *h, uint64_t now_usec)
{
	struct fs_handle_user **wp = user_slot(ctx, h->uid);

	if ((h->kind != H_SNAPSHOT && h->kind != H_CTL) || !wp || !*wp)
		return;
	if (!h->closing) {
		h->closing = true;
		(*wp)->closing_count++;
	}
	if (now_usec > (*wp)->closing_usec)
		(*wp)->closing_usec = now_usec;
}

bool fs_handle_wait_release(struct fs_ctx *ctx, uid_t uid, const struct timespec *deadline)
{
	struct fs_handle_user **wp = user_slot(ctx, uid);
	struct fs_handle_user *w = wp ? *wp : NULL;
	uint64_t releases;
	bool released = false;

	/* only a close within the window: a descriptor held open after one of its
	 * duplicates closed makes no room */
	if (!ctx->multithreaded || !w || !w->closing_count || w->waiter ||
	    fs_now_usec() - w->closing_usec >= (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u)
		return false;
	releases = w->releases;
	w->waiter = true;
	while (!released && pthread_cond_timedwait(&ctx->handles_cv, &ctx->lock, deadline) !=
				    ETIMEDOUT)
		released = w->releases != releases;
	released = w->releases != releases; /* a release and the deadline at once */
	w->waiter = false;
	if (w->count == 0) { /* its last file went while we waited: the entry is ours */
		wp = user_slot(ctx, uid);
		*wp = w->next;
		free(w);
		ctx->handle_user_count--;
	}
	return released;
}

/*
 * Is the close being flushed the opener's own: the process that opened the file, from
 * any of its threads (cp, tee, a shell's `echo > file`, a program that opened the spec in
 * a thread that has exited since)? Staging a spec that a close accepted makes it survive
 * a crash before its release; but in `{ cat a; echo b; } > x.yaml` the first flush is
 * cat's, a child holding a duplicate, and what it accepts is half of the spec. Only the
 * opener's close stages; those of other processes holding a duplicate (a forked child,
 * a receiver of SCM_RIGHTS) wait for the release. Processes are told apart by thread
 * group and start time (fs_proc.c), which no thread's exit and no recycled pid changes.
 * A caller the daemon cannot see (pid 0: another pid namespace) is unknown at open and
 * at flush alike and counts as the opener, as it always did. A create's opener is read
 * just after the create is answered (fs_op_create_answered()): a thread that created the
 * spec and ended before that read is unknown too, and its process's close then stages
 * nothing (the spec is still applied at the release).
 */
bool fs_handle_flush_is_openers(const struct fs_handle *h)
{
	struct fs_proc_id me = { 0 };

	(void)fs_proc_id_of(fs_caller_pid(), &me);
	return fs_proc_id_equal(&me, &h->opener);
}


/*
 * A refused request that names no job the user can look at (a bad name in jobs/, a
 * cluster/ctl or nodes/<server>/ctl line): logged at @level and, so the user can read why
 * without the daemon's log, a "refused" event in cluster/events. @reason holds user bytes
 * only escaped (fs_text_escape). Takes ctx->lock.
 */
void fs_refusal_note(struct fs_ctx *ctx, int level, const char *server, const char *reason)
{
	fs_log(ctx, level, "%s", reason);
	pthread_mutex_lock(&ctx->lock);
	sched_cluster_note_refusal(ctx->cluster, server, reason, fs_now_usec());
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
}


int fs_handle_buffer_put(struct fs_handle *h, const char *data, size_t size, off_t off, size_t max)
{
	size_t end;

	if (off < 0 || (size_t)off > h->len)
		return -EINVAL; /* no holes in a spec */
	end = (size_t)off + size;
	if (end > max)
		return -EFBIG;
	if (end + 1 > h->cap) {
		size_t cap = h->cap ? h->cap : 1024;
		char *n;

		while (cap < end + 1)
			cap *= 2;
		n = realloc(h->buf, cap);
		if (!n)
			return -ENOMEM;
		h->buf = n;
		h->cap = cap;
	}
	memcpy(h->buf + off, data, size);
	if (end > h->len)
		h->len = end;
	h->buf[h->len] = '\0';
	return 0;
}
