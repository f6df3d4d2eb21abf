/* SPDX-License-Identifier: MIT */
/*
 * The mount point at start: clean what a previous ascendfs left there, refuse to stack on
 * anything else (issue 15 item 3).
 *
 * A predecessor can leave its mount in two states. Dead (its /dev/fuse closed): every
 * request fails with ENOTCONN, and a lazy unmount clears it. Wedged: the daemon is stopped,
 * or is a zombie one of whose threads waits in a request to its own mount (that keeps
 * /dev/fuse open, so the kernel aborts nothing): every request waits forever, stat(2) of
 * the mount point included. So nothing here touches the mount point with a call that
 * could wait on it. The path is resolved through its parent (realpath of the parent,
 * readlink of the last name: neither asks the file system mounted there), the mount is
 * found in /proc/self/mountinfo, and only a child process asks it a question (statx
 * forcing a GETATTR), for at most FS_MOUNTPOINT_PROBE_MSEC. No answer: the connection is
 * aborted through fusectl, /sys/fs/fuse/connections/<dev>/abort (the kernel's documented
 * way), which fails the stuck requests and lets the zombie exit; then the mount is
 * lazily unmounted. Only ascendfs's own mounts (source "ascendfs") are ever aborted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

struct mount_entry {
	unsigned major, minor;
	char fstype[64];
	char source[64];
};

static uint64_t mono_msec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The top mount at @path (the last listed), any type. Returns 1 found, 0 not. */
static int mount_at(const char *path, struct mount_entry *ret)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		char *mnt = NULL;
		const char *sep = strstr(line, " - ");
		struct mount_entry e = { 0 };

		/* fields: id parent major:minor root mountpoint ... - fstype source opts */
		if (!sep || sscanf(line, "%*s %*s %u:%u %*s %ms", &e.major, &e.minor, &mnt) != 3)
			continue;
		fs_mountinfo_unescape(mnt);
		if (strcmp(mnt, path) == 0 &&
		    sscanf(sep + 3, "%63s %63s", e.fstype, e.source) == 2) {
			*ret = e;
			found = 1;
		}
		free(mnt);
	}
	free(line);
	fclose(f);
	return found;
}

static bool mount_is_ascendfs(const struct mount_entry *e)
{
	return (strcmp(e->fstype, "fuse") == 0 || strncmp(e->fstype, "fuse.", 5) == 0) &&
	       strcmp(e->source, "ascendfs") == 0;
}

/*
 * Resolve @mnt like realpath(3), but never look at the last name itself: its parent is
 * resolved, and the last name is only readlink'd (which asks the file system it names
 * nothing: a mount point is not a symlink). Returns 0 or -errno.
 */
static int resolve_mountpoint(const char *mnt, char *ret, size_t len)
{
	char cur[PATH_MAX], parent[PATH_MAX], full[PATH_MAX], target[PATH_MAX];

	if ((size_t)snprintf(cur, sizeof(cur), "%s", mnt) >= sizeof(cur))
		return -ENAMETOOLONG;
	for (int links = 0; links <= 40; links++) {
		size_t n = strlen(cur);
		char *slash, *base;
		ssize_t tl;

		while (n > 1 && cur[n - 1] == '/')
			cur[--n] = '\0';
		slash = strrchr(cur, '/');
		base = slash ? slash + 1 : cur;
		if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
			/* "/", "." or "..": a directory the caller stands in or above */
			if (!realpath(cur, full))
				return -errno;
			snprintf(ret, len, "%s", full);
			return 0;
		}
		if (!slash)
			snprintf(parent, sizeof(parent), ".");
		else if (slash == cur)
			snprintf(parent, sizeof(parent), "/");
		else
			snprintf(parent, sizeof(parent), "%.*s", (int)(slash - cur), cur);
		if (!realpath(parent, full))
			return -errno;
		n = strlen(full);
		if (n + 1 + strlen(base) + 1 > sizeof(full))
			return -ENAMETOOLONG;
		snprintf(full + n, sizeof(full) - n, "%s%s", n == 1 ? "" : "/", base);
		tl = readlink(full, target, sizeof(target) - 1);
		if (tl < 0) {
			/* not a symlink, or missing (the caller says so when it stats it) */
			if ((size_t)snprintf(ret, len, "%s", full) >= len)
				return -ENAMETOOLONG;
			return 0;
		}
		target[tl] = '\0';
		if (target[0] == '/')
			snprintf(cur, sizeof(cur), "%s", target);
		else if ((size_t)snprintf(cur, sizeof(cur), "%.*s/%s", (int)(strrchr(full, '/') - full),
					  full, target) >= sizeof(cur))
			return -ENAMETOOLONG;
	}
	return -ELOOP;
}

enum probe_result { PROBE_ANSWERS, PROBE_ENOTCONN, PROBE_OTHER, PROBE_NO_ANSWER };

/*
 * Ask the file system at @path one question from a child process (a GETATTR the kernel
 * must send), waiting at most @msec. On PROBE_NO_ANSWER *@ret_child is the child, still
 * waiting: the caller ends it once the connection is aborted.
 */
static enum probe_result probe(const char *path, unsigned msec, pid_t *ret_child, int *ret_errno)
{
	uint64_t deadline = mono_msec() + msec;
	pid_t pid = fork();
	int status;

	if (pid < 0) {
		*ret_errno = errno;
		return PROBE_OTHER;
	}
	if (pid == 0) {
		struct statx stx;

		if (statx(AT_FDCWD, path, AT_STATX_FORCE_SYNC, STATX_TYPE, &stx) == 0)
			_exit(0);
		_exit(errno > 0 && errno < 256 ? errno : 255);
	}
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			*ret_errno = errno;
			return PROBE_OTHER;
		}
		if (mono_msec() >= deadline) {
			*ret_child = pid;
			return PROBE_NO_ANSWER;
		}
		usleep(10000);
	}
	if (!WIFEXITED(status)) {
		*ret_errno = EIO;
		return PROBE_OTHER;
	}
	*ret_errno = WEXITSTATUS(status);
	if (*ret_errno == 0)
		return PROBE_ANSWERS;
	return *ret_errno == ENOTCONN ? PROBE_ENOTCONN : PROBE_OTHER;
}

static int run_fusermount_lazy(const char *mnt)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "-q", mnt, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/*
 * Lazily unmount device @e at @mnt, and wait (bounded) until it is gone from there:
 * auto_unmount's helper of the dead daemon may detach it first (then ours fails).
 */
static int detach(const char *mnt, const struct mount_entry *e)
{
	uint64_t deadline;
	struct mount_entry now;

	if (umount2(mnt, MNT_DETACH) < 0)
		run_fusermount_lazy(mnt);
	deadline = mono_msec() + 5000;
	while (mount_at(mnt, &now) && now.major == e->major && now.minor == e->minor) {
		if (mono_msec() >= deadline)
			return -EBUSY;
		usleep(20000);
	}
	return 0;
}

int fs_mountpoint_prepare(const char *mnt, char *resolved, size_t len)
{
	struct mount_entry e;
	struct stat st;
	pid_t child = -1;
	int r, err = 0, cleared = 0;

	r = resolve_mountpoint(mnt, resolved, len);
	if (r < 0) {
		fprintf(stderr, "ascendfs: mount point %s: %s; create it with `mkdir -p %s`\n", mnt,
			strerror(-r), mnt);
		return -1;
	}
	if (mount_at(resolved, &e)) {
		if (!mount_is_ascendfs(&e)) {
			fprintf(stderr, "ascendfs: %s is already mounted (%s); unmount it first "
					"(`umount %s`) rather than stacking a second mount\n",
				resolved, e.fstype, resolved);
			return -1;
		}
		switch (probe(resolved, FS_MOUNTPOINT_PROBE_MSEC, &child, &err)) {
		case PROBE_ANSWERS:
			fprintf(stderr, "ascendfs: %s is already mounted (%s) by a running "
					"ascendfs; unmount it first (`fusermount3 -u %s`) rather "
					"than stacking a second mount\n",
				resolved, e.fstype, resolved);
			return -1;
		case PROBE_NO_ANSWER: {
			char path[128];
			bool mounted = false;

			r = fs_fuse_abort(e.major, e.minor, path, sizeof(path), &mounted);
			kill(child, SIGKILL);
			if (r < 0 && r != -ESRCH) {
				fprintf(stderr, "ascendfs: %s is the mount of an ascendfs that does "
						"not answer (%u:%u) and cannot be aborted (%s: %s); "
						"write 1 to that file as root, then retry\n",
					resolved, e.major, e.minor, path, strerror(-r));
				return -1;
			}
			fprintf(stderr, "ascendfs: %s is the mount of an ascendfs that has not "
					"answered for %u ms (stopped, or a zombie waiting on its own "
					"mount): aborted its connection (%s%s) and unmounting it\n",
				resolved, FS_MOUNTPOINT_PROBE_MSEC, path,
				mounted ? "; fusectl was mounted for it" : "");
			/* the abort ends the child's request; do not wait long for it anyway */
			for (int i = 0; i < 100 && waitpid(child, NULL, WNOHANG) == 0; i++)
				usleep(10000);
			break;
		}
		case PROBE_ENOTCONN:
			fprintf(stderr, "ascendfs: %s is a stale mount left by a dead daemon; "
					"unmounting it\n", resolved);
			break;
		case PROBE_OTHER:
			fprintf(stderr, "ascendfs: %s is an ascendfs mount that answers %s; "
					"unmount it first (`fusermount3 -uz %s`)\n",
				resolved, strerror(err), resolved);
			return -1;
		}
		if (detach(resolved, &e) < 0) {
			fprintf(stderr, "ascendfs: cannot clean the stale mount at %s; run "
					"`fusermount3 -uz %s` and retry\n", resolved, resolved);
			return -1;
		}
		if (mount_at(resolved, &e)) {
			fprintf(stderr, "ascendfs: %s is still mounted (%s, %s) after the stale "
					"mount was removed; unmount it first\n",
				resolved, e.fstype, e.source);
			return -1;
		}
		cleared = 1;
	}
	/* nothing is mounted here now: stat cannot wait on a file system */
	if (stat(resolved, &st) < 0) {
		fprintf(stderr, "ascendfs: mount point %s: %s; create it with `mkdir -p %s`\n",
			resolved, strerror(errno), resolved);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "ascendfs: mount point %s is not a directory\n", resolved);
		return -1;
	}
	return cleared;
}
