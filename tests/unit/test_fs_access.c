/* SPDX-License-Identifier: MIT */
/* fs_access.c: which rules of a cluster's configuration read a caller's groups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fs.h"

/* a one-server cluster, with @cluster_extra in its cluster: section and @queue_extra in
 * its one queue */
static struct conf_cluster *cluster_with(const char *cluster_extra, const char *queue_extra)
{
	char text[1024];
	struct conf_cluster *c = NULL;
	struct conf_error err;

	snprintf(text, sizeof(text),
		 "cluster:\n  name: t\n%s"
		 "resource:\n  total_npu: 8\n"
		 "servers:\n  - {name: n1, host_ip: 10.0.0.2, type: atlas800t-a2, switch: leaf-1}\n"
		 "queues:\n  - name: default\n%s",
		 cluster_extra, queue_extra);
	if (conf_cluster_parse(text, strlen(text), "test.yaml", &c, &err) < 0)
		fail_msg("%s", err.msg);
	return c;
}

static void test_groups_matter_only_with_a_rule_that_reads_them(void **state)
{
	struct conf_cluster *c;

	(void)state;
	c = cluster_with("", "");
	assert_false(fs_groups_matter(c));
	conf_cluster_free(c);
	c = cluster_with("  operator_group: ascend-ops\n", "");
	assert_true(fs_groups_matter(c));
	conf_cluster_free(c);
	c = cluster_with("", "    groups: [ascend-train]\n");
	assert_true(fs_groups_matter(c));
	conf_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_groups_matter_only_with_a_rule_that_reads_them),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
