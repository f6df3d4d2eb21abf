/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: job spec parser (YAML and JSON). Anything accepted must render and parse
 * again to an equal rendering, and a refusal of it (conf_job_spec_where(), with reasons
 * that name keys, and one made of the input's first bytes) reads "<file>: <reason>" or
 * "<file>:LINE:COLUMN: <reason>" with a place inside the input.
 */
#include <stdint.h>
#include <stdio.h>
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
		{
			const char *reasons[] = { "queue: unknown", "disaggregated.controller: no",
						  "npus 3 exceeds", "a.b.c.d: x", "" };
			char own[64], where[512];
			size_t n = size < sizeof(own) - 1 ? size : sizeof(own) - 1;

			memcpy(own, data, n);
			own[n] = '\0';
			reasons[4] = own;
			for (size_t k = 0; k < 5; k++) {
				size_t fl = strlen(names[i]);
				unsigned line = 0, col = 0;
				int used = 0;
				const char *rest;

				conf_job_spec_where((const char *)data, size, names[i], reasons[k],
						    where, sizeof(where));
				/* "<file>: <reason>" or "<file>:LINE:COLUMN: <reason>", a place
				 * inside the input (libyaml also breaks lines at \r, NEL, LS) */
				if (strncmp(where, names[i], fl) != 0 || where[fl] != ':')
					abort();
				rest = where + fl + 1;
				if (*rest != ' ') {
					if (sscanf(rest, "%u:%u: %n", &line, &col, &used) != 2 ||
					    !used || line < 1 || line > size + 1 || col < 1 ||
					    col > size + 1)
						abort();
					rest += used;
				} else {
					rest++;
				}
				if (strncmp(rest, reasons[k], where + sizeof(where) - 1 - rest) != 0)
					abort(); /* the reason whole, or cut at the buffer's end */
			}
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
