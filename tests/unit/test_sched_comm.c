/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rank order of parallel dimensions (sched/sched_parallel.c) and the
 * communication cost model (sched/sched_comm.c).
 *
 * Every figure asserted is computed by hand in a comment from the table of
 * sched_comm_params_for(): 910B HCCS 18.3 GB/s a link, 7 lanes, 13 us a step; RoCE 20
 * GB/s, 60 us a step; the spine RoCE / oversubscription; 910 HCCS 10 GB/s (3 lanes),
 * PCIe 6.8 GB/s, RoCE 10 GB/s; A3 SIO 204 GB/s, HCCS and super pod 196 GB/s. A GB/s
 * is 10^3 bytes a microsecond, so B bytes over W GB/s take B / (W * 1000) us.
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

#include "ascend_sched.h"
#include "sched_comm.h"
#include "sched_fixture.h"
#include "test_util.h"

/* @got equals the hand-computed @want to 1e-6 relative (the hand figures are rounded
 * to 4 decimals, so 1e-6 of anything above 100 us) */
#define assert_usec(got, want)                                                            \
	do {                                                                              \
		double got_ = (got), want_ = (want);                                      \
		if (!(fabs(got_ - want_) <= 1e-6 * fabs(want_) + 1e-3))                   \
			fail_msg("%s = %.6f, want %.6f", #got, got_, want_);              \
	} while (0)

static struct sched_npu_loc L(unsigned server, unsigned device)
{
	struct sched_npu_loc l = { .server = server, .device = device };

	return l;
}

static struct sched_comm_group G(unsigned members, unsigned nodes, enum sched_link intra,
				 enum sched_link inter)
{
	struct sched_comm_group g = {
		.members = members, .nodes = nodes, .intra = intra, .inter = inter
	};

	return g;
}

/* ---- the figures ---- */

static void test_params_figures_per_chip(void **state)
{
	struct sched_comm_params p;

	(void)state;
	sched_comm_params_for("910B", 1, &p);
	assert_usec(p.link[SCHED_LINK_HCCS].gbyte_per_sec, 18.3);
	assert_int_equal(p.link[SCHED_LINK_HCCS].lanes, 7);
	assert_usec(p.link[SCHED_LINK_HCCS].latency_usec, 13);
	assert_usec(p.link[SCHED_LINK_ROCE_LEAF].gbyte_per_sec, 20);
	assert_usec(p.link[SCHED_LINK_ROCE_LEAF].latency_usec, 60);
	assert_int_equal(p.link[SCHED_LINK_ROCE_LEAF].lanes, 1);
	assert_usec(p.link[SCHED_LINK_ROCE_SPINE].gbyte_per_sec, 20);

	sched_comm_params_for("910", 1, &p);
	assert_usec(p.link[SCHED_LINK_HCCS].gbyte_per_sec, 10);
	assert_int_equal(p.link[SCHED_LINK_HCCS].lanes, 3);
	assert_usec(p.link[SCHED_LINK_PCIE].gbyte_per_sec, 6.8); /* 32 * 0.85 / 4 */
	assert_usec(p.link[SCHED_LINK_ROCE_LEAF].gbyte_per_sec, 10);

	sched_comm_params_for("910C", 1, &p);
	assert_usec(p.link[SCHED_LINK_SIO].gbyte_per_sec, 204);
	assert_usec(p.link[SCHED_LINK_HCCS].gbyte_per_sec, 196);
	assert_usec(p.link[SCHED_LINK_SUPERPOD].gbyte_per_sec, 196);
	assert_usec(p.link[SCHED_LINK_ROCE_LEAF].gbyte_per_sec, 20);

	/* every class a chip does not have still has a usable figure */
	const char *chips[] = { "910", "910B", "910C" };

	for (size_t i = 0; i < 3; i++) {
		sched_comm_params_for(chips[i], 1, &p);
		for (int l = SCHED_LINK_SIO; l < SCHED_LINK_COUNT; l++) {
			assert_true(p.link[l].gbyte_per_sec > 0);
			assert_true(p.link[l].lanes >= 1);
		}
	}
}

static void test_params_spine_oversub_and_unknown_chip(void **state)
{
	struct sched_comm_params p, q;

	(void)state;
	sched_comm_params_for("910B", 4, &p);
	assert_usec(p.spine_oversub, 4);
	assert_usec(p.link[SCHED_LINK_ROCE_SPINE].gbyte_per_sec, 5); /* 20 / 4 */
	assert_usec(p.link[SCHED_LINK_ROCE_LEAF].gbyte_per_sec, 20);

	/* below 1 (and NaN) is taken as a non-blocking fabric */
	sched_comm_params_for("910B", 0.5, &p);
	assert_usec(p.spine_oversub, 1);
	sched_comm_params_for("910B", NAN, &p);
	assert_usec(p.spine_oversub, 1);
	assert_usec(p.link[SCHED_LINK_ROCE_SPINE].gbyte_per_sec, 20);

	/* anything else is 910B's */
	sched_comm_params_for("910B", 2, &p);
	sched_comm_params_for("Ascend310P", 2, &q);
	assert_memory_equal(&p, &q, sizeof(p));
	sched_comm_params_for(NULL, 2, &q);
	assert_memory_equal(&p, &q, sizeof(p));
}

/* ---- collectives ---- */

static void test_allreduce_within_one_server(void **state)
{
	struct sched_comm_params p;
	struct sched_comm_group g = G(8, 1, SCHED_LINK_PCIE, SCHED_LINK_SELF);

	(void)state;
	/*
	 * 910: 8 NPUs of one server across both rings (intra pcie), B = 8e6: inside each
	 * ring of 4 (HCCS 10 GB/s, 3 lanes: a mesh) a reduce-scatter of one step,
	 * 13 + 2e6 / 10000 = 213; between the two rings over PCIe (6.8 GB/s) the 2e6 each
	 * member holds, one step of half: 13 + 1e6 / 6800 = 160.0588; the same back:
	 * 2 * 373.0588 = 746.1176 us. A flat ring over PCIe would take 14 * (13 + 1e6 /
	 * 6800) = 2240.8235 us: HCCL runs the rings as its level 0.
	 */
	sched_comm_params_for("910", 1, &p);
	assert_usec(sched_comm_allreduce_usec(&p, &g, 8e6), 746.1176);

	/*
	 * 910B HCCS made a single lane: 4 members, B = 4e6. Ring: 3 steps of 1e6 bytes,
	 * 3 * (13 + 1e6 / 18300) = 202.9344; halving-doubling: 2 steps' latency and the
	 * same 3e6 bytes, 26 + 3e6 / 18300 = 189.9344, the cheaper: twice, 379.8689 us.
	 */
	sched_comm_params_for("910B", 1, &p);
	p.link[SCHED_LINK_HCCS].lanes = 1;
	g = G(4, 1, SCHED_LINK_HCCS, SCHED_LINK_SELF);
	assert_usec(sched_comm_allreduce_usec(&p, &g, 4e6), 379.8689);
}

static void test_allreduce_mesh_on_910b(void **state)
{
	struct sched_comm_params p;
	struct sched_comm_group g = G(8, 1, SCHED_LINK_HCCS, SCHED_LINK_SELF);
	double mesh, tree;

	(void)state;
	sched_comm_params_for("910B", 1, &p);
	/*
	 * 8 NPUs of one 910B server, 7 lanes >= n-1: reduce-scatter and all-gather of one
	 * step each, B/n = 1e6 bytes to every peer at once: 2 * (13 + 1e6 / 18300) =
	 * 2 * 67.6448 = 135.2896 us.
	 */
	mesh = sched_comm_allreduce_usec(&p, &g, 8e6);
	assert_usec(mesh, 135.2896);
	/* with one lane, halving-doubling: 2 * (3 * 13 + 7e6 / 18300) = 843.0273 us (a
	 * ring's 14 * 67.6448 = 947.0273 costs more) */
	p.link[SCHED_LINK_HCCS].lanes = 1;
	tree = sched_comm_allreduce_usec(&p, &g, 8e6);
	assert_usec(tree, 843.0273);
	assert_true(mesh < tree);

	/* 910's ring of 4: 3 lanes, a mesh too: 2 * (13 + 1e6 / 10000) = 226 us */
	sched_comm_params_for("910", 1, &p);
	g = G(4, 1, SCHED_LINK_HCCS, SCHED_LINK_SELF);
	assert_usec(sched_comm_allreduce_usec(&p, &g, 4e6), 226);
}

/*
 * A group spread unevenly waits for its fullest node inside and its emptiest node
 * between: 8 members as 7 + 1 over two 910B servers, B = 8e6. Inside the fullest (7 on
 * the mesh): 13 + (8e6 / 7) / 18300 = 75.4512, twice; the lone member's NIC carries all
 * 8e6 between the two: 60 + 4e6 / 20000 = 260, twice: 670.9024 us. Costing it as 4 + 4
 * (the old rounding) gave 2 * (13 + 2e6 / 18300) + 2 * (60 + 1e6 / 20000) = 464.58.
 */
static void test_allreduce_uneven_group(void **state)
{
	struct fx_opts o = { .type = "atlas800t-a2", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_comm_params p;
	struct sched_npu_loc m[8];
	struct sched_comm_group g;

	(void)state;
	sched_comm_params_for("910B", 1, &p);
	for (unsigned i = 0; i < 7; i++)
		m[i] = L(0, i);
	m[7] = L(1, 0);
	sched_comm_group_of(c, &p, m, 8, &g);
	assert_int_equal(g.nodes, 2);
	assert_int_equal(g.most_per_node, 7);
	assert_int_equal(g.least_per_node, 1);
	assert_usec(sched_comm_allreduce_usec(&p, &g, 8e6), 670.9024);
	/* all-to-all: the lone member sends 7 pieces of 1e6 over RoCE, one at a time:
	 * 7 * (60 + 1e6 / 20000) = 770; inside the fullest, 6 peers on 7 lanes: one round
	 * of 13 + 1e6 / 18300 = 67.6448; 837.6448 us */
	assert_usec(sched_comm_alltoall_usec(&p, &g, 8e6), 837.6448);
	sched_cluster_free(c);
}

static void test_allreduce_hierarchical_leaf_and_spine(void **state)
{
	/* 910B, 4 servers, 2 leaf switches: node-0,1 under leaf-0, node-2,3 under leaf-1 */
	struct fx_opts o = { .type = "atlas800t-a2", .servers = 4, .switches = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_comm_params p;
	struct sched_npu_loc m[32];
	struct sched_comm_group g;
	double leaf2, leaf4, spine4, spine4_nonblocking;

	(void)state;
	sched_comm_params_for("910B", 2, &p);
	for (unsigned i = 0; i < 32; i++)
		m[i] = L(i / 8, i % 8);

	/*
	 * 2 whole servers under leaf-0, B = 16e6, k = 8 a node:
	 *   reduce-scatter on the mesh: 13 + 2e6 / 18300 = 122.2896
	 *   ring across 2 nodes of B/k = 2e6: 2 * 1 * (60 + (2e6 / 2) / 20000) = 220
	 *   all-gather: 122.2896
	 * = 464.5792 us
	 */
	sched_comm_group_of(c, &p, m, 16, &g);
	assert_int_equal(g.members, 16);
	assert_int_equal(g.nodes, 2);
	assert_int_equal(g.intra, SCHED_LINK_HCCS);
	assert_int_equal(g.inter, SCHED_LINK_ROCE_LEAF);
	leaf2 = sched_comm_allreduce_usec(&p, &g, 16e6);
	assert_usec(leaf2, 464.5792);

	/*
	 * 4 servers, as if all under one leaf, B = 32e6:
	 *   reduce-scatter 13 + 4e6 / 18300 = 231.5792, twice
	 *   across 4 nodes, B/k = 4e6: halving-doubling, 2 * (2 * 60 + 3e6 / 20000) = 540
	 *   (a ring: 2 * 3 * (60 + 1e6 / 20000) = 660)
	 * = 1003.1585 us
	 */
	g = G(32, 4, SCHED_LINK_HCCS, SCHED_LINK_ROCE_LEAF);
	leaf4 = sched_comm_allreduce_usec(&p, &g, 32e6);
	assert_usec(leaf4, 1003.1585);

	/* the same 4 servers really span the spine, oversubscribed 2:1 (10 GB/s):
	 * 2 * (2 * 60 + 3e6 / 10000) = 840, total 1303.1585 us */
	sched_comm_group_of(c, &p, m, 32, &g);
	assert_int_equal(g.nodes, 4);
	assert_int_equal(g.intra, SCHED_LINK_HCCS);
	assert_int_equal(g.inter, SCHED_LINK_ROCE_SPINE);
	spine4 = sched_comm_allreduce_usec(&p, &g, 32e6);
	assert_usec(spine4, 1303.1585);
	assert_true(leaf2 < leaf4 && leaf4 < spine4);

	/* a non-blocking spine costs what the leaf does */
	sched_comm_params_for("910B", 1, &p);
	spine4_nonblocking = sched_comm_allreduce_usec(&p, &g, 32e6);
	assert_usec(spine4_nonblocking, leaf4);
	sched_cluster_free(c);
}

static void test_alltoall_one_server_vs_eight(void **state)
{
	struct sched_comm_params p;
	struct sched_comm_group one = G(8, 1, SCHED_LINK_HCCS, SCHED_LINK_SELF);
	struct sched_comm_group eight = G(8, 8, SCHED_LINK_SELF, SCHED_LINK_ROCE_LEAF);
	struct sched_comm_group two = G(16, 2, SCHED_LINK_HCCS, SCHED_LINK_ROCE_LEAF);
	double a, b;

	(void)state;
	sched_comm_params_for("910B", 1, &p);
	/* 8 members, B = 8e6: 1e6 bytes to each peer. One server: the 7 peers over 7
	 * lanes at once, one round: 13 + 1e6 / 18300 = 67.6448 us */
	a = sched_comm_alltoall_usec(&p, &one, 8e6);
	assert_usec(a, 67.6448);
	/* one NPU on each of 8 servers: 7 peers one at a time over RoCE:
	 * 7 * (60 + 1e6 / 20000) = 770 us */
	b = sched_comm_alltoall_usec(&p, &eight, 8e6);
	assert_usec(b, 770);
	assert_true(a < b);
	/* 16 members on 2 servers, B = 16e6, 1e6 a peer: 7 peers inside in one round
	 * (67.6448) and 8 outside one at a time (8 * 110): 947.6448 us */
	assert_usec(sched_comm_alltoall_usec(&p, &two, 16e6), 947.6448);
	/* with 3 lanes (910 HCCS) 7 peers take 3 rounds */
	p.link[SCHED_LINK_HCCS].lanes = 3;
	assert_usec(sched_comm_alltoall_usec(&p, &one, 8e6), 3 * 67.6448);
}

static void test_p2p_and_nothing_to_do(void **state)
{
	struct sched_comm_params p;
	struct sched_comm_group g;

	(void)state;
	sched_comm_params_for("910B", 2, &p);
	/* 1e6 bytes: 60 + 1e6 / 20000 = 110 us under a leaf, 60 + 1e6 / 10000 = 160 us
	 * over a 2:1 spine, 13 + 1e6 / 18300 = 67.6448 us over HCCS */
	assert_usec(sched_comm_p2p_usec(&p, SCHED_LINK_ROCE_LEAF, 1e6), 110);
	assert_usec(sched_comm_p2p_usec(&p, SCHED_LINK_ROCE_SPINE, 1e6), 160);
	assert_usec(sched_comm_p2p_usec(&p, SCHED_LINK_HCCS, 1e6), 67.6448);
	assert_true(sched_comm_p2p_usec(&p, SCHED_LINK_SELF, 1e6) == 0);
	assert_true(sched_comm_p2p_usec(&p, SCHED_LINK_ROCE_LEAF, 0) == 0);

	/* zero members, one member, zero bytes */
	g = G(0, 0, SCHED_LINK_SELF, SCHED_LINK_SELF);
	assert_true(sched_comm_allreduce_usec(&p, &g, 1e6) == 0);
	assert_true(sched_comm_alltoall_usec(&p, &g, 1e6) == 0);
	g = G(1, 1, SCHED_LINK_SELF, SCHED_LINK_SELF);
	assert_true(sched_comm_allreduce_usec(&p, &g, 1e6) == 0);
	assert_true(sched_comm_alltoall_usec(&p, &g, 1e6) == 0);
	g = G(16, 2, SCHED_LINK_HCCS, SCHED_LINK_ROCE_SPINE);
	assert_true(sched_comm_allreduce_usec(&p, &g, 0) == 0);
	assert_true(sched_comm_alltoall_usec(&p, &g, 0) == 0);
}

/* ---- links ---- */

static void test_link_between_910_rings_and_pcie(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	assert_int_equal(sched_link_between(c, L(0, 2), L(0, 2)), SCHED_LINK_SELF);
	assert_int_equal(sched_link_between(c, L(0, 0), L(0, 3)), SCHED_LINK_HCCS);
	assert_int_equal(sched_link_between(c, L(0, 4), L(0, 7)), SCHED_LINK_HCCS);
	assert_int_equal(sched_link_between(c, L(0, 3), L(0, 4)), SCHED_LINK_PCIE);
	assert_int_equal(sched_link_between(c, L(0, 7), L(0, 0)), SCHED_LINK_PCIE);
	assert_int_equal(sched_link_between(c, L(0, 0), L(1, 0)), SCHED_LINK_ROCE_LEAF);
	sched_cluster_free(c);
}

static void test_link_between_910b_mesh_leaf_spine(void **state)
{
	/* node-0,1 under leaf-0, node-2,3 under leaf-1 */
	struct fx_opts o = { .type = "atlas800t-a2", .servers = 4, .switches = 2 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	for (unsigned a = 0; a < 8; a++)
		for (unsigned b = 0; b < 8; b++)
			assert_int_equal(sched_link_between(c, L(1, a), L(1, b)),
					 a == b ? SCHED_LINK_SELF : SCHED_LINK_HCCS);
	assert_int_equal(sched_link_between(c, L(0, 0), L(1, 7)), SCHED_LINK_ROCE_LEAF);
	assert_int_equal(sched_link_between(c, L(2, 3), L(3, 3)), SCHED_LINK_ROCE_LEAF);
	assert_int_equal(sched_link_between(c, L(1, 0), L(2, 0)), SCHED_LINK_ROCE_SPINE);
	assert_int_equal(sched_link_between(c, L(3, 5), L(0, 5)), SCHED_LINK_ROCE_SPINE);
	sched_cluster_free(c);

	/* a super pod named on 910B servers is a label, not a fabric */
	struct fx_opts o2 = { .type = "atlas800t-a2", .servers = 2, .servers_per_pod = 2 };

	c = fx_cluster(&o2);
	assert_string_equal(c->servers[0].conf->super_pod, c->servers[1].conf->super_pod);
	assert_int_equal(sched_link_between(c, L(0, 0), L(1, 0)), SCHED_LINK_ROCE_LEAF);
	sched_cluster_free(c);
}

static void test_link_between_a3_pairs_server_pod(void **state)
{
	/* 4 A3 servers, one leaf, pods p0 = node-0,1 and p1 = node-2,3 */
	struct fx_opts o = { .type = "atlas900-a3", .servers = 4, .servers_per_pod = 2 };
	struct sched_cluster *c = fx_cluster(&o);

	(void)state;
	assert_int_equal(sched_link_between(c, L(0, 0), L(0, 1)), SCHED_LINK_SIO);
	assert_int_equal(sched_link_between(c, L(0, 14), L(0, 15)), SCHED_LINK_SIO);
	assert_int_equal(sched_link_between(c, L(0, 1), L(0, 2)), SCHED_LINK_HCCS);
	assert_int_equal(sched_link_between(c, L(0, 0), L(0, 15)), SCHED_LINK_HCCS);
	assert_int_equal(sched_link_between(c, L(0, 0), L(1, 0)), SCHED_LINK_SUPERPOD);
	assert_int_equal(sched_link_between(c, L(0, 0), L(1, 1)), SCHED_LINK_SUPERPOD);
	assert_int_equal(sched_link_between(c, L(1, 3), L(2, 3)), SCHED_LINK_ROCE_LEAF);
	sched_cluster_free(c);

	/* pods of one server each, under two leaves: across pods and leaves is the spine */
	struct fx_opts o2 = {
		.type = "atlas900-a3", .servers = 4, .switches = 2, .servers_per_pod = 1
	};

	c = fx_cluster(&o2);
	assert_int_equal(sched_link_between(c, L(0, 0), L(1, 0)), SCHED_LINK_ROCE_LEAF);
	assert_int_equal(sched_link_between(c, L(0, 0), L(2, 0)), SCHED_LINK_ROCE_SPINE);
	sched_cluster_free(c);
}

static void test_group_link_slowest_pair(void **state)
{
	struct fx_opts o910 = { .type = "atlas800", .servers = 2 };
	struct fx_opts oa3 = { .type = "atlas900-a3", .servers = 2, .servers_per_pod = 2 };
	struct sched_cluster *c = fx_cluster(&o910);
	struct sched_comm_params p;
	struct sched_npu_loc ring[] = { L(0, 0), L(0, 1), L(0, 2), L(0, 3) };
	struct sched_npu_loc cross[] = { L(0, 0), L(0, 1), L(0, 4) };
	struct sched_npu_loc two[] = { L(0, 3), L(1, 0), L(0, 4) };
	struct sched_npu_loc pair[] = { L(0, 6), L(0, 7) };
	struct sched_npu_loc modules[] = { L(0, 0), L(0, 1), L(0, 2) };
	struct sched_npu_loc pod[] = { L(0, 0), L(0, 2), L(1, 0) };

	(void)state;
	sched_comm_params_for("910", 1, &p);
	assert_int_equal(sched_group_link(c, &p, ring, 4), SCHED_LINK_HCCS);
	assert_int_equal(sched_group_link(c, &p, cross, 3), SCHED_LINK_PCIE);
	/* RoCE (10 GB/s) is faster than PCIe across rings (6.8 GB/s): PCIe binds; and
	 * HCCS's 3 lanes of 10 GB/s are faster than RoCE */
	assert_int_equal(sched_group_link(c, &p, two, 3), SCHED_LINK_PCIE);
	assert_int_equal(sched_group_link(c, &p, two, 2), SCHED_LINK_ROCE_LEAF);
	assert_int_equal(sched_group_link(c, &p, two + 1, 2), SCHED_LINK_ROCE_LEAF);
	two[0] = L(0, 5);
	assert_int_equal(sched_group_link(c, &p, two, 3), SCHED_LINK_ROCE_LEAF);
	assert_int_equal(sched_group_link(c, &p, ring, 1), SCHED_LINK_SELF);
	assert_int_equal(sched_group_link(c, &p, ring, 0), SCHED_LINK_SELF);
	sched_cluster_free(c);

	c = fx_cluster(&oa3);
	sched_comm_params_for("910C", 1, &p);
	assert_int_equal(sched_group_link(c, &p, pair, 2), SCHED_LINK_SIO);
	/* 196 GB/s HCCS is below 204 GB/s SIO */
	assert_int_equal(sched_group_link(c, &p, modules, 3), SCHED_LINK_HCCS);
	/* HCCS and the super pod both 196 GB/s: the farther domain is named */
	assert_int_equal(sched_group_link(c, &p, pod, 3), SCHED_LINK_SUPERPOD);
	sched_cluster_free(c);
}

static void test_group_of_nodes_intra_inter(void **state)
{
	struct fx_opts o = { .type = "atlas800t-a2", .servers = 8, .switches = 2 };
	struct fx_opts o910 = { .type = "atlas800", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_comm_params p;
	struct sched_comm_group g;
	struct sched_npu_loc half[] = { L(0, 0), L(0, 1), L(0, 2), L(0, 3),
					L(1, 0), L(1, 1), L(1, 2), L(1, 3) };
	struct sched_npu_loc spread[] = { L(0, 0), L(1, 0), L(2, 0), L(3, 0),
					  L(4, 0), L(5, 0), L(6, 0), L(7, 0) };
	struct sched_npu_loc uneven[] = { L(0, 0), L(0, 1), L(0, 2), L(4, 0) };
	struct sched_npu_loc rings[] = { L(0, 0), L(0, 1), L(0, 4), L(0, 5) };

	(void)state;
	sched_comm_params_for("910B", 1, &p);
	sched_comm_group_of(c, &p, half, 8, &g);
	assert_int_equal(g.members, 8);
	assert_int_equal(g.nodes, 2);
	assert_int_equal(g.intra, SCHED_LINK_HCCS);
	assert_int_equal(g.inter, SCHED_LINK_ROCE_LEAF);

	sched_comm_group_of(c, &p, half, 4, &g);
	assert_int_equal(g.nodes, 1);
	assert_int_equal(g.intra, SCHED_LINK_HCCS);
	assert_int_equal(g.inter, SCHED_LINK_SELF);

	/* one NPU a server over 2 leaves: nothing inside a server */
	sched_comm_group_of(c, &p, spread, 8, &g);
	assert_int_equal(g.nodes, 8);
	assert_int_equal(g.intra, SCHED_LINK_SELF);
	assert_int_equal(g.inter, SCHED_LINK_ROCE_SPINE);

	sched_comm_group_of(c, &p, uneven, 4, &g);
	assert_int_equal(g.nodes, 2);
	assert_int_equal(g.intra, SCHED_LINK_HCCS);
	assert_int_equal(g.inter, SCHED_LINK_ROCE_SPINE);

	sched_comm_group_of(c, &p, half, 0, &g);
	assert_int_equal(g.members, 0);
	assert_int_equal(g.nodes, 0);
	sched_cluster_free(c);

	c = fx_cluster(&o910);
	sched_comm_params_for("910", 1, &p);
	sched_comm_group_of(c, &p, rings, 4, &g);
	assert_int_equal(g.nodes, 1);
	assert_int_equal(g.intra, SCHED_LINK_PCIE);
	sched_cluster_free(c);
}

/* ---- sched_parallel.c ---- */

/* tp2 cp1 ep2 dp4 pp2: rank = tp_i + 2 * (dp_i + 4 * pp_i) */
static struct sched_parallel par_16(void)
{
	struct conf_job_spec spec = { .tp = 2, .cp = 1, .ep = 2, .dp = 4, .pp = 2 };
	struct sched_parallel par;

	assert_int_equal(sched_parallel_from_spec(&spec, 16, &par), 0);
	return par;
}

static void expect_group(const struct sched_parallel *par, enum sched_dim d, unsigned g,
			 const unsigned *want, unsigned n)
{
	unsigned got[16];

	assert_int_equal(sched_parallel_group(par, d, g, got), n);
	for (unsigned i = 0; i < n; i++) {
		if (got[i] != want[i])
			fail_msg("%s group %u member %u: %u, want %u", sched_dim_name(d), g, i,
				 got[i], want[i]);
	}
}

static void test_parallel_groups_tp2_ep2_dp4_pp2(void **state)
{
	struct sched_parallel par = par_16();
	static const unsigned dp[4][4] = {
		{ 0, 2, 4, 6 }, { 1, 3, 5, 7 }, { 8, 10, 12, 14 }, { 9, 11, 13, 15 }
	};
	/* EP groups are runs of 2 dp indices, numbered by their lowest rank */
	static const unsigned ep[8][2] = { { 0, 2 },  { 1, 3 },	  { 4, 6 },   { 5, 7 },
					   { 8, 10 }, { 9, 11 }, { 12, 14 }, { 13, 15 } };

	(void)state;
	assert_int_equal(sched_parallel_npus(&par), 16);
	assert_int_equal(sched_parallel_group_count(&par, SCHED_DIM_TP), 8);
	assert_int_equal(sched_parallel_group_count(&par, SCHED_DIM_CP), 16);
	assert_int_equal(sched_parallel_group_count(&par, SCHED_DIM_EP), 8);
	assert_int_equal(sched_parallel_group_count(&par, SCHED_DIM_DP), 4);
	assert_int_equal(sched_parallel_group_count(&par, SCHED_DIM_PP), 8);
	for (unsigned g = 0; g < 8; g++) {
		unsigned tp[2] = { 2 * g, 2 * g + 1 }, pp[2] = { g, g + 8 };

		expect_group(&par, SCHED_DIM_TP, g, tp, 2);
		expect_group(&par, SCHED_DIM_PP, g, pp, 2);
		expect_group(&par, SCHED_DIM_EP, g, ep[g], 2);
	}
	for (unsigned g = 0; g < 4; g++)
		expect_group(&par, SCHED_DIM_DP, g, dp[g], 4);
	for (unsigned r = 0; r < 16; r++)
		expect_group(&par, SCHED_DIM_CP, r, &r, 1);

	/* rank 13 = 1 + 2 * (2 + 4 * 1): tp 1, dp 2, pp 1, ep 2 % 2 = 0 */
	assert_int_equal(sched_parallel_coord(&par, 13, SCHED_DIM_TP), 1);
	assert_int_equal(sched_parallel_coord(&par, 13, SCHED_DIM_CP), 0);
	assert_int_equal(sched_parallel_coord(&par, 13, SCHED_DIM_DP), 2);
	assert_int_equal(sched_parallel_coord(&par, 13, SCHED_DIM_EP), 0);
	assert_int_equal(sched_parallel_coord(&par, 13, SCHED_DIM_PP), 1);
	assert_int_equal(sched_parallel_coord(&par, 7, SCHED_DIM_EP), 1);

	unsigned out[16];

	assert_int_equal(sched_parallel_group(&par, SCHED_DIM_DP, 4, out), 0);
	assert_string_equal(sched_dim_name(SCHED_DIM_EP), "ep");
	assert_string_equal(sched_dim_name(SCHED_DIM_COUNT), "?");
}

static void test_parallel_group_of_inverts_group(void **state)
{
	static const struct conf_job_spec specs[] = {
		{ .tp = 2, .ep = 2, .dp = 4, .pp = 2 },
		{ .tp = 4, .cp = 2, .ep = 1, .pp = 2 },
		{ .tp = 1, .cp = 2, .ep = 4, .pp = 1 },
		{ .tp = 8, .pp = 2 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		struct sched_parallel par;

		assert_int_equal(sched_parallel_from_spec(&specs[k], 16, &par), 0);
		for (int d = 0; d < SCHED_DIM_COUNT; d++) {
			unsigned seen[16] = { 0 }, ranks[16];
			unsigned count = sched_parallel_group_count(&par, d);

			assert_int_equal(count * par.size[d], 16);
			for (unsigned g = 0; g < count; g++) {
				unsigned n = sched_parallel_group(&par, d, g, ranks);

				assert_int_equal(n, par.size[d]);
				for (unsigned i = 0; i < n; i++) {
					assert_int_equal(sched_parallel_group_of(&par, d, ranks[i]),
							 g);
					assert_int_equal(sched_parallel_coord(&par, ranks[i], d), i);
					if (i)
						assert_true(ranks[i] > ranks[i - 1]);
					seen[ranks[i]]++;
				}
			}
			for (unsigned r = 0; r < 16; r++)
				assert_int_equal(seen[r], 1); /* the groups partition the ranks */
		}
	}
}

static void test_parallel_from_spec_errors(void **state)
{
	struct sched_parallel par, keep;
	struct conf_job_spec spec;

	(void)state;
	/* no spec: pure data parallel */
	assert_int_equal(sched_parallel_from_spec(NULL, 12, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_DP], 12);
	assert_int_equal(par.size[SCHED_DIM_TP], 1);
	assert_int_equal(par.size[SCHED_DIM_EP], 1);

	memset(&keep, 0x5a, sizeof(keep));
	par = keep;
	spec = (struct conf_job_spec){ .tp = 2, .pp = 2, .dp = 3 }; /* 2*2*3 != 16 */
	assert_int_equal(sched_parallel_from_spec(&spec, 16, &par), -EINVAL);
	spec = (struct conf_job_spec){ .tp = 2 }; /* 15 is not a multiple of 2 */
	assert_int_equal(sched_parallel_from_spec(&spec, 15, &par), -EINVAL);
	spec = (struct conf_job_spec){ .tp = 2, .ep = 3 }; /* dp 4, ep 3 */
	assert_int_equal(sched_parallel_from_spec(&spec, 8, &par), -EINVAL);
	assert_int_equal(sched_parallel_from_spec(NULL, 0, &par), -EINVAL);
	assert_memory_equal(&par, &keep, sizeof(par)); /* untouched on failure */

	spec = (struct conf_job_spec){ .tp = 2, .cp = 2, .ep = 2, .pp = 2 };
	assert_int_equal(sched_parallel_from_spec(&spec, 32, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_DP], 4);
	assert_int_equal(sched_parallel_npus(&par), 32);
}

/* ---- the step ---- */

static void test_step_small_hand_cases(void **state)
{
	struct fx_opts o = { .type = "atlas800t-a2", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_comm_params p;
	struct sched_parallel par = { .size = { 8, 1, 1, 1, 1 } };
	struct sched_train_model m = {
		.compute_usec = 1000, .layers = 2, .hidden = 1000, .seq_len = 1000,
		.micro_batch = 1, .micro_batches = 1, .act_bytes = 2, .grad_bytes = 4,
	};
	struct sched_npu_loc loc[8];
	struct sched_step_cost cost, keep;

	(void)state;
	sched_comm_params_for("910B", 1, &p);
	for (unsigned r = 0; r < 8; r++)
		loc[r] = L(0, r);
	/*
	 * TP 8 on one server: 4 all-reduces a layer, 2 layers, 1 micro-batch = 8, of
	 * b*s*h*2 = 2e6 bytes on the mesh: 2 * (13 + 2.5e5 / 18300) = 53.3224 us each,
	 * 426.5792 us. Each member sends 2 * 7/8 * 2e6 = 3.5e6 bytes each time:
	 * 8 members * 8 times * 3.5e6 = 224e6 bytes over HCCS.
	 */
	assert_int_equal(sched_comm_step(c, &p, &par, &m, loc, 8, &cost), 0);
	assert_usec(cost.comm_usec[SCHED_DIM_TP], 426.5792);
	assert_usec(cost.step_usec, 1426.5792);
	assert_usec(cost.compute_usec, 1000);
	assert_int_equal(cost.link[SCHED_DIM_TP], SCHED_LINK_HCCS);
	assert_int_equal(cost.link[SCHED_DIM_PP], SCHED_LINK_SELF);
	assert_usec(cost.bytes[SCHED_LINK_HCCS], 224e6);
	assert_true(cost.bytes[SCHED_LINK_ROCE_LEAF] == 0);
	for (int d = SCHED_DIM_CP; d < SCHED_DIM_COUNT; d++)
		assert_true(cost.comm_usec[d] == 0);

	/*
	 * DP 2, one NPU on each server: 1e6 parameters * 4 bytes = 4e6 bytes, a ring of 2
	 * nodes of 1: 2 * (60 + 4e6 / 2 / 20000) = 320 us, half hidden: 160 us exposed.
	 */
	struct sched_parallel dp2 = { .size = { 1, 1, 1, 2, 1 } };
	struct sched_npu_loc apart[] = { L(0, 0), L(1, 0) };

	m.params = 1e6;
	m.dp_overlap = 0.5;
	assert_int_equal(sched_comm_step(c, &p, &dp2, &m, apart, 2, &cost), 0);
	assert_usec(cost.comm_usec[SCHED_DIM_DP], 160);
	assert_int_equal(cost.link[SCHED_DIM_DP], SCHED_LINK_ROCE_LEAF);
	/* each sends 2 * 1/2 * 4e6 = 4e6 bytes: 8e6 in all */
	assert_usec(cost.bytes[SCHED_LINK_ROCE_LEAF], 8e6);

	/* errors leave ret alone */
	memset(&keep, 0x5a, sizeof(keep));
	cost = keep;
	assert_int_equal(sched_comm_step(c, &p, &par, &m, loc, 7, &cost), -EINVAL);
	loc[3] = L(0, 8); /* no device 8 on a 910B */
	assert_int_equal(sched_comm_step(c, &p, &par, &m, loc, 8, &cost), -EINVAL);
	loc[3] = L(2, 0); /* no server 2 */
	assert_int_equal(sched_comm_step(c, &p, &par, &m, loc, 8, &cost), -EINVAL);
	assert_memory_equal(&cost, &keep, sizeof(cost));
	sched_cluster_free(c);
}

/*
 * Context parallel passes the keys and values of this rank's heads (1/tp) and sequence
 * share (1/cp); expert gradients are all-reduced among the dp/ep ranks that hold the
 * same experts, so with dp = ep nothing of theirs moves. One 910B server of 8:
 */
static void test_step_cp_and_expert_gradients(void **state)
{
	struct fx_opts o = { .type = "atlas800t-a2", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_comm_params p;
	struct sched_train_model m = {
		.compute_usec = 1000, .layers = 1, .hidden = 1000, .seq_len = 1000,
		.micro_batch = 1, .micro_batches = 1, .act_bytes = 2, .grad_bytes = 4,
	};
	struct sched_parallel tpcp = { .size = { 2, 2, 1, 2, 1 } };
	struct sched_parallel moe = { .size = { 1, 1, 8, 8, 1 } };
	struct sched_npu_loc loc[8];
	struct sched_step_cost cost;

	(void)state;
	sched_comm_params_for("910B", 1, &p);
	for (unsigned r = 0; r < 8; r++)
		loc[r] = L(0, r);
	/*
	 * tp 2, cp 2: a ring pass of 2 * b*s*h*2 / (tp*cp) = 1e6 bytes, cp - 1 = 1 step,
	 * forward and backward of one layer: 2 * (13 + 1e6 / 18300) = 135.2896 us (over
	 * the HCCS link; without the 1/tp it was 2 * (13 + 2e6 / 18300) = 244.5792)
	 */
	assert_int_equal(sched_comm_step(c, &p, &tpcp, &m, loc, 8, &cost), 0);
	assert_usec(cost.comm_usec[SCHED_DIM_CP], 135.2896);
	/*
	 * ep 8 = dp 8, every parameter an expert's: no expert-data-parallel group larger
	 * than one rank, so no gradient all-reduce at all
	 */
	m.params = m.expert_params = 8e6;
	m.moe_layers = 1;
	m.top_k = 2;
	assert_int_equal(sched_comm_step(c, &p, &moe, &m, loc, 8, &cost), 0);
	assert_true(cost.comm_usec[SCHED_DIM_DP] == 0);
	assert_true(cost.comm_usec[SCHED_DIM_EP] > 0);
	/* half the parameters dense: 4e6 * 4 bytes over all 8 (a mesh): 2 * (13 + 2e6 /
	 * 18300) = 244.5792 us */
	m.expert_params = 4e6;
	assert_int_equal(sched_comm_step(c, &p, &moe, &m, loc, 8, &cost), 0);
	assert_usec(cost.comm_usec[SCHED_DIM_DP], 244.5792);
	sched_cluster_free(c);
}

/*
 * The worked case: Llama-2-70B (80 layers, hidden 8192), sequence 4096, micro-batch 1,
 * 16 micro-batches a step, bf16 activations and gradients, TP8 x PP4 = 32 NPUs of
 * 910B, dp 1. compute_usec = 6 * 70e9 * (16 * 4096 tokens) / (32 NPUs * 313 TFLOP/s *
 * 40% MFU) = 6.87e6 us (an assumed 910B peak and MFU: the same under either placement,
 * so it moves no comparison). The spine is oversubscribed 2:1.
 *
 * Per rank: 20 layers a stage; TP 4 * 16 * 20 = 1280 all-reduces of 1*4096*8192*2 =
 * 67108864 bytes; PP 2 * 16 = 32 messages of 67108864 / 8 = 8388608 bytes a boundary,
 * 3 boundaries on the critical path = 96.
 *
 * (a) 4 whole servers under leaf-0, ranks contiguous per server: every TP group is one
 *     server, a mesh: 2 * (13 + 8388608 / 18300) = 942.7878 us, * 1280 = 1206768.33 us.
 *     Stage boundaries are server to server under one leaf: 60 + 8388608 / 20000 =
 *     479.4304 us, * 96 = 46025.32 us. Step 8122793.65 us.
 * (b) topology-blind, 4 NPUs on each of 8 servers over 2 leaves (node-0..3 leaf-0,
 *     node-4..7 leaf-1), ranks contiguous per server: a TP group is 2 half servers
 *     under one leaf, k = 4: reduce-scatter 13 + 16777216 / 18300 = 929.7878, ring of
 *     2 nodes 2 * (60 + 8388608 / 20000) = 958.8608, all-gather 929.7878: 2818.4363 us,
 *     * 1280 = 3607598.49 us. Stage 1 (node-2,3) to stage 2 (node-4,5) crosses the
 *     spine at 10 GB/s: 60 + 8388608 / 10000 = 898.8608 us, * 96 = 86290.64 us.
 *     Step 10563889.13 us.
 */
static void test_step_70b_placement_matters(void **state)
{
	struct fx_opts o = { .type = "atlas800t-a2", .servers = 8, .switches = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_comm_params p;
	struct conf_job_spec spec = { .tp = 8, .pp = 4 };
	struct sched_parallel par;
	struct sched_train_model m = {
		.compute_usec = 6.87e6, .layers = 80, .hidden = 8192, .seq_len = 4096,
		.micro_batch = 1, .micro_batches = 16, .params = 70e9, .act_bytes = 2,
		.grad_bytes = 2,
	};
	struct sched_npu_loc a[32], b[32];
	struct sched_step_cost ca, cb;

	(void)state;
	sched_comm_params_for("910B", 2, &p);
	assert_int_equal(sched_parallel_from_spec(&spec, 32, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_DP], 1);
	for (unsigned r = 0; r < 32; r++) {
		a[r] = L(r / 8, r % 8);
		b[r] = L(r / 4, r % 4);
	}
	assert_int_equal(sched_comm_step(c, &p, &par, &m, a, 32, &ca), 0);
	assert_int_equal(sched_comm_step(c, &p, &par, &m, b, 32, &cb), 0);
	print_message("  70B TP8xPP4: (a) step %.0f us (tp %.0f, pp %.0f); "
		      "(b) step %.0f us (tp %.0f, pp %.0f)\n",
		      ca.step_usec, ca.comm_usec[SCHED_DIM_TP], ca.comm_usec[SCHED_DIM_PP],
		      cb.step_usec, cb.comm_usec[SCHED_DIM_TP], cb.comm_usec[SCHED_DIM_PP]);

	assert_int_equal(ca.link[SCHED_DIM_TP], SCHED_LINK_HCCS);
	assert_int_equal(ca.link[SCHED_DIM_PP], SCHED_LINK_ROCE_LEAF);
	assert_int_equal(cb.link[SCHED_DIM_TP], SCHED_LINK_ROCE_LEAF);
	assert_int_equal(cb.link[SCHED_DIM_PP], SCHED_LINK_ROCE_SPINE);
	for (int d = SCHED_DIM_CP; d <= SCHED_DIM_DP; d++) {
		assert_int_equal(ca.link[d], SCHED_LINK_SELF);
		assert_true(ca.comm_usec[d] == 0 && cb.comm_usec[d] == 0);
	}
	assert_usec(ca.comm_usec[SCHED_DIM_TP], 1206768.33);
	assert_usec(ca.comm_usec[SCHED_DIM_PP], 46025.32);
	assert_usec(ca.step_usec, 8122793.65);
	assert_usec(cb.comm_usec[SCHED_DIM_TP], 3607598.49);
	assert_usec(cb.comm_usec[SCHED_DIM_PP], 86290.64);
	assert_usec(cb.step_usec, 10563889.13);
	assert_true(ca.step_usec < cb.step_usec);
	assert_usec(ca.compute_usec, cb.compute_usec);

	/* (a) sends nothing over RoCE but the stage boundaries; (b) moves TP traffic
	 * over RoCE and crosses the spine */
	assert_true(ca.bytes[SCHED_LINK_ROCE_SPINE] == 0);
	assert_true(cb.bytes[SCHED_LINK_ROCE_SPINE] > 0);
	assert_true(cb.bytes[SCHED_LINK_ROCE_LEAF] > ca.bytes[SCHED_LINK_ROCE_LEAF]);
	/* PP in (a): 8 rank pairs a boundary, 3 boundaries, 32 messages a pair (16 each
	 * way) of 8388608 bytes: 6442450944 bytes, all under the leaf */
	assert_usec(ca.bytes[SCHED_LINK_ROCE_LEAF], 8.0 * 3 * 32 * 8388608);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_figures_per_chip),
		cmocka_unit_test(test_params_spine_oversub_and_unknown_chip),
		cmocka_unit_test(test_allreduce_within_one_server),
		cmocka_unit_test(test_allreduce_uneven_group),
		cmocka_unit_test(test_allreduce_mesh_on_910b),
		cmocka_unit_test(test_allreduce_hierarchical_leaf_and_spine),
		cmocka_unit_test(test_alltoall_one_server_vs_eight),
		cmocka_unit_test(test_p2p_and_nothing_to_do),
		cmocka_unit_test(test_link_between_910_rings_and_pcie),
		cmocka_unit_test(test_link_between_910b_mesh_leaf_spine),
		cmocka_unit_test(test_link_between_a3_pairs_server_pod),
		cmocka_unit_test(test_group_link_slowest_pair),
		cmocka_unit_test(test_group_of_nodes_intra_inter),
		cmocka_unit_test(test_parallel_groups_tp2_ep2_dp4_pp2),
		cmocka_unit_test(test_parallel_group_of_inverts_group),
		cmocka_unit_test(test_parallel_from_spec_errors),
		cmocka_unit_test(test_step_small_hand_cases),
		cmocka_unit_test(test_step_cp_and_expert_gradients),
		cmocka_unit_test(test_step_70b_placement_matters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
