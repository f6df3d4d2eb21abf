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
static enum agent_log_level log_level = AGENT_LOG_INFO;

void agent_log_set_node(const char *node)
{
	log_node = node;
}

int agent_log_parse_level(const char *name, enum agent_log_level *ret)
{
	static const char *const names[] = { "error", "warning", "info" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i]) == 0) {
			*ret = (enum agent_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void agent_log_set_level(enum agent_log_level level)
{
	log_level = level;
}

/* Is stderr the journal (systemd.exec(5): JOURNAL_STREAM names its device and inode)? */
static bool stderr_is_journal(void)
{
	struct stat st;

	return fstat(STDERR_FILENO, &st) == 0 &&
	       conf_journal_stream_matches(getenv("JOURNAL_STREAM"), (uint64_t)st.st_dev,
					   (uint64_t)st.st_ino);
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
	static const char *const journal_prefix[] = { "<3>error: ", "<4>warning: ", "<6>" };
	char when[40], msg[2048], shown[4 * sizeof(msg)], line[sizeof(shown) + 200];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/*
	 * One message, one line: a spec's command, env or a path the message quotes cannot
	 * end the line and start a forged one (conf_log_escape()).
	 */
	conf_log_escape(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, shown);
	/* journald stamps each line itself and reads the priority from the "<N>" prefix */
	if (stderr_is_journal())
		n = snprintf(line, sizeof(line), "%s%s\n", journal_prefix[level], shown);
	else
		n = snprintf(line, sizeof(line), "%s ascend-agent[%s]: %s%s\n",
			     agent_time_text(when, sizeof(when)), log_node, prefix[level], shown);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* One write per line, so lines of several agents sharing a log stay whole. */
	agent_write_all(STDERR_FILENO, line, (size_t)n);
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
