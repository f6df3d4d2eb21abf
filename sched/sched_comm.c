// SPDX-License-Identifier: MIT
/*
 * Link classes and the alpha-beta cost of a job's collectives (sched_comm.h).
 *
 * The figures below are HCCL's own planning constants where HCCL has one: the per-NPU
 * bandwidths HCCL uses to choose its algorithms (hcomm, src/platform/common/
 * device_capacity.cc, GetBandWidthPerNPU(): level 0 the server's HCCS, level 1 the
 * RDMA NIC, level 3 the A3 die pair) and the static latency per algorithm step it
 * weighs them with. Where HCCL has none (the A3 super pod's fabric, the 910's PCIe
 * between rings) the figure and its reasoning are given where it is set. Paths are in
 * the CANN hcomm repository (mirror read: github.com/xiaobingling93-pixel/cann-hcomm,
 * commit b5f3e5be).
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "sched_comm.h"

const char *sched_link_name(enum sched_link l)
{
	static const char *const names[SCHED_LINK_COUNT] = {
		"self", "sio", "hccs", "pcie", "superpod", "roce_leaf", "roce_spine",
	};

	return l < SCHED_LINK_COUNT ? names[l] : "?";
}

/*
 * Static latency of one algorithm step, in microseconds.
 * - Inside a server or super pod: 13 us, BASE_COMM_LATENCY in
 *   src/algorithm/impl/legacy/hccl_impl.h ("static communication latency (us)"), the
 *   step latency CalcOptimalIntraRingsize() (src/algorithm/impl/coll_executor/
 *   coll_comm_executor.cc) charges to HCCS and SIO steps on A3.
 * - Over RoCE: 60 us, LATENCY in src/algorithm/impl/operator/coll_alg_operator.cc
 *   ("static latency 60 us"), charged per step when HCCL chooses between ring, NHR and
 *   halving-doubling across servers (SelectAlgoTypeForReduceScatter() and the like,
 *   with the level 1 bandwidth).
 * The spine adds switch hops of a few microseconds, small beside 60 us: no separate
 * figure (none published).
 */
#define STEP_LATENCY_FABRIC_USEC 13.0
#define STEP_LATENCY_ROCE_USEC 60.0

/* HCCL derates nominal link rates by an efficiency factor: 0.8 for RDMA NICs, 0.85 for
 * PCIe and SIO (device_capacity.cc: 12.5f * 0.8, 25.0f * 0.8, 32.0f * 0.85,
 * 240.0f * 0.85). */
#define PCIE4_X16_GBYTE_PER_SEC (32.0 * 0.85)

static void set_link(struct sched_comm_params *p, enum sched_link l, double gbyte_per_sec,
		     double latency_usec, unsigned lanes)
{
	p->link[l].gbyte_per_sec = gbyte_per_sec;
	p->link[l].latency_usec = latency_usec;
	p->link[l].lanes = lanes;
}

void sched_comm_params_for(const char *chip, double spine_oversub, struct sched_comm_params *ret)
{
	bool is_910 = chip && strcmp(chip, "910") == 0;
	bool is_910c = chip && strcmp(chip, "910C") == 0;
	double roce;

	memset(ret, 0, sizeof(*ret));
	/* nothing moves: the cost functions charge 0 and never read these */
	set_link(ret, SCHED_LINK_SELF, 0, 0, 1);
	if (is_910) {
		/*
		 * Atlas 800 (model 9000), Ascend 910: two HCCS rings of 4 NPUs, the rings
		 * joined over PCIe (MindCluster scheduling guide, "Affinity Scheduling
		 * Description", Atlas training products: four processors interconnected
		 * through HCCS, the HCCS rings through PCIe; Huawei Cloud CCE's "Ascend
		 * HCCS-interconnected NPU affinity" says the same; the Atlas 900 launch
		 * material: NPU to CPU over PCIe 4.0).
		 * HCCS 10 GB/s: BANDWIDTH_HCCS_910A = 10.0f, HCCL's level 0 figure for
		 * DEV_TYPE_910. 3 lanes: each NPU of a ring of 4 reaching its 3 peers
		 * directly, the 4 being "interconnected" as those guides put it; no
		 * source found gives the per-NPU HCCS port count: not verified.
		 */
		set_link(ret, SCHED_LINK_HCCS, 10.0, STEP_LATENCY_FABRIC_USEC, 3);
		/*
		 * PCIe across the rings: a reasoned figure, not a published one. Each NPU
		 * has a PCIe 4.0 x16 link, 27.2 GB/s at HCCL's 0.85 efficiency
		 * (BANDWIDTH_PCIE_GEN4 = 32.0f * 0.85); crossing to the other group goes
		 * up through the host side, where the 4 NPUs of a group cross together
		 * in a collective, so a quarter each: 6.8 GB/s, below HCCS as HCCL's
		 * preference for a ring implies.
		 */
		set_link(ret, SCHED_LINK_PCIE, PCIE4_X16_GBYTE_PER_SEC / 4, STEP_LATENCY_FABRIC_USEC,
			 1);
		/* RoCE 10 GB/s: BANDWIDTH_RDMA_910A = 12.5f * 0.8, a 100GE port per NPU */
		roce = 12.5 * 0.8;
		/* no die pairs, no super pod: never returned by sched_link_between() on
		 * a 910; filled so that nothing divides by zero */
		ret->link[SCHED_LINK_SIO] = ret->link[SCHED_LINK_HCCS];
	} else if (is_910c) {
		/*
		 * Atlas 900 A3 SuperPoD, Ascend 910C: two dies per NPU module joined by
		 * SIO, 8 modules a server, servers joined into the super pod by the UB
		 * (HCCS) fabric.
		 * SIO 204 GB/s: BANDWIDTH_SIO_910_93 = 240.0f * 0.85, HCCL's level 3.
		 */
		set_link(ret, SCHED_LINK_SIO, 240.0 * 0.85, STEP_LATENCY_FABRIC_USEC, 1);
		/*
		 * Inside a server and across the super pod, per die: 196 GB/s, half of the
		 * 392 GB/s of unidirectional UB bandwidth per 910C (two dies) given by
		 * "Serving Large Language Models on Huawei CloudMatrix384" (Zuo et al.,
		 * arXiv:2506.12708, section 3, the UB plane); the paper describes the UB
		 * network as a two-tier non-blocking Clos, so the super pod's figure is
		 * the server's. Read through secondary summaries of the paper, not its
		 * text: not verified. HCCL itself still plans A3's level 0 with the
		 * 910B's per-link 18.3 GB/s (device_capacity.cc). One lane: a switched
		 * fabric gives the die's bandwidth to one peer or splits it among many,
		 * so the mesh algorithm gains nothing over the ring.
		 */
		set_link(ret, SCHED_LINK_HCCS, 392.0 / 2, STEP_LATENCY_FABRIC_USEC, 1);
		ret->link[SCHED_LINK_SUPERPOD] = ret->link[SCHED_LINK_HCCS];
		/*
		 * RoCE 20 GB/s per die: HCCL's level 1 for DEV_TYPE_910_93 is
		 * BANDWIDTH_RDMA_910B = 25.0f * 0.8; it agrees with the paper's RDMA plane
		 * of 400 Gb/s per 910C, 200 Gb/s per die.
		 */
		roce = 25.0 * 0.8;
		ret->link[SCHED_LINK_PCIE] = ret->link[SCHED_LINK_HCCS];
	} else {
		/*
		 * Atlas 800T/800I A2, Ascend 910B: 8 NPUs in one HCCS full mesh.
		 * HCCS 18.3 GB/s per link: BANDWIDTH_HCCS_910B = 18.3f, HCCL's level 0
		 * for DEV_TYPE_910B. 7 lanes: a link to each of the 7 peers, which is
		 * what HCCL's mesh algorithms on 910B drive at once.
		 */
		set_link(ret, SCHED_LINK_HCCS, 18.3, STEP_LATENCY_FABRIC_USEC, 7);
		/* RoCE 20 GB/s: BANDWIDTH_RDMA_910B = 25.0f * 0.8, a 200GE port per NPU */
		roce = 25.0 * 0.8;
		ret->link[SCHED_LINK_SIO] = ret->link[SCHED_LINK_HCCS];
		ret->link[SCHED_LINK_PCIE] = ret->link[SCHED_LINK_HCCS];
	}
	set_link(ret, SCHED_LINK_ROCE_LEAF, roce, STEP_LATENCY_ROCE_USEC, 1);
	if (!is_910c)
		ret->link[SCHED_LINK_SUPERPOD] = ret->link[SCHED_LINK_ROCE_LEAF];
	/* !(x >= 1) also catches NaN */
	ret->spine_oversub = spine_oversub >= 1 ? spine_oversub : 1;
	set_link(ret, SCHED_LINK_ROCE_SPINE, roce / ret->spine_oversub, STEP_LATENCY_ROCE_USEC, 1);
}

static bool loc_is_valid(const struct sched_cluster *c, struct sched_npu_loc l)
{
	return l.server < c->server_count && l.device < c->servers[l.server].conf->npu_count;
}

enum sched_link sched_link_between(const struct sched_cluster *c, struct sched_npu_loc a,
				   struct sched_npu_loc b)
{
	const struct sched_server *sa, *sb;
	const struct conf_server_type *t;

	assert(loc_is_valid(c, a) && loc_is_valid(c, b));
	sa = &c->servers[a.server];
	sb = &c->servers[b.server];
	if (a.server == b.server) {
		t = sa->conf->type;
		if (a.device == b.device)
			return SCHED_LINK_SELF;
		switch (t->hccs) {
		case CONF_HCCS_PAIR:
			return a.device / 2 == b.device / 2 ? SCHED_LINK_SIO : SCHED_LINK_HCCS;
		case CONF_HCCS_RING:
			return a.device / t->hccs_group_size == b.device / t->hccs_group_size ?
				       SCHED_LINK_HCCS :
				       SCHED_LINK_PCIE;
		default:
			return SCHED_LINK_HCCS;
		}
	}
	/* the super pod's fabric is an A3 thing; elsewhere a pod name is only a label */
	if (sa->conf->type->hccs == CONF_HCCS_PAIR && sb->conf->type->hccs == CONF_HCCS_PAIR &&
	    sa->conf->super_pod && sb->conf->super_pod &&
	    strcmp(sa->conf->super_pod, sb->conf->super_pod) == 0)
		return SCHED_LINK_SUPERPOD;
	return sa->switch_index == sb->switch_index ? SCHED_LINK_ROCE_LEAF : SCHED_LINK_ROCE_SPINE;
}

/* What one NPU can push through class @l at once: a link times its lanes. */
static double npu_gbyte_per_sec(const struct sched_comm_params *p, enum sched_link l)
{
	return p->link[l].gbyte_per_sec * (p->link[l].lanes ? p->link[l].lanes : 1);
}

/*
 * Is @a slower than @b under @p? By what an NPU gets from the class, not one link: a
 * 910B HCCS link (18.3 GB/s) is below its NIC (20 GB/s), but its 7 of them are not,
 * and no collective HCCL runs on the mesh is bound by one link. SELF is the fastest of
 * all; on equal bandwidth the farther domain (the later class) counts as slower, so
 * the answer is deterministic.
 */
bool sched_link_is_slower(const struct sched_comm_params *p, enum sched_link a, enum sched_link b)
{
	double wa, wb;

	if (a == SCHED_LINK_SELF || b == SCHED_LINK_SELF)
		return b == SCHED_LINK_SELF && a != SCHED_LINK_SELF;
	wa = npu_gbyte_per_sec(p, a);
	wb = npu_gbyte_per_sec(p, b);
	if (wa != wb)
		return wa < wb;
	return a > b;
}

static enum sched_link slower(const struct sched_comm_params *p, enum sched_link a,
			      enum sched_link b)
{
	return sched_link_is_slower(p, a, b) ? a : b;
}

/*
 * A group as an arithmetic run of ranks: member i runs at loc[base + i * stride].
 * Every group sched_parallel.c forms is one (the public functions pass stride 1), so
 * the step model needs no scratch array.
 */
struct run {
	const struct sched_npu_loc *loc;
	size_t base, stride, n;
};

static struct sched_npu_loc run_at(const struct run *r, size_t i)
{
	return r->loc[r->base + i * r->stride];
}

/* One pass over the pairs (O(n^2)): servers, the slowest link inside and between. */
static void run_group_of(const struct sched_cluster *c, const struct sched_comm_params *p,
			 const struct run *r, struct sched_comm_group *ret)
{
	enum sched_link intra = SCHED_LINK_SELF, inter = SCHED_LINK_SELF;
	unsigned nodes = 0;

	unsigned most = 0, least = 0;

	for (size_t i = 0; i < r->n; i++) {
		struct sched_npu_loc a = run_at(r, i);
		bool first_on_server = true;
		unsigned here = 1;

		for (size_t j = 0; j < i; j++) {
			struct sched_npu_loc b = run_at(r, j);
			enum sched_link l = sched_link_between(c, a, b);

			if (a.server == b.server) {
				first_on_server = false;
				intra = slower(p, intra, l);
			} else {
				inter = slower(p, inter, l);
			}
		}
		if (!first_on_server)
			continue;
		nodes++;
		/* the first member of its server counts the server's members */
		for (size_t j = i + 1; j < r->n; j++)
			here += run_at(r, j).server == a.server;
		if (here > most)
			most = here;
		if (!least || here < least)
			least = here;
	}
	ret->members = (unsigned)r->n;
	ret->nodes = nodes;
	ret->intra = intra;
	ret->inter = inter;
	ret->most_per_node = most;
	ret->least_per_node = least;
}

static enum sched_link group_slowest(const struct sched_comm_params *p,
				     const struct sched_comm_group *g)
{
	return g->nodes > 1 ? slower(p, g->intra, g->inter) : g->intra;
}

enum sched_link sched_group_link(const struct sched_cluster *c, const struct sched_comm_params *p,
				 const struct sched_npu_loc *m, size_t n)
{
	struct run r = { .loc = m, .base = 0, .stride = 1, .n = n };
	struct sched_comm_group g;

	run_group_of(c, p, &r, &g);
	return group_slowest(p, &g);
}

void sched_comm_group_of(const struct sched_cluster *c, const struct sched_comm_params *p,
			 const struct sched_npu_loc *m, size_t n, struct sched_comm_group *ret)
{
	struct run r = { .loc = m, .base = 0, .stride = 1, .n = n };

	run_group_of(c, p, &r, ret);
}

/* ---- costs ---- */

/* One message of @bytes over @l: a + B / W, W in GB/s (10^3 bytes per microsecond). */
static double msg_usec(const struct sched_comm_params *p, enum sched_link l, double bytes)
{
	if (l == SCHED_LINK_SELF || bytes <= 0)
		return 0;
	return p->link[l].latency_usec + bytes / (p->link[l].gbyte_per_sec * 1e3);
}

/* Members on the fullest node. */
static unsigned most_per_node(const struct sched_comm_group *g)
{
	return g->most_per_node ? g->most_per_node : (g->members + g->nodes - 1) / g->nodes;
}

/* Members on the emptiest node (at least 1). */
static unsigned least_per_node(const struct sched_comm_group *g)
{
	unsigned k = g->least_per_node ? g->least_per_node : g->members / g->nodes;

	return k ? k : 1;
}

/* Is @l a mesh for @n members: can one NPU reach its n-1 peers at once? */
static bool is_mesh(const struct sched_comm_params *p, enum sched_link l, unsigned n)
{
	return l != SCHED_LINK_SELF && p->link[l].lanes >= n - 1;
}

static double min3(double a, double b, double c)
{
	double m = a < b ? a : b;

	return m < c ? m : c;
}

/* ceil(log2 n), n >= 1 */
static unsigned log2_up(unsigned n)
{
	unsigned s = 0;

	while ((1u << s) < n && s < 31)
		s++;
	return s;
}

/*
 * Reduce-scatter (or all-gather) of @bytes among @n members over @l: the cheapest of a
 * ring (n-1 steps of bytes/n), recursive halving (log2 n steps moving the same
 * (n-1)/n * bytes) and, on a mesh, one step to every peer at once.
 */
static double scatter_usec(const struct sched_comm_params *p, enum sched_link l, unsigned n,
			   double bytes)
{
	double ring, halving, mesh;

	if (n <= 1 || l == SCHED_LINK_SELF || !(bytes > 0))
		return 0;
	ring = (n - 1) * msg_usec(p, l, bytes / n);
	halving = log2_up(n) * p->link[l].latency_usec +
		  (n - 1) * (bytes / n) / (p->link[l].gbyte_per_sec * 1e3);
	mesh = is_mesh(p, l, n) ? msg_usec(p, l, bytes / n) : ring;
	return min3(ring, halving, mesh);
}

/*
 * The same inside one server: on a 910 whose members sit in both HCCS rings (intra is
 * pcie), inside each ring over HCCS, then between the two rings over PCIe with the
 * share each member holds, as HCCL runs it there (the rings are its level 0).
 */
static double node_scatter_usec(const struct sched_comm_params *p, enum sched_link intra,
				unsigned k, double bytes)
{
	unsigned per_ring;

	if (intra != SCHED_LINK_PCIE || k <= 2)
		return scatter_usec(p, intra, k, bytes);
	per_ring = (k + 1) / 2;
	return scatter_usec(p, SCHED_LINK_HCCS, per_ring, bytes) +
	       scatter_usec(p, SCHED_LINK_PCIE, 2, bytes / per_ring);
}

static bool is_trivial(const struct sched_comm_group *g, double bytes)
{
	return g->members <= 1 || g->nodes == 0 || !(bytes > 0);
}

double sched_comm_allreduce_usec(const struct sched_comm_params *p,
				 const struct sched_comm_group *g, double bytes)
{
	if (is_trivial(g, bytes))
		return 0;
	if (g->nodes == 1)
		return 2 * node_scatter_usec(p, g->intra, g->members, bytes);
	/* inside each node: reduce-scatter, then all-gather, over intra; between them an
	 * all-reduce of each NPU's share, every NPU over its own NIC */
	return 2 * node_scatter_usec(p, g->intra, most_per_node(g), bytes) +
	       2 * scatter_usec(p, g->inter, g->nodes, bytes / least_per_node(g));
}

double sched_comm_alltoall_usec(const struct sched_comm_params *p,
				const struct sched_comm_group *g, double bytes)
{
	unsigned k, lanes, rounds;
	double piece;

	if (is_trivial(g, bytes))
		return 0;
	piece = bytes / g->members;
	k = g->nodes == 1 ? g->members : most_per_node(g);
	lanes = g->intra == SCHED_LINK_SELF || !p->link[g->intra].lanes ? 1 :
									   p->link[g->intra].lanes;
	/* the k-1 peers of the fullest node, lanes of them at a time; the emptiest node's
	 * members have the most peers elsewhere, one at a time over inter */
	rounds = (k - 1 + lanes - 1) / lanes;
	return rounds * msg_usec(p, g->intra, piece) +
	       (g->nodes > 1 ? (g->members - least_per_node(g)) * msg_usec(p, g->inter, piece) :
			       0);
}

double sched_comm_p2p_usec(const struct sched_comm_params *p, enum sched_link link, double bytes)
{
	return msg_usec(p, link, bytes);
}

/* ---- the step ---- */

/* Bytes one member sends, by class, in each collective: what sched_step_cost.bytes adds. */
static void allreduce_bytes(const struct sched_comm_group *g, double bytes, double *ret)
{
	double k;

	if (is_trivial(g, bytes))
		return;
	if (g->nodes == 1) {
		ret[g->intra] += 2.0 * (g->members - 1) / g->members * bytes;
		return;
	}
	/* per member on average: members/nodes share a node */
	k = (double)g->members / g->nodes;
	ret[g->intra] += 2.0 * (k - 1) / k * bytes;
	ret[g->inter] += 2.0 * (g->nodes - 1) / g->nodes * bytes / k;
}

static void alltoall_bytes(const struct sched_comm_group *g, double bytes, double *ret)
{
	double k;

	if (is_trivial(g, bytes))
		return;
	k = g->nodes == 1 ? g->members : (double)g->members / g->nodes;
	ret[g->intra] += (k - 1) * bytes / g->members;
	if (g->nodes > 1)
		ret[g->inter] += (double)(g->members - k) * bytes / g->members;
}

/* The distance in rank numbers between neighbours of dimension @d (sched_comm.h's rank
 * formula: tp innermost, then cp, dp, pp; ep runs inside dp). */
static size_t dim_stride(const struct sched_parallel *par, enum sched_dim d)
{
	size_t s = 1;

	if (d == SCHED_DIM_TP)
		return s;
	s *= par->size[SCHED_DIM_TP];
	if (d == SCHED_DIM_CP)
		return s;
	s *= par->size[SCHED_DIM_CP];
	if (d == SCHED_DIM_DP || d == SCHED_DIM_EP)
		return s;
	return s * par->size[SCHED_DIM_DP];
}

/* What one collective per group of a dimension costs. */
enum coll { COLL_ALLREDUCE, COLL_ALLTOALL, COLL_RING_PASS };

/*
 * Run @coll of @bytes on every group of dimension @d, @times per step. The groups run
 * at once, so the dimension's time is its slowest group's; its bytes are every
 * member's. Sets ret->link[d] and returns the time.
 */
static double dim_cost(const struct sched_cluster *c, const struct sched_comm_params *p,
		       const struct sched_parallel *par, const struct sched_npu_loc *loc,
		       enum sched_dim d, enum coll coll, double bytes, double times,
		       struct sched_step_cost *ret)
{
	unsigned npus = sched_parallel_npus(par), size = par->size[d];
	double worst = 0;

	ret->link[d] = SCHED_LINK_SELF;
	if (size <= 1 || !(times > 0) || !(bytes > 0))
		return 0;
	for (unsigned r = 0; r < npus; r++) {
		struct run run = { .loc = loc, .base = r, .stride = dim_stride(par, d), .n = size };
		struct sched_comm_group g;
		double t, sent[SCHED_LINK_COUNT] = { 0 };
		enum sched_link l;

		if (sched_parallel_coord(par, r, d) != 0)
			continue; /* not the lowest rank of its group */
		run_group_of(c, p, &run, &g);
		l = group_slowest(p, &g);
		ret->link[d] = slower(p, ret->link[d], l);
		switch (coll) {
		case COLL_ALLREDUCE:
			t = sched_comm_allreduce_usec(p, &g, bytes);
			allreduce_bytes(&g, bytes, sent);
			break;
		case COLL_ALLTOALL:
			t = sched_comm_alltoall_usec(p, &g, bytes);
			alltoall_bytes(&g, bytes, sent);
			break;
		default:
			/* a ring pass: size-1 steps, each a message to the next member, the
			 * ring bound by its slowest link */
			t = (size - 1) * msg_usec(p, l, bytes);
			sent[l] += (size - 1) * bytes;
			break;
		}
		if (t > worst)
			worst = t;
		for (int k = 0; k < SCHED_LINK_COUNT; k++)
			ret->bytes[k] += sent[k] * size * times;
	}
	return worst * times;
}

/*
 * The expert-data-parallel all-reduce: the ranks with the same tp, cp and pp
 * coordinates and the same place in their EP group (dp_i % ep) hold the same experts;
 * dp/ep of them, ep*tp*cp ranks apart. Adds to ret->link[DP] and the bytes.
 */
static double expert_dp_cost(const struct sched_cluster *c, const struct sched_comm_params *p,
			     const struct sched_parallel *par, const struct sched_npu_loc *loc,
			     double bytes, struct sched_step_cost *ret)
{
	unsigned npus = sched_parallel_npus(par), ep = par->size[SCHED_DIM_EP];
	unsigned n = par->size[SCHED_DIM_DP] / ep;
	size_t stride = dim_stride(par, SCHED_DIM_DP) * ep;
	double worst = 0;

	if (n <= 1 || !(bytes > 0))
		return 0;
	for (unsigned r = 0; r < npus; r++) {
		struct run run = { .loc = loc, .base = r, .stride = stride, .n = n };
		struct sched_comm_group g;
		double t, sent[SCHED_LINK_COUNT] = { 0 };

		if (sched_parallel_coord(par, r, SCHED_DIM_DP) >= ep)
			continue; /* not the lowest rank of its group */
		run_group_of(c, p, &run, &g);
		ret->link[SCHED_DIM_DP] = slower(p, ret->link[SCHED_DIM_DP], group_slowest(p, &g));
		t = sched_comm_allreduce_usec(p, &g, bytes);
		allreduce_bytes(&g, bytes, sent);
		if (t > worst)
			worst = t;
		for (int k = 0; k < SCHED_LINK_COUNT; k++)
			ret->bytes[k] += sent[k] * n;
	}
	return worst;
}

/* PP: every stage boundary; a rank of stage j sends to the same place in stage j+1. */
static double pp_cost(const struct sched_cluster *c, const struct sched_comm_params *p,
		      const struct sched_parallel *par, const struct sched_npu_loc *loc,
		      double bytes, double per_boundary, struct sched_step_cost *ret)
{
	unsigned npus = sched_parallel_npus(par), pp = par->size[SCHED_DIM_PP];
	size_t s = dim_stride(par, SCHED_DIM_PP);
	double worst = 0;

	ret->link[SCHED_DIM_PP] = SCHED_LINK_SELF;
	if (pp <= 1 || !(per_boundary > 0) || !(bytes > 0))
		return 0;
	for (size_t r = 0; r + s < npus; r++) {
		enum sched_link l = sched_link_between(c, loc[r], loc[r + s]);
		double t = msg_usec(p, l, bytes);

		ret->link[SCHED_DIM_PP] = slower(p, ret->link[SCHED_DIM_PP], l);
		if (t > worst)
			worst = t;
		/* per_boundary counts both directions: half of it each way */
		ret->bytes[l] += bytes * per_boundary;
	}
	return worst * per_boundary * (pp - 1);
}

int sched_comm_step(const struct sched_cluster *c, const struct sched_comm_params *p,
		    const struct sched_parallel *par, const struct sched_train_model *m,
		    const struct sched_npu_loc *loc, size_t nranks, struct sched_step_cost *ret)
{
	unsigned tp = par->size[SCHED_DIM_TP], cp = par->size[SCHED_DIM_CP];
	unsigned ep = par->size[SCHED_DIM_EP], pp = par->size[SCHED_DIM_PP];
	struct sched_step_cost cost;
	double tokens, act, stage_layers, stage_moe_layers, mb, grads;

	for (int d = 0; d < SCHED_DIM_COUNT; d++)
		if (par->size[d] == 0)
			return -EINVAL;
	if (par->size[SCHED_DIM_DP] % ep || nranks != sched_parallel_npus(par))
		return -EINVAL;
	for (size_t r = 0; r < nranks; r++)
		if (!loc_is_valid(c, loc[r]))
			return -EINVAL;

	memset(&cost, 0, sizeof(cost));
	cost.compute_usec = m->compute_usec;
	tokens = (double)m->micro_batch * m->seq_len;
	act = tokens * m->hidden * m->act_bytes; /* one micro-batch's activations */
	stage_layers = (double)m->layers / pp;
	stage_moe_layers = (double)m->moe_layers / pp;
	mb = m->micro_batches;

	cost.comm_usec[SCHED_DIM_TP] = dim_cost(c, p, par, loc, SCHED_DIM_TP, COLL_ALLREDUCE,
						act / cp, 4 * mb * stage_layers, &cost);
	/* a ring pass of the keys and values of this rank's share of the heads (tp) and of
	 * the sequence (cp); grouped-query attention's fewer K/V heads are not modelled */
	cost.comm_usec[SCHED_DIM_CP] = dim_cost(c, p, par, loc, SCHED_DIM_CP, COLL_RING_PASS,
						2 * act / ((double)tp * cp), 2 * mb * stage_layers,
						&cost);
	cost.comm_usec[SCHED_DIM_EP] = dim_cost(c, p, par, loc, SCHED_DIM_EP, COLL_ALLTOALL,
						act * m->top_k / ((double)tp * cp),
						4 * mb * stage_moe_layers, &cost);
	cost.comm_usec[SCHED_DIM_PP] = pp_cost(c, p, par, loc, act / ((double)tp * cp), 2 * mb,
					       &cost);
	/* dense gradients over the whole dp group; an expert's over the dp/ep ranks that
	 * hold the same experts (Megatron's expert-data-parallel group) */
	grads = (m->params - m->expert_params) / ((double)tp * pp) * m->grad_bytes;
	cost.comm_usec[SCHED_DIM_DP] = dim_cost(c, p, par, loc, SCHED_DIM_DP, COLL_ALLREDUCE,
						grads, 1, &cost);
	grads = m->expert_params / ((double)tp * pp * ep) * m->grad_bytes;
	cost.comm_usec[SCHED_DIM_DP] += expert_dp_cost(c, p, par, loc, grads, &cost);
	cost.comm_usec[SCHED_DIM_DP] *= 1 - m->dp_overlap;
	cost.step_usec = cost.compute_usec;
	for (int d = 0; d < SCHED_DIM_COUNT; d++)
		cost.step_usec += cost.comm_usec[d];
	*ret = cost;
	return 0;
}
