/* SPDX-License-Identifier: MIT */
/* agent internals shared by the files of agent/. Not used outside agent/. */
#ifndef ASCENDFS_AGENT_INTERNAL_H
#define ASCENDFS_AGENT_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"

/*
 * agent_err_set() - fill @err (not NULL) with @source, @line, @column (0: none) and the
 * printf-style message. Returns -EINVAL so callers can `return agent_err_set(...)`.
 */
int agent_err_set(struct conf_error *err, const char *source, unsigned line, unsigned column,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Size of a buffer for agent_quote(). */
#define AGENT_QUOTE_MAX 80

/*
 * agent_quote() - the @len bytes at @p (need not be NUL-terminated) as a double-quoted
 * string for a message, in @buf of @buf_len (>= 16) bytes: '"', '\\' and control bytes
 * escaped, long text cut with "...". Returns @buf.
 */
char *agent_quote(const char *p, size_t len, char *buf, size_t buf_len);

/*
 * ---- shipping a process's output to the head (agent_ship.c) ----
 * Each line of jobs/<job>/log written by an agent is "<generation> <process> <node>
 * <text>": process "rank-<N>" (a per-rank process), "node" (the server's msrun) or
 * "scheduler" (MindSpore's scheduler), as the local logs are named; the daemon checks
 * each and shows it as "[g<generation> <process> <node>] <text>" (fs/fs_joblog.c).
 */

/* The most bytes of text of one shipped line: a longer line is cut into pieces. */
#define AGENT_SHIP_LINE_MAX 4000
/* The most bytes of "<generation> <process> <node> ". */
#define AGENT_SHIP_HEAD_MAX 96

/*
 * agent_ship_format() - append the lines of @len bytes of output at @data to *@out
 * (realloc'd: *@out_len bytes used of *@out_cap; *@out may be NULL with both 0), each
 * prefixed "<@generation> <@process> <@node> " (borrowed strings without spaces): the
 * whole lines, a line over AGENT_SHIP_LINE_MAX as pieces of that, and with @final (its
 * process ended) a last line without a newline too. Returns the bytes of @data consumed
 * (the rest waits for its newline), -EINVAL (@process and @node longer than
 * AGENT_SHIP_HEAD_MAX allows) or -ENOMEM (*@out keeps what was appended).
 */
ssize_t agent_ship_format(const char *data, size_t len, unsigned generation,
			  const char *process, const char *node, bool final, char **out,
			  size_t *out_len, size_t *out_cap);

/*
 * agent_msrun_args() - msrun's flags @args (MSRUN_ARGS of hosts/<server>.env, as the
 * daemon writes them: space-separated "--flag=value") with --log_dir's value replaced by
 * @log_dir, in *@ret (new; caller frees), and the server's --node_rank and
 * --local_worker_num in *@ret_node_rank and *@ret_local_workers. MindSpore's msrun
 * writes worker i's output to <log_dir>/worker_<node_rank * local_worker_num + i>.log
 * and, on the server that runs it (node rank 0 here: the master's), its scheduler's to
 * <log_dir>/scheduler.log (MindSpore's msrun launcher, mindspore.parallel.cluster's
 * process manager). Returns 0; -ENOENT (a flag missing); -EINVAL (a value that does not
 * parse, local_worker_num 0 or above CONF_SERVER_NPUS_MAX, or @log_dir not absolute or
 * with a byte the shell would split or expand when a command runs `msrun
 * $MSRUN_ARGS`); -ENOMEM.
 */
int agent_msrun_args(const char *args, const char *log_dir, char **ret,
		     unsigned *ret_node_rank, unsigned *ret_local_workers);

/* ---- agent_ship_io.c (the executable): reading local logs, appending to the mount ---- */

/* The most logs of one run shipped together: a server's NPUs and a scheduler, or a
 * server's msrun, the workers it started and their scheduler. */
#define AGENT_SHIP_SRCS_MAX (CONF_SERVER_NPUS_MAX + 2)

/* One process's local log, as agent_ship_send() ships it. */
struct agent_ship_src {
	const char *path;	/* <process>.log (borrowed); with @dirfd >= 0, a name in
				 * that directory */
	int dirfd;		/* -1; or a directory the job's user writes (msrun's
				 * --log_dir), whose @path is read only when it is a
				 * regular file of @owner's reached without a symbolic
				 * link or a mount point (the agent may read as root) */
	uid_t owner;
	const char *where;	/* @dirfd's path, for messages (borrowed) */
	const char *mark;	/* where its offset is kept: <mark>.shipped; NULL: beside it
				 * (<path>.shipped, @dirfd -1 only) (borrowed) */
	int error;		/* in and out: why it could not be read the last time (an
				 * errno; 0: it could, or it was not there); a new reason
				 * is logged once */
	char process[24];	/* "rank-<N>", "node" or "scheduler" */
	long long shipped;	/* bytes of it shipped so far: in and out */
	bool final;		/* its process ended: its last partial line goes too */
};

/*
 * agent_ship_send() - append what @n processes of one run (@srcs, at most
 * AGENT_SHIP_SRCS_MAX) printed since their offsets to <@mount>/jobs/<@home>/log as
 * generation @generation on server @node, in one open/write/close; then advance each
 * offset and keep it (<mark or path>.shipped). Nothing new: nothing is opened. A log
 * shorter than its offset (written anew: msrun opens its workers' logs with "w") is
 * shipped from its start; a log that is not there or cannot be read now is skipped this
 * time (a reason that is new for it logged), the others shipped. *@ret_more: a log had more than one pass reads. Returns 0,
 * or -errno of the open, write or close of the job's log (offsets unchanged: the same
 * bytes go again next time): ENOENT (the job or the mount is gone), EINVAL (the daemon
 * refused a line: see the job's events); -ENOMEM.
 */
int agent_ship_send(const char *mount, const char *home, const char *node,
		    unsigned generation, struct agent_ship_src *srcs, size_t n, bool *ret_more);

/* agent_ship_offset_load() - the offset kept at <@log_path>.shipped (a source's mark, or
 * its path) by an earlier agent, or -1 when none is (or it does not parse). */
long long agent_ship_offset_load(const char *log_path);

/*
 * ---- agent_msrun_log.c (the executable): what msrun writes of its workers ----
 * A msrun node process's workers' logs, shipped as theirs: msrun's --log_dir is made
 * <run dir>/msrun (the job's user's), and of it this server's files only:
 * worker_<node_rank * local_worker_num + i>.log as rank-<that>, and on node rank 0
 * scheduler.log as scheduler (agent_msrun_args()). Each is read as agent_ship_src's
 * @dirfd says; its offset is kept in the run directory (msrun-<process>.shipped).
 */
struct agent_msrun_logs;

/*
 * agent_msrun_logs_open() - for a msrun node process of the run in @run_dir started with
 * @env (its hosts/<server>.env): make <run_dir>/msrun (owned by @owner:@group when @give,
 * i.e. the agent is root and the job is not; @owner is the uid the process runs as)
 * and take the offsets an earlier agent kept. *@ret new (agent_msrun_logs_free()).
 * Returns 0, -ENOENT (no MSRUN_ARGS in @env, or a flag missing), -EINVAL
 * (agent_msrun_args()), -EACCES (with @give: @owner with @group cannot search every
 * directory down to @run_dir), -ENOSYS (no openat2(2): Linux before 5.6), -ENAMETOOLONG,
 * -ENOMEM or -errno of mkdir/open/fchown. The msrun directory is opened from the run
 * directory without following a link or crossing a mount.
 */
int agent_msrun_logs_open(const char *run_dir, const struct agent_env *env, uid_t owner,
			  gid_t group, bool give, struct agent_msrun_logs **ret);

/* agent_msrun_logs_env() - set @env's MSRUN_ARGS to @m's (--log_dir=<run dir>/msrun).
 * Returns 0 or -ENOMEM. */
int agent_msrun_logs_env(const struct agent_msrun_logs *m, struct agent_env *env);

/*
 * agent_msrun_logs_srcs() - fill up to @max of @srcs with @m's logs (strings borrowed
 * from @m), @final when msrun ended (their last partial lines go too); returns how
 * many. agent_msrun_logs_shipped() - take back the offsets and reasons of the @n filled
 * after agent_ship_send() (which leaves the offsets as they were when it failed).
 */
size_t agent_msrun_logs_srcs(const struct agent_msrun_logs *m, struct agent_ship_src *srcs,
			     size_t max, bool final);
void agent_msrun_logs_shipped(struct agent_msrun_logs *m, const struct agent_ship_src *srcs,
			      size_t n);

/*
 * agent_msrun_logs_rewind() - msrun starts again in place (attempt @attempt ended, its
 * lines shipped as far as they could be): msrun writes its logs anew ("w"), so the old
 * ones are kept as <name>.<@attempt> and the new ones shipped from their start.
 */
void agent_msrun_logs_rewind(struct agent_msrun_logs *m, unsigned attempt);

/* agent_msrun_logs_free() - close and free @m (NULL allowed). */
void agent_msrun_logs_free(struct agent_msrun_logs *m);

/*
 * ---- the executable's helpers (agent_io.c) ----
 * Used by main.c and agent_launch.c only: they log and touch files, which agent_lib
 * (what the unit tests and fuzzers link) never does.
 */

enum agent_log_level { AGENT_LOG_ERROR, AGENT_LOG_WARNING, AGENT_LOG_INFO };

/* agent_log_set_node() - the node name in every log line (borrowed, lives on). */
void agent_log_set_node(const char *node);

/*
 * agent_log_parse_level() - "error", "warning" or "info" (@name, not NULL) into *@ret.
 * Returns 0 or -EINVAL (*@ret unchanged).
 */
int agent_log_parse_level(const char *name, enum agent_log_level *ret);

/* agent_log_set_level() - from now on, log @level and what is more severe (default info). */
void agent_log_set_level(enum agent_log_level level);

/*
 * agent_log() - one line on stderr, in one write so that agents sharing a log keep whole
 * lines: "<UTC time with ms> ascend-agent[<node>]: [error: |warning: ]<message>"; or,
 * when stderr is the journal (JOURNAL_STREAM, conf_journal_stream_matches()), which adds
 * time, program and host itself, the syslog priority instead: "<3>error: ",
 * "<4>warning: " or "<6>" (info), then the message. Nothing below the level set with
 * agent_log_set_level().
 */
void agent_log(enum agent_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * agent_write_all() - write @len bytes of @text to @fd, retrying short writes and EINTR.
 * Returns 0 or -errno of write(); the fd stays open.
 */
int agent_write_all(int fd, const char *text, size_t len);

/*
 * agent_read_file() - the file at @path, up to @max bytes. *@ret_buf new (free()),
 * NUL-terminated, *@ret_len its length. Returns 0, -EFBIG (longer than @max), -ENOMEM or
 * -errno of open()/read().
 */
int agent_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len);

/* agent_make_dirs() - mkdir -p @path with @mode. Returns 0 or -errno. */
int agent_make_dirs(const char *path, mode_t mode);

/* agent_now_ms() - CLOCK_MONOTONIC in milliseconds. */
long long agent_now_ms(void);

/*
 * agent_time_text() - CLOCK_REALTIME as "2025-01-31T12:00:00.123Z" in @buf (>= 32 bytes).
 * Returns @buf.
 */
char *agent_time_text(char *buf, size_t len);

/*
 * ---- the process launcher (agent_launch.c) ----
 *
 * Runs the processes of the job shares listed in <mount>/nodes/<node>/jobs (design.md
 * §3): for each (job, generation) listed and not yet run, the spec's command with the
 * job's env (`launch: msrun`: once, with hosts/<node>.env; `per-rank`: once per local
 * rank, with ranks/<rank>.env; and when those are a MindSpore dynamic cluster's workers
 * (MS_ROLE MS_WORKER) the agent of node rank 0 also runs the job's MS_SCHED process, as
 * msrun would, with agent_env_scheduler()'s env), as `/bin/sh -c COMMAND` in a process
 * group of its own, output to
 * <log-dir>/<job>/g<generation>/{node-<node>,rank-<rank>,scheduler}.log. A process that
 * exits is reported with "exit <generation> <node> <status> [<rank>]" to jobs/<job>/ctl
 * (the scheduler's exit is only logged: its workers' exits decide the job).
 * A (job, generation) that is no longer listed (cancelled, moved, restarted) is stopped:
 * SIGTERM to each process group, SIGKILL after the stop grace period; those exits are
 * not reported.
 *
 * A process gets the agent's environment without its placement variables
 * (agent_env_clean()) with the env file's exports over it, stdin
 * from /dev/null, the spec's checkpoint_dir as its working directory when that is a
 * directory (else its log directory). When the agent runs as root and the job's owner is
 * not root, it runs as the owner (uid, gid, supplementary groups, HOME, USER, LOGNAME);
 * if that cannot be done it is not started. A process that cannot be started is
 * reported as exit status 127 (the job restarts, then fails after max_restarts); a
 * process killed by signal N as 128 + N.
 *
 * Beside each log a state file (<log>.state: "started <pid> <submitted>", "exit <status>
 * <submitted>" or "stopped <status> <submitted>", <submitted> the job's submission time
 * from status.json) lets an agent that restarts tell a share that already ran from a new
 * one: an exit is reported again rather than the process run twice, and a process that
 * was running when the last agent ended (its processes die with it: PR_SET_PDEATHSIG, or
 * were stopped by its SIGTERM) is reported as killed (137), so that the daemon restarts
 * the job from its checkpoint rather than leaving one server's share missing.
 *
 * With per-job cgroups (agent.h, agent_cgroups_init()), each process joins its leaf
 * cgroup before exec and gets no PR_SET_PDEATHSIG; a stop signals every process of the
 * cgroup and ends with cgroup.kill; a run's cgroup is removed when the run is dropped.
 * At the first listing it reads, the launcher looks at the cgroups an earlier agent
 * left: a listed generation whose leaf still holds processes is adopted (not started;
 * its end is seen when the leaf empties and reported with the status recorded in the
 * state file, else EXIT_LOST, 137), an unlisted one is stopped and removed.
 *
 * Single-threaded: every function is called from the agent's loop. The caller reaps no
 * children of its own while the launcher has any (it waits for specific pids only).
 */
struct agent_launcher;

struct agent_launcher_options {
	const char *mount;		/* borrowed, lives on */
	const char *node;		/* borrowed, lives on */
	const char *log_dir;		/* borrowed, lives on; created when first needed */
	unsigned stop_grace_sec;	/* SIGTERM to SIGKILL */
	const char *cgroup_root;	/* --cgroup-root, borrowed; NULL: derived */
};

/* Most (job, generation) runs tracked at once, stopping ones included. */
#define AGENT_RUNS_MAX (2 * AGENT_SHARES_MAX)

/*
 * agent_launcher_new() - a launcher with no runs; *@ret new (agent_launcher_free).
 * Returns 0 or -ENOMEM.
 */
int agent_launcher_new(const struct agent_launcher_options *o, struct agent_launcher **ret);

/*
 * agent_launcher_free() - forget every run (call after agent_launcher_stop_all() has
 * finished: processes still running are left alone). NULL is fine.
 */
void agent_launcher_free(struct agent_launcher *l);

/*
 * agent_launcher_sync() - read nodes/<node>/jobs; start what is listed and not running,
 * stop what runs and is no longer listed, report exits that could not be reported
 * before. An unreadable listing (the daemon is down) changes nothing.
 */
void agent_launcher_sync(struct agent_launcher *l);

/*
 * agent_launcher_set_standby() - with @standby, the daemon counts another agent's reports
 * for this server (two agents use one node name): sync does nothing, so this agent
 * starts no job process (the other runs them) and stops none; exits are still reaped.
 * Cleared once a report of this agent counts again.
 */
void agent_launcher_set_standby(struct agent_launcher *l, bool standby);

/*
 * agent_launcher_poll() - reap exited processes (waitpid WNOHANG on each) and report
 * them, send SIGKILL to process groups past their grace period, forget finished stops;
 * when an exit was reported or a watched job changed (the inotify descriptor is
 * readable), sync. Cheap: call after every wake-up.
 */
void agent_launcher_poll(struct agent_launcher *l);

/*
 * agent_launcher_wake_ms() - when agent_launcher_poll() must run next at the latest
 * (CLOCK_MONOTONIC ms: a SIGKILL deadline, a retry), or -1 for no deadline.
 */
long long agent_launcher_wake_ms(const struct agent_launcher *l);

/*
 * agent_launcher_fd() - a descriptor that becomes readable when a job this server runs
 * changes (inotify on jobs/<job>/status.json, which the daemon touches on every change
 * of the job) or when nodes/<node>/jobs is announced as changed (if the daemon does), or
 * -1 when inotify is not available (the caller then relies on agent_launcher_sync() at
 * every interval).
 */
int agent_launcher_fd(const struct agent_launcher *l);

/*
 * agent_launcher_stop_all() - stop every process (SIGTERM now, SIGKILL after the grace
 * period), exits not reported; from now on nothing is started. Keep calling
 * agent_launcher_poll() until agent_launcher_is_idle().
 */
void agent_launcher_stop_all(struct agent_launcher *l);

/*
 * agent_launcher_running() - set @report's `running` line (agent_report_running()):
 * the (job, generation) runs with a live process or process group member, stopping ones
 * included. Call it right before the report is rendered and written, with no sync in
 * between, so that a generation started from a listing read earlier is in it.
 */
void agent_launcher_running(const struct agent_launcher *l, struct conf_health_report *report);

/*
 * agent_launcher_take_report_due() - true (once) when a run that is no longer listed has
 * lost its last process since the last call: the caller reports now rather than at the
 * next interval, so that the daemon gives the job's NPUs back at once.
 */
bool agent_launcher_take_report_due(struct agent_launcher *l);

/* agent_launcher_is_idle() - true when no process of any run is left. */
bool agent_launcher_is_idle(const struct agent_launcher *l);

/*
 * ---- per-job cgroups, the file system side (agent_cgroup_sys.c) ----
 * agent.h describes the layout. Used by agent_launch.c; paths are absolute directories
 * of the cgroup2 filesystem, borrowed.
 */
struct agent_cgroups {
	bool enabled;			/* job processes get cgroups below node_dir */
	bool memory;			/* the memory controller is enabled for them */
	char node_dir[PATH_MAX];	/* <root>/node-<node>-<hash of the mount path> */
};

/*
 * agent_cgroups_init() - find the root (@root_opt: --cgroup-root, or NULL: derived from
 * /proc/self/cgroup and the cgroup2 mount), move the agent into <root>/agent when that
 * is what lets <root> enable controllers (not under systemd: see ascend-agent(8)),
 * enable cpu, memory and pids for the job cgroups where offered, and create the node's
 * directory (@node_dir_name, from agent_cgroup_node_name()). Logs one line: where job
 * cgroups go, or one warning why there are none and what to do (then
 * @cg->enabled is false and the launcher stops processes by process group, as before).
 */
void agent_cgroups_init(struct agent_cgroups *cg, const char *root_opt,
			const char *node_dir_name);

/* agent_cgroup_make() - mkdir @path (an existing one is fine). Returns 0 or -errno. */
int agent_cgroup_make(const char *path);

/*
 * agent_cgroup_open_procs() - @path/cgroup.procs opened for writing (O_CLOEXEC): a new
 * process writes "0" to it to join @path. Returns the descriptor or -errno.
 */
int agent_cgroup_open_procs(const char *path);

/* agent_cgroup_is_populated() - does @path or a cgroup below it hold a process? */
bool agent_cgroup_is_populated(const char *path);

/*
 * agent_cgroup_signal() - send @sig to every process of @path and the cgroups below it.
 * Returns how many were sent one.
 */
unsigned agent_cgroup_signal(const char *path, int sig);

/*
 * agent_cgroup_kill() - SIGKILL every process of @path and below: cgroup.kill (Linux
 * 5.14), else each pid of cgroup.procs. Returns 0, or the -errno of cgroup.kill (the
 * processes were then sent SIGKILL one by one).
 */
int agent_cgroup_kill(const char *path);

/*
 * agent_cgroup_remove() - rmdir the cgroups below @path, then @path (each must be empty
 * of processes). A @path already gone is fine. Returns 0 or -errno of the last rmdir.
 */
int agent_cgroup_remove(const char *path);

/*
 * agent_cgroup_usage() - what @path's processes used: cpu.stat usage_usec (µs of CPU),
 * memory.peak, else memory.current, else 0 (bytes). Returns 0 or -errno / -ENOENT.
 */
int agent_cgroup_usage(const char *path, uint64_t *ret_cpu_usec, uint64_t *ret_memory_bytes);

/*
 * agent_cgroups_list() - the directory names below @cg->node_dir: *@ret_names new
 * (free each, then the array), *@ret_count of them. Returns 0, -ENOMEM or -errno.
 */
int agent_cgroups_list(const struct agent_cgroups *cg, char ***ret_names, size_t *ret_count);

/*
 * agent_launcher_usage() - one entry per run with a cgroup (what it used so far), for
 * the health report: at most @max into @ret. Returns how many were filled.
 */
size_t agent_launcher_usage(const struct agent_launcher *l, struct conf_health_usage *ret,
			    size_t max);

#endif
