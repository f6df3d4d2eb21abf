/* SPDX-License-Identifier: MIT */
/*
 * Text -> positioned tree. libyaml's event parser is used rather than its document
 * loader so that an alias, a second document or a too-deep nesting is refused at the
 * event that introduces it, with its own position, before any memory is spent on it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "conf_internal.h"

struct builder {
	const char *file;
	struct conf_error *err;
	struct conf_node *root;
	struct conf_node *stack[CONF_YAML_DEPTH_MAX]; /* open mappings and sequences */
	unsigned depth;
	size_t nodes;
	unsigned documents;
};

void conf_node_free(struct conf_node *n)
{
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n->nitems; i++)
		conf_node_free(n->items[i]);
	free(n->items);
	free(n->text);
	free(n);
}

bool conf_node_is_null(const struct conf_node *n)
{
	if (!n)
		return true;
	if (n->kind != CONF_NODE_SCALAR || n->quoted)
		return false;
	return n->text[0] == '\0' || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
	       strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0;
}

const char *conf_node_kind_name(const struct conf_node *n)
{
	if (!n)
		return "nothing";
	switch (n->kind) {
	case CONF_NODE_MAP:
		return "a mapping";
	case CONF_NODE_SEQ:
		return "a list";
	case CONF_NODE_SCALAR:
		break;
	}
	return conf_node_is_null(n) ? "empty" : "a single value";
}

struct conf_node *conf_map_get(const struct conf_node *map, const char *key)
{
	size_t i;

	if (!map || map->kind != CONF_NODE_MAP)
		return NULL;
	for (i = 0; i < map->count; i++) {
		if (strcmp(map->items[2 * i]->text, key) == 0) {
			struct conf_node *v = map->items[2 * i + 1];

			return conf_node_is_null(v) ? NULL : v;
		}
	}
	return NULL;
}

/*
 * Refuse what is not UTF-8 text before libyaml sees it: libyaml's reader messages give
 * a byte offset, not a line, and binary data written into a spec file is the common
 * mistake this catches (design.md §3: binary input is rejected in write()).
 */
int conf_check_text(const unsigned char *p, size_t len, const char *file,
		    struct conf_error *err)
{
	unsigned line = 1, column = 1;
	size_t i = 0;

	/* A byte order mark is not a column, for libyaml either. */
	if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		i = 3;

	while (i < len) {
		unsigned char c = p[i];
		size_t n = 0;

		if (c < 0x80) {
			if (c == 0)
				return conf_err_set(err, file, line, column,
						    "found a NUL byte; the file must be UTF-8 "
						    "text, not binary data");
			if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
				return conf_err_set(err, file, line, column,
						    "found control character 0x%02x; the file "
						    "must be UTF-8 text with no control "
						    "characters other than tab and newline",
						    c);
			if (c == '\n' || (c == '\r' && (i + 1 == len || p[i + 1] != '\n'))) {
				line++;
				column = 1;
			} else if (c != '\r') {
				column++;
			}
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3;
		if (n && i + n < len) {
			unsigned char c1 = p[i + 1];
			bool ok = (c1 & 0xc0) == 0x80;
			size_t k;

			/* Overlong forms, surrogates and code points above U+10FFFF. */
			if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) ||
			    (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f))
				ok = false;
			for (k = 2; ok && k <= n; k++)
				ok = (p[i + k] & 0xc0) == 0x80;
			if (ok) {
				i += n + 1;
				column++;
				continue;
			}
		}
		return conf_err_set(err, file, line, column,
				    "found bytes that are not valid UTF-8; the file must be UTF-8 "
				    "text (convert it, e.g. with iconv)");
	}
	return 0;
}

static bool only_space(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\r')
			return false;
	return true;
}

int conf_check_json(const char *buf, size_t len, const char *file, struct conf_error *err)
{
	json_error_t jerr;
	json_t *j;

	/* An empty file is reported as an empty document, in the caller's words. */
	if (only_space(buf, len))
		return 0;
	/* jansson does not skip a byte order mark; YAML readers do. */
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
		buf += 3;
		len -= 3;
	}
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		/* jansson leaves the text empty when its first allocation fails. */
		if (json_error_code(&jerr) == json_error_out_of_memory || !jerr.text[0])
			return conf_err_nomem(err, file);
		return conf_err_set(err, file, jerr.line > 0 ? (unsigned)jerr.line : 0,
				    jerr.column > 0 ? (unsigned)jerr.column : 0, "invalid JSON: %s",
				    jerr.text);
	}
	json_decref(j);
	return 0;
}

static int fail_at(struct builder *b, const yaml_mark_t *mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(struct builder *b, const yaml_mark_t *mark, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_err_vset(b->err, b->file, (unsigned)mark->line + 1, (unsigned)mark->column + 1, fmt,
		      ap);
	va_end(ap);
	return -EINVAL;
}

static int append_item(struct conf_node *n, struct conf_node *child)
{
	if (n->nitems == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 4;
		struct conf_node **items = realloc(n->items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		n->items = items;
		n->cap = cap;
	}
	n->items[n->nitems++] = child;
	n->count = n->kind == CONF_NODE_MAP ? n->nitems / 2 : n->nitems;
	return 0;
}

/* Attach @n (just created) to the tree; on failure the caller still owns @n. */
static int attach(struct builder *b, struct conf_node *n, const yaml_mark_t *mark)
{
	struct conf_node *parent;
	int r;

	if (b->depth == 0) {
		b->root = n;
		return 0;
	}
	parent = b->stack[b->depth - 1];
	if (parent->kind == CONF_NODE_MAP && parent->nitems % 2 == 0 && n->kind != CONF_NODE_SCALAR)
		return fail_at(b, mark,
			       "a key must be a single word or string, not %s; check the "
			       "indentation and the colons",
			       n->kind == CONF_NODE_MAP ? "a mapping" : "a list");
	r = append_item(parent, n);
	if (r < 0)
		return conf_err_nomem(b->err, b->file);
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct conf_node *x = *(struct conf_node *const *)a;
	const struct conf_node *y = *(struct conf_node *const *)b;
	int c = strcmp(x->text, y->text);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->column < y->column ? -1 : x->column > y->column;
}

/* Report the duplicate key whose second occurrence comes first in the document. */
static int check_duplicate_keys(struct builder *b, const struct conf_node *map)
{
	const struct conf_node *first = NULL, *second = NULL;
	struct conf_node **keys;
	char q[CONF_QUOTE_MAX];
	size_t i;

	if (map->count < 2)
		return 0;
	keys = malloc(map->count * sizeof(*keys));
	if (!keys)
		return conf_err_nomem(b->err, b->file);
	for (i = 0; i < map->count; i++)
		keys[i] = map->items[2 * i];
	qsort(keys, map->count, sizeof(*keys), key_cmp);
	for (i = 1; i < map->count; i++) {
		if (strcmp(keys[i - 1]->text, keys[i]->text) != 0)
			continue;
		/* Within one run only the run's second element can be the earliest repeat. */
		if (i >= 2 && strcmp(keys[i - 2]->text, keys[i]->text) == 0)
			continue;
		if (!second || keys[i]->line < second->line ||
		    (keys[i]->line == second->line && keys[i]->column < second->column)) {
			first = keys[i - 1];
			second = keys[i];
		}
	}
	free(keys);
	if (!second)
		return 0;
	return conf_err_set(b->err, b->file, second->line, second->column,
			    "duplicate key %s (also at line %u); keep only one of them",
			    conf_quote(second->text, q, sizeof(q)), first->line);
}

static struct conf_node *node_new(enum conf_node_kind kind, const yaml_mark_t *mark)
{
	struct conf_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = kind;
	n->line = (unsigned)mark->line + 1;
	n->column = (unsigned)mark->column + 1;
	return n;
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
	const yaml_mark_t *mark = &ev->start_mark;
	struct conf_node *n;
	size_t len = ev->data.scalar.length;
	int r;

	if (memchr(ev->data.scalar.value, '\0', len))
		return fail_at(b, mark, "a string contains a NUL character (\\0); remove it");
	n = node_new(CONF_NODE_SCALAR, mark);
	if (!n)
		return conf_err_nomem(b->err, b->file);
	n->text = malloc(len + 1);
	if (!n->text) {
		free(n);
		return conf_err_nomem(b->err, b->file);
	}
	memcpy(n->text, ev->data.scalar.value, len);
	n->text[len] = '\0';
	n->text_len = len;
	n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	r = attach(b, n, mark);
	if (r < 0)
		conf_node_free(n);
	return r;
}

static int on_collection_start(struct builder *b, const yaml_event_t *ev)
{
	enum conf_node_kind kind =
		ev->type == YAML_MAPPING_START_EVENT ? CONF_NODE_MAP : CONF_NODE_SEQ;
	const yaml_mark_t *mark = &ev->start_mark;
	struct conf_node *n;
	int r;

	if (b->depth == CONF_YAML_DEPTH_MAX)
		return fail_at(b, mark,
			       "the document is nested more than %d levels deep; flatten it",
			       CONF_YAML_DEPTH_MAX);
	n = node_new(kind, mark);
	if (!n)
		return conf_err_nomem(b->err, b->file);
	r = attach(b, n, mark);
	if (r < 0) {
		conf_node_free(n);
		return r;
	}
	b->stack[b->depth++] = n;
	return 0;
}

static int on_collection_end(struct builder *b)
{
	struct conf_node *n;

	if (b->depth == 0)
		return 0; /* libyaml guarantees balance; nothing to close */
	n = b->stack[--b->depth];
	if (n->kind == CONF_NODE_MAP)
		return check_duplicate_keys(b, n);
	return 0;
}

static int yaml_failure(struct builder *b, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "unknown error";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return conf_err_nomem(b->err, b->file);
	case YAML_READER_ERROR:
		return conf_err_set(b->err, b->file, 0, 0,
				    "invalid YAML: %s at byte %zu; the file must be UTF-8 text",
				    problem, p->problem_offset);
	default:
		break;
	}
	if (p->context)
		return conf_err_set(b->err, b->file, (unsigned)p->problem_mark.line + 1,
				    (unsigned)p->problem_mark.column + 1,
				    "invalid YAML: %s (%s at line %u)", problem, p->context,
				    (unsigned)p->context_mark.line + 1);
	return conf_err_set(b->err, b->file, (unsigned)p->problem_mark.line + 1,
			    (unsigned)p->problem_mark.column + 1, "invalid YAML: %s", problem);
}

static int build(struct builder *b, const char *buf, size_t len)
{
	yaml_parser_t parser;
	bool done = false;
	int r = 0;

	if (!yaml_parser_initialize(&parser))
		return conf_err_nomem(b->err, b->file);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	/* No yaml_parser_set_encoding(): detection is what skips a UTF-8 byte order mark, and
	 * conf_check_text() has already refused the UTF-16 marks (invalid UTF-8). */

	while (!done && r == 0) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&parser, &ev)) {
			r = yaml_failure(b, &parser);
			break;
		}
		switch (ev.type) {
		case YAML_DOCUMENT_START_EVENT:
			if (++b->documents > 1)
				r = fail_at(b, &ev.start_mark,
					    "a second YAML document starts here; keep one "
					    "document per file (remove the \"---\" line)");
			break;
		case YAML_ALIAS_EVENT:
			r = fail_at(b, &ev.start_mark,
				    "aliases are not supported; write the value out in full");
			break;
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++b->nodes > CONF_YAML_NODES_MAX) {
				r = fail_at(b, &ev.start_mark,
					    "the document has more than %u values; split it or "
					    "remove repeated entries",
					    CONF_YAML_NODES_MAX);
				break;
			}
			if (ev.type == YAML_SCALAR_EVENT)
				r = on_scalar(b, &ev);
			else
				r = on_collection_start(b, &ev);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			r = on_collection_end(b);
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return r;
}

int conf_doc_parse(const char *buf, size_t len, const char *file, const char *what,
		   size_t max_bytes, struct conf_node **ret_root, struct conf_error *err)
{
	struct builder b = { .file = file, .err = err };
	int r;

	if (len > max_bytes) {
		conf_err_set(err, file, 0, 0,
			     "the %s is %zu bytes, more than the limit of %zu bytes; make it "
			     "smaller",
			     what, len, max_bytes);
		return -EFBIG;
	}
	if (!buf && len)
		return conf_err_set(err, file, 0, 0, "no text given");
	if (!buf)
		buf = "";
	r = conf_check_text((const unsigned char *)buf, len, file, err);
	if (r < 0)
		return r;
	if (file && conf_has_suffix(file, ".json")) {
		char *copy;

		r = conf_check_json(buf, len, file, err);
		if (r < 0)
			return r;
		/*
		 * Valid JSON may indent with tabs, which YAML forbids; a JSON string cannot
		 * hold a raw tab, so every tab is whitespace and a space keeps lines and
		 * columns where they were.
		 */
		if (memchr(buf, '\t', len)) {
			copy = malloc(len + 1);
			if (!copy)
				return conf_err_nomem(err, file);
			for (size_t i = 0; i < len; i++)
				copy[i] = buf[i] == '\t' ? ' ' : buf[i];
			r = build(&b, copy, len);
			free(copy);
			goto built;
		}
	}
	r = build(&b, buf, len);
built:
	if (r < 0) {
		conf_node_free(b.root);
		return r;
	}
	*ret_root = b.root;
	return 0;
}
