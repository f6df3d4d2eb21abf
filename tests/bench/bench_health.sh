#!/usr/bin/env bash
# Issue 16, row 5: health report to the new rank table readable through the mount,
# durable. A 512-NPU job (64 whole Atlas 800T A2 servers) on an inventory with a spare
# server for each repetition; bench_health writes a Critical line for NPU 0 of one of
# the job's servers and reads ranktable.json until it is the next generation's (every
# repetition faults another server); reference, interleaved: a plain write+close of a
# health line that changes nothing. Prints p50/p99/max; asserts nothing about time.
# Usage: bench_health.sh ASCENDFS BENCH_HEALTH SRCDIR   (BENCH_HEALTH_REPS=100)
set -u
ASCENDFS=$(realpath "$1")
HEALTH=$(realpath "$2")
SRC=$(realpath "$3")
REPS=${BENCH_HEALTH_REPS:-100}
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/bench/bench_lib.sh"
it_setup
t_part=$(bench_msec)
N=$((64 + REPS + 2))
[ "$N" -le 999 ] || { echo "BENCH_HEALTH_REPS: at most 933"; exit 2; }
CONFIG=$IT_WORK/cluster.yaml
{
	# no agent runs: a long heartbeat_timeout keeps the reported servers from turning
	# unreachable during the run
	printf 'cluster:\n  name: bench-health\n  heartbeat_timeout: 86400\n'
	printf 'resource:\n  total_npu: %d\nservers:\n' $((N * 8))
	for s in $(seq 1 "$N"); do
		printf '  - name: node-%03d\n    host_ip: 10.1.%d.%d\n    type: atlas800t-a2\n' \
			"$s" $((s / 250)) $((s % 250 + 1))
		printf '    switch: leaf-%d\n    device_ips: [10.%d.0.%d' $(((s - 1) / 16 + 1)) \
			$((30 + s / 250)) $((s % 250 + 1))
		for d in 1 2 3 4 5 6 7; do
			printf ', 10.%d.%d.%d' $((30 + s / 250)) "$d" $((s % 250 + 1))
		done
		printf ']\n'
	done
} >"$CONFIG"
t0=$(bench_msec)
it_start "$ASCENDFS" "$CONFIG" --state-dir "$IT_WORK/state" >/dev/null || exit 1
echo "# set-up and start: $((($(bench_msec) - t_part) / 1000)) s (start alone $((($(bench_msec) - t0) / 1000)) s)"
printf 'npus: 512\nparallel: {tp: 8, pp: 8}\nmax_restarts: 1000\n' >"$IT_MNT/jobs/bench512.yaml"
st=$(cat "$IT_MNT/jobs/bench512/status")
[ "$st" = running ] || { echo "bench512: $st: $(cat "$IT_MNT/jobs/bench512/status.json")"; exit 1; }
echo "# $REPS Critical health reports, each for a server of a running 512-NPU job ($N servers)"
out=$("$HEALTH" "$IT_MNT" bench512 "$REPS" "$N")
echo "$out"
read -r _ f50 f99 fmax < <(grep '^fault' <<<"$out")
read -r _ p50 p99 pmax < <(grep '^plain' <<<"$out")
gen=$(grep -o '"generation": *[0-9]*' "$IT_MNT/jobs/bench512/status.json" | grep -o '[0-9]*$')
printf '%-52s %8s %8s %8s\n' "ms" "p50" "p99" "max"
printf '%-52s %8s %8s %8s\n' "Critical report -> new ranktable.json readable" "$f50" "$f99" "$fmax"
printf '%-52s %8s %8s %8s\n' "reference: a report that changes nothing (close)" "$p50" "$p99" "$pmax"
echo "job generation at the end: $gen (1 + one per report)"
read -r _ reps_done < <(grep "^reps" <<<"$out")
check_eq "one generation per report" "$((${reps_done:-0} + 1))" "${gen:-none}"
bench_row "health report to the new rank table readable through the mount, durable, p99" \
	"${f99:-n/a} ms (p50 ${f50:-n/a})" "plain report write+close: p99 ${p99:-n/a} ms (p50 ${p50:-n/a})" "< 5 ms"
t0=$(bench_msec)
it_stop > >(grep -v '^ok ' >&2)
echo "stop: $((($(bench_msec) - t0) / 1000)) s"
echo "part took $((($(bench_msec) - t_part) / 1000)) s"
it_finish
