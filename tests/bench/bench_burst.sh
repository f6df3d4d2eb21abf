#!/usr/bin/env bash
# Issue 16, row 2: a burst of specs from 32 threads into 1,024 Atlas 800T A2 servers
# (8,192 NPUs), mixed sizes of 1, 2, 4 and 8 NPUs: the time from the first open until
# every job is running or pending (cluster/status counts every job in one of the two;
# afterwards, untimed, up to 200 pending jobs' status.json are read for their reason).
# Bursts of 1,000 and 10,000 (and 100,000 with BENCH_BURST_100K=1), each on a fresh
# durable daemon; references from the same run: the same bursts into --state-dir=none,
# and the ratio of the 10,000 burst's time to the 1,000 burst's (linear is 10x). With
# BENCH_FUSE_FLOOR (bench_fuse_floor.c), the same bursts into the least a FUSE file
# system does for a submission (a create, a write and a close answered at once, the bytes
# thrown away): the protocol's own cost on this machine, which no daemon goes below.
# Prints figures; asserts nothing about time.
# Usage: bench_burst.sh ASCENDFS BENCH_SUBMIT SRCDIR [BENCH_FUSE_FLOOR]
#        (BENCH_BURST_SIZES="1000 10000")
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
FLOOR=${4:+$(realpath "$4")}
SIZES=${BENCH_BURST_SIZES:-1000 10000}
[ "${BENCH_BURST_100K:-0}" = 1 ] && SIZES="$SIZES 100000"
CLIENTS=32
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/bench/bench_lib.sh"
bench_part_begin
CONFIG=$IT_WORK/cluster1024.yaml
bench_cluster "$CONFIG" 1024 "max_job_count: 400000"

# burst N STATE_ARG: prints "ms_until_placed_or_pending submit_ms running pending other reasons_seen sampled"
burst() {
	local n=$1 t0 t1 t2 ok fail
	rm -rf "$IT_WORK/state"
	it_start "$ASCENDFS" "$CONFIG" "$2" >/dev/null || return 1
	t0=$(bench_msec)
	read -r ok fail _ _ < <("$SUBMIT" "$IT_MNT" b "$n" $CLIENTS "npus: 1" "npus: 2" "npus: 4" "npus: 8")
	t1=$(bench_msec)
	[ "$fail" = 0 ] || echo "# burst $n: $fail submissions failed" >&2
	bench_wait_jobs "$IT_MNT" placed "$ok" "$t0" || echo "# burst $n: not settled after 600 s" >&2
	t2=$(bench_msec)
	# pending with a reason: a sample of the pending jobs (untimed)
	local seen sampled
	read -r seen sampled < <(python3 -c 'import json,os,sys
m = sys.argv[1]; seen = sampled = 0
for name in sorted(os.listdir(m + "/jobs")):
    if sampled >= 200: break
    p = m + "/jobs/" + name + "/status.json"
    if not os.path.isdir(m + "/jobs/" + name): continue
    d = json.load(open(p))
    if d.get("state") != "pending": continue
    sampled += 1
    seen += bool(d.get("reason"))
print(seen, sampled)' "$IT_MNT")
	it_stop > >(grep -v '^ok ' >&2)
	echo "$((t2 - t0)) $((t1 - t0)) $JOBS_RUNNING $JOBS_PENDING $JOBS_OTHER $seen $sampled"
}

# burst_floor N: the same burst into bench_fuse_floor; prints "submit_ms ok"
burst_floor() {
	local n=$1 t0 t1 ok fail pid
	mkdir -p "$IT_WORK/floor"
	"$FLOOR" /dev/null "$IT_WORK/floor" >>"$IT_LOG" 2>&1 &
	pid=$!
	IT_OTHER_PIDS="$IT_OTHER_PIDS $pid"
	if ! wait_until 10 test -d "$IT_WORK/floor/jobs"; then
		echo "# the FUSE floor did not mount" >&2
		kill "$pid" 2>/dev/null
		return 1
	fi
	t0=$(bench_msec)
	read -r ok fail _ _ < <("$SUBMIT" "$IT_WORK/floor" b "$n" $CLIENTS "npus: 1" "npus: 2" "npus: 4" "npus: 8")
	t1=$(bench_msec)
	it_unmount "$IT_WORK/floor"
	wait "$pid"
	echo "$((t1 - t0)) $ok"
}

printf '%8s %-12s %10s %10s %9s %9s %7s %s\n' "jobs" "state" "settled ms" "submit ms" "running" \
	"pending" "other" "pending with a reason (sample)"
declare -A T=()
for n in $SIZES; do
	if [ -n "$FLOOR" ]; then
		t=$(bench_msec)
		read -r ms ok < <(burst_floor "$n")
		T[$n.floor]=${ms:-}
		printf '%8s %-12s %10s %10s %9s   (part %d s; %s of %s answered)\n' "$n" "FUSE floor" "-" \
			"${ms:-}" "-" $((($(bench_msec) - t) / 1000)) "${ok:-0}" "$n"
	fi
	for mode in durable memory; do
		arg="--state-dir=$IT_WORK/state"
		[ $mode = memory ] && arg=--state-dir=none
		t=$(bench_msec)
		read -r ms sub r p o seen sampled < <(burst "$n" "$arg")
		T[$n.$mode]=$ms
		printf '%8s %-12s %10s %10s %9s %9s %7s %s/%s   (part %d s)\n' "$n" "$mode" "$ms" "$sub" "$r" "$p" \
			"$o" "$seen" "$sampled" $((($(bench_msec) - t) / 1000))
	done
done
bench_row "burst of 10,000 specs (1/2/4/8 NPUs), 32 threads, 1,024 servers, until running or pending" \
	"$(bench_sec "${T[10000.durable]:-}") ($(bench_ratio "${T[10000.durable]:-}" "${T[1000.durable]:-}")x the 1,000 burst's $(bench_sec "${T[1000.durable]:-}"))" \
	"in memory: $(bench_sec "${T[10000.memory]:-}") (1,000: $(bench_sec "${T[1000.memory]:-}"))${T[10000.floor]:+; the least a FUSE file system does (bench_fuse_floor): $(bench_sec "${T[10000.floor]}") ($(bench_sec "${T[1000.floor]:-}"))}" \
	"< 1 s"
if [ -n "${T[100000.durable]:-}" ]; then
	bench_row "burst of 100,000 specs, same" \
		"$(bench_sec "${T[100000.durable]}") ($(bench_ratio "${T[100000.durable]}" "${T[10000.durable]:-}")x the 10,000 burst)" \
		"in memory: $(bench_sec "${T[100000.memory]:-}")${T[100000.floor]:+; the FUSE floor: $(bench_sec "${T[100000.floor]}")}" "<= 11x the 10,000 burst"
else
	bench_row "burst of 100,000 specs, same" "skipped (BENCH_BURST_100K=1)" "-" "<= 11x the 10,000 burst"
fi
bench_part_end
