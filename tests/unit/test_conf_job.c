/* SPDX-License-Identifier: MIT */
/* Job specs: parsing, defaults, rendering, hostile input; plus conf's small helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "test_util.h"

#include "test_chaos.h"

/* A spec that sets every key, used by the round-trip and robustness tests. */
static const char full_spec[] =
	"# comment\n"
	"name: full-job\n"
	"npus: 16\n"
	"queue: research\n"
	"priority: high\n"
	"command: |\n"
	"  source /usr/local/Ascend/ascend-toolkit/set_env.sh\n"
	"  python train.py --config \"a: b.yaml\" # kept\n"
	"launch: per-rank\n"
	"checkpoint_dir: /data/ckpt/full\n"
	"max_restarts: 5\n"
	"time_limit: 1d2h\n"
	"parallel: {tp: 8, pp: 2, dp: 1}\n"
	"server_type: atlas800t-a2\n";

static struct conf_job_spec *parse_ok(const char *text, const char *file, const char *def)
{
	struct conf_error err = { 0 };
	struct conf_job_spec *s = NULL;
	char msg[1024];
	int r;

	r = conf_job_spec_parse(text, strlen(text), file, def, &s, &err);
	if (r != 0)
		fail_msg("parse of %s failed (%d): %s", file, r,
			 conf_error_format(&err, msg, sizeof(msg)));
	assert_non_null(s);
	return s;
}

/* Parse @text expecting failure @expect_r; return the formatted message (static buffer). */
static const char *parse_fail(const char *text, size_t len, const char *file, const char *def,
			      int expect_r)
{
	static char msg[1024];
	struct conf_job_spec *sentinel = (struct conf_job_spec *)(uintptr_t)0x1;
	struct conf_job_spec *s = sentinel;
	struct conf_error err = { 0 };
	int r;

	r = conf_job_spec_parse(text, len, file, def, &s, &err);
	conf_error_format(&err, msg, sizeof(msg));
	if (r != expect_r)
		fail_msg("%s: expected %d, got %d (%s)", file, expect_r, r, msg);
	/* Outputs are untouched on failure. */
	assert_ptr_equal(s, sentinel);
	assert_true(err.msg[0] != '\0');
	return msg;
}

#define parse_failz(text, file, def, expect_r) parse_fail(text, strlen(text), file, def, expect_r)


static void assert_spec_equal(const struct conf_job_spec *a, const struct conf_job_spec *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->npus, b->npus);
	assert_int_equal(a->npus_min, b->npus_min);
	assert_int_equal(a->npus_max, b->npus_max);
	assert_string_equal(a->queue, b->queue);
	assert_int_equal(a->priority, b->priority);
	if (a->command || b->command) {
		assert_non_null(a->command);
		assert_non_null(b->command);
		assert_string_equal(a->command, b->command);
	}
	assert_int_equal(a->launch, b->launch);
	if (a->checkpoint_dir || b->checkpoint_dir) {
		assert_non_null(a->checkpoint_dir);
		assert_non_null(b->checkpoint_dir);
		assert_string_equal(a->checkpoint_dir, b->checkpoint_dir);
	}
	assert_int_equal(a->max_restarts, b->max_restarts);
	assert_true(a->time_limit_sec == b->time_limit_sec);
	assert_int_equal(a->tp, b->tp);
	assert_int_equal(a->cp, b->cp);
	assert_int_equal(a->ep, b->ep);
	assert_int_equal(a->dp, b->dp);
	assert_int_equal(a->pp, b->pp);
	assert_int_equal(a->preemptible, b->preemptible);
	assert_int_equal(a->max_unavailable, b->max_unavailable);
	if (a->server_type || b->server_type) {
		assert_non_null(a->server_type);
		assert_non_null(b->server_type);
		assert_string_equal(a->server_type, b->server_type);
	}
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->replicas, b->replicas);
	assert_int_equal(a->port, b->port);
	assert_int_equal(a->prefill, b->prefill);
	assert_int_equal(a->decode, b->decode);
	{
		const char *const sa[4] = { a->controller, a->coordinator, a->controller_command,
					    a->coordinator_command };
		const char *const sb[4] = { b->controller, b->coordinator, b->controller_command,
					    b->coordinator_command };

		for (int i = 0; i < 4; i++) {
			assert_int_equal(sa[i] == NULL, sb[i] == NULL);
			if (sa[i])
				assert_string_equal(sa[i], sb[i]);
		}
	}
}

/* render -> parse -> equal spec, and rendering the re-parsed spec gives the same text. */
static void assert_round_trip(const struct conf_job_spec *s)
{
	struct conf_job_spec *again;
	char *text, *text2;
	size_t len, len2;

	assert_int_equal(conf_job_spec_render_yaml(s, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	again = parse_ok(text, "rendered.yaml", NULL);
	assert_spec_equal(s, again);
	assert_int_equal(conf_job_spec_render_yaml(again, &text2, &len2), 0);
	assert_string_equal(text, text2);
	free(text);
	free(text2);
	conf_job_spec_free(again);
}

static void test_job_spec_example_llama70b(void **state)
{
	size_t len;
	char *text = test_read_file("examples/jobs/llama70b-pretrain.yaml", &len);
	struct conf_job_spec *s = parse_ok(text, "llama70b-pretrain.yaml", "llama70b-pretrain");

	assert_string_equal(s->name, "llama70b-pretrain");
	assert_int_equal(s->npus, 32);
	assert_int_equal(s->npus_min, 32);
	assert_int_equal(s->npus_max, 32);
	assert_int_equal(s->tp, 8);
	assert_int_equal(s->pp, 4);
	assert_int_equal(s->dp, 1);
	assert_int_equal(s->launch, CONF_LAUNCH_MSRUN);
	assert_string_equal(s->command, "python train.py --config llama70b.yaml");
	assert_string_equal(s->checkpoint_dir, "/data/ckpt/llama70b");
	assert_int_equal(s->max_restarts, 3);
	assert_true(s->time_limit_sec == 72 * 3600);
	assert_string_equal(s->queue, "default");
	assert_int_equal(s->priority, 900);
	assert_null(s->server_type);
	assert_round_trip(s);
	conf_job_spec_free(s);
	free(text);
}

/* examples/jobs/llama70b-pd.yaml: the disaggregated layout, replicas from its counts */
static void test_job_spec_example_llama70b_pd(void **state)
{
	size_t len;
	char *text = test_read_file("examples/jobs/llama70b-pd.yaml", &len);
	struct conf_job_spec *s = parse_ok(text, "llama70b-pd.yaml", "llama70b-pd");

	(void)state;
	assert_int_equal(s->kind, CONF_JOB_SERVICE);
	assert_int_equal(s->npus, 16);
	assert_int_equal(s->prefill, 1);
	assert_int_equal(s->decode, 1);
	assert_int_equal(s->replicas, 2);
	assert_string_equal(s->controller, "infer-01");
	assert_string_equal(s->coordinator, "infer-01");
	/* ascendfs runs both roles there */
	assert_non_null(strstr(s->controller_command, "exec ./ms_controller\n"));
	assert_non_null(strstr(s->coordinator_command, "exec ./ms_coordinator \"$POD_IP\""));
	assert_round_trip(s);
	conf_job_spec_free(s);
	free(text);
}

static void test_job_spec_example_qwen7b(void **state)
{
	size_t len;
	char *text = test_read_file("examples/jobs/qwen7b-finetune.yaml", &len);
	struct conf_job_spec *s = parse_ok(text, "qwen7b-finetune.yaml", "qwen7b-finetune");

	assert_int_equal(s->npus, 4);
	assert_int_equal(s->tp, 4);
	assert_int_equal(s->pp, 0);
	assert_int_equal(s->dp, 0);
	assert_string_equal(s->queue, "finetune");
	assert_round_trip(s);
	conf_job_spec_free(s);
	free(text);
}

static void test_job_spec_example_llama7b_eval(void **state)
{
	size_t len;
	char *text = test_read_file("examples/jobs/llama7b-eval.yaml", &len);
	struct conf_job_spec *s = parse_ok(text, "llama7b-eval.yaml", "llama7b-eval");

	assert_int_equal(s->npus, 1);
	assert_int_equal(s->launch, CONF_LAUNCH_PER_RANK);
	assert_int_equal(s->priority, 100);
	assert_true(s->time_limit_sec == 90 * 60);
	assert_null(s->checkpoint_dir);
	assert_round_trip(s);
	conf_job_spec_free(s);
	free(text);
}

static void test_job_spec_defaults(void **state)
{
	struct conf_job_spec *s = parse_ok("npus: 8\n", "train.yaml", "train");

	assert_string_equal(s->name, "train");
	assert_int_equal(s->npus, 8);
	assert_string_equal(s->queue, "default");
	assert_int_equal(s->priority, 500);
	assert_null(s->command);
	assert_int_equal(s->launch, CONF_LAUNCH_MSRUN);
	assert_null(s->checkpoint_dir);
	assert_int_equal(s->max_restarts, 3);
	assert_true(s->time_limit_sec == 0);
	assert_int_equal(s->tp + s->pp + s->dp, 0);
	assert_null(s->server_type);
	assert_round_trip(s);
	conf_job_spec_free(s);
}

static void test_job_spec_null_value_means_default(void **state)
{
	struct conf_job_spec *s =
		parse_ok("npus: 8\ncommand:\nqueue: ~\ntime_limit: null\n", "x.yaml", "x");

	assert_null(s->command);
	assert_string_equal(s->queue, "default");
	assert_true(s->time_limit_sec == 0);
	conf_job_spec_free(s);
}

/*
 * time_limit is counted in microseconds: 18446744073710s used to wrap to about one second
 * and time the job out at once. The longest is 365d; one more second is refused, saying
 * the field, the maximum and the unit, and so is any number too large for 64 bits.
 */
static void test_job_spec_time_limit_range(void **state)
{
	static const char *const too_long[] = {
		"31536001", "365d1s", "366d", "18446744073710s", "18446744073709551616",
		"99999999999999999999999999999h", "213503982334602d",
	};
	struct conf_job_spec *s;
	char text[128];

	(void)state;
	s = parse_ok("npus: 8\ntime_limit: 365d\n", "x.yaml", "x");
	assert_true(s->time_limit_sec == CONF_TIME_LIMIT_MAX_SEC);
	conf_job_spec_free(s);
	s = parse_ok("npus: 8\ntime_limit: 31536000\n", "x.yaml", "x");
	assert_true(s->time_limit_sec == 31536000);
	conf_job_spec_free(s);
	for (size_t i = 0; i < sizeof(too_long) / sizeof(too_long[0]); i++) {
		char want[160];
		const char *msg;

		snprintf(text, sizeof(text), "npus: 8\ntime_limit: %s\n", too_long[i]);
		snprintf(want, sizeof(want),
			 "x.yaml:2:13: time_limit: \"%s\" is too long; the maximum is 365d "
			 "(31536000 seconds)", too_long[i]);
		msg = parse_failz(text, "x.yaml", "x", -EINVAL);
		if (strcmp(msg, want) != 0)
			fail_msg("time_limit %s: got \"%s\", want \"%s\"", too_long[i], msg, want);
	}
}

/*
 * A service: replicas and port, no restart budget, and a name that leaves room for its
 * instances' (<name>.<index>); what it renders reads back the same, and a copy under an
 * instance's name is the same spec but for the name.
 */
static void test_job_spec_service(void **state)
{
	struct conf_job_spec *s, *copy;
	char name[CONF_NAME_MAX + 2], text[256];
	const char *msg;

	(void)state;
	s = parse_ok("npus: 16\nkind: service\n", "svc.yaml", "svc");
	assert_int_equal(s->kind, CONF_JOB_SERVICE);
	assert_int_equal(s->replicas, 1);
	assert_int_equal(s->port, CONF_SERVICE_PORT_DEFAULT);
	assert_true(s->max_restarts == CONF_RESTARTS_UNLIMITED);
	assert_round_trip(s);
	copy = conf_job_spec_dup(s, "svc.3");
	assert_non_null(copy);
	assert_string_equal(copy->name, "svc.3");
	assert_string_equal(copy->queue, s->queue);
	free(copy->name);
	copy->name = strdup("svc");
	assert_spec_equal(s, copy);
	conf_job_spec_free(copy);
	conf_job_spec_free(s);
	s = parse_ok("npus: 8\nkind: service\nreplicas: 64\nport: 8080\n", "svc.yaml", "svc");
	assert_int_equal(s->replicas, 64);
	assert_int_equal(s->port, 8080);
	/* a service is not preempted unless it says so; one instance out at a time */
	assert_false(s->preemptible);
	assert_int_equal(s->max_unavailable, 1);
	assert_round_trip(s);
	conf_job_spec_free(s);
	/* replicas: 0 serves none until scaled up (Kubernetes' replicas: 0); 65 is too many */
	s = parse_ok("npus: 8\nkind: service\nreplicas: 0\n", "svc.yaml", "svc");
	assert_int_equal(s->replicas, 0);
	assert_int_equal(s->kind, CONF_JOB_SERVICE);
	assert_round_trip(s);
	conf_job_spec_free(s);
	msg = parse_failz("npus: 8\nkind: service\nreplicas: 65\n", "svc.yaml", "svc", -EINVAL);
	assert_non_null(strstr(msg, "svc.yaml:3:11: replicas"));
	s = parse_ok("npus: 8\nkind: service\npreemptible: true\nmax_unavailable: 0\n",
		     "svc.yaml", "svc");
	assert_true(s->preemptible);
	assert_int_equal(s->max_unavailable, 0);
	assert_round_trip(s);
	conf_job_spec_free(s);
	msg = parse_failz("npus: 8\npreemptible: false\n", "t.yaml", "t", -EINVAL);
	assert_non_null(strstr(msg, "t.yaml:2:14: preemptible: only a service has preemptible"));
	msg = parse_failz("npus: 8\nkind: service\nmax_unavailable: 65\n", "s.yaml", "s",
			  -EINVAL);
	assert_non_null(strstr(msg, "s.yaml:3"));
	assert_non_null(strstr(msg, "max_unavailable"));
	msg = parse_failz("npus: 8\nkind: service\npreemptible: sometimes\n", "s.yaml", "s",
			  -EINVAL);
	assert_non_null(strstr(msg, "s.yaml:3"));
	/* the disaggregated layout: replicas is prefill + decode */
	s = parse_ok("npus: 8\nkind: service\ndisaggregated: {prefill: 2, decode: 1, "
		     "controller: infer-01, coordinator: infer-02}\n", "pd.yaml", "pd");
	assert_int_equal(s->replicas, 3);
	assert_int_equal(s->prefill, 2);
	assert_int_equal(s->decode, 1);
	assert_string_equal(s->controller, "infer-01");
	assert_string_equal(s->coordinator, "infer-02");
	assert_round_trip(s);
	copy = conf_job_spec_dup(s, "pd.0");
	assert_non_null(copy);
	assert_string_equal(copy->controller, "infer-01");
	conf_job_spec_free(copy);
	conf_job_spec_free(s);
	/* a role ascendfs runs: {server, command}; the short form runs nothing */
	s = parse_ok("npus: 8\nkind: service\ndisaggregated: {prefill: 1, decode: 1, "
		     "controller: infer-01, coordinator: infer-02}\n", "pd.yaml", "pd");
	assert_null(s->controller_command);
	assert_null(s->coordinator_command);
	conf_job_spec_free(s);
	s = parse_ok("npus: 8\nkind: service\ndisaggregated:\n  prefill: 1\n  decode: 1\n"
		     "  controller: {server: infer-01, command: ms_controller}\n"
		     "  coordinator:\n    server: infer-02\n    command: |\n"
		     "      cd /opt/ms\n      exec ./ms_coordinator\n", "pd.yaml", "pd");
	assert_string_equal(s->controller, "infer-01");
	assert_string_equal(s->controller_command, "ms_controller");
	assert_string_equal(s->coordinator, "infer-02");
	assert_string_equal(s->coordinator_command, "cd /opt/ms\nexec ./ms_coordinator\n");
	assert_round_trip(s);
	copy = conf_job_spec_dup(s, "pd.0");
	assert_non_null(copy);
	assert_string_equal(copy->coordinator_command, s->coordinator_command);
	conf_job_spec_free(copy);
	conf_job_spec_free(s);
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 1, decode: 1, "
			  "controller: {command: x}, coordinator: b}\n", "pd.yaml", "pd", -EINVAL);
	assert_non_null(strstr(msg, "pd.yaml:3:52: disaggregated.controller.server is missing"));
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 1, decode: 1, "
			  "controller: {server: a, cmd: x}, coordinator: b}\n", "pd.yaml", "pd",
			  -EINVAL);
	assert_non_null(strstr(msg, "unknown key \"cmd\""));
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 1, decode: 1, "
			  "controller: {server: a, command: [x]}, coordinator: b}\n", "pd.yaml",
			  "pd", -EINVAL);
	assert_non_null(strstr(msg, "disaggregated.controller.command"));
	msg = parse_failz("npus: 8\nkind: service\nreplicas: 2\ndisaggregated: {prefill: 2, "
			  "decode: 1, controller: a, coordinator: b}\n", "pd.yaml", "pd", -EINVAL);
	assert_non_null(strstr(msg, "pd.yaml:3:11: replicas: 2, but disaggregated asks for 2 "
				    "prefill and 1 decode instances; leave replicas out"));
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 2, controller: a, "
			  "coordinator: b}\n", "pd.yaml", "pd", -EINVAL);
	assert_non_null(strstr(msg, "pd.yaml:3:16: disaggregated.decode is missing"));
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 1, decode: 1, "
			  "controller: a}\n", "pd.yaml", "pd", -EINVAL);
	assert_non_null(strstr(msg, "disaggregated.coordinator is missing"));
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 1, decode: 1, "
			  "controller: A/B, coordinator: b}\n", "pd.yaml", "pd", -EINVAL);
	assert_non_null(strstr(msg, "disaggregated.controller: \"A/B\" is not a valid server name"));
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 1, decode: 1, "
			  "controller: a, coordinator: b, router: c}\n", "pd.yaml", "pd", -EINVAL);
	assert_non_null(strstr(msg, "unknown key \"router\""));
	msg = parse_failz("npus: 8\nkind: service\ndisaggregated: {prefill: 40, decode: 40, "
			  "controller: a, coordinator: b}\n", "pd.yaml", "pd", -EINVAL);
	assert_non_null(strstr(msg, "more than a service has (64); give at most 64 in all"));
	msg = parse_failz("npus: 8\ndisaggregated: {prefill: 1}\n", "t.yaml", "t", -EINVAL);
	assert_non_null(strstr(msg, "only a service has disaggregated"));
	/* a training job renders as before: no kind, replicas or port */
	s = parse_ok("npus: 8\nkind: training\n", "t.yaml", "t");
	assert_int_equal(s->kind, CONF_JOB_TRAINING);
	assert_int_equal(s->replicas, 0);
	{
		char *out;
		size_t len;

		assert_int_equal(conf_job_spec_render_yaml(s, &out, &len), 0);
		assert_null(strstr(out, "kind"));
		assert_null(strstr(out, "replicas"));
		free(out);
	}
	conf_job_spec_free(s);
	/* a service's name is any job name here: an instance's copy of its spec has a longer
	 * one (<name>.<index>), and must read back; the cluster holds the service's own to
	 * CONF_SERVICE_NAME_MAX (sched_service_check(), test_sched_service) */
	memset(name, 'a', sizeof(name));
	name[CONF_NAME_MAX] = '\0';
	snprintf(text, sizeof(text), "name: %s\nnpus: 8\nkind: service\ndisaggregated: {prefill: "
		 "1, decode: 1, controller: {server: a, command: x}, coordinator: b}\n", name);
	s = parse_ok(text, "x.yaml", NULL);
	assert_round_trip(s);
	conf_job_spec_free(s);
}

static void test_job_spec_full_round_trip(void **state)
{
	struct conf_job_spec *s = parse_ok(full_spec, "full-job.yaml", NULL);

	assert_string_equal(s->command, "source /usr/local/Ascend/ascend-toolkit/set_env.sh\n"
					"python train.py --config \"a: b.yaml\" # kept\n");
	assert_true(s->time_limit_sec == 26 * 3600);
	assert_string_equal(s->server_type, "atlas800t-a2");
	assert_round_trip(s);
	conf_job_spec_free(s);
}

static void test_job_spec_render_quotes_user_strings(void **state)
{
	/* Each command would change meaning if it were written out unquoted. */
	static const char *const commands[] = {
		"yes", "8", "null", "~", "- item", "a: b", "# not a comment", "'single'",
		"\"double\"", "{x: 1}", "[1, 2]", "&anchor", "*alias", "!tag", "%directive",
		"@at", "`tick`", "trailing space ", " leading space", "tab\there",
		"multi\nline\n", "unicode 中文 ✓", "back\\slash", "0x1F", "1e3", "true",
	};
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		struct conf_job_spec *s = parse_ok("npus: 1\n", "q.yaml", "q"), *again;
		char *text;
		size_t len;

		free(s->command);
		s->command = strdup(commands[i]);
		assert_non_null(s->command);
		assert_int_equal(conf_job_spec_render_yaml(s, &text, &len), 0);
		again = parse_ok(text, "q.yaml", "q");
		if (strcmp(again->command, commands[i]) != 0)
			fail_msg("command %s rendered as:\n%s", commands[i], text);
		free(text);
		conf_job_spec_free(again);
		conf_job_spec_free(s);
	}
}

static void test_job_spec_elastic_npus(void **state)
{
	struct conf_job_spec *s =
		parse_ok("npus: {min: 8, max: 32}\nparallel: {tp: 8}\n", "e.yaml", "e");

	assert_int_equal(s->npus, 8);
	assert_int_equal(s->npus_min, 8);
	assert_int_equal(s->npus_max, 32);
	assert_round_trip(s);
	conf_job_spec_free(s);

	/* tp*cp*pp must divide both ends of the range. */
	assert_non_null(strstr(parse_failz("npus: {min: 8, max: 12}\nparallel: {tp: 8}\n",
					  "e.yaml", "e", -EINVAL),
			       "must divide both npus.min (8) and npus.max (12)"));
}

static void test_job_spec_priority_words(void **state)
{
	static const struct {
		const char *text;
		unsigned priority;
	} cases[] = { { "low", 100 }, { "normal", 500 }, { "high", 900 }, { "High", 900 },
		      { "0", 0 },     { "1000", 1000 },  { "\"42\"", 42 } };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[64];
		struct conf_job_spec *s;

		snprintf(text, sizeof(text), "npus: 1\npriority: %s\n", cases[i].text);
		s = parse_ok(text, "p.yaml", "p");
		assert_int_equal(s->priority, cases[i].priority);
		conf_job_spec_free(s);
	}
}

static void test_job_spec_parallel_rules(void **state)
{
	struct conf_job_spec *s;
	const char *msg;

	s = parse_ok("npus: 16\nparallel: {tp: 4, pp: 2}\n", "p.yaml", "p");
	assert_int_equal(s->tp, 4);
	assert_int_equal(s->pp, 2);
	assert_int_equal(s->cp + s->ep + s->dp, 0);
	conf_job_spec_free(s);
	s = parse_ok("npus: 16\nparallel: {dp: 16}\n", "p.yaml", "p");
	assert_int_equal(s->dp, 16);
	conf_job_spec_free(s);

	msg = parse_failz("npus: 8\nparallel: {tp: 3}\n", "p.yaml", "p", -EINVAL);
	assert_string_equal(msg, "p.yaml:2:11: parallel: tp*cp*pp (3) must divide npus (8); "
				 "choose tp, cp and pp whose product divides 8");
	/*
	 * dp with pp (else tp) left out: the left-out size is what the others leave, as the
	 * tp/pp/dp specs saved before cp and ep were read; the normalized spec says it, so
	 * a saved record parses to the same layout again
	 */
	s = parse_ok("npus: 16\nparallel: {tp: 2, dp: 4}\n", "p.yaml", "p");
	assert_int_equal(s->tp * 10 + s->pp, 22);
	assert_int_equal(s->dp, 4);
	conf_job_spec_free(s);
	s = parse_ok("npus: 16\nparallel: {pp: 2, dp: 2}\n", "p.yaml", "p");
	assert_int_equal(s->tp * 10 + s->pp, 42);
	conf_job_spec_free(s);
	/* with both given, dp is what tp*cp*pp leaves, not any divisor */
	msg = parse_failz("npus: 16\nparallel: {tp: 2, pp: 2, dp: 2}\n", "p.yaml", "p", -EINVAL);
	assert_string_equal(msg, "p.yaml:2:30: parallel.dp: 2 does not match npus / (tp*cp*pp) = "
				 "16 / 4 = 4; set dp to 4 or leave it out");
	msg = parse_failz("npus: 16\nparallel: {tp: 2, dp: 3}\n", "p.yaml", "p", -EINVAL);
	assert_non_null(strstr(msg, "parallel.dp: 3 does not match npus / (tp*cp*pp) = 16 / 2 = 8"));
	msg = parse_failz("npus: 8\nparallel: {tp: 2, pp: 2, dp: 1}\n", "p.yaml", "p", -EINVAL);
	assert_non_null(strstr(msg, "parallel.dp: 1 does not match npus / (tp*cp*pp) = 8 / 4 = 2"));
	msg = parse_failz("npus: 8\nparallel: 8\n", "p.yaml", "p", -EINVAL);
	assert_non_null(strstr(msg, "parallel: expected a mapping"));
}

/* cp joins tp and pp in the model-parallel size; ep is carved from dp (sched_comm.h) */
static void test_job_spec_parallel_cp_ep(void **state)
{
	struct conf_job_spec *s;
	const char *msg;

	s = parse_ok("npus: 64\nparallel: {tp: 4, cp: 2, ep: 4, dp: 4, pp: 2}\n", "m.yaml", "m");
	assert_int_equal(s->tp, 4);
	assert_int_equal(s->cp, 2);
	assert_int_equal(s->ep, 4);
	assert_int_equal(s->dp, 4);
	assert_int_equal(s->pp, 2);
	assert_round_trip(s);
	conf_job_spec_free(s);
	s = parse_ok("npus: {min: 16, max: 64}\nparallel: {tp: 8, ep: 2}\n", "m.yaml", "m");
	assert_int_equal(s->ep, 2);
	assert_round_trip(s);
	conf_job_spec_free(s);

	msg = parse_failz("npus: 32\nparallel: {tp: 4, cp: 3}\n", "m.yaml", "m", -EINVAL);
	assert_string_equal(msg, "m.yaml:2:11: parallel: tp*cp*pp (12) must divide npus (32); "
				 "choose tp, cp and pp whose product divides 32");
	msg = parse_failz("npus: 16\nparallel: {tp: 4, ep: 3}\n", "m.yaml", "m", -EINVAL);
	assert_string_equal(msg, "m.yaml:2:23: parallel.ep: 3 must divide dp (4 = npus / "
				 "(tp*cp*pp)); expert-parallel groups are made of dp ranks: "
				 "choose an ep that divides 4");
	/* ep divides a dp given explicitly, too */
	msg = parse_failz("npus: 16\nparallel: {tp: 2, dp: 8, ep: 16}\n", "m.yaml", "m", -EINVAL);
	assert_non_null(strstr(msg, "m.yaml:2:30: parallel.ep: 16 must divide dp (8 = "));
	msg = parse_failz("npus: {min: 16, max: 24}\nparallel: {tp: 8, ep: 2}\n", "m.yaml", "m",
			  -EINVAL);
	assert_string_equal(msg, "m.yaml:2:23: parallel.ep: 2 must divide dp at both ends of "
				 "npus (dp = npus / (tp*cp*pp): 2 at npus.min 16, 3 at npus.max "
				 "24); choose an ep that divides both, or npus bounds that are "
				 "multiples of tp*cp*pp*ep (16)");
	msg = parse_failz("npus: {min: 16, max: 40}\nparallel: {tp: 8, cp: 2}\n", "m.yaml", "m",
			  -EINVAL);
	assert_non_null(strstr(msg, "parallel: tp*cp*pp (16) must divide both npus.min (16) and "
				    "npus.max (40)"));
	msg = parse_failz("npus: {min: 8, max: 16}\nparallel: {dp: 1}\n", "m.yaml", "m", -EINVAL);
	assert_non_null(strstr(msg, "parallel.dp: cannot be fixed when npus is a range"));
	msg = parse_failz("npus: 8\nparallel: {cp: 0}\n", "m.yaml", "m", -EINVAL);
	assert_string_equal(msg, "m.yaml:2:16: parallel.cp: 0 is out of range; use a whole "
				 "number from 1 to 65536");
	msg = parse_failz("npus: 8\nparallel: {tp: 2, vpp: 2}\n", "m.yaml", "m", -EINVAL);
	assert_string_equal(msg, "m.yaml:2:19: unknown key \"vpp\"; expected one of: tp, cp, ep, "
				 "dp, pp");
}

static void test_job_spec_name_rules(void **state)
{
	struct conf_job_spec *s;
	const char *msg;

	/* name and file name agree */
	s = parse_ok("name: a.b_c-9\nnpus: 1\n", "a.b_c-9.yaml", "a.b_c-9");
	assert_string_equal(s->name, "a.b_c-9");
	conf_job_spec_free(s);
	/* no file name: name is required */
	msg = parse_failz("npus: 1\n", "stdin", NULL, -EINVAL);
	assert_string_equal(msg, "stdin:1:1: the spec has no name; add `name: <job name>`");
	/* a file name that is not a job name */
	msg = parse_failz("npus: 1\n", "My Job.yaml", "My Job", -EINVAL);
	assert_non_null(strstr(msg, "the file name \"My Job\" is not a valid job name"));
	/* 63 characters is the limit */
	s = parse_ok("npus: 1\n", "x.yaml",
		     "a23456789012345678901234567890123456789012345678901234567890123");
	conf_job_spec_free(s);
	msg = parse_failz("name: a234567890123456789012345678901234567890123456789012345678901234\n"
			 "npus: 1\n", "x.yaml", NULL, -EINVAL);
	assert_non_null(strstr(msg, "is not a valid job name"));
	/* control characters are quoted, not printed raw */
	msg = parse_failz("name: \"a\\tb\\\"\"\nnpus: 1\n", "x.yaml", NULL, -EINVAL);
	assert_string_equal(msg, "x.yaml:1:7: name: \"a\\tb\\\"\" is not a valid job name; use "
				 "1 to 63 lowercase letters, digits, '.', '_' or '-', starting "
				 "with a letter or digit");
	msg = parse_failz("name: \"a\\x01\"\nnpus: 1\n", "x.yaml", NULL, -EINVAL);
	assert_string_equal(msg, "x.yaml:1:7: name: contains control character 0x01; remove it");
}

static void test_job_spec_json(void **state)
{
	static const char json[] = "{\"name\": \"j\", \"npus\": \"4\", \"parallel\": {\"tp\": 4},"
				   " \"command\": \"python -c \\\"print(1)\\\"\"}";
	struct conf_job_spec *s = parse_ok(json, "j.json", "j");
	const char *msg;

	assert_int_equal(s->npus, 4);
	assert_string_equal(s->command, "python -c \"print(1)\"");
	conf_job_spec_free(s);
	msg = parse_failz("{\"npus\": 4, \"npus\": 8}", "j.json", "j", -EINVAL);
	assert_non_null(strstr(msg, "invalid JSON: duplicate object key"));
	msg = parse_failz("{\"npus\": 4,}", "j.json", "j", -EINVAL);
	assert_non_null(strstr(msg, "j.json:1:12: invalid JSON"));
	/* The same text is fine as YAML, where the extension is not .json. */
	s = parse_ok("{\"npus\": 4,}", "j.yaml", "j");
	conf_job_spec_free(s);
}

static void test_job_spec_empty(void **state)
{
	static const char *const empties[] = { "", "\n\n", "# only a comment\n", "---\n",
					       "~\n" };
	size_t i;

	for (i = 0; i < sizeof(empties) / sizeof(empties[0]); i++)
		assert_string_equal(parse_fail(empties[i], strlen(empties[i]), "e.yaml", "e",
					       -EINVAL),
				    "e.yaml: the spec is empty; it needs at least `npus`");
	assert_string_equal(parse_failz("", "e.json", "e", -EINVAL),
			    "e.json: the spec is empty; it needs at least `npus`");
	assert_non_null(strstr(parse_failz("hello\n", "e.yaml", "e", -EINVAL),
			       "e.yaml:1:1: the spec must be a mapping"));
}

static void test_job_spec_oversize(void **state)
{
	size_t len = 1024 * 1024, head;
	char *big = malloc(len);
	const char *msg;

	assert_non_null(big);
	head = (size_t)snprintf(big, len, "npus: 8\ncommand: ");
	memset(big + head, 'a', len - head);
	msg = parse_fail(big, len, "big.yaml", "big", -EFBIG);
	assert_string_equal(msg, "big.yaml: the spec is 1048576 bytes, more than the limit of "
				 "65536 bytes; make it smaller");

	/* Exactly at the limit is accepted. */
	head = (size_t)snprintf(big, len, "npus: 8\n#");
	memset(big + head, 'c', CONF_SPEC_MAX_BYTES - head - 1);
	big[CONF_SPEC_MAX_BYTES - 1] = '\n';
	{
		struct conf_job_spec *s = NULL;
		struct conf_error err;

		assert_int_equal(conf_job_spec_parse(big, CONF_SPEC_MAX_BYTES, "edge.yaml", "edge",
						     &s, &err),
				 0);
		conf_job_spec_free(s);
	}
	parse_fail(big, CONF_SPEC_MAX_BYTES + 1, "edge.yaml", "edge", -EFBIG);
	free(big);
}

static void test_job_spec_binary_rejected(void **state)
{
	static const char nul[] = "npus: 8\ncommand: a\0b\n";
	static const char bell[] = "npus: 8\n\acommand: x\n";
	static const char latin1[] = "npus: 8\ncommand: caf\xe9\n";
	static const char overlong[] = "npus: 8\ncommand: \xc0\xaf\n";
	static const char surrogate[] = "npus: 8\ncommand: \xed\xa0\x80\n";
	static const char truncated[] = "npus: 8\ncommand: \xe4\xb8";

	assert_string_equal(parse_fail(nul, sizeof(nul) - 1, "b.yaml", "b", -EINVAL),
			    "b.yaml:2:11: found a NUL byte; the file must be UTF-8 text, not "
			    "binary data");
	assert_non_null(strstr(parse_fail(bell, sizeof(bell) - 1, "b.yaml", "b", -EINVAL),
			       "b.yaml:2:1: found control character 0x07"));
	assert_non_null(strstr(parse_fail(latin1, sizeof(latin1) - 1, "b.yaml", "b", -EINVAL),
			       "b.yaml:2:13: found bytes that are not valid UTF-8"));
	assert_non_null(strstr(parse_fail(overlong, sizeof(overlong) - 1, "b", "b", -EINVAL),
			       "not valid UTF-8"));
	assert_non_null(strstr(parse_fail(surrogate, sizeof(surrogate) - 1, "b", "b", -EINVAL),
			       "not valid UTF-8"));
	assert_non_null(strstr(parse_fail(truncated, sizeof(truncated) - 1, "b", "b", -EINVAL),
			       "not valid UTF-8"));
	/* A NUL produced by an escape is refused too. */
	assert_non_null(strstr(parse_failz("npus: 8\ncommand: \"a\\0b\"\n", "b", "b", -EINVAL),
			       "NUL character"));
	/* A UTF-16 file (its byte order mark is not UTF-8). */
	assert_non_null(strstr(parse_failz("\xff\xfen\0p\0", "b", "b", -EINVAL),
			       "must be UTF-8 text"));
}

static void test_job_spec_not_nul_terminated(void **state)
{
	static const char text[] = "npus: 8\ncommand: run";
	char *exact = malloc(sizeof(text) - 1);
	struct conf_job_spec *s = NULL;
	struct conf_error err;

	/* ASan catches any read past len. */
	assert_non_null(exact);
	memcpy(exact, text, sizeof(text) - 1);
	assert_int_equal(conf_job_spec_parse(exact, sizeof(text) - 1, "t.yaml", "t", &s, &err), 0);
	assert_string_equal(s->command, "run");
	conf_job_spec_free(s);
	free(exact);
}

static void test_job_spec_alias_bomb(void **state)
{
	static const char bomb[] = "a: &a [x, x, x, x, x, x, x, x, x]\n"
				   "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
				   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
				   "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
				   "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
				   "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
				   "npus: *f\n";

	assert_string_equal(parse_fail(bomb, sizeof(bomb) - 1, "bomb.yaml", "bomb", -EINVAL),
			    "bomb.yaml:2:8: aliases are not supported; write the value out in "
			    "full");
}

static void test_job_spec_deep_nesting(void **state)
{
	size_t depth = 20000, i, o = 0;
	char *text = malloc(2 * depth + 16);
	const char *msg;

	assert_non_null(text);
	o += (size_t)sprintf(text, "npus: ");
	for (i = 0; i < depth; i++)
		text[o++] = '[';
	for (i = 0; i < depth; i++)
		text[o++] = ']';
	text[o] = '\0';
	msg = parse_fail(text, o, "deep.yaml", "deep", -EINVAL);
	assert_non_null(strstr(msg, "deep.yaml:1:70: the document is nested more than 64 levels"));
	free(text);

	/* 63 levels below the root mapping are fine for the parser (the schema then says no). */
	text = malloc(256);
	assert_non_null(text);
	o = (size_t)sprintf(text, "npus: ");
	for (i = 0; i < 63; i++)
		text[o++] = '[';
	for (i = 0; i < 63; i++)
		text[o++] = ']';
	text[o] = '\0';
	msg = parse_fail(text, o, "deep.yaml", "deep", -EINVAL);
	assert_non_null(strstr(msg, "npus: expected a whole number or"));
	free(text);
}

static void test_job_spec_duplicate_keys(void **state)
{
	char text[4096];
	size_t o = 0;
	int i;

	/* Enough keys that the sorted duplicate check is used, duplicate far from the first. */
	o += (size_t)snprintf(text + o, sizeof(text) - o, "npus: 8\nparallel:\n");
	for (i = 0; i < 40; i++)
		o += (size_t)snprintf(text + o, sizeof(text) - o, "  k%d: 1\n", i);
	o += (size_t)snprintf(text + o, sizeof(text) - o, "  k7: 2\n  k3: 3\n");
	assert_string_equal(parse_fail(text, o, "d.yaml", "d", -EINVAL),
			    "d.yaml:43:3: duplicate key \"k7\" (also at line 10); keep only one of "
			    "them");
	assert_string_equal(parse_failz("{npus: 1, npus: 1}", "d.yaml", "d", -EINVAL),
			    "d.yaml:1:11: duplicate key \"npus\" (also at line 1); keep only one "
			    "of them");
}

static void test_job_spec_non_scalar_key(void **state)
{
	assert_non_null(strstr(parse_failz("? [a, b]\n: 1\n", "k.yaml", "k", -EINVAL),
			       "k.yaml:1:3: a key must be a single word or string, not a list"));
}

static void test_job_spec_truncations(void **state)
{
	size_t len = strlen(full_spec), cut, ok = 0;

	/* Every prefix either parses or fails with a message; ASan/UBSan watch for the rest. */
	for (cut = 0; cut <= len; cut++) {
		struct conf_job_spec *s = NULL;
		struct conf_error err = { 0 };
		char *prefix = malloc(cut ? cut : 1);
		int r;

		assert_non_null(prefix);
		memcpy(prefix, full_spec, cut);
		r = conf_job_spec_parse(prefix, cut, "full-job.yaml", NULL, &s, &err);
		if (r == 0) {
			char *text;
			size_t tlen;

			ok++;
			assert_int_equal(conf_job_spec_render_yaml(s, &text, &tlen), 0);
			free(text);
			conf_job_spec_free(s);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_null(s);
			assert_true(err.msg[0] != '\0');
		}
		free(prefix);
	}
	/* The complete spec, and prefixes ending inside the last value, parse. */
	assert_true(ok >= 1);
}

static void test_job_spec_mutations(void **state)
{
	static const char replacements[] = { ':', '[', ']', '{', '}', '-', '"', '\'', '&', '*',
					     '\n', ' ', '\t', '#', '|', '>', '!', '?', ',', '0',
					     '%', '@', '\\', '\r', '\0', (char)0xc3, (char)0xff };
	size_t len = strlen(full_spec), i, k;
	char *copy = malloc(len);

	assert_non_null(copy);
	for (i = 0; i < len; i++) {
		for (k = 0; k < sizeof(replacements); k++) {
			struct conf_job_spec *s = NULL;
			struct conf_error err = { 0 };
			int r;

			memcpy(copy, full_spec, len);
			copy[i] = replacements[k];
			r = conf_job_spec_parse(copy, len, "m.yaml", NULL, &s, &err);
			if (r == 0) {
				char *text;
				size_t tlen;

				assert_int_equal(conf_job_spec_render_yaml(s, &text, &tlen), 0);
				free(text);
				conf_job_spec_free(s);
			} else {
				assert_int_equal(r, -EINVAL);
				assert_true(err.msg[0] != '\0');
			}
		}
	}
	free(copy);
}

#ifdef TEST_CHAOS
/*
 * Run @fn with the Nth allocation failing, N = 0, 1, ... until a run sees no failure.
 * Every failing run must return -ENOMEM and free all it allocated. Returns the number
 * of allocation sites exercised.
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
		if (r != -ENOMEM)
			fail_msg("allocation %ld failed but the result was %d", n, r);
		if (chaos_live != live_before)
			fail_msg("allocation %ld failed and %ld allocations leaked", n,
				 chaos_live - live_before);
	}
}

/* Parse, render, free; the first error is returned. */
static int chaos_spec(const void *arg)
{
	const char *file = arg;
	struct conf_job_spec *s = NULL;
	struct conf_error err;
	char *text = NULL;
	size_t len;
	int r;

	r = conf_job_spec_parse(full_spec, strlen(full_spec), file, NULL, &s, &err);
	if (r < 0) {
		assert_null(s);
		return r;
	}
	r = conf_job_spec_render_yaml(s, &text, &len);
	conf_job_spec_free(s);
	free(text);
	return r;
}

static int chaos_json_spec(const void *arg)
{
	static const char json[] = "{\"name\": \"j\", \"npus\": {\"min\": 2, \"max\": 4},"
				   " \"command\": \"run\", \"parallel\": {\"tp\": 2}}";
	struct conf_job_spec *s = NULL;
	struct conf_error err;
	int r;

	r = conf_job_spec_parse(json, strlen(json), "j.json", NULL, &s, &err);
	conf_job_spec_free(s);
	/*
	 * jansson reports some failed allocations in its lexer as syntax errors ("invalid
	 * token"); the document is then refused as invalid JSON, which is still clean.
	 */
	if (r == -EINVAL && chaos_injected && strncmp(err.msg, "invalid JSON: ", 14) == 0)
		return -ENOMEM;
	return r;
}

static int chaos_cluster(const void *arg)
{
	static const char text[] = "cluster: {name: c, heartbeat_timeout: 20}\n"
				   "hccl: {hccl_if_ip: 10.0.0.9, hccl_socket_ifname: eth0}\n"
				   "queues:\n"
				   "  - {name: research, quota_npus: 8, groups: [a, b]}\n"
				   "servers:\n"
				   "  - name: n1\n"
				   "    host_ip: 10.0.1.1\n"
				   "    type: atlas800\n"
				   "    switch: leaf-1\n"
				   "    super_pod: \"0\"\n"
				   "    device_ips: [10.2.0.1, 10.2.0.2, 10.2.0.3, 10.2.0.4,"
				   " 10.2.0.5, 10.2.0.6, 10.2.0.7, 10.2.0.8]\n"
				   "  - {name: n2, host_ip: 10.0.1.2, type: atlas800,"
				   " switch: leaf-1}\n";
	struct conf_cluster *c = NULL;
	struct conf_error err;
	char *out = NULL;
	size_t len;
	int r;

	r = conf_cluster_parse(text, strlen(text), "c.yaml", &c, &err);
	if (r < 0) {
		assert_null(c);
		return r;
	}
	r = conf_cluster_render_yaml(c, &out, &len);
	conf_cluster_free(c);
	free(out);
	return r;
}
#endif

static void test_conf_allocation_failures(void **state)
{
#ifdef TEST_CHAOS
	long sites;

	if (!chaos_hooks_work())
		return;
	sites = chaos_run(chaos_spec, "full-job.yaml");
	print_message("spec: %ld allocations, each failed once\n", sites);
	assert_true(sites > 10);
	sites = chaos_run(chaos_json_spec, NULL);
	print_message("json spec: %ld allocations, each failed once\n", sites);
	assert_true(sites > 10);
	sites = chaos_run(chaos_cluster, NULL);
	print_message("cluster: %ld allocations, each failed once\n", sites);
	assert_true(sites > 10);
#else
	print_message("allocation-failure injection needs glibc without a sanitizer; not run\n");
#endif
}

static void test_conf_journal_stream_matches_table(void **state)
{
	static const struct {
		const char *env;
		bool match;
	} cases[] = {
		{ "2049:123456", true },
		{ "2049:123457", false },
		{ "2048:123456", false },
		{ NULL, false },
		{ "", false },
		{ "2049", false },
		{ "2049:", false },
		{ ":123456", false },
		{ "2049:123456 ", false },
		{ " 2049:123456", false },
		{ "2049:123456:1", false },
		{ "-2049:123456", false },
		{ "0x801:123456", false },
		{ "2049:99999999999999999999", false },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (conf_journal_stream_matches(cases[i].env, 2049, 123456) != cases[i].match)
			fail_msg("JOURNAL_STREAM \"%s\": expected %s", cases[i].env ? cases[i].env :
				 "(unset)", cases[i].match ? "a match" : "no match");
	}
	assert_true(conf_journal_stream_matches("18446744073709551615:0", UINT64_MAX, 0));
}

static void test_conf_parse_duration_table(void **state)
{
	static const struct {
		const char *text;
		int r;
		uint64_t sec;
	} cases[] = {
		{ "0", 0, 0 },
		{ "90", 0, 90 },
		{ "90s", 0, 90 },
		{ "30m", 0, 1800 },
		{ "2h", 0, 7200 },
		{ "1d", 0, 86400 },
		{ "1h30m", 0, 5400 },
		{ "1d2h3m4s", 0, 93784 },
		{ "72h", 0, 259200 },
		/* at most CONF_DURATION_MAX_SEC, so its microseconds fit with room to add */
		{ "3153600000", 0, CONF_DURATION_MAX_SEC },
		{ "36500d", 0, CONF_DURATION_MAX_SEC },
		{ "3153600001", -ERANGE, 0 },
		{ "36500d1s", -ERANGE, 0 },
		{ "18446744073709551615", -ERANGE, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "99999999999999999999999999d", -ERANGE, 0 },
		{ "213503982334601d", -ERANGE, 0 },
		{ "213503982334602d", -ERANGE, 0 },
		{ "18446744073710s", -ERANGE, 0 },
		{ "99999999999999999999999999x", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "2x", -EINVAL, 0 },
		{ "h", -EINVAL, 0 },
		{ "1h30", -EINVAL, 0 },
		{ "30m1h", -EINVAL, 0 },
		{ "1h1h", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ " 1h", -EINVAL, 0 },
		{ "1 h", -EINVAL, 0 },
		{ "1H", -EINVAL, 0 },
		{ "1.5h", -EINVAL, 0 },
	};
	size_t i;

	assert_int_equal(conf_parse_duration(NULL, &(uint64_t){ 0 }), -EINVAL);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int r = conf_parse_duration(cases[i].text, &v);

		if (r != cases[i].r)
			fail_msg("\"%s\": expected %d, got %d", cases[i].text, cases[i].r, r);
		if (r == 0 && v != cases[i].sec)
			fail_msg("\"%s\": expected %llu, got %llu", cases[i].text,
				 (unsigned long long)cases[i].sec, (unsigned long long)v);
		if (r < 0)
			assert_true(v == 12345);
	}
}

static void test_conf_name_is_valid_table(void **state)
{
	static const char *const good[] = {
		"a", "0", "llama70b", "a.b", "a_b", "a-b", "9-lives", "a..b",
		"a23456789012345678901234567890123456789012345678901234567890123",
	};
	static const char *const bad[] = {
		"", ".", "..", ".hidden", "-a", "_a", "A", "aB", "a/b", "../x", "a b", "a\tb",
		"a\nb", "a\x01", "é", "a:b",
		"a234567890123456789012345678901234567890123456789012345678901234",
	};
	size_t i;

	assert_false(conf_name_is_valid(NULL));
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!conf_name_is_valid(good[i]))
			fail_msg("\"%s\" should be valid", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (conf_name_is_valid(bad[i]))
			fail_msg("\"%s\" should be invalid", bad[i]);
}

static void test_conf_ip_is_valid_table(void **state)
{
	assert_true(conf_ip_is_valid("10.0.1.1"));
	assert_true(conf_ip_is_valid("255.255.255.255"));
	assert_true(conf_ip_is_valid("fd00::1"));
	assert_true(conf_ip_is_valid("::ffff:10.0.0.1"));
	assert_false(conf_ip_is_valid(NULL));
	assert_false(conf_ip_is_valid(""));
	assert_false(conf_ip_is_valid("10.0.1"));
	assert_false(conf_ip_is_valid("10.0.1.256"));
	assert_false(conf_ip_is_valid("10.0.1.1 "));
	assert_false(conf_ip_is_valid("node-1"));
	assert_false(conf_ip_is_valid("fd00::1::2"));
	assert_false(conf_ip_is_valid("10.0.1.1/24"));
}

static void test_conf_error_format_variants(void **state)
{
	struct conf_error err = { .line = 3, .column = 7 };
	char buf[64];

	snprintf(err.file, sizeof(err.file), "a.yaml");
	snprintf(err.msg, sizeof(err.msg), "npus: 0 is out of range");
	assert_string_equal(conf_error_format(&err, buf, sizeof(buf)),
			    "a.yaml:3:7: npus: 0 is out of range");
	err.column = 0;
	assert_string_equal(conf_error_format(&err, buf, sizeof(buf)),
			    "a.yaml:3: npus: 0 is out of range");
	err.line = 0;
	assert_string_equal(conf_error_format(&err, buf, sizeof(buf)),
			    "a.yaml: npus: 0 is out of range");
	/* Truncated, still terminated. */
	assert_string_equal(conf_error_format(&err, buf, 8), "a.yaml:");
	assert_ptr_equal(conf_error_format(&err, buf, 0), buf);
}

/*
 * A refusal the cluster decides after the spec parsed (an unknown queue, a server of the
 * disaggregated layout, a job cap) points at the value of the key it begins with, as the
 * parser's own errors do; a reason that names no key of the spec keeps "file: reason".
 */
static void test_conf_job_spec_where_points_at_the_key(void **state)
{
	const char *yaml = "npus: 16\nkind: service\nqueue: nope\ndisaggregated:\n"
			   "  prefill: 1\n  decode: 1\n  controller: node-9\n"
			   "  coordinator: node-1\n";
	const char *json = "{\"npus\": 2,\n \"queue\": \"nope\"}";
	char buf[256];

	(void)state;
	assert_string_equal(conf_job_spec_where(yaml, strlen(yaml), "s.yaml",
						"queue: unknown queue \"nope\"", buf, sizeof(buf)),
			    "s.yaml:3:8: queue: unknown queue \"nope\"");
	assert_string_equal(conf_job_spec_where(yaml, strlen(yaml), "s.yaml",
						"disaggregated.controller: no server node-9",
						buf, sizeof(buf)),
			    "s.yaml:7:15: disaggregated.controller: no server node-9");
	/* a cap's sentence: the key, then a space */
	assert_string_equal(conf_job_spec_where(yaml, strlen(yaml), "s.yaml",
						"npus 16 exceeds queue \"q\"'s max_npus 8",
						buf, sizeof(buf)),
			    "s.yaml:1:7: npus 16 exceeds queue \"q\"'s max_npus 8");
	assert_string_equal(conf_job_spec_where(json, strlen(json), "s.json",
						"queue: unknown queue \"nope\"", buf, sizeof(buf)),
			    "s.json:2:11: queue: unknown queue \"nope\"");
	/* no such key in the spec (name came from the file's name), no key at all, a
	 * path through a scalar, a text that does not parse */
	assert_string_equal(conf_job_spec_where(yaml, strlen(yaml), "s.yaml",
						"name: \"X\" is not a valid job name", buf,
						sizeof(buf)),
			    "s.yaml: name: \"X\" is not a valid job name");
	assert_string_equal(conf_job_spec_where(yaml, strlen(yaml), "s.yaml", "out of memory",
						buf, sizeof(buf)),
			    "s.yaml: out of memory");
	assert_string_equal(conf_job_spec_where(yaml, strlen(yaml), "s.yaml",
						"npus.x: nothing", buf, sizeof(buf)),
			    "s.yaml: npus.x: nothing");
	assert_string_equal(conf_job_spec_where("npus: [1", 8, "s.yaml", "npus: bad", buf,
						sizeof(buf)),
			    "s.yaml: npus: bad");
	/* truncated, still terminated */
	assert_string_equal(conf_job_spec_where(yaml, strlen(yaml), "s.yaml", "queue: x", buf, 8),
			    "s.yaml:");
}

static void test_conf_error_quotes_long_strings(void **state)
{
	char text[600];
	const char *msg;

	/* A huge unknown key is cut in the message, which still names the allowed keys. */
	memset(text, 'k', 300);
	snprintf(text + 300, sizeof(text) - 300, ": 1\nnpus: 1\n");
	msg = parse_fail(text, strlen(text), "l.yaml", "l", -EINVAL);
	assert_non_null(strstr(msg, "kkk...\"; expected one of: name, npus"));
	/* the key is cut, so the message stays short: the key list and a quote's length */
	text[300] = '\0';
	assert_null(strstr(msg, text));
	assert_true(strlen(msg) < 400);
}

/* `array:` index sets: Slurm's forms read as meant, written back as the shortest runs,
 * and any set of indexes (random ones, the worst alternations) reads back the same from
 * its text, which fits CONF_ARRAY_TEXT_MAX. */
static void test_job_array_sets_round_trip(void **state)
{
	static const struct {
		const char *in, *out;
		unsigned count, throttle;
	} cases[] = {
		{ "0-99%8", "0-99%8", 100, 8 },
		{ "7", "7", 1, 0 },
		{ "1,3,5-11:2,40", "1-11:2,40", 7, 0 },
		{ "0-3,2-5", "0-5", 6, 0 },
		{ "0-9%10", "0-9", 10, 0 }, /* a throttle of all of them limits nothing */
		{ "0,2", "0,2", 2, 0 },
		{ "1000", "1000", 1, 0 },
	};
	static const char *const bad[] = { "", "%2", "a", "1-", "-1", "3-1", "0-1001", "1,",
					   "0-9%0", "0-9:0", "0-9%2x", "12345678", " 1" };
	struct conf_job_array a, b;
	char text[CONF_ARRAY_TEXT_MAX], why[256];
	uint64_t seed = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(conf_job_array_parse(cases[i].in, &a, why, sizeof(why)), 0);
		assert_string_equal(conf_job_array_text(&a, true, text, sizeof(text)),
				    cases[i].out);
		assert_int_equal(a.count, cases[i].count);
		assert_int_equal(a.throttle, cases[i].throttle);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (conf_job_array_parse(bad[i], &a, why, sizeof(why)) != -EINVAL)
			fail_msg("array \"%s\" accepted", bad[i]);
		assert_true(why[0] != '\0');
		assert_int_equal(a.count, 0); /* nothing half read */
	}
	for (int round = 0; round < 400; round++) {
		int n;

		memset(&a, 0, sizeof(a));
		for (unsigned i = 0; i <= CONF_ARRAY_INDEX_MAX; i++) {
			/* random densities, and the alternations that write longest */
			bool on = round == 0 ? i % 2 == 0 : round == 1 ? i % 3 != 2 :
				  round == 2 ? true : (seed = seed * 6364136223846793005u + 1,
						       (seed >> 33) % (unsigned)(round % 7 + 2) == 0);

			if (on) {
				a.set[i / 8] |= (unsigned char)(1u << (i % 8));
				a.count++;
			}
		}
		if (!a.count)
			continue;
		a.throttle = round % 5 == 0 ? 3 : 0;
		conf_job_array_text(&a, true, text, sizeof(text));
		n = (int)strlen(text);
		assert_true(n < CONF_ARRAY_TEXT_MAX - 1);
		assert_int_equal(conf_job_array_parse(text, &b, why, sizeof(why)), 0);
		assert_memory_equal(a.set, b.set, sizeof(a.set));
		assert_int_equal(a.count, b.count);
		assert_int_equal(a.throttle < a.count ? a.throttle : 0, b.throttle);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_spec_example_llama70b),
		cmocka_unit_test(test_job_spec_example_llama70b_pd),
		cmocka_unit_test(test_job_spec_example_qwen7b),
		cmocka_unit_test(test_job_spec_example_llama7b_eval),
		cmocka_unit_test(test_job_spec_defaults),
		cmocka_unit_test(test_job_spec_null_value_means_default),
		cmocka_unit_test(test_job_spec_full_round_trip),
		cmocka_unit_test(test_job_spec_service),
		cmocka_unit_test(test_job_spec_render_quotes_user_strings),
		cmocka_unit_test(test_job_spec_elastic_npus),
		cmocka_unit_test(test_job_spec_priority_words),
		cmocka_unit_test(test_job_spec_parallel_rules),
		cmocka_unit_test(test_job_spec_parallel_cp_ep),
		cmocka_unit_test(test_job_spec_name_rules),
		cmocka_unit_test(test_job_spec_json),
		cmocka_unit_test(test_job_spec_empty),
		cmocka_unit_test(test_job_spec_oversize),
		cmocka_unit_test(test_job_spec_binary_rejected),
		cmocka_unit_test(test_job_spec_not_nul_terminated),
		cmocka_unit_test(test_job_spec_alias_bomb),
		cmocka_unit_test(test_job_spec_deep_nesting),
		cmocka_unit_test(test_job_spec_duplicate_keys),
		cmocka_unit_test(test_job_spec_non_scalar_key),
		cmocka_unit_test(test_job_spec_truncations),
		cmocka_unit_test(test_job_spec_mutations),
		cmocka_unit_test(test_conf_allocation_failures),
		cmocka_unit_test(test_conf_parse_duration_table),
		cmocka_unit_test(test_job_spec_time_limit_range),
		cmocka_unit_test(test_conf_journal_stream_matches_table),
		cmocka_unit_test(test_conf_name_is_valid_table),
		cmocka_unit_test(test_conf_ip_is_valid_table),
		cmocka_unit_test(test_conf_error_format_variants),
		cmocka_unit_test(test_conf_error_quotes_long_strings),
		cmocka_unit_test(test_conf_job_spec_where_points_at_the_key),
		cmocka_unit_test(test_job_array_sets_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
