/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of accounting (sched/sched_account.c): a record per job that ended, its
 * fields, what makes none, the bounded ring, its file per job and cluster-wide, and the
 * load a restore does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "test_util.h"

static struct sched_cluster *cluster_with_history(unsigned servers, unsigned kept)
{
	char extra[64];
	struct fx_opts o = { .servers = servers, .cluster_extra = extra };

	snprintf(extra, sizeof(extra), "  accounting_history: %u\n", kept);
	return fx_cluster(&o);
}

/* The records of @c (of @job, or all) as JSON objects, oldest first: a new array. */
static json_t *records(const struct sched_cluster *c, const char *job)
{
	json_t *a = json_array();
	char *text = NULL, *save = NULL;
	size_t len = 0;

	assert_int_equal(sched_render_accounting(c, job, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		json_error_t err;
		json_t *o = json_loads(l, 0, &err);

		if (!o)
			fail_msg("not JSON: %s (%s)", l, err.text);
		json_array_append_new(a, o);
	}
	free(text);
	return a;
}

static const char *str(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	if (!v)
		fail_msg("no string %s", key);
	return v;
}

static json_int_t num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("no integer %s", key);
	return json_integer_value(v);
}

/* A job that ran two generations (a fault moved it) and completed: its record. */
static void test_record_of_a_job_that_ran(void **state)
{
	struct sched_cluster *c = cluster_with_history(3, 16);
	uint64_t t0, t1;
	struct sched_job *j;
	json_t *all, *r;

	(void)state;
	j = fx_run(c, "train", 16);
	t0 = j->first_start_usec;
	/* a Critical NPU: the job moves to other servers, generation 2 */
	fx_report_npu(c, j->slices[0].server, j->slices[0].device_ids[0], CONF_HEALTH_CRITICAL,
		      t0 + 3600 * 1000000ull);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	t1 = t0 + 7200 * 1000000ull;
	assert_int_equal(fx_complete(c, "train", FX_UID, t1), 0);
	assert_int_equal(j->state, SCHED_JOB_COMPLETED);

	all = records(c, NULL);
	assert_int_equal(json_array_size(all), 1);
	r = json_array_get(all, 0);
	assert_string_equal(str(r, "job"), "train");
	assert_string_equal(str(r, "state"), "completed");
	assert_string_equal(str(r, "queue"), "default");
	assert_int_equal(num(r, "uid"), FX_UID);
	assert_int_equal(num(r, "serial"), (json_int_t)j->serial);
	assert_int_equal(num(r, "npus"), 16);
	assert_int_equal(num(r, "faults"), 1);
	assert_int_equal(num(r, "seq"), 1);
	assert_int_equal(json_array_size(json_object_get(r, "generations")), 2);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(r, "generations"), 1)),
			 2);
	/* 16 NPUs for the two hours it ran (its stop, at once without agents, adds none) */
	assert_true(fabs(json_real_value(json_object_get(r, "npu_hours")) - 32.0) < 0.01);
	assert_true(json_array_size(json_object_get(r, "servers")) >= 3);
	assert_true(strcmp(str(r, "start"), str(r, "end")) < 0);
	json_decref(all);
	sched_cluster_free(c);
}

/* No record for a rejection or a draft dropped; one for a pending job cancelled. */
static void test_which_ends_make_a_record(void **state)
{
	struct sched_cluster *c = cluster_with_history(1, 16);
	json_t *all;

	(void)state;
	fx_run(c, "a", 8);
	fx_submit(c, "waits", 8);
	assert_int_equal(sched_job_reject(c, "nope", FX_UID, FX_GID, "npus: 3 is odd", fx_now()),
			 0);
	assert_int_equal(sched_job_create_draft(c, "draft", FX_UID, FX_GID, fx_now(), NULL), 0);
	assert_int_equal(fx_cancel(c, "draft", FX_UID, fx_now()), 0);
	assert_int_equal(c->next_acct_seq, 0);
	assert_int_equal(fx_cancel(c, "waits", FX_UID, fx_now()), 0);
	all = records(c, NULL);
	assert_int_equal(json_array_size(all), 1);
	assert_string_equal(str(json_array_get(all, 0), "state"), "cancelled");
	assert_true(json_is_null(json_object_get(json_array_get(all, 0), "start")));
	assert_int_equal(num(json_array_get(all, 0), "npus"), 0);
	json_decref(all);
	sched_cluster_free(c);
}

/* A record outlives its job's: the name submitted again keeps both in its file. */
static void test_records_outlive_a_resubmission(void **state)
{
	struct sched_cluster *c = cluster_with_history(1, 16);
	json_t *mine, *all;

	(void)state;
	for (int i = 0; i < 2; i++) {
		fx_run(c, "again", 8);
		assert_int_equal(fx_cancel(c, "again", FX_UID, fx_now()), 0);
	}
	fx_run(c, "other", 8);
	assert_int_equal(fx_cancel(c, "other", FX_UID, fx_now()), 0);
	mine = records(c, "again");
	all = records(c, NULL);
	assert_int_equal(json_array_size(mine), 2);
	assert_int_equal(json_array_size(all), 3);
	assert_true(num(json_array_get(mine, 0), "serial") !=
		    num(json_array_get(mine, 1), "serial"));
	/* the job's own history is the newest submission's only */
	assert_int_equal(sched_cluster_find_job(c, "again")->run_count, 1);
	json_decref(mine);
	json_decref(all);
	sched_cluster_free(c);
}

/* The ring keeps the newest accounting_history; seqs go on; next() walks them. */
static void test_ring_keeps_the_newest(void **state)
{
	struct sched_cluster *c = cluster_with_history(1, 16);
	const struct sched_acct *a;
	uint64_t expect;
	json_t *all;
	char name[32];

	(void)state;
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "j%d", i);
		fx_submit(c, name, 8);
		assert_int_equal(fx_cancel(c, name, FX_UID, fx_now()), 0);
	}
	all = records(c, NULL);
	assert_int_equal(json_array_size(all), 16);
	assert_int_equal(num(json_array_get(all, 0), "seq"), 25);
	assert_string_equal(str(json_array_get(all, 15), "job"), "j39");
	json_decref(all);
	expect = 25;
	for (a = sched_account_next(c, 0); a; a = sched_account_next(c, a->seq))
		assert_int_equal(a->seq, expect++);
	assert_int_equal(expect, 41);
	assert_int_equal(sched_account_next(c, 30)->seq, 31);
	assert_null(sched_account_next(c, 40));
	sched_cluster_free(c);
}

/* A restore loads records as saved; what is out of order or malformed is refused. */
static void test_load(void **state)
{
	struct sched_cluster *c = cluster_with_history(1, 16);
	json_t *all;

	(void)state;
	assert_int_equal(sched_account_load(c, 5, fx_now(), "a", "{\"seq\":5,\"job\":\"a\"}"), 0);
	assert_int_equal(sched_account_load(c, 9, fx_now(), "b", "{\"seq\":9,\"job\":\"b\"}"), 0);
	assert_int_equal(sched_account_load(c, 9, fx_now(), "b", "{}"), -EINVAL);
	assert_int_equal(sched_account_load(c, 3, fx_now(), "b", "{}"), -EINVAL);
	assert_int_equal(sched_account_load(c, 10, fx_now(), "../x", "{}"), -EINVAL);
	assert_int_equal(sched_account_load(c, 10, fx_now(), "b", "{}\n{}"), -EINVAL);
	assert_int_equal(sched_account_load(c, 10, fx_now(), "b", ""), -EINVAL);
	all = records(c, NULL);
	assert_int_equal(json_array_size(all), 2);
	json_decref(all);
	/* the next record goes on from the loaded ones */
	fx_submit(c, "c", 8);
	assert_int_equal(fx_cancel(c, "c", FX_UID, fx_now()), 0);
	assert_int_equal(sched_account_next(c, 9)->seq, 10);
	all = records(c, "b");
	assert_int_equal(json_array_size(all), 1);
	json_decref(all);
	sched_cluster_free(c);
}

/* Reals are short (the ms of elapsed_sec, 4 decimals of NPU-hours), as in every file. */
static void test_reals_are_short(void **state)
{
	struct sched_cluster *c = cluster_with_history(1, 16);
	struct sched_job *j;
	char *text = NULL;
	size_t len = 0;

	(void)state;
	j = fx_run(c, "p", 8);
	assert_int_equal(fx_cancel(c, "p", FX_UID, j->first_start_usec + 2223000), 0);
	assert_int_equal(sched_render_accounting(c, NULL, &text, &len), 0);
	if (!strstr(text, "\"elapsed_sec\":2.223,") || !strstr(text, "\"npu_hours\":0.0049,"))
		fail_msg("long reals: %s", text);
	free(text);
	sched_cluster_free(c);
}

/* NPU-hours and faults count every generation, those the history no longer keeps too;
 * a service's own record is not made (its instances' are). */
static void test_npu_hours_of_many_generations(void **state)
{
	struct sched_cluster *c = cluster_with_history(1, 16);
	char why[SCHED_REASON_MAX] = "";
	struct conf_job_spec *svc = fx_spec("svc", 8);
	struct sched_job *j;
	uint64_t t;
	json_t *all, *r;

	(void)state;
	j = fx_run(c, "a", 8);
	t = j->first_start_usec;
	for (int i = 0; i < 40; i++) {
		t += 3600 * 1000000ull;
		/* without agents the stop ends at once and the pass places it again */
		assert_int_equal(sched_job_requeue(c, "a", FX_UID, false, t, why), 0);
		assert_int_equal(j->state, SCHED_JOB_RUNNING);
	}
	assert_true(j->runs_dropped > 0);
	assert_int_equal(fx_cancel(c, "a", FX_UID, t + 3600 * 1000000ull), 0);
	svc->kind = CONF_JOB_SERVICE;
	svc->replicas = 0;
	svc->port = 1025;
	fx_submit_spec(c, svc, FX_UID);
	assert_int_equal(fx_cancel(c, "svc", FX_UID, fx_now()), 0);
	all = records(c, NULL);
	assert_int_equal(json_array_size(all), 1);
	r = json_array_get(all, 0);
	assert_string_equal(str(r, "job"), "a");
	assert_true(fabs(json_real_value(json_object_get(r, "npu_hours")) - 41 * 8.0) < 0.001);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(r, "generations"), 1)),
			 41);
	json_decref(all);
	sched_cluster_free(c);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_of_a_job_that_ran),
		cmocka_unit_test(test_which_ends_make_a_record),
		cmocka_unit_test(test_records_outlive_a_resubmission),
		cmocka_unit_test(test_ring_keeps_the_newest),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_reals_are_short),
		cmocka_unit_test(test_npu_hours_of_many_generations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
