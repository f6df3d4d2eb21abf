/* SPDX-License-Identifier: MIT */
/* agent internals shared by the files of agent/. Not used outside agent/. */
#ifndef ASCENDFS_AGENT_INTERNAL_H
#define ASCENDFS_AGENT_INTERNAL_H

#include <stdbool.h>
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
 * Single-threaded: every function is called from the agent's loop. The caller reaps no
 * children of its own while the launcher has any (it waits for specific pids only).
 */
struct agent_launcher;

struct agent_launcher_options {
	const char *mount;		/* borrowed, lives on */
	const char *node;		/* borrowed, lives on */
	const char *log_dir;		/* borrowed, lives on; created when first needed */
	unsigned stop_grace_sec;	/* SIGTERM to SIGKILL */
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

/* agent_launcher_is_idle() - true when no process of any run is left. */
bool agent_launcher_is_idle(const struct agent_launcher *l);

#endif
