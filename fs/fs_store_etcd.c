/* SPDX-License-Identifier: MIT */
/*
 * The etcd backend (issue 21): the committer's batches as a log in an etcd cluster,
 * written only while this head holds the leader's lease.
 *
 * Why a log: a batch must be applied whole (a job's placement and the release of the
 * NPUs it took are one change), and etcd bounds one Txn (128 ops, 1.5 MiB by default:
 * --max-txn-ops, --max-request-bytes). A batch is encoded as bytes (fs_batch.c) and
 * written as a few keys whatever it holds; a full batch is a snapshot that replaces
 * everything before it. Keys, under the prefix P (state.etcd_prefix):
 *   P leader                  this head's identity, with its lease (the election)
 *   P config                  the leader's configuration fingerprint, with the same
 *                             lease: a standby whose own differs says so (every head
 *                             must run the same configuration)
 *   P head                    decimal seq of the last batch committed
 *   P snapshot                decimal seq of the snapshot the log starts from
 *   P snap/<seq>/<part>       the snapshot's bytes, in parts of at most PART_MAX
 *   P log/<seq>/<part>        each batch since, likewise (seq, part: zero-padded)
 *   P unrestored/<time>-<id>  records the restore could not read, set aside
 *                             (--ignore-state-errors): "<kind> <key>\n<reason>\n<doc>"
 * A batch's parts but its last are put first, each in a Txn that holds only while the
 * leader key carries this head's lease; the last part goes in with `head` = seq in one
 * Txn that also compares `head` to the seq before it, so a batch is committed exactly
 * when `head` names it, once, in order. A snapshot's Txn also sets `snapshot` and deletes
 * the log and the previous snapshot, then the history before it is compacted. The
 * restore reads `head` and `snapshot`, then the snapshot and the log entries after it up
 * to `head`, in order; any other part (of a batch whose last Txn failed) is ignored, and
 * the first write after such a restore is a snapshot, which deletes them.
 *
 * A write whose outcome is unknown (no quorum answered: -EHOSTUNREACH) may still be
 * applied later: its compare of `head` makes that harmless (it applies before anything
 * else this head writes, or never), and the next batch is a snapshot (the committer's
 * resync), compared on the `head` then read back.
 *
 * Election: the leader key is taken with a Txn that holds only if it does not exist
 * (create_revision 0), put with a lease of leader_lease_duration; a thread renews the
 * lease every third of it. When it cannot (the lease expired, or no member answered for
 * a whole lease), this head has lost the leadership: it writes nothing more, and every
 * write it tried after its lease lapsed failed its compare anyway (fencing).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_store.h"

#define PART_MAX (512u << 10)		/* bytes of one key's value: a Txn stays under
					 * etcd's default 1.5 MiB request */
#define LOG_MIN_BYTES (8u << 20)	/* a snapshot is written when the log since the
					 * last one passes this, or that snapshot's size */
#define GARBAGE_MAX 64			/* old snapshots deleted by one snapshot's Txn */

struct fs_store_etcd {
	const struct fs_ctx *ctx;	/* for fs_log() only */
	struct fs_etcd *e;		/* the committer's client (and the restore's) */
	char *prefix;			/* ends with '/' */
	char *servers;
	char *identity;			/* the leader key's value */
	int64_t lease;
	unsigned ttl;
	uint64_t head;			/* the last batch known committed (0: none) */
	uint64_t snapshot;		/* the snapshot the log starts from (0: none) */
	uint64_t next_seq;		/* above every seq ever tried */
	size_t log_bytes, snapshot_bytes;
	uint64_t garbage[GARBAGE_MAX];	/* snapshots of no use, for the next one to delete */
	size_t garbage_count;
	/* the lease's renewal */
	pthread_t keeper;
	bool led;			/* the leader key was taken */
	bool keeper_running, stopping;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_bool losing, lost;	/* losing: lose() ran (once); lost: lost_why set */
	char lost_why[FS_ETCD_WHY_MAX];	/* set once, before lost */
	void (*on_lost)(void *arg);	/* called once when it is (under mu) */
	void *on_lost_arg;
	pid_t pid;			/* the identity's (a fork changes it) */
	uint64_t since_usec;		/* wall clock when the leadership was taken */
	char config[FS_CONFIG_FINGERPRINT_LEN + 1]; /* this head's configuration's ("": not
					 * given, fs_store_etcd_set_config()) */
	char leader_config[FS_CONFIG_FINGERPRINT_LEN + 1]; /* under mu: the leader's, as a
					 * standby last saw it ("" none); once this head
					 * leads, the one before it */
	/* a standby's copy of the snapshot and the log after it, as bytes (warm_refresh()):
	 * at takeover only what came since is read; under warm_mu (the standby's view is
	 * built from it on a thread of its own, fs_standby.c) */
	pthread_mutex_t warm_mu;
	struct warm {
		bool fresh;		/* read at least once since dropped */
		uint64_t snapshot;	/* its seq; 0: none (nor a snapshot in etcd) */
		char *snap;
		size_t snap_len;
		struct warm_entry {
			uint64_t seq;
			char *bytes;
			size_t len;
		} *log;			/* seq ascending, contiguous after the snapshot */
		size_t n, cap;
	} warm;
};

static int warm_refresh(struct fs_store_etcd *e);

static void warm_drop(struct fs_store_etcd *e)
{
	for (size_t i = 0; i < e->warm.n; i++)
		free(e->warm.log[i].bytes);
	free(e->warm.log);
	free(e->warm.snap);
	memset(&e->warm, 0, sizeof(e->warm));
}

static char *key_of(const struct fs_store_etcd *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *key_of(const struct fs_store_etcd *e, const char *fmt, ...)
{
	char tail[128], *k;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	if (asprintf(&k, "%s%s", e->prefix, tail) < 0)
		return NULL;
	return k;
}

/* ---- the lease ---- */

static uint64_t mono_msec(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void lose(struct fs_store_etcd *e, const char *why)
{
	void (*fn)(void *arg);
	void *arg;

	/* once, whichever thread finds it first (the keeper, or the committer) */
	if (atomic_exchange(&e->losing, true))
		return;
	snprintf(e->lost_why, sizeof(e->lost_why), "%s", why);
	atomic_store(&e->lost, true);
	pthread_mutex_lock(&e->mu);
	fn = e->on_lost;
	arg = e->on_lost_arg;
	pthread_mutex_unlock(&e->mu);
	fs_log(e->ctx, 0, "etcd %s: this head lost the leadership (%s); it writes nothing "
			  "more: requests that change state fail with EIO%s", e->prefix, why,
	       fn ? "; it stops, to stand by again when restarted" : "");
	if (fn)
		fn(arg);
}

void fs_store_etcd_on_lost(struct fs_store_etcd *e, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&e->mu);
	e->on_lost_arg = arg;
	e->on_lost = fn;
	pthread_mutex_unlock(&e->mu);
	/* lost before: lose() found no hook */
	if (atomic_load(&e->lost))
		fn(arg);
}

uint64_t fs_store_etcd_since(const struct fs_store_etcd *e)
{
	return e->since_usec;
}

struct leader_seen {
	char value[256];
	int64_t lease;
	bool found;
};

static int leader_cb(void *arg, const struct fs_etcd_kv *kv)
{
	struct leader_seen *s = arg;

	snprintf(s->value, sizeof(s->value), "%.*s", (int)(kv->value_len < 255 ? kv->value_len : 255),
		 kv->value);
	s->lease = kv->lease;
	s->found = true;
	return 0;
}

/* The leader key as it is now, read through @conn (each thread its own connection). */
static int read_leader(struct fs_store_etcd *e, struct fs_etcd *conn, struct leader_seen *s,
		       char *why)
{
	char *k = key_of(e, "leader");
	int r;

	memset(s, 0, sizeof(*s));
	if (!k)
		return -ENOMEM;
	r = fs_etcd_range(conn, k, false, leader_cb, s, NULL, why);
	free(k);
	return r;
}

/* Is the leader key still on this head's lease (read through @conn)? If not, the head lost
 * the leadership (lose()); a read that fails decides nothing. */
static void check_leader(struct fs_store_etcd *e, struct fs_etcd *conn)
{
	char why[FS_ETCD_WHY_MAX], msg[FS_ETCD_WHY_MAX];
	struct leader_seen seen;

	if (read_leader(e, conn, &seen, why) < 0 || (seen.found && seen.lease == e->lease))
		return;
	snprintf(msg, sizeof(msg), "the leader key %s", seen.found ? "is another head's: " :
			 "is gone");
	if (seen.found)
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s", seen.value);
	lose(e, msg);
}

static void *keeper_main(void *arg)
{
	struct fs_store_etcd *e = arg;
	char why[FS_ETCD_WHY_MAX];
	struct fs_etcd *ka = NULL;
	uint64_t last_ok = mono_msec();
	unsigned every = e->ttl / 3 ? e->ttl / 3 : 1;
	int r = fs_etcd_open(e->servers, e->ttl * 1000 / 4, &ka, why);
	struct timespec next;

	clock_gettime(CLOCK_REALTIME, &next);
	next.tv_sec += every;
	pthread_mutex_lock(&e->mu);
	while (!e->stopping && !atomic_load(&e->lost)) {
		uint64_t began;
		unsigned ttl = 0;

		pthread_cond_timedwait(&e->cv, &e->mu, &next);
		if (e->stopping)
			break;
		/* renewals paced from when each began: the key's check below adds nothing */
		clock_gettime(CLOCK_REALTIME, &next);
		next.tv_sec += every;
		began = mono_msec();
		pthread_mutex_unlock(&e->mu);
		if (r == 0)
			r = fs_etcd_lease_keepalive(ka, e->lease, &ttl, why);
		if (r == 0 && ttl == 0) {
			lose(e, "its lease expired before it was renewed");
		} else if (r == 0) {
			last_ok = mono_msec();
			/* the lease lives, but the key may not be on it (deleted by hand, or
			 * put by another): this head would say it leads beside the new one.
			 * Not when the renewal took half its period: the next one comes first */
			if (last_ok - began < (uint64_t)every * 500)
				check_leader(e, ka);
		} else if (mono_msec() - last_ok >= (uint64_t)e->ttl * 1000) {
			lose(e, why);
		}
		r = r == -ENOMEM ? r : 0;
		pthread_mutex_lock(&e->mu);
	}
	pthread_mutex_unlock(&e->mu);
	fs_etcd_close(ka);
	return NULL;
}

/* ---- open and close ---- */

void fs_store_etcd_keeper_stop(struct fs_store_etcd *e)
{
	if (!e || !e->keeper_running)
		return;
	pthread_mutex_lock(&e->mu);
	e->stopping = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->keeper, NULL);
	e->keeper_running = false;
}

/* After a fork (fuse_daemonize()): the leader key names this process, not its parent. */
static int identity_renew(struct fs_store_etcd *e)
{
	char host[128] = "?", *id = NULL, *leader = key_of(e, "leader"), why[FS_ETCD_WHY_MAX];
	bool ok = false;
	int r = -ENOMEM;

	gethostname(host, sizeof(host) - 1);
	if (leader && asprintf(&id, "%s pid %d", host, (int)getpid()) >= 0) {
		const struct fs_etcd_cmp mine = { .key = leader, .target = FS_ETCD_CMP_LEASE,
						  .number = e->lease };
		const struct fs_etcd_op put = { .kind = FS_ETCD_PUT, .key = leader, .value = id,
						.value_len = strlen(id), .lease = e->lease };

		r = fs_etcd_txn(e->e, &mine, 1, &put, 1, &ok, NULL, why);
		if (r == 0 && ok) {
			free(e->identity);
			e->identity = id;
			id = NULL;
			e->pid = getpid();
		} else {
			fs_log(e->ctx, 1, "etcd %s: the leader key still names pid %d: %s",
			       e->prefix, (int)e->pid, r < 0 ? why : "this head no longer holds it");
		}
	}
	free(id);
	free(leader);
	return r == -ENOMEM ? r : 0;
}

int fs_store_etcd_keeper_start(struct fs_store_etcd *e)
{
	int r;

	if (!e || e->keeper_running || !e->led)
		return 0;
	if (e->pid != getpid() && (r = identity_renew(e)) < 0)
		return r;
	e->stopping = false;
	r = pthread_create(&e->keeper, NULL, keeper_main, e);
	if (r)
		return -r;
	e->keeper_running = true;
	return 0;
}

void fs_store_etcd_close(struct fs_store_etcd *e)
{
	char why[FS_ETCD_WHY_MAX];

	if (!e)
		return;
	fs_store_etcd_keeper_stop(e);
	/* the leader key goes with the lease: a standby need not wait for it to expire */
	/* "not found": revoked by a first try whose answer was lost */
	if (e->led && !atomic_load(&e->lost) && fs_etcd_lease_revoke(e->e, e->lease, why) < 0 &&
	    !strstr(why, "lease not found"))
		fs_log(e->ctx, 1, "etcd %s: the leader's lease could not be revoked (%s); a "
				  "standby takes over when it expires", e->prefix, why);
	warm_drop(e);
	fs_etcd_close(e->e);
	pthread_mutex_destroy(&e->warm_mu);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e->prefix);
	free(e->servers);
	free(e->identity);
	free(e);
}

int fs_store_etcd_connect(const struct conf_cluster *conf, const struct fs_ctx *ctx,
			  struct fs_store_etcd **ret, char *why)
{
	struct fs_store_etcd *e = calloc(1, sizeof(*e));
	char host[128] = "?", ewhy[FS_ETCD_WHY_MAX];
	int r;

	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->warm_mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	atomic_init(&e->losing, false);
	atomic_init(&e->lost, false);
	e->ctx = ctx;
	e->ttl = conf->leader_lease_sec;
	e->next_seq = 1;
	gethostname(host, sizeof(host) - 1);
	e->prefix = strdup(conf->etcd_prefix);
	e->servers = strdup(conf->etcd_servers);
	if (!e->prefix || !e->servers ||
	    asprintf(&e->identity, "%s pid %d", host, (int)(e->pid = getpid())) < 0) {
		e->identity = NULL;
		fs_store_etcd_close(e);
		return -ENOMEM;
	}
	r = fs_etcd_open(conf->etcd_servers, conf->etcd_timeout_sec * 1000, &e->e, ewhy);
	if (r == 0)
		r = fs_etcd_lease_grant(e->e, e->ttl, &e->lease, ewhy);
	if (r < 0) {
		snprintf(why, SCHED_REASON_MAX, "etcd %.100s at %.100s: %.200s%s", conf->etcd_prefix,
			 conf->etcd_servers, r == -ENOMEM ? "out of memory" : ewhy,
			 r == -EHOSTUNREACH ? "; start the etcd members, or fix state.etcd_servers "
					      "in the configuration" : "");
		fs_store_etcd_close(e);
		return r == -ENOMEM ? r : -EIO;
	}
	*ret = e;
	return 0;
}

/* After a fork (fuse_daemonize()) and before the leader key is taken: it names this
 * process. */
static int identity_now(struct fs_store_etcd *e)
{
	char host[128] = "?", *id;

	if (e->pid == getpid())
		return 0;
	gethostname(host, sizeof(host) - 1);
	if (asprintf(&id, "%s pid %d", host, (int)getpid()) < 0)
		return -ENOMEM;
	free(e->identity);
	e->identity = id;
	e->pid = getpid();
	return 0;
}

struct config_seen {
	char value[FS_CONFIG_FINGERPRINT_LEN + 1];
};

static int config_cb(void *arg, const struct fs_etcd_kv *kv)
{
	struct config_seen *s = arg;

	snprintf(s->value, sizeof(s->value), "%.*s",
		 (int)(kv->value_len < FS_CONFIG_FINGERPRINT_LEN ? kv->value_len :
								  FS_CONFIG_FINGERPRINT_LEN),
		 kv->value);
	return 0;
}

/*
 * The leader's configuration fingerprint (key @config), read after the leader key (@seen),
 * kept for cluster/leader (fs_store_etcd_config()). With @may_log (a standby), logged
 * when it differs from this head's, once per leader (@last_seen: the leader it last
 * logged as standing by for) and fingerprint (@last_logged): a takeover by this head
 * would run the cluster with another inventory or other rules.
 */
static int read_leader_config(struct fs_store_etcd *e, const char *config,
			      const struct leader_seen *seen, bool may_log, const char *last_seen,
			      char *last_logged, char *why)
{
	struct config_seen got = { "" };
	bool differs;
	int r = seen->found ? fs_etcd_range(e->e, config, false, config_cb, &got, NULL, why) : 0;

	if (r < 0)
		return r;
	/* none while the key is gone: the one before stays, for the takeover's event */
	if (seen->found) {
		pthread_mutex_lock(&e->mu);
		snprintf(e->leader_config, sizeof(e->leader_config), "%s", got.value);
		pthread_mutex_unlock(&e->mu);
	}
	differs = got.value[0] && e->config[0] && strcmp(got.value, e->config) != 0;
	if (may_log && differs &&
	    (strcmp(got.value, last_logged) != 0 || strcmp(seen->value, last_seen) != 0))
		fs_log(e->ctx, 1, "etcd %s: the leader (%s) runs another configuration "
				  "(fingerprint %s; this head's is %s): if this head takes over, "
				  "it runs the cluster with its own. Give every head the same "
				  "configuration file and restart this one",
		       e->prefix, seen->value, got.value, e->config);
	if (may_log)
		snprintf(last_logged, FS_CONFIG_FINGERPRINT_LEN + 1, "%s", got.value);
	return 0;
}

void fs_store_etcd_set_config(struct fs_store_etcd *e, const char *fingerprint)
{
	snprintf(e->config, sizeof(e->config), "%s", fingerprint);
}

void fs_store_etcd_config(struct fs_store_etcd *e, char *mine, char *leader)
{
	snprintf(mine, FS_CONFIG_FINGERPRINT_LEN + 1, "%s", e->config);
	pthread_mutex_lock(&e->mu);
	snprintf(leader, FS_CONFIG_FINGERPRINT_LEN + 1, "%s", e->leader_config);
	pthread_mutex_unlock(&e->mu);
}

int fs_store_etcd_lead(struct fs_store_etcd *e, unsigned wait_msec,
		       int (*tick)(void *arg, const char *leader), void *arg, char *why)
{
	char ewhy[FS_ETCD_WHY_MAX], last_seen[256] = "", last_config[sizeof(e->config)] = "";
	uint64_t t0 = mono_msec(), last_tick = 0;
	char *leader = key_of(e, "leader"), *config = key_of(e, "config");
	struct leader_seen seen;
	unsigned ttl, rounds = 0;
	int stop = 0, r = leader && config ? identity_now(e) : -ENOMEM;

	if (e->led)
		r = -EALREADY;
	/* a lease that ended while etcd did not answer (a standby tries again) is taken
	 * anew: a put with it would be refused */
	if (r == 0)
		r = fs_etcd_lease_keepalive(e->e, e->lease, &ttl, ewhy);
	if (r == 0 && ttl == 0)
		r = fs_etcd_lease_grant(e->e, e->ttl, &e->lease, ewhy);
	while (r == 0) {
		const struct fs_etcd_cmp free_ = { .key = leader, .target = FS_ETCD_CMP_CREATE };
		const struct fs_etcd_op take[2] = {
			{ .kind = FS_ETCD_PUT, .key = leader, .value = e->identity,
			  .value_len = strlen(e->identity), .lease = e->lease },
			{ .kind = FS_ETCD_PUT, .key = config, .value = e->config,
			  .value_len = strlen(e->config), .lease = e->lease },
		};
		bool taken = false;

		r = fs_etcd_txn(e->e, &free_, 1, take, 2, &taken, NULL, ewhy);
		if (r < 0 || taken)
			break;
		r = read_leader(e, e->e, &seen, ewhy);
		if (r == 0)
			r = read_leader_config(e, config, &seen, wait_msec == UINT_MAX, last_seen,
					       last_config, ewhy);
		if (r < 0)
			break;
		/* taken by this very Txn, whose answer was lost: the client asked the next
		 * member, whose compare then failed */
		if (seen.found && seen.lease == e->lease)
			break;
		/* a standby says whom it waits for, again when that changes */
		if (wait_msec == UINT_MAX && seen.found && strcmp(seen.value, last_seen) != 0) {
			fs_log(e->ctx, 2, "etcd %s: standing by: %s leads; this head takes over "
					  "when its lease ends", e->prefix, seen.value);
			snprintf(last_seen, sizeof(last_seen), "%s", seen.value);
		}
		if (wait_msec == 0) {
			snprintf(why, SCHED_REASON_MAX, "etcd %s at %s: another head leads (%s)",
				 e->prefix, e->servers, seen.found ? seen.value : "it just left");
			free(leader);
			free(config);
			return -EBUSY;
		}
		if (wait_msec != UINT_MAX && mono_msec() - t0 >= wait_msec) {
			snprintf(why, SCHED_REASON_MAX,
				 "etcd %s at %s: another head is active (%s); this one waited %.1f s "
				 "for its lease of up to %u s to end. Stop that head, or wait for "
				 "it to end, and start this one again",
				 e->prefix, e->servers, seen.found ? seen.value : "it just left",
				 (double)wait_msec / 1000, e->ttl);
			free(leader);
			free(config);
			return -EBUSY;
		}
		/* a standby reads what the leader wrote as it goes, a second apart: itself
		 * (fs_store_etcd_refresh()), or through @tick */
		if (wait_msec == UINT_MAX && tick && mono_msec() - last_tick >= 1000) {
			last_tick = mono_msec();
			stop = tick(arg, seen.found ? seen.value : "");
			if (stop)
				break;
		} else if (wait_msec == UINT_MAX && !tick && ++rounds % 4 == 1) {
			fs_store_etcd_refresh(e);
		}
		usleep(250000);
		/* this head's own lease lives on while it waits (no renewal thread yet) */
		r = fs_etcd_lease_keepalive(e->e, e->lease, &ttl, ewhy);
		if (r == 0 && ttl == 0)
			r = fs_etcd_lease_grant(e->e, e->ttl, &e->lease, ewhy);
	}
	free(leader);
	free(config);
	if (stop)
		return stop;
	if (r < 0 && r != -ENOMEM && r != -EALREADY) {
		snprintf(why, SCHED_REASON_MAX, "etcd %.100s at %.100s: %.200s%s", e->prefix,
			 e->servers, ewhy,
			 r == -EHOSTUNREACH ? "; start the etcd members, or fix state.etcd_servers "
					      "in the configuration" : "");
		return -EIO;
	}
	if (r)
		return r;
	e->led = true;
	r = fs_store_etcd_keeper_start(e);
	if (r < 0) {
		snprintf(why, SCHED_REASON_MAX, "cannot start the lease's thread: %s", strerror(-r));
		return r;
	}
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		e->since_usec = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
	}
	return 0;
}

int fs_store_etcd_open(const struct conf_cluster *conf, const struct fs_ctx *ctx,
		       unsigned wait_msec, struct fs_store_etcd **ret, char *why)
{
	struct fs_store_etcd *e;
	int r = fs_store_etcd_connect(conf, ctx, &e, why);

	if (r < 0)
		return r;
	r = fs_store_etcd_lead(e, wait_msec, NULL, NULL, why);
	if (r < 0) {
		fs_store_etcd_close(e);
		return r;
	}
	*ret = e;
	return 0;
}

const char *fs_store_etcd_identity(const struct fs_store_etcd *e)
{
	return e->identity;
}

/* ---- the restore ---- */

/* "<seq>/<part>" after @dir in @key: 0, or -1 for a key of another shape */
static int parse_part(const char *key, size_t dir_len, uint64_t *seq, unsigned *part)
{
	char *end;
	const char *p = key + dir_len;

	if (strlen(key) <= dir_len)
		return -1;
	*seq = strtoull(p, &end, 10);
	if (end == p || *end != '/')
		return -1;
	p = end + 1;
	*part = (unsigned)strtoul(p, &end, 10);
	return end == p || *end ? -1 : 0;
}

struct entry_reader {
	struct fs_store_etcd *e;
	size_t dir_len;			/* strlen(prefix "log/") */
	uint64_t from, to;		/* seqs kept: from < seq <= to */
	uint64_t seq;			/* of the entry being read (0: none) */
	unsigned parts;
	char *buf;
	size_t len, cap;
	uint64_t applied;		/* the last seq applied */
	uint64_t max_seen;
	bool garbage;			/* parts of no use were seen */
	bool is_snapshot;
	bool warm;			/* keep the bytes in e->warm, decode nothing */
	int (*apply)(void *arg, const struct fs_batch *b, char *why);
	void *arg;
	char *why;
};

/* Decode @len bytes of entry @seq and apply them. */
static int apply_bytes(struct entry_reader *rd, uint64_t seq, unsigned parts, const char *bytes,
		       size_t len)
{
	struct fs_batch b;
	int r = fs_batch_decode(bytes, len, &b, rd->why);

	if (r < 0) {
		char inner[SCHED_REASON_MAX];

		snprintf(inner, sizeof(inner), "%s", rd->why);
		snprintf(rd->why, SCHED_REASON_MAX, "%s %" PRIu64 " (%u parts, %zu bytes): %.300s",
			 rd->is_snapshot ? "snapshot" : "log entry", seq, parts, len, inner);
		return r;
	}
	r = rd->apply(rd->arg, &b, rd->why);
	fs_batch_free(&b);
	if (r != 0 || !rd->e)
		return r;
	if (rd->is_snapshot)
		rd->e->snapshot_bytes = len;
	else
		rd->e->log_bytes += len;
	return 0;
}

/* Keep entry @seq's bytes (moved from @rd's buffer) in the standby's copy. */
static int warm_keep(struct entry_reader *rd)
{
	struct warm *w = &rd->e->warm;
	char *copy = malloc(rd->len ? rd->len : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, rd->buf, rd->len);
	if (rd->is_snapshot) {
		free(w->snap);
		w->snap = copy;
		w->snap_len = rd->len;
		return 0;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct warm_entry *n = realloc(w->log, cap * sizeof(*n));

		if (!n) {
			free(copy);
			return -ENOMEM;
		}
		w->log = n;
		w->cap = cap;
	}
	w->log[w->n++] = (struct warm_entry){ rd->seq, copy, rd->len };
	return 0;
}

/* The entry read so far: decoded and applied if it is one of the log's. */
static int entry_finish(struct entry_reader *rd)
{
	int r;

	if (!rd->seq)
		return 0;
	if (rd->seq <= rd->from || rd->seq > rd->to) {
		rd->garbage = true;
		/* a standby sees the leader's snapshot in the making: not garbage */
		if (rd->is_snapshot && !rd->warm && rd->e->garbage_count < GARBAGE_MAX)
			rd->e->garbage[rd->e->garbage_count++] = rd->seq;
		rd->seq = 0;
		return 0;
	}
	if (!rd->is_snapshot && rd->seq != rd->applied + 1) {
		snprintf(rd->why, SCHED_REASON_MAX, "log entry %" PRIu64 " follows %" PRIu64
			 ": the entries between are missing", rd->seq, rd->applied);
		return -EBADMSG;
	}
	r = rd->warm ? warm_keep(rd) : apply_bytes(rd, rd->seq, rd->parts, rd->buf, rd->len);
	if (r < 0)
		return r;
	rd->applied = rd->seq;
	rd->seq = 0;
	return 0;
}

static int entry_cb(void *arg, const struct fs_etcd_kv *kv)
{
	struct entry_reader *rd = arg;
	uint64_t seq;
	unsigned part;
	int r;

	if (parse_part(kv->key, rd->dir_len, &seq, &part) < 0) {
		rd->garbage = true; /* not a key of ours: left alone */
		return 0;
	}
	if (seq > rd->max_seen)
		rd->max_seen = seq;
	if (seq != rd->seq) {
		r = entry_finish(rd);
		if (r < 0)
			return r;
		rd->seq = seq;
		rd->parts = 0;
		rd->len = 0;
	}
	if (part != rd->parts) {
		/* a part missing: a batch whose last Txn never came (a later part without
		 * the ones before cannot be a committed batch's) */
		if (seq > rd->from && seq <= rd->to) {
			snprintf(rd->why, SCHED_REASON_MAX, "%s %" PRIu64 " lacks part %u",
				 rd->is_snapshot ? "snapshot" : "log entry", seq, rd->parts);
			return -EBADMSG;
		}
	}
	rd->parts++;
	if (rd->len + kv->value_len > rd->cap) {
		size_t cap = rd->cap ? rd->cap : PART_MAX;
		char *n;

		while (cap < rd->len + kv->value_len)
			cap *= 2;
		n = realloc(rd->buf, cap);
		if (!n)
			return -ENOMEM;
		rd->buf = n;
		rd->cap = cap;
	}
	memcpy(rd->buf + rd->len, kv->value, kv->value_len);
	rd->len += kv->value_len;
	return 0;
}

struct number_seen {
	uint64_t v;
	bool found, bad;
};

static int number_cb(void *arg, const struct fs_etcd_kv *kv)
{
	struct number_seen *n = arg;
	char *end;

	n->found = true;
	n->v = strtoull(kv->value, &end, 10);
	n->bad = end == kv->value || *end;
	return 0;
}

static int read_number(struct fs_store_etcd *e, const char *name, uint64_t *ret, char *why)
{
	char *k = key_of(e, "%s", name);
	struct number_seen n = { 0 };
	int r;

	if (!k)
		return -ENOMEM;
	r = fs_etcd_range(e->e, k, false, number_cb, &n, NULL, why);
	free(k);
	if (r == 0 && n.bad) {
		snprintf(why, SCHED_REASON_MAX, "key %s%s is not a number", e->prefix, name);
		r = -EBADMSG;
	}
	*ret = n.v;
	return r;
}

/* Keys only, of snap/: every snapshot but the current one is garbage (a write that failed). */
static int snap_key_cb(void *arg, const struct fs_etcd_kv *kv)
{
	struct entry_reader *rd = arg;
	struct fs_store_etcd *e = rd->e;
	uint64_t seq;
	unsigned part;

	if (parse_part(kv->key, rd->dir_len, &seq, &part) < 0) {
		rd->garbage = true;
		return 0;
	}
	if (seq > rd->max_seen)
		rd->max_seen = seq;
	if (seq != e->snapshot && seq != rd->seq) {
		rd->garbage = true;
		if (e->garbage_count < GARBAGE_MAX)
			e->garbage[e->garbage_count++] = seq;
	}
	rd->seq = seq;
	return 0;
}

/*
 * A standby keeps the leader's snapshot and the log after it as bytes, read a little
 * at a time while it waits: at takeover only what came since is read. Anything odd (a
 * snapshot deleted while read, a gap) drops the copy, to be read again. 0, or -EAGAIN
 * (dropped), -EIO (etcd did not answer; the copy stands).
 */
static int warm_refresh(struct fs_store_etcd *e)
{
	char why[SCHED_REASON_MAX], ewhy[FS_ETCD_WHY_MAX];
	struct entry_reader rd = { .e = e, .warm = true, .why = why };
	char *dir = NULL, *base = NULL, *after = NULL;
	uint64_t head, snap, last;
	int r = 0;

	if (read_number(e, "head", &head, ewhy) < 0 || read_number(e, "snapshot", &snap, ewhy) < 0)
		return -EIO;
	if (snap != e->warm.snapshot || (!snap && !e->warm.fresh)) {
		warm_drop(e);
		e->warm.fresh = true;
		if (!snap)
			goto log;
		base = key_of(e, "snap/");
		dir = key_of(e, "snap/%020" PRIu64 "/", snap);
		if (!base || !dir) {
			r = -ENOMEM;
			goto out;
		}
		rd.dir_len = strlen(base);
		rd.is_snapshot = true;
		rd.from = snap - 1;
		rd.to = snap;
		r = fs_etcd_range(e->e, dir, true, entry_cb, &rd, NULL, ewhy);
		if (r == 0)
			r = entry_finish(&rd);
		if (r < 0 || rd.applied != snap) {
			r = -EAGAIN;
			goto out;
		}
		e->warm.snapshot = snap;
	}
log:
	last = e->warm.n ? e->warm.log[e->warm.n - 1].seq : snap;
	if (head <= last)
		goto out;
	free(dir);
	dir = key_of(e, "log/");
	after = key_of(e, "log/%020" PRIu64 "/999999", last);
	if (!dir || !after) {
		r = -ENOMEM;
		goto out;
	}
	/* the same buffer, for the log's entries */
	rd = (struct entry_reader){ .e = e, .warm = true, .why = why, .dir_len = strlen(dir),
				    .from = last, .to = head, .applied = last, .buf = rd.buf,
				    .cap = rd.cap };
	r = fs_etcd_range_after(e->e, dir, true, after, false, entry_cb, &rd, NULL, ewhy);
	if (r == 0)
		r = entry_finish(&rd);
	if (r < 0)
		r = -EAGAIN;
out:
	if (r < 0)
		warm_drop(e);
	free(rd.buf);
	free(base);
	free(dir);
	free(after);
	return r;
}

int fs_store_etcd_refresh(struct fs_store_etcd *e)
{
	int r;

	if (pthread_mutex_trylock(&e->warm_mu) != 0)
		return -EBUSY;
	r = warm_refresh(e);
	pthread_mutex_unlock(&e->warm_mu);
	return r;
}

int fs_store_etcd_view(struct fs_store_etcd *e, uint64_t after,
		       int (*apply)(void *arg, const struct fs_batch *b, char *why), void *arg,
		       uint64_t *ret_seq, char *why)
{
	struct entry_reader rd = { .e = e, .apply = apply, .arg = arg, .why = why };
	uint64_t last;
	int r = 0;

	pthread_mutex_lock(&e->warm_mu);
	last = e->warm.n ? e->warm.log[e->warm.n - 1].seq : e->warm.snapshot;
	*ret_seq = last;
	if (!e->warm.fresh) {
		snprintf(why, SCHED_REASON_MAX, "nothing was read from etcd yet");
		r = -EAGAIN;
		goto out;
	}
	if (last == after || !apply) {
		r = last == after;
		goto out;
	}
	/* the copy is read, not counted: the counts that decide when this head writes a
	 * snapshot are of what it loads (apply_bytes() without rd.e) */
	rd.e = NULL;
	if (e->warm.snapshot) {
		rd.is_snapshot = true;
		r = apply_bytes(&rd, e->warm.snapshot, 0, e->warm.snap, e->warm.snap_len);
	}
	rd.is_snapshot = false;
	for (size_t i = 0; r == 0 && i < e->warm.n; i++)
		r = apply_bytes(&rd, e->warm.log[i].seq, 0, e->warm.log[i].bytes,
				e->warm.log[i].len);
out:
	pthread_mutex_unlock(&e->warm_mu);
	return r;
}

int fs_store_etcd_load(struct fs_store_etcd *e,
		       int (*apply)(void *arg, const struct fs_batch *b, char *why), void *arg,
		       bool *ret_untidy, char *why)
{
	struct entry_reader rd = { .e = e, .apply = apply, .arg = arg, .why = why };
	char ewhy[FS_ETCD_WHY_MAX] = "";
	char *dir = NULL, *after = NULL;
	bool warm;
	int r;

	*ret_untidy = false;
	/* after the standby's view is built from the copy (a build still under way ends
	 * soon: fs_standby.c cancels it) */
	pthread_mutex_lock(&e->warm_mu);
	r = read_number(e, "head", &e->head, ewhy);
	if (r == 0)
		r = read_number(e, "snapshot", &e->snapshot, ewhy);
	if (r < 0)
		goto out;
	if (e->snapshot > e->head) {
		snprintf(ewhy, sizeof(ewhy), "snapshot %" PRIu64 " is past head %" PRIu64,
			 e->snapshot, e->head);
		r = -EBADMSG;
		goto out;
	}
	/* what this head read while it stood by still stands if the snapshot is the same
	 * (a committed snapshot and log entry never change; a new snapshot deletes them) */
	warm = e->warm.snapshot && e->warm.snapshot == e->snapshot;
	/* the snapshot (and any other, of no use) */
	dir = key_of(e, "snap/");
	if (!dir) {
		r = -ENOMEM;
		goto out;
	}
	rd.dir_len = strlen(dir);
	rd.is_snapshot = true;
	rd.from = e->snapshot ? e->snapshot - 1 : 0;
	rd.to = e->snapshot;
	if (warm) {
		/* the copy's bytes, and the keys only for the other snapshots' seqs */
		r = apply_bytes(&rd, e->snapshot, 0, e->warm.snap, e->warm.snap_len);
		rd.applied = e->snapshot;
		if (r == 0)
			r = fs_etcd_range_after(e->e, dir, true, NULL, true, snap_key_cb, &rd, NULL,
						ewhy);
		rd.seq = 0;
	} else {
		r = fs_etcd_range(e->e, dir, true, entry_cb, &rd, NULL, ewhy);
		if (r == 0)
			r = entry_finish(&rd);
	}
	if (r == 0 && e->snapshot && rd.applied != e->snapshot) {
		snprintf(why, SCHED_REASON_MAX, "snapshot %" PRIu64 " is missing", e->snapshot);
		r = -EBADMSG;
	}
	if (r < 0)
		goto out;
	/* then the log since */
	free(dir);
	dir = key_of(e, "log/");
	if (!dir) {
		r = -ENOMEM;
		goto out;
	}
	e->next_seq = rd.max_seen + 1;
	rd.dir_len = strlen(dir);
	rd.is_snapshot = false;
	rd.from = e->snapshot;
	rd.to = e->head;
	rd.applied = e->snapshot;
	rd.max_seen = 0;
	for (size_t i = 0; warm && r == 0 && i < e->warm.n && e->warm.log[i].seq <= e->head; i++) {
		const struct warm_entry *w = &e->warm.log[i];

		if (w->seq != rd.applied + 1)
			break; /* cannot be (kept contiguous); read the rest from etcd */
		r = apply_bytes(&rd, w->seq, 0, w->bytes, w->len);
		rd.applied = rd.max_seen = w->seq;
	}
	if (r == 0 && rd.applied != e->snapshot) {
		after = key_of(e, "log/%020" PRIu64 "/999999", rd.applied);
		if (!after)
			r = -ENOMEM;
	}
	if (r == 0)
		r = fs_etcd_range_after(e->e, dir, true, after, false, entry_cb, &rd, NULL, ewhy);
	if (r == 0)
		r = entry_finish(&rd);
	if (r == 0 && rd.applied != e->head) {
		snprintf(why, SCHED_REASON_MAX, "log entries %" PRIu64 " to %" PRIu64 " are missing",
			 rd.applied + 1, e->head);
		r = -EBADMSG;
	}
	if (rd.max_seen + 1 > e->next_seq)
		e->next_seq = rd.max_seen + 1;
	if (e->head + 1 > e->next_seq)
		e->next_seq = e->head + 1;
	*ret_untidy = rd.garbage;
out:
	if (r < 0 && ewhy[0])
		snprintf(why, SCHED_REASON_MAX, "%s", ewhy);
	warm_drop(e); /* the restore has it all now */
	pthread_mutex_unlock(&e->warm_mu);
	free(dir);
	free(after);
	free(rd.buf);
	return r;
}

int fs_store_etcd_set_aside(struct fs_store_etcd *e, int64_t id, const char *kind,
			    const char *key, const char *doc, size_t doc_len, const char *reason,
			    int64_t time_usec, char *why)
{
	char *k = key_of(e, "unrestored/%020" PRId64 "-%" PRId64, time_usec, id), *v = NULL;
	char *leader = key_of(e, "leader"), ewhy[FS_ETCD_WHY_MAX];
	int len = -1, r = -ENOMEM;
	bool ok = false;

	if (k && leader)
		len = asprintf(&v, "%s %s\n%s\n", kind, key, reason);
	if (len >= 0) {
		char *all = realloc(v, (size_t)len + doc_len);

		if (all) {
			const struct fs_etcd_cmp mine = { .key = leader, .target = FS_ETCD_CMP_LEASE,
							  .number = e->lease };
			const struct fs_etcd_op put = { .kind = FS_ETCD_PUT, .key = k, .value = all,
							.value_len = (size_t)len + doc_len };

			v = all;
			memcpy(all + len, doc, doc_len);
			r = fs_etcd_txn(e->e, &mine, 1, &put, 1, &ok, NULL, ewhy);
			if (r == 0 && !ok) {
				snprintf(ewhy, sizeof(ewhy), "this head is not the leader");
				r = -EIO;
			}
			if (r < 0)
				snprintf(why, SCHED_REASON_MAX, "etcd %.100s: cannot set a record "
					 "aside: %.300s", e->prefix, ewhy);
		}
	}
	free(k);
	free(v);
	free(leader);
	return r;
}

/* ---- writing a batch ---- */

/* Is the leader key still this head's? If not, the leadership is lost. */
int fs_store_etcd_write(struct fs_store_etcd *e, const struct fs_batch *b, bool *ret_want_full,
			char *why)
{
	struct fs_batch marked = *b;
	struct fs_clock_mark mark;
	char ewhy[FS_ETCD_WHY_MAX], head_was[24], head_now[24], snap_now[24];
	char *bytes = NULL, *leader = key_of(e, "leader"), *head = key_of(e, "head");
	char *snapshot = key_of(e, "snapshot"), *part_key = NULL, *logdir = key_of(e, "log/");
	char *olds[GARBAGE_MAX + 1] = { 0 };
	size_t len = 0, nparts, nolds = 0;
	uint64_t seq = e->next_seq++;
	const char *kind = b->full ? "snap" : "log";
	int64_t rev = 0;
	bool ok = false, unknown = false, moved = false, retried = false;
	int r = 0;

	*ret_want_full = false;
	if (atomic_load(&e->lost)) {
		snprintf(why, SCHED_REASON_MAX, "etcd %.100s: this head lost the leadership (%.300s); "
			 "restart it", e->prefix, e->lost_why);
		r = -EIO;
		goto out;
	}
	/* the clock of this write goes with the batch (fs_clock.c: the next head's
	 * downtime is measured from it) */
	fs_clock_mark_now(&mark);
	if (fs_clock_mark_format(&mark, marked.clock, sizeof(marked.clock)) < 0)
		marked.clock[0] = '\0';
	if (!leader || !head || !snapshot || !logdir ||
	    fs_batch_encode(&marked, &bytes, &len) < 0) {
		r = -ENOMEM;
		goto out;
	}
	nparts = len ? (len + PART_MAX - 1) / PART_MAX : 1;
again:
	for (size_t i = 0; i < nparts && r == 0; i++) {
		struct fs_etcd_cmp cmp[2] = {
			{ .key = leader, .target = FS_ETCD_CMP_LEASE, .number = e->lease },
			{ .key = head },
		};
		struct fs_etcd_op ops[4 + GARBAGE_MAX + 1];
		size_t nops = 0, off = i * PART_MAX;

		free(part_key);
		part_key = key_of(e, "%s/%020" PRIu64 "/%06zu", kind, seq, i);
		if (!part_key) {
			r = -ENOMEM;
			break;
		}
		ops[nops++] = (struct fs_etcd_op){ .kind = FS_ETCD_PUT, .key = part_key,
						   .value = bytes + off,
						   .value_len = len - off < PART_MAX ? len - off
										     : PART_MAX };
		if (i + 1 == nparts) {
			/* the last: committed when `head` moves from the seq before to this */
			snprintf(head_was, sizeof(head_was), "%" PRIu64, e->head);
			snprintf(head_now, sizeof(head_now), "%" PRIu64, seq);
			if (e->head) {
				cmp[1].target = FS_ETCD_CMP_VALUE;
				cmp[1].value = head_was;
				cmp[1].value_len = strlen(head_was);
			} else {
				cmp[1].target = FS_ETCD_CMP_CREATE; /* no batch yet */
			}
			ops[nops++] = (struct fs_etcd_op){ .kind = FS_ETCD_PUT, .key = head,
							   .value = head_now,
							   .value_len = strlen(head_now) };
			if (b->full) {
				snprintf(snap_now, sizeof(snap_now), "%" PRIu64, seq);
				ops[nops++] = (struct fs_etcd_op){ .kind = FS_ETCD_PUT,
								   .key = snapshot,
								   .value = snap_now,
								   .value_len = strlen(snap_now) };
				ops[nops++] = (struct fs_etcd_op){ .kind = FS_ETCD_DELETE_PREFIX,
								   .key = logdir };
				if (e->snapshot)
					olds[nolds++] = key_of(e, "snap/%020" PRIu64 "/",
							       e->snapshot);
				/* each old snapshot once (etcd refuses overlapping ops) */
				for (size_t g = 0; g < e->garbage_count; g++) {
					uint64_t x = e->garbage[g];
					bool dup = x == seq || x == e->snapshot;

					for (size_t k = 0; k < g && !dup; k++)
						dup = e->garbage[k] == x;
					if (!dup)
						olds[nolds++] = key_of(e, "snap/%020" PRIu64 "/", x);
				}
				for (size_t g = 0; g < nolds; g++) {
					if (!olds[g]) {
						r = -ENOMEM;
						goto out;
					}
					ops[nops++] = (struct fs_etcd_op){
						.kind = FS_ETCD_DELETE_PREFIX, .key = olds[g] };
				}
			}
		}
		r = fs_etcd_txn(e->e, cmp, i + 1 == nparts ? 2 : 1, ops, nops, &ok, &rev, ewhy);
		if (r == -EHOSTUNREACH && i + 1 == nparts)
			unknown = true;
		if (r == 0 && !ok) {
			/* not this head's any more, or `head` moved: an earlier write whose
			 * outcome was unknown came in late */
			uint64_t now = e->head;

			check_leader(e, e->e);
			if (i + 1 == nparts && read_number(e, "head", &now, ewhy) == 0 &&
			    now == seq && !atomic_load(&e->lost)) {
				/* this very Txn went in; its answer was lost and the client
				 * asked the next member, whose compare then failed */
				ok = true;
				r = 0;
				break;
			}
			if (read_number(e, "head", &now, ewhy) == 0 && now != e->head &&
			    !atomic_load(&e->lost)) {
				fs_log(e->ctx, 1, "etcd %s: an earlier batch (%" PRIu64 ") was "
						  "committed late; %s", e->prefix, now,
				       b->full ? "this snapshot is written again after it"
					       : "the next write is a snapshot");
				e->head = now;
				moved = true;
			}
			snprintf(ewhy, sizeof(ewhy), "%s",
				 atomic_load(&e->lost) ? e->lost_why :
				 "the log moved under this head (an earlier batch came in late)");
			r = -EIO;
		}
	}
	/* the parts of a snapshot that did not go in (or went in late, superseded): for
	 * the next one to delete */
	if (r < 0 && b->full && e->garbage_count < GARBAGE_MAX)
		e->garbage[e->garbage_count++] = seq;
	/* a snapshot stands on its own: after the late batch, it is written again (once) */
	if (moved && b->full && !retried) {
		for (size_t g = 0; g < nolds; g++)
			free(olds[g]);
		nolds = 0;
		seq = e->next_seq++;
		moved = false;
		retried = true;
		r = 0;
		goto again;
	}
	if (unknown) {
		uint64_t now = 0;

		/* did it go in? The quorum may have answered nobody yet */
		if (read_number(e, "head", &now, why) == 0 && now == seq) {
			r = 0;
			unknown = false;
		}
	}
	if (r < 0) {
		if (r != -ENOMEM)
			snprintf(why, SCHED_REASON_MAX, "etcd %.100s at %.100s: %.200s%s", e->prefix,
				 fs_etcd_endpoint(e->e), ewhy,
				 unknown ? " (the batch may still be committed; the next write "
					   "is a snapshot)" : "");
		r = r == -ENOMEM ? r : -EIO;
		goto out;
	}
	e->head = seq;
	if (b->full) {
		e->snapshot = seq;
		e->snapshot_bytes = len;
		e->log_bytes = 0;
		e->garbage_count = 0;
		/* etcd's history before the snapshot, as kube-apiserver compacts: for the
		 * whole etcd cluster, not only this prefix (README: give ascendfs an etcd of
		 * its own); "compacted" already: a first try whose answer was lost */
		if (rev && fs_etcd_compact(e->e, rev, ewhy) < 0 && !strstr(ewhy, "compacted"))
			fs_log(e->ctx, 1, "etcd %s: compaction at revision %" PRId64 " failed: %s",
			       e->prefix, rev, ewhy);
	} else {
		e->log_bytes += len;
	}
	*ret_want_full = e->log_bytes > LOG_MIN_BYTES && e->log_bytes > e->snapshot_bytes;
out:
	for (size_t g = 0; g < nolds; g++)
		free(olds[g]);
	free(bytes);
	free(leader);
	free(head);
	free(snapshot);
	free(logdir);
	free(part_key);
	return r;
}

bool fs_store_etcd_lost(const struct fs_store_etcd *e)
{
	return atomic_load(&e->lost);
}
