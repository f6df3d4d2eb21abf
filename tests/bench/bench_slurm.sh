#!/usr/bin/env bash
# Peer side by side (issue 16): the same bursts of jobs into the same inventory, placed by
# ascendfs and by Slurm 22.05 (Debian's slurm-wlm), in one run; prints the time until
# every job of the burst is running or pending with a reason, for both, and the ratio.
#
# Inventory: SERVERS (1,024) Atlas 800T A2 servers of 8 NPUs under leaf switches of 16.
# Bursts: 1,000 and 10,000 jobs of 1/2/4/8 NPUs, one seeded mix used by both.
#
# ascendfs: the daemon (durable, --state-dir) on it_cluster_a2's configuration; the
#   burst is 32 threads doing open+write+close of "npus: N" specs into jobs/ (as cp),
#   then a poll of each job's status.json until it is running, or pending with a reason
#   (tests/bench/slurm/burst_place.c).
# Slurm: one slurmctld and SERVERS slurmd processes on loopback (Debian's build runs
#   several slurmd on one host: `slurmd -N node-0001`, one Port each), GRES npu:8 per
#   node (gres.conf Count=8, no device files: countable GRES, not CPUs standing in),
#   topology/tree with the same leaf switches, select/cons_tres, FIFO priority, no
#   accounting, no prolog/epilog, SchedulerParameters tuned for bursts (defer,
#   sched_min_interval, deep queue, bf_*; see slurm_conf below). Each job is a real batch
#   job (`sbatch --wrap 'exec sleep 100000'`, slurmstepd + sleep start on its node),
#   submitted from SUBMITTERS parallel loops of sbatch; placed when squeue shows every job
#   RUNNING or PENDING with a reason other than None. slurmd and its job processes run at
#   nice 19: on a real cluster they run on the compute nodes, not on the controller's
#   cores, which they share here.
#
# Both clocks start at the first submission and stop at the poll that saw the burst
# placed (an upper bound; Slurm is polled every 0.2 s, each squeue itself taking time,
# ascendfs every 10 ms). CPU seconds used meanwhile: the ascendfs daemon; slurmctld with
# munged (which decodes every credential); the Slurm node side (slurmd, slurmstepd,
# sleep); from cgroup cpu.stat and /proc. On a loaded machine CPU seconds vary less than
# wall time.
#
# Run as root, with slurm-wlm and munge installed (it skips with 77 otherwise):
#   apt-get install -y slurm-wlm munge
#   meson test -C build --benchmark -v slurm
# or directly: tests/bench/bench_slurm.sh build/fs/ascendfs build/tests/bench/burst_place .
# Environment: BENCH_SLURM_BURSTS ("1000 10000"), BENCH_SLURM_SERVERS (1024),
#   BENCH_SLURM_RUNS (1: repeats of every burst, alternating ascendfs and Slurm),
#   BENCH_SLURM_SUBMITTERS (16 sbatch loops), BENCH_SLURM_SEED (16),
#   BENCH_SLURM_SCHED (replaces the SchedulerParameters line).
# Memory: about 1.5 MiB per slurmd and 2 MiB per running Slurm job (at 10,000 jobs about
# 2,200 run); it needs some 6 GiB free and room for ~12,000 more tasks under pid_max.
# Everything it starts (munged, slurmctld, slurmd and their jobs, in one cgroup of their
# own; the ascendfs daemon and its mount; the temp dir) goes on every exit.
set -u
ASCENDFS=$(realpath "$1")
PLACE=$(realpath "$2")
SRC=$(realpath "$3")
SERVERS=${BENCH_SLURM_SERVERS:-1024}
BURSTS=${BENCH_SLURM_BURSTS:-1000 10000}
RUNS=${BENCH_SLURM_RUNS:-1}
SUBMITTERS=${BENCH_SLURM_SUBMITTERS:-16}
SEED=${BENCH_SLURM_SEED:-16}
THREADS=32

for p in slurmctld slurmd slurmstepd sbatch squeue scancel sinfo munged; do
	if ! command -v "$p" >/dev/null; then
		echo "SKIP: $p not found: Slurm and munge are not installed" \
			"(apt-get install -y slurm-wlm munge)"
		exit 77
	fi
done
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: runs as root (slurmd starts jobs as their owner; munged, cgroups)"
	exit 77
fi
CGROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$CGROOT" ] || [ ! -w "$CGROOT$(sed -n 's/^0:://p' /proc/self/cgroup)" ]; then
	echo "SKIP: needs a writable cgroup2 hierarchy to hold (and stop) what Slurm starts"
	exit 77
fi

. "$SRC/tests/integration/lib.sh"
it_setup
SW=$IT_WORK/slurm
CG=$CGROOT$(sed -n 's/^0:://p' /proc/self/cgroup)
CG=${CG%/}/ascendfs-bench-slurm-$$
SLURM_PIDS=""
MUNGED_PID=""
CTLD_PID=""

slurm_cleanup() {
	local p
	set +e
	# the daemons by pid first, then whatever they left (slurmstepd, the jobs' sleep)
	for p in $CTLD_PID $SLURM_PIDS $MUNGED_PID; do kill -TERM "$p" 2>/dev/null; done
	wait_until 10 pids_gone $CTLD_PID $SLURM_PIDS $MUNGED_PID
	[ -d "$CG" ] && it_cgroup_kill "$CG"
	# 1,024 slurmd on a loaded machine may take longer to go than it_cgroup_kill waits
	if [ -d "$CG" ]; then
		echo 1 >"$CG/cgroup.kill"
		wait_until 120 grep -q "populated 0" "$CG/cgroup.events"
		find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	fi
}
pids_gone() {
	local p
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}
trap 'slurm_cleanup; it_cleanup' EXIT

msec() { echo $(($(date +%s%N) / 1000000)); }
cg_cpu_usec() { awk '$1 == "usage_usec" { print $2 }' "$1/cpu.stat" 2>/dev/null || echo 0; }
pid_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)

# run "$@" in the background inside cgroup $1 (below $CG), its output appended to
# $SW/log/$1.out; sets BG_PID
start_in_cgroup() {
	local cg=$CG/$1 out=$SW/log/$1.out
	shift
	mkdir -p "$cg"
	(echo "$BASHPID" >"$cg/cgroup.procs" && exec "$@" >>"$out" 2>&1 </dev/null) &
	BG_PID=$!
	disown "$BG_PID" # stopped by slurm_cleanup, reported by nobody

}

# ---- the inventory, twice: ascendfs's configuration and Slurm's ----------------------
# the file it_cluster_a2 (tests/integration/lib.sh) writes, byte for byte, without its
# 10 forks a server (minutes for 1,024 on a loaded machine)
cluster_a2() { # FILE SERVERS
	awk -v n="$2" 'BEGIN {
		printf "cluster:\n  name: bench-%d\nresource:\n  total_npu: %d\nservers:\n", n * 8, n * 8
		for (s = 1; s <= n; s++) {
			printf "  - name: node-%02d\n    host_ip: 10.1.%d.%d\n    type: atlas800t-a2\n",
				s, int(s / 200), s % 200 + 1
			printf "    switch: leaf-%d\n    device_ips: [", int((s - 1) / 16) + 1
			for (d = 0; d < 8; d++)
				printf "%s10.30.%d.%d", (d ? ", " : ""), d, s
			printf "]\n"
		}
	}' >"$1"
}
CONFIG=$IT_WORK/cluster.yaml
cluster_a2 "$CONFIG" "$SERVERS"

free_range() { # PORT COUNT: true when no TCP socket listens in [PORT, PORT+COUNT]
	ss -Htln | awk -v lo="$1" -v hi=$(($1 + $2)) '{ n = split($4, a, ":"); p = a[n] + 0
		if (p >= lo && p <= hi) bad = 1 } END { exit bad }'
}
CTLD_PORT=""
for base in 26800 36800 46800 16800; do
	if free_range "$base" $((SERVERS + 20)); then
		CTLD_PORT=$base
		break
	fi
done
if [ -z "$CTLD_PORT" ]; then
	echo "# no free range of $((SERVERS + 20)) TCP ports on loopback"
	exit 1
fi
NODE_PORT=$((CTLD_PORT + 10))
last=$(printf 'node-%04d' "$SERVERS")
HOST=$(hostname -s)

SCHED=${BENCH_SLURM_SCHED:-defer,sched_min_interval=200000,batch_sched_delay=1,default_queue_depth=20000,partition_job_depth=0,sched_max_job_start=0,max_rpc_cnt=150,bf_continue,bf_interval=5,bf_max_job_test=20000,bf_resolution=600,bf_window=1440,bf_yield_interval=1000000}

mkdir -p "$SW/munge" "$SW/state" "$SW/spool" "$SW/run" "$SW/log" "$SW/cwd"
chmod 700 "$SW/munge"
dd if=/dev/urandom of="$SW/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$SW/munge/munge.key"
cat >"$SW/slurm.conf" <<EOF
# written by tests/bench/bench_slurm.sh; everything under $SW
ClusterName=ascendbench
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SW/munge/socket
CredType=cred/munge
StateSaveLocation=$SW/state
SlurmdSpoolDir=$SW/spool/%n
SlurmctldPidFile=$SW/run/slurmctld.pid
SlurmdPidFile=$SW/run/slurmd-%n.pid
SlurmctldLogFile=$SW/log/slurmctld.log
SlurmdLogFile=$SW/log/slurmd-%n.log
SlurmctldDebug=error
SlurmdDebug=error
# no accounting, no job completion log, no prolog/epilog, no health check
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
HealthCheckInterval=0
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
# placement: cores and countable NPUs per node, FIFO, backfill, leaf switches of 16
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=npu
PriorityType=priority/basic
SchedulerType=sched/backfill
SchedulerParameters=$SCHED
TopologyPlugin=topology/tree
# room for the 10,000 burst; loaded-machine timeouts; finished jobs leave quickly
MaxJobCount=100000
MinJobAge=2
MessageTimeout=60
SlurmdTimeout=600
SlurmctldTimeout=600
InactiveLimit=0
KillWait=5
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=node-[0001-$(printf %04d "$SERVERS")] NodeHostname=$HOST NodeAddr=127.0.0.1 Port=[$NODE_PORT-$((NODE_PORT + SERVERS - 1))] CPUs=192 RealMemory=1048576 Gres=npu:8 State=UNKNOWN
PartitionName=npu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$SW/gres.conf" <<EOF
AutoDetect=off
NodeName=node-[0001-$(printf %04d "$SERVERS")] Name=npu Count=8
EOF
{
	for l in $(seq 1 $(((SERVERS + 15) / 16))); do
		lo=$(((l - 1) * 16 + 1))
		hi=$((l * 16 > SERVERS ? SERVERS : l * 16))
		printf 'SwitchName=leaf-%d Nodes=node-[%04d-%04d]\n' "$l" "$lo" "$hi"
	done
	printf 'SwitchName=spine Switches=leaf-[1-%d]\n' $(((SERVERS + 15) / 16))
} >"$SW/topology.conf"
export SLURM_CONF=$SW/slurm.conf

# ---- start Slurm: munged, slurmctld, SERVERS slurmd ----------------------------------
echo "# Slurm $(slurmctld -V | awk '{ print $2 }'): slurmctld on 127.0.0.1:$CTLD_PORT," \
	"$SERVERS slurmd on ports $NODE_PORT-$((NODE_PORT + SERVERS - 1)), GRES npu:8 each"
echo "# SchedulerParameters=$SCHED"
start_in_cgroup munge munged -F -f --socket="$SW/munge/socket" \
	--key-file="$SW/munge/munge.key" --pid-file="$SW/munge/pid" \
	--log-file="$SW/munge/log" --seed-file="$SW/munge/seed" --num-threads=8
MUNGED_PID=$BG_PID
wait_until 10 test -S "$SW/munge/socket" || { echo "# munged did not start"; exit 1; }
start_in_cgroup ctld slurmctld -D -i -f "$SW/slurm.conf"
CTLD_PID=$BG_PID
wait_until 30 scontrol ping || { echo "# slurmctld did not answer; log:"; tail "$SW/log/slurmctld.log"; exit 1; }
t0=$(msec)
for s in $(seq 1 "$SERVERS"); do
	node=$(printf 'node-%04d' "$s")
	mkdir -p "$SW/spool/$node"
	start_in_cgroup nodes slurmd -D -f "$SW/slurm.conf" -N "$node"
	SLURM_PIDS="$SLURM_PIDS $BG_PID"
	[ $((s % 64)) = 0 ] && sleep 0.2
done
idle_nodes() { sinfo -h -N -t idle -o '%N' 2>/dev/null | wc -l; }
all_idle() { [ "$(idle_nodes)" -ge "$SERVERS" ]; }
no_jobs() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }
if ! wait_until 600 all_idle; then
	echo "# only $(idle_nodes) of $SERVERS nodes idle after 600 s; states:"
	sinfo -h -o '%T %D' | sed 's/^/#   /'
	exit 1
fi
# started at the usual priority (niced, their start takes minutes on a loaded machine);
# from now on they and the jobs they start (slurmstepd inherits it) yield to the rest
# shellcheck disable=SC2086 # a list of pids
renice -n 19 -p $SLURM_PIDS >/dev/null
echo "# $SERVERS slurmd registered, every node idle, in $((($(msec) - t0) / 1000)) s" \
	"($(awk -v a="$(cg_cpu_usec "$CG/nodes")" 'BEGIN { printf "%.0f", a / 1e6 }') s CPU)"

# ---- one burst each ----------------------------------------------------------------
mix_file() { # N -> file of N NPU counts, 1/2/4/8 uniformly, from SEED
	awk -v n="$1" -v seed="$SEED" 'BEGIN { srand(seed); split("1 2 4 8", a, " ")
		for (i = 0; i < n; i++) print a[int(rand() * 4) + 1] }' >"$IT_WORK/mix-$1"
	echo "$IT_WORK/mix-$1"
}

run_ascendfs() { # N MIX -> A_PLACED A_SUBMIT A_RUN A_PEND A_CPU
	local out c0
	# it_start waits 20 s for the mount; a loaded machine may need longer for 1,024 servers
	if ! it_start "$ASCENDFS" "$CONFIG" --state-dir "$IT_WORK/state-$1-$run" >"$IT_WORK/start.out"; then
		if ! wait_until 300 is_mounted "$IT_MNT" || ! wait_until 10 answers "$IT_MNT/jobs"; then
			echo "# ascendfs did not mount within 320 s:"
			sed 's/^/#   /' "$IT_WORK/start.out" | tail -20
			exit 1
		fi
	fi
	c0=$(pid_cpu_ticks "$IT_PID")
	out=$("$PLACE" "$IT_MNT" "b$1" "$2" "$THREADS" 900)
	A_CPU=$(awk -v a="$(pid_cpu_ticks "$IT_PID")" -v b="$c0" -v hz="$HZ" \
		'BEGIN { printf "%.1f", (a - b) / hz }')
	read -r ok failed A_SUBMIT A_PLACED A_RUN A_PEND <<<"$out"
	check_eq "ascendfs: every submission of the $1 burst acknowledged" "$1 0" "$ok $failed"
	it_stop > >(grep -v '^ok ' >&2)
	rm -rf "$IT_WORK/state-$1-$run"
}

slurm_counts() { # -> "total placed running"
	squeue -h -o '%T %r' 2>/dev/null | awk '{ n++ } $1 == "RUNNING" { r++; p++ }
		$1 == "PENDING" && $2 != "None" { p++ } END { print n + 0, p + 0, r + 0 }'
}

run_slurm() { # N MIX -> S_PLACED S_SUBMIT S_RUN S_PEND S_CPU_CTLD S_CPU_NODES
	local n=$1 mix=$2 t0 k c0 n0 total placed running fails=0 sub_done=""
	c0=$(($(cg_cpu_usec "$CG/ctld") + $(cg_cpu_usec "$CG/munge")))
	n0=$(cg_cpu_usec "$CG/nodes")
	t0=$(msec)
	local pids=""
	for k in $(seq 0 $((SUBMITTERS - 1))); do
		(
			cd "$SW/cwd" || exit 1
			awk -v k="$k" -v s="$SUBMITTERS" '(NR - 1) % s == k { print NR - 1, $1 }' "$mix" |
				while read -r i g; do
					sbatch -Q -J "b$n-$i" -o /dev/null -e /dev/null -N 1 -n 1 \
						--gres="npu:$g" --wrap 'exec sleep 100000' >/dev/null ||
						echo "sbatch b$n-$i failed" >>"$SW/log/submit-fail"
				done
		) &
		pids="$pids $!"
	done
	while :; do
		if [ -z "$sub_done" ]; then
			sub_done=1
			for k in $pids; do kill -0 "$k" 2>/dev/null && sub_done=""; done
			[ -n "$sub_done" ] && S_SUBMIT=$(awk -v a="$(msec)" -v b="$t0" 'BEGIN { printf "%.3f", (a - b) / 1000 }')
		fi
		read -r total placed running < <(slurm_counts)
		if [ -n "$sub_done" ] && [ "$total" -ge "$n" ] && [ "$placed" -ge "$total" ]; then
			break
		fi
		if [ -n "$sub_done" ] && [ $(($(msec) - t0)) -gt 1800000 ]; then
			echo "# Slurm: $placed of $total jobs placed after 1800 s"
			break
		fi
		sleep 0.2
	done
	S_PLACED=$(awk -v a="$(msec)" -v b="$t0" 'BEGIN { printf "%.3f", (a - b) / 1000 }')
	wait $pids
	S_RUN=$running
	S_PEND=$((total - running))
	S_CPU_CTLD=$(awk -v a="$(($(cg_cpu_usec "$CG/ctld") + $(cg_cpu_usec "$CG/munge")))" -v b="$c0" 'BEGIN { printf "%.1f", (a - b) / 1e6 }')
	S_CPU_NODES=$(awk -v a="$(cg_cpu_usec "$CG/nodes")" -v b="$n0" 'BEGIN { printf "%.1f", (a - b) / 1e6 }')
	fails=$( [ -f "$SW/log/submit-fail" ] && wc -l <"$SW/log/submit-fail" || echo 0)
	rm -f "$SW/log/submit-fail"
	check_eq "Slurm: every sbatch of the $n burst accepted, every job placed" \
		"0 $n $n" "$fails $total $placed"
	# empty the cluster for the next burst
	scancel --quiet -u root 2>/dev/null
	wait_until 300 no_jobs ||
		echo "# Slurm: jobs left 300 s after scancel: $(squeue -h | wc -l)"
	wait_until 300 all_idle ||
		echo "# Slurm: only $(idle_nodes) nodes idle 300 s after scancel"
}

results=()
for run in $(seq 1 "$RUNS"); do
	for n in $BURSTS; do
		mix=$(mix_file "$n")
		echo "# run $run, burst of $n: mix $(sort -n "$mix" | uniq -c | awk '{ printf "%s%sx%s NPU", s, $1, $2; s = ", " }'), $(awk '{ t += $1 } END { print t }' "$mix") NPUs asked of $((SERVERS * 8))"
		run_ascendfs "$n" "$mix"
		echo "#   ascendfs: submitted in $A_SUBMIT s, placed in $A_PLACED s ($A_RUN running, $A_PEND pending); daemon CPU $A_CPU s"
		run_slurm "$n" "$mix"
		echo "#   Slurm:    submitted in $S_SUBMIT s, placed in $S_PLACED s ($S_RUN running, $S_PEND pending); slurmctld+munged CPU $S_CPU_CTLD s, slurmd+jobs CPU $S_CPU_NODES s"
		results+=("$run $n $A_PLACED $S_PLACED $A_CPU $S_CPU_CTLD $A_RUN $S_RUN")
	done
done

printf '\n%-4s %7s %12s %12s %12s %14s %16s\n' run jobs "ascendfs s" "Slurm s" "Slurm/ascfs" \
	"CPU ascfs s" "CPU ctld+munge s"
for r in "${results[@]}"; do
	read -r run n a s ac sc ar sr <<<"$r"
	awk -v run="$run" -v n="$n" -v a="$a" -v s="$s" -v ac="$ac" -v sc="$sc" 'BEGIN {
		printf "%-4s %7s %12s %12s %11.1fx %14s %16s\n", run, n, a, s, (a > 0 ? s / a : 0), ac, sc }'
done
echo "(placed: from the first submission until every job is running or pending with a reason)"
it_finish
