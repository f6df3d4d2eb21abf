/* SPDX-License-Identifier: MIT */
/*
 * Readiness of a service's instance (issue 18): does its master answer on the service's
 * port? A TCP connect, as Kubernetes' tcpSocket probe makes one: the port accepts, the
 * connection is closed at once, nothing is sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

int agent_tcp_answers(const char *host, unsigned port, int timeout_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char service[8];
	int fd, r, err = 0;
	socklen_t len = sizeof(err);

	if (!host || !host[0] || port == 0 || port > 65535)
		return -EINVAL;
	snprintf(service, sizeof(service), "%u", port);
	r = getaddrinfo(host, service, &hints, &ai);
	if (r != 0)
		return -EINVAL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		freeaddrinfo(ai);
		return r;
	}
	r = connect(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (r < 0 && errno == EINPROGRESS) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		do
			r = poll(&p, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0)
			r = err ? -1 : 0;
		else
			r = -1;
	}
	close(fd);
	return r == 0 ? 1 : 0;
}
