/* SPDX-License-Identifier: MIT */
/*
 * Background threads: heartbeat checks, the scheduler's clock (sched_tick) and inotify
 * announcements.
 *
 * The kernel raises inotify events only for operations that pass through the mount, so
 * a change the daemon makes itself (a job placed, a fault moving a job) would be silent.
 * The notifier thread therefore has the mount operated on from outside any FUSE handler
 * and without holding ctx->lock (either would deadlock): truncate() to the current size
 * raises IN_MODIFY. The handlers recognise those requests by the caller's pid and do
 * nothing. Each round announces each changed file once, and only the jobs that changed
 * (the notifier's dirty list, see sched_job_touch()), and only the files someone could
 * watch (fs_inode_watchable(): a job nobody looked at costs its mkdir alone, 3 requests
 * where its files' announcements were 42); the helper opens each file O_PATH
 * through its parent directory, kept open for the round, and truncates it through
 * /proc/self/fd, so a file costs a lookup of its name, a getattr and the setattr.
 *
 * The helper works through a detached copy of the mount (open_tree(OPEN_TREE_CLONE), as
 * root), not through the mount point: inotify watches are on inodes, which the copy
 * shares, and its operations then never make a `fusermount3 -u` of the mount point fail
 * with EBUSY (after a burst of changes they did, every time). The copy keeps the file
 * system alive after that unmount, so the mount watch (fs_mountwatch.c) ends the helper
 * as soon as the mount is gone from the daemon's namespace: fs_notify_helper_release().
 * Without the privilege for the copy the helper uses the mount point's paths.
 *
 * The operations run in a helper process (the daemon's own binary, exec'd with
 * --notify-helper), never in a thread of the daemon: a daemon thread blocked in a request
 * to its own mount when the daemon is killed (SIGKILL) keeps the process, and with it
 * /dev/fuse, alive, so the request is never answered nor aborted and the mount hangs
 * until someone aborts the connection by hand. A separate process holds no /dev/fuse
 * descriptor (it is exec'd, they are close-on-exec): when the daemon dies the kernel
 * aborts the connection, the helper's request fails, and it exits at the end of its
 * pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

static pthread_t heartbeat_thread, notifier_thread, scanner_thread;
static bool threads_running, notifier_running;
static int helper_fd = -1;	/* write end of the helper's stdin */
static int helper_stop_fd = -1;	/* write end of its stop pipe: closed, it stops */
static pid_t helper_pid;
static bool helper_released;	/* ended by fs_notify_helper_release() (atomic) */
static bool helper_broken;	/* a write to it failed: the notifier writes no more */

extern char **environ;

/*
 * The parent directory of the last file poked, open (O_PATH) until a round ends: the
 * files of one job follow each other, and each then costs the lookup of its own name
 * only, not of every component of its path (a job directory's name is not kept while
 * its announcement is pending: fs_notify_job_dir_settled()).
 */
struct helper_parent {
	int fd;
	char path[4096];
};

static void helper_parent_close(struct helper_parent *hp)
{
	if (hp->fd >= 0)
		close(hp->fd);
	hp->fd = -1;
}

/* @path (relative to @base) opened O_PATH (no inotify event, no permission asked), or -1. */
static int helper_open(struct helper_parent *hp, int base, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (!slash || len == 0 || len >= sizeof(hp->path))
		return openat(base, path, O_PATH | O_CLOEXEC);
	if (hp->fd < 0 || strlen(hp->path) != len || memcmp(hp->path, path, len) != 0) {
		helper_parent_close(hp);
		memcpy(hp->path, path, len);
		hp->path[len] = '\0';
		hp->fd = openat(base, hp->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (hp->fd < 0)
			return -1;
	}
	return openat(hp->fd, slash + 1, O_PATH | O_CLOEXEC);
}

/*
 * A detached copy of the mount at @mnt, whose device is @dev, as an O_PATH descriptor of
 * its root; -1 with errno set when it cannot be made (no CAP_SYS_ADMIN, an older kernel).
 */
static int helper_clone(const char *mnt, dev_t dev)
{
	struct stat st;
	int fd;

#ifdef OPEN_TREE_CLONE
	fd = open_tree(AT_FDCWD, mnt, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != dev)) {
		close(fd);
		fd = -1;
		errno = ESTALE;
	}
#else
	(void)mnt, (void)dev, (void)st;
	fd = -1;
	errno = ENOSYS;
#endif
	return fd;
}

/*
 * Is the file system at @mnt still the daemon's, device @dev? Not when it was unmounted
 * before the helper came to look (a mount and at once an unmount), or another file
 * system was mounted over it: then there is nothing to announce, and a poke through the
 * mount point would change someone else's file.
 */
static bool helper_mount_is_ours(const char *mnt, dev_t dev)
{
	struct stat st;

	return stat(mnt, &st) == 0 && st.st_dev == dev;
}

/*
 * Has the daemon closed the stop pipe @fd (-1: none)? Asked between lines: a request
 * under way is answered, never interrupted (see fs_notify_helper_release()).
 */
static bool helper_told_to_stop(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN));
}

int fs_notify_helper_main(const char *mnt, const char *devname, const char *stopfd)
{
	char *end = NULL;
	long stopnum = stopfd ? strtol(stopfd, &end, 10) : -1;
	/* the daemon passes 3 (one past stderr); stdio or a number out of range is none */
	int stop = stopfd && end != stopfd && !*end && stopnum > 2 && stopnum < 1024 ?
			   (int)stopnum : -1;
	struct helper_parent hp = { .fd = -1 };
	size_t mlen = mnt ? strlen(mnt) : 0;
	unsigned ma = 0, mi = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int root = -1;

	/* with the daemon gone there is nothing to announce */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		return 0;
	/* the device is 0:0 when the daemon could not find its mount in mountinfo: the
	 * mount point's paths then, unchecked */
	if (mnt && devname && sscanf(devname, "%u:%u", &ma, &mi) == 2 && (ma || mi)) {
		root = helper_clone(mnt, makedev(ma, mi));
		if (root < 0 && errno == ESTALE)
			return 0;
		if (root < 0) {
			int e = errno;

			if (!helper_mount_is_ours(mnt, makedev(ma, mi)))
				return 0;
			/* the daemon's log format (the journal's priority too): same stderr */
			fs_log(NULL, 1, "notify helper: no detached copy of %s (%s): announcements "
					"go through the mount point, and right after a change "
					"fusermount3 -u may say \"Device or resource busy\"",
			       mnt, strerror(e));
		}
	}
	while (!helper_told_to_stop(stop) && (n = getline(&line, &cap, stdin)) > 0) {
		int base = AT_FDCWD;
		const char *path = line;
		char self[64];
		struct stat st;
		int fd;

		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		/* the end of a round: what was open may be replaced before the next one, and
		 * an open directory keeps an unmount from succeeding */
		if (line[0] == '\0') {
			helper_parent_close(&hp);
			continue;
		}
		if (line[0] == '+' || line[0] == '-')
			path = line + 1;
		/* the same file in the copy: the path below the mount point */
		if (root >= 0 && strncmp(path, mnt, mlen) == 0 && path[mlen] == '/') {
			path += mlen + 1;
			base = root;
		}
		/* a job directory to announce: the daemon answers these as if it were new, or
		 * still there (fs_notify_job_dir) */
		if (line[0] == '+') {
			mkdirat(base, path, 0755);
			continue;
		}
		if (line[0] == '-') {
			unlinkat(base, path, AT_REMOVEDIR);
			continue;
		}
		/* a file that vanished meanwhile is simply skipped */
		fd = helper_open(&hp, base, path);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		/* the open file itself, not its path looked up again (a /proc without it:
		 * the path) */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		if (S_ISDIR(st.st_mode)) {
			if (utimensat(AT_FDCWD, self, NULL, 0) < 0 && errno == ENOENT)
				utimensat(base, path, NULL, 0);
		} else if (truncate(self, st.st_size) < 0 && errno == ENOENT && base == AT_FDCWD) {
			truncate(path, st.st_size);
		}
		close(fd);
	}
	helper_parent_close(&hp);
	if (root >= 0)
		close(root);
	free(line);
	return 0;
}

/*
 * Start the helper: the daemon's binary with --notify-helper, the pipe as its stdin and
 * the read end of its stop pipe as descriptor HELPER_STOP_FD.
 */
#define HELPER_STOP_FD 3
static int helper_start(struct fs_ctx *ctx)
{
	posix_spawn_file_actions_t fa;
	char exe[4096], dev[32], stopfd[] = { '0' + HELPER_STOP_FD, '\0' };
	char *argv[] = { exe, "--notify-helper", ctx->mount_path, dev, stopfd, NULL };
	int fds[2], stop[2], r;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (len <= 0)
		return -errno;
	exe[len] = '\0';
	snprintf(dev, sizeof(dev), "%u:%u", major(ctx->mount_dev), minor(ctx->mount_dev));
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(stop, O_CLOEXEC) < 0) {
		r = -errno;
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	/* a short pipe: under a burst of changes the notifier then waits and coalesces
	 * instead of queueing thousands of pokes (without the detached copy each one keeps
	 * the mount point busy: an unmount meanwhile fails with EBUSY) */
	fcntl(fds[1], F_SETPIPE_SZ, 4096);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, stop[0], HELPER_STOP_FD);
	r = posix_spawn(&helper_pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[0]);
	close(stop[0]);
	if (r) {
		close(fds[1]);
		close(stop[1]);
		return -r;
	}
	helper_fd = fds[1];
	helper_stop_fd = stop[1];
	pthread_mutex_lock(&ctx->lock);
	__atomic_store_n(&ctx->notifier_tid, helper_pid, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/* Close the write end of the helper's stop pipe, once, from any thread: it stops. */
static void helper_stop_pipe_close(void)
{
	int fd = __atomic_exchange_n(&helper_stop_fd, -1, __ATOMIC_SEQ_CST);

	if (fd >= 0)
		close(fd);
}

void fs_notify_helper_release(struct fs_ctx *ctx)
{
	int null;

	if (helper_pid <= 0 || __atomic_exchange_n(&helper_released, true, __ATOMIC_SEQ_CST))
		return;
	/*
	 * The end of its stop pipe and of its input, not a signal: killed inside a request
	 * to the mount, the kernel sends libfuse an INTERRUPT of it, and one that comes
	 * after the answer libfuse keeps until the next request, none after the last
	 * (LeakSanitizer's 128 bytes at exit). The helper looks at its stop pipe between
	 * lines: it ends once the request under way is answered, however many lines its
	 * pipe still holds (a busy daemon answered those late: an unmount waited for them).
	 * Its input's write end becomes /dev/null in one step (dup3()), which a write of
	 * the notifier under way does not see.
	 */
	helper_stop_pipe_close();
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0 && dup3(null, helper_fd, O_CLOEXEC) >= 0) {
		fs_log(ctx, 3, "notify helper %d told to end: the mount is gone", (int)helper_pid);
	} else {
		/* the helper we started, by its id; reaped by helper_stop() */
		kill(helper_pid, SIGKILL);
		fs_log(ctx, 3, "notify helper %d killed: the mount is gone, and /dev/null "
			       "cannot end its input (%s)", (int)helper_pid, strerror(errno));
	}
	if (null >= 0)
		close(null);
}

void fs_notify_helper_kill(struct fs_ctx *ctx, unsigned waited_msec)
{
	pid_t pid = __atomic_load_n(&helper_pid, __ATOMIC_SEQ_CST);

	if (pid <= 0 || !fs_notify_helper_running())
		return;
	/* the helper we started, by its id; reaped by helper_stop() */
	kill(pid, SIGKILL);
	fs_log(ctx, 1, "notify helper %d had not ended %u ms after the mount went (its requests "
		       "unanswered): killed", (int)pid, waited_msec);
}

bool fs_notify_helper_running(void)
{
	siginfo_t si = { 0 };
	pid_t pid = __atomic_load_n(&helper_pid, __ATOMIC_SEQ_CST);

	/* WNOWAIT: an ended helper stays a zombie for helper_stop() to reap */
	if (pid <= 0 || waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return false;
	return si.si_pid == 0;
}

/* Close the helper's input and reap it: also one told to end, or that died. One still
 * there HELPER_END_MSEC later waits for an answer nobody will give (a mount whose
 * connection outlived the loop that answered it): killed, by its id. */
#define HELPER_END_MSEC 2000
static void helper_stop(struct fs_ctx *ctx)
{
	pid_t r = 0;
	int status;

	if (helper_fd >= 0)
		close(helper_fd); /* the helper ends at the end of its input */
	helper_fd = -1;
	helper_stop_pipe_close(); /* or, after the request under way, at this */
	for (int i = 0; helper_pid > 0 && i < HELPER_END_MSEC / 10; i++) {
		r = waitpid(helper_pid, &status, WNOHANG);
		if (r != 0 && !(r < 0 && errno == EINTR))
			break;
		usleep(10000);
	}
	if (helper_pid > 0 && r == 0) {
		fs_log(ctx, 1, "notify helper %d did not end within %d ms of the end of its "
			       "input (a request nobody answers); killing it", (int)helper_pid,
		       HELPER_END_MSEC);
		kill(helper_pid, SIGKILL);
		r = waitpid(helper_pid, &status, 0);
	}
	if (helper_pid > 0 && r == helper_pid) {
		if (WIFEXITED(status))
			fs_log(ctx, 3, "notify helper %d exited %d at the end of its input or its "
				       "stop pipe",
			       (int)helper_pid, WEXITSTATUS(status));
		else if (WIFSIGNALED(status))
			fs_log(ctx, 3, "notify helper %d ended by signal %d", (int)helper_pid,
			       WTERMSIG(status));
	}
	/* reaped, its pid may be another process's: whose requests are no helper's */
	__atomic_store_n(&ctx->notifier_tid, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&helper_pid, 0, __ATOMIC_SEQ_CST);
}

void fs_changed(struct fs_ctx *ctx)
{
	atomic_fetch_add(&ctx->changes, 1);
	pthread_cond_broadcast(&ctx->notify_cv);
	/* a generation began that must see its checkpoint directory first */
	if (ctx->cluster->resume_scan_wanted)
		pthread_cond_signal(&ctx->scan_cv);
	fs_store_note_change(ctx);
}


struct ckpt_scan {
	char name[CONF_NAME_MAX + 1];
	char *dir;
	unsigned generation;
	bool for_resume;	/* a new generation waits for this scan */
};

/*
 * Look for newer checkpoints (ctx->lock held on entry and exit; dropped while reading
 * the disk), so ASCEND_RESUME_CHECKPOINT names the newest one. Generations waiting for
 * their scan (resume_scan_pending) come first; with @resume_only they are all it reads.
 */
static void scan_checkpoints(struct fs_ctx *ctx, bool resume_only)
{
	struct sched_cluster *c = ctx->cluster;
	struct ckpt_scan *list;
	size_t n = 0;

	c->resume_scan_wanted = false;
	list = calloc(c->job_count ? c->job_count : 1, sizeof(*list));
	if (!list)
		return;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < c->job_count; i++) {
			const struct sched_job *j = c->jobs[i];

			if (!j->spec || !j->spec->checkpoint_dir || !j->generation ||
			    sched_job_state_is_terminal(j->state) ||
			    j->resume_scan_pending != (pass == 0) || (resume_only && pass == 1))
				continue;
			snprintf(list[n].name, sizeof(list[n].name), "%s", j->name);
			list[n].dir = strdup(j->spec->checkpoint_dir);
			list[n].generation = j->generation;
			list[n].for_resume = j->resume_scan_pending;
			if (list[n].dir)
				n++;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		uint64_t step = 0, mtime = 0;
		/* the file's time comes from the scan: a second stat(path) could follow a
		 * symlink made since into the mount */
		int r = fs_checkpoint_newest(list[i].dir, ctx->mount_path, ctx->mount_dev, &step,
					     path, sizeof(path), &mtime);

		if (r == -EXDEV && list[i].for_resume)
			fs_log(ctx, 1, "job %s: checkpoint_dir %s lies inside the mount %s; the "
				       "daemon never reads its own mount", list[i].name,
			       list[i].dir, ctx->mount_path);
		pthread_mutex_lock(&ctx->lock);
		if (list[i].for_resume) {
			if (sched_job_resume_scanned(c, list[i].name, list[i].generation,
						     r == 0 ? path : NULL, step, mtime,
						     fs_now_usec()) > 0) {
				fs_changed(ctx);
				pthread_cond_broadcast(&ctx->resume_cv);
			}
		} else if (r == 0 && sched_job_checkpoint_found(c, list[i].name, step, path, mtime,
								  fs_now_usec()) > 0) {
			fs_changed(ctx);
		}
		pthread_mutex_unlock(&ctx->lock);
		free(list[i].dir);
	}
	free(list);
	pthread_mutex_lock(&ctx->lock);
}

static void *heartbeat_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	struct timespec ts;
	uint64_t now;
	unsigned changed;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stopping) {
		/* stop_cv, not notify_cv: a change brings no deadline closer, and waking on
		 * every health report would run both scans hundreds of times a second */
		fs_deadline_in(&ts, 1000);
		pthread_cond_timedwait(&ctx->stop_cv, &ctx->lock, &ts);
		if (ctx->stopping)
			break;
		now = fs_now_usec();
		if (sched_check_heartbeats(ctx->cluster, now) > 0) {
			fs_log(ctx, 1, "heartbeat lost: see cluster/events");
			fs_changed(ctx);
		}
		/* time limits and the end of preemption grace periods: time alone changes them */
		changed = sched_tick(ctx->cluster, now);
		/* cluster/utilization's minute samples (the panel's chart) */
		sched_util_sample(ctx->cluster, now);
		/* what the heartbeat check and the tick owe; also any pass a request without
		 * an fs_store_sync() left owed */
		fs_pass_run_owed(ctx);
		if (changed > 0) {
			fs_log(ctx, 2, "%u job%s stopped, requeued or timed out; see "
				       "cluster/events", changed, changed == 1 ? "" : "s");
			fs_changed(ctx);
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}


/*
 * Checkpoint directories may sit on a slow or dead network filesystem: they are read by
 * a thread of their own, so heartbeats and FUSE workers never wait for them. Every
 * fault_check_interval it reads them all; a generation that begins (sched sets
 * resume_scan_wanted, fs_changed() wakes this thread) has its job's directory read at
 * once, before its servers are told to start it (issue 14 item 10).
 */
static void *scanner_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	struct timespec next;

	pthread_mutex_lock(&ctx->lock);
	fs_deadline_in(&next, 1000L * ctx->cluster->conf->fault_check_interval_sec);
	while (!ctx->stopping) {
		if (!ctx->cluster->resume_scan_wanted)
			pthread_cond_timedwait(&ctx->scan_cv, &ctx->lock, &next);
		if (ctx->stopping)
			break;
		if (fs_deadline_passed(&next)) {
			scan_checkpoints(ctx, false);
			fs_deadline_in(&next, 1000L * ctx->cluster->conf->fault_check_interval_sec);
		} else if (ctx->cluster->resume_scan_wanted) {
			scan_checkpoints(ctx, true);
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

/* Paths to poke, and jobs whose records were dropped (the kernel may hold stale
 * attributes of their files), collected under the lock, dealt with without it. */
struct pokes {
	char **paths;
	size_t count, cap;
	char (*stale)[CONF_NAME_MAX + 1];	/* job names */
	size_t stale_count, stale_cap;
};

/* Job @name's record was dropped: the kernel's attributes of its files may be stale. */
static void stale_add(struct pokes *p, const char *name)
{
	if (p->stale_count == p->stale_cap) {
		size_t cap = p->stale_cap ? p->stale_cap * 2 : 16;
		char (*n)[CONF_NAME_MAX + 1] = realloc(p->stale, cap * sizeof(*n));

		if (!n)
			return; /* their attributes stay until they expire */
		p->stale = n;
		p->stale_cap = cap;
	}
	snprintf(p->stale[p->stale_count++], CONF_NAME_MAX + 1, "%s", name);
}

static void poke_add(struct pokes *p, const char *mount, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void poke_add(struct pokes *p, const char *mount, const char *fmt, ...)
{
	char rel[4096 + 2 * CONF_NAME_MAX], *path;
	va_list ap;
	int w;

	if (p->count == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		char **n = realloc(p->paths, cap * sizeof(*n));

		if (!n)
			return; /* a missed announcement; the next change tries again */
		p->paths = n;
		p->cap = cap;
	}
	va_start(ap, fmt);
	w = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	/* a cut path would name another file, or (a mkdir) one outside the mount */
	if (w < 0 || (size_t)w >= sizeof(rel))
		return;
	/* room for the newline the helper's protocol adds */
	if (asprintf(&path, "%s%s ", mount, rel) < 0)
		return;
	path[strlen(path) - 1] = '\0';
	p->paths[p->count++] = path;
}

/*
 * Job directories that appeared or went since the last round: a mkdir or rmdir for the
 * helper to make (IN_CREATE / IN_DELETE with IN_ISDIR and the name). A name whose job was
 * replaced by a new one (a resubmission) is neither: its directory stayed.
 */
struct dirs_gone {
	struct fs_ctx *ctx;
	struct pokes *p;
};

/* fs_job_dirs_sweep(): the directory of job @name went with its record. */
static void dir_gone(void *arg, const char *name, bool announce)
{
	struct dirs_gone *g = arg;

	stale_add(g->p, name);
	if (announce)
		poke_add(g->p, "", "-%s/jobs/%s", g->ctx->mount_path, name);
}

static void collect_job_dirs(struct fs_ctx *ctx, struct pokes *p)
{
	struct sched_cluster *c = ctx->cluster;
	struct dirs_gone g = { ctx, p };

	fs_job_dirs_expire(ctx, fs_now_usec());
	/* new jobs have never been announced (notified_state 0): only those are looked up,
	 * and a new job is a changed one, on the notifier's dirty list (still there: collect()
	 * takes them after this) */
	for (struct sched_job *j = c->dirty_head[SCHED_DIRTY_NOTIFY]; j;
	     j = j->dirty[SCHED_DIRTY_NOTIFY].next) {
		bool announce;

		if (j->notified_state != 0 || !fs_job_dirs_new(ctx, j, &announce) || !announce)
			continue;
		poke_add(p, "", "+%s/jobs/%s", ctx->mount_path, j->name);
		/* a pending job's files appeared with its directory: none has changed for a
		 * watcher yet, and announcing each of them made 10,000 submissions cost a
		 * minute of FUSE round trips (issue 15 item 13); a placed job also changes
		 * its servers' job lists, announced below as usual */
		if (j->state == SCHED_JOB_PENDING && !j->slice_count && !j->resume_scan_pending) {
			j->notified_state = (int)j->state + 1;
			j->notified_generation = j->generation;
			j->notified_version = j->version;
		}
	}
	/* a directory goes only with its job's record: none dropped, none to look for */
	if (c->jobs_dropped == ctx->notified_jobs_dropped)
		return;
	ctx->notified_jobs_dropped = c->jobs_dropped;
	/* a log goes with its job's record; not while this head stands by, or is taking
	 * over: its logs have no names yet (fs_joblogs_adopt()), and a standby removes none */
	if (!ctx->viewing)
		fs_joblogs_sweep(ctx);
	fs_job_dirs_sweep(ctx, dir_gone, &g);
}

/*
 * What changed since the last round, file by file, so a watcher of status wakes when
 * the state changes and not on every checkpoint or heartbeat.
 */
static void collect(struct fs_ctx *ctx, struct pokes *p, uint64_t *cluster_seen, bool swapped)
{
	struct sched_cluster *c = ctx->cluster;

	if (c->version == *cluster_seen && !swapped)
		return;
	*cluster_seen = c->version;
	poke_add(p, ctx->mount_path, "/cluster/status");
	poke_add(p, ctx->mount_path, "/cluster/jobs");
	collect_job_dirs(ctx, p);
	if (c->next_event_seq != c->notified_event_seq) {
		c->notified_event_seq = c->next_event_seq;
		poke_add(p, ctx->mount_path, "/cluster/events");
	}
	if (c->next_acct_seq != c->notified_acct_seq) {
		c->notified_acct_seq = c->next_acct_seq;
		poke_add(p, ctx->mount_path, "/cluster/accounting");
	}
	bool jobs_changed = c->job_count != ctx->notified_job_count;

	ctx->notified_job_count = c->job_count;
	/* only the jobs that changed since the last round (sched_job_touch()) */
	for (struct sched_job *j; (j = sched_dirty_pop(c, SCHED_DIRTY_NOTIFY));) {
		/* a generation waiting for its checkpoint scan is announced once it has
		 * been read (its servers' job lists leave it out until then) */
		bool announce = (j->notified_state != (int)j->state + 1 ||
				 j->notified_generation != j->generation) &&
				!j->resume_scan_pending;

		if (j->notified_version == j->version)
			continue;
		if (announce)
			jobs_changed = true;
		j->notified_version = j->version;
		/* a recovery (new generation) wakes status watchers even when the word
		 * reads "running" before and after */
		if (announce) {
			j->notified_state = (int)j->state + 1; /* 0 = never announced */
			poke_add(p, ctx->mount_path, "/jobs/%s/status", j->name);
			/* a generation began or ended: its history has a new line or an end */
			poke_add(p, ctx->mount_path, "/jobs/%s/history", j->name);
			/* it ended: its accounting record */
			if (sched_job_state_is_terminal(j->state))
				poke_add(p, ctx->mount_path, "/jobs/%s/accounting", j->name);
			/* the agents of its servers: what they must run changed */
			for (size_t k = 0; k < j->slice_count; k++)
				poke_add(p, ctx->mount_path, "/nodes/%s/jobs",
					 c->servers[j->slices[k].server].conf->name);
			if (j->slice_count && j->notified_generation != j->generation) {
				poke_add(p, ctx->mount_path, "/jobs/%s/ranktable.json", j->name);
				poke_add(p, ctx->mount_path, "/jobs/%s/topology.json", j->name);
			}
			j->notified_generation = j->generation;
		}
		poke_add(p, ctx->mount_path, "/jobs/%s/status.json", j->name);
		poke_add(p, ctx->mount_path, "/jobs/%s/events", j->name);
		/* the ladder's requests, for the processes that watch them */
		if (j->ladder.request && (j->ladder.active || announce))
			poke_add(p, ctx->mount_path, "/jobs/%s/recovery", j->name);
		/* env says what a generation runs with (its number, placement, the
		 * checkpoint it resumes from): a new state or generation, or the end of a
		 * resume scan, which announce covers; a checkpoint or a reason does not */
		if (j->slice_count && announce)
			poke_add(p, ctx->mount_path, "/jobs/%s/env", j->name);
		/* an instance came, went, became ready or no longer is: its service's
		 * endpoints, for a gateway */
		if (j->service[0]) {
			poke_add(p, ctx->mount_path, "/jobs/%s/endpoints", j->service);
			/* a disaggregated service's table lists its running instances */
			if (j->spec && j->spec->prefill)
				poke_add(p, ctx->mount_path, "/jobs/%s/global_ranktable.json",
					 j->service);
			if (j->slice_count && announce)
				poke_add(p, ctx->mount_path, "/jobs/%s/endpoint", j->name);
		}
		/* a disaggregated service's controller and coordinator ascendfs runs: what
		 * their servers' agents run, and with what (sched_service_roles.c); the
		 * listing also when they end with the service */
		for (int k = 0; sched_job_is_service(j) && j->spec->prefill &&
				(j->spec->controller_command || j->spec->coordinator_command) &&
				k < SCHED_ROLE_COUNT; k++) {
			int server = sched_service_role_server(c, j, (enum sched_role)k);

			if (server >= 0)
				poke_add(p, ctx->mount_path, "/nodes/%s/jobs",
					 c->servers[server].conf->name);
			if (sched_service_role_run(j, (enum sched_role)k))
				poke_add(p, ctx->mount_path, "/jobs/%s/roles/%s.env", j->name,
					 sched_role_name((enum sched_role)k));
		}
	}
	/* a job appeared, went or changed state: IN_ATTRIB on jobs/ itself (utimensat) */
	if (jobs_changed)
		poke_add(p, ctx->mount_path, "/jobs");
}

void fs_notify_view_swapped(struct fs_ctx *ctx, struct sched_cluster *old, bool first)
{
	struct sched_cluster *c = ctx->cluster;
	/* a sweep the old cluster still owed is owed by the new one */
	bool gone = !first && ctx->notified_jobs_dropped != old->jobs_dropped;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		const struct sched_job *o = first ? NULL : sched_cluster_find_job(old, j->name);

		/* the old view's job told (no round still owes it), and the same now */
		if (first || (o && o->serial == j->serial && o->notified_version == o->version &&
			      o->state == j->state && o->generation == j->generation &&
			      o->change_usec == j->change_usec)) {
			/* told already (or before any watcher): nothing to announce */
			j->notified_state = first ? (int)j->state + 1 : o->notified_state;
			j->notified_generation = first ? j->generation : o->notified_generation;
			j->notified_version = j->version;
			continue;
		}
		/* new to the view (its directory; notified_state 0), changed in it, or still
		 * owed by a round: on the notifier's list, its version not the one told */
		if (o && o->serial == j->serial) {
			j->notified_state = o->notified_state;
			j->notified_generation = o->notified_generation;
		}
		j->notified_version = 0;
		sched_job_mark_unannounced(c, j);
	}
	for (size_t i = 0; !first && !gone && i < old->job_count; i++) {
		const struct sched_job *n = sched_cluster_find_job(c, old->jobs[i]->name);

		gone = !n || n->serial != old->jobs[i]->serial;
	}
	if (first)
		fs_job_dirs_know_all(ctx);
	/* a directory gone is found by the next round's sweep */
	ctx->notified_jobs_dropped = gone ? c->jobs_dropped + 1 : c->jobs_dropped;
	c->notified_event_seq = first ? c->next_event_seq : old->notified_event_seq;
	c->notified_acct_seq = first ? c->next_acct_seq : old->notified_acct_seq;
	if (first)
		ctx->notified_job_count = c->job_count;
	ctx->view_swaps++;
	pthread_cond_broadcast(&ctx->notify_cv);
}

static void *notifier_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	uint64_t seen = 0, swaps_seen;
	struct timespec ts;
	sigset_t pipe_sig;

	/* a helper that is gone (fs_notify_helper_release(), also while the daemon stops
	 * and libfuse has put SIGPIPE back to its default) is EPIPE here, not the end of
	 * the daemon */
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
	pthread_mutex_lock(&ctx->lock);
	seen = ctx->cluster->version;
	swaps_seen = ctx->view_swaps;
	/* what exists at start was there before any watcher: no announcement */
	fs_job_dirs_know_all(ctx);
	ctx->notified_jobs_dropped = ctx->cluster->jobs_dropped;
	while (!ctx->stopping) {
		struct pokes p = { 0 };
		bool swapped;

		/* a change made while the last round was out is collected at once */
		if (ctx->cluster->version == seen && ctx->view_swaps == swaps_seen) {
			fs_deadline_in(&ts, 500);
			pthread_cond_timedwait(&ctx->notify_cv, &ctx->lock, &ts);
		}
		if (ctx->stopping)
			break;
		/* versions are a cluster's own: another cluster's are not compared */
		swapped = ctx->view_swaps != swaps_seen;
		swaps_seen = ctx->view_swaps;
		collect(ctx, &p, &seen, swapped);
		/* changes no request waits for (heartbeats, time limits, scans): the kernel
		 * is told of their stale attributes here, within a round */
		fs_inode_sweep(ctx, seen);
		/* an empty line ends the round: the helper closes the directory it holds */
		if (p.count)
			poke_add(&p, "", "%s", "");
		pthread_mutex_unlock(&ctx->lock);
		fs_joblogs_reap(ctx); /* the files of logs collect() found dropped */
		/* a job changed is swept by the request that changed it (fs_store_sync()),
		 * or by this round's sweep above when none waits (a RELEASE); one whose
		 * record went (a pruned or replaced record) here */
		for (size_t i = 0; i < p.stale_count; i++) {
			char path[sizeof(p.stale[0]) + 8];

			snprintf(path, sizeof(path), "/jobs/%s", p.stale[i]);
			fs_inode_inval_attrs_path(&ctx->inodes, path, true);
		}
		free(p.stale);
		for (size_t i = 0; i < p.count; i++) {
			size_t len = strlen(p.paths[i]), off = 0;

			/* a file nobody but the helper was given, in a directory likewise,
			 * has no watcher: the helper's three round trips wake nobody (42
			 * requests a job in a burst of running jobs, to the submitter's 6) */
			if (p.paths[i][0] == '/' && !fs_inode_watchable(&ctx->inodes,
					p.paths[i] + strlen(ctx->mount_path))) {
				free(p.paths[i]);
				continue;
			}

			/* one path per line to the helper (names never hold a newline) */
			p.paths[i][len++] = '\n';
			while (helper_fd >= 0 && !helper_broken && off < len) {
				ssize_t w = write(helper_fd, p.paths[i] + off, len - off);

				if (w < 0 && errno == EINTR)
					continue;
				if (w < 0) {
					/* kept open until helper_stop(): the mount watch's
					 * dup3() onto it must not meet a number reused */
					if (!__atomic_load_n(&helper_released, __ATOMIC_SEQ_CST))
						fs_log(ctx, 1, "the notify helper is gone (%s); "
							       "inotify watchers see only their "
							       "own changes", strerror(errno));
					helper_broken = true;
					break;
				}
				off += (size_t)w;
			}
			free(p.paths[i]);
		}
		free(p.paths);
		pthread_mutex_lock(&ctx->lock);
		/* the mkdir and rmdir of this round are now at most the helper's pipe away */
		fs_job_dirs_written(ctx, fs_now_usec(),
				    helper_fd < 0 || helper_broken ||
					    __atomic_load_n(&helper_released, __ATOMIC_SEQ_CST));
	}
	fs_job_dirs_free(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int fs_notifier_start(struct fs_ctx *ctx)
{
	int r;

	if (notifier_running)
		return 0;
	/* tests only: a daemon whose helper could not start */
	r = getenv("ASCENDFS_TEST_NO_NOTIFY_HELPER") ? -ENOEXEC : helper_start(ctx);
	if (r < 0)
		fs_log(ctx, 1, "cannot start the notify helper (%s); inotify watchers see only "
			       "their own changes", strerror(-r));
	r = pthread_create(&notifier_thread, NULL, notifier_main, ctx);
	if (r) {
		helper_stop(ctx);
		return -r;
	}
	notifier_running = true;
	return 0;
}

/* Stop the notifier and its helper (a standby's, or fs_threads_start() failing after it). */
static void notifier_stop(struct fs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_cond_broadcast(&ctx->notify_cv);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(notifier_thread, NULL);
	helper_stop(ctx);
	notifier_running = false;
}

int fs_threads_start(struct fs_ctx *ctx)
{
	int r = fs_notifier_start(ctx);

	if (r < 0)
		return r;
	r = pthread_create(&heartbeat_thread, NULL, heartbeat_main, ctx);
	if (r) {
		notifier_stop(ctx);
		return -r;
	}
	r = pthread_create(&scanner_thread, NULL, scanner_main, ctx);
	if (r) {
		pthread_mutex_lock(&ctx->lock);
		ctx->stopping = true;
		pthread_cond_broadcast(&ctx->stop_cv);
		pthread_mutex_unlock(&ctx->lock);
		pthread_join(heartbeat_thread, NULL);
		notifier_stop(ctx);
		return -r;
	}
	threads_running = true;
	return 0;
}

bool fs_threads_stop(struct fs_ctx *ctx)
{
	struct timespec ts;
	bool joined = true;

	if (!threads_running) {
		if (notifier_running) /* a standby's */
			notifier_stop(ctx);
		return true;
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_cond_broadcast(&ctx->notify_cv);
	pthread_cond_broadcast(&ctx->stop_cv);
	pthread_cond_broadcast(&ctx->scan_cv);
	pthread_cond_broadcast(&ctx->resume_cv);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(heartbeat_thread, NULL);
	pthread_join(notifier_thread, NULL);
	helper_stop(ctx);
	notifier_running = false;
	/* a scan stuck on a dead filesystem must not keep the daemon from exiting */
	/* pthread_timedjoin_np() waits on CLOCK_REALTIME */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 3;
	if (pthread_timedjoin_np(scanner_thread, NULL, &ts) != 0) {
		fs_log(ctx, 1, "a checkpoint directory does not answer; exiting without waiting "
			       "for it");
		joined = false;
	}
	threads_running = false;
	return joined;
}
