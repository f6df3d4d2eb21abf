/* SPDX-License-Identifier: MIT */
/*
 * A real etcd cluster for unit tests (Debian's etcd-server): MEMBERS members on loopback
 * ports the kernel says are free, in a temporary directory, started by group_setup()
 * and killed by group_teardown(); each member also dies with the test process
 * (PR_SET_PDEATHSIG), whatever ends it. E.endpoints is the client URL list.
 * Include once, after cmocka.h, fs.h and test_util.h.
 */
#ifndef ETCD_FIXTURE_H
#define ETCD_FIXTURE_H

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MEMBERS 3

static struct {
	char dir[64];
	unsigned client_port[MEMBERS], peer_port[MEMBERS];
	pid_t pid[MEMBERS];
	char endpoints[256];
	char initial[512];
} E;

/* A port the kernel says is free now (bound to 0, read back, closed). */
static unsigned free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* Start member @i (@state "new" or "existing"); its output goes to member-@i.log. */
static void member_start(int i, const char *state)
{
	char name[16], data[128], curl[64], purl[64], log[128];
	pid_t pid;

	snprintf(name, sizeof(name), "m%d", i);
	snprintf(data, sizeof(data), "%s/%s.etcd", E.dir, name);
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%u", E.client_port[i]);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%u", E.peer_port[i]);
	snprintf(log, sizeof(log), "%s/member-%d.log", E.dir, i);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *f = freopen(log, "a", stderr);

		(void)f;
		/* dies with the test, whatever ends it (an abort skips the teardown) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(2, 1);
		execlp("etcd", "etcd", "--name", name, "--data-dir", data, "--listen-client-urls",
		       curl, "--advertise-client-urls", curl, "--listen-peer-urls", purl,
		       "--initial-advertise-peer-urls", purl, "--initial-cluster", E.initial,
		       "--initial-cluster-state", state, "--initial-cluster-token", E.dir,
		       "--heartbeat-interval", "50", "--election-timeout", "500",
		       (char *)NULL);
		_exit(127);
	}
	E.pid[i] = pid;
}

static void member_kill(int i)
{
	if (E.pid[i] <= 0)
		return;
	kill(E.pid[i], SIGKILL);
	waitpid(E.pid[i], NULL, 0);
	E.pid[i] = 0;
}

static int count_kv(void *arg, const struct fs_etcd_kv *kv)
{
	(void)kv;
	(*(size_t *)arg)++;
	return 0;
}

/* Until a quorum answers a range (at most @sec seconds): 0, or the last error. */
static int wait_ready(struct fs_etcd *e, int sec)
{
	char why[FS_ETCD_WHY_MAX];
	size_t n = 0;
	int r = -EHOSTUNREACH;

	for (int k = 0; k < sec * 10 && r != 0; k++) {
		r = fs_etcd_range(e, "ready", false, count_kv, &n, NULL, why);
		if (r != 0)
			usleep(100000);
	}
	return r;
}

static int group_setup(void **state)
{
	struct fs_etcd *e;
	char why[FS_ETCD_WHY_MAX];
	size_t off = 0, ioff = 0;

	(void)state;
	snprintf(E.dir, sizeof(E.dir), "/tmp/test-etcd.XXXXXX");
	if (!mkdtemp(E.dir))
		return -1;
	for (int i = 0; i < MEMBERS; i++) {
		E.client_port[i] = free_port();
		E.peer_port[i] = free_port();
		off += (size_t)snprintf(E.endpoints + off, sizeof(E.endpoints) - off,
					"%shttp://127.0.0.1:%u", i ? "," : "", E.client_port[i]);
		ioff += (size_t)snprintf(E.initial + ioff, sizeof(E.initial) - ioff,
					 "%sm%d=http://127.0.0.1:%u", i ? "," : "", i,
					 E.peer_port[i]);
	}
	for (int i = 0; i < MEMBERS; i++)
		member_start(i, "new");
	if (fs_etcd_open(E.endpoints, 1000, &e, why) < 0)
		return -1;
	if (wait_ready(e, 30) < 0) {
		fprintf(stderr, "etcd did not start (is etcd-server installed?); logs in %s\n",
			E.dir);
		fs_etcd_close(e);
		return -1;
	}
	fs_etcd_close(e);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	for (int i = 0; i < MEMBERS; i++)
		member_kill(i);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", E.dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A client of the fixture's members (1 s a request), or the test fails. */
static struct fs_etcd *client(void)
{
	struct fs_etcd *e = NULL;
	char why[FS_ETCD_WHY_MAX];

	if (fs_etcd_open(E.endpoints, 1000, &e, why) < 0)
		fail_msg("fs_etcd_open: %s", why);
	return e;
}

#endif
