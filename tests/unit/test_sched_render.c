/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rendered job files (sched/sched_render.c): rank tables, judged by
 * the independent checker tests/hccl_check.h and by direct jansson assertions, and the
 * shell env files (job env, hosts/<node>.env, ranks/<rank>.env), judged by a strict
 * parser of `export NAME='value'` lines and by really sourcing them with /bin/sh.
 *
 * Expected values are written down from the fixture's address plan (sched_fixture.h:
 * node-i has host_ip 10.1.0.<i+1>, device d has 10.<16+d>.0.<i+1>), not taken from the
 * placement under test.
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
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "ascend_sched.h"
#include "hccl_check.h"
#include "sched_internal.h"
#include "sched_fixture.h"
#include "test_util.h"

static const struct sched_render_ctx ascend_ctx = { .mount_path = "/ascend" };

/* ---- rank tables ---- */

/*
 * @text (a whole file) is what jansson writes for the values it holds: json_dumps() with
 * JSON_INDENT(2) of its own parse, and a newline. The rank table is written directly
 * (sched_text.c) and must stay byte for byte what it was when jansson wrote it.
 */
static void expect_jansson_text(const char *text, size_t len)
{
	json_error_t err;
	json_t *v = json_loadb(text, len, 0, &err);
	char *again;

	if (!v)
		fail_msg("not JSON: %s at %d\n%s", err.text, err.position, text);
	again = json_dumps(v, JSON_INDENT(2));
	assert_non_null(again);
	if (strlen(again) + 1 != len || strncmp(again, text, len - 1) != 0 || text[len - 1] != '\n')
		fail_msg("not jansson's text:\n--- written\n%s--- jansson\n%s\n", text, again);
	free(again);
	json_decref(v);
}

static char *render_table(const struct sched_cluster *c, const struct sched_job *j,
			  size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(sched_render_ranktable(c, j, &text, &len), 0);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	expect_jansson_text(text, len);
	*ret_len = len;
	return text;
}

/* JSON written directly escapes strings and lays out nesting as json_dumps() does. */
static void test_json_writer_is_jansson(void **state)
{
	static const char *const strings[] = {
		"", "10.0.1.1", "a \"quoted\" back\\slash /", "\b\f\n\r\t \x01\x1f\x7f end",
		"caf\xc3\xa9 \xe4\xb8\xad", /* UTF-8: written as it is */
	};
	struct sched_buf b = { 0 };
	struct sched_jw w = { .b = &b, .indent = 2 };
	json_t *ref = json_object(), *arr = json_array();
	char *text, *want;
	size_t len;

	(void)state;
	sched_jw_open(&w, '{');
	sched_jw_key(&w, "strings");
	sched_jw_open(&w, '[');
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		sched_jw_item(&w);
		sched_jw_string(&b, strings[i]);
		json_array_append_new(arr, json_string(strings[i]));
	}
	sched_jw_close(&w, ']');
	json_object_set_new(ref, "strings", arr);
	sched_jw_key(&w, "empty list");
	sched_jw_open(&w, '[');
	sched_jw_close(&w, ']');
	json_object_set_new(ref, "empty list", json_array());
	sched_jw_key(&w, "empty object");
	sched_jw_open(&w, '{');
	sched_jw_close(&w, '}');
	json_object_set_new(ref, "empty object", json_object());
	sched_jw_key(&w, "nested");
	sched_jw_open(&w, '[');
	sched_jw_item(&w);
	sched_jw_open(&w, '{');
	sched_jw_key(&w, "n");
	sched_buf_put(&b, "7", 1);
	sched_jw_close(&w, '}');
	sched_jw_close(&w, ']');
	json_object_set_new(ref, "nested", json_pack("[{s:i}]", "n", 7));
	sched_jw_close(&w, '}');
	assert_int_equal(sched_buf_finish(&b, &text, &len), 0);
	want = json_dumps(ref, JSON_INDENT(2));
	assert_string_equal(text, want);
	free(text);
	free(want);
	json_decref(ref);

	/* not UTF-8: bytes above 0x7f become '?', as jstr() makes the text jansson takes */
	memset(&b, 0, sizeof(b));
	sched_jw_string(&b, "bad \xff\xfe \xc3\xa9 end");
	assert_int_equal(sched_buf_finish(&b, &text, &len), 0);
	assert_string_equal(text, "\"bad ?? ?? end\"");
	free(text);

	/* a close without its open, and nesting past the bound, fail the text */
	memset(&b, 0, sizeof(b));
	w = (struct sched_jw){ .b = &b, .indent = 2 };
	sched_jw_close(&w, '}');
	assert_int_equal(sched_buf_finish(&b, &text, &len), -EINVAL);
	memset(&b, 0, sizeof(b));
	w = (struct sched_jw){ .b = &b, .indent = 2 };
	for (int i = 0; i <= SCHED_JW_DEPTH_MAX; i++)
		sched_jw_open(&w, '[');
	assert_int_equal(sched_buf_finish(&b, &text, &len), -EINVAL);
}

static void expect_hccl_ok(const char *text, size_t len, const struct hccl_check_opts *opts)
{
	char why[512] = "";
	int r = hccl_check_ranktable(text, len, opts, why, sizeof(why));

	if (r != 0)
		fail_msg("hccl_check_ranktable: %d: %s\n%s", r, why, text);
}

/* Every leaf value of @v is a JSON string (HCCL rejects numbers, booleans, null). */
static void expect_all_strings(json_t *v, const char *path)
{
	char sub[256];

	if (json_is_object(v)) {
		const char *key;
		json_t *val;

		json_object_foreach(v, key, val) {
			snprintf(sub, sizeof(sub), "%s.%s", path, key);
			expect_all_strings(val, sub);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *val;

		json_array_foreach(v, i, val) {
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			expect_all_strings(val, sub);
		}
	} else if (!json_is_string(v)) {
		fail_msg("%s is not a JSON string", path);
	}
}

static const char *jstr(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_string(v))
		fail_msg("key %s is missing or not a string", key);
	return json_string_value(v);
}

static json_t *load_table(const char *text, size_t len)
{
	json_error_t err;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);

	if (!root)
		fail_msg("rank table is not JSON: %s at %d:%d", err.text, err.line, err.column);
	expect_all_strings(root, "$");
	return root;
}

struct want_server {
	const char *host_ip;
	unsigned node;		/* fixture index: device ips 10.<16+d>.0.<node+1> */
	const char *device_ids; /* "4,5" */
};

/* Check @root server by server against @want (@n servers); ranks count from 0. */
static void expect_table(json_t *root, const char *version, const struct want_server *want,
			 size_t n)
{
	json_t *list = json_object_get(root, "server_list");
	unsigned rank = 0;
	char num[16];

	assert_string_equal(jstr(root, "version"), version);
	assert_string_equal(jstr(root, "status"), "completed");
	snprintf(num, sizeof(num), "%zu", n);
	assert_string_equal(jstr(root, "server_count"), num);
	assert_true(json_is_array(list));
	assert_int_equal(json_array_size(list), n);
	for (size_t s = 0; s < n; s++) {
		json_t *srv = json_array_get(list, s), *devs = json_object_get(srv, "device");
		char ids[128] = "";
		size_t off = 0;

		assert_string_equal(jstr(srv, "server_id"), want[s].host_ip);
		assert_string_equal(jstr(srv, "host_ip"), want[s].host_ip);
		assert_string_equal(jstr(srv, "pod_ip"), want[s].host_ip);
		assert_string_equal(jstr(srv, "host_nic_ip"), "reserve");
		assert_true(json_is_array(devs));
		for (size_t k = 0; k < json_array_size(devs); k++) {
			json_t *dev = json_array_get(devs, k);
			const char *id = jstr(dev, "device_id");
			char ip[32];

			off += (size_t)snprintf(ids + off, sizeof(ids) - off, "%s%s", k ? "," : "",
						id);
			snprintf(ip, sizeof(ip), "10.%u.0.%u", 16 + (unsigned)atoi(id),
				 want[s].node + 1);
			assert_string_equal(jstr(dev, "device_ip"), ip);
			snprintf(num, sizeof(num), "%u", rank++);
			assert_string_equal(jstr(dev, "rank_id"), num);
		}
		assert_string_equal(ids, want[s].device_ids);
	}
}

/* One server, 8 ranks. */
static void test_ranktable_single_server(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	const struct want_server want[] = { { "10.1.0.1", 0, "0,1,2,3,4,5,6,7" } };
	struct hccl_check_opts opts = { .npus_per_server = 8, .require_completed = true,
					.expect_ranks = 8 };
	struct sched_job *j;
	size_t len;
	char *text;
	json_t *root;

	(void)state;
	j = fx_run(c, "solo", 8);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want, 1);
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* 4 servers, 32 ranks, across two switches: server order is topology order. */
static void test_ranktable_four_servers(void **state)
{
	/* node-0 leaf-0, node-1 leaf-1, node-2 leaf-0, node-3 leaf-1, node-4 leaf-0 */
	struct fx_opts o = { .servers = 5, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	const struct want_server want[] = {
		{ "10.1.0.3", 2, "0,1,2,3,4,5,6,7" }, /* leaf-0 */
		{ "10.1.0.5", 4, "0,1,2,3,4,5,6,7" },
		{ "10.1.0.2", 1, "0,1,2,3,4,5,6,7" }, /* leaf-1 */
		{ "10.1.0.4", 3, "0,1,2,3,4,5,6,7" },
	};
	struct hccl_check_opts opts = { .npus_per_server = 8, .require_completed = true,
					.expect_ranks = 32 };
	struct sched_job *j;
	size_t len;
	char *text;
	json_t *root;

	(void)state;
	fx_run(c, "small", 1); /* keeps node-0 out of the big job */
	j = fx_run(c, "big", 32);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want, 4);
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* 910 jobs inside one ring: device_id stays physical (4-7), ranks from 0. */
static void test_ranktable_910_ring_jobs(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	const struct want_server want_b[] = { { "10.1.0.1", 0, "4,5,6,7" } };
	const struct want_server want_d[] = { { "10.1.0.1", 0, "2,3" } };
	struct hccl_check_opts opts = { .ring_910 = true, .require_completed = true };
	struct sched_job *b, *d;
	size_t len;
	char *text;
	json_t *root;

	(void)state;
	fx_run(c, "a", 1);
	b = fx_run(c, "b", 4);
	fx_run(c, "c", 1);
	d = fx_run(c, "d", 2);
	fx_expect_slice(d, 0, 0, "2,3");

	opts.expect_ranks = 4;
	text = render_table(c, b, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want_b, 1);
	json_decref(root);
	free(text);

	opts.expect_ranks = 2;
	text = render_table(c, d, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want_d, 1);
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

static void report_sdids(struct sched_cluster *c, unsigned server, unsigned pod,
			 unsigned server_index);

/* A3 super pods: version 1.2, super_pod_list, each pod's servers contiguous. */
static void test_ranktable_super_pod(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 4, .servers_per_pod = 2 };
	struct hccl_check_opts opts = { .npus_per_server = 16, .require_completed = true,
					.expect_ranks = 64, .sdid_layout = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	json_t *root, *pods;
	size_t len;
	char *text;

	(void)state;
	for (unsigned s = 0; s < 4; s++)
		report_sdids(c, s, s / 2, s % 2);
	j = fx_run(c, "a3", 64);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	assert_string_equal(jstr(root, "version"), "1.2");
	pods = json_object_get(root, "super_pod_list");
	assert_int_equal(json_array_size(pods), 2);
	assert_string_equal(jstr(json_array_get(pods, 0), "super_pod_id"), "p0");
	assert_string_equal(jstr(json_array_get(pods, 1), "super_pod_id"), "p1");
	json_decref(root);
	free(text);
	sched_cluster_free(c);

	/* two pods whose servers share the leaf switches: pods must still be contiguous */
	o.switches = 2;
	o.interleave = true;
	c = fx_cluster(&o);
	for (unsigned s = 0; s < 4; s++)
		report_sdids(c, s, s / 2, s % 2);
	j = fx_run(c, "a3", 64);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	free(text);
	sched_cluster_free(c);
}

/* Without device IPs a multi-server table stays "initializing"; unplaced -> -ENOENT. */
static void test_ranktable_initializing_and_unplaced(void **state)
{
	struct fx_opts o = { .servers = 2, .no_device_ips = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j, *p;
	char *text = NULL;
	size_t len = 0;
	json_t *root;

	(void)state;
	j = fx_run(c, "big", 16);
	text = render_table(c, j, &len);
	root = load_table(text, len);
	assert_string_equal(jstr(root, "status"), "initializing");
	json_decref(root);
	free(text);

	p = fx_submit(c, "later", 8);
	assert_int_equal(p->state, SCHED_JOB_PENDING);
	text = NULL;
	assert_int_equal(sched_render_ranktable(c, p, &text, &len), -ENOENT);
	assert_null(text);
	assert_int_equal(sched_render_job_env(c, p, &ascend_ctx, &text, &len), -ENOENT);
	assert_int_equal(sched_render_host_env(c, p, 0, &ascend_ctx, &text, &len), -ENOENT);
	assert_int_equal(sched_render_rank_env(c, p, 0, &ascend_ctx, &text, &len), -ENOENT);
	assert_null(text);

	/* a single-server job needs no device IPs: completed */
	assert_int_equal(fx_cancel(c, "big", FX_UID, fx_now()), 0);
	assert_int_equal(p->state, SCHED_JOB_RUNNING);
	text = render_table(c, p, &len);
	root = load_table(text, len);
	assert_string_equal(jstr(root, "status"), "completed");
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* ---- what a table waits for, and what it never completes with (issue 14 items 6-8) ---- */

/* Apply the line-format report @text to server @server (it must parse). */
static void report_text(struct sched_cluster *c, unsigned server, const char *text)
{
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	char msg[1024];

	if (conf_health_parse(text, strlen(text), "t/health", c->servers[server].conf->npu_count,
			      &rep, &err) < 0)
		fail_msg("report refused: %s", conf_error_format(&err, msg, sizeof(msg)));
	assert_int_equal(sched_server_report(c, server, &rep, fx_now()), 0);
}

/* Report the super-pod identity of every die of A3 server @server. */
static void report_sdids(struct sched_cluster *c, unsigned server, unsigned pod,
			 unsigned server_index)
{
	char text[2048];
	size_t n = 0;

	for (unsigned d = 0; d < 16; d++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "sdid %u %lu %u %u\n", d,
				      (unsigned long)server_index << 22 | (d / 2) << 18 |
					      (d % 2) << 16 | d,
				      pod, server_index);
	report_text(c, server, text);
}

static const char *table_status(const struct sched_cluster *c, const struct sched_job *j)
{
	static char status[32];
	size_t len;
	char *text = render_table(c, j, &len);
	json_t *root = load_table(text, len);

	snprintf(status, sizeof(status), "%s", jstr(root, "status"));
	json_decref(root);
	free(text);
	return status;
}

/* What sched_ranktable_waiting_for() says; "" when the table is completed. */
static const char *waiting_for(const struct sched_cluster *c, const struct sched_job *j)
{
	static char why[SCHED_REASON_MAX];
	int r = sched_ranktable_waiting_for(c, j, why, sizeof(why));

	assert_true(r == 0 || r == 1);
	assert_int_equal(r == 0, why[0] == '\0');
	assert_string_equal(table_status(c, j), r ? "initializing" : "completed");
	return why;
}

/* A3: super_device_id is the SDID the agents reported, never an invented one. */
static void test_ranktable_a3_reported_sdids(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 4, .servers_per_pod = 2 };
	struct hccl_check_opts opts = { .npus_per_server = 16, .require_completed = true,
					.expect_ranks = 64, .sdid_layout = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	json_t *root, *dev;
	char *text;
	size_t len;

	(void)state;
	j = fx_run(c, "a3", 64);
	assert_non_null(strstr(waiting_for(c, j), "SDID"));
	assert_non_null(strstr(waiting_for(c, j), "node-0"));
	for (unsigned s = 0; s < 4; s++)
		report_sdids(c, s, 10 + s / 2, 5 + s % 2);
	assert_string_equal(waiting_for(c, j), "");
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	/* rank 17 is device 1 of the second server, node-1: server index 6 */
	dev = json_array_get(json_object_get(json_array_get(json_object_get(root, "server_list"),
							    1),
					     "device"),
			     1);
	assert_string_equal(jstr(dev, "device_id"), "1");
	assert_string_equal(jstr(dev, "super_device_id"), "25231361"); /* 6<<22|1<<16|1 */
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* A3: SDIDs that HCCL would refuse keep the table initializing, and say why. */
static void test_ranktable_a3_inconsistent_sdids(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	const char *why;

	(void)state;
	j = fx_run(c, "a3", 32);
	/* both servers of pod p0 at server index 3: every SDID twice in the pod */
	report_sdids(c, 0, 1, 3);
	report_sdids(c, 1, 1, 3);
	why = waiting_for(c, j);
	if (!strstr(why, "node-0") || !strstr(why, "node-1") || !strstr(why, "server index 3"))
		fail_msg("%s", why);
	/* one configured pod, two physical super pods */
	report_sdids(c, 1, 2, 4);
	why = waiting_for(c, j);
	if (!strstr(why, "super pod 2") || !strstr(why, "super pod 1") || !strstr(why, "p0"))
		fail_msg("%s", why);
	report_sdids(c, 1, 1, 4);
	assert_string_equal(waiting_for(c, j), "");
	sched_cluster_free(c);
}

/* A3 within one super pod needs no device_ip (HCCL uses the vnic); across pods it does. */
static void test_ranktable_a3_device_ips(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 4, .servers_per_pod = 2,
			     .no_device_ips = true };
	struct hccl_check_opts opts = { .npus_per_server = 16, .require_completed = true,
					.sdid_layout = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *one, *two;
	const char *why;
	char *text;
	size_t len;

	(void)state;
	for (unsigned s = 0; s < 4; s++)
		report_sdids(c, s, s / 2, s % 2);
	one = fx_run(c, "one", 32);
	assert_string_equal(waiting_for(c, one), "");
	text = render_table(c, one, &len);
	expect_hccl_ok(text, len, &opts);
	assert_null(strstr(text, "device_ip"));
	free(text);
	assert_int_equal(fx_cancel(c, "one", FX_UID, fx_now()), 0);
	two = fx_run(c, "two", 64);
	why = waiting_for(c, two);
	if (!strstr(why, "device_ip") || !strstr(why, "node-0"))
		fail_msg("%s", why);
	sched_cluster_free(c);
}

/* Atlas 800 (910): its template requires device_ip even on one server. */
static void test_ranktable_910_requires_device_ip(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1, .no_device_ips = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct hccl_check_opts opts = { .ring_910 = true, .require_completed = true };
	struct sched_job *j;
	const char *why;
	char text[512], *table;
	size_t len = 0, n = 0;

	(void)state;
	j = fx_run(c, "a", 4);
	why = waiting_for(c, j);
	if (!strstr(why, "device_ip") || !strstr(why, "node-0") || !strstr(why, "0-3"))
		fail_msg("%s", why);
	for (unsigned d = 0; d < 8; d++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "ip %u 10.30.0.%u\n", d, d + 1);
	report_text(c, 0, text);
	assert_string_equal(waiting_for(c, j), "");
	table = render_table(c, j, &len);
	expect_hccl_ok(table, len, &opts);
	free(table);
	sched_cluster_free(c);
}

/* Device IPs that reach sched but break HCCL's rules keep the table initializing. */
static void test_ranktable_device_ip_conflicts(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	const char *why;
	char *text;
	size_t len;
	json_t *st;

	(void)state;
	j = fx_run(c, "big", 16);
	assert_string_equal(waiting_for(c, j), "");
	/* node-1's NPU 2 reports node-0's NPU 5 address */
	report_text(c, 1, "ip 2 10.21.0.1\n");
	why = waiting_for(c, j);
	if (!strstr(why, "10.21.0.1") || !strstr(why, "node-0") || !strstr(why, "node-1"))
		fail_msg("%s", why);
	/* status.json and nothing else says so */
	assert_int_equal(sched_render_job_status_json(c, j, &text, &len), 0);
	st = json_loads(text, 0, NULL);
	assert_non_null(st);
	assert_string_equal(json_string_value(json_object_get(st, "ranktable_status")),
			    "initializing");
	assert_non_null(strstr(json_string_value(json_object_get(st, "ranktable_waiting_for")),
			       "10.21.0.1"));
	json_decref(st);
	free(text);
	/* an IPv6 address among IPv4 ones */
	report_text(c, 1, "ip 2 fd00::2\n");
	why = waiting_for(c, j);
	if (!strstr(why, "IPv6") || !strstr(why, "IPv4"))
		fail_msg("%s", why);
	/* a host's address (a report refuses it; a record written before that rule may
	 * hold one): found through the cluster's index of addresses, not a list of hosts */
	snprintf(c->servers[1].npus[2].reported_ip, sizeof(c->servers[1].npus[2].reported_ip),
		 "%s", c->servers[0].conf->host_ip);
	sched_devip_changed(c, 1, 2);
	why = waiting_for(c, j);
	if (!strstr(why, "is the host_ip of node-0") || !strstr(why, "NPU 2 on node-1"))
		fail_msg("%s", why);
	report_text(c, 1, "ip 2 10.18.0.2\n");
	assert_string_equal(waiting_for(c, j), "");
	assert_int_equal(sched_render_job_status_json(c, j, &text, &len), 0);
	st = json_loads(text, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(st, "ranktable_status")),
			    "completed");
	assert_true(json_is_null(json_object_get(st, "ranktable_waiting_for")));
	json_decref(st);
	free(text);
	sched_cluster_free(c);
}

/* Without device IPs the table names the servers and NPUs it waits for. */
static void test_ranktable_waiting_for_names_servers(void **state)
{
	struct fx_opts o = { .servers = 3, .no_device_ips = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	const char *why;
	char text[512];
	size_t n = 0;

	(void)state;
	j = fx_run(c, "big", 24);
	why = waiting_for(c, j);
	if (!strstr(why, "device_ip of NPUs 0-7 on node-0") || !strstr(why, "2 more servers"))
		fail_msg("%s", why);
	for (unsigned d = 0; d < 8; d++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "ip %u 10.40.0.%u\n", d, d + 1);
	report_text(c, 0, text);
	report_text(c, 1, "ip 0 10.40.1.1\nip 1 10.40.1.2\n");
	why = waiting_for(c, j);
	if (!strstr(why, "device_ip of NPUs 2-7 on node-1") || !strstr(why, "1 more server"))
		fail_msg("%s", why);
	sched_cluster_free(c);
}

/*
 * A job launched from its rank table whose table does not complete within
 * hccl_connect_timeout of its generation's start fails, saying what was missing,
 * instead of looking running forever (issue 14 item 7); a completed table is untouched.
 */
static void test_ranktable_not_completed_within_bound_fails(void **state)
{
	struct fx_opts o = { .servers = 4, .no_device_ips = true, .rank_table_launch = true,
			     .connect_timeout_sec = 120, .grace_sec = 5 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *stuck, *fine;
	uint64_t t0;
	char text[512];
	size_t n = 0;

	(void)state;
	stuck = fx_run(c, "stuck", 16);
	for (unsigned d = 0; d < 8; d++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "ip %u 10.50.0.%u\n", d, d + 1);
	fine = fx_run(c, "fine", 8);
	report_text(c, fine->slices[0].server, text);
	assert_string_equal(waiting_for(c, fine), "");
	t0 = stuck->generation_usec;
	sched_tick(c, t0 + 119 * 1000000ull);
	assert_int_equal(stuck->state, SCHED_JOB_RUNNING);
	sched_tick(c, t0 + 121 * 1000000ull);
	assert_int_equal(stuck->state, SCHED_JOB_STOPPING);
	if (!strstr(stuck->reason, "hccl_connect_timeout") || !strstr(stuck->reason, "device_ip"))
		fail_msg("%s", stuck->reason);
	assert_int_equal(fine->state, SCHED_JOB_RUNNING);
	sched_tick(c, t0 + 200 * 1000000ull);
	assert_int_equal(stuck->state, SCHED_JOB_FAILED);
	assert_non_null(strstr(stuck->reason, "device_ip"));
	assert_int_equal(fine->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);

	/* dynamic networking does not read the table: nothing waits on it */
	o.rank_table_launch = false;
	c = fx_cluster(&o);
	stuck = fx_run(c, "stuck", 16);
	sched_tick(c, stuck->generation_usec + 200 * 1000000ull);
	assert_int_equal(stuck->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* The checker used above really bites: a numeric rank_id or a ring-crossing table fails. */
static void test_ranktable_checker_rejects_broken_copies(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct hccl_check_opts opts = { .npus_per_server = 8, .require_completed = true };
	struct sched_job *j;
	char why[512], *text, *p;
	size_t len;

	(void)state;
	j = fx_run(c, "solo", 4);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	/* "rank_id": "1" -> "rank_id": 1  (same length: swap quotes for spaces) */
	p = strstr(text, "\"rank_id\": \"1\"");
	assert_non_null(p);
	p[11] = ' ';
	p[13] = ' ';
	assert_int_equal(hccl_check_ranktable(text, len, &opts, why, sizeof(why)), -EINVAL);
	free(text);
	/* ids 0-3 pass the 910 ring rule too; ids 0,1,2,4 (crossing rings) must not */
	text = render_table(c, j, &len);
	opts.ring_910 = true;
	expect_hccl_ok(text, len, &opts);
	p = strstr(text, "\"device_id\": \"3\"");
	assert_non_null(p);
	p[14] = '4';
	assert_int_equal(hccl_check_ranktable(text, len, &opts, why, sizeof(why)), -EINVAL);
	free(text);
	sched_cluster_free(c);
}

/* ---- env files ---- */

struct env_var {
	char name[64];
	char *value;
};

struct env {
	struct env_var v[64];
	size_t n;
};

static void env_free(struct env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].value);
	e->n = 0;
}

/*
 * Parse @text strictly: every line is `# comment` or `export NAME=` followed by a value
 * made only of single-quoted runs ('...', which may hold newlines) and \' escapes, then
 * a newline. Fails the test on anything else.
 */
static void env_parse(const char *text, size_t len, struct env *e)
{
	size_t i = 0, line = 1;

	memset(e, 0, sizeof(*e));
	if (len == 0 || text[len - 1] != '\n')
		fail_msg("env file does not end with a newline");
	while (i < len) {
		struct env_var *v;
		size_t nlen = 0, vlen = 0, cap = 64;

		if (text[i] == '#') {
			while (text[i] != '\n')
				i++;
			i++;
			line++;
			continue;
		}
		if (strncmp(text + i, "export ", 7) != 0)
			fail_msg("line %zu: not a comment or `export`: %.40s", line, text + i);
		i += 7;
		assert_true(e->n < 64);
		v = &e->v[e->n];
		if (!(text[i] == '_' || (text[i] >= 'A' && text[i] <= 'Z')))
			fail_msg("line %zu: bad variable name", line);
		while (text[i] == '_' || (text[i] >= 'A' && text[i] <= 'Z') ||
		       (text[i] >= '0' && text[i] <= '9')) {
			assert_true(nlen < sizeof(v->name) - 1);
			v->name[nlen++] = text[i++];
		}
		if (text[i] != '=')
			fail_msg("line %zu: %s not followed by '='", line, v->name);
		i++;
		for (size_t k = 0; k < e->n; k++)
			if (strcmp(e->v[k].name, v->name) == 0)
				fail_msg("line %zu: %s exported twice", line, v->name);
		v->value = malloc(cap);
		assert_non_null(v->value);
		if (text[i] != '\'')
			fail_msg("line %zu: %s: value not single-quoted", line, v->name);
		while (text[i] == '\'' || (text[i] == '\\' && text[i + 1] == '\'')) {
			if (text[i] == '\\') {
				if (vlen + 2 > cap)
					v->value = realloc(v->value, cap *= 2);
				v->value[vlen++] = '\'';
				i += 2;
				continue;
			}
			i++;
			while (i < len && text[i] != '\'') {
				if (vlen + 2 > cap)
					v->value = realloc(v->value, cap *= 2);
				assert_non_null(v->value);
				line += text[i] == '\n';
				v->value[vlen++] = text[i++];
			}
			if (i >= len)
				fail_msg("line %zu: %s: unterminated quote", line, v->name);
			i++;
		}
		v->value[vlen] = '\0';
		if (text[i] != '\n')
			fail_msg("line %zu: %s: junk after the value: %.20s", line, v->name,
				 text + i);
		i++;
		line++;
		e->n++;
	}
}

static const char *env_get(const struct env *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0)
			return e->v[i].value;
	return NULL;
}

static void expect_env(const struct env *e, const char *name, const char *want)
{
	const char *got = env_get(e, name);

	if (!got)
		fail_msg("%s is not exported", name);
	if (strcmp(got, want) != 0)
		fail_msg("%s='%s', want '%s'", name, got, want);
}

/*
 * Run /bin/sh -c @script with $1 = @arg; collect stdout into a new buffer. Returns the
 * exit status (or -1 when the shell did not exit normally).
 */
static int run_sh(const char *script, const char *arg, char **out, size_t *out_len)
{
	int pipefd[2], status = 0;
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	pid_t pid;
	ssize_t n;

	assert_non_null(buf);
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		execl("/bin/sh", "sh", "-c", script, "sh", arg, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		if (len == cap) {
			buf = realloc(buf, cap *= 2);
			assert_non_null(buf);
		}
		n = read(pipefd[0], buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*out = buf;
	*out_len = len;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Source @text with /bin/sh and compare every variable the strict parser found with
 * what the shell holds afterwards (printf '%s\0' "$NAME" ...).
 */
static void expect_sh_agrees(const char *text, size_t len, const struct env *e)
{
	char *path = test_write_tmp(text, len, ".env"), *out = NULL, *script, *p;
	size_t out_len = 0, cap = 64 + e->n * 80, off;
	int r;

	script = malloc(cap);
	assert_non_null(script);
	off = (size_t)snprintf(script, cap, ". \"$1\" && printf '%%s\\0'");
	for (size_t i = 0; i < e->n; i++)
		off += (size_t)snprintf(script + off, cap - off, " \"$%s\"", e->v[i].name);
	assert_true(off < cap);
	r = run_sh(script, path, &out, &out_len);
	unlink(path); /* before any assertion can end the test */
	assert_int_equal(r, 0);
	p = out;
	for (size_t i = 0; i < e->n; i++) {
		size_t vlen = strlen(e->v[i].value);

		assert_true((size_t)(p - out) + vlen < out_len + 1);
		if (memcmp(p, e->v[i].value, vlen) != 0 || p[vlen] != '\0')
			fail_msg("sh sees %s differently: '%.*s' vs '%s'", e->v[i].name,
				 (int)vlen, p, e->v[i].value);
		p += vlen + 1;
	}
	assert_true((size_t)(p - out) == out_len);
	free(path);
	free(out);
	free(script);
}

/* sched_shell_quote: exact POSIX single quoting, appended to what the buffer holds. */
static void test_shell_quote_special_characters(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "'plain'" },
		{ "", "''" },
		{ "it's", "'it'\\''s'" },
		{ "'", "''\\'''" },
		{ "$HOME `id` $(id) \"x\"", "'$HOME `id` $(id) \"x\"'" },
		{ "a\nb", "'a\nb'" },
		{ "back\\slash", "'back\\slash'" },
		{ "glob * ? [a] ~ ; & | < >", "'glob * ? [a] ~ ; & | < >'" },
	};
	static const char *const values[] = {
		"it's", "'", "''", "$HOME", "`echo pwned`", "$(echo pwned)", "line1\nline2\n",
		"back\\slash\\", "tab\there", "\\'", "end with quote'", "!hist", "",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = strdup("X=");
		size_t len = 2, cap = 3;

		assert_non_null(buf);
		assert_int_equal(sched_shell_quote(&buf, &len, &cap, cases[i].in), 0);
		assert_int_equal(len, 2 + strlen(cases[i].out));
		assert_true(cap > len);
		assert_memory_equal(buf, "X=", 2);
		assert_string_equal(buf + 2, cases[i].out);
		free(buf);
	}
	/* from an empty buffer */
	{
		char *buf = NULL;
		size_t len = 0, cap = 0;

		assert_int_equal(sched_shell_quote(&buf, &len, &cap, "a'b"), 0);
		assert_string_equal(buf, "'a'\\''b'");
		free(buf);
	}
	/* the shell reads every value back unchanged */
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char *buf = NULL, *out = NULL, *path;
		size_t len = 0, cap = 0, out_len = 0;
		struct env e;
		int r;

		buf = strdup("export X=");
		assert_non_null(buf);
		len = strlen(buf);
		cap = len + 1;
		assert_int_equal(sched_shell_quote(&buf, &len, &cap, values[i]), 0);
		buf = realloc(buf, len + 2);
		assert_non_null(buf);
		buf[len++] = '\n';
		buf[len] = '\0';
		env_parse(buf, len, &e);
		assert_int_equal(e.n, 1);
		assert_string_equal(env_get(&e, "X"), values[i]);
		path = test_write_tmp(buf, len, ".env");
		r = run_sh(". \"$1\" && printf %s \"$X\"", path, &out, &out_len);
		unlink(path);
		assert_int_equal(r, 0);
		if (out_len != strlen(values[i]) || memcmp(out, values[i], out_len) != 0)
			fail_msg("sh read back '%.*s' for '%s'", (int)out_len, out, values[i]);
		free(path);
		free(out);
		free(buf);
		env_free(&e);
	}
}

static struct sched_cluster *four_server_cluster(bool rank_table_launch)
{
	/* node-0 leaf-0, node-1 leaf-1, node-2 leaf-0, node-3 leaf-1, node-4 leaf-0 */
	struct fx_opts o = { .servers = 5,
			     .switches = 2,
			     .interleave = true,
			     .connect_timeout_sec = 1200,
			     .scheduler_port = 9000,
			     .rank_table_launch = rank_table_launch };

	return fx_cluster(&o);
}

/* Job-wide env of a 32-rank job: the launch variables with their expected values. */
static void test_env_job_values(void **state)
{
	struct sched_cluster *c = four_server_cluster(false);
	struct sched_job *j;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	fx_run(c, "small", 1);
	j = fx_run(c, "llama70b", 32);
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	env_parse(text, len, &e);
	/* dynamic networking: no rank table for HCCL, the job's directory instead */
	assert_null(env_get(&e, "RANK_TABLE_FILE"));
	expect_env(&e, "ASCEND_JOB_DIR", "/ascend/jobs/llama70b");
	expect_env(&e, "RANK_SIZE", "32");
	expect_env(&e, "MS_SCHED_HOST", "10.1.0.3"); /* node-2: first in topology order */
	expect_env(&e, "MS_SCHED_PORT", "9000");
	expect_env(&e, "MS_WORKER_NUM", "32");
	expect_env(&e, "HCCL_CONNECT_TIMEOUT", "1200");
	expect_env(&e, "ASCEND_JOB_ID", "llama70b");
	expect_env(&e, "ASCEND_JOB_GENERATION", "1");
	expect_env(&e, "ASCEND_RESUME_CHECKPOINT", "");
	/* no parallel: in the spec: the layout it runs with is pure data parallel */
	expect_env(&e, "ASCEND_PARALLEL_TP", "1");
	expect_env(&e, "ASCEND_PARALLEL_CP", "1");
	expect_env(&e, "ASCEND_PARALLEL_EP", "1");
	expect_env(&e, "ASCEND_PARALLEL_DP", "32");
	expect_env(&e, "ASCEND_PARALLEL_PP", "1");
	expect_env(&e, "ASCEND_TOPOLOGY_FILE", "/ascend/jobs/llama70b/topology.json");
	expect_sh_agrees(text, len, &e);
	env_free(&e);
	free(text);

	/*
	 * A checkpoint becomes ASCEND_RESUME_CHECKPOINT of the next generation: the running
	 * one keeps what it started with, so all its processes agree.
	 */
	assert_int_equal(sched_job_checkpoint(c, "llama70b", FX_UID, 7, "/data/ck/step 7's",
					      fx_now()),
			 0);
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "ASCEND_RESUME_CHECKPOINT", "");
	env_free(&e);
	free(text);
	{
		char reason[SCHED_REASON_MAX] = "";

		assert_int_equal(sched_job_process_exit(c, "llama70b", FX_UID, 1,
							c->servers[j->slices[0].server].conf->name,
							-1, 3, fx_now(), reason),
				 0);
	}
	assert_int_equal(j->generation, 2);
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "ASCEND_RESUME_CHECKPOINT", "/data/ck/step 7's");
	expect_sh_agrees(text, len, &e);
	env_free(&e);
	free(text);
	sched_cluster_free(c);
}

/* hosts/<node>.env for each server of the job: msrun's per-node values. */
static void test_env_host_values(void **state)
{
	static const char *const hosts[] = { "node-2", "node-4", "node-1", "node-3" };
	struct sched_cluster *c = four_server_cluster(false);
	struct sched_job *j;
	struct env e;
	char *text, want[256];
	const char *args;
	size_t len;

	(void)state;
	fx_run(c, "small", 1);
	j = fx_run(c, "llama70b", 32);
	for (size_t s = 0; s < 4; s++) {
		assert_int_equal(sched_render_host_env(c, j, s, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		expect_env(&e, "ASCEND_SERVER_NAME", hosts[s]);
		assert_null(env_get(&e, "RANK_TABLE_FILE"));
		expect_env(&e, "RANK_SIZE", "32");
		expect_env(&e, "MS_SCHED_HOST", "10.1.0.3");
		expect_env(&e, "MS_SCHED_PORT", "9000");
		expect_env(&e, "MS_WORKER_NUM", "32");
		expect_env(&e, "MS_LOCAL_WORKER", "8");
		snprintf(want, sizeof(want), "%zu", s);
		expect_env(&e, "MS_NODE_RANK", want);
		snprintf(want, sizeof(want), "%zu", s * 8);
		expect_env(&e, "RANK_START", want);
		expect_env(&e, "ASCEND_RT_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7");
		args = env_get(&e, "MSRUN_ARGS");
		assert_non_null(args);
		assert_non_null(strstr(args, "--worker_num=32"));
		assert_non_null(strstr(args, "--local_worker_num=8"));
		assert_non_null(strstr(args, "--master_addr=10.1.0.3"));
		assert_non_null(strstr(args, "--master_port=9000"));
		snprintf(want, sizeof(want), "--node_rank=%zu", s);
		assert_non_null(strstr(args, want));
		assert_null(strstr(args, "--rank_table_file"));
		expect_sh_agrees(text, len, &e);
		env_free(&e);
		free(text);
	}
	text = NULL;
	assert_int_equal(sched_render_host_env(c, j, 4, &ascend_ctx, &text, &len), -ENOENT);
	assert_null(text);
	sched_cluster_free(c);
}

/*
 * ranks/<rank>.env in rank-table mode: RANK_ID and the physical DEVICE_ID, on a 910 job in
 * ring 4-7, and no MS_* variable (MindSpore would wait for a scheduler).
 */
static void test_env_rank_values_ring(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1, .connect_timeout_sec = 300,
			     .rank_table_launch = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	struct env e;
	char *text, want[16];
	size_t len;

	(void)state;
	fx_run(c, "a", 4);
	j = fx_run(c, "ring", 4);
	fx_expect_slice(j, 0, 0, "4,5,6,7");
	for (unsigned r = 0; r < 4; r++) {
		assert_int_equal(sched_render_rank_env(c, j, r, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		snprintf(want, sizeof(want), "%u", r);
		expect_env(&e, "RANK_ID", want);
		snprintf(want, sizeof(want), "%u", 4 + r);
		expect_env(&e, "DEVICE_ID", want);
		expect_env(&e, "RANK_SIZE", "4");
		expect_env(&e, "RANK_TABLE_FILE", "/ascend/jobs/ring/ranktable.json");
		for (size_t i = 0; i < e.n; i++)
			if (strncmp(e.v[i].name, "MS_", 3) == 0)
				fail_msg("rank %u: %s in a rank-table rank env", r, e.v[i].name);
		expect_env(&e, "HCCL_CONNECT_TIMEOUT", "300");
		/* DEVICE_ID is physical, so no visibility remap may be in force */
		assert_null(env_get(&e, "ASCEND_RT_VISIBLE_DEVICES"));
		expect_sh_agrees(text, len, &e);
		env_free(&e);
		free(text);
	}
	text = NULL;
	assert_int_equal(sched_render_rank_env(c, j, 4, &ascend_ctx, &text, &len), -ENOENT);
	assert_null(text);
	/* the host env restricts msrun to the ring's physical NPUs */
	assert_int_equal(sched_render_host_env(c, j, 0, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "ASCEND_RT_VISIBLE_DEVICES", "4,5,6,7");
	expect_env(&e, "MS_LOCAL_WORKER", "4");
	expect_env(&e, "MS_NODE_RANK", "0");
	env_free(&e);
	free(text);
	sched_cluster_free(c);
}

/* Every rendered env file of a 32-rank job has the strict export syntax. */
static void test_env_all_files_strict_syntax(void **state)
{
	struct sched_cluster *c = four_server_cluster(false);
	struct sched_job *j;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	fx_run(c, "small", 1);
	j = fx_run(c, "llama70b", 32);
	for (unsigned r = 0; r < 32; r++) {
		char want[16];

		assert_int_equal(sched_render_rank_env(c, j, r, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		snprintf(want, sizeof(want), "%u", r);
		expect_env(&e, "RANK_ID", want);
		snprintf(want, sizeof(want), "%u", r % 8);
		expect_env(&e, "DEVICE_ID", want);
		expect_env(&e, "ASCEND_SERVER_NAME",
			   (const char *[]){ "node-2", "node-4", "node-1", "node-3" }[r / 8]);
		env_free(&e);
		free(text);
	}
	sched_cluster_free(c);
}

/* enable_dynamic_network: false -> msrun gets the rank table file. */
static void test_env_msrun_rank_table_launch(void **state)
{
	struct sched_cluster *c = four_server_cluster(true);
	struct sched_job *j;
	const char *args;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	j = fx_run(c, "rt", 16);
	assert_int_equal(sched_render_host_env(c, j, 1, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	args = env_get(&e, "MSRUN_ARGS");
	assert_non_null(args);
	assert_non_null(strstr(args, "--rank_table_file=/ascend/jobs/rt/ranktable.json"));
	assert_non_null(strstr(args, "--node_rank=1"));
	expect_sh_agrees(text, len, &e);
	env_free(&e);
	free(text);
	sched_cluster_free(c);
}

/* Two jobs whose rank 0 shares a server get distinct MS_SCHED_PORTs. */
static void test_env_sched_port_per_master(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *d;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	a = fx_run(c, "a", 4);
	b = fx_run(c, "b", 4);
	assert_int_equal(a->sched_port, 8118);
	assert_int_equal(b->sched_port, 8119);
	assert_int_equal(sched_render_job_env(c, b, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "MS_SCHED_PORT", "8119");
	env_free(&e);
	free(text);
	assert_int_equal(fx_complete(c, "a", FX_UID, fx_now()), 0);
	d = fx_run(c, "d", 4);
	assert_int_equal(d->sched_port, 8118);
	sched_cluster_free(c);
}

/* The job env, really sourced by /bin/sh, sets RANK_TABLE_FILE, even for an odd mount. */
static void test_env_sourced_by_sh(void **state)
{
	static const char *const mounts[] = { "/ascend", "/mnt/it's a $dir `x`" };
	struct fx_opts o = { .servers = 2, .rank_table_launch = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "llama7b", 16);
	for (size_t m = 0; m < 2; m++) {
		struct sched_render_ctx ctx = { .mount_path = mounts[m] };
		char *text, *path, *out, *out2, want[256];
		size_t len, out_len, out2_len;
		int r, r2;

		assert_int_equal(sched_render_job_env(c, j, &ctx, &text, &len), 0);
		path = test_write_tmp(text, len, ".env");
		r = run_sh(". \"$1\" && printf %s \"$RANK_TABLE_FILE\"", path, &out, &out_len);
		/* and the exported variable reaches a child process */
		r2 = run_sh(". \"$1\" && sh -c 'printf %s \"$RANK_SIZE\"'", path, &out2, &out2_len);
		unlink(path);
		assert_int_equal(r, 0);
		assert_int_equal(r2, 0);
		snprintf(want, sizeof(want), "%s/jobs/llama7b/ranktable.json", mounts[m]);
		if (out_len != strlen(want) || memcmp(out, want, out_len) != 0)
			fail_msg("sh got '%.*s', want '%s'", (int)out_len, out, want);
		assert_int_equal(out2_len, 2);
		assert_memory_equal(out2, "16", 2);
		free(out);
		free(out2);
		free(path);
		free(text);
	}
	sched_cluster_free(c);
}


/*
 * What a process has after `. file` in a shell that started with nothing: the names of
 * every variable of @prefix, one per line, sorted.
 */
static char *sourced_names(const char *text, size_t len, const char *prefix)
{
	char *path = test_write_tmp(text, len, ".env"), *out = NULL, script[256];
	size_t out_len = 0;
	int r;

	snprintf(script, sizeof(script),
		 "exec env -i /bin/sh -c '. \"$1\" && env | sed -n \"s/^\\(%s[A-Z_]*\\)=.*/\\1/p\" "
		 "| sort' sh \"$1\"", prefix);
	r = run_sh(script, path, &out, &out_len);
	unlink(path);
	free(path);
	assert_int_equal(r, 0);
	out = realloc(out, out_len + 1);
	assert_non_null(out);
	out[out_len] = '\0';
	return out;
}

/*
 * Item 4/5, rank-table mode (enable_dynamic_network: false): MindSpore takes a process
 * with MS_ROLE or MS_SCHED_HOST for a dynamic-cluster member that waits for an MS_SCHED
 * process, so the job env and every rank env, as sourced by sh, hold no MS_* variable;
 * they hold RANK_TABLE_FILE, RANK_ID, DEVICE_ID and RANK_SIZE. msrun's host env keeps
 * its master (msrun starts the scheduler itself).
 */
static void test_env_rank_table_mode_has_no_ms(void **state)
{
	struct fx_opts o = { .servers = 2, .rank_table_launch = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	struct env e;
	char *text, *names;
	size_t len;

	(void)state;
	j = fx_run(c, "rt", 16);
	j->spec->launch = CONF_LAUNCH_PER_RANK;
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	names = sourced_names(text, len, "MS_");
	assert_string_equal(names, "");
	free(names);
	names = sourced_names(text, len, "RANK_");
	assert_string_equal(names, "RANK_SIZE\nRANK_TABLE_FILE\n");
	free(names);
	free(text);
	for (unsigned r = 0; r < 16; r += 5) {
		char want[16];

		assert_int_equal(sched_render_rank_env(c, j, r, &ascend_ctx, &text, &len), 0);
		names = sourced_names(text, len, "MS_");
		if (names[0])
			fail_msg("rank %u's env has %s", r, names);
		free(names);
		names = sourced_names(text, len, "RANK_");
		assert_string_equal(names, "RANK_ID\nRANK_SIZE\nRANK_TABLE_FILE\n");
		free(names);
		env_parse(text, len, &e);
		snprintf(want, sizeof(want), "%u", r);
		expect_env(&e, "RANK_ID", want);
		snprintf(want, sizeof(want), "%u", r % 8);
		expect_env(&e, "DEVICE_ID", want);
		expect_env(&e, "RANK_TABLE_FILE", "/ascend/jobs/rt/ranktable.json");
		assert_null(env_get(&e, "ASCEND_RT_VISIBLE_DEVICES"));
		env_free(&e);
		free(text);
	}
	assert_int_equal(sched_render_host_env(c, j, 1, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "MS_SCHED_HOST", "10.1.0.1");
	expect_env(&e, "MS_WORKER_NUM", "16");
	expect_env(&e, "RANK_TABLE_FILE", "/ascend/jobs/rt/ranktable.json");
	env_free(&e);
	free(text);
	sched_cluster_free(c);
}

/*
 * Item 5, dynamic mode (enable_dynamic_network: true): no env file has RANK_TABLE_FILE
 * (MindSpore would initialize HCCL from the table, and need DEVICE_ID), each has the
 * msrun environment; a rank env is an msrun worker's (MS_ROLE MS_WORKER, MS_NODE_ID =
 * its rank, the server's NPUs of the job visible, DEVICE_ID = its local rank).
 */
static void expect_dynamic_rank_envs(struct sched_cluster *c, struct sched_job *j)
{
	struct env e;
	char *text, *names, want[16];
	size_t len;

	for (size_t s = 0; s < j->slice_count; s++) {
		const struct sched_slice *sl = &j->slices[s];
		char devs[64] = "";

		for (unsigned k = 0; k < sl->npu_count; k++)
			snprintf(devs + strlen(devs), sizeof(devs) - strlen(devs), "%s%u",
				 k ? "," : "", sl->device_ids[k]);
		for (unsigned r = sl->first_rank; r < sl->first_rank + sl->npu_count; r++) {
			assert_int_equal(sched_render_rank_env(c, j, r, &ascend_ctx, &text, &len), 0);
			names = sourced_names(text, len, "RANK_");
			assert_string_equal(names, "RANK_ID\nRANK_SIZE\n");
			free(names);
			names = sourced_names(text, len, "MS_");
			assert_string_equal(names, "MS_NODE_ID\nMS_ROLE\nMS_SCHED_HOST\n"
						   "MS_SCHED_PORT\nMS_WORKER_NUM\n");
			free(names);
			env_parse(text, len, &e);
			expect_env(&e, "MS_ROLE", "MS_WORKER");
			snprintf(want, sizeof(want), "%u", r);
			expect_env(&e, "MS_NODE_ID", want);
			expect_env(&e, "RANK_ID", want);
			snprintf(want, sizeof(want), "%u", r - sl->first_rank);
			expect_env(&e, "DEVICE_ID", want);
			expect_env(&e, "ASCEND_RT_VISIBLE_DEVICES", devs);
			expect_env(&e, "MS_SCHED_HOST",
				   c->servers[j->slices[0].server].conf->host_ip);
			expect_sh_agrees(text, len, &e);
			env_free(&e);
			free(text);
		}
	}
}

static void test_env_dynamic_mode_has_no_rank_table(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j, *ring;
	struct env e;
	char *text, *names;
	size_t len;

	(void)state;
	fx_run(c, "a", 4); /* NPUs 0-3 of one server */
	j = fx_run(c, "dyn", 16);
	ring = fx_run(c, "ring", 4);
	fx_expect_slice(ring, 0, 0, "4,5,6,7");
	j->spec->launch = CONF_LAUNCH_PER_RANK;
	ring->spec->launch = CONF_LAUNCH_PER_RANK;
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	names = sourced_names(text, len, "RANK_");
	assert_string_equal(names, "RANK_SIZE\n");
	free(names);
	names = sourced_names(text, len, "MS_");
	assert_string_equal(names, "MS_SCHED_HOST\nMS_SCHED_PORT\nMS_WORKER_NUM\n");
	free(names);
	env_parse(text, len, &e);
	expect_env(&e, "ASCEND_JOB_DIR", "/ascend/jobs/dyn");
	env_free(&e);
	free(text);
	for (size_t s = 0; s < j->slice_count; s++) {
		assert_int_equal(sched_render_host_env(c, j, s, &ascend_ctx, &text, &len), 0);
		names = sourced_names(text, len, "RANK_");
		assert_string_equal(names, "RANK_SIZE\nRANK_START\n");
		free(names);
		env_parse(text, len, &e);
		assert_null(strstr(env_get(&e, "MSRUN_ARGS"), "rank_table"));
		env_free(&e);
		free(text);
	}
	expect_dynamic_rank_envs(c, j);
	expect_dynamic_rank_envs(c, ring);
	sched_cluster_free(c);
}

/*
 * Item 9: a rank table's pod_ip is the address its processes are reached at, the same
 * one MS_SCHED_HOST names for the job's first server and SERVER_ID for each server.
 */
static void test_env_pod_ip_is_sched_host(void **state)
{
	struct sched_cluster *c = four_server_cluster(true);
	struct sched_job *j;
	json_t *root, *list;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	j = fx_run(c, "pods", 32);
	assert_int_equal(sched_render_ranktable(c, j, &text, &len), 0);
	root = json_loadb(text, len, 0, NULL);
	assert_non_null(root);
	free(text);
	list = json_object_get(root, "server_list");
	assert_int_equal(json_array_size(list), j->slice_count);
	for (size_t s = 0; s < j->slice_count; s++) {
		const char *pod = json_string_value(
			json_object_get(json_array_get(list, s), "pod_ip"));

		assert_non_null(pod);
		assert_int_equal(sched_render_host_env(c, j, s, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		expect_env(&e, "SERVER_ID", pod);
		if (s == 0)
			expect_env(&e, "MS_SCHED_HOST", pod);
		env_free(&e);
		free(text);
	}
	json_decref(root);
	sched_cluster_free(c);
}

/* ---- topology.json ---- */

/* A job of @npus NPUs with `parallel: {tp, cp, ep, pp}` (0 = not given), running. */
static struct sched_job *run_parallel(struct sched_cluster *c, const char *name, unsigned npus,
				      unsigned tp, unsigned cp, unsigned ep, unsigned pp)
{
	struct conf_job_spec *s = fx_spec(name, npus);
	struct sched_job *j;

	s->tp = tp;
	s->cp = cp;
	s->ep = ep;
	s->pp = pp;
	j = fx_submit_spec(c, s, FX_UID);
	if (j->state != SCHED_JOB_RUNNING)
		fail_msg("job %s is %s: %s", name, sched_job_state_name(j->state), j->reason);
	return j;
}

/* topology.json of @j, parsed; its text must be one JSON object and a newline. */
static json_t *load_topology(const struct sched_cluster *c, const struct sched_job *j)
{
	static const char *const keys[] = {
		"\"job\"", "\"generation\"", "\"server_type\"", "\"product\"", "\"chip\"",
		"\"npus\"", "\"server_count\"", "\"rank_order\"", "\"parallel\"",
		"\"spine_oversubscription\"", "\"link_classes\"", "\"ranks\"", "\"groups\"",
		"\"pp_boundaries\"",
	};
	const char *at = NULL;
	json_error_t err;
	size_t len = 0;
	char *text = NULL;
	json_t *root;

	assert_int_equal(sched_render_job_topology(c, j, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	assert_true(len > 0 && text[len - 1] == '\n');
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!json_is_object(root))
		fail_msg("topology.json is not a JSON object: %s\n%s", err.text, text);
	/* the top-level keys in their documented order (each first seen at 2 spaces in) */
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		char needle[64];
		const char *p;

		snprintf(needle, sizeof(needle), "\n  %s:", keys[k]);
		p = strstr(text, needle);
		if (!p || p < at)
			fail_msg("key %s missing or out of order:\n%.2000s", keys[k], text);
		at = p;
	}
	assert_int_equal(json_object_size(root), sizeof(keys) / sizeof(keys[0]));
	free(text);
	return root;
}

/* (also used by the status tests below) */
static json_int_t jint(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v))
		fail_msg("key %s is missing or not an integer", key);
	return json_integer_value(v);
}

/* Group @g of dimension @dim: its ranks (as "0,1,..."), its servers, its link. */
static void expect_group(json_t *root, const char *dim, size_t g, const char *ranks,
			 const char *servers, const char *link)
{
	json_t *grp = json_array_get(json_object_get(json_object_get(root, "groups"), dim), g);
	char got[512] = "", srv[256] = "";
	size_t off = 0, soff = 0, i;
	json_t *v;

	if (!grp)
		fail_msg("groups.%s[%zu] is missing", dim, g);
	json_array_foreach(json_object_get(grp, "ranks"), i, v)
		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%lld", i ? "," : "",
					(long long)json_integer_value(v));
	json_array_foreach(json_object_get(grp, "servers"), i, v)
		soff += (size_t)snprintf(srv + soff, sizeof(srv) - soff, "%s%s", i ? "," : "",
					 json_string_value(v));
	if (ranks)
		assert_string_equal(got, ranks);
	assert_string_equal(srv, servers);
	assert_string_equal(jstr(grp, "link"), link);
}

static size_t group_count(json_t *root, const char *dim)
{
	json_t *a = json_object_get(json_object_get(root, "groups"), dim);

	assert_true(json_is_array(a));
	return json_array_size(a);
}

/* The link classes listed, in order, as "a,b". */
static void expect_link_classes(json_t *root, const char *want)
{
	json_t *list = json_object_get(root, "link_classes"), *e;
	char got[128] = "";
	size_t off = 0, i;

	json_array_foreach(list, i, e) {
		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s", i ? "," : "",
					jstr(e, "name"));
		assert_true(json_is_real(json_object_get(e, "gbyte_per_sec")));
		assert_true(json_real_value(json_object_get(e, "gbyte_per_sec")) > 0);
		assert_true(json_is_real(json_object_get(e, "latency_usec")));
		assert_true(jint(e, "lanes") >= 1);
	}
	assert_string_equal(got, want);
}

/*
 * 910B, 4 servers interleaved over two leaf switches, `parallel: {tp: 8, pp: 2}` (dp 2):
 * a tp group is a server (HCCS mesh), a stage is the two servers of one switch (its dp
 * all-reduce stays under the leaf), and only the stage boundary crosses the spine.
 */
static void test_topology_910b_tp_dp_pp(void **state)
{
	/* node-0 leaf-0, node-1 leaf-1, node-2 leaf-0, node-3 leaf-1 */
	struct fx_opts o = { .servers = 4, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	static const char *const server_of[4] = { "node-0", "node-2", "node-1", "node-3" };
	struct sched_job *j;
	json_t *root, *ranks, *par, *b;

	(void)state;
	j = run_parallel(c, "llm", 32, 8, 0, 0, 2);
	root = load_topology(c, j);
	assert_string_equal(jstr(root, "job"), "llm");
	assert_int_equal(jint(root, "generation"), 1);
	assert_string_equal(jstr(root, "server_type"), "atlas800t-a2");
	assert_string_equal(jstr(root, "chip"), "910B");
	assert_int_equal(jint(root, "npus"), 32);
	assert_int_equal(jint(root, "server_count"), 4);
	assert_string_equal(jstr(root, "rank_order"), "tp-cp-ep-dp-pp");
	assert_true(json_real_value(json_object_get(root, "spine_oversubscription")) == 1.0);
	par = json_object_get(root, "parallel");
	assert_int_equal(jint(par, "tp"), 8);
	assert_int_equal(jint(par, "cp"), 1);
	assert_int_equal(jint(par, "ep"), 1);
	assert_int_equal(jint(par, "dp"), 2);
	assert_int_equal(jint(par, "pp"), 2);

	ranks = json_object_get(root, "ranks");
	assert_int_equal(json_array_size(ranks), 32);
	for (unsigned r = 0; r < 32; r++) {
		json_t *e = json_array_get(ranks, r);
		char ip[16];

		assert_int_equal(jint(e, "rank"), r);
		assert_string_equal(jstr(e, "server"), server_of[r / 8]);
		snprintf(ip, sizeof(ip), "10.1.0.%c", server_of[r / 8][5] + 1);
		assert_string_equal(jstr(e, "host_ip"), ip);
		assert_int_equal(jint(e, "device_id"), r % 8);
		assert_int_equal(jint(e, "hccs_group"), 0); /* one mesh of 8 */
		assert_string_equal(jstr(e, "leaf_switch"), r < 16 ? "leaf-0" : "leaf-1");
		assert_true(json_is_null(json_object_get(e, "super_pod")));
		assert_int_equal(jint(e, "tp"), r % 8);
		assert_int_equal(jint(e, "cp"), 0);
		assert_int_equal(jint(e, "ep"), 0);
		assert_int_equal(jint(e, "dp"), r / 8 % 2);
		assert_int_equal(jint(e, "pp"), r / 16);
	}

	assert_int_equal(group_count(root, "tp"), 4);
	expect_group(root, "tp", 0, "0,1,2,3,4,5,6,7", "node-0", "hccs");
	expect_group(root, "tp", 3, "24,25,26,27,28,29,30,31", "node-3", "hccs");
	assert_int_equal(group_count(root, "cp"), 0);
	assert_int_equal(group_count(root, "ep"), 0);
	assert_int_equal(group_count(root, "dp"), 16);
	expect_group(root, "dp", 0, "0,8", "node-0,node-2", "roce_leaf");
	expect_group(root, "dp", 9, "17,25", "node-1,node-3", "roce_leaf");
	assert_int_equal(group_count(root, "pp"), 16);
	expect_group(root, "pp", 5, "5,21", "node-0,node-1", "roce_spine");
	b = json_object_get(root, "pp_boundaries");
	assert_int_equal(json_array_size(b), 1);
	assert_int_equal(jint(json_array_get(b, 0), "from_stage"), 0);
	assert_int_equal(jint(json_array_get(b, 0), "to_stage"), 1);
	assert_string_equal(jstr(json_array_get(b, 0), "link"), "roce_spine");
	expect_link_classes(root, "hccs,roce_leaf,roce_spine");
	json_decref(root);
	{
		/* the cluster's spine_oversubscription divides RoCE through the spine */
		struct fx_opts o2 = o;
		struct sched_cluster *c2;
		json_t *r2, *cls, *e;
		size_t k;
		double spine = 0;

		o2.cluster_extra = "  spine_oversubscription: \"2.5:1\"\n";
		c2 = fx_cluster(&o2);
		r2 = load_topology(c2, run_parallel(c2, "llm", 32, 8, 0, 0, 2));
		assert_true(json_real_value(json_object_get(r2, "spine_oversubscription")) == 2.5);
		cls = json_object_get(r2, "link_classes");
		json_array_foreach(cls, k, e)
			if (strcmp(jstr(e, "name"), "roce_spine") == 0)
				spine = json_real_value(json_object_get(e, "gbyte_per_sec"));
		assert_true(spine == 20.0 / 2.5);
		json_decref(r2);
		sched_cluster_free(c2);
	}
	/* env exports the same layout, dp too though not given */
	{
		char *text;
		size_t len;
		struct env e;

		assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		expect_env(&e, "ASCEND_PARALLEL_TP", "8");
		expect_env(&e, "ASCEND_PARALLEL_CP", "1");
		expect_env(&e, "ASCEND_PARALLEL_EP", "1");
		expect_env(&e, "ASCEND_PARALLEL_DP", "2");
		expect_env(&e, "ASCEND_PARALLEL_PP", "2");
		env_free(&e);
		free(text);
	}

	/* not placed: no file */
	{
		struct sched_job *w = fx_submit(c, "waits", 8);
		char *text = NULL;
		size_t len = 0;

		assert_int_equal(w->state, SCHED_JOB_PENDING);
		assert_int_equal(sched_render_job_topology(c, w, &text, &len), -ENOENT);
		assert_null(text);
	}
	sched_cluster_free(c);
}

/*
 * 910 (Atlas 800, two HCCS rings of 4 per server), `parallel: {tp: 4, cp: 2, pp: 2}` on 16
 * NPUs: a tp group is one ring, a cp group joins the two rings (pcie), a stage is a server
 * and the boundary is the leaf switch. An MoE layout on one server: {tp: 2, ep: 2} (dp 4)
 * puts each ep group (ranks 2 apart) inside a ring.
 */
static void test_topology_910_rings(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	json_t *root, *ranks;

	(void)state;
	j = run_parallel(c, "ring", 16, 4, 2, 0, 2);
	root = load_topology(c, j);
	assert_string_equal(jstr(root, "chip"), "910");
	ranks = json_object_get(root, "ranks");
	for (unsigned r = 0; r < 16; r++) {
		json_t *e = json_array_get(ranks, r);

		assert_int_equal(jint(e, "device_id"), r % 8);
		assert_int_equal(jint(e, "hccs_group"), r % 8 / 4); /* rings 0-3, 4-7 */
		assert_int_equal(jint(e, "tp"), r % 4);
		assert_int_equal(jint(e, "cp"), r / 4 % 2);
		assert_int_equal(jint(e, "dp"), 0);
		assert_int_equal(jint(e, "pp"), r / 8);
	}
	assert_int_equal(group_count(root, "tp"), 4);
	for (size_t g = 0; g < 4; g++)
		expect_group(root, "tp", g, NULL, g < 2 ? "node-0" : "node-1", "hccs");
	assert_int_equal(group_count(root, "cp"), 8);
	expect_group(root, "cp", 0, "0,4", "node-0", "pcie");
	expect_group(root, "cp", 7, "11,15", "node-1", "pcie");
	assert_int_equal(group_count(root, "dp"), 0);
	assert_int_equal(group_count(root, "pp"), 8);
	expect_group(root, "pp", 0, "0,8", "node-0,node-1", "roce_leaf");
	assert_string_equal(jstr(json_array_get(json_object_get(root, "pp_boundaries"), 0),
				 "link"),
			    "roce_leaf");
	expect_link_classes(root, "hccs,roce_leaf,pcie"); /* fastest first: PCIe across rings is below a 910 NIC */
	json_decref(root);
	assert_int_equal(fx_complete(c, "ring", FX_UID, fx_now()), 0);

	j = run_parallel(c, "moe", 8, 2, 0, 2, 0);
	root = load_topology(c, j);
	assert_int_equal(jint(json_object_get(root, "parallel"), "dp"), 4);
	assert_int_equal(group_count(root, "ep"), 4);
	expect_group(root, "ep", 0, "0,2", "node-0", "hccs");
	expect_group(root, "ep", 1, "1,3", "node-0", "hccs");
	expect_group(root, "ep", 2, "4,6", "node-0", "hccs");
	assert_int_equal(jint(json_array_get(json_object_get(root, "ranks"), 6), "ep"), 1);
	assert_int_equal(jint(json_array_get(json_object_get(root, "ranks"), 6), "dp"), 3);
	expect_group(root, "dp", 0, "0,2,4,6", "node-0", "pcie");
	assert_int_equal(json_array_size(json_object_get(root, "pp_boundaries")), 0);
	json_decref(root);
	sched_cluster_free(c);
}

/*
 * A3 (16 dies in pairs, servers in super pods): a tp group of 2 is one die pair (sio), a
 * cp group across pairs is the server's HCCS, pipeline stages on two servers of one pod
 * talk over the super pod's fabric; every rank names its pod.
 */
static void test_topology_a3_pairs_and_pods(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	json_t *root;

	(void)state;
	j = run_parallel(c, "a3", 32, 2, 8, 0, 2);
	root = load_topology(c, j);
	assert_string_equal(jstr(root, "chip"), "910C");
	assert_string_equal(jstr(json_array_get(json_object_get(root, "ranks"), 17), "super_pod"),
			    "p0");
	assert_int_equal(jint(json_array_get(json_object_get(root, "ranks"), 17), "hccs_group"),
			 0);
	expect_group(root, "tp", 0, "0,1", "node-0", "sio");
	expect_group(root, "cp", 0, "0,2,4,6,8,10,12,14", "node-0", "hccs");
	expect_group(root, "pp", 0, "0,16", "node-0,node-1", "superpod");
	expect_link_classes(root, "sio,hccs,superpod");
	json_decref(root);
	sched_cluster_free(c);
}

/*
 * A job spread over leaf switches takes whole pipeline stages from each (issue 20: PP
 * stages across the next domain, DP inside one): 4 servers from switches of 3 free each
 * take 2 + 2, not 3 + 1, so with stages of 2 servers every dp all-reduce stays under
 * one leaf and only the stage boundary crosses the spine. Before, the 3 + 1 split put
 * the second stage astride the spine. When whole stages cannot add up (switches of 3
 * and 1 free), the job is placed as any other, astride, rather than not at all.
 */
static void test_topology_stages_whole_per_switch(void **state)
{
	/* node-0, 2, 4 under leaf-0; node-1, 3, 5 under leaf-1 */
	struct fx_opts o = { .servers = 6, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	json_t *root;

	(void)state;
	j = run_parallel(c, "llm", 32, 8, 0, 0, 2);
	root = load_topology(c, j);
	expect_group(root, "dp", 0, "0,8", "node-0,node-2", "roce_leaf");
	expect_group(root, "dp", 8, "16,24", "node-1,node-3", "roce_leaf");
	expect_group(root, "pp", 0, "0,16", "node-0,node-1", "roce_spine");
	json_decref(root);
	sched_cluster_free(c);

	/* the same job without stages fills the largest share first, as before */
	c = fx_cluster(&o);
	j = run_parallel(c, "flat", 32, 8, 0, 0, 0);
	assert_int_equal(j->slice_count, 4);
	assert_int_equal(j->slices[2].server, 4);
	assert_int_equal(j->slices[3].server, 1);
	sched_cluster_free(c);

	/* leaf-0 keeps one free server: stages cannot be whole, the job still runs */
	c = fx_cluster(&o);
	run_parallel(c, "filler", 16, 8, 0, 0, 0);
	j = run_parallel(c, "llm2", 32, 8, 0, 0, 2);
	root = load_topology(c, j);
	expect_group(root, "dp", 0, "0,8", "node-4,node-1", "roce_spine");
	json_decref(root);
	sched_cluster_free(c);
}

/*
 * A fault's replacement comes from the failed server's own leaf switch when one is free
 * there, so the job's servers per switch, and its whole stages per switch, stay as they
 * were (review of issue 20). 10 servers interleaved over two leaves; a 48-NPU job of 3
 * stages takes 4 servers of leaf-0 and 2 of leaf-1; node-2 (leaf-0) fails. Before,
 * the first free server of any switch the job used, node-5 of leaf-1, replaced it and
 * the middle stage sat astride the spine.
 */
static void test_topology_replacement_keeps_stages_whole(void **state)
{
	/* leaf-0: node-0, 2, 4, 6, 8; leaf-1: node-1, 3, 5, 7, 9 */
	struct fx_opts o = { .servers = 10, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	json_t *root, *dp, *g;
	size_t i;

	(void)state;
	j = run_parallel(c, "llm", 48, 8, 0, 0, 3);
	root = load_topology(c, j);
	expect_group(root, "dp", 0, "0,8", "node-0,node-2", "roce_leaf");
	expect_group(root, "dp", 8, "16,24", "node-4,node-6", "roce_leaf");
	expect_group(root, "dp", 16, "32,40", "node-1,node-3", "roce_leaf");
	json_decref(root);
	fx_report_npu(c, 2, 5, CONF_HEALTH_CRITICAL, fx_now());
	assert_int_equal(j->generation, 2);
	root = load_topology(c, j);
	dp = json_object_get(json_object_get(root, "groups"), "dp");
	json_array_foreach(dp, i, g)
		assert_string_equal(jstr(g, "link"), "roce_leaf");
	expect_group(root, "dp", 8, "16,24", "node-6,node-8", "roce_leaf");
	json_decref(root);
	sched_cluster_free(c);
}

/*
 * After a fault (an NPU of the job reports Critical) the recovery's new generation has a
 * topology.json of its own, and its tp groups mean what they meant: eight consecutive
 * ranks, each group inside one server, over HCCS.
 */
static void test_topology_after_recovery(void **state)
{
	struct fx_opts o = { .servers = 6, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	unsigned failed;
	json_t *root, *tp, *g;
	size_t i;

	(void)state;
	j = run_parallel(c, "llm", 32, 8, 0, 0, 2);
	failed = j->slices[1].server;
	fx_report_npu(c, failed, 5, CONF_HEALTH_CRITICAL, fx_now());
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->generation, 2);
	root = load_topology(c, j);
	assert_int_equal(jint(root, "generation"), 2);
	for (i = 0; i < 32; i++)
		assert_string_not_equal(jstr(json_array_get(json_object_get(root, "ranks"), i),
					     "server"),
					c->servers[failed].conf->name);
	tp = json_object_get(json_object_get(root, "groups"), "tp");
	assert_int_equal(json_array_size(tp), 4);
	json_array_foreach(tp, i, g) {
		json_t *r0 = json_array_get(json_object_get(g, "ranks"), 0);

		assert_int_equal(json_integer_value(r0), 8 * i);
		assert_int_equal(json_array_size(json_object_get(g, "ranks")), 8);
		assert_int_equal(json_array_size(json_object_get(g, "servers")), 1);
		assert_string_equal(jstr(g, "link"), "hccs");
	}
	json_decref(root);
	sched_cluster_free(c);
}

/* ---- queue, job status and metrics with queues, quotas and preemption ---- */

static const char *const share_queues = "  - name: default\n"
					"  - name: batch\n"
					"    quota_npus: 16\n"
					"    may_borrow: true\n"
					"    groups: [ml-research, infra]\n"
					"  - name: prod\n"
					"    priority: 900\n";

/* Four servers, quotas enforced, no stop grace (the deadline is one check interval). */
static struct sched_cluster *share_cluster(void)
{
	struct fx_opts o = { .servers = 4, .quota = true, .grace_sec = -1,
			     .queues = share_queues };

	return fx_cluster(&o);
}

/* A time @sec seconds past every fx_now() so far; fx_now() stays ahead of it. */
static uint64_t fx_later(unsigned sec)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < sec; i++)
		t = fx_now();
	return t;
}

static json_t *render_json(int (*render)(const struct sched_cluster *, const struct sched_job *,
					  char **, size_t *),
			   const struct sched_cluster *c, const struct sched_job *j)
{
	char *text = NULL;
	size_t len = 0;
	json_error_t err;
	json_t *o;

	assert_int_equal(render(c, j, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	o = json_loadb(text, len, 0, &err);
	if (!o)
		fail_msg("not JSON: %s\n%s", err.text, text);
	free(text);
	return o;
}

static json_t *queue_json(const struct sched_cluster *c, const char *queue)
{
	const struct conf_queue *q = conf_cluster_find_queue(c->conf, queue);
	char *text = NULL;
	size_t len = 0;
	json_error_t err;
	json_t *o;

	assert_non_null(q);
	assert_int_equal(sched_render_queue_status(c, q, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	o = json_loadb(text, len, 0, &err);
	if (!o)
		fail_msg("not JSON: %s\n%s", err.text, text);
	free(text);
	return o;
}

static const char *jtext(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

static bool jbool(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_boolean(v))
		fail_msg("%s is not a boolean", key);
	return json_is_true(v);
}

/* The job of queue @queue that is in state @state (exactly one must be). */
static struct sched_job *only_job_in(const struct sched_cluster *c, const char *queue,
				     enum sched_job_state state)
{
	struct sched_job *found = NULL;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		if (j->spec && strcmp(j->spec->queue, queue) == 0 && j->state == state) {
			if (found)
				fail_msg("jobs %s and %s are both %s", found->name, j->name,
					 sched_job_state_name(state));
			found = j;
		}
	}
	if (!found)
		fail_msg("no job of queue %s is %s", queue, sched_job_state_name(state));
	return found;
}

/* queues/<q>/status: configuration, usage from sched_queue_usage(), stopping included. */
static void test_queue_status_usage_and_borrowing(void **state)
{
	struct sched_cluster *c = share_cluster();
	json_t *o, *g;

	(void)state;
	o = queue_json(c, "batch");
	assert_string_equal(jtext(o, "queue"), "batch");
	assert_int_equal(jint(o, "quota_npus"), 16);
	assert_true(jbool(o, "enable_quota_limit"));
	assert_int_equal(jint(o, "priority"), 500);
	assert_int_equal(jint(o, "weight"), 1);
	assert_true(jbool(o, "may_borrow"));
	g = json_object_get(o, "groups");
	assert_true(json_is_array(g));
	assert_int_equal(json_array_size(g), 2);
	assert_string_equal(json_string_value(json_array_get(g, 0)), "ml-research");
	assert_string_equal(json_string_value(json_array_get(g, 1)), "infra");
	/* the job caps users are held to: the cluster's defaults here */
	assert_int_equal(jint(o, "max_priority"), 900);
	assert_int_equal(jint(o, "max_npus"), 0);
	assert_int_equal(jint(o, "max_time_limit_sec"), 0);
	assert_int_equal(jint(o, "default_time_limit_sec"), 0);
	assert_int_equal(jint(o, "max_submit_jobs_per_user"), 0);
	assert_int_equal(jint(o, "max_submit_jobs"), 0);
	assert_int_equal(jint(o, "used_npus"), 0);
	assert_int_equal(jint(o, "borrowed_npus"), 0);
	assert_int_equal(jint(o, "pending"), 0);
	assert_int_equal(jint(o, "running"), 0);
	assert_int_equal(jint(o, "stopping"), 0);
	json_decref(o);

	/* 16 within the quota, 16 more borrowed on idle NPUs, one more waits */
	fx_submit_spec(c, fx_spec_full("b1", 16, "batch", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("b2", 8, "batch", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("b3", 8, "batch", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("b4", 8, "batch", 500), FX_UID);
	o = queue_json(c, "batch");
	assert_int_equal(jint(o, "used_npus"), 32);
	assert_int_equal(jint(o, "borrowed_npus"), 16);
	assert_int_equal(jint(o, "running"), 3);
	assert_int_equal(jint(o, "pending"), 1);
	json_decref(o);
	o = queue_json(c, "prod");
	assert_int_equal(jint(o, "priority"), 900);
	assert_int_equal(json_array_size(json_object_get(o, "groups")), 0);
	json_decref(o);

	/* a prod job preempts one borrower: stopping, and its NPUs still count as used */
	fx_submit_spec(c, fx_spec_full("p1", 8, "prod", 500), FX_UID);
	only_job_in(c, "batch", SCHED_JOB_STOPPING);
	o = queue_json(c, "batch");
	assert_int_equal(jint(o, "used_npus"), 32);
	assert_int_equal(jint(o, "running"), 2);
	assert_int_equal(jint(o, "stopping"), 1);
	assert_int_equal(jint(o, "pending"), 1);
	json_decref(o);
	o = queue_json(c, "prod");
	assert_int_equal(jint(o, "pending"), 1);
	assert_int_equal(jint(o, "used_npus"), 0);
	json_decref(o);
	sched_cluster_free(c);
}

static bool server_lists(const struct sched_cluster *c, unsigned server, const char *job)
{
	char *text = NULL, line[CONF_NAME_MAX + 2];
	size_t len = 0;
	bool found;

	assert_int_equal(sched_render_server_jobs(c, server, &text, &len), 0);
	snprintf(line, sizeof(line), "%s ", job);
	found = strncmp(text, line, strlen(line)) == 0;
	for (const char *nl = strchr(text, '\n'); nl && !found; nl = strchr(nl + 1, '\n'))
		found = strncmp(nl + 1, line, strlen(line)) == 0;
	free(text);
	return found;
}

static char *metrics_of(const struct sched_cluster *c)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(sched_render_metrics(c, fx_now(), &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

static void expect_metric(const char *text, const char *line)
{
	char want[256];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("metrics lack \"%s\":\n%s", line, text);
}

/*
 * status.json through a preemption: the victim shows stopping with its preemptor and
 * stop deadline and leaves its server's jobs list (its agent stops it); after the
 * deadline it is pending with its run time kept, and the preemptor runs.
 */
static void test_job_status_preemption_fields(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct sched_job *v, *p1;
	unsigned server;
	json_t *o;
	char *m;

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		char name[16];

		snprintf(name, sizeof(name), "low%u", i);
		fx_submit_spec(c, fx_spec_full(name, 8, NULL, 100), FX_UID);
	}
	assert_int_equal(c->npus_allocated, 32);
	v = c->jobs[0];
	o = render_json(sched_render_job_status_json, c, v);
	assert_string_equal(jtext(o, "state"), "running");
	assert_string_equal(jtext(o, "queue"), "default");
	assert_int_equal(jint(o, "priority"), 100);
	assert_int_equal(jint(o, "npus_min"), 8);
	assert_int_equal(jint(o, "npus_max"), 8);
	assert_int_equal(jint(o, "time_limit_sec"), 0);
	assert_true(json_is_real(json_object_get(o, "run_accum_sec")));
	assert_true(json_real_value(json_object_get(o, "run_accum_sec")) == 0.0);
	assert_true(json_is_string(json_object_get(o, "run_since")));
	assert_false(jbool(o, "borrowing"));
	assert_int_equal(jint(o, "preemptions"), 0);
	assert_string_equal(jtext(o, "preempted_by"), "");
	assert_true(json_is_null(json_object_get(o, "reserved_start")));
	assert_true(json_is_null(json_object_get(o, "stop_deadline")));
	json_decref(o);

	p1 = fx_submit_spec(c, fx_spec_full("p1", 8, "prod", 500), FX_UID);
	assert_int_equal(p1->state, SCHED_JOB_PENDING);
	v = only_job_in(c, "default", SCHED_JOB_STOPPING);
	server = v->slices[0].server;
	o = render_json(sched_render_job_status_json, c, v);
	assert_string_equal(jtext(o, "state"), "stopping");
	assert_string_equal(jtext(o, "preempted_by"), "p1");
	assert_int_equal(jint(o, "preemptions"), 1);
	assert_true(json_is_string(json_object_get(o, "stop_deadline")));
	assert_non_null(strstr(jtext(o, "reason"), "preempted by job p1"));
	json_decref(o);
	/* the preemptor holds a reservation from the victim's stop deadline */
	o = render_json(sched_render_job_status_json, c, p1);
	assert_string_equal(jtext(o, "state"), "pending");
	assert_true(json_is_string(json_object_get(o, "reserved_start")));
	assert_string_not_equal(jtext(o, "reserved_start"), "unknown");
	json_decref(o);
	/* agents run only running jobs: the victim is gone from its server's list */
	assert_false(server_lists(c, server, v->name));
	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i]->state == SCHED_JOB_RUNNING)
			assert_true(server_lists(c, c->jobs[i]->slices[0].server,
						 c->jobs[i]->name));
	m = metrics_of(c);
	expect_metric(m, "ascendfs_preemptions_total 1");
	expect_metric(m, "ascendfs_queue_used_npus{queue=\"default\"} 32");
	expect_metric(m, "ascendfs_queue_used_npus{queue=\"prod\"} 0");
	expect_metric(m, "ascendfs_queue_pending_jobs{queue=\"prod\"} 1");
	expect_metric(m, "ascendfs_queue_pending_jobs{queue=\"default\"} 0");
	free(m);

	/* the stop deadline passes (grace 0 + the 5 s check interval) */
	assert_int_equal(sched_tick(c, fx_later(6)), 1);
	fx_check(c);
	assert_int_equal(p1->state, SCHED_JOB_RUNNING);
	assert_int_equal(v->state, SCHED_JOB_PENDING);
	assert_true(server_lists(c, server, "p1"));
	o = render_json(sched_render_job_status_json, c, v);
	assert_string_equal(jtext(o, "state"), "pending");
	assert_non_null(strstr(jtext(o, "reason"), "preempted by job \"p1\""));
	assert_true(json_real_value(json_object_get(o, "run_accum_sec")) > 0.0);
	assert_true(json_is_null(json_object_get(o, "run_since")));
	assert_true(json_is_null(json_object_get(o, "stop_deadline")));
	assert_string_equal(jtext(o, "preempted_by"), "p1");
	/* it waits for running jobs without a time_limit: its start is unknown */
	assert_string_equal(jtext(o, "reserved_start"), "unknown");
	json_decref(o);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_queue_pending_jobs{queue=\"default\"} 1");
	expect_metric(m, "ascendfs_queue_used_npus{queue=\"prod\"} 8");
	free(m);
	sched_cluster_free(c);
}

/* A job past its time_limit goes stopping, then timeout; the counter follows. */
static void test_job_status_time_limit(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct conf_job_spec *spec = fx_spec_full("short", 8, NULL, 500);
	struct sched_job *j;
	json_t *o;
	char *m;

	(void)state;
	spec->time_limit_sec = 2;
	j = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	o = render_json(sched_render_job_status_json, c, j);
	assert_int_equal(jint(o, "time_limit_sec"), 2);
	json_decref(o);
	assert_int_equal(sched_tick(c, fx_later(3)), 1);
	assert_int_equal(j->state, SCHED_JOB_STOPPING);
	o = render_json(sched_render_job_status_json, c, j);
	assert_string_equal(jtext(o, "state"), "stopping");
	assert_non_null(strstr(jtext(o, "reason"), "time limit"));
	assert_true(json_is_string(json_object_get(o, "stop_deadline")));
	assert_string_equal(jtext(o, "preempted_by"), "");
	json_decref(o);
	assert_false(server_lists(c, j->slices[0].server, "short"));
	assert_int_equal(sched_tick(c, fx_later(6)), 1);
	assert_int_equal(j->state, SCHED_JOB_TIMEOUT);
	o = render_json(sched_render_job_status_json, c, j);
	assert_string_equal(jtext(o, "state"), "timeout");
	assert_true(json_real_value(json_object_get(o, "run_accum_sec")) >= 2.0);
	assert_true(json_is_null(json_object_get(o, "stop_deadline")));
	json_decref(o);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_timeouts_total 1");
	expect_metric(m, "ascendfs_jobs{state=\"timeout\"} 1");
	free(m);
	sched_cluster_free(c);
}

/* A quota set while quotas are off is kept, but its event and the queue's status say it
 * has no effect and how to turn quotas on; with quotas on, nothing of that. */
static void test_quota_while_quotas_off_says_not_enforced(void **state)
{
	static const char queues[] = "  - name: q\n";
	struct fx_opts o = { .servers = 2, .queues = queues };
	struct sched_cluster *c = fx_cluster(&o);
	const struct sched_event *e, *last = NULL;
	json_t *d;

	(void)state;
	assert_int_equal(sched_queue_set_quota(c, "q", 8, fx_now()), 0);
	for (e = sched_event_next(c, 0); e; e = sched_event_next(c, e->seq))
		last = e;
	assert_non_null(last);
	assert_non_null(strstr(last->reason, "quota set to 8 NPUs; not enforced: "
					     "resource.enable_quota_limit is false (set it to true"));
	d = queue_json(c, "q");
	assert_false(json_is_true(json_object_get(d, "quota_enforced")));
	assert_non_null(strstr(json_string_value(json_object_get(d, "quota_note")),
			       "not enforced"));
	json_decref(d);
	sched_cluster_free(c);

	o.quota = true;
	c = fx_cluster(&o);
	assert_int_equal(sched_queue_set_quota(c, "q", 1, fx_now()), 0);
	for (e = sched_event_next(c, 0); e; e = sched_event_next(c, e->seq))
		last = e;
	assert_null(strstr(last->reason, "not enforced"));
	d = queue_json(c, "q");
	assert_true(json_is_true(json_object_get(d, "quota_enforced")));
	assert_true(json_is_null(json_object_get(d, "quota_note")));
	json_decref(d);
	sched_cluster_free(c);
}

/* Reals are short: heartbeat_age_sec to the ms, utilization to 4 decimals. */
static void test_reals_are_short(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_health_report r = { .has_node = true, .node = CONF_HEALTH_OK };
	char *text;
	size_t len;
	json_t *d;

	(void)state;
	assert_int_equal(sched_server_report(c, 0, &r, 1000000000), 0);
	/* 1945 us: 0.0019449999999999999 as %.17g */
	assert_int_equal(sched_render_server_info(c, 0, 1000001945, &text, &len), 0);
	assert_non_null(strstr(text, "\"heartbeat_age_sec\": 0.002,"));
	d = json_loads(text, 0, NULL);
	assert_non_null(d);
	assert_true(json_real_value(json_object_get(d, "heartbeat_age_sec")) == 0.002);
	json_decref(d);
	free(text);
	fx_run(c, "one", 8);
	assert_int_equal(sched_render_cluster_status(c, &text, &len), 0);
	/* 8 of 24 NPUs */
	assert_non_null(strstr(text, "\"utilization\": 0.3333,"));
	free(text);
	sched_cluster_free(c);
}

/* Elastic sizes in status.json; a grown job counts as a resize. */
static void test_job_status_elastic_and_resize_metric(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct conf_job_spec *spec = fx_spec_full("elastic", 8, NULL, 500);
	struct sched_job *j;
	json_t *o;
	char *m;

	(void)state;
	fx_submit_spec(c, fx_spec_full("x", 8, NULL, 500), FX_UID);
	spec->npus_max = 32;
	j = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(sched_job_total_npus(j), 24);
	o = render_json(sched_render_job_status_json, c, j);
	assert_int_equal(jint(o, "npus_min"), 8);
	assert_int_equal(jint(o, "npus_max"), 32);
	assert_int_equal(jint(o, "npus_allocated"), 24);
	json_decref(o);
	assert_int_equal(fx_cancel(c, "x", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_total_npus(j), 32);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_resizes_total 1");
	expect_metric(m, "ascendfs_preemptions_total 0");
	free(m);
	sched_cluster_free(c);
}

/* cluster/jobs (squeue): a header, then the active jobs in order, each with its state,
 * queue, owner, NPUs (held, or asked for while pending), age and reason; ended jobs
 * are left out; a reason's line break never splits a line. */
static void test_jobs_table(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct sched_job *run, *wait, *gone;
	uint64_t t;
	char *text, line[512];
	size_t len;

	(void)state;
	run = fx_run(c, "run", 16);
	gone = fx_run(c, "gone", 8);
	wait = fx_submit_spec(c, fx_spec_full("wait", 24, NULL, 500), FX_UID);
	assert_int_equal(wait->state, SCHED_JOB_PENDING);
	assert_int_equal(sched_job_cancel(c, "gone", FX_UID, fx_now()), 0);
	fx_report_gone(c, "gone", fx_now());
	assert_true(sched_job_state_is_terminal(gone->state));
	t = run->submit_usec + (86400ull + 3600 + 62) * 1000000u;
	sched_job_set_reason(c, wait, "one\ntwo");
	assert_int_equal(sched_render_jobs_table(c, t, &text, &len), 0);
	assert_int_equal(len, strlen(text));
	/* every column as wide as its widest field: "pending" and "1-01:01:02" here */
	assert_string_equal(strtok(text, "\n"), "JOB   STATE    QUEUE     UID  NPUS         AGE  "
						"REASON");
	snprintf(line, sizeof(line), "run   running  default  %4u    16  1-01:01:02  %s",
		 (unsigned)FX_UID, run->reason);
	assert_string_equal(strtok(NULL, "\n"), line);
	assert_non_null(strstr(strtok(NULL, "\n"), "wait  pending  default  "));
	assert_null(strtok(NULL, "\n"));
	free(text);
	assert_int_equal(sched_render_jobs_table(c, t, &text, &len), 0);
	assert_non_null(strstr(text, " 24 ")); /* asked for, while it holds none */
	assert_non_null(strstr(text, " one two\n"));
	assert_null(strstr(text, "gone"));
	free(text);
	fx_check(c);
	sched_cluster_free(c);
}

/* A short job started ahead of a reservation it does not delay counts as backfilled. */
static void test_metrics_backfilled(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct conf_job_spec *spec = fx_spec_full("long", 16, NULL, 500);
	struct sched_job *big, *quick;
	json_t *o;
	char *m;

	(void)state;
	spec->time_limit_sec = 3600;
	fx_submit_spec(c, spec, FX_UID);
	big = fx_submit_spec(c, fx_spec_full("big", 32, NULL, 500), FX_UID);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	o = render_json(sched_render_job_status_json, c, big);
	assert_true(json_is_string(json_object_get(o, "reserved_start")));
	assert_string_not_equal(jtext(o, "reserved_start"), "unknown");
	json_decref(o);
	spec = fx_spec_full("quick", 8, NULL, 500);
	spec->time_limit_sec = 600;
	quick = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(quick->state, SCHED_JOB_RUNNING);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_backfilled_total 1");
	free(m);

	/* a job of higher priority takes the reservation: big's is gone from status.json */
	fx_submit_spec(c, fx_spec_full("urgent", 24, NULL, 900), FX_UID);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(big->reason, "waiting behind job \"urgent\""));
	o = render_json(sched_render_job_status_json, c, big);
	assert_true(json_is_null(json_object_get(o, "reserved_start")));
	json_decref(o);
	sched_cluster_free(c);
}

/* ---- every view of the cluster tells the same story ---- */

/* Every server but @silent (UINT_MAX: none) reports OK at @now: their heartbeat. */
static void views_heartbeat(struct sched_cluster *c, unsigned silent, uint64_t now)
{
	for (unsigned i = 0; i < c->server_count; i++)
		if (i != silent)
			fx_report_ok(c, i, now);
}

typedef int (*server_render_fn)(const struct sched_cluster *, unsigned, char **, size_t *);

static char *server_text(server_render_fn fn, const struct sched_cluster *c, unsigned server)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(fn(c, server, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

static json_t *parse_or_fail(char *text, const char *what)
{
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);

	if (!o)
		fail_msg("%s is not JSON: %s\n%s", what, err.text, text);
	free(text);
	return o;
}

static json_t *cluster_json(int (*fn)(const struct sched_cluster *, char **, size_t *),
			    const struct sched_cluster *c, const char *what)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(fn(c, &text, &len), 0);
	return parse_or_fail(text, what);
}

/* The value of the metrics sample that starts with @series (name and labels). */
static long metric_value(const char *metrics, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = metrics; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtol(p + n + 1, NULL, 10);
	fail_msg("metrics lack a sample %s\n%s", series, metrics);
	return -1;
}

/* The line of @text that starts with @prefix, copied to @buf (must exist). */
static const char *line_of(const char *text, const char *prefix, char *buf, size_t len)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, n) == 0) {
			const char *end = strchr(p, '\n');

			snprintf(buf, len, "%.*s", (int)(end ? end - p : (long)strlen(p)), p);
			return buf;
		}
	fail_msg("no line starts with \"%s\" in\n%s", prefix, text);
	return NULL;
}

/* The one server name of @c that @reason names as a word, NULL for none or several. */
static const char *server_named(const struct sched_cluster *c, const char *reason)
{
	const char *found = NULL;

	for (unsigned i = 0; i < c->server_count; i++) {
		const char *name = c->servers[i].conf->name, *p = reason;
		size_t n = strlen(name);

		while ((p = strstr(p, name))) {
			if ((p == reason || p[-1] == ' ' || p[-1] == '"') &&
			    !(p[n] >= '0' && p[n] <= '9')) {
				if (found && strcmp(found, name) != 0)
					return NULL;
				found = name;
				break;
			}
			p += n;
		}
	}
	return found;
}

static const char *const use_names[] = { "allocated", "free", "isolated", "unavailable" };

/*
 * A cluster with an escalated NPU (manual isolation, OK again), an Alarm NPU under its
 * running job, a cordoned server, a draining server with a job, an unreachable server,
 * moved and pending jobs; every view must say the same thing about every NPU, every
 * server and every job, and total = allocated + free + isolated + unavailable in each.
 */
static void test_views_agree(void **state)
{
	struct fx_opts o = { .servers = 6 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a;
	json_t *topo, *status, *servers;
	char *metrics, buf[512], prefix[256];
	unsigned by_use[4] = { 0 }, by_state[SCHED_JOB_STATE_COUNT] = { 0 };
	unsigned srv_states[5] = { 0 };
	static const char *const srv_names[5] = { "unknown", "ready", "cordoned", "draining",
						  "unreachable" };
	unsigned q_pending = 0, q_running = 0, q_stopping = 0, q_used = 0;
	uint64_t now = fx_now(), version;

	(void)state;
	views_heartbeat(c, UINT32_MAX, now);
	a = fx_run_on(c, "a", 8, 0);
	fx_run_on(c, "b", 8, 1);
	fx_run_on(c, "d", 4, 3);
	fx_run_on(c, "u", 8, 4);
	fx_submit(c, "p", 40);
	assert_int_equal(sched_server_set_cordon(c, "node-5", true, false, fx_now()), 0);
	assert_int_equal(sched_server_set_cordon(c, "node-3", true, true, fx_now()), 0);
	/* node-0's NPU 2 faults fault_escalate_count times: isolated until `clear` */
	for (unsigned k = 0; k < c->conf->fault_escalate_count; k++) {
		now = fx_later(1);
		views_heartbeat(c, 4, now);
		fx_report_npu(c, 0, 2, CONF_HEALTH_CRITICAL, now);
		if (k + 1 == c->conf->fault_escalate_count)
			break;
		now = fx_later(c->conf->fault_hold_sec + 1);
		views_heartbeat(c, 4, now);
		views_heartbeat(c, 4, fx_later(c->conf->fault_hold_sec + 1));
		assert_false(c->servers[0].npus[2].isolated);
	}
	assert_int_equal(c->servers[0].npus[2].isolation, SCHED_ISOLATION_MANUAL);
	assert_int_equal(a->state, SCHED_JOB_RUNNING);
	assert_int_equal(a->slices[0].server, 2);
	/* the agent says OK again: the NPU stays out, and the views must show the new
	 * health (the daemon's file cache is keyed on the cluster version) */
	version = c->version;
	fx_report_ok(c, 0, fx_later(1));
	assert_int_equal(c->servers[0].npus[2].health, SCHED_HEALTH_OK);
	assert_true(c->version != version);
	/* node-4 has been silent for longer than heartbeat_timeout */
	now = fx_later(c->conf->heartbeat_timeout_sec + 1);
	views_heartbeat(c, 4, now);
	/* an Alarm under job b: pre-isolated, b keeps it */
	fx_report_npu(c, 1, 5, CONF_HEALTH_ALARM, now);
	assert_int_equal(sched_check_heartbeats(c, now), 1);
	fx_check(c);

	topo = cluster_json(sched_render_topology, c, "topology.json");
	status = cluster_json(sched_render_cluster_status, c, "cluster/status");
	metrics = NULL;
	{
		size_t len;

		assert_int_equal(sched_render_metrics(c, now, &metrics, &len), 0);
	}
	servers = json_object_get(topo, "servers");
	assert_int_equal(json_array_size(servers), c->server_count);
	for (unsigned i = 0; i < c->server_count; i++) {
		json_t *ts = json_array_get(servers, i), *tn = json_object_get(ts, "npus");
		char *npus = server_text(sched_render_server_npus, c, i);
		char *health = server_text(sched_render_server_health, c, i);
		char *info_text = NULL;
		json_t *info;
		const char *name = c->servers[i].conf->name, *sstate;
		unsigned server_free = 0;
		size_t len;

		assert_int_equal(sched_render_server_info(c, i, now, &info_text, &len), 0);
		info = parse_or_fail(info_text, "nodes/<server>/info");
		/* the server's state: topology, info, health's node line */
		sstate = jtext(ts, "state");
		assert_string_equal(jtext(info, "state"), sstate);
		snprintf(buf, sizeof(buf), "node %s %s",
			 sched_health_name(c->servers[i].node_health), sstate);
		assert_non_null(strstr(health, buf));
		for (unsigned k = 0; k < 5; k++)
			srv_states[k] += strcmp(srv_names[k], sstate) == 0;
		/* NPU by NPU */
		for (unsigned d = 0; d < c->servers[i].conf->npu_count; d++) {
			json_t *tnpu = json_array_get(tn, d);
			const char *h = jtext(tnpu, "health"), *iso = jtext(tnpu, "isolation");
			const char *use = jtext(tnpu, "state");
			json_t *job = json_object_get(tnpu, "job");
			char want[256], got[256];
			unsigned u;

			/* topology's isolated flag and isolation kind agree */
			assert_int_equal(jbool(tnpu, "isolated"), strcmp(iso, "none") != 0);
			/* npus: "<id> <ip> <health>[,isolated:<kind>] <job> <rank>" */
			snprintf(prefix, sizeof(prefix), "%u ", d);
			line_of(npus, prefix, got, sizeof(got));
			snprintf(want, sizeof(want), "%s%s%s ", h, strcmp(iso, "none") ? ",isolated:" : "",
				 strcmp(iso, "none") ? iso : "");
			if (!strstr(got, want))
				fail_msg("%s NPU %u: npus says \"%s\", topology \"%s\"", name, d, got,
					 want);
			if (json_is_string(job)) {
				snprintf(want, sizeof(want), " %s %lld", json_string_value(job),
					 (long long)jint(tnpu, "rank"));
				assert_non_null(strstr(got, want));
			} else {
				assert_non_null(strstr(got, " - -"));
			}
			/* health: "npu <id> <health>[ isolated:<kind> (fault)]" */
			snprintf(prefix, sizeof(prefix), "npu %u ", d);
			line_of(health, prefix, got, sizeof(got));
			snprintf(want, sizeof(want), "npu %u %s%s%s", d, h,
				 strcmp(iso, "none") ? " isolated:" : "", strcmp(iso, "none") ? iso : "");
			if (strncmp(got, want, strlen(want)) != 0 ||
			    (got[strlen(want)] != '\0' && got[strlen(want)] != ' '))
				fail_msg("%s NPU %u: health says \"%s\", topology \"%s\"", name, d, got,
					 want);
			/* metrics: NPU Exporter's health and ascendfs's own state */
			snprintf(prefix, sizeof(prefix), "npu_chip_info_health_status{id=\"%u\",node=\"%s\"}",
				 d, name);
			assert_int_equal(metric_value(metrics, prefix),
					 strcmp(h, "UNKNOWN") == 0 ? -1 :
					 strcmp(h, "OK") == 0 || strcmp(h, "Warning") == 0 ? 1 : 0);
			snprintf(prefix, sizeof(prefix),
				 "ascendfs_npu_state{id=\"%u\",node=\"%s\",state=\"%s\",isolation=\"%s\"}",
				 d, name, use, iso);
			assert_int_equal(metric_value(metrics, prefix), 1);
			for (u = 0; u < 4 && strcmp(use_names[u], use) != 0; u++)
				;
			if (u == 4)
				fail_msg("%s NPU %u: state \"%s\"", name, d, use);
			by_use[u]++;
			server_free += u == 1;
			/* a held NPU is allocated whatever its health */
			assert_int_equal(json_is_string(job), u == 0);
		}
		assert_int_equal(jint(ts, "npus_free"), server_free);
		assert_int_equal(jint(info, "npus_free"), server_free);
		json_decref(info);
		free(npus);
		free(health);
	}
	/* the facts this cluster was built with */
	{
		json_t *n0 = json_array_get(json_object_get(json_array_get(servers, 0), "npus"), 2);
		json_t *n1 = json_array_get(json_object_get(json_array_get(servers, 1), "npus"), 5);

		assert_string_equal(jtext(n0, "health"), "OK");
		assert_string_equal(jtext(n0, "isolation"), "manual");
		assert_string_equal(jtext(n0, "state"), "isolated");
		assert_string_equal(jtext(n1, "health"), "Alarm");
		assert_string_equal(jtext(n1, "isolation"), "alarm");
		assert_string_equal(jtext(n1, "state"), "allocated");
		assert_string_equal(jtext(json_array_get(servers, 3), "state"), "draining");
		assert_string_equal(jtext(json_array_get(servers, 4), "state"), "unreachable");
		assert_string_equal(jtext(json_array_get(servers, 5), "state"), "cordoned");
	}
	assert_int_equal(by_use[0], 20);
	assert_int_equal(by_use[1], 7);
	assert_int_equal(by_use[2], 9);
	assert_int_equal(by_use[3], 12);
	/* the totals: cluster/status and metrics count what the NPUs say */
	{
		json_t *np = json_object_get(status, "npus"), *ss = json_object_get(status, "servers");
		unsigned total = 0;

		for (unsigned u = 0; u < 4; u++) {
			snprintf(prefix, sizeof(prefix), "ascendfs_npus{state=\"%s\"}", use_names[u]);
			assert_int_equal(jint(np, use_names[u]), by_use[u]);
			assert_int_equal(metric_value(metrics, prefix), by_use[u]);
			total += by_use[u];
		}
		assert_int_equal(jint(np, "total"), total);
		assert_int_equal(metric_value(metrics, "ascendfs_npus{state=\"total\"}"), total);
		total = 0;
		for (unsigned k = 0; k < 5; k++) {
			snprintf(prefix, sizeof(prefix), "ascendfs_servers{state=\"%s\"}", srv_names[k]);
			assert_int_equal(metric_value(metrics, prefix), srv_states[k]);
			assert_int_equal(jint(ss, srv_names[k]), srv_states[k]);
			total += srv_states[k];
		}
		assert_int_equal(jint(ss, "total"), total);
		assert_int_equal(jint(ss, "schedulable"), srv_states[0] + srv_states[1]);
	}
	/* jobs: status.json of each, cluster/status, metrics and the queues */
	for (size_t i = 0; i < c->job_count; i++) {
		json_t *js = render_json(sched_render_job_status_json, c, c->jobs[i]);

		const char *said = NULL;

		assert_string_equal(jtext(js, "state"), sched_job_state_name(c->jobs[i]->state));
		by_state[c->jobs[i]->state]++;
		/* the newest of its events that says a state says this one */
		for (const struct sched_event *e = sched_event_next(c, 0); e;
		     e = sched_event_next(c, e->seq))
			if (strcmp(e->job, c->jobs[i]->name) == 0 && e->state)
				said = e->state;
		assert_non_null(said);
		assert_string_equal(said, jtext(js, "state"));
		json_decref(js);
	}
	for (int st = 0; st < SCHED_JOB_STATE_COUNT; st++) {
		snprintf(prefix, sizeof(prefix), "ascendfs_jobs{state=\"%s\"}",
			 sched_job_state_name(st));
		assert_int_equal(metric_value(metrics, prefix), by_state[st]);
		assert_int_equal(jint(json_object_get(status, "jobs"), sched_job_state_name(st)),
				 by_state[st]);
	}
	for (size_t q = 0; q < c->conf->queue_count; q++) {
		json_t *qs = queue_json(c, c->conf->queues[q].name);

		q_pending += (unsigned)jint(qs, "pending");
		q_running += (unsigned)jint(qs, "running");
		q_stopping += (unsigned)jint(qs, "stopping");
		q_used += (unsigned)jint(qs, "used_npus");
		json_decref(qs);
	}
	assert_int_equal(q_pending, by_state[SCHED_JOB_PENDING]);
	assert_int_equal(q_running, by_state[SCHED_JOB_RUNNING] + by_state[SCHED_JOB_RECOVERING]);
	assert_int_equal(q_stopping, by_state[SCHED_JOB_STOPPING]);
	assert_int_equal(q_used, by_use[0]);
	/* events: one whose reason names a server (or "NPU n of <server>") carries it */
	for (const struct sched_event *e = sched_event_next(c, 0); e; e = sched_event_next(c, e->seq)) {
		const char *named = server_named(c, e->reason), *of = strstr(e->reason, "NPU ");
		unsigned npu;
		char srv[CONF_NAME_MAX + 1];

		if (named && strcmp(e->server, named) != 0)
			fail_msg("event %llu (%s) names server %s but its server is \"%s\": %s",
				 (unsigned long long)e->seq, sched_event_kind_name(e->kind), named,
				 e->server, e->line);
		if (of && sscanf(of, "NPU %u of %63[^:;, ]", &npu, srv) == 2 &&
		    strcmp(srv, e->server) == 0 && e->npu != (int)npu)
			fail_msg("event %llu (%s) names NPU %u of %s but its npu is %d: %s",
				 (unsigned long long)e->seq, sched_event_kind_name(e->kind), npu, srv,
				 e->npu, e->line);
	}
	json_decref(topo);
	json_decref(status);
	free(metrics);
	sched_cluster_free(c);
}

/* cluster/utilization: a sample a minute (not more), the newest day kept, each line the
 * counts cluster/status gives at that instant. */
static void test_utilization_samples(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	uint64_t t = fx_now();
	char *text = NULL, *last;
	size_t len = 0, lines = 0;

	(void)state;
	assert_true(sched_util_sample(c, t));
	assert_false(sched_util_sample(c, t + SCHED_UTIL_INTERVAL_USEC - 1));
	fx_run(c, "a", 8);
	fx_submit(c, "b", 16);
	assert_true(sched_util_sample(c, t + SCHED_UTIL_INTERVAL_USEC));
	assert_int_equal(sched_render_utilization(c, &text, &len), 0);
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	assert_int_equal(lines, 2);
	assert_non_null(strstr(text, "\"npus_total\":16,\"npus_allocated\":0"));
	last = strstr(text, "\n") + 1;
	assert_non_null(strstr(last, "\"npus_allocated\":8"));
	assert_non_null(strstr(last, "\"utilization\":0.5"));
	assert_non_null(strstr(last, "\"jobs_pending\":1,\"jobs_running\":1"));
	free(text);
	/* a day and a bit later: the newest SCHED_UTIL_SAMPLES */
	for (unsigned i = 2; i < SCHED_UTIL_SAMPLES + 10; i++)
		assert_true(sched_util_sample(c, t + i * SCHED_UTIL_INTERVAL_USEC));
	assert_int_equal(c->util_count, SCHED_UTIL_SAMPLES);
	assert_true(c->util[c->util_head].time_usec == t + 10 * SCHED_UTIL_INTERVAL_USEC);
	sched_cluster_free(c);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_writer_is_jansson),
		cmocka_unit_test(test_ranktable_single_server),
		cmocka_unit_test(test_ranktable_four_servers),
		cmocka_unit_test(test_ranktable_910_ring_jobs),
		cmocka_unit_test(test_ranktable_super_pod),
		cmocka_unit_test(test_ranktable_initializing_and_unplaced),
		cmocka_unit_test(test_ranktable_a3_reported_sdids),
		cmocka_unit_test(test_ranktable_a3_inconsistent_sdids),
		cmocka_unit_test(test_ranktable_a3_device_ips),
		cmocka_unit_test(test_ranktable_910_requires_device_ip),
		cmocka_unit_test(test_ranktable_device_ip_conflicts),
		cmocka_unit_test(test_ranktable_waiting_for_names_servers),
		cmocka_unit_test(test_ranktable_not_completed_within_bound_fails),
		cmocka_unit_test(test_ranktable_checker_rejects_broken_copies),
		cmocka_unit_test(test_topology_910b_tp_dp_pp),
		cmocka_unit_test(test_topology_910_rings),
		cmocka_unit_test(test_topology_a3_pairs_and_pods),
		cmocka_unit_test(test_topology_stages_whole_per_switch),
		cmocka_unit_test(test_topology_replacement_keeps_stages_whole),
		cmocka_unit_test(test_topology_after_recovery),
		cmocka_unit_test(test_shell_quote_special_characters),
		cmocka_unit_test(test_env_job_values),
		cmocka_unit_test(test_env_host_values),
		cmocka_unit_test(test_env_rank_values_ring),
		cmocka_unit_test(test_env_all_files_strict_syntax),
		cmocka_unit_test(test_env_msrun_rank_table_launch),
		cmocka_unit_test(test_env_sched_port_per_master),
		cmocka_unit_test(test_env_sourced_by_sh),
		cmocka_unit_test(test_env_rank_table_mode_has_no_ms),
		cmocka_unit_test(test_env_dynamic_mode_has_no_rank_table),
		cmocka_unit_test(test_env_pod_ip_is_sched_host),
		cmocka_unit_test(test_queue_status_usage_and_borrowing),
		cmocka_unit_test(test_job_status_preemption_fields),
		cmocka_unit_test(test_job_status_time_limit),
		cmocka_unit_test(test_reals_are_short),
		cmocka_unit_test(test_quota_while_quotas_off_says_not_enforced),
		cmocka_unit_test(test_job_status_elastic_and_resize_metric),
		cmocka_unit_test(test_metrics_backfilled),
		cmocka_unit_test(test_jobs_table),
		cmocka_unit_test(test_views_agree),
		cmocka_unit_test(test_utilization_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
