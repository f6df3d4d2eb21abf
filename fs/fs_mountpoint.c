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
 * forcing a GETATTR), for at most FS_MOUNTPOINT_PROBE_MSEC. No answer is not proof of a
 * wedge: a live daemon can be slow (busy workers, a slow disk, swapping), and aborting it
 * would fail every client with ENOTCONN. So the connection's waiting count (fusectl) is
 * watched meanwhile: a live daemon answers requests and the count goes down, a stopped one
 * answers none (but a killed client's request is dropped unanswered: a count that goes
 * down only buys the daemon FS_MOUNTPOINT_LIVE_MSEC to answer). And the state store's lock, when there is one, names its holder: held by
 * a process that runs (not stopped, not a zombie), the newcomer refuses. Only a daemon so
 * shown wedged has its connection aborted through fusectl,
 * /sys/fs/fuse/connections/<dev>/abort (the kernel's documented
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
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
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

/* What the connection's waiting count did while the probe waited (fs_fuse_waiting()). */
struct probe_watch {
	int last;	/* the last count read, or -errno when it could not be read */
	bool drained;	/* it went down once: a request was answered (or dropped unread) */
	bool mounted;	/* fusectl was mounted to read it */
	unsigned waited_msec; /* until the answer (or until given up) */
};

/* End the probe's child @pid and reap it, waiting at most 1 s: its request may hold it
 * (uninterruptibly, once the daemon has read it) until the daemon answers. */
static void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	for (int i = 0; i < 100 && waitpid(pid, NULL, WNOHANG) == 0; i++)
		usleep(10000);
}

/*
 * Ask the file system at @path (device @e) one question from a child process (a GETATTR
 * the kernel must send), waiting at most @msec, and watch the connection's waiting count
 * meanwhile (into *@w). When the count went down in that time (a request was answered: the
 * daemon may be live but slow; or one was dropped, its caller killed, which a wedged
 * daemon sees too), wait for the answer up to @live_msec in all. On PROBE_NO_ANSWER
 * *@ret_child is the child, still waiting: the caller ends it (end_child()) once it decided.
 */
static enum probe_result probe(const char *path, const struct mount_entry *e, unsigned msec,
			       unsigned live_msec, struct probe_watch *w, pid_t *ret_child,
			       int *ret_errno)
{
	uint64_t start = mono_msec();
	pid_t pid;
	int status;

	w->drained = false;
	w->last = fs_fuse_waiting(e->major, e->minor, &w->mounted);
	pid = fork();
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
		pid_t r = waitpid(pid, &status, WNOHANG);
		int n;

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			*ret_errno = errno;
			end_child(pid);
			return PROBE_OTHER;
		}
		n = fs_fuse_waiting(e->major, e->minor, &w->mounted);
		if (n >= 0) {
			if (w->last >= 0 && n < w->last)
				w->drained = true;
			w->last = n;
		} else if (w->last < 0) {
			w->last = n; /* keep the last count read, if any */
		}
		w->waited_msec = (unsigned)(mono_msec() - start);
		if (w->waited_msec >= (w->drained ? live_msec : msec)) {
			*ret_child = pid;
			return PROBE_NO_ANSWER;
		}
		usleep(10000);
	}
	w->waited_msec = (unsigned)(mono_msec() - start);
	if (!WIFEXITED(status)) {
		*ret_errno = EIO;
		return PROBE_OTHER;
	}
	*ret_errno = WEXITSTATUS(status);
	if (*ret_errno == 0)
		return PROBE_ANSWERS;
	return *ret_errno == ENOTCONN ? PROBE_ENOTCONN : PROBE_OTHER;
}

/* The state letter of process @pid (/proc/<pid>/stat: R, S, D, T, t, Z, ...), 0 if gone. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold ") ", so the last ')' ends it */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p[2] : 0;
}

/*
 * Who holds the state store's lock, @dir/ascendfs.lock (fs_store_sqlite.c takes flock(2) on it)?
 * Returns 1 held (*@ret_pid the holder from /proc/locks, or 0 when it is not listed), 0 not
 * held (or no such file), or -errno.
 */
static int store_lock_holder(const char *dir, pid_t *ret_pid)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	struct stat st;
	pid_t by_ino = 0;
	FILE *f;
	int fd;

	*ret_pid = 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/ascendfs.lock", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	if (fstat(fd, &st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		close(fd); /* got it (closing lets it go): nobody holds it */
		return 0;
	}
	if (errno != EWOULDBLOCK) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	f = fopen("/proc/locks", "re");
	if (!f)
		return 1;
	while (getline(&line, &cap, f) > 0) {
		char type[16];
		unsigned ma, mi;
		unsigned long ino;
		int pid;

		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->" */
		if (strstr(line, "->") ||
		    sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", type, &pid, &ma, &mi, &ino) != 5 ||
		    strcmp(type, "FLOCK") != 0 || ino != (unsigned long)st.st_ino || pid <= 0)
			continue;
		/* the device as the kernel names the super block (st_dev can differ: btrfs) */
		if (ma == major(st.st_dev) && mi == minor(st.st_dev)) {
			*ret_pid = pid;
			break;
		}
		by_ino = pid;
	}
	if (!*ret_pid)
		*ret_pid = by_ino;
	free(line);
	fclose(f);
	return 1;
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

/*
 * Is @dir, made absolute with the working directory, @mnt or under it, by its words? (Its
 * lock is then not looked at: that would ask the mount. A daemon never keeps its state
 * there, main.c refuses it; a symlink into the mount is not caught.)
 */
static bool lexically_inside(const char *dir, const char *mnt)
{
	char cwd[PATH_MAX], abs[PATH_MAX];
	size_t n = strlen(mnt);

	if (dir[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)) ||
		    (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) >= sizeof(abs))
			return true; /* cannot tell: do not look */
		dir = abs;
	}
	while (dir[0] == '/' && dir[1] == '/')
		dir++;
	return strncmp(dir, mnt, n) == 0 && (dir[n] == '\0' || dir[n] == '/' || n == 1);
}

/*
 * The probe of @resolved (device @e) got no answer in time (*@w: what the connection's
 * waiting count did meanwhile; probe() already gave a daemon that answered other requests
 * FS_MOUNTPOINT_LIVE_MSEC). Abort only a daemon shown to be wedged. Returns true when it
 * is: our request is among those waiting, and the state store's lock (@state_dir, or
 * NULL/"none") is not held by a process that runs (one stopped, T/t, or a zombie, Z,
 * counts as wedged; a live one would fail the newcomer anyway). Else says why it refuses
 * on stderr and returns false.
 */
static bool predecessor_is_wedged(const char *resolved, const char *state_dir,
				  const struct mount_entry *e, const struct probe_watch *w)
{
	pid_t holder;
	char state;
	int r;

	if (state_dir && strcmp(state_dir, "none") != 0 && !lexically_inside(state_dir, resolved)) {
		r = store_lock_holder(state_dir, &holder);
		if (r < 0) {
			fprintf(stderr, "ascendfs: %s does not answer, and whether its daemon lives "
					"cannot be told: %s/ascendfs.lock: %s; stop that daemon "
					"first\n", resolved, state_dir, strerror(-r));
			return false;
		}
		state = r > 0 && holder > 0 ? proc_state(holder) : 0;
		if (r > 0 && holder <= 0) {
			fprintf(stderr, "ascendfs: %s does not answer, and %s/ascendfs.lock is held "
					"by a process /proc/locks does not name; stop the ascendfs "
					"that serves %s first\n", resolved, state_dir, resolved);
			return false;
		}
		if (r > 0 && state && !strchr("TtZX", state)) {
			fprintf(stderr, "ascendfs: another ascendfs (pid %d) serves %s; stop it "
					"first (it answers slowly, so nothing was aborted; it holds "
					"%s/ascendfs.lock)\n", (int)holder, resolved, state_dir);
			return false;
		}
	}
	if (w->last < 0) {
		fprintf(stderr, "ascendfs: %s does not answer within %u ms, and whether its "
				"daemon lives cannot be told (fusectl's waiting for %u:%u: %s); "
				"stop that daemon first\n", resolved, FS_MOUNTPOINT_PROBE_MSEC,
			e->major, e->minor, strerror(-w->last));
		return false;
	}
	if (w->last == 0) {
		/* ours is not even waiting: not the wedge a count shows */
		fprintf(stderr, "ascendfs: %s does not answer within %u ms, but its connection "
				"has no request waiting; nothing was aborted: stop its daemon "
				"first (`fusermount3 -uz %s`)\n", resolved, w->waited_msec, resolved);
		return false;
	}
	return true;
}

int fs_mountpoint_prepare(const char *mnt, const char *state_dir, char *resolved, size_t len)
{
	struct mount_entry e;
	struct probe_watch w = { 0 };
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
		switch (probe(resolved, &e, FS_MOUNTPOINT_PROBE_MSEC, FS_MOUNTPOINT_LIVE_MSEC, &w,
			      &child, &err)) {
		case PROBE_ANSWERS:
			/*
			 * A dead daemon's mount can go while it is probed (its fusermount3
			 * unmounts it once the connection closes: auto_unmount), and the
			 * stat is then answered by the directory beneath: nothing is here.
			 */
			if (!mount_at(resolved, &e))
				break;
			if (w.waited_msec >= FS_MOUNTPOINT_PROBE_MSEC) {
				fprintf(stderr, "ascendfs: %s is served by a live ascendfs that "
						"answers slowly (in %u ms); nothing was aborted: stop "
						"it first (`fusermount3 -u %s`)\n",
					resolved, w.waited_msec, resolved);
				return -1;
			}
			fprintf(stderr, "ascendfs: %s is already mounted (%s) by a running "
					"ascendfs; unmount it first (`fusermount3 -u %s`) rather "
					"than stacking a second mount\n",
				resolved, e.fstype, resolved);
			return -1;
		case PROBE_NO_ANSWER: {
			char path[128];
			bool mounted = w.mounted;

			if (!predecessor_is_wedged(resolved, state_dir, &e, &w)) {
				end_child(child);
				return -1;
			}
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
				resolved, w.waited_msec, path,
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
		if (!mount_at(resolved, &e))
			goto gone; /* it went while probed: nothing to detach */
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
gone:
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
