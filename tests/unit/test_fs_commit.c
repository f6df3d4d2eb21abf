/* SPDX-License-Identifier: MIT */
/*
 * The committer (fs_commit.c) on a real SQLite store in a temporary directory: what a
 * thread hands it with fs_store_when_durable() runs once that thread's change is
 * written, in the order given, on the committer's thread; at once, on the caller's,
 * when the change was written already; and not at all (-EAGAIN) for a thread that
 * changed nothing. fs_store_sync() waits for the same writes.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs.h"
#include "fs_store.h"
#include "sched_fixture.h"

struct fixture {
	struct fs_ctx ctx;
	char dir[64];
};

/* What a hook saw: in the order they ran. */
static struct {
	pthread_mutex_t mu;
	unsigned count;
	int order[8];
	bool written[8];
	uint64_t durable_at_call[8];	/* ctx->durable_version when it ran */
	pthread_t thread[8];
} seen = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void hook(struct fs_ctx *ctx, void *arg, bool written)
{
	pthread_mutex_lock(&seen.mu);
	if (seen.count < 8) {
		seen.order[seen.count] = *(int *)arg;
		seen.written[seen.count] = written;
		/* called without ctx->lock: taking it here must not deadlock */
		pthread_mutex_lock(&ctx->lock);
		seen.durable_at_call[seen.count] = ctx->durable_version;
		pthread_mutex_unlock(&ctx->lock);
		seen.thread[seen.count] = pthread_self();
	}
	seen.count++;
	pthread_mutex_unlock(&seen.mu);
	free(arg);
}

static int *tag(int n)
{
	int *p = malloc(sizeof(*p));

	assert_non_null(p);
	*p = n;
	return p;
}

static unsigned seen_count(void)
{
	unsigned n;

	pthread_mutex_lock(&seen.mu);
	n = seen.count;
	pthread_mutex_unlock(&seen.mu);
	return n;
}

/* Wait (up to 10 s) until @n hooks ran. */
static void wait_for_hooks(unsigned n)
{
	for (int i = 0; i < 10000 && seen_count() < n; i++)
		usleep(1000);
	assert_int_equal(seen_count(), n);
}

/* Submit job @name on this thread, as a request does: returns the version it made. */
static uint64_t change(struct fs_ctx *ctx, const char *name)
{
	uint64_t v;

	pthread_mutex_lock(&ctx->lock);
	fx_submit(ctx->cluster, name, 1);
	fs_changed(ctx);
	v = ctx->cluster->version;
	pthread_mutex_unlock(&ctx->lock);
	return v;
}

/* The committer's test delay, set as it reads it: under ctx->lock. */
static void set_slow_commit(struct fs_ctx *ctx, unsigned ms)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->test_slow_commit_ms = ms;
	pthread_mutex_unlock(&ctx->lock);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct fx_opts o = { .servers = 2 };
	char why[SCHED_REASON_MAX];

	assert_non_null(f);
	memset(&seen.count, 0, sizeof(seen) - offsetof(typeof(seen), count));
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_fs_commit.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->ctx.cluster = fx_cluster(&o);
	f->ctx.conf = f->ctx.cluster->conf;
	f->ctx.log_level = 1;
	pthread_mutex_init(&f->ctx.lock, NULL);
	fs_cond_init(&f->ctx.notify_cv);
	fs_cond_init(&f->ctx.scan_cv);
	fs_cond_init(&f->ctx.stop_cv);
	fs_cond_init(&f->ctx.commit_cv);
	fs_cond_init(&f->ctx.sweep_cv);
	assert_int_equal(fs_inodes_init(&f->ctx.inodes), 0);
	if (fs_store_open(f->dir, f->ctx.cluster->server_count, &f->ctx.store, why) < 0)
		fail_msg("store: %s", why);
	assert_int_equal(fs_store_start(&f->ctx), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	fs_store_stop(&f->ctx);
	fs_store_close(f->ctx.store);
	fs_inodes_release(&f->ctx.inodes);
	sched_cluster_free(f->ctx.cluster);
	pthread_cond_destroy(&f->ctx.sweep_cv);
	pthread_cond_destroy(&f->ctx.commit_cv);
	pthread_cond_destroy(&f->ctx.stop_cv);
	pthread_cond_destroy(&f->ctx.scan_cv);
	pthread_cond_destroy(&f->ctx.notify_cv);
	pthread_mutex_destroy(&f->ctx.lock);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Each hook runs once its change is written, in the order given, on the committer. */
static void test_hooks_run_once_written_in_order(void **state)
{
	struct fixture *f = *state;
	uint64_t v1, v2;

	set_slow_commit(&f->ctx, 50); /* both are given before the first write ends */
	v1 = change(&f->ctx, "a");
	assert_int_equal(fs_store_when_durable(&f->ctx, hook, tag(1)), 0);
	v2 = change(&f->ctx, "b");
	assert_int_equal(fs_store_when_durable(&f->ctx, hook, tag(2)), 0);
	/* the ticket was handed over: nothing more to wait for on this thread */
	assert_int_equal(fs_store_sync(&f->ctx), 0);
	wait_for_hooks(2);
	assert_int_equal(seen.order[0], 1);
	assert_int_equal(seen.order[1], 2);
	assert_true(seen.written[0] && seen.written[1]);
	assert_true(seen.durable_at_call[0] >= v1);
	assert_true(seen.durable_at_call[1] >= v2);
	assert_false(pthread_equal(seen.thread[0], pthread_self()));
}

/* A change written already: the hook runs at once, on the caller's thread. */
static void test_a_written_change_runs_its_hook_at_once(void **state)
{
	struct fixture *f = *state;
	uint64_t v = change(&f->ctx, "a"), durable;

	for (int i = 0; i < 10000; i++) {
		pthread_mutex_lock(&f->ctx.lock);
		durable = f->ctx.durable_version;
		pthread_mutex_unlock(&f->ctx.lock);
		if (durable >= v)
			break;
		usleep(1000);
	}
	assert_true(durable >= v);
	assert_int_equal(fs_store_when_durable(&f->ctx, hook, tag(7)), 0);
	assert_int_equal(seen_count(), 1);
	assert_int_equal(seen.order[0], 7);
	assert_true(seen.written[0]);
	assert_true(pthread_equal(seen.thread[0], pthread_self()));
}

/* A thread that changed nothing has nothing to wait for: -EAGAIN, the hook is not
 * taken (the caller still owns its argument). */
static void test_no_change_no_hook(void **state)
{
	struct fixture *f = *state;
	int mine = 3;

	assert_int_equal(fs_store_when_durable(&f->ctx, hook, &mine), -EAGAIN);
	(void)change(&f->ctx, "a");
	assert_int_equal(fs_store_sync(&f->ctx), 0);
	/* its ticket was spent by the wait */
	assert_int_equal(fs_store_when_durable(&f->ctx, hook, &mine), -EAGAIN);
	assert_int_equal(seen_count(), 0);
}

/* A hook still waiting when the committer stops is told how its change ended: the stop
 * writes what is left first, so it was written. */
static void test_a_stop_writes_then_runs_what_waits(void **state)
{
	struct fixture *f = *state;
	uint64_t v;

	set_slow_commit(&f->ctx, 200);
	v = change(&f->ctx, "a");
	assert_int_equal(fs_store_when_durable(&f->ctx, hook, tag(5)), 0);
	fs_store_stop(&f->ctx);
	assert_int_equal(seen_count(), 1);
	assert_true(seen.written[0]);
	assert_true(seen.durable_at_call[0] >= v);
	assert_int_equal(fs_store_start(&f->ctx), 0); /* for the teardown's stop */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hooks_run_once_written_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_written_change_runs_its_hook_at_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_change_no_hook, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_stop_writes_then_runs_what_waits, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
