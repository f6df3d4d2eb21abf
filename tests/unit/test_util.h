/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka unit tests. All abort the test on failure. */
#ifndef ASCENDFS_TEST_UTIL_H
#define ASCENDFS_TEST_UTIL_H

#include <stddef.h>

/*
 * test_path() - @rel (e.g. "examples/ascend_cluster.yaml") resolved against the source
 * tree ($ASCENDFS_SRCDIR, set by meson). Returns a new string (free()).
 */
char *test_path(const char *rel);

/* test_read_file() - whole file at source-relative @rel; new buffer, NUL-terminated. */
char *test_read_file(const char *rel, size_t *ret_len);

/* test_write_tmp() - write @len bytes of @data to a new temp file; returns its new path. */
char *test_write_tmp(const char *data, size_t len, const char *suffix);

#endif
