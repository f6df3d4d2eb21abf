/* SPDX-License-Identifier: MIT */
/*
 * Text the renders build: a growing buffer that latches its first failure, and JSON
 * written straight into it. The JSON writer is for the files read on the hot path (the
 * rank table: issue 16 measured 0.64 ms to build a 512-rank table as jansson values and
 * dump it, 1 ms in the daemon, under its lock); its text is what jansson's json_dumps()
 * with JSON_INDENT(n) gives for the same values, so readers see no difference.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sched_internal.h"

void sched_buf_grow(struct sched_buf *b, size_t more)
{
	char *n;
	size_t cap;

	if (b->err || b->len + more + 1 <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	n = realloc(b->p, cap);
	if (!n) {
		b->err = -ENOMEM;
		return;
	}
	b->p = n;
	b->cap = cap;
}

void sched_buf_put(struct sched_buf *b, const char *s, size_t n)
{
	sched_buf_grow(b, n);
	if (b->err)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void sched_buf_printf(struct sched_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = -EINVAL;
		return;
	}
	sched_buf_grow(b, (size_t)n);
	if (b->err)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

int sched_buf_finish(struct sched_buf *b, char **ret, size_t *ret_len)
{
	if (!b->err && !b->p)
		sched_buf_grow(b, 0);
	if (b->err) {
		free(b->p);
		b->p = NULL;
		return b->err;
	}
	b->p[b->len] = '\0';
	*ret = b->p;
	*ret_len = b->len;
	return 0;
}

/* ---- JSON ---- */

static void jw_indent(struct sched_jw *w)
{
	sched_buf_grow(w->b, 1 + (size_t)w->depth * w->indent);
	if (w->b->err)
		return;
	w->b->p[w->b->len++] = '\n';
	memset(w->b->p + w->b->len, ' ', (size_t)w->depth * w->indent);
	w->b->len += (size_t)w->depth * w->indent;
}

/* Before a member or an element: the separator, a new line, the indentation. */
static void jw_next(struct sched_jw *w)
{
	if (w->depth == 0 || w->depth > SCHED_JW_DEPTH_MAX) {
		w->b->err = w->b->err ? w->b->err : -EINVAL;
		return;
	}
	if (w->has_items[w->depth - 1])
		sched_buf_put(w->b, ",", 1);
	w->has_items[w->depth - 1] = true;
	jw_indent(w);
}

void sched_jw_open(struct sched_jw *w, char kind)
{
	sched_buf_put(w->b, kind == '{' ? "{" : "[", 1);
	if (w->depth == SCHED_JW_DEPTH_MAX) {
		w->b->err = w->b->err ? w->b->err : -EINVAL;
		return;
	}
	w->has_items[w->depth++] = false;
}

void sched_jw_close(struct sched_jw *w, char kind)
{
	if (w->depth == 0) {
		w->b->err = w->b->err ? w->b->err : -EINVAL;
		return;
	}
	w->depth--;
	if (w->has_items[w->depth])
		jw_indent(w);
	sched_buf_put(w->b, kind == '}' ? "}" : "]", 1);
}

void sched_jw_key(struct sched_jw *w, const char *key)
{
	jw_next(w);
	sched_jw_string(w->b, key);
	sched_buf_put(w->b, ": ", 2);
}

void sched_jw_item(struct sched_jw *w)
{
	jw_next(w);
}

/* Is @s valid UTF-8, as jansson requires of a string? (ASCII: at once.) */
static bool is_utf8(const char *s)
{
	json_t *v;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p >= 0x80)
			goto check;
	return true;
check:
	v = json_string(s);
	json_decref(v);
	return v != NULL;
}

void sched_jw_string(struct sched_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	bool utf8 = is_utf8(s ? s : "");
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *run = p;

	sched_buf_put(b, "\"", 1);
	for (;; p++) {
		char esc[7];
		size_t n = 0;

		if (*p && *p >= 0x20 && *p != '"' && *p != '\\' && (utf8 || *p < 0x80))
			continue;
		sched_buf_put(b, (const char *)run, (size_t)(p - run));
		run = p + 1;
		if (!*p)
			break;
		/* json_dumps()'s escapes; a byte of text that is not UTF-8 becomes '?' as
		 * jstr() makes it (sched_render.c) */
		switch (*p) {
		case '"':
		case '\\':
			esc[n++] = '\\';
			esc[n++] = (char)*p;
			break;
		case '\b':
			memcpy(esc, "\\b", n = 2);
			break;
		case '\f':
			memcpy(esc, "\\f", n = 2);
			break;
		case '\n':
			memcpy(esc, "\\n", n = 2);
			break;
		case '\r':
			memcpy(esc, "\\r", n = 2);
			break;
		case '\t':
			memcpy(esc, "\\t", n = 2);
			break;
		default:
			if (*p >= 0x80) {
				esc[n++] = '?';
				break;
			}
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 15];
			n = 6;
		}
		sched_buf_put(b, esc, n);
	}
	sched_buf_put(b, "\"", 1);
}
