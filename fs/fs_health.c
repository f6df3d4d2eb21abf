/* SPDX-License-Identifier: MIT */
/* nodes/<server>/health: an agent's report, applied whole at each close. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fuse.h>

#include "fs_internal.h"


/*
 * Refuse the report being written on @h for @why (which names the file): nothing of it
 * is applied, the heartbeat included; it is a "refused" event of the server, and every
 * later write up to the next flush (a close) fails with @err, as does that flush. Then
 * the next write begins a new report.
 */
static void health_refuse(struct fs_ctx *ctx, struct fs_handle *h, const char *why, int err)
{
	int server;

	pthread_mutex_lock(&ctx->lock);
	server = sched_cluster_find_server(ctx->cluster, h->path.item);
	if (server >= 0)
		sched_server_note_refusal(ctx->cluster, (unsigned)server, why, fs_now_usec());
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	fs_log(ctx, 1, "health report refused: %s", why);
	h->failed = true;
	h->last_err = err;
	h->len = 0;
	h->dirty = false;
}

/* The index of @h's server (-1: none) and its NPU count in *@npus. */
static int health_server(struct fs_ctx *ctx, const struct fs_handle *h, unsigned *npus)
{
	int server;

	pthread_mutex_lock(&ctx->lock);
	server = sched_cluster_find_server(ctx->cluster, h->path.item);
	if (server >= 0)
		*npus = ctx->cluster->servers[server].conf->npu_count;
	pthread_mutex_unlock(&ctx->lock);
	return server;
}

int fs_health_apply(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct conf_health_report rep;
	struct conf_error err;
	char file[CONF_NAME_MAX + 16], why[SCHED_REASON_MAX];
	unsigned npus = 0;
	int server, r;

	if (h->failed) {
		/* this flush answers the refused report; the next write starts a new one */
		r = h->last_err;
		h->failed = false;
		h->last_err = 0;
		return r;
	}
	if (!h->dirty)
		return h->last_err;
	h->dirty = false;
	if (h->len == 0)
		return h->last_err = 0;
	why[0] = '\0';
	snprintf(file, sizeof(file), "%s/health", h->path.item);
	server = health_server(ctx, h, &npus);
	if (server < 0)
		return h->last_err = -ENOENT;
	r = conf_health_parse(h->buf, h->len, file, npus, &rep, &err);
	pthread_mutex_lock(&ctx->lock);
	if (ctx->test_locked_health_ms)
		usleep(ctx->test_locked_health_ms * 1000u); /* tests only: see fs.h */
	if (r < 0) {
		conf_error_format(&err, why, sizeof(why));
		sched_server_note_refusal(ctx->cluster, (unsigned)server, why, fs_now_usec());
	} else if ((r = sched_server_check_agent(ctx->cluster, (unsigned)server, rep.agent,
						 fs_now_usec(), why, sizeof(why))) < 0) {
		sched_server_note_refusal(ctx->cluster, (unsigned)server, why, fs_now_usec());
	} else if ((r = sched_server_check_report(ctx->cluster, (unsigned)server, &rep, why,
						  sizeof(why))) < 0) {
		sched_server_note_refusal(ctx->cluster, (unsigned)server, why, fs_now_usec());
	} else {
		r = sched_server_report(ctx->cluster, (unsigned)server, &rep, fs_now_usec());
	}
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (r < 0)
		fs_log(ctx, 1, "health report for %s refused: %s", h->path.item,
		       r == -ENOMEM ? "out of memory" : why);
	h->len = 0; /* the next report on this descriptor starts afresh */
	return h->last_err = r == -EFBIG ? -EFBIG : r == -ENOMEM ? r : r < 0 ? -EINVAL : 0;
}

/*
 * The report's bytes so far were buffered: refuse it now when its complete lines are
 * already wrong, so that a shell's `echo ... > health`, which ignores close()'s result,
 * still fails (at its write). Returns 0 or -EINVAL/-EFBIG.
 */
static int health_check_start(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct conf_error err;
	char file[CONF_NAME_MAX + 16], why[SCHED_REASON_MAX];
	unsigned npus = 0;
	int server, r;

	server = health_server(ctx, h, &npus);
	if (server < 0)
		return -ENOENT;
	snprintf(file, sizeof(file), "%s/health", h->path.item);
	r = conf_health_check_start(h->buf, h->len, file, npus, &err);
	if (r < 0) {
		conf_error_format(&err, why, sizeof(why));
		health_refuse(ctx, h, why, r == -EFBIG ? -EFBIG : -EINVAL);
		return h->last_err;
	}
	return 0;
}

int fs_health_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size)
{
	int r;

	if (h->failed)
		return h->last_err;
	r = memchr(data, '\0', size) ? -EINVAL :
					fs_handle_buffer_put(h, data, size, (off_t)h->len,
							     CONF_HEALTH_MAX_BYTES);
	if (r == -EINVAL || r == -EFBIG) {
		char why[SCHED_REASON_MAX];

		/* the whole report is refused: nothing of it is applied at close */
		snprintf(why, sizeof(why), "%s/health: %s", h->path.item,
			 r == -EFBIG ? "the report is larger than 64 KiB" :
				       "the report contains a NUL byte; it must be text");
		health_refuse(ctx, h, why, r);
		return r;
	}
	/* lines already checked stay fine: only a write that ends one checks again */
	if (r == 0 && (memchr(data, '\n', size) || memchr(data, '\r', size)))
		r = health_check_start(ctx, h);
	if (r == 0) {
		h->dirty = true;
		r = (int)size;
	}
	return r;
}
