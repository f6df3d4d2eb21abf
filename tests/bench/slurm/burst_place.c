/* SPDX-License-Identifier: MIT */
/*
 * burst_place: submit a burst of job specs through a mounted ascendfs from THREADS
 * threads, as bench_submit does (open(jobs/<prefix>-<i>.yaml) + write "npus: N\n" +
 * close, as cp does), N taken from line i of MIXFILE (one NPU count a line; the count
 * of lines is the burst). Then poll until every job of the burst is running, or pending
 * with a reason in its status.json: that is when the burst is placed. A job that passed
 * once is not read again.
 *
 * Prints "<ok> <failed> <submit seconds> <placed seconds> <running> <pending>" on one
 * line; both times count from the first open. Exits 1 when a submission failed or the
 * burst was not placed within TIMEOUT seconds (default 600).
 *
 * Usage: burst_place MOUNT PREFIX MIXFILE THREADS [TIMEOUT]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_submit_lib.h"

static const char *mount_dir, *prefix;
static unsigned total, *npus;

static const char *spec_of(unsigned i, char *buf, size_t size, void *arg)
{
	(void)arg;
	snprintf(buf, size, "npus: %u\n", npus[i]);
	return buf;
}

/* 1 running, 2 pending with a reason, 0 neither (yet), -1 unreadable */
static int job_placed(unsigned i)
{
	char path[4096], buf[8192];
	const char *state, *reason;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/jobs/%s-%u/status.json", mount_dir, prefix, i);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	state = strstr(buf, "\"state\"");
	if (!state)
		return 0;
	if (strncmp(state, "\"state\": \"running\"", 18) == 0 ||
	    strncmp(state, "\"state\":\"running\"", 17) == 0)
		return 1;
	if (!strstr(state, "\"pending\"") || strstr(state, "\"pending\"") - state > 16)
		return 0;
	/* a reason is a non-empty string, not null */
	reason = strstr(buf, "\"reason\"");
	if (!reason)
		return 0;
	reason += strlen("\"reason\"");
	while (*reason == ':' || *reason == ' ')
		reason++;
	return reason[0] == '"' && reason[1] != '"' ? 2 : 0;
}

int main(int argc, char **argv)
{
	double t0, t_submit, t_placed = 0, timeout_sec = 600;
	unsigned threads, cap = 0, left, running = 0, pending = 0, ok, failed;
	unsigned char *done;
	char line[64];
	int r;
	FILE *mix;

	if (argc < 5) {
		fprintf(stderr, "usage: %s MOUNT PREFIX MIXFILE THREADS [TIMEOUT]\n", argv[0]);
		return 2;
	}
	mount_dir = argv[1];
	prefix = argv[2];
	threads = (unsigned)strtoul(argv[4], NULL, 10);
	if (argc > 5)
		timeout_sec = strtod(argv[5], NULL);
	if (threads == 0 || threads > 1024) {
		fprintf(stderr, "%s: THREADS must be 1-1024\n", argv[0]);
		return 2;
	}
	mix = fopen(argv[3], "r");
	if (!mix) {
		perror(argv[3]);
		return 2;
	}
	while (fgets(line, sizeof(line), mix)) {
		if (total == cap) {
			cap = cap ? 2 * cap : 1024;
			npus = realloc(npus, cap * sizeof(*npus));
			if (!npus)
				return 1;
		}
		npus[total++] = (unsigned)strtoul(line, NULL, 10);
	}
	fclose(mix);
	done = calloc(total ? total : 1, 1);
	if (!done)
		return 1;

	t0 = bench_mono_sec();
	r = bench_submit_burst(mount_dir, prefix, total, threads, spec_of, NULL, &ok, &failed);
	if (r == -EAGAIN)
		fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
	if (r < 0)
		return 1;
	t_submit = bench_mono_sec() - t0;

	/* every job is read until it is running or pending with a reason; then no more */
	left = total;
	while (left > 0 && bench_mono_sec() - t0 < timeout_sec) {
		for (unsigned i = 0; i < total; i++) {
			if (done[i])
				continue;
			r = job_placed(i);
			if (r > 0) {
				done[i] = (unsigned char)r;
				left--;
			}
		}
		if (left > 0)
			usleep(10000);
	}
	if (left == 0)
		t_placed = bench_mono_sec() - t0;
	for (unsigned i = 0; i < total; i++) {
		running += done[i] == 1;
		pending += done[i] == 2;
	}
	printf("%u %u %.3f %.3f %u %u\n", ok, failed, t_submit, left ? -1.0 : t_placed, running,
	       pending);
	free(done);
	free(npus);
	return failed || left ? 1 : 0;
}
