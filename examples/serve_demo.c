/* SPDX-License-Identifier: MIT */
/*
 * serve_demo: a stand-in for MindIE Server, for demos and tests of services (kind:
 * service) without NPUs.
 *
 *   serve_demo [--ranktable-wait SEC]
 *
 * It reads what ascendfs gives an instance's process on each of its servers, as MindIE
 * Server does for multi-node inference: RANK_TABLE_FILE (waits until its status is
 * "completed", as HCCL polls it), its own address (MIES_CONTAINER_IP, else HOST_IP),
 * ASCEND_SERVICE_PORT (MindIE's ServerConfig.port), WORLD_SIZE and MASTER_IP. The table
 * must list this server (container_ip, else host_ip) and as many devices as WORLD_SIZE;
 * its first server is the master, which MASTER_IP must name. The master listens on its
 * address and the port and answers every HTTP request with 200 and one JSON line
 * {"status": "ok", "instance": ASCEND_JOB_ID, "generation": ..., "world_size": ...,
 * "servers": ...} (GET /health is what a gateway asks); the other servers only wait, as
 * MindIE's slave instances take no requests. SIGTERM ends it (exit 0); for tests,
 * SIGUSR1 closes the port and SIGUSR2 opens it again (an instance that stops answering
 * while it runs). Exits 2 on a bad environment or rank table.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

static volatile sig_atomic_t stop, close_port, open_port;

static void on_signal(int sig)
{
	if (sig == SIGTERM || sig == SIGINT)
		stop = 1;
	else if (sig == SIGUSR1)
		close_port = 1;
	else if (sig == SIGUSR2)
		open_port = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("serve_demo: ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static const char *need(const char *name)
{
	const char *v = getenv(name);

	if (!v || !v[0]) {
		say("%s is not set: not a service's instance of ascendfs", name);
		exit(2);
	}
	return v;
}

/* The table once "completed", or NULL after @wait_sec. */
static json_t *load_completed(const char *path, unsigned wait_sec)
{
	for (unsigned waited = 0;; waited++) {
		json_t *t = json_load_file(path, 0, NULL);
		const char *status = json_string_value(json_object_get(t, "status"));

		if (status && strcmp(status, "completed") == 0)
			return t;
		json_decref(t);
		if (waited >= wait_sec * 10 || stop)
			return NULL;
		usleep(100000);
	}
}

static const char *server_ip(const json_t *s)
{
	const char *ip = json_string_value(json_object_get(s, "container_ip"));

	return ip ? ip : json_string_value(json_object_get(s, "host_ip"));
}

static int listen_on(const char *ip, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	int fd, one = 1;

	if (getaddrinfo(ip, port, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
			bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* One request on @c: read what came within 200 ms, answer 200 with @body. */
static void answer(int c, const char *body)
{
	struct pollfd p = { .fd = c, .events = POLLIN };
	char req[1024], head[256];
	int n;

	if (poll(&p, 1, 200) == 1)
		(void)!read(c, req, sizeof(req));
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
		     strlen(body));
	/* a client that has gone (a readiness check connects and closes) is no failure */
	if (send(c, head, (size_t)n, MSG_NOSIGNAL) == n)
		(void)!send(c, body, strlen(body), MSG_NOSIGNAL);
}

int main(int argc, char **argv)
{
	unsigned wait_sec = 60, devices = 0, world;
	const char *table_path, *me, *port, *master_ip, *job, *gen, *master = NULL;
	json_t *table, *servers, *s;
	bool listed = false;
	char body[512], master_copy[64];
	size_t i;
	int fd = -1;

	for (int a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--ranktable-wait") == 0 && a + 1 < argc) {
			wait_sec = (unsigned)strtoul(argv[++a], NULL, 10);
		} else {
			fprintf(stderr, "usage: serve_demo [--ranktable-wait SEC]\n");
			return 2;
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_signal);
	signal(SIGUSR2, on_signal);
	signal(SIGPIPE, SIG_IGN);
	table_path = need("RANK_TABLE_FILE");
	me = getenv("MIES_CONTAINER_IP") && getenv("MIES_CONTAINER_IP")[0] ?
		     getenv("MIES_CONTAINER_IP") : need("HOST_IP");
	port = need("ASCEND_SERVICE_PORT");
	master_ip = need("MASTER_IP");
	world = (unsigned)strtoul(need("WORLD_SIZE"), NULL, 10);
	job = need("ASCEND_JOB_ID");
	gen = need("ASCEND_JOB_GENERATION");

	table = load_completed(table_path, wait_sec);
	if (!table) {
		say("rank table %s is not completed after %u s", table_path, wait_sec);
		return 2;
	}
	servers = json_object_get(table, "server_list");
	json_array_foreach(servers, i, s) {
		const char *ip = server_ip(s);

		if (i == 0)
			master = ip;
		listed |= ip && strcmp(ip, me) == 0;
		devices += (unsigned)json_array_size(json_object_get(s, "device"));
	}
	if (!listed || !master || devices != world || strcmp(master, master_ip) != 0) {
		say("rank table %s does not fit: this server %s %s, %u devices for WORLD_SIZE %u, "
		    "master %s for MASTER_IP %s", table_path, me, listed ? "listed" : "not listed",
		    devices, world, master ? master : "(none)", master_ip);
		json_decref(table);
		return 2;
	}
	snprintf(body, sizeof(body),
		 "{\"status\": \"ok\", \"instance\": \"%s\", \"generation\": %s, "
		 "\"world_size\": %u, \"servers\": %zu}\n",
		 job, gen, world, json_array_size(servers));
	/* the table's strings go with it */
	snprintf(master_copy, sizeof(master_copy), "%s", master);
	master = master_copy;
	json_decref(table);
	if (strcmp(me, master) != 0) {
		say("%s generation %s: server %s of %u NPUs waits for master %s", job, gen, me,
		    world, master);
		while (!stop)
			pause();
		return 0;
	}
	open_port = 1;
	say("%s generation %s: master %s:%s of %u NPUs", job, gen, me, port, world);
	while (!stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int c;

		if (close_port && fd >= 0) {
			close(fd);
			fd = -1;
			say("port %s closed (SIGUSR1)", port);
		}
		close_port = 0;
		if (open_port && fd < 0) {
			fd = listen_on(me, port);
			if (fd < 0) {
				say("cannot listen on %s:%s: %s", me, port, strerror(errno));
				return 2;
			}
			say("listening on %s:%s", me, port);
		}
		open_port = 0;
		if (fd < 0) {
			usleep(100000);
			continue;
		}
		p.fd = fd;
		if (poll(&p, 1, 200) != 1)
			continue;
		c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		answer(c, body);
		close(c);
	}
	say("SIGTERM: stopping");
	return 0;
}
