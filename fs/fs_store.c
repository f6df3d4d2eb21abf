/* SPDX-License-Identifier: MIT */
/*
 * The durable state's backend, as the configuration names it (fs_store.h lists the
 * parts): SQLite in --state-dir by default, or an etcd cluster (`state: {backend:
 * etcd}`). The committer (fs_commit.c) writes through fs_store_write(); the restore
 * reads SQLite tables either way: the etcd backend's log is first replayed into an
 * in-memory SQLite database of the same schema.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_store.h"

static struct fs_store *store_new(size_t server_count)
{
	struct fs_store *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->server_docs = calloc(server_count ? server_count : 1, sizeof(char *));
	st->server_count = server_count;
	if (!st->server_docs) {
		free(st);
		return NULL;
	}
	return st;
}

void fs_store_close(struct fs_store *st)
{
	if (!st)
		return;
	fs_sqlite_close(st->sql);
	for (size_t i = 0; i < st->server_count; i++)
		free(st->server_docs[i]);
	free(st->server_docs);
	free(st->name);
	free(st->aside_hint);
	free(st);
}

int fs_store_open(const char *dir, size_t server_count, struct fs_store **ret, char *why)
{
	struct fs_store *st = store_new(server_count);
	char path[4096];
	int r;

	if (!st)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/ascendfs.db", dir);
	st->name = strdup(path);
	st->aside_where = "table unrestored";
	if (!st->name || asprintf(&st->aside_hint, "sqlite3 %s 'select kind, key, reason from "
				  "unrestored'", path) < 0) {
		st->aside_hint = NULL;
		fs_store_close(st);
		return -ENOMEM;
	}
	r = fs_sqlite_open(path, dir, &st->sql, why);
	if (r < 0) {
		fs_store_close(st);
		return r;
	}
	*ret = st;
	return 0;
}

int fs_store_write(struct fs_store *st, const struct fs_batch *b, char *why)
{
	return fs_sqlite_write(st->sql, b, why);
}

int fs_store_restore(struct fs_ctx *ctx, uint64_t now_usec, bool set_aside,
		     struct fs_restore_stats *stats, char *why)
{
	return fs_sqlite_restore(ctx, now_usec, set_aside, stats, why);
}
