/* SPDX-License-Identifier: MIT */
/*
 * cluster/whatif, the dry run (fs.h): a transaction file. Whoever opens it for reading
 * and writing writes a job spec, then reads, from the same open file, what would become
 * of it if submitted now (sched_whatif.c): the file reads as the spec written followed
 * by the answer, so a program reads on from where its write ended. Nothing changes: no
 * job, no event, no record; the answer is the handle's alone.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fs_internal.h"

/* The answer for the spec buffered in @h, in h->answer. */
static int answer(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct conf_job_spec *spec = NULL;
	struct sched_whatif_snapshot *snap = NULL;
	struct conf_error err;
	char msg[sizeof(err.msg) + 64];
	int r;

	free(h->answer);
	h->answer = NULL;
	h->answer_len = 0;
	/* its own name if it gives one (a dependency on itself is refused so), else
	 * "whatif" */
	r = conf_job_spec_parse(h->buf ? h->buf : "", h->len, "whatif.yaml", NULL, &spec, &err);
	if (r == -EINVAL && strstr(err.msg, "the spec has no name"))
		r = conf_job_spec_parse(h->buf, h->len, "whatif.yaml", "whatif", &spec, &err);
	if (r < 0) {
		json_t *o = json_object();

		conf_error_format(&err, msg, sizeof(msg));
		json_object_set_new(o, "dry_run", json_true());
		json_object_set_new(o, "would", json_string("refused"));
		json_object_set_new(o, "reason", json_string(r == -EFBIG ? "the spec is over "
							     "64 KiB" : msg));
		h->answer = json_dumps(o, JSON_INDENT(2));
		json_decref(o);
		if (!h->answer)
			return -ENOMEM;
		h->answer_len = strlen(h->answer);
		return 0;
	}
	/* the documents under the lock; the copy and its pass off it */
	pthread_mutex_lock(&ctx->lock);
	r = sched_whatif_snapshot(ctx->cluster, &snap);
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0)
		r = sched_whatif_run(snap, spec, h->uid, h->gid, h->may_operate, fs_now_usec(),
				     &h->answer, &h->answer_len);
	sched_whatif_snapshot_free(snap);
	conf_job_spec_free(spec);
	if (r < 0)
		fs_log(ctx, 1, "cluster/whatif by uid %u: %s", (unsigned)h->uid, strerror(-r));
	return r;
}

int fs_whatif_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size,
		    off_t off)
{
	int r;

	(void)ctx;
	/* a write after the answer was read asks again */
	r = fs_handle_buffer_put(h, data, size, off, CONF_SPEC_MAX_BYTES);
	if (r < 0)
		return r == -EINVAL ? -EINVAL : r;
	h->dirty = true;
	return (int)size;
}

int fs_whatif_read(struct fs_ctx *ctx, struct fs_handle *h, char *buf, size_t size, off_t off)
{
	size_t at;

	if ((size_t)off < h->len) { /* the spec as written */
		if (size > h->len - (size_t)off)
			size = h->len - (size_t)off;
		memcpy(buf, h->buf + off, size);
		return (int)size;
	}
	if (!h->len)
		return 0; /* nothing asked */
	if (h->dirty || !h->answer) {
		int r = answer(ctx, h);

		if (r < 0)
			return r;
		h->dirty = false;
	}
	at = (size_t)off - h->len;
	if (at >= h->answer_len)
		return 0;
	if (size > h->answer_len - at)
		size = h->answer_len - at;
	memcpy(buf, h->answer + at, size);
	return (int)size;
}
