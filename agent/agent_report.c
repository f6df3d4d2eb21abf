/* SPDX-License-Identifier: MIT */
/* The report ascend-agent writes, and what it reads back from the mount. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "agent_internal.h"

int agent_parse_node_info(const char *text, size_t len, const char *source,
			  unsigned *ret_npu_count, struct conf_error *err)
{
	json_error_t jerr;
	json_t *root, *n;
	json_int_t v;

	root = json_loadb(text ? text : "", text ? len : 0, 0, &jerr);
	if (!root) {
		if (json_error_code(&jerr) == json_error_out_of_memory) {
			agent_err_set(err, source, 0, 0, "out of memory");
			return -ENOMEM;
		}
		return agent_err_set(err, source, jerr.line > 0 ? (unsigned)jerr.line : 0,
				     jerr.column > 0 ? (unsigned)jerr.column : 0,
				     "invalid JSON: %s", jerr.text);
	}
	n = json_is_object(root) ? json_object_get(root, "npu_count") : NULL;
	if (!json_is_integer(n)) {
		json_decref(root);
		return agent_err_set(err, source, 0, 0, "no whole-number \"npu_count\"");
	}
	v = json_integer_value(n);
	json_decref(root);
	if (v < 1 || v > CONF_SERVER_NPUS_MAX)
		return agent_err_set(err, source, 0, 0,
				     "npu_count is %lld; a server has 1 to %d NPUs", (long long)v,
				     CONF_SERVER_NPUS_MAX);
	*ret_npu_count = (unsigned)v;
	return 0;
}

void agent_report_build(const struct conf_health_report *health, unsigned npu_count,
			enum conf_health_level absent, const struct agent_device_ips *ips,
			struct conf_health_report *ret)
{
	struct conf_health_report rep;
	unsigned id;
	size_t i;

	if (npu_count > CONF_SERVER_NPUS_MAX)
		npu_count = CONF_SERVER_NPUS_MAX;
	memset(&rep, 0, sizeof(rep));
	rep.has_node = true;
	rep.node = health && health->has_node ? health->node : CONF_HEALTH_OK;
	for (id = 0; id < npu_count; id++) {
		struct conf_health_npu *n = &rep.npus[rep.npu_count++];

		n->id = id;
		n->has_level = true;
		n->level = absent;
		if (ips && ips->ip[id][0])
			snprintf(n->device_ip, sizeof(n->device_ip), "%s", ips->ip[id]);
	}
	for (i = 0; health && i < health->npu_count && i < CONF_SERVER_NPUS_MAX; i++) {
		const struct conf_health_npu *h = &health->npus[i];
		struct conf_health_npu *n;

		if (h->id >= npu_count)
			continue;
		n = &rep.npus[h->id];
		if (h->has_level) {
			n->level = h->level;
			memcpy(n->code, h->code, sizeof(n->code));
			memcpy(n->message, h->message, sizeof(n->message));
		}
		if (h->device_ip[0])
			memcpy(n->device_ip, h->device_ip, sizeof(n->device_ip));
	}
	*ret = rep;
}

void agent_report_ips(const struct conf_health_report *report, struct agent_device_ips *ret)
{
	size_t i;

	memset(ret, 0, sizeof(*ret));
	for (i = 0; i < report->npu_count && i < CONF_SERVER_NPUS_MAX; i++)
		if (report->npus[i].id < CONF_SERVER_NPUS_MAX)
			snprintf(ret->ip[report->npus[i].id], AGENT_IP_MAX, "%s",
				 report->npus[i].device_ip);
}

void agent_report_strip_ips(struct conf_health_report *report)
{
	size_t i;

	for (i = 0; i < report->npu_count && i < CONF_SERVER_NPUS_MAX; i++)
		report->npus[i].device_ip[0] = '\0';
}
