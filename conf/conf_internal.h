/* SPDX-License-Identifier: MIT */
/*
 * conf internals shared by the files of conf/: the positioned document tree, error
 * helpers, typed readers of tree nodes and small string utilities. Not installed, not
 * used outside conf/ (tests may include it).
 */
#ifndef ASCENDFS_CONF_INTERNAL_H
#define ASCENDFS_CONF_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

/* Hostile-input bounds of the document tree. */
#define CONF_YAML_DEPTH_MAX 64		/* nested mappings/sequences */
#define CONF_YAML_NODES_MAX (1u << 20)	/* scalars + collections in one document */

/* ---- conf_error.c ---- */

/*
 * conf_err_set() - fill @err (may be NULL: then nothing is written) with @file, @line,
 * @column and the printf-style message. @file may be NULL (empty). Returns -EINVAL so
 * callers can `return conf_err_set(...)`.
 */
int conf_err_set(struct conf_error *err, const char *file, unsigned line, unsigned column,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* conf_err_vset() - va_list form of conf_err_set(). Returns -EINVAL. */
int conf_err_vset(struct conf_error *err, const char *file, unsigned line, unsigned column,
		  const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

/* conf_err_nomem() - record "out of memory" in @err (may be NULL). Returns -ENOMEM. */
int conf_err_nomem(struct conf_error *err, const char *file);

/*
 * conf_quote() - @s (NUL-terminated, borrowed) as a double-quoted string for a message,
 * written into @buf of @len bytes (>= 8): control characters, '"' and '\' escaped, long
 * strings cut with "...". Returns @buf.
 */
char *conf_quote(const char *s, char *buf, size_t len);

/* Size of a buffer for conf_quote() in messages. */
#define CONF_QUOTE_MAX 80

/* ---- conf_yaml.c: the positioned document tree ---- */

enum conf_node_kind {
	CONF_NODE_SCALAR,
	CONF_NODE_MAP,
	CONF_NODE_SEQ,
};

/*
 * One node of a parsed document. A mapping's items alternate key, value (keys are
 * always scalars; `count` counts pairs); a sequence's items are its entries.
 */
struct conf_node {
	enum conf_node_kind kind;
	unsigned line;			/* 1-based, where the node starts */
	unsigned column;		/* 1-based, in characters */
	char *text;			/* scalar text, NUL-terminated (never contains NUL) */
	size_t text_len;
	bool quoted;			/* scalar written quoted or as a block scalar */
	struct conf_node **items;
	size_t count;			/* map: pairs; seq: entries */
	size_t nitems;			/* used slots in items (a map's keys and values) */
	size_t cap;			/* allocated slots in items */
};

/*
 * conf_doc_parse() - check and parse @buf (@len bytes, need not be NUL-terminated)
 * into a tree. JSON syntax (jansson, duplicate keys rejected) is checked first when
 * @file ends in ".json"; the tree is then built by libyaml (JSON is YAML flow syntax).
 * @file: name for messages (borrowed).
 * @what: "spec" or "configuration", for the size message.
 * @max_bytes: larger input fails with -EFBIG.
 * @ret_root: the root node (new, conf_node_free()), or NULL for an empty document.
 * Refused: binary or non-UTF-8 input, syntax errors, aliases, more than one document,
 * duplicate keys, non-scalar keys, nesting deeper than CONF_YAML_DEPTH_MAX, more than
 * CONF_YAML_NODES_MAX nodes.
 * Returns 0, -EINVAL, -EFBIG or -ENOMEM; @err filled on failure.
 */
int conf_doc_parse(const char *buf, size_t len, const char *file, const char *what,
		   size_t max_bytes, struct conf_node **ret_root, struct conf_error *err);

/*
 * conf_check_text() - refuse @p (@len bytes) unless it is UTF-8 text without NUL bytes
 * or control characters other than tab, CR and LF (a leading byte order mark is
 * skipped). The error names the line and column of the first bad byte.
 * Returns 0 or -EINVAL with @err.
 */
int conf_check_text(const unsigned char *p, size_t len, const char *file,
		    struct conf_error *err);

/*
 * conf_check_json() - refuse @buf (@len bytes) unless it is one JSON value without
 * duplicate object keys (jansson; blank text passes, so that the caller can say "empty"
 * in its own words). Returns 0, -EINVAL with @err ("invalid JSON: ...") or -ENOMEM.
 */
int conf_check_json(const char *buf, size_t len, const char *file, struct conf_error *err);

/* conf_node_free() - free @n and its subtree; NULL is fine. */
void conf_node_free(struct conf_node *n);

/* conf_node_is_null() - true for NULL or an unquoted "", "~", "null" (any case). */
bool conf_node_is_null(const struct conf_node *n);

/* conf_node_kind_name() - "a mapping", "a list" or "a string" for messages. */
const char *conf_node_kind_name(const struct conf_node *n);

/*
 * conf_map_get() - the value for @key in mapping @map (borrowed), or NULL when the key
 * is absent or its value is null (an absent key and `key:` mean the same).
 */
struct conf_node *conf_map_get(const struct conf_node *map, const char *key);

/* ---- typed readers (conf_util.c); @key names the field in messages ---- */

/* The file being read and where errors go. */
struct conf_ctx {
	const char *file;
	struct conf_error *err;
};

/* conf_fail() - error at node @n (NULL: the whole document). Returns -EINVAL. */
int conf_fail(const struct conf_ctx *ctx, const struct conf_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * conf_check_keys() - fail on the first key of @map not in @allowed (NULL-terminated),
 * naming it and listing @allowed. Returns 0 or -EINVAL.
 */
int conf_check_keys(const struct conf_ctx *ctx, const struct conf_node *map,
		    const char *const *allowed);

/* conf_expect_map() - fail unless @n is a mapping; @key names it. 0 or -EINVAL. */
int conf_expect_map(const struct conf_ctx *ctx, const struct conf_node *n, const char *key);

/* conf_expect_seq() - fail unless @n is a list; @key names it. 0 or -EINVAL. */
int conf_expect_seq(const struct conf_ctx *ctx, const struct conf_node *n, const char *key);

/*
 * conf_read_uint() - @n as a decimal whole number in [@min, @max] (quoted digits are
 * accepted; signs, leading zeros, fractions are not). @unit is appended to the range in
 * messages ("" or e.g. " seconds"). Returns 0 or -EINVAL.
 */
int conf_read_uint(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		   uint64_t min, uint64_t max, const char *unit, uint64_t *ret);

/*
 * conf_read_seconds() - @n as whole seconds or a duration ("5s", "2m"), in [@min, @max].
 * Returns 0 or -EINVAL.
 */
int conf_read_seconds(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		      uint64_t min, uint64_t max, uint64_t *ret);

/* conf_read_bool() - true/false/yes/no/on/off, any case. Returns 0 or -EINVAL. */
int conf_read_bool(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		   bool *ret);

/*
 * conf_read_string() - @n as a non-empty string without control characters other
 * than tab and (when @multiline) newline. *ret is borrowed from the tree.
 * Returns 0 or -EINVAL.
 */
int conf_read_string(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		     bool multiline, const char **ret);

/* conf_read_name() - a string that passes conf_name_is_valid(); @what e.g. "job name". */
int conf_read_name(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		   const char *what, const char **ret);

/*
 * conf_read_ip() - an IPv4/IPv6 literal; *ret (new, free()) is its canonical text and
 * *ret_family AF_INET or AF_INET6 (@ret_family may be NULL). Returns 0, -EINVAL, -ENOMEM.
 */
int conf_read_ip(const struct conf_ctx *ctx, const struct conf_node *n, const char *key,
		 char **ret, int *ret_family);

/*
 * conf_read_server_type() - a built-in server type name. Returns 0 or -EINVAL (the
 * message lists the known types).
 */
int conf_read_server_type(const struct conf_ctx *ctx, const struct conf_node *n,
			  const char *key, const struct conf_server_type **ret);

/*
 * conf_read_recovery_list() - @n as a list of recovery strategy words (or one word),
 * each at most once, at least one: into @list (CONF_RECOVERY_COUNT entries), their
 * number in *ret_count. Returns 0 or -EINVAL.
 */
int conf_read_recovery_list(const struct conf_ctx *ctx, const struct conf_node *n,
			    const char *key, enum conf_recovery *list, size_t *ret_count);

/* ---- string helpers (conf_util.c) ---- */

/* conf_strdup_or_null() - strdup(@s), or NULL for NULL. Sets *ok false on ENOMEM. */
char *conf_strdup_or_null(const char *s, bool *ok);

/* conf_has_suffix() - true when @s ends with @suffix, ignoring ASCII case. */
bool conf_has_suffix(const char *s, const char *suffix);

/* conf_format_duration() - @sec as "3d", "1h30m", "45s" or "0" into @buf (>= 32 bytes). */
char *conf_format_duration(uint64_t sec, char *buf, size_t len);

/* conf_server_type_names() - "atlas800, atlas800t-a2, ..." into @buf. Returns @buf. */
char *conf_server_type_names(char *buf, size_t len);

/*
 * A set of strings with a value each (open addressing), used for uniqueness checks over
 * large inventories. Keys are borrowed and must outlive the map.
 */
struct conf_strmap {
	const char **keys;
	const void **values;
	size_t cap;	/* power of two */
	size_t count;
};

/* conf_strmap_init() - empty map for about @expected keys. Returns 0 or -ENOMEM. */
int conf_strmap_init(struct conf_strmap *m, size_t expected);

/* conf_strmap_release() - free the map's arrays (not the keys). */
void conf_strmap_release(struct conf_strmap *m);

/*
 * conf_strmap_add() - insert @key -> @value unless @key is present; then *ret_old (may
 * be NULL) gets the present value and 1 is returned. Returns 0 when inserted, 1 when
 * present, -ENOMEM.
 */
int conf_strmap_add(struct conf_strmap *m, const char *key, const void *value,
		    const void **ret_old);

/* ---- YAML output (conf_util.c), a thin layer over libyaml's emitter ---- */

struct conf_out;

/* conf_out_new() - start a block-style document. NULL on ENOMEM. */
struct conf_out *conf_out_new(void);

/*
 * conf_out_finish() - end the document; on success *ret_buf (new, NUL-terminated) and
 * *ret_len receive the text. Frees @o in every case. Returns 0 or -ENOMEM.
 */
int conf_out_finish(struct conf_out *o, char **ret_buf, size_t *ret_len);

/* conf_out_free() - abandon @o; NULL is fine. */
void conf_out_free(struct conf_out *o);

/* Each emitter returns 0 or -ENOMEM and is a no-op once an earlier call failed. */
int conf_out_map_start(struct conf_out *o, bool flow);
int conf_out_map_end(struct conf_out *o);
int conf_out_seq_start(struct conf_out *o, bool flow);
int conf_out_seq_end(struct conf_out *o);
/* A string value, quoted when it would otherwise read as a number, bool or null. */
int conf_out_str(struct conf_out *o, const char *s);
/* A string value or null for NULL. */
int conf_out_str_or_null(struct conf_out *o, const char *s);
int conf_out_uint(struct conf_out *o, uint64_t v);
int conf_out_bool(struct conf_out *o, bool v);
int conf_out_null(struct conf_out *o);
/* A mapping key (plain). */
int conf_out_key(struct conf_out *o, const char *key);

/*
 * The `state:` section (conf_state.c): conf_read_state() reads it into @c (defaults
 * already set; the cluster's name read), conf_render_state() writes it as
 * cluster/config shows it. Returns 0, -EINVAL (@ctx's error set) or -ENOMEM.
 */
int conf_read_state(const struct conf_ctx *ctx, const struct conf_node *root,
		    struct conf_cluster *c);
void conf_render_state(struct conf_out *o, const struct conf_cluster *c);

#endif
