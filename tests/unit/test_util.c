/* SPDX-License-Identifier: MIT */
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

#include "test_util.h"

char *test_path(const char *rel)
{
	const char *src = getenv("ASCENDFS_SRCDIR");
	char *p;

	if (!src)
		src = ".";
	if (asprintf(&p, "%s/%s", src, rel) < 0)
		fail_msg("out of memory");
	return p;
}

char *test_read_file(const char *rel, size_t *ret_len)
{
	char *path = test_path(rel);
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		fail_msg("cannot open %s", path);
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	free(path);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

char *test_write_tmp(const char *data, size_t len, const char *suffix)
{
	char *path;
	int fd;

	if (asprintf(&path, "/tmp/ascendfs-test-XXXXXX%s", suffix ? suffix : "") < 0)
		fail_msg("out of memory");
	fd = mkstemps(path, suffix ? (int)strlen(suffix) : 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

char *test_capture_stderr(void (*fn)(void *arg), void *arg, bool journal)
{
	char path[] = "/tmp/ascendfs-test-stderr.XXXXXX", env[64], *out;
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
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	len = lseek(fd, 0, SEEK_END);
	assert_true(len >= 0);
	out = calloc(1, (size_t)len + 1);
	assert_non_null(out);
	assert_int_equal(pread(fd, out, (size_t)len, 0), len);
	close(fd);
	return out;
}
