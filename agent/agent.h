/* SPDX-License-Identifier: MIT */
/*
 * agent: the pure parts of ascend-agent, the node agent of design.md §1 and §6.
 *
 * The agent runs on every compute server. At every check interval it gathers NPU
 * health (from `npu-smi info`, or from a fault-injection file in tests), adds the
 * NPUs' device IPs (from `hccn_tool -i N -ip -g` or /etc/hccn.conf) to its first
 * report and whenever they change, and writes the report to
 * <mount>/nodes/<node>/health in one open/write/close: that write is the heartbeat.
 *
 * This header holds what has no I/O: parsers of the probes' output and the assembly of
 * the report, so that the unit tests and the fuzzers drive them with sample text.
 * agent/main.c runs the programs, reads and writes the files, and logs.
 *
 * Errors: 0 on success or a negative errno:
 *   -EINVAL  the text is not what the probe prints; *err says where (line, column of
 *            the text) and why, with @source as the file name
 *   -ENOENT  the text holds no answer (hccn_tool printed no address)
 *   -EFBIG   the text is longer than AGENT_PROBE_MAX_BYTES
 * Outputs are untouched on failure. Nothing here allocates, logs or keeps state.
 */
#ifndef ASCENDFS_AGENT_H
#define ASCENDFS_AGENT_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"

/* Most probe output read: `npu-smi info` of a 16-die server is about 8 KiB. */
#define AGENT_PROBE_MAX_BYTES (1024 * 1024)

/* Room for an IP address in text form (INET6_ADDRSTRLEN and a spare byte). */
#define AGENT_IP_MAX 48

/* Device (RoCE) IPs of one server, indexed by physical device id; "" where unknown. */
struct agent_device_ips {
	char ip[CONF_SERVER_NPUS_MAX][AGENT_IP_MAX];
};

/*
 * agent_parse_npu_smi_info() - the Health column of `npu-smi info`.
 * @text, @len: the command's output (need not be NUL-terminated). The first table is
 *        read: a header row "| NPU Name | Health | Power(W) Temp(C) ... |" and
 *        "| Chip [Phy-ID] | Bus-Id | AICore(%) ... |", then two rows per chip:
 *        "| 0  910B3 | OK | 95.5  45  0 / 0 |" and "| 0 | 0000:C1:00.0 | 0  0 / 0 ... |".
 *        The process table that follows and any text around the tables are ignored.
 * @source: names the text in messages (borrowed), e.g. "npu-smi info".
 * @ret: on success holds one entry per chip, in table order, with has_level set; the
 *        id is the physical device id: the Phy-ID column where the table has one (A3,
 *        two dies per NPU card), else the NPU column (Atlas 800, Atlas 800T A2). A
 *        Health word that is not one of OK, Warning, Alarm, Critical, UNKNOWN (any
 *        case) gives UNKNOWN and the word in `message`. has_node is false.
 * @err: filled on failure; may not be NULL.
 * Returns 0, -EINVAL (no NPU table, a table without NPUs, a malformed chip row, an id
 * given twice or >= CONF_SERVER_NPUS_MAX) or -EFBIG.
 */
int agent_parse_npu_smi_info(const char *text, size_t len, const char *source,
			     struct conf_health_report *ret, struct conf_error *err);

/*
 * agent_parse_hccn_ip() - the address of one NPU from `hccn_tool -i N -ip -g`, which
 * prints "ipaddr:10.20.0.1" and "netmask:255.255.255.0" lines (other lines are ignored).
 * @text, @len: the output (need not be NUL-terminated).
 * @source: names the text in messages (borrowed), e.g. "hccn_tool -i 3 -ip -g".
 * @ret_ip: receives the canonical address, AGENT_IP_MAX bytes.
 * @ret_netmask: receives the netmask ("" when not printed), AGENT_IP_MAX bytes; may be
 *        NULL.
 * Returns 0, -ENOENT (no ipaddr line: the NPU has no address), -EINVAL (an address or
 * netmask that is not one, a line given twice) or -EFBIG.
 */
int agent_parse_hccn_ip(const char *text, size_t len, const char *source, char *ret_ip,
			char *ret_netmask, struct conf_error *err);

/*
 * agent_parse_hccn_conf() - device IPs from /etc/hccn.conf, the file hccn_tool writes:
 * "address_N=10.20.0.1" lines (N the device id), beside netmask_N, netdetect_N,
 * gateway_N ... lines, which are ignored, as are blank lines and '#' comments.
 * @text, @len: the file (need not be NUL-terminated).
 * @source: names the file in messages (borrowed).
 * @ret: on success every address found, the others "".
 * Returns 0, -EINVAL (a line without '=', a device id that is not a number below
 * CONF_SERVER_NPUS_MAX, an address that is not one, an address given twice) or -EFBIG.
 */
int agent_parse_hccn_conf(const char *text, size_t len, const char *source,
			  struct agent_device_ips *ret, struct conf_error *err);

/*
 * agent_parse_node_info() - the NPU count of a server from <mount>/nodes/<node>/info
 * (JSON with "npu_count", as sched_render_server_info() writes it).
 * @text, @len: the file (need not be NUL-terminated).
 * @ret_npu_count: receives 1 to CONF_SERVER_NPUS_MAX.
 * Returns 0, -EINVAL (not JSON, no whole-number npu_count in range; @err says which)
 * or -ENOMEM.
 */
int agent_parse_node_info(const char *text, size_t len, const char *source,
			  unsigned *ret_npu_count, struct conf_error *err);

/*
 * agent_report_build() - the report the agent writes, from what its probes found.
 * @health: the probed or injected health (borrowed): its node level, if any, else OK;
 *        per NPU its level, code and message, and its address when it has one (a fault
 *        file may give "ip" lines). Entries with id >= @npu_count are left out.
 * @npu_count: the server's NPUs (1 to CONF_SERVER_NPUS_MAX); every one gets an `npu`
 *        line.
 * @absent: the level of an NPU that @health does not mention: UNKNOWN for npu-smi
 *        (npu-smi lists every NPU it can see: one missing has fallen off the bus), OK
 *        for a fault file (it lists only the faults to inject).
 * @ips: addresses to report (borrowed; may be NULL); @health's own addresses win.
 * @ret: the report: node line, one entry per NPU 0..@npu_count-1 in id order, with
 *        device_ip set where known.
 */
void agent_report_build(const struct conf_health_report *health, unsigned npu_count,
			enum conf_health_level absent, const struct agent_device_ips *ips,
			struct conf_health_report *ret);

/*
 * agent_report_ips() - the addresses in @report (borrowed) as a table by device id,
 * for comparing what was sent with what is known now.
 */
void agent_report_ips(const struct conf_health_report *report, struct agent_device_ips *ret);

/*
 * agent_report_strip_ips() - clear every device_ip of @report, which then renders
 * without "ip" lines (the agent sends addresses only when they are new).
 */
void agent_report_strip_ips(struct conf_health_report *report);

#endif
