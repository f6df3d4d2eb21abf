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
#include <sys/stat.h>
#include <unistd.h>

#include "agent_internal.h"

/* What agent_log() writes for @msg (as "%s"), with stderr the journal when @journal. */
static char *log_once(const char *msg, bool journal)
{
	char path[] = "/tmp/test_agent_log.XXXXXX", env[64], *out;
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	struct stat st;
	off_t len;

	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	if (journal)
		setenv("JOURNAL_STREAM", env, 1);
	else
		unsetenv("JOURNAL_STREAM");
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	agent_log(AGENT_LOG_INFO, "job x generation 1: started pid 7: sh -c %s", msg);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	len = lseek(fd, 0, SEEK_END);
	out = calloc(1, (size_t)len + 1);
	assert_non_null(out);
	assert_int_equal(pread(fd, out, (size_t)len, 0), len);
	close(fd);
	return out;
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
