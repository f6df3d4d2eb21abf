/* SPDX-License-Identifier: MIT */
/*
 * train_demo: a stand-in for a MindSpore training script, for demos and tests of the
 * agent's launcher and of fault recovery without NPUs.
 *
 *   train_demo [--steps N] [--step-ms MS] [--ckpt-every K] [--fail-at-step S]
 *              [--no-report] [--ranktable-wait SEC]
 *
 * It reads the environment ascend-agent gives a job process (design.md §4):
 * ASCEND_JOB_ID, ASCEND_JOB_GENERATION, ASCEND_JOB_DIR, RANK_ID (per-rank launch) or
 * MS_NODE_RANK (msrun launch: one process per server), RANK_SIZE, RANK_TABLE_FILE,
 * ASCEND_CHECKPOINT_DIR and ASCEND_RESUME_CHECKPOINT. In rank-table mode (RANK_TABLE_FILE
 * set) the rank table is read as HCCL would: it waits until its status is "completed",
 * then checks that the table is this job's and that this process is in it; a per-rank
 * process that also has MS_ROLE or MS_SCHED_HOST is refused (MindSpore would wait for a
 * scheduler nobody starts). In dynamic mode (MS_ROLE or MS_SCHED_HOST, no RANK_TABLE_FILE)
 * nothing is awaited: it checks MindSpore's variables (MS_SCHED_HOST, MS_SCHED_PORT,
 * MS_WORKER_NUM = RANK_SIZE, MS_NODE_ID = RANK_ID for a worker) and says what it got. With
 * MS_ROLE=MS_SCHED it is the job's MindSpore scheduler: it counts no steps and waits for
 * SIGTERM (the end of the job), then exits 0. A line "environment: ..." says what it
 * got of ASCEND_RT_VISIBLE_DEVICES, DEVICE_ID and MS_ROLE.
 *
 * Then it counts steps, one every --step-ms. Every --ckpt-every steps the process that
 * holds rank 0 (RANK_ID 0, MS_NODE_RANK 0, or the only process) writes
 * <ASCEND_CHECKPOINT_DIR>/demo-1_<step>.ckpt, whose content is the step number, in
 * MindSpore's "<prefix>-<epoch>_<step>.ckpt" naming; it is written to a temporary file
 * and renamed, so a reader sees a whole checkpoint or none. Unless --no-report, it also
 * tells the daemon with "checkpoint <step> <path>" into the job's ctl (ASCEND_JOB_DIR/ctl,
 * else beside RANK_TABLE_FILE), so the resume point is known at once rather than at the daemon's
 * next scan. A non-empty ASCEND_RESUME_CHECKPOINT is where it starts: "resumed at
 * step N". It exits 0 after step --steps (counted from step 0 across restarts), 3 at
 * step --fail-at-step in generation 1 only (a task fault), 2 on a bad environment or
 * rank table; on SIGTERM it says where it was and dies of the signal.
 *
 * The recovery protocol (ascendfs(8), jobs/<id>/recovery; issue 17): unless
 * --ignore-recovery, it watches ASCEND_JOB_DIR/recovery with inotify (and reads it at
 * least once a second, for mounts without inotify such as sshfs). When the file asks
 * this generation to save ("action": "save") and lists this process (by MS_NODE_RANK,
 * or RANK_ID for a per-rank process), it saves at the step boundary: the first process
 * listed writes <ASCEND_CHECKPOINT_DIR>/demo-1_<step>.ckpt of the step it finished, and
 * every listed process answers "saved <request> <server> <rank|-> <step> [<path>]" into
 * the job's ctl; then it stops stepping ("paused at step N") and waits for the restart
 * (SIGTERM). A save it cannot write is answered "save-failed". When the file asks it to
 * pause ("action": "pause", its entry's "role": "pause") for an in-place restart of
 * another process, it stops after the step it is in, answers "paused <request> <server>
 * <rank|-> <step>", and waits for "action": "resume", then goes on. Started again in
 * place (ASCEND_JOB_ATTEMPT > 0), it steps nothing until the file lists it with "role":
 * "restart"; it answers "joined <request> <server> <rank|->", and at "resume" takes the
 * file's "step" as its own (what a framework receives from its replicas) and goes on.
 * When the file asks a newer generation to rebuild ("action": "rebuild", process-level
 * recovery: its server's process was kept while a failed server was replaced), a process
 * whose entry's role is "rebuild" stops after the step it is in, reads the new rank
 * table again (its server and rank must still be in it: the communicator it would
 * rebuild), takes the new generation as its own, answers "paused <request> <server>
 * <rank|-> <step>" and waits for "resume". A process started on the replacement finds
 * itself listed with "role": "join": it answers "joined <request> <server> <rank|->" and
 * at "resume" takes the file's "step", as one restarted in place does.
 * When the file asks for a retry ("action": "retry": a transient NPU fault, the step in
 * flight is recomputed), it drops the step it is computing, answers "paused <request>
 * <server> <rank|-> <step>" with the last step it finished, waits for "resume" and
 * steps on from the file's "step" ("recomputing from step N").
 * --fail-at-step fails only the first attempt of generation 1.
 *
 * Output: one line per event on stdout, "train_demo[<job> g<generation> <who>]: ...".
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>

#include <jansson.h>

#define STEPS_MAX 100000000ULL
#define STEP_MS_MAX 3600000ULL

static volatile sig_atomic_t terminated;
static char who[160] = "train_demo";

static void on_term(int sig)
{
	terminated = sig;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static bool parse_ull(const char *s, unsigned long long max, unsigned long long *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*ret = v;
	return true;
}

/* Environment variable @name as a number; @def when unset or empty. */
static int env_number(const char *name, unsigned long long max, long long def, long long *ret)
{
	const char *v = getenv(name);
	unsigned long long n;

	if (!v || !*v) {
		*ret = def;
		return 0;
	}
	if (!parse_ull(v, max, &n)) {
		fprintf(stderr, "train_demo: %s=\"%s\" is not a number from 0 to %llu\n", name, v,
			max);
		return -EINVAL;
	}
	*ret = (long long)n;
	return 0;
}

/* A rank table value: every value is a JSON string, numbers included. */
static bool json_ull(json_t *o, const char *key, unsigned long long *ret)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) && parse_ull(json_string_value(v), ULLONG_MAX, ret);
}

struct identity {
	const char *job;		/* NULL when not started by ascend-agent */
	long long generation;
	long long rank;			/* RANK_ID, -1 unset */
	long long node_rank;		/* MS_NODE_RANK, -1 unset */
	long long rank_size;
	long long attempt;		/* ASCEND_JOB_ATTEMPT: in-place restarts, 0 unset */
};

/* The rank table once its status is "completed" (HCCL polls it like this), or NULL. */
static json_t *load_completed(const char *path, unsigned wait_sec)
{
	struct timespec pause = { 0, 200 * 1000 * 1000 };
	long long deadline = (long long)time(NULL) + wait_sec;
	json_error_t jerr;

	for (;;) {
		json_t *root = json_load_file(path, 0, &jerr), *s;
		const char *status;

		if (!root) {
			say("cannot read the rank table %s: %s", path, jerr.text);
			return NULL;
		}
		s = json_object_get(root, "status");
		status = json_is_string(s) ? json_string_value(s) : "";
		if (strcmp(status, "completed") == 0)
			return root;
		if (terminated || (long long)time(NULL) >= deadline) {
			say("the rank table %s still says status \"%s\" after %u s; HCCL would "
			    "keep waiting", path, status, wait_sec);
			json_decref(root);
			return NULL;
		}
		json_decref(root);
		nanosleep(&pause, NULL);
	}
}

static const char *server_name(json_t *srv)
{
	json_t *sid = json_object_get(srv, "server_id");

	return json_is_string(sid) ? json_string_value(sid) : "?";
}

/* msrun: server @i of the table must be this one, with this server's ranks. */
static int check_my_server(const char *path, size_t i, json_t *srv, char *where, size_t len)
{
	const char *server_id = getenv("SERVER_ID");
	json_t *devs = json_object_get(srv, "device");
	long long rank_start, local;
	unsigned long long first;

	if (server_id && strcmp(server_name(srv), server_id) != 0) {
		say("rank table %s: server %zu is %s, not this server (%s)", path, i,
		    server_name(srv), server_id);
		return -1;
	}
	if (env_number("RANK_START", INT_MAX, -1, &rank_start) == 0 && rank_start >= 0 &&
	    json_array_size(devs) &&
	    (!json_ull(json_array_get(devs, 0), "rank_id", &first) ||
	     first != (unsigned long long)rank_start)) {
		say("rank table %s: server %zu does not start at rank %lld", path, i, rank_start);
		return -1;
	}
	if (env_number("MS_LOCAL_WORKER", 64, -1, &local) == 0 && local >= 0 &&
	    json_array_size(devs) != (size_t)local) {
		say("rank table %s: server %zu has %zu devices, MS_LOCAL_WORKER says %lld", path,
		    i, json_array_size(devs), local);
		return -1;
	}
	snprintf(where, len, "; this server: %s, %zu devices", server_name(srv),
		 json_array_size(devs));
	return 0;
}

/* per-rank: the device of this rank must be DEVICE_ID on this server. */
static int check_my_rank(const char *path, long long rank, json_t *srv, unsigned long long device,
			 char *where, size_t len)
{
	const char *server_id = getenv("SERVER_ID"), *want = getenv("DEVICE_ID");
	long long d;

	if ((server_id && strcmp(server_name(srv), server_id) != 0) ||
	    (env_number("DEVICE_ID", 64, -1, &d) == 0 && d >= 0 &&
	     device != (unsigned long long)d)) {
		say("rank table %s: rank %lld is device %llu of %s, not this process's (DEVICE_ID "
		    "%s on %s)", path, rank, device, server_name(srv), want ? want : "?",
		    server_id ? server_id : "?");
		return -1;
	}
	snprintf(where, len, "; this rank: device %llu of %s", device, server_name(srv));
	return 0;
}

/*
 * Read RANK_TABLE_FILE as HCCL does (wait for "completed") and check that it is this
 * job's and has this process. Returns 0, or 2 after saying why.
 */
static int check_rank_table(const char *path, const struct identity *id, unsigned wait_sec)
{
	unsigned long long server_count, ranks = 0;
	long long env_count;
	char suffix[160], where[256] = "";
	json_t *root, *list, *srv;
	size_t i, k;

	if (id->job) {
		size_t n = strlen(path), m;

		snprintf(suffix, sizeof(suffix), "/jobs/%s/ranktable.json", id->job);
		m = strlen(suffix);
		if (n < m || strcmp(path + n - m, suffix) != 0) {
			say("RANK_TABLE_FILE %s is not the rank table of job %s (expected a path "
			    "ending in %s)", path, id->job, suffix);
			return 2;
		}
	}
	root = load_completed(path, wait_sec);
	if (!root)
		return 2;
	list = json_object_get(root, "server_list");
	if (!json_ull(root, "server_count", &server_count) || !json_is_array(list) ||
	    json_array_size(list) != server_count) {
		say("rank table %s: server_count does not match server_list", path);
		goto bad;
	}
	if (env_number("SERVER_COUNT", 100000, -1, &env_count) == 0 && env_count >= 0 &&
	    (unsigned long long)env_count != server_count) {
		say("rank table %s has %llu servers but SERVER_COUNT is %lld: not this job's "
		    "generation", path, server_count, env_count);
		goto bad;
	}
	json_array_foreach(list, i, srv) {
		json_t *devs = json_object_get(srv, "device"), *dev;

		if (!json_is_array(devs)) {
			say("rank table %s: server %zu has no device list", path, i);
			goto bad;
		}
		if (id->node_rank == (long long)i &&
		    check_my_server(path, i, srv, where, sizeof(where)) < 0)
			goto bad;
		json_array_foreach(devs, k, dev) {
			unsigned long long rank_id, d;

			if (!json_ull(dev, "rank_id", &rank_id) ||
			    !json_ull(dev, "device_id", &d)) {
				say("rank table %s: a device without a rank_id or device_id string",
				    path);
				goto bad;
			}
			if (id->rank >= 0 && rank_id == (unsigned long long)id->rank &&
			    check_my_rank(path, id->rank, srv, d, where, sizeof(where)) < 0)
				goto bad;
			ranks++;
		}
	}
	if (id->rank_size > 0 && ranks != (unsigned long long)id->rank_size) {
		say("rank table %s has %llu ranks but RANK_SIZE is %lld: not this job's generation",
		    path, ranks, id->rank_size);
		goto bad;
	}
	if (id->rank >= 0 && !where[0]) {
		say("rank table %s has no rank %lld", path, id->rank);
		goto bad;
	}
	say("rank table %s: status completed, server_count %llu, ranks %llu%s", path,
	    server_count, ranks, where);
	json_decref(root);
	return 0;
bad:
	json_decref(root);
	return 2;
}

/* The step a checkpoint holds: its content, else the step in its name. */
static int read_checkpoint_step(const char *path, unsigned long long *ret)
{
	char buf[64] = "", *end;
	const char *base = strrchr(path, '/'), *us;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (fgets(buf, sizeof(buf), f)) {
		unsigned long long v;

		buf[strcspn(buf, "\r\n")] = '\0';
		if (parse_ull(buf, STEPS_MAX, &v)) {
			fclose(f);
			*ret = v;
			return 0;
		}
	}
	fclose(f);
	base = base ? base + 1 : path;
	us = strrchr(base, '_');
	if (us) {
		unsigned long long v;

		errno = 0;
		v = strtoull(us + 1, &end, 10);
		if (!errno && end != us + 1 && strcmp(end, ".ckpt") == 0 && v <= STEPS_MAX) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Write @dir/demo-1_<step>.ckpt atomically. *ret_path (size @len) names it. */
static int write_checkpoint(const char *dir, unsigned long long step, char *ret_path, size_t len)
{
	char tmp[PATH_MAX + 64], text[32];
	int fd, n, r = 0;

	if (snprintf(ret_path, len, "%s/demo-1_%llu.ckpt", dir, step) >= (int)len)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s/.demo-1_%llu.ckpt.%d.tmp", dir, step, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	n = snprintf(text, sizeof(text), "%llu\n", step);
	if (write(fd, text, (size_t)n) != n)
		r = errno ? -errno : -EIO;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, ret_path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* "checkpoint <step> <path>" into the job's ctl, @job_dir/ctl. */
static int report_checkpoint(const char *job_dir, unsigned long long step, const char *path)
{
	char ctl[PATH_MAX], line[PATH_MAX + 64];
	int fd, n, r = 0;

	if (snprintf(ctl, sizeof(ctl), "%s/ctl", job_dir) >= (int)sizeof(ctl))
		return -EINVAL;
	n = snprintf(line, sizeof(line), "checkpoint %llu %s\n", step, path);
	if (n < 0 || n >= (int)sizeof(line))
		return -ENAMETOOLONG;
	fd = open(ctl, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, (size_t)n) != n)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* One line into the job's ctl, @job_dir/ctl. */
static int ctl_write(const char *job_dir, const char *line)
{
	char ctl[PATH_MAX];
	size_t n = strlen(line);
	int fd, r = 0;

	if (snprintf(ctl, sizeof(ctl), "%s/ctl", job_dir) >= (int)sizeof(ctl))
		return -EINVAL;
	fd = open(ctl, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, n) != (ssize_t)n)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* A JSON number member (the recovery file's), >= 0. */
static bool json_count(json_t *o, const char *key, unsigned long long *ret)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*ret = (unsigned long long)json_integer_value(v);
	return true;
}

/* What the recovery protocol needs to know (see the top of this file). */
struct recovery {
	char path[PATH_MAX];	/* ASCEND_JOB_DIR/recovery; "" = protocol off */
	int inotify_fd;		/* -1 without inotify: read once a second */
	struct timespec last_read;
	long long handled;	/* the newest request acted on */
};

static void recovery_open(struct recovery *rc, const char *job_dir)
{
	rc->inotify_fd = -1;
	rc->handled = 0;
	rc->path[0] = '\0';
	/* the first look is at once: a request may be open already (a process started
	 * again in place comes after it) */
	rc->last_read.tv_sec = 0;
	rc->last_read.tv_nsec = 0;
	if (!job_dir ||
	    snprintf(rc->path, sizeof(rc->path), "%s/recovery", job_dir) >= (int)sizeof(rc->path)) {
		rc->path[0] = '\0';
		return;
	}
	rc->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (rc->inotify_fd >= 0 &&
	    inotify_add_watch(rc->inotify_fd, rc->path, IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB) < 0) {
		close(rc->inotify_fd);
		rc->inotify_fd = -1;
	}
}

/* Is it time to read the file: an inotify event came, or a second passed? */
static bool recovery_due(struct recovery *rc)
{
	struct timespec now;
	char buf[4096];
	bool due = false;

	if (!rc->path[0])
		return false;
	while (rc->inotify_fd >= 0 && read(rc->inotify_fd, buf, sizeof(buf)) > 0)
		due = true;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec > rc->last_read.tv_sec)
		due = true;
	if (due)
		rc->last_read = now;
	return due;
}

/* A request of the recovery file that this process acts on (see the top of this file). */
struct recovery_request {
	long long request;
	char action[16];	/* "save", "pause", "rebuild", "retry" or "resume" */
	long long generation;	/* the file's generation (rebuild: newer than a kept
				 * process's own) */
	char role[16];		/* save, pause: this process's "role" ("restart": it is the
				 * one started again in place) */
	char server[256];	/* save, pause: its entry's server */
	bool first;		/* save: listed first (it writes the checkpoint) */
	unsigned long long step; /* resume: the step to go on from */
};

/*
 * The request this process is to act on now, if any: a "save", "pause" or "rebuild" that
 * lists it, or a "resume", newer than the last one handled and of this generation (a
 * "rebuild" may be of a newer one: this process was kept into it). Returns 1 and fills
 * @ret, or 0.
 */
static int recovery_next(struct recovery *rc, const struct identity *id,
			 struct recovery_request *ret)
{
	json_t *o = json_load_file(rc->path, 0, NULL), *procs;
	unsigned long long req = 0, gen = 0;
	const char *action;
	int asked = 0;

	if (!o)
		return 0;
	action = json_string_value(json_object_get(o, "action"));
	procs = json_object_get(o, "processes");
	memset(ret, 0, sizeof(*ret));
	if (!action || !json_count(o, "request", &req) || !json_count(o, "generation", &gen) ||
	    gen > LLONG_MAX || (long long)req <= rc->handled ||
	    (gen != (unsigned long long)id->generation &&
	     !(strcmp(action, "rebuild") == 0 && gen > (unsigned long long)id->generation))) {
		json_decref(o);
		return 0;
	}
	ret->request = (long long)req;
	ret->generation = (long long)gen;
	snprintf(ret->action, sizeof(ret->action), "%s", action);
	if (strcmp(action, "resume") == 0) {
		asked = json_count(o, "step", &ret->step);
	} else if ((strcmp(action, "save") == 0 || strcmp(action, "pause") == 0 ||
		    strcmp(action, "rebuild") == 0 || strcmp(action, "retry") == 0) &&
		   json_is_array(procs)) {
		for (size_t i = 0; i < json_array_size(procs); i++) {
			json_t *p = json_array_get(procs, i);
			unsigned long long node = 0, rank = 0;
			bool me = id->rank >= 0 ? json_count(p, "rank", &rank) &&
							  rank == (unsigned long long)id->rank :
						  json_count(p, "node_rank", &node) &&
							  node == (unsigned long long)
								  (id->node_rank < 0 ? 0 : id->node_rank);
			const char *srv = json_string_value(json_object_get(p, "server"));
			const char *role = json_string_value(json_object_get(p, "role"));

			if (me && srv) {
				snprintf(ret->server, sizeof(ret->server), "%s", srv);
				snprintf(ret->role, sizeof(ret->role), "%s", role ? role : action);
				ret->first = i == 0;
				asked = 1;
				break;
			}
		}
	}
	json_decref(o);
	return asked;
}

/* The prefix of say(): the job, the generation, and which process of it this is. */
static void set_who(const struct identity *id, const char *ms_role)
{
	const char *job = id->job ? id->job : "-";

	if (ms_role && strcmp(ms_role, "MS_SCHED") == 0)
		snprintf(who, sizeof(who), "train_demo[%s g%lld scheduler]", job, id->generation);
	else if (id->rank >= 0)
		snprintf(who, sizeof(who), "train_demo[%s g%lld rank %lld]", job, id->generation,
			 id->rank);
	else if (id->node_rank >= 0)
		snprintf(who, sizeof(who), "train_demo[%s g%lld node %lld]", job, id->generation,
			 id->node_rank);
	else
		snprintf(who, sizeof(who), "train_demo[%s g%lld]", job, id->generation);
}

/* Sleep @ms, cut short by SIGTERM. */
static void sleep_ms(unsigned long long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	while (!terminated && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v ? v : def;
}

/*
 * Dynamic networking (msrun's environment): check MindSpore's variables. Returns 0, or 2
 * after saying why.
 */
static int check_dynamic(const struct identity *id, const char *role)
{
	const char *host = getenv("MS_SCHED_HOST");
	long long port, workers, node_id;

	if (!host || !*host || env_number("MS_SCHED_PORT", 65535, -1, &port) < 0 || port <= 0 ||
	    env_number("MS_WORKER_NUM", INT_MAX, -1, &workers) < 0 || workers <= 0) {
		say("dynamic cluster without MS_SCHED_HOST, MS_SCHED_PORT and MS_WORKER_NUM: "
		    "MindSpore cannot find its scheduler");
		return 2;
	}
	if (workers != id->rank_size) {
		say("MS_WORKER_NUM %lld but RANK_SIZE %lld", workers, id->rank_size);
		return 2;
	}
	if (role && strcmp(role, "MS_WORKER") == 0) {
		if (env_number("MS_NODE_ID", INT_MAX, -1, &node_id) < 0 ||
		    (id->rank >= 0 && node_id != id->rank)) {
			say("MS_NODE_ID %s is not RANK_ID %lld", env_or("MS_NODE_ID", "(unset)"),
			    id->rank);
			return 2;
		}
	} else if (role && strcmp(role, "MS_SCHED") != 0) {
		say("MS_ROLE %s is neither MS_WORKER nor MS_SCHED", role);
		return 2;
	}
	say("dynamic cluster: %s, scheduler %s:%lld, %lld workers (no rank table awaited)",
	    role ? role : "msrun", host, port, workers);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: train_demo [--steps N] [--step-ms MS] [--ckpt-every K]\n"
		"                  [--fail-at-step S] [--no-report] [--ranktable-wait SEC]\n"
		"                  [--ignore-recovery]\n"
		"\n"
		"Count N steps (default 100), one every MS ms (default 100); every K steps\n"
		"(default 10; 0 = never) rank 0 writes $ASCEND_CHECKPOINT_DIR/demo-1_<step>.ckpt\n"
		"and reports it to the job's ctl (not with --no-report). Resumes from\n"
		"$ASCEND_RESUME_CHECKPOINT. --fail-at-step S exits 3 at step S in generation 1.\n"
		"Waits up to SEC (default 60) for a RANK_TABLE_FILE to be \"completed\";\n"
		"waits for nothing in dynamic mode (MS_ROLE or MS_SCHED_HOST set). With\n"
		"MS_ROLE=MS_SCHED it is the job's MindSpore scheduler: it waits for SIGTERM.\n"
		"Follows the recovery protocol of $ASCEND_JOB_DIR/recovery (a dying-gasp save\n"
		"when asked), unless --ignore-recovery.\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "steps", required_argument, NULL, 's' },
		{ "step-ms", required_argument, NULL, 'm' },
		{ "ckpt-every", required_argument, NULL, 'k' },
		{ "fail-at-step", required_argument, NULL, 'f' },
		{ "no-report", no_argument, NULL, 'n' },
		{ "ranktable-wait", required_argument, NULL, 'w' },
		{ "ignore-recovery", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long steps = 100, step_ms = 100, every = 10, fail_at = 0, wait_sec = 60;
	unsigned long long step = 0, start, last_ckpt = 0, *target;
	const char *rank_table = getenv("RANK_TABLE_FILE");
	const char *job_dir = getenv("ASCEND_JOB_DIR");
	const char *role = getenv("MS_ROLE");
	char table_dir[PATH_MAX];
	bool dynamic;
	const char *ckpt_dir = getenv("ASCEND_CHECKPOINT_DIR");
	const char *resume = getenv("ASCEND_RESUME_CHECKPOINT");
	const char *note = NULL;
	struct identity id = { 0 };
	struct sigaction sa;
	bool report = true, writer, follow_recovery = true, paused = false;
	bool paused_in_place = false, joining = false, rebuilt = false, retrying = false;
	struct recovery rc;
	char path[PATH_MAX + 64];
	int opt, r, idx = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "h", options, &idx)) != -1) {
		unsigned long long max = STEPS_MAX;

		switch (opt) {
		case 's':
			target = &steps;
			break;
		case 'm':
			target = &step_ms;
			max = STEP_MS_MAX;
			break;
		case 'k':
			target = &every;
			break;
		case 'f':
			target = &fail_at;
			break;
		case 'w':
			target = &wait_sec;
			max = 86400;
			break;
		case 'n':
			report = false;
			continue;
		case 'i':
			follow_recovery = false;
			continue;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (!parse_ull(optarg, max, target)) {
			fprintf(stderr, "train_demo: --%s: \"%s\" is not a number from 0 to %llu\n",
				options[idx].name, optarg, max);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	id.job = getenv("ASCEND_JOB_ID");
	if (id.job && !*id.job)
		id.job = NULL;
	if (env_number("ASCEND_JOB_GENERATION", UINT_MAX, 1, &id.generation) < 0 ||
	    env_number("RANK_ID", INT_MAX, -1, &id.rank) < 0 ||
	    env_number("MS_NODE_RANK", INT_MAX, -1, &id.node_rank) < 0 ||
	    env_number("RANK_SIZE", INT_MAX, 1, &id.rank_size) < 0 ||
	    env_number("ASCEND_JOB_ATTEMPT", INT_MAX, 0, &id.attempt) < 0)
		return 2;
	set_who(&id, NULL);
	writer = id.rank >= 0 ? id.rank == 0 : id.node_rank >= 0 ? id.node_rank == 0 : true;
	if (ckpt_dir && !*ckpt_dir)
		ckpt_dir = NULL;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (!writer)
		note = "(rank 0 writes them)";
	else if (!ckpt_dir)
		note = "(no ASCEND_CHECKPOINT_DIR: none written)";
	if (rank_table && !*rank_table)
		rank_table = NULL;
	if (role && !*role)
		role = NULL;
	/* MindSpore's test: MS_ROLE or MS_SCHED_HOST makes a dynamic-cluster member */
	dynamic = role || (getenv("MS_SCHED_HOST") && *getenv("MS_SCHED_HOST"));
	if (role && strcmp(role, "MS_SCHED") == 0) {
		set_who(&id, role);
		writer = false;
	}
	say("start: pid %d, %lld rank%s in the job, %llu steps of %llu ms, checkpoint every "
	    "%llu steps %s%s", (int)getpid(), id.rank_size, id.rank_size == 1 ? "" : "s", steps,
	    step_ms, every, note ? note : "into ", note ? "" : ckpt_dir);
	say("environment: ASCEND_RT_VISIBLE_DEVICES=%s DEVICE_ID=%s MS_ROLE=%s",
	    env_or("ASCEND_RT_VISIBLE_DEVICES", "(unset)"), env_or("DEVICE_ID", "(unset)"),
	    env_or("MS_ROLE", "(unset)"));
	if (rank_table && id.rank >= 0 && dynamic) {
		say("a per-rank process with RANK_TABLE_FILE and MS_ROLE or MS_SCHED_HOST: "
		    "MindSpore would take it for a dynamic-cluster worker and wait for a scheduler");
		return 2;
	}
	if (rank_table) {
		r = check_rank_table(rank_table, &id, (unsigned)wait_sec);
		if (r)
			return r;
	} else if (dynamic) {
		r = check_dynamic(&id, role);
		if (r)
			return r;
	}
	if (role && strcmp(role, "MS_SCHED") == 0) {
		/* the scheduler lives as long as the job: until its workers end and it is
		 * stopped */
		while (!terminated)
			sleep_ms(1000);
		say("scheduler stopped by %s", strsignal((int)terminated));
		return 0;
	}
	if ((!job_dir || !*job_dir) && rank_table) {
		const char *slash = strrchr(rank_table, '/');

		if (slash && snprintf(table_dir, sizeof(table_dir), "%.*s",
				      (int)(slash - rank_table), rank_table) < (int)sizeof(table_dir))
			job_dir = table_dir;
	}
	if (job_dir && !*job_dir)
		job_dir = NULL;
	if (resume && *resume) {
		r = read_checkpoint_step(resume, &step);
		if (r < 0) {
			say("cannot resume from ASCEND_RESUME_CHECKPOINT=%s: %s", resume,
			    r == -EINVAL ? "it holds no step number" : strerror(-r));
			return 2;
		}
		last_ckpt = step;
		say("resumed at step %llu from %s", step, resume);
	} else {
		say("starting at step 0 (no checkpoint to resume from)");
	}
	start = step;
	recovery_open(&rc, follow_recovery ? job_dir : NULL);
	/* started again in place: wait for the step the others paused at, then go on */
	if (id.attempt > 0 && rc.path[0]) {
		say("restarted in place (attempt %lld): waiting to join the others", id.attempt);
		joining = true;
	}
	while (step < steps) {
		struct recovery_request q;
		char line[PATH_MAX + 400], rank[24] = "-";

		sleep_ms(step_ms);
		if (terminated)
			break;
		if (id.rank >= 0)
			snprintf(rank, sizeof(rank), "%lld", id.rank);
		if (recovery_due(&rc) && recovery_next(&rc, &id, &q)) {
			rc.handled = q.request;
			if (strcmp(q.action, "resume") == 0 && (paused_in_place || joining)) {
				/* the restarted process takes the step's state from the others
				 * (a framework's replicas; here, the step number) */
				/* a retry goes back to the step every process finished (it
				 * computes the next one again); the others never go back */
				if (q.step > step || retrying)
					step = q.step;
				if (retrying)
					say("recomputing from step %llu after the retry (request "
					    "%lld)", step, q.request);
				else
					say("resumed %s at step %llu (request %lld)%s",
					    rebuilt ? "in the new generation" : "in place", step,
					    q.request, joining ? ": joined the others" : "");
				paused_in_place = joining = rebuilt = retrying = false;
				continue;
			}
			if (strcmp(q.action, "pause") == 0 && strcmp(q.role, "restart") == 0 &&
			    joining) {
				snprintf(line, sizeof(line), "joined %lld %s %s\n", q.request,
					 q.server, rank);
				r = ctl_write(job_dir, line);
				say("joined (request %lld)%s%s", q.request, r < 0 ? "; cannot say so: " :
				    "", r < 0 ? strerror(-r) : "");
				continue;
			}
			if (strcmp(q.action, "pause") == 0 && strcmp(q.role, "pause") == 0 &&
			    !paused) {
				snprintf(line, sizeof(line), "paused %lld %s %s %llu\n", q.request,
					 q.server, rank, step);
				r = ctl_write(job_dir, line);
				say("paused at step %llu for an in-place restart (request %lld)%s%s",
				    step, q.request, r < 0 ? "; cannot say so: " : "",
				    r < 0 ? strerror(-r) : "");
				paused_in_place = true;
				continue;
			}
			if (strcmp(q.action, "rebuild") == 0 && strcmp(q.role, "join") == 0 &&
			    q.generation == id.generation && !paused) {
				/* started on a replacement server: up, waits for the step */
				snprintf(line, sizeof(line), "joined %lld %s %s\n", q.request,
					 q.server, rank);
				r = ctl_write(job_dir, line);
				joining = rebuilt = true;
				say("started on a replacement server: joined (request %lld)%s%s",
				    q.request, r < 0 ? "; cannot say so: " : "",
				    r < 0 ? strerror(-r) : "");
				continue;
			}
			if (strcmp(q.action, "rebuild") == 0 && strcmp(q.role, "rebuild") == 0 &&
			    !paused && !joining) {
				/* kept while a failed server was replaced: the communicator
				 * is rebuilt from the new generation's rank table */
				long long was = id.generation;

				id.generation = q.generation;
				if (rank_table && check_rank_table(rank_table, &id,
								   (unsigned)wait_sec) != 0) {
					say("cannot rebuild from the rank table of generation %lld: "
					    "not answering (the ladder falls back)", id.generation);
					id.generation = was;
					continue;
				}
				set_who(&id, role);
				snprintf(line, sizeof(line), "paused %lld %s %s %llu\n", q.request,
					 q.server, rank, step);
				r = ctl_write(job_dir, line);
				say("paused at step %llu and rebuilt the communicator: kept from "
				    "generation %lld (request %lld)%s%s", step, was, q.request,
				    r < 0 ? "; cannot say so: " : "", r < 0 ? strerror(-r) : "");
				paused_in_place = rebuilt = true;
				continue;
			}
			if (strcmp(q.action, "retry") == 0 && !paused && !joining) {
				/* a transient fault: the step in flight is dropped, and
				 * computed again after the resume */
				snprintf(line, sizeof(line), "paused %lld %s %s %llu\n", q.request,
					 q.server, rank, step);
				r = ctl_write(job_dir, line);
				say("dropped the step in flight: paused at step %llu for a retry "
				    "(request %lld)%s%s", step, q.request,
				    r < 0 ? "; cannot say so: " : "", r < 0 ? strerror(-r) : "");
				paused_in_place = retrying = true;
				continue;
			}
			if (strcmp(q.action, "save") == 0 && !joining) {
				r = q.first && ckpt_dir ? write_checkpoint(ckpt_dir, step, path,
									   sizeof(path)) :
							  (q.first ? -ENOENT : 0);
				if (r < 0)
					snprintf(line, sizeof(line), "save-failed %lld %s %s\n",
						 q.request, q.server, rank);
				else if (q.first)
					snprintf(line, sizeof(line), "saved %lld %s %s %llu %s\n",
						 q.request, q.server, rank, step, path);
				else
					snprintf(line, sizeof(line), "saved %lld %s %s %llu\n",
						 q.request, q.server, rank, step);
				r = ctl_write(job_dir, line);
				say("dying-gasp save (request %lld) at step %llu%s%s: answered%s%s",
				    q.request, step, q.first ? ": " : "", q.first ? path : "",
				    r < 0 ? " but: " : "", r < 0 ? strerror(-r) : "");
				say("paused at step %llu, waiting for the restart", step);
				paused = true;
				paused_in_place = false;
				continue;
			}
		}
		if (paused || paused_in_place || joining)
			continue; /* waiting: for the restart, or to go on in place */
		step++;
		if (fail_at && step == fail_at && id.generation == 1 && id.attempt == 0) {
			say("failing at step %llu in generation 1: exit 3 (last checkpoint step "
			    "%llu)", step, last_ckpt);
			return 3;
		}
		if (!every || step % every)
			continue;
		if (!writer || !ckpt_dir) {
			say("step %llu", step);
			continue;
		}
		r = write_checkpoint(ckpt_dir, step, path, sizeof(path));
		if (r < 0) {
			say("step %llu: cannot write a checkpoint into %s: %s", step, ckpt_dir,
			    strerror(-r));
			continue;
		}
		last_ckpt = step;
		if (report && job_dir) {
			r = report_checkpoint(job_dir, step, path);
			say("checkpoint step %llu: %s%s%s", step, path,
			    r < 0 ? "; cannot report it: " : " (reported)",
			    r < 0 ? strerror(-r) : "");
		} else {
			say("checkpoint step %llu: %s", step, path);
		}
	}
	if (terminated) {
		say("terminated at step %llu by %s (%llu steps this run, last checkpoint step "
		    "%llu)", step, strsignal((int)terminated), step - start, last_ckpt);
		signal((int)terminated, SIG_DFL);
		raise((int)terminated);
		return 128 + (int)terminated;
	}
	say("done at step %llu: %llu steps this run, last checkpoint step %llu", step,
	    step - start, last_ckpt);
	return 0;
}
