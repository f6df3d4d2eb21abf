/* SPDX-License-Identifier: MIT */
/*
 * sched_fixture.h: clusters and jobs for the sched unit tests.
 *
 * Header-only (every helper is static inline, so each test binary links only its own
 * .c file and test_util.c). Include it after <cmocka.h>: the helpers fail the running
 * test on any unexpected error.
 *
 * Clusters are built the way the daemon builds them: a cluster YAML document (the
 * schema of examples/ascend_cluster.yaml) goes through conf_cluster_parse() and then
 * sched_cluster_new(). fx_cluster_yaml() writes that document for N servers of one
 * type across S leaf switches, with unique host and device IPs:
 *   server i:   name "node-<i>" (0-based), host_ip 10.1.<i/250>.<i%250+1>
 *   device d:   device_ip 10.<16+d>.<i/250>.<i%250+1>
 *   switch s:   "leaf-<s>"; super pod p (A3): "p<p>"
 * Job specs are built directly as struct conf_job_spec (queue "default", priority 500
 * unless told otherwise), so the sched tests do not depend on the spec parser.
 */
#ifndef ASCENDFS_SCHED_FIXTURE_H
#define ASCENDFS_SCHED_FIXTURE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascend_sched.h"
#include "conf.h"

/* The ordinary job owner of the tests; root is uid 0. */
#define FX_UID 1000u
#define FX_GID 1000u
#define FX_OTHER_UID 1001u

struct fx_opts {
	const char *type;	     /* server type key; NULL = "atlas800t-a2" */
	unsigned servers;	     /* servers in all (ignored when per_switch is given) */
	unsigned switches;	     /* leaf switches; 0 = 1 */
	const unsigned *per_switch;  /* servers under each switch (`switches` entries) or NULL */
	bool interleave;	     /* server i under switch i % switches (else contiguous) */
	unsigned servers_per_pod;    /* super pod size (A3 needs pods); 0 = one pod "p0" */
	bool topology_blind;	     /* cluster.topology_aware_schedule: false */
	bool no_mix;		     /* resource.allow_mix_task: false */
	bool quota;		     /* resource.enable_quota_limit: true */
	bool no_backfill;	     /* resource.backfill: false (strict order) */
	bool no_preemption;	     /* resource.preemption: false */
	unsigned max_preemptions;    /* resource.max_preemptions_per_job; 0 = leave out */
	int grace_sec;		     /* cluster.stop_grace_period; 0 = leave default (30) */
	unsigned grow_delay_sec;     /* resource.elastic_grow_delay; 0 here = 0 (grow at
				      * once), not the default 600 */
	bool rank_table_launch;	     /* cluster.enable_dynamic_network: false */
	unsigned connect_timeout_sec; /* hccl.hccl_connect_timeout; 0 = leave default */
	unsigned scheduler_port;     /* cluster.scheduler_port; 0 = leave default */
	const char *queues;	     /* YAML list items for `queues:` (indented 2), or NULL */
	bool no_device_ips;	     /* leave device_ips out of the inventory */
	const char *cluster_extra;   /* more `cluster:` lines (each indented 2, ending in a
				      * newline), or NULL */
	const char *resource_extra;  /* more `resource:` lines, likewise, or NULL */
};

/* fx_now() - a strictly increasing fake clock (microseconds since the epoch). */
static inline uint64_t fx_now(void)
{
	static uint64_t t = 1700000000000000ull;

	t += 1000000;
	return t;
}

/* fx_switch_of() - the switch index server @i of @o is declared under. */
static inline unsigned fx_switch_of(const struct fx_opts *o, unsigned i, unsigned total)
{
	unsigned sw = o->switches ? o->switches : 1;

	if (o->per_switch) {
		unsigned acc = 0;

		for (unsigned s = 0; s < sw; s++) {
			acc += o->per_switch[s];
			if (i < acc)
				return s;
		}
		return sw - 1;
	}
	if (o->interleave)
		return i % sw;
	return (unsigned)((unsigned long long)i * sw / total);
}

/* fx_cluster_yaml() - the cluster document for @o; new string (free()). */
static inline char *fx_cluster_yaml(const struct fx_opts *o)
{
	const char *type = o->type ? o->type : "atlas800t-a2";
	const struct conf_server_type *t = conf_server_type_find(type);
	unsigned total = o->servers, sw = o->switches ? o->switches : 1;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(t);
	assert_non_null(f);
	if (o->per_switch) {
		total = 0;
		for (unsigned s = 0; s < sw; s++)
			total += o->per_switch[s];
	}
	assert_true(total > 0);
	fprintf(f, "cluster:\n  name: fixture\n  scheduler_ip: 10.0.0.1\n");
	if (o->scheduler_port)
		fprintf(f, "  scheduler_port: %u\n", o->scheduler_port);
	fprintf(f, "  topology_aware_schedule: %s\n", o->topology_blind ? "false" : "true");
	fprintf(f, "  enable_dynamic_network: %s\n", o->rank_table_launch ? "false" : "true");
	if (o->grace_sec)
		fprintf(f, "  stop_grace_period: %d\n", o->grace_sec < 0 ? 0 : o->grace_sec);
	if (o->cluster_extra)
		fprintf(f, "%s", o->cluster_extra);
	fprintf(f, "resource:\n  total_npu: %u\n  allow_mix_task: %s\n  enable_quota_limit: %s\n",
		total * t->npu_count, o->no_mix ? "false" : "true", o->quota ? "true" : "false");
	fprintf(f, "  backfill: %s\n  preemption: %s\n  elastic_grow_delay: %u\n",
		o->no_backfill ? "false" : "true", o->no_preemption ? "false" : "true",
		o->grow_delay_sec);
	if (o->max_preemptions)
		fprintf(f, "  max_preemptions_per_job: %u\n", o->max_preemptions);
	if (o->resource_extra)
		fprintf(f, "%s", o->resource_extra);
	if (o->connect_timeout_sec)
		fprintf(f, "hccl:\n  hccl_connect_timeout: %u\n", o->connect_timeout_sec);
	if (o->queues)
		fprintf(f, "queues:\n%s", o->queues);
	fprintf(f, "servers:\n");
	for (unsigned i = 0; i < total; i++) {
		fprintf(f, "  - name: node-%u\n    host_ip: 10.1.%u.%u\n    type: %s\n"
			   "    switch: leaf-%u\n",
			i, i / 250, i % 250 + 1, type, fx_switch_of(o, i, total));
		if (strcmp(t->rank_table_version, "1.2") == 0 || o->servers_per_pod)
			fprintf(f, "    super_pod: \"p%u\"\n",
				o->servers_per_pod ? i / o->servers_per_pod : 0);
		if (o->no_device_ips)
			continue;
		fprintf(f, "    device_ips: [");
		for (unsigned d = 0; d < t->npu_count; d++)
			fprintf(f, "%s10.%u.%u.%u", d ? ", " : "", 16 + d, i / 250, i % 250 + 1);
		fprintf(f, "]\n");
	}
	assert_int_equal(fclose(f), 0);
	return text;
}

/* fx_cluster() - a new sched cluster for @o (sched_cluster_free()). */
static inline struct sched_cluster *fx_cluster(const struct fx_opts *o)
{
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_error err;
	char *yaml = fx_cluster_yaml(o);
	char msg[1024];
	int r;

	memset(&err, 0, sizeof(err));
	r = conf_cluster_parse(yaml, strlen(yaml), "fixture.yaml", &conf, &err);
	if (r < 0)
		fail_msg("fixture config refused: %s\n%s",
			 conf_error_format(&err, msg, sizeof(msg)), yaml);
	free(yaml);
	assert_int_equal(sched_cluster_new(conf, &c), 0);
	assert_non_null(c);
	c->check_invariants = true; /* abort at the first transition that breaks one */
	return c;
}

/* fx_spec_full() - a new job spec (stolen by sched_job_submit). @queue NULL = "default". */
static inline struct conf_job_spec *fx_spec_full(const char *name, unsigned npus,
						 const char *queue, unsigned priority)
{
	struct conf_job_spec *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->name = strdup(name);
	s->queue = strdup(queue ? queue : "default");
	assert_non_null(s->name);
	assert_non_null(s->queue);
	s->npus = s->npus_min = s->npus_max = npus;
	s->priority = priority;
	s->launch = CONF_LAUNCH_MSRUN;
	s->max_restarts = 3;
	return s;
}

static inline struct conf_job_spec *fx_spec(const char *name, unsigned npus)
{
	return fx_spec_full(name, npus, NULL, 500);
}

/* @s waits for job @name to complete, or with @any to end however (one more `after:`
 * entry; spec->after is owned by the spec, as conf_job_spec_parse() makes it). */
static inline struct conf_job_spec *fx_after(struct conf_job_spec *s, const char *name, bool any)
{
	struct conf_job_after *a = realloc(s->after, (s->after_count + 1) * sizeof(*a));

	assert_non_null(a);
	s->after = a;
	a = &s->after[s->after_count++];
	memset(a, 0, sizeof(*a));
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->any = any;
	return s;
}

/* fx_check() - sched_check_invariants() must hold. */
static inline void fx_check(const struct sched_cluster *c)
{
	char why[SCHED_REASON_MAX] = "";
	int r = sched_check_invariants(c, why);

	if (r != 0)
		fail_msg("sched_check_invariants: %d: %s", r, why);
}

/* fx_submit_spec() - submit @spec as @uid; must be accepted. Returns the job (borrowed). */
static inline struct sched_job *fx_submit_spec(struct sched_cluster *c, struct conf_job_spec *spec,
					       uid_t uid)
{
	char reason[SCHED_REASON_MAX] = "";
	char name[CONF_NAME_MAX + 1];
	struct sched_job *j = NULL;
	int r;

	snprintf(name, sizeof(name), "%s", spec->name);
	r = sched_job_submit(c, spec, uid, FX_GID, fx_now(), reason, &j);
	if (r != 0)
		fail_msg("submit %s: %d: %s", name, r, reason);
	assert_non_null(j);
	assert_ptr_equal(sched_cluster_find_job(c, name), j);
	fx_check(c);
	return j;
}

/* fx_submit() - submit job @name of @npus NPUs in queue default as FX_UID. */
static inline struct sched_job *fx_submit(struct sched_cluster *c, const char *name, unsigned npus)
{
	return fx_submit_spec(c, fx_spec(name, npus), FX_UID);
}

/* fx_run() - as fx_submit(), and the job must be running. */
static inline struct sched_job *fx_run(struct sched_cluster *c, const char *name, unsigned npus)
{
	struct sched_job *j = fx_submit(c, name, npus);

	if (j->state != SCHED_JOB_RUNNING)
		fail_msg("job %s is %s: %s", name, sched_job_state_name(j->state), j->reason);
	return j;
}

/* fx_report_npu() - a report naming NPU @npu of @server at @level (others unmentioned), at
 * @now; Critical and worse carry an error code, as npu-smi gives one. */
static inline void fx_report_npu(struct sched_cluster *c, unsigned server, unsigned npu,
				 enum conf_health_level level, uint64_t now)
{
	struct conf_health_report r = { .npu_count = 1 };

	r.npus[0].id = npu;
	r.npus[0].has_level = true;
	r.npus[0].level = level;
	snprintf(r.npus[0].code, sizeof(r.npus[0].code), "%s",
		 level >= CONF_HEALTH_CRITICAL ? "0x80C98000" : "");
	assert_int_equal(sched_server_report(c, server, &r, now), 0);
	fx_check(c);
}

/* fx_report_ok() - what an agent sends when all is well: the node and every NPU OK. */
static inline void fx_report_ok(struct sched_cluster *c, unsigned server, uint64_t now)
{
	struct conf_health_report r = { .has_node = true, .node = CONF_HEALTH_OK };

	r.npu_count = c->servers[server].conf->npu_count;
	for (unsigned d = 0; d < r.npu_count; d++) {
		r.npus[d].id = d;
		r.npus[d].has_level = true;
		r.npus[d].level = CONF_HEALTH_OK;
	}
	assert_int_equal(sched_server_report(c, server, &r, now), 0);
	fx_check(c);
}

/*
 * fx_report_gone() - the agent of every server job @name holds says that none of its
 * processes runs there any more: a report whose `running` line lists every other job
 * holding NPUs on that server (so only @name's wait ends), at @now. The server's
 * heartbeat state is put back afterwards, so a test's servers stay as they were (never
 * reported, say) apart from the event the report adds.
 */
static inline void fx_report_gone(struct sched_cluster *c, const char *name, uint64_t now)
{
	struct sched_job *j = sched_cluster_find_job(c, name);
	unsigned servers[64];
	size_t n = 0;

	if (!j || j->state != SCHED_JOB_STOPPING)
		return;
	for (size_t i = 0; i < j->slice_count && n < 64; i++)
		servers[n++] = j->slices[i].server;
	for (size_t i = 0; i < n; i++) {
		struct sched_server *s = &c->servers[servers[i]];
		struct sched_server keep = *s;
		static struct conf_health_report rep;

		memset(&rep, 0, sizeof(rep));
		rep.has_running = true;
		for (unsigned d = 0; d < s->conf->npu_count; d++) {
			const struct sched_job *o = s->npus[d].job;
			bool dup = false;

			if (!o || strcmp(o->name, name) == 0)
				continue;
			for (size_t k = 0; k < rep.running_count; k++)
				dup |= strcmp(rep.running[k].job, o->name) == 0;
			if (dup || rep.running_count == CONF_HEALTH_RUNNING_MAX)
				continue;
			snprintf(rep.running[rep.running_count].job, CONF_NAME_MAX + 1, "%s",
				 o->name);
			rep.running[rep.running_count++].generation = o->generation;
		}
		assert_int_equal(sched_server_report(c, servers[i], &rep, now), 0);
		s->state = keep.state;
		s->last_report_usec = keep.last_report_usec;
		s->restored_heartbeat = keep.restored_heartbeat;
		s->reports_running = keep.reports_running;
	}
}

/* fx_save_and_restore() - save every record of @c and restore them into @c2, as a
 * restart of the daemon does. */
static inline void fx_save_and_restore(struct sched_cluster *c, struct sched_cluster *c2)
{
	char reason[SCHED_REASON_MAX] = "";
	char *text;
	size_t len;

	for (size_t i = 0; i < c->job_count; i++) {
		assert_int_equal(sched_job_save(c, c->jobs[i], &text, &len), 0);
		if (sched_job_load(c2, text, len, fx_now(), reason) < 0)
			fail_msg("load %s: %s", c->jobs[i]->name, reason);
		free(text);
	}
	if (sched_restore_finish(c2, fx_now(), reason) < 0)
		fail_msg("restore: %s", reason);
}

/* fx_cancel(), fx_complete(), fx_remove() - the call, then fx_report_gone(). */
static inline int fx_cancel(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now)
{
	int r = sched_job_cancel(c, name, uid, now);

	if (r == 0)
		fx_report_gone(c, name, now);
	return r;
}

static inline int fx_complete(struct sched_cluster *c, const char *name, uid_t uid,
			      uint64_t now)
{
	int r = sched_job_complete(c, name, uid, now);

	if (r == 0)
		fx_report_gone(c, name, now);
	return r;
}

static inline int fx_remove(struct sched_cluster *c, const char *name, uid_t uid, uint64_t now)
{
	int r = sched_job_remove(c, name, uid, now);

	if (r == 0)
		fx_report_gone(c, name, now);
	return r;
}

/* fx_server_name() - "node-<i>". */
static inline const char *fx_server_name(const struct sched_cluster *c, unsigned i)
{
	assert_true(i < c->server_count);
	return c->servers[i].conf->name;
}

/*
 * fx_run_on() - submit job @name of @npus NPUs and make it land on server @server:
 * every other server is cordoned for the submission (then uncordoned), which leaves
 * NPU health alone. Use with no pending jobs (uncordoning runs a scheduling pass).
 */
static inline struct sched_job *fx_run_on(struct sched_cluster *c, const char *name,
					  unsigned npus, unsigned server)
{
	bool *was = calloc(c->server_count, sizeof(*was));
	struct sched_job *j;

	assert_non_null(was);
	for (size_t i = 0; i < c->server_count; i++) {
		was[i] = c->servers[i].cordoned;
		if (i != server && !was[i])
			assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, (unsigned)i),
								 true, false, fx_now()),
					 0);
	}
	j = fx_run(c, name, npus);
	for (size_t i = 0; i < c->server_count; i++)
		if (i != server && !was[i])
			assert_int_equal(sched_server_set_cordon(c, fx_server_name(c, (unsigned)i),
								 false, false, fx_now()),
					 0);
	free(was);
	assert_int_equal(j->slice_count, 1);
	assert_int_equal(j->slices[0].server, server);
	fx_check(c);
	return j;
}

/* The library's own recount: it keeps the cluster's placement index too. */
void sched_server_recount(struct sched_server *s);

static inline void fx_recount(struct sched_server *s)
{
	sched_server_recount(s);
}

/*
 * fx_isolate() / fx_set_health() - change NPU @dev of server @server as a fault report
 * would (the health-report API lands with the faults issue), keeping npus_free right.
 */
static inline void fx_isolate(struct sched_cluster *c, unsigned server, unsigned dev)
{
	assert_true(server < c->server_count);
	assert_true(dev < c->servers[server].conf->npu_count);
	c->servers[server].npus[dev].isolated = true;
	fx_recount(&c->servers[server]);
}

static inline void fx_set_health(struct sched_cluster *c, unsigned server, unsigned dev,
				 enum sched_health h)
{
	assert_true(server < c->server_count);
	assert_true(dev < c->servers[server].conf->npu_count);
	c->servers[server].npus[dev].health = h;
	fx_recount(&c->servers[server]);
}

/* fx_ids() - "4,5,6,7": the device ids of @sl, into @buf. */
static inline const char *fx_ids(const struct sched_slice *sl, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned k = 0; k < sl->npu_count && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", k ? "," : "",
					sl->device_ids[k]);
	return buf;
}

/* fx_expect_place() - sched_place() must return one slice on @server with device ids @ids. */
static inline void fx_expect_place(const struct sched_cluster *c, unsigned npus,
				   unsigned server, const char *ids)
{
	struct sched_slice *sl = NULL;
	size_t count = 0;
	char reason[SCHED_REASON_MAX] = "", buf[128];
	int r = sched_place(c, npus, NULL, &sl, &count, reason);

	if (r != 0)
		fail_msg("sched_place(%u): %d: %s", npus, r, reason);
	assert_int_equal(count, 1);
	assert_int_equal(sl[0].npu_count, npus);
	assert_int_equal(sl[0].first_rank, 0);
	if (sl[0].server != server || strcmp(fx_ids(&sl[0], buf, sizeof(buf)), ids) != 0)
		fail_msg("sched_place(%u): got %s [%s], want %s [%s]", npus,
			 fx_server_name(c, sl[0].server), buf, fx_server_name(c, server), ids);
	free(sl);
}

/* fx_expect_no_place() - sched_place() must fail with @err and a reason holding @needle. */
static inline void fx_expect_no_place(const struct sched_cluster *c, unsigned npus, int err,
				      const char *needle)
{
	struct sched_slice *sl = NULL;
	size_t count = 0;
	char reason[SCHED_REASON_MAX] = "";
	int r = sched_place(c, npus, NULL, &sl, &count, reason);

	if (r != err)
		fail_msg("sched_place(%u): got %d (%s), want %d", npus, r, reason, err);
	assert_null(sl);
	if (needle && !strstr(reason, needle))
		fail_msg("sched_place(%u): reason \"%s\" lacks \"%s\"", npus, reason, needle);
}

/* fx_expect_slice() - slice @k of job @j must be on @server with device ids @want. */
static inline void fx_expect_slice(const struct sched_job *j, size_t k, unsigned server,
				   const char *want)
{
	char buf[128];

	assert_true(k < j->slice_count);
	if (j->slices[k].server != server ||
	    strcmp(fx_ids(&j->slices[k], buf, sizeof(buf)), want) != 0)
		fail_msg("job %s slice %zu: server %u [%s], want server %u [%s]", j->name, k,
			 j->slices[k].server, buf, server, want);
}

/* fx_expect_same_slices() - jobs @x and @y (of two clusters) hold the same slices: the
 * same servers, NPU counts, first ranks and device ids, in the same order. */
static inline void fx_expect_same_slices(const struct sched_job *x, const struct sched_job *y)
{
	assert_int_equal(x->slice_count, y->slice_count);
	for (size_t s = 0; s < x->slice_count; s++) {
		assert_int_equal(x->slices[s].server, y->slices[s].server);
		assert_int_equal(x->slices[s].npu_count, y->slices[s].npu_count);
		assert_int_equal(x->slices[s].first_rank, y->slices[s].first_rank);
		assert_memory_equal(x->slices[s].device_ids, y->slices[s].device_ids,
				    x->slices[s].npu_count * sizeof(unsigned));
	}
}

/* fx_rand() - xorshift64*, for seeded random scenarios. */
static inline uint64_t fx_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 2685821657736338717ull;
}

#endif
