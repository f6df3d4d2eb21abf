/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: ascend-agent's parsers of what npu-smi, hccn_tool, /etc/hccn.conf and
 * nodes/<node>/info hold. Every input goes to each parser; what is accepted must stay in
 * bounds, and the report built from it must be one the daemon's parser accepts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct conf_health_report health, rep, again;
	struct agent_device_ips ips;
	struct agent_node_heartbeat hb;
	struct agent_spod_info spod;
	char fstype[32];
	struct conf_error err;
	char ip[AGENT_IP_MAX], mask[AGENT_IP_MAX], *out;
	unsigned npus;
	size_t len;

	memset(&ips, 0, sizeof(ips));
	if (agent_parse_hccn_conf(text, size, "hccn.conf", &ips, &err) == 0) {
		for (unsigned i = 0; i < CONF_SERVER_NPUS_MAX; i++)
			if (strlen(ips.ip[i]) >= AGENT_IP_MAX)
				abort();
	}
	if (agent_parse_hccn_ip(text, size, "hccn_tool", ip, mask, &err) == 0 &&
	    (!ip[0] || strlen(ip) >= AGENT_IP_MAX))
		abort();
	if (agent_parse_spod_info(text, size, "spod-info", &spod, &err) == 0) {
		/* what the agent would send as a sdid line parses or is refused, never more */
		struct conf_health_report one = { .npu_count = 1 };

		one.npus[0].id = spod.sdid & 0xffff;
		one.npus[0].has_sdid = true;
		one.npus[0].sdid = spod.sdid;
		one.npus[0].super_pod_id = spod.super_pod_id;
		one.npus[0].server_index = spod.server_index;
		if (one.npus[0].id < CONF_SERVER_NPUS_MAX &&
		    conf_health_render(&one, &out, &len) == 0) {
			(void)conf_health_parse(out, len, "report", CONF_SERVER_NPUS_MAX, &again,
						&err);
			free(out);
		}
	}
	if (agent_parse_node_info(text, size, "info", &npus, &err) == 0 &&
	    (npus < 1 || npus > CONF_SERVER_NPUS_MAX))
		abort();
	if (agent_parse_node_heartbeat(text, size, "info", &hb, &err) == 0 &&
	    (memchr(hb.refusal, '\0', sizeof(hb.refusal)) == NULL || hb.age_sec < -1))
		abort();
	if (agent_mount_fstype(text, size, "/ascend/nodes", fstype, sizeof(fstype)) == 0 &&
	    memchr(fstype, '\0', sizeof(fstype)) == NULL)
		abort();
	if (agent_parse_npu_smi_info(text, size, "npu-smi info", &health, &err) < 0)
		return 0;
	if (health.npu_count < 1 || health.npu_count > CONF_SERVER_NPUS_MAX)
		abort();
	agent_report_build(&health, CONF_SERVER_NPUS_MAX, CONF_HEALTH_UNKNOWN, &ips, &rep);
	if (conf_health_render(&rep, &out, &len) == 0) {
		if (conf_health_parse(out, len, "report", CONF_SERVER_NPUS_MAX, &again, &err) < 0)
			abort(); /* the agent must never write what the daemon refuses */
		free(out);
	}
	return 0;
}
