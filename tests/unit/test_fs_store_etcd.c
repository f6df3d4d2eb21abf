/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the etcd backend (fs/fs_store_etcd.c) against a real 3-member etcd
 * (etcd_fixture.h): batches come back from the log in order and whole (one of several
 * parts); a snapshot replaces the log before it and deletes it; one head at a time
 * holds the prefix, a second waits and is refused naming the first, and takes over at
 * once when the first closes; a head whose leader key is gone or another's writes
 * nothing; parts of a batch never committed are ignored and cleared by the next
 * snapshot; a committed entry missing refuses the restore; a lease outlives its TTL
 * while renewed; without a quorum a write fails in bounded time, and what was
 * acknowledged is there after.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs_store.h"
#include "test_util.h"

#include "etcd_fixture.h"

/* The configuration of a head on @prefix. */
static struct conf_cluster conf_of(const char *prefix, unsigned lease_sec)
{
	struct conf_cluster c = { 0 };

	c.state_backend = CONF_STATE_ETCD;
	c.etcd_servers = E.endpoints;
	c.etcd_prefix = (char *)prefix;
	c.leader_lease_sec = lease_sec;
	c.etcd_timeout_sec = 1;
	return c;
}

static struct fs_store_etcd *head_open(const char *prefix)
{
	struct conf_cluster c = conf_of(prefix, 5);
	struct fs_store_etcd *h = NULL;
	char why[SCHED_REASON_MAX];

	if (fs_store_etcd_open(&c, NULL, 0, &h, why) < 0)
		fail_msg("fs_store_etcd_open: %s", why);
	return h;
}

/* A batch of one job @name (its record @doc), full or not. */
static void batch_of(struct fs_batch *b, uint64_t version, bool full, const char *name,
		     const char *doc)
{
	memset(b, 0, sizeof(*b));
	b->version = version;
	b->full = full;
	b->event_history = 16;
	b->accounting_history = 16;
	b->meta = strdup("{}");
	b->jobs = calloc(1, sizeof(*b->jobs));
	assert_non_null(b->meta);
	assert_non_null(b->jobs);
	b->job_count = 1;
	b->jobs[0].serial = version;
	snprintf(b->jobs[0].name, sizeof(b->jobs[0].name), "%s", name);
	snprintf(b->jobs[0].state, sizeof(b->jobs[0].state), "running");
	b->jobs[0].doc = strdup(doc);
	assert_non_null(b->jobs[0].doc);
}

static void write_ok(struct fs_store_etcd *h, uint64_t version, bool full, const char *name,
		     const char *doc, bool *want_full)
{
	char why[SCHED_REASON_MAX];
	struct fs_batch b;
	bool wf;
	int r;

	batch_of(&b, version, full, name, doc);
	r = fs_store_etcd_write(h, &b, want_full ? want_full : &wf, why);
	fs_batch_free(&b);
	if (r < 0)
		fail_msg("write of %s: %s", name, why);
}

/* What a load applied, in order. */
struct applied {
	uint64_t version[16];
	bool full[16];
	char name[16][CONF_NAME_MAX + 1];
	size_t doc_len[16];
	size_t n;
};

static int record(void *arg, const struct fs_batch *b, char *why)
{
	struct applied *a = arg;

	(void)why;
	if (a->n < 16) {
		a->version[a->n] = b->version;
		a->full[a->n] = b->full;
		snprintf(a->name[a->n], sizeof(a->name[0]), "%s",
			 b->job_count ? b->jobs[0].name : "");
		a->doc_len[a->n] = b->job_count ? strlen(b->jobs[0].doc) : 0;
	}
	a->n++;
	return 0;
}

static int count_prefix(struct fs_etcd *e, const char *prefix)
{
	char why[FS_ETCD_WHY_MAX];
	size_t n = 0;

	assert_int_equal(fs_etcd_range(e, prefix, true, count_kv, &n, NULL, why), 0);
	return (int)n;
}

/* ---- the cases ---- */

/* Log entries come back in order and whole; a snapshot replaces what was before it. */
static void test_log_then_snapshot(void **state)
{
	struct fs_store_etcd *h = head_open("/t/log/");
	struct fs_etcd *raw = client();
	char why[SCHED_REASON_MAX], *big = malloc((1u << 20) + 300001);
	struct applied a = { 0 };
	bool untidy = true;

	(void)state;
	assert_non_null(big);
	memset(big, 'b', (1u << 20) + 300000);
	big[(1u << 20) + 300000] = '\0';
	write_ok(h, 1, false, "one", "{\"n\":1}", NULL);
	write_ok(h, 2, false, "two", big, NULL); /* 1.3 MiB: three parts */
	assert_int_equal(count_prefix(raw, "/t/log/log/"), 4);
	fs_store_etcd_close(h);

	h = head_open("/t/log/");
	assert_int_equal(fs_store_etcd_load(h, record, &a, &untidy, why), 0);
	assert_false(untidy);
	assert_int_equal(a.n, 2);
	assert_string_equal(a.name[0], "one");
	assert_string_equal(a.name[1], "two");
	assert_int_equal(a.doc_len[1], (1u << 20) + 300000);
	/* a snapshot: the log before it is deleted, and the load starts from it */
	write_ok(h, 3, true, "three", "{\"n\":3}", NULL);
	write_ok(h, 4, false, "four", "{\"n\":4}", NULL);
	assert_int_equal(count_prefix(raw, "/t/log/log/"), 1);
	assert_int_equal(count_prefix(raw, "/t/log/snap/"), 1);
	write_ok(h, 5, true, "five", "{\"n\":5}", NULL);
	assert_int_equal(count_prefix(raw, "/t/log/log/"), 0);
	assert_int_equal(count_prefix(raw, "/t/log/snap/"), 1); /* the old one deleted */
	write_ok(h, 6, false, "six", "{\"n\":6}", NULL);
	fs_store_etcd_close(h);

	h = head_open("/t/log/");
	memset(&a, 0, sizeof(a));
	assert_int_equal(fs_store_etcd_load(h, record, &a, &untidy, why), 0);
	assert_int_equal(a.n, 2);
	assert_true(a.full[0]);
	assert_string_equal(a.name[0], "five");
	assert_string_equal(a.name[1], "six");
	fs_store_etcd_close(h);
	fs_etcd_close(raw);
	free(big);
}

/* One head at a time: a second waits for the first's lease, is refused naming it, and
 * takes over at once when the first closes (its lease revoked). */
static void test_one_head_at_a_time(void **state)
{
	struct conf_cluster c = conf_of("/t/two/", 5);
	struct fs_store_etcd *h = head_open("/t/two/"), *g = NULL;
	char why[SCHED_REASON_MAX];
	struct timespec t0, t1;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fs_store_etcd_open(&c, NULL, 700, &g, why), -EBUSY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 700);
	if (!strstr(why, fs_store_etcd_identity(h)) || !strstr(why, "another head is active"))
		fail_msg("the refusal does not name the active head: %s", why);
	fs_store_etcd_close(h);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fs_store_etcd_open(&c, NULL, 3000, &g, why), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2); /* not the lease's 5 s */
	fs_store_etcd_close(g);
}

/* A head that died (its lease not renewed, not revoked) is replaced once its lease
 * ends, even when that is longer than the new head's own lease: the new one keeps its
 * lease alive while it waits. */
static void test_takes_over_from_a_dead_head(void **state)
{
	struct conf_cluster c = conf_of("/t/dead/", 2);
	struct fs_store_etcd *g = NULL;
	struct fs_etcd *raw = client();
	char why[SCHED_REASON_MAX];
	struct timespec t0, t1;
	int64_t dead;
	bool ok;

	(void)state;
	assert_int_equal(fs_etcd_lease_grant(raw, 4, &dead, why), 0);
	{
		const struct fs_etcd_op put = { .kind = FS_ETCD_PUT, .key = "/t/dead/leader",
						.value = "dead pid 2", .value_len = 10,
						.lease = dead };

		assert_int_equal(fs_etcd_txn(raw, NULL, 0, &put, 1, &ok, NULL, why), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (fs_store_etcd_open(&c, NULL, 8000, &g, why) < 0)
		fail_msg("the new head did not take over: %s", why);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec >= 2); /* it waited for the dead head's lease */
	write_ok(g, 1, false, "one", "{}", NULL);
	fs_store_etcd_close(g);
	fs_etcd_close(raw);
}

/*
 * A member that applies a request and never answers it (a partition right after the
 * commit): a proxy on a free port forwards every request to member 0 and swallows the
 * answer of the @nth Txn (1-based), holding the connection until the client gives up,
 * so the client tries the next member with the same request. Its pid in *@pid (killed
 * by the caller); its URL in @url.
 */
static void swallowing_proxy(int nth, char *url, size_t len, pid_t *pid)
{
	static const char py[] =
		"import http.server, socketserver, sys, time, urllib.request\n"
		"target, nth = sys.argv[1], int(sys.argv[2])\n"
		"seen = [0]\n"
		"class H(http.server.BaseHTTPRequestHandler):\n"
		"    protocol_version = 'HTTP/1.1'\n"
		"    def log_message(self, *a): pass\n"
		"    def do_POST(self):\n"
		"        body = self.rfile.read(int(self.headers['Content-Length']))\n"
		"        r = urllib.request.urlopen(urllib.request.Request(target + self.path, body,\n"
		"            {'Content-Type': 'application/json'}), timeout=10).read()\n"
		"        if self.path == '/v3/kv/txn':\n"
		"            seen[0] += 1\n"
		"            if seen[0] == nth:\n"
		"                time.sleep(5); self.close_connection = True; return\n"
		"        self.send_response(200)\n"
		"        self.send_header('Content-Length', str(len(r)))\n"
		"        self.end_headers(); self.wfile.write(r)\n"
		"class S(socketserver.ThreadingMixIn, http.server.HTTPServer):\n"
		"    daemon_threads = True\n"
		"s = S(('127.0.0.1', 0), H)\n"
		"print(s.server_address[1], flush=True)\n"
		"s.serve_forever()\n";
	char target[64], n[16], port[16] = "";
	int out[2];

	snprintf(target, sizeof(target), "http://127.0.0.1:%u", E.client_port[0]);
	snprintf(n, sizeof(n), "%d", nth);
	assert_int_equal(pipe(out), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		execlp("python3", "python3", "-c", py, target, n, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	assert_true(read(out[0], port, sizeof(port) - 1) > 0);
	close(out[0]);
	snprintf(url, len, "http://127.0.0.1:%d", atoi(port));
}

/* The leader key taken by a Txn whose answer was lost (the client asked the next member,
 * whose compare then failed): the key holds this head's own lease, so it leads, rather
 * than stand by for itself forever. */
static void test_lost_answer_of_the_election(void **state)
{
	struct conf_cluster c = conf_of("/t/lost1/", 4);
	struct fs_store_etcd *h = NULL;
	char why[SCHED_REASON_MAX], url[64], servers[320];
	pid_t proxy;

	(void)state;
	swallowing_proxy(1, url, sizeof(url), &proxy);
	snprintf(servers, sizeof(servers), "%s,http://127.0.0.1:%u", url, E.client_port[1]);
	c.etcd_servers = servers;
	if (fs_store_etcd_open(&c, NULL, 4000, &h, why) < 0)
		fail_msg("the head did not see it had taken the key: %s", why);
	write_ok(h, 1, false, "one", "{}", NULL);
	fs_store_etcd_close(h);
	kill(proxy, SIGKILL);
	waitpid(proxy, NULL, 0);
}

/* A batch committed by a Txn whose answer was lost: the retry's compare fails, and the
 * head finds `head` naming this very batch: committed, not an error. */
static void test_lost_answer_of_a_commit(void **state)
{
	struct conf_cluster c = conf_of("/t/lost2/", 4);
	struct fs_store_etcd *h = NULL;
	char why[SCHED_REASON_MAX], url[64], servers[320];
	struct applied a = { 0 };
	struct fs_batch b;
	bool wf, untidy;
	pid_t proxy;

	(void)state;
	swallowing_proxy(2, url, sizeof(url), &proxy);
	snprintf(servers, sizeof(servers), "%s,http://127.0.0.1:%u", url, E.client_port[1]);
	c.etcd_servers = servers;
	assert_int_equal(fs_store_etcd_open(&c, NULL, 0, &h, why), 0);
	batch_of(&b, 1, false, "one", "{}");
	if (fs_store_etcd_write(h, &b, &wf, why) < 0)
		fail_msg("a committed batch was reported as failed: %s", why);
	fs_batch_free(&b);
	write_ok(h, 2, false, "two", "{}", NULL);
	fs_store_etcd_close(h);
	kill(proxy, SIGKILL);
	waitpid(proxy, NULL, 0);
	h = head_open("/t/lost2/");
	assert_int_equal(fs_store_etcd_load(h, record, &a, &untidy, why), 0);
	assert_int_equal(a.n, 2);
	fs_store_etcd_close(h);
}

struct standby {
	struct conf_cluster c;
	struct fs_store_etcd *h;
	int r;
	char why[SCHED_REASON_MAX];
};

static void *standby_main(void *arg)
{
	struct standby *sb = arg;

	sb->r = fs_store_etcd_open(&sb->c, NULL, UINT_MAX, &sb->h, sb->why);
	return NULL;
}

/*
 * A standby reads the leader's snapshot and log as they come, and at takeover reads
 * only what came since: shown by deleting, behind everyone's back, an entry it has
 * read already (a load from etcd alone would find the gap). When the leader writes a
 * new snapshot meanwhile, the copy is of no use and the load reads etcd again.
 */
static void test_standby_reads_ahead(void **state)
{
	struct fs_etcd *raw = client();
	const struct fs_etcd_op hole = { .kind = FS_ETCD_DELETE_PREFIX,
					 .key = "/t/warm/log/00000000000000000002/" };
	char why[SCHED_REASON_MAX];
	struct applied a = { 0 };
	struct fs_store_etcd *h;
	struct standby sb = { .c = conf_of("/t/warm/", 4) };
	pthread_t t;
	bool ok, untidy;

	(void)state;
	for (int round = 0; round < 2; round++) {
		h = head_open(round ? "/t/warm2/" : "/t/warm/");
		sb.c.etcd_prefix = round ? "/t/warm2/" : "/t/warm/";
		sb.h = NULL;
		write_ok(h, 1, true, "snap1", "{}", NULL);
		write_ok(h, 2, false, "two", "{}", NULL);
		write_ok(h, 3, false, "three", "{}", NULL);
		assert_int_equal(pthread_create(&t, NULL, standby_main, &sb), 0);
		sleep(2); /* the standby has read 1 to 3 */
		if (round == 0)
			assert_int_equal(fs_etcd_txn(raw, NULL, 0, &hole, 1, &ok, NULL, why), 0);
		else
			write_ok(h, 4, true, "snap4", "{}", NULL); /* the copy is of no use now */
		write_ok(h, 5, false, "five", "{}", NULL);
		fs_store_etcd_close(h);
		assert_int_equal(pthread_join(t, NULL), 0);
		if (sb.r < 0)
			fail_msg("the standby did not take over: %s", sb.why);
		memset(&a, 0, sizeof(a));
		if (fs_store_etcd_load(sb.h, record, &a, &untidy, why) < 0)
			fail_msg("round %d: %s", round, why);
		if (round == 0) {
			assert_int_equal(a.n, 4);
			assert_string_equal(a.name[0], "snap1");
			assert_string_equal(a.name[1], "two"); /* from the copy: gone from etcd */
			assert_string_equal(a.name[3], "five");
		} else {
			assert_int_equal(a.n, 2);
			assert_string_equal(a.name[0], "snap4");
			assert_string_equal(a.name[1], "five");
		}
		write_ok(sb.h, 6, true, "after", "{}", NULL);
		fs_store_etcd_close(sb.h);
	}
	fs_etcd_close(raw);
}

/*
 * A standby's view: nothing before its first refresh; then the leader's snapshot and
 * log as committed, in order; nothing again (1) while nothing is new; the new entries
 * after the next refresh, and only the new snapshot once the leader writes one; at
 * takeover the load starts from that snapshot.
 */
static void test_standby_view(void **state)
{
	struct conf_cluster c = conf_of("/t/view/", 4);
	struct fs_store_etcd *h = head_open("/t/view/"), *sb = NULL;
	char why[SCHED_REASON_MAX];
	struct applied a = { 0 };
	uint64_t seq = 0;

	(void)state;
	if (fs_store_etcd_connect(&c, NULL, &sb, why) < 0)
		fail_msg("connect: %s", why);
	assert_int_equal(fs_store_etcd_lead(sb, 0, NULL, NULL, why), -EBUSY);
	assert_non_null(strstr(why, "another head leads"));
	assert_int_equal(fs_store_etcd_view(sb, UINT64_MAX, record, &a, &seq, why), -EAGAIN);
	/* an empty prefix is an empty view, not an error */
	assert_int_equal(fs_store_etcd_refresh(sb), 0);
	assert_int_equal(fs_store_etcd_view(sb, UINT64_MAX, record, &a, &seq, why), 0);
	assert_int_equal(a.n, 0);
	assert_int_equal(seq, 0);
	write_ok(h, 1, true, "snap1", "{}", NULL);
	write_ok(h, 2, false, "two", "{\"a\":1}", NULL);
	assert_int_equal(fs_store_etcd_refresh(sb), 0);
	assert_int_equal(fs_store_etcd_view(sb, 0, record, &a, &seq, why), 0);
	assert_int_equal(a.n, 2);
	assert_int_equal(seq, 2);
	assert_true(a.full[0]);
	assert_string_equal(a.name[0], "snap1");
	assert_string_equal(a.name[1], "two");
	assert_int_equal(a.doc_len[1], 7);
	memset(&a, 0, sizeof(a));
	assert_int_equal(fs_store_etcd_refresh(sb), 0);
	assert_int_equal(fs_store_etcd_view(sb, 2, record, &a, &seq, why), 1);
	assert_int_equal(a.n, 0);
	write_ok(h, 3, false, "three", "{}", NULL);
	assert_int_equal(fs_store_etcd_view(sb, 2, record, &a, &seq, why), 1); /* not read yet */
	assert_int_equal(fs_store_etcd_refresh(sb), 0);
	assert_int_equal(fs_store_etcd_view(sb, 2, record, &a, &seq, why), 0);
	assert_int_equal(a.n, 3);
	assert_string_equal(a.name[2], "three");
	write_ok(h, 4, true, "snap4", "{}", NULL);
	memset(&a, 0, sizeof(a));
	assert_int_equal(fs_store_etcd_refresh(sb), 0);
	assert_int_equal(fs_store_etcd_view(sb, 3, record, &a, &seq, why), 0);
	assert_int_equal(a.n, 1);
	assert_int_equal(seq, 4);
	assert_string_equal(a.name[0], "snap4");
	fs_store_etcd_close(h);
	assert_int_equal(fs_store_etcd_lead(sb, 8000, NULL, NULL, why), 0);
	memset(&a, 0, sizeof(a));
	{
		bool untidy;

		if (fs_store_etcd_load(sb, record, &a, &untidy, why) < 0)
			fail_msg("load: %s", why);
	}
	assert_int_equal(a.n, 1);
	assert_string_equal(a.name[0], "snap4");
	write_ok(sb, 5, false, "five", "{}", NULL);
	fs_store_etcd_close(sb);
}

/* A head whose leader key is gone (its lease expired) or another's writes nothing. */
static void test_deposed_head_writes_nothing(void **state)
{
	struct fs_store_etcd *h = head_open("/t/fence/");
	struct fs_etcd *raw = client();
	char why[SCHED_REASON_MAX];
	const struct fs_etcd_op del = { .kind = FS_ETCD_DELETE, .key = "/t/fence/leader" };
	const struct fs_etcd_op other = { .kind = FS_ETCD_PUT, .key = "/t/fence/leader",
					  .value = "other pid 1", .value_len = 11 };
	struct fs_batch b;
	bool ok, wf;

	(void)state;
	write_ok(h, 1, false, "one", "{}", NULL);
	assert_int_equal(fs_etcd_txn(raw, NULL, 0, &del, 1, &ok, NULL, why), 0);
	assert_int_equal(fs_etcd_txn(raw, NULL, 0, &other, 1, &ok, NULL, why), 0);
	batch_of(&b, 2, false, "two", "{}");
	assert_int_equal(fs_store_etcd_write(h, &b, &wf, why), -EIO);
	assert_true(fs_store_etcd_lost(h));
	if (!strstr(why, "other pid 1"))
		fail_msg("the failure does not name the new leader: %s", why);
	/* and the next write is refused before it is tried */
	assert_int_equal(fs_store_etcd_write(h, &b, &wf, why), -EIO);
	fs_batch_free(&b);
	assert_int_equal(count_prefix(raw, "/t/fence/log/"), 1);
	fs_store_etcd_close(h);
	fs_etcd_close(raw);
}

/* Parts of batches never committed are ignored, and the next snapshot clears them; an
 * entry of the log missing refuses the load, naming it. */
static void test_uncommitted_and_missing_entries(void **state)
{
	struct fs_store_etcd *h = head_open("/t/junk/");
	struct fs_etcd *raw = client();
	char why[SCHED_REASON_MAX];
	const struct fs_etcd_op junk[] = {
		{ .kind = FS_ETCD_PUT, .key = "/t/junk/log/00000000000000000099/000000",
		  .value = "x", .value_len = 1 },
		{ .kind = FS_ETCD_PUT, .key = "/t/junk/snap/00000000000000000098/000000",
		  .value = "y", .value_len = 1 },
	};
	const struct fs_etcd_op hole = { .kind = FS_ETCD_DELETE_PREFIX,
					 .key = "/t/junk/log/00000000000000000101/" };
	struct applied a = { 0 };
	bool ok, untidy = false;

	(void)state;
	write_ok(h, 1, false, "one", "{}", NULL);
	assert_int_equal(fs_etcd_txn(raw, NULL, 0, junk, 2, &ok, NULL, why), 0);
	fs_store_etcd_close(h);
	h = head_open("/t/junk/");
	assert_int_equal(fs_store_etcd_load(h, record, &a, &untidy, why), 0);
	assert_true(untidy);
	assert_int_equal(a.n, 1);
	/* seqs go on above what was seen, and a snapshot clears the rest */
	write_ok(h, 2, true, "two", "{}", NULL);
	assert_int_equal(count_prefix(raw, "/t/junk/log/"), 0);
	assert_int_equal(count_prefix(raw, "/t/junk/snap/"), 1);
	write_ok(h, 3, false, "three", "{}", NULL);
	write_ok(h, 4, false, "four", "{}", NULL);
	fs_store_etcd_close(h);
	/* the snapshot took seq 100 (above the 99 seen), the log 101 and 102; 101 deleted
	 * by hand: the load refuses, naming the gap */
	assert_int_equal(count_prefix(raw, "/t/junk/log/"), 2);
	assert_int_equal(fs_etcd_txn(raw, NULL, 0, &hole, 1, &ok, NULL, why), 0);
	h = head_open("/t/junk/");
	memset(&a, 0, sizeof(a));
	{
		int r = fs_store_etcd_load(h, record, &a, &untidy, why);

		if (r != -EBADMSG)
			fail_msg("load: %d, %zu batches (%s)", r, a.n, why);
	}
	if (!strstr(why, "log entry 102 follows 100"))
		fail_msg("the refusal does not name the gap: %s", why);
	fs_store_etcd_close(h);
	fs_etcd_close(raw);
}

/* A lease renewed by its thread outlives its TTL; the head still writes after it. */
static void test_lease_is_renewed(void **state)
{
	struct conf_cluster c = conf_of("/t/renew/", 2);
	struct fs_store_etcd *h = NULL;
	char why[SCHED_REASON_MAX];

	(void)state;
	assert_int_equal(fs_store_etcd_open(&c, NULL, 0, &h, why), 0);
	sleep(5);
	assert_false(fs_store_etcd_lost(h));
	write_ok(h, 1, false, "one", "{}", NULL);
	fs_store_etcd_close(h);
}

/* The log grows past the snapshot (and 8 MiB): the backend asks for a full batch. */
static void test_long_log_asks_for_a_snapshot(void **state)
{
	struct fs_store_etcd *h = head_open("/t/long/");
	char *doc = malloc((1u << 20) + 1);
	bool want = false;

	(void)state;
	assert_non_null(doc);
	memset(doc, 'd', 1u << 20);
	doc[1u << 20] = '\0';
	write_ok(h, 1, true, "base", "{}", &want);
	assert_false(want);
	for (uint64_t v = 2; v < 9; v++) {
		write_ok(h, v, false, "grow", doc, &want);
		assert_false(want);
	}
	write_ok(h, 9, false, "grow", doc, &want);
	write_ok(h, 10, false, "grow", doc, &want);
	assert_true(want);
	write_ok(h, 11, true, "snap", doc, &want);
	assert_false(want);
	fs_store_etcd_close(h);
	free(doc);
}

/*
 * Two members of three dead: a write fails in bounded time with -EIO (its outcome
 * unknown, said); with a member back the next write (a snapshot, as the committer then
 * writes) goes in, and the log holds what was acknowledged. Runs last: it kills members.
 */
static void test_quorum_loss(void **state)
{
	struct fs_store_etcd *h = head_open("/t/quorum/");
	char why[SCHED_REASON_MAX];
	struct applied a = { 0 };
	struct timespec t0, t1;
	struct fs_batch b;
	bool wf, untidy;

	(void)state;
	write_ok(h, 1, false, "one", "{}", NULL);
	member_kill(0);
	member_kill(1);
	batch_of(&b, 2, false, "two", "{}");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fs_store_etcd_write(h, &b, &wf, why), -EIO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fs_batch_free(&b);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	member_start(1, "existing");
	{
		struct fs_etcd *raw = client();

		assert_int_equal(wait_ready(raw, 30), 0);
		fs_etcd_close(raw);
	}
	/* the lease may have lapsed while there was no quorum: then this head is deposed,
	 * which is right; else its snapshot goes in (after batch 2, if the quorum committed
	 * that late: the snapshot is then written again) */
	batch_of(&b, 3, true, "three", "{}");
	if (fs_store_etcd_write(h, &b, &wf, why) < 0) {
		fs_batch_free(&b);
		assert_true(fs_store_etcd_lost(h));
		fs_store_etcd_close(h);
		return;
	}
	fs_batch_free(&b);
	fs_store_etcd_close(h);
	h = head_open("/t/quorum/");
	assert_int_equal(fs_store_etcd_load(h, record, &a, &untidy, why), 0);
	assert_int_equal(a.n, 1);
	assert_string_equal(a.name[0], "three");
	fs_store_etcd_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_then_snapshot),
		cmocka_unit_test(test_one_head_at_a_time),
		cmocka_unit_test(test_takes_over_from_a_dead_head),
		cmocka_unit_test(test_lost_answer_of_the_election),
		cmocka_unit_test(test_lost_answer_of_a_commit),
		cmocka_unit_test(test_standby_reads_ahead),
		cmocka_unit_test(test_standby_view),
		cmocka_unit_test(test_deposed_head_writes_nothing),
		cmocka_unit_test(test_uncommitted_and_missing_entries),
		cmocka_unit_test(test_lease_is_renewed),
		cmocka_unit_test(test_long_log_asks_for_a_snapshot),
		cmocka_unit_test(test_quorum_loss),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
