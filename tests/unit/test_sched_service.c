/* SPDX-License-Identifier: MIT */
/*
 * sched_service.c: a service (kind: service) serves through instances <service>.<index>,
 * each a gang of its own; they are started again whenever they end, scale with the
 * service's replicas, end with its cancel, and no other job takes their names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sched_fixture.h"

static struct conf_job_spec *service_spec(const char *name, unsigned npus, unsigned replicas)
{
	struct conf_job_spec *s = fx_spec(name, npus);

	s->kind = CONF_JOB_SERVICE;
	s->replicas = replicas;
	s->port = CONF_SERVICE_PORT_DEFAULT;
	s->max_restarts = CONF_RESTARTS_UNLIMITED;
	s->max_unavailable = CONF_SERVICE_MAX_UNAVAILABLE_DEFAULT; /* preemptible: false */
	return s;
}

static struct sched_job *instance(struct sched_cluster *c, const char *service, unsigned i)
{
	char name[CONF_NAME_MAX + 16];

	snprintf(name, sizeof(name), "%s.%u", service, i);
	return sched_cluster_find_job(c, name);
}

/* A service of 2 replicas of 16 NPUs: serving, and two instances running on servers of
 * their own, owned by its owner, each with its own placement. */
static void test_service_makes_its_instances(void **state)
{
	struct fx_opts o = { .servers = 8 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *svc, *a, *b;

	(void)state;
	svc = fx_submit_spec(c, service_spec("llm", 16, 2), FX_UID);
	assert_int_equal(svc->state, SCHED_JOB_SERVING);
	assert_int_equal(svc->slice_count, 0);
	assert_true(sched_job_is_service(svc));
	assert_non_null(strstr(svc->reason, "serving: 2 replicas of 16 NPUs on port 1025"));
	a = instance(c, "llm", 0);
	b = instance(c, "llm", 1);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(instance(c, "llm", 2));
	assert_true(sched_job_is_instance(a));
	assert_string_equal(a->service, "llm");
	assert_int_equal(a->uid, FX_UID);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(a), 16);
	assert_int_equal(a->slice_count, 2);
	/* gangs of their own: no server shared */
	for (size_t i = 0; i < a->slice_count; i++)
		for (size_t k = 0; k < b->slice_count; k++)
			assert_int_not_equal(a->slices[i].server, b->slices[k].server);
	assert_true(a->spec->max_restarts == CONF_RESTARTS_UNLIMITED);
	assert_true(a->spec->time_limit_sec == 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* A process of an instance that ends, with status 0 too, is started again: a new
 * generation, not completed. */
static void test_instance_restarts_whatever_its_exit(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX];
	struct sched_job *a;
	unsigned gen;

	(void)state;
	fx_submit_spec(c, service_spec("svc", 8, 1), FX_UID);
	a = instance(c, "svc", 0);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	for (int round = 0; round < 5; round++) {
		uint64_t now = fx_now();

		gen = a->generation;
		assert_int_equal(sched_job_process_exit(c, "svc.0", FX_UID, gen,
							fx_server_name(c, a->slices[0].server), -1,
							round % 2 ? 1 : 0, now, reason),
				 0);
		a = instance(c, "svc", 0);
		assert_non_null(a);
		assert_false(sched_job_state_is_terminal(a->state));
		/* ends this close together wait out the restart back-off first */
		if (round > 0) {
			assert_int_equal(a->generation, gen);
			assert_true(a->restart_at_usec > now);
			sched_tick(c, a->restart_at_usec);
		}
		assert_true(a->generation > gen);
		fx_check(c);
	}
	assert_null(strstr(a->reason, "4294967295"));
	sched_cluster_free(c);
}

/* The process of instance svc.0 exits with @code at @now: the exit as its agent says it. */
static void instance_exit(struct sched_cluster *c, const char *name, int code, uint64_t now)
{
	struct sched_job *a = sched_cluster_find_job(c, name);
	char reason[SCHED_REASON_MAX];

	assert_int_equal(sched_job_process_exit(c, name, FX_UID, a->generation,
						fx_server_name(c, a->slices[0].server), -1, code,
						now, reason),
			 0);
}

static size_t count_kind(const struct sched_cluster *c, enum sched_event_kind kind,
			 const char *job)
{
	size_t n = 0;

	for (const struct sched_event *e = sched_event_next(c, 0); e;
	     e = sched_event_next(c, e->seq))
		n += e->kind == kind && strcmp(e->job, job) == 0;
	return n;
}

/*
 * A crash loop is backed off (CrashLoopBackOff): the first end restarts at once, each
 * further end soon after a start waits 1, 2, 4 ... s, at most 300 s, in the same
 * generation, said in its reason and an event; a restart held survives a daemon restart;
 * a run of 10 minutes resets the wait; a fault of its NPUs is not backed off.
 */
static void test_crash_loop_is_backed_off(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o), *c2 = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "", *text;
	struct sched_job *a;
	uint64_t t = fx_now(), wait = 0;
	unsigned gen;
	size_t len;

	(void)state;
	fx_submit_spec(c, service_spec("svc", 8, 1), FX_UID);
	a = instance(c, "svc", 0);
	gen = a->generation;
	/* the first end: started again at once */
	instance_exit(c, "svc.0", 1, t += 100000);
	assert_int_equal(a->generation, gen + 1);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	/* each next one waits, and the wait doubles */
	for (uint64_t expect = 1000000; expect <= 600000000; expect *= 2) {
		uint64_t want = expect > 300000000 ? 300000000 : expect;

		gen = a->generation;
		instance_exit(c, "svc.0", expect % 3 ? 0 : 1, t += 200000);
		assert_int_equal(a->generation, gen);
		assert_int_equal(a->state, SCHED_JOB_RUNNING);
		assert_true(a->restart_at_usec == t + want);
		assert_non_null(strstr(a->reason, "back-off"));
		assert_false(sched_job_is_ready(a));
		/* a second exit while held changes nothing */
		instance_exit(c, "svc.0", 1, t + 1000);
		assert_true(a->restart_at_usec == t + want);
		sched_tick(c, t + want - 1);
		assert_int_equal(a->generation, gen);
		wait = want;
		sched_tick(c, t += want);
		assert_int_equal(a->generation, gen + 1);
		assert_int_equal(a->restart_at_usec, 0);
		assert_null(a->restart_why);
		fx_check(c);
	}
	assert_true(wait == 300000000);
	assert_true(count_kind(c, SCHED_EV_BACKOFF, "svc.0") >= 10);

	/* a held restart is saved and restored, and runs when due */
	gen = a->generation;
	instance_exit(c, "svc.0", 1, t += 100000);
	assert_true(a->restart_at_usec == t + 300000000);
	for (size_t i = 0; i < c->job_count; i++) {
		assert_int_equal(sched_job_save(c, c->jobs[i], &text, &len), 0);
		if (sched_job_load(c2, text, len, t, reason) < 0)
			fail_msg("load %s: %s", c->jobs[i]->name, reason);
		free(text);
	}
	if (sched_restore_finish(c2, t, reason) < 0)
		fail_msg("restore: %s", reason);
	a = instance(c2, "svc", 0);
	assert_true(a->restart_at_usec == t + 300000000);
	assert_int_equal(a->generation, gen);
	assert_non_null(a->restart_why);
	sched_tick(c2, t += 300000000);
	assert_int_equal(a->generation, gen + 1);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);

	/* 10 minutes of running: the next end restarts at once again */
	gen = a->generation;
	instance_exit(c2, "svc.0", 1, t += 600000000);
	assert_int_equal(a->generation, gen + 1);
	assert_int_equal(a->restart_at_usec, 0);
	/* and the one after waits the first wait */
	instance_exit(c2, "svc.0", 1, t += 100000);
	assert_true(a->restart_at_usec == t + 1000000);
	/* a fault of its NPUs meanwhile moves it at once, and ends the wait */
	gen = a->generation;
	fx_report_npu(c2, a->slices[0].server, a->slices[0].device_ids[0], CONF_HEALTH_CRITICAL,
		      t += 1000);
	assert_true(a->generation > gen);
	assert_int_equal(a->restart_at_usec, 0);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	fx_check(c2);
	sched_cluster_free(c);
	sched_cluster_free(c2);
}

/* scale 3 makes svc.2; scale 1 cancels svc.2 then svc.1 (highest first), svc.0 serves on;
 * out of range and a job that is not a service are refused with a reason. */
static void test_service_scales(void **state)
{
	struct fx_opts o = { .servers = 8 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *svc;

	(void)state;
	svc = fx_submit_spec(c, service_spec("svc", 8, 2), FX_UID);
	fx_run(c, "train", 8);
	assert_int_equal(sched_service_scale(c, "svc", FX_UID, 3, fx_now(), reason), 0);
	assert_int_equal(svc->spec->replicas, 3);
	assert_non_null(strstr(svc->spec_text, "replicas: 3"));
	assert_non_null(instance(c, "svc", 2));
	assert_int_equal(instance(c, "svc", 2)->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_service_scale(c, "svc", FX_UID, 1, fx_now(), reason), 0);
	fx_report_gone(c, "svc.1", fx_now());
	fx_report_gone(c, "svc.2", fx_now());
	assert_int_equal(instance(c, "svc", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(instance(c, "svc", 1)->state, SCHED_JOB_CANCELLED);
	assert_int_equal(instance(c, "svc", 2)->state, SCHED_JOB_CANCELLED);
	assert_non_null(strstr(instance(c, "svc", 2)->reason, "service svc scaled to 1 replica"));
	/* the tick makes no instance the count does not ask for */
	assert_int_equal(sched_service_tick(c, fx_now()), 0);
	assert_int_equal(instance(c, "svc", 1)->state, SCHED_JOB_CANCELLED);
	assert_int_equal(sched_service_scale(c, "svc", FX_UID, 65, fx_now(), reason), -EINVAL);
	assert_non_null(strstr(reason, "0 to 64 replicas"));
	assert_int_equal(sched_service_scale(c, "train", FX_UID, 2, fx_now(), reason), -EINVAL);
	assert_non_null(strstr(reason, "not a serving service"));
	assert_int_equal(sched_service_scale(c, "svc", FX_OTHER_UID, 2, fx_now(), reason), -EPERM);
	assert_int_equal(sched_service_scale(c, "nope", FX_UID, 2, fx_now(), reason), -ENOENT);
	fx_check(c);
	sched_cluster_free(c);
}

/* scale 0 (Kubernetes' replicas: 0): the service serves on with no instance, its NPUs
 * free, its endpoints empty; scaled up again, its instances take their names back. */
static void test_service_scales_to_zero(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *svc;
	char *text;
	size_t len;

	(void)state;
	svc = fx_submit_spec(c, service_spec("svc", 8, 2), FX_UID);
	assert_int_equal(sched_service_scale(c, "svc", FX_UID, 0, fx_now(), reason), 0);
	fx_report_gone(c, "svc.0", fx_now());
	fx_report_gone(c, "svc.1", fx_now());
	assert_int_equal(svc->state, SCHED_JOB_SERVING);
	assert_non_null(strstr(svc->reason, "serving: 0 replicas of 8 NPUs"));
	assert_non_null(strstr(svc->spec_text, "replicas: 0"));
	assert_int_equal(instance(c, "svc", 0)->state, SCHED_JOB_CANCELLED);
	assert_int_equal(instance(c, "svc", 1)->state, SCHED_JOB_CANCELLED);
	assert_int_equal(sched_render_service_endpoints(c, svc, &text, &len), 0);
	assert_int_equal(len, 0);
	free(text);
	/* the NPUs are the cluster's: a training job of all 16 runs */
	fx_run(c, "train", 16);
	assert_int_equal(sched_service_tick(c, fx_now()), 0);
	assert_int_equal(sched_job_cancel(c, "train", FX_UID, fx_now()), 0);
	fx_report_gone(c, "train", fx_now());
	assert_int_equal(sched_service_scale(c, "svc", FX_UID, 2, fx_now(), reason), 0);
	sched_schedule(c, fx_now());
	assert_int_equal(instance(c, "svc", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(instance(c, "svc", 1)->state, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* Cancelling the service cancels its instances; an instance that ends while its service
 * serves (here root cancels it) is replaced, under the same name, by the next tick. */
static void test_service_cancel_and_replacement(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *svc, *a;
	uint64_t serial;

	(void)state;
	svc = fx_submit_spec(c, service_spec("svc", 8, 2), FX_UID);
	a = instance(c, "svc", 0);
	serial = a->serial;
	assert_int_equal(fx_cancel(c, "svc.0", 0, fx_now()), 0);
	assert_int_equal(instance(c, "svc", 0)->state, SCHED_JOB_CANCELLED);
	assert_true(sched_service_tick(c, fx_now()) >= 1);
	a = instance(c, "svc", 0);
	assert_true(a->serial != serial);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	/* the service's cancel */
	assert_int_equal(fx_cancel(c, "svc", FX_UID, fx_now()), 0);
	assert_int_equal(svc->state, SCHED_JOB_CANCELLED);
	fx_report_gone(c, "svc.0", fx_now());
	fx_report_gone(c, "svc.1", fx_now());
	assert_int_equal(instance(c, "svc", 0)->state, SCHED_JOB_CANCELLED);
	assert_int_equal(instance(c, "svc", 1)->state, SCHED_JOB_CANCELLED);
	assert_non_null(strstr(instance(c, "svc", 1)->reason, "cancelled with its service svc"));
	assert_int_equal(sched_service_tick(c, fx_now()), 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* While svc serves, no job may be called svc.<digits>; a service whose instance names an
 * active job holds is refused, saying which. */
static void test_service_names(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;

	(void)state;
	fx_submit_spec(c, service_spec("svc", 8, 1), FX_UID);
	assert_int_equal(sched_job_submit(c, fx_spec("svc.7", 8), FX_UID, FX_GID, fx_now(), reason,
					  &j),
			 -EEXIST);
	assert_non_null(strstr(reason, "service svc's instances"));
	assert_int_equal(sched_job_may_submit(c, "svc.0", FX_UID), -EEXIST);
	/* a name not of digits is any job's */
	fx_run(c, "svc.x", 8);
	/* another service whose instance 0 is an active job's name */
	fx_run(c, "web.0", 8);
	assert_int_equal(sched_job_submit(c, service_spec("web", 8, 1), FX_UID, FX_GID, fx_now(),
					  reason, &j),
			 -EEXIST);
	assert_non_null(strstr(reason, "job web.0 is active"));
	assert_null(sched_cluster_find_job(c, "web"));
	fx_check(c);
	sched_cluster_free(c);
}

/* A service and its instances survive a restart of the daemon: saved, loaded, and the
 * instances are still its own. */
static void test_service_saved_and_restored(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o), *c2 = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";

	(void)state;
	fx_submit_spec(c, service_spec("svc", 8, 2), FX_UID);
	fx_save_and_restore(c, c2);
	assert_int_equal(sched_cluster_find_job(c2, "svc")->state, SCHED_JOB_SERVING);
	assert_string_equal(instance(c2, "svc", 1)->service, "svc");
	assert_int_equal(instance(c2, "svc", 1)->state, SCHED_JOB_RUNNING);
	/* nothing to make: both serve */
	assert_int_equal(sched_service_tick(c2, fx_now()), 0);
	assert_int_equal(sched_service_scale(c2, "svc", FX_UID, 3, fx_now(), reason), 0);
	assert_non_null(instance(c2, "svc", 2));
	fx_check(c2);
	sched_cluster_free(c);
	sched_cluster_free(c2);
}

/*
 * Small instances spread: best fit would stack two 4-NPU instances on one server, and
 * one fault would take both; each goes to a server without a sibling while one can take
 * it. A training job of the same size still packs; with a single server the instances
 * share it.
 */
static void test_instances_spread_over_servers(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *t1, *t2;

	(void)state;
	fx_submit_spec(c, service_spec("svc", 4, 3), FX_UID);
	a = instance(c, "svc", 0);
	b = instance(c, "svc", 1);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_int_not_equal(a->slices[0].server, b->slices[0].server);
	assert_int_not_equal(a->slices[0].server, instance(c, "svc", 2)->slices[0].server);
	assert_int_not_equal(b->slices[0].server, instance(c, "svc", 2)->slices[0].server);
	/* best fit for a training job: onto a half-used server */
	t1 = fx_run(c, "t1", 4);
	t2 = fx_run(c, "t2", 4);
	assert_int_equal(t1->slices[0].server, a->slices[0].server);
	assert_int_equal(t2->slices[0].server, b->slices[0].server);
	fx_check(c);
	sched_cluster_free(c);

	o.servers = 1;
	c = fx_cluster(&o);
	fx_submit_spec(c, service_spec("one", 4, 2), FX_UID);
	assert_int_equal(instance(c, "one", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(instance(c, "one", 1)->state, SCHED_JOB_RUNNING);
	assert_int_equal(instance(c, "one", 0)->slices[0].server,
			 instance(c, "one", 1)->slices[0].server);
	sched_cluster_free(c);
}

/* endpoints lists the running instances that reported ready in their generation; a new
 * generation is not ready until it says so; the service and other jobs report nothing. */
static void test_endpoints_list_ready_instances(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "", *text;
	struct sched_job *svc, *a;
	size_t len;
	unsigned gen;

	(void)state;
	svc = fx_submit_spec(c, service_spec("svc", 8, 2), FX_UID);
	fx_run(c, "train", 8);
	a = instance(c, "svc", 0);
	assert_int_equal(sched_render_service_endpoints(c, svc, &text, &len), 0);
	assert_string_equal(text, "");
	free(text);
	assert_int_equal(sched_service_ready(c, "svc.0", FX_UID, a->generation, true, fx_now(),
					     reason),
			 0);
	assert_true(sched_job_is_ready(a));
	assert_int_equal(sched_render_service_endpoints(c, svc, &text, &len), 0);
	assert_string_equal(text, "svc.0 10.1.0.1:1025\n");
	assert_int_equal(len, strlen(text));
	free(text);
	/* the metrics say so too */
	assert_int_equal(sched_render_metrics(c, fx_now(), &text, &len), 0);
	assert_non_null(strstr(text, "ascendfs_service_replicas{service=\"svc\"} 2\n"));
	assert_non_null(strstr(text, "ascendfs_service_instances_ready{service=\"svc\"} 1\n"));
	free(text);
	/* a report of an earlier generation changes nothing */
	assert_int_equal(sched_service_ready(c, "svc.0", FX_UID, a->generation - 1, false,
					     fx_now(), reason),
			 0);
	assert_true(sched_job_is_ready(a));
	/* a restart: the new generation is not ready until it says so */
	gen = a->generation;
	assert_int_equal(sched_job_process_exit(c, "svc.0", FX_UID, gen,
						fx_server_name(c, a->slices[0].server), -1, 1,
						fx_now(), reason),
			 0);
	a = instance(c, "svc", 0);
	assert_true(a->generation > gen);
	assert_false(sched_job_is_ready(a));
	assert_int_equal(sched_service_ready(c, "svc", FX_UID, 1, true, fx_now(), reason), -EINVAL);
	assert_non_null(strstr(reason, "no service's instance"));
	assert_int_equal(sched_service_ready(c, "train", FX_UID, 1, true, fx_now(), reason),
			 -EINVAL);
	assert_int_equal(sched_service_ready(c, "svc.1", FX_OTHER_UID, 1, true, fx_now(), reason),
			 -EPERM);
	assert_int_equal(sched_service_ready(c, "nope", FX_UID, 1, true, fx_now(), reason), -ENOENT);
	fx_check(c);
	sched_cluster_free(c);
}

static size_t count_events(const struct sched_cluster *c, const char *text)
{
	size_t n = 0;

	for (size_t i = 0; i < c->event_count; i++) {
		const struct sched_event *e = &c->events[(c->event_head + i) % c->event_cap];

		n += e->reason && strstr(e->reason, text) != NULL;
	}
	return n;
}

/* An instance that cannot be made (no room for its record) is said in the service's
 * reason and one event, and tried again every tick until it can, or is no longer asked. */
static void test_instance_not_made_is_said_and_tried_again(void **state)
{
	struct fx_opts o = { .servers = 4, .cluster_extra = "  max_job_count: 3\n" };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *svc;

	(void)state;
	svc = fx_submit_spec(c, service_spec("svc", 8, 2), FX_UID);
	assert_int_equal(sched_service_scale(c, "svc", FX_UID, 3, fx_now(), reason), 0);
	assert_null(instance(c, "svc", 2));
	assert_non_null(strstr(svc->reason, "instance 2 not made, tried again every second"));
	assert_non_null(strstr(svc->reason, "max_job_count"));
	assert_int_equal(count_events(c, "instance 2 not made"), 1);
	assert_true(c->services_dirty);
	sched_service_tick(c, fx_now());
	assert_int_equal(count_events(c, "instance 2 not made"), 1);
	assert_true(c->services_dirty);
	assert_int_equal(sched_service_scale(c, "svc", FX_UID, 2, fx_now(), reason), 0);
	assert_null(strstr(svc->reason, "not made"));
	sched_service_tick(c, fx_now());
	assert_false(c->services_dirty);
	fx_check(c);
	sched_cluster_free(c);
}

/* Every server's agent reports and every running instance of @svc (@n) answers. */
static void all_ready(struct sched_cluster *c, const char *svc, unsigned n)
{
	char reason[SCHED_REASON_MAX] = "";

	for (unsigned s = 0; s < c->server_count; s++)
		fx_report_ok(c, s, fx_now());
	for (unsigned i = 0; i < n; i++) {
		struct sched_job *j = instance(c, svc, i);

		if (j->state == SCHED_JOB_RUNNING)
			assert_int_equal(sched_service_ready(c, j->name, FX_UID, j->generation,
							     true, fx_now(), reason),
					 0);
	}
}

static bool on_server(const struct sched_cluster *c, const struct sched_job *j, const char *name)
{
	for (size_t i = 0; i < j->slice_count; i++)
		if (strcmp(c->servers[j->slices[i].server].conf->name, name) == 0)
			return true;
	return false;
}

/* Service svc, 2 instances of 8 NPUs at @priority, @preemptible or not, both ready. */
static void serving(struct sched_cluster *c, unsigned priority, bool preemptible)
{
	struct conf_job_spec *spec = service_spec("svc", 8, 2);

	spec->priority = priority;
	spec->preemptible = preemptible;
	fx_submit_spec(c, spec, FX_UID);
	all_ready(c, "svc", 2);
}

/* A service is not preempted unless its spec says preemptible: true, and then not below
 * replicas - max_unavailable available instances: a job that would need both of its
 * instances waits, one that needs one takes one. The waiting job's reason names the
 * service and the rule that keeps it. */
static void test_service_preempted_only_as_it_allows(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *urgent;

	(void)state;
	serving(c, 100, false);
	assert_int_equal(sched_service_disruptions_allowed(c, sched_cluster_find_job(c, "svc")), 1);
	urgent = fx_submit_spec(c, fx_spec_full("urgent", 8, NULL, 900), FX_UID);
	assert_int_equal(urgent->state, SCHED_JOB_PENDING);
	/* its reason says what keeps it waiting: not "when running jobs end" (never) */
	assert_non_null(strstr(urgent->reason, "service svc holds them; its instances run until "
					       "it is cancelled or scaled down, and preemption "
					       "passes over them"));
	assert_null(strstr(urgent->reason, "running jobs end"));
	assert_int_equal(instance(c, "svc", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(instance(c, "svc", 1)->state, SCHED_JOB_RUNNING);
	assert_int_equal(fx_cancel(c, "urgent", FX_UID, fx_now()), 0);
	assert_int_equal(fx_cancel(c, "svc", FX_UID, fx_now()), 0);
	sched_cluster_free(c);

	c = fx_cluster(&o);
	serving(c, 100, true);
	/* both instances: over the budget of one */
	urgent = fx_submit_spec(c, fx_spec_full("big", 16, NULL, 900), FX_UID);
	assert_int_equal(urgent->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(urgent->reason, "service svc holds them, and preempting its 2 "
					       "instances there would take more than its "
					       "disruption budget allows now (1: max_unavailable 1, "
					       "2 of 2 replicas available)"));
	assert_int_equal(instance(c, "svc", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(instance(c, "svc", 1)->state, SCHED_JOB_RUNNING);
	assert_int_equal(fx_cancel(c, "big", FX_UID, fx_now()), 0);
	/* one instance: within it */
	urgent = fx_submit_spec(c, fx_spec_full("urgent", 8, NULL, 900), FX_UID);
	assert_int_equal((instance(c, "svc", 0)->state == SCHED_JOB_STOPPING) +
				 (instance(c, "svc", 1)->state == SCHED_JOB_STOPPING),
			 1);
	fx_check(c);
	sched_cluster_free(c);
}

/* A job behind a service of higher priority, or on a cluster without preemption, is
 * not told the NPUs come "from when running jobs end": the reason names the service,
 * whose instances do not end, and what keeps them. */
static void test_job_behind_a_service_is_told_so(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	serving(c, 900, true);
	j = fx_submit_spec(c, fx_spec_full("train", 8, NULL, 100), FX_UID);
	assert_int_equal(j->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(j->reason, "service svc holds them; its instances run until it "
					  "is cancelled or scaled down, and their priority is not "
					  "below this job's"));
	assert_null(strstr(j->reason, "running jobs end"));
	fx_check(c);
	sched_cluster_free(c);

	/* preemption off on the cluster: that is what keeps them, whatever their spec says */
	for (int preemptible = 0; preemptible < 2; preemptible++) {
		struct fx_opts off = { .servers = 2, .no_preemption = true };

		c = fx_cluster(&off);
		serving(c, 100, preemptible);
		j = fx_submit_spec(c, fx_spec_full("urgent", 8, NULL, 900), FX_UID);
		assert_int_equal(j->state, SCHED_JOB_PENDING);
		assert_non_null(strstr(j->reason, "service svc holds them; its instances run until "
						  "it is cancelled or scaled down, and preemption is "
						  "off on this cluster (resource.preemption: false)"));
		fx_check(c);
		sched_cluster_free(c);
	}
}

/* An instance of a service that may not be preempted is not placed beyond its queue's
 * quota, though the queue may borrow: it could not give the NPUs back. */
static void test_unpreemptible_instance_does_not_borrow(void **state)
{
	struct fx_opts o = { .servers = 4, .quota = true,
			     .queues = "  - name: serve\n    quota_npus: 8\n    may_borrow: true\n" };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *spec;
	struct sched_job *a, *b;

	(void)state;
	spec = service_spec("svc", 8, 2);
	free(spec->queue);
	spec->queue = strdup("serve");
	fx_submit_spec(c, spec, FX_UID);
	a = instance(c, "svc", 0);
	b = instance(c, "svc", 1);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_false(a->borrowing);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(b->reason, "queue serve uses 8 of 8 NPUs; job needs 8; an "
					  "instance of a service that may not be preempted"));
	/* preemptible: it borrows the idle NPUs */
	assert_int_equal(fx_cancel(c, "svc", FX_UID, fx_now()), 0);
	spec = service_spec("web", 8, 2);
	free(spec->queue);
	spec->queue = strdup("serve");
	spec->preemptible = true;
	fx_submit_spec(c, spec, FX_UID);
	b = instance(c, "web", 1);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_true(b->borrowing);
	fx_check(c);
	sched_cluster_free(c);
}

/* A drain moves a service's instances off the server one at a time (max_unavailable 1):
 * the next once the moved one is ready again; a move is a new generation, not a restart;
 * the server is drained once they are gone. */
static void test_drain_moves_instances_one_at_a_time(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	const char *s0, *s1;
	struct sched_job *a, *b, *moved, *other;
	unsigned ga, gb;
	uint64_t now;

	(void)state;
	fx_submit_spec(c, service_spec("svc", 8, 2), FX_UID);
	all_ready(c, "svc", 2);
	a = instance(c, "svc", 0);
	b = instance(c, "svc", 1);
	ga = a->generation;
	gb = b->generation;
	s0 = fx_server_name(c, a->slices[0].server);
	s1 = fx_server_name(c, b->slices[0].server);
	assert_string_not_equal(s0, s1);
	now = fx_now();
	assert_int_equal(sched_server_set_cordon(c, s0, true, true, now), 0);
	assert_int_equal(sched_server_set_cordon(c, s1, true, true, now), 0);
	assert_non_null(strstr(c->events[(c->event_head + c->event_count - 1) % c->event_cap].reason,
			       "services' instances move elsewhere"));
	assert_int_equal(sched_tick(c, fx_now()), 1);
	moved = a->generation != ga ? a : b;
	other = moved == a ? b : a;
	assert_int_equal(moved->state, SCHED_JOB_RUNNING);
	assert_false(on_server(c, moved, s0) || on_server(c, moved, s1));
	assert_int_equal(moved->restarts, 0);
	assert_false(sched_job_is_ready(moved));
	assert_non_null(strstr(moved->reason, "moved off draining server"));
	assert_int_equal(other->generation, other == a ? ga : gb);
	/* its history: the moved generation ended requeued, the next one runs */
	assert_int_equal(moved->run_count, 2);
	assert_int_equal(moved->runs[0].end, SCHED_RUN_REQUEUED);
	assert_int_equal(moved->runs[1].end, SCHED_RUN_OPEN);
	assert_int_equal(count_events(c, "has 1 of 2 instances unavailable already"), 1);
	/* not while the moved one is not ready: its budget says none may go */
	{
		char *text;
		size_t len;

		assert_int_equal(sched_render_job_status_json(c, sched_cluster_find_job(c, "svc"),
							      &text, &len),
				 0);
		assert_non_null(strstr(text, "\"disruption_budget\""));
		assert_non_null(strstr(text, "\"max_unavailable\": 1"));
		assert_non_null(strstr(text, "\"available\": 1"));
		assert_non_null(strstr(text, "\"disruptions_allowed\": 0"));
		free(text);
	}
	assert_int_equal(sched_tick(c, fx_now()), 0);
	assert_int_equal(count_events(c, "has 1 of 2 instances unavailable already"), 1);
	assert_int_equal(sched_service_ready(c, moved->name, FX_UID, moved->generation, true,
					     fx_now(), reason),
			 0);
	assert_int_equal(sched_tick(c, fx_now()), 1);
	assert_false(on_server(c, other, s0) || on_server(c, other, s1));
	assert_int_equal(other->restarts, 0);
	assert_int_equal(count_events(c, "(a drain, not a fault: no restart counted)"), 2);
	/* both servers are drained: empty and cordoned */
	for (const char *n = s0; n; n = n == s0 ? s1 : NULL) {
		const struct sched_server *sv = &c->servers[sched_cluster_find_server(c, n)];

		assert_false(sv->draining);
		assert_true(sv->cordoned);
		assert_int_equal(sv->jobs_running, 0);
	}
	fx_check(c);
	sched_cluster_free(c);
}

/* A drain leaves an instance where it is when its service allows no disruption
 * (max_unavailable: 0) or no room is left, and says why once per wait. */
static void test_drain_waits_for_budget_or_room(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *spec;
	struct sched_job *a, *b;
	uint64_t now;

	(void)state;
	spec = service_spec("fixed", 8, 1);
	spec->max_unavailable = 0;
	fx_submit_spec(c, spec, FX_UID);
	fx_submit_spec(c, service_spec("svc", 8, 1), FX_UID);
	all_ready(c, "fixed", 1);
	all_ready(c, "svc", 1);
	a = instance(c, "fixed", 0);
	b = instance(c, "svc", 0);
	now = fx_now();
	assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, a->slices[0].server), true,
						 true, now),
			 0);
	assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, b->slices[0].server), true,
						 true, now),
			 0);
	assert_int_equal(sched_tick(c, fx_now()), 0);
	assert_int_equal(sched_tick(c, fx_now()), 0);
	assert_int_equal(count_events(c, "service fixed allows no instance to be unavailable "
					 "(max_unavailable: 0)"),
			 1);
	assert_int_equal(count_events(c, "no room elsewhere for its 8 NPUs"), 1);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_true(c->servers[a->slices[0].server].draining);
	/* a drain begun again says why again (no other drain meanwhile) */
	now = fx_now();
	assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, a->slices[0].server), false,
						 false, now),
			 0);
	assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, b->slices[0].server), false,
						 false, now),
			 0);
	assert_int_equal(sched_tick(c, fx_now()), 0);
	assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, a->slices[0].server), true,
						 true, fx_now()),
			 0);
	assert_int_equal(sched_tick(c, fx_now()), 0);
	assert_int_equal(count_events(c, "service fixed allows no instance to be unavailable "
					 "(max_unavailable: 0)"),
			 2);
	fx_check(c);
	sched_cluster_free(c);
}

static struct conf_job_spec *disaggregated_spec(const char *name, unsigned prefill,
						 unsigned decode, const char *controller)
{
	struct conf_job_spec *s = service_spec(name, 8, prefill + decode);

	s->prefill = prefill;
	s->decode = decode;
	s->controller = strdup(controller);
	s->coordinator = strdup("node-1");
	return s;
}

/* The global rank table's group @g (0-based in server_group_list), as "id role instance
 * server_ip(s)" */
static void group_text(json_t *t, size_t g, char *buf, size_t len)
{
	json_t *grp = json_array_get(json_object_get(t, "server_group_list"), g);
	json_t *list = json_object_get(grp, "server_list");
	size_t n = 0;

	n += (size_t)snprintf(buf, len, "%s %s %s", json_string_value(json_object_get(grp, "group_id")),
			      json_string_value(json_object_get(grp, "role")) ?: "-",
			      json_string_value(json_object_get(grp, "instance")) ?: "-");
	for (size_t i = 0; i < json_array_size(list) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, " %s",
				      json_string_value(json_object_get(json_array_get(list, i),
									"server_ip")));
}

/* A disaggregated service (MindIE Motor): its instances 0..prefill-1 are prefill, the
 * others decode, each told its role and the global rank table in its env; the table
 * lists the coordinator's and controller's servers (groups 0, 1) and one group per
 * running instance, prefill first, and follows an instance a fault moves. */
static void test_disaggregated_global_ranktable(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_render_ctx rc = { .mount_path = "/ascend" };
	char reason[SCHED_REASON_MAX] = "", g[256], before[256];
	struct sched_job *svc, *p0;
	json_t *t, *dev;
	char *text;
	size_t len;

	(void)state;
	svc = fx_submit_spec(c, disaggregated_spec("pd", 1, 2, "node-0"), FX_UID);
	assert_string_equal(sched_service_role(instance(c, "pd", 0)), "prefill");
	assert_string_equal(sched_service_role(instance(c, "pd", 1)), "decode");
	assert_string_equal(sched_service_role(instance(c, "pd", 2)), "decode");
	assert_null(sched_service_role(svc));
	assert_int_equal(sched_render_job_env(c, instance(c, "pd", 1), &rc, &text, &len), 0);
	assert_non_null(strstr(text, "export ASCEND_SERVICE_ROLE='decode'\n"));
	assert_non_null(strstr(text, "export GLOBAL_RANK_TABLE_FILE_PATH='/ascend/jobs/pd/"
				     "global_ranktable.json'\n"));
	free(text);

	assert_int_equal(sched_render_global_ranktable(c, svc, &text, &len), 0);
	assert_int_equal(len, strlen(text));
	t = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(t);
	assert_string_equal(json_string_value(json_object_get(t, "version")), "1.0");
	assert_string_equal(json_string_value(json_object_get(t, "status")), "completed");
	assert_int_equal(json_array_size(json_object_get(t, "server_group_list")), 5);
	group_text(t, 0, g, sizeof(g));
	assert_string_equal(g, "0 - - 10.1.0.2"); /* the coordinator's server, node-1 */
	group_text(t, 1, g, sizeof(g));
	assert_string_equal(g, "1 - - 10.1.0.1"); /* the controller's, node-0 */
	group_text(t, 2, before, sizeof(before));
	assert_non_null(strstr(before, "2 prefill pd.0 "));
	group_text(t, 3, g, sizeof(g));
	assert_non_null(strstr(g, "3 decode pd.1 "));
	group_text(t, 4, g, sizeof(g));
	assert_non_null(strstr(g, "4 decode pd.2 "));
	/* every value a string, device_logical_id the place on its server */
	dev = json_array_get(json_object_get(json_array_get(json_object_get(json_array_get(
		json_object_get(t, "server_group_list"), 2), "server_list"), 0), "device"), 7);
	assert_string_equal(json_string_value(json_object_get(dev, "device_logical_id")), "7");
	assert_string_equal(json_string_value(json_object_get(dev, "rank_id")), "7");
	assert_non_null(json_string_value(json_object_get(dev, "device_ip")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(t,
		"server_group_list"), 2), "deploy_server")), "0");
	json_decref(t);

	/* a Critical NPU moves the prefill instance: the table follows it */
	p0 = instance(c, "pd", 0);
	fx_report_npu(c, p0->slices[0].server, 0, CONF_HEALTH_CRITICAL, fx_now());
	p0 = instance(c, "pd", 0);
	assert_int_equal(p0->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_render_global_ranktable(c, svc, &text, &len), 0);
	t = json_loads(text, 0, NULL);
	free(text);
	group_text(t, 2, g, sizeof(g));
	assert_non_null(strstr(g, "2 prefill pd.0 "));
	assert_string_not_equal(g, before);
	json_decref(t);

	/* not scaled at run time yet; a training job or a plain service has no table */
	assert_int_equal(sched_service_scale(c, "pd", FX_UID, 4, fx_now(), reason), -EINVAL);
	assert_non_null(strstr(reason, "service pd is disaggregated (1 prefill, 2 decode"));
	assert_int_equal(sched_render_global_ranktable(c, instance(c, "pd", 0), &text, &len),
			 -ENOENT);
	fx_check(c);
	sched_cluster_free(c);
}

/* Does server @server's listing (nodes/<server>/jobs) hold @line? */
static bool listing_has(struct sched_cluster *c, unsigned server, const char *line)
{
	char *text;
	size_t len;
	bool has;

	assert_int_equal(sched_render_server_jobs(c, server, &text, &len), 0);
	has = strstr(text, line) != NULL;
	free(text);
	return has;
}

/* The controller's listing line in generation @gen: "pd.controller <gen> controller ..." */
static void role_line(const struct sched_job *svc, const char *role, unsigned gen, char *buf,
		      size_t len)
{
	snprintf(buf, len, "%s.%s %u %s 0 0 0 %u %u %llu 0 0\n", svc->name, role, gen, role,
		 (unsigned)FX_UID, (unsigned)FX_GID, (unsigned long long)svc->serial);
}

/*
 * The controller and coordinator ascendfs runs (disaggregated.<role>.command): each is
 * listed for its server's agent, no NPUs, with an env file of its own; an end starts it
 * again as the next generation, at once after a long run, after the restart back-off
 * after a quick one; a stale or misdirected report changes nothing; the generations are
 * saved; a cancel takes the lines away.
 */
static void test_disaggregated_roles_run_and_restart(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o), *c2 = fx_cluster(&o);
	struct sched_render_ctx rc = { .mount_path = "/ascend" };
	struct conf_job_spec *spec = disaggregated_spec("pd", 1, 1, "node-2");
	char reason[SCHED_REASON_MAX] = "", line[256];
	const struct sched_role_run *run;
	struct sched_job *svc;
	uint64_t t;
	char *text;
	size_t len;

	(void)state;
	spec->controller_command = strdup("exec ms_controller");
	svc = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(svc->state, SCHED_JOB_SERVING);
	/* the controller runs on node-2; the coordinator (no command) is the site's */
	role_line(svc, "controller", 1, line, sizeof(line));
	assert_true(listing_has(c, 2, line));
	assert_false(listing_has(c, 1, "pd.coordinator"));
	assert_false(listing_has(c, 0, "pd.controller"));
	assert_null(sched_service_role_run(svc, SCHED_ROLE_COORDINATOR));
	assert_int_equal(sched_render_role_env(c, svc, SCHED_ROLE_COORDINATOR, &rc, &text, &len),
			 -ENOENT);
	assert_int_equal(sched_render_role_env(c, svc, SCHED_ROLE_CONTROLLER, &rc, &text, &len), 0);
	assert_int_equal(len, strlen(text));
	assert_non_null(strstr(text, "export ASCEND_JOB_ID='pd.controller'\n"));
	assert_non_null(strstr(text, "export ASCEND_JOB_GENERATION='1'\n"));
	assert_non_null(strstr(text, "export ASCEND_SERVICE_ROLE='controller'\n"));
	assert_non_null(strstr(text, "export GLOBAL_RANK_TABLE_FILE_PATH='/ascend/jobs/pd/"
				     "global_ranktable.json'\n"));
	assert_non_null(strstr(text, "export POD_IP='10.1.0.3'\n"));
	free(text);

	/* a report that is not the controller's changes nothing */
	t = fx_now();
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_CONTROLLER, 1,
						 "node-0", 1, t, reason), -EINVAL);
	assert_non_null(strstr(reason, "service pd's controller runs on node-2, not on node-0"));
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_COORDINATOR, 1,
						 "node-1", 1, t, reason), -EINVAL);
	assert_non_null(strstr(reason, "disaggregated.coordinator.command"));
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID + 1, SCHED_ROLE_CONTROLLER, 1,
						 "node-2", 1, t, reason), -EPERM);
	assert_int_equal(sched_service_role_exit(c, "pd.0", FX_UID, SCHED_ROLE_CONTROLLER, 1,
						 "node-2", 1, t, reason), -EINVAL);
	assert_int_equal(sched_service_role_run(svc, SCHED_ROLE_CONTROLLER)->generation, 1);

	/* after a long run (the back-off's reset time), it starts again at once */
	t += SCHED_BACKOFF_RESET_USEC;
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_CONTROLLER, 1,
						 "node-2", 1, t, reason), 0);
	run = sched_service_role_run(svc, SCHED_ROLE_CONTROLLER);
	assert_int_equal(run->generation, 2);
	assert_int_equal(run->last_exit, 1);
	role_line(svc, "controller", 2, line, sizeof(line));
	assert_true(listing_has(c, 2, line));
	/* the old generation's report again: nothing */
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_CONTROLLER, 1,
						 "node-2", 1, t + 1, reason), 0);
	assert_int_equal(run->generation, 2);

	/* a quick end waits 1 s, the next one 2 s; the listing keeps the ended generation
	 * meanwhile (its agent does not start it again by itself) */
	t += 500000;
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_CONTROLLER, 2,
						 "node-2", 0, t, reason), 0);
	assert_int_equal(run->generation, 2);
	assert_true(run->restart_at_usec == t + SCHED_BACKOFF_INITIAL_USEC);
	assert_int_equal(count_events(c, "back-off: controller pd.controller generation 2 "
					 "ended with status 0 0.5 s after it started; started again "
					 "in 1 s"), 1);
	assert_int_equal(sched_service_roles_due(c, svc, t + SCHED_BACKOFF_INITIAL_USEC - 1), 0);
	assert_int_equal(sched_service_roles_due(c, svc, t + SCHED_BACKOFF_INITIAL_USEC), 1);
	assert_int_equal(run->generation, 3);
	assert_int_equal(run->restarts, 2);
	t += SCHED_BACKOFF_INITIAL_USEC + 100000;
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_CONTROLLER, 3,
						 "node-2", 2, t, reason), 0);
	assert_true(run->restart_at_usec == t + 2 * SCHED_BACKOFF_INITIAL_USEC);
	assert_int_equal(sched_render_job_status_json(c, svc, &text, &len), 0);
	assert_non_null(strstr(text, "\"state\": \"back-off\""));
	assert_non_null(strstr(text, "\"run\": \"pd.controller\""));
	free(text);
	assert_int_equal(sched_service_roles_due(c, svc, t + 2 * SCHED_BACKOFF_INITIAL_USEC), 1);
	assert_int_equal(run->generation, 4);
	/* a generation newer than its newest was never run: refused, nothing changes */
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_CONTROLLER, 5,
						 "node-2", 1, t, reason), -EINVAL);
	assert_non_null(strstr(reason, "service pd's controller has not run generation 5 (its "
				       "newest is 4)"));

	/* saved: a restart keeps the generation, so the agent leaves the process alone */
	fx_save_and_restore(c, c2);
	sched_tick(c2, fx_now());
	run = sched_service_role_run(sched_cluster_find_job(c2, "pd"), SCHED_ROLE_CONTROLLER);
	assert_non_null(run);
	assert_int_equal(run->generation, 4);
	role_line(sched_cluster_find_job(c2, "pd"), "controller", 4, line, sizeof(line));
	assert_true(listing_has(c2, 2, line));
	sched_cluster_free(c2);

	/* saved in its back-off: the restored record starts the next generation when due
	 * (the ended one's exit was taken already, and is not reported again) */
	run = sched_service_role_run(svc, SCHED_ROLE_CONTROLLER);
	t = run->started_usec + 1000;
	assert_int_equal(sched_service_role_exit(c, "pd", FX_UID, SCHED_ROLE_CONTROLLER, 4,
						 "node-2", 1, t, reason), 0);
	assert_true(run->restart_at_usec > t);
	c2 = fx_cluster(&o);
	fx_save_and_restore(c, c2);
	run = sched_service_role_run(sched_cluster_find_job(c2, "pd"), SCHED_ROLE_CONTROLLER);
	assert_int_equal(run->generation, 4);
	assert_true(run->restart_at_usec == svc->roles[SCHED_ROLE_CONTROLLER].restart_at_usec);
	sched_tick(c2, run->restart_at_usec);
	assert_int_equal(run->generation, 5);
	role_line(sched_cluster_find_job(c2, "pd"), "controller", 5, line, sizeof(line));
	assert_true(listing_has(c2, 2, line));

	/* cancelled: the listing no longer has it, its env file is gone */
	assert_int_equal(sched_job_cancel(c, "pd", FX_UID, fx_now()), 0);
	assert_false(listing_has(c, 2, "pd.controller"));
	assert_int_equal(sched_render_role_env(c, svc, SCHED_ROLE_CONTROLLER, &rc, &text, &len),
			 -ENOENT);
	fx_check(c);
	fx_check(c2);
	sched_cluster_free(c);
	sched_cluster_free(c2);
}

/*
 * The names a service gives its runs are its own: <name>.<index> and, for a role ascendfs
 * runs, <name>.controller / <name>.coordinator. A job may not take them while it serves,
 * a service whose role's name an active job holds is refused, and the name leaves room
 * for them (checked here, not by the parser: an instance's copy of the spec carries the
 * longer <name>.<index>, and must read back).
 */
static void test_service_names_leave_room_for_its_runs(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "", name[CONF_NAME_MAX + 1];
	struct conf_job_spec *spec, *again;
	struct conf_error err;
	struct sched_job *j = NULL;

	(void)state;
	/* a job holds pd.controller: the service that would run it is refused */
	fx_run(c, "pd.controller", 8);
	spec = disaggregated_spec("pd", 1, 1, "node-0");
	spec->controller_command = strdup("exec ms_controller");
	assert_int_equal(sched_job_submit(c, spec, FX_UID, FX_GID, fx_now(), reason, &j), -EEXIST);
	assert_non_null(strstr(reason, "disaggregated.controller: its run is named pd.controller, "
				       "and job pd.controller is running"));
	assert_null(sched_cluster_find_job(c, "pd"));
	assert_int_equal(sched_job_cancel(c, "pd.controller", FX_UID, fx_now()), 0);
	fx_report_gone(c, "pd.controller", fx_now());
	spec = disaggregated_spec("pd", 1, 1, "node-0");
	spec->controller_command = strdup("exec ms_controller");
	fx_submit_spec(c, spec, FX_UID);
	/* while it serves, no job takes its roles' names (nor its instances') */
	spec = fx_spec_full("pd.coordinator", 8, NULL, 500);
	assert_int_equal(sched_job_submit(c, spec, FX_UID, FX_GID, fx_now(), reason, &j), -EEXIST);
	assert_non_null(strstr(reason, "is a name of service pd's instances (<service>.<index>) "
				       "or roles"));

	/* lengths: 51 with a role run, 60 without; one more is refused at admission */
	memset(name, 'r', sizeof(name));
	name[CONF_SERVICE_ROLE_NAME_MAX + 1] = '\0';
	spec = disaggregated_spec(name, 1, 1, "node-0");
	spec->coordinator_command = strdup("x");
	assert_int_equal(sched_job_submit(c, spec, FX_UID, FX_GID, fx_now(), reason, &j), -EINVAL);
	assert_non_null(strstr(reason, "name: a disaggregated service whose controller or "
				       "coordinator ascendfs runs has at most 51 characters"));
	name[CONF_SERVICE_NAME_MAX + 1] = '\0';
	memset(name, 's', CONF_SERVICE_NAME_MAX + 1);
	assert_int_equal(sched_job_submit(c, service_spec(name, 8, 1), FX_UID, FX_GID, fx_now(),
					  reason, &j), -EINVAL);
	assert_non_null(strstr(reason, "name: a service's name has at most 60 characters"));
	name[CONF_SERVICE_NAME_MAX] = '\0';
	fx_submit_spec(c, service_spec(name, 8, 1), FX_UID);
	/* its instance's spec, <name>.0 (62 characters), reads back as its agent reads it */
	j = instance(c, name, 0);
	assert_non_null(j);
	assert_int_equal(conf_job_spec_parse(j->spec_text, j->spec_len, "spec", j->name, &again,
					     &err), 0);
	conf_job_spec_free(again);
	fx_check(c);
	sched_cluster_free(c);
}

/* A disaggregated spec naming a server the cluster lacks is refused, saying which. */
static void test_disaggregated_needs_known_servers(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;

	(void)state;
	assert_int_equal(sched_job_submit(c, disaggregated_spec("pd", 1, 1, "node-9"), FX_UID,
					  FX_GID, fx_now(), reason, &j),
			 -EINVAL);
	assert_non_null(strstr(reason, "disaggregated.controller: no server node-9 in the "
				       "cluster"));
	assert_null(sched_cluster_find_job(c, "pd"));
	assert_null(sched_cluster_find_job(c, "pd.0"));
	fx_check(c);
	sched_cluster_free(c);
}

/* A disaggregated service and its instances are saved and restored as they were: each
 * instance's saved spec reads back (it once carried replicas: 1 beside the layout's
 * counts, which the parser refuses, so the daemon did not start again). */
static void test_disaggregated_saved_and_restored(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o), *c2 = fx_cluster(&o);

	(void)state;
	fx_submit_spec(c, disaggregated_spec("pd", 1, 1, "node-0"), FX_UID);
	fx_save_and_restore(c, c2);
	assert_int_equal(sched_cluster_find_job(c2, "pd")->state, SCHED_JOB_SERVING);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(instance(c2, "pd", i)->state, SCHED_JOB_RUNNING);
		assert_int_equal(instance(c2, "pd", i)->generation, instance(c, "pd", i)->generation);
		fx_expect_same_slices(instance(c2, "pd", i), instance(c, "pd", i));
	}
	assert_string_equal(sched_service_role(instance(c2, "pd", 0)), "prefill");
	assert_string_equal(sched_service_role(instance(c2, "pd", 1)), "decode");
	assert_int_equal(sched_service_tick(c2, fx_now()), 0);
	fx_check(c2);
	sched_cluster_free(c);
	sched_cluster_free(c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_makes_its_instances),
		cmocka_unit_test(test_instance_restarts_whatever_its_exit),
		cmocka_unit_test(test_crash_loop_is_backed_off),
		cmocka_unit_test(test_service_scales),
		cmocka_unit_test(test_service_scales_to_zero),
		cmocka_unit_test(test_service_cancel_and_replacement),
		cmocka_unit_test(test_service_names),
		cmocka_unit_test(test_service_saved_and_restored),
		cmocka_unit_test(test_instances_spread_over_servers),
		cmocka_unit_test(test_endpoints_list_ready_instances),
		cmocka_unit_test(test_instance_not_made_is_said_and_tried_again),
		cmocka_unit_test(test_service_preempted_only_as_it_allows),
		cmocka_unit_test(test_unpreemptible_instance_does_not_borrow),
		cmocka_unit_test(test_drain_moves_instances_one_at_a_time),
		cmocka_unit_test(test_drain_waits_for_budget_or_room),
		cmocka_unit_test(test_job_behind_a_service_is_told_so),
		cmocka_unit_test(test_disaggregated_global_ranktable),
		cmocka_unit_test(test_disaggregated_needs_known_servers),
		cmocka_unit_test(test_disaggregated_roles_run_and_restart),
		cmocka_unit_test(test_service_names_leave_room_for_its_runs),
		cmocka_unit_test(test_disaggregated_saved_and_restored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
