/* SPDX-License-Identifier: MIT */
/* agent_ship.c: what an agent sends of a process's output as lines of jobs/<job>/log. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ship_whole_lines_prefixed),
		cmocka_unit_test(test_ship_final_sends_partial_line),
		cmocka_unit_test(test_ship_nothing_new),
		cmocka_unit_test(test_ship_long_line_cut),
		cmocka_unit_test(test_ship_head_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
