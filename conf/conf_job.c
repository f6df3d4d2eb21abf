/* SPDX-License-Identifier: MIT */
/* Job specs: the file a user copies into /ascend/jobs/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_internal.h"

#define JOB_NPUS_MAX 65536
#define JOB_PRIORITY_MAX 1000
#define JOB_RESTARTS_MAX 1000
#define JOB_PATH_MAX 4095

static const char *const spec_keys[] = {
	"name", "npus", "queue", "priority", "command", "launch", "checkpoint_dir",
	"max_restarts", "time_limit", "parallel", "server_type", "recovery", "kind",
	"replicas", "port", "preemptible", "max_unavailable", "disaggregated", "after", "array", NULL,
};

static const struct {
	const char *word;
	unsigned priority;
} priority_words[] = { { "low", 100 }, { "normal", 500 }, { "high", 900 } };

void conf_job_spec_free(struct conf_job_spec *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->queue);
	free(s->command);
	free(s->checkpoint_dir);
	free(s->server_type);
	free(s->controller);
	free(s->coordinator);
	free(s->controller_command);
	free(s->coordinator_command);
	free(s->after);
	free(s);
}

/* strdup() of NULL is NULL; *@ok goes false when memory ran out */
static char *dup_or_null(const char *text, bool *ok)
{
	char *copy = text ? strdup(text) : NULL;

	if (text && !copy)
		*ok = false;
	return copy;
}

struct conf_job_spec *conf_job_spec_dup(const struct conf_job_spec *s, const char *name)
{
	struct conf_job_spec *d = malloc(sizeof(*d));
	bool ok = true;

	if (!d)
		return NULL;
	*d = *s;
	d->name = dup_or_null(name ? name : s->name, &ok);
	d->queue = dup_or_null(s->queue, &ok);
	d->command = dup_or_null(s->command, &ok);
	d->checkpoint_dir = dup_or_null(s->checkpoint_dir, &ok);
	d->server_type = dup_or_null(s->server_type, &ok);
	d->controller = dup_or_null(s->controller, &ok);
	d->coordinator = dup_or_null(s->coordinator, &ok);
	d->controller_command = dup_or_null(s->controller_command, &ok);
	d->coordinator_command = dup_or_null(s->coordinator_command, &ok);
	d->after = NULL;
	if (s->after_count) {
		d->after = malloc(s->after_count * sizeof(*d->after));
		if (d->after)
			memcpy(d->after, s->after, s->after_count * sizeof(*d->after));
		else
			ok = false;
	}
	if (!ok) {
		conf_job_spec_free(d);
		return NULL;
	}
	return d;
}

/* Copy borrowed tree text into the spec; -ENOMEM is reported through ctx. */
static int take_string(const struct conf_ctx *ctx, const char *text, char **field)
{
	char *copy = strdup(text);

	if (!copy)
		return conf_err_nomem(ctx->err, ctx->file);
	free(*field);
	*field = copy;
	return 0;
}

static int read_name(const struct conf_ctx *ctx, const struct conf_node *root,
		     const char *default_name, struct conf_job_spec *s)
{
	const struct conf_node *n = conf_map_get(root, "name");
	char q1[CONF_QUOTE_MAX], q2[CONF_QUOTE_MAX];
	const char *name;
	int r;

	if (n) {
		r = conf_read_name(ctx, n, "name", "job name", &name);
		if (r < 0)
			return r;
		if (!conf_job_name_is_valid(name))
			return conf_fail(ctx, n,
					 "name: %s ends like a spec file; a job name may not end in "
					 "\".yaml\", \".yml\" or \".json\"",
					 conf_quote(name, q1, sizeof(q1)));
		if (default_name && strcmp(name, default_name) != 0)
			return conf_fail(ctx, n,
					 "name: %s does not match the file name %s; rename the "
					 "file or the job",
					 conf_quote(name, q1, sizeof(q1)),
					 conf_quote(default_name, q2, sizeof(q2)));
		return take_string(ctx, name, &s->name);
	}
	if (!default_name)
		return conf_fail(ctx, root, "the spec has no name; add `name: <job name>`");
	if (!conf_job_name_is_valid(default_name))
		return conf_fail(ctx, NULL,
				 "the file name %s is not a valid job name; rename the file to "
				 "1 to %d lowercase letters, digits, '.', '_' or '-', starting "
				 "with a letter or digit",
				 conf_quote(default_name, q1, sizeof(q1)), CONF_NAME_MAX);
	return take_string(ctx, default_name, &s->name);
}

static int read_npus(const struct conf_ctx *ctx, const struct conf_node *root,
		     struct conf_job_spec *s)
{
	static const char *const range_keys[] = { "min", "max", NULL };
	const struct conf_node *n = conf_map_get(root, "npus"), *nmin, *nmax;
	uint64_t v, lo, hi;
	int r;

	if (!n)
		return conf_fail(ctx, root,
				 "npus is missing; add `npus: <count>` with the number of NPUs "
				 "the job needs, e.g. `npus: 8`");
	if (n->kind == CONF_NODE_SCALAR) {
		r = conf_read_uint(ctx, n, "npus", 1, JOB_NPUS_MAX, "", &v);
		if (r < 0)
			return r;
		s->npus = s->npus_min = s->npus_max = (unsigned)v;
		return 0;
	}
	if (n->kind != CONF_NODE_MAP)
		return conf_fail(ctx, n,
				 "npus: expected a whole number or `{min: <count>, max: <count>}`, "
				 "not %s",
				 conf_node_kind_name(n));
	r = conf_check_keys(ctx, n, range_keys);
	if (r < 0)
		return r;
	nmin = conf_map_get(n, "min");
	nmax = conf_map_get(n, "max");
	if (!nmin || !nmax)
		return conf_fail(ctx, n,
				 "npus: give both min and max, e.g. `npus: {min: 8, max: 32}`");
	r = conf_read_uint(ctx, nmin, "npus.min", 1, JOB_NPUS_MAX, "", &lo);
	if (r < 0)
		return r;
	r = conf_read_uint(ctx, nmax, "npus.max", 1, JOB_NPUS_MAX, "", &hi);
	if (r < 0)
		return r;
	if (lo > hi)
		return conf_fail(ctx, nmin,
				 "npus: min (%llu) is larger than max (%llu); swap them or fix "
				 "one",
				 (unsigned long long)lo, (unsigned long long)hi);
	s->npus = s->npus_min = (unsigned)lo;
	s->npus_max = (unsigned)hi;
	return 0;
}

int conf_parse_priority(const char *text, unsigned *ret)
{
	uint64_t v = 0;

	for (size_t i = 0; i < sizeof(priority_words) / sizeof(priority_words[0]); i++) {
		if (strcasecmp(text, priority_words[i].word) == 0) {
			*ret = priority_words[i].priority;
			return 0;
		}
	}
	if (!*text || strspn(text, "0123456789") != strlen(text))
		return -EINVAL;
	for (const char *p = text; *p; p++)
		if ((v = v * 10 + (uint64_t)(*p - '0')) > JOB_PRIORITY_MAX)
			return -ERANGE;
	*ret = (unsigned)v;
	return 0;
}

static int read_priority(const struct conf_ctx *ctx, const struct conf_node *n,
			 struct conf_job_spec *s)
{
	static const char hint[] = " or one of: low, normal, high";
	char q[CONF_QUOTE_MAX];
	const char *p;
	unsigned named;
	uint64_t v;
	int r;

	if (n->kind == CONF_NODE_SCALAR) {
		/* a named priority; numbers are read below, with their position */
		if (strspn(n->text, "0123456789") == 0 &&
		    conf_parse_priority(n->text, &named) == 0) {
			s->priority = named;
			return 0;
		}
		p = n->text + (n->text[0] == '-');
		if (!*p || strspn(p, "0123456789") != strlen(p))
			return conf_fail(ctx, n,
					 "priority: %s is not a priority; use a whole number from "
					 "0 to %d%s",
					 conf_quote(n->text, q, sizeof(q)), JOB_PRIORITY_MAX, hint);
	}
	r = conf_read_uint(ctx, n, "priority", 0, JOB_PRIORITY_MAX, hint, &v);
	if (r < 0)
		return r;
	s->priority = (unsigned)v;
	return 0;
}

static int read_launch(const struct conf_ctx *ctx, const struct conf_node *n,
		       struct conf_job_spec *s)
{
	char q[CONF_QUOTE_MAX];
	const char *text;
	int r;

	r = conf_read_string(ctx, n, "launch", false, &text);
	if (r < 0)
		return r;
	if (strcmp(text, "msrun") == 0)
		s->launch = CONF_LAUNCH_MSRUN;
	else if (strcmp(text, "per-rank") == 0)
		s->launch = CONF_LAUNCH_PER_RANK;
	else
		return conf_fail(ctx, n,
				 "launch: %s is not a launch mode; use msrun (one msrun per "
				 "server) or per-rank (one process per NPU)",
				 conf_quote(text, q, sizeof(q)));
	return 0;
}

/* One entry of `after:`: "<job>", "afterok:<job>" or "afterany:<job>" (Slurm's words). */
static int read_after_one(const struct conf_ctx *ctx, const struct conf_node *n,
			  struct conf_job_after *a)
{
	char q[CONF_QUOTE_MAX];
	const char *text, *name;
	int r;

	r = conf_read_string(ctx, n, "after", false, &text);
	if (r < 0)
		return r;
	name = text;
	a->any = false;
	if (strncmp(text, "afterok:", 8) == 0) {
		name = text + 8;
	} else if (strncmp(text, "afterany:", 9) == 0) {
		name = text + 9;
		a->any = true;
	} else if (strchr(text, ':')) {
		return conf_fail(ctx, n,
				 "after: %s: a dependency is <job>, afterok:<job> (it must "
				 "complete; the default) or afterany:<job> (it must end, however)",
				 conf_quote(text, q, sizeof(q)));
	}
	if (!conf_job_name_is_valid(name))
		return conf_fail(ctx, n,
				 "after: %s is not a job name (lowercase letters, digits, '.', '_' "
				 "and '-', at most 63)",
				 conf_quote(name, q, sizeof(q)));
	snprintf(a->name, sizeof(a->name), "%s", name);
	return 0;
}

/* `after: [prep, afterany:cleanup]` or one entry: the jobs this one waits for. */
static int read_after(const struct conf_ctx *ctx, const struct conf_node *n,
		      struct conf_job_spec *s)
{
	int r;

	if (conf_node_is_null(n))
		return 0;
	if (n->kind == CONF_NODE_SCALAR) {
		s->after = calloc(1, sizeof(*s->after));
		if (!s->after)
			return conf_err_nomem(ctx->err, ctx->file);
		s->after_count = 1;
		return read_after_one(ctx, n, &s->after[0]);
	}
	r = conf_expect_seq(ctx, n, "after");
	if (r < 0)
		return r;
	if (n->count > CONF_JOB_AFTER_MAX)
		return conf_fail(ctx, n,
				 "after: %zu jobs; a job waits for at most %d (chain them: a job "
				 "that waits for some, this one for it)",
				 n->count, CONF_JOB_AFTER_MAX);
	if (!n->count)
		return 0;
	s->after = calloc(n->count, sizeof(*s->after));
	if (!s->after)
		return conf_err_nomem(ctx->err, ctx->file);
	for (size_t i = 0; i < n->count; i++) {
		struct conf_job_after *a = &s->after[s->after_count];

		r = read_after_one(ctx, n->items[i], a);
		if (r < 0)
			return r;
		for (unsigned k = 0; k < s->after_count; k++)
			if (strcmp(s->after[k].name, a->name) == 0)
				return conf_fail(ctx, n->items[i],
						 "after: job %s is named twice; name each job once",
						 a->name);
		s->after_count++;
	}
	return 0;
}

/* `array: 0-99%8`: a job per index (conf_job_array_parse()); a training job's only. */
static int read_array(const struct conf_ctx *ctx, const struct conf_node *n,
		      struct conf_job_spec *s)
{
	char q[CONF_QUOTE_MAX], why[256];
	const char *text;
	int r;

	if (conf_node_is_null(n))
		return 0;
	r = conf_read_string(ctx, n, "array", false, &text);
	if (r < 0)
		return r;
	if (conf_job_array_parse(text, &s->array, why, sizeof(why)) < 0)
		return conf_fail(ctx, n, "array: %s: %s", conf_quote(text, q, sizeof(q)), why);
	if (s->kind == CONF_JOB_SERVICE)
		return conf_fail(ctx, n, "array: a service has replicas, not an array; give "
					 "replicas: N instead");
	if (s->name && strlen(s->name) > CONF_ARRAY_NAME_MAX)
		return conf_fail(ctx, n, "array: an array's name has at most %d characters (its "
					 "elements are named <name>.<index>); \"%s\" has %zu",
				 CONF_ARRAY_NAME_MAX, s->name, strlen(s->name));
	return 0;
}

static int read_checkpoint_dir(const struct conf_ctx *ctx, const struct conf_node *n,
			       struct conf_job_spec *s)
{
	char q[CONF_QUOTE_MAX];
	const char *text;
	int r;

	r = conf_read_string(ctx, n, "checkpoint_dir", false, &text);
	if (r < 0)
		return r;
	if (text[0] != '/')
		return conf_fail(ctx, n,
				 "checkpoint_dir: %s is a relative path; use an absolute path "
				 "(starting with \"/\") that every server can reach",
				 conf_quote(text, q, sizeof(q)));
	if (strlen(text) > JOB_PATH_MAX)
		return conf_fail(ctx, n,
				 "checkpoint_dir: the path is longer than %d bytes; use a shorter "
				 "path",
				 JOB_PATH_MAX);
	return take_string(ctx, text, &s->checkpoint_dir);
}

static int read_time_limit(const struct conf_ctx *ctx, const struct conf_node *n,
			   struct conf_job_spec *s)
{
	char q[CONF_QUOTE_MAX];
	uint64_t v = 0;
	int r;

	if (n->kind != CONF_NODE_SCALAR)
		return conf_fail(ctx, n, "time_limit: expected a duration such as \"2h\", not %s",
				 conf_node_kind_name(n));
	r = conf_parse_duration(n->text, &v);
	if (r == -EINVAL)
		return conf_fail(ctx, n,
				 "time_limit: %s is not a duration; use whole numbers with the "
				 "units d, h, m or s, such as \"90m\", \"2h\", \"1d\" or \"1h30m\"",
				 conf_quote(n->text, q, sizeof(q)));
	/* the scheduler counts in microseconds: a longer limit would wrap to a short one */
	if (r < 0 || v > CONF_TIME_LIMIT_MAX_SEC)
		return conf_fail(ctx, n,
				 "time_limit: %s is too long; the maximum is 365d (%u seconds)",
				 conf_quote(n->text, q, sizeof(q)), CONF_TIME_LIMIT_MAX_SEC);
	s->time_limit_sec = v;
	return 0;
}

/*
 * parallel: the sizes of the job's parallel dimensions. Ranks are numbered tp innermost,
 * then cp, dp (ep inside it) and pp outermost (sched_comm.h), so tp*cp*pp must divide
 * every size the job may run at, dp is what is left and ep must divide it.
 */
static int read_parallel(const struct conf_ctx *ctx, const struct conf_node *n,
			 struct conf_job_spec *s)
{
	static const char *const keys[] = { "tp", "cp", "ep", "dp", "pp", NULL };
	static const char *const names[] = { "parallel.tp", "parallel.cp", "parallel.ep",
					     "parallel.dp", "parallel.pp" };
	const struct conf_node *nodes[5];
	unsigned *fields[5] = { &s->tp, &s->cp, &s->ep, &s->dp, &s->pp };
	uint64_t model, ep;
	size_t i;
	int r;

	r = conf_expect_map(ctx, n, "parallel");
	if (r < 0)
		return r;
	r = conf_check_keys(ctx, n, keys);
	if (r < 0)
		return r;
	for (i = 0; i < 5; i++) {
		uint64_t v;

		nodes[i] = conf_map_get(n, keys[i]);
		if (!nodes[i])
			continue;
		r = conf_read_uint(ctx, nodes[i], names[i], 1, JOB_NPUS_MAX, "", &v);
		if (r < 0)
			return r;
		*fields[i] = (unsigned)v;
	}
	model = (uint64_t)(s->tp ? s->tp : 1) * (s->cp ? s->cp : 1) * (s->pp ? s->pp : 1);
	ep = s->ep ? s->ep : 1;
	/*
	 * dp given with pp (else tp) left out: the left-out size is what the others leave,
	 * as MindSpore's device_num = data x model x pipeline reads. Specs of the
	 * tp/pp/dp era were accepted so, and saved records of them must load.
	 */
	if (s->dp && s->npus_min == s->npus_max && (!s->pp || !s->tp) &&
	    s->npus % (model * s->dp) == 0 && s->npus / (model * s->dp) > 1) {
		unsigned rest = (unsigned)(s->npus / (model * s->dp));

		if (!s->pp)
			s->pp = rest;
		else
			s->tp = rest;
		model *= rest;
	}

	if (s->npus_min != s->npus_max) {
		uint64_t dp_min, dp_max;

		if (nodes[3])
			return conf_fail(ctx, nodes[3],
					 "parallel.dp: cannot be fixed when npus is a range; "
					 "remove dp (it follows the number of NPUs)");
		if (s->npus_min % model || s->npus_max % model)
			return conf_fail(ctx, n,
					 "parallel: tp*cp*pp (%llu) must divide both npus.min (%u) "
					 "and npus.max (%u); choose tp, cp and pp whose product "
					 "divides both",
					 (unsigned long long)model, s->npus_min, s->npus_max);
		dp_min = s->npus_min / model;
		dp_max = s->npus_max / model;
		if (dp_min % ep || dp_max % ep)
			return conf_fail(ctx, nodes[2],
					 "parallel.ep: %llu must divide dp at both ends of npus "
					 "(dp = npus / (tp*cp*pp): %llu at npus.min %u, %llu at "
					 "npus.max %u); choose an ep that divides both, or npus "
					 "bounds that are multiples of tp*cp*pp*ep (%llu)",
					 (unsigned long long)ep, (unsigned long long)dp_min,
					 s->npus_min, (unsigned long long)dp_max, s->npus_max,
					 (unsigned long long)(model * ep));
		return 0;
	}
	if (s->npus % model)
		return conf_fail(ctx, n,
				 "parallel: tp*cp*pp (%llu) must divide npus (%u); choose tp, cp "
				 "and pp whose product divides %u",
				 (unsigned long long)model, s->npus, s->npus);
	if (s->dp && s->dp != s->npus / model)
		return conf_fail(ctx, nodes[3],
				 "parallel.dp: %u does not match npus / (tp*cp*pp) = %u / %llu "
				 "= %llu; set dp to %llu or leave it out",
				 s->dp, s->npus, (unsigned long long)model,
				 (unsigned long long)(s->npus / model),
				 (unsigned long long)(s->npus / model));
	if ((s->npus / model) % ep)
		return conf_fail(ctx, nodes[2],
				 "parallel.ep: %llu must divide dp (%llu = npus / (tp*cp*pp)); "
				 "expert-parallel groups are made of dp ranks: choose an ep "
				 "that divides %llu",
				 (unsigned long long)ep, (unsigned long long)(s->npus / model),
				 (unsigned long long)(s->npus / model));
	return 0;
}

/* recovery: the ladder; a dying-gasp save needs a place to write its checkpoint */
static int read_recovery(const struct conf_ctx *ctx, const struct conf_node *root,
			 struct conf_job_spec *s)
{
	const struct conf_node *n = conf_map_get(root, "recovery");
	int r;

	s->recovery[0] = CONF_RECOVERY_JOB;
	s->recovery_count = 1;
	if (!n)
		return 0;
	r = conf_read_recovery_list(ctx, n, "recovery", s->recovery, &s->recovery_count);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->recovery_count; i++)
		if (s->recovery[i] == CONF_RECOVERY_DUMP && !s->checkpoint_dir)
			return conf_fail(ctx, n,
					 "recovery: dump saves a checkpoint into checkpoint_dir, "
					 "and this spec has none; add checkpoint_dir: "
					 "/data/ckpt/%s (an absolute path the job's servers share)",
					 s->name);
	return 0;
}

/*
 * disaggregated.<role> (controller or coordinator): a server's name, or
 * `{server: <name>, command: <text>}` when ascendfs is to run the role's process there.
 */
static int read_role(const struct conf_ctx *ctx, const struct conf_node *n, const char *role,
		     char **ret_server, char **ret_command)
{
	static const char *const keys[] = { "server", "command", NULL };
	const struct conf_node *k;
	const char *text;
	char key[48];
	int r;

	snprintf(key, sizeof(key), "disaggregated.%s", role);
	if (n->kind != CONF_NODE_MAP) {
		r = conf_read_name(ctx, n, key, "server name", &text);
		return r < 0 ? r : take_string(ctx, text, ret_server);
	}
	r = conf_check_keys(ctx, n, keys);
	if (r < 0)
		return r;
	k = conf_map_get(n, "server");
	if (!k)
		return conf_fail(ctx, n, "%s.server is missing: name the server MindIE MS's %s "
				 "runs on, e.g. `server: infer-01`", key, role);
	snprintf(key, sizeof(key), "disaggregated.%s.server", role);
	r = conf_read_name(ctx, k, key, "server name", &text);
	if (r == 0)
		r = take_string(ctx, text, ret_server);
	k = conf_map_get(n, "command");
	if (r < 0 || !k || conf_node_is_null(k))
		return r;
	snprintf(key, sizeof(key), "disaggregated.%s.command", role);
	r = conf_read_string(ctx, k, key, true, &text);
	return r < 0 ? r : take_string(ctx, text, ret_command);
}

/*
 * `disaggregated: {prefill: P, decode: D, controller: <role>, coordinator: <role>}`:
 * MindIE Motor's prefill-decode disaggregation, each role read by read_role(). replicas
 * is P + D (given, it must be).
 */
static int read_disaggregated(const struct conf_ctx *ctx, const struct conf_node *root,
			      const struct conf_node *n, struct conf_job_spec *s)
{
	static const char *const keys[] = { "prefill", "decode", "controller", "coordinator",
					    NULL };
	const struct conf_node *r_node = conf_map_get(root, "replicas");
	unsigned *counts[2] = { &s->prefill, &s->decode };
	char **servers[2] = { &s->controller, &s->coordinator };
	char **commands[2] = { &s->controller_command, &s->coordinator_command };
	uint64_t v;
	int r;

	r = conf_expect_map(ctx, n, "disaggregated");
	if (r == 0)
		r = conf_check_keys(ctx, n, keys);
	for (int i = 0; r == 0 && i < 2; i++) {
		const struct conf_node *k = conf_map_get(n, keys[i]);
		char key[32];

		snprintf(key, sizeof(key), "disaggregated.%s", keys[i]);
		if (!k)
			return conf_fail(ctx, n, "%s is missing: give how many %s instances serve, "
					 "e.g. `%s: 1`", key, keys[i], keys[i]);
		r = conf_read_uint(ctx, k, key, 1, CONF_SERVICE_REPLICAS_MAX - 1, "", &v);
		*counts[i] = (unsigned)v;
	}
	for (int i = 0; r == 0 && i < 2; i++) {
		const struct conf_node *k = conf_map_get(n, keys[2 + i]);

		if (!k)
			return conf_fail(ctx, n, "disaggregated.%s is missing: name the server "
					 "MindIE MS's %s runs on, e.g. `%s: infer-01`", keys[2 + i],
					 keys[2 + i], keys[2 + i]);
		r = read_role(ctx, k, keys[2 + i], servers[i], commands[i]);
	}
	if (r < 0)
		return r;
	if (s->prefill + s->decode > CONF_SERVICE_REPLICAS_MAX)
		return conf_fail(ctx, n, "disaggregated: %u prefill and %u decode instances are "
				 "more than a service has (%u); give at most %u in all", s->prefill,
				 s->decode, CONF_SERVICE_REPLICAS_MAX, CONF_SERVICE_REPLICAS_MAX);
	if (r_node && s->replicas != s->prefill + s->decode)
		return conf_fail(ctx, r_node, "replicas: %u, but disaggregated asks for %u prefill "
				 "and %u decode instances; leave replicas out", s->replicas,
				 s->prefill, s->decode);
	s->replicas = s->prefill + s->decode;
	return 0;
}

/*
 * kind, and what only a service has: replicas, port, preemptible, max_unavailable and
 * disaggregated. Read before the rest, which a service reads differently (max_restarts,
 * time_limit, npus).
 */
static int read_kind(const struct conf_ctx *ctx, const struct conf_node *root,
		     struct conf_job_spec *s)
{
	const struct conf_node *n = conf_map_get(root, "kind");
	char q[CONF_QUOTE_MAX];
	const char *text;
	uint64_t v;
	int r;

	s->kind = CONF_JOB_TRAINING;
	s->preemptible = true;
	if (n) {
		r = conf_read_string(ctx, n, "kind", false, &text);
		if (r < 0)
			return r;
		if (strcmp(text, "service") == 0)
			s->kind = CONF_JOB_SERVICE;
		else if (strcmp(text, "training") != 0)
			return conf_fail(ctx, n,
					 "kind: %s is not a kind of job; use training (runs to "
					 "its end, the default) or service (serves until "
					 "cancelled, e.g. MindIE)",
					 conf_quote(text, q, sizeof(q)));
	}
	if (s->kind != CONF_JOB_SERVICE) {
		static const char *const service_only[] = { "replicas", "port", "preemptible",
							    "max_unavailable", "disaggregated" };

		for (size_t i = 0; i < sizeof(service_only) / sizeof(service_only[0]); i++) {
			n = conf_map_get(root, service_only[i]);
			if (n)
				return conf_fail(ctx, n,
						 "%s: only a service has %s; add `kind: service`, "
						 "or leave %s out",
						 service_only[i], service_only[i], service_only[i]);
		}
		return 0;
	}
	s->replicas = 1;
	n = conf_map_get(root, "replicas");
	if (n) {
		/* 0: it serves with no instance until scaled up (Kubernetes' replicas: 0) */
		r = conf_read_uint(ctx, n, "replicas", 0, CONF_SERVICE_REPLICAS_MAX, "", &v);
		if (r < 0)
			return r;
		s->replicas = (unsigned)v;
	}
	s->port = CONF_SERVICE_PORT_DEFAULT;
	n = conf_map_get(root, "port");
	if (n) {
		/* MindIE Server takes ports from 1024 (ServerConfig.port) */
		r = conf_read_uint(ctx, n, "port", 1024, 65535, "", &v);
		if (r < 0)
			return r;
		s->port = (unsigned)v;
	}
	/* a service serves users: a training job's preemption passes it by unless it says */
	s->preemptible = false;
	n = conf_map_get(root, "preemptible");
	if (n) {
		r = conf_read_bool(ctx, n, "preemptible", &s->preemptible);
		if (r < 0)
			return r;
	}
	s->max_unavailable = CONF_SERVICE_MAX_UNAVAILABLE_DEFAULT;
	n = conf_map_get(root, "max_unavailable");
	if (n) {
		r = conf_read_uint(ctx, n, "max_unavailable", 0, CONF_SERVICE_REPLICAS_MAX, "",
				   &v);
		if (r < 0)
			return r;
		s->max_unavailable = (unsigned)v;
	}
	n = conf_map_get(root, "disaggregated");
	if (n && !conf_node_is_null(n))
		return read_disaggregated(ctx, root, n, s);
	return 0;
}

/* What a service may not have, once the whole spec is read. */
static int check_service(const struct conf_ctx *ctx, const struct conf_node *root,
			 struct conf_job_spec *s)
{
	const struct conf_node *n;

	/* the name's length is the cluster's check (sched_service_check()): an instance's
	 * copy of this spec has a longer name of its own */
	n = conf_map_get(root, "npus");
	if (s->npus_min != s->npus_max)
		return conf_fail(ctx, n,
				 "npus: a service's instances have one size; give a whole "
				 "number, e.g. `npus: 16`, and scale with replicas");
	if (s->npus > CONF_SERVICE_NPUS_MAX)
		return conf_fail(ctx, n,
				 "npus: %u is more than a MindIE instance can span (%u NPUs on "
				 "at most 4 servers); give %u or fewer and serve more with "
				 "replicas",
				 s->npus, CONF_SERVICE_NPUS_MAX, CONF_SERVICE_NPUS_MAX);
	/* a rendered service spec says `max_restarts: null`: read back as it was */
	n = conf_map_get(root, "max_restarts");
	if (n && !conf_node_is_null(n))
		return conf_fail(ctx, n,
				 "max_restarts: a service's instances are started again "
				 "whenever they end, until the service is cancelled; leave "
				 "max_restarts out");
	s->max_restarts = CONF_RESTARTS_UNLIMITED;
	return 0;
}

static int read_spec(const struct conf_ctx *ctx, const struct conf_node *root,
		     const char *default_name, struct conf_job_spec *s)
{
	const struct conf_node *n;
	const char *text;
	uint64_t v;
	int r;

	r = conf_check_keys(ctx, root, spec_keys);
	if (r < 0)
		return r;
	r = read_name(ctx, root, default_name, s);
	if (r < 0)
		return r;
	r = read_npus(ctx, root, s);
	if (r < 0)
		return r;
	r = read_kind(ctx, root, s);
	if (r < 0)
		return r;

	n = conf_map_get(root, "queue");
	r = n ? conf_read_name(ctx, n, "queue", "queue name", &text) : (text = "default", 0);
	if (r < 0)
		return r;
	r = take_string(ctx, text, &s->queue);
	if (r < 0)
		return r;

	s->priority = 500;
	n = conf_map_get(root, "priority");
	if (n && (r = read_priority(ctx, n, s)) < 0)
		return r;

	n = conf_map_get(root, "command");
	if (n) {
		r = conf_read_string(ctx, n, "command", true, &text);
		if (r < 0)
			return r;
		r = take_string(ctx, text, &s->command);
		if (r < 0)
			return r;
	}

	s->launch = CONF_LAUNCH_MSRUN;
	n = conf_map_get(root, "launch");
	if (n && (r = read_launch(ctx, n, s)) < 0)
		return r;

	n = conf_map_get(root, "checkpoint_dir");
	if (n && (r = read_checkpoint_dir(ctx, n, s)) < 0)
		return r;

	s->max_restarts = 3;
	n = conf_map_get(root, "max_restarts");
	if (s->kind == CONF_JOB_SERVICE) {
		r = check_service(ctx, root, s);
		if (r < 0)
			return r;
	} else if (n) {
		r = conf_read_uint(ctx, n, "max_restarts", 0, JOB_RESTARTS_MAX, "", &v);
		if (r < 0)
			return r;
		s->max_restarts = (unsigned)v;
	}

	n = conf_map_get(root, "time_limit");
	if (n && (r = read_time_limit(ctx, n, s)) < 0)
		return r;

	n = conf_map_get(root, "parallel");
	if (n && (r = read_parallel(ctx, n, s)) < 0)
		return r;

	n = conf_map_get(root, "after");
	if (n && (r = read_after(ctx, n, s)) < 0)
		return r;
	if (s->after_count && s->kind == CONF_JOB_SERVICE)
		return conf_fail(ctx, n,
				 "after: a service starts when it is submitted; submit it when "
				 "the job ends instead (ascend-run job.yaml && cp service.yaml "
				 "jobs/)");
	if (s->name)
		for (unsigned k = 0; k < s->after_count; k++)
			if (strcmp(s->after[k].name, s->name) == 0)
				return conf_fail(ctx, n, "after: a job cannot wait for itself (%s)",
						 s->name);

	n = conf_map_get(root, "array");
	if (n && (r = read_array(ctx, n, s)) < 0)
		return r;

	n = conf_map_get(root, "server_type");
	if (n) {
		const struct conf_server_type *t;

		r = conf_read_server_type(ctx, n, "server_type", &t);
		if (r < 0)
			return r;
		r = take_string(ctx, t->name, &s->server_type);
		if (r < 0)
			return r;
	}
	return read_recovery(ctx, root, s);
}

int conf_job_spec_parse(const char *buf, size_t len, const char *file, const char *default_name,
			struct conf_job_spec **ret, struct conf_error *err)
{
	struct conf_ctx ctx = { .file = file, .err = err };
	struct conf_node *root = NULL;
	struct conf_job_spec *s;
	int r;

	r = conf_doc_parse(buf, len, file, "spec", CONF_SPEC_MAX_BYTES, &root, err);
	if (r < 0)
		return r;
	if (conf_node_is_null(root)) {
		r = conf_fail(&ctx, NULL, "the spec is empty; it needs at least `npus`");
		goto free_root;
	}
	if (root->kind != CONF_NODE_MAP) {
		r = conf_fail(&ctx, root,
			      "the spec must be a mapping of \"key: value\" lines such as "
			      "\"npus: 8\", not %s",
			      conf_node_kind_name(root));
		goto free_root;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = conf_err_nomem(err, file);
		goto free_root;
	}
	r = read_spec(&ctx, root, default_name, s);
	if (r < 0)
		goto free_spec;
	*ret = s;
	conf_node_free(root);
	return 0;

free_spec:
	conf_job_spec_free(s);
free_root:
	conf_node_free(root);
	return r;
}

char *conf_job_spec_where(const char *text, size_t text_len, const char *file,
			  const char *reason, char *buf, size_t len)
{
	struct conf_node *root = NULL, *n;
	struct conf_error err;
	char key[CONF_NAME_MAX + 1];
	size_t k = strspn(reason, "abcdefghijklmnopqrstuvwxyz_.");
	unsigned line = 0, column = 0;

	/* the key path the reason begins with, then the value it names, level by level */
	if (k > 0 && k < sizeof(key) && (reason[k] == ':' || reason[k] == ' ') &&
	    conf_doc_parse(text, text_len, file, "spec", CONF_SPEC_MAX_BYTES, &root, &err) == 0) {
		char *save = NULL, *part;

		memcpy(key, reason, k);
		key[k] = '\0';
		n = root;
		for (part = strtok_r(key, ".", &save); part && n; part = strtok_r(NULL, ".", &save))
			n = n->kind == CONF_NODE_MAP ? conf_map_get(n, part) : NULL;
		if (n && n != root) {
			line = n->line;
			column = n->column;
		}
		conf_node_free(root);
	}
	if (len == 0)
		return buf;
	if (line)
		snprintf(buf, len, "%s:%u:%u: %s", file, line, column, reason);
	else
		snprintf(buf, len, "%s: %s", file, reason);
	return buf;
}

/* disaggregated.<role>: the server alone, or {server, command} when ascendfs runs it */
static void out_role(struct conf_out *o, const char *role, const char *server,
		     const char *command)
{
	conf_out_key(o, role);
	if (!command) {
		conf_out_str(o, server);
		return;
	}
	conf_out_map_start(o, false);
	conf_out_key(o, "server");
	conf_out_str(o, server);
	conf_out_key(o, "command");
	conf_out_str(o, command);
	conf_out_map_end(o);
}

static int render_parallel_hint(struct conf_out *o, const char *key, unsigned v)
{
	int r = conf_out_key(o, key);

	if (r < 0)
		return r;
	return v ? conf_out_uint(o, v) : conf_out_null(o);
}

int conf_job_spec_render_yaml(const struct conf_job_spec *s, char **ret_buf, size_t *ret_len)
{
	struct conf_out *o = conf_out_new();
	char duration[32];

	if (!o)
		return -ENOMEM;
	/* Emitter calls are no-ops after a failure; conf_out_finish() reports it. */
	conf_out_map_start(o, false);
	conf_out_key(o, "name");
	conf_out_str_or_null(o, s->name);
	conf_out_key(o, "npus");
	if (s->npus_min != s->npus_max) {
		conf_out_map_start(o, true);
		conf_out_key(o, "min");
		conf_out_uint(o, s->npus_min);
		conf_out_key(o, "max");
		conf_out_uint(o, s->npus_max);
		conf_out_map_end(o);
	} else {
		conf_out_uint(o, s->npus);
	}
	conf_out_key(o, "queue");
	conf_out_str_or_null(o, s->queue);
	conf_out_key(o, "priority");
	conf_out_uint(o, s->priority);
	conf_out_key(o, "command");
	conf_out_str_or_null(o, s->command);
	conf_out_key(o, "launch");
	conf_out_str(o, s->launch == CONF_LAUNCH_PER_RANK ? "per-rank" : "msrun");
	conf_out_key(o, "checkpoint_dir");
	conf_out_str_or_null(o, s->checkpoint_dir);
	conf_out_key(o, "max_restarts");
	if (s->kind == CONF_JOB_SERVICE)
		conf_out_null(o); /* none: started again until cancelled */
	else
		conf_out_uint(o, s->max_restarts);
	conf_out_key(o, "time_limit");
	if (s->time_limit_sec)
		conf_out_str(o, conf_format_duration(s->time_limit_sec, duration,
						     sizeof(duration)));
	else
		conf_out_null(o);
	conf_out_key(o, "parallel");
	conf_out_map_start(o, false);
	/* in rank order, innermost first */
	render_parallel_hint(o, "tp", s->tp);
	render_parallel_hint(o, "cp", s->cp);
	render_parallel_hint(o, "ep", s->ep);
	render_parallel_hint(o, "dp", s->dp);
	render_parallel_hint(o, "pp", s->pp);
	conf_out_map_end(o);
	conf_out_key(o, "server_type");
	conf_out_str_or_null(o, s->server_type);
	conf_out_key(o, "recovery");
	conf_out_seq_start(o, true);
	for (size_t i = 0; i < s->recovery_count; i++)
		conf_out_str(o, conf_recovery_name(s->recovery[i]));
	if (!s->recovery_count) /* a spec built field by field: the default */
		conf_out_str(o, conf_recovery_name(CONF_RECOVERY_JOB));
	conf_out_seq_end(o);
	if (s->after_count) { /* written only when given: other specs read as before */
		conf_out_key(o, "after");
		conf_out_seq_start(o, true);
		for (unsigned k = 0; k < s->after_count; k++) {
			char entry[CONF_NAME_MAX + 16];

			snprintf(entry, sizeof(entry), "%s:%s",
				 s->after[k].any ? "afterany" : "afterok", s->after[k].name);
			conf_out_str(o, entry);
		}
		conf_out_seq_end(o);
	}
	if (s->array.count) { /* written only when given, as after: */
		char text[CONF_ARRAY_TEXT_MAX];

		conf_out_key(o, "array");
		conf_out_str(o, conf_job_array_text(&s->array, true, text, sizeof(text)));
	}
	/* a training job's spec reads as it did before kinds existed */
	if (s->kind == CONF_JOB_SERVICE) {
		conf_out_key(o, "kind");
		conf_out_str(o, "service");
		/* the disaggregated layout implies replicas (prefill + decode): written too,
		 * an instance's copy (one instance) would not read back */
		if (!s->prefill) {
			conf_out_key(o, "replicas");
			conf_out_uint(o, s->replicas);
		}
		conf_out_key(o, "port");
		conf_out_uint(o, s->port);
		conf_out_key(o, "preemptible");
		conf_out_bool(o, s->preemptible);
		conf_out_key(o, "max_unavailable");
		conf_out_uint(o, s->max_unavailable);
		conf_out_key(o, "disaggregated");
		if (s->prefill) {
			conf_out_map_start(o, false);
			conf_out_key(o, "prefill");
			conf_out_uint(o, s->prefill);
			conf_out_key(o, "decode");
			conf_out_uint(o, s->decode);
			out_role(o, "controller", s->controller, s->controller_command);
			out_role(o, "coordinator", s->coordinator, s->coordinator_command);
			conf_out_map_end(o);
		} else {
			conf_out_null(o);
		}
	}
	conf_out_map_end(o);
	return conf_out_finish(o, ret_buf, ret_len);
}
