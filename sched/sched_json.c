/* SPDX-License-Identifier: MIT */
/* JSON building blocks of sched/ (sched_json.h says the rules). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched_internal.h"
#include "sched_json.h"

static _Thread_local int json_failed;

json_t *sched_jsec(uint64_t usec)
{
	return json_real((double)((usec + 500) / 1000) / 1e3);
}

json_t *sched_jratio(uint64_t num, uint64_t den)
{
	return json_real(den ? (double)((num * 10000 + den / 2) / den) / 1e4 : 0.0);
}

json_t *sched_jstr(const char *s)
{
	json_t *v;
	char *copy;

	if (!s)
		s = "";
	v = json_string(s);
	if (v)
		return v;
	copy = strdup(s);
	if (!copy) {
		json_failed = -ENOMEM;
		return NULL;
	}
	for (unsigned char *p = (unsigned char *)copy; *p; p++)
		if (*p >= 0x80)
			*p = '?';
	v = json_string(copy);
	free(copy);
	if (!v)
		json_failed = -ENOMEM;
	return v;
}

void sched_jset(json_t *o, const char *key, json_t *v)
{
	if (!o || !v || json_object_set_new(o, key, v) < 0) /* steals v even on failure */
		json_failed = -ENOMEM;
}

void sched_jpush(json_t *a, json_t *v)
{
	if (!a || !v || json_array_append_new(a, v) < 0)
		json_failed = -ENOMEM;
}

int sched_json_finish(json_t *root, char **ret, size_t *ret_len, size_t flags)
{
	char *s;
	int failed = json_failed;

	json_failed = 0;
	if (!root || failed) {
		json_decref(root);
		return -ENOMEM;
	}
	s = json_dumps(root, flags | JSON_REAL_PRECISION(15));
	json_decref(root);
	if (!s)
		return -ENOMEM;
	*ret_len = strlen(s);
	/* a trailing newline makes `cat` output end cleanly */
	{
		char *n = realloc(s, *ret_len + 2);

		if (!n) {
			free(s);
			return -ENOMEM;
		}
		s = n;
		s[(*ret_len)++] = '\n';
		s[*ret_len] = '\0';
	}
	*ret = s;
	return 0;
}

void sched_iso_time(uint64_t usec, char *out, size_t len)
{
	time_t t = (time_t)(usec / 1000000);
	struct tm tm;

	if (!usec) {
		snprintf(out, len, "%s", "");
		return;
	}
	gmtime_r(&t, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(usec % 1000000 / 1000));
}

void sched_jtime(json_t *o, const char *key, uint64_t usec)
{
	char t[64];

	if (!usec) {
		sched_jset(o, key, json_null());
		return;
	}
	sched_iso_time(usec, t, sizeof(t));
	sched_jset(o, key, sched_jstr(t));
}

void sched_json_buf_line(struct sched_buf *b, json_t *o)
{
	char *line = sched_json_line(o);

	if (!line) {
		b->err = -ENOMEM;
		return;
	}
	sched_buf_printf(b, "%s\n", line);
	free(line);
}

char *sched_json_line(json_t *o)
{
	char *line = o && !json_failed ?
			     json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;

	json_failed = 0;
	json_decref(o);
	return line;
}
