/* SPDX-License-Identifier: MIT */
/* Trace CSV: the Philly job table and a plain format (sim.h). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

#define PHILLY_HEADER "timestamp,duration,num_gpus,gpu_time,cluster"
#define PLAIN_HEADER "submit_sec,duration_sec,npus,queue,priority"
#define TRACE_NPUS_MAX 65536u
#define TRACE_FIELDS_MAX 10	/* the plain header and all of its optional columns */
#define TRACE_FIELDS_SLACK 8	/* rows of a header of fewer fields may have up to this */

/* The plain format's optional columns, after priority, in any order. */
enum plain_col { COL_TP, COL_PP, COL_EP, COL_CP, COL_MODEL, COL_COUNT };
static const char *const plain_col_names[COL_COUNT] = { "tp", "pp", "ep", "cp", "model" };

/* What the header said: the optional columns by field index (5..). */
struct layout_cols {
	int field[COL_COUNT];	/* field index of each optional column, -1 absent */
	size_t nfields;		/* fields a row has */
};

__attribute__((format(printf, 4, 5))) static int fail(char err[SIM_ERR_MAX], const char *file,
						      size_t line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, SIM_ERR_MAX, "%s:%zu: ", file, line);

	va_start(ap, fmt);
	if (n > 0 && n < SIM_ERR_MAX)
		vsnprintf(err + n, SIM_ERR_MAX - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int tjob_cmp(const void *a, const void *b)
{
	const struct sim_tjob *x = a, *y = b;

	if (x->submit_sec != y->submit_sec)
		return x->submit_sec < y->submit_sec ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Index of queue @name, added when new. */
static int queue_index(struct sim_trace *t, const char *name, unsigned *ret)
{
	size_t i;

	for (i = 0; i < t->nqueue && strcmp(t->queues[i], name) != 0; i++)
		;
	if (i == t->nqueue) {
		char(*n)[CONF_NAME_MAX + 1] = realloc(t->queues, (t->nqueue + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->queues = n;
		snprintf(t->queues[t->nqueue++], sizeof(t->queues[0]), "%s", name);
	}
	*ret = (unsigned)i;
	return 0;
}

/* Split @line (modified) at commas into at most @max (<= TRACE_FIELDS_MAX) fields. */
static size_t split(char *line, char *fields[TRACE_FIELDS_MAX], size_t max)
{
	size_t n = 0;
	char *p = line;

	for (;;) {
		char *comma = strchr(p, ',');

		if (n == max)
			return n + 1; /* too many */
		fields[n++] = p;
		if (!comma)
			return n;
		*comma = '\0';
		p = comma + 1;
	}
}

/* A whole, non-negative decimal number of at most @max; false otherwise. */
static bool read_uint(const char *s, unsigned long long max, unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*ret = v;
	return true;
}

/* A non-negative decimal number of seconds, rounded, at least 1, at most SIM_TIME_MAX. */
static bool read_seconds(const char *s, uint64_t *ret)
{
	char *end;
	double v;

	if (((*s < '0' || *s > '9') && *s != '.') || strspn(s, "0123456789.eE+-") != strlen(s))
		return false; /* decimal only: no hex, inf or nan */
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0) || v > (double)SIM_TIME_MAX)
		return false;
	*ret = v < 1 ? 1 : (uint64_t)(v + 0.5);
	return true;
}

static int parse_philly(struct sim_trace *t, char **f, size_t nf, const char *file, size_t line,
			struct sim_tjob *j, char err[SIM_ERR_MAX])
{
	struct tm tm;
	char *end, queue[CONF_NAME_MAX + 1];
	unsigned long long gpus;
	time_t when;
	size_t hl;

	if (nf != 5)
		return fail(err, file, line, "expected 5 fields (" PHILLY_HEADER "), found %zu",
			    nf > TRACE_FIELDS_MAX ? nf : nf);
	memset(&tm, 0, sizeof(tm));
	end = strptime(f[0], "%Y-%m-%d %H:%M:%S", &tm);
	if (!end || *end)
		return fail(err, file, line,
			    "timestamp: '%.40s' is not a time like 2017-10-09 07:01:55 (UTC)", f[0]);
	{
		struct tm check = tm;

		when = timegm(&check);
		/* timegm() moves Feb 30 to Mar 2: a date that moved did not exist */
		if (check.tm_mday != tm.tm_mday || check.tm_mon != tm.tm_mon)
			return fail(err, file, line, "timestamp: '%.40s' is not a date", f[0]);
	}
	if (when < 0)
		return fail(err, file, line, "timestamp: '%.40s' is before 1970", f[0]);
	j->submit_sec = (uint64_t)when;
	if (!read_seconds(f[1], &j->dur_sec))
		return fail(err, file, line,
			    "duration: '%.40s' is not a number of seconds up to 100 years (e.g. "
			    "2951.0)",
			    f[1]);
	if (!read_uint(f[2], TRACE_NPUS_MAX, &gpus) || gpus == 0)
		return fail(err, file, line, "num_gpus: '%.40s' is not a whole number from 1 to %u",
			    f[2], TRACE_NPUS_MAX);
	j->npus = (unsigned)gpus;
	hl = strlen(f[4]);
	if (hl == 0 || hl > CONF_NAME_MAX - 3 || strspn(f[4], "0123456789abcdefABCDEF") != hl)
		return fail(err, file, line,
			    "cluster: '%.40s' is not a virtual cluster hash (hexadecimal, 1-%d "
			    "characters)",
			    f[4], CONF_NAME_MAX - 3);
	snprintf(queue, sizeof(queue), "vc-%s", f[4]);
	for (char *p = queue; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
	j->priority = 500;
	return queue_index(t, queue, &j->queue);
}

/*
 * The plain header: PLAIN_HEADER, then any of tp, pp, ep, cp and model, each at most
 * once, in any order. Fills @ret; false when @line is not such a header.
 */
static bool plain_header(const char *line, struct layout_cols *ret)
{
	const char *p = line + strlen(PLAIN_HEADER);

	if (strncmp(line, PLAIN_HEADER, strlen(PLAIN_HEADER)) != 0)
		return false;
	for (int k = 0; k < COL_COUNT; k++)
		ret->field[k] = -1;
	ret->nfields = 5;
	while (*p) {
		size_t len;
		int k;

		if (*p != ',')
			return false;
		p++;
		len = strcspn(p, ",");
		for (k = 0; k < COL_COUNT; k++)
			if (strlen(plain_col_names[k]) == len &&
			    strncmp(p, plain_col_names[k], len) == 0)
				break;
		if (k == COL_COUNT || ret->field[k] >= 0)
			return false;
		ret->field[k] = (int)ret->nfields++;
		p += len;
	}
	return true;
}

/* An optional parallel size of @j: empty is 0 (not given), else 1 to npus. */
static int read_dim(char **f, const struct layout_cols *cols, enum plain_col k, const char *file,
		    size_t line, const struct sim_tjob *j, unsigned *ret, char err[SIM_ERR_MAX])
{
	unsigned long long v;
	const char *s;

	*ret = 0;
	if (cols->field[k] < 0 || !*(s = f[cols->field[k]]))
		return 0;
	if (!read_uint(s, j->npus, &v) || v == 0)
		return fail(err, file, line,
			    "%s: '%.40s' is not a whole number from 1 to npus (%u), or empty",
			    plain_col_names[k], s, j->npus);
	*ret = (unsigned)v;
	return 0;
}

/* The tp, pp, ep, cp and model columns of a plain row (sim.h: struct sim_tjob). */
static int parse_layout(char **f, const struct layout_cols *cols, const char *file, size_t line,
			struct sim_tjob *j, char err[SIM_ERR_MAX])
{
	unsigned unit;
	int r;

	if ((r = read_dim(f, cols, COL_TP, file, line, j, &j->tp, err)) < 0 ||
	    (r = read_dim(f, cols, COL_PP, file, line, j, &j->pp, err)) < 0 ||
	    (r = read_dim(f, cols, COL_EP, file, line, j, &j->ep, err)) < 0 ||
	    (r = read_dim(f, cols, COL_CP, file, line, j, &j->cp, err)) < 0)
		return r;
	unit = sim_tjob_unit(j);
	if (j->npus % unit)
		return fail(err, file, line,
			    "tp x pp x cp x ep = %u does not divide npus (%u): the ranks are tp "
			    "x cp x dp x pp with ep dividing dp; change npus or the sizes",
			    unit, j->npus);
	if (cols->field[COL_MODEL] >= 0 && *f[cols->field[COL_MODEL]]) {
		int m = sim_model_find(f[cols->field[COL_MODEL]]);

		if (m < 0)
			return fail(err, file, line,
				    "model: '%.40s' is not a model preset (%s), or empty for the "
				    "default dense model",
				    f[cols->field[COL_MODEL]], sim_model_names());
		j->model = (unsigned)m;
	}
	return 0;
}

static int parse_plain(struct sim_trace *t, char **f, size_t nf, const struct layout_cols *cols,
		       const char *file, size_t line, struct sim_tjob *j, char err[SIM_ERR_MAX])
{
	unsigned long long v;
	const char *queue;
	int r;

	if (nf != cols->nfields && cols->nfields == 5)
		return fail(err, file, line, "expected 5 fields (" PLAIN_HEADER "), found %zu", nf);
	if (nf != cols->nfields)
		return fail(err, file, line, "expected %zu fields, as the header has, found %zu",
			    cols->nfields, nf);
	if (!read_uint(f[0], SIM_TIME_MAX, &v))
		return fail(err, file, line,
			    "submit_sec: '%.40s' is not a whole number of seconds up to 100 years",
			    f[0]);
	j->submit_sec = v;
	if (!read_seconds(f[1], &j->dur_sec))
		return fail(err, file, line,
			    "duration_sec: '%.40s' is not a number of seconds up to 100 years", f[1]);
	if (!read_uint(f[2], TRACE_NPUS_MAX, &v) || v == 0)
		return fail(err, file, line, "npus: '%.40s' is not a whole number from 1 to %u",
			    f[2], TRACE_NPUS_MAX);
	j->npus = (unsigned)v;
	queue = *f[3] ? f[3] : "default";
	if (!conf_name_is_valid(queue))
		return fail(err, file, line,
			    "queue: '%.40s' is not a queue name ([a-z0-9][a-z0-9._-]{0,62})", f[3]);
	if (!*f[4])
		j->priority = 500;
	else if (read_uint(f[4], 1000, &v))
		j->priority = (unsigned)v;
	else
		return fail(err, file, line,
			    "priority: '%.40s' is not a whole number from 0 to 1000 (500 is normal)",
			    f[4]);
	r = parse_layout(f, cols, file, line, j, err);
	if (r < 0)
		return r;
	return queue_index(t, queue, &j->queue);
}

int sim_trace_parse(const char *buf, size_t len, const char *file, struct sim_trace *ret,
		    char err[SIM_ERR_MAX])
{
	struct sim_trace t = { 0 };
	size_t cap = 0, lineno = 0, pos = 0;
	bool header = false;
	struct layout_cols cols = { .nfields = 5 };
	char line[1024];
	int r = 0;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		char *fields[TRACE_FIELDS_MAX];
		size_t nf;

		lineno++;
		if (ll >= sizeof(line)) {
			r = fail(err, file, lineno, "line longer than %zu bytes; not a trace row",
				 sizeof(line) - 1);
			goto fail;
		}
		memcpy(line, buf + pos, ll);
		line[ll] = '\0';
		pos += ll + (nl ? 1 : 0);
		if (ll && line[ll - 1] == '\r')
			line[--ll] = '\0';
		if (lineno == 1 && ll >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
			memmove(line, line + 3, ll - 2); /* a UTF-8 byte-order mark */
			ll -= 3;
		}
		if (memchr(line, '\0', ll)) {
			r = fail(err, file, lineno, "binary data (a NUL byte); not a CSV trace");
			goto fail;
		}
		if (line[strspn(line, " \t")] == '\0')
			continue;
		if (!header) {
			if (strcmp(line, PHILLY_HEADER) == 0)
				t.format = SIM_TRACE_PHILLY;
			else if (plain_header(line, &cols))
				t.format = SIM_TRACE_PLAIN;
			else {
				r = fail(err, file, lineno,
					 "unknown trace format: the first line must be the header "
					 "'" PHILLY_HEADER "' (Philly) or '" PLAIN_HEADER "' (with "
					 "any of the columns tp, pp, ep, cp, model after it)");
				goto fail;
			}
			header = true;
			continue;
		}
		if (t.n == cap) {
			size_t nc = cap ? cap * 2 : 1024;
			struct sim_tjob *nj = realloc(t.jobs, nc * sizeof(*nj));

			if (!nj) {
				r = -ENOMEM;
				goto fail;
			}
			t.jobs = nj;
			cap = nc;
		}
		memset(&t.jobs[t.n], 0, sizeof(t.jobs[0]));
		t.jobs[t.n].line = lineno;
		{
			size_t max = cols.nfields > TRACE_FIELDS_SLACK ? cols.nfields :
									 TRACE_FIELDS_SLACK;

			nf = split(line, fields, max);
			if (nf > max) {
				r = fail(err, file, lineno, "more than %zu fields; not a trace row",
					 max);
				goto fail;
			}
		}
		r = t.format == SIM_TRACE_PHILLY ?
			    parse_philly(&t, fields, nf, file, lineno, &t.jobs[t.n], err) :
			    parse_plain(&t, fields, nf, &cols, file, lineno, &t.jobs[t.n], err);
		if (r < 0)
			goto fail;
		t.n++;
	}
	if (!header) {
		r = fail(err, file, lineno ? lineno : 1,
			 "empty trace: expected the header '" PHILLY_HEADER "' or '" PLAIN_HEADER
			 "' and one row per job");
		goto fail;
	}
	if (t.n == 0) {
		r = fail(err, file, lineno, "the trace has a header but no job rows");
		goto fail;
	}
	qsort(t.jobs, t.n, sizeof(*t.jobs), tjob_cmp);
	snprintf(t.file, sizeof(t.file), "%s", file);
	if (t.jobs[t.n - 1].submit_sec - t.jobs[0].submit_sec > SIM_TIME_MAX) {
		r = fail(err, file, t.jobs[t.n - 1].line,
			 "this job arrives more than 100 years after the first (line %zu); "
			 "ascend-sim replays at most 100 years: fix or remove the row",
			 t.jobs[0].line);
		goto fail;
	}
	t.origin_sec = t.jobs[0].submit_sec;
	for (size_t i = 0; i < t.n; i++)
		t.jobs[i].submit_sec -= t.origin_sec;
	*ret = t;
	return 0;
fail:
	if (r == -ENOMEM)
		snprintf(err, SIM_ERR_MAX, "%s: out of memory", file);
	sim_trace_free(&t);
	return r;
}

void sim_trace_free(struct sim_trace *t)
{
	if (!t)
		return;
	free(t->jobs);
	free(t->queues);
	memset(t, 0, sizeof(*t));
}

int sim_trace_slice(struct sim_trace *t, size_t from, size_t to, char err[SIM_ERR_MAX])
{
	uint64_t base;
	char upto[32] = "";

	if (to != SIZE_MAX)
		snprintf(upto, sizeof(upto), "%zu", to);
	if (to > t->n)
		to = t->n;
	if (from >= to) {
		snprintf(err, SIM_ERR_MAX,
			 "--slice %zu:%s keeps no job (the trace has %zu jobs, numbered from 0)",
			 from, upto, t->n);
		return -EINVAL;
	}
	memmove(t->jobs, t->jobs + from, (to - from) * sizeof(*t->jobs));
	t->n = to - from;
	base = t->jobs[0].submit_sec;
	t->origin_sec += base;
	for (size_t i = 0; i < t->n; i++)
		t->jobs[i].submit_sec -= base;
	return 0;
}

int sim_trace_scale_load(struct sim_trace *t, double factor)
{
	if (!(factor > 0) || factor > 1e6)
		return -EINVAL;
	for (size_t i = 0; i < t->n; i++)
		t->jobs[i].submit_sec = (uint64_t)((double)t->jobs[i].submit_sec / factor + 0.5);
	return 0;
}
