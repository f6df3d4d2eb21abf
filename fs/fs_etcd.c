/* SPDX-License-Identifier: MIT */
/*
 * A client of etcd's v3 API through its JSON gateway (POST /v3/kv/range, /v3/kv/txn,
 * /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke), with libcurl and jansson:
 * what a head needs to keep its state in an etcd cluster and to hold the leadership on a
 * lease (issue 21). Keys and values are bytes, base64 in the JSON as the gateway wants;
 * etcd's 64-bit integers come as JSON strings. Each call tries the endpoints in turn,
 * starting with the last one that answered, until one answers or all have failed; an
 * answer of etcd's own (a gRPC error code in the body) is not retried elsewhere.
 *
 * The rules taken from etcd (v3.4 API reference, rpc.proto, and its gateway):
 *  - a Txn is atomic: every compare holds and every success op is applied in one
 *    revision, or no op is applied ("succeeded": false);
 *  - create_revision 0 compares equal for a key that does not exist (how an election
 *    takes a key only if nobody holds it);
 *  - a put with a lease is deleted when the lease expires or is revoked;
 *  - a range with "limit" returns "more": true when keys are left; ranges read at one
 *    "revision" see the same snapshot;
 *  - a keepalive of an expired lease answers TTL 0 (or no TTL);
 *  - a compaction at a revision drops every older version of every key: a range at an
 *    older revision then fails ("required revision has been compacted").
 *
 * Calls: libcurl, jansson; nothing of the daemon (fs.h says the shapes).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fs.h"

#define ETCD_ENDPOINTS_MAX 16
#define ETCD_RANGE_PAGE 1000	/* keys per range request, at most */
#define ETCD_FIRST_PAGE 16	/* ... the first one */
#define ETCD_PAGE_BYTES (4u << 20) /* what a page after the first aims at */

struct fs_etcd {
	char *endpoint[ETCD_ENDPOINTS_MAX];
	size_t count;
	size_t current;		/* the endpoint that answered last */
	unsigned timeout_ms;	/* per request and endpoint */
	CURL *curl;
	char *body;		/* the last answer */
	size_t body_len, body_cap;
	bool too_large;		/* the last answer passed FS_ETCD_ANSWER_MAX */
};

/* ---- base64 (RFC 4648, with padding), as the gateway encodes bytes ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? b64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* each byte's value as a base64 digit, or -1 (built once: a restore decodes MiBs) */
static signed char b64_values[256];
static pthread_once_t b64_once = PTHREAD_ONCE_INIT;

static void b64_table(void)
{
	memset(b64_values, -1, sizeof(b64_values));
	for (int i = 0; i < 64; i++)
		b64_values[(unsigned char)b64[i]] = (signed char)i;
}

static int b64_value(char ch)
{
	return b64_values[(unsigned char)ch];
}

/* Decode @s into a new NUL-terminated buffer (*@ret, free()) of *@ret_len bytes. */
static int b64_decode(const char *s, char **ret, size_t *ret_len)
{
	size_t n = strlen(s), k = 0;
	char *out;
	unsigned v = 0;
	int bits = 0;

	pthread_once(&b64_once, b64_table);
	if (n % 4)
		return -EPROTO;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int d;

		if (s[i] == '=') {
			if (i + 2 < n || (i + 1 < n && s[i + 1] != '='))
				goto bad;
			break;
		}
		d = b64_value(s[i]);
		if (d < 0)
			goto bad;
		v = v << 6 | (unsigned)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (char)(v >> bits & 0xff);
		}
	}
	out[k] = '\0';
	*ret = out;
	*ret_len = k;
	return 0;
bad:
	free(out);
	return -EPROTO;
}

/* ---- requests ---- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct fs_etcd *e = arg;
	size_t len = size * n;

	if (e->body_len + len + 1 > e->body_cap) {
		size_t need = e->body_len + len + 1, cap = need * 2;
		char *b;

		if (need > FS_ETCD_ANSWER_MAX + 1) {
			e->too_large = true;
			return 0; /* an answer this large is refused: libcurl fails the call */
		}
		if (cap > FS_ETCD_ANSWER_MAX + 1)
			cap = FS_ETCD_ANSWER_MAX + 1;
		b = realloc(e->body, cap);
		if (!b)
			return 0;
		e->body = b;
		e->body_cap = cap;
	}
	memcpy(e->body + e->body_len, data, len);
	e->body_len += len;
	e->body[e->body_len] = '\0';
	return len;
}

/* The integer etcd sends as a string (or a number); 0 when absent. */
static int64_t jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/*
 * POST @req (consumed) to @path of an endpoint, the last one that answered first;
 * *@ret the answer (new). -EHOSTUNREACH when no endpoint answered within its
 * timeout_ms (each tried once), -EPROTO for an answer that is not JSON, -ENOMEM; an
 * answer that is etcd's error: -EINVAL (@why says it), not tried elsewhere.
 */
static int post(struct fs_etcd *e, const char *path, json_t *req, json_t **ret, char *why)
{
	char *text = json_dumps(req, JSON_COMPACT);
	char url[FS_ETCD_ENDPOINT_MAX + 64], first[200] = "";
	int r = -EHOSTUNREACH;

	json_decref(req);
	if (!text)
		return -ENOMEM;
	for (size_t tries = 0; tries < e->count; tries++) {
		size_t i = (e->current + tries) % e->count;
		long status = 0;
		CURLcode rc;
		json_t *answer;
		json_error_t jerr;

		snprintf(url, sizeof(url), "%s%s", e->endpoint[i], path);
		e->body_len = 0;
		e->too_large = false;
		curl_easy_setopt(e->curl, CURLOPT_URL, url);
		curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, text);
		rc = curl_easy_perform(e->curl);
		if (rc != CURLE_OK && e->too_large) {
			snprintf(why, FS_ETCD_WHY_MAX, "%s%s answered more than %u MiB; read "
				 "fewer keys at once", e->endpoint[i], path, FS_ETCD_ANSWER_MAX >> 20);
			r = -EMSGSIZE;
			break;
		}
		if (rc != CURLE_OK) {
			if (!first[0])
				snprintf(first, sizeof(first), "%s: %s", e->endpoint[i],
					 curl_easy_strerror(rc));
			continue;
		}
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
		answer = json_loadb(e->body ? e->body : "", e->body_len, 0, &jerr);
		if (!answer && status >= 500) {
			/* a proxy or a member in trouble: another member may answer */
			if (!first[0])
				snprintf(first, sizeof(first), "%s: HTTP %ld, not JSON",
					 e->endpoint[i], status);
			continue;
		}
		if (!answer) {
			snprintf(why, FS_ETCD_WHY_MAX, "%s%s answered HTTP %ld, not JSON",
				 e->endpoint[i], path, status);
			r = -EPROTO;
			break;
		}
		if (status != 200 || json_object_get(answer, "error") ||
		    json_object_get(answer, "code")) {
			const char *msg = json_string_value(json_object_get(answer, "error"));
			int64_t code = jint(answer, "code");

			if (!msg)
				msg = json_string_value(json_object_get(answer, "message"));
			snprintf(why, FS_ETCD_WHY_MAX, "etcd at %s refused %s: %s (HTTP %ld)",
				 e->endpoint[i], path, msg ? msg : "no message", status);
			/* a member cut off from its quorum answers too, with gRPC's
			 * Unavailable (14) or DeadlineExceeded (4): the others may still
			 * have a quorum */
			if (code == 14 || code == 4 || status == 503) {
				if (!first[0])
					snprintf(first, sizeof(first), "%s: %s", e->endpoint[i],
						 msg ? msg : "unavailable");
				json_decref(answer);
				r = -EHOSTUNREACH;
				continue;
			}
			json_decref(answer);
			r = -EINVAL;
			break;
		}
		e->current = i; /* the next call starts with the member that answered */
		*ret = answer;
		r = 0;
		break;
	}
	if (r == -EHOSTUNREACH)
		snprintf(why, FS_ETCD_WHY_MAX,
			 "no etcd member answered within %u ms each (%zu %s; first: %s); "
			 "check that a quorum of the members runs and is reachable",
			 e->timeout_ms, e->count, e->count == 1 ? "endpoint" : "endpoints",
			 first[0] ? first : "an error answer");
	free(text);
	return r;
}

/* ---- the client ---- */

int fs_etcd_open(const char *endpoints, unsigned timeout_ms, struct fs_etcd **ret, char *why)
{
	struct fs_etcd *e;
	const char *p = endpoints;

	if (!endpoints || !*endpoints) {
		snprintf(why, FS_ETCD_WHY_MAX, "no etcd endpoint given");
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->timeout_ms = timeout_ms ? timeout_ms : 2000;
	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == 0 || n >= FS_ETCD_ENDPOINT_MAX || e->count == ETCD_ENDPOINTS_MAX ||
		    (strncmp(p, "http://", 7) != 0 && strncmp(p, "https://", 8) != 0)) {
			snprintf(why, FS_ETCD_WHY_MAX,
				 "etcd endpoint \"%.*s\": write http://HOST:PORT (or https://), "
				 "at most %d, separated by commas",
				 (int)(n < 200 ? n : 200), p, ETCD_ENDPOINTS_MAX);
			fs_etcd_close(e);
			return -EINVAL;
		}
		e->endpoint[e->count] = strndup(p, n);
		if (!e->endpoint[e->count]) {
			fs_etcd_close(e);
			return -ENOMEM;
		}
		/* "http://h:2379/" and "http://h:2379" alike */
		if (e->endpoint[e->count][n - 1] == '/')
			e->endpoint[e->count][n - 1] = '\0';
		e->count++;
		p += n;
		if (*p == ',')
			p++;
	}
	e->curl = curl_easy_init();
	if (!e->curl) {
		fs_etcd_close(e);
		return -ENOMEM;
	}
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	*ret = e;
	return 0;
}

void fs_etcd_close(struct fs_etcd *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->count; i++)
		free(e->endpoint[i]);
	if (e->curl)
		curl_easy_cleanup(e->curl);
	free(e->body);
	free(e);
}

const char *fs_etcd_endpoint(const struct fs_etcd *e)
{
	return e->endpoint[e->current];
}

/* A key or value as the gateway wants it: base64 of @len bytes (strlen when SIZE_MAX). */
static json_t *jbytes(const void *data, size_t len)
{
	char *s = b64_encode(data, len == SIZE_MAX ? strlen(data) : len);
	json_t *v = s ? json_string(s) : NULL;

	free(s);
	return v;
}

static json_t *jint64(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

/*
 * The end of the range of keys that start with @prefix (@n bytes), as etcd's clients
 * compute it: trailing 0xff bytes dropped, then the last byte + 1; *@ret_len 0 with
 * *@ret NULL when every byte was 0xff (or none): then the range is open ("\0", every key
 * from the start on). A new buffer (free()); -ENOMEM.
 */
static int prefix_end(const char *prefix, size_t n, char **ret, size_t *ret_len)
{
	char *end;

	while (n && (unsigned char)prefix[n - 1] == 0xff)
		n--;
	*ret = NULL;
	*ret_len = 0;
	if (!n)
		return 0;
	end = malloc(n);
	if (!end)
		return -ENOMEM;
	memcpy(end, prefix, n);
	end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
	*ret = end;
	*ret_len = n;
	return 0;
}

/* "range_end" of the keys that start with @prefix into @body; false without memory. */
static bool set_prefix_end(json_t *body, const char *prefix)
{
	char *end;
	size_t n;

	if (prefix_end(prefix, strlen(prefix), &end, &n) < 0)
		return false;
	/* all 0xff (or empty): the one byte 0, "every key from the start key on" */
	json_object_set_new(body, "range_end", end ? jbytes(end, n) : jbytes("", 1));
	free(end);
	return true;
}

int fs_etcd_txn(struct fs_etcd *e, const struct fs_etcd_cmp *cmp, size_t ncmp,
		const struct fs_etcd_op *ops, size_t nops, bool *ret_succeeded,
		int64_t *ret_revision, char *why)
{
	static const char *const targets[] = { "CREATE", "MOD", "LEASE", "VALUE" };
	static const char *const fields[] = { "create_revision", "mod_revision", "lease", "value" };
	json_t *req = json_object(), *compare = json_array(), *success = json_array(), *answer;
	int r;

	for (size_t i = 0; i < ncmp; i++) {
		json_t *c = json_object();

		json_object_set_new(c, "key", jbytes(cmp[i].key, SIZE_MAX));
		json_object_set_new(c, "result", json_string("EQUAL"));
		json_object_set_new(c, "target", json_string(targets[cmp[i].target]));
		json_object_set_new(c, fields[cmp[i].target],
				    cmp[i].target == FS_ETCD_CMP_VALUE ?
					    jbytes(cmp[i].value, cmp[i].value_len) :
					    jint64(cmp[i].number));
		json_array_append_new(compare, c);
	}
	for (size_t i = 0; i < nops; i++) {
		json_t *op = json_object(), *body = json_object();

		json_object_set_new(body, "key", jbytes(ops[i].key, SIZE_MAX));
		if (ops[i].kind == FS_ETCD_PUT) {
			json_object_set_new(body, "value", jbytes(ops[i].value, ops[i].value_len));
			if (ops[i].lease)
				json_object_set_new(body, "lease", jint64(ops[i].lease));
			json_object_set_new(op, "request_put", body);
		} else {
			if (ops[i].kind == FS_ETCD_DELETE_PREFIX && !set_prefix_end(body, ops[i].key)) {
				json_decref(op);
				json_decref(body);
				json_decref(req);
				json_decref(compare);
				json_decref(success);
				return -ENOMEM;
			}
			json_object_set_new(op, "request_delete_range", body);
		}
		json_array_append_new(success, op);
	}
	json_object_set_new(req, "compare", compare);
	json_object_set_new(req, "success", success);
	r = post(e, "/v3/kv/txn", req, &answer, why);
	if (r < 0)
		return r;
	*ret_succeeded = json_is_true(json_object_get(answer, "succeeded"));
	if (ret_revision)
		*ret_revision = jint(json_object_get(answer, "header"), "revision");
	json_decref(answer);
	return 0;
}

int fs_etcd_range(struct fs_etcd *e, const char *prefix, bool whole_prefix,
		  int (*fn)(void *arg, const struct fs_etcd_kv *kv), void *arg,
		  int64_t *ret_revision, char *why)
{
	return fs_etcd_range_after(e, prefix, whole_prefix, NULL, false, fn, arg, ret_revision,
				   why);
}

int fs_etcd_range_after(struct fs_etcd *e, const char *prefix, bool whole_prefix,
			const char *after, bool keys_only,
			int (*fn)(void *arg, const struct fs_etcd_kv *kv), void *arg,
			int64_t *ret_revision, char *why)
{
	size_t n = strlen(prefix), from_len = n, end_len = 0;
	char *from = NULL, *end = NULL;
	/* the first page small: its values may be large (a page must come within the
	 * timeout and FS_ETCD_ANSWER_MAX); the next ones sized by what came */
	size_t page = ETCD_FIRST_PAGE;
	int64_t rev = 0;
	int r = 0;

	/* from the key just after @after (it and a 0 byte), within the prefix */
	if (whole_prefix && after && strncmp(after, prefix, n) == 0) {
		from_len = strlen(after) + 1;
		from = calloc(from_len + 1, 1);
		if (from)
			memcpy(from, after, from_len - 1);
	} else {
		from = strdup(prefix);
	}
	if (!from)
		return -ENOMEM;
	if (whole_prefix && prefix_end(prefix, n, &end, &end_len) < 0) {
		free(from);
		return -ENOMEM;
	}
	if (whole_prefix && !n && !after)
		from_len = 1; /* etcd has no key "": every key is from "\0" on */
	for (;;) {
		json_t *req = json_object(), *answer, *kvs;
		size_t count, page_bytes = 0;
		bool more;

		json_object_set_new(req, "key", jbytes(from, from_len));
		if (whole_prefix) /* all 0xff (or ""): "\0", every key from the start on */
			json_object_set_new(req, "range_end", end ? jbytes(end, end_len) :
								    jbytes("", 1));
		json_object_set_new(req, "limit", json_integer((json_int_t)page));
		if (keys_only)
			json_object_set_new(req, "keys_only", json_true());
		if (rev) /* every page at the first page's revision: one snapshot */
			json_object_set_new(req, "revision", jint64(rev));
		r = post(e, "/v3/kv/range", req, &answer, why);
		/* a page of large values: the same page again, in fewer keys */
		if (r == -EMSGSIZE && page > 1) {
			page = page > 8 ? page / 8 : 1;
			continue;
		}
		if (r < 0)
			break;
		if (!rev)
			rev = jint(json_object_get(answer, "header"), "revision");
		kvs = json_object_get(answer, "kvs");
		more = json_is_true(json_object_get(answer, "more"));
		count = json_array_size(kvs);
		for (size_t i = 0; i < count && r == 0; i++) {
			const json_t *o = json_array_get(kvs, i);
			const char *k = json_string_value(json_object_get(o, "key"));
			const char *v = json_string_value(json_object_get(o, "value"));
			struct fs_etcd_kv kv = { 0 };
			char *key = NULL, *value = NULL;

			r = k ? b64_decode(k, &key, &kv.key_len) : -EPROTO;
			if (r == 0)
				r = b64_decode(v ? v : "", &value, &kv.value_len);
			if (r < 0) {
				snprintf(why, FS_ETCD_WHY_MAX,
					 "etcd answered a key or value that is not base64");
				free(key);
				break;
			}
			kv.key = key;
			kv.value = value;
			page_bytes += kv.key_len + kv.value_len;
			kv.create_revision = jint(o, "create_revision");
			kv.mod_revision = jint(o, "mod_revision");
			kv.lease = jint(o, "lease");
			r = fn(arg, &kv);
			/* the next page starts just after the last key: the key and a 0 byte */
			if (i + 1 == count && r == 0 && more) {
				char *next = malloc(kv.key_len + 1);

				if (next) {
					memcpy(next, key, kv.key_len);
					next[kv.key_len] = '\0';
				}
				free(from);
				from = next;
				from_len = kv.key_len + 1;
				if (!from)
					r = -ENOMEM;
			}
			free(key);
			free(value);
		}
		json_decref(answer);
		if (r != 0 || !more || !count)
			break;
		/* the next page sized by what this one held: about ETCD_PAGE_BYTES */
		page_bytes = page_bytes / count ? page_bytes / count : 1;
		page = ETCD_PAGE_BYTES / page_bytes;
		page = page < 1 ? 1 : page > ETCD_RANGE_PAGE ? ETCD_RANGE_PAGE : page;
	}
	free(from);
	free(end);
	if (r == 0 && ret_revision)
		*ret_revision = rev;
	return r;
}

int fs_etcd_compact(struct fs_etcd *e, int64_t revision, char *why)
{
	json_t *req = json_object(), *answer;
	int r;

	json_object_set_new(req, "revision", jint64(revision));
	r = post(e, "/v3/kv/compaction", req, &answer, why);
	if (r == 0)
		json_decref(answer);
	return r;
}

int fs_etcd_lease_grant(struct fs_etcd *e, unsigned ttl_sec, int64_t *ret_id, char *why)
{
	json_t *req = json_object(), *answer;
	int r;

	json_object_set_new(req, "TTL", jint64(ttl_sec));
	r = post(e, "/v3/lease/grant", req, &answer, why);
	if (r < 0)
		return r;
	*ret_id = jint(answer, "ID");
	json_decref(answer);
	if (*ret_id)
		return 0;
	snprintf(why, FS_ETCD_WHY_MAX, "etcd granted no lease");
	return -EPROTO;
}

int fs_etcd_lease_keepalive(struct fs_etcd *e, int64_t id, unsigned *ret_ttl, char *why)
{
	json_t *req = json_object(), *answer;
	int64_t ttl;
	int r;

	json_object_set_new(req, "ID", jint64(id));
	r = post(e, "/v3/lease/keepalive", req, &answer, why);
	if (r < 0)
		return r;
	/* the gateway streams: one message {"result": {..., "TTL": n}}; an expired lease
	 * has no TTL (0) */
	ttl = jint(json_object_get(answer, "result"), "TTL");
	json_decref(answer);
	*ret_ttl = ttl > 0 ? (unsigned)ttl : 0;
	return 0;
}

int fs_etcd_lease_revoke(struct fs_etcd *e, int64_t id, char *why)
{
	json_t *req = json_object(), *answer;
	int r;

	json_object_set_new(req, "ID", jint64(id));
	r = post(e, "/v3/lease/revoke", req, &answer, why);
	if (r == 0)
		json_decref(answer);
	return r;
}
