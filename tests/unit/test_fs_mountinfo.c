/* SPDX-License-Identifier: MIT */
/*
 * fs_mountinfo_find() (fs_mountwatch.c): how the daemon finds its own mount in
 * /proc/self/mountinfo, to notice when it is gone from its namespace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

/* Stacked mounts, an escaped space, optional fields, a fusectl and a non-FUSE mount. */
static const char mountinfo[] =
	"22 27 0:21 / /proc rw,relatime - proc proc rw\n"
	"44 23 0:30 / /sys/fs/fuse/connections rw,relatime - fusectl none rw\n"
	"40 27 0:39 / /tmp/with\\040space rw,nosuid,nodev,relatime shared:1 - fuse.ascendfs "
	"ascendfs rw,user_id=0,group_id=0,default_permissions,allow_other\n"
	"41 40 0:45 / /tmp/with\\040space rw,relatime - fuse.sshfs root@h:/ascend rw\n"
	"42 27 0:50 / /ascend rw,relatime - tmpfs tmpfs rw\n"
	"43 42 0:51 / /ascend rw,relatime master:7 - fuse ascendfs rw\n"
	"45 27 0:52 / /tmp/back\\134slash rw - fuse.ascendfs ascendfs rw\n"
	"46 27 0:53 / /tmp/other rw - fuse.ascendfs ascendfsx rw\n"
	"47 27 0:54 / /tmp/other2 rw - fuse.sshfs root@h:/ascend rw\n"
	"garbage\n";

static char *write_mountinfo(void)
{
	char *path = strdup("/tmp/test_fs_mountinfo.XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, mountinfo, sizeof(mountinfo) - 1), (ssize_t)sizeof(mountinfo) - 1);
	close(fd);
	return path;
}

static void test_find_by_path(void **state)
{
	char *file = write_mountinfo();
	unsigned major = 9, minor = 9;

	(void)state;
	/* ascendfs's mount under an sshfs stacked on it, its mount point unescaped */
	assert_int_equal(fs_mountinfo_find(file, "/tmp/with space", &major, &minor), 1);
	assert_int_equal(major, 0);
	assert_int_equal(minor, 39);
	/* a FUSE mount over a tmpfs, type "fuse" with no subtype */
	assert_int_equal(fs_mountinfo_find(file, "/ascend", &major, &minor), 1);
	assert_int_equal(minor, 51);
	assert_int_equal(fs_mountinfo_find(file, "/tmp/back\\slash", &major, &minor), 1);
	assert_int_equal(minor, 52);
	/* not FUSE, not there, escaped form not matched literally */
	assert_int_equal(fs_mountinfo_find(file, "/proc", &major, &minor), 0);
	assert_int_equal(fs_mountinfo_find(file, "/sys/fs/fuse/connections", &major, &minor), 0);
	assert_int_equal(fs_mountinfo_find(file, "/tmp/with\\040space", &major, &minor), 0);
	assert_int_equal(fs_mountinfo_find(file, "/nowhere", &major, &minor), 0);
	/* another FUSE file system at the path is not ours (source is not "ascendfs") */
	assert_int_equal(fs_mountinfo_find(file, "/tmp/other", &major, &minor), 0);
	assert_int_equal(fs_mountinfo_find(file, "/tmp/other2", &major, &minor), 0);
	unlink(file);
	free(file);
}

static void test_find_by_device(void **state)
{
	char *file = write_mountinfo();
	unsigned major = 0, minor = 39;

	(void)state;
	/* a device is found wherever it is mounted (a moved mount is still there) */
	assert_int_equal(fs_mountinfo_find(file, NULL, &major, &minor), 1);
	minor = 99;
	assert_int_equal(fs_mountinfo_find(file, NULL, &major, &minor), 0);
	major = 1;
	minor = 39;
	assert_int_equal(fs_mountinfo_find(file, NULL, &major, &minor), 0);
	unlink(file);
	assert_int_equal(fs_mountinfo_find(file, NULL, &major, &minor), -ENOENT);
	free(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_by_path),
		cmocka_unit_test(test_find_by_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
