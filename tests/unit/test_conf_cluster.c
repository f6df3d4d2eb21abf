/* SPDX-License-Identifier: MIT */
/* The cluster configuration and the server-type table. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "test_util.h"

#define ONE_SERVER                                                                              \
	"servers:\n"                                                                            \
	"  - name: node-1\n"                                                                    \
	"    host_ip: 10.0.1.1\n"                                                               \
	"    type: atlas800t-a2\n"                                                              \
	"    switch: leaf-1\n"

static struct conf_cluster *parse_ok(const char *text, size_t len, const char *file)
{
	struct conf_cluster *c = NULL;
	struct conf_error err = { 0 };
	char msg[1024];
	int r;

	r = conf_cluster_parse(text, len, file, &c, &err);
	if (r != 0)
		fail_msg("parse of %s failed (%d): %s", file, r,
			 conf_error_format(&err, msg, sizeof(msg)));
	assert_non_null(c);
	return c;
}

static const char *parse_fail(const char *text, size_t len, const char *file, int expect_r)
{
	static char msg[1024];
	struct conf_cluster *sentinel = (struct conf_cluster *)(uintptr_t)0x1, *c = sentinel;
	struct conf_error err = { 0 };
	int r;

	r = conf_cluster_parse(text, len, file, &c, &err);
	conf_error_format(&err, msg, sizeof(msg));
	if (r != expect_r)
		fail_msg("%s: expected %d, got %d (%s)", file, expect_r, r, msg);
	assert_ptr_equal(c, sentinel);
	return msg;
}

static struct conf_cluster *load_example(const char *rel)
{
	struct conf_cluster *c = NULL;
	struct conf_error err = { 0 };
	char *path = test_path(rel), msg[1024];
	int r;

	r = conf_cluster_load(path, &c, &err);
	if (r != 0)
		fail_msg("%s: %s", rel, conf_error_format(&err, msg, sizeof(msg)));
	assert_string_equal(c->source, path);
	free(path);
	return c;
}

/* render -> parse -> render gives the same text: the rendering is complete and stable. */
static void assert_render_stable(const struct conf_cluster *c)
{
	struct conf_cluster *again;
	char *text, *text2;
	size_t len, len2;

	assert_int_equal(conf_cluster_render_yaml(c, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	again = parse_ok(text, len, "rendered.yaml");
	assert_int_equal(conf_cluster_render_yaml(again, &text2, &len2), 0);
	assert_string_equal(text, text2);
	assert_int_equal(again->server_count, c->server_count);
	assert_int_equal(again->queue_count, c->queue_count);
	assert_int_equal(again->total_npu, c->total_npu);
	free(text);
	free(text2);
	conf_cluster_free(again);
}

static void test_cluster_example_a2(void **state)
{
	struct conf_cluster *c = load_example("examples/ascend_cluster.yaml");
	const struct conf_queue *q;
	size_t i, d, leaf1 = 0;

	assert_string_equal(c->name, "a2-128");
	assert_string_equal(c->scheduler_ip, "10.0.0.1");
	assert_int_equal(c->scheduler_port, 8118);
	assert_int_equal(c->fault_check_interval_sec, 5);
	assert_int_equal(c->heartbeat_timeout_sec, 15);
	assert_int_equal(c->total_npu, 128);
	assert_int_equal(c->hccl_connect_timeout_sec, 600);
	assert_int_equal(c->hccl_exec_timeout_sec, 1800);
	assert_string_equal(c->hccl_socket_ifname, "eth0");
	assert_null(c->hccl_if_ip);
	assert_int_equal(c->server_count, 16);
	for (i = 0; i < c->server_count; i++) {
		const struct conf_server *s = &c->servers[i];
		char name[32], ip[32];

		snprintf(name, sizeof(name), "a2-node-%02zu", i + 1);
		snprintf(ip, sizeof(ip), "10.0.1.%zu", i + 1);
		assert_string_equal(s->name, name);
		assert_string_equal(s->host_ip, ip);
		assert_ptr_equal(s->type, conf_server_type_find("atlas800t-a2"));
		assert_int_equal(s->npu_count, 8);
		assert_null(s->super_pod);
		leaf1 += strcmp(s->leaf_switch, "leaf-1") == 0;
		for (d = 0; d < 8; d++)
			assert_non_null(s->device_ips[d]);
		assert_null(s->device_ips[8]);
		assert_true(s->line > 0);
	}
	assert_int_equal(leaf1, 8);
	assert_string_equal(c->servers[15].leaf_switch, "leaf-2");
	assert_string_equal(c->servers[0].device_ips[3], "10.20.3.1");

	assert_int_equal(c->queue_count, 3);
	q = conf_cluster_find_queue(c, "default");
	assert_non_null(q);
	assert_int_equal(q->quota_npus, 0);
	q = conf_cluster_find_queue(c, "research");
	assert_non_null(q);
	assert_int_equal(q->quota_npus, 64);
	assert_int_equal(q->group_count, 1);
	assert_string_equal(q->groups[0], "ml-research");
	assert_null(q->groups[1]);
	q = conf_cluster_find_queue(c, "finetune");
	assert_non_null(q);
	assert_false(q->may_borrow);
	assert_int_equal(q->group_count, 2);
	assert_int_equal(q->max_priority, 900);
	assert_int_equal(q->max_npus, 16);
	assert_int_equal(q->max_time_limit_sec, 86400);
	assert_int_equal(q->default_time_limit_sec, 4 * 3600);
	assert_int_equal(conf_cluster_find_queue(c, "research")->max_npus, 0);
	assert_null(conf_cluster_find_queue(c, "nope"));
	assert_null(conf_cluster_find_queue(c, NULL));
	assert_render_stable(c);
	conf_cluster_free(c);
}

static void test_cluster_example_mixed(void **state)
{
	struct conf_cluster *c = load_example("examples/ascend_cluster_mixed.yaml");
	size_t i;

	assert_int_equal(c->server_count, 16);
	assert_int_equal(c->total_npu, 128);
	assert_int_equal(c->fault_check_interval_sec, 10);
	assert_int_equal(c->heartbeat_timeout_sec, 30);
	for (i = 0; i < 8; i++) {
		assert_string_equal(c->servers[i].type->chip, "910");
		assert_string_equal(c->servers[i].leaf_switch, "leaf-1");
		assert_string_equal(c->servers[i + 8].type->chip, "910B");
		assert_string_equal(c->servers[i + 8].leaf_switch, "leaf-2");
	}
	/* The implicit default queue is added after the listed ones. */
	assert_int_equal(c->queue_count, 2);
	assert_string_equal(c->queues[1].name, "default");
	assert_render_stable(c);
	conf_cluster_free(c);
}

static void test_cluster_defaults(void **state)
{
	struct conf_cluster *c = parse_ok(ONE_SERVER, strlen(ONE_SERVER), "min.yaml");
	const struct conf_queue *q;

	assert_string_equal(c->source, "min.yaml");
	assert_string_equal(c->name, "ascend");
	assert_string_equal(c->scheduler_ip, "127.0.0.1");
	assert_int_equal(c->scheduler_port, 8118);
	assert_true(c->enable_dynamic_network);
	assert_true(c->enable_fault_recovery);
	assert_int_equal(c->fault_check_interval_sec, 5);
	assert_int_equal(c->heartbeat_timeout_sec, 15);
	assert_true(c->topology_aware_schedule);
	assert_int_equal(c->spine_oversub_pct, 100);
	assert_false(c->require_agent);
	assert_null(c->operator_group);
	assert_int_equal(c->total_npu, 8);
	assert_true(c->allow_mix_task);
	assert_false(c->enable_quota_limit);
	assert_int_equal(c->preempt_exempt_sec, 0); /* Slurm's PreemptExemptTime: none */
	assert_int_equal(c->priority_weight_age, 0); /* Slurm's PriorityWeightAge: no aging */
	assert_int_equal(c->priority_max_age_sec, 7 * 86400); /* PriorityMaxAge 7-0 */
	assert_string_equal(c->hccl_log_level, "info");
	assert_int_equal(c->hccl_connect_timeout_sec, 600);
	assert_int_equal(c->hccl_exec_timeout_sec, 0);
	assert_null(c->hccl_if_ip);
	assert_null(c->hccl_socket_ifname);
	assert_int_equal(c->queue_count, 1);
	q = conf_cluster_find_queue(c, "default");
	assert_non_null(q);
	assert_int_equal(q->quota_npus, 0);
	assert_int_equal(q->priority, 500);
	assert_int_equal(q->weight, 1);
	assert_true(q->may_borrow);
	assert_int_equal(q->group_count, 0);
	assert_non_null(q->groups);
	assert_null(q->groups[0]);
	assert_null(c->servers[0].device_ips[0]);
	assert_int_equal(c->state_backend, CONF_STATE_SQLITE); /* SQLite unless told */
	assert_null(c->etcd_servers);
	assert_render_stable(c);
	conf_cluster_free(c);
}

/*
 * state: etcd: a list of members is joined as etcdctl's --endpoints takes it, the prefix
 * defaults to the cluster's name and gets its '/', the request timeout to a quarter of
 * the lease (at most 2 s); cluster/config shows it all and reads back the same.
 */
static void test_cluster_state_etcd(void **state)
{
	static const char text[] =
		"cluster:\n  name: pod-a\n"
		"state:\n  backend: etcd\n"
		"  etcd_servers: [http://10.0.0.1:2379, \"https://head-2:2379/\"]\n"
		"  leader_lease_duration: 6s\n" ONE_SERVER;
	static const char prefixed[] =
		"state:\n  backend: etcd\n  etcd_servers: http://a:2379,http://b:2379\n"
		"  etcd_prefix: /sites/x\n  leader_lease_duration: 1m\n" ONE_SERVER;
	struct conf_cluster *c = parse_ok(text, strlen(text), "etcd.yaml");
	char *yaml;
	size_t len;

	assert_int_equal(c->state_backend, CONF_STATE_ETCD);
	assert_string_equal(c->etcd_servers, "http://10.0.0.1:2379,https://head-2:2379/");
	assert_string_equal(c->etcd_prefix, "/ascendfs/pod-a/");
	assert_int_equal(c->leader_lease_sec, 6);
	assert_int_equal(c->etcd_timeout_sec, 1);
	assert_int_equal(conf_cluster_render_yaml(c, &yaml, &len), 0);
	assert_non_null(strstr(yaml, "backend: etcd\n"));
	assert_non_null(strstr(yaml, "etcd_prefix: /ascendfs/pod-a/\n"));
	free(yaml);
	assert_render_stable(c);
	conf_cluster_free(c);
	/* the shortest lease: its default timeout (1 s) reads back from cluster/config */
	{
		static const char shortest[] = "state:\n  backend: etcd\n  etcd_servers: "
					       "http://a:2379\n  leader_lease_duration: 2s\n"
					       ONE_SERVER;

		c = parse_ok(shortest, strlen(shortest), "shortest.yaml");
		assert_int_equal(c->etcd_timeout_sec, 1);
		assert_render_stable(c);
		conf_cluster_free(c);
	}
	c = parse_ok(prefixed, strlen(prefixed), "prefixed.yaml");
	assert_string_equal(c->etcd_prefix, "/sites/x/");
	assert_int_equal(c->leader_lease_sec, 60);
	assert_int_equal(c->etcd_timeout_sec, 2);
	assert_render_stable(c);
	conf_cluster_free(c);
}

static void test_cluster_operator_group(void **state)
{
	static const char text[] = "cluster:\n  operator_group: ascend-ops\n" ONE_SERVER;
	struct conf_cluster *c = parse_ok(text, strlen(text), "ops.yaml");
	char *yaml;
	size_t len;

	assert_string_equal(c->operator_group, "ascend-ops");
	assert_int_equal(conf_cluster_render_yaml(c, &yaml, &len), 0);
	assert_non_null(strstr(yaml, "operator_group: ascend-ops\n"));
	free(yaml);
	assert_render_stable(c);
	conf_cluster_free(c);
}

/*
 * retry_fault_codes: npu-smi's 8-digit form and 0x forms are the same numbers, kept
 * sorted; a report's code matches in either form and any case; bad or repeated codes
 * are refused with where and what to write.
 */
static void test_cluster_retry_fault_codes(void **state)
{
	static const char text[] = "cluster:\n"
				   "  retry_fault_codes: [80CB8002, \"0x80c98008\", 0x1234567890]\n"
				   ONE_SERVER;
	struct conf_cluster *c = parse_ok(text, strlen(text), "retry.yaml");
	const char *msg;
	char *yaml;
	size_t len;

	(void)state;
	assert_int_equal(c->retry_fault_code_count, 3);
	assert_true(c->retry_fault_codes[0] == 0x80C98008u);
	assert_true(c->retry_fault_codes[1] == 0x80CB8002u);
	assert_true(c->retry_fault_codes[2] == 0x1234567890ull);
	assert_true(conf_cluster_code_is_retry(c, "80C98008"));
	assert_true(conf_cluster_code_is_retry(c, "0x80cb8002"));
	assert_false(conf_cluster_code_is_retry(c, "80C98000"));
	assert_false(conf_cluster_code_is_retry(c, ""));
	assert_false(conf_cluster_code_is_retry(c, "HBM"));
	assert_int_equal(conf_cluster_render_yaml(c, &yaml, &len), 0);
	assert_non_null(strstr(yaml, "retry_fault_codes: [80C98008, 80CB8002, '0x1234567890']\n"));
	free(yaml);
	assert_render_stable(c);
	conf_cluster_free(c);

	msg = parse_fail("cluster:\n  retry_fault_codes: [80C9800]\n" ONE_SERVER,
			 strlen("cluster:\n  retry_fault_codes: [80C9800]\n" ONE_SERVER),
			 "retry.yaml", -EINVAL);
	assert_non_null(strstr(msg, "retry.yaml:2:23: retry_fault_codes: \"80C9800\" is not an "
				    "NPU error code; write it as npu-smi prints it"));
	msg = parse_fail("cluster:\n  retry_fault_codes: [80C98008, 0x80C98008]\n" ONE_SERVER,
			 strlen("cluster:\n  retry_fault_codes: [80C98008, 0x80C98008]\n"
				ONE_SERVER),
			 "retry.yaml", -EINVAL);
	assert_non_null(strstr(msg, "retry.yaml:2:33: retry_fault_codes: \"0x80C98008\" is "
				    "listed twice"));
	msg = parse_fail("cluster:\n  retry_fault_codes: 80C98008\n" ONE_SERVER,
			 strlen("cluster:\n  retry_fault_codes: 80C98008\n" ONE_SERVER),
			 "retry.yaml", -EINVAL);
	assert_non_null(strstr(msg, "retry_fault_codes"));
}

/*
 * Job caps (issue 14 item 1): resource: holds the defaults every queue inherits, a queue
 * overrides them, the implicit "default" queue inherits too, and both render.
 */
static void test_cluster_job_caps(void **state)
{
	static const char text[] = "resource:\n"
				   "  max_priority: 700\n"
				   "  max_npus: 16\n"
				   "  max_time_limit: 2d\n"
				   "  default_time_limit: 1d\n"
				   "queues:\n"
				   "  - name: prod\n"
				   "    max_priority: 1000\n"
				   "    max_npus: 0\n"
				   "    max_time_limit: 0\n"
				   "    default_time_limit: 0\n"
				   "  - name: short\n"
				   "    max_time_limit: 1h\n"
				   "  - name: debug\n"
				   "    max_npus: 8\n"
				   "    default_time_limit: 30m\n" ONE_SERVER;
	struct conf_cluster *c = parse_ok(text, strlen(text), "caps.yaml"), *d;
	const struct conf_queue *q;
	char *yaml;
	size_t len;

	(void)state;
	assert_int_equal(c->max_priority, 700);
	assert_int_equal(c->max_npus, 16);
	assert_int_equal(c->max_time_limit_sec, 2 * 86400);
	assert_int_equal(c->default_time_limit_sec, 86400);
	q = conf_cluster_find_queue(c, "prod");
	assert_int_equal(q->max_priority, 1000);
	assert_int_equal(q->max_npus, 0);
	assert_int_equal(q->max_time_limit_sec, 0);
	assert_int_equal(q->default_time_limit_sec, 0);
	/* the cluster's default time limit is longer than this queue's cap: the cap is it */
	q = conf_cluster_find_queue(c, "short");
	assert_int_equal(q->max_priority, 700);
	assert_int_equal(q->max_npus, 16);
	assert_int_equal(q->max_time_limit_sec, 3600);
	assert_int_equal(q->default_time_limit_sec, 3600);
	q = conf_cluster_find_queue(c, "debug");
	assert_int_equal(q->max_npus, 8);
	assert_int_equal(q->max_time_limit_sec, 2 * 86400);
	assert_int_equal(q->default_time_limit_sec, 1800);
	q = conf_cluster_find_queue(c, "default");
	assert_int_equal(q->max_priority, 700);
	assert_int_equal(q->max_npus, 16);
	assert_int_equal(q->default_time_limit_sec, 86400);
	assert_int_equal(conf_cluster_render_yaml(c, &yaml, &len), 0);
	assert_non_null(strstr(yaml, "  max_priority: 700\n  max_npus: 16\n  max_time_limit: 172800\n"
				     "  default_time_limit: 86400\n"));
	assert_non_null(strstr(yaml, "name: short\n"));
	free(yaml);
	assert_render_stable(c);
	/* a queue added later (ascend-sim) inherits the cluster's caps too */
	assert_int_equal(conf_cluster_add_queue(c, "sim"), 0);
	q = conf_cluster_find_queue(c, "sim");
	assert_int_equal(q->max_priority, 700);
	assert_int_equal(q->max_npus, 16);
	assert_int_equal(q->max_time_limit_sec, 2 * 86400);
	assert_int_equal(q->default_time_limit_sec, 86400);
	conf_cluster_free(c);

	/* without any: users may ask up to "high" (900), nothing else is capped */
	d = parse_ok(ONE_SERVER, strlen(ONE_SERVER), "min.yaml");
	assert_int_equal(d->max_priority, 900);
	assert_int_equal(d->max_npus, 0);
	assert_int_equal(d->max_time_limit_sec, 0);
	assert_int_equal(d->default_time_limit_sec, 0);
	q = conf_cluster_find_queue(d, "default");
	assert_int_equal(q->max_priority, 900);
	assert_int_equal(q->max_npus, 0);
	conf_cluster_free(d);
}

/*
 * Every duration of the configuration has a maximum: the maximum is accepted, one second
 * more is refused naming the field, the range and the unit, and so is a number too large
 * for 64 bits (it used to read as "not a number of seconds").
 */
static void test_cluster_duration_bounds(void **state)
{
	static const struct {
		const char *section, *key, *max, *over;
		unsigned long long max_sec;
	} cases[] = {
		{ "cluster", "heartbeat_timeout", "1d", "86401", 86400 },
		{ "cluster", "fault_check_interval", "1h", "3601", 3600 },
		{ "cluster", "fault_hold_time", "86400", "1d1s", 86400 },
		{ "cluster", "stop_grace_period", "3600", "3601", 3600 },
		{ "resource", "max_time_limit", "365d", "365d1s", 31536000 },
		{ "resource", "default_time_limit", "31536000", "31536001", 31536000 },
		{ "hccl", "hccl_connect_timeout", "7200", "7201", 7200 },
		{ "hccl", "hccl_exec_timeout", "17340", "17341", 17340 },
		{ "cluster", "heartbeat_timeout", NULL, "18446744073709551616", 86400 },
		{ "resource", "max_time_limit", NULL, "213503982334602d", 31536000 },
	};
	char text[1024], want[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *msg;
		int n;

		if (cases[i].max) {
			struct conf_cluster *c;

			n = snprintf(text, sizeof(text), "%s:\n  %s: %s\n" ONE_SERVER,
				     cases[i].section, cases[i].key, cases[i].max);
			c = parse_ok(text, (size_t)n, "d.yaml");
			conf_cluster_free(c);
		}
		n = snprintf(text, sizeof(text), "%s:\n  %s: %s\n" ONE_SERVER, cases[i].section,
			     cases[i].key, cases[i].over);
		msg = parse_fail(text, (size_t)n, "d.yaml", -EINVAL);
		snprintf(want, sizeof(want), "%s: %s is out of range; use ", cases[i].key,
			 cases[i].over);
		if (!strstr(msg, want) || !strstr(msg, "seconds"))
			fail_msg("%s: %s: got \"%s\", want \"%s... seconds\"", cases[i].key,
				 cases[i].over, msg, want);
		snprintf(want, sizeof(want), " to %llu seconds", cases[i].max_sec);
		if (!strstr(msg, want))
			fail_msg("%s: got \"%s\", want the maximum \"%s\"", cases[i].key, msg, want);
	}
}

/*
 * A refusal quotes a value it cannot read escaped: a text starting with '-' used to be
 * printed raw as "out of range", newline and all, into the daemon's log.
 */
static void test_cluster_duration_error_quotes_bad_text(void **state)
{
	static const char text[] = "cluster:\n  heartbeat_timeout: \"-1\\n<3>error: forged\"\n"
		ONE_SERVER;
	const char *msg;

	(void)state;
	msg = parse_fail(text, strlen(text), "d.yaml", -EINVAL);
	assert_null(strchr(msg, '\n'));
	assert_non_null(strstr(msg, "heartbeat_timeout: \"-1\\n<3>error: forged\" is not a number "
				    "of seconds"));
	msg = parse_fail("cluster:\n  heartbeat_timeout: -5m\n" ONE_SERVER,
			 strlen("cluster:\n  heartbeat_timeout: -5m\n" ONE_SERVER), "d.yaml", -EINVAL);
	assert_non_null(strstr(msg, "heartbeat_timeout: -5m is out of range; use 1 to 86400 "
				    "seconds"));
}

/* Each bad cap is refused with its place and what to do. */
static void test_cluster_job_cap_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "resource:\n  max_priority: 1001\n" ONE_SERVER,
		  "caps.yaml:2:17: max_priority: 1001 is out of range; use a whole number from 500 to "
		  "1000 (a job that sets no priority has 500" },
		{ "resource:\n  max_priority: 300\n" ONE_SERVER,
		  "caps.yaml:2:17: max_priority: 300 is out of range; use a whole number from 500 to "
		  "1000 (a job that sets no priority has 500" },
		{ "queues:\n  - name: q\n    max_priority: 100\n" ONE_SERVER,
		  "caps.yaml:3:19: max_priority: 100 is out of range; use a whole number from 500" },
		{ "resource:\n  max_time_limit: 1h\n  default_time_limit: 2h\n" ONE_SERVER,
		  "caps.yaml:3:23: default_time_limit: 2h is longer than max_time_limit (3600 "
		  "seconds)" },
		{ "queues:\n  - name: q\n    max_time_limit: 10m\n    default_time_limit: 1h\n"
		  ONE_SERVER,
		  "caps.yaml:4:25: default_time_limit: 1h is longer than max_time_limit (600 "
		  "seconds)" },
		{ "resource:\n  max_npus: 9000000\n" ONE_SERVER,
		  "caps.yaml:2:13: max_npus: 9000000 is out of range" },
		{ "queues:\n  - name: q\n    max_time_limit: soon\n" ONE_SERVER,
		  "caps.yaml:3:21: max_time_limit:" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *msg = parse_fail(cases[i].text, strlen(cases[i].text), "caps.yaml",
					     -EINVAL);

		if (strncmp(msg, cases[i].msg, strlen(cases[i].msg)) != 0)
			fail_msg("case %zu: got \"%s\", want a message starting \"%s\"", i, msg,
				 cases[i].msg);
	}
}

/*
 * Job-count limits (issue 15 item 5: one user's 200 pending jobs filled max_job_count and
 * root's cp failed). cluster: bounds one user's drafts and active jobs
 * (max_job_count_per_user, default a tenth of max_job_count) and keeps records for root
 * and operators (reserved_job_count, default a twentieth); resource: holds the per-queue
 * defaults every queue inherits, as Slurm's QOS MaxSubmitJobsPerUser and GrpSubmitJobs.
 */
static void test_cluster_job_count_limits(void **state)
{
	static const char text[] = "cluster:\n"
				   "  max_job_count: 200\n"
				   "resource:\n"
				   "  max_submit_jobs_per_user: 8\n"
				   "  max_submit_jobs: 50\n"
				   "queues:\n"
				   "  - name: prod\n"
				   "    max_submit_jobs_per_user: 0\n"
				   "    max_submit_jobs: 0\n"
				   "  - name: debug\n"
				   "    max_submit_jobs_per_user: 2\n" ONE_SERVER;
	static const char own[] = "cluster:\n"
				  "  max_job_count: 1000\n"
				  "  max_job_count_per_user: 1000\n"
				  "  reserved_job_count: 0\n" ONE_SERVER;
	struct conf_cluster *c = parse_ok(text, strlen(text), "limits.yaml"), *d;
	const struct conf_queue *q;
	char *yaml;
	size_t len;

	(void)state;
	/* defaults below max_job_count: one user cannot fill it, root keeps a reserve */
	assert_int_equal(c->max_job_count_per_user, 20);
	assert_int_equal(c->reserved_job_count, 10);
	assert_int_equal(c->max_submit_jobs_per_user, 8);
	assert_int_equal(c->max_submit_jobs, 50);
	q = conf_cluster_find_queue(c, "prod");
	assert_int_equal(q->max_submit_jobs_per_user, 0);
	assert_int_equal(q->max_submit_jobs, 0);
	q = conf_cluster_find_queue(c, "debug");
	assert_int_equal(q->max_submit_jobs_per_user, 2);
	assert_int_equal(q->max_submit_jobs, 50);
	q = conf_cluster_find_queue(c, "default");
	assert_int_equal(q->max_submit_jobs_per_user, 8);
	assert_int_equal(q->max_submit_jobs, 50);
	assert_int_equal(conf_cluster_render_yaml(c, &yaml, &len), 0);
	assert_non_null(strstr(yaml, "  max_job_count: 200\n"));
	assert_non_null(strstr(yaml, "  max_job_count_per_user: 20\n  reserved_job_count: 10\n"));
	assert_non_null(strstr(yaml, "  max_submit_jobs_per_user: 8\n  max_submit_jobs: 50\n"));
	free(yaml);
	assert_render_stable(c);
	assert_int_equal(conf_cluster_add_queue(c, "sim"), 0);
	assert_int_equal(conf_cluster_find_queue(c, "sim")->max_submit_jobs_per_user, 8);
	assert_int_equal(conf_cluster_find_queue(c, "sim")->max_submit_jobs, 50);
	conf_cluster_free(c);

	d = parse_ok(ONE_SERVER, strlen(ONE_SERVER), "min.yaml");
	assert_int_equal(d->max_job_count, 100000);
	assert_int_equal(d->max_job_count_per_user, 10000);
	assert_int_equal(d->reserved_job_count, 5000);
	assert_int_equal(conf_cluster_find_queue(d, "default")->max_submit_jobs_per_user, 0);
	assert_int_equal(conf_cluster_find_queue(d, "default")->max_submit_jobs, 0);
	conf_cluster_free(d);
	/* tiny clusters still keep one record for root; a site may give users everything */
	d = parse_ok("cluster:\n  max_job_count: 2\n" ONE_SERVER,
		     strlen("cluster:\n  max_job_count: 2\n" ONE_SERVER), "two.yaml");
	assert_int_equal(d->max_job_count_per_user, 1);
	assert_int_equal(d->reserved_job_count, 1);
	conf_cluster_free(d);
	d = parse_ok("cluster:\n  max_job_count: 1\n" ONE_SERVER,
		     strlen("cluster:\n  max_job_count: 1\n" ONE_SERVER), "one.yaml");
	assert_int_equal(d->max_job_count_per_user, 1);
	assert_int_equal(d->reserved_job_count, 0);
	conf_cluster_free(d);
	d = parse_ok(own, strlen(own), "own.yaml");
	assert_int_equal(d->max_job_count_per_user, 1000);
	assert_int_equal(d->reserved_job_count, 0);
	conf_cluster_free(d);
}

/* A job-count limit that cannot hold is refused where it is written. */
static void test_cluster_job_count_limit_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "cluster:\n  max_job_count: 100\n  max_job_count_per_user: 101\n" ONE_SERVER,
		  "limits.yaml:3:27: max_job_count_per_user: 101 is more than max_job_count (100); "
		  "use at most 100" },
		{ "cluster:\n  max_job_count: 100\n  reserved_job_count: 100\n" ONE_SERVER,
		  "limits.yaml:3:23: reserved_job_count: 100 leaves users no job record of "
		  "max_job_count (100); use at most 99" },
		{ "cluster:\n  max_job_count_per_user: 0\n" ONE_SERVER,
		  "limits.yaml:2:27: max_job_count_per_user: 0 is out of range" },
		{ "resource:\n  max_submit_jobs: many\n" ONE_SERVER,
		  "limits.yaml:2:20: max_submit_jobs:" },
		{ "queues:\n  - name: q\n    max_submit_jobs_per_user: -1\n" ONE_SERVER,
		  "limits.yaml:3:31: max_submit_jobs_per_user:" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *msg = parse_fail(cases[i].text, strlen(cases[i].text), "limits.yaml",
					     -EINVAL);

		if (strncmp(msg, cases[i].msg, strlen(cases[i].msg)) != 0)
			fail_msg("case %zu: got \"%s\", want a message starting \"%s\"", i, msg,
				 cases[i].msg);
	}
}

static void test_cluster_heartbeat_follows_interval(void **state)
{
	static const char text[] = "cluster:\n  fault_check_interval: 2m\n" ONE_SERVER;
	static const char zero_interval[] = "cluster:\n  fault_check_interval: 0\n" ONE_SERVER;
	struct conf_cluster *c = parse_ok(text, strlen(text), "hb.yaml");

	assert_int_equal(c->fault_check_interval_sec, 120);
	assert_int_equal(c->heartbeat_timeout_sec, 360);
	conf_cluster_free(c);
	assert_non_null(strstr(parse_fail(zero_interval, strlen(zero_interval), "hb.yaml", -EINVAL),
			       "hb.yaml:2:25: fault_check_interval: 0 is out of range; use 1 to "
			       "3600 seconds"));
}

static void test_cluster_ip_canonical_duplicates(void **state)
{
	static const char text[] = "servers:\n"
				   "  - name: a\n"
				   "    host_ip: fd00::1\n"
				   "    type: atlas800\n"
				   "    switch: s\n"
				   "  - name: b\n"
				   "    host_ip: FD00:0:0::1\n"
				   "    type: atlas800\n"
				   "    switch: s\n";

	assert_string_equal(parse_fail(text, strlen(text), "v6.yaml", -EINVAL),
			    "v6.yaml:7:14: host_ip: \"FD00:0:0::1\" is already used by server "
			    "\"a\"; give each server its own address");
}

static void test_cluster_a3_super_pods(void **state)
{
	static const char text[] = "servers:\n"
				   "  - name: a3-1\n"
				   "    host_ip: 10.0.0.1\n"
				   "    type: atlas900-a3\n"
				   "    switch: s\n"
				   "    super_pod: 7\n"
				   "    device_ips: [10.1.0.1, 10.1.0.2, 10.1.0.3, 10.1.0.4,"
				   " 10.1.0.5, 10.1.0.6, 10.1.0.7, 10.1.0.8, 10.1.0.9, 10.1.0.10,"
				   " 10.1.0.11,"
				   " 10.1.0.12, 10.1.0.13, 10.1.0.14, 10.1.0.15, 10.1.0.16]\n";
	struct conf_cluster *c = parse_ok(text, strlen(text), "a3.yaml");

	assert_string_equal(c->servers[0].super_pod, "7");
	assert_int_equal(c->servers[0].npu_count, 16);
	assert_string_equal(c->servers[0].device_ips[15], "10.1.0.16");
	assert_int_equal(c->total_npu, 16);
	assert_render_stable(c);
	conf_cluster_free(c);
}

static void test_cluster_load_errors(void **state)
{
	struct conf_cluster *sentinel = (struct conf_cluster *)(uintptr_t)0x1, *c = sentinel;
	struct conf_error err = { 0 };
	char *path;
	int fd;

	assert_int_equal(conf_cluster_load("/nonexistent/ascend_cluster.yaml", &c, &err),
			 -ENOENT);
	assert_ptr_equal(c, sentinel);
	assert_string_equal(err.file, "/nonexistent/ascend_cluster.yaml");
	assert_non_null(strstr(err.msg, "cannot open the configuration"));

	assert_int_equal(conf_cluster_load("/", &c, &err), -EISDIR);

	/* A sparse file one byte over the limit. */
	path = test_write_tmp("", 0, ".yaml");
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, CONF_CONFIG_MAX_BYTES + 1), 0);
	close(fd);
	assert_int_equal(conf_cluster_load(path, &c, &err), -EFBIG);
	assert_ptr_equal(c, sentinel);
	assert_non_null(strstr(err.msg, "larger than the limit"));
	unlink(path);
	free(path);

	/* A file that is fine is loaded and keeps its path as the source. */
	path = test_write_tmp(ONE_SERVER, strlen(ONE_SERVER), ".yaml");
	assert_int_equal(conf_cluster_load(path, &c, &err), 0);
	assert_string_equal(c->source, path);
	conf_cluster_free(c);
	unlink(path);
	free(path);
}

static void test_cluster_error_uses_path_when_loading(void **state)
{
	struct conf_cluster *c = NULL;
	struct conf_error err = { 0 };
	char *path = test_write_tmp("servers: [\n", 11, ".yaml"), msg[1024], want[1100];

	assert_int_equal(conf_cluster_load(path, &c, &err), -EINVAL);
	assert_null(c);
	snprintf(want, sizeof(want), "%s:2:1: invalid YAML: did not find expected node content "
		 "(while parsing a flow node at line 2)", path);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)), want);
	unlink(path);
	free(path);
}

/* Builds an inventory of @n servers of 8 NPUs with unique addresses. */
static char *big_inventory(size_t n, size_t *ret_len)
{
	size_t cap = n * 256 + 64, o = 0, i;
	char *text = malloc(cap);

	assert_non_null(text);
	o += (size_t)snprintf(text + o, cap - o, "servers:\n");
	for (i = 0; i < n; i++) {
		size_t a = i / 250, b = i % 250 + 1;

		o += (size_t)snprintf(text + o, cap - o,
				      "- {name: n%zu, host_ip: 10.%zu.%zu.1, type: atlas800t-a2, "
				      "switch: leaf-%zu, device_ips: [",
				      i, a, b, i / 32);
		for (size_t d = 0; d < 8; d++)
			o += (size_t)snprintf(text + o, cap - o, "%s10.%zu.%zu.%zu", d ? ", " : "",
					      100 + a, b, d + 10);
		o += (size_t)snprintf(text + o, cap - o, "]}\n");
	}
	*ret_len = o;
	return text;
}

static void test_cluster_large_inventory(void **state)
{
	size_t len;
	char *text = big_inventory(CONF_SERVERS_MAX, &len);
	struct conf_cluster *c = parse_ok(text, len, "big.yaml");

	assert_int_equal(c->server_count, CONF_SERVERS_MAX);
	assert_int_equal(c->total_npu, 8 * CONF_SERVERS_MAX);
	conf_cluster_free(c);
	free(text);

	text = big_inventory(CONF_SERVERS_MAX + 1, &len);
	assert_non_null(strstr(parse_fail(text, len, "big.yaml", -EINVAL),
			       "servers: 16385 servers are more than the limit of 16384"));
	free(text);
}

static void test_cluster_node_limit(void **state)
{
	size_t n = 1100000, o = 0, i;
	char *text = malloc(2 * n + 64);

	assert_non_null(text);
	o += (size_t)sprintf(text, "x: [");
	for (i = 0; i < n; i++) {
		text[o++] = '1';
		text[o++] = ',';
	}
	text[o++] = ']';
	assert_non_null(strstr(parse_fail(text, o, "many.yaml", -EINVAL),
			       "the document has more than 1048576 values"));
	free(text);
}

static void test_cluster_truncations(void **state)
{
	size_t len, cut;
	char *text = test_read_file("examples/ascend_cluster_mixed.yaml", &len);

	/* A stride keeps this quick; every prefix of a spec is covered in test_conf_job. */
	for (cut = 0; cut <= len; cut += (cut < 2048 ? 1 : 7)) {
		struct conf_cluster *c = NULL;
		struct conf_error err = { 0 };
		char *prefix = malloc(cut ? cut : 1);
		int r;

		assert_non_null(prefix);
		memcpy(prefix, text, cut);
		r = conf_cluster_parse(prefix, cut, "t.yaml", &c, &err);
		if (r == 0) {
			char *out;
			size_t olen;

			assert_int_equal(conf_cluster_render_yaml(c, &out, &olen), 0);
			free(out);
			conf_cluster_free(c);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_null(c);
			assert_true(err.msg[0] != '\0');
		}
		free(prefix);
	}
	free(text);
}

static void test_server_type_table(void **state)
{
	const struct conf_server_type *t, *list;
	size_t n, i;

	list = conf_server_type_list(&n);
	assert_int_equal(n, 4);
	for (i = 0; i < n; i++) {
		assert_ptr_equal(conf_server_type_find(list[i].name), &list[i]);
		assert_true(list[i].npu_count <= CONF_SERVER_NPUS_MAX);
		/* A whole server is always a legal size; 0 never is. */
		assert_true(list[i].legal_sizes_mask & (UINT32_C(1) << list[i].npu_count));
		assert_false(list[i].legal_sizes_mask & 1);
		assert_int_equal(list[i].npu_count % list[i].hccs_group_size, 0);
	}
	t = conf_server_type_find("atlas800");
	assert_non_null(t);
	assert_string_equal(t->chip, "910");
	assert_string_equal(t->product, "Atlas 800 (model 9000)");
	assert_int_equal(t->hccs, CONF_HCCS_RING);
	assert_int_equal(t->hccs_group_size, 4);
	assert_int_equal(t->legal_sizes_mask, (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8));
	assert_string_equal(t->rank_table_version, "1.0");
	t = conf_server_type_find("atlas800t-a2");
	assert_non_null(t);
	assert_string_equal(t->chip, "910B");
	assert_int_equal(t->hccs, CONF_HCCS_MESH);
	assert_int_equal(t->hccs_group_size, 8);
	assert_int_equal(t->legal_sizes_mask, 0x1fe);
	/* the inference server: the 800T A2's mesh and rules */
	t = conf_server_type_find("atlas800i-a2");
	assert_non_null(t);
	assert_string_equal(t->product, "Atlas 800I A2");
	assert_string_equal(t->chip, "910B");
	assert_int_equal(t->npu_count, 8);
	assert_int_equal(t->hccs, CONF_HCCS_MESH);
	assert_int_equal(t->legal_sizes_mask, 0x1fe);
	assert_string_equal(t->rank_table_version, "1.0");
	t = conf_server_type_find("atlas900-a3");
	assert_non_null(t);
	assert_string_equal(t->chip, "910C");
	assert_int_equal(t->npu_count, 16);
	assert_int_equal(t->hccs, CONF_HCCS_PAIR);
	assert_int_equal(t->hccs_group_size, 2);
	assert_int_equal(t->legal_sizes_mask, 0x1fffe);
	assert_string_equal(t->rank_table_version, "1.2");
	assert_null(conf_server_type_find("Atlas800"));
	assert_null(conf_server_type_find(NULL));
	assert_null(conf_server_type_find(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster_example_a2),
		cmocka_unit_test(test_cluster_example_mixed),
		cmocka_unit_test(test_cluster_defaults),
		cmocka_unit_test(test_cluster_state_etcd),
		cmocka_unit_test(test_cluster_operator_group),
		cmocka_unit_test(test_cluster_retry_fault_codes),
		cmocka_unit_test(test_cluster_job_caps),
		cmocka_unit_test(test_cluster_duration_bounds),
		cmocka_unit_test(test_cluster_duration_error_quotes_bad_text),
		cmocka_unit_test(test_cluster_job_count_limits),
		cmocka_unit_test(test_cluster_job_count_limit_errors),
		cmocka_unit_test(test_cluster_job_cap_errors),
		cmocka_unit_test(test_cluster_heartbeat_follows_interval),
		cmocka_unit_test(test_cluster_ip_canonical_duplicates),
		cmocka_unit_test(test_cluster_a3_super_pods),
		cmocka_unit_test(test_cluster_load_errors),
		cmocka_unit_test(test_cluster_error_uses_path_when_loading),
		cmocka_unit_test(test_cluster_large_inventory),
		cmocka_unit_test(test_cluster_node_limit),
		cmocka_unit_test(test_cluster_truncations),
		cmocka_unit_test(test_server_type_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
