/* SPDX-License-Identifier: MIT */
/*
 * The mount watch: stop when the mount is gone from the daemon's own mount namespace.
 *
 * `fusermount3 -u` ends the daemon because the kernel, once the file system's last
 * mount is gone, aborts the FUSE connection and the daemon's reads of /dev/fuse fail.
 * A copy of the mount in another mount namespace (made by `unshare -m` or `ip netns
 * exec` while it was mounted, with private propagation) is such a mount too, and a lazy
 * unmount with files still open keeps the file system the same way: it lives on, the
 * daemon sees nothing, and it runs on, unreachable from its own namespace. So a thread
 * looks at /proc/self/mountinfo whenever the mount table changes (poll(2) POLLPRI on
 * it, proc(5)) and every second. When the daemon's device is missing from it, the
 * thread first ends the notify helper, whose detached copy of the mount is one such
 * copy (fs_notify.c): without others, the connection then ends as after any unmount once
 * the helper has ended, which takes as long as the daemon takes to answer the request
 * under way (a busy daemon answers it late; a helper still there 30 s later is killed).
 * When the daemon still runs a second after the helper ended (or 31 s after the mount
 * went: a request never answered keeps even a killed helper), it says so and aborts the
 * connection through fusectl
 * (/sys/fs/fuse/connections/<dev>/abort, the kernel's documented way; fusectl is
 * mounted there first when it is not). The remaining users then get ENOTCONN and the
 * daemon stops as after an unmount.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

static pthread_t watch_thread;
static bool watch_running;
static bool watch_stopping;	/* atomic */
static int watch_wake[2] = { -1, -1 };	/* fs_mountwatch_stop() writes a byte */
static bool watch_aborted;	/* it aborted the connection (atomic) */
static bool watch_saw_gone;	/* it saw the mount go from here (atomic) */
static unsigned watch_major, watch_minor; /* the mount's device once found (atomic) */
static bool watch_known;	/* ... they are set (atomic) */

/* how long the helper may take to end once the mount is gone (its request under way) */
#define HELPER_WAIT_MSEC 30000

void fs_mountinfo_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

int fs_mountinfo_find(const char *mountinfo, const char *path, unsigned *major, unsigned *minor)
{
	FILE *f = fopen(mountinfo, "re");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *mnt = NULL, *fstype = NULL, src[16] = "";
		const char *sep = strstr(line, " - ");
		unsigned ma, mi;

		/* fields: id parent major:minor root mountpoint ... - fstype source opts */
		if (!sep || sscanf(line, "%*s %*s %u:%u %*s %ms", &ma, &mi, &mnt) != 3 ||
		    sscanf(sep + 3, "%ms", &fstype) != 1) {
			free(mnt);
			continue;
		}
		fs_mountinfo_unescape(mnt);
		if (path ? strcmp(mnt, path) == 0 &&
				   (strcmp(fstype, "fuse") == 0 || strncmp(fstype, "fuse.", 5) == 0) &&
				   sscanf(sep + 3, "%*s %15s", src) == 1 && strcmp(src, "ascendfs") == 0 :
			   ma == *major && mi == *minor) {
			/* stacked mounts: the last one listed is on top */
			*major = ma;
			*minor = mi;
			found = 1;
		}
		free(mnt);
		free(fstype);
	}
	free(line);
	fclose(f);
	return found;
}

#define FUSECTL_DIR "/sys/fs/fuse/connections"
#define FUSECTL_SUPER_MAGIC 0x65735543 /* linux/magic.h */

/* Mount fusectl on FUSECTL_DIR when it is not (root only). Returns 0 or -errno. */
static int fusectl_ready(bool *ret_mounted)
{
	struct statfs sf;

	if (statfs(FUSECTL_DIR, &sf) == 0 && sf.f_type != FUSECTL_SUPER_MAGIC) {
		if (mount("fusectl", FUSECTL_DIR, "fusectl",
			  MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME, NULL) < 0)
			return -errno;
		*ret_mounted = true;
	}
	return 0;
}

int fs_fuse_waiting(unsigned major, unsigned minor, bool *ret_mounted)
{
	unsigned long dev = ((unsigned long)major << 20) | minor;
	char path[128], buf[32];
	ssize_t n;
	int fd, r = fusectl_ready(ret_mounted);

	if (r < 0)
		return r;
	snprintf(path, sizeof(path), FUSECTL_DIR "/%lu/waiting", dev);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	buf[n] = '\0';
	/* the kernel prints an int: a negative one would be its bug, not a count */
	if (sscanf(buf, "%d", &r) != 1 || r < 0)
		return -EIO;
	return r;
}

int fs_fuse_abort(unsigned major, unsigned minor, char *path, size_t len, bool *ret_mounted)
{
	/* fusectl names a connection by the kernel's dev_t: major << 20 | minor */
	unsigned long dev = ((unsigned long)major << 20) | minor;
	int fd, r;

	snprintf(path, len, FUSECTL_DIR "/%lu/abort", dev);
	r = fusectl_ready(ret_mounted);
	if (r < 0)
		return r;
	r = 0;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (write(fd, "1", 1) != 1)
		r = -errno;
	close(fd);
	return r;
}

/*
 * Until @ms milliseconds pass, the daemon's mount table changes (POLLPRI on @mountinfo,
 * proc(5)) or fs_mountwatch_stop() writes to the wake pipe.
 */
static void watch_wait(int mountinfo, int ms)
{
	struct pollfd p[2] = { { .fd = mountinfo, .events = POLLPRI }, /* -1: ignored */
			       { .fd = watch_wake[0], .events = POLLIN } };

	poll(p, 2, ms < 1 ? 1 : ms);
}

static long msec_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void *watch_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	unsigned major = 0, minor = 0, looks = 0, unreadable = 0;
	bool known = false, acted = false, gone = false, ended = false, helper_killed = false;
	struct timespec gone_at = { 0 }, ended_at = { 0 };
	/* opened once: poll() on it says when the table changed since the last poll */
	int mountinfo = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	while (!__atomic_load_n(&watch_stopping, __ATOMIC_SEQ_CST) && !acted) {
		char path[128];
		int r;

		/* first by its mount point (at once: it is mounted when the thread starts), then
		 * by its device (a moved mount is still ours) */
		r = fs_mountinfo_find("/proc/self/mountinfo", known ? NULL : ctx->mount_path,
				      &major, &minor);
		if (r < 0 && ++unreadable >= 3) {
			/* it cannot tell when the mount goes: the helper's copy must not
			 * outlive it */
			fs_log(ctx, 1, "mount watch: cannot read /proc/self/mountinfo (%s); it "
				       "stops, and so do announcements to inotify watchers",
			       strerror(-r));
			fs_notify_helper_release(ctx);
			acted = true;
		} else if (r > 0) {
			unreadable = 0;
			known = true;
			gone = ended = false;
			__atomic_store_n(&watch_major, major, __ATOMIC_SEQ_CST);
			__atomic_store_n(&watch_minor, minor, __ATOMIC_SEQ_CST);
			__atomic_store_n(&watch_known, true, __ATOMIC_SEQ_CST);
		} else if (r == 0 && !known && ++looks >= 3) {
			/* never seen (gone before the first look): nothing to watch */
			fs_log(ctx, 3, "mount watch: %s not found in /proc/self/mountinfo",
			       ctx->mount_path);
			/* nor can it tell when it goes: the helper's copy must not outlive it */
			fs_notify_helper_release(ctx);
			acted = true;
		} else if (r == 0 && known && !gone) {
			/* unmounted here: the notify helper's copy of the mount must not keep
			 * the file system alive; without other copies the connection now ends
			 * as after any unmount */
			gone = true;
			__atomic_store_n(&watch_saw_gone, true, __ATOMIC_SEQ_CST);
			clock_gettime(CLOCK_MONOTONIC, &gone_at);
			fs_notify_helper_release(ctx);
		} else if (r == 0 && known && fs_notify_helper_running() &&
			   msec_since(&gone_at) < HELPER_WAIT_MSEC + 1000) {
			/* the helper's copy: it ends once the daemon has answered the request
			 * under way (a busy daemon answers late: that is no copy living on);
			 * one still there HELPER_WAIT_MSEC later is killed, by its id, and a
			 * second after that the connection is aborted all the same (a request
			 * the daemon has read is waited for without interruption: one it never
			 * answers would keep the helper, and with it the mount) */
			if (msec_since(&gone_at) >= HELPER_WAIT_MSEC && !helper_killed) {
				helper_killed = true;
				fs_notify_helper_kill(ctx, HELPER_WAIT_MSEC);
			}
			ended = false;
		} else if (r == 0 && known && !ended) {
			ended = true;
			clock_gettime(CLOCK_MONOTONIC, &ended_at);
		} else if (r == 0 && known && msec_since(&gone_at) >= 1000 &&
			   msec_since(&ended_at) >= 1000) {
			/* what keeps the file system alive a second after the helper ended is
			 * not its copy */
			bool mounted = false;

			acted = true;
			r = fs_fuse_abort(major, minor, path, sizeof(path), &mounted);
			if (mounted)
				fs_log(ctx, 2, "mounted fusectl on %s to abort the connection",
				       FUSECTL_DIR);
			if (r == 0) {
				__atomic_store_n(&watch_aborted, true, __ATOMIC_SEQ_CST);
				fs_log(ctx, 1, "%s is no longer mounted here, but the file system "
					       "lived on (a copy of the mount in another mount "
					       "namespace, made by unshare -m or ip netns exec, or a "
					       "lazy unmount with files still open): aborted the "
					       "connection (%s); those now fail with ENOTCONN",
				       ctx->mount_path, path);
			} else if (r != -ESRCH) {
				fs_log(ctx, 0, "%s is no longer mounted here, but the file system "
					       "lives on (a copy of the mount in another mount "
					       "namespace, or a lazy unmount with files still open), "
					       "and the daemon cannot abort it (%s: %s): unmount the "
					       "copies (grep %s /proc/*/mountinfo) or write 1 to that "
					       "file",
				       ctx->mount_path, path, strerror(-r), ctx->mount_path);
			}
		}
		if (!acted)
			watch_wait(mountinfo, !gone ? 1000
					      : msec_since(&gone_at) < 1000
						? 1000 - (int)msec_since(&gone_at)
						: 100);
	}
	if (mountinfo >= 0)
		close(mountinfo);
	return NULL;
}

bool fs_mountwatch_aborted(void)
{
	return __atomic_load_n(&watch_aborted, __ATOMIC_SEQ_CST);
}

bool fs_mountwatch_unmounted(void)
{
	unsigned major = __atomic_load_n(&watch_major, __ATOMIC_SEQ_CST);
	unsigned minor = __atomic_load_n(&watch_minor, __ATOMIC_SEQ_CST);

	if (__atomic_load_n(&watch_saw_gone, __ATOMIC_SEQ_CST))
		return true;
	/* the watch may not have looked since: by the device, wherever it is mounted */
	return __atomic_load_n(&watch_known, __ATOMIC_SEQ_CST) &&
	       fs_mountinfo_find("/proc/self/mountinfo", NULL, &major, &minor) == 0;
}

int fs_mountwatch_start(struct fs_ctx *ctx)
{
	int r;

	if (pipe2(watch_wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	watch_stopping = false;
	r = pthread_create(&watch_thread, NULL, watch_main, ctx);
	if (r) {
		close(watch_wake[0]);
		close(watch_wake[1]);
		return -r;
	}
	watch_running = true;
	return 0;
}

void fs_mountwatch_stop(struct fs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_mutex_unlock(&ctx->lock);
	if (!watch_running)
		return;
	__atomic_store_n(&watch_stopping, true, __ATOMIC_SEQ_CST);
	if (write(watch_wake[1], "", 1) < 0) {
		/* the pipe is full of wakes already */
	}
	pthread_join(watch_thread, NULL);
	close(watch_wake[0]);
	close(watch_wake[1]);
	watch_running = false;
}
