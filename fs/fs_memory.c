/* SPDX-License-Identifier: MIT */
/*
 * Giving freed memory back after bursts (issue 16). Renders of a large cluster build
 * many small jansson objects on whichever FUSE thread serves the open, and submissions
 * allocate job records there too: glibc then keeps the freed holes in the threads'
 * arenas (it returns only the top of a heap), so RSS after a burst of reads stayed tens
 * of MiB above what is in use. malloc_trim(0) hands the free pages of every arena back
 * (MADV_DONTNEED); it costs a walk of the free lists, so it runs here, off the lock and
 * off the request path, once a burst has gone quiet for a second (or every
 * TRIM_BUSY_SEC while activity goes on).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "fs.h"

#define TRIM_BUSY_SEC 10

static pthread_t trim_thread;
static bool trim_running;

/* Renders and changes so far: what leaves garbage in the arenas (ctx->lock held). */
static uint64_t activity(const struct fs_ctx *ctx)
{
	return ctx->cache_misses + ctx->cluster->version;
}

/* Resident KiB now (/proc/self/statm), 0 if unknown. */
static unsigned long rss_kib(void)
{
	unsigned long size, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (unsigned long)(sysconf(_SC_PAGESIZE) / 1024);
}

static void trim(struct fs_ctx *ctx)
{
	/* mallinfo2() walks every arena under its lock: only when it is logged */
	struct mallinfo2 m = ctx->log_level >= 3 ? mallinfo2() : (struct mallinfo2){ 0 };
	unsigned long before = ctx->log_level >= 3 ? rss_kib() : 0;

	malloc_trim(0);
	if (ctx->log_level >= 3)
		fs_log(ctx, 3, "memory: heap %zu KiB in use, %zu KiB free in the arenas, %zu KiB "
			       "mapped apart; trimmed: RSS %lu -> %lu KiB",
		       m.uordblks / 1024, m.fordblks / 1024, m.hblkhd / 1024, before, rss_kib());
}

static void *trim_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	uint64_t trimmed_at, seen;
	unsigned busy_sec = 0;
	struct timespec ts;

	pthread_mutex_lock(&ctx->lock);
	trimmed_at = seen = activity(ctx);
	while (!ctx->stopping) {
		uint64_t now;
		bool quiet;

		fs_deadline_in(&ts, 1000);
		pthread_cond_timedwait(&ctx->stop_cv, &ctx->lock, &ts);
		if (ctx->stopping)
			break;
		now = activity(ctx);
		quiet = now == seen;
		seen = now;
		if (now == trimmed_at)
			continue;
		busy_sec++;
		if (!quiet && busy_sec < TRIM_BUSY_SEC)
			continue;
		trimmed_at = now;
		busy_sec = 0;
		pthread_mutex_unlock(&ctx->lock);
		trim(ctx);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int fs_memory_start(struct fs_ctx *ctx)
{
	int r = pthread_create(&trim_thread, NULL, trim_main, ctx);

	if (r)
		return -r;
	trim_running = true;
	return 0;
}

void fs_memory_stop(struct fs_ctx *ctx)
{
	if (!trim_running)
		return;
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_cond_broadcast(&ctx->stop_cv);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(trim_thread, NULL);
	trim_running = false;
}
