/* SPDX-License-Identifier: MIT */
/*
 * The placement index (sched/sched_placeidx.c) must not change which placement is
 * chosen: over long seeded sequences of placements, releases, faults, isolations,
 * reservations, cordons, suspicion and configuration flips on a few hundred servers of
 * three types (910 rings, 910B mesh, A3 pairs in super pods) under uneven and shared
 * leaf switches, every sched_place_now() and sched_replace() answer (return value,
 * servers, device ids, ranks, reason) equals that of the scan it replaced
 * (place_reference.h, the old code verbatim), with the index and without it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "place_reference.h"
#include "conf.h"

#define STEPS 6000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (unsigned)((rng * 2685821657736338717ull) >> 33) % n;
}

/*
 * 120 atlas800 (rings of 4) under six switches of uneven sizes, 120 atlas800t-a2 under
 * seven (two shared with the 910s), 64 atlas900-a3 in four super pods of 16 under four
 * switches, one of them carrying two pods' servers.
 */
static struct sched_cluster *mixed_cluster(void)
{
	static const unsigned ring_sw[] = { 10, 30, 5, 40, 20, 15 };
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_error err;
	char *text = NULL, msg[1024];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	unsigned n = 0;

	assert_non_null(f);
	fprintf(f, "cluster:\n  name: idx\n  scheduler_ip: 10.0.0.1\n"
		   "resource:\n  total_npu: %u\n  allow_mix_task: true\nservers:\n",
		120 * 8 + 120 * 8 + 64 * 16);
	for (unsigned s = 0; s < 6; s++)
		for (unsigned i = 0; i < ring_sw[s]; i++, n++)
			fprintf(f, "  - name: n%u\n    host_ip: 10.1.%u.%u\n    type: atlas800\n"
				   "    switch: leaf-%u\n", n, n / 250, n % 250 + 1, s);
	for (unsigned i = 0; i < 120; i++, n++)
		fprintf(f, "  - name: n%u\n    host_ip: 10.1.%u.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-%u\n", n, n / 250, n % 250 + 1,
			i < 20 ? 4 + i % 2 : 6 + (i * 7 / 120) % 5);
	for (unsigned i = 0; i < 64; i++, n++)
		fprintf(f, "  - name: n%u\n    host_ip: 10.1.%u.%u\n    type: atlas900-a3\n"
			   "    switch: a3-%u\n    super_pod: \"p%u\"\n", n, n / 250, n % 250 + 1,
			i < 24 ? 0 : 1 + (i - 24) / 14, i / 16);
	assert_int_equal(fclose(f), 0);
	memset(&err, 0, sizeof(err));
	if (conf_cluster_parse(text, len, "idx.yaml", &conf, &err) < 0)
		fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
	free(text);
	assert_int_equal(sched_cluster_new(conf, &c), 0);
	assert_non_null(c->placeidx);
	return c;
}

static void expect_same(int r1, const struct sched_slice *a, size_t na, const char *why1,
			int r2, const struct sched_slice *b, size_t nb, const char *why2,
			const char *what, unsigned step)
{
	if (r1 != r2)
		fail_msg("step %u, %s: %d, the reference %d", step, what, r1, r2);
	if (r1 < 0) {
		if (strcmp(why1, why2) != 0)
			fail_msg("step %u, %s: \"%s\", the reference \"%s\"", step, what, why1,
				 why2);
		return;
	}
	if (na != nb)
		fail_msg("step %u, %s: %zu slices, the reference %zu", step, what, na, nb);
	for (size_t i = 0; i < na; i++) {
		if (a[i].server != b[i].server || a[i].npu_count != b[i].npu_count ||
		    a[i].first_rank != b[i].first_rank ||
		    memcmp(a[i].device_ids, b[i].device_ids,
			   a[i].npu_count * sizeof(a[i].device_ids[0])) != 0)
			fail_msg("step %u, %s: slice %zu on server %u (%u NPUs from %u, rank %u), "
				 "the reference server %u (%u NPUs from %u, rank %u)",
				 step, what, i, a[i].server, a[i].npu_count, a[i].device_ids[0],
				 a[i].first_rank, b[i].server, b[i].npu_count, b[i].device_ids[0],
				 b[i].first_rank);
	}
}

/* Place @npus both ways; returns the indexed answer (0 and *ret_sl, or < 0). */
static int place_both(struct sched_cluster *c, unsigned npus, const struct conf_server_type *t,
		      unsigned step, struct sched_slice **ret_sl, size_t *ret_n)
{
	struct sched_slice *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	char why1[SCHED_REASON_MAX] = "", why2[SCHED_REASON_MAX] = "";
	char what[64];
	int r1 = sched_place_now(c, npus, t, 1, &a, &na, why1);
	int r2 = ref_place_now(c, npus, t, &b, &nb, why2);

	snprintf(what, sizeof(what), "%u NPUs of %s", npus, t ? t->name : "any type");
	expect_same(r1, a, na, why1, r2, b, nb, why2, what, step);
	free(b);
	*ret_sl = a;
	*ret_n = na;
	return r1;
}

static void replace_both(struct sched_cluster *c, const struct sched_job *j, unsigned step)
{
	bool bad[64] = { false };
	struct sched_slice *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int r1, r2;

	for (size_t i = 0; i < j->slice_count && i < 64; i++)
		bad[i] = rnd(3) == 0;
	r1 = sched_replace(c, j, bad, &a, &na);
	r2 = ref_replace(c, j, bad, &b, &nb);
	expect_same(r1, a, na, "", r2, b, nb, "", "replace", step);
	free(a);
	free(b);
}

static void random_sequence(uint64_t seed)
{
	static const unsigned sizes[] = { 1, 1, 1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 8,
					  12, 16, 16, 24, 32, 48, 64, 96 };
	struct sched_cluster *c = mixed_cluster();
	struct sched_job *held[512];
	size_t nheld = 0;
	unsigned placed = 0, replaced = 0;
	char why[SCHED_REASON_MAX];

	rng = seed;
	for (unsigned step = 0; step < STEPS; step++) {
		unsigned op = rnd(100), si = rnd((unsigned)c->server_count);
		struct sched_server *s = &c->servers[si];

		if (op < 50) {
			const struct conf_server_type *t =
				rnd(3) ? NULL : c->types[rnd((unsigned)c->type_count)];
			struct sched_slice *sl;
			size_t n;

			if (place_both(c, sizes[rnd(sizeof(sizes) / sizeof(sizes[0]))], t, step,
				       &sl, &n) < 0)
				continue;
			if (nheld == 512 || rnd(10) == 0) {
				free(sl);
				continue;
			}
			held[nheld] = calloc(1, sizeof(*held[nheld]));
			assert_non_null(held[nheld]);
			snprintf(held[nheld]->name, sizeof(held[nheld]->name), "j%u", step);
			sched_alloc_apply(c, held[nheld++], sl, n);
			placed++;
		} else if (op < 75) {
			size_t k;

			if (!nheld)
				continue;
			k = rnd((unsigned)nheld);
			if (held[k]->slice_count > 1 && rnd(2)) {
				replace_both(c, held[k], step);
				replaced++;
			}
			sched_alloc_release(c, held[k]);
			free(held[k]);
			held[k] = held[--nheld];
		} else if (op < 81) {
			/* health and isolation, as reports and clears change them */
			struct sched_npu *npu = &s->npus[rnd(s->conf->npu_count)];
			static const enum sched_health hs[] = { SCHED_HEALTH_OK, SCHED_HEALTH_OK,
								SCHED_HEALTH_WARNING,
								SCHED_HEALTH_CRITICAL };

			if (rnd(2))
				npu->health = hs[rnd(4)];
			else
				npu->isolated = !npu->isolated;
			sched_server_recount(s);
		} else if (op < 85) {
			/* a backfill reservation's mark */
			struct sched_npu *npu = &s->npus[rnd(s->conf->npu_count)];

			npu->reserved = !npu->reserved;
			sched_server_recount(s);
		} else if (op < 90) {
			bool on = !(s->cordoned || s->draining);

			assert_int_equal(sched_server_set_cordon(c, s->conf->name, on, rnd(2),
								 1700000000000000ull + step),
					 0);
		} else if (op < 95) {
			/* suspicion, as sched_place_begin() caches it: a few, or none again */
			if (rnd(3))
				s->suspect = !s->suspect;
			else
				for (size_t i = 0; i < c->server_count; i++)
					c->servers[i].suspect = false;
			c->suspect_count = 0;
			for (size_t i = 0; i < c->server_count; i++)
				c->suspect_count += c->servers[i].suspect;
		} else if (op < 96) {
			/* a lost heartbeat and a report again: sched_health.c recounts after */
			s->state = s->state == SCHED_SERVER_UNREACHABLE ? SCHED_SERVER_READY :
									  SCHED_SERVER_UNREACHABLE;
			sched_server_recount(s);
		} else if (op < 97) {
			c->conf->allow_mix_task = !c->conf->allow_mix_task;
		} else if (op < 98) {
			c->conf->topology_aware_schedule = !c->conf->topology_aware_schedule;
		} else if (nheld) {
			/* the scan the library falls back to without the index agrees too */
			struct sched_slice *sl;
			size_t n;

			sched_placeidx_free(c);
			assert_null(c->placeidx);
			if (place_both(c, sizes[rnd(sizeof(sizes) / sizeof(sizes[0]))], NULL, step,
				       &sl, &n) == 0)
				free(sl);
			replace_both(c, held[rnd((unsigned)nheld)], step);
			assert_int_equal(sched_placeidx_build(c), 0);
		}
		if (step % 50 == 0 && sched_placeidx_check(c, why) < 0)
			fail_msg("step %u: %s", step, why);
	}
	assert_int_equal(sched_placeidx_check(c, why), 0);
	/* the sequence did exercise what it is about */
	assert_true(placed > STEPS / 10);
	assert_true(replaced > 20);
	while (nheld) {
		sched_alloc_release(c, held[--nheld]);
		free(held[nheld]);
	}
	sched_cluster_free(c);
}

static void test_placeidx_same_as_scan_seed1(void **state)
{
	(void)state;
	random_sequence(0x5eed0001u);
}

static void test_placeidx_same_as_scan_seed2(void **state)
{
	(void)state;
	random_sequence(0x5eed0002u);
}

static void test_placeidx_same_as_scan_seed3(void **state)
{
	(void)state;
	random_sequence(0xdecafbadu);
}

/* A change made without sched_server_recount() is caught by the invariant check. */
static void test_placeidx_check_finds_stale_entry(void **state)
{
	struct sched_cluster *c = mixed_cluster();
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	assert_int_equal(sched_placeidx_check(c, why), 0);
	c->servers[7].npus[3].isolated = true;
	c->servers[7].npus_free--;
	assert_int_equal(sched_placeidx_check(c, why), -EUCLEAN);
	assert_non_null(strstr(why, "n7"));
	sched_server_recount(&c->servers[7]);
	assert_int_equal(sched_placeidx_check(c, why), 0);
	assert_int_equal(sched_check_invariants(c, why), 0);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeidx_same_as_scan_seed1),
		cmocka_unit_test(test_placeidx_same_as_scan_seed2),
		cmocka_unit_test(test_placeidx_same_as_scan_seed3),
		cmocka_unit_test(test_placeidx_check_finds_stale_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
