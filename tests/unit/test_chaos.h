/* SPDX-License-Identifier: MIT */
/*
 * Allocation-failure injection for one test binary (include it once, in the test's .c).
 * Defines TEST_CHAOS when it works, and chaos_countdown (allocations left before one
 * fails; -1 never), chaos_injected (a failure was returned) and chaos_live (live
 * allocations).
 */
#ifndef ASCENDFS_TEST_CHAOS_H
#define ASCENDFS_TEST_CHAOS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Allocation-failure injection (jansson test_chaos.c, SQLite OOM tests): glibc lets a
 * program replace malloc, and the replacement is used by libyaml, jansson and libc
 * itself, so every allocation site on a parse path can be made to fail in turn. The
 * sanitizers bring their own allocator; there the test only reports that it did not run.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_HAVE_ASAN 1
#endif
#endif
#if defined(__GLIBC__) && !defined(TEST_HAVE_ASAN)
#define TEST_CHAOS 1

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

/* volatile: the compiler assumes malloc touches no globals of ours, which is false here. */
static volatile long chaos_countdown = -1; /* allocations left before one fails; -1: never */
static volatile bool chaos_injected;	   /* a failure was returned */
static volatile long chaos_live;	   /* live allocations */

static bool chaos_fail_now(void)
{
	if (chaos_countdown < 0)
		return false;
	if (chaos_countdown == 0) {
		chaos_injected = true;
		chaos_countdown = -1; /* one failure per run: later ones are a repeat */
		return true;
	}
	chaos_countdown--;
	return false;
}

void *malloc(size_t size)
{
	void *p;

	if (chaos_fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_malloc(size);
	chaos_live += p != NULL;
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p;

	if (chaos_fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_calloc(n, size);
	chaos_live += p != NULL;
	return p;
}

void *realloc(void *old, size_t size)
{
	void *p;

	if (chaos_fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_realloc(old, size);
	if (!old)
		chaos_live += p != NULL;
	else if (size == 0 && !p)
		chaos_live--;
	return p;
}

void free(void *p)
{
	chaos_live -= p != NULL;
	__libc_free(p);
}

/*
 * Do the hooks above fail allocations here? Under valgrind (or another replacing
 * allocator) they are not called: then the test says so (cmocka's print_message: include
 * <cmocka.h> first) and does not run.
 */
static __attribute__((unused)) bool chaos_hooks_work(void)
{
	void *volatile probe;

	chaos_countdown = 0;
	probe = malloc(16);
	chaos_countdown = -1;
	if (!probe)
		return true;
	free(probe);
	print_message("malloc is not ours to fail here (valgrind?); not run\n");
	return false;
}
#endif

#endif
