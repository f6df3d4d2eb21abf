/* SPDX-License-Identifier: MIT */
/*
 * Job arrays' index sets (`array:`): Slurm's --array syntax read into a bitmap and written
 * back as the shortest runs. What an array does is the scheduler's (sched_array.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

bool conf_job_array_has(const struct conf_job_array *a, unsigned index)
{
	return index <= CONF_ARRAY_INDEX_MAX && (a->set[index / 8] >> (index % 8)) & 1u;
}

static void add(struct conf_job_array *a, unsigned index)
{
	if (conf_job_array_has(a, index))
		return;
	a->set[index / 8] |= (unsigned char)(1u << (index % 8));
	a->count++;
}

/* A decimal number at *@p (no sign, at most 7 digits), moved past. */
static bool number(const char **p, unsigned *ret)
{
	unsigned long v = 0;
	int digits = 0;

	while (**p >= '0' && **p <= '9' && digits < 8) {
		v = v * 10 + (unsigned long)(**p - '0');
		(*p)++;
		digits++;
	}
	*ret = (unsigned)v;
	return digits > 0 && digits < 8;
}

/* conf_job_array_parse(), leaving @a half read on an error. */
static int parse(const char *text, struct conf_job_array *a, char *why, size_t why_len)
{
	const char *p = text;

	memset(a, 0, sizeof(*a));
	if (!*p || *p == '%') {
		snprintf(why, why_len, "no indexes; give them as 0-99, 1,3,5 or 0-98:2, and "
				       "%%N after them for at most N at once");
		return -EINVAL;
	}
	for (;;) {
		unsigned first, last, step = 1;

		if (!number(&p, &first))
			goto syntax;
		last = first;
		if (*p == '-') {
			p++;
			if (!number(&p, &last))
				goto syntax;
			if (*p == ':') {
				p++;
				if (!number(&p, &step))
					goto syntax;
				if (step == 0) {
					snprintf(why, why_len, "range %u-%u:0: a step is 1 or more",
						 first, last);
					return -EINVAL;
				}
			}
		}
		if (last < first) {
			snprintf(why, why_len, "range %u-%u ends before it starts", first, last);
			return -EINVAL;
		}
		if (last > CONF_ARRAY_INDEX_MAX) {
			snprintf(why, why_len, "index %u is above %d, the largest an array has "
					       "(Slurm's default MaxArraySize)",
				 last, CONF_ARRAY_INDEX_MAX);
			return -EINVAL;
		}
		for (unsigned i = first; i <= last; i += step)
			add(a, i);
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '%') {
		p++;
		if (!number(&p, &a->throttle) || *p)
			goto syntax;
		if (a->throttle == 0) {
			snprintf(why, why_len, "%%0: at most 0 elements at once would run none; "
					       "give %%1 or more, or leave it out");
			return -EINVAL;
		}
		if (a->throttle >= a->count)
			a->throttle = 0; /* no limit in effect */
		return 0;
	}
	if (!*p)
		return 0;
syntax:
	snprintf(why, why_len, "not an index list at \"%.16s\"; give indexes as 0-99, 1,3,5 "
			       "or 0-98:2 (0 to %d), and %%N after them for at most N at once",
		 *p ? p : "(end)", CONF_ARRAY_INDEX_MAX);
	return -EINVAL;
}

int conf_job_array_parse(const char *text, struct conf_job_array *a, char *why,
			 size_t why_len)
{
	int r = parse(text, a, why, why_len);

	if (r < 0)
		memset(a, 0, sizeof(*a)); /* nothing half read */
	return r;
}

/* The next index of @a at or after @from, or CONF_ARRAY_INDEX_MAX + 1. */
static unsigned next_index(const struct conf_job_array *a, unsigned from)
{
	while (from <= CONF_ARRAY_INDEX_MAX && !conf_job_array_has(a, from))
		from++;
	return from;
}

char *conf_job_array_text(const struct conf_job_array *a, bool with_throttle, char *buf,
			  size_t len)
{
	size_t n = 0;
	unsigned i = next_index(a, 0);

	if (len)
		buf[0] = '\0';
	while (i <= CONF_ARRAY_INDEX_MAX && n < len) {
		unsigned next = next_index(a, i + 1), step, last = i, runs = 1;
		int w;

		/* a run of three or more at one step (two when the step is 1) */
		if (next <= CONF_ARRAY_INDEX_MAX) {
			step = next - i;
			last = next;
			runs = 2;
			while (last + step <= CONF_ARRAY_INDEX_MAX &&
			       next_index(a, last + 1) == last + step) {
				last += step;
				runs++;
			}
			if (runs < 3 && step != 1) {
				last = i;
				runs = 1;
			}
		}
		if (runs == 1)
			w = snprintf(buf + n, len - n, "%s%u", n ? "," : "", i);
		else if (step == 1)
			w = snprintf(buf + n, len - n, "%s%u-%u", n ? "," : "", i, last);
		else
			w = snprintf(buf + n, len - n, "%s%u-%u:%u", n ? "," : "", i, last, step);
		if (w < 0 || (size_t)w >= len - n)
			return buf; /* cut short: a buffer smaller than CONF_ARRAY_TEXT_MAX */
		n += (size_t)w;
		i = next_index(a, last + 1);
	}
	if (with_throttle && a->throttle && n < len)
		snprintf(buf + n, len - n, "%%%u", a->throttle);
	return buf;
}
