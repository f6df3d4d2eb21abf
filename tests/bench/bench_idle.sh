#!/usr/bin/env bash
# The idle daemon and a cancel under a long queue (issue 15 item 13): with 16 running
# jobs filling the cluster (128 NPUs) and PENDING jobs submitted behind them: how long
# the daemon stays busy after the submissions and the CPU that costs, the CPU it uses per
# second once nothing happens (utime + stime from /proc over IDLE_SEC seconds), and the
# latency of `echo cancel > jobs/<job>/ctl` on a running job (one pending job starts in
# its place). The same figures with 10 pending jobs are the reference, measured in the
# same run. Prints figures; asserts nothing about time.
# Usage: bench_idle.sh ASCENDFS BENCH_SUBMIT SRCDIR  (BENCH_PENDING=N, default 10000)
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
PENDING=${BENCH_PENDING:-10000}
IDLE_SEC=${BENCH_IDLE_SEC:-10}
CANCELS=5
. "$SRC/tests/integration/lib.sh"
it_setup
CONFIG=$SRC/examples/ascend_cluster.yaml
TICKS=$(getconf CLK_TCK)

usec() { echo $(($(date +%s%N) / 1000)); }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$IT_PID/stat"; }

# measure N: fills the cluster, submits N pending jobs, then sets
#   AFTER  "seconds cpu_ms": from the last submission until a second costs < 10 ms of CPU
#          (announcing the new jobs to inotify watchers), and the CPU spent meanwhile
#   IDLE   CPU ms per second over IDLE_SEC seconds after that
#   CANCEL "median max" ms of `echo cancel > ctl` on CANCELS running jobs
#   STATE  "pending running" before the cancels
measure() {
	local n=$1 t0 t1 c0 c1 c i lat=() s a0 ca
	it_start "$ASCENDFS" "$CONFIG" --state-dir=none >/dev/null || return 1
	"$SUBMIT" "$IT_MNT" run 16 4 "npus: 8
command: sleep 100000
" >/dev/null
	"$SUBMIT" "$IT_MNT" wait "$n" 32 "npus: 8
command: sleep 100000
" >/dev/null
	a0=$(usec)
	ca=$(cpu_ticks)
	for i in $(seq 1 300); do
		c=$(cpu_ticks)
		sleep 1
		[ $(((($(cpu_ticks) - c) * 1000) / TICKS)) -lt 10 ] && break
	done
	AFTER=$(awk -v us="$(($(usec) - a0))" -v c="$(($(cpu_ticks) - ca))" -v hz="$TICKS" \
		'BEGIN { printf "%.1f %.0f", us / 1e6, c / hz * 1000 }')
	STATE=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["jobs"].get("pending", 0), d["jobs"].get("running", 0))' "$IT_MNT/cluster/status")
	c0=$(cpu_ticks)
	t0=$(usec)
	sleep "$IDLE_SEC"
	c1=$(cpu_ticks)
	t1=$(usec)
	IDLE=$(awk -v c="$((c1 - c0))" -v hz="$TICKS" -v us="$((t1 - t0))" \
		'BEGIN { printf "%.1f", c / hz * 1000 / (us / 1e6) }')
	TIMEFORMAT=%R
	for i in $(seq 0 $((CANCELS - 1))); do
		# bash's own clock around the builtin echo: no fork is timed
		s=$({ time echo cancel >"$IT_MNT/jobs/run-$i/ctl"; } 2>&1) || return 1
		lat+=("$s")
		sleep 1 # the cancel's own aftermath (a pending job starts) settles
	done
	CANCEL=$(printf '%s\n' "${lat[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f %.1f", a[int((NR + 1) / 2)] * 1000, a[NR] * 1000 }')
	it_stop > >(grep -v '^ok ' >&2)
}

printf '%-8s %8s %16s %16s %14s %16s %16s\n' "pending" "running" "settle s" "settle CPU ms" "idle CPU ms/s" \
	"cancel ms (med)" "cancel ms (max)"
for n in 10 "$PENDING"; do
	measure "$n" || { echo "measure $n failed"; exit 1; }
	read -r p r <<<"$STATE"
	read -r as ac <<<"$AFTER"
	read -r med max <<<"$CANCEL"
	printf '%-8s %8s %16s %16s %14s %16s %16s\n' "$p" "$r" "$as" "$ac" "$IDLE" "$med" "$max"
done
it_finish
