/* SPDX-License-Identifier: MIT */
/*
 * fs_config_fingerprint(): what heads sharing a state compare (README, "Several heads").
 * Comments, blank lines, key order and spelled-out defaults do not count, nor how a head
 * reaches etcd (its members' order, its request timeout); any setting does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "test_util.h"

#define SERVERS                                                                                 \
	"servers:\n"                                                                            \
	"  - {name: node-1, host_ip: 10.0.1.1, type: atlas800t-a2, switch: leaf-1}\n"           \
	"  - {name: node-2, host_ip: 10.0.1.2, type: atlas800t-a2, switch: leaf-1}\n"

static const char base[] =
	"cluster:\n  name: pod-a\n  fault_check_interval: 5\n"
	"state:\n  backend: etcd\n  etcd_servers: [http://10.0.0.1:2379, http://10.0.0.2:2379]\n"
	"  leader_lease_duration: 6s\n" SERVERS;

/* The fingerprint of configuration @text, into @fp (FS_CONFIG_FINGERPRINT_LEN + 1). */
static void fingerprint_of(const char *text, char *fp)
{
	struct conf_cluster *c = NULL;
	struct conf_error err = { 0 };
	char msg[1024];

	if (conf_cluster_parse(text, strlen(text), "head.yaml", &c, &err) != 0)
		fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
	assert_int_equal(fs_config_fingerprint(c, fp), 0);
	conf_cluster_free(c);
}

static void test_fingerprint_shape(void **state)
{
	char fp[FS_CONFIG_FINGERPRINT_LEN + 1];

	(void)state;
	fingerprint_of(base, fp);
	assert_int_equal(strlen(fp), FS_CONFIG_FINGERPRINT_LEN);
	for (size_t i = 0; i < FS_CONFIG_FINGERPRINT_LEN; i++)
		assert_true(isxdigit((unsigned char)fp[i]) && !isupper((unsigned char)fp[i]));
}

static void test_fingerprint_ignores_form_and_connection(void **state)
{
	/* the same settings: comments, blank lines, keys in another order, a default
	 * spelled out; this head lists the etcd members the other way round and waits
	 * longer for them */
	static const char same[] =
		"# head 2's copy\n\n"
		"state:\n  leader_lease_duration: 6s\n"
		"  etcd_servers: [http://10.0.0.2:2379, http://10.0.0.1:2379]\n"
		"  etcd_request_timeout: 2s\n  backend: etcd\n"
		"cluster:\n  fault_check_interval: 5   # seconds\n  name: pod-a\n"
		"  topology_aware_schedule: true\n" SERVERS;
	char a[FS_CONFIG_FINGERPRINT_LEN + 1], b[FS_CONFIG_FINGERPRINT_LEN + 1];

	(void)state;
	fingerprint_of(base, a);
	fingerprint_of(same, b);
	assert_string_equal(a, b);
}

static void test_fingerprint_sees_settings(void **state)
{
	static const char *const other[] = {
		/* another setting */
		"cluster:\n  name: pod-a\n  fault_check_interval: 7\n"
		"state:\n  backend: etcd\n  etcd_servers: [http://10.0.0.1:2379]\n"
		"  leader_lease_duration: 6s\n" SERVERS,
		/* another lease */
		"cluster:\n  name: pod-a\n  fault_check_interval: 5\n"
		"state:\n  backend: etcd\n  etcd_servers: [http://10.0.0.1:2379]\n"
		"  leader_lease_duration: 8s\n" SERVERS,
		/* a server fewer */
		"cluster:\n  name: pod-a\n  fault_check_interval: 5\n"
		"state:\n  backend: etcd\n  etcd_servers: [http://10.0.0.1:2379]\n"
		"  leader_lease_duration: 6s\n"
		"servers:\n"
		"  - {name: node-1, host_ip: 10.0.1.1, type: atlas800t-a2, switch: leaf-1}\n",
		/* a server under another switch */
		"cluster:\n  name: pod-a\n  fault_check_interval: 5\n"
		"state:\n  backend: etcd\n  etcd_servers: [http://10.0.0.1:2379]\n"
		"  leader_lease_duration: 6s\n"
		"servers:\n"
		"  - {name: node-1, host_ip: 10.0.1.1, type: atlas800t-a2, switch: leaf-1}\n"
		"  - {name: node-2, host_ip: 10.0.1.2, type: atlas800t-a2, switch: leaf-2}\n",
	};
	char a[FS_CONFIG_FINGERPRINT_LEN + 1], b[FS_CONFIG_FINGERPRINT_LEN + 1];

	(void)state;
	fingerprint_of(base, a);
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		fingerprint_of(other[i], b);
		if (strcmp(a, b) == 0)
			fail_msg("configuration %zu has the base's fingerprint %s", i, a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fingerprint_shape),
		cmocka_unit_test(test_fingerprint_ignores_form_and_connection),
		cmocka_unit_test(test_fingerprint_sees_settings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
