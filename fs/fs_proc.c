/* SPDX-License-Identifier: MIT */
/*
 * Which process a request comes from, named so that the name outlives the thread that
 * made the request and cannot be taken over by a later process: the thread group id with
 * the group's start time (a recycled pid starts later). Read from /proc while the
 * request is in flight, when the calling thread is certainly alive.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

/*
 * The start of /proc/<tid>/@file into @buf (NUL-terminated): one read, no stdio (whose
 * buffer and fstat() were a third of the cost, on the path of every create in jobs/).
 * Returns the length or -errno.
 */
static ssize_t read_proc(pid_t tid, const char *file, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)tid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* The thread group of thread @tid, from /proc/<tid>/status (threads are there too). */
static int tgid_of(pid_t tid, pid_t *ret)
{
	char buf[1024];
	const char *p;
	int tgid = 0;
	ssize_t n = read_proc(tid, "status", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	/* "Tgid:" is among its first lines */
	p = strstr(buf, "\nTgid:");
	if (!p || sscanf(p + 1, "Tgid: %d", &tgid) != 1 || tgid <= 0)
		return -ENOENT;
	*ret = tgid;
	return 0;
}

/*
 * Of /proc/<tid>/stat: field 20, the threads of its thread group, and field 22, when the
 * thread started (for a group's leader, when the group did), in clock ticks since boot.
 */
static int stat_of(pid_t tid, unsigned long *ret_threads, uint64_t *ret_ticks)
{
	char buf[1024];
	unsigned long long ticks;
	long threads;
	const char *p;
	ssize_t n = read_proc(tid, "stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	/* the command name (field 2) may hold spaces and ')': fields go on after the last */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	p++;
	for (int field = 3; field < 20; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	if (sscanf(p, " %ld", &threads) != 1 || threads < 1)
		return -EIO;
	for (int field = 20; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	if (sscanf(p, " %llu", &ticks) != 1)
		return -EIO;
	*ret_threads = (unsigned long)threads;
	*ret_ticks = ticks;
	return 0;
}

/*
 * The groups of the threads of larger groups seen lately, by thread and its start (a
 * recycled tid starts later): a program that submits from many threads (bench_submit,
 * a Python pool) pays the two more reads once a thread, not once a request.
 */
#define THREAD_CACHE_SLOTS 256

static struct {
	pthread_mutex_t mu;
	struct {
		pid_t tid;
		uint64_t start_ticks;	/* the thread's */
		struct fs_proc_id group;
	} slot[THREAD_CACHE_SLOTS];
} thread_cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

static bool cached_group(pid_t tid, uint64_t ticks, struct fs_proc_id *ret)
{
	size_t i = (size_t)tid % THREAD_CACHE_SLOTS;
	bool hit;

	pthread_mutex_lock(&thread_cache.mu);
	hit = thread_cache.slot[i].tid == tid && thread_cache.slot[i].start_ticks == ticks;
	if (hit)
		*ret = thread_cache.slot[i].group;
	pthread_mutex_unlock(&thread_cache.mu);
	return hit;
}

static void cache_group(pid_t tid, uint64_t ticks, const struct fs_proc_id *group)
{
	size_t i = (size_t)tid % THREAD_CACHE_SLOTS;

	pthread_mutex_lock(&thread_cache.mu);
	thread_cache.slot[i].tid = tid;
	thread_cache.slot[i].start_ticks = ticks;
	thread_cache.slot[i].group = *group;
	pthread_mutex_unlock(&thread_cache.mu);
}

int fs_proc_id_of(pid_t tid, struct fs_proc_id *ret)
{
	struct fs_proc_id id = { 0 };
	unsigned long threads;
	uint64_t ticks;
	int r;

	if (tid <= 0)
		return -ESRCH;
	/* one read for the usual caller (cp, a shell, a script): a group of one thread is
	 * led by it, so its group is @tid and the group's start its own; the thread group
	 * (/proc/<tid>/status) and its leader's start only for a thread of a larger group
	 * not seen before */
	r = stat_of(tid, &threads, &ticks);
	if (r == 0 && threads == 1) {
		id.tgid = tid;
		id.start_ticks = ticks;
	} else if (r == 0 && !cached_group(tid, ticks, &id)) {
		unsigned long leader_threads;

		r = tgid_of(tid, &id.tgid);
		if (r == 0)
			r = stat_of(id.tgid, &leader_threads, &id.start_ticks);
		if (r == 0)
			cache_group(tid, ticks, &id);
	}
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	*ret = id;
	return 0;
}

bool fs_proc_id_equal(const struct fs_proc_id *a, const struct fs_proc_id *b)
{
	return a->tgid == b->tgid && a->start_ticks == b->start_ticks;
}
