/* SPDX-License-Identifier: MIT */
/*
 * agent_ship.c: what an agent sends of a process's output as lines of jobs/<job>/log,
 * and where msrun is told to write its workers' logs (MSRUN_ARGS' --log_dir).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "agent_internal.h"

struct out {
	char *buf;
	size_t len, cap;
};

static ssize_t fmt(struct out *o, const char *data, size_t len, bool final)
{
	return agent_ship_format(data, len, 3, "rank-5", "a2-node-02", final, &o->buf, &o->len,
				 &o->cap);
}

static void test_ship_whole_lines_prefixed(void **state)
{
	struct out o = { 0 };
	const char in[] = "step 1\n\nstep 2\npartial";

	(void)state;
	/* the partial last line waits for its newline: not consumed */
	assert_int_equal(fmt(&o, in, strlen(in), false), strlen("step 1\n\nstep 2\n"));
	assert_int_equal(o.len, strlen("3 rank-5 a2-node-02 step 1\n3 rank-5 a2-node-02 \n"
				       "3 rank-5 a2-node-02 step 2\n"));
	assert_memory_equal(o.buf, "3 rank-5 a2-node-02 step 1\n3 rank-5 a2-node-02 \n"
				   "3 rank-5 a2-node-02 step 2\n", o.len);
	free(o.buf);
}

static void test_ship_final_sends_partial_line(void **state)
{
	struct out o = { 0 };

	(void)state;
	assert_int_equal(fmt(&o, "done\nno newline", 15, true), 15);
	assert_memory_equal(o.buf, "3 rank-5 a2-node-02 done\n3 rank-5 a2-node-02 no newline\n",
			    o.len);
	free(o.buf);
}

static void test_ship_nothing_new(void **state)
{
	struct out o = { 0 };

	(void)state;
	assert_int_equal(fmt(&o, "", 0, true), 0);
	assert_int_equal(fmt(&o, "half", 4, false), 0);
	assert_int_equal(o.len, 0);
	free(o.buf);
}

/* A line longer than AGENT_SHIP_LINE_MAX goes in pieces, without waiting for its end. */
static void test_ship_long_line_cut(void **state)
{
	struct out o = { 0 };
	size_t n = AGENT_SHIP_LINE_MAX * 2 + 10;
	char *in = malloc(n + 1);
	const char *p;
	size_t lines = 0;

	(void)state;
	memset(in, 'x', n);
	in[n] = '\0';
	/* no newline: two whole pieces go, the last 10 bytes wait */
	assert_int_equal(fmt(&o, in, n, false), AGENT_SHIP_LINE_MAX * 2);
	for (p = o.buf; p < o.buf + o.len; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 2);
	assert_int_equal(o.len, 2 * (strlen("3 rank-5 a2-node-02 ") + AGENT_SHIP_LINE_MAX + 1));
	/* with its newline, exactly AGENT_SHIP_LINE_MAX bytes make one line, the newline
	 * consumed with it */
	o.len = 0;
	in[AGENT_SHIP_LINE_MAX] = '\n';
	assert_int_equal(fmt(&o, in, AGENT_SHIP_LINE_MAX + 1, false), AGENT_SHIP_LINE_MAX + 1);
	assert_int_equal(o.len, strlen("3 rank-5 a2-node-02 ") + AGENT_SHIP_LINE_MAX + 1);
	free(in);
	free(o.buf);
}

static void test_ship_head_too_long(void **state)
{
	struct out o = { 0 };
	char node[AGENT_SHIP_HEAD_MAX + 1];

	(void)state;
	memset(node, 'n', sizeof(node) - 1);
	node[sizeof(node) - 1] = '\0';
	assert_int_equal(agent_ship_format("a\n", 2, 1, "node", node, false, &o.buf, &o.len,
					   &o.cap),
			 -EINVAL);
	assert_int_equal(o.len, 0);
	free(o.buf);
}

/* The daemon's MSRUN_ARGS (sched_render_host_env()) for node rank 1 of 2 x 8 NPUs */
#define ARGS "--worker_num=16 --local_worker_num=8 --master_addr=10.0.0.1 " \
	     "--master_port=8118 --node_rank=1 --log_dir=msrun_log_llama_g2 --join=True"

static void test_msrun_args_log_dir_replaced(void **state)
{
	unsigned node_rank = 99, workers = 99;
	char *out = NULL;

	(void)state;
	assert_int_equal(agent_msrun_args(ARGS, "/var/log/ascend-agent/llama/g2/msrun", &out,
					  &node_rank, &workers), 0);
	assert_string_equal(out, "--worker_num=16 --local_worker_num=8 --master_addr=10.0.0.1 "
			    "--master_port=8118 --node_rank=1 "
			    "--log_dir=/var/log/ascend-agent/llama/g2/msrun --join=True");
	assert_int_equal(node_rank, 1);
	assert_int_equal(workers, 8);
	free(out);
	/* last, and with a rank table after it */
	assert_int_equal(agent_msrun_args("--node_rank=0 --local_worker_num=1 --log_dir=x", "/d",
					  &out, &node_rank, &workers), 0);
	assert_string_equal(out, "--node_rank=0 --local_worker_num=1 --log_dir=/d");
	assert_int_equal(node_rank, 0);
	free(out);
	assert_int_equal(agent_msrun_args("--log_dir=a --node_rank=0 --local_worker_num=2 "
					  "--rank_table_file=/ascend/jobs/j/ranktable.json", "/d",
					  &out, &node_rank, &workers), 0);
	assert_string_equal(out, "--log_dir=/d --node_rank=0 --local_worker_num=2 "
			    "--rank_table_file=/ascend/jobs/j/ranktable.json");
	free(out);
}

static void test_msrun_args_refused(void **state)
{
	static const char *const dirs[] = { "", "relative/msrun", "/a b", "/a$HOME", "/a*", "/a;b", "/a\nb",
					     "/a'b", "/a\"b", "/a`b`", "/a\tb" };
	unsigned node_rank = 7, workers = 7;
	char *out = NULL;

	(void)state;
	/* a --log_dir not absolute, or that the shell would split or expand in `msrun
	 * $MSRUN_ARGS` */
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		assert_int_equal(agent_msrun_args(ARGS, dirs[i], &out, &node_rank, &workers),
				 -EINVAL);
	assert_int_equal(agent_msrun_args("--node_rank=1 --log_dir=x", "/d", &out, &node_rank,
					  &workers), -ENOENT);
	assert_int_equal(agent_msrun_args("--node_rank=1 --local_worker_num=8", "/d", &out,
					  &node_rank, &workers), -ENOENT);
	/* a flag's name must be the whole word's start: --xnode_rank is not it */
	assert_int_equal(agent_msrun_args("--xnode_rank=1 --local_worker_num=8 --log_dir=x", "/d",
					  &out, &node_rank, &workers), -ENOENT);
	assert_int_equal(agent_msrun_args("--node_rank=-1 --local_worker_num=8 --log_dir=x", "/d",
					  &out, &node_rank, &workers), -EINVAL);
	assert_int_equal(agent_msrun_args("--node_rank=1 --local_worker_num=0 --log_dir=x", "/d",
					  &out, &node_rank, &workers), -EINVAL);
	assert_int_equal(agent_msrun_args("--node_rank=1 --local_worker_num=17 --log_dir=x", "/d",
					  &out, &node_rank, &workers), -EINVAL);
	assert_int_equal(agent_msrun_args("--node_rank=999999999 --local_worker_num=16 "
					  "--log_dir=x", "/d", &out, &node_rank, &workers), -EINVAL);
	/* nothing given back */
	assert_null(out);
	assert_int_equal(node_rank, 7);
	assert_int_equal(workers, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ship_whole_lines_prefixed),
		cmocka_unit_test(test_ship_final_sends_partial_line),
		cmocka_unit_test(test_ship_nothing_new),
		cmocka_unit_test(test_ship_long_line_cut),
		cmocka_unit_test(test_ship_head_too_long),
		cmocka_unit_test(test_msrun_args_log_dir_replaced),
		cmocka_unit_test(test_msrun_args_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
