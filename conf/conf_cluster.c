/* SPDX-License-Identifier: MIT */
/* The cluster configuration: ascend_cluster.yaml (design.md §7). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_internal.h"

#define QUEUE_PRIORITY_MAX 1000
#define QUEUE_WEIGHT_MAX 1000
#define QUOTA_NPUS_MAX ((uint64_t)CONF_SERVERS_MAX * CONF_SERVER_NPUS_MAX)
#define PREEMPTIONS_PER_JOB_MAX 1000000u /* a bound larger than this is no bound */
#define HEARTBEAT_TIMEOUT_MAX_SEC 86400
#define FAULT_CHECK_INTERVAL_MAX_SEC 3600
#define FAULT_HOLD_MAX_SEC 86400
#define FAULT_ESCALATE_COUNT_MAX 1000
#define FAULT_ESCALATE_WINDOW_MAX_SEC (7 * 86400)
#define STOP_GRACE_MAX_SEC 3600
#define ELASTIC_GROW_DELAY_MAX_SEC (7 * 86400)
#define PRIORITY_MAX_AGE_DEFAULT_SEC (7 * 86400) /* Slurm's PriorityMaxAge default, 7-0 */
#define PRIORITY_MAX_AGE_MAX_SEC (365 * 86400)
#define PREEMPT_EXEMPT_MAX_SEC (7 * 86400)
#define MAX_JOB_COUNT_MAX 10000000
#define MAX_UPLOADS_PER_USER_MAX 1000000
#define EVENT_HISTORY_MIN 16
#define EVENT_HISTORY_MAX 1048576
#define ACCOUNTING_HISTORY_MIN 16
#define ACCOUNTING_HISTORY_MAX 1048576
#define JOB_LOG_MAX_MIB_MAX 4096
#define HCCL_EXEC_TIMEOUT_MAX_SEC 17340 /* CANN's documented upper bound */
#define GROUP_NAME_MAX 32
/* job caps (struct conf_queue): a user's job priority cap is at least the priority of a
 * spec that sets none, or every such spec of a user would be refused */
#define JOB_PRIORITY_DEFAULT 500
#define JOB_PRIORITY_CAP_DEFAULT 900 /* "high": users keep the three named priorities */
#define TIME_LIMIT_CAP_MAX_SEC CONF_TIME_LIMIT_MAX_SEC
#define IFNAME_MAX 15 /* IFNAMSIZ - 1 */
#define RECOVERY_TIMEOUT_MAX_SEC 3600

static const char *const top_keys[] = { "cluster", "resource", "hccl", "queues", "servers",
					"state", NULL };
static const char *const cluster_keys[] = {
	"name", "scheduler_ip", "scheduler_port", "enable_dynamic_network",
	"enable_fault_recovery", "fault_check_interval", "heartbeat_timeout",
	"topology_aware_schedule", "spine_oversubscription", "require_agent", "fault_hold_time", "fault_escalate_count",
	"fault_escalate_window", "stop_grace_period", "max_job_count", "event_history",
	"accounting_history", "job_log_max_mib",
	"operator_group", "max_job_count_per_user", "reserved_job_count",
	"max_uploads_per_user", "recovery_strategies", "recovery_timeout", "retry_fault_codes",
	NULL,
};
static const char *const resource_keys[] = {
	"total_npu", "allow_mix_task", "enable_quota_limit", "backfill", "preemption",
	"max_preemptions_per_job", "preempt_exempt_time", "priority_weight_age",
	"priority_max_age",
	"elastic_grow_delay", "max_priority", "max_npus", "max_time_limit", "default_time_limit",
	"max_submit_jobs_per_user", "max_submit_jobs", NULL,
};
static const char *const hccl_keys[] = {
	"hccl_log_level", "hccl_connect_timeout", "hccl_exec_timeout", "hccl_if_ip",
	"hccl_socket_ifname", NULL,
};
static const char *const queue_keys[] = {
	"name", "quota_npus", "priority", "weight", "may_borrow", "groups", "max_priority",
	"max_npus", "max_time_limit", "default_time_limit", "max_submit_jobs_per_user",
	"max_submit_jobs", NULL,
};
static const char *const server_keys[] = {
	"name", "host_ip", "type", "switch", "super_pod", "device_ips", NULL,
};
static const char *const log_levels[] = { "debug", "info", "warning", "error", NULL };

static void queue_defaults(struct conf_queue *q, const struct conf_cluster *c);

static void queue_release(struct conf_queue *q)
{
	size_t i;

	free(q->name);
	for (i = 0; i < q->group_count; i++)
		free(q->groups[i]);
	free(q->groups);
}

void conf_cluster_free(struct conf_cluster *c)
{
	size_t i, d;

	if (!c)
		return;
	for (i = 0; i < c->server_count; i++) {
		struct conf_server *s = &c->servers[i];

		free(s->name);
		free(s->host_ip);
		free(s->leaf_switch);
		free(s->super_pod);
		for (d = 0; d < CONF_SERVER_NPUS_MAX; d++)
			free(s->device_ips[d]);
	}
	free(c->servers);
	for (i = 0; i < c->queue_count; i++)
		queue_release(&c->queues[i]);
	free(c->queues);
	free(c->source);
	free(c->scheduler_ip);
	free(c->name);
	free(c->operator_group);
	free(c->retry_fault_codes);
	free(c->hccl_log_level);
	free(c->hccl_if_ip);
	free(c->hccl_socket_ifname);
	free(c->etcd_servers);
	free(c->etcd_prefix);
	free(c);
}

const struct conf_queue *conf_cluster_find_queue(const struct conf_cluster *c, const char *name)
{
	size_t i;

	if (!c || !name)
		return NULL;
	for (i = 0; i < c->queue_count; i++)
		if (strcmp(c->queues[i].name, name) == 0)
			return &c->queues[i];
	return NULL;
}

int conf_cluster_add_queue(struct conf_cluster *c, const char *name)
{
	struct conf_queue *queues, *q;

	if (!conf_name_is_valid(name))
		return -EINVAL;
	if (conf_cluster_find_queue(c, name))
		return -EEXIST;
	queues = realloc(c->queues, (c->queue_count + 1) * sizeof(*queues));
	if (!queues)
		return -ENOMEM;
	c->queues = queues;
	q = &queues[c->queue_count];
	memset(q, 0, sizeof(*q));
	queue_defaults(q, c);
	q->name = strdup(name);
	q->groups = calloc(1, sizeof(*q->groups));
	if (!q->name || !q->groups) {
		queue_release(q);
		return -ENOMEM;
	}
	c->queue_count++;
	return 0;
}

/* Replace *field with a copy of @text. */
static int set_string(const struct conf_ctx *ctx, char **field, const char *text)
{
	char *copy = strdup(text);

	if (!copy)
		return conf_err_nomem(ctx->err, ctx->file);
	free(*field);
	*field = copy;
	return 0;
}

static int opt_bool(const struct conf_ctx *ctx, const struct conf_node *map, const char *key,
		    bool *field)
{
	const struct conf_node *n = conf_map_get(map, key);

	return n ? conf_read_bool(ctx, n, key, field) : 0;
}

static int opt_uint(const struct conf_ctx *ctx, const struct conf_node *map, const char *key,
		    uint64_t min, uint64_t max, unsigned *field)
{
	const struct conf_node *n = conf_map_get(map, key);
	uint64_t v;
	int r;

	if (!n)
		return 0;
	r = conf_read_uint(ctx, n, key, min, max, "", &v);
	if (r < 0)
		return r;
	*field = (unsigned)v;
	return 0;
}

/*
 * An oversubscription ratio, "2:1", "1.5:1" or a bare number ("2", "1.5"), 1 to 64 with
 * at most two decimals, in hundredths (a switch vendor's data sheet and a network
 * design state it so: downlink over uplink bandwidth).
 */
static int opt_oversub(const struct conf_ctx *ctx, const struct conf_node *map, const char *key,
		       unsigned *field)
{
	const struct conf_node *n = conf_map_get(map, key);
	char q[CONF_QUOTE_MAX];
	unsigned whole = 0, frac = 0, digits = 0, scale = 10;
	const char *p;

	if (!n)
		return 0;
	p = n->kind == CONF_NODE_SCALAR ? n->text : "";
	if (!(*p >= '1' && *p <= '9'))
		goto bad;
	while (*p >= '0' && *p <= '9' && whole <= 64)
		whole = whole * 10 + (unsigned)(*p++ - '0');
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9' && digits < 2) {
			frac += (unsigned)(*p++ - '0') * scale;
			scale /= 10;
			digits++;
		}
		if (!digits)
			goto bad;
	}
	if (strcmp(p, ":1") != 0 && *p)
		goto bad;
	if (whole < 1 || whole * 100 + frac > 6400)
		goto bad;
	*field = whole * 100 + frac;
	return 0;
bad:
	return conf_fail(ctx, n, "%s: %s is not an oversubscription ratio; write it as \"2:1\" "
			 "or 2 (downlink over uplink bandwidth of a leaf switch, 1 to 64, at most "
			 "two decimals; 1 = non-blocking)",
			 key, n->kind == CONF_NODE_SCALAR ? conf_quote(n->text, q, sizeof(q)) :
							    conf_node_kind_name(n));
}

static int opt_seconds(const struct conf_ctx *ctx, const struct conf_node *map, const char *key,
		       uint64_t min, uint64_t max, unsigned *field)
{
	const struct conf_node *n = conf_map_get(map, key);
	uint64_t v;
	int r;

	if (!n)
		return 0;
	r = conf_read_seconds(ctx, n, key, min, max, &v);
	if (r < 0)
		return r;
	*field = (unsigned)v;
	return 0;
}

static int opt_ip(const struct conf_ctx *ctx, const struct conf_node *map, const char *key,
		  char **field)
{
	const struct conf_node *n = conf_map_get(map, key);
	char *ip;
	int r;

	if (!n)
		return 0;
	r = conf_read_ip(ctx, n, key, &ip, NULL);
	if (r < 0)
		return r;
	free(*field);
	*field = ip;
	return 0;
}

/* A section: absent and `section:` (null) both mean "all defaults". */
static int get_section(const struct conf_ctx *ctx, const struct conf_node *root, const char *key,
		       const char *const *keys, const struct conf_node **ret)
{
	const struct conf_node *n = conf_map_get(root, key);
	int r;

	*ret = NULL;
	if (!n)
		return 0;
	r = conf_expect_map(ctx, n, key);
	if (r < 0)
		return r;
	r = conf_check_keys(ctx, n, keys);
	if (r < 0)
		return r;
	*ret = n;
	return 0;
}

/* POSIX portable group names, as useradd accepts them by default. */
static bool group_name_is_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > GROUP_NAME_MAX || s[0] == '-')
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
	       len;
}

/* A unix group name (queue `groups`, cluster.operator_group) of node @n into *@ret. */
static int read_group_name(const struct conf_ctx *ctx, const struct conf_node *n,
			   const char *key, const char **ret)
{
	char quoted[CONF_QUOTE_MAX];
	const char *text;
	int r;

	r = conf_read_string(ctx, n, key, false, &text);
	if (r < 0)
		return r;
	if (!group_name_is_valid(text))
		return conf_fail(ctx, n,
				 "%s: %s is not a valid unix group name; use up to %d "
				 "letters, digits, '.', '_' or '-', not starting with '-'",
				 key, conf_quote(text, quoted, sizeof(quoted)), GROUP_NAME_MAX);
	*ret = text;
	return 0;
}

/*
 * cluster.max_job_count_per_user and cluster.reserved_job_count (issue 15 item 5: one
 * user's pending jobs filled max_job_count and root could submit nothing). Unless
 * written, one user may hold a tenth of max_job_count as drafts and active jobs, and a
 * twentieth (at least one record when there are two) is kept for root and operators.
 */
static int read_job_count_limits(const struct conf_ctx *ctx, const struct conf_node *sec,
				 struct conf_cluster *c)
{
	const struct conf_node *n;
	int r;

	c->max_job_count_per_user = c->max_job_count / 10 ? c->max_job_count / 10 : 1;
	c->reserved_job_count = c->max_job_count / 20;
	if (!c->reserved_job_count && c->max_job_count > 1)
		c->reserved_job_count = 1;
	if ((r = opt_uint(ctx, sec, "max_job_count_per_user", 1, MAX_JOB_COUNT_MAX,
			  &c->max_job_count_per_user)) < 0 ||
	    (r = opt_uint(ctx, sec, "reserved_job_count", 0, MAX_JOB_COUNT_MAX,
			  &c->reserved_job_count)) < 0)
		return r;
	n = conf_map_get(sec, "max_job_count_per_user");
	if (n && c->max_job_count_per_user > c->max_job_count)
		return conf_fail(ctx, n,
				 "max_job_count_per_user: %s is more than max_job_count (%u); use "
				 "at most %u",
				 n->text, c->max_job_count, c->max_job_count);
	n = conf_map_get(sec, "reserved_job_count");
	if (n && c->reserved_job_count >= c->max_job_count)
		return conf_fail(ctx, n,
				 "reserved_job_count: %s leaves users no job record of max_job_count "
				 "(%u); use at most %u",
				 n->text, c->max_job_count, c->max_job_count - 1);
	return 0;
}

/* recovery_strategies: what a job's recovery ladder may name; job-level is always there */
static int read_recovery_strategies(const struct conf_ctx *ctx, const struct conf_node *sec,
				    struct conf_cluster *c)
{
	const struct conf_node *n = conf_map_get(sec, "recovery_strategies");
	enum conf_recovery list[CONF_RECOVERY_COUNT];
	size_t count;
	int r;

	if (!n)
		return 0;
	r = conf_read_recovery_list(ctx, n, "recovery_strategies", list, &count);
	if (r < 0)
		return r;
	c->recovery_allowed = 1u << CONF_RECOVERY_JOB;
	for (size_t i = 0; i < count; i++)
		c->recovery_allowed |= 1u << list[i];
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* retry_fault_codes: a list of NPU error codes, each once (quoted or not) */
static int read_retry_fault_codes(const struct conf_ctx *ctx, const struct conf_node *sec,
				  struct conf_cluster *c)
{
	const struct conf_node *n = conf_map_get(sec, "retry_fault_codes");
	uint64_t *codes;
	int r;

	if (!n || conf_node_is_null(n))
		return 0;
	r = conf_expect_seq(ctx, n, "retry_fault_codes");
	if (r < 0)
		return r;
	if (n->count > CONF_RETRY_FAULT_CODES_MAX)
		return conf_fail(ctx, n, "retry_fault_codes: %zu codes; at most %d", n->count,
				 CONF_RETRY_FAULT_CODES_MAX);
	codes = calloc(n->count ? n->count : 1, sizeof(*codes));
	if (!codes)
		return -ENOMEM;
	for (size_t i = 0; i < n->count; i++) {
		const char *text;

		r = conf_read_string(ctx, n->items[i], "retry_fault_codes", false, &text);
		if (r == 0 && conf_fault_code_parse(text, strlen(text), &codes[i]) < 0)
			r = conf_fail(ctx, n->items[i],
				      "retry_fault_codes: \"%s\" is not an NPU error code; write "
				      "it as npu-smi prints it (8 hex digits, e.g. 80C98008) or "
				      "as 0x and 1 to 16 hex digits", text);
		for (size_t k = 0; r == 0 && k < i; k++)
			if (codes[k] == codes[i])
				r = conf_fail(ctx, n->items[i],
					      "retry_fault_codes: \"%s\" is listed twice", text);
		if (r < 0) {
			free(codes);
			return r;
		}
	}
	qsort(codes, n->count, sizeof(*codes), cmp_u64);
	free(c->retry_fault_codes);
	c->retry_fault_codes = codes;
	c->retry_fault_code_count = n->count;
	return 0;
}

bool conf_cluster_code_is_retry(const struct conf_cluster *c, const char *code)
{
	uint64_t v;

	if (!c->retry_fault_code_count || !code ||
	    conf_fault_code_parse(code, strlen(code), &v) < 0)
		return false;
	return bsearch(&v, c->retry_fault_codes, c->retry_fault_code_count, sizeof(v),
		       cmp_u64) != NULL;
}

static int read_cluster_section(const struct conf_ctx *ctx, const struct conf_node *root,
				struct conf_cluster *c)
{
	const struct conf_node *sec, *n;
	const char *text;
	int r;

	r = get_section(ctx, root, "cluster", cluster_keys, &sec);
	if (r < 0)
		return r;
	n = conf_map_get(sec, "name");
	if (n) {
		r = conf_read_name(ctx, n, "name", "cluster name", &text);
		if (r < 0)
			return r;
		r = set_string(ctx, &c->name, text);
		if (r < 0)
			return r;
	}
	if ((r = opt_ip(ctx, sec, "scheduler_ip", &c->scheduler_ip)) < 0 ||
	    (r = opt_uint(ctx, sec, "scheduler_port", 1, 65535, &c->scheduler_port)) < 0 ||
	    (r = opt_bool(ctx, sec, "enable_dynamic_network", &c->enable_dynamic_network)) < 0 ||
	    (r = opt_bool(ctx, sec, "enable_fault_recovery", &c->enable_fault_recovery)) < 0 ||
	    (r = opt_seconds(ctx, sec, "fault_check_interval", 1, FAULT_CHECK_INTERVAL_MAX_SEC,
			     &c->fault_check_interval_sec)) < 0 ||
	    (r = opt_bool(ctx, sec, "topology_aware_schedule", &c->topology_aware_schedule)) < 0 ||
	    (r = opt_oversub(ctx, sec, "spine_oversubscription", &c->spine_oversub_pct)) < 0 ||
	    (r = opt_bool(ctx, sec, "require_agent", &c->require_agent)) < 0)
		return r;

	c->heartbeat_timeout_sec = 3 * c->fault_check_interval_sec;
	n = conf_map_get(sec, "heartbeat_timeout");
	if (n) {
		r = opt_seconds(ctx, sec, "heartbeat_timeout", 1, HEARTBEAT_TIMEOUT_MAX_SEC,
				&c->heartbeat_timeout_sec);
		if (r < 0)
			return r;
		/* A timeout within one interval marks healthy servers unreachable. */
		if (c->heartbeat_timeout_sec <= c->fault_check_interval_sec)
			return conf_fail(ctx, n,
					 "heartbeat_timeout: %s must be longer than "
					 "fault_check_interval (%u seconds); use at least %u, "
					 "e.g. %u (3 intervals)",
					 n->text, c->fault_check_interval_sec,
					 c->fault_check_interval_sec + 1,
					 3 * c->fault_check_interval_sec);
	}

	/* An NPU back to OK waits two intervals: one good report may be a fluke. */
	c->fault_hold_sec = 2 * c->fault_check_interval_sec;
	if ((r = opt_seconds(ctx, sec, "fault_hold_time", 0, FAULT_HOLD_MAX_SEC,
			     &c->fault_hold_sec)) < 0 ||
	    (r = opt_uint(ctx, sec, "fault_escalate_count", 0, FAULT_ESCALATE_COUNT_MAX,
			  &c->fault_escalate_count)) < 0 ||
	    (r = opt_seconds(ctx, sec, "fault_escalate_window", 1, FAULT_ESCALATE_WINDOW_MAX_SEC,
			     &c->fault_escalate_window_sec)) < 0 ||
	    (r = opt_seconds(ctx, sec, "stop_grace_period", 0, STOP_GRACE_MAX_SEC,
			     &c->stop_grace_sec)) < 0 ||
	    (r = opt_uint(ctx, sec, "max_job_count", 1, MAX_JOB_COUNT_MAX,
			  &c->max_job_count)) < 0 ||
	    (r = opt_uint(ctx, sec, "event_history", EVENT_HISTORY_MIN, EVENT_HISTORY_MAX,
			  &c->event_history)) < 0 ||
	    (r = opt_uint(ctx, sec, "accounting_history", ACCOUNTING_HISTORY_MIN,
			  ACCOUNTING_HISTORY_MAX, &c->accounting_history)) < 0 ||
	    (r = opt_uint(ctx, sec, "job_log_max_mib", 1, JOB_LOG_MAX_MIB_MAX,
			  &c->job_log_max_mib)) < 0 ||
	    (r = opt_uint(ctx, sec, "max_uploads_per_user", 1, MAX_UPLOADS_PER_USER_MAX,
			  &c->max_uploads_per_user)) < 0 ||
	    (r = opt_seconds(ctx, sec, "recovery_timeout", 1, RECOVERY_TIMEOUT_MAX_SEC,
			     &c->recovery_timeout_sec)) < 0 ||
	    (r = read_recovery_strategies(ctx, sec, c)) < 0 ||
	    (r = read_retry_fault_codes(ctx, sec, c)) < 0)
		return r;
	n = conf_map_get(sec, "operator_group");
	if (n && n->kind == CONF_NODE_SEQ)
		return conf_fail(ctx, n,
				 "operator_group: one unix group name, not a list; put the "
				 "operators in one group");
	if (n) {
		r = read_group_name(ctx, n, "operator_group", &text);
		if (r < 0)
			return r;
		r = set_string(ctx, &c->operator_group, text);
		if (r < 0)
			return r;
	}
	return read_job_count_limits(ctx, sec, c);
}

/*
 * The job caps of a queue or of resource: (@map may be NULL: none given) into the
 * fields, which hold the inherited values on entry. A default_time_limit longer than
 * max_time_limit is an error where it is written; an inherited one is cut to
 * max_time_limit. The rules follow Slurm's partition limits (slurm.conf(5): MaxTime,
 * DefaultTime "must be less than or equal to MaxTime", MaxNodes; root is not bound).
 */
static int read_job_caps(const struct conf_ctx *ctx, const struct conf_node *map,
			 unsigned *max_priority, unsigned *max_npus, unsigned *max_time_limit_sec,
			 unsigned *default_time_limit_sec)
{
	const struct conf_node *n = conf_map_get(map, "max_priority"), *def;
	uint64_t v;
	int r;

	if (n) {
		/* below the default job priority every spec that names none would be refused */
		r = conf_read_uint(ctx, n, "max_priority", JOB_PRIORITY_DEFAULT, QUEUE_PRIORITY_MAX,
				   " (a job that sets no priority has 500; a lower cap would refuse "
				   "every such job of a user)",
				   &v);
		if (r < 0)
			return r;
		*max_priority = (unsigned)v;
	}
	if ((r = opt_uint(ctx, map, "max_npus", 0, QUOTA_NPUS_MAX, max_npus)) < 0 ||
	    (r = opt_seconds(ctx, map, "max_time_limit", 0, TIME_LIMIT_CAP_MAX_SEC,
			     max_time_limit_sec)) < 0 ||
	    (r = opt_seconds(ctx, map, "default_time_limit", 0, TIME_LIMIT_CAP_MAX_SEC,
			     default_time_limit_sec)) < 0)
		return r;
	if (!*max_time_limit_sec || *default_time_limit_sec <= *max_time_limit_sec)
		return 0;
	def = conf_map_get(map, "default_time_limit");
	if (!def) {
		*default_time_limit_sec = *max_time_limit_sec;
		return 0;
	}
	return conf_fail(ctx, def,
			 "default_time_limit: %s is longer than max_time_limit (%u seconds), so a "
			 "job without time_limit would be refused; use at most %u seconds or raise "
			 "max_time_limit",
			 def->text, *max_time_limit_sec, *max_time_limit_sec);
}

/*
 * The per-queue job-count limits of a queue or of resource: (@map may be NULL), into
 * the fields, which hold the inherited values on entry: Slurm's QOS MaxSubmitJobsPerUser
 * and GrpSubmitJobs. 0 = no limit.
 */
static int read_submit_limits(const struct conf_ctx *ctx, const struct conf_node *map,
			      unsigned *max_submit_jobs_per_user, unsigned *max_submit_jobs)
{
	int r;

	if ((r = opt_uint(ctx, map, "max_submit_jobs_per_user", 0, MAX_JOB_COUNT_MAX,
			  max_submit_jobs_per_user)) < 0)
		return r;
	return opt_uint(ctx, map, "max_submit_jobs", 0, MAX_JOB_COUNT_MAX, max_submit_jobs);
}

/*
 * priority_weight_age (0-1000, in queue priority's units) and priority_max_age (a
 * duration): Slurm's PriorityWeightAge and PriorityMaxAge. The age adds one unit each
 * priority_max_age / priority_weight_age seconds, so that step must be a second at least.
 */
static int read_age(const struct conf_ctx *ctx, const struct conf_node *sec,
		    struct conf_cluster *c)
{
	const struct conf_node *n;
	int r;

	if ((r = opt_uint(ctx, sec, "priority_weight_age", 0, QUEUE_PRIORITY_MAX,
			  &c->priority_weight_age)) < 0 ||
	    (r = opt_seconds(ctx, sec, "priority_max_age", 1, PRIORITY_MAX_AGE_MAX_SEC,
			     &c->priority_max_age_sec)) < 0)
		return r;
	if (c->priority_max_age_sec >= c->priority_weight_age)
		return 0;
	n = conf_map_get(sec, "priority_max_age");
	return conf_fail(ctx, n ? n : conf_map_get(sec, "priority_weight_age"),
			 "priority_max_age: %u s is shorter than %u s (one second for each of "
			 "the %u units of priority_weight_age: the age adds a unit every "
			 "priority_max_age / priority_weight_age); raise priority_max_age or "
			 "lower priority_weight_age",
			 c->priority_max_age_sec, c->priority_weight_age, c->priority_weight_age);
}

static int read_resource_section(const struct conf_ctx *ctx, const struct conf_node *root,
				 struct conf_cluster *c, const struct conf_node **ret_total)
{
	const struct conf_node *sec;
	int r;

	r = get_section(ctx, root, "resource", resource_keys, &sec);
	if (r < 0)
		return r;
	/* total_npu is compared with the inventory once servers are read. */
	*ret_total = conf_map_get(sec, "total_npu");
	if ((r = opt_uint(ctx, sec, "total_npu", 1, QUOTA_NPUS_MAX, &c->total_npu)) < 0 ||
	    (r = opt_bool(ctx, sec, "allow_mix_task", &c->allow_mix_task)) < 0 ||
	    (r = opt_bool(ctx, sec, "enable_quota_limit", &c->enable_quota_limit)) < 0 ||
	    (r = opt_bool(ctx, sec, "backfill", &c->backfill)) < 0 ||
	    (r = opt_bool(ctx, sec, "preemption", &c->preemption)) < 0 ||
	    (r = opt_uint(ctx, sec, "max_preemptions_per_job", 0, PREEMPTIONS_PER_JOB_MAX,
			  &c->max_preemptions_per_job)) < 0 ||
	    (r = opt_seconds(ctx, sec, "preempt_exempt_time", 0, PREEMPT_EXEMPT_MAX_SEC,
			     &c->preempt_exempt_sec)) < 0 ||
	    (r = opt_seconds(ctx, sec, "elastic_grow_delay", 0, ELASTIC_GROW_DELAY_MAX_SEC,
			     &c->elastic_grow_delay_sec)) < 0 ||
	    (r = read_age(ctx, sec, c)) < 0)
		return r;
	r = read_submit_limits(ctx, sec, &c->max_submit_jobs_per_user, &c->max_submit_jobs);
	if (r < 0)
		return r;
	return read_job_caps(ctx, sec, &c->max_priority, &c->max_npus, &c->max_time_limit_sec,
			     &c->default_time_limit_sec);
}

/*
 * HCCL_SOCKET_IFNAME: one name or prefix, or a comma list, optionally led by "^"
 * (exclude) or "=" (exact match), per the CANN environment-variable reference. Each
 * name follows the kernel's rule: 1-15 characters, no '/', ':' or white space.
 */
static bool ifname_list_is_valid(const char *s)
{
	size_t len = 0;

	if (*s == '^' || *s == '=')
		s++;
	for (;; s++) {
		if (*s == ',' || *s == '\0') {
			if (len == 0)
				return false;
			if (*s == '\0')
				return true;
			len = 0;
			continue;
		}
		if (*s <= ' ' || *s == '/' || *s == ':' || *s == 0x7f)
			return false;
		if (++len > IFNAME_MAX)
			return false;
	}
}

static int read_hccl_section(const struct conf_ctx *ctx, const struct conf_node *root,
			     struct conf_cluster *c)
{
	const struct conf_node *sec, *n;
	char q[CONF_QUOTE_MAX];
	const char *text;
	size_t i;
	int r;

	r = get_section(ctx, root, "hccl", hccl_keys, &sec);
	if (r < 0)
		return r;
	n = conf_map_get(sec, "hccl_log_level");
	if (n) {
		r = conf_read_string(ctx, n, "hccl_log_level", false, &text);
		if (r < 0)
			return r;
		for (i = 0; log_levels[i]; i++)
			if (strcasecmp(text, log_levels[i]) == 0)
				break;
		if (!log_levels[i])
			return conf_fail(ctx, n,
					 "hccl_log_level: %s is not a log level; use one of: "
					 "debug, info, warning, error",
					 conf_quote(text, q, sizeof(q)));
		r = set_string(ctx, &c->hccl_log_level, log_levels[i]);
		if (r < 0)
			return r;
	}
	if ((r = opt_seconds(ctx, sec, "hccl_connect_timeout", CONF_HCCL_CONNECT_TIMEOUT_MIN_SEC,
			     CONF_HCCL_CONNECT_TIMEOUT_MAX_SEC,
			     &c->hccl_connect_timeout_sec)) < 0 ||
	    (r = opt_seconds(ctx, sec, "hccl_exec_timeout", 0, HCCL_EXEC_TIMEOUT_MAX_SEC,
			     &c->hccl_exec_timeout_sec)) < 0 ||
	    (r = opt_ip(ctx, sec, "hccl_if_ip", &c->hccl_if_ip)) < 0)
		return r;
	n = conf_map_get(sec, "hccl_socket_ifname");
	if (n) {
		r = conf_read_string(ctx, n, "hccl_socket_ifname", false, &text);
		if (r < 0)
			return r;
		if (!ifname_list_is_valid(text))
			return conf_fail(ctx, n,
					 "hccl_socket_ifname: %s is not a network interface name; "
					 "use a name or prefix such as eth0 or enp (up to %d "
					 "characters, no spaces, '/' or ':'), a comma list, or "
					 "one led by ^ (exclude) or = (exact)",
					 conf_quote(text, q, sizeof(q)), IFNAME_MAX);
		r = set_string(ctx, &c->hccl_socket_ifname, text);
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_groups(const struct conf_ctx *ctx, const struct conf_node *n, struct conf_queue *q)
{
	size_t i;
	int r;

	r = conf_expect_seq(ctx, n, "groups");
	if (r < 0)
		return r;
	q->groups = calloc(n->count + 1, sizeof(*q->groups));
	if (!q->groups)
		return conf_err_nomem(ctx->err, ctx->file);
	for (i = 0; i < n->count; i++) {
		const char *text;

		r = read_group_name(ctx, n->items[i], "groups", &text);
		if (r < 0)
			return r;
		q->groups[i] = strdup(text);
		if (!q->groups[i])
			return conf_err_nomem(ctx->err, ctx->file);
		q->group_count++;
	}
	return 0;
}

static void queue_defaults(struct conf_queue *q, const struct conf_cluster *c)
{
	q->quota_npus = 0;
	q->priority = 500;
	q->weight = 1;
	q->may_borrow = true;
	q->max_priority = c->max_priority;
	q->max_npus = c->max_npus;
	q->max_time_limit_sec = c->max_time_limit_sec;
	q->default_time_limit_sec = c->default_time_limit_sec;
	if (q->max_time_limit_sec && q->default_time_limit_sec > q->max_time_limit_sec)
		q->default_time_limit_sec = q->max_time_limit_sec;
	q->max_submit_jobs_per_user = c->max_submit_jobs_per_user;
	q->max_submit_jobs = c->max_submit_jobs;
}

static int read_queue(const struct conf_ctx *ctx, const struct conf_node *m, struct conf_queue *q,
		      const struct conf_cluster *c)
{
	const struct conf_node *n;
	const char *name;
	int r;

	if (m->kind != CONF_NODE_MAP)
		return conf_fail(ctx, m,
				 "queues: each entry must be a mapping with at least a name, not "
				 "%s",
				 conf_node_kind_name(m));
	r = conf_check_keys(ctx, m, queue_keys);
	if (r < 0)
		return r;
	n = conf_map_get(m, "name");
	if (!n)
		return conf_fail(ctx, m, "this queue has no name; add `name: <queue name>`");
	r = conf_read_name(ctx, n, "name", "queue name", &name);
	if (r < 0)
		return r;
	q->name = strdup(name);
	if (!q->name)
		return conf_err_nomem(ctx->err, ctx->file);
	queue_defaults(q, c);
	/* the cluster's default is cut to this queue's own max_time_limit, read below */
	q->default_time_limit_sec = c->default_time_limit_sec;
	if ((r = opt_uint(ctx, m, "quota_npus", 0, QUOTA_NPUS_MAX, &q->quota_npus)) < 0 ||
	    (r = opt_uint(ctx, m, "priority", 0, QUEUE_PRIORITY_MAX, &q->priority)) < 0 ||
	    (r = opt_uint(ctx, m, "weight", 1, QUEUE_WEIGHT_MAX, &q->weight)) < 0 ||
	    (r = opt_bool(ctx, m, "may_borrow", &q->may_borrow)) < 0 ||
	    (r = read_job_caps(ctx, m, &q->max_priority, &q->max_npus, &q->max_time_limit_sec,
			       &q->default_time_limit_sec)) < 0 ||
	    (r = read_submit_limits(ctx, m, &q->max_submit_jobs_per_user, &q->max_submit_jobs)) < 0)
		return r;
	n = conf_map_get(m, "groups");
	if (n)
		return read_groups(ctx, n, q);
	q->groups = calloc(1, sizeof(*q->groups));
	if (!q->groups)
		return conf_err_nomem(ctx->err, ctx->file);
	return 0;
}

static int read_queues(const struct conf_ctx *ctx, const struct conf_node *root,
		       struct conf_cluster *c)
{
	const struct conf_node *n = conf_map_get(root, "queues");
	struct conf_strmap names = { 0 };
	size_t count = 0, i;
	struct conf_queue *q;
	int r;

	if (n) {
		r = conf_expect_seq(ctx, n, "queues");
		if (r < 0)
			return r;
		count = n->count;
	}
	/* One spare slot for the implicit "default" queue. */
	c->queues = calloc(count + 1, sizeof(*c->queues));
	if (!c->queues || conf_strmap_init(&names, count) < 0)
		return conf_err_nomem(ctx->err, ctx->file);
	for (i = 0; i < count; i++) {
		const struct conf_node *m = n->items[i], *name;
		char q1[CONF_QUOTE_MAX];
		const void *old;

		c->queue_count++;
		r = read_queue(ctx, m, &c->queues[i], c);
		if (r < 0)
			goto release;
		name = conf_map_get(m, "name");
		r = conf_strmap_add(&names, c->queues[i].name, name, &old);
		if (r < 0) {
			r = conf_err_nomem(ctx->err, ctx->file);
			goto release;
		}
		if (r == 1) {
			r = conf_fail(ctx, name,
				      "queue name %s is already used at line %u; give each queue "
				      "its own name",
				      conf_quote(c->queues[i].name, q1, sizeof(q1)),
				      ((const struct conf_node *)old)->line);
			goto release;
		}
	}
	r = 0;
	if (conf_cluster_find_queue(c, "default"))
		goto release;
	q = &c->queues[c->queue_count++];
	queue_defaults(q, c);
	q->name = strdup("default");
	q->groups = calloc(1, sizeof(*q->groups));
	if (!q->name || !q->groups)
		r = conf_err_nomem(ctx->err, ctx->file);
release:
	conf_strmap_release(&names);
	return r;
}

/* Uniqueness and address-family state across the whole inventory. */
struct inventory {
	struct conf_strmap names;	/* server name -> server */
	struct conf_strmap host_ips;	/* host_ip -> server */
	struct conf_strmap device_ips;	/* device ip -> (server index * 16 + device id + 1) */
	int device_family;		/* AF_INET/AF_INET6 of the first device IP, 0 before */
	unsigned device_family_line;
};

static const char *family_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

static int read_device_ips(const struct conf_ctx *ctx, const struct conf_node *n,
			   struct conf_cluster *c, size_t index, struct inventory *inv)
{
	struct conf_server *s = &c->servers[index];
	char q1[CONF_QUOTE_MAX], q2[CONF_QUOTE_MAX];
	size_t d;
	int r;

	r = conf_expect_seq(ctx, n, "device_ips");
	if (r < 0)
		return r;
	if (n->count != s->npu_count)
		return conf_fail(ctx, n,
				 "device_ips: server %s lists %zu address%s but %s servers have "
				 "%u NPUs; list exactly %u, one per device id 0-%u",
				 conf_quote(s->name, q1, sizeof(q1)), n->count,
				 n->count == 1 ? "" : "es", s->type->name, s->npu_count,
				 s->npu_count, s->npu_count - 1);
	for (d = 0; d < n->count; d++) {
		const struct conf_node *item = n->items[d];
		const void *old;
		int family;

		r = conf_read_ip(ctx, item, "device_ips", &s->device_ips[d], &family);
		if (r < 0)
			return r;
		if (conf_device_ip_problem(s->device_ips[d]))
			return conf_fail(ctx, item,
					 "device_ips: %s %s; list the unicast address of each "
					 "NPU's RoCE NIC (hccn_tool -i N -ip -g)",
					 conf_quote(item->text, q1, sizeof(q1)),
					 conf_device_ip_problem(s->device_ips[d]));
		if (!inv->device_family) {
			inv->device_family = family;
			inv->device_family_line = item->line;
		} else if (family != inv->device_family) {
			return conf_fail(ctx, item,
					 "device_ips: %s is %s but the first device IP, at line "
					 "%u, is %s; use one address family for all device IPs",
					 conf_quote(item->text, q1, sizeof(q1)),
					 family_name(family), inv->device_family_line,
					 family_name(inv->device_family));
		}
		r = conf_strmap_add(&inv->device_ips, s->device_ips[d],
				    (const void *)(uintptr_t)(index * CONF_SERVER_NPUS_MAX + d + 1),
				    &old);
		if (r < 0)
			return conf_err_nomem(ctx->err, ctx->file);
		if (r == 1) {
			uintptr_t where = (uintptr_t)old - 1;
			const struct conf_server *other = &c->servers[where / CONF_SERVER_NPUS_MAX];

			return conf_fail(ctx, item,
					 "device_ips: %s is already used by server %s (device "
					 "%u); every NPU needs its own address",
					 conf_quote(item->text, q1, sizeof(q1)),
					 conf_quote(other->name, q2, sizeof(q2)),
					 (unsigned)(where % CONF_SERVER_NPUS_MAX));
		}
	}
	return 0;
}

static int read_server(const struct conf_ctx *ctx, const struct conf_node *m,
		       struct conf_cluster *c, size_t index, struct inventory *inv)
{
	struct conf_server *s = &c->servers[index];
	char q1[CONF_QUOTE_MAX], q2[CONF_QUOTE_MAX], names[256];
	const struct conf_node *n;
	const void *old;
	const char *text;
	int r;

	if (m->kind != CONF_NODE_MAP)
		return conf_fail(ctx, m,
				 "servers: each entry must be a mapping with name, host_ip, type "
				 "and switch, not %s",
				 conf_node_kind_name(m));
	r = conf_check_keys(ctx, m, server_keys);
	if (r < 0)
		return r;
	s->line = m->line;

	n = conf_map_get(m, "name");
	if (!n)
		return conf_fail(ctx, m, "this server has no name; add `name: <server name>`");
	r = conf_read_name(ctx, n, "name", "server name", &text);
	if (r < 0)
		return r;
	r = set_string(ctx, &s->name, text);
	if (r < 0)
		return r;
	r = conf_strmap_add(&inv->names, s->name, s, &old);
	if (r < 0)
		return conf_err_nomem(ctx->err, ctx->file);
	if (r == 1)
		return conf_fail(ctx, n,
				 "server name %s is already used at line %u; give each server "
				 "its own name",
				 conf_quote(s->name, q1, sizeof(q1)),
				 ((const struct conf_server *)old)->line);
	conf_quote(s->name, q1, sizeof(q1));

	n = conf_map_get(m, "host_ip");
	if (!n)
		return conf_fail(ctx, m, "server %s has no host_ip; add `host_ip: <address>`", q1);
	r = conf_read_ip(ctx, n, "host_ip", &s->host_ip, NULL);
	if (r < 0)
		return r;
	r = conf_strmap_add(&inv->host_ips, s->host_ip, s, &old);
	if (r < 0)
		return conf_err_nomem(ctx->err, ctx->file);
	if (r == 1)
		return conf_fail(ctx, n,
				 "host_ip: %s is already used by server %s; give each server its "
				 "own address",
				 conf_quote(n->text, q2, sizeof(q2)),
				 conf_quote(((const struct conf_server *)old)->name, q1,
					    sizeof(q1)));

	n = conf_map_get(m, "type");
	if (!n)
		return conf_fail(ctx, m, "server %s has no type; add `type:` with one of: %s", q1,
				 conf_server_type_names(names, sizeof(names)));
	r = conf_read_server_type(ctx, n, "type", &s->type);
	if (r < 0)
		return r;
	s->npu_count = s->type->npu_count;

	n = conf_map_get(m, "switch");
	if (!n)
		return conf_fail(ctx, m,
				 "server %s has no switch; add `switch: <leaf switch name>` (the "
				 "leaf switch its NPU ports connect to)",
				 q1);
	r = conf_read_name(ctx, n, "switch", "switch name", &text);
	if (r < 0)
		return r;
	r = set_string(ctx, &s->leaf_switch, text);
	if (r < 0)
		return r;

	n = conf_map_get(m, "super_pod");
	if (n) {
		r = conf_read_name(ctx, n, "super_pod", "super pod id", &text);
		if (r < 0)
			return r;
		r = set_string(ctx, &s->super_pod, text);
		if (r < 0)
			return r;
	} else if (strcmp(s->type->rank_table_version, "1.2") == 0) {
		/* Rank table 1.2 groups servers by super pod; there is no sane default. */
		return conf_fail(ctx, m,
				 "server %s has no super_pod; %s servers need one, e.g. "
				 "`super_pod: \"0\"`",
				 q1, s->type->name);
	}

	n = conf_map_get(m, "device_ips");
	if (n)
		return read_device_ips(ctx, n, c, index, inv);
	return 0;
}

static int read_servers(const struct conf_ctx *ctx, const struct conf_node *root,
			struct conf_cluster *c)
{
	const struct conf_node *n = conf_map_get(root, "servers");
	struct inventory inv = { 0 };
	size_t i;
	int r;

	if (!n)
		return conf_fail(ctx, root,
				 "servers is missing; list the compute servers under `servers:`, "
				 "each with name, host_ip, type and switch");
	r = conf_expect_seq(ctx, n, "servers");
	if (r < 0)
		return r;
	if (n->count == 0)
		return conf_fail(ctx, n,
				 "servers: the list is empty; list at least one server with name, "
				 "host_ip, type and switch");
	if (n->count > CONF_SERVERS_MAX)
		return conf_fail(ctx, n, "servers: %zu servers are more than the limit of %d",
				 n->count, CONF_SERVERS_MAX);
	c->servers = calloc(n->count, sizeof(*c->servers));
	if (!c->servers)
		return conf_err_nomem(ctx->err, ctx->file);
	c->server_count = n->count;
	if (conf_strmap_init(&inv.names, n->count) < 0 ||
	    conf_strmap_init(&inv.host_ips, n->count) < 0 ||
	    conf_strmap_init(&inv.device_ips, n->count * 8) < 0) {
		r = conf_err_nomem(ctx->err, ctx->file);
		goto release;
	}
	for (i = 0; i < n->count; i++) {
		r = read_server(ctx, n->items[i], c, i, &inv);
		if (r < 0)
			goto release;
	}
	r = 0;
release:
	conf_strmap_release(&inv.names);
	conf_strmap_release(&inv.host_ips);
	conf_strmap_release(&inv.device_ips);
	return r;
}

static int set_defaults(struct conf_cluster *c, const char *file)
{
	c->scheduler_port = 8118;
	c->enable_dynamic_network = true;
	c->enable_fault_recovery = true;
	c->fault_check_interval_sec = 5;
	c->fault_escalate_count = 3;
	c->fault_escalate_window_sec = 3600;
	c->stop_grace_sec = 30;
	c->max_job_count = 100000;
	c->event_history = 65536;
	c->accounting_history = 10000;
	c->job_log_max_mib = 16;
	c->max_uploads_per_user = 200;
	c->recovery_allowed = CONF_RECOVERY_ALL;
	c->recovery_timeout_sec = 30;
	c->topology_aware_schedule = true;
	c->spine_oversub_pct = 100;
	c->require_agent = false;
	c->allow_mix_task = true;
	c->enable_quota_limit = false;
	c->backfill = true;
	c->preemption = true;
	c->elastic_grow_delay_sec = 600;
	c->priority_max_age_sec = PRIORITY_MAX_AGE_DEFAULT_SEC;
	c->max_priority = JOB_PRIORITY_CAP_DEFAULT;
	c->hccl_connect_timeout_sec = 600;
	c->hccl_exec_timeout_sec = 0;
	c->leader_lease_sec = 10;
	c->etcd_timeout_sec = 2;
	c->source = strdup(file ? file : "");
	c->name = strdup("ascend");
	c->scheduler_ip = strdup("127.0.0.1");
	c->hccl_log_level = strdup("info");
	if (!c->source || !c->name || !c->scheduler_ip || !c->hccl_log_level)
		return -ENOMEM;
	return 0;
}

static int read_cluster(const struct conf_ctx *ctx, const struct conf_node *root,
			struct conf_cluster *c)
{
	const struct conf_node *total = NULL;
	uint64_t npus = 0;
	size_t i;
	int r;

	r = conf_check_keys(ctx, root, top_keys);
	if (r < 0)
		return r;
	if ((r = read_cluster_section(ctx, root, c)) < 0 ||
	    (r = read_resource_section(ctx, root, c, &total)) < 0 ||
	    (r = read_hccl_section(ctx, root, c)) < 0 || (r = read_queues(ctx, root, c)) < 0 ||
	    (r = read_servers(ctx, root, c)) < 0 || (r = conf_read_state(ctx, root, c)) < 0)
		return r;
	for (i = 0; i < c->server_count; i++)
		npus += c->servers[i].npu_count;
	if (total && c->total_npu != npus)
		return conf_fail(ctx, total,
				 "total_npu: %u does not match the %llu NPUs of the %zu server%s "
				 "listed under servers; fix total_npu or the inventory",
				 c->total_npu, (unsigned long long)npus, c->server_count,
				 c->server_count == 1 ? "" : "s");
	c->total_npu = (unsigned)npus;
	return 0;
}

int conf_cluster_parse(const char *buf, size_t len, const char *file, struct conf_cluster **ret,
		       struct conf_error *err)
{
	struct conf_ctx ctx = { .file = file, .err = err };
	struct conf_node *root = NULL;
	struct conf_cluster *c;
	int r;

	r = conf_doc_parse(buf, len, file, "configuration", CONF_CONFIG_MAX_BYTES, &root, err);
	if (r < 0)
		return r;
	if (conf_node_is_null(root)) {
		r = conf_fail(&ctx, NULL,
			      "the configuration is empty; it needs at least a `servers:` list");
		goto free_root;
	}
	if (root->kind != CONF_NODE_MAP) {
		r = conf_fail(&ctx, root,
			      "the configuration must be a mapping of sections (cluster, "
			      "resource, hccl, queues, servers), not %s",
			      conf_node_kind_name(root));
		goto free_root;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		r = conf_err_nomem(err, file);
		goto free_root;
	}
	if (set_defaults(c, file) < 0) {
		r = conf_err_nomem(err, file);
		goto free_cluster;
	}
	r = read_cluster(&ctx, root, c);
	if (r < 0)
		goto free_cluster;
	*ret = c;
	conf_node_free(root);
	return 0;

free_cluster:
	conf_cluster_free(c);
free_root:
	conf_node_free(root);
	return r;
}

/* Read at most @max + 1 bytes so that an oversized file is detected without reading it all. */
static int read_file(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	size_t cap = 64 * 1024, len = 0;
	char *buf = malloc(cap), *p;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			p = realloc(buf, cap);
			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(buf);
			return -EFBIG;
		}
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int conf_cluster_load(const char *path, struct conf_cluster **ret, struct conf_error *err)
{
	struct conf_cluster *c = NULL;
	char *buf = NULL;
	size_t len = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		conf_err_set(err, path, 0, 0, "cannot open the configuration: %s; check the path",
			     strerror(-r));
		return r;
	}
	r = read_file(fd, CONF_CONFIG_MAX_BYTES, &buf, &len);
	close(fd);
	if (r == -EFBIG) {
		conf_err_set(err, path, 0, 0,
			     "the configuration is larger than the limit of %d bytes; make it "
			     "smaller",
			     CONF_CONFIG_MAX_BYTES);
		return r;
	}
	if (r == -ENOMEM)
		return conf_err_nomem(err, path);
	if (r < 0) {
		conf_err_set(err, path, 0, 0, "cannot read the configuration: %s", strerror(-r));
		return r;
	}
	r = conf_cluster_parse(buf, len, path, &c, err);
	free(buf);
	if (r < 0)
		return r;
	*ret = c;
	return 0;
}

static void render_queue(struct conf_out *o, const struct conf_queue *q)
{
	size_t i;

	conf_out_map_start(o, false);
	conf_out_key(o, "name");
	conf_out_str(o, q->name);
	conf_out_key(o, "quota_npus");
	conf_out_uint(o, q->quota_npus);
	conf_out_key(o, "priority");
	conf_out_uint(o, q->priority);
	conf_out_key(o, "weight");
	conf_out_uint(o, q->weight);
	conf_out_key(o, "may_borrow");
	conf_out_bool(o, q->may_borrow);
	conf_out_key(o, "max_priority");
	conf_out_uint(o, q->max_priority);
	conf_out_key(o, "max_npus");
	conf_out_uint(o, q->max_npus);
	conf_out_key(o, "max_time_limit");
	conf_out_uint(o, q->max_time_limit_sec);
	conf_out_key(o, "default_time_limit");
	conf_out_uint(o, q->default_time_limit_sec);
	conf_out_key(o, "max_submit_jobs_per_user");
	conf_out_uint(o, q->max_submit_jobs_per_user);
	conf_out_key(o, "max_submit_jobs");
	conf_out_uint(o, q->max_submit_jobs);
	conf_out_key(o, "groups");
	conf_out_seq_start(o, true);
	for (i = 0; i < q->group_count; i++)
		conf_out_str(o, q->groups[i]);
	conf_out_seq_end(o);
	conf_out_map_end(o);
}

static void render_server(struct conf_out *o, const struct conf_server *s)
{
	unsigned d;

	conf_out_map_start(o, false);
	conf_out_key(o, "name");
	conf_out_str(o, s->name);
	conf_out_key(o, "host_ip");
	conf_out_str(o, s->host_ip);
	conf_out_key(o, "type");
	conf_out_str(o, s->type->name);
	conf_out_key(o, "switch");
	conf_out_str(o, s->leaf_switch);
	conf_out_key(o, "super_pod");
	conf_out_str_or_null(o, s->super_pod);
	conf_out_key(o, "device_ips");
	if (s->npu_count && s->device_ips[0]) {
		conf_out_seq_start(o, true);
		for (d = 0; d < s->npu_count; d++)
			conf_out_str_or_null(o, s->device_ips[d]);
		conf_out_seq_end(o);
	} else {
		conf_out_null(o);
	}
	conf_out_map_end(o);
}

int conf_cluster_render_yaml(const struct conf_cluster *c, char **ret_buf, size_t *ret_len)
{
	struct conf_out *o = conf_out_new();
	size_t i;

	if (!o)
		return -ENOMEM;
	/* Emitter calls are no-ops after a failure; conf_out_finish() reports it. */
	conf_out_map_start(o, false);

	conf_out_key(o, "cluster");
	conf_out_map_start(o, false);
	conf_out_key(o, "name");
	conf_out_str(o, c->name);
	conf_out_key(o, "scheduler_ip");
	conf_out_str(o, c->scheduler_ip);
	conf_out_key(o, "scheduler_port");
	conf_out_uint(o, c->scheduler_port);
	conf_out_key(o, "enable_dynamic_network");
	conf_out_bool(o, c->enable_dynamic_network);
	conf_out_key(o, "enable_fault_recovery");
	conf_out_bool(o, c->enable_fault_recovery);
	conf_out_key(o, "fault_check_interval");
	conf_out_uint(o, c->fault_check_interval_sec);
	conf_out_key(o, "heartbeat_timeout");
	conf_out_uint(o, c->heartbeat_timeout_sec);
	conf_out_key(o, "topology_aware_schedule");
	conf_out_bool(o, c->topology_aware_schedule);
	conf_out_key(o, "spine_oversubscription");
	{
		char ratio[32];

		snprintf(ratio, sizeof(ratio), "%u.%02u:1", c->spine_oversub_pct / 100,
			 c->spine_oversub_pct % 100);
		conf_out_str(o, ratio);
	}
	conf_out_key(o, "require_agent");
	conf_out_bool(o, c->require_agent);
	conf_out_key(o, "fault_hold_time");
	conf_out_uint(o, c->fault_hold_sec);
	conf_out_key(o, "fault_escalate_count");
	conf_out_uint(o, c->fault_escalate_count);
	conf_out_key(o, "fault_escalate_window");
	conf_out_uint(o, c->fault_escalate_window_sec);
	conf_out_key(o, "stop_grace_period");
	conf_out_uint(o, c->stop_grace_sec);
	conf_out_key(o, "max_job_count");
	conf_out_uint(o, c->max_job_count);
	conf_out_key(o, "max_job_count_per_user");
	conf_out_uint(o, c->max_job_count_per_user);
	conf_out_key(o, "reserved_job_count");
	conf_out_uint(o, c->reserved_job_count);
	conf_out_key(o, "event_history");
	conf_out_uint(o, c->event_history);
	conf_out_key(o, "accounting_history");
	conf_out_uint(o, c->accounting_history);
	conf_out_key(o, "job_log_max_mib");
	conf_out_uint(o, c->job_log_max_mib);
	conf_out_key(o, "operator_group");
	conf_out_str_or_null(o, c->operator_group);
	conf_out_key(o, "max_uploads_per_user");
	conf_out_uint(o, c->max_uploads_per_user);
	conf_out_key(o, "recovery_strategies");
	conf_out_seq_start(o, true);
	for (unsigned k = 0; k < CONF_RECOVERY_COUNT; k++)
		if (c->recovery_allowed & (1u << k))
			conf_out_str(o, conf_recovery_name((enum conf_recovery)k));
	conf_out_seq_end(o);
	conf_out_key(o, "recovery_timeout");
	conf_out_uint(o, c->recovery_timeout_sec);
	conf_out_key(o, "retry_fault_codes");
	conf_out_seq_start(o, true);
	for (size_t k = 0; k < c->retry_fault_code_count; k++) {
		char code[24];

		/* npu-smi's form when it fits 8 digits, else 0x and the digits */
		if (c->retry_fault_codes[k] <= 0xffffffffu)
			snprintf(code, sizeof(code), "%08" PRIX64, c->retry_fault_codes[k]);
		else
			snprintf(code, sizeof(code), "0x%" PRIX64, c->retry_fault_codes[k]);
		conf_out_str(o, code);
	}
	conf_out_seq_end(o);
	conf_out_map_end(o);

	conf_out_key(o, "resource");
	conf_out_map_start(o, false);
	conf_out_key(o, "total_npu");
	conf_out_uint(o, c->total_npu);
	conf_out_key(o, "allow_mix_task");
	conf_out_bool(o, c->allow_mix_task);
	conf_out_key(o, "enable_quota_limit");
	conf_out_bool(o, c->enable_quota_limit);
	conf_out_key(o, "backfill");
	conf_out_bool(o, c->backfill);
	conf_out_key(o, "preemption");
	conf_out_bool(o, c->preemption);
	conf_out_key(o, "max_preemptions_per_job");
	conf_out_uint(o, c->max_preemptions_per_job);
	conf_out_key(o, "preempt_exempt_time");
	conf_out_uint(o, c->preempt_exempt_sec);
	conf_out_key(o, "priority_weight_age");
	conf_out_uint(o, c->priority_weight_age);
	conf_out_key(o, "priority_max_age");
	conf_out_uint(o, c->priority_max_age_sec);
	conf_out_key(o, "elastic_grow_delay");
	conf_out_uint(o, c->elastic_grow_delay_sec);
	conf_out_key(o, "max_priority");
	conf_out_uint(o, c->max_priority);
	conf_out_key(o, "max_npus");
	conf_out_uint(o, c->max_npus);
	conf_out_key(o, "max_time_limit");
	conf_out_uint(o, c->max_time_limit_sec);
	conf_out_key(o, "default_time_limit");
	conf_out_uint(o, c->default_time_limit_sec);
	conf_out_key(o, "max_submit_jobs_per_user");
	conf_out_uint(o, c->max_submit_jobs_per_user);
	conf_out_key(o, "max_submit_jobs");
	conf_out_uint(o, c->max_submit_jobs);
	conf_out_map_end(o);

	conf_out_key(o, "hccl");
	conf_out_map_start(o, false);
	conf_out_key(o, "hccl_log_level");
	conf_out_str(o, c->hccl_log_level);
	conf_out_key(o, "hccl_connect_timeout");
	conf_out_uint(o, c->hccl_connect_timeout_sec);
	conf_out_key(o, "hccl_exec_timeout");
	conf_out_uint(o, c->hccl_exec_timeout_sec);
	conf_out_key(o, "hccl_if_ip");
	conf_out_str_or_null(o, c->hccl_if_ip);
	conf_out_key(o, "hccl_socket_ifname");
	conf_out_str_or_null(o, c->hccl_socket_ifname);
	conf_out_map_end(o);

	conf_out_key(o, "queues");
	conf_out_seq_start(o, false);
	for (i = 0; i < c->queue_count; i++)
		render_queue(o, &c->queues[i]);
	conf_out_seq_end(o);

	conf_out_key(o, "servers");
	conf_out_seq_start(o, false);
	for (i = 0; i < c->server_count; i++)
		render_server(o, &c->servers[i]);
	conf_out_seq_end(o);

	conf_render_state(o, c);
	conf_out_map_end(o);
	return conf_out_finish(o, ret_buf, ret_len);
}
