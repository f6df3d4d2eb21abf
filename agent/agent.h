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
#include <stdint.h>

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
 * netmask that is not one, a line given twice, an address HCCL cannot use as a device
 * IP: conf_device_ip_problem(), with the reason) or -EFBIG.
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
 * CONF_SERVER_NPUS_MAX, an address that is not one, an address given twice, an address
 * HCCL cannot use as a device IP (conf_device_ip_problem()) or one address for two
 * device ids, with the reason) or -EFBIG.
 */
int agent_parse_hccn_conf(const char *text, size_t len, const char *source,
			  struct agent_device_ips *ret, struct conf_error *err);

/*
 * agent_device_ips_check() - drop the addresses of @ips (NPUs 0..@npu_count-1) that two
 * NPUs share: HCCL refuses a rank table that gives one device_ip twice (hcomm
 * CheckUniqueAndInsertPool), and the daemon refuses a report that does. Addresses read
 * one NPU at a time (hccn_tool) can only be compared here. @why (@why_len bytes, may be
 * NULL with 0) receives a sentence about the first pair found, or "".
 */
void agent_device_ips_check(struct agent_device_ips *ips, unsigned npu_count, char *why,
			    size_t why_len);

/* What `npu-smi info -t spod-info -i CARD -c CHIP` says of one A3 NPU (die). */
struct agent_spod_info {
	uint32_t sdid;			/* "SDID": the NPU's id in its super pod */
	uint32_t super_pod_id;		/* "Super Pod ID" */
	unsigned server_index;		/* "Server Index": the server's place in the pod */
	unsigned super_pod_size;	/* "Super Pod Size" (0 when not printed) */
};

/*
 * agent_parse_spod_info() - the super-pod information of one NPU: "SDID : N",
 * "Super Pod Size : N", "Super Pod ID : N" and "Server Index : N" lines (npu-smi
 * reference, "querying the super node information of a chip"; other lines are
 * ignored). The card and chip of physical device P on A3 are P / 2 and P % 2 (the
 * "NPU" and "Chip" columns of npu-smi info, whose Phy-ID is card * 2 + chip).
 * @text, @len: the output (need not be NUL-terminated). @source: for messages.
 * Returns 0 (fills *@ret), -ENOENT (none of those lines: npu-smi prints "This device
 * does not support querying spod-info." on Atlas 800 and A2), -EINVAL (a value that is
 * not a decimal number below 2^32, a line printed twice, SDID, Super Pod ID or Server
 * Index missing) or -EFBIG. The values are checked against each other by the daemon
 * (conf_health_parse(), the sdid line).
 */
int agent_parse_spod_info(const char *text, size_t len, const char *source,
			  struct agent_spod_info *ret, struct conf_error *err);

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

/* Size of agent_node_heartbeat.refusal: SCHED_REASON_MAX of the daemon, with room. */
#define AGENT_REFUSAL_MAX 600

/* What nodes/<node>/info says about the agent's reports. */
struct agent_node_heartbeat {
	double age_sec;			/* since the last accepted report; < 0: none yet */
	bool refused;			/* a report was refused since the last accepted one */
	double refused_age_sec;		/* how long ago (when @refused) */
	char refusal[AGENT_REFUSAL_MAX];	/* why (when @refused), cut to fit */
	char agent[CONF_HEALTH_AGENT_MAX];	/* whose report counted last; "" = none said */
};

/*
 * agent_parse_node_heartbeat() - "heartbeat_age_sec" (a number or null) and
 * "last_refused_report" (null or {"reason", "age_sec"}) from nodes/<node>/info, as
 * sched_render_server_info() writes them, and "agent" (a string, null or absent: ""). An agent on a network mount reads them after
 * each report, because sshfs does not pass on the error the daemon returns from close().
 * @text, @len: the file (need not be NUL-terminated). @source: for messages.
 * Returns 0 with *@ret filled, -EINVAL (not JSON, or either key missing or of the wrong
 * type: a daemon older than this agent; @err says which) or -ENOMEM.
 */
int agent_parse_node_heartbeat(const char *text, size_t len, const char *source,
			       struct agent_node_heartbeat *ret, struct conf_error *err);

/* One line of /proc/self/mountinfo, as agent_mountinfo_next() reads it. */
struct agent_mount_entry {
	char mount_point[4096];	/* field 5, octal escapes decoded; cut to fit */
	const char *fstype;	/* borrowed from the text: the field after " - " */
	size_t fstype_len;	/* its length in bytes (not NUL-terminated) */
};

/*
 * agent_mountinfo_next() - the next line of @mountinfo (@len bytes of
 * /proc/self/mountinfo, proc(5)) from byte *@pos on that has five fields and the " - "
 * separator; lines without them are passed over. Advances *@pos past the line.
 * Returns the line's start (borrowed) with *@ret filled, or NULL at the end.
 */
const char *agent_mountinfo_next(const char *mountinfo, size_t len, size_t *pos,
				 struct agent_mount_entry *ret);

/*
 * agent_mount_fstype() - the filesystem type of the mount that holds @path, from the
 * text of /proc/self/mountinfo (proc(5): the mount point is field 5, octal escapes such
 * as "\040" for a space; the type follows the " - " separator). @path must be absolute
 * and canonical (realpath); the mount whose point is the longest prefix of it wins, as
 * the kernel resolves it (a later line of equal length stacks on an earlier one).
 * ascendfs's own mount reads "fuse.ascendfs"; sshfs "fuse.sshfs"; NFS "nfs" or "nfs4".
 * @ret: @ret_len bytes (>= 2), receives the type, cut to fit.
 * Returns 0, or -ENOENT when no line parses (not a mountinfo text).
 */
int agent_mount_fstype(const char *mountinfo, size_t len, const char *path, char *ret,
		       size_t ret_len);

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

/* ---- what the process launcher reads from the mount (agent_jobs.c) ---- */

/* Most job shares one server's agent runs at once: a few per NPU, with room to spare. */
#define AGENT_SHARES_MAX 64
/* Most variables one env file may set, and the longest name. */
#define AGENT_ENV_VARS_MAX 512
#define AGENT_ENV_NAME_MAX 128
/* Largest nodes/<node>/jobs listing or env file read. */
#define AGENT_LAUNCH_FILE_MAX_BYTES (256 * 1024)

/*
 * One line of <mount>/nodes/<node>/jobs: a share of a running job that this server's
 * agent must run.
 */
struct agent_share {
	char job[CONF_NAME_MAX + 1];	/* the run's name: its log directory, cgroup, and
					 * what the messages say */
	char home[CONF_NAME_MAX + 1];	/* the directory under <mount>/jobs/ of its spec,
					 * env files, status.json and ctl: the job's own, a
					 * role's service's */
	char role[16];			/* a disaggregated service's controller or
					 * coordinator: that word ("" for a job's share) */
	unsigned generation;		/* >= 1 */
	enum conf_launch launch;	/* msrun: one process; per-rank: one per local rank */
	unsigned node_rank;		/* this server's place in the job (MS_NODE_RANK) */
	unsigned first_rank;		/* the first of this server's ranks */
	unsigned npu_count;		/* 1 to CONF_SERVER_NPUS_MAX ranks on this server */
	unsigned uid;			/* the job's owner: its processes run as uid/gid */
	unsigned gid;
	unsigned attempt;		/* in-place restarts of the share (0 when the listing
					 * has no tenth word): when it rises, what of the share
					 * exited starts again, same generation */
	unsigned kept_from;		/* process-level recovery kept the share (0 when not, or
					 * when the listing has no eleventh word): the run of
					 * the job begun in a generation from kept_from on
					 * goes on as this generation, not restarted */
};

/*
 * agent_parse_server_jobs() - the listing of <mount>/nodes/<node>/jobs:
 * "<job> <generation> <msrun|per-rank> <node_rank> <first_rank> <npu_count> <uid> <gid>
 * [<serial> [<attempt> [<kept_from>]]]" lines; blank lines and lines starting with '#'
 * are skipped, the serial is not read, and words after the eleventh are ignored (a later
 * daemon may add fields). kept_from must be below the generation. A disaggregated
 * service's controller or coordinator is "<service>.<role> <generation> <role> 0 0 0
 * <uid> <gid> ..." (role: controller or coordinator; npu_count 0, which no job's share
 * has): one process of the role's command (disaggregated.<role>.command of
 * jobs/<service>/spec) with jobs/<service>/roles/<role>.env, its end reported to
 * jobs/<service>/ctl as "exit <generation> <node> <status> <role>".
 * @text, @len: the file (need not be NUL-terminated).
 * @source: names the file in messages (borrowed).
 * @ret: array of @max entries; on success the first *@ret_count are set, in file order.
 * Returns 0, -EINVAL (a line that is not a share: a bad job name, a generation of 0, an
 * unknown launch word, a number out of range, the same job and generation twice; @err
 * says which) or -EFBIG (more than @max shares, or more than
 * AGENT_LAUNCH_FILE_MAX_BYTES).
 */
int agent_parse_server_jobs(const char *text, size_t len, const char *source,
			    struct agent_share *ret, size_t max, size_t *ret_count,
			    struct conf_error *err);

/* One (job, generation) the launcher tracks, as agent_report_running() reads it. */
struct agent_run_info {
	const char *job;		/* borrowed */
	unsigned generation;		/* >= 1 */
	bool alive;			/* a process of it, or a member of one of its process
					 * groups, still lives (stopping ones included) */
};

/*
 * agent_report_running() - set the `running` line of @report (has_running,
 * running_count, running[]): each (job, generation) of @runs (@count entries) that is
 * alive, once, in the order given; none alive gives `running -`. With more distinct live
 * generations than CONF_HEALTH_RUNNING_MAX the line is left out (has_running false): a
 * report without it says nothing, and the daemon keeps its stop deadlines, rather than
 * be told that a generation left out has stopped. Job names that are not valid
 * (conf_job_name_is_valid) or generation 0 are skipped: the listing never gives them.
 */
void agent_report_running(struct conf_health_report *report, const struct agent_run_info *runs,
			  size_t count);

/* A process environment: "NAME=value" strings. */
struct agent_env {
	char **vars;			/* count entries, then NULL; owned */
	size_t count;
};

/*
 * agent_env_parse() - the variables of an env file as the daemon writes them
 * (jobs/<id>/env, hosts/<server>.env, ranks/<rank>.env): "export NAME='value'" lines,
 * where a value is POSIX-sh single-quoted and a quote inside it is written '\'' (so a
 * value may span lines). "export " may be left out; blank lines and '#' comments are
 * skipped. A name given twice keeps its last value, as sh would.
 * @text, @len: the file (need not be NUL-terminated).
 * @source: names the file in messages (borrowed).
 * @ret: receives the variables in first-given order (release with agent_env_release);
 *        untouched on failure.
 * Returns 0, -EINVAL (not an export line, a name that is not [A-Za-z_][A-Za-z0-9_]*, an
 * unquoted or unterminated value, a NUL byte; @err says where), -EFBIG (more than
 * AGENT_ENV_VARS_MAX variables or AGENT_LAUNCH_FILE_MAX_BYTES) or -ENOMEM.
 */
int agent_env_parse(const char *text, size_t len, const char *source, struct agent_env *ret,
		    struct conf_error *err);

/* agent_env_release() - free what @env holds and empty it; an empty @env is fine. */
void agent_env_release(struct agent_env *env);

/* agent_env_get() - the value of @name in @env (borrowed from @env), or NULL. */
const char *agent_env_get(const struct agent_env *env, const char *name);

/*
 * agent_env_set() - set @name (a valid variable name) to @value in @env, replacing an
 * earlier value. Both borrowed (copied). Returns 0, -EINVAL (a bad name), -EFBIG (more
 * than AGENT_ENV_VARS_MAX variables) or -ENOMEM; @env is unchanged on failure.
 */
int agent_env_set(struct agent_env *env, const char *name, const char *value);

/*
 * agent_env_head_mount() - the head's mount path in @env: its ASCEND_JOB_DIR, which the
 * daemon writes as HEAD/jobs/@job in every env file (HEAD its own mount point), else its
 * RANK_TABLE_FILE, HEAD/jobs/@job/ranktable.json (rank-table mode only; env files of older
 * daemons).
 * @env: a job's env file (borrowed); @job: its name (borrowed).
 * @ret_head: receives HEAD, NUL-terminated, @len bytes at most; untouched on failure.
 * Returns 0; -ENOENT when @env has neither, or they have another shape;
 * -ENAMETOOLONG when HEAD does not fit. An agent whose --mount differs from HEAD hands its
 * job processes paths that may not exist on its server (README: the same path).
 */
int agent_env_head_mount(const struct agent_env *env, const char *job, char *ret_head,
			 size_t len);

/*
 * agent_env_is_placement() - whether @var ("NAME=value" or "NAME") is a variable by which
 * the Ascend runtime, HCCL, MindSpore/msrun or torch_npu place or identify a job process,
 * which a job process must get from its env file or not at all, never from the agent's
 * own environment (where it would name another job, another rank or the agent's NPUs):
 * every name beginning with MS_, RANK_, HCCL_, OMPI_COMM_WORLD_ or ASCEND_, and DEVICE_ID,
 * MINDSPORE_HCCL_CONFIG_PATH, SERVER_ID, SERVER_COUNT, MSRUN_ARGS, OMPI_COMMAND,
 * PMIX_RANK, RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
 * Kept: ASCEND_ names ending in _PATH or _HOME, the CANN installation's own paths that
 * its set_env.sh exports (ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, ASCEND_OPP_PATH,
 * ASCEND_AICPU_PATH ...).
 * Sources: MindSpore reads MS_ROLE/MS_SCHED_HOST (dynamic cluster), RANK_TABLE_FILE or
 * MINDSPORE_HCCL_CONFIG_PATH, RANK_ID, DEVICE_ID, RANK_SIZE and the OpenMPI variables
 * (communication/management.py); the runtime ASCEND_RT_VISIBLE_DEVICES; HCCL HCCL_*.
 */
bool agent_env_is_placement(const char *var);

/*
 * agent_env_clean() - @base (NULL-terminated, such as environ; may be NULL) without its
 * placement variables (agent_env_is_placement()) and entries without '='.
 * @ret: a new NULL-terminated array (free() the array only) of strings borrowed from
 *        @base, in @base's order.
 * Returns 0 or -ENOMEM. The agent starts every job process (msrun launch and per-rank)
 * from this, then the owner's identity, then the env file.
 */
int agent_env_clean(char *const *base, char ***ret);

/*
 * agent_tcp_answers() - does @host (a numeric IPv4 or IPv6 address) accept a TCP
 * connection on @port within @timeout_ms (agent_ready.c)? The readiness check of a
 * service's instance: its master serves on the service's port (MindIE Server's
 * ServerConfig.port). Nothing is sent; the connection is closed at once. Returns 1
 * (answers), 0 (refused, unreachable or timed out) or -EINVAL (no such address or port)
 * / -errno (no socket).
 */
int agent_tcp_answers(const char *host, unsigned port, int timeout_ms);

/*
 * agent_env_scheduler() - the environment of the MindSpore scheduler (MS_SCHED) process
 * of a per-rank job in dynamic mode, from @worker, a worker's rank env (MS_ROLE
 * MS_WORKER): the same with MS_ROLE=MS_SCHED and RANK_ID=0, without MS_NODE_ID and
 * DEVICE_ID, as msrun starts its scheduler (MindSpore parallel/cluster/process_entity/
 * _api.py: the job's command again, MS_ROLE MS_SCHED, RANK_ID 0).
 * @ret: receives a new env (agent_env_release()); untouched on failure.
 * Returns 0, -ENOENT when @worker is not a dynamic-cluster worker's, or -ENOMEM.
 */
int agent_env_scheduler(const struct agent_env *worker, struct agent_env *ret);

/*
 * agent_env_merge() - the environment of a job process: every "NAME=value" of @base (a
 * NULL-terminated array such as environ; may be NULL) whose NAME @over does not set,
 * then all of @over.
 * @ret: a new NULL-terminated array (free() the array only): its strings are borrowed
 *        from @base and @over, which must outlive it.
 * Returns 0 or -ENOMEM.
 */
int agent_env_merge(char *const *base, const struct agent_env *over, char ***ret);

/* ---- per-job cgroups (cgroup v2), the pure parts (agent_cgroup.c) ----
 *
 * Every job generation the launcher starts runs in a cgroup of its own, so that a stop
 * reaches all its descendants (a setsid, a double fork), a restarted agent finds what
 * it left, and its CPU and memory use is accounted (README "Cluster deployment"):
 *
 *     <root>/node-<node>-<hash>/job-<job>.g<generation>/{node,rank-<rank>}
 *
 * <root> is --cgroup-root, else the agent's own cgroup (the "0::" line of
 * /proc/self/cgroup, below the cgroup2 mount of /proc/self/mountinfo); when that cgroup
 * is a leaf named "agent" (where the agent moved itself, or systemd's
 * DelegateSubgroup=agent put it), its parent. One directory per node and mount keeps
 * agents that share a root (tests, several nodes on one machine) apart; one leaf per
 * process (the
 * msrun process of the server, or each rank) tells which of them still runs. Job and
 * node names are [a-z0-9._-] (conf_name_is_valid()), so they need no escaping; the
 * "job-" and "node-" prefixes keep them clear of the kernel's "cgroup." and controller
 * file names, and the generation is the number after the last ".g".
 */

/*
 * agent_cgroup_node_name() - "node-<node>-<8 hex digits>" into @ret (@len bytes): the
 * digits are the FNV-1a hash of @mount (the --mount path as given), so that agents of
 * two ascendfs mounts that use the same node names (tests) keep apart, and an agent
 * restarted with the same --mount finds its directory again.
 * Returns 0, -EINVAL (@node is not a server name) or -ENAMETOOLONG.
 */
int agent_cgroup_node_name(const char *node, const char *mount, char *ret, size_t len);

/* Longest cgroup directory name the agent makes ("job-" NAME ".g" 4294967295). */
#define AGENT_CGROUP_NAME_MAX (CONF_NAME_MAX + 20)

/*
 * agent_cgroup_job_name() - "job-<job>.g<generation>" into @ret (@len bytes).
 * Returns 0, -EINVAL (@job is not a job name, @generation is 0) or -ENAMETOOLONG.
 */
int agent_cgroup_job_name(const char *job, unsigned generation, char *ret, size_t len);

/*
 * agent_cgroup_parse_job_name() - the job and generation of a directory @name made by
 * agent_cgroup_job_name(). @ret_job: CONF_NAME_MAX + 1 bytes.
 * Returns 0, or -EINVAL when @name is not one (then the directory is not the agent's:
 * it is left alone); outputs untouched on failure.
 */
int agent_cgroup_parse_job_name(const char *name, char *ret_job, unsigned *ret_generation);

/* What a restarted agent does with a job cgroup it finds (agent_cgroup_decide()). */
enum agent_cgroup_verdict {
	AGENT_CGROUP_FOREIGN,	/* not a job cgroup name: not ours, left alone */
	AGENT_CGROUP_ADOPT,	/* its generation is still listed: watch it, report its end */
	AGENT_CGROUP_STOP,	/* not listed (cancelled, moved, restarted): stop, remove */
	AGENT_CGROUP_KEEP,	/* a process-level recovery kept its processes: a listed
				 * share of its job has kept_from <= its generation < the
				 * share's (agent_share_keeps()); watched as that share's */
};

/*
 * agent_share_keeps() - does share @s carry over the job's run of @generation (a
 * process-level recovery kept it: s->kept_from <= @generation < s->generation)?
 */
bool agent_share_keeps(const struct agent_share *s, const char *job, unsigned generation);

/*
 * agent_cgroup_decide() - the verdict on each directory of <root>/node-<node> a
 * restarted agent finds.
 * @names: @count directory names (borrowed; NULL entries are FOREIGN).
 * @shares: the @share_count shares of nodes/<node>/jobs, as agent_parse_server_jobs()
 *        read them (borrowed; may be NULL when @share_count is 0).
 * @ret: @count verdicts, in the order of @names.
 */
void agent_cgroup_decide(const char *const *names, size_t count,
			 const struct agent_share *shares, size_t share_count,
			 enum agent_cgroup_verdict *ret);

/*
 * agent_cgroup_keyed() - the value of @key in a cgroup "flat keyed" file such as
 * cpu.stat ("usage_usec 1234") or cgroup.events ("populated 1"): @text, @len (need not
 * be NUL-terminated), one "KEY VALUE" per line.
 * Returns 0 (sets *@ret), -ENOENT (no such key) or -EINVAL (its value is not a
 * whole number that fits 64 bits).
 */
int agent_cgroup_keyed(const char *text, size_t len, const char *key, unsigned long long *ret);

/*
 * agent_cgroup_self() - the agent's cgroup v2 path from the text of /proc/self/cgroup:
 * the "0::PATH" line (cgroups(7); a hybrid system also lists v1 hierarchies, which are
 * skipped). @ret: @ret_len bytes, receives PATH ("/" for the root).
 * Returns 0, -ENOENT (no "0::" line: no cgroup v2 hierarchy) or -ENAMETOOLONG.
 */
int agent_cgroup_self(const char *text, size_t len, char *ret, size_t ret_len);

/*
 * agent_cgroup2_mount() - the mount point of the cgroup2 filesystem from the text of
 * /proc/self/mountinfo (/sys/fs/cgroup on a unified system, /sys/fs/cgroup/unified on
 * a hybrid one); the first such mount wins. @ret: @ret_len bytes.
 * Returns 0, -ENOENT (no cgroup2 mount) or -ENAMETOOLONG.
 */
int agent_cgroup2_mount(const char *mountinfo, size_t len, char *ret, size_t ret_len);

/*
 * agent_exit_code() - the status an agent reports for a process, from a waitpid()
 * status: the exit status, or 128 + the signal number for a process killed by a signal
 * (as sh reports it), 255 at most.
 */
int agent_exit_code(int wait_status);

/*
 * The instance lock: one agent per server and machine. An agent that runs job processes
 * (not --once) takes an exclusive flock(2) on <dir>/<name> at start and holds it while
 * it runs; a second one finds it held and refuses to start, naming the holder. What the
 * lock is keyed by is what the agent drives:
 *   npu-smi mode    the NPUs of this machine: one lock, "npus.lock", whatever --node
 *                   and --mount say (two node names on one machine would put two jobs'
 *                   processes on the same devices);
 *   --fault-file    simulated NPUs (tests, several servers on one machine): one lock per
 *                   node and mount, "node-<node>-<hash of the mount>.lock".
 * The file holds the holder's text ("pid PID node NODE mount MOUNT"); the kernel drops
 * the lock when the holder exits, however it exits.
 */

/* Longest holder text agent_lock_take() reads back. */
#define AGENT_LOCK_TEXT_MAX 512

/*
 * agent_lock_dir() - the directory of the lock file into @ret (@len bytes):
 * /run/ascend-agent for root (@euid 0), else <@runtime_dir>/ascend-agent when
 * @runtime_dir ($XDG_RUNTIME_DIR; NULL allowed) is an absolute path, else
 * /tmp/ascend-agent-<euid>. Returns 0 or -ENAMETOOLONG.
 */
int agent_lock_dir(unsigned euid, const char *runtime_dir, char *ret, size_t len);

/*
 * agent_lock_name() - the lock file's name into @ret (@len bytes): "npus.lock" with
 * @per_machine (npu-smi mode), else "node-<@node>-<8 hex digits>.lock", the digits the
 * hash of @mount as agent_cgroup_node_name() makes it (give the canonical path, so that
 * "/ascend" and "/ascend/" are one mount). Returns 0, -EINVAL (@node is not a server
 * name) or -ENAMETOOLONG.
 */
int agent_lock_name(const char *node, const char *mount, bool per_machine, char *ret,
		    size_t len);

/*
 * agent_lock_take() - create @dir (mode 0755, its parent must exist) and take the
 * exclusive lock on @dir/@name without waiting; on success write @holder (borrowed, a
 * line) into the file and set *@ret_fd, the descriptor (close-on-exec) that holds the
 * lock: keep it open for the life of the process.
 * When another open file holds the lock: -EBUSY, with *@ret_pid (NULL allowed) the
 * holder's pid (0 when its file does not say yet) and @ret_text (@text_len bytes, NULL
 * allowed) its first line. Other errors: -ENOTDIR, -EPERM (@dir is not a directory
 * owned by this user or root and writable by it alone), -ENAMETOOLONG, -errno of
 * mkdir(), open(), flock() or the write; *@ret_fd is set only on success.
 */
int agent_lock_take(const char *dir, const char *name, const char *holder, int *ret_fd,
		    long *ret_pid, char *ret_text, size_t text_len);

#endif
