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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_internal.h"

/* worker logs and the scheduler's */
#define MSRUN_LOGS_MAX (CONF_SERVER_NPUS_MAX + 1)

struct agent_msrun_log {
	char name[32];		/* worker_<rank>.log or scheduler.log */
	char process[24];	/* rank-<rank> or scheduler */
	char mark[PATH_MAX];	/* <run dir>/msrun-<process>: its offset (.shipped) */
	long long shipped;
};

struct agent_msrun_logs {
	char dir[PATH_MAX];	/* <run dir>/msrun */
	int dirfd;
	uid_t owner;		/* whose files msrun's are: the uid it runs as */
	char *args;		/* MSRUN_ARGS with --log_dir=<dir> */
	size_t count;
	struct agent_msrun_log logs[MSRUN_LOGS_MAX];
};

/* <run dir>/msrun, made for @owner:@group when @give (the agent is root, the job not). */
static int make_dir(const char *dir, uid_t owner, gid_t group, bool give)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* the run directory is the agent's: what is there is what it made (or an earlier
	 * agent did); not a link all the same */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (give && (st.st_uid != owner || st.st_gid != group) &&
				   fchown(fd, owner, group) < 0)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
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
	r = make_dir(m->dir, owner, group, give);
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
			.path = g->name, .dirfd = m->dirfd, .owner = m->owner, .mark = g->mark,
			.shipped = g->shipped, .final = final,
		};
		snprintf(srcs[n].process, sizeof(srcs[n].process), "%s", g->process);
	}
	return n;
}

void agent_msrun_logs_shipped(struct agent_msrun_logs *m, const struct agent_ship_src *srcs,
			      size_t n)
{
	for (size_t i = 0; i < n && i < m->count; i++)
		m->logs[i].shipped = srcs[i].shipped;
}

void agent_msrun_logs_rewind(struct agent_msrun_logs *m, unsigned attempt)
{
	for (size_t i = 0; i < m->count; i++) {
		char path[PATH_MAX + 16], kept[48];

		/* msrun opens them with "w": what it wrote before is kept beside, under its
		 * attempt's number, and the new files are shipped from their start */
		snprintf(kept, sizeof(kept), "%s.%u", m->logs[i].name, attempt);
		renameat(m->dirfd, m->logs[i].name, m->dirfd, kept);
		m->logs[i].shipped = 0;
		/* an agent restarted meanwhile starts from the start too */
		if (snprintf(path, sizeof(path), "%s.shipped", m->logs[i].mark) < (int)sizeof(path))
			unlink(path);
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
