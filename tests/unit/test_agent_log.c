/* SPDX-License-Identifier: MIT */
/*
 * agent_log() (agent_io.c): one message is one line, whatever it quotes (a job's command
 * or env from the spec, a path): nobody can forge a record in the agent's log or the
 * journal (issue 15 item 7).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "test_util.h"

static void log_msg(void *msg)
{
	agent_log(AGENT_LOG_INFO, "job x generation 1: started pid 7: sh -c %s", (const char *)msg);
}

/* What agent_log() writes for @msg (as "%s"), with stderr the journal when @journal. */
static char *log_once(const char *msg, bool journal)
{
	return test_capture_stderr(log_msg, (void *)msg, journal);
}

static void test_agent_log_one_line_per_message(void **state)
{
	static const char forged[] = "true\n<3>error: FORGED\njob llama70b-pretrain removed\r\x1b[2K";
	char *out;

	(void)state;
	agent_log_set_node("n1");
	out = log_once(forged, true);
	assert_string_equal(out, "<6>job x generation 1: started pid 7: sh -c true\\x0a<3>error: "
				 "FORGED\\x0ajob llama70b-pretrain removed\\x0d\\x1b[2K\n");
	free(out);
	out = log_once(forged, false);
	assert_non_null(strstr(out, " ascend-agent[n1]: job x generation 1: started pid 7: sh -c "
				    "true\\x0a<3>error: FORGED\\x0a"));
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	free(out);
	/* a message that fills the buffer with escapes is still one line */
	{
		char big[3000];

		memset(big, '\n', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		out = log_once(big, true);
		assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
		assert_non_null(strstr(out, "\\x0a\\x0a"));
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_log_one_line_per_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
