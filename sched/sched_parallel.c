// SPDX-License-Identifier: MIT
/*
 * The rank order of a job's parallel dimensions (sched_comm.h): tp innermost, then cp,
 * dp (ep groups are runs of ep consecutive dp indices), pp outermost.
 */
#include <errno.h>

#include "sched_comm.h"

const char *sched_dim_name(enum sched_dim d)
{
	static const char *const names[SCHED_DIM_COUNT] = { "tp", "cp", "ep", "dp", "pp" };

	return d < SCHED_DIM_COUNT ? names[d] : "?";
}

unsigned sched_parallel_npus(const struct sched_parallel *p)
{
	return p->size[SCHED_DIM_TP] * p->size[SCHED_DIM_CP] * p->size[SCHED_DIM_DP] *
	       p->size[SCHED_DIM_PP];
}

int sched_parallel_from_spec(const struct conf_job_spec *spec, unsigned npus,
			     struct sched_parallel *ret)
{
	unsigned tp = spec && spec->tp ? spec->tp : 1, cp = spec && spec->cp ? spec->cp : 1;
	unsigned pp = spec && spec->pp ? spec->pp : 1, ep = spec && spec->ep ? spec->ep : 1;
	unsigned long long inner = (unsigned long long)tp * cp * pp;
	unsigned dp;

	if (!npus || npus % inner)
		return -EINVAL;
	dp = (unsigned)(npus / inner);
	if (spec && spec->dp && spec->dp != dp)
		return -EINVAL;
	if (dp % ep)
		return -EINVAL;
	ret->size[SCHED_DIM_TP] = tp;
	ret->size[SCHED_DIM_CP] = cp;
	ret->size[SCHED_DIM_EP] = ep;
	ret->size[SCHED_DIM_DP] = dp;
	ret->size[SCHED_DIM_PP] = pp;
	return 0;
}

/* The stride of each dimension in rank numbers (EP's is DP's: it is a part of it). */
static unsigned stride(const struct sched_parallel *p, enum sched_dim d)
{
	unsigned tp = p->size[SCHED_DIM_TP], cp = p->size[SCHED_DIM_CP];

	switch (d) {
	case SCHED_DIM_TP:
		return 1;
	case SCHED_DIM_CP:
		return tp;
	case SCHED_DIM_EP:
	case SCHED_DIM_DP:
		return tp * cp;
	default:
		return tp * cp * p->size[SCHED_DIM_DP];
	}
}

unsigned sched_parallel_coord(const struct sched_parallel *p, unsigned rank, enum sched_dim d)
{
	enum sched_dim base = d == SCHED_DIM_EP ? SCHED_DIM_DP : d;
	unsigned i = rank / stride(p, d) % p->size[base];

	return d == SCHED_DIM_EP ? i % p->size[SCHED_DIM_EP] : i;
}

unsigned sched_parallel_group_count(const struct sched_parallel *p, enum sched_dim d)
{
	return sched_parallel_npus(p) / p->size[d];
}

/*
 * Groups are numbered by their lowest rank's order. A rank is low + s * (c + k * high)
 * with s the dimension's stride, k its size and c its coordinate, so the group holding
 * it is low + s * high: the ranks below s and above the dimension, the dimension taken
 * out. EP is inside DP: its "high" is the EP block of dp (dp_i / ep) and what is above
 * DP.
 */
unsigned sched_parallel_group_of(const struct sched_parallel *p, enum sched_dim d,
				 unsigned rank)
{
	unsigned s = stride(p, d), low = rank % s, high;

	if (d == SCHED_DIM_EP) {
		unsigned dp = p->size[SCHED_DIM_DP], ep = p->size[SCHED_DIM_EP];
		unsigned dp_i = rank / s % dp, pp_i = rank / s / dp;

		high = dp_i / ep + dp / ep * pp_i;
	} else {
		high = rank / s / p->size[d];
	}
	return low + s * high;
}

unsigned sched_parallel_group(const struct sched_parallel *p, enum sched_dim d, unsigned g,
			      unsigned *ret_ranks)
{
	unsigned s = stride(p, d), low = g % s, high = g / s, base;

	if (g >= sched_parallel_group_count(p, d))
		return 0;
	if (d == SCHED_DIM_EP) {
		unsigned blocks = p->size[SCHED_DIM_DP] / p->size[SCHED_DIM_EP];

		base = low + s * (high % blocks * p->size[SCHED_DIM_EP] +
				  p->size[SCHED_DIM_DP] * (high / blocks));
	} else {
		base = low + s * p->size[d] * high;
	}
	for (unsigned i = 0; i < p->size[d]; i++)
		ret_ranks[i] = base + i * s;
	return p->size[d];
}
