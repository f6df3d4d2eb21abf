#!/usr/bin/env bash
# Durable state (issue 5): submissions per second through the mount with every close
# committed to SQLite before it returns, against the same daemon with --state-dir=none
# in the same run; the restart time with 10,000 jobs in the store, against a start on an
# empty store; and the daemon's memory (VmRSS) with 10,000 jobs on 1,024 servers (8,192
# NPUs) against the same cluster empty. Prints figures and ratios; asserts nothing about
# time.
# Usage: bench_store.sh ASCENDFS BENCH_SUBMIT SRCDIR  (BENCH_JOBS=N total, default 10000)
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
JOBS=${BENCH_JOBS:-10000}
CLIENTS=32
BATCH=2000
. "$SRC/tests/integration/lib.sh"
it_setup
CONFIG=$SRC/examples/ascend_cluster.yaml
STATE=$IT_WORK/state

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

echo "# $BATCH submissions of 'npus: 1' from $CLIENTS threads (open+write+close, as cp)"
start_timed --state-dir=none || exit 1
read -r ok_m fail_m sec_m rate_m < <(submit mem $BATCH)
it_stop >/dev/null

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
it_stop >/dev/null
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
it_stop >/dev/null

# ---- memory: 1,024 Atlas 800T A2 servers (8,192 NPUs) under 64 leaf switches ----------
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$IT_PID/status"; }
BIG=$IT_WORK/cluster1024.yaml
{
	printf 'cluster:\n  name: bench-8192\nresource:\n  total_npu: 8192\nservers:\n'
	for s in $(seq 1 1024); do
		printf '  - {name: node-%04d, host_ip: 10.1.%d.%d, type: atlas800t-a2, switch: leaf-%d}\n' \
			"$s" $((s / 200)) $((s % 200 + 1)) $(((s - 1) / 16 + 1))
	done
} >"$BIG"
CONFIG=$BIG
start_timed --state-dir "$IT_WORK/state-big" || exit 1
rss_empty=$(rss_kib)
left=$JOBS
n=0
while [ "$left" -gt 0 ]; do
	k=$((left > BATCH ? BATCH : left))
	submit "big$n" "$k" >/dev/null
	left=$((left - k))
	n=$((n + 1))
done
cat "$IT_MNT/cluster/status" >/dev/null
rss_full=$(rss_kib)
printf '\ndaemon memory (VmRSS), 1,024 servers / 8,192 NPUs: empty %s MiB, with %s jobs %s MiB' \
	$((rss_empty / 1024)) "$JOBS" $((rss_full / 1024))
awk -v a="$rss_full" -v b="$rss_empty" -v n="$JOBS" \
	'BEGIN { printf " (%.2fx; %.1f KiB per job)\n", a / b, (a - b) / n }'
it_stop >/dev/null
it_finish
