/* SPDX-License-Identifier: MIT */
/* queues/<queue>/quota: root and operators write a number of NPUs. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse.h>

#include "fs_internal.h"


/* Longest quota text accepted: a 32-bit count and a newline, with room to spare. */
#define QUOTA_MAX_BYTES 32

/*
 * The number in the buffered quota text "<digits>[\n]" (digits so far while it is being
 * written). Returns 0, or -EINVAL when no more bytes can make it valid.
 */
static int quota_parse(const char *s, size_t len, unsigned long long *ret)
{
	unsigned long long v = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\n' && i > 0 && i + 1 == len)
			break;
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v <= UINT32_MAX)
			v = v * 10 + (unsigned)(s[i] - '0');
	}
	*ret = v;
	return 0;
}

/*
 * A refused quota write: logged and a "refused" event in cluster/events (queues have no
 * error file); the handle fails from now. Call without ctx->lock.
 */
static int quota_refuse(struct fs_ctx *ctx, struct fs_handle *h, const char *why, int err)
{
	char line[SCHED_REASON_MAX];

	/* every reason here is a short sentence: the bound only quiets -Wformat-truncation */
	snprintf(line, sizeof(line), "queues/%s/quota by uid %u refused: %.400s", h->path.item,
		 (unsigned)h->uid, why);
	fs_refusal_note(ctx, 1, NULL, line);
	h->failed = true;
	h->last_err = err;
	h->len = 0;
	h->dirty = false;
	return err;
}

/* @text: the digits as written (@len bytes, maybe with the newline). */
static void quota_too_large(char *why, const char *text, size_t len, unsigned total)
{
	if (len && text[len - 1] == '\n')
		len--;
	snprintf(why, SCHED_REASON_MAX,
		 "%.*s NPUs is more than the cluster's %u; write 0 (no limit) to %u", (int)len,
		 text, total, total);
}

/*
 * Checked at every write, so that junk, and a number already larger than the cluster,
 * fail the write() itself, which every writer sees (bash's builtin echo included).
 */
int fs_quota_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size)
{
	char why[SCHED_REASON_MAX];
	unsigned long long npus;
	unsigned total;
	int r;

	if (h->failed)
		return h->last_err;
	r = memchr(data, '\0', size) ? -EINVAL :
					fs_handle_buffer_put(h, data, size, (off_t)h->len, QUOTA_MAX_BYTES);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || quota_parse(h->buf, h->len, &npus) < 0)
		return quota_refuse(ctx, h,
				    "a quota is a decimal number of NPUs (0 = no limit), e.g. "
				    "`echo 16 > quota`",
				    -EINVAL);
	pthread_mutex_lock(&ctx->lock);
	total = ctx->cluster->npus_total;
	pthread_mutex_unlock(&ctx->lock);
	if (npus > total) {
		quota_too_large(why, h->buf, h->len, total);
		return quota_refuse(ctx, h, why, -EINVAL);
	}
	h->dirty = true;
	return (int)size;
}

/*
 * Check the buffered quota at every close (flush: cp and echo see EINVAL/EACCES), and
 * apply it when the last descriptor is released (@commit), so a number written in
 * pieces through duplicated descriptors is applied whole, once. The uid is checked
 * again: the mode is only enforced with default_permissions.
 */
int fs_quota_apply(struct fs_ctx *ctx, struct fs_handle *h, bool commit)
{
	char why[SCHED_REASON_MAX];
	unsigned long long npus = 0;
	bool staging;
	int r;

	if (h->failed || !h->dirty)
		return h->last_err;
	if (h->len == 0)
		return h->last_err = 0;
	if (!h->may_operate)
		return quota_refuse(ctx, h,
				    "only root and members of operator_group may change a queue's "
				    "quota",
				    -EACCES);
	if (quota_parse(h->buf, h->len, &npus) < 0)
		return quota_refuse(ctx, h, "a quota is a decimal number of NPUs (0 = no limit)",
				    -EINVAL);
	snprintf(why, sizeof(why), "no queue %s", h->path.item);
	staging = !commit && ctx->store && fs_handle_flush_is_openers(h);
	pthread_mutex_lock(&ctx->lock);
	if (npus > ctx->cluster->npus_total) {
		quota_too_large(why, h->buf, h->len, ctx->cluster->npus_total);
		r = -EINVAL;
	} else if (!commit) {
		/* applied when the last descriptor goes; durable from the opener's close on
		 * (a number written in pieces through duplicates counts whole) */
		r = staging ? fs_stage_put(ctx, "quota", h->path.item, "", h->uid, h->gid, NULL,
					   0, h->buf, h->len)
			    : 0;
		fs_changed(ctx);
		pthread_mutex_unlock(&ctx->lock);
		return h->last_err = r;
	} else {
		r = sched_queue_set_quota(ctx->cluster, h->path.item, (unsigned)npus,
					  fs_now_usec());
	}
	fs_stage_drop(ctx, "quota", h->path.item);
	if (r == 0 && fs_config_refresh(ctx) < 0)
		fs_log(ctx, 1, "cluster/config still shows the old quota of %s: out of memory",
		       h->path.item);
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (r < 0)
		return quota_refuse(ctx, h, why, r);
	fs_log(ctx, npus && !ctx->cluster->conf->enable_quota_limit ? 1 : 2,
	       "queues/%s/quota set to %llu %s by uid %u%s", h->path.item, npus,
	       conf_plural(npus, "NPU", "NPUs"), (unsigned)h->uid,
	       npus && !ctx->cluster->conf->enable_quota_limit ?
		       ": not enforced, resource.enable_quota_limit is false (set it to true in "
		       "the configuration and restart the daemon)" :
		       "");
	h->dirty = false;
	return h->last_err = 0;
}

void fs_quota_replay(struct fs_ctx *ctx, const struct fs_staged *s)
{
	unsigned long long npus;
	int r;

	pthread_mutex_lock(&ctx->lock);
	r = quota_parse(s->body, s->len, &npus) < 0 || npus > ctx->cluster->npus_total ?
		    -EINVAL :
		    sched_queue_set_quota(ctx->cluster, s->key, (unsigned)npus, fs_now_usec());
	if (r == 0 && fs_config_refresh(ctx) < 0)
		r = -ENOMEM;
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	fs_log(ctx, r < 0 ? 1 : 2, "queues/%s/quota %.*s accepted before the restart: %s", s->key,
	       (int)strcspn(s->body, "\n"), s->body, r < 0 ? strerror(-r) : "applied");
}
