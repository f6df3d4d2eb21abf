/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the etcd client (fs/fs_etcd.c) against a real etcd (Debian's
 * etcd-server): three members on loopback, started by the test in a temporary
 * directory and killed at its end (every path: the group teardown). What is checked is
 * what a head will rely on: a Txn applies all or nothing; a range reads every key of a
 * prefix in order at one revision, across pages, binary values intact; a key held on a
 * lease is taken by one campaigner only, is gone with its lease, and a write fenced by
 * it fails once the lease is lost; the client goes on through another member when one
 * dies, and when the quorum is gone a write fails with -EHOSTUNREACH in bounded time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "test_util.h"

#include "etcd_fixture.h"

/* ---- the cases ---- */

struct seen {
	char keys[8][64];
	char values[8][64];
	size_t value_len[8];
	int64_t lease[8];
	size_t n;
};

static int collect(void *arg, const struct fs_etcd_kv *kv)
{
	struct seen *s = arg;

	if (s->n < 8 && kv->key_len < 64 && kv->value_len < 64) {
		memcpy(s->keys[s->n], kv->key, kv->key_len + 1);
		memcpy(s->values[s->n], kv->value, kv->value_len + 1);
		s->value_len[s->n] = kv->value_len;
		s->lease[s->n] = kv->lease;
	}
	s->n++;
	return 0;
}

/* A Txn applies every op when its compares hold, none when one does not. */
static void test_txn_is_all_or_nothing(void **state)
{
	struct fs_etcd *e = client();
	char why[FS_ETCD_WHY_MAX];
	static const char bin[] = { 'a', 0, (char)0xff, '\n' };
	struct fs_etcd_op ops[] = {
		{ FS_ETCD_PUT, "t1/a", "one", 3, 0 },
		{ FS_ETCD_PUT, "t1/b", bin, sizeof(bin), 0 },
	};
	struct fs_etcd_cmp absent = { "t1/a", FS_ETCD_CMP_CREATE, 0, NULL, 0 };
	struct fs_etcd_op more[] = { { FS_ETCD_PUT, "t1/c", "three", 5, 0 } };
	struct seen s = { 0 };
	bool ok = false;
	int64_t rev = 0;

	(void)state;
	assert_int_equal(fs_etcd_txn(e, &absent, 1, ops, 2, &ok, &rev, why), 0);
	assert_true(ok);
	assert_true(rev > 0);
	/* t1/a exists now: the same compare fails, and t1/c is not written */
	assert_int_equal(fs_etcd_txn(e, &absent, 1, more, 1, &ok, NULL, why), 0);
	assert_false(ok);
	assert_int_equal(fs_etcd_range(e, "t1/", true, collect, &s, NULL, why), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.keys[0], "t1/a");
	assert_string_equal(s.values[0], "one");
	assert_string_equal(s.keys[1], "t1/b");
	assert_int_equal(s.value_len[1], sizeof(bin));
	assert_memory_equal(s.values[1], bin, sizeof(bin));
	/* delete by prefix, compared on a value */
	{
		struct fs_etcd_cmp is_one = { "t1/a", FS_ETCD_CMP_VALUE, 0, "one", 3 };
		struct fs_etcd_op del = { FS_ETCD_DELETE_PREFIX, "t1/", NULL, 0, 0 };

		assert_int_equal(fs_etcd_txn(e, &is_one, 1, &del, 1, &ok, NULL, why), 0);
		assert_true(ok);
		memset(&s, 0, sizeof(s));
		assert_int_equal(fs_etcd_range(e, "t1/", true, collect, &s, NULL, why), 0);
		assert_int_equal(s.n, 0);
	}
	fs_etcd_close(e);
}

struct order {
	size_t n;
	char last[64];
	bool sorted;
};

static int check_order(void *arg, const struct fs_etcd_kv *kv)
{
	struct order *o = arg;

	if (o->n && strcmp(o->last, kv->key) >= 0)
		o->sorted = false;
	snprintf(o->last, sizeof(o->last), "%s", kv->key);
	o->n++;
	return 0;
}

/* 2,500 keys come back in order across the range's pages of 1,000, and a key just past
 * the prefix is not among them. */
static void test_range_reads_every_page(void **state)
{
	struct fs_etcd *e = client();
	char why[FS_ETCD_WHY_MAX], keys[100][32];
	struct fs_etcd_op ops[100];
	struct order o = { 0, "", true };
	bool ok;

	(void)state;
	for (int batch = 0; batch < 25; batch++) {
		for (int i = 0; i < 100; i++) {
			snprintf(keys[i], sizeof(keys[i]), "pg/%05d", batch * 100 + i);
			ops[i] = (struct fs_etcd_op){ FS_ETCD_PUT, keys[i], "v", 1, 0 };
		}
		assert_int_equal(fs_etcd_txn(e, NULL, 0, ops, 100, &ok, NULL, why), 0);
		assert_true(ok);
	}
	ops[0] = (struct fs_etcd_op){ FS_ETCD_PUT, "ph", "outside", 7, 0 };
	assert_int_equal(fs_etcd_txn(e, NULL, 0, ops, 1, &ok, NULL, why), 0);
	assert_int_equal(fs_etcd_range(e, "pg/", true, check_order, &o, NULL, why), 0);
	assert_int_equal(o.n, 2500);
	assert_true(o.sorted);
	assert_string_equal(o.last, "pg/02499");
	fs_etcd_close(e);
}

struct sizes {
	size_t n, bytes;
	bool intact;
};

static int add_size(void *arg, const struct fs_etcd_kv *kv)
{
	struct sizes *z = arg;

	z->n++;
	z->bytes += kv->value_len;
	z->intact = z->intact && kv->value[0] == 'L' && kv->value[kv->value_len - 1] == 'L';
	return 0;
}

/* 70 MiB of values under one prefix (50 of 1.4 MiB): more than one answer may hold at
 * 1,000 keys a page; the range reads them all anyway, in smaller pages. */
static void test_range_of_large_values(void **state)
{
	struct fs_etcd *e = client();
	size_t len = 1400u << 10;
	char why[FS_ETCD_WHY_MAX], key[32], *big = malloc(len);
	struct sizes z = { 0, 0, true };
	bool ok;

	(void)state;
	assert_non_null(big);
	memset(big, 'L', len);
	for (int i = 0; i < 50; i++) {
		struct fs_etcd_op put = { FS_ETCD_PUT, key, big, len, 0 };

		snprintf(key, sizeof(key), "big/%02d", i);
		if (fs_etcd_txn(e, NULL, 0, &put, 1, &ok, NULL, why) < 0)
			fail_msg("put %d: %s", i, why);
	}
	assert_int_equal(fs_etcd_range(e, "big/", true, add_size, &z, NULL, why), 0);
	assert_int_equal(z.n, 50);
	assert_int_equal(z.bytes, 50 * len);
	assert_true(z.intact);
	{
		struct fs_etcd_op del = { FS_ETCD_DELETE_PREFIX, "big/", NULL, 0, 0 };

		assert_int_equal(fs_etcd_txn(e, NULL, 0, &del, 1, &ok, NULL, why), 0);
	}
	free(big);
	fs_etcd_close(e);
}

/*
 * Leadership on a lease: the key is taken by the first campaigner only; a write fenced
 * by the holder's lease goes through while it holds, and fails (nothing written) once its
 * lease is revoked; then the other campaigner takes the key.
 */
static void test_lease_election_and_fencing(void **state)
{
	struct fs_etcd *a = client(), *b = client();
	char why[FS_ETCD_WHY_MAX];
	int64_t la, lb;
	unsigned ttl;
	bool ok;
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(fs_etcd_lease_grant(a, 10, &la, why), 0);
	assert_int_equal(fs_etcd_lease_grant(b, 10, &lb, why), 0);
	assert_true(la != lb);
	{
		struct fs_etcd_cmp free_key = { "el/leader", FS_ETCD_CMP_CREATE, 0, NULL, 0 };
		struct fs_etcd_op take_a = { FS_ETCD_PUT, "el/leader", "head-a", 6, la };
		struct fs_etcd_op take_b = { FS_ETCD_PUT, "el/leader", "head-b", 6, lb };

		assert_int_equal(fs_etcd_txn(a, &free_key, 1, &take_a, 1, &ok, NULL, why), 0);
		assert_true(ok);
		assert_int_equal(fs_etcd_txn(b, &free_key, 1, &take_b, 1, &ok, NULL, why), 0);
		assert_false(ok);
	}
	assert_int_equal(fs_etcd_range(b, "el/leader", false, collect, &s, NULL, why), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.values[0], "head-a");
	assert_true(s.lease[0] == la);
	{
		struct fs_etcd_cmp mine = { "el/leader", FS_ETCD_CMP_LEASE, la, NULL, 0 };
		struct fs_etcd_op w1 = { FS_ETCD_PUT, "el/state", "by-a-1", 6, 0 };
		struct fs_etcd_op w2 = { FS_ETCD_PUT, "el/state", "by-a-2", 6, 0 };

		assert_int_equal(fs_etcd_lease_keepalive(a, la, &ttl, why), 0);
		assert_true(ttl > 0);
		assert_int_equal(fs_etcd_txn(a, &mine, 1, &w1, 1, &ok, NULL, why), 0);
		assert_true(ok);
		assert_int_equal(fs_etcd_lease_revoke(b, la, why), 0); /* a's lease is lost */
		assert_int_equal(fs_etcd_lease_keepalive(a, la, &ttl, why), 0);
		assert_int_equal(ttl, 0);
		assert_int_equal(fs_etcd_txn(a, &mine, 1, &w2, 1, &ok, NULL, why), 0);
		assert_false(ok); /* the deposed head's write is fenced off */
		memset(&s, 0, sizeof(s));
		assert_int_equal(fs_etcd_range(b, "el/state", false, collect, &s, NULL, why), 0);
		assert_int_equal(s.n, 1);
		assert_string_equal(s.values[0], "by-a-1");
	}
	{
		struct fs_etcd_cmp free_key = { "el/leader", FS_ETCD_CMP_CREATE, 0, NULL, 0 };
		struct fs_etcd_op take_b = { FS_ETCD_PUT, "el/leader", "head-b", 6, lb };

		assert_int_equal(fs_etcd_txn(b, &free_key, 1, &take_b, 1, &ok, NULL, why), 0);
		assert_true(ok);
	}
	assert_int_equal(fs_etcd_lease_revoke(b, lb, why), 0);
	fs_etcd_close(a);
	fs_etcd_close(b);
}

/* Keys whose prefix ends in 0xff bytes: the range end drops them before it adds one, as
 * etcd's own clients do (a byte 0xff + 1 wrapped to 0 and read, or deleted, nothing);
 * an empty prefix reads every key. */
static void test_prefix_ending_in_0xff(void **state)
{
	struct fs_etcd *e = client();
	char why[FS_ETCD_WHY_MAX];
	struct fs_etcd_op ops[] = {
		{ FS_ETCD_PUT, "ff\xff" "a", "1", 1, 0 },
		{ FS_ETCD_PUT, "ff\xff\xff" "b", "2", 1, 0 },
		{ FS_ETCD_PUT, "fg", "outside", 7, 0 },
	};
	struct fs_etcd_op del = { FS_ETCD_DELETE_PREFIX, "ff\xff", NULL, 0, 0 };
	size_t n = 0, all = 0;
	bool ok;

	(void)state;
	assert_int_equal(fs_etcd_txn(e, NULL, 0, ops, 3, &ok, NULL, why), 0);
	assert_int_equal(fs_etcd_range(e, "ff\xff", true, count_kv, &n, NULL, why), 0);
	assert_int_equal(n, 2);
	assert_int_equal(fs_etcd_range(e, "", true, count_kv, &all, NULL, why), 0);
	assert_true(all >= 3);
	assert_int_equal(fs_etcd_txn(e, NULL, 0, &del, 1, &ok, NULL, why), 0);
	n = 0;
	assert_int_equal(fs_etcd_range(e, "ff", true, count_kv, &n, NULL, why), 0);
	assert_int_equal(n, 0); /* "fg" is not under "ff" */
	n = 0;
	assert_int_equal(fs_etcd_range(e, "fg", false, count_kv, &n, NULL, why), 0);
	assert_int_equal(n, 1);
	fs_etcd_close(e);
}

/* A proxy in front of a member that answers every request with an HTML 502. */
static void *bad_gateway(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		char buf[4096];
		int fd = accept(lfd, NULL, NULL);
		static const char answer[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n"
					     "Content-Length: 13\r\nConnection: close\r\n\r\n"
					     "<html></html>";

		if (fd < 0)
			return NULL;
		if (read(fd, buf, sizeof(buf)) > 0 && write(fd, answer, sizeof(answer) - 1) < 0)
			(void)0;
		close(fd);
	}
}

/* An endpoint that answers HTTP 5xx without JSON (a proxy's error page) is passed over:
 * the next member answers, and is the one used next. */
static void test_html_5xx_goes_to_the_next_member(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	char why[FS_ETCD_WHY_MAX], eps[400], good[64];
	struct fs_etcd *e = NULL;
	pthread_t t;
	size_t n = 0;

	(void)state;
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(listen(lfd, 8), 0);
	assert_int_equal(pthread_create(&t, NULL, bad_gateway, &lfd), 0);
	snprintf(good, sizeof(good), "http://127.0.0.1:%u", E.client_port[0]);
	snprintf(eps, sizeof(eps), "http://127.0.0.1:%u,%s", ntohs(a.sin_port), good);
	assert_int_equal(fs_etcd_open(eps, 1000, &e, why), 0);
	if (fs_etcd_range(e, "pg/0000", true, count_kv, &n, NULL, why) != 0)
		fail_msg("range through a bad gateway and a member: %s", why);
	assert_int_equal(n, 10);
	assert_string_equal(fs_etcd_endpoint(e), good);
	fs_etcd_close(e);
	shutdown(lfd, SHUT_RDWR);
	close(lfd);
	pthread_join(t, NULL);
}

/* Bad endpoints are refused with what to write; nothing listening is -EHOSTUNREACH with
 * a sentence that names the endpoint. */
static void test_bad_and_dead_endpoints(void **state)
{
	struct fs_etcd *e = NULL;
	char why[FS_ETCD_WHY_MAX] = "", dead[64];
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(fs_etcd_open("127.0.0.1:2379", 0, &e, why), -EINVAL);
	assert_non_null(strstr(why, "write http://HOST:PORT"));
	assert_int_equal(fs_etcd_open("http://a:1,,http://b:2", 0, &e, why), -EINVAL);
	assert_int_equal(fs_etcd_open("", 0, &e, why), -EINVAL);
	snprintf(dead, sizeof(dead), "http://127.0.0.1:%u", free_port());
	assert_int_equal(fs_etcd_open(dead, 300, &e, why), 0);
	assert_int_equal(fs_etcd_range(e, "x", false, collect, &s, NULL, why), -EHOSTUNREACH);
	assert_non_null(strstr(why, dead));
	assert_non_null(strstr(why, "quorum"));
	fs_etcd_close(e);
}

/*
 * The member the client talks to dies: the next call goes through another. Two of three
 * dead: no quorum, a write fails (-EHOSTUNREACH, in bounded time) and, once a member is
 * back, is not there. Runs last: it kills members (the teardown kills the rest).
 */
static void test_member_loss_and_quorum_loss(void **state)
{
	struct fs_etcd *e = client();
	char why[FS_ETCD_WHY_MAX];
	struct fs_etcd_op w = { FS_ETCD_PUT, "q/one", "1", 1, 0 };
	struct fs_etcd_op lost = { FS_ETCD_PUT, "q/lost", "x", 1, 0 };
	struct seen s = { 0 };
	struct timespec t0, t1;
	bool ok;
	int used = -1, other;

	(void)state;
	assert_int_equal(fs_etcd_txn(e, NULL, 0, &w, 1, &ok, NULL, why), 0);
	for (int i = 0; i < MEMBERS; i++) {
		char url[64];

		snprintf(url, sizeof(url), "http://127.0.0.1:%u", E.client_port[i]);
		if (strcmp(url, fs_etcd_endpoint(e)) == 0)
			used = i;
	}
	assert_true(used >= 0);
	member_kill(used);
	w.key = "q/two";
	/* a new raft leader may take an election timeout or two */
	for (int k = 0; k < 50; k++) {
		if (fs_etcd_txn(e, NULL, 0, &w, 1, &ok, NULL, why) == 0)
			break;
		usleep(100000);
	}
	assert_true(ok);
	assert_true(strstr(fs_etcd_endpoint(e), "127.0.0.1") != NULL);
	other = (used + 1) % MEMBERS;
	member_kill(other);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fs_etcd_txn(e, NULL, 0, &lost, 1, &ok, NULL, why), -EHOSTUNREACH);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 10); /* each endpoint tried once, 1 s each */
	/* a member back: a quorum again, and what was acknowledged is there. The write that
	 * failed may be there too: the member left alone may have logged it, and raft then
	 * commits it (fs.h: after -EHOSTUNREACH, read before retrying) */
	member_start(other, "existing");
	assert_int_equal(wait_ready(e, 30), 0);
	assert_int_equal(fs_etcd_range(e, "q/", true, collect, &s, NULL, why), 0);
	assert_true(s.n == 2 || s.n == 3);
	if (s.n == 3)
		assert_string_equal(s.keys[0], "q/lost");
	assert_string_equal(s.keys[s.n - 2], "q/one");
	assert_string_equal(s.keys[s.n - 1], "q/two");
	fs_etcd_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_txn_is_all_or_nothing),
		cmocka_unit_test(test_range_reads_every_page),
		cmocka_unit_test(test_range_of_large_values),
		cmocka_unit_test(test_lease_election_and_fencing),
		cmocka_unit_test(test_prefix_ending_in_0xff),
		cmocka_unit_test(test_html_5xx_goes_to_the_next_member),
		cmocka_unit_test(test_bad_and_dead_endpoints),
		cmocka_unit_test(test_member_loss_and_quorum_loss),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
