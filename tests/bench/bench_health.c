/* SPDX-License-Identifier: MIT */
/*
 * bench_health: health report to the new rank table, through a mounted ascendfs.
 *
 * JOB runs on whole servers of the mount's inventory (node-001 ... node-NNN, never
 * reported by an agent). Each repetition takes the first server whose npus file lists
 * JOB, writes "npu 0 Critical ...\nrunning -\n" to its nodes/<server>/health (one
 * open+write+close; the close returns once the report is durable), then reads
 * jobs/JOB/ranktable.json (open+read+close) until the table is "completed" and no longer
 * names that server's host IP: the job's next generation, readable. It prints the time
 * from the open of the health file to that read. The server keeps its isolated NPU, so
 * it is never part of JOB again and the next repetition faults another server: the
 * inventory needs REPS spare servers. ("running -" says no process of the job is left
 * there, as an agent would: the other servers never reported, so nothing is waited for.)
 *
 * Reference, interleaved: a plain open+write+close of "npu 1 OK\nrunning -\n" to the
 * server faulted last (it holds no job; the report changes nothing but its heartbeat).
 *
 * Prints "p50 p99 max" in milliseconds for both on one line each. Figures only.
 * Usage: bench_health MOUNT JOB REPS SERVERS
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_submit_lib.h"

#define FILE_MAX (4u << 20)

static char buf[FILE_MAX];

static double mono_msec(void)
{
	return bench_mono_sec() * 1e3;
}

/* The whole of @path into buf (NUL-terminated); its length, or -1. */
static ssize_t read_file(const char *path)
{
	size_t n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (n < FILE_MAX - 1 && (r = read(fd, buf + n, FILE_MAX - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* An agent's report: one open + write + close of an existing file. */
static int write_file(const char *path, const char *text)
{
	return bench_write_file(path, O_WRONLY, text, strlen(text));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void print_stats(const char *label, double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	printf("%s %.2f %.2f %.2f\n", label, v[n / 2], v[(n * 99) / 100], v[n - 1]);
}

/* The host IP of @server from its info file, quoted as in the rank table, into @out. */
static int host_ip_of(const char *mnt, const char *server, char *out, size_t size)
{
	char path[4096], *p, *q;

	snprintf(path, sizeof(path), "%s/nodes/%s/info", mnt, server);
	if (read_file(path) < 0 || !(p = strstr(buf, "\"host_ip\"")) || !(p = strchr(p + 9, '"')) ||
	    !(q = strchr(p + 1, '"')))
		return -ENOENT;
	snprintf(out, size, "%.*s", (int)(q - p + 1), p);
	return 0;
}

int main(int argc, char **argv)
{
	char path[4096], table[4096], server[64], ip[64], last[64] = "";
	const char *mnt, *job;
	unsigned reps, servers, done = 0, next;
	double *fault, *plain;

	if (argc != 5) {
		fprintf(stderr, "usage: %s MOUNT JOB REPS SERVERS\n", argv[0]);
		return 2;
	}
	mnt = argv[1];
	job = argv[2];
	reps = (unsigned)strtoul(argv[3], NULL, 10);
	servers = (unsigned)strtoul(argv[4], NULL, 10);
	fault = calloc(reps + 1, sizeof(*fault));
	plain = calloc(reps + 1, sizeof(*plain));
	if (!fault || !plain || !reps)
		return 1;
	snprintf(table, sizeof(table), "%s/jobs/%s/ranktable.json", mnt, job);
	while (done < reps) {
		double t0, t1, deadline;
		int r;

		/* a server of the job (untimed; servers faulted before hold none of it) */
		for (next = 1; next <= servers; next++) {
			snprintf(server, sizeof(server), "node-%03u", next);
			snprintf(path, sizeof(path), "%s/nodes/%s/npus", mnt, server);
			if (read_file(path) > 0 && strstr(buf, job))
				break;
		}
		if (next > servers || host_ip_of(mnt, server, ip, sizeof(ip)) < 0) {
			fprintf(stderr, "bench_health: no server of %s left after %u repetitions "
					"(give the inventory more spare servers)\n",
				job, done);
			break;
		}
		snprintf(path, sizeof(path), "%s/nodes/%s/health", mnt, server);
		t0 = mono_msec();
		r = write_file(path, "npu 0 Critical 0x80C98000 bench_health\nrunning -\n");
		if (r < 0) {
			fprintf(stderr, "bench_health: %s: %s\n", path, strerror(-r));
			return 1;
		}
		for (deadline = t0 + 60000;;) {
			if (read_file(table) > 0 && strstr(buf, "\"completed\"") && !strstr(buf, ip))
				break;
			if (mono_msec() > deadline) {
				fprintf(stderr, "bench_health: %s still names %s 60 s after the report\n",
					table, ip);
				return 1;
			}
		}
		t1 = mono_msec();
		fault[done] = t1 - t0;
		snprintf(last, sizeof(last), "%s", server);

		/* the reference: a report that changes nothing */
		snprintf(path, sizeof(path), "%s/nodes/%s/health", mnt, last);
		t0 = mono_msec();
		r = write_file(path, "npu 1 OK\nrunning -\n");
		plain[done] = mono_msec() - t0;
		if (r < 0) {
			fprintf(stderr, "bench_health: %s: %s\n", path, strerror(-r));
			return 1;
		}
		done++;
	}
	if (!done)
		return 1;
	printf("reps %u\n", done);
	print_stats("fault", fault, done);
	print_stats("plain", plain, done);
	free(fault);
	free(plain);
	return 0;
}
