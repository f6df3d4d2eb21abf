/* SPDX-License-Identifier: MIT */
/*
 * Per-job cgroups, the parts without I/O (agent.h says what the layout is): the names
 * the launcher gives job cgroups, what a restarted agent does with those it finds, and
 * the kernel's text files it reads (cgroup.events, cpu.stat, /proc/self/cgroup,
 * /proc/self/mountinfo). The file formats are those of the kernel's cgroup v2
 * documentation (Documentation/admin-guide/cgroup-v2.rst: "flat keyed" files,
 * "populated", cpu.stat's usage_usec) and of cgroups(7) and proc(5).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"

#define JOB_PREFIX "job-"

int agent_cgroup_node_name(const char *node, const char *mount, char *ret, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a, 32 bits */
	int n;

	if (!conf_name_is_valid(node) || !mount)
		return -EINVAL;
	for (const unsigned char *p = (const unsigned char *)mount; *p; p++)
		h = (h ^ *p) * 16777619u;
	n = snprintf(ret, len, "node-%s-%08x", node, (unsigned)h);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int agent_cgroup_job_name(const char *job, unsigned generation, char *ret, size_t len)
{
	int n;

	if (!conf_name_is_valid(job) || generation == 0)
		return -EINVAL;
	n = snprintf(ret, len, JOB_PREFIX "%s.g%u", job, generation);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int agent_cgroup_parse_job_name(const char *name, char *ret_job, unsigned *ret_generation)
{
	const char *job, *g;
	unsigned long long v = 0;
	size_t n;

	if (!name || strncmp(name, JOB_PREFIX, strlen(JOB_PREFIX)) != 0)
		return -EINVAL;
	job = name + strlen(JOB_PREFIX);
	g = strrchr(job, '.');
	if (!g || g == job || g[1] != 'g' || !g[2])
		return -EINVAL;
	for (const char *p = g + 2; *p; p++) {
		if (*p < '0' || *p > '9' || (p == g + 2 && *p == '0'))
			return -EINVAL;
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > 0xffffffffULL)
			return -EINVAL;
	}
	n = (size_t)(g - job);
	if (n > CONF_NAME_MAX)
		return -EINVAL;
	{
		char tmp[CONF_NAME_MAX + 1];

		memcpy(tmp, job, n);
		tmp[n] = '\0';
		if (!conf_name_is_valid(tmp))
			return -EINVAL;
		memcpy(ret_job, tmp, n + 1);
	}
	*ret_generation = (unsigned)v;
	return 0;
}

void agent_cgroup_decide(const char *const *names, size_t count,
			 const struct agent_share *shares, size_t share_count,
			 enum agent_cgroup_verdict *ret)
{
	for (size_t i = 0; i < count; i++) {
		char job[CONF_NAME_MAX + 1];
		unsigned generation;

		ret[i] = AGENT_CGROUP_FOREIGN;
		if (agent_cgroup_parse_job_name(names[i], job, &generation) < 0)
			continue;
		ret[i] = AGENT_CGROUP_STOP;
		for (size_t k = 0; k < share_count; k++)
			if (shares[k].generation == generation && strcmp(shares[k].job, job) == 0)
				ret[i] = AGENT_CGROUP_ADOPT;
			else if (ret[i] == AGENT_CGROUP_STOP &&
				 agent_share_keeps(&shares[k], job, generation))
				ret[i] = AGENT_CGROUP_KEEP;
	}
}

bool agent_share_keeps(const struct agent_share *s, const char *job, unsigned generation)
{
	return s->kept_from && s->kept_from <= generation && generation < s->generation &&
	       strcmp(s->job, job) == 0;
}

int agent_cgroup_keyed(const char *text, size_t len, const char *key, unsigned long long *ret)
{
	size_t klen = strlen(key), pos = 0;

	while (pos < len) {
		const char *line = text + pos, *end = memchr(line, '\n', len - pos);
		size_t n = end ? (size_t)(end - line) : len - pos;

		pos += n + 1;
		if (n > klen && memcmp(line, key, klen) == 0 && line[klen] == ' ') {
			unsigned long long v = 0;
			size_t i = klen + 1;

			if (i >= n)
				return -EINVAL;
			for (; i < n; i++) {
				unsigned d;

				if (line[i] < '0' || line[i] > '9')
					return -EINVAL;
				d = (unsigned)(line[i] - '0');
				if (v > (~0ULL - d) / 10)
					return -EINVAL;
				v = v * 10 + d;
			}
			*ret = v;
			return 0;
		}
	}
	return -ENOENT;
}

int agent_cgroup_self(const char *text, size_t len, char *ret, size_t ret_len)
{
	size_t pos = 0;

	while (pos < len) {
		const char *line = text + pos, *end = memchr(line, '\n', len - pos);
		size_t n = end ? (size_t)(end - line) : len - pos;

		pos += n + 1;
		if (n >= 4 && memcmp(line, "0::", 3) == 0 && line[3] == '/') {
			if (n - 3 + 1 > ret_len)
				return -ENAMETOOLONG;
			memcpy(ret, line + 3, n - 3);
			ret[n - 3] = '\0';
			return 0;
		}
	}
	return -ENOENT;
}

int agent_cgroup2_mount(const char *mountinfo, size_t len, char *ret, size_t ret_len)
{
	struct agent_mount_entry e;
	size_t pos = 0;

	while (agent_mountinfo_next(mountinfo, len, &pos, &e)) {
		if (e.fstype_len != 7 || memcmp(e.fstype, "cgroup2", 7) != 0)
			continue;
		if (strlen(e.mount_point) + 1 > ret_len ||
		    strlen(e.mount_point) + 1 >= sizeof(e.mount_point))
			return -ENAMETOOLONG;
		memcpy(ret, e.mount_point, strlen(e.mount_point) + 1);
		return 0;
	}
	return -ENOENT;
}
