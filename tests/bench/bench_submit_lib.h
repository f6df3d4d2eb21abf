/* SPDX-License-Identifier: MIT */
/*
 * What the mounted benchmarks share (built into bench_submit, burst_place and
 * bench_health): one file written as a client does (open + write + close), a burst of
 * job specs submitted that way from several threads, and a monotonic clock.
 */
#ifndef BENCH_SUBMIT_LIB_H
#define BENCH_SUBMIT_LIB_H

#include <stddef.h>

/* bench_mono_sec() - CLOCK_MONOTONIC in seconds. */
double bench_mono_sec(void);

/*
 * bench_write_file() - open(@path, @flags, 0644), write the @len bytes of @data in one
 * write(), close. Returns 0 when all three succeeded (close() is where ascendfs answers
 * a submission), or the negative errno of the first that failed (-EIO for a short
 * write). @path and @data are borrowed.
 */
int bench_write_file(const char *path, int flags, const char *data, size_t len);

/*
 * bench_spec_fn - the spec of submission @i (0 .. count-1): NUL-terminated, written into
 * @buf (@size bytes) or a string of the caller's that lives as long as the burst;
 * returns it. Called from several threads at once.
 */
typedef const char *(*bench_spec_fn)(unsigned i, char *buf, size_t size, void *arg);

/*
 * bench_submit_burst() - submit @count job specs into the mount @mount_dir from
 * @threads threads (1-1024), as cp does: submission i is bench_write_file() of
 * jobs/<@prefix>-<i>.yaml (O_WRONLY | O_CREAT | O_TRUNC) with spec_of(i, ..., @arg). A
 * submission counts as ok when close() returned 0 (the daemon acknowledged it), failed
 * otherwise. Returns 0 with *@ret_ok and *@ret_failed set once every thread is done, or
 * -EAGAIN when a thread could not be created (-ENOMEM without memory), and then only
 * after the threads started are done (*@ret_* untouched).
 */
int bench_submit_burst(const char *mount_dir, const char *prefix, unsigned count,
		       unsigned threads, bench_spec_fn spec_of, void *arg, unsigned *ret_ok,
		       unsigned *ret_failed);

#endif
