/* SPDX-License-Identifier: MIT */
/*
 * fs_handle.c's lists of each user's open files, without a mount: the per-user bound on
 * open snapshots and ctl files counts the user's own files alone, and an open refused
 * at that bound right after one of the user's closes (a FLUSH came) waits for that
 * file's late RELEASE (fs_handle_wait_release()): one request per user, only after a
 * close within FS_RELEASE_WAIT_MSEC, never past its deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_internal.h"
#include "sched_fixture.h"

#define HOLDER 1000
#define OTHER 1001

struct fixture {
	struct fs_ctx ctx;
	struct fs_view status; /* a snapshot of cluster/status every test handle shares */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct fx_opts o = { .servers = 2 };
	struct fs_path p;

	assert_non_null(f);
	f->ctx.cluster = fx_cluster(&o);
	f->ctx.conf = f->ctx.cluster->conf;
	pthread_mutex_init(&f->ctx.lock, NULL);
	assert_int_equal(fs_cond_init(&f->ctx.handles_cv), 0);
	f->ctx.multithreaded = true;
	assert_int_equal(fs_path_parse("/cluster/status", &p), 0);
	assert_int_equal(fs_snapshot(&f->ctx, &p, fx_now(), &f->status), 0);
	*state = f;
	return 0;
}

static void handle_free(struct fs_handle *h)
{
	if (h->kind == H_SNAPSHOT)
		fs_blob_put(h->snap.blob);
	free(h);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct fs_handle *h;

	while ((h = fs_handle_unlist_any(&f->ctx)))
		handle_free(h);
	assert_int_equal(f->ctx.handle_user_count, 0);
	assert_null(f->ctx.handle_users);
	fs_blob_put(f->status.blob);
	fs_cache_clear(&f->ctx);
	sched_cluster_free(f->ctx.cluster);
	pthread_cond_destroy(&f->ctx.handles_cv);
	pthread_mutex_destroy(&f->ctx.lock);
	free(f);
	return 0;
}

/* A listed handle of @kind opened by @uid (a snapshot holds the shared status blob). */
static struct fs_handle *open_one(struct fixture *f, uid_t uid, enum handle_kind kind)
{
	struct fs_handle *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	h->kind = kind;
	h->uid = uid;
	if (kind == H_SNAPSHOT) {
		h->snap = f->status;
		f->status.blob->refs++;
	}
	assert_int_equal(fs_handle_list(&f->ctx, h), 0);
	return h;
}

static void close_one(struct fixture *f, struct fs_handle *h)
{
	fs_handle_unlist(&f->ctx, h);
	handle_free(h);
}

static size_t count_listed(const struct fixture *f, uid_t uid)
{
	size_t n = 0;

	for (const struct fs_handle *h = fs_handles_of(&f->ctx, uid); h; h = h->next)
		n++;
	return n;
}

/* @uid holds the bound's worth: FS_OPEN_FILES_PER_USER snapshots and ctl files. */
static void fill_to_bound(struct fixture *f, uid_t uid)
{
	for (unsigned i = 0; i < FS_OPEN_FILES_PER_USER; i++)
		open_one(f, uid, i % 64 ? H_SNAPSHOT : H_CTL);
}

static void test_handle_bound_counts_the_users_own_files(void **state)
{
	struct fixture *f = *state;

	fill_to_bound(f, HOLDER);
	/* uploads and health reports are bounded apart: they do not count here */
	for (unsigned i = 0; i < 100; i++)
		open_one(f, OTHER, i % 2 ? H_UPLOAD : H_HEALTH);
	assert_int_equal(count_listed(f, HOLDER), FS_OPEN_FILES_PER_USER);
	assert_int_equal(count_listed(f, OTHER), 100);
	assert_int_equal(count_listed(f, 4242), 0);
	assert_int_equal(fs_handle_admit(&f->ctx, HOLDER, f->status.blob), -EMFILE);
	assert_int_equal(fs_handle_admit(&f->ctx, HOLDER, NULL), -EMFILE);
	assert_int_equal(fs_handle_admit(&f->ctx, OTHER, f->status.blob), 0);
	assert_int_equal(fs_handle_admit(&f->ctx, OTHER, NULL), 0);
	assert_int_equal(fs_handle_admit(&f->ctx, 0, f->status.blob), 0); /* root: no bound */
	/* one close makes room */
	close_one(f, fs_handles_of(&f->ctx, HOLDER));
	assert_int_equal(fs_handle_admit(&f->ctx, HOLDER, f->status.blob), 0);
}

static void test_handle_users_go_with_their_last_file(void **state)
{
	struct fixture *f = *state;
	struct fs_handle *a = open_one(f, HOLDER, H_SNAPSHOT);
	struct fs_handle *b = open_one(f, HOLDER, H_CTL);
	struct fs_handle *c = open_one(f, OTHER, H_SNAPSHOT);

	assert_int_equal(f->ctx.handle_user_count, 2);
	fs_handle_unlist(&f->ctx, a);
	fs_handle_unlist(&f->ctx, a); /* not listed any more: nothing happens */
	assert_ptr_equal(fs_handles_of(&f->ctx, HOLDER), b);
	assert_int_equal(count_listed(f, HOLDER), 1);
	assert_int_equal(fs_handle_list(&f->ctx, a), 0);
	close_one(f, a); /* the head of the list */
	assert_ptr_equal(fs_handles_of(&f->ctx, HOLDER), b);
	close_one(f, b);
	assert_null(fs_handles_of(&f->ctx, HOLDER));
	assert_int_equal(f->ctx.handle_user_count, 1);
	close_one(f, c);
	assert_int_equal(f->ctx.handle_user_count, 0);
}

struct late_release {
	struct fixture *f;
	struct fs_handle *h;
	unsigned msec;
};

/* The kernel's RELEASE of a file whose close() has returned, @msec later. */
static void *release_later(void *arg)
{
	struct late_release *l = arg;

	usleep(l->msec * 1000u);
	pthread_mutex_lock(&l->f->ctx.lock);
	close_one(l->f, l->h);
	pthread_mutex_unlock(&l->f->ctx.lock);
	return NULL;
}

/* close() of @h: the FLUSH, under ctx->lock as fs_flush() takes it. */
static void flushed(struct fixture *f, struct fs_handle *h)
{
	pthread_mutex_lock(&f->ctx.lock);
	fs_handle_set_closing(&f->ctx, h, fs_now_usec());
	pthread_mutex_unlock(&f->ctx.lock);
}

static bool wait_release(struct fixture *f, uid_t uid)
{
	struct timespec deadline;

	fs_deadline_in(&deadline, FS_RELEASE_WAIT_MSEC);
	return fs_handle_wait_release(&f->ctx, uid, &deadline);
}

static void test_handle_open_at_the_bound_waits_for_a_late_release(void **state)
{
	struct fixture *f = *state;
	struct late_release l = { .f = f, .msec = 200 };
	pthread_t t;
	uint64_t t0;

	fill_to_bound(f, HOLDER);
	l.h = fs_handles_of(&f->ctx, HOLDER);
	flushed(f, l.h);
	assert_int_equal(pthread_create(&t, NULL, release_later, &l), 0);
	pthread_mutex_lock(&f->ctx.lock);
	t0 = fs_now_usec();
	assert_int_equal(fs_handle_admit(&f->ctx, HOLDER, f->status.blob), -EMFILE);
	assert_true(wait_release(f, HOLDER));
	assert_true(fs_now_usec() - t0 >= 150 * 1000u);
	assert_true(fs_now_usec() - t0 < (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u);
	assert_int_equal(fs_handle_admit(&f->ctx, HOLDER, f->status.blob), 0);
	pthread_mutex_unlock(&f->ctx.lock);
	pthread_join(t, NULL);
}

/* Other files' releases (an upload; a file never flushed) make no room for the bound:
 * the wait goes on for the closing one. */
static void test_handle_wait_is_for_a_closing_files_release(void **state)
{
	struct fixture *f = *state;
	struct late_release upload = { .f = f, .msec = 50 }, held = { .f = f, .msec = 100 };
	struct late_release closing = { .f = f, .msec = 300 };
	pthread_t t[3];
	uint64_t t0;

	pthread_mutex_lock(&f->ctx.lock);
	upload.h = open_one(f, HOLDER, H_UPLOAD);
	fill_to_bound(f, HOLDER);
	held.h = fs_handles_of(&f->ctx, HOLDER);
	closing.h = held.h->next;
	pthread_mutex_unlock(&f->ctx.lock);
	flushed(f, closing.h);
	assert_int_equal(pthread_create(&t[0], NULL, release_later, &upload), 0);
	assert_int_equal(pthread_create(&t[1], NULL, release_later, &held), 0);
	assert_int_equal(pthread_create(&t[2], NULL, release_later, &closing), 0);
	pthread_mutex_lock(&f->ctx.lock);
	t0 = fs_now_usec();
	assert_true(wait_release(f, HOLDER));
	assert_true(fs_now_usec() - t0 >= 250 * 1000u);
	pthread_mutex_unlock(&f->ctx.lock);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

/* The user's last file released while a request waits: the entry stays for the waiter,
 * then goes. */
static void test_handle_wait_sees_the_users_last_file_go(void **state)
{
	struct fixture *f = *state;
	struct late_release l = { .f = f, .msec = 100 };
	pthread_t t;

	pthread_mutex_lock(&f->ctx.lock);
	l.h = open_one(f, HOLDER, H_SNAPSHOT);
	pthread_mutex_unlock(&f->ctx.lock);
	flushed(f, l.h);
	assert_int_equal(pthread_create(&t, NULL, release_later, &l), 0);
	pthread_mutex_lock(&f->ctx.lock);
	assert_true(wait_release(f, HOLDER));
	assert_int_equal(f->ctx.handle_user_count, 0);
	pthread_mutex_unlock(&f->ctx.lock);
	pthread_join(t, NULL);
}

struct second {
	struct fixture *f;
	bool released;
	uint64_t usec;
};

static void *wait_too(void *arg)
{
	struct second *s = arg;
	uint64_t t0 = fs_now_usec();

	pthread_mutex_lock(&s->f->ctx.lock);
	s->released = wait_release(s->f, HOLDER);
	pthread_mutex_unlock(&s->f->ctx.lock);
	s->usec = fs_now_usec() - t0;
	return NULL;
}

static void test_handle_wait_only_after_a_close_one_request_per_user(void **state)
{
	struct fixture *f = *state;
	struct second s = { .f = f };
	struct late_release other = { .f = f, .msec = 100 };
	pthread_t t, r;
	uint64_t t0;

	/* nothing held; nothing closing (a user really at the bound); nobody to release
	 * (-s); a close longer ago than the window: no wait */
	pthread_mutex_lock(&f->ctx.lock);
	t0 = fs_now_usec();
	assert_false(wait_release(f, HOLDER));
	fill_to_bound(f, HOLDER);
	assert_false(wait_release(f, HOLDER));
	fs_handle_set_closing(&f->ctx, fs_handles_of(&f->ctx, HOLDER),
			      fs_now_usec() - (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u - 1);
	assert_false(wait_release(f, HOLDER));
	fs_handle_set_closing(&f->ctx, fs_handles_of(&f->ctx, HOLDER), fs_now_usec());
	f->ctx.multithreaded = false;
	assert_false(wait_release(f, HOLDER));
	f->ctx.multithreaded = true;
	pthread_mutex_unlock(&f->ctx.lock);
	assert_true(fs_now_usec() - t0 < 100 * 1000u);
	/* a second request of the user's while one waits is answered at once; the first,
	 * with no release, waits until its deadline and no longer */
	flushed(f, fs_handles_of(&f->ctx, HOLDER));
	t0 = fs_now_usec();
	assert_int_equal(pthread_create(&t, NULL, wait_too, &s), 0);
	usleep(100 * 1000);
	pthread_mutex_lock(&f->ctx.lock);
	assert_false(wait_release(f, HOLDER));
	assert_true(fs_now_usec() - t0 < (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u);
	other.h = open_one(f, OTHER, H_SNAPSHOT);
	pthread_mutex_unlock(&f->ctx.lock);
	/* another user's request waits on its own */
	flushed(f, other.h);
	assert_int_equal(pthread_create(&r, NULL, release_later, &other), 0);
	pthread_mutex_lock(&f->ctx.lock);
	assert_true(wait_release(f, OTHER));
	pthread_mutex_unlock(&f->ctx.lock);
	pthread_join(r, NULL);
	pthread_join(t, NULL);
	assert_false(s.released);
	assert_true(s.usec >= (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u - 100 * 1000u);
	assert_true(s.usec < (uint64_t)FS_RELEASE_WAIT_MSEC * 3000u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_handle_bound_counts_the_users_own_files,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_users_go_with_their_last_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_handle_open_at_the_bound_waits_for_a_late_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_wait_is_for_a_closing_files_release,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_wait_sees_the_users_last_file_go,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_handle_wait_only_after_a_close_one_request_per_user, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
