/* SPDX-License-Identifier: MIT */
/*
 * Job records decoded on every core for a restore (fs_store_sqlite.c): sched_job_decode() of
 * each record needs no cluster, and is most of the time a restore of 100,000 records
 * takes; the loads then go on in order on the caller's thread.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "fs.h"

/* More threads than this gain little: the loads in order are the rest of the time. */
#define DECODE_THREADS_MAX 8

struct decode_work {
	struct fs_decode_slot *slots;
	size_t count;
	size_t next; /* the next slot to take (atomic) */
};

static void *decode_main(void *arg)
{
	struct decode_work *w = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->count) {
		struct fs_decode_slot *s = &w->slots[i];

		s->reason[0] = '\0';
		s->r = sched_job_decode(s->text, s->len, &s->decoded, s->reason);
	}
	return NULL;
}

unsigned fs_decode_threads(void)
{
	cpu_set_t set;
	long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
								: sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > DECODE_THREADS_MAX ? DECODE_THREADS_MAX : (unsigned)n;
}

void fs_decode_jobs(struct fs_decode_slot *slots, size_t count, unsigned threads)
{
	struct decode_work w = { .slots = slots, .count = count };
	pthread_t tid[DECODE_THREADS_MAX];
	unsigned started = 0;

	if (threads > DECODE_THREADS_MAX)
		threads = DECODE_THREADS_MAX;
	/* the caller's thread is one of them; one that cannot start leaves its share to
	 * the others */
	while (started + 1 < threads && (size_t)started + 1 < count &&
	       pthread_create(&tid[started], NULL, decode_main, &w) == 0)
		started++;
	decode_main(&w);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}
