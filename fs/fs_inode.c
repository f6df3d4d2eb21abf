/* SPDX-License-Identifier: MIT */
/*
 * The inode numbers the kernel holds for names of the mount: one per name it looked up
 * in a directory and has not forgotten, with the count of lookups it holds (the FUSE
 * protocol: each LOOKUP, CREATE or MKDIR reply adds one, each FORGET takes some away;
 * at none, and with no child left, the number is dead and never used again). A node is
 * its name in its parent's node, as the kernel's dentries are: after an rmdir the name
 * is detached, a new directory of that name is a new node, and what the kernel still
 * holds of the old one (an open file in it) keeps its own numbers. A node keeps only its
 * own name: its absolute path, for the path handlers, is its parents' names (names never
 * move: rename is refused). Hashes find a node by number and by (parent, name); both grow
 * with what the kernel holds, which the kernel bounds (it forgets under memory pressure).
 * A node is what the kernel holds of every name read (about 20 a job once its files were
 * read), so it is kept small: 80 or 96 bytes of heap for the names of a job's files,
 * where a copy of the path made it 128 to 144.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "fs.h"

struct fs_inode {
	struct fs_inode *next_ino, *next_name;	/* hash chains */
	struct fs_inode *parent;		/* NULL: the root */
	struct fs_inode *child, *sibling, **prev_sibling; /* the parent's list of nodes */
	uint64_t ino, nlookup;
	bool detached;				/* not found by name any more (rmdir) */
	char name[];				/* "" for the root */
};

static uint32_t name_hash(uint64_t parent, const char *name)
{
	uint32_t h = 2166136261u ^ (uint32_t)(parent * 0x9e3779b97f4a7c15ull >> 32);

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static size_t ino_slot(const struct fs_inodes *t, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & (t->cap - 1);
}

static struct fs_inode *find_ino(const struct fs_inodes *t, uint64_t ino)
{
	struct fs_inode *n = t->by_ino[ino_slot(t, ino)];

	while (n && n->ino != ino)
		n = n->next_ino;
	return n;
}

static struct fs_inode *find_name(const struct fs_inodes *t, const struct fs_inode *parent,
				  const char *name, uint32_t hash)
{
	struct fs_inode *n = t->by_name[hash & (t->cap - 1)];

	while (n && (n->parent != parent || strcmp(n->name, name) != 0))
		n = n->next_name;
	return n;
}

/* The bytes of a node named by @nlen bytes: its name starts inside the struct's tail
 * padding (never less than the struct: the compiler's bounds checks count on it). */
static size_t node_size(size_t nlen)
{
	size_t n = offsetof(struct fs_inode, name) + nlen + 1;

	return n < sizeof(struct fs_inode) ? sizeof(struct fs_inode) : n;
}

/* The hash of named node @n (not the root): made again when needed, not kept. */
static uint32_t node_hash(const struct fs_inode *n)
{
	return name_hash(n->parent->ino, n->name);
}

static void link_ino(struct fs_inodes *t, struct fs_inode *n)
{
	size_t i = ino_slot(t, n->ino);

	n->next_ino = t->by_ino[i];
	t->by_ino[i] = n;
}

static void link_name(struct fs_inodes *t, struct fs_inode *n)
{
	size_t i = node_hash(n) & (t->cap - 1);

	n->next_name = t->by_name[i];
	t->by_name[i] = n;
}

static void unlink_name(struct fs_inodes *t, struct fs_inode *n)
{
	struct fs_inode **pp = &t->by_name[node_hash(n) & (t->cap - 1)];

	while (*pp && *pp != n)
		pp = &(*pp)->next_name;
	if (*pp)
		*pp = n->next_name;
}

/* Twice the buckets; on failure the old ones stay (longer chains, still right). */
static void grow(struct fs_inodes *t)
{
	struct fs_inode **old = t->by_ino, **oldn = t->by_name, *n, *next;
	size_t old_cap = t->cap;

	t->by_ino = calloc(2 * old_cap, sizeof(*t->by_ino));
	t->by_name = calloc(2 * old_cap, sizeof(*t->by_name));
	if (!t->by_ino || !t->by_name) {
		free(t->by_ino);
		free(t->by_name);
		t->by_ino = old;
		t->by_name = oldn;
		return;
	}
	t->cap = 2 * old_cap;
	for (size_t i = 0; i < old_cap; i++)
		for (n = old[i]; n; n = next) {
			next = n->next_ino;
			link_ino(t, n);
			if (!n->detached && n->parent)
				link_name(t, n);
		}
	free(old);
	free(oldn);
}

int fs_inodes_init(struct fs_inodes *t)
{
	pthread_rwlockattr_t ra;
	struct fs_inode *root;

	memset(t, 0, sizeof(*t));
	t->cap = 1024;
	t->by_ino = calloc(t->cap, sizeof(*t->by_ino));
	t->by_name = calloc(t->cap, sizeof(*t->by_name));
	root = calloc(1, node_size(0));
	if (!t->by_ino || !t->by_name || !root) {
		free(t->by_ino);
		free(t->by_name);
		free(root);
		memset(t, 0, sizeof(*t)); /* fs_inodes_release() then has nothing to do */
		return -ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	/* the one writer, the unmount, must not wait for readers that never all stop */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&t->se_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	root->ino = FUSE_ROOT_ID;
	root->nlookup = 1; /* the kernel never forgets the root */
	link_ino(t, root);
	t->count = 1;
	t->next_ino = FUSE_ROOT_ID + 1;
	return 0;
}

void fs_inodes_release(struct fs_inodes *t)
{
	struct fs_inode *n, *next;

	if (!t->by_ino)
		return;
	for (size_t i = 0; i < t->cap; i++)
		for (n = t->by_ino[i]; n; n = next) {
			next = n->next_ino;
			free(n);
		}
	free(t->by_ino);
	free(t->by_name);
	pthread_mutex_destroy(&t->mu);
	pthread_rwlock_destroy(&t->se_lock);
	memset(t, 0, sizeof(*t));
}

/* Is @n, or a directory above it, detached? */
static bool is_stale(const struct fs_inode *n)
{
	for (; n; n = n->parent)
		if (n->detached)
			return true;
	return false;
}

/* The length of @n's absolute path: "/" for the root, else "/" and a name a level. */
static size_t path_len(const struct fs_inode *n)
{
	size_t len = 0;

	for (; n->parent; n = n->parent)
		len += 1 + strlen(n->name);
	return len ? len : 1;
}

/* @n's absolute path, path_len(@n) bytes and a NUL, into @buf: written from its end. */
static void path_write(const struct fs_inode *n, char *buf, size_t len)
{
	buf[len] = '\0';
	if (!n->parent) {
		buf[0] = '/';
		return;
	}
	for (; n->parent; n = n->parent) {
		size_t k = strlen(n->name);

		len -= k;
		memcpy(buf + len, n->name, k);
		buf[--len] = '/';
	}
}

int fs_inode_lookup(struct fs_inodes *t, uint64_t parent_ino, const char *name,
		    uint64_t *ret_ino)
{
	struct fs_inode *parent, *n;
	size_t nlen = strlen(name);
	uint32_t hash = name_hash(parent_ino, name);
	int r = 0;

	pthread_mutex_lock(&t->mu);
	parent = find_ino(t, parent_ino);
	if (!parent || is_stale(parent)) {
		r = -ESTALE;
		goto out;
	}
	/* an NFS re-export's lookups of a directory's own entries */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		n = name[1] && parent->parent ? parent->parent : parent;
		n->nlookup++;
		*ret_ino = n->ino;
		goto out;
	}
	n = find_name(t, parent, name, hash);
	if (!n) {
		/* the root's path is "/" alone: its children's are "/" and the name */
		if ((parent->parent ? path_len(parent) : 0) + 1 + nlen + 1 > FS_PATH_BYTES) {
			r = -ENAMETOOLONG;
			goto out;
		}
		n = calloc(1, node_size(nlen));
		if (!n) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(n->name, name, nlen + 1);
		n->ino = t->next_ino++;
		n->parent = parent;
		n->sibling = parent->child;
		if (n->sibling)
			n->sibling->prev_sibling = &n->sibling;
		n->prev_sibling = &parent->child;
		parent->child = n;
		if (t->count >= t->cap - t->cap / 4)
			grow(t);
		link_ino(t, n);
		link_name(t, n);
		t->count++;
	}
	n->nlookup++;
	*ret_ino = n->ino;
out:
	pthread_mutex_unlock(&t->mu);
	return r;
}

int fs_inode_path(struct fs_inodes *t, uint64_t ino, char *buf, size_t size, bool *ret_stale)
{
	const struct fs_inode *n;
	size_t len;
	int r = 0;

	pthread_mutex_lock(&t->mu);
	n = find_ino(t, ino);
	if (!n)
		r = -ESTALE;
	else if ((len = path_len(n)) >= size)
		r = -ENAMETOOLONG;
	else {
		path_write(n, buf, len);
		if (ret_stale)
			*ret_stale = is_stale(n);
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

void fs_inode_detach(struct fs_inodes *t, uint64_t parent_ino, const char *name)
{
	struct fs_inode *parent, *n;

	pthread_mutex_lock(&t->mu);
	parent = find_ino(t, parent_ino);
	n = parent ? find_name(t, parent, name, name_hash(parent_ino, name)) : NULL;
	if (n) {
		unlink_name(t, n);
		n->detached = true;
	}
	pthread_mutex_unlock(&t->mu);
}

/* Free @n if the kernel holds it no more and no child needs it; then its parent too. */
static void maybe_free(struct fs_inodes *t, struct fs_inode *n)
{
	while (n && n->parent && n->nlookup == 0 && !n->child) {
		struct fs_inode *parent = n->parent, **pp = &t->by_ino[ino_slot(t, n->ino)];

		while (*pp != n)
			pp = &(*pp)->next_ino;
		*pp = n->next_ino;
		if (!n->detached)
			unlink_name(t, n);
		*n->prev_sibling = n->sibling;
		if (n->sibling)
			n->sibling->prev_sibling = n->prev_sibling;
		t->count--;
		free(n);
		n = parent;
	}
}

void fs_inode_forget(struct fs_inodes *t, uint64_t ino, uint64_t n)
{
	struct fs_inode *node;

	if (ino == FUSE_ROOT_ID)
		return;
	pthread_mutex_lock(&t->mu);
	node = find_ino(t, ino);
	if (node) {
		node->nlookup = n < node->nlookup ? node->nlookup - n : 0;
		maybe_free(t, node);
	}
	pthread_mutex_unlock(&t->mu);
}

/* The node of absolute @path found by its names from the root, or NULL. */
static struct fs_inode *find_path(const struct fs_inodes *t, const char *path)
{
	struct fs_inode *n = find_ino(t, FUSE_ROOT_ID);
	char name[FS_PATH_BYTES];

	while (n && *path) {
		size_t len;

		while (*path == '/')
			path++;
		len = strcspn(path, "/");
		if (!len)
			break;
		if (len >= sizeof(name))
			return NULL;
		memcpy(name, path, len);
		name[len] = '\0';
		n = find_name(t, n, name, name_hash(n->ino, name));
		path += len;
	}
	return n;
}

void fs_inodes_set_session(struct fs_inodes *t, struct fuse_session *se)
{
	pthread_rwlock_wrlock(&t->se_lock);
	t->se = se;
	pthread_rwlock_unlock(&t->se_lock);
}

void fs_inode_inval_attrs(struct fs_inodes *t, uint64_t ino)
{
	pthread_rwlock_rdlock(&t->se_lock);
	if (t->se)
		fuse_lowlevel_notify_inval_inode(t->se, ino, -1, 0);
	pthread_rwlock_unlock(&t->se_lock);
}

/* Tell the kernel the attributes of @inos (@count) are stale. Caller holds se_lock. */
static void inval_all(struct fs_inodes *t, const uint64_t *inos, size_t count)
{
	for (size_t i = 0; t->se && i < count; i++)
		fuse_lowlevel_notify_inval_inode(t->se, inos[i], -1, 0);
}

void fs_inode_inval_attrs_path(struct fs_inodes *t, const char *path, bool below)
{
	uint64_t inos[64]; /* more than a job directory's files: no allocation to fail */
	struct fs_inode *root, *n;
	size_t count = 0;

	pthread_rwlock_rdlock(&t->se_lock);
	/* nothing to tell before the mount or after it */
	if (!t->se)
		goto out;
	pthread_mutex_lock(&t->mu);
	root = find_path(t, path);
	/* depth first, the node and everything below it (its children lists) */
	for (n = root; n;) {
		/* a batch that is full is told with the table locked (attributes only: the
		 * kernel takes no lock a request could be waiting on) */
		if (count == sizeof(inos) / sizeof(inos[0])) {
			inval_all(t, inos, count);
			count = 0;
		}
		inos[count++] = n->ino;
		if (!below)
			break;
		if (n->child) {
			n = n->child;
			continue;
		}
		while (n != root && !n->sibling)
			n = n->parent;
		n = n == root ? NULL : n->sibling;
	}
	pthread_mutex_unlock(&t->mu);
	inval_all(t, inos, count);
out:
	pthread_rwlock_unlock(&t->se_lock);
}

/* How many jobs are on dirty list @list now. */
static size_t listed(const struct sched_cluster *c, enum sched_dirty_list list)
{
	size_t n = 0;

	for (const struct sched_job *j = c->dirty_head[list]; j; j = j->dirty[list].next)
		n++;
	return n;
}

void fs_inode_sweep(struct fs_ctx *ctx, uint64_t want)
{
	struct sched_cluster *c;
	/* after a failed allocation: how many of the jobs listed at owed_version (the
	 * failing round's taken ones counted in) are still to be taken; a list keeps its
	 * order, so they are at its head */
	size_t owed = 0;
	uint64_t owed_version = 0;

	while (ctx->swept_version < want) {
		/* a round always takes some (no allocation needed for those), so it ends */
		char first[16][CONF_NAME_MAX + 1];
		char (*names)[CONF_NAME_MAX + 1] = first;
		size_t count = 0, cap = 16;
		uint64_t version;
		bool more = false;

		/* read again after each unlock: a standby replaces the cluster (fs_standby.c) */
		c = ctx->cluster;
		version = c->version;
		if (ctx->sweeping) {
			pthread_cond_wait(&ctx->durable_cv, &ctx->lock);
			continue;
		}
		while (c->dirty_head[SCHED_DIRTY_ATTRS]) {
			if (count == cap) {
				char (*grown)[CONF_NAME_MAX + 1] =
					names == first ? malloc(2 * cap * sizeof(*names))
						       : realloc(names, 2 * cap * sizeof(*names));

				if (!grown) {
					/* the rest stay listed, for the next round */
					more = true;
					if (!owed_version) { /* this round's taken count too */
						owed = listed(c, SCHED_DIRTY_ATTRS) + count;
						owed_version = version;
					}
					break;
				}
				if (names == first)
					memcpy(grown, first, sizeof(first));
				names = grown;
				cap *= 2;
			}
			snprintf(names[count++], sizeof(names[0]), "%s",
				 sched_dirty_pop(c, SCHED_DIRTY_ATTRS)->name);
		}
		ctx->sweeping = true;
		pthread_mutex_unlock(&ctx->lock);
		for (size_t i = 0; i < count; i++) {
			char path[sizeof(names[0]) + 8];

			snprintf(path, sizeof(path), "/jobs/%.*s", CONF_NAME_MAX, names[i]);
			fs_inode_inval_attrs_path(&ctx->inodes, path, true);
		}
		if (count) /* the times of jobs/ follow its jobs */
			fs_inode_inval_attrs_path(&ctx->inodes, "/jobs", false);
		if (names != first)
			free(names);
		pthread_mutex_lock(&ctx->lock);
		ctx->sweeping = false;
		/* with some left listed, this round's version is not swept; the version at
		 * the failure is, once the jobs listed then were taken (others may have been
		 * listed since, and more allocations fail: the sweep still ends) */
		if (!more && ctx->swept_version < version)
			ctx->swept_version = version;
		if (more && owed_version) {
			owed = owed > count ? owed - count : 0;
			if (!owed && ctx->swept_version < owed_version)
				ctx->swept_version = owed_version;
		}
		pthread_cond_broadcast(&ctx->durable_cv);
	}
}

size_t fs_inode_count(struct fs_inodes *t)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->count;
	pthread_mutex_unlock(&t->mu);
	return n;
}
