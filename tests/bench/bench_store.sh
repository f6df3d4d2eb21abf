#!/usr/bin/env bash
# Durable state (issue 5): submissions per second through the mount with every close
# committed to SQLite before it returns, against the same daemon with --state-dir=none
# in the same run; the restart time with 10,000 jobs in the store, against a start on an
# empty store; and the daemon's memory (VmRSS, VmHWM) with 10,000 jobs on 1,024 servers
# (8,192 NPUs), after every file of the mount was read (and 3 s of quiet), against the
# same cluster empty (every file read too) in the same run. Prints figures and ratios; asserts nothing about
# time.
# Usage: bench_store.sh ASCENDFS BENCH_SUBMIT SRCDIR  (BENCH_JOBS=N total, default 10000)
#   BENCH_STORE_PARTS="throughput memory" (default both): which parts run
#   BENCH_MEM_JOBS="10000 100000" (default 10000): the job counts of the memory part
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
JOBS=${BENCH_JOBS:-10000}
CLIENTS=32
BATCH=2000
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/bench/bench_lib.sh"
it_setup
CONFIG=$SRC/examples/ascend_cluster.yaml
STATE=$IT_WORK/state

PARTS=${BENCH_STORE_PARTS:-throughput memory}
MEM_JOBS=${BENCH_MEM_JOBS:-$JOBS}

msec() { echo $(($(date +%s%N) / 1000000)); }

# start with $@ extra args; START_MS = milliseconds from exec to a usable mount
start_timed() {
	local t0
	t0=$(msec)
	it_start "$ASCENDFS" "$CONFIG" "$@" >/dev/null || return 1
	START_MS=$(($(msec) - t0))
}

submit() { # PREFIX COUNT -> "ok failed seconds rate"
	"$SUBMIT" "$IT_MNT" "$1" "$2" "$CLIENTS"
}

if [[ " $PARTS " == *" throughput "* ]]; then
echo "# $BATCH submissions of 'npus: 1' from $CLIENTS threads (open+write+close, as cp)"
start_timed --state-dir=none || exit 1
read -r ok_m fail_m sec_m rate_m < <(submit mem $BATCH)
it_stop > >(grep -v '^ok ' >&2)

start_timed --state-dir "$STATE" || exit 1
start_ms_empty=$START_MS
read -r ok_d fail_d sec_d rate_d < <(submit dur $BATCH)
printf '%-34s %8s %8s %10s\n' "" "ok" "seconds" "jobs/s"
printf '%-34s %8s %8s %10s\n' "in memory (--state-dir=none)" "$ok_m" "$sec_m" "$rate_m"
printf '%-34s %8s %8s %10s\n' "durable (SQLite WAL, fsync)" "$ok_d" "$sec_d" "$rate_d"
awk -v a="$rate_d" -v b="$rate_m" 'BEGIN { printf "durable / in memory: %.2fx\n", a / b }'
check_eq "every durable submission acknowledged" "$BATCH 0" "$ok_d $fail_d"

# fill the store up to $JOBS job records, then restart on it
left=$((JOBS - BATCH))
n=0
t0=$(msec)
while [ "$left" -gt 0 ]; do
	k=$((left > BATCH ? BATCH : left))
	read -r ok _ _ rate < <(submit "fill$n" "$k")
	echo "  durable, $((BATCH * (n + 1))) to $((BATCH * (n + 1) + k)) jobs held: $rate jobs/s"
	left=$((left - k))
	n=$((n + 1))
done
echo "  (every submission runs a scheduling pass over all pending jobs; they pile up here)"
records=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(d['jobs'].values()))" \
	"$IT_MNT/cluster/status")
it_stop > >(grep -v '^ok ' >&2)
db_kib=$(( $(stat -c %s "$STATE/ascendfs.db") / 1024 ))
start_timed --state-dir "$STATE" || exit 1
restart_ms=$START_MS
restored=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(d['jobs'].values()))" \
	"$IT_MNT/cluster/status")
line=$(grep 'restored' "$IT_LOG" | tail -1)
printf '\nrestart with %s job records in the store (ascendfs.db %s KiB)\n' "$records" "$db_kib"
printf '  exec to usable mount: %s ms (empty store: %s ms)\n' "$restart_ms" "$start_ms_empty"
printf '  daemon: %s\n' "${line#*info: }"
check_eq "every job record restored" "$records" "$restored"
it_stop > >(grep -v '^ok ' >&2)
fi

# ---- memory: 1,024 Atlas 800T A2 servers (8,192 NPUs) under 64 leaf switches ----------
[[ " $PARTS " == *" memory "* ]] || { it_finish; exit 0; }
status_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$IT_PID/status"; }
# every file of the mount, read whole (the render caches and snapshots of each kind)
read_all() { find "$IT_MNT" -type f -exec cat {} + >/dev/null 2>&1; }
BIG=$IT_WORK/cluster1024.yaml
{
	printf 'cluster:\n  name: bench-8192\nresource:\n  total_npu: 8192\nservers:\n'
	for s in $(seq 1 1024); do
		printf '  - {name: node-%04d, host_ip: 10.1.%d.%d, type: atlas800t-a2, switch: leaf-%d}\n' \
			"$s" $((s / 200)) $((s % 200 + 1)) $(((s - 1) / 16 + 1))
	done
} >"$BIG"
CONFIG=$BIG
printf '\ndaemon memory, 1,024 servers / 8,192 NPUs, after every file was read (MiB):\n'
printf '%-10s %8s %8s %8s %8s %10s %8s\n' jobs "RSS" "HWM" "empty" "emptyHWM" "KiB/job" "read s"
for mem_jobs in $MEM_JOBS; do
	rm -rf "$IT_WORK/state-big"
	start_timed --state-dir "$IT_WORK/state-big" || exit 1
	read_all
	sleep 3
	rss_empty=$(status_kib VmRSS)
	hwm_empty=$(status_kib VmHWM)
	left=$mem_jobs
	n=0
	while [ "$left" -gt 0 ]; do
		k=$((left > BATCH ? BATCH : left))
		submit "big$n" "$k" >/dev/null
		left=$((left - k))
		n=$((n + 1))
	done
	t0=$(msec)
	read_all
	read_ms=$(($(msec) - t0))
	sleep 3 # the daemon trims its heap a second after a burst (fs_memory.c)
	rss_full=$(status_kib VmRSS)
	hwm_full=$(status_kib VmHWM)
	awk -v j="$mem_jobs" -v a="$rss_full" -v h="$hwm_full" -v b="$rss_empty" -v hb="$hwm_empty" \
		-v ms="$read_ms" 'BEGIN { printf "%-10s %8.1f %8.1f %8.1f %8.1f %10.2f %8.1f\n",
		j, a / 1024, h / 1024, b / 1024, hb / 1024, (a - b) / j, ms / 1000 }'
	bench_row "daemon RSS at 8,192 NPUs and $mem_jobs jobs, every file read" \
		"$((rss_full / 1024)) MiB (high water $((hwm_full / 1024)) MiB)" \
		"empty cluster: $((rss_empty / 1024)) MiB" "< 60 MiB; < 600 MiB at 100,000 jobs"
	it_stop > >(grep -v '^ok ' >&2)
done
it_finish
