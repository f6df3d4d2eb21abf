/* SPDX-License-Identifier: MIT */
/*
 * ascend-agent: the node agent (design.md §1 and §6).
 *
 *   ascend-agent --mount MOUNTPOINT --node NAME [--interval SEC] [--poll-interval SEC]
 *                [--npu-smi PATH] [--hccn-tool PATH] [--hccn-conf FILE]
 *                [--fault-file FILE] [--log-dir DIR] [--cgroup-root DIR] [--lock-dir DIR]
 *                [--log-level LEVEL] [--once]
 *
 * Every interval it writes one health report to MOUNTPOINT/nodes/NAME/health with one
 * open/write/close; that write is the heartbeat. Health comes from the fault file when
 * one is given, else from `npu-smi info`; device IPs from hccn_tool or /etc/hccn.conf go
 * into the first report and into every report after they change (or after a refused
 * write: the daemon may have restarted). When npu-smi fails, nothing is written for that
 * interval: the daemon's heartbeat timeout then says what a broken probe means. A fault
 * file that turns invalid (half written) keeps its last valid content; one that was never
 * valid writes nothing. A refused write is logged and the loop goes on.
 *
 * It also runs the job processes of this server (agent_launch.c, described in
 * agent_internal.h): right after each report, when one of them exits, and when a job it
 * runs changes, it reads MOUNTPOINT/nodes/NAME/jobs, starts what is listed, stops what
 * is not, and reports exits to jobs/<job>/ctl. On SIGTERM or SIGINT it stops them as a
 * cancel would (SIGTERM, SIGKILL after the config's stop_grace_period), then exits. On
 * SIGHUP it reports and reads the listing at once, and goes on.
 *
 * The mount may be ascendfs's own or a network filesystem in front of it on another
 * server (sshfs, NFS: /proc/self/mountinfo tells). On a network mount inotify does not
 * see the daemon's changes, so the listing is also read every --poll-interval (default
 * 1 s), and close() does not return the daemon's refusal of a report, so each report is
 * confirmed by reading nodes/NAME/info back (a refusal is logged with its reason).
 *
 * Logs go to stderr, one timestamped line per event (with a syslog priority prefix
 * instead of the time when stderr is the journal); the report itself is logged only
 * when an NPU's level changes. Exit status: 0 after SIGTERM or SIGINT, or after --once
 * wrote its report (--once starts no job process); 1 on an error at start (unknown
 * node, no health source, no mount, another agent holding the instance lock: one agent
 * per server and machine, agent.h) or when --once could not write; 2 on a usage error.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"

#define INTERVAL_MAX_SEC 3600
/* A probe gets one interval, within these bounds (npu-smi info takes a second or two). */
#define PROBE_TIMEOUT_MIN_MS 10000
#define PROBE_TIMEOUT_MAX_MS 60000
#define DEFAULT_HCCN_CONF "/etc/hccn.conf"
#define DEFAULT_LOG_DIR "/var/log/ascend-agent"
/* After SIGKILL, how long the agent waits for its job processes before exiting anyway. */
#define STOP_EXTRA_MS 5000

extern char **environ;

struct agent {
	/* options */
	const char *mount;
	const char *node;
	const char *npu_smi;		/* NULL: fault file mode */
	const char *hccn_tool;		/* NULL: not used */
	const char *hccn_conf;		/* NULL: not used */
	const char *fault_file;		/* NULL: npu-smi mode */
	const char *log_dir;
	char log_dir_abs[PATH_MAX];	/* --log-dir made absolute: the job processes, which
					 * start elsewhere, are given paths in it */
	unsigned interval_sec;		/* 0 until known */
	int poll_interval_sec;		/* re-read the jobs listing; 0: off, -1: by mount */
	bool once;
	unsigned stop_grace_sec;	/* the config's stop_grace_period */
	const char *cgroup_root;	/* --cgroup-root; NULL: derived */
	const char *lock_dir;		/* --lock-dir; NULL: agent_lock_dir() */
	struct agent_launcher *launcher; /* the job processes (NULL with --once): each report
					  * lists the generations that still run and their
					  * usage lines */

	/* learned at start */
	unsigned npu_count;
	char health_path[PATH_MAX];
	char info_path[PATH_MAX];
	char fstype[64];		/* of the mount, e.g. "fuse.ascendfs", "fuse.sshfs" */
	char agent_id[CONF_HEALTH_AGENT_MAX]; /* "<host name>:<machine-id>/<pid>.<boot id>", in
					      * each report */
	bool network_mount;		/* not ascendfs's own mount: no inotify, no close()
					 * errors (sshfs, NFS) */
	int lock_fd;			/* holds the instance lock (agent.h); -1: none */

	/* state between reports */
	unsigned reports;			/* written */
	unsigned failed_writes;		/* in a row */
	int last_write_error;
	struct conf_health_report last_fault;	/* last valid fault file content */
	bool have_last_fault;
	struct agent_device_ips known_ips;	/* newest addresses seen */
	struct agent_device_ips sent_ips;	/* addresses in the last accepted report */
	bool ips_sent;
	struct conf_health_report last_sent;	/* levels of the last accepted report */
	bool warned_extra_npu;
	char last_problem[5][1024];		/* by enum problem: log each once */
	/* super-pod identity per NPU (A3, npu-smi mode), sent with the addresses */
	bool spod_unsupported;			/* npu-smi has none here: do not ask again */
	bool spod_known[CONF_SERVER_NPUS_MAX];
	struct agent_spod_info spod[CONF_SERVER_NPUS_MAX];
	bool spod_sent;				/* the last accepted report had them */
	/* the agent whose reports count, as info said after a refusal, when not this one:
	 * two agents use this node name, and this one runs no job process meanwhile */
	char holder[CONF_HEALTH_AGENT_MAX];
	bool standby;
};

enum problem { PROBLEM_HEALTH, PROBLEM_IPS, PROBLEM_FAULT_FILE, PROBLEM_CONFIRM, PROBLEM_SPOD };

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t child_signal; /* a job process exited: reap it */
static volatile sig_atomic_t hup_signal;   /* SIGHUP: report and read the jobs now */
static sigset_t wait_mask; /* the mask to wait with: stop signals and SIGCHLD deliverable */

/* ---- logging ---- */

/* Log @msg unless it repeats the last problem of its kind; "" clears it. */
static void log_problem(struct agent *a, enum problem kind, enum agent_log_level level,
			const char *msg)
{
	size_t n = strnlen(msg, sizeof(a->last_problem[kind]) - 1);

	if (strncmp(a->last_problem[kind], msg, n) == 0 && a->last_problem[kind][n] == '\0')
		return;
	memcpy(a->last_problem[kind], msg, n);
	a->last_problem[kind][n] = '\0';
	if (msg[0])
		agent_log(level, "%s", msg);
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void on_child(int sig)
{
	child_signal = 1;
}

static void on_hup(int sig)
{
	hup_signal = 1;
}

/*
 * Stop signals and SIGCHLD are blocked except while waiting (ppoll with wait_mask), so a
 * signal that arrives between a check of the flags and the wait still ends the wait.
 */
static int setup_signals(void)
{
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
		return -errno;
	/* not a stop: a closed terminal must not take the jobs with it */
	sa.sa_handler = on_hup;
	if (sigaction(SIGHUP, &sa, NULL) < 0)
		return -errno;
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &block, &wait_mask) < 0)
		return -errno;
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGCHLD);
	sigdelset(&wait_mask, SIGHUP);
	return 0;
}

/* ---- files and programs ---- */

/* Is @name a program we can run: a path to an executable, or found in $PATH? */
static bool program_exists(const char *name)
{
	const char *path = getenv("PATH"), *p;
	char full[PATH_MAX];

	if (strchr(name, '/'))
		return access(name, X_OK) == 0;
	if (!path)
		path = "/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0)
			snprintf(full, sizeof(full), "./%s", name);
		else
			snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, name);
		if (access(full, X_OK) == 0)
			return true;
		if (!end)
			return false;
		p = end;
	}
}

static void reap(pid_t pid, int *ret_status)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (ret_status)
		*ret_status = status;
}

/*
 * Run @argv (argv[0] searched in $PATH unless it holds a '/'), stdin from /dev/null,
 * stdout and stderr into one pipe. At most AGENT_PROBE_MAX_BYTES of output; the program
 * is killed after @timeout_ms. Returns 0 with *ret_out (new, NUL-terminated), *ret_len
 * and *ret_status (as waitpid gives it); -ETIME, -EFBIG, -EINTR (a stop signal came),
 * -ENOMEM or -errno from starting it.
 */
static int run_probe(char *const argv[], int timeout_ms, char **ret_out, size_t *ret_len,
		     int *ret_status)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	long long deadline = agent_now_ms() + timeout_ms;
	size_t cap = 8192, len = 0;
	char *out = NULL, *p;
	sigset_t none, dfl;
	int fds[2], r;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	r = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (r != 0) {
		close(fds[0]);
		return -r;
	}

	out = malloc(cap);
	if (!out) {
		r = -ENOMEM;
		goto kill_child;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		long long left = deadline - agent_now_ms();
		struct timespec ts;
		ssize_t n;

		if (stop_signal) {
			r = -EINTR;
			goto kill_child;
		}
		if (left <= 0) {
			r = -ETIME;
			goto kill_child;
		}
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000;
		if (ppoll(&pfd, 1, &ts, &wait_mask) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto kill_child;
		}
		if (!pfd.revents)
			continue;
		if (len + 1 >= cap) {
			if (cap > AGENT_PROBE_MAX_BYTES) {
				r = -EFBIG;
				goto kill_child;
			}
			p = realloc(out, cap * 2);
			if (!p) {
				r = -ENOMEM;
				goto kill_child;
			}
			out = p;
			cap *= 2;
		}
		n = read(fds[0], out + len, cap - len - 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			r = -errno;
			goto kill_child;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fds[0]);
	/* The output is complete; give the program until the deadline to exit. */
	for (;;) {
		int status;
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid) {
			out[len] = '\0';
			*ret_out = out;
			*ret_len = len;
			*ret_status = status;
			return 0;
		}
		if (w < 0 && errno != EINTR) {
			free(out);
			return -errno;
		}
		if (stop_signal || agent_now_ms() >= deadline) {
			kill(pid, SIGKILL);
			reap(pid, NULL);
			free(out);
			return stop_signal ? -EINTR : -ETIME;
		}
		usleep(10000);
	}

kill_child:
	close(fds[0]);
	kill(pid, SIGKILL);
	reap(pid, NULL);
	free(out);
	return r;
}

/* "exit status 3", "killed by signal 9". */
static const char *status_text(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "status 0x%x", (unsigned)status);
	return buf;
}

/* The first non-blank line of @out, shortened, for a message. */
static const char *first_line(const char *out, char *buf, size_t len)
{
	size_t n;

	while (*out == ' ' || *out == '\t' || *out == '\n' || *out == '\r')
		out++;
	n = strcspn(out, "\r\n");
	if (n == 0)
		snprintf(buf, len, "no output");
	else
		snprintf(buf, len, "\"%.*s\"", (int)(n < 160 ? n : 160), out);
	return buf;
}

static int probe_timeout_ms(const struct agent *a)
{
	long long ms = (long long)a->interval_sec * 1000;

	if (ms < PROBE_TIMEOUT_MIN_MS)
		ms = PROBE_TIMEOUT_MIN_MS;
	if (ms > PROBE_TIMEOUT_MAX_MS)
		ms = PROBE_TIMEOUT_MAX_MS;
	return (int)ms;
}

/* A probe's failure as a sentence into @msg; for -EINTR nothing is said. */
static void probe_failure(const char *what, int r, int status, const char *out, char *msg,
			  size_t len)
{
	char s[64], line[200];

	if (r == -ETIME)
		snprintf(msg, len, "%s did not finish in time; killed it", what);
	else if (r == -EFBIG)
		snprintf(msg, len, "%s printed more than %d bytes; killed it", what,
			 AGENT_PROBE_MAX_BYTES);
	else if (r == -ENOENT)
		snprintf(msg, len, "cannot run %s: no such program", what);
	else if (r < 0)
		snprintf(msg, len, "cannot run %s: %s", what, strerror(-r));
	else
		snprintf(msg, len, "%s failed (%s): %s", what, status_text(status, s, sizeof(s)),
			 first_line(out, line, sizeof(line)));
}

/* ---- health ---- */

/* True when @buf holds nothing but blank lines and '#' comments. */
static bool only_comments(const char *buf, size_t len)
{
	size_t i = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	bool in_comment = false;

	for (; i < len; i++) {
		if (buf[i] == '\n' || buf[i] == '\r')
			in_comment = false;
		else if (buf[i] == '#')
			in_comment = true;
		else if (!in_comment && buf[i] != ' ' && buf[i] != '\t')
			return false;
	}
	return true;
}

/*
 * The fault file's report. Absent or only comments: no faults. Invalid: the last valid
 * content (the file may be half written), logged once.
 */
static int health_from_fault_file(struct agent *a, struct conf_health_report *ret)
{
	struct conf_health_report rep;
	struct conf_error err;
	char *buf = NULL, msg[1024];
	size_t len = 0;
	int r;

	r = agent_read_file(a->fault_file, CONF_HEALTH_MAX_BYTES, &buf, &len);
	if (r == -ENOENT) {
		snprintf(msg, sizeof(msg), "fault file %s does not exist: reporting every NPU OK",
			 a->fault_file);
		log_problem(a, PROBLEM_FAULT_FILE, AGENT_LOG_INFO, msg);
		memset(ret, 0, sizeof(*ret));
		a->have_last_fault = false;
		return 0;
	}
	if (r == -EFBIG) {
		snprintf(msg, sizeof(msg), "fault file %s is larger than %d bytes, the limit of a "
			 "report", a->fault_file, CONF_HEALTH_MAX_BYTES);
		goto keep_last;
	}
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cannot read fault file %s: %s", a->fault_file,
			 strerror(-r));
		goto keep_last;
	}
	if (only_comments(buf, len)) {
		free(buf);
		memset(&rep, 0, sizeof(rep));
		goto accept;
	}
	r = conf_health_parse(buf, len, a->fault_file, a->npu_count, &rep, &err);
	free(buf);
	if (r < 0) {
		char where[768];

		snprintf(msg, sizeof(msg), "fault file: %s",
			 conf_error_format(&err, where, sizeof(where)));
		goto keep_last;
	}
accept:
	log_problem(a, PROBLEM_FAULT_FILE, AGENT_LOG_INFO, "");
	a->last_fault = rep;
	a->have_last_fault = true;
	*ret = rep;
	return 0;

keep_last:
	if (a->have_last_fault) {
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			 "; still reporting its last valid content");
		log_problem(a, PROBLEM_FAULT_FILE, AGENT_LOG_WARNING, msg);
		*ret = a->last_fault;
		return 0;
	}
	log_problem(a, PROBLEM_FAULT_FILE, AGENT_LOG_ERROR, msg);
	return -EINVAL;
}

static int health_from_npu_smi(struct agent *a, struct conf_health_report *ret)
{
	char *argv[] = { (char *)a->npu_smi, (char *)"info", NULL };
	struct conf_health_report rep;
	struct conf_error err;
	char *out = NULL, msg[1024], where[768], what[PATH_MAX + 16];
	size_t len = 0, i;
	int r, status = 0;

	snprintf(what, sizeof(what), "%s info", a->npu_smi);
	r = run_probe(argv, probe_timeout_ms(a), &out, &len, &status);
	if (r == -EINTR)
		return r;
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		probe_failure(what, r, status, out ? out : "", msg, sizeof(msg));
		free(out);
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "; no report this interval");
		log_problem(a, PROBLEM_HEALTH, AGENT_LOG_ERROR, msg);
		return -EIO;
	}
	r = agent_parse_npu_smi_info(out, len, what, &rep, &err);
	free(out);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "%s; no report this interval",
			 conf_error_format(&err, where, sizeof(where)));
		log_problem(a, PROBLEM_HEALTH, AGENT_LOG_ERROR, msg);
		return r;
	}
	for (i = 0; i < rep.npu_count; i++) {
		if (rep.npus[i].id >= a->npu_count && !a->warned_extra_npu) {
			agent_log(AGENT_LOG_WARNING,
				  "npu-smi lists device %u but %s has %u NPUs in the cluster "
				  "configuration; devices beyond them are not reported",
				  rep.npus[i].id, a->node, a->npu_count);
			a->warned_extra_npu = true;
		}
	}
	log_problem(a, PROBLEM_HEALTH, AGENT_LOG_INFO, "");
	*ret = rep;
	return 0;
}

/* ---- device IPs ---- */

/* Refresh a->known_ips; an address that cannot be read now keeps its old value. */
static void gather_ips(struct agent *a)
{
	struct conf_error err;
	char msg[1024] = "", where[768];
	int r;

	if (a->hccn_tool) {
		for (unsigned id = 0; id < a->npu_count && !stop_signal; id++) {
			char idtext[16], what[PATH_MAX + 32], ip[AGENT_IP_MAX];
			char *argv[] = { (char *)a->hccn_tool, (char *)"-i", idtext, (char *)"-ip",
					 (char *)"-g", NULL };
			char *out = NULL;
			size_t len = 0;
			int status = 0;

			snprintf(idtext, sizeof(idtext), "%u", id);
			snprintf(what, sizeof(what), "%s -i %u -ip -g", a->hccn_tool, id);
			r = run_probe(argv, probe_timeout_ms(a), &out, &len, &status);
			if (r == -EINTR)
				return;
			if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				if (!msg[0])
					probe_failure(what, r, status, out ? out : "", msg,
						      sizeof(msg));
				free(out);
				continue;
			}
			r = agent_parse_hccn_ip(out, len, what, ip, NULL, &err);
			free(out);
			if (r == -ENOENT) {
				a->known_ips.ip[id][0] = '\0';
			} else if (r < 0) {
				if (!msg[0])
					snprintf(msg, sizeof(msg), "%s",
						 conf_error_format(&err, where, sizeof(where)));
			} else {
				memcpy(a->known_ips.ip[id], ip, AGENT_IP_MAX);
			}
		}
	} else if (a->hccn_conf) {
		struct agent_device_ips ips;
		char *buf = NULL;
		size_t len = 0;

		r = agent_read_file(a->hccn_conf, AGENT_PROBE_MAX_BYTES, &buf, &len);
		if (r < 0) {
			snprintf(msg, sizeof(msg), "cannot read %s: %s", a->hccn_conf,
				 strerror(-r));
		} else if (agent_parse_hccn_conf(buf, len, a->hccn_conf, &ips, &err) < 0) {
			snprintf(msg, sizeof(msg), "%s",
				 conf_error_format(&err, where, sizeof(where)));
		} else {
			a->known_ips = ips;
		}
		free(buf);
	}
	if (msg[0])
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			 "; device IPs keep their last known values");
	if (!msg[0])
		/* one address on two NPUs would have the whole report refused */
		agent_device_ips_check(&a->known_ips, a->npu_count, msg, sizeof(msg));
	log_problem(a, PROBLEM_IPS, AGENT_LOG_WARNING, msg);
}

/*
 * Read each NPU's super-pod identity once (A3: `npu-smi info -t spod-info -i CARD -c
 * CHIP`, card and chip = physical id / 2 and % 2); a server whose npu-smi has none
 * (Atlas 800, A2) is asked once only.
 */
static void gather_spod(struct agent *a)
{
	char msg[1024] = "", where[768];

	if (!a->npu_smi)
		a->spod_unsupported = true; /* a fault file has no hardware to ask */
	if (a->spod_unsupported)
		return;
	for (unsigned id = 0; id < a->npu_count && !stop_signal; id++) {
		char card[16], chip[16], what[PATH_MAX + 64];
		char *argv[] = { (char *)a->npu_smi, (char *)"info", (char *)"-t",
				 (char *)"spod-info", (char *)"-i", card, (char *)"-c", chip, NULL };
		struct agent_spod_info info;
		struct conf_error err;
		char *out = NULL;
		size_t len = 0;
		int status = 0, r;

		if (a->spod_known[id])
			continue;
		snprintf(card, sizeof(card), "%u", id / 2);
		snprintf(chip, sizeof(chip), "%u", id % 2);
		snprintf(what, sizeof(what), "%s info -t spod-info -i %u -c %u", a->npu_smi,
			 id / 2, id % 2);
		r = run_probe(argv, probe_timeout_ms(a), &out, &len, &status);
		if (r == -EINTR) {
			free(out);
			return;
		}
		r = r < 0 ? r : agent_parse_spod_info(out ? out : "", len, what, &info, &err);
		free(out);
		if (r == -ENOENT && id == 0) {
			a->spod_unsupported = true; /* not a super pod server */
			return;
		}
		if (r < 0) {
			if (!msg[0])
				snprintf(msg, sizeof(msg), "%.900s; the NPU's SDID is not reported",
					 r == -EINVAL || r == -EFBIG ?
						 conf_error_format(&err, where, sizeof(where)) :
						 what);
			continue;
		}
		a->spod[id] = info;
		a->spod_known[id] = true;
	}
	log_problem(a, PROBLEM_SPOD, AGENT_LOG_WARNING, msg);
}

/* Add the super-pod identities known to @rep (one entry per NPU, in id order). */
static void report_add_spod(const struct agent *a, struct conf_health_report *rep)
{
	for (size_t i = 0; i < rep->npu_count; i++) {
		struct conf_health_npu *n = &rep->npus[i];

		if (n->id >= CONF_SERVER_NPUS_MAX || !a->spod_known[n->id])
			continue;
		n->has_sdid = true;
		n->sdid = a->spod[n->id].sdid;
		n->super_pod_id = a->spod[n->id].super_pod_id;
		n->server_index = a->spod[n->id].server_index;
	}
}

static bool spod_all_known(const struct agent *a)
{
	for (unsigned id = 0; id < a->npu_count; id++)
		if (!a->spod_known[id])
			return false;
	return true;
}

/* ---- the report ---- */

static int write_health(const struct agent *a, const char *text, size_t len)
{
	int fd, r;

	fd = open(a->health_path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* One write(): the report is a few KiB and the daemon takes it whole. */
	r = agent_write_all(fd, text, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/*
 * On a network mount the close() of the health file succeeds even when the daemon
 * refused the report (sshfs does not pass the head's close() error on), so read
 * nodes/<node>/info back: the report counted when the heartbeat is younger than the
 * time since the write began and info names this agent as the one whose reports count
 * (or names none: an older daemon). Returns 0, or -EINVAL with the daemon's reason (or
 * what info shows) in @why. With @refusal_only, for a write that failed (a refusal
 * close() did return, or sshfs's EIO), only a refusal recorded since the write began is
 * -EINVAL; anything else is 0. An info that cannot be read or parsed proves nothing
 * either way: 0, logged once.
 */
/*
 * sshfs sends the SFTP close of the health file (where the head's close() applies the
 * report) after the local close() has returned, so the first read of info may come
 * before it: a heartbeat that has not moved is read again this many times, this far apart.
 */
#define CONFIRM_TRIES 4
#define CONFIRM_RETRY_MS 100

static int confirm_report(struct agent *a, long long began_ms, bool refusal_only, char *why,
			  size_t why_len)
{
	struct agent_node_heartbeat hb;
	struct conf_error err;
	char *buf = NULL, where[768], msg[1024];
	double since_sec;
	size_t len = 0;
	int r, tries = 0;

again:
	r = agent_read_file(a->info_path, 64 * 1024, &buf, &len);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cannot read %.700s to confirm the report: %s",
			 a->info_path, strerror(-r));
		log_problem(a, PROBLEM_CONFIRM, AGENT_LOG_WARNING, msg);
		return 0;
	}
	r = agent_parse_node_heartbeat(buf, len, a->info_path, &hb, &err);
	free(buf);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "%s; reports are not confirmed",
			 conf_error_format(&err, where, sizeof(where)));
		log_problem(a, PROBLEM_CONFIRM, AGENT_LOG_WARNING, msg);
		return 0;
	}
	log_problem(a, PROBLEM_CONFIRM, AGENT_LOG_INFO, "");
	if (hb.agent[0] && strcmp(hb.agent, a->agent_id) != 0)
		memcpy(a->holder, hb.agent, sizeof(a->holder));
	else
		a->holder[0] = '\0';
	/* 50 ms for the rounding of the two clocks' readings */
	since_sec = (double)(agent_now_ms() - began_ms) / 1000.0 + 0.05;
	if (hb.refused && hb.refused_age_sec <= since_sec) {
		snprintf(why, why_len, "%s", hb.refusal);
		return -EINVAL;
	}
	if (refusal_only)
		return 0; /* the write failed anyway; only the daemon's reason was wanted */
	/* a heartbeat that moved counts for this agent only when info names it (another
	 * agent using this node name moves it too) */
	if (hb.age_sec >= 0 && hb.age_sec <= since_sec &&
	    (!hb.agent[0] || strcmp(hb.agent, a->agent_id) == 0))
		return 0;
	if (++tries < CONFIRM_TRIES && !stop_signal) {
		usleep(CONFIRM_RETRY_MS * 1000);
		goto again;
	}
	if (hb.agent[0] && strcmp(hb.agent, a->agent_id) != 0)
		snprintf(why, why_len, "nodes/%.64s/info says the reports that count come from "
			 "agent %.120s, not this one (%.120s): two agents use the node name %.64s",
			 a->node, hb.agent, a->agent_id, a->node);
	else
		snprintf(why, why_len, "the heartbeat in %.400s did not move in %d ms (%s)",
			 a->info_path, (int)(agent_now_ms() - began_ms),
			 hb.age_sec < 0 ? "no report accepted yet" : "older than this write");
	return -EINVAL;
}

static const char *write_error_hint(const struct agent *a, int r)
{
	char path[PATH_MAX];
	struct stat st;

	switch (-r) {
	case EPERM:
		/* sshfs turns SFTP's generic failure into EPERM: whatever the head's
		 * sftp-server could not name (ENOTCONN from a dead ascendfs mount, an I/O
		 * error) arrives as this, and a real permission refusal as EACCES */
		if (a->network_mount)
			return "; through a network mount this is also how the head's own failures "
			       "arrive (a dead ascendfs mount there, an I/O error): is ascendfs "
			       "running on the head, and do its log and nodes/<node>/info say more?";
		/* fall through */
	case EACCES:
		return "; node health is writable by root (or the group the daemon allows): run "
		       "the agent as that user";
	case EINVAL:
		return "; the daemon refused the report, its log says why";
	case ENOTCONN:
		return "; the mount is dead: is ascendfs running?";
	case ENOENT:
		snprintf(path, sizeof(path), "%s/nodes", a->mount);
		if (stat(path, &st) < 0)
			return "; nothing is mounted there now: is ascendfs running?";
		return "; is the node still in the cluster configuration?";
	default:
		return "";
	}
}

/* "npu 3 Critical 0x80C98000 HBM uncorrectable ECC" into @buf. */
static const char *npu_text(const struct conf_health_npu *n, char *buf, size_t len)
{
	snprintf(buf, len, "npu %u %s%s%s%s%s", n->id, conf_health_level_name(n->level),
		 n->code[0] ? " " : "", n->code, n->message[0] ? " " : "", n->message);
	return buf;
}

/* Log what changed since the last accepted report (everything not OK, the first time). */
static void log_changes(struct agent *a, const struct conf_health_report *rep, bool with_ips,
			long long write_ms)
{
	char line[256], list[1536] = "";
	size_t o = 0, i, ips = 0, bad = 0;

	if (a->reports == 0) {
		for (i = 0; i < rep->npu_count; i++) {
			ips += rep->npus[i].device_ip[0] != '\0';
			if (rep->npus[i].level == CONF_HEALTH_OK)
				continue;
			bad++;
			if (o < sizeof(list))
				o += (size_t)snprintf(list + o, sizeof(list) - o, "; %s",
						      npu_text(&rep->npus[i], line, sizeof(line)));
		}
		agent_log(AGENT_LOG_INFO, "first report written: node %s, %zu %s, %zu not OK%s; "
			  "%zu device %s",
			  conf_health_level_name(rep->node), rep->npu_count,
			  conf_plural(rep->npu_count, "NPU", "NPUs"), bad, list, ips,
			  conf_plural(ips, "IP", "IPs"));
		return;
	}
	if (rep->node != a->last_sent.node)
		agent_log(AGENT_LOG_INFO, "node: %s -> %s",
			  conf_health_level_name(a->last_sent.node),
			  conf_health_level_name(rep->node));
	for (i = 0; i < rep->npu_count && i < a->last_sent.npu_count; i++) {
		const struct conf_health_npu *n = &rep->npus[i], *old = &a->last_sent.npus[i];

		if (n->level != old->level || strcmp(n->code, old->code) != 0)
			/* the daemon acts on a fault inside that write: its time is the
			 * daemon's reaction time as seen from here */
			agent_log(AGENT_LOG_INFO, "%s (was %s; report written in %lld ms)",
				  npu_text(n, line, sizeof(line)),
				  conf_health_level_name(old->level), write_ms);
	}
	if (with_ips)
		agent_log(AGENT_LOG_INFO, "device IPs %s; sent them with this report",
			  a->ips_sent ? "changed" : "not yet accepted");
}

/*
 * Another agent's reports count for this server (a refusal, and info names that agent):
 * run none of its job processes meanwhile, or each would run twice; the daemon lets
 * this agent take over once the other falls silent (ascend-agent(8)).
 */
static void set_standby(struct agent *a, bool standby)
{
	if (standby && !a->standby)
		agent_log(AGENT_LOG_WARNING, "the reports of agent %s count for %s, not this "
			  "agent's (%s): starting no job process until they stop; if that agent "
			  "is gone, this one takes over after its silence",
			  a->holder, a->node, a->agent_id);
	else if (!standby && a->standby)
		agent_log(AGENT_LOG_INFO, "this agent's reports count for %s now: running its "
			  "job processes", a->node);
	a->standby = standby;
	if (a->launcher)
		agent_launcher_set_standby(a->launcher, standby);
}

/* Gather, build, write. Returns 0 when a report was written. */
static int report_once(struct agent *a)
{
	struct conf_health_report health, rep;
	struct agent_device_ips ips;
	enum conf_health_level absent;
	char *text = NULL;
	size_t len = 0;
	long long write_ms, began_ms;
	char refusal[AGENT_REFUSAL_MAX + 256];
	bool with_ips;
	int r;

	if (a->fault_file) {
		r = health_from_fault_file(a, &health);
		absent = CONF_HEALTH_OK;
	} else {
		r = health_from_npu_smi(a, &health);
		absent = CONF_HEALTH_UNKNOWN;
	}
	if (r < 0)
		return r;
	gather_ips(a);
	gather_spod(a);
	if (stop_signal)
		return -EINTR;

	agent_report_build(&health, a->npu_count, absent, &a->known_ips, &rep);
	memcpy(rep.agent, a->agent_id, sizeof(rep.agent));
	/* what still runs, as of this write: the daemon frees a stopping job's NPUs once no
	 * server lists it */
	if (a->launcher)
		agent_launcher_running(a->launcher, &rep);
	/* what each job generation's cgroup used so far */
	if (a->launcher)
		rep.usage_count = agent_launcher_usage(a->launcher, rep.usage,
						       CONF_HEALTH_USAGE_MAX);
	agent_report_ips(&rep, &ips);
	with_ips = !a->ips_sent || memcmp(&ips, &a->sent_ips, sizeof(ips)) != 0 ||
		   (!a->spod_unsupported && !a->spod_sent);
	if (!with_ips)
		agent_report_strip_ips(&rep);
	else if (!a->spod_unsupported)
		report_add_spod(a, &rep);
	r = conf_health_render(&rep, &text, &len);
	if (r < 0) {
		agent_log(AGENT_LOG_ERROR, "cannot render the report: %s", strerror(-r));
		return r;
	}
	began_ms = agent_now_ms();
	r = write_health(a, text, len);
	write_ms = agent_now_ms() - began_ms;
	free(text);
	refusal[0] = '\0';
	a->holder[0] = '\0';
	if (r == 0 && a->network_mount)
		r = confirm_report(a, began_ms, false, refusal, sizeof(refusal));
	else if (r == -EINVAL || (r == -EIO && a->network_mount))
		/* refused (sshfs turns a refused write into EIO): the reason is in info, if
		 * the daemon refused it (an EIO may also be the link's) */
		(void)confirm_report(a, began_ms, true, refusal, sizeof(refusal));
	if (r < 0) {
		/* Send the addresses again once writes pass: the daemon may have restarted. */
		a->ips_sent = false;
		a->spod_sent = false;
		if (refusal[0] && a->network_mount)
			agent_log(AGENT_LOG_ERROR, "the daemon refused the report written to %s: %s "
				  "(read from nodes/%s/info: a %s mount does not pass the "
				  "daemon's reason on)",
				  a->health_path, refusal, a->node, a->fstype);
		else if (refusal[0])
			agent_log(AGENT_LOG_ERROR, "the daemon refused the report written to %s: %s",
				  a->health_path, refusal);
		else if (a->failed_writes == 0 || r != a->last_write_error)
			agent_log(AGENT_LOG_ERROR, "cannot write %s: %s%s", a->health_path,
				  strerror(-r), write_error_hint(a, r));
		a->failed_writes++;
		a->last_write_error = r;
		set_standby(a, a->holder[0] != '\0');
		return r;
	}
	set_standby(a, false);
	if (a->failed_writes)
		agent_log(AGENT_LOG_INFO, "report written again after %u failed write%s",
			  a->failed_writes, a->failed_writes == 1 ? "" : "s");
	a->failed_writes = 0;
	log_changes(a, &rep, with_ips && a->reports > 0, write_ms);
	if (with_ips) {
		a->sent_ips = ips;
		a->ips_sent = true;
		a->spod_sent = spod_all_known(a);
	}
	a->last_sent = rep;
	a->reports++;
	return 0;
}

/* ---- start-up ---- */

/* Known node names under @mount/nodes, for a message. */
static void list_nodes(const char *mount, char *buf, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t o = 0, n = 0;
	DIR *d;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/nodes", mount);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && o < len) {
		if (de->d_name[0] == '.')
			continue;
		if (++n > 8) {
			o += (size_t)snprintf(buf + o, len - o, ", ...");
			break;
		}
		o += (size_t)snprintf(buf + o, len - o, "%s%s", n > 1 ? ", " : "", de->d_name);
	}
	closedir(d);
}

static int learn_node(struct agent *a)
{
	struct conf_error err;
	char path[PATH_MAX], names[512], where[768], *buf = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	snprintf(path, sizeof(path), "%s/nodes", a->mount);
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		r = errno == ENOTCONN ? -ENOTCONN : -ENOENT;
		agent_log(AGENT_LOG_ERROR, "%s is not an ascendfs mount (%s has no nodes/ "
			  "directory%s); mount it there or give --mount",
			  a->mount, a->mount, r == -ENOTCONN ? ": the mount is dead" : "");
		return r;
	}
	snprintf(path, sizeof(path), "%s/nodes/%s/info", a->mount, a->node);
	r = agent_read_file(path, 64 * 1024, &buf, &len);
	if (r == -ENOENT) {
		list_nodes(a->mount, names, sizeof(names));
		agent_log(AGENT_LOG_ERROR, "node \"%s\" is not in the cluster mounted at %s; its "
			  "nodes are: %s",
			  a->node, a->mount, names[0] ? names : "(none)");
		return r;
	}
	if (r < 0) {
		agent_log(AGENT_LOG_ERROR, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	r = agent_parse_node_info(buf, len, path, &a->npu_count, &err);
	free(buf);
	if (r < 0) {
		agent_log(AGENT_LOG_ERROR, "%s", conf_error_format(&err, where, sizeof(where)));
		return r;
	}
	snprintf(a->health_path, sizeof(a->health_path), "%s/nodes/%s/health", a->mount,
		 a->node);
	snprintf(a->info_path, sizeof(a->info_path), "%s/nodes/%s/info", a->mount, a->node);
	return 0;
}

/* Poll the jobs listing this often on a network mount unless --poll-interval says. */
#define NETWORK_POLL_SEC 1

/*
 * Which filesystem serves the mount: ascendfs's own (inotify sees the daemon's changes,
 * close() returns its errors) or a network filesystem in between (sshfs, NFS: neither),
 * from /proc/self/mountinfo. When that cannot be read, assume a network mount: polling
 * and confirming cost a read each, missing a change costs an interval.
 */
/*
 * This agent's identity in its reports: "<host name>:<machine-id>/<pid>.<boot id>"
 * (machine-id(5), the host name alone when there is none; the first 8 hex digits of the
 * kernel's boot_id), so that the daemon refuses a second agent that uses the same node
 * name on another server, or on this one (sched_server_check_agent()): the part before
 * the '/' names the machine, the rest this process.
 */
static void learn_identity(struct agent *a)
{
	static const char *const id_files[] = { "/etc/machine-id", "/var/lib/dbus/machine-id" };
	char host[256] = "", boot[9], *buf = NULL;
	size_t len = 0, o;

	if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
		snprintf(host, sizeof(host), "unknown");
	for (o = 0; host[o]; o++)
		if (host[o] <= ' ' || host[o] > '~' || host[o] == '/')
			host[o] = '_';
	snprintf(a->agent_id, sizeof(a->agent_id), "%.100s", host);
	for (size_t i = 0; i < sizeof(id_files) / sizeof(id_files[0]); i++) {
		if (agent_read_file(id_files[i], 256, &buf, &len) < 0)
			continue;
		len = strspn(buf, "0123456789abcdefABCDEF");
		if (len > 0) {
			o = strlen(a->agent_id);
			snprintf(a->agent_id + o, sizeof(a->agent_id) - o, ":%.*s",
				 (int)(len < 40 ? len : 40), buf);
			free(buf);
			break;
		}
		free(buf);
		buf = NULL;
	}
	/* the instance: two agents of one machine, or one restarted, differ here */
	o = 0;
	if (agent_read_file("/proc/sys/kernel/random/boot_id", 256, &buf, &len) == 0) {
		for (size_t i = 0; buf[i] && o < 8; i++)
			if (strchr("0123456789abcdef", buf[i]))
				boot[o++] = buf[i];
		free(buf);
	}
	boot[o] = '\0';
	o = strlen(a->agent_id);
	snprintf(a->agent_id + o, sizeof(a->agent_id) - o, "/%ld%s%s", (long)getpid(),
		 boot[0] ? "." : "", boot);
}

static void learn_mount(struct agent *a)
{
	char canon[PATH_MAX], *buf = NULL;
	size_t len = 0;
	int r;

	snprintf(a->fstype, sizeof(a->fstype), "unknown");
	if (!realpath(a->mount, canon))
		snprintf(canon, sizeof(canon), "%s", a->mount);
	r = agent_read_file("/proc/self/mountinfo", 16 * 1024 * 1024, &buf, &len);
	if (r == 0)
		r = agent_mount_fstype(buf, len, canon, a->fstype, sizeof(a->fstype));
	free(buf);
	if (r < 0)
		agent_log(AGENT_LOG_WARNING, "cannot tell which filesystem serves %s (/proc/self/"
			  "mountinfo: %s); treating it as a network mount",
			  a->mount, strerror(-r));
	a->network_mount = strcmp(a->fstype, "fuse.ascendfs") != 0;
	if (a->poll_interval_sec < 0)
		a->poll_interval_sec = a->network_mount ? NETWORK_POLL_SEC : 0;
}

/*
 * fault_check_interval (unless --interval was given) and stop_grace_period from
 * cluster/config. Without --interval the configuration is required; with it, a
 * configuration that cannot be read leaves the default grace period.
 */
static int learn_config(struct agent *a)
{
	struct conf_cluster *c = NULL;
	struct conf_error err;
	char path[PATH_MAX], where[PATH_MAX + 768], *buf = NULL;
	size_t len = 0;
	int r;

	snprintf(path, sizeof(path), "%s/cluster/config", a->mount);
	r = agent_read_file(path, CONF_CONFIG_MAX_BYTES, &buf, &len);
	if (r == 0) {
		r = conf_cluster_parse(buf, len, path, &c, &err);
		free(buf);
		if (r < 0)
			conf_error_format(&err, where, sizeof(where));
	} else {
		snprintf(where, sizeof(where), "cannot read %s: %s", path, strerror(-r));
	}
	if (r < 0) {
		if (!a->interval_sec) {
			agent_log(AGENT_LOG_ERROR, "%s; give --interval (fault_check_interval "
				  "comes from there)", where);
			return r;
		}
		agent_log(AGENT_LOG_WARNING, "%s; job processes get the default stop grace "
			  "period of %u s", where, a->stop_grace_sec);
		return 0;
	}
	if (!a->interval_sec)
		a->interval_sec = c->fault_check_interval_sec;
	a->stop_grace_sec = c->stop_grace_sec;
	conf_cluster_free(c);
	return 0;
}

/*
 * One agent per server and machine: take the instance lock (agent.h) for the life of the
 * process, or refuse to start, naming the agent that holds it and how to stop it.
 */
static int take_lock(struct agent *a)
{
	char canon[PATH_MAX], dir[PATH_MAX], name[AGENT_CGROUP_NAME_MAX + 16];
	char holder[PATH_MAX + 128], text[AGENT_LOCK_TEXT_MAX], what[PATH_MAX + 128];
	long pid = 0;
	int r;

	if (!realpath(a->mount, canon))
		snprintf(canon, sizeof(canon), "%s", a->mount);
	if (a->lock_dir)
		r = snprintf(dir, sizeof(dir), "%s", a->lock_dir) < (int)sizeof(dir) ?
			    0 : -ENAMETOOLONG;
	else
		r = agent_lock_dir((unsigned)geteuid(), getenv("XDG_RUNTIME_DIR"), dir,
				   sizeof(dir));
	if (r == 0)
		r = agent_lock_name(a->node, canon, a->npu_smi != NULL, name, sizeof(name));
	if (r < 0) {
		agent_log(AGENT_LOG_ERROR, "cannot name the agent's lock file: %s", strerror(-r));
		return r;
	}
	if (a->npu_smi)
		snprintf(what, sizeof(what), "the NPUs of this machine");
	else
		snprintf(what, sizeof(what), "node %s of the mount %.4000s", a->node, canon);
	snprintf(holder, sizeof(holder), "pid %ld node %s mount %.4000s\n", (long)getpid(),
		 a->node, canon);
	r = agent_lock_take(dir, name, holder, &a->lock_fd, &pid, text, sizeof(text));
	if (r == -EBUSY && pid > 0) {
		agent_log(AGENT_LOG_ERROR, "another agent already runs %s: %s/%s is held by %s; "
			  "one agent per server and machine (two would each start the jobs' "
			  "processes on the same NPUs): stop that agent first (kill -TERM %ld, or "
			  "systemctl stop ascend-agent), then start this one",
			  what, dir, name, text, pid);
		return r;
	}
	if (r == -EBUSY) {
		agent_log(AGENT_LOG_ERROR, "another agent already runs %s: %s/%s is held by an "
			  "agent that has not written its pid yet (it is starting); one agent per "
			  "server and machine: stop that agent first, then start this one",
			  what, dir, name);
		return r;
	}
	if (r < 0) {
		agent_log(AGENT_LOG_ERROR, "cannot take the lock %s/%s that keeps a second agent "
			  "from running %s: %s%s",
			  dir, name, what, strerror(-r),
			  r == -EPERM ? " (the directory must belong to this user or root and be "
					"writable by it alone)" : "");
		return r;
	}
	return 0;
}

/* Pick the health source; none is an error the user must hear about. */
static int choose_health_source(struct agent *a, bool npu_smi_given)
{
	if (a->fault_file) {
		a->npu_smi = NULL;
		return 0;
	}
	if (program_exists(a->npu_smi))
		return 0;
	if (npu_smi_given)
		agent_log(AGENT_LOG_ERROR, "cannot run npu-smi at %s: no such executable; give the "
			  "path of the Ascend driver's npu-smi, or --fault-file FILE to inject "
			  "health in tests",
			  a->npu_smi);
	else
		agent_log(AGENT_LOG_ERROR, "no health source: npu-smi is not in PATH and no "
			  "--fault-file was given; install the Ascend driver (npu-smi), give "
			  "--npu-smi PATH, or give --fault-file FILE to inject health in tests");
	return -ENOENT;
}

static int choose_ip_source(struct agent *a, bool hccn_tool_given, bool hccn_conf_given)
{
	if (hccn_tool_given) {
		if (program_exists(a->hccn_tool))
			return 0;
		agent_log(AGENT_LOG_ERROR, "cannot run hccn_tool at %s: no such executable",
			  a->hccn_tool);
		return -ENOENT;
	}
	if (!hccn_conf_given && program_exists("hccn_tool")) {
		a->hccn_tool = "hccn_tool";
		return 0;
	}
	if (access(a->hccn_conf, R_OK) == 0)
		return 0;
	if (hccn_conf_given) {
		agent_log(AGENT_LOG_ERROR, "cannot read %s: %s", a->hccn_conf, strerror(errno));
		return -errno;
	}
	a->hccn_conf = NULL;
	return 0;
}

/*
 * Wait until @deadline_ms (CLOCK_MONOTONIC; < 0: none, then at most a minute), a stop
 * signal or SIGHUP (unless @ignore_stop), SIGCHLD, or until @fd (-1: none) is readable.
 */
static void wait_events(long long deadline_ms, int fd, bool ignore_stop)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (deadline_ms < 0)
		deadline_ms = agent_now_ms() + 60000;
	/* while stopping (@ignore_stop) a SIGHUP asks for nothing: it must not end the wait */
	while ((ignore_stop || (!stop_signal && !hup_signal)) && !child_signal) {
		long long left = deadline_ms - agent_now_ms();
		struct timespec ts;

		if (left <= 0)
			return;
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000;
		if (ppoll(fd >= 0 ? &pfd : NULL, fd >= 0 ? 1 : 0, &ts, &wait_mask) > 0)
			return;
	}
}

static long long earliest(long long a, long long b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s --mount MOUNTPOINT --node NAME [options]\n"
		"\n"
		"Report this server's NPU health to ascendfs: every interval, write one report\n"
		"to MOUNTPOINT/nodes/NAME/health (that write is also the heartbeat).\n"
		"\n"
		"options:\n"
		"    --mount DIR        where ascendfs is mounted (e.g. /ascend)\n"
		"    --node NAME        this server's name in the cluster configuration\n"
		"    --interval SEC     seconds between reports (also \"5s\", \"1m\");\n"
		"                       default: the cluster's fault_check_interval, read\n"
		"                       from MOUNTPOINT/cluster/config\n"
		"    --poll-interval SEC\n"
		"                       also read nodes/NAME/jobs every SEC between\n"
		"                       reports (0: off); default 1 s on a network mount\n"
		"                       (sshfs, NFS), where inotify does not see the\n"
		"                       daemon's changes, and off on ascendfs's own mount\n"
		"    --npu-smi PATH     npu-smi to run as \"PATH info\"\n"
		"                       (default: npu-smi in PATH)\n"
		"    --hccn-tool PATH   hccn_tool for device IPs, run as \"PATH -i N -ip -g\"\n"
		"                       (default: hccn_tool in PATH, else --hccn-conf)\n"
		"    --hccn-conf FILE   device IPs from address_N= lines (default %s)\n"
		"    --fault-file FILE  take health from FILE instead of npu-smi, in the\n"
		"                       report's line format, e.g.\n"
		"                       \"npu 3 Critical 0x80C98000 HBM ECC\"; NPUs it does\n"
		"                       not name are OK, a missing file means no faults.\n"
		"                       Replace it atomically (write a copy, then mv)\n"
		"    --log-dir DIR      directory for job process logs, one per rank (or per\n"
		"                       server for msrun) under DIR/<job>/g<generation>/\n"
		"                       (default %s, created when first needed)\n"
		"    --cgroup-root DIR  put job cgroups below DIR, a cgroup2 directory\n"
		"                       (default: the agent's own cgroup)\n"
		"    --lock-dir DIR     keep the lock that allows one agent per server and\n"
		"                       machine in DIR (default /run/ascend-agent as root)\n"
		"    --once             write one report and exit (0 when it was accepted)\n"
		"    --log-level LEVEL  error, warning or info (default): log that and what is\n"
		"                       more severe. Under systemd (stderr is the journal)\n"
		"                       lines carry their syslog priority instead of a time\n"
		"    -h, --help         print this help\n"
		"    -V, --version      print the version\n",
		prog, DEFAULT_HCCN_CONF, DEFAULT_LOG_DIR);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "node", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "poll-interval", required_argument, NULL, 'p' },
		{ "npu-smi", required_argument, NULL, 's' },
		{ "hccn-tool", required_argument, NULL, 't' },
		{ "hccn-conf", required_argument, NULL, 'c' },
		{ "fault-file", required_argument, NULL, 'f' },
		{ "log-dir", required_argument, NULL, 'l' },
		{ "cgroup-root", required_argument, NULL, 'g' },
		{ "lock-dir", required_argument, NULL, 'k' },
		{ "once", no_argument, NULL, 'o' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct agent agent; /* about 20 KiB, kept off the stack */
	struct agent *a = &agent;
	bool npu_smi_given = false, hccn_tool_given = false, hccn_conf_given = false;
	enum agent_log_level log_level = AGENT_LOG_INFO;
	struct agent_launcher_options lo;
	struct agent_launcher *l = NULL;
	uint64_t interval;
	char every[32];
	long long next, next_poll, give_up;
	int opt, r;

	a->npu_smi = "npu-smi";
	a->hccn_conf = DEFAULT_HCCN_CONF;
	a->lock_fd = -1;
	a->poll_interval_sec = -1;
	a->stop_grace_sec = 30;
	while ((opt = getopt_long(argc, argv, "hV", options, NULL)) != -1) {
		switch (opt) {
		case 'm':
			a->mount = optarg;
			break;
		case 'n':
			a->node = optarg;
			break;
		case 'i':
			if (conf_parse_duration(optarg, &interval) < 0 || interval < 1 ||
			    interval > INTERVAL_MAX_SEC) {
				fprintf(stderr, "ascend-agent: --interval: \"%s\" is not 1 to %d "
					"seconds; use e.g. 5 or 5s\n",
					optarg, INTERVAL_MAX_SEC);
				return 2;
			}
			a->interval_sec = (unsigned)interval;
			break;
		case 'p':
			if (conf_parse_duration(optarg, &interval) < 0 ||
			    interval > INTERVAL_MAX_SEC) {
				fprintf(stderr, "ascend-agent: --poll-interval: \"%s\" is not 0 to "
					"%d seconds; use e.g. 1 or 2s (0: off)\n",
					optarg, INTERVAL_MAX_SEC);
				return 2;
			}
			a->poll_interval_sec = (int)interval;
			break;
		case 's':
			a->npu_smi = optarg;
			npu_smi_given = true;
			break;
		case 't':
			a->hccn_tool = optarg;
			hccn_tool_given = true;
			break;
		case 'c':
			a->hccn_conf = optarg;
			hccn_conf_given = true;
			break;
		case 'f':
			a->fault_file = optarg;
			break;
		case 'l':
			a->log_dir = optarg;
			break;
		case 'g':
			if (optarg[0] != '/') {
				fprintf(stderr, "ascend-agent: --cgroup-root: \"%s\" is not an "
					"absolute path; give a directory of the cgroup2 filesystem, "
					"e.g. /sys/fs/cgroup/ascend\n", optarg);
				return 2;
			}
			a->cgroup_root = optarg;
			break;
		case 'k':
			if (!optarg[0]) {
				fprintf(stderr, "ascend-agent: --lock-dir: give a directory\n");
				return 2;
			}
			a->lock_dir = optarg;
			break;
		case 'o':
			a->once = true;
			break;
		case 'L':
			if (agent_log_parse_level(optarg, &log_level) < 0) {
				fprintf(stderr, "ascend-agent: --log-level: \"%s\" is not a level; "
					"use error, warning or info\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		case 'V':
			printf("ascend-agent %s\n", ASCENDFS_VERSION);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc || !a->mount || !a->node) {
		fprintf(stderr, "ascend-agent: %s\n",
			optind < argc ? "unexpected arguments" : "--mount and --node are required");
		usage(stderr, argv[0]);
		return 2;
	}
	if (!conf_name_is_valid(a->node)) {
		fprintf(stderr, "ascend-agent: --node: \"%s\" is not a server name; use the name "
			"of the server in the cluster configuration\n",
			a->node);
		return 2;
	}
	agent_log_set_node(a->node);
	agent_log_set_level(log_level);

	r = setup_signals();
	if (r < 0) {
		agent_log(AGENT_LOG_ERROR, "cannot set up signals: %s", strerror(-r));
		return 1;
	}
	if (choose_health_source(a, npu_smi_given) < 0 ||
	    choose_ip_source(a, hccn_tool_given, hccn_conf_given) < 0 || learn_node(a) < 0 ||
	    (!a->once && learn_config(a) < 0))
		return 1;
	/* --once runs no job process: it takes no lock (while another agent's reports count,
	 * the daemon refuses its report) */
	if (!a->once && take_lock(a) < 0)
		return 1;
	learn_mount(a);
	learn_identity(a);
	if (a->log_dir && (r = agent_make_dirs(a->log_dir, 0755)) < 0) {
		agent_log(AGENT_LOG_ERROR, "cannot create --log-dir %s: %s", a->log_dir,
			  strerror(-r));
		return 1;
	}
	if (a->log_dir && a->log_dir[0] != '/') {
		if (!realpath(a->log_dir, a->log_dir_abs)) {
			agent_log(AGENT_LOG_ERROR, "cannot resolve --log-dir %s: %s", a->log_dir,
				  strerror(errno));
			return 1;
		}
		a->log_dir = a->log_dir_abs;
	}
	if (a->once)
		snprintf(every, sizeof(every), "once");
	else
		snprintf(every, sizeof(every), "every %u s", a->interval_sec);
	agent_log(AGENT_LOG_INFO, "reporting to %s %s as agent %s: health from %s%s, device IPs "
		  "from %s%s",
		  a->health_path, every, a->agent_id, a->fault_file ? "fault file " : "",
		  a->fault_file ? a->fault_file : a->npu_smi,
		  a->hccn_tool ? a->hccn_tool : a->hccn_conf ? a->hccn_conf : "nowhere",
		  a->hccn_tool || a->hccn_conf ? "" : " (the inventory's device_ips are used)");

	if (a->once) {
		r = report_once(a);
		return r < 0 ? 1 : 0;
	}
	/* Orphaned descendants of job processes come to the agent to be reaped (not to
	 * init), and stay below it while it runs. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		agent_log(AGENT_LOG_WARNING, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	memset(&lo, 0, sizeof(lo));
	lo.cgroup_root = a->cgroup_root;
	lo.mount = a->mount;
	lo.node = a->node;
	lo.log_dir = a->log_dir ? a->log_dir : DEFAULT_LOG_DIR;
	lo.stop_grace_sec = a->stop_grace_sec;
	if (agent_launcher_new(&lo, &l) < 0) {
		agent_log(AGENT_LOG_ERROR, "out of memory");
		return 1;
	}
	a->launcher = l;
	agent_log(AGENT_LOG_INFO, "running the job processes of %s/nodes/%s/jobs: logs under %s, "
		  "SIGKILL %u s after SIGTERM",
		  a->mount, a->node, lo.log_dir, lo.stop_grace_sec);
	if (a->poll_interval_sec > 0)
		agent_log(AGENT_LOG_INFO, "%s is a %s mount%s: reading the jobs listing every %d s "
			  "and after every report%s%s%s",
			  a->mount, a->fstype,
			  a->network_mount ? ", where inotify does not see the daemon's changes" : "",
			  a->poll_interval_sec,
			  a->network_mount ? "; each report is confirmed in nodes/" : "",
			  a->network_mount ? a->node : "", a->network_mount ? "/info" : "");
	else
		agent_log(AGENT_LOG_INFO, "%s is a %s mount: reading the jobs listing when inotify "
			  "says it changed and after every report%s",
			  a->mount, a->fstype, a->network_mount ?
			  " (--poll-interval 0 on a network mount: changes made on the head are "
			  "seen only at the next report)" : "");
	next = agent_now_ms();
	next_poll = -1;
	while (!stop_signal) {
		long long now = agent_now_ms();

		if (hup_signal) {
			hup_signal = 0;
			agent_log(AGENT_LOG_INFO, "SIGHUP: reporting and reading the jobs listing now");
			next = now;
		}
		if (now >= next) {
			report_once(a);
			/* right after the report: a fault it carried may have moved a job */
			if (!stop_signal)
				agent_launcher_sync(l);
			next += (long long)a->interval_sec * 1000;
			/* waiting for another agent to fall silent: try twice an interval, so that
			 * a restarted agent takes over well within the heartbeat timeout */
			if (a->standby)
				next -= (long long)a->interval_sec * 500;
			/* After a stall (a slow probe, a suspended machine): the rhythm, not the
			 * debt. */
			if (next < agent_now_ms())
				next = agent_now_ms() + (long long)a->interval_sec * 1000;
			if (a->poll_interval_sec > 0)
				next_poll = agent_now_ms() + (long long)a->poll_interval_sec * 1000;
		} else if (next_poll >= 0 && now >= next_poll) {
			agent_launcher_sync(l);
			next_poll = agent_now_ms() + (long long)a->poll_interval_sec * 1000;
		}
		child_signal = 0;
		agent_launcher_poll(l);
		/* a stopped job's processes are gone: tell the daemon now (its NPUs wait) */
		if (agent_launcher_take_report_due(l) && next > agent_now_ms())
			next = agent_now_ms();
		wait_events(earliest(earliest(next, next_poll), agent_launcher_wake_ms(l)),
			    agent_launcher_fd(l), false);
	}
	agent_log(AGENT_LOG_INFO, "stopping (%s) after %u reports", strsignal(stop_signal),
		  a->reports);
	/* Stop the job processes as a cancel would; their exits are not reported. */
	agent_launcher_stop_all(l);
	give_up = agent_now_ms() + (long long)lo.stop_grace_sec * 1000 + STOP_EXTRA_MS;
	for (;;) {
		child_signal = 0;
		agent_launcher_poll(l);
		if (agent_launcher_is_idle(l) || agent_now_ms() >= give_up)
			break;
		wait_events(earliest(give_up, agent_launcher_wake_ms(l)), -1, true);
	}
	if (!agent_launcher_is_idle(l))
		agent_log(AGENT_LOG_ERROR, "job processes still running %d ms after SIGKILL; "
			  "leaving them", STOP_EXTRA_MS);
	a->launcher = NULL;
	agent_launcher_free(l);
	return 0;
}
