/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what ascend-agent's launcher reads from the mount, the share listing of
 * nodes/<node>/jobs and the env files. Every input goes to both parsers; what is
 * accepted must stay in bounds, and an environment quoted again the daemon's way
 * (sched_shell_quote) must parse back to the same variables.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "ascend_sched.h"
#include "fuzz.h"

/* Append @n bytes at @p to the growing string *buf (len, cap). */
static int append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n + 1 > *cap) {
		char *grown = realloc(*buf, *len + n + 1);

		if (!grown)
			return -ENOMEM;
		*buf = grown;
		*cap = *len + n + 1;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

static void check_env_round_trip(const struct agent_env *env)
{
	struct agent_env again = { 0 };
	struct conf_error err;
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (size_t i = 0; i < env->count; i++) {
		const char *eq = strchr(env->vars[i], '=');
		size_t name_len = eq ? (size_t)(eq - env->vars[i]) : 0;

		if (!eq || !name_len || name_len > AGENT_ENV_NAME_MAX)
			abort();
		for (size_t k = 0; k < i; k++)
			if (strncmp(env->vars[k], env->vars[i], name_len + 1) == 0)
				abort(); /* a name is kept once */
		if (append(&buf, &len, &cap, "export ", 7) < 0 ||
		    append(&buf, &len, &cap, env->vars[i], name_len + 1) < 0 ||
		    sched_shell_quote(&buf, &len, &cap, eq + 1) < 0 ||
		    append(&buf, &len, &cap, "\n", 1) < 0)
			goto out;
	}
	if (agent_env_parse(buf ? buf : "", len, "again", &again, &err) == -ENOMEM)
		goto out;
	if (again.count != env->count)
		abort();
	for (size_t i = 0; i < env->count; i++)
		if (strcmp(again.vars[i], env->vars[i]) != 0)
			abort();
out:
	agent_env_release(&again);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct agent_share shares[AGENT_SHARES_MAX];
	struct agent_env env = { 0 };
	struct conf_error err;
	size_t n;

	if (agent_parse_server_jobs(text, size, "jobs", shares, AGENT_SHARES_MAX, &n, &err) == 0) {
		if (n > AGENT_SHARES_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!conf_name_is_valid(shares[i].job) || !shares[i].generation ||
			    !shares[i].npu_count || shares[i].npu_count > CONF_SERVER_NPUS_MAX)
				abort();
	}
	if (agent_env_parse(text, size, "env", &env, &err) == 0) {
		if (env.count > AGENT_ENV_VARS_MAX || (env.count && env.vars[env.count]))
			abort();
		check_env_round_trip(&env);
		agent_env_release(&env);
	}
	return 0;
}
