/* SPDX-License-Identifier: MIT */
/*
 * The newest MindSpore checkpoint in a job's checkpoint_dir. MindSpore's
 * ModelCheckpoint names files "<prefix>-<epoch>_<step>.ckpt" (CheckpointConfig), in the
 * directory itself or in per-rank subdirectories (rank_0/ ...); the newest is the one
 * with the highest (epoch, step), and the file's mtime breaks ties.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

/* "llama-2_1200.ckpt" -> epoch 2, step 1200; "net-300.ckpt" -> epoch 0, step 300. */
static bool parse_ckpt_name(const char *name, uint64_t *epoch, uint64_t *step)
{
	size_t len = strlen(name);
	const char *end, *p;
	uint64_t v = 0, mult = 1;

	if (len < 6 || strcmp(name + len - 5, ".ckpt") != 0)
		return false;
	end = name + len - 5;
	p = end;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == end || end - p > 18)
		return false;
	for (const char *q = end; q > p; q--, mult *= 10)
		v += (uint64_t)(q[-1] - '0') * mult;
	*step = v;
	*epoch = 0;
	if (p > name && p[-1] == '_') {
		const char *e = p - 1, *b = e;

		while (b > name && b[-1] >= '0' && b[-1] <= '9')
			b--;
		if (b < e && e - b <= 18)
			*epoch = strtoull(b, NULL, 10);
	}
	return true;
}

struct best {
	uint64_t epoch, step;
	time_t mtime;
	char path[4096];
	bool found;
};

static void scan_dir(const char *dir, int depth, struct best *b)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;
		uint64_t epoch, step;

		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (stat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth == 0)
				scan_dir(path, 1, b);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !parse_ckpt_name(e->d_name, &epoch, &step))
			continue;
		if (b->found && (epoch < b->epoch || (epoch == b->epoch && step < b->step) ||
				 (epoch == b->epoch && step == b->step && st.st_mtime <= b->mtime)))
			continue;
		b->found = true;
		b->epoch = epoch;
		b->step = step;
		b->mtime = st.st_mtime;
		snprintf(b->path, sizeof(b->path), "%s", path);
	}
	closedir(d);
}

int fs_checkpoint_newest(const char *dir, uint64_t *ret_step, char *ret_path, size_t len)
{
	struct best b = { 0 };

	scan_dir(dir, 0, &b);
	if (!b.found)
		return -ENOENT;
	/* one number for "newest": epochs outrank steps */
	*ret_step = (b.epoch << 32) | (b.step & 0xffffffffu);
	snprintf(ret_path, len, "%s", b.path);
	return 0;
}
