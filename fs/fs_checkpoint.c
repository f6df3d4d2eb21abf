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
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	time_t mtime;
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

int fs_checkpoint_dir_check(const char *dir, const char *mount, char *ret_resolved, size_t len)
{
	char todo[2 * PATH_MAX], res[PATH_MAX] = "", target[PATH_MAX], rest[2 * PATH_MAX];
	const char *p;
	unsigned links = 0;
	bool missing = false;

	if (!dir || dir[0] != '/')
		return -EINVAL;
	if ((size_t)snprintf(todo, sizeof(todo), "%s", dir) >= sizeof(todo))
		return -ENAMETOOLONG;
	p = todo;
	for (;;) {
		const char *end;
		size_t clen;
		struct stat st;
		ssize_t tl;

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
			continue;
		}
		if (!push_comp(res, sizeof(res), p, clen))
			return -ENAMETOOLONG;
		p = end;
		/*
		 * Inside the mount names are taken as written (ascendfs has no symlinks):
		 * nothing there is ever looked at. Past the nearest existing parent no
		 * symlink can redirect the rest either.
		 */
		if (mount && path_is_within(res, mount))
			continue;
		if (missing || lstat(res, &st) < 0) {
			missing = true;
			continue;
		}
		if (!S_ISLNK(st.st_mode))
			continue;
		if (++links > 40)
			return -ELOOP;
		tl = readlink(res, target, sizeof(target) - 1);
		if (tl < 0) {
			missing = true;
			continue;
		}
		target[tl] = '\0';
		*strrchr(res, '/') = '\0'; /* the link's directory */
		if (target[0] == '/')
			res[0] = '\0';
		if ((size_t)snprintf(rest, sizeof(rest), "%s/%s", target, p) >= sizeof(rest))
			return -ENAMETOOLONG;
		memcpy(todo, rest, strlen(rest) + 1);
		p = todo;
	}
	if (!res[0])
		snprintf(res, sizeof(res), "/");
	if (mount && path_is_within(res, mount)) {
		if (ret_resolved)
			snprintf(ret_resolved, len, "%s", res);
		return -EXDEV;
	}
	if (ret_resolved)
		snprintf(ret_resolved, len, "%s", res);
	return 0;
}

static void scan_dir(const char *dir, const char *mount, int depth, struct best *b)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;
		uint64_t epoch, step;

		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &st) < 0)
			continue;
		/* a symlink is followed only when it does not lead into the mount */
		if (S_ISLNK(st.st_mode) &&
		    (fs_checkpoint_dir_check(path, mount, NULL, 0) < 0 || stat(path, &st) < 0))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth == 0)
				scan_dir(path, mount, 1, b);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !parse_ckpt_name(e->d_name, &epoch, &step))
			continue;
		if (b->found && (epoch < b->epoch || (epoch == b->epoch && step < b->step) ||
				 (epoch == b->epoch && step == b->step && st.st_mtime <= b->mtime)))
			continue;
		b->found = true;
		b->epoch = epoch;
		b->step = step;
		b->mtime = st.st_mtime;
		snprintf(b->path, sizeof(b->path), "%s", path);
	}
	closedir(d);
}

int fs_checkpoint_newest(const char *dir, const char *mount, uint64_t *ret_step, char *ret_path,
			 size_t len)
{
	struct best b = { 0 };
	int r = fs_checkpoint_dir_check(dir, mount, NULL, 0);

	if (r < 0)
		return r;
	scan_dir(dir, mount, 0, &b);
	if (!b.found)
		return -ENOENT;
	/* one number for "newest": epochs outrank steps */
	*ret_step = (b.epoch << 32) | (b.step & 0xffffffffu);
	snprintf(ret_path, len, "%s", b.path);
	return 0;
}
