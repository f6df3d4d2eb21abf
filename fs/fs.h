/* SPDX-License-Identifier: MIT */
/*
 * fs: the FUSE face of ascendfs. Paths map to nodes (fs_tree.c), nodes to sched calls
 * and rendered bytes, and FUSE operations glue them to the kernel (libfuse's low-level
 * protocol fs_lowlevel.c, the path handlers fs_ops.c).
 *
 * The file tree (the v1 contract of design.md §3). Modes are what getattr reports;
 * with `default_permissions` (on by default; --no-default-permissions leaves it out) the
 * kernel enforces them, and every write handler checks the caller again. "operator" below
 * means root or a member (primary or supplementary group, as fuse_req_getgroups() reports it)
 * of the configured cluster.operator_group; with one configured, the operator files
 * (cluster/ctl, nodes/<server>/health and ctl, queues/<queue>/quota) are reported as
 * -rw-rw-r-- root:<that group> instead of -rw-r--r-- root:root, so that the kernel lets
 * members write them (a group name that does not resolve leaves them root's).
 * Every generated file holds a snapshot taken at open(): every read() of one open file
 * returns bytes of the same snapshot. Most are opened with direct_io (each read asks the
 * daemon). ranktable.json, topology.json, env, hosts/<server>.env and ranks/<rank>.env,
 * which change only with the job's generation, placement or rank table completion, are
 * read through the kernel's page cache (fs_kcache.c): an open whose bytes are those the
 * cache holds keeps its pages (no READ reaches the daemon); an open of new bytes has the
 * kernel drop them at that open, so the first read after a generation change already gets
 * the new bytes; an open of new bytes while an open file still reads the old ones through the
 * cache reads with direct_io, and while such an open file exists stat() gives the size of
 * the bytes it reads (the kernel cuts cached reads at the size it was last told). No
 * read-only open sends a FLUSH at close. The kernel keeps names, and the attributes of
 * directories (1 s) and of those page-cached files (until their job changes), never of
 * other files (fs_lowlevel.c): a request that changes state answers once the kernel was told
 * of what it made stale, so a stat() after it sees the change; st_size is otherwise the
 * size of a snapshot rendered at stat() time (on a mount whose daemon died, stat() of
 * what the kernel keeps still answers from its cache; opens fail with ENOTCONN).
 * Snapshots share memory
 * (fs_snapshot.c): the opens of an unchanged file one blob, those of an events file one
 * blob however it grew in between. Per user other than root, at most
 * FS_OPEN_FILES_PER_USER open snapshots and FS_SNAPSHOT_BYTES_PER_USER bytes of snapshots
 * no longer current (ctl files count in both too): past either, open() is EMFILE. Linux
 * does not say which open file an fstat() is for, so fstat() also gives the current size;
 * read to EOF rather than trusting it across a change.
 *
 *   /                          dr-xr-xr-x root
 *   cluster/                   dr-xr-xr-x root
 *     config                   -r--r--r--  effective configuration, normalized YAML;
 *                                          ends in "# warning: ..." lines for settings
 *                                          without effect (fs_config_warnings(), also
 *                                          logged at start)
 *     status                   -r--r--r--  JSON: npus {total, allocated, free, isolated,
 *                                          unavailable (on cordoned/unreachable servers)},
 *                                          which sum to total; servers {total,
 *                                          schedulable, unknown, ready, cordoned,
 *                                          draining, unreachable} (the states sum to
 *                                          total), jobs by state, utilization (0-1,
 *                                          4 decimals; every JSON real the daemon
 *                                          prints is short: seconds to the ms, at most
 *                                          15 digits),
 *                                          event_seq
 *     topology.json            -r--r--r--  JSON: switches, servers (state, schedulable,
 *                                          npus_free, npu_counts) with per-NPU health,
 *                                          isolated, isolation, fault, job, rank and
 *                                          state (allocated|free|isolated|unavailable).
 *                                          Every file takes an NPU's state and a
 *                                          server's state from sched_npu_use() and
 *                                          sched_server_condition(): they agree
 *     metrics                  -r--r--r--  Prometheus text format (see
 *                                          sched_render_metrics(): NPUs and servers by
 *                                          state, ascendfs_npu_state per NPU, per-queue
 *                                          used NPUs and pending jobs, preemption,
 *                                          backfill, timeout and resize counters;
 *                                          ascendfs_leader: 1 on the head that leads,
 *                                          0 on a standby, fs_tree.c)
 *     jobs                     -r--r--r--  the active jobs a line each, as squeue: "JOB
 *                                          STATE QUEUE UID NPUS AGE REASON" then one
 *                                          line per job (sched_render_jobs_table());
 *                                          AGE moves: the opens of one second share a
 *                                          render
 *     accounting               -r--r--r--  JSON lines, one per job that ended (sacct):
 *                                          its record as the job ended (struct
 *                                          sched_acct; fields in sched_account.c);
 *                                          the newest accounting_history (10,000) are
 *                                          kept, in memory and on disk, whatever
 *                                          becomes of the job's record; grows at the
 *                                          end as events does (stream below)
 *     utilization              -r--r--r--  JSON lines, a sample a minute for the last
 *                                          day (not kept across restarts): time,
 *                                          npus_total, npus_allocated, npus_isolated,
 *                                          npus_unavailable, utilization, jobs_pending,
 *                                          jobs_running (sched_render_utilization())
 *     events                   -r--r--r--  JSON lines {seq, time, kind, job, server, npu,
 *                                          state, reason}; seq counts up by one; the
 *                                          newest event_history (65,536) are
 *                                          kept, in memory and on disk. A refused
 *                                          create/mkdir in jobs/ (bad name) and a refused
 *                                          cluster/ctl or nodes/<server>/ctl line are
 *                                          "refused" events here (job null; "server" for
 *                                          a node's ctl), reason "<op> \"<what>\" by uid
 *                                          <uid> refused: <why>", user bytes escaped
 *                                          (fs_text_escape(), as in the log)
 *     whatif                   -rw-rw-rw- root  the dry run (Slurm's --test-only;
 *                                          fs_whatif.c): open it O_RDWR (O_WRONLY:
 *                                          EINVAL), write a job spec (as to jobs/; its
 *                                          name, else "whatif"; a last line
 *                                          "#whatif-file: <name>.<ext>" reads it as
 *                                          that file; 64 KiB at most: EFBIG), then read
 *                                          on from the same open file: it reads as the
 *                                          spec written followed by JSON: dry_run, job,
 *                                          would ("start", "wait", "refused", "serving"
 *                                          for a service admitted; an array: "start"
 *                                          when an element would),
 *                                          reason, preempts (the jobs it would stop),
 *                                          placement, reserved_start, status (its
 *                                          status.json), as a submission by the opener
 *                                          now would get (sched_whatif_run(): the
 *                                          cluster copied from its saved documents; the
 *                                          copy costs as a restart's load does; one is
 *                                          answered at a time: a read that waited 2 s
 *                                          is EAGAIN). A write after the answer was read
 *                                          begins a new spec where it writes (read on
 *                                          for its answer); ftruncate() shortens it.
 *                                          The daemon's own checks (a queue's groups,
 *                                          checkpoint_dir) apply as at a submission.
 *                                          Nothing changes: no job, event or record. Opened
 *                                          read-only it reads as how to use it; counted
 *                                          among the opener's open files
 *     ctl                      -rw-r--r-- root  "cordon|uncordon|drain <server>";
 *                                          operators write it (others: EACCES at open);
 *                                          reading any ctl file shows its verbs
 *     leader                   -r--r--r--  the head that runs the cluster: "leader:
 *                                          <host> pid <pid>", "role: leader", "since:
 *                                          <UTC time>", "state: sqlite <file>" or
 *                                          "state: etcd <prefix> at <servers>"
 *                                          (fs_store_leader()); on a standby (etcd,
 *                                          fs_standby.c) "role: standby", "standby:
 *                                          <this head> (...)", "view: log entry <seq>,
 *                                          read <UTC time>" instead of "since:": every
 *                                          file is then a read-only view of the state
 *                                          as of that entry, and every change fails
 *                                          with EROFS; with etcd a last line "config:
 *                                          <fingerprint>", and whether the leader's
 *                                          (the previous leader's) is the same
 *                                          (fs_config_fingerprint())
 *   nodes/<server>/            dr-xr-xr-x root
 *     health                   -rw-r--r-- root  operators write the agent's report (conf.h
 *                                          conf_health_report: `node OK`, `npu 3 Critical
 *                                          0x80C98000 text`, `ip 3 10.20.3.1`, `sdid
 *                                          3 113573891 1 27` (A3), `running llama/2` or
 *                                          `running -` (the job generations with live
 *                                          processes here: a stopping job not listed has
 *                                          none left here, and once no server of it
 *                                          lists it its NPUs are released), or JSON),
 *                                          applied at close; it is the heartbeat. A bad
 *                                          report fails the close (EINVAL, EFBIG over
 *                                          64 KiB), is a "refused" event and changes
 *                                          nothing; a bad line already fails its write.
 *                                          Bad also: a device IP conf_device_ip_problem()
 *                                          names, one on two NPUs (of any server), any
 *                                          server's host_ip, one of the other family
 *                                          than the server's other NPUs (at close:
 *                                          sched_server_check_report()).
 *                                          Read: "node <level> <state>" then
 *                                          "npu <id> <level> [isolated:<kind> (fault)]"
 *     npus                     -r--r--r--  "# id device_ip health job rank" then one line
 *                                          per NPU, "-" for none; health may carry
 *                                          ",isolated:<alarm|fault|manual>"
 *     info                     -r--r--r--  JSON: host_ip, type, switch, super pod, state,
 *                                          npus_free and npu_counts (as topology.json),
 *                                          heartbeat_age_sec
 *     jobs                     -r--r--r--  what this server's agent must run: "# ..." then
 *                                          "<job> <generation> <msrun|per-rank> <node_rank>
 *                                          <first_rank> <npu_count> <uid> <gid> <serial>"
 *                                          lines (serial: unique per job object), and
 *                                          "<service>.<role> <generation> <role> 0 0 0
 *                                          ..." for a disaggregated service's controller
 *                                          or coordinator it runs (ascend_sched.h, enum
 *                                          sched_role), for
 *                                          running jobs only: a job that leaves (stopping,
 *                                          recovering, ended) is one its agent stops. A
 *                                          new generation of a job with a checkpoint_dir
 *                                          is listed once the daemon has read that
 *                                          directory (at most 10 s,
 *                                          SCHED_RESUME_SCAN_TIMEOUT_SEC). An open
 *                                          answers once what it shows is durable
 *                                          (fs_store_durable_locked()), or fails with
 *                                          EIO while the state store cannot write: no
 *                                          server starts what a crash or a failover
 *                                          would lose
 *     ctl                      -rw-r--r-- root  "cordon" | "uncordon" | "drain" |
 *                                          "clear <npu>" (return an isolated NPU);
 *                                          operators write it (others: EACCES at open)
 *   queues/<queue>/            dr-xr-xr-x root
 *     quota                    -rw-r--r-- root  the queue's NPU limit, a decimal number and
 *                                          "\n" (0 = no limit). An operator writes one the same
 *                                          way (`echo 16 > quota`, trailing newline
 *                                          optional), checked at every close and applied
 *                                          once when the last descriptor is released (a
 *                                          number written in pieces counts whole):
 *                                          running jobs keep their NPUs (the excess counts
 *                                          as borrowed), pending jobs are reconsidered, a
 *                                          "queue" event is appended and cluster/config
 *                                          shows it. Anything but digits, or more than the
 *                                          cluster's NPUs, fails the write() or the close
 *                                          (EINVAL); others get EACCES. A refusal is
 *                                          logged by the daemon and changes nothing.
 *                                          With enable_quota_limit false a quota is kept
 *                                          but not enforced: its event, the log and
 *                                          status say so
 *     status                   -r--r--r--  JSON: queue, quota_npus, enable_quota_limit
 *                                          (false: the quota is shown, not enforced),
 *                                          quota_enforced, quota_note (why not, or null),
 *                                          priority, weight, may_borrow, groups,
 *                                          the job caps max_priority, max_npus (0 =
 *                                          none), max_time_limit_sec and
 *                                          default_time_limit_sec (0 = none), the
 *                                          job-count limits max_submit_jobs_per_user
 *                                          and max_submit_jobs (0 = none),
 *                                          used_npus (stopping jobs included),
 *                                          borrowed_npus (beyond the quota), pending,
 *                                          running, stopping (jobs)
 *   jobs/                      drwxrwxrwt root (anyone submits; sticky: only the owner
 *                                          removes); inotify: IN_CREATE/IN_DELETE with
 *                                          IN_ISDIR and the name when a job directory
 *                                          appears or goes, whoever made it
 *     <name>.yaml|.yml|.json   -rw-r--r-- writer  exists only while open for writing.
 *                                          Every close (flush) says whether the spec as
 *                                          written so far would be accepted (cp and tee
 *                                          report it); the spec is submitted when the
 *                                          last descriptor is released, so pieces written
 *                                          through duplicated fds make one spec. The last
 *                                          close's answer is the outcome: 0 means the job
 *                                          is submitted (a record under max_job_count and
 *                                          the name are held for it from that close on:
 *                                          another's mkdir of it is EBUSY, and nothing
 *                                          changed meanwhile refuses it); an error means
 *                                          it is not, rejected with the reason when the
 *                                          error is not EEXIST, EPERM, EAGAIN or EBUSY.
 *                                          Then it shows as the directory below;
 *                                          lookups under jobs/<name>/ and of any
 *                                          jobs/<name>.<ext> wait (up to 2 s) for that,
 *                                          so a spec written again at once finds the old
 *                                          job, never the upload being released. An
 *                                          empty file is rejected. A spec
 *                                          naming a queue with `groups` is refused
 *                                          (EACCES at close, rejected with the reason)
 *                                          unless the writer's primary or a
 *                                          supplementary group, as of open(), is one of
 *                                          them (root always may). So is a spec over its
 *                                          queue's max_priority, max_npus (an elastic
 *                                          max too) or max_time_limit from anyone but
 *                                          root and operators (EACCES at close, rejected
 *                                          naming the cap); one without time_limit gets
 *                                          the queue's default_time_limit (else its
 *                                          max_time_limit), shown in spec. A
 *                                          checkpoint_dir that resolves (symlinks too, up
 *                                          to its nearest existing parent) into this
 *                                          mount is refused (EINVAL at close, rejected
 *                                          with the reason): the daemon never reads its
 *                                          own mount (fs_checkpoint_dir_check()).
 *     <name>/                  drwxr-xr-x owner   made by a submission or by mkdir (draft)
 *       spec                   -r--r--r-- (-rw-r--r-- for drafts and finished jobs: write
 *                                          a spec to (re)submit)
 *       status                 -r--r--r--  one word + "\n": draft, pending, running,
 *                                          recovering, stopping (preempted, past its
 *                                          time_limit, cancelled, completed or failed
 *                                          while its processes may run: gone from
 *                                          nodes/<server>/jobs, NPUs held until every
 *                                          server's report no longer lists it in
 *                                          `running`, or stop_deadline at the latest),
 *                                          completed, failed, cancelled, rejected,
 *                                          timeout; `cancel` and `complete` read
 *                                          stopping until the NPUs are free; serving:
 *                                          a service (kind: service), whose instances
 *                                          are the jobs <name>.<index> (sched_service.c);
 *                                          array: a job array's record (`array:`), whose
 *                                          elements are the jobs <name>.<index>, until
 *                                          each has ended (sched_array.c)
 *       status.json            -r--r--r--  state, reason, queue, priority, npus,
 *                                          npus_min/max, time_limit_sec, run_accum_sec +
 *                                          run_since, borrowing, preemptions,
 *                                          preempted_by, hold (null, "user": its
 *                                          owner's, "admin": root's), dependencies
 *                                          ([{"job", "kind": "afterok"|"afterany",
 *                                          "state": "met" or the job's state, "gone"}],
 *                                          its spec's after:; sched_deps.c),
 *                                          reserved_start,
 *                                          stop_deadline,
 *                                          stop_to (stopping: the state it ends in) and
 *                                          stop_waits_for (the servers whose agents have
 *                                          not yet reported its processes gone),
 *                                          stop_removes (true after an rmdir of the
 *                                          active job: the directory goes when the stop
 *                                          ends), generation, restarts,
 *                                          restarts_not_counted, restart_backoff
 *                                          (an instance: {"next_wait_sec",
 *                                          "restart_at": a held restart's time or
 *                                          null}; sched_service_hold_restart()),
 *                                          disruption_budget (a service:
 *                                          {"preemptible", "max_unavailable",
 *                                          "available", "disruptions_allowed"};
 *                                          sched_disrupt.c), array (an array's record:
 *                                          {"indexes", "throttle", "count", "waits",
 *                                          counts "waiting", "pending", "running",
 *                                          "completed", "failed", "cancelled",
 *                                          "timeout", "not_made" (an ended array's),
 *                                          "elements": {"<index>": state}};
 *                                          sched_array_status_json()), array_element
 *                                          (an element: {"array", "index"}),
 *                                          resume_scan_pending, placement, timestamps
 *                                          (RFC 3339, UTC: `started` is the first
 *                                          generation's start, `generation_started` the
 *                                          current one's), ranktable_status
 *                                          ("completed", "initializing", null when not
 *                                          placed) and ranktable_waiting_for (what it
 *                                          waits for, null when nothing); "usage" once
 *                                          an agent reported the job's cgroup:
 *                                          {"cpu_usec", "memory_bytes" (sums over
 *                                          "servers"), "servers": [{"server",
 *                                          "generation", "cpu_usec", "memory_bytes"}]},
 *                                          per server the newest generation's last
 *                                          `usage` line (CPU µs, memory bytes: peak, else
 *                                          current, 0 when not accounted; not kept across
 *                                          a daemon restart); see
 *                                          sched_render_job_status_json()
 *       ranktable.json         -r--r--r--  once placed: HCCL rank table (design.md §4),
 *                                          "initializing" until
 *                                          sched_ranktable_waiting_for() waits for
 *                                          nothing
 *       topology.json          -r--r--r--  once placed, new bytes each generation (as
 *                                          ranktable.json; ENOENT before): the parallel
 *                                          layout this generation runs with, rank by
 *                                          rank, and the links its groups cross
 *                                          (sched_render_job_topology()). One JSON
 *                                          object, keys in this order: job, generation,
 *                                          server_type, product, chip ("910", "910B",
 *                                          "910C"), npus, server_count, rank_order
 *                                          ("tp-cp-ep-dp-pp": rank = tp_i + tp * (cp_i
 *                                          + cp * (dp_i + dp * pp_i)), ep_i = dp_i mod
 *                                          ep; sched_comm.h), parallel {tp, cp, ep, dp,
 *                                          pp} (the sizes it runs with: the spec's, 1
 *                                          when not given, dp = npus / (tp*cp*pp); a
 *                                          layout that does not fit, which the parser
 *                                          prevents, reads as pure dp),
 *                                          spine_oversubscription (the cluster's
 *                                          cluster.spine_oversubscription, 1.0 when
 *                                          not given),
 *                                          link_classes [{name, gbyte_per_sec (10^9
 *                                          bytes/s, one direction, per link),
 *                                          latency_usec, lanes}] (the cost model's
 *                                          figures for the chip, sched_comm_params_for(),
 *                                          for each class a group or boundary below
 *                                          uses, fastest first), ranks [{rank, server
 *                                          (its name under nodes/), host_ip (the rank
 *                                          table's server_id), device_id (physical),
 *                                          hccs_group (device_id / the HCCS ring, mesh
 *                                          or pair size, as cluster/topology.json),
 *                                          leaf_switch, super_pod (null when none), tp,
 *                                          cp, ep, dp, pp (its coordinates)}] by rank,
 *                                          groups {tp, cp, ep, dp, pp: [{ranks (in
 *                                          ascending order), servers (the names it
 *                                          spans, in rank order), link}]} (a dimension
 *                                          of size 1 has []; groups in the order of
 *                                          their lowest rank; link the slowest class
 *                                          between two members, sched_group_link()),
 *                                          pp_boundaries [{from_stage, to_stage, link}]
 *                                          (stage s to s+1: the slowest class between
 *                                          rank r of s and rank r + tp*cp*dp of s+1).
 *                                          Link classes: self, sio (A3 die pair), hccs,
 *                                          pcie (910: across its two rings), superpod,
 *                                          roce_leaf, roce_spine. JSON_INDENT(2), a final
 *                                          newline; read through the page cache as
 *                                          ranktable.json is
 *       env                    -r--r--r--  once placed: job-wide `export` lines
 *                                          (ASCEND_JOB_DIR; RANK_TABLE_FILE in rank-table
 *                                          mode, MS_SCHED_* in dynamic mode, never both:
 *                                          sched_render.c, job_env_lines());
 *                                          ASCEND_PARALLEL_TP, _CP, _EP, _DP, _PP: the
 *                                          layout this generation runs with, every
 *                                          size, given or not (as topology.json's
 *                                          parallel; dp follows an elastic job's size);
 *                                          ASCEND_TOPOLOGY_FILE =
 *                                          <mount>/jobs/<name>/topology.json. A launcher
 *                                          maps them: MindSpore semi-auto parallel
 *                                          set_auto_parallel_context(parallel_mode=
 *                                          "semi_auto_parallel", device_num=RANK_SIZE,
 *                                          pipeline_stages=PP), model parallel TP in
 *                                          the operators' shard strategies; MindFormers'
 *                                          YAML parallel_config data_parallel=DP,
 *                                          model_parallel=TP, context_parallel=CP,
 *                                          expert_parallel=EP, pipeline_stage=PP. Both
 *                                          order devices as ascendfs numbers ranks
 *                                          (model parallel innermost, pipeline stages
 *                                          outermost, experts over dp ranks);
 *                                          ASCEND_RESUME_CHECKPOINT is the newest
 *                                          checkpoint on disk when the generation began
 *                                          (an open of env, hosts/ or ranks/ files waits
 *                                          up to 2 s for that directory to be read)
 *       hosts/<server>.env     -r--r--r--  once placed: job-wide + per-server exports and
 *                                          MSRUN_ARGS
 *       ranks/<rank>.env       -r--r--r--  once placed: job-wide + RANK_ID, DEVICE_ID
 *                                          (physical; rank-table mode, no MS_*) or an
 *                                          msrun worker's MS_ROLE, MS_NODE_ID,
 *                                          ASCEND_RT_VISIBLE_DEVICES, DEVICE_ID = local
 *                                          rank (dynamic mode)
 *       events                 -r--r--r--  this job's lines of cluster/events
 *       history                -r--r--r--  JSON lines, one per generation, oldest first
 *                                          (sacct's steps): generation, state (running,
 *                                          stopping, or how it ended: completed, failed,
 *                                          node_fail, preempted, timeout, cancelled,
 *                                          resized, requeued), start, end, elapsed_sec,
 *                                          npus, placement [{server, device_ids,
 *                                          first_rank}], exit_code, reason; see
 *                                          sched_render_job_history(). Saved with the
 *                                          job (survives restarts and kill -9) and
 *                                          readable after it ends, until its record is
 *                                          dropped; the first generation and the newest
 *                                          31 are kept (SCHED_JOB_RUNS_MAX)
 *       accounting             -r--r--r--  this name's lines of cluster/accounting: one
 *                                          per submission of it that ended (a record
 *                                          outlives its job: resubmitted, the name
 *                                          keeps the old ones)
 *       log                    -rw-r--r-- root  what the job's processes print, every
 *                                          generation (fs_joblog.c): lines "[g<generation>
 *                                          <process> <server>] <text>", process
 *                                          "rank-<N>" (a rank's process, or what msrun
 *                                          wrote of its worker N), "node" (a server's
 *                                          msrun) or "scheduler" (MindSpore's), in the
 *                                          order they reached the head. Node agents
 *                                          append (root
 *                                          and operators only: others EACCES; O_TRUNC
 *                                          truncates nothing) lines "<generation>
 *                                          <process> <server> <text>": a generation the
 *                                          job had, a server of the inventory; a bad line
 *                                          fails its write() (EINVAL; the lines before
 *                                          it in that write are kept, it and the rest are
 *                                          not) and is a "refused" event of the job; a
 *                                          process is rank-<N> (N below the cluster's
 *                                          NPU count), node or scheduler; with a state store
 *                                          the close() returns once what that file
 *                                          appended is on disk (fdatasync); a line over
 *                                          64 KiB is EFBIG, and after any failure
 *                                          nothing of that write is kept (the agent sends
 *                                          it again). NUL bytes read as '?'. Each read
 *                                          reads the file as it is now (no snapshot): it
 *                                          only grows, so `tail -f` follows it, until the
 *                                          current file would pass half of
 *                                          cluster.job_log_max_mib (16 MiB): then it is
 *                                          renamed log.1 (the older log.1 goes) and log
 *                                          begins empty, and every open file of it reads
 *                                          the new one, as with logrotate's copytruncate
 *                                          (`tail -f` says "file truncated" and goes on;
 *                                          what it had not yet read of the old file is
 *                                          in log.1, whose mtime is the rotation's). Kept
 *                                          with the job's record: after it ended, across
 *                                          restarts (<state-dir>/logs/<serial>.log; a last
 *                                          line a crash cut short is removed at start: its
 *                                          agent sends it again), gone
 *                                          with the record (a resubmission of the name,
 *                                          rmdir). mtime: the last append
 *       log.1                  -r--r--r-- root  the log's previous file, once it rotated;
 *                                          a snapshot at open
 *       logs/                  dr-xr-xr-x  the log per process: for each process with
 *                                          lines in log or log.1, "<process>" (its lines
 *                                          of log), and "<process>.1" (of log.1) when it
 *                                          has lines there; listed scheduler, node,
 *                                          then ranks ascending (fs_joblog_proc.c)
 *         <process>            -r--r--r-- root  the lines of log whose process is this
 *                                          one, whole and as they read in log ("rank-3":
 *                                          `grep '^\[g[0-9]* rank-3 ' log`, every
 *                                          generation and server); st_size exact at any
 *                                          stat, read as log is (it grows, `tail -f`
 *                                          follows it, after a rotation it reads the new
 *                                          file's lines). No inotify event (nothing
 *                                          writes it through the mount): poll, as tail
 *                                          -f on FUSE does. Counted at each append; a log
 *                                          kept from before a restart is counted by one
 *                                          read of its files at the first request on
 *                                          its logs/ (not readable then: listed empty,
 *                                          counted again at the next request). mtime: the
 *                                          log's last append (any process's). ENOENT for a
 *                                          process that printed nothing; EACCES for a
 *                                          write
 *         <process>.1          -r--r--r-- root  its lines of log.1, a snapshot at open
 *       recovery               -r--r--r--  the recovery ladder's requests to the job's
 *                                          processes (sched_render_job_recovery()): one
 *                                          JSON object; watch it with inotify
 *                                          (IN_CLOSE_WRITE/IN_MODIFY). While "action" is
 *                                          "save", each process listed in "processes"
 *                                          saves the step it finished (the first listed
 *                                          writes the checkpoint into checkpoint_dir),
 *                                          answers "saved ..." into ctl and waits: the
 *                                          job restarts from that checkpoint. While it
 *                                          is "pause" (in-place), a process listed
 *                                          with role "pause" stops after its step and
 *                                          answers "paused ...", the one with role
 *                                          "restart" answers "joined ..." once up;
 *                                          while it is "rebuild" (process-level, a
 *                                          newer "generation" than a kept process's
 *                                          own), a process with role "rebuild" stops
 *                                          after its step, rebuilds its communicator
 *                                          from the new rank table ("master_addr" is
 *                                          its first server's address) and answers
 *                                          "paused ...", one with role "join" (on a
 *                                          replacement server) "joined ..." once up;
 *                                          while it is "retry" (a transient NPU
 *                                          fault), every process drops the step in
 *                                          flight and answers "paused ..." with the
 *                                          last step it finished;
 *                                          then "resume" gives "step" to go on from
 *       error                  -r--r--r--  why it was rejected, failed or timed out (also
 *                                          while it stops towards failed or timeout);
 *                                          for a placed job whose rank table is not
 *                                          completed "rank table not completed (HCCL
 *                                          waits for it): waiting for <what>"; else
 *                                          empty
 *       ctl                    -rw-r--r-- owner  "cancel" | "complete" (a running job goes
 *                                          stopping, NPUs held until its processes are
 *                                          gone, then cancelled/completed) |
 *                                          "hold" | "release" | "requeue" | "requeue
 *                                          hold" | "update priority <0-1000|low|
 *                                          normal|high>" | "update time_limit
 *                                          <duration>" | "resize <npus>" (job
 *                                          control, Slurm's scontrol: ascend_sched.h,
 *                                          "job control") |
 *                                          "checkpoint <step> <abs path> [<generation>]" |
 *                                          "exit <generation> <server> <code> [<rank>|-
 *                                          [<attempt>]]" (an exit of an attempt older
 *                                          than the share's is ignored)
 *                                          (agents report process exits) |
 *                                          "saved <request> <server> <rank|-> <step>
 *                                          [<abs path>]" | "save-failed <request>
 *                                          <server> <rank|->" | "paused <request>
 *                                          <server> <rank|-> <step>" | "joined
 *                                          <request> <server> <rank|->" (answers to
 *                                          recovery's request, dump or in-place:
 *                                          rank "-" for an msrun process;
 *                                          sched_job_recovery_answer(); an answer to a
 *                                          request no longer open is refused, ESTALE);
 *                                          | "scale <replicas>" (a service: 1-64;
 *                                          sched_service_scale()) | "ready <generation>"
 *                                          | "unready <generation>" (an instance: its
 *                                          port answers, or no longer; its master's
 *                                          agent reports it, sched_service_ready());
 *                                          one per line,
 *                                          the first refused line stops the rest and is
 *                                          a "refused" event of the job. The owner or
 *                                          root only (operators too are strangers here):
 *                                          the kernel refuses a stranger's open (EACCES);
 *                                          without default_permissions the daemon opens
 *                                          it and refuses each line (EPERM), a "refused"
 *                                          event naming both uids
 *       endpoints              -r--r--r--  a service only: "<instance> <host>:<port>\n"
 *                                          per running, ready instance below its replicas
 *                                          (sched_render_service_endpoints()); watch it
 *                                          with inotify (IN_MODIFY when one comes or
 *                                          goes)
 *       endpoint               -r--r--r--  a placed instance only: "<host>:<port>\n", its
 *                                          first server (MindIE's master) and the port
 *       mindie.json            -r--r--r--  a placed instance only: the MindIE config.json
 *                                          fragment of its placement
 *                                          (sched_render_instance_mindie())
 *       global_ranktable.json  -r--r--r--  a disaggregated service only (its spec's
 *                                          `disaggregated:`): MindIE Motor's global rank
 *                                          table of its running instances, prefill first
 *                                          (sched_render_global_ranktable()); one
 *                                          snapshot per open, IN_MODIFY when an instance
 *                                          comes, goes or moves
 *       roles/<role>.env       -r--r--r--  a disaggregated service whose spec gives
 *                                          disaggregated.<role>.command (controller,
 *                                          coordinator): the role's environment, for its
 *                                          server's agent (sched_render_role_env())
 *
 * Errors a caller sees:
 *   ENOENT  no such node;  EINVAL  bad name or bad content (the sentence is in the job's
 *   `error` file and in cluster/events);  EFBIG  spec over 64 KiB;  EEXIST  an active
 *   job has that name, or it is a serving service's instance name <service>.<digits> or an active array's element name <array>.<index>;  EPERM/EACCES  not the owner (or root), also for replacing another
 *   user's finished job, and (EACCES) a spec for a queue whose `groups` the writer is in
 *   none of, or over one of its queue's job caps (a user, not root or an operator);  EBUSY  the job's state forbids it (e.g. `complete` on a pending job),
 *   or another open file writes that job's spec or had it accepted at a close;
 *   EAGAIN  no room for a job record now, at a spec's close or a mkdir: max_job_count
 *   records exist and all are active, or (not root or an operator) a job-count limit:
 *   cluster.max_job_count_per_user, reserved_job_count, the queue's
 *   max_submit_jobs_per_user or max_submit_jobs (sched_job_check_as()). Nothing is
 *   recorded; a "refused" event in cluster/events names the limit and the fix;
 *   finished jobs never count;  EMFILE  create or open of a spec for writing by a user
 *   (not root, not an operator) who already holds cluster.max_uploads_per_user (default
 *   200) open, with a "refused" event saying so (close one first);  EACCES  a write to an
 *   operator file by a non-operator, or truncate(2)
 *   or touch of a file the caller may not write;  EPERM  rmdir or rename of another's job
 *   (sticky jobs/), rename of anything (names are fixed), unlink, chmod/chown of anything
 *   but a spec one is writing, times set on a file one does not own;  EOPNOTSUPP  a
 *   verb not offered (cluster/ctl's reload);  ENODEV  mmap of a generated file opened with direct_io (all but the page-cached
 *   ones above, and those too while another open reads older bytes);  EIO  the
 *   change was made but could not be written to the state store (--state-dir): it may
 *   not survive a restart (the daemon logs why).
 *
 * Durability: with a state store, every request that changes state (the close() of a
 * spec, health report or quota, a write() to a ctl file, mkdir, rmdir) returns only
 * once its change is committed to disk (fs_commit.c); reads never wait for the disk.
 * A spec or quota is applied at its release, after close() returned: what a close by
 * the opener (the process that opened the file, from any of its threads) accepted is
 * staged, durably, and applied at restart if the release never came; a close by another
 * process holding a duplicate (a forked child such as `cat` in `{ cat a; echo b; } >
 * x.yaml`, a receiver of SCM_RIGHTS) stages nothing, nor, mostly, one whose opener
 * could not be read (fs_handle_flush_is_openers(), fs_handle.c, says when).
 */
#ifndef ASCENDFS_FS_H
#define ASCENDFS_FS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "ascend_sched.h"

struct MHD_Daemon;

enum fs_node_kind {
	FS_ROOT,
	FS_CLUSTER_DIR,
	FS_CLUSTER_CONFIG,
	FS_CLUSTER_STATUS,
	FS_CLUSTER_TOPOLOGY,
	FS_CLUSTER_METRICS,
	FS_CLUSTER_EVENTS,
	FS_CLUSTER_JOBS,
	FS_CLUSTER_ACCOUNTING,
	FS_CLUSTER_UTILIZATION,
	FS_CLUSTER_WHATIF,	/* the dry run (fs_whatif.c) */
	FS_CLUSTER_CTL,
	FS_CLUSTER_LEADER,	/* the active head (fs_store_leader()) */
	FS_NODES_DIR,
	FS_NODE_DIR,
	FS_NODE_HEALTH,
	FS_NODE_NPUS,
	FS_NODE_INFO,
	FS_NODE_JOBS,
	FS_NODE_CTL,
	FS_QUEUES_DIR,
	FS_QUEUE_DIR,
	FS_QUEUE_QUOTA,
	FS_QUEUE_STATUS,
	FS_JOBS_DIR,
	FS_JOB_UPLOAD,		/* jobs/<name>.yaml while being written */
	FS_JOB_DIR,
	FS_JOB_SPEC,
	FS_JOB_STATUS,
	FS_JOB_STATUS_JSON,
	FS_JOB_RANKTABLE,
	FS_JOB_TOPOLOGY,	/* topology.json: the parallel layout and its links */
	FS_JOB_ENV,
	FS_JOB_HOSTS_DIR,
	FS_JOB_HOST_ENV,
	FS_JOB_RANKS_DIR,
	FS_JOB_RANK_ENV,
	FS_JOB_EVENTS,
	FS_JOB_HISTORY,
	FS_JOB_ACCOUNTING,
	FS_JOB_LOG,		/* the output of its processes (fs_joblog.c) */
	FS_JOB_LOG_OLD,		/* log.1: the part rotated out */
	FS_JOB_LOGS_DIR,	/* logs/: the log per process */
	FS_JOB_PROC_LOG,	/* logs/<process>: proc is which (FS_LOG_PROC_*) */
	FS_JOB_PROC_LOG_OLD,	/* logs/<process>.1: its lines of log.1 */
	FS_JOB_RECOVERY,
	FS_JOB_ERROR,
	FS_JOB_CTL,
	FS_JOB_ENDPOINTS,	/* a service's: its running instances' addresses */
	FS_JOB_ENDPOINT,	/* a placed instance's address */
	FS_JOB_MINDIE,		/* a placed instance's MindIE config.json fragment */
	FS_JOB_GLOBAL_RANKTABLE, /* a disaggregated service's global rank table */
	FS_JOB_ROLES_DIR,	/* a disaggregated service's roles ascendfs runs */
	FS_JOB_ROLE_ENV,	/* roles/<role>.env: item is the role's name */
};

/* A parsed path; names are copied in. */
struct fs_path {
	enum fs_node_kind kind;
	char job[CONF_NAME_MAX + 1];	/* job name for FS_JOB_* and FS_JOB_UPLOAD */
	char item[CONF_NAME_MAX + 1];	/* server or queue name, or host file's server */
	char ext[8];			/* upload extension: "yaml", "yml", "json" */
	unsigned rank;			/* FS_JOB_RANK_ENV */
	uint32_t proc;			/* FS_JOB_PROC_LOG(_OLD): FS_LOG_PROC_* */
};

/*
 * fs_path_parse() - syntax-only parse of an absolute path inside the mount.
 * Returns 0, -ENOENT (no such shape), -EINVAL (a name that can never be valid under
 * jobs/, e.g. "..", upper case, control characters) or -ENAMETOOLONG.
 */
int fs_path_parse(const char *path, struct fs_path *out);

/* fs_uid_hash() - a bucket hash of @uid, for tables of users (mask it to a power of 2). */
static inline size_t fs_uid_hash(uid_t uid)
{
	return (size_t)((uint64_t)uid * 0x9E3779B97F4A7C15ULL >> 17);
}

/*
 * A spec open for writing: jobs/<name>.<ext> (listed, so that stat() sees it) or
 * jobs/<name>/spec. The spec is submitted when its last descriptor is released.
 */
struct fs_upload {
	char name[CONF_NAME_MAX + 1];
	char ext[8];			/* "" for jobs/<name>/spec */
	uid_t uid;
	gid_t gid;
	size_t len;			/* bytes buffered so far */
	uint64_t mtime_usec;
	bool closing;			/* flushed since the last write: release is near
					 * (set through fs_upload_set_closing()) */
	uint64_t closing_usec;		/* when closing was set */
	struct fs_upload *prev, *next;	/* ctx->uploads, newest first */
	struct fs_upload *hnext;	/* in its ctx->upload_index bucket */
};

/* How many uploads one user holds (fs_uploads.c). */
struct fs_upload_user {
	uid_t uid;
	unsigned open_count;
	unsigned closing_count;		/* of them closing: their RELEASE is on its way */
	uint64_t closing_usec;		/* the latest of their closes */
	bool waiter;			/* a create waits for one of them to be released */
	struct fs_upload_user *next;	/* in its ctx->upload_users bucket */
};

/*
 * Rendered bytes, shared by the render cache, the events stream and every open file that
 * snapshots them (fs_snapshot.c). Bytes below len never change once written: the render
 * cache's blobs are complete when made, and the events stream's live blob only appends
 * (under ctx->lock), so an open file reads its view without the lock. The reference
 * count is atomic so release() needs no lock.
 */
struct fs_blob {
	unsigned refs;		/* changed only with __atomic builtins once shared */
	bool live;		/* held by the render cache or the events stream (under
				 * ctx->lock) */
	uint64_t version;	/* cluster->version it was rendered at; UINT64_MAX for
				 * the events stream's, current as long as it is live.
				 * Live and current: the state itself, charged to nobody */
	uint64_t mark;		/* fs_snapshot_admit()'s walk (under ctx->lock) */
	size_t len;		/* bytes written (only the stream's live blob grows) */
	size_t cap;		/* bytes allocated at data: what holding it costs */
	char *data;		/* owned; len bytes (cache blobs: + NUL) */
};

/* What one open file reads: bytes [off, off + len) of blob (a reference it holds). */
struct fs_view {
	struct fs_blob *blob;
	size_t off, len;
};

/*
 * A file of a ring of lines, cluster/events or jobs/<job>/events (the events), or
 * cluster/accounting or jobs/<job>/accounting (the accounting records), as one
 * append-only blob (fs_snapshot.c): a new line is appended, so the opens between two
 * changes share every byte and an open after a change costs nothing new; a new blob (the
 * kept lines copied once) only when the blob is full. A line the ring dropped stays in
 * the blob (an open sees the kept ones only), so a reader at the end (tail -f) goes on
 * reading what follows until that copy: a reader of the old blob then reads no more and
 * opens the file again (fstat() gives the kept lines' size: GNU tail says "file
 * truncated" once the ring is full). FS_EVENT_STREAMS of them, the least recently used
 * one reused.
 * Under ctx->lock.
 */
#define FS_EVENT_STREAMS 16

struct fs_event_line {
	uint64_t seq;		/* the event's */
	size_t start;		/* where its line starts in the blob */
};

struct fs_event_stream {
	bool accounting;		/* the accounting records' lines, not the events' */
	char job[CONF_NAME_MAX + 1];	/* "" for the cluster's file */
	struct fs_blob *blob;		/* live; NULL = slot unused */
	uint64_t last_seq;		/* the newest event looked at */
	uint64_t last_use;
	struct fs_event_line *lines;	/* the blob's lines, oldest first (those of events
					 * the ring dropped since come first) */
	size_t line_count, line_cap;
};

/*
 * Bounds on what one user's open files hold (root is exempt): at most
 * FS_OPEN_FILES_PER_USER open snapshots and ctl files together (each ctl file buffers
 * up to 64 KiB of a line), and at most FS_SNAPSHOT_BYTES_PER_USER bytes in blobs that are
 * no longer the current state (each distinct blob counted once, by its allocation: what
 * the user keeps alive that the daemon would have dropped) and ctl buffers. Past either,
 * open() fails with EMFILE (the tally below). Uploads of specs are bounded apart.
 */
#define FS_OPEN_FILES_PER_USER 4096
#define FS_SNAPSHOT_BYTES_PER_USER (256u << 20)

#define FS_CACHE_SLOTS 128

struct fs_cache_slot {
	struct fs_path path;
	uint64_t version;	/* cluster->version when rendered */
	uint64_t second;	/* the clock's second it was rendered in, for a file whose
				 * bytes move with it (cluster/jobs); else 0 */
	uint64_t last_use;
	struct fs_blob *blob;	/* NULL = empty slot */
};

/*
 * The kernel's page cache of the files fs_kcache_kind() names (fs_kcache.c): per path,
 * the bytes that its cached-mode opens read and how many are open. FS_KCACHE_SLOTS
 * slots, a path's among FS_KCACHE_PROBE of them from its hash; a slot no open file holds
 * is reused, least recently used first. Under ctx->lock.
 */
#define FS_KCACHE_SLOTS 128
#define FS_KCACHE_PROBE 8

struct fs_kcache_slot {
	struct fs_path path;
	struct fs_blob *blob;	/* a reference: the bytes the page cache may hold; NULL = free */
	unsigned open_count;	/* cached-mode opens of it (fs_kcache_open() > 0 or 0) */
	uint64_t last_use;
};

/*
 * An upload a close() accepted, kept durable until its release applies it: a spec
 * (kind "spec", key = job name) or a quota (kind "quota", key = queue name).
 */
struct fs_staged {
	char kind[8];
	char key[CONF_NAME_MAX + 1];
	char ext[8];			/* spec: "yaml", "yml", "json", "" for jobs/<name>/spec */
	uid_t uid;
	gid_t gid;
	gid_t *groups;			/* the writer's supplementary groups (owned) */
	size_t group_count;
	char *body;			/* owned, NUL-terminated */
	size_t len;
	bool drop;			/* in ctx->stage_ops: (kind, key) is no longer staged */
	struct fs_staged *next;		/* in its ctx->staged bucket, or in ctx->stage_ops */
};

struct fs_store;
struct fs_handle_user;

/* The daemon's state; one lock guards the cluster. */
/*
 * ---- inode numbers (fs_inode.c) ----
 * The numbers the kernel holds for names of the mount (the low-level FUSE protocol):
 * FUSE_ROOT_ID is "/", always there; another is made by the first lookup of a name in
 * its directory and dies when the kernel has forgotten every lookup it was given and no
 * name below it is held (never used again). After an rmdir the name is detached: a new
 * lookup makes a new number, and the old one and what is below it are stale. All take
 * the table's own lock; none calls out but the invalidations below (to the kernel).
 * fs_inodes_init() - an empty table with the root. 0 or -ENOMEM.
 * fs_inodes_release() - free it all.
 * fs_inode_lookup() - the inode of @name in directory @parent (made when new) with one
 * more lookup, as a LOOKUP, CREATE or MKDIR reply gives the kernel: 0 and *@ret_ino, or
 * -ESTALE (@parent unknown or stale), -ENAMETOOLONG (path over FS_PATH_BYTES), -ENOMEM.
 * fs_inode_path() - the absolute path of @ino into @buf (@size bytes), and in
 * *@ret_stale (NULL: not asked) whether it or a directory above it was detached: 0,
 * -ESTALE (not held) or -ENAMETOOLONG.
 * fs_inode_detach() - the name @name in @parent is gone (a successful rmdir).
 * fs_inode_forget() - the kernel forgets @n lookups of @ino.
 * fs_inode_count() - inodes held, the root included.
 * fs_inodes_check() - 0 when the table is whole (each number in its slot, each held
 * name in its parent's list and in the name hash exactly once, the free list free slots
 * each once), else -EUCLEAN. O(slots ever taken + buckets): for tests.
 * fs_inodes_set_session() - invalidations go through @se from now on; NULL: none any
 * more. Returns once no invalidation is under way, so with NULL the caller may then
 * close the session's descriptor (fuse_session_unmount() does): an invalidation never
 * writes to a closed descriptor, or to a file that took its number.
 *
 * Invalidations, for the attributes the kernel keeps (fs_lowlevel.c says which): each tells
 * the kernel, through @t->se (none before the session is set: nothing to tell), that
 * the attributes it holds of an inode are stale, so its next stat(), or read past the
 * size it knew, asks again. Attributes only: the kernel takes no lock that a request
 * in flight could hold, so any thread may call them, a request's handler included,
 * without ctx->lock.
 * fs_inode_inval_attrs() - of @ino.
 * fs_inode_inval_attrs_path() - of the inode of absolute @path, and with @below of every
 * one below it the kernel holds (nothing when it holds none). Allocates nothing: all are
 * told.
 */
#define FS_PATH_BYTES 4096 /* the longest absolute path inside the mount, NUL included */

struct fs_inode;
struct fuse_session;
struct fs_inodes {
	pthread_mutex_t mu;
	struct fs_inode **chunks;	/* chunk_count of chunk_cap made; slots, by index */
	size_t chunk_count, chunk_cap;
	uint32_t used, free_head;	/* slots ever taken (slot 0 included); freed ones */
	uint32_t *by_name;		/* cap buckets of slot indices */
	size_t cap, count;
	/* for invalidations: set once mounted, cleared before the unmount closes its
	 * descriptor (fs_inodes_set_session()); read and used under se_lock */
	pthread_rwlock_t se_lock;
	struct fuse_session *se;
};

int fs_inodes_init(struct fs_inodes *t);
void fs_inodes_release(struct fs_inodes *t);
void fs_inodes_set_session(struct fs_inodes *t, struct fuse_session *se);
int fs_inode_lookup(struct fs_inodes *t, uint64_t parent, const char *name, uint64_t *ret_ino);
int fs_inode_path(struct fs_inodes *t, uint64_t ino, char *buf, size_t size, bool *ret_stale);
void fs_inode_detach(struct fs_inodes *t, uint64_t parent, const char *name);
void fs_inode_forget(struct fs_inodes *t, uint64_t ino, uint64_t n);
size_t fs_inode_count(struct fs_inodes *t);
int fs_inodes_check(struct fs_inodes *t);
void fs_inode_inval_attrs(struct fs_inodes *t, uint64_t ino);
void fs_inode_inval_attrs_path(struct fs_inodes *t, const char *path, bool below);

/*
 * Who may watch what (fs_notify.c): an inotify watch, and an open file, hold an inode
 * the kernel got from a LOOKUP, CREATE or MKDIR, and a watch of a directory hears of
 * its children. An inode given only to the notify helper cannot be watched by anyone
 * else without a LOOKUP of theirs first, as long as the helper's names are not kept
 * (fs_lowlevel.c: its entries have no timeout, so any other path through them asks).
 * fs_inode_mark_seen() - inode @ino was given to a request not the helper's (from now
 * until the kernel forgets it).
 * fs_inode_watchable() - could anyone but the helper watch absolute @path: was its node,
 * or its parent's (the root always), seen? false: announcing a change of it wakes
 * nobody (a watch set later reads the file as it is then). fanotify marks of a whole
 * mount or file system hear of every inode and are not counted.
 */
void fs_inode_mark_seen(struct fs_inodes *t, uint64_t ino);
bool fs_inode_watchable(struct fs_inodes *t, const char *path);

/*
 * fs_inode_sweep() - tell the kernel of the attributes that every change up to cluster
 * version @want made stale: the files and directories of each job changed since the
 * last sweep (SCHED_DIRTY_ATTRS), before a request that changed state answers, so a
 * stat() after its answer sees the change. The thread that finds jobs to do does them;
 * another waits for it (bounded: attribute invalidations never block, and a sweep ends
 * once the jobs listed when it began are told, even while allocations fail). Caller
 * holds ctx->lock (dropped meanwhile).
 */
struct fs_ctx;
void fs_inode_sweep(struct fs_ctx *ctx, uint64_t want);

struct fs_ctx {
	pthread_mutex_t lock;
	_Atomic uint64_t changes;	/* fs_changed() calls, counted before it returns */
	/* jobs/'s attributes as last answered under lock, for a GETATTR while another request
	 * holds it (fs_op_getattr()); zero-initialized is unlocked */
	pthread_mutex_t jobs_dir_mu;
	struct stat jobs_dir_st;	/* under jobs_dir_mu */
	uint64_t jobs_dir_st_usec;	/* under jobs_dir_mu: when taken (fs_now_usec()), or 0 */
	uint64_t jobs_dir_st_changes;	/* under jobs_dir_mu: `changes` when taken */
	struct sched_cluster *cluster;	/* owned; under lock (a standby replaces it) */
	const struct conf_cluster *conf; /* the configuration as loaded, read without lock:
					 * what does not change at run time (operator_group,
					 * queue groups); the cluster's own (cluster->conf,
					 * under lock) has the quotas set since */
	struct fs_standby *standby;	/* this head's standby (fs_standby.c), or NULL */
	bool viewing;			/* under lock: this head stands by, its cluster is a
					 * view of the leader's (nothing acts on it, no pass
					 * runs, every change fails with EROFS) */
	char *mount_path;		/* absolute; used in ASCEND_JOB_DIR, RANK_TABLE_FILE */
	dev_t mount_dev;		/* the mount's device (0 until mounted): nothing on it is read */
	char *config_path;
	int log_level;			/* 0 error, 1 warning, 2 info, 3 debug */
	struct fs_upload *uploads;	/* specs open for writing (under lock; fs_uploads.c) */
	struct fs_upload **upload_index; /* ... by name: upload_cap buckets (0 or 2^n) */
	size_t upload_cap, upload_count;
	struct fs_upload_user **upload_users; /* open uploads per uid: upload_user_cap
					 * buckets (0 or 2^n) */
	size_t upload_user_cap, upload_user_count;
	pthread_cond_t uploads_cv;	/* signalled when an upload is released */
	bool multithreaded;		/* false with -s: nobody could release while we wait */
	unsigned test_slow_root_getattr_ms; /* tests only: ASCENDFS_TEST_SLOW_GETATTR_MS, read
					 * at start; the GETATTR of "/" waits this long first */
	unsigned test_slow_helper_ms;	/* tests only: ASCENDFS_TEST_SLOW_HELPER_MS, read at
					 * start; a GETATTR of the notify helper's (every
					 * file it pokes) waits this long first: a busy
					 * daemon's answers */
	unsigned test_slow_restore_ms;	/* tests only: ASCENDFS_TEST_SLOW_RESTORE_MS, read at
					 * start; fs_store_restore() waits this long before
					 * reading: a state that takes seconds to read */
	unsigned test_slow_commit_ms;	/* tests only: ASCENDFS_TEST_SLOW_COMMIT_MS, read at
					 * start; the committer waits this long before each
					 * write of a batch: a slow state disk or quorum */
	unsigned test_locked_health_ms;	/* tests only: ASCENDFS_TEST_LOCKED_HEALTH_MS, read
					 * at start; a health report, at its close, holds
					 * ctx->lock this long first */
	unsigned test_slow_release_ms;	/* tests only: ASCENDFS_TEST_SLOW_RELEASE_MS, read at
					 * start; a RELEASE waits this long first, unless
					 * another of its user's of its class (spec or
					 * other) is late (the kernel sends it after close()
					 * returned; on a loaded machine it comes late) */
	pid_t notifier_tid;		/* the notify helper's pid, whose requests are
					 * announcements (fs_req_from_helper()); 0 = none
					 * runs, and no request is taken for its */
	pthread_cond_t notify_cv;	/* signalled after a change (under lock) */
	pthread_cond_t stop_cv;		/* signalled when the threads must end */
	pthread_cond_t scan_cv;		/* wakes the checkpoint scanner (a generation waits
					 * for its scan, or the threads must end) */
	pthread_cond_t resume_cv;	/* signalled when a generation's scan ended */
	bool stopping;			/* threads end (under lock) */
	struct fs_handle_user **handle_users; /* every open file, listed by its opener's uid
					 * (fs_handle.c; under lock): handle_user_cap buckets
					 * (0 or 2^n) */
	size_t handle_user_cap, handle_user_count;
	pthread_cond_t handles_cv;	/* signalled when a file of a user with a request
					 * waiting for a release is released */
	size_t notified_job_count;	/* the notifier's view of jobs/ (under lock) */
	struct fs_job_dirs *job_dirs;	/* job directories announced, and the helper's
					 * pending mkdir/rmdir (fs_notify_dirs.c; under lock) */
	uint64_t notified_jobs_dropped;	/* sched_cluster.jobs_dropped the notifier last saw */
	uint64_t view_swaps;		/* clusters put in place of the one served (a
					 * standby's views, a takeover): the notifier's
					 * round after one compares nothing by version */
	char *config_text;		/* normalized config, rendered once */
	char *config_warnings;		/* fs_config_warnings(), appended to it; or NULL */
	size_t config_len;
	struct fs_cache_slot cache[FS_CACHE_SLOTS]; /* under lock */
	uint64_t cache_clock;
	uint64_t cache_hits, cache_misses;
	struct fs_event_stream events[FS_EVENT_STREAMS]; /* under lock */
	struct fs_kcache_slot kcache[FS_KCACHE_SLOTS]; /* under lock (fs_kcache.c) */
	uint64_t admit_epoch;		/* fs_snapshot_admit() (under lock) */
	/* durable state (fs_store.h); all under lock. store NULL: in memory only */
	struct fs_store *store;
	/* uploads accepted by a close, not yet released: a hash by key of staged_cap
	 * buckets (0 or a power of two), so staging costs the same however many there are */
	struct fs_staged **staged;
	size_t staged_cap, staged_count;
	struct fs_staged *stage_ops;	/* the staged table's changes since the last batch, in
					 * order: owned copies of what was put, or drops */
	struct fs_staged **stage_ops_tail; /* where the next one goes (NULL: &stage_ops) */
	bool staged_changed;		/* the next batch rewrites the whole staged table */
	pthread_cond_t commit_cv;	/* wakes the committer */
	/* the requests waiting for their change to be written (fs_store_sync()), each
	 * woken alone once its batch is written or failed: a broadcast woke them all at
	 * every batch, most of them to sleep again */
	struct fs_durable_waiter *durable_waiters;
	/* what runs once a change is written, or known not to be (fs_store_when_durable()),
	 * in the order given */
	struct fs_durable_hook *durable_hooks, **durable_hooks_tail;
	pthread_cond_t sweep_cv;	/* signalled after each sweep (fs_inode_sweep()) */
	uint64_t collected_version;	/* cluster version of the newest batch taken */
	uint64_t durable_version;	/* ... of the newest batch written */
	uint64_t failed_version;	/* ... of the newest batch whose write failed */
	bool committer_gone;
	uint64_t pass_end_usec;		/* when the last owed pass ended (fs_pass_run_owed) */
	uint64_t pass_cost_usec;	/* ... and how long it took */
	struct MHD_Daemon *http;	/* the HTTP server (fs_http.c), or NULL */
	struct fs_joblogs *logs;	/* the jobs' output (fs_joblog.c; own locks), or NULL */
	struct fs_inodes inodes;	/* what the kernel holds (fs_inode.c; own lock) */
	/* the kernel told of the attributes changes made stale (fs_inode_sweep(); under
	 * lock): up to this cluster version, and whether a thread is telling it now */
	uint64_t swept_version;
	bool sweeping;
};

/*
 * ---- job logs (fs_joblog.c) ----
 * What a job's processes print, shipped by the agents (`<generation> <process> <server>
 * <text>` lines written to jobs/<job>/log) and kept per job object in a directory:
 * <state-dir>/logs, or without a state store a private directory under $TMPDIR (/tmp)
 * removed at exit. Per job at most cluster.job_log_max_mib MiB: two files, the current
 * one and log.1. Locking: none of these may be called with ctx->lock held except
 * fs_joblogs_sweep(), fs_joblog_size(), fs_joblog_proc_size() and fs_joblog_proc_list(),
 * which never wait for a disk.
 */
struct fs_joblogs;

/*
 * fs_joblogs_open() - set ctx->logs up: <@state_dir>/logs (made if missing, mode 0700;
 * the logs of restored jobs kept, any other job's removed, so call it after the state
 * was restored; a standby, ctx->viewing, removes none: fs_joblogs_adopt()), or with
 * @state_dir NULL a new private directory. Returns 0, or -EIO
 * with a sentence in @why (@why_len bytes) saying which directory and why, -ENOMEM.
 */
int fs_joblogs_open(struct fs_ctx *ctx, const char *state_dir, char *why, size_t why_len);

/*
 * fs_joblogs_adopt() - a standby that took over (ctx->viewing was set at the open: the
 * logs were indexed, none removed): keep the logs of the jobs ctx->cluster now holds,
 * remove the others, as the open does. Before the threads that change jobs start.
 */
void fs_joblogs_adopt(struct fs_ctx *ctx);

/* fs_joblogs_free() - close ctx->logs (NULL allowed), removing a private directory;
 * every handle must be gone. */
void fs_joblogs_free(struct fs_ctx *ctx);

/*
 * fs_joblogs_sweep() - take out the logs whose job record was dropped (called when
 * sched_cluster.jobs_dropped moved; under ctx->lock; no file is touched): appends to
 * them fail with ENOENT from now on. fs_joblogs_reap() - remove their files (without
 * ctx->lock); a descriptor open on one keeps reading it.
 */
void fs_joblogs_sweep(struct fs_ctx *ctx);
void fs_joblogs_reap(struct fs_ctx *ctx);

/* fs_joblog_size() - bytes of job @serial's log (@old: log.1); 0 when none. The time of
 * its last append in *@mtime_usec (NULL allowed) when known, else left alone. */
uint64_t fs_joblog_size(struct fs_ctx *ctx, uint64_t serial, bool old, uint64_t *mtime_usec);

/*
 * fs_joblog_read_all() - the bytes of job @serial's log (@old: log.1) as they are now,
 * at most its newest 64 MiB from a line's start, only the lines of process @proc
 * (FS_LOG_PROC_*; FS_LOG_PROC_NONE: every line), in *@ret (new, NUL-terminated; caller
 * frees) and *@ret_len (empty when there is no log). Returns 0 or -ENOMEM.
 */
int fs_joblog_read_all(struct fs_ctx *ctx, uint64_t serial, bool old, uint32_t proc,
		       char **ret, size_t *ret_len);

/*
 * The processes of a log, as its lines name them: FS_LOG_PROC_SCHEDULER "scheduler"
 * (MindSpore's), FS_LOG_PROC_NODE "node" (a server's msrun), FS_LOG_PROC_RANK(n)
 * "rank-<n>" (n < 10^6, no leading zero); FS_LOG_PROC_NONE is none of them.
 * jobs/<job>/logs/<process> reads that process's lines of log, <process>.1 of log.1.
 */
#define FS_LOG_PROC_SCHEDULER 0u
#define FS_LOG_PROC_NODE 1u
#define FS_LOG_PROC_RANK(n) (2u + (uint32_t)(n))
#define FS_LOG_PROC_NONE UINT32_MAX

/* fs_joblog_proc_parse() - the process named by the @len bytes at @s (no NUL needed) in
 * *@ret. Returns 0 or -EINVAL (no process's name). */
int fs_joblog_proc_parse(const char *s, size_t len, uint32_t *ret);

/* fs_joblog_proc_name() - @proc's name in @buf (@len bytes; 16 always do). Returns 0 or
 * -ENAMETOOLONG. */
int fs_joblog_proc_name(uint32_t proc, char *buf, size_t len);

/*
 * fs_joblog_prepare() - before a request on @p takes ctx->lock (call without it): when
 * @p is jobs/<job>/logs or a file in it and the job's log was restored from disk and
 * not yet counted per process, count it (reads its files, appends going on; another
 * request for it waits), so that the calls below answer under ctx->lock without a
 * disk. What cannot be read leaves it not counted (logged), to be counted at the next
 * request. Any other path: nothing.
 */
void fs_joblog_prepare(struct fs_ctx *ctx, const struct fs_path *p);

/*
 * fs_joblog_proc_size() - bytes of process @proc's lines in job @serial's log (@old:
 * log.1) in *@ret_bytes, its last append's time (@old: the rotation's) in *@mtime_usec
 * when known (NULL allowed). Returns 0, or -ENOENT when the process has no lines in
 * either file (or the log was not counted yet: fs_joblog_prepare()). No disk; any lock.
 */
int fs_joblog_proc_size(struct fs_ctx *ctx, uint64_t serial, uint32_t proc, bool old,
			uint64_t *ret_bytes, uint64_t *mtime_usec);

/*
 * fs_joblog_proc_list() - call @fill(@data, name) for each file of jobs/<job>/logs/ of
 * job @serial, in process order ("scheduler", "node", then ranks ascending; each
 * process's "<name>.1" after its "<name>"), until @fill returns < 0, which is returned.
 * Returns 0 otherwise (nothing when there is no log). No disk; any lock.
 */
int fs_joblog_proc_list(struct fs_ctx *ctx, uint64_t serial,
			int (*fill)(void *data, const char *name), void *data);

/*
 * ---- snapshots (fs_snapshot.c) ----
 * fs_snapshot() - the bytes of readable node @p as a view with a blob reference for the
 * caller (fs_blob_put(ret->blob)). Served from the render cache while the cluster's
 * version is unchanged (cluster/jobs, whose ages move, within one second of the clock);
 * the other time-dependent nodes are rendered every time; the events files
 * from their streams, whose blob every open between two rebuilds shares.
 * Caller holds ctx->lock. Errors as fs_render(); *ret untouched on failure.
 */
int fs_snapshot(struct fs_ctx *ctx, const struct fs_path *p, uint64_t now_usec,
		struct fs_view *ret);

/*
 * Counting what one user's open snapshots hold, for the bounds above: begin, add the
 * blob of each of the user's open snapshots and of the one about to be opened, then
 * check. A blob counts once however many snapshots share it, and not at all while it is
 * live and current (what any new open would share anyway).
 * All under ctx->lock (the marks are in the blobs).
 */
struct fs_snapshot_tally {
	uint64_t epoch;
	uint64_t version;	/* the cluster's, at begin */
	size_t count;		/* open files added */
	size_t bytes;		/* cap of the distinct blobs added that are not live and
				 * current, plus the buffers added */
};

/* fs_snapshot_tally_begin() - start an empty tally @t (caller's storage). */
void fs_snapshot_tally_begin(struct fs_ctx *ctx, struct fs_snapshot_tally *t);

/* fs_snapshot_tally_add() - count one snapshot, holding @b (borrowed, not NULL). */
void fs_snapshot_tally_add(struct fs_snapshot_tally *t, struct fs_blob *b);

/* fs_snapshot_tally_add_buffer() - count one open file that buffers @bytes (a ctl file). */
void fs_snapshot_tally_add_buffer(struct fs_snapshot_tally *t, size_t bytes);

/*
 * fs_snapshot_tally_check() - 0 when user @uid may hold what @t counted (root always),
 * else -EMFILE: more than FS_OPEN_FILES_PER_USER files or FS_SNAPSHOT_BYTES_PER_USER
 * bytes.
 */
int fs_snapshot_tally_check(const struct fs_snapshot_tally *t, uid_t uid);

/*
 * fs_config_refresh() - render cluster/config again from the cluster's configuration,
 * after a change made at run time (a queue's quota). Caller holds ctx->lock. Returns 0,
 * or -ENOMEM with the old text kept.
 */
int fs_config_refresh(struct fs_ctx *ctx);

/*
 * fs_config_fingerprint() - a fingerprint of configuration @conf: 64-bit FNV-1a of its
 * normalized YAML (conf_cluster_render_yaml(): comments, order and spelled-out defaults
 * do not count), without state.etcd_servers and etcd_request_timeout (how each head
 * reaches etcd), as FS_CONFIG_FINGERPRINT_LEN hex digits and a NUL into @ret. Heads that
 * share a state must run the same configuration (README, "Several heads"), as Slurm's
 * daemons compare a hash of slurm.conf; a standby compares the leader's with its own.
 * Not a security measure. Returns 0 or -ENOMEM.
 */
#define FS_CONFIG_FINGERPRINT_LEN 16
int fs_config_fingerprint(const struct conf_cluster *conf, char *ret);

/* fs_blob_put() - drop one reference; frees at zero. NULL is fine. Any thread. */
void fs_blob_put(struct fs_blob *b);

/* fs_blob_get() - take one more reference of @b (not NULL); returns @b. Any thread. */
struct fs_blob *fs_blob_get(struct fs_blob *b);

/*
 * ---- the kernel's page cache (fs_kcache.c); ctx->lock held for all ----
 * fs_kcache_kind() - may files of kind @k be read through the page cache? ranktable.json,
 * topology.json, env, hosts/<server>.env and ranks/<rank>.env: they change only with the
 * job's generation, its placement or its rank table's completion.
 *
 * fs_kcache_open() - how a read-only open of @p whose snapshot is @v (borrowed) reads:
 * -1 around the cache (direct_io: not such a kind, no slot free, or cached-mode opens of
 * other bytes are open), 1 through it with the pages kept (keep_cache: they are of these
 * bytes), 0 through it after the kernel drops its pages at open (keep_cache off; the
 * caller tells the kernel the size it keeps is stale, so the first read asks it again).
 * On 0 or 1 *@ret is the slot (borrowed; the handle holds it until
 * fs_kcache_release()).
 *
 * fs_kcache_release() - a cached-mode open of slot @s (NULL: none) was released.
 *
 * fs_kcache_size() - while cached-mode opens of @p exist: true and their size in *@ret
 * (what getattr reports, so that the kernel never cuts their reads short at another
 * snapshot's size). Otherwise false, *@ret untouched.
 *
 * fs_kcache_slot_size() - whether @p has a slot, open or not: true and the size of the
 * bytes it holds in *@ret. While nothing was rendered since, that is every size the
 * kernel was told of them (fs_kcache_open() keeps their pages then); the notify helper
 * is shown it instead of a size rendered for it (fs_op_getattr()).
 *
 * fs_kcache_clear() - drop every slot's blob (at exit; by fs_cache_clear()).
 */
bool fs_kcache_kind(enum fs_node_kind k);
int fs_kcache_open(struct fs_ctx *ctx, const struct fs_path *p, const struct fs_view *v,
		   struct fs_kcache_slot **ret);
void fs_kcache_release(struct fs_kcache_slot *s);
bool fs_kcache_size(struct fs_ctx *ctx, const struct fs_path *p, size_t *ret);
bool fs_kcache_slot_size(struct fs_ctx *ctx, const struct fs_path *p, size_t *ret);
void fs_kcache_clear(struct fs_ctx *ctx);

/* fs_cache_clear() - drop every cached blob and the events streams (at exit). Caller
 * holds ctx->lock. */
void fs_cache_clear(struct fs_ctx *ctx);
/* fs_cache_forget() - the same but the kernel's page-cache slots, which compare bytes
 * and stay right: after ctx->cluster was replaced (a standby's view, fs_standby.c), whose
 * versions say nothing of the one before. Caller holds ctx->lock. */
void fs_cache_forget(struct fs_ctx *ctx);

/*
 * fs_stat() - attributes of node @p in the current state: mode, owner, true size (of a
 * snapshot rendered now, shared with the render cache) and times. Operator files come
 * out -rw-r--r-- root:root; getattr makes them -rw-rw-r-- root:<operator_group> after
 * resolving the group without the lock. Caller holds ctx->lock. Returns 0, -ENOENT (no
 * such node now) or -ENOMEM.
 */
struct stat;
int fs_stat(struct fs_ctx *ctx, const struct fs_path *p, struct stat *st, uint64_t now_usec);

/*
 * fs_stat_sized() - fs_stat(), or with @with_size false the same without rendering the
 * file for its size: st_size 0 (a generated file's size is what a render of it says,
 * under ctx->lock; the notify helper's announcements need none, see fs_getattr()).
 */
int fs_stat_sized(struct fs_ctx *ctx, const struct fs_path *p, struct stat *st,
		  uint64_t now_usec, bool with_size);


/*
 * fs_render() - the bytes of readable node @p (a snapshot). *ret new (free()).
 * Caller holds ctx->lock. Returns 0, -ENOENT, -EISDIR, -EACCES (write-only node),
 * -ENOMEM.
 */
int fs_render(struct fs_ctx *ctx, const struct fs_path *p, uint64_t now_usec, char **ret,
	      size_t *ret_len);

/*
 * fs_list() - names in directory @p, each passed to @fill(@data, name). Caller holds
 * ctx->lock. Returns 0, -ENOENT, -ENOTDIR, or what @fill returns when non-zero.
 */
int fs_list(struct fs_ctx *ctx, const struct fs_path *p, int (*fill)(void *data, const char *name),
	    void *data);

/*
 * fs_ctl() - run one ctl line (no newline) written to ctl node @p by @uid. @may_operate:
 * the writer is root or in cluster.operator_group (fs_may_operate(), as of open()); server
 * verbs (node ctl, cluster/ctl) need it, job verbs need @uid to own the job or be 0.
 * On failure writes a sentence to @why (SCHED_REASON_MAX). Caller holds ctx->lock.
 * Returns 0, -EINVAL (unknown verb/arguments), -EPERM, -ENOENT, -EBUSY, -EOPNOTSUPP.
 */
int fs_ctl(struct fs_ctx *ctx, const struct fs_path *p, const char *line, uid_t uid,
	   bool may_operate, uint64_t now_usec, char *why);

/*
 * ---- a head's two roles (fs_standby.c) ----
 * fs_lead_start() - lead: start the committer (fs_store_start()), note the `leader`
 * event (etcd), stop the daemon when the leadership is lost (SIGTERM: main() exits 1),
 * start the background threads (fs_threads_start()). After the mount and its fork.
 * 0, or -errno with a sentence in @why (@why_len bytes).
 * fs_standby_init() - with the state on etcd and another head leading: stand by. Sets
 * ctx->standby, ctx->viewing and ctx->conf (this head's own). Before the mount. 0,
 * -EINVAL (the configuration does not read back as cluster/config), -ENOMEM, with @why
 * (SCHED_REASON_MAX).
 * fs_standby_start() - after the mount and its fork, once main() no longer reads
 * ctx->cluster without the lock: the threads that put views of the leader's state in
 * ctx->cluster (the first as soon as it can be read; the configuration's empty state
 * until then) and take over when the leader's lease ends (then it leads:
 * fs_lead_start()). 0 or -errno; a no-op without a standby.
 * fs_standby_stop() - stop them (before unmounting is fine). fs_standby_failed() - did
 * a takeover fail (the daemon then stops: SIGTERM)? fs_standby_free() - at exit, after
 * the FUSE session. No-ops without a standby.
 * fs_standby_refusal() - 0, or -EROFS while this head stands by (logged once per 10 s
 * with @path and the leader's name), or -EIO once it lost the leadership (etcd; it is
 * exiting): every request that would change state asks first (a create, mkdir, rmdir,
 * truncate, an open for writing, and the write, flush and release of a state file).
 */
struct fs_standby;
int fs_lead_start(struct fs_ctx *ctx, char *why, size_t why_len);
int fs_standby_init(struct fs_ctx *ctx, bool set_aside, char *why);
int fs_standby_start(struct fs_ctx *ctx);
void fs_standby_stop(struct fs_ctx *ctx);
bool fs_standby_failed(struct fs_ctx *ctx);
void fs_standby_free(struct fs_ctx *ctx);
int fs_standby_refusal(struct fs_ctx *ctx, const char *path);

/*
 * fs_threads_start() - start the daemon's background threads: the heartbeat check
 * (once a second: servers silent past heartbeat_timeout become unreachable, then
 * sched_tick(): running jobs past their time_limit begin stopping, stopping jobs past
 * their stop deadline are requeued or time out), the checkpoint scanner (every
 * fault_check_interval, and at once for a job whose new generation waits for it: that
 * job's checkpoint_dir is read before its servers list the generation; never a path
 * inside the mount), and the
 * notifier, which announces the daemon's own changes to inotify watchers by operating
 * on the mount (truncate to the same size -> IN_MODIFY on status, status.json,
 * ranktable.json, env, events, history, nodes/<server>/jobs; utimensat -> IN_ATTRIB on jobs/
 * when a job appears, goes or changes state; mkdir/rmdir of jobs/<name> -> IN_CREATE or
 * IN_DELETE with IN_ISDIR and the name when a job directory appears or goes by the
 * daemon's doing (a spec accepted or rejected at close, a finished record dropped; a
 * user's own mkdir and rmdir the kernel announces itself), see fs_notify_job_dir(); the
 * daemon treats these requests as no-ops). Call after the mount is up. Returns 0 or
 * -errno.
 */
int fs_threads_start(struct fs_ctx *ctx);

/*
 * fs_notifier_start() - the notifier and its helper alone, for a standby: watchers of
 * its mount are told what each new view changed (fs_notify_view_swapped()); nothing acts
 * on the view. fs_threads_start() starts the others (and this, when not running yet);
 * fs_threads_stop() stops them all. Returns 0 or -errno.
 */
int fs_notifier_start(struct fs_ctx *ctx);

/*
 * fs_notify_view_swapped() - @ctx->cluster was just put in place of @old (still
 * allocated; caller holds ctx->lock): what the notifier knew of @old's jobs carries over
 * to the new cluster's of the same name and serial, so that a round announces only what
 * differs: a job new to the view (its directory), one whose state, generation or last
 * change differs or whose last change a round still owed (its files as any change's;
 * these go on the notifier's list, sched_job_mark_unannounced(), nothing else), one gone
 * (its directory), the events. With @first (the first view: watchers saw none before)
 * nothing is announced. The sweeps that wait for a version (fs_inode_sweep()) end: the
 * caller then tells the kernel every attribute is stale.
 */
void fs_notify_view_swapped(struct fs_ctx *ctx, struct sched_cluster *old, bool first);

/*
 * fs_threads_stop() - stop and join them (after unmounting: the notifier may be inside
 * a syscall on the mount). Returns false when the checkpoint scanner did not stop
 * within 3 s (a dead checkpoint filesystem); then @ctx must not be freed.
 */
bool fs_threads_stop(struct fs_ctx *ctx);

/*
 * fs_mountinfo_find() - look @path up in @mountinfo (a /proc/<pid>/mountinfo file): with
 * @path, ascendfs's mount there (type "fuse" or "fuse.*", source "ascendfs", the
 * fsname the daemon mounts with; the top one when several are stacked; mountinfo's \ooo
 * escapes are undone), whose device it stores in
 * *@major:*@minor; with @path NULL, whether device *@major:*@minor is mounted anywhere.
 * Returns 1 found, 0 not, -errno when the file cannot be read.
 */
int fs_mountinfo_find(const char *mountinfo, const char *path, unsigned *major, unsigned *minor);

/* fs_mountinfo_unescape() - undo mountinfo's \ooo escapes (space, tab, newline, backslash)
 * in the NUL-terminated field @s, in place. */
void fs_mountinfo_unescape(char *s);

/*
 * fs_mountwatch_start() - start the mount watch (fs_mountwatch.c): as soon as the mount
 * is gone from the daemon's mount namespace it ends the notify helper (its copy of the
 * mount: fs_notify_helper_release()) and waits for it to end (it is killed 30 s later);
 * when the daemon still runs a second after the helper ended (a copy in another
 * namespace, or a lazy unmount with files still open, keeps the file system alive), or
 * 31 s after the mount went (a request the daemon never answers keeps even a killed
 * helper), it aborts the FUSE connection through fusectl, so the daemon stops as after
 * fusermount3 -u, and logs why. Call after the mount is up and fs_threads_start(). Returns 0 or
 * -errno.
 */
int fs_mountwatch_start(struct fs_ctx *ctx);

/*
 * fs_mountwatch_aborted() - did the watch abort the connection? The session loop then
 * ends with an error (the kernel's ECONNABORTED or ENODEV), which is the stop the
 * unmount asked for, not a failure.
 */
bool fs_mountwatch_aborted(void);

/*
 * fs_mountwatch_unmounted() - has the mount gone from this mount namespace (the watch
 * saw it go, or its device is mounted nowhere here now)? False before the watch found
 * the mount, and when /proc/self/mountinfo cannot be read.
 */
bool fs_mountwatch_unmounted(void);

/* fs_mountwatch_stop() - stop and join it (sets ctx->stopping). */
void fs_mountwatch_stop(struct fs_ctx *ctx);

/*
 * fs_memory_start() - start the trimmer (fs_memory.c): a second after a burst of renders
 * or changes has gone quiet (or every 10 s while it goes on), it gives the pages glibc
 * holds free in its arenas back to the system (malloc_trim), off ctx->lock. Without it
 * the daemon works the same with a higher RSS. Returns 0 or -errno.
 */
int fs_memory_start(struct fs_ctx *ctx);

/* fs_memory_stop() - stop and join it (sets ctx->stopping); fine if it never started. */
void fs_memory_stop(struct fs_ctx *ctx);

/*
 * ---- HTTP (fs_http.c), `ascendfs --http ADDR:PORT`; off unless given ----
 * What is served, read-only (GET and HEAD; any other method 405):
 *   /metrics       cluster/metrics, in the Prometheus text exposition format 0.0.4
 *                  (Content-Type text/plain; version=0.0.4), for a Prometheus scrape
 *   /v1/<path>     a file of the mount as a read of it gives it (application/json for
 *                  *.json, text/plain otherwise), or a directory as a JSON array of
 *                  its names; e.g. /v1/cluster/status, /v1/jobs/<id>/status.json;
 *                  ?tail=N (1-100000): the file's last N lines (400 otherwise)
 *   /, /panel      the monitoring panel (fs/panel.html, compiled in: text/html with a
 *                  Content-Security-Policy that lets it fetch its own origin only),
 *                  which reads the files above every 5 s (and cluster/leader: a standby's
 *                  page says in a banner that it is a view, of which log entry, and who
 *                  leads)
 * Only what every user may read through the mount (mode o+r; else 403): HTTP names no
 * user, so nothing that needs one is served, and nothing is written. Errors are
 * {"error": "..."} (bytes of the path that are not printable ASCII as '?'): 404 no such
 * path (now; "file/" and a "%00" in the path too), 403, 500; libmicrohttpd's own for
 * what it refuses itself (an HTML 414 for a URL over its buffer). The absolute form
 * "GET http://host/..." is served as its path. Each request holds ctx->lock for the stat and
 * snapshot an open through the mount would, and HTTP/1.1 connections are kept for the
 * next request. At most 64 connections, 8 from one address; one that sends nothing for
 * 10 s is closed (one that trickles bytes is not: an address that does so holds its 8).
 * Loopback is the address to give unless the network is trusted: the files name every
 * job, owner and server, and an address may hold connections.
 *
 * fs_http_parse_address() - "A.B.C.D:PORT" or "[v6]:PORT" (numeric, port 0-65535) into
 * *@ret (@ret_len its length). Returns 0 or -EINVAL.
 *
 * fs_http_listen() - a listening TCP socket on @address, in *@ret_fd (close-on-exec;
 * made before the daemon forks, so that a port taken is said on the terminal). On
 * failure @why (@why_len) says what to do. Returns 0, -EINVAL (@address) or -errno
 * (-EADDRINUSE: another process has it).
 *
 * fs_http_start() - serve ctx's files on listening socket @fd (taken over: closed by
 * fs_http_stop()) from a thread of libmicrohttpd's; @address is for the log. Call after
 * any fork (daemonizing). Returns 0 or -ENOMEM.
 *
 * fs_http_stop() - stop serving, join the thread, close the socket; fine when never
 * started.
 */
int fs_http_parse_address(const char *text, struct sockaddr_storage *ret, socklen_t *ret_len);
int fs_http_listen(const char *address, int *ret_fd, char *why, size_t why_len);
int fs_http_start(struct fs_ctx *ctx, int fd, const char *address);
void fs_http_stop(struct fs_ctx *ctx);

/*
 * fs_fuse_abort() - abort the FUSE connection of device @major:@minor through fusectl
 * (/sys/fs/fuse/connections/<major << 20 | minor>/abort): its waiting requests fail, new
 * ones get ENOTCONN. fusectl is mounted there first when it is not (root only; then
 * *@ret_mounted is set true, else left alone). @path (size @len) gets the abort file's
 * name, also on failure. Returns 0, -ESRCH when there is no such connection (gone
 * already), or -errno (-EACCES: not the mount's owner nor root).
 */
int fs_fuse_abort(unsigned major, unsigned minor, char *path, size_t len, bool *ret_mounted);

/*
 * fs_fuse_waiting() - how many requests of the FUSE connection of device @major:@minor
 * wait for an answer now (fusectl's <dev>/waiting: the kernel counts a request from its
 * start until it is answered, or dropped unread because its caller was killed). fusectl
 * is mounted first as for fs_fuse_abort(). Returns the count (>= 0), -ESRCH when there is
 * no such connection, or -errno (-EACCES: not the mount's owner nor root).
 */
int fs_fuse_waiting(unsigned major, unsigned minor, bool *ret_mounted);

/* How long a predecessor's mount may take to answer before it counts as wedged. */
#define FS_MOUNTPOINT_PROBE_MSEC 3000
/* ... and, when some request of its connection was answered meanwhile, in all. */
#define FS_MOUNTPOINT_LIVE_MSEC 15000

/*
 * fs_mountpoint_prepare() - make @mnt (as given on the command line) ready to mount on,
 * before anything looks at it (libfuse's command-line parser realpath()s it, which would
 * wait forever on a wedged mount): see fs_mountpoint.c. A mount of a dead ascendfs
 * (ENOTCONN) is lazily unmounted; one whose daemon does not answer within
 * FS_MOUNTPOINT_PROBE_MSEC (stopped, or a zombie waiting on its own mount) has its
 * connection aborted (fs_fuse_abort()) and is unmounted, but only when it is shown to be
 * wedged: no request of that connection was answered meanwhile (fs_fuse_waiting()), or
 * one was but its own answer did not come within FS_MOUNTPOINT_LIVE_MSEC either, and
 * @state_dir's store lock (NULL or "none": not looked at) is not held by a process that
 * runs. A live ascendfs, slow or not, or any other mount there is refused. Never calls anything that could wait on the mount in this
 * process. *@resolved (size @len) gets the absolute, resolved path. Says what it did
 * or why it refuses on stderr. Call single-threaded (it forks). Returns 1 when it
 * removed a predecessor's mount (that daemon may still be exiting, holding its state
 * directory), 0 when there was none, or -1 (a sentence on stderr).
 */
int fs_mountpoint_prepare(const char *mnt, const char *state_dir, char *resolved, size_t len);

/* fs_handles_free_all() - free files still open at exit (after fuse_destroy). */
struct fs_handle;
void fs_handles_free_all(struct fs_ctx *ctx);

/*
 * fs_notify_helper_main() - the notify helper process (ascendfs --notify-helper [MNT
 * MAJOR:MINOR [STOPFD]]): reads one mount path per line from stdin and announces it
 * (truncate to the same size, or utimensat for a directory), until end of input, the
 * daemon's death, or (looked at between lines) the end of the pipe whose read end is
 * descriptor @stopfd (a decimal number; NULL: none). With @mnt and the device @devname of the daemon's mount (either may be NULL; "0:0"
 * when unknown) it works through a detached copy of that mount where it may make one
 * (fs_notify.c says why), or else through the mount point, saying so on stderr in the
 * daemon's log format (fs_log()). When the file system at @mnt is not on @dev (unmounted
 * before the helper looked, or mounted over) it announces nothing and returns 0 at once,
 * silently. Returns the exit status.
 *
 * fs_notify_helper_release() - the mount is gone from the daemon's namespace (the mount
 * watch saw it): end the helper, so that its copy no longer keeps the file system alive.
 * Its stop pipe and its input end (it stops after the request under way, never killed
 * inside one; SIGKILL only when /dev/null cannot be put in place of its input);
 * announcements stop; once only, from any thread. fs_threads_stop() kills it if it is
 * still there 2 s after it closed its input.
 */
int fs_notify_helper_main(const char *mnt, const char *devname, const char *stopfd);
void fs_notify_helper_release(struct fs_ctx *ctx);
/* fs_notify_helper_running() - has the helper not ended yet (its copy of the mount may
 * still keep the file system alive)? It is not reaped here (helper_stop() does). */
bool fs_notify_helper_running(void);
/* fs_notify_helper_kill() - the helper, told to end @waited_msec ago, still runs: SIGKILL
 * (by its id; logged), so its copy of the mount goes. Nothing when it has ended. */
void fs_notify_helper_kill(struct fs_ctx *ctx, unsigned waited_msec);

/*
 * Job directories and inotify (fs_notify_dirs.c). The kernel raises IN_CREATE/IN_DELETE only
 * for a mkdir/rmdir that passes through the mount, and libfuse 3.14 has no notification
 * that yields them (notify_inval_entry and notify_delete only drop cached entries), so
 * the helper makes that mkdir or rmdir itself: the daemon then answers the helper alone
 * as if the directory did not exist yet (before its mkdir) or still existed (before its
 * rmdir). These need ctx->lock.
 *
 * fs_notify_job_dir_user() - a user's mkdir (@made) or rmdir of job @name (serial @serial)
 * succeeded: the kernel announced it, the notifier must not again, and what the helper
 * was still to announce of the name is dropped (the kernel said where it is now).
 * fs_notify_job_dir() - for a request of the helper about jobs/@name: 0 none pending
 * (answer as usual), 1 a mkdir pending (answer getattr ENOENT), 2 an rmdir pending
 * (answer getattr as a directory); of a name with an rmdir and then a mkdir pending
 * (its directory went and came back), the older, which the helper comes to first. With
 * @take, a pending one of kind @take (1 or 2) that is the older is consumed (the
 * helper's mkdir or rmdir itself); returns what was pending.
 */
void fs_notify_job_dir_user(struct fs_ctx *ctx, const char *name, uint64_t serial, bool made);
int fs_notify_job_dir(struct fs_ctx *ctx, const char *name, int take);

/*
 * fs_notify_job_dir_settled() - is the directory of job @name one watchers were told of,
 * with no mkdir or rmdir of the helper's pending? Only then may the kernel keep its name
 * (fs_lowlevel.c): the helper's mkdir must find it absent, which a name the kernel keeps would
 * not let it. Needs ctx->lock.
 */
bool fs_notify_job_dir_settled(struct fs_ctx *ctx, const char *name);

/*
 * For the notifier (fs_notify.c), under ctx->lock; each costs the same with 10 or 100,000
 * jobs, apart from the sweep (every known directory: once per round that dropped records).
 * fs_job_dirs_know_all() - every job held now was there before any watcher: none is
 * announced.
 * fs_job_dirs_new() - job @j (not yet announced) is new to watchers unless known by its
 * serial (returns false); when new it is known from now on, and *@ret_announce says
 * whether the helper must make its mkdir (no other job of its name had a directory, and
 * no mkdir of that name is pending; with an rmdir pending, the mkdir comes after it):
 * then one is pending.
 * fs_job_dirs_sweep() - the directories whose job's record went (or was replaced) are
 * forgotten, each passed to @gone, @announce true when an rmdir for the helper is now
 * pending (its name is free, none pending before); one whose mkdir was still pending
 * has that mkdir dropped instead (watchers were never told of it), @announce false.
 * fs_job_dirs_written() - the round's lines are written to the helper at @now_usec (or,
 * @helper_gone, to nobody: every pending one is dropped). A pending mkdir or rmdir goes
 * when the helper makes it or a later one, and fs_job_dirs_expire() (at the start of each
 * round that collects changes) drops one written 30 s ago when the helper has made none
 * for 30 s: a helper stuck in a request.
 * fs_job_dirs_free() - forget everything (the notifier's end).
 */
void fs_job_dirs_know_all(struct fs_ctx *ctx);
bool fs_job_dirs_new(struct fs_ctx *ctx, const struct sched_job *j, bool *ret_announce);
void fs_job_dirs_sweep(struct fs_ctx *ctx,
		       void (*gone)(void *arg, const char *name, bool announce), void *arg);
void fs_job_dirs_written(struct fs_ctx *ctx, uint64_t now_usec, bool helper_gone);
void fs_job_dirs_expire(struct fs_ctx *ctx, uint64_t now_usec);
void fs_job_dirs_free(struct fs_ctx *ctx);

/*
 * fs_changed() - after a change (caller holds ctx->lock): wake the notifier and the
 * committer, and remember in the calling thread the version to wait for in
 * fs_store_sync().
 */
void fs_changed(struct fs_ctx *ctx);

/*
 * ---- etcd's v3 API through its JSON gateway (fs_etcd.c): for heads that keep their state
 * in an etcd cluster and hold the leadership on a lease (issue 21) ----
 * One client per thread (a handle is not shared). Every call returns 0 or a negative
 * errno and, on error, a sentence in @why (FS_ETCD_WHY_MAX bytes):
 *   -EHOSTUNREACH  no endpoint answered within timeout_ms each, or every member that
 *                  answered had no quorum (gRPC Unavailable / DeadlineExceeded): the
 *                  change may or may not have been applied; read before retrying
 *   -EINVAL        etcd refused the request (its message is in @why), or a bad endpoint
 *   -EPROTO        an answer that is not etcd's JSON (HTTP 5xx ones: the next member)
 *   -EMSGSIZE      an answer larger than FS_ETCD_ANSWER_MAX
 *   -ENOMEM
 * Keys are NUL-free bytes (C strings); values any bytes. Rules taken from etcd (v3.4
 * API reference, rpc.proto) are listed at the top of fs_etcd.c.
 */
#define FS_ETCD_WHY_MAX 512
#define FS_ETCD_ENDPOINT_MAX 256	/* bytes of one endpoint URL */
#define FS_ETCD_ANSWER_MAX (64u << 20)	/* a larger answer fails the call (-EMSGSIZE) */

struct fs_etcd;

/*
 * fs_etcd_open() - a client of the endpoints in @endpoints ("http://h1:2379,http://h2:2379",
 * at most 16, http or https), each request given @timeout_ms (0 = 2000) per endpoint.
 * Contacts nobody yet. *@ret (fs_etcd_close()).
 */
int fs_etcd_open(const char *endpoints, unsigned timeout_ms, struct fs_etcd **ret, char *why);
void fs_etcd_close(struct fs_etcd *e);

/* fs_etcd_endpoint() - the endpoint that answered last (borrowed). */
const char *fs_etcd_endpoint(const struct fs_etcd *e);

/* A compare of a Txn: the key's create_revision, mod_revision or lease equals @number,
 * or its value equals @value (@value_len bytes). create_revision 0 = the key is absent. */
enum fs_etcd_cmp_target { FS_ETCD_CMP_CREATE, FS_ETCD_CMP_MOD, FS_ETCD_CMP_LEASE,
			  FS_ETCD_CMP_VALUE };
struct fs_etcd_cmp {
	const char *key;
	enum fs_etcd_cmp_target target;
	int64_t number;
	const void *value;
	size_t value_len;
};

/* An op of a Txn: put @key = @value (@value_len bytes; with @lease, 0 = none), delete
 * @key, or delete every key that starts with @key. */
enum fs_etcd_op_kind { FS_ETCD_PUT, FS_ETCD_DELETE, FS_ETCD_DELETE_PREFIX };
struct fs_etcd_op {
	enum fs_etcd_op_kind kind;
	const char *key;
	const void *value;
	size_t value_len;
	int64_t lease;
};

/*
 * fs_etcd_txn() - if every compare of @cmp holds, apply every op of @ops, atomically, in
 * one revision committed by the quorum (*@ret_succeeded true); else none
 * (*@ret_succeeded false, still 0 returned). *@ret_revision (may be NULL): the store's
 * revision after it. etcd bounds the ops of one Txn (--max-txn-ops, default 128) and
 * its size (--max-request-bytes, default 1.5 MiB): beyond them -EINVAL.
 */
int fs_etcd_txn(struct fs_etcd *e, const struct fs_etcd_cmp *cmp, size_t ncmp,
		const struct fs_etcd_op *ops, size_t nops, bool *ret_succeeded,
		int64_t *ret_revision, char *why);

/* One key as a range reads it; key and value are NUL-terminated copies, borrowed for the
 * callback only. */
struct fs_etcd_kv {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
	int64_t create_revision, mod_revision, lease;
};

/*
 * fs_etcd_range() - call @fn for @prefix (exactly that key), or with @whole_prefix for
 * every key that starts with @prefix, in key order, all read at one revision
 * (*@ret_revision, may be NULL, gets it). Pages: 16 keys first, then as many as make
 * about 4 MiB by the sizes seen, at most 1,000; a page larger than FS_ETCD_ANSWER_MAX
 * is read again in an eighth of the keys (one key's answer that large: -EMSGSIZE). A
 * nonzero return of @fn stops the walk and is returned. An empty @prefix with
 * @whole_prefix reads every key.
 */
int fs_etcd_range(struct fs_etcd *e, const char *prefix, bool whole_prefix,
		  int (*fn)(void *arg, const struct fs_etcd_kv *kv), void *arg,
		  int64_t *ret_revision, char *why);

/*
 * fs_etcd_range_after() - fs_etcd_range(), but with @whole_prefix from the key after
 * @after (NULL: from the prefix's first; one that does not start with @prefix: the
 * same), and with @keys_only the values left out (value "", value_len 0).
 */
int fs_etcd_range_after(struct fs_etcd *e, const char *prefix, bool whole_prefix,
			const char *after, bool keys_only,
			int (*fn)(void *arg, const struct fs_etcd_kv *kv), void *arg,
			int64_t *ret_revision, char *why);

/* fs_etcd_compact() - drop every version older than @revision of every key of the
 * cluster (etcd's Compact; the keys as of @revision stay). */
int fs_etcd_compact(struct fs_etcd *e, int64_t revision, char *why);

/*
 * Leases: fs_etcd_lease_grant() - a new lease of @ttl_sec seconds (etcd may raise a TTL
 * below its minimum); fs_etcd_lease_keepalive() - renew it: *@ret_ttl the seconds it has
 * now, 0 when it had expired (or was revoked): its keys are gone;
 * fs_etcd_lease_revoke() - end it now, deleting its keys.
 */
int fs_etcd_lease_grant(struct fs_etcd *e, unsigned ttl_sec, int64_t *ret_id, char *why);
int fs_etcd_lease_keepalive(struct fs_etcd *e, int64_t id, unsigned *ret_ttl, char *why);
int fs_etcd_lease_revoke(struct fs_etcd *e, int64_t id, char *why);

/*
 * ---- durable state (fs_store.h lists its files) ----
 * SQLite in WAL mode, synchronous=FULL, in <state-dir>/ascendfs.db (schema at the top
 * of fs_store_sqlite.c); <state-dir>/ascendfs.lock is held (flock) while the daemon
 * runs. The committer (fs_commit.c) writes what changed in batches.
 */

/*
 * fs_store_open() - open or create the store in directory @dir (borrowed; it must
 * exist) for a cluster of @server_count servers. Returns 0 and *ret (fs_store_close), or
 * -EBUSY (another daemon holds the directory), -EPROTO (a schema this version does not
 * read; a version 1 or 2 store is made version 3 by its first write, so that an older
 * ascendfs refuses it rather than drop the job records it cannot read), -EIO (SQLite
 * could not open or create it), -ENOMEM, with a sentence in @why (SCHED_REASON_MAX).
 */
int fs_store_open(const char *dir, size_t server_count, struct fs_store **ret, char *why);

/*
 * fs_store_open_etcd() - the store in the etcd cluster of ctx->cluster->conf's `state:`
 * (fs_store_etcd.c), as a client with a lease, not leading yet. Returns 0 and *ret, or
 * -EIO (etcd cannot be reached or refused), -ENOMEM, with a sentence in @why.
 * fs_store_lead() - take the leadership of its prefix (fs_store_etcd_lead(): waiting up
 * to @wait_msec for another head's lease to end, UINT_MAX as long as it takes, calling
 * @tick(@arg, leader) about once a second meanwhile, whose nonzero return stops it and
 * is returned). 0, -EBUSY (another head leads), -EIO, -EALREADY, -ENOMEM, with @why.
 * cluster/leader names this head from fs_store_start() on.
 */
int fs_store_open_etcd(const struct fs_ctx *ctx, struct fs_store **ret, char *why);
int fs_store_lead(struct fs_store *st, unsigned wait_msec,
		  int (*tick)(void *arg, const char *leader), void *arg, char *why);

/*
 * ---- a standby's view (etcd; fs_standby.c builds it) ----
 * fs_store_refresh() - read what the leader committed since the last call into this
 * head's copy (fs_store_etcd_refresh()): 0, -EBUSY (a view is being built: later),
 * -EIO, -EAGAIN, -ENOMEM. From the thread that waits to lead.
 * fs_store_view() - a new cluster (*@ret, the caller's) of the configuration @conf_text
 * (@conf_len bytes: cluster/config as this head loaded it), restored from that copy as
 * the leader wrote it: no scheduling pass, no staged upload applied, records that cannot
 * be read left out, nothing logged. *@ret_seq: the copy's last log entry. 1 (and no
 * cluster) when that is @after (UINT64_MAX: never), 0, -ECANCELED (*@cancel became
 * true), -EAGAIN (nothing read yet), -EBADMSG, -EPROTO, -EINVAL (@conf_text), -ENOMEM,
 * with @why. Without ctx->lock; any thread.
 * fs_store_standby_text() - cluster/leader while this head stands by: "leader: <the
 * leader key's value>", "role: standby", "standby: <this head> (...)", "view: log
 * entry <seq>, read <UTC time>" (@view_usec 0: not read yet), "state: ...". Under
 * ctx->lock once mounted.
 */
int fs_store_refresh(struct fs_store *st);
int fs_store_view(struct fs_store *st, const char *conf_text, size_t conf_len, uint64_t after,
		  const atomic_bool *cancel, struct sched_cluster **ret, uint64_t *ret_seq,
		  char *why);
void fs_store_standby_text(struct fs_store *st, const char *leader, uint64_t view_seq,
			   uint64_t view_usec);

struct fs_restore_stats;

/*
 * fs_store_takeover() - the restore of a head that has just taken the leadership while
 * mounted: as fs_store_restore() (@set_aside, @stats, the same errors), into a new
 * cluster (*@ret, the caller's) of @conf_text, except that the staged uploads wait for
 * fs_store_replay_staged(), called once that cluster is ctx->cluster (it takes
 * ctx->lock; 0 or -EIO with @why, the uploads that could be read applied).
 */
int fs_store_takeover(struct fs_ctx *ctx, const char *conf_text, size_t conf_len,
		      bool set_aside, struct sched_cluster **ret, struct fs_restore_stats *stats,
		      char *why);
int fs_store_replay_staged(struct fs_ctx *ctx, struct fs_restore_stats *stats, char *why);

/* fs_store_name() - the store, for messages: the SQLite file, or "etcd <prefix> at
 * <servers>" (borrowed). */
const char *fs_store_name(const struct fs_store *st);

/*
 * fs_store_leader() - what cluster/leader shows (borrowed): "leader: <host> pid <pid>",
 * "role: leader", "since: <UTC time>" (this head's leadership, or its start with
 * SQLite), "state: sqlite <file>" or "state: etcd <prefix> at <servers>", a line each;
 * a standby's is fs_store_standby_text()'s.
 * fs_store_deposed() - has this head lost the leadership (etcd; never with SQLite)?
 * fs_store_on_deposed() - call @fn(@arg) once when it does (any thread; no-op with
 * SQLite).
 */
const char *fs_store_leader(const struct fs_store *st);
/*
 * fs_store_config() - with etcd, this head's configuration fingerprint into @mine and the
 * leader's (standing by) or the previous leader's (leading) into @leader, "" if unknown
 * (fs_store_etcd_config()); both "" otherwise. FS_CONFIG_FINGERPRINT_LEN + 1 bytes each.
 */
void fs_store_config(struct fs_store *st, char *mine, char *leader);
bool fs_store_deposed(const struct fs_store *st);
void fs_store_on_deposed(struct fs_store *st, void (*fn)(void *arg), void *arg);

/* fs_store_close() - close the database and release the directory (or the leadership).
 * NULL is fine. */
void fs_store_close(struct fs_store *st);

/* What fs_store_restore() found. */
struct fs_restore_stats {
	size_t jobs, active, set_aside, servers, events, accounting, staged;
};

/*
 * fs_store_restore() - load ctx->store into ctx->cluster (fresh, built from the
 * configuration): events, sequences, server health and isolation, job records with
 * their placements (sched_*_load rules: what a changed configuration no longer fits
 * is requeued or failed, with an event), then a scheduling pass, then the staged
 * uploads are applied as their release would have. Call before the mount is up,
 * without ctx->lock.
 *
 * A job, server or cluster (meta) record that cannot be read (malformed: a loader's
 * bug, a hand edit, a record of a newer ascendfs), and a staged upload this ascendfs
 * cannot replay (a kind, key or extension it never writes), is logged, each with its
 * serial or name and why, and is never deleted. Without @set_aside the restore then fails with -EBADMSG and
 * changes nothing (slurmctld likewise refuses state files it cannot read, unless -i).
 * A job's closed history record (table job_runs) that cannot be read is one too.
 * With @set_aside (--ignore-state-errors) each is moved, as it was, to the store's
 * table unrestored(id, kind "job", "server", "meta", "staged" or "job_run", key: serial,
 * name, "cluster", "<staged kind> <staged key>" or "<serial> <run>", doc: the record or
 * the upload's body, reason, time_usec), stats->set_aside counts them, and the restore
 * goes on without them: the job is not there (its history records go with it, as
 * "job_run"), the server starts from the inventory, the job lacks that generation in its
 * history. A server record of a server no longer in the inventory is skipped and left in
 * its table.
 *
 * Returns 0 or -EIO (the file cannot be read; @why says so), -EBADMSG (records cannot
 * be read and @set_aside is false; @why counts them and says what to do), -EUCLEAN
 * (the restored state breaks an invariant), -ENOMEM.
 */
int fs_store_restore(struct fs_ctx *ctx, uint64_t now_usec, bool set_aside,
		     struct fs_restore_stats *stats, char *why);

/*
 * ---- job records decoded in parallel (fs_decode.c), for fs_store_restore() ----
 * One slot per record: @text and @len (owned by the caller) in; sched_job_decode()'s
 * result out in @r, @decoded (new, or NULL) and @reason.
 */
struct fs_decode_slot {
	char *text;
	size_t len;
	int64_t serial; /* the row's, for the log */
	char name[CONF_NAME_MAX + 1]; /* the row's, for the log (truncated) */
	int r;
	struct sched_job_decoded *decoded;
	char reason[SCHED_REASON_MAX];
};

/*
 * fs_decode_threads() - how many threads decode: the CPUs this process may run on
 * (its affinity mask), at most 8.
 */
unsigned fs_decode_threads(void);

/*
 * fs_decode_jobs() - decode @count slots on up to @threads threads, the caller's among
 * them; returns when every slot is done (a thread that cannot be started leaves its
 * share to the others). Touches nothing but the slots.
 */
void fs_decode_jobs(struct fs_decode_slot *slots, size_t count, unsigned threads);

/*
 * fs_store_start() - start the committer thread (no-op without a store). 0 or -errno.
 * May be called again after fs_store_stop() while no other thread runs (main.c stops
 * it over fuse_session_mount() and fuse_daemonize(), which fork: no thread may hold an
 * allocator's lock then, and a fork keeps no thread).
 */
int fs_store_start(struct fs_ctx *ctx);

/* fs_store_stop() - write what is left and stop the committer (after unmounting). */
void fs_store_stop(struct fs_ctx *ctx);

/* fs_store_note_change() - called by fs_changed() (ctx->lock held). */
void fs_store_note_change(struct fs_ctx *ctx);

/*
 * fs_store_sync() - wait until the changes this thread made since its last call are
 * durable. Call without ctx->lock, before a FUSE request that changed state returns.
 * Returns 0 (durable, or nothing to wait for, or no store) or -EIO (the write failed:
 * the change is in memory but may not survive a restart).
 */
int fs_store_sync(struct fs_ctx *ctx);

/*
 * fs_store_durable_locked() - wait until the state as of cluster version @version is
 * written: what compute servers act on is shown only once durable, so that no server
 * runs a placement a crash, or a head that loses its lease before etcd's quorum is back,
 * would lose (fs_ops.c: nodes/<server>/jobs). Caller holds ctx->lock (released while
 * waiting, as by fs_store_sync()). Returns 0 (written, or no store, or a standby's view,
 * durable by nature) or -EIO: its write failed, the store fails now (the last write
 * did; answered at once, not after the next try), or the committer stopped.
 */
int fs_store_durable_locked(struct fs_ctx *ctx, uint64_t version);

/*
 * fs_store_when_durable() - instead of fs_store_sync()'s wait: once the changes this
 * thread made since its last call are written, the committer calls @fn(@ctx, @arg, true)
 * on its own thread without ctx->lock; when their write failed, or the committer stopped
 * first, @fn(@ctx, @arg, false). @fn owns @arg from then on and must not wait for a
 * change. For a request nobody waits on (a RELEASE): its worker thread goes back to
 * the requests. Call without ctx->lock. Returns 0, or -EAGAIN without a store or a
 * change to wait for, or -ENOMEM: @fn is then not called (wait with fs_store_sync()).
 */
int fs_store_when_durable(struct fs_ctx *ctx, void (*fn)(struct fs_ctx *, void *, bool),
			  void *arg);

/*
 * fs_pass_run_owed() - run the scheduling pass that deferred requests owe, if any
 * (sched_pass_run_owed(); the daemon defers passes, see ascend_sched.h), and when it
 * changed anything wake the notifier, the committer and the checkpoint scanner as
 * fs_changed() does (without a ticket for this thread). Caller holds ctx->lock. Run by
 * the committer before each batch (after the last pass's cost, while submissions keep
 * coming: fs_commit.c), by fs_store_sync() without a store, by the heartbeat thread,
 * before each further line of one ctl write, by a request that reads what a pass
 * decides (wait_for_closing_uploads, fs_ops.c; not the notify helper's, nor a lookup
 * of a spec being written), and by each HTTP read (fs_http.c). Notes the cost of a
 * pass that ran in ctx->pass_cost_usec and its end in ctx->pass_end_usec.
 */
void fs_pass_run_owed(struct fs_ctx *ctx);

/*
 * ---- specs open for writing (fs_uploads.c); ctx->lock held for all ----
 * Each costs the same however many uploads are open.
 *
 * fs_upload_add() - list @u (filled in: name, uid; owned by its handle, which frees it
 * after fs_upload_remove()) as job @u->name's one writer. @max_per_user > 0: refuse
 * when @u->uid already holds that many (0: no limit, for root and operators). Returns 0,
 * -EBUSY (an upload of that name is open), -EMFILE (the user's limit) or -ENOMEM;
 * nothing changed on failure.
 */
int fs_upload_add(struct fs_ctx *ctx, struct fs_upload *u, unsigned max_per_user);

/*
 * How long a request that depends on a closed file (its close() returned, the kernel's
 * RELEASE, sent after it, not yet here) waits for that release before going on without
 * it: a lookup of a job whose upload is closing (fs_ops.c), a create at the user's upload
 * limit (below), an open at the user's bound on open files (fs_handle_wait_release()).
 */
#define FS_RELEASE_WAIT_MSEC 2000

/*
 * fs_upload_add_after_releases() - for a create that fs_upload_add() refused with
 * -EMFILE: while one of @u->uid's uploads is closing, closed within FS_RELEASE_WAIT_MSEC,
 * wait (ctx->lock dropped meanwhile) for releases and try again, up to that long. A
 * close() that returned makes room, however late its RELEASE comes. One request per
 * user waits; the others, and a user whose uploads are all held open, are answered at
 * once. Never waits in single-threaded mode (nobody could release). Returns what the
 * last fs_upload_add() returned.
 */
int fs_upload_add_after_releases(struct fs_ctx *ctx, struct fs_upload *u, unsigned max_per_user);

/* fs_upload_set_closing() - @u (listed) was flushed (@closing) or written since (!@closing)
 * at @now_usec; keeps its user's closing_count. */
void fs_upload_set_closing(struct fs_ctx *ctx, struct fs_upload *u, bool closing,
			   uint64_t now_usec);

/* fs_upload_remove() - unlist @u (not freed); one not listed is ignored. */
void fs_upload_remove(struct fs_ctx *ctx, struct fs_upload *u);

/* fs_upload_find() - the upload of job @name (borrowed), or NULL. */
struct fs_upload *fs_upload_find(const struct fs_ctx *ctx, const char *name);

/* fs_upload_count() - how many uploads @uid holds open. */
unsigned fs_upload_count(const struct fs_ctx *ctx, uid_t uid);

/* fs_uploads_free_all() - at exit: frees every listed upload and the indexes. */
void fs_uploads_free_all(struct fs_ctx *ctx);

/*
 * fs_stage_put() - stage an upload a close() accepted (ctx->lock held): replaces one of
 * the same @kind and @key. Strings and @groups (@group_count entries) are copied.
 * The next batch writes this one row (a full rewrite only after a failed write): the
 * cost does not depend on how many others are staged. No-op without a store. Returns 0
 * or -ENOMEM (nothing changed).
 */
int fs_stage_put(struct fs_ctx *ctx, const char *kind, const char *key, const char *ext,
		 uid_t uid, gid_t gid, const gid_t *groups, size_t group_count, const char *body,
		 size_t len);

/*
 * fs_stage_drop() - the upload was applied or refused at release (ctx->lock held); the
 * next batch deletes its row. Nothing staged under @kind, @key: no-op. Out of memory for
 * the deletion: the next batch rewrites the staged table whole.
 */
void fs_stage_drop(struct fs_ctx *ctx, const char *kind, const char *key);

/* fs_stage_free_all() - at exit. */
void fs_stage_free_all(struct fs_ctx *ctx);

/*
 * fs_staged_replay() - apply staged upload @s (borrowed) as its release would have: a
 * spec is submitted (or its rejection recorded), a quota set. Used by the restore;
 * takes ctx->lock itself.
 */
void fs_staged_replay(struct fs_ctx *ctx, const struct fs_staged *s);

/*
 * fs_checkpoint_newest() - the newest MindSpore checkpoint ("<prefix>-<epoch>_<step>.ckpt")
 * in @dir or its immediate subdirectories. *@ret_step orders checkpoints (epoch in the
 * high 32 bits, step in the low); *@ret_path (size @len) is the file, named below @dir
 * as given; *@ret_mtime_usec (NULL allowed) its modification time, microseconds since
 * the epoch. Nothing inside the mount (@mount, @mount_dev: see fs_checkpoint_dir_check())
 * is read: a @dir that resolves into it is refused, and entries that lead into it
 * (symlinks, a bind mount of it) are skipped, as they are when the scan meets them, so
 * what changed after submit counts. Reads the disk; call without ctx->lock.
 * Returns 0, -ENOENT (none found, or no such directory), -EXDEV (@dir lies inside the
 * mount), or fs_checkpoint_dir_check()'s other errors.
 */
int fs_checkpoint_newest(const char *dir, const char *mount, dev_t mount_dev, uint64_t *ret_step,
			 char *ret_path, size_t len, uint64_t *ret_mtime_usec);

/*
 * fs_checkpoint_dir_check() - does checkpoint directory @dir (absolute) lie outside the
 * daemon's mount? The mount is @mount (absolute, resolved, no trailing '/'; NULL: no name
 * check) and @mount_dev (its device, from /proc/self/mountinfo; 0: unknown, no device
 * check): a path inside it by name, or any object on its device (a bind mount of it
 * elsewhere), is inside. @dir is resolved component by component like realpath(3) up to
 * its nearest existing parent (symlinks followed, at most 40); each component is
 * compared with @mount by name BEFORE it is opened, and opened alone (O_PATH|O_NOFOLLOW)
 * and its device read from the kernel's cache (statx AT_STATX_DONT_SYNC) before anything
 * below it is looked up, so the check never issues a request to the mount, and may run
 * on a FUSE worker. Components past the nearest existing parent are taken as written.
 * *@ret_resolved (size @len; NULL allowed) gets the resolved path, also on -EXDEV. Reads
 * the disk: call without ctx->lock. Returns 0, -EXDEV (inside the mount), -EINVAL (not
 * absolute), -ELOOP, -ENAMETOOLONG.
 */
int fs_checkpoint_dir_check(const char *dir, const char *mount, dev_t mount_dev,
			    char *ret_resolved, size_t len);

/*
 * fs_queue_check_groups() - may a caller submit to queue @q (borrowed)? Yes for root
 * (@uid 0), for a queue without `groups`, and for a member of one of the queue's groups:
 * its primary @gid or one of @groups (@group_count supplementary gids; NULL when 0) is
 * the gid of a group named in q->groups, resolved with getgrnam_r (a name that does not
 * resolve admits nobody). May block on NSS (e.g. LDAP): call without ctx->lock.
 * Returns 0, -EACCES with the sentence in @why (SCHED_REASON_MAX), or -ENOMEM.
 */
int fs_queue_check_groups(const struct conf_queue *q, uid_t uid, gid_t gid, const gid_t *groups,
			  size_t group_count, char *why);

/*
 * fs_config_warnings() - what in configuration @conf (borrowed) has no effect, found at
 * start: a queue's group that does not resolve (getgrnam_r: no such group, so nobody
 * submits to the queue through it), a queue quota_npus while
 * resource.enable_quota_limit is false. *@ret (new, caller frees; NULL when there is
 * nothing) gets one "# warning: <text>\n" line each, the form cluster/config shows
 * them in. May block on NSS: call without ctx->lock. Returns the count or -ENOMEM.
 */
int fs_config_warnings(const struct conf_cluster *conf, char **ret);

/*
 * fs_operator_gid() - the gid of cluster.operator_group of @conf (borrowed) into *@ret,
 * resolved with getgrnam_r. May block on NSS: call without ctx->lock (the configuration's
 * operator_group never changes while the daemon runs, so reading it needs no lock).
 * Returns 0, -ENOENT (none configured, or no such group: it admits nobody) or -ENOMEM.
 */
int fs_operator_gid(const struct conf_cluster *conf, gid_t *ret);

/*
 * fs_groups_matter() - does any rule of configuration @conf (borrowed) read a caller's
 * supplementary groups: cluster.operator_group, or a queue with `groups`? When not, the
 * daemon does not read them (a read of /proc per spec written): what is kept with a
 * staged spec then has none, and a restart with a configuration that adds such a rule
 * checks that spec with its primary group only (refused rather than wrongly admitted).
 */
bool fs_groups_matter(const struct conf_cluster *conf);

/*
 * fs_may_operate() - may a caller do what root may on the cluster (write node health,
 * node and cluster ctl, queue quotas)? True for @uid 0, and for a member of
 * cluster.operator_group: its primary @gid or one of @groups (@group_count supplementary
 * gids, as fuse_req_getgroups() reported them; NULL when 0) is that group's gid. False when no
 * group is configured, or it does not resolve, or memory ran out. May block on NSS: call
 * without ctx->lock.
 */
bool fs_may_operate(const struct conf_cluster *conf, uid_t uid, gid_t gid, const gid_t *groups,
		    size_t group_count);

/*
 * A process, named so that the name outlives its threads and is never another process's:
 * the thread group id (what getpid() returns in it) and when the group started (clock
 * ticks since boot, /proc/<pid>/stat field 22), so a pid recycled after the process
 * exited names someone else. { 0, 0 } = unknown.
 */
struct fs_proc_id {
	pid_t tgid;
	uint64_t start_ticks;
};

/*
 * fs_proc_id_of() - the process of thread @tid (a FUSE request's pid, which names the
 * calling thread) into *@ret, from /proc; call while that thread's request is in flight,
 * so it is alive. One read of /proc/<tid>/stat when its group has one thread (cp, a
 * shell) or it was seen before (a cache of 256 threads, by tid and start); the group
 * (/proc/<tid>/status) and its leader's start otherwise. Any thread; the cache has its
 * own lock. Returns 0, -ESRCH (@tid 0, which the kernel sends for a caller outside the
 * daemon's pid namespace, or no such thread), or -errno of reading /proc; *@ret
 * untouched on failure.
 */
int fs_proc_id_of(pid_t tid, struct fs_proc_id *ret);

/* fs_proc_id_equal() - do @a and @b (borrowed) name the same process? */
bool fs_proc_id_equal(const struct fs_proc_id *a, const struct fs_proc_id *b);

/*
 * fs_now_usec() - microseconds since the epoch, stepping with CLOCK_MONOTONIC from the
 * wall clock read at the first call (the only clock the daemon's state sees).
 */
uint64_t fs_now_usec(void);

/* ---- time across clock steps (fs_clock.c) ---- */

/*
 * At most this much downtime counts toward time_limit and stop deadlines when the head
 * rebooted between two daemons (only the wall clock spans that gap, and it may have
 * stepped). Within one boot CLOCK_BOOTTIME measures the gap exactly.
 */
#define FS_RESTART_DOWNTIME_MAX_SEC 3600u

/*
 * fs_cond_init() - pthread_cond_init() of @cv on CLOCK_MONOTONIC: pass it deadlines from
 * fs_deadline_in() only, so that a wall clock step neither cuts a wait short nor makes
 * it last a day. Returns 0 or a negative errno from pthread_cond_init().
 */
int fs_cond_init(pthread_cond_t *cv);

/* fs_deadline_in() - @ts := CLOCK_MONOTONIC now + @msec (>= 0), for an fs_cond_init() cv. */
void fs_deadline_in(struct timespec *ts, long msec);
/* fs_deadline_in_usec() - the same, @usec microseconds from now. */
void fs_deadline_in_usec(struct timespec *ts, uint64_t usec);

/* fs_deadline_passed() - has CLOCK_MONOTONIC reached @ts (from fs_deadline_in())? */
bool fs_deadline_passed(const struct timespec *ts);

/*
 * A point in time that a later daemon can measure from: the daemon's clock
 * (fs_now_usec()), CLOCK_BOOTTIME, both in usec, and the kernel's boot id ("" when
 * unknown). The state store writes one with every batch (meta key "clock").
 */
struct fs_clock_mark {
	uint64_t clock_usec;
	uint64_t boottime_usec;
	char boot_id[40];
};

/* fs_clock_mark_now() - the mark of this moment into @m. */
void fs_clock_mark_now(struct fs_clock_mark *m);

/*
 * fs_clock_mark_format() - @m as one line "CLOCK BOOTTIME BOOT_ID" ("-" for no boot id)
 * into @buf of @len bytes (64 are enough). -ENOSPC when it does not fit.
 */
int fs_clock_mark_format(const struct fs_clock_mark *m, char *buf, size_t len);

/*
 * fs_clock_mark_parse() - the mark that fs_clock_mark_format() wrote, from @text
 * (NUL-terminated; NULL allowed) into @ret. -EINVAL, @ret untouched, for anything else
 * (a clock of 0, a value past INT64_MAX, trailing bytes).
 */
int fs_clock_mark_parse(const char *text, struct fs_clock_mark *ret);

/*
 * fs_clock_restart_shift() - how far the wall clock stepped between mark @saved (the last
 * write of the previous daemon) and @now (this daemon's start), in usec; positive when it
 * moved forward by more than the real time between them. The real time between them, the
 * downtime, goes to @ret_downtime_usec (NULL allowed): CLOCK_BOOTTIME's difference when
 * both marks are of one boot (@ret_measured true; NULL allowed), otherwise the wall
 * clock's, at least 0 and at most FS_RESTART_DOWNTIME_MAX_SEC. Saved timestamps plus the
 * result read as if the clock had never stepped (sched_restore_shift()).
 */
int64_t fs_clock_restart_shift(const struct fs_clock_mark *saved, const struct fs_clock_mark *now,
			       uint64_t *ret_downtime_usec, bool *ret_measured);

/*
 * fs_text_escape() - user-supplied bytes @in (a path, a ctl line; NUL-terminated) as they
 * may appear in a log line or an event's reason: printable ASCII as is, '\\' and '"'
 * backslashed, every other byte (control characters, newlines, non-ASCII) as \xNN, so
 * nobody can forge a log line or break an event's JSON. Writes at most @len bytes
 * including the NUL into @out (@len > 0); a longer result is cut at a whole escape and
 * ends in "...". Returns @out.
 */
char *fs_text_escape(const char *in, char *out, size_t len);

/*
 * fs_log() - log one line to stderr at @level (0 error, 1 warning, 2 info, 3 debug) if
 * @ctx (NULL: always) enables it, in one write(): "<UTC time> ascendfs <level>: <message>",
 * or, when stderr is the journal (JOURNAL_STREAM, conf_journal_stream_matches()), the
 * syslog priority instead of time and name: "<3>error: ", "<4>warning: ", "<6>" (info),
 * "<7>debug: ", then the message. Any thread; takes no lock.
 */
void fs_log(const struct fs_ctx *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * fs_operations() - the FUSE low-level operations table (fs_lowlevel.c). The session's
 * user data must be the struct fs_ctx, its inode table initialized (fs_inodes_init()).
 */
struct fuse_lowlevel_ops;
const struct fuse_lowlevel_ops *fs_operations(void);

#endif
