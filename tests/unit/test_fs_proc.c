/* SPDX-License-Identifier: MIT */
/* fs_proc.c: a process's identity outlives its threads and is never another process's. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs.h"

static pid_t thread_tid;
static struct fs_proc_id thread_id, thread_again;
static int thread_r = 1, thread_again_r = 1;

/* Run while the group has two threads: its group from /proc/<tid>/status and the
 * leader's stat, then again (from the daemon's cache of threads seen). */
static void *record_id(void *arg)
{
	(void)arg;
	thread_tid = (pid_t)syscall(SYS_gettid);
	thread_r = fs_proc_id_of(thread_tid, &thread_id);
	thread_again_r = fs_proc_id_of(thread_tid, &thread_again);
	return NULL;
}

/* main_id is read while the group has one thread (one read of /proc/<pid>/stat), the
 * thread's while it has two: both name the same process. */
static void test_proc_id_is_the_thread_group(void **state)
{
	struct fs_proc_id main_id, again, untouched = { 7, 7 };
	pthread_t t;

	(void)state;
	assert_int_equal(fs_proc_id_of((pid_t)syscall(SYS_gettid), &main_id), 0);
	assert_int_equal(main_id.tgid, getpid());
	assert_true(main_id.start_ticks > 0);
	/* a thread has its own tid, but names the same process while it lives */
	assert_int_equal(pthread_create(&t, NULL, record_id, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_not_equal(thread_tid, getpid());
	assert_int_equal(thread_r, 0);
	assert_true(fs_proc_id_equal(&main_id, &thread_id));
	assert_int_equal(thread_again_r, 0);
	assert_true(fs_proc_id_equal(&main_id, &thread_again));
	/* and the process reads the same after the thread is gone */
	assert_int_equal(fs_proc_id_of(getpid(), &again), 0);
	assert_true(fs_proc_id_equal(&main_id, &again));
	/* no such thread: -ESRCH, the result untouched */
	assert_int_equal(fs_proc_id_of(INT32_MAX, &untouched), -ESRCH);
	assert_int_equal(untouched.tgid, 7);
}

static void test_proc_id_of_a_child_differs(void **state)
{
	struct fs_proc_id me, child;
	int fds[2], status;
	pid_t pid;
	char c;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[1]);
		(void)!read(fds[0], &c, 1); /* lives until the parent has looked */
		_exit(0);
	}
	close(fds[0]);
	assert_int_equal(fs_proc_id_of(getpid(), &me), 0);
	assert_int_equal(fs_proc_id_of(pid, &child), 0);
	assert_int_equal(child.tgid, pid);
	assert_false(fs_proc_id_equal(&me, &child));
	close(fds[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void test_proc_id_unknown_caller(void **state)
{
	struct fs_proc_id id = { 0 }, unknown = { 0 };

	(void)state;
	/* pid 0: a caller in a pid namespace the daemon cannot see */
	assert_int_equal(fs_proc_id_of(0, &id), -ESRCH);
	assert_true(fs_proc_id_equal(&id, &unknown));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_id_is_the_thread_group),
		cmocka_unit_test(test_proc_id_of_a_child_differs),
		cmocka_unit_test(test_proc_id_unknown_caller),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
