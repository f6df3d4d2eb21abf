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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

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

/* Everything fs_log() writes to stderr while @fn runs, NUL-terminated (free()). */
static char *capture_stderr(void (*fn)(void))
{
	char path[] = "/tmp/test_fs_log.XXXXXX", *buf;
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	off_t len;

	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	fn();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	len = lseek(fd, 0, SEEK_END);
	assert_true(len >= 0);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
	close(fd);
	return buf;
}

static void log_hostile(void)
{
	char big[10000];

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
	unsetenv("JOURNAL_STREAM");
	out = capture_stderr(log_hostile);
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
static void test_fs_log_journal_priority_not_forged(void **state)
{
	char *out, *line, *save = NULL, env[64];
	struct stat st;
	int lines = 0;
	char path[] = "/tmp/test_fs_log_j.XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	off_t len;

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	fs_log(NULL, 2, "job x submitted: %s", "ok\n<3>error: forged\n<0>panic");
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	len = lseek(fd, 0, SEEK_END);
	out = calloc(1, (size_t)len + 1);
	assert_non_null(out);
	assert_int_equal(pread(fd, out, (size_t)len, 0), len);
	close(fd);
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
