/* SPDX-License-Identifier: MIT */
/*
 * The inode table (fs_inode.c): numbers made by lookups, paths, rmdir's stale numbers,
 * forgets, and the invalidations it sends, which must stop before the session's
 * descriptor is closed.
 *
 * fs_inode_sweep() tells the kernel of every job the scheduler marked, even when an
 * allocation fails (test_chaos.h).
 *
 * The invalidation libfuse would write to /dev/fuse is replaced here by one of the test's
 * own (a definition in the executable wins over the shared library's): it records what
 * it was asked, and whether it ran after the session was let go.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <fuse_lowlevel.h>

#include "fs.h"
#include "sched_fixture.h"
#include "test_chaos.h"

static struct {
	struct fuse_session *se;	/* what the last call was given */
	uint64_t inos[256];		/* the first ones asked */
	unsigned calls;
	bool closed;			/* the session was let go: no call may start or run */
	unsigned after_close;		/* calls that saw it */
	struct fs_ctx *swap_ctx;	/* at the first call: put swap_to in place there */
	struct sched_cluster *swap_to;
} sent;

int fuse_lowlevel_notify_inval_inode(struct fuse_session *se, fuse_ino_t ino, off_t off,
				     off_t len)
{
	unsigned n = __atomic_fetch_add(&sent.calls, 1, __ATOMIC_SEQ_CST);

	(void)off, (void)len;
	__atomic_store_n(&sent.se, se, __ATOMIC_SEQ_CST);
	if (n < 256)
		sent.inos[n] = ino;
	/* a standby's view put in place while the sweep told the kernel (as swap_in()
	 * does, under the lock the sweep let go: this thread is the only other one) */
	if (sent.swap_ctx && sent.swap_to) {
		struct sched_cluster *old = sent.swap_ctx->cluster;

		sent.swap_ctx->cluster = sent.swap_to;
		sent.swap_ctx->swept_version = 0;
		sent.swap_ctx->view_swaps++;
		sent.swap_to = old; /* freed by the test */
		sent.swap_ctx = NULL;
	}
	if (__atomic_load_n(&sent.closed, __ATOMIC_SEQ_CST))
		__atomic_fetch_add(&sent.after_close, 1, __ATOMIC_SEQ_CST);
	/* as long as a write to /dev/fuse can take: a caller still in here when the
	 * session is let go is seen at the end */
	usleep(50);
	if (__atomic_load_n(&sent.closed, __ATOMIC_SEQ_CST))
		__atomic_fetch_add(&sent.after_close, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static struct fuse_session *const fake_se = (struct fuse_session *)&sent;

static int setup(void **state)
{
	static struct fs_inodes t;

	memset(&sent, 0, sizeof(sent));
	assert_int_equal(fs_inodes_init(&t), 0);
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	fs_inodes_release(*state);
	return 0;
}

static void test_lookup_makes_one_number_per_name(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t jobs, again, j1, other;
	char path[FS_PATH_BYTES];
	bool stale = true;

	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &jobs), 0);
	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &again), 0);
	assert_int_equal(again, jobs);
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j1), 0);
	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "nodes", &other), 0);
	assert_int_not_equal(j1, jobs);
	assert_int_not_equal(other, j1);
	assert_int_equal(fs_inode_path(t, j1, path, sizeof(path), &stale), 0);
	assert_string_equal(path, "/jobs/j1");
	assert_false(stale);
	assert_int_equal(fs_inode_path(t, FUSE_ROOT_ID, path, sizeof(path), NULL), 0);
	assert_string_equal(path, "/");
	assert_int_equal(fs_inode_count(t), 4);
	/* a parent the kernel was never given */
	assert_int_equal(fs_inode_lookup(t, 999999, "x", &again), -ESTALE);
	assert_int_equal(fs_inode_path(t, 999999, path, sizeof(path), NULL), -ESTALE);
}

/* What only the notify helper was given has no watcher: a node seen by someone else, or a
 * file in a directory seen, has (fs_inode_watchable()); a number forgotten and made
 * again starts unseen. */
static void test_only_what_others_were_given_is_watchable(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t jobs, j1, status, env, j2;

	/* the root is everyone's: its children are watchable through it */
	assert_true(fs_inode_watchable(t, "/jobs"));
	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &jobs), 0);
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j1), 0);
	assert_int_equal(fs_inode_lookup(t, j1, "status", &status), 0);
	/* the helper's lookups alone (nobody marked them seen) */
	assert_false(fs_inode_watchable(t, "/jobs/j1"));
	assert_false(fs_inode_watchable(t, "/jobs/j1/status"));
	assert_false(fs_inode_watchable(t, "/jobs/j1/env")); /* never looked up at all */
	/* a user's watch of the file itself */
	fs_inode_mark_seen(t, status);
	assert_true(fs_inode_watchable(t, "/jobs/j1/status"));
	assert_false(fs_inode_watchable(t, "/jobs/j1/env"));
	/* a user's watch of the directory hears of every file in it, looked up or not */
	fs_inode_mark_seen(t, j1);
	assert_true(fs_inode_watchable(t, "/jobs/j1/env"));
	assert_true(fs_inode_watchable(t, "/jobs/j1"));
	assert_false(fs_inode_watchable(t, "/jobs/j2/status"));
	/* forgotten by the kernel: no watch can hold it; the name made again is unseen */
	assert_int_equal(fs_inode_lookup(t, j1, "env", &env), 0);
	fs_inode_forget(t, env, 1);
	fs_inode_forget(t, status, 1);
	fs_inode_forget(t, j1, 1);
	assert_false(fs_inode_watchable(t, "/jobs/j1/status"));
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j2), 0);
	assert_int_not_equal(j2, j1);
	assert_false(fs_inode_watchable(t, "/jobs/j1/status"));
	/* an unknown number is no one's */
	fs_inode_mark_seen(t, 999999);
	assert_false(fs_inode_watchable(t, "/jobs/j1/status"));
}

/* A node keeps its name only: the path is made from the names above it, whatever the
 * depth, and one that would pass FS_PATH_BYTES is refused where it would. */
static void test_paths_are_made_from_the_names_above(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t ino = FUSE_ROOT_ID, deep;
	char path[FS_PATH_BYTES], want[FS_PATH_BYTES], name[201];
	size_t len = 0;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	/* "/" and 200 bytes a level: 20 levels make 4,020 bytes and a NUL */
	for (int level = 0; level < 20; level++) {
		name[0] = (char)('a' + level);
		assert_int_equal(fs_inode_lookup(t, ino, name, &ino), 0);
		len += (size_t)snprintf(want + len, sizeof(want) - len, "/%s", name);
	}
	assert_int_equal(fs_inode_path(t, ino, path, sizeof(path), NULL), 0);
	assert_string_equal(path, want);
	/* too small a buffer: refused, not cut */
	assert_int_equal(fs_inode_path(t, ino, path, len, NULL), -ENAMETOOLONG);
	assert_int_equal(fs_inode_path(t, ino, path, len + 1, NULL), 0);
	/* a name that fills the path to FS_PATH_BYTES with its NUL fits; one byte more does not */
	memset(name, 'x', sizeof(name) - 1);
	name[FS_PATH_BYTES - 1 - len - 1] = '\0';
	assert_int_equal(fs_inode_lookup(t, ino, name, &deep), 0);
	assert_int_equal(fs_inode_path(t, deep, path, sizeof(path), NULL), 0);
	assert_int_equal(strlen(path), FS_PATH_BYTES - 1);
	name[FS_PATH_BYTES - 1 - len - 1] = 'x';
	name[FS_PATH_BYTES - 1 - len] = '\0';
	assert_int_equal(fs_inode_lookup(t, ino, name, &deep), -ENAMETOOLONG);
	/* a name of the root's own */
	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "cluster", &deep), 0);
	assert_int_equal(fs_inode_path(t, deep, path, sizeof(path), NULL), 0);
	assert_string_equal(path, "/cluster");
}

static void test_rmdir_makes_the_old_number_stale(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t jobs, old, file, fresh;
	char path[FS_PATH_BYTES];
	bool stale = false;

	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &jobs), 0);
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &old), 0);
	assert_int_equal(fs_inode_lookup(t, old, "env", &file), 0);
	fs_inode_detach(t, jobs, "j1");
	/* what the kernel still holds keeps its numbers, and reads as stale */
	assert_int_equal(fs_inode_path(t, file, path, sizeof(path), &stale), 0);
	assert_string_equal(path, "/jobs/j1/env");
	assert_true(stale);
	/* a new directory of that name is a new number */
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &fresh), 0);
	assert_int_not_equal(fresh, old);
	assert_int_equal(fs_inode_path(t, fresh, path, sizeof(path), &stale), 0);
	assert_false(stale);
	/* no lookup under a stale directory */
	assert_int_equal(fs_inode_lookup(t, old, "status", &file), -ESTALE);
}

static void test_forget_frees_and_never_reuses(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t jobs, j1, j1again, env;
	char path[FS_PATH_BYTES];

	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &jobs), 0);
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j1), 0);
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j1again), 0);
	assert_int_equal(fs_inode_lookup(t, j1, "env", &env), 0);
	/* one of two lookups forgotten: still held */
	fs_inode_forget(t, j1, 1);
	assert_int_equal(fs_inode_path(t, j1, path, sizeof(path), NULL), 0);
	/* all forgotten, but a name below it is held: still held */
	fs_inode_forget(t, j1, 1);
	assert_int_equal(fs_inode_path(t, j1, path, sizeof(path), NULL), 0);
	fs_inode_forget(t, env, 1);
	assert_int_equal(fs_inode_path(t, env, path, sizeof(path), NULL), -ESTALE);
	assert_int_equal(fs_inode_path(t, j1, path, sizeof(path), NULL), -ESTALE);
	assert_int_equal(fs_inode_count(t), 2);
	/* the name looked up again is a new number */
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j1again), 0);
	assert_true(j1again > env);
}

static void test_invalidations_go_through_the_session_set(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t jobs, j1, env, status, other;

	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &jobs), 0);
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j1), 0);
	assert_int_equal(fs_inode_lookup(t, j1, "env", &env), 0);
	assert_int_equal(fs_inode_lookup(t, j1, "status", &status), 0);
	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "nodes", &other), 0);
	/* before the mount: nothing to tell */
	fs_inode_inval_attrs(t, env);
	fs_inode_inval_attrs_path(t, "/jobs/j1", true);
	assert_int_equal(sent.calls, 0);

	fs_inodes_set_session(t, fake_se);
	fs_inode_inval_attrs(t, env);
	assert_int_equal(sent.calls, 1);
	assert_ptr_equal(sent.se, fake_se);
	assert_int_equal(sent.inos[0], env);
	/* the directory alone, then it and what is below it (not /nodes) */
	fs_inode_inval_attrs_path(t, "/jobs/j1", false);
	assert_int_equal(sent.calls, 2);
	assert_int_equal(sent.inos[1], j1);
	fs_inode_inval_attrs_path(t, "/jobs/j1", true);
	assert_int_equal(sent.calls, 5);
	assert_int_equal(sent.inos[2], j1);
	for (int i = 3; i < 5; i++)
		assert_true(sent.inos[i] == env || sent.inos[i] == status);
	assert_int_not_equal(sent.inos[3], sent.inos[4]);
	/* a path the kernel does not hold: nothing */
	fs_inode_inval_attrs_path(t, "/jobs/j2", true);
	assert_int_equal(sent.calls, 5);

	fs_inodes_set_session(t, NULL);
	fs_inode_inval_attrs(t, env);
	fs_inode_inval_attrs_path(t, "/", true);
	assert_int_equal(sent.calls, 5);
}

static bool was_sent(uint64_t ino)
{
	for (unsigned i = 0; i < sent.calls && i < 256; i++)
		if (sent.inos[i] == ino)
			return true;
	return false;
}

/*
 * Thousands of names, short ones kept in their slot and long ones on the heap, over
 * many chunks of the pool: each keeps its path; a forgotten one's number is stale even
 * once its slot is taken again, and no number is ever given twice; a directory's list
 * holds exactly the names still held, whatever order they went in.
 */
static void test_numbers_outlive_their_slots(void **state)
{
	enum { N = 5000 };
	struct fs_inodes *t = *state;
	static uint64_t first[N], second[N];
	uint64_t dirs[3];
	char name[64], path[FS_PATH_BYTES], want[FS_PATH_BYTES];

	for (int d = 0; d < 3; d++) {
		snprintf(name, sizeof(name), "dir%d", d);
		assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, name, &dirs[d]), 0);
	}
	for (int i = 0; i < N; i++) {
		/* 15 bytes fit in a slot; 16 and more do not */
		snprintf(name, sizeof(name), i % 2 ? "n%014d" : "long-name-%012d", i);
		assert_int_equal(fs_inode_lookup(t, dirs[i % 3], name, &first[i]), 0);
		if (i % 97 == 0)
			assert_int_equal(fs_inodes_check(t), 0);
	}
	assert_int_equal(fs_inode_count(t), 1 + 3 + N);
	assert_int_equal(fs_inodes_check(t), 0);
	/* forget every other one, from the end and from the start */
	for (int i = N - 1; i >= 0; i -= 2)
		fs_inode_forget(t, first[i], 1);
	assert_int_equal(fs_inode_count(t), 1 + 3 + N / 2);
	assert_int_equal(fs_inodes_check(t), 0);
	for (int i = 0; i < N; i++) {
		int r = fs_inode_path(t, first[i], path, sizeof(path), NULL);

		if (i % 2) {
			assert_int_equal(r, -ESTALE);
			continue;
		}
		assert_int_equal(r, 0);
		snprintf(want, sizeof(want), "/dir%d/long-name-%012d", i % 3, i);
		assert_string_equal(path, want);
	}
	/* looked up again: their slots are taken again, under numbers never given */
	for (int i = 1; i < N; i += 2) {
		snprintf(name, sizeof(name), "n%014d", i);
		assert_int_equal(fs_inode_lookup(t, dirs[i % 3], name, &second[i]), 0);
		for (int k = 0; k < N; k++)
			if (first[k] == second[i])
				fail_msg("number %llu given twice", (unsigned long long)second[i]);
		assert_int_equal(fs_inode_path(t, second[i], path, sizeof(path), NULL), 0);
		snprintf(want, sizeof(want), "/dir%d/%s", i % 3, name);
		assert_string_equal(path, want);
		assert_int_equal(fs_inode_path(t, first[i], path, sizeof(path), NULL), -ESTALE);
	}
	assert_int_equal(fs_inode_count(t), 1 + 3 + N);
	assert_int_equal(fs_inodes_check(t), 0);
	/* dir0's list: what it holds, each once (the 255 newest are checked by number:
	 * the list is newest first, and the fake keeps the first 256 told) */
	fs_inodes_set_session(t, fake_se);
	fs_inode_inval_attrs_path(t, "/dir0", true);
	assert_int_equal(sent.calls, 1 + (N + 2) / 3);
	assert_int_equal(sent.inos[0], dirs[0]);
	for (int i = N - 1, told = 0; told < 255; i--)
		if (i % 3 == 0 && i % 2) {
			assert_true(was_sent(second[i]));
			told++;
		}
	fs_inodes_set_session(t, NULL);
	/* everything forgotten: only the root is left */
	for (int i = 0; i < N; i++)
		fs_inode_forget(t, i % 2 ? second[i] : first[i], 1);
	for (int d = 0; d < 3; d++)
		fs_inode_forget(t, dirs[d], 1);
	assert_int_equal(fs_inode_count(t), 1);
	assert_int_equal(fs_inodes_check(t), 0);
}

/* An allocation that fails makes no number and changes nothing (test_chaos.h). */
static void test_a_failed_lookup_changes_nothing(void **state)
{
#ifdef TEST_CHAOS
	struct fs_inodes *t = *state;
	uint64_t dir, ino, again;
	char name[32], path[FS_PATH_BYTES];
	int made = 0;

	if (!chaos_hooks_work())
		return;
	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "dir", &dir), 0);
	/* long names (their copy on the heap) past the first chunk (a chunk more) */
	for (int i = 0; i < 1500; i++) {
		snprintf(name, sizeof(name), "a-long-name-%06d", i);
		chaos_injected = false;
		chaos_countdown = i % 2;
		int r = fs_inode_lookup(t, dir, name, &ino);

		chaos_countdown = -1;
		if (r == 0) {
			made++;
			continue;
		}
		assert_int_equal(r, -ENOMEM);
		assert_true(chaos_injected);
		assert_int_equal(fs_inode_count(t), 2 + (size_t)made);
		assert_int_equal(fs_inode_lookup(t, dir, name, &again), 0);
		made++;
		assert_int_equal(fs_inode_path(t, again, path, sizeof(path), NULL), 0);
		assert_string_equal(path + strlen("/dir/"), name);
		assert_int_equal(fs_inodes_check(t), 0);
	}
	assert_int_equal(fs_inode_count(t), 2 + (size_t)made);
#else
	(void)state;
	print_message("allocation failures cannot be injected here (a sanitizer); not run\n");
#endif
}

/*
 * A view put in place while a sweep tells the kernel (fs_standby.c): versions are the
 * old cluster's, so the sweep ends and leaves swept_version as the swap set it. It
 * stored the old cluster's version, and the new cluster's sweeps then returned at once.
 */
static void test_a_sweep_ends_at_a_view_swap(void **state)
{
	struct fx_opts o = { .servers = 8 };
	struct fs_ctx ctx;
	uint64_t jobs, dir;
	struct sched_cluster *view;

	(void)state;
	memset(&sent, 0, sizeof(sent));
	memset(&ctx, 0, sizeof(ctx));
	ctx.cluster = fx_cluster(&o);
	ctx.conf = ctx.cluster->conf;
	view = fx_cluster(&o);
	pthread_mutex_init(&ctx.lock, NULL);
	pthread_cond_init(&ctx.sweep_cv, NULL);
	assert_int_equal(fs_inodes_init(&ctx.inodes), 0);
	assert_int_equal(fs_inode_lookup(&ctx.inodes, FUSE_ROOT_ID, "jobs", &jobs), 0);
	fx_submit(ctx.cluster, "j1", 1);
	assert_int_equal(fs_inode_lookup(&ctx.inodes, jobs, "j1", &dir), 0);
	assert_true(ctx.cluster->version > view->version);
	fs_inodes_set_session(&ctx.inodes, fake_se);
	sent.swap_ctx = &ctx;
	sent.swap_to = view;
	pthread_mutex_lock(&ctx.lock);
	fs_inode_sweep(&ctx, ctx.cluster->version);
	pthread_mutex_unlock(&ctx.lock);
	assert_ptr_equal(ctx.cluster, view);
	assert_int_equal(ctx.swept_version, 0);
	assert_true(was_sent(dir));
	fs_inodes_set_session(&ctx.inodes, NULL);
	fs_inodes_release(&ctx.inodes);
	sched_cluster_free(sent.swap_to); /* the cluster swapped out */
	sched_cluster_free(ctx.cluster);
	pthread_cond_destroy(&ctx.sweep_cv);
	pthread_mutex_destroy(&ctx.lock);
}

/* more names under a directory than one batch on the stack: every one is told */
static void test_a_large_directory_is_told_whole(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t jobs, inos[200];
	char name[16];

	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &jobs), 0);
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "j%d", i);
		assert_int_equal(fs_inode_lookup(t, jobs, name, &inos[i]), 0);
	}
	fs_inodes_set_session(t, fake_se);
	fs_inode_inval_attrs_path(t, "/jobs", true);
	assert_int_equal(sent.calls, 201);
	assert_true(was_sent(jobs));
	for (int i = 0; i < 200; i++)
		assert_true(was_sent(inos[i]));
	fs_inodes_set_session(t, NULL);
}

/*
 * A sweep tells the kernel of the files of every job marked (SCHED_DIRTY_ATTRS), and
 * says the version swept only then: with an allocation failing on the way, the jobs not
 * yet told are told in the same call, not left until some later change.
 */
static void test_sweep_tells_every_marked_job(void **state)
{
#ifdef TEST_CHAOS
	struct fx_opts o = { .servers = 8 };
	struct fs_ctx ctx;
	uint64_t jobs, dir[40], env[40];
	char name[16];

	(void)state;
	if (!chaos_hooks_work())
		return;
	memset(&sent, 0, sizeof(sent));
	memset(&ctx, 0, sizeof(ctx));
	ctx.cluster = fx_cluster(&o);
	ctx.conf = ctx.cluster->conf;
	pthread_mutex_init(&ctx.lock, NULL);
	pthread_cond_init(&ctx.sweep_cv, NULL);
	assert_int_equal(fs_inodes_init(&ctx.inodes), 0);
	assert_int_equal(fs_inode_lookup(&ctx.inodes, FUSE_ROOT_ID, "jobs", &jobs), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "j%d", i);
		fx_submit(ctx.cluster, name, 1);
		assert_int_equal(fs_inode_lookup(&ctx.inodes, jobs, name, &dir[i]), 0);
		assert_int_equal(fs_inode_lookup(&ctx.inodes, dir[i], "env", &env[i]), 0);
	}
	fs_inodes_set_session(&ctx.inodes, fake_se);
	pthread_mutex_lock(&ctx.lock);
	chaos_countdown = 0; /* the first allocation fails */
	fs_inode_sweep(&ctx, ctx.cluster->version);
	chaos_countdown = -1;
	assert_true(ctx.swept_version >= ctx.cluster->version);
	pthread_mutex_unlock(&ctx.lock);
	assert_true(chaos_injected);
	assert_null(ctx.cluster->dirty_head[SCHED_DIRTY_ATTRS]);
	for (int i = 0; i < 40; i++) {
		assert_true(was_sent(dir[i]));
		assert_true(was_sent(env[i]));
	}
	/* jobs/ itself is not: its times follow the events within a second, as every
	 * directory's */
	assert_false(was_sent(jobs));
	fs_inodes_set_session(&ctx.inodes, NULL);
	fs_inodes_release(&ctx.inodes);
	sched_cluster_free(ctx.cluster);
	pthread_cond_destroy(&ctx.sweep_cv);
	pthread_mutex_destroy(&ctx.lock);
#else
	(void)state;
	print_message("allocation failures cannot be injected here (a sanitizer); not run\n");
#endif
}

/* A table that could not be made is released as if empty (main.c's error path does). */
static void test_a_failed_init_releases_cleanly(void **state)
{
#ifdef TEST_CHAOS
	(void)state;
	if (!chaos_hooks_work())
		return;
	for (long fail_at = 0; fail_at < 3; fail_at++) {
		struct fs_inodes t;

		chaos_injected = false;
		chaos_countdown = fail_at;
		assert_int_equal(fs_inodes_init(&t), -ENOMEM);
		chaos_countdown = -1;
		assert_true(chaos_injected);
		fs_inodes_release(&t); /* freed twice before: glibc aborts */
		fs_inodes_release(&t);
	}
#else
	(void)state;
	print_message("allocation failures cannot be injected here (a sanitizer); not run\n");
#endif
}

struct sender {
	struct fs_inodes *t;
	uint64_t ino;
	bool path, stop;
};

static void *send_loop(void *arg)
{
	struct sender *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST)) {
		if (s->path)
			fs_inode_inval_attrs_path(s->t, "/jobs", true);
		else
			fs_inode_inval_attrs(s->t, s->ino);
	}
	return NULL;
}

/*
 * The shutdown: threads (the committer, the notifier) still invalidating while the
 * daemon lets the session go and unmounts, which closes the descriptor. No invalidation
 * may start, or still be under way, once fs_inodes_set_session(NULL) returned.
 */
static void test_no_invalidation_after_the_session_is_let_go(void **state)
{
	struct fs_inodes *t = *state;
	uint64_t jobs, j1;

	assert_int_equal(fs_inode_lookup(t, FUSE_ROOT_ID, "jobs", &jobs), 0);
	assert_int_equal(fs_inode_lookup(t, jobs, "j1", &j1), 0);
	for (int round = 0; round < 20; round++) {
		struct sender s[4];
		pthread_t th[4];
		unsigned before, start = __atomic_load_n(&sent.calls, __ATOMIC_SEQ_CST);

		sent.closed = false;
		fs_inodes_set_session(t, fake_se);
		for (int i = 0; i < 4; i++) {
			s[i] = (struct sender){ .t = t, .ino = j1, .path = i % 2 };
			assert_int_equal(pthread_create(&th[i], NULL, send_loop, &s[i]), 0);
		}
		/* until they are sending (bounded: 10 s) */
		for (int spin = 0; spin < 10000 &&
				   __atomic_load_n(&sent.calls, __ATOMIC_SEQ_CST) - start < 8;
		     spin++)
			usleep(1000);
		before = __atomic_load_n(&sent.calls, __ATOMIC_SEQ_CST) - start;
		fs_inodes_set_session(t, NULL);
		/* what the unmount does next: the descriptor is closed */
		__atomic_store_n(&sent.closed, true, __ATOMIC_SEQ_CST);
		usleep(2000);
		for (int i = 0; i < 4; i++)
			__atomic_store_n(&s[i].stop, true, __ATOMIC_SEQ_CST);
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		assert_true(before >= 8); /* they were sending when it was let go */
		assert_int_equal(sent.after_close, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup_makes_one_number_per_name, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_only_what_others_were_given_is_watchable,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths_are_made_from_the_names_above, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rmdir_makes_the_old_number_stale, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_forget_frees_and_never_reuses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_invalidations_go_through_the_session_set,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_numbers_outlive_their_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_failed_lookup_changes_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_large_directory_is_told_whole, setup,
						teardown),
		cmocka_unit_test(test_sweep_tells_every_marked_job),
		cmocka_unit_test(test_a_sweep_ends_at_a_view_swap),
		cmocka_unit_test(test_a_failed_init_releases_cleanly),
		cmocka_unit_test_setup_teardown(test_no_invalidation_after_the_session_is_let_go,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
