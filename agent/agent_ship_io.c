/* SPDX-License-Identifier: MIT */
/*
 * Shipping what a job's processes print to the head: the new bytes of each process's
 * local log (<log-dir>/<job>/g<generation>/<process>.log) are appended to
 * <mount>/jobs/<job>/log, whole lines at a time (agent_ship_format()), in one
 * open/write/close per run; a close that returned 0 has them durable on the head (over
 * sshfs, which drops close()'s answer, sent). How far each log was shipped is kept
 * beside it (<process>.log.shipped), so that an agent restarted goes on where the last
 * one stopped instead of sending everything again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_internal.h"

/* The most of one process's output read in one pass: a process printing faster than
 * this a second falls behind, bounded per pass, and catches up when it slows down. */
#define SHIP_READ_MAX (1u << 20)
/* One write() to the mount: whole lines, under what the daemon buffers of one. */
#define SHIP_WRITE_MAX (60u * 1024)

long long agent_ship_offset_load(const char *log_path)
{
	char path[PATH_MAX + 16], text[32];
	long long v;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s.shipped", log_path) >= (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	if (sscanf(text, "%lld", &v) != 1 || v < 0)
		return -1;
	return v;
}

static void offset_save(const char *log_path, long long off)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 24], text[32];
	int fd, n = snprintf(text, sizeof(text), "%lld\n", off);

	if (snprintf(path, sizeof(path), "%s.shipped", log_path) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (agent_write_all(fd, text, (size_t)n) < 0 || close(fd) < 0 || rename(tmp, path) < 0)
		unlink(tmp);
}

/*
 * @src's log opened for reading, or -errno. In a directory of the job's user the name
 * resolves without a symbolic link and without crossing a mount (openat2(2)'s
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV: a FUSE file system its user mounted there
 * could keep the read waiting, and with it every job of this agent), and never blocks
 * (a FIFO).
 */
static int open_src(const struct agent_ship_src *src)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV,
	};
	struct stat st;
	long fd;

	if (src->dirfd < 0) {
		fd = open(src->path, O_RDONLY | O_CLOEXEC);
		return fd < 0 ? -errno : (int)fd;
	}
	fd = syscall(SYS_openat2, src->dirfd, src->path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	if (fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != src->owner) {
		close((int)fd);
		return -EPERM;
	}
	return (int)fd;
}

/* The new output of @src as lines appended to *@out; its next offset in *@next. */
static int gather(struct agent_ship_src *src, unsigned generation, const char *node,
		  char **out, size_t *out_len, size_t *out_cap, long long *next, bool *more)
{
	char *buf;
	ssize_t n, used;
	struct stat st;
	int fd = open_src(src);

	*next = src->shipped;
	/* not there yet, or not to be read: the others go all the same */
	if (fd < 0) {
		if (fd != -ENOENT && -fd != src->error)
			agent_log(AGENT_LOG_WARNING, "cannot read %s%s%s to ship it: %s%s; its lines "
				  "are not shipped while it cannot", src->where ? src->where : "",
				  src->where ? "/" : "", src->path, strerror(-fd),
				  fd == -EPERM ? " (not a regular file of the job's user)" :
				  fd == -EXDEV ? " (a mount point)" :
				  fd == -ELOOP ? " (a symbolic link)" : "");
		src->error = fd == -ENOENT ? 0 : -fd;
		return 0;
	}
	src->error = 0;
	/* shorter than what was shipped: written anew, shipped from its start */
	if (fstat(fd, &st) == 0 && st.st_size < src->shipped)
		src->shipped = *next = 0;
	buf = malloc(SHIP_READ_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = pread(fd, buf, SHIP_READ_MAX, (off_t)src->shipped);
	if (n == (ssize_t)SHIP_READ_MAX)
		*more = true;
	close(fd);
	if (n < 0) {
		free(buf);
		return 0; /* read again next time */
	}
	used = agent_ship_format(buf, (size_t)n, generation, src->process, node,
				 src->final && n < (ssize_t)SHIP_READ_MAX, out, out_len, out_cap);
	free(buf);
	if (used < 0)
		return (int)used;
	*next = src->shipped + used;
	return 0;
}

int agent_ship_send(const char *mount, const char *home, const char *node,
		    unsigned generation, struct agent_ship_src *srcs, size_t n, bool *ret_more)
{
	char path[PATH_MAX], *out = NULL;
	size_t out_len = 0, out_cap = 0, done = 0;
	long long next[AGENT_SHIP_SRCS_MAX], kept[AGENT_SHIP_SRCS_MAX];
	int fd, r = 0;

	*ret_more = false;
	if (n > AGENT_SHIP_SRCS_MAX)
		n = AGENT_SHIP_SRCS_MAX;
	for (size_t i = 0; i < n; i++)
		kept[i] = srcs[i].shipped;
	for (size_t i = 0; i < n && r == 0; i++)
		r = gather(&srcs[i], generation, node, &out, &out_len, &out_cap, &next[i],
			   ret_more);
	if (r < 0 || out_len == 0)
		goto out;
	if (snprintf(path, sizeof(path), "%s/jobs/%s/log", mount, home) >= (int)sizeof(path)) {
		r = -ENAMETOOLONG;
		goto out;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	/* whole lines per write: the daemon checks each write's lines as they come */
	while (done < out_len && r == 0) {
		size_t len = out_len - done;

		if (len > SHIP_WRITE_MAX) {
			const char *cut = memrchr(out + done, '\n', SHIP_WRITE_MAX);

			len = cut ? (size_t)(cut - (out + done)) + 1 : SHIP_WRITE_MAX;
		}
		r = agent_write_all(fd, out + done, len);
		done += len;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
out:
	free(out);
	/*
	 * Failed: each offset stays where this pass began, which is 0 for a log found
	 * written anew (gather()): what it holds goes next time, from its start. Kept
	 * against the offset saved, so that an agent restarted meanwhile knows it too.
	 */
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			srcs[i].shipped = next[i];
		if (srcs[i].shipped != kept[i])
			offset_save(srcs[i].mark ? srcs[i].mark : srcs[i].path, srcs[i].shipped);
	}
	return r < 0 ? r : 0;
}
