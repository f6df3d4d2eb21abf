/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the job lifecycle (sched/sched_job.c): submission, strict FIFO and
 * priority order, cancel/complete/remove, ownership, rejection, drafts, replacement of
 * terminal jobs, queue quotas, the event sequence and checkpoints.
 * sched_check_invariants() is checked after every step (fx_check).
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
#include "test_util.h"

static const char queues_yaml[] = "  - name: default\n"
				  "  - name: research\n"
				  "    quota_npus: 64\n"
				  "    priority: 700\n"
				  "  - name: finetune\n"
				  "    quota_npus: 16\n"
				  "    may_borrow: false\n";

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

/* The newest event; it must exist. */
static const struct sched_event *last_event(const struct sched_cluster *c)
{
	const struct sched_event *e = sched_event_next(c, c->next_event_seq - 2);

	assert_non_null(e);
	assert_true(e->seq == c->next_event_seq - 1);
	return e;
}

static void test_job_submit_runs(void **state)
{
	struct sched_cluster *c = cluster_of(2);
	uint64_t before = c->next_event_seq;
	const struct sched_event *e;
	struct sched_job *j;

	(void)state;
	j = fx_submit(c, "llama", 8);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_string_equal(sched_job_state_name(j->state), "running");
	assert_int_equal(j->generation, 1);
	assert_int_equal(j->uid, FX_UID);
	assert_non_null(j->spec);
	assert_non_null(j->spec_text);
	assert_true(j->spec_len > 0);
	assert_int_equal(sched_job_total_npus(j), 8);
	assert_int_equal(c->npus_allocated, 8);
	expect_reason(j, "placed on 1 server");
	assert_true(j->start_usec >= j->submit_usec);
	/* submitted, then placed */
	e = sched_event_next(c, before - 1);
	assert_non_null(e);
	assert_int_equal(e->kind, SCHED_EV_SUBMITTED);
	assert_string_equal(e->job, "llama");
	e = sched_event_next(c, e->seq);
	assert_non_null(e);
	assert_int_equal(e->kind, SCHED_EV_PLACED);
	assert_string_equal(e->state, "running");
	assert_null(sched_event_next(c, e->seq));
	fx_check(c);
	sched_cluster_free(c);
}

/* Strict FIFO: a later small job waits behind a big pending one and is told why. */
static void test_job_fifo_head_of_line_blocker(void **state)
{
	struct sched_cluster *c = cluster_of(2);
	struct sched_job *a, *big, *small;

	(void)state;
	a = fx_run(c, "a", 8);
	big = fx_submit(c, "big", 16);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	expect_reason(big, "needs 16 NPUs");
	/* 8 NPUs are free on node-1, yet the small job must not start ahead of big */
	small = fx_submit(c, "small", 1);
	assert_int_equal(small->state, SCHED_JOB_PENDING);
	expect_reason(small, "\"big\"");
	assert_int_equal(sched_job_total_npus(small), 0);
	assert_int_equal(c->servers[1].npus_free, 8);
	assert_int_equal(c->npus_allocated, 8);
	/* passes keep it waiting */
	assert_int_equal(sched_schedule(c, fx_now()), 0);
	assert_int_equal(small->state, SCHED_JOB_PENDING);
	fx_check(c);

	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(a->state, SCHED_JOB_COMPLETED);
	assert_int_equal(big->state, SCHED_JOB_RUNNING);
	assert_int_equal(small->state, SCHED_JOB_PENDING);
	expect_reason(small, "needs 1 NPU ");
	assert_int_equal(sched_job_cancel(c, "big", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(small->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* Pending jobs start by priority (high first), then in submission order (no preemption
 * here: it is tested in test_sched_policy.c). */
static void test_job_priority_order(void **state)
{
	struct fx_opts o = { .servers = 1, .queues = queues_yaml, .no_preemption = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *low, *mid1, *mid2, *high;

	(void)state;
	fx_run(c, "a", 8);
	low = fx_submit_spec(c, fx_spec_full("low", 8, NULL, 100), FX_UID);
	mid1 = fx_submit_spec(c, fx_spec_full("mid1", 8, NULL, 500), FX_UID);
	mid2 = fx_submit_spec(c, fx_spec_full("mid2", 8, NULL, 500), FX_UID);
	high = fx_submit_spec(c, fx_spec_full("high", 8, NULL, 900), FX_UID);
	assert_int_equal(high->state, SCHED_JOB_PENDING);
	expect_reason(high, "needs 8 NPUs");
	expect_reason(low, "\"high\"");
	expect_reason(mid1, "\"high\"");

	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(high->state, SCHED_JOB_RUNNING);
	expect_reason(mid1, "needs 8 NPUs");
	expect_reason(mid2, "\"mid1\"");
	assert_int_equal(sched_job_complete(c, "high", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(mid1->state, SCHED_JOB_RUNNING);
	assert_int_equal(mid2->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_complete(c, "mid1", FX_UID, fx_now()), 0);
	assert_int_equal(mid2->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_complete(c, "mid2", FX_UID, fx_now()), 0);
	assert_int_equal(low->state, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* Cancel frees the NPUs and starts the next pending job; a second cancel is a no-op. */
static void test_job_cancel_frees_and_starts_next(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	struct sched_job *a, *b;
	uint64_t seq;

	(void)state;
	a = fx_run(c, "a", 6);
	b = fx_submit(c, "b", 4);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	assert_int_equal(c->servers[0].npus_free, 2);

	assert_int_equal(sched_job_cancel(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(a->state, SCHED_JOB_CANCELLED);
	assert_int_equal(a->slice_count, 0);
	assert_true(a->end_usec > 0);
	expect_reason(a, "cancelled by its owner");
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	fx_expect_slice(b, 0, 0, "0,1,2,3");
	for (unsigned d = 4; d < 8; d++)
		assert_null(c->servers[0].npus[d].job);
	assert_int_equal(c->servers[0].npus_free, 4);
	assert_int_equal(c->npus_allocated, 4);

	seq = c->next_event_seq;
	assert_int_equal(sched_job_cancel(c, "a", FX_UID, fx_now()), 0);
	assert_int_equal(a->state, SCHED_JOB_CANCELLED);
	assert_true(c->next_event_seq == seq);
	assert_int_equal(sched_job_cancel(c, "nosuch", FX_UID, fx_now()), -ENOENT);
	/* a pending job can be cancelled too */
	fx_submit(c, "c", 8);
	assert_int_equal(sched_job_cancel(c, "c", FX_UID, fx_now()), 0);
	assert_int_equal(sched_cluster_find_job(c, "c")->state, SCHED_JOB_CANCELLED);
	fx_check(c);
	sched_cluster_free(c);
}

/* complete is legal only for a running job: -EBUSY otherwise. */
static void test_job_complete_only_running(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	struct sched_job *a, *b;

	(void)state;
	a = fx_run(c, "a", 8);
	b = fx_submit(c, "b", 8);
	assert_int_equal(sched_job_complete(c, "b", FX_UID, fx_now()), -EBUSY);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_create_draft(c, "d", FX_UID, FX_GID, fx_now(), NULL), 0);
	assert_int_equal(sched_job_complete(c, "d", FX_UID, fx_now()), -EBUSY);
	assert_int_equal(sched_job_complete(c, "nosuch", FX_UID, fx_now()), -ENOENT);
	fx_check(c);

	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(a->state, SCHED_JOB_COMPLETED);
	assert_int_equal(a->slice_count, 0);
	assert_int_equal(last_event(c)->kind, SCHED_EV_PLACED); /* b started right after */
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), -EBUSY);
	assert_int_equal(sched_job_cancel(c, "b", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_complete(c, "b", FX_UID, fx_now()), -EBUSY);
	assert_int_equal(b->state, SCHED_JOB_CANCELLED);
	fx_check(c);
	sched_cluster_free(c);
}

/* Another uid may not cancel, complete, checkpoint or remove a job; root may cancel. */
static void test_job_owner_permissions(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	struct sched_job *a;

	(void)state;
	a = fx_run(c, "a", 4);
	assert_int_equal(sched_job_cancel(c, "a", FX_OTHER_UID, fx_now()), -EPERM);
	assert_int_equal(sched_job_complete(c, "a", FX_OTHER_UID, fx_now()), -EPERM);
	assert_int_equal(sched_job_checkpoint(c, "a", FX_OTHER_UID, 10, "/ckpt/10", fx_now()),
			 -EPERM);
	assert_int_equal(sched_job_remove(c, "a", FX_OTHER_UID, fx_now()), -EPERM);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(sched_job_total_npus(a), 4);
	assert_int_equal(a->checkpoint_step, 0);
	fx_check(c);

	assert_int_equal(sched_job_cancel(c, "a", 0, fx_now()), 0);
	assert_int_equal(a->state, SCHED_JOB_CANCELLED);
	expect_reason(a, "cancelled by root");
	assert_int_equal(c->npus_allocated, 0);
	fx_check(c);
	sched_cluster_free(c);
}

struct snapshot {
	const struct sched_job *job[4][CONF_SERVER_NPUS_MAX];
	unsigned rank[4][CONF_SERVER_NPUS_MAX];
	unsigned npus_free[4];
	unsigned allocated;
	enum sched_job_state states[8];
	size_t jobs;
};

static void take_snapshot(const struct sched_cluster *c, struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	assert_true(c->server_count <= 4 && c->job_count <= 8);
	for (size_t i = 0; i < c->server_count; i++) {
		for (unsigned d = 0; d < c->servers[i].conf->npu_count; d++) {
			s->job[i][d] = c->servers[i].npus[d].job;
			s->rank[i][d] = c->servers[i].npus[d].rank;
		}
		s->npus_free[i] = c->servers[i].npus_free;
	}
	s->allocated = c->npus_allocated;
	for (size_t i = 0; i < c->job_count; i++)
		s->states[i] = c->jobs[i]->state;
	s->jobs = c->job_count;
}

static void expect_same_allocation(const struct sched_cluster *c, const struct snapshot *before)
{
	struct snapshot now;

	take_snapshot(c, &now);
	assert_memory_equal(now.job, before->job, sizeof(now.job));
	assert_memory_equal(now.rank, before->rank, sizeof(now.rank));
	assert_memory_equal(now.npus_free, before->npus_free, sizeof(now.npus_free));
	assert_int_equal(now.allocated, before->allocated);
}

/* A rejection records a rejected job and an event; no NPU or other job changes. */
static void test_job_reject_changes_nothing(void **state)
{
	static const char why[] = "npus: 3 cannot be placed on one Atlas 800 server";
	struct sched_cluster *c = cluster_of(2);
	struct snapshot before;
	const struct sched_event *e;
	struct sched_job *a, *b, *r;
	char a_reason[SCHED_REASON_MAX];

	(void)state;
	a = fx_run(c, "a", 8);
	b = fx_submit(c, "b", 16);
	assert_int_equal(b->state, SCHED_JOB_PENDING);
	take_snapshot(c, &before);

	assert_int_equal(sched_job_reject(c, "bad", FX_UID, FX_GID, why, fx_now()), 0);
	fx_check(c);
	r = sched_cluster_find_job(c, "bad");
	assert_non_null(r);
	assert_int_equal(r->state, SCHED_JOB_REJECTED);
	assert_string_equal(r->reason, why);
	assert_int_equal(r->uid, FX_UID);
	assert_int_equal(sched_job_total_npus(r), 0);
	e = last_event(c);
	assert_int_equal(e->kind, SCHED_EV_REJECTED);
	assert_string_equal(e->job, "bad");
	assert_string_equal(e->reason, why);
	expect_same_allocation(c, &before);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(b->state, SCHED_JOB_PENDING);

	/* an active job of that name is left alone */
	snprintf(a_reason, sizeof(a_reason), "%s", a->reason);
	assert_int_equal(sched_job_reject(c, "a", FX_UID, FX_GID, why, fx_now()), -EEXIST);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_string_equal(a->reason, a_reason);
	assert_int_equal(sched_job_reject(c, "../x", FX_UID, FX_GID, why, fx_now()), -EINVAL);
	assert_int_equal(sched_job_reject(c, "Bad Name", FX_UID, FX_GID, why, fx_now()), -EINVAL);
	/* rejecting again replaces the rejected job */
	assert_int_equal(sched_job_reject(c, "bad", FX_UID, FX_GID, "second try", fx_now()), 0);
	assert_string_equal(sched_cluster_find_job(c, "bad")->reason, "second try");
	/* a draft is turned into a rejected job */
	assert_int_equal(sched_job_create_draft(c, "dr", FX_UID, FX_GID, fx_now(), NULL), 0);
	assert_int_equal(sched_job_reject(c, "dr", FX_UID, FX_GID, why, fx_now()), 0);
	assert_int_equal(sched_cluster_find_job(c, "dr")->state, SCHED_JOB_REJECTED);
	expect_same_allocation(c, &before);
	fx_check(c);
	sched_cluster_free(c);
}

/* An unknown queue is -EINVAL, names the known queues and creates nothing. */
static void test_job_unknown_queue_lists_known(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;
	uint64_t seq = c->next_event_seq;

	(void)state;
	assert_int_equal(sched_job_submit(c, fx_spec_full("q", 1, "nope", 500), FX_UID, FX_GID,
					  fx_now(), reason, &j),
			 -EINVAL);
	assert_null(j);
	assert_non_null(strstr(reason, "unknown queue \"nope\""));
	assert_non_null(strstr(reason, "default"));
	assert_non_null(strstr(reason, "research"));
	assert_non_null(strstr(reason, "finetune"));
	assert_null(sched_cluster_find_job(c, "q"));
	assert_int_equal(c->job_count, 0);
	assert_true(c->next_event_seq == seq);
	assert_int_equal(c->npus_allocated, 0);
	/* a known queue is fine */
	fx_run(c, "q", 1);
	fx_check(c);
	sched_cluster_free(c);
}

/* A job that can never fit is refused (not created) with a reason; the caller records it. */
static void test_job_never_fits_refused(void **state)
{
	struct sched_cluster *c = cluster_of(4);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;

	(void)state;
	assert_int_equal(sched_job_submit(c, fx_spec("huge", 64), FX_UID, FX_GID, fx_now(), reason,
					  &j),
			 -ENOSPC);
	assert_non_null(strstr(reason, "needs 8 whole"));
	assert_non_null(strstr(reason, "the cluster has 4"));
	assert_null(sched_cluster_find_job(c, "huge"));
	assert_int_equal(c->job_count, 0);
	assert_int_equal(sched_job_reject(c, "huge", FX_UID, FX_GID, reason, fx_now()), 0);
	assert_int_equal(sched_cluster_find_job(c, "huge")->state, SCHED_JOB_REJECTED);
	assert_string_equal(sched_cluster_find_job(c, "huge")->reason, reason);

	reason[0] = '\0';
	assert_int_equal(sched_job_submit(c, fx_spec("odd", 12), FX_UID, FX_GID, fx_now(), reason,
					  &j),
			 -EINVAL);
	assert_non_null(strstr(reason, "not a multiple of 8"));
	reason[0] = '\0';
	{
		struct conf_job_spec *s = fx_spec("typed", 8);

		s->server_type = strdup("atlas800");
		assert_int_equal(sched_job_submit(c, s, FX_UID, FX_GID, fx_now(), reason, &j),
				 -EINVAL);
		assert_non_null(strstr(reason, "no \"atlas800\" servers"));
	}
	/* a valid, fitting job still runs afterwards */
	fx_run(c, "ok", 32);
	assert_int_equal(c->npus_allocated, 32);
	fx_check(c);
	sched_cluster_free(c);
}

/* mkdir makes a draft; writing a spec by its owner (or root) submits the same job. */
static void test_job_draft_filled_by_submit(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *d = NULL, *j = NULL;

	(void)state;
	assert_int_equal(sched_job_create_draft(c, "exp", FX_UID, FX_GID, fx_now(), &d), 0);
	assert_non_null(d);
	assert_int_equal(d->state, SCHED_JOB_DRAFT);
	assert_null(d->spec);
	assert_int_equal(sched_job_create_draft(c, "exp", FX_UID, FX_GID, fx_now(), NULL), -EEXIST);
	assert_int_equal(sched_job_create_draft(c, "a/b", FX_UID, FX_GID, fx_now(), NULL), -EINVAL);
	fx_check(c);

	/* someone else may not fill it */
	assert_int_equal(sched_job_submit(c, fx_spec("exp", 2), FX_OTHER_UID, FX_GID, fx_now(),
					  reason, &j),
			 -EPERM);
	assert_non_null(strstr(reason, "belongs to uid 1000"));
	assert_int_equal(d->state, SCHED_JOB_DRAFT);
	assert_null(d->spec);

	j = fx_submit(c, "exp", 2);
	assert_ptr_equal(j, d);
	assert_int_equal(c->job_count, 1);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->uid, FX_UID);
	assert_non_null(j->spec);
	assert_int_equal(j->spec->npus, 2);

	/* root may fill another user's draft; the draft keeps its owner */
	assert_int_equal(sched_job_create_draft(c, "exp2", FX_UID, FX_GID, fx_now(), &d), 0);
	j = fx_submit_spec(c, fx_spec("exp2", 1), 0);
	assert_ptr_equal(j, d);
	assert_int_equal(j->uid, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	/* a draft can be cancelled */
	assert_int_equal(sched_job_create_draft(c, "exp3", FX_UID, FX_GID, fx_now(), NULL), 0);
	assert_int_equal(sched_job_cancel(c, "exp3", FX_UID, fx_now()), 0);
	assert_int_equal(sched_cluster_find_job(c, "exp3")->state, SCHED_JOB_CANCELLED);
	fx_check(c);
	sched_cluster_free(c);
}

/* A terminal job is replaced by a resubmission of its name; an active one is -EEXIST. */
static void test_job_terminal_replaced_by_resubmission(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;

	(void)state;
	fx_run(c, "a", 8);
	assert_int_equal(sched_job_submit(c, fx_spec("a", 4), FX_UID, FX_GID, fx_now(), reason,
					  &j),
			 -EEXIST);
	assert_non_null(strstr(reason, "already exists and is running"));
	assert_int_equal(sched_job_total_npus(sched_cluster_find_job(c, "a")), 8);
	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);

	j = fx_run(c, "a", 4);
	assert_int_equal(c->job_count, 1);
	/* generations go on from the old job's: its processes' reports cannot be mistaken */
	assert_int_equal(j->generation, 2);
	assert_int_equal(j->spec->npus, 4);
	assert_int_equal(sched_job_total_npus(j), 4);
	/*
	 * A rejected name too, by its owner or root; another user may neither take it over
	 * nor overwrite its reason (its record is the owner's).
	 */
	assert_int_equal(sched_job_reject(c, "r", FX_UID, FX_GID, "bad spec", fx_now()), 0);
	assert_int_equal(sched_job_submit(c, fx_spec("r", 2), FX_OTHER_UID, FX_GID, fx_now(),
					  reason, &j),
			 -EPERM);
	assert_int_equal(sched_job_reject(c, "r", FX_OTHER_UID, FX_GID, "other", fx_now()),
			 -EPERM);
	assert_string_equal(sched_cluster_find_job(c, "r")->reason, "bad spec");
	j = fx_submit_spec(c, fx_spec("r", 2), FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->uid, FX_UID);
	assert_int_equal(sched_job_complete(c, "r", FX_UID, fx_now()), 0);
	j = fx_submit_spec(c, fx_spec("r", 1), 0);
	assert_int_equal(j->uid, 0);
	assert_int_equal(c->job_count, 2);
	fx_check(c);
	sched_cluster_free(c);
}

/* A queue over quota waits with a reason and does not block other queues. */
static void test_job_quota_wait_does_not_block_other_queues(void **state)
{
	struct fx_opts o = { .servers = 4, .queues = queues_yaml, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *f3, *d1;

	(void)state;
	fx_submit_spec(c, fx_spec_full("f1", 8, "finetune", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("f2", 4, "finetune", 500), FX_UID);
	assert_int_equal(c->npus_allocated, 12);
	f3 = fx_submit_spec(c, fx_spec_full("f3", 8, "finetune", 500), FX_UID);
	assert_int_equal(f3->state, SCHED_JOB_PENDING);
	assert_string_equal(f3->reason, "queue finetune uses 12 of 16 NPUs; job needs 8");
	assert_int_equal(sched_job_total_npus(f3), 0);

	d1 = fx_submit_spec(c, fx_spec_full("d1", 8, NULL, 500), FX_UID);
	assert_int_equal(d1->state, SCHED_JOB_RUNNING);
	d1 = fx_submit_spec(c, fx_spec_full("r1", 8, "research", 500), FX_UID);
	assert_int_equal(d1->state, SCHED_JOB_RUNNING);
	assert_int_equal(f3->state, SCHED_JOB_PENDING);
	fx_check(c);

	assert_int_equal(sched_job_complete(c, "f2", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(f3->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);

	/* control: without enable_quota_limit the same job runs at once */
	o.quota = false;
	c = fx_cluster(&o);
	fx_submit_spec(c, fx_spec_full("f1", 8, "finetune", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("f2", 4, "finetune", 500), FX_UID);
	f3 = fx_submit_spec(c, fx_spec_full("f3", 8, "finetune", 500), FX_UID);
	assert_int_equal(f3->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

static void expect_gapless_events(const struct sched_cluster *c, uint64_t first)
{
	const struct sched_event *e;
	uint64_t seq = 0, count = 0;

	for (e = sched_event_next(c, 0); e; e = sched_event_next(c, seq)) {
		if (count == 0)
			assert_true(e->seq == first);
		else if (e->seq != seq + 1)
			fail_msg("event seq %llu follows %llu", (unsigned long long)e->seq,
				 (unsigned long long)seq);
		seq = e->seq;
		count++;
	}
	assert_true(seq == c->next_event_seq - 1);
	assert_true(count == c->next_event_seq - first);
}

/* Events carry consecutive sequence numbers 1, 2, 3 ... even after the ring wraps. */
static void test_job_events_consecutive(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	static const enum sched_event_kind want[] = {
		SCHED_EV_SUBMITTED, SCHED_EV_PLACED, SCHED_EV_CHECKPOINT, SCHED_EV_COMPLETED,
	};
	const struct sched_event *e;
	size_t k = 0;
	uint64_t rounds;

	(void)state;
	assert_null(sched_event_next(c, 0));
	fx_run(c, "a", 8);
	fx_submit(c, "b", 8);
	assert_int_equal(sched_job_checkpoint(c, "a", FX_UID, 5, "/ckpt/5", fx_now()), 0);
	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_reject(c, "x", FX_UID, FX_GID, "no", fx_now()), 0);
	assert_int_equal(sched_server_set_cordon(c, "node-0", true, false, fx_now()), 0);
	assert_int_equal(sched_job_remove(c, "b", FX_UID, fx_now()), 0);
	fx_check(c);
	expect_gapless_events(c, 1);
	for (e = sched_event_next(c, 0); e; e = sched_event_next(c, e->seq)) {
		if (strcmp(e->job, "a") != 0)
			continue;
		assert_true(k < 4);
		assert_int_equal(e->kind, want[k]);
		k++;
	}
	assert_int_equal(k, 4);

	/* wrap the ring of SCHED_EVENTS_MAX: the oldest go, numbering stays gapless */
	assert_int_equal(sched_server_set_cordon(c, "node-0", false, false, fx_now()), 0);
	rounds = SCHED_EVENTS_MAX / 3 + 100;
	for (uint64_t i = 0; i < rounds; i++) {
		fx_submit(c, "loop", 1);
		assert_int_equal(sched_job_complete(c, "loop", FX_UID, fx_now()), 0);
	}
	assert_true(c->next_event_seq - 1 > SCHED_EVENTS_MAX);
	assert_int_equal(c->event_count, SCHED_EVENTS_MAX);
	expect_gapless_events(c, c->next_event_seq - SCHED_EVENTS_MAX);
	/* asking for a dropped sequence number starts at the oldest kept */
	e = sched_event_next(c, 1);
	assert_non_null(e);
	assert_true(e->seq == c->next_event_seq - SCHED_EVENTS_MAX);
	fx_check(c);
	sched_cluster_free(c);
}

/* The newest checkpoint step wins; older reports never replace it. */
static void test_job_checkpoint_keeps_newest(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	struct sched_job *a;
	uint64_t seq;

	(void)state;
	a = fx_run(c, "a", 8);
	assert_int_equal(a->checkpoint_step, 0);
	assert_null(a->checkpoint_path);
	assert_int_equal(sched_job_checkpoint(c, "a", FX_UID, 100, "/ckpt/100", fx_now()), 0);
	assert_int_equal(a->checkpoint_step, 100);
	assert_string_equal(a->checkpoint_path, "/ckpt/100");
	assert_int_equal(last_event(c)->kind, SCHED_EV_CHECKPOINT);

	seq = c->next_event_seq;
	assert_int_equal(sched_job_checkpoint(c, "a", FX_UID, 50, "/ckpt/50", fx_now()), 0);
	assert_int_equal(a->checkpoint_step, 100);
	assert_string_equal(a->checkpoint_path, "/ckpt/100");
	assert_true(c->next_event_seq == seq);

	assert_int_equal(sched_job_checkpoint(c, "a", FX_UID, 200, "/ckpt/200", fx_now()), 0);
	assert_int_equal(a->checkpoint_step, 200);
	assert_string_equal(a->checkpoint_path, "/ckpt/200");
	assert_int_equal(sched_job_checkpoint(c, "a", FX_UID, 300, "ckpt/300", fx_now()), -EINVAL);
	assert_int_equal(sched_job_checkpoint(c, "a", FX_UID, 300, NULL, fx_now()), -EINVAL);
	assert_int_equal(sched_job_checkpoint(c, "nosuch", FX_UID, 1, "/x", fx_now()), -ENOENT);
	assert_int_equal(a->checkpoint_step, 200);
	/* root may report one */
	assert_int_equal(sched_job_checkpoint(c, "a", 0, 250, "/ckpt/250", fx_now()), 0);
	assert_int_equal(a->checkpoint_step, 250);
	fx_check(c);
	sched_cluster_free(c);
}

/* rmdir of an active job cancels it, frees its NPUs and forgets it. */
static void test_job_remove_active(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	struct sched_job *b;

	(void)state;
	fx_run(c, "a", 8);
	b = fx_submit(c, "b", 8);
	assert_int_equal(sched_job_remove(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_null(sched_cluster_find_job(c, "a"));
	assert_int_equal(last_event(c)->kind, SCHED_EV_PLACED);
	assert_int_equal(b->state, SCHED_JOB_RUNNING);
	assert_int_equal(c->job_count, 1);
	assert_int_equal(sched_job_remove(c, "a", FX_UID, fx_now()), -ENOENT);
	assert_int_equal(sched_job_complete(c, "b", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_remove(c, "b", FX_UID, fx_now()), 0);
	assert_int_equal(last_event(c)->kind, SCHED_EV_REMOVED);
	assert_int_equal(c->job_count, 0);
	assert_int_equal(c->npus_allocated, 0);
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * A job that cannot fit even if every running job ended (its servers are cordoned) says
 * so and does not hold the line: the small job behind it starts.
 */
static void test_job_blocker_on_cordoned_capacity_lets_others_start(void **state)
{
	struct sched_cluster *c = cluster_of(2);
	struct sched_job *big, *small;

	(void)state;
	assert_int_equal(sched_server_set_cordon(c, "node-1", true, false, fx_now()), 0);
	big = fx_submit(c, "big", 16);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	expect_reason(big, "cannot fit until cordoned");
	small = fx_submit(c, "small", 1);
	assert_int_equal(small->state, SCHED_JOB_RUNNING);
	/* uncordon: the big job still waits for the small one, which now holds the line */
	assert_int_equal(sched_server_set_cordon(c, "node-1", false, false, fx_now()), 0);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	expect_reason(big, "needs 16 NPUs on 2 whole");
	assert_int_equal(sched_job_complete(c, "small", FX_UID, fx_now()), 0);
	assert_int_equal(big->state, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* A blocker holds the line only for jobs that compete for the same kind of server. */
static void test_job_blocker_blocks_only_its_server_type(void **state)
{
	static const char yaml[] =
		"cluster:\n  name: mixed\nservers:\n"
		"  - {name: a2-1, host_ip: 10.0.0.1, type: atlas800t-a2, switch: s1}\n"
		"  - {name: a2-2, host_ip: 10.0.0.2, type: atlas800t-a2, switch: s1}\n"
		"  - {name: x910-1, host_ip: 10.0.0.3, type: atlas800, switch: s2}\n";
	struct conf_cluster *conf = NULL;
	struct conf_error err;
	struct sched_cluster *c = NULL;
	struct conf_job_spec *spec;
	struct sched_job *big, *j;

	(void)state;
	assert_int_equal(conf_cluster_parse(yaml, sizeof(yaml) - 1, "mixed.yaml", &conf, &err), 0);
	assert_int_equal(sched_cluster_new(conf, &c), 0);
	spec = fx_spec("a2busy", 1);
	spec->server_type = strdup("atlas800t-a2");
	fx_submit_spec(c, spec, FX_UID);
	spec = fx_spec("big", 16);
	spec->server_type = strdup("atlas800t-a2");
	big = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	/* a 910 job competes for other servers: it starts */
	spec = fx_spec("on910", 8);
	spec->server_type = strdup("atlas800");
	j = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	/* a job that could use A2 servers waits behind the blocker */
	j = fx_submit(c, "any", 1);
	assert_int_equal(j->state, SCHED_JOB_PENDING);
	expect_reason(j, "behind job \"big\"");
	fx_check(c);
	sched_cluster_free(c);
}

/* With quotas on, a job larger than its queue's quota is refused at submission. */
static void test_job_over_quota_refused_at_submit(void **state)
{
	struct fx_opts o = { .servers = 4, .queues = queues_yaml, .quota = true };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_job_submit(c, fx_spec_full("huge", 24, "finetune", 500), FX_UID,
					  FX_GID, fx_now(), reason, NULL),
			 -ENOSPC);
	assert_non_null(strstr(reason, "quota of 16 NPUs"));
	assert_null(sched_cluster_find_job(c, "huge"));
	sched_cluster_free(c);
}

/*
 * max_job_count (Slurm's MaxJobCount): at the limit the finished record that ended first
 * is dropped (a "removed" event says why); with every record active a submission is
 * refused with -EAGAIN and the reason, and nothing changes.
 */
static void test_job_count_limit(void **state)
{
	struct sched_cluster *c = cluster_of(4);
	char reason[SCHED_REASON_MAX] = "";
	uint64_t seq;

	(void)state;
	c->conf->max_job_count = 3;
	fx_run(c, "a", 1);
	fx_run(c, "b", 1);
	fx_run(c, "d", 1);
	seq = c->next_event_seq;
	assert_int_equal(sched_job_submit(c, fx_spec("e", 1), FX_UID, FX_GID, fx_now(), reason,
					  NULL),
			 -EAGAIN);
	assert_non_null(strstr(reason, "max_job_count"));
	assert_null(sched_cluster_find_job(c, "e"));
	assert_int_equal(c->job_count, 3);
	assert_true(c->next_event_seq == seq);
	/* a rejection needs a record too: refused the same way */
	assert_int_equal(sched_job_reject(c, "e", FX_UID, FX_GID, "bad", fx_now()), -EAGAIN);

	assert_int_equal(sched_job_complete(c, "b", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), 0);
	fx_run(c, "e", 1);
	/* b ended first: its record went, a's stays */
	assert_null(sched_cluster_find_job(c, "b"));
	assert_non_null(sched_cluster_find_job(c, "a"));
	assert_int_equal(c->job_count, 3);
	{
		const struct sched_event *e;
		bool dropped = false;

		for (e = sched_event_next(c, seq - 1); e; e = sched_event_next(c, e->seq))
			dropped |= e->kind == SCHED_EV_REMOVED && strcmp(e->job, "b") == 0 &&
				   strstr(e->reason, "max_job_count") != NULL;
		assert_true(dropped);
	}
	/* replacing a finished record of the same name needs no room */
	fx_run(c, "a", 1);
	assert_int_equal(c->job_count, 3);
	fx_check(c);
	sched_cluster_free(c);
}

/* Checkpoints are for active jobs; a finished job answers EBUSY. */
static void test_job_checkpoint_refused_when_finished(void **state)
{
	struct sched_cluster *c = cluster_of(1);

	(void)state;
	fx_run(c, "done", 1);
	assert_int_equal(sched_job_complete(c, "done", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_checkpoint(c, "done", FX_UID, 5, "/ckpt/5.ckpt", fx_now()),
			 -EBUSY);
	assert_null(sched_cluster_find_job(c, "done")->checkpoint_path);
	sched_cluster_free(c);
}

/* Jobs whose rank 0 shares a server get distinct MS_SCHED_PORTs, wrapping past 65535. */
static void test_job_sched_ports_unique_near_the_top(void **state)
{
	struct fx_opts o = { .servers = 1, .scheduler_port = 65534 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned ports[4];

	(void)state;
	for (unsigned k = 0; k < 4; k++) {
		char name[16];

		snprintf(name, sizeof(name), "p%u", k);
		ports[k] = fx_run(c, name, 1)->sched_port;
	}
	assert_int_equal(ports[0], 65534);
	assert_int_equal(ports[1], 65535);
	assert_int_equal(ports[2], 1024);
	assert_int_equal(ports[3], 1025);
	sched_cluster_free(c);
}


/* A report naming NPU @npu of server @server at @level, sent at @now. */
static void report_level(struct sched_cluster *c, unsigned server, unsigned npu,
			 enum conf_health_level level, uint64_t now)
{
	struct conf_health_report r = { .npu_count = 1 };

	r.npus[0].id = npu;
	r.npus[0].has_level = true;
	r.npus[0].level = level;
	snprintf(r.npus[0].code, sizeof(r.npus[0].code), "0x80C98000");
	assert_int_equal(sched_server_report(c, server, &r, now), 0);
	fx_check(c);
}

/* jobs/<name>/history as parsed JSON lines (a new array). */
static json_t *history_of(const struct sched_cluster *c, const struct sched_job *j)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	json_t *arr = json_array();

	assert_int_equal(sched_render_job_history(c, j, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_error_t err;
		json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &err);

		if (!o)
			fail_msg("history line is not JSON: %s: %s", err.text, line);
		json_array_append_new(arr, o);
	}
	free(text);
	return arr;
}

static const char *hstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		fail_msg("history: %s is not a string", key);
	return json_string_value(v);
}

/* status.json's value of @key (a string or null -> NULL), copied to @buf. */
static const char *status_time(const struct sched_cluster *c, const struct sched_job *j,
			       const char *key, char *buf, size_t len)
{
	char *text = NULL;
	size_t n = 0;
	json_t *o, *v;

	assert_int_equal(sched_render_job_status_json(c, j, &text, &n), 0);
	o = json_loads(text, 0, NULL);
	assert_non_null(o);
	v = json_object_get(o, key);
	if (!json_is_string(v) && !json_is_null(v))
		fail_msg("status.json: %s is neither a string nor null", key);
	snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
	json_decref(o);
	free(text);
	return buf[0] ? buf : NULL;
}

/*
 * Every generation is a record of jobs/<name>/history: its servers and device ids,
 * start, end, how it ended and the exit status; status.json's `started` stays the first
 * start while `generation_started` follows the generations.
 */
static void test_job_history_every_generation(void **state)
{
	struct sched_cluster *c = cluster_of(2);
	struct sched_job *j;
	char reason[SCHED_REASON_MAX], first[64], t[64], g1[64];
	unsigned srv0, bad;
	json_t *h, *r;

	(void)state;
	j = fx_run(c, "hist", 8);
	srv0 = j->slices[0].server;
	status_time(c, j, "started", first, sizeof(first));
	assert_non_null(status_time(c, j, "generation_started", g1, sizeof(g1)));
	h = history_of(c, j);
	assert_int_equal(json_array_size(h), 1);
	r = json_array_get(h, 0);
	assert_int_equal(json_integer_value(json_object_get(r, "generation")), 1);
	assert_string_equal(hstr(r, "state"), "running");
	assert_true(json_is_null(json_object_get(r, "end")));
	assert_true(json_is_null(json_object_get(r, "exit_code")));
	json_decref(h);

	/* generation 1: a task fault, restarted on the same NPUs */
	assert_int_equal(sched_job_process_exit(c, "hist", FX_UID, 1, fx_server_name(c, srv0), -1,
						 3, fx_now(), reason),
			 0);
	assert_int_equal(j->generation, 2);
	/* generation 2: an NPU fault moves it to the other server */
	bad = j->slices[0].device_ids[5];
	report_level(c, srv0, bad, CONF_HEALTH_CRITICAL, fx_now());
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 3);
	assert_int_not_equal(j->slices[0].server, srv0);
	assert_string_equal(status_time(c, j, "started", t, sizeof(t)), first);
	assert_string_not_equal(status_time(c, j, "generation_started", t, sizeof(t)), g1);
	/* generation 3: every process exits 0 */
	assert_int_equal(sched_job_process_exit(c, "hist", FX_UID, 3,
						 fx_server_name(c, j->slices[0].server), -1, 0,
						 fx_now(), reason),
			 0);
	assert_int_equal(j->state, SCHED_JOB_COMPLETED);
	assert_string_equal(status_time(c, j, "started", t, sizeof(t)), first);

	h = history_of(c, j);
	assert_int_equal(json_array_size(h), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *pl;

		r = json_array_get(h, i);
		assert_string_equal(hstr(r, "job"), "hist");
		assert_int_equal(json_integer_value(json_object_get(r, "generation")), i + 1);
		assert_int_equal(json_integer_value(json_object_get(r, "npus")), 8);
		hstr(r, "start");
		hstr(r, "end"); /* every one has ended */
		assert_true(json_is_integer(json_object_get(r, "elapsed_sec")));
		pl = json_object_get(r, "placement");
		assert_int_equal(json_array_size(pl), 1);
		assert_string_equal(hstr(json_array_get(pl, 0), "server"),
				    fx_server_name(c, i < 2 ? srv0 : 1 - srv0));
		assert_int_equal(json_array_size(json_object_get(json_array_get(pl, 0),
								 "device_ids")),
				 8);
	}
	assert_string_equal(hstr(json_array_get(h, 0), "start"), first);
	r = json_array_get(h, 0);
	assert_string_equal(hstr(r, "state"), "failed");
	assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 3);
	assert_non_null(strstr(hstr(r, "reason"), "exited with status 3"));
	r = json_array_get(h, 1);
	assert_string_equal(hstr(r, "state"), "node_fail");
	assert_true(json_is_null(json_object_get(r, "exit_code")));
	snprintf(t, sizeof(t), "NPU %u of %s", bad, fx_server_name(c, srv0));
	assert_non_null(strstr(hstr(r, "reason"), t));
	r = json_array_get(h, 2);
	assert_string_equal(hstr(r, "state"), "completed");
	assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 0);
	json_decref(h);
	sched_cluster_free(c);
}

/* Preemption, time limit and cancel each end a generation with their own word. */
static void test_job_history_stop_causes(void **state)
{
	struct fx_opts o = { .servers = 1, .grace_sec = 30 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *spec = fx_spec_full("low", 8, NULL, 100);
	struct sched_job *low, *high;
	uint64_t now;
	json_t *h;

	(void)state;
	low = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(low->state, SCHED_JOB_RUNNING);
	high = fx_submit_spec(c, fx_spec_full("high", 8, NULL, 900), FX_UID);
	assert_int_equal(low->state, SCHED_JOB_STOPPING);
	h = history_of(c, low);
	assert_string_equal(hstr(json_array_get(h, 0), "state"), "stopping");
	assert_true(json_is_null(json_object_get(json_array_get(h, 0), "end")));
	json_decref(h);
	now = low->stop_deadline_usec + 1;
	sched_tick(c, now);
	assert_int_equal(high->state, SCHED_JOB_RUNNING);
	h = history_of(c, low);
	assert_int_equal(json_array_size(h), 1);
	assert_string_equal(hstr(json_array_get(h, 0), "state"), "preempted");
	hstr(json_array_get(h, 0), "end");
	json_decref(h);
	assert_int_equal(sched_job_cancel(c, "high", FX_UID, now + 1000000), 0);
	fx_check(c);
	h = history_of(c, high);
	assert_int_equal(json_array_size(h), 1);
	if (high->state == SCHED_JOB_CANCELLED || high->state == SCHED_JOB_STOPPING)
		assert_string_equal(hstr(json_array_get(h, 0), "state"),
				    high->state == SCHED_JOB_CANCELLED ? "cancelled" : "stopping");
	json_decref(h);
	sched_cluster_free(c);
}

/* A job restarted more often than SCHED_JOB_RUNS_MAX keeps its first and newest runs. */
static void test_job_history_bounded(void **state)
{
	struct sched_cluster *c = cluster_of(1);
	struct conf_job_spec *spec = fx_spec("many", 8);
	char reason[SCHED_REASON_MAX];
	struct sched_job *j;
	unsigned gens = SCHED_JOB_RUNS_MAX + 9;

	(void)state;
	spec->max_restarts = 1000;
	j = fx_submit_spec(c, spec, FX_UID);
	for (unsigned g = 1; g < gens; g++)
		assert_int_equal(sched_job_process_exit(c, "many", FX_UID, g, fx_server_name(c, 0),
							 -1, 1, fx_now(), reason),
				 0);
	assert_int_equal(j->generation, gens);
	assert_int_equal(j->run_count, SCHED_JOB_RUNS_MAX);
	assert_int_equal(j->runs[0].generation, 1);
	assert_int_equal(j->runs[1].generation, gens - SCHED_JOB_RUNS_MAX + 2);
	assert_int_equal(j->runs[SCHED_JOB_RUNS_MAX - 1].generation, gens);
	assert_int_equal(j->runs_dropped, gens - SCHED_JOB_RUNS_MAX);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_submit_runs),
		cmocka_unit_test(test_job_fifo_head_of_line_blocker),
		cmocka_unit_test(test_job_priority_order),
		cmocka_unit_test(test_job_cancel_frees_and_starts_next),
		cmocka_unit_test(test_job_complete_only_running),
		cmocka_unit_test(test_job_owner_permissions),
		cmocka_unit_test(test_job_reject_changes_nothing),
		cmocka_unit_test(test_job_unknown_queue_lists_known),
		cmocka_unit_test(test_job_never_fits_refused),
		cmocka_unit_test(test_job_draft_filled_by_submit),
		cmocka_unit_test(test_job_terminal_replaced_by_resubmission),
		cmocka_unit_test(test_job_quota_wait_does_not_block_other_queues),
		cmocka_unit_test(test_job_events_consecutive),
		cmocka_unit_test(test_job_checkpoint_keeps_newest),
		cmocka_unit_test(test_job_remove_active),
		cmocka_unit_test(test_job_blocker_on_cordoned_capacity_lets_others_start),
		cmocka_unit_test(test_job_blocker_blocks_only_its_server_type),
		cmocka_unit_test(test_job_over_quota_refused_at_submit),
		cmocka_unit_test(test_job_count_limit),
		cmocka_unit_test(test_job_checkpoint_refused_when_finished),
		cmocka_unit_test(test_job_sched_ports_unique_near_the_top),
		cmocka_unit_test(test_job_history_every_generation),
		cmocka_unit_test(test_job_history_stop_causes),
		cmocka_unit_test(test_job_history_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
