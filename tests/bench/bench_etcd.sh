#!/usr/bin/env bash
# Issue 21's figures: the state in a 3-member etcd cluster on loopback against SQLite,
# in the same run, on the 16-server example cluster:
#   1. durable submissions/s through the mount ('npus: 1', 32 threads, open+write+close);
#   2. restart to a usable mount with 10,000 job records (100,000 too with
#      BENCH_ETCD_100K=1), exec to cluster/status counting every record;
#   3. failover with those records held: SIGKILL of the active head to the first
#      submission the standby accepted, lease 2 s and 10 s, three times each.
# Prints figures; asserts nothing about time.
# Usage: bench_etcd.sh ASCENDFS BENCH_SUBMIT SRCDIR
#   BENCH_ETCD_PARTS="rate restart failover" (default all): which parts run
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
SIZES=10000
[ "${BENCH_ETCD_100K:-0}" = 1 ] && SIZES="10000 100000"
CLIENTS=32
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/bench/bench_lib.sh"
bench_part_begin
it_etcd_start 3 || { echo "etcd did not start"; exit 1; }
SQL=$IT_WORK/sqlite.yaml
# the example cluster, with room for 100,000 records and more
sed 's/^cluster:$/cluster:\n  max_job_count: 400000/' "$SRC/examples/ascend_cluster.yaml" >"$SQL"
etcd_config() { # FILE PREFIX LEASE
	{
		cat "$SQL"
		printf 'state:\n  backend: etcd\n  etcd_servers: %s\n' "$IT_ETCD_ENDPOINTS"
		printf '  etcd_prefix: %s\n  leader_lease_duration: %ss\n' "$2" "$3"
	} >"$1"
}
ETCD=$IT_WORK/etcd.yaml
etcd_config "$ETCD" /bench/ 10

# start_usable CONFIG STATE N: exec to a mount whose cluster/status counts N jobs
start_usable() {
	local t0
	t0=$(bench_msec)
	it_start "$ASCENDFS" "$1" --state-dir "$2" >/dev/null || return 1
	bench_wait_jobs "$IT_MNT" records "$3" "$t0" || echo "# $JOBS_TOTAL of $3 records after 600 s" >&2
	START_MS=$(($(bench_msec) - t0))
}

PARTS=${BENCH_ETCD_PARTS:-rate restart failover}
# ---- 1. durable submissions/s ----
if [[ " $PARTS " == *" rate "* ]]; then
echo "# 2,000 submissions of 'npus: 1' from $CLIENTS threads, each close durable"
printf '%-44s %8s %8s %10s\n' "" "ok" "seconds" "jobs/s"
for run in 1 2; do
	for b in sqlite etcd; do
		cfg=$SQL
		[ $b = etcd ] && cfg=$ETCD
		rm -rf "$IT_WORK/state-rate"
		[ $b = etcd ] && etcdctl --endpoints="$IT_ETCD_ENDPOINTS" del --prefix /bench/ >/dev/null
		start_usable "$cfg" "$IT_WORK/state-rate" 0 || exit 1
		read -r ok fail sec rate < <("$SUBMIT" "$IT_MNT" "s$run" 2000 $CLIENTS)
		it_stop > >(grep -v '^ok ' >&2)
		printf '%-44s %8s %8s %10s\n' "$b (run $run)" "$ok" "$sec" "$rate"
		eval "rate_${b}_$run=$rate"
	done
done
# shellcheck disable=SC2154 # set by the eval above
bench_row "durable submissions/s, 3-member etcd on loopback" \
	"$rate_etcd_1 / $rate_etcd_2" "SQLite: $rate_sqlite_1 / $rate_sqlite_2" ""

fi

# ---- 2. restart with N records ----
if [[ " $PARTS " == *" restart "* ]]; then
declare -A R=()
for n in $SIZES; do
	for b in sqlite etcd; do
		cfg=$SQL
		[ $b = etcd ] && cfg=$ETCD
		st=$IT_WORK/state-$b-$n
		[ $b = etcd ] && etcdctl --endpoints="$IT_ETCD_ENDPOINTS" del --prefix /bench/ >/dev/null
		start_usable "$cfg" "$st" 0 || exit 1
		left=$n k=0
		while [ "$left" -gt 0 ]; do
			c=$((left > 10000 ? 10000 : left))
			read -r ok fail _ rate < <("$SUBMIT" "$IT_MNT" "r$k" "$c" $CLIENTS)
			[ "$fail" = 0 ] || { echo "# fill: $fail failed" >&2; break; }
			left=$((left - c)) k=$((k + 1))
		done
		# a spec becomes a job at the release of its last descriptor, which the
		# kernel sends after close() returned: wait for every one
		bench_wait_jobs "$IT_MNT" records "$n" "$(bench_msec)" ||
			echo "# $JOBS_TOTAL of $n records 600 s after the fill" >&2
		held=$JOBS_TOTAL
		it_stop > >(grep -v '^ok ' >&2)
		start_usable "$cfg" "$st" "$held" || exit 1
		R[$b.$n]=$START_MS
		line=$(grep 'restored' "$IT_LOG" | tail -1)
		bench_jobs_by_state "$IT_MNT"
		check_eq "$b: every job record restored ($n)" "$held" "$JOBS_TOTAL"
		it_stop > >(grep -v '^ok ' >&2)
		printf 'restart, %s, %s records: %s ms to a usable mount\n  daemon: %s\n' \
			"$b" "$held" "$START_MS" "${line#*info: }"
	done
	bench_row "restart to a usable mount, $n records, state on etcd" \
		"$(bench_sec "${R[etcd.$n]}")" "SQLite: $(bench_sec "${R[sqlite.$n]}")" \
		"$([ "$n" = 100000 ] && echo '< 3 s')"
done

fi

# ---- 3. failover with 10,000 records held ----
if [[ " $PARTS " == *" failover "* ]]; then
now_ms() { bench_msec; }
accepts() { # MNT NAME: one submission through MNT
	printf 'npus: 1\n' >"$IT_WORK/probe.yaml"
	answers "$1/jobs" && cp "$IT_WORK/probe.yaml" "$1/jobs/$2.yaml" 2>/dev/null
}
for lease in 2 10; do
	cfg=$IT_WORK/failover-$lease.yaml
	etcd_config "$cfg" "/failover-$lease/" "$lease"
	# 10,000 records, then two heads
	start_usable "$cfg" "$IT_WORK/state-f$lease" 0 || exit 1
	"$SUBMIT" "$IT_MNT" f 10000 $CLIENTS >/dev/null
	it_stop > >(grep -v '^ok ' >&2)
	heads=(a b) pids=()
	for h in a b; do
		mkdir -p "$IT_WORK/mnt-$h"
		"$ASCENDFS" -f -c "$cfg" --state-dir "$IT_WORK/state-$h" "$IT_WORK/mnt-$h" \
			>>"$IT_WORK/$h.log" 2>&1 &
		pids+=("$!")
		IT_OTHER_PIDS="$IT_OTHER_PIDS $!"
		it_exec_wait "$!"
		[ $h = a ] && wait_until 60 answers "$IT_WORK/mnt-a/jobs"
	done
	active=0 times=""
	for i in 1 2 3; do
		standby=$((1 - active))
		sleep 1
		t0=$(now_ms)
		kill -KILL "${pids[$active]}"
		wait "${pids[$active]}" 2>/dev/null
		until accepts "$IT_WORK/mnt-${heads[$standby]}" "p$lease-$i"; do
			[ $(($(now_ms) - t0)) -lt 120000 ] || break
			sleep 0.01
		done
		times="$times $(($(now_ms) - t0))"
		wait_until 10 bash -c "! grep -q ' $IT_WORK/mnt-${heads[$active]} ' /proc/mounts"
		"$ASCENDFS" -f -c "$cfg" --state-dir "$IT_WORK/state-${heads[$active]}" \
			"$IT_WORK/mnt-${heads[$active]}" >>"$IT_WORK/${heads[$active]}.log" 2>&1 &
		pids[$active]=$!
		IT_OTHER_PIDS="$IT_OTHER_PIDS $!"
		it_exec_wait "$!"
		active=$standby
	done
	echo "failover, lease $lease s, 10,000 records: SIGKILL to the first accepted submission (ms):$times"
	bench_row "failover (SIGKILL), lease $lease s, 10,000 records" "$times ms" "lease: ${lease}000 ms" \
		"< lease + 1 s"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
done
fi
bench_part_end
