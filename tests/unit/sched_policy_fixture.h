/* SPDX-License-Identifier: MIT */
/*
 * sched_policy_fixture.h: the helpers of the scheduling-policy tests
 * (test_sched_policy.c, test_sched_preempt.c, test_sched_elastic.c): a virtual clock,
 * specs with time limits and elastic sizes, submit/run with checks, and expectations
 * about states, reasons and events, and setup_abort, which turns an abort inside sched
 * into a failure of the running test.
 *
 * Header-only (static inline); include after <cmocka.h> and sched_fixture.h. Each test
 * binary has its own clock `clk` (microseconds since the epoch), moved by adv().
 */
#ifndef ASCENDFS_SCHED_POLICY_FIXTURE_H
#define ASCENDFS_SCHED_POLICY_FIXTURE_H

#include <signal.h>
#include <string.h>

#include "sched_fixture.h"

#define SEC 1000000ull

/* The virtual clock of a test binary. */
static uint64_t clk = 1800000000ull * SEC;

static inline uint64_t adv(unsigned sec)
{
	clk += (uint64_t)sec * SEC;
	return clk;
}

static inline struct conf_job_spec *spec(const char *name, unsigned npus, const char *queue,
				  unsigned prio, uint64_t limit_sec)
{
	struct conf_job_spec *s = fx_spec_full(name, npus, queue, prio);

	s->time_limit_sec = limit_sec;
	return s;
}

static inline struct conf_job_spec *elastic_job(const char *name, unsigned lo, unsigned hi,
						 const char *queue, unsigned prio)
{
	struct conf_job_spec *s = fx_spec_full(name, lo, queue, prio);

	s->npus = s->npus_min = lo;
	s->npus_max = hi;
	return s;
}

static inline struct sched_job *submit(struct sched_cluster *c, struct conf_job_spec *s)
{
	char reason[SCHED_REASON_MAX] = "", name[CONF_NAME_MAX + 1];
	struct sched_job *j = NULL;
	int r;

	snprintf(name, sizeof(name), "%s", s->name);
	/* as an operator: the job caps (test_sched_job.c) do not bound these policy tests */
	r = sched_job_submit_as(c, s, FX_UID, FX_GID, true, adv(1), reason, &j);
	if (r != 0)
		fail_msg("submit %s: %d: %s", name, r, reason);
	fx_check(c);
	return j;
}

static inline struct sched_job *run(struct sched_cluster *c, struct conf_job_spec *s)
{
	struct sched_job *j = submit(c, s);

	if (j->state != SCHED_JOB_RUNNING)
		fail_msg("job %s is %s: %s", j->name, sched_job_state_name(j->state), j->reason);
	return j;
}

/* run() with every server but @server cordoned for the submission (no pending jobs). */
static inline struct sched_job *run_on(struct sched_cluster *c, struct conf_job_spec *s,
				       unsigned server)
{
	struct sched_job *j;

	for (size_t i = 0; i < c->server_count; i++)
		if (i != server)
			assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, (unsigned)i),
								 true, false, adv(0)), 0);
	j = run(c, s);
	for (size_t i = 0; i < c->server_count; i++)
		if (i != server)
			assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, (unsigned)i),
								 false, false, adv(0)), 0);
	assert_int_equal(j->slices[0].server, server);
	return j;
}

static inline void expect_state(const struct sched_job *j, enum sched_job_state s)
{
	if (j->state != s)
		fail_msg("job %s is %s, not %s: %s", j->name, sched_job_state_name(j->state),
			 sched_job_state_name(s), j->reason);
}

static inline void expect_reason(const struct sched_job *j, const char *needle)
{
	if (!strstr(j->reason, needle))
		fail_msg("job %s (%s): reason \"%s\" lacks \"%s\"", j->name,
			 sched_job_state_name(j->state), j->reason, needle);
}

static inline bool has_event(const struct sched_cluster *c, enum sched_event_kind kind,
		      const char *job, const char *needle)
{
	for (const struct sched_event *e = sched_event_next(c, 0); e;
	     e = sched_event_next(c, e->seq))
		if (e->kind == kind && (!job || strcmp(e->job, job) == 0) &&
		    (!needle || strstr(e->reason, needle)))
			return true;
	return false;
}

static inline unsigned count_state(const struct sched_cluster *c, enum sched_job_state s)
{
	unsigned n = 0;

	for (size_t i = 0; i < c->job_count; i++)
		n += c->jobs[i]->state == s;
	return n;
}

static inline void expect_no_reserved(const struct sched_cluster *c)
{
	for (size_t i = 0; i < c->server_count; i++)
		for (unsigned d = 0; d < c->servers[i].conf->npu_count; d++)
			if (c->servers[i].npus[d].reserved)
				fail_msg("NPU %u of %s is still reserved after the pass", d,
					 c->servers[i].conf->name);
}

/* Every pending job says why (never an opaque "Pending"). */
static inline void expect_reasons(const struct sched_cluster *c)
{
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		if (j->state == SCHED_JOB_PENDING && strlen(j->reason) < 10)
			fail_msg("pending job %s has no reason (\"%s\")", j->name, j->reason);
	}
}

/* Let every stopping job finish. */
static inline void stop_all(struct sched_cluster *c)
{
	uint64_t last = 0;

	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i]->state == SCHED_JOB_STOPPING &&
		    c->jobs[i]->stop_deadline_usec > last)
			last = c->jobs[i]->stop_deadline_usec;
	if (last > clk)
		clk = last;
	sched_tick(c, adv(0));
	fx_check(c);
}

/* A cluster from a hand-written YAML document (mixed server types). */
static inline struct sched_cluster *cluster_yaml(const char *yaml)
{
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_error err;
	char msg[1024];

	memset(&err, 0, sizeof(err));
	if (conf_cluster_parse(yaml, strlen(yaml), "test.yaml", &conf, &err) < 0)
		fail_msg("config refused: %s", conf_error_format(&err, msg, sizeof(msg)));
	assert_int_equal(sched_cluster_new(conf, &c), 0);
	c->check_invariants = true;
	return c;
}

static inline struct conf_job_spec *typed(struct conf_job_spec *s, const char *type)
{
	s->server_type = strdup(type);
	assert_non_null(s->server_type);
	return s;
}

/* How many events of @kind (of job @job; NULL: any) the cluster's ring holds. */
static inline unsigned count_events(const struct sched_cluster *c, enum sched_event_kind kind,
				    const char *job)
{
	unsigned n = 0;

	for (const struct sched_event *e = sched_event_next(c, 0); e;
	     e = sched_event_next(c, e->seq))
		n += e->kind == kind && (!job || strcmp(e->job, job) == 0);
	return n;
}

/* A health report for NPU @npu of @server, a second after the last one. */
static inline void report_npu(struct sched_cluster *c, unsigned server, unsigned npu,
			      enum conf_health_level level)
{
	fx_report_npu(c, server, npu, level, adv(1));
}

/* An abort (assert or invariant breach) fails the running test, not the binary. */
static inline void on_abort(int sig)
{
	(void)sig;
	fail_msg("SIGABRT: an assert or invariant check in sched aborted (see stderr)");
}

static inline int setup_abort(void **state)
{
	struct sigaction sa;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_abort;
	sa.sa_flags = SA_NODEFER | SA_RESETHAND;
	sigaction(SIGABRT, &sa, NULL);
	return 0;
}

#endif
