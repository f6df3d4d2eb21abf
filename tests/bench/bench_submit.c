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
#include <stdio.h>
#include <stdlib.h>

#include "bench_submit_lib.h"

static const char *default_spec[] = { "npus: 1\n" };
static const char **specs = default_spec;
static unsigned spec_count = 1;

static const char *spec_of(unsigned i, char *buf, size_t size, void *arg)
{
	(void)buf;
	(void)size;
	(void)arg;
	return specs[i % spec_count];
}

int main(int argc, char **argv)
{
	unsigned total, threads, ok, failed;
	double t0, sec;
	int r;

	if (argc < 5) {
		fprintf(stderr, "usage: %s MOUNT PREFIX COUNT THREADS [SPEC...]\n", argv[0]);
		return 2;
	}
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
	t0 = bench_mono_sec();
	r = bench_submit_burst(argv[1], argv[2], total, threads, spec_of, NULL, &ok, &failed);
	if (r == -EAGAIN)
		fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
	if (r < 0)
		return 1;
	sec = bench_mono_sec() - t0;
	printf("%u %u %.3f %.0f\n", ok, failed, sec, sec > 0 ? ok / sec : 0.0);
	return failed ? 1 : 0;
}
