/* SPDX-License-Identifier: MIT */
/*
 * bench_read FILE ITERATIONS: open, read to EOF in 128 KiB reads, close, ITERATIONS
 * times; prints bytes, p50, p99 and mean in microseconds. Used by bench_cat.sh to
 * compare a file in the mount with the same bytes on tmpfs in one run.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static char buf[128 * 1024];
	long iterations;
	double *t, sum = 0;
	size_t bytes = 0;

	if (argc != 3 || (iterations = strtol(argv[2], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: bench_read FILE ITERATIONS\n");
		return 2;
	}
	t = calloc((size_t)iterations, sizeof(*t));
	if (!t)
		return 1;
	for (long i = 0; i < iterations; i++) {
		double start = now_usec();
		int fd = open(argv[1], O_RDONLY);
		ssize_t n;

		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		bytes = 0;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			bytes += (size_t)n;
		close(fd);
		if (n < 0) {
			perror("read");
			return 1;
		}
		t[i] = now_usec() - start;
		sum += t[i];
	}
	qsort(t, (size_t)iterations, sizeof(*t), cmp_double);
	printf("%zu %.1f %.1f %.1f\n", bytes, t[iterations / 2],
	       t[(size_t)((double)iterations * 0.99)], sum / (double)iterations);
	free(t);
	return 0;
}
