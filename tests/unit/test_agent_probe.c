/* SPDX-License-Identifier: MIT */
/*
 * ascend-agent's pure parts: the npu-smi, hccn_tool and hccn.conf parsers against the
 * sample outputs in tests/data/agent and against broken text, and the report assembly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "test_util.h"

static void npu_smi_ok(const char *text, size_t len, struct conf_health_report *rep)
{
	struct conf_error err = { 0 };
	char msg[1024];
	int r;

	r = agent_parse_npu_smi_info(text, len, "npu-smi info", rep, &err);
	if (r != 0)
		fail_msg("expected success, got %d: %s", r,
			 conf_error_format(&err, msg, sizeof(msg)));
}

static void npu_smi_sample(const char *name, struct conf_health_report *rep)
{
	char rel[256], *text;
	size_t len;

	snprintf(rel, sizeof(rel), "tests/data/agent/%s", name);
	text = test_read_file(rel, &len);
	npu_smi_ok(text, len, rep);
	free(text);
}

/* The formatted error; static buffer. Outputs must be untouched. */
static const char *npu_smi_fail(const char *text, size_t len, int want)
{
	static char msg[1024];
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	int r;

	memset(&rep, 0x5a, sizeof(rep));
	r = agent_parse_npu_smi_info(text, len, "npu-smi info", &rep, &err);
	if (r != want)
		fail_msg("expected %d, got %d", want, r);
	assert_int_equal(((unsigned char *)&rep)[0], 0x5a);
	return conf_error_format(&err, msg, sizeof(msg));
}

static const char *npu_smi_failz(const char *text)
{
	return npu_smi_fail(text, strlen(text), -EINVAL);
}

static void test_npu_smi_910(void **state)
{
	struct conf_health_report rep;

	npu_smi_sample("npu-smi-910.txt", &rep);
	assert_false(rep.has_node);
	assert_int_equal(rep.npu_count, 8);
	for (unsigned i = 0; i < 8; i++) {
		assert_int_equal(rep.npus[i].id, i);
		assert_true(rep.npus[i].has_level);
		assert_int_equal(rep.npus[i].level, i == 6 ? CONF_HEALTH_WARNING : CONF_HEALTH_OK);
		assert_string_equal(rep.npus[i].message, "");
	}
}

static void test_npu_smi_910b(void **state)
{
	struct conf_health_report rep;

	/* NPU 3 is Critical; the process table below the NPU table is not read as NPUs. */
	npu_smi_sample("npu-smi-910b.txt", &rep);
	assert_int_equal(rep.npu_count, 8);
	for (unsigned i = 0; i < 8; i++) {
		assert_int_equal(rep.npus[i].id, i);
		assert_int_equal(rep.npus[i].level, i == 3 ? CONF_HEALTH_CRITICAL : CONF_HEALTH_OK);
	}
	npu_smi_sample("npu-smi-910b-ok.txt", &rep);
	assert_int_equal(rep.npu_count, 8);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(rep.npus[i].level, CONF_HEALTH_OK);
}

static void test_npu_smi_a3(void **state)
{
	struct conf_health_report rep;

	/* Two dies per card: the device id is the Phy-ID, 0-15. */
	npu_smi_sample("npu-smi-a3.txt", &rep);
	assert_int_equal(rep.npu_count, 16);
	for (unsigned i = 0; i < 16; i++) {
		assert_int_equal(rep.npus[i].id, i);
		assert_int_equal(rep.npus[i].level, i == 5 ? CONF_HEALTH_ALARM : CONF_HEALTH_OK);
	}
}

#define HEADER                                                                                \
	"+---------------------------+---------------+-------------------------------+\n"     \
	"| NPU   Name                | Health        | Power(W)    Temp(C)           |\n"     \
	"| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  |\n"     \
	"+===========================+===============+===============================+\n"
#define NPU_ROWS(id, health)                                                                  \
	"| " #id "     910B3               | " health "    | 93.0        40                |\n" \
	"| 0                         | 0000:C1:00.0  | 0           0    / 0          |\n"
#define A3_HEADER                                                                             \
	"| NPU   Name                | Health        | Power(W)    Temp(C)           |\n"     \
	"| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  |\n"

static void test_npu_smi_variants(void **state)
{
	struct conf_health_report rep;
	const char *text;

	/* Lowercase words, CRLF line ends, no borders, indentation. */
	text = "  |NPU Name|Health|Power|\r\n  |Chip|Bus-Id|AICore|\r\n"
	       "  |1 910B3|ok|1|\r\n  |0|0000:01:00.0|0|\r\n  |0 910B3|critical|1|\r\n";
	npu_smi_ok(text, strlen(text), &rep);
	assert_int_equal(rep.npu_count, 2);
	assert_int_equal(rep.npus[0].id, 1);
	assert_int_equal(rep.npus[1].id, 0);
	assert_int_equal(rep.npus[1].level, CONF_HEALTH_CRITICAL);

	/* A Health word npu-smi does not document: the NPU is UNKNOWN, the word kept. */
	text = HEADER NPU_ROWS(0, "Degraded") NPU_ROWS(1, "UNKNOWN ");
	npu_smi_ok(text, strlen(text), &rep);
	assert_int_equal(rep.npus[0].level, CONF_HEALTH_UNKNOWN);
	assert_string_equal(rep.npus[0].message, "npu-smi health \"Degraded\"");
	assert_int_equal(rep.npus[1].level, CONF_HEALTH_UNKNOWN);
	assert_string_equal(rep.npus[1].message, "");

	/* Text before the table (a warning from the driver) is ignored. */
	text = "Warning: the tool version differs from the driver\n" HEADER NPU_ROWS(2, "OK      ");
	npu_smi_ok(text, strlen(text), &rep);
	assert_int_equal(rep.npus[0].id, 2);
}

static void test_npu_smi_refused(void **state)
{
	assert_string_equal(npu_smi_failz(""),
			    "npu-smi info: the output is empty; expected the NPU table");
	assert_string_equal(npu_smi_failz("\n  \n"),
			    "npu-smi info: the output is empty; expected the NPU table");
	assert_string_equal(npu_smi_failz("dcmi module initialize failed. ret is -8005\n"),
			    "npu-smi info: no NPU table in the output, which begins \"dcmi module "
			    "initialize failed. ret is -8005\"; check the driver (npu-smi info) "
			    "and the device permissions");
	assert_string_equal(npu_smi_failz(HEADER),
			    "npu-smi info: the NPU table lists no NPUs");
	assert_string_equal(npu_smi_failz("| NPU Name | Health | Power |\n"),
			    "npu-smi info: the NPU table ends after its first header row");
	assert_string_equal(npu_smi_failz("| NPU Name | Health | Power |\n| x | y | z |\n"),
			    "npu-smi info:2:3: expected the \"Chip ... | Bus-Id\" header row below "
			    "the \"NPU Name | Health\" row");
	assert_string_equal(npu_smi_failz(HEADER NPU_ROWS(3, "OK      ") NPU_ROWS(3, "OK      ")),
			    "npu-smi info:7:3: device 3 is listed twice (also at line 5)");
	assert_string_equal(npu_smi_failz(HEADER NPU_ROWS(16, "OK     ")),
			    "npu-smi info:5:3: device 16 is beyond the 16 NPUs a server may hold");
	assert_string_equal(npu_smi_failz(HEADER "| 0 910B3 |  | 1 |\n"),
			    "npu-smi info:5:12: NPU 0 has no Health value");
	assert_string_equal(npu_smi_failz(HEADER "| 123456 910B3 | OK | 1 |\n"),
			    "npu-smi info:5:3: NPU row without an NPU id: \"123456 910B3\"");
	/* A3: every NPU row needs its chip row with the Phy-ID. */
	assert_string_equal(npu_smi_failz(A3_HEADER "| 0 Ascend910 | OK | 1 |\n"),
			    "npu-smi info:3:1: the NPU row has no chip row below it");
	assert_string_equal(npu_smi_failz(A3_HEADER "| 0 Ascend910 | OK | 1 |\n"
							"| 0 Ascend910 | OK | 1 |\n"),
			    "npu-smi info:3:1: the NPU row has no chip row below it");
	assert_string_equal(npu_smi_failz(A3_HEADER "| 0 Ascend910 | OK | 1 |\n"
							"| 0 | 0000:9D:00.0 | 1 |\n"),
			    "npu-smi info:4:3: the chip row has no Phy-ID; expected "
			    "\"Chip Phy-ID\" such as \"1  15\"");
	assert_string_equal(npu_smi_failz(A3_HEADER "| 0 0 | 0000:9D:00.0 | 1 |\n"),
			    "npu-smi info:3:3: a chip row without the NPU row above it");
}

static void test_npu_smi_oversize(void **state)
{
	size_t len = AGENT_PROBE_MAX_BYTES + 1;
	char *big = malloc(len);

	assert_non_null(big);
	memset(big, '|', len);
	assert_string_equal(npu_smi_fail(big, len, -EFBIG),
			    "npu-smi info: the output is 1048577 bytes, more than the limit of "
			    "1048576 bytes");
	/* At the limit, a table of nothing but bars is read and refused, not crashed on. */
	npu_smi_fail(big, AGENT_PROBE_MAX_BYTES, -EINVAL);
	free(big);
}

/* Any text: either parsed into sane entries or refused with a message. */
static void npu_smi_any(const char *text, size_t len)
{
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	int r;

	r = agent_parse_npu_smi_info(text, len, "m", &rep, &err);
	if (r == 0) {
		assert_true(rep.npu_count >= 1 && rep.npu_count <= CONF_SERVER_NPUS_MAX);
		for (size_t i = 0; i < rep.npu_count; i++)
			assert_true(rep.npus[i].id < CONF_SERVER_NPUS_MAX);
	} else {
		assert_int_equal(r, -EINVAL);
		assert_true(err.msg[0] != '\0');
	}
}

static void test_npu_smi_truncations_and_mutations(void **state)
{
	static const char replacements[] = { '|', ' ', '\n', '\0', '0', '9', 'x', ':', '-' };
	static const char *const samples[] = { "npu-smi-910b.txt", "npu-smi-a3.txt" };

	for (size_t s = 0; s < 2; s++) {
		char rel[256], *text, *copy;
		size_t len, i, k;

		snprintf(rel, sizeof(rel), "tests/data/agent/%s", samples[s]);
		text = test_read_file(rel, &len);
		copy = malloc(len);
		assert_non_null(copy);
		/* ASan sees any read past the length: the copies are not NUL-terminated. */
		for (i = 0; i <= len; i += 7) {
			memcpy(copy, text, i);
			npu_smi_any(copy, i);
		}
		for (i = 0; i < len; i += 3) {
			for (k = 0; k < sizeof(replacements); k++) {
				memcpy(copy, text, len);
				copy[i] = replacements[k];
				npu_smi_any(copy, len);
			}
		}
		free(copy);
		free(text);
	}
}

static void test_hccn_ip(void **state)
{
	char ip[AGENT_IP_MAX], mask[AGENT_IP_MAX], msg[1024], *text;
	struct conf_error err = { 0 };
	size_t len;

	text = test_read_file("tests/data/agent/hccn-ip.txt", &len);
	assert_int_equal(agent_parse_hccn_ip(text, len, "hccn_tool -i 3 -ip -g", ip, mask, &err),
			 0);
	assert_string_equal(ip, "10.20.3.1");
	assert_string_equal(mask, "255.255.255.0");
	free(text);

	assert_int_equal(agent_parse_hccn_ip(" ipaddr : fd00:0::1 \r\n", 22, "h", ip, NULL, &err),
			 0);
	assert_string_equal(ip, "fd00::1");

	strcpy(ip, "untouched");
	assert_int_equal(agent_parse_hccn_ip("netmask:255.0.0.0\n", 18, "h", ip, mask, &err),
			 -ENOENT);
	assert_string_equal(ip, "untouched");
	assert_int_equal(agent_parse_hccn_ip("", 0, "h", ip, mask, &err), -ENOENT);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "h: no \"ipaddr:\" line; the NPU has no address (hccn_tool -i N -ip -s "
			    "sets one)");
	assert_int_equal(agent_parse_hccn_ip("ipaddr:10.20.0.256\n", 19, "h", ip, mask, &err),
			 -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "h:1:8: ipaddr: \"10.20.0.256\" is not an IP address");
	assert_int_equal(agent_parse_hccn_ip("ipaddr:1.1.1.1\nipaddr:1.1.1.2\n", 30, "h", ip,
					     mask, &err),
			 -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "h:2:1: ipaddr is printed twice (also at line 1)");
	assert_int_equal(agent_parse_hccn_ip("ipaddr:\n", 8, "h", ip, mask, &err), -EINVAL);
	/* An error from the tool has no ipaddr line. */
	assert_int_equal(agent_parse_hccn_ip("Command execute failed: dev_id 9 is invalid\n", 44,
					     "h", ip, mask, &err),
			 -ENOENT);
}

static void test_hccn_conf(void **state)
{
	struct agent_device_ips ips;
	struct conf_error err = { 0 };
	char msg[1024], *text;
	size_t len;

	text = test_read_file("tests/data/agent/hccn.conf", &len);
	assert_int_equal(agent_parse_hccn_conf(text, len, "/etc/hccn.conf", &ips, &err), 0);
	for (unsigned d = 0; d < 8; d++) {
		char want[32];

		snprintf(want, sizeof(want), "10.20.%u.1", d);
		assert_string_equal(ips.ip[d], want);
	}
	assert_string_equal(ips.ip[8], "");
	free(text);

	assert_int_equal(agent_parse_hccn_conf("", 0, "c", &ips, &err), 0);
	assert_string_equal(ips.ip[0], "");
	assert_int_equal(agent_parse_hccn_conf(" address_15 = fd00::f \n", 23, "c", &ips, &err),
			 0);
	assert_string_equal(ips.ip[15], "fd00::f");

#define CONF_FAIL(text, message)                                                              \
	do {                                                                                  \
		assert_int_equal(agent_parse_hccn_conf(text, strlen(text), "c", &ips, &err),  \
				 -EINVAL);                                                    \
		assert_string_equal(conf_error_format(&err, msg, sizeof(msg)), message);      \
	} while (0)
	CONF_FAIL("address_0=10.20.0.1\naddress_0=10.20.0.2\n",
		  "c:2:1: address_0 is given twice (also at line 1)");
	CONF_FAIL("address_16=10.20.0.1\n",
		  "c:1:1: \"address_16\" is not address_N with a device id N from 0 to 15");
	CONF_FAIL("address_x=10.20.0.1\n",
		  "c:1:1: \"address_x\" is not address_N with a device id N from 0 to 15");
	CONF_FAIL("address_1=10.20.0\n", "c:1:11: address_1: \"10.20.0\" is not an IP address");
	CONF_FAIL("netmask_0=255.255.255.0\ngarbage\n",
		  "c:2:1: expected KEY=VALUE, such as address_0=10.20.0.1, not \"garbage\"");
#undef CONF_FAIL
}

/*
 * Addresses hccn_tool or hccn.conf give that HCCL cannot use are not reported (issue 14
 * item 8): the parsers refuse them with the reason, and agent_device_ips_check() drops
 * one address on two NPUs, so the daemon never refuses the agent's report for them.
 */
static void test_hccn_unusable_addresses(void **state)
{
	static const char *const bad[] = { "0.0.0.0", "255.255.255.255", "127.0.0.1",
					   "224.0.0.5", "169.254.0.1", "fe80::1", "::1" };
	struct agent_device_ips ips;
	struct conf_error err = { 0 };
	char ip[AGENT_IP_MAX], text[128], msg[1024], why[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "ipaddr:%s\nnetmask:255.255.255.0\n", bad[i]);
		strcpy(ip, "untouched");
		assert_int_equal(agent_parse_hccn_ip(text, strlen(text), "h", ip, NULL, &err),
				 -EINVAL);
		assert_string_equal(ip, "untouched");
		conf_error_format(&err, msg, sizeof(msg));
		if (!strstr(msg, "h:1:8: ipaddr: ") || !strstr(msg, conf_device_ip_problem(bad[i])))
			fail_msg("%s: %s", bad[i], msg);
		snprintf(text, sizeof(text), "address_3=%s\n", bad[i]);
		assert_int_equal(agent_parse_hccn_conf(text, strlen(text), "c", &ips, &err),
				 -EINVAL);
		conf_error_format(&err, msg, sizeof(msg));
		assert_non_null(strstr(msg, "address_3: "));
	}
	/* hccn.conf giving one address to two NPUs */
	assert_int_equal(agent_parse_hccn_conf("address_0=10.20.0.1\naddress_4=10.20.0.1\n", 40,
					       "c", &ips, &err),
			 -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "c:2:11: address_4: 10.20.0.1 is also address_0 (line 1); every NPU "
			    "has its own address");

	/* addresses from one probe each (hccn_tool): both holders of a duplicate go */
	memset(&ips, 0, sizeof(ips));
	strcpy(ips.ip[0], "10.20.0.1");
	strcpy(ips.ip[1], "10.20.0.9");
	strcpy(ips.ip[2], "10.20.0.3");
	strcpy(ips.ip[5], "10.20.0.9");
	agent_device_ips_check(&ips, 8, why, sizeof(why));
	assert_string_equal(ips.ip[0], "10.20.0.1");
	assert_string_equal(ips.ip[1], "");
	assert_string_equal(ips.ip[2], "10.20.0.3");
	assert_string_equal(ips.ip[5], "");
	assert_string_equal(why, "NPUs 1 and 5 both have device IP 10.20.0.9; neither is "
				 "reported until hccn_tool gives them their own");
	agent_device_ips_check(&ips, 8, why, sizeof(why));
	assert_string_equal(why, "");
}

/* `npu-smi info -t spod-info -i CARD -c CHIP` (issue 14 item 6). */
static void test_spod_info(void **state)
{
	static const char a3[] = "SDID                           : 113508354\n"
				 "Super Pod Size                 : 48\n"
				 "Super Pod ID                   : 1\n"
				 "Server Index                   : 27\n"
				 "Chassis ID                     : 0\n";
	struct agent_spod_info info;
	struct conf_error err = { 0 };
	char msg[1024];

	(void)state;
	assert_int_equal(agent_parse_spod_info(a3, strlen(a3), "s", &info, &err), 0);
	assert_int_equal(info.sdid, 113508354U);
	assert_int_equal(info.super_pod_size, 48);
	assert_int_equal(info.super_pod_id, 1);
	assert_int_equal(info.server_index, 27);
	/* Atlas 800 and A2 have none */
	assert_int_equal(agent_parse_spod_info("This device does not support querying "
					       "spod-info.\n", 50, "s", &info, &err),
			 -ENOENT);
	assert_int_equal(agent_parse_spod_info("SDID : 12x\nSuper Pod ID : 1\nServer Index : "
					       "0\n", 44, "s", &info, &err),
			 -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "s:1:8: SDID: \"12x\" is not a number below 4294967296");
	assert_int_equal(agent_parse_spod_info("SDID : 1\nSDID : 2\n", 18, "s", &info, &err),
			 -EINVAL);
	assert_int_equal(agent_parse_spod_info("SDID : 1\nSuper Pod ID : 1\n", 26, "s", &info,
					       &err),
			 -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "s: no \"Server Index\" line; expected SDID, Super Pod ID and Server "
			    "Index");
}

static void test_node_info(void **state)
{
	static const char info[] = "{\"name\": \"a2-node-01\", \"host_ip\": \"10.0.1.1\", "
				   "\"npu_count\": 8, \"state\": \"unknown\"}";
	struct conf_error err = { 0 };
	unsigned npus = 0;
	char msg[1024];

	assert_int_equal(agent_parse_node_info(info, sizeof(info) - 1, "info", &npus, &err), 0);
	assert_int_equal(npus, 8);
	assert_int_equal(agent_parse_node_info("{\"npu_count\": 16}", 17, "info", &npus, &err),
			 0);
	assert_int_equal(npus, 16);
	assert_int_equal(agent_parse_node_info("{\"npu_count\": 17}", 17, "info", &npus, &err),
			 -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "info: npu_count is 17; a server has 1 to 16 NPUs");
	assert_int_equal(agent_parse_node_info("{\"npu_count\": \"8\"}", 18, "info", &npus, &err),
			 -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "info: no whole-number \"npu_count\"");
	assert_int_equal(agent_parse_node_info("[8]", 3, "info", &npus, &err), -EINVAL);
	assert_int_equal(agent_parse_node_info("{\"npu_count\": 8", 15, "info", &npus, &err),
			 -EINVAL);
	assert_non_null(strstr(conf_error_format(&err, msg, sizeof(msg)), "info:1:"));
	assert_int_equal(npus, 16);
}

static int hb_parse(const char *text, struct agent_node_heartbeat *hb, struct conf_error *err)
{
	return agent_parse_node_heartbeat(text, strlen(text), "info", hb, err);
}

/* The heartbeat and last refusal an agent on a network mount reads back. */
static void test_node_heartbeat(void **state)
{
	static const char ok[] = "{\"npu_count\": 8, \"heartbeat_age_sec\": 0.25, "
				 "\"last_refused_report\": null}";
	static const char refused[] = "{\"heartbeat_age_sec\": 12, \"last_refused_report\": "
				      "{\"reason\": \"h:1:5: npu 9: no such NPU\", \"age_sec\": 0.5}}";
	struct agent_node_heartbeat hb;
	struct conf_error err = { 0 };
	char msg[1024];

	(void)state;
	assert_int_equal(agent_parse_node_heartbeat(ok, sizeof(ok) - 1, "info", &hb, &err), 0);
	assert_true(hb.age_sec > 0.24 && hb.age_sec < 0.26);
	assert_false(hb.refused);
	assert_int_equal(agent_parse_node_heartbeat(refused, sizeof(refused) - 1, "info", &hb,
						    &err), 0);
	assert_true(hb.age_sec > 11.9 && hb.age_sec < 12.1); /* an integer is a number too */
	assert_true(hb.refused);
	assert_true(hb.refused_age_sec > 0.4 && hb.refused_age_sec < 0.6);
	assert_string_equal(hb.refusal, "h:1:5: npu 9: no such NPU");
	assert_string_equal(hb.agent, ""); /* absent: an older daemon */
	assert_int_equal(hb_parse("{\"heartbeat_age_sec\": 1, \"agent\": \"h:9\", "
				  "\"last_refused_report\": null}", &hb, &err), 0);
	assert_string_equal(hb.agent, "h:9");
	assert_int_equal(hb_parse("{\"heartbeat_age_sec\": 1, \"agent\": 9, "
				  "\"last_refused_report\": null}", &hb, &err), -EINVAL);
	assert_int_equal(hb_parse("{\"heartbeat_age_sec\": null, \"last_refused_report\": null}",
				  &hb, &err), 0);
	assert_true(hb.age_sec < 0);
	/* a daemon older than the agent: said, and *ret untouched */
	hb.age_sec = 7;
	assert_int_equal(hb_parse("{\"heartbeat_age_sec\": 1}", &hb, &err), -EINVAL);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "info: no \"last_refused_report\": the daemon is older than this agent");
	assert_true(hb.age_sec == 7);
	assert_int_equal(hb_parse("{\"heartbeat_age_sec\": \"1\", \"last_refused_report\": null}",
				  &hb, &err), -EINVAL);
	assert_int_equal(hb_parse("{\"heartbeat_age_sec\": 1, "
				  "\"last_refused_report\": {\"reason\": 3}}", &hb, &err), -EINVAL);
	assert_int_equal(hb_parse("{\"heartbeat_age_sec\": 1, \"last_refused_report\": []}", &hb,
				  &err), -EINVAL);
	assert_int_equal(hb_parse("{", &hb, &err), -EINVAL);
	assert_non_null(strstr(conf_error_format(&err, msg, sizeof(msg)), "invalid JSON"));
	assert_true(hb.age_sec == 7);
}

/* Which filesystem holds a path, from /proc/self/mountinfo (proc(5)). */
static void test_mount_fstype(void **state)
{
	static const char mi[] =
		"22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"30 22 0:25 / /tmp rw shared:2 - tmpfs tmpfs rw\n"
		"41 22 0:40 / /ascend rw,nosuid,nodev - fuse.ascendfs ascendfs rw,user_id=0\n"
		"42 22 0:41 / /mnt/head\\040ascend rw master:7 - fuse.sshfs root@h:/ascend rw\n"
		"43 41 0:42 / /ascend rw - fuse.sshfs root@head:/ascend rw,user_id=0\n"
		"garbage line without fields\n"
		"44 22 0:43 / /nfs rw - nfs4";
	char t[64];

	(void)state;
	assert_int_equal(agent_mount_fstype(mi, sizeof(mi) - 1, "/tmp/x", t, sizeof(t)), 0);
	assert_string_equal(t, "tmpfs");
	assert_int_equal(agent_mount_fstype(mi, sizeof(mi) - 1, "/tmpfoo", t, sizeof(t)), 0);
	assert_string_equal(t, "ext4"); /* a prefix of the name is not a parent */
	/* sshfs mounted over the daemon's mount point: the later line is on top */
	assert_int_equal(agent_mount_fstype(mi, sizeof(mi) - 1, "/ascend", t, sizeof(t)), 0);
	assert_string_equal(t, "fuse.sshfs");
	assert_int_equal(agent_mount_fstype(mi, (size_t)(strstr(mi, "43 41") - mi),
					    "/ascend/jobs", t, sizeof(t)), 0);
	assert_string_equal(t, "fuse.ascendfs");
	/* an escaped space in the mount point */
	assert_int_equal(agent_mount_fstype(mi, sizeof(mi) - 1, "/mnt/head ascend/nodes", t,
					    sizeof(t)), 0);
	assert_string_equal(t, "fuse.sshfs");
	/* the last line has no newline; the type is cut to the buffer */
	assert_int_equal(agent_mount_fstype(mi, sizeof(mi) - 1, "/nfs/a", t, sizeof(t)), 0);
	assert_string_equal(t, "nfs4");
	assert_int_equal(agent_mount_fstype(mi, sizeof(mi) - 1, "/nfs/a", t, 3), 0);
	assert_string_equal(t, "nf");
	assert_int_equal(agent_mount_fstype("no mounts here\n", 15, "/", t, sizeof(t)), -ENOENT);
	assert_int_equal(agent_mount_fstype("", 0, "/", t, sizeof(t)), -ENOENT);
}

/* Render @rep to a static buffer. */
static const char *render(const struct conf_health_report *rep)
{
	static char buf[8192];
	char *text;
	size_t len;

	assert_int_equal(conf_health_render(rep, &text, &len), 0);
	snprintf(buf, sizeof(buf), "%s", text);
	free(text);
	return buf;
}

static void test_report_from_npu_smi(void **state)
{
	struct conf_health_report probed, rep, again;
	struct agent_device_ips ips, got;
	struct conf_error err = { 0 };
	const char *text;

	npu_smi_sample("npu-smi-910b.txt", &probed);
	/* NPU 6 fell off the bus: npu-smi no longer lists it. */
	probed.npus[6] = probed.npus[7];
	probed.npu_count--;
	memset(&ips, 0, sizeof(ips));
	strcpy(ips.ip[0], "10.20.0.1");
	strcpy(ips.ip[3], "10.20.3.1");
	agent_report_build(&probed, 8, CONF_HEALTH_UNKNOWN, &ips, &rep);
	text = render(&rep);
	assert_string_equal(text, "node OK\n"
				  "npu 0 OK\n"
				  "ip 0 10.20.0.1\n"
				  "npu 1 OK\n"
				  "npu 2 OK\n"
				  "npu 3 Critical\n"
				  "ip 3 10.20.3.1\n"
				  "npu 4 OK\n"
				  "npu 5 OK\n"
				  "npu 6 UNKNOWN\n"
				  "npu 7 OK\n");
	/* What the agent writes, the daemon's parser accepts. */
	assert_int_equal(conf_health_parse(text, strlen(text), "a2-node-01/health", 8, &again,
					   &err),
			 0);
	assert_int_equal(again.npu_count, 8);

	agent_report_ips(&rep, &got);
	assert_memory_equal(&got, &ips, sizeof(ips));
	agent_report_strip_ips(&rep);
	assert_null(strstr(render(&rep), "ip "));
}

static void test_report_from_fault_file(void **state)
{
	static const char faults[] = "npu 3 Critical 0x80C98000 HBM uncorrectable ECC\n"
				     "ip 1 10.99.0.2\n"
				     "node Warning\n";
	struct conf_health_report injected, rep;
	struct agent_device_ips ips;
	struct conf_error err = { 0 };

	assert_int_equal(conf_health_parse(faults, sizeof(faults) - 1, "faults", 4, &injected,
					   &err),
			 0);
	memset(&ips, 0, sizeof(ips));
	strcpy(ips.ip[1], "10.20.1.1");
	strcpy(ips.ip[2], "10.20.2.1");
	/* NPUs the fault file does not name are OK; its own addresses win. */
	agent_report_build(&injected, 4, CONF_HEALTH_OK, &ips, &rep);
	assert_string_equal(render(&rep), "node Warning\n"
					  "npu 0 OK\n"
					  "npu 1 OK\n"
					  "ip 1 10.99.0.2\n"
					  "npu 2 OK\n"
					  "ip 2 10.20.2.1\n"
					  "npu 3 Critical 0x80C98000 HBM uncorrectable ECC\n");

	/* No health at all, a smaller server than the probe saw, no addresses. */
	agent_report_build(NULL, 2, CONF_HEALTH_OK, NULL, &rep);
	assert_string_equal(render(&rep), "node OK\nnpu 0 OK\nnpu 1 OK\n");
	agent_report_build(&injected, 2, CONF_HEALTH_OK, NULL, &rep);
	assert_string_equal(render(&rep), "node Warning\nnpu 0 OK\nnpu 1 OK\nip 1 10.99.0.2\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_npu_smi_910),
		cmocka_unit_test(test_npu_smi_910b),
		cmocka_unit_test(test_npu_smi_a3),
		cmocka_unit_test(test_npu_smi_variants),
		cmocka_unit_test(test_npu_smi_refused),
		cmocka_unit_test(test_npu_smi_oversize),
		cmocka_unit_test(test_npu_smi_truncations_and_mutations),
		cmocka_unit_test(test_hccn_ip),
		cmocka_unit_test(test_hccn_conf),
		cmocka_unit_test(test_hccn_unusable_addresses),
		cmocka_unit_test(test_spod_info),
		cmocka_unit_test(test_node_info),
		cmocka_unit_test(test_node_heartbeat),
		cmocka_unit_test(test_mount_fstype),
		cmocka_unit_test(test_report_from_npu_smi),
		cmocka_unit_test(test_report_from_fault_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
