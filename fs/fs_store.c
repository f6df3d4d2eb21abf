/* SPDX-License-Identifier: MIT */
/*
 * The durable state's backend, as the configuration names it (fs_store.h lists the
 * parts): SQLite in --state-dir by default, or an etcd cluster (`state: {backend:
 * etcd}`). The committer (fs_commit.c) writes through fs_store_write(); the restore
 * reads SQLite tables either way: the etcd backend's log is first replayed into an
 * in-memory SQLite database of the same schema.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_store.h"

static struct fs_store *store_new(size_t server_count)
{
	struct fs_store *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->server_docs = calloc(server_count ? server_count : 1, sizeof(char *));
	st->server_count = server_count;
	if (!st->server_docs) {
		free(st);
		return NULL;
	}
	return st;
}

const char *fs_store_name(const struct fs_store *st)
{
	return st->name;
}

/*
 * cluster/leader's "config:" line with etcd, into @buf (@size bytes): this head's
 * configuration fingerprint, and whether the leader's (@standby) or the previous leader's
 * is another. "" without etcd.
 */
static void config_line(struct fs_store *st, bool standby, char *buf, size_t size)
{
	char mine[FS_CONFIG_FINGERPRINT_LEN + 1], other[FS_CONFIG_FINGERPRINT_LEN + 1];

	buf[0] = '\0';
	if (!st->etcd)
		return;
	fs_store_etcd_config(st->etcd, mine, other);
	if (!other[0] || strcmp(mine, other) == 0)
		snprintf(buf, size, "config: %s%s\n", mine,
			 !other[0] ? "" : standby ? ", the same as the leader's" :
						    ", the same as the previous leader's");
	else
		snprintf(buf, size,
			 "config: %s, not the %s's %s: every head must run the same "
			 "configuration\n", mine, standby ? "leader" : "previous leader", other);
}

/* cluster/leader: who runs the cluster, since when, and where its state is */
static void leader_set(struct fs_store *st, const char *who, uint64_t since_usec)
{
	time_t t = (time_t)(since_usec / 1000000);
	char host[128] = "?", me[192], when[32] = "", config[160];
	struct tm tm;

	if (!who) {
		gethostname(host, sizeof(host) - 1);
		snprintf(me, sizeof(me), "%s pid %d", host, (int)getpid());
		who = me;
	}
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	config_line(st, false, config, sizeof(config));
	/* the state's name last: a long list of etcd members is what may be cut */
	snprintf(st->leader, sizeof(st->leader),
		 "leader: %s\nrole: leader\nsince: %s\n%sstate: %s%s\n", who, when, config,
		 st->etcd ? "" : "sqlite ", st->name);
}

void fs_store_config(struct fs_store *st, char *mine, char *leader)
{
	if (st && st->etcd) {
		fs_store_etcd_config(st->etcd, mine, leader);
		return;
	}
	mine[0] = leader[0] = '\0';
}

const char *fs_store_leader(const struct fs_store *st)
{
	return st->leader;
}

bool fs_store_deposed(const struct fs_store *st)
{
	return st && st->etcd && fs_store_etcd_lost(st->etcd);
}

void fs_store_on_deposed(struct fs_store *st, void (*fn)(void *arg), void *arg)
{
	if (st && st->etcd)
		fs_store_etcd_on_lost(st->etcd, fn, arg);
}

void fs_store_close(struct fs_store *st)
{
	if (!st)
		return;
	fs_store_etcd_close(st->etcd);
	fs_sqlite_close(st->sql);
	for (size_t i = 0; i < st->server_count; i++)
		free(st->server_docs[i]);
	free(st->server_docs);
	free(st->name);
	free(st->aside_hint);
	free(st);
}

int fs_store_open(const char *dir, size_t server_count, struct fs_store **ret, char *why)
{
	struct fs_store *st = store_new(server_count);
	char path[4096];
	int r;

	if (!st)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/ascendfs.db", dir);
	st->name = strdup(path);
	st->aside_where = "table unrestored";
	if (!st->name || asprintf(&st->aside_hint, "sqlite3 %s 'select kind, key, reason from "
				  "unrestored'", path) < 0) {
		st->aside_hint = NULL;
		fs_store_close(st);
		return -ENOMEM;
	}
	r = fs_sqlite_open(path, dir, &st->sql, why);
	if (r < 0) {
		fs_store_close(st);
		return r;
	}
	st->since_usec = fs_now_usec();
	leader_set(st, NULL, st->since_usec);
	*ret = st;
	return 0;
}

int fs_store_open_etcd(const struct fs_ctx *ctx, struct fs_store **ret, char *why)
{
	const struct conf_cluster *conf = ctx->cluster->conf;
	struct fs_store *st = store_new(ctx->cluster->server_count);
	char fingerprint[FS_CONFIG_FINGERPRINT_LEN + 1];
	int r;

	if (!st)
		return -ENOMEM;
	st->snapshot_events = true;
	st->aside_where = "etcd keys <prefix>unrestored/";
	if (asprintf(&st->name, "etcd %s at %s", conf->etcd_prefix, conf->etcd_servers) < 0 ||
	    asprintf(&st->aside_hint, "etcdctl --endpoints=%s get --prefix %sunrestored/",
		     conf->etcd_servers, conf->etcd_prefix) < 0) {
		fs_store_close(st);
		return -ENOMEM;
	}
	r = fs_store_etcd_connect(conf, ctx, &st->etcd, why);
	if (r < 0) {
		fs_store_close(st);
		return r;
	}
	/* the configuration as loaded (ctx->conf): quotas set at run time do not count */
	if (fs_config_fingerprint(ctx->conf, fingerprint) < 0) {
		fs_store_close(st);
		return -ENOMEM;
	}
	fs_store_etcd_set_config(st->etcd, fingerprint);
	fs_store_standby_text(st, "", 0, 0);
	*ret = st;
	return 0;
}

int fs_store_lead(struct fs_store *st, unsigned wait_msec,
		  int (*tick)(void *arg, const char *leader), void *arg, char *why)
{
	int r = fs_store_etcd_lead(st->etcd, wait_msec, tick, arg, why);

	if (r == 0)
		st->since_usec = fs_store_etcd_since(st->etcd);
	return r;
}

void fs_store_standby_text(struct fs_store *st, const char *leader, uint64_t view_seq,
			   uint64_t view_usec)
{
	time_t t = (time_t)(view_usec / 1000000);
	char when[32] = "?", view[96] = "not read yet", config[160];
	struct tm tm;

	if (view_usec) {
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(view, sizeof(view), "log entry %llu, read %s",
			 (unsigned long long)view_seq, when);
	}
	config_line(st, true, config, sizeof(config));
	snprintf(st->leader, sizeof(st->leader),
		 "leader: %s\nrole: standby\nstandby: %s (this head: its files are a read-only "
		 "view of the state; writes fail with EROFS, make them through the leader)\n"
		 "view: %s\n%sstate: %s\n",
		 leader[0] ? leader : "none (a head is taking over)",
		 fs_store_etcd_identity(st->etcd), view, config, st->name);
}

int fs_store_refresh(struct fs_store *st)
{
	return st->etcd ? fs_store_etcd_refresh(st->etcd) : 0;
}

void fs_store_pause(struct fs_store *st)
{
	if (st)
		fs_store_etcd_keeper_stop(st->etcd);
}

int fs_store_resume(struct fs_store *st)
{
	int r;

	if (!st)
		return 0;
	r = fs_store_etcd_keeper_start(st->etcd);
	/* after a fork (fuse_daemonize()), cluster/leader names this process */
	if (r == 0)
		leader_set(st, st->etcd ? fs_store_etcd_identity(st->etcd) : NULL, st->since_usec);
	return r;
}

int fs_store_write(struct fs_store *st, const struct fs_batch *b, char *why)
{
	bool want_full = false;
	int r;

	if (!st->etcd)
		return fs_sqlite_write(st->sql, b, why);
	r = fs_store_etcd_write(st->etcd, b, &want_full, why);
	/* the committer's thread: the only one that reads resync after the restore */
	if (r == 0 && want_full)
		st->resync = true;
	return r;
}

/* A batch of the etcd log into the in-memory database the restore reads. */
static int apply_batch(void *arg, const struct fs_batch *b, char *why)
{
	return fs_sqlite_write(arg, b, why);
}

struct aside_copy {
	struct fs_store_etcd *etcd;
	char *why;
};

static int copy_aside(void *arg, int64_t id, const char *kind, const char *key, const char *doc,
		      size_t doc_len, const char *reason, int64_t time_usec)
{
	struct aside_copy *a = arg;

	return fs_store_etcd_set_aside(a->etcd, id, kind ? kind : "", key ? key : "",
				       doc ? doc : "", doc_len, reason ? reason : "", time_usec,
				       a->why);
}

/*
 * etcd: replay the log into SQLite in memory, restore from it as from a file, then keep
 * what it set aside in etcd; the first write is a snapshot when the log had parts of no
 * use or records were set aside (the snapshot leaves them out).
 */
static int restore_etcd(struct fs_ctx *ctx, uint64_t now_usec, bool set_aside,
			struct fs_restore_stats *stats, char *why)
{
	struct fs_store *st = ctx->store;
	struct aside_copy aside = { st->etcd, why };
	struct timespec t0, t1;
	bool untidy = false;
	int r = fs_sqlite_open(":memory:", NULL, &st->sql, why);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (r == 0)
		r = fs_store_etcd_load(st->etcd, apply_batch, st->sql, &untidy, why);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r == 0)
		fs_log(ctx, 3, "restore: etcd's snapshot and log read and replayed in %.1f ms",
		       (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			       (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	if (r == -EBADMSG || r == -EPROTO) {
		const struct conf_cluster *conf = ctx->cluster->conf;
		char inner[SCHED_REASON_MAX];

		snprintf(inner, sizeof(inner), "%s", why);
		if (r == -EPROTO)
			snprintf(why, SCHED_REASON_MAX, "state store %.120s cannot be read: %.250s; "
				 "nothing was changed. A newer ascendfs wrote it: use that one",
				 st->name, inner);
		else
			snprintf(why, SCHED_REASON_MAX, "state store %.80s is damaged: %.160s; "
				 "nothing was changed. Restore the etcd cluster from a backup "
				 "(etcdctl snapshot restore), or start empty by deleting the keys "
				 "(etcdctl del --prefix %.60s: the jobs they hold are forgotten)",
				 st->name, inner, conf->etcd_prefix);
		r = -EBADMSG;
	}
	if (r == 0)
		r = fs_sqlite_restore(ctx, now_usec, set_aside, stats, why);
	if (r == 0 && stats->set_aside)
		r = fs_sqlite_each_unrestored(st->sql, 0, copy_aside, &aside, why);
	if (r == 0 && (untidy || stats->set_aside))
		st->resync = true;
	/* a takeover replays the staged uploads from it after the swap */
	if (r < 0 || !st->staged_later) {
		fs_sqlite_close(st->sql);
		st->sql = NULL;
	}
	return r;
}

int fs_store_restore(struct fs_ctx *ctx, uint64_t now_usec, bool set_aside,
		     struct fs_restore_stats *stats, char *why)
{
	if (ctx->test_slow_restore_ms)
		usleep(ctx->test_slow_restore_ms * 1000u); /* tests only: see fs.h */
	if (ctx->store->etcd)
		return restore_etcd(ctx, now_usec, set_aside, stats, why);
	return fs_sqlite_restore(ctx, now_usec, set_aside, stats, why);
}

/* A cluster of the configuration @text (cluster/config's, as this head loaded it). */
static int cluster_of(const char *text, size_t len, bool leading, struct sched_cluster **ret,
		      char *why)
{
	struct conf_cluster *conf;
	struct conf_error err;
	int r = conf_cluster_parse(text, len, "cluster/config", &conf, &err);

	if (r < 0) {
		conf_error_format(&err, why, SCHED_REASON_MAX);
		return r;
	}
	r = sched_cluster_new(conf, ret); /* steals conf */
	if (r < 0)
		snprintf(why, SCHED_REASON_MAX, "out of memory");
	else /* a view's env files wait for no scan: no scanner runs */
		(*ret)->scan_resume_at_start = leading;
	return r;
}

/* A context for a restore into a cluster that is not the daemon's yet (NULL: out of
 * memory). */
static struct fs_ctx *side_ctx(struct fs_store *st, struct sched_cluster *c, int log_level)
{
	struct fs_ctx *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	fs_cond_init(&t->commit_cv);
	t->cluster = c;
	t->store = st;
	t->log_level = log_level;
	return t;
}

static void side_ctx_free(struct fs_ctx *t)
{
	fs_stage_ops_free(t);
	fs_stage_free_all(t);
	free(t->config_text);
	pthread_cond_destroy(&t->commit_cv);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

struct view_apply {
	struct fs_sqlite *sql;
	const atomic_bool *cancel;
};

static int apply_view(void *arg, const struct fs_batch *b, char *why)
{
	struct view_apply *v = arg;

	if (v->cancel && atomic_load(v->cancel)) {
		snprintf(why, SCHED_REASON_MAX, "cancelled");
		return -ECANCELED;
	}
	return fs_sqlite_write(v->sql, b, why);
}

int fs_store_view(struct fs_store *st, const char *conf_text, size_t conf_len, uint64_t after,
		  const atomic_bool *cancel, struct sched_cluster **ret, uint64_t *ret_seq,
		  char *why)
{
	struct fs_store *v = store_new(st->server_count);
	struct sched_cluster *c = NULL;
	struct fs_restore_stats stats;
	struct view_apply va = { .cancel = cancel };
	struct fs_ctx *t = NULL;
	int r;

	*ret = NULL;
	if (!v || !(v->name = strdup(st->name))) {
		fs_store_close(v);
		return -ENOMEM;
	}
	v->staged_later = true;
	v->aside_where = "memory";
	/* nothing new: not even a database opened */
	r = fs_store_etcd_view(st->etcd, after, NULL, NULL, ret_seq, why);
	if (r == 0)
		r = fs_sqlite_open(":memory:", NULL, &v->sql, why);
	va.sql = v->sql;
	if (r == 0)
		r = fs_store_etcd_view(st->etcd, after, apply_view, &va, ret_seq, why);
	if (r == 0)
		r = cluster_of(conf_text, conf_len, false, &c, why);
	if (r == 0 && !(t = side_ctx(v, c, -1)))
		r = -ENOMEM;
	if (r == 0) {
		/* what the leader wrote, as it wrote it: no pass of this head's own */
		sched_cluster_set_deferred_passes(c, true);
		r = fs_sqlite_restore(t, fs_now_usec(), true, &stats, why);
	}
	if (t)
		side_ctx_free(t);
	fs_store_close(v);
	if (r != 0) {
		sched_cluster_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int fs_store_takeover(struct fs_ctx *ctx, const char *conf_text, size_t conf_len,
		      bool set_aside, struct sched_cluster **ret, struct fs_restore_stats *stats,
		      char *why)
{
	struct fs_store *st = ctx->store;
	struct sched_cluster *c = NULL;
	struct fs_ctx *t = NULL;
	int r = cluster_of(conf_text, conf_len, true, &c, why);

	*ret = NULL;
	if (r == 0 && !(t = side_ctx(st, c, ctx->log_level)))
		r = -ENOMEM;
	if (r == 0) {
		st->staged_later = true;
		r = restore_etcd(t, fs_now_usec(), set_aside, stats, why);
	}
	if (t)
		side_ctx_free(t);
	if (r < 0) {
		st->staged_later = false;
		sched_cluster_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int fs_store_replay_staged(struct fs_ctx *ctx, struct fs_restore_stats *stats, char *why)
{
	struct fs_store *st = ctx->store;
	int r;

	if (!st->staged_later || !st->sql)
		return 0;
	r = fs_sqlite_replay_staged(ctx, stats, why);
	fs_sqlite_close(st->sql);
	st->sql = NULL;
	st->staged_later = false;
	return r;
}
