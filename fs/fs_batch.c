/* SPDX-License-Identifier: MIT */
/*
 * A batch of the committer (fs_store.h): its memory, and its encoding as bytes for a
 * backend that keeps batches as a log (fs_store_etcd.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_store.h"

void fs_batch_free(struct fs_batch *b)
{
	for (size_t i = 0; i < b->job_count; i++)
		free(b->jobs[i].doc);
	for (size_t i = 0; i < b->run_count; i++)
		free(b->runs[i].doc);
	for (size_t i = 0; i < b->server_count; i++)
		free(b->servers[i].doc);
	for (size_t i = 0; i < b->event_count; i++)
		sched_event_release(&b->events[i]);
	for (size_t i = 0; i < b->acct_count; i++)
		free(b->accts[i].line);
	free(b->accts);
	while (b->staged_list) {
		struct fs_staged *s = b->staged_list;

		b->staged_list = s->next;
		fs_staged_free(s);
	}
	free(b->jobs);
	free(b->runs);
	free(b->removed);
	free(b->servers);
	free(b->events);
	free(b->meta);
	memset(b, 0, sizeof(*b));
}
