/* SPDX-License-Identifier: MIT */
/*
 * The committer: durable state with group commit, whatever the backend (fs_store.c).
 *
 * Every handler that changes the cluster calls fs_changed() under ctx->lock, which
 * remembers (per thread) the cluster version its change produced. Before the FUSE
 * request returns, fs_store_sync() waits until the committer has made that version
 * durable. The committer takes ctx->lock only to turn what changed into documents
 * (sched_*_save: jobs and servers whose version moved, dropped job records, new
 * events, the sequences), then has the backend write them in one transaction without
 * the lock, so readers never wait for the disk (or the quorum) and every submission
 * that arrives during one write shares the next. Each batch is a consistent cut of the
 * state: it was taken under the lock, between two requests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_store.h"

/* A request waiting in fs_store_sync() for version @want; listed in
 * ctx->durable_waiters while it waits. */
struct fs_durable_waiter {
	uint64_t want;
	pthread_cond_t cv;
	struct fs_durable_waiter *next;
};

/* Is @w's wait over: its change written, or failed, or never to be (ctx->lock held)? */
static bool waiter_done(const struct fs_ctx *ctx, const struct fs_durable_waiter *w)
{
	return ctx->durable_version >= w->want || ctx->failed_version >= w->want ||
	       ctx->committer_gone;
}

/* Wake the waiters whose wait is over, each alone (ctx->lock held). */
static void wake_durable_waiters(struct fs_ctx *ctx)
{
	for (struct fs_durable_waiter *w = ctx->durable_waiters; w; w = w->next)
		if (waiter_done(ctx, w))
			pthread_cond_signal(&w->cv);
}

/* fs_store_when_durable()'s: @fn to call once version @want is written (or failed). */
struct fs_durable_hook {
	uint64_t want;
	bool written;	/* as it is called */
	void (*fn)(struct fs_ctx *, void *, bool);
	void *arg;
	struct fs_durable_hook *next;
};

/*
 * Call the hooks whose wait is over (all of them with @all: the committer stops). Called
 * with ctx->lock held; they run without it, and it is held again on return.
 */
static void run_durable_hooks(struct fs_ctx *ctx, bool all)
{
	struct fs_durable_hook *done = NULL, **tail = &done;

	/* in the order given: one behind a later version (its thread was quicker to
	 * give it) waits for that one, a batch at most */
	while (ctx->durable_hooks && (all || ctx->durable_version >= ctx->durable_hooks->want ||
				      ctx->failed_version >= ctx->durable_hooks->want)) {
		struct fs_durable_hook *k = ctx->durable_hooks;

		ctx->durable_hooks = k->next;
		k->next = NULL;
		*tail = k;
		tail = &k->next;
	}
	if (!ctx->durable_hooks)
		ctx->durable_hooks_tail = NULL;
	if (!done)
		return;
	/* a version both failed and written since (a retry) counts as written */
	for (struct fs_durable_hook *k = done; k; k = k->next)
		k->written = ctx->durable_version >= k->want;
	pthread_mutex_unlock(&ctx->lock);
	while (done) {
		struct fs_durable_hook *k = done;

		done = k->next;
		k->fn(ctx, k->arg, k->written);
		free(k);
	}
	pthread_mutex_lock(&ctx->lock);
}

/* Sentinel "no change to wait for" (versions start at 0 and only grow). */
static _Thread_local uint64_t thread_ticket;
static _Thread_local bool thread_has_ticket;

static pthread_t committer_thread;
static bool committer_running;

/* ---- batches: collected under ctx->lock, written without it ---- */



/*
 * One job record into @b (room reserved), with its closed history records that are not
 * saved yet (all of them in a full batch), which the record then leaves out. 0 or
 * -ENOMEM.
 */
static int batch_add_job(const struct sched_cluster *c, struct fs_batch *b, struct sched_job *j)
{
	struct fs_batch_job *bj = &b->jobs[b->job_count];
	size_t len;

	for (size_t i = 0; i < j->run_count; i++) {
		struct sched_job_run *r = &j->runs[i];
		struct fs_batch_run *br;

		if (!r->end_usec || (r->saved && !b->full))
			continue;
		if (b->run_count == b->run_cap) {
			size_t cap = b->run_cap ? 2 * b->run_cap : 16;
			struct fs_batch_run *n = realloc(b->runs, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			b->runs = n;
			b->run_cap = cap;
		}
		br = &b->runs[b->run_count];
		if (sched_job_run_save(j, i, &br->doc, &len) < 0)
			return -ENOMEM;
		br->serial = j->serial;
		br->number = r->number;
		b->run_count++;
		r->saved = true;
	}
	if (sched_job_save(c, j, &bj->doc, &len) < 0)
		return -ENOMEM;
	bj->runs_from = j->runs_dropped && j->run_count > 1 ? j->runs[1].number : 0;
	bj->serial = j->serial;
	snprintf(bj->name, sizeof(bj->name), "%s", j->name);
	snprintf(bj->state, sizeof(bj->state), "%s", sched_job_state_name(j->state));
	b->job_count++;
	return 0;
}

/*
 * Turn what changed since the last batch into documents (ctx->lock held). Marks the
 * objects saved; if the write then fails, st->resync makes the next batch write all.
 */
static int batch_collect(struct fs_ctx *ctx, struct fs_batch *b)
{
	struct fs_store *st = ctx->store;
	struct sched_cluster *c = ctx->cluster;
	bool full = st->resync || c->removed_overflow;
	size_t len, n = 0;
	uint64_t first;

	memset(b, 0, sizeof(*b));
	b->version = c->version;
	b->event_history = c->conf->event_history;
	b->full = full;
	/* the jobs that changed are on the store's dirty list (sched_job_touch()): a batch
	 * costs what changed, not what is held; a full one writes every record */
	n = full ? c->job_count : c->dirty_count[SCHED_DIRTY_STORE];
	b->jobs = calloc(n + 1, sizeof(*b->jobs));
	b->removed = calloc(c->removed_count + 1, sizeof(*b->removed));
	b->servers = calloc(c->server_count + 1, sizeof(*b->servers));
	if (!b->jobs || !b->removed || !b->servers)
		goto nomem;
	if (full) {
		for (size_t i = 0; i < c->job_count; i++)
			if (batch_add_job(c, b, c->jobs[i]) < 0)
				goto nomem;
	} else {
		for (struct sched_job *j = c->dirty_head[SCHED_DIRTY_STORE]; j;
		     j = j->dirty[SCHED_DIRTY_STORE].next)
			if (j->saved_version != j->version && batch_add_job(c, b, j) < 0)
				goto nomem;
	}
	if (c->removed_count)
		memcpy(b->removed, c->removed_serials, c->removed_count * sizeof(uint64_t));
	b->removed_count = c->removed_count;
	for (size_t i = 0; i < c->server_count; i++) {
		struct sched_server *s = &c->servers[i];
		char *doc;

		if (!full && s->saved_version == s->version)
			continue;
		if (sched_server_save(c, (unsigned)i, &doc, &len) < 0)
			goto nomem;
		/* a report that changed nothing but the heartbeat time writes nothing */
		if (!full && st->server_docs[i] && strcmp(st->server_docs[i], doc) == 0) {
			free(doc);
			continue;
		}
		b->servers[b->server_count].index = i;
		snprintf(b->servers[b->server_count].name, sizeof(b->servers[0].name), "%s",
			 s->conf->name);
		b->servers[b->server_count++].doc = doc;
	}
	/* the events the ring still holds after the last collected one */
	first = st->collected_event_seq + 1;
	if (full)
		first = st->written_event_seq + 1;
	/* a snapshot holds every event the ring keeps */
	if (full && st->snapshot_events)
		first = 1;
	n = c->next_event_seq > first ? (size_t)(c->next_event_seq - first) : 0;
	if (n > c->event_count)
		n = c->event_count; /* the ring keeps no more */
	b->events = calloc(n + 1, sizeof(*b->events));
	if (!b->events)
		goto nomem;
	for (const struct sched_event *e = sched_event_next(c, first - 1); e;
	     e = sched_event_next(c, e->seq)) {
		struct fs_batch_event *d = &b->events[b->event_count];
		struct sched_event copy;

		if (sched_event_copy(&copy, e) < 0)
			goto nomem;
		*d = (struct fs_batch_event){
			.seq = copy.seq, .time_usec = copy.time_usec, .npu = copy.npu,
			.kind = sched_event_kind_name(copy.kind), .state = copy.state,
			.job = copy.job, .server = copy.server, .reason = copy.reason,
			.line = copy.line, .mem = copy.line,
		};
		b->event_count++;
	}
	/* the accounting records likewise */
	b->accounting_history = c->conf->accounting_history;
	first = (full ? st->written_acct_seq : st->collected_acct_seq) + 1;
	if (full && st->snapshot_events)
		first = 1;
	n = c->next_acct_seq > first ? (size_t)(c->next_acct_seq - first) : 0;
	if (n > c->acct_count)
		n = c->acct_count; /* after a long failure: the ring keeps no more */
	b->accts = calloc(n + 1, sizeof(*b->accts));
	if (!b->accts)
		goto nomem;
	for (const struct sched_acct *a = sched_account_next(c, first - 1);
	     a && b->acct_count < n; a = sched_account_next(c, a->seq)) {
		struct sched_acct *d = &b->accts[b->acct_count];

		*d = *a;
		d->line = strdup(a->line);
		if (!d->line)
			goto nomem;
		b->acct_count++;
	}
	if (sched_meta_save(c, &b->meta, &len) < 0)
		goto nomem;
	if (ctx->staged_changed || full) {
		struct fs_staged **tail = &b->staged_list;

		/* after a failed write or the restore: everything staged, rewritten */
		b->staged_all = true;
		for (size_t i = 0; i < ctx->staged_cap; i++)
			for (const struct fs_staged *s = ctx->staged[i]; s; s = s->next) {
				*tail = fs_staged_copy(s);
				if (!*tail)
					goto nomem;
				tail = &(*tail)->next;
			}
	}
	/* all taken: mark it saved. Off the list now, a job changed while this batch is
	 * written is touched onto it again, and is in the next batch. */
	if (full)
		for (size_t i = 0; i < c->job_count; i++)
			c->jobs[i]->saved_version = c->jobs[i]->version;
	for (struct sched_job *j; (j = sched_dirty_pop(c, SCHED_DIRTY_STORE));)
		j->saved_version = j->version;
	for (size_t i = 0; i < c->server_count; i++)
		c->servers[i].saved_version = c->servers[i].version;
	for (size_t i = 0; i < b->server_count; i++) {
		free(st->server_docs[b->servers[i].index]);
		st->server_docs[b->servers[i].index] = strdup(b->servers[i].doc);
	}
	c->removed_count = 0;
	c->removed_overflow = false;
	if (b->event_count)
		st->collected_event_seq = b->events[b->event_count - 1].seq;
	if (b->acct_count)
		st->collected_acct_seq = b->accts[b->acct_count - 1].seq;
	/* the changes since the last batch, each a row: taken whole (or superseded) */
	if (b->staged_all) {
		fs_stage_ops_free(ctx);
	} else {
		b->staged_list = ctx->stage_ops;
		ctx->stage_ops = NULL;
		ctx->stage_ops_tail = &ctx->stage_ops;
	}
	ctx->staged_changed = false;
	st->resync = false;
	return 0;

nomem:
	fs_batch_free(b);
	return -ENOMEM;
}

/* ---- the committer thread ---- */

/* A pass that took less than this is not spaced: waiting costs more than it saves. */
#define PASS_SPACING_MIN_USEC 100
/* How many times its cost a pass may wait after the last one, and at most how long. */
#define PASS_SPACING_FACTOR 2
#define PASS_SPACING_MAX_USEC 250000
/* A wait for more submissions ends when none came for this long. */
#define PASS_SPACING_QUIET_USEC 500

/*
 * Group commit for passes (ctx->lock held). A full pass costs O(pending) under the lock:
 * a job that comes before waiting ones is given its turn in front of them all, and they
 * theirs again. Run back to back, such passes leave the requests too little of the lock
 * to reach the next batch, and each serves one or two submissions. So an owed pass that
 * comes soon after an expensive one waits while submissions keep arriving (each wakes
 * commit_cv), until none came for PASS_SPACING_QUIET_USEC or PASS_SPACING_FACTOR times
 * the last pass's cost has passed since it ended: the pass then serves them all, and
 * what it costs per submission stops growing with the jobs held. A cheap pass (resumed
 * from the last, or few jobs waiting) is not spaced, nor is a pass a reader needs: that
 * one runs it meanwhile (wait_for_closing_uploads, fs_ops.c).
 */
static void wait_for_pass_spacing(struct fs_ctx *ctx)
{
	uint64_t cost = ctx->pass_cost_usec, spacing, deadline, now;

	if (cost < PASS_SPACING_MIN_USEC || ctx->viewing)
		return;
	spacing = cost * PASS_SPACING_FACTOR;
	deadline = ctx->pass_end_usec + (spacing < PASS_SPACING_MAX_USEC ? spacing
									 : PASS_SPACING_MAX_USEC);
	while (!ctx->stopping && sched_pass_is_owed(ctx->cluster) &&
	       (now = fs_now_usec()) < deadline) {
		uint64_t wait = deadline - now < PASS_SPACING_QUIET_USEC ? deadline - now
									  : PASS_SPACING_QUIET_USEC;
		struct timespec ts;

		fs_deadline_in_usec(&ts, wait);
		if (pthread_cond_timedwait(&ctx->commit_cv, &ctx->lock, &ts) == ETIMEDOUT)
			break; /* quiet: every submission that was coming has come */
	}
}

static void *committer_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	char why[SCHED_REASON_MAX];
	bool logged = false;

	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		struct fs_batch b;
		unsigned slow_ms;
		int r;

		/* one pass for every request that arrived while the last batch was written,
		 * under the same lock hold as the collection: their placements are durable
		 * with them, and a request's wait for its batch is a wait for its pass */
		wait_for_pass_spacing(ctx);
		fs_pass_run_owed(ctx);
		if (ctx->cluster->version == ctx->collected_version && !ctx->staged_changed) {
			struct timespec ts;

			if (ctx->stopping)
				break;
			/* woken by fs_changed(); the timeout catches changes made without one */
			fs_deadline_in(&ts, 1000);
			pthread_cond_timedwait(&ctx->commit_cv, &ctx->lock, &ts);
			continue;
		}
		r = batch_collect(ctx, &b);
		if (r < 0) {
			/* out of memory: everything is written once memory is back */
			ctx->store->resync = true;
			ctx->failed_version = ctx->cluster->version;
			wake_durable_waiters(ctx);
			run_durable_hooks(ctx, false);
			pthread_mutex_unlock(&ctx->lock);
			fs_log(ctx, 0, "state store: out of memory; changes are not durable");
			sleep(1);
			pthread_mutex_lock(&ctx->lock);
			continue;
		}
		ctx->collected_version = b.version;
		slow_ms = ctx->test_slow_commit_ms; /* read under the lock: a test sets it */
		pthread_mutex_unlock(&ctx->lock);
		if (slow_ms)
			usleep(slow_ms * 1000u);
		r = fs_store_write(ctx->store, &b, why);
		if (r < 0 && !logged)
			fs_log(ctx, 0, "%s; requests that changed state fail with EIO until it "
				       "works again", why);
		else if (r == 0 && logged)
			fs_log(ctx, 0, "state store: writing works again");
		logged = r < 0;
		pthread_mutex_lock(&ctx->lock);
		if (r == 0) {
			ctx->durable_version = b.version;
			if (b.event_count)
				ctx->store->written_event_seq = b.events[b.event_count - 1].seq;
			if (b.acct_count)
				ctx->store->written_acct_seq = b.accts[b.acct_count - 1].seq;
		} else {
			ctx->store->resync = true;
			ctx->failed_version = b.version;
			ctx->collected_version = (uint64_t)-1; /* try again */
		}
		wake_durable_waiters(ctx);
		fs_batch_free(&b);
		run_durable_hooks(ctx, false);
		if (r < 0) {
			struct timespec ts;

			fs_deadline_in(&ts, 1000);
			pthread_cond_timedwait(&ctx->stop_cv, &ctx->lock, &ts);
			if (ctx->stopping)
				break;
		}
	}
	ctx->committer_gone = true;
	wake_durable_waiters(ctx);
	run_durable_hooks(ctx, true);
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int fs_store_start(struct fs_ctx *ctx)
{
	int r;

	if (!ctx->store)
		return 0;
	/* the lease's renewal too (etcd): it does not survive the fork either */
	r = fs_store_resume(ctx->store);
	if (r < 0)
		return r;
	ctx->collected_version = ctx->durable_version = ctx->cluster->version;
	/* started again after fs_store_stop() (main.c, daemonizing): the committer that
	 * stopped is not a committer gone */
	ctx->stopping = ctx->committer_gone = false;
	r = pthread_create(&committer_thread, NULL, committer_main, ctx);
	if (r)
		return -r;
	committer_running = true;
	return 0;
}

void fs_store_stop(struct fs_ctx *ctx)
{
	if (!committer_running) {
		fs_store_pause(ctx->store);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_cond_broadcast(&ctx->commit_cv);
	pthread_cond_broadcast(&ctx->stop_cv);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(committer_thread, NULL);
	committer_running = false;
	/* after the committer's last writes: they still hold the lease (etcd) */
	fs_store_pause(ctx->store);
}

void fs_store_note_change(struct fs_ctx *ctx)
{
	thread_ticket = ctx->cluster->version;
	thread_has_ticket = true;
	pthread_cond_signal(&ctx->commit_cv);
}

/* Until the batch holding cluster version @want is written, or failed, or will never be
 * (ctx->lock held, released while waiting; ctx->store set). */
static void wait_durable_locked(struct fs_ctx *ctx, uint64_t want)
{
	struct fs_durable_waiter w = { .want = want, .cv = PTHREAD_COND_INITIALIZER };
	struct fs_durable_waiter **pp;

	if (!waiter_done(ctx, &w)) {
		w.next = ctx->durable_waiters;
		ctx->durable_waiters = &w;
		while (!waiter_done(ctx, &w))
			pthread_cond_wait(&w.cv, &ctx->lock);
		for (pp = &ctx->durable_waiters; *pp != &w; pp = &(*pp)->next)
			;
		*pp = w.next;
	}
	pthread_cond_destroy(&w.cv);
}

int fs_store_sync(struct fs_ctx *ctx)
{
	uint64_t want = thread_ticket;
	int r = 0;

	if (!thread_has_ticket)
		return 0;
	thread_has_ticket = false;
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->store) {
		/* no committer to run it: the pass this change owes runs before the answer
		 * (shared with whatever else arrived meanwhile) */
		fs_pass_run_owed(ctx);
		want = ctx->cluster->version;
	}
	/* a failed write that covered this change answers EIO: not known to be durable */
	if (ctx->store)
		wait_durable_locked(ctx, want);
	if (ctx->store && ctx->durable_version < want)
		r = -EIO;
	/* the batch also holds the pass the change owed (fs_pass_run_owed()) */
	if (ctx->store && r == 0 && ctx->durable_version > want)
		want = ctx->durable_version;
	/* and the kernel was told of the attributes it keeps that the change made stale: a
	 * stat() after this answer sees the change */
	fs_inode_sweep(ctx, want);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

int fs_store_durable_locked(struct fs_ctx *ctx, uint64_t version)
{
	if (!ctx->store || ctx->viewing || ctx->durable_version >= version)
		return 0;
	/* the store fails now (the last write did): no wait for its next try, which may
	 * take as long (an etcd without quorum: its timeouts), in a thread FUSE needs */
	if (ctx->failed_version > ctx->durable_version)
		return -EIO;
	wait_durable_locked(ctx, version);
	return ctx->durable_version >= version ? 0 : -EIO;
}

int fs_store_when_durable(struct fs_ctx *ctx, void (*fn)(struct fs_ctx *, void *, bool),
			  void *arg)
{
	struct fs_durable_hook *k;

	if (!thread_has_ticket || !ctx->store)
		return -EAGAIN;
	k = malloc(sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (struct fs_durable_hook){ .want = thread_ticket, .fn = fn, .arg = arg };
	thread_has_ticket = false;
	pthread_mutex_lock(&ctx->lock);
	/* written already, or no committer to write it: at once, on this thread */
	if (ctx->durable_version >= k->want || ctx->failed_version >= k->want ||
	    ctx->committer_gone) {
		bool written = ctx->durable_version >= k->want;

		pthread_mutex_unlock(&ctx->lock);
		fn(ctx, arg, written);
		free(k);
		return 0;
	}
	*(ctx->durable_hooks_tail ? ctx->durable_hooks_tail : &ctx->durable_hooks) = k;
	ctx->durable_hooks_tail = &k->next;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void fs_pass_run_owed(struct fs_ctx *ctx)
{
	struct sched_cluster *c = ctx->cluster;
	uint64_t before = c->version, runs = c->passes_run, t0;

	/* a standby's view is the leader's state as it wrote it: no pass of its own */
	if (ctx->viewing || !sched_pass_is_owed(c))
		return;
	t0 = fs_now_usec();
	sched_pass_run_owed(c, t0);
	/* the spacing's measure (wait_for_pass_spacing): a pass that ran, not a retry
	 * after a lack of memory that was not due yet */
	if (c->passes_run != runs) {
		ctx->pass_end_usec = fs_now_usec();
		ctx->pass_cost_usec = ctx->pass_end_usec - t0;
	}
	if (c->version == before)
		return;
	/* fs_changed()'s wake-ups, without its ticket: fs_changed() calls into this file */
	pthread_cond_broadcast(&ctx->notify_cv);
	if (c->resume_scan_wanted)
		pthread_cond_signal(&ctx->scan_cv);
	pthread_cond_signal(&ctx->commit_cv);
}
