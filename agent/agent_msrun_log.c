/* SPDX-License-Identifier: MIT */
/*
 * What msrun writes of its workers, shipped to the head (agent_internal.h). With
 * launch: msrun the agent runs msrun, which writes each worker's output to files of its
 * own rather than to its stdout: the agent points its --log_dir at a directory of the
 * run (<run dir>/msrun, the job's user's, so msrun can write it) and ships those files
 * as the workers' lines. Only this server's files are looked at, by the names msrun
 * gives them (never a listing: a --log_dir several servers share would have every
 * server's), and each is read only as agent_ship_io.c's open_src() allows.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_internal.h"

/* worker logs and the scheduler's */
#define MSRUN_LOGS_MAX (CONF_SERVER_NPUS_MAX + 1)

struct agent_msrun_log {
	char name[32];		/* worker_<rank>.log or scheduler.log */
	char process[24];	/* rank-<rank> or scheduler */
	char mark[PATH_MAX];	/* <run dir>/msrun-<process>: its offset (.shipped) */
	long long shipped;
	int error;		/* why it could not be read last time (agent_ship_src) */
};

struct agent_msrun_logs {
	char dir[PATH_MAX];	/* <run dir>/msrun */
	int dirfd;
	uid_t owner;		/* whose files msrun's are: the uid it runs as */
	char *args;		/* MSRUN_ARGS with --log_dir=<dir> */
	size_t count;
	struct agent_msrun_log logs[MSRUN_LOGS_MAX];
};

/*
 * Can @uid (primary group @gid) reach @dir, every directory down to it searchable? Its
 * supplementary groups are not asked: a directory only they open reads as no (then
 * msrun writes where MSRUN_ARGS said, as before).
 */
static bool reachable_by(const char *dir, uid_t uid, gid_t gid)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (uid == 0)
		return true;
	if (len >= sizeof(path))
		return false;
	memcpy(path, dir, len + 1);
	for (size_t end = 1; end <= len; end++) {
		struct stat st;
		char c = path[end];

		if (c != '/' && c != '\0')
			continue;
		path[end] = '\0';
		if (stat(path, &st) < 0 ||
		    !(st.st_uid == uid ? st.st_mode & S_IXUSR :
		      st.st_gid == gid ? st.st_mode & S_IXGRP : st.st_mode & S_IXOTH))
			return false;
		path[end] = c;
	}
	return true;
}

/*
 * <run dir>/msrun, made for @owner:@group when @give (the agent is root, the job not);
 * a descriptor of it, or -errno. The run directory is the agent's; msrun/ is the
 * user's, who may have put a link or a mount on it: it is opened from the run
 * directory's descriptor without following either (openat2(2); -ENOSYS before Linux
 * 5.6).
 */
static int make_dir(const char *run_dir, uid_t owner, gid_t group, bool give)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV,
	};
	struct stat st;
	int runfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e = 0;
	long fd = -1;

	if (runfd < 0)
		return -errno;
	if (mkdirat(runfd, "msrun", 0755) < 0 && errno != EEXIST)
		e = -errno;
	if (e == 0 && (fd = syscall(SYS_openat2, runfd, "msrun", &how, sizeof(how))) < 0)
		e = -errno;
	close(runfd);
	if (e == 0 && (fstat((int)fd, &st) < 0 ||
		       (give && (st.st_uid != owner || st.st_gid != group) &&
			fchown((int)fd, owner, group) < 0)))
		e = -errno;
	if (e < 0) {
		if (fd >= 0)
			close((int)fd);
		return e;
	}
	return (int)fd;
}

int agent_msrun_logs_open(const char *run_dir, const struct agent_env *env, uid_t owner,
			  gid_t group, bool give, struct agent_msrun_logs **ret)
{
	const char *args = agent_env_get(env, "MSRUN_ARGS");
	struct agent_msrun_logs *m;
	unsigned node_rank, workers;
	int r;

	if (!args)
		return -ENOENT;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dirfd = -1;
	m->owner = owner;
	if (snprintf(m->dir, sizeof(m->dir), "%s/msrun", run_dir) >= (int)sizeof(m->dir)) {
		r = -ENAMETOOLONG;
		goto fail;
	}
	r = agent_msrun_args(args, m->dir, &m->args, &node_rank, &workers);
	if (r < 0)
		goto fail;
	/* msrun, as the job's user, must get there to write */
	if (give && !reachable_by(run_dir, owner, group)) {
		r = -EACCES;
		goto fail;
	}
	r = make_dir(run_dir, owner, group, give);
	if (r < 0)
		goto fail;
	m->dirfd = r;
	for (unsigned i = 0; i <= workers; i++) {
		struct agent_msrun_log *g = &m->logs[m->count];
		char process[sizeof(g->process)];
		long long off;

		if (i < workers) {
			unsigned rank = node_rank * workers + i;

			snprintf(g->name, sizeof(g->name), "worker_%u.log", rank);
			snprintf(process, sizeof(process), "rank-%u", rank);
		} else if (node_rank == 0) {
			snprintf(g->name, sizeof(g->name), "scheduler.log");
			snprintf(process, sizeof(process), "scheduler");
		} else {
			break;
		}
		memcpy(g->process, process, sizeof(process));
		if (snprintf(g->mark, sizeof(g->mark), "%s/msrun-%s", run_dir, process) >=
		    (int)sizeof(g->mark)) {
			r = -ENAMETOOLONG;
			goto fail;
		}
		/* from where an earlier agent stopped */
		off = agent_ship_offset_load(g->mark);
		g->shipped = off > 0 ? off : 0;
		m->count++;
	}
	*ret = m;
	return 0;
fail:
	agent_msrun_logs_free(m);
	return r;
}

int agent_msrun_logs_env(const struct agent_msrun_logs *m, struct agent_env *env)
{
	return agent_env_set(env, "MSRUN_ARGS", m->args);
}

size_t agent_msrun_logs_srcs(const struct agent_msrun_logs *m, struct agent_ship_src *srcs,
			     size_t max, bool final)
{
	size_t n = 0;

	for (; n < m->count && n < max; n++) {
		const struct agent_msrun_log *g = &m->logs[n];

		srcs[n] = (struct agent_ship_src){
			.path = g->name, .dirfd = m->dirfd, .owner = m->owner, .where = m->dir,
			.mark = g->mark, .error = g->error, .shipped = g->shipped, .final = final,
		};
		snprintf(srcs[n].process, sizeof(srcs[n].process), "%s", g->process);
	}
	return n;
}

void agent_msrun_logs_shipped(struct agent_msrun_logs *m, const struct agent_ship_src *srcs,
			      size_t n)
{
	for (size_t i = 0; i < n && i < m->count; i++) {
		m->logs[i].shipped = srcs[i].shipped;
		m->logs[i].error = srcs[i].error;
	}
}

void agent_msrun_logs_rewind(struct agent_msrun_logs *m, unsigned attempt)
{
	for (size_t i = 0; i < m->count; i++) {
		char path[PATH_MAX + 16], kept[48];

		/* an agent restarted from here on starts from the start too (first: a line
		 * shipped twice is better than one lost) */
		if (snprintf(path, sizeof(path), "%s.shipped", m->logs[i].mark) < (int)sizeof(path))
			unlink(path);
		/* msrun opens them with "w": what it wrote before is kept beside, under its
		 * attempt's number, and the new files are shipped from their start */
		snprintf(kept, sizeof(kept), "%s.%u", m->logs[i].name, attempt);
		renameat(m->dirfd, m->logs[i].name, m->dirfd, kept);
		m->logs[i].shipped = 0;
	}
}

void agent_msrun_logs_free(struct agent_msrun_logs *m)
{
	if (!m)
		return;
	if (m->dirfd >= 0)
		close(m->dirfd);
	free(m->args);
	free(m);
}
