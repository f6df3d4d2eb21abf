/* SPDX-License-Identifier: MIT */
/*
 * conf: YAML (and JSON) text -> validated structs.
 *
 * Three documents are parsed here: the cluster configuration
 * (ascend_cluster.yaml: the seed's `cluster`, `resource`, `hccl` sections plus the
 * `servers` inventory and `queues`), job specs, and the server-type table that
 * describes each Ascend product as data.
 *
 * Nothing here logs, reads a clock or keeps global state; every function is safe to
 * call from any thread on distinct arguments.
 *
 * Errors: functions return 0 on success or a negative errno:
 *   -EINVAL  the document is malformed or fails validation; *err says where and why
 *   -ENOMEM  allocation failed
 *   -EFBIG   the input is larger than the documented limit
 *   -errno   from open()/read() when loading a file
 * On failure the ret_* outputs are left untouched.
 */
#ifndef ASCENDFS_CONF_H
#define ASCENDFS_CONF_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A job or server name: [a-z0-9][a-z0-9._-]{0,62}. */
#define CONF_NAME_MAX 63
/* Largest job spec accepted, in bytes (a spec is a few hundred bytes in practice). */
#define CONF_SPEC_MAX_BYTES (64 * 1024)
/* Largest cluster configuration accepted, in bytes. */
#define CONF_CONFIG_MAX_BYTES (8 * 1024 * 1024)
/* Most NPUs one server may hold (A3 exposes 16 dies). */
#define CONF_SERVER_NPUS_MAX 16
/* Most servers in one inventory. */
#define CONF_SERVERS_MAX 16384
/* HCCL_CONNECT_TIMEOUT bounds in seconds (CANN environment-variable reference). */
#define CONF_HCCL_CONNECT_TIMEOUT_MIN_SEC 120
#define CONF_HCCL_CONNECT_TIMEOUT_MAX_SEC 7200
/*
 * Longest duration any input may give (conf_parse_duration(): 36500 days), so that its
 * microseconds, added to any clock reading, fit a signed 64-bit number.
 */
#define CONF_DURATION_MAX_SEC (36500ull * 86400)
/* Longest job time_limit, and longest queue max_time_limit/default_time_limit: 365 days. */
#define CONF_TIME_LIMIT_MAX_SEC (365u * 86400)

/*
 * Where and why a document was refused. `msg` is one lowercase sentence without a
 * trailing period that says what is wrong and what to do; conf_error_format() puts
 * "file:line:column: " in front of it. line and column are 1-based; 0 means the
 * error is about the whole document.
 */
struct conf_error {
	char file[256];
	unsigned line;
	unsigned column;
	char msg[1024];
};

/*
 * conf_error_format() - render @err as "file:line:column: msg" into @buf (size @len,
 * always NUL-terminated when @len > 0). Omits line/column when they are 0.
 * Returns @buf.
 */
char *conf_error_format(const struct conf_error *err, char *buf, size_t len);

/* How an HCCS group constrains a sub-server allocation. */
enum conf_hccs_kind {
	CONF_HCCS_RING, /* 910: rings of 4 (0-3, 4-7); <= ring size stays inside one ring */
	CONF_HCCS_MESH, /* 910B: 8 NPUs in one full mesh; any count, lowest free ids */
	CONF_HCCS_PAIR, /* A3: dies in pairs (0-1, 2-3 ...); even requests take whole pairs */
};

/*
 * A server product, as data. Sources: Ascend "Atlas 800 training server" and
 * "Atlas 800T A2" hardware guides and the Ascend volcano scheduler plugin's
 * per-product rules (design.md §5).
 */
struct conf_server_type {
	const char *name;		/* config key, e.g. "atlas800t-a2" */
	const char *product;		/* human name, e.g. "Atlas 800T A2" */
	const char *chip;		/* "910", "910B", "910C" */
	unsigned npu_count;		/* NPUs (dies) per server */
	enum conf_hccs_kind hccs;	/* sub-server placement rule */
	unsigned hccs_group_size;	/* NPUs per ring/mesh/pair */
	uint32_t legal_sizes_mask;	/* bit n set: n NPUs on one server is legal */
	const char *rank_table_version; /* "1.0" or "1.2" (super pods) */
};

/*
 * conf_server_type_find() - the built-in server type called @name (borrowed), or NULL.
 * The returned pointer is static and valid for the life of the program.
 */
const struct conf_server_type *conf_server_type_find(const char *name);

/*
 * conf_server_type_list() - all built-in types; *ret_count receives the count.
 * The array is static.
 */
const struct conf_server_type *conf_server_type_list(size_t *ret_count);

/* One compute server of the inventory. All strings owned by the conf_cluster. */
struct conf_server {
	char *name;			/* server_id in the rank table; unique */
	char *host_ip;			/* IPv4 or IPv6 literal */
	const struct conf_server_type *type; /* static */
	char *leaf_switch;		/* leaf switch name; servers of one switch share it */
	char *super_pod;		/* super pod id, NULL when none */
	unsigned npu_count;		/* == type->npu_count */
	char *device_ips[CONF_SERVER_NPUS_MAX]; /* per physical device id; NULL = unknown */
	unsigned line;			/* where it was declared, for later messages */
};

/*
 * A queue (design.md §3 queues/). Jobs are served by queue priority, then job priority,
 * then the queue with the smallest share (used NPUs / weight), then submission order.
 * With resource.enable_quota_limit, a queue uses at most quota_npus NPUs, except that a
 * may_borrow queue may also take NPUs nobody is waiting for; those borrowed NPUs are
 * taken back by preemption when a queue under its quota needs them.
 */
struct conf_queue {
	char *name;
	unsigned quota_npus;		/* 0 = no limit */
	unsigned priority;		/* 0-1000, higher is served first */
	unsigned weight;		/* fair-share weight, >= 1 */
	bool may_borrow;		/* may use idle NPUs beyond quota */
	char **groups;			/* unix group names allowed to submit; NULL-terminated */
	size_t group_count;
	/*
	 * Job caps: what a user may ask for in this queue (Slurm's partition MaxTime,
	 * DefaultTime and MaxNodes). Root and members of cluster.operator_group are exempt;
	 * a user's spec over a cap is refused at submission (sched_job_check). Each is the
	 * queue's own key, or else the resource: key of the same name (conf_cluster).
	 */
	unsigned max_priority;		/* max_priority: highest job priority, 500-1000;
					 * default resource.max_priority (900, "high") */
	unsigned max_npus;		/* max_npus: most NPUs per job, an elastic job's max
					 * included; 0 = no cap */
	unsigned max_time_limit_sec;	/* max_time_limit: longest time_limit; 0 = no cap */
	unsigned default_time_limit_sec; /* default_time_limit: the time_limit of a spec
					 * without one (everyone's); 0 = max_time_limit.
					 * Inherited from resource: it is at most this
					 * queue's max_time_limit */
	/*
	 * Job-count limits of the queue (Slurm's QOS MaxSubmitJobsPerUser and
	 * GrpSubmitJobs): pending, running, recovering and stopping jobs count, drafts and
	 * finished ones do not. Root and operators are exempt; anyone else's submission
	 * over one is refused (-EAGAIN, sched_job_check_as). 0 = no limit; inherited
	 * from the resource: key of the same name.
	 */
	unsigned max_submit_jobs_per_user; /* max_submit_jobs_per_user: one user's jobs */
	unsigned max_submit_jobs;	/* max_submit_jobs: everyone's jobs together */
};

/* The whole cluster configuration. Create with conf_cluster_load/_parse. */
struct conf_cluster {
	char *source;			/* file name it was read from */

	/* cluster: */
	char *scheduler_ip;		/* head server address (daemon host); default 127.0.0.1 */
	unsigned scheduler_port;	/* base port for MS_SCHED_PORT; default 8118 */
	bool enable_dynamic_network;	/* msrun dynamic networking (true) or rank table launch */
	bool enable_fault_recovery;	/* recover jobs on faults (issue: faults) */
	unsigned fault_check_interval_sec; /* agent report interval; default 5 */
	unsigned heartbeat_timeout_sec;	/* default 3 * fault_check_interval_sec */
	bool topology_aware_schedule;	/* false: topology-blind first fit */
	unsigned spine_oversub_pct;	/* spine_oversubscription: the leaf switches' uplink
					 * oversubscription in hundredths (200 = 2:1), what
					 * topology.json and the cost model divide RoCE through
					 * the spine by (sched_comm.h); default 100 (1:1,
					 * non-blocking), 100-6400 */
	bool require_agent;		/* servers that never reported are unschedulable */
	char *name;			/* cluster name, default "ascend" */
	/* fault policy (design.md §6); keys under `cluster:` */
	unsigned fault_hold_sec;	/* fault_hold_time: an NPU that reports OK again returns
					 * to service this long after its last fault;
					 * default 2 * fault_check_interval_sec, 0-86400 */
	unsigned fault_escalate_count;	/* fault_escalate_count: this many faults of one NPU
					 * within the window isolate it until `clear`;
					 * default 3, 0 = never, at most 1000 */
	unsigned fault_escalate_window_sec; /* fault_escalate_window: default 3600,
					 * 1 s to 7 days */
	unsigned stop_grace_sec;	/* stop_grace_period: SIGTERM to SIGKILL for a job's
					 * processes; default 30, 0-3600 */
	unsigned max_job_count;		/* max_job_count: job records kept (active and
					 * finished, as Slurm's MaxJobCount); at the limit the
					 * oldest finished record is dropped, and with none a
					 * submission is refused; default 100000 */
	unsigned max_job_count_per_user; /* max_job_count_per_user: the drafts and active
					 * jobs (the records that cannot be dropped) one user
					 * may hold; finished records do not count. Root and
					 * operators are exempt. Default max_job_count / 10
					 * (at least 1), 1 to max_job_count */
	unsigned reserved_job_count;	/* reserved_job_count: records kept for root and
					 * operators: a user's draft or job is refused while
					 * everyone's drafts and active jobs leave no more
					 * than this many of max_job_count. Default
					 * max_job_count / 20 (at least 1 when max_job_count
					 * > 1), 0 to max_job_count - 1 */
	unsigned event_history;		/* event_history: events kept (cluster/events and the
					 * durable store); older ones are dropped, sequence
					 * numbers go on; default 65536, 16 to 1048576 */
	unsigned accounting_history;	/* accounting_history: records of ended jobs kept
					 * (cluster/accounting and the durable store, as
					 * Slurm's accounting keeps finished jobs); older
					 * ones are dropped; default 10000, 16 to 1048576 */
	unsigned job_log_max_mib;	/* job_log_max_mib: MiB of output the head keeps per
					 * job (jobs/<job>/log and log.1, each up to half;
					 * fs_joblog.c), as kubelet's containerLogMaxSize;
					 * default 16, 1 to 4096 */
	unsigned max_uploads_per_user;	/* max_uploads_per_user: specs one user (not root,
					 * not an operator) may hold open for writing at once;
					 * the next create or open fails with EMFILE; default
					 * 200, 1 to 1000000 */
	unsigned recovery_allowed;	/* recovery_strategies: the strategies a job's
					 * `recovery:` may name, a bit set of
					 * (1u << enum conf_recovery); default all
					 * (CONF_RECOVERY_ALL); job is always allowed */
	uint64_t *retry_fault_codes;	/* retry_fault_codes: owned, sorted, no duplicates:
					 * NPU error codes (as npu-smi prints them, read as
					 * numbers) whose Critical report is a transient
					 * fault: a job whose recovery ladder names retry
					 * recomputes its step and the NPU stays in service
					 * (MindCluster's RestartRequest level, listed in its
					 * device plugin's faultCode.json); default none */
	size_t retry_fault_code_count;	/* entries of retry_fault_codes, at most
					 * CONF_RETRY_FAULT_CODES_MAX */
	unsigned recovery_timeout_sec;	/* recovery_timeout: how long one step of a
					 * recovery ladder waits for the job's processes
					 * (a dump's saves) before it falls back to the
					 * next strategy; default 30, 1-3600 */
	char *operator_group;		/* operator_group: members of this unix group (primary
					 * or supplementary) may do what root may on the
					 * cluster: write nodes/<server>/health (an agent
					 * need not run as root), nodes/<server>/ctl,
					 * cluster/ctl and queues/<queue>/quota, which are
					 * then mode 0664 with this group; NULL = root only.
					 * Resolved by the daemon at each use (not here): a
					 * name that does not resolve admits nobody */

	/* resource: */
	unsigned total_npu;		/* must equal the inventory's NPU count */
	bool allow_mix_task;		/* small jobs may share a server with other jobs */
	bool enable_quota_limit;	/* queue quotas enforced at admission */
	bool backfill;			/* EASY backfill (default true); false: strict
					 * priority order, a blocked job holds the line */
	bool preemption;		/* a pending job may preempt lower-priority jobs and
					 * reclaim borrowed NPUs (default true) */
	unsigned max_preemptions_per_job; /* max_preemptions_per_job: a job preempted this
					 * many times is no longer a victim of priority
					 * preemption (LSF's MAX_JOB_PREEMPT); reclaims of
					 * NPUs it borrows beyond its queue's quota still
					 * take it. 0 = no bound (default) */
	unsigned preempt_exempt_sec;	/* preempt_exempt_time (Slurm's PreemptExemptTime):
					 * a job that started (or restarted after a fault)
					 * less than this ago is no victim of preemption of
					 * any kind; 0 = none (default), at most 7 days */
	unsigned priority_weight_age;	/* priority_weight_age (Slurm's PriorityWeightAge):
					 * the most a pending job's wait adds to its queue's
					 * priority when the pass picks which queue it serves
					 * next, in queue priority's units (0-1000); 0 = no
					 * aging (default): queue priority is strict. The
					 * order inside a queue and who may preempt whom do
					 * not change (sched_serve_before() in sched_pass.h),
					 * and every pass is a full one */
	unsigned priority_max_age_sec;	/* priority_max_age (Slurm's PriorityMaxAge): the
					 * wait at which the age reaches priority_weight_age;
					 * default 7 days, 1 s to 365 days, at least
					 * priority_weight_age seconds */
	unsigned elastic_grow_delay_sec; /* elastic_grow_delay: an elastic job grows only
					 * after its generation ran this long (each resize
					 * restarts it from a checkpoint); default 600,
					 * 0 = at once, at most 7 days */
	/* job caps every queue inherits unless it sets its own (struct conf_queue) */
	unsigned max_priority;		/* max_priority: default 900; 500-1000 */
	unsigned max_npus;		/* max_npus: default 0 (no cap) */
	unsigned max_time_limit_sec;	/* max_time_limit: default 0 (no cap), at most 365 d */
	unsigned default_time_limit_sec; /* default_time_limit: default 0; at most
					 * max_time_limit when that is set */
	unsigned max_submit_jobs_per_user; /* max_submit_jobs_per_user: default 0 (none) */
	unsigned max_submit_jobs;	/* max_submit_jobs: default 0 (none) */

	/* hccl: */
	char *hccl_log_level;		/* debug|info|warning|error */
	unsigned hccl_connect_timeout_sec; /* HCCL_CONNECT_TIMEOUT, 120-7200 */
	unsigned hccl_exec_timeout_sec;	/* HCCL_EXEC_TIMEOUT, 0 = unset */
	char *hccl_if_ip;		/* HCCL_IF_IP, NULL = unset */
	char *hccl_socket_ifname;	/* HCCL_SOCKET_IFNAME, NULL = unset */

	/* state: where the daemon keeps its durable state (conf_state.c; fs_store.h).
	 * Names as kube-apiserver's --etcd-servers, --etcd-prefix and the leader
	 * election's lease duration (kube-scheduler --leader-elect-lease-duration). */
	enum conf_state_backend {
		CONF_STATE_SQLITE,	/* backend: sqlite (default): --state-dir/ascendfs.db */
		CONF_STATE_ETCD,	/* backend: etcd: the etcd cluster of etcd_servers */
	} state_backend;
	char *etcd_servers;		/* etcd_servers: the members' client URLs, comma
					 * separated ("http://10.0.0.1:2379,..."; a YAML list
					 * is joined), at most 16; NULL with sqlite */
	char *etcd_prefix;		/* etcd_prefix: every key the daemon writes starts
					 * with it; ends with '/'; default "/ascendfs/<cluster
					 * name>/" */
	unsigned leader_lease_sec;	/* leader_lease_duration: the active head's lease; a
					 * standby takes over this long after the active head
					 * stops renewing it; default 10, 2-300 s */
	unsigned etcd_timeout_sec;	/* etcd_request_timeout: how long one request waits
					 * for one member before the next is tried; default
					 * 2 s, 1-60 s */

	struct conf_server *servers;	/* inventory order is topology order within a switch */
	size_t server_count;
	struct conf_queue *queues;	/* always has at least the queue "default" */
	size_t queue_count;
};

/*
 * conf_cluster_load() - read and validate the configuration file at @path.
 * @ret: new conf_cluster on success (caller frees with conf_cluster_free).
 * @err: filled on -EINVAL/-EFBIG/-errno; may not be NULL.
 */
int conf_cluster_load(const char *path, struct conf_cluster **ret, struct conf_error *err);

/*
 * conf_cluster_parse() - as conf_cluster_load() but from @buf (@len bytes, need not be
 * NUL-terminated); @file names the source in messages (borrowed).
 */
int conf_cluster_parse(const char *buf, size_t len, const char *file, struct conf_cluster **ret,
		       struct conf_error *err);

/* conf_cluster_free() - free @c and everything it owns; NULL is fine. */
void conf_cluster_free(struct conf_cluster *c);

/*
 * conf_cluster_render_yaml() - the effective configuration as normalized YAML
 * (every key, defaults filled in). *ret_buf is new (free()), *ret_len its length.
 * Returns 0 or -ENOMEM.
 */
int conf_cluster_render_yaml(const struct conf_cluster *c, char **ret_buf, size_t *ret_len);

/* conf_cluster_find_queue() - the queue called @name, or NULL. Borrowed. */
const struct conf_queue *conf_cluster_find_queue(const struct conf_cluster *c, const char *name);

/*
 * conf_cluster_add_queue() - add queue @name (borrowed; copied) with the defaults of a
 * configured queue that names nothing else: no quota, priority 500, weight 1,
 * may_borrow, open to every group, the job caps and job-count limits of resource: (@c's
 * max_priority, max_submit_jobs etc.). For programs that build a configuration around
 * given work (ascend-sim adds a trace's queues). Pointers into c->queues taken before
 * the call are invalid after it. Returns 0, -EEXIST (a queue of that name exists),
 * -EINVAL (not a valid name, conf_name_is_valid()) or -ENOMEM (@c unchanged).
 */
int conf_cluster_add_queue(struct conf_cluster *c, const char *name);

/*
 * Recovery strategies, the rungs of a job's recovery ladder (issue 17). A fault walks the
 * job's `recovery:` list in order; the first strategy that applies is used, and when it
 * fails (a deadline passes, a process says it cannot) the next one is tried. Words are
 * MindCluster's recover-strategy words where it has one (MindCluster resumable-training
 * guide: "dump" saves the dying-gasp checkpoint).
 */
enum conf_recovery {
	/* in ladder order, finest first: a cluster's bound is written out in this order */
	CONF_RECOVERY_RETRY,	/* online retry, for a transient NPU fault (its code is in
				 * the cluster's retry_fault_codes): no process exits and
				 * the NPU stays in service; every process drops the step
				 * in flight, pauses, and recomputes it: no step lost */
	CONF_RECOVERY_IN_PLACE,	/* for a process that exited: only it restarts, on the
				 * same NPUs, while the others pause at the step
				 * boundary and then go on with it: no step lost */
	CONF_RECOVERY_PROCESS,	/* process-level: for a lost NPU or server, only the
				 * failed servers' processes start again, on whole free
				 * servers that replace them (a new generation and rank
				 * table); the others stay up, pause at the step
				 * boundary, rebuild their communicator from the new
				 * rank table and go on: no step lost */
	CONF_RECOVERY_DUMP,	/* the surviving processes save the step they finished
				 * (jobs/<id>/recovery), then every process restarts
				 * from that checkpoint: one step lost at most */
	CONF_RECOVERY_JOB,	/* job-level: every process restarts from the newest
				 * checkpoint on disk, healthy servers kept */
	CONF_RECOVERY_COUNT
};

/* retry_fault_codes holds at most this many codes. */
#define CONF_RETRY_FAULT_CODES_MAX 4096

/*
 * conf_fault_code_parse() - an NPU error code as npu-smi and the device logs print it
 * ("0x" and 1 to 16 hex digits, or exactly 8 hex digits: 80C98000), the @len bytes at
 * @text, into *@ret. Returns 0 or -EINVAL.
 */
int conf_fault_code_parse(const char *text, size_t len, uint64_t *ret);

/*
 * conf_cluster_code_is_retry() - is @code (a health report's code text, "" for none) one
 * of @c's retry_fault_codes? Binary search; false for text that is not a code.
 */
bool conf_cluster_code_is_retry(const struct conf_cluster *c, const char *code);

/* Every strategy, as a bit set of (1u << enum conf_recovery). */
#define CONF_RECOVERY_ALL ((1u << CONF_RECOVERY_COUNT) - 1)

/* conf_recovery_name() - "retry", "in-place", "process", "dump", "job"; "unknown" for another value. Static
 * text. */
const char *conf_recovery_name(enum conf_recovery r);

/*
 * conf_recovery_list_text() - @count strategies of @list as "dump, job" into @buf
 * (@len bytes, NUL-terminated; cut at a whole name when too small). Returns the
 * length written.
 */
size_t conf_recovery_list_text(const enum conf_recovery *list, size_t count, char *buf,
			       size_t len);

enum conf_launch {
	CONF_LAUNCH_MSRUN,	/* one msrun per server (hosts/<server>.env) */
	CONF_LAUNCH_PER_RANK,	/* one process per NPU (ranks/<rank>.env) */
};

/*
 * What a job is (`kind:`). A training job runs to its end, and max_restarts bounds its
 * restarts. A service (an inference service: MindIE Server on Atlas 800I A2, or any
 * program that serves until stopped) runs until cancelled: it is `replicas` instances,
 * each placed as a gang of its own (sched_service.c), whose processes are started again
 * whenever they end, without a budget.
 */
enum conf_job_kind {
	CONF_JOB_TRAINING,
	CONF_JOB_SERVICE,
};

/* A service's instances at most (`replicas:`). */
#define CONF_SERVICE_REPLICAS_MAX 64
/* NPUs of one service instance at most: MindIE Server's multi-node inference spans at
 * most 4 servers and 32 NPUs (MindIE installation guide, multi-node inference). */
#define CONF_SERVICE_NPUS_MAX 32
/* A service's disruption budget when `max_unavailable:` is not given: one instance
 * at a time, as a rolling move. */
#define CONF_SERVICE_MAX_UNAVAILABLE_DEFAULT 1
/* A service's name at most: its instances are <name>.<index>, index < 64. */
#define CONF_SERVICE_NAME_MAX (CONF_NAME_MAX - 3)
/* A disaggregated service's name at most when ascendfs runs its controller or
 * coordinator: the role runs as <name>.coordinator. */
#define CONF_SERVICE_ROLE_NAME_MAX (CONF_NAME_MAX - 12)
/* A service's endpoint port when `port:` is not given: MindIE Server's default (its
 * config.json ServerConfig.port, MindIE Server configuration reference). */
#define CONF_SERVICE_PORT_DEFAULT 1025
/* max_restarts of a service: never used up. */
#define CONF_RESTARTS_UNLIMITED UINT_MAX

/*
 * ---- job arrays (`array:`, Slurm's sbatch --array) ----
 * A spec with `array: <indexes>[%<throttle>]` is one job per index, its elements, named
 * <name>.<index>; indexes are "<a>", "<a>-<b>" or "<a>-<b>:<step>" joined by commas
 * (Slurm's --array syntax), 0 to CONF_ARRAY_INDEX_MAX (Slurm's default MaxArraySize,
 * 1001, allows 0-1000); %<throttle> lets at most that many elements be active at once.
 */
#define CONF_ARRAY_INDEX_MAX 1000
/* An array's name at most: its elements are <name>.<index>, index <= 1000. */
#define CONF_ARRAY_NAME_MAX (CONF_NAME_MAX - 5)
/* The longest text conf_job_array_text() writes, with its NUL. */
#define CONF_ARRAY_TEXT_MAX 6144

struct conf_job_array {
	unsigned count;		/* indexes in set; 0: the spec is no array */
	unsigned throttle;	/* elements active at once at most; 0 = no limit */
	unsigned char set[CONF_ARRAY_INDEX_MAX / 8 + 1]; /* bit i (set[i / 8] >> i % 8): index i */
};

/* conf_job_array_has() - is @index one of @a's indexes? */
bool conf_job_array_has(const struct conf_job_array *a, unsigned index);

/*
 * conf_job_array_parse() - read @text ("0-99%8", "1,3,5-11:2", "7") into @a (cleared
 * first). Returns 0, or -EINVAL with @why (@why_len bytes) saying what is wrong:
 * "index 1200 is above 1000", "range 9-3 ends before it starts", ...
 */
int conf_job_array_parse(const char *text, struct conf_job_array *a, char *why,
			 size_t why_len);

/*
 * conf_job_array_text() - @a's indexes as the shortest runs ("0-99", "0-98:2", "3,7"),
 * with "%<throttle>" when @with_throttle and @a has one, into @buf (@len bytes;
 * CONF_ARRAY_TEXT_MAX always suffices). Returns @buf.
 */
char *conf_job_array_text(const struct conf_job_array *a, bool with_throttle, char *buf,
			  size_t len);

/* A job spec as accepted. Strings are owned by the spec. */
/* Jobs a spec's `after:` may name (Slurm's --dependency takes a list as long as one likes;
 * a pipeline step waits for a few). */
#define CONF_JOB_AFTER_MAX 16

/* One entry of `after:`: the job named must have ended (@any: Slurm's afterany) or
 * completed (Slurm's afterok, the default) before this one may start. */
struct conf_job_after {
	char name[CONF_NAME_MAX + 1];
	bool any;
};

struct conf_job_spec {
	char *name;		/* validated name */
	unsigned npus;		/* requested NPUs (npus_min when elastic) */
	unsigned npus_min;	/* == npus unless `npus: {min, max}` */
	unsigned npus_max;	/* == npus unless `npus: {min, max}` */
	char *queue;		/* default "default"; existence checked by the caller */
	unsigned priority;	/* 0-1000; low=100, normal=500 (default), high=900 */
	char *command;		/* NULL when absent */
	enum conf_launch launch; /* default msrun */
	char *checkpoint_dir;	/* NULL when absent; absolute path */
	unsigned max_restarts;	/* default 3 */
	uint64_t time_limit_sec; /* 0 = none */
	/* `parallel:` sizes, 0 = not given: tensor, context, expert (inside data), data
	 * and pipeline parallel. Ranks are numbered tp innermost, then cp, dp (ep groups
	 * are runs of ep consecutive dp indices) and pp outermost (sched_comm.h). */
	unsigned tp, cp, ep, dp, pp;
	char *server_type;	/* restrict to one server type; NULL = any */
	enum conf_recovery recovery[CONF_RECOVERY_COUNT]; /* `recovery:` ladder, in order,
				 * each strategy at most once; default [job] */
	size_t recovery_count;	/* entries of recovery, >= 1 when parsed; 0 (a spec a
				 * program built field by field) means [job] */
	enum conf_job_kind kind; /* default training */
	unsigned replicas;	/* service: instances, 0-CONF_SERVICE_REPLICAS_MAX (default
				 * 1; 0 serves none until scaled up); 0 for a training
				 * job */
	unsigned port;		/* service: the port its instances serve on (endpoint),
				 * default CONF_SERVICE_PORT_DEFAULT; 0 for a training job */
	bool preemptible;	/* may a higher-priority job's preemption stop its
				 * instances? A training job: true (its queue and priority
				 * decide). A service: `preemptible:`, default false */
	unsigned max_unavailable; /* service: instances that voluntary disruptions
				 * (preemption, a drain) may leave not ready at once, its
				 * disruption budget (Kubernetes' PodDisruptionBudget
				 * maxUnavailable); 0-CONF_SERVICE_REPLICAS_MAX, default
				 * 1; 0 for a training job */
	/* The disaggregated layout (MindIE Motor's prefill-decode disaggregation), a
	 * service's `disaggregated:` map; all 0/NULL when not given. Its instances 0 to
	 * prefill - 1 are prefill instances, the next decode ones decode instances
	 * (replicas = prefill + decode); controller and coordinator name the servers
	 * MindIE MS's controller and coordinator run on (groups 1 and 0 of the global rank
	 * table, sched_render_global_ranktable()). */
	unsigned prefill, decode;
	char *controller, *coordinator;
	/* The role's command when the spec gives `<role>: {server, command}`: ascendfs
	 * runs it on the role's server as run <name>.<role> (sched_service_roles.c), else
	 * NULL (the site starts the role itself). */
	char *controller_command, *coordinator_command;
	/* `after:` (job dependencies; a training job only): each a job that exists when
	 * this one is submitted, none twice, not this job itself (the cluster checks
	 * what needs it: sched_deps.c); after_count entries, at most CONF_JOB_AFTER_MAX,
	 * owned (NULL when none: 16 inline took 1 KiB of every job's spec) */
	struct conf_job_after *after;
	unsigned after_count;
	/* `array:` (a training job only; its name at most CONF_ARRAY_NAME_MAX): count 0
	 * when absent, and in its elements' copies */
	struct conf_job_array array;
};

/*
 * conf_name_is_valid() - true when @name matches [a-z0-9][a-z0-9._-]{0,62}.
 * Rejects NULL, "", ".", "..", '/', control characters and anything longer.
 */
bool conf_name_is_valid(const char *name);

/*
 * conf_job_name_is_valid() - conf_name_is_valid() and not ending in ".yaml", ".yml" or
 * ".json": under jobs/ such a name would read as a spec file, not as a job directory.
 */
bool conf_job_name_is_valid(const char *name);

/*
 * conf_job_spec_parse() - parse and validate a job spec.
 * @buf, @len: the document (YAML, or JSON when @file ends in ".json"; JSON syntax is
 *        checked by jansson). Need not be NUL-terminated.
 * @file: name used in messages, e.g. "llama70b.yaml" (borrowed).
 * @default_name: the job name when the spec has no `name` (borrowed; may be NULL,
 *        then `name` is required). When both are present they must be equal.
 * @ret: new spec on success (conf_job_spec_free).
 * Checks made here are the ones that need no cluster: types, ranges, names, units.
 * Placement legality (sizes per server type, queue existence) is checked by sched.
 * Returns 0, -EINVAL (see @err), -EFBIG (over CONF_SPEC_MAX_BYTES) or -ENOMEM.
 */
int conf_job_spec_parse(const char *buf, size_t len, const char *file, const char *default_name,
			struct conf_job_spec **ret, struct conf_error *err);

/*
 * conf_job_spec_where() - a refusal of a spec that parsed, pointed where the parser's
 * own errors point: "@file:LINE:COLUMN: @reason" (conf_error_format()'s form) into @buf
 * (size @len, always NUL-terminated when @len > 0). LINE and COLUMN are those of the
 * value of the key @reason begins with: a key path ("queue", "disaggregated.controller")
 * followed by ':' or ' ', as the refusals the cluster decides begin (an unknown queue
 * or server, a job cap), looked up in @text (@text_len bytes: the document
 * conf_job_spec_parse() took, YAML or JSON by @file's name as there). When @reason
 * begins with no key of the spec, or @text does not parse, "@file: @reason".
 * Returns @buf.
 */
char *conf_job_spec_where(const char *text, size_t text_len, const char *file,
			  const char *reason, char *buf, size_t len);

/* conf_job_spec_free() - free @s; NULL is fine. */
void conf_job_spec_free(struct conf_job_spec *s);

/*
 * conf_job_spec_dup() - a copy of @s (borrowed) named @name (borrowed; NULL: @s's name).
 * New (conf_job_spec_free), or NULL without memory.
 */
struct conf_job_spec *conf_job_spec_dup(const struct conf_job_spec *s, const char *name);

/*
 * conf_job_spec_render_yaml() - the spec as accepted, normalized (every field, defaults
 * filled). *ret_buf new (free()), length in *ret_len. Returns 0 or -ENOMEM.
 */
int conf_job_spec_render_yaml(const struct conf_job_spec *s, char **ret_buf, size_t *ret_len);

/* ---- NPU health reports (design.md §6), written by ascend-agent ---- */

/* Levels of npu-smi's Health column, in order of severity. */
enum conf_health_level {
	CONF_HEALTH_OK,
	CONF_HEALTH_WARNING,	/* log only */
	CONF_HEALTH_ALARM,	/* pre-isolate: no new work, running job stays */
	CONF_HEALTH_CRITICAL,	/* isolate the NPU and recover its job */
	CONF_HEALTH_UNKNOWN,	/* treated as Critical */
};

/* Largest health report accepted, in bytes. */
#define CONF_HEALTH_MAX_BYTES (64 * 1024)

struct conf_health_npu {
	unsigned id;			/* physical device id, < the server's npu_count */
	bool has_level;			/* a `npu N LEVEL` line (or JSON "health") was given */
	enum conf_health_level level;
	char code[24];			/* error code as reported, e.g. "0x80C98000"; "" */
	char message[160];		/* free text after the code; "" */
	char device_ip[48];		/* from an `ip N ADDR` line or JSON "device_ip"; "" */
	bool has_sdid;			/* a `sdid` line (JSON "super_device_id") was given */
	uint32_t sdid;			/* SDID: the NPU's id in its super pod (A3) */
	uint32_t super_pod_id;		/* npu-smi "Super Pod ID" */
	unsigned server_index;		/* npu-smi "Server Index", 0-CONF_SDID_SERVER_INDEX_MAX */
};

/*
 * An A3 SDID (super device id) is 32 bits: bits 22-31 the server index in the super pod
 * (0-47), 18-21 the chip id (0-7), 16-17 the die id, 0-15 the device id = chip id * 2 +
 * die id, which is the physical device id the rank table's device_id gives (Ascend
 * DCMI dcmi_get_spod_node_status(), "SDID legality"; a published A3 table has device 2
 * of server index 27 at super_device_id 113508354). HCCL compares the rank table's
 * super_device_id with the driver's SDID and fails with EI0014 when they differ
 * (hcomm HcclCommunicatorAttrs::CheckSuperDeviceId()).
 */
#define CONF_SDID_SERVER_INDEX_MAX 47
#define CONF_SDID_SERVER_INDEX(sdid) ((unsigned)((sdid) >> 22))
#define CONF_SDID_CHIP(sdid) ((unsigned)(((sdid) >> 18) & 0xf))
#define CONF_SDID_DIE(sdid) ((unsigned)(((sdid) >> 16) & 0x3))
#define CONF_SDID_DEVICE(sdid) ((unsigned)((sdid) & 0xffff))

/* Longest agent identity in a report, with its NUL. */
#define CONF_HEALTH_AGENT_MAX 160

/* Most job generations one `running` line may list (as many as ascend-agent tracks). */
#define CONF_HEALTH_RUNNING_MAX 128

/* A job generation that still has live processes on the reporting server. */
struct conf_health_running {
	char job[CONF_NAME_MAX + 1];	/* a valid job name (conf_job_name_is_valid) */
	unsigned generation;		/* >= 1 */
};

/*
 * One report. Line format (one item per line, '#' comments and blank lines ignored):
 *     agent a2-node-01:4f1c0e6d2a9b4b7e8d3c5a6f7e8d9c0b/4242.9e1d07c3
 *     node OK
 *     npu 0 OK
 *     npu 3 Critical 0x80C98000 HBM uncorrectable ECC
 *     ip 3 10.20.3.1
 *     sdid 3 113573891 1 27
 *     running llama/2 qwen-ft/1
 * or JSON: {"agent": "...", "node": "OK", "npus": [{"id": 3, "health": "Critical",
 *          "code": "0x80C98000", "message": "HBM uncorrectable ECC",
 *          "device_ip": "10.20.3.1", "super_device_id": 113573891, "super_pod_id": 1,
 *          "server_index": 27}], "running": [{"job": "llama", "generation": 2}]}
 * `sdid ID SDID SUPER_POD_ID SERVER_INDEX` (A3; JSON: the three numbers together) is
 * what `npu-smi info -t spod-info -i CARD -c CHIP` says of NPU ID: decimal numbers below
 * 2^32, SERVER_INDEX 0 to CONF_SDID_SERVER_INDEX_MAX. Refused: an SDID whose server
 * index field is not SERVER_INDEX, whose device field is not ID or whose chip and die
 * fields do not make the device field (the layout at CONF_SDID_SERVER_INDEX_MAX),
 * and NPUs of one report in two super pods or at two server indexes (one server is at
 * one place of one super pod).
 * A device IP must pass conf_device_ip_problem() and be given to one NPU only: the
 * same address on two NPUs of the server is refused (HCCL refuses a duplicate
 * device_ip: hcomm CheckUniqueAndInsertPool(UNIQUE_INFO_TYPE_DEVICE_IP)).
 * `running` (optional, at most once) lists the job generations that still have live
 * processes on the server, as JOB/GENERATION words (a valid job name, '/', a generation
 * of 1 or more without a leading zero; each at most once, at most
 * CONF_HEALTH_RUNNING_MAX), or the single word "-" for none (JSON: a list, possibly
 * empty). ascend-agent sends it in every report; a report without it says nothing about
 * processes (older agents, hand-written reports), so the daemon then keeps a stopping
 * job's NPUs until its stop deadline. Like `agent`, it alone is not a report.
 * `agent` (optional, at most once) names the agent that writes the reports: one word of
 * 1 to 159 printable ASCII bytes; ascend-agent sends "<host name>:<machine-id>/<pid>.<boot
 * id>" (the machine, then the process), so that the daemon can tell two agents that use
 * one node name apart (sched_server_check_agent()). It alone is not a report.
 * Levels (and the words node, npu, ip, sdid) are matched case-insensitively. The word after
 * the level is the error CODE when it is "0x" and 1 to 16 hex digits, or 8 hex digits as
 * npu-smi prints them; the rest of the line is the MESSAGE (at most 159 bytes). IP
 * addresses are stored in canonical form. An NPU may appear in one `npu` line and one
 * `ip` line and one `sdid` line (in JSON: one entry, with "health", "device_ip",
 * "super_device_id" or any of them; "code" and
 * "message" need "health"); npus[] holds each mentioned NPU once, in the order first
 * mentioned.
 */
/*
 * Most `usage` lines in one report: one per job generation with a cgroup on the server
 * (the agent runs at most 64 shares at once, stopping ones included, twice that).
 */
#define CONF_HEALTH_USAGE_MAX 128
/* Largest cpu_usec or memory_bytes of a usage line: INT64_MAX. */
#define CONF_HEALTH_USAGE_VALUE_MAX 9223372036854775807ull

/*
 * A `usage JOB GENERATION CPU_USEC MEMORY_BYTES` line (JSON "usage": [{"job",
 * "generation", "cpu_usec", "memory_bytes"}]): what one job generation's processes used
 * on the server so far, from its cgroup (ascend-agent(8): cpu.stat usage_usec, the CPU
 * time of all its processes in microseconds; memory.peak, else memory.current, in bytes,
 * 0 when the memory controller is not enabled there). A job name as conf_name_is_valid()
 * has it, a generation >= 1, whole numbers up to CONF_HEALTH_USAGE_VALUE_MAX (they are
 * JSON integers, which are signed 64-bit); the same job and generation twice is refused. Like `agent`, usage alone is not a report.
 */
struct conf_health_usage {
	char job[CONF_NAME_MAX + 1];
	unsigned generation;
	uint64_t cpu_usec;
	uint64_t memory_bytes;
};

struct conf_health_report {
	char agent[CONF_HEALTH_AGENT_MAX];	/* the `agent` item; "" when not given */
	bool has_node;
	enum conf_health_level node;
	struct conf_health_npu npus[CONF_SERVER_NPUS_MAX];
	size_t npu_count;
	bool has_running;			/* a `running` line (JSON "running") was given */
	size_t running_count;			/* entries of running[] (0 for `running -`) */
	struct conf_health_running running[CONF_HEALTH_RUNNING_MAX]; /* in the order given */
	struct conf_health_usage usage[CONF_HEALTH_USAGE_MAX]; /* `usage` lines, in order */
	size_t usage_count;
};

/*
 * conf_plural() - @singular when @n is 1, else @plural (both borrowed, returned as is): the
 * counted noun of a message, so it reads "1 NPU", "2 NPUs", "0 NPUs", "1 whole server".
 * Every module's messages use this one helper (sched, fs and agent depend on conf).
 */
const char *conf_plural(unsigned long long n, const char *singular, const char *plural);

/* conf_health_level_name() - "OK", "Warning", "Alarm", "Critical", "UNKNOWN" (static). */
const char *conf_health_level_name(enum conf_health_level l);

/*
 * conf_health_level_from_name() - the level spelled by the @len bytes at @word (need not
 * be NUL-terminated), ignoring ASCII case: "ok", "Critical", "unknown" ...
 * Returns 0 (sets *@ret) or -EINVAL.
 */
int conf_health_level_from_name(const char *word, size_t len, enum conf_health_level *ret);

/*
 * conf_health_parse() - parse and validate a health report for a server of
 * @server_npus NPUs (1 to CONF_SERVER_NPUS_MAX). @buf holds @len bytes (need not be
 * NUL-terminated; NULL with 0). @file names the source in messages (borrowed, e.g.
 * "a2-node-01/health"). JSON when the first non-blank byte is '{', else the line format.
 * Refused: unknown level, NPU id >= @server_npus, an NPU, `node` or `running` given twice,
 * a `running` word that is not JOB/GENERATION (or "-" alone), a generation listed twice, invalid
 * IP, a message over 159 bytes, binary or non-UTF-8 text, an empty report (blank lines
 * and comments only), more than CONF_HEALTH_MAX_BYTES (-EFBIG); in JSON also unknown
 * keys, wrong types, and a message whose first word reads as an error code when no
 * "code" is given (it would not survive conf_health_render()).
 * The line format allocates nothing; JSON does (jansson, the document tree).
 * Returns 0 (fills *@ret), -EINVAL/-EFBIG with @err, or -ENOMEM. Thread-safe.
 */
int conf_health_parse(const char *buf, size_t len, const char *file, unsigned server_npus,
		      struct conf_health_report *ret, struct conf_error *err);

/*
 * conf_health_check_start() - check a line-format report while it is being written: the
 * complete lines of @buf (@len bytes, up to and including the last line end, '\n' or
 * '\r'; need not be NUL-terminated) must be able to begin a report that conf_health_parse() accepts, by
 * the same rules, except that they may be empty or `agent` alone. Nothing to check yet
 * (no line end, or JSON, which is only whole at the end) passes. So that a writer that never
 * looks at close()'s result (a shell's `echo > health`) sees a bad line as a write()
 * error. Returns 0, -EINVAL/-EFBIG with @err. Allocates nothing; thread-safe.
 */
int conf_health_check_start(const char *buf, size_t len, const char *file, unsigned server_npus,
			    struct conf_error *err);

/*
 * conf_health_render() - @r in the line format: "node LEVEL" when given, then for each
 * NPU in order its "npu ID LEVEL [CODE] [MESSAGE]" line (when it has a level) and its
 * "ip ID ADDRESS" line (when it has an address), then "running ..." when has_running,
 * then each "usage JOB GENERATION CPU_USEC MEMORY_BYTES" line. What conf_health_parse()
 * accepted
 * renders to text it accepts again, with the same result. *@ret_buf is new (free()),
 * NUL-terminated, *@ret_len its length. Returns 0 or -ENOMEM.
 */
int conf_health_render(const struct conf_health_report *r, char **ret_buf, size_t *ret_len);

/*
 * conf_device_ip_problem() - why the IP literal @ip cannot be an NPU's device IP (the
 * address of its RoCE NIC in the rank table), or NULL when it can. A device IP must be
 * a unicast address another server can reach: not the unspecified address (0.0.0.0/8,
 * ::), which HCCL's HcclIpAddress::IsInvalid() reads as "no address"; not a broadcast
 * (255.255.255.255), loopback (127.0.0.0/8, ::1), multicast (224.0.0.0/4, ff00::/8) or
 * link-local (169.254.0.0/16, fe80::/10) address, which no other server routes to the
 * NIC (hcomm topoinfo_ranktableConcise GetSingleDeviceIp() and HCCN device network
 * setup: one routable address per NIC). @ip that is not an IP literal gives "is not an
 * IP address". The result is a static phrase that follows the address, e.g. "is a
 * loopback address". Thread-safe.
 */
const char *conf_device_ip_problem(const char *ip);

/*
 * conf_parse_duration() - "90", "90s", "30m", "2h", "1d", "1h30m" -> seconds.
 * Returns 0, -EINVAL (empty, unknown unit) or -ERANGE (over CONF_DURATION_MAX_SEC,
 * however many digits); *@ret_sec untouched on failure.
 */
int conf_parse_duration(const char *text, uint64_t *ret_sec);

/*
 * conf_parse_priority() - a job priority as a spec writes it: "low" (100), "normal"
 * (500), "high" (900), any case, or a whole number 0-1000. Returns 0, -EINVAL (not a
 * priority) or -ERANGE (a number over 1000); *@ret untouched on failure.
 */
int conf_parse_priority(const char *text, unsigned *ret);

/* conf_ip_is_valid() - true for an IPv4 or IPv6 literal. */
bool conf_ip_is_valid(const char *text);

/*
 * conf_journal_stream_matches() - true when @journal_stream (the JOURNAL_STREAM
 * environment variable that systemd sets for a service whose stdout or stderr is the
 * journal: "<device>:<inode>", both decimal; NULL or malformed: false) names the file
 * with device @dev and inode @ino, as fstat() reports them for the descriptor in
 * question (systemd.exec(5)). Such a descriptor takes "<N>" syslog priority prefixes
 * (sd-daemon(3)). Pure: the caller reads the environment and calls fstat().
 */
bool conf_journal_stream_matches(const char *journal_stream, uint64_t dev, uint64_t ino);

/*
 * conf_log_escape() - the @len bytes at @in (need not be NUL-terminated; NUL bytes
 * count as bytes) as one log line's text: every byte below 0x20 (newline, carriage
 * return, tab, escape ...) and 0x7f written as "\\xNN", everything else as is. So a
 * message cannot end its line and start another (a forged "<3>error: ..." record in the
 * journal, or a line that reads as another daemon's) nor move the terminal's cursor.
 * User bytes inside a message still want fs_text_escape() (or conf_quote()) where the
 * reader must tell them from the message's own words. Writes the result and a
 * NUL into @out, which must hold conf_log_escape(@in, @len, NULL) + 1 bytes (at most
 * 4 * @len + 1); @out NULL: only counts. Returns the result's length without the NUL.
 * fs_log() and agent_log() pass every message through it.
 */
size_t conf_log_escape(const char *in, size_t len, char *out);

#endif
