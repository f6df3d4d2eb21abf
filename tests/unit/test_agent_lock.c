/* SPDX-License-Identifier: MIT */
/*
 * ascend-agent's instance lock (agent.h): one agent per server and machine. Where the
 * lock file lives, what it is keyed by, and that a second taker is refused with the
 * holder's pid while the first holds it, and is not once it is gone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

static char tmp[64];

static int make_tmp(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/test-agent-lock.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	return 0;
}

static int remove_tmp(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_lock_dir_by_user(void **state)
{
	char dir[64];

	(void)state;
	assert_int_equal(agent_lock_dir(0, "/run/user/0", dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/run/ascend-agent");
	assert_int_equal(agent_lock_dir(1000, "/run/user/1000", dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/run/user/1000/ascend-agent");
	/* no runtime directory, or a relative one: a directory of this user's in /tmp */
	assert_int_equal(agent_lock_dir(1000, NULL, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/tmp/ascend-agent-1000");
	assert_int_equal(agent_lock_dir(1000, "run", dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/tmp/ascend-agent-1000");
	assert_int_equal(agent_lock_dir(0, NULL, dir, 8), -ENAMETOOLONG);
}

/* npu-smi mode: one lock per machine, whatever the node name; a fault file: per node and
 * mount, as the node's cgroup directory is named */
static void test_lock_name_per_machine_or_per_node(void **state)
{
	char a[128], b[128], cg[128];

	(void)state;
	assert_int_equal(agent_lock_name("a2-node-01", "/ascend", true, a, sizeof(a)), 0);
	assert_int_equal(agent_lock_name("a2-node-02", "/other", true, b, sizeof(b)), 0);
	assert_string_equal(a, "npus.lock");
	assert_string_equal(a, b);
	assert_int_equal(agent_lock_name("a2-node-01", "/ascend", false, a, sizeof(a)), 0);
	assert_int_equal(agent_cgroup_node_name("a2-node-01", "/ascend", cg, sizeof(cg)), 0);
	strcat(cg, ".lock");
	assert_string_equal(a, cg);
	assert_int_equal(agent_lock_name("a2-node-02", "/ascend", false, b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(agent_lock_name("a2-node-01", "/ascend2", false, b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(agent_lock_name("A2 node", "/ascend", false, b, sizeof(b)), -EINVAL);
	assert_int_equal(agent_lock_name("a2-node-01", "/ascend", false, b, 10), -ENAMETOOLONG);
}

static void test_lock_second_taker_is_refused_with_holder_pid(void **state)
{
	char dir[128], path[160], text[AGENT_LOCK_TEXT_MAX], buf[128];
	int fd = -1, fd2 = -1, fd3 = -1;
	long pid = -1;
	ssize_t n;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/run", tmp);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 4242 node n1 mount /a\n", &fd,
					 &pid, text, sizeof(text)),
			 0);
	assert_true(fd >= 0);
	/* close-on-exec: job processes, which may outlive the agent, never hold it */
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	snprintf(path, sizeof(path), "%s/npus.lock", dir);
	{
		int rfd = open(path, O_RDONLY);

		assert_true(rfd >= 0);
		n = read(rfd, buf, sizeof(buf) - 1);
		close(rfd);
		assert_true(n > 0);
		buf[n] = '\0';
		assert_string_equal(buf, "pid 4242 node n1 mount /a\n");
	}
	/* a second open of the file (another agent) is refused, told who holds it */
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1 node n2 mount /b\n", &fd2,
					 &pid, text, sizeof(text)),
			 -EBUSY);
	assert_int_equal(fd2, -1);
	assert_int_equal(pid, 4242);
	assert_string_equal(text, "pid 4242 node n1 mount /a");
	/* another lock file of the same directory is another server */
	assert_int_equal(agent_lock_take(dir, "node-n2-00000000.lock", "pid 7\n", &fd3, NULL,
					 NULL, 0),
			 0);
	close(fd3);
	/* the holder ends: the lock is free, and the new holder's text replaces the old */
	close(fd);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 99\n", &fd2, &pid, text,
					 sizeof(text)),
			 0);
	{
		int rfd = open(path, O_RDONLY);

		n = read(rfd, buf, sizeof(buf) - 1);
		close(rfd);
		buf[n > 0 ? n : 0] = '\0';
		assert_string_equal(buf, "pid 99\n");
	}
	close(fd2);
}

/* A holder killed with SIGKILL leaves no stale lock: the kernel drops it with the process. */
static void test_lock_is_freed_when_its_holder_is_killed(void **state)
{
	char dir[128], text[AGENT_LOCK_TEXT_MAX];
	int p[2], fd = -1, status;
	long pid = 0;
	pid_t child;
	char c;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/kill", tmp);
	assert_int_equal(pipe(p), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char holder[64];
		int cfd;

		snprintf(holder, sizeof(holder), "pid %ld\n", (long)getpid());
		close(p[0]);
		if (agent_lock_take(dir, "npus.lock", holder, &cfd, NULL, NULL, 0) < 0)
			_exit(1);
		(void)!write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1\n", &fd, &pid, text,
					 sizeof(text)),
			 -EBUSY);
	assert_int_equal(pid, child);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1\n", &fd, &pid, text,
					 sizeof(text)),
			 0);
	close(fd);
}

/* A holder that has not written its pid yet: refused, the pid unknown (0). */
static void test_lock_holder_without_pid(void **state)
{
	char dir[128], path[160], text[AGENT_LOCK_TEXT_MAX] = "x";
	int hfd, fd = -1;
	long pid = -1;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/early", tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/npus.lock", dir);
	hfd = open(path, O_RDWR | O_CREAT, 0644);
	assert_true(hfd >= 0);
	assert_int_equal(flock(hfd, LOCK_EX), 0);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1\n", &fd, &pid, text,
					 sizeof(text)),
			 -EBUSY);
	assert_int_equal(pid, 0);
	assert_string_equal(text, "");
	close(hfd);
}

/* A directory others may write, a lock file that is a symlink, a parent that does not
 * exist: refused, nothing taken. */
static void test_lock_refuses_unsafe_places(void **state)
{
	char dir[128], path[160];
	int fd = -1;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/open", tmp);
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1\n", &fd, NULL, NULL, 0),
			 -EPERM);
	snprintf(dir, sizeof(dir), "%s/file", tmp);
	close(open(dir, O_WRONLY | O_CREAT, 0644));
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1\n", &fd, NULL, NULL, 0),
			 -ENOTDIR);
	snprintf(dir, sizeof(dir), "%s/link", tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/npus.lock", dir);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1\n", &fd, NULL, NULL, 0),
			 -ELOOP);
	snprintf(dir, sizeof(dir), "%s/no/such", tmp);
	assert_int_equal(agent_lock_take(dir, "npus.lock", "pid 1\n", &fd, NULL, NULL, 0),
			 -ENOENT);
	assert_int_equal(fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lock_dir_by_user),
		cmocka_unit_test(test_lock_name_per_machine_or_per_node),
		cmocka_unit_test(test_lock_second_taker_is_refused_with_holder_pid),
		cmocka_unit_test(test_lock_is_freed_when_its_holder_is_killed),
		cmocka_unit_test(test_lock_holder_without_pid),
		cmocka_unit_test(test_lock_refuses_unsafe_places),
	};

	return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
