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
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fs_internal.h"

/*
 * The cluster's documents are taken under ctx->lock, which every request waits for
 * (~90 ms with 10,000 jobs): one dry run at a time takes them, and those within a second
 * of it share them, so that a user asking in a loop holds the lock a tenth of the time at
 * most. An answer is then as of up to a second ago.
 */
#define SNAPSHOT_REUSE_USEC 1000000u

/* Documents shared by the dry runs of one second. */
struct shared_snap {
	struct sched_whatif_snapshot *snap;
	unsigned refs;		/* the kept one's, and each run's (snap_mu) */
	uint64_t taken_usec, version;
};

static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shared_snap *snap_kept; /* snap_mu */

static void snapshot_put(struct shared_snap *sh)
{
	bool last;

	if (!sh)
		return;
	pthread_mutex_lock(&snap_mu);
	last = --sh->refs == 0;
	pthread_mutex_unlock(&snap_mu);
	if (last) {
		sched_whatif_snapshot_free(sh->snap);
		free(sh);
	}
}

/* The documents to answer from (put them back with snapshot_put()), or NULL (*@ret). */
static struct shared_snap *snapshot_get(struct fs_ctx *ctx, int *ret)
{
	struct shared_snap *sh = NULL, *old = NULL;
	uint64_t now = fs_now_usec();
	bool fresh;

	*ret = 0;
	pthread_mutex_lock(&snap_mu); /* one dry run at a time takes documents */
	pthread_mutex_lock(&ctx->lock);
	fresh = snap_kept && (snap_kept->version == ctx->cluster->version ||
			      now - snap_kept->taken_usec < SNAPSHOT_REUSE_USEC);
	if (!fresh && (sh = calloc(1, sizeof(*sh)))) {
		*ret = sched_whatif_snapshot(ctx->cluster, &sh->snap);
		sh->version = ctx->cluster->version;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (fresh) {
		sh = snap_kept;
	} else if (!sh || *ret < 0) {
		free(sh);
		pthread_mutex_unlock(&snap_mu);
		*ret = *ret < 0 ? *ret : -ENOMEM;
		return NULL;
	} else {
		fs_log(ctx, 3, "cluster/whatif: the cluster's documents in %.1f ms (under the "
			       "lock)", (double)(fs_now_usec() - now) / 1e3);
		sh->taken_usec = now;
		sh->refs = 1; /* kept */
		old = snap_kept;
		snap_kept = sh;
	}
	sh->refs++;
	pthread_mutex_unlock(&snap_mu);
	snapshot_put(old); /* the kept reference of the one it replaces */
	return sh;
}

void fs_whatif_free(void)
{
	struct shared_snap *sh;

	pthread_mutex_lock(&snap_mu);
	sh = snap_kept;
	snap_kept = NULL;
	pthread_mutex_unlock(&snap_mu);
	snapshot_put(sh);
}

/* The answer for the spec buffered in @h, in h->answer. */
static int answer(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct conf_job_spec *spec = NULL;
	struct shared_snap *sh;
	struct conf_error err;
	char msg[sizeof(err.msg) + 64];
	uint64_t t1;
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
	/* the documents under the lock (shared for a second); the copy and its pass off it */
	sh = snapshot_get(ctx, &r);
	t1 = fs_now_usec();
	if (sh)
		r = sched_whatif_run(sh->snap, spec, h->uid, h->gid, h->may_operate,
				     fs_now_usec(), &h->answer, &h->answer_len);
	fs_log(ctx, 3, "cluster/whatif by uid %u: the answer in %.1f ms", (unsigned)h->uid,
	       (double)(fs_now_usec() - t1) / 1e3);
	snapshot_put(sh);
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
