/* SPDX-License-Identifier: MIT */
/*
 * hccl_check: an independent checker of HCCL / MindSpore rank tables.
 *
 * The tests use it to judge the rank tables that sched/ renders (and that the
 * filesystem serves as jobs/<id>/ranktable.json). It is written from the rules below
 * and the public documents they come from, never from the renderer, so that a
 * misreading of the format in one place is not silently repeated in the other.
 *
 * Sources (cited per rule as [D4], [MS], [CANN], [MC], [SDID], [SPOD], [D5]):
 *   [D4]   /work/shared/design.md §4 "Rank table (what MindSpore/HCCL accept)".
 *   [MS]   MindSpore tutorial "rank table Startup" (parallel/rank_table): version "1.0",
 *          string values, server_count, server_id, device_id (physical), device_ip,
 *          rank_id from 0, host_nic_ip "reserve", status "completed".
 *   [CANN] CANN "Preparing the Ranktable Resource Configuration File" (TensorFlow
 *          migration guide): status completed/initializing, server_id globally
 *          unique, rank_id from 0 and globally unique, device_ip the NIC address.
 *   [MC]   MindCluster "hccl.json File Description" and "global-ranktable
 *          Description": the version "1.2" layout with device[].super_device_id and a
 *          top-level super_pod_list[{super_pod_id, server_list[{server_id}]}].
 *   [SDID] CANN HCCL error EI0014 "Duplicate superDeviceId": super_device_id is unique
 *          among the devices of one super pod.
 *   [SPOD] CANN HCCL_LOGIC_SUPERPOD_ID: ranks of one super pod are laid out
 *          contiguously, never interleaved with another pod's.
 *   [D5]   design.md §5 and MindCluster affinity rules for Atlas 800 (910): two
 *          HCCS rings 0-3 and 4-7; 1, 2, 4 or 8 NPUs per server.
 *   [HC]   hcomm (CANN HCCL) topoinfo_ranktableConcise.cc: GetSingleDeviceIp()
 *          requires device_ip in a table of more than one server, except on 910_93
 *          (A3) inside one super pod (superPodNum <= 1: the vnic links them), and
 *          refuses a device_ip given twice (CheckUniqueAndInsertPool); the Atlas 800
 *          (910) rank table template gives every device its device_ip.
 *   [IP]   HcclIpAddress::IsInvalid() reads the unspecified address as "no address";
 *          a RoCE NIC's address is a unicast one other servers route to.
 *   [SDIDL] Ascend DCMI dcmi_get_spod_node_status(), "SDID legality": bits 22-31 the
 *          server index (0-47), 18-21 the chip id, 16-17 the die id, 0-15 the device
 *          id = chip id * 2 + die id; HCCL compares super_device_id with the
 *          driver's SDID (HcclCommunicatorAttrs::CheckSuperDeviceId(), EI0014).
 *
 * Rules, checked in this order; the first one broken is reported:
 *   1. the text is one JSON object, without duplicate keys (jansson).
 *   2. every leaf value anywhere in the document is a JSON string: "0", never 0, and
 *      no true/false/null [D4][MS].
 *   3. top level: "version" is "1.0" or "1.2"; the only keys are version,
 *      server_count, server_list and status, plus super_pod_list when version is
 *      "1.2" [D4][MC].
 *   4. server_count is a decimal string equal to the length of the non-empty
 *      server_list [D4][MS].
 *   5. status is "initializing" or "completed"; "completed" when
 *      opts->require_completed [D4][CANN].
 *   6. per server, in order: an object; server_id non-empty, at most 64 bytes,
 *      unique [D4][CANN]; host_ip and pod_ip, when present, IP literals that
 *      inet_pton() accepts [D4]; host_nic_ip, when present, "reserve" [MS]; device a
 *      non-empty array [D4].
 *   7. per device, in order: an object; device_id a decimal string, unique within its
 *      server, and below the per-server NPU count when one is given [D4][MS];
 *      device_ip required when the table has more than one server, except a
 *      version "1.2" table of one super pod, and always with opts->ring_910 (the 910
 *      template) [D4][MS][HC]; an IP literal, not the unspecified, broadcast,
 *      loopback, multicast or link-local address [IP], unique across the table
 *      (compared as addresses, so "fd00::1" equals "fd00:0::1") [HC] and of one
 *      family (all IPv4 or all IPv6) [D4][MS]; rank_id a decimal string [D4];
 *      with version "1.2", super_device_id a decimal string [MC], and with
 *      opts->sdid_layout one that is device device_id's SDID (device field =
 *      device_id = chip * 2 + die), of server index 0-47, the same index for all
 *      devices of a server [SDIDL].
 *   8. with opts->ring_910, per server: 1, 2, 4 or 8 devices, and fewer than 8 stay
 *      inside one HCCS ring (ids 0-3 or 4-7) [D4][D5].
 *   9. ranks: the N devices carry rank_id 0..N-1, each once [D4][CANN], and rank k is
 *      the k-th device counting server by server along server_list and device by
 *      device along each device list [D4]; N equals opts->expect_ranks when set.
 *  10. version "1.2": super_pod_list is a non-empty array; each pod has a non-empty,
 *      unique super_pod_id and a non-empty server_list of {server_id} naming servers
 *      of the table; every server is in exactly one pod; every pod holds the same
 *      number of servers [D4]; the servers of one pod are contiguous in server_list
 *      [D4][SPOD]; super_device_id is unique within each pod [SDID]; with
 *      opts->sdid_layout, no two servers of a pod at one server index [SDIDL].
 *
 * Decimal strings are canonical: ASCII digits only, no sign, no spaces, no leading
 * zero (except "0" itself), at most 9 digits. Other keys inside servers, devices and
 * pods (container_ip, hardware_type, ...) are allowed, as in [MC], but rule 2 still
 * applies to them.
 *
 * Nothing here logs or keeps global state; allocation goes through jansson's
 * allocator (json_get_alloc_funcs()), so a test can make any allocation fail.
 * Safe to call from any thread.
 */
#ifndef ASCENDFS_HCCL_CHECK_H
#define ASCENDFS_HCCL_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Longest server_id HCCL accepts, in bytes [D4]. */
#define HCCL_CHECK_SERVER_ID_MAX 64

/* Product facts the table alone cannot tell. A zeroed struct checks the format only. */
struct hccl_check_opts {
	/*
	 * NPUs (dies) per server: device_id must be below it (8: Atlas 800 910 and
	 * 800T A2 910B, ids 0-7; 16: A3, ids 0-15). 0 = don't bound device_id.
	 */
	unsigned npus_per_server;
	/* status must be "completed", not "initializing" (the table is final). */
	bool require_completed;
	/* the table must hold exactly this many ranks; 0 = any. */
	unsigned expect_ranks;
	/*
	 * Atlas 800 (910) HCCS rings, rule 8. Implies device ids 0-7: npus_per_server
	 * must be 0 or 8 with it; and the 910 template: every device has a device_ip.
	 */
	bool ring_910;
	/*
	 * super_device_id values are A3 hardware SDIDs ([SDIDL], rule 7 and 10), as the
	 * driver and npu-smi give them, not just ids unique within a pod.
	 */
	bool sdid_layout;
};

/*
 * hccl_check_ranktable() - check @text (@len bytes, JSON) against the rules HCCL and
 * MindSpore enforce on a rank table (the numbered list above).
 * @text:    the document, borrowed; need not be NUL-terminated; must not be NULL.
 * @len:     bytes of @text.
 * @opts:    borrowed, may be NULL (same as a zeroed struct).
 * @why:     caller buffer of @why_len bytes for the verdict; may be NULL only when
 *           @why_len is 0. Always NUL-terminated when @why_len > 0: the empty string
 *           on success, else one lowercase sentence without a final period that
 *           starts with the JSON path and says what is wrong and which rule it breaks,
 *           e.g. `server_list[1].device[3].rank_id: "11" should be "12" (ranks are
 *           contiguous per server in server order)`. User strings are quoted, with
 *           control characters escaped, and cut after 64 bytes. Truncated to fit.
 * Returns 0 when every rule holds, or a negative errno:
 *   -EINVAL  a rule is broken (or the text is not JSON); @why names the first one.
 *            Also for contradictory @opts (ring_910 with npus_per_server other than
 *            0 or 8); @why then starts with "options:".
 *   -ENOMEM  an allocation failed; @why says "out of memory". (jansson reports some
 *            allocation failures inside its parser as syntax errors: those come back
 *            as -EINVAL with a "line L, column C: ..." message.)
 */
int hccl_check_ranktable(const char *text, size_t len, const struct hccl_check_opts *opts,
			 char *why, size_t why_len);

#endif
