/* SPDX-License-Identifier: MIT */
/* What the mounted benchmarks share: see bench_submit_lib.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_submit_lib.h"

double bench_mono_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_write_file(const char *path, int flags, const char *data, size_t len)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	if (n != (ssize_t)len) {
		int e = n < 0 ? -errno : -EIO;

		close(fd);
		return e;
	}
	return close(fd) == 0 ? 0 : -errno;
}

struct burst {
	const char *mount_dir, *prefix;
	unsigned count;
	bench_spec_fn spec_of;
	void *arg;
	atomic_uint next_index, ok, failed;
};

static void *burst_worker(void *arg)
{
	struct burst *b = arg;
	char path[4096], buf[256];
	unsigned i;

	while ((i = atomic_fetch_add(&b->next_index, 1)) < b->count) {
		const char *spec = b->spec_of(i, buf, sizeof(buf), b->arg);
		size_t len = strlen(spec);

		snprintf(path, sizeof(path), "%s/jobs/%s-%u.yaml", b->mount_dir, b->prefix, i);
		if (bench_write_file(path, O_WRONLY | O_CREAT | O_TRUNC, spec, len) == 0)
			atomic_fetch_add(&b->ok, 1);
		else
			atomic_fetch_add(&b->failed, 1);
	}
	return NULL;
}

int bench_submit_burst(const char *mount_dir, const char *prefix, unsigned count,
		       unsigned threads, bench_spec_fn spec_of, void *arg, unsigned *ret_ok,
		       unsigned *ret_failed)
{
	struct burst b = { .mount_dir = mount_dir, .prefix = prefix, .count = count,
			   .spec_of = spec_of, .arg = arg };
	pthread_t *th = calloc(threads ? threads : 1, sizeof(*th));
	unsigned started = 0;
	int r = 0;

	if (!th)
		return -ENOMEM;
	for (; started < threads; started++)
		if (pthread_create(&th[started], NULL, burst_worker, &b) != 0) {
			r = -EAGAIN;
			break;
		}
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	if (r < 0)
		return r;
	*ret_ok = atomic_load(&b.ok);
	*ret_failed = atomic_load(&b.failed);
	return 0;
}
