/* SPDX-License-Identifier: MIT */
/*
 * The lines an agent ships of a process's output to jobs/<job>/log (fs.h): what
 * agent_ship_format() makes of the bytes a process wrote; agent_ship_io.c reads them
 * and writes the result. No I/O here (agent_lib).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"

static int reserve(char **out, size_t *out_len, size_t *out_cap, size_t more)
{
	size_t cap = *out_cap ? *out_cap : 4096;
	char *n;

	if (*out_len + more <= *out_cap)
		return 0;
	while (cap < *out_len + more)
		cap *= 2;
	n = realloc(*out, cap);
	if (!n)
		return -ENOMEM;
	*out = n;
	*out_cap = cap;
	return 0;
}

ssize_t agent_ship_format(const char *data, size_t len, unsigned generation,
			  const char *process, const char *node, bool final, char **out,
			  size_t *out_len, size_t *out_cap)
{
	char head[AGENT_SHIP_HEAD_MAX];
	int hn = snprintf(head, sizeof(head), "%u %s %s ", generation, process, node);
	size_t done = 0;

	if (hn < 0 || (size_t)hn >= sizeof(head))
		return -EINVAL;
	while (done < len) {
		const char *nl = memchr(data + done, '\n', len - done);
		size_t end = nl ? (size_t)(nl - data) : len, piece = end - done;

		/* a line without its newline yet waits for it, unless it is already too
		 * long to wait for or its process has ended */
		if (!nl && !final && piece < AGENT_SHIP_LINE_MAX)
			break;
		if (piece > AGENT_SHIP_LINE_MAX)
			piece = AGENT_SHIP_LINE_MAX;
		if (reserve(out, out_len, out_cap, (size_t)hn + piece + 1) < 0)
			return -ENOMEM;
		memcpy(*out + *out_len, head, (size_t)hn);
		memcpy(*out + *out_len + hn, data + done, piece);
		*out_len += (size_t)hn + piece;
		(*out)[(*out_len)++] = '\n';
		done += piece;
		if (done == end && nl)
			done++; /* the newline */
	}
	return (ssize_t)done;
}
