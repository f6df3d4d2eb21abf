/* SPDX-License-Identifier: MIT */
/*
 * hccl_check: rank-table rules, see hccl_check.h for the list and the sources.
 *
 * The checks run in the documented order and stop at the first broken rule, so each
 * later check may rely on everything before it (e.g. the rank pass knows every
 * rank_id parsed, the super pod pass knows every server_id is unique).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <jansson.h>

#include "hccl_check.h"

/* User strings shown in a message are cut after this many bytes. */
#define QUOTE_MAX 64
/* Longest canonical decimal accepted: 9 digits always fit an unsigned. */
#define DECIMAL_DIGITS_MAX 9
/* Room for a JSON path in the all-strings walk; deeper paths are shown cut. */
#define PATH_MAX_BYTES 256

struct quoted {
	/* '"' + up to 4 bytes per input byte + "..." + '"' + NUL */
	char s[QUOTE_MAX * 4 + 8];
};

/* One device of the table, in document order (server by server, device by device). */
struct dev {
	size_t server; /* index in server_list */
	size_t index;  /* index in that server's device list */
	unsigned device_id;
	unsigned rank;
	unsigned super_device_id;  /* version "1.2" only */
	const char *device_id_str; /* borrowed from the document */
	const char *device_ip;	   /* borrowed from the document, NULL when absent */
};

struct ctx {
	char *why;
	size_t why_len;
	const struct hccl_check_opts *opts;
	unsigned device_id_bound; /* 0 = unbounded, else ids are < this */
	bool v12;
	json_t *server_list; /* borrowed from the document */
	size_t nservers;
	struct dev *devs; /* ndevs entries, owned */
	size_t ndevs;
	size_t *first_dev;    /* per server: index of its first entry in devs, owned */
	json_t *server_ids;   /* set: server_id -> server index, owned */
	json_t *device_ips;   /* set: normalized device_ip -> devs index, owned */
	int ip_family;	      /* family of the first device_ip, 0 before it */
	size_t npods;	      /* entries of super_pod_list (version "1.2"), 0 when none */
	size_t ip_family_dev; /* devs index of that first device_ip */
};

static int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->why_len) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->why_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int fail_nomem(struct ctx *c)
{
	if (c->why_len)
		snprintf(c->why, c->why_len, "out of memory");
	return -ENOMEM;
}

/* Allocations go through jansson's allocator so that tests can fail them. */
static void *zalloc_array(size_t n, size_t size)
{
	json_malloc_t malloc_fn;
	json_free_t free_fn;
	void *p;

	if (n == 0)
		n = 1;
	if (size && n > SIZE_MAX / size)
		return NULL;
	json_get_alloc_funcs(&malloc_fn, &free_fn);
	p = malloc_fn(n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

static void free_array(void *p)
{
	json_malloc_t malloc_fn;
	json_free_t free_fn;

	if (!p)
		return;
	json_get_alloc_funcs(&malloc_fn, &free_fn);
	free_fn(p);
}

/* "text" with quotes, escapes for '"', '\\' and control bytes, cut after QUOTE_MAX. */
static const char *quote(struct quoted *q, const char *s)
{
	size_t o = 0, i, cut = SIZE_MAX;

	if (strlen(s) > QUOTE_MAX) {
		/* cut before the UTF-8 character that holds byte QUOTE_MAX */
		cut = QUOTE_MAX;
		while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
			cut--;
	}
	q->s[o++] = '"';
	for (i = 0; s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i == cut) {
			memcpy(q->s + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\') {
			q->s[o++] = '\\';
			q->s[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(q->s + o, sizeof(q->s) - o, "\\x%02x", ch);
		} else {
			q->s[o++] = (char)ch;
		}
	}
	q->s[o++] = '"';
	q->s[o] = '\0';
	return q->s;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		break;
	}
	return "null";
}

/*
 * Canonical decimal: digits only, no leading zero, at most DECIMAL_DIGITS_MAX digits.
 * Returns 0, -EINVAL (not a decimal) or -ERANGE (too many digits).
 */
static int parse_decimal(const char *s, unsigned *ret)
{
	unsigned v = 0;
	size_t i;

	if (!s[0])
		return -EINVAL;
	for (i = 0; s[i]; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	if (s[0] == '0' && s[1])
		return -EINVAL;
	if (i > DECIMAL_DIGITS_MAX)
		return -ERANGE;
	for (i = 0; s[i]; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	*ret = v;
	return 0;
}

/* @path ("" for the top level) joined with @key into @buf. */
static const char *join(char *buf, size_t n, const char *path, const char *key)
{
	snprintf(buf, n, "%s%s%s", path, path[0] ? "." : "", key);
	return buf;
}

/*
 * String member @key of @obj (whose path is @path). Missing: *ret = NULL, and a
 * violation when @required. Present but not a string: always a violation (only
 * objects and arrays get here, rule 2 has caught the other kinds).
 */
static int get_string(struct ctx *c, json_t *obj, const char *path, const char *key, bool required,
		      const char *what, const char **ret)
{
	json_t *v = json_object_get(obj, key);
	char p[192];

	*ret = NULL;
	if (!v) {
		if (!required)
			return 0;
		return fail(c, "%s: missing (%s)", join(p, sizeof(p), path, key), what);
	}
	if (!json_is_string(v))
		return fail(c, "%s: %s where a string belongs (%s)", join(p, sizeof(p), path, key),
			    json_kind(v), what);
	*ret = json_string_value(v);
	return 0;
}

/* Required decimal string member; *ret its value, *ret_str (may be NULL) its text. */
static int get_decimal(struct ctx *c, json_t *obj, const char *path, const char *key,
		       const char *what, unsigned *ret, const char **ret_str)
{
	struct quoted q;
	const char *s;
	char p[192];
	int r;

	r = get_string(c, obj, path, key, true, what, &s);
	if (r < 0)
		return r;
	if (ret_str)
		*ret_str = s;
	r = parse_decimal(s, ret);
	if (r == -ERANGE)
		return fail(c, "%s: %s is too large (%s; at most %d digits)",
			    join(p, sizeof(p), path, key), quote(&q, s), what, DECIMAL_DIGITS_MAX);
	if (r < 0)
		return fail(c,
			    "%s: %s is not a decimal number (write digits only, e.g. \"0\", "
			    "without sign, spaces or leading zeros)",
			    join(p, sizeof(p), path, key), quote(&q, s));
	return 0;
}

/* Adds @key -> @index to the set @set; -EEXIST with *ret_index when it was there. */
static int set_add(json_t *set, const char *key, size_t index, size_t *ret_index)
{
	json_t *old = json_object_get(set, key);

	if (old) {
		*ret_index = (size_t)json_integer_value(old);
		return -EEXIST;
	}
	if (json_object_set_new(set, key, json_integer((json_int_t)index)) < 0)
		return -ENOMEM;
	return 0;
}

/* ---- rule 2: every leaf is a string ---- */

static bool is_identifier(const char *s)
{
	size_t i;

	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		return false;
	for (i = 1; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* Appends to the path in @path (length @len, room PATH_MAX_BYTES); returns new length. */
static size_t path_append(char *path, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static size_t path_append(char *path, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(path + len, PATH_MAX_BYTES - len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return len;
	if ((size_t)n >= PATH_MAX_BYTES - len)
		return PATH_MAX_BYTES - 1;
	return len + (size_t)n;
}

static int check_leaves(struct ctx *c, json_t *v, char *path, size_t len)
{
	struct quoted q;
	const char *key;
	json_t *child;
	size_t i, n;
	int r;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		json_object_foreach(v, key, child) {
			if (is_identifier(key))
				n = path_append(path, len, "%s%s", len ? "." : "", key);
			else
				n = path_append(path, len, "[%s]", quote(&q, key));
			r = check_leaves(c, child, path, n);
			path[len] = '\0';
			if (r < 0)
				return r;
		}
		return 0;
	case JSON_ARRAY:
		json_array_foreach(v, i, child) {
			n = path_append(path, len, "[%zu]", i);
			r = check_leaves(c, child, path, n);
			path[len] = '\0';
			if (r < 0)
				return r;
		}
		return 0;
	case JSON_STRING:
		return 0;
	case JSON_INTEGER:
		return fail(c,
			    "%s: %" JSON_INTEGER_FORMAT " is a JSON number (HCCL reads every "
			    "value as a string: write \"%" JSON_INTEGER_FORMAT "\")",
			    path, json_integer_value(v), json_integer_value(v));
	case JSON_REAL: {
		/* jansson prints 1.0 as "1.0", where %g would say 1 */
		char *text = json_dumps(v, JSON_ENCODE_ANY);

		if (!text)
			return fail_nomem(c);
		r = fail(c,
			 "%s: %s is a JSON number (HCCL reads every value as a string: write "
			 "\"%s\")",
			 path, text, text);
		free_array(text);
		return r;
	}
	case JSON_TRUE:
	case JSON_FALSE:
		return fail(c, "%s: %s is a JSON boolean (HCCL reads every value as a string)",
			    path, json_is_true(v) ? "true" : "false");
	case JSON_NULL:
		break;
	}
	return fail(c, "%s: null (HCCL reads every value as a string: give one or drop the key)",
		    path);
}

/* ---- rules 6 and 7: servers and devices ---- */

static int check_ip(struct ctx *c, const char *path, const char *s, int *ret_family, char *norm,
		    size_t norm_len)
{
	unsigned char addr[sizeof(struct in6_addr)];
	struct quoted q;

	if (inet_pton(AF_INET, s, addr) == 1)
		*ret_family = AF_INET;
	else if (inet_pton(AF_INET6, s, addr) == 1)
		*ret_family = AF_INET6;
	else
		return fail(c,
			    "%s: %s is not an IPv4 or IPv6 address (write a literal such as "
			    "\"192.168.1.8\", no host name, prefix or port)",
			    path, quote(&q, s));
	if (norm && !inet_ntop(*ret_family, addr, norm, (socklen_t)norm_len))
		norm[0] = '\0';
	return 0;
}

/*
 * Why the address @a (@family) cannot be an NPU's RoCE address, or NULL [IP]: HCCL reads
 * the unspecified address as "no address" (HcclIpAddress::IsInvalid), and broadcast,
 * loopback, multicast and link-local addresses reach no other server's NIC.
 */
static const char *ip_unusable(int family, const unsigned char *a)
{
	static const unsigned char zero[16];

	if (family == AF_INET) {
		if (a[0] == 0)
			return "the unspecified address";
		if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
			return "the broadcast address";
		if (a[0] == 127)
			return "a loopback address";
		if ((a[0] & 0xf0) == 0xe0)
			return "a multicast address";
		if (a[0] == 169 && a[1] == 254)
			return "a link-local address";
		return NULL;
	}
	if (memcmp(a, zero, 16) == 0)
		return "the unspecified address";
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return "the loopback address";
	if (a[0] == 0xff)
		return "a multicast address";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "a link-local address";
	return NULL;
}

static int fail_duplicate_ip(struct ctx *c, const char *path, const char *ip,
			     const struct dev *first)
{
	struct quoted q1, q2;

	if (strcmp(ip, first->device_ip) == 0)
		return fail(c,
			    "%s: %s is also the address of server_list[%zu].device[%zu] (each NPU "
			    "has its own RoCE address)",
			    path, quote(&q1, ip), first->server, first->index);
	/* the same address spelt another way, e.g. "fd00::1" and "fd00:0::1" */
	return fail(c,
		    "%s: %s is also the address of server_list[%zu].device[%zu], written %s "
		    "there (each NPU has its own RoCE address)",
		    path, quote(&q1, ip), first->server, first->index,
		    quote(&q2, first->device_ip));
}

static int check_device(struct ctx *c, size_t s, size_t d, json_t *dev, json_t *ids,
			struct dev *out)
{
	char path[80], key_path[128], norm[INET6_ADDRSTRLEN];
	struct quoted q1;
	const char *str;
	size_t other;
	int family, r;

	snprintf(path, sizeof(path), "server_list[%zu].device[%zu]", s, d);
	if (!json_is_object(dev))
		return fail(c,
			    "%s: %s where an object describing one NPU belongs "
			    "(device_id, device_ip, rank_id)",
			    path, json_kind(dev));
	out->server = s;
	out->index = d;

	/* device_id */
	r = get_decimal(c, dev, path, "device_id", "the physical NPU id on its server",
			&out->device_id, &out->device_id_str);
	if (r < 0)
		return r;
	str = out->device_id_str;
	join(key_path, sizeof(key_path), path, "device_id");
	if (c->device_id_bound && out->device_id >= c->device_id_bound)
		return fail(c,
			    "%s: %s is out of range 0..%u (%u NPUs per server; device_id is "
			    "the physical id)",
			    key_path, quote(&q1, str), c->device_id_bound - 1, c->device_id_bound);
	r = set_add(ids, str, d, &other);
	if (r == -EEXIST)
		return fail(c,
			    "%s: %s is also server_list[%zu].device[%zu].device_id (each NPU "
			    "appears once per server)",
			    key_path, quote(&q1, str), s, other);
	if (r < 0)
		return fail_nomem(c);

	/* device_ip */
	if (c->opts->ring_910)
		r = get_string(c, dev, path, "device_ip", true,
			       "the Atlas 800 (910) rank table gives every NPU its RoCE address",
			       &str);
	else
		r = get_string(c, dev, path, "device_ip",
			       c->nservers > 1 && !(c->v12 && c->npods <= 1),
			       c->v12 ? "a table of more than one super pod needs each NPU's RoCE "
					"address" :
					"a table of more than one server needs each NPU's RoCE "
					"address",
			       &str);
	if (r < 0)
		return r;
	out->device_ip = str;
	if (str) {
		const struct dev *first;
		unsigned char addr[sizeof(struct in6_addr)];
		const char *why;

		join(key_path, sizeof(key_path), path, "device_ip");
		r = check_ip(c, key_path, str, &family, norm, sizeof(norm));
		if (r < 0)
			return r;
		if (inet_pton(family, str, addr) == 1 && (why = ip_unusable(family, addr)))
			return fail(c,
				    "%s: %s is %s (a device IP is the unicast address of the "
				    "NPU's RoCE NIC)",
				    key_path, quote(&q1, str), why);
		if (!c->ip_family) {
			c->ip_family = family;
			c->ip_family_dev = (size_t)(out - c->devs);
		} else if (family != c->ip_family) {
			first = &c->devs[c->ip_family_dev];
			return fail(c,
				    "%s: %s is %s but server_list[%zu].device[%zu].device_ip is "
				    "%s (all device IPs of a table are of one family)",
				    key_path, quote(&q1, str), family == AF_INET ? "IPv4" : "IPv6",
				    first->server, first->index,
				    c->ip_family == AF_INET ? "IPv4" : "IPv6");
		}
		r = set_add(c->device_ips, norm[0] ? norm : str, (size_t)(out - c->devs), &other);
		if (r == -EEXIST)
			return fail_duplicate_ip(c, key_path, str, &c->devs[other]);
		if (r < 0)
			return fail_nomem(c);
	}

	/* rank_id: format here, values in the rank pass */
	r = get_decimal(c, dev, path, "rank_id", "the rank of this NPU, 0..N-1", &out->rank, NULL);
	if (r < 0)
		return r;

	if (c->v12) {
		r = get_decimal(c, dev, path, "super_device_id",
				"a version \"1.2\" table gives each NPU's id in its super pod",
				&out->super_device_id, NULL);
		if (r < 0)
			return r;
		if (c->opts->sdid_layout) {
			unsigned v = out->super_device_id, dev_field = v & 0xffff;

			join(key_path, sizeof(key_path), path, "super_device_id");
			if (dev_field != out->device_id ||
			    ((v >> 18) & 0xf) * 2 + ((v >> 16) & 0x3) != dev_field)
				return fail(c,
					    "%s: \"%u\" is not the SDID of device %u (its device "
					    "field is %u, chip %u die %u; device = chip * 2 + die)",
					    key_path, v, out->device_id, dev_field, (v >> 18) & 0xf,
					    (v >> 16) & 0x3);
			if ((v >> 22) > 47)
				return fail(c,
					    "%s: \"%u\" has server index %u (a super pod numbers "
					    "its servers 0 to 47)",
					    key_path, v, v >> 22);
			if (d > 0 && (c->devs[c->first_dev[s]].super_device_id >> 22) != (v >> 22))
				return fail(c,
					    "%s: \"%u\" is of server index %u but "
					    "server_list[%zu].device[0] is of server index %u (one "
					    "server is at one place of its super pod)",
					    key_path, v, v >> 22, s,
					    c->devs[c->first_dev[s]].super_device_id >> 22);
		}
	}
	return 0;
}

static int check_ring_910(struct ctx *c, size_t s, const struct dev *devs, size_t n)
{
	unsigned ring = devs[0].device_id / 4;
	size_t i;

	if (n != 1 && n != 2 && n != 4 && n != 8)
		return fail(c,
			    "server_list[%zu].device: %zu NPUs on one 910 server (it takes 1, 2, "
			    "4 or 8: two HCCS rings of 4)",
			    s, n);
	if (n == 8)
		return 0;
	for (i = 1; i < n; i++) {
		unsigned other = devs[i].device_id / 4;

		if (other == ring)
			continue;
		return fail(c,
			    "server_list[%zu].device[%zu].device_id: \"%u\" is in HCCS ring %u-%u "
			    "but server_list[%zu].device[0].device_id \"%u\" is in ring %u-%u "
			    "(a 910 server using fewer than 8 NPUs keeps them inside one ring)",
			    s, devs[i].index, devs[i].device_id, other * 4, other * 4 + 3, s,
			    devs[0].device_id, ring * 4, ring * 4 + 3);
	}
	return 0;
}

static int check_server(struct ctx *c, size_t s, json_t *srv, size_t *next_dev)
{
	static const char *const ip_keys[] = { "host_ip", "pod_ip" };
	char path[48], key_path[96];
	struct quoted q;
	json_t *devices, *dev, *ids;
	const char *str;
	size_t i, d, other;
	int family, r;

	snprintf(path, sizeof(path), "server_list[%zu]", s);
	if (!json_is_object(srv))
		return fail(c, "%s: %s where an object describing one server belongs", path,
			    json_kind(srv));

	r = get_string(c, srv, path, "server_id", true, "each server has a unique id", &str);
	if (r < 0)
		return r;
	join(key_path, sizeof(key_path), path, "server_id");
	if (!str[0])
		return fail(c, "%s: empty (each server has a unique, non-empty id)", key_path);
	if (strlen(str) > HCCL_CHECK_SERVER_ID_MAX)
		return fail(c, "%s: %s is %zu bytes long (HCCL takes at most %d)", key_path,
			    quote(&q, str), strlen(str), HCCL_CHECK_SERVER_ID_MAX);
	r = set_add(c->server_ids, str, s, &other);
	if (r == -EEXIST)
		return fail(c,
			    "%s: %s is also server_list[%zu].server_id (server ids are unique "
			    "in a table)",
			    key_path, quote(&q, str), other);
	if (r < 0)
		return fail_nomem(c);

	for (i = 0; i < sizeof(ip_keys) / sizeof(ip_keys[0]); i++) {
		r = get_string(c, srv, path, ip_keys[i], false, "an IP address", &str);
		if (r < 0)
			return r;
		if (!str)
			continue;
		r = check_ip(c, join(key_path, sizeof(key_path), path, ip_keys[i]), str, &family,
			     NULL, 0);
		if (r < 0)
			return r;
	}

	r = get_string(c, srv, path, "host_nic_ip", false, "\"reserve\"", &str);
	if (r < 0)
		return r;
	if (str && strcmp(str, "reserve") != 0)
		return fail(c,
			    "%s.host_nic_ip: %s should be \"reserve\" (HCCL reserves the field; "
			    "drop it or write \"reserve\")",
			    path, quote(&q, str));

	devices = json_object_get(srv, "device");
	if (!devices)
		return fail(c, "%s.device: missing (each server lists the NPUs it gives the job)",
			    path);
	if (!json_is_array(devices))
		return fail(c, "%s.device: %s where an array of NPUs belongs", path,
			    json_kind(devices));
	if (json_array_size(devices) == 0)
		return fail(c,
			    "%s.device: empty (each server gives the job at least one NPU; "
			    "drop servers without any)",
			    path);

	ids = json_object();
	if (!ids)
		return fail_nomem(c);
	c->first_dev[s] = *next_dev;
	r = 0;
	json_array_foreach(devices, d, dev) {
		r = check_device(c, s, d, dev, ids, &c->devs[*next_dev]);
		if (r < 0)
			break;
		(*next_dev)++;
	}
	json_decref(ids);
	if (r < 0)
		return r;

	if (c->opts->ring_910)
		return check_ring_910(c, s, &c->devs[c->first_dev[s]], json_array_size(devices));
	return 0;
}

/* ---- rule 9: ranks ---- */

static int check_ranks(struct ctx *c)
{
	size_t n = c->ndevs, k, missing, s, start, count;
	size_t *first; /* per rank < n: 1 + devs index of the first device holding it */
	const struct dev *d, *o;
	int r = 0;

	first = zalloc_array(n, sizeof(*first));
	if (!first)
		return fail_nomem(c);
	for (k = 0; k < n; k++)
		if (c->devs[k].rank < n && !first[c->devs[k].rank])
			first[c->devs[k].rank] = k + 1;

	for (k = 0; k < n && r == 0; k++) {
		d = &c->devs[k];
		if (d->rank >= n) {
			for (missing = 0; missing < n && first[missing]; missing++)
				;
			r = fail(c,
				 "server_list[%zu].device[%zu].rank_id: \"%u\" is out of range "
				 "(the table has %zu NPUs, so ranks are 0..%zu; rank %zu is "
				 "missing)",
				 d->server, d->index, d->rank, n, n - 1, missing);
		} else if (first[d->rank] != k + 1) {
			o = &c->devs[first[d->rank] - 1];
			r = fail(c,
				 "server_list[%zu].device[%zu].rank_id: \"%u\" is also "
				 "server_list[%zu].device[%zu].rank_id (each rank appears once)",
				 d->server, d->index, d->rank, o->server, o->index);
		}
	}
	free_array(first);
	if (r < 0)
		return r;

	/*
	 * Now the ranks are a permutation of 0..n-1; rank k must sit on the k-th device.
	 * At the first one that does not, tell a server holding its own block in the
	 * wrong order from a server holding ranks of another block.
	 */
	for (k = 0; k < n; k++) {
		size_t j;

		d = &c->devs[k];
		if (d->rank == k)
			continue;
		s = d->server;
		start = c->first_dev[s];
		count = (s + 1 < c->nservers ? c->first_dev[s + 1] : n) - start;
		for (j = start; j < start + count; j++)
			if (c->devs[j].rank < start || c->devs[j].rank >= start + count)
				break;
		if (j == start + count)
			return fail(c,
				    "server_list[%zu].device[%zu].rank_id: \"%u\" should be "
				    "\"%zu\" (ranks ascend along each server's device list)",
				    d->server, d->index, d->rank, k);
		return fail(c,
			    "server_list[%zu].device[%zu].rank_id: \"%u\" should be \"%zu\" "
			    "(ranks are contiguous per server in server order: server_list[%zu] "
			    "holds ranks %zu..%zu)",
			    d->server, d->index, d->rank, k, s, start, start + count - 1);
	}

	if (c->opts->expect_ranks && n != c->opts->expect_ranks)
		return fail(c, "server_list: the table holds %zu ranks, expected %u", n,
			    c->opts->expect_ranks);
	return 0;
}

/* ---- rule 10: super pods ---- */

struct pods {
	size_t *pod_of;	    /* per server: 1 + index of its pod in super_pod_list, 0 none */
	size_t *pos_in_pod; /* per server: index in that pod's server_list */
	size_t *last;	    /* per pod: 1 + last server index met while walking server_list */
	json_t *pod_ids;    /* set: super_pod_id -> pod index */
	json_t *sdids;	    /* set: "<pod>:<super_device_id>" -> devs index */
};

static const char *pod_name(json_t *pod_list, size_t p, struct quoted *q)
{
	return quote(
		q, json_string_value(json_object_get(json_array_get(pod_list, p), "super_pod_id")));
}

static int check_pod(struct ctx *c, struct pods *pp, json_t *pod_list, size_t p, json_t *pod)
{
	char path[48], key_path[96];
	struct quoted q1, q2;
	json_t *servers, *entry;
	const char *str;
	size_t j, s, other;
	json_t *v;
	int r;

	snprintf(path, sizeof(path), "super_pod_list[%zu]", p);
	if (!json_is_object(pod))
		return fail(c,
			    "%s: %s where an object describing one super pod belongs "
			    "(super_pod_id, server_list)",
			    path, json_kind(pod));
	r = get_string(c, pod, path, "super_pod_id", true, "each super pod has a unique id", &str);
	if (r < 0)
		return r;
	if (!str[0])
		return fail(c, "%s.super_pod_id: empty (each super pod has a unique, non-empty id)",
			    path);
	r = set_add(pp->pod_ids, str, p, &other);
	if (r == -EEXIST)
		return fail(c,
			    "%s.super_pod_id: %s is also super_pod_list[%zu].super_pod_id (super "
			    "pod ids are unique)",
			    path, quote(&q1, str), other);
	if (r < 0)
		return fail_nomem(c);

	servers = json_object_get(pod, "server_list");
	if (!servers)
		return fail(c, "%s.server_list: missing (each super pod lists its servers)", path);
	if (!json_is_array(servers))
		return fail(c, "%s.server_list: %s where an array of {\"server_id\": ...} belongs",
			    path, json_kind(servers));
	if (json_array_size(servers) == 0)
		return fail(c, "%s.server_list: empty (drop super pods without servers)", path);

	json_array_foreach(servers, j, entry) {
		snprintf(key_path, sizeof(key_path), "%s.server_list[%zu]", path, j);
		if (!json_is_object(entry))
			return fail(c, "%s: %s where {\"server_id\": ...} belongs", key_path,
				    json_kind(entry));
		r = get_string(c, entry, key_path, "server_id", true,
			       "a super pod names its servers by server_id", &str);
		if (r < 0)
			return r;
		v = json_object_get(c->server_ids, str);
		if (!v)
			return fail(c,
				    "%s.server_id: %s is not in server_list (a super pod lists "
				    "servers of this table)",
				    key_path, quote(&q1, str));
		s = (size_t)json_integer_value(v);
		if (pp->pod_of[s] == p + 1)
			return fail(c,
				    "%s.server_id: %s is also %s.server_list[%zu] (a super pod "
				    "lists a server once)",
				    key_path, quote(&q1, str), path, pp->pos_in_pod[s]);
		if (pp->pod_of[s])
			return fail(c,
				    "%s.server_id: %s is already in super pod %s (every server "
				    "belongs to exactly one super pod)",
				    key_path, quote(&q1, str),
				    pod_name(pod_list, pp->pod_of[s] - 1, &q2));
		pp->pod_of[s] = p + 1;
		pp->pos_in_pod[s] = j;
	}
	return 0;
}

static int check_super_pods_with(struct ctx *c, struct pods *pp, json_t *pod_list)
{
	struct quoted q1, q2;
	char key[48];
	json_t *pod;
	size_t p, s, n0, n, other, k;
	const struct dev *d, *o;
	int r;

	json_array_foreach(pod_list, p, pod) {
		r = check_pod(c, pp, pod_list, p, pod);
		if (r < 0)
			return r;
	}

	for (s = 0; s < c->nservers; s++)
		if (!pp->pod_of[s])
			return fail(
				c,
				"server_list[%zu].server_id: %s is in no super pod (every "
				"server belongs to exactly one entry of super_pod_list)",
				s,
				quote(&q1,
				      json_string_value(json_object_get(
					      json_array_get(c->server_list, s), "server_id"))));

	n0 = json_array_size(json_object_get(json_array_get(pod_list, 0), "server_list"));
	json_array_foreach(pod_list, p, pod) {
		n = json_array_size(json_object_get(pod, "server_list"));
		if (n != n0)
			return fail(
				c,
				"super_pod_list[%zu].server_list: %zu servers but "
				"super_pod_list[0] has %zu (every super pod holds the same number "
				"of servers)",
				p, n, n0);
	}

	for (s = 0; s < c->nservers; s++) {
		p = pp->pod_of[s] - 1;
		if (pp->last[p] && pp->last[p] != s)
			return fail(
				c,
				"server_list[%zu].server_id: %s belongs to super pod %s, whose "
				"servers stopped at server_list[%zu] (the servers of one super pod "
				"are contiguous in server_list)",
				s,
				quote(&q1,
				      json_string_value(json_object_get(
					      json_array_get(c->server_list, s), "server_id"))),
				pod_name(pod_list, p, &q2), pp->last[p] - 1);
		pp->last[p] = s + 1;
	}

	for (k = 0; k < c->ndevs; k++) {
		d = &c->devs[k];
		snprintf(key, sizeof(key), "%zu:%u", pp->pod_of[d->server] - 1, d->super_device_id);
		r = set_add(pp->sdids, key, k, &other);
		if (r == -EEXIST) {
			o = &c->devs[other];
			return fail(c,
				    "server_list[%zu].device[%zu].super_device_id: \"%u\" is also "
				    "server_list[%zu].device[%zu].super_device_id in super pod %s "
				    "(super_device_id is unique within a super pod)",
				    d->server, d->index, d->super_device_id, o->server, o->index,
				    pod_name(pod_list, pp->pod_of[d->server] - 1, &q1));
		}
		if (r < 0)
			return fail_nomem(c);
	}
	/* A3 hardware: two servers of one pod never share a server index [SDIDL] */
	for (s = 0; c->opts->sdid_layout && s < c->nservers; s++)
		for (k = 0; k < s; k++) {
			unsigned a = c->devs[c->first_dev[s]].super_device_id >> 22;
			unsigned b = c->devs[c->first_dev[k]].super_device_id >> 22;

			if (pp->pod_of[s] == pp->pod_of[k] && a == b)
				return fail(c,
					    "server_list[%zu].device[0].super_device_id: server "
					    "index %u is also server_list[%zu]'s in super pod %s "
					    "(each server of a super pod has its own index)",
					    s, a, k, pod_name(pod_list, pp->pod_of[s] - 1, &q1));
		}
	return 0;
}

static int check_super_pods(struct ctx *c, json_t *root)
{
	json_t *pod_list = json_object_get(root, "super_pod_list");
	struct pods pp = { 0 };
	int r;

	if (!pod_list)
		return fail(c,
			    "super_pod_list: missing (a version \"1.2\" table lists its super "
			    "pods; use version \"1.0\" without super pods)");
	if (!json_is_array(pod_list))
		return fail(c, "super_pod_list: %s where an array of super pods belongs",
			    json_kind(pod_list));
	if (json_array_size(pod_list) == 0)
		return fail(c,
			    "super_pod_list: empty (a version \"1.2\" table lists its super pods)");

	pp.pod_of = zalloc_array(c->nservers, sizeof(*pp.pod_of));
	if (!pp.pod_of)
		goto nomem;
	pp.pos_in_pod = zalloc_array(c->nservers, sizeof(*pp.pos_in_pod));
	if (!pp.pos_in_pod)
		goto free_pod_of;
	pp.last = zalloc_array(json_array_size(pod_list), sizeof(*pp.last));
	if (!pp.last)
		goto free_pos_in_pod;
	pp.pod_ids = json_object();
	if (!pp.pod_ids)
		goto free_last;
	pp.sdids = json_object();
	if (!pp.sdids)
		goto free_pod_ids;

	r = check_super_pods_with(c, &pp, pod_list);

	json_decref(pp.sdids);
	json_decref(pp.pod_ids);
	free_array(pp.last);
	free_array(pp.pos_in_pod);
	free_array(pp.pod_of);
	return r;

free_pod_ids:
	json_decref(pp.pod_ids);
free_last:
	free_array(pp.last);
free_pos_in_pod:
	free_array(pp.pos_in_pod);
free_pod_of:
	free_array(pp.pod_of);
nomem:
	return fail_nomem(c);
}

/* ---- rules 3 to 10 in order, once the document is parsed ---- */

static int check_top(struct ctx *c, json_t *root)
{
	static const char *const known[] = { "version", "server_count", "server_list", "status" };
	char path[PATH_MAX_BYTES] = "";
	struct quoted q;
	const char *str, *key;
	unsigned count;
	json_t *v;
	size_t i, s, next_dev;
	int r;

	if (!json_is_object(root))
		return fail(c, "the document is %s (a rank table is one JSON object)",
			    json_kind(root));

	r = check_leaves(c, root, path, 0);
	if (r < 0)
		return r;

	r = get_string(c, root, "", "version", true, "\"1.0\", or \"1.2\" with super pods", &str);
	if (r < 0)
		return r;
	if (strcmp(str, "1.0") == 0)
		c->v12 = false;
	else if (strcmp(str, "1.2") == 0)
		c->v12 = true;
	else
		return fail(c,
			    "version: %s is not a rank table version HCCL reads (\"1.0\", or "
			    "\"1.2\" with super pods)",
			    quote(&q, str));
	if (c->v12 && json_is_array(json_object_get(root, "super_pod_list")))
		c->npods = json_array_size(json_object_get(root, "super_pod_list"));

	json_object_foreach(root, key, v) {
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strcmp(key, known[i]) == 0)
				break;
		if (i < sizeof(known) / sizeof(known[0]))
			continue;
		if (strcmp(key, "super_pod_list") == 0) {
			if (c->v12)
				continue;
			return fail(c,
				    "super_pod_list: only a version \"1.2\" table lists super pods "
				    "(set version to \"1.2\" or drop super_pod_list)");
		}
		if (is_identifier(key))
			return fail(c,
				    "%s: unknown top-level key (a rank table has version, "
				    "server_count, server_list and status%s)",
				    key, c->v12 ? ", plus super_pod_list" : "");
		return fail(c,
			    "[%s]: unknown top-level key (a rank table has version, "
			    "server_count, server_list and status%s)",
			    quote(&q, key), c->v12 ? ", plus super_pod_list" : "");
	}

	r = get_decimal(c, root, "", "server_count", "the number of servers in server_list", &count,
			NULL);
	if (r < 0)
		return r;
	c->server_list = json_object_get(root, "server_list");
	if (!c->server_list)
		return fail(c, "server_list: missing (a rank table lists its servers)");
	if (!json_is_array(c->server_list))
		return fail(c, "server_list: %s where an array of servers belongs",
			    json_kind(c->server_list));
	c->nservers = json_array_size(c->server_list);
	if (c->nservers == 0)
		return fail(c, "server_list: empty (a rank table holds at least one server)");
	if (count != c->nservers)
		return fail(c,
			    "server_count: \"%u\" but server_list holds %zu server%s "
			    "(server_count equals the length of server_list)",
			    count, c->nservers, c->nservers == 1 ? "" : "s");

	r = get_string(c, root, "", "status", true, "\"initializing\" or \"completed\"", &str);
	if (r < 0)
		return r;
	if (strcmp(str, "initializing") != 0 && strcmp(str, "completed") != 0)
		return fail(c,
			    "status: %s is not a rank table status (HCCL waits while it is "
			    "\"initializing\" and starts when it is \"completed\")",
			    quote(&q, str));
	if (c->opts->require_completed && strcmp(str, "completed") != 0)
		return fail(c,
			    "status: %s should be \"completed\" (the placement is final, HCCL "
			    "keeps waiting until it says so)",
			    quote(&q, str));

	/* Room for every device of every well-formed server; the rest fail on the way. */
	for (s = 0; s < c->nservers; s++)
		c->ndevs += json_array_size(
			json_object_get(json_array_get(c->server_list, s), "device"));
	c->devs = zalloc_array(c->ndevs, sizeof(*c->devs));
	c->first_dev = zalloc_array(c->nservers, sizeof(*c->first_dev));
	c->server_ids = json_object();
	c->device_ips = json_object();
	if (!c->devs || !c->first_dev || !c->server_ids || !c->device_ips)
		return fail_nomem(c);

	next_dev = 0;
	for (s = 0; s < c->nservers; s++) {
		r = check_server(c, s, json_array_get(c->server_list, s), &next_dev);
		if (r < 0)
			return r;
	}

	r = check_ranks(c);
	if (r < 0)
		return r;

	if (c->v12)
		return check_super_pods(c, root);
	return 0;
}

int hccl_check_ranktable(const char *text, size_t len, const struct hccl_check_opts *opts,
			 char *why, size_t why_len)
{
	const struct hccl_check_opts none = { 0 };
	struct ctx c = {
		.why = why,
		.why_len = why_len,
		.opts = opts ? opts : &none,
	};
	json_error_t err;
	json_t *root;
	int r;

	if (why_len)
		why[0] = '\0';
	c.device_id_bound = c.opts->npus_per_server;
	if (c.opts->ring_910) {
		if (c.opts->npus_per_server && c.opts->npus_per_server != 8)
			return fail(&c,
				    "options: ring_910 is the Atlas 800 (910) rule, which has 8 "
				    "NPUs per server, not %u",
				    c.opts->npus_per_server);
		c.device_id_bound = 8;
	}

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!root) {
		/* jansson leaves the text empty when it cannot even set up its lexer */
		if (json_error_code(&err) == json_error_out_of_memory || !err.text[0])
			return fail_nomem(&c);
		return fail(&c, "line %d, column %d: %s (a rank table is one JSON object)",
			    err.line, err.column, err.text);
	}

	r = check_top(&c, root);

	json_decref(c.device_ips);
	json_decref(c.server_ids);
	free_array(c.first_dev);
	free_array(c.devs);
	json_decref(root);
	return r;
}
