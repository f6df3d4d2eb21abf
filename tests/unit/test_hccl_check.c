/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rank-table checker (tests/hccl_check.c): a valid table of each
 * version passes; each rule, broken by a small hand-made table, fails with a message
 * that starts with the JSON path of the offending value.
 *
 * Tables are built with jansson from a valid one (make_table) and then broken in one
 * place, so every failing case differs from a passing table by exactly the rule it
 * tests. The first case uses literal text, as a renderer would write it.
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

#include <jansson.h>

#include "hccl_check.h"
#include "test_util.h"

#define WHY_LEN 512

/* ---- building tables ---- */

static void set_str(json_t *obj, const char *key, const char *val)
{
	assert_int_equal(json_object_set_new(obj, key, json_string(val)), 0);
}

static void set_strf(json_t *obj, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_strf(json_t *obj, const char *key, const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	set_str(obj, key, buf);
}

static json_t *server_of(json_t *t, size_t s)
{
	json_t *srv = json_array_get(json_object_get(t, "server_list"), s);

	assert_non_null(srv);
	return srv;
}

static json_t *dev_of(json_t *t, size_t s, size_t d)
{
	json_t *dev = json_array_get(json_object_get(server_of(t, s), "device"), d);

	assert_non_null(dev);
	return dev;
}

/* Pod @p of a version "1.2" table. */
static json_t *pod_of(json_t *t, size_t p)
{
	json_t *pod = json_array_get(json_object_get(t, "super_pod_list"), p);

	assert_non_null(pod);
	return pod;
}

/*
 * make_table() - a valid table: @nservers servers "node<s>" of @ndev NPUs each,
 * device_id 0..@ndev-1, device_ip 10.0.<s>.<d+1>, ranks server by server.
 * Version "1.2" when @per_pod > 0: super_device_id <s*ndev+d>, pods "pod<p>" of
 * @per_pod consecutive servers. Returns a new reference.
 */
static json_t *make_table(size_t nservers, size_t ndev, size_t per_pod)
{
	json_t *t = json_object(), *servers = json_array(), *pods = NULL, *pod = NULL;
	size_t s, d;

	assert_non_null(t);
	assert_non_null(servers);
	set_str(t, "version", per_pod ? "1.2" : "1.0");
	set_strf(t, "server_count", "%zu", nservers);
	if (per_pod) {
		pods = json_array();
		assert_non_null(pods);
	}
	for (s = 0; s < nservers; s++) {
		json_t *srv = json_object(), *devs = json_array();

		assert_non_null(srv);
		assert_non_null(devs);
		set_strf(srv, "server_id", "node%zu", s);
		set_strf(srv, "host_ip", "192.168.0.%zu", s + 1);
		set_strf(srv, "pod_ip", "172.16.0.%zu", s + 1);
		set_str(srv, "host_nic_ip", "reserve");
		for (d = 0; d < ndev; d++) {
			json_t *dev = json_object();

			assert_non_null(dev);
			set_strf(dev, "device_id", "%zu", d);
			set_strf(dev, "device_ip", "10.0.%zu.%zu", s, d + 1);
			if (per_pod)
				set_strf(dev, "super_device_id", "%zu", s * ndev + d);
			set_strf(dev, "rank_id", "%zu", s * ndev + d);
			assert_int_equal(json_array_append_new(devs, dev), 0);
		}
		assert_int_equal(json_object_set_new(srv, "device", devs), 0);
		assert_int_equal(json_array_append_new(servers, srv), 0);

		if (per_pod) {
			json_t *entry = json_object();

			if (s % per_pod == 0) {
				pod = json_object();
				assert_non_null(pod);
				set_strf(pod, "super_pod_id", "pod%zu", s / per_pod);
				assert_int_equal(
					json_object_set_new(pod, "server_list", json_array()), 0);
				assert_int_equal(json_array_append_new(pods, pod), 0);
			}
			assert_non_null(entry);
			set_strf(entry, "server_id", "node%zu", s);
			assert_int_equal(
				json_array_append_new(json_object_get(pod, "server_list"), entry),
				0);
		}
	}
	assert_int_equal(json_object_set_new(t, "server_list", servers), 0);
	if (pods)
		assert_int_equal(json_object_set_new(t, "super_pod_list", pods), 0);
	set_str(t, "status", "completed");
	return t;
}

/* ---- checking ---- */

/* Checks @t (consumed) with @opts; the verdict goes to @why (WHY_LEN bytes). */
static int check(json_t *t, const struct hccl_check_opts *opts, char *why)
{
	char *text = json_dumps(t, JSON_COMPACT);
	int r;

	assert_non_null(text);
	r = hccl_check_ranktable(text, strlen(text), opts, why, WHY_LEN);
	free(text);
	json_decref(t);
	return r;
}

static void expect_ok(json_t *t, const struct hccl_check_opts *opts)
{
	char why[WHY_LEN];
	int r = check(t, opts, why);

	if (r != 0)
		fail_msg("expected a valid table, got %d: %s", r, why);
	assert_string_equal(why, "");
}

/*
 * The check must fail with -EINVAL and a message that starts with "@path: " and
 * contains @words (a fragment of the explanation, NULL = any).
 */
static void expect_fail(json_t *t, const struct hccl_check_opts *opts, const char *path,
			const char *words)
{
	char why[WHY_LEN];
	size_t n = strlen(path);
	int r = check(t, opts, why);

	if (r != -EINVAL)
		fail_msg("expected -EINVAL naming %s, got %d: %s", path, r, why);
	print_message("    why: %s\n", why);
	if (strncmp(why, path, n) != 0 || strncmp(why + n, ": ", 2) != 0)
		fail_msg("message does not start with \"%s: \": %s", path, why);
	if (words && !strstr(why, words))
		fail_msg("message lacks \"%s\": %s", words, why);
	assert_null(strchr(why, '\n'));
	assert_true(why[strlen(why) - 1] != '.');
}

static const struct hccl_check_opts opts_910 = { .npus_per_server = 8, .ring_910 = true };

/* ---- valid tables ---- */

static const char two_servers_v10[] =
	"{\n"
	"  \"version\": \"1.0\",\n"
	"  \"server_count\": \"2\",\n"
	"  \"server_list\": [\n"
	"    {\"server_id\": \"node0\", \"host_ip\": \"192.168.0.1\", \"pod_ip\": \"172.16.0.1\",\n"
	"     \"host_nic_ip\": \"reserve\", \"device\": [\n"
	"      {\"device_id\": \"0\", \"device_ip\": \"10.0.0.1\", \"rank_id\": \"0\"},\n"
	"      {\"device_id\": \"1\", \"device_ip\": \"10.0.0.2\", \"rank_id\": \"1\"},\n"
	"      {\"device_id\": \"2\", \"device_ip\": \"10.0.0.3\", \"rank_id\": \"2\"},\n"
	"      {\"device_id\": \"3\", \"device_ip\": \"10.0.0.4\", \"rank_id\": \"3\"},\n"
	"      {\"device_id\": \"4\", \"device_ip\": \"10.0.0.5\", \"rank_id\": \"4\"},\n"
	"      {\"device_id\": \"5\", \"device_ip\": \"10.0.0.6\", \"rank_id\": \"5\"},\n"
	"      {\"device_id\": \"6\", \"device_ip\": \"10.0.0.7\", \"rank_id\": \"6\"},\n"
	"      {\"device_id\": \"7\", \"device_ip\": \"10.0.0.8\", \"rank_id\": \"7\"}]},\n"
	"    {\"server_id\": \"node1\", \"host_ip\": \"192.168.0.2\", \"pod_ip\": \"172.16.0.2\",\n"
	"     \"host_nic_ip\": \"reserve\", \"device\": [\n"
	"      {\"device_id\": \"0\", \"device_ip\": \"10.0.1.1\", \"rank_id\": \"8\"},\n"
	"      {\"device_id\": \"1\", \"device_ip\": \"10.0.1.2\", \"rank_id\": \"9\"},\n"
	"      {\"device_id\": \"2\", \"device_ip\": \"10.0.1.3\", \"rank_id\": \"10\"},\n"
	"      {\"device_id\": \"3\", \"device_ip\": \"10.0.1.4\", \"rank_id\": \"11\"},\n"
	"      {\"device_id\": \"4\", \"device_ip\": \"10.0.1.5\", \"rank_id\": \"12\"},\n"
	"      {\"device_id\": \"5\", \"device_ip\": \"10.0.1.6\", \"rank_id\": \"13\"},\n"
	"      {\"device_id\": \"6\", \"device_ip\": \"10.0.1.7\", \"rank_id\": \"14\"},\n"
	"      {\"device_id\": \"7\", \"device_ip\": \"10.0.1.8\", \"rank_id\": \"15\"}]}\n"
	"  ],\n"
	"  \"status\": \"completed\"\n"
	"}\n";

static void test_hccl_check_accepts_two_servers_16_ranks(void **state)
{
	const struct hccl_check_opts all = {
		.npus_per_server = 8,
		.require_completed = true,
		.expect_ranks = 16,
		.ring_910 = true,
	};
	char why[WHY_LEN] = "junk";

	assert_int_equal(hccl_check_ranktable(two_servers_v10, strlen(two_servers_v10), &all, why,
					      sizeof(why)),
			 0);
	assert_string_equal(why, "");
	assert_int_equal(hccl_check_ranktable(two_servers_v10, strlen(two_servers_v10), NULL, why,
					      sizeof(why)),
			 0);
	/* the generator agrees with the literal text */
	expect_ok(make_table(2, 8, 0), &all);
}

static void test_hccl_check_accepts_v12_super_pods(void **state)
{
	const struct hccl_check_opts a3 = { .npus_per_server = 16, .expect_ranks = 64 };

	expect_ok(make_table(4, 16, 2), &a3);
	expect_ok(make_table(4, 16, 4), &a3);
	expect_ok(make_table(1, 2, 1), NULL);
}

static void test_hccl_check_accepts_super_device_id_reused_in_another_pod(void **state)
{
	json_t *t = make_table(2, 2, 1);

	/* super_device_id is unique within a pod only (HCCL EI0014) */
	set_str(dev_of(t, 1, 0), "super_device_id", "0");
	set_str(dev_of(t, 1, 1), "super_device_id", "1");
	expect_ok(t, NULL);
}

static void test_hccl_check_accepts_single_server_without_device_ip(void **state)
{
	json_t *t = make_table(1, 4, 0);
	size_t d;

	for (d = 0; d < 4; d++)
		json_object_del(dev_of(t, 0, d), "device_ip");
	json_object_del(server_of(t, 0), "host_ip");
	json_object_del(server_of(t, 0), "pod_ip");
	json_object_del(server_of(t, 0), "host_nic_ip");
	expect_ok(t, NULL);
}

static void test_hccl_check_accepts_initializing_status(void **state)
{
	json_t *t = make_table(2, 2, 0);

	set_str(t, "status", "initializing");
	expect_ok(t, NULL);
}

static void test_hccl_check_accepts_ipv6_device_ips(void **state)
{
	json_t *t = make_table(2, 2, 0);

	set_str(dev_of(t, 0, 0), "device_ip", "fd00::1");
	set_str(dev_of(t, 0, 1), "device_ip", "fd00::2");
	set_str(dev_of(t, 1, 0), "device_ip", "fd00::1:1");
	set_str(dev_of(t, 1, 1), "device_ip", "fd00::1:2");
	set_str(server_of(t, 0), "host_ip", "2001:db8::1");
	expect_ok(t, NULL);
}

static void test_hccl_check_accepts_910_inside_one_ring(void **state)
{
	json_t *t = make_table(2, 4, 0);
	size_t d;

	/* server 1 uses the upper ring */
	for (d = 0; d < 4; d++)
		set_strf(dev_of(t, 1, d), "device_id", "%zu", d + 4);
	expect_ok(t, &opts_910);

	t = make_table(3, 1, 0);
	set_str(dev_of(t, 2, 0), "device_id", "7");
	expect_ok(t, &opts_910);

	t = make_table(1, 2, 0);
	set_str(dev_of(t, 0, 0), "device_id", "6");
	set_str(dev_of(t, 0, 1), "device_id", "7");
	expect_ok(t, &opts_910);
	expect_ok(make_table(2, 8, 0), &opts_910);
}

static void test_hccl_check_accepts_extra_server_and_device_keys(void **state)
{
	json_t *t = make_table(1, 2, 0);

	/* fields other tools add (MindCluster hccl.json) */
	set_str(server_of(t, 0), "container_ip", "192.168.149.1");
	set_str(server_of(t, 0), "hardware_type", "800I-A2-32G");
	set_str(dev_of(t, 0, 1), "device_logical_id", "1");
	expect_ok(t, NULL);
}

/* ---- rule 1: JSON ---- */

static void test_hccl_check_rejects_text_that_is_not_json(void **state)
{
	static const char text[] = "{\"version\": \"1.0\", \"server_count\": ";
	char why[WHY_LEN];

	assert_int_equal(hccl_check_ranktable(text, strlen(text), NULL, why, sizeof(why)), -EINVAL);
	print_message("    why: %s\n", why);
	assert_non_null(strstr(why, "line 1"));

	assert_int_equal(hccl_check_ranktable("[]", 2, NULL, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "array"));
}

static void test_hccl_check_rejects_duplicate_keys(void **state)
{
	static const char text[] = "{\"version\": \"1.0\", \"version\": \"1.2\"}";
	char why[WHY_LEN];

	assert_int_equal(hccl_check_ranktable(text, strlen(text), NULL, why, sizeof(why)), -EINVAL);
	print_message("    why: %s\n", why);
	assert_non_null(strstr(why, "duplicate"));
}

static void test_hccl_check_reads_only_len_bytes(void **state)
{
	json_t *t = make_table(1, 1, 0);
	char *text = json_dumps(t, JSON_COMPACT);
	char why[WHY_LEN];
	size_t n;

	/* not NUL-terminated: garbage after @len bytes is not read */
	json_decref(t);
	assert_non_null(text);
	n = strlen(text);
	text = realloc(text, n + 8);
	assert_non_null(text);
	memcpy(text + n, "garbage!", 8);
	assert_int_equal(hccl_check_ranktable(text, n, NULL, why, sizeof(why)), 0);
	free(text);
}

/* ---- rule 2: every value a string ---- */

static void test_hccl_check_rejects_integer_rank_id(void **state)
{
	json_t *t = make_table(2, 2, 0);

	json_object_set_new(dev_of(t, 0, 0), "rank_id", json_integer(0));
	expect_fail(t, NULL, "server_list[0].device[0].rank_id", "\"0\"");
}

static void test_hccl_check_rejects_integer_server_count(void **state)
{
	json_t *t = make_table(2, 2, 0);

	json_object_set_new(t, "server_count", json_integer(2));
	expect_fail(t, NULL, "server_count", "number");
}

static void test_hccl_check_rejects_integer_device_id(void **state)
{
	json_t *t = make_table(2, 2, 0);

	json_object_set_new(dev_of(t, 1, 1), "device_id", json_integer(1));
	expect_fail(t, NULL, "server_list[1].device[1].device_id", "number");
}

static void test_hccl_check_rejects_real_version(void **state)
{
	json_t *t = make_table(1, 1, 0);

	json_object_set_new(t, "version", json_real(1.0));
	expect_fail(t, NULL, "version", "write \"1.0\"");
}

static void test_hccl_check_rejects_null_and_boolean_in_extra_keys(void **state)
{
	json_t *t = make_table(2, 1, 0);

	json_object_set_new(server_of(t, 1), "hardware_type", json_null());
	expect_fail(t, NULL, "server_list[1].hardware_type", "null");

	t = make_table(2, 1, 1);
	json_object_set_new(json_array_get(json_object_get(pod_of(t, 1), "server_list"), 0),
			    "spare", json_true());
	expect_fail(t, NULL, "super_pod_list[1].server_list[0].spare", "boolean");
}

/* ---- rule 3: top level ---- */

static void test_hccl_check_rejects_unknown_version(void **state)
{
	json_t *t = make_table(1, 1, 0);

	set_str(t, "version", "1.1");
	expect_fail(t, NULL, "version", "\"1.1\"");

	t = make_table(1, 1, 0);
	json_object_del(t, "version");
	expect_fail(t, NULL, "version", "missing");
}

static void test_hccl_check_rejects_unknown_top_level_key(void **state)
{
	json_t *t = make_table(1, 1, 0);

	set_str(t, "server_group_list", "x");
	expect_fail(t, NULL, "server_group_list", "unknown");

	t = make_table(1, 1, 0);
	set_str(t, "server list", "x");
	expect_fail(t, NULL, "[\"server list\"]", "unknown");
}

static void test_hccl_check_rejects_super_pod_list_in_v10(void **state)
{
	json_t *t = make_table(2, 1, 1);

	set_str(t, "version", "1.0");
	expect_fail(t, NULL, "super_pod_list", "\"1.2\"");
}

/* ---- rule 4: server_count ---- */

static void test_hccl_check_rejects_server_count_mismatch(void **state)
{
	json_t *t = make_table(2, 2, 0);

	set_str(t, "server_count", "3");
	expect_fail(t, NULL, "server_count", "2 servers");
}

static void test_hccl_check_rejects_non_canonical_decimals(void **state)
{
	static const char *const bad[] = {
		"02", " 2", "+2", "-2", "2.0", "", "0x2", "1e9", "9999999999",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *t = make_table(2, 1, 0);

		set_str(t, "server_count", bad[i]);
		expect_fail(t, NULL, "server_count", NULL);
	}
}

static void test_hccl_check_rejects_empty_server_list(void **state)
{
	json_t *t = make_table(1, 1, 0);

	set_str(t, "server_count", "0");
	json_array_clear(json_object_get(t, "server_list"));
	expect_fail(t, NULL, "server_list", "empty");
}

/* ---- rule 5: status ---- */

static void test_hccl_check_rejects_unknown_status(void **state)
{
	json_t *t = make_table(2, 2, 0);

	set_str(t, "status", "done");
	expect_fail(t, NULL, "status", "\"done\"");
}

static void test_hccl_check_rejects_initializing_when_completed_required(void **state)
{
	const struct hccl_check_opts o = { .require_completed = true };
	json_t *t = make_table(2, 2, 0);

	set_str(t, "status", "initializing");
	expect_fail(t, &o, "status", "\"completed\"");
}

/* ---- rule 6: servers ---- */

static void test_hccl_check_rejects_duplicate_server_id(void **state)
{
	json_t *t = make_table(3, 1, 0);

	set_str(server_of(t, 2), "server_id", "node0");
	expect_fail(t, NULL, "server_list[2].server_id", "server_list[0]");
}

static void test_hccl_check_rejects_bad_server_id_length(void **state)
{
	char id[HCCL_CHECK_SERVER_ID_MAX + 2];
	json_t *t;

	memset(id, 'a', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	t = make_table(2, 1, 0);
	set_str(server_of(t, 1), "server_id", id);
	expect_fail(t, NULL, "server_list[1].server_id", "65 bytes");

	id[HCCL_CHECK_SERVER_ID_MAX] = '\0';
	t = make_table(2, 1, 0);
	set_str(server_of(t, 1), "server_id", id);
	expect_ok(t, NULL);

	t = make_table(2, 1, 0);
	set_str(server_of(t, 0), "server_id", "");
	expect_fail(t, NULL, "server_list[0].server_id", "empty");
}

static void test_hccl_check_rejects_bad_host_ip(void **state)
{
	static const char *const bad[] = {
		"10.0.0.256", "node1", "10.0.0.1/24", "10.0.0.1:22", " 10.0.0.1", "fe80::1%eth0", ""
	};
	json_t *t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = make_table(2, 2, 0);
		set_str(server_of(t, 1), "host_ip", bad[i]);
		expect_fail(t, NULL, "server_list[1].host_ip", "not an IPv4 or IPv6 address");
	}
	t = make_table(2, 2, 0);
	set_str(server_of(t, 0), "pod_ip", "pod-0");
	expect_fail(t, NULL, "server_list[0].pod_ip", NULL);
}

static void test_hccl_check_rejects_host_nic_ip_not_reserve(void **state)
{
	json_t *t = make_table(1, 1, 0);

	set_str(server_of(t, 0), "host_nic_ip", "192.168.0.1");
	expect_fail(t, NULL, "server_list[0].host_nic_ip", "\"reserve\"");
}

static void test_hccl_check_rejects_missing_or_empty_device_list(void **state)
{
	json_t *t = make_table(2, 2, 0);

	json_array_clear(json_object_get(server_of(t, 1), "device"));
	expect_fail(t, NULL, "server_list[1].device", "empty");

	t = make_table(2, 2, 0);
	json_object_del(server_of(t, 0), "device");
	expect_fail(t, NULL, "server_list[0].device", "missing");

	t = make_table(2, 2, 0);
	set_str(server_of(t, 0), "device", "0,1");
	expect_fail(t, NULL, "server_list[0].device", NULL);

	t = make_table(2, 2, 0);
	json_array_set_new(json_object_get(t, "server_list"), 1, json_array());
	expect_fail(t, NULL, "server_list[1]", "object");
}

/* ---- rule 7: devices ---- */

static void test_hccl_check_rejects_device_id_out_of_range(void **state)
{
	const struct hccl_check_opts o = { .npus_per_server = 8 };
	json_t *t = make_table(2, 8, 0);

	set_str(dev_of(t, 1, 7), "device_id", "8");
	expect_fail(t, &o, "server_list[1].device[7].device_id", "0..7");

	/* the same table is fine on a 16-die server */
	t = make_table(2, 8, 0);
	set_str(dev_of(t, 1, 7), "device_id", "8");
	expect_ok(t, &(const struct hccl_check_opts){ .npus_per_server = 16 });
}

static void test_hccl_check_rejects_duplicate_device_id(void **state)
{
	json_t *t = make_table(2, 4, 0);

	set_str(dev_of(t, 1, 3), "device_id", "1");
	expect_fail(t, NULL, "server_list[1].device[3].device_id", "device[1]");
}

static void test_hccl_check_rejects_duplicate_device_ip(void **state)
{
	json_t *t = make_table(2, 2, 0);

	set_str(dev_of(t, 1, 1), "device_ip", "10.0.0.1");
	expect_fail(t, NULL, "server_list[1].device[1].device_ip", "server_list[0].device[0]");

	/* one address written two ways */
	t = make_table(2, 1, 0);
	set_str(dev_of(t, 0, 0), "device_ip", "fd00::1");
	set_str(dev_of(t, 1, 0), "device_ip", "fd00:0:0::1");
	expect_fail(t, NULL, "server_list[1].device[0].device_ip", "fd00::1");
}

static void test_hccl_check_rejects_mixed_ip_families(void **state)
{
	json_t *t = make_table(2, 2, 0);

	set_str(dev_of(t, 1, 0), "device_ip", "fd00::10");
	expect_fail(t, NULL, "server_list[1].device[0].device_ip", "IPv6");
}

static void test_hccl_check_rejects_missing_device_ip_on_multi_server(void **state)
{
	json_t *t = make_table(2, 2, 0);

	json_object_del(dev_of(t, 1, 1), "device_ip");
	expect_fail(t, NULL, "server_list[1].device[1].device_ip", "missing");
}

static void test_hccl_check_rejects_bad_device_ip(void **state)
{
	json_t *t = make_table(1, 2, 0);

	set_str(dev_of(t, 0, 1), "device_ip", "10.0.0");
	expect_fail(t, NULL, "server_list[0].device[1].device_ip", NULL);
}

/* Addresses no other NIC can reach are refused [IP] (issue 14 item 8). */
static void test_hccl_check_rejects_unusable_device_ips(void **state)
{
	static const char *const bad[] = { "0.0.0.0", "255.255.255.255", "127.0.0.1",
					   "224.0.0.1", "169.254.1.1", "::", "::1",
					   "ff02::1", "fe80::1" };
	json_t *t;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = make_table(2, 2, 0);
		if (strchr(bad[i], ':'))
			for (size_t s = 0; s < 2; s++)
				for (size_t d = 0; d < 2; d++)
					set_strf(dev_of(t, s, d), "device_ip", "fd00::%zu:%zu",
						 s, d + 1);
		set_str(dev_of(t, 1, 1), "device_ip", bad[i]);
		expect_fail(t, NULL, "server_list[1].device[1].device_ip", "RoCE NIC");
	}
	/* fe80::1 among IPv4 addresses: refused for what it is, before the family */
	t = make_table(2, 2, 0);
	set_str(dev_of(t, 0, 1), "device_ip", "fe80::1");
	expect_fail(t, NULL, "server_list[0].device[1].device_ip", "link-local");
}

/* The Atlas 800 (910) template gives every device its device_ip, even on one server [HC]. */
static void test_hccl_check_910_requires_device_ip(void **state)
{
	json_t *t = make_table(1, 8, 0);

	(void)state;
	json_object_del(dev_of(t, 0, 5), "device_ip");
	expect_fail(t, &opts_910, "server_list[0].device[5].device_ip", "Atlas 800");
	/* other products: one server needs none */
	t = make_table(1, 8, 0);
	json_object_del(dev_of(t, 0, 5), "device_ip");
	expect_ok(t, NULL);
}

/* A3 inside one super pod links over the vnic: no device_ip needed; across pods it is [HC]. */
static void test_hccl_check_a3_device_ip_by_super_pods(void **state)
{
	json_t *t = make_table(2, 2, 2);

	(void)state;
	for (size_t s = 0; s < 2; s++)
		for (size_t d = 0; d < 2; d++)
			json_object_del(dev_of(t, s, d), "device_ip");
	expect_ok(t, NULL);
	t = make_table(2, 2, 1);
	json_object_del(dev_of(t, 1, 0), "device_ip");
	expect_fail(t, NULL, "server_list[1].device[0].device_ip", "super pod");
}

/* Set the hardware SDIDs of @t's devices: server @s of its pod at server index s % per_pod. */
static void set_hw_sdids(json_t *t, size_t nservers, size_t ndev, size_t per_pod)
{
	for (size_t s = 0; s < nservers; s++)
		for (size_t d = 0; d < ndev; d++)
			set_strf(dev_of(t, s, d), "super_device_id", "%lu",
				 (unsigned long)(s % per_pod) << 22 | (d / 2) << 18 |
					 (d % 2) << 16 | d);
}

/* opts.sdid_layout: super_device_id is the SDID the driver has [SDIDL] (item 6). */
static void test_hccl_check_sdid_layout(void **state)
{
	const struct hccl_check_opts hw = { .npus_per_server = 16, .sdid_layout = true };
	json_t *t;

	(void)state;
	t = make_table(4, 16, 2);
	set_hw_sdids(t, 4, 16, 2);
	expect_ok(t, &hw);
	/* make_table's ids (s * ndev + d) are unique, but no hardware gives them */
	t = make_table(2, 16, 2);
	expect_ok(json_incref(t), NULL);
	expect_fail(t, &hw, "server_list[0].device[1].super_device_id", "chip 0 die 0");
	/* the device field is not the device */
	t = make_table(1, 16, 1);
	set_hw_sdids(t, 1, 16, 1);
	set_str(dev_of(t, 0, 3), "super_device_id", "2");
	expect_fail(t, &hw, "server_list[0].device[3].super_device_id", "device 3");
	/* chip and die do not make the device: device 1 is chip 0 die 1 */
	t = make_table(1, 16, 1);
	set_hw_sdids(t, 1, 16, 1);
	set_str(dev_of(t, 0, 1), "super_device_id", "1");
	expect_fail(t, &hw, "server_list[0].device[1].super_device_id", "chip 0 die 0");
	/* server index beyond 47 */
	t = make_table(1, 16, 1);
	set_hw_sdids(t, 1, 16, 1);
	set_strf(dev_of(t, 0, 0), "super_device_id", "%lu", 48UL << 22);
	expect_fail(t, &hw, "server_list[0].device[0].super_device_id", "0 to 47");
	/* two indexes on one server */
	t = make_table(1, 16, 1);
	set_hw_sdids(t, 1, 16, 1);
	set_strf(dev_of(t, 0, 2), "super_device_id", "%lu", 1UL << 22 | 1UL << 18 | 2);
	expect_fail(t, &hw, "server_list[0].device[2].super_device_id", "one place");
	/* two servers of a pod at one index: distinct devices, same place */
	t = make_table(2, 16, 2);
	set_hw_sdids(t, 2, 16, 1);
	expect_fail(t, &hw, "server_list[1].device[0].super_device_id", "super_device_id");
}

static void test_hccl_check_rejects_missing_rank_id(void **state)
{
	json_t *t = make_table(1, 2, 0);

	json_object_del(dev_of(t, 0, 1), "rank_id");
	expect_fail(t, NULL, "server_list[0].device[1].rank_id", "missing");

	t = make_table(1, 2, 0);
	set_str(dev_of(t, 0, 1), "rank_id", "one");
	expect_fail(t, NULL, "server_list[0].device[1].rank_id", "decimal");
}

/* ---- rule 8: 910 rings ---- */

static void test_hccl_check_rejects_910_ring_crossing(void **state)
{
	json_t *t = make_table(1, 2, 0);

	set_str(dev_of(t, 0, 0), "device_id", "3");
	set_str(dev_of(t, 0, 1), "device_id", "4");
	expect_fail(t, &opts_910, "server_list[0].device[1].device_id", "ring");

	/* fine without the 910 rule (910B full mesh) */
	t = make_table(1, 2, 0);
	set_str(dev_of(t, 0, 0), "device_id", "3");
	set_str(dev_of(t, 0, 1), "device_id", "4");
	expect_ok(t, &(const struct hccl_check_opts){ .npus_per_server = 8 });
}

static void test_hccl_check_rejects_910_three_devices(void **state)
{
	expect_fail(make_table(2, 3, 0), &opts_910, "server_list[0].device", "1, 2, 4 or 8");
	expect_ok(make_table(2, 3, 0), NULL);
}

static void test_hccl_check_rejects_contradictory_options(void **state)
{
	const struct hccl_check_opts o = { .npus_per_server = 16, .ring_910 = true };
	char why[WHY_LEN];

	assert_int_equal(check(make_table(1, 1, 0), &o, why), -EINVAL);
	assert_non_null(strstr(why, "options:"));
}

/* ---- rule 9: ranks ---- */

static void test_hccl_check_rejects_duplicate_rank(void **state)
{
	json_t *t = make_table(2, 8, 0);

	set_str(dev_of(t, 1, 1), "rank_id", "8");
	expect_fail(t, NULL, "server_list[1].device[1].rank_id", "server_list[1].device[0]");
}

static void test_hccl_check_rejects_rank_gap(void **state)
{
	json_t *t = make_table(2, 8, 0);

	/* 0..14 and 16: 15 is missing */
	set_str(dev_of(t, 1, 7), "rank_id", "16");
	expect_fail(t, NULL, "server_list[1].device[7].rank_id", "rank 15 is missing");

	t = make_table(2, 2, 0);
	set_str(dev_of(t, 0, 0), "rank_id", "1");
	set_str(dev_of(t, 0, 1), "rank_id", "2");
	set_str(dev_of(t, 1, 0), "rank_id", "3");
	set_str(dev_of(t, 1, 1), "rank_id", "4");
	expect_fail(t, NULL, "server_list[1].device[1].rank_id", "rank 0 is missing");
}

static void test_hccl_check_rejects_ranks_not_contiguous_across_servers(void **state)
{
	json_t *t = make_table(2, 8, 0);
	size_t s, d;

	/* interleaved: server 0 holds even ranks, server 1 odd ones */
	for (s = 0; s < 2; s++)
		for (d = 0; d < 8; d++)
			set_strf(dev_of(t, s, d), "rank_id", "%zu", d * 2 + s);
	expect_fail(t, NULL, "server_list[0].device[1].rank_id",
		    "\"2\" should be \"1\" (ranks are contiguous per server in server order");

	/* blocks in the wrong server order */
	t = make_table(2, 2, 0);
	set_str(dev_of(t, 0, 0), "rank_id", "2");
	set_str(dev_of(t, 0, 1), "rank_id", "3");
	set_str(dev_of(t, 1, 0), "rank_id", "0");
	set_str(dev_of(t, 1, 1), "rank_id", "1");
	expect_fail(t, NULL, "server_list[0].device[0].rank_id", "contiguous");
}

static void test_hccl_check_rejects_ranks_out_of_device_order(void **state)
{
	json_t *t = make_table(2, 4, 0);

	set_str(dev_of(t, 1, 2), "rank_id", "7");
	set_str(dev_of(t, 1, 3), "rank_id", "6");
	expect_fail(t, NULL, "server_list[1].device[2].rank_id",
		    "\"7\" should be \"6\" (ranks ascend along each server's device list)");
}

static void test_hccl_check_rejects_unexpected_rank_count(void **state)
{
	const struct hccl_check_opts o = { .expect_ranks = 32 };

	expect_fail(make_table(2, 8, 0), &o, "server_list", "16 ranks, expected 32");
}

/* ---- rule 10: super pods ---- */

static void test_hccl_check_rejects_missing_super_device_id(void **state)
{
	json_t *t = make_table(2, 2, 1);

	json_object_del(dev_of(t, 1, 0), "super_device_id");
	expect_fail(t, NULL, "server_list[1].device[0].super_device_id", "missing");
}

static void test_hccl_check_rejects_duplicate_super_device_id_in_pod(void **state)
{
	json_t *t = make_table(4, 2, 2);

	set_str(dev_of(t, 1, 1), "super_device_id", "0");
	expect_fail(t, NULL, "server_list[1].device[1].super_device_id",
		    "server_list[0].device[0]");
}

static void test_hccl_check_rejects_missing_super_pod_list(void **state)
{
	json_t *t = make_table(2, 1, 1);

	json_object_del(t, "super_pod_list");
	expect_fail(t, NULL, "super_pod_list", "missing");
}

static void test_hccl_check_rejects_uneven_super_pods(void **state)
{
	json_t *t = make_table(3, 2, 2);

	/* pods of 2 and 1 servers */
	expect_fail(t, NULL, "super_pod_list[1].server_list", "same number");
}

static void test_hccl_check_rejects_non_contiguous_pod_servers(void **state)
{
	json_t *t = make_table(4, 2, 2);

	/* pod0 = {node0, node2}, pod1 = {node1, node3} */
	set_str(json_array_get(json_object_get(pod_of(t, 0), "server_list"), 1), "server_id",
		"node2");
	set_str(json_array_get(json_object_get(pod_of(t, 1), "server_list"), 0), "server_id",
		"node1");
	expect_fail(t, NULL, "server_list[2].server_id", "contiguous");
}

static void test_hccl_check_rejects_server_in_no_or_two_pods(void **state)
{
	json_t *t = make_table(4, 1, 2);

	set_str(json_array_get(json_object_get(pod_of(t, 1), "server_list"), 1), "server_id",
		"node0");
	expect_fail(t, NULL, "super_pod_list[1].server_list[1].server_id", "\"pod0\"");

	t = make_table(4, 1, 2);
	json_array_remove(json_object_get(pod_of(t, 1), "server_list"), 1);
	expect_fail(t, NULL, "server_list[3].server_id", "no super pod");

	t = make_table(4, 1, 2);
	set_str(json_array_get(json_object_get(pod_of(t, 1), "server_list"), 1), "server_id",
		"node9");
	expect_fail(t, NULL, "super_pod_list[1].server_list[1].server_id", "not in server_list");

	t = make_table(4, 1, 2);
	set_str(json_array_get(json_object_get(pod_of(t, 1), "server_list"), 1), "server_id",
		"node2");
	expect_fail(t, NULL, "super_pod_list[1].server_list[1].server_id", "once");
}

static void test_hccl_check_rejects_duplicate_super_pod_id(void **state)
{
	json_t *t = make_table(4, 1, 2);

	set_str(pod_of(t, 1), "super_pod_id", "pod0");
	expect_fail(t, NULL, "super_pod_list[1].super_pod_id", "super_pod_list[0]");
}

/* ---- the verdict buffer and allocation failures ---- */

static void test_hccl_check_truncates_why_to_its_buffer(void **state)
{
	char *text;
	char why[12];
	json_t *t = make_table(2, 2, 0);

	set_str(t, "status", "done");
	text = json_dumps(t, JSON_COMPACT);
	json_decref(t);
	memset(why, 'x', sizeof(why));
	assert_int_equal(hccl_check_ranktable(text, strlen(text), NULL, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "status: \"do");
	assert_int_equal(hccl_check_ranktable(text, strlen(text), NULL, NULL, 0), -EINVAL);
	free(text);
}

static void test_hccl_check_escapes_and_cuts_user_strings(void **state)
{
	char long_id[200], why[WHY_LEN];
	json_t *t = make_table(2, 1, 0);

	set_str(t, "status", "don\"e\n");
	assert_int_equal(check(t, NULL, why), -EINVAL);
	assert_non_null(strstr(why, "\"don\\\"e\\x0a\""));

	memset(long_id, 'b', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	t = make_table(2, 1, 0);
	set_str(server_of(t, 0), "server_id", long_id);
	assert_int_equal(check(t, NULL, why), -EINVAL);
	assert_non_null(strstr(why, "bbb...\""));
	assert_null(strstr(why, long_id));
}

static size_t alloc_budget; /* allocations left before the next one fails */

static void *failing_malloc(size_t n)
{
	if (alloc_budget == 0)
		return NULL;
	alloc_budget--;
	return malloc(n);
}

static void test_hccl_check_survives_every_allocation_failure(void **state)
{
	const struct hccl_check_opts a3 = { .npus_per_server = 16 };
	json_t *t = make_table(4, 4, 2);
	char *text = json_dumps(t, JSON_COMPACT);
	char why[WHY_LEN];
	size_t n, len = strlen(text), parse_misreports = 0;
	int r;

	json_decref(t);
	for (n = 0;; n++) {
		alloc_budget = n;
		json_set_alloc_funcs(failing_malloc, free);
		r = hccl_check_ranktable(text, len, &a3, why, sizeof(why));
		json_set_alloc_funcs(malloc, free);
		if (r == 0)
			break;
		assert_true(n < 100000);
		/*
		 * jansson reports some allocation failures inside its lexer as syntax errors
		 * ("line 1, column 10: string or '}' expected"); the checker cannot tell those
		 * apart. Every failure after parsing must say -ENOMEM.
		 */
		if (r == -EINVAL && strncmp(why, "line ", 5) == 0) {
			parse_misreports++;
			continue;
		}
		if (r != -ENOMEM)
			fail_msg("allocation %zu failed: got %d (%s), expected -ENOMEM", n, r, why);
		assert_string_equal(why, "out of memory");
	}
	print_message("    %zu allocations failed one by one (%zu reported by jansson as syntax "
		      "errors)\n",
		      n, parse_misreports);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hccl_check_accepts_two_servers_16_ranks),
		cmocka_unit_test(test_hccl_check_accepts_v12_super_pods),
		cmocka_unit_test(test_hccl_check_rejects_unusable_device_ips),
		cmocka_unit_test(test_hccl_check_910_requires_device_ip),
		cmocka_unit_test(test_hccl_check_a3_device_ip_by_super_pods),
		cmocka_unit_test(test_hccl_check_sdid_layout),
		cmocka_unit_test(test_hccl_check_accepts_super_device_id_reused_in_another_pod),
		cmocka_unit_test(test_hccl_check_accepts_single_server_without_device_ip),
		cmocka_unit_test(test_hccl_check_accepts_initializing_status),
		cmocka_unit_test(test_hccl_check_accepts_ipv6_device_ips),
		cmocka_unit_test(test_hccl_check_accepts_910_inside_one_ring),
		cmocka_unit_test(test_hccl_check_accepts_extra_server_and_device_keys),
		cmocka_unit_test(test_hccl_check_rejects_text_that_is_not_json),
		cmocka_unit_test(test_hccl_check_rejects_duplicate_keys),
		cmocka_unit_test(test_hccl_check_reads_only_len_bytes),
		cmocka_unit_test(test_hccl_check_rejects_integer_rank_id),
		cmocka_unit_test(test_hccl_check_rejects_integer_server_count),
		cmocka_unit_test(test_hccl_check_rejects_integer_device_id),
		cmocka_unit_test(test_hccl_check_rejects_real_version),
		cmocka_unit_test(test_hccl_check_rejects_null_and_boolean_in_extra_keys),
		cmocka_unit_test(test_hccl_check_rejects_unknown_version),
		cmocka_unit_test(test_hccl_check_rejects_unknown_top_level_key),
		cmocka_unit_test(test_hccl_check_rejects_super_pod_list_in_v10),
		cmocka_unit_test(test_hccl_check_rejects_server_count_mismatch),
		cmocka_unit_test(test_hccl_check_rejects_non_canonical_decimals),
		cmocka_unit_test(test_hccl_check_rejects_empty_server_list),
		cmocka_unit_test(test_hccl_check_rejects_unknown_status),
		cmocka_unit_test(test_hccl_check_rejects_initializing_when_completed_required),
		cmocka_unit_test(test_hccl_check_rejects_duplicate_server_id),
		cmocka_unit_test(test_hccl_check_rejects_bad_server_id_length),
		cmocka_unit_test(test_hccl_check_rejects_bad_host_ip),
		cmocka_unit_test(test_hccl_check_rejects_host_nic_ip_not_reserve),
		cmocka_unit_test(test_hccl_check_rejects_missing_or_empty_device_list),
		cmocka_unit_test(test_hccl_check_rejects_device_id_out_of_range),
		cmocka_unit_test(test_hccl_check_rejects_duplicate_device_id),
		cmocka_unit_test(test_hccl_check_rejects_duplicate_device_ip),
		cmocka_unit_test(test_hccl_check_rejects_mixed_ip_families),
		cmocka_unit_test(test_hccl_check_rejects_missing_device_ip_on_multi_server),
		cmocka_unit_test(test_hccl_check_rejects_bad_device_ip),
		cmocka_unit_test(test_hccl_check_rejects_missing_rank_id),
		cmocka_unit_test(test_hccl_check_rejects_910_ring_crossing),
		cmocka_unit_test(test_hccl_check_rejects_910_three_devices),
		cmocka_unit_test(test_hccl_check_rejects_contradictory_options),
		cmocka_unit_test(test_hccl_check_rejects_duplicate_rank),
		cmocka_unit_test(test_hccl_check_rejects_rank_gap),
		cmocka_unit_test(test_hccl_check_rejects_ranks_not_contiguous_across_servers),
		cmocka_unit_test(test_hccl_check_rejects_ranks_out_of_device_order),
		cmocka_unit_test(test_hccl_check_rejects_unexpected_rank_count),
		cmocka_unit_test(test_hccl_check_rejects_missing_super_device_id),
		cmocka_unit_test(test_hccl_check_rejects_duplicate_super_device_id_in_pod),
		cmocka_unit_test(test_hccl_check_rejects_missing_super_pod_list),
		cmocka_unit_test(test_hccl_check_rejects_uneven_super_pods),
		cmocka_unit_test(test_hccl_check_rejects_non_contiguous_pod_servers),
		cmocka_unit_test(test_hccl_check_rejects_server_in_no_or_two_pods),
		cmocka_unit_test(test_hccl_check_rejects_duplicate_super_pod_id),
		cmocka_unit_test(test_hccl_check_truncates_why_to_its_buffer),
		cmocka_unit_test(test_hccl_check_escapes_and_cuts_user_strings),
		cmocka_unit_test(test_hccl_check_survives_every_allocation_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
