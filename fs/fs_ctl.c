/* SPDX-License-Identifier: MIT */
/* ctl files (cluster/ctl, nodes/<server>/ctl, jobs/<name>/ctl): one verb per line. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse.h>

#include "fs_internal.h"


/*
 * Run every complete line in the ctl buffer; with @all also a final partial one. The
 * first refused line stops the rest of what was written (they are dropped, not run).
 */
int fs_ctl_run(struct fs_ctx *ctx, struct fs_handle *h, bool all)
{
	char why[SCHED_REASON_MAX], shown[128];
	size_t start = 0;
	int r = 0;

	while (start < h->len && r == 0) {
		char *nl = memchr(h->buf + start, '\n', h->len - start);
		size_t end = nl ? (size_t)(nl - h->buf) : h->len;
		const struct sched_job *j;
		bool job_gone = false;

		if (!nl && !all)
			break;
		h->buf[end] = '\0';
		fs_text_escape(h->buf + start, shown, sizeof(shown));
		why[0] = '\0';
		pthread_mutex_lock(&ctx->lock);
		if (start > 0) /* each line sees what the ones before it decided */
			fs_pass_run_owed(ctx);
		j = h->path.kind == FS_JOB_CTL ? sched_cluster_find_job(ctx->cluster, h->path.job) :
						 NULL;
		if (h->path.kind == FS_JOB_CTL && (!j || j->serial != h->job_serial)) {
			snprintf(why, sizeof(why), "job %s was removed after this file was opened",
				 h->path.job);
			r = -ENOENT;
			job_gone = true;
		} else {
			r = fs_ctl(ctx, &h->path, h->buf + start, h->uid, h->may_operate,
				   fs_now_usec(), why);
		}
		if (r < 0) {
			char line[SCHED_REASON_MAX];

			/* the job's events, or cluster/events for cluster and server ctl */
			snprintf(line, sizeof(line), "ctl \"%.120s\" by uid %u refused: %.320s", shown,
				 (unsigned)h->uid, why[0] ? why : strerror(-r));
			if (h->path.kind == FS_JOB_CTL && !job_gone)
				sched_job_note_refusal(ctx->cluster, h->path.job, line,
						       fs_now_usec());
			else
				sched_cluster_note_refusal(ctx->cluster,
							   h->path.kind == FS_NODE_CTL ?
								   h->path.item : NULL,
							   line, fs_now_usec());
			fs_log(ctx, 1, "%s", line);
		}
		fs_changed(ctx);
		pthread_mutex_unlock(&ctx->lock);
		if (r >= 0 && h->buf[start])
			fs_log(ctx, 2, "ctl \"%s\" by uid %u done", shown, (unsigned)h->uid);
		start = end + 1;
	}
	if (r < 0 || start >= h->len) {
		h->len = 0;
	} else {
		memmove(h->buf, h->buf + start, h->len - start);
		h->len -= start;
	}
	return r;
}

int fs_ctl_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size)
{
	int r;

	if (memchr(data, '\0', size))
		return -EINVAL;
	/* ctl files are streams: append whatever the offset says */
	r = fs_handle_buffer_put(h, data, size, (off_t)h->len, CTL_BUFFER_MAX_BYTES);
	if (r == 0)
		r = fs_ctl_run(ctx, h, false);
	if (r == 0)
		r = (int)size;
	return r;
}
