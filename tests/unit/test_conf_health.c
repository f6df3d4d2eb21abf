/* SPDX-License-Identifier: MIT */
/*
 * NPU health reports (conf_health.c): both formats, every refusal, hostile input,
 * rendering, allocation failures; and the fault-policy keys of the configuration.
 * Message texts of the refusals live in tests/data/invalid/health (test_conf_cases.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "test_util.h"

#include "test_chaos.h"

static const char full_report[] = "# a2-node-01\n"
				  "node OK\n"
				  "npu 0 OK\n"
				  "ip 3 10.20.0.4\n"
				  "npu 3 Critical 0x80C98000 HBM uncorrectable ECC\n"
				  "npu 2 warning 80E18402\n"
				  "npu 5 Alarm link down\n"
				  "ip 0 10.20.0.1\n"
				  "ip 7 FD00:0::8\n";

static const char full_json[] =
	"{\"node\": \"OK\", \"npus\": [\n"
	"  {\"id\": 3, \"health\": \"Critical\", \"code\": \"0x80C98000\",\n"
	"   \"message\": \"HBM uncorrectable ECC\", \"device_ip\": \"10.20.0.4\"},\n"
	"  {\"id\": 1, \"health\": \"ok\"},\n"
	"  {\"id\": 6, \"device_ip\": \"10.20.0.7\"}\n"
	"]}\n";

static void parse_ok(const char *text, size_t len, unsigned npus, struct conf_health_report *rep)
{
	struct conf_error err = { 0 };
	char msg[1024];
	int r;

	r = conf_health_parse(text, len, "t/health", npus, rep, &err);
	if (r != 0)
		fail_msg("expected success, got %d: %s", r,
			 conf_error_format(&err, msg, sizeof(msg)));
}

static void parse_okz(const char *text, struct conf_health_report *rep)
{
	parse_ok(text, strlen(text), 8, rep);
}

/* The formatted error of a refused report; static buffer. */
static const char *parse_fail(const char *text, size_t len, unsigned npus, int want)
{
	static char msg[1024];
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	int r;

	memset(&rep, 0xa5, sizeof(rep));
	r = conf_health_parse(text, len, "t/health", npus, &rep, &err);
	if (r != want)
		fail_msg("expected %d, got %d for %.60s", want, r, text ? text : "(null)");
	/* Outputs are untouched on failure. */
	assert_int_equal(((unsigned char *)&rep)[0], 0xa5);
	assert_int_equal(((unsigned char *)&rep)[sizeof(rep) - 1], 0xa5);
	return conf_error_format(&err, msg, sizeof(msg));
}

static const char *parse_failz(const char *text, int want)
{
	return parse_fail(text, strlen(text), 8, want);
}

static const struct conf_health_npu *find_npu(const struct conf_health_report *rep, unsigned id)
{
	for (size_t i = 0; i < rep->npu_count; i++)
		if (rep->npus[i].id == id)
			return &rep->npus[i];
	return NULL;
}

/* Render @rep, parse the text again, and require the same report and the same text. */
static void assert_render_round_trip(const struct conf_health_report *rep, unsigned npus)
{
	struct conf_health_report again;
	char *text = NULL, *text2 = NULL;
	size_t len = 0, len2 = 0;

	assert_int_equal(conf_health_render(rep, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	parse_ok(text, len, npus, &again);
	assert_int_equal(conf_health_render(&again, &text2, &len2), 0);
	assert_string_equal(text, text2);
	assert_int_equal(again.npu_count, rep->npu_count);
	assert_int_equal(again.has_node, rep->has_node);
	free(text);
	free(text2);
}

static void test_health_level_names(void **state)
{
	static const char *const names[] = { "OK", "Warning", "Alarm", "Critical", "UNKNOWN" };
	enum conf_health_level l;

	for (unsigned i = 0; i < 5; i++) {
		assert_string_equal(conf_health_level_name((enum conf_health_level)i), names[i]);
		assert_int_equal(conf_health_level_from_name(names[i], strlen(names[i]), &l), 0);
		assert_int_equal(l, i);
	}
	assert_int_equal(conf_health_level_from_name("cRiTiCaL", 8, &l), 0);
	assert_int_equal(l, CONF_HEALTH_CRITICAL);
	/* A prefix is not a level, and the length is honoured without a NUL. */
	assert_int_equal(conf_health_level_from_name("OKAY", 2, &l), 0);
	assert_int_equal(l, CONF_HEALTH_OK);
	assert_int_equal(conf_health_level_from_name("Crit", 4, &l), -EINVAL);
	assert_int_equal(conf_health_level_from_name("", 0, &l), -EINVAL);
	assert_int_equal(conf_health_level_from_name(NULL, 0, &l), -EINVAL);
	assert_string_equal(conf_health_level_name((enum conf_health_level)42), "UNKNOWN");
}

static void test_health_lines(void **state)
{
	const struct conf_health_npu *n;
	struct conf_health_report rep;

	parse_ok(full_report, strlen(full_report), 8, &rep);
	assert_true(rep.has_node);
	assert_int_equal(rep.node, CONF_HEALTH_OK);
	/* In order of first mention, each NPU once. */
	assert_int_equal(rep.npu_count, 5);
	assert_int_equal(rep.npus[0].id, 0);
	assert_int_equal(rep.npus[1].id, 3);
	assert_int_equal(rep.npus[2].id, 2);
	assert_int_equal(rep.npus[3].id, 5);
	assert_int_equal(rep.npus[4].id, 7);

	n = find_npu(&rep, 0);
	assert_true(n->has_level);
	assert_int_equal(n->level, CONF_HEALTH_OK);
	assert_string_equal(n->device_ip, "10.20.0.1");
	assert_string_equal(n->code, "");
	assert_string_equal(n->message, "");

	n = find_npu(&rep, 3);
	assert_int_equal(n->level, CONF_HEALTH_CRITICAL);
	assert_string_equal(n->code, "0x80C98000");
	assert_string_equal(n->message, "HBM uncorrectable ECC");
	assert_string_equal(n->device_ip, "10.20.0.4");

	n = find_npu(&rep, 2);
	assert_int_equal(n->level, CONF_HEALTH_WARNING);
	assert_string_equal(n->code, "80E18402");
	assert_string_equal(n->message, "");

	n = find_npu(&rep, 5);
	assert_int_equal(n->level, CONF_HEALTH_ALARM);
	assert_string_equal(n->code, "");
	assert_string_equal(n->message, "link down");

	/* An address alone: no level; IPv6 in canonical form. */
	n = find_npu(&rep, 7);
	assert_false(n->has_level);
	assert_string_equal(n->device_ip, "fd00::8");
	assert_render_round_trip(&rep, 8);
}

static void test_health_codes(void **state)
{
	static const struct {
		const char *line;
		const char *code;
		const char *message;
	} cases[] = {
		{ "npu 1 Critical 0x80C98000", "0x80C98000", "" },
		{ "npu 1 Critical 0X1", "0X1", "" },
		{ "npu 1 Critical 0xFFFFFFFFFFFFFFFF x", "0xFFFFFFFFFFFFFFFF", "x" },
		/* 17 hex digits: too long for a code, so the word is the message */
		{ "npu 1 Critical 0x1FFFFFFFFFFFFFFFF", "", "0x1FFFFFFFFFFFFFFFF" },
		{ "npu 1 Critical 80c98000 as npu-smi shows", "80c98000", "as npu-smi shows" },
		{ "npu 1 Critical 80C9800 seven digits", "", "80C9800 seven digits" },
		{ "npu 1 Critical 0x", "", "0x" },
		{ "npu 1 Critical 0xZZ", "", "0xZZ" },
		{ "npu 1 Critical HBM ECC", "", "HBM ECC" },
		{ "npu 1 Critical   spaced   words  ", "", "spaced   words" },
		{ "npu 1 Critical # not a comment here", "", "# not a comment here" },
		{ "npu 1 Critical 0x1 0x2 second code is text", "0x1", "0x2 second code is text" },
		{ "npu 1 Critical caf\xc3\xa9 cr\xc3\xa8me", "", "caf\xc3\xa9 cr\xc3\xa8me" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conf_health_report rep;

		parse_ok(cases[i].line, strlen(cases[i].line), 8, &rep);
		assert_int_equal(rep.npu_count, 1);
		assert_string_equal(rep.npus[0].code, cases[i].code);
		assert_string_equal(rep.npus[0].message, cases[i].message);
		assert_render_round_trip(&rep, 8);
	}
}

static void test_health_message_limit(void **state)
{
	char line[512];
	struct conf_health_report rep;
	int o;

	/* 159 bytes fit, 160 do not. */
	o = snprintf(line, sizeof(line), "npu 1 Alarm 0x1 ");
	memset(line + o, 'm', 159);
	line[o + 159] = '\0';
	parse_ok(line, strlen(line), 8, &rep);
	assert_int_equal(strlen(rep.npus[0].message), 159);
	assert_render_round_trip(&rep, 8);
	line[o + 159] = 'm';
	line[o + 160] = '\0';
	assert_string_equal(parse_failz(line, -EINVAL),
			    "t/health:1:17: npu 1: the message is 160 bytes, more than the limit "
			    "of 159; shorten it");
}

static void test_health_server_sizes(void **state)
{
	struct conf_health_report rep;

	/* A3 servers have 16 dies. */
	parse_ok("npu 15 OK\n", 10, 16, &rep);
	assert_int_equal(rep.npus[0].id, 15);
	assert_string_equal(parse_fail("npu 15 OK\n", 10, 8, -EINVAL),
			    "t/health:1:5: npu 15: no such NPU; this server has NPUs 0 to 7");
	assert_string_equal(parse_fail("npu 16 OK\n", 10, 16, -EINVAL),
			    "t/health:1:5: npu 16: no such NPU; this server has NPUs 0 to 15");
	assert_string_equal(parse_fail("npu 1 OK\n", 9, 1, -EINVAL),
			    "t/health:1:5: npu 1: no such NPU; this server has NPUs 0 to 0");
	assert_string_equal(parse_fail("npu 0 OK\n", 9, 0, -EINVAL),
			    "t/health: the server has 0 NPUs; a server has 1 to 16");
	assert_string_equal(parse_fail("npu 0 OK\n", 9, 17, -EINVAL),
			    "t/health: the server has 17 NPUs; a server has 1 to 16");
	/* Every NPU of a 16-die server at once. */
	{
		char text[1024];
		size_t o = 0;

		for (unsigned d = 0; d < 16; d++)
			o += (size_t)snprintf(text + o, sizeof(text) - o,
					      "npu %u OK\nip %u 10.20.0.%u\n", d, d, d + 1);
		parse_ok(text, o, 16, &rep);
		assert_int_equal(rep.npu_count, 16);
		assert_render_round_trip(&rep, 16);
	}
}

static void test_health_json(void **state)
{
	const struct conf_health_npu *n;
	struct conf_health_report rep;
	char *tabbed;

	parse_ok(full_json, strlen(full_json), 8, &rep);
	assert_true(rep.has_node);
	assert_int_equal(rep.npu_count, 3);
	n = &rep.npus[0];
	assert_int_equal(n->id, 3);
	assert_int_equal(n->level, CONF_HEALTH_CRITICAL);
	assert_string_equal(n->code, "0x80C98000");
	assert_string_equal(n->message, "HBM uncorrectable ECC");
	assert_string_equal(n->device_ip, "10.20.0.4");
	assert_int_equal(rep.npus[1].level, CONF_HEALTH_OK);
	assert_false(rep.npus[2].has_level);
	assert_render_round_trip(&rep, 8);

	/* Tabs are JSON white space even where YAML would refuse them. */
	tabbed = strdup("\t{\n\t\"node\":\t\"Warning\",\n\t\"npus\": [\n\t\t{\"id\": 2, "
			"\"health\": \"OK\", \"message\": \"  a\\tb  \"}\n\t]\n}\n");
	assert_non_null(tabbed);
	parse_ok(tabbed, strlen(tabbed), 8, &rep);
	assert_int_equal(rep.node, CONF_HEALTH_WARNING);
	assert_string_equal(rep.npus[0].message, "a\tb");
	free(tabbed);

	/* Leading white space and a byte order mark before the '{' still mean JSON. */
	parse_okz("\xef\xbb\xbf \n {\"node\": \"ok\"}", &rep);
	assert_int_equal(rep.npu_count, 0);
	/* A line report that merely contains braces is not JSON. */
	parse_okz("node OK\nnpu 1 Alarm {brace}\n", &rep);
	assert_string_equal(rep.npus[0].message, "{brace}");

	assert_string_equal(parse_failz("{\"npus\": [{\"id\": 1, \"health\": \"OK\", "
					"\"message\": \"line\\nbreak\"}]}",
					-EINVAL),
			    "t/health:1:48: message: contains control character 0x0a; remove it");
	assert_string_equal(parse_failz("{\"npus\": [1]}", -EINVAL),
			    "t/health:1:11: npus: each entry must be an object such as {\"id\": 0, "
			    "\"health\": \"OK\"}, not a single value");
	assert_string_equal(parse_failz("{\"npus\": [{\"id\": 1, \"health\": \"OK\", "
					"\"extra\": 1}]}",
					-EINVAL),
			    "t/health:1:37: unknown key \"extra\"; expected one of: id, health, "
			    "code, message, device_ip, super_device_id, super_pod_id, "
			    "server_index");
	assert_string_equal(parse_failz("{\"npus\": [{\"id\": 1, \"health\": 2}]}", -EINVAL),
			    "t/health:1:31: npu 1: \"2\" is not a health level; use OK, Warning, "
			    "Alarm, Critical or UNKNOWN");
	assert_string_equal(parse_failz("{\"node\": null}", -EINVAL),
			    "t/health: the report is empty; write at least \"node OK\" or one "
			    "\"npu ID LEVEL\" line");
	assert_string_equal(parse_failz("{\"node\": \"OK\"} {}", -EINVAL),
			    "t/health:1:16: invalid JSON: end of file expected near '{'");
	/* A blank message is no message, as in the line format. */
	parse_okz("{\"npus\": [{\"id\": 0, \"health\": \"OK\", \"message\": \"   \"}]}", &rep);
	assert_string_equal(rep.npus[0].message, "");
}

/* The agent that writes the reports names itself: one word, once; alone it is no report. */
static void test_health_agent(void **state)
{
	struct conf_health_report rep, again;
	struct conf_error err;
	char *text = NULL, long_id[CONF_HEALTH_AGENT_MAX + 8];
	size_t len = 0;

	(void)state;
	parse_okz("agent a2-node-01:4f1c0e6d\nnode OK\n", &rep);
	assert_string_equal(rep.agent, "a2-node-01:4f1c0e6d");
	parse_okz("node OK\n", &rep);
	assert_string_equal(rep.agent, "");
	parse_okz("{\"agent\": \"h:1\", \"node\": \"OK\"}", &rep);
	assert_string_equal(rep.agent, "h:1");
	/* rendered first, and read back the same */
	parse_okz("npu 2 Critical 0x1\nAGENT h:2\n", &rep);
	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_string_equal(text, "agent h:2\nnpu 2 Critical 0x1\n");
	assert_int_equal(conf_health_parse(text, len, "t/health", 8, &again, &err), 0);
	assert_memory_equal(&rep, &again, sizeof(rep));
	free(text);
	assert_string_equal(parse_failz("agent h:1\n", -EINVAL),
			    "t/health: the report is empty; write at least \"node OK\" or one "
			    "\"npu ID LEVEL\" line");
	assert_string_equal(parse_failz("agent h:1\nagent h:2\nnode OK\n", -EINVAL),
			    "t/health:2:7: agent: already given at line 1; name the agent once");
	assert_string_equal(parse_failz("agent\nnode OK\n", -EINVAL),
			    "t/health:1:7: agent: the identity is missing; write \"agent ID\" with "
			    "1 to 159 printable ASCII characters without blanks, such as "
			    "\"a2-node-01:4f1c0e6d\"");
	assert_string_equal(parse_failz("agent h 1\nnode OK\n", -EINVAL),
			    "t/health:1:9: agent: unexpected \"1\" after the identity; write "
			    "\"agent ID\"");
	assert_non_null(strstr(parse_failz("agent caf\xc3\xa9\nnode OK\n", -EINVAL),
			       "agent: \"caf\xc3\xa9\" is not an identity"));
	memset(long_id, 'x', sizeof(long_id));
	memcpy(long_id, "agent ", 6);
	long_id[6 + CONF_HEALTH_AGENT_MAX - 1] = '\0'; /* 159 bytes of identity: accepted */
	{
		char buf[CONF_HEALTH_AGENT_MAX + 32];

		snprintf(buf, sizeof(buf), "%s\nnode OK\n", long_id);
		parse_okz(buf, &rep);
		assert_int_equal(strlen(rep.agent), CONF_HEALTH_AGENT_MAX - 1);
		snprintf(buf, sizeof(buf), "%sx\nnode OK\n", long_id);
		assert_non_null(strstr(parse_failz(buf, -EINVAL), "is not an identity"));
	}
	assert_non_null(strstr(parse_failz("{\"agent\": 7, \"node\": \"OK\"}", -EINVAL),
			       "agent: expected a string of 1 to 159 printable ASCII characters"));
	assert_non_null(strstr(parse_failz("{\"agent\": \"a b\", \"node\": \"OK\"}", -EINVAL),
			       "agent: expected a string"));
}


/* `running`: the job generations with live processes (stophold), text and JSON. */
static void test_health_running(void **state)
{
	struct conf_health_report rep, again;
	struct conf_error err;
	char *text = NULL, buf[CONF_HEALTH_RUNNING_MAX * 12 + 64];
	size_t len = 0, off;

	(void)state;
	parse_okz("node OK\n", &rep);
	assert_false(rep.has_running); /* says nothing about processes */
	parse_okz("node OK\nrunning -\n", &rep);
	assert_true(rep.has_running);
	assert_int_equal(rep.running_count, 0);
	parse_okz("Running llama/2 qwen-ft.v1/1 llama/1\nnode OK\n", &rep);
	assert_true(rep.has_running);
	assert_int_equal(rep.running_count, 3);
	assert_string_equal(rep.running[0].job, "llama");
	assert_int_equal(rep.running[0].generation, 2);
	assert_string_equal(rep.running[1].job, "qwen-ft.v1");
	assert_int_equal(rep.running[2].generation, 1);
	/* rendered last, and read back the same */
	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_string_equal(text, "node OK\nrunning llama/2 qwen-ft.v1/1 llama/1\n");
	assert_int_equal(conf_health_parse(text, len, "t/health", 8, &again, &err), 0);
	assert_memory_equal(&rep, &again, sizeof(rep));
	free(text);
	parse_okz("node OK\nrunning -\n", &rep);
	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_string_equal(text, "node OK\nrunning -\n");
	free(text);
	/* JSON */
	parse_okz("{\"node\": \"OK\", \"running\": [{\"job\": \"a\", \"generation\": 4}]}",
		  &rep);
	assert_true(rep.has_running);
	assert_int_equal(rep.running_count, 1);
	assert_string_equal(rep.running[0].job, "a");
	assert_int_equal(rep.running[0].generation, 4);
	parse_okz("{\"node\": \"OK\", \"running\": []}", &rep);
	assert_true(rep.has_running);
	assert_int_equal(rep.running_count, 0);
	/* the most a line may list, and one more */
	off = (size_t)snprintf(buf, sizeof(buf), "node OK\nrunning");
	for (unsigned i = 1; i <= CONF_HEALTH_RUNNING_MAX; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, " j/%u", i);
	snprintf(buf + off, sizeof(buf) - off, "\n");
	parse_okz(buf, &rep);
	assert_int_equal(rep.running_count, CONF_HEALTH_RUNNING_MAX);
	snprintf(buf + off, sizeof(buf) - off, " j/999\n");
	assert_non_null(strstr(parse_failz(buf, -EINVAL), "running: more than 128 job generations"));

	/* refusals: where and what to write instead */
	assert_string_equal(parse_failz("running -\n", -EINVAL),
			    "t/health: the report is empty; write at least \"node OK\" or one "
			    "\"npu ID LEVEL\" line");
	assert_string_equal(parse_failz("node OK\nrunning\n", -EINVAL),
			    "t/health:2:9: running: the list is missing; write JOB/GENERATION "
			    "words, such as \"running llama/2 qwen-ft/1\", or \"running -\" when "
			    "none runs");
	assert_string_equal(parse_failz("node OK\nrunning llama\n", -EINVAL),
			    "t/health:2:9: running: \"llama\" is not JOB/GENERATION; write "
			    "JOB/GENERATION words, such as \"running llama/2 qwen-ft/1\", or "
			    "\"running -\" when none runs (JOB a job name)");
	assert_non_null(strstr(parse_failz("node OK\nrunning Bad/1\n", -EINVAL),
			       "\"Bad/1\" is not JOB/GENERATION"));
	assert_non_null(strstr(parse_failz("node OK\nrunning /1\n", -EINVAL),
			       "\"/1\" is not JOB/GENERATION"));
	assert_string_equal(parse_failz("node OK\nrunning a/0\n", -EINVAL),
			    "t/health:2:9: running: \"a/0\" has no generation after the '/'; use "
			    "a whole number from 1 without a leading zero, such as \"a/2\"");
	assert_non_null(strstr(parse_failz("node OK\nrunning a/02\n", -EINVAL),
			       "has no generation after the '/'"));
	assert_non_null(strstr(parse_failz("node OK\nrunning a/\n", -EINVAL),
			       "has no generation after the '/'"));
	assert_non_null(strstr(parse_failz("node OK\nrunning a/4294967296\n", -EINVAL),
			       "has no generation after the '/'"));
	assert_string_equal(parse_failz("node OK\nrunning a/1 b/2 a/1\n", -EINVAL),
			    "t/health:2:17: running: \"a/1\" is listed twice; list each job "
			    "generation once");
	assert_string_equal(parse_failz("node OK\nrunning - a/1\n", -EINVAL),
			    "t/health:2:11: running: \"-\" means no job runs and stands alone; "
			    "write either \"running -\" or JOB/GENERATION words, such as "
			    "\"running llama/2 qwen-ft/1\", or \"running -\" when none runs");
	assert_non_null(strstr(parse_failz("node OK\nrunning a/1 -\n", -EINVAL),
			       "stands alone"));
	assert_string_equal(parse_failz("node OK\nrunning -\nrunning a/1\n", -EINVAL),
			    "t/health:3:8: running: already given at line 2; list the running "
			    "jobs once");
	assert_non_null(strstr(parse_failz("{\"node\": \"OK\", \"running\": \"a/1\"}",
					   -EINVAL), "running: expected a list"));
	assert_non_null(strstr(parse_failz("{\"node\": \"OK\", \"running\": [{\"job\": "
					   "\"a\"}]}", -EINVAL),
			       "running: this entry has no \"generation\""));
	assert_non_null(strstr(parse_failz("{\"node\": \"OK\", \"running\": [{\"job\": "
					   "\"a\", \"generation\": 0}]}", -EINVAL),
			       "running: generation: expected a whole number from 1"));
	assert_non_null(strstr(parse_failz("{\"node\": \"OK\", \"running\": [{\"job\": "
					   "\"a\", \"generation\": \"1\"}]}", -EINVAL),
			       "running: generation: expected a whole number"));
	assert_non_null(strstr(parse_failz("{\"node\": \"OK\", \"running\": [{\"job\": "
					   "7, \"generation\": 1}]}", -EINVAL),
			       "running: job: expected a job name as a string"));
	assert_non_null(strstr(parse_failz("{\"node\": \"OK\", \"running\": [{\"job\": "
					   "\"a\", \"generation\": 1, \"pid\": 3}]}", -EINVAL),
			       "pid"));
	assert_non_null(strstr(parse_failz("{\"node\": \"OK\", \"running\": [{\"job\": "
					   "\"a\", \"generation\": 1}, {\"job\": \"a\", "
					   "\"generation\": 1}]}", -EINVAL),
			       "running: \"a\" generation 1 is listed twice"));
	/* checked while it is written, line by line */
	assert_int_equal(conf_health_check_start("running a/1\n", 12, "t/health", 8, &err), 0);
	assert_int_equal(conf_health_check_start("node OK\nrunning a/0\n", 20, "t/health", 8,
						 &err), -EINVAL);
	assert_non_null(strstr(err.msg, "has no generation after the '/'"));
}

static void test_health_refusals(void **state)
{
	/* One line each; the data cases hold the rest. */
	assert_string_equal(parse_failz("node OK\nnpu 1 Broken\n", -EINVAL),
			    "t/health:2:7: npu 1: \"Broken\" is not a health level; use OK, "
			    "Warning, Alarm, Critical or UNKNOWN");
	assert_string_equal(parse_failz("node Fine\n", -EINVAL),
			    "t/health:1:6: node: \"Fine\" is not a health level; use OK, Warning, "
			    "Alarm, Critical or UNKNOWN");
	assert_string_equal(parse_failz("npu x OK\n", -EINVAL),
			    "t/health:1:5: npu: \"x\" is not an NPU id; use a whole number from 0 "
			    "to 7");
	assert_string_equal(parse_failz("npu 4294967296 OK\n", -EINVAL),
			    "t/health:1:5: npu \"4294967296\": no such NPU; this server has NPUs 0 "
			    "to 7");
	assert_string_equal(parse_failz("npu 123456789 OK\n", -EINVAL),
			    "t/health:1:5: npu 123456789: no such NPU; this server has NPUs 0 "
			    "to 7");
	assert_string_equal(parse_failz("node\n", -EINVAL),
			    "t/health:1:6: node: the health level is missing; write "
			    "\"node LEVEL\", e.g. \"node OK\"");
	assert_string_equal(parse_failz("ip 1\n", -EINVAL),
			    "t/health:1:6: ip 1: the address is missing; write \"ip ID ADDRESS\", "
			    "e.g. \"ip 1 10.20.0.1\"");
	assert_string_equal(parse_failz("ip\n", -EINVAL),
			    "t/health:1:4: ip: the NPU id is missing; write \"ip ID ADDRESS\", "
			    "e.g. \"ip 0 10.20.0.1\"");
	assert_string_equal(parse_failz("ip 1 10.0.0.1/24\n", -EINVAL),
			    "t/health:1:6: ip 1: \"10.0.0.1/24\" is not an IP address; use an IPv4 "
			    "address such as 10.20.0.1 or an IPv6 address such as fd00::1");
	/* A word longer than any address is refused, not copied past a buffer. */
	{
		char line[600];
		int o = snprintf(line, sizeof(line), "ip 1 ");

		memset(line + o, '1', 500);
		line[o + 500] = '\0';
		assert_non_null(strstr(parse_failz(line, -EINVAL), "is not an IP address"));
	}
	/* Columns count characters, not bytes. */
	assert_string_equal(parse_failz("npu 1 OK caf\xc3\xa9\n\xc3\xa9t\xc3\xa9 1 OK\n", -EINVAL),
			    "t/health:2:1: unknown item \"\xc3\xa9t\xc3\xa9\"; each line is \"node "
			    "LEVEL\", \"npu ID LEVEL [CODE] [MESSAGE]\", \"ip ID ADDRESS\", "
			    "\"sdid ID SDID SUPER_POD_ID SERVER_INDEX\", \"agent ID\", "
			    "\"running JOB/GENERATION ...\" or "
			    "\"usage JOB GENERATION CPU_USEC MEMORY_BYTES\"");
	/* "\r" alone ends a line, as conf_check_text() counts lines. */
	assert_string_equal(parse_failz("node OK\rnpu 9 OK\r", -EINVAL),
			    "t/health:2:5: npu 9: no such NPU; this server has NPUs 0 to 7");
	assert_string_equal(parse_fail(NULL, 4, 8, -EINVAL), "t/health: no text given");
	assert_string_equal(parse_fail(NULL, 0, 8, -EINVAL),
			    "t/health: the report is empty; write at least \"node OK\" or one "
			    "\"npu ID LEVEL\" line");
}

static void test_health_binary(void **state)
{
	static const char nul[] = "node OK\nnpu 1 O\0K\n";
	static const char nul_first[] = "\0node OK\n";
	static const char bell[] = "node OK\a\n";
	static const char latin1[] = "npu 1 Alarm caf\xe9\n";
	static const char utf16[] = "\xff\xfen\0o\0d\0e\0";

	assert_string_equal(parse_fail(nul, sizeof(nul) - 1, 8, -EINVAL),
			    "t/health:2:8: found a NUL byte; the file must be UTF-8 text, not "
			    "binary data");
	assert_string_equal(parse_fail(nul_first, sizeof(nul_first) - 1, 8, -EINVAL),
			    "t/health:1:1: found a NUL byte; the file must be UTF-8 text, not "
			    "binary data");
	assert_non_null(strstr(parse_fail(bell, sizeof(bell) - 1, 8, -EINVAL),
			       "t/health:1:8: found control character 0x07"));
	assert_non_null(strstr(parse_fail(latin1, sizeof(latin1) - 1, 8, -EINVAL),
			       "t/health:1:16: found bytes that are not valid UTF-8"));
	assert_non_null(strstr(parse_fail(utf16, sizeof(utf16) - 1, 8, -EINVAL),
			       "not valid UTF-8"));
}

static void test_health_size_limit(void **state)
{
	size_t len = CONF_HEALTH_MAX_BYTES + 1;
	char *big = malloc(len);
	struct conf_health_report rep;
	int head;

	assert_non_null(big);
	/* Exactly at the limit is read; one byte more is not. */
	head = snprintf(big, len, "node OK\n#");
	memset(big + head, 'c', CONF_HEALTH_MAX_BYTES - (size_t)head - 1);
	big[CONF_HEALTH_MAX_BYTES - 1] = '\n';
	parse_ok(big, CONF_HEALTH_MAX_BYTES, 8, &rep);
	big[CONF_HEALTH_MAX_BYTES] = '\n';
	assert_string_equal(parse_fail(big, len, 8, -EFBIG),
			    "t/health: the health report is 65537 bytes, more than the limit of "
			    "65536 bytes; make it smaller");
	/* A JSON report at the limit too. */
	memset(big, ' ', CONF_HEALTH_MAX_BYTES);
	memcpy(big, "{\"node\": \"OK\"}", 14);
	parse_ok(big, CONF_HEALTH_MAX_BYTES, 8, &rep);
	assert_true(rep.has_node);
	free(big);
}

static void test_health_not_nul_terminated(void **state)
{
	static const char text[] = "node OK\nnpu 1 Critical 0x1 end";
	static const char json[] = "{\"node\": \"OK\"}";
	struct conf_health_report rep;
	char *exact;

	/* ASan catches any read past the length. */
	exact = malloc(sizeof(text) - 1);
	assert_non_null(exact);
	memcpy(exact, text, sizeof(text) - 1);
	parse_ok(exact, sizeof(text) - 1, 8, &rep);
	assert_string_equal(rep.npus[0].message, "end");
	free(exact);
	exact = malloc(sizeof(json) - 1);
	assert_non_null(exact);
	memcpy(exact, json, sizeof(json) - 1);
	parse_ok(exact, sizeof(json) - 1, 8, &rep);
	free(exact);
}

/* Parse @buf; on success the rendering must parse to the same rendering. */
static void check_any(const char *buf, size_t len, unsigned npus)
{
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	int r;

	r = conf_health_parse(buf, len, "m", npus, &rep, &err);
	if (r == 0) {
		assert_true(rep.npu_count <= npus);
		for (size_t i = 0; i < rep.npu_count; i++)
			assert_true(rep.npus[i].id < npus);
		assert_render_round_trip(&rep, npus);
	} else {
		assert_true(r == -EINVAL || r == -EFBIG);
		assert_true(err.msg[0] != '\0');
	}
}

static void test_health_truncations_and_mutations(void **state)
{
	static const char replacements[] = { ' ', '\t', '\n', '\r', '\0', '#', '0', '9', 'x',
					     '{', '}', '"', ':', ',', '[', ']', '\\', '-', '.',
					     (char)0xc3, (char)0xff, (char)0x80 };
	const char *docs[] = { full_report, full_json };

	for (size_t d = 0; d < 2; d++) {
		size_t len = strlen(docs[d]);
		char *copy = malloc(len);

		assert_non_null(copy);
		for (size_t cut = 0; cut <= len; cut++) {
			memcpy(copy, docs[d], cut);
			check_any(copy, cut, 8);
		}
		for (size_t i = 0; i < len; i++) {
			for (size_t k = 0; k < sizeof(replacements); k++) {
				memcpy(copy, docs[d], len);
				copy[i] = replacements[k];
				check_any(copy, len, 8);
			}
		}
		free(copy);
	}
}

#ifdef TEST_CHAOS
/*
 * Run @fn with the Nth allocation failing, N = 0, 1, ... until a run sees no failure.
 * Every failing run must return -ENOMEM, or succeed when the library absorbed the
 * failure (jansson's lexer ignores a failed append to its copy of the token text, which
 * a syntax check does not need), and free all it allocated. Returns the number of
 * allocation sites exercised.
 */
static long chaos_run(int (*fn)(const void *arg), const void *arg)
{
	long n;

	for (n = 0;; n++) {
		long live_before = chaos_live;
		int r;

		chaos_injected = false;
		chaos_countdown = n;
		r = fn(arg);
		chaos_countdown = -1;
		if (!chaos_injected) {
			assert_int_equal(r, 0);
			assert_int_equal(chaos_live, live_before);
			return n;
		}
		if (r != -ENOMEM && r != 0)
			fail_msg("allocation %ld failed but the result was %d", n, r);
		if (chaos_live != live_before)
			fail_msg("allocation %ld failed and %ld allocations leaked", n,
				 chaos_live - live_before);
	}
}

static int chaos_parse_render(const void *arg)
{
	const char *text = arg;
	struct conf_health_report rep;
	struct conf_error err;
	char *out = NULL;
	size_t len;
	int r;

	r = conf_health_parse(text, strlen(text), "c", 8, &rep, &err);
	/*
	 * jansson reports some failed allocations in its lexer as syntax errors; the report
	 * is then refused as invalid JSON, which is still clean.
	 */
	if (r == -EINVAL && chaos_injected && strncmp(err.msg, "invalid JSON: ", 14) == 0)
		return -ENOMEM;
	if (r < 0)
		return r;
	r = conf_health_render(&rep, &out, &len);
	free(out);
	return r;
}
#endif

static void test_health_allocation_failures(void **state)
{
#ifdef TEST_CHAOS
	long sites;

	/* The line format allocates only to render. */
	sites = chaos_run(chaos_parse_render, full_report);
	assert_int_equal(sites, 1);
	sites = chaos_run(chaos_parse_render, full_json);
	print_message("allocation sites exercised: %ld (JSON)\n", sites);
	assert_true(sites > 5);
#else
	print_message("allocation failure injection needs glibc without ASan; not run\n");
#endif
}

/* `usage` lines: what each job generation's cgroup used, in both formats. */
static void test_health_usage(void **state)
{
	static const char text[] = "node OK\n"
				   "usage llama 2 1234567 8589934592\n"
				   "USAGE bert.v2 1 0 0\n"
				   "usage x 4294967295 9223372036854775807 1\n";
	static const char json[] =
		"{\"node\": \"OK\", \"usage\": [{\"job\": \"llama\", \"generation\": 2, "
		"\"cpu_usec\": 1234567, \"memory_bytes\": 8589934592}]}";
	struct conf_health_report rep, again;
	char *out;
	size_t len;

	parse_okz(text, &rep);
	assert_int_equal(rep.usage_count, 3);
	assert_string_equal(rep.usage[0].job, "llama");
	assert_int_equal(rep.usage[0].generation, 2);
	assert_true(rep.usage[0].cpu_usec == 1234567);
	assert_true(rep.usage[0].memory_bytes == 8589934592ULL);
	assert_string_equal(rep.usage[1].job, "bert.v2");
	assert_int_equal(rep.usage[2].generation, 4294967295u);
	assert_true(rep.usage[2].cpu_usec == CONF_HEALTH_USAGE_VALUE_MAX);
	/* renders to what parses to the same */
	assert_int_equal(conf_health_render(&rep, &out, &len), 0);
	assert_non_null(strstr(out, "usage llama 2 1234567 8589934592\n"));
	assert_non_null(strstr(out, "usage x 4294967295 9223372036854775807 1\n"));
	parse_ok(out, len, 8, &again);
	free(out);
	assert_int_equal(again.usage_count, 3);
	assert_memory_equal(again.usage, rep.usage, 3 * sizeof(rep.usage[0]));

	parse_okz(json, &rep);
	assert_int_equal(rep.usage_count, 1);
	assert_string_equal(rep.usage[0].job, "llama");
	assert_true(rep.usage[0].memory_bytes == 8589934592ULL);
	/* usage alone is not a report (it says nothing about health) */
	assert_non_null(strstr(parse_failz("usage llama 2 1 1\n", -EINVAL), "the report is empty"));
}

static void test_health_usage_refused(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "node OK\nusage llama 2 1\n", "t/health:2:17: usage: the line has 3 of 4 words" },
		{ "node OK\nusage\n", "usage: the line has 0 of 4 words" },
		{ "node OK\nusage Llama 2 1 1\n", "usage: job \"Llama\" is not a job name" },
		{ "node OK\nusage ../x 2 1 1\n", "job \"../x\" is not a job name" },
		{ "node OK\nusage llama 0 1 1\n", "t/health:2:13: usage: generation \"0\" is not a "
						  "generation" },
		{ "node OK\nusage llama 4294967296 1 1\n", "generation \"4294967296\" is not" },
		{ "node OK\nusage llama 02 1 1\n", "generation \"02\"" },
		{ "node OK\nusage llama 2 -1 1\n", "cpu_usec \"-1\" is not a whole number" },
		{ "node OK\nusage llama 2 18446744073709551616 1\n", "cpu_usec \"18446744073709551616\"" },
		/* JSON integers are signed 64-bit: one more than INT64_MAX would print negative */
		{ "node OK\nusage llama 2 9223372036854775808 1\n",
		  "cpu_usec \"9223372036854775808\" is not a whole number from 0 to "
		  "9223372036854775807" },
		{ "node OK\nusage llama 2 1 9223372036854775808\n",
		  "memory_bytes \"9223372036854775808\" is not a whole number from 0 to "
		  "9223372036854775807" },
		{ "{\"node\": \"OK\", \"usage\": [{\"job\": \"a\", \"generation\": 1, \"cpu_usec\": 1, "
		  "\"memory_bytes\": 9223372036854775808}]}", "too big integer" },
		{ "node OK\nusage llama 2 1 1.5\n", "memory_bytes \"1.5\" is not a whole number" },
		{ "node OK\nusage llama 2 1 1 extra\n", "unexpected \"extra\" after the memory bytes" },
		{ "node OK\nusage llama 2 1 1\nusage llama 2 3 4\n",
		  "t/health:3:7: usage: job llama generation 2 already given at line 2" },
		{ "{\"node\": \"OK\", \"usage\": {}}", "usage: expected a list" },
		{ "{\"node\": \"OK\", \"usage\": [1]}", "usage: each entry must be an object" },
		{ "{\"node\": \"OK\", \"usage\": [{\"job\": \"a\", \"generation\": 1, \"cpu_usec\": 1}]}",
		  "this entry has no \"memory_bytes\"" },
		{ "{\"node\": \"OK\", \"usage\": [{\"job\": \"a\", \"generation\": \"1\", \"cpu_usec\": 1, "
		  "\"memory_bytes\": 1}]}", "\"generation\" must be a whole number" },
		{ "{\"node\": \"OK\", \"usage\": [{\"job\": 7, \"generation\": 1, \"cpu_usec\": 1, "
		  "\"memory_bytes\": 1}]}", "\"job\" must be a string" },
		{ "{\"node\": \"OK\", \"usage\": [{\"job\": \"a\", \"generation\": 1, \"cpu_usec\": -1, "
		  "\"memory_bytes\": 1}]}", "cpu_usec \"-1\" is not a whole number" },
		{ "{\"node\": \"OK\", \"usage\": [{\"job\": \"a\", \"generation\": 1, \"cpu_usec\": 1, "
		  "\"memory_bytes\": 1, \"rss\": 2}]}", "rss" },
	};
	char big[CONF_HEALTH_MAX_BYTES];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *msg = parse_failz(cases[i].text, -EINVAL);

		if (!strstr(msg, cases[i].want))
			fail_msg("%s: got \"%s\", want \"%s\"", cases[i].text, msg, cases[i].want);
	}
	/* one more generation than a report holds */
	n += (size_t)snprintf(big, sizeof(big), "node OK\n");
	for (int i = 0; i <= CONF_HEALTH_USAGE_MAX; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "usage j%d 1 1 1\n", i);
	assert_non_null(strstr(parse_fail(big, n, 8, -EINVAL), "more than 128 job generations"));
	/* while a report is written, a bad usage line is a write error */
	{
		struct conf_error err = { 0 };
		const char *partial = "node OK\nusage llama 0 1 1\n";

		assert_int_equal(conf_health_check_start(partial, strlen(partial), "t/health", 8,
							 &err), -EINVAL);
	}
}

static void test_health_render(void **state)
{
	struct conf_health_report rep = { 0 };
	char *text;
	size_t len;

	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_string_equal(text, "");
	assert_int_equal(len, 0);
	free(text);

	rep.has_node = true;
	rep.node = CONF_HEALTH_ALARM;
	rep.npu_count = 2;
	rep.npus[0] = (struct conf_health_npu){ .id = 3, .has_level = true,
						.level = CONF_HEALTH_CRITICAL, .code = "0x80C98000",
						.message = "HBM uncorrectable ECC",
						.device_ip = "10.20.0.4" };
	rep.npus[1] = (struct conf_health_npu){ .id = 1, .device_ip = "fd00::2" };
	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_string_equal(text, "node Alarm\n"
				  "npu 3 Critical 0x80C98000 HBM uncorrectable ECC\n"
				  "ip 3 10.20.0.4\n"
				  "ip 1 fd00::2\n");
	free(text);
}

/* ---- the fault-policy keys of the cluster configuration ---- */

#define ONE_SERVER                                                                            \
	"servers:\n"                                                                          \
	"  - {name: n1, host_ip: 10.0.1.1, type: atlas800t-a2, switch: leaf-1}\n"

static struct conf_cluster *cluster_ok(const char *text)
{
	struct conf_cluster *c = NULL;
	struct conf_error err = { 0 };
	char msg[1024];

	if (conf_cluster_parse(text, strlen(text), "c.yaml", &c, &err) != 0)
		fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
	return c;
}

/*
 * Device IPs HCCL cannot use are refused at the report (issue 14 item 8, issue 15 item
 * 9): the unspecified, broadcast, loopback, multicast and link-local addresses, and one
 * address on two NPUs of the server; in both formats, and while the report is written.
 */
static void test_health_device_ip_rules(void **state)
{
	static const char *const bad[] = { "0.0.0.0", "0.1.2.3", "255.255.255.255",
					   "127.0.0.1", "127.9.9.9", "224.0.0.1",
					   "239.1.1.1", "169.254.3.4", "::", "::1",
					   "ff02::1", "fe80::1", "FE80::1:2" };
	static const char *const why[] = { "unspecified", "unspecified", "broadcast",
					   "loopback", "loopback", "multicast",
					   "multicast", "link-local", "unspecified", "loopback",
					   "multicast", "link-local", "link-local" };
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	char text[256];
	const char *msg;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "npu 0 OK\nip 2 %s\n", bad[i]);
		msg = parse_failz(text, -EINVAL);
		if (!strstr(msg, why[i]) || !strstr(msg, "t/health:2:"))
			fail_msg("%s: %s", bad[i], msg);
		/* a shell's echo sees it at its write */
		assert_int_equal(conf_health_check_start(text, strlen(text), "t/health", 8, &err),
				 -EINVAL);
		snprintf(text, sizeof(text), "{\"npus\": [{\"id\": 2, \"device_ip\": \"%s\"}]}",
			 bad[i]);
		msg = parse_failz(text, -EINVAL);
		if (!strstr(msg, why[i]))
			fail_msg("json %s: %s", bad[i], msg);
	}
	assert_null(conf_device_ip_problem("10.20.0.1"));
	assert_null(conf_device_ip_problem("fd00::1"));
	assert_null(conf_device_ip_problem("2001:db8::8"));
	assert_non_null(conf_device_ip_problem("fe80"));

	/* one address on two NPUs of one server, also written differently */
	msg = parse_failz("ip 0 10.20.0.1\nip 1 10.20.0.2\nip 4 10.20.0.1\n", -EINVAL);
	assert_non_null(strstr(msg, "t/health:3:"));
	assert_non_null(strstr(msg, "NPU 0"));
	msg = parse_failz("ip 0 fd00::1\nip 1 FD00:0::1\n", -EINVAL);
	assert_non_null(strstr(msg, "NPU 0"));
	msg = parse_failz("{\"npus\": [{\"id\": 0, \"device_ip\": \"10.0.0.1\"},"
			  " {\"id\": 1, \"device_ip\": \"10.0.0.1\"}]}",
			  -EINVAL);
	assert_non_null(strstr(msg, "NPU 0"));
	parse_okz("ip 0 10.20.0.1\nip 1 10.20.0.2\n", &rep);
	assert_int_equal(rep.npu_count, 2);
}

/* The SDID of A3 die @dev of the server at @server_index (DCMI SDID layout). */
static unsigned long sdid_of(unsigned server_index, unsigned dev)
{
	return (unsigned long)server_index << 22 | (dev / 2) << 18 | (dev % 2) << 16 | dev;
}

/*
 * `sdid NPU SDID SUPER_POD_ID SERVER_INDEX` (issue 14 item 6): what npu-smi's super-pod
 * information says of each NPU, checked against the SDID's own fields.
 */
static void test_health_sdid(void **state)
{
	struct conf_health_report rep, again;
	char text[512], *out;
	size_t len;
	const char *msg;

	(void)state;
	/* a published A3 SDID: server index 27, device 2 (chip 1, die 0) */
	assert_int_equal(sdid_of(27, 2), 113508354UL);
	snprintf(text, sizeof(text), "npu 0 OK\nsdid 0 %lu 1 27\nsdid 3 %lu 1 27\n",
		 sdid_of(27, 0), sdid_of(27, 3));
	parse_ok(text, strlen(text), 16, &rep);
	assert_int_equal(rep.npu_count, 2);
	assert_true(rep.npus[0].has_sdid);
	assert_int_equal(rep.npus[0].sdid, 113246208U);
	assert_int_equal(rep.npus[0].super_pod_id, 1);
	assert_int_equal(rep.npus[0].server_index, 27);
	assert_true(rep.npus[1].has_sdid);
	assert_false(rep.npus[1].has_level);
	assert_int_equal(rep.npus[1].sdid, sdid_of(27, 3));
	/* renders to what parses again the same */
	assert_int_equal(conf_health_render(&rep, &out, &len), 0);
	assert_non_null(strstr(out, "sdid 3 "));
	parse_ok(out, len, 16, &again);
	assert_memory_equal(&rep, &again, sizeof(rep));
	free(out);

	/* JSON */
	snprintf(text, sizeof(text),
		 "{\"npus\": [{\"id\": 5, \"health\": \"OK\", \"super_device_id\": %lu, "
		 "\"super_pod_id\": 7, \"server_index\": 3}]}",
		 sdid_of(3, 5));
	parse_ok(text, strlen(text), 16, &rep);
	assert_true(rep.npus[0].has_sdid);
	assert_int_equal(rep.npus[0].sdid, sdid_of(3, 5));
	assert_int_equal(rep.npus[0].super_pod_id, 7);

	/* refusals, each naming what is wrong */
	snprintf(text, sizeof(text), "sdid 1 %lu 1 27\n", sdid_of(27, 0));
	msg = parse_fail(text, strlen(text), 16, -EINVAL);
	assert_non_null(strstr(msg, "device 0"));
	snprintf(text, sizeof(text), "sdid 0 %lu 1 26\n", sdid_of(27, 0));
	msg = parse_fail(text, strlen(text), 16, -EINVAL);
	assert_non_null(strstr(msg, "server index 27"));
	snprintf(text, sizeof(text), "sdid 0 %lu 1 48\n", sdid_of(48, 0));
	msg = parse_fail(text, strlen(text), 16, -EINVAL);
	assert_non_null(strstr(msg, "0 to 47"));
	msg = parse_fail("sdid 0 4294967296 1 0\n", 22, 16, -EINVAL);
	assert_non_null(strstr(msg, "SDID"));
	msg = parse_fail("sdid 0 abc 1 0\n", 15, 16, -EINVAL);
	assert_non_null(strstr(msg, "SDID"));
	msg = parse_fail("sdid 0 0 1\n", 11, 16, -EINVAL);
	assert_non_null(strstr(msg, "missing"));
	msg = parse_fail("sdid 0 0 1 0 extra\n", 19, 16, -EINVAL);
	assert_non_null(strstr(msg, "unexpected"));
	/* die field against the device: device 1 is chip 0 die 1 */
	snprintf(text, sizeof(text), "sdid 1 %lu 1 0\n", 1UL);
	msg = parse_fail(text, strlen(text), 16, -EINVAL);
	assert_non_null(strstr(msg, "chip"));
	/* given twice */
	snprintf(text, sizeof(text), "sdid 0 %lu 1 2\nsdid 0 %lu 1 2\n", sdid_of(2, 0),
		 sdid_of(2, 0));
	msg = parse_fail(text, strlen(text), 16, -EINVAL);
	assert_non_null(strstr(msg, "already"));
	/* one server is in one super pod, at one server index */
	snprintf(text, sizeof(text), "sdid 0 %lu 1 2\nsdid 1 %lu 2 2\n", sdid_of(2, 0),
		 sdid_of(2, 1));
	msg = parse_fail(text, strlen(text), 16, -EINVAL);
	assert_non_null(strstr(msg, "super pod 1"));
	snprintf(text, sizeof(text), "sdid 0 %lu 1 2\nsdid 1 %lu 1 3\n", sdid_of(2, 0),
		 sdid_of(3, 1));
	msg = parse_fail(text, strlen(text), 16, -EINVAL);
	assert_non_null(strstr(msg, "server index 2"));
	snprintf(text, sizeof(text), "sdid 0 %lu 1 2\nsdid 1 %lu 1 3\n", sdid_of(2, 0),
		 sdid_of(3, 1));
	assert_int_equal(conf_health_check_start(text, strlen(text), "t/health", 16, NULL),
			 -EINVAL);
}

static void test_cluster_fault_policy(void **state)
{
	struct conf_cluster *c;
	char *text;
	size_t len;

	/* Defaults; the hold time follows the check interval. */
	c = cluster_ok(ONE_SERVER);
	assert_int_equal(c->fault_hold_sec, 10);
	assert_int_equal(c->fault_escalate_count, 3);
	assert_int_equal(c->fault_escalate_window_sec, 3600);
	assert_int_equal(c->stop_grace_sec, 30);
	assert_int_equal(conf_cluster_render_yaml(c, &text, &len), 0);
	assert_non_null(strstr(text, "\n  fault_hold_time: 10\n  fault_escalate_count: 3\n"
				     "  fault_escalate_window: 3600\n  stop_grace_period: 30\n"));
	free(text);
	conf_cluster_free(c);

	c = cluster_ok("cluster: {fault_check_interval: 1m}\n" ONE_SERVER);
	assert_int_equal(c->fault_hold_sec, 120);
	conf_cluster_free(c);

	c = cluster_ok("cluster:\n  fault_check_interval: 1m\n  fault_hold_time: 0\n"
		       "  fault_escalate_count: 1000\n  fault_escalate_window: 7d\n"
		       "  stop_grace_period: 1h\n" ONE_SERVER);
	assert_int_equal(c->fault_hold_sec, 0);
	assert_int_equal(c->fault_escalate_count, 1000);
	assert_int_equal(c->fault_escalate_window_sec, 7 * 86400);
	assert_int_equal(c->stop_grace_sec, 3600);
	conf_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health_level_names),
		cmocka_unit_test(test_health_lines),
		cmocka_unit_test(test_health_codes),
		cmocka_unit_test(test_health_message_limit),
		cmocka_unit_test(test_health_server_sizes),
		cmocka_unit_test(test_health_json),
		cmocka_unit_test(test_health_agent),
		cmocka_unit_test(test_health_running),
		cmocka_unit_test(test_health_refusals),
		cmocka_unit_test(test_health_binary),
		cmocka_unit_test(test_health_size_limit),
		cmocka_unit_test(test_health_not_nul_terminated),
		cmocka_unit_test(test_health_truncations_and_mutations),
		cmocka_unit_test(test_health_allocation_failures),
		cmocka_unit_test(test_health_render),
		cmocka_unit_test(test_health_usage),
		cmocka_unit_test(test_health_usage_refused),
		cmocka_unit_test(test_health_device_ip_rules),
		cmocka_unit_test(test_health_sdid),
		cmocka_unit_test(test_cluster_fault_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
