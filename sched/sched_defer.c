/* SPDX-License-Identifier: MIT */
/*
 * Deferred scheduling passes: the rules are at sched_pass_request() in ascend_sched.h.
 *
 * A pass costs O(jobs + pending) whatever changed, so one per submission makes a burst
 * quadratic; the daemon defers them and runs one for every request that arrived while
 * its committer wrote the previous batch, the way that batch shares one fsync.
 */
#include "sched_internal.h"

void sched_cluster_set_deferred_passes(struct sched_cluster *c, bool deferred)
{
	c->defer_passes = deferred;
}

unsigned sched_pass_request(struct sched_cluster *c, uint64_t now_usec)
{
	c->pass_requests++;
	if (c->defer_passes) {
		c->pass_owed = true;
		return 0;
	}
	c->passes_run++;
	return sched_schedule(c, now_usec);
}

bool sched_pass_is_owed(const struct sched_cluster *c)
{
	return c->pass_owed;
}

unsigned sched_pass_run_owed(struct sched_cluster *c, uint64_t now_usec)
{
	if (!c->pass_owed)
		return 0;
	/* cleared first: what the pass itself asks for is owed again, not lost */
	c->pass_owed = false;
	c->passes_run++;
	return sched_schedule(c, now_usec);
}
