/* SPDX-License-Identifier: MIT */
/*
 * check-ranktable: run hccl_check_ranktable() on a file, for the shell tests.
 *
 *   check-ranktable [--npus-per-server N] [--ring-910] [--sdid-layout] [--completed]
 *                   [--ranks N] FILE
 *
 * FILE "-" reads standard input. Both verdicts go to standard output, so that
 * `out=$(check-ranktable f)` captures either:
 *   exit 0  "ok: N ranks on M servers"
 *   exit 1  "FILE: <the first violation>" (hccl_check.h lists the rules)
 *   exit 2  usage or I/O error, or out of memory; the message goes to standard error
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hccl_check.h"

#define EXIT_VIOLATION 1
#define EXIT_USAGE     2
/* Largest file read: rank tables of 100k NPUs stay far below it. */
#define FILE_MAX_BYTES (256u * 1024 * 1024)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: check-ranktable [--npus-per-server N] [--ring-910] [--sdid-layout] "
		"[--completed] "
		"[--ranks N] FILE\n"
		"Checks an HCCL/MindSpore rank table (FILE \"-\" = stdin).\n"
		"  --npus-per-server N  device_id must be below N (8: 910/910B, 16: A3)\n"
		"  --ring-910           Atlas 800 (910): 1, 2, 4 or 8 NPUs per server, inside one\n"
		"                       HCCS ring (0-3 or 4-7) when fewer than 8; implies N = 8\n"
		"                       and a device_ip on every device (the 910 template)\n"
		"  --sdid-layout        A3: super_device_id is the hardware SDID of its device\n"
		"  --completed          status must be \"completed\"\n"
		"  --ranks N            the table must hold exactly N ranks\n"
		"Prints \"ok: N ranks on M servers\" (exit 0) or the first violation (exit 1);\n"
		"exit 2 on usage or I/O errors.\n");
}

static int parse_count(const char *opt, const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v == 0 || v > UINT_MAX) {
		fprintf(stderr, "check-ranktable: %s: \"%s\" is not a positive number\n", opt, s);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* Whole file (or stdin for "-") into a new buffer; prints the error itself. */
static char *read_all(const char *path, size_t *ret_len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char *buf = NULL, *nbuf;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "check-ranktable: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	errno = 0;
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 65536;
			if (cap > FILE_MAX_BYTES + 1) {
				fprintf(stderr, "check-ranktable: %s: larger than %u bytes\n", path,
					FILE_MAX_BYTES);
				goto fail;
			}
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				fprintf(stderr, "check-ranktable: %s: out of memory\n", path);
				goto fail;
			}
			buf = nbuf;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "check-ranktable: %s: %s\n", path,
			errno ? strerror(errno) : "read error");
		goto fail;
	}
	if (f != stdin)
		fclose(f);
	*ret_len = len;
	return buf;

fail:
	free(buf);
	if (f != stdin)
		fclose(f);
	return NULL;
}

/* Counts for the "ok" line; only called on a table that passed the check. */
static void count_table(const char *text, size_t len, size_t *ret_ranks, size_t *ret_servers)
{
	json_t *root = json_loadb(text, len, 0, NULL);
	json_t *servers = json_object_get(root, "server_list");
	json_t *srv;
	size_t i;

	*ret_ranks = 0;
	*ret_servers = json_array_size(servers);
	json_array_foreach(servers, i, srv)
		*ret_ranks += json_array_size(json_object_get(srv, "device"));
	json_decref(root);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "npus-per-server", required_argument, NULL, 'n' },
		{ "ring-910", no_argument, NULL, 'r' },
		{ "sdid-layout", no_argument, NULL, 's' },
		{ "completed", no_argument, NULL, 'c' },
		{ "ranks", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct hccl_check_opts opts = { 0 };
	char why[1024];
	size_t len, ranks, servers;
	char *text;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (parse_count("--npus-per-server", optarg, &opts.npus_per_server) < 0)
				return EXIT_USAGE;
			break;
		case 'r':
			opts.ring_910 = true;
			break;
		case 's':
			opts.sdid_layout = true;
			break;
		case 'c':
			opts.require_completed = true;
			break;
		case 'k':
			if (parse_count("--ranks", optarg, &opts.expect_ranks) < 0)
				return EXIT_USAGE;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (opts.ring_910 && opts.npus_per_server && opts.npus_per_server != 8) {
		fprintf(stderr,
			"check-ranktable: --ring-910 is the Atlas 800 (910) rule, which has "
			"8 NPUs per server, not %u\n",
			opts.npus_per_server);
		return EXIT_USAGE;
	}

	text = read_all(argv[optind], &len);
	if (!text)
		return EXIT_USAGE;
	r = hccl_check_ranktable(text, len, &opts, why, sizeof(why));
	if (r == -EINVAL) {
		printf("%s: %s\n", argv[optind], why);
		free(text);
		return EXIT_VIOLATION;
	}
	if (r < 0) {
		fprintf(stderr, "check-ranktable: %s: %s\n", argv[optind], why);
		free(text);
		return EXIT_USAGE;
	}
	count_table(text, len, &ranks, &servers);
	printf("ok: %zu ranks on %zu servers\n", ranks, servers);
	free(text);
	return 0;
}
