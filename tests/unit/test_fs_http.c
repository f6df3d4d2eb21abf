/* SPDX-License-Identifier: MIT */
/* The address of `ascendfs --http` (fs_http.c): numeric, IPv4 or [IPv6], with a port. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "fs.h"

static void test_http_address_forms(void **state)
{
	struct sockaddr_storage sa;
	socklen_t len;
	char text[INET6_ADDRSTRLEN];

	(void)state;
	assert_int_equal(fs_http_parse_address("127.0.0.1:9101", &sa, &len), 0);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 9101);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(fs_http_parse_address("[::1]:80", &sa, &len), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&sa)->sin6_port), 80);
	inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, text, sizeof(text));
	assert_string_equal(text, "::1");
	/* port 0: the kernel picks one (the log says which) */
	assert_int_equal(fs_http_parse_address("0.0.0.0:0", &sa, &len), 0);
}

static void test_http_address_refused(void **state)
{
	static const char *const bad[] = {
		"", "9101", ":9101", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
		"127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x", "localhost:9101",
		"[::1:80", "[]:80", "::1]:80", "256.0.0.1:80", "127.0.0.1:99999999999999999999",
	};
	struct sockaddr_storage sa;
	socklen_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (fs_http_parse_address(bad[i], &sa, &len) != -EINVAL)
			fail_msg("\"%s\" was taken as an address", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_address_forms),
		cmocka_unit_test(test_http_address_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
