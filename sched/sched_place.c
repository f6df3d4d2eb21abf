/* SPDX-License-Identifier: MIT */
/*
 * Gang placement by the topology rules of design.md §5 (after the Ascend volcano
 * scheduler plugin's per-product rules):
 *  - a request that fits one server stays on one server:
 *    910 (rings of 4): per-server sizes 1, 2, 4, 8; <= 4 inside one ring; ring
 *      preference for 1 NPU: a ring with 1 free, then 3, 2, 4; for 2: 2, then 4, 3;
 *    910B (8-NPU mesh): any 1-8, lowest free ids;
 *    A3 (pairs of dies): even requests take whole pairs;
 *    node order: servers under no suspicion first (sched_server_is_suspect(): a recent
 *    fault, a late report; issue 14 item 11), then all-healthy servers, best ring
 *    fit, then the fullest server (best fit keeps whole servers free for big jobs);
 *  - larger requests take whole servers: one leaf switch when one has room (the
 *    switch with the fewest free servers that still fits), else one super pod, else
 *    the fewest switches; a job of pipeline stages (parallel.pp) takes whole stages
 *    from each switch when they add up, so no stage's data-parallel traffic crosses
 *    the spine (issue 20);
 *  - whole-server placements and replacements take suspect servers only when clean
 *    ones do not suffice (first a placement among clean servers, then among all);
 *  - ranks go server by server in topology order (switch, server, device id).
 * With topology_aware_schedule false the HCCS legality rules still hold, but servers
 * and rings are taken first-fit in inventory order, as a topology-blind scheduler does.
 * Under SCHED_PLACE_BLIND (ascend-sim's third engine; ascend_sched.h) none of the above
 * holds: place_blind() below.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

static bool size_is_legal(const struct conf_server_type *t, unsigned n)
{
	return n >= 1 && n <= t->npu_count && n < 32 && (t->legal_sizes_mask & (1u << n));
}

bool sched_server_holds_sibling(const struct sched_cluster *c, const struct sched_server *s)
{
	const struct sched_job *last = NULL;

	if (!c->spread_service)
		return false;
	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		const struct sched_job *o = s->npus[d].job;

		if (!o || o == last)
			continue;
		last = o;
		if (strcmp(o->service, c->spread_service) == 0)
			return true;
	}
	return false;
}

static bool server_is_healthy(const struct sched_server *s)
{
	for (unsigned d = 0; d < s->conf->npu_count; d++)
		if (s->npus[d].health != SCHED_HEALTH_OK || s->npus[d].isolated)
			return false;
	return true;
}

/* May a new job land on @s at all (schedulable, and not exclusive to another job)? */
static bool server_accepts(const struct sched_cluster *c, const struct sched_server *s,
			   const struct conf_server_type *type)
{
	if (type && s->conf->type != type)
		return false;
	if (!sched_server_is_schedulable(c, s))
		return false;
	if (!c->conf->allow_mix_task && s->jobs_running > 0)
		return false;
	return true;
}

/* Rank of ring free-count @f for a request of @n in the 910 preference order. */
static int ring_pref(unsigned n, unsigned f, unsigned group)
{
	static const unsigned pref1[] = { 1, 3, 2, 4 };
	static const unsigned pref2[] = { 2, 4, 3 };
	const unsigned *p = NULL;
	size_t len = 0;

	if (f < n)
		return -1;
	if (group == 4 && n == 1) {
		p = pref1;
		len = 4;
	} else if (group == 4 && n == 2) {
		p = pref2;
		len = 3;
	}
	for (size_t i = 0; i < len; i++)
		if (p[i] == f)
			return (int)i;
	/* Other shapes: tightest ring first. */
	return (int)(f - n);
}

/*
 * Choose @n devices on @s by its HCCS rule. Returns the fit rank (lower is better) and
 * fills @ids (ascending), or -1 when @s cannot hold @n.
 */
static int choose_devices(const struct sched_server *s, unsigned n, bool topo, unsigned *ids)
{
	const struct conf_server_type *t = s->conf->type;
	unsigned g = t->hccs_group_size ? t->hccs_group_size : t->npu_count;
	unsigned count = 0;

	if (!size_is_legal(t, n) || s->npus_free < n)
		return -1;

	if (n == t->npu_count || t->hccs == CONF_HCCS_MESH) {
		for (unsigned d = 0; d < t->npu_count && count < n; d++)
			if (sched_npu_is_placeable(&s->npus[d]))
				ids[count++] = d;
		return count == n ? 0 : -1;
	}

	if (t->hccs == CONF_HCCS_RING) {
		int best = -1;
		unsigned best_ring = 0;

		if (n > g)
			return -1;
		for (unsigned r = 0; r < t->npu_count / g; r++) {
			unsigned f = 0;
			int p;

			for (unsigned d = r * g; d < (r + 1) * g; d++)
				f += sched_npu_is_placeable(&s->npus[d]);
			p = ring_pref(n, f, g);
			if (p < 0)
				continue;
			if (!topo) {
				best = 0;
				best_ring = r;
				break;
			}
			if (best < 0 || p < best) {
				best = p;
				best_ring = r;
			}
		}
		if (best < 0)
			return -1;
		for (unsigned d = best_ring * g; d < (best_ring + 1) * g && count < n; d++)
			if (sched_npu_is_placeable(&s->npus[d]))
				ids[count++] = d;
		return best;
	}

	/* CONF_HCCS_PAIR: whole pairs for the even part, a half-used pair for an odd one. */
	{
		unsigned pairs = t->npu_count / 2, want_pairs = n / 2;
		bool used[CONF_SERVER_NPUS_MAX] = { false };
		int fit = 0;

		for (unsigned p = 0; p < pairs && want_pairs; p++) {
			if (sched_npu_is_placeable(&s->npus[2 * p]) &&
			    sched_npu_is_placeable(&s->npus[2 * p + 1])) {
				used[2 * p] = used[2 * p + 1] = true;
				want_pairs--;
			}
		}
		if (want_pairs)
			return -1;
		if (n % 2) {
			int single = -1;

			/* Prefer the free half of a pair whose other die is taken. */
			for (unsigned d = 0; d < t->npu_count && single < 0; d++)
				if (!used[d] && sched_npu_is_placeable(&s->npus[d]) &&
				    !sched_npu_is_placeable(&s->npus[d ^ 1u]))
					single = (int)d;
			if (single < 0) {
				fit = 1;
				for (unsigned d = 0; d < t->npu_count && single < 0; d++)
					if (!used[d] && sched_npu_is_placeable(&s->npus[d]))
						single = (int)d;
			}
			if (single < 0)
				return -1;
			used[single] = true;
		}
		for (unsigned d = 0; d < t->npu_count; d++)
			if (used[d])
				ids[count++] = d;
		return fit;
	}
}

/* Index of @t in c->types, or c->type_count. */
static size_t type_index(const struct sched_cluster *c, const struct conf_server_type *t)
{
	size_t k;

	for (k = 0; k < c->type_count && c->types[k] != t; k++)
		;
	return k;
}

void sched_place_key(const struct sched_cluster *c, const struct sched_server *s,
		     struct sched_placekey *ret)
{
	unsigned ids[CONF_SERVER_NPUS_MAX];

	memset(ret, 0, sizeof(*ret));
	ret->type = (unsigned char)type_index(c, s->conf->type);
	ret->healthy = server_is_healthy(s);
	ret->busy = s->jobs_running > 0;
	ret->npus_free = (unsigned char)s->npus_free;
	ret->fit[0] = -1;
	for (unsigned n = 1; n <= CONF_SERVER_NPUS_MAX; n++)
		ret->fit[n] = (signed char)choose_devices(s, n, true, ids);
}

struct cand {
	long order;	/* place_single's score without suspicion and inventory index */
	size_t bucket;
};

/*
 * place_single() by the index: the same score, minimized over the buckets whose key can
 * hold @n, each bucket's first servers in inventory order read live for what the key
 * leaves out (schedulable, suspect). Returns the server index, -1 when none, or -2
 * without memory (the caller scans).
 */
static long place_single_indexed(const struct sched_cluster *c, unsigned n,
				 const struct conf_server_type *type)
{
	const struct sched_placeidx *x = c->placeidx;
	size_t nb = sched_placeidx_buckets(x), nc = 0;
	struct cand *cs;
	long found = -1;

	if (n > CONF_SERVER_NPUS_MAX)
		return -1;
	cs = malloc((nb ? nb : 1) * sizeof(*cs));
	if (!cs)
		return -2;
	for (size_t b = 0; b < nb; b++) {
		const struct sched_placekey *k = sched_placeidx_key(x, b);
		struct cand t;
		size_t j;

		if (!sched_placeidx_size(x, b) || k->fit[n] < 0 ||
		    (type && c->types[k->type] != type) ||
		    (k->busy && !c->conf->allow_mix_task))
			continue;
		t.order = ((long)!k->healthy << 40) | ((long)k->fit[n] << 32) |
			  ((long)k->npus_free << 24);
		t.bucket = b;
		for (j = nc++; j > 0 && cs[j - 1].order > t.order; j--)
			cs[j] = cs[j - 1];
		cs[j] = t;
	}
	/* clean servers first: a suspect one only when no clean one can hold it; while a
	 * service's instance is placed, before either, one that holds none of its siblings */
	for (int pass = c->spread_service ? 0 : 2; pass < 4 && found < 0; pass++) {
		for (size_t g = 0, e; g < nc && found < 0; g = e) {
			size_t best = SIZE_MAX;

			for (e = g; e < nc && cs[e].order == cs[g].order; e++) {
				size_t i = sched_placeidx_next(x, cs[e].bucket, 0);

				for (; i < best; i = sched_placeidx_next(x, cs[e].bucket, i + 1)) {
					const struct sched_server *s = &c->servers[i];

					if (sched_server_is_schedulable(c, s) &&
					    (pass % 2 == 1 || !s->suspect) &&
					    (pass >= 2 || !sched_server_holds_sibling(c, s)))
						break;
				}
				if (i < best)
					best = i;
			}
			if (best != SIZE_MAX)
				found = (long)best;
		}
	}
	free(cs);
	return found;
}

static int place_single(const struct sched_cluster *c, unsigned n,
			const struct conf_server_type *type, struct sched_slice *out)
{
	bool topo = c->conf->topology_aware_schedule;
	long best_score = LONG_MAX;
	int best = -1;

	if (topo && c->placeidx) {
		long i = place_single_indexed(c, n, type);
		unsigned ids[CONF_SERVER_NPUS_MAX];

		/* the index's choice is checked against the NPUs as they are: a stale entry
		 * (a change without sched_server_recount()) must never hand out a held NPU;
		 * then the scan below answers */
		if (i == -1 || (i >= 0 && choose_devices(&c->servers[i], n, topo, ids) >= 0)) {
			best = (int)i;
			goto chosen;
		}
	}

	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];
		unsigned ids[CONF_SERVER_NPUS_MAX];
		long score;
		int fit;

		if (!server_accepts(c, s, type))
			continue;
		fit = choose_devices(s, n, topo, ids);
		if (fit < 0)
			continue;
		if (!topo) {
			best = (int)i;
			break;
		}
		/* clean, healthy first, then ring fit, then fullest server, then inventory order */
		score = ((long)sched_server_holds_sibling(c, s) << 42) | ((long)s->suspect << 41) |
			((long)!server_is_healthy(s) << 40) | ((long)fit << 32) |
			((long)s->npus_free << 24) | (long)i;
		if (score < best_score) {
			best_score = score;
			best = (int)i;
		}
	}
chosen:
	if (best < 0)
		return -ENOSPC;
	out->server = (unsigned)best;
	out->npu_count = n;
	out->first_rank = 0;
	if (choose_devices(&c->servers[best], n, topo, out->device_ids) < 0)
		return -ENOSPC; /* never expected: the choice was checked */
	return 0;
}

static bool server_is_whole_free(const struct sched_cluster *c, const struct sched_server *s,
				 const struct conf_server_type *type)
{
	return server_accepts(c, s, type) && s->jobs_running == 0 &&
	       s->npus_free == s->conf->npu_count;
}

/* Whole free and, with @clean_only, under no suspicion. */
static bool server_is_whole_free_for(const struct sched_cluster *c, const struct sched_server *s,
				     const struct conf_server_type *type, bool clean_only)
{
	return server_is_whole_free(c, s, type) && (!clean_only || !s->suspect);
}

struct group_count {
	unsigned id;	/* switch index */
	unsigned free;	/* whole free servers under it */
};

static int group_cmp_desc(const void *a, const void *b)
{
	const struct group_count *x = a, *y = b;

	if (x->free != y->free)
		return x->free > y->free ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Inventory index of the first server of super pod @pod. */
static size_t pod_first_server(const struct sched_cluster *c, const char *pod)
{
	size_t i;

	for (i = 0; i < c->server_count; i++) {
		const char *p = c->servers[i].conf->super_pod;

		if (p && strcmp(p, pod) == 0)
			break;
	}
	return i;
}

static int slice_topo_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_cluster *c = arg;
	const struct sched_slice *x = a, *y = b;
	unsigned sx = c->servers[x->server].switch_index, sy = c->servers[y->server].switch_index;
	const char *px = c->servers[x->server].conf->super_pod;
	const char *py = c->servers[y->server].conf->super_pod;

	/*
	 * Super pods are the outer level: rank table 1.2 needs the servers of one pod
	 * contiguous (design.md §4), which switch order alone breaks when a leaf switch
	 * carries servers of two pods. Pods go in inventory order, servers without one last.
	 */
	if ((px || py) && (!px || !py || strcmp(px, py) != 0)) {
		size_t kx = px ? pod_first_server(c, px) : SIZE_MAX;
		size_t ky = py ? pod_first_server(c, py) : SIZE_MAX;

		if (kx != ky)
			return kx < ky ? -1 : 1;
	}
	if (sx != sy)
		return sx < sy ? -1 : 1;
	return x->server < y->server ? -1 : x->server > y->server;
}

static bool server_in_pod(const struct sched_server *s, const char *super_pod)
{
	return !super_pod || (s->conf->super_pod && strcmp(s->conf->super_pod, super_pod) == 0);
}

/*
 * The whole free servers pick_switches() chooses among, in inventory order, into @list
 * (server_count entries), each counted in g[its switch].free. Returns how many: from
 * the index's whole free set when there is one, else from every server.
 */
static size_t whole_free_list(const struct sched_cluster *c, const struct conf_server_type *type,
			      const char *super_pod, bool clean_only, struct group_count *g,
			      unsigned *list)
{
	const struct sched_placeidx *x = c->placeidx;
	size_t t = type_index(c, type), n = 0;

	if (x && t < c->type_count) {
		for (size_t i = sched_placeidx_whole_next(x, t, 0); i != SIZE_MAX;
		     i = sched_placeidx_whole_next(x, t, i + 1)) {
			const struct sched_server *s = &c->servers[i];

			if (server_in_pod(s, super_pod) &&
			    server_is_whole_free_for(c, s, type, clean_only)) {
				g[s->switch_index].free++;
				list[n++] = (unsigned)i;
			}
		}
		return n;
	}
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		if (server_in_pod(s, super_pod) && server_is_whole_free_for(c, s, type, clean_only)) {
			g[s->switch_index].free++;
			list[n++] = (unsigned)i;
		}
	}
	return n;
}

/*
 * The switches for @k whole servers, fewest switches: one switch when one has room (the
 * one with the fewest free servers that still fits: best fit), else the largest first,
 * then the tightest that completes it. @unit > 1 (a divisor of k) counts each switch's
 * free servers rounded down to whole units, so that a job of pipeline stages of @unit
 * servers takes whole stages from each switch: no stage straddles two switches, its
 * data-parallel all-reduce stays under one leaf and only the stage boundaries'
 * point-to-point transfers cross the spine (sched_comm.h). @g (ng switches' free
 * counts) is read only; @a is scratch of @ng entries. Fills @pick_sw and @take
 * (servers per switch index). Returns false when the counts do not add up to @k.
 */
static bool choose_switches(const struct group_count *g, size_t ng, unsigned k,
			    unsigned unit, struct group_count *a, bool *pick_sw, unsigned *take)
{
	unsigned need = k;
	int best = -1;

	for (size_t i = 0; i < ng; i++) {
		a[i].id = g[i].id;
		a[i].free = g[i].free / unit * unit;
		if (a[i].free >= k && (best < 0 || a[i].free < a[best].free))
			best = (int)i;
	}
	if (best >= 0) {
		pick_sw[a[best].id] = true;
		take[a[best].id] = k;
		return true;
	}
	qsort(a, ng, sizeof(*a), group_cmp_desc);
	for (size_t i = 0; i < ng && a[i].free && need; i++) {
		int fin = -1;

		for (size_t j = i; j < ng; j++)
			if (a[j].free >= need && (fin < 0 || a[j].free < a[fin].free))
				fin = (int)j;
		if (fin >= 0) {
			pick_sw[a[fin].id] = true;
			take[a[fin].id] = need;
			return true;
		}
		pick_sw[a[i].id] = true;
		take[a[i].id] = a[i].free;
		need -= a[i].free;
	}
	return false;
}

/*
 * Choose @k whole free servers of @type (in @super_pod when not NULL), minimizing
 * switches spanned. Writes server indices to @out. Returns 0, -ENOSPC or -ENOMEM.
 */
static int pick_switches(const struct sched_cluster *c, unsigned k,
			 const struct conf_server_type *type, const char *super_pod,
			 bool clean_only, unsigned unit, unsigned *out)
{
	struct group_count *g, *scratch = NULL;
	unsigned taken = 0, *list, *start, *take = NULL;
	size_t ng = c->switch_count, nl, ti;
	bool *pick_sw, counted;
	int r = -ENOSPC;

	g = calloc(ng ? ng : 1, sizeof(*g));
	pick_sw = calloc(ng ? ng : 1, sizeof(*pick_sw));
	list = malloc((c->server_count ? c->server_count : 1) * sizeof(*list));
	start = calloc(ng + 1, sizeof(*start));
	if (!g || !pick_sw || !list || !start) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ng; i++)
		g[i].id = (unsigned)i;
	/*
	 * Without a pod to stay in and with no server under suspicion, the index counts the
	 * candidates of every switch, and only the chosen switches' servers are read.
	 */
	ti = type_index(c, type);
	counted = c->placeidx && ti < c->type_count && !super_pod &&
		  (!clean_only || c->suspect_count == 0);
	if (counted) {
		for (size_t i = 0; i < ng; i++)
			g[i].free = sched_placeidx_avail(c->placeidx, ti, i);
		nl = 0;
	} else {
		nl = whole_free_list(c, type, super_pod, clean_only, g, list);
	}
	/* the list by switch, inventory order kept within one (g[].free are the sizes) */
	for (size_t i = 0; i < ng; i++)
		start[i + 1] = start[i] + g[i].free;
	scratch = calloc(ng ? ng : 1, sizeof(*scratch));
	take = calloc(ng ? ng : 1, sizeof(*take));
	if (!scratch || !take) {
		r = -ENOMEM;
		goto out;
	}
	/* whole pipeline stages per switch when they add up */
	if (unit > 1 && k > unit && k % unit == 0) {
		if (choose_switches(g, ng, k, unit, scratch, pick_sw, take))
			goto collect;
		memset(pick_sw, 0, (ng ? ng : 1) * sizeof(*pick_sw));
	}
	/* else as for any job, every free server of the chosen switches in order until k */
	if (!choose_switches(g, ng, k, 1, scratch, pick_sw, take))
		goto out;
	free(take);
	take = NULL;
collect:
	/* Take whole free servers of the chosen switches in topology order. */
	if (counted) {
		for (size_t sw = 0; sw < ng && taken < k; sw++) {
			const unsigned *m;
			size_t nm;

			if (!pick_sw[sw])
				continue;
			m = sched_placeidx_switch_servers(c->placeidx, sw, &nm);
			for (size_t i = 0, here = 0; i < nm && taken < k && (!take || here < take[sw]);
			     i++)
				if (server_is_whole_free_for(c, &c->servers[m[i]], type, clean_only)) {
					out[taken++] = m[i];
					here++;
				}
		}
	} else {
		unsigned *by_switch = malloc((nl ? nl : 1) * sizeof(*by_switch));
		unsigned *fill = calloc(ng ? ng : 1, sizeof(*fill));

		if (!by_switch || !fill) {
			free(by_switch);
			free(fill);
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nl; i++) {
			unsigned sw = c->servers[list[i]].switch_index;

			by_switch[start[sw] + fill[sw]++] = list[i];
		}
		for (size_t sw = 0; sw < ng && taken < k; sw++) {
			if (!pick_sw[sw])
				continue;
			for (unsigned i = start[sw];
			     i < start[sw + 1] && taken < k && (!take || i - start[sw] < take[sw]); i++)
				out[taken++] = by_switch[i];
		}
		free(by_switch);
		free(fill);
	}
	r = taken == k ? 0 : -ENOSPC;
out:
	free(g);
	free(pick_sw);
	free(list);
	free(start);
	free(scratch);
	free(take);
	return r;
}

struct pod_count {
	const char *pod;
	unsigned free;
};

static int pod_cmp_asc(const void *a, const void *b)
{
	const struct pod_count *x = a, *y = b;

	return x->free < y->free ? -1 : x->free > y->free;
}

/*
 * Super-pod products (rank table 1.2): HCCL wants every pod of a job to hold the same
 * number of servers, each pod contiguous. One pod when one has room (the tightest),
 * else the fewest pods that can each give k/P servers.
 */
static int place_super_pods(const struct sched_cluster *c, unsigned k,
			    const struct conf_server_type *type, bool clean_only, unsigned *out)
{
	struct pod_count *pods;
	size_t np = 0;
	int r = -ENOSPC;

	pods = calloc(c->server_count ? c->server_count : 1, sizeof(*pods));
	if (!pods)
		return -ENOMEM;
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];
		size_t p;

		if (s->conf->type != type || !s->conf->super_pod)
			continue;
		for (p = 0; p < np && strcmp(pods[p].pod, s->conf->super_pod); p++)
			;
		if (p == np)
			pods[np++].pod = s->conf->super_pod;
		pods[p].free += server_is_whole_free_for(c, s, type, clean_only);
	}
	/* stable: pods with equal counts keep inventory order */
	for (size_t i = 1; i < np; i++)
		for (size_t j = i; j > 0 && pod_cmp_asc(&pods[j - 1], &pods[j]) > 0; j--) {
			struct pod_count t = pods[j];

			pods[j] = pods[j - 1];
			pods[j - 1] = t;
		}
	for (unsigned parts = 1; parts <= np && r == -ENOSPC; parts++) {
		unsigned per, got = 0;

		if (k % parts)
			continue;
		per = k / parts;
		for (size_t p = 0; p < np && got < parts; p++)
			got += pods[p].free >= per;
		if (got < parts)
			continue;
		got = 0;
		r = 0;
		for (size_t p = 0; p < np && got < parts && r == 0; p++) {
			if (pods[p].free < per)
				continue;
			r = pick_switches(c, per, type, pods[p].pod, clean_only, 1, out + got * per);
			got++;
		}
	}
	free(pods);
	return r;
}

static int place_multi_among(const struct sched_cluster *c, unsigned k,
			     const struct conf_server_type *type, bool clean_only, unsigned unit,
			     unsigned *out)
{
	unsigned taken = 0;

	if (strcmp(type->rank_table_version, "1.2") == 0)
		return place_super_pods(c, k, type, clean_only, out);
	if (!c->conf->topology_aware_schedule) {
		size_t t = type_index(c, type);

		if (c->placeidx && t < c->type_count) {
			for (size_t i = sched_placeidx_whole_next(c->placeidx, t, 0);
			     i != SIZE_MAX && taken < k;
			     i = sched_placeidx_whole_next(c->placeidx, t, i + 1))
				if (server_is_whole_free_for(c, &c->servers[i], type, clean_only))
					out[taken++] = (unsigned)i;
			return taken == k ? 0 : -ENOSPC;
		}
		for (size_t i = 0; i < c->server_count && taken < k; i++)
			if (server_is_whole_free_for(c, &c->servers[i], type, clean_only))
				out[taken++] = (unsigned)i;
		return taken == k ? 0 : -ENOSPC;
	}
	/* one leaf switch when one has room, else the fewest switches */
	return pick_switches(c, k, type, NULL, clean_only, unit, out);
}

/* Clean servers when they suffice; else the same rules over every server. */
static int place_multi(const struct sched_cluster *c, unsigned k,
		       const struct conf_server_type *type, unsigned unit, unsigned *out)
{
	int r = c->suspect_count ? place_multi_among(c, k, type, true, unit, out) : -ENOSPC;

	return r == -ENOSPC ? place_multi_among(c, k, type, false, unit, out) : r;
}

/* Types present in the cluster, in inventory order, filtered by @want. */
/* Types present in the cluster, in inventory order (cached at creation), filtered by
 * @want. */
static size_t cluster_types(const struct sched_cluster *c, const struct conf_server_type *want,
			    const struct conf_server_type **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < c->type_count && n < max; i++)
		if (!want || c->types[i] == want)
			out[n++] = c->types[i];
	return n;
}

static void sizes_text(const struct conf_server_type *t, char *buf, size_t len)
{
	size_t off = 0;
	unsigned first = 0, last = 0;
	bool run = true;

	/* contiguous ranges print as "1-8", others as "1, 2, 4 or 8" */
	for (unsigned n = 1; n <= t->npu_count; n++) {
		if (size_is_legal(t, n)) {
			if (!first)
				first = n;
			else if (last != n - 1)
				run = false;
			last = n;
		}
	}
	if (run) {
		snprintf(buf, len, "%u to %u", first, last);
		return;
	}
	buf[0] = '\0';
	for (unsigned n = 1; n <= t->npu_count && off < len; n++) {
		if (!size_is_legal(t, n))
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%u",
					!off ? "" : (n == last ? " or " : ", "), n);
	}
}

/* Could @k servers of @t be split evenly over super pods on an empty cluster? */
static bool super_pod_split_exists(const struct sched_cluster *c, const struct conf_server_type *t,
				   unsigned k)
{
	unsigned *sizes = calloc(c->server_count ? c->server_count : 1, sizeof(*sizes));
	const char **names = calloc(c->server_count ? c->server_count : 1, sizeof(*names));
	size_t np = 0;
	bool ok = false;

	if (!sizes || !names) {
		free(sizes);
		free(names);
		return true; /* cannot tell; let placement decide */
	}
	for (size_t i = 0; i < c->server_count; i++) {
		const struct conf_server *cs = c->servers[i].conf;
		size_t p;

		if (cs->type != t || !cs->super_pod)
			continue;
		for (p = 0; p < np && strcmp(names[p], cs->super_pod); p++)
			;
		if (p == np)
			names[np++] = cs->super_pod;
		sizes[p]++;
	}
	for (unsigned parts = 1; parts <= np && !ok; parts++) {
		unsigned fit = 0;

		if (k % parts)
			continue;
		for (size_t p = 0; p < np; p++)
			fit += sizes[p] >= k / parts;
		ok = fit >= parts;
	}
	free(sizes);
	free(names);
	return ok;
}

static int feasible_on_type(const struct sched_cluster *c, unsigned npus,
			    const struct conf_server_type *t, char *reason)
{
	size_t ti = type_index(c, t);
	unsigned servers = 0;
	char sizes[64];

	if (c->placeidx && ti < c->type_count)
		servers = sched_placeidx_type_servers(c->placeidx, ti);
	else
		for (size_t i = 0; i < c->server_count; i++)
			servers += c->servers[i].conf->type == t;
	if (c->placement == SCHED_PLACE_BLIND) {
		/* any count: the NPUs of every server of the type, however they lie */
		if (npus <= servers * t->npu_count)
			return 0;
		sched_reason(reason,
			     "npus: %u is more than the %u NPUs of the cluster's %s servers", npus,
			     servers * t->npu_count, t->product);
		return -ENOSPC;
	}
	if (npus <= t->npu_count) {
		if (size_is_legal(t, npus))
			return 0;
		sizes_text(t, sizes, sizeof(sizes));
		sched_reason(reason,
			     "npus: %u cannot be placed on one %s server: it takes %s NPUs "
			     "(HCCS %s of %u)",
			     npus, t->product, sizes,
			     t->hccs == CONF_HCCS_RING ? "rings" :
			     t->hccs == CONF_HCCS_PAIR ? "pairs" : "mesh",
			     t->hccs_group_size);
		return -EINVAL;
	}
	if (npus % t->npu_count) {
		sched_reason(reason,
			     "npus: %u is not a multiple of %u (multi-server jobs use whole %s "
			     "servers); ask for %u or %u",
			     npus, t->npu_count, t->product, npus / t->npu_count * t->npu_count,
			     (npus / t->npu_count + 1) * t->npu_count);
		return -EINVAL;
	}
	if (npus / t->npu_count > servers) {
		sched_reason(reason,
			     "npus: %u needs %u whole %s servers but the cluster has %u (%u %s)",
			     npus, npus / t->npu_count, t->product, servers,
			     servers * t->npu_count, conf_plural(servers * t->npu_count, "NPU", "NPUs"));
		return -ENOSPC;
	}
	if (strcmp(t->rank_table_version, "1.2") == 0 &&
	    !super_pod_split_exists(c, t, npus / t->npu_count)) {
		sched_reason(reason,
			     "npus: %u needs %u %s servers split evenly over super pods (rank "
			     "table 1.2), and no set of this cluster's pods can hold that; ask "
			     "for a server count that divides evenly",
			     npus, npus / t->npu_count, t->product);
		return -ENOSPC;
	}
	return 0;
}

int sched_check_feasible(const struct sched_cluster *c, unsigned npus,
			 const struct conf_server_type *type, char *reason)
{
	const struct conf_server_type *types[16];
	size_t nt = cluster_types(c, type, types, 16);
	int r = -ENOSPC;

	if (nt == 0) {
		sched_reason(reason, "the cluster has no servers of the requested type");
		return -ENOSPC;
	}
	/* Feasible when any type can hold it; otherwise report the first type's reason. */
	for (size_t i = 0; i < nt; i++) {
		char why[SCHED_REASON_MAX];
		int k = feasible_on_type(c, npus, types[i], why);

		if (k == 0)
			return 0;
		if (i == 0) {
			r = k;
			sched_reason(reason, "%s", why);
		}
	}
	return r;
}

static void assign_ranks(struct sched_slice *slices, size_t count)
{
	unsigned rank = 0;

	for (size_t i = 0; i < count; i++) {
		slices[i].first_rank = rank;
		rank += slices[i].npu_count;
	}
}

static void explain_no_room(const struct sched_cluster *c, unsigned npus,
			    const struct conf_server_type *t, char *reason)
{
	if (!reason)
		return; /* the caller does not want the sentence: skip the scan */
	unsigned whole = 0, free_npus = 0, most = 0, off = 0;
	size_t len, ti = type_index(c, t);

	if (c->placeidx && ti < c->type_count) {
		/* only servers with a free NPU add to the sums: the index's buckets of them */
		const struct sched_placeidx *x = c->placeidx;

		off = sched_placeidx_unschedulable(x, ti);
		for (size_t b = 0; b < sched_placeidx_buckets(x); b++) {
			const struct sched_placekey *k = sched_placeidx_key(x, b);

			if (k->type != ti || !k->npus_free || !sched_placeidx_size(x, b))
				continue;
			for (size_t i = sched_placeidx_next(x, b, 0); i != SIZE_MAX;
			     i = sched_placeidx_next(x, b, i + 1)) {
				const struct sched_server *s = &c->servers[i];

				if (!server_accepts(c, s, t))
					continue;
				free_npus += s->npus_free;
				whole += server_is_whole_free(c, s, t);
				if (s->npus_free > most)
					most = s->npus_free;
			}
		}
	} else {
		for (size_t i = 0; i < c->server_count; i++) {
			const struct sched_server *s = &c->servers[i];

			if (s->conf->type != t)
				continue;
			if (!server_accepts(c, s, t)) {
				off += !sched_server_is_schedulable(c, s);
				continue;
			}
			free_npus += s->npus_free;
			whole += server_is_whole_free(c, s, t);
			if (s->npus_free > most)
				most = s->npus_free;
		}
	}
	if (npus > t->npu_count)
		sched_reason(reason,
			     "needs %u NPUs on %u whole %s servers; %u whole %s free "
			     "(%u %s free in all)",
			     npus, npus / t->npu_count, t->product, whole,
			     conf_plural(whole, "server is", "servers are"), free_npus,
			     conf_plural(free_npus, "NPU", "NPUs"));
	else if (t->hccs == CONF_HCCS_RING && npus < t->npu_count)
		sched_reason(reason,
			     "needs %u NPU%s inside one HCCS ring of an %s server; no ring has "
			     "%u free (%u %s free in all)",
			     npus, npus == 1 ? "" : "s", t->product, npus, free_npus,
			     conf_plural(free_npus, "NPU", "NPUs"));
	else
		sched_reason(reason,
			     "needs %u NPU%s on one %s server; the most free on one server is %u "
			     "(%u %s free in all)",
			     npus, npus == 1 ? "" : "s", t->product, most, free_npus,
			     conf_plural(free_npus, "NPU", "NPUs"));
	if (off) {
		len = strlen(reason);
		snprintf(reason + len, SCHED_REASON_MAX - len,
			 "; %u server%s cordoned, draining or unreachable", off,
			 off == 1 ? " is" : "s are");
	}
}

bool sched_size_is_legal(const struct conf_server_type *t, unsigned n)
{
	return size_is_legal(t, n);
}

/* Placeable NPUs of @s, 0 when it takes no work of @t now. */
static unsigned blind_free(const struct sched_cluster *c, const struct sched_server *s,
			   const struct conf_server_type *t)
{
	unsigned n = 0;

	if (!server_accepts(c, s, t))
		return 0;
	for (unsigned d = 0; d < s->conf->npu_count; d++)
		n += sched_npu_is_placeable(&s->npus[d]);
	return n;
}

bool sched_server_can_hold(const struct sched_cluster *c, unsigned server, unsigned npus,
			   const struct conf_server_type *type)
{
	const struct sched_server *s = &c->servers[server];
	unsigned ids[CONF_SERVER_NPUS_MAX];

	if (!server_accepts(c, s, type))
		return false;
	if (npus > s->conf->npu_count)
		return false;
	if (c->placement == SCHED_PLACE_BLIND)
		return blind_free(c, s, type) >= npus;
	return choose_devices(s, npus, true, ids) >= 0;
}

bool sched_server_is_whole_free(const struct sched_cluster *c, unsigned server,
				const struct conf_server_type *type)
{
	return server_is_whole_free(c, &c->servers[server], type);
}

/*
 * SCHED_PLACE_BLIND: @npus NPUs as one gang on servers of @t, server after server the
 * one with the fewest free NPUs that holds all still needed, else the one with the
 * fewest free (all of them). Volcano's binpack plugin scores a node by (used + request)
 * / allocatable per resource (pkg/scheduler/plugins/binpack/binpack.go,
 * ResourceBinPackingScore; a node the request does not fit scores 0), so the fullest
 * node that still fits a task wins; its gang plugin admits the job only when every task
 * has a node. Ties go to inventory order (Volcano picks among equal scores at random).
 * Nothing here knows rings, pairs, switches, super pods or suspicion. Fills
 * *@ret_slices (new) in the order taken, ranks assigned. Returns 0, -ENOSPC or -ENOMEM.
 */
static int place_blind(const struct sched_cluster *c, unsigned npus,
		       const struct conf_server_type *t, struct sched_slice **ret_slices,
		       size_t *ret_count)
{
	unsigned *left = calloc(c->server_count ? c->server_count : 1, sizeof(*left));
	struct sched_slice *slices;
	unsigned total = 0, need = npus;
	size_t n = 0;

	if (!left)
		return -ENOMEM;
	for (size_t i = 0; i < c->server_count; i++) {
		left[i] = blind_free(c, &c->servers[i], t);
		total += left[i];
	}
	if (total < npus || !npus) {
		free(left);
		return -ENOSPC;
	}
	slices = calloc(npus < c->server_count ? npus : c->server_count, sizeof(*slices));
	if (!slices) {
		free(left);
		return -ENOMEM;
	}
	while (need) {
		size_t best = SIZE_MAX, fullest = SIZE_MAX;
		struct sched_slice *sl = &slices[n];
		const struct sched_server *s;

		for (size_t i = 0; i < c->server_count; i++) {
			if (!left[i])
				continue;
			if (left[i] >= need && (best == SIZE_MAX || left[i] < left[best]))
				best = i;
			if (fullest == SIZE_MAX || left[i] < left[fullest])
				fullest = i;
		}
		if (best == SIZE_MAX)
			best = fullest;
		s = &c->servers[best];
		sl->server = (unsigned)best;
		for (unsigned d = 0; d < s->conf->npu_count && sl->npu_count < need; d++)
			if (sched_npu_is_placeable(&s->npus[d]))
				sl->device_ids[sl->npu_count++] = d;
		need -= sl->npu_count;
		left[best] = 0;
		n++;
	}
	free(left);
	assign_ranks(slices, n);
	*ret_slices = slices;
	*ret_count = n;
	return 0;
}

/* sched_place_now() under SCHED_PLACE_BLIND: the first type that has room. */
static int place_blind_any(const struct sched_cluster *c, unsigned npus,
			   const struct conf_server_type *type, struct sched_slice **ret_slices,
			   size_t *ret_count, char *reason)
{
	const struct conf_server_type *types[16];
	size_t nt = cluster_types(c, type, types, 16);
	unsigned free_npus = 0;

	for (size_t i = 0; i < nt; i++) {
		int r = place_blind(c, npus, types[i], ret_slices, ret_count);

		if (r != -ENOSPC)
			return r;
	}
	if (reason) {
		for (size_t i = 0; i < c->server_count; i++)
			free_npus += blind_free(c, &c->servers[i], type);
		sched_reason(reason, "needs %u %s; %u %s free", npus,
			     conf_plural(npus, "NPU", "NPUs"), free_npus,
			     conf_plural(free_npus, "is", "are"));
	}
	return -ENOSPC;
}

int sched_place(const struct sched_cluster *c, unsigned npus, const struct conf_server_type *type,
		struct sched_slice **ret_slices, size_t *ret_count, char *reason)
{
	int r = sched_check_feasible(c, npus, type, reason);

	if (r < 0)
		return r;
	return sched_place_now(c, npus, type, 1, ret_slices, ret_count, reason);
}

int sched_place_now(const struct sched_cluster *c, unsigned npus,
		    const struct conf_server_type *type, unsigned stages,
		    struct sched_slice **ret_slices, size_t *ret_count, char *reason)
{
	const struct conf_server_type *types[16];
	size_t nt = cluster_types(c, type, types, 16);
	struct sched_slice *slices = NULL;
	bool explained = false;
	int r;

	if (c->placement == SCHED_PLACE_BLIND)
		return place_blind_any(c, npus, type, ret_slices, ret_count, reason);
	/* Single-server requests: the best server over every type that can hold them. */
	for (size_t i = 0; i < nt; i++) {
		struct sched_slice one = { 0 };

		if (!size_is_legal(types[i], npus))
			continue;
		r = place_single(c, npus, type, &one);
		if (r == 0) {
			slices = malloc(sizeof(*slices));
			if (!slices)
				return -ENOMEM;
			*slices = one;
			*ret_slices = slices;
			*ret_count = 1;
			return 0;
		}
		explain_no_room(c, npus, types[i], reason);
		explained = true;
		break;
	}

	/* Multi-server: whole servers of one type; the first type that has room. */
	for (size_t i = 0; i < nt; i++) {
		const struct conf_server_type *t = types[i];
		unsigned k, *idx;

		if (npus <= t->npu_count || npus % t->npu_count)
			continue;
		k = npus / t->npu_count;
		idx = calloc(k, sizeof(*idx));
		slices = calloc(k, sizeof(*slices));
		if (!idx || !slices) {
			free(idx);
			free(slices);
			return -ENOMEM;
		}
		r = place_multi(c, k, t, stages > 1 && k % stages == 0 ? k / stages : 1, idx);
		if (r == 0) {
			for (unsigned s = 0; s < k; s++) {
				slices[s].server = idx[s];
				slices[s].npu_count = t->npu_count;
				for (unsigned d = 0; d < t->npu_count; d++)
					slices[s].device_ids[d] = d;
			}
			free(idx);
			qsort_r(slices, k, sizeof(*slices), slice_topo_cmp, (void *)c);
			assign_ranks(slices, k);
			*ret_slices = slices;
			*ret_count = k;
			return 0;
		}
		free(idx);
		free(slices);
		if (r != -ENOSPC)
			return r;
		if (!explained) {
			explain_no_room(c, npus, t, reason);
			explained = true;
		}
	}
	if (!explained && reason)
		sched_reason(reason, "no server has room for %u %s", npus,
			     conf_plural(npus, "NPU", "NPUs"));
	return -ENOSPC;
}

uint32_t sched_type_mask(const struct sched_cluster *c, unsigned npus,
			 const struct conf_server_type *type)
{
	const struct conf_server_type *types[16];
	size_t nt = cluster_types(c, NULL, types, 16);
	char why[SCHED_REASON_MAX];
	uint32_t mask = 0;

	for (size_t i = 0; i < nt; i++)
		if ((!type || types[i] == type) && feasible_on_type(c, npus, types[i], why) == 0)
			mask |= 1u << i;
	return mask;
}

/* NPUs of @s that could be given out once every job ended (healthy, not isolated). */
static unsigned usable_npus(const struct sched_server *s, unsigned from, unsigned to)
{
	unsigned n = 0;

	for (unsigned d = from; d < to; d++)
		n += !s->npus[d].isolated && (s->npus[d].health == SCHED_HEALTH_OK ||
					      s->npus[d].health == SCHED_HEALTH_WARNING);
	return n;
}

bool sched_fits_when_idle(const struct sched_cluster *c, unsigned npus,
			  const struct conf_server_type *type)
{
	const struct conf_server_type *types[16];
	size_t nt = cluster_types(c, type, types, 16);

	for (size_t i = 0; i < nt; i++) {
		const struct conf_server_type *t = types[i];
		unsigned whole = 0, usable = 0;

		if (c->placement == SCHED_PLACE_BLIND) {
			for (size_t k = 0; k < c->server_count; k++)
				if (c->servers[k].conf->type == t &&
				    sched_server_is_schedulable(c, &c->servers[k]))
					usable += usable_npus(&c->servers[k], 0, t->npu_count);
			if (usable >= npus)
				return true;
			continue;
		}
		for (size_t k = 0; k < c->server_count; k++) {
			const struct sched_server *s = &c->servers[k];
			unsigned g = t->hccs == CONF_HCCS_RING ? t->hccs_group_size : t->npu_count;

			if (s->conf->type != t || !sched_server_is_schedulable(c, s))
				continue;
			if (usable_npus(s, 0, t->npu_count) == t->npu_count)
				whole++;
			if (npus <= t->npu_count && size_is_legal(t, npus)) {
				for (unsigned r = 0; r < t->npu_count / g; r++)
					if (usable_npus(s, r * g, (r + 1) * g) >= npus ||
					    (npus > g && usable_npus(s, 0, t->npu_count) >= npus))
						return true;
			}
		}
		if (npus > t->npu_count && npus % t->npu_count == 0 && whole >= npus / t->npu_count)
			return true;
	}
	return false;
}

/* Is @server among the first @n slices of @v? */
static bool slices_hold(const struct sched_slice *v, size_t n, unsigned server)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].server == server)
			return true;
	return false;
}

int sched_replace(const struct sched_cluster *c, const struct sched_job *j, const bool *bad,
		  struct sched_slice **ret_slices, size_t *ret_count)
{
	const struct conf_server_type *t;
	struct sched_slice *out;
	size_t need = 0, n = 0;
	unsigned *lost;
	bool *kept_switch;

	/* a topology-blind scheduler places the gang again (Volcano restarts the job) */
	if (!j->slice_count || c->placement == SCHED_PLACE_BLIND)
		return -ENOSPC;
	t = c->servers[j->slices[0].server].conf->type;
	/* super pods need an even split: leave that to a whole new placement */
	if (strcmp(t->rank_table_version, "1.2") == 0)
		return -ENOSPC;
	for (size_t i = 0; i < j->slice_count; i++) {
		need += bad[i];
		if (!bad[i] && j->slices[i].npu_count != t->npu_count)
			return -ENOSPC; /* only whole-server jobs are patched */
	}
	out = calloc(j->slice_count, sizeof(*out));
	/* per switch: how many of the job's servers failed under it, and does it keep one */
	lost = calloc(c->switch_count ? c->switch_count : 1, sizeof(*lost));
	kept_switch = calloc(c->switch_count ? c->switch_count : 1, sizeof(*kept_switch));
	if (!out || !lost || !kept_switch) {
		free(out);
		free(lost);
		free(kept_switch);
		return -ENOMEM;
	}
	for (size_t i = 0; i < j->slice_count; i++) {
		unsigned sw = c->servers[j->slices[i].server].switch_index;

		if (bad[i]) {
			lost[sw]++;
			continue;
		}
		out[n++] = j->slices[i];
		kept_switch[sw] = true;
	}
	/*
	 * replacements: whole free servers, clean ones first; first as many under each
	 * switch as failed there (each switch then holds as many of the job's servers as
	 * before, so pipeline stages placed whole per switch stay whole), then under a
	 * switch the job keeps, then anywhere
	 */
	for (int pass = 0; pass < 6 && need; pass++) {
		size_t ti = type_index(c, t);
		bool indexed = c->placeidx && ti < c->type_count;
		unsigned tier = (unsigned)pass % 3; /* 0: a failed server's switch, 1: kept, 2: other */

		/* whole free servers only: the index's set of them when there is one */
		for (size_t i = indexed ? sched_placeidx_whole_next(c->placeidx, ti, 0) : 0;
		     i < c->server_count && need;
		     i = indexed ? sched_placeidx_whole_next(c->placeidx, ti, i + 1) : i + 1) {
			const struct sched_server *s = &c->servers[i];
			unsigned sw = s->switch_index;

			if ((tier == 0 && !lost[sw]) || (tier == 1 && !kept_switch[sw]) ||
			    (tier == 2 && kept_switch[sw]) || !server_is_whole_free(c, s, t) ||
			    s->suspect != (pass >= 3) || slices_hold(out, n, (unsigned)i))
				continue; /* (a tier may see a server an earlier one took) */
			if (tier == 0)
				lost[sw]--;
			out[n].server = (unsigned)i;
			out[n].npu_count = t->npu_count;
			for (unsigned d = 0; d < t->npu_count; d++)
				out[n].device_ids[d] = d;
			n++;
			need--;
		}
	}
	free(lost);
	free(kept_switch);
	if (need) {
		free(out);
		return -ENOSPC;
	}
	qsort_r(out, n, sizeof(*out), slice_topo_cmp, (void *)c);
	assign_ranks(out, n);
	*ret_slices = out;
	*ret_count = n;
	return 0;
}
