/* SPDX-License-Identifier: MIT */
/*
 * The path handlers of the FUSE operations (fs_op_*(), called by fs_lowlevel.c, which
 * turns libfuse's inode numbers into absolute paths): snapshot reads, specs buffered per
 * open file and submitted when the last descriptor is released, ctl verbs run per line.
 *
 * Locking: ctx->lock guards the cluster, the upload list and the render cache; a
 * handle's own mutex guards its buffer (dup'd descriptors may write and close from
 * several threads). Order: handle, then ctx->lock. Spec parsing runs outside ctx->lock.
 *
 * Each writable kind has its own file: job specs fs_spec.c (why they commit at release
 * is said there), ctl files fs_ctl.c, health reports fs_health.c, quotas fs_quota.c;
 * what they share fs_handle.c and fs_internal.h.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "fs_internal.h"

/* the request this thread serves (fs_req.c) */
static struct fs_ctx *get_ctx(void)
{
	return fs_req_ctx();
}

static const struct fuse_ctx *caller(void)
{
	return fs_req_caller();
}

static bool from_helper(const struct fs_ctx *ctx, const struct fuse_ctx *fc)
{
	return fs_req_from_helper(ctx, fc);
}

static struct fs_handle *get_handle(struct fuse_file_info *fi)
{
	return (struct fs_handle *)(uintptr_t)fi->fh;
}

static bool is_job_subtree(enum fs_node_kind k)
{
	return k >= FS_JOB_DIR && k <= FS_JOB_CTL;
}

/* The waiting part of wait_for_closing_uploads(); ctx->lock held. */
static void wait_for_releases(struct fs_ctx *ctx, const struct fs_path *p)
{
	struct timespec deadline;

	if (!ctx->multithreaded ||
	    (!is_job_subtree(p->kind) && p->kind != FS_JOBS_DIR && p->kind != FS_JOB_UPLOAD) ||
	    from_helper(ctx, caller()))
		return;
	fs_deadline_in(&deadline, FS_RELEASE_WAIT_MSEC);
	for (;;) {
		bool closing = false;

		uint64_t now = fs_now_usec();

		/* only a close within the wait window: a descriptor held open after one of
		 * its duplicates closed does not stall anybody for long */
		/* one job's: found by name; the listing (which lists them all anyway): any */
		for (const struct fs_upload *u = p->kind == FS_JOBS_DIR ?
							 ctx->uploads :
							 fs_upload_find(ctx, p->job);
		     u && !closing; u = p->kind == FS_JOBS_DIR ? u->next : NULL)
			closing = u->closing &&
				  now - u->closing_usec < (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u;
		if (!closing)
			return;
		if (pthread_cond_timedwait(&ctx->uploads_cv, &ctx->lock, &deadline) == ETIMEDOUT)
			return;
	}
}

/*
 * Whether a request on @p from a client may answer with what a scheduling pass decides
 * (states, placements, reasons, every generated file, which of a job's files exist, and
 * the directories' times: the last event's). A spec being written holds nothing a pass
 * decides: its lookup and create (two of the five requests of a `cp` into jobs/) leave
 * the owed pass to the committer, shared by every submission of its batch.
 */
static bool answer_needs_pass(const struct fs_path *p)
{
	return p->kind != FS_JOB_UPLOAD;
}

/*
 * Wait (ctx->lock held) until no upload that @p depends on is between its last close and
 * its release: one for job @p->job under jobs/<job>/ and for jobs/<job>.<ext> (whatever
 * its ext: a job has one spec writer), any for the jobs/ listing. Then run the pass the
 * requests before it owe (deferred passes, ascend_sched.h), so that what the caller
 * reads is the state after that pass: `cp x.yaml jobs/ && cat jobs/x/status` says
 * running or pending with its reason, as when each submission ran its own pass. The
 * notify helper reads nothing: it announces changes made, and the files a pass changes
 * are announced after it. Its requests and those whose answer holds nothing a pass
 * decides (answer_needs_pass) leave the pass owed, for the committer's next batch.
 */
static void wait_for_closing_uploads(struct fs_ctx *ctx, const struct fs_path *p)
{
	wait_for_releases(ctx, p);
	if (answer_needs_pass(p) && !from_helper(ctx, caller()))
		fs_pass_run_owed(ctx);
}

/* Files root writes, and members of cluster.operator_group when one is configured. */
static bool is_operator_file(enum fs_node_kind k)
{
	return k == FS_CLUSTER_CTL || k == FS_NODE_CTL || k == FS_NODE_HEALTH ||
	       k == FS_QUEUE_QUOTA || k == FS_JOB_LOG;
}

/*
 * With operator_group configured, an operator file is 0664 root:<group>, so that the
 * kernel's default_permissions check lets members write it. The group is resolved here,
 * outside ctx->lock (NSS may block); one that does not resolve leaves 0644 root:root.
 */
static void operator_attr(struct fs_ctx *ctx, struct stat *st)
{
	gid_t g;

	if (fs_operator_gid(ctx->conf, &g) < 0)
		return;
	st->st_mode = S_IFREG | 0664;
	st->st_gid = g;
}

/*
 * The attributes of jobs/ (@p). Every create and mkdir there makes them stale in the
 * kernel, and with default_permissions the next create asks for them again, under the
 * kernel's lock of jobs/, which every create of a burst waits for: waiting there for
 * ctx->lock, held by a release's submission, made that GETATTR's p90 about 100 us
 * against 40. While another request holds ctx->lock they are the last answer's if
 * nothing changed since (fs_changed(): a change answered before this request is seen;
 * the one under way has not answered) and it is at most JOBS_DIR_ATTR_REUSE_USEC old.
 */
#define JOBS_DIR_ATTR_REUSE_USEC 100000u

static int jobs_dir_getattr(struct fs_ctx *ctx, const struct fs_path *p, struct stat *st)
{
	uint64_t now = fs_now_usec(), changes;
	int r;

	if (pthread_mutex_trylock(&ctx->lock) != 0) {
		bool fresh;

		pthread_mutex_lock(&ctx->jobs_dir_mu);
		fresh = ctx->jobs_dir_st_usec &&
			now - ctx->jobs_dir_st_usec <= JOBS_DIR_ATTR_REUSE_USEC &&
			ctx->jobs_dir_st_changes == atomic_load(&ctx->changes);
		if (fresh)
			*st = ctx->jobs_dir_st;
		pthread_mutex_unlock(&ctx->jobs_dir_mu);
		if (fresh)
			return 0;
		pthread_mutex_lock(&ctx->lock);
		now = fs_now_usec();
	}
	changes = atomic_load(&ctx->changes);
	r = fs_stat(ctx, p, st, now);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_lock(&ctx->jobs_dir_mu);
	/* not over a newer answer's */
	if (r == 0 && (changes > ctx->jobs_dir_st_changes ||
		       (changes == ctx->jobs_dir_st_changes && now > ctx->jobs_dir_st_usec))) {
		ctx->jobs_dir_st = *st;
		ctx->jobs_dir_st_usec = now;
		ctx->jobs_dir_st_changes = changes;
	}
	pthread_mutex_unlock(&ctx->jobs_dir_mu);
	return r;
}

int fs_op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = fi ? get_handle(fi) : NULL;
	size_t kcache_len;
	struct fs_path p;
	off_t own_size;
	bool with_size;
	int r = fs_path_parse(path, &p);

	fs_req_set_size_not_own(false);
	if (r < 0)
		return r == -ENAMETOOLONG ? r : -ENOENT;
	if (ctx->test_slow_root_getattr_ms && strcmp(path, "/") == 0)
		usleep(ctx->test_slow_root_getattr_ms * 1000u); /* tests only: see fs.h */
	if (ctx->test_slow_helper_ms && from_helper(ctx, caller()))
		usleep(ctx->test_slow_helper_ms * 1000u); /* tests only: see fs.h */
	/* the helper announcing a job directory: not there yet, or still there (fs_notify.c) */
	if (!h && p.kind == FS_JOB_DIR && from_helper(ctx, caller())) {
		pthread_mutex_lock(&ctx->lock);
		r = fs_notify_job_dir(ctx, p.job, 0);
		pthread_mutex_unlock(&ctx->lock);
		if (r == 1)
			return -ENOENT;
		if (r == 2) {
			memset(st, 0, sizeof(*st));
			st->st_mode = S_IFDIR | 0755;
			st->st_nlink = 2;
			st->st_uid = geteuid();
			st->st_gid = getegid();
			return 0;
		}
	}
	/*
	 * The helper's lookup, fstat and truncate of a file it announces (three GETATTRs:
	 * libfuse answers a SETATTR with one) would each render it under ctx->lock, a
	 * status.json 0.35 ms, a 512-rank topology.json 2 ms, for a size nobody reads: the
	 * kernel keeps no attributes of such files (fs_lowlevel.c) and every reader's
	 * stat() asks again. But i_size stays, and reads through the page cache stop at
	 * it: a file of the kernel cache is shown the size of the bytes its slot holds,
	 * the one size the kernel was told of them (fs_kcache_slot_size()); without a slot
	 * the kernel holds none of its pages, and the next open drops what it keeps.
	 */
	with_size = !from_helper(ctx, caller());
	fs_joblog_prepare(ctx, &p);
	if (!h && p.kind == FS_JOBS_DIR)
		return jobs_dir_getattr(ctx, &p, st);
	if (h)
		pthread_mutex_lock(&h->mu);
	pthread_mutex_lock(&ctx->lock);
	if (!h && p.kind != FS_JOBS_DIR)
		wait_for_closing_uploads(ctx, &p);
	r = fs_stat_sized(ctx, &p, st, fs_now_usec(), with_size);
	own_size = st->st_size;
	if (r == 0 && h && h->kind == H_SNAPSHOT)
		st->st_size = (off_t)h->snap.len;
	/* while the page cache serves one snapshot, the kernel's i_size must stay its size */
	if (r == 0 && fs_kcache_size(ctx, &p, &kcache_len))
		st->st_size = (off_t)kcache_len;
	else if (r == 0 && !with_size && fs_kcache_slot_size(ctx, &p, &kcache_len))
		st->st_size = (off_t)kcache_len;
	/* not to be kept past this answer (fs_lowlevel.c) */
	fs_req_set_size_not_own(r == 0 && with_size && st->st_size != own_size);
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0 && is_operator_file(p.kind))
		operator_attr(ctx, st);
	/* the notifier truncates read-only files: show them writable to it alone */
	if (r == 0 && from_helper(ctx, caller()) && S_ISREG(st->st_mode)) {
		st->st_uid = geteuid();
		st->st_mode |= 0200;
	}
	/*
	 * Linux sends fstat() as a plain GETATTR without the file handle, so an open
	 * snapshot cannot report its own size there; only calls that carry the handle
	 * (ftruncate, and a read through the page cache past i_size) land here with @fi.
	 * Reads with direct_io return the whole snapshot whatever st_size says; those
	 * through the page cache stop at i_size: see fs_kcache_size() above.
	 */
	if (r == 0 && h && h->kind == H_UPLOAD)
		st->st_size = (off_t)h->len;
	if (h)
		pthread_mutex_unlock(&h->mu);
	return r;
}

int fs_op_readdir(const char *path, int (*fill)(void *data, const char *name), void *data)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	if (fill(data, ".") < 0 || fill(data, "..") < 0)
		return -ENOMEM;
	fs_joblog_prepare(ctx, &p);
	pthread_mutex_lock(&ctx->lock);
	wait_for_closing_uploads(ctx, &p);
	r = fs_list(ctx, &p, fill, data);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}


/*
 * The process of the current request, for a handle that stages at close (H_UPLOAD,
 * H_SPEC, H_QUOTA: fs_handle_flush_is_openers()). A read of /proc (three for a thread
 * of a larger group not seen before): call without ctx->lock, which every other request
 * waits for, and for a create after its answer (fs_op_create_answered()).
 */
static struct fs_proc_id caller_proc(void)
{
	struct fs_proc_id id = { 0 };

	(void)fs_proc_id_of(caller()->pid, &id);
	return id;
}

/* A new handle, listed among its user's (fs_handle_list()); @opener: caller_proc() for
 * the kinds that stage at close, else NULL (a create's: set after its answer). Caller
 * holds ctx->lock. */
static struct fs_handle *handle_new_locked(struct fs_ctx *ctx, enum handle_kind kind,
					   const struct fs_path *p,
					   const struct fs_proc_id *opener)
{
	struct fs_handle *h = calloc(1, sizeof(*h));
	const struct fuse_ctx *fc = caller();

	if (!h)
		return NULL;
	pthread_mutex_init(&h->mu, NULL);
	h->kind = kind;
	h->path = *p;
	h->uid = fc->uid;
	h->gid = fc->gid;
	if (opener)
		h->opener = *opener;
	if (fs_handle_list(ctx, h) < 0) {
		pthread_mutex_destroy(&h->mu);
		free(h);
		return NULL;
	}
	return h;
}

/*
 * The caller's supplementary groups, for queue `groups` checks. Read while its request is
 * in flight: fuse_req_getgroups() reads /proc of the calling thread, and release() carries no
 * credentials at all. On failure the caller counts with its primary group only (and is
 * refused rather than wrongly admitted by a restricted queue). Call without ctx->lock.
 */
static void caller_groups(struct fs_ctx *ctx, gid_t **ret, size_t *ret_count)
{
	gid_t *list = NULL;
	int n;

	*ret = NULL;
	*ret_count = 0;
	/* a read of /proc per spec written, when no rule of the cluster asks; nor for root,
	 * who is in every queue and operates (fs_queue_check_groups(), fs_may_operate()):
	 * the read was 25 us of a create's 100, under the kernel's lock of jobs/ */
	if (!fs_groups_matter(ctx->conf) || caller()->uid == 0)
		return;
	n = fuse_req_getgroups(fs_req_current(), 0, NULL);
	for (int tries = 0; n > 0 && tries < 3; tries++) {
		gid_t *grown = realloc(list, (size_t)n * sizeof(*list));
		int got;

		if (!grown) {
			n = -ENOMEM;
			break;
		}
		list = grown;
		got = fuse_req_getgroups(fs_req_current(), n, list);
		if (got >= 0 && got <= n) {
			*ret = list;
			*ret_count = (size_t)got;
			return;
		}
		n = got; /* an error, or it joined groups since the count */
	}
	if (n < 0)
		fs_log(ctx, 3, "supplementary groups of pid %d unknown: %s",
		       (int)caller()->pid, strerror(-n));
	free(list);
}

/*
 * Is the caller of the current request root or a member of cluster.operator_group (its
 * primary group or a supplementary one)? Call without ctx->lock.
 */
static bool caller_may_operate(struct fs_ctx *ctx)
{
	const struct fuse_ctx *fc = caller();
	gid_t *groups;
	size_t group_count;
	bool ok;

	if (fc->uid == 0)
		return true;
	if (!ctx->conf->operator_group)
		return false;
	caller_groups(ctx, &groups, &group_count);
	ok = fs_may_operate(ctx->conf, fc->uid, fc->gid, groups, group_count);
	free(groups);
	return ok;
}

/*
 * May the caller of the current request write node @p, whose attributes fs_stat() gave
 * as @st? What the kernel decides with default_permissions, decided again for a mount
 * without it: root may; an operator may write an operator file; the owner may when the
 * mode lets the owner write; anyone may when it lets others. Call without ctx->lock.
 */
static bool caller_may_write(struct fs_ctx *ctx, const struct fs_path *p, const struct stat *st)
{
	uid_t uid = caller()->uid;

	if (uid == 0)
		return true;
	if (is_operator_file(p->kind))
		return caller_may_operate(ctx);
	if (uid == st->st_uid)
		return st->st_mode & 0200;
	return st->st_mode & 0002;
}

static void handle_destroy(struct fs_handle *h)
{
	pthread_mutex_destroy(&h->mu);
	fs_blob_put(h->snap.blob);
	free(h->buf);
	free(h->groups);
	free(h->upload);
	free(h->last_why);
	free(h->answer);
	conf_job_spec_free(h->accepted);
	free(h);
}

/* Unlist and free @h. Caller holds ctx->lock. */
static void handle_free_locked(struct fs_ctx *ctx, struct fs_handle *h)
{
	if (!h)
		return;
	fs_kcache_release(h->kslot);
	fs_handle_unlist(ctx, h);
	handle_destroy(h);
}

void fs_handles_free_all(struct fs_ctx *ctx)
{
	struct fs_handle *h;

	while ((h = fs_handle_unlist_any(ctx))) {
		h->upload = NULL; /* freed with ctx->uploads */
		fs_joblog_close(ctx, h, h->log);
		handle_destroy(h);
	}
}

static bool is_ctl(enum fs_node_kind k)
{
	return k == FS_CLUSTER_CTL || k == FS_NODE_CTL || k == FS_JOB_CTL;
}

/* The open upload of job @name (any ext, or its jobs/<name>/spec), or NULL (ctx->lock held). */
static const struct fs_upload *upload_of(const struct fs_ctx *ctx, const char *name)
{
	return fs_upload_find(ctx, name);
}


/* How long an open of a job's env file waits for its generation's checkpoint scan. */
#define RESUME_WAIT_MSEC 2000

/*
 * Wait (ctx->lock held, dropped while waiting) until the generation of job @p->job has
 * had its checkpoint_dir read, so its env files name the newest checkpoint on disk
 * (issue 14 item 10). Bounded: the scan runs in the scanner thread, never here, and a
 * directory that does not answer lets the open go on with the newest checkpoint known.
 */
static void wait_for_resume_scan(struct fs_ctx *ctx, const struct fs_path *p)
{
	struct timespec deadline;
	const struct sched_job *j;

	/* (a standby runs no scanner: its view shows what the leader wrote) */
	if (!ctx->multithreaded || ctx->viewing ||
	    (p->kind != FS_JOB_ENV && p->kind != FS_JOB_HOST_ENV && p->kind != FS_JOB_RANK_ENV) ||
	    from_helper(ctx, caller()))
		return;
	fs_deadline_in(&deadline, RESUME_WAIT_MSEC);
	while ((j = sched_cluster_find_job(ctx->cluster, p->job)) && j->resume_scan_pending &&
	       !ctx->stopping)
		if (pthread_cond_timedwait(&ctx->resume_cv, &ctx->lock, &deadline) == ETIMEDOUT)
			return;
}


/*
 * May the caller hold snapshot @v of @p? A refusal at the user's bound right after one of
 * the user's closes waits for its late RELEASE (fs_handle_wait_release()), and the file
 * is then taken again as of then. Returns 0 (@v is the caller's) or -errno (@v put).
 */
static int snapshot_admit(struct fs_ctx *ctx, const struct fs_path *p, struct fs_view *v)
{
	uid_t uid = caller()->uid;
	int r = fs_handle_admit(ctx, uid, v->blob);
	struct timespec deadline;

	fs_deadline_in(&deadline, FS_RELEASE_WAIT_MSEC);
	while (r == -EMFILE && fs_handle_wait_release(ctx, uid, &deadline)) {
		fs_blob_put(v->blob);
		v->blob = NULL;
		/* the lock was dropped: what an open waits for, it waits for again */
		wait_for_closing_uploads(ctx, p);
		wait_for_resume_scan(ctx, p);
		r = fs_snapshot(ctx, p, fs_now_usec(), v);
		if (r < 0)
			return r;
		r = fs_handle_admit(ctx, uid, v->blob);
	}
	if (r < 0) {
		fs_blob_put(v->blob);
		v->blob = NULL;
	}
	return r;
}

/* The same for a ctl file @p (it buffers a line): 0 or -errno. */
static int ctl_admit(struct fs_ctx *ctx, const struct fs_path *p)
{
	uid_t uid = caller()->uid;
	int r = fs_handle_admit(ctx, uid, NULL);
	struct timespec deadline;
	struct stat st;

	fs_deadline_in(&deadline, FS_RELEASE_WAIT_MSEC);
	while (r == -EMFILE && fs_handle_wait_release(ctx, uid, &deadline)) {
		r = fs_stat(ctx, p, &st, fs_now_usec()); /* the job may have gone meanwhile */
		if (r == 0)
			r = fs_handle_admit(ctx, uid, NULL);
	}
	return r;
}

int fs_op_open(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	int acc = fi->flags & O_ACCMODE;
	struct fs_handle *h = NULL;
	gid_t *groups = NULL;
	size_t group_count = 0;
	bool may_operate = false;
	struct fs_proc_id opener = { 0 };
	int cache_mode = -1; /* fs_kcache_open(): -1 direct_io */
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	/* a standby's files are a view: none opens for writing */
	if ((acc != O_RDONLY || (fi->flags & O_TRUNC)) && (r = fs_standby_refusal(ctx, path)) < 0)
		return r;
	if ((p.kind == FS_JOB_SPEC && acc == O_WRONLY) ||
	    (p.kind == FS_CLUSTER_WHATIF && acc == O_RDWR)) /* a queue's groups decide */
		caller_groups(ctx, &groups, &group_count);
	if ((p.kind == FS_JOB_SPEC || p.kind == FS_QUEUE_QUOTA) && acc == O_WRONLY)
		opener = caller_proc();
	/* checked here too: the modes are enforced by the kernel only with default_permissions */
	/* (a dry run is asked as its asker would submit: an operator's caps are its) */
	if ((is_operator_file(p.kind) || p.kind == FS_CLUSTER_WHATIF) && acc != O_RDONLY)
		may_operate = caller_may_operate(ctx);
	fs_joblog_prepare(ctx, &p);
	pthread_mutex_lock(&ctx->lock);
	wait_for_closing_uploads(ctx, &p);
	if (p.kind == FS_JOB_LOG || p.kind == FS_JOB_LOG_OLD || p.kind == FS_JOB_PROC_LOG ||
	    p.kind == FS_JOB_PROC_LOG_OLD) {
		struct stat st;

		/* agents append to log; everybody reads it, log.1 and logs/ */
		r = fs_stat(ctx, &p, &st, fs_now_usec());
		if (r == 0 && acc != O_RDONLY && (p.kind != FS_JOB_LOG || !may_operate))
			r = -EACCES;
		if (r == 0)
			r = ctl_admit(ctx, &p);
		if (r == 0 && !(h = handle_new_locked(ctx, H_LOG, &p, NULL)))
			r = -ENOMEM;
		if (r == 0) {
			h->may_operate = may_operate;
			h->job_serial = sched_cluster_find_job(ctx->cluster, p.job)->serial;
		}
		goto out;
	}
	if (p.kind == FS_CLUSTER_WHATIF && acc != O_RDONLY) {
		/* a transaction: written and read by one open file (fs_whatif.c) */
		r = acc == O_RDWR ? ctl_admit(ctx, &p) : -EINVAL;
		if (r == 0 && !(h = handle_new_locked(ctx, H_WHATIF, &p, NULL)))
			r = -ENOMEM;
		if (r == 0) {
			h->may_operate = may_operate;
			h->groups = groups;
			h->group_count = group_count;
			groups = NULL;
		}
		goto out;
	}
	if (acc == O_RDONLY) {
		struct fs_view v;

		wait_for_resume_scan(ctx, &p);
		r = fs_snapshot(ctx, &p, fs_now_usec(), &v);
		if (r == 0)
			r = snapshot_admit(ctx, &p, &v); /* may take it again, newer */
		/* what an agent must run: only once it is durable (fs_store_durable_locked()) */
		if (r == 0 && p.kind == FS_NODE_JOBS &&
		    (r = fs_store_durable_locked(ctx, ctx->cluster->version)) < 0)
			fs_blob_put(v.blob);
		if (r == 0 && !(h = handle_new_locked(ctx, H_SNAPSHOT, &p, NULL))) {
			fs_blob_put(v.blob);
			r = -ENOMEM;
		}
		if (r == 0) {
			h->snap = v;
			cache_mode = fs_kcache_open(ctx, &p, &v, &h->kslot);
		}
		goto out;
	}
	if (is_ctl(p.kind)) {
		struct stat st;

		r = acc == O_WRONLY ? fs_stat(ctx, &p, &st, fs_now_usec()) : -EACCES;
		/* server verbs are root's and operators'; a job's ctl opens for anyone, and a line
		 * from someone who does not own the job is refused (EPERM) and a "refused" event */
		if (r == 0 && p.kind != FS_JOB_CTL && !may_operate)
			r = -EACCES;
		if (r == 0)
			r = ctl_admit(ctx, &p);
		if (r == 0 && !(h = handle_new_locked(ctx, H_CTL, &p, NULL)))
			r = -ENOMEM;
		if (r == 0)
			h->may_operate = may_operate;
		if (r == 0 && p.kind == FS_JOB_CTL)
			h->job_serial = sched_cluster_find_job(ctx->cluster, p.job)->serial;
		goto out;
	}
	if (p.kind == FS_NODE_HEALTH && acc == O_WRONLY) {
		struct stat st;

		r = fs_stat(ctx, &p, &st, fs_now_usec());
		if (r == 0 && !may_operate)
			r = -EACCES; /* node health is the agent's: root or an operator */
		if (r == 0 && !(h = handle_new_locked(ctx, H_HEALTH, &p, NULL)))
			r = -ENOMEM;
		if (r == 0)
			h->may_operate = true;
		goto out;
	}
	if (p.kind == FS_QUEUE_QUOTA && acc == O_WRONLY) {
		struct stat st;

		r = fs_stat(ctx, &p, &st, fs_now_usec());
		if (r == 0 && !may_operate)
			r = -EACCES; /* quotas are root's and operators' */
		if (r == 0 && !(h = handle_new_locked(ctx, H_QUOTA, &p, &opener)))
			r = -ENOMEM;
		if (r == 0)
			h->may_operate = true;
		goto out;
	}
	if (p.kind == FS_JOB_SPEC && acc == O_WRONLY) {
		struct sched_job *j = sched_cluster_find_job(ctx->cluster, p.job);
		uid_t uid = caller()->uid;

		if (!j)
			r = -ENOENT;
		else if (uid != 0 && uid != j->uid)
			r = -EACCES;
		else if (j->state != SCHED_JOB_DRAFT && !sched_job_state_is_terminal(j->state))
			r = -EBUSY;
		else if (!(h = handle_new_locked(ctx, H_SPEC, &p, &opener)))
			r = -ENOMEM;
		else
			r = fs_spec_upload_register(ctx, h, "", groups, group_count);
		if (r == 0) {
			h->groups = groups;
			h->group_count = group_count;
			groups = NULL;
		}
		goto out;
	}
	r = p.kind == FS_JOB_UPLOAD ? -EBUSY : -EACCES;
	/* the kernel looked the name up while an upload of it was there; it has been
	 * released since: a clean slot, as create finds it */
	if (p.kind == FS_JOB_UPLOAD && acc == O_WRONLY && !upload_of(ctx, p.job))
		r = 1;
out:
	if (r < 0)
		handle_free_locked(ctx, h);
	pthread_mutex_unlock(&ctx->lock);
	free(groups);
	/* its files, outside ctx->lock: an append may hold the log meanwhile */
	if (r == 0 && h->kind == H_LOG) {
		r = fs_joblog_open(ctx, h, h->job_serial, acc != O_RDONLY);
		if (r < 0) {
			pthread_mutex_lock(&ctx->lock);
			handle_free_locked(ctx, h);
			pthread_mutex_unlock(&ctx->lock);
		}
	}
	if (r == 1)
		return fs_op_create(path, 0644, fi);
	if (r < 0)
		return r;
	fi->direct_io = cache_mode < 0;
	/* direct_io beside cached-mode opens of other bytes: leave their pages alone; every
	 * other generated file keeps nothing, as before the page cache (fs_kcache.c) */
	fi->keep_cache = cache_mode != 0 && h->kind == H_SNAPSHOT && fs_kcache_kind(p.kind);
	/* nothing to do at a read-only file's close: no FLUSH round trip; but a user under
	 * the bound on open files is told of it, for a RELEASE that comes late after it
	 * (fs_handle_wait_release()) */
	fi->noflush = h->kind == H_SNAPSHOT && h->uid == 0;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

/* Why a name in jobs/ is refused: the rule it breaks, for create and mkdir alike. */
static void name_refusal(struct fs_ctx *ctx, const char *op, const char *path, uid_t uid,
			 int err)
{
	char shown[192], why[SCHED_REASON_MAX];

	fs_text_escape(path, shown, sizeof(shown));
	snprintf(why, sizeof(why), "%s \"%s\" by uid %u refused: %s", op, shown, (unsigned)uid,
		 err == -ENAMETOOLONG ?
			 "the name is too long; job names have at most 63 characters" :
		 strcmp(op, "mkdir") == 0 ?
			 "a job directory is named with lowercase letters, digits, '.', '_' "
			 "and '-', and does not end in .yaml, .yml or .json" :
			 "job specs are named <name>.yaml, .yml or .json with <name> of "
			 "lowercase letters, digits, '.', '_' and '-'");
	fs_refusal_note(ctx, 2, NULL, why);
}

int fs_op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h;
	gid_t *groups = NULL;
	size_t group_count = 0;
	struct fs_path p;
	int r = fs_standby_refusal(ctx, path);

	(void)mode;
	if (r < 0)
		return r;
	r = fs_path_parse(path, &p);
	if (r == -EINVAL || (r == 0 && p.kind == FS_JOB_DIR)) {
		name_refusal(ctx, "create", path, caller()->uid, -EINVAL);
		return -EINVAL;
	}
	if (r == -ENAMETOOLONG && strncmp(path, "/jobs/", 6) == 0 && !strchr(path + 6, '/'))
		name_refusal(ctx, "create", path, caller()->uid, r);
	if (r < 0)
		return r == -ENAMETOOLONG ? r : -EACCES;
	if (p.kind != FS_JOB_UPLOAD)
		return -EACCES;
	caller_groups(ctx, &groups, &group_count);
	pthread_mutex_lock(&ctx->lock);
	/* a resubmission right after a close finds the old job or a clean slot */
	wait_for_closing_uploads(ctx, &p);
	/* its opener is read once the kernel has the answer: fs_op_create_answered() */
	h = handle_new_locked(ctx, H_UPLOAD, &p, NULL);
	r = h ? sched_job_may_submit(ctx->cluster, p.job, h->uid) : -ENOMEM;
	if (r == 0)
		r = fs_spec_upload_register(ctx, h, p.ext, groups, group_count);
	if (r == 0) {
		h->groups = groups;
		h->group_count = group_count;
		groups = NULL;
	}
	if (r < 0 && h && (r == -EEXIST || r == -EPERM)) {
		const struct sched_job *svc = sched_service_owning_name(ctx->cluster, p.job);
		const struct sched_job *arr = sched_array_owning_name(ctx->cluster, p.job);
		char why[SCHED_REASON_MAX], whose[CONF_NAME_MAX + 96];

		if (svc)
			snprintf(whose, sizeof(whose), "is a name of service %s's instances "
				 "(<service>.<index>) or roles; choose another name", svc->name);
		else if (arr)
			snprintf(whose, sizeof(whose), "is the name of an element of array %s "
				 "(<array>.<index>), active; choose another name", arr->name);
		/* in cluster/events: the job itself is untouched, its events stay its own */
		snprintf(why, sizeof(why), "create %s.%s by uid %u refused: job %s %s", p.job,
			 p.ext, (unsigned)h->uid, p.job,
			 svc || arr ? whose :
			 r == -EEXIST ? "is active; cancel or remove it first" :
					"belongs to another user");
		fs_log(ctx, 2, "%s", why);
		sched_cluster_note_refusal(ctx->cluster, NULL, why, fs_now_usec());
		fs_changed(ctx);
	}
	if (r < 0 && h)
		handle_free_locked(ctx, h);
	pthread_mutex_unlock(&ctx->lock);
	free(groups);
	if (r < 0)
		return r;
	fi->direct_io = 1;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

pid_t fs_op_create_answering(struct fuse_file_info *fi)
{
	pthread_mutex_lock(&get_handle(fi)->mu);
	return caller()->pid;
}

void fs_op_create_answered(struct fuse_file_info *fi, pid_t opener_tid)
{
	struct fs_handle *h = get_handle(fi);

	/* unknown (zero, as handle_new_locked() left it) if it is gone; without a store
	 * nothing is staged and nobody asks (fs_spec_flush()) */
	if (get_ctx()->store)
		(void)fs_proc_id_of(opener_tid, &h->opener);
	pthread_mutex_unlock(&h->mu);
}

/* Files that only grow at the end (rings of lines), which `tail -f` follows. */
static bool is_event_stream(enum fs_node_kind k)
{
	return k == FS_CLUSTER_EVENTS || k == FS_JOB_EVENTS || k == FS_CLUSTER_ACCOUNTING ||
	       k == FS_JOB_ACCOUNTING;
}

/*
 * Event files only grow: a read at the end of the snapshot takes a newer one when the
 * old bytes are its prefix (or it is the same stream blob, grown), so `tail -f` sees
 * new lines while every byte already read stays as it was.
 */
static void snapshot_extend(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct fs_view v = { 0 }, *o = &h->snap;

	pthread_mutex_lock(&ctx->lock);
	if (fs_snapshot(ctx, &h->path, fs_now_usec(), &v) < 0)
		v.blob = NULL;
	pthread_mutex_unlock(&ctx->lock);
	/* the same stream blob only grew: the view keeps its start (lines of events the
	 * ring dropped since stay readable in it) and takes the new end */
	if (v.blob && v.blob == o->blob && v.off + v.len > o->off + o->len) {
		o->len = v.off + v.len - o->off;
		fs_blob_put(v.blob);
		return;
	}
	if (v.blob && v.len > o->len &&
	    memcmp(v.blob->data + v.off, o->blob->data + o->off, o->len) == 0) {
		struct fs_blob *old = o->blob;

		/* under the lock: fs_handle_admit() reads the blobs of the user's open files */
		pthread_mutex_lock(&ctx->lock);
		*o = v;
		pthread_mutex_unlock(&ctx->lock);
		fs_blob_put(old);
		return;
	}
	fs_blob_put(v.blob);
}

int fs_op_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	int r;

	(void)path;
	if (!h || (h->kind != H_SNAPSHOT && h->kind != H_LOG && h->kind != H_WHATIF))
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	pthread_mutex_lock(&h->mu);
	if (h->kind == H_LOG || h->kind == H_WHATIF) {
		r = h->kind == H_LOG ? fs_joblog_read(ctx, h, buf, size, off) :
				       fs_whatif_read(ctx, h, buf, size, off);
		pthread_mutex_unlock(&h->mu);
		return r;
	}
	if ((size_t)off >= h->snap.len && is_event_stream(h->path.kind))
		snapshot_extend(ctx, h);
	if ((size_t)off >= h->snap.len) {
		r = 0;
	} else {
		if (size > h->snap.len - (size_t)off)
			size = h->snap.len - (size_t)off;
		memcpy(buf, h->snap.blob->data + h->snap.off + off, size);
		r = (int)size;
	}
	pthread_mutex_unlock(&h->mu);
	return r;
}

/*
 * Before a request that changed state returns: wait until the change is durable
 * (fs_store_sync). A change that could not be written fails the request with EIO.
 */
static int durable(struct fs_ctx *ctx, int r)
{
	int w = fs_store_sync(ctx);

	return r >= 0 && w < 0 ? w : r;
}

int fs_op_write(const char *path, const char *data, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	int r;

	if (!h)
		return -EBADF;
	/* a head that lost the leadership changes nothing more (it is exiting) */
	if (h->kind != H_LOG && h->kind != H_WHATIF && (r = fs_standby_refusal(ctx, path)) < 0)
		return r;
	pthread_mutex_lock(&h->mu);
	switch (h->kind) {
	case H_UPLOAD:
	case H_SPEC:
		r = fs_spec_write(ctx, h, data, size, off);
		break;
	case H_HEALTH:
		r = fs_health_write(ctx, h, data, size);
		break;
	case H_CTL:
		r = fs_ctl_write(ctx, h, data, size);
		break;
	case H_QUOTA:
		r = fs_quota_write(ctx, h, data, size);
		break;
	case H_LOG:
		r = fs_joblog_write(ctx, h, data, size);
		pthread_mutex_unlock(&h->mu);
		return r; /* not the state: made durable by its close (fs_joblog_flush()) */
	case H_WHATIF:
		r = fs_whatif_write(ctx, h, data, size, off);
		pthread_mutex_unlock(&h->mu);
		return r; /* changes nothing: nothing to wait for */
	default:
		r = -EBADF;
	}
	pthread_mutex_unlock(&h->mu);
	return durable(ctx, r);
}

int fs_op_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	int r = 0;

	if (!h)
		return 0;
	if (h->kind != H_SNAPSHOT && h->kind != H_LOG && h->kind != H_WHATIF &&
	    (r = fs_standby_refusal(ctx, path)) < 0)
		return r;
	if (h->kind == H_SNAPSHOT || h->kind == H_CTL) {
		pthread_mutex_lock(&ctx->lock);
		fs_handle_set_closing(ctx, h, fs_now_usec());
		pthread_mutex_unlock(&ctx->lock);
	}
	pthread_mutex_lock(&h->mu);
	if (h->kind == H_UPLOAD || h->kind == H_SPEC)
		r = fs_spec_flush(ctx, h);
	else if (h->kind == H_CTL)
		r = fs_ctl_run(ctx, h, true);
	else if (h->kind == H_HEALTH)
		r = fs_health_apply(ctx, h);
	else if (h->kind == H_QUOTA)
		r = fs_quota_apply(ctx, h, false);
	else if (h->kind == H_LOG) {
		r = fs_joblog_flush(ctx, h);
		pthread_mutex_unlock(&h->mu);
		return r;
	}
	pthread_mutex_unlock(&h->mu);
	return durable(ctx, r);
}

/* Tests only (fs.h's test_slow_release_ms): this RELEASE of @uid's comes late, unless
 * another of @uid's of the same class (a spec upload, or any other file) is already
 * late: a test's thousands of closes cost one wait each, not thousands. */
static void test_slow_release(struct fs_ctx *ctx, uid_t uid, enum handle_kind kind)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct { uid_t uid; bool upload; } late[16];
	static size_t late_count;
	bool upload = kind == H_UPLOAD || kind == H_SPEC;
	size_t i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < late_count && (late[i].uid != uid || late[i].upload != upload); i++)
		;
	if (i < late_count || late_count == sizeof(late) / sizeof(late[0])) {
		pthread_mutex_unlock(&mu);
		return;
	}
	late[late_count].uid = uid;
	late[late_count++].upload = upload;
	pthread_mutex_unlock(&mu);
	usleep(ctx->test_slow_release_ms * 1000u);
	pthread_mutex_lock(&mu);
	for (i = 0; late[i].uid != uid || late[i].upload != upload; i++)
		;
	late[i] = late[--late_count];
	pthread_mutex_unlock(&mu);
}

int fs_op_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	char job[CONF_NAME_MAX + 1];
	bool submitted = false;
	uid_t uid;

	if (!h)
		return 0;
	if (ctx->test_slow_release_ms)
		test_slow_release(ctx, h->uid, h->kind);
	snprintf(job, sizeof(job), "%s", h->path.job);
	uid = h->uid;
	pthread_mutex_lock(&h->mu);
	/* a head that lost the leadership applies no upload, line or report (its close
	 * failed with EIO already) */
	if ((h->kind == H_UPLOAD || h->kind == H_SPEC || h->kind == H_CTL ||
	     h->kind == H_HEALTH || h->kind == H_QUOTA) && fs_standby_refusal(ctx, path) < 0)
		; /* the handle only goes */
	else if (h->kind == H_UPLOAD || h->kind == H_SPEC)
		submitted = fs_spec_release(ctx, h); /* nobody sees an error; the files say it */
	else if (h->kind == H_CTL)
		fs_ctl_run(ctx, h, true);
	else if (h->kind == H_HEALTH)
		fs_health_apply(ctx, h);
	else if (h->kind == H_QUOTA)
		fs_quota_apply(ctx, h, true);
	else if (h->kind == H_LOG)
		fs_joblog_close(ctx, h, h->log);
	if (h->hold) { /* a release that did not submit (a spec truncated to nothing) */
		pthread_mutex_lock(&ctx->lock);
		sched_hold_drop(ctx->cluster, &h->hold);
		pthread_mutex_unlock(&ctx->lock);
	}
	pthread_mutex_unlock(&h->mu);
	/* a lookup that waited for this upload runs the pass it owes (wait_for_closing_uploads) */
	fs_spec_upload_unregister(ctx, h);
	pthread_mutex_lock(&ctx->lock);
	handle_free_locked(ctx, h);
	pthread_mutex_unlock(&ctx->lock);
	/* nobody sees release's outcome (the close was the answer); the log says
	 * "submitted" of a job only once it is durable: a write that failed is logged by
	 * the committer, and a head that lost the leadership meanwhile wrote nothing. The
	 * committer logs it (its pass has run then): this thread does not wait, 2 of a
	 * submission's 16 context switches */
	if (submitted && fs_spec_log_submitted_when_durable(ctx, job, uid) == 0)
		return 0;
	if (durable(ctx, 0) == 0 && submitted) /* its pass has run (fs_store_sync) */
		fs_spec_log_submitted(ctx, job, uid);
	return 0;
}

int fs_op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = fi ? get_handle(fi) : NULL;
	struct fs_path p;
	struct stat st;
	int r = fs_path_parse(path, &p);

	if (from_helper(ctx, caller()))
		return 0; /* our own announcement (fs_notify.c) */
	if (r < 0)
		return -ENOENT;
	if ((r = fs_standby_refusal(ctx, path)) < 0)
		return r;
	if (h && h->kind == H_WHATIF) { /* a spec to ask about again */
		pthread_mutex_lock(&h->mu);
		r = fs_whatif_truncate(h, size);
		pthread_mutex_unlock(&h->mu);
		return r;
	}
	if (h && (h->kind == H_UPLOAD || h->kind == H_SPEC)) {
		pthread_mutex_lock(&h->mu);
		r = fs_spec_truncate(ctx, h, size);
		pthread_mutex_unlock(&h->mu);
		return r;
	}
	/* O_TRUNC on a ctl or spec file: nothing is buffered yet, nothing to do */
	if (size != 0)
		return -EACCES;
	pthread_mutex_lock(&ctx->lock);
	r = fs_stat(ctx, &p, &st, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	if (r < 0)
		return r;
	if (!is_ctl(p.kind) && p.kind != FS_JOB_SPEC && p.kind != FS_JOB_UPLOAD &&
	    p.kind != FS_NODE_HEALTH && p.kind != FS_QUEUE_QUOTA && p.kind != FS_JOB_LOG &&
	    p.kind != FS_CLUSTER_WHATIF)
		return -EACCES;
	/* with a handle, its open() checked the writer; truncate(2) by path is checked here */
	return h || caller_may_write(ctx, &p, &st) ? 0 : -EACCES;
}

int fs_op_mkdir(const char *path, mode_t mode)
{
	struct fs_ctx *ctx = get_ctx();
	const struct fuse_ctx *fc = caller();
	struct sched_job *j = NULL;
	char why[SCHED_REASON_MAX] = "";
	bool is_operator;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	(void)mode;
	if (r == 0 && p.kind == FS_JOB_DIR && from_helper(ctx, fc)) {
		/* the helper's announcement of a job directory the daemon made */
		pthread_mutex_lock(&ctx->lock);
		r = fs_notify_job_dir(ctx, p.job, 1);
		pthread_mutex_unlock(&ctx->lock);
		return r == 1 ? 0 : -EEXIST;
	}
	{
		int refused = fs_standby_refusal(ctx, path);

		if (refused < 0)
			return refused;
	}
	if (r == -EINVAL || (r == 0 && p.kind == FS_JOB_UPLOAD)) {
		/* not a job name (or one ending like a spec file) */
		name_refusal(ctx, "mkdir", path, fc->uid, -EINVAL);
		return -EINVAL;
	}
	if (r == -ENAMETOOLONG && strncmp(path, "/jobs/", 6) == 0 && !strchr(path + 6, '/'))
		name_refusal(ctx, "mkdir", path, fc->uid, r);
	if (r < 0 || p.kind != FS_JOB_DIR)
		return -EACCES;
	/* operators are exempt from the job-count limits, as root is (NSS: outside the lock) */
	is_operator = fc->uid != 0 && caller_may_operate(ctx);
	pthread_mutex_lock(&ctx->lock);
	r = sched_job_create_draft_as(ctx->cluster, p.job, fc->uid, fc->gid, is_operator,
				      fs_now_usec(), why, &j);
	if (r == 0 && j) /* the kernel announces this mkdir itself */
		fs_notify_job_dir_user(ctx, p.job, j->serial, true);
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0)
		fs_log(ctx, 2, "job %s: draft created by uid %u", p.job, (unsigned)fc->uid);
	else if (r == -EAGAIN) /* a "refused" event says so too */
		fs_log(ctx, 2, "mkdir jobs/%s by uid %u refused: %s", p.job, (unsigned)fc->uid,
		       why);
	return durable(ctx, r);
}

int fs_op_rmdir(const char *path)
{
	struct fs_ctx *ctx = get_ctx();
	const struct fuse_ctx *fc = caller();
	struct fs_path p;
	bool held;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	if (p.kind != FS_JOB_DIR)
		return -EACCES;
	if (from_helper(ctx, fc)) {
		/* the helper's announcement of a job directory the daemon dropped */
		pthread_mutex_lock(&ctx->lock);
		r = fs_notify_job_dir(ctx, p.job, 2);
		pthread_mutex_unlock(&ctx->lock);
		return r == 2 ? 0 : -ENOENT;
	}
	if ((r = fs_standby_refusal(ctx, path)) < 0)
		return r;
	pthread_mutex_lock(&ctx->lock);
	wait_for_closing_uploads(ctx, &p);
	r = sched_job_remove(ctx->cluster, p.job, fc->uid, fs_now_usec());
	/* a job whose processes may still run stays, stopping, until they are gone */
	held = r == 0 && sched_cluster_find_job(ctx->cluster, p.job) != NULL;
	if (r == 0) /* the kernel announces this rmdir itself */
		fs_notify_job_dir_user(ctx, p.job, 0, false);
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0)
		fs_log(ctx, 2, "job %s %s by uid %u", p.job,
		       held ? "cancelled by rmdir (its record goes once its processes are gone)"
			    : "removed",
		       (unsigned)fc->uid);
	return durable(ctx, r);
}

int fs_op_unlink(const char *path)
{
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	return p.kind == FS_JOB_UPLOAD ? -EBUSY : -EPERM;
}

/*
 * touch, cp -p: accepted, changes nothing we keep; but only from whom the kernel would
 * accept it with default_permissions: the owner or root may set any times, a writer may
 * set both to now (touch), anyone else gets EPERM (times given) or EACCES (now).
 */
int fs_op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	uid_t uid = caller()->uid;
	bool now = tv[0].tv_nsec == UTIME_NOW && tv[1].tv_nsec == UTIME_NOW;
	struct fs_path p;
	struct stat st;
	int r;

	(void)fi;
	if (from_helper(ctx, caller()))
		return 0; /* our own announcement (fs_notify.c) */
	if (fs_path_parse(path, &p) < 0)
		return -ENOENT;
	pthread_mutex_lock(&ctx->lock);
	r = fs_stat(ctx, &p, &st, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	if (r < 0)
		return r;
	if (uid == 0 || uid == st.st_uid || (now && caller_may_write(ctx, &p, &st)))
		return 0;
	return now ? -EACCES : -EPERM;
}

/*
 * cp -p, install -m: fchmod/fchown of a spec being written reach us by path (Linux
 * passes no handle), and are accepted as no-ops from its writer or root; anything else is
 * refused (EPERM, as the kernel says to a chmod by someone who is not the owner).
 */
static int attr_change(const char *path)
{
	struct fs_ctx *ctx = get_ctx();
	uid_t uid = caller()->uid;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	if (p.kind != FS_JOB_UPLOAD)
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	r = -ENOENT;
	{
		const struct fs_upload *u = fs_upload_find(ctx, p.job);

		if (u && u->ext[0])
			r = uid == 0 || uid == u->uid ? 0 : -EPERM;
	}
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

int fs_op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	(void)fi;
	return attr_change(path);
}

int fs_op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)uid;
	(void)gid;
	(void)fi;
	return attr_change(path);
}

/*
 * Nothing moves: a job's name is fixed (resubmit under the new one), and the rest of the
 * tree is the daemon's. EPERM, also for a stranger's rename in the sticky jobs/ (the
 * kernel says EPERM there first).
 */
int fs_op_rename(const char *from, const char *to, unsigned int flags)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_path p;
	struct stat st;
	int r = fs_path_parse(from, &p);

	(void)to;
	(void)flags;
	if (r < 0)
		return -ENOENT;
	pthread_mutex_lock(&ctx->lock);
	r = fs_stat(ctx, &p, &st, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	return r < 0 ? r : -EPERM;
}

int fs_op_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	memset(st, 0, sizeof(*st));
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namemax = 255;
	return 0;
}
