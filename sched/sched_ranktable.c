/* SPDX-License-Identifier: MIT */
/*
 * The rank table (design.md §4: MindSpore "rank table startup" and HCCL's rank table
 * documentation): what it waits for before it reads "completed", and its text. Both run
 * for every read of a changed table and of status.json, under the daemon's lock, so
 * they cost what the job holds, never what the cluster holds (issue 16): addresses are
 * checked against the cluster's hash of them (sched_devip.c) and against each other in a
 * set sized to the job, and the text is written directly (sched_text.c), the bytes
 * jansson's JSON_INDENT(2) gave.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sched_internal.h"

/*
 * A set of a job's NPUs (id: slice * CONF_SERVER_NPUS_MAX + index in the slice) by a
 * key of theirs that the caller hashes and compares: open addressing, sized to the job.
 */
struct npu_set {
	uint32_t *slot; /* id + 1; 0: empty */
	uint32_t mask;
};

static int npu_set_init(struct npu_set *s, size_t members)
{
	size_t cap = 16;

	while (cap < 2 * members)
		cap *= 2;
	s->slot = calloc(cap, sizeof(*s->slot));
	s->mask = (uint32_t)(cap - 1);
	return s->slot ? 0 : -ENOMEM;
}

static void npu_set_free(struct npu_set *s)
{
	free(s->slot);
	s->slot = NULL;
}

/* The id of the member @same as @id, or -1 once @id is added (there is room: the set is
 * twice the members it is made for). */
static long npu_set_add(struct npu_set *s, uint32_t hash, uint32_t id,
			bool (*same)(const void *arg, uint32_t a, uint32_t b), const void *arg)
{
	for (uint32_t at = hash & s->mask;; at = (at + 1) & s->mask) {
		if (!s->slot[at]) {
			s->slot[at] = id + 1;
			return -1;
		}
		if (same(arg, s->slot[at] - 1, id))
			return (long)(s->slot[at] - 1);
	}
}

/* FNV-1a of @t. */
static uint32_t hash_text(const char *t)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

struct job_ref {
	const struct sched_cluster *c;
	const struct sched_job *j;
};

/* The server and device of NPU @id of the job. */
static const struct sched_server *npu_of(const struct job_ref *r, uint32_t id, unsigned *dev)
{
	const struct sched_slice *sl = &r->j->slices[id / CONF_SERVER_NPUS_MAX];

	*dev = sl->device_ids[id % CONF_SERVER_NPUS_MAX];
	return sched_slice_server(r->c, sl);
}

/* The configured super pod of slice @i's server ("0" when none is configured). */
static const char *slice_pod(const struct sched_cluster *c, const struct sched_job *j, size_t i)
{
	const char *pod = sched_slice_server(c, &j->slices[i])->conf->super_pod;

	return pod ? pod : "0";
}

static bool same_ip(const void *arg, uint32_t a, uint32_t b)
{
	unsigned da, db;
	const struct sched_server *sa = npu_of(arg, a, &da), *sb = npu_of(arg, b, &db);

	return strcmp(sched_npu_device_ip(sa, da), sched_npu_device_ip(sb, db)) == 0;
}

static bool same_pod(const void *arg, uint32_t a, uint32_t b)
{
	const struct job_ref *r = arg;

	return strcmp(slice_pod(r->c, r->j, a / CONF_SERVER_NPUS_MAX),
		      slice_pod(r->c, r->j, b / CONF_SERVER_NPUS_MAX)) == 0;
}

static bool same_sdid(const void *arg, uint32_t a, uint32_t b)
{
	unsigned da, db;
	const struct sched_server *sa = npu_of(arg, a, &da), *sb = npu_of(arg, b, &db);

	return sa->npus[da].sdid == sb->npus[db].sdid && same_pod(arg, a, b);
}

/*
 * ---- what a rank table waits for (sched_ranktable_waiting_for(), ascend_sched.h) ----
 * The rules are HCCL's: hcomm topoinfo_ranktableConcise.cc GetSingleDeviceIp() (when
 * device_ip is required; A3 inside one super pod links over the vnic without it),
 * CheckUniqueAndInsertPool(UNIQUE_INFO_TYPE_DEVICE_IP) (no address twice),
 * CheckSuperPodInfo() (every A3 device has an SDID, unique within its pod) and
 * HcclCommunicatorAttrs::CheckSuperDeviceId() (the SDID is the driver's, so only the
 * agent, which reads npu-smi, can know it).
 */

struct wait {
	char *why;
	size_t len;
};

static int wait_say(struct wait *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int wait_say(struct wait *w, const char *fmt, ...)
{
	va_list ap;

	if (w->len) {
		va_start(ap, fmt);
		vsnprintf(w->why, w->len, fmt, ap);
		va_end(ap);
	}
	return 1;
}

/* "0-3, 6" for the ids flagged in @set (CONF_SERVER_NPUS_MAX entries) into @buf. */
static const char *id_ranges(const bool *set, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned d = 0; d < CONF_SERVER_NPUS_MAX; d++) {
		unsigned e = d;

		if (!set[d])
			continue;
		while (e + 1 < CONF_SERVER_NPUS_MAX && set[e + 1])
			e++;
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, e > d ? "%s%u-%u" : "%s%u",
					      n ? ", " : "", d, e);
		d = e;
	}
	return buf;
}

static unsigned count_set(const bool *set)
{
	unsigned k = 0;

	for (unsigned d = 0; d < CONF_SERVER_NPUS_MAX; d++)
		k += set[d];
	return k;
}

/* Number of distinct configured super pods the job's servers are in; 0 without memory. */
static unsigned job_pod_count(const struct sched_cluster *c, const struct sched_job *j)
{
	struct npu_set seen;
	unsigned pods = 0;

	if (npu_set_init(&seen, j->slice_count) < 0)
		return 0;
	for (size_t i = 0; i < j->slice_count; i++)
		pods += npu_set_add(&seen, hash_text(slice_pod(c, j, i)),
				    (uint32_t)(i * CONF_SERVER_NPUS_MAX), same_pod,
				    &(struct job_ref){ c, j }) < 0;
	npu_set_free(&seen);
	return pods;
}

/*
 * The first server of @j with devices lacking what @lacks tells, as "@field of NPUs
 * 0-7 on node-1 (@hint) and of 2 more servers"; 0 when none lacks it.
 */
static int wait_missing(struct wait *w, const struct sched_cluster *c, const struct sched_job *j,
			bool (*lacks)(const struct sched_server *s, unsigned d), const char *field,
			const char *hint)
{
	const struct sched_server *first = NULL;
	bool set[CONF_SERVER_NPUS_MAX] = { false };
	unsigned more = 0;
	char ids[96];

	for (size_t i = 0; i < j->slice_count; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const struct sched_server *s = sched_slice_server(c, sl);
		bool any = false;

		for (unsigned k = 0; k < sl->npu_count; k++)
			if (lacks(s, sl->device_ids[k])) {
				any = true;
				if (!first)
					set[sl->device_ids[k]] = true;
			}
		if (any && !first)
			first = s;
		else if (any)
			more++;
	}
	if (!first)
		return 0;
	id_ranges(set, ids, sizeof(ids));
	if (more)
		return wait_say(w, "%s of NPU%s %s on %s (%s) and of %u more server%s", field,
				count_set(set) == 1 ? "" : "s", ids, first->conf->name, hint, more,
				more == 1 ? "" : "s");
	return wait_say(w, "%s of NPU%s %s on %s (%s)", field, count_set(set) == 1 ? "" : "s",
			ids, first->conf->name, hint);
}

static bool lacks_device_ip(const struct sched_server *s, unsigned d)
{
	return !sched_npu_device_ip(s, d);
}

static bool lacks_sdid(const struct sched_server *s, unsigned d)
{
	return !s->npus[d].has_sdid;
}

/* Family of the IP literal @ip: AF_INET, AF_INET6 or 0. */
static int ip_family(const char *ip)
{
	unsigned char a[16];

	if (inet_pton(AF_INET, ip, a) == 1)
		return AF_INET;
	return inet_pton(AF_INET6, ip, a) == 1 ? AF_INET6 : 0;
}

/* Device IPs HCCL would refuse: unusable, a host's, twice in the table, mixed families. */
static int wait_bad_ips(struct wait *w, const struct sched_cluster *c, const struct sched_job *j)
{
	struct job_ref ref = { c, j };
	const char *first_ip = NULL, *first_server = NULL;
	unsigned first_dev = 0;
	struct npu_set seen;
	int family = 0, r = 0;

	if (npu_set_init(&seen, (size_t)sched_job_total_npus(j)) < 0)
		return wait_say(w, "memory to check the device IPs");
	for (size_t i = 0; i < j->slice_count && !r; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const struct sched_server *s = sched_slice_server(c, sl);

		for (unsigned k = 0; k < sl->npu_count && !r; k++) {
			unsigned d = sl->device_ids[k];
			const char *ip = sched_npu_device_ip(s, d), *problem;
			long other;
			int f, host;

			if (!ip)
				continue;
			problem = conf_device_ip_problem(ip);
			if (problem) {
				r = wait_say(w, "a usable device_ip of NPU %u on %s: %s %s", d,
					     s->conf->name, ip, problem);
				break;
			}
			host = sched_devip_find_host(c, ip);
			if (host >= 0) {
				r = wait_say(w,
					     "a usable device_ip of NPU %u on %s: %s is the host_ip "
					     "of %s",
					     d, s->conf->name, ip, c->servers[host].conf->name);
				break;
			}
			other = npu_set_add(&seen, hash_text(ip),
					    (uint32_t)(i * CONF_SERVER_NPUS_MAX + k), same_ip, &ref);
			if (other >= 0) {
				size_t at = (size_t)other;

				r = wait_say(w,
					     "distinct device IPs: %s is NPU %u of %s and NPU %u "
					     "of %s; HCCL refuses a duplicate device_ip",
					     ip, j->slices[at / CONF_SERVER_NPUS_MAX].device_ids
							 [at % CONF_SERVER_NPUS_MAX],
					     sched_slice_server(c, &j->slices[at / CONF_SERVER_NPUS_MAX])
						     ->conf->name,
					     d, s->conf->name);
				break;
			}
			f = ip_family(ip);
			if (!family) {
				family = f;
				first_ip = ip;
				first_server = s->conf->name;
				first_dev = d;
			} else if (f != family) {
				r = wait_say(w,
					     "one address family: device_ip %s of NPU %u on %s is "
					     "%s but %s of NPU %u on %s is %s",
					     ip, d, s->conf->name, f == AF_INET6 ? "IPv6" : "IPv4",
					     first_ip, first_dev, first_server,
					     family == AF_INET6 ? "IPv6" : "IPv4");
			}
		}
	}
	npu_set_free(&seen);
	return r;
}

/* A3: the servers of one configured pod in one physical pod; no SDID twice in a pod. */
static int wait_bad_sdids(struct wait *w, const struct sched_cluster *c, const struct sched_job *j)
{
	struct job_ref ref = { c, j };
	struct npu_set seen, pods;
	int r = 0;

	if (npu_set_init(&seen, (size_t)sched_job_total_npus(j)) < 0)
		return wait_say(w, "memory to check the SDIDs");
	if (npu_set_init(&pods, j->slice_count) < 0) {
		npu_set_free(&seen);
		return wait_say(w, "memory to check the SDIDs");
	}
	for (size_t i = 0; i < j->slice_count && !r; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const struct sched_server *s = sched_slice_server(c, sl);
		const char *pod = slice_pod(c, j, i);
		/* the first server of the same configured pod, if any before this one */
		long first = npu_set_add(&pods, hash_text(pod), (uint32_t)(i * CONF_SERVER_NPUS_MAX),
					 same_pod, &ref);

		if (first >= 0) {
			const struct sched_server *o =
				sched_slice_server(c, &j->slices[first / CONF_SERVER_NPUS_MAX]);
			unsigned od = j->slices[first / CONF_SERVER_NPUS_MAX].device_ids[0];
			unsigned sd = sl->device_ids[0];

			if (o->npus[od].super_pod_id != s->npus[sd].super_pod_id)
				r = wait_say(w,
					     "one physical super pod for the servers of super pod %s: "
					     "%s reports super pod %u, %s super pod %u (fix "
					     "super_pod in the inventory)",
					     pod, o->conf->name, (unsigned)o->npus[od].super_pod_id,
					     s->conf->name, (unsigned)s->npus[sd].super_pod_id);
		}
		for (unsigned k = 0; k < sl->npu_count && !r; k++) {
			unsigned d = sl->device_ids[k];
			long other = npu_set_add(&seen, hash_text(pod) ^ s->npus[d].sdid * 2654435761u,
						 (uint32_t)(i * CONF_SERVER_NPUS_MAX + k), same_sdid,
						 &ref);

			if (other >= 0) {
				const struct sched_server *o =
					sched_slice_server(c, &j->slices[other / CONF_SERVER_NPUS_MAX]);

				r = wait_say(w,
					     "distinct SDIDs in super pod %s: SDID %u is NPU %u of %s "
					     "and of %s (both at server index %u); HCCL refuses a "
					     "duplicate super_device_id",
					     pod, (unsigned)s->npus[d].sdid, d, o->conf->name,
					     s->conf->name, s->npus[d].server_index);
				break;
			}
		}
	}
	npu_set_free(&pods);
	npu_set_free(&seen);
	return r;
}

int sched_ranktable_waiting_for(const struct sched_cluster *c, const struct sched_job *j,
				char *why, size_t why_len)
{
	struct wait w = { .why = why, .len = why_len };
	const struct conf_server_type *t;
	bool v12, need_ip;
	unsigned pods;
	int r;

	if (why_len)
		why[0] = '\0';
	if (!j->slice_count)
		return -ENOENT;
	t = sched_slice_server(c, &j->slices[0])->conf->type;
	v12 = strcmp(t->rank_table_version, "1.2") == 0;
	pods = v12 ? job_pod_count(c, j) : 1;
	if (strcmp(t->chip, "910") == 0)
		need_ip = true;
	else if (v12)
		need_ip = pods > 1;
	else
		need_ip = j->slice_count > 1 || c->conf->require_agent;
	if (need_ip) {
		r = wait_missing(&w, c, j, lacks_device_ip, "device_ip",
				 "neither the inventory nor its agent gives them");
		if (r)
			return r;
	}
	for (size_t i = 0; i < j->slice_count && need_ip && c->conf->require_agent; i++)
		if (!sched_slice_server(c, &j->slices[i])->ips_confirmed)
			return wait_say(&w,
					"the agent of %s to confirm its device IPs "
					"(cluster.require_agent)",
					sched_slice_server(c, &j->slices[i])->conf->name);
	r = wait_bad_ips(&w, c, j);
	if (r)
		return r;
	if (!v12)
		return 0;
	r = wait_missing(&w, c, j, lacks_sdid, "the SDID",
			 "its agent reports them from npu-smi info -t spod-info");
	if (r)
		return r;
	return wait_bad_sdids(&w, c, j);
}

/* @v as a JSON string of its decimal digits (HCCL reads every number of the table as a
 * string). */
static void jw_uint_string(struct sched_buf *b, unsigned long long v)
{
	char s[24];

	snprintf(s, sizeof(s), "%llu", v);
	sched_jw_string(b, s);
}

/* A member whose value is the string @s. */
static void jw_member(struct sched_jw *w, const char *key, const char *s)
{
	sched_jw_key(w, key);
	sched_jw_string(w->b, s);
}

int sched_render_ranktable(const struct sched_cluster *c, const struct sched_job *j, char **ret,
			   size_t *ret_len)
{
	struct sched_buf b = { 0 };
	struct sched_jw w = { .b = &b, .indent = 2 };
	const struct conf_server_type *t;
	char why[SCHED_REASON_MAX];
	bool v12;

	if (!j->slice_count)
		return -ENOENT;
	t = sched_slice_server(c, &j->slices[0])->conf->type;
	v12 = strcmp(t->rank_table_version, "1.2") == 0;
	/* about 130 bytes a device and 200 a server: one allocation */
	sched_buf_grow(&b, 256 + j->slice_count * 200 + (size_t)sched_job_total_npus(j) * 130);
	sched_jw_open(&w, '{');
	jw_member(&w, "version", t->rank_table_version);
	sched_jw_key(&w, "server_count");
	jw_uint_string(&b, j->slice_count);
	sched_jw_key(&w, "server_list");
	sched_jw_open(&w, '[');
	for (size_t i = 0; i < j->slice_count; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const struct sched_server *ss = sched_slice_server(c, sl);
		const struct conf_server *cs = ss->conf;

		sched_jw_item(&w);
		sched_jw_open(&w, '{');
		/* server_id is the host IP, as HCCL's own rank table tools write it */
		jw_member(&w, "server_id", cs->host_ip);
		jw_member(&w, "host_ip", cs->host_ip);
		jw_member(&w, "pod_ip", cs->host_ip);
		/* MindIE's multi-node table names each server's service address (a container
		 * on the host's network has the host's) */
		if (j->spec && j->spec->kind == CONF_JOB_SERVICE)
			jw_member(&w, "container_ip", cs->host_ip);
		sched_jw_key(&w, "device");
		sched_jw_open(&w, '[');
		for (unsigned k = 0; k < sl->npu_count; k++) {
			unsigned d = sl->device_ids[k];

			sched_jw_item(&w);
			sched_jw_open(&w, '{');
			sched_jw_key(&w, "device_id");
			jw_uint_string(&b, d);
			if (sched_npu_device_ip(ss, d))
				jw_member(&w, "device_ip", sched_npu_device_ip(ss, d));
			/* the SDID the driver has, as the agent read it; none until then (the
			 * table is initializing) */
			if (v12 && ss->npus[d].has_sdid) {
				sched_jw_key(&w, "super_device_id");
				jw_uint_string(&b, ss->npus[d].sdid);
			}
			sched_jw_key(&w, "rank_id");
			jw_uint_string(&b, sl->first_rank + k);
			sched_jw_close(&w, '}');
		}
		sched_jw_close(&w, ']');
		jw_member(&w, "host_nic_ip", "reserve");
		sched_jw_close(&w, '}');
	}
	sched_jw_close(&w, ']');
	if (v12) {
		/* servers of one configured pod next to each other share an entry */
		sched_jw_key(&w, "super_pod_list");
		sched_jw_open(&w, '[');
		for (size_t i = 0; i < j->slice_count; i++) {
			const char *pod = slice_pod(c, j, i);

			if (i == 0 || strcmp(pod, slice_pod(c, j, i - 1)) != 0) {
				if (i) {
					sched_jw_close(&w, ']');
					sched_jw_close(&w, '}');
				}
				sched_jw_item(&w);
				sched_jw_open(&w, '{');
				jw_member(&w, "super_pod_id", pod);
				sched_jw_key(&w, "server_list");
				sched_jw_open(&w, '[');
			}
			sched_jw_item(&w);
			sched_jw_open(&w, '{');
			jw_member(&w, "server_id", sched_slice_server(c, &j->slices[i])->conf->host_ip);
			sched_jw_close(&w, '}');
		}
		sched_jw_close(&w, ']');
		sched_jw_close(&w, '}');
		sched_jw_close(&w, ']');
	}
	/* HCCL polls until "completed" */
	jw_member(&w, "status",
		  sched_ranktable_waiting_for(c, j, why, sizeof(why)) ? "initializing" : "completed");
	sched_jw_close(&w, '}');
	/* a trailing newline makes `cat` output end cleanly */
	sched_buf_put(&b, "\n", 1);
	return sched_buf_finish(&b, ret, ret_len);
}
