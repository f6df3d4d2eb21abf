/* SPDX-License-Identifier: MIT */
/*
 * What every handle kind shares: the write buffer, who the opener is, and the
 * "refused" note for a request that names no job.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse.h>

#include "fs_internal.h"

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
 * at flush alike and counts as the opener, as it always did.
 */
bool fs_handle_flush_is_openers(const struct fs_handle *h)
{
	struct fs_proc_id me = { 0 };

	(void)fs_proc_id_of(fuse_get_context()->pid, &me);
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
