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
 * move: rename is refused).
 *
 * A node is what the kernel holds of every name read (about 20 a job once its files were
 * read), so the table is kept small: nodes are 56-byte slots of a pool, linked by 32-bit
 * slot indices, with a name of up to 15 bytes inside the slot (every file of a job
 * directory but one) and a longer one on the heap. A number is its slot's index, and in
 * its high 32 bits how many times the slot was taken before: a number is found without a
 * hash, and one that died is never given again (a slot taken 2^32 times is retired;
 * st_ino passes 2^32 once a slot is taken again, which a 32-bit program built without
 * large-file support cannot stat: EOVERFLOW). The (parent, name) hash holds slot
 * indices. The pool grows by chunks with what the kernel holds, which the kernel bounds
 * (it forgets under memory pressure), and keeps its high-water mark: freed slots are
 * taken again first.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "fs.h"

#define NAME_INLINE 16		/* a name of up to 15 bytes is kept in its slot */
#define CHUNK_SHIFT 10		/* 1,024 slots a chunk (56 KiB) */
#define CHUNK_SLOTS (1u << CHUNK_SHIFT)
#define NONE 0u			/* no slot: slot 0 is never used */
#define MAX_SLOTS 0xfffffff0u	/* below FUSE_UNKNOWN_INO (0xffffffff) as a first number */

/* NODE_SEEN: given to a request that was not the notify helper's (fs_inode_mark_seen()) */
enum { NODE_DETACHED = 1, NODE_HEAP_NAME = 2, NODE_FREE = 4, NODE_SEEN = 8 };

struct fs_inode {
	uint64_t ino;		/* FUSE_ROOT_ID for the root; kept while free (its reuse count) */
	uint64_t nlookup;
	uint32_t next_name;	/* (parent, name) hash chain; while free, the free list */
	uint32_t parent;	/* NONE: the root */
	uint32_t child, sibling, prev_sibling; /* the parent's list; prev NONE: the first */
	uint32_t flags;
	union {
		char in[NAME_INLINE];
		char *heap;
	} name;			/* "" for the root */
};

_Static_assert(sizeof(struct fs_inode) == 56, "a slot is 56 bytes");

static struct fs_inode *slot(const struct fs_inodes *t, uint32_t i)
{
	return &t->chunks[i >> CHUNK_SHIFT][i & (CHUNK_SLOTS - 1)];
}

static uint32_t index_of(uint64_t ino)
{
	return (uint32_t)ino;
}

static const char *name_of(const struct fs_inode *n)
{
	return n->flags & NODE_HEAP_NAME ? n->name.heap : n->name.in;
}

static uint32_t name_hash(uint64_t parent, const char *name)
{
	uint32_t h = 2166136261u ^ (uint32_t)(parent * 0x9e3779b97f4a7c15ull >> 32);

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

/* The live node of number @ino, or NULL. */
static struct fs_inode *find_ino(const struct fs_inodes *t, uint64_t ino)
{
	uint32_t i = index_of(ino);
	struct fs_inode *n;

	if (i == NONE || i >= t->used)
		return NULL;
	n = slot(t, i);
	return n->ino == ino && !(n->flags & NODE_FREE) ? n : NULL;
}

static uint32_t find_name(const struct fs_inodes *t, uint32_t parent, const char *name,
			  uint32_t hash)
{
	uint32_t i = t->by_name[hash & (t->cap - 1)];

	while (i != NONE) {
		const struct fs_inode *n = slot(t, i);

		if (n->parent == parent && strcmp(name_of(n), name) == 0)
			break;
		i = n->next_name;
	}
	return i;
}

/* The hash of named node @n (not the root): made again when needed, not kept. */
static uint32_t node_hash(const struct fs_inodes *t, const struct fs_inode *n)
{
	return name_hash(slot(t, n->parent)->ino, name_of(n));
}

static void link_name(struct fs_inodes *t, uint32_t i)
{
	struct fs_inode *n = slot(t, i);
	size_t b = node_hash(t, n) & (t->cap - 1);

	n->next_name = t->by_name[b];
	t->by_name[b] = i;
}

static void unlink_name(struct fs_inodes *t, uint32_t i)
{
	uint32_t *pp = &t->by_name[node_hash(t, slot(t, i)) & (t->cap - 1)];

	while (*pp != NONE && *pp != i)
		pp = &slot(t, *pp)->next_name;
	if (*pp != NONE)
		*pp = slot(t, i)->next_name;
}

/* Twice the buckets; on failure the old ones stay (longer chains, still right). */
static void grow(struct fs_inodes *t)
{
	uint32_t *b = calloc(2 * t->cap, sizeof(*b));

	if (!b)
		return;
	free(t->by_name);
	t->by_name = b;
	t->cap *= 2;
	for (uint32_t i = 1; i < t->used; i++) {
		const struct fs_inode *n = slot(t, i);

		if (!(n->flags & (NODE_FREE | NODE_DETACHED)) && n->parent != NONE)
			link_name(t, i);
	}
}

/* A slot for a new node, its number set and the rest zero: its index, or NONE (out of
 * memory, or of slots). */
static uint32_t take_slot(struct fs_inodes *t)
{
	struct fs_inode *n;
	uint32_t i;
	uint64_t ino;

	if (t->free_head != NONE) {
		i = t->free_head;
		n = slot(t, i);
		t->free_head = n->next_name;
		ino = ((n->ino >> 32) + 1) << 32 | i; /* retired ones never reach the list */
	} else {
		if (t->used >= MAX_SLOTS)
			return NONE;
		i = t->used;
		if ((i >> CHUNK_SHIFT) >= t->chunk_count) { /* a chunk more */
			size_t c = i >> CHUNK_SHIFT;

			if (c >= t->chunk_cap) {
				size_t cap = t->chunk_cap ? 2 * t->chunk_cap : 16;
				struct fs_inode **grown = realloc(t->chunks, cap * sizeof(*grown));

				if (!grown)
					return NONE;
				t->chunks = grown;
				t->chunk_cap = cap;
			}
			t->chunks[c] = malloc(CHUNK_SLOTS * sizeof(struct fs_inode));
			if (!t->chunks[c])
				return NONE;
			t->chunk_count = c + 1;
		}
		t->used++;
		ino = i;
	}
	n = slot(t, i);
	memset(n, 0, sizeof(*n));
	n->ino = ino;
	return i;
}

/* Give slot @i back (its name freed; its number kept, to make the next one). */
static void put_slot(struct fs_inodes *t, uint32_t i)
{
	struct fs_inode *n = slot(t, i);

	if (n->flags & NODE_HEAP_NAME)
		free(n->name.heap);
	n->flags = NODE_FREE;
	if ((n->ino >> 32) == UINT32_MAX) /* taken 2^32 times: retired */
		return;
	n->next_name = t->free_head;
	t->free_head = i;
}

int fs_inodes_init(struct fs_inodes *t)
{
	pthread_rwlockattr_t ra;
	uint32_t root;

	memset(t, 0, sizeof(*t));
	t->cap = 1024;
	t->used = 1; /* slot 0 is NONE */
	t->by_name = malloc(t->cap * sizeof(*t->by_name));
	root = t->by_name ? take_slot(t) : NONE;
	if (root != FUSE_ROOT_ID) {
		for (size_t c = 0; c < t->chunk_count; c++)
			free(t->chunks[c]);
		free(t->chunks);
		free(t->by_name);
		memset(t, 0, sizeof(*t)); /* fs_inodes_release() then has nothing to do */
		return -ENOMEM;
	}
	for (size_t b = 0; b < t->cap; b++)
		t->by_name[b] = NONE;
	pthread_mutex_init(&t->mu, NULL);
	/* the one writer, the unmount, must not wait for readers that never all stop */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&t->se_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	slot(t, root)->nlookup = 1; /* the kernel never forgets the root */
	slot(t, root)->flags |= NODE_SEEN; /* everyone's path starts there */
	t->count = 1;
	return 0;
}

void fs_inodes_release(struct fs_inodes *t)
{
	if (!t->by_name)
		return;
	for (uint32_t i = 1; i < t->used; i++) {
		struct fs_inode *n = slot(t, i);

		if ((n->flags & (NODE_FREE | NODE_HEAP_NAME)) == NODE_HEAP_NAME)
			free(n->name.heap);
	}
	for (size_t c = 0; c < t->chunk_count; c++)
		free(t->chunks[c]);
	free(t->chunks);
	free(t->by_name);
	pthread_mutex_destroy(&t->mu);
	pthread_rwlock_destroy(&t->se_lock);
	memset(t, 0, sizeof(*t));
}

/* Is @n, or a directory above it, detached? */
static bool is_stale(const struct fs_inodes *t, const struct fs_inode *n)
{
	for (;;) {
		if (n->flags & NODE_DETACHED)
			return true;
		if (n->parent == NONE)
			return false;
		n = slot(t, n->parent);
	}
}

/* The length of @n's absolute path: "/" for the root, else "/" and a name a level. */
static size_t path_len(const struct fs_inodes *t, const struct fs_inode *n)
{
	size_t len = 0;

	for (; n->parent != NONE; n = slot(t, n->parent))
		len += 1 + strlen(name_of(n));
	return len ? len : 1;
}

/* @n's absolute path, path_len(@n) bytes and a NUL, into @buf: written from its end. */
static void path_write(const struct fs_inodes *t, const struct fs_inode *n, char *buf,
		       size_t len)
{
	buf[len] = '\0';
	if (n->parent == NONE) {
		buf[0] = '/';
		return;
	}
	for (; n->parent != NONE; n = slot(t, n->parent)) {
		const char *name = name_of(n);
		size_t k = strlen(name);

		len -= k;
		memcpy(buf + len, name, k);
		buf[--len] = '/';
	}
}

int fs_inode_lookup(struct fs_inodes *t, uint64_t parent_ino, const char *name,
		    uint64_t *ret_ino)
{
	struct fs_inode *parent, *n, *first;
	size_t nlen = strlen(name);
	uint32_t hash = name_hash(parent_ino, name), pi, i;
	int r = 0;

	pthread_mutex_lock(&t->mu);
	parent = find_ino(t, parent_ino);
	if (!parent || is_stale(t, parent)) {
		r = -ESTALE;
		goto out;
	}
	pi = index_of(parent_ino);
	/* an NFS re-export's lookups of a directory's own entries */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		n = name[1] && parent->parent != NONE ? slot(t, parent->parent) : parent;
		n->nlookup++;
		*ret_ino = n->ino;
		goto out;
	}
	i = find_name(t, pi, name, hash);
	if (i == NONE) {
		char *heap = NULL;

		/* the root's path is "/" alone: its children's are "/" and the name */
		if ((parent->parent != NONE ? path_len(t, parent) : 0) + 1 + nlen + 1 >
		    FS_PATH_BYTES) {
			r = -ENAMETOOLONG;
			goto out;
		}
		/* before the new node is in a slot: grow() links every node in one */
		if (t->count >= t->cap - t->cap / 4)
			grow(t);
		if (nlen >= NAME_INLINE && !(heap = strdup(name))) {
			r = -ENOMEM;
			goto out;
		}
		i = take_slot(t); /* may move no slot: chunks stay where they are */
		if (i == NONE) {
			free(heap);
			r = -ENOMEM;
			goto out;
		}
		n = slot(t, i);
		if (heap) {
			n->name.heap = heap;
			n->flags |= NODE_HEAP_NAME;
		} else {
			memcpy(n->name.in, name, nlen + 1);
		}
		n->parent = pi;
		n->sibling = parent->child;
		if (n->sibling != NONE) {
			first = slot(t, n->sibling);
			first->prev_sibling = i;
		}
		parent->child = i;
		link_name(t, i);
		t->count++;
	}
	n = slot(t, i);
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
	else if ((len = path_len(t, n)) >= size)
		r = -ENAMETOOLONG;
	else {
		path_write(t, n, buf, len);
		if (ret_stale)
			*ret_stale = is_stale(t, n);
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

void fs_inode_detach(struct fs_inodes *t, uint64_t parent_ino, const char *name)
{
	uint32_t i = NONE;

	pthread_mutex_lock(&t->mu);
	if (find_ino(t, parent_ino))
		i = find_name(t, index_of(parent_ino), name, name_hash(parent_ino, name));
	if (i != NONE) {
		unlink_name(t, i);
		slot(t, i)->flags |= NODE_DETACHED;
	}
	pthread_mutex_unlock(&t->mu);
}

/* Free node @i if the kernel holds it no more and no child needs it; then its parent
 * too. */
static void maybe_free(struct fs_inodes *t, uint32_t i)
{
	struct fs_inode *n;

	while (i != NONE && (n = slot(t, i))->parent != NONE && n->nlookup == 0 &&
	       n->child == NONE) {
		uint32_t parent = n->parent;

		if (!(n->flags & NODE_DETACHED))
			unlink_name(t, i);
		if (n->prev_sibling != NONE)
			slot(t, n->prev_sibling)->sibling = n->sibling;
		else
			slot(t, parent)->child = n->sibling;
		if (n->sibling != NONE)
			slot(t, n->sibling)->prev_sibling = n->prev_sibling;
		t->count--;
		put_slot(t, i);
		i = parent;
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
		maybe_free(t, index_of(ino));
	}
	pthread_mutex_unlock(&t->mu);
}

/* The slot of absolute @path found by its names from the root, or NONE. */
static uint32_t find_path(const struct fs_inodes *t, const char *path)
{
	uint32_t i = FUSE_ROOT_ID;
	char name[FS_PATH_BYTES];

	while (i != NONE && *path) {
		size_t len;

		while (*path == '/')
			path++;
		len = strcspn(path, "/");
		if (!len)
			break;
		if (len >= sizeof(name))
			return NONE;
		memcpy(name, path, len);
		name[len] = '\0';
		i = find_name(t, i, name, name_hash(slot(t, i)->ino, name));
		path += len;
	}
	return i;
}

void fs_inode_mark_seen(struct fs_inodes *t, uint64_t ino)
{
	struct fs_inode *n;

	pthread_mutex_lock(&t->mu);
	n = find_ino(t, ino);
	if (n)
		n->flags |= NODE_SEEN;
	pthread_mutex_unlock(&t->mu);
}

bool fs_inode_watchable(struct fs_inodes *t, const char *path)
{
	char parent[FS_PATH_BYTES];
	const char *slash = strrchr(path, '/');
	bool seen = false;
	uint32_t i;

	if (!slash || (size_t)(slash - path) >= sizeof(parent))
		return true; /* not a path of the table's: announced, as before */
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	pthread_mutex_lock(&t->mu);
	i = find_path(t, path);
	seen = i != NONE && (slot(t, i)->flags & NODE_SEEN);
	if (!seen) {
		i = parent[0] ? find_path(t, parent) : FUSE_ROOT_ID;
		seen = i != NONE && (slot(t, i)->flags & NODE_SEEN);
	}
	pthread_mutex_unlock(&t->mu);
	return seen;
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
	uint32_t root, i;
	size_t count = 0;

	pthread_rwlock_rdlock(&t->se_lock);
	/* nothing to tell before the mount or after it */
	if (!t->se)
		goto out;
	pthread_mutex_lock(&t->mu);
	root = find_path(t, path);
	/* depth first, the node and everything below it (its children lists) */
	for (i = root; i != NONE;) {
		const struct fs_inode *n = slot(t, i);

		/* a batch that is full is told with the table locked (attributes only: the
		 * kernel takes no lock a request could be waiting on) */
		if (count == sizeof(inos) / sizeof(inos[0])) {
			inval_all(t, inos, count);
			count = 0;
		}
		inos[count++] = n->ino;
		if (!below)
			break;
		if (n->child != NONE) {
			i = n->child;
			continue;
		}
		while (i != root && slot(t, i)->sibling == NONE)
			i = slot(t, i)->parent;
		i = i == root ? NONE : slot(t, i)->sibling;
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
	/* versions are a cluster's own: once another is put in place (fs_standby.c, which
	 * then tells the kernel every attribute is stale), @want means nothing */
	uint64_t swaps = ctx->view_swaps;

	while (ctx->swept_version < want && ctx->view_swaps == swaps) {
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
			pthread_cond_wait(&ctx->sweep_cv, &ctx->lock);
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
		/* not jobs/ itself: its times follow the events within a second, as every
		 * directory's (fs_lowlevel.c), and told at each change every path through it
		 * cost a GETATTR, 3.6 a submission in a burst */
		if (names != first)
			free(names);
		pthread_mutex_lock(&ctx->lock);
		ctx->sweeping = false;
		if (ctx->view_swaps != swaps) { /* swept_version is the new cluster's */
			pthread_cond_broadcast(&ctx->sweep_cv);
			break;
		}
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
		pthread_cond_broadcast(&ctx->sweep_cv);
	}
}

int fs_inodes_check(struct fs_inodes *t)
{
	size_t linked = 0, chained = 0, live = 0;
	int r = 0;

	pthread_mutex_lock(&t->mu);
	for (uint32_t i = 1; i < t->used && r == 0; i++) {
		const struct fs_inode *n = slot(t, i);
		uint32_t k, steps = 0, found = 0;

		if (n->flags & NODE_FREE)
			continue;
		live++;
		if (index_of(n->ino) != i)
			r = -EUCLEAN;
		/* in its parent's list, where its neighbours say */
		if (n->parent != NONE &&
		    (n->prev_sibling != NONE ? slot(t, n->prev_sibling)->sibling
					     : slot(t, n->parent)->child) != i)
			r = -EUCLEAN;
		if (n->sibling != NONE && slot(t, n->sibling)->prev_sibling != i)
			r = -EUCLEAN;
		if (n->parent == NONE || (n->flags & NODE_DETACHED))
			continue;
		linked++;
		/* found by its name, and by it only once (a chain longer than the nodes held
		 * has a cycle) */
		for (k = t->by_name[node_hash(t, n) & (t->cap - 1)]; k != NONE && steps <= t->count;
		     k = slot(t, k)->next_name, steps++)
			found += k == i;
		if (found != 1 || steps > t->count)
			r = -EUCLEAN;
	}
	for (size_t b = 0; b < t->cap && r == 0; b++)
		for (uint32_t k = t->by_name[b]; k != NONE && chained <= t->count;
		     k = slot(t, k)->next_name)
			chained++;
	if (r == 0 && (chained != linked || live != t->count))
		r = -EUCLEAN;
	/* the free list: free slots only, each once (a slot on it twice makes a cycle) */
	for (uint32_t k = t->free_head, steps = 0; r == 0 && k != NONE; k = slot(t, k)->next_name)
		if (!(slot(t, k)->flags & NODE_FREE) || ++steps > t->used)
			r = -EUCLEAN;
	pthread_mutex_unlock(&t->mu);
	return r;
}

size_t fs_inode_count(struct fs_inodes *t)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->count;
	pthread_mutex_unlock(&t->mu);
	return n;
}
