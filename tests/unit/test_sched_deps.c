/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of job dependencies (sched/sched_deps.c), Slurm's afterok and afterany: a
 * job waits, passed by as a held one is, until the jobs its `after:` names end as asked;
 * one that can no longer be satisfied is cancelled, down its chain. Each step checks
 * sched_check_invariants() (the pending order among them).
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

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "test_util.h"

static void expect_reason(const struct sched_job *j, const char *needle)
{
	if (!strstr(j->reason, needle))
		fail_msg("job %s (%s): reason \"%s\" lacks \"%s\"", j->name,
			 sched_job_state_name(j->state), j->reason, needle);
}

/* A spec of @npus NPUs after the jobs in @after ("name" or "afterany:name"). */
static struct conf_job_spec *after(const char *name, unsigned npus, const char *const *deps)
{
	struct conf_job_spec *s = fx_spec(name, npus);

	for (; *deps; deps++) {
		bool any = strncmp(*deps, "afterany:", 9) == 0;

		fx_after(s, any ? *deps + 9 : *deps, any);
	}
	return s;
}

static int try_submit(struct sched_cluster *c, struct conf_job_spec *s, char *why)
{
	return sched_job_submit(c, s, FX_UID, FX_GID, fx_now(), why, NULL);
}

/* The process of one-server job @name exits with @code: with max_restarts 0 it ends. */
static void exit_with(struct sched_cluster *c, const char *name, int code)
{
	struct sched_job *j = sched_cluster_find_job(c, name);
	char why[SCHED_REASON_MAX] = "";

	assert_non_null(j);
	assert_int_equal(j->slice_count, 1);
	assert_int_equal(sched_job_process_exit(c, name, FX_UID, j->generation,
						fx_server_name(c, j->slices[0].server), -1, code,
						fx_now(), why),
			 0);
	fx_report_gone(c, name, fx_now());
	fx_check(c);
}

/* afterok: the job waits, free NPUs or not, and starts once the other completed. */
static void test_deps_afterok_waits_for_completion(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const deps[] = { "prep", NULL };
	struct sched_job *b, *d;
	char *status = NULL;
	size_t len;

	(void)state;
	fx_run(c, "prep", 8);
	b = fx_submit_spec(c, after("train", 8, deps), FX_UID);
	assert_int_equal(b->state, SCHED_JOB_PENDING); /* a server is free: it waits anyway */
	expect_reason(b, "waiting for job prep to complete (afterok)");
	assert_int_equal(b->deps_waiting, 1);
	assert_int_equal(c->deps_jobs, 1);
	assert_int_equal(sched_render_job_status_json(c, b, &status, &len), 0);
	assert_non_null(strstr(status, "\"job\": \"prep\""));
	assert_non_null(strstr(status, "\"kind\": \"afterok\""));
	assert_non_null(strstr(status, "\"state\": \"running\""));
	free(status);
	/* a job behind it is not held back by it */
	d = fx_submit(c, "other", 8);
	assert_int_equal(d->state, SCHED_JOB_RUNNING);

	assert_int_equal(fx_complete(c, "prep", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(b->deps_waiting, 0);
	assert_int_equal(c->deps_jobs, 0);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_render_job_status_json(c, b, &status, &len), 0);
	assert_non_null(strstr(status, "\"state\": \"met\""));
	free(status);
	sched_cluster_free(c);
}

/* afterok on a job that failed: cancelled, and the chain behind it; afterany goes on. */
static void test_deps_failure_cancels_the_chain(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const on_a[] = { "a", NULL }, *const on_b[] = { "b", NULL },
				 *const any_a[] = { "afterany:a", NULL };
	struct conf_job_spec *sa = fx_spec("a", 8);
	struct sched_job *b, *cc, *clean;

	(void)state;
	sa->max_restarts = 0;
	fx_submit_spec(c, sa, FX_UID);
	b = fx_submit_spec(c, after("b", 8, on_a), FX_UID);
	cc = fx_submit_spec(c, after("c", 8, on_b), FX_UID);
	clean = fx_submit_spec(c, after("clean", 8, any_a), FX_UID);
	assert_int_equal(c->deps_jobs, 3);
	exit_with(c, "a", 3);
	assert_int_equal(sched_cluster_find_job(c, "a")->state, SCHED_JOB_FAILED);
	assert_int_equal(b->state, SCHED_JOB_CANCELLED);
	expect_reason(b, "dependency never satisfied: job a ended failed");
	assert_int_equal(cc->state, SCHED_JOB_CANCELLED);
	expect_reason(cc, "job b ended cancelled");
	assert_int_equal(clean->state, SCHED_JOB_RUNNING); /* afterany: it ended */
	assert_int_equal(c->deps_jobs, 0);
	sched_cluster_free(c);
}

/* Several dependencies: it waits for the last; its reason counts the rest. */
static void test_deps_waits_for_every_job(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const both[] = { "x", "afterany:y", NULL };
	struct sched_job *j;

	(void)state;
	fx_run(c, "x", 8);
	fx_run(c, "y", 8);
	j = fx_submit_spec(c, after("z", 8, both), FX_UID);
	expect_reason(j, "waiting for job x to complete (afterok) and 1 more job");
	assert_int_equal(fx_cancel(c, "y", FX_UID, fx_now()), 0); /* afterany: met */
	fx_check(c);
	assert_int_equal(j->state, SCHED_JOB_PENDING);
	assert_int_equal(j->deps_waiting, 1);
	expect_reason(j, "waiting for job x to complete (afterok)");
	assert_null(strstr(j->reason, "more"));
	assert_int_equal(fx_complete(c, "x", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* What a submission may name, refused before anything changes. */
static void test_deps_refusals(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const none[] = { "nosuch", NULL }, *const gone[] = { "dead", NULL },
				 *const any_gone[] = { "afterany:dead", NULL };
	char why[SCHED_REASON_MAX] = "";
	uint64_t version;

	(void)state;
	fx_run(c, "dead", 8);
	assert_int_equal(fx_cancel(c, "dead", FX_UID, fx_now()), 0);
	fx_check(c);
	version = c->version;
	assert_int_equal(try_submit(c, after("j", 8, none), why), -EINVAL);
	assert_non_null(strstr(why, "after: job nosuch does not exist"));
	assert_int_equal(try_submit(c, after("j", 8, gone), why), -EINVAL);
	assert_non_null(strstr(why, "after: job dead ended cancelled, so it can never complete"));
	assert_non_null(strstr(why, "afterany:dead"));
	assert_true(c->version == version);
	assert_null(sched_cluster_find_job(c, "j"));
	/* afterany on a job that ended: met at once, it runs */
	assert_int_equal(try_submit(c, after("j", 8, any_gone), why), 0);
	fx_check(c);
	assert_int_equal(sched_cluster_find_job(c, "j")->state, SCHED_JOB_RUNNING);
	assert_int_equal(c->deps_jobs, 0);
	sched_cluster_free(c);
}

/* A dependency is on the record: the name submitted again is another job. */
static void test_deps_follow_the_record_not_the_name(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const on_p[] = { "p", NULL };
	struct sched_job *w;

	(void)state;
	fx_run(c, "p", 8);
	w = fx_submit_spec(c, after("w", 8, on_p), FX_UID);
	assert_int_equal(fx_remove(c, "p", FX_UID, fx_now()), 0); /* cancelled, dropped */
	fx_check(c);
	assert_int_equal(w->state, SCHED_JOB_CANCELLED);
	expect_reason(w, "job p ended cancelled");
	sched_cluster_free(c);
}

/* A hold and dependencies together: both must go before it runs. */
static void test_deps_and_hold(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const on_p[] = { "p", NULL };
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *w;

	(void)state;
	fx_run(c, "p", 8);
	w = fx_submit_spec(c, after("w", 8, on_p), FX_UID);
	assert_int_equal(sched_job_hold(c, "w", FX_UID, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(sched_job_release(c, "w", FX_UID, fx_now(), why), 0);
	fx_check(c);
	expect_reason(w, "still waiting for the jobs its after: names");
	assert_int_equal(sched_job_hold(c, "w", FX_UID, fx_now(), why), 0);
	assert_int_equal(fx_complete(c, "p", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(w->state, SCHED_JOB_PENDING);
	expect_reason(w, "held by its owner");
	assert_int_equal(sched_job_release(c, "w", FX_UID, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(w->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* A chain of 3,000 steps, the first failing: every step is cancelled, no deep recursion. */
static void test_deps_long_chain(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s0 = fx_spec("s0", 8);
	char name[16], prev[16];

	(void)state;
	c->check_invariants = false; /* each check walks every job: 3,000 squared */
	s0->max_restarts = 0;
	fx_submit_spec(c, s0, FX_UID);
	for (unsigned i = 1; i < 3000; i++) {
		const char *deps[] = { prev, NULL };
		char why[SCHED_REASON_MAX] = "";

		snprintf(prev, sizeof(prev), "s%u", i - 1);
		snprintf(name, sizeof(name), "s%u", i);
		assert_int_equal(try_submit(c, after(name, 8, deps), why), 0);
	}
	assert_int_equal(c->deps_jobs, 2999);
	exit_with(c, "s0", 1);
	assert_int_equal(c->deps_jobs, 0);
	assert_int_equal(sched_cluster_find_job(c, "s2999")->state, SCHED_JOB_CANCELLED);
	fx_check(c);
	sched_cluster_free(c);
}

/* At max_job_count, the record a submission makes drops the oldest ended one: when that
 * is the one it waits for, what the check saw (completed) stands. */
static void test_deps_full_table_keeps_what_was_met(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const on_x1[] = { "x1", NULL };
	struct sched_job *y;

	(void)state;
	c->conf->max_job_count = 4;
	c->conf->reserved_job_count = 0;
	c->conf->max_job_count_per_user = 4;
	fx_run(c, "x1", 8);
	assert_int_equal(fx_complete(c, "x1", FX_UID, fx_now()), 0);
	fx_check(c);
	fx_run(c, "x2", 8);
	fx_run(c, "x3", 8);
	fx_run(c, "x4", 8);
	y = fx_submit_spec(c, after("y", 8, on_x1), FX_UID);
	assert_null(sched_cluster_find_job(c, "x1")); /* dropped for y's record */
	assert_int_not_equal(y->state, SCHED_JOB_CANCELLED);
	assert_int_equal(y->deps_waiting, 0);
	sched_cluster_free(c);
}

/* A service's instance is no job to wait for: it runs until its service is cancelled,
 * and is replaced when it ends. */
static void test_deps_refuse_a_service_instance(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *svc = fx_spec("svc", 8);
	static const char *const on_inst[] = { "svc.0", NULL };
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	svc->kind = CONF_JOB_SERVICE;
	svc->replicas = 1;
	svc->port = CONF_SERVICE_PORT_DEFAULT;
	svc->max_restarts = CONF_RESTARTS_UNLIMITED;
	svc->max_unavailable = CONF_SERVICE_MAX_UNAVAILABLE_DEFAULT;
	fx_submit_spec(c, svc, FX_UID);
	assert_non_null(sched_cluster_find_job(c, "svc.0"));
	assert_int_equal(try_submit(c, after("w", 8, on_inst), why), -EINVAL);
	assert_non_null(strstr(why, "after: job svc.0 is a service's instance"));
	sched_cluster_free(c);
}

/* A chain whose records are in reverse order (drafts made last step first): one failure
 * still cancels every step, each job's end looking only when someone waits for it. */
static void test_deps_reverse_chain(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s0 = fx_spec("s0", 8);
	char name[16], prev[16];
	struct sched_job *j;

	(void)state;
	c->check_invariants = false;
	for (unsigned i = 2000; i-- > 1;) {
		snprintf(name, sizeof(name), "s%u", i);
		assert_int_equal(sched_job_create_draft(c, name, FX_UID, FX_GID, fx_now(), &j), 0);
	}
	s0->max_restarts = 0;
	fx_submit_spec(c, s0, FX_UID);
	for (unsigned i = 1; i < 2000; i++) {
		const char *deps[] = { prev, NULL };
		char why[SCHED_REASON_MAX] = "";

		snprintf(prev, sizeof(prev), "s%u", i - 1);
		snprintf(name, sizeof(name), "s%u", i);
		assert_int_equal(try_submit(c, after(name, 8, deps), why), 0);
	}
	assert_int_equal(c->deps_jobs, 1999);
	assert_int_equal(sched_cluster_find_job(c, "s1")->dependents, 1);
	exit_with(c, "s0", 1);
	assert_int_equal(c->deps_jobs, 0);
	for (unsigned i = 1; i < 2000; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		assert_int_equal(sched_cluster_find_job(c, name)->state, SCHED_JOB_CANCELLED);
		assert_int_equal(sched_cluster_find_job(c, name)->dependents, 0);
	}
	fx_check(c);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deps_afterok_waits_for_completion),
		cmocka_unit_test(test_deps_failure_cancels_the_chain),
		cmocka_unit_test(test_deps_waits_for_every_job),
		cmocka_unit_test(test_deps_refusals),
		cmocka_unit_test(test_deps_follow_the_record_not_the_name),
		cmocka_unit_test(test_deps_and_hold),
		cmocka_unit_test(test_deps_long_chain),
		cmocka_unit_test(test_deps_full_table_keeps_what_was_met),
		cmocka_unit_test(test_deps_refuse_a_service_instance),
		cmocka_unit_test(test_deps_reverse_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
