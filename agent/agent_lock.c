/* SPDX-License-Identifier: MIT */
/*
 * One agent per server and machine (agent.h, "the instance lock"): an flock(2) on a file
 * in the agent's runtime directory, held by the open descriptor for the life of the
 * process. The kernel drops it when the process ends however it ends (kill -9
 * included), so there is no stale lock to clean up; the descriptor is close-on-exec, so
 * job processes, which may outlive the agent, never hold it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

int agent_lock_dir(unsigned euid, const char *runtime_dir, char *ret, size_t len)
{
	int n;

	if (euid == 0)
		n = snprintf(ret, len, "/run/ascend-agent");
	else if (runtime_dir && runtime_dir[0] == '/')
		n = snprintf(ret, len, "%s/ascend-agent", runtime_dir);
	else
		n = snprintf(ret, len, "/tmp/ascend-agent-%u", euid);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int agent_lock_name(const char *node, const char *mount, bool per_machine, char *ret,
		    size_t len)
{
	char base[AGENT_CGROUP_NAME_MAX + 16];
	int n, r;

	if (per_machine) {
		n = snprintf(ret, len, "npus.lock");
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	r = agent_cgroup_node_name(node, mount, base, sizeof(base));
	if (r < 0)
		return r;
	n = snprintf(ret, len, "%s.lock", base);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The directory must be ours (or root's) and writable by no one else: another user
 * could otherwise hold or replace the lock file. */
static int check_dir(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 0022))
		return -EPERM;
	return 0;
}

int agent_lock_take(const char *dir, const char *name, const char *holder, int *ret_fd,
		    long *ret_pid, char *ret_text, size_t text_len)
{
	char path[4096], buf[AGENT_LOCK_TEXT_MAX];
	ssize_t n;
	int fd, r;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	r = check_dir(dir);
	if (r < 0)
		return r;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (r == -EBUSY) {
			/* the holder writes its text right after taking the lock: a reader in
			 * between sees an empty file, and says the pid is unknown */
			n = pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			if (ret_pid) {
				char *end;
				long pid = strncmp(buf, "pid ", 4) == 0 ?
						   strtol(buf + 4, &end, 10) : 0;

				*ret_pid = pid > 0 ? pid : 0;
			}
			if (ret_text && text_len)
				snprintf(ret_text, text_len, "%s", buf);
		}
		close(fd);
		return r;
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, holder, strlen(holder), 0) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}
