/* SPDX-License-Identifier: MIT */
/*
 * ascend-run: submit a job spec through the mount, follow the output of all its
 * processes (jobs/<job>/log), and exit with the job's result, as srun does for Slurm and
 * `docker run` for a container: for pipelines that judge a job by the exit status of one
 * command. Everything goes through the files (ascend-run(1) says which); nothing here is
 * privileged.
 */
#include "config.h"

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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "conf.h"

/* Exit statuses of its own (docker run's convention); else the job's. */
#define EXIT_RUN_ERROR 125	/* it could not submit or follow the job */
#define EXIT_TIMEOUT 124	/* the job reached its time limit (timeout(1)'s) */
#define EXIT_CANCELLED 130	/* the job was cancelled (128 + SIGINT) */

#define SPEC_MAX (64 * 1024)	/* what the mount takes of a spec */
#define POLL_MS 250

static volatile sig_atomic_t interrupts;

static void on_signal(int sig)
{
	(void)sig;
	interrupts++;
}

static void say(bool quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(bool quiet, const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	fputs("ascend-run: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ascend-run [-m MOUNT] [-n NAME] [-q] SPEC.yaml|.yml|.json\n"
		"Submit the job SPEC through the ascendfs mount, print what its processes print\n"
		"(jobs/<name>/log), and exit with its result: 0 completed, the job's exit status\n"
		"when it failed, %d when it reached its time limit, %d when it was cancelled,\n"
		"%d when it could not be submitted or followed. Ctrl-C cancels the job and\n"
		"waits for it to end; a second Ctrl-C leaves at once.\n"
		"  -m, --mount MOUNT  the ascendfs mount (default $ASCEND_MOUNT, else /ascend)\n"
		"  -n, --name NAME    the job's name (default: the spec's file name)\n"
		"  -q, --quiet        no state changes on stderr, only the job's output\n"
		"  -t, --test-only    submit nothing: print what would become of the spec now\n"
		"                     (where it would run, or why it would wait, what it would\n"
		"                     preempt; JSON from cluster/whatif); exit 0 when it would\n"
		"                     be accepted, 1 when refused\n"
		"  -h, --help         this text\n"
		"  -V, --version      the version\n",
		EXIT_TIMEOUT, EXIT_CANCELLED, EXIT_RUN_ERROR);
}

/* The whole of a small file (<= @max bytes) as a new NUL-terminated string, or NULL. */
static char *read_text(const char *path, size_t max, size_t *ret_len)
{
	char *buf = malloc(max + 1);
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0) {
		int e = errno;

		free(buf);
		if (fd >= 0)
			close(fd);
		errno = buf ? e : ENOMEM;
		return NULL;
	}
	while (len < max) {
		ssize_t n = read(fd, buf + len, max - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Following jobs/<job>/log. Its reads give the file as it is now; a rotation renames it
 * log.1 and begins an empty one (fs.h). A round reads what the log gained and prints it
 * only if log.1 did not change meanwhile: if it did, the bytes read may be the new
 * file's, so they are dropped, the rest of what it had read is taken from log.1 (once
 * its bytes before that point are those printed last: log.1 is the file it read) and
 * the new file is read from its start.
 */
#define TAIL_KEEP 64
#define ROUND_MAX (4u << 20)

struct follow {
	const char *dir;	/* <mount>/jobs/<name> */
	int fd;
	off_t pos;
	bool known;		/* old was looked at */
	struct stat old;	/* log.1 as last seen (st_nlink 0: none) */
	char tail[TAIL_KEEP];	/* the last bytes printed */
	size_t tail_len;
	bool out_gone;		/* stdout is closed (a pipe whose reader left) */
	bool lost;		/* said that output was lost */
};

static void emit(struct follow *f, const char *buf, size_t len)
{
	if (!len)
		return;
	if (len >= TAIL_KEEP) {
		memcpy(f->tail, buf + len - TAIL_KEEP, TAIL_KEEP);
		f->tail_len = TAIL_KEEP;
	} else {
		size_t keep = f->tail_len + len > TAIL_KEEP ? TAIL_KEEP - len : f->tail_len;

		memmove(f->tail, f->tail + f->tail_len - keep, keep);
		memcpy(f->tail + keep, buf, len);
		f->tail_len = keep + len;
	}
	if (!f->out_gone && (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0))
		f->out_gone = true; /* keep following: the exit status still says the result */
}

static void old_stat(const struct follow *f, struct stat *st)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/log.1", f->dir);
	if (stat(path, st) < 0)
		memset(st, 0, sizeof(*st));
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_nlink == b->st_nlink;
}

/* The rest of the file it read, from log.1, when log.1 is that file. */
static void catch_up(struct follow *f)
{
	char path[PATH_MAX + 32], *buf;
	size_t k = f->tail_len < (size_t)f->pos ? f->tail_len : (size_t)f->pos;
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/log.1", f->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	buf = malloc(ROUND_MAX);
	if (fd >= 0 && buf && fstat(fd, &st) == 0 && st.st_size >= f->pos &&
	    pread(fd, buf, k, f->pos - (off_t)k) == (ssize_t)k &&
	    memcmp(buf, f->tail + f->tail_len - k, k) == 0) {
		for (off_t at = f->pos; at < st.st_size; at += n) {
			n = pread(fd, buf, ROUND_MAX, at);
			if (n <= 0)
				break;
			emit(f, buf, (size_t)n);
		}
	} else if (f->pos > 0 && !f->lost) {
		f->lost = true;
		say(false, "some output was rotated away before it could be read (the head "
			   "keeps cluster.job_log_max_mib of it per job); every line is in the "
			   "agents' --log-dir on the servers");
	}
	free(buf);
	if (fd >= 0)
		close(fd);
}

static void follow_round(struct follow *f, int depth)
{
	char path[PATH_MAX + 32], *buf;
	struct stat now, st, after;
	size_t len = 0;
	bool rotated;

	old_stat(f, &now);
	if (!f->known) {
		f->old = now;
		f->known = true;
	}
	if (f->fd < 0) {
		snprintf(path, sizeof(path), "%s/log", f->dir);
		f->fd = open(path, O_RDONLY | O_CLOEXEC);
		f->pos = 0;
		if (f->fd < 0)
			return;
	}
	rotated = !same_file(&now, &f->old) || (fstat(f->fd, &st) == 0 && st.st_size < f->pos);
	buf = rotated ? NULL : malloc(ROUND_MAX);
	while (buf && len < ROUND_MAX) {
		ssize_t n = pread(f->fd, buf + len, ROUND_MAX - len, f->pos + (off_t)len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	old_stat(f, &after);
	if (!rotated && !same_file(&after, &f->old))
		rotated = true; /* during the read: what it read may be the new file's */
	if (!rotated) {
		emit(f, buf, len);
		f->pos += (off_t)len;
		free(buf);
		return;
	}
	free(buf);
	catch_up(f);
	f->old = after;
	close(f->fd);
	f->fd = -1;
	if (depth < 2) /* rotating as fast as it reads: the next round goes on */
		follow_round(f, depth + 1);
}

static void follow_once(struct follow *f)
{
	follow_round(f, 0);
}

static const char *gen_text(unsigned gen)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), " (generation %u)", gen);
	return buf;
}

static bool state_is_final(const char *s)
{
	return !strcmp(s, "completed") || !strcmp(s, "failed") || !strcmp(s, "cancelled") ||
	       !strcmp(s, "timeout") || !strcmp(s, "rejected");
}

/* The exit status of the job's newest accounting line (jobs/<name>/accounting), or -1. */
static int accounted_exit(const char *dir)
{
	char path[PATH_MAX + 32], *text, *last = NULL, *line, *save = NULL;
	int code = -1;

	snprintf(path, sizeof(path), "%s/accounting", dir);
	text = read_text(path, 16u << 20, NULL);
	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		last = line;
	if (last) {
		json_t *o = json_loads(last, 0, NULL);
		json_t *c = o ? json_object_get(o, "exit_code") : NULL;

		if (json_is_integer(c))
			code = (int)json_integer_value(c);
		json_decref(o);
	}
	free(text);
	return code;
}

/*
 * --test-only: the spec through cluster/whatif (written, then read on from the same open
 * file), its answer on stdout. 0 when it would be accepted, 125 when refused.
 */
static int dry_run(const char *mount, const char *name, const char *ext, const char *spec,
		   size_t spec_len)
{
	char path[PATH_MAX + 32], head[CONF_NAME_MAX + 32], *out = NULL;
	size_t len = 0, cap = 0;
	unsigned tries = 0;
	json_t *o;
	int fd, n, result;

	snprintf(path, sizeof(path), "%s/cluster/whatif", mount);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ascend-run: cannot open %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (is ascendfs mounted there? give the mount with -m)" :
					  "");
		return EXIT_RUN_ERROR;
	}
	/* the file it is, as a submission would take it (its name, YAML or JSON): a last
	 * line the daemon reads and removes (fs_whatif.c) */
	n = snprintf(head, sizeof(head), "%s#whatif-file: %s%s\n",
		     spec_len && spec[spec_len - 1] != '\n' ? "\n" : "", name, ext);
	if (write(fd, spec, spec_len) != (ssize_t)spec_len || write(fd, head, (size_t)n) != n) {
		fprintf(stderr, "ascend-run: cannot write %s: %s\n", path, strerror(errno));
		close(fd);
		return EXIT_RUN_ERROR;
	}
	for (;;) {
		ssize_t got;

		if (cap - len < 4096) {
			char *grown = realloc(out, cap + 65536);

			if (!grown)
				break;
			out = grown;
			cap += 65536;
		}
		got = read(fd, out + len, cap - len - 1);
		if (got < 0 && errno == EAGAIN && tries++ < 30) { /* another is being answered */
			sleep_ms(200);
			continue;
		}
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (!out) {
		fprintf(stderr, "ascend-run: out of memory\n");
		return EXIT_RUN_ERROR;
	}
	out[len] = '\0';
	fwrite(out, 1, len, stdout);
	o = json_loads(out, 0, NULL);
	/* refused: 1, as a submission's close fails; no answer at all: its own error */
	result = !o || !json_string_value(json_object_get(o, "would")) ? EXIT_RUN_ERROR :
		 strcmp(json_string_value(json_object_get(o, "would")), "refused") == 0 ? 1 : 0;
	json_decref(o);
	free(out);
	return result;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "name", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "test-only", no_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	const char *mount = getenv("ASCEND_MOUNT"), *name_opt = NULL, *spec_path, *base, *ext;
	char name[CONF_NAME_MAX + 1], path[PATH_MAX + 32], dir[PATH_MAX], state[32] = "";
	char last_reason[512] = "";
	unsigned last_generation = 0;
	bool quiet = false, cancelled_here = false, test_only = false;
	struct follow f = { .fd = -1 };
	struct sigaction sa;
	size_t spec_len;
	char *spec;
	int c, fd, result;

	while ((c = getopt_long(argc, argv, "m:n:qhVt", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mount = optarg;
			break;
		case 'n':
			name_opt = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ascend-run %s\n", ASCENDFS_VERSION);
			return 0;
		case 't':
			test_only = true;
			break;
		default:
			usage(stderr);
			return EXIT_RUN_ERROR;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return EXIT_RUN_ERROR;
	}
	if (!mount || !*mount)
		mount = "/ascend";
	if (strlen(mount) > PATH_MAX - 128) {
		fprintf(stderr, "ascend-run: the mount path is too long\n");
		return EXIT_RUN_ERROR;
	}
	spec_path = argv[optind];
	base = strrchr(spec_path, '/') ? strrchr(spec_path, '/') + 1 : spec_path;
	ext = strrchr(base, '.');
	if (!ext || (strcmp(ext, ".yaml") && strcmp(ext, ".yml") && strcmp(ext, ".json"))) {
		fprintf(stderr, "ascend-run: %s: a spec is a .yaml, .yml or .json file\n",
			spec_path);
		return EXIT_RUN_ERROR;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(name_opt ? strlen(name_opt) :
								(size_t)(ext - base)),
		 name_opt ? name_opt : base);
	if (!conf_job_name_is_valid(name) ||
	    (name_opt ? strlen(name_opt) : (size_t)(ext - base)) > CONF_NAME_MAX) {
		fprintf(stderr, "ascend-run: \"%s\" is not a job name: lowercase letters, digits, "
				"'.', '_' and '-', at most %d characters (give one with --name)\n",
			name_opt ? name_opt : base, CONF_NAME_MAX);
		return EXIT_RUN_ERROR;
	}
	spec = read_text(spec_path, SPEC_MAX + 1, &spec_len);
	if (!spec) {
		fprintf(stderr, "ascend-run: cannot read %s: %s\n", spec_path, strerror(errno));
		return EXIT_RUN_ERROR;
	}
	if (spec_len > SPEC_MAX) {
		fprintf(stderr, "ascend-run: %s: over 64 KiB, more than a spec may hold\n",
			spec_path);
		free(spec);
		return EXIT_RUN_ERROR;
	}
	if (test_only) {
		result = dry_run(mount, name, ext, spec, spec_len);
		free(spec);
		return result;
	}
	snprintf(dir, sizeof(dir), "%s/jobs/%s", mount, name);
	snprintf(path, sizeof(path), "%s/jobs/%s%s", mount, name, ext);

	/* submit: the close says whether the job was accepted (fs.h) */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "ascend-run: cannot submit %s: %s%s\n", path, strerror(errno),
			errno == EEXIST ? " (a job of that name is active: cancel it, or give "
					  "another with --name)" :
			errno == ENOENT ? " (is ascendfs mounted there? give the mount with -m)" :
					  "");
		free(spec);
		return EXIT_RUN_ERROR;
	}
	result = 0;
	for (size_t done = 0; done < spec_len && result == 0;) {
		ssize_t n = write(fd, spec + done, spec_len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			result = errno ? errno : EIO;
		else
			done += (size_t)n;
	}
	free(spec);
	if (close(fd) < 0 && result == 0)
		result = errno;
	if (result) {
		char epath[PATH_MAX + 32], *why;

		snprintf(epath, sizeof(epath), "%s/error", dir);
		why = result == EINVAL ? read_text(epath, 4096, NULL) : NULL;
		fprintf(stderr, "ascend-run: job %s not submitted: %s%s%s", name,
			why && *why ? why : strerror(result),
			why && *why ? "" : "\n",
			result == EEXIST ? "ascend-run: a job of that name is active: cancel it, "
					   "or give another name with --name\n" : "");
		free(why);
		return EXIT_RUN_ERROR;
	}
	say(quiet, "job %s submitted (%s)", name, dir);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* a reader of the output that leaves (`| head`) is no reason to leave the job */
	signal(SIGPIPE, SIG_IGN);
	f.dir = dir;
	for (;;) {
		char spath[PATH_MAX + 32], *text;
		json_t *st;

		if (interrupts >= 2) {
			say(quiet, "left job %s running as it was; follow it with `tail -F %s/log`",
			    name, dir);
			return EXIT_CANCELLED;
		}
		if (interrupts == 1 && !cancelled_here) {
			char cpath[PATH_MAX + 32];
			int cfd;

			cancelled_here = true;
			snprintf(cpath, sizeof(cpath), "%s/ctl", dir);
			cfd = open(cpath, O_WRONLY | O_CLOEXEC);
			if (cfd < 0 || write(cfd, "cancel\n", 7) != 7 || close(cfd) < 0)
				say(false, "cannot cancel job %s: %s", name, strerror(errno));
			else
				say(quiet, "cancelling job %s; waiting for it to end (Ctrl-C again to "
					   "leave now)", name);
		}
		follow_once(&f);
		snprintf(spath, sizeof(spath), "%s/status.json", dir);
		text = read_text(spath, 1u << 20, NULL);
		if (!text) {
			int e = errno;

			if (e == ENOENT)
				follow_once(&f);
			say(false, "%s: %s%s", spath, strerror(e),
			    e == ENOENT ? " (the job was removed before it ended)" :
					  " (is the mount still there?)");
			return EXIT_RUN_ERROR;
		}
		st = json_loads(text, 0, NULL);
		free(text);
		if (st) {
			const char *s = json_string_value(json_object_get(st, "state"));
			const char *reason = json_string_value(json_object_get(st, "reason"));
			json_t *g = json_object_get(st, "generation");
			unsigned gen = json_is_integer(g) ? (unsigned)json_integer_value(g) : 0;

			if (s && (strcmp(s, state) || (reason && strcmp(reason, last_reason)) ||
				  gen != last_generation)) {
				/* an array's reason counts its elements as they end */
				if (strcmp(s, state) || gen != last_generation ||
				    !strcmp(s, "array"))
					say(quiet, "job %s %s%s%s%s", name, s,
					    reason && *reason ? ": " : "", reason ? reason : "",
					    gen && (!reason || !strstr(reason, "generation")) ?
						    gen_text(gen) : "");
				snprintf(state, sizeof(state), "%s", s);
				snprintf(last_reason, sizeof(last_reason), "%s", reason ? reason : "");
				last_generation = gen;
			}
			json_decref(st);
		}
		if (state_is_final(state))
			break;
		sleep_ms(POLL_MS);
	}
	/* the agents ship a process's last lines before its exit is reported: by now the
	 * log holds them */
	follow_once(&f);
	if (f.fd >= 0)
		close(f.fd);
	if (!strcmp(state, "completed"))
		return 0;
	if (!strcmp(state, "timeout"))
		return EXIT_TIMEOUT;
	if (!strcmp(state, "cancelled"))
		return EXIT_CANCELLED;
	if (!strcmp(state, "rejected"))
		return EXIT_RUN_ERROR;
	result = accounted_exit(dir);
	return result > 0 && result < 256 ? result : 1;
}
