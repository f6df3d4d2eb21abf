/* SPDX-License-Identifier: MIT */
/*
 * The lines an agent ships of a process's output to jobs/<job>/log (fs.h): what
 * agent_ship_format() makes of the bytes a process wrote; agent_ship_io.c reads them
 * and writes the result. No I/O here (agent_lib).
 */
#include <errno.h>
#include <limits.h>
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

/* The value of flag @name ("--node_rank=") among @args' words: its start and length. */
static const char *flag_value(const char *args, const char *name, size_t *ret_len)
{
	size_t nlen = strlen(name);

	for (const char *w = args; *w;) {
		size_t len;

		while (*w == ' ')
			w++;
		len = strcspn(w, " ");
		if (len >= nlen && memcmp(w, name, nlen) == 0) {
			*ret_len = len - nlen;
			return w + nlen;
		}
		w += len;
	}
	return NULL;
}

static int flag_uint(const char *args, const char *name, unsigned *ret)
{
	size_t len;
	const char *v = flag_value(args, name, &len);
	unsigned long n = 0;

	if (!v)
		return -ENOENT;
	if (!len || len > 9)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (unsigned long)(v[i] - '0');
	}
	*ret = (unsigned)n;
	return 0;
}

int agent_msrun_args(const char *args, const char *log_dir, char **ret,
		     unsigned *ret_node_rank, unsigned *ret_local_workers)
{
	unsigned node_rank, workers;
	const char *v;
	size_t len;
	char *out;
	int r;

	/* absolute (msrun starts elsewhere), and unquoted in `msrun $MSRUN_ARGS`: nothing
	 * the shell splits or expands */
	if (log_dir[0] != '/' || strspn(log_dir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789/._+-:@,%=") != strlen(log_dir))
		return -EINVAL;
	if ((r = flag_uint(args, "--node_rank=", &node_rank)) < 0 ||
	    (r = flag_uint(args, "--local_worker_num=", &workers)) < 0)
		return r;
	if (!workers || workers > CONF_SERVER_NPUS_MAX ||
	    (unsigned long)node_rank * workers + workers > INT_MAX)
		return -EINVAL;
	v = flag_value(args, "--log_dir=", &len);
	if (!v)
		return -ENOENT;
	if (asprintf(&out, "%.*s%s%s", (int)(v - args), args, log_dir, v + len) < 0)
		return -ENOMEM;
	*ret = out;
	*ret_node_rank = node_rank;
	*ret_local_workers = workers;
	return 0;
}
