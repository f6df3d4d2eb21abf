/* SPDX-License-Identifier: MIT */
/*
 * sched recovery ladder (sched_ladder.c, issue 17): a fault walks the job's recovery
 * list; dump asks the surviving processes to save the step they finished
 * (jobs/<id>/recovery), restarts the job from that checkpoint when they answer, and
 * falls back to the next strategy when its deadline passes, a process cannot save, or
 * nobody is left; the cluster bounds which strategies a spec may name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include "sched_fixture.h"
#include "sched_internal.h" /* sched_job_process_exited() */
#include "test_util.h"

#define SEC 1000000ull

/* Health times run on their own clock, far ahead of fx_now()'s. */
static uint64_t clock_usec = 1800000000ull * SEC;

static uint64_t tick(unsigned sec)
{
	clock_usec += (uint64_t)sec * SEC;
	return clock_usec;
}

static bool has_event(const struct sched_cluster *c, enum sched_event_kind k, const char *needle)
{
	for (const struct sched_event *e = sched_event_next(c, 0); e;
	     e = sched_event_next(c, e->seq))
		if (e->kind == k && (!needle || strstr(e->reason, needle)))
			return true;
	return false;
}

/* A Critical NPU (the first of its share) on the server of slice @k of @j. */
static void fail_npu(struct sched_cluster *c, const struct sched_job *j, size_t k)
{
	fx_report_npu(c, j->slices[k].server, j->slices[k].device_ids[0], CONF_HEALTH_CRITICAL,
		      tick(1));
}

/* A job of @npus NPUs with checkpoint_dir and recovery [dump, job] (or @only_dump: [dump]). */
static struct conf_job_spec *dump_spec(const char *name, unsigned npus, bool only_dump)
{
	struct conf_job_spec *s = fx_spec(name, npus);

	s->checkpoint_dir = strdup("/data/ckpt");
	assert_non_null(s->checkpoint_dir);
	s->recovery[0] = CONF_RECOVERY_DUMP;
	s->recovery[1] = CONF_RECOVERY_JOB;
	s->recovery_count = only_dump ? 1 : 2;
	return s;
}

/* Every server's agent reports all is well (so processes run there to answer). */
static void agents_report(struct sched_cluster *c)
{
	uint64_t t = tick(1);

	for (unsigned i = 0; i < c->server_count; i++)
		fx_report_ok(c, i, t);
}

/* A cluster of @servers whose agents report, running a 2-server dump job "big". */
static struct sched_cluster *two_server_job(unsigned servers, const char *extra, bool only_dump,
					    struct sched_job **ret)
{
	struct fx_opts o = { .servers = servers, .cluster_extra = extra };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	agents_report(c);
	j = fx_submit_spec(c, dump_spec("big", 16, only_dump), FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->slice_count, 2);
	*ret = j;
	return c;
}

static json_t *recovery_file(const struct sched_cluster *c, const struct sched_job *j)
{
	char *text = NULL;
	size_t len;
	json_error_t err;
	json_t *o;

	assert_int_equal(sched_render_job_recovery(c, j, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	assert_true(len > 0 && text[len - 1] == '\n');
	o = json_loads(text, 0, &err);
	if (!o)
		fail_msg("recovery file is not JSON: %s\n%s", err.text, text);
	free(text);
	return o;
}

static bool server_lists(const struct sched_cluster *c, unsigned server, const char *job)
{
	char *text = NULL, needle[80];
	size_t len;
	bool found;

	assert_int_equal(sched_render_server_jobs(c, server, &text, &len), 0);
	snprintf(needle, sizeof(needle), "\n%s ", job);
	found = strstr(text, needle) != NULL;
	free(text);
	return found;
}

static int answer(struct sched_cluster *c, const char *job, unsigned request, unsigned server,
		  bool saved, uint64_t step, const char *path, char *why)
{
	return sched_job_recovery_answer(c, job, FX_UID, request, fx_server_name(c, server), -1,
					 saved ? SCHED_ANSWER_SAVED : SCHED_ANSWER_SAVE_FAILED,
					 step, path, tick(1), why);
}

/*
 * A Critical NPU on the server of rank 0: the job recovers on the NPUs it holds, the
 * survivor on the other server is asked to save; its answer restarts the job from that
 * checkpoint, generation 2, with the failed server replaced.
 */
static void test_ladder_dump_saves_then_restarts_from_it(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(3, NULL, false, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";
	json_t *f, *procs;

	(void)state;
	fx_report_npu(c, s0, j->slices[0].device_ids[3], CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->generation, 1);
	assert_int_equal(j->slice_count, 2); /* it keeps what it holds while it saves */
	assert_non_null(strstr(j->reason, "dump"));
	assert_int_equal(c->ladder_active, 1);
	/* the failed server's processes stop, the survivor's run on to answer */
	assert_false(server_lists(c, s0, "big"));
	assert_true(server_lists(c, s1, "big"));

	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "save");
	assert_string_equal(json_string_value(json_object_get(f, "strategy")), "dump");
	assert_int_equal(json_integer_value(json_object_get(f, "request")), 1);
	procs = json_object_get(f, "processes");
	assert_int_equal(json_array_size(procs), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(procs, 0), "server")),
			    fx_server_name(c, s1));
	assert_true(json_is_null(json_object_get(json_array_get(procs, 0), "rank")));
	assert_non_null(json_string_value(json_object_get(f, "deadline")));
	json_decref(f);

	assert_int_equal(answer(c, "big", 1, s1, true, 1234, "/data/ckpt/demo-1_1234.ckpt", why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(c->ladder_active, 0);
	assert_int_equal(j->checkpoint_step, 1234);
	assert_string_equal(j->checkpoint_path, "/data/ckpt/demo-1_1234.ckpt");
	assert_non_null(j->resume_path);
	assert_string_equal(j->resume_path, "/data/ckpt/demo-1_1234.ckpt");
	for (size_t k = 0; k < j->slice_count; k++)
		assert_int_not_equal(j->slices[k].server, s0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "saved step 1234"));
	assert_true(has_event(c, SCHED_EV_CHECKPOINT, "dying-gasp"));
	assert_non_null(strstr(j->reason, "recovered"));
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "none");
	assert_non_null(strstr(json_string_value(json_object_get(f, "last_outcome")), "1234"));
	json_decref(f);
	/* the request is over: a late answer is told so */
	assert_int_equal(answer(c, "big", 1, s1, true, 1235, "/data/ckpt/x.ckpt", why), -ESTALE);
	assert_non_null(strstr(why, "no open recovery request"));
	fx_check(c);
	sched_cluster_free(c);
}

/* Nobody answers within recovery_timeout: job-level from the newest checkpoint. */
static void test_ladder_dump_timeout_falls_back_to_job(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(3, "  recovery_timeout: 5\n", false, &j);
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_checkpoint(c, "big", FX_UID, 100, "/data/ckpt/demo-1_100.ckpt",
					      tick(1)), 0);
	fail_npu(c, j, 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	sched_tick(c, tick(4));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING); /* not yet */
	sched_tick(c, tick(2));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(c->ladder_active, 0);
	assert_string_equal(j->resume_path, "/data/ckpt/demo-1_100.ckpt");
	assert_true(has_event(c, SCHED_EV_RECOVERY, "dump timed out: 0 of 1"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "falling back to job"));
	assert_int_equal(answer(c, "big", 1, j->slices[0].server, true, 7, NULL, why), -ESTALE);
	fx_check(c);
	sched_cluster_free(c);
}

/* A process that cannot save ends the step at once. */
static void test_ladder_save_failed_falls_back_at_once(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(3, NULL, false, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fail_npu(c, j, 0);
	/* only the survivors are asked; the failed server's process is not */
	assert_int_equal(answer(c, "big", 1, s0, true, 5, "/data/ckpt/a.ckpt", why), -EINVAL);
	assert_non_null(strstr(why, "not asked"));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(answer(c, "big", 2, s1, true, 5, "/data/ckpt/a.ckpt", why), -ESTALE);
	assert_int_equal(sched_job_recovery_answer(c, "big", FX_OTHER_UID, 1, fx_server_name(c, s1),
						   -1, SCHED_ANSWER_SAVED, 5, "/data/ckpt/a.ckpt", tick(1), why),
			 -EPERM);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(answer(c, "big", 1, s1, false, 0, NULL, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "could not save; falling back to job"));
	fx_check(c);
	sched_cluster_free(c);
}

/* recovery: [dump] alone: when the dump fails there is nothing left, and the job fails. */
static void test_ladder_spent_fails_the_job(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(3, "  recovery_timeout: 1\n", true, &j);

	(void)state;
	fail_npu(c, j, 1);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	sched_tick(c, tick(2));
	assert_true(j->state == SCHED_JOB_STOPPING || j->state == SCHED_JOB_FAILED);
	assert_non_null(strstr(j->reason, "no strategy of recovery [dump] is left"));
	assert_int_equal(c->ladder_active, 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* The survivor's server fails too during the save: nobody is left, it falls back at once. */
static void test_ladder_second_fault_during_dump(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(4, NULL, false, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;

	(void)state;
	fail_npu(c, j, 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	fail_npu(c, j, 1);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	for (size_t k = 0; k < j->slice_count; k++) {
		assert_int_not_equal(j->slices[k].server, s0);
		assert_int_not_equal(j->slices[k].server, s1);
	}
	assert_true(has_event(c, SCHED_EV_RECOVERY, "no surviving process is left to save"));
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * The surviving server has no agent (nobody would start or answer a process there; only
 * the failed server's agent reports): dump is passed over at once.
 */
static void test_ladder_dump_needs_an_agent(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j = fx_submit_spec(c, dump_spec("big", 16, false), FX_UID);

	(void)state;
	fail_npu(c, j, 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "no surviving server has an agent"));
	fx_check(c);
	sched_cluster_free(c);
}

/* A task fault of an msrun process: the others save; the failed process is not asked. */
static void test_ladder_process_exit_asks_the_others(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(2, NULL, false, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_process_exit(c, "big", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_true(server_lists(c, s0, "big"));
	assert_int_equal(j->ladder.waited_count, 1);
	assert_true(j->ladder.waited[0]);
	assert_int_equal(answer(c, "big", 1, s0, true, 77, "/data/ckpt/demo-1_77.ckpt", why), 0);
	/* a task fault restarts on the same NPUs */
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->slices[0].server, s0);
	assert_int_equal(j->slices[1].server, s1);
	assert_string_equal(j->resume_path, "/data/ckpt/demo-1_77.ckpt");
	assert_int_equal(j->restarts, 1);
	fx_check(c);
	sched_cluster_free(c);
}

/* A survivor that exits during the save will not answer: the step ends without it. */
static void test_ladder_survivor_exit_during_dump(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(3, NULL, false, &j);
	unsigned s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fail_npu(c, j, 0);
	assert_int_equal(sched_job_process_exit(c, "big", FX_UID, 1, fx_server_name(c, s1), -1, 1,
						tick(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "no surviving process is left"));
	fx_check(c);
	sched_cluster_free(c);
}

/* A cancel during the save stops the job and ends the step. */
static void test_ladder_cancel_during_dump(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(3, NULL, false, &j);
	unsigned s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fail_npu(c, j, 0);
	assert_int_equal(fx_cancel(c, "big", FX_UID, tick(1)), 0);
	assert_true(j->state == SCHED_JOB_STOPPING || j->state == SCHED_JOB_CANCELLED);
	assert_int_equal(c->ladder_active, 0);
	assert_false(j->ladder.active);
	assert_int_equal(answer(c, "big", 1, s1, true, 1, NULL, why), -ESTALE);
	sched_tick(c, tick(100));
	fx_check(c);
	sched_cluster_free(c);
}

/* recovery_strategies bounds what a spec may name: a refused spec changes nothing. */
static void test_ladder_cluster_bounds_strategies(void **state)
{
	struct fx_opts o = { .servers = 2, .cluster_extra = "  recovery_strategies: [job]\n" };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;
	struct conf_job_spec *s = dump_spec("big", 16, false);

	(void)state;
	assert_int_equal(c->conf->recovery_allowed, 1u << CONF_RECOVERY_JOB);
	assert_int_equal(sched_job_submit(c, s, FX_UID, FX_GID, fx_now(), reason, &j), -EINVAL);
	assert_non_null(strstr(reason, "recovery: dump is not allowed on this cluster"));
	assert_non_null(strstr(reason, "recovery_strategies: [job]"));
	assert_null(sched_cluster_find_job(c, "big")); /* @s was stolen, freed */
	fx_check(c);
	sched_cluster_free(c);
}

/* True when @j holds an NPU that is isolated. */
static bool holds_isolated(const struct sched_cluster *c, const struct sched_job *j)
{
	for (size_t k = 0; k < j->slice_count; k++)
		for (unsigned d = 0; d < j->slices[k].npu_count; d++)
			if (c->servers[j->slices[k].server].npus[j->slices[k].device_ids[d]].isolated)
				return true;
	return false;
}

/*
 * A process exit opens the dump, then an NPU of the survivor's server fails: the
 * job-level rung moves the job off it, not "restarted on the same NPUs" (review).
 */
static void test_ladder_npu_fault_during_process_dump_moves_the_job(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(4, NULL, false, &j);
	unsigned s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_process_exit(c, "big", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	fail_npu(c, j, 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_false(holds_isolated(c, j));
	assert_null(strstr(j->reason, "same NPUs"));
	fx_check(c);
	sched_cluster_free(c);
}

/* A dying-gasp save older than a checkpoint already known does not replace it (review). */
static void test_ladder_older_save_keeps_the_newer_checkpoint(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(3, NULL, false, &j);
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_checkpoint(c, "big", FX_UID, 500, "/data/ckpt/demo-1_500.ckpt",
					      tick(1)), 0);
	fail_npu(c, j, 0);
	assert_int_equal(answer(c, "big", 1, j->slices[1].server, true, 100,
				"/data/ckpt/demo-1_100.ckpt", why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->checkpoint_step, 500);
	assert_string_equal(j->resume_path, "/data/ckpt/demo-1_500.ckpt");
	assert_true(has_event(c, SCHED_EV_RECOVERY, "older than checkpoint step 500"));
	fx_check(c);
	sched_cluster_free(c);
}

/* Per-rank answers name their rank; a second, different answer is refused. */
static void test_ladder_per_rank_answers(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = dump_spec("pr", 16, false);
	const char *srv;
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *j;

	(void)state;
	s->launch = CONF_LAUNCH_PER_RANK;
	agents_report(c);
	j = fx_submit_spec(c, s, FX_UID);
	assert_int_equal(sched_job_process_exit(c, "pr", FX_UID, 1,
						fx_server_name(c, j->slices[1].server), 9, 3,
						tick(1), why), 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.waited_count, 15); /* every rank but the one that exited */
	srv = fx_server_name(c, j->slices[0].server);
	assert_int_equal(sched_job_recovery_answer(c, "pr", FX_UID, 1, srv, -1, SCHED_ANSWER_SAVED, 5, NULL,
						   tick(1), why), -EINVAL);
	assert_non_null(strstr(why, "RANK_ID"));
	assert_int_equal(sched_job_recovery_answer(c, "pr", FX_UID, 1, srv, 0, SCHED_ANSWER_SAVED, 5,
						   "/data/ckpt/a.ckpt", tick(1), why), 0);
	assert_int_equal(sched_job_recovery_answer(c, "pr", FX_UID, 1, srv, 0, SCHED_ANSWER_SAVED, 5,
						   "/data/ckpt/a.ckpt", tick(1), why), 0);
	assert_int_equal(sched_job_recovery_answer(c, "pr", FX_UID, 1, srv, 0, SCHED_ANSWER_SAVE_FAILED, 0, NULL,
						   tick(1), why), -EINVAL);
	assert_non_null(strstr(why, "already answered"));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.waited_count, 14);
	fx_check(c);
	sched_cluster_free(c);
}

/* A job whose time_limit is used up gets no dump: a save would outlive it. */
static void test_ladder_no_dump_past_the_time_limit(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = dump_spec("tl", 16, false);
	struct sched_job *j;

	(void)state;
	s->time_limit_sec = 10;
	agents_report(c);
	j = fx_submit_spec(c, s, FX_UID);
	j->run_accum_usec = 10 * SEC; /* as if it had run its 10 s before */
	fail_npu(c, j, 0);
	assert_int_not_equal(j->state, SCHED_JOB_RECOVERING);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "time_limit is used up"));
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * The replacement that a dump's restart placed the job on fails too: the ladder starts
 * again for the new fault (a new request) and the job moves on once more.
 */
static void test_ladder_replacement_fails_too(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = two_server_job(4, NULL, false, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server, r0;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fail_npu(c, j, 0);
	assert_int_equal(answer(c, "big", 1, s1, true, 10, "/data/ckpt/demo-1_10.ckpt", why), 0);
	assert_int_equal(j->generation, 2);
	r0 = j->slices[0].server == s1 ? j->slices[1].server : j->slices[0].server;
	assert_int_not_equal(r0, s0);
	/* generation 2's processes run on the kept and the new server; the new one fails */
	fx_report_npu(c, r0, 0, CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.request, 2);
	assert_int_equal(answer(c, "big", 2, s1, true, 20, "/data/ckpt/demo-1_20.ckpt", why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 3);
	assert_string_equal(j->resume_path, "/data/ckpt/demo-1_20.ckpt");
	for (size_t k = 0; k < j->slice_count; k++) {
		assert_int_not_equal(j->slices[k].server, s0);
		assert_int_not_equal(j->slices[k].server, r0);
	}
	/* within heartbeat_timeout of the first: the same incident, not counted again */
	assert_int_equal(j->restarts, 1);
	assert_int_equal(j->restarts_coalesced, 1);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * An answer that leaves others to wait for, and a process gone during the step, are
 * changes of the cluster (its version moves): the daemon's store writes them and its
 * files show them (a newcomer's report: the answer stayed invisible and was lost at a
 * restart). A second answer with another step or checkpoint is refused.
 */
static void test_ladder_partial_answers_are_changes(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	char why[SCHED_REASON_MAX] = "";
	uint64_t v;
	json_t *f;
	unsigned s1, s2;

	(void)state;
	agents_report(c);
	j = fx_submit_spec(c, dump_spec("three", 24, false), FX_UID);
	assert_int_equal(j->slice_count, 3);
	s1 = j->slices[1].server;
	s2 = j->slices[2].server;
	fail_npu(c, j, 0);
	assert_int_equal(j->ladder.waited_count, 2);
	v = c->version;
	assert_int_equal(answer(c, "three", 1, s1, true, 50, NULL, why), 0);
	assert_true(c->version > v);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	f = recovery_file(c, j);
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(f, "processes"), 0),
						 "answered")));
	json_decref(f);
	assert_int_equal(answer(c, "three", 1, s1, true, 60, "/data/ckpt/other.ckpt", why), -EINVAL);
	assert_non_null(strstr(why, "already answered"));
	assert_int_equal(answer(c, "three", 1, s1, true, 50, NULL, why), 0); /* a retry */
	v = c->version;
	assert_int_equal(sched_job_process_exit(c, "three", FX_UID, 1, fx_server_name(c, s2), -1, 1,
						tick(1), why), 0);
	/* the last one asked is gone: the step settles (no checkpoint: falls back) */
	assert_true(c->version > v);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* ---- in-place ---- */

/* A cluster of @servers whose agents report, running the 2-server job "ip" whose ladder
 * is [in-place, dump, job] (or @ladder_count of them). */
static struct sched_cluster *in_place_job(unsigned servers, const char *extra,
					  size_t ladder_count, struct sched_job **ret)
{
	struct fx_opts o = { .servers = servers, .cluster_extra = extra };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = fx_spec("ip", 16);
	struct sched_job *j;

	agents_report(c);
	s->checkpoint_dir = strdup("/data/ckpt");
	assert_non_null(s->checkpoint_dir);
	s->recovery[0] = CONF_RECOVERY_IN_PLACE;
	s->recovery[1] = CONF_RECOVERY_DUMP;
	s->recovery[2] = CONF_RECOVERY_JOB;
	s->recovery_count = ladder_count;
	j = fx_submit_spec(c, s, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->slice_count, 2);
	*ret = j;
	return c;
}

static int in_place_answer(struct sched_cluster *c, unsigned request, unsigned server,
			   enum sched_recovery_answer a, uint64_t step, char *why)
{
	return sched_job_recovery_answer(c, "ip", FX_UID, request, fx_server_name(c, server), -1,
					 a, step, NULL, tick(1), why);
}

/* Word @word (1-based) of job @job's line in nodes/<server>/jobs, -1 when not listed. */
static long listed_word(const struct sched_cluster *c, unsigned server, const char *job,
			unsigned word)
{
	char *text = NULL, *line, needle[64];
	size_t len;
	long value = -1;

	assert_int_equal(sched_render_server_jobs(c, server, &text, &len), 0);
	snprintf(needle, sizeof(needle), "\n%s ", job);
	line = strstr(text, needle);
	if (line) {
		char *p = line + 1;

		for (unsigned w = 1; w < word; w++) {
			p = strchr(p, ' ');
			assert_non_null(p);
			p++;
		}
		value = strtol(p, NULL, 10);
	}
	free(text);
	return value;
}

/* The attempt nodes/<server>/jobs gives job "ip" (its tenth word), -1 when not listed. */
static long listed_attempt(const struct sched_cluster *c, unsigned server)
{
	return listed_word(c, server, "ip", 10);
}

/*
 * A process exits: only it starts again (its server's share gets attempt 1, same
 * generation), the other pauses; when it has paused and the restarted one has joined,
 * the job runs on in generation 1 and the file says to resume from the step paused at.
 */
static void test_ladder_in_place_restarts_only_the_failed_process(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";
	json_t *f, *procs;

	(void)state;
	assert_int_equal(listed_attempt(c, s1), 0);
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->generation, 1);
	assert_int_equal(j->slices[0].server, s0);
	assert_int_equal(j->slices[1].server, s1);
	assert_int_equal(j->slices[0].attempt, 0);
	assert_int_equal(j->slices[1].attempt, 1);
	/* both agents keep the job; the failed server's starts what exited again */
	assert_int_equal(listed_attempt(c, s0), 0);
	assert_int_equal(listed_attempt(c, s1), 1);
	assert_non_null(strstr(j->reason, "in-place"));

	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "pause");
	assert_string_equal(json_string_value(json_object_get(f, "strategy")), "in-place");
	assert_int_equal(json_integer_value(json_object_get(f, "request")), 1);
	assert_true(json_is_null(json_object_get(f, "step")));
	procs = json_object_get(f, "processes");
	assert_int_equal(json_array_size(procs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(procs, 0), "role")),
			    "pause");
	assert_string_equal(json_string_value(json_object_get(json_array_get(procs, 1), "role")),
			    "restart");
	assert_string_equal(json_string_value(json_object_get(json_array_get(procs, 1), "server")),
			    fx_server_name(c, s1));
	json_decref(f);

	/* each answers its own word; a dump's answer is refused with the right one */
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_JOINED, 0, why), -EINVAL);
	assert_non_null(strstr(why, "only the restarted process answers joined"));
	assert_int_equal(in_place_answer(c, 1, s1, SCHED_ANSWER_PAUSED, 7, why), -EINVAL);
	assert_non_null(strstr(why, "answers joined"));
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_SAVED, 7, why), -EINVAL);
	assert_non_null(strstr(why, "answer paused"));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);

	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 120, why), 0);
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 120, why), 0); /* a retry */
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(in_place_answer(c, 1, s1, SCHED_ANSWER_JOINED, 0, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 1);
	assert_int_equal(j->restarts, 1);
	assert_int_equal(c->ladder_active, 0);
	assert_int_equal(listed_attempt(c, s1), 1);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "started again on the same NPUs"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "from step 120"));

	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "resume");
	assert_int_equal(json_integer_value(json_object_get(f, "request")), 2);
	assert_int_equal(json_integer_value(json_object_get(f, "step")), 120);
	assert_int_equal(json_array_size(json_object_get(f, "processes")), 0);
	json_decref(f);
	/* the resume is a notice: nobody answers it, and the pause is over */
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 121, why), -ESTALE);
	assert_int_equal(in_place_answer(c, 2, s0, SCHED_ANSWER_PAUSED, 121, why), -ESTALE);

	/* a second exit of it later is a new fault: in place again, attempt 2 */
	agents_report(c);
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.request, 3);
	assert_int_equal(listed_attempt(c, s1), 2);
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "pause");
	json_decref(f);
	fx_check(c);
	sched_cluster_free(c);
}

/* The restarted process exits again: the next rung, a dump, leaves it out. */
static void test_ladder_in_place_restart_fails_again(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 50, why), 0);
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 4,
						tick(1), why),
			 0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "exited again with status 4"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "falling back to dump"));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	assert_int_equal(j->ladder.request, 2);
	assert_int_equal(j->ladder.waited_count, 1);
	assert_true(j->ladder.waited[0]);
	assert_int_equal(sched_job_recovery_answer(c, "ip", FX_UID, 2, fx_server_name(c, s1), -1,
						   SCHED_ANSWER_SAVED, 50, "/data/ckpt/x.ckpt",
						   tick(1), why),
			 -EINVAL);
	assert_int_equal(sched_job_recovery_answer(c, "ip", FX_UID, 2, fx_server_name(c, s0), -1,
						   SCHED_ANSWER_SAVED, 50,
						   "/data/ckpt/demo-1_50.ckpt", tick(1), why),
			 0);
	/* job-level from the dying-gasp save, a new generation whose attempts start at 0 */
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->slices[1].attempt, 0);
	assert_string_equal(j->resume_path, "/data/ckpt/demo-1_50.ckpt");
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * In-place is for processes: an NPU fault passes it over; and it does not apply with
 * max_restarts used up, nor without an agent to restart the process.
 */
static void test_ladder_in_place_applies_to_process_exits_only(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	unsigned s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fail_npu(c, j, 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	assert_non_null(strstr(j->reason, "dump"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "passed over: in-place: not a process's exit"));
	sched_cluster_free(c);

	c = in_place_job(3, NULL, 3, &j);
	s1 = j->slices[1].server;
	j->restarts = j->spec->max_restarts;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	assert_non_null(strstr(j->reason, "dump"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "dump (passed over: in-place: max_restarts (3) is used up)"));
	sched_cluster_free(c);

	/* [in-place, job], a single server's job: no survivor holds the state */
	{
		struct fx_opts o = { .servers = 2 };
		struct conf_job_spec *s = fx_spec("one", 8);

		c = fx_cluster(&o);
		agents_report(c);
		s->recovery[0] = CONF_RECOVERY_IN_PLACE;
		s->recovery[1] = CONF_RECOVERY_JOB;
		s->recovery_count = 2;
		j = fx_submit_spec(c, s, FX_UID);
		assert_int_equal(sched_job_process_exit(c, "one", FX_UID, 1,
							fx_server_name(c, j->slices[0].server),
							-1, 3, tick(1), why),
				 0);
		assert_int_equal(j->state, SCHED_JOB_RUNNING);
		assert_int_equal(j->generation, 2);
		assert_true(has_event(c, SCHED_EV_RECOVERY, "no process survived to hold"));
		fx_check(c);
		sched_cluster_free(c);
	}
}

/* Nobody joins within recovery_timeout; a survivor's exit, a server's fault: fall back. */
static void test_ladder_in_place_falls_back(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, "  recovery_timeout: 5\n", 2, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	/* [in-place, dump]: the timeout falls back to the dump, which asks the survivor */
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 10, why), 0);
	sched_tick(c, tick(6));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "1 of 1 surviving processes paused and the "
						     "restarted process did not join"));
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	sched_cluster_free(c);

	/* a survivor exits during the step: its state is gone */
	c = in_place_job(3, NULL, 3, &j);
	s0 = j->slices[0].server;
	s1 = j->slices[1].server;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s0), -1, 9,
						tick(1), why),
			 0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "exited with status 9 during the step"));
	assert_int_not_equal(j->ladder.strategy, CONF_RECOVERY_IN_PLACE);
	fx_check(c);
	sched_cluster_free(c);

	/* an NPU of the job fails during the step: the job moves off it */
	c = in_place_job(3, NULL, 3, &j);
	s0 = j->slices[0].server;
	s1 = j->slices[1].server;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	fail_npu(c, j, 0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "during the step; falling back to dump"));
	/* the dump asks nobody on the failed server, nor the restarted process: nobody
	 * is left, and job-level moves the job off the failed server */
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	for (size_t k = 0; k < j->slice_count; k++)
		assert_int_not_equal(j->slices[k].server, s0);
	fx_check(c);
	sched_cluster_free(c);
}

/* A resume notice is for its generation: after a job-level restart the file says none. */
static void test_ladder_in_place_resume_ends_with_its_generation(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";
	json_t *f;

	(void)state;
	j->spec->recovery[1] = CONF_RECOVERY_JOB; /* [in-place, job] */
	j->spec->recovery_count = 2;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 9, why), 0);
	assert_int_equal(in_place_answer(c, 1, s1, SCHED_ANSWER_JOINED, 0, why), 0);
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "resume");
	json_decref(f);
	agents_report(c);
	fail_npu(c, j, 0); /* in-place passed over: job-level, generation 2 */
	assert_int_equal(j->generation, 2);
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "none");
	assert_true(json_is_null(json_object_get(f, "step")));
	json_decref(f);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * Per-rank launch: rank 9 exits; the 15 other ranks (its server's too) pause, only
 * rank 9 joins; the rank table stays, rank 9's server's share gets attempt 1.
 */
static void test_ladder_in_place_per_rank(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	const char *s1 = fx_server_name(c, j->slices[1].server);
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	j->spec->launch = CONF_LAUNCH_PER_RANK;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, s1, 9, 3, tick(1), why), 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_IN_PLACE);
	assert_int_equal(j->ladder.restarted, 9);
	assert_int_equal(j->ladder.waited_count, 15);
	assert_int_equal(j->slices[1].attempt, 1);
	assert_int_equal(sched_job_recovery_answer(c, "ip", FX_UID, 1, s1, -1, SCHED_ANSWER_JOINED,
						   0, NULL, tick(1), why),
			 -EINVAL);
	assert_non_null(strstr(why, "RANK_ID"));
	assert_int_equal(sched_job_recovery_answer(c, "ip", FX_UID, 1, s1, 8, SCHED_ANSWER_JOINED,
						   0, NULL, tick(1), why),
			 -EINVAL);
	assert_int_equal(sched_job_recovery_answer(c, "ip", FX_UID, 1, s1, 9, SCHED_ANSWER_JOINED,
						   0, NULL, tick(1), why),
			 0);
	for (int r = 0; r < 16; r++) {
		const char *srv = fx_server_name(c, j->slices[r / 8].server);

		if (r == 9)
			continue;
		assert_int_equal(j->state, SCHED_JOB_RECOVERING);
		assert_int_equal(sched_job_recovery_answer(c, "ip", FX_UID, 1, srv, r,
							   SCHED_ANSWER_PAUSED, 100 + (r == 3),
							   NULL, tick(1), why),
				 0);
	}
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 1);
	assert_int_equal(j->ladder.resume_step, 101); /* the newest step paused at */
	assert_true(has_event(c, SCHED_EV_RECOVERY, "in-place: rank 9 on"));
	fx_check(c);
	sched_cluster_free(c);
}

/* A survivor exits during the step: the fallback does not ask it (nor the restarted one). */
static void test_ladder_in_place_fallback_skips_the_exited(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, "  recovery_timeout: 30\n", 3, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s0), -1, 9,
						tick(1), why),
			 0);
	/* nobody is left for the dump: job-level at once, not after recovery_timeout */
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "dump: no process survived the fault"));
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * An exit report sent again (the agent retries a write whose answer it lost) is of the
 * attempt before: it neither ends the step nor, after the resume, opens a new one.
 */
static void test_ladder_in_place_repeated_exit_report(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	const char *n1 = fx_server_name(c, s1);
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	for (int k = 0; k < 2; k++)
		assert_int_equal(sched_job_process_exit_attempt(c, "ip", FX_UID, 1, 0, n1, -1, 3,
								tick(1), why),
				 0);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_IN_PLACE);
	assert_true(j->ladder.active);
	assert_false(has_event(c, SCHED_EV_RECOVERY, "exited again"));
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 9, why), 0);
	assert_int_equal(in_place_answer(c, 1, s1, SCHED_ANSWER_JOINED, 0, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_process_exit_attempt(c, "ip", FX_UID, 1, 0, n1, -1, 3,
							tick(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->slices[1].attempt, 1);
	/* the restarted process's own exit (attempt 1) is a new fault */
	agents_report(c);
	assert_int_equal(sched_job_process_exit_attempt(c, "ip", FX_UID, 1, 1, n1, -1, 3,
							tick(1), why),
			 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->slices[1].attempt, 2);
	/* a stranger's report is still refused */
	assert_int_equal(sched_job_process_exit_attempt(c, "ip", FX_OTHER_UID, 1, 0, n1, -1, 3,
							tick(1), why),
			 -EPERM);
	fx_check(c);
	sched_cluster_free(c);
}

/* The generation goes on: one history record, still open, without the exit's status. */
static void test_ladder_in_place_history_keeps_the_generation(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";
	uint64_t started = j->start_usec;

	(void)state;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	assert_int_equal(in_place_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 9, why), 0);
	assert_int_equal(in_place_answer(c, 1, s1, SCHED_ANSWER_JOINED, 0, why), 0);
	assert_int_equal(j->run_count, 1);
	assert_int_equal(j->runs[0].generation, 1);
	assert_int_equal(j->runs[0].end, SCHED_RUN_OPEN);
	assert_false(j->runs[0].has_exit);
	/* it did not start again (preemption takes the newest runs first) */
	assert_int_equal(j->start_usec, started);
	sched_cluster_free(c);

	/* a fallback ends the generation's record as failed, and the next opens */
	c = in_place_job(3, "  recovery_timeout: 5\n", 3, &j);
	s1 = j->slices[1].server;
	j->spec->recovery[1] = CONF_RECOVERY_JOB;
	j->spec->recovery_count = 2;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, fx_server_name(c, s1), -1, 3,
						tick(1), why),
			 0);
	sched_tick(c, tick(6));
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->run_count, 2);
	assert_int_equal(j->runs[0].end, SCHED_RUN_FAILED);
	assert_int_equal(j->runs[0].exit_code, 3);
	assert_int_equal(j->runs[1].generation, 2);
	assert_int_equal(j->runs[1].end, SCHED_RUN_OPEN);
	fx_check(c);
	sched_cluster_free(c);
}

/* Per-rank: a rank that finished (status 0) is not asked to pause. */
static void test_ladder_in_place_finished_rank_is_not_asked(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = in_place_job(3, NULL, 3, &j);
	const char *s1 = fx_server_name(c, j->slices[1].server);
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	j->spec->launch = CONF_LAUNCH_PER_RANK;
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, s1, 8, 0, tick(1), why), 0);
	assert_int_equal(sched_job_process_exit(c, "ip", FX_UID, 1, s1, 9, 3, tick(1), why), 0);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_IN_PLACE);
	assert_false(j->ladder.waited[8]);
	assert_int_equal(j->ladder.waited_count, 14);
	fx_check(c);
	sched_cluster_free(c);
}

/* ---- process ---- */

/*
 * A cluster of @servers whose agents report, running the 2-server job "pl" whose ladder
 * is [process, dump, job] (or its first @ladder_count), with checkpoint_dir.
 */
static struct sched_cluster *process_job(unsigned servers, const char *extra,
					 size_t ladder_count, enum conf_launch launch,
					 struct sched_job **ret)
{
	struct fx_opts o = { .servers = servers, .cluster_extra = extra };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = fx_spec("pl", 16);
	struct sched_job *j;

	agents_report(c);
	s->checkpoint_dir = strdup("/data/ckpt");
	assert_non_null(s->checkpoint_dir);
	s->launch = launch;
	s->recovery[0] = CONF_RECOVERY_PROCESS;
	s->recovery[1] = CONF_RECOVERY_DUMP;
	s->recovery[2] = CONF_RECOVERY_JOB;
	s->recovery_count = ladder_count;
	j = fx_submit_spec(c, s, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->slice_count, 2);
	*ret = j;
	return c;
}

static int pl_answer(struct sched_cluster *c, unsigned request, unsigned server,
		     enum sched_recovery_answer a, uint64_t step, char *why)
{
	return sched_job_recovery_answer(c, "pl", FX_UID, request, fx_server_name(c, server), -1,
					 a, step, NULL, tick(1), why);
}

/* The server no slice of @j holds that is not @other: the cluster's spare. */
static unsigned spare_server(const struct sched_cluster *c, const struct sched_job *j,
			     unsigned other)
{
	for (unsigned i = 0; i < c->server_count; i++) {
		bool held = i == other;

		for (size_t k = 0; k < j->slice_count; k++)
			held |= j->slices[k].server == i;
		if (!held)
			return i;
	}
	fail_msg("no spare server");
	return 0;
}

static const char *proc_field(const json_t *f, size_t i, const char *key)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(f, "processes"),
								i), key));
}

/*
 * An NPU of the second server fails: a free server takes that server's place and ranks
 * (generation 2) while the first server's process runs on (kept_from 1, listed under
 * generation 2 so its agent carries it over); the survivor pauses and rebuilds, the new
 * one joins, and generation 2 runs with nobody else restarted.
 */
static void test_ladder_process_replaces_only_the_failed_server(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, NULL, 3, CONF_LAUNCH_MSRUN, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	unsigned spare = spare_server(c, j, UINT32_MAX);
	char why[SCHED_REASON_MAX] = "";
	json_t *f;

	(void)state;
	fail_npu(c, j, 1);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->slices[0].server, s0);
	assert_int_equal(j->slices[1].server, spare);
	assert_int_equal(j->slices[0].first_rank, 0);
	assert_int_equal(j->slices[1].first_rank, 8);
	assert_int_equal(j->slices[0].kept_from, 1);
	assert_int_equal(j->slices[1].kept_from, 0);
	assert_false(j->resume_scan_pending); /* nothing loads a checkpoint */
	/* the kept server runs generation 2 with its processes of 1; the new one starts it;
	 * the failed one stops */
	assert_int_equal(listed_word(c, s0, "pl", 2), 2);
	assert_int_equal(listed_word(c, s0, "pl", 11), 1);
	assert_int_equal(listed_word(c, spare, "pl", 2), 2);
	assert_int_equal(listed_word(c, spare, "pl", 11), 0);
	assert_false(server_lists(c, s1, "pl"));
	assert_non_null(strstr(j->reason, "process (recovery [process, dump, job])"));

	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "rebuild");
	assert_string_equal(json_string_value(json_object_get(f, "strategy")), "process");
	assert_int_equal(json_integer_value(json_object_get(f, "generation")), 2);
	assert_string_equal(json_string_value(json_object_get(f, "master_addr")),
			    c->servers[s0].conf->host_ip);
	assert_int_equal(json_array_size(json_object_get(f, "processes")), 2);
	assert_string_equal(proc_field(f, 0, "server"), fx_server_name(c, s0));
	assert_string_equal(proc_field(f, 0, "role"), "rebuild");
	assert_string_equal(proc_field(f, 1, "server"), fx_server_name(c, spare));
	assert_string_equal(proc_field(f, 1, "role"), "join");
	json_decref(f);

	/* each answers its own word */
	assert_int_equal(pl_answer(c, 1, s0, SCHED_ANSWER_JOINED, 0, why), -EINVAL);
	assert_non_null(strstr(why, "was kept running"));
	assert_int_equal(pl_answer(c, 1, spare, SCHED_ANSWER_PAUSED, 9, why), -EINVAL);
	assert_non_null(strstr(why, "answers joined"));
	assert_int_equal(pl_answer(c, 1, s0, SCHED_ANSWER_SAVED, 9, why), -EINVAL);
	assert_non_null(strstr(why, "rebuild the communicator"));
	assert_int_equal(pl_answer(c, 1, s1, SCHED_ANSWER_PAUSED, 9, why), -EINVAL);
	assert_non_null(strstr(why, "holds no part"));

	assert_int_equal(pl_answer(c, 1, s0, SCHED_ANSWER_PAUSED, (uint64_t)INT64_MAX + 1, why),
			 -EINVAL);
	assert_non_null(strstr(why, "a step is at most"));
	assert_int_equal(pl_answer(c, 1, spare, SCHED_ANSWER_JOINED, 0, why), 0);
	assert_int_equal(pl_answer(c, 1, spare, SCHED_ANSWER_JOINED, 0, why), 0); /* a retry */
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(pl_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 77, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->restarts, 1);
	assert_int_equal(c->ladder_active, 0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "1 new process joined and 1 survivor rebuilt"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "from step 77"));
	/* listed as before: the agent has carried its run over */
	assert_int_equal(listed_word(c, s0, "pl", 11), 1);
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "resume");
	assert_int_equal(json_integer_value(json_object_get(f, "step")), 77);
	assert_true(json_is_null(json_object_get(f, "master_addr")));
	json_decref(f);
	/* the history: generation 1 ended with the fault, 2 runs on the new servers */
	assert_int_equal(j->run_count, 2);
	assert_int_equal(j->runs[0].end, SCHED_RUN_NODE_FAIL);
	assert_int_equal(j->runs[1].generation, 2);
	assert_int_equal(j->runs[1].end, SCHED_RUN_OPEN);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * Rank 0's server fails: its replacement takes rank 0 (the first server of the rank
 * table, so MS_SCHED_HOST and the recovery file's master_addr move to it), and the
 * second server runs on.
 */
static void test_ladder_process_rank_zero_server_is_not_special(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, NULL, 3, CONF_LAUNCH_MSRUN, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	unsigned spare = spare_server(c, j, UINT32_MAX);
	struct sched_render_ctx ctx = { .mount_path = "/ascend" };
	char why[SCHED_REASON_MAX] = "", *env = NULL, want[128];
	size_t len;
	json_t *f;

	(void)state;
	fail_npu(c, j, 0);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(j->slices[0].server, spare);
	assert_int_equal(j->slices[0].first_rank, 0);
	assert_int_equal(j->slices[1].server, s1);
	assert_int_equal(j->slices[1].kept_from, 1);
	assert_false(server_lists(c, s0, "pl"));
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "master_addr")),
			    c->servers[spare].conf->host_ip);
	json_decref(f);
	assert_int_equal(sched_render_host_env(c, j, 1, &ctx, &env, &len), 0);
	snprintf(want, sizeof(want), "--master_addr=%s ", c->servers[spare].conf->host_ip);
	assert_non_null(strstr(env, want));
	free(env);
	assert_int_equal(pl_answer(c, 1, spare, SCHED_ANSWER_JOINED, 0, why), 0);
	assert_int_equal(pl_answer(c, 1, s1, SCHED_ANSWER_PAUSED, 5, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * Where it does not apply, the ladder passes over it with the reason: a process that
 * exited on a server in service (in-place's), no free server to take the failed one's
 * place, a single-server job.
 */
static void test_ladder_process_passed_over(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, NULL, 3, CONF_LAUNCH_MSRUN, &j);
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_process_exit(c, "pl", FX_UID, 1, fx_server_name(c, j->slices[1].server),
						-1, 3, tick(1), why),
			 0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "process: a process exited on a server in "
				 "service (in-place restarts it there)"));
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	sched_cluster_free(c);

	/* two servers, both the job's: nothing free to replace one */
	c = process_job(2, NULL, 3, CONF_LAUNCH_MSRUN, &j);
	fail_npu(c, j, 1);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "process: no whole free"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "can take the place of"));
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	assert_int_equal(j->generation, 1);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * The deadline passes with the new process not joined: the step falls back; the dump
 * that follows asks only the kept server's process (the new one holds no state), and
 * job-level then restarts every process as generation 3, nobody kept.
 */
static void test_ladder_process_timeout_falls_back(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, "  recovery_timeout: 10\n", 3,
					      CONF_LAUNCH_MSRUN, &j);
	unsigned s0 = j->slices[0].server, spare = spare_server(c, j, UINT32_MAX);
	char why[SCHED_REASON_MAX] = "";
	json_t *f;

	(void)state;
	fail_npu(c, j, 1);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(pl_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 40, why), 0);
	assert_int_equal(sched_ladder_expire(c, tick(11)), 1);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "process timed out: 1 of 1 surviving "
				 "processes rebuilt and 0 of 1 new processes joined"));
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "save");
	assert_int_equal(json_array_size(json_object_get(f, "processes")), 1);
	assert_string_equal(proc_field(f, 0, "server"), fx_server_name(c, s0));
	json_decref(f);
	assert_int_equal(answer(c, "pl", 2, s0, true, 40, "/data/ckpt/pl-40.ckpt", why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 3);
	assert_int_equal(j->slices[0].server, s0);
	assert_int_equal(j->slices[1].server, spare);
	assert_int_equal(j->slices[0].kept_from, 0);
	assert_int_equal(listed_word(c, s0, "pl", 11), 0);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * A kept process exits during the step, reported by an agent that has not yet carried
 * its run over (generation 1): it is the job's, and the step falls back.
 */
static void test_ladder_process_kept_exit_of_the_old_generation(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, NULL, 3, CONF_LAUNCH_MSRUN, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fail_npu(c, j, 1);
	assert_int_equal(j->generation, 2);
	/* the failed server's process, stopped on purpose: not the job's any more */
	assert_int_equal(sched_job_process_exit(c, "pl", FX_UID, 1, fx_server_name(c, s1), -1,
						137, tick(1), why),
			 0);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(sched_job_process_exit(c, "pl", FX_UID, 1, fx_server_name(c, s0), -1,
						6, tick(1), why),
			 0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "process: the process on"));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "exited with status 6 during the step"));
	/* the kept process had not rebuilt (the new one holds no state): no dump, job-level */
	assert_true(has_event(c, SCHED_EV_RECOVERY, "dump: kept processes did not rebuild into "
				 "generation 2 and would not answer its request"));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 3);
	fx_check(c);
	sched_cluster_free(c);
}

/* Per-rank: every rank of the failed server joins, every rank of the kept one pauses. */
static void test_ladder_process_per_rank(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, NULL, 1, CONF_LAUNCH_PER_RANK, &j);
	unsigned s0 = j->slices[0].server, spare = spare_server(c, j, UINT32_MAX);
	char why[SCHED_REASON_MAX] = "";
	json_t *f;

	(void)state;
	fail_npu(c, j, 1);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	f = recovery_file(c, j);
	assert_int_equal(json_array_size(json_object_get(f, "processes")), 16);
	for (size_t i = 0; i < 16; i++)
		assert_string_equal(proc_field(f, i, "role"), i < 8 ? "rebuild" : "join");
	json_decref(f);
	for (int r = 0; r < 16; r++)
		assert_int_equal(sched_job_recovery_answer(c, "pl", FX_UID, 1,
							   fx_server_name(c, r < 8 ? s0 : spare),
							   r, r < 8 ? SCHED_ANSWER_PAUSED :
							   SCHED_ANSWER_JOINED,
							   100 + (unsigned)r % 2, NULL, tick(1), why),
				 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->ladder.resume_step, 101);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * The replacement fails too, during the step: the step falls back, and job-level moves
 * the job off it (onto the fourth server), every process restarting as generation 3.
 * The kept process had rebuilt, so the dump in between asks it (and only it); one that
 * had not would be of the older generation: no dump then.
 */
static void test_ladder_process_replacement_fails_too(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(4, NULL, 3, CONF_LAUNCH_MSRUN, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server, spare;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fail_npu(c, j, 1);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	spare = j->slices[1].server;
	assert_int_not_equal(spare, s1);
	assert_int_equal(pl_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 3, why), 0);
	fail_npu(c, j, 1);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "process: "));
	assert_true(has_event(c, SCHED_EV_RECOVERY, "during the step; falling back to dump"));
	/* the dump asks only the kept process; it does not answer: job-level at the deadline */
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_DUMP);
	assert_int_equal(j->ladder.waited_count, 1);
	assert_int_equal(sched_ladder_expire(c, tick(c->conf->recovery_timeout_sec + 1)), 1);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 3);
	assert_int_equal(j->slices[0].server, s0);
	assert_int_not_equal(j->slices[1].server, spare);
	assert_int_not_equal(j->slices[1].server, s1);
	assert_int_equal(j->slices[0].kept_from, 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* ---- retry ---- */

#define RETRY_CODES "  retry_fault_codes: [80C98008]\n"

/* A Critical report of @code on the first NPU of slice @k of @j. */
static void report_code(struct sched_cluster *c, const struct sched_job *j, size_t k,
			const char *code)
{
	struct conf_health_report r = { .npu_count = 1 };

	r.npus[0].id = j->slices[k].device_ids[0];
	r.npus[0].has_level = true;
	r.npus[0].level = CONF_HEALTH_CRITICAL;
	snprintf(r.npus[0].code, sizeof(r.npus[0].code), "%s", code);
	snprintf(r.npus[0].message, sizeof(r.npus[0].message), "HBM multi-bit ECC");
	assert_int_equal(sched_server_report(c, j->slices[k].server, &r, tick(1)), 0);
	fx_check(c);
}

/* A cluster of 3 servers (agents reporting) running the 2-server job "rt" with
 * recovery [retry, ...@rest] (@rest_count more) and checkpoint_dir. */
static struct sched_cluster *retry_job(const char *extra, const enum conf_recovery *rest,
				       size_t rest_count, struct sched_job **ret)
{
	struct fx_opts o = { .servers = 3, .cluster_extra = extra };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = fx_spec("rt", 16);
	struct sched_job *j;

	agents_report(c);
	s->checkpoint_dir = strdup("/data/ckpt");
	assert_non_null(s->checkpoint_dir);
	s->recovery[0] = CONF_RECOVERY_RETRY;
	for (size_t i = 0; i < rest_count; i++)
		s->recovery[1 + i] = rest[i];
	s->recovery_count = 1 + rest_count;
	j = fx_submit_spec(c, s, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	*ret = j;
	return c;
}

static int rt_answer(struct sched_cluster *c, unsigned request, unsigned server,
		     enum sched_recovery_answer a, uint64_t step, char *why)
{
	return sched_job_recovery_answer(c, "rt", FX_UID, request, fx_server_name(c, server), -1,
					 a, step, NULL, tick(1), why);
}

/*
 * A Critical report with a code of retry_fault_codes: the NPU stays in service and the
 * job's processes pause to recompute the step; none restarts, the generation and rank
 * table stay, no restart is counted. The same fault reported again during the step is
 * the same incident.
 */
static void test_ladder_retry_recomputes_the_step(void **state)
{
	static const enum conf_recovery rest[] = { CONF_RECOVERY_JOB };
	struct sched_job *j;
	struct sched_cluster *c = retry_job(RETRY_CODES, rest, 1, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	const struct sched_npu *n = &c->servers[s1].npus[j->slices[1].device_ids[0]];
	char why[SCHED_REASON_MAX] = "";
	json_t *f;

	(void)state;
	report_code(c, j, 1, "80C98008");
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_RETRY);
	assert_false(n->isolated);
	assert_true(n->retry_pending);
	assert_int_equal(n->job, j);
	assert_true(has_event(c, SCHED_EV_HEALTH, "a transient fault (retry_fault_codes): stays "
				 "in service, job rt recomputes its step"));
	/* both servers keep running the generation */
	assert_int_equal(listed_word(c, s0, "rt", 2), 1);
	assert_int_equal(listed_word(c, s1, "rt", 2), 1);
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "retry");
	assert_int_equal(json_array_size(json_object_get(f, "processes")), 2);
	assert_string_equal(proc_field(f, 0, "role"), "retry");
	assert_string_equal(proc_field(f, 1, "role"), "retry");
	json_decref(f);
	/* the same fault again during the step: the same incident */
	report_code(c, j, 1, "0x80c98008");
	assert_false(n->isolated);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_RETRY);
	assert_int_equal(rt_answer(c, 1, s0, SCHED_ANSWER_JOINED, 0, why), -EINVAL);
	assert_non_null(strstr(why, "is a retry"));
	/* a step past what a step counter holds is refused, whatever the answer */
	assert_int_equal(rt_answer(c, 1, s0, SCHED_ANSWER_PAUSED, (uint64_t)INT64_MAX + 1, why),
			 -EINVAL);
	assert_non_null(strstr(why, "a step is at most"));
	assert_int_equal(j->ladder.answered_count, 0);
	/* one a step ahead: both go on from the last step both finished */
	assert_int_equal(rt_answer(c, 1, s0, SCHED_ANSWER_PAUSED, 42, why), 0);
	assert_int_equal(rt_answer(c, 1, s1, SCHED_ANSWER_PAUSED, 41, why), 0);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 1);
	assert_int_equal(j->restarts, 0);
	assert_int_equal(j->ladder.resume_step, 41);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "retry: 2 processes go on from step 41"));
	assert_int_equal(j->run_count, 1);
	assert_int_equal(j->runs[0].end, SCHED_RUN_OPEN);
	f = recovery_file(c, j);
	assert_string_equal(json_string_value(json_object_get(f, "action")), "resume");
	json_decref(f);

	/* still Critical right after the retry: the agent has not seen it gone yet */
	report_code(c, j, 1, "80C98008");
	assert_false(n->isolated);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	/* still Critical two report intervals after the fault: a lasting fault, isolated,
	 * job-level */
	tick(2 * c->conf->fault_check_interval_sec);
	report_code(c, j, 1, "80C98008");
	assert_true(n->isolated);
	assert_false(n->retry_pending);
	assert_true(has_event(c, SCHED_EV_HEALTH, "after it was retried: a lasting fault"));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_not_equal(j->slices[1].server, s1);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * An OK report ends the incident; the next transient fault is a retry again. A code not
 * in retry_fault_codes, or a job whose ladder does not name retry, isolates as before;
 * an NPU with no job stays in service.
 */
static void test_ladder_retry_only_for_listed_codes(void **state)
{
	static const enum conf_recovery rest[] = { CONF_RECOVERY_JOB };
	struct sched_job *j;
	struct sched_cluster *c = retry_job(RETRY_CODES, rest, 1, &j);
	unsigned s1 = j->slices[1].server;
	const struct sched_npu *n = &c->servers[s1].npus[j->slices[1].device_ids[0]];
	char why[SCHED_REASON_MAX] = "";
	unsigned spare = spare_server(c, j, UINT32_MAX);

	(void)state;
	report_code(c, j, 1, "80C98008");
	assert_int_equal(rt_answer(c, 1, j->slices[0].server, SCHED_ANSWER_PAUSED, 5, why), 0);
	assert_int_equal(rt_answer(c, 1, s1, SCHED_ANSWER_PAUSED, 5, why), 0);
	fx_report_ok(c, s1, tick(1));
	assert_false(n->retry_pending);
	report_code(c, j, 1, "80C98008");
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_RETRY);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_false(n->isolated);
	sched_cluster_free(c);

	/* another code: isolated, the ladder passes retry over */
	c = retry_job(RETRY_CODES, rest, 1, &j);
	report_code(c, j, 1, "80C98000");
	assert_true(has_event(c, SCHED_EV_RECOVERY, "retry: not a transient NPU fault"));
	assert_int_equal(j->generation, 2);
	sched_cluster_free(c);

	/* a job without retry in its ladder: isolated, and the event says why */
	c = process_job(3, RETRY_CODES, 3, CONF_LAUNCH_MSRUN, &j);
	report_code(c, j, 1, "80C98008");
	assert_true(has_event(c, SCHED_EV_HEALTH, "but the recovery of job pl does not name "
				 "retry"));
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	sched_cluster_free(c);

	/* no job on it: stays in service */
	c = retry_job(RETRY_CODES, rest, 1, &j);
	fx_report_npu(c, spare, 0, CONF_HEALTH_OK, tick(1));
	{
		struct conf_health_report r = { .npu_count = 1 };

		r.npus[0].id = 2;
		r.npus[0].has_level = true;
		r.npus[0].level = CONF_HEALTH_CRITICAL;
		snprintf(r.npus[0].code, sizeof(r.npus[0].code), "80C98008");
		assert_int_equal(sched_server_report(c, spare, &r, tick(1)), 0);
	}
	assert_false(c->servers[spare].npus[2].isolated);
	assert_true(has_event(c, SCHED_EV_HEALTH, "with no job on it: stays in service"));
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * A retry nobody answers falls back at recovery_timeout: its NPU's fault is taken for a
 * lasting one (isolated) and job-level moves off it; a process that crashes during it
 * is the next rungs' own fault, on a server the fault made suspect: [retry, in-place,
 * job] moves off it.
 */
static void test_ladder_retry_falls_back(void **state)
{
	static const enum conf_recovery to_job[] = { CONF_RECOVERY_JOB };
	static const enum conf_recovery to_in_place[] = { CONF_RECOVERY_IN_PLACE,
							   CONF_RECOVERY_JOB };
	struct sched_job *j;
	struct sched_cluster *c = retry_job(RETRY_CODES "  recovery_timeout: 10\n", to_job, 1, &j);
	unsigned s0 = j->slices[0].server, s1 = j->slices[1].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	report_code(c, j, 1, "80C98008");
	assert_int_equal(sched_ladder_expire(c, tick(11)), 1);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "retry timed out: 0 of 2 processes paused"));
	/* the fault was a lasting one: its NPU isolated, the job moves off it */
	assert_true(has_event(c, SCHED_EV_HEALTH, "isolated: the retry of job rt failed"));
	assert_true(c->servers[s1].npus[0].isolated);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->slices[0].server, s0);
	assert_int_not_equal(j->slices[1].server, s1);
	sched_cluster_free(c);

	c = retry_job(RETRY_CODES, to_in_place, 2, &j);
	s1 = j->slices[1].server;
	report_code(c, j, 1, "80C98008");
	assert_int_equal(sched_job_process_exit(c, "rt", FX_UID, 1, fx_server_name(c, s1), -1, 6,
						tick(1), why),
			 0);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "exited with status 6 during the step; "
				 "falling back to in-place"));
	/* the transient fault made its server suspect: the crash is taken for the
	 * server's, so in-place passes over and job-level moves off it */
	assert_true(has_event(c, SCHED_EV_RECOVERY, "is out of service or under suspicion"));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_not_equal(j->slices[1].server, s1);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * A transient fault walks only the retry rung, wherever it stands in the ladder: with
 * [dump, retry, job], the dump is passed over and the NPU stays in service.
 */
static void test_ladder_retry_wherever_it_stands(void **state)
{
	struct fx_opts o = { .servers = 3, .cluster_extra = RETRY_CODES };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = dump_spec("rt", 16, false);
	struct sched_job *j;

	(void)state;
	agents_report(c);
	s->recovery[0] = CONF_RECOVERY_DUMP;
	s->recovery[1] = CONF_RECOVERY_RETRY;
	s->recovery[2] = CONF_RECOVERY_JOB;
	s->recovery_count = 3;
	j = fx_submit_spec(c, s, FX_UID);
	report_code(c, j, 1, "80C98008");
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_RETRY);
	assert_true(has_event(c, SCHED_EV_RECOVERY, "dump: a transient fault is retry's"));
	assert_false(c->servers[j->slices[1].server].npus[0].isolated);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * An idle NPU's transient fault is counted once: reported Critical at every interval it
 * stays in service within two intervals, then is isolated as any fault (not escalated
 * to `clear` by its own repeated reports).
 */
static void test_ladder_retry_idle_npu_counted_once(void **state)
{
	static const enum conf_recovery rest[] = { CONF_RECOVERY_JOB };
	struct sched_job *j;
	struct sched_cluster *c = retry_job(RETRY_CODES, rest, 1, &j);
	unsigned spare = spare_server(c, j, UINT32_MAX);
	struct sched_npu *n = &c->servers[spare].npus[2];
	struct conf_health_report r = { .npu_count = 1 };

	(void)state;
	r.npus[0].id = 2;
	r.npus[0].has_level = true;
	r.npus[0].level = CONF_HEALTH_CRITICAL;
	snprintf(r.npus[0].code, sizeof(r.npus[0].code), "80C98008");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sched_server_report(c, spare, &r, tick(1)), 0);
		assert_false(n->isolated);
	}
	assert_int_equal(n->window_faults, 1);
	tick(2 * c->conf->fault_check_interval_sec);
	assert_int_equal(sched_server_report(c, spare, &r, tick(1)), 0);
	assert_true(n->isolated);
	assert_int_equal(n->isolation, SCHED_ISOLATION_FAULT);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * [in-place, process, job] on a 3-server job: a process exits and starts again in
 * place; an NPU of another server fails during that step: the process rung replaces
 * both the failed server and the one whose process had not come back (it cannot be
 * carried into the new generation), and keeps the third.
 */
static void test_ladder_process_after_in_place_replaces_its_server(void **state)
{
	struct fx_opts o = { .servers = 5 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = fx_spec("ipp", 24);
	char why[SCHED_REASON_MAX] = "";
	struct sched_job *j;
	unsigned s0, s1, s2;

	(void)state;
	agents_report(c);
	s->recovery[0] = CONF_RECOVERY_IN_PLACE;
	s->recovery[1] = CONF_RECOVERY_PROCESS;
	s->recovery[2] = CONF_RECOVERY_JOB;
	s->recovery_count = 3;
	j = fx_submit_spec(c, s, FX_UID);
	assert_int_equal(j->slice_count, 3);
	s0 = j->slices[0].server;
	s1 = j->slices[1].server;
	s2 = j->slices[2].server;
	assert_int_equal(sched_job_process_exit(c, "ipp", FX_UID, 1, fx_server_name(c, s0), -1,
						3, tick(1), why),
			 0);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_IN_PLACE);
	fail_npu(c, j, 1);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(j->generation, 2);
	assert_int_not_equal(j->slices[0].server, s0);
	assert_int_not_equal(j->slices[1].server, s1);
	assert_int_equal(j->slices[2].server, s2);
	assert_int_equal(j->slices[2].kept_from, 1);
	assert_int_equal(j->slices[0].kept_from, 0);
	assert_int_equal(j->ladder.waited_count, 3); /* 2 to join, 1 to rebuild */
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * Per-rank: a rank of the kept server that had finished with status 0 stays finished in
 * the new generation (its agent will not report it again), and is not asked to pause.
 */
static void test_ladder_process_kept_finished_rank(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, NULL, 1, CONF_LAUNCH_PER_RANK, &j);
	unsigned s0 = j->slices[0].server;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_process_exit(c, "pl", FX_UID, 1, fx_server_name(c, s0), 3, 0,
						tick(1), why),
			 0);
	fail_npu(c, j, 1);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(j->generation, 2);
	assert_true(sched_job_process_exited(j, 3));
	assert_false(sched_job_process_exited(j, 2));
	assert_false(j->ladder.waited[3]);
	assert_int_equal(j->ladder.waited_count, 15);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * The only free server had a fault of its own a moment ago (under suspicion, back in
 * service): process-level takes it as job-level would, rather than passing over to a
 * full restart onto the same server.
 */
static void test_ladder_process_takes_a_suspect_spare(void **state)
{
	struct sched_job *j;
	struct sched_cluster *c = process_job(3, NULL, 3, CONF_LAUNCH_MSRUN, &j);
	unsigned spare = spare_server(c, j, UINT32_MAX);

	(void)state;
	fx_report_npu(c, spare, 0, CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(sched_server_clear_npu(c, fx_server_name(c, spare), 0, tick(1)), 0);
	fx_report_ok(c, spare, tick(1));
	assert_false(c->servers[spare].npus[0].isolated);
	fail_npu(c, j, 1);
	assert_int_equal(j->ladder.strategy, CONF_RECOVERY_PROCESS);
	assert_int_equal(j->state, SCHED_JOB_RECOVERING);
	assert_int_equal(j->slices[1].server, spare);
	fx_check(c);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ladder_dump_saves_then_restarts_from_it),
		cmocka_unit_test(test_ladder_dump_timeout_falls_back_to_job),
		cmocka_unit_test(test_ladder_save_failed_falls_back_at_once),
		cmocka_unit_test(test_ladder_spent_fails_the_job),
		cmocka_unit_test(test_ladder_second_fault_during_dump),
		cmocka_unit_test(test_ladder_dump_needs_an_agent),
		cmocka_unit_test(test_ladder_process_exit_asks_the_others),
		cmocka_unit_test(test_ladder_survivor_exit_during_dump),
		cmocka_unit_test(test_ladder_cancel_during_dump),
		cmocka_unit_test(test_ladder_cluster_bounds_strategies),
		cmocka_unit_test(test_ladder_npu_fault_during_process_dump_moves_the_job),
		cmocka_unit_test(test_ladder_older_save_keeps_the_newer_checkpoint),
		cmocka_unit_test(test_ladder_per_rank_answers),
		cmocka_unit_test(test_ladder_no_dump_past_the_time_limit),
		cmocka_unit_test(test_ladder_replacement_fails_too),
		cmocka_unit_test(test_ladder_partial_answers_are_changes),
		cmocka_unit_test(test_ladder_in_place_restarts_only_the_failed_process),
		cmocka_unit_test(test_ladder_in_place_restart_fails_again),
		cmocka_unit_test(test_ladder_in_place_applies_to_process_exits_only),
		cmocka_unit_test(test_ladder_in_place_falls_back),
		cmocka_unit_test(test_ladder_in_place_resume_ends_with_its_generation),
		cmocka_unit_test(test_ladder_in_place_per_rank),
		cmocka_unit_test(test_ladder_in_place_fallback_skips_the_exited),
		cmocka_unit_test(test_ladder_in_place_repeated_exit_report),
		cmocka_unit_test(test_ladder_in_place_history_keeps_the_generation),
		cmocka_unit_test(test_ladder_in_place_finished_rank_is_not_asked),
		cmocka_unit_test(test_ladder_process_replaces_only_the_failed_server),
		cmocka_unit_test(test_ladder_process_rank_zero_server_is_not_special),
		cmocka_unit_test(test_ladder_process_passed_over),
		cmocka_unit_test(test_ladder_process_timeout_falls_back),
		cmocka_unit_test(test_ladder_process_kept_exit_of_the_old_generation),
		cmocka_unit_test(test_ladder_process_per_rank),
		cmocka_unit_test(test_ladder_process_replacement_fails_too),
		cmocka_unit_test(test_ladder_retry_recomputes_the_step),
		cmocka_unit_test(test_ladder_retry_only_for_listed_codes),
		cmocka_unit_test(test_ladder_retry_falls_back),
		cmocka_unit_test(test_ladder_retry_wherever_it_stands),
		cmocka_unit_test(test_ladder_retry_idle_npu_counted_once),
		cmocka_unit_test(test_ladder_process_after_in_place_replaces_its_server),
		cmocka_unit_test(test_ladder_process_kept_finished_rank),
		cmocka_unit_test(test_ladder_process_takes_a_suspect_spare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
