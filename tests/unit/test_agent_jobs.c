/* SPDX-License-Identifier: MIT */
/*
 * What ascend-agent's launcher reads from the mount: the share listing of
 * nodes/<node>/jobs and the env files, as the daemon renders them (sched) and broken;
 * the environment a job process gets; the status an exit is reported with.
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

#include "agent.h"
#include "ascend_sched.h"
#include "sched_fixture.h"
#include "test_util.h"

#include "test_chaos.h"

/* ---- nodes/<node>/jobs ---- */

static size_t jobs_ok(const char *text, struct agent_share *out, size_t max)
{
	struct conf_error err = { 0 };
	char msg[1024];
	size_t n = 999;
	int r;

	r = agent_parse_server_jobs(text, strlen(text), "nodes/n1/jobs", out, max, &n, &err);
	if (r != 0)
		fail_msg("expected success, got %d: %s", r,
			 conf_error_format(&err, msg, sizeof(msg)));
	return n;
}

/* The formatted error (static buffer); outputs must be untouched. */
static const char *jobs_fail(const char *text, size_t max, int want)
{
	static char msg[1024];
	struct agent_share out[4];
	struct conf_error err = { 0 };
	size_t n = 12345;
	int r;

	memset(out, 0x5a, sizeof(out));
	r = agent_parse_server_jobs(text, strlen(text), "nodes/n1/jobs", out, max, &n, &err);
	conf_error_format(&err, msg, sizeof(msg));
	if (r != want)
		fail_msg("expected %d, got %d (%s) for %s", want, r, msg, text);
	assert_int_equal(n, 12345);
	assert_int_equal(((unsigned char *)out)[0], 0x5a);
	return msg;
}

static void test_jobs_listing_lines(void **state)
{
	struct agent_share s[4];
	size_t n;

	n = jobs_ok("# job generation launch node_rank first_rank npu_count uid gid\n", s, 4);
	assert_int_equal(n, 0);
	n = jobs_ok("", s, 4);
	assert_int_equal(n, 0);
	n = jobs_ok("# header\n"
		    "llama70b 2 msrun 1 8 8 1000 100\n"
		    "\n"
		    "  eval.v2\t3 per-rank 0 0 2 0 0 77 3 2 future-field more\r\n"
		    "x 4294967295 msrun 0 0 16 4294967294 7",
		    s, 4);
	assert_int_equal(n, 3);
	assert_string_equal(s[0].job, "llama70b");
	assert_int_equal(s[0].generation, 2);
	assert_int_equal(s[0].launch, CONF_LAUNCH_MSRUN);
	assert_int_equal(s[0].node_rank, 1);
	assert_int_equal(s[0].first_rank, 8);
	assert_int_equal(s[0].npu_count, 8);
	assert_int_equal(s[0].uid, 1000);
	assert_int_equal(s[0].gid, 100);
	assert_string_equal(s[1].job, "eval.v2");
	assert_int_equal(s[1].launch, CONF_LAUNCH_PER_RANK);
	assert_int_equal(s[1].npu_count, 2);
	/* the tenth word: in-place restarts of the share; absent, none */
	assert_int_equal(s[1].attempt, 3);
	assert_int_equal(s[0].attempt, 0);
	/* the eleventh: the generation since which a process-level recovery kept the
	 * share's processes; absent, none; words after it are a later daemon's */
	assert_int_equal(s[1].kept_from, 2);
	assert_int_equal(s[0].kept_from, 0);
	assert_int_equal(s[2].generation, 4294967295u);
	assert_int_equal(s[2].npu_count, 16);
	assert_string_equal(s[0].home, "llama70b");
	assert_string_equal(s[0].role, "");

	/* a disaggregated service's controller and coordinator: no NPUs, the service's
	 * files */
	n = jobs_ok("pd.v1.controller 3 controller 0 0 0 1000 100 42 0 0\n"
		    "pd.v1.coordinator 1 coordinator 0 0 0 1000 100 42\n", s, 4);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].job, "pd.v1.controller");
	assert_string_equal(s[0].home, "pd.v1");
	assert_string_equal(s[0].role, "controller");
	assert_int_equal(s[0].generation, 3);
	assert_int_equal(s[0].launch, CONF_LAUNCH_MSRUN);
	assert_int_equal(s[0].npu_count, 0);
	assert_string_equal(s[1].home, "pd.v1");
	assert_string_equal(s[1].role, "coordinator");
}

static void test_jobs_listing_refused(void **state)
{
	assert_non_null(strstr(jobs_fail("llama 1 msrun 0 0 8 0\n", 4, -EINVAL),
			       "nodes/n1/jobs:1: \"llama 1 msrun 0 0 8 0\": the line has 7 words"));
	assert_non_null(strstr(jobs_fail("llama\n", 4, -EINVAL), "the line has 1 word;"));
	assert_non_null(strstr(jobs_fail("Llama 1 msrun 0 0 8 0 0\n", 4, -EINVAL),
			       "\"Llama\" is not a job name"));
	assert_non_null(strstr(jobs_fail("../x 1 msrun 0 0 8 0 0\n", 4, -EINVAL),
			       "is not a job name"));
	assert_non_null(strstr(jobs_fail("# h\nllama 1 mpirun 0 0 8 0 0\n", 4, -EINVAL),
			       "nodes/n1/jobs:2: launch \"mpirun\" is neither msrun, per-rank, "
			       "controller nor coordinator"));
	/* a service's role: named <service>.<role>, no NPUs; a job's share has NPUs */
	assert_non_null(strstr(jobs_fail("pd 1 controller 0 0 0 0 0\n", 4, -EINVAL),
			       "\"pd\": a controller's run is named <service>.controller"));
	assert_non_null(strstr(jobs_fail("pd.coordinator 1 controller 0 0 0 0 0\n", 4,
					 -EINVAL), "is named <service>.controller"));
	jobs_fail(".controller 1 controller 0 0 0 0 0\n", 4, -EINVAL);
	assert_non_null(strstr(jobs_fail("pd.controller 1 controller 0 0 8 0 0\n", 4, -EINVAL),
			       "0 for a service's role"));
	jobs_fail("llama 0 msrun 0 0 8 0 0\n", 4, -EINVAL);
	jobs_fail("llama 1 msrun 0 0 0 0 0\n", 4, -EINVAL);
	jobs_fail("llama 1 msrun 0 0 17 0 0\n", 4, -EINVAL);
	jobs_fail("llama 1 msrun 0 0 8 -1 0\n", 4, -EINVAL);
	jobs_fail("llama 1 msrun 0 0 8 4294967295 0\n", 4, -EINVAL);
	jobs_fail("llama 4294967296 msrun 0 0 8 0 0\n", 4, -EINVAL);
	jobs_fail("llama 1 msrun 0 2147483647 8 0 0\n", 4, -EINVAL);
	jobs_fail("llama 1x msrun 0 0 8 0 0\n", 4, -EINVAL);
	/* an attempt that is not a number is not read as 0 */
	jobs_fail("llama 1 msrun 0 0 8 0 0 5 x\n", 4, -EINVAL);
	jobs_fail("llama 1 msrun 0 0 8 0 0 5 4294967296\n", 4, -EINVAL);
	/* kept_from is a number below the generation */
	jobs_fail("llama 3 msrun 0 0 8 0 0 5 0 x\n", 4, -EINVAL);
	assert_non_null(strstr(jobs_fail("llama 3 msrun 0 0 8 0 0 5 0 3\n", 4, -EINVAL),
			       "kept_from below the generation"));
	/* 70 zeros and a 7: the word is longer than a name, not node_rank 0 */
	jobs_fail("llama 1 msrun 0000000000000000000000000000000000000000000000000000000000000000"
		  "0000007 0 8 0 0\n", 4, -EINVAL);
	assert_non_null(strstr(jobs_fail("a 1 msrun 0 0 8 0 0\na 1 msrun 0 0 8 0 0\n", 4,
					 -EINVAL),
			       "job a generation 1 is listed twice"));
	assert_non_null(strstr(jobs_fail("a 1 msrun 0 0 8 0 0\nb 1 msrun 0 0 8 0 0\n", 1,
					 -EFBIG),
			       "more than 1 shares"));
	{
		char text[] = "a 1 msrun 0 0 8 0 0\n";

		text[1] = '\0';
		{
			struct agent_share out[1];
			struct conf_error err = { 0 };
			size_t n = 7;

			assert_int_equal(agent_parse_server_jobs(text, sizeof(text) - 1, "j", out,
								 1, &n, &err),
					 -EINVAL);
			assert_int_equal(n, 7);
		}
	}
}

/* Every prefix and every one-byte change of a listing: refused cleanly or parsed. */
static void test_jobs_listing_mutations(void **state)
{
	static const char text[] = "# job generation launch\nllama 2 msrun 1 8 8 1000 100\n"
				   "eval 1 per-rank 0 0 2 0 0\n";
	static const char bytes[] = { '\0', '\n', ' ', '#', 'a', 'Z', '-', '9', '\xff' };
	char buf[sizeof(text)];
	struct agent_share out[4];
	struct conf_error err;
	size_t n;

	for (size_t len = 0; len <= sizeof(text) - 1; len++) {
		int r = agent_parse_server_jobs(text, len, "j", out, 4, &n, &err);

		assert_true(r == 0 || r == -EINVAL);
	}
	for (size_t i = 0; i < sizeof(text) - 1; i++)
		for (size_t b = 0; b < sizeof(bytes); b++) {
			int r;

			memcpy(buf, text, sizeof(text));
			buf[i] = bytes[b];
			r = agent_parse_server_jobs(buf, sizeof(text) - 1, "j", out, 4, &n, &err);
			assert_true(r == 0 || r == -EINVAL);
			if (r == 0)
				assert_true(n <= 3);
		}
}

/* ---- env files ---- */

static void env_ok(const char *text, size_t len, struct agent_env *env)
{
	struct conf_error err = { 0 };
	char msg[1024];
	int r;

	r = agent_env_parse(text, len, "hosts/n1.env", env, &err);
	if (r != 0)
		fail_msg("expected success, got %d: %s", r,
			 conf_error_format(&err, msg, sizeof(msg)));
}

static const char *env_fail(const char *text, size_t len, int want)
{
	static char msg[1024];
	struct agent_env env = { (char **)0x1, 77 };
	struct conf_error err = { 0 };
	int r;

	r = agent_env_parse(text, len, "hosts/n1.env", &env, &err);
	conf_error_format(&err, msg, sizeof(msg));
	if (r != want)
		fail_msg("expected %d, got %d (%s)", want, r, msg);
	assert_ptr_equal(env.vars, (char **)0x1);
	assert_int_equal(env.count, 77);
	return msg;
}

#define env_failz(text, want) env_fail(text, strlen(text), want)

static void test_env_quoting(void **state)
{
	static const char text[] = "# job llama, generation 2\n"
				   "export ASCEND_JOB_ID='llama'\n"
				   "export ASCEND_RESUME_CHECKPOINT=''\n"
				   "export A='it'\\''s'\n"
				   "export B=''\\'''\\'''\n"
				   "export C='two\nlines' \n"
				   "   \n"
				   "D='no export'\n"
				   "export\tE='tab'\n"
				   "export A='again'\n";
	struct agent_env env = { 0 };

	env_ok(text, strlen(text), &env);
	assert_int_equal(env.count, 7);
	assert_null(env.vars[7]);
	assert_string_equal(env.vars[0], "ASCEND_JOB_ID=llama");
	assert_string_equal(agent_env_get(&env, "ASCEND_RESUME_CHECKPOINT"), "");
	assert_string_equal(agent_env_get(&env, "A"), "again"); /* the last value wins */
	assert_string_equal(env.vars[2], "A=again");		  /* in its first place */
	assert_string_equal(agent_env_get(&env, "B"), "''");
	assert_string_equal(agent_env_get(&env, "C"), "two\nlines");
	assert_string_equal(agent_env_get(&env, "D"), "no export");
	assert_string_equal(agent_env_get(&env, "E"), "tab");
	assert_null(agent_env_get(&env, "ASCEND"));
	assert_null(agent_env_get(&env, "F"));
	agent_env_release(&env);
	assert_null(env.vars);
	assert_int_equal(env.count, 0);
	agent_env_release(&env);

	env_ok("", 0, &env);
	assert_int_equal(env.count, 0);
	agent_env_release(&env);
}

static void test_env_refused(void **state)
{
	assert_non_null(strstr(env_failz("export A=plain\n", -EINVAL),
			       "hosts/n1.env:1:10: the value of A is not single-quoted"));
	assert_non_null(strstr(env_failz("# c\nexport A='open\n", -EINVAL),
			       "hosts/n1.env:2: the value of A has no closing quote"));
	assert_non_null(strstr(env_failz("export 1A='x'\n", -EINVAL),
			       "\"export 1A='x'\" is not an \"export NAME='value'\" line"));
	assert_non_null(strstr(env_failz("unset A\n", -EINVAL), "expected '=' after unset"));
	assert_non_null(strstr(env_failz("export A='x' B='y'\n", -EINVAL),
			       "text after the value of A"));
	env_failz("export A='x'y\n", -EINVAL);
	env_failz("export A=\n", -EINVAL);
	env_failz("export A-B='x'\n", -EINVAL);
	env_failz("export\n", -EINVAL);
	env_failz("export A='x'\\\n", -EINVAL);
	env_fail("export A='x\0y'\n", 15, -EINVAL);
	{
		char name[AGENT_ENV_NAME_MAX + 16];

		memset(name, 'N', AGENT_ENV_NAME_MAX + 1);
		snprintf(name + AGENT_ENV_NAME_MAX + 1, 8, "='x'\n");
		assert_non_null(strstr(env_failz(name, -EINVAL), "longer than 128"));
	}
	{
		size_t cap = (AGENT_ENV_VARS_MAX + 1) * 16, o = 0;
		char *text = malloc(cap);

		assert_non_null(text);
		for (int i = 0; i <= AGENT_ENV_VARS_MAX; i++)
			o += (size_t)snprintf(text + o, cap - o, "V%d='%d'\n", i, i);
		assert_non_null(strstr(env_fail(text, o, -EFBIG), "more than 512 variables"));
		free(text);
	}
}

/* What sched_shell_quote() writes, agent_env_parse() reads back, for awkward values. */
static void test_env_round_trip_with_sched_quoting(void **state)
{
	static const char *const values[] = {
		"", "plain", "it's", "'", "''", "'\\''", "a b\tc", "new\nline", "$HOME `x` \"q\"",
		"/data/ckpt/llama 70b/it's-1_200.ckpt", "\\", "\xe4\xb8\xad\xe6\x96\x87",
	};
	struct agent_env env = { 0 };
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char name[32];
		int n = snprintf(name, sizeof(name), "export V%zu=", i);
		char *grown = realloc(buf, len + (size_t)n + 1);

		assert_non_null(grown);
		buf = grown;
		cap = len + (size_t)n + 1;
		memcpy(buf + len, name, (size_t)n + 1);
		len += (size_t)n;
		assert_int_equal(sched_shell_quote(&buf, &len, &cap, values[i]), 0);
		grown = realloc(buf, len + 2);
		assert_non_null(grown);
		buf = grown;
		buf[len++] = '\n';
		buf[len] = '\0';
		cap = len + 1;
	}
	env_ok(buf, len, &env);
	assert_int_equal(env.count, sizeof(values) / sizeof(values[0]));
	for (size_t i = 0; i < env.count; i++) {
		char name[32];

		snprintf(name, sizeof(name), "V%zu", i);
		assert_string_equal(agent_env_get(&env, name), values[i]);
	}
	agent_env_release(&env);
	free(buf);
}

/* What the daemon renders for a placed job (listing, env files) parses as meant. */
static void test_files_rendered_by_sched(void **state)
{
	struct sched_render_ctx ctx = { .mount_path = "/ascend" };
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *spec = fx_spec("llama", 16);
	struct agent_env env = { 0 };
	struct agent_share shares[4];
	struct sched_job *j;
	char *text = NULL, *listing = NULL;
	size_t len = 0, n;

	spec->command = strdup("exec train_demo --steps 10");
	spec->checkpoint_dir = strdup("/data/it's here");
	assert_non_null(spec->command);
	assert_non_null(spec->checkpoint_dir);
	j = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	assert_int_equal(j->slice_count, 2);

	assert_int_equal(sched_render_server_jobs(c, j->slices[1].server, &listing, &len), 0);
	n = jobs_ok(listing, shares, 4);
	assert_int_equal(n, 1);
	assert_string_equal(shares[0].job, "llama");
	assert_int_equal(shares[0].generation, 1);
	assert_int_equal(shares[0].launch, CONF_LAUNCH_MSRUN);
	assert_int_equal(shares[0].node_rank, 1);
	assert_int_equal(shares[0].first_rank, 8);
	assert_int_equal(shares[0].npu_count, 8);
	assert_int_equal(shares[0].uid, FX_UID);
	assert_int_equal(shares[0].gid, FX_GID);
	free(listing);

	assert_int_equal(sched_render_host_env(c, j, 1, &ctx, &text, &len), 0);
	env_ok(text, len, &env);
	assert_string_equal(agent_env_get(&env, "ASCEND_JOB_ID"), "llama");
	assert_string_equal(agent_env_get(&env, "ASCEND_JOB_GENERATION"), "1");
	assert_string_equal(agent_env_get(&env, "ASCEND_RESUME_CHECKPOINT"), "");
	assert_string_equal(agent_env_get(&env, "MS_NODE_RANK"), "1");
	assert_string_equal(agent_env_get(&env, "RANK_START"), "8");
	assert_string_equal(agent_env_get(&env, "ASCEND_CHECKPOINT_DIR"), "/data/it's here");
	/* dynamic networking (the fixture's default): no rank table for MindSpore */
	assert_null(agent_env_get(&env, "RANK_TABLE_FILE"));
	assert_string_equal(agent_env_get(&env, "ASCEND_JOB_DIR"), "/ascend/jobs/llama");
	{
		char head[64];

		assert_int_equal(agent_env_head_mount(&env, "llama", head, sizeof(head)), 0);
		assert_string_equal(head, "/ascend");
	}
	assert_non_null(strstr(agent_env_get(&env, "MSRUN_ARGS"), "--node_rank=1"));
	agent_env_release(&env);
	free(text);

	assert_int_equal(sched_render_rank_env(c, j, 9, &ctx, &text, &len), 0);
	env_ok(text, len, &env);
	assert_string_equal(agent_env_get(&env, "RANK_ID"), "9");
	assert_string_equal(agent_env_get(&env, "DEVICE_ID"), "1");
	agent_env_release(&env);
	free(text);
	sched_cluster_free(c);
}

static void test_env_merge_over_base(void **state)
{
	static const char text[] = "export PATH='/job/bin'\nexport RANK_ID='3'\n";
	char *base[] = { (char *)"HOME=/root", (char *)"PATH=/usr/bin", (char *)"noequals",
			 (char *)"PATHX=keep", (char *)"RANK_ID=old", NULL };
	struct agent_env env = { 0 };
	char **out = NULL;

	env_ok(text, strlen(text), &env);
	assert_int_equal(agent_env_merge(base, &env, &out), 0);
	assert_string_equal(out[0], "HOME=/root");
	assert_string_equal(out[1], "PATHX=keep");
	assert_string_equal(out[2], "PATH=/job/bin");
	assert_string_equal(out[3], "RANK_ID=3");
	assert_null(out[4]);
	free(out);
	assert_int_equal(agent_env_merge(NULL, &env, &out), 0);
	assert_string_equal(out[0], "PATH=/job/bin");
	assert_null(out[2]);
	free(out);
	agent_env_release(&env);
}

static void test_env_head_mount(void **state)
{
	static const char text[] = "export ASCEND_JOB_ID='llama'\n"
				   "export RANK_TABLE_FILE='/ascend/jobs/llama/ranktable.json'\n";
	static const char other[] = "export RANK_TABLE_FILE='/ascend/jobs/other/ranktable.json'\n";
	static const char none[] = "export RANK_ID='0'\n";
	struct agent_env env = { 0 };
	char head[64] = "untouched", small[4] = "x";

	env_ok(text, strlen(text), &env);
	assert_int_equal(agent_env_head_mount(&env, "llama", head, sizeof(head)), 0);
	assert_string_equal(head, "/ascend");
	assert_int_equal(agent_env_head_mount(&env, "llama", small, sizeof(small)), -ENAMETOOLONG);
	assert_string_equal(small, "x");
	/* another job's rank table, or a name that is only a suffix of the job's */
	assert_int_equal(agent_env_head_mount(&env, "ama", head, sizeof(head)), -ENOENT);
	agent_env_release(&env);
	env_ok(other, strlen(other), &env);
	assert_int_equal(agent_env_head_mount(&env, "llama", head, sizeof(head)), -ENOENT);
	agent_env_release(&env);
	env_ok(none, strlen(none), &env);
	assert_int_equal(agent_env_head_mount(&env, "llama", head, sizeof(head)), -ENOENT);
	assert_string_equal(head, "/ascend");
	agent_env_release(&env);
}

/* Item 5: in dynamic mode the env files have no RANK_TABLE_FILE: ASCEND_JOB_DIR says it. */
static void test_env_head_mount_from_job_dir(void **state)
{
	static const char text[] = "export ASCEND_JOB_DIR='/mnt/head/jobs/llama'\n"
				   "export RANK_TABLE_FILE='/x/jobs/llama/ranktable.json'\n";
	static const char other[] = "export ASCEND_JOB_DIR='/mnt/head/jobs/llama2'\n";
	struct agent_env env = { 0 };
	char head[64] = "untouched";

	(void)state;
	env_ok(text, strlen(text), &env);
	assert_int_equal(agent_env_head_mount(&env, "llama", head, sizeof(head)), 0);
	assert_string_equal(head, "/mnt/head");
	agent_env_release(&env);
	env_ok(other, strlen(other), &env);
	assert_int_equal(agent_env_head_mount(&env, "llama", head, sizeof(head)), -ENOENT);
	assert_string_equal(head, "/mnt/head");
	agent_env_release(&env);
}

/*
 * Item 9: what the agent's own environment may hand a job process. Every variable that
 * places or identifies a job (the runtime's, HCCL's, MindSpore's, msrun's, torch_npu's)
 * is dropped, whatever the env file sets; the CANN toolkit's paths and the rest stay.
 */
static void test_env_clean_drops_placement(void **state)
{
	char *base[] = {
		(char *)"PATH=/usr/bin", (char *)"ASCEND_RT_VISIBLE_DEVICES=7",
		(char *)"ASCEND_VISIBLE_DEVICES=0,1", (char *)"RANK_TABLE_FILE=/old/rt.json",
		(char *)"RANK_ID=5", (char *)"RANK_SIZE=64", (char *)"DEVICE_ID=3",
		(char *)"MS_ROLE=MS_SCHED", (char *)"MS_SCHED_HOST=10.9.9.9",
		(char *)"HCCL_IF_IP=10.9.9.9", (char *)"MINDSPORE_HCCL_CONFIG_PATH=/old",
		(char *)"ASCEND_JOB_ID=other", (char *)"ASCEND_HOME_PATH=/usr/local/Ascend",
		(char *)"ASCEND_TOOLKIT_HOME=/usr/local/Ascend/latest",
		(char *)"ASCEND_OPP_PATH=/usr/local/Ascend/opp", (char *)"LD_LIBRARY_PATH=/lib",
		(char *)"OMPI_COMM_WORLD_RANK=2", (char *)"RANK=1", (char *)"RANKS=keep",
		(char *)"MASTER_ADDR=10.9.9.9", (char *)"SERVER_ID=10.9.9.9",
		(char *)"noequals", (char *)"HOME=/root", NULL,
	};
	static const char *const kept[] = {
		"PATH=/usr/bin", "ASCEND_HOME_PATH=/usr/local/Ascend",
		"ASCEND_TOOLKIT_HOME=/usr/local/Ascend/latest",
		"ASCEND_OPP_PATH=/usr/local/Ascend/opp", "LD_LIBRARY_PATH=/lib", "RANKS=keep",
		"HOME=/root",
	};
	static const char text[] = "export RANK_ID='0'\nexport DEVICE_ID='1'\n";
	struct agent_env env = { 0 };
	char **clean = NULL, **out = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(agent_env_clean(base, &clean), 0);
	while (clean[n])
		n++;
	assert_int_equal(n, sizeof(kept) / sizeof(kept[0]));
	for (size_t i = 0; i < n; i++)
		assert_string_equal(clean[i], kept[i]);
	/* then the env file: only what it sets comes back */
	env_ok(text, strlen(text), &env);
	assert_int_equal(agent_env_merge(clean, &env, &out), 0);
	for (size_t i = 0; out[i]; i++) {
		assert_null(strstr(out[i], "ASCEND_RT_VISIBLE_DEVICES"));
		assert_null(strstr(out[i], "RANK_TABLE_FILE"));
		assert_null(strstr(out[i], "MS_"));
	}
	assert_string_equal(out[n], "RANK_ID=0");
	assert_string_equal(out[n + 1], "DEVICE_ID=1");
	assert_null(out[n + 2]);
	free(out);
	free(clean);
	agent_env_release(&env);
	assert_int_equal(agent_env_clean(NULL, &clean), 0);
	assert_null(clean[0]);
	free(clean);
	assert_true(agent_env_is_placement("ASCEND_RT_VISIBLE_DEVICES"));
	assert_false(agent_env_is_placement("ASCEND_AICPU_PATH=/x"));
}

/*
 * Item 4: a per-rank job in dynamic mode needs MindSpore's scheduler; its environment is
 * a worker's with MS_ROLE MS_SCHED and RANK_ID 0, as msrun starts it; none for a
 * rank-table rank env (no MS_ROLE).
 */
static void test_env_scheduler_from_worker(void **state)
{
	static const char worker[] = "export ASCEND_JOB_ID='dyn'\nexport RANK_ID='8'\n"
				     "export DEVICE_ID='0'\nexport ASCEND_RT_VISIBLE_DEVICES='4,5'\n"
				     "export MS_SCHED_HOST='10.0.1.1'\nexport MS_SCHED_PORT='8118'\n"
				     "export MS_WORKER_NUM='16'\nexport MS_ROLE='MS_WORKER'\n"
				     "export MS_NODE_ID='8'\n";
	static const char table[] = "export RANK_ID='8'\nexport DEVICE_ID='0'\n"
				    "export RANK_TABLE_FILE='/ascend/jobs/x/ranktable.json'\n";
	struct agent_env env = { 0 }, sched = { 0 };

	(void)state;
	env_ok(worker, strlen(worker), &env);
	assert_int_equal(agent_env_scheduler(&env, &sched), 0);
	assert_string_equal(agent_env_get(&sched, "MS_ROLE"), "MS_SCHED");
	assert_string_equal(agent_env_get(&sched, "RANK_ID"), "0");
	assert_null(agent_env_get(&sched, "MS_NODE_ID"));
	assert_null(agent_env_get(&sched, "DEVICE_ID"));
	assert_string_equal(agent_env_get(&sched, "MS_SCHED_HOST"), "10.0.1.1");
	assert_string_equal(agent_env_get(&sched, "MS_SCHED_PORT"), "8118");
	assert_string_equal(agent_env_get(&sched, "MS_WORKER_NUM"), "16");
	assert_string_equal(agent_env_get(&sched, "ASCEND_RT_VISIBLE_DEVICES"), "4,5");
	assert_int_equal(sched.count, 7);
	agent_env_release(&sched);
	agent_env_release(&env);
	env_ok(table, strlen(table), &env);
	sched.count = 99;
	assert_int_equal(agent_env_scheduler(&env, &sched), -ENOENT);
	assert_int_equal(sched.count, 99);
	agent_env_release(&env);
}

static void test_exit_code_of_wait_status(void **state)
{
	assert_int_equal(agent_exit_code(W_EXITCODE(0, 0)), 0);
	assert_int_equal(agent_exit_code(W_EXITCODE(3, 0)), 3);
	assert_int_equal(agent_exit_code(W_EXITCODE(255, 0)), 255);
	assert_int_equal(agent_exit_code(W_EXITCODE(0, 9)), 137);
	assert_int_equal(agent_exit_code(W_EXITCODE(0, 15)), 143);
	assert_int_equal(agent_exit_code(W_EXITCODE(0, 64)), 192);
}

/* ---- per-job cgroups ---- */

static void test_cgroup_job_name_round_trip(void **state)
{
	static const char *const jobs[] = { "llama", "a.g2", "x-1_y.z", "cgroup", "0", "a.g" };
	char name[AGENT_CGROUP_NAME_MAX], job[CONF_NAME_MAX + 1], max[CONF_NAME_MAX + 1];
	unsigned g;

	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		assert_int_equal(agent_cgroup_job_name(jobs[i], 7, name, sizeof(name)), 0);
		assert_int_equal(strncmp(name, "job-", 4), 0);
		assert_int_equal(agent_cgroup_parse_job_name(name, job, &g), 0);
		assert_string_equal(job, jobs[i]);
		assert_int_equal(g, 7);
	}
	assert_int_equal(agent_cgroup_job_name("llama", 2, name, sizeof(name)), 0);
	assert_string_equal(name, "job-llama.g2");
	assert_int_equal(agent_cgroup_job_name("llama", 4294967295u, name, sizeof(name)), 0);
	assert_string_equal(name, "job-llama.g4294967295");
	/* the longest job name fits */
	memset(max, 'a', CONF_NAME_MAX);
	max[CONF_NAME_MAX] = '\0';
	max[CONF_NAME_MAX - 1] = '\0'; /* conf_name_is_valid: shorter than CONF_NAME_MAX */
	assert_int_equal(agent_cgroup_job_name(max, 4294967295u, name, sizeof(name)), 0);
	assert_int_equal(agent_cgroup_parse_job_name(name, job, &g), 0);
	assert_string_equal(job, max);
	/* the node's directory: its name and a hash of the mount path */
	assert_int_equal(agent_cgroup_node_name("a2-node-01", "/ascend", name, sizeof(name)), 0);
	assert_int_equal(strncmp(name, "node-a2-node-01-", 16), 0);
	assert_int_equal(strlen(name), 16 + 8);
	assert_int_equal(agent_cgroup_node_name("a2-node-01", "/ascend", job, sizeof(job)), 0);
	assert_string_equal(job, name); /* the same mount: the same directory */
	assert_int_equal(agent_cgroup_node_name("a2-node-01", "/tmp/m", job, sizeof(job)), 0);
	assert_string_not_equal(job, name);
	assert_int_equal(agent_cgroup_node_name("../x", "/ascend", job, sizeof(job)), -EINVAL);
	/* no path separators or dot names can be made: job names are checked */
	assert_int_equal(agent_cgroup_job_name("../x", 1, name, sizeof(name)), -EINVAL);
	assert_int_equal(agent_cgroup_job_name("a/b", 1, name, sizeof(name)), -EINVAL);
	assert_int_equal(agent_cgroup_job_name("Llama", 1, name, sizeof(name)), -EINVAL);
	assert_int_equal(agent_cgroup_job_name("llama", 0, name, sizeof(name)), -EINVAL);
	assert_int_equal(agent_cgroup_job_name("llama", 2, name, 8), -ENAMETOOLONG);
}

static void test_cgroup_job_name_refused(void **state)
{
	static const char *const bad[] = {
		"agent", "node", "rank-3", "job-", "job-llama", "job-llama.", "job-llama.g",
		"job-llama.g0", "job-llama.g01", "job-llama.g-1", "job-llama.g4294967296",
		"job-llama.gx", "job-.g1", "job-Llama.g1", "job-a/b.g1", "job-..g1",
		"cgroup.procs", "job-llama.g2 ", "xjob-llama.g2",
	};
	char job[CONF_NAME_MAX + 1] = "untouched";
	unsigned g = 99;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (agent_cgroup_parse_job_name(bad[i], job, &g) != -EINVAL)
			fail_msg("%s read as a job cgroup", bad[i]);
		assert_string_equal(job, "untouched");
		assert_int_equal(g, 99);
	}
	assert_int_equal(agent_cgroup_parse_job_name(NULL, job, &g), -EINVAL);
}

/* What a restarted agent does with the cgroups an earlier one left. */
static void test_cgroup_scan_decision(void **state)
{
	struct agent_share shares[2];
	const char *names[] = {
		"job-llama.g2",	/* listed: adopt */
		"job-llama.g1",	/* an older generation of a listed job: stop */
		"job-gone.g5",	/* cancelled while the agent was down: stop */
		"job-bert.g3",	/* listed: adopt */
		"agent",	/* not a job cgroup: leave */
		NULL,
		"job-bert.g33",	/* another generation: stop */
	};
	enum agent_cgroup_verdict v[7];

	memset(shares, 0, sizeof(shares));
	snprintf(shares[0].job, sizeof(shares[0].job), "llama");
	shares[0].generation = 2;
	snprintf(shares[1].job, sizeof(shares[1].job), "bert");
	shares[1].generation = 3;
	agent_cgroup_decide(names, 7, shares, 2, v);
	assert_int_equal(v[0], AGENT_CGROUP_ADOPT);
	assert_int_equal(v[1], AGENT_CGROUP_STOP);
	assert_int_equal(v[2], AGENT_CGROUP_STOP);
	assert_int_equal(v[3], AGENT_CGROUP_ADOPT);
	assert_int_equal(v[4], AGENT_CGROUP_FOREIGN);
	assert_int_equal(v[5], AGENT_CGROUP_FOREIGN);
	assert_int_equal(v[6], AGENT_CGROUP_STOP);
	/* an empty listing (the daemon lists nothing here): every job cgroup stops */
	agent_cgroup_decide(names, 7, NULL, 0, v);
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(v[i], i == 4 || i == 5 ? AGENT_CGROUP_FOREIGN : AGENT_CGROUP_STOP);
}

/*
 * A process-level recovery kept a share (kept_from): a cgroup of its job from kept_from
 * up to the share's generation is that share's run, to watch; older ones stop, and the
 * same generation of another job is not it.
 */
static void test_cgroup_scan_kept_share(void **state)
{
	struct agent_share share;
	const char *names[] = { "job-llama.g3", "job-llama.g4", "job-llama.g2", "job-llama.g5",
				"job-bert.g3" };
	enum agent_cgroup_verdict v[5];

	(void)state;
	memset(&share, 0, sizeof(share));
	snprintf(share.job, sizeof(share.job), "llama");
	share.generation = 5;
	share.kept_from = 3;
	agent_cgroup_decide(names, 5, &share, 1, v);
	assert_int_equal(v[0], AGENT_CGROUP_KEEP);
	assert_int_equal(v[1], AGENT_CGROUP_KEEP);
	assert_int_equal(v[2], AGENT_CGROUP_STOP);
	assert_int_equal(v[3], AGENT_CGROUP_ADOPT);
	assert_int_equal(v[4], AGENT_CGROUP_STOP);
	assert_true(agent_share_keeps(&share, "llama", 4));
	assert_false(agent_share_keeps(&share, "llama", 5));
	assert_false(agent_share_keeps(&share, "bert", 4));
	/* without kept_from nothing is kept */
	share.kept_from = 0;
	assert_false(agent_share_keeps(&share, "llama", 4));
}

static void test_cgroup_kernel_files(void **state)
{
	static const char stat[] = "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n"
				   "nr_periods 0\n";
	static const char events[] = "populated 1\nfrozen 0\n";
	static const char self_hybrid[] = "12:pids:/user.slice\n1:name=systemd:/user.slice\n"
					  "0::/system.slice/ascend-agent.service\n";
	static const char mountinfo[] =
		"24 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
		"33 24 0:28 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
		"34 33 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n"
		"35 33 0:30 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
	static const char escaped[] = "40 1 0:5 / /a\\040b rw - cgroup2 none rw\n";
	char buf[256];
	unsigned long long v = 42;

	assert_int_equal(agent_cgroup_keyed(stat, strlen(stat), "usage_usec", &v), 0);
	assert_int_equal(v, 1234567);
	assert_int_equal(agent_cgroup_keyed(stat, strlen(stat), "system_usec", &v), 0);
	assert_int_equal(v, 234567);
	assert_int_equal(agent_cgroup_keyed(stat, strlen(stat), "usage", &v), -ENOENT);
	assert_int_equal(agent_cgroup_keyed(events, strlen(events), "populated", &v), 0);
	assert_int_equal(v, 1);
	/* not NUL-terminated: the length bounds the read */
	assert_int_equal(agent_cgroup_keyed(events, 11, "populated", &v), 0);
	assert_int_equal(agent_cgroup_keyed(events, 10, "populated", &v), -EINVAL);
	assert_int_equal(agent_cgroup_keyed("max 18446744073709551616\n", 25, "max", &v), -EINVAL);
	assert_int_equal(agent_cgroup_keyed("max 18446744073709551615\n", 25, "max", &v), 0);
	assert_true(v == 18446744073709551615ULL);
	assert_int_equal(agent_cgroup_keyed("max x\n", 6, "max", &v), -EINVAL);

	assert_int_equal(agent_cgroup_self(self_hybrid, strlen(self_hybrid), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/system.slice/ascend-agent.service");
	assert_int_equal(agent_cgroup_self("0::/\n", 5, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/");
	assert_int_equal(agent_cgroup_self("1:name=systemd:/\n", 17, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(agent_cgroup_self(self_hybrid, strlen(self_hybrid), buf, 8),
			 -ENAMETOOLONG);

	assert_int_equal(agent_cgroup2_mount(mountinfo, strlen(mountinfo), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/fs/cgroup/unified");
	assert_int_equal(agent_cgroup2_mount(escaped, strlen(escaped), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/a b");
	assert_int_equal(agent_cgroup2_mount(mountinfo, 120, buf, sizeof(buf)), -ENOENT);
}

#ifdef TEST_CHAOS
static long chaos_run(int (*fn)(void))
{
	for (long n = 0;; n++) {
		long live_before = chaos_live;
		int r;

		chaos_injected = false;
		chaos_countdown = n;
		r = fn();
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

static int chaos_env(void)
{
	static const char text[] = "export A='1'\nexport B='2'\nexport C='x'\\''y'\nexport A='3'\n"
				   "export D='4'\nexport E='5'\n";
	char *base[] = { (char *)"A=0", (char *)"Z=9", NULL };
	struct agent_env env = { 0 };
	struct conf_error err;
	char **out = NULL;
	int r;

	r = agent_env_parse(text, strlen(text), "e", &env, &err);
	if (r < 0)
		return r;
	r = agent_env_merge(base, &env, &out);
	free(out);
	agent_env_release(&env);
	return r;
}

static int chaos_jobs(void)
{
	static const char text[] = "a 1 msrun 0 0 8 0 0\nb 2 per-rank 0 8 8 0 0\n";
	struct agent_share out[4];
	struct conf_error err;
	size_t n;

	return agent_parse_server_jobs(text, strlen(text), "j", out, 4, &n, &err);
}
#endif

static void test_agent_jobs_allocation_failures(void **state)
{
#ifdef TEST_CHAOS
	long sites;

	if (!chaos_hooks_work())
		return;
	sites = chaos_run(chaos_env);
	print_message("env: %ld allocations, each failed once\n", sites);
	assert_true(sites >= 6);
	sites = chaos_run(chaos_jobs);
	print_message("listing: %ld allocations, each failed once\n", sites);
	assert_true(sites >= 1);
#else
	print_message("allocation-failure injection needs glibc without a sanitizer; not run\n");
#endif
}


/* ---- the `running` line (stophold) ---- */

/* The agent lists the generations that still have live processes, each once. */
static void test_agent_report_running(void **state)
{
	static struct conf_health_report rep;
	static struct agent_run_info many[CONF_HEALTH_RUNNING_MAX + 1];
	static char names[CONF_HEALTH_RUNNING_MAX + 1][16];
	const struct agent_run_info runs[] = {
		{ "llama", 2, true },
		{ "llama", 1, true },	/* an older generation still stopping */
		{ "done", 1, false },	/* exited: not listed */
		{ "llama", 2, true },	/* per-rank: one run entry per rank in a caller */
		{ "Bad", 1, true },	/* never from the listing: skipped */
		{ "zero", 0, true },
	};
	char *text = NULL;
	size_t len = 0;

	(void)state;
	memset(&rep, 0, sizeof(rep));
	agent_report_running(&rep, runs, sizeof(runs) / sizeof(runs[0]));
	assert_true(rep.has_running);
	assert_int_equal(rep.running_count, 2);
	assert_string_equal(rep.running[0].job, "llama");
	assert_int_equal(rep.running[0].generation, 2);
	assert_int_equal(rep.running[1].generation, 1);
	rep.has_node = true;
	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_string_equal(text, "node OK\nrunning llama/2 llama/1\n");
	free(text);
	/* nothing alive: "running -", which the daemon reads as every job gone */
	agent_report_running(&rep, runs + 2, 1);
	assert_true(rep.has_running);
	assert_int_equal(rep.running_count, 0);
	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_string_equal(text, "node OK\nrunning -\n");
	free(text);
	agent_report_running(&rep, NULL, 0);
	assert_true(rep.has_running);
	/* more than a line may carry: no line, rather than one that leaves some out */
	for (size_t i = 0; i <= CONF_HEALTH_RUNNING_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "j%zu", i);
		many[i] = (struct agent_run_info){ names[i], 1, true };
	}
	agent_report_running(&rep, many, CONF_HEALTH_RUNNING_MAX);
	assert_true(rep.has_running);
	assert_int_equal(rep.running_count, CONF_HEALTH_RUNNING_MAX);
	agent_report_running(&rep, many, CONF_HEALTH_RUNNING_MAX + 1);
	assert_false(rep.has_running);
	assert_int_equal(conf_health_render(&rep, &text, &len), 0);
	assert_null(strstr(text, "running"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_listing_lines),
		cmocka_unit_test(test_jobs_listing_refused),
		cmocka_unit_test(test_jobs_listing_mutations),
		cmocka_unit_test(test_env_quoting),
		cmocka_unit_test(test_env_refused),
		cmocka_unit_test(test_env_round_trip_with_sched_quoting),
		cmocka_unit_test(test_files_rendered_by_sched),
		cmocka_unit_test(test_env_merge_over_base),
		cmocka_unit_test(test_env_head_mount),
		cmocka_unit_test(test_env_head_mount_from_job_dir),
		cmocka_unit_test(test_env_clean_drops_placement),
		cmocka_unit_test(test_env_scheduler_from_worker),
		cmocka_unit_test(test_exit_code_of_wait_status),
		cmocka_unit_test(test_cgroup_job_name_round_trip),
		cmocka_unit_test(test_cgroup_job_name_refused),
		cmocka_unit_test(test_cgroup_scan_decision),
		cmocka_unit_test(test_cgroup_scan_kept_share),
		cmocka_unit_test(test_cgroup_kernel_files),
		cmocka_unit_test(test_agent_jobs_allocation_failures),
		cmocka_unit_test(test_agent_report_running),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
