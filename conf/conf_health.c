/* SPDX-License-Identifier: MIT */
/*
 * NPU health reports (design.md §6): what ascend-agent writes to nodes/<node>/health
 * at every check interval. The line format is read here directly, byte by byte, so a
 * report of the usual shape costs no allocation; JSON goes through jansson's syntax
 * check and the positioned document tree like job specs do.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "conf_internal.h"

#define LEVEL_COUNT 5
#define LEVEL_HINT "use OK, Warning, Alarm, Critical or UNKNOWN"
#define LINE_SHAPES "\"node LEVEL\", \"npu ID LEVEL [CODE] [MESSAGE]\", \"ip ID ADDRESS\", " \
	"\"sdid ID SDID SUPER_POD_ID SERVER_INDEX\", \"agent ID\", " \
	"\"running JOB/GENERATION ...\" or \"usage JOB GENERATION CPU_USEC MEMORY_BYTES\""
#define CODE_HEX_MAX 16 /* "0x" and up to 16 hex digits: a 64-bit code */
#define CODE_NPU_SMI_DIGITS 8 /* npu-smi prints codes as 8 hex digits, e.g. 80C98000 */

static const char *const level_names[LEVEL_COUNT] = {
	[CONF_HEALTH_OK] = "OK",
	[CONF_HEALTH_WARNING] = "Warning",
	[CONF_HEALTH_ALARM] = "Alarm",
	[CONF_HEALTH_CRITICAL] = "Critical",
	[CONF_HEALTH_UNKNOWN] = "UNKNOWN",
};

static const char *const report_keys[] = { "agent", "node", "npus", "running", "usage", NULL };
static const char *const running_keys[] = { "job", "generation", NULL };
static const char *const usage_keys[] = { "job", "generation", "cpu_usec", "memory_bytes",
					  NULL };
static const char *const npu_keys[] = { "id",		"health",	"code",
					"message",	"device_ip",	"super_device_id",
					"super_pod_id", "server_index", NULL };

const char *conf_health_level_name(enum conf_health_level l)
{
	if ((unsigned)l >= LEVEL_COUNT)
		return "UNKNOWN";
	return level_names[l];
}

int conf_health_level_from_name(const char *word, size_t len, enum conf_health_level *ret)
{
	unsigned i;

	if (!word)
		return -EINVAL;
	for (i = 0; i < LEVEL_COUNT; i++) {
		if (strlen(level_names[i]) == len && strncasecmp(word, level_names[i], len) == 0) {
			*ret = (enum conf_health_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* An error code as npu-smi and the device logs show it: 0x80C98000 or 80C98000. */
static bool code_is_valid(const char *p, size_t len)
{
	size_t i, start = 0;

	if (len > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		start = 2;
		if (len - start > CODE_HEX_MAX)
			return false;
	} else if (len != CODE_NPU_SMI_DIGITS) {
		return false;
	}
	for (i = start; i < len; i++)
		if (!is_hex(p[i]))
			return false;
	return true;
}

int conf_fault_code_parse(const char *text, size_t len, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i;

	if (!text || !code_is_valid(text, len))
		return -EINVAL;
	i = len > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 2 : 0;
	for (; i < len; i++) {
		char ch = text[i];

		v = v << 4 | (uint64_t)(ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10);
	}
	*ret = v;
	return 0;
}

/* Accumulated report plus where each item was first seen, for duplicate messages. */
struct health_builder {
	const char *file;
	struct conf_error *err;
	unsigned server_npus;
	struct conf_health_report rep;
	unsigned node_line;
	unsigned agent_line;
	unsigned running_line;
	unsigned usage_line[CONF_HEALTH_USAGE_MAX];	/* where each usage entry was given */
	unsigned level_line[CONF_SERVER_NPUS_MAX];	/* 0: no level given yet */
	unsigned ip_line[CONF_SERVER_NPUS_MAX];		/* 0: no address given yet */
	unsigned sdid_line[CONF_SERVER_NPUS_MAX];	/* 0: no SDID given yet */
	unsigned first_sdid_npu;			/* the NPU of the first SDID given */
	int slot[CONF_SERVER_NPUS_MAX];			/* index in rep.npus, -1: none */
};

static void builder_init(struct health_builder *b, const char *file, unsigned server_npus,
			 struct conf_error *err)
{
	unsigned i;

	memset(b, 0, sizeof(*b));
	b->file = file;
	b->err = err;
	b->server_npus = server_npus;
	for (i = 0; i < CONF_SERVER_NPUS_MAX; i++)
		b->slot[i] = -1;
}

/* The entry for NPU @id (< server_npus), created in order of first mention. */
static struct conf_health_npu *builder_npu(struct health_builder *b, unsigned id)
{
	struct conf_health_npu *n;

	if (b->slot[id] >= 0)
		return &b->rep.npus[b->slot[id]];
	/* Each id gets one slot and ids are < server_npus <= the array size. */
	b->slot[id] = (int)b->rep.npu_count;
	n = &b->rep.npus[b->rep.npu_count++];
	n->id = id;
	return n;
}

static bool builder_is_empty(const struct health_builder *b)
{
	return !b->node_line && b->rep.npu_count == 0;
}

static int fail_empty(const struct health_builder *b)
{
	return conf_err_set(b->err, b->file, 0, 0,
			    "the report is empty; write at least \"node OK\" or one "
			    "\"npu ID LEVEL\" line");
}

static int fail_no_such_npu(const struct health_builder *b, unsigned line, unsigned column,
			    const char *item, unsigned long long id)
{
	return conf_err_set(b->err, b->file, line, column,
			    "%s %llu: no such NPU; this server has NPUs 0 to %u", item, id,
			    b->server_npus - 1);
}

/*
 * Give NPU @id the device IP @canon (canonical text), mentioned at @line:@column: the
 * address must be one HCCL can use and no other NPU of the report may have it.
 */
static int builder_set_ip(struct health_builder *b, unsigned id, const char *canon,
			  unsigned line, unsigned column)
{
	const char *problem = conf_device_ip_problem(canon);
	struct conf_health_npu *n;

	if (problem)
		return conf_err_set(b->err, b->file, line, column,
				    "ip %u: %s %s; a device IP is the unicast address of the "
				    "NPU's RoCE NIC (hccn_tool -i %u -ip -g)",
				    id, canon, problem, id);
	for (size_t i = 0; i < b->rep.npu_count; i++)
		if (b->rep.npus[i].id != id && strcmp(b->rep.npus[i].device_ip, canon) == 0)
			return conf_err_set(b->err, b->file, line, column,
					    "ip %u: %s is already the address of NPU %u (line "
					    "%u); every NPU has its own",
					    id, canon, b->rep.npus[i].id,
					    b->ip_line[b->rep.npus[i].id]);
	n = builder_npu(b, id);
	snprintf(n->device_ip, sizeof(n->device_ip), "%s", canon);
	b->ip_line[id] = line;
	return 0;
}

/*
 * Give NPU @id the super-pod identity read at @line:@column, after checking it against
 * the SDID's own fields and the identities already given (conf.h, SDID layout).
 */
static int builder_set_sdid(struct health_builder *b, unsigned id, uint32_t sdid,
			    uint32_t pod, unsigned server_index, unsigned line, unsigned column)
{
	struct conf_health_npu *n;

	if (server_index > CONF_SDID_SERVER_INDEX_MAX)
		return conf_err_set(b->err, b->file, line, column,
				    "sdid %u: server index %u is out of range; a super pod "
				    "numbers its servers 0 to %d",
				    id, server_index, CONF_SDID_SERVER_INDEX_MAX);
	if (CONF_SDID_SERVER_INDEX(sdid) != server_index)
		return conf_err_set(b->err, b->file, line, column,
				    "sdid %u: SDID %u is of server index %u, not %u; give the "
				    "SDID and Server Index that npu-smi info -t spod-info prints",
				    id, (unsigned)sdid, CONF_SDID_SERVER_INDEX(sdid), server_index);
	if (CONF_SDID_DEVICE(sdid) != id)
		return conf_err_set(b->err, b->file, line, column,
				    "sdid %u: SDID %u is of device %u, not NPU %u; give each "
				    "NPU its own SDID",
				    id, (unsigned)sdid, CONF_SDID_DEVICE(sdid), id);
	if (CONF_SDID_CHIP(sdid) * 2 + CONF_SDID_DIE(sdid) != id)
		return conf_err_set(b->err, b->file, line, column,
				    "sdid %u: SDID %u has chip %u die %u, which is not device "
				    "%u (device = chip * 2 + die)",
				    id, (unsigned)sdid, CONF_SDID_CHIP(sdid), CONF_SDID_DIE(sdid),
				    id);
	if (b->sdid_line[b->first_sdid_npu]) {
		const struct conf_health_npu *f = &b->rep.npus[b->slot[b->first_sdid_npu]];

		if (f->super_pod_id != pod)
			return conf_err_set(b->err, b->file, line, column,
					    "sdid %u: super pod %u, but NPU %u (line %u) is in "
					    "super pod %u; one server is in one super pod",
					    id, (unsigned)pod, f->id, b->sdid_line[f->id],
					    (unsigned)f->super_pod_id);
		if (f->server_index != server_index)
			return conf_err_set(b->err, b->file, line, column,
					    "sdid %u: server index %u, but NPU %u (line %u) is at "
					    "server index %u; one server has one index",
					    id, server_index, f->id, b->sdid_line[f->id],
					    f->server_index);
	} else {
		b->first_sdid_npu = id;
	}
	n = builder_npu(b, id);
	n->has_sdid = true;
	n->sdid = sdid;
	n->super_pod_id = pod;
	n->server_index = server_index;
	b->sdid_line[id] = line;
	return 0;
}

/* ---- line format ---- */

/* A word of a line: its bytes and its 1-based column in characters. */
struct token {
	const char *p;
	size_t len;
	unsigned column;
};

struct line {
	const char *start;	/* first byte of the line (after a byte order mark) */
	const char *end;	/* the terminator or the end of input */
	unsigned number;
};

static unsigned column_of(const struct line *l, const char *p)
{
	unsigned column = 1;
	const char *q;

	/* Characters, not bytes: UTF-8 continuation bytes do not start a column. */
	for (q = l->start; q < p; q++)
		if (((unsigned char)*q & 0xc0) != 0x80)
			column++;
	return column;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Next word at or after *@pos; false at the end of the line. */
static bool next_token(const struct line *l, const char **pos, struct token *t)
{
	const char *p = *pos;

	while (p < l->end && is_blank(*p))
		p++;
	if (p == l->end)
		return false;
	t->p = p;
	while (p < l->end && !is_blank(*p))
		p++;
	t->len = (size_t)(p - t->p);
	t->column = column_of(l, t->p);
	*pos = p;
	return true;
}

/* @t as a quoted string for a message (long words are cut by conf_quote). */
static char *quote_token(const struct token *t, char *buf, size_t len)
{
	char word[CONF_QUOTE_MAX * 2];
	size_t n = t->len < sizeof(word) - 1 ? t->len : sizeof(word) - 1;

	memcpy(word, t->p, n);
	word[n] = '\0';
	return conf_quote(word, buf, len);
}

static bool token_is(const struct token *t, const char *word)
{
	return strlen(word) == t->len && strncasecmp(t->p, word, t->len) == 0;
}

static int line_fail(const struct health_builder *b, const struct line *l, unsigned column,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int line_fail(const struct health_builder *b, const struct line *l, unsigned column,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_err_vset(b->err, b->file, l->number, column, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Column just after the last character of the line, where a missing word belongs. */
static unsigned end_column(const struct line *l)
{
	const char *e = l->end;

	while (e > l->start && is_blank(e[-1]))
		e--;
	return column_of(l, e) + (e > l->start);
}

static int read_level(const struct health_builder *b, const struct line *l,
		      const struct token *t, const char *item, enum conf_health_level *ret)
{
	char q[CONF_QUOTE_MAX];

	if (conf_health_level_from_name(t->p, t->len, ret) == 0)
		return 0;
	return line_fail(b, l, t->column, "%s: %s is not a health level; " LEVEL_HINT, item,
			 quote_token(t, q, sizeof(q)));
}

/*
 * An NPU id of this server, from the @len bytes at @p (a word of a line, or a JSON
 * value's text) at @line:@column; @item ("npu", "ip") names it in messages.
 */
static int read_npu_id(const struct health_builder *b, const char *p, size_t len,
		       unsigned line, unsigned column, const char *item, unsigned *ret)
{
	const struct token t = { .p = p, .len = len };
	char q[CONF_QUOTE_MAX];
	unsigned long long v = 0;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] < '0' || p[i] > '9')
			break;
	if (i < len || len == 0)
		return conf_err_set(b->err, b->file, line, column,
				    "%s: %s is not an NPU id; use a whole number from 0 to %u",
				    item, quote_token(&t, q, sizeof(q)), b->server_npus - 1);
	if (len > 1 && p[0] == '0')
		return conf_err_set(b->err, b->file, line, column,
				    "%s: %s has a leading zero; write the NPU id without it", item,
				    quote_token(&t, q, sizeof(q)));
	if (len > 9) /* beyond any server, and beyond what fits the message's number */
		return conf_err_set(b->err, b->file, line, column,
				    "%s %s: no such NPU; this server has NPUs 0 to %u", item,
				    quote_token(&t, q, sizeof(q)), b->server_npus - 1);
	for (i = 0; i < len; i++)
		v = v * 10 + (unsigned long long)(p[i] - '0');
	if (v >= b->server_npus)
		return fail_no_such_npu(b, line, column, item, v);
	*ret = (unsigned)v;
	return 0;
}

static int line_node(struct health_builder *b, const struct line *l, const char *pos)
{
	struct token t;
	char q[CONF_QUOTE_MAX];
	int r;

	if (!next_token(l, &pos, &t))
		return line_fail(b, l, end_column(l),
				 "node: the health level is missing; write \"node LEVEL\", e.g. "
				 "\"node OK\"");
	if (b->node_line)
		return line_fail(b, l, t.column,
				 "node: already reported at line %u; report the node once",
				 b->node_line);
	r = read_level(b, l, &t, "node", &b->rep.node);
	if (r < 0)
		return r;
	if (next_token(l, &pos, &t))
		return line_fail(b, l, t.column,
				 "node: unexpected %s after the level; write \"node LEVEL\"",
				 quote_token(&t, q, sizeof(q)));
	b->rep.has_node = true;
	b->node_line = l->number;
	return 0;
}

static int line_npu(struct health_builder *b, const struct line *l, const char *pos)
{
	struct conf_health_npu *n;
	enum conf_health_level level;
	struct token id_tok, t;
	char item[32];
	const char *rest, *end;
	size_t len;
	unsigned id;
	int r;

	if (!next_token(l, &pos, &id_tok))
		return line_fail(b, l, end_column(l),
				 "npu: the NPU id is missing; write \"npu ID LEVEL\", e.g. "
				 "\"npu 0 OK\"");
	r = read_npu_id(b, id_tok.p, id_tok.len, l->number, id_tok.column, "npu", &id);
	if (r < 0)
		return r;
	snprintf(item, sizeof(item), "npu %u", id);
	if (!next_token(l, &pos, &t))
		return line_fail(b, l, end_column(l),
				 "%s: the health level is missing; " LEVEL_HINT, item);
	if (b->level_line[id])
		return line_fail(b, l, id_tok.column,
				 "%s: already reported at line %u; report each NPU once", item,
				 b->level_line[id]);
	r = read_level(b, l, &t, item, &level);
	if (r < 0)
		return r;

	n = builder_npu(b, id);
	n->has_level = true;
	n->level = level;
	b->level_line[id] = l->number;

	rest = pos;
	if (next_token(l, &pos, &t) && code_is_valid(t.p, t.len)) {
		/* code_is_valid() bounds the length below sizeof(code). */
		memcpy(n->code, t.p, t.len);
		n->code[t.len] = '\0';
		rest = pos;
	}
	while (rest < l->end && is_blank(*rest))
		rest++;
	end = l->end;
	while (end > rest && is_blank(end[-1]))
		end--;
	len = (size_t)(end - rest);
	if (len >= sizeof(n->message))
		return line_fail(b, l, column_of(l, rest),
				 "%s: the message is %zu bytes, more than the limit of %zu; "
				 "shorten it",
				 item, len, sizeof(n->message) - 1);
	memcpy(n->message, rest, len);
	n->message[len] = '\0';
	return 0;
}

/* Canonical text of an address, so that the daemon compares like with like. */
static bool canonical_ip(const char *text, char *buf, size_t len)
{
	unsigned char addr[sizeof(struct in6_addr)];

	if (inet_pton(AF_INET, text, addr) == 1)
		return inet_ntop(AF_INET, addr, buf, (socklen_t)len) != NULL;
	if (inet_pton(AF_INET6, text, addr) == 1)
		return inet_ntop(AF_INET6, addr, buf, (socklen_t)len) != NULL;
	return false;
}

static int line_ip(struct health_builder *b, const struct line *l, const char *pos)
{
	struct token id_tok, t;
	char item[32], q[CONF_QUOTE_MAX], addr[INET6_ADDRSTRLEN + 1], canon[INET6_ADDRSTRLEN];
	unsigned id;
	int r;

	if (!next_token(l, &pos, &id_tok))
		return line_fail(b, l, end_column(l),
				 "ip: the NPU id is missing; write \"ip ID ADDRESS\", e.g. "
				 "\"ip 0 10.20.0.1\"");
	r = read_npu_id(b, id_tok.p, id_tok.len, l->number, id_tok.column, "ip", &id);
	if (r < 0)
		return r;
	snprintf(item, sizeof(item), "ip %u", id);
	if (!next_token(l, &pos, &t))
		return line_fail(b, l, end_column(l),
				 "%s: the address is missing; write \"ip ID ADDRESS\", e.g. "
				 "\"ip %u 10.20.0.1\"",
				 item, id);
	if (b->ip_line[id])
		return line_fail(b, l, id_tok.column,
				 "%s: the address of NPU %u is already given at line %u; give it "
				 "once",
				 item, id, b->ip_line[id]);
	if (t.len >= sizeof(addr))
		goto bad_address;
	memcpy(addr, t.p, t.len);
	addr[t.len] = '\0';
	if (!canonical_ip(addr, canon, sizeof(canon)))
		goto bad_address;
	if (next_token(l, &pos, &id_tok))
		return line_fail(b, l, id_tok.column,
				 "%s: unexpected %s after the address; write \"ip ID ADDRESS\"",
				 item, quote_token(&id_tok, q, sizeof(q)));
	return builder_set_ip(b, id, canon, l->number, t.column);

bad_address:
	return line_fail(b, l, t.column,
			 "%s: %s is not an IP address; use an IPv4 address such as 10.20.0.1 or "
			 "an IPv6 address such as fd00::1",
			 item, quote_token(&t, q, sizeof(q)));
}

/* A decimal number below 2^32 from the @len bytes at @p, without sign or blanks. */
static bool read_u32(const char *p, size_t len, uint32_t *ret)
{
	uint64_t v = 0;

	if (len == 0 || len > 10 || (len > 1 && p[0] == '0'))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	return true;
}

#define SDID_SHAPE "write \"sdid ID SDID SUPER_POD_ID SERVER_INDEX\" as npu-smi info -t " \
	"spod-info prints them, e.g. \"sdid 2 113508354 1 27\""

static int line_sdid(struct health_builder *b, const struct line *l, const char *pos)
{
	static const char *const what[3] = { "SDID", "super pod id", "server index" };
	struct token id_tok, t[3];
	char q[CONF_QUOTE_MAX];
	uint32_t v[3];
	unsigned id;
	int r;

	if (!next_token(l, &pos, &id_tok))
		return line_fail(b, l, end_column(l), "sdid: the NPU id is missing; " SDID_SHAPE);
	r = read_npu_id(b, id_tok.p, id_tok.len, l->number, id_tok.column, "sdid", &id);
	if (r < 0)
		return r;
	for (int i = 0; i < 3; i++) {
		if (!next_token(l, &pos, &t[i]))
			return line_fail(b, l, end_column(l),
					 "sdid %u: the %s is missing; " SDID_SHAPE, id, what[i]);
		if (!read_u32(t[i].p, t[i].len, &v[i]))
			return line_fail(b, l, t[i].column,
					 "sdid %u: %s is not a %s; use a decimal number below "
					 "4294967296",
					 id, quote_token(&t[i], q, sizeof(q)), what[i]);
	}
	if (next_token(l, &pos, &t[0]))
		return line_fail(b, l, t[0].column, "sdid %u: unexpected %s; " SDID_SHAPE, id,
				 quote_token(&t[0], q, sizeof(q)));
	if (b->sdid_line[id])
		return line_fail(b, l, id_tok.column,
				 "sdid %u: the SDID of NPU %u is already given at line %u; give "
				 "it once",
				 id, id, b->sdid_line[id]);
	return builder_set_sdid(b, id, v[0], v[1], v[2], l->number, t[0].column);
}

/* Is @p (@len bytes) an agent identity: 1 to CONF_HEALTH_AGENT_MAX - 1 printable ASCII
 * bytes without blanks? */
static bool agent_id_is_valid(const char *p, size_t len)
{
	if (len == 0 || len >= CONF_HEALTH_AGENT_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (p[i] <= ' ' || p[i] > '~')
			return false;
	return true;
}

#define AGENT_ID_RULE "1 to 159 printable ASCII characters without blanks, such as " \
	"\"a2-node-01:4f1c0e6d\""

static int line_agent(struct health_builder *b, const struct line *l, const char *pos)
{
	struct token t;
	char q[CONF_QUOTE_MAX];

	if (!next_token(l, &pos, &t))
		return line_fail(b, l, end_column(l),
				 "agent: the identity is missing; write \"agent ID\" with " AGENT_ID_RULE);
	if (b->agent_line)
		return line_fail(b, l, t.column,
				 "agent: already given at line %u; name the agent once",
				 b->agent_line);
	if (!agent_id_is_valid(t.p, t.len))
		return line_fail(b, l, t.column, "agent: %s is not an identity; use " AGENT_ID_RULE,
				 quote_token(&t, q, sizeof(q)));
	memcpy(b->rep.agent, t.p, t.len);
	b->rep.agent[t.len] = '\0';
	if (next_token(l, &pos, &t))
		return line_fail(b, l, t.column,
				 "agent: unexpected %s after the identity; write \"agent ID\"",
				 quote_token(&t, q, sizeof(q)));
	b->agent_line = l->number;
	return 0;
}

/* ---- `running`: the job generations with live processes on the server ---- */

#define RUNNING_RULE "JOB/GENERATION words, such as \"running llama/2 qwen-ft/1\", or " \
	"\"running -\" when none runs"

/*
 * A generation: 1 to 4294967295 in decimal without a leading zero, from the @len bytes
 * at @p. Returns true and *@ret.
 */
static bool generation_parse(const char *p, size_t len, unsigned *ret)
{
	unsigned long long v = 0;

	if (len == 0 || len > 10 || p[0] == '0')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned long long)(p[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*ret = (unsigned)v;
	return true;
}

/*
 * Add @job (@job_len bytes) generation @gen to the running list, unless it is there or
 * the list is full. Returns 0, or 1 (already listed, *@ret_index: where), or 2 (full).
 */
static int running_add(struct health_builder *b, const char *job, size_t job_len, unsigned gen,
		       size_t *ret_index)
{
	struct conf_health_running *e;

	for (size_t i = 0; i < b->rep.running_count; i++) {
		e = &b->rep.running[i];
		if (e->generation == gen && strlen(e->job) == job_len &&
		    memcmp(e->job, job, job_len) == 0) {
			*ret_index = i;
			return 1;
		}
	}
	if (b->rep.running_count == CONF_HEALTH_RUNNING_MAX)
		return 2;
	e = &b->rep.running[b->rep.running_count++];
	memcpy(e->job, job, job_len);
	e->job[job_len] = '\0';
	e->generation = gen;
	return 0;
}

/* Is the @len bytes at @p a valid job name? */
static bool job_name_ok(const char *p, size_t len)
{
	char name[CONF_NAME_MAX + 1];

	if (len == 0 || len > CONF_NAME_MAX)
		return false;
	memcpy(name, p, len);
	name[len] = '\0';
	return conf_job_name_is_valid(name);
}

static int line_running(struct health_builder *b, const struct line *l, const char *pos)
{
	char q[CONF_QUOTE_MAX];
	struct token t;
	bool none = false, any = false;

	if (b->running_line)
		return line_fail(b, l, column_of(l, pos),
				 "running: already given at line %u; list the running jobs once",
				 b->running_line);
	while (next_token(l, &pos, &t)) {
		const char *slash = memchr(t.p, '/', t.len);
		size_t job_len = slash ? (size_t)(slash - t.p) : 0, at;
		unsigned gen;
		int r;

		if (t.len == 1 && t.p[0] == '-' && !any) {
			none = true;
			any = true;
			continue;
		}
		if (none || (t.len == 1 && t.p[0] == '-'))
			return line_fail(b, l, t.column,
					 "running: \"-\" means no job runs and stands alone; "
					 "write either \"running -\" or " RUNNING_RULE);
		any = true;
		if (!slash || !job_name_ok(t.p, job_len))
			return line_fail(b, l, t.column,
					 "running: %s is not JOB/GENERATION; write " RUNNING_RULE
					 " (JOB a job name)",
					 quote_token(&t, q, sizeof(q)));
		if (!generation_parse(slash + 1, t.len - job_len - 1, &gen))
			return line_fail(b, l, t.column,
					 "running: %s has no generation after the '/'; use a whole "
					 "number from 1 without a leading zero, such as \"%.*s/2\"",
					 quote_token(&t, q, sizeof(q)), (int)job_len, t.p);
		r = running_add(b, t.p, job_len, gen, &at);
		if (r == 1)
			return line_fail(b, l, t.column,
					 "running: %s is listed twice; list each job generation once",
					 quote_token(&t, q, sizeof(q)));
		if (r == 2)
			return line_fail(b, l, t.column,
					 "running: more than %d job generations; a server runs "
					 "fewer",
					 CONF_HEALTH_RUNNING_MAX);
	}
	if (!any)
		return line_fail(b, l, end_column(l),
				 "running: the list is missing; write " RUNNING_RULE);
	b->rep.has_running = true;
	b->running_line = l->number;
	return 0;
}

/* ---- usage: what a job generation's cgroup used (either format) ---- */

/* One field of a usage entry: its text and where it was given. */
struct usage_field {
	const char *p;
	size_t len;
	unsigned line, column;
};

#define USAGE_SHAPE "\"usage JOB GENERATION CPU_USEC MEMORY_BYTES\", e.g. \"usage llama 2 " \
	"1234567 8589934592\""

/* A whole number in [@min, @max], without a leading zero. */
static bool read_u64(const struct usage_field *f, uint64_t min, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (f->len == 0 || f->len > 20 || (f->len > 1 && f->p[0] == '0'))
		return false;
	for (size_t i = 0; i < f->len; i++) {
		unsigned d = (unsigned)(f->p[i] - '0');

		if (f->p[i] < '0' || f->p[i] > '9' || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return false;
	*ret = v;
	return true;
}

/* Validate and add one usage entry: job, generation, cpu_usec, memory_bytes (@f[4]). */
static int add_usage(struct health_builder *b, const struct usage_field *f, unsigned line)
{
	static const char *const what[] = { "job", "generation", "cpu_usec", "memory_bytes" };
	struct conf_health_usage u;
	char q[CONF_QUOTE_MAX];
	uint64_t v[4] = { 0 };
	int bad = -1;

	memset(&u, 0, sizeof(u));
	if (f[0].len > CONF_NAME_MAX) {
		bad = 0;
	} else {
		memcpy(u.job, f[0].p, f[0].len);
		u.job[f[0].len] = '\0';
		if (!conf_name_is_valid(u.job))
			bad = 0;
	}
	for (int i = 1; i < 4 && bad < 0; i++)
		if (!read_u64(&f[i], i == 1 ? 1 : 0,
			      i == 1 ? UINT32_MAX : CONF_HEALTH_USAGE_VALUE_MAX, &v[i]))
			bad = i;
	if (bad >= 0) {
		const struct token t = { .p = f[bad].p, .len = f[bad].len };

		return conf_err_set(b->err, b->file, f[bad].line, f[bad].column,
				    "usage: %s %s is not %s; write " USAGE_SHAPE, what[bad],
				    quote_token(&t, q, sizeof(q)),
				    bad == 0 ? "a job name" :
				    bad == 1 ? "a generation (1 to 4294967295)" :
					       "a whole number from 0 to 9223372036854775807");
	}
	u.generation = (unsigned)v[1];
	u.cpu_usec = v[2];
	u.memory_bytes = v[3];
	for (size_t i = 0; i < b->rep.usage_count; i++)
		if (b->rep.usage[i].generation == u.generation &&
		    strcmp(b->rep.usage[i].job, u.job) == 0)
			return conf_err_set(b->err, b->file, f[0].line, f[0].column,
					    "usage: job %s generation %u already given at line %u; "
					    "give each generation once",
					    u.job, u.generation, b->usage_line[i]);
	if (b->rep.usage_count >= CONF_HEALTH_USAGE_MAX)
		return conf_err_set(b->err, b->file, f[0].line, f[0].column,
				    "usage: more than %d job generations; a report holds at most "
				    "%d usage entries",
				    CONF_HEALTH_USAGE_MAX, CONF_HEALTH_USAGE_MAX);
	b->usage_line[b->rep.usage_count] = line;
	b->rep.usage[b->rep.usage_count++] = u;
	return 0;
}

static int line_usage(struct health_builder *b, const struct line *l, const char *pos)
{
	struct usage_field f[4];
	struct token t;
	char q[CONF_QUOTE_MAX];

	for (int i = 0; i < 4; i++) {
		if (!next_token(l, &pos, &t))
			return line_fail(b, l, end_column(l),
					 "usage: the line has %d of 4 words; write " USAGE_SHAPE, i);
		f[i] = (struct usage_field){ t.p, t.len, l->number, t.column };
	}
	if (next_token(l, &pos, &t))
		return line_fail(b, l, t.column,
				 "usage: unexpected %s after the memory bytes; write " USAGE_SHAPE,
				 quote_token(&t, q, sizeof(q)));
	return add_usage(b, f, l->number);
}

static int parse_line(struct health_builder *b, const struct line *l)
{
	const char *pos = l->start;
	char q[CONF_QUOTE_MAX];
	struct token t;

	if (!next_token(l, &pos, &t) || t.p[0] == '#')
		return 0;
	if (token_is(&t, "node"))
		return line_node(b, l, pos);
	if (token_is(&t, "npu"))
		return line_npu(b, l, pos);
	if (token_is(&t, "ip"))
		return line_ip(b, l, pos);
	if (token_is(&t, "sdid"))
		return line_sdid(b, l, pos);
	if (token_is(&t, "agent"))
		return line_agent(b, l, pos);
	if (token_is(&t, "running"))
		return line_running(b, l, pos);
	if (token_is(&t, "usage"))
		return line_usage(b, l, pos);
	return line_fail(b, l, t.column, "unknown item %s; each line is " LINE_SHAPES,
			 quote_token(&t, q, sizeof(q)));
}

/* @whole: the whole report (an empty one is refused), else its first complete lines. */
static int parse_lines(struct health_builder *b, const char *buf, size_t len, bool whole)
{
	const char *p = buf, *end = buf + len;
	struct line l = { .number = 0 };
	int r;

	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	while (p < end) {
		const char *e = p;

		while (e < end && *e != '\n' && *e != '\r')
			e++;
		l.start = p;
		l.end = e;
		l.number++;
		r = parse_line(b, &l);
		if (r < 0)
			return r;
		/* "\n", "\r\n" and a lone "\r" end a line, as conf_check_text() counts them. */
		if (e < end && *e == '\r' && e + 1 < end && e[1] == '\n')
			e++;
		p = e + 1;
	}
	return whole && builder_is_empty(b) ? fail_empty(b) : 0;
}

/* ---- JSON ---- */

static int json_level(const struct conf_ctx *ctx, const struct conf_node *n, const char *item,
		      enum conf_health_level *ret)
{
	char q[CONF_QUOTE_MAX];

	if (n->kind != CONF_NODE_SCALAR)
		return conf_fail(ctx, n, "%s: expected a health level, not %s; " LEVEL_HINT, item,
				 conf_node_kind_name(n));
	if (conf_health_level_from_name(n->text, n->text_len, ret) == 0)
		return 0;
	return conf_fail(ctx, n, "%s: %s is not a health level; " LEVEL_HINT, item,
			 conf_quote(n->text, q, sizeof(q)));
}

static int json_npu(struct health_builder *b, const struct conf_ctx *ctx,
		    const struct conf_node *m)
{
	const struct conf_node *id_node, *health, *code, *message, *device_ip, *sdid[3];
	struct conf_health_npu *n;
	enum conf_health_level level = CONF_HEALTH_OK;
	char item[32], q[CONF_QUOTE_MAX], *ip = NULL;
	const char *text, *msg_text = NULL;
	size_t msg_len = 0, first;
	unsigned id;
	int r;

	if (m->kind != CONF_NODE_MAP)
		return conf_fail(ctx, m,
				 "npus: each entry must be an object such as {\"id\": 0, "
				 "\"health\": \"OK\"}, not %s",
				 conf_node_kind_name(m));
	r = conf_check_keys(ctx, m, npu_keys);
	if (r < 0)
		return r;
	id_node = conf_map_get(m, "id");
	if (!id_node)
		return conf_fail(ctx, m, "npus: this entry has no \"id\"; add the NPU's id");
	if (id_node->kind != CONF_NODE_SCALAR)
		return conf_fail(ctx, id_node,
				 "npu: expected an NPU id, not %s; use a whole number from 0 to %u",
				 conf_node_kind_name(id_node), b->server_npus - 1);
	r = read_npu_id(b, id_node->text, id_node->text_len, id_node->line, id_node->column,
			"npu", &id);
	if (r < 0)
		return r;
	snprintf(item, sizeof(item), "npu %u", id);
	if (b->slot[id] >= 0)
		return conf_fail(ctx, id_node,
				 "%s: already listed at line %u; list each NPU once", item,
				 b->level_line[id] ? b->level_line[id] : b->ip_line[id] ? b->ip_line[id] : b->sdid_line[id]);

	health = conf_map_get(m, "health");
	code = conf_map_get(m, "code");
	message = conf_map_get(m, "message");
	device_ip = conf_map_get(m, "device_ip");
	sdid[0] = conf_map_get(m, "super_device_id");
	sdid[1] = conf_map_get(m, "super_pod_id");
	sdid[2] = conf_map_get(m, "server_index");
	if (!sdid[0] != !sdid[1] || !sdid[0] != !sdid[2])
		return conf_fail(ctx, m,
				 "%s: give \"super_device_id\", \"super_pod_id\" and "
				 "\"server_index\" together",
				 item);
	if (!health && (code || message))
		return conf_fail(ctx, code ? code : message,
				 "%s: \"code\" and \"message\" need \"health\"; add the level",
				 item);
	if (!health && !device_ip && !sdid[0])
		return conf_fail(ctx, m,
				 "%s: give \"health\", \"device_ip\", \"super_device_id\" or "
				 "more of them",
				 item);
	if (health && (r = json_level(ctx, health, item, &level)) < 0)
		return r;
	if (code) {
		r = conf_read_string(ctx, code, "code", false, &text);
		if (r < 0)
			return r;
		if (!code_is_valid(text, code->text_len))
			return conf_fail(ctx, code,
					 "%s: %s is not an error code; use \"0x\" and up to %d hex "
					 "digits, such as \"0x80C98000\"",
					 item, conf_quote(text, q, sizeof(q)), CODE_HEX_MAX);
	}
	if (message) {
		r = conf_read_string(ctx, message, "message", false, &text);
		if (r < 0)
			return r;
		/* Blanks around the message mean nothing in the line format either. */
		while (is_blank(*text))
			text++;
		msg_len = strlen(text);
		while (msg_len && is_blank(text[msg_len - 1]))
			msg_len--;
		if (msg_len >= sizeof(n->message))
			return conf_fail(ctx, message,
					 "%s: the message is %zu bytes, more than the limit of "
					 "%zu; shorten it",
					 item, msg_len, sizeof(n->message) - 1);
		first = strcspn(text, " \t");
		if (!code && code_is_valid(text, first < msg_len ? first : msg_len))
			return conf_fail(ctx, message,
					 "%s: the message starts with what reads as an error code; "
					 "give it as \"code\" instead",
					 item);
		msg_text = text;
	}
	if (device_ip) {
		r = conf_read_ip(ctx, device_ip, "device_ip", &ip, NULL);
		if (r < 0)
			return r;
	}

	n = builder_npu(b, id);
	if (health) {
		n->has_level = true;
		n->level = level;
		b->level_line[id] = id_node->line;
	}
	if (code)
		snprintf(n->code, sizeof(n->code), "%s", code->text);
	if (msg_text) {
		memcpy(n->message, msg_text, msg_len);
		n->message[msg_len] = '\0';
	}
	if (ip) {
		r = builder_set_ip(b, id, ip, device_ip->line, device_ip->column);
		free(ip);
		if (r < 0)
			return r;
	}
	if (sdid[0]) {
		static const char *const keys[3] = { "super_device_id", "super_pod_id",
						     "server_index" };
		uint32_t v[3];

		for (int i = 0; i < 3; i++)
			if (sdid[i]->kind != CONF_NODE_SCALAR || sdid[i]->quoted ||
			    !read_u32(sdid[i]->text, sdid[i]->text_len, &v[i]))
				return conf_fail(ctx, sdid[i],
						 "%s: %s: expected a whole number below "
						 "4294967296",
						 item, keys[i]);
		return builder_set_sdid(b, id, v[0], v[1], v[2], sdid[0]->line,
					sdid[0]->column);
	}
	return 0;
}

/* "running": [{"job": "llama", "generation": 2}, ...], the `running` line's list. */
static int json_running(struct health_builder *b, const struct conf_ctx *ctx,
			const struct conf_node *n)
{
	char q[CONF_QUOTE_MAX];

	if (n->kind != CONF_NODE_SEQ)
		return conf_fail(ctx, n,
				 "running: expected a list such as [{\"job\": \"llama\", "
				 "\"generation\": 2}] ([] when none runs), not %s",
				 conf_node_kind_name(n));
	for (size_t i = 0; i < n->count; i++) {
		const struct conf_node *m = n->items[i], *job, *gen;
		unsigned g;
		size_t at;
		int r;

		if (m->kind != CONF_NODE_MAP)
			return conf_fail(ctx, m,
					 "running: each entry must be an object such as "
					 "{\"job\": \"llama\", \"generation\": 2}, not %s",
					 conf_node_kind_name(m));
		r = conf_check_keys(ctx, m, running_keys);
		if (r < 0)
			return r;
		job = conf_map_get(m, "job");
		gen = conf_map_get(m, "generation");
		if (!job || !gen)
			return conf_fail(ctx, m, "running: this entry has no \"%s\"; give both "
					 "\"job\" and \"generation\"", job ? "generation" : "job");
		if (job->kind != CONF_NODE_SCALAR || !job->quoted ||
		    !job_name_ok(job->text, job->text_len))
			return conf_fail(ctx, job, "running: job: expected a job name as a "
					 "string, such as \"llama\"");
		if (gen->kind != CONF_NODE_SCALAR || gen->quoted ||
		    !generation_parse(gen->text, gen->text_len, &g))
			return conf_fail(ctx, gen, "running: generation: expected a whole number "
					 "from 1, such as 2");
		r = running_add(b, job->text, job->text_len, g, &at);
		if (r == 1)
			return conf_fail(ctx, m, "running: %s generation %u is listed twice; list "
					 "each job generation once",
					 conf_quote(job->text, q, sizeof(q)), g);
		if (r == 2)
			return conf_fail(ctx, m, "running: more than %d job generations; a server "
					 "runs fewer", CONF_HEALTH_RUNNING_MAX);
	}
	b->rep.has_running = true;
	b->running_line = n->line ? n->line : 1;
	return 0;
}

static int json_usage(struct health_builder *b, const struct conf_ctx *ctx,
		      const struct conf_node *m)
{
	static const char *const keys[] = { "job", "generation", "cpu_usec", "memory_bytes" };
	struct usage_field f[4];
	int r;

	if (m->kind != CONF_NODE_MAP)
		return conf_fail(ctx, m,
				 "usage: each entry must be an object such as {\"job\": \"llama\", "
				 "\"generation\": 2, \"cpu_usec\": 1234567, \"memory_bytes\": 0}, "
				 "not %s",
				 conf_node_kind_name(m));
	r = conf_check_keys(ctx, m, usage_keys);
	if (r < 0)
		return r;
	for (int i = 0; i < 4; i++) {
		const struct conf_node *n = conf_map_get(m, keys[i]);

		if (!n)
			return conf_fail(ctx, m, "usage: this entry has no \"%s\"; give job, "
					 "generation, cpu_usec and memory_bytes", keys[i]);
		/* the job is a string, the numbers are numbers */
		if (n->kind != CONF_NODE_SCALAR || n->quoted != (i == 0))
			return conf_fail(ctx, n, "usage: \"%s\" must be %s", keys[i],
					 i == 0 ? "a string" : "a whole number");
		f[i] = (struct usage_field){ n->text, n->text_len, n->line, n->column };
	}
	return add_usage(b, f, m->line);
}

static int json_report(struct health_builder *b, const struct conf_node *root)
{
	const struct conf_ctx ctx = { .file = b->file, .err = b->err };
	const struct conf_node *n;
	size_t i;
	int r;

	if (!root || root->kind != CONF_NODE_MAP)
		return conf_fail(&ctx, root,
				 "the report must be a JSON object such as {\"node\": \"OK\", "
				 "\"npus\": [...]}, not %s",
				 conf_node_kind_name(root));
	r = conf_check_keys(&ctx, root, report_keys);
	if (r < 0)
		return r;
	n = conf_map_get(root, "agent");
	if (n) {
		if (n->kind != CONF_NODE_SCALAR || !n->quoted ||
		    !agent_id_is_valid(n->text, n->text_len))
			return conf_fail(&ctx, n, "agent: expected a string of " AGENT_ID_RULE);
		memcpy(b->rep.agent, n->text, n->text_len + 1);
	}
	n = conf_map_get(root, "node");
	if (n) {
		r = json_level(&ctx, n, "node", &b->rep.node);
		if (r < 0)
			return r;
		b->rep.has_node = true;
		b->node_line = n->line;
	}
	n = conf_map_get(root, "npus");
	if (n) {
		if (n->kind != CONF_NODE_SEQ)
			return conf_fail(&ctx, n,
					 "npus: expected a list such as [{\"id\": 0, \"health\": "
					 "\"OK\"}], not %s",
					 conf_node_kind_name(n));
		for (i = 0; i < n->count; i++) {
			r = json_npu(b, &ctx, n->items[i]);
			if (r < 0)
				return r;
		}
	}
	n = conf_map_get(root, "running");
	if (n && (r = json_running(b, &ctx, n)) < 0)
		return r;
	n = conf_map_get(root, "usage");
	if (n) {
		if (n->kind != CONF_NODE_SEQ)
			return conf_fail(&ctx, n,
					 "usage: expected a list such as [{\"job\": \"llama\", "
					 "\"generation\": 2, \"cpu_usec\": 1234567, "
					 "\"memory_bytes\": 0}], not %s",
					 conf_node_kind_name(n));
		for (i = 0; i < n->count; i++) {
			r = json_usage(b, &ctx, n->items[i]);
			if (r < 0)
				return r;
		}
	}
	return builder_is_empty(b) ? fail_empty(b) : 0;
}

static int parse_json(struct health_builder *b, const char *buf, size_t len)
{
	struct conf_node *root = NULL;
	char *copy;
	size_t i;
	int r;

	r = conf_check_json(buf, len, b->file, b->err);
	if (r < 0)
		return r;
	/*
	 * libyaml refuses tabs where JSON allows them (indentation). JSON strings cannot
	 * hold a raw tab, so in valid JSON every tab is white space and a space keeps the
	 * columns.
	 */
	copy = malloc(len ? len : 1);
	if (!copy)
		return conf_err_nomem(b->err, b->file);
	for (i = 0; i < len; i++)
		copy[i] = buf[i] == '\t' ? ' ' : buf[i];
	r = conf_doc_parse(copy, len, b->file, "health report", CONF_HEALTH_MAX_BYTES, &root,
			   b->err);
	if (r == 0) {
		r = json_report(b, root);
		conf_node_free(root);
	}
	free(copy);
	return r;
}

static bool starts_like_json(const char *buf, size_t len)
{
	size_t i = 0;

	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	for (; i < len; i++) {
		if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')
			continue;
		return buf[i] == '{';
	}
	return false;
}

int conf_health_parse(const char *buf, size_t len, const char *file, unsigned server_npus,
		      struct conf_health_report *ret, struct conf_error *err)
{
	struct health_builder b;
	int r;

	if (len > CONF_HEALTH_MAX_BYTES) {
		conf_err_set(err, file, 0, 0,
			     "the health report is %zu bytes, more than the limit of %d bytes; "
			     "make it smaller",
			     len, CONF_HEALTH_MAX_BYTES);
		return -EFBIG;
	}
	if (server_npus == 0 || server_npus > CONF_SERVER_NPUS_MAX)
		return conf_err_set(err, file, 0, 0,
				    "the server has %u NPUs; a server has 1 to %d", server_npus,
				    CONF_SERVER_NPUS_MAX);
	if (!buf && len)
		return conf_err_set(err, file, 0, 0, "no text given");
	if (!buf)
		buf = "";
	r = conf_check_text((const unsigned char *)buf, len, file, err);
	if (r < 0)
		return r;
	builder_init(&b, file, server_npus, err);
	r = starts_like_json(buf, len) ? parse_json(&b, buf, len) : parse_lines(&b, buf, len, true);
	if (r == 0)
		*ret = b.rep;
	return r;
}

int conf_health_check_start(const char *buf, size_t len, const char *file, unsigned server_npus,
			    struct conf_error *err)
{
	struct health_builder b;
	const char *nl, *cr;
	int r;

	if (len > CONF_HEALTH_MAX_BYTES) {
		conf_err_set(err, file, 0, 0,
			     "the health report is more than the limit of %d bytes; make it "
			     "smaller",
			     CONF_HEALTH_MAX_BYTES);
		return -EFBIG;
	}
	if (server_npus == 0 || server_npus > CONF_SERVER_NPUS_MAX)
		return conf_err_set(err, file, 0, 0,
				    "the server has %u NPUs; a server has 1 to %d", server_npus,
				    CONF_SERVER_NPUS_MAX);
	if (!buf || starts_like_json(buf, len))
		return 0;
	/* "\n", "\r\n" and a lone "\r" end a line, as parse_lines() counts them */
	nl = memrchr(buf, '\n', len);
	cr = memrchr(buf, '\r', len);
	if (cr > nl)
		nl = cr;
	if (!nl)
		return 0; /* the first line is not finished */
	len = (size_t)(nl - buf + 1);
	/* a line end never splits a UTF-8 sequence, so the lines so far are text or not */
	r = conf_check_text((const unsigned char *)buf, len, file, err);
	if (r < 0)
		return r;
	builder_init(&b, file, server_npus, err);
	return parse_lines(&b, buf, len, false);
}

/* ---- rendering ---- */

struct out {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	size_t cap;
	char *p;
	int n;

	while (!o->failed) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		cap = 2 * o->cap + (n > 0 ? (size_t)n : 0);
		p = n < 0 ? NULL : realloc(o->buf, cap);
		if (!p) {
			o->failed = true;
			return;
		}
		o->buf = p;
		o->cap = cap;
	}
}

int conf_health_render(const struct conf_health_report *r, char **ret_buf, size_t *ret_len)
{
	struct out o = { .cap = 1024 };
	size_t i;

	o.buf = malloc(o.cap);
	if (!o.buf)
		return -ENOMEM;
	o.buf[0] = '\0';
	if (r->agent[0])
		out_printf(&o, "agent %s\n", r->agent);
	if (r->has_node)
		out_printf(&o, "node %s\n", conf_health_level_name(r->node));
	for (i = 0; i < r->npu_count && i < CONF_SERVER_NPUS_MAX; i++) {
		const struct conf_health_npu *n = &r->npus[i];

		if (n->has_level)
			out_printf(&o, "npu %u %s%s%s%s%s\n", n->id,
				   conf_health_level_name(n->level), n->code[0] ? " " : "",
				   n->code, n->message[0] ? " " : "", n->message);
		if (n->device_ip[0])
			out_printf(&o, "ip %u %s\n", n->id, n->device_ip);
		if (n->has_sdid)
			out_printf(&o, "sdid %u %u %u %u\n", n->id, (unsigned)n->sdid,
				   (unsigned)n->super_pod_id, n->server_index);
	}
	if (r->has_running) {
		out_printf(&o, "running");
		for (i = 0; i < r->running_count && i < CONF_HEALTH_RUNNING_MAX; i++)
			out_printf(&o, " %s/%u", r->running[i].job, r->running[i].generation);
		out_printf(&o, "%s\n", r->running_count ? "" : " -");
	}
	for (i = 0; i < r->usage_count && i < CONF_HEALTH_USAGE_MAX; i++)
		out_printf(&o, "usage %s %u %llu %llu\n", r->usage[i].job, r->usage[i].generation,
			   (unsigned long long)r->usage[i].cpu_usec,
			   (unsigned long long)r->usage[i].memory_bytes);
	if (o.failed) {
		free(o.buf);
		return -ENOMEM;
	}
	*ret_buf = o.buf;
	*ret_len = o.len;
	return 0;
}
