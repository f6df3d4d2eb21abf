# shellcheck shell=bash
# Helpers for the mounted benchmarks of issue 16 (bench_held.sh, bench_burst.sh,
# bench_restart.sh, bench_health.sh, bench_table.sh). Source it after
# tests/integration/lib.sh.

bench_msec() { bench_now; echo "$NOW_MS"; }

# bench_now: NOW_MS = the wall clock in milliseconds, without starting a process
bench_now() {
	local t=${EPOCHREALTIME/[.,]/}
	NOW_MS=$((t / 1000))
}

# bench_cluster FILE SERVERS [LINE...]: SERVERS Atlas 800T A2 servers (8 NPUs each,
# node-0001 ...) under leaf switches of 32, as cluster YAML in FILE; each LINE (such as
# "max_job_count: 200000") goes under cluster:
bench_cluster() {
	local file=$1 n=$2 s d
	shift 2
	{
		printf 'cluster:\n  name: bench-%d\n' $((n * 8))
		for d in "$@"; do printf '  %s\n' "$d"; done
		printf 'resource:\n  total_npu: %d\n  allow_mix_task: true\nservers:\n' $((n * 8))
		for s in $(seq 1 "$n"); do
			printf '  - {name: node-%04d, host_ip: 10.%d.%d.%d, type: atlas800t-a2, switch: leaf-%d}\n' \
				"$s" $((1 + s / 62500)) $((s / 250 % 250)) $((s % 250 + 1)) $(((s - 1) / 32 + 1))
		done
	} >"$file"
}

# bench_jobs_by_state MOUNT: JOBS_RUNNING, JOBS_PENDING, JOBS_OTHER and JOBS_TOTAL from
# cluster/status, with bash builtins only (no process started: a poll loop stays cheap
# on a loaded machine); returns 1 when the file does not read as expected
bench_jobs_by_state() {
	local text="" re='"jobs": \{([^}]*)\}' body k v
	JOBS_RUNNING=0 JOBS_PENDING=0 JOBS_OTHER=0 JOBS_TOTAL=0
	read -r -d '' text <"$1/cluster/status"
	[[ $text =~ $re ]] || return 1
	body=${BASH_REMATCH[1]}
	while [[ $body =~ \"([a-z]+)\":\ *([0-9]+)(.*) ]]; do
		k=${BASH_REMATCH[1]} v=${BASH_REMATCH[2]} body=${BASH_REMATCH[3]}
		JOBS_TOTAL=$((JOBS_TOTAL + v))
		[ "$k" = running ] && JOBS_RUNNING=$v
		[ "$k" = pending ] && JOBS_PENDING=$v
	done
	JOBS_OTHER=$((JOBS_TOTAL - JOBS_RUNNING - JOBS_PENDING))
	return 0
}

# bench_row FIGURE MEASURED REFERENCE GOAL: one row of issue 16's table, collected by
# bench_table.sh (and readable on its own)
bench_row() {
	printf 'TABLE|%s|%s|%s|%s\n' "$1" "$2" "$3" "$4"
}

# bench_ratio A B: A / B with two decimals
bench_ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }'
}

# bench_nap SECONDS: sleep without starting a process (read with a timeout on a pipe that
# never has data), for poll loops
bench_nap() {
	[ -n "${BENCH_NAP_FD:-}" ] || exec {BENCH_NAP_FD}<> <(:)
	read -r -t "$1" -u "$BENCH_NAP_FD" _ || :
}

# bench_sec MS: MS milliseconds as "1.23 s", or "n/a" when MS is not a number
bench_sec() {
	awk -v m="${1:-}" 'BEGIN { if (m ~ /^[0-9]+$/) printf "%.2f s", m / 1000; else print "n/a" }'
}

# bench_part_begin: a temporary work directory and mount point (it_setup), and the
# part's start time (BENCH_PART_T0, milliseconds); bench_part_end prints how long the
# part took and ends it (it_finish: its status)
bench_part_begin() {
	it_setup
	BENCH_PART_T0=$(bench_msec)
}
bench_part_end() {
	echo "part took $((($(bench_msec) - BENCH_PART_T0) / 1000)) s"
	it_finish
}

# bench_wait_jobs MOUNT WHAT N T0: poll MOUNT's cluster/status (bench_jobs_by_state, every
# 5 ms) until WHAT reaches N: "placed" counts the jobs running or pending, "records" every
# job record. Returns 1 when that has not happened 600 s after T0 (milliseconds,
# bench_msec). Either way JOBS_* are as last read.
bench_wait_jobs() {
	local mnt=$1 what=$2 n=$3 t0=$4 have
	while :; do
		bench_jobs_by_state "$mnt"
		have=$JOBS_TOTAL
		[ "$what" = placed ] && have=$((JOBS_RUNNING + JOBS_PENDING))
		[ "$have" -ge "$n" ] && return 0
		bench_nap 0.005
		bench_now
		[ $((NOW_MS - t0)) -gt 600000 ] && return 1
	done
}
