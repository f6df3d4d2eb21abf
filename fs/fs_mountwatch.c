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
 * looks at /proc/self/mountinfo every second; when the daemon's device has been missing
 * from it for two looks while the daemon still runs, it says so and aborts the
 * connection through fusectl (/sys/fs/fuse/connections/<dev>/abort, the kernel's
 * documented way; fusectl is mounted there first when it is not). The remaining users
 * then get ENOTCONN and the daemon stops as after an unmount.
 */
#include <errno.h>
#include <fcntl.h>
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

static void *watch_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	unsigned major = 0, minor = 0, missing = 0, looks = 0;
	bool known = false, acted = false;
	struct timespec ts;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stopping && !acted) {
		char path[128];
		int r;

		pthread_mutex_unlock(&ctx->lock);
		/* first by its mount point (at once: it is mounted when the thread starts), then
		 * by its device (a moved mount is still ours) */
		r = fs_mountinfo_find("/proc/self/mountinfo", known ? NULL : ctx->mount_path,
				      &major, &minor);
		if (r > 0) {
			known = true;
			missing = 0;
		} else if (r == 0 && !known && ++looks >= 3) {
			/* never seen (gone before the first look): nothing to watch */
			fs_log(ctx, 3, "mount watch: %s not found in /proc/self/mountinfo",
			       ctx->mount_path);
			acted = true;
		} else if (r == 0 && known && ++missing >= 2) {
			bool mounted = false;

			acted = true;
			r = fs_fuse_abort(major, minor, path, sizeof(path), &mounted);
			if (mounted)
				fs_log(ctx, 2, "mounted fusectl on %s to abort the connection",
				       FUSECTL_DIR);
			if (r == 0)
				fs_log(ctx, 1, "%s is no longer mounted here, but the file system "
					       "lived on (a copy of the mount in another mount "
					       "namespace, made by unshare -m or ip netns exec, or a "
					       "lazy unmount with files still open): aborted the "
					       "connection (%s); those now fail with ENOTCONN",
				       ctx->mount_path, path);
			else if (r != -ESRCH)
				fs_log(ctx, 0, "%s is no longer mounted here, but the file system "
					       "lives on (a copy of the mount in another mount "
					       "namespace, or a lazy unmount with files still open), "
					       "and the daemon cannot abort it (%s: %s): unmount the "
					       "copies (grep %s /proc/*/mountinfo) or write 1 to that "
					       "file",
				       ctx->mount_path, path, strerror(-r), ctx->mount_path);
		}
		pthread_mutex_lock(&ctx->lock);
		if (ctx->stopping || acted)
			break;
		fs_deadline_in(&ts, 1000);
		pthread_cond_timedwait(&ctx->stop_cv, &ctx->lock, &ts);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int fs_mountwatch_start(struct fs_ctx *ctx)
{
	int r = pthread_create(&watch_thread, NULL, watch_main, ctx);

	if (r)
		return -r;
	watch_running = true;
	return 0;
}

void fs_mountwatch_stop(struct fs_ctx *ctx)
{
	if (!watch_running)
		return;
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_cond_broadcast(&ctx->stop_cv);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(watch_thread, NULL);
	watch_running = false;
}
