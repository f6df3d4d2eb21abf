/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <yaml.h>

#include "conf_internal.h"

/* ---- plain predicates and parsers ---- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool conf_job_name_is_valid(const char *name)
{
	return conf_name_is_valid(name) && !ends_with(name, ".yaml") &&
	       !ends_with(name, ".yml") && !ends_with(name, ".json");
}

bool conf_name_is_valid(const char *name)
{
	size_t i;

	if (!name)
		return false;
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return false;
	for (i = 1; name[i]; i++) {
		char c = name[i];

		if (i >= CONF_NAME_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* A decimal number without sign or blanks; *@end set past it. */
static int parse_u64(const char *p, const char **end, uint64_t *ret)
{
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*end = p;
	*ret = v;
	return 0;
}

int conf_parse_duration(const char *text, uint64_t *ret_sec)
{
	static const struct {
		char unit;
		uint64_t sec;
	} units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	size_t next_unit = 0; /* units must come in decreasing size, each at most once */
	const char *p = text;
	uint64_t total = 0;

	if (!text || !*text)
		return -EINVAL;
	while (*p) {
		uint64_t v;
		size_t u;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		/* digits past 2^64 are still a number, only too large: -ERANGE, not -EINVAL */
		if (parse_u64(p, &p, &v) < 0) {
			while (*p >= '0' && *p <= '9')
				p++;
			v = UINT64_MAX;
		}
		if (!*p) {
			/* A bare number is seconds, but only on its own: "1h30" is ambiguous. */
			if (next_unit != 0)
				return -EINVAL;
			total = v;
			break;
		}
		for (u = next_unit; u < sizeof(units) / sizeof(units[0]); u++)
			if (units[u].unit == *p)
				break;
		if (u == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		/* saturate: a huge value is refused below, but only once the text is known good */
		if (v > (UINT64_MAX - total) / units[u].sec)
			total = UINT64_MAX;
		else
			total += v * units[u].sec;
		next_unit = u + 1;
		p++;
	}
	if (total > CONF_DURATION_MAX_SEC)
		return -ERANGE;
	*ret_sec = total;
	return 0;
}

bool conf_ip_is_valid(const char *text)
{
	unsigned char addr[sizeof(struct in6_addr)];

	if (!text)
		return false;
	return inet_pton(AF_INET, text, addr) == 1 || inet_pton(AF_INET6, text, addr) == 1;
}

bool conf_journal_stream_matches(const char *journal_stream, uint64_t dev, uint64_t ino)
{
	const char *p = journal_stream;
	uint64_t d, i;

	if (!p || parse_u64(p, &p, &d) < 0 || *p++ != ':' || parse_u64(p, &p, &i) < 0 || *p)
		return false;
	return d == dev && i == ino;
}

size_t conf_log_escape(const char *in, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c >= 0x20 && c != 0x7f) {
			if (out)
				out[o] = (char)c;
			o++;
			continue;
		}
		if (out) {
			out[o] = '\\';
			out[o + 1] = 'x';
			out[o + 2] = hex[c >> 4];
			out[o + 3] = hex[c & 0xf];
		}
		o += 4;
	}
	if (out)
		out[o] = '\0';
	return o;
}

char *conf_strdup_or_null(const char *s, bool *ok)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*ok = false;
	return d;
}

bool conf_has_suffix(const char *s, const char *suffix)
{
	size_t n, m;

	if (!s || !suffix)
		return false;
	n = strlen(s);
	m = strlen(suffix);
	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

char *conf_format_duration(uint64_t sec, char *buf, size_t len)
{
	static const struct {
		char unit;
		uint64_t sec;
	} units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	size_t o = 0, u;

	if (sec == 0) {
		snprintf(buf, len, "0");
		return buf;
	}
	buf[0] = '\0';
	for (u = 0; u < sizeof(units) / sizeof(units[0]) && o < len; u++) {
		uint64_t v = sec / units[u].sec;

		if (!v)
			continue;
		sec %= units[u].sec;
		o += (size_t)snprintf(buf + o, len - o, "%llu%c", (unsigned long long)v,
				      units[u].unit);
	}
	return buf;
}

char *conf_server_type_names(char *buf, size_t len)
{
	const struct conf_server_type *t;
	size_t n, i, o = 0;

	t = conf_server_type_list(&n);
	buf[0] = '\0';
	for (i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", t[i].name);
	return buf;
}

/* ---- typed readers ---- */

int conf_fail(const struct conf_ctx *ctx, const struct conf_node *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_err_vset(ctx->err, ctx->file, n ? n->line : 0, n ? n->column : 0, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int conf_check_keys(const struct conf_ctx *ctx, const struct conf_node *map,
		    const char *const *allowed)
{
	size_t i, k;

	for (i = 0; i < map->count; i++) {
		const struct conf_node *key = map->items[2 * i];
		char list[768], q[CONF_QUOTE_MAX];
		size_t o = 0;

		for (k = 0; allowed[k]; k++)
			if (strcmp(allowed[k], key->text) == 0)
				break;
		if (allowed[k])
			continue;
		list[0] = '\0';
		for (k = 0; allowed[k] && o < sizeof(list); k++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "",
					      allowed[k]);
		return conf_fail(ctx, key, "unknown key %s; expected one of: %s",
				 conf_quote(key->text, q, sizeof(q)), list);
	}
	return 0;
}

int conf_expect_map(const struct conf_ctx *ctx, const struct conf_node *n, const char *key)
{
	if (n->kind == CONF_NODE_MAP)
		return 0;
	return conf_fail(ctx, n, "%s: expected a mapping of \"key: value\" lines, not %s", key,
			 conf_node_kind_name(n));
}

int conf_expect_seq(const struct conf_ctx *ctx, const struct conf_node *n, const char *key)
{
	if (n->kind == CONF_NODE_SEQ)
		return 0;
	return conf_fail(ctx, n,
			 "%s: expected a list (lines starting with \"- \" or [a, b]), not %s", key,
			 conf_node_kind_name(n));
}

/*
 * Parse a decimal whole number. Returns 0, -ERANGE (negative or too large, *ret_neg
 * tells which), -EDOM (leading zero) or -EINVAL (not a number).
 */
static int parse_decimal(const char *s, uint64_t *ret, bool *ret_neg)
{
	const char *p = s;
	uint64_t v = 0;

	*ret_neg = false;
	if (*p == '-') {
		*ret_neg = true;
		p++;
	}
	if (!*p)
		return -EINVAL;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return -EINVAL;
	if (*ret_neg)
		return -ERANGE;
	if (p[0] == '0' && p[1])
		return -EDOM;
	for (; *p; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*ret = v;
	return 0;
}

int conf_read_uint(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		   uint64_t min, uint64_t max, const char *unit, uint64_t *ret)
{
	char q[CONF_QUOTE_MAX];
	uint64_t v = 0;
	bool neg;
	int r;

	if (n->kind != CONF_NODE_SCALAR)
		return conf_fail(ctx, n, "%s: expected a whole number, not %s; use a whole number "
				 "from %llu to %llu%s",
				 key, conf_node_kind_name(n), (unsigned long long)min,
				 (unsigned long long)max, unit);
	r = parse_decimal(n->text, &v, &neg);
	if (r == -EINVAL)
		return conf_fail(ctx, n, "%s: %s is not a whole number; use a whole number from "
				 "%llu to %llu%s",
				 key, conf_quote(n->text, q, sizeof(q)), (unsigned long long)min,
				 (unsigned long long)max, unit);
	if (r == -EDOM) {
		const char *digits = n->text;

		while (digits[0] == '0' && digits[1])
			digits++;
		return conf_fail(ctx, n, "%s: %s has a leading zero, which some YAML readers take "
				 "as octal; write %s",
				 key, n->text, digits);
	}
	if (r == -ERANGE && !neg)
		return conf_fail(ctx, n, "%s: %s is too large; use a whole number from %llu to "
				 "%llu%s",
				 key, n->text, (unsigned long long)min, (unsigned long long)max,
				 unit);
	if (r < 0 || v < min || v > max)
		return conf_fail(ctx, n, "%s: %s is out of range; use a whole number from %llu to "
				 "%llu%s",
				 key, n->text, (unsigned long long)min, (unsigned long long)max,
				 unit);
	*ret = v;
	return 0;
}

int conf_read_seconds(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		      uint64_t min, uint64_t max, uint64_t *ret)
{
	char q[CONF_QUOTE_MAX];
	uint64_t v;
	int r;

	if (n->kind != CONF_NODE_SCALAR)
		return conf_fail(ctx, n, "%s: expected a number of seconds, not %s; use %llu to "
				 "%llu seconds",
				 key, conf_node_kind_name(n), (unsigned long long)min,
				 (unsigned long long)max);
	/* only a negative duration is out of range; "-" and any other text is not one */
	if (n->text[0] == '-' && conf_parse_duration(n->text + 1, &v) != -EINVAL)
		return conf_fail(ctx, n, "%s: %s is out of range; use %llu to %llu seconds", key,
				 n->text, (unsigned long long)min, (unsigned long long)max);
	r = conf_parse_duration(n->text, &v);
	if (r == -EINVAL)
		return conf_fail(ctx, n, "%s: %s is not a number of seconds; use a whole number "
				 "or a duration such as \"30s\" or \"10m\"",
				 key, conf_quote(n->text, q, sizeof(q)));
	if (r < 0 || v < min || v > max)
		return conf_fail(ctx, n, "%s: %s is out of range; use %llu to %llu seconds", key,
				 n->text, (unsigned long long)min, (unsigned long long)max);
	*ret = v;
	return 0;
}

int conf_read_bool(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		   bool *ret)
{
	static const char *const yes[] = { "true", "yes", "on" };
	static const char *const no[] = { "false", "no", "off" };
	char q[CONF_QUOTE_MAX];
	size_t i;

	if (n->kind == CONF_NODE_SCALAR) {
		for (i = 0; i < 3; i++) {
			if (strcasecmp(n->text, yes[i]) == 0) {
				*ret = true;
				return 0;
			}
			if (strcasecmp(n->text, no[i]) == 0) {
				*ret = false;
				return 0;
			}
		}
		return conf_fail(ctx, n, "%s: %s is not true or false; use true or false", key,
				 conf_quote(n->text, q, sizeof(q)));
	}
	return conf_fail(ctx, n, "%s: expected true or false, not %s", key,
			 conf_node_kind_name(n));
}

int conf_read_string(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		     bool multiline, const char **ret)
{
	const unsigned char *p;

	if (n->kind != CONF_NODE_SCALAR)
		return conf_fail(ctx, n, "%s: expected a string, not %s", key,
				 conf_node_kind_name(n));
	if (n->text_len == 0)
		return conf_fail(ctx, n, "%s: the value is empty; give a value or remove the key",
				 key);
	for (p = (const unsigned char *)n->text; *p; p++) {
		if (*p == '\t' || (multiline && *p == '\n'))
			continue;
		if (*p < 0x20 || *p == 0x7f)
			return conf_fail(ctx, n, "%s: contains control character 0x%02x; remove it",
					 key, *p);
	}
	*ret = n->text;
	return 0;
}

int conf_read_name(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		   const char *what, const char **ret)
{
	char q[CONF_QUOTE_MAX];
	const char *s;
	int r;

	r = conf_read_string(ctx, n, key, false, &s);
	if (r < 0)
		return r;
	if (!conf_name_is_valid(s))
		return conf_fail(ctx, n, "%s: %s is not a valid %s; use 1 to %d lowercase letters, "
				 "digits, '.', '_' or '-', starting with a letter or digit",
				 key, conf_quote(s, q, sizeof(q)), what, CONF_NAME_MAX);
	*ret = s;
	return 0;
}

const char *conf_device_ip_problem(const char *ip)
{
	unsigned char a[sizeof(struct in6_addr)];
	static const unsigned char zero[sizeof(struct in6_addr)];

	if (ip && inet_pton(AF_INET, ip, a) == 1) {
		if (a[0] == 0)
			return "is the unspecified address (0.0.0.0/8, no address)";
		if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
			return "is the broadcast address";
		if (a[0] == 127)
			return "is a loopback address (127.0.0.0/8)";
		if (a[0] >= 224 && a[0] <= 239)
			return "is a multicast address (224.0.0.0/4)";
		if (a[0] == 169 && a[1] == 254)
			return "is a link-local address (169.254.0.0/16)";
		return NULL;
	}
	if (!ip || inet_pton(AF_INET6, ip, a) != 1)
		return "is not an IP address";
	if (memcmp(a, zero, sizeof(a)) == 0)
		return "is the unspecified address (::, no address)";
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return "is the loopback address (::1)";
	if (a[0] == 0xff)
		return "is a multicast address (ff00::/8)";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "is a link-local address (fe80::/10)";
	return NULL;
}

int conf_read_ip(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		 char **ret, int *ret_family)
{
	unsigned char addr[sizeof(struct in6_addr)];
	char text[INET6_ADDRSTRLEN], q[CONF_QUOTE_MAX];
	int family = AF_INET;
	char *copy;

	if (n->kind != CONF_NODE_SCALAR)
		return conf_fail(ctx, n, "%s: expected an IP address, not %s", key,
				 conf_node_kind_name(n));
	if (inet_pton(AF_INET, n->text, addr) != 1) {
		family = AF_INET6;
		if (inet_pton(AF_INET6, n->text, addr) != 1)
			return conf_fail(ctx, n, "%s: %s is not an IP address; use an IPv4 address "
					 "such as 10.0.1.1 or an IPv6 address such as fd00::1",
					 key, conf_quote(n->text, q, sizeof(q)));
	}
	/* Canonical text, so that "fd00::1" and "FD00:0::1" are seen as one address. */
	if (!inet_ntop(family, addr, text, sizeof(text)))
		return conf_fail(ctx, n, "%s: cannot print address %s", key,
				 conf_quote(n->text, q, sizeof(q)));
	copy = strdup(text);
	if (!copy)
		return conf_err_nomem(ctx->err, ctx->file);
	*ret = copy;
	if (ret_family)
		*ret_family = family;
	return 0;
}

int conf_read_server_type(const struct conf_ctx *ctx, const struct conf_node *n,
			  const char *key, const struct conf_server_type **ret)
{
	const struct conf_server_type *t;
	char names[256], q[CONF_QUOTE_MAX];
	const char *s;
	int r;

	r = conf_read_string(ctx, n, key, false, &s);
	if (r < 0)
		return r;
	t = conf_server_type_find(s);
	if (!t)
		return conf_fail(ctx, n, "%s: %s is not a known server type; use one of: %s", key,
				 conf_quote(s, q, sizeof(q)),
				 conf_server_type_names(names, sizeof(names)));
	*ret = t;
	return 0;
}

/* ---- string map ---- */

static size_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

int conf_strmap_init(struct conf_strmap *m, size_t expected)
{
	size_t cap = 16;

	while (cap < 2 * expected)
		cap *= 2;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->values = calloc(cap, sizeof(*m->values));
	if (!m->keys || !m->values) {
		free(m->keys);
		free(m->values);
		m->keys = NULL;
		m->values = NULL;
		return -ENOMEM;
	}
	m->cap = cap;
	m->count = 0;
	return 0;
}

void conf_strmap_release(struct conf_strmap *m)
{
	free(m->keys);
	free(m->values);
	m->keys = NULL;
	m->values = NULL;
	m->cap = m->count = 0;
}

static int strmap_grow(struct conf_strmap *m)
{
	struct conf_strmap bigger;
	size_t i;
	int r;

	r = conf_strmap_init(&bigger, m->cap);
	if (r < 0)
		return r;
	for (i = 0; i < m->cap; i++)
		if (m->keys[i])
			conf_strmap_add(&bigger, m->keys[i], m->values[i], NULL);
	conf_strmap_release(m);
	*m = bigger;
	return 0;
}

int conf_strmap_add(struct conf_strmap *m, const char *key, const void *value,
		    const void **ret_old)
{
	size_t i;

	if (2 * (m->count + 1) > m->cap) {
		int r = strmap_grow(m);

		if (r < 0)
			return r;
	}
	for (i = str_hash(key) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (strcmp(m->keys[i], key) == 0) {
			if (ret_old)
				*ret_old = m->values[i];
			return 1;
		}
	}
	m->keys[i] = key;
	m->values[i] = value;
	m->count++;
	return 0;
}

/* ---- YAML output ---- */

struct conf_out {
	yaml_emitter_t emitter;
	char *buf;
	size_t len, cap;
	bool failed;
};

static int out_write(void *data, unsigned char *bytes, size_t size)
{
	struct conf_out *o = data;

	if (o->len + size + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 1024;
		char *p;

		while (o->len + size + 1 > cap)
			cap *= 2;
		p = realloc(o->buf, cap);
		if (!p)
			return 0;
		o->buf = p;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, bytes, size);
	o->len += size;
	o->buf[o->len] = '\0';
	return 1;
}

static int out_emit(struct conf_out *o, yaml_event_t *ev, int initialized)
{
	if (o->failed) {
		if (initialized)
			yaml_event_delete(ev);
		return -ENOMEM;
	}
	/* yaml_emitter_emit() takes the event in every case. */
	if (!initialized || !yaml_emitter_emit(&o->emitter, ev)) {
		o->failed = true;
		return -ENOMEM;
	}
	return 0;
}

struct conf_out *conf_out_new(void)
{
	struct conf_out *o = calloc(1, sizeof(*o));
	yaml_event_t ev;

	if (!o)
		return NULL;
	if (!yaml_emitter_initialize(&o->emitter)) {
		free(o);
		return NULL;
	}
	yaml_emitter_set_output(&o->emitter, out_write, o);
	yaml_emitter_set_unicode(&o->emitter, 1);
	yaml_emitter_set_width(&o->emitter, -1);
	yaml_emitter_set_indent(&o->emitter, 2);
	out_emit(o, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	out_emit(o, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	if (o->failed) {
		conf_out_free(o);
		return NULL;
	}
	return o;
}

void conf_out_free(struct conf_out *o)
{
	if (!o)
		return;
	yaml_emitter_delete(&o->emitter);
	free(o->buf);
	free(o);
}

int conf_out_finish(struct conf_out *o, char **ret_buf, size_t *ret_len)
{
	yaml_event_t ev;

	out_emit(o, &ev, yaml_document_end_event_initialize(&ev, 1));
	out_emit(o, &ev, yaml_stream_end_event_initialize(&ev));
	if (!o->failed && !yaml_emitter_flush(&o->emitter))
		o->failed = true;
	if (o->failed || !o->buf) {
		conf_out_free(o);
		return -ENOMEM;
	}
	/* kept for the life of a job (its spec file): no slack of the doubling above */
	if (o->cap > o->len + 1) {
		char *p = realloc(o->buf, o->len + 1);

		if (!p) {
			conf_out_free(o);
			return -ENOMEM;
		}
		o->buf = p;
	}
	*ret_buf = o->buf;
	*ret_len = o->len;
	o->buf = NULL;
	conf_out_free(o);
	return 0;
}

int conf_out_map_start(struct conf_out *o, bool flow)
{
	yaml_event_t ev;

	return out_emit(o, &ev,
			yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							    flow ? YAML_FLOW_MAPPING_STYLE :
								   YAML_BLOCK_MAPPING_STYLE));
}

int conf_out_map_end(struct conf_out *o)
{
	yaml_event_t ev;

	return out_emit(o, &ev, yaml_mapping_end_event_initialize(&ev));
}

int conf_out_seq_start(struct conf_out *o, bool flow)
{
	yaml_event_t ev;

	return out_emit(o, &ev,
			yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							     flow ? YAML_FLOW_SEQUENCE_STYLE :
								    YAML_BLOCK_SEQUENCE_STYLE));
}

int conf_out_seq_end(struct conf_out *o)
{
	yaml_event_t ev;

	return out_emit(o, &ev, yaml_sequence_end_event_initialize(&ev));
}

static int out_scalar(struct conf_out *o, const char *s, bool plain_ok)
{
	yaml_event_t ev;

	/* plain_implicit = 0 with no tag makes the emitter quote the value. */
	return out_emit(o, &ev,
			yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
						     (int)strlen(s), plain_ok, 1,
						     YAML_ANY_SCALAR_STYLE));
}

/* Would a YAML reader take plain @s for something other than a string? */
static bool looks_typed(const char *s)
{
	static const char *const words[] = { "true",  "false", "yes", "no", "on", "off", "y",
					     "n",     "null",  "~",   ".inf", "-.inf", "+.inf",
					     ".nan" };
	const char *p = s;
	size_t i;

	if (!*s)
		return true;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	/* Numbers in any YAML 1.1/1.2 spelling: 8, -1, 1.5, 1e3, 0x1f, 0o17, 1:30, 1_000. */
	if (*p == '-' || *p == '+')
		p++;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'o' || p[1] == 'b') && p[2])
		return strspn(p + 2, "0123456789_abcdefABCDEF") == strlen(p + 2);
	if (*p == '.')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	/* Two dots make a version or an IPv4 address, never a number. */
	if (strchr(p, '.') && strchr(p, '.') != strrchr(p, '.'))
		return false;
	return strspn(p, "0123456789_.eE+-:") == strlen(p);
}

int conf_out_str(struct conf_out *o, const char *s)
{
	return out_scalar(o, s, !looks_typed(s));
}

int conf_out_str_or_null(struct conf_out *o, const char *s)
{
	return s ? conf_out_str(o, s) : conf_out_null(o);
}

int conf_out_key(struct conf_out *o, const char *key)
{
	return out_scalar(o, key, true);
}

int conf_out_uint(struct conf_out *o, uint64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
	return out_scalar(o, text, true);
}

int conf_out_bool(struct conf_out *o, bool v)
{
	return out_scalar(o, v ? "true" : "false", true);
}

int conf_out_null(struct conf_out *o)
{
	return out_scalar(o, "null", true);
}

const char *conf_plural(unsigned long long n, const char *singular, const char *plural)
{
	return n == 1 ? singular : plural;
}
