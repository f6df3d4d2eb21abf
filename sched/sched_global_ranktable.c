/* SPDX-License-Identifier: MIT */
/*
 * The global rank table of a disaggregated service (jobs/<service>/global_ranktable.json):
 * what MindCluster's ClusterD generates for MindIE Motor (MindIE MS) in prefill-decode
 * disaggregation, built here from the service's instances as they are now.
 *
 * The shape is the one MindIE Motor's controller loads (its RankTableLoader, and the
 * deployer's gen_global_ranktable.py that writes the same for Kubernetes): top-level
 * version "1.0", status, server_group_list; group "0" the coordinator's server, group "1"
 * the controller's, each {server_id, server_ip}; from group "2" on one group per MindIE
 * Server instance (the multi-node form: a group is one instance, its servers its master
 * and slaves), prefill instances first, then decode, each with deploy_server "0" (one
 * instance, not spread as data-parallel nodes) and per server server_id (the host IP),
 * server_ip (the instance's address on it, the container IP, which on the host's
 * network is the host's) and device [{device_id, device_ip, device_logical_id, rank_id}].
 * device_logical_id is the device's place on its server within the instance, as a
 * container numbers the devices it sees (the deployer writes the same). Every value is
 * a string, as in every Ascend rank table. Two fields MindIE ignores say what ascendfs
 * knows: "role" (prefill or decode) and "instance" (the job) of each group.
 *
 * An instance is listed while it runs with a completed rank table (its device IPs
 * known); a moved or restarted instance leaves and comes back with its new servers.
 * status is "completed" while at least one prefill and one decode instance are listed
 * (MindIE needs both to serve), else "initializing".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_internal.h"

static json_t *jstr_uint(unsigned long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lu", v);
	return json_string(buf);
}

/* Group "0" or "1": one MindIE MS process on server @name. */
static json_t *ms_group(const struct sched_cluster *c, const char *id, const char *name)
{
	int s = sched_cluster_find_server((struct sched_cluster *)c, name);
	const char *ip = s >= 0 ? c->servers[s].conf->host_ip : "";

	return json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "group_id", id, "server_count", "1",
			 "server_list", "server_id", ip, "server_ip", ip);
}

/* The group of instance @j, numbered @group. */
static json_t *instance_group(const struct sched_cluster *c, const struct sched_job *j,
			      unsigned group)
{
	json_t *g = json_object(), *list = json_array();
	bool ok = g && list;

	ok = ok && json_object_set_new(g, "group_id", jstr_uint(group)) == 0;
	ok = ok && json_object_set_new(g, "deploy_server", json_string("0")) == 0;
	ok = ok && json_object_set_new(g, "role", json_string(sched_service_role(j))) == 0;
	ok = ok && json_object_set_new(g, "instance", json_string(j->name)) == 0;
	ok = ok && json_object_set_new(g, "server_count", jstr_uint(j->slice_count)) == 0;
	for (size_t i = 0; ok && i < j->slice_count; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const struct sched_server *ss = sched_slice_server(c, sl);
		json_t *devs = json_array();

		for (unsigned k = 0; ok && k < sl->npu_count; k++) {
			const char *ip = sched_npu_device_ip(ss, sl->device_ids[k]);

			ok = json_array_append_new(
				     devs, json_pack("{s:o, s:s, s:o, s:o}", "device_id",
						     jstr_uint(sl->device_ids[k]), "device_ip",
						     ip ? ip : "", "device_logical_id", jstr_uint(k),
						     "rank_id", jstr_uint(sl->first_rank + k))) == 0;
		}
		/* json_pack takes devs ("o") even when it fails */
		ok = json_array_append_new(list, json_pack("{s:s, s:s, s:o}", "server_id",
							   ss->conf->host_ip, "server_ip",
							   ss->conf->host_ip, "device", devs)) == 0 &&
		     ok;
	}
	if (ok && json_object_set_new(g, "server_list", list) == 0)
		return g;
	if (!ok)
		json_decref(list);
	json_decref(g);
	return NULL;
}

int sched_render_global_ranktable(const struct sched_cluster *c, const struct sched_job *svc,
				  char **ret, size_t *ret_len)
{
	struct sched_cluster *mc = (struct sched_cluster *)c; /* lookups change nothing */
	json_t *root, *groups;
	unsigned group = 2, roles = 0;
	char *text;
	bool ok;

	if (!sched_job_is_service(svc) || !svc->spec->prefill)
		return -ENOENT;
	root = json_object();
	groups = json_array();
	if (!root || !groups) {
		json_decref(root);
		json_decref(groups);
		return -ENOMEM;
	}
	ok = json_object_set_new(root, "version", json_string("1.0")) == 0;
	ok = json_array_append_new(groups, ms_group(c, "0", svc->spec->coordinator)) == 0 && ok;
	ok = json_array_append_new(groups, ms_group(c, "1", svc->spec->controller)) == 0 && ok;
	/* index order: the prefill instances come first */
	for (unsigned i = 0; svc->state == SCHED_JOB_SERVING && i < svc->spec->replicas; i++) {
		const struct sched_job *j = sched_service_instance(mc, svc, i);

		if (!j || j->state != SCHED_JOB_RUNNING || !j->slice_count ||
		    sched_ranktable_waiting_for(c, j, NULL, 0) != 0)
			continue;
		ok = json_array_append_new(groups, instance_group(c, j, group++)) == 0 && ok;
		roles |= i < svc->spec->prefill ? 1u : 2u;
	}
	ok = json_object_set_new(root, "status",
				 json_string(roles == 3 ? "completed" : "initializing")) == 0 && ok;
	ok = json_object_set_new(root, "server_group_list", groups) == 0 && ok;
	text = ok ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	if (!text)
		return -ENOMEM;
	/* a trailing newline makes `cat` output end cleanly */
	*ret_len = strlen(text) + 1;
	*ret = malloc(*ret_len + 1);
	if (*ret) {
		memcpy(*ret, text, *ret_len - 1);
		(*ret)[*ret_len - 1] = '\n';
		(*ret)[*ret_len] = '\0';
	}
	free(text);
	return *ret ? 0 : -ENOMEM;
}
