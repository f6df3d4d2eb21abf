/* SPDX-License-Identifier: MIT */
/*
 * A batch of the committer (fs_store.h): its memory, and its encoding as bytes for a
 * backend that keeps batches as a log (fs_store_etcd.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_store.h"

void fs_batch_free(struct fs_batch *b)
{
	for (size_t i = 0; i < b->job_count; i++)
		free(b->jobs[i].doc);
	for (size_t i = 0; i < b->run_count; i++)
		free(b->runs[i].doc);
	for (size_t i = 0; i < b->server_count; i++)
		free(b->servers[i].doc);
	for (size_t i = 0; i < b->event_count; i++)
		free(b->events[i].mem);
	for (size_t i = 0; i < b->acct_count; i++)
		free(b->accts[i].line);
	free(b->accts);
	while (b->staged_list) {
		struct fs_staged *s = b->staged_list;

		b->staged_list = s->next;
		fs_staged_free(s);
	}
	free(b->jobs);
	free(b->runs);
	free(b->removed);
	free(b->servers);
	free(b->events);
	free(b->meta);
	memset(b, 0, sizeof(*b));
}

/* ---- encoding: records of netstrings ----
 * A batch is its records in order: "batch" first (the format, then the batch's own
 * fields), then "job", "run", "removed", "server", "event", "acct" and "staged"
 * records, then "end" with the count of records before it (a batch cut short is
 * refused, never read in part). Each record is its tag and its fields, every one a netstring
 * "<decimal length>:<bytes>," (D. J. Bernstein's netstrings), or "~," for a field that
 * is absent (SQL's NULL). Numbers are decimal text. A record has a fixed number of
 * fields per tag; a decoder that meets a tag or format it does not know refuses the
 * whole batch rather than drop a record. */

#define BATCH_FORMAT "1"

struct out {
	char *p;
	size_t len, cap;
	bool nomem;
};

static void out_bytes(struct out *o, const void *data, size_t len)
{
	char head[24];
	int n = snprintf(head, sizeof(head), "%zu:", len);

	if (o->nomem)
		return;
	if (o->len + (size_t)n + len + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		char *p;

		while (cap < o->len + (size_t)n + len + 1)
			cap *= 2;
		p = realloc(o->p, cap);
		if (!p) {
			o->nomem = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->len, head, (size_t)n);
	o->len += (size_t)n;
	if (len)
		memcpy(o->p + o->len, data, len);
	o->len += len;
	o->p[o->len++] = ',';
}

/* a string, or "~," for NULL */
static void out_str(struct out *o, const char *s)
{
	if (s) {
		out_bytes(o, s, strlen(s));
		return;
	}
	if (o->nomem)
		return;
	if (o->len + 2 > o->cap) {
		char *p = realloc(o->p, o->cap ? 2 * o->cap : 4096);

		if (!p) {
			o->nomem = true;
			return;
		}
		o->p = p;
		o->cap = o->cap ? 2 * o->cap : 4096;
	}
	o->p[o->len++] = '~';
	o->p[o->len++] = ',';
}

static void out_num(struct out *o, long long v)
{
	char t[24];

	snprintf(t, sizeof(t), "%lld", v);
	out_str(o, t);
}

static size_t staged_count(const struct fs_batch *b)
{
	size_t n = 0;

	for (const struct fs_staged *s = b->staged_list; s; s = s->next)
		n++;
	return n;
}

int fs_batch_encode(const struct fs_batch *b, char **ret, size_t *ret_len)
{
	struct out o = { 0 };

	out_str(&o, "batch");
	out_str(&o, BATCH_FORMAT);
	out_num(&o, (long long)b->version);
	out_num(&o, b->full);
	out_num(&o, b->event_history);
	out_num(&o, b->accounting_history);
	out_num(&o, b->staged_all);
	out_str(&o, b->clock);
	out_str(&o, b->meta);
	for (size_t i = 0; i < b->job_count; i++) {
		const struct fs_batch_job *j = &b->jobs[i];

		out_str(&o, "job");
		out_num(&o, (long long)j->serial);
		out_str(&o, j->name);
		out_str(&o, j->state);
		out_str(&o, j->doc);
		out_num(&o, (long long)j->runs_from);
	}
	for (size_t i = 0; i < b->run_count; i++) {
		out_str(&o, "run");
		out_num(&o, (long long)b->runs[i].serial);
		out_num(&o, (long long)b->runs[i].number);
		out_str(&o, b->runs[i].doc);
	}
	for (size_t i = 0; i < b->removed_count; i++) {
		out_str(&o, "removed");
		out_num(&o, (long long)b->removed[i]);
	}
	for (size_t i = 0; i < b->server_count; i++) {
		out_str(&o, "server");
		out_str(&o, b->servers[i].name);
		out_str(&o, b->servers[i].doc);
	}
	for (size_t i = 0; i < b->event_count; i++) {
		const struct fs_batch_event *e = &b->events[i];

		out_str(&o, "event");
		out_num(&o, (long long)e->seq);
		out_num(&o, (long long)e->time_usec);
		out_num(&o, e->npu);
		out_str(&o, e->kind);
		out_str(&o, e->state);
		out_str(&o, e->job);
		out_str(&o, e->server);
		out_str(&o, e->reason);
		out_str(&o, e->line);
	}
	for (size_t i = 0; i < b->acct_count; i++) {
		out_str(&o, "acct");
		out_num(&o, (long long)b->accts[i].seq);
		out_num(&o, (long long)b->accts[i].time_usec);
		out_str(&o, b->accts[i].job);
		out_str(&o, b->accts[i].line);
	}
	for (const struct fs_staged *s = b->staged_list; s; s = s->next) {
		char groups[1024] = "";
		size_t off = 0;

		for (size_t i = 0; i < s->group_count && off + 12 < sizeof(groups); i++)
			off += (size_t)snprintf(groups + off, sizeof(groups) - off, "%s%u",
						i ? " " : "", (unsigned)s->groups[i]);
		out_str(&o, "staged");
		out_num(&o, s->drop);
		out_str(&o, s->kind);
		out_str(&o, s->key);
		out_str(&o, s->ext);
		out_num(&o, s->uid);
		out_num(&o, s->gid);
		out_str(&o, groups);
		out_bytes(&o, s->drop ? "" : s->body, s->drop ? 0 : s->len);
	}
	/* the end, with the records before it: a batch cut short is never read as whole */
	out_str(&o, "end");
	out_num(&o, (long long)(b->job_count + b->run_count + b->removed_count +
				b->server_count + b->event_count + b->acct_count +
				staged_count(b)));
	if (o.nomem) {
		free(o.p);
		return -ENOMEM;
	}
	*ret = o.p;
	*ret_len = o.len;
	return 0;
}

/* ---- decoding ---- */

struct in {
	const char *start, *p, *end;
	char *why;
	bool bad;
};

struct field {
	const char *p;	/* NULL: absent ("~,") */
	size_t len;
};

/* The next field; false (and in->why) when the bytes are not one. */
static bool in_field(struct in *in, struct field *f, const char *what)
{
	size_t len = 0, digits = 0;
	const char *p = in->p;

	if (in->bad)
		return false;
	if (p + 2 <= in->end && p[0] == '~' && p[1] == ',') {
		f->p = NULL;
		f->len = 0;
		in->p = p + 2;
		return true;
	}
	while (p < in->end && *p >= '0' && *p <= '9' && digits < 19) {
		len = len * 10 + (size_t)(*p++ - '0');
		digits++;
	}
	/* room for ':', the bytes and ',' */
	if (!digits || p >= in->end || *p != ':' || len >= (size_t)(in->end - p - 1) ||
	    p[1 + len] != ',') {
		snprintf(in->why, SCHED_REASON_MAX,
			 "byte %zu: %s is not a netstring (\"<length>:<bytes>,\") within the "
			 "batch's %zu bytes", (size_t)(in->p - in->start), what,
			 (size_t)(in->end - in->start));
		in->bad = true;
		return false;
	}
	f->p = p + 1;
	f->len = len;
	in->p = p + 2 + len;
	return true;
}

/* A field as a new NUL-terminated string (NULL for an absent one when @may_be_absent). */
static bool in_str(struct in *in, char **ret, bool may_be_absent, const char *what)
{
	struct field f;

	*ret = NULL;
	if (!in_field(in, &f, what))
		return false;
	if (!f.p) {
		if (may_be_absent)
			return true;
		snprintf(in->why, SCHED_REASON_MAX, "byte %zu: %s is absent",
			 (size_t)(in->p - in->start - 2), what);
		in->bad = true;
		return false;
	}
	*ret = malloc(f.len + 1);
	if (!*ret) {
		snprintf(in->why, SCHED_REASON_MAX, "out of memory");
		in->bad = true;
		return false;
	}
	memcpy(*ret, f.p, f.len);
	(*ret)[f.len] = '\0';
	return true;
}

/* A field into @buf of @size bytes (absent: ""). */
static bool in_buf(struct in *in, char *buf, size_t size, const char *what)
{
	struct field f;

	if (!in_field(in, &f, what))
		return false;
	if (f.len >= size) {
		snprintf(in->why, SCHED_REASON_MAX, "byte %zu: %s is longer than %zu bytes",
			 (size_t)(f.p - in->start), what, size - 1);
		in->bad = true;
		return false;
	}
	memcpy(buf, f.p ? f.p : "", f.len);
	buf[f.len] = '\0';
	return true;
}

static bool in_num(struct in *in, long long min, long long max, long long *ret,
		   const char *what)
{
	char t[24], *end;

	if (!in_buf(in, t, sizeof(t), what))
		return false;
	errno = 0;
	*ret = strtoll(t, &end, 10);
	if (!t[0] || *end || errno || *ret < min || *ret > max) {
		snprintf(in->why, SCHED_REASON_MAX, "byte %zu: %s \"%s\" is not a number from "
			 "%lld to %lld", (size_t)(in->p - in->start), what, t, min, max);
		in->bad = true;
		return false;
	}
	return true;
}

static bool in_u64(struct in *in, uint64_t *ret, const char *what)
{
	long long v;

	if (!in_num(in, 0, INT64_MAX, &v, what))
		return false;
	*ret = (uint64_t)v;
	return true;
}

/* Room for one more of *@count in *@arr (elements of @size). */
static bool in_grow(struct in *in, void **arr, size_t count, size_t *cap, size_t size)
{
	void *n;
	size_t c;

	if (count < *cap)
		return true;
	c = *cap ? 2 * *cap : 16;
	n = realloc(*arr, c * size);
	if (!n) {
		snprintf(in->why, SCHED_REASON_MAX, "out of memory");
		in->bad = true;
		return false;
	}
	memset((char *)n + *cap * size, 0, (c - *cap) * size);
	*arr = n;
	*cap = c;
	return true;
}

static bool in_event(struct in *in, struct fs_batch_event *e)
{
	struct field f[6];
	long long npu;
	size_t total = 0;
	char *m;

	if (!in_u64(in, &e->seq, "an event's seq") ||
	    !in_u64(in, &e->time_usec, "an event's time") ||
	    !in_num(in, -1, INT32_MAX, &npu, "an event's npu"))
		return false;
	e->npu = (int)npu;
	for (int i = 0; i < 6; i++) {
		if (!in_field(in, &f[i], "an event's string"))
			return false;
		total += f[i].len + 1;
	}
	e->mem = m = malloc(total);
	if (!m) {
		snprintf(in->why, SCHED_REASON_MAX, "out of memory");
		in->bad = true;
		return false;
	}
	/* kind, state, job, server, reason, line: absent only state and line may be */
	for (int i = 0; i < 6; i++) {
		const char **to[] = { &e->kind, &e->state, &e->job, &e->server, &e->reason,
				      &e->line };

		memcpy(m, f[i].p ? f[i].p : "", f[i].len);
		m[f[i].len] = '\0';
		*to[i] = f[i].p || i == 2 || i == 3 ? m : NULL;
		if (!f[i].p && (i == 0 || i == 4)) {
			snprintf(in->why, SCHED_REASON_MAX, "event %llu: its %s is absent",
				 (unsigned long long)e->seq, i ? "reason" : "kind");
			in->bad = true;
			return false;
		}
		m += f[i].len + 1;
	}
	return true;
}

static bool in_staged(struct in *in, struct fs_batch *b, struct fs_staged ***tail)
{
	struct fs_staged *s = calloc(1, sizeof(*s));
	char groups[1024];
	long long drop, uid, gid;
	struct field body;
	const char *g;

	if (!s) {
		snprintf(in->why, SCHED_REASON_MAX, "out of memory");
		in->bad = true;
		return false;
	}
	**tail = s;
	*tail = &s->next;
	if (!in_num(in, 0, 1, &drop, "a staged upload's drop") ||
	    !in_buf(in, s->kind, sizeof(s->kind), "a staged upload's kind") ||
	    !in_buf(in, s->key, sizeof(s->key), "a staged upload's key") ||
	    !in_buf(in, s->ext, sizeof(s->ext), "a staged upload's extension") ||
	    !in_num(in, 0, UINT32_MAX, &uid, "a staged upload's uid") ||
	    !in_num(in, 0, UINT32_MAX, &gid, "a staged upload's gid") ||
	    !in_buf(in, groups, sizeof(groups), "a staged upload's groups") ||
	    !in_field(in, &body, "a staged upload's body"))
		return false;
	s->drop = drop;
	s->uid = (uid_t)uid;
	s->gid = (gid_t)gid;
	s->body = malloc(body.len + 1);
	s->groups = calloc(sizeof(groups) / 2 + 1, sizeof(gid_t));
	if (!s->body || !s->groups) {
		snprintf(in->why, SCHED_REASON_MAX, "out of memory");
		in->bad = true;
		return false;
	}
	memcpy(s->body, body.p ? body.p : "", body.len);
	s->body[body.len] = '\0';
	s->len = body.len;
	/* at most as many as the encoder writes into its 1,024 bytes */
	for (g = groups; *g && s->group_count < sizeof(groups) / 2 + 1;) {
		char *end;

		s->groups[s->group_count++] = (gid_t)strtoul(g, &end, 10);
		g = *end ? end + 1 : end;
	}
	(void)b;
	return true;
}

int fs_batch_decode(const char *data, size_t len, struct fs_batch *b, char *why)
{
	struct in in = { .start = data, .p = data, .end = data + len, .why = why };
	size_t job_cap = 0, removed_cap = 0, server_cap = 0, event_cap = 0, acct_cap = 0;
	struct fs_staged **tail = &b->staged_list;
	char tag[16], format[8];
	bool newer = false;	/* a format or record a newer ascendfs writes */
	long long v;

	memset(b, 0, sizeof(*b));
	if (!in_buf(&in, tag, sizeof(tag), "the first record's tag") ||
	    !in_buf(&in, format, sizeof(format), "the batch's format"))
		goto bad;
	if (strcmp(tag, "batch") != 0 || strcmp(format, BATCH_FORMAT) != 0) {
		snprintf(why, SCHED_REASON_MAX, "a batch of format \"%.7s\" (tag \"%.15s\"); this "
			 "ascendfs reads format " BATCH_FORMAT, format, tag);
		newer = strcmp(tag, "batch") == 0;
		goto bad;
	}
	if (!in_u64(&in, &b->version, "the batch's version") ||
	    !in_num(&in, 0, 1, &v, "the batch's full"))
		goto bad;
	b->full = v;
	if (!in_num(&in, 0, UINT32_MAX, &v, "the batch's event_history"))
		goto bad;
	b->event_history = (unsigned)v;
	if (!in_num(&in, 0, UINT32_MAX, &v, "the batch's accounting_history"))
		goto bad;
	b->accounting_history = (unsigned)v;
	if (!in_num(&in, 0, 1, &v, "the batch's staged_all") ||
	    !in_buf(&in, b->clock, sizeof(b->clock), "the batch's clock") ||
	    !in_str(&in, &b->meta, true, "the batch's meta"))
		goto bad;
	b->staged_all = v;
	for (;;) {
		if (in.p == in.end) {
			snprintf(why, SCHED_REASON_MAX, "the batch is cut short after %zu bytes (no "
				 "end record)", len);
			goto bad;
		}
		if (!in_buf(&in, tag, sizeof(tag), "a record's tag"))
			goto bad;
		if (strcmp(tag, "end") == 0) {
			size_t n = b->job_count + b->run_count + b->removed_count +
				   b->server_count + b->event_count + b->acct_count +
				   staged_count(b);

			if (!in_num(&in, 0, INT64_MAX, &v, "the end's count"))
				goto bad;
			if ((size_t)v != n || in.p != in.end) {
				snprintf(why, SCHED_REASON_MAX, "the batch's end record counts %lld "
					 "records where %zu came%s", v, n,
					 in.p != in.end ? ", and bytes follow it" : "");
				goto bad;
			}
			break;
		}
		if (strcmp(tag, "job") == 0) {
			struct fs_batch_job *j;

			if (!in_grow(&in, (void **)&b->jobs, b->job_count, &job_cap, sizeof(*j)))
				goto bad;
			j = &b->jobs[b->job_count++];
			if (!in_u64(&in, &j->serial, "a job's serial") ||
			    !in_buf(&in, j->name, sizeof(j->name), "a job's name") ||
			    !in_buf(&in, j->state, sizeof(j->state), "a job's state") ||
			    !in_str(&in, &j->doc, false, "a job's record") ||
			    !in_u64(&in, &j->runs_from, "a job's runs_from"))
				goto bad;
		} else if (strcmp(tag, "run") == 0) {
			struct fs_batch_run *r;

			if (!in_grow(&in, (void **)&b->runs, b->run_count, &b->run_cap, sizeof(*r)))
				goto bad;
			r = &b->runs[b->run_count++];
			if (!in_u64(&in, &r->serial, "a history record's serial") ||
			    !in_u64(&in, &r->number, "a history record's number") ||
			    !in_str(&in, &r->doc, false, "a history record"))
				goto bad;
		} else if (strcmp(tag, "removed") == 0) {
			if (!in_grow(&in, (void **)&b->removed, b->removed_count, &removed_cap,
				     sizeof(uint64_t)) ||
			    !in_u64(&in, &b->removed[b->removed_count++], "a removed serial"))
				goto bad;
		} else if (strcmp(tag, "server") == 0) {
			struct fs_batch_server *s;

			if (!in_grow(&in, (void **)&b->servers, b->server_count, &server_cap,
				     sizeof(*s)))
				goto bad;
			s = &b->servers[b->server_count++];
			if (!in_buf(&in, s->name, sizeof(s->name), "a server's name") ||
			    !in_str(&in, &s->doc, false, "a server's record"))
				goto bad;
		} else if (strcmp(tag, "event") == 0) {
			if (!in_grow(&in, (void **)&b->events, b->event_count, &event_cap,
				     sizeof(*b->events)) ||
			    !in_event(&in, &b->events[b->event_count++]))
				goto bad;
		} else if (strcmp(tag, "acct") == 0) {
			struct sched_acct *a;

			if (!in_grow(&in, (void **)&b->accts, b->acct_count, &acct_cap, sizeof(*a)))
				goto bad;
			a = &b->accts[b->acct_count++];
			if (!in_u64(&in, &a->seq, "an accounting record's seq") ||
			    !in_u64(&in, &a->time_usec, "an accounting record's time") ||
			    !in_buf(&in, a->job, sizeof(a->job), "an accounting record's job") ||
			    !in_str(&in, &a->line, false, "an accounting record"))
				goto bad;
			a->line_len = strlen(a->line);
		} else if (strcmp(tag, "staged") == 0) {
			if (!in_staged(&in, b, &tail))
				goto bad;
		} else {
			snprintf(why, SCHED_REASON_MAX, "byte %zu: a record of kind \"%.15s\", which "
				 "this ascendfs does not know", (size_t)(in.p - in.start), tag);
			newer = true;
			goto bad;
		}
	}
	return 0;
bad:
	fs_batch_free(b);
	return strcmp(why, "out of memory") == 0 ? -ENOMEM : newer ? -EPROTO : -EBADMSG;
}
