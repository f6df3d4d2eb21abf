/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rendered job files (sched/sched_render.c): rank tables, judged by
 * the independent checker tests/hccl_check.h and by direct jansson assertions, and the
 * shell env files (job env, hosts/<node>.env, ranks/<rank>.env), judged by a strict
 * parser of `export NAME='value'` lines and by really sourcing them with /bin/sh.
 *
 * Expected values are written down from the fixture's address plan (sched_fixture.h:
 * node-i has host_ip 10.1.0.<i+1>, device d has 10.<16+d>.0.<i+1>), not taken from the
 * placement under test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "ascend_sched.h"
#include "hccl_check.h"
#include "sched_fixture.h"
#include "test_util.h"

static const struct sched_render_ctx ascend_ctx = { .mount_path = "/ascend" };

/* ---- rank tables ---- */

static char *render_table(const struct sched_cluster *c, const struct sched_job *j,
			  size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(sched_render_ranktable(c, j, &text, &len), 0);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	*ret_len = len;
	return text;
}

static void expect_hccl_ok(const char *text, size_t len, const struct hccl_check_opts *opts)
{
	char why[512] = "";
	int r = hccl_check_ranktable(text, len, opts, why, sizeof(why));

	if (r != 0)
		fail_msg("hccl_check_ranktable: %d: %s\n%s", r, why, text);
}

/* Every leaf value of @v is a JSON string (HCCL rejects numbers, booleans, null). */
static void expect_all_strings(json_t *v, const char *path)
{
	char sub[256];

	if (json_is_object(v)) {
		const char *key;
		json_t *val;

		json_object_foreach(v, key, val) {
			snprintf(sub, sizeof(sub), "%s.%s", path, key);
			expect_all_strings(val, sub);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *val;

		json_array_foreach(v, i, val) {
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			expect_all_strings(val, sub);
		}
	} else if (!json_is_string(v)) {
		fail_msg("%s is not a JSON string", path);
	}
}

static const char *jstr(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_string(v))
		fail_msg("key %s is missing or not a string", key);
	return json_string_value(v);
}

static json_t *load_table(const char *text, size_t len)
{
	json_error_t err;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);

	if (!root)
		fail_msg("rank table is not JSON: %s at %d:%d", err.text, err.line, err.column);
	expect_all_strings(root, "$");
	return root;
}

struct want_server {
	const char *host_ip;
	unsigned node;		/* fixture index: device ips 10.<16+d>.0.<node+1> */
	const char *device_ids; /* "4,5" */
};

/* Check @root server by server against @want (@n servers); ranks count from 0. */
static void expect_table(json_t *root, const char *version, const struct want_server *want,
			 size_t n)
{
	json_t *list = json_object_get(root, "server_list");
	unsigned rank = 0;
	char num[16];

	assert_string_equal(jstr(root, "version"), version);
	assert_string_equal(jstr(root, "status"), "completed");
	snprintf(num, sizeof(num), "%zu", n);
	assert_string_equal(jstr(root, "server_count"), num);
	assert_true(json_is_array(list));
	assert_int_equal(json_array_size(list), n);
	for (size_t s = 0; s < n; s++) {
		json_t *srv = json_array_get(list, s), *devs = json_object_get(srv, "device");
		char ids[128] = "";
		size_t off = 0;

		assert_string_equal(jstr(srv, "server_id"), want[s].host_ip);
		assert_string_equal(jstr(srv, "host_ip"), want[s].host_ip);
		assert_string_equal(jstr(srv, "pod_ip"), want[s].host_ip);
		assert_string_equal(jstr(srv, "host_nic_ip"), "reserve");
		assert_true(json_is_array(devs));
		for (size_t k = 0; k < json_array_size(devs); k++) {
			json_t *dev = json_array_get(devs, k);
			const char *id = jstr(dev, "device_id");
			char ip[32];

			off += (size_t)snprintf(ids + off, sizeof(ids) - off, "%s%s", k ? "," : "",
						id);
			snprintf(ip, sizeof(ip), "10.%u.0.%u", 16 + (unsigned)atoi(id),
				 want[s].node + 1);
			assert_string_equal(jstr(dev, "device_ip"), ip);
			snprintf(num, sizeof(num), "%u", rank++);
			assert_string_equal(jstr(dev, "rank_id"), num);
		}
		assert_string_equal(ids, want[s].device_ids);
	}
}

/* One server, 8 ranks. */
static void test_ranktable_single_server(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	const struct want_server want[] = { { "10.1.0.1", 0, "0,1,2,3,4,5,6,7" } };
	struct hccl_check_opts opts = { .npus_per_server = 8, .require_completed = true,
					.expect_ranks = 8 };
	struct sched_job *j;
	size_t len;
	char *text;
	json_t *root;

	(void)state;
	j = fx_run(c, "solo", 8);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want, 1);
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* 4 servers, 32 ranks, across two switches: server order is topology order. */
static void test_ranktable_four_servers(void **state)
{
	/* node-0 leaf-0, node-1 leaf-1, node-2 leaf-0, node-3 leaf-1, node-4 leaf-0 */
	struct fx_opts o = { .servers = 5, .switches = 2, .interleave = true };
	struct sched_cluster *c = fx_cluster(&o);
	const struct want_server want[] = {
		{ "10.1.0.3", 2, "0,1,2,3,4,5,6,7" }, /* leaf-0 */
		{ "10.1.0.5", 4, "0,1,2,3,4,5,6,7" },
		{ "10.1.0.2", 1, "0,1,2,3,4,5,6,7" }, /* leaf-1 */
		{ "10.1.0.4", 3, "0,1,2,3,4,5,6,7" },
	};
	struct hccl_check_opts opts = { .npus_per_server = 8, .require_completed = true,
					.expect_ranks = 32 };
	struct sched_job *j;
	size_t len;
	char *text;
	json_t *root;

	(void)state;
	fx_run(c, "small", 1); /* keeps node-0 out of the big job */
	j = fx_run(c, "big", 32);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want, 4);
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* 910 jobs inside one ring: device_id stays physical (4-7), ranks from 0. */
static void test_ranktable_910_ring_jobs(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	const struct want_server want_b[] = { { "10.1.0.1", 0, "4,5,6,7" } };
	const struct want_server want_d[] = { { "10.1.0.1", 0, "2,3" } };
	struct hccl_check_opts opts = { .ring_910 = true, .require_completed = true };
	struct sched_job *b, *d;
	size_t len;
	char *text;
	json_t *root;

	(void)state;
	fx_run(c, "a", 1);
	b = fx_run(c, "b", 4);
	fx_run(c, "c", 1);
	d = fx_run(c, "d", 2);
	fx_expect_slice(d, 0, 0, "2,3");

	opts.expect_ranks = 4;
	text = render_table(c, b, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want_b, 1);
	json_decref(root);
	free(text);

	opts.expect_ranks = 2;
	text = render_table(c, d, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	expect_table(root, "1.0", want_d, 1);
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* A3 super pods: version 1.2, super_pod_list, each pod's servers contiguous. */
static void test_ranktable_super_pod(void **state)
{
	struct fx_opts o = { .type = "atlas900-a3", .servers = 4, .servers_per_pod = 2 };
	struct hccl_check_opts opts = { .npus_per_server = 16, .require_completed = true,
					.expect_ranks = 64 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	json_t *root, *pods;
	size_t len;
	char *text;

	(void)state;
	j = fx_run(c, "a3", 64);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	root = load_table(text, len);
	assert_string_equal(jstr(root, "version"), "1.2");
	pods = json_object_get(root, "super_pod_list");
	assert_int_equal(json_array_size(pods), 2);
	assert_string_equal(jstr(json_array_get(pods, 0), "super_pod_id"), "p0");
	assert_string_equal(jstr(json_array_get(pods, 1), "super_pod_id"), "p1");
	json_decref(root);
	free(text);
	sched_cluster_free(c);

	/* two pods whose servers share the leaf switches: pods must still be contiguous */
	o.switches = 2;
	o.interleave = true;
	c = fx_cluster(&o);
	j = fx_run(c, "a3", 64);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	free(text);
	sched_cluster_free(c);
}

/* Without device IPs a multi-server table stays "initializing"; unplaced -> -ENOENT. */
static void test_ranktable_initializing_and_unplaced(void **state)
{
	struct fx_opts o = { .servers = 2, .no_device_ips = true };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j, *p;
	char *text = NULL;
	size_t len = 0;
	json_t *root;

	(void)state;
	j = fx_run(c, "big", 16);
	text = render_table(c, j, &len);
	root = load_table(text, len);
	assert_string_equal(jstr(root, "status"), "initializing");
	json_decref(root);
	free(text);

	p = fx_submit(c, "later", 8);
	assert_int_equal(p->state, SCHED_JOB_PENDING);
	text = NULL;
	assert_int_equal(sched_render_ranktable(c, p, &text, &len), -ENOENT);
	assert_null(text);
	assert_int_equal(sched_render_job_env(c, p, &ascend_ctx, &text, &len), -ENOENT);
	assert_int_equal(sched_render_host_env(c, p, 0, &ascend_ctx, &text, &len), -ENOENT);
	assert_int_equal(sched_render_rank_env(c, p, 0, &ascend_ctx, &text, &len), -ENOENT);
	assert_null(text);

	/* a single-server job needs no device IPs: completed */
	assert_int_equal(sched_job_cancel(c, "big", FX_UID, fx_now()), 0);
	assert_int_equal(p->state, SCHED_JOB_RUNNING);
	text = render_table(c, p, &len);
	root = load_table(text, len);
	assert_string_equal(jstr(root, "status"), "completed");
	json_decref(root);
	free(text);
	sched_cluster_free(c);
}

/* The checker used above really bites: a numeric rank_id or a ring-crossing table fails. */
static void test_ranktable_checker_rejects_broken_copies(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct hccl_check_opts opts = { .npus_per_server = 8, .require_completed = true };
	struct sched_job *j;
	char why[512], *text, *p;
	size_t len;

	(void)state;
	j = fx_run(c, "solo", 4);
	text = render_table(c, j, &len);
	expect_hccl_ok(text, len, &opts);
	/* "rank_id": "1" -> "rank_id": 1  (same length: swap quotes for spaces) */
	p = strstr(text, "\"rank_id\": \"1\"");
	assert_non_null(p);
	p[11] = ' ';
	p[13] = ' ';
	assert_int_equal(hccl_check_ranktable(text, len, &opts, why, sizeof(why)), -EINVAL);
	free(text);
	/* ids 0-3 pass the 910 ring rule too; ids 0,1,2,4 (crossing rings) must not */
	text = render_table(c, j, &len);
	opts.ring_910 = true;
	expect_hccl_ok(text, len, &opts);
	p = strstr(text, "\"device_id\": \"3\"");
	assert_non_null(p);
	p[14] = '4';
	assert_int_equal(hccl_check_ranktable(text, len, &opts, why, sizeof(why)), -EINVAL);
	free(text);
	sched_cluster_free(c);
}

/* ---- env files ---- */

struct env_var {
	char name[64];
	char *value;
};

struct env {
	struct env_var v[64];
	size_t n;
};

static void env_free(struct env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].value);
	e->n = 0;
}

/*
 * Parse @text strictly: every line is `# comment` or `export NAME=` followed by a value
 * made only of single-quoted runs ('...', which may hold newlines) and \' escapes, then
 * a newline. Fails the test on anything else.
 */
static void env_parse(const char *text, size_t len, struct env *e)
{
	size_t i = 0, line = 1;

	memset(e, 0, sizeof(*e));
	if (len == 0 || text[len - 1] != '\n')
		fail_msg("env file does not end with a newline");
	while (i < len) {
		struct env_var *v;
		size_t nlen = 0, vlen = 0, cap = 64;

		if (text[i] == '#') {
			while (text[i] != '\n')
				i++;
			i++;
			line++;
			continue;
		}
		if (strncmp(text + i, "export ", 7) != 0)
			fail_msg("line %zu: not a comment or `export`: %.40s", line, text + i);
		i += 7;
		assert_true(e->n < 64);
		v = &e->v[e->n];
		if (!(text[i] == '_' || (text[i] >= 'A' && text[i] <= 'Z')))
			fail_msg("line %zu: bad variable name", line);
		while (text[i] == '_' || (text[i] >= 'A' && text[i] <= 'Z') ||
		       (text[i] >= '0' && text[i] <= '9')) {
			assert_true(nlen < sizeof(v->name) - 1);
			v->name[nlen++] = text[i++];
		}
		if (text[i] != '=')
			fail_msg("line %zu: %s not followed by '='", line, v->name);
		i++;
		for (size_t k = 0; k < e->n; k++)
			if (strcmp(e->v[k].name, v->name) == 0)
				fail_msg("line %zu: %s exported twice", line, v->name);
		v->value = malloc(cap);
		assert_non_null(v->value);
		if (text[i] != '\'')
			fail_msg("line %zu: %s: value not single-quoted", line, v->name);
		while (text[i] == '\'' || (text[i] == '\\' && text[i + 1] == '\'')) {
			if (text[i] == '\\') {
				if (vlen + 2 > cap)
					v->value = realloc(v->value, cap *= 2);
				v->value[vlen++] = '\'';
				i += 2;
				continue;
			}
			i++;
			while (i < len && text[i] != '\'') {
				if (vlen + 2 > cap)
					v->value = realloc(v->value, cap *= 2);
				assert_non_null(v->value);
				line += text[i] == '\n';
				v->value[vlen++] = text[i++];
			}
			if (i >= len)
				fail_msg("line %zu: %s: unterminated quote", line, v->name);
			i++;
		}
		v->value[vlen] = '\0';
		if (text[i] != '\n')
			fail_msg("line %zu: %s: junk after the value: %.20s", line, v->name,
				 text + i);
		i++;
		line++;
		e->n++;
	}
}

static const char *env_get(const struct env *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0)
			return e->v[i].value;
	return NULL;
}

static void expect_env(const struct env *e, const char *name, const char *want)
{
	const char *got = env_get(e, name);

	if (!got)
		fail_msg("%s is not exported", name);
	if (strcmp(got, want) != 0)
		fail_msg("%s='%s', want '%s'", name, got, want);
}

/*
 * Run /bin/sh -c @script with $1 = @arg; collect stdout into a new buffer. Returns the
 * exit status (or -1 when the shell did not exit normally).
 */
static int run_sh(const char *script, const char *arg, char **out, size_t *out_len)
{
	int pipefd[2], status = 0;
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	pid_t pid;
	ssize_t n;

	assert_non_null(buf);
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		execl("/bin/sh", "sh", "-c", script, "sh", arg, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		if (len == cap) {
			buf = realloc(buf, cap *= 2);
			assert_non_null(buf);
		}
		n = read(pipefd[0], buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*out = buf;
	*out_len = len;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Source @text with /bin/sh and compare every variable the strict parser found with
 * what the shell holds afterwards (printf '%s\0' "$NAME" ...).
 */
static void expect_sh_agrees(const char *text, size_t len, const struct env *e)
{
	char *path = test_write_tmp(text, len, ".env"), *out = NULL, *script, *p;
	size_t out_len = 0, cap = 64 + e->n * 80, off;
	int r;

	script = malloc(cap);
	assert_non_null(script);
	off = (size_t)snprintf(script, cap, ". \"$1\" && printf '%%s\\0'");
	for (size_t i = 0; i < e->n; i++)
		off += (size_t)snprintf(script + off, cap - off, " \"$%s\"", e->v[i].name);
	assert_true(off < cap);
	r = run_sh(script, path, &out, &out_len);
	unlink(path); /* before any assertion can end the test */
	assert_int_equal(r, 0);
	p = out;
	for (size_t i = 0; i < e->n; i++) {
		size_t vlen = strlen(e->v[i].value);

		assert_true((size_t)(p - out) + vlen < out_len + 1);
		if (memcmp(p, e->v[i].value, vlen) != 0 || p[vlen] != '\0')
			fail_msg("sh sees %s differently: '%.*s' vs '%s'", e->v[i].name,
				 (int)vlen, p, e->v[i].value);
		p += vlen + 1;
	}
	assert_true((size_t)(p - out) == out_len);
	free(path);
	free(out);
	free(script);
}

/* sched_shell_quote: exact POSIX single quoting, appended to what the buffer holds. */
static void test_shell_quote_special_characters(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "'plain'" },
		{ "", "''" },
		{ "it's", "'it'\\''s'" },
		{ "'", "''\\'''" },
		{ "$HOME `id` $(id) \"x\"", "'$HOME `id` $(id) \"x\"'" },
		{ "a\nb", "'a\nb'" },
		{ "back\\slash", "'back\\slash'" },
		{ "glob * ? [a] ~ ; & | < >", "'glob * ? [a] ~ ; & | < >'" },
	};
	static const char *const values[] = {
		"it's", "'", "''", "$HOME", "`echo pwned`", "$(echo pwned)", "line1\nline2\n",
		"back\\slash\\", "tab\there", "\\'", "end with quote'", "!hist", "",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = strdup("X=");
		size_t len = 2, cap = 3;

		assert_non_null(buf);
		assert_int_equal(sched_shell_quote(&buf, &len, &cap, cases[i].in), 0);
		assert_int_equal(len, 2 + strlen(cases[i].out));
		assert_true(cap > len);
		assert_memory_equal(buf, "X=", 2);
		assert_string_equal(buf + 2, cases[i].out);
		free(buf);
	}
	/* from an empty buffer */
	{
		char *buf = NULL;
		size_t len = 0, cap = 0;

		assert_int_equal(sched_shell_quote(&buf, &len, &cap, "a'b"), 0);
		assert_string_equal(buf, "'a'\\''b'");
		free(buf);
	}
	/* the shell reads every value back unchanged */
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char *buf = NULL, *out = NULL, *path;
		size_t len = 0, cap = 0, out_len = 0;
		struct env e;
		int r;

		buf = strdup("export X=");
		assert_non_null(buf);
		len = strlen(buf);
		cap = len + 1;
		assert_int_equal(sched_shell_quote(&buf, &len, &cap, values[i]), 0);
		buf = realloc(buf, len + 2);
		assert_non_null(buf);
		buf[len++] = '\n';
		buf[len] = '\0';
		env_parse(buf, len, &e);
		assert_int_equal(e.n, 1);
		assert_string_equal(env_get(&e, "X"), values[i]);
		path = test_write_tmp(buf, len, ".env");
		r = run_sh(". \"$1\" && printf %s \"$X\"", path, &out, &out_len);
		unlink(path);
		assert_int_equal(r, 0);
		if (out_len != strlen(values[i]) || memcmp(out, values[i], out_len) != 0)
			fail_msg("sh read back '%.*s' for '%s'", (int)out_len, out, values[i]);
		free(path);
		free(out);
		free(buf);
		env_free(&e);
	}
}

static struct sched_cluster *four_server_cluster(bool rank_table_launch)
{
	/* node-0 leaf-0, node-1 leaf-1, node-2 leaf-0, node-3 leaf-1, node-4 leaf-0 */
	struct fx_opts o = { .servers = 5,
			     .switches = 2,
			     .interleave = true,
			     .connect_timeout_sec = 1200,
			     .scheduler_port = 9000,
			     .rank_table_launch = rank_table_launch };

	return fx_cluster(&o);
}

/* Job-wide env of a 32-rank job: the launch variables with their expected values. */
static void test_env_job_values(void **state)
{
	struct sched_cluster *c = four_server_cluster(false);
	struct sched_job *j;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	fx_run(c, "small", 1);
	j = fx_run(c, "llama70b", 32);
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	env_parse(text, len, &e);
	expect_env(&e, "RANK_TABLE_FILE", "/ascend/jobs/llama70b/ranktable.json");
	expect_env(&e, "RANK_SIZE", "32");
	expect_env(&e, "MS_SCHED_HOST", "10.1.0.3"); /* node-2: first in topology order */
	expect_env(&e, "MS_SCHED_PORT", "9000");
	expect_env(&e, "MS_WORKER_NUM", "32");
	expect_env(&e, "HCCL_CONNECT_TIMEOUT", "1200");
	expect_env(&e, "ASCEND_JOB_ID", "llama70b");
	expect_env(&e, "ASCEND_JOB_GENERATION", "1");
	expect_env(&e, "ASCEND_RESUME_CHECKPOINT", "");
	expect_sh_agrees(text, len, &e);
	env_free(&e);
	free(text);

	/*
	 * A checkpoint becomes ASCEND_RESUME_CHECKPOINT of the next generation: the running
	 * one keeps what it started with, so all its processes agree.
	 */
	assert_int_equal(sched_job_checkpoint(c, "llama70b", FX_UID, 7, "/data/ck/step 7's",
					      fx_now()),
			 0);
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "ASCEND_RESUME_CHECKPOINT", "");
	env_free(&e);
	free(text);
	{
		char reason[SCHED_REASON_MAX] = "";

		assert_int_equal(sched_job_process_exit(c, "llama70b", FX_UID, 1,
							c->servers[j->slices[0].server].conf->name,
							-1, 3, fx_now(), reason),
				 0);
	}
	assert_int_equal(j->generation, 2);
	assert_int_equal(sched_render_job_env(c, j, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "ASCEND_RESUME_CHECKPOINT", "/data/ck/step 7's");
	expect_sh_agrees(text, len, &e);
	env_free(&e);
	free(text);
	sched_cluster_free(c);
}

/* hosts/<node>.env for each server of the job: msrun's per-node values. */
static void test_env_host_values(void **state)
{
	static const char *const hosts[] = { "node-2", "node-4", "node-1", "node-3" };
	struct sched_cluster *c = four_server_cluster(false);
	struct sched_job *j;
	struct env e;
	char *text, want[256];
	const char *args;
	size_t len;

	(void)state;
	fx_run(c, "small", 1);
	j = fx_run(c, "llama70b", 32);
	for (size_t s = 0; s < 4; s++) {
		assert_int_equal(sched_render_host_env(c, j, s, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		expect_env(&e, "ASCEND_SERVER_NAME", hosts[s]);
		expect_env(&e, "RANK_TABLE_FILE", "/ascend/jobs/llama70b/ranktable.json");
		expect_env(&e, "RANK_SIZE", "32");
		expect_env(&e, "MS_SCHED_HOST", "10.1.0.3");
		expect_env(&e, "MS_SCHED_PORT", "9000");
		expect_env(&e, "MS_WORKER_NUM", "32");
		expect_env(&e, "MS_LOCAL_WORKER", "8");
		snprintf(want, sizeof(want), "%zu", s);
		expect_env(&e, "MS_NODE_RANK", want);
		snprintf(want, sizeof(want), "%zu", s * 8);
		expect_env(&e, "RANK_START", want);
		expect_env(&e, "ASCEND_RT_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7");
		args = env_get(&e, "MSRUN_ARGS");
		assert_non_null(args);
		assert_non_null(strstr(args, "--worker_num=32"));
		assert_non_null(strstr(args, "--local_worker_num=8"));
		assert_non_null(strstr(args, "--master_addr=10.1.0.3"));
		assert_non_null(strstr(args, "--master_port=9000"));
		snprintf(want, sizeof(want), "--node_rank=%zu", s);
		assert_non_null(strstr(args, want));
		assert_null(strstr(args, "--rank_table_file"));
		expect_sh_agrees(text, len, &e);
		env_free(&e);
		free(text);
	}
	text = NULL;
	assert_int_equal(sched_render_host_env(c, j, 4, &ascend_ctx, &text, &len), -ENOENT);
	assert_null(text);
	sched_cluster_free(c);
}

/* ranks/<rank>.env: RANK_ID and the physical DEVICE_ID, on a 910 job in ring 4-7. */
static void test_env_rank_values_ring(void **state)
{
	struct fx_opts o = { .type = "atlas800", .servers = 1, .connect_timeout_sec = 300 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;
	struct env e;
	char *text, want[16];
	size_t len;

	(void)state;
	fx_run(c, "a", 4);
	j = fx_run(c, "ring", 4);
	fx_expect_slice(j, 0, 0, "4,5,6,7");
	for (unsigned r = 0; r < 4; r++) {
		assert_int_equal(sched_render_rank_env(c, j, r, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		snprintf(want, sizeof(want), "%u", r);
		expect_env(&e, "RANK_ID", want);
		snprintf(want, sizeof(want), "%u", 4 + r);
		expect_env(&e, "DEVICE_ID", want);
		expect_env(&e, "RANK_SIZE", "4");
		expect_env(&e, "RANK_TABLE_FILE", "/ascend/jobs/ring/ranktable.json");
		expect_env(&e, "MS_SCHED_HOST", "10.1.0.1");
		expect_env(&e, "HCCL_CONNECT_TIMEOUT", "300");
		/* DEVICE_ID is physical, so no visibility remap may be in force */
		assert_null(env_get(&e, "ASCEND_RT_VISIBLE_DEVICES"));
		expect_sh_agrees(text, len, &e);
		env_free(&e);
		free(text);
	}
	text = NULL;
	assert_int_equal(sched_render_rank_env(c, j, 4, &ascend_ctx, &text, &len), -ENOENT);
	assert_null(text);
	/* the host env restricts msrun to the ring's physical NPUs */
	assert_int_equal(sched_render_host_env(c, j, 0, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "ASCEND_RT_VISIBLE_DEVICES", "4,5,6,7");
	expect_env(&e, "MS_LOCAL_WORKER", "4");
	expect_env(&e, "MS_NODE_RANK", "0");
	env_free(&e);
	free(text);
	sched_cluster_free(c);
}

/* Every rendered env file of a 32-rank job has the strict export syntax. */
static void test_env_all_files_strict_syntax(void **state)
{
	struct sched_cluster *c = four_server_cluster(false);
	struct sched_job *j;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	fx_run(c, "small", 1);
	j = fx_run(c, "llama70b", 32);
	for (unsigned r = 0; r < 32; r++) {
		char want[16];

		assert_int_equal(sched_render_rank_env(c, j, r, &ascend_ctx, &text, &len), 0);
		env_parse(text, len, &e);
		snprintf(want, sizeof(want), "%u", r);
		expect_env(&e, "RANK_ID", want);
		snprintf(want, sizeof(want), "%u", r % 8);
		expect_env(&e, "DEVICE_ID", want);
		expect_env(&e, "ASCEND_SERVER_NAME",
			   (const char *[]){ "node-2", "node-4", "node-1", "node-3" }[r / 8]);
		env_free(&e);
		free(text);
	}
	sched_cluster_free(c);
}

/* enable_dynamic_network: false -> msrun gets the rank table file. */
static void test_env_msrun_rank_table_launch(void **state)
{
	struct sched_cluster *c = four_server_cluster(true);
	struct sched_job *j;
	const char *args;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	j = fx_run(c, "rt", 16);
	assert_int_equal(sched_render_host_env(c, j, 1, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	args = env_get(&e, "MSRUN_ARGS");
	assert_non_null(args);
	assert_non_null(strstr(args, "--rank_table_file=/ascend/jobs/rt/ranktable.json"));
	assert_non_null(strstr(args, "--node_rank=1"));
	expect_sh_agrees(text, len, &e);
	env_free(&e);
	free(text);
	sched_cluster_free(c);
}

/* Two jobs whose rank 0 shares a server get distinct MS_SCHED_PORTs. */
static void test_env_sched_port_per_master(void **state)
{
	struct fx_opts o = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *b, *d;
	struct env e;
	char *text;
	size_t len;

	(void)state;
	a = fx_run(c, "a", 4);
	b = fx_run(c, "b", 4);
	assert_int_equal(a->sched_port, 8118);
	assert_int_equal(b->sched_port, 8119);
	assert_int_equal(sched_render_job_env(c, b, &ascend_ctx, &text, &len), 0);
	env_parse(text, len, &e);
	expect_env(&e, "MS_SCHED_PORT", "8119");
	env_free(&e);
	free(text);
	assert_int_equal(sched_job_complete(c, "a", FX_UID, fx_now()), 0);
	d = fx_run(c, "d", 4);
	assert_int_equal(d->sched_port, 8118);
	sched_cluster_free(c);
}

/* The job env, really sourced by /bin/sh, sets RANK_TABLE_FILE, even for an odd mount. */
static void test_env_sourced_by_sh(void **state)
{
	static const char *const mounts[] = { "/ascend", "/mnt/it's a $dir `x`" };
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *j;

	(void)state;
	j = fx_run(c, "llama7b", 16);
	for (size_t m = 0; m < 2; m++) {
		struct sched_render_ctx ctx = { .mount_path = mounts[m] };
		char *text, *path, *out, *out2, want[256];
		size_t len, out_len, out2_len;
		int r, r2;

		assert_int_equal(sched_render_job_env(c, j, &ctx, &text, &len), 0);
		path = test_write_tmp(text, len, ".env");
		r = run_sh(". \"$1\" && printf %s \"$RANK_TABLE_FILE\"", path, &out, &out_len);
		/* and the exported variable reaches a child process */
		r2 = run_sh(". \"$1\" && sh -c 'printf %s \"$RANK_SIZE\"'", path, &out2, &out2_len);
		unlink(path);
		assert_int_equal(r, 0);
		assert_int_equal(r2, 0);
		snprintf(want, sizeof(want), "%s/jobs/llama7b/ranktable.json", mounts[m]);
		if (out_len != strlen(want) || memcmp(out, want, out_len) != 0)
			fail_msg("sh got '%.*s', want '%s'", (int)out_len, out, want);
		assert_int_equal(out2_len, 2);
		assert_memory_equal(out2, "16", 2);
		free(out);
		free(out2);
		free(path);
		free(text);
	}
	sched_cluster_free(c);
}

/* ---- queue, job status and metrics with queues, quotas and preemption ---- */

static const char *const share_queues = "  - name: default\n"
					"  - name: batch\n"
					"    quota_npus: 16\n"
					"    may_borrow: true\n"
					"    groups: [ml-research, infra]\n"
					"  - name: prod\n"
					"    priority: 900\n";

/* Four servers, quotas enforced, no stop grace (the deadline is one check interval). */
static struct sched_cluster *share_cluster(void)
{
	struct fx_opts o = { .servers = 4, .quota = true, .grace_sec = -1,
			     .queues = share_queues };

	return fx_cluster(&o);
}

/* A time @sec seconds past every fx_now() so far; fx_now() stays ahead of it. */
static uint64_t fx_later(unsigned sec)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < sec; i++)
		t = fx_now();
	return t;
}

static json_t *render_json(int (*render)(const struct sched_cluster *, const struct sched_job *,
					  char **, size_t *),
			   const struct sched_cluster *c, const struct sched_job *j)
{
	char *text = NULL;
	size_t len = 0;
	json_error_t err;
	json_t *o;

	assert_int_equal(render(c, j, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	o = json_loadb(text, len, 0, &err);
	if (!o)
		fail_msg("not JSON: %s\n%s", err.text, text);
	free(text);
	return o;
}

static json_t *queue_json(const struct sched_cluster *c, const char *queue)
{
	const struct conf_queue *q = conf_cluster_find_queue(c->conf, queue);
	char *text = NULL;
	size_t len = 0;
	json_error_t err;
	json_t *o;

	assert_non_null(q);
	assert_int_equal(sched_render_queue_status(c, q, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	o = json_loadb(text, len, 0, &err);
	if (!o)
		fail_msg("not JSON: %s\n%s", err.text, text);
	free(text);
	return o;
}

static json_int_t jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", key);
	return json_integer_value(v);
}

static const char *jtext(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

static bool jbool(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_boolean(v))
		fail_msg("%s is not a boolean", key);
	return json_is_true(v);
}

/* The job of queue @queue that is in state @state (exactly one must be). */
static struct sched_job *only_job_in(const struct sched_cluster *c, const char *queue,
				     enum sched_job_state state)
{
	struct sched_job *found = NULL;

	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];

		if (j->spec && strcmp(j->spec->queue, queue) == 0 && j->state == state) {
			if (found)
				fail_msg("jobs %s and %s are both %s", found->name, j->name,
					 sched_job_state_name(state));
			found = j;
		}
	}
	if (!found)
		fail_msg("no job of queue %s is %s", queue, sched_job_state_name(state));
	return found;
}

/* queues/<q>/status: configuration, usage from sched_queue_usage(), stopping included. */
static void test_queue_status_usage_and_borrowing(void **state)
{
	struct sched_cluster *c = share_cluster();
	json_t *o, *g;

	(void)state;
	o = queue_json(c, "batch");
	assert_string_equal(jtext(o, "queue"), "batch");
	assert_int_equal(jint(o, "quota_npus"), 16);
	assert_true(jbool(o, "enable_quota_limit"));
	assert_int_equal(jint(o, "priority"), 500);
	assert_int_equal(jint(o, "weight"), 1);
	assert_true(jbool(o, "may_borrow"));
	g = json_object_get(o, "groups");
	assert_true(json_is_array(g));
	assert_int_equal(json_array_size(g), 2);
	assert_string_equal(json_string_value(json_array_get(g, 0)), "ml-research");
	assert_string_equal(json_string_value(json_array_get(g, 1)), "infra");
	assert_int_equal(jint(o, "used_npus"), 0);
	assert_int_equal(jint(o, "borrowed_npus"), 0);
	assert_int_equal(jint(o, "pending"), 0);
	assert_int_equal(jint(o, "running"), 0);
	assert_int_equal(jint(o, "stopping"), 0);
	json_decref(o);

	/* 16 within the quota, 16 more borrowed on idle NPUs, one more waits */
	fx_submit_spec(c, fx_spec_full("b1", 16, "batch", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("b2", 8, "batch", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("b3", 8, "batch", 500), FX_UID);
	fx_submit_spec(c, fx_spec_full("b4", 8, "batch", 500), FX_UID);
	o = queue_json(c, "batch");
	assert_int_equal(jint(o, "used_npus"), 32);
	assert_int_equal(jint(o, "borrowed_npus"), 16);
	assert_int_equal(jint(o, "running"), 3);
	assert_int_equal(jint(o, "pending"), 1);
	json_decref(o);
	o = queue_json(c, "prod");
	assert_int_equal(jint(o, "priority"), 900);
	assert_int_equal(json_array_size(json_object_get(o, "groups")), 0);
	json_decref(o);

	/* a prod job preempts one borrower: stopping, and its NPUs still count as used */
	fx_submit_spec(c, fx_spec_full("p1", 8, "prod", 500), FX_UID);
	only_job_in(c, "batch", SCHED_JOB_STOPPING);
	o = queue_json(c, "batch");
	assert_int_equal(jint(o, "used_npus"), 32);
	assert_int_equal(jint(o, "running"), 2);
	assert_int_equal(jint(o, "stopping"), 1);
	assert_int_equal(jint(o, "pending"), 1);
	json_decref(o);
	o = queue_json(c, "prod");
	assert_int_equal(jint(o, "pending"), 1);
	assert_int_equal(jint(o, "used_npus"), 0);
	json_decref(o);
	sched_cluster_free(c);
}

static bool server_lists(const struct sched_cluster *c, unsigned server, const char *job)
{
	char *text = NULL, line[CONF_NAME_MAX + 2];
	size_t len = 0;
	bool found;

	assert_int_equal(sched_render_server_jobs(c, server, &text, &len), 0);
	snprintf(line, sizeof(line), "%s ", job);
	found = strncmp(text, line, strlen(line)) == 0;
	for (const char *nl = strchr(text, '\n'); nl && !found; nl = strchr(nl + 1, '\n'))
		found = strncmp(nl + 1, line, strlen(line)) == 0;
	free(text);
	return found;
}

static char *metrics_of(const struct sched_cluster *c)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(sched_render_metrics(c, fx_now(), &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

static void expect_metric(const char *text, const char *line)
{
	char want[256];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("metrics lack \"%s\":\n%s", line, text);
}

/*
 * status.json through a preemption: the victim shows stopping with its preemptor and
 * stop deadline and leaves its server's jobs list (its agent stops it); after the
 * deadline it is pending with its run time kept, and the preemptor runs.
 */
static void test_job_status_preemption_fields(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct sched_job *v, *p1;
	unsigned server;
	json_t *o;
	char *m;

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		char name[16];

		snprintf(name, sizeof(name), "low%u", i);
		fx_submit_spec(c, fx_spec_full(name, 8, NULL, 100), FX_UID);
	}
	assert_int_equal(c->npus_allocated, 32);
	v = c->jobs[0];
	o = render_json(sched_render_job_status_json, c, v);
	assert_string_equal(jtext(o, "state"), "running");
	assert_string_equal(jtext(o, "queue"), "default");
	assert_int_equal(jint(o, "priority"), 100);
	assert_int_equal(jint(o, "npus_min"), 8);
	assert_int_equal(jint(o, "npus_max"), 8);
	assert_int_equal(jint(o, "time_limit_sec"), 0);
	assert_true(json_is_real(json_object_get(o, "run_accum_sec")));
	assert_true(json_real_value(json_object_get(o, "run_accum_sec")) == 0.0);
	assert_true(json_is_string(json_object_get(o, "run_since")));
	assert_false(jbool(o, "borrowing"));
	assert_int_equal(jint(o, "preemptions"), 0);
	assert_string_equal(jtext(o, "preempted_by"), "");
	assert_true(json_is_null(json_object_get(o, "reserved_start")));
	assert_true(json_is_null(json_object_get(o, "stop_deadline")));
	json_decref(o);

	p1 = fx_submit_spec(c, fx_spec_full("p1", 8, "prod", 500), FX_UID);
	assert_int_equal(p1->state, SCHED_JOB_PENDING);
	v = only_job_in(c, "default", SCHED_JOB_STOPPING);
	server = v->slices[0].server;
	o = render_json(sched_render_job_status_json, c, v);
	assert_string_equal(jtext(o, "state"), "stopping");
	assert_string_equal(jtext(o, "preempted_by"), "p1");
	assert_int_equal(jint(o, "preemptions"), 1);
	assert_true(json_is_string(json_object_get(o, "stop_deadline")));
	assert_non_null(strstr(jtext(o, "reason"), "preempted by job p1"));
	json_decref(o);
	/* the preemptor holds a reservation from the victim's stop deadline */
	o = render_json(sched_render_job_status_json, c, p1);
	assert_string_equal(jtext(o, "state"), "pending");
	assert_true(json_is_string(json_object_get(o, "reserved_start")));
	assert_string_not_equal(jtext(o, "reserved_start"), "unknown");
	json_decref(o);
	/* agents run only running jobs: the victim is gone from its server's list */
	assert_false(server_lists(c, server, v->name));
	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i]->state == SCHED_JOB_RUNNING)
			assert_true(server_lists(c, c->jobs[i]->slices[0].server,
						 c->jobs[i]->name));
	m = metrics_of(c);
	expect_metric(m, "ascendfs_preemptions_total 1");
	expect_metric(m, "ascendfs_queue_used_npus{queue=\"default\"} 32");
	expect_metric(m, "ascendfs_queue_used_npus{queue=\"prod\"} 0");
	expect_metric(m, "ascendfs_queue_pending_jobs{queue=\"prod\"} 1");
	expect_metric(m, "ascendfs_queue_pending_jobs{queue=\"default\"} 0");
	free(m);

	/* the stop deadline passes (grace 0 + the 5 s check interval) */
	assert_int_equal(sched_tick(c, fx_later(6)), 1);
	fx_check(c);
	assert_int_equal(p1->state, SCHED_JOB_RUNNING);
	assert_int_equal(v->state, SCHED_JOB_PENDING);
	assert_true(server_lists(c, server, "p1"));
	o = render_json(sched_render_job_status_json, c, v);
	assert_string_equal(jtext(o, "state"), "pending");
	assert_non_null(strstr(jtext(o, "reason"), "preempted by job \"p1\""));
	assert_true(json_real_value(json_object_get(o, "run_accum_sec")) > 0.0);
	assert_true(json_is_null(json_object_get(o, "run_since")));
	assert_true(json_is_null(json_object_get(o, "stop_deadline")));
	assert_string_equal(jtext(o, "preempted_by"), "p1");
	/* it waits for running jobs without a time_limit: its start is unknown */
	assert_string_equal(jtext(o, "reserved_start"), "unknown");
	json_decref(o);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_queue_pending_jobs{queue=\"default\"} 1");
	expect_metric(m, "ascendfs_queue_used_npus{queue=\"prod\"} 8");
	free(m);
	sched_cluster_free(c);
}

/* A job past its time_limit goes stopping, then timeout; the counter follows. */
static void test_job_status_time_limit(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct conf_job_spec *spec = fx_spec_full("short", 8, NULL, 500);
	struct sched_job *j;
	json_t *o;
	char *m;

	(void)state;
	spec->time_limit_sec = 2;
	j = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	o = render_json(sched_render_job_status_json, c, j);
	assert_int_equal(jint(o, "time_limit_sec"), 2);
	json_decref(o);
	assert_int_equal(sched_tick(c, fx_later(3)), 1);
	assert_int_equal(j->state, SCHED_JOB_STOPPING);
	o = render_json(sched_render_job_status_json, c, j);
	assert_string_equal(jtext(o, "state"), "stopping");
	assert_non_null(strstr(jtext(o, "reason"), "time limit"));
	assert_true(json_is_string(json_object_get(o, "stop_deadline")));
	assert_string_equal(jtext(o, "preempted_by"), "");
	json_decref(o);
	assert_false(server_lists(c, j->slices[0].server, "short"));
	assert_int_equal(sched_tick(c, fx_later(6)), 1);
	assert_int_equal(j->state, SCHED_JOB_TIMEOUT);
	o = render_json(sched_render_job_status_json, c, j);
	assert_string_equal(jtext(o, "state"), "timeout");
	assert_true(json_real_value(json_object_get(o, "run_accum_sec")) >= 2.0);
	assert_true(json_is_null(json_object_get(o, "stop_deadline")));
	json_decref(o);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_timeouts_total 1");
	expect_metric(m, "ascendfs_jobs{state=\"timeout\"} 1");
	free(m);
	sched_cluster_free(c);
}

/* A quota set while quotas are off is kept, but its event and the queue's status say it
 * has no effect and how to turn quotas on; with quotas on, nothing of that. */
static void test_quota_while_quotas_off_says_not_enforced(void **state)
{
	static const char queues[] = "  - name: q\n";
	struct fx_opts o = { .servers = 2, .queues = queues };
	struct sched_cluster *c = fx_cluster(&o);
	const struct sched_event *e, *last = NULL;
	json_t *d;

	(void)state;
	assert_int_equal(sched_queue_set_quota(c, "q", 8, fx_now()), 0);
	for (e = sched_event_next(c, 0); e; e = sched_event_next(c, e->seq))
		last = e;
	assert_non_null(last);
	assert_non_null(strstr(last->reason, "quota set to 8 NPUs; not enforced: "
					     "resource.enable_quota_limit is false (set it to true"));
	d = queue_json(c, "q");
	assert_false(json_is_true(json_object_get(d, "quota_enforced")));
	assert_non_null(strstr(json_string_value(json_object_get(d, "quota_note")),
			       "not enforced"));
	json_decref(d);
	sched_cluster_free(c);

	o.quota = true;
	c = fx_cluster(&o);
	assert_int_equal(sched_queue_set_quota(c, "q", 1, fx_now()), 0);
	for (e = sched_event_next(c, 0); e; e = sched_event_next(c, e->seq))
		last = e;
	assert_null(strstr(last->reason, "not enforced"));
	d = queue_json(c, "q");
	assert_true(json_is_true(json_object_get(d, "quota_enforced")));
	assert_true(json_is_null(json_object_get(d, "quota_note")));
	json_decref(d);
	sched_cluster_free(c);
}

/* Reals are short: heartbeat_age_sec to the ms, utilization to 4 decimals. */
static void test_reals_are_short(void **state)
{
	struct fx_opts o = { .servers = 3 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_health_report r = { .has_node = true, .node = CONF_HEALTH_OK };
	char *text;
	size_t len;
	json_t *d;

	(void)state;
	assert_int_equal(sched_server_report(c, 0, &r, 1000000000), 0);
	/* 1945 us: 0.0019449999999999999 as %.17g */
	assert_int_equal(sched_render_server_info(c, 0, 1000001945, &text, &len), 0);
	assert_non_null(strstr(text, "\"heartbeat_age_sec\": 0.002,"));
	d = json_loads(text, 0, NULL);
	assert_non_null(d);
	assert_true(json_real_value(json_object_get(d, "heartbeat_age_sec")) == 0.002);
	json_decref(d);
	free(text);
	fx_run(c, "one", 8);
	assert_int_equal(sched_render_cluster_status(c, &text, &len), 0);
	/* 8 of 24 NPUs */
	assert_non_null(strstr(text, "\"utilization\": 0.3333,"));
	free(text);
	sched_cluster_free(c);
}

/* Elastic sizes in status.json; a grown job counts as a resize. */
static void test_job_status_elastic_and_resize_metric(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct conf_job_spec *spec = fx_spec_full("elastic", 8, NULL, 500);
	struct sched_job *j;
	json_t *o;
	char *m;

	(void)state;
	fx_submit_spec(c, fx_spec_full("x", 8, NULL, 500), FX_UID);
	spec->npus_max = 32;
	j = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(sched_job_total_npus(j), 24);
	o = render_json(sched_render_job_status_json, c, j);
	assert_int_equal(jint(o, "npus_min"), 8);
	assert_int_equal(jint(o, "npus_max"), 32);
	assert_int_equal(jint(o, "npus_allocated"), 24);
	json_decref(o);
	assert_int_equal(sched_job_cancel(c, "x", FX_UID, fx_now()), 0);
	assert_int_equal(sched_job_total_npus(j), 32);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_resizes_total 1");
	expect_metric(m, "ascendfs_preemptions_total 0");
	free(m);
	sched_cluster_free(c);
}

/* A short job started ahead of a reservation it does not delay counts as backfilled. */
static void test_metrics_backfilled(void **state)
{
	struct sched_cluster *c = share_cluster();
	struct conf_job_spec *spec = fx_spec_full("long", 16, NULL, 500);
	struct sched_job *big, *quick;
	json_t *o;
	char *m;

	(void)state;
	spec->time_limit_sec = 3600;
	fx_submit_spec(c, spec, FX_UID);
	big = fx_submit_spec(c, fx_spec_full("big", 32, NULL, 500), FX_UID);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	o = render_json(sched_render_job_status_json, c, big);
	assert_true(json_is_string(json_object_get(o, "reserved_start")));
	assert_string_not_equal(jtext(o, "reserved_start"), "unknown");
	json_decref(o);
	spec = fx_spec_full("quick", 8, NULL, 500);
	spec->time_limit_sec = 600;
	quick = fx_submit_spec(c, spec, FX_UID);
	assert_int_equal(quick->state, SCHED_JOB_RUNNING);
	m = metrics_of(c);
	expect_metric(m, "ascendfs_backfilled_total 1");
	free(m);

	/* a job of higher priority takes the reservation: big's is gone from status.json */
	fx_submit_spec(c, fx_spec_full("urgent", 24, NULL, 900), FX_UID);
	assert_int_equal(big->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(big->reason, "waiting behind job \"urgent\""));
	o = render_json(sched_render_job_status_json, c, big);
	assert_true(json_is_null(json_object_get(o, "reserved_start")));
	json_decref(o);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranktable_single_server),
		cmocka_unit_test(test_ranktable_four_servers),
		cmocka_unit_test(test_ranktable_910_ring_jobs),
		cmocka_unit_test(test_ranktable_super_pod),
		cmocka_unit_test(test_ranktable_initializing_and_unplaced),
		cmocka_unit_test(test_ranktable_checker_rejects_broken_copies),
		cmocka_unit_test(test_shell_quote_special_characters),
		cmocka_unit_test(test_env_job_values),
		cmocka_unit_test(test_env_host_values),
		cmocka_unit_test(test_env_rank_values_ring),
		cmocka_unit_test(test_env_all_files_strict_syntax),
		cmocka_unit_test(test_env_msrun_rank_table_launch),
		cmocka_unit_test(test_env_sched_port_per_master),
		cmocka_unit_test(test_env_sourced_by_sh),
		cmocka_unit_test(test_queue_status_usage_and_borrowing),
		cmocka_unit_test(test_job_status_preemption_fields),
		cmocka_unit_test(test_job_status_time_limit),
		cmocka_unit_test(test_reals_are_short),
		cmocka_unit_test(test_quota_while_quotas_off_says_not_enforced),
		cmocka_unit_test(test_job_status_elastic_and_resize_metric),
		cmocka_unit_test(test_metrics_backfilled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
