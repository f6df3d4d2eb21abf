/* SPDX-License-Identifier: MIT */
/*
 * bench_fuse_floor FILE MOUNTPOINT: the least a FUSE file system can do for an open,
 * read and close, as a floor to measure ascendfs's generated files against in the same
 * run (bench_cat.sh). It serves FILE's bytes, read once at start, as MOUNTPOINT/f and
 * an empty directory MOUNTPOINT/jobs: names and attributes cached for an hour, the bytes
 * in the kernel's page cache (keep_cache), no flush. Every open still takes one OPEN
 * round trip to this process (and a RELEASE the reader does not wait for): the protocol
 * asks it, so no FUSE file system with a per-open answer does less.
 *
 * The same for a submission (bench_burst.sh): any name may be created in jobs/ and
 * written, and is forgotten at once; its bytes are thrown away. A create there still
 * takes a LOOKUP (the name is new) and a CREATE round trip under the kernel's lock of
 * jobs/, a GETATTR of jobs/ too (with default_permissions, as ascendfs mounts, a create
 * makes the directory's attributes stale), then a WRITE and a FLUSH outside the lock.
 * With --no-default-permissions the kernel checks nothing and asks no GETATTR.
 *
 * Runs in the foreground until unmounted.
 */
#include "config.h" /* FUSE_USE_VERSION, as ascendfs has it */

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#define FILE_INO 2
#define JOBS_INO 3
#define FIRST_NEW_INO 16
#define CACHE_SEC 3600.0

static char *bytes;
static size_t size;
static fuse_ino_t next_ino = FIRST_NEW_INO; /* a created file's; atomically taken */

static void attr_of(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID || ino == JOBS_INO) {
		st->st_mode = S_IFDIR | (ino == JOBS_INO ? 01777 : 0755);
		st->st_nlink = 2;
	} else if (ino >= FIRST_NEW_INO) {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)size;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .ino = FILE_INO, .attr_timeout = CACHE_SEC,
				      .entry_timeout = CACHE_SEC };

	if (parent == FUSE_ROOT_ID && strcmp(name, "f") == 0) {
		e.ino = FILE_INO;
	} else if (parent == FUSE_ROOT_ID && strcmp(name, "jobs") == 0) {
		e.ino = JOBS_INO;
	} else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	attr_of(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

/* A new file in jobs/: an inode number never given before, open for writing. */
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param e = { .attr_timeout = CACHE_SEC, .entry_timeout = CACHE_SEC };

	(void)name, (void)mode;
	if (parent != JOBS_INO) {
		fuse_reply_err(req, EACCES);
		return;
	}
	e.ino = __atomic_fetch_add(&next_ino, 1, __ATOMIC_RELAXED);
	attr_of(e.ino, &e.attr);
	fi->direct_io = 1;
	fuse_reply_create(req, &e, fi);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t len, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)off, (void)fi;
	fuse_reply_write(req, len);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)attr, (void)to_set, (void)fi;
	attr_of(ino, &st);
	fuse_reply_attr(req, &st, CACHE_SEC);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	attr_of(ino, &st);
	fuse_reply_attr(req, &st, CACHE_SEC);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t want, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	if ((size_t)off >= size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, bytes + off, want < size - (size_t)off ? want : size - (size_t)off);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.create = op_create,
	.write = op_write,
	.setattr = op_setattr,
	.flush = op_flush,
	.release = op_release,
};

int main(int argc, char **argv)
{
	char *fuse_argv[] = { argv[0], "-o", "default_permissions", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
	struct fuse_loop_config *loop;
	struct fuse_session *se;
	FILE *f;
	int r = 1;

	if (argc == 4 && strcmp(argv[1], "--no-default-permissions") == 0) {
		args.argc = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: bench_fuse_floor [--no-default-permissions] FILE MOUNTPOINT\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	bytes = malloc(16u << 20);
	size = bytes ? fread(bytes, 1, 16u << 20, f) : 0;
	fclose(f);
	if (!bytes)
		return 1;
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		return 1;
	if (fuse_session_mount(se, argv[2]) == 0) {
		/* libfuse's multi-threaded loop as ascendfs runs it, with libfuse's documented
		 * 10 idle threads kept (the loop's own default here lets each one go, so a
		 * thread is made per request) */
		loop = fuse_loop_cfg_create();
		if (loop)
			fuse_loop_cfg_set_idle_threads(loop, 10);
		r = loop && fuse_session_loop_mt(se, loop) == 0 ? 0 : 1;
		fuse_loop_cfg_destroy(loop);
		fuse_session_unmount(se);
	}
	fuse_session_destroy(se);
	free(bytes);
	return r;
}
