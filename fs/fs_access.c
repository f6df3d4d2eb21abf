/* SPDX-License-Identifier: MIT */
/*
 * Who may submit to a queue, and who is an operator (cluster.operator_group): unix group
 * membership, resolved through NSS at each use, so a group made or renumbered while the
 * daemon runs counts at once. Kept out of sched/, which makes no system calls.
 */
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* getgrnam_r's buffer: enough for most groups; grown (up to 1 MiB) for huge member lists */
#define GROUP_BUF_START 16384
#define GROUP_BUF_MAX (1024 * 1024)

/*
 * The gid of group @name into *@ret. Returns 0, -ENOENT (no such group, or NSS could not
 * say: either way it admits nobody) or -ENOMEM. *@buf/@*buf_len: a reusable buffer.
 */
static int group_gid(const char *name, char **buf, size_t *buf_len, gid_t *ret)
{
	struct group gr, *res = NULL;
	int r;

	for (;;) {
		if (!*buf) {
			*buf = malloc(*buf_len);
			if (!*buf)
				return -ENOMEM;
		}
		r = getgrnam_r(name, &gr, *buf, *buf_len, &res);
		if (r != ERANGE || *buf_len >= GROUP_BUF_MAX)
			break;
		free(*buf);
		*buf = NULL;
		*buf_len *= 2;
	}
	if (r != 0 || !res)
		return -ENOENT;
	*ret = res->gr_gid;
	return 0;
}

int fs_queue_check_groups(const struct conf_queue *q, uid_t uid, gid_t gid, const gid_t *groups,
			  size_t group_count, char *why)
{
	char *buf = NULL, names[SCHED_REASON_MAX / 2];
	size_t buf_len = GROUP_BUF_START, off = 0;
	bool member = false;

	if (uid == 0 || q->group_count == 0)
		return 0;
	for (size_t i = 0; i < q->group_count && !member; i++) {
		gid_t g;
		int r = group_gid(q->groups[i], &buf, &buf_len, &g);

		if (r == -ENOMEM) {
			free(buf);
			return r;
		}
		if (r < 0)
			continue;
		member = g == gid;
		for (size_t k = 0; k < group_count && !member; k++)
			member = groups[k] == g;
	}
	free(buf);
	if (member)
		return 0;
	names[0] = '\0';
	for (size_t i = 0; i < q->group_count && off < sizeof(names); i++)
		off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", i ? ", " : "",
					q->groups[i]);
	snprintf(why, SCHED_REASON_MAX,
		 "queue \"%s\" accepts jobs only from groups %s; uid %u is in none of them",
		 q->name, names, (unsigned)uid);
	return -EACCES;
}

int fs_operator_gid(const struct conf_cluster *conf, gid_t *ret)
{
	size_t buf_len = GROUP_BUF_START;
	char *buf = NULL;
	int r;

	if (!conf->operator_group)
		return -ENOENT;
	r = group_gid(conf->operator_group, &buf, &buf_len, ret);
	free(buf);
	return r;
}

bool fs_groups_matter(const struct conf_cluster *conf)
{
	if (conf->operator_group)
		return true;
	for (size_t i = 0; i < conf->queue_count; i++)
		if (conf->queues[i].group_count)
			return true;
	return false;
}

bool fs_may_operate(const struct conf_cluster *conf, uid_t uid, gid_t gid, const gid_t *groups,
		    size_t group_count)
{
	gid_t g;

	if (uid == 0)
		return true;
	if (fs_operator_gid(conf, &g) < 0)
		return false; /* none configured, unknown to NSS, or out of memory: refuse */
	if (g == gid)
		return true;
	for (size_t i = 0; i < group_count; i++)
		if (groups[i] == g)
			return true;
	return false;
}

/* Append one "# warning: " line to *@text (NULL at first); -ENOMEM leaves it as it was. */
static int warning_add(char **text, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int warning_add(char **text, size_t *len, const char *fmt, ...)
{
	char line[512], *n;
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (w < 0)
		return -ENOMEM;
	if ((size_t)w >= sizeof(line))
		w = sizeof(line) - 1;
	n = realloc(*text, *len + 12 + (size_t)w + 2);
	if (!n)
		return -ENOMEM;
	*len += (size_t)sprintf(n + *len, "# warning: %s\n", line);
	*text = n;
	return 0;
}

int fs_config_warnings(const struct conf_cluster *conf, char **ret)
{
	char *text = NULL, *buf = NULL;
	size_t len = 0, buf_len = GROUP_BUF_START;
	int count = 0, r = 0;

	for (size_t i = 0; i < conf->queue_count && r == 0; i++) {
		const struct conf_queue *q = &conf->queues[i];

		for (size_t k = 0; k < q->group_count && r == 0; k++) {
			gid_t g;

			if (group_gid(q->groups[k], &buf, &buf_len, &g) == -ENOENT) {
				r = warning_add(&text, &len,
						"queue %s: group %s is not a known group (getent "
						"group %s): nobody submits to queue %s through it",
						q->name, q->groups[k], q->groups[k], q->name);
				count++;
			}
		}
		/* the quota is kept (and may be enforced after a restart with quotas on) */
		if (r == 0 && q->quota_npus && !conf->enable_quota_limit) {
			r = warning_add(&text, &len,
					"queue %s: quota_npus %u is not enforced: "
					"resource.enable_quota_limit is false; set it to true to "
					"enforce queue quotas",
					q->name, q->quota_npus);
			count++;
		}
	}
	free(buf);
	if (r < 0) {
		free(text);
		return r;
	}
	*ret = text;
	return count;
}
