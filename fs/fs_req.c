/* SPDX-License-Identifier: MIT */
/*
 * The FUSE request a daemon thread serves, for the path handlers (fs_ops.c) that take
 * paths as under libfuse's path API: who sent it, and whether it is the notify helper's.
 * Set by each low-level entry point (fs_lowlevel.c) before it calls a handler.
 */
#include "config.h"

#include <fuse_lowlevel.h>

#include "fs_internal.h"

static _Thread_local fuse_req_t cur_req;
static _Thread_local struct fs_ctx *cur_ctx;
/* fs_op_getattr() in this thread answered with an open snapshot's size, not the file's */
static _Thread_local bool size_not_own;

void fs_req_begin(fuse_req_t req)
{
	cur_req = req;
	cur_ctx = fuse_req_userdata(req);
}

fuse_req_t fs_req_current(void)
{
	return cur_req;
}

struct fs_ctx *fs_req_ctx(void)
{
	return cur_ctx;
}

const struct fuse_ctx *fs_req_caller(void)
{
	return fuse_req_ctx(cur_req);
}

bool fs_req_from_helper(const struct fs_ctx *ctx, const struct fuse_ctx *fc)
{
	pid_t helper = __atomic_load_n(&ctx->notifier_tid, __ATOMIC_SEQ_CST);

	return helper > 0 && fc->pid == helper;
}

pid_t fs_caller_pid(void)
{
	return cur_req ? fs_req_caller()->pid : 0;
}

void fs_req_set_size_not_own(bool not_own)
{
	size_not_own = not_own;
}

bool fs_req_size_not_own(void)
{
	return size_not_own;
}
