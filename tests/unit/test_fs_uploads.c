/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the specs open for writing (fs/fs_uploads.c) without a mount: the
 * per-user limit, and a create at that limit right after one of the user's closes,
 * whose RELEASE the kernel sends later (fs_upload_add_after_releases()).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

#define LIMIT 3
#define UID 1000

struct fixture {
	struct fs_ctx ctx;
	struct fs_upload *held[LIMIT];
};

static struct fs_upload *upload_new(const char *name, uid_t uid)
{
	struct fs_upload *u = calloc(1, sizeof(*u));

	assert_non_null(u);
	snprintf(u->name, sizeof(u->name), "%s", name);
	u->uid = uid;
	return u;
}

/* @uid's entry among the users holding uploads, or NULL. */
static const struct fs_upload_user *user_of(const struct fs_ctx *ctx, uid_t uid)
{
	for (size_t i = 0; i < ctx->upload_user_cap; i++)
		for (const struct fs_upload_user *w = ctx->upload_users[i]; w; w = w->next)
			if (w->uid == uid)
				return w;
	return NULL;
}

/* Is a request of @uid waiting for a release? */
static bool user_waiting(const struct fs_ctx *ctx, uid_t uid)
{
	return user_of(ctx, uid) && user_of(ctx, uid)->waiter;
}

/* How many of @uid's uploads are closing. */
static unsigned user_closing(const struct fs_ctx *ctx, uid_t uid)
{
	return user_of(ctx, uid) ? user_of(ctx, uid)->closing_count : 0;
}

/* The user holds LIMIT uploads a0.. a<LIMIT-1>, none closing. */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	pthread_mutex_init(&f->ctx.lock, NULL);
	assert_int_equal(fs_cond_init(&f->ctx.uploads_cv), 0);
	f->ctx.multithreaded = true;
	for (int i = 0; i < LIMIT; i++) {
		char name[8];

		snprintf(name, sizeof(name), "a%d", i);
		f->held[i] = upload_new(name, UID);
		assert_int_equal(fs_upload_add(&f->ctx, f->held[i], LIMIT), 0);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fs_uploads_free_all(&f->ctx); /* frees every upload still listed */
	pthread_cond_destroy(&f->ctx.uploads_cv);
	pthread_mutex_destroy(&f->ctx.lock);
	free(f);
	return 0;
}

/* What fs_release() does for upload @i: unlist it, wake the waiters, free it. */
static void release(struct fixture *f, int i)
{
	pthread_mutex_lock(&f->ctx.lock);
	fs_upload_remove(&f->ctx, f->held[i]);
	pthread_cond_broadcast(&f->ctx.uploads_cv);
	pthread_mutex_unlock(&f->ctx.lock);
	free(f->held[i]);
	f->held[i] = NULL;
}

static void *release_a0(void *arg)
{
	release(arg, 0);
	return NULL;
}

static void test_limit_refuses_the_next_create(void **state)
{
	struct fixture *f = *state;
	struct fs_upload *u = upload_new("b", UID), *other = upload_new("c", UID + 1);

	assert_int_equal(fs_upload_add(&f->ctx, u, LIMIT), -EMFILE);
	assert_int_equal(fs_upload_count(&f->ctx, UID), LIMIT);
	/* nothing is closing: nothing to wait for */
	assert_int_equal(fs_upload_add_after_releases(&f->ctx, u, LIMIT), -EMFILE);
	/* another user is not limited by this one */
	assert_int_equal(fs_upload_add(&f->ctx, other, LIMIT), 0);
	free(u);
}

/* The close of a0 returned; its RELEASE comes from another thread while the create waits. */
static void test_create_after_a_close_waits_for_its_release(void **state)
{
	struct fixture *f = *state;
	struct fs_upload *u = upload_new("b", UID);
	pthread_t t;

	pthread_mutex_lock(&f->ctx.lock);
	fs_upload_set_closing(&f->ctx, f->held[0], true, fs_now_usec());
	/* the releasing thread needs the lock, which the wait drops */
	assert_int_equal(pthread_create(&t, NULL, release_a0, f), 0);
	assert_int_equal(fs_upload_add(&f->ctx, u, LIMIT), -EMFILE);
	assert_int_equal(fs_upload_add_after_releases(&f->ctx, u, LIMIT), 0);
	assert_int_equal(fs_upload_count(&f->ctx, UID), LIMIT);
	assert_ptr_equal(fs_upload_find(&f->ctx, "b"), u);
	pthread_mutex_unlock(&f->ctx.lock);
	pthread_join(t, NULL);
	assert_null(f->held[0]);
}

/* A close long ago whose descriptor a duplicate still holds makes no room: no wait. */
/* a0 closed at @closed_usec, its release not here: a create at the limit is refused at
 * once (no release to wait for would come before the answer is due) */
static void expect_refused_at_once(struct fixture *f, uint64_t closed_usec)
{
	struct fs_upload *u = upload_new("b", UID);

	pthread_mutex_lock(&f->ctx.lock);
	fs_upload_set_closing(&f->ctx, f->held[0], true, closed_usec);
	assert_int_equal(fs_upload_add_after_releases(&f->ctx, u, LIMIT), -EMFILE);
	pthread_mutex_unlock(&f->ctx.lock);
	free(u);
}

static void test_old_close_held_open_is_not_waited_for(void **state)
{
	expect_refused_at_once(*state, fs_now_usec() - (uint64_t)FS_RELEASE_WAIT_MSEC * 1000u - 1);
}

/* Written again after its close: not closing any more; its release is not near. */
static void test_write_after_close_is_not_closing(void **state)
{
	struct fixture *f = *state;
	struct fs_upload *u = upload_new("b", UID);

	pthread_mutex_lock(&f->ctx.lock);
	fs_upload_set_closing(&f->ctx, f->held[1], true, fs_now_usec());
	fs_upload_set_closing(&f->ctx, f->held[1], true, fs_now_usec()); /* a second close */
	assert_int_equal(user_closing(&f->ctx, UID), 1);
	fs_upload_set_closing(&f->ctx, f->held[1], false, 0);
	assert_false(f->held[1]->closing);
	assert_int_equal(user_closing(&f->ctx, UID), 0);
	assert_int_equal(fs_upload_add_after_releases(&f->ctx, u, LIMIT), -EMFILE);
	pthread_mutex_unlock(&f->ctx.lock);
	free(u);
}

/* A closing upload that is released is no longer counted as closing. */
static void test_release_of_a_closing_upload_forgets_it(void **state)
{
	struct fixture *f = *state;
	struct fs_upload *u = upload_new("b", UID), *u2 = upload_new("d", UID);
	struct fs_upload *v = upload_new("c", UID);

	pthread_mutex_lock(&f->ctx.lock);
	fs_upload_set_closing(&f->ctx, f->held[2], true, fs_now_usec());
	fs_upload_set_closing(&f->ctx, f->held[1], true, fs_now_usec());
	assert_int_equal(user_closing(&f->ctx, UID), 2);
	pthread_mutex_unlock(&f->ctx.lock);
	release(f, 2);
	release(f, 1);
	pthread_mutex_lock(&f->ctx.lock);
	assert_int_equal(user_closing(&f->ctx, UID), 0);
	/* the room they made */
	assert_int_equal(fs_upload_add(&f->ctx, u, LIMIT), 0);
	assert_int_equal(fs_upload_add(&f->ctx, u2, LIMIT), 0);
	/* at the limit again, with nothing closing: answered at once */
	assert_int_equal(fs_upload_add(&f->ctx, v, LIMIT), -EMFILE);
	assert_int_equal(fs_upload_add_after_releases(&f->ctx, v, LIMIT), -EMFILE);
	pthread_mutex_unlock(&f->ctx.lock);
	free(v);
}

/* -s: nobody could release while a request waits. */
static void test_single_threaded_never_waits(void **state)
{
	struct fixture *f = *state;

	f->ctx.multithreaded = false;
	expect_refused_at_once(f, fs_now_usec());
}

struct waiter {
	struct fixture *f;
	struct fs_upload *u;
	int r;
	bool done;
};

static void *wait_to_add(void *arg)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->f->ctx.lock);
	w->r = fs_upload_add(&w->f->ctx, w->u, LIMIT);
	if (w->r == -EMFILE)
		w->r = fs_upload_add_after_releases(&w->f->ctx, w->u, LIMIT);
	w->done = true;
	pthread_mutex_unlock(&w->f->ctx.lock);
	return NULL;
}

/* One request per user waits; a second is answered at once and takes no room. */
static void test_one_waiter_per_user(void **state)
{
	struct fixture *f = *state;
	struct waiter w = { .f = f, .u = upload_new("b", UID) };
	struct fs_upload *second = upload_new("c", UID);
	pthread_t t;
	bool waiting = false;

	pthread_mutex_lock(&f->ctx.lock);
	fs_upload_set_closing(&f->ctx, f->held[0], true, fs_now_usec());
	pthread_mutex_unlock(&f->ctx.lock);
	assert_int_equal(pthread_create(&t, NULL, wait_to_add, &w), 0);
	/* until the first request waits (it marks its user, then drops the lock) */
	for (int i = 0; i < 10000 && !waiting; i++) {
		pthread_mutex_lock(&f->ctx.lock);
		waiting = user_waiting(&f->ctx, UID);
		pthread_mutex_unlock(&f->ctx.lock);
		if (!waiting)
			usleep(1000);
	}
	assert_true(waiting);
	pthread_mutex_lock(&f->ctx.lock);
	/* answered at once, while the first still waits */
	assert_int_equal(fs_upload_add_after_releases(&f->ctx, second, LIMIT), -EMFILE);
	assert_false(w.done);
	assert_null(fs_upload_find(&f->ctx, "c"));
	pthread_mutex_unlock(&f->ctx.lock);
	release(f, 0);
	pthread_join(t, NULL);
	assert_int_equal(w.r, 0);
	assert_ptr_equal(fs_upload_find(&f->ctx, "b"), w.u);
	free(second);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_limit_refuses_the_next_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_after_a_close_waits_for_its_release,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_close_held_open_is_not_waited_for, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_after_close_is_not_closing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_release_of_a_closing_upload_forgets_it, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_single_threaded_never_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_waiter_per_user, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
