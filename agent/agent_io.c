/* SPDX-License-Identifier: MIT */
/* Logging, files and the clock, shared by the files of the ascend-agent executable. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"

static const char *log_node = "-";

void agent_log_set_node(const char *node)
{
	log_node = node;
}

char *agent_time_text(char *buf, size_t len)
{
	char when[32];
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", when, ts.tv_nsec / 1000000);
	return buf;
}

void agent_log(enum agent_log_level level, const char *fmt, ...)
{
	static const char *const prefix[] = { "error: ", "warning: ", "" };
	char when[40], msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One write per line, so lines of several agents sharing a log stay whole. */
	fprintf(stderr, "%s ascend-agent[%s]: %s%s\n", agent_time_text(when, sizeof(when)),
		log_node, prefix[level], msg);
}

int agent_write_all(int fd, const char *text, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

int agent_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	size_t cap = 4096, len = 0;
	char *buf, *p;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			if (cap > max + 1) {
				r = -EFBIG;
				break;
			}
			p = realloc(buf, cap * 2);
			if (!p) {
				r = -ENOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			r = -EFBIG;
			break;
		}
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int agent_make_dirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t i;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (i = 1; buf[i]; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

long long agent_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
