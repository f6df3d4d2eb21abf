/* SPDX-License-Identifier: MIT */
/*
 * Recovery strategy names (issue 17): a job spec's `recovery:` ladder and the cluster's
 * `recovery_strategies:` bound are lists of these words. The words are MindCluster's
 * recover-strategy words where it has one ("retry": its online step retry for a
 * transient fault; "dump": the dying-gasp checkpoint;
 * "in-place": its recover-in-place, which restarts only the failed processes on the same
 * NPUs); "process" is its process-level rescheduling ("recover": only the failed server's
 * processes start again, elsewhere); "job" is its job-level rescheduling, what ascendfs
 * did before the ladder.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf_internal.h"

static const char *const names[CONF_RECOVERY_COUNT] = {
	[CONF_RECOVERY_DUMP] = "dump",
	[CONF_RECOVERY_JOB] = "job",
	[CONF_RECOVERY_IN_PLACE] = "in-place",
	[CONF_RECOVERY_PROCESS] = "process",
	[CONF_RECOVERY_RETRY] = "retry",
};

const char *conf_recovery_name(enum conf_recovery r)
{
	return (unsigned)r < CONF_RECOVERY_COUNT ? names[r] : "unknown";
}

size_t conf_recovery_list_text(const enum conf_recovery *list, size_t count, char *buf,
			       size_t len)
{
	size_t used = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	for (size_t i = 0; i < count; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
				 conf_recovery_name(list[i]));

		if (n < 0 || (size_t)n >= len - used)
			return used;
		used += (size_t)n;
	}
	return used;
}

static int read_one(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		    enum conf_recovery *ret)
{
	const char *text;
	int r = conf_read_string(ctx, n, key, false, &text);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < CONF_RECOVERY_COUNT; i++)
		if (strcmp(text, names[i]) == 0) {
			*ret = (enum conf_recovery)i;
			return 0;
		}
	return conf_fail(ctx, n,
			 "%s: unknown recovery strategy \"%s\"; the strategies are retry "
			 "(recompute the step after a transient NPU fault), in-place (restart "
			 "only the process that exited), process (restart only a failed "
			 "server's processes, on a replacement), dump (the survivors save the "
			 "step they finished, the job restarts from it) and job (every process "
			 "restarts from the newest checkpoint)",
			 key, text);
}

int conf_read_recovery_list(const struct conf_ctx *ctx, const struct conf_node *n,
			    const char *key, enum conf_recovery *list, size_t *ret_count)
{
	unsigned seen = 0;
	size_t count = 0;
	int r;

	if (n->kind == CONF_NODE_SCALAR && !conf_node_is_null(n)) {
		/* one word: a ladder of one strategy */
		r = read_one(ctx, n, key, &list[0]);
		if (r < 0)
			return r;
		*ret_count = 1;
		return 0;
	}
	r = conf_expect_seq(ctx, n, key);
	if (r < 0)
		return r;
	if (n->count == 0)
		return conf_fail(ctx, n,
				 "%s: the list is empty; name at least one strategy, e.g. "
				 "%s: [job]",
				 key, key);
	for (size_t i = 0; i < n->count; i++) {
		enum conf_recovery s;

		r = read_one(ctx, n->items[i], key, &s);
		if (r < 0)
			return r;
		if (seen & (1u << s))
			return conf_fail(ctx, n->items[i],
					 "%s: \"%s\" is listed twice; name each strategy once, "
					 "in the order to try them",
					 key, names[s]);
		if (seen & (1u << CONF_RECOVERY_JOB))
			return conf_fail(ctx, n->items[i],
					 "%s: \"%s\" comes after job, which always applies, so it "
					 "would never be tried; put job last",
					 key, names[s]);
		seen |= 1u << s;
		list[count++] = s;
	}
	*ret_count = count;
	return 0;
}
