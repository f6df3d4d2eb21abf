/* SPDX-License-Identifier: MIT */
/*
 * Suspicion (sched_server_is_suspect()): a server whose NPU had a fault within
 * fault_escalate_window (the window in which sched already treats faults as related),
 * or whose report is overdue by half an interval (it may have died with the server
 * just found lost), is placed on only when no clean server will do: placement ranks it
 * last (sched_place.c), and a recovery replaces a suspect server the job holds when
 * enough clean whole servers are free.
 */
#include "sched_internal.h"

/* @now - @then, or 0 when a caller's clock went backwards. */
static uint64_t elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

bool sched_server_is_suspect(const struct sched_cluster *c, const struct sched_server *s,
			     uint64_t now_usec)
{
	const struct conf_cluster *cf = c->conf;
	uint64_t window = (uint64_t)(cf->fault_escalate_window_sec > cf->fault_hold_sec ?
					     cf->fault_escalate_window_sec :
					     cf->fault_hold_sec) * 1000000u;
	uint64_t overdue = (uint64_t)cf->fault_check_interval_sec * 1500000u;

	if (s->state == SCHED_SERVER_READY && s->last_report_usec &&
	    elapsed(now_usec, s->last_report_usec) > overdue)
		return true;
	/* the newest fault of its NPUs decides: the newest is within the window exactly
	 * when some fault is */
	return s->newest_fault_usec && elapsed(now_usec, s->newest_fault_usec) < window;
}

void sched_place_begin(struct sched_cluster *c, uint64_t now_usec)
{
	c->place_now_usec = now_usec;
	c->suspect_count = 0;
	c->suspect_sig = 0;
	for (size_t i = 0; i < c->server_count; i++) {
		struct sched_server *s = &c->servers[i];

		s->suspect = sched_server_is_suspect(c, s, now_usec);
		c->suspect_count += s->suspect;
		if (s->suspect) /* order-independent: a sum of mixed indices */
			c->suspect_sig += (i + 1) * 0x9e3779b97f4a7c15ull ^ (i >> 3);
	}
}
