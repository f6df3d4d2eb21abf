/* SPDX-License-Identifier: MIT */
/*
 * The newest MindSpore checkpoint in a job's checkpoint_dir. MindSpore's
 * ModelCheckpoint names files "<prefix>-<epoch>_<step>.ckpt" (CheckpointConfig), in the
 * directory itself or in per-rank subdirectories (rank_0/ ...); the newest is the one
 * with the highest (epoch, step), and the file's mtime breaks ties.
 *
 * The scanner must never read the daemon's own mount (issue 15 item 3): a request to
 * the filesystem the daemon serves can wait on the daemon itself and wedge the mount.
 * fs_checkpoint_dir_check() resolves a path component by component (symlinks
 * included) and stops before it would look at anything inside the mount; submission
 * refuses such a checkpoint_dir, and the scanner skips such directories and entries.
 *
 * "Inside" is decided twice: by name (the mount point and below), and by device, which
 * also catches a bind mount of the mount elsewhere. Each component is opened alone,
 * O_PATH|O_NOFOLLOW from its parent's descriptor: opening a name that is a mount point
 * of ascendfs lands on the mount's root without a request, and statx with
 * AT_STATX_DONT_SYNC tells its device from the kernel's cache, so the walk stops there
 * having asked the mount nothing. The scanner opens entries the same way, so a symlink
 * or a bind mount made after submit is met at scan time, and reads every file through
 * the descriptors it checked (no path is looked up twice).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs.h"

/* "llama-2_1200.ckpt" -> epoch 2, step 1200; "net-300.ckpt" -> epoch 0, step 300. */
static bool parse_ckpt_name(const char *name, uint64_t *epoch, uint64_t *step)
{
	size_t len = strlen(name);
	const char *end, *p;
	uint64_t v = 0, mult = 1;

	if (len < 6 || strcmp(name + len - 5, ".ckpt") != 0)
		return false;
	end = name + len - 5;
	p = end;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == end || end - p > 18)
		return false;
	for (const char *q = end; q > p; q--, mult *= 10)
		v += (uint64_t)(q[-1] - '0') * mult;
	*step = v;
	*epoch = 0;
	if (p > name && p[-1] == '_') {
		const char *e = p - 1, *b = e;

		while (b > name && b[-1] >= '0' && b[-1] <= '9')
			b--;
		if (b < e && e - b <= 18)
			*epoch = strtoull(b, NULL, 10);
	}
	return true;
}

struct best {
	uint64_t epoch, step;
	uint64_t mtime_usec;
	char path[4096];
	bool found;
};

/* Is @path @mount itself or below it (both absolute, @mount without a trailing '/')? */
static bool path_is_within(const char *path, const char *mount)
{
	size_t n = strlen(mount);

	if (n == 1 && mount[0] == '/')
		return true;
	return strncmp(path, mount, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Append "/<comp>" (length @clen) to @res. Returns false when it would not fit. */
static bool push_comp(char *res, size_t size, const char *comp, size_t clen)
{
	size_t n = strlen(res);

	if (n + 1 + clen + 1 > size)
		return false;
	res[n] = '/';
	memcpy(res + n + 1, comp, clen);
	res[n + 1 + clen] = '\0';
	return true;
}

/*
 * The type and device of what @fd (O_PATH is enough) refers to, from the kernel's cache:
 * FUSE answers AT_STATX_DONT_SYNC without a request, so this is safe on the mount's root.
 */
static int fd_kind(int fd, mode_t *ret_mode, dev_t *ret_dev)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0)
		return -errno;
	*ret_mode = stx.stx_mode;
	*ret_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Resolve @dir as fs_checkpoint_dir_check() says; *@ret_fd (O_PATH) is what it names
 * when all of it exists, else -1 (the caller closes it).
 */
static int resolve(const char *dir, const char *mount, dev_t mount_dev, char *ret_resolved,
		   size_t len, int *ret_fd)
{
	char todo[2 * PATH_MAX], res[PATH_MAX] = "", target[PATH_MAX], rest[2 * PATH_MAX];
	const char *p;
	unsigned links = 0, unopened = 0; /* names inside the mount, taken as written */
	bool missing = false;
	int cur, r = 0;
	mode_t mode;
	dev_t dev;

	*ret_fd = -1;
	if (!dir || dir[0] != '/')
		return -EINVAL;
	if ((size_t)snprintf(todo, sizeof(todo), "%s", dir) >= sizeof(todo))
		return -ENAMETOOLONG;
	cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	if (mount_dev && fd_kind(cur, &mode, &dev) == 0 && dev == mount_dev)
		r = -EXDEV;
	p = todo;
	while (r == 0) {
		const char *end;
		size_t clen;
		ssize_t tl;
		int next;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchrnul(p, '/');
		clen = (size_t)(end - p);
		if (clen == 1 && p[0] == '.') {
			p = end;
			continue;
		}
		if (clen == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = strrchr(res, '/');

			if (slash)
				*slash = '\0';
			p = end;
			if (missing)
				continue;
			if (unopened) {
				unopened--; /* back towards the mount point's parent, which cur is */
				continue;
			}
			/* what res now names, physically: the walk so far had no symlink left */
			next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			close_fd(&cur);
			if (next < 0)
				missing = true;
			cur = next;
			continue;
		}
		if (clen >= sizeof(target))
			r = -ENAMETOOLONG;
		if (r < 0 || !push_comp(res, sizeof(res), p, clen)) {
			r = r < 0 ? r : -ENAMETOOLONG;
			break;
		}
		memcpy(target, p, clen);
		target[clen] = '\0';
		p = end;
		/*
		 * Inside the mount names are taken as written (ascendfs has no symlinks):
		 * nothing there is ever looked at. Past the nearest existing parent no
		 * symlink can redirect the rest either.
		 */
		if (missing)
			continue;
		if (mount && path_is_within(res, mount)) {
			unopened++;
			continue;
		}
		next = openat(cur, target, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fd_kind(next, &mode, &dev) < 0) {
			if (next >= 0)
				close(next);
			close_fd(&cur);
			missing = true;
			continue;
		}
		if (mount_dev && dev == mount_dev) {
			close(next);
			r = -EXDEV;
			break;
		}
		if (!S_ISLNK(mode)) {
			close_fd(&cur);
			cur = next;
			continue;
		}
		if (++links > 40) {
			close(next);
			r = -ELOOP;
			break;
		}
		tl = readlinkat(next, "", target, sizeof(target) - 1);
		close(next);
		if (tl < 0) {
			close_fd(&cur);
			missing = true;
			continue;
		}
		target[tl] = '\0';
		*strrchr(res, '/') = '\0'; /* the link's directory: cur still names it */
		if (target[0] == '/') {
			res[0] = '\0';
			close_fd(&cur);
			cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (cur < 0)
				missing = true;
		}
		if ((size_t)snprintf(rest, sizeof(rest), "%s/%s", target, p) >= sizeof(rest)) {
			r = -ENAMETOOLONG;
			break;
		}
		memcpy(todo, rest, strlen(rest) + 1);
		p = todo;
	}
	if (!res[0])
		snprintf(res, sizeof(res), "/");
	if (r == 0 && mount && path_is_within(res, mount))
		r = -EXDEV;
	if (ret_resolved && (r == 0 || r == -EXDEV))
		snprintf(ret_resolved, len, "%s", res);
	if (r == 0 && !missing && !unopened)
		*ret_fd = cur;
	else
		close_fd(&cur);
	return r;
}

int fs_checkpoint_dir_check(const char *dir, const char *mount, dev_t mount_dev,
			    char *ret_resolved, size_t len)
{
	int fd, r = resolve(dir, mount, mount_dev, ret_resolved, len, &fd);

	if (fd >= 0)
		close(fd);
	return r;
}

/*
 * Look at the entries of directory @dfd (named @dir, as the job gave it; consumed) and,
 * at @depth 0, into its subdirectories. Every entry is opened alone without following
 * it; a symlink is resolved with resolve(), from the root, like checkpoint_dir itself.
 */
static void scan_dir(int dfd, const char *dir, const char *mount, dev_t mount_dev, int depth,
		     struct best *b)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;
		uint64_t epoch, step, mtime;
		mode_t mode;
		dev_t dev;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		fd = openat(dirfd(d), e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fd_kind(fd, &mode, &dev) < 0 || (mount_dev && dev == mount_dev)) {
			close(fd); /* a mount point of the mount (bind) inside the directory */
			continue;
		}
		if (S_ISLNK(mode)) {
			int target;

			close(fd);
			/* a symlink is followed only when it does not lead into the mount */
			if (resolve(path, mount, mount_dev, NULL, 0, &target) < 0 || target < 0)
				continue;
			fd = target;
		}
		/* what fd names lies outside the mount: an ordinary fstat */
		if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0) {
			close(fd);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = depth == 0 ? openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

			close(fd);
			if (sub >= 0)
				scan_dir(sub, path, mount, mount_dev, 1, b);
			continue;
		}
		close(fd);
		if (!S_ISREG(st.st_mode) || !parse_ckpt_name(e->d_name, &epoch, &step))
			continue;
		mtime = (uint64_t)st.st_mtim.tv_sec * 1000000u + (uint64_t)st.st_mtim.tv_nsec / 1000u;
		if (b->found &&
		    (epoch < b->epoch || (epoch == b->epoch && step < b->step) ||
		     (epoch == b->epoch && step == b->step &&
		      mtime / 1000000u <= b->mtime_usec / 1000000u)))
			continue;
		b->found = true;
		b->epoch = epoch;
		b->step = step;
		b->mtime_usec = mtime;
		snprintf(b->path, sizeof(b->path), "%s", path);
	}
	closedir(d);
}

int fs_checkpoint_newest(const char *dir, const char *mount, dev_t mount_dev, uint64_t *ret_step,
			 char *ret_path, size_t len, uint64_t *ret_mtime_usec)
{
	struct best b = { 0 };
	int fd, dfd, r = resolve(dir, mount, mount_dev, NULL, 0, &fd);

	if (r < 0)
		return r;
	if (fd < 0)
		return -ENOENT;
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	if (dfd < 0)
		return -ENOENT;
	scan_dir(dfd, dir, mount, mount_dev, 0, &b);
	if (!b.found)
		return -ENOENT;
	/* one number for "newest": epochs outrank steps */
	*ret_step = (b.epoch << 32) | (b.step & 0xffffffffu);
	snprintf(ret_path, len, "%s", b.path);
	if (ret_mtime_usec)
		*ret_mtime_usec = b.mtime_usec;
	return 0;
}
