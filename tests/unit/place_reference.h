/* SPDX-License-Identifier: MIT */
/*
 * The placement of sched/sched_place.c as it was before the placement index (commit
 * 698aa1f), a scan over every server, kept verbatim as the reference that
 * test_sched_placeidx compares the indexed placement with: ref_place_now() is the old
 * sched_place_now(), ref_replace() the old sched_replace(). Test-only.
 */
#ifndef ASCENDFS_TEST_PLACE_REFERENCE_H
#define ASCENDFS_TEST_PLACE_REFERENCE_H

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

static int place_single(const struct sched_cluster *c, unsigned n,
			const struct conf_server_type *type, struct sched_slice *out)
{
	bool topo = c->conf->topology_aware_schedule;
	long best_score = LONG_MAX;
	int best = -1;

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
		score = ((long)s->suspect << 41) |
			((long)!server_is_healthy(s) << 40) | ((long)fit << 32) |
			((long)s->npus_free << 24) | (long)i;
		if (score < best_score) {
			best_score = score;
			best = (int)i;
		}
	}
	if (best < 0)
		return -ENOSPC;
	out->server = (unsigned)best;
	out->npu_count = n;
	out->first_rank = 0;
	choose_devices(&c->servers[best], n, topo, out->device_ids);
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

/*
 * Choose @k whole free servers of @type among those for which @in_scope is true (NULL:
 * all), minimizing switches spanned. Writes server indices to @out. Returns 0 or
 * -ENOSPC.
 */
static int pick_switches(const struct sched_cluster *c, unsigned k,
			 const struct conf_server_type *type, const char *super_pod,
			 bool clean_only, unsigned *out)
{
	struct group_count *g;
	unsigned taken = 0;
	size_t ng = c->switch_count;
	bool *pick_sw;
	int r = -ENOSPC;

	g = calloc(ng ? ng : 1, sizeof(*g));
	pick_sw = calloc(ng ? ng : 1, sizeof(*pick_sw));
	if (!g || !pick_sw) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ng; i++)
		g[i].id = (unsigned)i;
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		if (super_pod && (!s->conf->super_pod || strcmp(s->conf->super_pod, super_pod)))
			continue;
		if (server_is_whole_free_for(c, s, type, clean_only))
			g[s->switch_index].free++;
	}
	/* One switch: the one with the fewest free servers that still fits (best fit). */
	{
		int best = -1;

		for (size_t i = 0; i < ng; i++)
			if (g[i].free >= k && (best < 0 || g[i].free < g[best].free))
				best = (int)i;
		if (best >= 0) {
			pick_sw[best] = true;
			goto collect;
		}
	}
	/* Fewest switches: the largest first, then the tightest one that completes it. */
	qsort(g, ng, sizeof(*g), group_cmp_desc);
	{
		unsigned need = k;
		size_t i = 0;

		while (i < ng && g[i].free && need) {
			int fin = -1;

			for (size_t j = i; j < ng; j++)
				if (g[j].free >= need && (fin < 0 || g[j].free < g[fin].free))
					fin = (int)j;
			if (fin >= 0) {
				pick_sw[g[fin].id] = true;
				need = 0;
				break;
			}
			pick_sw[g[i].id] = true;
			need -= g[i].free;
			i++;
		}
		if (need)
			goto out;
	}
collect:
	/* Take whole free servers of the chosen switches in topology order. */
	for (size_t sw = 0; sw < ng && taken < k; sw++) {
		if (!pick_sw[sw])
			continue;
		for (size_t i = 0; i < c->server_count && taken < k; i++) {
			const struct sched_server *s = &c->servers[i];

			if (s->switch_index != sw ||
			    !server_is_whole_free_for(c, s, type, clean_only))
				continue;
			if (super_pod &&
			    (!s->conf->super_pod || strcmp(s->conf->super_pod, super_pod)))
				continue;
			out[taken++] = (unsigned)i;
		}
	}
	r = taken == k ? 0 : -ENOSPC;
out:
	free(g);
	free(pick_sw);
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
			r = pick_switches(c, per, type, pods[p].pod, clean_only, out + got * per);
			got++;
		}
	}
	free(pods);
	return r;
}

static int place_multi_among(const struct sched_cluster *c, unsigned k,
			     const struct conf_server_type *type, bool clean_only, unsigned *out)
{
	unsigned taken = 0;

	if (strcmp(type->rank_table_version, "1.2") == 0)
		return place_super_pods(c, k, type, clean_only, out);
	if (!c->conf->topology_aware_schedule) {
		for (size_t i = 0; i < c->server_count && taken < k; i++)
			if (server_is_whole_free_for(c, &c->servers[i], type, clean_only))
				out[taken++] = (unsigned)i;
		return taken == k ? 0 : -ENOSPC;
	}
	/* one leaf switch when one has room, else the fewest switches */
	return pick_switches(c, k, type, NULL, clean_only, out);
}

/* Clean servers when they suffice; else the same rules over every server. */
static int place_multi(const struct sched_cluster *c, unsigned k,
		       const struct conf_server_type *type, unsigned *out)
{
	int r = c->suspect_count ? place_multi_among(c, k, type, true, out) : -ENOSPC;

	return r == -ENOSPC ? place_multi_among(c, k, type, false, out) : r;
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
	size_t len;

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

static int ref_place_now(const struct sched_cluster *c, unsigned npus,
		    const struct conf_server_type *type, struct sched_slice **ret_slices,
		    size_t *ret_count, char *reason)
{
	const struct conf_server_type *types[16];
	size_t nt = cluster_types(c, type, types, 16);
	struct sched_slice *slices = NULL;
	bool explained = false;
	int r;

	/* Single-server requests: the best server over every type that can hold them. */
	for (size_t i = 0; i < nt; i++) {
		struct sched_slice one;

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
		r = place_multi(c, k, t, idx);
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

/* Is @server among the first @n slices of @v? */
static bool slices_hold(const struct sched_slice *v, size_t n, unsigned server)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].server == server)
			return true;
	return false;
}

static int ref_replace(const struct sched_cluster *c, const struct sched_job *j, const bool *bad,
		  struct sched_slice **ret_slices, size_t *ret_count)
{
	const struct conf_server_type *t;
	struct sched_slice *out;
	size_t need = 0, n = 0;
	unsigned *lost;
	bool *kept_switch;

	if (!j->slice_count)
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
		unsigned tier = (unsigned)pass % 3; /* 0: a failed server's switch, 1: kept, 2: other */

		for (size_t i = 0; i < c->server_count && need; i++) {
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

#endif
