/* SPDX-License-Identifier: MIT */
/*
 * Background threads: heartbeat checks, the scheduler's clock (sched_tick) and inotify
 * announcements.
 *
 * The kernel raises inotify events only for operations that pass through the mount, so
 * a change the daemon makes itself (a job placed, a fault moving a job) would be silent.
 * The notifier thread therefore operates on the mount from outside any FUSE handler and
 * without holding ctx->lock (either would deadlock): truncate() to the current size
 * raises IN_MODIFY. The handlers recognise its requests by thread id and do nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

static pthread_t heartbeat_thread, notifier_thread, scanner_thread;
static bool threads_running;

void fs_changed(struct fs_ctx *ctx)
{
	pthread_cond_broadcast(&ctx->notify_cv);
	fs_store_note_change(ctx);
}

static void deadline_in(struct timespec *ts, long msec)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += msec / 1000;
	ts->tv_nsec += (msec % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

struct ckpt_scan {
	char name[CONF_NAME_MAX + 1];
	char *dir;
};

/*
 * Look for newer checkpoints of jobs that have run (ctx->lock held on entry and exit;
 * dropped while reading the disk), so ASCEND_RESUME_CHECKPOINT names the newest one.
 */
static void scan_checkpoints(struct fs_ctx *ctx)
{
	struct sched_cluster *c = ctx->cluster;
	struct ckpt_scan *list;
	size_t n = 0;

	list = calloc(c->job_count ? c->job_count : 1, sizeof(*list));
	if (!list)
		return;
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (!j->spec || !j->spec->checkpoint_dir || !j->generation ||
		    sched_job_state_is_terminal(j->state))
			continue;
		snprintf(list[n].name, sizeof(list[n].name), "%s", j->name);
		list[n].dir = strdup(j->spec->checkpoint_dir);
		if (list[n].dir)
			n++;
	}
	pthread_mutex_unlock(&ctx->lock);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		uint64_t step;
		struct stat st;

		if (fs_checkpoint_newest(list[i].dir, &step, path, sizeof(path)) == 0 &&
		    stat(path, &st) == 0) {
			uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000u +
					 (uint64_t)st.st_mtim.tv_nsec / 1000u;

			pthread_mutex_lock(&ctx->lock);
			if (sched_job_checkpoint_found(c, list[i].name, step, path, mtime,
						       fs_now_usec()) > 0)
				fs_changed(ctx);
			pthread_mutex_unlock(&ctx->lock);
		}
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
		deadline_in(&ts, 1000);
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
 * a thread of their own, so heartbeats never wait for them.
 */
static void *scanner_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	struct timespec ts;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stopping) {
		deadline_in(&ts, 1000L * ctx->cluster->conf->fault_check_interval_sec);
		pthread_cond_timedwait(&ctx->stop_cv, &ctx->lock, &ts);
		if (ctx->stopping)
			break;
		scan_checkpoints(ctx);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

/* Paths to poke, collected under the lock, poked without it. */
struct pokes {
	char **paths;
	size_t count, cap;
};

static void poke_add(struct pokes *p, const char *mount, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void poke_add(struct pokes *p, const char *mount, const char *fmt, ...)
{
	char rel[256], *path;
	va_list ap;

	if (p->count == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		char **n = realloc(p->paths, cap * sizeof(*n));

		if (!n)
			return; /* a missed announcement; the next change tries again */
		p->paths = n;
		p->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (asprintf(&path, "%s%s", mount, rel) < 0)
		return;
	p->paths[p->count++] = path;
}

/*
 * What changed since the last round, file by file, so a watcher of status wakes when
 * the state changes and not on every checkpoint or heartbeat.
 */
static void collect(struct fs_ctx *ctx, struct pokes *p, uint64_t *cluster_seen)
{
	struct sched_cluster *c = ctx->cluster;

	if (c->version == *cluster_seen)
		return;
	*cluster_seen = c->version;
	poke_add(p, ctx->mount_path, "/cluster/status");
	if (c->next_event_seq != c->notified_event_seq) {
		c->notified_event_seq = c->next_event_seq;
		poke_add(p, ctx->mount_path, "/cluster/events");
	}
	bool jobs_changed = c->job_count != ctx->notified_job_count;

	ctx->notified_job_count = c->job_count;
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		if (j->notified_version == j->version)
			continue;
		if (j->notified_state != (int)j->state + 1 ||
		    j->notified_generation != j->generation)
			jobs_changed = true;
		j->notified_version = j->version;
		/* a recovery (new generation) wakes status watchers even when the word
		 * reads "running" before and after */
		if (j->notified_state != (int)j->state + 1 ||
		    j->notified_generation != j->generation) {
			j->notified_state = (int)j->state + 1; /* 0 = never announced */
			poke_add(p, ctx->mount_path, "/jobs/%s/status", j->name);
			/* the agents of its servers: what they must run changed */
			for (size_t k = 0; k < j->slice_count; k++)
				poke_add(p, ctx->mount_path, "/nodes/%s/jobs",
					 c->servers[j->slices[k].server].conf->name);
			if (j->slice_count && j->notified_generation != j->generation)
				poke_add(p, ctx->mount_path, "/jobs/%s/ranktable.json", j->name);
			j->notified_generation = j->generation;
		}
		poke_add(p, ctx->mount_path, "/jobs/%s/status.json", j->name);
		poke_add(p, ctx->mount_path, "/jobs/%s/events", j->name);
		if (j->slice_count)
			poke_add(p, ctx->mount_path, "/jobs/%s/env", j->name);
	}
	/* a job appeared, went or changed state: IN_ATTRIB on jobs/ itself (utimensat) */
	if (jobs_changed)
		poke_add(p, ctx->mount_path, "/jobs");
}

static void *notifier_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	uint64_t seen = 0;
	struct timespec ts;

	pthread_mutex_lock(&ctx->lock);
	ctx->notifier_tid = (pid_t)syscall(SYS_gettid);
	seen = ctx->cluster->version;
	while (!ctx->stopping) {
		struct pokes p = { 0 };

		deadline_in(&ts, 500);
		pthread_cond_timedwait(&ctx->notify_cv, &ctx->lock, &ts);
		if (ctx->stopping)
			break;
		collect(ctx, &p, &seen);
		pthread_mutex_unlock(&ctx->lock);
		for (size_t i = 0; i < p.count; i++) {
			struct stat st;

			/* a file that vanished meanwhile is simply skipped */
			if (stat(p.paths[i], &st) < 0)
				;
			else if (S_ISDIR(st.st_mode) ? utimensat(AT_FDCWD, p.paths[i], NULL, 0) < 0 :
						      truncate(p.paths[i], st.st_size) < 0)
				fs_log(ctx, 3, "notify %s: %s", p.paths[i], strerror(errno));
			free(p.paths[i]);
		}
		free(p.paths);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int fs_threads_start(struct fs_ctx *ctx)
{
	int r;

	r = pthread_create(&heartbeat_thread, NULL, heartbeat_main, ctx);
	if (r)
		return -r;
	r = pthread_create(&notifier_thread, NULL, notifier_main, ctx);
	if (!r) {
		r = pthread_create(&scanner_thread, NULL, scanner_main, ctx);
		if (r) {
			pthread_mutex_lock(&ctx->lock);
			ctx->stopping = true;
			pthread_cond_broadcast(&ctx->notify_cv);
			pthread_mutex_unlock(&ctx->lock);
			pthread_join(notifier_thread, NULL);
		}
	}
	if (r) {
		pthread_mutex_lock(&ctx->lock);
		ctx->stopping = true;
		pthread_cond_broadcast(&ctx->notify_cv);
		pthread_cond_broadcast(&ctx->stop_cv);
		pthread_mutex_unlock(&ctx->lock);
		pthread_join(heartbeat_thread, NULL);
		return -r;
	}
	threads_running = true;
	return 0;
}

bool fs_threads_stop(struct fs_ctx *ctx)
{
	struct timespec ts;
	bool joined = true;

	if (!threads_running)
		return true;
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_cond_broadcast(&ctx->notify_cv);
	pthread_cond_broadcast(&ctx->stop_cv);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(heartbeat_thread, NULL);
	pthread_join(notifier_thread, NULL);
	/* a scan stuck on a dead filesystem must not keep the daemon from exiting */
	deadline_in(&ts, 3000);
	if (pthread_timedjoin_np(scanner_thread, NULL, &ts) != 0) {
		fs_log(ctx, 1, "a checkpoint directory does not answer; exiting without waiting "
			       "for it");
		joined = false;
	}
	threads_running = false;
	return joined;
}
