/* SPDX-License-Identifier: MIT */
/*
 * The process launcher of ascend-agent (agent_internal.h says what it does). The
 * daemon's listing nodes/<node>/jobs is the truth: what is listed runs, what is not
 * listed is stopped. Nothing here blocks for long: starting a process waits for its exec
 * (bounded), everything else is a waitpid(WNOHANG), a kill or a small file.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "agent_internal.h"

extern char **environ;

/* How long a new process may take to reach exec() before we stop waiting for it. */
#define EXEC_WAIT_MS 10000
/* Retry of a sync that could not finish (an exit not reported, a start deferred). */
#define RETRY_MS 1000
/* Polling of process groups whose leader is gone but whose members are not. */
#define GROUP_POLL_MS 200
/* Supplementary groups of a job's owner. */
#define GROUPS_MAX 256
/* The status reported for a process that could not be started (sh: "cannot execute"). */
#define EXIT_NOT_STARTED 127
/* The status reported for a process lost with an earlier agent (128 + SIGKILL). */
#define EXIT_LOST 137
/* How often the new output of the processes is shipped to the head: what `tail -f
 * jobs/<job>/log` lags by at most (and what one pass sends at least: a line a second). */
#define SHIP_INTERVAL_MS 1000
/* Polling of the cgroups of adopted processes (not our children: no SIGCHLD). */
#define ADOPTED_POLL_MS 1000

/* Readiness checks of a service's instance on its master's server (agent_ready.c): how
 * long a connect may take, and how often: until it answers, and once it does. */
#define READY_TIMEOUT_MS 200
#define READY_POLL_MS 500
#define READY_RECHECK_MS 2000

/* proc.rank of the MindSpore scheduler of a per-rank job in dynamic mode */
#define PROC_SCHEDULER (-2)

struct proc {
	int rank;		/* -1 for msrun: one process per server; PROC_SCHEDULER */
	pid_t pid;		/* the leader, whose pid is the process group id; 0 = none
				 * (not started, or its group has emptied) */
	bool running;		/* started, not reaped */
	int code;		/* 0-255, as reported, once it has exited */
	bool report_due;	/* the exit is still to be reported */
	char *cgroup;		/* owned: its leaf cgroup (<run cgroup>/node or rank-<r>);
				 * NULL without per-job cgroups */
	bool adopted;		/* left running by an earlier agent: watched through its
				 * cgroup until it empties */
	unsigned attempt;	/* the share's attempt it was started in (in-place
				 * restarts): its exit report says it */
	bool shipping;		/* its local log is shipped to jobs/<job>/log */
	long long shipped;	/* ... up to this byte (agent_ship_io.c) */
	int ship_error;		/* why its log could not be read last time (logged once) */
	struct agent_msrun_logs *msrun; /* owned: a msrun's workers' logs, shipped too
				 * (agent_msrun_log.c); NULL = none */
};

enum run_state {
	RUN_ACTIVE,		/* listed: its processes run (or ran) */
	RUN_IDLE,		/* listed, nothing to run (no command) */
	RUN_STOPPING,		/* no longer listed: SIGTERM sent, SIGKILL at kill_at_ms */
};

/* One (job, generation) this server runs. */
struct run {
	struct agent_share share;
	enum run_state state;
	char submitted[48];	/* the job's submission time: its identity across restarts */
	char dir[PATH_MAX];	/* <log-dir>/<job>/g<generation> */
	long long stop_ms;	/* when stopping began */
	long long kill_at_ms;	/* STOPPING: SIGKILL then */
	bool signalled;		/* STOPPING: a process group was sent a signal */
	bool killed;		/* STOPPING: SIGKILL sent */
	int wd;			/* inotify watch of jobs/<job>/status.json, or -1 */
	char cgroup[PATH_MAX];	/* <node dir>/job-<job>.g<generation>; "" = none */
	bool listed;		/* scratch of sync() */
	/* a service's instance whose master this server is: where it serves (HOST_IP of
	 * its env, the spec's port; port 0: no check) and what was last reported */
	char ready_host[48];
	unsigned ready_port;
	long long ready_at_ms;	/* the next check */
	bool ready_sent;	/* "ready" reported, and no "unready" since */
	bool ship_off;		/* the daemon took no output of it (job gone, refused) */
	unsigned ship_failures;	/* passes in a row that could not ship (logged 1 in 60) */
	size_t proc_count;
	struct proc procs[CONF_SERVER_NPUS_MAX + 1]; /* + the scheduler */
};

struct agent_launcher {
	struct agent_launcher_options o;
	struct run *runs[AGENT_RUNS_MAX];
	size_t run_count;
	int inotify_fd;
	int jobs_wd;		/* watch of nodes/<node>/jobs, or -1 */
	bool stopping_all;
	bool standby;		/* another agent's reports count for this server: start and
				 * stop nothing (agent_launcher_set_standby()) */
	bool report_due;	/* a run no longer listed has no process left: say so now */
	bool is_root;
	struct agent_cgroups cg;
	bool scanned;		/* the cgroups an earlier agent left were looked at */
	long long retry_at_ms;	/* 0 = nothing to retry */
	long long ship_at_ms;	/* the next shipping of output (0: none due) */
	char last_problem[PATH_MAX + 256];
	struct agent_share shares[AGENT_SHARES_MAX]; /* scratch of sync() */
};

/* Log @msg unless it repeats the last listing problem; "" clears it. */
static void log_problem(struct agent_launcher *l, enum agent_log_level level, const char *msg)
{
	if (strcmp(l->last_problem, msg) == 0)
		return;
	snprintf(l->last_problem, sizeof(l->last_problem), "%s", msg);
	if (msg[0])
		agent_log(level, "%s", msg);
}

/* "job llama generation 2 rank 5" or "job llama generation 2 (node rank 1)". */
static const char *proc_label(const struct run *r, const struct proc *p, char *buf, size_t len)
{
	if (p->rank >= 0)
		snprintf(buf, len, "job %s generation %u rank %d", r->share.job,
			 r->share.generation, p->rank);
	else if (p->rank == PROC_SCHEDULER)
		snprintf(buf, len, "job %s generation %u MindSpore scheduler (MS_SCHED)",
			 r->share.job, r->share.generation);
	else
		snprintf(buf, len, "job %s generation %u (node rank %u)", r->share.job,
			 r->share.generation, r->share.node_rank);
	return buf;
}

/* <dir>/rank-<r> or <dir>/node-<node>, without extension. */
static int proc_base(const struct agent_launcher *l, const struct run *r, const struct proc *p,
		     char *buf, size_t len)
{
	int n;

	if (!r->dir[0])
		return -ENOENT;
	if (p->rank >= 0)
		n = snprintf(buf, len, "%s/rank-%d", r->dir, p->rank);
	else if (p->rank == PROC_SCHEDULER)
		n = snprintf(buf, len, "%s/scheduler", r->dir);
	else
		n = snprintf(buf, len, "%s/node-%s", r->dir, l->o.node);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static const char *status_text(int wait_status, char *buf, size_t len)
{
	if (WIFEXITED(wait_status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(wait_status));
	else if (WIFSIGNALED(wait_status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(wait_status),
			 strsignal(WTERMSIG(wait_status)));
	else
		snprintf(buf, len, "status 0x%x", (unsigned)wait_status);
	return buf;
}

/* Does process group @pgid still have a member? */
static bool group_is_alive(pid_t pgid)
{
	return pgid > 0 && (kill(-pgid, 0) == 0 || errno == EPERM);
}

static bool proc_is_alive(const struct proc *p)
{
	if (p->cgroup)
		return p->running || agent_cgroup_is_populated(p->cgroup);
	return p->running || (p->pid > 0 && group_is_alive(p->pid));
}

static bool run_is_alive(const struct run *r)
{
	for (size_t i = 0; i < r->proc_count; i++)
		if (proc_is_alive(&r->procs[i]))
			return true;
	return false;
}

/* ---- files of the mount and of the log directory ---- */

static int mount_path(const struct agent_launcher *l, char *buf, size_t len, const char *job,
		      const char *rel)
{
	int n = snprintf(buf, len, "%s/jobs/%s/%s", l->o.mount, job, rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Replace @path with @text atomically (write a temporary file, rename it). */
static int write_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX + 8];
	size_t len = strlen(text);
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = agent_write_all(fd, text, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Record a process's state beside its log ("started <pid>", "exit <code>" ...). */
static void state_write(const struct agent_launcher *l, const struct run *r,
			const struct proc *p, const char *what, long value)
{
	char base[PATH_MAX], path[PATH_MAX + 8], text[128];
	int e;

	if (proc_base(l, r, p, base, sizeof(base)) < 0)
		return;
	snprintf(path, sizeof(path), "%s.state", base);
	snprintf(text, sizeof(text), "%s %ld %s\n", what, value,
		 r->submitted[0] ? r->submitted : "-");
	e = write_atomic(path, text);
	if (e < 0)
		agent_log(AGENT_LOG_WARNING, "cannot write %s: %s (an agent restarted now would "
			  "not know this process)", path, strerror(-e));
}

/* Does the file open at @fd end in something other than a newline? */
static bool ends_mid_line(int fd)
{
	struct stat st;
	char last;

	return fstat(fd, &st) == 0 && st.st_size > 0 &&
	       pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
}

/* Append "# <time> ascend-agent: <text>" to a process's log. */
static void log_note(const struct agent_launcher *l, const struct run *r, const struct proc *p,
		     const char *text)
{
	char base[PATH_MAX], path[PATH_MAX + 8], when[40], line[1024];
	int fd, n;

	if (proc_base(l, r, p, base, sizeof(base)) < 0)
		return;
	snprintf(path, sizeof(path), "%s.log", base);
	fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	/* on a line of its own, after output that did not end in a newline */
	n = snprintf(line, sizeof(line), "%s# %s ascend-agent[%s]: %s\n",
		     ends_mid_line(fd) ? "\n" : "", agent_time_text(when, sizeof(when)),
		     l->o.node, text);
	if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		n = 0;
	close(fd);
}

/* The job's submission time from status.json into @out ("" when unknown). */
static int read_submitted(const struct agent_launcher *l, const char *job, char *out, size_t len)
{
	char path[PATH_MAX], *buf = NULL;
	size_t n = 0;
	json_t *root, *v;
	int r;

	out[0] = '\0';
	r = mount_path(l, path, sizeof(path), job, "status.json");
	if (r < 0)
		return r;
	r = agent_read_file(path, AGENT_LAUNCH_FILE_MAX_BYTES, &buf, &n);
	if (r < 0)
		return r;
	root = json_loadb(buf, n, 0, NULL);
	free(buf);
	v = json_is_object(root) ? json_object_get(root, "submitted") : NULL;
	if (json_is_string(v))
		snprintf(out, len, "%s", json_string_value(v));
	json_decref(root);
	return 0;
}

/* ---- reporting ---- */

/* Write @line to jobs/<job>/ctl in one open/write/close. */
static int write_ctl(const struct agent_launcher *l, const char *job, const char *line)
{
	char path[PATH_MAX];
	size_t len = strlen(line);
	ssize_t n;
	int fd, r = 0;

	r = mount_path(l, path, sizeof(path), job, "ctl");
	if (r < 0)
		return r;
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		r = -errno;
	else if ((size_t)n != len)
		r = -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* Does the daemon serve its files at the mount (its cluster/ is there)? */
static bool mount_is_served(const struct agent_launcher *l)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/cluster/status", l->o.mount) >= (int)sizeof(path))
		return true;
	return access(path, F_OK) == 0;
}

/* ---- shipping output to jobs/<job>/log (agent_ship_io.c) ---- */

/* An earlier agent's process, taken over: its output is shipped from where that agent
 * stopped (from the start when it kept no offset). */
static void ship_adopt(struct agent_launcher *l, const struct run *r, struct proc *p)
{
	char base[PATH_MAX], path[PATH_MAX + 8];
	long long off;

	if (proc_base(l, r, p, base, sizeof(base)) < 0)
		return;
	snprintf(path, sizeof(path), "%s.log", base);
	off = agent_ship_offset_load(path);
	p->shipped = off > 0 ? off : 0;
	p->shipping = true;
	if (!l->ship_at_ms)
		l->ship_at_ms = agent_now_ms() + SHIP_INTERVAL_MS;
}

/*
 * Ship the new output of @r's processes, and what msrun wrote of its workers; an ended
 * process's last partial line too. *@ret_more: a log had more than one pass reads.
 * Returns false when it should be tried again (the mount is not there now).
 */
static bool ship_run_once(struct agent_launcher *l, struct run *r, bool *ret_more)
{
	struct agent_ship_src srcs[AGENT_SHIP_SRCS_MAX];
	struct proc *of[AGENT_SHIP_SRCS_MAX];
	size_t msrun_at[AGENT_SHIP_SRCS_MAX], msrun_n[AGENT_SHIP_SRCS_MAX];
	char (*paths)[PATH_MAX + 8];
	size_t n = 0;
	bool more = false;
	int e;

	*ret_more = false;
	if (r->ship_off || !r->dir[0] || l->standby)
		return true;
	paths = malloc(AGENT_SHIP_SRCS_MAX * sizeof(*paths));
	if (!paths)
		return false;
	for (size_t k = 0; k < r->proc_count; k++) {
		struct proc *p = &r->procs[k];
		char base[PATH_MAX];

		msrun_n[k] = 0;
		if (!p->shipping || n >= AGENT_SHIP_SRCS_MAX ||
		    proc_base(l, r, p, base, sizeof(base)) < 0)
			continue;
		snprintf(paths[n], sizeof(paths[n]), "%s.log", base);
		srcs[n] = (struct agent_ship_src){ .path = paths[n], .dirfd = -1,
						   .error = p->ship_error };
		if (p->rank >= 0)
			snprintf(srcs[n].process, sizeof(srcs[n].process), "rank-%d", p->rank);
		else
			snprintf(srcs[n].process, sizeof(srcs[n].process), "%s",
				 p->rank == PROC_SCHEDULER ? "scheduler" : "node");
		srcs[n].shipped = p->shipped;
		srcs[n].final = !proc_is_alive(p);
		of[n++] = p;
		if (p->msrun) { /* (msrun --join=True ends after its workers) */
			msrun_at[k] = n;
			msrun_n[k] = agent_msrun_logs_srcs(p->msrun, srcs + n,
							   AGENT_SHIP_SRCS_MAX - n,
							   !proc_is_alive(p));
			for (size_t i = 0; i < msrun_n[k]; i++)
				of[n + i] = NULL;
			n += msrun_n[k];
		}
	}
	e = n ? agent_ship_send(l->o.mount, r->share.home, l->o.node, r->share.generation, srcs,
				n, &more) :
		0;
	free(paths);
	/* (a failed send leaves the offsets as they were; the reasons are new all the same) */
	for (size_t i = 0; i < n; i++)
		if (of[i]) {
			of[i]->shipped = srcs[i].shipped;
			of[i]->ship_error = srcs[i].error;
		}
	for (size_t k = 0; k < r->proc_count; k++)
		if (msrun_n[k])
			agent_msrun_logs_shipped(r->procs[k].msrun, srcs + msrun_at[k], msrun_n[k]);
	if (e == 0) {
		if (r->ship_failures)
			agent_log(AGENT_LOG_INFO, "job %s generation %u: its output is shipped "
				  "again", r->share.job, r->share.generation);
		r->ship_failures = 0;
		*ret_more = more;
		return true;
	}
	if (e == -ENOENT && !mount_is_served(l))
		return false;
	if (e == -ENOENT || e == -EINVAL || e == -EACCES || e == -EPERM) {
		agent_log(e == -ENOENT ? AGENT_LOG_INFO : AGENT_LOG_WARNING,
			  "job %s generation %u: its output is no longer shipped to %s/jobs/%s/log: "
			  "%s%s", r->share.job, r->share.generation, l->o.mount, r->share.home,
			  strerror(-e),
			  e == -ENOENT ? " (the job is gone)" :
			  e == -EINVAL ? " (the daemon refused a line: see the job's events)" :
					 " (run the agent as root or an operator)");
		r->ship_off = true;
		return true;
	}
	if (r->ship_failures++ % 60 == 0)
		agent_log(AGENT_LOG_WARNING, "job %s generation %u: cannot ship its output to "
			  "%s/jobs/%s/log: %s; trying again every %d ms (the lines stay in %s)",
			  r->share.job, r->share.generation, l->o.mount, r->share.home,
			  strerror(-e), SHIP_INTERVAL_MS, r->dir);
	return false;
}

static bool ship_run(struct agent_launcher *l, struct run *r)
{
	bool more, ok = ship_run_once(l, r, &more);

	if (more) /* a log ahead of what one pass reads: the next pass soon */
		l->ship_at_ms = agent_now_ms() + 50;
	return ok;
}

/*
 * Before msrun starts again in place (it writes its workers' logs anew): ship what the
 * ended attempt's logs still hold, a bounded number of passes, then keep them aside.
 */
static void ship_before_msrun_restart(struct agent_launcher *l, struct run *r, struct proc *p)
{
	bool more = true, ok = true;
	char label[160];

	for (int pass = 0; pass < 16 && more && ok; pass++)
		ok = ship_run_once(l, r, &more);
	if (!ok || more || r->ship_off)
		agent_log(AGENT_LOG_WARNING, "%s: restarting msrun in place before all its workers' "
			  "lines reached the head: the rest stay in %s/msrun, as <file>.%u",
			  proc_label(r, p, label, sizeof(label)), r->dir, p->attempt);
	agent_msrun_logs_rewind(p->msrun, p->attempt);
}

/*
 * A msrun node process @p of @r about to start with @env: its workers' logs go to
 * <run dir>/msrun, shipped from there (agent_msrun_log.c). A msrun that cannot be
 * pointed there writes where MSRUN_ARGS said, not shipped: said once.
 */
static void msrun_logs_prepare(struct agent_launcher *l, struct run *r, struct proc *p,
			       struct agent_env *env)
{
	bool give = l->is_root && r->share.uid != 0;
	char label[160];
	int e = 0;

	if (r->share.launch != CONF_LAUNCH_MSRUN || p->rank != -1)
		return;
	if (!p->msrun)
		e = agent_msrun_logs_open(r->dir, env, give ? (uid_t)r->share.uid : geteuid(),
					  give ? (gid_t)r->share.gid : getegid(), give, &p->msrun);
	if (e == 0)
		e = agent_msrun_logs_env(p->msrun, env);
	if (e < 0)
		agent_log(AGENT_LOG_WARNING, "%s: msrun's worker logs are not shipped to the head: "
			  "%s; msrun writes them where MSRUN_ARGS' --log_dir says (relative to "
			  "the job's checkpoint_dir, else to %s)",
			  proc_label(r, p, label, sizeof(label)),
			  e == -EACCES ? "the job's user cannot reach the agent's --log-dir (make "
					 "its parents searchable by others)" :
			  e == -ENOSYS ? "this kernel has no openat2() (Linux 5.6 or later)" :
			  e == -EINVAL ? "MSRUN_ARGS does not parse, or --log-dir has a byte the "
					 "shell would split or expand" :
			  e == -ENOENT ? "MSRUN_ARGS has no --log_dir, --node_rank or "
					 "--local_worker_num" :
					 strerror(-e), r->dir);
}

/* Ship every run's new output, once SHIP_INTERVAL_MS has passed. */
static void ship_due(struct agent_launcher *l)
{
	long long now = agent_now_ms();
	bool any = false;

	if (!l->ship_at_ms || now < l->ship_at_ms)
		return;
	l->ship_at_ms = now + SHIP_INTERVAL_MS;
	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];

		ship_run(l, r);
		for (size_t k = 0; k < r->proc_count; k++)
			any |= r->procs[k].shipping && !r->ship_off;
	}
	if (!any)
		l->ship_at_ms = 0; /* nothing to ship until a process starts */
}

/* Report the exit of @p; false when it should be tried again later. */
static bool report_exit(struct agent_launcher *l, struct run *r, struct proc *p)
{
	char line[256], label[160];
	int e;

	if (p->rank == PROC_SCHEDULER) {
		/* as msrun: the workers' exits decide the job; a scheduler lost makes them fail */
		p->report_due = false;
		return true;
	}
	/* a process started again in place says which attempt ended: a report of an
	 * earlier one, sent again, is then not taken for it */
	if (r->share.role[0])
		snprintf(line, sizeof(line), "exit %u %s %d %s\n", r->share.generation,
			 l->o.node, p->code, r->share.role);
	else if (p->attempt > 0 && p->rank >= 0)
		snprintf(line, sizeof(line), "exit %u %s %d %d %u\n", r->share.generation,
			 l->o.node, p->code, p->rank, p->attempt);
	else if (p->attempt > 0)
		snprintf(line, sizeof(line), "exit %u %s %d - %u\n", r->share.generation,
			 l->o.node, p->code, p->attempt);
	else if (p->rank >= 0)
		snprintf(line, sizeof(line), "exit %u %s %d %d\n", r->share.generation, l->o.node,
			 p->code, p->rank);
	else
		snprintf(line, sizeof(line), "exit %u %s %d\n", r->share.generation, l->o.node,
			 p->code);
	proc_label(r, p, label, sizeof(label));
	e = write_ctl(l, r->share.home, line);
	if (e == 0) {
		agent_log(AGENT_LOG_INFO, "%s: reported exit status %d", label, p->code);
		p->report_due = false;
		return true;
	}
	switch (-e) {
	case ENOENT:
		/* no daemon mounted there (it restarts): the job is not gone, the mount is */
		if (!mount_is_served(l)) {
			agent_log(AGENT_LOG_WARNING, "%s: cannot report exit status %d: the "
				  "daemon's files are not at %s (is it restarting?); trying again",
				  label, p->code, l->o.mount);
			return false;
		}
		agent_log(AGENT_LOG_WARNING, "%s: cannot report exit status %d: the job no longer "
			  "exists", label, p->code);
		break;
	case EINVAL:
	case EBUSY:
		agent_log(AGENT_LOG_ERROR, "%s: the daemon refused the exit report \"exit %u %s "
			  "%d\": see jobs/%s/events", label, r->share.generation, l->o.node,
			  p->code, r->share.job);
		break;
	case EPERM:
	case EACCES:
		agent_log(AGENT_LOG_ERROR, "%s: cannot report exit status %d: %s; run the agent as "
			  "root (or as the job's owner)", label, p->code, strerror(-e));
		break;
	default:
		agent_log(AGENT_LOG_WARNING, "%s: cannot report exit status %d: %s; trying again",
			  label, p->code, strerror(-e));
		return false;
	}
	p->report_due = false;
	return true;
}

/* Report every due exit of active runs. Returns true when one was reported. */
static bool report_due_exits(struct agent_launcher *l)
{
	bool any = false;

	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];

		bool shipped = false;

		if (r->state != RUN_ACTIVE)
			continue;
		for (size_t k = 0; k < r->proc_count; k++) {
			struct proc *p = &r->procs[k];

			if (!p->report_due)
				continue;
			/* its last lines reach the log before its exit is known: whoever
			 * waits for the job's end (ascend-run) has read them all by then.
			 * Only tried: a head that cannot take lines now costs lines (sent
			 * later, or lost), never the job's end */
			if (!shipped)
				ship_run(l, r);
			shipped = true;
			if (report_exit(l, r, p))
				any = true;
			else
				l->retry_at_ms = agent_now_ms() + RETRY_MS;
		}
	}
	return any;
}

/* ---- starting ---- */

/* Where a failed child says what failed: written to the exec pipe before _exit(). */
struct exec_failure {
	int stage;
	int err;
};

enum { STAGE_PGID, STAGE_STDIO, STAGE_GROUPS, STAGE_GID, STAGE_UID, STAGE_CHDIR,
       STAGE_PDEATHSIG, STAGE_CGROUP, STAGE_EXEC };

static const char *const stage_name[] = {
	"setpgid", "redirecting output", "setgroups", "setgid", "setuid", "chdir",
	"PR_SET_PDEATHSIG", "joining the job's cgroup", "exec /bin/sh",
};

/* Everything the child needs, prepared before fork(): it may call no allocator. */
struct child_plan {
	char *const *argv;
	char *const *envp;
	int log_fd;
	int pipe_fd;
	bool drop;
	uid_t uid;
	gid_t gid;
	gid_t groups[GROUPS_MAX];
	int group_count;
	const char *cwd;
	const char *cwd_fallback;
	pid_t parent;
	int cgroup_fd;		/* cgroup.procs of its leaf cgroup, or -1 */
};

static void child_fail(const struct child_plan *c, int stage)
{
	struct exec_failure f = { stage, errno };

	if (write(c->pipe_fd, &f, sizeof(f)) < 0)
		_exit(EXIT_NOT_STARTED);
	_exit(EXIT_NOT_STARTED);
}

/* In the child: async-signal-safe calls only. Never returns. */
static void child_exec(const struct child_plan *c)
{
	static const int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGQUIT };
	struct sigaction dfl;
	sigset_t none;
	int fd;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* first, so that everything it does is the job's (and a stop reaches it) */
	if (c->cgroup_fd >= 0 && write(c->cgroup_fd, "0", 1) != 1)
		child_fail(c, STAGE_CGROUP);
	if (setpgid(0, 0) < 0)
		child_fail(c, STAGE_PGID);
	fd = open("/dev/null", O_RDONLY | O_NOCTTY);
	if (fd < 0 || dup2(fd, STDIN_FILENO) < 0 || dup2(c->log_fd, STDOUT_FILENO) < 0 ||
	    dup2(c->log_fd, STDERR_FILENO) < 0)
		child_fail(c, STAGE_STDIO);
	if (fd > STDERR_FILENO)
		close(fd);
	if (c->drop) {
		if (setgroups((size_t)c->group_count, c->groups) < 0)
			child_fail(c, STAGE_GROUPS);
		if (setgid(c->gid) < 0)
			child_fail(c, STAGE_GID);
		if (setuid(c->uid) < 0)
			child_fail(c, STAGE_UID);
	}
	/* as the job's owner: a checkpoint directory it cannot enter falls back to the log */
	if (chdir(c->cwd) < 0 && chdir(c->cwd_fallback) < 0 && chdir("/") < 0)
		child_fail(c, STAGE_CHDIR);
	/*
	 * Without a cgroup, the processes die with the agent that would stop them (see
	 * agent_internal.h). In a cgroup they outlive a crashed agent: the next one adopts
	 * or stops them (agent.h).
	 */
	if (c->cgroup_fd < 0 && prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail(c, STAGE_PDEATHSIG);
	if (getppid() != c->parent)
		_exit(EXIT_LOST);
	execve("/bin/sh", c->argv, c->envp);
	child_fail(c, STAGE_EXEC);
}

/* Groups and identity variables of @uid, when the agent drops to it. */
static void plan_identity(struct child_plan *c, struct agent_env *ident)
{
	struct passwd pw, *found = NULL;
	char buf[4096], *var;
	int n = GROUPS_MAX;

	c->groups[0] = c->gid;
	c->group_count = 1;
	if (getpwuid_r(c->uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
		return;
	if (getgrouplist(pw.pw_name, c->gid, c->groups, &n) >= 0)
		c->group_count = n;
	else
		c->groups[0] = c->gid;
	/* HOME, USER, LOGNAME of the owner, not the agent's (the env file may still set them) */
	ident->vars = calloc(4, sizeof(char *));
	if (!ident->vars)
		return;
	if (asprintf(&var, "HOME=%s", pw.pw_dir) >= 0)
		ident->vars[ident->count++] = var;
	if (asprintf(&var, "USER=%s", pw.pw_name) >= 0)
		ident->vars[ident->count++] = var;
	if (asprintf(&var, "LOGNAME=%s", pw.pw_name) >= 0)
		ident->vars[ident->count++] = var;
}

/*
 * Start one process of run @r: /bin/sh -c @command with @env over the agent's
 * environment. On failure the process counts as exited with EXIT_NOT_STARTED.
 */
static void spawn(struct agent_launcher *l, struct run *r, struct proc *p, const char *command,
		  const char *checkpoint_dir, const struct agent_env *env)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)command, NULL };
	struct agent_env ident = { 0 };
	struct child_plan plan;
	struct exec_failure f;
	char base[PATH_MAX], path[PATH_MAX + 8], label[160], when[40], note[PATH_MAX + 512];
	char **envp0 = NULL, **envp1 = NULL, **envp = NULL, why[PATH_MAX + 128] = "";
	struct stat st;
	struct pollfd pfd;
	int fds[2] = { -1, -1 }, log_fd = -1, e;
	ssize_t n;
	pid_t pid;

	proc_label(r, p, label, sizeof(label));
	memset(&plan, 0, sizeof(plan));
	plan.uid = (uid_t)r->share.uid;
	plan.gid = (gid_t)r->share.gid;
	plan.drop = l->is_root && r->share.uid != 0;
	plan.cwd = checkpoint_dir && stat(checkpoint_dir, &st) == 0 && S_ISDIR(st.st_mode) ?
			   checkpoint_dir :
			   r->dir;
	plan.cwd_fallback = r->dir;
	plan.parent = getpid();
	plan.cgroup_fd = -1;
	if (plan.drop)
		plan_identity(&plan, &ident);

	e = proc_base(l, r, p, base, sizeof(base));
	if (e < 0) {
		snprintf(why, sizeof(why), "the log path under %s is too long", r->dir);
		goto failed;
	}
	snprintf(path, sizeof(path), "%s.log", base);
	log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
	if (log_fd < 0) {
		snprintf(why, sizeof(why), "cannot open the log %s: %s", path, strerror(errno));
		goto failed;
	}
	if (plan.drop && fchown(log_fd, plan.uid, plan.gid) < 0)
		agent_log(AGENT_LOG_WARNING, "%s: cannot give the log %s to uid %u: %s", label,
			  path, r->share.uid, strerror(errno));
	/* shipped from here on: what the log held before is an earlier process's */
	if (!p->shipping && fstat(log_fd, &st) == 0) {
		p->shipped = st.st_size;
		p->shipping = true;
		if (!l->ship_at_ms)
			l->ship_at_ms = agent_now_ms() + SHIP_INTERVAL_MS;
	}
	e = snprintf(note, sizeof(note),
		     "# %s ascend-agent[%s]: %s: starting /bin/sh -c in %s as uid %u gid %u\n",
		     agent_time_text(when, sizeof(when)), l->o.node, label, plan.cwd,
		     plan.drop ? r->share.uid : (unsigned)getuid(),
		     plan.drop ? r->share.gid : (unsigned)getgid());
	if (e > 0 && write(log_fd, note, strnlen(note, sizeof(note))) < 0)
		e = 0;
	/* none of the agent's own placement variables (ASCEND_RT_VISIBLE_DEVICES ...) */
	if (agent_env_clean(environ, &envp0) < 0 || agent_env_merge(envp0, &ident, &envp1) < 0 ||
	    agent_env_merge(envp1, env, &envp) < 0) {
		snprintf(why, sizeof(why), "out of memory");
		goto failed;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, sizeof(why), "pipe: %s", strerror(errno));
		goto failed;
	}
	if (p->cgroup) {
		e = agent_cgroup_make(p->cgroup);
		plan.cgroup_fd = e < 0 ? e : agent_cgroup_open_procs(p->cgroup);
		if (plan.cgroup_fd < 0) {
			snprintf(why, sizeof(why), "cannot create the cgroup %s: %s", p->cgroup,
				 strerror(-plan.cgroup_fd));
			goto failed;
		}
	}
	plan.argv = argv;
	plan.envp = envp;
	plan.log_fd = log_fd;
	plan.pipe_fd = fds[1];
	pid = fork();
	if (pid < 0) {
		snprintf(why, sizeof(why), "fork: %s", strerror(errno));
		goto failed;
	}
	if (pid == 0)
		child_exec(&plan);
	/* Both sides set the group, so that a stop right after the fork reaches it. */
	setpgid(pid, pid);
	close(fds[1]);
	fds[1] = -1;
	p->pid = pid;
	p->running = true;
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	do
		e = poll(&pfd, 1, EXEC_WAIT_MS);
	while (e < 0 && errno == EINTR);
	n = e > 0 ? read(fds[0], &f, sizeof(f)) : -1;
	if (n == (ssize_t)sizeof(f)) {
		int status = 0;

		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		p->running = false;
		snprintf(why, sizeof(why), "%s: %s",
			 stage_name[f.stage >= 0 && f.stage <= STAGE_EXEC ? f.stage : STAGE_EXEC],
			 strerror(f.err));
		if (f.stage >= STAGE_GROUPS && f.stage <= STAGE_UID)
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 " (cannot run as the job's owner, uid %u gid %u: not started)",
				 r->share.uid, r->share.gid);
		goto failed;
	}
	if (e == 0)
		agent_log(AGENT_LOG_WARNING, "%s: pid %d did not reach exec within %d ms; counting "
			  "it as started", label, (int)pid, EXEC_WAIT_MS);
	state_write(l, r, p, "started", (long)pid);
	agent_log(AGENT_LOG_INFO, "%s: started pid %d: sh -c %s (cwd %s, log %s%s%s%s)", label,
		  (int)pid, command, plan.cwd, path,
		  plan.drop ? ", as the job's owner" : "", p->cgroup ? ", cgroup " : "",
		  p->cgroup ? p->cgroup : "");
	goto out;

failed:
	agent_log(AGENT_LOG_ERROR, "%s: cannot start: %s; reporting exit status %d", label, why,
		  EXIT_NOT_STARTED);
	if (log_fd >= 0) {
		e = snprintf(note, sizeof(note), "# %s ascend-agent[%s]: cannot start: %s\n",
			     agent_time_text(when, sizeof(when)), l->o.node, why);
		if (e > 0 && write(log_fd, note, strnlen(note, sizeof(note))) < 0)
			e = 0;
	}
	p->pid = 0;
	p->running = false;
	p->code = EXIT_NOT_STARTED;
	p->report_due = true;
	state_write(l, r, p, "exit", EXIT_NOT_STARTED);
out:
	if (plan.cgroup_fd >= 0)
		close(plan.cgroup_fd);
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	if (log_fd >= 0)
		close(log_fd);
	free(envp);
	free(envp1);
	free(envp0);
	agent_env_release(&ident);
}

/*
 * What an earlier agent left beside the log of @p: "exit <code> <submitted>" (reported
 * again), "started|stopped <pid> <submitted>" (lost with that agent). Returns true when
 * @p is settled that way and must not be started.
 */
static bool adopt_state(struct agent_launcher *l, struct run *r, struct proc *p)
{
	char base[PATH_MAX], path[PATH_MAX + 8], what[16], submitted[48], label[160], *buf = NULL;
	size_t len = 0;
	long value;

	if (!r->submitted[0] || proc_base(l, r, p, base, sizeof(base)) < 0)
		return false;
	snprintf(path, sizeof(path), "%s.state", base);
	if (agent_read_file(path, 4096, &buf, &len) < 0)
		return false;
	if (sscanf(buf, "%15s %ld %47s", what, &value, submitted) != 3 ||
	    strcmp(submitted, r->submitted) != 0) {
		free(buf);
		return false; /* another job of the same name: start afresh */
	}
	free(buf);
	proc_label(r, p, label, sizeof(label));
	p->report_due = true;
	if (strcmp(what, "exit") == 0 && value >= 0 && value <= 255) {
		p->code = (int)value;
		agent_log(AGENT_LOG_INFO, "%s: already ran here (exit status %d, per %s); not "
			  "starting it again", label, p->code, path);
		return true;
	}
	p->code = EXIT_LOST;
	agent_log(AGENT_LOG_WARNING, "%s: was started by an earlier agent (pid %ld, per %s) and "
		  "died with it; reporting exit status %d so that the job restarts from its "
		  "checkpoint", label, value, path, EXIT_LOST);
	state_write(l, r, p, "exit", EXIT_LOST);
	return true;
}

static void watch_job(struct agent_launcher *l, struct run *r)
{
	char path[PATH_MAX];

	r->wd = -1;
	if (l->inotify_fd < 0 || mount_path(l, path, sizeof(path), r->share.home, "status.json") < 0)
		return;
	r->wd = inotify_add_watch(l->inotify_fd, path, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE);
}

static void unwatch_job(struct agent_launcher *l, struct run *r)
{
	if (r->wd < 0)
		return;
	/* runs of one job share the watch of its status.json */
	for (size_t i = 0; i < l->run_count; i++)
		if (l->runs[i] != r && l->runs[i]->wd == r->wd)
			return;
	inotify_rm_watch(l->inotify_fd, r->wd);
	r->wd = -1;
}

/* Give run @r and its processes their cgroup paths (when the agent has cgroups). */
static void run_set_cgroups(struct agent_launcher *l, struct run *r)
{
	char name[AGENT_CGROUP_NAME_MAX];

	if (!l->cg.enabled ||
	    agent_cgroup_job_name(r->share.job, r->share.generation, name, sizeof(name)) < 0 ||
	    snprintf(r->cgroup, sizeof(r->cgroup), "%s/%s", l->cg.node_dir, name) >=
		    (int)sizeof(r->cgroup)) {
		r->cgroup[0] = '\0';
		return;
	}
	if (agent_cgroup_make(r->cgroup) < 0) {
		agent_log(AGENT_LOG_WARNING, "job %s generation %u: cannot create the cgroup %s: "
			  "%s; its processes are stopped by process group", r->share.job,
			  r->share.generation, r->cgroup, strerror(errno));
		r->cgroup[0] = '\0';
		return;
	}
	for (size_t i = 0; i < r->proc_count; i++) {
		struct proc *p = &r->procs[i];
		char *leaf = NULL;
		int n = p->rank >= 0 ? asprintf(&leaf, "%s/rank-%d", r->cgroup, p->rank) :
				       asprintf(&leaf, "%s/node", r->cgroup);

		p->cgroup = n < 0 ? NULL : leaf;
	}
}

/*
 * A process an earlier agent started and left running in its cgroup: watch it instead
 * of starting it again. Returns true when @p is adopted.
 */
static bool adopt_cgroup(struct run *r, struct proc *p)
{
	char label[160];

	if (!p->cgroup || !agent_cgroup_is_populated(p->cgroup))
		return false;
	p->adopted = true;
	proc_label(r, p, label, sizeof(label));
	agent_log(AGENT_LOG_INFO, "%s: adopted: an earlier agent left it running in cgroup %s; "
		  "not starting it again, watching for its end (its exit status cannot be "
		  "known: reported as %d, or as the status the earlier agent recorded)",
		  label, p->cgroup, EXIT_LOST);
	return true;
}

static void env_array_release(struct agent_env *envs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		agent_env_release(&envs[i]);
}

/*
 * Start the processes of listed share @s. Returns 0 (started, or recorded as having
 * nothing to run), -EAGAIN (the job changed while we read it: try with a fresh
 * listing) or -ENOSPC (too many runs).
 */
/*
 * The env files hold the head's paths (ASCEND_JOB_DIR=HEAD/jobs/<job>, and in rank-table
 * mode RANK_TABLE_FILE=HEAD/jobs/<job>/ranktable.json). On a server that mounts the head's
 * files elsewhere, a job process finds no rank table (nor ctl) and exits with its own
 * error, restart after restart: say why, once per generation.
 */
static void warn_other_mount_path(const struct agent_launcher *l, const struct agent_share *s,
				  const struct agent_env *env)
{
	char head[PATH_MAX], canon_head[PATH_MAX], canon_mount[PATH_MAX], dir[PATH_MAX + 80];
	const char *rt = agent_env_get(env, "RANK_TABLE_FILE");

	if (agent_env_head_mount(env, s->home, head, sizeof(head)) < 0 ||
	    strcmp(head, l->o.mount) == 0)
		return;
	snprintf(dir, sizeof(dir), "%s/jobs/%s", head, s->home);
	if (access(rt ? rt : dir, F_OK) == 0)
		return;
	if (realpath(head, canon_head) && realpath(l->o.mount, canon_mount) &&
	    strcmp(canon_head, canon_mount) == 0)
		return;
	agent_log(AGENT_LOG_ERROR, "job %s generation %u: its processes get %s=%s, "
		  "which does not exist on this server: the daemon is mounted at %s on the head, "
		  "this agent reads it at %s; mount the head's files at %s here too (the env "
		  "files and msrun arguments hold the head's paths)",
		  s->job, s->generation, rt ? "RANK_TABLE_FILE" : "ASCEND_JOB_DIR", rt ? rt : dir,
		  head, l->o.mount, head);
}

/* What share @s runs: the spec's command, or its role's (NULL: none given). */
static const char *share_command(const struct agent_share *s, const struct conf_job_spec *spec)
{
	if (strcmp(s->role, "controller") == 0)
		return spec->controller_command;
	if (strcmp(s->role, "coordinator") == 0)
		return spec->coordinator_command;
	return spec->command;
}

static int start_run(struct agent_launcher *l, const struct agent_share *s)
{
	struct agent_env envs[CONF_SERVER_NPUS_MAX + 1];
	struct conf_job_spec *spec = NULL;
	struct conf_error err;
	struct run *r;
	char path[PATH_MAX], where[768], gen[16], *buf = NULL;
	size_t len = 0, count;
	const char *command = NULL;	/* the spec's, borrowed */
	bool broken = false;
	int e;

	memset(envs, 0, sizeof(envs));
	if (l->run_count >= AGENT_RUNS_MAX) {
		agent_log(AGENT_LOG_ERROR, "job %s generation %u: not started: the agent already "
			  "tracks %d runs", s->job, s->generation, AGENT_RUNS_MAX);
		return -ENOSPC;
	}
	e = mount_path(l, path, sizeof(path), s->home, "spec");
	if (e == 0)
		e = agent_read_file(path, CONF_SPEC_MAX_BYTES, &buf, &len);
	if (e == -ENOENT)
		return -EAGAIN; /* gone since the listing was read */
	if (e < 0) {
		agent_log(AGENT_LOG_ERROR, "job %s generation %u: cannot read %s: %s", s->job,
			  s->generation, path, strerror(-e));
		return -EAGAIN;
	}
	e = conf_job_spec_parse(buf, len, path, s->home, &spec, &err);
	free(buf);
	if (e == 0)
		command = share_command(s, spec);
	if (e < 0) {
		agent_log(AGENT_LOG_ERROR, "job %s generation %u: the daemon's spec does not parse "
			  "here (%s): is this agent older than the daemon?", s->job, s->generation,
			  conf_error_format(&err, where, sizeof(where)));
		broken = true;
	}
	count = s->launch == CONF_LAUNCH_PER_RANK ? s->npu_count : 1;
	snprintf(gen, sizeof(gen), "%u", s->generation);
	/* Every env file first: none is started unless all belong to this generation. */
	for (size_t i = 0; !broken && command && i < count; i++) {
		char rel[CONF_NAME_MAX + 32];
		const char *g;

		if (s->role[0])
			snprintf(rel, sizeof(rel), "roles/%s.env", s->role);
		else if (s->launch == CONF_LAUNCH_PER_RANK)
			snprintf(rel, sizeof(rel), "ranks/%u.env", s->first_rank + (unsigned)i);
		else
			snprintf(rel, sizeof(rel), "hosts/%s.env", l->o.node);
		e = mount_path(l, path, sizeof(path), s->home, rel);
		if (e == 0)
			e = agent_read_file(path, AGENT_LAUNCH_FILE_MAX_BYTES, &buf, &len);
		if (e < 0) {
			if (e != -ENOENT)
				agent_log(AGENT_LOG_ERROR, "job %s generation %u: cannot read "
					  "%s: %s", s->job, s->generation, path, strerror(-e));
			env_array_release(envs, i);
			conf_job_spec_free(spec);
			return -EAGAIN;
		}
		e = agent_env_parse(buf, len, path, &envs[i], &err);
		free(buf);
		if (e < 0) {
			agent_log(AGENT_LOG_ERROR, "job %s generation %u: %s", s->job,
				  s->generation, e == -EINVAL || e == -EFBIG ?
					  conf_error_format(&err, where, sizeof(where)) :
					  strerror(-e));
			env_array_release(envs, i);
			broken = true;
			break;
		}
		g = agent_env_get(&envs[i], "ASCEND_JOB_GENERATION");
		if (!g || strcmp(g, gen) != 0) {
			env_array_release(envs, i + 1);
			conf_job_spec_free(spec);
			return -EAGAIN; /* restarted meanwhile */
		}
	}

	if (!broken && count > 0)
		warn_other_mount_path(l, s, &envs[0]);
	/*
	 * Per-rank in dynamic mode: the workers wait for MindSpore's scheduler, which msrun
	 * would start on the master (MS_SCHED_HOST, node rank 0): its agent starts it, one
	 * more process of the job's command (agent_env_scheduler()).
	 */
	if (!broken && s->launch == CONF_LAUNCH_PER_RANK && s->node_rank == 0) {
		e = agent_env_scheduler(&envs[0], &envs[count]);
		if (e == 0)
			count++;
		else if (e != -ENOENT)
			agent_log(AGENT_LOG_ERROR, "job %s generation %u: cannot prepare MindSpore's "
				  "scheduler: %s; its workers will wait for one", s->job,
				  s->generation, strerror(-e));
	}

	r = calloc(1, sizeof(*r));
	if (!r) {
		env_array_release(envs, count);
		conf_job_spec_free(spec);
		return -EAGAIN;
	}
	r->share = *s;
	r->wd = -1;
	r->proc_count = count;
	for (size_t i = 0; i < count; i++) {
		r->procs[i].rank = s->launch != CONF_LAUNCH_PER_RANK ? -1 :
				   i < s->npu_count ? (int)(s->first_rank + i) :
						      PROC_SCHEDULER;
		r->procs[i].attempt = s->attempt;
	}
	l->runs[l->run_count++] = r;
	/* the master of a service's instance: its agent says when it answers */
	if (!broken && command && spec->kind == CONF_JOB_SERVICE && !s->role[0] &&
	    s->node_rank == 0 && count > 0) {
		const char *host = agent_env_get(&envs[0], "HOST_IP");

		if (host && strlen(host) < sizeof(r->ready_host)) {
			snprintf(r->ready_host, sizeof(r->ready_host), "%s", host);
			r->ready_port = spec->port;
			r->ready_at_ms = agent_now_ms();
		}
	}
	read_submitted(l, s->home, r->submitted, sizeof(r->submitted));
	watch_job(l, r);
	if (!broken && command)
		run_set_cgroups(l, r);

	if (!broken && !command) {
		r->state = RUN_IDLE;
		agent_log(AGENT_LOG_INFO, "job %s generation %u: the spec has no command; nothing "
			  "to start here (the job ends with `echo complete > jobs/%s/ctl`)",
			  s->job, s->generation, s->job);
		conf_job_spec_free(spec);
		return 0;
	}
	r->state = RUN_ACTIVE;
	if (snprintf(r->dir, sizeof(r->dir), "%s/%s/g%u", l->o.log_dir, s->job, s->generation) >=
	    (int)sizeof(r->dir)) {
		r->dir[0] = '\0';
		e = -ENAMETOOLONG;
	} else {
		e = agent_make_dirs(r->dir, 0755);
	}
	if (e < 0 && !broken) {
		agent_log(AGENT_LOG_ERROR, "job %s generation %u: cannot create the log directory "
			  "%s: %s", s->job, s->generation, r->dir, strerror(-e));
		broken = true;
		env_array_release(envs, count);
	}
	for (size_t i = 0; i < count; i++) {
		struct proc *p = &r->procs[i];

		if (broken) {
			p->code = EXIT_NOT_STARTED;
			p->report_due = true;
			continue;
		}
		msrun_logs_prepare(l, r, p, &envs[i]);
		if (adopt_cgroup(r, p) || adopt_state(l, r, p)) {
			ship_adopt(l, r, p);
			continue;
		}
		spawn(l, r, p, command, spec->checkpoint_dir, &envs[i]);
	}
	if (!broken)
		env_array_release(envs, count);
	conf_job_spec_free(spec);
	return 0;
}

/*
 * The daemon restarted the share of run @r in place (its attempt rose in the listing,
 * @s; sched_ladder.c): start again those of its processes that exited with a status
 * other than 0, in the same generation, on the same NPUs and with the same log
 * (appended), with ASCEND_JOB_ATTEMPT set; the processes still running, and those that
 * finished (status 0), are left alone. Returns 0, or
 * -EAGAIN when an exit is not reported yet, a process group that exited still has
 * members, or the job's files cannot be read now (the next sync tries again).
 */
static int restart_in_place(struct agent_launcher *l, struct run *r, const struct agent_share *s)
{
	struct conf_job_spec *spec = NULL;
	struct conf_error err;
	char path[PATH_MAX], where[768], gen[16], attempt[16], label[160], note[64], *buf = NULL;
	size_t len = 0;
	int e;

	if (r->state != RUN_ACTIVE) {
		r->share.attempt = s->attempt; /* nothing runs here to start again */
		return 0;
	}
	/* (a process that finished is not waited for: it is not started again) */
	for (size_t i = 0; i < r->proc_count; i++) {
		const struct proc *p = &r->procs[i];

		if (!p->running && p->code != 0 && (p->report_due || proc_is_alive(p)))
			return -EAGAIN;
	}
	e = mount_path(l, path, sizeof(path), s->home, "spec");
	if (e == 0)
		e = agent_read_file(path, CONF_SPEC_MAX_BYTES, &buf, &len);
	if (e < 0)
		return -EAGAIN;
	e = conf_job_spec_parse(buf, len, path, s->home, &spec, &err);
	free(buf);
	if (e < 0 || !share_command(s, spec)) {
		agent_log(AGENT_LOG_ERROR, "job %s generation %u: cannot restart in place: %s",
			  s->job, s->generation, e < 0 ? conf_error_format(&err, where,
									   sizeof(where)) :
			  "the spec has no command");
		conf_job_spec_free(spec);
		r->share.attempt = s->attempt;
		return 0;
	}
	snprintf(gen, sizeof(gen), "%u", s->generation);
	snprintf(attempt, sizeof(attempt), "%u", s->attempt);
	for (size_t i = 0; i < r->proc_count; i++) {
		struct proc *p = &r->procs[i];
		struct agent_env env = { 0 }, worker = { 0 };
		char rel[CONF_NAME_MAX + 32];
		const char *g;

		/* what runs goes on; what ended with status 0 finished its part */
		if (p->running || p->code == 0)
			continue;
		if (s->launch == CONF_LAUNCH_PER_RANK)
			snprintf(rel, sizeof(rel), "ranks/%u.env",
				 p->rank >= 0 ? (unsigned)p->rank : s->first_rank);
		else
			snprintf(rel, sizeof(rel), "hosts/%s.env", l->o.node);
		e = mount_path(l, path, sizeof(path), s->home, rel);
		if (e == 0)
			e = agent_read_file(path, AGENT_LAUNCH_FILE_MAX_BYTES, &buf, &len);
		if (e == 0) {
			e = agent_env_parse(buf, len, path, &worker, &err);
			free(buf);
		}
		g = e == 0 ? agent_env_get(&worker, "ASCEND_JOB_GENERATION") : NULL;
		if (!g || strcmp(g, gen) != 0) {
			/* restarted meanwhile as a new generation, or not readable now: the next
			 * sync tries again (what was started here runs, and is skipped then) */
			agent_env_release(&worker);
			conf_job_spec_free(spec);
			return -EAGAIN;
		}
		if (p->rank == PROC_SCHEDULER) {
			e = agent_env_scheduler(&worker, &env);
			agent_env_release(&worker);
		} else {
			env = worker;
		}
		if (e == 0)
			e = agent_env_set(&env, "ASCEND_JOB_ATTEMPT", attempt);
		proc_label(r, p, label, sizeof(label));
		if (e < 0) {
			agent_log(AGENT_LOG_ERROR, "%s: cannot restart in place: %s", label,
				  strerror(-e));
			agent_env_release(&env);
			continue;
		}
		agent_log(AGENT_LOG_INFO, "%s: restarting in place (attempt %u, status %d before)",
			  label, s->attempt, p->code);
		snprintf(note, sizeof(note), "restarted in place: attempt %u", s->attempt);
		log_note(l, r, p, note);
		if (p->msrun)
			ship_before_msrun_restart(l, r, p);
		msrun_logs_prepare(l, r, p, &env);
		p->attempt = s->attempt;
		spawn(l, r, p, share_command(s, spec), spec->checkpoint_dir, &env);
		agent_env_release(&env);
	}
	conf_job_spec_free(spec);
	r->share.attempt = s->attempt;
	return 0;
}

/* ---- stopping ---- */

static void run_free(struct run *r)
{
	for (size_t k = 0; k < r->proc_count; k++) {
		free(r->procs[k].cgroup);
		agent_msrun_logs_free(r->procs[k].msrun);
	}
	free(r);
}

static void run_drop(struct agent_launcher *l, size_t i)
{
	struct run *r = l->runs[i];
	int e;

	unwatch_job(l, r);
	/* nothing is left in it (the caller checked): the cgroup goes with the run */
	if (r->cgroup[0] && (e = agent_cgroup_remove(r->cgroup)) < 0)
		agent_log(AGENT_LOG_WARNING, "job %s generation %u: cannot remove the cgroup %s: "
			  "%s", r->share.job, r->share.generation, r->cgroup, strerror(-e));
	run_free(r);
	memmove(&l->runs[i], &l->runs[i + 1], (l->run_count - i - 1) * sizeof(l->runs[0]));
	l->run_count--;
}

/* Begin stopping run @r; @why says why. Runs with nothing left are dropped by poll. */
static void begin_stop(struct agent_launcher *l, struct run *r, const char *why)
{
	unsigned groups = 0;

	r->state = RUN_STOPPING;
	r->stop_ms = agent_now_ms();
	r->kill_at_ms = r->stop_ms + (long long)l->o.stop_grace_sec * 1000;
	for (size_t i = 0; i < r->proc_count; i++) {
		struct proc *p = &r->procs[i];

		p->report_due = false; /* stopped on purpose: not a task fault */
		if (!proc_is_alive(p))
			continue;
		/* in a cgroup: every process, however it detached (setsid, double fork) */
		if (p->cgroup) {
			if (!l->o.stop_grace_sec) {
				agent_cgroup_kill(p->cgroup);
				groups++;
			} else if (agent_cgroup_signal(p->cgroup, SIGTERM) > 0) {
				groups++;
			}
			continue;
		}
		if (kill(-p->pid, l->o.stop_grace_sec ? SIGTERM : SIGKILL) == 0)
			groups++;
	}
	if (!groups)
		return;
	r->signalled = true;
	agent_log(AGENT_LOG_INFO, "job %s generation %u: stopping (%s): %s to %u process "
		  "group%s, SIGKILL after %u s",
		  r->share.job, r->share.generation, why,
		  l->o.stop_grace_sec ? "SIGTERM" : "SIGKILL", groups, groups == 1 ? "" : "s",
		  l->o.stop_grace_sec);
	if (!l->o.stop_grace_sec)
		r->killed = true;
}

/* SIGKILL overdue groups; drop runs that are done. */
static void tick(struct agent_launcher *l)
{
	long long now = agent_now_ms();

	for (size_t i = 0; i < l->run_count;) {
		struct run *r = l->runs[i];

		if (r->state != RUN_STOPPING) {
			i++;
			continue;
		}
		if (!run_is_alive(r)) {
			ship_run(l, r); /* what it printed while it stopped */
			if (r->signalled)
				agent_log(AGENT_LOG_INFO, "job %s generation %u: stopped after "
					  "%lld ms", r->share.job, r->share.generation,
					  now - r->stop_ms);
			run_drop(l, i);
			l->report_due = true;
			continue;
		}
		if (!r->killed && now >= r->kill_at_ms) {
			unsigned groups = 0;

			for (size_t k = 0; k < r->proc_count; k++) {
				const struct proc *p = &r->procs[k];

				if (!proc_is_alive(p))
					continue;
				if (p->cgroup) {
					agent_cgroup_kill(p->cgroup);
					groups++;
				} else if (kill(-p->pid, SIGKILL) == 0) {
					groups++;
				}
			}
			r->killed = true;
			agent_log(AGENT_LOG_WARNING, "job %s generation %u: %u process group%s "
				  "still running %u s after SIGTERM: SIGKILL",
				  r->share.job, r->share.generation, groups, groups == 1 ? "" : "s",
				  l->o.stop_grace_sec);
		}
		i++;
	}
}

/* waitpid() every running leader. Returns true when an exit is to be reported. */
static bool reap(struct agent_launcher *l)
{
	bool due = false;

	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];

		for (size_t k = 0; k < r->proc_count; k++) {
			struct proc *p = &r->procs[k];
			char label[160], how[96], note[256];
			int status = 0;
			pid_t w;

			if (!p->running)
				continue;
			w = waitpid(p->pid, &status, WNOHANG);
			if (w == 0 || (w < 0 && errno == EINTR))
				continue;
			p->running = false;
			if (w < 0) {
				/* not our child any more (cannot happen): count it as lost */
				p->code = EXIT_LOST;
				snprintf(how, sizeof(how), "lost (waitpid: %s)", strerror(errno));
			} else {
				p->code = agent_exit_code(status);
				status_text(status, how, sizeof(how));
			}
			proc_label(r, p, label, sizeof(label));
			if (r->state == RUN_STOPPING) {
				agent_log(AGENT_LOG_INFO, "%s: pid %d ended after the stop: %s",
					  label, (int)p->pid, how);
				snprintf(note, sizeof(note), "stopped: %s", how);
				log_note(l, r, p, note);
				state_write(l, r, p, "stopped", p->code);
				continue;
			}
			agent_log(AGENT_LOG_INFO, "%s: pid %d exited: %s", label, (int)p->pid,
				  how);
			snprintf(note, sizeof(note), "exited: %s; reporting status %d", how,
				 p->code);
			log_note(l, r, p, note);
			state_write(l, r, p, "exit", p->code);
			p->report_due = true;
			due = true;
		}
	}
	return due;
}

/*
 * The end of adopted processes (not our children: their cgroup empties). The status an
 * earlier agent recorded beside the log (the leader exited while it still ran) is
 * reported if there is one; else the status cannot be known and is reported as
 * EXIT_LOST, as for a process lost with an earlier agent: the job restarts from its
 * checkpoint rather than being taken as complete on a guess. Returns true when an exit
 * is to be reported.
 */
static bool watch_adopted(struct agent_launcher *l)
{
	bool due = false;

	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];

		for (size_t k = 0; k < r->proc_count; k++) {
			struct proc *p = &r->procs[k];
			char label[160];

			if (!p->adopted || agent_cgroup_is_populated(p->cgroup))
				continue;
			p->adopted = false;
			proc_label(r, p, label, sizeof(label));
			if (r->state != RUN_ACTIVE) {
				agent_log(AGENT_LOG_INFO, "%s: the adopted processes ended after the "
					  "stop", label);
				continue;
			}
			if (!adopt_state(l, r, p)) {
				p->code = EXIT_LOST;
				p->report_due = true;
				state_write(l, r, p, "exit", EXIT_LOST);
			}
			agent_log(AGENT_LOG_INFO, "%s: the adopted processes ended (cgroup %s is "
				  "empty); reporting exit status %d", label, p->cgroup, p->code);
			log_note(l, r, p, "the adopted processes ended");
			due = true;
		}
	}
	return due;
}

/*
 * With PR_SET_CHILD_SUBREAPER (main.c), processes whose parent died are re-parented to
 * the agent: reap those that are not a leader we track (a leader is left to reap()).
 */
static void reap_orphans(struct agent_launcher *l)
{
	for (;;) {
		siginfo_t si;
		bool tracked = false;

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			return;
		for (size_t i = 0; i < l->run_count && !tracked; i++)
			for (size_t k = 0; k < l->runs[i]->proc_count && !tracked; k++)
				tracked = l->runs[i]->procs[k].running &&
					  l->runs[i]->procs[k].pid == si.si_pid;
		if (tracked)
			return;
		waitpid(si.si_pid, NULL, WNOHANG);
	}
}

/*
 * Forget the process group of every reaped leader whose group has emptied: once empty,
 * its number may be reused by an unrelated process group, which we must never signal.
 * (While a member lives, the kernel keeps the number reserved.)
 */
static void forget_empty_groups(struct agent_launcher *l)
{
	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];

		for (size_t k = 0; k < r->proc_count; k++) {
			struct proc *p = &r->procs[k];

			if (!p->running && p->pid > 0 && !group_is_alive(p->pid))
				p->pid = 0;
		}
	}
}

/*
 * Drain the inotify descriptor. Returns true when a watched job changed. A watch the
 * kernel dropped (IN_IGNORED: the mount went away, e.g. the daemon restarted) is
 * forgotten, and made again on the next successful read of the jobs listing.
 */
static bool drain_events(struct agent_launcher *l)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;

	if (l->inotify_fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(l->inotify_fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return any;
		any = true;
		for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const void *)(buf + off);

			if (ev->mask & IN_IGNORED) {
				if (ev->wd == l->jobs_wd)
					l->jobs_wd = -1;
				for (size_t i = 0; i < l->run_count; i++)
					if (l->runs[i]->wd == ev->wd)
						l->runs[i]->wd = -1;
			}
			off += (ssize_t)(sizeof(*ev) + ev->len);
		}
	}
}

/* ---- the public face ---- */

int agent_launcher_new(const struct agent_launcher_options *o, struct agent_launcher **ret)
{
	struct agent_launcher *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->o = *o;
	l->is_root = geteuid() == 0;
	l->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	l->jobs_wd = -1;
	{
		char name[AGENT_CGROUP_NAME_MAX];

		if (agent_cgroup_node_name(o->node, o->mount, name, sizeof(name)) == 0)
			agent_cgroups_init(&l->cg, o->cgroup_root, name);
	}
	*ret = l;
	return 0;
}

void agent_launcher_free(struct agent_launcher *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];

		if (r->cgroup[0] && !run_is_alive(r))
			agent_cgroup_remove(r->cgroup);
		run_free(r);
	}
	/* empty once every run is gone; else kept for the next agent */
	if (l->cg.enabled)
		rmdir(l->cg.node_dir);
	if (l->inotify_fd >= 0)
		close(l->inotify_fd);
	free(l);
}

static struct run *find_run(struct agent_launcher *l, const char *job, unsigned generation)
{
	for (size_t i = 0; i < l->run_count; i++)
		if (l->runs[i]->share.generation == generation &&
		    strcmp(l->runs[i]->share.job, job) == 0)
			return l->runs[i];
	return NULL;
}

/* Why (job, generation) of @r left the listing of @shares (@n). */
static const char *unlisted_reason(const struct run *r, const struct agent_share *shares,
				   size_t n, char *buf, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(shares[i].job, r->share.job) == 0 &&
		    shares[i].generation > r->share.generation) {
			snprintf(buf, len, "the job restarted here as generation %u",
				 shares[i].generation);
			return buf;
		}
	snprintf(buf, len, "no longer listed for this server: cancelled, moved or ended");
	return buf;
}

/*
 * The cgroups an earlier agent left (it was killed, or crashed): those of a generation
 * still listed are adopted when start_run() finds their processes (adopt_cgroup());
 * the others are stopped as a cancel would (SIGTERM, SIGKILL after the grace period)
 * and removed. Once, at the first listing read.
 */
static void scan_cgroups(struct agent_launcher *l, const struct agent_share *shares, size_t n)
{
	enum agent_cgroup_verdict *v;
	char **names = NULL;
	size_t count = 0;

	if (!l->cg.enabled || agent_cgroups_list(&l->cg, &names, &count) < 0)
		return;
	v = calloc(count ? count : 1, sizeof(*v));
	if (v)
		agent_cgroup_decide((const char *const *)names, count, shares, n, v);
	for (size_t i = 0; v && i < count; i++) {
		struct run *r;
		char **leaves = NULL, path[PATH_MAX];
		size_t leaf_count = 0;
		struct agent_cgroups sub;
		const struct agent_share *keeper = NULL;

		if ((v[i] != AGENT_CGROUP_STOP && v[i] != AGENT_CGROUP_KEEP) ||
		    l->run_count >= AGENT_RUNS_MAX || !(r = calloc(1, sizeof(*r))))
			continue;
		agent_cgroup_parse_job_name(names[i], r->share.job, &r->share.generation);
		/* a role's service is known from the listing, once it lists the run */
		memcpy(r->share.home, r->share.job, sizeof(r->share.home));
		/* kept by a process-level recovery: the listed share's run, unless one is
		 * already (a second kept cgroup of the job is stopped) */
		for (size_t k = 0; v[i] == AGENT_CGROUP_KEEP && k < n && !keeper; k++)
			if (agent_share_keeps(&shares[k], r->share.job, r->share.generation) &&
			    !find_run(l, shares[k].job, shares[k].generation))
				keeper = &shares[k];
		r->wd = -1;
		if (snprintf(r->cgroup, sizeof(r->cgroup), "%s/%s", l->cg.node_dir, names[i]) >=
		    (int)sizeof(r->cgroup)) {
			free(r);
			continue;
		}
		/* its leaves: "node" or "rank-<r>" */
		memset(&sub, 0, sizeof(sub));
		memcpy(sub.node_dir, r->cgroup, sizeof(sub.node_dir));
		if (agent_cgroups_list(&sub, &leaves, &leaf_count) == 0) {
			for (size_t k = 0; k < leaf_count; k++) {
				struct proc *p;
				int rank = -1;

				if (r->proc_count < CONF_SERVER_NPUS_MAX &&
				    (strcmp(leaves[k], "node") == 0 ||
				     sscanf(leaves[k], "rank-%d", &rank) == 1) &&
				    snprintf(path, sizeof(path), "%s/%s", r->cgroup, leaves[k]) <
					    (int)sizeof(path)) {
					p = &r->procs[r->proc_count++];
					p->rank = rank;
					p->cgroup = strdup(path);
					p->adopted = p->cgroup != NULL;
				}
				free(leaves[k]);
			}
			free(leaves);
		}
		l->runs[l->run_count++] = r;
		if (!run_is_alive(r)) {
			run_drop(l, l->run_count - 1);
			continue;
		}
		if (keeper) {
			unsigned from = r->share.generation;

			snprintf(r->dir, sizeof(r->dir), "%s/%s/g%u", l->o.log_dir, r->share.job,
				 from);
			r->share = *keeper;
			r->state = RUN_ACTIVE;
			read_submitted(l, r->share.home, r->submitted, sizeof(r->submitted));
			agent_log(AGENT_LOG_INFO, "job %s generation %u: adopted the processes an "
				  "earlier agent left in cgroup %s (generation %u, kept by a "
				  "process-level recovery)", r->share.job, r->share.generation,
				  r->cgroup, from);
			continue;
		}
		agent_log(AGENT_LOG_WARNING, "job %s generation %u: an earlier agent left its "
			  "processes running in cgroup %s",
			  r->share.job, r->share.generation, r->cgroup);
		begin_stop(l, r, "left by an earlier agent, and no longer listed for this "
			   "server");
	}
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
	free(v);
}

/*
 * A share a process-level recovery kept (kept_from): the job's run of a generation from
 * kept_from on, when this agent has one still running, goes on as the share's
 * generation. Its processes, their cgroup and log directory stay as they are; only the
 * generation they report under changes (the daemon also takes their exits under the
 * older one, until this happens).
 */
static void carry_over(struct agent_launcher *l, const struct agent_share *s)
{
	struct run *keep = NULL;
	unsigned from;

	if (!s->kept_from || find_run(l, s->job, s->generation))
		return;
	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];

		if (r->state != RUN_STOPPING && agent_share_keeps(s, r->share.job,
								   r->share.generation) &&
		    (!keep || r->share.generation > keep->share.generation))
			keep = r;
	}
	if (!keep)
		return; /* nothing of it runs here: start_run() starts the share */
	from = keep->share.generation;
	keep->share = *s;
	/* readiness is per generation: the new one is reported when it answers (a kept
	 * master's node rank stays 0: the port, the address and the check are its own) */
	keep->ready_sent = false;
	keep->ready_at_ms = agent_now_ms();
	agent_log(AGENT_LOG_INFO, "job %s generation %u: kept running from generation %u "
		  "(process-level recovery); its processes are not restarted", s->job,
		  s->generation, from);
}

/* One pass: returns true when a start was deferred (the listing is stale). */
static bool sync_once(struct agent_launcher *l, bool *ret_read)
{
	struct conf_error err;
	char path[PATH_MAX], where[768], msg[PATH_MAX + 256], why[128], *buf = NULL;
	size_t len = 0, n = 0;
	bool deferred = false;
	int e;

	*ret_read = false;
	snprintf(path, sizeof(path), "%s/nodes/%s/jobs", l->o.mount, l->o.node);
	e = agent_read_file(path, AGENT_LAUNCH_FILE_MAX_BYTES, &buf, &len);
	if (e < 0) {
		snprintf(msg, sizeof(msg), "cannot read %s: %s; the job processes of this server "
			 "are left as they are until it can be read", path, strerror(-e));
		log_problem(l, AGENT_LOG_WARNING, msg);
		return false;
	}
	e = agent_parse_server_jobs(buf, len, path, l->shares, AGENT_SHARES_MAX, &n, &err);
	free(buf);
	if (e < 0) {
		snprintf(msg, sizeof(msg), "%s; the job processes of this server are left as they "
			 "are", e == -ENOMEM ? strerror(-e) :
					       conf_error_format(&err, where, sizeof(where)));
		log_problem(l, AGENT_LOG_ERROR, msg);
		return false;
	}
	log_problem(l, AGENT_LOG_INFO, "");
	*ret_read = true;
	if (!l->scanned) {
		l->scanned = true;
		scan_cgroups(l, l->shares, n);
	}
	/* A daemon that announces changes of this listing wakes us at once (else: the
	 * interval, and the watches of the jobs we run). */
	if (l->jobs_wd < 0 && l->inotify_fd >= 0)
		l->jobs_wd = inotify_add_watch(l->inotify_fd, path,
					       IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE);
	for (size_t i = 0; i < l->run_count; i++)
		if (l->runs[i]->wd < 0)
			watch_job(l, l->runs[i]);

	for (size_t k = 0; k < n; k++)
		carry_over(l, &l->shares[k]);
	for (size_t i = 0; i < l->run_count; i++)
		l->runs[i]->listed = false;
	for (size_t k = 0; k < n; k++) {
		struct run *r = find_run(l, l->shares[k].job, l->shares[k].generation);

		if (!r)
			continue;
		r->listed = true;
		/* a run adopted from its cgroup knows its name only: where its files are */
		memcpy(r->share.home, l->shares[k].home, sizeof(r->share.home));
		memcpy(r->share.role, l->shares[k].role, sizeof(r->share.role));
		if (l->shares[k].attempt > r->share.attempt &&
		    restart_in_place(l, r, &l->shares[k]) == -EAGAIN)
			deferred = true;
	}
	for (size_t i = 0; i < l->run_count;) {
		struct run *r = l->runs[i];

		if (r->listed || r->state == RUN_STOPPING) {
			i++;
			continue;
		}
		if (!run_is_alive(r)) {
			run_drop(l, i); /* ran to its end here, and the job has moved on */
			l->report_due = true;
			continue;
		}
		begin_stop(l, r, unlisted_reason(r, l->shares, n, why, sizeof(why)));
		i++;
	}
	for (size_t k = 0; k < n; k++) {
		if (find_run(l, l->shares[k].job, l->shares[k].generation))
			continue;
		if (start_run(l, &l->shares[k]) == -EAGAIN)
			deferred = true;
	}
	return deferred;
}

void agent_launcher_sync(struct agent_launcher *l)
{
	bool deferred = false, read_ok;

	if (l->stopping_all || l->standby)
		return;
	forget_empty_groups(l);
	l->retry_at_ms = 0;
	/* A deferred start means the job changed between two reads: read again, a bounded
	 * number of times. */
	for (int pass = 0; pass < 3; pass++) {
		deferred = sync_once(l, &read_ok);
		if (!read_ok)
			return;
		if (report_due_exits(l))
			deferred = true; /* the daemon may have restarted a job here */
		if (!deferred)
			break;
	}
	if (deferred && !l->retry_at_ms)
		l->retry_at_ms = agent_now_ms() + RETRY_MS;
}

/*
 * Check the instances this server is the master of (ready_port): report "ready" to the
 * job's ctl when its port first answers, "unready" when it stops answering; the daemon
 * lists the ready ones in the service's endpoints (sched_service_ready()).
 */
static void check_ready(struct agent_launcher *l)
{
	long long now = agent_now_ms();

	for (size_t i = 0; i < l->run_count; i++) {
		struct run *r = l->runs[i];
		char line[64];
		int answers, e;

		if (r->state != RUN_ACTIVE || !r->ready_port || now < r->ready_at_ms)
			continue;
		answers = agent_tcp_answers(r->ready_host, r->ready_port, READY_TIMEOUT_MS) == 1;
		r->ready_at_ms = agent_now_ms() + (answers ? READY_RECHECK_MS : READY_POLL_MS);
		if (answers == r->ready_sent)
			continue;
		snprintf(line, sizeof(line), "%s %u\n", answers ? "ready" : "unready",
			 r->share.generation);
		e = write_ctl(l, r->share.home, line);
		if (e < 0) {
			agent_log(AGENT_LOG_WARNING, "job %s generation %u: cannot report it %s: "
				  "%s; trying again", r->share.job, r->share.generation,
				  answers ? "ready" : "not ready", strerror(-e));
			continue;
		}
		r->ready_sent = answers;
		agent_log(AGENT_LOG_INFO, "job %s generation %u: %s:%u %s; reported %s",
			  r->share.job, r->share.generation, r->ready_host, r->ready_port,
			  answers ? "answers" : "no longer answers",
			  answers ? "ready" : "not ready");
	}
}

void agent_launcher_poll(struct agent_launcher *l)
{
	bool due = reap(l), changed = drain_events(l);

	reap_orphans(l);
	due |= watch_adopted(l);

	forget_empty_groups(l);
	tick(l);
	if (l->stopping_all)
		return;
	ship_due(l);
	check_ready(l);
	if (due && report_due_exits(l))
		changed = true;
	if (l->retry_at_ms && agent_now_ms() >= l->retry_at_ms)
		changed = true;
	if (changed)
		agent_launcher_sync(l);
}

void agent_launcher_set_standby(struct agent_launcher *l, bool standby)
{
	l->standby = standby;
}

long long agent_launcher_wake_ms(const struct agent_launcher *l)
{
	long long wake = l->stopping_all ? -1 : (l->retry_at_ms ? l->retry_at_ms : -1);
	long long now = agent_now_ms();

	if (!l->stopping_all && l->ship_at_ms && (wake < 0 || l->ship_at_ms < wake))
		wake = l->ship_at_ms;

	for (size_t i = 0; i < l->run_count; i++) {
		const struct run *r = l->runs[i];
		bool leaders = false;
		long long t;

		for (size_t k = 0; k < r->proc_count; k++)
			if (r->procs[k].adopted && (wake < 0 || now + ADOPTED_POLL_MS < wake))
				wake = now + ADOPTED_POLL_MS;
		if (r->state == RUN_ACTIVE && r->ready_port && (wake < 0 || r->ready_at_ms < wake))
			wake = r->ready_at_ms;
		if (r->state != RUN_STOPPING)
			continue;
		for (size_t k = 0; k < r->proc_count; k++)
			leaders |= r->procs[k].running;
		/* a leader's exit wakes us (SIGCHLD); the other members of its group do not */
		t = !r->killed && leaders ? r->kill_at_ms : now + GROUP_POLL_MS;
		if (wake < 0 || t < wake)
			wake = t;
	}
	return wake;
}

size_t agent_launcher_usage(const struct agent_launcher *l, struct conf_health_usage *ret,
			    size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < l->run_count && n < max; i++) {
		const struct run *r = l->runs[i];
		struct conf_health_usage *u = &ret[n];

		if (!r->cgroup[0] ||
		    agent_cgroup_usage(r->cgroup, &u->cpu_usec, &u->memory_bytes) < 0)
			continue;
		snprintf(u->job, sizeof(u->job), "%s", r->share.job);
		u->generation = r->share.generation;
		n++;
	}
	return n;
}

int agent_launcher_fd(const struct agent_launcher *l)
{
	return l->inotify_fd;
}

void agent_launcher_stop_all(struct agent_launcher *l)
{
	l->stopping_all = true;
	for (size_t i = 0; i < l->run_count; i++)
		if (l->runs[i]->state != RUN_STOPPING)
			begin_stop(l, l->runs[i], "the agent is stopping");
}

bool agent_launcher_take_report_due(struct agent_launcher *l)
{
	bool due = l->report_due;

	l->report_due = false;
	return due;
}

void agent_launcher_running(const struct agent_launcher *l, struct conf_health_report *report)
{
	struct agent_run_info info[AGENT_RUNS_MAX];
	size_t n = 0;

	for (size_t i = 0; i < l->run_count && n < AGENT_RUNS_MAX; i++) {
		const struct run *r = l->runs[i];

		/* a service's role holds no NPUs and no stop waits for it */
		if (r->share.role[0])
			continue;
		info[n++] = (struct agent_run_info){ r->share.job, r->share.generation,
						     run_is_alive(r) };
	}
	agent_report_running(report, info, n);
}

bool agent_launcher_is_idle(const struct agent_launcher *l)
{
	for (size_t i = 0; i < l->run_count; i++)
		if (run_is_alive(l->runs[i]))
			return false;
	return true;
}
