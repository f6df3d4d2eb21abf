/* SPDX-License-Identifier: MIT */
/*
 * Data-driven cases: every file under tests/data/valid/{spec,cluster,health}/ must parse
 * (and its rendering must parse again to the same text); every file under
 * tests/data/invalid/{spec,cluster,health}/ must fail with exactly the message in its
 * sibling `<case>.err`. Spec cases are parsed with the file's stem as the default job
 * name, the way the filesystem does for /ascend/jobs/<name>.yaml. Health reports
 * (.txt line format, .json) are parsed for a server of HEALTH_CASE_NPUS NPUs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascend_sched.h" /* SCHED_REASON_MAX: what jobs/<id>/error keeps */
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "test_util.h"

enum doc_kind { DOC_SPEC, DOC_CLUSTER, DOC_HEALTH };

/* Health cases are written for an 8-NPU server (Atlas 800, Atlas 800T A2). */
#define HEALTH_CASE_NPUS 8

static bool is_case_file(const char *name, enum doc_kind kind)
{
	const char *dot = strrchr(name, '.');

	if (name[0] == '.' || !dot)
		return false;
	if (kind == DOC_HEALTH)
		return strcmp(dot, ".txt") == 0 || strcmp(dot, ".json") == 0;
	return strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 || strcmp(dot, ".json") == 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entry names of @rel (source-relative); *ret_count gets the count. */
static char **list_dir(const char *rel, size_t *ret_count)
{
	char *path = test_path(rel);
	DIR *dir = opendir(path);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;

	if (!dir)
		fail_msg("cannot open %s", path);
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		assert_non_null(names);
		names[n] = strdup(de->d_name);
		assert_non_null(names[n]);
		n++;
	}
	closedir(dir);
	free(path);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	*ret_count = n;
	return names;
}

static void free_list(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static char *stem_of(const char *name)
{
	char *stem = strdup(name), *dot;

	assert_non_null(stem);
	dot = strrchr(stem, '.');
	if (dot)
		*dot = '\0';
	return stem;
}

/* Parse and, on success, render; returns the parse result. *ret_text gets the rendering. */
static int parse_doc(enum doc_kind kind, const char *buf, size_t len, const char *file,
		     const char *stem, struct conf_error *err, char **ret_text)
{
	size_t tlen;
	int r;

	*ret_text = NULL;
	if (kind == DOC_SPEC) {
		struct conf_job_spec *s = NULL;

		r = conf_job_spec_parse(buf, len, file, stem, &s, err);
		if (r == 0) {
			assert_int_equal(conf_job_spec_render_yaml(s, ret_text, &tlen), 0);
			conf_job_spec_free(s);
		}
	} else if (kind == DOC_CLUSTER) {
		struct conf_cluster *c = NULL;

		r = conf_cluster_parse(buf, len, file, &c, err);
		if (r == 0) {
			assert_int_equal(conf_cluster_render_yaml(c, ret_text, &tlen), 0);
			conf_cluster_free(c);
		}
	} else {
		struct conf_health_report rep;

		r = conf_health_parse(buf, len, file, HEALTH_CASE_NPUS, &rep, err);
		if (r == 0)
			assert_int_equal(conf_health_render(&rep, ret_text, &tlen), 0);
	}
	return r;
}

/*
 * A health report that conf_health_parse() accepts passes conf_health_check_start() at
 * every length it can have while it is being written. Returns the failures.
 */
static size_t check_start_valid(const char *name, const char *buf, size_t len)
{
	struct conf_error err = { 0 };
	char msg[1024];

	for (size_t n = 0; n <= len; n++) {
		if (conf_health_check_start(buf, n, name, HEALTH_CASE_NPUS, &err) != 0) {
			print_error("%s: its first %zu bytes are refused while written: %s\n",
				    name, n, conf_error_format(&err, msg, sizeof(msg)));
			return 1;
		}
	}
	return 0;
}

/*
 * A refused line-format report, its last line finished, is refused by
 * conf_health_check_start() with conf_health_parse()'s message, unless what is wrong is
 * that it is empty: its lines could still be followed by a report. JSON passes (it is
 * only checked whole). Returns the failures.
 */
static size_t check_start_invalid(const char *name, const char *buf, size_t len, const char *want)
{
	struct conf_error err = { 0 };
	char got[1024], *text = malloc(len + 1);
	bool json = strcmp(name + strlen(name) - 5, ".json") == 0;
	bool later = json || strstr(want, "the report is empty") != NULL;
	size_t failures = 0;
	int r;

	assert_non_null(text);
	memcpy(text, buf, len);
	text[len] = '\n';
	r = conf_health_check_start(text, len + 1, name, HEALTH_CASE_NPUS, &err);
	conf_error_format(&err, got, sizeof(got));
	if (later && r != 0) {
		print_error("%s: refused while written, expected only at the end: %s\n", name,
			    got);
		failures++;
	} else if (!later && (r != -EINVAL || strcmp(got, want) != 0)) {
		print_error("%s: while written, expected -EINVAL with\n  %s\ngot %d: %s\n", name,
			    want, r, r ? got : "passed");
		failures++;
	}
	free(text);
	return failures;
}

/* Returns the number of failed cases; prints each failure. */
static size_t check_valid(enum doc_kind kind, const char *rel, const char *name)
{
	struct conf_error err = { 0 };
	char file_rel[1024], *buf, *text = NULL, *text2 = NULL, *stem = stem_of(name), msg[1024];
	size_t len, failures = 0;
	int r;

	snprintf(file_rel, sizeof(file_rel), "%s/%s", rel, name);
	buf = test_read_file(file_rel, &len);
	r = parse_doc(kind, buf, len, name, stem, &err, &text);
	if (r != 0) {
		print_error("%s/%s: expected success, got %d: %s\n", rel, name, r,
			    conf_error_format(&err, msg, sizeof(msg)));
		failures++;
		goto out;
	}
	if (kind == DOC_HEALTH)
		failures += check_start_valid(name, buf, len);
	/* The normalized text is itself a valid document and renders to itself. */
	r = parse_doc(kind, text, strlen(text), "rendered.yaml", stem, &err, &text2);
	if (r != 0 || strcmp(text, text2) != 0) {
		print_error("%s/%s: rendering does not round-trip (%d: %s):\n%s\n", rel, name, r,
			    r ? conf_error_format(&err, msg, sizeof(msg)) : "", text);
		failures++;
	}
out:
	free(text);
	free(text2);
	free(buf);
	free(stem);
	return failures;
}

/* Room a spec error's "<file>:<line>:<column>: " takes in a job's error, at most. */
#define FILE_PREFIX_MAX 96

static size_t check_invalid(enum doc_kind kind, const char *rel, const char *name)
{
	struct conf_error err = { 0 };
	char file_rel[1024], err_rel[1024], *buf, *want, *text = NULL, *stem = stem_of(name);
	size_t len, wlen, failures = 0;
	char got[1024];
	int r;

	snprintf(file_rel, sizeof(file_rel), "%s/%s", rel, name);
	snprintf(err_rel, sizeof(err_rel), "%s/%s.err", rel, stem);
	buf = test_read_file(file_rel, &len);
	want = test_read_file(err_rel, &wlen);
	while (wlen && (want[wlen - 1] == '\n' || want[wlen - 1] == '\r'))
		want[--wlen] = '\0';
	r = parse_doc(kind, buf, len, name, stem, &err, &text);
	conf_error_format(&err, got, sizeof(got));
	if (r != -EINVAL) {
		print_error("%s/%s: expected -EINVAL, got %d (%s)\n", rel, name, r,
			    r ? got : "accepted");
		failures++;
	} else if (strcmp(got, want) != 0) {
		print_error("%s/%s: wrong message\n  expected: %s\n  got:      %s\n", rel, name,
			    want, got);
		failures++;
	} else if (kind == DOC_HEALTH) {
		failures += check_start_invalid(name, buf, len, want);
	}
	if (kind == DOC_SPEC && strlen(err.msg) + FILE_PREFIX_MAX >= SCHED_REASON_MAX) {
		/* a rejected spec's sentence is its job's error: it must not be cut */
		print_error("%s/%s: a %zu-byte message does not fit jobs/<id>/error (%d bytes "
			    "with the file's name and position)\n", rel, name, strlen(err.msg),
			    SCHED_REASON_MAX);
		failures++;
	}
	free(text);
	free(want);
	free(buf);
	free(stem);
	return failures;
}

/* Checks every case of @rel; true when it holds at least one case and none failed. */
static bool run_dir(const char *rel, enum doc_kind kind, bool valid)
{
	size_t n, i, cases = 0, failures = 0;
	char **names = list_dir(rel, &n);

	for (i = 0; i < n; i++) {
		const char *name = names[i];
		size_t nlen = strlen(name);

		if (nlen > 4 && strcmp(name + nlen - 4, ".err") == 0) {
			/* Every .err belongs to a case, and only invalid cases have one. */
			bool found = false;
			size_t j;

			for (j = 0; j < n && !found; j++)
				found = is_case_file(names[j], kind) &&
					strncmp(names[j], name, nlen - 3) == 0 &&
					strchr(names[j] + nlen - 3, '.') == NULL;
			if (valid || !found) {
				print_error("%s/%s: .err file without an invalid case\n", rel,
					    name);
				failures++;
			}
			continue;
		}
		if (!is_case_file(name, kind)) {
			print_error("%s/%s: not a case (%s) nor a .err file\n", rel, name,
				    kind == DOC_HEALTH ? ".txt, .json" : ".yaml, .yml, .json");
			failures++;
			continue;
		}
		cases++;
		failures += valid ? check_valid(kind, rel, name) : check_invalid(kind, rel, name);
	}
	free_list(names, n);
	if (cases == 0)
		print_error("%s holds no cases\n", rel);
	else
		print_message("%s: %zu cases, %zu failed\n", rel, cases, failures);
	return cases > 0 && failures == 0;
}

static void test_cases_valid_spec(void **state)
{
	assert_true(run_dir("tests/data/valid/spec", DOC_SPEC, true));
}

static void test_cases_invalid_spec(void **state)
{
	assert_true(run_dir("tests/data/invalid/spec", DOC_SPEC, false));
}

static void test_cases_valid_cluster(void **state)
{
	assert_true(run_dir("tests/data/valid/cluster", DOC_CLUSTER, true));
}

static void test_cases_invalid_cluster(void **state)
{
	assert_true(run_dir("tests/data/invalid/cluster", DOC_CLUSTER, false));
}

static void test_cases_valid_health(void **state)
{
	assert_true(run_dir("tests/data/valid/health", DOC_HEALTH, true));
}

static void test_cases_invalid_health(void **state)
{
	assert_true(run_dir("tests/data/invalid/health", DOC_HEALTH, false));
}

/* 1 MiB of noise written to nodes/<node>/health is refused for its size, unread. */
static void test_cases_health_one_mib_noise(void **state)
{
	size_t len = 1024 * 1024, i;
	char *noise = malloc(len), msg[1024];
	struct conf_health_report rep;
	struct conf_error err = { 0 };
	uint32_t x = 2463534242u;

	assert_non_null(noise);
	for (i = 0; i < len; i++) {
		x ^= x << 13; /* xorshift32: every byte value, NULs included */
		x ^= x >> 17;
		x ^= x << 5;
		noise[i] = (char)(x & 0xff);
	}
	memset(&rep, 0x5a, sizeof(rep));
	assert_int_equal(conf_health_parse(noise, len, "a2-node-01/health", 8, &rep, &err),
			 -EFBIG);
	assert_int_equal(((unsigned char *)&rep)[0], 0x5a); /* untouched on failure */
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "a2-node-01/health: the health report is 1048576 bytes, more than the "
			    "limit of 65536 bytes; make it smaller");
	/* The same noise within the size limit is refused as binary, not crashed on. */
	assert_int_equal(conf_health_parse(noise, CONF_HEALTH_MAX_BYTES, "a2-node-01/health", 8,
					   &rep, &err),
			 -EINVAL);
	free(noise);
}

/* The 1 MiB spec is generated here rather than kept in the repository. */
static void test_cases_spec_one_mib(void **state)
{
	size_t len = 1024 * 1024, head;
	char *big = malloc(len), msg[1024];
	struct conf_job_spec *s = NULL;
	struct conf_error err = { 0 };

	assert_non_null(big);
	head = (size_t)snprintf(big, len, "npus: 8\n");
	memset(big + head, '#', len - head);
	assert_int_equal(conf_job_spec_parse(big, len, "huge.yaml", "huge", &s, &err), -EFBIG);
	assert_null(s);
	assert_string_equal(conf_error_format(&err, msg, sizeof(msg)),
			    "huge.yaml: the spec is 1048576 bytes, more than the limit of 65536 "
			    "bytes; make it smaller");
	free(big);
}

/* An empty case directory must fail, or a lost directory would pass silently. */
static void test_cases_empty_dir_fails(void **state)
{
	char tmpl[] = "/tmp/ascendfs-cases-XXXXXX", rel[512];
	char *dir = mkdtemp(tmpl);
	size_t o = 0;
	int i;

	assert_non_null(dir);
	/* Source-relative path to the temp dir: enough ".." to reach "/" from any tree. */
	for (i = 0; i < 40; i++)
		o += (size_t)snprintf(rel + o, sizeof(rel) - o, "../");
	snprintf(rel + o, sizeof(rel) - o, "%s", dir + 1);
	assert_false(run_dir(rel, DOC_SPEC, false));
	assert_false(run_dir(rel, DOC_CLUSTER, true));
	assert_false(run_dir(rel, DOC_HEALTH, false));
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases_valid_spec),
		cmocka_unit_test(test_cases_invalid_spec),
		cmocka_unit_test(test_cases_valid_cluster),
		cmocka_unit_test(test_cases_invalid_cluster),
		cmocka_unit_test(test_cases_valid_health),
		cmocka_unit_test(test_cases_invalid_health),
		cmocka_unit_test(test_cases_health_one_mib_noise),
		cmocka_unit_test(test_cases_spec_one_mib),
		cmocka_unit_test(test_cases_empty_dir_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
