/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the dry run (sched/sched_whatif.c), Slurm's sbatch --test-only: what a
 * spec submitted now would get (a placement, a wait, a refusal, the jobs it would
 * preempt), and that asking changes nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "sched_policy_fixture.h"
#include "test_util.h"

static const char queues_two[] = "  - name: prod\n"
				 "    priority: 900\n"
				 "  - name: batch\n"
				 "    priority: 100\n";

/* The answer for @spec (borrowed) as FX_UID, parsed; the cluster must not change. */
static json_t *ask(struct sched_cluster *c, const struct conf_job_spec *spec)
{
	struct sched_whatif_snapshot *s = NULL;
	uint64_t version = c->version, events = c->next_event_seq, serial = c->next_job_serial;
	size_t jobs = c->job_count, len = 0;
	char *text = NULL;
	json_t *o;

	assert_int_equal(sched_whatif_snapshot(c, &s), 0);
	/* at the clock the jobs ran on (sched_policy_fixture.h): a restore puts no run's
	 * start after its now, and fx_now()'s is years earlier */
	assert_int_equal(sched_whatif_run(s, spec, FX_UID, FX_GID, false, adv(1), &text, &len),
			 0);
	sched_whatif_snapshot_free(s);
	assert_int_equal(strlen(text), len);
	assert_true(c->version == version);
	assert_true(c->next_event_seq == events);
	assert_true(c->next_job_serial == serial);
	assert_int_equal(c->job_count, jobs);
	fx_check(c);
	o = json_loads(text, 0, NULL);
	if (!o)
		fail_msg("not JSON: %s", text);
	free(text);
	return o;
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	if (!s)
		fail_msg("no string \"%s\"", key);
	return s;
}

/* It would start, on the server a real submission gets; and then it really does. */
static void test_whatif_would_start_where_a_submission_goes(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *sp = fx_spec("b", 8);
	const json_t *pl;
	struct sched_job *b;
	json_t *a;

	(void)state;
	fx_run(c, "a", 8);
	a = ask(c, sp);
	assert_string_equal(str(a, "would"), "start");
	assert_null(sched_cluster_find_job(c, "b"));
	pl = json_object_get(a, "placement");
	assert_int_equal(json_array_size(pl), 1);
	b = fx_submit_spec(c, sp, FX_UID);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_string_equal(json_string_value(json_object_get(json_array_get(pl, 0), "server")),
			    fx_server_name(c, b->slices[0].server));
	assert_int_equal(json_array_size(json_object_get(a, "preempts")), 0);
	json_decref(a);
	sched_cluster_free(c);
}

/* A full cluster: it would wait, with the reason a pending job gets. */
static void test_whatif_would_wait(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *sp = fx_spec("b", 8);
	json_t *a;

	(void)state;
	fx_run(c, "a", 8);
	a = ask(c, sp);
	assert_string_equal(str(a, "would"), "wait");
	assert_int_equal(json_array_size(json_object_get(a, "placement")), 0);
	assert_string_equal(str(json_object_get(a, "status"), "state"), "pending");
	assert_non_null(strstr(str(a, "reason"), "NPU"));
	json_decref(a);
	conf_job_spec_free(sp);
	sched_cluster_free(c);
}

/* A spec the cluster would refuse: the refusal, and nothing else. */
static void test_whatif_would_be_refused(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *sp = fx_spec_full("b", 8, "nosuch", 500);
	json_t *a;

	(void)state;
	a = ask(c, sp);
	assert_string_equal(str(a, "would"), "refused");
	assert_non_null(strstr(str(a, "reason"), "queue: unknown queue \"nosuch\""));
	assert_true(json_is_null(json_object_get(a, "status")));
	json_decref(a);
	conf_job_spec_free(sp);
	sched_cluster_free(c);
}

/* A high-priority job on a full cluster: the job its placement would preempt. */
static void test_whatif_names_its_victims(void **state)
{
	struct fx_opts o = { .servers = 2, .queues = queues_two };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *sp = spec("hi", 8, "prod", 500, 0);
	struct sched_job *a, *b;
	const char *victim;
	json_t *ans;

	(void)state;
	a = run(c, spec("a", 8, "batch", 500, 0));
	b = run(c, spec("b", 8, "batch", 500, 0));
	ans = ask(c, sp);
	assert_int_equal(json_array_size(json_object_get(ans, "preempts")), 1);
	victim = json_string_value(json_array_get(json_object_get(ans, "preempts"), 0));
	if (!strstr(str(ans, "reason"), "preempting 1 job"))
		fail_msg("reason: %s, would %s", str(ans, "reason"), str(ans, "would"));
	assert_int_equal(a->state, SCHED_JOB_RUNNING); /* asking stopped nobody */
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	/* the real submission preempts the same job */
	submit(c, sp);
	assert_int_equal(sched_cluster_find_job(c, victim)->state, SCHED_JOB_STOPPING);
	json_decref(ans);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whatif_would_start_where_a_submission_goes),
		cmocka_unit_test(test_whatif_would_wait),
		cmocka_unit_test(test_whatif_would_be_refused),
		cmocka_unit_test(test_whatif_names_its_victims),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
