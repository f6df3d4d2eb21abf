/* SPDX-License-Identifier: MIT */
/*
 * The durable state's parts, inside the daemon (fs.h has what the rest of it calls):
 *   fs_commit.c        the committer: what changed, collected under ctx->lock into a
 *                      batch, written by a backend without it; a request's wait for its
 *                      batch (fs_store_sync())
 *   fs_stage.c         uploads a close() accepted whose release has not come (staged)
 *   fs_store.c         the backend the configuration names: open, write, restore, close
 *   fs_store_sqlite.c  SQLite in a file (the default), and the restore from its tables
 *   fs_store_etcd.c    the batches as a log in an etcd cluster, written only while this
 *                      head holds the leader's lease (issue 21)
 *   fs_batch.c         a batch's memory, and its encoding for a log (fs_store_etcd.c)
 * Calls go one way: commit -> store -> {sqlite, etcd} -> batch -> stage. Not for use
 * outside fs/.
 */
#ifndef ASCEND_FS_STORE_H
#define ASCEND_FS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs.h"

/* ---- a batch: one consistent cut of what changed (collected under ctx->lock) ---- */

struct fs_batch_job {
	uint64_t serial;
	char name[CONF_NAME_MAX + 1];
	char state[24];		/* sched_job_state_name() */
	char *doc;		/* sched_job_save(), owned */
	uint64_t runs_from;	/* its saved history records numbered 1 to runs_from - 1
				 * were dropped (0: none) */
};

/* A closed history record of a job, written once (sched_job_run_save()). */
struct fs_batch_run {
	uint64_t serial, number;
	char *doc;
};

struct fs_batch_server {
	size_t index;		/* in the cluster (not kept by a log) */
	char name[CONF_NAME_MAX + 1];
	char *doc;
};

/* An event as a store writes it: strings, so that a log can carry a kind this ascendfs
 * does not know to the restore, which decides (sched_event_load()). */
struct fs_batch_event {
	uint64_t seq, time_usec;
	int npu;			/* -1: not about one NPU */
	const char *kind;		/* sched_event_kind_name(), or in @mem */
	const char *state;		/* a job state's name or NULL; static or in @mem */
	const char *job, *server;	/* "" when not about one */
	const char *reason;
	const char *line;		/* the JSON line, or NULL */
	char *mem;			/* owned: what the strings above point into */
};

struct fs_batch {
	uint64_t version;		/* the cluster version it was taken at */
	bool full;			/* every job, run, server and staged record: the
					 * tables are rewritten (after a failure), or with
					 * store->snapshot_events, a snapshot of everything */
	unsigned event_history;		/* events kept */
	struct fs_batch_job *jobs;
	size_t job_count;
	struct fs_batch_run *runs;
	size_t run_count, run_cap;
	uint64_t *removed;		/* serials of job records dropped */
	size_t removed_count;
	struct fs_batch_server *servers;
	size_t server_count;
	struct fs_batch_event *events;	/* seq ascending */
	size_t event_count;
	unsigned accounting_history;	/* accounting records kept */
	struct sched_acct *accts;	/* copies (line owned), seq ascending */
	size_t acct_count;
	char *meta;			/* sched_meta_save() */
	char clock[96];			/* fs_clock_mark_format() of when it was written
					 * ("" : the writer marks it now) */
	bool staged_all;		/* clear the staged table, then write staged_list */
	struct fs_staged *staged_list;	/* owned copies (or drops), written in order */
};

/* fs_batch_free() - free what @b holds and zero it. */
void fs_batch_free(struct fs_batch *b);

/*
 * fs_batch_encode() - @b as bytes (*@ret, malloc'ed, *@ret_len): a sequence of records,
 * each a tag and its fields as netstrings ("<length>:<bytes>,"; "~," for an absent
 * field), so any byte of a record survives. fs_batch_decode() - the batch back (fresh
 * @b, fs_batch_free() after; server indexes are 0); -EBADMSG with @why (SCHED_REASON_MAX)
 * naming the offset and what was expected when @data is not such a sequence, -EPROTO
 * when it is one of a format or with a kind of record this ascendfs does not know (a
 * newer one wrote it). Both may return -ENOMEM.
 */
int fs_batch_encode(const struct fs_batch *b, char **ret, size_t *ret_len);
int fs_batch_decode(const char *data, size_t len, struct fs_batch *b, char *why);

/* ---- staged uploads (fs_stage.c) ---- */

void fs_staged_free(struct fs_staged *s);
/* a copy of @s with its own body and groups, next NULL; NULL when out of memory */
struct fs_staged *fs_staged_copy(const struct fs_staged *s);
/* free ctx->stage_ops (the changes a batch has not taken) */
void fs_stage_ops_free(struct fs_ctx *ctx);

/* ---- the store: the committer's bookkeeping and the backend behind it ---- */

struct fs_sqlite;
struct fs_store_etcd;

struct fs_store {
	/* the committer's (fs_commit.c; the restore sets them), under ctx->lock */
	uint64_t collected_event_seq;	/* events up to here are in a batch */
	uint64_t written_event_seq;	/* ... and durable */
	uint64_t collected_acct_seq;	/* accounting records up to here are in a batch */
	uint64_t written_acct_seq;	/* ... and durable */
	char **server_docs;		/* what is durable per server (to skip heartbeats) */
	size_t server_count;
	bool resync;			/* a write failed (or the backend asks for it):
					 * the next batch is a full one */
	bool staged_later;		/* the restore leaves the staged uploads in st->sql,
					 * for fs_store_replay_staged() (a takeover, which
					 * restores into a cluster not yet the daemon's) */
	bool snapshot_events;		/* a full batch also holds every event and accounting
					 * record kept: the backend replaces everything
					 * with it (etcd's snapshot) */
	char *name;			/* the store, for messages: the SQLite file's path,
					 * or "etcd <prefix> at <endpoints>" */
	const char *aside_where;	/* where the restore sets aside the records it cannot
					 * read (--ignore-state-errors): "table unrestored" */
	char *aside_hint;		/* ... and how a person reads them there */
	char leader[1024];		/* cluster/leader (fs_store_leader()) */
	uint64_t since_usec;		/* ... its "since": the leadership taken (etcd), or
					 * the store opened (SQLite) */
	/* the backend: SQLite in a file; or etcd, with an SQLite copy in memory while the
	 * restore reads it (NULL after) */
	struct fs_sqlite *sql;
	struct fs_store_etcd *etcd;
};

/* fs_store_sqlite.c: SQLite in @path (":memory:" for a copy in memory, without the lock
 * file); @lock_dir NULL: no lock */
int fs_sqlite_open(const char *path, const char *lock_dir, struct fs_sqlite **ret,
		   char *why);
void fs_sqlite_close(struct fs_sqlite *q);
/* write @b in one transaction (its clock: b->clock, or now); 0 or -EIO with @why */
int fs_sqlite_write(struct fs_sqlite *q, const struct fs_batch *b, char *why);
/* the restore from st->sql (fs_store_restore()'s contract) */
int fs_sqlite_restore(struct fs_ctx *ctx, uint64_t now_usec, bool set_aside,
		      struct fs_restore_stats *stats, char *why);
/* the staged uploads in st->sql, applied to ctx->cluster as their release would have
 * (the restore's last step; takes ctx->lock); each counted in stats->staged. 0 or -EIO */
int fs_sqlite_replay_staged(struct fs_ctx *ctx, struct fs_restore_stats *stats, char *why);
/*
 * fs_sqlite_each_unrestored() - call @fn for each row of table unrestored whose id is
 * above @after (kind, key, doc and its length, reason, time). 0, the first nonzero
 * return of @fn, or -EIO (@why).
 */
int fs_sqlite_each_unrestored(struct fs_sqlite *q, int64_t after,
			      int (*fn)(void *arg, int64_t id, const char *kind,
					const char *key, const char *doc, size_t doc_len,
					const char *reason, int64_t time_usec),
			      void *arg, char *why);

/*
 * fs_store_etcd.c (its top comment has the keys and the protocol):
 * fs_store_etcd_connect() - a client of conf->etcd_servers for conf->etcd_prefix, with a
 * lease of conf->leader_lease_sec granted (the leadership not taken yet). -EIO (etcd
 * cannot be reached, or refused), -ENOMEM; @why (SCHED_REASON_MAX) says which and what
 * to do. @ctx only for fs_log().
 * fs_store_etcd_lead() - take the leader key with that lease, waiting up to @wait_msec
 * for another head's to end (UINT_MAX: as long as it takes, a standby that logs whom it
 * waits for and keeps its own lease alive), then renew it from a thread of its own.
 * While it waits (UINT_MAX) @tick, if given, is called about once a second with the
 * leader key's value ("" when none): a nonzero return stops the wait and is returned.
 * 0, -EBUSY (another head holds it), -EIO (etcd failed; the client may lead later),
 * -EALREADY (it leads), -ENOMEM, with @why.
 * fs_store_etcd_open() - both at once (fs_store_etcd_close() on failure).
 * fs_store_etcd_close() - stop renewing and revoke the lease (a standby need not wait).
 */
int fs_store_etcd_connect(const struct conf_cluster *conf, const struct fs_ctx *ctx,
			  struct fs_store_etcd **ret, char *why);
int fs_store_etcd_lead(struct fs_store_etcd *e, unsigned wait_msec,
		       int (*tick)(void *arg, const char *leader), void *arg, char *why);
int fs_store_etcd_open(const struct conf_cluster *conf, const struct fs_ctx *ctx,
		       unsigned wait_msec, struct fs_store_etcd **ret, char *why);
void fs_store_etcd_close(struct fs_store_etcd *e);
/*
 * fs_store_etcd_keeper_stop(), _start() - stop and start again the thread that renews
 * the lease (open starts it), around a fork (fuse_daemonize(): a thread does not
 * survive it). Start: 0 or -errno. Both no-ops for NULL.
 */
void fs_store_etcd_keeper_stop(struct fs_store_etcd *e);
int fs_store_etcd_keeper_start(struct fs_store_etcd *e);
/* the leader key's value: "<hostname> pid <pid>" (borrowed) */
const char *fs_store_etcd_identity(const struct fs_store_etcd *e);
/* has this head lost the leadership (its lease lapsed, or the key is another's)? */
bool fs_store_etcd_lost(const struct fs_store_etcd *e);
/* fs_store_etcd_on_lost() - call @fn(@arg) once when the leadership is lost (from the
 * thread that finds it; at once if it is lost already) */
void fs_store_etcd_on_lost(struct fs_store_etcd *e, void (*fn)(void *arg), void *arg);
/* when this head took the leadership: wall clock, microseconds */
uint64_t fs_store_etcd_since(const struct fs_store_etcd *e);
/*
 * fs_store_etcd_set_config() - this head's configuration fingerprint (@fingerprint,
 * fs_config_fingerprint(); copied), put in <prefix>config when it takes the leadership
 * and compared with the leader's while it stands by. Before fs_store_etcd_lead(); without
 * it (""), nothing is compared.
 * fs_store_etcd_config() - this head's fingerprint into @mine, and the leader's as this
 * head last read it into @leader: while it stands by, the leader's ("" when none was
 * read); once it leads, the previous leader's. Both FS_CONFIG_FINGERPRINT_LEN + 1 bytes.
 * Any thread.
 */
void fs_store_etcd_set_config(struct fs_store_etcd *e, const char *fingerprint);
void fs_store_etcd_config(struct fs_store_etcd *e, char *mine, char *leader);
/*
 * fs_store_etcd_load() - the snapshot, then each log entry after it up to `head`, in
 * order, to @apply (a nonzero return stops and is returned). *@ret_untidy: parts of no
 * use were seen (a batch whose last Txn failed, an old snapshot): the next write should
 * be a snapshot. -EBADMSG (a committed entry missing or damaged; @why names it), -EPROTO
 * (one a newer ascendfs wrote), -EIO (etcd), -ENOMEM.
 */
int fs_store_etcd_load(struct fs_store_etcd *e,
		       int (*apply)(void *arg, const struct fs_batch *b, char *why), void *arg,
		       bool *ret_untidy, char *why);
/*
 * A standby's copy of what the leader wrote: its snapshot and each committed log entry
 * after it, as bytes. It makes the takeover's fs_store_etcd_load() read only the rest,
 * and the standby's view is built from it.
 * fs_store_etcd_refresh() - read what is new in etcd into the copy (the thread that
 * waits to lead). 0, -EBUSY (a view is being built from it: later), -EIO (etcd did not
 * answer; the copy stands), -EAGAIN (the leader replaced its snapshot while it was
 * read: the copy is dropped, to be read again), -ENOMEM.
 * fs_store_etcd_view() - the copy, entry by entry in order, to @apply (any thread);
 * *@ret_seq is the last entry's (0: etcd held nothing). When that is @after (UINT64_MAX:
 * never the case) nothing is applied and 1 is returned; @apply NULL applies nothing
 * (0: there is something new). 0, 1, -EAGAIN (no copy yet),
 * -EBADMSG or -EPROTO (an entry that cannot be decoded), -ENOMEM, or @apply's nonzero
 * return; @why says which.
 */
int fs_store_etcd_refresh(struct fs_store_etcd *e);
int fs_store_etcd_view(struct fs_store_etcd *e, uint64_t after,
		       int (*apply)(void *arg, const struct fs_batch *b, char *why), void *arg,
		       uint64_t *ret_seq, char *why);
/* fs_store_etcd_set_aside() - keep a record the restore could not read under
 * P unrestored/ (while this head leads). 0, -EIO, -ENOMEM. */
int fs_store_etcd_set_aside(struct fs_store_etcd *e, int64_t id, const char *kind,
			    const char *key, const char *doc, size_t doc_len, const char *reason,
			    int64_t time_usec, char *why);
/*
 * fs_store_etcd_write() - commit @b (b->full: as a snapshot) by the quorum, only while
 * this head leads. 0, or -EIO with @why (no quorum within the timeouts: the batch may
 * still be committed; the leadership lost; the log moved), -ENOMEM. *@ret_want_full: the
 * log since the snapshot has grown past it: the next batch should be a full one.
 */
int fs_store_etcd_write(struct fs_store_etcd *e, const struct fs_batch *b, bool *ret_want_full,
			char *why);

/* fs_store.c: the backend's write of one batch (the committer's only call into it) */
int fs_store_write(struct fs_store *st, const struct fs_batch *b, char *why);
/* the backend's own threads, stopped and started with the committer's (fs_store_stop(),
 * fs_store_start(): around a fork); start: 0 or -errno */
void fs_store_pause(struct fs_store *st);
int fs_store_resume(struct fs_store *st);

#endif
