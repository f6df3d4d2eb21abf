/* SPDX-License-Identifier: MIT */
/*
 * FUSE operations: snapshot reads, buffered writes committed at close, ctl verbs.
 * Every handler takes ctx->lock around sched calls and renders inside it, so a
 * snapshot is one consistent state. Spec parsing runs outside the lock.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <fuse.h>

#include "fs.h"

enum handle_kind {
	H_SNAPSHOT,	/* read-only: bytes rendered at open() */
	H_UPLOAD,	/* jobs/<name>.<ext> being written */
	H_SPEC,		/* jobs/<name>/spec being written */
	H_CTL,		/* a ctl file: one verb per line */
};

struct fs_handle {
	enum handle_kind kind;
	struct fs_path path;
	struct fs_blob *snap;	/* H_SNAPSHOT: bytes as of open() */
	char *buf;
	size_t len, cap;
	bool dirty;	/* written since the last commit attempt */
	bool committed; /* spec accepted: later writes are refused */
	bool failed;	/* refused at write(): oversize or binary */
	int last_err;	/* outcome of the last commit, repeated on further flushes */
	uid_t uid;
	gid_t gid;
	struct fs_upload *upload; /* H_UPLOAD: entry in ctx->uploads */
	pthread_mutex_t mu;	  /* dup'd fds may write and close from several threads;
				   * taken before ctx->lock, never after */
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

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = fi ? get_handle(fi) : NULL;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return r == -ENAMETOOLONG ? r : -ENOENT;
	if (h)
		pthread_mutex_lock(&h->mu); /* handle before state: the lock order */
	pthread_mutex_lock(&ctx->lock);
	r = fs_stat(ctx, &p, st, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	/*
	 * Linux sends fstat() as a plain GETATTR without the file handle, so an open
	 * snapshot cannot report its own size there; only calls that carry the handle
	 * (ftruncate and the like) land here with @fi. Reads use direct_io and return the
	 * whole snapshot whatever st_size says.
	 */
	if (r == 0 && h && h->kind == H_SNAPSHOT)
		st->st_size = (off_t)h->snap->len;
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
	r = fs_list(ctx, &p, fill_one, &f);
	pthread_mutex_unlock(&ctx->lock);
	return r == -ENOMEM ? 0 : r; /* a full reply buffer is not an error */
}

static struct fs_handle *handle_new(enum handle_kind kind, const struct fs_path *p)
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
	return h;
}

static void handle_free(struct fs_handle *h)
{
	if (!h)
		return;
	pthread_mutex_destroy(&h->mu);
	fs_blob_put(h->snap);
	free(h->buf);
	free(h);
}

static bool is_ctl(enum fs_node_kind k)
{
	return k == FS_CLUSTER_CTL || k == FS_NODE_CTL || k == FS_JOB_CTL;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	int acc = fi->flags & O_ACCMODE;
	struct fs_handle *h = NULL;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	pthread_mutex_lock(&ctx->lock);
	if (acc == O_RDONLY) {
		h = handle_new(H_SNAPSHOT, &p);
		r = h ? fs_snapshot(ctx, &p, fs_now_usec(), &h->snap) : -ENOMEM;
		goto out;
	}
	if (is_ctl(p.kind)) {
		struct stat st;

		r = acc == O_WRONLY ? fs_stat(ctx, &p, &st, fs_now_usec()) : -EACCES;
		if (r == 0 && !(h = handle_new(H_CTL, &p)))
			r = -ENOMEM;
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
		else if (!(h = handle_new(H_SPEC, &p)))
			r = -ENOMEM;
		goto out;
	}
	if (p.kind == FS_JOB_UPLOAD) {
		r = -EBUSY; /* another open file is writing this spec */
		goto out;
	}
	r = -EACCES;
out:
	pthread_mutex_unlock(&ctx->lock);
	if (r < 0) {
		handle_free(h);
		return r;
	}
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_upload *u;
	struct fs_handle *h;
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	(void)mode;
	if (r == -EINVAL || (r == 0 && p.kind == FS_JOB_DIR)) {
		fs_log(ctx, 2, "create %s refused: job specs are named <name>.yaml, .yml or .json "
			       "with <name> of lowercase letters, digits, '.', '_' and '-'", path);
		return -EINVAL;
	}
	if (r < 0)
		return r == -ENAMETOOLONG ? r : -EACCES;
	if (p.kind != FS_JOB_UPLOAD)
		return -EACCES;
	h = handle_new(H_UPLOAD, &p);
	u = calloc(1, sizeof(*u));
	if (!h || !u) {
		handle_free(h);
		free(u);
		return -ENOMEM;
	}
	pthread_mutex_lock(&ctx->lock);
	for (struct fs_upload *o = ctx->uploads; o; o = o->next)
		if (strcmp(o->name, p.job) == 0)
			r = -EBUSY;
	if (r == 0)
		r = sched_job_may_submit(ctx->cluster, p.job, h->uid);
	if (r == 0) {
		snprintf(u->name, sizeof(u->name), "%s", p.job);
		snprintf(u->ext, sizeof(u->ext), "%s", p.ext);
		u->uid = h->uid;
		u->gid = h->gid;
		u->mtime_usec = fs_now_usec();
		u->next = ctx->uploads;
		ctx->uploads = u;
		h->upload = u;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (r < 0) {
		if (r == -EEXIST)
			fs_log(ctx, 2, "create %s refused: job %s is active; cancel or remove it "
				       "first", path, p.job);
		if (r == -EPERM)
			fs_log(ctx, 2, "create %s by uid %u refused: job %s belongs to another "
				       "user", path, (unsigned)h->uid, p.job);
		handle_free(h);
		free(u);
		return r;
	}
	fi->direct_io = 1;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct fs_handle *h = get_handle(fi);

	(void)path;
	if (!h || h->kind != H_SNAPSHOT)
		return -EBADF;
	if (off < 0 || (size_t)off >= h->snap->len)
		return 0;
	if (size > h->snap->len - (size_t)off)
		size = h->snap->len - (size_t)off;
	memcpy(buf, h->snap->data + off, size);
	return (int)size;
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
	r = sched_job_reject(ctx->cluster, h->path.job, h->uid, h->gid, why, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	fs_log(ctx, 2, "job %s rejected: %s", h->path.job, why);
	h->last_err = r == -EEXIST || r == -EPERM ? r : err;
	return h->last_err;
}

static int spec_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size,
		      off_t off)
{
	char name[CONF_NAME_MAX + 16], why[SCHED_REASON_MAX];
	int r;

	if (h->failed)
		return h->last_err;
	if (h->committed) {
		fs_log(ctx, 2, "job %s: write after the spec was submitted refused", h->path.job);
		return -EBUSY;
	}
	spec_file_name(h, name, sizeof(name));
	if (memchr(data, '\0', size)) {
		snprintf(why, sizeof(why),
			 "%s: the spec contains a NUL byte at offset %lld; a job spec is UTF-8 "
			 "text (YAML or JSON)",
			 name, (long long)off + (long long)((const char *)memchr(data, '\0', size) - data));
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
	if (h->upload) {
		pthread_mutex_lock(&ctx->lock);
		h->upload->len = h->len;
		h->upload->mtime_usec = fs_now_usec();
		pthread_mutex_unlock(&ctx->lock);
	}
	return (int)size;
}

/*
 * Parse and submit the buffered spec. Idempotent: without new writes it repeats the last
 * outcome, so every close of a duplicated fd sees the same answer.
 */
static int spec_commit(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct conf_job_spec *spec = NULL;
	struct conf_error err;
	char name[CONF_NAME_MAX + 16], why[SCHED_REASON_MAX], msg[sizeof(err.msg) + 300];
	int r;

	if (h->failed || !h->dirty)
		return h->last_err;
	if (h->len == 0)
		return 0; /* bash flushes its duplicate before the first write */
	h->dirty = false;
	spec_file_name(h, name, sizeof(name));
	r = conf_job_spec_parse(h->buf, h->len, name, h->path.job, &spec, &err);
	if (r < 0) {
		if (r == -ENOMEM)
			return h->last_err = r;
		conf_error_format(&err, msg, sizeof(msg));
		return record_rejection(ctx, h, msg, r == -EFBIG ? -EFBIG : -EINVAL);
	}
	pthread_mutex_lock(&ctx->lock);
	r = sched_job_submit(ctx->cluster, spec, h->uid, h->gid, fs_now_usec(), why, NULL);
	if (r == 0) {
		struct sched_job *j = sched_cluster_find_job(ctx->cluster, h->path.job);

		fs_log(ctx, 2, "job %s submitted by uid %u: %s", h->path.job, (unsigned)h->uid,
		       j ? sched_job_state_name(j->state) : "?");
	}
	pthread_mutex_unlock(&ctx->lock);
	if (r == -ENOMEM)
		return h->last_err = r;
	if (r < 0) {
		if (r == -EEXIST || r == -EPERM) {
			fs_log(ctx, 2, "job %s not submitted: %s", h->path.job, why);
			return h->last_err = r;
		}
		snprintf(msg, sizeof(msg), "%s: %s", name, why);
		return record_rejection(ctx, h, msg, -EINVAL);
	}
	h->committed = true;
	h->last_err = 0;
	return 0;
}

/* Run every complete line in the ctl buffer; with @all also a final partial one. */
static int ctl_run(struct fs_ctx *ctx, struct fs_handle *h, bool all)
{
	char why[SCHED_REASON_MAX];
	size_t start = 0;
	int ret = 0;

	while (start < h->len) {
		char *nl = memchr(h->buf + start, '\n', h->len - start);
		size_t end = nl ? (size_t)(nl - h->buf) : h->len;
		int r;

		if (!nl && !all)
			break;
		h->buf[end] = '\0';
		pthread_mutex_lock(&ctx->lock);
		r = fs_ctl(ctx, &h->path, h->buf + start, h->uid, fs_now_usec(), why);
		pthread_mutex_unlock(&ctx->lock);
		if (r < 0) {
			fs_log(ctx, 1, "ctl \"%s\" by uid %u refused: %s", h->buf + start,
			       (unsigned)h->uid, why[0] ? why : strerror(-r));
			if (!ret)
				ret = r;
		} else if (h->buf[start]) {
			fs_log(ctx, 2, "ctl \"%s\" by uid %u done", h->buf + start,
			       (unsigned)h->uid);
		}
		start = end + 1;
	}
	if (start >= h->len) {
		h->len = 0;
	} else {
		memmove(h->buf, h->buf + start, h->len - start);
		h->len -= start;
	}
	return ret;
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
	case H_CTL:
		if (memchr(data, '\0', size)) {
			r = -EINVAL;
			break;
		}
		/* ctl files are streams: append whatever the offset says */
		r = buffer_put(h, data, size, (off_t)h->len, 64 * 1024);
		if (r == 0)
			r = ctl_run(ctx, h, false);
		if (r == 0)
			r = (int)size;
		break;
	default:
		r = -EBADF;
	}
	pthread_mutex_unlock(&h->mu);
	return r;
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
		r = spec_commit(ctx, h);
	else if (h->kind == H_CTL)
		r = ctl_run(ctx, h, true);
	pthread_mutex_unlock(&h->mu);
	return r;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = get_handle(fi);

	(void)path;
	if (!h)
		return 0;
	pthread_mutex_lock(&h->mu);
	if (h->kind == H_UPLOAD && h->len == 0 && !h->committed && !h->failed) {
		char why[SCHED_REASON_MAX];

		/* cp /dev/null, touch: leave a readable outcome, not nothing */
		snprintf(why, sizeof(why),
			 "%s.%s: the spec is empty; write a job spec with at least `npus`",
			 h->path.job, h->path.ext);
		record_rejection(ctx, h, why, -EINVAL);
	} else if (h->kind == H_UPLOAD || h->kind == H_SPEC) {
		spec_commit(ctx, h); /* nobody sees this error; the job's files say it */
	}
	else if (h->kind == H_CTL)
		ctl_run(ctx, h, true);
	pthread_mutex_unlock(&h->mu);
	if (h->upload) {
		pthread_mutex_lock(&ctx->lock);
		for (struct fs_upload **pp = &ctx->uploads; *pp; pp = &(*pp)->next)
			if (*pp == h->upload) {
				*pp = h->upload->next;
				break;
			}
		pthread_mutex_unlock(&ctx->lock);
		free(h->upload);
	}
	handle_free(h);
	return 0;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_handle *h = fi ? get_handle(fi) : NULL;
	struct fs_path p;
	struct stat st;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	if (h && (h->kind == H_UPLOAD || h->kind == H_SPEC)) {
		pthread_mutex_lock(&h->mu);
		if (h->committed || h->failed)
			r = h->committed ? -EBUSY : h->last_err;
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
	if (is_ctl(p.kind) || p.kind == FS_JOB_SPEC || p.kind == FS_JOB_UPLOAD)
		return 0;
	return -EACCES;
}

static int fs_mkdir(const char *path, mode_t mode)
{
	struct fs_ctx *ctx = get_ctx();
	struct fuse_context *fc = fuse_get_context();
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	(void)mode;
	if (r == -EINVAL)
		return -EINVAL;
	if (r < 0 || p.kind != FS_JOB_DIR)
		return r == 0 ? -EACCES : -EACCES;
	pthread_mutex_lock(&ctx->lock);
	r = sched_job_create_draft(ctx->cluster, p.job, fc->uid, fc->gid, fs_now_usec(), NULL);
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0)
		fs_log(ctx, 2, "job %s: draft created by uid %u", p.job, (unsigned)fc->uid);
	return r;
}

static int fs_rmdir(const char *path)
{
	struct fs_ctx *ctx = get_ctx();
	struct fuse_context *fc = fuse_get_context();
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	if (p.kind != FS_JOB_DIR)
		return -EACCES;
	pthread_mutex_lock(&ctx->lock);
	r = sched_job_remove(ctx->cluster, p.job, fc->uid, fs_now_usec());
	pthread_mutex_unlock(&ctx->lock);
	if (r == 0)
		fs_log(ctx, 2, "job %s removed by uid %u", p.job, (unsigned)fc->uid);
	return r;
}

static int fs_unlink(const char *path)
{
	struct fs_path p;
	int r = fs_path_parse(path, &p);

	if (r < 0)
		return -ENOENT;
	return p.kind == FS_JOB_UPLOAD ? -EBUSY : -EPERM;
}

/* cp -p, touch: accepted on writable files, changes nothing we keep. */
static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)tv;
	(void)fi;
	(void)path;
	return 0;
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_handle *h = fi ? get_handle(fi) : NULL;

	(void)path;
	(void)mode;
	return h && h->kind == H_UPLOAD ? 0 : -EPERM;
}

static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct fs_handle *h = fi ? get_handle(fi) : NULL;

	(void)path;
	(void)uid;
	(void)gid;
	return h && h->kind == H_UPLOAD ? 0 : -EPERM;
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
	.utimens = fs_utimens,
	.chmod = fs_chmod,
	.chown = fs_chown,
	.statfs = fs_statfs,
};

const struct fuse_operations *fs_operations(void)
{
	return &ops;
}
