/* SPDX-License-Identifier: MIT */
/*
 * fs_joblog_proc.c: the processes of a job log. A process's name parses back to itself
 * and nothing else does; a line's process is read from its head; the bytes per process
 * move to log.1 at a rotation; and what a per-process file reads, in any pieces, from
 * any offset, while the log grows, is exactly that process's lines, as many bytes as
 * the index counted for it.
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

#include "fs_internal.h"

static void test_proc_names_parse_back(void **state)
{
	static const char *const good[] = { "scheduler", "node", "rank-0", "rank-7",
					     "rank-999999" };
	static const char *const bad[] = { "", "rank-", "rank-01", "rank-1234567", "rank--1",
					    "rank-1a", "Node", "nodes", "sched", "rank" };
	char name[16];
	uint32_t proc, prev = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(fs_joblog_proc_parse(good[i], strlen(good[i]), &proc), 0);
		assert_int_equal(fs_joblog_proc_name(proc, name, sizeof(name)), 0);
		assert_string_equal(name, good[i]);
		if (i) /* the order logs/ lists them in */
			assert_true(proc > prev);
		prev = proc;
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(fs_joblog_proc_parse(bad[i], strlen(bad[i]), &proc), -EINVAL);
	/* the length given is what counts, not a NUL */
	assert_int_equal(fs_joblog_proc_parse("rank-12 s0", 7, &proc), 0);
	assert_int_equal(proc, FS_LOG_PROC_RANK(12));
	assert_int_equal(fs_joblog_proc_name(FS_LOG_PROC_RANK(999999), name, 11), -ENAMETOOLONG);
}

static void test_line_process_is_read_from_its_head(void **state)
{
	uint32_t proc = 0;
	const char *line = "[g12 rank-3 a2-node-01] hello\n";

	(void)state;
	assert_int_equal(fs_joblog_line_proc(line, strlen(line), &proc), 1);
	assert_int_equal(proc, FS_LOG_PROC_RANK(3));
	assert_int_equal(fs_joblog_line_proc("[g1 node s] x\n", 14, &proc), 1);
	assert_int_equal(proc, FS_LOG_PROC_NODE);
	/* too little yet to tell */
	for (size_t n = 0; n < strlen("[g12 rank-3 "); n++)
		assert_int_equal(fs_joblog_line_proc(line, n, &proc), 0);
	/* no line of the log's shape */
	assert_int_equal(fs_joblog_line_proc("hello\n", 6, &proc), -EINVAL);
	assert_int_equal(fs_joblog_line_proc("[x1 node s] x\n", 14, &proc), -EINVAL);
	assert_int_equal(fs_joblog_line_proc("[g node s] x\n", 13, &proc), -EINVAL);
	assert_int_equal(fs_joblog_line_proc("[g1 rank-01 s] x\n", 17, &proc), -EINVAL);
	assert_int_equal(fs_joblog_line_proc("[g1 node\n", 9, &proc), -EINVAL);
	assert_int_equal(fs_joblog_line_proc("[g12345678901234 node s]\n", 25, &proc), -EINVAL);
	assert_int_equal(fs_joblog_line_proc("[g1 rank-12345678", 17, &proc), -EINVAL);
}

static void test_index_moves_to_old_at_rotation(void **state)
{
	struct fs_joblog_index x = { 0 };
	const struct fs_joblog_proc_bytes *e;

	(void)state;
	/* added in any order, kept by process */
	for (uint32_t k = 40; k-- > 0;)
		assert_int_equal(fs_joblog_index_add(&x, FS_LOG_PROC_RANK(k * 3), k + 1, false), 0);
	assert_int_equal(fs_joblog_index_add(&x, FS_LOG_PROC_NODE, 5, false), 0);
	assert_int_equal(fs_joblog_index_add(&x, FS_LOG_PROC_RANK(3), 100, false), 0);
	assert_int_equal(x.count, 41);
	for (size_t i = 1; i < x.count; i++)
		assert_true(x.v[i - 1].proc < x.v[i].proc);
	e = fs_joblog_index_find(&x, FS_LOG_PROC_RANK(3));
	assert_non_null(e);
	assert_int_equal(e->cur_bytes, 102);
	assert_null(fs_joblog_index_find(&x, FS_LOG_PROC_RANK(4)));

	fs_joblog_index_rotate(&x);
	e = fs_joblog_index_find(&x, FS_LOG_PROC_RANK(3));
	assert_int_equal(e->cur_bytes, 0);
	assert_int_equal(e->old_bytes, 102);
	assert_int_equal(fs_joblog_index_add(&x, FS_LOG_PROC_NODE, 7, false), 0);
	/* a second rotation: what had no lines in the rotated file goes */
	fs_joblog_index_rotate(&x);
	assert_int_equal(x.count, 1);
	e = fs_joblog_index_find(&x, FS_LOG_PROC_NODE);
	assert_int_equal(e->old_bytes, 7);
	assert_int_equal(e->cur_bytes, 0);
	assert_null(fs_joblog_index_find(&x, FS_LOG_PROC_RANK(3)));
	fs_joblog_index_release(&x);
	assert_int_equal(x.count, 0);
}

/* ---- a log file, scanned and filtered ---- */

struct file {
	char path[64];
	int fd;
	char *all;		/* what was written */
	size_t len;
	char *want[3];		/* per rank 0..2: its lines */
	size_t want_len[3];
};

static void put(struct file *f, int rank, const char *text, size_t text_len)
{
	char head[64];
	int hn = rank >= 0 ? snprintf(head, sizeof(head), "[g1 rank-%d s0] ", rank) :
			     snprintf(head, sizeof(head), "garbage ");
	size_t n = (size_t)hn + text_len + 1;
	char *line = malloc(n);

	assert_non_null(line);
	memcpy(line, head, (size_t)hn);
	memcpy(line + hn, text, text_len);
	line[n - 1] = '\n';
	assert_int_equal(write(f->fd, line, n), (ssize_t)n);
	f->all = realloc(f->all, f->len + n);
	memcpy(f->all + f->len, line, n);
	f->len += n;
	if (rank >= 0) {
		f->want[rank] = realloc(f->want[rank], f->want_len[rank] + n);
		memcpy(f->want[rank] + f->want_len[rank], line, n);
		f->want_len[rank] += n;
	}
	free(line);
}

static void file_open(struct file *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/tmp/test_fs_joblog.XXXXXX");
	f->fd = mkstemp(f->path);
	assert_true(f->fd >= 0);
}

static void file_close(struct file *f)
{
	close(f->fd);
	unlink(f->path);
	free(f->all);
	for (int i = 0; i < 3; i++)
		free(f->want[i]);
}

/* A log of three ranks' lines, a line of no process and one longer than the scan
 * buffer (rank 1's). */
static void fill(struct file *f, unsigned lines)
{
	size_t big_len = FS_JOBLOG_SCAN_BYTES + 5000;
	char *big = malloc(big_len), text[64];

	assert_non_null(big);
	memset(big, 'x', big_len);
	for (unsigned i = 0; i < lines; i++) {
		int n = snprintf(text, sizeof(text), "line %u of rank %u", i, i % 3);

		put(f, (int)(i % 3), text, (size_t)n);
		if (i == lines / 3)
			put(f, -1, "no line of a process", 20);
		if (i == lines / 2)
			put(f, 1, big, big_len);
	}
	free(big);
}

static int count(void *arg, uint32_t proc, const char *line, size_t len)
{
	struct fs_joblog_index *x = arg;

	(void)line;
	return proc == FS_LOG_PROC_NONE ? 0 : fs_joblog_index_add(x, proc, len, false);
}

static void test_scan_counts_each_process_bytes(void **state)
{
	struct file f;
	struct fs_joblog_index x = { 0 };
	struct fs_joblog_scan_state st = { 0 };
	char *buf = malloc(FS_JOBLOG_SCAN_BYTES);
	uint64_t at = 0;

	(void)state;
	file_open(&f);
	fill(&f, 5000);
	while (at < f.len) {
		int64_t n = fs_joblog_scan(f.fd, at, f.len, buf, FS_JOBLOG_SCAN_BYTES, &st, count,
					   &x);

		assert_true(n > (int64_t)at);
		at = (uint64_t)n;
	}
	assert_int_equal(at, f.len);
	assert_int_equal(x.count, 3);
	for (int r = 0; r < 3; r++)
		assert_int_equal(fs_joblog_index_find(&x, FS_LOG_PROC_RANK(r))->cur_bytes,
				 f.want_len[r]);
	fs_joblog_index_release(&x);
	free(buf);
	file_close(&f);
}

/* Read process @rank's file of @f's first @avail bytes in @piece-byte reads from @from. */
static void read_all(struct fs_joblog_filter *fl, struct file *f, uint64_t avail, size_t piece,
		     uint64_t from, char *out, size_t *out_len)
{
	uint64_t off = from;
	int n;

	*out_len = 0;
	while ((n = fs_joblog_filter_read(fl, f->fd, avail, out + *out_len, piece, off)) > 0) {
		*out_len += (size_t)n;
		off += (uint64_t)n;
	}
	assert_int_equal(n, 0);
}

static void test_filter_reads_one_process_in_any_pieces(void **state)
{
	static const size_t pieces[] = { 1, 7, 4096, 131072, 1 << 20 };
	struct file f;
	char *out;
	size_t len;

	(void)state;
	file_open(&f);
	fill(&f, 3000);
	out = malloc(f.len);
	for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++)
		for (int r = 0; r < 3; r++) {
			struct fs_joblog_filter fl = { .proc = FS_LOG_PROC_RANK(r) };

			read_all(&fl, &f, f.len, pieces[k], 0, out, &len);
			assert_int_equal(len, f.want_len[r]);
			assert_memory_equal(out, f.want[r], len);
			/* going back reads from the start again; skipping ahead is exact */
			read_all(&fl, &f, f.len, 4096, 10, out, &len);
			assert_int_equal(len, f.want_len[r] - 10);
			assert_memory_equal(out, f.want[r] + 10, len);
		}
	free(out);
	file_close(&f);
}

static void test_filter_follows_a_growing_log(void **state)
{
	struct file f;
	struct fs_joblog_filter fl = { .proc = FS_LOG_PROC_RANK(2) };
	char *out;
	size_t len, got = 0;

	(void)state;
	file_open(&f);
	fill(&f, 10);
	out = malloc(1 << 20);
	/* as tail -f reads: at the end of what it had, each time the file grew */
	for (int round = 0; round < 5; round++) {
		read_all(&fl, &f, f.len, 100, got, out + got, &len);
		got += len;
		assert_int_equal(got, f.want_len[2]);
		assert_memory_equal(out, f.want[2], got);
		fill(&f, 7 + (unsigned)round);
	}
	read_all(&fl, &f, f.len, 100, got, out + got, &len);
	got += len;
	assert_int_equal(got, f.want_len[2]);
	/* a last line cut by a crash, at the file's end, is a line; the next one is not
	 * joined to it */
	assert_int_equal(write(f.fd, "[g1 rank-2 s0] cut", 18), 18);
	read_all(&fl, &f, f.len + 18, 100, got, out + got, &len);
	assert_int_equal(len, 18);
	assert_memory_equal(out + got, "[g1 rank-2 s0] cut", 18);
	got += len;
	f.len += 18; /* (not in want: checked above) */
	put(&f, 0, "after the cut", 13);
	put(&f, 2, "mine again", 10);
	read_all(&fl, &f, f.len, 100, got, out + got, &len);
	assert_int_equal(len, strlen("[g1 rank-2 s0] mine again\n"));
	assert_memory_equal(out + got, "[g1 rank-2 s0] mine again\n", len);
	free(out);
	file_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_names_parse_back),
		cmocka_unit_test(test_line_process_is_read_from_its_head),
		cmocka_unit_test(test_index_moves_to_old_at_rotation),
		cmocka_unit_test(test_scan_counts_each_process_bytes),
		cmocka_unit_test(test_filter_reads_one_process_in_any_pieces),
		cmocka_unit_test(test_filter_follows_a_growing_log),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
