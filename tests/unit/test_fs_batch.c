/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of a batch's encoding (fs/fs_batch.c), what the etcd backend keeps in its
 * log: every field of every kind of record survives the round trip, bytes and all
 * (a NUL in a staged body, a job record of several MiB, absent fields); anything that is
 * not such an encoding (cut anywhere, a newer format, a record of an unknown kind, a
 * field that is not a netstring) is refused with a reason, never read in part.
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

#include "fs_store.h"
#include "test_util.h"

static char *dup_(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

/* A batch with two of every kind of record. */
static void build(struct fs_batch *b, size_t big)
{
	static const gid_t groups[] = { 10, 4000000000u };
	struct fs_staged *s1 = calloc(1, sizeof(*s1)), *s2 = calloc(1, sizeof(*s2));
	char *large = malloc(big + 1);

	assert_non_null(s1);
	assert_non_null(s2);
	assert_non_null(large);
	memset(b, 0, sizeof(*b));
	b->version = 123456789012ULL;
	b->full = true;
	b->event_history = 65536;
	b->accounting_history = 16;
	b->staged_all = true;
	snprintf(b->clock, sizeof(b->clock), "1765000000000000 42 boot-id");
	b->meta = dup_("{\"next_serial\":7}");
	b->jobs = calloc(2, sizeof(*b->jobs));
	b->job_count = 2;
	b->jobs[0] = (struct fs_batch_job){ .serial = 5, .name = "a", .state = "running",
					    .runs_from = 3 };
	b->jobs[0].doc = dup_("{\"name\":\"a\",\"quote\":\"\\\"\"}");
	memset(large, 'x', big);
	large[big] = '\0';
	b->jobs[1] = (struct fs_batch_job){ .serial = 6, .name = "big", .state = "pending" };
	b->jobs[1].doc = large;
	b->runs = calloc(1, sizeof(*b->runs));
	b->run_count = b->run_cap = 1;
	b->runs[0] = (struct fs_batch_run){ .serial = 5, .number = 2, .doc = dup_("{\"run\":2}") };
	b->removed = calloc(2, sizeof(uint64_t));
	b->removed[0] = 1;
	b->removed[1] = 18446744073709551ULL;
	b->removed_count = 2;
	b->servers = calloc(1, sizeof(*b->servers));
	b->server_count = 1;
	snprintf(b->servers[0].name, sizeof(b->servers[0].name), "a2-node-01");
	b->servers[0].doc = dup_("{\"health\":[0,1]}");
	b->events = calloc(2, sizeof(*b->events));
	b->event_count = 2;
	b->events[0] = (struct fs_batch_event){ .seq = 9, .time_usec = 11, .npu = -1,
						.kind = "submitted", .state = "pending",
						.job = "a", .server = "", .reason = "it, came",
						.line = "{\"seq\":9}" };
	/* no state, no line, a kind this ascendfs may not know: carried as it is */
	b->events[1] = (struct fs_batch_event){ .seq = 10, .time_usec = 12, .npu = 7,
						.kind = "future-kind", .state = NULL, .job = "",
						.server = "a2-node-01", .reason = "", .line = NULL };
	b->accts = calloc(1, sizeof(*b->accts));
	b->acct_count = 1;
	b->accts[0].seq = 3;
	b->accts[0].time_usec = 99;
	snprintf(b->accts[0].job, sizeof(b->accts[0].job), "a");
	b->accts[0].line = dup_("{\"job\":\"a\"}");
	snprintf(s1->kind, sizeof(s1->kind), "spec");
	snprintf(s1->key, sizeof(s1->key), "a");
	snprintf(s1->ext, sizeof(s1->ext), "yaml");
	s1->uid = 1000;
	s1->gid = 1000;
	s1->groups = malloc(sizeof(groups));
	memcpy(s1->groups, groups, sizeof(groups));
	s1->group_count = 2;
	s1->body = malloc(6);
	memcpy(s1->body, "np\0us", 6);
	s1->len = 5;
	snprintf(s2->kind, sizeof(s2->kind), "quota");
	snprintf(s2->key, sizeof(s2->key), "research");
	s2->drop = true;
	s2->body = dup_("");
	s1->next = s2;
	b->staged_list = s1;
}

static void assert_same(const struct fs_batch *a, const struct fs_batch *b)
{
	const struct fs_staged *x, *y;

	assert_int_equal(a->version, b->version);
	assert_int_equal(a->full, b->full);
	assert_int_equal(a->event_history, b->event_history);
	assert_int_equal(a->accounting_history, b->accounting_history);
	assert_int_equal(a->staged_all, b->staged_all);
	assert_string_equal(a->clock, b->clock);
	assert_string_equal(a->meta, b->meta);
	assert_int_equal(a->job_count, b->job_count);
	for (size_t i = 0; i < a->job_count; i++) {
		assert_int_equal(a->jobs[i].serial, b->jobs[i].serial);
		assert_string_equal(a->jobs[i].name, b->jobs[i].name);
		assert_string_equal(a->jobs[i].state, b->jobs[i].state);
		assert_string_equal(a->jobs[i].doc, b->jobs[i].doc);
		assert_int_equal(a->jobs[i].runs_from, b->jobs[i].runs_from);
	}
	assert_int_equal(a->run_count, b->run_count);
	assert_int_equal(a->runs[0].serial, b->runs[0].serial);
	assert_int_equal(a->runs[0].number, b->runs[0].number);
	assert_string_equal(a->runs[0].doc, b->runs[0].doc);
	assert_int_equal(a->removed_count, b->removed_count);
	assert_memory_equal(a->removed, b->removed, a->removed_count * sizeof(uint64_t));
	assert_int_equal(a->server_count, b->server_count);
	assert_string_equal(a->servers[0].name, b->servers[0].name);
	assert_string_equal(a->servers[0].doc, b->servers[0].doc);
	assert_int_equal(a->event_count, b->event_count);
	for (size_t i = 0; i < a->event_count; i++) {
		const struct fs_batch_event *e = &a->events[i], *f = &b->events[i];

		assert_int_equal(e->seq, f->seq);
		assert_int_equal(e->time_usec, f->time_usec);
		assert_int_equal(e->npu, f->npu);
		assert_string_equal(e->kind, f->kind);
		assert_string_equal(e->job, f->job);
		assert_string_equal(e->server, f->server);
		assert_string_equal(e->reason, f->reason);
		if (e->state)
			assert_string_equal(e->state, f->state);
		else
			assert_null(f->state);
		if (e->line)
			assert_string_equal(e->line, f->line);
		else
			assert_null(f->line);
	}
	assert_int_equal(a->acct_count, b->acct_count);
	assert_int_equal(a->accts[0].seq, b->accts[0].seq);
	assert_int_equal(a->accts[0].time_usec, b->accts[0].time_usec);
	assert_string_equal(a->accts[0].job, b->accts[0].job);
	assert_string_equal(a->accts[0].line, b->accts[0].line);
	for (x = a->staged_list, y = b->staged_list; x; x = x->next, y = y->next) {
		assert_non_null(y);
		assert_int_equal(x->drop, y->drop);
		assert_string_equal(x->kind, y->kind);
		assert_string_equal(x->key, y->key);
		assert_string_equal(x->ext, y->ext);
		assert_int_equal(x->uid, y->uid);
		assert_int_equal(x->gid, y->gid);
		assert_int_equal(x->group_count, y->group_count);
		if (x->group_count)
			assert_memory_equal(x->groups, y->groups, x->group_count * sizeof(gid_t));
		if (!x->drop) {
			assert_int_equal(x->len, y->len);
			assert_memory_equal(x->body, y->body, x->len);
		}
	}
	assert_null(y);
}

/* Every field of every record comes back, with a NUL in a body and a 3 MiB record. */
static void test_round_trip(void **state)
{
	struct fs_batch a, b;
	char why[SCHED_REASON_MAX], *bytes;
	size_t len;

	(void)state;
	build(&a, 3u << 20);
	assert_int_equal(fs_batch_encode(&a, &bytes, &len), 0);
	assert_true(len > 3u << 20);
	assert_int_equal(fs_batch_decode(bytes, len, &b, why), 0);
	assert_same(&a, &b);
	fs_batch_free(&a);
	fs_batch_free(&b);
	free(bytes);
}

/* An empty batch (only its header) comes back empty. */
static void test_empty_batch(void **state)
{
	struct fs_batch a = { .version = 1 }, b;
	char why[SCHED_REASON_MAX], *bytes;
	size_t len;

	(void)state;
	assert_int_equal(fs_batch_encode(&a, &bytes, &len), 0);
	assert_int_equal(fs_batch_decode(bytes, len, &b, why), 0);
	assert_int_equal(b.version, 1);
	assert_int_equal(b.job_count + b.event_count + b.server_count, 0);
	assert_null(b.meta);
	assert_null(b.staged_list);
	fs_batch_free(&b);
	free(bytes);
}

/* Cut at any byte, the encoding is refused, never read in part. */
static void test_every_cut_is_refused(void **state)
{
	struct fs_batch a, b;
	char why[SCHED_REASON_MAX], *bytes;
	size_t len;

	(void)state;
	build(&a, 100);
	assert_int_equal(fs_batch_encode(&a, &bytes, &len), 0);
	for (size_t cut = 0; cut < len; cut++) {
		why[0] = '\0';
		assert_int_equal(fs_batch_decode(bytes, cut, &b, why), -EBADMSG);
		assert_true(why[0] != '\0');
	}
	fs_batch_free(&a);
	free(bytes);
}

/*
 * Hostile bytes (etcd is writable by whoever holds its credentials): a netstring whose
 * length reaches the end without its ',', and a staged record whose groups are 1,000
 * separators, read nothing past what they are given (the copy below has no byte after
 * it; AddressSanitizer watches).
 */
static void test_hostile_bytes_read_nothing_past_them(void **state)
{
	static const char *cases[] = {
		"5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,3:end,1:0",
		"5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,3:end,1:",
		"5:batch,1",
	};
	char why[SCHED_REASON_MAX], head[] = "5:batch,1:1,1:1,1:0,2:16,2:16,1:1,0:,~,"
					     "6:staged,1:0,4:spec,1:a,4:yaml,1:0,1:0,";
	struct fs_batch b;
	size_t n = strlen(head);
	char *buf;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i]);

		buf = malloc(len);
		assert_non_null(buf);
		memcpy(buf, cases[i], len); /* no NUL after it */
		assert_int_equal(fs_batch_decode(buf, len, &b, why), -EBADMSG);
		free(buf);
	}
	/* groups: "1000:" and 1,000 spaces, a body, the end */
	buf = malloc(n + 1100);
	assert_non_null(buf);
	memcpy(buf, head, n);
	n += (size_t)sprintf(buf + n, "1000:");
	memset(buf + n, ' ', 1000);
	n += 1000;
	n += (size_t)sprintf(buf + n, ",1:x,3:end,1:1,");
	/* at most as many groups as the encoder could have written are read */
	assert_int_equal(fs_batch_decode(buf, n, &b, why), 0);
	assert_true(b.staged_list->group_count <= 513);
	fs_batch_free(&b);
	free(buf);
}

/* A newer format, an unknown record and a field that is not a netstring: refused, and
 * the reason says which. */
static void test_refusals_say_why(void **state)
{
	static const struct {
		const char *bytes, *why;
	} cases[] = {
		{ "5:batch,1:2,", "this ascendfs reads format 1" },
		{ "3:job,", "format" },
		{ "5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,7:reshape,", "kind \"reshape\"" },
		{ "5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,3:job,1:5,1:a,7:running,~,1:0,",
		  "a job's record is absent" },
		{ "5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,3:job,x", "not a netstring" },
		{ "5:batch,1:1,1:1,1:2,2:16,2:16,1:0,0:,~,3:end,1:0,", "not a number from 0 to 1" },
		{ "5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,3:job,99999999999999999999:x,",
		  "not a netstring" },
		{ "5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,", "cut short" },
		{ "5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,3:end,1:1,", "counts 1 records where 0" },
		{ "5:batch,1:1,1:1,1:0,2:16,2:16,1:0,0:,~,3:end,1:0,3:job,", "bytes follow" },
	};
	char why[SCHED_REASON_MAX];
	struct fs_batch b;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why[0] = '\0';
		/* a newer ascendfs's (a format, a kind of record): -EPROTO; else damage */
		bool newer = strstr(cases[i].why, "format 1") || strstr(cases[i].why, "reshape");

		assert_int_equal(fs_batch_decode(cases[i].bytes, strlen(cases[i].bytes), &b, why),
				 newer ? -EPROTO : -EBADMSG);
		if (!strstr(why, cases[i].why))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, why, cases[i].why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_empty_batch),
		cmocka_unit_test(test_every_cut_is_refused),
		cmocka_unit_test(test_refusals_say_why),
		cmocka_unit_test(test_hostile_bytes_read_nothing_past_them),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
