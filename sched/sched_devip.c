/* SPDX-License-Identifier: MIT */
/*
 * Who has which address: every server's host_ip and every NPU's device IP (the one HCCL
 * uses: reported, else the inventory's), hashed, so that a health report's ip lines are
 * checked against the whole cluster at a cost that does not grow with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

#define SLOTS (CONF_SERVER_NPUS_MAX + 1) /* a server's NPUs, then its host_ip */
#define END UINT32_MAX

struct sched_devip_index {
	uint32_t *head;	  /* bucket_count chain heads */
	uint32_t *next;	  /* per node (server * SLOTS + slot): the next in its chain */
	uint32_t *bucket; /* per node: its chain, END when not in one */
	uint32_t bucket_count; /* a power of two */
};

/* The address node @id stands for now, or NULL. */
static const char *node_ip(const struct sched_cluster *c, uint32_t id)
{
	const struct sched_server *s = &c->servers[id / SLOTS];
	unsigned slot = id % SLOTS;

	if (slot == CONF_SERVER_NPUS_MAX)
		return s->conf->host_ip;
	if (slot >= s->conf->npu_count)
		return NULL;
	return sched_npu_device_ip(s, slot);
}

const char *sched_npu_device_ip(const struct sched_server *s, unsigned npu)
{
	if (s->npus[npu].reported_ip[0])
		return s->npus[npu].reported_ip;
	return s->conf->device_ips[npu];
}

static uint32_t hash_ip(const char *ip)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)ip; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static void node_unlink(struct sched_devip_index *x, uint32_t id)
{
	uint32_t *at;

	if (x->bucket[id] == END)
		return;
	for (at = &x->head[x->bucket[id]]; *at != END; at = &x->next[*at])
		if (*at == id) {
			*at = x->next[id];
			break;
		}
	x->bucket[id] = END;
}

static void node_link(const struct sched_cluster *c, struct sched_devip_index *x, uint32_t id)
{
	const char *ip = node_ip(c, id);
	uint32_t b;

	if (!ip || !ip[0])
		return;
	b = hash_ip(ip) & (x->bucket_count - 1);
	x->next[id] = x->head[b];
	x->head[b] = id;
	x->bucket[id] = b;
}

int sched_devip_index_build(struct sched_cluster *c)
{
	size_t nodes = c->server_count * SLOTS;
	struct sched_devip_index *x;
	uint32_t buckets = 16;

	sched_devip_index_free(c);
	if (nodes >= END / 2)
		return -ENOMEM;
	while (buckets < nodes * 2)
		buckets *= 2;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->head = malloc(buckets * sizeof(*x->head));
	x->next = malloc((nodes ? nodes : 1) * sizeof(*x->next));
	x->bucket = malloc((nodes ? nodes : 1) * sizeof(*x->bucket));
	if (!x->head || !x->next || !x->bucket) {
		free(x->head);
		free(x->next);
		free(x->bucket);
		free(x);
		return -ENOMEM;
	}
	x->bucket_count = buckets;
	memset(x->head, 0xff, buckets * sizeof(*x->head));
	memset(x->bucket, 0xff, (nodes ? nodes : 1) * sizeof(*x->bucket));
	for (uint32_t id = 0; id < nodes; id++)
		node_link(c, x, id);
	c->devip = x;
	return 0;
}

void sched_devip_index_free(struct sched_cluster *c)
{
	if (!c->devip)
		return;
	free(c->devip->head);
	free(c->devip->next);
	free(c->devip->bucket);
	free(c->devip);
	c->devip = NULL;
}

void sched_devip_changed(struct sched_cluster *c, unsigned server, unsigned npu)
{
	uint32_t id = (uint32_t)(server * SLOTS + npu);

	if (!c->devip || server >= c->server_count || npu >= CONF_SERVER_NPUS_MAX)
		return;
	node_unlink(c->devip, id);
	node_link(c, c->devip, id);
}

/* Node @id an NPU of server @skip (its host_ip is never skipped)? */
static bool is_skipped(uint32_t id, unsigned skip)
{
	return id / SLOTS == skip && id % SLOTS != CONF_SERVER_NPUS_MAX;
}

/* Does node @id stand for @ip, and count (not skipped; a host_ip with @hosts_only)? */
static bool node_matches(const struct sched_cluster *c, uint32_t id, const char *ip,
			 unsigned skip_server, bool hosts_only)
{
	const char *have;

	if (is_skipped(id, skip_server) || (hosts_only && id % SLOTS != CONF_SERVER_NPUS_MAX))
		return false;
	have = node_ip(c, id);
	return have && strcmp(have, ip) == 0;
}

/* The first node that matches (node_matches()), or END. */
static uint32_t find_node(const struct sched_cluster *c, const char *ip, unsigned skip_server,
			  bool hosts_only)
{
	const struct sched_devip_index *x = c->devip;

	if (!ip || !ip[0])
		return END;
	if (x) {
		for (uint32_t id = x->head[hash_ip(ip) & (x->bucket_count - 1)]; id != END;
		     id = x->next[id])
			if (node_matches(c, id, ip, skip_server, hosts_only))
				return id;
		return END;
	}
	/* no memory for the index: look at every address */
	for (uint32_t id = 0; id < c->server_count * SLOTS; id++)
		if (node_matches(c, id, ip, skip_server, hosts_only))
			return id;
	return END;
}

bool sched_devip_find(const struct sched_cluster *c, const char *ip, unsigned skip_server,
		      unsigned *ret_server, int *ret_npu)
{
	uint32_t id = find_node(c, ip, skip_server, false);

	if (id == END)
		return false;
	*ret_server = id / SLOTS;
	*ret_npu = id % SLOTS == CONF_SERVER_NPUS_MAX ? -1 : (int)(id % SLOTS);
	return true;
}

int sched_devip_find_host(const struct sched_cluster *c, const char *ip)
{
	uint32_t id = find_node(c, ip, UINT32_MAX, true);

	return id == END ? -1 : (int)(id / SLOTS);
}
