/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: job spec parser (YAML and JSON). Anything accepted must render and parse
 * again to an equal rendering.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *names[] = { "fuzz.yaml", "fuzz.json" };

	for (size_t i = 0; i < 2; i++) {
		struct conf_job_spec *s = NULL, *again = NULL;
		struct conf_error err;
		char *text = NULL, *text2 = NULL, msg[1024];
		size_t len = 0, len2 = 0;

		if (conf_job_spec_parse((const char *)data, size, names[i], "fuzz", &s, &err) < 0) {
			conf_error_format(&err, msg, sizeof(msg));
			continue;
		}
		if (conf_job_spec_render_yaml(s, &text, &len) == 0) {
			if (conf_job_spec_parse(text, len, "again.yaml", "fuzz", &again, &err) < 0)
				abort(); /* a rendered spec must parse */
			if (conf_job_spec_render_yaml(again, &text2, &len2) == 0 &&
			    (len != len2 || memcmp(text, text2, len) != 0))
				abort(); /* and render the same */
		}
		free(text);
		free(text2);
		conf_job_spec_free(again);
		conf_job_spec_free(s);
	}
	return 0;
}
