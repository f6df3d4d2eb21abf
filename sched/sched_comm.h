/* SPDX-License-Identifier: MIT */
/*
 * sched_comm: where a job's ranks sit and what their communication costs.
 *
 * Two parts, one file each:
 *  - sched_parallel.c: the rank order of a job's parallel dimensions (tp, cp, ep, dp,
 *    pp) and the groups each dimension forms. The rule: rank = tp_i + tp * (cp_i + cp *
 *    (dp_i + dp * pp_i)), tensor parallel innermost, pipeline outermost; expert
 *    parallel is carved from data parallel (dp % ep == 0), an EP group being ep
 *    consecutive dp indices. Sources: MindSpore's device matrix for semi-auto parallel
 *    (tensor model parallel innermost, `pipeline_stages` outermost, `expert_num`
 *    sharded over the data-parallel ranks) and Megatron-LM's default order
 *    "tp-cp-ep-dp-pp". Placement keeps consecutive ranks on one server, so the
 *    innermost groups get the fastest links.
 *  - sched_comm.c: link classes between two NPUs of a cluster and an alpha-beta
 *    (Hockney) cost model of the collectives a training step runs: a message of B
 *    bytes over a link of latency a and bandwidth W costs a + B / W. The figures of
 *    each link class and their sources are in sched_comm.c's table, next to the code
 *    that uses them.
 *
 * Units are in the names: _usec microseconds, _bytes bytes, _gbyte_per_sec 10^9 bytes
 * per second, one direction, per NPU. Pure functions: no allocation unless said, no
 * clock, no I/O; thread-safe on a cluster nobody changes meanwhile.
 */
#ifndef ASCENDFS_SCHED_COMM_H
#define ASCENDFS_SCHED_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "ascend_sched.h"

/* ---- the parallel dimensions (sched_parallel.c) ---- */

enum sched_dim {
	SCHED_DIM_TP,	/* tensor parallel */
	SCHED_DIM_CP,	/* context (sequence) parallel */
	SCHED_DIM_EP,	/* expert parallel, inside data parallel */
	SCHED_DIM_DP,	/* data parallel (EP groups included) */
	SCHED_DIM_PP,	/* pipeline parallel */
	SCHED_DIM_COUNT
};

/* sched_dim_name() - "tp", "cp", "ep", "dp", "pp" (static). */
const char *sched_dim_name(enum sched_dim d);

/* A job's parallel layout; every size >= 1 and tp*cp*dp*pp = the job's NPUs. */
struct sched_parallel {
	unsigned size[SCHED_DIM_COUNT];
};

/*
 * sched_parallel_from_spec() - the layout of a job of @npus NPUs from its spec's
 * `parallel:` (conf_job_spec tp, cp, ep, dp, pp; 0 = not given, taken as 1, dp as
 * npus / (tp*cp*pp)). @spec may be NULL (pure data parallel). Returns 0, or -EINVAL
 * when the sizes do not multiply to @npus or ep does not divide dp (a spec that
 * conf_job_spec_parse() accepted never fails for its own npus).
 */
int sched_parallel_from_spec(const struct conf_job_spec *spec, unsigned npus,
			     struct sched_parallel *ret);

/* sched_parallel_npus() - tp*cp*dp*pp (ep is inside dp). */
unsigned sched_parallel_npus(const struct sched_parallel *p);

/* sched_parallel_coord() - the index of @rank along dimension @d (0..size-1; for EP
 * the index inside its EP group, dp_i % ep). @rank < sched_parallel_npus(). */
unsigned sched_parallel_coord(const struct sched_parallel *p, unsigned rank, enum sched_dim d);

/* sched_parallel_group_count() - how many groups dimension @d forms: npus / size. */
unsigned sched_parallel_group_count(const struct sched_parallel *p, enum sched_dim d);

/*
 * sched_parallel_group() - the ranks of group @g (0..group_count-1) of dimension @d,
 * in ascending order, into @ret_ranks (room for size[d] entries). Groups are numbered
 * by their lowest rank's order. Returns the member count (size[d]).
 */
unsigned sched_parallel_group(const struct sched_parallel *p, enum sched_dim d, unsigned g,
			      unsigned *ret_ranks);

/* sched_parallel_group_of() - the number of the group of dimension @d holding @rank. */
unsigned sched_parallel_group_of(const struct sched_parallel *p, enum sched_dim d,
				 unsigned rank);

/* ---- links and costs (sched_comm.c) ---- */

/* Link classes, fastest domain first. */
enum sched_link {
	SCHED_LINK_SELF,	/* the same NPU: nothing moves */
	SCHED_LINK_SIO,		/* A3 (910C): the two dies of one NPU module */
	SCHED_LINK_HCCS,	/* HCCS inside one server's group: a 910 ring of 4, the 910B
				 * full mesh of 8, an A3 server */
	SCHED_LINK_PCIE,	/* 910: across the two HCCS rings of one server */
	SCHED_LINK_SUPERPOD,	/* A3: across servers of one super pod (its HCCS fabric) */
	SCHED_LINK_ROCE_LEAF,	/* RoCE between servers under one leaf switch */
	SCHED_LINK_ROCE_SPINE,	/* RoCE across leaf switches, through the spine */
	SCHED_LINK_COUNT
};

/* sched_link_name() - "self", "sio", "hccs", "pcie", "superpod", "roce_leaf",
 * "roce_spine" (static). */
const char *sched_link_name(enum sched_link l);

/* What one NPU gets from a link class. */
struct sched_link_cost {
	double gbyte_per_sec;	/* usable bandwidth per link, one direction */
	double latency_usec;	/* per message (one algorithm step) */
	unsigned lanes;		/* links of this class one NPU drives at once (910B HCCS
				 * mesh: 7, one to each peer); 1 for a NIC */
};
/* SELF's entry is all zero: nothing moves, every cost over it is 0. A class a chip does
 * not have (SIO on a 910B, PCIe on an A3 ...) still gets usable figures. */

/* The model's figures for one cluster: per link class, and the spine. */
struct sched_comm_params {
	struct sched_link_cost link[SCHED_LINK_COUNT];
	double spine_oversub;	/* leaf uplinks' oversubscription (>= 1): roce_spine's
				 * bandwidth is roce_leaf's divided by it */
};

/*
 * sched_comm_params_for() - the published figures for servers of @chip ("910", "910B",
 * "910C"; anything else: 910B's) with @spine_oversub (>= 1; 1 = a non-blocking
 * fabric). The sources of each figure are cited in sched_comm.c.
 */
void sched_comm_params_for(const char *chip, double spine_oversub, struct sched_comm_params *ret);

/* Where one rank runs. */
struct sched_npu_loc {
	unsigned server;	/* index into cluster->servers */
	unsigned device;	/* physical device id on it */
};

/*
 * sched_link_between() - the class of the link between two NPUs of @c: the same NPU,
 * an A3 die pair (devices 2k, 2k+1), the server's HCCS group (910: ring 0-3 or 4-7,
 * else the whole server), the other ring of a 910 server (pcie), one super pod (A3,
 * conf_server.super_pod equal and set), one leaf switch, or the spine. A super pod
 * named on servers that are not A3 is a label, not a fabric: RoCE. @a and @b must be
 * valid on @c (server < server_count, device < its npu_count; assert()ed).
 */
enum sched_link sched_link_between(const struct sched_cluster *c, struct sched_npu_loc a,
				   struct sched_npu_loc b);

/*
 * sched_link_is_slower() - is class @a slower than @b under @p? By what one NPU gets
 * from the class (a link's bandwidth times its lanes), SELF the fastest of all; on
 * equal bandwidth the farther domain (the later enum value) is the slower.
 */
bool sched_link_is_slower(const struct sched_comm_params *p, enum sched_link a,
			  enum sched_link b);

/*
 * sched_group_link() - the slowest class linking any two of the @n members of @m (@m
 * has @n entries, each valid on @c), slowest by what one NPU gets from the class under
 * @p, gbyte_per_sec * lanes (a 910B HCCS link is below its NIC, its 7 lanes are not);
 * on equal figures the farther domain (the later class). What the group's collectives
 * are bound by. SELF for n <= 1. O(n^2) in n.
 */
enum sched_link sched_group_link(const struct sched_cluster *c, const struct sched_comm_params *p,
				 const struct sched_npu_loc *m, size_t n);

/*
 * A collective's group as the model sees it: @members NPUs on @nodes servers (or
 * super-pod or die-pair domains) of members/nodes each; inside a node they talk over
 * @intra, between nodes over @inter (ignored when nodes == 1).
 */
struct sched_comm_group {
	unsigned members;
	unsigned nodes;
	enum sched_link intra;
	enum sched_link inter;
	unsigned most_per_node;		/* members on the fullest node; 0 = members/nodes
					 * rounded up */
	unsigned least_per_node;	/* members on the emptiest node; 0 = members/nodes
					 * rounded down (at least 1) */
};

/*
 * sched_comm_group_of() - the struct for the @n members of @m: nodes counts the
 * distinct servers (a job on one A3 super pod counts servers too: its inter link is
 * superpod), intra is the slowest link inside any one server, inter the slowest link
 * between members of different servers ("slowest" as for sched_group_link()); either is
 * SELF when no pair of members is of its kind. O(n^2) in n.
 */
void sched_comm_group_of(const struct sched_cluster *c, const struct sched_comm_params *p,
			 const struct sched_npu_loc *m, size_t n, struct sched_comm_group *ret);

/*
 * Collective costs, in microseconds, for @bytes of data per NPU (the whole buffer each
 * member holds; an all-to-all sends bytes/members to each peer).
 * - all-reduce: inside one node the cheapest of a ring (2(n-1) steps of bytes/n),
 *   recursive halving-doubling (a tree: 2*ceil(log2 n) steps, the same bytes) and the
 *   mesh algorithm when the link has lanes >= n-1 (one step each way, all peers at
 *   once), as HCCL picks its algorithm by such a cost; on a 910 server whose members
 *   sit in both HCCS rings, hierarchically: inside each ring, then across the two
 *   over PCIe. Across nodes HCCL's hierarchical scheme: reduce-scatter inside each
 *   node (the fullest node's members, most_per_node, set its time), an all-reduce
 *   across the nodes (ring or halving-doubling, the cheaper) of the share each NPU
 *   holds, every NPU over its own NIC at once (the emptiest node's NPUs hold the
 *   largest share, bytes/least_per_node, and set that phase's time), all-gather
 *   inside the node.
 * - all-to-all: pairwise exchange, n-1 steps; the peers inside the node go over intra
 *   (in parallel when lanes allow; the fullest node's count), the others one at a time
 *   over inter (the emptiest node's members have the most of those).
 * - p2p: one message of @bytes over @link.
 * Zero members, one member or zero bytes cost 0.
 */
double sched_comm_allreduce_usec(const struct sched_comm_params *p,
				 const struct sched_comm_group *g, double bytes);
double sched_comm_alltoall_usec(const struct sched_comm_params *p,
				const struct sched_comm_group *g, double bytes);
double sched_comm_p2p_usec(const struct sched_comm_params *p, enum sched_link link, double bytes);

/*
 * A training step's shape, for the step model. The placement changes only the
 * communication; compute_usec is the step's computation on this job's NPUs (measured,
 * or 6 * params * tokens / (NPUs * peak FLOP/s * MFU)) and is the same under any
 * placement.
 */
struct sched_train_model {
	double compute_usec;		/* per step, no communication */
	unsigned layers;		/* transformer layers, all stages */
	unsigned hidden;		/* hidden size h */
	unsigned seq_len;		/* tokens per sample s */
	unsigned micro_batch;		/* samples per micro-batch b */
	unsigned micro_batches;		/* micro-batches per step per pipeline */
	double params;			/* parameters, experts included */
	double expert_params;		/* of which in experts (sharded by ep) */
	unsigned moe_layers;		/* layers with experts (<= layers) */
	unsigned top_k;			/* experts per token */
	double act_bytes;		/* bytes per activation element (bf16: 2) */
	double grad_bytes;		/* bytes per gradient element in the DP all-reduce */
	double dp_overlap;		/* share of the DP all-reduce hidden behind the
					 * backward pass, 0..1 */
};

/* The modelled cost of one step, per dimension, and the bytes it moves per link class. */
struct sched_step_cost {
	double compute_usec;
	double comm_usec[SCHED_DIM_COUNT];	/* exposed time per dimension */
	double step_usec;			/* compute + every exposed comm_usec */
	double bytes[SCHED_LINK_COUNT];		/* bytes all ranks send per step, by the
						 * class of the link they cross */
	enum sched_link link[SCHED_DIM_COUNT];	/* slowest link of any group of that
						 * dimension (PP: of any stage boundary) */
};

/*
 * sched_comm_step() - the modelled step of a job whose rank r runs at @loc[r]
 * (@nranks = sched_parallel_npus(@par)), on @c with figures @p. Per micro-batch and
 * layer of a rank's stage (layers/pp of them, moe_layers/pp with experts):
 *  - TP: two all-reduces forward and two backward of b*s*h*act_bytes/cp (Megatron's
 *    column/row split);
 *  - CP: a ring pass of the keys and values of the rank's heads and sequence share
 *    (2*b*s*h*act_bytes/(tp*cp), cp-1 steps) forward and backward (grouped-query
 *    attention's fewer K/V heads are not modelled: an upper bound);
 *  - EP: per MoE layer two all-to-alls forward (dispatch, combine) and two backward of
 *    b*s*h*top_k*act_bytes/(tp*cp);
 *  - PP: one p2p of b*s*h*act_bytes/(tp*cp) forward and one backward per micro-batch
 *    and stage boundary, on the critical path (all 2 * micro_batches * (pp-1) of them:
 *    1F1B hides most, so an upper bound);
 *  - DP: once a step, the dense parameters/(tp*pp) times grad_bytes all-reduced over
 *    each DP group, and the expert parameters/(tp*pp*ep) over each expert-data-parallel
 *    group (the dp/ep ranks holding the same experts, ep*tp*cp ranks apart); of the
 *    two, (1 - dp_overlap) is exposed (Megatron reduces over dp*cp: not modelled).
 * Dimensions do not overlap each other (an upper bound). Each dimension's time is its
 * slowest group's (the groups run at once); bytes counts what every member sends, by
 * the group's intra or inter class (PP: by each pair's), the members of a group
 * spread unevenly counted as if even.
 * No allocation; O(sum over dimensions of nranks * size) link look-ups.
 * Returns 0, or -EINVAL (a size of @par is 0, ep does not divide dp, nranks does not
 * match, a location off the cluster); @ret is untouched on failure.
 */
int sched_comm_step(const struct sched_cluster *c, const struct sched_comm_params *p,
		    const struct sched_parallel *par, const struct sched_train_model *m,
		    const struct sched_npu_loc *loc, size_t nranks, struct sched_step_cost *ret);

#endif /* ASCENDFS_SCHED_COMM_H */
