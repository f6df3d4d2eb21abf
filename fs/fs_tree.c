/* SPDX-License-Identifier: MIT */
/* Path -> node, and node -> attributes, listing, bytes and ctl verbs. No FUSE here. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

/* The answers to a job's recovery request, for usage messages (sched_job_recovery_answer()) */
#define RECOVERY_ANSWERS                                                                   \
	"saved <request> <server> <rank|-> <step> [<absolute path>] or save-failed "       \
	"<request> <server> <rank|-> (dump), paused <request> <server> <rank|-> <step> "   \
	"or joined <request> <server> <rank|-> (in-place); e.g. saved 1 node-01 - 1200 "   \
	"/data/ckpt/llama-1_1200.ckpt"

static uint64_t timespec_usec(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000u + (uint64_t)ts->tv_nsec / 1000u;
}

/*
 * The wall clock at the first call plus the monotonic time since: timestamps read as
 * real time, but an NTP step or a VM resume cannot make heartbeats look late (every
 * server unreachable) or early (a fault's hold time skipped). The price: after a step the
 * daemon's times differ from the wall clock (and the agents' log times) by the step until
 * it restarts; ascendfs.service starts after time-sync.target for that reason, and tests
 * compare times of one clock only.
 */
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static uint64_t clock_real0, clock_mono0;

static void clock_init(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_real0 = timespec_usec(&r);
	clock_mono0 = timespec_usec(&m);
}

uint64_t fs_now_usec(void)
{
	struct timespec ts;

	pthread_once(&clock_once, clock_init);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return clock_real0 + (timespec_usec(&ts) - clock_mono0);
}

/* Is stderr the journal (systemd.exec(5): JOURNAL_STREAM names its device and inode)? */
static bool stderr_is_journal(void)
{
	struct stat st;

	return fstat(STDERR_FILENO, &st) == 0 &&
	       conf_journal_stream_matches(getenv("JOURNAL_STREAM"), (uint64_t)st.st_dev,
					   (uint64_t)st.st_ino);
}

static void write_stderr(const char *text, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		text += n;
		len -= (size_t)n;
	}
}

/* The escape of byte @c into @e (at least 5 bytes); returns its length. */
static size_t escape_byte(unsigned char c, char *e)
{
	static const char hex[] = "0123456789abcdef";

	if (c == '\\' || c == '"') {
		e[0] = '\\';
		e[1] = (char)c;
		return 2;
	}
	if (c >= 0x20 && c < 0x7f) {
		e[0] = (char)c;
		return 1;
	}
	e[0] = '\\';
	e[1] = 'x';
	e[2] = hex[c >> 4];
	e[3] = hex[c & 0xf];
	return 4;
}

char *fs_text_escape(const char *in, char *out, size_t len)
{
	const unsigned char *p;
	size_t total = 0, o = 0, limit;
	char e[5];

	for (p = (const unsigned char *)in; *p; p++)
		total += escape_byte(*p, e);
	/* all of it, or as much as leaves room for "..." and the NUL */
	limit = total < len ? total : len > 4 ? len - 4 : 0;
	for (p = (const unsigned char *)in; *p; p++) {
		size_t n = escape_byte(*p, e);

		if (o + n > limit)
			break;
		memcpy(out + o, e, n);
		o += n;
	}
	if (total >= len && len > 4) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

/*
 * Write the @head bytes at @text and the @n bytes of message after them as one line:
 * the message with its control bytes escaped (conf_log_escape()), so that no message,
 * whatever user bytes it quotes, can end its line and start a forged one.
 */
static void write_line(char *text, size_t head, size_t n)
{
	size_t m = conf_log_escape(text + head, n, NULL);
	char *esc = NULL;

	if (m != n) {
		esc = malloc(head + m + 2);
		if (esc) {
			memcpy(esc, text, head);
			conf_log_escape(text + head, n, esc + head);
			text = esc;
			n = m;
		} else {
			/* no memory for the escapes: still one line */
			for (size_t i = head; i < head + n; i++)
				if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
					text[i] = '?';
		}
	}
	/* one write per line: lines of several threads (and of journald) stay whole */
	text[head + n] = '\n';
	write_stderr(text, head + n + 1);
	free(esc);
}

void fs_log(const struct fs_ctx *ctx, int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	static const char *const journal_prefix[] = { "<3>error: ", "<4>warning: ", "<6>",
						      "<7>debug: " };
	char stamp[32], line[4096], *big = NULL;
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int head, n;

	if (ctx && level > ctx->log_level)
		return;
	level = level < 0 ? 0 : level > 3 ? 3 : level;
	/* journald stamps each line itself and reads the priority from the "<N>" prefix */
	if (stderr_is_journal()) {
		head = snprintf(line, sizeof(line), "%s", journal_prefix[level]);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
		head = snprintf(line, sizeof(line), "%s ascendfs %s: ", stamp, names[level]);
	}
	va_start(ap, fmt);
	n = vsnprintf(line + head, sizeof(line) - (size_t)head - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - (size_t)head - 1) {
		/* a long message (a spec's error with its quote): format it again, whole */
		big = malloc((size_t)head + (size_t)n + 2);
		if (big) {
			memcpy(big, line, (size_t)head);
			va_start(ap, fmt);
			vsnprintf(big + head, (size_t)n + 1, fmt, ap);
			va_end(ap);
		} else {
			n = (int)(sizeof(line) - (size_t)head - 2);
		}
	}
	write_line(big ? big : line, (size_t)head, (size_t)n);
	free(big);
}

static const struct {
	const char *name;
	enum fs_node_kind kind;
} cluster_files[] = {
	{ "config", FS_CLUSTER_CONFIG }, { "status", FS_CLUSTER_STATUS },
	{ "topology.json", FS_CLUSTER_TOPOLOGY }, { "metrics", FS_CLUSTER_METRICS },
	{ "events", FS_CLUSTER_EVENTS }, { "jobs", FS_CLUSTER_JOBS },
	{ "accounting", FS_CLUSTER_ACCOUNTING }, { "utilization", FS_CLUSTER_UTILIZATION },
	{ "whatif", FS_CLUSTER_WHATIF }, { "ctl", FS_CLUSTER_CTL },
	{ "leader", FS_CLUSTER_LEADER },
}, node_files[] = {
	{ "health", FS_NODE_HEALTH }, { "npus", FS_NODE_NPUS },
	{ "info", FS_NODE_INFO }, { "jobs", FS_NODE_JOBS }, { "ctl", FS_NODE_CTL },
}, queue_files[] = {
	{ "quota", FS_QUEUE_QUOTA }, { "status", FS_QUEUE_STATUS },
}, job_files[] = {
	{ "spec", FS_JOB_SPEC }, { "status", FS_JOB_STATUS },
	{ "status.json", FS_JOB_STATUS_JSON }, { "ranktable.json", FS_JOB_RANKTABLE },
	{ "topology.json", FS_JOB_TOPOLOGY },
	{ "env", FS_JOB_ENV }, { "hosts", FS_JOB_HOSTS_DIR }, { "ranks", FS_JOB_RANKS_DIR },
	{ "events", FS_JOB_EVENTS }, { "history", FS_JOB_HISTORY },
	{ "accounting", FS_JOB_ACCOUNTING }, { "log", FS_JOB_LOG }, { "log.1", FS_JOB_LOG_OLD },
	{ "logs", FS_JOB_LOGS_DIR },
	{ "recovery", FS_JOB_RECOVERY }, { "error", FS_JOB_ERROR },
	{ "ctl", FS_JOB_CTL }, { "endpoints", FS_JOB_ENDPOINTS },
	{ "endpoint", FS_JOB_ENDPOINT }, { "mindie.json", FS_JOB_MINDIE },
	{ "global_ranktable.json", FS_JOB_GLOBAL_RANKTABLE }, { "roles", FS_JOB_ROLES_DIR },
};

#define LOOKUP(table, name, out)                                                     \
	({                                                                           \
		int _found = -ENOENT;                                                \
		for (size_t _i = 0; _i < sizeof(table) / sizeof(table[0]); _i++)     \
			if (strcmp(table[_i].name, name) == 0) {                     \
				*(out) = table[_i].kind;                             \
				_found = 0;                                          \
			}                                                            \
		_found;                                                              \
	})

static int copy_name(char *dst, const char *src, size_t len)
{
	if (len > CONF_NAME_MAX)
		return -ENOENT;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

/* "12" -> 12; no sign, no leading zero, no overflow. */
static int parse_rank(const char *s, size_t len, unsigned *ret)
{
	unsigned long v = 0;

	if (len == 0 || len > 6 || (s[0] == '0' && len > 1))
		return -ENOENT;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -ENOENT;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*ret = (unsigned)v;
	return 0;
}

int fs_path_parse(const char *path, struct fs_path *out)
{
	const char *comp[6];
	size_t clen[6], n = 0;
	const char *p = path;
	struct fs_path r;

	memset(&r, 0, sizeof(r));
	if (!path || path[0] != '/')
		return -ENOENT;
	while (*p) {
		const char *s;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		s = p;
		while (*p && *p != '/')
			p++;
		if ((size_t)(p - s) > 255)
			return -ENAMETOOLONG;
		if (n == 5)
			return -ENOENT;
		comp[n] = s;
		clen[n++] = (size_t)(p - s);
	}
#define IS(i, lit) (clen[i] == sizeof(lit) - 1 && memcmp(comp[i], lit, clen[i]) == 0)
	if (n == 0) {
		r.kind = FS_ROOT;
		goto done;
	}
	if (IS(0, "cluster")) {
		char name[64];

		if (n == 1) {
			r.kind = FS_CLUSTER_DIR;
			goto done;
		}
		if (n != 2 || copy_name(name, comp[1], clen[1]) < 0)
			return -ENOENT;
		if (LOOKUP(cluster_files, name, &r.kind) < 0)
			return -ENOENT;
		goto done;
	}
	if (IS(0, "nodes") || IS(0, "queues")) {
		bool nodes = IS(0, "nodes");
		char name[64];

		if (n == 1) {
			r.kind = nodes ? FS_NODES_DIR : FS_QUEUES_DIR;
			goto done;
		}
		if (copy_name(r.item, comp[1], clen[1]) < 0 || n > 3)
			return -ENOENT;
		if (n == 2) {
			r.kind = nodes ? FS_NODE_DIR : FS_QUEUE_DIR;
			goto done;
		}
		if (copy_name(name, comp[2], clen[2]) < 0)
			return -ENOENT;
		if (nodes ? LOOKUP(node_files, name, &r.kind) : LOOKUP(queue_files, name, &r.kind))
			return -ENOENT;
		goto done;
	}
	if (!IS(0, "jobs"))
		return -ENOENT;
	if (n == 1) {
		r.kind = FS_JOBS_DIR;
		goto done;
	}
	{
		static const char *const exts[] = { "yaml", "yml", "json" };
		size_t len = clen[1];
		char name[256];

		memcpy(name, comp[1], len);
		name[len] = '\0';
		for (size_t i = 0; i < 3; i++) {
			size_t el = strlen(exts[i]);

			if (n == 2 && len > el + 1 && name[len - el - 1] == '.' &&
			    strcmp(name + len - el, exts[i]) == 0) {
				name[len - el - 1] = '\0';
				if (!conf_job_name_is_valid(name))
					return -EINVAL;
				memcpy(r.job, name, strlen(name) + 1); /* valid: <= 63 */
				memcpy(r.ext, exts[i], el + 1);
				r.kind = FS_JOB_UPLOAD;
				goto done;
			}
		}
		if (!conf_job_name_is_valid(name))
			return -EINVAL;
		memcpy(r.job, name, strlen(name) + 1);
	}
	if (n == 2) {
		r.kind = FS_JOB_DIR;
		goto done;
	}
	{
		char name[64];

		if (copy_name(name, comp[2], clen[2]) < 0 || LOOKUP(job_files, name, &r.kind) < 0)
			return -ENOENT;
	}
	if (n == 3)
		goto done;
	if (n != 4)
		return -ENOENT;
	/* hosts/<server>.env and roles/<role>.env: the name before ".env" is the item */
	if (r.kind == FS_JOB_HOSTS_DIR || r.kind == FS_JOB_ROLES_DIR) {
		if (clen[3] < 5 || memcmp(comp[3] + clen[3] - 4, ".env", 4) != 0 ||
		    copy_name(r.item, comp[3], clen[3] - 4) < 0)
			return -ENOENT;
		r.kind = r.kind == FS_JOB_HOSTS_DIR ? FS_JOB_HOST_ENV : FS_JOB_ROLE_ENV;
		goto done;
	}
	if (r.kind == FS_JOB_RANKS_DIR) {
		if (clen[3] < 5 || memcmp(comp[3] + clen[3] - 4, ".env", 4) != 0 ||
		    parse_rank(comp[3], clen[3] - 4, &r.rank) < 0)
			return -ENOENT;
		r.kind = FS_JOB_RANK_ENV;
		goto done;
	}
	/* logs/<process> and logs/<process>.1 */
	if (r.kind == FS_JOB_LOGS_DIR) {
		size_t len = clen[3];

		r.kind = FS_JOB_PROC_LOG;
		if (len > 2 && memcmp(comp[3] + len - 2, ".1", 2) == 0) {
			len -= 2;
			r.kind = FS_JOB_PROC_LOG_OLD;
		}
		if (fs_joblog_proc_parse(comp[3], len, &r.proc) < 0)
			return -ENOENT;
		goto done;
	}
	return -ENOENT;
#undef IS
done:
	*out = r;
	return 0;
}

static bool node_is_dir(enum fs_node_kind k)
{
	switch (k) {
	case FS_ROOT:
	case FS_CLUSTER_DIR:
	case FS_NODES_DIR:
	case FS_NODE_DIR:
	case FS_QUEUES_DIR:
	case FS_QUEUE_DIR:
	case FS_JOBS_DIR:
	case FS_JOB_DIR:
	case FS_JOB_HOSTS_DIR:
	case FS_JOB_RANKS_DIR:
	case FS_JOB_ROLES_DIR:
	case FS_JOB_LOGS_DIR:
		return true;
	default:
		return false;
	}
}

/* The jobs/<name>.<ext> file being written, if any (not a jobs/<name>/spec writer). */
static const struct fs_upload *find_upload(const struct fs_ctx *ctx, const char *name)
{
	const struct fs_upload *u = fs_upload_find(ctx, name);

	return u && u->ext[0] ? u : NULL;
}

static int host_slice(const struct sched_cluster *c, const struct sched_job *j,
		      const char *server, size_t *ret)
{
	for (size_t i = 0; i < j->slice_count; i++)
		if (strcmp(c->servers[j->slices[i].server].conf->name, server) == 0) {
			*ret = i;
			return 0;
		}
	return -ENOENT;
}

/* Does @j run role @role (NULL: any role) of its disaggregated layout, on a server of
 * the inventory? */
static bool role_runs(const struct sched_cluster *c, const struct sched_job *j,
		      const char *role)
{
	for (int k = 0; k < SCHED_ROLE_COUNT; k++)
		if (sched_service_role_run(j, (enum sched_role)k) &&
		    sched_service_role_server(c, j, (enum sched_role)k) >= 0 &&
		    (!role || strcmp(role, sched_role_name((enum sched_role)k)) == 0))
			return true;
	return false;
}

/* Does the node exist now? Also fills the owning job. */
static int resolve(struct fs_ctx *ctx, const struct fs_path *p, struct sched_job **ret_job)
{
	struct sched_cluster *c = ctx->cluster;
	struct sched_job *j = NULL;
	size_t slice;

	*ret_job = NULL;
	switch (p->kind) {
	case FS_NODE_DIR:
	case FS_NODE_HEALTH:
	case FS_NODE_NPUS:
	case FS_NODE_INFO:
	case FS_NODE_JOBS:
	case FS_NODE_CTL:
		return sched_cluster_find_server(c, p->item) < 0 ? -ENOENT : 0;
	case FS_QUEUE_DIR:
	case FS_QUEUE_QUOTA:
	case FS_QUEUE_STATUS:
		return conf_cluster_find_queue(c->conf, p->item) ? 0 : -ENOENT;
	case FS_JOB_UPLOAD:
		return find_upload(ctx, p->job) ? 0 : -ENOENT;
	default:
		break;
	}
	if (p->kind < FS_JOB_DIR)
		return 0;
	j = sched_cluster_find_job(c, p->job);
	if (!j)
		return -ENOENT;
	*ret_job = j;
	switch (p->kind) {
	case FS_JOB_RANKTABLE:
	case FS_JOB_TOPOLOGY:
	case FS_JOB_ENV:
	case FS_JOB_HOSTS_DIR:
	case FS_JOB_RANKS_DIR:
		return j->slice_count ? 0 : -ENOENT;
	case FS_JOB_HOST_ENV:
		return host_slice(c, j, p->item, &slice);
	case FS_JOB_RANK_ENV:
		return p->rank < sched_job_total_npus(j) ? 0 : -ENOENT;
	case FS_JOB_ENDPOINTS:
		return sched_job_is_service(j) ? 0 : -ENOENT;
	case FS_JOB_LOG_OLD:
		return fs_joblog_size(ctx, j->serial, true, NULL) ? 0 : -ENOENT;
	case FS_JOB_PROC_LOG:
	case FS_JOB_PROC_LOG_OLD: {
		uint64_t bytes;

		return fs_joblog_proc_size(ctx, j->serial, p->proc,
					   p->kind == FS_JOB_PROC_LOG_OLD, &bytes, NULL);
	}
	case FS_JOB_GLOBAL_RANKTABLE:
		return sched_job_is_service(j) && j->spec->prefill ? 0 : -ENOENT;
	case FS_JOB_ROLES_DIR:
		return role_runs(c, j, NULL) ? 0 : -ENOENT;
	case FS_JOB_ROLE_ENV:
		return role_runs(c, j, p->item) ? 0 : -ENOENT;
	case FS_JOB_ENDPOINT:
	case FS_JOB_MINDIE:
		return sched_job_is_instance(j) && j->slice_count ? 0 : -ENOENT;
	default:
		return 0;
	}
}

static uint64_t last_event_usec(const struct sched_cluster *c)
{
	if (!c->event_count)
		return 0;
	return c->events[(c->event_head + c->event_count - 1) % c->event_cap].time_usec;
}

static bool spec_is_writable(const struct sched_job *j)
{
	return j->state == SCHED_JOB_DRAFT || sched_job_state_is_terminal(j->state);
}

int fs_stat(struct fs_ctx *ctx, const struct fs_path *p, struct stat *st, uint64_t now_usec)
{
	return fs_stat_sized(ctx, p, st, now_usec, true);
}

int fs_stat_sized(struct fs_ctx *ctx, const struct fs_path *p, struct stat *st,
		  uint64_t now_usec, bool with_size)
{
	struct sched_job *j;
	uint64_t t;
	int r = resolve(ctx, p, &j);

	if (r < 0)
		return r;
	memset(st, 0, sizeof(*st));
	st->st_nlink = 1;
	t = j ? j->change_usec : last_event_usec(ctx->cluster);
	if (!t)
		t = now_usec;
	if (node_is_dir(p->kind)) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		if (p->kind == FS_JOBS_DIR)
			st->st_mode = S_IFDIR | 01777;
		if (p->kind == FS_JOB_DIR)
			st->st_mode = S_IFDIR | 0755;
	} else {
		st->st_mode = S_IFREG | 0444;
	}
	switch (p->kind) {
	case FS_CLUSTER_CTL:
	case FS_NODE_CTL:
	case FS_JOB_CTL:
	case FS_NODE_HEALTH:
	case FS_QUEUE_QUOTA:
	case FS_JOB_LOG:
		st->st_mode = S_IFREG | 0644; /* ctl reads as its verbs; only the owner writes */
		break;
	case FS_CLUSTER_WHATIF:
		st->st_mode = S_IFREG | 0666; /* anyone asks: it changes nothing */
		break;
	case FS_JOB_SPEC:
		if (spec_is_writable(j))
			st->st_mode = S_IFREG | 0644;
		break;
	case FS_JOB_UPLOAD: {
		const struct fs_upload *u = find_upload(ctx, p->job);

		st->st_mode = S_IFREG | 0644;
		st->st_uid = u->uid;
		st->st_gid = u->gid;
		st->st_size = (off_t)u->len;
		t = u->mtime_usec;
		break;
	}
	default:
		break;
	}
	if (j) {
		st->st_uid = j->uid;
		st->st_gid = j->gid;
	}
	st->st_mtim.tv_sec = (time_t)(t / 1000000);
	st->st_mtim.tv_nsec = (long)(t % 1000000) * 1000;
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	if (p->kind == FS_JOB_LOG || p->kind == FS_JOB_LOG_OLD || p->kind == FS_JOB_PROC_LOG ||
	    p->kind == FS_JOB_PROC_LOG_OLD) {
		bool old = p->kind == FS_JOB_LOG_OLD || p->kind == FS_JOB_PROC_LOG_OLD;
		uint64_t bytes = 0;

		/* written by agents, not by the state: a size, never a render */
		t = 0;
		if (p->kind == FS_JOB_LOG || p->kind == FS_JOB_LOG_OLD)
			bytes = fs_joblog_size(ctx, j->serial, old, &t);
		else if (fs_joblog_proc_size(ctx, j->serial, p->proc, old, &bytes, &t) < 0)
			return -ENOENT; /* gone since resolve(): its log rotated */
		st->st_size = (off_t)bytes;
		st->st_uid = 0;
		st->st_gid = 0;
		if (t) {
			st->st_mtim.tv_sec = (time_t)(t / 1000000);
			st->st_mtim.tv_nsec = (long)(t % 1000000) * 1000;
			st->st_ctim = st->st_mtim;
		}
	} else if (with_size && S_ISREG(st->st_mode) && p->kind != FS_JOB_UPLOAD &&
		   (st->st_mode & 0444)) {
		struct fs_view v;

		r = fs_snapshot(ctx, p, now_usec, &v);
		if (r < 0)
			return r;
		st->st_size = (off_t)v.len;
		fs_blob_put(v.blob);
	}
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}

static int dup_text(const char *s, size_t len, char **ret, size_t *ret_len)
{
	char *b = malloc(len + 1);

	if (!b)
		return -ENOMEM;
	memcpy(b, s, len);
	b[len] = '\0';
	*ret = b;
	*ret_len = len;
	return 0;
}

static int printf_text(char **ret, size_t *ret_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int printf_text(char **ret, size_t *ret_len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	*ret_len = (size_t)n;
	return 0;
}

/* cluster/metrics ends with whether this head leads: with several heads a Prometheus
 * that scrapes each tells the leader's series from a standby's view of them (as etcd's
 * etcd_server_is_leader). Under ctx->lock (ctx->viewing). 0 or -ENOMEM (*@ret freed). */
static int append_leader_metric(const struct fs_ctx *ctx, char **ret, size_t *ret_len)
{
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "# HELP ascendfs_leader 1 on the head that leads the cluster, 0 on a "
			 "standby (its other metrics are a view of the leader's state)\n"
			 "# TYPE ascendfs_leader gauge\nascendfs_leader %d\n", ctx->viewing ? 0 : 1);
	char *b = realloc(*ret, *ret_len + (size_t)n + 1);

	if (!b) {
		free(*ret);
		*ret = NULL;
		return -ENOMEM;
	}
	memcpy(b + *ret_len, line, (size_t)n + 1);
	*ret = b;
	*ret_len += (size_t)n;
	return 0;
}

/* A placed job whose rank table is not completed says what it waits for, else "". */
static int job_error_waiting(const struct sched_cluster *c, const struct sched_job *j,
			     char **ret, size_t *ret_len)
{
	char why[SCHED_REASON_MAX];

	if (sched_ranktable_waiting_for(c, j, why, sizeof(why)) > 0)
		return printf_text(ret, ret_len,
				   "rank table not completed (HCCL waits for it): waiting for %s\n",
				   why);
	return dup_text("", 0, ret, ret_len);
}

int fs_render(struct fs_ctx *ctx, const struct fs_path *p, uint64_t now_usec, char **ret,
	      size_t *ret_len)
{
	struct sched_cluster *c = ctx->cluster;
	struct sched_render_ctx rc = { .mount_path = ctx->mount_path };
	struct sched_job *j;
	size_t slice = 0;
	int r = resolve(ctx, p, &j);

	if (r < 0)
		return r;
	if (node_is_dir(p->kind))
		return -EISDIR;
	switch (p->kind) {
	case FS_CLUSTER_CONFIG:
		return dup_text(ctx->config_text, ctx->config_len, ret, ret_len);
	case FS_CLUSTER_LEADER:
		if (!ctx->store)
			return printf_text(ret, ret_len, "leader: this head (pid %d)\nrole: leader\n"
					   "state: memory (--state-dir=none)\n", (int)getpid());
		return dup_text(fs_store_leader(ctx->store), strlen(fs_store_leader(ctx->store)),
				ret, ret_len);
	case FS_CLUSTER_STATUS:
		return sched_render_cluster_status(c, ret, ret_len);
	case FS_CLUSTER_TOPOLOGY:
		return sched_render_topology(c, ret, ret_len);
	case FS_CLUSTER_METRICS:
		r = sched_render_metrics(c, now_usec, ret, ret_len);
		return r < 0 ? r : append_leader_metric(ctx, ret, ret_len);
	case FS_CLUSTER_JOBS:
		return sched_render_jobs_table(c, now_usec, ret, ret_len);
	case FS_CLUSTER_EVENTS:
		return sched_render_events(c, NULL, ret, ret_len);
	case FS_CLUSTER_ACCOUNTING:
		return sched_render_accounting(c, NULL, ret, ret_len);
	case FS_CLUSTER_UTILIZATION:
		return sched_render_utilization(c, ret, ret_len);
	case FS_NODE_HEALTH:
		return sched_render_server_health(c,
						  (unsigned)sched_cluster_find_server(c, p->item),
						  ret, ret_len);
	case FS_NODE_NPUS:
		return sched_render_server_npus(c, (unsigned)sched_cluster_find_server(c, p->item),
						ret, ret_len);
	case FS_NODE_INFO:
		return sched_render_server_info(c, (unsigned)sched_cluster_find_server(c, p->item),
						now_usec, ret, ret_len);
	case FS_NODE_JOBS:
		return sched_render_server_jobs(c, (unsigned)sched_cluster_find_server(c, p->item),
						ret, ret_len);
	case FS_QUEUE_QUOTA:
		return printf_text(ret, ret_len, "%u\n",
				   conf_cluster_find_queue(c->conf, p->item)->quota_npus);
	case FS_QUEUE_STATUS:
		return sched_render_queue_status(c, conf_cluster_find_queue(c->conf, p->item), ret,
						 ret_len);
	case FS_JOB_UPLOAD:
		return dup_text("", 0, ret, ret_len);
	case FS_JOB_SPEC:
		return dup_text(j->spec_text ? j->spec_text : "", j->spec_text ? j->spec_len : 0,
				ret, ret_len);
	case FS_JOB_STATUS:
		return printf_text(ret, ret_len, "%s\n", sched_job_state_name(j->state));
	case FS_JOB_STATUS_JSON:
		return sched_render_job_status_json(c, j, ret, ret_len);
	case FS_JOB_RANKTABLE:
		return sched_render_ranktable(c, j, ret, ret_len);
	case FS_JOB_TOPOLOGY:
		return sched_render_job_topology(c, j, ret, ret_len);
	case FS_JOB_ENV:
		return sched_render_job_env(c, j, &rc, ret, ret_len);
	case FS_JOB_HOST_ENV:
		host_slice(c, j, p->item, &slice);
		return sched_render_host_env(c, j, slice, &rc, ret, ret_len);
	case FS_JOB_RANK_ENV:
		return sched_render_rank_env(c, j, p->rank, &rc, ret, ret_len);
	case FS_JOB_ROLE_ENV:
		return sched_render_role_env(c, j, (enum sched_role)sched_role_from_name(p->item),
					     &rc, ret, ret_len);
	case FS_JOB_EVENTS:
		return sched_render_events(c, j->name, ret, ret_len);
	case FS_JOB_HISTORY:
		return sched_render_job_history(c, j, ret, ret_len);
	case FS_JOB_ACCOUNTING:
		return sched_render_accounting(c, j->name, ret, ret_len);
	case FS_JOB_RECOVERY:
		return sched_render_job_recovery(c, j, ret, ret_len);
	case FS_JOB_ENDPOINTS:
		return sched_render_service_endpoints(c, j, ret, ret_len);
	case FS_JOB_GLOBAL_RANKTABLE:
		return sched_render_global_ranktable(c, j, ret, ret_len);
	case FS_JOB_ENDPOINT:
		return sched_render_instance_endpoint(c, j, ret, ret_len);
	case FS_JOB_MINDIE:
		return sched_render_instance_mindie(c, j, ret, ret_len);
	case FS_JOB_ERROR:
		/* a failure or time-out is known while the job still stops */
		if (j->state == SCHED_JOB_REJECTED || j->state == SCHED_JOB_FAILED ||
		    j->state == SCHED_JOB_TIMEOUT ||
		    (j->state == SCHED_JOB_STOPPING && !j->stop_cancelled &&
		     (j->stop_to == SCHED_JOB_FAILED || j->stop_to == SCHED_JOB_TIMEOUT)))
			return printf_text(ret, ret_len, "%s\n", j->reason);
		return job_error_waiting(c, j, ret, ret_len);
	case FS_CLUSTER_WHATIF:
		return printf_text(ret, ret_len,
				   "# a dry run: open this file to read and write, write a job "
				   "spec, then read on\n# from the same open file: what would "
				   "become of it if submitted now (JSON)\n# ascend-run "
				   "--test-only spec.yaml does it\n");
	case FS_CLUSTER_CTL:
		return printf_text(ret, ret_len, "# write one command per line (root):\n"
						 "# cordon <server> | uncordon <server> | "
						 "drain <server>\n");
	case FS_NODE_CTL:
		return printf_text(ret, ret_len, "# write one command per line (root):\n"
						 "# cordon | uncordon | drain | clear <npu>\n");
	case FS_JOB_CTL:
		return printf_text(ret, ret_len,
				   "# write one command per line (the job's owner or root):\n"
				   "# cancel | complete |\n"
				   "# hold | release | requeue [hold] |\n"
				   "# update priority <0-1000|low|normal|high> |\n"
				   "# update time_limit <duration> |\n"
				   "# resize <npus> |\n"
				   "# checkpoint <step> <absolute path> [<generation>] |\n"
				   "# exit <generation> <server> <status> [<rank>|- [<attempt>]] |\n"
				   "# exit <generation> <server> <status> controller|coordinator "
				   "(a service's role) |\n"
				   "# saved <request> <server> <rank|-> <step> [<path>] |\n"
				   "# save-failed <request> <server> <rank|-> |\n"
				   "# paused <request> <server> <rank|-> <step> |\n"
				   "# joined <request> <server> <rank|-> |\n"
				   "# scale <replicas> (a service) |\n"
				   "# ready <generation> | unready <generation> (a service's "
				   "instance)\n");
	default:
		return -ENOENT;
	}
}

int fs_config_refresh(struct fs_ctx *ctx)
{
	char *text;
	size_t len;
	int r = conf_cluster_render_yaml(ctx->cluster->conf, &text, &len);

	if (r < 0)
		return r;
	if (ctx->config_warnings) {
		size_t wl = strlen(ctx->config_warnings);
		char *n = realloc(text, len + wl + 1);

		if (!n) {
			free(text);
			return -ENOMEM;
		}
		memcpy(n + len, ctx->config_warnings, wl + 1);
		text = n;
		len += wl;
	}
	free(ctx->config_text);
	ctx->config_text = text;
	ctx->config_len = len;
	return 0;
}

int fs_config_fingerprint(const struct conf_cluster *conf, char *ret)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64: offset basis, prime below */
	struct conf_cluster c = *conf;	/* shallow: only rendered */
	char *text, none[] = "";
	size_t len;

	/* how a head reaches etcd is its own: the members in its order, its timeout */
	c.etcd_servers = none;
	c.etcd_timeout_sec = 0;
	if (conf_cluster_render_yaml(&c, &text, &len) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)text[i];
		h *= 0x100000001b3ull;
	}
	free(text);
	snprintf(ret, FS_CONFIG_FINGERPRINT_LEN + 1, "%016" PRIx64, h);
	return 0;
}

int fs_list(struct fs_ctx *ctx, const struct fs_path *p, int (*fill)(void *data, const char *name),
	    void *data)
{
	struct sched_cluster *c = ctx->cluster;
	struct sched_job *j;
	char name[128];
	int r = resolve(ctx, p, &j);

#define FILL(n)                          \
	do {                             \
		int _r = fill(data, (n)); \
		if (_r)                  \
			return _r;       \
	} while (0)
	if (r < 0)
		return r;
	if (!node_is_dir(p->kind))
		return -ENOTDIR;
	switch (p->kind) {
	case FS_ROOT:
		FILL("cluster");
		FILL("nodes");
		FILL("queues");
		FILL("jobs");
		break;
	case FS_CLUSTER_DIR:
		for (size_t i = 0; i < sizeof(cluster_files) / sizeof(cluster_files[0]); i++)
			FILL(cluster_files[i].name);
		break;
	case FS_NODES_DIR:
		for (size_t i = 0; i < c->server_count; i++)
			FILL(c->servers[i].conf->name);
		break;
	case FS_NODE_DIR:
		for (size_t i = 0; i < sizeof(node_files) / sizeof(node_files[0]); i++)
			FILL(node_files[i].name);
		break;
	case FS_QUEUES_DIR:
		for (size_t i = 0; i < c->conf->queue_count; i++)
			FILL(c->conf->queues[i].name);
		break;
	case FS_QUEUE_DIR:
		for (size_t i = 0; i < sizeof(queue_files) / sizeof(queue_files[0]); i++)
			FILL(queue_files[i].name);
		break;
	case FS_JOBS_DIR:
		for (size_t i = 0; i < c->job_count; i++)
			FILL(c->jobs[i]->name);
		for (const struct fs_upload *u = ctx->uploads; u; u = u->next) {
			if (!u->ext[0])
				continue;
			snprintf(name, sizeof(name), "%s.%s", u->name, u->ext);
			FILL(name);
		}
		break;
	case FS_JOB_DIR:
		for (size_t i = 0; i < sizeof(job_files) / sizeof(job_files[0]); i++) {
			struct fs_path q = *p;
			struct sched_job *jj;

			q.kind = job_files[i].kind;
			if (resolve(ctx, &q, &jj) == 0)
				FILL(job_files[i].name);
		}
		break;
	case FS_JOB_HOSTS_DIR:
		for (size_t i = 0; i < j->slice_count; i++) {
			snprintf(name, sizeof(name), "%s.env",
				 c->servers[j->slices[i].server].conf->name);
			FILL(name);
		}
		break;
	case FS_JOB_RANKS_DIR:
		for (unsigned rk = 0; rk < sched_job_total_npus(j); rk++) {
			snprintf(name, sizeof(name), "%u.env", rk);
			FILL(name);
		}
		break;
	case FS_JOB_ROLES_DIR:
		for (int k = 0; k < SCHED_ROLE_COUNT; k++) {
			if (!role_runs(c, j, sched_role_name((enum sched_role)k)))
				continue;
			snprintf(name, sizeof(name), "%s.env", sched_role_name((enum sched_role)k));
			FILL(name);
		}
		break;
	case FS_JOB_LOGS_DIR:
		return fs_joblog_proc_list(ctx, j->serial, fill, data);
	default:
		return -ENOTDIR;
	}
	return 0;
#undef FILL
}

/* Split "verb arg1 arg2" in place; returns the count (at most @max). */
/* The most words a ctl command has ("saved REQUEST SERVER RANK STEP PATH"). */
#define CTL_WORDS_MAX 6

static size_t split_words(char *line, char **words, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *w = strtok_r(line, " \t\r", &save); w && n < max;
	     w = strtok_r(NULL, " \t\r", &save))
		words[n++] = w;
	return n;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*ret = v;
	return 0;
}

static int server_ctl(struct fs_ctx *ctx, const char *server, char **w, size_t n, uid_t uid,
		      bool may_operate, uint64_t now_usec, char *why)
{
	struct sched_cluster *c = ctx->cluster;
	int idx = sched_cluster_find_server(c, server);

	if (idx < 0) {
		snprintf(why, SCHED_REASON_MAX, "unknown server \"%s\"; see nodes/", server);
		return -ENOENT;
	}
	if (!may_operate) {
		snprintf(why, SCHED_REASON_MAX,
			 "uid %u may not change server %s; only root%s may", (unsigned)uid, server,
			 c->conf->operator_group ? " and members of operator_group" : "");
		return -EPERM;
	}
	if (n == 1 && strcmp(w[0], "cordon") == 0)
		return sched_server_set_cordon(c, server, true, false, now_usec);
	if (n == 1 && strcmp(w[0], "uncordon") == 0)
		return sched_server_set_cordon(c, server, false, false, now_usec);
	if (n == 1 && strcmp(w[0], "drain") == 0)
		return sched_server_set_cordon(c, server, true, true, now_usec);
	if (n == 2 && strcmp(w[0], "clear") == 0) {
		struct sched_server *s = &c->servers[idx];
		uint64_t npu;

		if (parse_u64(w[1], &npu) < 0 || npu >= s->conf->npu_count) {
			snprintf(why, SCHED_REASON_MAX,
				 "clear: \"%s\" is not an NPU of %s; use an id from 0 to %u", w[1],
				 server, s->conf->npu_count - 1);
			return -EINVAL;
		}
		return sched_server_clear_npu(c, server, (unsigned)npu, now_usec);
	}
	snprintf(why, SCHED_REASON_MAX,
		 "unknown command \"%s\"; use cordon, uncordon, drain or clear <npu>", w[0]);
	return -EINVAL;
}

/* Printable UTF-8 without control characters (tab allowed): what a ctl line may hold. */
static bool text_is_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned len, cp;

		if (*p < 0x80) {
			if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
				return false;
			p++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0) {
			len = 2;
			cp = *p & 0x1f;
		} else if ((*p & 0xf0) == 0xe0) {
			len = 3;
			cp = *p & 0x0f;
		} else if ((*p & 0xf8) == 0xf0) {
			len = 4;
			cp = *p & 0x07;
		} else {
			return false;
		}
		for (unsigned i = 1; i < len; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		/* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += len;
	}
	return true;
}

int fs_ctl(struct fs_ctx *ctx, const struct fs_path *p, const char *line, uid_t uid,
	   bool may_operate, uint64_t now_usec, char *why)
{
	struct sched_cluster *c = ctx->cluster;
	char copy[512], *w[CTL_WORDS_MAX + 1];
	size_t n;
	int r;

	why[0] = '\0';
	if (strlen(line) >= sizeof(copy)) {
		snprintf(why, SCHED_REASON_MAX, "ctl line is too long (%zu bytes)", strlen(line));
		return -EINVAL;
	}
	if (!text_is_clean(line)) {
		snprintf(why, SCHED_REASON_MAX,
			 "ctl lines are UTF-8 text without control characters");
		return -EINVAL;
	}
	snprintf(copy, sizeof(copy), "%s", line);
	/* one word more than any verb takes: a line with more is refused, not cut */
	n = split_words(copy, w, CTL_WORDS_MAX + 1);
	if (n == 0)
		return 0; /* blank lines are harmless */
	if (n > CTL_WORDS_MAX) {
		snprintf(why, SCHED_REASON_MAX,
			 "\"%.40s\": too many words for a ctl command (at most %d; a path "
			 "with a space in it cannot be given)", w[0], CTL_WORDS_MAX);
		return -EINVAL;
	}

	switch (p->kind) {
	case FS_CLUSTER_CTL:
		if (n == 2 && (strcmp(w[0], "cordon") == 0 || strcmp(w[0], "uncordon") == 0 ||
			       strcmp(w[0], "drain") == 0)) {
			char *verb = w[0];

			return server_ctl(ctx, w[1], &verb, 1, uid, may_operate, now_usec, why);
		}
		if (n == 1 && strcmp(w[0], "reload") == 0) {
			snprintf(why, SCHED_REASON_MAX,
				 "reload is not supported yet; restart the daemon to apply a new "
				 "configuration");
			return -EOPNOTSUPP;
		}
		snprintf(why, SCHED_REASON_MAX,
			 "unknown command \"%s\"; use cordon|uncordon|drain <server>", w[0]);
		return -EINVAL;
	case FS_NODE_CTL:
		return server_ctl(ctx, p->item, w, n, uid, may_operate, now_usec, why);
	case FS_JOB_CTL:
		break;
	default:
		return -EACCES;
	}

	if (n == 1 && strcmp(w[0], "cancel") == 0)
		r = sched_job_cancel(c, p->job, uid, now_usec);
	else if (n == 1 && strcmp(w[0], "complete") == 0)
		r = sched_job_complete(c, p->job, uid, now_usec);
	else if ((n == 3 || n == 4) && strcmp(w[0], "checkpoint") == 0) {
		uint64_t step, gen = 0;
		const struct sched_job *j = sched_cluster_find_job(c, p->job);

		if (parse_u64(w[1], &step) < 0 || step > INT64_MAX || w[2][0] != '/' ||
		    (n == 4 && parse_u64(w[3], &gen) < 0)) {
			snprintf(why, SCHED_REASON_MAX,
				 "usage: checkpoint <step> <absolute path> [<generation>], e.g. "
				 "checkpoint 1200 /data/ckpt/llama-1_1200.ckpt 2");
			return -EINVAL;
		}
		/* a process of an earlier generation, still winding down: not the newest */
		if (n == 4 && j && gen < j->generation)
			return 0;
		r = sched_job_checkpoint(c, p->job, uid, step, w[2], now_usec);
	} else if (n == 5 && strcmp(w[0], "exit") == 0 && sched_role_from_name(w[4]) >= 0) {
		uint64_t gen, code;

		/* exit <generation> <server> <status> <role>: a disaggregated service's
		 * controller or coordinator (sched_service_roles.c) */
		if (parse_u64(w[1], &gen) < 0 || gen > UINT32_MAX || parse_u64(w[3], &code) < 0 ||
		    code > 255) {
			snprintf(why, SCHED_REASON_MAX,
				 "usage: exit <generation> <server> <status 0-255> "
				 "controller|coordinator");
			return -EINVAL;
		}
		r = sched_service_role_exit(c, p->job, uid,
					    (enum sched_role)sched_role_from_name(w[4]),
					    (unsigned)gen, w[2], (int)code, now_usec, why);
		if (r == -EINVAL)
			return r;
	} else if ((n == 4 || n == 5 || n == 6) && strcmp(w[0], "exit") == 0) {
		uint64_t gen, code, rank = 0, attempt = 0;
		bool has_rank = n >= 5 && !(n == 6 && strcmp(w[4], "-") == 0);

		/* exit <generation> <server> <status> [<rank>|- [<attempt>]] */
		if (parse_u64(w[1], &gen) < 0 || gen > UINT32_MAX || parse_u64(w[3], &code) < 0 ||
		    code > 255 || (has_rank && (parse_u64(w[4], &rank) < 0 || rank > INT32_MAX)) ||
		    (n == 6 && (parse_u64(w[5], &attempt) < 0 || attempt > UINT32_MAX))) {
			snprintf(why, SCHED_REASON_MAX,
				 "usage: exit <generation> <server> <status 0-255> [<rank>|- "
				 "[<attempt>]]");
			return -EINVAL;
		}
		r = sched_job_process_exit_attempt(c, p->job, uid, (unsigned)gen,
						   (unsigned)attempt, w[2],
						   has_rank ? (int)rank : -1, (int)code, now_usec,
						   why);
		if (r == -EINVAL)
			return r;
	} else if (((n == 5 || n == 6) && strcmp(w[0], "saved") == 0) ||
		   (n == 4 && strcmp(w[0], "save-failed") == 0) ||
		   (n == 5 && strcmp(w[0], "paused") == 0) ||
		   (n == 4 && strcmp(w[0], "joined") == 0)) {
		enum sched_recovery_answer answer =
			strcmp(w[0], "saved") == 0 ? SCHED_ANSWER_SAVED :
			strcmp(w[0], "save-failed") == 0 ? SCHED_ANSWER_SAVE_FAILED :
			strcmp(w[0], "paused") == 0 ? SCHED_ANSWER_PAUSED : SCHED_ANSWER_JOINED;
		bool has_step = answer == SCHED_ANSWER_SAVED || answer == SCHED_ANSWER_PAUSED;
		uint64_t req, rank = 0, step = 0;

		if (parse_u64(w[1], &req) < 0 || req > UINT32_MAX ||
		    (strcmp(w[3], "-") != 0 && (parse_u64(w[3], &rank) < 0 || rank > INT32_MAX)) ||
		    (has_step && (parse_u64(w[4], &step) < 0 || step > INT64_MAX ||
				  (n == 6 && w[5][0] != '/')))) {
			snprintf(why, SCHED_REASON_MAX, "usage: %s", RECOVERY_ANSWERS);
			return -EINVAL;
		}
		r = sched_job_recovery_answer(c, p->job, uid, (unsigned)req, w[2],
					      strcmp(w[3], "-") == 0 ? -1 : (int)rank, answer, step,
					      answer == SCHED_ANSWER_SAVED && n == 6 ? w[5] : NULL,
					      now_usec, why);
		if (r == -EINVAL || r == -ESTALE)
			return r;
	} else if (strcmp(w[0], "saved") == 0 || strcmp(w[0], "save-failed") == 0 ||
		   strcmp(w[0], "paused") == 0 || strcmp(w[0], "joined") == 0) {
		snprintf(why, SCHED_REASON_MAX, "usage: %s", RECOVERY_ANSWERS);
		return -EINVAL;
	} else if (strcmp(w[0], "ready") == 0 || strcmp(w[0], "unready") == 0) {
		uint64_t gen;

		if (n != 2 || parse_u64(w[1], &gen) < 0 || gen > UINT32_MAX) {
			snprintf(why, SCHED_REASON_MAX,
				 "usage: ready <generation> | unready <generation> (a service's "
				 "instance: its master answers on the service's port, or no longer)");
			return -EINVAL;
		}
		r = sched_service_ready(c, p->job, uid, (unsigned)gen, strcmp(w[0], "ready") == 0,
					now_usec, why);
		if (r == -EINVAL)
			return r;
	} else if (strcmp(w[0], "scale") == 0) {
		uint64_t replicas;

		if (n != 2 || parse_u64(w[1], &replicas) < 0 || replicas > UINT32_MAX) {
			snprintf(why, SCHED_REASON_MAX,
				 "usage: scale <replicas>, a whole number from 0 to %u (a service's "
				 "instances)", CONF_SERVICE_REPLICAS_MAX);
			return -EINVAL;
		}
		r = sched_service_scale(c, p->job, uid, (unsigned)replicas, now_usec, why);
		if (r == -EINVAL || r == -ENOMEM)
			return r;
	} else if ((n == 1 && (strcmp(w[0], "hold") == 0 || strcmp(w[0], "release") == 0 ||
			       strcmp(w[0], "requeue") == 0)) ||
		   (n == 2 && strcmp(w[0], "requeue") == 0 && strcmp(w[1], "hold") == 0)) {
		/* job control (sched_control.c); "requeue hold" is Slurm's requeuehold */
		why[0] = '\0';
		if (strcmp(w[0], "hold") == 0)
			r = sched_job_hold(c, p->job, uid, now_usec, why);
		else if (strcmp(w[0], "release") == 0)
			r = sched_job_release(c, p->job, uid, now_usec, why);
		else
			r = sched_job_requeue(c, p->job, uid, n == 2, now_usec, why);
		if (r < 0 && why[0])
			return r;
	} else if (strcmp(w[0], "hold") == 0 || strcmp(w[0], "release") == 0 ||
		   strcmp(w[0], "requeue") == 0) {
		snprintf(why, SCHED_REASON_MAX, "usage: hold | release | requeue [hold]");
		return -EINVAL;
	} else if (strcmp(w[0], "update") == 0) {
		enum sched_job_field field = SCHED_FIELD_PRIORITY;
		uint64_t value = 0;
		unsigned prio;
		int pr = -EINVAL;

		if (n == 3 && strcmp(w[1], "priority") == 0) {
			pr = conf_parse_priority(w[2], &prio);
			value = prio;
		} else if (n == 3 && strcmp(w[1], "time_limit") == 0) {
			field = SCHED_FIELD_TIME_LIMIT;
			pr = conf_parse_duration(w[2], &value);
		}
		if (pr == -ERANGE) {
			snprintf(why, SCHED_REASON_MAX,
				 "%s %.40s is out of range: a priority is 0 to 1000 (or low, normal, "
				 "high), a time_limit at most %ud",
				 w[1], w[2], CONF_TIME_LIMIT_MAX_SEC / 86400);
			return -EINVAL;
		}
		if (pr < 0) {
			snprintf(why, SCHED_REASON_MAX,
				 "usage: update priority <0-1000|low|normal|high> | update time_limit "
				 "<duration, e.g. 90m, 12h, 2d>");
			return -EINVAL;
		}
		why[0] = '\0';
		r = sched_job_update(c, p->job, uid, may_operate, field, value, now_usec, why);
		if (r < 0 && why[0])
			return r;
	} else if (strcmp(w[0], "resize") == 0) {
		uint64_t npus;

		if (n != 2 || parse_u64(w[1], &npus) < 0 || npus > UINT32_MAX) {
			snprintf(why, SCHED_REASON_MAX,
				 "usage: resize <npus>, e.g. resize 16 (a running job starts again "
				 "at that size from its newest checkpoint)");
			return -EINVAL;
		}
		why[0] = '\0';
		r = sched_job_resize(c, p->job, uid, may_operate, (unsigned)npus, now_usec, why);
		if (r < 0 && why[0])
			return r;
	} else {
		snprintf(why, SCHED_REASON_MAX,
			 "unknown command \"%.100s\"; use cancel, complete, hold, release, "
			 "requeue [hold], update priority|time_limit <value>, resize <npus>, "
			 "checkpoint <step> <path>, "
			 "exit <generation> <server> <status> [<rank>|- [<attempt>]|<role>], "
			 "scale <replicas> (a service), ready|unready <generation> (its "
			 "instance), or an answer to "
			 "jobs/<job>/recovery: saved, save-failed, paused or joined",
			 line);
		return -EINVAL;
	}
	if (r == -EPERM)
		snprintf(why, SCHED_REASON_MAX,
			 "job %s belongs to uid %u; uid %u may not \"%s\" it (only its owner or "
			 "root may)",
			 p->job, sched_cluster_find_job(c, p->job)->uid, (unsigned)uid, w[0]);
	else if (r == -EBUSY)
		snprintf(why, SCHED_REASON_MAX, "job %s is %s; \"%s\" needs an active job", p->job,
			 sched_job_state_name(sched_cluster_find_job(c, p->job)->state), w[0]);
	else if (r == -ENOENT)
		snprintf(why, SCHED_REASON_MAX, "job %s no longer exists", p->job);
	return r;
}
