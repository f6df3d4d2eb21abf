/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of gang placement (sched/sched_place.c) against the topology rules of
 * design.md §5: 910 HCCS ring preferences, node order, 910B best fit, A3 pairs, whole
 * servers and switch locality for multi-server jobs, gang all-or-nothing, rank order,
 * topology-blind first fit and allow_mix_task.
 *
 * Ring occupancy is set up either by isolating NPUs (exact free counts per ring; every
 * candidate server is then equally "unhealthy", which the node-order tests avoid) or by
 * running small jobs, steered to a server by cordoning the others (fx_run_on).
 * sched_check_invariants() is checked after every step that changes the cluster.
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
#include "sched_internal.h"
#include "test_util.h"

/* One Atlas 800 (910) server whose ring r has free[r] free NPUs: the LOWEST ids of each
 * ring are isolated, so ring r's free NPUs are r*4+(4-free[r]) .. r*4+3. */
static struct sched_cluster *ring_cluster(unsigned free0, unsigned free1)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned free_of[2] = { free0, free1 };

	for (unsigned r = 0; r < 2; r++)
		for (unsigned d = 0; d < 4 - free_of[r]; d++)
			fx_isolate(c, 0, r * 4 + d);
	assert_int_equal(c->servers[0].npus_free, free0 + free1);
	return c;
}

/* The @n lowest free ids of ring @r in ring_cluster(), as "a,b". */
static void ring_ids(unsigned r, unsigned nfree, unsigned n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned k = 0; k < n; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", k ? "," : "",
					r * 4 + (4 - nfree) + k);
}

struct ring_case {
	unsigned free0, free1;	/* free NPUs of ring 0 and ring 1 */
	unsigned want_ring;
};

static void check_ring_cases(unsigned npus, const struct ring_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct ring_case *k = &cases[i];
		struct sched_cluster *c = ring_cluster(k->free0, k->free1);
		unsigned nfree = k->want_ring ? k->free1 : k->free0;
		char want[64];

		ring_ids(k->want_ring, nfree, npus, want, sizeof(want));
		print_message("  %u NPU(s), ring free %u/%u -> ring %u [%s]\n", npus, k->free0,
			      k->free1, k->want_ring, want);
		fx_expect_place(c, npus, 0, want);
		sched_cluster_free(c);
	}
}

/* 1 NPU: a ring with 1 free, then 3, then 2, then 4 (each pair in both positions). */
static void test_ring910_one_npu_preference(void **state)
{
	static const struct ring_case cases[] = {
		{ 1, 3, 0 }, { 3, 1, 1 }, /* 1 before 3 */
		{ 1, 2, 0 }, { 2, 1, 1 }, /* 1 before 2 */
		{ 1, 4, 0 }, { 4, 1, 1 }, /* 1 before 4 */
		{ 3, 2, 0 }, { 2, 3, 1 }, /* 3 before 2 */
		{ 3, 4, 0 }, { 4, 3, 1 }, /* 3 before 4 */
		{ 2, 4, 0 }, { 4, 2, 1 }, /* 2 before 4 */
		{ 4, 4, 0 },		  /* tie: lower ring */
		{ 0, 4, 1 }, { 0, 2, 1 }, /* a full ring is skipped */
	};

	(void)state;
	check_ring_cases(1, cases, sizeof(cases) / sizeof(cases[0]));
}

/* 2 NPUs: a ring with 2 free, then 4, then 3; a ring with 1 free cannot hold them. */
static void test_ring910_two_npu_preference(void **state)
{
	static const struct ring_case cases[] = {
		{ 2, 4, 0 }, { 4, 2, 1 }, /* 2 before 4 */
		{ 2, 3, 0 }, { 3, 2, 1 }, /* 2 before 3 */
		{ 4, 3, 0 }, { 3, 4, 1 }, /* 4 before 3 */
		{ 1, 3, 1 }, { 3, 1, 0 }, /* 1 free is too few */
		{ 1, 4, 1 }, { 2, 2, 0 },
	};

	(void)state;
	check_ring_cases(2, cases, sizeof(cases) / sizeof(cases[0]));
}

/* 1-NPU jobs run one after another fill a started ring before opening a new one. */
static void test_ring910_one_npu_jobs_pack_rings(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const names[] = { "a", "b", "c", "d", "e" };
	static const char *const want[] = { "0", "1", "2", "3", "4" };

	(void)state;
	for (size_t i = 0; i < 5; i++)
		fx_expect_slice(fx_run(c, names[i], 1), 0, 0, want[i]);
	/* ring 0 now has 1 free (id 1), ring 1 has 3 free: the 1-free ring wins */
	assert_int_equal(fx_cancel(c, "b", FX_UID, fx_now()), 0);
	fx_check(c);
	fx_expect_slice(fx_run(c, "f", 1), 0, 0, "1");
	/* a 2-NPU job: ring 0 full, ring 1 has 3 free -> its two lowest */
	fx_expect_slice(fx_run(c, "g", 2), 0, 0, "5,6");
	/* ring 1 has 1 free: a 2-NPU job must wait rather than cross rings */
	assert_int_equal(fx_submit(c, "h", 2)->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_total_npus(sched_cluster_find_job(c, "h")), 0);
	fx_check(c);
	sched_cluster_free(c);
}

/* 4 NPUs take one whole free ring. */
static void test_ring910_four_npus_take_whole_ring(void **state)
{
	static const struct ring_case cases[] = {
		{ 3, 4, 1 }, { 4, 3, 0 }, { 4, 4, 0 }, { 1, 4, 1 },
	};
	struct sched_cluster *c;

	(void)state;
	check_ring_cases(4, cases, sizeof(cases) / sizeof(cases[0]));
	/* 6 NPUs free, but no ring has 4 */
	c = ring_cluster(3, 3);
	fx_expect_no_place(c, 4, -ENOSPC, "HCCS ring");
	sched_cluster_free(c);
	/* with jobs: 4 then 4 fill ring 0 then ring 1 */
	{
		struct fx_opts o = { .type = "atlas800", .servers = 1 };

		c = fx_cluster(&o);
		fx_expect_slice(fx_run(c, "a", 4), 0, 0, "0,1,2,3");
		fx_expect_slice(fx_run(c, "b", 4), 0, 0, "4,5,6,7");
		sched_cluster_free(c);
	}
}

/* 3 NPUs (and 5-7) are never legal on a 910 server: -EINVAL naming the legal sizes. */
static void test_ring910_three_npus_rejected(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;
	unsigned version = 0;

	(void)state;
	fx_expect_no_place(c, 3, -EINVAL, "1, 2, 4 or 8");
	fx_expect_no_place(c, 5, -EINVAL, "1, 2, 4 or 8");
	fx_expect_no_place(c, 6, -EINVAL, "1, 2, 4 or 8");
	fx_expect_no_place(c, 7, -EINVAL, "1, 2, 4 or 8");
	assert_int_equal(sched_check_feasible(c, 3, NULL, reason), -EINVAL);
	assert_non_null(strstr(reason, "1, 2, 4 or 8"));

	version = (unsigned)c->version;
	reason[0] = '\0';
	assert_int_equal(sched_job_submit(c, fx_spec("three", 3), FX_UID, FX_GID, fx_now(),
					  reason, &j),
			 -EINVAL);
	assert_non_null(strstr(reason, "1, 2, 4 or 8"));
	assert_null(sched_cluster_find_job(c, "three"));
	assert_int_equal(c->npus_allocated, 0);
	assert_int_equal((unsigned)c->version, version);
	fx_check(c);
	sched_cluster_free(c);
}

/* A sub-server 910 request never spans both rings, whatever the free count. */
static void test_ring910_never_crosses_rings(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 4, .switches = 2 };
	static const unsigned sizes[] = { 1, 2, 4, 8 };
	struct sched_cluster *c;
	uint64_t rng = 0x910910910ull;
	unsigned placed = 0, waited = 0;

	(void)state;
	c = ring_cluster(2, 2); /* ids 2,3 and 6,7 free */
	fx_expect_no_place(c, 4, -ENOSPC, "HCCS ring");
	fx_expect_place(c, 2, 0, "2,3");
	sched_cluster_free(c);
	c = ring_cluster(1, 1);
	fx_expect_no_place(c, 2, -ENOSPC, "HCCS ring");
	sched_cluster_free(c);

	/* random submissions and cancellations; every placement stays inside one ring */
	c = fx_cluster(&o);
	for (unsigned step = 0; step < 600; step++) {
		char name[32];

		if (fx_rand(&rng) % 2 == 0 && c->npus_allocated) {
			/* complete a random running job */
			struct sched_job *v;

			do
				v = c->jobs[fx_rand(&rng) % c->job_count];
			while (v->state != SCHED_JOB_RUNNING);
			assert_int_equal(fx_complete(c, v->name, FX_UID, fx_now()), 0);
		} else {
			struct sched_job *j;

			snprintf(name, sizeof(name), "j%u", step);
			j = fx_submit(c, name, sizes[fx_rand(&rng) % 4]);
			if (j->state == SCHED_JOB_RUNNING) {
				placed++;
			} else {
				/* no room now: withdraw it, so that FIFO does not stall the rest */
				waited++;
				assert_int_equal(fx_cancel(c, name, FX_UID, fx_now()), 0);
			}
		}
		fx_check(c);
		for (size_t i = 0; i < c->job_count; i++) {
			const struct sched_job *j = c->jobs[i];

			for (size_t k = 0; k < j->slice_count; k++) {
				const struct sched_slice *sl = &j->slices[k];
				unsigned ring = sl->device_ids[0] / 4;

				assert_true(sl->npu_count == 1 || sl->npu_count == 2 ||
					    sl->npu_count == 4 || sl->npu_count == 8);
				if (sl->npu_count == 8)
					continue;
				for (unsigned d = 0; d < sl->npu_count; d++)
					if (sl->device_ids[d] / 4 != ring)
						fail_msg("job %s crosses rings on %s", j->name,
							 fx_server_name(c, sl->server));
			}
		}
	}
	print_message("  %u jobs placed, %u found no room\n", placed, waited);
	assert_true(placed > 150 && waited > 20);
	sched_cluster_free(c);
}

/* Node order 1: all-healthy servers before any server with a Warning or isolated NPU. */
static void test_node_order_healthy_first(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	fx_run_on(c, "a", 4, 0);
	/* control: both healthy, the fuller server 0 wins */
	fx_expect_place(c, 1, 0, "4");
	/* a Warning NPU (still placeable) makes server 0 second choice despite being fuller */
	fx_set_health(c, 0, 7, SCHED_HEALTH_WARNING);
	assert_int_equal(c->servers[0].npus_free, 4);
	fx_expect_place(c, 1, 1, "0");
	fx_expect_place(c, 4, 1, "0,1,2,3");
	/* the unhealthy server is still used when it is the only one that fits */
	fx_run_on(c, "b", 6, 1);
	fx_expect_place(c, 4, 0, "4,5,6,7");
	fx_set_health(c, 0, 7, SCHED_HEALTH_OK);
	assert_int_equal(fx_cancel(c, "b", FX_UID, fx_now()), 0);
	fx_check(c);
	/* an isolated NPU counts as unhealthy too */
	fx_isolate(c, 0, 7);
	fx_expect_place(c, 1, 1, "0");
	sched_cluster_free(c);
}

/* Node order 2 (910): the best ring fit comes before the fullest server. */
static void test_node_order_ring_fit_before_fullest(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	/* server 0: ring 0 full, ring 1 all free (4 free; best ring for 1 NPU: 4 free) */
	fx_expect_slice(fx_run_on(c, "a", 4, 0), 0, 0, "0,1,2,3");
	/* server 1: ring 0 with 1 free, ring 1 all free (5 free; best ring: 1 free) */
	fx_expect_slice(fx_run_on(c, "b", 2, 1), 0, 1, "0,1");
	fx_expect_slice(fx_run_on(c, "c", 1, 1), 0, 1, "2");
	assert_int_equal(c->servers[0].npus_free, 4);
	assert_int_equal(c->servers[1].npus_free, 5);
	/* server 0 is fuller, but server 1 has the ring with exactly 1 free */
	fx_expect_place(c, 1, 1, "3");
	/* for 2 NPUs both servers offer only a 4-free ring: then the fuller server 0 */
	fx_expect_place(c, 2, 0, "4,5");
	sched_cluster_free(c);
}

/* Node order 3: among equally healthy servers, the fullest that fits (best fit). */
static void test_node_order_fullest_server(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	fx_run_on(c, "a", 5, 1); /* server 1: 3 free */
	fx_run_on(c, "b", 2, 2); /* server 2: 6 free */
	fx_expect_place(c, 1, 1, "5");
	fx_expect_place(c, 3, 1, "5,6,7");
	fx_expect_place(c, 4, 2, "2,3,4,5");
	fx_expect_place(c, 6, 2, "2,3,4,5,6,7");
	fx_expect_place(c, 7, 0, "0,1,2,3,4,5,6");
	fx_expect_place(c, 8, 0, "0,1,2,3,4,5,6,7");
	/* and the job really goes there */
	fx_expect_slice(fx_run(c, "c", 1), 0, 1, "5");
	sched_cluster_free(c);
}

/* 910B: any count on one server, the lowest free device ids, best-fit server. */
static void test_910b_best_fit_lowest_free_ids(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	fx_expect_slice(fx_run(c, "a", 2), 0, 0, "0,1");
	fx_expect_slice(fx_run(c, "b", 2), 0, 0, "2,3");
	fx_expect_slice(fx_run(c, "c", 1), 0, 0, "4");
	assert_int_equal(fx_cancel(c, "b", FX_UID, fx_now()), 0);
	fx_check(c);
	/* free on server 0: 2,3,5,6,7 -> lowest three, not a contiguous run */
	fx_expect_slice(fx_run(c, "d", 3), 0, 0, "2,3,5");
	/* 5 NPUs no longer fit server 0 (2 free): the empty server 1 */
	fx_expect_slice(fx_run(c, "e", 5), 0, 1, "0,1,2,3,4");
	/* 2 NPUs: server 0 (2 free) is the tightest fit, ahead of server 1 (3 free) */
	fx_expect_slice(fx_run(c, "f", 2), 0, 0, "6,7");
	fx_expect_slice(fx_run(c, "g", 3), 0, 1, "5,6,7");
	assert_int_equal(c->npus_allocated, 16);
	fx_check(c);
	sched_cluster_free(c);
}

static struct sched_cluster *a3_cluster(unsigned servers)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = servers };

	return fx_cluster(&o);
}

/* A3: even requests take whole pairs of dies, never two halves of different pairs. */
static void test_a3_even_requests_take_whole_pairs(void **state)
{
	struct sched_cluster *c = a3_cluster(1);

	(void)state;
	fx_expect_slice(fx_run(c, "a", 1), 0, 0, "0");
	/* pair 0-1 is half used: a 2-NPU job takes the whole pair 2-3 */
	fx_expect_slice(fx_run(c, "b", 2), 0, 0, "2,3");
	fx_expect_slice(fx_run(c, "c", 4), 0, 0, "4,5,6,7");
	fx_check(c);
	sched_cluster_free(c);

	/* only half pairs free (8 dies): an even request cannot be placed, an odd one can */
	c = a3_cluster(1);
	for (unsigned d = 0; d < 16; d += 2)
		fx_isolate(c, 0, d);
	fx_expect_no_place(c, 2, -ENOSPC, NULL);
	fx_expect_no_place(c, 4, -ENOSPC, NULL);
	fx_expect_place(c, 1, 0, "1");
	sched_cluster_free(c);

	/* odd requests: whole pairs plus one die */
	c = a3_cluster(1);
	fx_expect_slice(fx_run(c, "a", 3), 0, 0, "0,1,2");
	/* the single die comes from the half-used pair 2-3 */
	fx_expect_slice(fx_run(c, "b", 3), 0, 0, "3,4,5");
	fx_expect_slice(fx_run(c, "c", 2), 0, 0, "6,7");
	sched_cluster_free(c);
}

/* A3: one die prefers the free half of a pair whose other die is used. */
static void test_a3_single_prefers_half_used_pair(void **state)
{
	struct sched_cluster *c = a3_cluster(1);

	(void)state;
	fx_expect_slice(fx_run(c, "a", 2), 0, 0, "0,1");
	fx_expect_slice(fx_run(c, "b", 2), 0, 0, "2,3");
	fx_expect_slice(fx_run(c, "c", 1), 0, 0, "4");
	fx_expect_slice(fx_run(c, "d", 2), 0, 0, "6,7");
	assert_int_equal(fx_cancel(c, "b", FX_UID, fx_now()), 0);
	fx_check(c);
	/* free: 2,3 (whole pair), 5 (half of a used pair), 8-15: take 5 */
	fx_expect_place(c, 1, 0, "5");
	fx_expect_slice(fx_run(c, "e", 1), 0, 0, "5");
	/* no half pair left: the lowest free die */
	fx_expect_slice(fx_run(c, "f", 1), 0, 0, "2");
	/* now die 3 is the free half of pair 2-3 */
	fx_expect_slice(fx_run(c, "g", 1), 0, 0, "3");
	sched_cluster_free(c);

	/* across servers: the server with a half-used pair wins over an empty one */
	c = a3_cluster(2);
	fx_run_on(c, "a", 1, 1);
	fx_expect_place(c, 1, 1, "1");
	sched_cluster_free(c);
}

/* Multi-server jobs take whole, entirely free servers; partly used ones are skipped. */
static void test_multi_takes_whole_servers(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	fx_run_on(c, "small", 1, 1);
	j = fx_run(c, "big", 16);
	assert_int_equal(j->slice_count, 2);
	fx_expect_slice(j, 0, 0, "0,1,2,3,4,5,6,7");
	fx_expect_slice(j, 1, 2, "0,1,2,3,4,5,6,7");
	assert_int_equal(j->slices[1].first_rank, 8);
	/* 7 free NPUs on server 1 + 8 on server 3 are not 16 whole */
	fx_expect_no_place(c, 16, -ENOSPC, "needs 16 NPUs");
	fx_expect_place(c, 8, 3, "0,1,2,3,4,5,6,7");
	sched_cluster_free(c);
}

/* 12 NPUs on 8-NPU servers: never legal, -EINVAL with the multiple-of-8 sentence. */
static void test_multi_not_multiple_of_server_rejected(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	char reason[SCHED_REASON_MAX] = "";
	struct sched_job *j = NULL;

	(void)state;
	fx_expect_no_place(c, 12, -EINVAL, "12 is not a multiple of 8");
	fx_expect_no_place(c, 20, -EINVAL, "not a multiple of 8");
	assert_int_equal(sched_job_submit(c, fx_spec("twelve", 12), FX_UID, FX_GID, fx_now(),
					  reason, &j),
			 -EINVAL);
	assert_non_null(strstr(reason, "not a multiple of 8"));
	assert_null(sched_cluster_find_job(c, "twelve"));
	/* the same on 910 */
	sched_cluster_free(c);
	o.type = "atlas800";
	c = fx_cluster(&o);
	fx_expect_no_place(c, 12, -EINVAL, "not a multiple of 8");
	/* more whole servers than the cluster has: -ENOSPC, never feasible */
	fx_expect_no_place(c, 40, -ENOSPC, "needs 5 whole");
	sched_cluster_free(c);
}

static unsigned switch_of(const struct sched_cluster *c, const struct sched_slice *sl)
{
	return c->servers[sl->server].switch_index;
}

/* 32 NPUs under one leaf switch: the switch with the fewest free servers that fits. */
static void test_switch_locality_best_fit_switch(void **state)
{
	static const unsigned per_switch[] = { 6, 4, 5 }; /* servers 0-5, 6-9, 10-14 */
	struct fx_opts o = { .switches = 3, .per_switch = per_switch };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "a", 32);
	assert_int_equal(j->slice_count, 4);
	for (size_t k = 0; k < 4; k++)
		fx_expect_slice(j, k, 6 + (unsigned)k, "0,1,2,3,4,5,6,7");
	/* free servers per switch now 6, 0, 5: leaf-2 (5) is the tighter fit */
	j = fx_run(c, "b", 32);
	for (size_t k = 0; k < 4; k++)
		assert_int_equal(switch_of(c, &j->slices[k]), 2);
	fx_expect_slice(j, 0, 10, "0,1,2,3,4,5,6,7");
	/* free: 6, 0, 1: only leaf-0 holds 4 */
	j = fx_run(c, "c", 32);
	for (size_t k = 0; k < 4; k++)
		fx_expect_slice(j, k, (unsigned)k, "0,1,2,3,4,5,6,7");
	fx_check(c);
	sched_cluster_free(c);

	/* the same with occupancy made by jobs: 8 servers per switch, 3 / 4 / 0 used */
	{
		struct fx_opts o2 = { .servers = 24, .switches = 3 };
		static const unsigned used[] = { 0, 1, 2, 8, 9, 10, 11 };
		char name[16];

		c = fx_cluster(&o2);
		for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++) {
			snprintf(name, sizeof(name), "u%zu", i);
			fx_run_on(c, name, 8, used[i]);
		}
		/* free whole servers: leaf-0 5, leaf-1 4, leaf-2 8 -> leaf-1 */
		j = fx_run(c, "d", 32);
		for (size_t k = 0; k < 4; k++)
			fx_expect_slice(j, k, 12 + (unsigned)k, "0,1,2,3,4,5,6,7");
		sched_cluster_free(c);
	}
}

/* No switch has room: the job spans the fewest switches. */
static void test_switch_locality_fewest_switches(void **state)
{
	static const unsigned per_switch[] = { 1, 1, 1, 3, 2 }; /* 3 is servers 3-5 */
	struct fx_opts o = { .switches = 5, .per_switch = per_switch };
	struct sched_cluster *c = fx_cluster(&o);
	bool used[5] = { false };
	unsigned spanned = 0, on_sw3 = 0;
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "a", 32);
	assert_int_equal(j->slice_count, 4);
	for (size_t k = 0; k < j->slice_count; k++) {
		unsigned sw = switch_of(c, &j->slices[k]);

		if (!used[sw])
			spanned++;
		used[sw] = true;
		on_sw3 += sw == 3;
	}
	/* 3 + 1: two switches, where a first fit in inventory order would span four */
	assert_int_equal(spanned, 2);
	assert_int_equal(on_sw3, 3);
	/* the two-server switch stays whole for a 16-NPU job */
	assert_false(used[4]);
	fx_expect_slice(fx_run(c, "b", 16), 0, 6, "0,1,2,3,4,5,6,7");
	fx_check(c);
	sched_cluster_free(c);
}

/* Counted nouns in reasons: "1 NPU", "1 whole server is", "2 NPUs", "0 whole servers are". */
static void test_reason_counted_nouns(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	fx_run(c, "a", 8);
	j = fx_submit(c, "big", 16);
	assert_non_null(strstr(j->reason, "1 whole server is free (8 NPUs free in all)"));
	sched_cluster_free(c);

	c = fx_cluster(&o);
	fx_run(c, "a", 8);
	fx_run(c, "b", 4);
	j = fx_run(c, "c", 2);
	assert_non_null(strstr(j->reason, "placed on 1 server (2 NPUs)"));
	j = fx_run(c, "d", 1);
	assert_non_null(strstr(j->reason, "placed on 1 server (1 NPU),"));
	j = fx_submit(c, "big", 16);
	assert_non_null(strstr(j->reason, "0 whole servers are free (1 NPU free in all)"));
	assert_null(strstr(j->reason, "1 NPUs"));
	sched_cluster_free(c);
}

/* Gang: a job that cannot get every server gets nothing, then starts when room frees. */
static void test_gang_all_or_nothing(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *big;
	uint64_t version;

	(void)state;
	fx_run(c, "small", 8);
	big = fx_submit(c, "big", 32);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(big->reason, "needs 32 NPUs"));
	assert_int_equal(big->slice_count, 0);
	assert_int_equal(sched_job_total_npus(big), 0);
	assert_int_equal(c->npus_allocated, 8);
	for (size_t i = 0; i < c->server_count; i++)
		for (unsigned d = 0; d < 8; d++)
			assert_true(c->servers[i].npus[d].job != big);
	/* another pass changes nothing */
	version = c->version;
	assert_int_equal(sched_schedule(c, fx_now()), 0);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	assert_int_equal(c->npus_allocated, 8);
	assert_true(c->version == version);
	fx_check(c);

	assert_int_equal(fx_cancel(c, "small", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(big->state, SCHED_JOB_RUNNING);
	assert_int_equal(big->slice_count, 4);
	assert_int_equal(sched_job_total_npus(big), 32);
	assert_int_equal(c->npus_allocated, 32);
	sched_cluster_free(c);
}

/* Ranks 0..N-1 go server by server in topology order (switch, server, device id). */
static void test_rank_contiguous_in_topology_order(void **state)
{
	/* inventory order node-0 (leaf-0), node-1 (leaf-1), node-2 (leaf-0), node-3 (leaf-1) */
	struct fx_opts o = { .servers = 4, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	static const unsigned order[] = { 0, 2, 1, 3 };
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "big", 32);
	assert_int_equal(j->slice_count, 4);
	for (size_t k = 0; k < 4; k++) {
		const struct sched_slice *sl = &j->slices[k];

		assert_int_equal(sl->server, order[k]);
		assert_int_equal(sl->first_rank, 8 * k);
		for (unsigned d = 0; d < 8; d++) {
			const struct sched_npu *n = &c->servers[sl->server].npus[sl->device_ids[d]];

			assert_int_equal(sl->device_ids[d], d);
			assert_ptr_equal(n->job, j);
			assert_int_equal(n->rank, 8 * k + d);
		}
	}
	fx_check(c);
	assert_int_equal(fx_complete(c, "big", FX_UID, fx_now()), 0);
	fx_check(c);

	/* a sub-server job: ranks follow ascending device ids */
	fx_run(c, "x", 3);
	j = fx_run(c, "y", 4);
	fx_expect_slice(j, 0, 0, "3,4,5,6");
	for (unsigned k = 0; k < 4; k++)
		assert_int_equal(c->servers[0].npus[3 + k].rank, k);
	fx_check(c);
	sched_cluster_free(c);

	/*
	 * A3 super pods are the outer level: pod p0 = node-0, node-1 and p1 = node-2,
	 * node-3, on leaf switches shared by both pods. Switch order alone would give
	 * 0, 2, 1, 3 and split each pod (rank table 1.2 needs pods contiguous).
	 */
	o = (struct fx_opts){ .type = "atlas900-a3", .servers = 4, .switches = 2,
			      .interleave = true, .servers_per_pod = 2 };
	c = fx_cluster(&o);
	j = fx_run(c, "pods", 64);
	assert_int_equal(j->slice_count, 4);
	for (unsigned k = 0; k < 4; k++) {
		assert_int_equal(j->slices[k].server, k);
		assert_int_equal(j->slices[k].first_rank, 16 * k);
	}
	fx_check(c);
	sched_cluster_free(c);
}

/* Does every value of @key (@n entries) occur in one run, none coming back after another? */
static bool runs_are_contiguous(const unsigned *key, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t k = 0; key[i] != key[i - 1] && k + 1 < i; k++)
			if (key[k] == key[i])
				return false;
	return true;
}

/*
 * Ranks go server by server with the servers of one leaf switch next to each other, and
 * on A3 those of one super pod, then of one switch within it: so the innermost groups (tp,
 * then cp, ep) stay in a server, and when a pipeline stage fits under one switch only the
 * stage boundaries cross the spine (sched_comm.h's rank order; topology.json shows it).
 * Inventories that interleave switches and pods, placements that span several switches.
 */
static void test_rank_order_keeps_switches_and_pods_consecutive(void **state)
{
	/* 9 servers, node-i under leaf-(i % 3): no switch has 6, so 6 servers span two */
	struct fx_opts o = { .servers = 9, .switches = 3, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	unsigned sw[16], pod[16];
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "six", 48);
	assert_int_equal(j->slice_count, 6);
	for (size_t k = 0; k < j->slice_count; k++) {
		sw[k] = switch_of(c, &j->slices[k]);
		assert_int_equal(j->slices[k].first_rank, 8 * k);
		/* inside a switch, inventory order */
		if (k && sw[k] == sw[k - 1])
			assert_true(j->slices[k].server > j->slices[k - 1].server);
	}
	assert_true(runs_are_contiguous(sw, j->slice_count));
	assert_true(sw[0] == sw[2] && sw[3] == sw[5] && sw[0] != sw[3]);
	/* and the whole cluster: three switches, each one run of three */
	assert_int_equal(fx_complete(c, "six", FX_UID, fx_now()), 0);
	j = fx_run(c, "all", 72);
	for (size_t k = 0; k < j->slice_count; k++)
		sw[k] = switch_of(c, &j->slices[k]);
	assert_true(runs_are_contiguous(sw, j->slice_count));
	fx_check(c);
	sched_cluster_free(c);

	/* A3: pods p0 = node-0..3, p1 = node-4..7, each across both interleaved switches */
	o = (struct fx_opts){ .type = "atlas900-a3", .servers = 8, .switches = 2,
			      .interleave = true, .servers_per_pod = 4 };
	c = fx_cluster(&o);
	j = fx_run(c, "pods", 128);
	assert_int_equal(j->slice_count, 8);
	for (size_t k = 0; k < j->slice_count; k++) {
		const char *p = c->servers[j->slices[k].server].conf->super_pod;

		pod[k] = (unsigned)(p[1] - '0');
		/* the switch within the pod: a key that counts pods apart */
		sw[k] = pod[k] * 2 + switch_of(c, &j->slices[k]);
	}
	assert_true(runs_are_contiguous(pod, j->slice_count));
	assert_true(runs_are_contiguous(sw, j->slice_count));
	fx_check(c);
	sched_cluster_free(c);
}

/*
 * Rank table 1.2 needs every super pod of a job to hold the same number of servers: a
 * 3-server A3 job on pods of 2 can never be split evenly and is refused, a 2-server job
 * fits the free pod, and a 4-server job takes 2+2 from two pods that have room, leaving
 * the busy pod alone.
 */
static void test_a3_super_pods_split_evenly(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 4, .servers_per_pod = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	fx_run_on(c, "busy", 16, 0);
	fx_expect_no_place(c, 48, -ENOSPC, "split evenly over super pods");
	j = fx_run(c, "pod1", 32); /* 2 servers fit in pod p1 alone */
	assert_int_equal(j->slice_count, 2);
	assert_int_equal(j->slices[0].server, 2);
	assert_int_equal(j->slices[1].server, 3);
	fx_check(c);
	sched_cluster_free(c);

	o = (struct fx_opts){ .type = "atlas900-a3", .servers = 6, .servers_per_pod = 2 };
	c = fx_cluster(&o);
	fx_run_on(c, "busy", 16, 1);
	j = fx_run(c, "even", 64);
	assert_int_equal(j->slice_count, 4);
	for (size_t k = 0; k < 4; k++)
		assert_int_equal(j->slices[k].server, 2 + k);
	fx_check(c);
	sched_cluster_free(c);
}

/* topology_aware_schedule: false -> first fit by server index (single and multi). */
static void test_topology_blind_first_fit(void **state)
{
	static const unsigned per_switch[] = { 1, 1, 1, 3, 2 };
	struct fx_opts o = { .servers = 3, .topology_blind = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	fx_run_on(c, "a", 6, 1);
	/* server 1 is fuller, but the blind scheduler takes the lowest index that fits */
	fx_expect_place(c, 1, 0, "0");
	fx_expect_place(c, 2, 0, "0,1");
	fx_expect_place(c, 8, 0, "0,1,2,3,4,5,6,7");
	fx_run_on(c, "b", 8, 0);
	fx_expect_place(c, 2, 1, "6,7");
	fx_expect_place(c, 3, 2, "0,1,2");
	/* a Warning NPU does not move a blind placement */
	fx_set_health(c, 1, 0, SCHED_HEALTH_WARNING);
	fx_expect_place(c, 1, 1, "6");
	sched_cluster_free(c);

	/* multi-server: the first whole free servers, however many switches that spans */
	o = (struct fx_opts){ .switches = 5, .per_switch = per_switch, .topology_blind = true };
	c = fx_cluster(&o);
	j = fx_run(c, "big", 32);
	for (size_t k = 0; k < 4; k++)
		fx_expect_slice(j, k, (unsigned)k, "0,1,2,3,4,5,6,7");
	fx_check(c);
	sched_cluster_free(c);
}

/* topology_aware_schedule: false still keeps 910 ring legality. */
static void test_topology_blind_keeps_ring_legality(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1, .topology_blind = true };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	fx_expect_slice(fx_run(c, "a", 1), 0, 0, "0");
	/* ring 0 has 3 free: 4 NPUs go to ring 1, never 1,2,3,4 */
	fx_expect_slice(fx_run(c, "b", 4), 0, 0, "4,5,6,7");
	/* first ring that holds 2 (ring 0), no preference order */
	fx_expect_slice(fx_run(c, "c", 2), 0, 0, "1,2");
	/* 1 free in ring 0, none in ring 1: 2 NPUs wait */
	assert_int_equal(fx_submit(c, "d", 2)->state, SCHED_JOB_PENDING);
	fx_expect_no_place(c, 2, -ENOSPC, "HCCS ring");
	fx_expect_no_place(c, 3, -EINVAL, "1, 2, 4 or 8");
	fx_check(c);
	sched_cluster_free(c);

	/* ring 0 all free, ring 1 with 1 free: blind takes ring 0 (aware would take 7) */
	c = fx_cluster(&o);
	fx_run(c, "a", 4);
	fx_expect_slice(fx_run(c, "b", 2), 0, 0, "4,5");
	fx_expect_slice(fx_run(c, "c", 1), 0, 0, "6");
	assert_int_equal(fx_cancel(c, "a", FX_UID, fx_now()), 0);
	fx_expect_place(c, 1, 0, "0");
	fx_check(c);
	sched_cluster_free(c);
}

/* allow_mix_task: false keeps a server to one job. */
static void test_no_mix_one_job_per_server(void **state)
{
	struct fx_opts o = { .servers = 2, .no_mix = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	fx_expect_slice(fx_run(c, "a", 1), 0, 0, "0");
	/* with mixing the fuller server 0 would win; without, server 1 */
	fx_expect_slice(fx_run(c, "b", 1), 0, 1, "0");
	j = fx_submit(c, "c", 1);
	assert_int_equal(j->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_total_npus(j), 0);
	for (size_t i = 0; i < c->server_count; i++)
		assert_int_equal(c->servers[i].jobs_running, 1);
	assert_int_equal(fx_complete(c, "a", FX_UID, fx_now()), 0);
	fx_check(c);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	fx_expect_slice(j, 0, 0, "0");
	sched_cluster_free(c);

	/* control: the same steps with mixing allowed share server 0 */
	o.no_mix = false;
	c = fx_cluster(&o);
	fx_run(c, "a", 1);
	fx_expect_slice(fx_run(c, "b", 1), 0, 0, "1");
	sched_cluster_free(c);
}

/* sched_place() only looks: nothing in the cluster changes. */
static void test_place_changes_nothing(void **state)
{
	struct fx_opts o = { .servers = 4, .switches = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_slice *sl = NULL;
	size_t count = 0;
	uint64_t version, seq;
	char reason[SCHED_REASON_MAX];

	(void)state;
	fx_run(c, "a", 3);
	version = c->version;
	seq = c->next_event_seq;
	assert_int_equal(sched_place(c, 16, NULL, &sl, &count, reason), 0);
	assert_int_equal(count, 2);
	free(sl);
	assert_int_equal(sched_place(c, 2, NULL, &sl, &count, reason), 0);
	assert_int_equal(count, 1);
	free(sl);
	assert_true(c->version == version);
	assert_true(c->next_event_seq == seq);
	assert_int_equal(c->npus_allocated, 3);
	assert_int_equal(c->servers[0].npus_free, 5);
	fx_check(c);
	sched_cluster_free(c);
}

/* A bare job record holding the whole 8-NPU servers @servers (@n), for sched_replace(). */
static void whole_server_job(struct sched_job *job, struct sched_slice *sl,
			     const unsigned *servers, size_t n)
{
	memset(job, 0, sizeof(*job));
	memset(sl, 0, n * sizeof(*sl));
	for (size_t i = 0; i < n; i++) {
		sl[i].server = servers[i];
		sl[i].npu_count = 8;
		for (unsigned d = 0; d < 8; d++)
			sl[i].device_ids[d] = d;
	}
	job->slices = sl;
	job->slice_count = n;
}

/*
 * sched_replace() (a fault's whole-server replacements): as many under each leaf switch
 * as failed there, so each switch keeps its count of the job's servers and stages
 * placed whole per switch stay whole. The job holds node-0..3 (leaf-0: 0, 2; leaf-1:
 * 1, 3); node-0 and node-1 fail at once; node-4, node-6 (leaf-0) and node-7 (leaf-1)
 * are free. Replacements: one of leaf-0 and node-7, not node-4 and node-6 (review).
 */
static void test_replace_per_switch_as_failed(void **state)
{
	/* leaf-0: node-0, 2, 4, 6; leaf-1: node-1, 3, 5, 7 */
	struct fx_opts o = { .servers = 8, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job job;
	struct sched_slice sl[4], *out = NULL;
	bool bad[4] = { true, true, false, false };
	unsigned per_switch[2] = { 0, 0 };
	size_t n = 0;
	char name[8];

	(void)state;
	for (unsigned s = 0; s < 6; s++) { /* node-0..3 (the job's) and node-5 are taken */
		if (s == 4)
			continue;
		snprintf(name, sizeof(name), "o%u", s);
		fx_run_on(c, name, 8, s);
	}
	whole_server_job(&job, sl, (const unsigned[]){ 0, 1, 2, 3 }, 4);
	assert_int_equal(sched_replace(c, &job, bad, &out, &n), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++)
		per_switch[c->servers[out[i].server].switch_index]++;
	assert_int_equal(per_switch[0], 2);
	assert_int_equal(per_switch[1], 2);
	free(out);
	sched_cluster_free(c);
}

/*
 * A replacement is a server of its own: two failed under a leaf that has one free server
 * left and where the job keeps another (node-4) make the first tier take that free
 * server and the next tier ("under a switch the job keeps") look at it again; taken
 * twice, the job got the same NPUs twice (ascend-sim aborted in sched_alloc_apply on
 * the example week with priority aging, seed 4).
 */
static void test_replace_takes_each_server_once(void **state)
{
	/* leaf-0: node-0, 2, 4, 6; leaf-1: node-1, 3, 5, 7 */
	struct fx_opts o = { .servers = 8, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	static const unsigned held[] = { 0, 2, 4, 1 }; /* the job's servers */
	bool bad[4] = { true, true, false, false };
	struct sched_slice sl[4], *out = NULL;
	struct sched_job job;
	bool seen[8] = { false };
	size_t n = 0;
	char name[8];

	(void)state;
	for (unsigned s = 0; s < 6; s++) { /* the job's four, node-3 and node-5 taken */
		snprintf(name, sizeof(name), "o%u", s);
		fx_run_on(c, name, 8, s);
	}
	whole_server_job(&job, sl, held, 4);
	assert_int_equal(sched_replace(c, &job, bad, &out, &n), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		if (seen[out[i].server])
			fail_msg("node-%u is in the placement twice", out[i].server);
		seen[out[i].server] = true;
	}
	assert_true(seen[4] && seen[1] && seen[6] && seen[7]);
	free(out);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring910_one_npu_preference),
		cmocka_unit_test(test_ring910_two_npu_preference),
		cmocka_unit_test(test_ring910_one_npu_jobs_pack_rings),
		cmocka_unit_test(test_ring910_four_npus_take_whole_ring),
		cmocka_unit_test(test_ring910_three_npus_rejected),
		cmocka_unit_test(test_ring910_never_crosses_rings),
		cmocka_unit_test(test_node_order_healthy_first),
		cmocka_unit_test(test_node_order_ring_fit_before_fullest),
		cmocka_unit_test(test_node_order_fullest_server),
		cmocka_unit_test(test_910b_best_fit_lowest_free_ids),
		cmocka_unit_test(test_a3_even_requests_take_whole_pairs),
		cmocka_unit_test(test_a3_single_prefers_half_used_pair),
		cmocka_unit_test(test_a3_super_pods_split_evenly),
		cmocka_unit_test(test_multi_takes_whole_servers),
		cmocka_unit_test(test_multi_not_multiple_of_server_rejected),
		cmocka_unit_test(test_switch_locality_best_fit_switch),
		cmocka_unit_test(test_switch_locality_fewest_switches),
		cmocka_unit_test(test_reason_counted_nouns),
		cmocka_unit_test(test_gang_all_or_nothing),
		cmocka_unit_test(test_rank_contiguous_in_topology_order),
		cmocka_unit_test(test_rank_order_keeps_switches_and_pods_consecutive),
		cmocka_unit_test(test_topology_blind_first_fit),
		cmocka_unit_test(test_topology_blind_keeps_ring_legality),
		cmocka_unit_test(test_no_mix_one_job_per_server),
		cmocka_unit_test(test_place_changes_nothing),
		cmocka_unit_test(test_replace_per_switch_as_failed),
		cmocka_unit_test(test_replace_takes_each_server_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
