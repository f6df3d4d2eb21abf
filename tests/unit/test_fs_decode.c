/* SPDX-License-Identifier: MIT */
/*
 * fs_decode.c: job records decoded on several threads, then loaded in order, give what
 * loading each in turn gives: the same jobs in the same order, and for each record that
 * does not load (not JSON, a spec that no longer parses, a second record of a name) the
 * same error and sentence at the same place.
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
#include "sched_policy_fixture.h"

#define JOBS 300

/* @doc with its first @from replaced by @to (new string). */
static char *replaced(const char *doc, const char *from, const char *to)
{
	const char *p = strstr(doc, from);
	char *out;

	if (!p)
		fail_msg("fixture: %s not in %s", from, doc);
	assert_true(asprintf(&out, "%.*s%s%s", (int)(p - doc), doc, to, p + strlen(from)) > 0);
	return out;
}

static void test_decode_in_parallel_loads_as_in_turn(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *a = fx_cluster(&o), *seq = fx_cluster(&o), *par = fx_cluster(&o);
	struct fs_decode_slot *slots = calloc(JOBS + 8, sizeof(*slots));
	int seq_r[JOBS + 8];
	char (*seq_why)[SCHED_REASON_MAX] = calloc(JOBS + 8, SCHED_REASON_MAX);
	size_t n = 0, len;
	char name[32], why[SCHED_REASON_MAX];

	(void)state;
	assert_non_null(slots);
	assert_non_null(seq_why);
	for (unsigned i = 0; i < JOBS; i++) {
		snprintf(name, sizeof(name), "job-%u", i);
		submit(a, spec(name, i % 3 ? 1 : 8, NULL, 500, 0));
	}
	/* every record, and among them: not JSON, a spec that does not parse, a second
	 * record of a name, a record of a format from the future */
	for (size_t i = 0; i < a->job_count; i++) {
		char *doc;

		assert_int_equal(sched_job_save(a, a->jobs[i], &doc, &len), 0);
		slots[n].text = doc;
		slots[n++].len = len;
		if (i == 10)
			slots[n++].text = strdup("{\"format\": 2, \"name\":");
		if (i == 99) /* 8 NPUs */
			slots[n++].text = replaced(doc, "npus: 8", "npus: lots");
		if (i == 200)
			slots[n++].text = strdup(doc);
		if (i == 250)
			slots[n++].text = replaced(doc, "\"format\":2", "\"format\":9");
	}
	for (size_t i = 0; i < n; i++) {
		if (!slots[i].len)
			slots[i].len = strlen(slots[i].text);
		seq_r[i] = sched_job_load(seq, slots[i].text, slots[i].len, clk, seq_why[i]);
	}
	fs_decode_jobs(slots, n, 4);
	for (size_t i = 0; i < n; i++) {
		int r = slots[i].r;

		if (r == 0) {
			r = sched_job_load_decoded(par, slots[i].decoded, clk, slots[i].reason);
			slots[i].decoded = NULL;
		}
		assert_int_equal(r, seq_r[i]);
		if (r < 0)
			assert_string_equal(slots[i].reason, seq_why[i]);
	}
	/* the four bad records, each refused with a sentence */
	{
		unsigned refused = 0;

		for (size_t i = 0; i < n; i++)
			if (seq_r[i] < 0) {
				refused++;
				assert_true(seq_why[i][0] != '\0');
			}
		assert_int_equal(refused, 4);
	}
	assert_int_equal(sched_restore_finish(seq, clk, why), 0);
	assert_int_equal(sched_restore_finish(par, clk, why), 0);
	assert_int_equal(par->job_count, JOBS);
	assert_int_equal(seq->job_count, JOBS);
	for (size_t i = 0; i < JOBS; i++) {
		assert_string_equal(par->jobs[i]->name, a->jobs[i]->name);
		assert_string_equal(par->jobs[i]->name, seq->jobs[i]->name);
		assert_int_equal(par->jobs[i]->state, seq->jobs[i]->state);
		assert_string_equal(par->jobs[i]->reason, seq->jobs[i]->reason);
	}
	for (size_t i = 0; i < n; i++)
		free(slots[i].text);
	free(slots);
	free(seq_why);
	sched_cluster_free(a);
	sched_cluster_free(seq);
	sched_cluster_free(par);
}

/* Fewer records than threads, and none: every slot is decoded, nothing waits. */
static void test_decode_few_records(void **state)
{
	struct fs_decode_slot slots[2] = { { .text = (char *)"[]", .len = 2 } };

	(void)state;
	fs_decode_jobs(slots, 0, 8);
	fs_decode_jobs(slots, 1, 8);
	assert_int_equal(slots[0].r, -EINVAL);
	assert_null(slots[0].decoded);
	assert_true(slots[0].reason[0] != '\0');
	assert_true(fs_decode_threads() >= 1 && fs_decode_threads() <= 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_in_parallel_loads_as_in_turn),
		cmocka_unit_test(test_decode_few_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
