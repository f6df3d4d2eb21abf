/* SPDX-License-Identifier: MIT */
/*
 * Job specs: jobs/<name>.<ext> and jobs/<name>/spec, buffered per open file and submitted
 * when the last descriptor is released.
 *
 *
 * Why specs commit at release: flush() runs at every close of every duplicate of a
 * descriptor (`{ cat base.yaml; echo "priority: high"; } > jobs/x.yaml` closes once
 * when cat exits, before the echo), so committing at flush would submit half a spec.
 * flush() validates, to give cp, tee and friends an error at close; release() submits
 * or records the rejection. The last flush's answer is the submission's: one that
 * accepted holds a record for the job under max_job_count and the name against anyone
 * else (sched_job_check_hold) and release submits what it accepted without checking
 * again; one that refused is what release records. So a close that returned 0 is a
 * job, and a refused one is none. The kernel sends release() after close() has
 * returned, so lookups under jobs/<name> and of jobs/<name>.<ext> wait (bounded) for a
 * closing upload of that name: `cp x.yaml jobs/ && cat jobs/x/status` always sees the
 * outcome, and writing the file again at once finds the old job or a clean slot.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse.h>

#include "fs_internal.h"

/*
 * Register @h as the one writer of job @h->path.job's spec (ctx->lock held; dropped and
 * taken again while NSS says whether a user at cluster.max_uploads_per_user is an
 * operator, who has no limit, as root has none). @groups (@group_count) are the writer's.
 * Returns 0, -EBUSY (another open file writes this spec), -EMFILE (the user's limit:
 * a "refused" event says so) or -ENOMEM.
 */
int fs_spec_upload_register(struct fs_ctx *ctx, struct fs_handle *h, const char *ext,
			   const gid_t *groups, size_t group_count)
{
	const struct conf_cluster *conf = ctx->conf;
	struct fs_upload *u = calloc(1, sizeof(*u));
	char why[SCHED_REASON_MAX];
	int r;

	if (!u)
		return -ENOMEM;
	snprintf(u->name, sizeof(u->name), "%s", h->path.job);
	snprintf(u->ext, sizeof(u->ext), "%s", ext);
	u->uid = h->uid;
	u->gid = h->gid;
	u->mtime_usec = fs_now_usec();
	r = fs_upload_add(ctx, u, h->uid == 0 ? 0 : conf->max_uploads_per_user);
	if (r == -EMFILE && conf->operator_group) {
		bool is_operator;

		/* the configuration never changes while the daemon runs: no lock needed */
		pthread_mutex_unlock(&ctx->lock);
		is_operator = fs_may_operate(conf, h->uid, h->gid, groups, group_count);
		pthread_mutex_lock(&ctx->lock);
		if (is_operator)
			r = fs_upload_add(ctx, u, 0);
	}
	/* a close() of one of the user's uploads that returned made room, although its
	 * RELEASE (sent after it) may not be here yet */
	if (r == -EMFILE)
		r = fs_upload_add_after_releases(ctx, u, conf->max_uploads_per_user);
	if (r == -EMFILE) {
		snprintf(why, sizeof(why),
			 "%s %s%s%s by uid %u refused: uid %u holds %u job specs open for writing, "
			 "the cluster's max_uploads_per_user; close one and try again",
			 ext[0] ? "create" : "open", h->path.job, ext[0] ? "." : "/spec", ext,
			 (unsigned)h->uid, (unsigned)h->uid, conf->max_uploads_per_user);
		fs_log(ctx, 2, "%s", why);
		sched_cluster_note_refusal(ctx->cluster, NULL, why, fs_now_usec());
		fs_changed(ctx);
	}
	if (r < 0) {
		free(u);
		return r;
	}
	h->upload = u;
	return 0;
}

void fs_spec_upload_unregister(struct fs_ctx *ctx, struct fs_handle *h)
{
	if (!h->upload)
		return;
	pthread_mutex_lock(&ctx->lock);
	fs_upload_remove(ctx, h->upload);
	pthread_cond_broadcast(&ctx->uploads_cv);
	pthread_mutex_unlock(&ctx->lock);
	free(h->upload);
	h->upload = NULL;
}


static void spec_file_name(const struct fs_handle *h, char *out, size_t len)
{
	if (h->kind == H_UPLOAD)
		snprintf(out, len, "%s.%s", h->path.job, h->path.ext);
	else
		snprintf(out, len, "%s/spec", h->path.job);
}

/* Record a refused submission so `cat jobs/<name>/error` explains it. */
static int record_rejection(struct fs_ctx *ctx, struct fs_handle *h, const char *why, int err)
{
	int r;

	pthread_mutex_lock(&ctx->lock);
	sched_hold_drop(ctx->cluster, &h->hold); /* what is refused holds no record */
	r = sched_job_reject(ctx->cluster, h->path.job, h->uid, h->gid, why, fs_now_usec());
	fs_stage_drop(ctx, "spec", h->path.job);
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0)
		fs_log(ctx, 2, "job %s rejected: %s", h->path.job, why);
	else
		fs_log(ctx, 2, "job %s not submitted (%s): %s", h->path.job, strerror(-r), why);
	h->last_err = r == -EEXIST || r == -EPERM || r == -EAGAIN ? r : err;
	return h->last_err;
}

/* @h's buffer changed (a write, a truncation): to be validated again at the next close,
 * and what a stat() by path shows of the upload follows it; no longer closing. */
static void buffer_changed(struct fs_ctx *ctx, struct fs_handle *h)
{
	h->dirty = true;
	pthread_mutex_lock(&ctx->lock);
	h->upload->len = h->len;
	h->upload->mtime_usec = fs_now_usec();
	fs_upload_set_closing(ctx, h->upload, false, 0);
	pthread_mutex_unlock(&ctx->lock);
}

int fs_spec_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size,
		      off_t off)
{
	char name[CONF_NAME_MAX + 16], why[SCHED_REASON_MAX];
	const char *nul;
	int r;

	if (h->failed)
		return h->last_err;
	spec_file_name(h, name, sizeof(name));
	nul = memchr(data, '\0', size);
	if (nul) {
		snprintf(why, sizeof(why),
			 "%s: the spec contains a NUL byte at offset %lld; a job spec is UTF-8 "
			 "text (YAML or JSON)",
			 name, (long long)off + (long long)(nul - data));
		h->failed = true;
		return record_rejection(ctx, h, why, -EINVAL);
	}
	r = fs_handle_buffer_put(h, data, size, off, CONF_SPEC_MAX_BYTES);
	if (r == -EFBIG) {
		snprintf(why, sizeof(why),
			 "%s: the spec is larger than %u KiB; a job spec is a few hundred bytes, "
			 "keep data and scripts out of it",
			 name, CONF_SPEC_MAX_BYTES / 1024);
		h->failed = true;
		return record_rejection(ctx, h, why, -EFBIG);
	}
	if (r == -EINVAL) {
		snprintf(why, sizeof(why), "%s: write at offset %lld leaves a hole; write the spec "
					   "from the start", name, (long long)off);
		h->failed = true;
		return record_rejection(ctx, h, why, -EINVAL);
	}
	if (r < 0)
		return r;
	buffer_changed(ctx, h);
	return (int)size;
}

int fs_spec_truncate(struct fs_ctx *ctx, struct fs_handle *h, off_t size)
{
	if (h->failed)
		return h->last_err;
	if (size < 0 || (size_t)size > h->len)
		return -EINVAL;
	h->len = (size_t)size;
	buffer_changed(ctx, h);
	return 0;
}

/*
 * A queue with `groups` takes jobs from its members only (root always). The group names
 * are resolved without ctx->lock (NSS may be slow); the queue entry stays valid because
 * the configuration's queues live as long as the cluster (no reload).
 */
static int check_queue_groups(struct fs_ctx *ctx, const struct fs_handle *h,
			      const struct conf_job_spec *spec, char *reason)
{
	const struct conf_queue *q;

	/* groups do not change at run time: the configuration as loaded */
	q = conf_cluster_find_queue(ctx->conf, spec->queue);
	if (!q)
		return 0; /* sched_job_check() says it is unknown */
	return fs_queue_check_groups(q, h->uid, h->gid, h->groups, h->group_count, reason);
}

/*
 * A checkpoint_dir that resolves into the mount would have the daemon's scanner read
 * its own filesystem, which can wedge the mount (issue 15 item 3): refused. Resolved
 * without ctx->lock, and without ever looking inside the mount (fs_checkpoint.c).
 */
static int check_checkpoint_dir(struct fs_ctx *ctx, const struct conf_job_spec *spec,
				char *reason)
{
	char resolved[PATH_MAX];
	int r;

	if (!spec->checkpoint_dir)
		return 0;
	r = fs_checkpoint_dir_check(spec->checkpoint_dir, ctx->mount_path, ctx->mount_dev,
				    resolved, sizeof(resolved));
	if (r == -EXDEV)
		snprintf(reason, SCHED_REASON_MAX,
			 "checkpoint_dir: \"%.100s\" lies inside the ascendfs mount %.100s (as "
			 "%.100s); the daemon never reads its own mount: put checkpoints on a local "
			 "or shared filesystem outside it",
			 spec->checkpoint_dir, ctx->mount_path, resolved);
	else if (r == -ELOOP)
		snprintf(reason, SCHED_REASON_MAX,
			 "checkpoint_dir: \"%.200s\": too many levels of symbolic links; give a "
			 "path without a symlink loop", spec->checkpoint_dir);
	else if (r < 0)
		snprintf(reason, SCHED_REASON_MAX,
			 "checkpoint_dir: \"%.200s\": %s; give a shorter absolute path",
			 spec->checkpoint_dir, strerror(-r));
	return r;
}

int fs_spec_check_fs_rules(struct fs_ctx *ctx, const struct fs_handle *h,
			   const struct conf_job_spec *spec, char *reason)
{
	int r = check_queue_groups(ctx, h, spec, reason);

	return r < 0 ? r : check_checkpoint_dir(ctx, spec, reason) < 0 ? -EINVAL : 0;
}

/*
 * Refusals that leave no rejected record: the name is another job's (active, another
 * user's, or held for another submission), or there is no room for a record.
 */
static bool is_refusal_without_record(int r)
{
	return r == -EEXIST || r == -EPERM || r == -EAGAIN || r == -EBUSY;
}

/*
 * Parse the buffered spec and check it against the cluster. With @submit, submit it or
 * record the rejection; without (flush), keep what it accepts in h->accepted under the
 * hold h->hold and change nothing else (a refusal leaves both to the caller to drop).
 * Returns 0 or the negative errno the writer should see; *@why gets the sentence.
 */
static int spec_process(struct fs_ctx *ctx, struct fs_handle *h, bool submit, char *why)
{
	struct conf_job_spec *spec = NULL;
	struct conf_error err;
	char name[CONF_NAME_MAX + 16], reason[SCHED_REASON_MAX];
	struct sched_job *j = NULL;
	bool is_operator;
	int r;

	spec_file_name(h, name, sizeof(name));
	r = conf_job_spec_parse(h->buf, h->len, name, h->path.job, &spec, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		conf_error_format(&err, why, SCHED_REASON_MAX);
		return submit ? record_rejection(ctx, h, why, r == -EFBIG ? -EFBIG : -EINVAL) :
				(r == -EFBIG ? -EFBIG : -EINVAL);
	}
	/* operators are exempt from the queue's job caps, as root is (NSS: outside the lock) */
	is_operator = h->uid != 0 &&
		      fs_may_operate(ctx->conf, h->uid, h->gid, h->groups, h->group_count);
	r = check_queue_groups(ctx, h, spec, reason);
	if (r < 0) {
		conf_job_spec_free(spec);
		if (r == -ENOMEM)
			return r;
		conf_job_spec_where(h->buf, h->len, name, reason, why, SCHED_REASON_MAX);
		return submit ? record_rejection(ctx, h, why, r) : r;
	}
	r = check_checkpoint_dir(ctx, spec, reason);
	if (r < 0) {
		conf_job_spec_free(spec);
		conf_job_spec_where(h->buf, h->len, name, reason, why, SCHED_REASON_MAX);
		return submit ? record_rejection(ctx, h, why, -EINVAL) : -EINVAL;
	}
	pthread_mutex_lock(&ctx->lock);
	if (submit) {
		/* written since a flush checked it (or never checked): checked again now */
		sched_hold_drop(ctx->cluster, &h->hold);
		r = sched_job_submit_as(ctx->cluster, spec, h->uid, h->gid, is_operator,
					fs_now_usec(), reason, &j);
		if (r == 0)
			h->job_serial = j->serial;
		/* in the same batch as the job: the staged copy is applied exactly once */
		if (r == 0 || r == -EEXIST || r == -EPERM || r == -EAGAIN || r == -EBUSY)
			fs_stage_drop(ctx, "spec", h->path.job);
		fs_changed(ctx);
	} else {
		r = sched_job_check_hold(ctx->cluster, spec, h->uid, is_operator, reason,
					 &h->hold);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (!submit) {
		conf_job_spec_free(h->accepted);
		h->accepted = r == 0 ? spec : NULL;
		if (r < 0)
			conf_job_spec_free(spec);
	}
	if (r == 0 || r == -ENOMEM)
		return r;
	conf_job_spec_where(h->buf, h->len, name, reason, why, SCHED_REASON_MAX);
	/* a job cap refuses with EACCES, as the queue `groups` check above does */
	if (!submit)
		return is_refusal_without_record(r) || r == -EACCES ? r : -EINVAL;
	/* no record for these: the name is another job's, or there is no room for one */
	if (is_refusal_without_record(r)) {
		fs_log(ctx, 2, "job %s not submitted: %s", h->path.job, why);
		return r;
	}
	return record_rejection(ctx, h, why, r == -EACCES ? r : -EINVAL);
}

/*
 * A flush of a spec truncated to nothing after a close had checked it (ftruncate(fd, 0)
 * then close): what that close accepted no longer stands. Refused like an empty upload
 * (EINVAL; the release records "the spec is empty" for jobs/<name>.<ext>), the hold and
 * the staged copy dropped, so neither a release nor a restart submits the old version.
 */
static int spec_emptied(struct fs_ctx *ctx, struct fs_handle *h)
{
	char file[CONF_NAME_MAX + 16], why[SCHED_REASON_MAX];

	spec_file_name(h, file, sizeof(file));
	snprintf(why, sizeof(why), "%s: the spec is empty; write a job spec with at least `npus`",
		 file);
	h->dirty = false;
	h->staged = false;
	h->last_err = -EINVAL;
	free(h->last_why);
	h->last_why = strdup(why);
	pthread_mutex_lock(&ctx->lock);
	sched_hold_drop(ctx->cluster, &h->hold);
	conf_job_spec_free(h->accepted);
	h->accepted = NULL;
	fs_stage_drop(ctx, "spec", h->path.job);
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	fs_log(ctx, 3, "job %s: spec not valid at this close: %s", h->path.job, why);
	return h->last_err;
}

/* flush: say now whether the spec would be accepted; submit nothing (see top). */
int fs_spec_flush(struct fs_ctx *ctx, struct fs_handle *h)
{
	char why[SCHED_REASON_MAX];
	bool staging;

	pthread_mutex_lock(&ctx->lock);
	fs_upload_set_closing(ctx, h->upload, true, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	/* nothing written since: the same answer, unless what a duplicate's close accepted
	 * still waits for the opener's close to stage it */
	if (h->failed || (!h->dirty && (h->last_err < 0 || h->staged || !ctx->store)))
		return h->last_err;
	if (h->len == 0 && !h->checked)
		return 0; /* bash flushes its duplicate before the first write */
	if (h->len == 0)
		return spec_emptied(ctx, h);
	if (h->dirty) {
		h->dirty = false;
		h->staged = false;
		h->checked = true;
		why[0] = '\0';
		h->last_err = spec_process(ctx, h, false, why);
		free(h->last_why);
		h->last_why = h->last_err < 0 && why[0] ? strdup(why) : NULL;
		if (h->last_err < 0)
			fs_log(ctx, 3, "job %s: spec not valid at this close: %s", h->path.job,
			       why);
	}
	/* what the opener's close accepted survives a crash before the release submits it
	 * (see fs_handle_flush_is_openers); what a close refused replaces an earlier accepted version */
	staging = h->last_err == 0 && ctx->store && fs_handle_flush_is_openers(h);
	pthread_mutex_lock(&ctx->lock);
	if (staging &&
	    fs_stage_put(ctx, "spec", h->path.job, h->kind == H_UPLOAD ? h->path.ext : "", h->uid,
			 h->gid, h->groups, h->group_count, h->buf, h->len) < 0)
		h->last_err = -ENOMEM;
	else if (h->last_err < 0)
		fs_stage_drop(ctx, "spec", h->path.job);
	if (h->last_err < 0) {
		/* what this close refused, no earlier close's acceptance holds */
		sched_hold_drop(ctx->cluster, &h->hold);
		conf_job_spec_free(h->accepted);
		h->accepted = NULL;
	}
	h->staged = staging && h->last_err == 0;
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return h->last_err;
}

/*
 * release after a flush checked everything written: that flush's answer is the outcome.
 * What it accepted is submitted under its hold, unchecked (it cannot be refused now);
 * what it refused is recorded with its reason, or, when it left no record (the name was
 * another job's, no room), stays unsubmitted.
 */
static int spec_commit(struct fs_ctx *ctx, struct fs_handle *h)
{
	char reason[SCHED_REASON_MAX];
	struct conf_job_spec *spec = h->accepted;
	const char *why = h->last_why ? h->last_why : strerror(-h->last_err);
	struct sched_job *j = NULL;
	int r;

	if (h->last_err < 0) {
		if (!is_refusal_without_record(h->last_err)) {
			record_rejection(ctx, h, why, h->last_err);
			return h->last_err;
		}
		fs_log(ctx, 2, "job %s not submitted: %s", h->path.job, why);
		if (h->last_err == -EAGAIN) {
			/* no record carries the reason: a "refused" event of cluster/events does,
			 * in the words sched uses for a refused submission (without the file) */
			char line[SCHED_REASON_MAX], file[CONF_NAME_MAX + 16];
			size_t n;

			spec_file_name(h, file, sizeof(file));
			n = strlen(file);
			if (strncmp(why, file, n) == 0 && strncmp(why + n, ": ", 2) == 0)
				why += n + 2;
			snprintf(line, sizeof(line), "job %.64s by uid %u not submitted: %.400s",
				 h->path.job, (unsigned)h->uid, why);
			pthread_mutex_lock(&ctx->lock);
			sched_cluster_note_refusal(ctx->cluster, NULL, line, fs_now_usec());
			fs_changed(ctx);
			pthread_mutex_unlock(&ctx->lock);
		}
		return h->last_err;
	}
	h->accepted = NULL;
	pthread_mutex_lock(&ctx->lock);
	r = sched_job_submit_held(ctx->cluster, &h->hold, spec, h->uid, h->gid, fs_now_usec(),
				  reason, &j);
	/* in the same batch as the job: the staged copy is applied exactly once */
	if (r == 0) {
		h->job_serial = j->serial;
		fs_stage_drop(ctx, "spec", h->path.job);
	}
	fs_changed(ctx);
	if (r < 0)
		fs_log(ctx, 1, "job %s accepted at close but not submitted (%s): %s", h->path.job,
		       strerror(-r), r == -ENOMEM ? "out of memory" : reason);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

/*
 * The serial of the job this thread's last fs_spec_release() submitted (0: none): what
 * fs_release() logs after its durability wait, on the same thread, as fs_commit.c keeps
 * the request's ticket (thread_ticket). The name alone could be a job submitted since.
 */
static _Thread_local uint64_t released_serial;

/* Log the state of job @serial, submitted as @name by @uid; another job of that name now
 * means ours was removed since. */
static void log_submitted(struct fs_ctx *ctx, const char *name, uint64_t serial, uid_t uid)
{
	const struct sched_job *j;

	pthread_mutex_lock(&ctx->lock);
	j = sched_cluster_find_job(ctx->cluster, name);
	fs_log(ctx, 2, "job %s submitted by uid %u: %s", name, (unsigned)uid,
	       j && j->serial == serial ? sched_job_state_name(j->state) : "removed since");
	pthread_mutex_unlock(&ctx->lock);
}

/* fs_spec_log_submitted_when_durable()'s note, for the committer */
struct submitted_note {
	uint64_t serial;
	uid_t uid;
	char name[];
};

static void note_durable(struct fs_ctx *ctx, void *arg, bool written)
{
	struct submitted_note *n = arg;

	if (written)
		log_submitted(ctx, n->name, n->serial, n->uid);
	free(n);
}

int fs_spec_log_submitted_when_durable(struct fs_ctx *ctx, const char *name, uid_t uid)
{
	size_t len = strlen(name) + 1;
	struct submitted_note *n;
	int r;

	if (!released_serial)
		return -EAGAIN;
	n = malloc(sizeof(*n) + len);
	if (!n)
		return -ENOMEM;
	n->serial = released_serial;
	n->uid = uid;
	memcpy(n->name, name, len);
	r = fs_store_when_durable(ctx, note_durable, n);
	if (r < 0) {
		free(n);
		return r;
	}
	released_serial = 0;
	return 0;
}

void fs_spec_log_submitted(struct fs_ctx *ctx, const char *name, uid_t uid)
{
	uint64_t serial = released_serial;

	released_serial = 0;
	if (serial)
		log_submitted(ctx, name, serial, uid);
}

/* release: the last descriptor is gone; submit, or leave a readable rejection. */
bool fs_spec_release(struct fs_ctx *ctx, struct fs_handle *h)
{
	char why[SCHED_REASON_MAX];
	bool submitted;

	released_serial = 0;
	h->job_serial = 0;
	if (h->failed)
		return false; /* recorded when the write was refused */
	if (h->len == 0) {
		if (h->kind != H_UPLOAD)
			return false; /* opening a draft's spec and writing nothing changes nothing */
		snprintf(why, sizeof(why),
			 "%s.%s: the spec is empty; write a job spec with at least `npus`",
			 h->path.job, h->path.ext);
		record_rejection(ctx, h, why, -EINVAL);
		return false;
	}
	if (h->checked && !h->dirty && h->last_err != -ENOMEM && (h->last_err < 0 || h->accepted))
		submitted = spec_commit(ctx, h) == 0;
	else
		submitted = spec_process(ctx, h, true, why) == 0;
	if (submitted)
		released_serial = h->job_serial;
	return submitted;
}

void fs_staged_replay(struct fs_ctx *ctx, const struct fs_staged *s)
{
	struct fs_handle h = { .uid = s->uid, .gid = s->gid };
	char why[SCHED_REASON_MAX];
	int r;

	if (strcmp(s->kind, "quota") == 0) {
		fs_quota_replay(ctx, s);
		return;
	}
	if (strcmp(s->kind, "spec") != 0 || !conf_job_name_is_valid(s->key))
		return;
	/* the handle its release would have had */
	h.kind = s->ext[0] ? H_UPLOAD : H_SPEC;
	h.path.kind = s->ext[0] ? FS_JOB_UPLOAD : FS_JOB_SPEC;
	snprintf(h.path.job, sizeof(h.path.job), "%s", s->key);
	snprintf(h.path.ext, sizeof(h.path.ext), "%s", s->ext);
	h.buf = s->body;
	h.len = s->len;
	h.groups = s->groups;
	h.group_count = s->group_count;
	r = spec_process(ctx, &h, true, why);
	if (r == 0)
		log_submitted(ctx, s->key, h.job_serial, h.uid);
	fs_log(ctx, 2, "job %s: spec accepted before the restart, submitted now: %s", s->key,
	       r < 0 ? why : "ok");
}
