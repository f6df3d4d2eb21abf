/* SPDX-License-Identifier: MIT */
/* agent internals shared by the files of agent/. Not used outside agent/. */
#ifndef ASCENDFS_AGENT_INTERNAL_H
#define ASCENDFS_AGENT_INTERNAL_H

#include "agent.h"

/*
 * agent_err_set() - fill @err (not NULL) with @source, @line, @column (0: none) and the
 * printf-style message. Returns -EINVAL so callers can `return agent_err_set(...)`.
 */
int agent_err_set(struct conf_error *err, const char *source, unsigned line, unsigned column,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Size of a buffer for agent_quote(). */
#define AGENT_QUOTE_MAX 80

/*
 * agent_quote() - the @len bytes at @p (need not be NUL-terminated) as a double-quoted
 * string for a message, in @buf of @buf_len (>= 16) bytes: '"', '\\' and control bytes
 * escaped, long text cut with "...". Returns @buf.
 */
char *agent_quote(const char *p, size_t len, char *buf, size_t buf_len);

#endif
