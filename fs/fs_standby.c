/* SPDX-License-Identifier: MIT */
/*
 * The two roles of a head (issue 21). A head leads: it owns the scheduler, writes the
 * state and serves writes (fs_lead_start(): the committer, the background threads, the
 * `leader` event). With the state on etcd, a head that finds another leading stands by
 * instead: it mounts too, and serves a read-only view of the state as the leader last
 * committed it, while a thread waits for the leader's lease to end.
 *
 * The view. The waiting thread reads what the leader commits into this head's copy of
 * the log (fs_store_refresh(), about once a second); a builder thread restores a new
 * cluster from that copy (fs_store_view()) and puts it in place of ctx->cluster under
 * ctx->lock, then tells the kernel that every attribute it holds is stale. A build costs
 * about what a restore does, so builds are spaced by four times the last one's length
 * (at least a second): a large state is shown less often, and the waiting thread, which
 * never builds, is never late to take over. Nothing of the fs layer keeps a pointer into
 * a cluster across ctx->lock, and what it reads without the lock is ctx->conf, which is
 * this head's own (the configuration as loaded), so the old cluster is freed at once.
 * cluster/leader says who leads, that this head stands by, and which log entry the view
 * holds. Every request that would change state fails with EROFS (fs_standby_refusal()),
 * logged once per 10 s with the leader's name; no thread acts on the view (no pass, no
 * heartbeat check, no timer, no checkpoint scan). The notifier runs: watchers of this
 * mount are told what each new view changed (fs_notify_view_swapped()).
 *
 * The takeover. Once the leader key is this head's, a build under way is cancelled, the
 * state is restored for leading (fs_store_takeover(): the copy, then what came after it)
 * into a new cluster, which replaces the view; the staged uploads are applied to it, and
 * the head leads (fs_lead_start()). Writes are refused until then. A takeover that fails
 * (a damaged log) stops the daemon with status 1, its lease revoked: another standby
 * tries next.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

#define BUILD_SPACING 4			/* builds this many times their length apart */
#define BUILD_MIN_MSEC 1000
#define REFUSAL_LOG_USEC (10 * 1000000ull)

struct fs_standby {
	struct fs_ctx *ctx;
	char *conf_text;		/* the configuration as loaded (cluster/config) */
	size_t conf_len;
	struct conf_cluster *conf;	/* ... parsed: ctx->conf while this head runs */
	bool set_aside;			/* --ignore-state-errors, for the takeover */
	pthread_t waiter, builder;
	bool waiter_running, builder_running;
	/* under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* wakes the builder */
	bool stopping, build_wanted;
	char leader[256];		/* the leader key's value, as last seen */
	atomic_bool cancel;		/* the build under way stops (the takeover) */
	/* under ctx->lock (and ctx->viewing: this head does not lead yet) */
	bool failed;			/* the takeover failed: main() exits 1 */
	uint64_t view_seq;		/* the view's last log entry (UINT64_MAX: none) */
	uint64_t view_usec;		/* ... when it was read (0: none) */
	uint64_t refusal_logged_usec;
};

static uint64_t mono_msec(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* ---- leading ---- */

/* With the state on etcd: who runs the cluster from now on, an event (cluster/leader
 * says it too). After the fork of fuse_daemonize(): the pid is this process's. */
static void note_leader(struct fs_ctx *ctx)
{
	char line[SCHED_REASON_MAX], mine[FS_CONFIG_FINGERPRINT_LEN + 1];
	char before[FS_CONFIG_FINGERPRINT_LEN + 1];
	const char *l;

	if (ctx->cluster->conf->state_backend != CONF_STATE_ETCD || !ctx->store)
		return;
	fs_store_config(ctx->store, mine, before);
	pthread_mutex_lock(&ctx->lock);
	l = fs_store_leader(ctx->store);
	/* the store's name last: a long list of etcd members is what may be cut */
	snprintf(line, sizeof(line), "%.*s took the leadership of the cluster's state%s%s%s "
				     "(lease %u s; %s)",
		 (int)strcspn(l + 8, "\n"), l + 8,
		 before[0] && strcmp(before, mine) != 0 ?
			 " with another configuration than the previous leader's (fingerprint " : "",
		 before[0] && strcmp(before, mine) != 0 ? mine : "",
		 before[0] && strcmp(before, mine) != 0 ? ")" : "",
		 ctx->cluster->conf->leader_lease_sec, fs_store_name(ctx->store));
	sched_note_leader(ctx->cluster, fs_now_usec(), line);
	pthread_cond_signal(&ctx->commit_cv); /* a change to write, no request waits */
	pthread_mutex_unlock(&ctx->lock);
}

/* The leadership lost (etcd): stop as SIGTERM stops, and exit 1 (main()). */
static void on_deposed(void *arg)
{
	(void)arg;
	kill(getpid(), SIGTERM);
}

int fs_lead_start(struct fs_ctx *ctx, char *why, size_t why_len)
{
	int r;

	/* under the lock: cluster/leader is rewritten (a takeover serves reads meanwhile) */
	pthread_mutex_lock(&ctx->lock);
	/* the agents could not report while the state was restored: their heartbeat
	 * timeout counts from now, not from the restore's start */
	sched_heartbeats_grace(ctx->cluster, fs_now_usec());
	r = fs_store_start(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (r < 0) {
		snprintf(why, why_len, "cannot start the state writer: %s", strerror(-r));
		return r;
	}
	note_leader(ctx);
	/* a head that lost its lease must not act: it unmounts and exits (a supervisor
	 * then starts it again, as a standby) */
	fs_store_on_deposed(ctx->store, on_deposed, NULL);
	r = fs_threads_start(ctx);
	if (r < 0)
		snprintf(why, why_len, "cannot start threads: %s", strerror(-r));
	return r;
}

/* ---- the view ---- */

/* Put @c in place of the cluster the daemon serves; the old one is freed. With @first
 * (no view was served before it), watchers are told nothing of what it holds. */
static void swap_in(struct fs_ctx *ctx, struct sched_cluster *c, bool first)
{
	struct sched_cluster *old = ctx->cluster;

	ctx->cluster = c;
	/* what changed since the view before, for inotify watchers of this mount */
	fs_notify_view_swapped(ctx, old, first);
	/* versions are the new cluster's: every job of it is swept afresh */
	ctx->swept_version = 0;
	fs_cache_forget(ctx);
	if (fs_config_refresh(ctx) < 0)
		fs_log(ctx, 1, "cluster/config shows the quotas of the view before: out of "
			       "memory");
	sched_cluster_free(old);
}

/* Build a view and serve it, unless it is the one served or the head now leads. */
static int build_view(struct fs_standby *sb, bool log_failure)
{
	struct fs_ctx *ctx = sb->ctx;
	char why[SCHED_REASON_MAX], leader[sizeof(sb->leader)];
	struct sched_cluster *c;
	uint64_t seq, after;
	int r;

	pthread_mutex_lock(&ctx->lock);
	after = sb->view_seq;
	pthread_mutex_unlock(&ctx->lock);
	r = fs_store_view(ctx->store, sb->conf_text, sb->conf_len, after, &sb->cancel, &c, &seq,
			  why);
	if (r < 0 && log_failure && r != -ECANCELED)
		fs_log(ctx, 1, "standby: the view of the state cannot be built (%s); it shows "
			       "what it showed", why);
	if (r != 0)
		return r;
	pthread_mutex_lock(&sb->mu);
	snprintf(leader, sizeof(leader), "%s", sb->leader);
	pthread_mutex_unlock(&sb->mu);
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->viewing || atomic_load(&sb->cancel)) {
		pthread_mutex_unlock(&ctx->lock);
		sched_cluster_free(c);
		return -ECANCELED;
	}
	swap_in(ctx, c, after == UINT64_MAX);
	sb->view_seq = seq;
	sb->view_usec = fs_now_usec();
	fs_store_standby_text(ctx->store, leader, seq, sb->view_usec);
	pthread_mutex_unlock(&ctx->lock);
	/* what the kernel keeps of the old view (a rank table's size, a directory's times) */
	fs_inode_inval_attrs_path(&ctx->inodes, "/", true);
	return 0;
}

static void *builder_main(void *arg)
{
	struct fs_standby *sb = arg;
	uint64_t spacing = BUILD_MIN_MSEC, last = 0;
	int last_r = 0;

	pthread_mutex_lock(&sb->mu);
	while (!sb->stopping) {
		uint64_t t0, now = mono_msec();
		int r;

		if (!sb->build_wanted || now - last < spacing) {
			struct timespec ts;

			/* a second, or until the spacing has passed */
			fs_deadline_in(&ts, sb->build_wanted ? (long)(spacing - (now - last)) : 1000);
			pthread_cond_timedwait(&sb->cv, &sb->mu, &ts);
			continue;
		}
		sb->build_wanted = false;
		pthread_mutex_unlock(&sb->mu);
		t0 = mono_msec();
		/* a failure is logged when it is new, not each second */
		r = build_view(sb, last_r == 0);
		last = mono_msec();
		if (r == 0)
			fs_log(sb->ctx, 3, "standby: a view built in %llu ms",
			       (unsigned long long)(last - t0));
		if (r == 0) {
			spacing = (last - t0) * BUILD_SPACING;
			if (spacing < BUILD_MIN_MSEC)
				spacing = BUILD_MIN_MSEC;
		}
		last_r = r < 0 ? r : 0;
		pthread_mutex_lock(&sb->mu);
	}
	pthread_mutex_unlock(&sb->mu);
	return NULL;
}

/* ---- waiting for the leadership, and the takeover ---- */

/* Called by fs_store_lead() about once a second while another head leads. */
static int tick(void *arg, const char *leader)
{
	struct fs_standby *sb = arg;
	bool stop;

	pthread_mutex_lock(&sb->mu);
	stop = sb->stopping;
	if (!stop && strcmp(sb->leader, leader) != 0) {
		snprintf(sb->leader, sizeof(sb->leader), "%s", leader);
		pthread_mutex_unlock(&sb->mu);
		pthread_mutex_lock(&sb->ctx->lock);
		fs_store_standby_text(sb->ctx->store, leader, sb->view_seq, sb->view_usec);
		pthread_mutex_unlock(&sb->ctx->lock);
		pthread_mutex_lock(&sb->mu);
	}
	pthread_mutex_unlock(&sb->mu);
	if (stop)
		return -ECANCELED;
	/* -EBUSY: the builder reads the copy; the next tick reads etcd */
	if (fs_store_refresh(sb->ctx->store) == 0) {
		pthread_mutex_lock(&sb->mu);
		sb->build_wanted = true;
		pthread_cond_signal(&sb->cv);
		pthread_mutex_unlock(&sb->mu);
	}
	return 0;
}

static int take_over(struct fs_standby *sb)
{
	struct fs_ctx *ctx = sb->ctx;
	char why[SCHED_REASON_MAX];
	struct fs_restore_stats stats;
	struct sched_cluster *c;
	uint64_t t0 = mono_msec();
	int r;

	/* a build under way ends at its next entry, and serves nothing */
	atomic_store(&sb->cancel, true);
	fs_log(ctx, 2, "etcd: this head took the leadership; restoring the state to lead");
	r = fs_store_takeover(ctx, sb->conf_text, sb->conf_len, sb->set_aside, &c, &stats, why);
	if (r < 0) {
		fs_log(ctx, 0, "cannot take over: %s", r == -ENOMEM ? "out of memory" : why);
		return r;
	}
	pthread_mutex_lock(&ctx->lock);
	/* from here requests share their passes, run by the committer (main() sets it on
	 * the cluster it restores likewise) */
	sched_cluster_set_deferred_passes(c, true);
	swap_in(ctx, c, sb->view_seq == UINT64_MAX);
	pthread_mutex_unlock(&ctx->lock);
	fs_inode_inval_attrs_path(&ctx->inodes, "/", true);
	/* the logs of the jobs it now holds; nothing changes jobs until it leads */
	fs_joblogs_adopt(ctx);
	r = fs_store_replay_staged(ctx, &stats, why);
	if (r < 0)
		fs_log(ctx, 1, "staged uploads: %s", why);
	r = fs_lead_start(ctx, why, sizeof(why));
	if (r < 0) {
		fs_log(ctx, 0, "cannot take over: %s", why);
		return r;
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->viewing = false;
	/* files rendered since the restore, at this version, showed a standby's role
	 * (cluster/metrics' ascendfs_leader): cached by version alone, they would stay */
	fs_cache_forget(ctx);
	pthread_mutex_unlock(&ctx->lock);
	fs_log(ctx, 2, "took over in %llu ms: %zu %s (%zu active), %zu staged %s; this head "
		       "leads and serves writes",
	       (unsigned long long)(mono_msec() - t0), stats.jobs,
	       conf_plural(stats.jobs, "job", "jobs"), stats.active, stats.staged,
	       conf_plural(stats.staged, "upload", "uploads"));
	return 0;
}

static void *waiter_main(void *arg)
{
	struct fs_standby *sb = arg;
	struct fs_ctx *ctx = sb->ctx;
	char why[SCHED_REASON_MAX], last_why[SCHED_REASON_MAX] = "";
	int r;

	for (;;) {
		r = fs_store_lead(ctx->store, UINT_MAX, tick, sb, why);
		if (r == 0 || r == -ECANCELED || r == -ENOMEM || r == -EALREADY)
			break;
		/* etcd did not answer: a standby waits on (said once per cause) */
		if (strcmp(why, last_why) != 0)
			fs_log(ctx, 1, "standby: %s; trying again", why);
		snprintf(last_why, sizeof(last_why), "%s", why);
		sleep(1);
		pthread_mutex_lock(&sb->mu);
		r = sb->stopping ? -ECANCELED : 0;
		pthread_mutex_unlock(&sb->mu);
		if (r)
			break;
	}
	if (r == 0)
		r = take_over(sb);
	if (r < 0 && r != -ECANCELED) {
		pthread_mutex_lock(&ctx->lock);
		sb->failed = true;
		pthread_mutex_unlock(&ctx->lock);
		if (r == -ENOMEM)
			fs_log(ctx, 0, "standby: out of memory");
		kill(getpid(), SIGTERM); /* main() unmounts and exits 1 */
	}
	return NULL;
}

/* ---- the standby's life ---- */

int fs_standby_init(struct fs_ctx *ctx, bool set_aside, char *why)
{
	struct fs_standby *sb = calloc(1, sizeof(*sb));
	struct conf_error err;
	int r;

	if (!sb)
		return -ENOMEM;
	sb->ctx = ctx;
	sb->set_aside = set_aside;
	sb->view_seq = UINT64_MAX;
	pthread_mutex_init(&sb->mu, NULL);
	fs_cond_init(&sb->cv);
	atomic_init(&sb->cancel, false);
	r = conf_cluster_render_yaml(ctx->cluster->conf, &sb->conf_text, &sb->conf_len);
	if (r == 0)
		r = conf_cluster_parse(sb->conf_text, sb->conf_len, "cluster/config", &sb->conf,
				       &err);
	if (r < 0) {
		char inner[SCHED_REASON_MAX] = "out of memory";

		if (r != -ENOMEM)
			conf_error_format(&err, inner, sizeof(inner));
		snprintf(why, SCHED_REASON_MAX, "the configuration does not read back: %.400s",
			 inner);
		ctx->standby = sb;
		fs_standby_free(ctx);
		return r == -ENOMEM ? r : -EINVAL;
	}
	/* what requests read without ctx->lock outlives every cluster a view replaces */
	ctx->conf = sb->conf;
	ctx->standby = sb;
	ctx->viewing = true;
	/* the first view comes from the threads, after the mount: a standby that starts
	 * while the leader dies is not late to take over for building it (cluster/leader
	 * says "view: not read yet" meanwhile, over an empty state) */
	return 0;
}

int fs_standby_start(struct fs_ctx *ctx)
{
	struct fs_standby *sb = ctx->standby;
	int r;

	if (!sb)
		return 0;
	/* watchers of this mount are told what each view changed */
	r = fs_notifier_start(ctx);
	if (r < 0)
		return r;
	r = pthread_create(&sb->builder, NULL, builder_main, sb);
	if (r)
		return -r;
	sb->builder_running = true;
	r = pthread_create(&sb->waiter, NULL, waiter_main, sb);
	if (r) {
		fs_standby_stop(ctx);
		return -r;
	}
	sb->waiter_running = true;
	return 0;
}

void fs_standby_stop(struct fs_ctx *ctx)
{
	struct fs_standby *sb = ctx->standby;

	if (!sb)
		return;
	pthread_mutex_lock(&sb->mu);
	sb->stopping = true;
	pthread_cond_broadcast(&sb->cv);
	pthread_mutex_unlock(&sb->mu);
	atomic_store(&sb->cancel, true);
	if (sb->waiter_running)
		pthread_join(sb->waiter, NULL);
	if (sb->builder_running)
		pthread_join(sb->builder, NULL);
	sb->waiter_running = sb->builder_running = false;
}

bool fs_standby_failed(struct fs_ctx *ctx)
{
	bool failed;

	if (!ctx->standby)
		return false;
	pthread_mutex_lock(&ctx->lock);
	failed = ctx->standby->failed;
	pthread_mutex_unlock(&ctx->lock);
	return failed;
}

void fs_standby_free(struct fs_ctx *ctx)
{
	struct fs_standby *sb = ctx->standby;

	if (!sb)
		return;
	fs_standby_stop(ctx);
	if (ctx->conf == sb->conf)
		ctx->conf = ctx->cluster ? ctx->cluster->conf : NULL;
	conf_cluster_free(sb->conf);
	free(sb->conf_text);
	pthread_cond_destroy(&sb->cv);
	pthread_mutex_destroy(&sb->mu);
	free(sb);
	ctx->standby = NULL;
}

int fs_standby_refusal(struct fs_ctx *ctx, const char *path)
{
	struct fs_standby *sb = ctx->standby;
	char leader[sizeof(sb->leader)];
	uint64_t now;
	bool log;

	/* a head that lost the leadership changes nothing more: it is exiting (main()) */
	if (fs_store_deposed(ctx->store))
		return -EIO;
	if (!sb)
		return 0;
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->viewing) {
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	now = fs_now_usec();
	log = now - sb->refusal_logged_usec >= REFUSAL_LOG_USEC;
	if (log)
		sb->refusal_logged_usec = now;
	pthread_mutex_unlock(&ctx->lock);
	if (log) {
		pthread_mutex_lock(&sb->mu);
		snprintf(leader, sizeof(leader), "%s", sb->leader[0] ? sb->leader : "none yet");
		pthread_mutex_unlock(&sb->mu);
		fs_log(ctx, 1, "refused a change of %s with EROFS: this head stands by, the "
			       "leader is %s; write through the leader (cluster/leader; said once "
			       "per 10 s)", path, leader);
	}
	return -EROFS;
}
