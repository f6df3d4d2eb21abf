/* SPDX-License-Identifier: MIT */
/*
 * Which process a request comes from, named so that the name outlives the thread that
 * made the request and cannot be taken over by a later process: the thread group id with
 * the group's start time (a recycled pid starts later). Read from /proc while the
 * request is in flight, when the calling thread is certainly alive.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs.h"

/* The thread group of thread @tid, from /proc/<tid>/status (threads are there too). */
static int tgid_of(pid_t tid, pid_t *ret)
{
	char path[64], line[128];
	int tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	if (tgid <= 0)
		return -ENOENT;
	*ret = tgid;
	return 0;
}

/* Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot. */
static int start_ticks_of(pid_t pid, uint64_t *ret)
{
	char path[64], buf[1024];
	unsigned long long ticks;
	const char *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name (field 2) may hold spaces and ')': fields go on after the last */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	if (sscanf(p, " %llu", &ticks) != 1)
		return -EIO;
	*ret = ticks;
	return 0;
}

int fs_proc_id_of(pid_t tid, struct fs_proc_id *ret)
{
	struct fs_proc_id id = { 0 };
	int r;

	if (tid <= 0)
		return -ESRCH;
	r = tgid_of(tid, &id.tgid);
	if (r == 0)
		r = start_ticks_of(id.tgid, &id.start_ticks);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	*ret = id;
	return 0;
}

bool fs_proc_id_equal(const struct fs_proc_id *a, const struct fs_proc_id *b)
{
	return a->tgid == b->tgid && a->start_ticks == b->start_ticks;
}
