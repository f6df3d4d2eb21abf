/* SPDX-License-Identifier: MIT */
/*
 * libfuse's low-level protocol: inode numbers are fs_inode.c's; each entry point names
 * the request for the handlers (fs_req_begin()), turns inode numbers into absolute
 * paths, calls the path handler (fs_op_*(), fs_ops.c) and answers, with how long the
 * kernel may keep what it is told.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include <fuse_lowlevel.h>

#include "fs_internal.h"

static struct fs_ctx *get_ctx(void)
{
	return fs_req_ctx();
}

/*
 * What the kernel may keep (issue 16: every name and attribute asked again made a `cat`
 * of a rank table eight round trips and a submission twenty). A request that changes
 * state answers only once the kernel was told of what it made stale (fs_store_sync()),
 * so a stat() after it sees the change (a RELEASE, whose answer nobody waits for, leaves
 * that to the notifier's next round):
 * - names, for an hour: a name whose file went is still found, but its attributes were
 *   told stale when it went, so the next request on it asks the daemon, which answers
 *   ESTALE, and the kernel looks the path up again and finds it gone (or new). A job directory watchers were not told of yet is not kept: the
 *   helper's mkdir must find it absent (fs_notify_job_dir_settled()).
 * - attributes of the files whose bytes change only with a job's generation (the kernel
 *   cache's kinds, fs_kcache.c), for an hour: told stale when the job changes
 *   (fs_inode_sweep(): by the request that changed it, or the notifier) and when an open takes new bytes (fs_kcache_open(): a read past the
 *   size the kernel knew then asks it again);
 * - that a spec file jobs/<name>.<ext> is not there, for a second: such a name appears
 *   only by a CREATE through the kernel, which replaces what it keeps, and `cp`, which
 *   asks before it creates, then creates without a LOOKUP under the kernel's lock of
 *   jobs/, which every create in jobs/ waits for;
 * - the attributes of a spec file just created, for a second (ll_create()): only its
 *   writer changes them, through the kernel, and its close tells them stale (ll_flush());
 *   with default_permissions its open asked a GETATTR for them, one of a submission's
 *   ten requests;
 * - attributes of directories, for a second (their times follow the events: a listing
 *   is read afresh at each opendir anyway); a job's are told stale with its files, not
 *   jobs/ (told at every change, each path through it cost a GETATTR: 3.6 of the 13
 *   requests of a submission in a burst);
 * - attributes of every other file, never: they change with every event; nor a size
 *   that is not the file's own (an open snapshot's, fs_op_getattr()), which a stat() once
 *   that file is released must not see; nor what the notify helper is shown of a file
 *   (writable); nor a file's attributes in the answer to a lookup (from its first
 *   GETATTR on).
 */
#define NAME_TIMEOUT_SEC 3600.0
#define KCACHE_ATTR_TIMEOUT_SEC 3600.0
#define DIR_ATTR_TIMEOUT_SEC 1.0
#define ABSENT_SPEC_TIMEOUT_SEC 1.0
#define UPLOAD_ATTR_TIMEOUT_SEC 1.0

/* How long the kernel may keep the attributes of @path (@st: what fs_op_getattr() gave). */
static double attr_timeout(const char *path, const struct stat *st)
{
	struct fs_path p;
	bool helper = fs_req_from_helper(get_ctx(), fs_req_caller());
	int r = fs_path_parse(path, &p);

	if (fs_req_size_not_own())
		return 0.0;
	/* the notify helper is shown jobs/ and the like as anyone is (each of its GETATTRs
	 * of jobs/ made the next path through it ask again), not a job's directory whose
	 * rmdir it is to make (fs_op_getattr() shows it one of its own) */
	if (S_ISDIR(st->st_mode))
		return helper && r == 0 && p.kind == FS_JOB_DIR ? 0.0 : DIR_ATTR_TIMEOUT_SEC;
	/* nor what the notify helper is shown of a file (writable, the daemon's user's) */
	if (helper)
		return 0.0;
	return r == 0 && fs_kcache_kind(p.kind) ? KCACHE_ATTR_TIMEOUT_SEC : 0.0;
}

/* Is @path a spec file being uploaded, jobs/<name>.<ext>? */
static bool is_spec_file(const char *path)
{
	struct fs_path p;

	return fs_path_parse(path, &p) == 0 && p.kind == FS_JOB_UPLOAD;
}

/* How long the kernel may keep the name @path (a directory or a file that exists). */
static double name_timeout(const char *path)
{
	struct fs_ctx *ctx = get_ctx();
	struct fs_path p;
	bool settled;

	if (fs_path_parse(path, &p) < 0 || p.kind != FS_JOB_DIR)
		return NAME_TIMEOUT_SEC;
	pthread_mutex_lock(&ctx->lock);
	settled = fs_notify_job_dir_settled(ctx, p.job);
	pthread_mutex_unlock(&ctx->lock);
	return settled ? NAME_TIMEOUT_SEC : 0.0;
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* file handles for an NFS re-export (README), as libfuse's path API asked */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
}

/*
 * An open directory: its names as of the first READDIR (then served by offset, so a
 * listing read in several calls is one snapshot), NUL-separated.
 */
struct dir_handle {
	pthread_mutex_t mu;
	bool filled;
	int err;
	char *names;
	size_t len, cap;
	size_t count;
};

static int fill_one(void *data, const char *name)
{
	struct dir_handle *d = data;
	size_t n = strlen(name) + 1;

	if (d->len + n > d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 4096;
		char *grown;

		while (cap < d->len + n)
			cap *= 2;
		grown = realloc(d->names, cap);
		if (!grown)
			return -ENOMEM;
		d->names = grown;
		d->cap = cap;
	}
	memcpy(d->names + d->len, name, n);
	d->len += n;
	d->count++;
	return 0;
}

/*
 * ---- the low-level protocol ----
 * Each entry point names the request for the handlers (fs_req_begin()), turns inode numbers
 * into paths (fs_inode.c), calls the path handler above and answers, as libfuse's path
 * layer did: an attribute's st_ino is the inode number, a lookup that finds nothing is
 * ENOENT (kept by the kernel for a spec file only, above), a reply the kernel no longer
 * wants (an interrupted open or lookup) undoes what it gave.
 */

static void begin(fuse_req_t req)
{
	fs_req_begin(req);
}

/*
 * The path of @ino into @buf (FS_PATH_BYTES), or an error reply (then -1). A name an
 * rmdir removed (or one below it) is ESTALE, as libfuse's path layer made it: the kernel
 * looks its path up again, and finds what is there now.
 */
static int ino_path(fuse_req_t req, fuse_ino_t ino, char *buf)
{
	bool stale = false;
	int r = fs_inode_path(&get_ctx()->inodes, ino, buf, FS_PATH_BYTES, &stale);

	if (r == 0 && stale)
		r = -ESTALE;
	if (r < 0)
		fuse_reply_err(req, -r);
	return r < 0 ? -1 : 0;
}

/* The path of @ino for a request on an open file (its handle says what it is; a stale
 * name is fine): "" when unknown. */
static void handle_path(fuse_ino_t ino, char *buf)
{
	if (fs_inode_path(&get_ctx()->inodes, ino, buf, FS_PATH_BYTES, NULL) < 0)
		buf[0] = '\0';
}

/* The path of @name in directory @parent into @buf; "." and ".." (an NFS re-export's
 * lookups) are the directory and its parent. 0 or -errno (ESTALE: @parent is). */
static int child_path(fuse_ino_t parent, const char *name, char *buf)
{
	char dir[FS_PATH_BYTES];
	bool stale = false;
	int r = fs_inode_path(&get_ctx()->inodes, parent, dir, sizeof(dir), &stale);
	size_t len;

	if (r == 0 && stale)
		r = -ESTALE;
	if (r < 0)
		return r;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		char *slash = strrchr(dir, '/');

		if (name[1] == '.' && slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		memcpy(buf, dir, strlen(dir) + 1);
		return 0;
	}
	len = strlen(dir);
	if (len + 1 + strlen(name) + 1 > FS_PATH_BYTES)
		return -ENAMETOOLONG;
	memcpy(buf, dir, len);
	if (len > 1)
		buf[len++] = '/';
	memcpy(buf + len, name, strlen(name) + 1);
	return 0;
}

/* The entry of @name (at @path) in @parent for the kernel: its attributes (getattr), and
 * its inode with one more lookup. 0 or -errno. */
static int entry_of(fuse_ino_t parent, const char *name, const char *path,
		    struct fuse_file_info *fi, struct fuse_entry_param *e)
{
	bool helper = fs_req_from_helper(get_ctx(), fs_req_caller());
	uint64_t ino;
	int r;

	memset(e, 0, sizeof(*e));
	r = fs_op_getattr(path, &e->attr, fi);
	if (r == 0)
		r = fs_inode_lookup(&get_ctx()->inodes, parent, name, &ino);
	if (r < 0)
		return r;
	e->ino = ino;
	e->attr.st_ino = ino;
	/* the helper's directories are not kept: another's path through one asks, and
	 * is seen, and so is every file in it (fs_inode_watchable()); its files are, a
	 * lookup of one costs what its getattr does (a 512-rank topology.json rendered) */
	if (!helper)
		fs_inode_mark_seen(&get_ctx()->inodes, ino);
	e->entry_timeout = helper && S_ISDIR(e->attr.st_mode) ? 0.0 : name_timeout(path);
	/* a file's attributes are kept from its first GETATTR on, not from here: for an
	 * inode new to the kernel, an invalidation sent before this answer reached it found
	 * nothing to mark, and the kernel's attr_version cannot tell this answer is older */
	e->attr_timeout = S_ISDIR(e->attr.st_mode) ? attr_timeout(path, &e->attr) : 0.0;
	return 0;
}

/* Answer with @e; a kernel that no longer wants it (interrupted) forgets its lookup. */
static void reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) == -ENOENT)
		fs_inode_forget(&get_ctx()->inodes, e->ino, 1);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char path[FS_PATH_BYTES];
	struct fuse_entry_param e;
	int r;

	begin(req);
	r = child_path(parent, name, path);
	if (r == 0)
		r = entry_of(parent, name, path, NULL, &e);
	if (r == -ENOENT && is_spec_file(path)) {
		/* kept absent (above): inode 0 is a name that is not there */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = ABSENT_SPEC_TIMEOUT_SEC;
		fuse_reply_entry(req, &e); /* no inode: nothing to forget if it is not taken */
	} else if (r < 0) {
		fuse_reply_err(req, -r);
	} else {
		reply_entry(req, &e);
	}
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	begin(req);
	fs_inode_forget(&get_ctx()->inodes, ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	begin(req);
	for (size_t i = 0; i < count; i++)
		fs_inode_forget(&get_ctx()->inodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* Answer with the attributes of @path (inode @ino), or with @r, the error of what came
 * before. */
static void reply_attr(fuse_req_t req, fuse_ino_t ino, const char *path,
		       struct fuse_file_info *fi, int r)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	if (r == 0)
		r = fs_op_getattr(path, &st, fi);
	st.st_ino = ino;
	/* a name the kernel keeps whose file went: it looks the path up again */
	if (r == -ENOENT && !fi)
		r = -ESTALE;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, attr_timeout(path, &st));
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];

	begin(req);
	if (fi)
		handle_path(ino, path);
	else if (ino_path(req, ino, path) < 0)
		return;
	reply_attr(req, ino, path, fi, 0);
}

/* chmod, chown, truncate, utimes, in libfuse's order, then the attributes. */
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];
	int r = 0;

	begin(req);
	if (fi)
		handle_path(ino, path);
	else if (ino_path(req, ino, path) < 0)
		return;
	if (valid & FUSE_SET_ATTR_MODE)
		r = fs_op_chmod(path, attr->st_mode, fi);
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = fs_op_chown(path, (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
			     (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1, fi);
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE))
		r = fs_op_truncate(path, attr->st_size, fi);
	if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };

		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		r = fs_op_utimens(path, tv, fi);
	}
	reply_attr(req, ino, path, fi, r);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];
	struct dir_handle *d;
	struct stat st;
	int r;

	begin(req);
	if (ino_path(req, ino, path) < 0)
		return;
	/* a kept name of a directory that went: looked up again */
	r = fs_op_getattr(path, &st, NULL);
	if (r < 0) {
		fuse_reply_err(req, r == -ENOENT ? ESTALE : -r);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&d->mu, NULL);
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		pthread_mutex_destroy(&d->mu);
		free(d);
	}
}

/* Entries from offset @off (the index of the next name) that fit in @size bytes. */
static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;
	char path[FS_PATH_BYTES], *buf;
	const char *name;
	struct stat st;
	size_t used = 0;

	begin(req);
	if (ino_path(req, ino, path) < 0)
		return;
	pthread_mutex_lock(&d->mu);
	if (!d->filled || off == 0) {
		d->len = d->count = 0;
		d->err = fs_op_readdir(path, fill_one, d);
		d->filled = true;
	}
	if (d->err < 0 && d->err != -ENOMEM) {
		pthread_mutex_unlock(&d->mu);
		fuse_reply_err(req, -d->err);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		pthread_mutex_unlock(&d->mu);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.st_ino = 0xffffffff; /* unknown (libfuse's FUSE_UNKNOWN_INO); no type either: the caller asks */
	name = d->names;
	for (size_t i = 0; name && i < d->count; i++, name += strlen(name) + 1) {
		size_t n;

		if ((off_t)i < off)
			continue;
		n = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)i + 1);
		if (n > size - used)
			break;
		used += n;
	}
	pthread_mutex_unlock(&d->mu);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;

	(void)ino;
	begin(req);
	pthread_mutex_destroy(&d->mu);
	free(d->names);
	free(d);
	fuse_reply_err(req, 0);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];
	int r;

	begin(req);
	if (ino_path(req, ino, path) < 0)
		return;
	r = fs_op_open(path, fi);
	if (r == -ENOENT)
		r = -ESTALE; /* a kept name whose file went: looked up again */
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	/* a cached open of other bytes than the kernel's: the size it keeps is stale */
	if (!fi->direct_io && !fi->keep_cache)
		fs_inode_inval_attrs(&get_ctx()->inodes, ino);
	if (fuse_reply_open(req, fi) == -ENOENT)
		fs_op_release(path, fi); /* the open was interrupted */
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];
	struct fuse_entry_param e;
	pid_t opener_tid;
	int r;

	begin(req);
	r = child_path(parent, name, path);
	if (r == 0)
		r = fs_op_create(path, mode, fi);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	r = entry_of(parent, name, path, fi, &e);
	if (r == 0 && !S_ISREG(e.attr.st_mode)) {
		fs_inode_forget(&get_ctx()->inodes, e.ino, 1);
		r = -EIO;
	}
	/* a new upload's attributes are its creator's to change: its first open check
	 * needs no GETATTR (its flush tells the kernel they are stale, ll_flush()) */
	if (r == 0)
		e.attr_timeout = UPLOAD_ATTR_TIMEOUT_SEC;
	if (r < 0) {
		fs_op_release(path, fi);
		fuse_reply_err(req, -r);
		return;
	}
	opener_tid = fs_op_create_answering(fi);
	r = fuse_reply_create(req, &e, fi);
	fs_op_create_answered(fi, opener_tid);
	if (r == -ENOENT) {
		fs_op_release(path, fi); /* the open was interrupted */
		fs_inode_forget(&get_ctx()->inodes, e.ino, 1);
	}
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES], *buf;
	int r;

	begin(req);
	handle_path(ino, path);
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r = fs_op_read(path, buf, size, off, fi);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];
	int r;

	begin(req);
	handle_path(ino, path);
	r = fs_op_write(path, data, size, off, fi);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, (size_t)r);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];
	int r;

	begin(req);
	handle_path(ino, path);
	r = fs_op_flush(path, fi);
	/* what the kernel keeps of an upload (ll_create()) is stale once it is closed: a
	 * stat() after the close sees the job's name free or taken, as it is */
	if (is_spec_file(path))
		fs_inode_inval_attrs(&get_ctx()->inodes, ino);
	fuse_reply_err(req, -r);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[FS_PATH_BYTES];
	int r = 0;

	begin(req);
	handle_path(ino, path);
	if (fi->flush)
		r = fs_op_flush(path, fi);
	fs_op_release(path, fi);
	fuse_reply_err(req, -r);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	char path[FS_PATH_BYTES];
	struct fuse_entry_param e;
	int r;

	begin(req);
	r = child_path(parent, name, path);
	if (r == 0)
		r = fs_op_mkdir(path, mode);
	if (r == 0)
		r = entry_of(parent, name, path, NULL, &e);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, &e);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char path[FS_PATH_BYTES];
	int r;

	begin(req);
	r = child_path(parent, name, path);
	if (r == 0)
		r = fs_op_rmdir(path);
	/* the kernel makes the directory dead: a new one of that name is a new inode */
	if (r == 0)
		fs_inode_detach(&get_ctx()->inodes, parent, name);
	fuse_reply_err(req, -r);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char path[FS_PATH_BYTES];
	int r;

	begin(req);
	r = child_path(parent, name, path);
	if (r == 0)
		r = fs_op_unlink(path);
	fuse_reply_err(req, -r);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	char path[FS_PATH_BYTES], to[FS_PATH_BYTES];
	int r;

	begin(req);
	r = child_path(parent, name, path);
	if (r == 0)
		r = child_path(newparent, newname, to);
	if (r == 0)
		r = fs_op_rename(path, to, flags);
	fuse_reply_err(req, -r);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;

	(void)ino;
	begin(req);
	fs_op_statfs("/", &st);
	fuse_reply_statfs(req, &st);
}

static const struct fuse_lowlevel_ops ops = {
	.init = fs_init,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.releasedir = ll_releasedir,
	.open = ll_open,
	.create = ll_create,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.release = ll_release,
	.mkdir = ll_mkdir,
	.rmdir = ll_rmdir,
	.unlink = ll_unlink,
	.rename = ll_rename,
	.statfs = ll_statfs,
};

const struct fuse_lowlevel_ops *fs_operations(void)
{
	return &ops;
}
