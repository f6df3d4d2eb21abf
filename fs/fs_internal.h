/* SPDX-License-Identifier: MIT */
/*
 * fs internals shared by the FUSE layers and the files of each writable kind. Calls go
 * one way: libfuse's low-level protocol (fs_lowlevel.c: inode numbers, replies, what the
 * kernel may keep) calls the path handlers (fs_ops.c), which call the kind files: job
 * specs (fs_spec.c), ctl files (fs_ctl.c), health reports (fs_health.c), quotas
 * (fs_quota.c), which call what they share (fs_handle.c; and fs_spec.c fs_quota.c for a
 * staged quota). Every layer asks the request it serves through fs_req.c. Not for use
 * outside fs/.
 *
 * Locking, for every function below unless it says otherwise: called with the handle's
 * own mutex held (h->mu) and without ctx->lock, which each takes as it needs (order:
 * handle, then ctx->lock).
 */
#ifndef ASCEND_FS_INTERNAL_H
#define ASCEND_FS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "fs.h"

/* ---- fs_req.c: the request this thread serves ---- */

struct fuse_ctx;
struct fuse_req;

/* fs_req_begin() - this thread serves @req now (each low-level entry point, first). */
void fs_req_begin(struct fuse_req *req);
/* fs_req_current() - that request (for fuse_req_getgroups()); NULL outside one. */
struct fuse_req *fs_req_current(void);
/* fs_req_ctx() - the daemon's context (the session's user data) of that request. */
struct fs_ctx *fs_req_ctx(void);
/* fs_req_caller() - who sent it (uid 0 and pid 0 for a RELEASE, which carries neither). */
const struct fuse_ctx *fs_req_caller(void);
/*
 * fs_req_from_helper() - is @fc the notify helper's request (fs_notify.c), to be
 * recognised and not acted on? Never when no helper runs: a request from another PID
 * namespace carries pid 0.
 */
bool fs_req_from_helper(const struct fs_ctx *ctx, const struct fuse_ctx *fc);
/* fs_caller_pid() - the pid of the process whose request this thread serves (0 for a
 * RELEASE, which names none, or outside a request). */
pid_t fs_caller_pid(void);
/* fs_req_set_size_not_own() - fs_op_getattr() of this thread answered with an open
 * snapshot's size, not the file's (the kernel must not keep it);
 * fs_req_size_not_own() - did it. */
void fs_req_set_size_not_own(bool not_own);
bool fs_req_size_not_own(void);

/* ---- fs_ops.c: the path handlers, as libfuse's path API had them ---- */

struct fuse_file_info;
struct statvfs;

/* fs_op_*() - one operation on absolute path @path (of the mount); 0 (read and write:
 * bytes) or -errno. The caller (fs_lowlevel.c) turned inode numbers into paths and
 * called fs_req_begin(). */
int fs_op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi);
/* fs_op_readdir() - the names of directory @path, "." and ".." first, each to @fill. */
int fs_op_readdir(const char *path, int (*fill)(void *data, const char *name), void *data);
int fs_op_open(const char *path, struct fuse_file_info *fi);
int fs_op_create(const char *path, mode_t mode, struct fuse_file_info *fi);
/*
 * fs_op_create_answering(), fs_op_create_answered() - around the answer to a create that
 * fs_op_create() accepted (@fi its open file): the opener (fs_handle_flush_is_openers())
 * is read from /proc only after the answer, as the kernel holds its lock of jobs/ until
 * it has one, and every create of a burst waits for that lock (the read was a fifth of a
 * create's time in the daemon). _answering() returns the caller's thread id, for
 * _answered() (the request is gone once answered); from one to the other the handle is
 * held, so the opener's write or close waits until its opener is known. A thread that
 * opened the file and ended at once is then unknown, as a caller in another pid
 * namespace is: its process's close stages nothing and the spec is applied at the
 * release.
 */
pid_t fs_op_create_answering(struct fuse_file_info *fi);
void fs_op_create_answered(struct fuse_file_info *fi, pid_t opener_tid);
int fs_op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi);
int fs_op_write(const char *path, const char *data, size_t size, off_t off,
		struct fuse_file_info *fi);
int fs_op_flush(const char *path, struct fuse_file_info *fi);
int fs_op_release(const char *path, struct fuse_file_info *fi);
int fs_op_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int fs_op_mkdir(const char *path, mode_t mode);
int fs_op_rmdir(const char *path);
int fs_op_unlink(const char *path);
int fs_op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi);
int fs_op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int fs_op_rename(const char *from, const char *to, unsigned int flags);
int fs_op_statfs(const char *path, struct statvfs *st);

/* What a ctl file buffers at most: a partial line and one write. */
#define CTL_BUFFER_MAX_BYTES (64 * 1024)

enum handle_kind {
	H_SNAPSHOT,	/* read-only: bytes rendered at open() */
	H_UPLOAD,	/* jobs/<name>.<ext> being written */
	H_SPEC,		/* jobs/<name>/spec being written */
	H_CTL,		/* a ctl file: one verb per line */
	H_HEALTH,	/* nodes/<server>/health: an agent's report */
	H_QUOTA,	/* queues/<queue>/quota: root writes a number */
	H_LOG,		/* jobs/<job>/log (written by agents) or log.1 (fs_joblog.c) */
	H_WHATIF,	/* cluster/whatif opened to write: a dry run (fs_whatif.c) */
};

struct fs_handle {
	enum handle_kind kind;
	struct fs_path path;
	struct fs_view snap;	/* H_SNAPSHOT: bytes as of open() (a blob reference) */
	struct fs_kcache_slot *kslot; /* H_SNAPSHOT read through the page cache: its slot
				 * (fs_kcache_open()), under ctx->lock; NULL: direct_io */
	char *buf;		/* H_UPLOAD, H_SPEC, H_CTL: what was written */
	size_t len, cap;
	bool dirty;	/* written since the last validation */
	bool failed;	/* refused at write(): oversize or binary; the rejection is recorded */
	bool checked;	/* H_UPLOAD, H_SPEC: a flush validated the buffer */
	int last_err;	/* outcome of the last validation, repeated on further flushes */
	char *last_why;	/* the last validation's refusal (NULL when it accepted) */
	struct conf_job_spec *accepted; /* what the last validation accepted, submitted at
				 * release under @hold */
	struct sched_hold *hold;  /* the accepted job's record (sched_job_check_hold) */
	uid_t uid;
	gid_t gid;
	bool may_operate;	  /* root or in operator_group as of open(): fs_may_operate() */
	struct fs_proc_id opener; /* H_UPLOAD, H_SPEC, H_QUOTA: the process that opened it */
	bool staged;		  /* H_UPLOAD, H_SPEC: what the last validation accepted is
				   * staged (fs_stage_put) */
	gid_t *groups;		  /* H_UPLOAD, H_SPEC: the writer's supplementary groups */
	size_t group_count;
	uint64_t job_serial;	  /* H_CTL on a job: the job it was opened on; H_UPLOAD,
				   * H_SPEC: the job its release submitted (0: none) */
	struct fs_upload *upload; /* H_UPLOAD, H_SPEC: entry in ctx->uploads */
	struct fs_joblog_view *log; /* H_LOG: the log and where it reads (fs_joblog.c) */
	char *answer;		  /* H_WHATIF: the answer to the spec in buf (dirty: to
				   * compute again), answer_len bytes */
	size_t answer_len;
	off_t spec_off;		  /* H_WHATIF: where in the file the spec begins (the
				   * offset of the write that began it) */
	pthread_mutex_t mu;
	bool closing;		/* H_SNAPSHOT, H_CTL: flushed, its release not yet here
				 * (fs_handle_set_closing()) */
	struct fs_handle *prev, *next; /* among its user's (fs_handle_list()), so none
				 * outlives the daemon */
};

/* The open files of one uid (ctx->handle_users, fs_handle.c). */
struct fs_handle_user {
	uid_t uid;
	unsigned count;			/* files listed */
	unsigned closing_count;		/* ... of them closing (a FLUSH came, no RELEASE yet) */
	uint64_t closing_usec;		/* the latest of those FLUSHes */
	bool waiter;			/* a request waits for a closing one's release */
	uint64_t releases;		/* closing files released so far (while the entry
					 * lived) */
	struct fs_handle *head;
	struct fs_handle_user *next;	/* bucket chain */
};

/* fs_handle.c */

/*
 * fs_handle_buffer_put() - write @size bytes of @data at @off into @h's buffer (kept
 * NUL-terminated), growing it up to @max bytes. Returns 0, -EINVAL (@off leaves a hole),
 * -EFBIG (past @max) or -ENOMEM.
 */
int fs_handle_buffer_put(struct fs_handle *h, const char *data, size_t size, off_t off,
			 size_t max);

/*
 * Every open file is listed by its opener's uid, so that what a user holds is counted
 * from that user's files alone: an open's check costs the same however many files others
 * hold (a client holding 20,000 uploads must not slow anybody else's `cat`). The
 * functions below run under ctx->lock, not h->mu.
 */

/* fs_handle_list() - list @h (h->uid set) among its user's. Returns 0 or -ENOMEM. */
int fs_handle_list(struct fs_ctx *ctx, struct fs_handle *h);

/* fs_handle_unlist() - unlist @h (one not listed is ignored); wakes a request waiting
 * for the release of a closing file of its user's (fs_handle_wait_release()). */
void fs_handle_unlist(struct fs_ctx *ctx, struct fs_handle *h);

/* fs_handles_of() - the first of @uid's open files (then ->next), or NULL. */
struct fs_handle *fs_handles_of(const struct fs_ctx *ctx, uid_t uid);

/* fs_handle_unlist_any() - unlist and return one open file, NULL when none is left (for
 * freeing them all at exit). */
struct fs_handle *fs_handle_unlist_any(struct fs_ctx *ctx);

/*
 * fs_handle_admit() - may @uid open one more file that holds snapshot blob @b (borrowed;
 * NULL: a ctl file, which buffers up to CTL_BUFFER_MAX_BYTES)? Counts @uid's open
 * snapshots and ctl files against FS_OPEN_FILES_PER_USER and FS_SNAPSHOT_BYTES_PER_USER
 * (fs_snapshot_tally_*), in O(files @uid holds). Returns 0 (root always) or -EMFILE.
 */
int fs_handle_admit(struct fs_ctx *ctx, uid_t uid, struct fs_blob *b);

/*
 * fs_handle_set_closing() - a FLUSH of @h (listed) came: for the bound, one of its
 * user's files is closing, at @now_usec. Only H_SNAPSHOT and H_CTL count; a user other
 * than root gets no noflush on a read-only open, so that its close() says so (fs_open()).
 */
void fs_handle_set_closing(struct fs_ctx *ctx, struct fs_handle *h, uint64_t now_usec);

/*
 * fs_handle_wait_release() - for an open fs_handle_admit() refused: while one of @uid's
 * files is closing, flushed within FS_RELEASE_WAIT_MSEC (the kernel sends RELEASE after
 * close() returned), wait (ctx->lock dropped meanwhile) for such a release, until
 * @deadline (an fs_deadline_in() time) at the latest; the caller then looks again, and
 * may wait again until the same deadline. One request per user waits; the others, and a
 * user who closed nothing within the window, are answered at once (a duplicate
 * descriptor's close flushes too, and its file stays open: such a wait ends at the
 * deadline), and nothing waits in single-threaded mode (nobody could release). Returns
 * true when a closing file of @uid's was released meanwhile.
 */
bool fs_handle_wait_release(struct fs_ctx *ctx, uid_t uid, const struct timespec *deadline);

/*
 * fs_handle_flush_is_openers() - is the close being flushed (the current request's) by
 * the process that opened @h? Only the opener's close stages what it accepted.
 */
bool fs_handle_flush_is_openers(const struct fs_handle *h);

/*
 * fs_refusal_note() - log @reason (borrowed; user bytes escaped) at @level and record it
 * as a "refused" event of server @server (NULL: cluster/events). Takes ctx->lock.
 */
void fs_refusal_note(struct fs_ctx *ctx, int level, const char *server, const char *reason);

/* fs_spec.c: jobs/<name>.<ext> (H_UPLOAD) and jobs/<name>/spec (H_SPEC) */

/*
 * fs_spec_upload_register() - register @h as the one writer of job @h->path.job's spec,
 * with @ext ("" for jobs/<name>/spec) and the writer's @groups (@group_count, borrowed).
 * Called with ctx->lock held (dropped and taken again around NSS). Returns 0, -EBUSY,
 * -EMFILE (the user's max_uploads_per_user; a "refused" event says so) or -ENOMEM.
 */
int fs_spec_upload_register(struct fs_ctx *ctx, struct fs_handle *h, const char *ext,
			    const gid_t *groups, size_t group_count);

/*
 * fs_spec_check_fs_rules() - the rules of a spec the daemon checks itself, not the
 * scheduler: its queue's `groups` (the writer's groups in h->groups as of open) and a
 * checkpoint_dir outside the mount. Takes ctx->lock briefly. Returns 0, -EACCES (not in
 * the queue's groups), -EINVAL (checkpoint_dir) or -ENOMEM, with @reason
 * (SCHED_REASON_MAX) filled.
 */
int fs_spec_check_fs_rules(struct fs_ctx *ctx, const struct fs_handle *h,
			   const struct conf_job_spec *spec, char *reason);

/* fs_spec_upload_unregister() - unlist and free @h's upload, if any (takes ctx->lock). */
void fs_spec_upload_unregister(struct fs_ctx *ctx, struct fs_handle *h);

/* fs_spec_write() - buffer a write; returns @size or the negative errno (refusals recorded). */
int fs_spec_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size,
		  off_t off);

/* fs_spec_truncate() - cut the buffer to @size bytes (ftruncate; only shorter): 0, the
 * refusal of an earlier write, or -EINVAL. Caller holds h->mu. */
int fs_spec_truncate(struct fs_ctx *ctx, struct fs_handle *h, off_t size);

/* fs_spec_flush() - a close: say whether the spec would be accepted; submit nothing. */
int fs_spec_flush(struct fs_ctx *ctx, struct fs_handle *h);

/*
 * fs_spec_release() - the last descriptor is gone: submit, or record the rejection.
 * Returns whether it submitted a job (its pass may be owed: see fs_spec_log_submitted);
 * then h->job_serial is that job's serial, and the calling thread remembers it for
 * fs_spec_log_submitted().
 */
bool fs_spec_release(struct fs_ctx *ctx, struct fs_handle *h);

/*
 * fs_spec_log_submitted() - log the state of the job the calling thread's last
 * fs_spec_release() submitted as @name (by @uid): by its serial, so a job of that name
 * submitted since (the first cancelled and removed meanwhile) is not reported in its
 * place ("removed since"). Logs nothing when that release submitted nothing. Called on
 * the releasing thread after the request's durable() wait, when its deferred pass has
 * run. Takes ctx->lock.
 */
void fs_spec_log_submitted(struct fs_ctx *ctx, const char *name, uid_t uid);

/*
 * fs_spec_log_submitted_when_durable() - the same line, logged by the committer once the
 * calling thread's changes are written (nothing if their write fails), so the release
 * need not wait (fs_store_when_durable()). 0; -EAGAIN when that release submitted
 * nothing or there is no store; -ENOMEM: then log with fs_spec_log_submitted() after
 * fs_store_sync().
 */
int fs_spec_log_submitted_when_durable(struct fs_ctx *ctx, const char *name, uid_t uid);

/* fs_ctl.c: H_CTL */

/* fs_ctl_write() - append a write and run its complete lines; returns @size or -errno. */
int fs_ctl_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size);

/*
 * fs_ctl_run() - run the complete lines buffered in @h; with @all also a final partial
 * one (close). The first refused line drops the rest. Returns 0 or its -errno.
 */
int fs_ctl_run(struct fs_ctx *ctx, struct fs_handle *h, bool all);

/* fs_health.c: H_HEALTH */

/* fs_health_write() - buffer a report's bytes; returns @size or -EINVAL/-EFBIG/-ENOMEM. */
int fs_health_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size);

/* fs_health_apply() - a close: apply the buffered report whole, or refuse it. */
int fs_health_apply(struct fs_ctx *ctx, struct fs_handle *h);

/* fs_quota.c: H_QUOTA */

/* fs_quota_write() - buffer the number; returns @size or -EINVAL (refused) / -ENOMEM. */
int fs_quota_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size);

/*
 * fs_quota_apply() - check the buffered quota at a close, staging it from the opener's;
 * apply it with @commit (the release). Returns 0 or -EINVAL/-EACCES/-ENOMEM.
 */
int fs_quota_apply(struct fs_ctx *ctx, struct fs_handle *h, bool commit);

/* fs_quota_replay() - apply staged quota @s (borrowed) at start, as its release would. */
void fs_quota_replay(struct fs_ctx *ctx, const struct fs_staged *s);

/* fs_whatif.c: H_WHATIF */

/* fs_whatif_write() - buffer a spec's bytes at @off (up to 64 KiB: EFBIG); @size. */
int fs_whatif_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size,
		    off_t off);

/*
 * fs_whatif_read() - the file as it reads: the spec written, then the answer (computed
 * at the first read past the spec after a write; sched_whatif_run()). Returns the bytes
 * read, -EAGAIN (another dry run was being answered for 2 s: ask again) or -ENOMEM.
 */
int fs_whatif_read(struct fs_ctx *ctx, struct fs_handle *h, char *buf, size_t size, off_t off);

/* fs_whatif_truncate() - ftruncate()/O_TRUNC: keep @size bytes of the spec (no more than
 * were written: EINVAL), to be asked again. */
int fs_whatif_truncate(struct fs_handle *h, off_t size);

/* fs_whatif_free() - drop the documents kept for the dry runs of the last second (at
 * exit, every handle gone). */
void fs_whatif_free(void);

/* fs_joblog.c: H_LOG */

struct fs_joblog_view;

/*
 * fs_joblog_open() - open job @serial's log for @h (h->path: FS_JOB_LOG or
 * FS_JOB_LOG_OLD, the job's name in path.job): for appending by an agent (@writer), or
 * reading. Sets h->log. Returns 0, -ENOENT (log.1 when there is none) or -ENOMEM.
 */
int fs_joblog_open(struct fs_ctx *ctx, struct fs_handle *h, uint64_t serial, bool writer);

/*
 * fs_joblog_read() - up to @size bytes at @off. log.1 is a snapshot at open; log reads
 * the current file as it grows; after a rotation a reader finishes the file it read
 * (now log.1), and a read before the furthest point it reached reads the new current
 * file, as a truncated file reads (fs.h). Returns the bytes read or -errno.
 */
int fs_joblog_read(struct fs_ctx *ctx, struct fs_handle *h, char *buf, size_t size, off_t off);

/*
 * fs_joblog_write() - take an agent's bytes (offsets ignored: appended); each whole
 * line is checked and appended at once. Returns @size, -EINVAL (a bad line: it and the
 * rest of the buffer dropped, the lines before it kept; a "refused" event), -EFBIG (a
 * line over 64 KiB), -ENOENT (the job's record is gone), -ENOMEM or an I/O error.
 */
int fs_joblog_write(struct fs_ctx *ctx, struct fs_handle *h, const char *data, size_t size);

/* fs_joblog_flush() - a close: append a last partial line, and with a state store
 * fdatasync() what this handle appended. Errors as fs_joblog_write(). */
int fs_joblog_flush(struct fs_ctx *ctx, struct fs_handle *h);

/*
 * fs_joblog_proc.c: which process wrote each line of a log file, and what a
 * per-process file reads (no locks: the caller holds its log's).
 *
 * fs_joblog_line_proc() - the process of the line beginning at @line (@len bytes, a
 * whole line or its beginning), as fs_joblog.c writes them: "[g<generation> <process>
 * <server>] <text>". Returns 1 with *@ret, 0 when @len bytes do not tell yet, or
 * -EINVAL (no line of that shape).
 */
int fs_joblog_line_proc(const char *line, size_t len, uint32_t *ret);

/* Bytes of one process's lines in a log's two files. */
struct fs_joblog_proc_bytes {
	uint32_t proc;
	uint64_t cur_bytes, old_bytes;	/* in <serial>.log, <serial>.log.1 */
};

/* The processes with lines in a log, by process ascending. Zero-initialised is empty. */
struct fs_joblog_index {
	struct fs_joblog_proc_bytes *v;
	size_t count, cap;
};

/* fs_joblog_index_add() - count @bytes more of @proc's in the current file, or in log.1
 * when @old. Returns 0 or -ENOMEM (nothing changed). */
int fs_joblog_index_add(struct fs_joblog_index *x, uint32_t proc, uint64_t bytes, bool old);

/* fs_joblog_index_rotate() - the current file became log.1 (the old log.1 went). */
void fs_joblog_index_rotate(struct fs_joblog_index *x);

/* fs_joblog_index_find() - @proc's entry (borrowed, valid until the next change), or
 * NULL when it has no lines in either file. */
const struct fs_joblog_proc_bytes *fs_joblog_index_find(const struct fs_joblog_index *x,
							uint32_t proc);

/* fs_joblog_index_release() - free @x's entries; empty again. */
void fs_joblog_index_release(struct fs_joblog_index *x);

/* Where a scan of a file is: inside a line too long for one buffer, and its process. */
struct fs_joblog_scan_state {
	bool in_line;
	uint32_t proc;
};

/* A line of a scan, or a piece of one too long for the buffer (each piece with the
 * line's process; FS_LOG_PROC_NONE: a line of no process). Returns 0, or < 0 to stop. */
typedef int (*fs_joblog_line_fn)(void *arg, uint32_t proc, const char *line, size_t len);

/* The scan buffer: a line as fs_joblog.c writes one (64 KiB of text and its head) fits,
 * and it stays under malloc's mmap threshold */
#define FS_JOBLOG_SCAN_BYTES (96u * 1024)

/*
 * fs_joblog_scan() - read the bytes [@from, @to) of @fd, at most @cap (the size of
 * @buf) of them, and give each whole line to @fn; a line cut by the buffer's end is
 * left to the next call (given in pieces only when it alone fills @buf); a last line
 * without a newline at @to is a line. @fn returns 0 (taken), > 0 (not taken: the scan
 * stops before it, @st as it was before it) or < 0 (an error, returned). @st carries a
 * line across calls (zero at a file's start). Returns the offset after the last piece
 * taken (== @from: none), or -errno of pread() or @fn's.
 */
int64_t fs_joblog_scan(int fd, uint64_t from, uint64_t to, char *buf, size_t cap,
		       struct fs_joblog_scan_state *st, fs_joblog_line_fn fn, void *arg);

/*
 * A reader of one process's lines of a log file: where it is, as a place in the file
 * (the start of a line or piece, @skip bytes of it read) and the offset in what the
 * process's file reads that it is. A few words: nothing is buffered between reads.
 * Zero-initialised with .proc set is at the file's start.
 */
struct fs_joblog_filter {
	uint32_t proc;
	uint64_t pos;			/* the offset reached in the process's lines */
	uint64_t at;			/* the file's offset of the line where pos is */
	size_t skip;			/* bytes of that line before pos */
	struct fs_joblog_scan_state state; /* the scan's state at @at */
};

/*
 * fs_joblog_filter_read() - up to @size bytes at @off of what @f's process wrote in the
 * first @avail bytes of @fd (a file that only grows; from its start after a reset),
 * into @dst. Reading on from where the last read ended scans from there; a read before
 * it scans again from the start. Returns the bytes read (0 at the end) or -errno
 * (-ENOMEM, pread()'s; @f stays where the last whole pass left it).
 */
int fs_joblog_filter_read(struct fs_joblog_filter *f, int fd, uint64_t avail, char *dst,
			  size_t size, uint64_t off);

/* fs_joblog_filter_reset() - to the start of a new file (its process kept). */
void fs_joblog_filter_reset(struct fs_joblog_filter *f);

/* fs_joblog_close() - free @v (h->log or one not yet set; NULL allowed); clears h->log
 * when it is @v (@h may be NULL). */
void fs_joblog_close(struct fs_ctx *ctx, struct fs_handle *h, struct fs_joblog_view *v);

#endif
