/* SPDX-License-Identifier: MIT */
/*
 * Time across clock steps (issue 15 item 11). Within a daemon's life fs_now_usec() moves
 * with CLOCK_MONOTONIC and every wait has a CLOCK_MONOTONIC deadline, so a step of the
 * wall clock changes nothing. Across a restart the state store keeps a mark (the daemon's
 * clock, CLOCK_BOOTTIME and the boot id at each write); the next daemon measures the
 * downtime from it and moves the saved run times and deadlines by the clock's step.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs.h"

static uint64_t timespec_usec(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000u + (uint64_t)ts->tv_nsec / 1000u;
}

int fs_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	int r = pthread_condattr_init(&a);

	if (r != 0)
		return -r;
	r = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (r == 0)
		r = pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
	return -r;
}

void fs_deadline_in_usec(struct timespec *ts, uint64_t usec)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(usec / 1000000u);
	ts->tv_nsec += (long)(usec % 1000000u) * 1000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void fs_deadline_in(struct timespec *ts, long msec)
{
	fs_deadline_in_usec(ts, msec > 0 ? (uint64_t)msec * 1000u : 0);
}

bool fs_deadline_passed(const struct timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > ts->tv_sec || (now.tv_sec == ts->tv_sec && now.tv_nsec >= ts->tv_nsec);
}

static void read_boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	/* a mark is one line of words: anything else is no boot id */
	for (char *p = buf; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == '-')) {
			buf[0] = '\0';
			break;
		}
}

static pthread_once_t boot_once = PTHREAD_ONCE_INIT;
static char boot_id[sizeof(((struct fs_clock_mark *)0)->boot_id)];

static void boot_init(void)
{
	read_boot_id(boot_id, sizeof(boot_id));
}

void fs_clock_mark_now(struct fs_clock_mark *m)
{
	struct timespec b;

	memset(m, 0, sizeof(*m));
	m->clock_usec = fs_now_usec();
	clock_gettime(CLOCK_BOOTTIME, &b);
	m->boottime_usec = timespec_usec(&b);
	pthread_once(&boot_once, boot_init);
	memcpy(m->boot_id, boot_id, sizeof(boot_id));
}

int fs_clock_mark_format(const struct fs_clock_mark *m, char *buf, size_t len)
{
	int w = snprintf(buf, len, "%" PRIu64 " %" PRIu64 " %s", m->clock_usec, m->boottime_usec,
			 m->boot_id[0] ? m->boot_id : "-");

	return w < 0 || (size_t)w >= len ? -ENOSPC : 0;
}

int fs_clock_mark_parse(const char *text, struct fs_clock_mark *ret)
{
	struct fs_clock_mark m;
	char id[sizeof(m.boot_id)];
	int end = 0;

	memset(&m, 0, sizeof(m));
	if (!text || sscanf(text, "%" SCNu64 " %" SCNu64 " %36s%n", &m.clock_usec,
			    &m.boottime_usec, id, &end) != 3 || text[end] != '\0' ||
	    m.clock_usec == 0 || m.clock_usec > (uint64_t)INT64_MAX ||
	    m.boottime_usec > (uint64_t)INT64_MAX)
		return -EINVAL;
	if (strcmp(id, "-") != 0)
		snprintf(m.boot_id, sizeof(m.boot_id), "%s", id);
	*ret = m;
	return 0;
}

int64_t fs_clock_restart_shift(const struct fs_clock_mark *saved, const struct fs_clock_mark *now,
			       uint64_t *ret_downtime_usec, bool *ret_measured)
{
	bool same_boot = saved->boot_id[0] && strcmp(saved->boot_id, now->boot_id) == 0 &&
			 now->boottime_usec >= saved->boottime_usec;
	uint64_t down;

	if (same_boot) {
		down = now->boottime_usec - saved->boottime_usec;
	} else {
		/* another boot: only the wall clock spans it, and it may have stepped */
		down = now->clock_usec > saved->clock_usec ? now->clock_usec - saved->clock_usec : 0;
		if (down > (uint64_t)FS_RESTART_DOWNTIME_MAX_SEC * 1000000u)
			down = (uint64_t)FS_RESTART_DOWNTIME_MAX_SEC * 1000000u;
	}
	if (down > (uint64_t)INT64_MAX - saved->clock_usec)
		down = (uint64_t)INT64_MAX - saved->clock_usec;
	if (ret_downtime_usec)
		*ret_downtime_usec = down;
	if (ret_measured)
		*ret_measured = same_boot;
	/* both within int64 (parse and the clamp above): the difference is too */
	return (int64_t)now->clock_usec - (int64_t)(saved->clock_usec + down);
}
