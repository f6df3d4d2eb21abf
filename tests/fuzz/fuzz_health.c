/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: health report parser (line format and JSON), the bytes an agent, or
 * anyone allowed to write nodes/<node>/health, hands the daemon. Anything accepted must
 * name only NPUs of the server, render, and parse again to an equal rendering; and the
 * check made while it is written (conf_health_check_start()) must pass at every length
 * that ends a line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned server_npus[] = { 8, 16, 1 };

	for (size_t i = 0; i < sizeof(server_npus) / sizeof(server_npus[0]); i++) {
		struct conf_health_report rep, again;
		struct conf_error err;
		char *text = NULL, *text2 = NULL, msg[1024];
		size_t len = 0, len2 = 0;

		int started = conf_health_check_start((const char *)data, size, "fuzz/health",
						      server_npus[i], &err);

		if (started < 0)
			conf_error_format(&err, msg, sizeof(msg));
		if (conf_health_parse((const char *)data, size, "fuzz/health", server_npus[i], &rep,
				      &err) < 0) {
			conf_error_format(&err, msg, sizeof(msg));
			continue;
		}
		if (started < 0)
			abort(); /* accepted whole, but refused while it was written */
		/* (the first 64 line ends: every one would be quadratic in the size) */
		for (size_t n = 0, ends = 0; n < size && ends < 64; n++)
			if (data[n] == '\n' && ++ends &&
			    conf_health_check_start((const char *)data, n + 1, "fuzz/health",
						    server_npus[i], &err) < 0)
				abort(); /* a beginning of an accepted report was refused */
		if (rep.npu_count > server_npus[i])
			abort();
		for (size_t n = 0; n < rep.npu_count; n++)
			if (rep.npus[n].id >= server_npus[i])
				abort(); /* an NPU the server does not have */
		if (conf_health_render(&rep, &text, &len) == 0) {
			if (conf_health_parse(text, len, "again", server_npus[i], &again, &err) < 0)
				abort(); /* a rendered report must parse */
			if (conf_health_render(&again, &text2, &len2) == 0 &&
			    (len != len2 || memcmp(text, text2, len) != 0))
				abort(); /* and render the same */
		}
		free(text);
		free(text2);
	}
	return 0;
}
