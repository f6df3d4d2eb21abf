/* SPDX-License-Identifier: MIT */
/*
 * Per-job cgroups, the file system side (agent_internal.h says what each function
 * does; agent.h the layout). Everything is a small file of the cgroup2 filesystem
 * (Documentation/admin-guide/cgroup-v2.rst): cgroup.procs to join and list, cgroup.kill
 * (Linux 5.14) to kill a whole subtree at once, cgroup.events "populated" to see it
 * empty, cpu.stat and memory.peak/memory.current to account it. The "no internal
 * processes" rule (a cgroup other than the root with controllers enabled in its
 * cgroup.subtree_control holds no process) decides where the agent itself may stay.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "agent_internal.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* How deep job processes may nest cgroups of their own below a leaf (root's jobs can). */
#define DEPTH_MAX 8
/* The controllers enabled for job cgroups where the kernel offers them. */
static const char *const controllers[] = { "cpu", "memory", "pids" };

static int write_text(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	int fd, r = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int read_small(const char *dir, const char *file, char **ret, size_t *ret_len)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return agent_read_file(path, 1024 * 1024, ret, ret_len);
}

/* Is @word one of the blank-separated words of @dir/@file? */
static bool file_has_word(const char *dir, const char *file, const char *word)
{
	char *buf = NULL, *save = NULL;
	size_t len = 0;
	bool found = false;

	if (read_small(dir, file, &buf, &len) < 0)
		return false;
	for (char *w = strtok_r(buf, " \n", &save); w && !found; w = strtok_r(NULL, " \n", &save))
		found = strcmp(w, word) == 0;
	free(buf);
	return found;
}

/* Enable what @dir's cgroup.controllers offers of cpu, memory, pids for its children. */
static int enable_controllers(const char *dir)
{
	int first_error = 0;

	for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++) {
		char plus[16];
		int e;

		if (!file_has_word(dir, "cgroup.controllers", controllers[i]) ||
		    file_has_word(dir, "cgroup.subtree_control", controllers[i]))
			continue;
		snprintf(plus, sizeof(plus), "+%s", controllers[i]);
		e = write_text(dir, "cgroup.subtree_control", plus);
		if (e < 0 && !first_error)
			first_error = e;
	}
	return first_error;
}

static bool is_cgroup2(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && (unsigned long)st.f_type == CGROUP2_SUPER_MAGIC;
}

void agent_cgroups_init(struct agent_cgroups *cg, const char *root_opt,
			const char *node_dir_name)
{
	char mnt[PATH_MAX], self[PATH_MAX], root[PATH_MAX], agent_leaf[PATH_MAX + 8];
	char *buf = NULL, *slash;
	size_t len = 0;
	bool own = false;
	int e;

	memset(cg, 0, sizeof(cg[0]));
	if (root_opt) {
		if (snprintf(root, sizeof(root), "%s", root_opt) >= (int)sizeof(root))
			goto too_long;
	} else {
		e = agent_read_file("/proc/self/mountinfo", 4 * 1024 * 1024, &buf, &len);
		if (e == 0)
			e = agent_cgroup2_mount(buf, len, mnt, sizeof(mnt));
		free(buf);
		buf = NULL;
		if (e < 0) {
			agent_log(AGENT_LOG_WARNING, "no per-job cgroups: no cgroup2 filesystem is "
				  "mounted (/proc/self/mountinfo), so a stop reaches only each job "
				  "process's group and a restarted agent cannot find what an earlier "
				  "one left; mount cgroup2 (Linux's unified hierarchy, the default of "
				  "systemd 247 and later) or give --cgroup-root");
			return;
		}
		e = agent_read_file("/proc/self/cgroup", 64 * 1024, &buf, &len);
		if (e == 0)
			e = agent_cgroup_self(buf, len, self, sizeof(self));
		free(buf);
		if (e < 0) {
			agent_log(AGENT_LOG_WARNING, "no per-job cgroups: /proc/self/cgroup names no "
				  "cgroup v2 path (%s); job processes are stopped by process group; "
				  "give --cgroup-root DIR", strerror(-e));
			return;
		}
		/* in the leaf it moved itself to (or systemd's DelegateSubgroup=agent put it) */
		slash = strrchr(self, '/');
		if (slash && strcmp(slash, "/agent") == 0)
			*slash = '\0';
		else
			own = strcmp(self, "/") != 0;
		if (snprintf(root, sizeof(root), "%s%s", mnt, strcmp(self, "/") ? self : "") >=
		    (int)sizeof(root))
			goto too_long;
	}
	if (!is_cgroup2(root)) {
		agent_log(AGENT_LOG_WARNING, "no per-job cgroups: %s is not a directory of a "
			  "cgroup2 filesystem; job processes are stopped by process group; give "
			  "--cgroup-root a directory below the cgroup2 mount", root);
		return;
	}
	e = enable_controllers(root);
	if (e == -EBUSY && own && !getenv("INVOCATION_ID")) {
		/* the no-internal-processes rule: the agent leaves its cgroup for a leaf */
		snprintf(agent_leaf, sizeof(agent_leaf), "%s/agent", root);
		if ((mkdir(agent_leaf, 0755) == 0 || errno == EEXIST) &&
		    write_text(agent_leaf, "cgroup.procs", "0") == 0) {
			agent_log(AGENT_LOG_INFO, "moved into cgroup %s, so that %s can enable "
				  "controllers for the job cgroups", agent_leaf, root);
			e = enable_controllers(root);
		}
	}
	if (snprintf(cg->node_dir, sizeof(cg->node_dir), "%s/%s", root, node_dir_name) >=
	    (int)sizeof(cg->node_dir))
		goto too_long;
	if (mkdir(cg->node_dir, 0755) < 0 && errno != EEXIST) {
		e = -errno;
		agent_log(AGENT_LOG_WARNING, "no per-job cgroups: cannot create %s: %s; job "
			  "processes are stopped by process group, and a restarted agent cannot "
			  "find what an earlier one left; run the agent as root, under systemd with "
			  "Delegate=yes (ascend-agent.service does), or give --cgroup-root a "
			  "directory it may write", cg->node_dir, strerror(-e));
		cg->node_dir[0] = '\0';
		return;
	}
	enable_controllers(cg->node_dir);
	cg->memory = file_has_word(cg->node_dir, "cgroup.subtree_control", "memory");
	cg->enabled = true;
	if (cg->memory)
		agent_log(AGENT_LOG_INFO, "job processes run in cgroups below %s (CPU time and "
			  "memory accounted)", cg->node_dir);
	else
		agent_log(AGENT_LOG_INFO, "job processes run in cgroups below %s; CPU time is "
			  "accounted, memory is not (the memory controller is not enabled for %s%s)",
			  cg->node_dir, root,
			  own && getenv("INVOCATION_ID") ?
				  ": under systemd give the unit DelegateSubgroup=agent (systemd "
				  "254 and later) so that the agent's own cgroup may enable it" :
				  "");
	return;

too_long:
	agent_log(AGENT_LOG_WARNING, "no per-job cgroups: the cgroup path is too long");
}

int agent_cgroup_make(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int agent_cgroup_open_procs(const char *path)
{
	char p[PATH_MAX];
	int fd;

	if (snprintf(p, sizeof(p), "%s/cgroup.procs", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

bool agent_cgroup_is_populated(const char *path)
{
	unsigned long long v = 0;
	char *buf = NULL;
	size_t len = 0;
	bool populated;

	if (read_small(path, "cgroup.events", &buf, &len) < 0)
		return false;
	populated = agent_cgroup_keyed(buf, len, "populated", &v) == 0 && v != 0;
	free(buf);
	return populated;
}

/* Send @sig to every process of @path and of the cgroups below it. */
static unsigned signal_tree(const char *path, int sig, int depth)
{
	char *buf = NULL, *save = NULL;
	size_t len = 0;
	unsigned n = 0;
	DIR *d;
	struct dirent *de;

	if (read_small(path, "cgroup.procs", &buf, &len) == 0) {
		for (char *w = strtok_r(buf, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
			long pid = strtol(w, NULL, 10);

			if (pid > 1 && kill((pid_t)pid, sig) == 0)
				n++;
		}
		free(buf);
	}
	if (depth >= DEPTH_MAX || !(d = opendir(path)))
		return n;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) < (int)sizeof(sub))
			n += signal_tree(sub, sig, depth + 1);
	}
	closedir(d);
	return n;
}

unsigned agent_cgroup_signal(const char *path, int sig)
{
	return signal_tree(path, sig, 0);
}

int agent_cgroup_kill(const char *path)
{
	int e = write_text(path, "cgroup.kill", "1");

	if (e == 0)
		return 0;
	/* before Linux 5.14: one by one (a process forking meanwhile is caught next time) */
	signal_tree(path, SIGKILL, 0);
	return e;
}

static int remove_tree(const char *path, int depth)
{
	DIR *d;
	struct dirent *de;

	if (depth < DEPTH_MAX && (d = opendir(path))) {
		while ((de = readdir(d))) {
			char sub[PATH_MAX];

			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) <
			    (int)sizeof(sub))
				remove_tree(sub, depth + 1);
		}
		closedir(d);
	}
	return rmdir(path) < 0 && errno != ENOENT ? -errno : 0;
}

int agent_cgroup_remove(const char *path)
{
	return remove_tree(path, 0);
}

int agent_cgroup_usage(const char *path, uint64_t *ret_cpu_usec, uint64_t *ret_memory_bytes)
{
	unsigned long long cpu = 0, mem = 0;
	char *buf = NULL;
	size_t len = 0;
	int e;

	e = read_small(path, "cpu.stat", &buf, &len);
	if (e < 0)
		return e;
	e = agent_cgroup_keyed(buf, len, "usage_usec", &cpu);
	free(buf);
	if (e < 0)
		return e;
	/* memory.peak (Linux 5.19) is what a job needs; memory.current what it holds now */
	buf = NULL;
	if (read_small(path, "memory.peak", &buf, &len) == 0 ||
	    read_small(path, "memory.current", &buf, &len) == 0) {
		if (len && buf[len - 1] == '\n')
			buf[len - 1] = '\0';
		mem = strtoull(buf, NULL, 10);
	}
	free(buf);
	/* the report carries at most CONF_HEALTH_USAGE_VALUE_MAX: say that much, not nothing */
	*ret_cpu_usec = cpu > CONF_HEALTH_USAGE_VALUE_MAX ? CONF_HEALTH_USAGE_VALUE_MAX : cpu;
	*ret_memory_bytes = mem > CONF_HEALTH_USAGE_VALUE_MAX ? CONF_HEALTH_USAGE_VALUE_MAX : mem;
	return 0;
}

int agent_cgroups_list(const struct agent_cgroups *cg, char ***ret_names, size_t *ret_count)
{
	char **names = NULL, **n;
	size_t count = 0;
	struct dirent *de;
	DIR *d = opendir(cg->node_dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		n = realloc(names, (count + 1) * sizeof(*n));
		if (!n || !(n[count] = strdup(de->d_name))) {
			names = n ? n : names;
			while (count)
				free(names[--count]);
			free(names);
			closedir(d);
			return -ENOMEM;
		}
		names = n;
		count++;
	}
	closedir(d);
	*ret_names = names;
	*ret_count = count;
	return 0;
}
