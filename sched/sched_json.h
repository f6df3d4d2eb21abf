/* SPDX-License-Identifier: MIT */
/*
 * JSON building blocks every file of sched/ that prints JSON shares (sched_json.c):
 * jansson returns NULL (and set/append fail) when memory runs out or a string is not
 * UTF-8; a document silently missing a key would still look well-formed, so every call
 * goes through these helpers, which latch the failure (per thread) until
 * sched_json_finish() or sched_json_line() reports it. Rendering of one cluster is
 * serialized by its caller. Calls nothing else of sched/.
 */
#ifndef ASCENDFS_SCHED_JSON_H
#define ASCENDFS_SCHED_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* sched_jstr() - a JSON string of @s (NULL: ""); bytes that are not UTF-8 become '?'
 * (user text, truncation). New reference, NULL (latched) without memory. */
json_t *sched_jstr(const char *s);

/* sched_jset() - set @o[@key] to @v (stolen); sched_jpush() - append @v (stolen) to
 * array @a. A NULL @o, @a or @v, or a failure, is latched. */
void sched_jset(json_t *o, const char *key, json_t *v);
void sched_jpush(json_t *a, json_t *v);

/*
 * Reals the daemon prints are short and stable: sched_jsec() is a duration in seconds to
 * the millisecond (heartbeat_age_sec: 0.002, not 0.0019449999999999999), sched_jratio()
 * @num / @den to 4 decimals (0 when @den is 0), and sched_json_finish() prints at most 15
 * significant digits, so a rounded value reads as written.
 */
json_t *sched_jsec(uint64_t usec);
json_t *sched_jratio(uint64_t num, uint64_t den);

/* sched_jtime() - set @o[@key] to @usec as sched_iso_time() text, null for 0. */
void sched_jtime(json_t *o, const char *key, uint64_t usec);

/*
 * sched_json_finish() - dump @root (consumed) with @flags and a trailing newline into
 * *@ret (new, free()) and *@ret_len. Returns 0, or -ENOMEM when anything since the last
 * finish failed (the latch is cleared either way).
 */
int sched_json_finish(json_t *root, char **ret, size_t *ret_len, size_t flags);

/* sched_json_line() - @o (consumed) as one compact line without a newline: new string,
 * or NULL when it or anything since the last finish failed (the latch is cleared). */
char *sched_json_line(json_t *o);

struct sched_buf;

/* sched_json_buf_line() - append @o (consumed) to @b as one line and "\n"; a failure
 * sets b->err (-ENOMEM). */
void sched_json_buf_line(struct sched_buf *b, json_t *o);

#endif
