/* SPDX-License-Identifier: MIT */
/*
 * sched health: per-NPU levels (design.md §6), isolation kinds, hold time, escalation,
 * heartbeats and job recovery (keep healthy servers, replace failed ones, generation,
 * restarts, pending without capacity).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "hccl_check.h"
#include "sched_fixture.h"
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
	uint64_t seq = 0;
	const struct sched_event *e;

	while ((e = sched_event_next(c, seq))) {
		seq = e->seq;
		if (e->kind == k && (!needle || strstr(e->reason, needle)))
			return true;
	}
	return false;
}

static void check_table(const struct sched_cluster *c, const struct sched_job *j, unsigned ranks)
{
	char *text = NULL, why[512] = "";
	size_t len = 0;
	struct hccl_check_opts o = { .npus_per_server = 8, .require_completed = true,
				     .expect_ranks = ranks };

	assert_int_equal(sched_render_ranktable(c, j, &text, &len), 0);
	if (hccl_check_ranktable(text, len, &o, why, sizeof(why)) != 0)
		fail_msg("rank table after recovery: %s", why);
	free(text);
}

/* Critical on a running job's NPU: isolated, and the job moves; generation 2. */
static void test_health_critical_moves_single_server_job(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	j = fx_run_on(c, "one", 4, 0);
	fx_report_npu(c, 0, j->slices[0].device_ids[2], CONF_HEALTH_CRITICAL, tick(1));
	assert_true(c->servers[0].npus[2].isolated);
	assert_int_equal(c->servers[0].npus[2].isolation, SCHED_ISOLATION_FAULT);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->restarts, 1);
	for (unsigned k = 0; k < j->slices[0].npu_count; k++)
		assert_false(j->slices[0].server == 0 && j->slices[0].device_ids[k] == 2);
	assert_true(has_event(c, SCHED_EV_RECOVERING, "0x80C98000"));
	assert_true(has_event(c, SCHED_EV_PLACED, "generation 2"));
	assert_int_equal(c->recoveries, 1);
	sched_cluster_free(c);
}

/* A 4-server job keeps its 3 healthy servers and gets one replacement. */
static void test_health_multi_server_job_replaces_only_the_failed_server(void **state)
{
	struct fx_opts o = { .servers = 6 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned before[4], failed;
	struct sched_job *j;
	size_t kept = 0;

	(void)state;
	j = fx_run(c, "big", 32);
	for (size_t k = 0; k < 4; k++)
		before[k] = j->slices[k].server;
	failed = before[1];
	fx_report_npu(c, failed, 5, CONF_HEALTH_UNKNOWN, tick(1));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->slice_count, 4);
	for (size_t k = 0; k < 4; k++) {
		assert_int_not_equal(j->slices[k].server, failed);
		for (size_t m = 0; m < 4; m++)
			kept += j->slices[k].server == before[m];
	}
	assert_int_equal(kept, 3);
	assert_true(has_event(c, SCHED_EV_PLACED, "kept 3 servers, replaced 1"));
	check_table(c, j, 32);
	sched_cluster_free(c);
}

/* No capacity: the job waits pending with the reason, then resumes when it returns. */
static void test_health_no_capacity_pending_then_resumes(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "whole", 8);
	fx_report_npu(c, 0, 3, CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(j->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(j->reason, "recovering from a fault; waits for capacity"));
	assert_int_equal(sched_job_total_npus(j), 0);
	/* OK again but within the hold time: still isolated */
	fx_report_ok(c, 0, tick(1));
	assert_true(c->servers[0].npus[3].isolated);
	assert_int_equal(j->state, SCHED_JOB_PENDING);
	/* past the hold time: back in service, and the job resumes as generation 2 */
	fx_report_ok(c, 0, tick(c->conf->fault_hold_sec + 1));
	assert_false(c->servers[0].npus[3].isolated);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	sched_cluster_free(c);
}

/* After max_restarts faults the job fails and says why. */
static void test_health_max_restarts_fails_the_job(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *spec = fx_spec("fragile", 1);
	struct sched_job *j;

	(void)state;
	spec->max_restarts = 1;
	j = fx_submit_spec(c, spec, FX_UID);
	fx_report_npu(c, 0, j->slices[0].device_ids[0], CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	/* a fault after the incident window (heartbeat_timeout) is a new incident */
	fx_report_npu(c, 0, j->slices[0].device_ids[0], CONF_HEALTH_CRITICAL,
		   tick(c->conf->heartbeat_timeout_sec));
	/* it fails, but holds its NPUs while its processes may run */
	assert_int_equal(j->state, SCHED_JOB_STOPPING);
	assert_int_equal(j->stop_to, SCHED_JOB_FAILED);
	assert_non_null(strstr(j->reason, "max_restarts (1) exhausted"));
	assert_int_equal(sched_job_total_npus(j), 1);
	assert_int_equal(sched_tick(c, j->stop_deadline_usec), 1);
	assert_int_equal(j->state, SCHED_JOB_FAILED);
	assert_non_null(strstr(j->reason, "max_restarts (1) exhausted"));
	assert_non_null(strstr(j->reason, "released at the stop deadline"));
	assert_int_equal(sched_job_total_npus(j), 0);
	/* the event that ends the stop names the fault's server and NPU, as its reason does */
	{
		const struct sched_event *e, *failed = NULL;
		uint64_t seq = 0;

		while ((e = sched_event_next(c, seq))) {
			seq = e->seq;
			if (e->kind == SCHED_EV_FAILED)
				failed = e;
		}
		assert_non_null(failed);
		assert_string_equal(failed->server, "node-0");
		assert_int_equal(failed->npu, (int)j->runs[j->run_count - 1].slices[0].device_ids[0]);
	}
	sched_cluster_free(c);
}

/* Alarm pre-isolates: the running job stays, new work goes elsewhere; OK returns it. */
static void test_health_alarm_preisolates_and_keeps_the_job(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	unsigned dev;

	(void)state;
	j = fx_run(c, "stay", 1);
	dev = j->slices[0].device_ids[0];
	fx_report_npu(c, 0, dev, CONF_HEALTH_ALARM, tick(1));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 1);
	assert_int_equal(c->servers[0].npus[dev].isolation, SCHED_ISOLATION_ALARM);
	fx_report_npu(c, 0, (dev + 1) % 8, CONF_HEALTH_ALARM, tick(1));
	/* 6 placeable NPUs left: a 7-NPU job cannot start */
	assert_int_equal(fx_submit(c, "seven", 7)->state, SCHED_JOB_PENDING);
	fx_report_ok(c, 0, tick(1));
	assert_int_equal(c->servers[0].npus[dev].isolation, SCHED_ISOLATION_NONE);
	assert_int_equal(sched_cluster_find_job(c, "seven")->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* Warning is logged only: the NPU stays placeable. */
static void test_health_warning_is_logged_only(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	fx_report_npu(c, 0, 4, CONF_HEALTH_WARNING, tick(1));
	assert_false(c->servers[0].npus[4].isolated);
	assert_true(has_event(c, SCHED_EV_HEALTH, "Warning"));
	fx_run(c, "all", 8);
	sched_cluster_free(c);
}

/* A report naming an NPU past the server's count changes nothing: each server's NPUs are
 * a run of one array, so NPU 8 of an 8-NPU server would be the next server's NPU 0. */
static void test_health_npu_past_the_server_is_refused(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_health_report r = { .npu_count = 2 };
	uint64_t version = c->servers[0].version;

	(void)state;
	r.npus[0] = (struct conf_health_npu){ .id = 0, .has_level = true,
					      .level = CONF_HEALTH_CRITICAL };
	r.npus[1] = (struct conf_health_npu){ .id = c->servers[0].conf->npu_count,
					      .has_level = true, .level = CONF_HEALTH_CRITICAL };
	assert_int_equal(sched_server_report(c, 0, &r, tick(1)), -EINVAL);
	assert_false(c->servers[0].npus[0].isolated);
	assert_false(c->servers[1].npus[0].isolated);
	assert_int_equal(c->servers[0].state, SCHED_SERVER_UNKNOWN);
	assert_true(c->servers[0].version == version);
	fx_run(c, "all", 16);
	sched_cluster_free(c);
}

/* Three faults within the window: manual isolation; OK does not return it, clear does. */
static void test_health_repeated_faults_escalate_to_manual(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned hold = c->conf->fault_hold_sec + 1;

	(void)state;
	for (int k = 0; k < 2; k++) {
		fx_report_npu(c, 0, 6, CONF_HEALTH_CRITICAL, tick(1));
		fx_report_ok(c, 0, tick(1)); /* the hold starts at the first healthy report */
		assert_true(c->servers[0].npus[6].isolated);
		fx_report_ok(c, 0, tick(hold));
		assert_false(c->servers[0].npus[6].isolated);
	}
	fx_report_npu(c, 0, 6, CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(c->servers[0].npus[6].isolation, SCHED_ISOLATION_MANUAL);
	assert_true(has_event(c, SCHED_EV_HEALTH, "isolated until `clear 6`"));
	fx_report_ok(c, 0, tick(1));
	fx_report_ok(c, 0, tick(hold));
	assert_int_equal(c->servers[0].npus[6].isolation, SCHED_ISOLATION_MANUAL);
	assert_int_equal(sched_server_clear_npu(c, "node-0", 6, tick(1)), 0);
	assert_false(c->servers[0].npus[6].isolated);
	sched_cluster_free(c);
}

/* No report within heartbeat_timeout: unreachable, its job moves; a report brings it back. */
static void test_health_heartbeat_loss_recovers_elsewhere(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned timeout = c->conf->heartbeat_timeout_sec;
	struct sched_job *j;

	(void)state;
	j = fx_run_on(c, "mover", 8, 0);
	fx_report_ok(c, 0, tick(1));
	fx_report_ok(c, 1, clock_usec);
	assert_int_equal(sched_check_heartbeats(c, tick(timeout - 1)), 0);
	fx_report_ok(c, 1, clock_usec); /* server 1 keeps reporting, server 0 went silent */
	assert_int_equal(sched_check_heartbeats(c, tick(2)), 1);
	assert_int_equal(c->servers[0].state, SCHED_SERVER_UNREACHABLE);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->slices[0].server, 1);
	assert_int_equal(j->generation, 2);
	assert_true(has_event(c, SCHED_EV_RECOVERING, "unreachable"));
	fx_check(c);
	/* the server reports again: ready; its NPUs return after the hold time */
	fx_report_ok(c, 0, tick(1));
	assert_int_equal(c->servers[0].state, SCHED_SERVER_READY);
	assert_true(c->servers[0].npus[0].isolated);
	fx_report_ok(c, 0, tick(c->conf->fault_hold_sec + 1));
	assert_false(c->servers[0].npus[0].isolated);
	sched_cluster_free(c);
}

/* A server-wide Critical isolates every NPU of the server. */
static void test_health_node_critical_isolates_the_server(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_health_report r = { .has_node = true, .node = CONF_HEALTH_CRITICAL };
	struct sched_job *j;

	(void)state;
	j = fx_run_on(c, "victim", 2, 1);
	assert_int_equal(sched_server_report(c, 1, &r, tick(1)), 0);
	for (unsigned d = 0; d < 8; d++)
		assert_true(c->servers[1].npus[d].isolated);
	assert_int_equal(j->slices[0].server, 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* Reported device IPs: the rank table uses them, and a difference is an event. */
static void test_health_reported_ips_used_and_checked(void **state)
{
	struct fx_opts o = { .servers = 2, .no_device_ips = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_health_report r = { .npu_count = 8 };
	struct sched_job *j;
	char *text = NULL;
	size_t len;

	(void)state;
	j = fx_run(c, "pair", 16);
	assert_int_equal(sched_render_ranktable(c, j, &text, &len), 0);
	assert_non_null(strstr(text, "\"initializing\""));
	free(text);
	for (unsigned s = 0; s < 2; s++) {
		for (unsigned d = 0; d < 8; d++) {
			r.npus[d].id = d;
			snprintf(r.npus[d].device_ip, sizeof(r.npus[d].device_ip), "10.99.%u.%u", s, d);
		}
		assert_int_equal(sched_server_report(c, s, &r, tick(1)), 0);
		assert_true(c->servers[s].ips_confirmed);
	}
	check_table(c, j, 16);
	assert_int_equal(sched_render_ranktable(c, j, &text, &len), 0);
	assert_non_null(strstr(text, "10.99.1.7"));
	free(text);
	sched_cluster_free(c);
}

/*
 * The hold counts healthy time: a fault reported again restarts it, Warning counts as
 * healthy, and a clock that goes backwards never shortens it.
 */
static void test_health_hold_counts_healthy_time(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned hold = c->conf->fault_hold_sec;
	uint64_t t;

	(void)state;
	fx_report_npu(c, 0, 2, CONF_HEALTH_CRITICAL, tick(1));
	for (unsigned k = 0; k < 4; k++)
		fx_report_npu(c, 0, 2, CONF_HEALTH_CRITICAL, tick(hold)); /* still failing */
	fx_report_ok(c, 0, tick(1));
	assert_true(c->servers[0].npus[2].isolated); /* hold not over since the last fault */
	fx_report_npu(c, 0, 2, CONF_HEALTH_WARNING, tick(hold));
	assert_false(c->servers[0].npus[2].isolated); /* Warning is healthy: the hold ran out */
	/* an Alarm followed by Warning returns at once */
	fx_report_npu(c, 0, 5, CONF_HEALTH_ALARM, tick(1));
	fx_report_npu(c, 0, 5, CONF_HEALTH_WARNING, tick(1));
	assert_false(c->servers[0].npus[5].isolated);
	/* a report stamped before the last one (a clock step) does not free an NPU early */
	t = tick(1);
	fx_report_npu(c, 0, 1, CONF_HEALTH_CRITICAL, t);
	fx_report_ok(c, 0, t - 100 * SEC);
	fx_report_ok(c, 0, t - 99 * SEC);
	assert_true(c->servers[0].npus[1].isolated);
	/* and a heartbeat check stamped in the past marks nothing */
	assert_int_equal(sched_check_heartbeats(c, t - 3600 * SEC), 0);
	sched_cluster_free(c);
}

/*
 * A refused report is kept in the server's info until an accepted one: an agent on a
 * network mount, whose close() cannot carry the daemon's error, reads it there.
 */
static void test_health_refusal_shows_in_info_until_a_report_is_accepted(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	char *text = NULL;
	size_t len = 0;
	uint64_t t0;

	(void)state;
	fx_report_ok(c, 1, tick(1));
	assert_int_equal(sched_render_server_info(c, 1, clock_usec, &text, &len), 0);
	assert_non_null(strstr(text, "\"last_refused_report\": null"));
	free(text);
	t0 = tick(1);
	assert_int_equal(sched_server_note_refusal(c, 1, "health:1:5: npu 99: no such NPU", t0), 0);
	assert_int_equal(sched_server_note_refusal(c, 1, "health:1:1: \"x\" is not a line", t0),
			 0);
	assert_int_equal(sched_render_server_info(c, 1, t0 + 2 * SEC, &text, &len), 0);
	/* the newest refusal, its age, and the heartbeat that did not move */
	assert_non_null(strstr(text, "\"reason\": \"health:1:1: \\\"x\\\" is not a line\""));
	assert_non_null(strstr(text, "\"age_sec\": 2.0"));
	assert_non_null(strstr(text, "\"heartbeat_age_sec\": 3.0"));
	free(text);
	assert_int_equal(sched_server_note_refusal(c, 5, "x", t0), -ENOENT);
	fx_report_ok(c, 1, tick(1));
	assert_int_equal(sched_render_server_info(c, 1, clock_usec, &text, &len), 0);
	assert_non_null(strstr(text, "\"last_refused_report\": null"));
	free(text);
	/* a refusal left standing is freed with the cluster (ASan checks) */
	assert_int_equal(sched_server_note_refusal(c, 0, "left", tick(1)), 0);
	sched_cluster_free(c);
}

/* A report as agent @agent sends it: the node OK, every NPU OK. */
static int report_as(struct sched_cluster *c, unsigned server, const char *agent, uint64_t now,
		     char *why, size_t why_len)
{
	struct conf_health_report r = { .has_node = true, .node = CONF_HEALTH_OK };
	int e;

	snprintf(r.agent, sizeof(r.agent), "%s", agent);
	r.npu_count = c->servers[server].conf->npu_count;
	for (unsigned d = 0; d < r.npu_count; d++) {
		r.npus[d].id = d;
		r.npus[d].has_level = true;
		r.npus[d].level = CONF_HEALTH_OK;
	}
	e = sched_server_check_agent(c, server, r.agent, now, why, why_len);
	if (e < 0)
		return e;
	assert_int_equal(sched_server_report(c, server, &r, now), 0);
	fx_check(c);
	return 0;
}

/*
 * Two agents that use one node name (a copied host name): the second is refused while
 * the first reports, and takes over only after the first has been silent for the
 * heartbeat timeout. A report without an agent is not checked.
 */
static void test_health_second_agent_for_one_node_is_refused(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned timeout = c->conf->heartbeat_timeout_sec;
	char why[SCHED_REASON_MAX] = "", *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(report_as(c, 0, "host-a:1111", tick(1), why, sizeof(why)), 0);
	assert_int_equal(report_as(c, 0, "host-a:1111", tick(1), why, sizeof(why)), 0);
	assert_int_equal(report_as(c, 0, "host-b:2222", tick(1), why, sizeof(why)), -EEXIST);
	assert_string_equal(why, "agent host-b:2222 reports for node-0, but agent host-a:1111 "
				 "did 1.0 s ago: two agents use the node name node-0; give "
				 "each server its own (--node, or the host name); the other agent "
				 "takes over after 15 s of its silence");
	assert_string_equal(c->servers[0].agent, "host-a:1111");
	assert_int_equal(sched_render_server_info(c, 0, clock_usec, &text, &len), 0);
	assert_non_null(strstr(text, "\"agent\": \"host-a:1111\""));
	free(text);
	/* the same agent restarted (same identity) goes on at once */
	assert_int_equal(report_as(c, 0, "host-a:1111", tick(1), why, sizeof(why)), 0);
	/* other servers, and reports that name no agent, are not affected */
	assert_int_equal(report_as(c, 1, "host-b:2222", clock_usec, why, sizeof(why)), 0);
	assert_int_equal(report_as(c, 0, "", tick(1), why, sizeof(why)), 0);
	assert_string_equal(c->servers[0].agent, "host-a:1111");
	/* host-a falls silent: host-b may take over once the timeout has passed */
	assert_int_equal(report_as(c, 0, "host-b:2222", tick(timeout), why, sizeof(why)),
			 -EEXIST);
	assert_int_equal(report_as(c, 0, "host-b:2222", tick(1), why, sizeof(why)), 0);
	assert_string_equal(c->servers[0].agent, "host-b:2222");
	assert_true(has_event(c, SCHED_EV_HEALTH, "reports now come from agent host-b:2222 "
						  "(was host-a:1111)"));
	assert_int_equal(sched_server_check_agent(c, 9, "x", clock_usec, why, sizeof(why)),
			 -ENOENT);
	sched_cluster_free(c);
}

/*
 * Two agents of one machine (same host name and machine-id) for one server, issue 15
 * item 10: the identities differ in their instance ("/<pid>.<boot id>"). While the one
 * whose reports count reports every interval, the other's are refused, however they
 * alternate, and the reason names the holder, its pid and how to take over; once the
 * holder has been silent two intervals (an agent restarted), the new one takes over,
 * within the heartbeat timeout. An agent of another machine still waits for the whole
 * heartbeat timeout.
 */
static void test_health_second_agent_of_one_machine_is_refused(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned interval = c->conf->fault_check_interval_sec;
	uint64_t takeover = sched_agent_takeover_usec(c->conf, true);
	char why[SCHED_REASON_MAX] = "", want[SCHED_REASON_MAX];

	(void)state;
	assert_int_equal(takeover, interval * 2000000ull);
	assert_true(takeover < c->conf->heartbeat_timeout_sec * 1000000ull);
	assert_int_equal(sched_agent_takeover_usec(c->conf, false),
			 c->conf->heartbeat_timeout_sec * 1000000ull);
	assert_int_equal(report_as(c, 0, "host-a:1111/100.0badc0de", tick(1), why, sizeof(why)),
			 0);
	/* the second agent reports between the first's reports, for a while */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(report_as(c, 0, "host-a:1111/200.0badc0de", tick(interval / 2),
					   why, sizeof(why)),
				 -EEXIST);
		assert_int_equal(report_as(c, 0, "host-a:1111/100.0badc0de",
					   tick(interval - interval / 2), why, sizeof(why)),
				 0);
	}
	assert_int_equal(report_as(c, 0, "host-a:1111/200.0badc0de", tick(interval / 2), why,
				   sizeof(why)),
			 -EEXIST);
	snprintf(want, sizeof(want), "agent host-a:1111/200.0badc0de reports for node-0, but "
		 "agent host-a:1111/100.0badc0de of the same machine did %.1f s ago: two agents "
		 "run for node-0 on one machine, each would start the jobs' processes on the same "
		 "NPUs; stop one of them (kill -TERM 100 there); a restarted agent takes over "
		 "after %.1f s of the other's silence",
		 (double)(interval / 2), interval * 2.0);
	assert_string_equal(why, want);
	assert_string_equal(c->servers[0].agent, "host-a:1111/100.0badc0de");
	/* an older agent's identity, the machine alone, is the same machine too */
	assert_int_equal(report_as(c, 0, "host-a:1111", clock_usec, why, sizeof(why)), -EEXIST);
	assert_non_null(strstr(why, "of the same machine"));
	/* the first falls silent (restarted): the second takes over after two intervals */
	assert_int_equal(report_as(c, 0, "host-a:1111/200.0badc0de", tick(interval), why,
				   sizeof(why)),
			 -EEXIST);
	assert_int_equal(report_as(c, 0, "host-a:1111/200.0badc0de", tick(interval), why,
				   sizeof(why)),
			 0);
	assert_string_equal(c->servers[0].agent, "host-a:1111/200.0badc0de");
	assert_int_equal(c->servers[0].state, SCHED_SERVER_READY);
	assert_true(has_event(c, SCHED_EV_HEALTH, "reports now come from agent "
						  "host-a:1111/200.0badc0de (was host-a:1111/100.0badc0de)"));
	/* and the first, should it come back, is the newcomer now */
	assert_int_equal(report_as(c, 0, "host-a:1111/100.0badc0de", tick(1), why, sizeof(why)),
			 -EEXIST);
	/* another machine's agent waits for the heartbeat timeout, not two intervals */
	assert_int_equal(report_as(c, 0, "host-b:2222/300.12345678", tick(interval * 2), why,
				   sizeof(why)),
			 -EEXIST);
	assert_non_null(strstr(why, "two agents use the node name node-0"));
	sched_cluster_free(c);
}

/* Every server reports OK at @now except those in @silent (a bitmask). */
static void report_all_but(struct sched_cluster *c, uint32_t silent, uint64_t now)
{
	for (unsigned i = 0; i < c->server_count; i++)
		if (!(silent & (1u << i)))
			fx_report_ok(c, i, now);
}

static unsigned count_events(const struct sched_cluster *c, enum sched_event_kind k,
			     const char *needle)
{
	uint64_t seq = 0;
	const struct sched_event *e;
	unsigned n = 0;

	while ((e = sched_event_next(c, seq))) {
		seq = e->seq;
		n += e->kind == k && (!needle || strstr(e->reason, needle));
	}
	return n;
}

/*
 * Three servers of one job lose their heartbeat together (found in one pass): one
 * recovery, one restart counted, onto the three clean servers (issue 14 item 11: it
 * was moved three times within a second, "restart 3 of 3").
 */
static void test_health_servers_lost_in_one_pass_count_one_restart(void **state)
{
	struct fx_opts o = { .servers = 6 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned timeout = c->conf->heartbeat_timeout_sec;
	uint32_t silent = 0;
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "trio", 24);
	for (size_t k = 0; k < 3; k++)
		silent |= 1u << j->slices[k].server;
	report_all_but(c, 0, tick(1));
	report_all_but(c, silent, tick(timeout));
	assert_int_equal(sched_check_heartbeats(c, tick(1)), 3);
	fx_check(c);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->restarts, 1);
	assert_int_equal(j->generation, 2);
	for (size_t k = 0; k < j->slice_count; k++)
		assert_false(silent & (1u << j->slices[k].server));
	assert_int_equal(count_events(c, SCHED_EV_RECOVERING, NULL), 1);
	assert_true(has_event(c, SCHED_EV_RECOVERING, "restart 1 of 3"));
	check_table(c, j, 24);
	sched_cluster_free(c);
}

/*
 * Faults that reach the daemon one after the other, each on a server of the placement
 * the last recovery made, are one incident: the job moves each time, but only the first
 * move counts, the events say why the others did not, and the uncounted generation's
 * time is not counted against time_limit.
 */
static void test_health_faults_of_one_incident_count_one_restart(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	char *text = NULL;
	size_t len = 0;

	(void)state;
	uint64_t ran;

	j = fx_run(c, "pair", 16);
	fx_report_npu(c, j->slices[0].server, 0, CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(j->restarts, 1);
	ran = sched_job_run_usec(j, clock_usec);
	fx_report_npu(c, j->slices[1].server, 0, CONF_HEALTH_CRITICAL, tick(1));
	/* the second of generation 2, which never really ran, is not time_limit time */
	assert_int_equal(sched_job_run_usec(j, clock_usec), ran);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 3);
	assert_int_equal(j->restarts, 1);
	assert_int_equal(j->restarts_coalesced, 1);
	assert_true(has_event(c, SCHED_EV_RECOVERING, "not counted against max_restarts"));
	assert_int_equal(sched_render_job_status_json(c, j, &text, &len), 0);
	assert_non_null(strstr(text, "\"restarts_not_counted\": 1"));
	free(text);
	sched_cluster_free(c);
}

/* `usage` lines reach the job's status.json: per server and in total, newest generation. */
static void test_health_usage_in_status_json(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_health_report r = { .has_node = true, .node = CONF_HEALTH_OK };
	struct sched_job *j;
	char *text = NULL;
	size_t len = 0;
	uint64_t version, job_version;

	(void)state;
	j = fx_run_on(c, "one", 4, 0);
	assert_int_equal(sched_render_job_status_json(c, j, &text, &len), 0);
	assert_null(strstr(text, "\"usage\""));
	free(text);

	fx_report_ok(c, 0, tick(1));
	fx_report_ok(c, 1, tick(1));
	r.usage_count = 3;
	r.usage[0] = (struct conf_health_usage){ .job = "one", .generation = 1,
						 .cpu_usec = 2500000, .memory_bytes = 1048576 };
	/* a job the daemon does not know, and a generation not yet placed: ignored */
	r.usage[1] = (struct conf_health_usage){ .job = "nobody", .generation = 1, .cpu_usec = 9 };
	r.usage[2] = (struct conf_health_usage){ .job = "one", .generation = 7, .cpu_usec = 9 };
	version = c->version;
	job_version = j->version;
	assert_int_equal(sched_server_report(c, 0, &r, tick(1)), 0);
	/* not a change to save or announce: reports would wait for the store */
	assert_int_equal(c->version, version);
	assert_int_equal(j->version, job_version);
	r.usage_count = 1;
	r.usage[0].cpu_usec = 500000;
	r.usage[0].memory_bytes = 0;
	assert_int_equal(sched_server_report(c, 1, &r, tick(1)), 0);
	fx_check(c);
	assert_int_equal(j->usage_count, 2);
	assert_int_equal(sched_render_job_status_json(c, j, &text, &len), 0);
	assert_non_null(strstr(text, "\"usage\": {\n    \"cpu_usec\": 3000000,\n"
				     "    \"memory_bytes\": 1048576,"));
	assert_non_null(strstr(text, "\"server\": \"node-0\",\n        \"generation\": 1,\n"
				     "        \"cpu_usec\": 2500000"));
	free(text);
	sched_cluster_free(c);
}

/*
 * The budget still ends a job that keeps failing: a fault past the incident window
 * counts, however many uncounted ones came between.
 */
static void test_health_budget_ends_a_job_that_keeps_failing(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *spec = fx_spec("doomed", 1);
	unsigned window = c->conf->heartbeat_timeout_sec;
	struct sched_job *j;

	(void)state;
	spec->max_restarts = 2;
	j = fx_submit_spec(c, spec, FX_UID);
	for (unsigned k = 0; k < 6 && j->state == SCHED_JOB_RUNNING; k++) {
		const struct sched_slice *sl = &j->slices[0];

		/* odd faults come right after the one before: coalesced */
		fx_report_npu(c, sl->server, sl->device_ids[0], CONF_HEALTH_CRITICAL,
			   tick(k % 2 ? 1 : window));
	}
	/* it fails through stopping: its NPUs stay held until its processes are gone */
	assert_int_equal(j->state, SCHED_JOB_STOPPING);
	assert_int_equal(j->stop_to, SCHED_JOB_FAILED);
	assert_int_equal(j->restarts, 3);
	assert_int_equal(j->restarts_coalesced, 2);
	assert_non_null(strstr(j->reason, "max_restarts (2) exhausted"));
	assert_int_equal(sched_tick(c, j->stop_deadline_usec), 1);
	assert_int_equal(j->state, SCHED_JOB_FAILED);
	assert_int_equal(sched_job_total_npus(j), 0);
	sched_cluster_free(c);
}

/*
 * A server with a fresh fault (a sibling NPU failed, within fault_escalate_window) is
 * not the first choice for new work, single- or multi-server; with no other choice it
 * is still used.
 */
static void test_health_placement_prefers_clean_servers(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	fx_report_npu(c, 0, 5, CONF_HEALTH_CRITICAL, tick(1));
	fx_report_ok(c, 0, tick(1));
	fx_report_ok(c, 0, tick(c->conf->fault_hold_sec + 1));
	assert_false(c->servers[0].npus[5].isolated);
	assert_true(sched_server_is_suspect(c, &c->servers[0], clock_usec));
	assert_false(sched_server_is_suspect(c, &c->servers[1], clock_usec));
	report_all_but(c, 0, clock_usec);
	j = fx_run(c, "one", 8);
	assert_int_equal(j->slices[0].server, 1);
	j = fx_run(c, "two", 16);
	assert_int_equal(j->slices[0].server, 2);
	assert_int_equal(j->slices[1].server, 3);
	/* no clean server left: the suspect one is used */
	j = fx_run(c, "last", 8);
	assert_int_equal(j->slices[0].server, 0);
	sched_cluster_free(c);
}

/*
 * A server whose report is overdue (it missed one) is suspect before its heartbeat
 * times out: the recovery from a lost sibling does not move the job onto it, and a
 * server that reported on time is not suspect.
 */
static void test_health_overdue_server_is_suspect(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned interval = c->conf->fault_check_interval_sec;
	unsigned timeout = c->conf->heartbeat_timeout_sec;
	struct sched_job *j;

	(void)state;
	j = fx_run_on(c, "mover", 8, 0);
	report_all_but(c, 0, tick(1));
	fx_report_ok(c, 0, clock_usec);
	/* servers 0 and 1 die together; 1's last report came 2 s after 0's */
	tick(2);
	report_all_but(c, 1u << 0, clock_usec);
	tick(timeout - interval);
	report_all_but(c, 3u, clock_usec);
	assert_true(sched_server_is_suspect(c, &c->servers[1], clock_usec + (interval - 1) * SEC));
	assert_false(sched_server_is_suspect(c, &c->servers[2], clock_usec));
	assert_int_equal(sched_check_heartbeats(c, tick(interval - 1)), 1);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_not_equal(j->slices[0].server, 1);
	assert_int_not_equal(j->slices[0].server, 0);
	sched_cluster_free(c);
}

/* An elastic job that shrinks through one incident spends one restart, not one a shrink. */
static void test_health_elastic_shrinks_of_one_incident_count_one_restart(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *spec = fx_spec("flex", 8);
	struct sched_job *j;

	(void)state;
	spec->npus_min = 8;
	spec->npus_max = 32;
	j = fx_submit_spec(c, spec, FX_UID);
	sched_schedule(c, fx_now());
	assert_int_equal(sched_job_total_npus(j), 32);
	fx_report_npu(c, j->slices[0].server, 0, CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(sched_job_total_npus(j), 24);
	fx_report_npu(c, j->slices[0].server, 0, CONF_HEALTH_CRITICAL, tick(1));
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(j), 16);
	assert_int_equal(j->restarts, 1);
	assert_int_equal(j->restarts_coalesced, 1);
	sched_cluster_free(c);
}

/*
 * A recovery also swaps a suspect server the job holds (its report is overdue: it may
 * have died with the failed one) for a clean free one, so the next fault does not move
 * the job again.
 */
static void test_health_recovery_swaps_a_suspect_server_it_holds(void **state)
{
	struct fx_opts o = { .servers = 6 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned interval = c->conf->fault_check_interval_sec;
	unsigned held[3], late;
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "trio", 24);
	for (size_t k = 0; k < 3; k++)
		held[k] = j->slices[k].server;
	late = held[2];
	report_all_but(c, 0, tick(1));
	report_all_but(c, 1u << late, tick(2 * interval));
	fx_report_npu(c, held[0], 0, CONF_HEALTH_CRITICAL, clock_usec);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->slice_count, 3);
	for (size_t k = 0; k < 3; k++) {
		assert_int_not_equal(j->slices[k].server, held[0]);
		assert_int_not_equal(j->slices[k].server, late);
	}
	assert_true(has_event(c, SCHED_EV_PLACED, "kept 1 server, replaced 2"));
	check_table(c, j, 24);
	sched_cluster_free(c);
}

/*
 * A device IP that is a server's host address is refused before it changes anything
 * (issue 14 item 8, issue 15 item 9): the address plan of a server is its own.
 */
static void test_health_device_ip_of_a_host_is_refused(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_health_report r = { .npu_count = 1 };
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	r.npus[0].id = 3;
	snprintf(r.npus[0].device_ip, sizeof(r.npus[0].device_ip), "10.1.0.2");
	assert_int_equal(sched_server_check_report(c, 0, &r, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "ip 3: 10.1.0.2 is the host_ip of server node-1; a device IP "
				 "is the address of the NPU's own RoCE NIC");
	snprintf(r.npus[0].device_ip, sizeof(r.npus[0].device_ip), "10.1.0.1");
	assert_int_equal(sched_server_check_report(c, 0, &r, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "server node-0"));
	snprintf(r.npus[0].device_ip, sizeof(r.npus[0].device_ip), "10.19.0.1");
	assert_int_equal(sched_server_check_report(c, 0, &r, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_int_equal(sched_server_check_report(c, 7, &r, why, sizeof(why)), -ENOENT);
	sched_cluster_free(c);
}

/*
 * One health report through both checks, as the daemon's close does: conf_health_parse()
 * (what one report alone shows) then sched_server_check_report() (what the cluster
 * knows); only a report both accept is applied. Returns what the close would.
 */
static int try_report(struct sched_cluster *c, unsigned server, const char *text, char *why)
{
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	int r;

	why[0] = '\0';
	r = conf_health_parse(text, strlen(text), "t/health", 8, &rep, &err);
	if (r < 0) {
		conf_error_format(&err, why, SCHED_REASON_MAX);
		return r;
	}
	r = sched_server_check_report(c, server, &rep, why, SCHED_REASON_MAX);
	if (r < 0)
		return r;
	return sched_server_report(c, server, &rep, clock_usec);
}

/*
 * Health `ip` lines (issue 15 item 9, issue 14 item 8): another server's device IP, or
 * host_ip, an address twice in a report, a link-local IPv6 among IPv4, an IPv6 among this
 * server's IPv4, an address another NPU of this server keeps, an address another server's
 * NPU reported: each refused with EINVAL, changing nothing. After every report accepted,
 * the rank table of a job over both servers passes the project's HCCL checker.
 */
/* The bytes of server @i's NPUs (its own count of them). */
static size_t npus_bytes(const struct sched_cluster *c, size_t i)
{
	return c->servers[i].conf->npu_count * sizeof(struct sched_npu);
}

static void test_health_device_ip_conflicts_are_refused(void **state)
{
	static const struct {
		unsigned server;
		const char *text, *why;
	} refused[] = {
		{ 0, "node OK\nip 0 10.16.0.2\n",
		  "ip 0: 10.16.0.2 is already the device IP of NPU 0 of server node-1; every NPU "
		  "has its own (hccn_tool -i 0 -ip -g shows this one's)" },
		{ 0, "node OK\nip 4 10.1.0.2\n", "ip 4: 10.1.0.2 is the host_ip of server node-1" },
		{ 0, "node OK\nip 0 10.30.0.9\nip 1 10.30.0.9\n",
		  "ip 1: 10.30.0.9 is already the address of NPU 0" },
		{ 0, "node OK\nip 2 fe80::1\n", "ip 2: fe80::1 is a link-local address" },
		{ 0, "node OK\nip 2 fd00::1\n",
		  "ip 2: fd00::1 is IPv6 but NPU 0 has 10.16.0.1 (IPv4); the NPUs of a server use "
		  "one address family" },
		{ 1, "node OK\nip 6 10.16.0.1\nip 7 fd00::7\n", "10.16.0.1 is already the device "
		  "IP of NPU 0 of server node-0" },
		{ 0, "node OK\nip 5 10.17.0.1\n",
		  "ip 5: 10.17.0.1 is already the device IP of NPU 1 of this server" },
		{ 0, "{\"node\": \"OK\", \"npus\": [{\"id\": 3, \"health\": \"OK\", "
		  "\"device_ip\": \"10.21.0.2\"}]}",
		  "10.21.0.2 is already the device IP of NPU 5 of server node-1" },
	};
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_npu before[2][CONF_SERVER_NPUS_MAX];
	char why[SCHED_REASON_MAX];
	struct sched_job *j;
	uint64_t version;

	(void)state;
	fx_report_ok(c, 0, clock_usec);
	fx_report_ok(c, 1, clock_usec);
	j = fx_run(c, "pair", 16);
	check_table(c, j, 16);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			memcpy(before[0], c->servers[0].npus, npus_bytes(c, 0));
			memcpy(before[1], c->servers[1].npus, npus_bytes(c, 1));
			version = c->version;
			if (try_report(c, refused[i].server, refused[i].text, why) != -EINVAL)
				fail_msg("round %d: accepted: %s", round, refused[i].text);
			if (!strstr(why, refused[i].why))
				fail_msg("%s: got \"%s\", want \"%s\"", refused[i].text, why,
					 refused[i].why);
			assert_true(c->version == version);
			assert_memory_equal(before[0], c->servers[0].npus, npus_bytes(c, 0));
			assert_memory_equal(before[1], c->servers[1].npus, npus_bytes(c, 1));
			check_table(c, j, 16);
		}
		/*
		 * Accepted: node-1's NPU 0 moves to a new address; its old one is free again
		 * and node-0 may take it; the new one is node-1's (the index follows).
		 */
		if (round == 1)
			break;
		assert_int_equal(try_report(c, 1, "node OK\nip 0 10.40.0.1\n", why), 0);
		check_table(c, j, 16);
		assert_int_equal(try_report(c, 0, "node OK\nip 3 10.40.0.1\n", why), -EINVAL);
		assert_non_null(strstr(why, "NPU 0 of server node-1"));
		assert_int_equal(try_report(c, 0, "node OK\nip 3 10.16.0.2\n", why), 0);
		check_table(c, j, 16);
		assert_int_equal(try_report(c, 1, "node OK\nip 0 10.16.0.2\n", why), -EINVAL);
		/* and back, so the second round sees the inventory's plan, now reported */
		assert_int_equal(try_report(c, 0, "node OK\nip 3 10.19.0.1\n", why), 0);
		assert_int_equal(try_report(c, 1, "node OK\nip 0 10.16.0.2\n", why), 0);
		check_table(c, j, 16);
	}
	/* a report that does not give a conflicting address is not refused for it */
	assert_int_equal(try_report(c, 0, "node OK\nnpu 1 OK\n", why), 0);
	/* a whole server moving to IPv6 at once is one family */
	assert_int_equal(try_report(c, 0, "node OK\nip 0 fd00::10\nip 1 fd00::11\nip 2 "
				       "fd00::12\nip 3 fd00::13\nip 4 fd00::14\nip 5 fd00::15\n"
				       "ip 6 fd00::16\nip 7 fd00::17\n", why), 0);
	assert_int_equal(try_report(c, 0, "node OK\nip 7 10.23.0.1\n", why), -EINVAL);
	assert_non_null(strstr(why, "ip 7: 10.23.0.1 is IPv4 but NPU 0 has fd00::10 (IPv6)"));
	sched_cluster_free(c);
}

/* Reported SDIDs are kept per NPU and survive the server record (sched_state.c). */
static void test_health_sdids_are_kept_and_saved(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o), *c2;
	struct conf_health_report r = { .npu_count = 2 };
	char *doc, why[SCHED_REASON_MAX];
	size_t len;

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		r.npus[i].id = i + 4;
		r.npus[i].has_sdid = true;
		r.npus[i].sdid = 9u << 22 | 2u << 18 | i << 16 | (i + 4);
		r.npus[i].super_pod_id = 3;
		r.npus[i].server_index = 9;
	}
	assert_int_equal(sched_server_report(c, 0, &r, tick(1)), 0);
	assert_true(c->servers[0].npus[4].has_sdid);
	assert_int_equal(c->servers[0].npus[5].sdid, 9u << 22 | 2u << 18 | 1u << 16 | 5);
	assert_int_equal(c->servers[0].npus[5].super_pod_id, 3);
	assert_int_equal(c->servers[0].npus[5].server_index, 9);
	assert_false(c->servers[0].npus[0].has_sdid);
	assert_true(has_event(c, SCHED_EV_HEALTH, "SDID"));

	assert_int_equal(sched_server_save(c, 0, &doc, &len), 0);
	c2 = fx_cluster(&o);
	assert_int_equal(sched_server_load(c2, doc, len, tick(1), why), 0);
	assert_true(c2->servers[0].npus[5].has_sdid);
	assert_int_equal(c2->servers[0].npus[5].sdid, c->servers[0].npus[5].sdid);
	assert_int_equal(c2->servers[0].npus[5].super_pod_id, 3);
	assert_int_equal(c2->servers[0].npus[5].server_index, 9);
	assert_false(c2->servers[0].npus[0].has_sdid);
	free(doc);
	sched_cluster_free(c2);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health_critical_moves_single_server_job),
		cmocka_unit_test(test_health_multi_server_job_replaces_only_the_failed_server),
		cmocka_unit_test(test_health_no_capacity_pending_then_resumes),
		cmocka_unit_test(test_health_max_restarts_fails_the_job),
		cmocka_unit_test(test_health_alarm_preisolates_and_keeps_the_job),
		cmocka_unit_test(test_health_warning_is_logged_only),
		cmocka_unit_test(test_health_npu_past_the_server_is_refused),
		cmocka_unit_test(test_health_repeated_faults_escalate_to_manual),
		cmocka_unit_test(test_health_heartbeat_loss_recovers_elsewhere),
		cmocka_unit_test(test_health_node_critical_isolates_the_server),
		cmocka_unit_test(test_health_reported_ips_used_and_checked),
		cmocka_unit_test(test_health_hold_counts_healthy_time),
		cmocka_unit_test(test_health_refusal_shows_in_info_until_a_report_is_accepted),
		cmocka_unit_test(test_health_second_agent_for_one_node_is_refused),
		cmocka_unit_test(test_health_second_agent_of_one_machine_is_refused),
		cmocka_unit_test(test_health_servers_lost_in_one_pass_count_one_restart),
		cmocka_unit_test(test_health_faults_of_one_incident_count_one_restart),
		cmocka_unit_test(test_health_budget_ends_a_job_that_keeps_failing),
		cmocka_unit_test(test_health_placement_prefers_clean_servers),
		cmocka_unit_test(test_health_overdue_server_is_suspect),
		cmocka_unit_test(test_health_elastic_shrinks_of_one_incident_count_one_restart),
		cmocka_unit_test(test_health_recovery_swaps_a_suspect_server_it_holds),
		cmocka_unit_test(test_health_usage_in_status_json),
		cmocka_unit_test(test_health_device_ip_of_a_host_is_refused),
		cmocka_unit_test(test_health_device_ip_conflicts_are_refused),
		cmocka_unit_test(test_health_sdids_are_kept_and_saved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
