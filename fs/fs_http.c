/* SPDX-License-Identifier: MIT */
/*
 * The mount's read-only files over HTTP (fs.h says what is served), with libmicrohttpd:
 * one thread of its own polls the connections; each request takes ctx->lock for as long
 * as an open of the same file through the mount would (a stat and a snapshot, from the
 * render cache while the state is unchanged: a scrape loop renders nothing new), and
 * copies the bytes after letting it go.
 *
 * Nothing here writes: HTTP carries no user identity the daemon could check, so what
 * changes the cluster stays a write to the mount (by a user the kernel names). For the
 * same reason only files every user may read through the mount are served (mode o+r).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "fs.h"
#include "fs_panel_html.h"

/* Connections at once, of them from one address, and how long one that sends nothing is
 * kept (s): a scraper or two and a few browsers, never the daemon's memory; a client
 * that trickles bytes keeps its connections, so one address may hold an eighth of them,
 * and the others still get through. */
#define HTTP_CONNECTIONS_MAX 64
#define HTTP_CONNECTIONS_PER_ADDRESS 8
#define HTTP_IDLE_TIMEOUT_SEC 10
/* The prefix of the files' API: /v1/<path in the mount>. */
#define HTTP_API_PREFIX "/v1"
/* ?tail=N of a file gives its last N lines, at most this many */
#define HTTP_TAIL_MAX 100000
/* The panel's page fetches only the daemon's own API and runs only its own inline
 * script: a page that names every job shows no content from anywhere else. */
static const char panel_csp[] = "default-src 'none'; script-src 'unsafe-inline'; "
				"style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; "
				"base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/* The Prometheus text exposition format, version 0.0.4 (Prometheus docs, "Exposition
 * formats"). */
static const char metrics_type[] = "text/plain; version=0.0.4; charset=utf-8";

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     char *body, size_t len)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	/* the state changes under the reader: nothing is to be kept by a cache */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (strncmp(type, "text/html", 9) == 0) {
		MHD_add_response_header(resp, "Content-Security-Policy", panel_csp);
		MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	}
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

/* A JSON error body {"error": "..."}, as the gateway's and the daemon's refusals say it. */
static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status,
				   const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status,
				   const char *fmt, ...)
{
	char msg[512], *body;
	json_t *o;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the request's path is in it: what is not printable ASCII is '?', so the text is
	 * a JSON string whatever was asked (and wherever it was cut) */
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
	o = json_pack("{s:s}", "error", msg);
	body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!body)
		return MHD_NO;
	return reply(conn, status, "application/json", body, strlen(body));
}

static int add_name(void *data, const char *name)
{
	return json_array_append_new(data, json_string(name)) < 0 ? -ENOMEM : 0;
}

/* What a file of kind @k reads as. */
static const char *content_type(const struct fs_path *p, const char *path)
{
	size_t n = strlen(path);

	if (p->kind == FS_CLUSTER_METRICS)
		return metrics_type;
	if (n > 5 && strcmp(path + n - 5, ".json") == 0)
		return "application/json";
	return "text/plain; charset=utf-8";
}

/*
 * The last @n lines of @body (@*len bytes, a file of lines): moved to its start, *@len
 * cut. A body with fewer lines is left whole.
 */
static void keep_tail(char *body, size_t *len, unsigned long n)
{
	size_t i = *len;

	if (i && body[i - 1] == '\n')
		i--; /* the last line's own newline */
	for (; i > 0; i--)
		if (body[i - 1] == '\n' && --n == 0)
			break;
	if (i == 0)
		return; /* n lines or fewer: all of it */
	memmove(body, body + i, *len - i);
	*len -= i;
}

/* GET of @path, a path in the mount ("/" ... ); its last @tail lines when not 0. */
static enum MHD_Result serve_path(struct fs_ctx *ctx, struct MHD_Connection *conn,
				  const char *path, unsigned long tail)
{
	struct fs_path p;
	struct fs_view v = { 0 };
	struct stat st;
	uint64_t now = fs_now_usec();
	char *body = NULL;
	size_t len = 0;
	json_t *names = NULL;
	uint64_t serial = 0;
	int r = fs_path_parse(path, &p);

	if (r == -ENAMETOOLONG || r == -EINVAL || r == -ENOENT)
		return reply_error(conn, MHD_HTTP_NOT_FOUND, "%s: no such file in the mount%s",
				   path, r == -EINVAL ? " (not a valid name)" : "");
	fs_joblog_prepare(ctx, &p);
	pthread_mutex_lock(&ctx->lock);
	/* what a pass owed by earlier requests decides, as a reader through the mount sees
	 * it (wait_for_closing_uploads, fs_ops.c): a job just submitted says running or
	 * pending with its reason, not "waiting for the first scheduling pass" */
	fs_pass_run_owed(ctx);
	r = fs_stat_sized(ctx, &p, &st, now, false);
	/* "file/" is no path of the mount (ENOTDIR there) */
	if (r == 0 && !S_ISDIR(st.st_mode) && path[1] && path[strlen(path) - 1] == '/')
		r = -ENOENT;
	if (r == 0 && !(st.st_mode & S_IROTH))
		r = -EACCES;
	if (r == 0 && S_ISDIR(st.st_mode)) {
		names = json_array();
		r = names ? fs_list(ctx, &p, add_name, names) : -ENOMEM;
	} else if (r == 0 && (p.kind == FS_JOB_LOG || p.kind == FS_JOB_LOG_OLD ||
			      p.kind == FS_JOB_PROC_LOG || p.kind == FS_JOB_PROC_LOG_OLD)) {
		serial = sched_cluster_find_job(ctx->cluster, p.job)->serial;
	} else if (r == 0) {
		r = fs_snapshot(ctx, &p, now, &v);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (serial) /* a job's output: read off the lock (fs_joblog.c) */
		r = fs_joblog_read_all(ctx, serial,
				       p.kind == FS_JOB_LOG_OLD || p.kind == FS_JOB_PROC_LOG_OLD,
				       p.kind == FS_JOB_PROC_LOG || p.kind == FS_JOB_PROC_LOG_OLD ?
				       p.proc : FS_LOG_PROC_NONE, &body, &len);
	if (v.blob) {
		/* the snapshot's bytes, copied off the lock */
		len = v.len;
		body = malloc(len ? len : 1);
		if (body)
			memcpy(body, v.blob->data + v.off, len);
		fs_blob_put(v.blob);
		if (!body)
			r = -ENOMEM;
	}
	if (names) {
		body = r == 0 ? json_dumps(names, JSON_COMPACT) : NULL;
		json_decref(names);
		if (r == 0 && !body)
			r = -ENOMEM;
		if (r == 0)
			return reply(conn, MHD_HTTP_OK, "application/json", body, strlen(body));
	}
	switch (r) {
	case 0:
		if (tail)
			keep_tail(body, &len, tail);
		return reply(conn, MHD_HTTP_OK, content_type(&p, path), body, len);
	case -ENOENT:
		return reply_error(conn, MHD_HTTP_NOT_FOUND, "%s: no such file in the mount now",
				   path);
	case -EACCES:
		return reply_error(conn, MHD_HTTP_FORBIDDEN,
				   "%s: not readable by every user; read it through the mount",
				   path);
	default:
		free(body);
		return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s: %s", path,
				   strerror(-r));
	}
}

/*
 * What a request is, from its URI as sent (libmicrohttpd's URI log callback, before it
 * decodes the URI: a "%00" there would end the decoded path early, and "file%00junk"
 * would read as "file"), then once its first call has marked it.
 */
static char uri_plain, uri_nul, seen_plain, seen_nul;

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	return strstr(uri, "%00") ? &uri_nul : &uri_plain;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct fs_ctx *ctx = cls;
	size_t plen = strlen(HTTP_API_PREFIX);
	char *index;

	(void)version;
	(void)upload_data;
	/* answered once the whole request is read (libmicrohttpd then keeps an HTTP/1.1
	 * connection for the next request): the first call only marks it, and a body's
	 * pieces are dropped */
	if (*req_cls != &seen_plain && *req_cls != &seen_nul) {
		*req_cls = *req_cls == &uri_nul ? &seen_nul : &seen_plain;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				   "%s: only GET and HEAD; change the cluster through the mount",
				   method);
	if (*req_cls == &seen_nul)
		return reply_error(conn, MHD_HTTP_NOT_FOUND,
				   "%s: a NUL byte (%%00) is no part of a path in the mount", url);
	/* the absolute form, "GET http://host/v1/..." (RFC 9112 3.2.2): its path */
	if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) {
		const char *path = strchr(url + (url[4] == 's' ? 8 : 7), '/');

		url = path ? path : "/";
	}
	if (strcmp(url, "/metrics") == 0)
		return serve_path(ctx, conn, "/cluster/metrics", 0);
	if (strncmp(url, HTTP_API_PREFIX, plen) == 0 && (url[plen] == '/' || !url[plen])) {
		const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "tail");
		unsigned long tail = 0;
		char *end = NULL;

		if (t) {
			errno = 0;
			tail = strtoul(t, &end, 10);
			if (!*t || *end || errno || tail == 0 || tail > HTTP_TAIL_MAX || *t == '-' ||
			    *t == '+')
				return reply_error(conn, MHD_HTTP_BAD_REQUEST,
						   "tail=%.40s: give a whole number of lines from 1 "
						   "to %d",
						   t, HTTP_TAIL_MAX);
		}
		return serve_path(ctx, conn, url[plen] ? url + plen : "/", tail);
	}
	if (strcmp(url, "/") == 0 || strcmp(url, "/panel") == 0) {
		/* the monitoring panel (fs/panel.html) */
		index = malloc(FS_PANEL_HTML_LEN);
		if (!index)
			return MHD_NO;
		memcpy(index, fs_panel_html, FS_PANEL_HTML_LEN);
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", index,
			     FS_PANEL_HTML_LEN);
	}
	return reply_error(conn, MHD_HTTP_NOT_FOUND,
			   "%s: not served; GET / (the panel), /metrics or /v1/<path in the "
			   "mount>[?tail=N]",
			   url);
}

int fs_http_parse_address(const char *text, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(text, ':'), *h = text;
	size_t hlen;
	struct addrinfo hints = { 0 }, *ai = NULL;
	char *end;
	unsigned long port;

	if (!colon || colon == text)
		return -EINVAL;
	hlen = (size_t)(colon - text);
	if (text[0] == '[') {
		if (hlen < 3 || text[hlen - 1] != ']')
			return -EINVAL;
		h = text + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+')
		return -EINVAL;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
		return -EINVAL;
	if (ai->ai_addrlen > sizeof(*ret) ||
	    (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)) {
		freeaddrinfo(ai);
		return -EINVAL;
	}
	memcpy(ret, ai->ai_addr, ai->ai_addrlen);
	*ret_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

int fs_http_listen(const char *address, int *ret_fd, char *why, size_t why_len)
{
	struct sockaddr_storage sa;
	socklen_t sa_len;
	int fd, one = 1, e;

	if (fs_http_parse_address(address, &sa, &sa_len) < 0) {
		snprintf(why, why_len, "--http %s: not an address and port; give e.g. "
			 "127.0.0.1:9101 or [::1]:9101", address);
		return -EINVAL;
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = -errno;
		snprintf(why, why_len, "--http %s: %s", address, strerror(-e));
		return e;
	}
	/* a restarted daemon takes its port back at once (no wait for TIME_WAIT) */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sa_len) < 0 || listen(fd, 64) < 0) {
		e = -errno;
		close(fd);
		snprintf(why, why_len, "--http %s: cannot listen there: %s%s", address,
			 strerror(-e), e == -EADDRINUSE ? " (another process has the port; "
							"give another)" : "");
		return e;
	}
	*ret_fd = fd;
	return 0;
}

int fs_http_start(struct fs_ctx *ctx, int fd, const char *address)
{
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;

	/* no MHD_USE_ERROR_LOG: its lines (one per refused connection) would go to stderr,
	 * the journal, unfiltered, at any client's will */
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
			     on_request, ctx, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTIONS_MAX,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTIONS_PER_ADDRESS,
			     MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT_SEC,
			     MHD_OPTION_END);
	if (!d)
		return -ENOMEM;
	ctx->http = d;
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fs_log(ctx, 2, "serving /metrics and /v1/<path> over HTTP on %s (port %u)", address,
	       info ? (unsigned)info->port : 0u);
	return 0;
}

void fs_http_stop(struct fs_ctx *ctx)
{
	if (!ctx->http)
		return;
	MHD_stop_daemon(ctx->http);
	ctx->http = NULL;
}
