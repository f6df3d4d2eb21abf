/* SPDX-License-Identifier: MIT */
/* Fuzz target: mount path lookup (fs_path_parse): every byte string is a path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size + 2);
	struct fs_path p;

	if (!path)
		return 0;
	path[0] = '/';
	memcpy(path + 1, data, size);
	path[size + 1] = '\0';
	if (fs_path_parse(path, &p) == 0) {
		/* names that parse are bounded and NUL-terminated */
		if (strlen(p.job) > CONF_NAME_MAX || strlen(p.item) > CONF_NAME_MAX)
			abort();
		if ((p.kind == FS_JOB_DIR || p.kind == FS_JOB_UPLOAD) && !conf_name_is_valid(p.job))
			abort();
	}
	free(path);
	return 0;
}
