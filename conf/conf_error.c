/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conf_internal.h"

char *conf_error_format(const struct conf_error *err, char *buf, size_t len)
{
	const char *file;

	if (!buf || len == 0)
		return buf;
	if (!err) {
		buf[0] = '\0';
		return buf;
	}
	file = err->file[0] ? err->file : "<input>";
	if (err->line && err->column)
		snprintf(buf, len, "%s:%u:%u: %s", file, err->line, err->column, err->msg);
	else if (err->line)
		snprintf(buf, len, "%s:%u: %s", file, err->line, err->msg);
	else
		snprintf(buf, len, "%s: %s", file, err->msg);
	return buf;
}

int conf_err_vset(struct conf_error *err, const char *file, unsigned line, unsigned column,
		  const char *fmt, va_list ap)
{
	if (!err)
		return -EINVAL;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	err->line = line;
	err->column = line ? column : 0;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return -EINVAL;
}

int conf_err_set(struct conf_error *err, const char *file, unsigned line, unsigned column,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_err_vset(err, file, line, column, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int conf_err_nomem(struct conf_error *err, const char *file)
{
	conf_err_set(err, file, 0, 0, "out of memory; free some memory and try again");
	return -ENOMEM;
}

char *conf_quote(const char *s, char *buf, size_t len)
{
	/* Room for the closing quote, "..." and the NUL. */
	size_t limit = len - 6, o = 0;
	const unsigned char *p = (const unsigned char *)s;

	buf[o++] = '"';
	for (; *p; p++) {
		char esc[8];
		size_t n;

		if (*p == '"' || *p == '\\')
			n = (size_t)snprintf(esc, sizeof(esc), "\\%c", *p);
		else if (*p == '\n')
			n = (size_t)snprintf(esc, sizeof(esc), "\\n");
		else if (*p == '\t')
			n = (size_t)snprintf(esc, sizeof(esc), "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			n = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", *p);
		else
			n = (size_t)snprintf(esc, sizeof(esc), "%c", *p);
		if (o + n > limit) {
			/* Do not cut a UTF-8 sequence in half. */
			while (o > 1 && ((unsigned char)buf[o - 1] & 0xc0) == 0x80)
				o--;
			if (o > 1 && ((unsigned char)buf[o - 1] & 0xc0) == 0xc0)
				o--;
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, esc, n);
		o += n;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}
