/* SPDX-License-Identifier: MIT */
/* The report ascend-agent writes, and what it reads back from the mount. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "agent_internal.h"

/* The JSON document in @text (@len bytes; NULL: none) as *@ret_root (json_decref()). */
static int load_json(const char *text, size_t len, const char *source, json_t **ret_root,
		     struct conf_error *err)
{
	json_error_t jerr;

	*ret_root = json_loadb(text ? text : "", text ? len : 0, 0, &jerr);
	if (*ret_root)
		return 0;
	if (json_error_code(&jerr) == json_error_out_of_memory) {
		agent_err_set(err, source, 0, 0, "out of memory");
		return -ENOMEM;
	}
	return agent_err_set(err, source, jerr.line > 0 ? (unsigned)jerr.line : 0,
			     jerr.column > 0 ? (unsigned)jerr.column : 0, "invalid JSON: %s",
			     jerr.text);
}

int agent_parse_node_info(const char *text, size_t len, const char *source,
			  unsigned *ret_npu_count, struct conf_error *err)
{
	json_t *root, *n;
	json_int_t v;
	int r;

	r = load_json(text, len, source, &root, err);
	if (r < 0)
		return r;
	n = json_is_object(root) ? json_object_get(root, "npu_count") : NULL;
	if (!json_is_integer(n)) {
		json_decref(root);
		return agent_err_set(err, source, 0, 0, "no whole-number \"npu_count\"");
	}
	v = json_integer_value(n);
	json_decref(root);
	if (v < 1 || v > CONF_SERVER_NPUS_MAX)
		return agent_err_set(err, source, 0, 0,
				     "npu_count is %lld; a server has 1 to %d NPUs", (long long)v,
				     CONF_SERVER_NPUS_MAX);
	*ret_npu_count = (unsigned)v;
	return 0;
}

/* A JSON number as a double (jansson keeps integers apart from reals). */
static bool json_number(const json_t *v, double *ret)
{
	if (!json_is_number(v))
		return false;
	*ret = json_number_value(v);
	return true;
}

int agent_parse_node_heartbeat(const char *text, size_t len, const char *source,
			       struct agent_node_heartbeat *ret, struct conf_error *err)
{
	struct agent_node_heartbeat hb = { .age_sec = -1 };
	json_t *root, *age, *refused, *reason, *refused_age, *agent;
	int r = 0;

	r = load_json(text, len, source, &root, err);
	if (r < 0)
		return r;
	age = json_is_object(root) ? json_object_get(root, "heartbeat_age_sec") : NULL;
	refused = json_is_object(root) ? json_object_get(root, "last_refused_report") : NULL;
	if (!age || (!json_is_null(age) && !json_number(age, &hb.age_sec)) || hb.age_sec < -1) {
		r = agent_err_set(err, source, 0, 0, "no \"heartbeat_age_sec\" number or null");
		goto out;
	}
	if (!refused) {
		r = agent_err_set(err, source, 0, 0, "no \"last_refused_report\": the daemon is "
				  "older than this agent");
		goto out;
	}
	agent = json_object_get(root, "agent");
	if (json_is_string(agent))
		snprintf(hb.agent, sizeof(hb.agent), "%s", json_string_value(agent));
	else if (agent && !json_is_null(agent)) {
		r = agent_err_set(err, source, 0, 0, "\"agent\" is neither a string nor null");
		goto out;
	}
	if (json_is_object(refused)) {
		reason = json_object_get(refused, "reason");
		refused_age = json_object_get(refused, "age_sec");
		if (!json_is_string(reason) || !json_number(refused_age, &hb.refused_age_sec)) {
			r = agent_err_set(err, source, 0, 0, "\"last_refused_report\" has no "
					  "\"reason\" string and \"age_sec\" number");
			goto out;
		}
		hb.refused = true;
		snprintf(hb.refusal, sizeof(hb.refusal), "%s", json_string_value(reason));
	} else if (!json_is_null(refused)) {
		r = agent_err_set(err, source, 0, 0, "\"last_refused_report\" is neither an object "
				  "nor null");
		goto out;
	}
	*ret = hb;
out:
	json_decref(root);
	return r;
}

/* Decode the mountinfo escapes (\ooo) of the field at @p (@n bytes) into @buf. */
static void unescape_field(const char *p, size_t n, char *buf, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < len; i++) {
		if (p[i] == '\\' && i + 3 < n && p[i + 1] >= '0' && p[i + 1] <= '3' &&
		    p[i + 2] >= '0' && p[i + 2] <= '7' && p[i + 3] >= '0' && p[i + 3] <= '7') {
			buf[o++] = (char)((p[i + 1] - '0') * 64 + (p[i + 2] - '0') * 8 +
					  (p[i + 3] - '0'));
			i += 3;
		} else {
			buf[o++] = p[i];
		}
	}
	buf[o] = '\0';
}

const char *agent_mountinfo_next(const char *mountinfo, size_t len, size_t *pos,
				 struct agent_mount_entry *ret)
{
	while (*pos < len) {
		const char *line = mountinfo + *pos, *end = memchr(line, '\n', len - *pos);
		size_t n = end ? (size_t)(end - line) : len - *pos;
		const char *f[5] = { 0 }, *sep, *type;
		size_t flen[5] = { 0 }, k = 0, i = 0, tlen = 0;

		*pos += n + 1;
		/* fields 1-5: id, parent, major:minor, root, mount point (proc(5)) */
		while (k < 5 && i < n) {
			while (i < n && line[i] == ' ')
				i++;
			f[k] = line + i;
			while (i < n && line[i] != ' ')
				i++;
			flen[k] = (size_t)(line + i - f[k]);
			if (flen[k])
				k++;
		}
		sep = k == 5 ? memmem(line + i, n - i, " - ", 3) : NULL;
		if (!sep)
			continue;
		type = sep + 3;
		while (type + tlen < line + n && type[tlen] != ' ')
			tlen++;
		unescape_field(f[4], flen[4], ret->mount_point, sizeof(ret->mount_point));
		ret->fstype = type;
		ret->fstype_len = tlen;
		return line;
	}
	return NULL;
}

/* Is mount point @mnt (canonical) @path itself or a directory above it? */
static bool mount_holds(const char *mnt, const char *path)
{
	size_t n = strlen(mnt);

	if (strcmp(mnt, "/") == 0)
		return path[0] == '/';
	return strncmp(mnt, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int agent_mount_fstype(const char *mountinfo, size_t len, const char *path, char *ret,
		       size_t ret_len)
{
	struct agent_mount_entry e;
	size_t best = 0, pos = 0;
	bool found = false;

	while (agent_mountinfo_next(mountinfo, len, &pos, &e)) {
		if (!mount_holds(e.mount_point, path) || strlen(e.mount_point) < best)
			continue;
		best = strlen(e.mount_point);
		found = true;
		snprintf(ret, ret_len, "%.*s", (int)e.fstype_len, e.fstype);
	}
	return found ? 0 : -ENOENT;
}

void agent_report_build(const struct conf_health_report *health, unsigned npu_count,
			enum conf_health_level absent, const struct agent_device_ips *ips,
			struct conf_health_report *ret)
{
	struct conf_health_report rep;
	unsigned id;
	size_t i;

	if (npu_count > CONF_SERVER_NPUS_MAX)
		npu_count = CONF_SERVER_NPUS_MAX;
	memset(&rep, 0, sizeof(rep));
	rep.has_node = true;
	rep.node = health && health->has_node ? health->node : CONF_HEALTH_OK;
	for (id = 0; id < npu_count; id++) {
		struct conf_health_npu *n = &rep.npus[rep.npu_count++];

		n->id = id;
		n->has_level = true;
		n->level = absent;
		if (ips && ips->ip[id][0])
			snprintf(n->device_ip, sizeof(n->device_ip), "%s", ips->ip[id]);
	}
	for (i = 0; health && i < health->npu_count && i < CONF_SERVER_NPUS_MAX; i++) {
		const struct conf_health_npu *h = &health->npus[i];
		struct conf_health_npu *n;

		if (h->id >= npu_count)
			continue;
		n = &rep.npus[h->id];
		if (h->has_level) {
			n->level = h->level;
			memcpy(n->code, h->code, sizeof(n->code));
			memcpy(n->message, h->message, sizeof(n->message));
		}
		if (h->device_ip[0])
			memcpy(n->device_ip, h->device_ip, sizeof(n->device_ip));
	}
	*ret = rep;
}

void agent_report_ips(const struct conf_health_report *report, struct agent_device_ips *ret)
{
	size_t i;

	memset(ret, 0, sizeof(*ret));
	for (i = 0; i < report->npu_count && i < CONF_SERVER_NPUS_MAX; i++)
		if (report->npus[i].id < CONF_SERVER_NPUS_MAX)
			snprintf(ret->ip[report->npus[i].id], AGENT_IP_MAX, "%s",
				 report->npus[i].device_ip);
}

void agent_report_strip_ips(struct conf_health_report *report)
{
	size_t i;

	for (i = 0; i < report->npu_count && i < CONF_SERVER_NPUS_MAX; i++)
		report->npus[i].device_ip[0] = '\0';
}
