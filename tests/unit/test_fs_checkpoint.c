/* SPDX-License-Identifier: MIT */
/*
 * fs_checkpoint.c: the newest MindSpore checkpoint in a job's checkpoint_dir, and the
 * check that keeps the daemon from reading its own mount (issue 15 item 3): a
 * checkpoint_dir that resolves into the mount, by name or through symlinks, is refused;
 * entries that lead into it are skipped by the scanner. A temporary directory stands
 * in for the mount point: the check decides by resolved names, never by a lookup
 * inside the mount.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

static char root[PATH_MAX / 2];

static const char *at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static unsigned n;
	char *b = buf[n++ % 4];

	snprintf(b, PATH_MAX, "%.2000s/%.2000s", root, rel);
	return b;
}

static void touch(const char *rel, time_t mtime)
{
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(utimensat(AT_FDCWD, at(rel), ts, 0), 0);
}

static int setup(void **state)
{
	char *r;

	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_fs_checkpoint.XXXXXX");
	assert_non_null(mkdtemp(root));
	r = realpath(root, NULL); /* /tmp may be a symlink */
	assert_non_null(r);
	snprintf(root, sizeof(root), "%s", r);
	free(r);
	assert_int_equal(mkdir(at("mnt"), 0755), 0);
	assert_int_equal(mkdir(at("mnt/jobs"), 0755), 0);
	assert_int_equal(mkdir(at("ck"), 0755), 0);
	assert_int_equal(mkdir(at("ck/rank_0"), 0755), 0);
	assert_int_equal(mkdir(at("mnt2"), 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* The highest (epoch, step) wins, in the directory or a rank subdirectory. */
static void test_checkpoint_newest_in_dir_and_rank_dirs(void **state)
{
	char path[PATH_MAX];
	uint64_t step = 0;

	(void)state;
	touch("ck/net-1_900.ckpt", 1000);
	touch("ck/rank_0/net-2_100.ckpt", 900);
	touch("ck/notes.txt", 2000);
	assert_int_equal(fs_checkpoint_newest(at("ck"), at("mnt"), 0, &step, path, sizeof(path), NULL),
			 0);
	assert_string_equal(path, at("ck/rank_0/net-2_100.ckpt"));
	assert_int_equal(step, (2ull << 32) | 100);
	assert_int_equal(fs_checkpoint_newest(at("nope"), at("mnt"), 0, &step, path, sizeof(path),
					      NULL),
			 -ENOENT);
}

/* By name, through symlinks (absolute, relative, via ".."), and the mount itself. */
static void test_checkpoint_dir_inside_the_mount_is_refused(void **state)
{
	char res[PATH_MAX];

	(void)state;
	assert_int_equal(symlink(at("mnt"), at("to-mnt")), 0);
	assert_int_equal(symlink("mnt/jobs", at("rel-to-jobs")), 0);
	assert_int_equal(symlink("../mnt", at("ck/up-to-mnt")), 0);
	assert_int_equal(symlink("loop-b", at("loop-a")), 0);
	assert_int_equal(symlink("loop-a", at("loop-b")), 0);

	assert_int_equal(fs_checkpoint_dir_check(at("mnt/jobs/x/ck"), at("mnt"), 0, res, sizeof(res)),
			 -EXDEV);
	assert_string_equal(res, at("mnt/jobs/x/ck"));
	assert_int_equal(fs_checkpoint_dir_check(at("mnt"), at("mnt"), 0, res, sizeof(res)),
			 -EXDEV);
	assert_int_equal(fs_checkpoint_dir_check(at("to-mnt/ck"), at("mnt"), 0, res, sizeof(res)),
			 -EXDEV);
	assert_string_equal(res, at("mnt/ck"));
	/* ".." from the mount point leads out of it again */
	assert_int_equal(fs_checkpoint_dir_check(at("mnt/../ck"), at("mnt"), 0, res, sizeof(res)),
			 0);
	assert_string_equal(res, at("ck"));
	assert_int_equal(fs_checkpoint_dir_check(at("rel-to-jobs/a"), at("mnt"), 0, res, sizeof(res)),
			 -EXDEV);
	assert_int_equal(fs_checkpoint_dir_check(at("ck/up-to-mnt"), at("mnt"), 0, res, sizeof(res)),
			 -EXDEV);
	assert_int_equal(fs_checkpoint_dir_check(at("ck/../mnt/y"), at("mnt"), 0, res, sizeof(res)),
			 -EXDEV);
	/* outside: a sibling whose name starts like the mount's, a missing parent */
	assert_int_equal(fs_checkpoint_dir_check(at("mnt2/ck"), at("mnt"), 0, res, sizeof(res)),
			 0);
	assert_string_equal(res, at("mnt2/ck"));
	assert_int_equal(fs_checkpoint_dir_check(at("not/yet/there"), at("mnt"), 0, res, sizeof(res)),
			 0);
	assert_int_equal(fs_checkpoint_dir_check(at("ck/rank_0"), at("mnt"), 0, NULL, 0), 0);
	assert_int_equal(fs_checkpoint_dir_check(at("ck/rank_0"), NULL, 0, NULL, 0), 0);
	assert_int_equal(fs_checkpoint_dir_check("ck/rel", at("mnt"), 0, NULL, 0), -EINVAL);
	assert_int_equal(fs_checkpoint_dir_check(at("loop-a/x"), at("mnt"), 0, NULL, 0), -ELOOP);
	/* the scanner refuses such a directory as a whole */
	{
		char path[PATH_MAX];
		uint64_t step;

		assert_int_equal(fs_checkpoint_newest(at("to-mnt/jobs"), at("mnt"), 0, &step, path,
						      sizeof(path), NULL),
				 -EXDEV);
	}
}

/* A symlink in checkpoint_dir that leads into the mount is skipped, others followed. */
static void test_checkpoint_scanner_skips_links_into_the_mount(void **state)
{
	char path[PATH_MAX];
	uint64_t step = 0;

	(void)state;
	assert_int_equal(mkdir(at("mnt/jobs/r"), 0755), 0);
	touch("mnt/jobs/r/net-9_999.ckpt", 3000);
	assert_int_equal(mkdir(at("other"), 0755), 0);
	touch("other/net-3_1.ckpt", 3000);
	assert_int_equal(symlink(at("mnt/jobs/r"), at("ck/rank_9")), 0);
	assert_int_equal(symlink(at("mnt/jobs/r/net-9_999.ckpt"), at("ck/net-9_999.ckpt")), 0);
	assert_int_equal(fs_checkpoint_newest(at("ck"), at("mnt"), 0, &step, path, sizeof(path), NULL),
			 0);
	assert_string_not_equal(path, at("ck/net-9_999.ckpt"));
	assert_null(strstr(path, "rank_9"));
	/* a link elsewhere is followed */
	assert_int_equal(symlink(at("other"), at("ck/rank_1")), 0);
	assert_int_equal(fs_checkpoint_newest(at("ck"), at("mnt"), 0, &step, path, sizeof(path), NULL),
			 0);
	assert_string_equal(path, at("ck/rank_1/net-3_1.ckpt"));
	/* without a mount to avoid, the link into it counts (what the check prevents) */
	assert_int_equal(fs_checkpoint_newest(at("ck"), NULL, 0, &step, path, sizeof(path), NULL),
			 0);
	assert_int_equal(step >> 32, 9);
}

/*
 * By device: any name for the mount's device is inside (a bind mount of the mount
 * elsewhere has another path and the same device). /dev/shm's device stands in for the
 * mount's: a checkpoint_dir there, and a link to it from a checkpoint_dir elsewhere, are
 * refused and skipped, though no name is below the mount point.
 */
static void test_checkpoint_dir_on_the_mount_device_is_refused(void **state)
{
	char shm[] = "/dev/shm/test_fs_checkpoint.XXXXXX", file[PATH_MAX], path[PATH_MAX];
	char res[PATH_MAX], cmd[PATH_MAX + 16];
	struct stat st, tmp;
	uint64_t step = 0;
	int fd;

	(void)state;
	if (!mkdtemp(shm) || stat(shm, &st) < 0 || stat(root, &tmp) < 0 || st.st_dev == tmp.st_dev) {
		print_message("# /dev/shm is missing or on the same device as %s: not checked\n",
			      root);
		return;
	}
	snprintf(file, sizeof(file), "%s/net-7_7.ckpt", shm);
	fd = open(file, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mkdir(at("bydev"), 0755), 0);
	assert_int_equal(symlink(shm, at("bydev/rank_0")), 0);
	assert_int_equal(symlink(file, at("bydev/net-7_7.ckpt")), 0);

	assert_int_equal(fs_checkpoint_dir_check(shm, at("mnt"), st.st_dev, res, sizeof(res)),
			 -EXDEV);
	assert_int_equal(fs_checkpoint_dir_check(at("bydev/rank_0"), at("mnt"), st.st_dev, res,
						 sizeof(res)),
			 -EXDEV);
	assert_string_equal(res, "/dev/shm");
	assert_int_equal(fs_checkpoint_dir_check(at("ck"), at("mnt"), st.st_dev, NULL, 0), 0);
	assert_int_equal(fs_checkpoint_newest(shm, at("mnt"), st.st_dev, &step, path,
					      sizeof(path), NULL),
			 -EXDEV);
	/* the links to it are skipped; without the device they are followed */
	assert_int_equal(fs_checkpoint_newest(at("bydev"), at("mnt"), st.st_dev, &step, path,
					      sizeof(path), NULL),
			 -ENOENT);
	assert_int_equal(fs_checkpoint_newest(at("bydev"), at("mnt"), 0, &step, path,
					      sizeof(path), NULL),
			 0);
	assert_int_equal(step, (7ull << 32) | 7);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", shm);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_newest_in_dir_and_rank_dirs),
		cmocka_unit_test(test_checkpoint_dir_inside_the_mount_is_refused),
		cmocka_unit_test(test_checkpoint_scanner_skips_links_into_the_mount),
		cmocka_unit_test(test_checkpoint_dir_on_the_mount_device_is_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
