/* SPDX-License-Identifier: MIT */
/*
 * The processes of a job log (fs.h: jobs/<job>/logs/): which process wrote each line of
 * a log file, how many bytes each process has in it (the index that gives a
 * per-process file its exact size without reading), and what a per-process file
 * reads: its process's lines, found by scanning the log. No locks and no state of
 * its own: fs_joblog.c holds the logs and their locks.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_internal.h"

/* "rank-" and at most this many digits: fs_joblog_proc_parse() */
#define PROC_RANK_DIGITS 6
/* The longest process name ("rank-" and its digits), and generation's head "[g<N> " */
#define PROC_NAME_MAX (5 + PROC_RANK_DIGITS)
#define LINE_HEAD_MAX (2 + 10 + 1)

int fs_joblog_proc_parse(const char *s, size_t len, uint32_t *ret)
{
	uint32_t n = 0;

	if (len == 4 && memcmp(s, "node", 4) == 0) {
		*ret = FS_LOG_PROC_NODE;
		return 0;
	}
	if (len == 9 && memcmp(s, "scheduler", 9) == 0) {
		*ret = FS_LOG_PROC_SCHEDULER;
		return 0;
	}
	/* rank-<N>: decimal, no leading zero, as the agent names them */
	if (len <= 5 || len > 5 + PROC_RANK_DIGITS || memcmp(s, "rank-", 5) != 0 ||
	    (s[5] == '0' && len > 6))
		return -EINVAL;
	for (size_t i = 5; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint32_t)(s[i] - '0');
	}
	*ret = FS_LOG_PROC_RANK(n);
	return 0;
}

int fs_joblog_proc_name(uint32_t proc, char *buf, size_t len)
{
	int n;

	if (proc == FS_LOG_PROC_SCHEDULER)
		n = snprintf(buf, len, "scheduler");
	else if (proc == FS_LOG_PROC_NODE)
		n = snprintf(buf, len, "node");
	else
		n = snprintf(buf, len, "rank-%u", proc - FS_LOG_PROC_RANK(0));
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int fs_joblog_line_proc(const char *line, size_t len, uint32_t *ret)
{
	const char *end = line + len, *p, *name;

	if ((len >= 1 && line[0] != '[') || (len >= 2 && line[1] != 'g'))
		return -EINVAL;
	for (p = line + 2; p < end && *p >= '0' && *p <= '9' && p - line < LINE_HEAD_MAX; p++)
		;
	if (p >= end)
		return p - line > LINE_HEAD_MAX ? -EINVAL : 0;
	if (*p != ' ' || p == line + 2)
		return -EINVAL;
	name = ++p;
	while (p < end && *p != ' ' && *p != '\n' && p - name <= PROC_NAME_MAX)
		p++;
	if (p >= end)
		return p - name > PROC_NAME_MAX ? -EINVAL : 0;
	if (*p != ' ')
		return -EINVAL;
	return fs_joblog_proc_parse(name, (size_t)(p - name), ret) < 0 ? -EINVAL : 1;
}

/* ---- the index ---- */

/* The first entry whose process is not below @proc. */
static size_t lower_bound(const struct fs_joblog_index *x, uint32_t proc)
{
	size_t lo = 0, hi = x->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->v[mid].proc < proc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int fs_joblog_index_add(struct fs_joblog_index *x, uint32_t proc, uint64_t bytes, bool old)
{
	size_t i = lower_bound(x, proc);

	if (i == x->count || x->v[i].proc != proc) {
		if (x->count == x->cap) {
			size_t cap = x->cap ? x->cap * 2 : 8;
			struct fs_joblog_proc_bytes *v = realloc(x->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			x->v = v;
			x->cap = cap;
		}
		memmove(&x->v[i + 1], &x->v[i], (x->count - i) * sizeof(x->v[0]));
		x->v[i] = (struct fs_joblog_proc_bytes){ .proc = proc };
		x->count++;
	}
	if (old)
		x->v[i].old_bytes += bytes;
	else
		x->v[i].cur_bytes += bytes;
	return 0;
}

void fs_joblog_index_rotate(struct fs_joblog_index *x)
{
	size_t n = 0;

	/* what the current file held is log.1's now; a process without lines there goes */
	for (size_t i = 0; i < x->count; i++) {
		if (!x->v[i].cur_bytes)
			continue;
		x->v[n].proc = x->v[i].proc;
		x->v[n].old_bytes = x->v[i].cur_bytes;
		x->v[n].cur_bytes = 0;
		n++;
	}
	x->count = n;
}

const struct fs_joblog_proc_bytes *fs_joblog_index_find(const struct fs_joblog_index *x,
							uint32_t proc)
{
	size_t i = lower_bound(x, proc);

	return i < x->count && x->v[i].proc == proc ? &x->v[i] : NULL;
}

void fs_joblog_index_release(struct fs_joblog_index *x)
{
	free(x->v);
	*x = (struct fs_joblog_index){ 0 };
}

/* ---- scanning a log file ---- */

int64_t fs_joblog_scan(int fd, uint64_t from, uint64_t to, char *buf, size_t cap,
		       struct fs_joblog_scan_state *st, fs_joblog_line_fn fn, void *arg)
{
	size_t want = to - from > cap ? cap : (size_t)(to - from), got = 0, done = 0;

	while (got < want) {
		ssize_t n = pread(fd, buf + got, want - got, (off_t)(from + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* shorter than it was said to be: what is there */
		got += (size_t)n;
	}
	while (done < got) {
		char *nl = memchr(buf + done, '\n', got - done);
		size_t end = nl ? (size_t)(nl - buf) + 1 : got;
		bool cut = !nl && from + got < to;
		struct fs_joblog_scan_state before = *st;
		int r;

		/* a line that goes on past the buffer is read from its start by the next call,
		 * unless it alone fills the buffer: then it is given in pieces */
		if (cut && done > 0)
			break;
		if (!st->in_line && fs_joblog_line_proc(buf + done, end - done, &st->proc) < 1)
			st->proc = FS_LOG_PROC_NONE;
		/* a last line without its newline (a crash cut it) ends at the file's end */
		st->in_line = cut;
		r = fn(arg, st->proc, buf + done, end - done);
		if (r < 0)
			return r;
		if (r > 0) { /* not taken: the next call begins with it */
			*st = before;
			break;
		}
		done = end;
	}
	return (int64_t)(from + done);
}

/* ---- what a per-process file reads ---- */

/* One read of a filter: where it is, and what it copies out. */
struct filter_read {
	struct fs_joblog_filter *f;
	uint64_t pos;		/* the offset in the process's lines reached */
	size_t skip;		/* bytes of the next piece already behind @pos */
	uint64_t off;		/* the read's offset */
	char *dst;
	size_t size, got;
};

static int take_line(void *arg, uint32_t proc, const char *line, size_t len)
{
	struct filter_read *rd = arg;
	size_t at = rd->skip, n;

	if (proc == FS_LOG_PROC_NONE || proc != rd->f->proc)
		return 0;
	/* up to the read's offset: passed over */
	if (rd->pos < rd->off) {
		n = rd->off - rd->pos < len - at ? (size_t)(rd->off - rd->pos) : len - at;
		at += n;
		rd->pos += n;
	}
	n = len - at < rd->size - rd->got ? len - at : rd->size - rd->got;
	memcpy(rd->dst + rd->got, line + at, n);
	rd->got += n;
	rd->pos += n;
	at += n;
	if (at < len) { /* the read is full: this line is where the next one goes on */
		rd->skip = at;
		return 1;
	}
	rd->skip = 0;
	return 0;
}

void fs_joblog_filter_reset(struct fs_joblog_filter *f)
{
	uint32_t proc = f->proc;

	*f = (struct fs_joblog_filter){ .proc = proc };
}

int fs_joblog_filter_read(struct fs_joblog_filter *f, int fd, uint64_t avail, char *dst,
			  size_t size, uint64_t off)
{
	struct filter_read rd = { .f = f, .off = off, .dst = dst, .size = size };
	char *buf;
	int r = 0;

	if (off < f->pos)
		fs_joblog_filter_reset(f); /* a reader went back: read again from the start */
	rd.pos = f->pos;
	rd.skip = f->skip;
	/* the buffer lives for one read: an open file holds a few words, not a buffer */
	buf = malloc(FS_JOBLOG_SCAN_BYTES);
	if (!buf)
		return -ENOMEM;
	while (rd.got < size && f->at < avail) {
		size_t got = rd.got;
		int64_t at = fs_joblog_scan(fd, f->at, avail, buf, FS_JOBLOG_SCAN_BYTES, &f->state,
					    take_line, &rd);

		if (at < 0) { /* (before any line: pread() failed) */
			r = got ? 0 : (int)at;
			break;
		}
		f->pos = rd.pos;
		f->skip = rd.skip;
		if ((uint64_t)at == f->at)
			break; /* the read is full within the line at f->at (or nothing more) */
		f->at = (uint64_t)at;
	}
	free(buf);
	return r < 0 ? r : (int)rd.got;
}
