/* SPDX-License-Identifier: MIT */
/*
 * The cluster configuration's `state:` section: where the daemon keeps its durable
 * state. SQLite in --state-dir unless it says otherwise:
 *
 *   state:
 *     backend: etcd                       # sqlite (default) or etcd
 *     etcd_servers: [http://10.0.0.1:2379, http://10.0.0.2:2379, http://10.0.0.3:2379]
 *     etcd_prefix: /ascendfs/ascend/      # default /ascendfs/<cluster name>/
 *     leader_lease_duration: 10s          # 2 s to 5 min
 *     etcd_request_timeout: 2s            # per member, 1 s to 1 min; by default a
 *                                         # quarter of the lease, at most 2 s
 *
 * The names follow kube-apiserver (--etcd-servers, --etcd-prefix) and the leader
 * election of kube-scheduler (--leader-elect-lease-duration). The etcd keys are listed in
 * fs_store_etcd.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"

#define ETCD_SERVERS_MAX 16		/* as fs_etcd_open() takes */
#define ETCD_SERVER_LEN_MAX 255		/* FS_ETCD_ENDPOINT_MAX - 1 */
#define ETCD_PREFIX_MAX 200
#define LEADER_LEASE_MIN_SEC 2
#define LEADER_LEASE_MAX_SEC 300
#define ETCD_TIMEOUT_MAX_SEC 60

static const char *const state_keys[] = {
	"backend", "etcd_servers", "etcd_prefix", "leader_lease_duration",
	"etcd_request_timeout", NULL,
};

/* One member's client URL: http:// or https://, a host, an optional port, no path (a
 * '/' at the end is fine). */
static bool server_url_is_valid(const char *s)
{
	const char *host;

	if (strncmp(s, "http://", 7) == 0)
		host = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else
		return false;
	if (!*host || strlen(s) > ETCD_SERVER_LEN_MAX)
		return false;
	for (const char *p = host; *p; p++)
		if (*p <= ' ' || *p == ',' || (*p == '/' && p[1]) || *p == '?' || *p == '#' ||
		    *p == '@' ||
		    (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

/* etcd_servers: a list, or one comma-separated string; joined with commas into @c. */
static int read_servers(const struct conf_ctx *ctx, const struct conf_node *n,
			struct conf_cluster *c)
{
	char q[CONF_QUOTE_MAX], *joined = NULL, *save = NULL, *one;
	size_t count = 0, len = 0;
	const char *text;
	int r;

	if (n->kind == CONF_NODE_SEQ) {
		for (size_t i = 0; i < n->count; i++) {
			r = conf_read_string(ctx, n->items[i], "etcd_servers", false, &text);
			if (r < 0)
				goto out;
			/* said at the entry itself */
			if (!server_url_is_valid(text))
				return conf_fail(ctx, n->items[i], "etcd_servers: %s is not an etcd "
						 "member's client URL; use http://<host>:<port> "
						 "or https://<host>:<port>, as etcd's "
						 "--advertise-client-urls (e.g. "
						 "http://10.0.0.1:2379)",
						 conf_quote(text, q, sizeof(q)));
			len += strlen(text) + 1;
		}
		joined = calloc(len + 1, 1);
		if (!joined)
			return conf_err_nomem(ctx->err, ctx->file);
		for (size_t i = 0; i < n->count; i++) {
			if (i)
				strcat(joined, ",");
			strcat(joined, n->items[i]->text);
		}
	} else {
		r = conf_read_string(ctx, n, "etcd_servers", false, &text);
		if (r < 0)
			return r;
		joined = strdup(text);
		if (!joined)
			return conf_err_nomem(ctx->err, ctx->file);
	}
	c->etcd_servers = strdup(joined);
	if (!c->etcd_servers) {
		r = conf_err_nomem(ctx->err, ctx->file);
		goto out;
	}
	r = 0;
	for (one = strtok_r(joined, ",", &save); one; one = strtok_r(NULL, ",", &save)) {
		while (*one == ' ')
			one++;
		if (++count > ETCD_SERVERS_MAX) {
			r = conf_fail(ctx, n, "etcd_servers: more than %d members; list at most %d "
					      "(an etcd cluster has 3, 5 or 7)",
				      ETCD_SERVERS_MAX, ETCD_SERVERS_MAX);
			goto out;
		}
		if (!server_url_is_valid(one)) {
			r = conf_fail(ctx, n, "etcd_servers: %s is not an etcd member's client URL; "
					      "use http://<host>:<port> or https://<host>:<port>, "
					      "as etcd's --advertise-client-urls (e.g. "
					      "http://10.0.0.1:2379)",
				      conf_quote(one, q, sizeof(q)));
			goto out;
		}
	}
	if (!count)
		r = conf_fail(ctx, n, "etcd_servers: no member listed; give the client URLs of "
				      "the etcd members, e.g. [http://10.0.0.1:2379, "
				      "http://10.0.0.2:2379, http://10.0.0.3:2379]");
out:
	free(joined);
	return r;
}

/* etcd_prefix: "/"-led, printable ASCII without spaces; stored with a trailing '/'. */
static int read_prefix(const struct conf_ctx *ctx, const struct conf_node *n,
		       struct conf_cluster *c)
{
	char q[CONF_QUOTE_MAX];
	const char *text;
	size_t len;
	int r = conf_read_string(ctx, n, "etcd_prefix", false, &text);

	if (r < 0)
		return r;
	len = strlen(text);
	for (const char *p = text; *p; p++)
		if (*p <= ' ' || (unsigned char)*p >= 0x7f)
			len = 0;
	if (text[0] != '/' || !len || len > ETCD_PREFIX_MAX || strcmp(text, "/") == 0)
		return conf_fail(ctx, n, "etcd_prefix: %s is not a key prefix; use a path led by "
				      "'/' of printable characters without spaces, at most %d, "
				      "other than \"/\" alone (e.g. /ascendfs/%s/)",
			      conf_quote(text, q, sizeof(q)), ETCD_PREFIX_MAX, c->name);
	free(c->etcd_prefix);
	if (asprintf(&c->etcd_prefix, "%s%s", text, text[len - 1] == '/' ? "" : "/") < 0) {
		c->etcd_prefix = NULL;
		return conf_err_nomem(ctx->err, ctx->file);
	}
	return 0;
}

int conf_read_state(const struct conf_ctx *ctx, const struct conf_node *root,
		    struct conf_cluster *c)
{
	const struct conf_node *sec = conf_map_get(root, "state"), *n, *backend = NULL;
	char q[CONF_QUOTE_MAX];
	const char *text;
	uint64_t v;
	int r;

	c->state_backend = CONF_STATE_SQLITE;
	if (sec && !conf_node_is_null(sec)) {
		if ((r = conf_expect_map(ctx, sec, "state")) < 0 ||
		    (r = conf_check_keys(ctx, sec, state_keys)) < 0)
			return r;
		backend = conf_map_get(sec, "backend");
	} else {
		sec = NULL;
	}
	if (backend) {
		r = conf_read_string(ctx, backend, "backend", false, &text);
		if (r < 0)
			return r;
		if (strcmp(text, "etcd") == 0)
			c->state_backend = CONF_STATE_ETCD;
		else if (strcmp(text, "sqlite") != 0)
			return conf_fail(ctx, backend, "backend: %s is not a state backend; use "
						       "sqlite (a file in --state-dir, one head) or "
						       "etcd (an etcd cluster, heads that fail over)",
					 conf_quote(text, q, sizeof(q)));
	}
	if (sec && (n = conf_map_get(sec, "leader_lease_duration"))) {
		r = conf_read_seconds(ctx, n, "leader_lease_duration", LEADER_LEASE_MIN_SEC,
				      LEADER_LEASE_MAX_SEC, &v);
		if (r < 0)
			return r;
		c->leader_lease_sec = (unsigned)v;
	}
	/* by default a quarter of the lease, at most 2 s: a head tries two members before
	 * its lease could lapse */
	c->etcd_timeout_sec = c->leader_lease_sec / 4 ? c->leader_lease_sec / 4 : 1;
	if (c->etcd_timeout_sec > 2)
		c->etcd_timeout_sec = 2;
	if (sec && (n = conf_map_get(sec, "etcd_request_timeout"))) {
		r = conf_read_seconds(ctx, n, "etcd_request_timeout", 1, ETCD_TIMEOUT_MAX_SEC, &v);
		if (r < 0)
			return r;
		c->etcd_timeout_sec = (unsigned)v;
	}
	if (sec && (n = conf_map_get(sec, "etcd_servers")) && (r = read_servers(ctx, n, c)) < 0)
		return r;
	if (sec && (n = conf_map_get(sec, "etcd_prefix")) && (r = read_prefix(ctx, n, c)) < 0)
		return r;
	if (c->state_backend == CONF_STATE_SQLITE) {
		/* keys of etcd with sqlite: said, not silently ignored */
		n = sec ? conf_map_get(sec, "etcd_servers") : NULL;
		if (!n)
			n = sec ? conf_map_get(sec, "etcd_prefix") : NULL;
		if (n)
			return conf_fail(ctx, n, "etcd_servers and etcd_prefix are for backend: "
						 "etcd; add `backend: etcd` to this section, or "
						 "remove them to keep the state in SQLite");
		return 0;
	}
	if (!c->etcd_servers)
		return conf_fail(ctx, backend, "backend: etcd needs etcd_servers, the client URLs "
					       "of the etcd members (e.g. etcd_servers: "
					       "[http://10.0.0.1:2379, http://10.0.0.2:2379, "
					       "http://10.0.0.3:2379])");
	n = conf_map_get(sec, "etcd_request_timeout");
	/* what cluster/config shows must read back: the default of a 2 s lease is 1 s */
	if (n && c->etcd_timeout_sec * 2 > c->leader_lease_sec)
		return conf_fail(ctx, n, "etcd_request_timeout: %u s is more than half the "
					 "leader_lease_duration (%u s): a head would lose its lease "
					 "while it waits for one member; make the timeout shorter or "
					 "the lease longer",
				 c->etcd_timeout_sec, c->leader_lease_sec);
	if (!c->etcd_prefix && asprintf(&c->etcd_prefix, "/ascendfs/%s/", c->name) < 0) {
		c->etcd_prefix = NULL;
		return conf_err_nomem(ctx->err, ctx->file);
	}
	return 0;
}

void conf_render_state(struct conf_out *o, const struct conf_cluster *c)
{
	conf_out_key(o, "state");
	conf_out_map_start(o, false);
	conf_out_key(o, "backend");
	conf_out_str(o, c->state_backend == CONF_STATE_ETCD ? "etcd" : "sqlite");
	if (c->state_backend == CONF_STATE_ETCD) {
		conf_out_key(o, "etcd_servers");
		conf_out_str(o, c->etcd_servers);
		conf_out_key(o, "etcd_prefix");
		conf_out_str(o, c->etcd_prefix);
		conf_out_key(o, "leader_lease_duration");
		conf_out_uint(o, c->leader_lease_sec);
		conf_out_key(o, "etcd_request_timeout");
		conf_out_uint(o, c->etcd_timeout_sec);
	}
	conf_out_map_end(o);
}
