/* SPDX-License-Identifier: MIT */
/* agent_ready.c: a service instance's port answers, or does not, within the timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"

/* A listening socket on 127.0.0.1, its port in *ret_port. */
static int listener(unsigned *ret_port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static void test_tcp_answers(void **state)
{
	unsigned port;
	int fd = listener(&port);

	(void)state;
	assert_int_equal(agent_tcp_answers("127.0.0.1", port, 200), 1);
	close(fd);
	/* the port closed: refused at once */
	assert_int_equal(agent_tcp_answers("127.0.0.1", port, 200), 0);
	/* what is not a numeric address or a port is an error, not an answer */
	assert_int_equal(agent_tcp_answers("node-01", port, 200), -EINVAL);
	assert_int_equal(agent_tcp_answers("", port, 200), -EINVAL);
	assert_int_equal(agent_tcp_answers("127.0.0.1", 0, 200), -EINVAL);
	assert_int_equal(agent_tcp_answers("127.0.0.1", 70000, 200), -EINVAL);
	assert_int_equal(agent_tcp_answers(NULL, 1025, 200), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
