/* SPDX-License-Identifier: MIT */
/*
 * Staged uploads: a spec or quota that a close() accepted is made durable before that
 * close returns, but is submitted only when the kernel sends the release of its last
 * descriptor, after close() has returned. Until then it is "staged": kept here (a hash
 * by kind and key, under ctx->lock), written by the committer's next batch
 * (ctx->stage_ops: the changes since the last one), and applied at restart by the
 * restore if the daemon died before the release (fs_staged_replay()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_store.h"

void fs_staged_free(struct fs_staged *s)
{
	if (!s)
		return;
	free(s->groups);
	free(s->body);
	free(s);
}

static size_t stage_hash(const char *key)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *key; key++) {
		h ^= (unsigned char)*key;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

/* The bucket link that holds (@kind, @key), or the empty end of its bucket. */
static struct fs_staged **stage_slot(struct fs_ctx *ctx, const char *kind, const char *key)
{
	struct fs_staged **pp = &ctx->staged[stage_hash(key) & (ctx->staged_cap - 1)];

	for (; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->key, key) == 0 && strcmp((*pp)->kind, kind) == 0)
			break;
	return pp;
}

/* Room for one more at a load of at most 1 (doubling: amortized constant). */
static int stage_reserve(struct fs_ctx *ctx)
{
	size_t cap = ctx->staged_cap ? ctx->staged_cap * 2 : 64;
	struct fs_staged **n;

	if (ctx->staged_count < ctx->staged_cap)
		return 0;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->staged_cap; i++)
		while (ctx->staged[i]) {
			struct fs_staged *s = ctx->staged[i];
			size_t b = stage_hash(s->key) & (cap - 1);

			ctx->staged[i] = s->next;
			s->next = n[b];
			n[b] = s;
		}
	free(ctx->staged);
	ctx->staged = n;
	ctx->staged_cap = cap;
	return 0;
}

static struct fs_staged *staged_new(const char *kind, const char *key, const char *ext,
				    uid_t uid, gid_t gid, const gid_t *groups,
				    size_t group_count, const char *body, size_t len)
{
	struct fs_staged *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	snprintf(s->kind, sizeof(s->kind), "%s", kind);
	snprintf(s->key, sizeof(s->key), "%s", key);
	snprintf(s->ext, sizeof(s->ext), "%s", ext ? ext : "");
	s->uid = uid;
	s->gid = gid;
	s->body = malloc(len + 1);
	s->groups = group_count ? malloc(group_count * sizeof(gid_t)) : NULL;
	if (!s->body || (group_count && !s->groups)) {
		fs_staged_free(s);
		return NULL;
	}
	memcpy(s->body, body, len);
	s->body[len] = '\0';
	s->len = len;
	if (group_count)
		memcpy(s->groups, groups, group_count * sizeof(gid_t));
	s->group_count = group_count;
	return s;
}

static void stage_op_append(struct fs_ctx *ctx, struct fs_staged *op)
{
	if (!ctx->stage_ops_tail)
		ctx->stage_ops_tail = &ctx->stage_ops;
	*ctx->stage_ops_tail = op;
	ctx->stage_ops_tail = &op->next;
}

void fs_stage_ops_free(struct fs_ctx *ctx)
{
	while (ctx->stage_ops) {
		struct fs_staged *s = ctx->stage_ops;

		ctx->stage_ops = s->next;
		fs_staged_free(s);
	}
	ctx->stage_ops_tail = &ctx->stage_ops;
}

int fs_stage_put(struct fs_ctx *ctx, const char *kind, const char *key, const char *ext,
		 uid_t uid, gid_t gid, const gid_t *groups, size_t group_count, const char *body,
		 size_t len)
{
	struct fs_staged *s, *op = NULL, **pp;

	if (!ctx->store)
		return 0;
	if (stage_reserve(ctx) < 0)
		return -ENOMEM;
	s = staged_new(kind, key, ext, uid, gid, groups, group_count, body, len);
	/* the batch's own copy: the committer writes it without ctx->lock */
	if (s && !ctx->staged_changed)
		op = staged_new(kind, key, ext, uid, gid, groups, group_count, body, len);
	if (!s || (!ctx->staged_changed && !op)) {
		fs_staged_free(s);
		return -ENOMEM;
	}
	pp = stage_slot(ctx, kind, key);
	if (*pp) {
		s->next = (*pp)->next;
		fs_staged_free(*pp);
	} else {
		ctx->staged_count++;
	}
	*pp = s;
	if (op)
		stage_op_append(ctx, op);
	ctx->cluster->version++; /* a change to make durable (and a ticket to wait for) */
	return 0;
}

void fs_stage_drop(struct fs_ctx *ctx, const char *kind, const char *key)
{
	struct fs_staged **pp, *s, *op;

	if (!ctx->staged_cap)
		return;
	pp = stage_slot(ctx, kind, key);
	s = *pp;
	if (!s)
		return;
	*pp = s->next;
	ctx->staged_count--;
	fs_staged_free(s);
	if (!ctx->staged_changed) {
		op = calloc(1, sizeof(*op));
		if (op) {
			snprintf(op->kind, sizeof(op->kind), "%s", kind);
			snprintf(op->key, sizeof(op->key), "%s", key);
			op->drop = true;
			stage_op_append(ctx, op);
		} else {
			ctx->staged_changed = true; /* the table is written whole instead */
		}
	}
	ctx->cluster->version++;
}

void fs_stage_free_all(struct fs_ctx *ctx)
{
	for (size_t i = 0; i < ctx->staged_cap; i++)
		while (ctx->staged[i]) {
			struct fs_staged *s = ctx->staged[i];

			ctx->staged[i] = s->next;
			fs_staged_free(s);
		}
	free(ctx->staged);
	ctx->staged = NULL;
	ctx->staged_cap = ctx->staged_count = 0;
	fs_stage_ops_free(ctx);
}

struct fs_staged *fs_staged_copy(const struct fs_staged *s)
{
	struct fs_staged *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	*n = *s;
	n->next = NULL;
	n->body = malloc(s->len + 1);
	n->groups = s->group_count ? malloc(s->group_count * sizeof(gid_t)) : NULL;
	if (!n->body || (s->group_count && !n->groups)) {
		free(n->body);
		free(n->groups);
		free(n);
		return NULL;
	}
	memcpy(n->body, s->body, s->len + 1);
	if (s->group_count)
		memcpy(n->groups, s->groups, s->group_count * sizeof(gid_t));
	return n;
}
