/* SPDX-License-Identifier: MIT */
/*
 * bench_submit: submit COUNT job specs through a mounted ascendfs from THREADS threads,
 * each one open(jobs/<prefix>-<i>.yaml) + write + close, as cp does. A submission counts
 * when close() returned 0 (the daemon acknowledged it, durably when it has a state
 * dir). Prints "<ok> <failed> <seconds> <per second>" on one line.
 *
 * Usage: bench_submit MOUNT PREFIX COUNT THREADS [SPEC...]   (SPEC default "npus: 1\n";
 *        with several, submission i takes SPEC number i modulo their count)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *mount_dir, *prefix;
static const char *default_spec[] = { "npus: 1\n" };
static const char **specs = default_spec;
static unsigned total, spec_count = 1;
static atomic_uint next_index, ok_count, failed_count;

static void *worker(void *arg)
{
	char path[4096];
	unsigned i;

	(void)arg;
	while ((i = atomic_fetch_add(&next_index, 1)) < total) {
		const char *spec = specs[i % spec_count];
		size_t len = strlen(spec);
		int fd;

		snprintf(path, sizeof(path), "%s/jobs/%s-%u.yaml", mount_dir, prefix, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, spec, len) != (ssize_t)len) {
			if (fd >= 0)
				close(fd);
			atomic_fetch_add(&failed_count, 1);
			continue;
		}
		if (close(fd) == 0)
			atomic_fetch_add(&ok_count, 1);
		else
			atomic_fetch_add(&failed_count, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	pthread_t *th;
	unsigned threads;
	double sec;

	if (argc < 5) {
		fprintf(stderr, "usage: %s MOUNT PREFIX COUNT THREADS [SPEC...]\n", argv[0]);
		return 2;
	}
	mount_dir = argv[1];
	prefix = argv[2];
	total = (unsigned)strtoul(argv[3], NULL, 10);
	threads = (unsigned)strtoul(argv[4], NULL, 10);
	if (argc > 5) {
		specs = (const char **)&argv[5];
		spec_count = (unsigned)(argc - 5);
	}
	if (threads == 0 || threads > 1024) {
		fprintf(stderr, "%s: THREADS must be 1-1024\n", argv[0]);
		return 2;
	}
	th = calloc(threads, sizeof(*th));
	if (!th)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, NULL) != 0) {
			fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
			return 1;
		}
	for (unsigned i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%u %u %.3f %.0f\n", atomic_load(&ok_count), atomic_load(&failed_count), sec,
	       sec > 0 ? atomic_load(&ok_count) / sec : 0.0);
	free(th);
	return atomic_load(&failed_count) ? 1 : 0;
}
