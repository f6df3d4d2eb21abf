#!/usr/bin/env bash
# Issue 16, row 3: restart to a usable mount with N job records in the store. The store
# is filled through the mount (bench_submit, 32 threads, 'npus: 1' on the 16-server
# example cluster, so nearly all are pending: what the daemon itself writes), the daemon
# stopped, and the time taken from exec until the mount answers and cluster/status
# counts every record. Reference from the same run: the same start on an empty store.
# N = 10,000 (BENCH_RESTART_SIZES), and 100,000 too with BENCH_RESTART_100K=1 (the fill
# rate is printed: 100,000 through the mount took 45-61 s on this 2-core machine).
# Prints figures; asserts nothing about time.
# Usage: bench_restart.sh ASCENDFS BENCH_SUBMIT SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
SIZES=${BENCH_RESTART_SIZES:-10000}
[ "${BENCH_RESTART_100K:-0}" = 1 ] && SIZES="$SIZES 100000"
CLIENTS=32
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/bench/bench_lib.sh"
bench_part_begin
CONFIG=$IT_WORK/cluster.yaml
# the example cluster, with room for 100,000 records and more
sed 's/^cluster:$/cluster:\n  max_job_count: 400000/' "$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
grep -q 'max_job_count: 400000' "$CONFIG" || { echo "cannot set max_job_count in $CONFIG"; exit 1; }

# start_usable STATE N: exec to a mount whose cluster/status counts N jobs; START_MS: how
# long that took (not in a subshell: it_stop needs the daemon's pid)
start_usable() {
	local t0
	t0=$(bench_msec)
	it_start "$ASCENDFS" "$CONFIG" --state-dir "$1" >/dev/null || return 1
	bench_wait_jobs "$IT_MNT" records "$2" "$t0" || echo "# $JOBS_TOTAL of $2 records after 600 s" >&2
	START_MS=$(($(bench_msec) - t0))
}

start_usable "$IT_WORK/state-empty" 0 || exit 1
empty_ms=$START_MS
it_stop > >(grep -v '^ok ' >&2)
echo "start on an empty store: $empty_ms ms"
declare -A R=()
for n in $SIZES; do
	st=$IT_WORK/state-$n
	start_usable "$st" 0 || exit 1
	t0=$(bench_msec)
	left=$n
	k=0
	while [ "$left" -gt 0 ]; do
		c=$((left > 10000 ? 10000 : left))
		read -r ok fail sec rate < <("$SUBMIT" "$IT_MNT" "r$k" "$c" $CLIENTS)
		echo "  fill: $((n - left + ok)) of $n records ($rate/s for this 10,000)"
		[ "$fail" = 0 ] || { echo "# fill: $fail failed" >&2; break; }
		left=$((left - c))
		k=$((k + 1))
	done
	fill_sec=$((($(bench_msec) - t0) / 1000))
	bench_jobs_by_state "$IT_MNT"
	held=$JOBS_TOTAL
	it_stop > >(grep -v '^ok ' >&2)
	db_mib=$(($(stat -c %s "$st/ascendfs.db") / 1048576))
	start_usable "$st" "$held" || exit 1
	ms=$START_MS
	bench_jobs_by_state "$IT_MNT"
	got=$JOBS_TOTAL
	line=$(grep 'restored' "$IT_LOG" | tail -1)
	it_stop > >(grep -v '^ok ' >&2)
	# the empty start again, right after: the same machine load
	start_usable "$IT_WORK/state-empty" 0 || exit 1
	e2=$START_MS
	it_stop > >(grep -v '^ok ' >&2)
	R[$n]=$ms
	R[$n.empty]=$e2
	printf 'restart with %s job records (ascendfs.db %s MiB, filled in %s s): %s ms to a usable mount; empty store right after: %s ms\n' \
		"$held" "$db_mib" "$fill_sec" "$ms" "$e2"
	echo "  daemon: ${line#*info: }"
	check_eq "every job record restored ($n)" "$held" "$got"
done
if [ -n "${R[100000]:-}" ]; then
	m="$(bench_sec "${R[100000]}") (10,000: $(bench_sec "${R[10000]:-}"))"
	ref="empty store: $(bench_sec "${R[100000.empty]}")"
else
	n=${SIZES%% *}
	m="100,000 skipped (BENCH_RESTART_100K=1); $n: $(bench_sec "${R[$n]:-}")"
	ref="empty store: $(bench_sec "${R[$n.empty]:-$empty_ms}")"
fi
bench_row "restart to a usable mount with 100,000 job records" "$m" "$ref" "< 3 s"
bench_part_end
