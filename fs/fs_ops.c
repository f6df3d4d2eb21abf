/* SPDX-License-Identifier: MIT */
/*
 * FUSE operations: snapshot reads, specs buffered per open file and submitted when the
 * last descriptor is released, ctl verbs run per line.
 *
 * Locking: ctx->lock guards the cluster, the upload list and the render cache; a
 * handle's own mutex guards its buffer (dup'd descriptors may write and close from
 * several threads). Order: handle, then ctx->lock. Spec parsing runs outside ctx->lock.
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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <fuse.h>

#include "fs.h"

/* What a ctl file buffers at most: a partial line and one write. */
#define CTL_BUFFER_MAX_BYTES (64 * 1024)

/* How long a lookup waits for a closing upload's release before going on without it. */
#define UPLOAD_WAIT_MSEC 2000

enum handle_kind {
	H_SNAPSHOT,	/* read-only: bytes rendered at open() */
	H_UPLOAD,	/* jobs/<name>.<ext> being written */
	H_SPEC,		/* jobs/<name>/spec being written */
	H_CTL,		/* a ctl file: one verb per line */
	H_HEALTH,	/* nodes/<server>/health: an agent's report */
	H_QUOTA,	/* queues/<queue>/quota: root writes a number */
};

struct fs_handle {
	enum handle_kind kind;
	struct fs_path path;
	struct fs_view snap;	/* H_SNAPSHOT: bytes as of open() (a blob reference) */
	char *buf;		/* H_UPLOAD, H_SPEC, H_CTL: what was written */
	size_t len, cap;
	bool dirty;	/* written since the last validation */
	bool failed;	/* refused at write(): oversize or binary; the rejection is recorded */
	bool checked;	/* H_UPLOAD, H_SPEC: a flush validated the buffer */
	int last_err;	/* outcome of the last validation, repeated on further flushes */
	char *last_why;	/* the last validation's refusal (NULL when it accepted) */
	struct conf_job_spec *accepted; /* what the last validation accepted, submitted at
				 * release under @hold */
	struct sched_hold *hold;  /* the accepted job's record (sched_job_check_hold) */
	uid_t uid;
	gid_t gid;
	bool may_operate;	  /* root or in operator_group as of open(): fs_may_operate() */
	struct fs_proc_id opener; /* H_UPLOAD, H_SPEC, H_QUOTA: the process that opened it */
	bool staged;		  /* H_UPLOAD, H_SPEC: what the last validation accepted is
				   * staged (fs_stage_put) */
	gid_t *groups;		  /* H_UPLOAD, H_SPEC: the writer's supplementary groups */
	size_t group_count;
	uint64_t job_serial;	  /* H_CTL on a job: the job it was opened on */
	struct fs_upload *upload; /* H_UPLOAD, H_SPEC: entry in ctx->uploads */
	pthread_mutex_t mu;
	struct fs_handle *prev, *next; /* ctx->handles, so none outlives the daemon */
};

static struct fs_ctx *get_ctx(void)
{
	return fuse_get_context()->private_data;
}

static struct fs_handle *get_handle(struct fuse_file_info *fi)
{
	return (struct fs_handle *)(uintptr_t)fi->fh;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Generated content changes behind the kernel's back: cache nothing. */
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0;
	cfg->direct_io = 1;
	cfg->use_ino = 0;
	(void)conn;
	return get_ctx();
}

static bool is_job_subtree(enum fs_node_kind k)
{
	return k >= FS_JOB_DIR && k <= FS_JOB_CTL;
}

/*
 * Wait (ctx->lock held) until no upload that @p depends on is between its last close and
 * its release: one for job @p->job under jobs/<job>/ and for jobs/<job>.<ext> (whatever
 * its ext: a job has one spec writer), any for the jobs/ listing.
 */
static void wait_for_closing_uploads(struct fs_ctx *ctx, const struct fs_path *p)
{
	struct timespec deadline;

	if (!ctx->multithreaded ||
	    (!is_job_subtree(p->kind) && p->kind != FS_JOBS_DIR && p->kind != FS_JOB_UPLOAD) ||
	    fuse_get_context()->pid == ctx->notifier_tid)
		return;
	fs_deadline_in(&deadline, UPLOAD_WAIT_MSEC);
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
				  now - u->closing_usec < (uint64_t)UPLOAD_WAIT_MSEC * 1000u;
		if (!closing)
			return;
		if (pthread_cond_timedwait(&ctx->uploads_cv, &ctx->lock, &deadline) == ETIMEDOUT) {
			/* a release that came late may leave its pass owed (ascend_sched.h) */
			fs_pass_run_owed(ctx);
			return;
		}
	}
}

/* Files root writes, and members of cluster.operator_group when one is configured. */
static bool is_operator_file(enum fs_node_kind k)
{
	return k == FS_CLUSTER_CTL || k == FS_NODE_CTL || k == FS_NODE_HEALTH ||
	       k == FS_QUEUE_QUOTA;
}

/*
 * With operator_group configured, an operator file is 0664 root:<group>, so that the
 * kernel's default_permissions check lets members write it. The group is resolved here,
 * outside ctx->lock (NSS may block); one that does not resolve leaves 0644 root:root.
 */
static void operator_attr(struct fs_ctx *ctx, struct stat *st)
{
	gid_t g;

	if (fs_operator_gid(ctx->cluster->conf, &g) < 0)
		return;
	st->st_mode = S_IFREG | 0664;
	st->st_gid = g;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = fi ? get_handle(fi) : NULL;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return r == -ENAMETOOLONG ? r : -ENOENT;
	if (ctx->test_slow_root_getattr_ms && strcmp(path, "/") == 0)
		usleep(ctx->test_slow_root_getattr_ms * 1000u); /* tests only: see fs.h */
	/* the helper announcing a job directory: not there yet, or still there (fs_notify.c) */
	if (!h && p.kind == FS_JOB_DIR && fuse_get_context()->pid == ctx->notifier_tid) {
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
	if (h)
		pthread_mutex_lock(&h->mu);
	pthread_mutex_lock(&ctx->lock);
	if (!h && p.kind != FS_JOBS_DIR)
		wait_for_closing_uploads(ctx, &p);
	r = fs_stat(ctx, &p, st, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0 && is_operator_file(p.kind))
		operator_attr(ctx, st);
	/* the notifier truncates read-only files: show them writable to it alone */
	if (r == 0 && fuse_get_context()->pid == ctx->notifier_tid && S_ISREG(st->st_mode)) {
		st->st_uid = geteuid();
		st->st_mode |= 0200;
	}
	/*
	 * Linux sends fstat() as a plain GETATTR without the file handle, so an open
	 * snapshot cannot report its own size there; only calls that carry the handle
	 * (ftruncate and the like) land here with @fi. Reads use direct_io and return the
	 * whole snapshot whatever st_size says.
	 */
	if (r == 0 && h && h->kind == H_SNAPSHOT)
		st->st_size = (off_t)h->snap.len;
	if (r == 0 && h && h->kind == H_UPLOAD)
		st->st_size = (off_t)h->len;
	if (h)
		pthread_mutex_unlock(&h->mu);
	return r;
}

struct fill_ctx {
	void *buf;
	fuse_fill_dir_t filler;
};

static int fill_one(void *data, const char *name)
{
	struct fill_ctx *f = data;

	return f->filler(f->buf, name, NULL, 0, 0) ? -ENOMEM : 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct fs_ctx *ctx = get_ctx();
	struct fill_ctx f = { .buf = buf, .filler = filler };
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	(void)off;
	(void)fi;
	(void)flags;
	if (r < 0)
		return -ENOENT;
	filler(buf, ".", NULL, 0, 0);
	filler(buf, "..", NULL, 0, 0);
	pthread_mutex_lock(&ctx->lock);
	wait_for_closing_uploads(ctx, &p);
	r = fs_list(ctx, &p, fill_one, &f);
	pthread_mutex_unlock(&ctx->lock);
	return r == -ENOMEM ? 0 : r; /* a full reply buffer is not an error */
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
 * at flush alike and counts as the opener, as it always did.
 */
static bool flush_is_openers(const struct fs_handle *h)
{
	struct fs_proc_id me = { 0 };

	(void)fs_proc_id_of(fuse_get_context()->pid, &me);
	return fs_proc_id_equal(&me, &h->opener);
}

/* A new handle, listed in ctx->handles. Caller holds ctx->lock. */
static struct fs_handle *handle_new_locked(struct fs_ctx *ctx, enum handle_kind kind,
					   const struct fs_path *p)
{
	struct fs_handle *h = calloc(1, sizeof(*h));
	struct fuse_context *fc = fuse_get_context();

	if (!h)
		return NULL;
	pthread_mutex_init(&h->mu, NULL);
	h->kind = kind;
	h->path = *p;
	h->uid = fc->uid;
	h->gid = fc->gid;
	/* the uploads that stage at close (a read of /proc: cheap, and not of the mount) */
	if (kind == H_UPLOAD || kind == H_SPEC || kind == H_QUOTA)
		(void)fs_proc_id_of(fc->pid, &h->opener);
	h->next = ctx->handles;
	if (h->next)
		h->next->prev = h;
	ctx->handles = h;
	return h;
}

/*
 * The caller's supplementary groups, for queue `groups` checks. Read while its request is
 * in flight: fuse_getgroups() reads /proc of the calling thread, and release() carries no
 * credentials at all. On failure the caller counts with its primary group only (and is
 * refused rather than wrongly admitted by a restricted queue). Call without ctx->lock.
 */
static void caller_groups(struct fs_ctx *ctx, gid_t **ret, size_t *ret_count)
{
	gid_t *list = NULL;
	int n = fuse_getgroups(0, NULL);

	*ret = NULL;
	*ret_count = 0;
	for (int tries = 0; n > 0 && tries < 3; tries++) {
		gid_t *grown = realloc(list, (size_t)n * sizeof(*list));
		int got;

		if (!grown) {
			n = -ENOMEM;
			break;
		}
		list = grown;
		got = fuse_getgroups(n, list);
		if (got >= 0 && got <= n) {
			*ret = list;
			*ret_count = (size_t)got;
			return;
		}
		n = got; /* an error, or it joined groups since the count */
	}
	if (n < 0)
		fs_log(ctx, 3, "supplementary groups of pid %d unknown: %s",
		       (int)fuse_get_context()->pid, strerror(-n));
	free(list);
}

/*
 * Is the caller of the current request root or a member of cluster.operator_group (its
 * primary group or a supplementary one)? Call without ctx->lock.
 */
static bool caller_may_operate(struct fs_ctx *ctx)
{
	struct fuse_context *fc = fuse_get_context();
	gid_t *groups;
	size_t group_count;
	bool ok;

	if (fc->uid == 0)
		return true;
	if (!ctx->cluster->conf->operator_group)
		return false;
	caller_groups(ctx, &groups, &group_count);
	ok = fs_may_operate(ctx->cluster->conf, fc->uid, fc->gid, groups, group_count);
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
	uid_t uid = fuse_get_context()->uid;

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
	conf_job_spec_free(h->accepted);
	free(h);
}

/* Unlist and free @h. Caller holds ctx->lock. */
static void handle_free_locked(struct fs_ctx *ctx, struct fs_handle *h)
{
	if (!h)
		return;
	if (h->prev)
		h->prev->next = h->next;
	else
		ctx->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	handle_destroy(h);
}

void fs_handles_free_all(struct fs_ctx *ctx)
{
	while (ctx->handles) {
		struct fs_handle *h = ctx->handles;

		ctx->handles = h->next;
		h->upload = NULL; /* freed with ctx->uploads */
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

/*
 * Register @h as the one writer of job @h->path.job's spec (ctx->lock held; dropped and
 * taken again while NSS says whether a user at cluster.max_uploads_per_user is an
 * operator, who has no limit, as root has none). @groups (@group_count) are the writer's.
 * Returns 0, -EBUSY (another open file writes this spec), -EMFILE (the user's limit:
 * a "refused" event says so) or -ENOMEM.
 */
static int upload_register(struct fs_ctx *ctx, struct fs_handle *h, const char *ext,
			   const gid_t *groups, size_t group_count)
{
	const struct conf_cluster *conf = ctx->cluster->conf;
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

static void upload_unregister(struct fs_ctx *ctx, struct fs_handle *h)
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

	if (!ctx->multithreaded ||
	    (p->kind != FS_JOB_ENV && p->kind != FS_JOB_HOST_ENV && p->kind != FS_JOB_RANK_ENV) ||
	    fuse_get_context()->pid == ctx->notifier_tid)
		return;
	fs_deadline_in(&deadline, RESUME_WAIT_MSEC);
	while ((j = sched_cluster_find_job(ctx->cluster, p->job)) && j->resume_scan_pending &&
	       !ctx->stopping)
		if (pthread_cond_timedwait(&ctx->resume_cv, &ctx->lock, &deadline) == ETIMEDOUT)
			return;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi);

/*
 * May user @uid hold one more open file: a snapshot of @b, or a ctl file (@b NULL)? What
 * the user's open snapshots and ctl files hold, counted over the open files (ctx->lock
 * held; a handle's blob changes under it) with each ctl file at the most it may buffer
 * (its buffer is the handle's, under its own mutex): fs_snapshot_tally_check().
 */
static int open_file_admit(struct fs_ctx *ctx, uid_t uid, struct fs_blob *b)
{
	struct fs_snapshot_tally t;

	if (uid == 0)
		return 0;
	fs_snapshot_tally_begin(ctx, &t);
	for (struct fs_handle *h = ctx->handles; h; h = h->next) {
		if (h->uid != uid)
			continue;
		if (h->kind == H_SNAPSHOT)
			fs_snapshot_tally_add(&t, h->snap.blob);
		else if (h->kind == H_CTL)
			fs_snapshot_tally_add_buffer(&t, CTL_BUFFER_MAX_BYTES);
	}
	if (b)
		fs_snapshot_tally_add(&t, b);
	else
		fs_snapshot_tally_add_buffer(&t, CTL_BUFFER_MAX_BYTES);
	return fs_snapshot_tally_check(&t, uid);
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	int acc = fi->flags & O_ACCMODE;
	struct fs_handle *h = NULL;
	gid_t *groups = NULL;
	size_t group_count = 0;
	bool may_operate = false;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	if (p.kind == FS_JOB_SPEC && acc == O_WRONLY)
		caller_groups(ctx, &groups, &group_count);
	/* checked here too: the modes are enforced by the kernel only with default_permissions */
	if (is_operator_file(p.kind) && acc != O_RDONLY)
		may_operate = caller_may_operate(ctx);
	pthread_mutex_lock(&ctx->lock);
	wait_for_closing_uploads(ctx, &p);
	if (acc == O_RDONLY) {
		struct fs_view v;

		wait_for_resume_scan(ctx, &p);
		r = fs_snapshot(ctx, &p, fs_now_usec(), &v);
		if (r == 0 && (r = open_file_admit(ctx, fuse_get_context()->uid, v.blob)) < 0)
			fs_blob_put(v.blob);
		if (r == 0 && !(h = handle_new_locked(ctx, H_SNAPSHOT, &p))) {
			fs_blob_put(v.blob);
			r = -ENOMEM;
		}
		if (r == 0)
			h->snap = v;
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
			r = open_file_admit(ctx, fuse_get_context()->uid, NULL);
		if (r == 0 && !(h = handle_new_locked(ctx, H_CTL, &p)))
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
		if (r == 0 && !(h = handle_new_locked(ctx, H_HEALTH, &p)))
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
		if (r == 0 && !(h = handle_new_locked(ctx, H_QUOTA, &p)))
			r = -ENOMEM;
		if (r == 0)
			h->may_operate = true;
		goto out;
	}
	if (p.kind == FS_JOB_SPEC && acc == O_WRONLY) {
		struct sched_job *j = sched_cluster_find_job(ctx->cluster, p.job);
		uid_t uid = fuse_get_context()->uid;

		if (!j)
			r = -ENOENT;
		else if (uid != 0 && uid != j->uid)
			r = -EACCES;
		else if (j->state != SCHED_JOB_DRAFT && !sched_job_state_is_terminal(j->state))
			r = -EBUSY;
		else if (!(h = handle_new_locked(ctx, H_SPEC, &p)))
			r = -ENOMEM;
		else
			r = upload_register(ctx, h, "", groups, group_count);
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
	if (r == 1)
		return fs_create(path, 0644, fi);
	if (r < 0)
		return r;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

/*
 * A refused request that names no job the user can look at (a bad name in jobs/, a
 * cluster/ctl or nodes/<server>/ctl line): logged at @level and, so the user can read why
 * without the daemon's log, a "refused" event in cluster/events. @reason holds user bytes
 * only escaped (fs_text_escape). Takes ctx->lock.
 */
static void refusal_note(struct fs_ctx *ctx, int level, const char *server, const char *reason)
{
	fs_log(ctx, level, "%s", reason);
	pthread_mutex_lock(&ctx->lock);
	sched_cluster_note_refusal(ctx->cluster, server, reason, fs_now_usec());
	fs_changed(ctx);
	pthread_mutex_unlock(&ctx->lock);
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
	refusal_note(ctx, 2, NULL, why);
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h;
	gid_t *groups = NULL;
	size_t group_count = 0;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	(void)mode;
	if (r == -EINVAL || (r == 0 && p.kind == FS_JOB_DIR)) {
		name_refusal(ctx, "create", path, fuse_get_context()->uid, -EINVAL);
		return -EINVAL;
	}
	if (r == -ENAMETOOLONG && strncmp(path, "/jobs/", 6) == 0 && !strchr(path + 6, '/'))
		name_refusal(ctx, "create", path, fuse_get_context()->uid, r);
	if (r < 0)
		return r == -ENAMETOOLONG ? r : -EACCES;
	if (p.kind != FS_JOB_UPLOAD)
		return -EACCES;
	caller_groups(ctx, &groups, &group_count);
	pthread_mutex_lock(&ctx->lock);
	/* a resubmission right after a close finds the old job or a clean slot */
	wait_for_closing_uploads(ctx, &p);
	h = handle_new_locked(ctx, H_UPLOAD, &p);
	r = h ? sched_job_may_submit(ctx->cluster, p.job, h->uid) : -ENOMEM;
	if (r == 0)
		r = upload_register(ctx, h, p.ext, groups, group_count);
	if (r == 0) {
		h->groups = groups;
		h->group_count = group_count;
		groups = NULL;
	}
	if (r < 0 && h && (r == -EEXIST || r == -EPERM)) {
		char why[SCHED_REASON_MAX];

		/* in cluster/events: the job itself is untouched, its events stay its own */
		snprintf(why, sizeof(why), "create %s.%s by uid %u refused: job %s %s", p.job,
			 p.ext, (unsigned)h->uid, p.job,
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

static bool is_event_stream(enum fs_node_kind k)
{
	return k == FS_CLUSTER_EVENTS || k == FS_JOB_EVENTS;
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

		/* under the lock: open_file_admit() reads the blobs of every open file */
		pthread_mutex_lock(&ctx->lock);
		*o = v;
		pthread_mutex_unlock(&ctx->lock);
		fs_blob_put(old);
		return;
	}
	fs_blob_put(v.blob);
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	int r;

	(void)path;
	if (!h || h->kind != H_SNAPSHOT)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	pthread_mutex_lock(&h->mu);
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

static int buffer_put(struct fs_handle *h, const char *data, size_t size, off_t off, size_t max)
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

static int spec_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size,
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
	r = buffer_put(h, data, size, off, CONF_SPEC_MAX_BYTES);
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
	h->dirty = true;
	pthread_mutex_lock(&ctx->lock);
	h->upload->len = h->len;
	h->upload->mtime_usec = fs_now_usec();
	h->upload->closing = false;
	pthread_mutex_unlock(&ctx->lock);
	return (int)size;
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

	pthread_mutex_lock(&ctx->lock);
	q = conf_cluster_find_queue(ctx->cluster->conf, spec->queue);
	pthread_mutex_unlock(&ctx->lock);
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
		      fs_may_operate(ctx->cluster->conf, h->uid, h->gid, h->groups, h->group_count);
	r = check_queue_groups(ctx, h, spec, reason);
	if (r < 0) {
		conf_job_spec_free(spec);
		if (r == -ENOMEM)
			return r;
		snprintf(why, SCHED_REASON_MAX, "%s: %.420s", name, reason);
		return submit ? record_rejection(ctx, h, why, r) : r;
	}
	r = check_checkpoint_dir(ctx, spec, reason);
	if (r < 0) {
		conf_job_spec_free(spec);
		snprintf(why, SCHED_REASON_MAX, "%s: %.420s", name, reason);
		return submit ? record_rejection(ctx, h, why, -EINVAL) : -EINVAL;
	}
	pthread_mutex_lock(&ctx->lock);
	if (submit) {
		/* written since a flush checked it (or never checked): checked again now */
		sched_hold_drop(ctx->cluster, &h->hold);
		r = sched_job_submit_as(ctx->cluster, spec, h->uid, h->gid, is_operator,
					fs_now_usec(), reason, NULL);
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
	snprintf(why, SCHED_REASON_MAX, "%s: %.420s", name, reason);
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
static int spec_flush(struct fs_ctx *ctx, struct fs_handle *h)
{
	char why[SCHED_REASON_MAX];
	bool staging;

	pthread_mutex_lock(&ctx->lock);
	if (!h->upload->closing)
		h->upload->closing_usec = fs_now_usec();
	h->upload->closing = true;
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
	 * (see flush_is_openers); what a close refused replaces an earlier accepted version */
	staging = h->last_err == 0 && ctx->store && flush_is_openers(h);
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
	if (r == 0)
		fs_stage_drop(ctx, "spec", h->path.job);
	fs_changed(ctx);
	if (r < 0)
		fs_log(ctx, 1, "job %s accepted at close but not submitted (%s): %s", h->path.job,
		       strerror(-r), r == -ENOMEM ? "out of memory" : reason);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

/* The state a submission led to, once its pass ran (after durable(): see fs_release). */
static void log_submitted(struct fs_ctx *ctx, const char *name, uid_t uid)
{
	const struct sched_job *j;

	pthread_mutex_lock(&ctx->lock);
	j = sched_cluster_find_job(ctx->cluster, name);
	fs_log(ctx, 2, "job %s submitted by uid %u: %s", name, (unsigned)uid,
	       j ? sched_job_state_name(j->state) : "?");
	pthread_mutex_unlock(&ctx->lock);
}

/* release: the last descriptor is gone; submit, or leave a readable rejection. Returns
 * whether it submitted. */
static bool spec_release(struct fs_ctx *ctx, struct fs_handle *h)
{
	char why[SCHED_REASON_MAX];

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
		return spec_commit(ctx, h) == 0;
	return spec_process(ctx, h, true, why) == 0;
}

/*
 * Run every complete line in the ctl buffer; with @all also a final partial one. The
 * first refused line stops the rest of what was written (they are dropped, not run).
 */
static int ctl_run(struct fs_ctx *ctx, struct fs_handle *h, bool all)
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

static int health_apply(struct fs_ctx *ctx, struct fs_handle *h)
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

	snprintf(line, sizeof(line), "queues/%s/quota by uid %u refused: %s", h->path.item,
		 (unsigned)h->uid, why);
	refusal_note(ctx, 1, NULL, line);
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
static int quota_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size)
{
	char why[SCHED_REASON_MAX];
	unsigned long long npus;
	unsigned total;
	int r;

	if (h->failed)
		return h->last_err;
	r = memchr(data, '\0', size) ? -EINVAL :
					buffer_put(h, data, size, (off_t)h->len, QUOTA_MAX_BYTES);
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
static int quota_apply(struct fs_ctx *ctx, struct fs_handle *h, bool commit)
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
	staging = !commit && ctx->store && flush_is_openers(h);
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

void fs_staged_replay(struct fs_ctx *ctx, const struct fs_staged *s)
{
	struct fs_handle h = { .uid = s->uid, .gid = s->gid };
	char why[SCHED_REASON_MAX];
	int r;

	if (strcmp(s->kind, "quota") == 0) {
		unsigned long long npus;

		pthread_mutex_lock(&ctx->lock);
		r = quota_parse(s->body, s->len, &npus) < 0 || npus > ctx->cluster->npus_total ?
			    -EINVAL :
			    sched_queue_set_quota(ctx->cluster, s->key, (unsigned)npus,
						  fs_now_usec());
		if (r == 0 && fs_config_refresh(ctx) < 0)
			r = -ENOMEM;
		fs_changed(ctx);
		pthread_mutex_unlock(&ctx->lock);
		fs_log(ctx, r < 0 ? 1 : 2, "queues/%s/quota %.*s accepted before the restart: %s",
		       s->key, (int)strcspn(s->body, "\n"), s->body,
		       r < 0 ? strerror(-r) : "applied");
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
		log_submitted(ctx, s->key, h.uid);
	fs_log(ctx, 2, "job %s: spec accepted before the restart, submitted now: %s", s->key,
	       r < 0 ? why : "ok");
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

static int fs_write(const char *path, const char *data, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	int r;

	(void)path;
	if (!h)
		return -EBADF;
	pthread_mutex_lock(&h->mu);
	switch (h->kind) {
	case H_UPLOAD:
	case H_SPEC:
		r = spec_write(ctx, h, data, size, off);
		break;
	case H_HEALTH:
		if (h->failed) {
			r = h->last_err;
			break;
		}
		r = memchr(data, '\0', size) ? -EINVAL :
						buffer_put(h, data, size, (off_t)h->len,
							   CONF_HEALTH_MAX_BYTES);
		if (r == -EINVAL || r == -EFBIG) {
			char why[SCHED_REASON_MAX];

			/* the whole report is refused: nothing of it is applied at close */
			snprintf(why, sizeof(why), "%s/health: %s", h->path.item,
				 r == -EFBIG ? "the report is larger than 64 KiB" :
					       "the report contains a NUL byte; it must be text");
			health_refuse(ctx, h, why, r);
			break;
		}
		/* lines already checked stay fine: only a write that ends one checks again */
		if (r == 0 && (memchr(data, '\n', size) || memchr(data, '\r', size)))
			r = health_check_start(ctx, h);
		if (r == 0) {
			h->dirty = true;
			r = (int)size;
		}
		break;
	case H_CTL:
		if (memchr(data, '\0', size)) {
			r = -EINVAL;
			break;
		}
		/* ctl files are streams: append whatever the offset says */
		r = buffer_put(h, data, size, (off_t)h->len, CTL_BUFFER_MAX_BYTES);
		if (r == 0)
			r = ctl_run(ctx, h, false);
		if (r == 0)
			r = (int)size;
		break;
	case H_QUOTA:
		r = quota_write(ctx, h, data, size);
		break;
	default:
		r = -EBADF;
	}
	pthread_mutex_unlock(&h->mu);
	return durable(ctx, r);
}

static int fs_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	int r = 0;

	(void)path;
	if (!h)
		return 0;
	pthread_mutex_lock(&h->mu);
	if (h->kind == H_UPLOAD || h->kind == H_SPEC)
		r = spec_flush(ctx, h);
	else if (h->kind == H_CTL)
		r = ctl_run(ctx, h, true);
	else if (h->kind == H_HEALTH)
		r = health_apply(ctx, h);
	else if (h->kind == H_QUOTA)
		r = quota_apply(ctx, h, false);
	pthread_mutex_unlock(&h->mu);
	return durable(ctx, r);
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);
	char job[CONF_NAME_MAX + 1];
	bool submitted = false;
	uid_t uid;

	(void)path;
	if (!h)
		return 0;
	snprintf(job, sizeof(job), "%s", h->path.job);
	uid = h->uid;
	pthread_mutex_lock(&h->mu);
	if (h->kind == H_UPLOAD || h->kind == H_SPEC)
		submitted = spec_release(ctx, h); /* nobody sees an error; the files say it */
	else if (h->kind == H_CTL)
		ctl_run(ctx, h, true);
	else if (h->kind == H_HEALTH)
		health_apply(ctx, h);
	else if (h->kind == H_QUOTA)
		quota_apply(ctx, h, true);
	if (h->hold) { /* a release that did not submit (a spec truncated to nothing) */
		pthread_mutex_lock(&ctx->lock);
		sched_hold_drop(ctx->cluster, &h->hold);
		pthread_mutex_unlock(&ctx->lock);
	}
	pthread_mutex_unlock(&h->mu);
	/* nobody sees release's outcome (the close was the answer), but a lookup that waits
	 * for this upload finds its job placed by the pass it owes (ascend_sched.h) */
	durable(ctx, 0);
	upload_unregister(ctx, h);
	pthread_mutex_lock(&ctx->lock);
	handle_free_locked(ctx, h);
	pthread_mutex_unlock(&ctx->lock);
	if (submitted) /* its pass has run (fs_store_sync) */
		log_submitted(ctx, job, uid);
	return 0;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = fi ? get_handle(fi) : NULL;
	struct fs_path p;
	struct stat st;
	int r = fs_path_parse(path, &p);

	if (fuse_get_context()->pid == ctx->notifier_tid)
		return 0; /* our own announcement (fs_notify.c) */
	if (r < 0)
		return -ENOENT;
	if (h && (h->kind == H_UPLOAD || h->kind == H_SPEC)) {
		pthread_mutex_lock(&h->mu);
		if (h->failed)
			r = h->last_err;
		else if (size < 0 || (size_t)size > h->len)
			r = -EINVAL;
		else {
			h->len = (size_t)size;
			h->dirty = true;
		}
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
	    p.kind != FS_NODE_HEALTH && p.kind != FS_QUEUE_QUOTA)
		return -EACCES;
	/* with a handle, its open() checked the writer; truncate(2) by path is checked here */
	return h || caller_may_write(ctx, &p, &st) ? 0 : -EACCES;
}

static int fs_mkdir(const char *path, mode_t mode)
{
	struct fs_ctx *ctx = get_ctx();
	struct fuse_context *fc = fuse_get_context();
	struct sched_job *j = NULL;
	char why[SCHED_REASON_MAX] = "";
	bool is_operator;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	(void)mode;
	if (r == 0 && p.kind == FS_JOB_DIR && fc->pid == ctx->notifier_tid) {
		/* the helper's announcement of a job directory the daemon made */
		pthread_mutex_lock(&ctx->lock);
		r = fs_notify_job_dir(ctx, p.job, 1);
		pthread_mutex_unlock(&ctx->lock);
		return r == 1 ? 0 : -EEXIST;
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

static int fs_rmdir(const char *path)
{
	struct fs_ctx *ctx = get_ctx();
	struct fuse_context *fc = fuse_get_context();
	struct fs_path p;
	bool held;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	if (p.kind != FS_JOB_DIR)
		return -EACCES;
	if (fc->pid == ctx->notifier_tid) {
		/* the helper's announcement of a job directory the daemon dropped */
		pthread_mutex_lock(&ctx->lock);
		r = fs_notify_job_dir(ctx, p.job, 2);
		pthread_mutex_unlock(&ctx->lock);
		return r == 2 ? 0 : -ENOENT;
	}
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

static int fs_unlink(const char *path)
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
static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	uid_t uid = fuse_get_context()->uid;
	bool now = tv[0].tv_nsec == UTIME_NOW && tv[1].tv_nsec == UTIME_NOW;
	struct fs_path p;
	struct stat st;
	int r;

	(void)fi;
	if (fuse_get_context()->pid == ctx->notifier_tid)
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
	uid_t uid = fuse_get_context()->uid;
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

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	(void)fi;
	return attr_change(path);
}

static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
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
static int fs_rename(const char *from, const char *to, unsigned int flags)
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

static int fs_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	memset(st, 0, sizeof(*st));
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namemax = 255;
	return 0;
}

static const struct fuse_operations ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.create = fs_create,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.release = fs_release,
	.truncate = fs_truncate,
	.mkdir = fs_mkdir,
	.rmdir = fs_rmdir,
	.unlink = fs_unlink,
	.rename = fs_rename,
	.utimens = fs_utimens,
	.chmod = fs_chmod,
	.chown = fs_chown,
	.statfs = fs_statfs,
};

const struct fuse_operations *fs_operations(void)
{
	return &ops;
}
