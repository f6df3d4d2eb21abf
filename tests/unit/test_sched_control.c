/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of job control (sched/sched_control.c): hold and release, requeue, and
 * update of priority and time_limit, as Slurm's scontrol gives them. Each step checks
 * sched_check_invariants() (the pending order kept between passes among them).
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

static const char queues_yaml[] = "  - name: default\n"
				  "  - name: capped\n"
				  "    max_priority: 600\n"
				  "    max_time_limit: 2h\n";

static struct sched_cluster *cluster_of(unsigned servers)
{
	struct fx_opts o = { .servers = servers, .queues = queues_yaml };

	return fx_cluster(&o);
}

static void expect_reason(const struct sched_job *j, const char *needle)
{
	if (!strstr(j->reason, needle))
		fail_msg("job %s (%s): reason \"%s\" lacks \"%s\"", j->name,
			 sched_job_state_name(j->state), j->reason, needle);
}

static void expect_text(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("\"%s\" lacks \"%s\"", text, needle);
}

/* The newest event; it must exist. */
static const struct sched_event *last_event(const struct sched_cluster *c)
{
	const struct sched_event *e = sched_event_next(c, c->next_event_seq - 2);

	assert_non_null(e);
	return e;
}

/* Nothing of @c that a refusal must leave alone moved: its version and its events. */
struct unchanged {
	uint64_t version, events;
};

static struct unchanged before(const struct sched_cluster *c)
{
	return (struct unchanged){ c->version, c->next_event_seq };
}

static void expect_unchanged(const struct sched_cluster *c, struct unchanged u)
{
	assert_true(c->version == u.version);
	assert_true(c->next_event_seq == u.events);
}

/* A held job waits while a job behind it takes the NPUs; released, it runs next. */
static void test_hold_passes_a_pending_job_by_until_released(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *b, *d;
	char *status = NULL;
	size_t len;

	(void)state;
	fx_run(c, "a", 8);
	b = fx_submit(c, "b", 8);
	d = fx_submit(c, "d", 8);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_hold(c, "b", FX_UID, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(b->hold_kind, SCHED_HOLD_USER);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	expect_reason(b, "held by its owner");
	expect_reason(b, "echo release > jobs/b/ctl");
	assert_int_equal(last_event(c)->kind, SCHED_EV_HELD);
	assert_int_equal(sched_render_job_status_json(c, b, &status, &len), 0);
	expect_text(status, "\"hold\": \"user\"");
	free(status);
	/* a hold again changes nothing */
	{
		struct unchanged u = before(c);

		assert_int_equal(sched_job_hold(c, "b", FX_UID, fx_now(), why), 0);
		expect_unchanged(c, u);
	}

	assert_int_equal(fx_cancel(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(d->state, SCHED_JOB_RUNNING);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	expect_reason(b, "held by its owner");
	assert_int_equal(b->generation, 0);

	assert_int_equal(sched_job_release(c, "b", FX_UID, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(b->hold_kind, SCHED_HOLD_NONE);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	assert_null(strstr(b->reason, "held"));
	assert_int_equal(fx_cancel(c, "d", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* A held job does not hold back a smaller job behind it (no reservation, no block). */
static void test_held_job_reserves_nothing(void **state)
{
	struct fx_opts o = { .servers = 2, .no_backfill = true };
	struct sched_cluster *c = fx_cluster(&o);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *big, *small;

	(void)state;
	fx_run(c, "a", 8);
	big = fx_submit(c, "big", 16);
	small = fx_submit(c, "small", 8);
	/* strict order: the big job first in line blocks the small one */
	assert_int_equal(small->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_hold(c, "big", FX_UID, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(small->state, SCHED_JOB_RUNNING);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	assert_true(big->reserved_start_usec == 0);
	sched_cluster_free(c);
}

/* Root's hold is an admin hold: its owner may not release it. */
static void test_admin_hold_is_released_by_root_only(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *b;
	struct unchanged u;

	(void)state;
	fx_run(c, "a", 8);
	b = fx_submit(c, "b", 8);
	assert_int_equal(sched_job_hold(c, "b", FX_UID, fx_now(), why), 0);
	/* root's hold over the owner's makes it an admin hold */
	assert_int_equal(sched_job_hold(c, "b", 0, fx_now(), why), 0);
	assert_int_equal(b->hold_kind, SCHED_HOLD_ADMIN);
	expect_reason(b, "held by root");
	u = before(c);
	assert_int_equal(sched_job_release(c, "b", FX_UID, fx_now(), why), -EPERM);
	expect_text(why, "only root releases it");
	expect_unchanged(c, u);
	assert_int_equal(b->hold_kind, SCHED_HOLD_ADMIN);
	/* a stranger may neither hold nor release */
	assert_int_equal(sched_job_release(c, "b", FX_OTHER_UID, fx_now(), why), -EPERM);
	assert_int_equal(sched_job_hold(c, "a", FX_OTHER_UID, fx_now(), why), -EPERM);
	assert_int_equal(sched_job_hold(c, "nosuch", 0, fx_now(), why), -ENOENT);
	assert_int_equal(sched_job_release(c, "b", 0, fx_now(), why), 0);
	assert_int_equal(b->hold_kind, SCHED_HOLD_NONE);
	assert_int_equal(last_event(c)->kind, SCHED_EV_RELEASED);
	fx_check(c);
	sched_cluster_free(c);
}

/* Only a pending job is held: a running one is refused with what to do, and unchanged. */
static void test_hold_refuses_running_and_finished_jobs(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *a;
	struct unchanged u;

	(void)state;
	a = fx_run(c, "a", 8);
	u = before(c);
	assert_int_equal(sched_job_hold(c, "a", FX_UID, fx_now(), why), -EBUSY);
	expect_text(why, "requeue hold");
	expect_unchanged(c, u);
	assert_int_equal(a->hold_kind, SCHED_HOLD_NONE);
	assert_int_equal(fx_cancel(c, "a", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_hold(c, "a", FX_UID, fx_now(), why), -EBUSY);
	assert_int_equal(sched_job_requeue(c, "a", FX_UID, false, fx_now(), why), -EBUSY);
	expect_text(why, "spec is written again");
	assert_int_equal(sched_job_update(c, "a", FX_UID, false, SCHED_FIELD_PRIORITY, 100,
					  fx_now(), why),
			 -EBUSY);
	sched_cluster_free(c);
}

/* A requeue stops a running job (NPUs held until its processes are gone), then it is
 * pending and starts again as a new generation; its history says "requeued". */
static void test_requeue_stops_then_starts_a_new_generation(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *a;
	unsigned gen;

	(void)state;
	a = fx_run(c, "a", 8);
	fx_report_ok(c, 0, fx_now()); /* an agent runs there: the stop waits for it */
	gen = a->generation;
	assert_int_equal(sched_job_requeue(c, "a", FX_UID, false, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(a->state, SCHED_JOB_STOPPING);
	assert_int_equal(a->stop_to, SCHED_JOB_PENDING);
	expect_reason(a, "requeued by its owner");
	assert_int_equal(c->npus_allocated, 8);
	/* asked again while it stops: nothing more */
	assert_int_equal(sched_job_requeue(c, "a", FX_UID, false, fx_now(), why), 0);
	fx_report_gone(c, "a", fx_now());
	fx_check(c);
	/* pending for an instant, then placed again by the pass the release asked for */
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(a->generation, gen + 1);
	assert_true(a->run_count >= 2);
	assert_int_equal(a->runs[a->run_count - 2].end, SCHED_RUN_REQUEUED);
	sched_cluster_free(c);
}

/* "requeue hold": the job stops and stays pending, its NPUs go to the next job. */
static void test_requeue_then_hold_keeps_it_from_starting(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *a, *b;

	(void)state;
	a = fx_run(c, "a", 8);
	b = fx_submit(c, "b", 8);
	fx_report_ok(c, 0, fx_now());
	assert_int_equal(sched_job_requeue(c, "a", FX_UID, false, fx_now(), why), 0);
	assert_int_equal(sched_job_hold(c, "a", FX_UID, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(a->state, SCHED_JOB_STOPPING);
	fx_report_gone(c, "a", fx_now());
	fx_check(c);
	assert_int_equal(a->state, SCHED_JOB_PENDING);
	expect_reason(a, "held by its owner");
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	/* a pending job is not requeued */
	assert_int_equal(sched_job_requeue(c, "a", FX_UID, false, fx_now(), why), -EBUSY);
	sched_cluster_free(c);
}

/* A new priority orders the pending job anew; the spec says it. (Without preemption:
 * with it, the raised job would preempt the running one, as any such job does.) */
static void test_update_priority_reorders_the_queue(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_yaml, .no_preemption = true };
	struct sched_cluster *c = fx_cluster(&o);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *b, *d;

	(void)state;
	fx_run(c, "a", 8);
	b = fx_submit(c, "b", 8);
	d = fx_submit(c, "d", 8);
	assert_int_equal(sched_job_update(c, "d", FX_UID, false, SCHED_FIELD_PRIORITY, 800,
					  fx_now(), why),
			 0);
	fx_check(c);
	assert_int_equal(d->spec->priority, 800);
	assert_int_equal(d->prio, 800);
	expect_text(d->spec_text, "priority: 800");
	assert_int_equal(last_event(c)->kind, SCHED_EV_UPDATED);
	expect_text(last_event(c)->reason, "priority 500 -> 800");
	assert_int_equal(fx_cancel(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(d->state, SCHED_JOB_RUNNING);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	sched_cluster_free(c);
}

/* The queue's caps bind a user's update, not root's; a refusal changes nothing. */
static void test_update_stays_within_queue_caps(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *b;
	struct unchanged u;
	char *text;

	(void)state;
	fx_run(c, "a", 8);
	b = fx_submit_spec(c, fx_spec_full("b", 8, "capped", 500), FX_UID);
	text = strdup(b->spec_text);
	u = before(c);
	assert_int_equal(sched_job_update(c, "b", FX_UID, false, SCHED_FIELD_PRIORITY, 700,
					  fx_now(), why),
			 -EACCES);
	expect_text(why, "max_priority 600");
	assert_int_equal(sched_job_update(c, "b", FX_UID, false, SCHED_FIELD_TIME_LIMIT,
					  3 * 3600, fx_now(), why),
			 -EACCES);
	expect_text(why, "max_time_limit 2h");
	assert_int_equal(sched_job_update(c, "b", FX_UID, false, SCHED_FIELD_PRIORITY, 1001,
					  fx_now(), why),
			 -EINVAL);
	assert_int_equal(sched_job_update(c, "b", FX_UID, false, SCHED_FIELD_TIME_LIMIT, 0,
					  fx_now(), why),
			 -EINVAL);
	assert_int_equal(sched_job_update(c, "b", FX_OTHER_UID, false, SCHED_FIELD_PRIORITY,
					  100, fx_now(), why),
			 -EPERM);
	expect_unchanged(c, u);
	assert_string_equal(b->spec_text, text);
	assert_int_equal(b->spec->priority, 500);
	/* root and operators may exceed a cap */
	assert_int_equal(sched_job_update(c, "b", 0, false, SCHED_FIELD_PRIORITY, 700, fx_now(),
					  why),
			 0);
	assert_int_equal(sched_job_update(c, "b", FX_UID, true, SCHED_FIELD_TIME_LIMIT,
					  3 * 3600, fx_now(), why),
			 0);
	assert_int_equal(b->spec->time_limit_sec, 3 * 3600);
	expect_text(b->spec_text, "priority: 700");
	fx_check(c);
	free(text);
	sched_cluster_free(c);
}

/* A shorter time_limit than a running job has run ends it timeout at the next tick. */
static void test_update_time_limit_times_out_a_running_job(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct conf_job_spec *spec = fx_spec("a", 8);
	struct sched_job *a;
	uint64_t t;

	(void)state;
	spec->time_limit_sec = 3600;
	a = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	t = a->run_since_usec + 120 * 1000000ull;
	assert_int_equal(sched_tick(c, t), 0);
	assert_int_equal(sched_job_update(c, "a", FX_UID, false, SCHED_FIELD_TIME_LIMIT, 60, t,
					  why),
			 0);
	expect_text(a->spec_text, "time_limit:");
	assert_int_equal(sched_tick(c, t + 1000000), 1);
	assert_true(a->state == SCHED_JOB_STOPPING || a->state == SCHED_JOB_TIMEOUT);
	assert_true(a->state == SCHED_JOB_TIMEOUT || a->stop_to == SCHED_JOB_TIMEOUT);
	fx_check(c);
	sched_cluster_free(c);
}

/* A service's instances are its service's to manage. */
static void test_control_refuses_service_instances(void **state)
{
	struct sched_cluster *c = cluster_of(2);
	char why[SCHED_REASON_MAX] = "";
	struct conf_job_spec *spec = fx_spec("svc", 8);

	(void)state;
	spec->kind = CONF_JOB_SERVICE;
	spec->replicas = 1;
	spec->port = 1025;
	fx_submit_spec(c, spec, FX_UID);
	assert_non_null(sched_cluster_find_job(c, "svc.0"));
	assert_int_equal(sched_job_requeue(c, "svc.0", FX_UID, false, fx_now(), why), -EINVAL);
	expect_text(why, "instance of service svc");
	assert_int_equal(sched_job_hold(c, "svc", FX_UID, fx_now(), why), -EBUSY);
	assert_int_equal(sched_job_update(c, "svc.0", FX_UID, false, SCHED_FIELD_PRIORITY, 100,
					  fx_now(), why),
			 -EINVAL);
	fx_check(c);
	sched_cluster_free(c);
}

#define SEC 1000000ull

static struct conf_job_spec *spec_tl(const char *name, unsigned npus, uint64_t limit_sec)
{
	struct conf_job_spec *s = fx_spec(name, npus);

	s->time_limit_sec = limit_sec;
	return s;
}

/* A user may not lengthen a running job's time_limit (it may have been backfilled ahead
 * of a reservation on the promise of it, as Slurm lets only admins raise a TimeLimit);
 * shortening it, and root's change, are fine. */
static void test_update_user_may_not_lengthen_a_running_job(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *big, *shrt;
	struct unchanged u;
	uint64_t resv;

	(void)state;
	fx_submit_spec(c, spec_tl("a", 8, 3600), FX_UID);
	fx_submit_spec(c, spec_tl("off", 4, 0), FX_UID);
	big = fx_submit_spec(c, spec_tl("big", 16, 0), FX_UID);
	shrt = fx_submit_spec(c, spec_tl("short", 8, 600), FX_UID);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	assert_int_equal(shrt->state, SCHED_JOB_RUNNING);
	resv = big->reserved_start_usec;
	u = before(c);
	assert_int_equal(sched_job_update(c, "short", FX_UID, false, SCHED_FIELD_TIME_LIMIT,
					  30 * 86400, fx_now(), why),
			 -EACCES);
	expect_text(why, "only shortened");
	expect_unchanged(c, u);
	sched_schedule(c, fx_now());
	assert_true(big->reserved_start_usec == resv);
	assert_int_equal(sched_job_update(c, "short", FX_UID, false, SCHED_FIELD_TIME_LIMIT, 300,
					  fx_now(), why),
			 0);
	assert_int_equal(sched_job_update(c, "short", 0, false, SCHED_FIELD_TIME_LIMIT, 900,
					  fx_now(), why),
			 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* A pending job is not given a time_limit it has already used up (it would start only
 * to time out, perhaps preempting another job on the way). */
static void test_update_refuses_a_used_up_time_limit_for_a_pending_job(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *a;
	struct unchanged u;
	uint64_t t;

	(void)state;
	fx_report_ok(c, 0, fx_now());
	a = fx_submit_spec(c, spec_tl("a", 8, 4 * 3600), FX_UID);
	t = a->run_since_usec + 7200 * SEC;
	assert_int_equal(sched_job_requeue(c, "a", FX_UID, false, t, why), 0);
	assert_int_equal(sched_job_hold(c, "a", FX_UID, t, why), 0);
	fx_report_gone(c, "a", t + SEC);
	assert_int_equal(a->state, SCHED_JOB_PENDING);
	u = before(c);
	assert_int_equal(sched_job_update(c, "a", FX_UID, false, SCHED_FIELD_TIME_LIMIT, 3600,
					  t + 2 * SEC, why),
			 -EINVAL);
	expect_text(why, "has run");
	expect_unchanged(c, u);
	assert_int_equal(sched_job_update(c, "a", FX_UID, false, SCHED_FIELD_TIME_LIMIT, 3 * 3600,
					  t + 2 * SEC, why),
			 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* An update is held to the cap of the field it changes, not to another field's cap the
 * job was let past (by root, or at an operator's submission). */
static void test_update_checks_only_the_field_it_changes(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *b = NULL;
	struct conf_job_spec *s = fx_spec_full("b", 8, "capped", 700);

	(void)state;
	fx_run(c, "a", 8);
	s->time_limit_sec = 3600;
	assert_int_equal(sched_job_submit_as(c, s, FX_UID, FX_GID, true, fx_now(), why, &b), 0);
	assert_int_equal(sched_job_update(c, "b", FX_UID, false, SCHED_FIELD_TIME_LIMIT, 1800,
					  fx_now(), why),
			 0);
	assert_int_equal(b->spec->time_limit_sec, 1800);
	/* the priority itself stays held to the cap for a user */
	assert_int_equal(sched_job_update(c, "b", FX_UID, false, SCHED_FIELD_PRIORITY, 650,
					  fx_now(), why),
			 -EACCES);
	assert_int_equal(sched_job_update(c, "b", FX_UID, false, SCHED_FIELD_PRIORITY, 600,
					  fx_now(), why),
			 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* A requeue in flight is no preemption: another job's fault recovery keeps its healthy
 * server as it would without it. */
static void recover_beside(bool requeue, char *reason, size_t len)
{
	struct fx_opts o = { .servers = 5 };
	struct sched_cluster *c = fx_cluster(&o);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *x;
	uint64_t t = fx_now();

	for (unsigned i = 0; i < 5; i++)
		fx_report_ok(c, i, t);
	x = fx_run(c, "x", 16);
	fx_run(c, "r", 8);
	if (requeue)
		assert_int_equal(sched_job_requeue(c, "r", FX_UID, false, fx_now(), why), 0);
	fx_report_npu(c, x->slices[0].server, x->slices[0].device_ids[0], CONF_HEALTH_CRITICAL,
		      fx_now());
	snprintf(reason, len, "%s %s", sched_job_state_name(x->state), x->reason);
	fx_check(c);
	sched_cluster_free(c);
}

static void test_requeue_in_flight_is_no_preemption_for_recovery(void **state)
{
	char alone[SCHED_REASON_MAX], beside[SCHED_REASON_MAX];

	(void)state;
	recover_beside(false, alone, sizeof(alone));
	recover_beside(true, beside, sizeof(beside));
	expect_text(alone, "kept 1 server");
	assert_string_equal(alone, beside);
}

/* "requeue hold" is one request: a job whose time is used up ends timeout, and the
 * request still succeeds (nothing to hold), with no refusal after the change. */
static void test_requeue_hold_is_one_request(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *a, *b;
	uint64_t t;

	(void)state;
	sched_cluster_set_deferred_passes(c, true);
	a = fx_submit_spec(c, spec_tl("a", 8, 60), FX_UID);
	sched_pass_run_owed(c, fx_now());
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	t = a->run_since_usec + 61 * SEC;
	assert_int_equal(sched_job_requeue(c, "a", FX_UID, true, t, why), 0);
	assert_int_equal(a->state, SCHED_JOB_TIMEOUT);
	/* and one whose time is left stops and stays pending, held */
	sched_cluster_set_deferred_passes(c, false);
	b = fx_run(c, "b", 8);
	assert_int_equal(sched_job_requeue(c, "b", FX_UID, true, fx_now(), why), 0);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	assert_int_equal(b->hold_kind, SCHED_HOLD_USER);
	fx_check(c);
	sched_cluster_free(c);
}

/* resize: a running job stops and starts again at the new size, a new generation; the
 * spec says the size; a size the cluster cannot run, or over the queue's max_npus for a
 * user, is refused and changes nothing; an elastic job is the scheduler's to size. */
static void test_resize_a_running_job(void **state)
{
	struct sched_cluster *c = cluster_of(2);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *a;
	struct unchanged u;
	unsigned gen;

	(void)state;
	a = fx_run(c, "a", 16);
	fx_report_ok(c, 0, fx_now());
	fx_report_ok(c, 1, fx_now());
	gen = a->generation;
	u = before(c);
	assert_int_equal(sched_job_resize(c, "a", FX_UID, false, 12, fx_now(), why), -EINVAL);
	expect_text(why, "not a multiple of 8");
	expect_unchanged(c, u);
	assert_int_equal(sched_job_resize(c, "a", FX_UID, false, 64, fx_now(), why), -ENOSPC);
	assert_int_equal(sched_job_resize(c, "a", FX_OTHER_UID, false, 8, fx_now(), why), -EPERM);
	expect_unchanged(c, u);
	assert_int_equal(a->spec->npus, 16);
	assert_int_equal(sched_job_resize(c, "a", FX_UID, false, 8, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(c->resizes, 1); /* ascendfs_resizes_total */
	assert_int_equal(a->state, SCHED_JOB_STOPPING);
	expect_reason(a, "resized from 16 to 8 NPUs by its owner");
	expect_text(a->spec_text, "npus: 8");
	fx_report_gone(c, "a", fx_now());
	fx_check(c);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(a->generation, gen + 1);
	assert_int_equal(sched_job_total_npus(a), 8);
	assert_int_equal(a->runs[a->run_count - 2].end, SCHED_RUN_RESIZED);
	/* the same size again: nothing */
	u = before(c);
	assert_int_equal(sched_job_resize(c, "a", FX_UID, false, 8, fx_now(), why), 0);
	expect_unchanged(c, u);
	sched_cluster_free(c);
}

/*
 * A resize scales data parallel: a spec that fixed dp (tp 8, dp 2 on 16 NPUs) resized to
 * 8 NPUs runs with dp 1; the given dp no longer binds (review of issue 20: the refusal
 * said "set dp to 1 or leave it out", which a resize cannot do). A size tp*cp*pp does
 * not divide is still refused with the parser's sentence.
 */
static void test_resize_scales_dp(void **state)
{
	struct sched_cluster *c = cluster_of(2);
	char why[SCHED_REASON_MAX] = "";
	struct conf_job_spec *s = fx_spec("a", 16);
	struct sched_job *a;

	(void)state;
	s->tp = 8;
	s->dp = 2;
	a = fx_submit_spec(c, s, FX_UID);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_resize(c, "a", FX_UID, false, 4, fx_now(), why), -EINVAL);
	expect_text(why, "tp*cp*pp (8) must divide npus (4)");
	assert_int_equal(sched_job_resize(c, "a", FX_UID, false, 8, fx_now(), why), 0);
	expect_text(a->spec_text, "npus: 8");
	assert_null(strstr(a->spec_text, "dp: 2"));
	assert_int_equal(a->spec->npus, 8);
	assert_int_equal(a->spec->tp * 10 + a->spec->dp, 80);
	sched_cluster_free(c);
}

static void test_resize_pending_and_capped(void **state)
{
	static const char q[] = "  - name: default\n    max_npus: 16\n";
	struct fx_opts o = { .servers = 2, .queues = q };
	struct sched_cluster *c = fx_cluster(&o);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *b, *e;
	struct conf_job_spec *el = fx_spec("el", 8);

	(void)state;
	fx_run(c, "a", 16);
	b = fx_submit(c, "b", 16);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	/* over the queue's max_npus: a user may not, root may not either past the cluster */
	assert_int_equal(sched_job_resize(c, "b", FX_UID, false, 24, fx_now(), why), -EACCES);
	expect_text(why, "max_npus 16");
	assert_int_equal(sched_job_resize(c, "b", FX_UID, false, 8, fx_now(), why), 0);
	fx_check(c);
	assert_int_equal(b->need_min, 8);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	/* an elastic job */
	el->npus_min = 8;
	el->npus_max = 16;
	e = fx_submit_spec(c, el, FX_UID);
	assert_int_equal(sched_job_resize(c, e->name, FX_UID, false, 16, fx_now(), why), -EINVAL);
	expect_text(why, "elastic");
	assert_int_equal(fx_cancel(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(b), 8);
	sched_cluster_free(c);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_passes_a_pending_job_by_until_released),
		cmocka_unit_test(test_held_job_reserves_nothing),
		cmocka_unit_test(test_admin_hold_is_released_by_root_only),
		cmocka_unit_test(test_hold_refuses_running_and_finished_jobs),
		cmocka_unit_test(test_requeue_stops_then_starts_a_new_generation),
		cmocka_unit_test(test_requeue_then_hold_keeps_it_from_starting),
		cmocka_unit_test(test_update_priority_reorders_the_queue),
		cmocka_unit_test(test_update_stays_within_queue_caps),
		cmocka_unit_test(test_update_time_limit_times_out_a_running_job),
		cmocka_unit_test(test_control_refuses_service_instances),
		cmocka_unit_test(test_update_user_may_not_lengthen_a_running_job),
		cmocka_unit_test(test_update_refuses_a_used_up_time_limit_for_a_pending_job),
		cmocka_unit_test(test_update_checks_only_the_field_it_changes),
		cmocka_unit_test(test_requeue_in_flight_is_no_preemption_for_recovery),
		cmocka_unit_test(test_requeue_hold_is_one_request),
		cmocka_unit_test(test_resize_a_running_job),
		cmocka_unit_test(test_resize_scales_dp),
		cmocka_unit_test(test_resize_pending_and_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
