/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the event ring (sched/sched_cluster.c, sched_event_load in
 * sched_state.c): events with short and long reasons keep their fields and lines byte for
 * byte through a copy and a reload; the ring wraps in sequence order without gaps; an
 * event's memory is its content (the event_bytes counter), not a fixed-size slot; an
 * event whose allocation fails is counted in cluster/status events_dropped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "test_util.h"
#include "test_chaos.h"

/* A 2-server cluster that keeps @history events. */
static struct sched_cluster *cluster_keeping(unsigned history)
{
	struct fx_opts o = { .servers = 2 };
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_error err;
	char *yaml = fx_cluster_yaml(&o);

	memset(&err, 0, sizeof(err));
	assert_int_equal(conf_cluster_parse(yaml, strlen(yaml), "fixture.yaml", &conf, &err), 0);
	free(yaml);
	conf->event_history = history;
	assert_int_equal(sched_cluster_new(conf, &c), 0);
	return c;
}

/* A reason of @len bytes (ASCII, so that any cut is valid UTF-8), JSON escapes inside. */
static char *reason_of(size_t len)
{
	static const char pattern[] = "abc \"quoted\" \\ tab\t/ nl\n ";
	char *r = malloc(len + 1);

	assert_non_null(r);
	for (size_t i = 0; i < len; i++)
		r[i] = pattern[i % (sizeof(pattern) - 1)];
	r[len] = '\0';
	return r;
}

/* The bytes an event's own allocation must hold: its line and its three strings. */
static size_t content_bytes(const struct sched_event *e)
{
	return e->line_len + 1 + strlen(e->job) + 1 + strlen(e->server) + 1 + strlen(e->reason) + 1;
}

static void expect_same_event(const struct sched_event *a, const struct sched_event *b)
{
	assert_true(a->seq == b->seq);
	assert_true(a->time_usec == b->time_usec);
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->npu, b->npu);
	assert_string_equal(a->job, b->job);
	assert_string_equal(a->server, b->server);
	assert_string_equal(a->reason, b->reason);
	if (a->state || b->state)
		assert_string_equal(a->state, b->state);
	assert_non_null(a->line);
	assert_non_null(b->line);
	assert_int_equal(a->line_len, b->line_len);
	assert_memory_equal(a->line, b->line, a->line_len + 1);
}

static const size_t reason_lens[] = { 0, 1, 7, 60, 300, SCHED_REASON_MAX - 1, SCHED_REASON_MAX,
				      3 * SCHED_REASON_MAX };
#define REASON_COUNT (sizeof(reason_lens) / sizeof(reason_lens[0]))

static void test_event_reasons_round_trip(void **state)
{
	struct sched_cluster *c = cluster_keeping(256), *d = cluster_keeping(256),
			     *r = cluster_keeping(256);
	struct sched_event copies[2 * REASON_COUNT + 1];
	size_t n = 0;
	char *all_c, *all_d, *all_r, *job_c, *job_d;
	size_t len_c, len_d, len_r, len;

	(void)state;
	for (size_t i = 0; i < REASON_COUNT; i++) {
		char *reason = reason_of(reason_lens[i]);

		sched_cluster_note_refusal(c, i % 2 ? "node-1" : NULL, reason, fx_now());
		free(reason);
	}
	/* job, server, NPU and state fields, through the restore's entry point */
	for (size_t i = 0; i < REASON_COUNT; i++) {
		char *reason = reason_of(reason_lens[i]);

		assert_int_equal(sched_event_load(c, c->next_event_seq, fx_now(), "placed",
						  "llama-70b", i % 3 ? "node-0" : NULL, (int)i - 1,
						  "running", reason, NULL),
				 0);
		free(reason);
	}
	for (const struct sched_event *e = sched_event_next(c, 0); e;
	     e = sched_event_next(c, e->seq)) {
		size_t want = reason_lens[(e->seq - 1) % REASON_COUNT];
		json_error_t jerr;
		json_t *o = json_loadb(e->line, e->line_len, 0, &jerr);

		/* the reason is kept whole up to SCHED_REASON_MAX - 1 bytes */
		if (want > SCHED_REASON_MAX - 1)
			want = SCHED_REASON_MAX - 1;
		assert_int_equal(strlen(e->reason), want);
		assert_non_null(o);
		assert_string_equal(json_string_value(json_object_get(o, "reason")), e->reason);
		assert_true((uint64_t)json_integer_value(json_object_get(o, "seq")) == e->seq);
		json_decref(o);
		assert_int_equal(strlen(e->line), e->line_len);
		assert_int_equal(sched_event_copy(&copies[n++], e), 0);
	}
	assert_int_equal(n, 2 * REASON_COUNT);

	/* reloaded with the saved line (as the store does) and rendered again: same bytes */
	for (size_t i = 0; i < n; i++) {
		const struct sched_event *e = &copies[i];

		assert_int_equal(sched_event_load(d, e->seq, e->time_usec,
						  sched_event_kind_name(e->kind), e->job, e->server,
						  e->npu, e->state, e->reason, e->line),
				 0);
		assert_int_equal(sched_event_load(r, e->seq, e->time_usec,
						  sched_event_kind_name(e->kind),
						  e->job[0] ? e->job : NULL,
						  e->server[0] ? e->server : NULL, e->npu, e->state,
						  e->reason, NULL),
				 0);
	}
	for (size_t i = 0; i < n; i++) {
		expect_same_event(&copies[i], sched_event_next(c, copies[i].seq - 1));
		expect_same_event(&copies[i], sched_event_next(d, copies[i].seq - 1));
		expect_same_event(&copies[i], sched_event_next(r, copies[i].seq - 1));
		sched_event_release(&copies[i]);
		assert_null(copies[i].line);
	}
	assert_int_equal(sched_render_events(c, NULL, &all_c, &len_c), 0);
	assert_int_equal(sched_render_events(d, NULL, &all_d, &len_d), 0);
	assert_int_equal(sched_render_events(r, NULL, &all_r, &len_r), 0);
	assert_int_equal(len_c, len_d);
	assert_int_equal(len_c, len_r);
	assert_memory_equal(all_c, all_d, len_c);
	assert_memory_equal(all_c, all_r, len_c);
	assert_int_equal(sched_render_events(c, "llama-70b", &job_c, &len), 0);
	assert_int_equal(sched_render_events(d, "llama-70b", &job_d, &len_d), 0);
	assert_int_equal(len, len_d);
	assert_memory_equal(job_c, job_d, len);
	assert_non_null(strstr(all_c, job_c)); /* the job's events are the newest half */
	free(all_c);
	free(all_d);
	free(all_r);
	free(job_c);
	free(job_d);
	assert_true(c->event_bytes == d->event_bytes);
	assert_true(c->event_bytes == r->event_bytes);
	sched_cluster_free(c);
	sched_cluster_free(d);
	sched_cluster_free(r);
}

static void test_event_ring_wraps_in_seq_order(void **state)
{
	const unsigned history = 100; /* grows 64 -> 100, then wraps */
	struct sched_cluster *c = cluster_keeping(history);
	char reason[64];
	uint64_t expect;

	(void)state;
	for (unsigned i = 1; i <= 357; i++) {
		snprintf(reason, sizeof(reason), "event %u", i);
		sched_cluster_note_refusal(c, NULL, reason, fx_now());
		assert_true(c->next_event_seq == i + 1);
		assert_int_equal(c->event_count, i < history ? i : history);
		assert_true(c->event_cap <= history);

		/* after every step: the newest min(i, history) events, in order, no gap */
		expect = i > history ? i - history + 1 : 1;
		for (const struct sched_event *e = sched_event_next(c, 0); e;
		     e = sched_event_next(c, e->seq)) {
			snprintf(reason, sizeof(reason), "event %llu", (unsigned long long)e->seq);
			assert_true(e->seq == expect);
			assert_string_equal(e->reason, reason);
			expect++;
		}
		assert_true(expect == i + 1);
	}
	/* asking from a dropped seq starts at the oldest kept; past the newest: none */
	assert_true(sched_event_next(c, 3)->seq == 357 - history + 1);
	assert_true(sched_event_next(c, 300)->seq == 301);
	assert_null(sched_event_next(c, 357));
	sched_event_forget_all(c);
	assert_null(sched_event_next(c, 0));
	assert_true(c->event_bytes == 0);
	sched_cluster_note_refusal(c, NULL, "after", fx_now());
	assert_true(sched_event_next(c, 0)->seq == 358); /* the sequence goes on */
	sched_cluster_free(c);
}

static void test_event_memory_is_its_content(void **state)
{
	struct sched_cluster *c = cluster_keeping(64);
	size_t before, sum;

	(void)state;
	/* an event's memory is its line and strings: a short reason costs a short event */
	for (unsigned i = 0; i < 3 * 64; i++) {
		size_t len = reason_lens[i % REASON_COUNT];
		char *reason = reason_of(len);
		const struct sched_event *e;

		before = c->event_bytes;
		sched_cluster_note_refusal(c, i % 2 ? "node-1" : NULL, reason, fx_now());
		free(reason);
		e = sched_event_next(c, c->next_event_seq - 2);
		assert_non_null(e);
		assert_int_equal(sched_event_size(e), content_bytes(e));
		if (len == 0)
			assert_true(sched_event_size(e) < 160);
		/* a line of a few dozen fixed bytes beside the reason (escaped: at most 6x) */
		assert_true(sched_event_size(e) <= 160 + 7 * strlen(e->reason));
		if (i < 64)
			assert_true(c->event_bytes == before + sched_event_size(e));
		sum = 0;
		for (e = sched_event_next(c, 0); e; e = sched_event_next(c, e->seq))
			sum += sched_event_size(e);
		assert_true(c->event_bytes == sum);
	}
	/* a slot holds no inline string: pointers and numbers */
	assert_true(sizeof(struct sched_event) <= 80);
	sched_cluster_free(c);
}

#ifdef TEST_CHAOS
/* cluster/status "events_dropped" (-1 when absent). */
static long long status_events_dropped(const struct sched_cluster *c)
{
	char *out = NULL;
	size_t len = 0;
	json_t *root, *v;
	long long n = -1;

	assert_int_equal(sched_render_cluster_status(c, &out, &len), 0);
	root = json_loadb(out, len, 0, NULL);
	assert_non_null(root);
	v = json_object_get(root, "events_dropped");
	if (json_is_integer(v))
		n = json_integer_value(v);
	json_decref(root);
	free(out);
	return n;
}

/* Events cluster/events shows: one line each. */
static size_t rendered_events(const struct sched_cluster *c)
{
	char *out = NULL;
	size_t len = 0, lines = 0;

	assert_int_equal(sched_render_events(c, NULL, &out, &len), 0);
	for (size_t i = 0; i < len; i++)
		lines += out[i] == '\n';
	free(out);
	return lines;
}

#endif

static void test_event_allocation_failure_is_counted(void **state)
{
#ifdef TEST_CHAOS
	struct sched_cluster *c = cluster_keeping(1000);
	unsigned drops = 0;

	(void)state;
	if (!chaos_hooks_work()) {
		sched_cluster_free(c);
		return;
	}
	assert_int_equal(status_events_dropped(c), 0);
	/* each allocation of adding one event fails in turn: the event is shown, or, when
	 * its own allocation failed, counted; every sequence number is one or the other */
	for (long n = 0;; n++) {
		chaos_injected = false;
		chaos_countdown = n;
		sched_cluster_note_refusal(c, "node-1", "refused under test", fx_now());
		chaos_countdown = -1;
		assert_true(rendered_events(c) + (size_t)status_events_dropped(c) ==
			    c->next_event_seq - 1);
		if (!chaos_injected)
			break;
		drops += status_events_dropped(c) > (long long)drops;
	}
	assert_true(drops >= 1);
	sched_cluster_free(c);
#else
	(void)state;
	print_message("allocation-failure injection needs glibc without a sanitizer; not run\n");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_reasons_round_trip),
		cmocka_unit_test(test_event_ring_wraps_in_seq_order),
		cmocka_unit_test(test_event_memory_is_its_content),
		cmocka_unit_test(test_event_allocation_failure_is_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
