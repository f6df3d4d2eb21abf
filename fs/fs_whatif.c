/* SPDX-License-Identifier: MIT */
/*
 * cluster/whatif, the dry run (fs.h): a transaction file. Whoever opens it for reading
 * and writing writes a job spec, then reads, from the same open file, what would become
 * of it if submitted now (sched_whatif.c): the file reads as the spec written followed
 * by the answer, so a program reads on from where its write ended. Nothing changes: no
 * job, no event, no record; the answer is the handle's alone.
 *
 * The answer is the one a submission by the opener would get: the spec is read as the
 * file it came from (a last line "#whatif-file: <name>.<ext>", which ascend-run writes,
 * names it: its name, YAML or JSON, the file:line:column of its refusals), the daemon's
 * own rules are checked as for a spec written to jobs/ (fs_spec_check_fs_rules()), then
 * the scheduler's on a copy of the cluster.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "fs_internal.h"

/*
 * The cluster's documents are taken under ctx->lock, which every request waits for
 * (60-160 ms with 10,000 jobs), and a copy built from them costs a few hundred ms more:
 * one dry run is answered at a time (another waits up to 2 s, then EAGAIN: a FUSE
 * thread is not held longer), and documents are taken again only when the cluster
 * changed, at most once a second (a dry run asked in a loop holds the lock a tenth of
 * the time at most; an answer is of the cluster as it is when it is given).
 */
#define SNAPSHOT_EVERY_USEC 1000000u
#define RUN_WAIT_SEC 2

static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sched_whatif_snapshot *snap_kept; /* run_mu */
static uint64_t snap_taken_usec, snap_version;

/* The documents of the cluster as it is (run_mu held), or NULL with *@ret. */
static struct sched_whatif_snapshot *snapshot(struct fs_ctx *ctx, int *ret)
{
	uint64_t now = fs_now_usec(), version;
	struct sched_whatif_snapshot *s = NULL;

	pthread_mutex_lock(&ctx->lock);
	version = ctx->cluster->version;
	pthread_mutex_unlock(&ctx->lock);
	*ret = 0;
	if (snap_kept && version == snap_version)
		return snap_kept;
	if (snap_kept && now - snap_taken_usec < SNAPSHOT_EVERY_USEC) {
		uint64_t wait = SNAPSHOT_EVERY_USEC - (now - snap_taken_usec);
		struct timespec ts = { (time_t)(wait / 1000000u), (long)(wait % 1000000u) * 1000 };

		nanosleep(&ts, NULL);
	}
	now = fs_now_usec();
	pthread_mutex_lock(&ctx->lock);
	*ret = sched_whatif_snapshot(ctx->cluster, &s);
	version = ctx->cluster->version;
	pthread_mutex_unlock(&ctx->lock);
	fs_log(ctx, 3, "cluster/whatif: the cluster's documents in %.1f ms (under the lock)",
	       (double)(fs_now_usec() - now) / 1e3);
	if (*ret < 0)
		return NULL;
	sched_whatif_snapshot_free(snap_kept);
	snap_kept = s;
	snap_taken_usec = now;
	snap_version = version;
	return s;
}

void fs_whatif_free(void)
{
	pthread_mutex_lock(&run_mu);
	sched_whatif_snapshot_free(snap_kept);
	snap_kept = NULL;
	pthread_mutex_unlock(&run_mu);
}

/* An answer of "refused" with @reason, in the shape of every answer. */
static int refused(struct fs_handle *h, const char *job, const char *reason)
{
	json_t *o = json_object();
	char *text;

	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "dry_run", json_true());
	json_object_set_new(o, "job", job ? json_string(job) : json_null());
	json_object_set_new(o, "would", json_string("refused"));
	json_object_set_new(o, "reason", json_string(reason));
	json_object_set_new(o, "preempts", json_array());
	json_object_set_new(o, "placement", json_array());
	json_object_set_new(o, "reserved_start", json_null());
	json_object_set_new(o, "status", json_null());
	text = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (!text)
		return -ENOMEM;
	{
		size_t len = strlen(text);
		char *grown = realloc(text, len + 2);

		if (!grown) {
			free(text);
			return -ENOMEM;
		}
		grown[len++] = '\n';
		grown[len] = '\0';
		h->answer = grown;
		h->answer_len = len;
	}
	return 0;
}

/*
 * The file the spec came from, from a last line "#whatif-file: <name>.<ext>" (removed
 * from what is parsed: *@len shortened), or "whatif.yaml". Returns whether one was given.
 */
static bool spec_file(const char *buf, size_t *len, char *file, size_t file_len)
{
	static const char tag[] = "#whatif-file: ";
	size_t end = *len, start;

	snprintf(file, file_len, "whatif.yaml");
	while (end && buf[end - 1] == '\n')
		end--;
	start = end;
	while (start && buf[start - 1] != '\n')
		start--;
	if (end - start <= sizeof(tag) - 1 || memcmp(buf + start, tag, sizeof(tag) - 1) != 0 ||
	    end - start - (sizeof(tag) - 1) >= file_len)
		return false;
	memcpy(file, buf + start + sizeof(tag) - 1, end - start - (sizeof(tag) - 1));
	file[end - start - (sizeof(tag) - 1)] = '\0';
	*len = start;
	return true;
}

/* The answer for the spec buffered in @h, in h->answer (run_mu held). */
static int answer(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct conf_job_spec *spec = NULL;
	struct sched_whatif_snapshot *snap;
	struct conf_error err;
	char file[CONF_NAME_MAX + 16], name[CONF_NAME_MAX + 16], *dot;
	char msg[sizeof(err.msg) + 64], reason[SCHED_REASON_MAX], where[SCHED_REASON_MAX + 300];
	size_t len = h->len;
	uint64_t t1;
	bool named;
	int r;

	free(h->answer);
	h->answer = NULL;
	h->answer_len = 0;
	named = spec_file(h->buf, &len, file, sizeof(file));
	snprintf(name, sizeof(name), "%s", file);
	dot = strrchr(name, '.');
	if (dot)
		*dot = '\0';
	/* named by its file as a submission is; else its own name, or "whatif" */
	r = conf_job_spec_parse(h->buf, len, file, named ? name : NULL, &spec, &err);
	if (r == -EINVAL && !named && strstr(err.msg, "the spec has no name"))
		r = conf_job_spec_parse(h->buf, len, file, "whatif", &spec, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		conf_error_format(&err, msg, sizeof(msg));
		return refused(h, NULL, r == -EFBIG ? "the spec is over 64 KiB" : msg);
	}
	r = fs_spec_check_fs_rules(ctx, h, spec, reason);
	if (r == -ENOMEM) {
		conf_job_spec_free(spec);
		return r;
	}
	if (r < 0) {
		conf_job_spec_where(h->buf, len, file, reason, where, sizeof(where));
		r = refused(h, spec->name, where);
		conf_job_spec_free(spec);
		return r;
	}
	snap = snapshot(ctx, &r);
	t1 = fs_now_usec();
	if (snap)
		r = sched_whatif_run(snap, spec, h->uid, h->gid, h->may_operate, fs_now_usec(),
				     &h->answer, &h->answer_len);
	fs_log(ctx, 3, "cluster/whatif by uid %u: the answer in %.1f ms", (unsigned)h->uid,
	       (double)(fs_now_usec() - t1) / 1e3);
	if (r == 0) {
		/* a refusal says where in the file, as a rejected submission's error does */
		json_t *o = json_loads(h->answer, 0, NULL);
		const char *would = json_string_value(json_object_get(o, "would"));

		if (would && strcmp(would, "refused") == 0) {
			conf_job_spec_where(h->buf, len, file,
					    json_string_value(json_object_get(o, "reason")), where,
					    sizeof(where));
			free(h->answer);
			h->answer = NULL;
			r = refused(h, spec->name, where);
		}
		json_decref(o);
	}
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
	/* a write once the answer was read asks again: a new spec, where this write is, so
	 * that reading on from it reads the new answer */
	if (h->answer && !h->dirty) {
		h->len = 0;
		h->spec_off = off;
	}
	off -= h->spec_off;
	/* before the spec, or past its end (O_APPEND, after the answer): at its end */
	if (off < 0 || (size_t)off > h->len)
		off = (off_t)h->len;
	r = fs_handle_buffer_put(h, data, size, off, CONF_SPEC_MAX_BYTES);
	if (r < 0)
		return r;
	h->dirty = true;
	return (int)size;
}

int fs_whatif_truncate(struct fs_handle *h, off_t size)
{
	if (size == 0) { /* ftruncate(fd, 0): begin again at the start */
		h->len = 0;
		h->spec_off = 0;
	} else if (size < h->spec_off || (size_t)(size - h->spec_off) > h->len) {
		return -EINVAL;
	} else {
		h->len = (size_t)(size - h->spec_off);
	}
	if (h->buf)
		h->buf[h->len] = '\0';
	h->dirty = true;
	return 0;
}

int fs_whatif_read(struct fs_ctx *ctx, struct fs_handle *h, char *buf, size_t size, off_t off)
{
	size_t done = 0, at;

	if (off < h->spec_off)
		return 0; /* before the spec asked: nothing */
	off -= h->spec_off;
	if ((size_t)off < h->len) { /* the spec as written, then on into the answer */
		done = h->len - (size_t)off < size ? h->len - (size_t)off : size;
		memcpy(buf, h->buf + off, done);
		if (done == size)
			return (int)done;
	}
	if (!h->len)
		return 0; /* nothing asked */
	if (h->dirty || !h->answer) {
		struct timespec deadline;
		int r;

		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += RUN_WAIT_SEC;
		if (pthread_mutex_timedlock(&run_mu, &deadline) != 0)
			return done ? (int)done : -EAGAIN; /* another is being answered */
		r = answer(ctx, h);
		pthread_mutex_unlock(&run_mu);
		if (r < 0)
			return done ? (int)done : r;
		h->dirty = false;
	}
	at = (size_t)off + done - h->len;
	if (at >= h->answer_len)
		return (int)done;
	if (size - done > h->answer_len - at)
		size = done + (h->answer_len - at);
	memcpy(buf + done, h->answer + at, size - done);
	return (int)size;
}
