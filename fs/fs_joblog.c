/* SPDX-License-Identifier: MIT */
/*
 * Job logs (issue 19 item 3): what every process of a job printed, shipped by the agents
 * that run them and kept on the head, readable as jobs/<job>/log (fs.h says what a reader
 * sees). Each job object (serial) has up to two files in the log directory:
 * "<serial>.log", appended to, and "<serial>.log.1", the previous one: when an append
 * would take the current file past half of cluster.job_log_max_mib, it becomes log.1 (the
 * older log.1 goes) and a new current file begins, as logrotate's copytruncate does to a
 * file that `tail -f` follows. The files go with the job's record (fs_joblogs_sweep()).
 *
 * Per process (jobs/<job>/logs/<process>), each log keeps how many bytes each process
 * has in either file (fs_joblog_proc.c), counted at each append and moved at each
 * rotation; a log restored from disk is counted at the first request on its logs/
 * (fs_joblog_prepare()), not at start: 100,000 jobs' logs are not read to mount. That
 * count reads the files without the log's mu (appends go on), then what was appended
 * meanwhile under it; a rotation meanwhile counts again, the third time under mu.
 *
 * Locks, in this order: each log's count_mu (held by the request that counts it; the
 * others wait), its mu (its writer descriptor and rotation, held over the I/O of one
 * append and of a count's last part, never with ctx->lock), its idx_mu (a leaf, no I/O
 * under it: the counts per process); logs->mu guards the table and the references (a
 * leaf: nothing is taken under it).
 * Sizes are read without a lock (atomics), so that stat() under ctx->lock never waits
 * for a disk.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_internal.h"

/* The longest line a writer may send (its text is cut into pieces before that by the
 * agent, AGENT_LOG_LINE_MAX): what one handle buffers of a partial line. */
#define JOBLOG_WRITE_LINE_MAX (64u * 1024)
/* The most of a log fs_joblog_read_all() gives (HTTP): its newest bytes. */
#define JOBLOG_READ_ALL_MAX (64u << 20)

struct fs_joblog {
	uint64_t serial;
	char name[CONF_NAME_MAX + 1];	/* the job's name ("" while restoring) */
	unsigned refs;			/* the table's and each handle's (logs->mu) */
	bool gone;			/* its record was dropped: files removed (atomic) */
	pthread_mutex_t mu;
	int fd;				/* the current file, for appending, while a writer has
					 * it open; -1 = not open */
	unsigned writers;		/* handles open for writing (mu) */
	unsigned failures;		/* appends failed in a row (atomic): logged 1 in 60 */
	unsigned count_failures;	/* countings per process failed (atomic): logged 1
					 * in 60 */
	bool dir_dirty;			/* a file was made or renamed since the directory's
					 * last fsync (mu) */
	uint64_t rot;			/* rotations so far, this daemon's life (mu) */
	uint64_t cur_bytes;		/* atomic: size of <serial>.log */
	uint64_t old_bytes;		/* atomic: size of <serial>.log.1, 0 = none */
	uint64_t mtime_usec;		/* atomic: the last append (0: none since start) */
	uint64_t rot_usec;		/* atomic: the last rotation: log.1's mtime (0: none) */
	pthread_mutex_t idx_mu;
	pthread_mutex_t count_mu;	/* held by the request that counts a restored log:
					 * the others wait for it rather than read it too */
	bool indexed;			/* atomic: idx counts both files (false: restored,
					 * not counted yet) */
	struct fs_joblog_index idx;	/* bytes per process (idx_mu) */
	struct fs_joblog *next;		/* hash chain; or t->doomed's */
};

struct fs_joblogs {
	pthread_mutex_t mu;
	int dirfd;
	char *dir;
	bool private_dir;		/* made for this daemon (no state store): removed at exit */
	bool sync;			/* fdatasync() before a close returns (a state store) */
	uint64_t segment_bytes;		/* most bytes of one file */
	struct fs_joblog **tab;		/* cap buckets, a power of two */
	size_t cap, count;
	struct fs_joblog *doomed;	/* out of the table, files still there: for
					 * fs_joblogs_reap() (mu) */
};

/* A handle's view of a log (fs_handle.log). */
struct fs_joblog_view {
	struct fs_joblog *log;		/* a reference; NULL for a reader of a log that had
					 * no record yet (taken at its first read after one
					 * was made: atomic) */
	uint64_t serial;		/* the job's */
	int fd;				/* readers: the file read; -1 = none yet */
	bool old;			/* log.1: a snapshot at open */
	uint64_t rot;			/* the rotation whose current file fd is */
	uint64_t len;			/* log.1: its size at open */
	bool per_proc;			/* logs/<process>[.1]: filter's process's lines */
	struct fs_joblog_filter filter;
	bool writer;			/* open for writing */
	bool wrote;			/* writers: appended since the last flush */
};

static size_t slot_of(const struct fs_joblogs *t, uint64_t serial)
{
	return (size_t)((serial * 0x9E3779B97F4A7C15ULL) >> 20) & (t->cap - 1);
}

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static void store(uint64_t *v, uint64_t x)
{
	__atomic_store_n(v, x, __ATOMIC_RELEASE);
}

static void file_name(char *buf, size_t len, uint64_t serial, bool old)
{
	snprintf(buf, len, "%" PRIu64 ".log%s", serial, old ? ".1" : "");
}

static struct fs_joblog *find_locked(const struct fs_joblogs *t, uint64_t serial)
{
	struct fs_joblog *l;

	if (!t->cap)
		return NULL;
	for (l = t->tab[slot_of(t, serial)]; l && l->serial != serial; l = l->next)
		;
	return l;
}

static int grow_locked(struct fs_joblogs *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct fs_joblog **tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		for (struct fs_joblog *l = t->tab[i], *n; l; l = n) {
			size_t s = (size_t)((l->serial * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);

			n = l->next;
			l->next = tab[s];
			tab[s] = l;
		}
	free(t->tab);
	t->tab = tab;
	t->cap = cap;
	return 0;
}

/* The log of @serial, made when @make; a reference for the caller, or NULL. */
static struct fs_joblog *log_get(struct fs_joblogs *t, uint64_t serial, const char *name,
				 bool make)
{
	struct fs_joblog *l;

	pthread_mutex_lock(&t->mu);
	l = find_locked(t, serial);
	if (!l && make && (t->count < t->cap * 2 || grow_locked(t) == 0) &&
	    (l = calloc(1, sizeof(*l)))) {
		size_t s = slot_of(t, serial);

		l->serial = serial;
		snprintf(l->name, sizeof(l->name), "%s", name);
		l->refs = 1; /* the table's */
		l->fd = -1;
		l->indexed = true; /* a new log: nothing to count */
		pthread_mutex_init(&l->mu, NULL);
		pthread_mutex_init(&l->idx_mu, NULL);
		pthread_mutex_init(&l->count_mu, NULL);
		l->next = t->tab[s];
		t->tab[s] = l;
		t->count++;
	}
	if (l)
		l->refs++;
	pthread_mutex_unlock(&t->mu);
	return l;
}

static void log_free(struct fs_joblog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	pthread_mutex_destroy(&l->mu);
	pthread_mutex_destroy(&l->idx_mu);
	pthread_mutex_destroy(&l->count_mu);
	fs_joblog_index_release(&l->idx);
	free(l);
}

static void log_put(struct fs_joblogs *t, struct fs_joblog *l)
{
	bool last;

	if (!l)
		return;
	pthread_mutex_lock(&t->mu);
	last = --l->refs == 0;
	pthread_mutex_unlock(&t->mu);
	if (last)
		log_free(l);
}

static void unlink_files(const struct fs_joblogs *t, uint64_t serial)
{
	char name[48];

	file_name(name, sizeof(name), serial, false);
	unlinkat(t->dirfd, name, 0);
	file_name(name, sizeof(name), serial, true);
	unlinkat(t->dirfd, name, 0);
}

/* Take @l out of the table (logs->mu held); appends to it fail from now on. */
static void log_unlink_locked(struct fs_joblogs *t, struct fs_joblog *l, size_t slot)
{
	struct fs_joblog **pp = &t->tab[slot];

	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
	t->count--;
	__atomic_store_n(&l->gone, true, __ATOMIC_RELEASE);
}

/* ---- the directory ---- */

static int size_of(int dirfd, uint64_t serial, bool old, uint64_t *ret)
{
	char name[48];
	struct stat st;

	file_name(name, sizeof(name), serial, old);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	*ret = (uint64_t)st.st_size;
	return 0;
}

static uint64_t mtime_of(int dirfd, uint64_t serial, bool old)
{
	char name[48];
	struct stat st;

	file_name(name, sizeof(name), serial, old);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return (uint64_t)st.st_mtim.tv_sec * 1000000u + (uint64_t)st.st_mtim.tv_nsec / 1000u;
}

/* "<digits>.log" or "<digits>.log.1" -> the serial; 0 for any other name. */
static uint64_t serial_of_name(const char *name)
{
	uint64_t v = 0;
	const char *p = name;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == name || (strcmp(p, ".log") != 0 && strcmp(p, ".log.1") != 0))
		return 0;
	return v;
}

/*
 * A file that ends inside a line (a crash cut an append short) ends at its last
 * newline instead: the next append would be joined to the cut line, and what the
 * agent did not see appended (its close did not return 0) it sends again. Returns the
 * bytes removed, or -errno.
 */
static int64_t trim_cut_line(const struct fs_joblogs *t, uint64_t serial, bool old)
{
	char name[48], buf[4096];
	struct stat st;
	off_t end, keep = 0;
	int64_t r = 0;
	int fd;

	file_name(name, sizeof(name), serial, old);
	fd = openat(t->dirfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || st.st_size == 0)
		goto out;
	for (end = st.st_size; end > 0 && !keep;) {
		size_t n = end < (off_t)sizeof(buf) ? (size_t)end : sizeof(buf);
		char *nl;

		if (pread(fd, buf, n, end - (off_t)n) != (ssize_t)n) {
			r = -EIO;
			goto out;
		}
		if (end == st.st_size && buf[n - 1] == '\n')
			goto out; /* whole lines */
		nl = memrchr(buf, '\n', n);
		if (nl)
			keep = end - (off_t)n + (nl - buf) + 1;
		end -= (off_t)n;
	}
	if (ftruncate(fd, keep) < 0 || (t->sync && fdatasync(fd) < 0))
		r = -errno;
	else
		r = (int64_t)(st.st_size - keep);
out:
	close(fd);
	return r;
}

/* Index what an earlier daemon left, each log nameless until adopt() names it. */
static void index_logs(struct fs_ctx *ctx, struct fs_joblogs *t)
{
	DIR *d;
	struct dirent *e;
	int fd = dup(t->dirfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		uint64_t serial = serial_of_name(e->d_name);
		struct fs_joblog *l;
		struct stat st;
		char canon[48];

		/* only what this code names: a regular file "<serial>.log[.1]" */
		file_name(canon, sizeof(canon), serial, strstr(e->d_name, ".log.1") != NULL);
		if (serial && (strcmp(canon, e->d_name) != 0 ||
			       fstatat(t->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			       !S_ISREG(st.st_mode)))
			serial = 0;
		if (!serial) {
			if (e->d_name[0] != '.')
				fs_log(ctx, 1, "job logs: %s/%s is not a job log; left alone", t->dir,
				       e->d_name);
			continue;
		}
		l = log_get(t, serial, "", true);
		if (l)
			l->indexed = false; /* counted per process when first asked */
		log_put(t, l);
	}
	closedir(d);
}

/* Keep the logs of the jobs restored, named after them, and remove every other. */
static void adopt(struct fs_ctx *ctx, struct fs_joblogs *t)
{
	struct sched_cluster *c = ctx->cluster;

	for (size_t i = 0; i < c->job_count; i++) {
		struct fs_joblog *l;

		pthread_mutex_lock(&t->mu);
		l = find_locked(t, c->jobs[i]->serial);
		if (l)
			snprintf(l->name, sizeof(l->name), "%s", c->jobs[i]->name);
		pthread_mutex_unlock(&t->mu);
	}
	pthread_mutex_lock(&t->mu);
	for (size_t s = 0; s < t->cap; s++)
		for (struct fs_joblog *l = t->tab[s], *n; l; l = n) {
			uint64_t bytes = 0;

			n = l->next;
			if (!l->name[0]) {
				fs_log(ctx, 2, "job logs: removing the log of serial %" PRIu64
					       ", whose job record is gone", l->serial);
				log_unlink_locked(t, l, s);
				unlink_files(t, l->serial);
				log_free(l);
				continue;
			}
			for (int k = 0; k < 2; k++) {
				int64_t cut = trim_cut_line(t, l->serial, k == 1);

				if (cut)
					fs_log(ctx, 1, "job logs: %s/%" PRIu64 ".log%s %s", t->dir,
					       l->serial, k ? ".1" : "",
					       cut > 0 ? "ended in a line a crash cut short: it is "
							 "removed (its agent sends it again)" :
							 "cannot be checked for a line a crash cut short");
			}
			if (size_of(t->dirfd, l->serial, false, &bytes) == 0)
				l->cur_bytes = bytes;
			l->mtime_usec = mtime_of(t->dirfd, l->serial, false);
			l->rot_usec = mtime_of(t->dirfd, l->serial, true);
			bytes = 0;
			if (size_of(t->dirfd, l->serial, true, &bytes) == 0)
				l->old_bytes = bytes;
		}
	pthread_mutex_unlock(&t->mu);
}

void fs_joblogs_adopt(struct fs_ctx *ctx)
{
	if (ctx->logs && !ctx->logs->private_dir)
		adopt(ctx, ctx->logs);
}

int fs_joblogs_open(struct fs_ctx *ctx, const char *state_dir, char *why, size_t why_len)
{
	struct fs_joblogs *t = calloc(1, sizeof(*t));
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	t->dirfd = -1;
	t->segment_bytes = (uint64_t)ctx->cluster->conf->job_log_max_mib << 19; /* MiB / 2 */
	if (state_dir) {
		t->sync = true;
		snprintf(path, sizeof(path), "%s/logs", state_dir);
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			snprintf(why, why_len, "cannot create the job log directory %s: %s", path,
				 strerror(errno));
			goto fail;
		}
	} else {
		snprintf(path, sizeof(path), "%s/ascendfs-logs.XXXXXX",
			 tmp && tmp[0] == '/' ? tmp : "/tmp");
		if (!mkdtemp(path)) {
			snprintf(why, why_len, "cannot create a job log directory in %s: %s "
				 "(set TMPDIR to a writable directory)",
				 tmp && tmp[0] == '/' ? tmp : "/tmp", strerror(errno));
			goto fail;
		}
		t->private_dir = true;
	}
	t->dir = strdup(path);
	t->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!t->dir || t->dirfd < 0) {
		snprintf(why, why_len, "cannot open the job log directory %s: %s", path,
			 strerror(t->dir ? errno : ENOMEM));
		if (t->private_dir)
			rmdir(path);
		goto fail;
	}
	ctx->logs = t;
	if (state_dir)
		index_logs(ctx, t);
	/* a standby's jobs are a view: it takes in the logs when it takes over */
	if (state_dir && !ctx->viewing)
		adopt(ctx, t);
	return 0;
fail:
	free(t->dir);
	pthread_mutex_destroy(&t->mu);
	free(t);
	return -EIO;
}

void fs_joblogs_free(struct fs_ctx *ctx)
{
	struct fs_joblogs *t = ctx->logs;

	if (!t)
		return;
	for (size_t s = 0; s < t->cap; s++)
		for (struct fs_joblog *l = t->tab[s], *n; l; l = n) {
			n = l->next;
			if (t->private_dir) {
				char name[48];

				file_name(name, sizeof(name), l->serial, false);
				unlinkat(t->dirfd, name, 0);
				file_name(name, sizeof(name), l->serial, true);
				unlinkat(t->dirfd, name, 0);
			}
			/* every handle is gone at exit: the table's is the last reference */
			log_free(l);
		}
	fs_joblogs_reap(ctx);
	if (t->private_dir)
		rmdir(t->dir);
	if (t->dirfd >= 0)
		close(t->dirfd);
	free(t->tab);
	free(t->dir);
	pthread_mutex_destroy(&t->mu);
	free(t);
	ctx->logs = NULL;
}

void fs_joblogs_sweep(struct fs_ctx *ctx)
{
	struct fs_joblogs *t = ctx->logs;

	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	for (size_t s = 0; s < t->cap; s++)
		for (struct fs_joblog *l = t->tab[s], *n; l; l = n) {
			const struct sched_job *j = sched_cluster_find_job(ctx->cluster, l->name);

			n = l->next;
			if (j && j->serial == l->serial)
				continue;
			log_unlink_locked(t, l, s);
			l->next = t->doomed; /* with the table's reference */
			t->doomed = l;
		}
	pthread_mutex_unlock(&t->mu);
}

void fs_joblogs_reap(struct fs_ctx *ctx)
{
	struct fs_joblogs *t = ctx->logs;
	struct fs_joblog *l, *n;

	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	l = t->doomed;
	t->doomed = NULL;
	pthread_mutex_unlock(&t->mu);
	for (; l; l = n) {
		n = l->next;
		/* under its lock: an append that began before it was doomed ends first */
		pthread_mutex_lock(&l->mu);
		unlink_files(t, l->serial);
		pthread_mutex_unlock(&l->mu);
		log_put(t, l);
	}
}

uint64_t fs_joblog_size(struct fs_ctx *ctx, uint64_t serial, bool old, uint64_t *mtime_usec)
{
	struct fs_joblogs *t = ctx->logs;
	struct fs_joblog *l;
	uint64_t n = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->mu);
	l = find_locked(t, serial);
	if (l)
		n = load(old ? &l->old_bytes : &l->cur_bytes);
	if (l && mtime_usec && load(old ? &l->rot_usec : &l->mtime_usec))
		*mtime_usec = load(old ? &l->rot_usec : &l->mtime_usec);
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* ---- per process ---- */

/* What counting one file needs: the index, which file, where the scan is. */
struct count {
	struct fs_joblog_index *x;
	bool old;
	int fd;			/* -1: no such file */
	uint64_t at;		/* counted up to here */
	struct fs_joblog_scan_state st;
};

static int count_line(void *arg, uint32_t proc, const char *line, size_t len)
{
	const struct count *c = arg;

	(void)line;
	return proc == FS_LOG_PROC_NONE ? 0 : fs_joblog_index_add(c->x, proc, len, c->old);
}

/* Count @c's file on from c->at, up to @to. */
static int count_file(struct count *c, uint64_t to, char *buf)
{
	while (c->fd >= 0 && c->at < to) {
		int64_t n = fs_joblog_scan(c->fd, c->at, to, buf, FS_JOBLOG_SCAN_BYTES, &c->st,
					   count_line, c);

		if (n < 0)
			return (int)n;
		if ((uint64_t)n == c->at)
			break; /* shorter than its size said */
		c->at = (uint64_t)n;
	}
	return 0;
}

static int open_file(const struct fs_joblogs *t, uint64_t serial, bool old);

/*
 * Count @l's two files per process into l->idx. The bulk is read without l->mu (an
 * append, or a reader of log, does not wait for a cold disk), then what was appended
 * meanwhile under it; a rotation meanwhile counts again, the last time under l->mu
 * throughout. Returns 0, or -errno with @l left not counted.
 */
static int count_files(struct fs_joblogs *t, struct fs_joblog *l)
{
	char *buf = malloc(FS_JOBLOG_SCAN_BYTES);
	int r = buf ? 0 : -ENOMEM;

	for (int attempt = 0; attempt < 3 && r == 0; attempt++) {
		struct fs_joblog_index x = { 0 };
		struct count c[2] = { { .x = &x, .old = true, .fd = -1 },
				      { .x = &x, .old = false, .fd = -1 } };
		bool last = attempt == 2, done = false;
		uint64_t rot, to[2];

		pthread_mutex_lock(&l->mu);
		if (__atomic_load_n(&l->indexed, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&l->mu);
			break;
		}
		rot = l->rot;
		for (int k = 0; k < 2 && r == 0; k++) {
			to[k] = load(c[k].old ? &l->old_bytes : &l->cur_bytes);
			c[k].fd = open_file(t, l->serial, c[k].old);
			/* none: nothing to count; any other failure: not counted now */
			if (c[k].fd < 0 && errno != ENOENT)
				r = -errno;
		}
		if (!last)
			pthread_mutex_unlock(&l->mu);
		for (int k = 0; k < 2 && r == 0; k++)
			r = count_file(&c[k], to[k], buf);
		if (!last)
			pthread_mutex_lock(&l->mu);
		if (r == 0 && __atomic_load_n(&l->indexed, __ATOMIC_ACQUIRE)) {
			done = true; /* another request counted it meanwhile */
		} else if (r == 0 && l->rot == rot) {
			/* a current file made meanwhile (none was there) is counted whole */
			if (c[1].fd < 0 && (c[1].fd = open_file(t, l->serial, false)) < 0 &&
			    errno != ENOENT)
				r = -errno;
			if (r == 0)
				r = count_file(&c[1], load(&l->cur_bytes), buf);
			if (r == 0) {
				pthread_mutex_lock(&l->idx_mu);
				fs_joblog_index_release(&l->idx);
				l->idx = x;
				x = (struct fs_joblog_index){ 0 };
				__atomic_store_n(&l->indexed, true, __ATOMIC_RELEASE);
				pthread_mutex_unlock(&l->idx_mu);
				done = true;
			}
		}
		pthread_mutex_unlock(&l->mu);
		for (int k = 0; k < 2; k++)
			if (c[k].fd >= 0)
				close(c[k].fd);
		fs_joblog_index_release(&x);
		if (done)
			break;
	}
	free(buf);
	return r;
}

void fs_joblog_prepare(struct fs_ctx *ctx, const struct fs_path *p)
{
	struct fs_joblogs *t = ctx->logs;
	const struct sched_job *j;
	struct fs_joblog *l;
	uint64_t serial = 0;
	int r;

	if (!t || (p->kind != FS_JOB_LOGS_DIR && p->kind != FS_JOB_PROC_LOG &&
		   p->kind != FS_JOB_PROC_LOG_OLD))
		return;
	pthread_mutex_lock(&ctx->lock);
	j = sched_cluster_find_job(ctx->cluster, p->job);
	if (j)
		serial = j->serial;
	pthread_mutex_unlock(&ctx->lock);
	l = serial ? log_get(t, serial, "", false) : NULL;
	if (!l)
		return;
	/* what could not be counted is not listed, and counted again at the next request */
	if (!__atomic_load_n(&l->indexed, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&l->count_mu);
		if ((r = count_files(t, l)) < 0 &&
		    __atomic_fetch_add(&l->count_failures, 1, __ATOMIC_RELAXED) % 60 == 0)
			fs_log(ctx, 1, "job %s: cannot read its log in %s to count it per process: "
			       "%s (logs/ lists nothing until it can)", p->job, t->dir,
			       strerror(-r));
		pthread_mutex_unlock(&l->count_mu);
	}
	log_put(t, l);
}

int fs_joblog_proc_size(struct fs_ctx *ctx, uint64_t serial, uint32_t proc, bool old,
			uint64_t *ret_bytes, uint64_t *mtime_usec)
{
	struct fs_joblogs *t = ctx->logs;
	struct fs_joblog *l = t ? log_get(t, serial, "", false) : NULL;
	const struct fs_joblog_proc_bytes *e;
	int r = -ENOENT;

	if (!l)
		return -ENOENT;
	pthread_mutex_lock(&l->idx_mu);
	e = l->indexed ? fs_joblog_index_find(&l->idx, proc) : NULL;
	if (e && (!old || e->old_bytes)) {
		*ret_bytes = old ? e->old_bytes : e->cur_bytes;
		r = 0;
	}
	pthread_mutex_unlock(&l->idx_mu);
	if (r == 0 && mtime_usec && load(old ? &l->rot_usec : &l->mtime_usec))
		*mtime_usec = load(old ? &l->rot_usec : &l->mtime_usec);
	log_put(t, l);
	return r;
}

int fs_joblog_proc_list(struct fs_ctx *ctx, uint64_t serial,
			int (*fill)(void *data, const char *name), void *data)
{
	struct fs_joblogs *t = ctx->logs;
	struct fs_joblog *l = t ? log_get(t, serial, "", false) : NULL;
	int r = 0;

	if (!l)
		return 0;
	pthread_mutex_lock(&l->idx_mu);
	for (size_t i = 0; l->indexed && i < l->idx.count && r >= 0; i++) {
		char name[24];

		r = fs_joblog_proc_name(l->idx.v[i].proc, name, sizeof(name) - 2);
		if (r == 0)
			r = fill(data, name);
		if (r >= 0 && l->idx.v[i].old_bytes) {
			strcat(name, ".1");
			r = fill(data, name);
		}
	}
	pthread_mutex_unlock(&l->idx_mu);
	log_put(t, l);
	return r < 0 ? r : 0;
}

/* ---- reading ---- */

static int open_file(const struct fs_joblogs *t, uint64_t serial, bool old)
{
	char name[48];

	file_name(name, sizeof(name), serial, old);
	return openat(t->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

int fs_joblog_open(struct fs_ctx *ctx, struct fs_handle *h, uint64_t serial, bool writer)
{
	struct fs_joblogs *t = ctx->logs;
	struct fs_joblog_view *v;

	if (!t)
		return -ENOENT;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->fd = -1;
	v->old = h->path.kind == FS_JOB_LOG_OLD || h->path.kind == FS_JOB_PROC_LOG_OLD;
	v->per_proc = h->path.kind == FS_JOB_PROC_LOG || h->path.kind == FS_JOB_PROC_LOG_OLD;
	v->filter.proc = h->path.proc;
	v->writer = writer;
	v->serial = serial;
	/* a reader makes no record: reading every job's log (find | xargs cat) would keep
	 * one for each of 10,000 jobs that never wrote a line; it reads nothing until a
	 * writer made one (fs_joblog_read() takes it then) */
	v->log = log_get(t, serial, h->path.job, writer);
	if (!v->log && (writer || v->old)) {
		bool old = v->old;

		free(v);
		return old ? -ENOENT : -ENOMEM;
	}
	if (!v->log) {
		h->log = v;
		return 0;
	}
	if (writer) {
		pthread_mutex_lock(&v->log->mu);
		v->log->writers++;
		pthread_mutex_unlock(&v->log->mu);
	} else {
		struct stat st;

		pthread_mutex_lock(&v->log->mu);
		v->rot = v->log->rot;
		v->fd = open_file(t, serial, v->old);
		pthread_mutex_unlock(&v->log->mu);
		if (v->old && (v->fd < 0 || fstat(v->fd, &st) < 0)) {
			fs_joblog_close(ctx, h, v);
			return -ENOENT;
		}
		if (v->old)
			v->len = (uint64_t)st.st_size;
	}
	h->log = v;
	return 0;
}

int fs_joblog_read(struct fs_ctx *ctx, struct fs_handle *h, char *buf, size_t size, off_t off)
{
	struct fs_joblog_view *v = h->log;
	struct fs_joblog *l = __atomic_load_n(&v->log, __ATOMIC_ACQUIRE);
	uint64_t avail;
	ssize_t n;

	if (!l) {
		/* opened before the job's first line: is there a record now? (the first
		 * read to find one keeps it for the view; the others put theirs back) */
		struct fs_joblog *none = NULL;

		l = log_get(ctx->logs, v->serial, "", false);
		if (!l)
			return 0;
		if (!__atomic_compare_exchange_n(&v->log, &none, l, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			log_put(ctx->logs, l);
			l = none;
		}
	}
	if (v->old) {
		avail = v->len;
	} else {
		/* the current file, whichever it is now: after a rotation an open file reads
		 * the new one, as an open file of a file that logrotate's copytruncate
		 * emptied reads what was written since (a per-process file: its lines) */
		pthread_mutex_lock(&l->mu);
		if (v->rot != l->rot || (v->fd < 0 && load(&l->cur_bytes))) {
			if (v->fd >= 0)
				close(v->fd);
			v->fd = open_file(ctx->logs, l->serial, false);
			v->rot = l->rot;
			fs_joblog_filter_reset(&v->filter);
		}
		avail = load(&l->cur_bytes);
		pthread_mutex_unlock(&l->mu);
	}
	if (v->fd < 0)
		return 0;
	if (v->per_proc)
		return fs_joblog_filter_read(&v->filter, v->fd, avail, buf, size, (uint64_t)off);
	if ((uint64_t)off >= avail)
		return 0;
	if (size > avail - (uint64_t)off)
		size = (size_t)(avail - (uint64_t)off);
	n = pread(v->fd, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

/* Keep only @proc's lines of the @len bytes at @buf (whole lines); returns what is left. */
static size_t keep_proc(char *buf, size_t len, uint32_t proc)
{
	size_t in = 0, out = 0;

	while (in < len) {
		char *nl = memchr(buf + in, '\n', len - in);
		size_t end = nl ? (size_t)(nl - buf) + 1 : len;
		uint32_t p;

		if (fs_joblog_line_proc(buf + in, end - in, &p) == 1 && p == proc) {
			memmove(buf + out, buf + in, end - in);
			out += end - in;
		}
		in = end;
	}
	return out;
}

int fs_joblog_read_all(struct fs_ctx *ctx, uint64_t serial, bool old, uint32_t proc,
		       char **ret, size_t *ret_len)
{
	struct fs_joblogs *t = ctx->logs;
	struct fs_joblog *l = t ? log_get(t, serial, "", false) : NULL;
	uint64_t want = 0;
	char *buf;
	size_t got = 0;
	int fd = -1;

	uint64_t from = 0;

	if (l) {
		pthread_mutex_lock(&l->mu);
		want = load(old ? &l->old_bytes : &l->cur_bytes);
		fd = open_file(t, serial, old);
		pthread_mutex_unlock(&l->mu);
		log_put(t, l);
	}
	if (fd < 0)
		want = 0;
	if (want > JOBLOG_READ_ALL_MAX) { /* the newest, from a line's start */
		from = want - JOBLOG_READ_ALL_MAX;
		want = JOBLOG_READ_ALL_MAX;
	}
	buf = malloc((size_t)want + 1);
	if (!buf) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	while (got < want) {
		ssize_t n = pread(fd, buf + got, (size_t)want - got, (off_t)(from + got));

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (from && got) {
		char *nl = memchr(buf, '\n', got);
		size_t skip = nl ? (size_t)(nl - buf) + 1 : got;

		memmove(buf, buf + skip, got - skip);
		got -= skip;
	}
	if (fd >= 0)
		close(fd);
	if (proc != FS_LOG_PROC_NONE)
		got = keep_proc(buf, got, proc);
	buf[got] = '\0';
	*ret = buf;
	*ret_len = got;
	return 0;
}

/* ---- writing ---- */

/*
 * One line of an agent: "<generation> <process> <server> <text>" with process
 * "rank-<N>", "node" (a server's msrun) or "scheduler" (MindSpore's scheduler), as the
 * agent names its processes' local logs. Appends "[g<generation> <process> <server>]
 * <text>\n" to @out, its process in *@ret_proc. Returns 0 or -EINVAL with @why.
 */
static int format_line(struct fs_ctx *ctx, const struct sched_job *j, const char *line,
		       size_t len, char **out, size_t *out_len, size_t *out_cap,
		       uint32_t *ret_proc, char *why, size_t why_len)
{
	const char *tok[3], *end = line + len, *p = line;
	size_t tlen[3];
	unsigned long gen;
	char server[CONF_NAME_MAX + 1], *e;
	size_t need;

	for (int i = 0; i < 3; i++) {
		tok[i] = p;
		while (p < end && *p != ' ')
			p++;
		tlen[i] = (size_t)(p - tok[i]);
		if (!tlen[i] || (i < 2 && p == end)) {
			snprintf(why, why_len, "\"%.*s\": a line is \"<generation> <process> "
				 "<server> <text>\"", (int)(len < 80 ? len : 80), line);
			return -EINVAL;
		}
		if (p < end)
			p++;
	}
	errno = 0;
	gen = tok[0][0] >= '1' && tok[0][0] <= '9' ? strtoul(tok[0], &e, 10) : 0;
	if (!gen || e != tok[0] + tlen[0] || errno || gen > j->generation) {
		snprintf(why, why_len, "generation \"%.*s\": job %s has generations 1 to %u",
			 (int)(tlen[0] < 20 ? tlen[0] : 20), tok[0], j->name, j->generation);
		return -EINVAL;
	}
	/* no job has more ranks than the cluster has NPUs: what logs/ lists is bounded */
	if (fs_joblog_proc_parse(tok[1], tlen[1], ret_proc) < 0 ||
	    (*ret_proc >= FS_LOG_PROC_RANK(0) &&
	     *ret_proc - FS_LOG_PROC_RANK(0) >= ctx->cluster->npus_total)) {
		snprintf(why, why_len, "process \"%.*s\": rank-<N> (N below the cluster's %u "
			 "NPUs), node or scheduler", (int)(tlen[1] < 20 ? tlen[1] : 20), tok[1],
			 ctx->cluster->npus_total);
		return -EINVAL;
	}
	if (tlen[2] < sizeof(server) && !memchr(tok[2], '\0', tlen[2])) {
		memcpy(server, tok[2], tlen[2]);
		server[tlen[2]] = '\0';
	}
	if (tlen[2] >= sizeof(server) || memchr(tok[2], '\0', tlen[2]) ||
	    sched_cluster_find_server(ctx->cluster, server) < 0) {
		snprintf(why, why_len, "server \"%.*s\" is not in the inventory",
			 (int)(tlen[2] < sizeof(server) ? tlen[2] : CONF_NAME_MAX), tok[2]);
		return -EINVAL;
	}
	/* "[g" gen " " process " " server "] " text "\n" */
	need = *out_len + 2 + tlen[0] + 1 + tlen[1] + 1 + tlen[2] + 2 + (size_t)(end - p) + 1;
	if (need > *out_cap) {
		size_t cap = *out_cap ? *out_cap : 4096;
		char *n;

		while (cap < need)
			cap *= 2;
		n = realloc(*out, cap);
		if (!n)
			return -ENOMEM;
		*out = n;
		*out_cap = cap;
	}
	*out_len += (size_t)sprintf(*out + *out_len, "[g%.*s %.*s %.*s] ", (int)tlen[0], tok[0],
				    (int)tlen[1], tok[1], (int)tlen[2], tok[2]);
	/* a NUL would make the log a binary file to grep and less */
	for (const char *q = p; q < end; q++)
		(*out)[(*out_len)++] = *q ? *q : '?';
	(*out)[(*out_len)++] = '\n';
	return 0;
}

/* Begin a new current file (l->mu held): the current one becomes log.1. */
static int rotate_locked(struct fs_joblogs *t, struct fs_joblog *l)
{
	char cur[48], old[48];

	file_name(cur, sizeof(cur), l->serial, false);
	file_name(old, sizeof(old), l->serial, true);
	if (t->sync && fdatasync(l->fd) < 0)
		return -errno;
	if (renameat(t->dirfd, cur, t->dirfd, old) < 0)
		return -errno;
	close(l->fd);
	l->fd = -1;
	l->dir_dirty = true;
	store(&l->old_bytes, load(&l->cur_bytes));
	store(&l->cur_bytes, 0);
	store(&l->rot_usec, fs_now_usec());
	pthread_mutex_lock(&l->idx_mu);
	fs_joblog_index_rotate(&l->idx);
	pthread_mutex_unlock(&l->idx_mu);
	l->rot++;
	return 0;
}

/* Append @len bytes of whole lines to @l's current file, rotating first when due;
 * they are @count processes' lines, @procs[i] of them @bytes[i]. */
static int append(struct fs_joblogs *t, struct fs_joblog *l, const char *data, size_t len,
		  const uint32_t *procs, const uint64_t *bytes, size_t count)
{
	int r = 0;

	pthread_mutex_lock(&l->mu);
	if (__atomic_load_n(&l->gone, __ATOMIC_ACQUIRE)) {
		r = -ENOENT;
		goto out;
	}
	if (load(&l->cur_bytes) && load(&l->cur_bytes) + len > t->segment_bytes) {
		if (l->fd < 0) {
			char name[48];

			file_name(name, sizeof(name), l->serial, false);
			l->fd = openat(t->dirfd, name, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
			if (l->fd < 0) {
				r = -errno;
				goto out;
			}
		}
		r = rotate_locked(t, l);
		if (r < 0)
			goto out;
	}
	if (l->fd < 0) {
		char name[48];

		file_name(name, sizeof(name), l->serial, false);
		l->fd = openat(t->dirfd, name, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
		if (l->fd < 0 && errno == ENOENT) {
			l->fd = openat(t->dirfd, name,
				       O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
			l->dir_dirty = true;
		}
		if (l->fd < 0) {
			r = -errno;
			goto out;
		}
	}
	for (size_t done = 0; done < len;) {
		ssize_t n = write(l->fd, data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			/* no half line stays to be joined with the next append's first */
			if (done && ftruncate(l->fd, (off_t)load(&l->cur_bytes)) < 0)
				r = -EIO;
			break;
		}
		done += (size_t)n;
	}
	if (r == 0) {
		store(&l->cur_bytes, load(&l->cur_bytes) + (uint64_t)len);
		pthread_mutex_lock(&l->idx_mu);
		/* a log not counted yet is counted from its files, these lines with them */
		for (size_t i = 0; l->indexed && i < count; i++)
			if (fs_joblog_index_add(&l->idx, procs[i], bytes[i], false) < 0) {
				/* counted again from the files at the next request */
				__atomic_store_n(&l->indexed, false, __ATOMIC_RELEASE);
				fs_joblog_index_release(&l->idx);
			}
		pthread_mutex_unlock(&l->idx_mu);
	}
	store(&l->mtime_usec, fs_now_usec());
	/* a file made or renamed is durable once its directory is */
	if (r == 0 && l->dir_dirty && t->sync) {
		if (fsync(t->dirfd) < 0)
			r = -errno;
		else
			l->dir_dirty = false;
	}
out:
	pthread_mutex_unlock(&l->mu);
	return r;
}

/* The bytes of one write per process: a few processes' lines, each usually in a run. */
struct proc_counts {
	uint32_t *procs;
	uint64_t *bytes;
	size_t count, cap;
};

static int proc_counts_add(struct proc_counts *pc, uint32_t proc, uint64_t n)
{
	size_t i = pc->count;

	if (i && pc->procs[i - 1] == proc) {
		pc->bytes[i - 1] += n;
		return 0;
	}
	for (i = 0; i < pc->count; i++)
		if (pc->procs[i] == proc) {
			pc->bytes[i] += n;
			return 0;
		}
	if (pc->count == pc->cap) {
		size_t cap = pc->cap ? pc->cap * 2 : 8;
		uint32_t *procs = realloc(pc->procs, cap * sizeof(*procs));
		uint64_t *bytes;

		if (!procs)
			return -ENOMEM;
		pc->procs = procs;
		bytes = realloc(pc->bytes, cap * sizeof(*bytes));
		if (!bytes)
			return -ENOMEM;
		pc->bytes = bytes;
		pc->cap = cap;
	}
	pc->procs[pc->count] = proc;
	pc->bytes[pc->count++] = n;
	return 0;
}

/* Format and append the whole lines of h->buf; keep a partial last one unless @all. */
static int write_lines(struct fs_ctx *ctx, struct fs_handle *h, bool all)
{
	struct fs_joblog_view *v = h->log;
	char *out = NULL, why[SCHED_REASON_MAX - 64];
	size_t out_len = 0, out_cap = 0, done = 0;
	struct proc_counts pc = { 0 };
	const struct sched_job *j;
	int r = 0;

	if (!h->len)
		return 0;
	pthread_mutex_lock(&ctx->lock);
	j = sched_cluster_find_job(ctx->cluster, h->path.job);
	if (!j || j->serial != v->log->serial)
		r = -ENOENT;
	while (r == 0 && done < h->len) {
		char *nl = memchr(h->buf + done, '\n', h->len - done);
		size_t end = nl ? (size_t)(nl - h->buf) : h->len;

		if (!nl && !all)
			break;
		if (end - done > JOBLOG_WRITE_LINE_MAX) {
			r = -EFBIG; /* no agent sends a line that long (AGENT_SHIP_LINE_MAX) */
			break;
		}
		size_t before = out_len;
		uint32_t proc;

		r = format_line(ctx, j, h->buf + done, end - done, &out, &out_len, &out_cap, &proc,
				why, sizeof(why));
		if (r == 0)
			r = proc_counts_add(&pc, proc, out_len - before);
		done = nl ? end + 1 : end;
	}
	if (r == -EINVAL) {
		char reason[SCHED_REASON_MAX];

		snprintf(reason, sizeof(reason), "log line by uid %u refused: %s",
			 (unsigned)h->uid, why);
		fs_log(ctx, 1, "job %s: %s", h->path.job, reason);
		sched_job_note_refusal(ctx->cluster, h->path.job, reason, fs_now_usec());
		fs_changed(ctx);
		done = h->len; /* as a ctl file's: the first refused line drops the rest */
	}
	pthread_mutex_unlock(&ctx->lock);
	/* the lines before a refused one are kept */
	if ((r == 0 || r == -EINVAL) && out_len) {
		int a = append(ctx->logs, v->log, out, out_len, pc.procs, pc.bytes, pc.count);

		v->wrote = true;
		if (a < 0 && a != -ENOENT &&
		    __atomic_fetch_add(&v->log->failures, 1, __ATOMIC_RELAXED) % 60 == 0)
			fs_log(ctx, 1, "job %s: cannot append to its log in %s: %s (its lines stay "
			       "with the agents, which send them again)", h->path.job,
			       ctx->logs->dir, strerror(-a));
		else if (a == 0)
			__atomic_store_n(&v->log->failures, 0, __ATOMIC_RELAXED);
		if (a < 0)
			r = a;
	}
	free(out);
	free(pc.procs);
	free(pc.bytes);
	/* after a failure nothing of this write is kept to be sent again: its writer (an
	 * agent) sends the lines again from its own offsets */
	if (r < 0 && r != -EINVAL)
		done = h->len;
	memmove(h->buf, h->buf + done, h->len - done);
	h->len -= done;
	h->buf[h->len] = '\0';
	return r;
}

int fs_joblog_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size)
{
	int r;

	if (!h->log->writer)
		return -EBADF;
	/* what is kept between writes is a partial line, at most JOBLOG_WRITE_LINE_MAX */
	r = fs_handle_buffer_put(h, data, size, (off_t)h->len, h->len + size);
	if (r < 0)
		return r;
	r = write_lines(ctx, h, false);
	if (r == 0 && h->len > JOBLOG_WRITE_LINE_MAX)
		r = -EFBIG;
	if (r == -EFBIG)
		h->len = 0; /* the rest of that line is no line either */
	return r < 0 ? r : (int)size;
}

int fs_joblog_flush(struct fs_ctx *ctx, struct fs_handle *h)
{
	struct fs_joblog_view *v = h->log;
	int r;

	if (!v->writer)
		return 0;
	r = write_lines(ctx, h, true);

	if (r == 0 && v->wrote && ctx->logs->sync) {
		pthread_mutex_lock(&v->log->mu);
		if (v->log->fd >= 0 && fdatasync(v->log->fd) < 0)
			r = -errno;
		pthread_mutex_unlock(&v->log->mu);
		if (r == 0)
			v->wrote = false;
	}
	return r;
}

void fs_joblog_close(struct fs_ctx *ctx, struct fs_handle *h, struct fs_joblog_view *v)
{
	if (!v)
		return;
	if (v->fd >= 0)
		close(v->fd);
	if (v->writer) {
		/* no descriptor is kept for a log nobody writes: 10,000 jobs are not
		 * 10,000 open files */
		pthread_mutex_lock(&v->log->mu);
		if (--v->log->writers == 0 && v->log->fd >= 0) {
			close(v->log->fd);
			v->log->fd = -1;
		}
		pthread_mutex_unlock(&v->log->mu);
	}
	log_put(ctx->logs, v->log);
	free(v);
	if (h && h->log == v)
		h->log = NULL;
}
