/* SPDX-License-Identifier: MIT */
/*
 * The daemon's log (fs_log(), fs_tree.c) and the escapes of user bytes in it:
 * conf_log_escape() (every message, structurally) and fs_text_escape() (user bytes
 * inside a message). One message is one line, whatever it quotes: nobody can write a
 * forged record (issue 15 item 7: "...job llama70b-pretrain removed by uid 0",
 * "<3>error: ...").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "test_util.h"

static void test_conf_log_escape_controls(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{ "plain text, \"quoted\" and a \\ stay", 33, "plain text, \"quoted\" and a \\ stay" },
		{ "a\nb", 3, "a\\x0ab" },
		{ "x\n<3>error: forged", 18, "x\\x0a<3>error: forged" },
		{ "\r\t\x1b[31m\x7f", 8, "\\x0d\\x09\\x1b[31m\\x7f" },
		{ "nul\0byte", 8, "nul\\x00byte" },
		{ "caf\xc3\xa9", 5, "caf\xc3\xa9" }, /* UTF-8 stays readable */
		{ "", 0, "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[128];
		size_t n = conf_log_escape(cases[i].in, cases[i].len, NULL);

		assert_int_equal(n, strlen(cases[i].out));
		memset(out, 'Z', sizeof(out));
		assert_int_equal(conf_log_escape(cases[i].in, cases[i].len, out), n);
		assert_string_equal(out, cases[i].out);
		assert_true(n <= 4 * cases[i].len);
	}
}

static void test_fs_text_escape_bytes(void **state)
{
	char out[64];

	(void)state;
	assert_string_equal(fs_text_escape("/jobs/a\n<3>x.yaml", out, sizeof(out)),
			    "/jobs/a\\x0a<3>x.yaml");
	assert_string_equal(fs_text_escape("q\"b\\s", out, sizeof(out)), "q\\\"b\\\\s");
	assert_string_equal(fs_text_escape("\x1b\xc3\xa9", out, sizeof(out)), "\\x1b\\xc3\\xa9");
	/* cut at a whole escape, with "..." */
	assert_string_equal(fs_text_escape("\n\n\n\n", out, 12), "\\x0a\\x0a...");
	assert_string_equal(fs_text_escape("abcdefgh", out, 8), "abcd...");
	assert_string_equal(fs_text_escape("abc", out, 4), "abc");
	assert_string_equal(fs_text_escape("", out, 1), "");
}

static void log_hostile(void *arg)
{
	char big[10000];

	(void)arg;
	fs_log(NULL, 2, "job %s rejected: %s", "x",
	       "bad\njob llama70b-pretrain removed by uid 0\n<3>error: forged");
	fs_log(NULL, 1, "ctl \"%s\" refused", "a\rb\x1b[2Kc");
	/* longer than the line buffer: formatted again, and escaped all the same */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (size_t i = 100; i < sizeof(big) - 1; i += 1000)
		big[i] = '\n';
	fs_log(NULL, 0, "%s", big);
}

/* Each record is one line with the daemon's own head; the bytes are all still there. */
static void test_fs_log_one_line_per_record(void **state)
{
	char *out, *line, *save = NULL;
	int lines = 0;

	(void)state;
	out = test_capture_stderr(log_hostile, NULL, false);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lines++;
		if (!strstr(line, " ascendfs "))
			fail_msg("line %d is not a record of its own: \"%.80s\"", lines, line);
		assert_null(strchr(line, '\r'));
		assert_null(strchr(line, '\x1b'));
		if (lines == 1)
			assert_non_null(strstr(line, "rejected: bad\\x0ajob llama70b-pretrain removed "
						     "by uid 0\\x0a<3>error: forged"));
		if (lines == 2)
			assert_non_null(strstr(line, "ctl \"a\\x0db\\x1b[2Kc\" refused"));
		if (lines == 3)
			assert_int_equal(strlen(strstr(line, "error: ") + 7), 9999 + 10 * 3);
	}
	assert_int_equal(lines, 3);
	free(out);
}

/* With stderr the journal, no message can start a record of its own priority. */
static void log_forged(void *arg)
{
	(void)arg;
	fs_log(NULL, 2, "job x submitted: %s", "ok\n<3>error: forged\n<0>panic");
}

static void test_fs_log_journal_priority_not_forged(void **state)
{
	char *out, *line, *save = NULL;
	int lines = 0;

	(void)state;
	out = test_capture_stderr(log_forged, NULL, true);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lines++;
		assert_true(strncmp(line, "<6>job x submitted: ok\\x0a<3>error: forged\\x0a<0>panic",
				    strlen(line)) == 0);
	}
	assert_int_equal(lines, 1);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf_log_escape_controls),
		cmocka_unit_test(test_fs_text_escape_bytes),
		cmocka_unit_test(test_fs_log_one_line_per_record),
		cmocka_unit_test(test_fs_log_journal_priority_not_forged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
