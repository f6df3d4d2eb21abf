/* SPDX-License-Identifier: MIT */
/*
 * The SQLite backend: the durable state in <state-dir>/ascendfs.db, WAL mode,
 * synchronous=FULL, one transaction per batch of the committer (fs_commit.c); and the
 * restore, which reads these tables. The etcd backend (fs_store_etcd.c) replays its log
 * into an in-memory database of the same schema and is restored by the same code
 * (fs_store.c), so a record is read one way whatever kept it.
 *
 * Schema (version 3). Version 1 had the tables but job_runs, and job records of format 1
 * only; version 2 the same tables with records of format 2; both still load. Such a store
 * is made version 3 (job_runs added) by its first write, so an older ascendfs refuses it
 * rather than drop what it cannot read; a start that fails before writing leaves it as
 * it was:
 *   meta(key PRIMARY KEY, value)       "schema" -> "3", "cluster" -> sched_meta_save(),
 *                                      "clock" -> fs_clock_mark_format() (each write)
 *   jobs(serial PRIMARY KEY, name, state, doc)   one row per job record
 *   job_runs(serial, run, doc, PRIMARY KEY (serial, run))   a job's closed history
 *          records (sched_job_run_save()), each written once; its record holds only
 *          the open one, so a change of a job does not rewrite every generation it ran
 *   servers(name PRIMARY KEY, doc)
 *   events(seq PRIMARY KEY, time_usec, kind, job, server, npu, state, reason, line),
 *          the newest conf event_history kept
 *   accounting(seq PRIMARY KEY, time_usec, job, line)   a record per job that ended
 *          (struct sched_acct), the newest conf accounting_history kept; made by any
 *          start (an older ascendfs leaves the table alone)
 *   staged(kind, key, ext, uid, gid, groups, body, PRIMARY KEY (kind, key))
 *   unrestored(id PRIMARY KEY, kind, key, doc, reason, time_usec)   records the restore
 *          could not read, set aside by --ignore-state-errors (made then; never
 *          deleted by the daemon, and an ascendfs that knows no such table ignores it)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fs_store.h"

#define SCHEMA_VERSION "3"

struct fs_sqlite {
	sqlite3 *db;
	char *path;
	int lock_fd;
	sqlite3_stmt *put_acct, *trim_acct;
	sqlite3_stmt *put_job, *del_job, *put_server, *put_event, *trim_events, *put_meta,
		*put_staged, *del_staged, *clear_staged, *clear_jobs;
	/* job_runs: prepared once the table exists (runs_prepare()) */
	sqlite3_stmt *put_run, *del_runs, *trim_runs, *clear_runs;
	bool mark_schema;		/* a version 1 or 2 store: the next write makes
					 * job_runs and marks it 3 */
};

/* ---- SQL helpers ---- */

static int sql_err(struct fs_sqlite *sq, const char *what, char *why)
{
	if (why)
		snprintf(why, SCHED_REASON_MAX, "state store %s: %s: %s", sq->path, what,
			 sqlite3_errmsg(sq->db));
	return -EIO;
}

static int exec(struct fs_sqlite *sq, const char *sql, char *why)
{
	char *msg = NULL;

	if (sqlite3_exec(sq->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		if (why)
			snprintf(why, SCHED_REASON_MAX, "state store %s: %s", sq->path,
				 msg ? msg : sqlite3_errmsg(sq->db));
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

static int prepare(struct fs_sqlite *sq, sqlite3_stmt **s, const char *sql, char *why)
{
	if (sqlite3_prepare_v3(sq->db, sql, -1, SQLITE_PREPARE_PERSISTENT, s, NULL) != SQLITE_OK)
		return sql_err(sq, "prepare", why);
	return 0;
}

/* Run a prepared statement whose parameters are bound; reset it for the next use. */
static int step_done(sqlite3_stmt *s)
{
	int r = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return r == SQLITE_DONE ? 0 : -EIO;
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
	if (t)
		sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

/* ---- open / close ---- */

void fs_sqlite_close(struct fs_sqlite *sq)
{
	if (!sq)
		return;
	sqlite3_finalize(sq->put_job);
	sqlite3_finalize(sq->del_job);
	sqlite3_finalize(sq->put_server);
	sqlite3_finalize(sq->put_event);
	sqlite3_finalize(sq->put_acct);
	sqlite3_finalize(sq->trim_acct);
	sqlite3_finalize(sq->trim_events);
	sqlite3_finalize(sq->put_meta);
	sqlite3_finalize(sq->put_staged);
	sqlite3_finalize(sq->del_staged);
	sqlite3_finalize(sq->clear_staged);
	sqlite3_finalize(sq->clear_jobs);
	sqlite3_finalize(sq->put_run);
	sqlite3_finalize(sq->del_runs);
	sqlite3_finalize(sq->trim_runs);
	sqlite3_finalize(sq->clear_runs);
	sqlite3_close(sq->db);
	if (sq->lock_fd >= 0)
		close(sq->lock_fd);
	free(sq->path);
	free(sq);
}

/* Make the table of closed history records (schema 3) and its statements. 0 or -EIO. */
static int runs_prepare(struct fs_sqlite *sq, char *why)
{
	int r = exec(sq, "CREATE TABLE IF NOT EXISTS job_runs(serial INTEGER NOT NULL, run "
			 "INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (serial, run)) WITHOUT "
			 "ROWID", why);

	if (r == 0 && !sq->put_run)
		r = prepare(sq, &sq->put_run, "INSERT OR REPLACE INTO job_runs VALUES (?1, ?2, ?3)",
			    why);
	if (r == 0 && !sq->del_runs)
		r = prepare(sq, &sq->del_runs, "DELETE FROM job_runs WHERE serial = ?1", why);
	if (r == 0 && !sq->trim_runs)
		r = prepare(sq, &sq->trim_runs,
			    "DELETE FROM job_runs WHERE serial = ?1 AND run > 0 AND run < ?2", why);
	if (r == 0 && !sq->clear_runs)
		r = prepare(sq, &sq->clear_runs, "DELETE FROM job_runs", why);
	return r;
}

int fs_sqlite_open(const char *path, const char *lock_dir, struct fs_sqlite **ret,
		   char *why)
{
	struct fs_sqlite *sq = calloc(1, sizeof(*sq));
	char lock_path[4096], schema[16] = "";
	sqlite3_stmt *q = NULL;
	int r;

	if (!sq)
		return -ENOMEM;
	sq->lock_fd = -1;
	sq->path = strdup(path);
	if (!sq->path) {
		fs_sqlite_close(sq);
		return -ENOMEM;
	}
	/* one daemon per state directory: a second would interleave its writes */
	if (lock_dir) {
		snprintf(lock_path, sizeof(lock_path), "%s/ascendfs.lock", lock_dir);
		sq->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	}
	if (lock_dir && (sq->lock_fd < 0 || flock(sq->lock_fd, LOCK_EX | LOCK_NB) < 0)) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(why, SCHED_REASON_MAX,
			 r == -EBUSY ? "state directory %s is in use by another ascendfs; stop "
				       "it, or give this one its own --state-dir"
				     : "state directory %s: cannot create its lock file: %s",
			 lock_dir, strerror(-r));
		fs_sqlite_close(sq);
		return r;
	}
	if (sqlite3_open_v2(sq->path, &sq->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		r = sql_err(sq, "open", why);
		fs_sqlite_close(sq);
		return r;
	}
	sqlite3_busy_timeout(sq->db, 5000);
	/* WAL: readers of the file (sqlite3 CLI, backups) never block the daemon; FULL:
	 * each commit is fsync'ed before the request that made it returns */
	/* cache_size: SQLite's own page cache (2 MiB by default) is resident for the life
	 * of the daemon, while the file's pages stay in the kernel's cache anyway; a batch
	 * touches few pages, and the restore reads the tables once (issue 16: memory) */
	r = exec(sq, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA cache_size=-256;"
		     "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
		     "CREATE TABLE IF NOT EXISTS jobs(serial INTEGER PRIMARY KEY, name TEXT NOT "
		     "NULL, state TEXT NOT NULL, doc TEXT NOT NULL);"
		     "CREATE TABLE IF NOT EXISTS servers(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
		     "CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY, time_usec "
		     "INTEGER NOT NULL, kind TEXT NOT NULL, job TEXT, server TEXT, npu INTEGER "
		     "NOT NULL, state TEXT, reason TEXT NOT NULL, line TEXT);"
		     "CREATE TABLE IF NOT EXISTS accounting(seq INTEGER PRIMARY KEY, time_usec "
		     "INTEGER NOT NULL, job TEXT NOT NULL, line TEXT NOT NULL);"
		     "CREATE TABLE IF NOT EXISTS staged(kind TEXT NOT NULL, key TEXT NOT NULL, "
		     "ext TEXT NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL, groups TEXT "
		     "NOT NULL, body BLOB NOT NULL, PRIMARY KEY (kind, key));"
		     "INSERT OR IGNORE INTO meta VALUES ('schema', '" SCHEMA_VERSION "');",
		 why);
	if (r == 0)
		r = prepare(sq, &q, "SELECT value FROM meta WHERE key = 'schema'", why);
	if (r == 0 && sqlite3_step(q) == SQLITE_ROW)
		snprintf(schema, sizeof(schema), "%s", (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	/* marked with the first write (fs_sqlite_write()), which may leave a closed history
	 * record out of its job's record: a start that fails before leaves the store as it
	 * was */
	if (r == 0 && (strcmp(schema, "1") == 0 || strcmp(schema, "2") == 0)) {
		sq->mark_schema = true;
		snprintf(schema, sizeof(schema), "%s", SCHEMA_VERSION);
	}
	if (r == 0 && strcmp(schema, SCHEMA_VERSION) != 0) {
		snprintf(why, SCHED_REASON_MAX,
			 "state store %s has schema version %s; this ascendfs reads versions 1 "
			 "to " SCHEMA_VERSION " (use the ascendfs that wrote it, or move the file "
			 "away to start empty)", sq->path, schema);
		r = -EPROTO;
	}
	/* a new store, or one of schema 3 */
	if (r == 0 && !sq->mark_schema)
		r = runs_prepare(sq, why);
	if (r == 0)
		r = prepare(sq, &sq->put_job,
			    "INSERT OR REPLACE INTO jobs VALUES (?1, ?2, ?3, ?4)", why);
	if (r == 0)
		r = prepare(sq, &sq->del_job, "DELETE FROM jobs WHERE serial = ?1", why);
	if (r == 0)
		r = prepare(sq, &sq->clear_jobs, "DELETE FROM jobs", why);
	if (r == 0)
		r = prepare(sq, &sq->put_server, "INSERT OR REPLACE INTO servers VALUES (?1, ?2)",
			    why);
	if (r == 0)
		r = prepare(sq, &sq->put_event,
			    "INSERT OR REPLACE INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
			    why);
	if (r == 0)
		r = prepare(sq, &sq->trim_events, "DELETE FROM events WHERE seq <= ?1", why);
	if (r == 0)
		r = prepare(sq, &sq->put_acct,
			    "INSERT OR REPLACE INTO accounting VALUES (?1, ?2, ?3, ?4)", why);
	if (r == 0)
		r = prepare(sq, &sq->trim_acct, "DELETE FROM accounting WHERE seq <= ?1", why);
	if (r == 0)
		r = prepare(sq, &sq->put_meta, "INSERT OR REPLACE INTO meta VALUES (?1, ?2)", why);
	if (r == 0)
		r = prepare(sq, &sq->put_staged,
			    "INSERT OR REPLACE INTO staged VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", why);
	if (r == 0)
		r = prepare(sq, &sq->del_staged, "DELETE FROM staged WHERE kind = ?1 AND key = ?2",
			    why);
	if (r == 0)
		r = prepare(sq, &sq->clear_staged, "DELETE FROM staged", why);
	if (r < 0) {
		fs_sqlite_close(sq);
		return r;
	}
	*ret = sq;
	return 0;
}
int fs_sqlite_write(struct fs_sqlite *sq, const struct fs_batch *b, char *why)
{
	struct fs_clock_mark mark;
	char clock[96];
	int r = exec(sq, "BEGIN IMMEDIATE", why);

	if (r < 0)
		return r;
	if (sq->mark_schema &&
	    (runs_prepare(sq, why) < 0 ||
	     exec(sq, "UPDATE meta SET value = '" SCHEMA_VERSION "' WHERE key = 'schema'", why) < 0))
		goto rollback;
	if (b->full && (step_done(sq->clear_jobs) < 0 || step_done(sq->clear_runs) < 0))
		goto fail;
	for (size_t i = 0; i < b->job_count; i++) {
		const struct fs_batch_job *j = &b->jobs[i];

		sqlite3_bind_int64(sq->put_job, 1, (sqlite3_int64)j->serial);
		bind_text(sq->put_job, 2, j->name);
		bind_text(sq->put_job, 3, j->state);
		bind_text(sq->put_job, 4, j->doc);
		if (step_done(sq->put_job) < 0)
			goto fail;
		if (!j->runs_from || b->full)
			continue;
		sqlite3_bind_int64(sq->trim_runs, 1, (sqlite3_int64)j->serial);
		sqlite3_bind_int64(sq->trim_runs, 2, (sqlite3_int64)j->runs_from);
		if (step_done(sq->trim_runs) < 0)
			goto fail;
	}
	for (size_t i = 0; i < b->run_count; i++) {
		const struct fs_batch_run *run = &b->runs[i];

		sqlite3_bind_int64(sq->put_run, 1, (sqlite3_int64)run->serial);
		sqlite3_bind_int64(sq->put_run, 2, (sqlite3_int64)run->number);
		bind_text(sq->put_run, 3, run->doc);
		if (step_done(sq->put_run) < 0)
			goto fail;
	}
	for (size_t i = 0; i < b->removed_count; i++) {
		sqlite3_bind_int64(sq->del_job, 1, (sqlite3_int64)b->removed[i]);
		sqlite3_bind_int64(sq->del_runs, 1, (sqlite3_int64)b->removed[i]);
		if (step_done(sq->del_job) < 0 || step_done(sq->del_runs) < 0)
			goto fail;
	}
	for (size_t i = 0; i < b->server_count; i++) {
		bind_text(sq->put_server, 1, b->servers[i].name);
		bind_text(sq->put_server, 2, b->servers[i].doc);
		if (step_done(sq->put_server) < 0)
			goto fail;
	}
	for (size_t i = 0; i < b->event_count; i++) {
		const struct fs_batch_event *e = &b->events[i];

		sqlite3_bind_int64(sq->put_event, 1, (sqlite3_int64)e->seq);
		sqlite3_bind_int64(sq->put_event, 2, (sqlite3_int64)e->time_usec);
		bind_text(sq->put_event, 3, e->kind);
		bind_text(sq->put_event, 4, e->job[0] ? e->job : NULL);
		bind_text(sq->put_event, 5, e->server[0] ? e->server : NULL);
		sqlite3_bind_int(sq->put_event, 6, e->npu);
		bind_text(sq->put_event, 7, e->state);
		bind_text(sq->put_event, 8, e->reason);
		bind_text(sq->put_event, 9, e->line);
		if (step_done(sq->put_event) < 0)
			goto fail;
	}
	if (b->event_count) {
		uint64_t last = b->events[b->event_count - 1].seq;

		/* the history is bounded like the in-memory ring; the sequence goes on */
		if (last > b->event_history) {
			sqlite3_bind_int64(sq->trim_events, 1,
					   (sqlite3_int64)(last - b->event_history));
			if (step_done(sq->trim_events) < 0)
				goto fail;
		}
	}
	for (size_t i = 0; i < b->acct_count; i++) {
		const struct sched_acct *a = &b->accts[i];

		sqlite3_bind_int64(sq->put_acct, 1, (sqlite3_int64)a->seq);
		sqlite3_bind_int64(sq->put_acct, 2, (sqlite3_int64)a->time_usec);
		bind_text(sq->put_acct, 3, a->job);
		bind_text(sq->put_acct, 4, a->line);
		if (step_done(sq->put_acct) < 0)
			goto fail;
	}
	if (b->acct_count) {
		uint64_t last = b->accts[b->acct_count - 1].seq;

		/* bounded like the in-memory ring */
		if (last > b->accounting_history) {
			sqlite3_bind_int64(sq->trim_acct, 1,
					   (sqlite3_int64)(last - b->accounting_history));
			if (step_done(sq->trim_acct) < 0)
				goto fail;
		}
	}
	bind_text(sq->put_meta, 1, "cluster");
	bind_text(sq->put_meta, 2, b->meta);
	if (step_done(sq->put_meta) < 0)
		goto fail;
	/* where the next daemon measures its downtime from (fs_clock.c): when the batch
	 * was written (a log's batch replayed carries its own) */
	fs_clock_mark_now(&mark);
	if (b->clock[0])
		snprintf(clock, sizeof(clock), "%s", b->clock);
	if (b->clock[0] || fs_clock_mark_format(&mark, clock, sizeof(clock)) == 0) {
		bind_text(sq->put_meta, 1, "clock");
		bind_text(sq->put_meta, 2, clock);
		if (step_done(sq->put_meta) < 0)
			goto fail;
	}
	if (b->staged_all && step_done(sq->clear_staged) < 0)
		goto fail;
	for (const struct fs_staged *s = b->staged_list; s; s = s->next) {
		char groups[1024] = "";
		size_t off = 0;

		if (s->drop) {
			bind_text(sq->del_staged, 1, s->kind);
			bind_text(sq->del_staged, 2, s->key);
			if (step_done(sq->del_staged) < 0)
				goto fail;
			continue;
		}
		for (size_t i = 0; i < s->group_count && off + 12 < sizeof(groups); i++)
			off += (size_t)snprintf(groups + off, sizeof(groups) - off, "%s%u",
						i ? " " : "", (unsigned)s->groups[i]);
		bind_text(sq->put_staged, 1, s->kind);
		bind_text(sq->put_staged, 2, s->key);
		bind_text(sq->put_staged, 3, s->ext);
		sqlite3_bind_int64(sq->put_staged, 4, s->uid);
		sqlite3_bind_int64(sq->put_staged, 5, s->gid);
		bind_text(sq->put_staged, 6, groups);
		sqlite3_bind_blob(sq->put_staged, 7, s->body, (int)s->len, SQLITE_STATIC);
		if (step_done(sq->put_staged) < 0)
			goto fail;
	}
	r = exec(sq, "COMMIT", why);
	if (r < 0)
		goto rollback;
	sq->mark_schema = false;
	return 0;

fail:
	sql_err(sq, "write", why);
rollback:
	exec(sq, "ROLLBACK", NULL);
	return -EIO;
}
/* ---- restore ---- */

static double msec_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static const char *col_text(sqlite3_stmt *q, int i)
{
	return (const char *)sqlite3_column_text(q, i);
}

/*
 * The saved run times and deadlines count the downtime since the previous daemon's last
 * write, not a step of the wall clock (issue 15 item 11). A store written before the
 * mark existed moves nothing (sched_job_load() still bounds what it restores).
 */
static int restore_clock(struct fs_ctx *ctx, char *why)
{
	struct fs_store *st = ctx->store;
	struct fs_clock_mark saved, now;
	sqlite3_stmt *q = NULL;
	uint64_t down;
	bool measured;
	int64_t shift;
	int r = prepare(st->sql, &q, "SELECT value FROM meta WHERE key = 'clock'", why);

	if (r < 0)
		return r;
	if (sqlite3_step(q) != SQLITE_ROW) {
		sqlite3_finalize(q);
		return 0;
	}
	if (fs_clock_mark_parse(col_text(q, 0), &saved) < 0) {
		fs_log(ctx, 1, "state store: its clock mark is malformed; run times and "
			       "deadlines are restored as the wall clock reads them");
		sqlite3_finalize(q);
		return 0;
	}
	sqlite3_finalize(q);
	/* the daemon's clock and CLOCK_BOOTTIME of one instant: reading the store since
	 * the restore's now took seconds with 100,000 records on etcd, and counting those as a step
	 * of the wall clock moved every run time back by them and rewrote every record */
	fs_clock_mark_now(&now);
	shift = fs_clock_restart_shift(&saved, &now, &down, &measured);
	fs_log(ctx, 2, "restore: down %.1f s since the last write (%s)", (double)down / 1e6,
	       measured ? "CLOCK_BOOTTIME" : "the wall clock, another boot");
	/* under a second is NTP slewing between the clocks, not a step: nothing moves */
	if (shift <= 1000000 && shift >= -1000000)
		return 0;
	fs_log(ctx, 1, "restore: the wall clock moved %+.1f s more than the %.1f s of downtime "
		       "(at most %u s counts across a reboot); run times and deadlines count the "
		       "downtime only",
	       (double)shift / 1e6, (double)down / 1e6, FS_RESTART_DOWNTIME_MAX_SEC);
	sched_restore_shift(ctx->cluster, shift);
	/* every record is read on this daemon's clock now: the first write rewrites them
	 * all, with the mark of this clock (a record left as it was would be moved again
	 * by the next restart) */
	st->resync = true;
	return 0;
}

/* Records read at once, then decoded on every core (fs_decode.c) and loaded in order. */
#define RESTORE_CHUNK 2048

/*
 * The records the restore could not read (a loader's bug, a hand edit, a record of a
 * newer ascendfs under the same schema). None is ever deleted: without
 * --ignore-state-errors the restore fails and changes nothing; with it each is moved,
 * as it was, to the table "unrestored" (created then), and the daemon starts without
 * them. A server no longer in the inventory is not one of them (its row is left).
 */
struct unreadable {
	struct unreadable_record {
		const char *kind;	/* "job" (key: the serial, name: the job's; its
					 * history records go with it), "server" (key: its
					 * name), "meta" (key "cluster": sequences, counters,
					 * quotas set at run time), "staged" (key: its kind,
					 * name: its key), or "job_run" (a history record;
					 * key "<serial> <run>", name: the job's) */
		char *key, *name, *reason;
	} *list;
	size_t count, cap;
};

static int unreadable_add(struct unreadable *u, const char *kind, const char *key,
			  const char *name, const char *reason)
{
	struct unreadable_record *rec;

	if (u->count == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 8;
		struct unreadable_record *n = realloc(u->list, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		u->list = n;
		u->cap = cap;
	}
	rec = &u->list[u->count];
	rec->kind = kind;
	rec->key = strdup(key);
	rec->name = strdup(name ? name : "");
	rec->reason = strdup(reason);
	if (!rec->key || !rec->name || !rec->reason) {
		free(rec->key);
		free(rec->name);
		free(rec->reason);
		return -ENOMEM;
	}
	u->count++;
	return 0;
}

static void unreadable_free(struct unreadable *u)
{
	for (size_t i = 0; i < u->count; i++) {
		free(u->list[i].key);
		free(u->list[i].name);
		free(u->list[i].reason);
	}
	free(u->list);
}

/* "the record of job keep (serial 3)", "the record of server a2-node-02", ... */
static void unreadable_what(const struct unreadable_record *rec, char *buf, size_t len)
{
	if (strcmp(rec->kind, "job") == 0)
		snprintf(buf, len, "the record of job %s (serial %s)", rec->name, rec->key);
	else if (strcmp(rec->kind, "server") == 0)
		snprintf(buf, len, "the record of server %s", rec->key);
	else if (strcmp(rec->kind, "staged") == 0)
		snprintf(buf, len, "the staged upload (%.16s, %.80s)", rec->key, rec->name);
	else if (strcmp(rec->kind, "job_run") == 0)
		snprintf(buf, len, "history record %s of job %s (serial %.*s)",
			 strchr(rec->key, ' ') ? strchr(rec->key, ' ') + 1 : rec->key, rec->name,
			 (int)strcspn(rec->key, " "), rec->key);
	else
		snprintf(buf, len, "the cluster record (sequences, counters, quotas set at run "
			 "time)");
}

/* Move every record of @u out of its table into "unrestored" (in the restore's
 * transaction: it is durable only if the restore is). 0 or -EIO (@why). */
static int unreadable_set_aside(struct fs_store *st, const struct unreadable *u,
				uint64_t now_usec, char *why)
{
	/* per kind: copy, delete; a job's history records go with it (?1: the serial or
	 * name, ?4: the staged key or the history record's number) */
	static const struct {
		const char *kind, *sql[4];
	} moves[] = {
		{ "job",
		  { "INSERT INTO unrestored(kind, key, doc, reason, time_usec) SELECT 'job', "
		    "serial, doc, ?2, ?3 FROM jobs WHERE serial = ?1",
		    "DELETE FROM jobs WHERE serial = ?1",
		    "INSERT INTO unrestored(kind, key, doc, reason, time_usec) SELECT 'job_run', "
		    "serial || ' ' || run, doc, ?2, ?3 FROM job_runs WHERE serial = ?1 ORDER BY run",
		    "DELETE FROM job_runs WHERE serial = ?1" } },
		{ "server",
		  { "INSERT INTO unrestored(kind, key, doc, reason, time_usec) SELECT 'server', "
		    "name, doc, ?2, ?3 FROM servers WHERE name = ?1",
		    "DELETE FROM servers WHERE name = ?1" } },
		{ "meta",
		  { "INSERT INTO unrestored(kind, key, doc, reason, time_usec) SELECT 'meta', "
		    "key, value, ?2, ?3 FROM meta WHERE key = ?1",
		    "DELETE FROM meta WHERE key = ?1" } },
		/* the body as it was (a BLOB stays one); key: "<kind> <key>" */
		{ "staged",
		  { "INSERT INTO unrestored(kind, key, doc, reason, time_usec) SELECT 'staged', "
		    "kind || ' ' || key, body, ?2, ?3 FROM staged WHERE kind = ?1 AND key = ?4",
		    "DELETE FROM staged WHERE kind = ?1 AND key = ?4" } },
		{ "job_run",
		  { "INSERT INTO unrestored(kind, key, doc, reason, time_usec) SELECT 'job_run', "
		    "serial || ' ' || run, doc, ?2, ?3 FROM job_runs WHERE serial = ?1 AND run = ?4",
		    "DELETE FROM job_runs WHERE serial = ?1 AND run = ?4" } },
	};
	int r = exec(st->sql, "CREATE TABLE IF NOT EXISTS unrestored(id INTEGER PRIMARY KEY, kind "
			 "TEXT NOT NULL, key TEXT NOT NULL, doc TEXT NOT NULL, reason TEXT NOT "
			 "NULL, time_usec INTEGER NOT NULL)", why);

	for (size_t i = 0; r == 0 && i < u->count; i++) {
		const struct unreadable_record *rec = &u->list[i];
		size_t k = 0;

		while (k + 1 < sizeof(moves) / sizeof(moves[0]) && strcmp(rec->kind, moves[k].kind))
			k++;
		/* a store of schema 1 or 2 has no job_runs yet */
		for (int step = 0; r == 0 && step < (st->sql->mark_schema ? 2 : 4) && moves[k].sql[step];
		     step++) {
			sqlite3_stmt *q = NULL;
			bool by_serial = strcmp(moves[k].kind, "job") == 0 ||
					 strcmp(moves[k].kind, "job_run") == 0;
			const char *run = strchr(rec->key, ' ');

			r = prepare(st->sql, &q, moves[k].sql[step], why);
			if (r < 0)
				break;
			if (by_serial)
				sqlite3_bind_int64(q, 1, strtoll(rec->key, NULL, 10));
			else
				bind_text(q, 1, rec->key);
			if (strcmp(moves[k].kind, "staged") == 0)
				bind_text(q, 4, rec->name);
			else if (strcmp(moves[k].kind, "job_run") == 0)
				sqlite3_bind_int64(q, 4, run ? strtoll(run + 1, NULL, 10) : -1);
			if (step % 2 == 0) {
				bind_text(q, 2, rec->reason);
				sqlite3_bind_int64(q, 3, (sqlite3_int64)now_usec);
			}
			if (sqlite3_step(q) != SQLITE_DONE)
				r = sql_err(st->sql, "set an unreadable record aside", why);
			sqlite3_finalize(q);
		}
	}
	return r;
}

static void slots_clear(struct fs_decode_slot *slots, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(slots[i].text);
		sched_job_decoded_free(slots[i].decoded);
		slots[i].text = NULL;
		slots[i].decoded = NULL;
	}
}

/*
 * The job rows of @q (serial, doc, the count of all rows, name) loaded in serial order;
 * *ret_rows: the count. Records that do not load are logged and listed in @bad. 0,
 * -ENOMEM, or -EIO (SQLite, with @why).
 */
static int restore_jobs(struct fs_ctx *ctx, sqlite3_stmt *q, uint64_t now_usec,
			struct fs_restore_stats *stats, struct unreadable *bad, int level,
			size_t *ret_rows, char *why)
{
	struct fs_store *st = ctx->store;
	struct sched_cluster *c = ctx->cluster;
	struct fs_decode_slot *slots = calloc(RESTORE_CHUNK, sizeof(*slots));
	unsigned threads = fs_decode_threads();
	int rc = SQLITE_ROW, r = 0;
	bool first = true;

	if (!slots)
		return -ENOMEM;
	while (rc == SQLITE_ROW) {
		size_t n = 0;

		while (n < RESTORE_CHUNK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
			struct fs_decode_slot *sl = &slots[n++];

			if (first)
				*ret_rows = (size_t)sqlite3_column_int64(q, 2);
			first = false;
			sl->serial = sqlite3_column_int64(q, 0);
			/* the whole column, NULs and all: the decoder is given its length */
			sl->len = (size_t)sqlite3_column_bytes(q, 1);
			/* no text: SQLite is out of memory */
			sl->text = col_text(q, 1) ? malloc(sl->len + 1) : NULL;
			if (!sl->text) {
				r = -ENOMEM;
				goto out;
			}
			memcpy(sl->text, col_text(q, 1), sl->len);
			sl->text[sl->len] = '\0';
			snprintf(sl->name, sizeof(sl->name), "%s",
				 col_text(q, 3) ? col_text(q, 3) : "");
		}
		fs_decode_jobs(slots, n, n >= 64 ? threads : 1);
		for (size_t i = 0; i < n; i++) {
			struct fs_decode_slot *sl = &slots[i];

			r = sl->r;
			if (r == 0) {
				r = sched_job_load_decoded(c, sl->decoded, now_usec, sl->reason);
				sl->decoded = NULL;
			}
			if (r == -ENOMEM)
				goto out;
			if (r < 0) {
				char key[24], what[SCHED_REASON_MAX];

				snprintf(key, sizeof(key), "%lld", (long long)sl->serial);
				if (unreadable_add(bad, "job", key, sl->name, sl->reason) < 0) {
					r = -ENOMEM;
					goto out;
				}
				unreadable_what(&bad->list[bad->count - 1], what, sizeof(what));
				fs_log(ctx, level, "state store %s: %s cannot be restored: %s",
				       st->name, what, sl->reason);
				stats->set_aside++;
				r = 0;
				continue;
			}
			stats->jobs++;
			if (!sched_job_state_is_terminal(c->jobs[c->job_count - 1]->state))
				stats->active++;
		}
		slots_clear(slots, n);
	}
	if (rc != SQLITE_DONE)
		r = sql_err(st->sql, "read jobs", why);
out:
	slots_clear(slots, RESTORE_CHUNK);
	free(slots);
	return r;
}

/* Is the job of @serial among the records of @bad (moved aside with its history)? */
static bool unreadable_has_job(const struct unreadable *bad, uint64_t serial)
{
	for (size_t i = 0; i < bad->count; i++)
		if (strcmp(bad->list[i].kind, "job") == 0 &&
		    strtoull(bad->list[i].key, NULL, 10) == serial)
			return true;
	return false;
}

/*
 * The closed history records kept apart from their jobs' records (schema 3), after the
 * jobs are loaded: each into its job (sched_job_run_load()). A record that does not
 * load is logged and listed in @bad; the records of a job that is itself in @bad go
 * with it; those of a job record not restored (an older record of a resubmitted name)
 * are counted in *@ret_orphans, for the first write to drop. 0, -ENOMEM, or -EIO (@why).
 */
static int restore_runs(struct fs_ctx *ctx, struct fs_restore_stats *stats,
			struct unreadable *bad, int level, size_t *ret_orphans, char *why)
{
	struct fs_store *st = ctx->store;
	sqlite3_stmt *q = NULL;
	int rc, r = prepare(st->sql, &q,
			    "SELECT r.serial, r.run, r.doc, j.name FROM job_runs r LEFT JOIN jobs j "
			    "ON j.serial = r.serial ORDER BY r.serial, r.run", why);

	*ret_orphans = 0;
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		uint64_t serial = (uint64_t)sqlite3_column_int64(q, 0);
		const char *name = col_text(q, 3);
		struct sched_job *j = name ? sched_cluster_find_job(ctx->cluster, name) : NULL;
		char reason[SCHED_REASON_MAX], key[48], what[SCHED_REASON_MAX];

		if (!j || j->serial != serial) {
			if (!unreadable_has_job(bad, serial))
				(*ret_orphans)++;
			continue;
		}
		r = sched_job_run_load(j, col_text(q, 2), (size_t)sqlite3_column_bytes(q, 2),
				       reason);
		if (r == -ENOMEM)
			break;
		if (r == 0)
			continue;
		r = 0;
		snprintf(key, sizeof(key), "%llu %lld", (unsigned long long)serial,
			 (long long)sqlite3_column_int64(q, 1));
		if (unreadable_add(bad, "job_run", key, name, reason) < 0) {
			r = -ENOMEM;
			break;
		}
		unreadable_what(&bad->list[bad->count - 1], what, sizeof(what));
		fs_log(ctx, level, "state store %s: %s cannot be restored: %s", st->name, what,
		       reason);
		stats->set_aside++;
	}
	if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
		r = sql_err(st->sql, "read history records", why);
	sqlite3_finalize(q);
	return r;
}

/* Can this ascendfs replay a staged upload of @kind, @key and @ext (all may be NULL)? */
static const char *staged_unknown(const char *kind, const char *key, const char *ext)
{
	if (!kind || (strcmp(kind, "spec") != 0 && strcmp(kind, "quota") != 0))
		return "a kind this ascendfs does not know";
	if (!key || strlen(key) > CONF_NAME_MAX || !ext)
		return "a key or extension this ascendfs does not write";
	/* queues/<queue>/quota: a queue's name, no extension */
	if (strcmp(kind, "quota") == 0 && (!conf_name_is_valid(key) || ext[0]))
		return "a quota under a name or extension no queue has";
	if (strcmp(kind, "spec") == 0 &&
	    (!conf_job_name_is_valid(key) ||
	     (ext[0] && strcmp(ext, "yaml") && strcmp(ext, "yml") && strcmp(ext, "json"))))
		return "a spec under a name or extension no job has";
	return NULL;
}

/*
 * The staged uploads the replay could not apply as their release would have (the
 * replay skipped them and the first write emptied the table without them): listed in
 * @bad. 0, -ENOMEM or -EIO (@why).
 */
static int find_unreadable_staged(struct fs_ctx *ctx, struct unreadable *bad, int level,
				  struct fs_restore_stats *stats, char *why)
{
	struct fs_store *st = ctx->store;
	sqlite3_stmt *q = NULL;
	int rc, r = prepare(st->sql, &q, "SELECT kind, key, ext FROM staged", why);

	if (r < 0)
		return r;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *unknown = staged_unknown(col_text(q, 0), col_text(q, 1), col_text(q, 2));
		char what[SCHED_REASON_MAX];

		if (!unknown)
			continue;
		if (unreadable_add(bad, "staged", col_text(q, 0) ? col_text(q, 0) : "",
				   col_text(q, 1), unknown) < 0) {
			sqlite3_finalize(q);
			return -ENOMEM;
		}
		unreadable_what(&bad->list[bad->count - 1], what, sizeof(what));
		fs_log(ctx, level, "state store %s: %s cannot be restored: %s", st->name, what,
		       unknown);
		stats->set_aside++;
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : sql_err(st->sql, "read staged uploads", why);
}

/* @why: how many records of @bad cannot be restored, the first, and what to do. */
static void unreadable_refusal(const struct fs_store *st, const struct unreadable *bad,
			       char *why)
{
	char what[SCHED_REASON_MAX];
	const char *them = conf_plural(bad->count, "it", "them");

	unreadable_what(&bad->list[0], what, sizeof(what));
	snprintf(why, SCHED_REASON_MAX,
		 "state store %s: %zu %s cannot be restored (%s%.80s: %.120s); nothing was "
		 "changed. Use the ascendfs that wrote %s, or start with --ignore-state-errors "
		 "to move %s to the store's table unrestored (kept as %s) and start "
		 "without %s",
		 st->name, bad->count, conf_plural(bad->count, "record", "records"),
		 bad->count > 1 ? "each is logged above; the first: " : "", what,
		 bad->list[0].reason, them, them,
		 conf_plural(bad->count, "it is", "they are"), them);
}

int fs_sqlite_replay_staged(struct fs_ctx *ctx, struct fs_restore_stats *stats, char *why)
{
	struct fs_store *st = ctx->store;
	sqlite3_stmt *q = NULL;
	int rc, r = prepare(st->sql, &q, "SELECT kind, key, ext, uid, gid, groups, body FROM staged",
			    why);

	if (r < 0)
		return r;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct fs_staged s = { 0 };
		gid_t groups[64];
		const char *g = col_text(q, 5);

		snprintf(s.kind, sizeof(s.kind), "%s", col_text(q, 0));
		snprintf(s.key, sizeof(s.key), "%s", col_text(q, 1));
		snprintf(s.ext, sizeof(s.ext), "%s", col_text(q, 2));
		s.uid = (uid_t)sqlite3_column_int64(q, 3);
		s.gid = (gid_t)sqlite3_column_int64(q, 4);
		while (g && *g && s.group_count < 64) {
			char *end;

			groups[s.group_count++] = (gid_t)strtoul(g, &end, 10);
			g = *end ? end + 1 : end;
		}
		s.groups = groups;
		s.body = (char *)sqlite3_column_blob(q, 6);
		s.len = (size_t)sqlite3_column_bytes(q, 6);
		stats->staged++;
		fs_staged_replay(ctx, &s);
	}
	sqlite3_finalize(q);
	r = rc == SQLITE_DONE ? 0 : sql_err(st->sql, "read staged uploads", why);
	/* the replayed uploads are now jobs (or rejections): the next batch writes them and
	 * empties the staged table */
	pthread_mutex_lock(&ctx->lock);
	ctx->staged_changed = true;
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

int fs_sqlite_restore(struct fs_ctx *ctx, uint64_t now_usec, bool set_aside,
		     struct fs_restore_stats *stats, char *why)
{
	struct fs_store *st = ctx->store;
	struct sched_cluster *c = ctx->cluster;
	char reason[SCHED_REASON_MAX];
	struct unreadable bad = { 0 };
	/* refused: each is an error; set aside: a warning */
	int level = set_aside ? 1 : 0;
	sqlite3_stmt *q = NULL;
	struct timespec t0;
	size_t rows = 0, jobs_bad, orphans = 0;
	int r, rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(stats, 0, sizeof(*stats));
	/* from now on every dropped record (rmdir, a replaced name, max_job_count) is
	 * deleted from the store too */
	c->track_removals = true;
	r = exec(st->sql, "BEGIN", why);
	if (r < 0)
		return r;
	/* events: the newest kept ones, oldest first (contiguous by construction) */
	r = prepare(st->sql, &q,
		    "SELECT seq, time_usec, kind, job, server, npu, state, reason, line FROM "
		    "events WHERE seq > (SELECT coalesce(max(seq), 0) FROM events) - ?1 ORDER BY seq",
		    why);
	if (r < 0)
		goto out;
	sqlite3_bind_int64(q, 1, c->conf->event_history);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		uint64_t seq = (uint64_t)sqlite3_column_int64(q, 0);

		if (sched_event_load(c, seq, (uint64_t)sqlite3_column_int64(q, 1), col_text(q, 2),
				     col_text(q, 3), col_text(q, 4), sqlite3_column_int(q, 5),
				     col_text(q, 6), col_text(q, 7), col_text(q, 8)) < 0) {
			/* an unknown kind (a newer version wrote it) or a gap: the kept
			 * history starts after it, so it has no gap either */
			fs_log(ctx, 1, "state store: event %llu (kind \"%s\") cannot be restored; "
				       "the kept event history starts after it",
			       (unsigned long long)seq, col_text(q, 2) ? col_text(q, 2) : "");
			sched_event_forget_all(c);
			stats->events = 0;
			if (seq >= c->next_event_seq)
				c->next_event_seq = seq + 1;
			continue;
		}
		st->collected_event_seq = st->written_event_seq = seq;
		stats->events++;
	}
	sqlite3_finalize(q);
	q = NULL;
	if (rc != SQLITE_DONE) {
		r = sql_err(st->sql, "read events", why);
		goto out;
	}
	fs_log(ctx, 3, "restore: events read at %.1f ms", msec_since(&t0));
	/* accounting: the newest kept records, oldest first; one that cannot be read (a
	 * bad name) is logged and left out: the others stand on their own */
	r = prepare(st->sql, &q,
		    "SELECT seq, time_usec, job, line FROM accounting WHERE seq > (SELECT "
		    "coalesce(max(seq), 0) FROM accounting) - ?1 ORDER BY seq",
		    why);
	if (r < 0)
		goto out;
	sqlite3_bind_int64(q, 1, c->conf->accounting_history);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		uint64_t seq = (uint64_t)sqlite3_column_int64(q, 0);

		r = sched_account_load(c, seq, (uint64_t)sqlite3_column_int64(q, 1),
				       col_text(q, 2), col_text(q, 3));
		if (r == -ENOMEM)
			break;
		if (r < 0)
			fs_log(ctx, 1, "state store: accounting record %llu cannot be restored; "
				       "left out", (unsigned long long)seq);
		st->collected_acct_seq = st->written_acct_seq = seq;
		stats->accounting++;
		r = 0;
	}
	sqlite3_finalize(q);
	q = NULL;
	if (r == -ENOMEM)
		goto out;
	if (rc != SQLITE_DONE) {
		r = sql_err(st->sql, "read accounting", why);
		goto out;
	}
	if (c->next_acct_seq <= st->written_acct_seq)
		c->next_acct_seq = st->written_acct_seq + 1;
	r = prepare(st->sql, &q, "SELECT value FROM meta WHERE key = 'cluster'", why);
	if (r < 0)
		goto out;
	if (sqlite3_step(q) == SQLITE_ROW) {
		r = sched_meta_load(c, col_text(q, 0), (size_t)sqlite3_column_bytes(q, 0), reason);
		if (r == -ENOMEM)
			goto out; /* not the record's fault: never set aside for it */
		if (r < 0) {
			char what[SCHED_REASON_MAX];

			/* the first write would replace it: quotas set at run time lost */
			r = unreadable_add(&bad, "meta", "cluster", NULL, reason);
			if (r < 0)
				goto out;
			unreadable_what(&bad.list[bad.count - 1], what, sizeof(what));
			fs_log(ctx, level, "state store %s: %s cannot be restored: %s%s",
			       st->name, what, reason,
			       set_aside ? "; sequences start after what was restored" : "");
			stats->set_aside++;
		} else if (reason[0])
			fs_log(ctx, 1, "state store: %s", reason);
	}
	sqlite3_finalize(q);
	q = NULL;
	r = restore_clock(ctx, why);
	if (r < 0)
		goto out;
	r = prepare(st->sql, &q, "SELECT name, doc FROM servers", why);
	if (r < 0)
		goto out;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int idx;

		r = sched_server_load(c, col_text(q, 1), (size_t)sqlite3_column_bytes(q, 1),
				      now_usec, reason);
		if (r == -ENOMEM)
			goto out;
		if (r == -ENOENT) {
			/* the inventory changed: not unreadable */
			fs_log(ctx, 1, "state store: %s", reason);
			continue;
		}
		if (r < 0) {
			char what[SCHED_REASON_MAX];

			if (unreadable_add(&bad, "server", col_text(q, 0), NULL, reason) < 0) {
				r = -ENOMEM;
				goto out;
			}
			unreadable_what(&bad.list[bad.count - 1], what, sizeof(what));
			fs_log(ctx, level, "state store %s: %s cannot be restored: %s", st->name,
			       what, reason);
			stats->set_aside++;
			continue;
		}
		idx = sched_cluster_find_server(c, col_text(q, 0));
		if (idx >= 0 && (size_t)idx < st->server_count) {
			free(st->server_docs[idx]);
			st->server_docs[idx] = strdup(col_text(q, 1));
		}
		stats->servers++;
	}
	for (size_t i = 0; i < c->server_count; i++)
		c->servers[i].saved_version = c->servers[i].version;
	sqlite3_finalize(q);
	q = NULL;
	r = 0;
	if (rc != SQLITE_DONE) {
		r = sql_err(st->sql, "read servers", why);
		goto out;
	}
	/* one record per name, the newest: an older one of the same name can only be a
	 * leftover (the first write then rewrites the rows without it) */
	r = prepare(st->sql, &q,
		    "SELECT serial, doc, (SELECT count(*) FROM jobs), name FROM jobs WHERE serial "
		    "IN (SELECT max(serial) FROM jobs GROUP BY name) ORDER BY serial",
		    why);
	if (r < 0)
		goto out;
	jobs_bad = bad.count;
	r = restore_jobs(ctx, q, now_usec, stats, &bad, level, &rows, why);
	jobs_bad = bad.count - jobs_bad;
	sqlite3_finalize(q);
	q = NULL;
	if (r < 0)
		goto out;
	if (!st->sql->mark_schema) {
		r = restore_runs(ctx, stats, &bad, level, &orphans, why);
		if (r < 0)
			goto out;
	}
	r = find_unreadable_staged(ctx, &bad, level, stats, why);
	if (r < 0)
		goto out;
	if (bad.count && !set_aside) {
		unreadable_refusal(st, &bad, why);
		r = -EBADMSG;
		goto out;
	}
	if (bad.count) {
		r = unreadable_set_aside(st, &bad, now_usec, why);
		if (r < 0)
			goto out;
		fs_log(ctx, 1, "state store %s: %zu unreadable %s set aside in %s (kept as %s: "
			       "%s)",
		       st->name, bad.count, conf_plural(bad.count, "record", "records"),
		       st->aside_where, conf_plural(bad.count, "it was", "they were"),
		       st->aside_hint);
	}
	if (rows > stats->jobs + jobs_bad) {
		fs_log(ctx, 1, "state store: %zu older records of resubmitted names ignored",
		       rows - stats->jobs - jobs_bad);
		st->resync = true;
	}
	if (orphans) {
		fs_log(ctx, 1, "state store: %zu history %s of job records no longer kept ignored",
		       orphans, conf_plural(orphans, "record", "records"));
		st->resync = true;
	}
	fs_log(ctx, 3, "restore: servers and jobs read at %.1f ms", msec_since(&t0));
	/* a job loaded as it was saved is saved (version 1); one the load changed (requeued
	 * or failed under a changed configuration), and whatever the first pass changes,
	 * is written by the first batch */
	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i]->version == 1)
			c->jobs[i]->saved_version = 1;
	r = sched_restore_finish(c, now_usec, reason);
	if (r < 0) {
		snprintf(why, SCHED_REASON_MAX, "state store %s: the restored state is "
						"inconsistent: %.300s", st->name, reason);
		goto out;
	}
	fs_log(ctx, 3, "restore: invariants checked, first pass run at %.1f ms",
	       msec_since(&t0));
	/* then the uploads a close() accepted but the daemon did not live to submit (or
	 * later: a standby's takeover, fs_standby.c) */
	if (!st->staged_later)
		r = fs_sqlite_replay_staged(ctx, stats, why);
	/* cluster/config shows the effective quotas */
	pthread_mutex_lock(&ctx->lock);
	if (r == 0 && fs_config_refresh(ctx) < 0)
		r = -ENOMEM;
	pthread_mutex_unlock(&ctx->lock);
out:
	sqlite3_finalize(q);
	unreadable_free(&bad);
	/* what was set aside is durable only if this commits */
	if (r < 0)
		exec(st->sql, "ROLLBACK", NULL);
	else if (exec(st->sql, "COMMIT", why) < 0)
		r = -EIO;
	return r;
}

int fs_sqlite_each_unrestored(struct fs_sqlite *sq, int64_t after,
			      int (*fn)(void *arg, int64_t id, const char *kind,
					const char *key, const char *doc, size_t doc_len,
					const char *reason, int64_t time_usec),
			      void *arg, char *why)
{
	sqlite3_stmt *q = NULL;
	int rc, r;

	/* no such table: nothing was ever set aside */
	if (sqlite3_table_column_metadata(sq->db, NULL, "unrestored", "id", NULL, NULL, NULL,
					  NULL, NULL) != SQLITE_OK)
		return 0;
	r = prepare(sq, &q, "SELECT id, kind, key, doc, reason, time_usec FROM unrestored "
			    "WHERE id > ?1 ORDER BY id", why);
	if (r < 0)
		return r;
	sqlite3_bind_int64(q, 1, after);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		r = fn(arg, sqlite3_column_int64(q, 0), col_text(q, 1), col_text(q, 2),
		       (const char *)sqlite3_column_blob(q, 3), (size_t)sqlite3_column_bytes(q, 3),
		       col_text(q, 4), sqlite3_column_int64(q, 5));
		if (r)
			break;
	}
	if (!r && rc != SQLITE_DONE)
		r = sql_err(sq, "read unrestored", why);
	sqlite3_finalize(q);
	return r;
}
