/* SPDX-License-Identifier: MIT */
/*
 * jobs/<id>/topology.json: where each rank of a placed job runs, its place in each
 * parallel dimension (sched_comm.h: rank = tp_i + tp * (cp_i + cp * (dp_i + dp * pp_i)),
 * ep groups runs of ep consecutive dp indices), the groups each dimension forms, and the
 * slowest link class each group and each pipeline stage boundary crosses, with the cost
 * model's figures for those classes. It says what the placement gives a training job, in
 * the words a launcher or a person tuning tp and pp uses; it changes only with the job's
 * generation, like the rank table.
 *
 * The model's figures come from sched_comm_params_for() for the chip of the job's servers.
 * The spine's oversubscription is the cluster configuration's spine_oversubscription
 * (1, a non-blocking fabric, when not given), said in the file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_comm.h"
#include "sched_internal.h"
#include "sched_json.h"

/*
 * The servers @n members of @m span, names in order of first appearance. @seen has an
 * entry per server of @c; a server is counted once it holds @stamp, which is new for
 * each call, so the walk is O(n) and nothing is cleared between calls.
 */
static json_t *servers_json(const struct sched_cluster *c, const struct sched_npu_loc *m,
			    size_t n, unsigned *seen, unsigned stamp)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		if (seen[m[i].server] == stamp)
			continue;
		seen[m[i].server] = stamp;
		sched_jpush(a, sched_jstr(c->servers[m[i].server].conf->name));
	}
	return a;
}

static unsigned hccs_group_of(const struct sched_cluster *c, struct sched_npu_loc l)
{
	const struct conf_server *cs = c->servers[l.server].conf;

	return l.device / (cs->type->hccs_group_size ? cs->type->hccs_group_size : cs->npu_count);
}

static int loc_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_cluster *c = arg;
	const struct sched_npu_loc *x = a, *y = b;
	unsigned gx = hccs_group_of(c, *x), gy = hccs_group_of(c, *y);

	if (x->server != y->server)
		return x->server < y->server ? -1 : 1;
	if (gx != gy)
		return gx < gy ? -1 : 1;
	return x->device < y->device ? -1 : x->device > y->device;
}

/*
 * The members that decide a group's slowest link, in place: a link's class depends only on
 * the two servers, and within one server on whether the devices share an HCCS group (ring,
 * mesh, die pair), so two members per server and HCCS group show every class the whole
 * group has. A data-parallel group of thousands of ranks then costs its servers squared,
 * not its ranks squared. Returns the new count.
 */
static size_t link_representatives(const struct sched_cluster *c, struct sched_npu_loc *m,
				   size_t n)
{
	size_t out = 0;

	qsort_r(m, n, sizeof(*m), loc_cmp, (void *)c);
	for (size_t i = 0; i < n; i++)
		if (out < 2 || m[out - 2].server != m[i].server ||
		    hccs_group_of(c, m[out - 2]) != hccs_group_of(c, m[i]))
			m[out++] = m[i];
	return out;
}

/* Servers by (leaf switch, super pod, server): the domains links between servers
 * depend on. */
static int domain_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_cluster *c = arg;
	const struct sched_npu_loc *x = a, *y = b;
	const struct sched_server *sx = &c->servers[x->server], *sy = &c->servers[y->server];
	const char *px = sx->conf->super_pod ? sx->conf->super_pod : "";
	const char *py = sy->conf->super_pod ? sy->conf->super_pod : "";
	int r;

	if (sx->switch_index != sy->switch_index)
		return sx->switch_index < sy->switch_index ? -1 : 1;
	if ((r = strcmp(px, py)) != 0)
		return r;
	if (x->server != y->server)
		return x->server < y->server ? -1 : 1;
	return loc_cmp(a, b, arg);
}

static bool same_domain(const struct sched_cluster *c, struct sched_npu_loc a,
			struct sched_npu_loc b)
{
	const struct sched_server *sa = &c->servers[a.server], *sb = &c->servers[b.server];

	return sa->switch_index == sb->switch_index &&
	       strcmp(sa->conf->super_pod ? sa->conf->super_pod : "",
		      sb->conf->super_pod ? sb->conf->super_pod : "") == 0;
}

/*
 * A group's slowest link (sched_group_link()'s answer) without looking at every pair:
 * a link's class depends only on the two servers' leaf switch and super pod, and within
 * a server on whether the devices share an HCCS group. So: every pair inside each
 * server among two members per HCCS group (link_representatives()), and between
 * servers the pairs among the first two servers of each (switch, pod) domain. A
 * data-parallel group over thousands of servers then costs its domains squared, not
 * its servers squared. Reorders @m.
 */
static enum sched_link group_link(const struct sched_cluster *c,
				  const struct sched_comm_params *p, struct sched_npu_loc *m,
				  size_t n)
{
	enum sched_link worst = SCHED_LINK_SELF, l;
	size_t out = 0, servers_here = 0;

	n = link_representatives(c, m, n);
	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n && m[k].server == m[i].server; k++) {
			l = sched_link_between(c, m[i], m[k]);
			if (sched_link_is_slower(p, l, worst))
				worst = l;
		}
	qsort_r(m, n, sizeof(*m), domain_cmp, (void *)c);
	for (size_t i = 0; i < n; i++) {
		bool new_domain = i == 0 || !same_domain(c, m[i - 1], m[i]);
		bool new_server = i == 0 || m[i - 1].server != m[i].server;

		if (new_domain)
			servers_here = 0;
		if (new_server)
			servers_here++;
		if (servers_here <= 2)
			m[out++] = m[i];
	}
	l = sched_group_link(c, p, m, out);
	return sched_link_is_slower(p, l, worst) ? l : worst;
}

static json_t *rank_json(const struct sched_cluster *c, const struct sched_parallel *par,
			 unsigned rank, struct sched_npu_loc loc)
{
	const struct conf_server *cs = c->servers[loc.server].conf;
	json_t *o = json_object();

	sched_jset(o, "rank", json_integer(rank));
	sched_jset(o, "server", sched_jstr(cs->name));
	sched_jset(o, "host_ip", sched_jstr(cs->host_ip));
	sched_jset(o, "device_id", json_integer(loc.device));
	sched_jset(o, "hccs_group", json_integer(hccs_group_of(c, loc)));
	sched_jset(o, "leaf_switch", sched_jstr(cs->leaf_switch));
	sched_jset(o, "super_pod", cs->super_pod ? sched_jstr(cs->super_pod) : json_null());
	for (int d = 0; d < SCHED_DIM_COUNT; d++)
		sched_jset(o, sched_dim_name(d),
			   json_integer(sched_parallel_coord(par, rank, (enum sched_dim)d)));
	return o;
}

/*
 * The groups of dimension @d, each {ranks, servers, link}; [] when the dimension has size
 * 1 (its groups are single ranks that talk to nobody). Marks the link classes used in
 * @used. @members has room for the largest dimension, @m for as many locations.
 */
static json_t *groups_json(const struct sched_cluster *c, const struct sched_comm_params *p,
			   const struct sched_parallel *par, enum sched_dim d,
			   const struct sched_npu_loc *loc, unsigned *members,
			   struct sched_npu_loc *m, unsigned *seen, unsigned *stamp, bool *used)
{
	json_t *a = json_array();

	if (par->size[d] <= 1)
		return a;
	for (unsigned g = 0; g < sched_parallel_group_count(par, d); g++) {
		unsigned n = sched_parallel_group(par, d, g, members);
		json_t *o = json_object(), *ranks = json_array();
		enum sched_link l;

		for (unsigned i = 0; i < n; i++) {
			m[i] = loc[members[i]];
			sched_jpush(ranks, json_integer(members[i]));
		}
		sched_jset(o, "servers", servers_json(c, m, n, seen, ++*stamp));
		l = group_link(c, p, m, n);
		used[l] = true;
		sched_jset(o, "ranks", ranks);
		sched_jset(o, "link", sched_jstr(sched_link_name(l)));
		sched_jpush(a, o);
	}
	return a;
}

/* Between stage s and s + 1: rank r of one talks to rank r + tp*cp*dp of the next. */
static json_t *boundaries_json(const struct sched_cluster *c, const struct sched_comm_params *p,
			       const struct sched_parallel *par, const struct sched_npu_loc *loc,
			       bool *used)
{
	unsigned stage = par->size[SCHED_DIM_TP] * par->size[SCHED_DIM_CP] *
			 par->size[SCHED_DIM_DP];
	json_t *a = json_array();

	for (unsigned s = 0; s + 1 < par->size[SCHED_DIM_PP]; s++) {
		enum sched_link worst = SCHED_LINK_SELF;
		json_t *o = json_object();

		for (unsigned r = s * stage; r < (s + 1) * stage; r++) {
			struct sched_npu_loc pair[2] = { loc[r], loc[r + stage] };
			enum sched_link l = sched_group_link(c, p, pair, 2);

			if (sched_link_is_slower(p, l, worst))
				worst = l;
		}
		used[worst] = true;
		sched_jset(o, "from_stage", json_integer(s));
		sched_jset(o, "to_stage", json_integer(s + 1));
		sched_jset(o, "link", sched_jstr(sched_link_name(worst)));
		sched_jpush(a, o);
	}
	return a;
}

int sched_render_job_topology(const struct sched_cluster *c, const struct sched_job *j,
			      char **ret, size_t *ret_len)
{
	const struct conf_server_type *t;
	struct sched_comm_params p;
	struct sched_parallel par;
	struct sched_npu_loc *loc, *m;
	unsigned n = sched_job_total_npus(j), *members, *seen, stamp = 0, order[SCHED_LINK_COUNT];
	bool used[SCHED_LINK_COUNT] = { false };
	size_t norder = 0;
	json_t *o, *ranks, *groups, *classes, *dims, *bounds;
	int r;

	if (!j->slice_count || !n)
		return -ENOENT;
	t = sched_slice_server(c, &j->slices[0])->conf->type;
	/* the parser and the elastic sizes keep the layout whole; should one not fit, the
	 * file says what the ranks are as pure data parallel rather than fail */
	if (sched_parallel_from_spec(j->spec, n, &par) < 0)
		sched_parallel_from_spec(NULL, n, &par);
	sched_comm_params_for(t->chip, c->conf->spine_oversub_pct / 100.0, &p);
	loc = calloc(n, sizeof(*loc));
	m = calloc(n, sizeof(*m));
	members = calloc(n, sizeof(*members));
	seen = calloc(c->server_count ? c->server_count : 1, sizeof(*seen));
	if (!loc || !m || !members || !seen) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < j->slice_count; i++) {
		const struct sched_slice *sl = &j->slices[i];

		for (unsigned k = 0; k < sl->npu_count; k++)
			if (sl->first_rank + k < n)
				loc[sl->first_rank + k] = (struct sched_npu_loc){ sl->server,
										 sl->device_ids[k] };
	}

	o = json_object();
	sched_jset(o, "job", sched_jstr(j->name));
	sched_jset(o, "generation", json_integer(j->generation));
	sched_jset(o, "server_type", sched_jstr(t->name));
	sched_jset(o, "product", sched_jstr(t->product));
	sched_jset(o, "chip", sched_jstr(t->chip));
	sched_jset(o, "npus", json_integer(n));
	sched_jset(o, "server_count", json_integer((json_int_t)j->slice_count));
	sched_jset(o, "rank_order", sched_jstr("tp-cp-ep-dp-pp"));
	dims = json_object();
	for (int d = 0; d < SCHED_DIM_COUNT; d++)
		sched_jset(dims, sched_dim_name(d), json_integer(par.size[d]));
	sched_jset(o, "parallel", dims);

	ranks = json_array();
	for (unsigned k = 0; k < n; k++)
		sched_jpush(ranks, rank_json(c, &par, k, loc[k]));
	groups = json_object();
	for (int d = 0; d < SCHED_DIM_COUNT; d++)
		sched_jset(groups, sched_dim_name(d),
			   groups_json(c, &p, &par, (enum sched_dim)d, loc, members, m, seen,
				       &stamp, used));
	bounds = boundaries_json(c, &p, &par, loc, used);

	/* the figures first in the file, though known last: what the groups' links mean */
	sched_jset(o, "spine_oversubscription", json_real(p.spine_oversub));
	/* the classes used, fastest first by the cost model's one rule (an insertion sort
	 * of at most SCHED_LINK_COUNT) */
	for (unsigned l = 0; l < SCHED_LINK_COUNT; l++) {
		size_t i = norder++;

		if (!used[l]) {
			norder--;
			continue;
		}
		for (; i > 0 && sched_link_is_slower(&p, order[i - 1], l); i--)
			order[i] = order[i - 1];
		order[i] = l;
	}
	classes = json_array();
	for (size_t i = 0; i < norder; i++) {
		enum sched_link l = order[i];
		json_t *e;

		e = json_object();
		sched_jset(e, "name", sched_jstr(sched_link_name(l)));
		sched_jset(e, "gbyte_per_sec", json_real(p.link[l].gbyte_per_sec));
		sched_jset(e, "latency_usec", json_real(p.link[l].latency_usec));
		sched_jset(e, "lanes", json_integer(p.link[l].lanes));
		sched_jpush(classes, e);
	}
	sched_jset(o, "link_classes", classes);
	sched_jset(o, "ranks", ranks);
	sched_jset(o, "groups", groups);
	sched_jset(o, "pp_boundaries", bounds);
	r = sched_json_finish(o, ret, ret_len, JSON_INDENT(2));
out:
	free(loc);
	free(m);
	free(members);
	free(seen);
	return r;
}
