/* SPDX-License-Identifier: MIT */
/*
 * fs_snapshot.c: what open read-only files hold (issue 15 item 4). cluster/events is one
 * append-only blob that every open shares, each holding a view that never changes while
 * new events append, the ring drops old ones and the blob is rebuilt; other files share
 * the render cache's blob while the cluster is unchanged; the tally charges a user for
 * the distinct blobs they keep that are no longer current, and past the bounds says
 * EMFILE.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "sched_fixture.h"

struct fixture {
	struct fs_ctx ctx;
	struct fs_path events, status;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct fx_opts o = { .servers = 2 };

	assert_non_null(f);
	f->ctx.cluster = fx_cluster(&o);
	f->ctx.conf = f->ctx.cluster->conf;
	assert_int_equal(fs_path_parse("/cluster/events", &f->events), 0);
	assert_int_equal(fs_path_parse("/cluster/status", &f->status), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fs_cache_clear(&f->ctx);
	sched_cluster_free(f->ctx.cluster);
	free(f);
	return 0;
}

static void refuse(struct fixture *f, unsigned i)
{
	char reason[128];

	snprintf(reason, sizeof(reason), "create \"Bad!%06u\" by uid 65534 refused: a test", i);
	sched_cluster_note_refusal(f->ctx.cluster, NULL, reason, fx_now());
}

/* the view's bytes equal what sched_render_events() gives now */
static void assert_view_is_render(struct fixture *f, const struct fs_view *v)
{
	char *text;
	size_t len;

	assert_int_equal(sched_render_events(f->ctx.cluster, NULL, &text, &len), 0);
	assert_int_equal(v->len, len);
	assert_memory_equal(v->blob->data + v->off, text, len);
	free(text);
}

static char *copy_view(const struct fs_view *v)
{
	char *c = malloc(v->len + 1);

	assert_non_null(c);
	memcpy(c, v->blob->data + v->off, v->len);
	return c;
}

static void test_fs_snapshot_events_share_one_blob(void **state)
{
	struct fixture *f = *state;
	struct fs_view v[50];
	char *before[50];

	for (unsigned i = 0; i < 200; i++)
		refuse(f, i);
	for (unsigned k = 0; k < 50; k++) {
		refuse(f, 1000 + k); /* every open sees a changed file */
		assert_int_equal(fs_snapshot(&f->ctx, &f->events, fx_now(), &v[k]), 0);
		assert_view_is_render(f, &v[k]);
		before[k] = copy_view(&v[k]);
		/* one blob for all of them: an open after a change costs no render */
		assert_ptr_equal(v[k].blob, v[0].blob);
		if (k)
			assert_true(v[k].len > v[k - 1].len);
	}
	/* appending never touched bytes an earlier view reads */
	for (unsigned k = 0; k < 50; k++) {
		assert_memory_equal(v[k].blob->data + v[k].off, before[k], v[k].len);
		fs_blob_put(v[k].blob);
		free(before[k]);
	}
}

static void test_fs_snapshot_events_follow_the_ring(void **state)
{
	struct fixture *f = *state;
	struct fs_view v[1500];
	char *before[1500];
	unsigned blobs = 1;

	/* the fixture's ring keeps 64 events at first (it grows as they come): shrink the
	 * history to that, so that it drops the oldest from the 65th on */
	f->ctx.cluster->conf->event_history = 64;
	for (unsigned k = 0; k < 1500; k++) {
		refuse(f, k);
		assert_int_equal(fs_snapshot(&f->ctx, &f->events, fx_now(), &v[k]), 0);
		assert_view_is_render(f, &v[k]);
		before[k] = copy_view(&v[k]);
		if (k && v[k].blob != v[k - 1].blob)
			blobs++;
	}
	/* rebuilt now and then (the dropped lines fill the blob), not at every open */
	assert_true(blobs > 1);
	assert_true(blobs < 20);
	for (unsigned k = 0; k < 1500; k++) {
		assert_memory_equal(v[k].blob->data + v[k].off, before[k], v[k].len);
		fs_blob_put(v[k].blob);
		free(before[k]);
	}
}

static void test_fs_snapshot_job_events_share_one_blob(void **state)
{
	struct fixture *f = *state;
	struct fs_view v[40];
	struct fs_path p;
	char *text, *before[40];
	size_t len;

	assert_int_equal(fs_path_parse("/jobs/train/events", &p), 0);
	assert_int_equal(fs_snapshot(&f->ctx, &p, fx_now(), &v[0]), -ENOENT);
	assert_non_null(fx_submit(f->ctx.cluster, "train", 8));
	assert_non_null(fx_submit(f->ctx.cluster, "other", 8));
	for (unsigned k = 0; k < 40; k++) {
		/* the job's refusals and other events around them */
		sched_job_note_refusal(f->ctx.cluster, "train", "ctl \"x\" by uid 1000 refused",
				       fx_now());
		sched_job_note_refusal(f->ctx.cluster, "other", "ctl \"y\" by uid 1000 refused",
				       fx_now());
		refuse(f, k);
		assert_int_equal(fs_snapshot(&f->ctx, &p, fx_now(), &v[k]), 0);
		assert_int_equal(sched_render_events(f->ctx.cluster, "train", &text, &len), 0);
		assert_int_equal(v[k].len, len);
		assert_memory_equal(v[k].blob->data + v[k].off, text, len);
		free(text);
		before[k] = copy_view(&v[k]);
		assert_ptr_equal(v[k].blob, v[0].blob);
	}
	for (unsigned k = 0; k < 40; k++) {
		assert_memory_equal(v[k].blob->data + v[k].off, before[k], v[k].len);
		fs_blob_put(v[k].blob);
		free(before[k]);
	}
}

static void test_fs_snapshot_cache_shares_until_a_change(void **state)
{
	struct fixture *f = *state;
	struct fs_view a, b, c;

	assert_int_equal(fs_snapshot(&f->ctx, &f->status, fx_now(), &a), 0);
	assert_int_equal(fs_snapshot(&f->ctx, &f->status, fx_now(), &b), 0);
	assert_ptr_equal(a.blob, b.blob);
	refuse(f, 1);
	assert_int_equal(fs_snapshot(&f->ctx, &f->status, fx_now(), &c), 0);
	assert_ptr_not_equal(a.blob, c.blob);
	fs_blob_put(a.blob);
	fs_blob_put(b.blob);
	fs_blob_put(c.blob);
}

/* cluster/jobs says ages in seconds: the opens of one second share a render, the next
 * second renders again (and so does a change). */
static void test_fs_snapshot_jobs_kept_for_its_second(void **state)
{
	struct fixture *f = *state;
	struct fs_view a, b, c, d;
	struct fs_path jobs;
	uint64_t t = (fx_now() / 1000000u + 1) * 1000000u;

	assert_int_equal(fs_path_parse("/cluster/jobs", &jobs), 0);
	assert_int_equal(fs_snapshot(&f->ctx, &jobs, t, &a), 0);
	assert_int_equal(fs_snapshot(&f->ctx, &jobs, t + 999999, &b), 0);
	assert_ptr_equal(a.blob, b.blob);
	assert_int_equal(fs_snapshot(&f->ctx, &jobs, t + 1000000, &c), 0);
	assert_ptr_not_equal(a.blob, c.blob);
	refuse(f, 1);
	assert_int_equal(fs_snapshot(&f->ctx, &jobs, t + 1000000, &d), 0);
	assert_ptr_not_equal(c.blob, d.blob);
	fs_blob_put(a.blob);
	fs_blob_put(b.blob);
	fs_blob_put(c.blob);
	fs_blob_put(d.blob);
}

static void test_fs_snapshot_tally_charges_what_is_kept(void **state)
{
	struct fixture *f = *state;
	struct fs_snapshot_tally t;
	struct fs_view old, cur, ev;

	assert_int_equal(fs_snapshot(&f->ctx, &f->status, fx_now(), &old), 0);
	assert_int_equal(fs_snapshot(&f->ctx, &f->events, fx_now(), &ev), 0);
	/* current blobs cost a user nothing: any open shares them */
	fs_snapshot_tally_begin(&f->ctx, &t);
	fs_snapshot_tally_add(&t, old.blob);
	fs_snapshot_tally_add(&t, old.blob);
	fs_snapshot_tally_add(&t, ev.blob);
	assert_int_equal(t.count, 3);
	assert_int_equal(t.bytes, 0);
	assert_int_equal(fs_snapshot_tally_check(&t, 65534), 0);
	/* after a change the old status is kept alive by its holder alone: charged once */
	refuse(f, 1);
	assert_int_equal(fs_snapshot(&f->ctx, &f->status, fx_now(), &cur), 0);
	fs_snapshot_tally_begin(&f->ctx, &t);
	fs_snapshot_tally_add(&t, old.blob);
	fs_snapshot_tally_add(&t, old.blob);
	fs_snapshot_tally_add(&t, cur.blob);
	fs_snapshot_tally_add(&t, ev.blob); /* the stream's blob: still the live one */
	assert_int_equal(t.bytes, old.blob->cap);
	/* the bounds, and root outside them */
	t.bytes = FS_SNAPSHOT_BYTES_PER_USER + 1;
	assert_int_equal(fs_snapshot_tally_check(&t, 65534), -EMFILE);
	assert_int_equal(fs_snapshot_tally_check(&t, 0), 0);
	t.bytes = 0;
	t.count = FS_OPEN_FILES_PER_USER;
	assert_int_equal(fs_snapshot_tally_check(&t, 65534), 0);
	t.count++;
	assert_int_equal(fs_snapshot_tally_check(&t, 65534), -EMFILE);
	fs_blob_put(old.blob);
	fs_blob_put(cur.blob);
	fs_blob_put(ev.blob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fs_snapshot_events_share_one_blob, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fs_snapshot_events_follow_the_ring, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fs_snapshot_job_events_share_one_blob, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fs_snapshot_cache_shares_until_a_change,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fs_snapshot_jobs_kept_for_its_second, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fs_snapshot_tally_charges_what_is_kept,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
