/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the documents of the durable store (sched_state.c), which a restart reads
 * back from ascendfs.db, a file an administrator may edit or a disk may damage. The first
 * byte picks the kind (job, server, meta); the rest is the document. It is loaded into a
 * fresh cluster that already holds one running job; whatever is accepted must leave the
 * cluster's invariants intact (no NPU held twice, ranks 0..N-1), save again, and that
 * saved document must load again into another fresh cluster. The first byte also picks
 * a clock step across the restart (sched_restore_shift(): none, +2 days, -1 day, or the
 * extremes); whatever it is, no restored run began after the restore.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ascend_sched.h"
#include "conf.h"
#include "fuzz.h"

/* Four Atlas 800T A2 servers, two switches, two queues. */
static const char cluster_yaml[] =
	"cluster:\n  name: fuzz\nresource:\n  total_npu: 32\n"
	"queues:\n  - name: default\n  - name: research\n    quota_npus: 16\n"
	"servers:\n"
	"  - {name: a2-node-01, host_ip: 10.0.1.1, type: atlas800t-a2, switch: leaf-1}\n"
	"  - {name: a2-node-02, host_ip: 10.0.1.2, type: atlas800t-a2, switch: leaf-1}\n"
	"  - {name: a2-node-03, host_ip: 10.0.1.3, type: atlas800t-a2, switch: leaf-2}\n"
	"  - {name: a2-node-04, host_ip: 10.0.1.4, type: atlas800t-a2, switch: leaf-2}\n";

#define NOW 1800000000000000ull

static struct sched_cluster *fresh_cluster(void)
{
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_job_spec *spec = NULL;
	struct conf_error err;
	char reason[SCHED_REASON_MAX];

	if (conf_cluster_parse(cluster_yaml, sizeof(cluster_yaml) - 1, "fuzz.yaml", &conf,
			       &err) < 0 ||
	    sched_cluster_new(conf, &c) < 0)
		abort();
	c->check_invariants = true;
	/* one running job on a2-node-01, so that loaded placements can collide with it */
	if (conf_job_spec_parse("npus: 8\n", 8, "held.yaml", "held", &spec, &err) < 0 ||
	    sched_job_submit(c, spec, 1000, 1000, NOW, reason, NULL) < 0)
		abort();
	return c;
}

static int load(struct sched_cluster *c, int kind, const char *doc, size_t len)
{
	char reason[SCHED_REASON_MAX] = "";
	int r;

	switch (kind) {
	case 0:
		r = sched_job_load(c, doc, len, NOW + 1, reason);
		break;
	case 1:
		r = sched_server_load(c, doc, len, NOW + 1, reason);
		break;
	default:
		r = sched_meta_load(c, doc, len, reason);
		break;
	}
	if (r < 0 && r != -ENOMEM && !reason[0])
		abort(); /* a refusal always says why */
	return r;
}

static const int64_t shifts[] = { 0, 2 * 86400000000ll, -86400000000ll, INT64_MAX,
				   INT64_MIN };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sched_cluster *c, *again;
	char reason[SCHED_REASON_MAX];
	const char *doc;
	size_t len;
	int kind;

	if (size < 1 || size > 64 * 1024)
		return 0;
	kind = data[0] % 3;
	doc = (const char *)data + 1;
	len = size - 1;
	/* what is not even JSON is refused before the cluster is looked at: one cluster
	 * serves all of those (most of the replayed prefixes), and must stay untouched */
	{
		json_error_t err;
		json_t *o = json_loadb(doc, len, 0, &err);

		if (!o) {
			static struct sched_cluster *shared;
			uint64_t v;

			if (!shared)
				shared = fresh_cluster();
			v = shared->version;
			if (load(shared, kind, doc, len) == 0 || shared->version != v)
				abort();
			return 0;
		}
		json_decref(o);
	}
	c = fresh_cluster();
	sched_restore_shift(c, shifts[(data[0] / 3) % (sizeof(shifts) / sizeof(shifts[0]))]);
	if (load(c, kind, doc, len) == 0) {
		char *saved = NULL;
		size_t saved_len = 0;
		int r = 0;

		if (sched_restore_finish(c, NOW + 2, reason) < 0)
			abort(); /* accepted, yet the invariants broke */
		for (size_t i = 0; i < c->job_count; i++)
			if (c->jobs[i]->run_since_usec > NOW + 2 ||
			    c->jobs[i]->generation_usec > NOW + 2)
				abort(); /* a run that began after the restore (or its pass) */
		if (kind == 0)
			r = sched_job_save(c, c->jobs[c->job_count - 1], &saved, &saved_len);
		else if (kind == 1)
			r = 0; /* a server's document is checked by the unit tests' round trip */
		else
			r = sched_meta_save(c, &saved, &saved_len);
		if (r == 0 && saved) {
			/* what was saved loads again next to "held" (a job of that very name is
			 * refused as a second record, rightly) */
			bool is_held = kind == 0 && strcmp(c->jobs[c->job_count - 1]->name, "held") == 0;

			again = fresh_cluster();
			if (load(again, kind, saved, saved_len) < 0 && !is_held)
				abort();
			sched_cluster_free(again);
		}
		free(saved);
	}
	sched_cluster_free(c);
	return 0;
}
