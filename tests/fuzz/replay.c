/* SPDX-License-Identifier: MIT */
/*
 * Replay a fuzz corpus through a target without libFuzzer, so `meson test` runs every
 * kept input (plus every prefix of each, for truncation cases) under the normal and
 * sanitizer builds. Usage: replay DIR|FILE...; exit 0 when every input ran, 1 when
 * none was found.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static size_t ran;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(len > 0 ? (size_t)len : 1);
	if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
		LLVMFuzzerTestOneInput((const uint8_t *)buf, (size_t)len);
		/* prefixes: every cut point for small inputs, a sample for large ones */
		for (long cut = 0; cut < len; cut += len > 4096 ? len / 64 : 1)
			LLVMFuzzerTestOneInput((const uint8_t *)buf, (size_t)cut);
		ran++;
	}
	free(buf);
	fclose(f);
}

static void run_path(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (stat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		run_file(path);
		return;
	}
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char child[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
		run_path(child);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	printf("replayed %zu inputs\n", ran);
	return ran ? 0 : 1;
}
