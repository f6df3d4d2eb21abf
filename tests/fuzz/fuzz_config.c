/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: cluster configuration parser, then the cluster model built from it. The
 * normalized configuration must parse again and render the same, as specs and health
 * reports do.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ascend_sched.h"
#include "conf.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf_cluster *c = NULL;
	struct sched_cluster *sc = NULL;
	struct conf_error err;
	char *text = NULL;
	size_t len;

	if (conf_cluster_parse((const char *)data, size, "fuzz.yaml", &c, &err) < 0)
		return 0;
	if (conf_cluster_render_yaml(c, &text, &len) == 0) {
		struct conf_cluster *again = NULL;
		char *text2 = NULL;
		size_t len2 = 0;

		if (conf_cluster_parse(text, len, "again.yaml", &again, &err) < 0)
			abort(); /* the normalized config must parse */
		if (conf_cluster_render_yaml(again, &text2, &len2) == 0 &&
		    (len != len2 || memcmp(text, text2, len) != 0))
			abort(); /* and render the same */
		free(text2);
		conf_cluster_free(again);
	}
	free(text);
	if (sched_cluster_new(c, &sc) == 0) {
		char why[SCHED_REASON_MAX];

		/* one placement of each small size on whatever the fuzzer built */
		for (unsigned n = 1; n <= 16; n *= 2) {
			struct sched_slice *sl = NULL;
			size_t count;

			if (sched_place(sc, n, NULL, &sl, &count, why) == 0)
				free(sl);
		}
		sched_cluster_free(sc);
	}
	return 0;
}
