/* SPDX-License-Identifier: MIT */
/*
 * What the process launcher reads from the mount: the server's share listing
 * (nodes/<node>/jobs) and the env files of a job (design.md §3, §4). Both come from the
 * daemon, but their values carry user text (job names, paths), so everything is bounded
 * by the text's length and refused with a sentence rather than trusted.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "agent_internal.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The next word of [*pos, end) into @w (at most @size - 1 bytes); false at the end. */
static bool next_word(const char *line, size_t end, size_t *pos, char *w, size_t size,
		      bool *too_long)
{
	size_t start, n;

	while (*pos < end && is_blank(line[*pos]))
		(*pos)++;
	if (*pos >= end)
		return false;
	start = *pos;
	while (*pos < end && !is_blank(line[*pos]))
		(*pos)++;
	n = *pos - start;
	*too_long = n >= size;
	if (n >= size)
		n = size - 1;
	memcpy(w, line + start, n);
	w[n] = '\0';
	return true;
}

static bool parse_unsigned(const char *w, unsigned long max, unsigned *ret)
{
	unsigned long v = 0;

	if (!*w)
		return false;
	for (; *w; w++) {
		if (*w < '0' || *w > '9')
			return false;
		v = v * 10 + (unsigned long)(*w - '0');
		if (v > max)
			return false;
	}
	*ret = (unsigned)v;
	return true;
}

int agent_parse_server_jobs(const char *text, size_t len, const char *source,
			    struct agent_share *ret, size_t max, size_t *ret_count,
			    struct conf_error *err)
{
	static const char *const field[] = { "job", "generation", "launch", "node_rank",
					     "first_rank", "npu_count", "uid", "gid" };
	struct agent_share *out;
	size_t pos = 0, count = 0;
	unsigned number = 0;
	int r = 0;

	if (len > AGENT_LAUNCH_FILE_MAX_BYTES) {
		agent_err_set(err, source, 0, 0, "the listing is %zu bytes, more than the limit "
			      "of %d bytes", len, AGENT_LAUNCH_FILE_MAX_BYTES);
		return -EFBIG;
	}
	/* Work on a copy so that @ret is untouched on failure. */
	out = calloc(max ? max : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	while (pos < len) {
		size_t start = pos, end, p;
		struct agent_share s;
		char w[11][CONF_NAME_MAX + 2], q[AGENT_QUOTE_MAX];
		bool too_long[11];
		unsigned n = 0;

		while (pos < len && text[pos] != '\n')
			pos++;
		end = pos;
		if (pos < len)
			pos++;
		number++;
		p = start;
		while (p < end && is_blank(text[p]))
			p++;
		if (p == end || text[p] == '#')
			continue;
		if (memchr(text + start, '\0', end - start)) {
			r = agent_err_set(err, source, number, 0, "a NUL byte in the listing");
			break;
		}
		while (n < 11 && next_word(text, end, &p, w[n], sizeof(w[n]), &too_long[n]))
			n++;
		/* the ninth word (the record's serial) is the daemon's; words after the
		 * eleventh are for a later agent */
		if (n < 8) {
			r = agent_err_set(err, source, number, 0,
					  "%s: the line has %u %s; a share is \"<job> "
					  "<generation> <msrun|per-rank> <node_rank> <first_rank> "
					  "<npu_count> <uid> <gid>\" (no %s)",
					  agent_quote(text + start, end - start, q, sizeof(q)), n,
					  conf_plural(n, "word", "words"), field[n]);
			break;
		}
		memset(&s, 0, sizeof(s));
		if (too_long[0] || !conf_name_is_valid(w[0])) {
			r = agent_err_set(err, source, number, 1, "%s is not a job name",
					  agent_quote(w[0], strlen(w[0]), q, sizeof(q)));
			break;
		}
		memcpy(s.job, w[0], strlen(w[0]) + 1);
		memcpy(s.home, w[0], strlen(w[0]) + 1);
		if (strcmp(w[2], "msrun") == 0) {
			s.launch = CONF_LAUNCH_MSRUN;
		} else if (strcmp(w[2], "per-rank") == 0) {
			s.launch = CONF_LAUNCH_PER_RANK;
		} else if (strcmp(w[2], "controller") == 0 || strcmp(w[2], "coordinator") == 0) {
			/* a service's role: run <service>.<role>, its files the service's */
			size_t jl = strlen(w[0]), rl = strlen(w[2]);

			if (jl < rl + 2 || w[0][jl - rl - 1] != '.' ||
			    strcmp(w[0] + jl - rl, w[2]) != 0) {
				r = agent_err_set(err, source, number, 1,
						  "%s: a %s's run is named <service>.%s",
						  agent_quote(w[0], jl, q, sizeof(q)), w[2], w[2]);
				break;
			}
			s.launch = CONF_LAUNCH_MSRUN;
			memcpy(s.role, w[2], rl + 1);
			s.home[jl - rl - 1] = '\0';
		} else {
			r = agent_err_set(err, source, number, 0,
					  "launch %s is neither msrun, per-rank, controller nor "
					  "coordinator",
					  agent_quote(w[2], strlen(w[2]), q, sizeof(q)));
			break;
		}
		/* A number cut short by next_word() would be read as another number. */
		if (too_long[1] || too_long[3] || too_long[4] || too_long[5] || too_long[6] ||
		    too_long[7] || !parse_unsigned(w[1], UINT_MAX, &s.generation) ||
		    s.generation == 0 ||
		    !parse_unsigned(w[3], CONF_SERVERS_MAX, &s.node_rank) ||
		    !parse_unsigned(w[4], INT_MAX, &s.first_rank) ||
		    !parse_unsigned(w[5], CONF_SERVER_NPUS_MAX, &s.npu_count) ||
		    (s.npu_count == 0) != (s.role[0] != '\0') ||
		    s.first_rank > INT_MAX - s.npu_count ||
		    !parse_unsigned(w[6], UINT_MAX - 1, &s.uid) ||
		    !parse_unsigned(w[7], UINT_MAX - 1, &s.gid) ||
		    (n >= 10 && (too_long[9] || !parse_unsigned(w[9], UINT_MAX, &s.attempt))) ||
		    (n == 11 && (too_long[10] || !parse_unsigned(w[10], UINT_MAX, &s.kept_from) ||
				 s.kept_from >= s.generation))) {
			r = agent_err_set(err, source, number, 0,
					  "%s: a number out of range (generation >= 1, npu_count 1 "
					  "to %d, 0 for a service's role, kept_from below the "
					  "generation)",
					  agent_quote(text + start, end - start, q, sizeof(q)),
					  CONF_SERVER_NPUS_MAX);
			break;
		}
		for (size_t i = 0; i < count; i++)
			if (strcmp(out[i].job, s.job) == 0 && out[i].generation == s.generation) {
				r = agent_err_set(err, source, number, 0,
						  "job %s generation %u is listed twice", s.job,
						  s.generation);
				break;
			}
		if (r < 0)
			break;
		if (count >= max) {
			agent_err_set(err, source, number, 0,
				      "more than %zu shares; the agent runs at most %zu", max, max);
			r = -EFBIG;
			break;
		}
		out[count++] = s;
	}
	if (r == 0) {
		if (count)
			memcpy(ret, out, count * sizeof(*out));
		*ret_count = count;
	}
	free(out);
	return r;
}

static bool is_name_start(char c)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

void agent_env_release(struct agent_env *env)
{
	if (!env)
		return;
	for (size_t i = 0; i < env->count; i++)
		free(env->vars[i]);
	free(env->vars);
	env->vars = NULL;
	env->count = 0;
}

/* Set NAME=value in @env (replacing an earlier value of NAME); takes @var. */
static int env_put(struct agent_env *env, char *var, size_t name_len)
{
	char **n;

	for (size_t i = 0; i < env->count; i++)
		if (strncmp(env->vars[i], var, name_len + 1) == 0) {
			free(env->vars[i]);
			env->vars[i] = var;
			return 0;
		}
	if (env->count >= AGENT_ENV_VARS_MAX) {
		free(var);
		return -EFBIG;
	}
	n = realloc(env->vars, (env->count + 2) * sizeof(*n));
	if (!n) {
		free(var);
		return -ENOMEM;
	}
	env->vars = n;
	env->vars[env->count++] = var;
	env->vars[env->count] = NULL;
	return 0;
}

int agent_env_set(struct agent_env *env, const char *name, const char *value)
{
	size_t n = strlen(name);
	char *var;

	if (!n || !is_name_start(name[0]))
		return -EINVAL;
	for (size_t i = 1; i < n; i++)
		if (!is_name_char(name[i]))
			return -EINVAL;
	if (asprintf(&var, "%s=%s", name, value) < 0)
		return -ENOMEM;
	return env_put(env, var, n);
}

int agent_env_parse(const char *text, size_t len, const char *source, struct agent_env *ret,
		    struct conf_error *err)
{
	struct agent_env env = { 0 };
	unsigned line = 1;
	size_t pos = 0;
	int r = 0;

	if (len > AGENT_LAUNCH_FILE_MAX_BYTES) {
		agent_err_set(err, source, 0, 0, "the file is %zu bytes, more than the limit of %d "
			      "bytes", len, AGENT_LAUNCH_FILE_MAX_BYTES);
		return -EFBIG;
	}
	if (text && memchr(text, '\0', len))
		return agent_err_set(err, source, 0, 0, "a NUL byte in an env file");
	while (pos < len) {
		size_t start, name_start, name_len, vstart, vlen = 0, col;
		unsigned first_line = line;
		char *var, q[AGENT_QUOTE_MAX];

		start = pos;
		while (pos < len && is_blank(text[pos]))
			pos++;
		if (pos >= len)
			break;
		if (text[pos] == '\n') {
			pos++;
			line++;
			continue;
		}
		if (text[pos] == '#') {
			while (pos < len && text[pos] != '\n')
				pos++;
			continue;
		}
		if (len - pos > 7 && memcmp(text + pos, "export", 6) == 0 &&
		    (text[pos + 6] == ' ' || text[pos + 6] == '\t')) {
			pos += 6;
			while (pos < len && is_blank(text[pos]))
				pos++;
		}
		col = pos - start + 1;
		name_start = pos;
		if (pos >= len || !is_name_start(text[pos])) {
			size_t e = pos;

			while (e < len && text[e] != '\n')
				e++;
			r = agent_err_set(err, source, line, (unsigned)col,
					  "%s is not an \"export NAME='value'\" line",
					  agent_quote(text + start, e - start, q, sizeof(q)));
			goto fail;
		}
		while (pos < len && is_name_char(text[pos]))
			pos++;
		name_len = pos - name_start;
		if (name_len > AGENT_ENV_NAME_MAX) {
			r = agent_err_set(err, source, line, (unsigned)col,
					  "a variable name longer than %d characters",
					  AGENT_ENV_NAME_MAX);
			goto fail;
		}
		if (pos >= len || text[pos] != '=') {
			r = agent_err_set(err, source, line, (unsigned)(pos - start + 1),
					  "expected '=' after %.*s", (int)name_len,
					  text + name_start);
			goto fail;
		}
		pos++;
		/* First pass: find the end of the quoted value and its length. */
		vstart = pos;
		for (;;) {
			if (pos < len && text[pos] == '\'') {
				pos++;
				while (pos < len && text[pos] != '\'') {
					line += text[pos] == '\n';
					pos++;
					vlen++;
				}
				if (pos >= len) {
					r = agent_err_set(err, source, first_line, 0,
							  "the value of %.*s has no closing quote",
							  (int)name_len, text + name_start);
					goto fail;
				}
				pos++;
			} else if (len - pos >= 2 && text[pos] == '\\' && text[pos + 1] == '\'') {
				pos += 2;
				vlen++;
			} else {
				break;
			}
		}
		if (pos == vstart || (pos < len && !is_blank(text[pos]) && text[pos] != '\n')) {
			r = agent_err_set(err, source, line, (unsigned)(pos - start + 1),
					  "the value of %.*s is not single-quoted ('value', with "
					  "'\\'' for a quote)",
					  (int)name_len, text + name_start);
			goto fail;
		}
		while (pos < len && is_blank(text[pos]))
			pos++;
		if (pos < len && text[pos] != '\n') {
			r = agent_err_set(err, source, line, (unsigned)(pos - start + 1),
					  "text after the value of %.*s", (int)name_len,
					  text + name_start);
			goto fail;
		}
		var = malloc(name_len + 1 + vlen + 1);
		if (!var) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(var, text + name_start, name_len);
		var[name_len] = '=';
		/* Second pass: copy the value without its quoting. */
		{
			size_t o = name_len + 1, p = vstart;

			while (p < pos) {
				if (text[p] == '\'') {
					p++;
					while (text[p] != '\'')
						var[o++] = text[p++];
					p++;
				} else if (text[p] == '\\') {
					var[o++] = '\'';
					p += 2;
				} else {
					break; /* trailing blanks */
				}
			}
			var[o] = '\0';
		}
		r = env_put(&env, var, name_len);
		if (r == -EFBIG)
			agent_err_set(err, source, line, 0, "more than %d variables",
				      AGENT_ENV_VARS_MAX);
		if (r < 0)
			goto fail;
	}
	*ret = env;
	return 0;

fail:
	agent_env_release(&env);
	return r;
}

const char *agent_env_get(const struct agent_env *env, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < env->count; i++)
		if (strncmp(env->vars[i], name, n) == 0 && env->vars[i][n] == '=')
			return env->vars[i] + n + 1;
	return NULL;
}

/* @v without its @tail (NUL-terminated into @ret_head), or -ENOENT/-ENAMETOOLONG. */
static int strip_tail(const char *v, const char *tail, char *ret_head, size_t len)
{
	size_t n = strlen(v), t = strlen(tail);

	if (n < t || strcmp(v + n - t, tail) != 0)
		return -ENOENT;
	if (n - t + 1 > len)
		return -ENAMETOOLONG;
	memcpy(ret_head, v, n - t);
	ret_head[n - t] = '\0';
	return 0;
}

int agent_env_head_mount(const struct agent_env *env, const char *job, char *ret_head,
			 size_t len)
{
	const char *dir = agent_env_get(env, "ASCEND_JOB_DIR");
	const char *table = agent_env_get(env, "RANK_TABLE_FILE");
	char tail[CONF_NAME_MAX + 64];

	if (dir) {
		snprintf(tail, sizeof(tail), "/jobs/%s", job);
		return strip_tail(dir, tail, ret_head, len);
	}
	if (!table)
		return -ENOENT;
	snprintf(tail, sizeof(tail), "/jobs/%s/ranktable.json", job);
	return strip_tail(table, tail, ret_head, len);
}

bool agent_env_is_placement(const char *var)
{
	static const char *const prefixes[] = { "MS_", "RANK_", "HCCL_", "OMPI_COMM_WORLD_" };
	static const char *const names[] = {
		"DEVICE_ID",   "MINDSPORE_HCCL_CONFIG_PATH", "SERVER_ID", "SERVER_COUNT",
		"MSRUN_ARGS",  "OMPI_COMMAND", "PMIX_RANK",  "RANK",      "LOCAL_RANK",
		"WORLD_SIZE",  "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
	};
	size_t n = strcspn(var, "=");

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(var, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && strncmp(var, names[i], n) == 0)
			return true;
	if (strncmp(var, "ASCEND_", 7) != 0)
		return false;
	/* the CANN installation's paths (set_env.sh) are the toolkit's, not the job's */
	return !((n > 12 && strncmp(var + n - 5, "_PATH", 5) == 0) ||
		 (n > 12 && strncmp(var + n - 5, "_HOME", 5) == 0));
}

int agent_env_clean(char *const *base, char ***ret)
{
	size_t n = 0, o = 0;
	char **out;

	while (base && base[n])
		n++;
	out = calloc(n + 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (strchr(base[i], '=') && !agent_env_is_placement(base[i]))
			out[o++] = base[i];
	out[o] = NULL;
	*ret = out;
	return 0;
}

int agent_env_scheduler(const struct agent_env *worker, struct agent_env *ret)
{
	static const char *const set[] = { "MS_ROLE=MS_SCHED", "RANK_ID=0" };
	struct agent_env env = { 0 };
	const char *role = agent_env_get(worker, "MS_ROLE");
	int r = 0;

	if (!role || strcmp(role, "MS_WORKER") != 0)
		return -ENOENT;
	for (size_t i = 0; i < worker->count && r == 0; i++) {
		const char *v = worker->vars[i];
		char *copy;

		if (strncmp(v, "MS_NODE_ID=", 11) == 0 || strncmp(v, "DEVICE_ID=", 10) == 0)
			continue;
		copy = strdup(v);
		r = copy ? env_put(&env, copy, strcspn(copy, "=")) : -ENOMEM;
	}
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]) && r == 0; i++) {
		char *copy = strdup(set[i]);

		r = copy ? env_put(&env, copy, strcspn(copy, "=")) : -ENOMEM;
	}
	if (r < 0) {
		agent_env_release(&env);
		return r == -EFBIG ? -ENOMEM : r;
	}
	*ret = env;
	return 0;
}

int agent_env_merge(char *const *base, const struct agent_env *over, char ***ret)
{
	size_t n = 0, o = 0;
	char **out;

	while (base && base[n])
		n++;
	out = calloc(n + over->count + 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(base[i], '=');
		bool replaced = false;

		if (!eq)
			continue;
		for (size_t k = 0; k < over->count && !replaced; k++)
			replaced = strncmp(over->vars[k], base[i], (size_t)(eq - base[i]) + 1) == 0;
		if (!replaced)
			out[o++] = base[i];
	}
	for (size_t k = 0; k < over->count; k++)
		out[o++] = over->vars[k];
	out[o] = NULL;
	*ret = out;
	return 0;
}

int agent_exit_code(int wait_status)
{
	int code;

	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status)) {
		code = 128 + WTERMSIG(wait_status);
		return code > 255 ? 255 : code;
	}
	return 255;
}

void agent_report_running(struct conf_health_report *report, const struct agent_run_info *runs,
			  size_t count)
{
	size_t n = 0;

	report->has_running = false;
	report->running_count = 0;
	for (size_t i = 0; i < count; i++) {
		const struct agent_run_info *r = &runs[i];
		bool dup = false;

		if (!r->alive || !r->job || r->generation == 0 || !conf_job_name_is_valid(r->job))
			continue;
		for (size_t k = 0; k < n && !dup; k++)
			dup = report->running[k].generation == r->generation &&
			      strcmp(report->running[k].job, r->job) == 0;
		if (dup)
			continue;
		if (n == CONF_HEALTH_RUNNING_MAX)
			return; /* has_running stays false: say nothing rather than too little */
		snprintf(report->running[n].job, sizeof(report->running[n].job), "%s", r->job);
		report->running[n].generation = r->generation;
		n++;
	}
	report->running_count = n;
	report->has_running = true;
}
