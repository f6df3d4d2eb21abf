/* SPDX-License-Identifier: MIT */
/*
 * Job sizes: the server type a job is restricted to, the legal sizes of an elastic job
 * (multiples of tp * cp * pp * ep, the HCCS rule within a server, whole servers beyond one), the
 * smallest size that can ever fit, placing a job now at the largest size that fits, and
 * the growth of running elastic jobs onto NPUs left free at the end of a pass.
 *
 * Calls: sched_place.c (sched_place_now, sched_check_feasible), sched_job.c; none of the
 * other files of the pass (sched_pass.h says the direction).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_pass.h"

/* ---- server types ---- */

unsigned sched_job_stages(const struct sched_job *j)
{
	return j->spec && j->spec->pp ? j->spec->pp : 1;
}

const struct conf_server_type *sched_job_type(const struct sched_cluster *c,
					      const struct sched_job *j)
{
	if (!j->spec || !j->spec->server_type)
		return NULL;
	for (size_t s = 0; s < c->server_count; s++)
		if (strcmp(c->servers[s].conf->type->name, j->spec->server_type) == 0)
			return c->servers[s].conf->type;
	return NULL;
}

/* ---- sizes (elastic jobs) ---- */

/*
 * The step of an elastic job's sizes: dp follows the size, so it must stay a multiple of
 * the model-parallel size tp * cp * pp, and dp = size / (tp * cp * pp) a multiple of ep
 * (expert-parallel groups are made of dp ranks; sched_comm.h): tp * cp * pp * ep.
 */
static unsigned size_unit(const struct conf_job_spec *sp)
{
	return (sp->tp ? sp->tp : 1) * (sp->cp ? sp->cp : 1) * (sp->pp ? sp->pp : 1) *
	       (sp->ep ? sp->ep : 1);
}

/* Is @size legal for @sp on server type @t (HCCS rule, whole servers, tp*cp*pp*ep)? */
static bool size_ok(const struct conf_job_spec *sp, const struct conf_server_type *t,
		    unsigned size)
{
	if (size == 0 || size % size_unit(sp))
		return false;
	return size <= t->npu_count ? sched_size_is_legal(t, size) : size % t->npu_count == 0;
}

unsigned sched_elastic_min(const struct sched_cluster *c, const struct conf_job_spec *sp,
			   const struct conf_server_type *type)
{
	unsigned total = 0;

	for (size_t i = 0; i < c->server_count; i++)
		if (!type || c->servers[i].conf->type == type)
			total += c->servers[i].conf->npu_count;
	for (unsigned size = sp->npus_min; size <= sp->npus_max && size <= total; size++)
		for (size_t t = 0; t < c->type_count; t++) {
			const struct conf_server_type *ty = c->types[t];
			char why[SCHED_REASON_MAX];

			if ((type && ty != type) || !size_ok(sp, ty, size))
				continue;
			if (sched_check_feasible(c, size, ty, why) == 0)
				return size;
		}
	return 0;
}

static bool size_fits_some_type(const struct sched_cluster *c, const struct sched_job *j,
				const struct conf_server_type *want, unsigned size)
{
	for (size_t t = 0; t < c->type_count; t++)
		if ((!want || c->types[t] == want) && size_ok(j->spec, c->types[t], size))
			return true;
	return false;
}

size_t sched_place_sizes(const struct sched_cluster *c, const struct sched_job *j, unsigned lo,
			 unsigned hi, unsigned *out, size_t max)
{
	const struct conf_server_type *want = sched_job_type(c, j);
	unsigned bound = 0, total = 0, whole[16] = { 0 }, most[16] = { 0 };
	size_t n = 0;

	/* no size above what is free now can fit: start there, not at a huge max */
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];
		size_t t;

		if (want && s->conf->type != want)
			continue;
		for (t = 0; t < c->type_count && c->types[t] != s->conf->type; t++)
			;
		total += s->conf->npu_count;
		if (t == c->type_count || !sched_server_is_schedulable(c, s))
			continue;
		if (sched_server_is_whole_free(c, (unsigned)i, s->conf->type))
			whole[t]++;
		if (s->npus_free > most[t])
			most[t] = s->npus_free;
	}
	for (size_t t = 0; t < c->type_count; t++) {
		unsigned b = whole[t] > 1 ? whole[t] * c->types[t]->npu_count : most[t];

		if (b > bound)
			bound = b;
	}
	if (hi > total)
		hi = total;
	/* the smallest legal size: when nothing bigger can fit it is the one to try, and its
	 * failure is the reason the job waits */
	while (lo <= hi && !size_fits_some_type(c, j, want, lo))
		lo++;
	if (lo > hi || max == 0)
		return 0;
	if (bound < lo)
		hi = lo;
	else if (hi > bound)
		hi = bound;
	for (unsigned size = hi; size >= lo && size > 0 && n < max; size--)
		if (size_fits_some_type(c, j, want, size))
			out[n++] = size;
	if (n == max && out[n - 1] != lo)
		out[n - 1] = lo;
	return n;
}

int sched_place_job(struct sched_cluster *c, const struct sched_job *j, unsigned hi,
		    struct sched_slice **ret_slices, size_t *ret_count, char *reason)
{
	const struct conf_server_type *type = sched_job_type(c, j);
	unsigned sizes[64];
	size_t n;
	int r = -ENOSPC;

	if (j->spec->npus_min == j->spec->npus_max || hi <= j->spec->npus_min) {
		/* a service's instances spread (one size: no elastic range) */
		c->spread_service = j->service[0] ? j->service : NULL;
		r = sched_place_now(c, j->spec->npus_min, type, sched_job_stages(j), ret_slices,
				    ret_count, reason);
		c->spread_service = NULL;
		return r;
	}
	n = sched_place_sizes(c, j, j->spec->npus_min, hi, sizes, 64);
	for (size_t i = 0; i < n; i++) {
		/* the reason of the smallest size is the one that explains the wait */
		r = sched_place_now(c, sizes[i], type, sched_job_stages(j), ret_slices, ret_count,
				    reason);
		if (r != -ENOSPC)
			return r;
	}
	return r;
}

/* ---- elastic growth ---- */

/*
 * After the queues were served: growth takes only NPUs nobody waits for (no job of the
 * types in p->waiting_mask waits), stays within the quota, counting what preemptors were
 * promised, and happens at most once per elastic_grow_delay_sec, since every resize
 * restarts the job from a checkpoint. The capacity index of the pass is not read after
 * the queues were served, so growth does not keep it up to date.
 */
void sched_grow_elastic(struct pass *p)
{
	struct sched_cluster *c = p->c;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		unsigned cur, hi, sizes[64];
		size_t ns;

		if (j->state != SCHED_JOB_RUNNING || !j->spec ||
		    j->spec->npus_min == j->spec->npus_max || (j->type_mask & p->waiting_mask) ||
		    j->borrowing)
			continue;
		cur = sched_job_total_npus(j);
		hi = j->spec->npus_max;
		if (cur >= hi)
			continue;
		/* every resize restarts the job from a checkpoint: not at every freed NPU */
		if (p->now < j->generation_usec +
				     (uint64_t)c->conf->elastic_grow_delay_sec * 1000000u)
			continue;
		if (quota_applies(c, job_queue(c, j))) {
			unsigned q = job_queue(c, j)->quota_npus;
			/* what the queue's other jobs hold, and what its preemptors were promised */
			unsigned others = c->queue_used[j->queue_index] - cur +
					  (p->committed ? p->committed[j->queue_index] : 0);

			if (others >= q || q - others <= cur)
				continue;
			if (hi > q - others)
				hi = q - others;
		}
		sim_release(c, j);
		ns = sched_place_sizes(c, j, cur + 1, hi, sizes, 64);
		sim_restore(c, j);
		for (size_t k = 0; k < ns; k++) {
			struct sched_slice *sl;
			size_t n;
			char why[SCHED_REASON_MAX], reason[SCHED_REASON_MAX];
			int r;

			sim_release(c, j);
			r = sched_place_now(c, sizes[k], sched_job_type(c, j), sched_job_stages(j),
					    &sl, &n, why);
			sim_restore(c, j);
			if (r < 0)
				continue;
			sched_alloc_release(c, j);
			sched_alloc_apply(c, j, sl, n);
			j->sched_port = sched_pick_port(c, j, sl[0].server);
			sched_job_begin_generation(c, j, p->now);
			c->resizes++;
			sched_reason(reason, "grew from %u to %u NPUs (elastic, max %u) on freed "
					     "capacity; generation %u resumes from its checkpoint",
				     cur, sizes[k], j->spec->npus_max, j->generation);
			sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_RESIZED, p->now,
					     reason);
			break;
		}
	}
}
