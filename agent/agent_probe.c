/* SPDX-License-Identifier: MIT */
/*
 * Parsers of what the probes print: `npu-smi info`, `hccn_tool -i N -ip -g`,
 * /etc/hccn.conf. The shapes follow the Ascend npu-smi and hccn_tool references and
 * published outputs of Atlas 800 (910), Atlas 800T A2 (910B) and A3 servers; samples in
 * the same shapes are in tests/data/agent. Everything is bounded by the text's length:
 * the text comes from a program and need not be NUL-terminated.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "agent_internal.h"

/* One line of the text, without its terminator. */
struct text_line {
	const char *p;
	size_t len;
	unsigned number;
};

/* Next line at *@pos (advanced past it); false at the end of the text. */
static bool next_line(const char *text, size_t len, size_t *pos, struct text_line *l)
{
	size_t start = *pos, end;

	if (start >= len)
		return false;
	end = start;
	while (end < len && text[end] != '\n')
		end++;
	*pos = end < len ? end + 1 : end;
	l->p = text + start;
	l->len = end - start;
	if (l->len && l->p[l->len - 1] == '\r')
		l->len--;
	l->number++;
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* [@p, @p + @len) without blanks at either end. */
static void trim(const char **p, size_t *len)
{
	while (*len && is_space(**p)) {
		(*p)++;
		(*len)--;
	}
	while (*len && is_space((*p)[*len - 1]))
		(*len)--;
}

/*
 * Split "key: value" line @l at its first ':' into the trimmed key and value (borrowed
 * from the line). Returns false for a line without a colon.
 */
static bool split_key_value(const struct text_line *l, const char **key, size_t *key_len,
			    const char **value, size_t *value_len)
{
	const char *colon = memchr(l->p, ':', l->len);

	if (!colon)
		return false;
	*key = l->p;
	*key_len = (size_t)(colon - l->p);
	trim(key, key_len);
	*value = colon + 1;
	*value_len = (size_t)(l->p + l->len - *value);
	trim(value, value_len);
	return true;
}

char *agent_quote(const char *p, size_t len, char *buf, size_t buf_len)
{
	size_t o = 0, i;

	buf[o++] = '"';
	/* Each byte adds at most 4; the room left after the loop fits "...", '"' and NUL. */
	for (i = 0; i < len && o + 9 < buf_len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(buf + o, buf_len - o, "\\x%02x", c);
		} else {
			buf[o++] = (char)c;
		}
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

int agent_err_set(struct conf_error *err, const char *source, unsigned line, unsigned column,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	snprintf(err->file, sizeof(err->file), "%s", source ? source : "");
	err->line = line;
	err->column = line ? column : 0;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int fail_too_big(struct conf_error *err, const char *source, size_t len)
{
	agent_err_set(err, source, 0, 0, "the output is %zu bytes, more than the limit of %d bytes",
		      len, AGENT_PROBE_MAX_BYTES);
	return -EFBIG;
}

/* A whole number of at most @max_digits digits; false when it is not one. */
static bool parse_small_uint(const char *p, size_t len, size_t max_digits, unsigned *ret)
{
	unsigned v = 0;
	size_t i;

	if (len == 0 || len > max_digits)
		return false;
	for (i = 0; i < len; i++) {
		if (!is_digit(p[i]))
			return false;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	*ret = v;
	return true;
}

/* Canonical text of the address in @len bytes at @p into @ret (AGENT_IP_MAX bytes). */
static bool canonical_ip(const char *p, size_t len, char *ret)
{
	unsigned char addr[sizeof(struct in6_addr)];
	char text[AGENT_IP_MAX];

	if (len == 0 || len >= sizeof(text) || memchr(p, '\0', len))
		return false;
	memcpy(text, p, len);
	text[len] = '\0';
	if (inet_pton(AF_INET, text, addr) == 1)
		return inet_ntop(AF_INET, addr, ret, AGENT_IP_MAX) != NULL;
	if (inet_pton(AF_INET6, text, addr) == 1)
		return inet_ntop(AF_INET6, addr, ret, AGENT_IP_MAX) != NULL;
	return false;
}

/* ---- npu-smi info ---- */

#define NPU_SMI_CELLS_MAX 8

/* A table row "| a | b | c |": its cells, trimmed, with their columns. */
struct row {
	const char *cell[NPU_SMI_CELLS_MAX];
	size_t cell_len[NPU_SMI_CELLS_MAX];
	unsigned column[NPU_SMI_CELLS_MAX];
	size_t count;
};

/* Split @l into cells; false when it is not a "|" row. */
static bool split_row(const struct text_line *l, struct row *r)
{
	size_t i = 0, start;

	while (i < l->len && is_space(l->p[i]))
		i++;
	if (i == l->len || l->p[i] != '|')
		return false;
	r->count = 0;
	for (i++; i < l->len && r->count < NPU_SMI_CELLS_MAX;) {
		const char *p;
		size_t n;

		start = i;
		while (i < l->len && l->p[i] != '|')
			i++;
		if (i == l->len)
			break; /* text after the last '|' is not a cell */
		p = l->p + start;
		n = i - start;
		trim(&p, &n);
		r->cell[r->count] = p;
		r->cell_len[r->count] = n;
		/* An empty cell is pointed at from its first column. */
		r->column[r->count] = (unsigned)(n ? (size_t)(p - l->p) : start) + 1;
		r->count++;
		i++;
	}
	return true;
}

/* The @k-th blank-separated word of cell @c of @r; false when there are fewer. */
static bool cell_word(const struct row *r, size_t c, unsigned k, const char **ret_p,
		      size_t *ret_len)
{
	const char *p = r->cell[c], *end = r->cell[c] + r->cell_len[c];

	for (unsigned i = 0;; i++) {
		const char *w;

		while (p < end && is_space(*p))
			p++;
		if (p == end)
			return false;
		w = p;
		while (p < end && !is_space(*p))
			p++;
		if (i == k) {
			*ret_p = w;
			*ret_len = (size_t)(p - w);
			return true;
		}
	}
}

static bool word_is(const char *p, size_t len, const char *word)
{
	return strlen(word) == len && strncasecmp(p, word, len) == 0;
}

static bool cell_starts_with(const struct row *r, size_t c, const char *word)
{
	const char *p;
	size_t len;

	return c < r->count && cell_word(r, c, 0, &p, &len) && word_is(p, len, word);
}

struct npu_smi {
	const char *source;
	struct conf_error *err;
	struct conf_health_report rep;
	unsigned listed_line[CONF_SERVER_NPUS_MAX];	/* 0: not listed yet */
	bool has_phy_id;				/* the A3 table: "Chip Phy-ID" */
	/* The NPU row waiting for its chip row (tables with a Phy-ID column). */
	bool pending;
	unsigned pending_line;
	enum conf_health_level pending_level;
	char pending_word[32];
};

static int npu_smi_add(struct npu_smi *s, unsigned line, unsigned column, unsigned id,
		       enum conf_health_level level, const char *unknown_word)
{
	struct conf_health_npu *n;

	if (id >= CONF_SERVER_NPUS_MAX)
		return agent_err_set(s->err, s->source, line, column,
				     "device %u is beyond the %d NPUs a server may hold", id,
				     CONF_SERVER_NPUS_MAX);
	if (s->listed_line[id])
		return agent_err_set(s->err, s->source, line, column,
				     "device %u is listed twice (also at line %u)", id,
				     s->listed_line[id]);
	s->listed_line[id] = line;
	n = &s->rep.npus[s->rep.npu_count++];
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->has_level = true;
	n->level = level;
	if (unknown_word)
		snprintf(n->message, sizeof(n->message), "npu-smi health \"%s\"", unknown_word);
	return 0;
}

/* "| 0     910B3     | OK     | 95.5  45  0 / 0 |": NPU id, name, Health. */
static int npu_smi_npu_row(struct npu_smi *s, const struct row *r, unsigned line)
{
	enum conf_health_level level;
	char word[32], q[AGENT_QUOTE_MAX];
	const char *p;
	size_t len;
	unsigned npu;
	bool known;

	if (!cell_word(r, 0, 0, &p, &len) || !parse_small_uint(p, len, 5, &npu))
		return agent_err_set(s->err, s->source, line, r->column[0],
				     "NPU row without an NPU id: %s",
				     agent_quote(r->cell[0], r->cell_len[0], q, sizeof(q)));
	if (!cell_word(r, 1, 0, &p, &len))
		return agent_err_set(s->err, s->source, line, r->column[1],
				     "NPU %u has no Health value", npu);
	known = conf_health_level_from_name(p, len, &level) == 0;
	if (!known) {
		/* A word npu-smi has no documentation for: treat the NPU as unknown. */
		level = CONF_HEALTH_UNKNOWN;
		snprintf(word, sizeof(word), "%.*s", (int)(len < 24 ? len : 24), p);
		/* Kept as printable ASCII: the report must stay valid UTF-8 text. */
		for (size_t i = 0; word[i]; i++)
			if ((unsigned char)word[i] <= 0x20 || (unsigned char)word[i] >= 0x7f ||
			    word[i] == '"')
				word[i] = '?';
	}
	if (s->pending)
		return agent_err_set(s->err, s->source, s->pending_line, 1,
				     "the NPU row has no chip row below it");
	if (!s->has_phy_id)
		return npu_smi_add(s, line, r->column[0], npu, level, known ? NULL : word);
	s->pending = true;
	s->pending_line = line;
	s->pending_level = level;
	snprintf(s->pending_word, sizeof(s->pending_word), "%s", known ? "" : word);
	return 0;
}

/* "| 0     0     | 0000:9D:00.0  | ...": chip id and, on A3, the physical id. */
static int npu_smi_chip_row(struct npu_smi *s, const struct row *r, unsigned line)
{
	const char *p;
	size_t len;
	unsigned chip, phy;

	if (!s->has_phy_id)
		return 0; /* the NPU row said it all */
	if (!s->pending)
		return agent_err_set(s->err, s->source, line, r->column[0],
				     "a chip row without the NPU row above it");
	s->pending = false;
	if (!cell_word(r, 0, 0, &p, &len) || !parse_small_uint(p, len, 5, &chip) ||
	    !cell_word(r, 0, 1, &p, &len) || !parse_small_uint(p, len, 5, &phy))
		return agent_err_set(s->err, s->source, line, r->column[0],
				     "the chip row has no Phy-ID; expected \"Chip Phy-ID\" such as "
				     "\"1  15\"");
	return npu_smi_add(s, line, r->column[0], phy, s->pending_level,
			   s->pending_word[0] ? s->pending_word : NULL);
}

/* A PCI address such as 0000:C1:00.0. */
static bool cell_is_bus_id(const struct row *r, size_t c)
{
	return c < r->count && r->cell_len[c] > 0 && memchr(r->cell[c], ':', r->cell_len[c]);
}

static int first_text_line(const char *text, size_t len, char *buf, size_t buf_len)
{
	struct text_line l = { 0 };
	size_t pos = 0;

	while (next_line(text, len, &pos, &l)) {
		const char *p = l.p;
		size_t n = l.len;

		trim(&p, &n);
		if (n) {
			agent_quote(p, n, buf, buf_len);
			return 1;
		}
	}
	return 0;
}

int agent_parse_npu_smi_info(const char *text, size_t len, const char *source,
			     struct conf_health_report *ret, struct conf_error *err)
{
	enum { SEEK_HEADER, SEEK_CHIP_HEADER, ROWS, DONE } state = SEEK_HEADER;
	struct text_line l = { 0 };
	struct npu_smi s;
	size_t pos = 0;
	int r;

	if (len > AGENT_PROBE_MAX_BYTES)
		return fail_too_big(err, source, len);
	if (!text)
		len = 0;
	memset(&s, 0, sizeof(s));
	s.source = source;
	s.err = err;

	while (state != DONE && next_line(text, len, &pos, &l)) {
		struct row row;
		const char *p;
		size_t n;

		if (!split_row(&l, &row) || row.count < 2)
			continue;
		switch (state) {
		case SEEK_HEADER:
			if (cell_starts_with(&row, 0, "NPU") && cell_starts_with(&row, 1, "Health"))
				state = SEEK_CHIP_HEADER;
			break;
		case SEEK_CHIP_HEADER:
			if (!cell_starts_with(&row, 0, "Chip"))
				return agent_err_set(err, source, l.number, row.column[0],
						     "expected the \"Chip ... | Bus-Id\" header "
						     "row below the \"NPU Name | Health\" row");
			s.has_phy_id = cell_word(&row, 0, 1, &p, &n) && word_is(p, n, "Phy-ID");
			state = ROWS;
			break;
		case ROWS:
			/* The process table ("| NPU Chip | Process id | ...") ends ours. */
			if (cell_starts_with(&row, 1, "Process")) {
				state = DONE;
				break;
			}
			if (row.cell_len[0] == 0 || !is_digit(row.cell[0][0]))
				break;
			r = cell_is_bus_id(&row, 1) ? npu_smi_chip_row(&s, &row, l.number)
						    : npu_smi_npu_row(&s, &row, l.number);
			if (r < 0)
				return r;
			break;
		case DONE:
			break;
		}
	}
	if (state == SEEK_HEADER) {
		char q[AGENT_QUOTE_MAX];

		if (first_text_line(text, len, q, sizeof(q)))
			return agent_err_set(err, source, 0, 0,
					     "no NPU table in the output, which begins %s; "
					     "check the driver (npu-smi info) and the device "
					     "permissions",
					     q);
		return agent_err_set(err, source, 0, 0,
				     "the output is empty; expected the NPU table");
	}
	if (state == SEEK_CHIP_HEADER)
		return agent_err_set(err, source, 0, 0,
				     "the NPU table ends after its first header row");
	if (s.pending)
		return agent_err_set(err, source, s.pending_line, 1,
				     "the NPU row has no chip row below it");
	if (s.rep.npu_count == 0)
		return agent_err_set(err, source, 0, 0, "the NPU table lists no NPUs");
	*ret = s.rep;
	return 0;
}

/* ---- hccn_tool -i N -ip -g ---- */

int agent_parse_hccn_ip(const char *text, size_t len, const char *source, char *ret_ip,
			char *ret_netmask, struct conf_error *err)
{
	char ip[AGENT_IP_MAX] = "", mask[AGENT_IP_MAX] = "", q[AGENT_QUOTE_MAX];
	unsigned ip_line = 0, mask_line = 0;
	struct text_line l = { 0 };
	size_t pos = 0;

	if (len > AGENT_PROBE_MAX_BYTES)
		return fail_too_big(err, source, len);
	if (!text)
		len = 0;
	while (next_line(text, len, &pos, &l)) {
		const char *key, *value;
		size_t key_len, value_len;
		unsigned *seen;
		char *field;

		if (!split_key_value(&l, &key, &key_len, &value, &value_len))
			continue;
		if (word_is(key, key_len, "ipaddr")) {
			seen = &ip_line;
			field = ip;
		} else if (word_is(key, key_len, "netmask")) {
			seen = &mask_line;
			field = mask;
		} else {
			continue;
		}
		if (*seen)
			return agent_err_set(err, source, l.number, 1,
					     "%.*s is printed twice (also at line %u)",
					     (int)key_len, key, *seen);
		if (!canonical_ip(value, value_len, field))
			return agent_err_set(err, source, l.number, (unsigned)(value - l.p) + 1,
					     "%.*s: %s is not an IP address", (int)key_len, key,
					     agent_quote(value, value_len, q, sizeof(q)));
		if (field == ip && conf_device_ip_problem(ip))
			return agent_err_set(err, source, l.number, (unsigned)(value - l.p) + 1,
					     "ipaddr: %s %s; HCCL cannot use it as the NPU's "
					     "device IP (set one with hccn_tool -i N -ip -s)",
					     ip, conf_device_ip_problem(ip));
		*seen = l.number;
	}
	if (!ip_line) {
		agent_err_set(err, source, 0, 0,
			      "no \"ipaddr:\" line; the NPU has no address (hccn_tool -i N "
			      "-ip -s sets one)");
		return -ENOENT;
	}
	memcpy(ret_ip, ip, AGENT_IP_MAX);
	if (ret_netmask)
		memcpy(ret_netmask, mask, AGENT_IP_MAX);
	return 0;
}

/* ---- /etc/hccn.conf ---- */

int agent_parse_hccn_conf(const char *text, size_t len, const char *source,
			  struct agent_device_ips *ret, struct conf_error *err)
{
	static const char prefix[] = "address_";
	struct agent_device_ips ips;
	unsigned line_of[CONF_SERVER_NPUS_MAX] = { 0 };
	struct text_line l = { 0 };
	char q[AGENT_QUOTE_MAX];
	size_t pos = 0;

	if (len > AGENT_PROBE_MAX_BYTES)
		return fail_too_big(err, source, len);
	if (!text)
		len = 0;
	memset(&ips, 0, sizeof(ips));
	while (next_line(text, len, &pos, &l)) {
		const char *p = l.p, *eq, *value;
		size_t n = l.len, key_len, value_len;
		unsigned id;

		trim(&p, &n);
		if (n == 0 || p[0] == '#')
			continue;
		eq = memchr(p, '=', n);
		if (!eq)
			return agent_err_set(err, source, l.number, (unsigned)(p - l.p) + 1,
					     "expected KEY=VALUE, such as address_0=10.20.0.1, "
					     "not %s",
					     agent_quote(p, n, q, sizeof(q)));
		key_len = (size_t)(eq - p);
		trim(&p, &key_len);
		if (key_len <= sizeof(prefix) - 1 || strncmp(p, prefix, sizeof(prefix) - 1) != 0)
			continue; /* netmask_N, gateway_N, netdetect_N ... */
		if (!parse_small_uint(p + sizeof(prefix) - 1, key_len - (sizeof(prefix) - 1), 2,
				      &id) ||
		    id >= CONF_SERVER_NPUS_MAX)
			return agent_err_set(err, source, l.number, (unsigned)(p - l.p) + 1,
					     "%s is not address_N with a device id N from 0 to %d",
					     agent_quote(p, key_len, q, sizeof(q)),
					     CONF_SERVER_NPUS_MAX - 1);
		if (line_of[id])
			return agent_err_set(err, source, l.number, (unsigned)(p - l.p) + 1,
					     "address_%u is given twice (also at line %u)", id,
					     line_of[id]);
		value = eq + 1;
		value_len = (size_t)(l.p + l.len - value);
		trim(&value, &value_len);
		if (!canonical_ip(value, value_len, ips.ip[id]))
			return agent_err_set(err, source, l.number, (unsigned)(value - l.p) + 1,
					     "address_%u: %s is not an IP address", id,
					     agent_quote(value, value_len, q, sizeof(q)));
		if (conf_device_ip_problem(ips.ip[id]))
			return agent_err_set(err, source, l.number, (unsigned)(value - l.p) + 1,
					     "address_%u: %s %s; HCCL cannot use it as the NPU's "
					     "device IP",
					     id, ips.ip[id], conf_device_ip_problem(ips.ip[id]));
		for (unsigned o = 0; o < CONF_SERVER_NPUS_MAX; o++)
			if (o != id && line_of[o] && strcmp(ips.ip[o], ips.ip[id]) == 0)
				return agent_err_set(err, source, l.number,
						     (unsigned)(value - l.p) + 1,
						     "address_%u: %s is also address_%u (line %u); "
						     "every NPU has its own address",
						     id, ips.ip[id], o, line_of[o]);
		line_of[id] = l.number;
	}
	*ret = ips;
	return 0;
}

void agent_device_ips_check(struct agent_device_ips *ips, unsigned npu_count, char *why,
			    size_t why_len)
{
	bool dup[CONF_SERVER_NPUS_MAX] = { false };

	if (why_len)
		why[0] = '\0';
	if (npu_count > CONF_SERVER_NPUS_MAX)
		npu_count = CONF_SERVER_NPUS_MAX;
	for (unsigned a = 0; a < npu_count; a++)
		for (unsigned b = a + 1; b < npu_count; b++)
			if (ips->ip[a][0] && strcmp(ips->ip[a], ips->ip[b]) == 0) {
				if (why_len && !why[0])
					snprintf(why, why_len,
						 "NPUs %u and %u both have device IP %s; neither "
						 "is reported until hccn_tool gives them their own",
						 a, b, ips->ip[a]);
				dup[a] = dup[b] = true;
			}
	for (unsigned d = 0; d < npu_count; d++)
		if (dup[d])
			ips->ip[d][0] = '\0';
}

/* ---- npu-smi info -t spod-info -i CARD -c CHIP ---- */

int agent_parse_spod_info(const char *text, size_t len, const char *source,
			  struct agent_spod_info *ret, struct conf_error *err)
{
	static const char *const keys[4] = { "SDID", "Super Pod ID", "Server Index",
					     "Super Pod Size" };
	unsigned line_of[4] = { 0 };
	uint32_t v[4] = { 0 };
	struct text_line l = { 0 };
	char q[AGENT_QUOTE_MAX];
	size_t pos = 0;

	if (len > AGENT_PROBE_MAX_BYTES)
		return fail_too_big(err, source, len);
	if (!text)
		len = 0;
	while (next_line(text, len, &pos, &l)) {
		const char *key, *value;
		size_t key_len, value_len;
		uint64_t n = 0;
		int k;

		if (!split_key_value(&l, &key, &key_len, &value, &value_len))
			continue;
		for (k = 0; k < 4; k++)
			if (word_is(key, key_len, keys[k]))
				break;
		if (k == 4)
			continue; /* Chassis ID, Super Pod Type ... */
		if (line_of[k])
			return agent_err_set(err, source, l.number, 1,
					     "%s is printed twice (also at line %u)", keys[k],
					     line_of[k]);
		for (size_t i = 0; i < value_len && n <= UINT32_MAX; i++)
			n = is_digit(value[i]) ? n * 10 + (uint64_t)(value[i] - '0') :
						 UINT64_MAX;
		if (value_len == 0 || value_len > 10 || n > UINT32_MAX)
			return agent_err_set(err, source, l.number, (unsigned)(value - l.p) + 1,
					     "%s: %s is not a number below 4294967296", keys[k],
					     agent_quote(value, value_len, q, sizeof(q)));
		v[k] = (uint32_t)n;
		line_of[k] = l.number;
	}
	if (!line_of[0] && !line_of[1] && !line_of[2]) {
		agent_err_set(err, source, 0, 0,
			      "no super-pod information (not an A3 super pod device)");
		return -ENOENT;
	}
	for (int k = 0; k < 3; k++)
		if (!line_of[k])
			return agent_err_set(err, source, 0, 0,
					     "no \"%s\" line; expected SDID, Super Pod ID and "
					     "Server Index",
					     keys[k]);
	ret->sdid = v[0];
	ret->super_pod_id = v[1];
	ret->server_index = v[2];
	ret->super_pod_size = v[3];
	return 0;
}
