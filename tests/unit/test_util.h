/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka unit tests. All abort the test on failure. */
#ifndef ASCENDFS_TEST_UTIL_H
#define ASCENDFS_TEST_UTIL_H

#include <stdbool.h>
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

/*
 * test_capture_stderr() - run @fn(@arg) with stderr sent to a new temp file, and return
 * what it wrote (new NUL-terminated buffer). With @journal, JOURNAL_STREAM names that file
 * while @fn runs, so code that logs to the journal when stderr is the journal does so
 * (sd_journal's stream protocol: "<N>" priority prefixes); without, it is unset.
 */
char *test_capture_stderr(void (*fn)(void *arg), void *arg, bool journal);

#endif
