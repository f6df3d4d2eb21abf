#!/usr/bin/env bash
# Issue 16, row 2: a burst of specs from 32 threads into 1,024 Atlas 800T A2 servers
# (8,192 NPUs), mixed sizes of 1, 2, 4 and 8 NPUs: the time from the first open until
# every job is running or pending (cluster/status counts every job in one of the two;
# afterwards, untimed, up to 200 pending jobs' status.json are read for their reason).
# Bursts of 1,000 and 10,000 (and 100,000 with BENCH_BURST_100K=1), each on a fresh
# durable daemon; references from the same run: the same bursts into --state-dir=none,
# and the ratio of the 10,000 burst's time to the 1,000 burst's (linear is 10x).
# Prints figures; asserts nothing about time.
# Usage: bench_burst.sh ASCENDFS BENCH_SUBMIT SRCDIR   (BENCH_BURST_SIZES="1000 10000")
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
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

printf '%8s %-12s %10s %10s %9s %9s %7s %s\n' "jobs" "state" "settled ms" "submit ms" "running" \
	"pending" "other" "pending with a reason (sample)"
declare -A T=()
for n in $SIZES; do
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
	"in memory: $(bench_sec "${T[10000.memory]:-}") (1,000: $(bench_sec "${T[1000.memory]:-}"))" \
	"< 1 s"
if [ -n "${T[100000.durable]:-}" ]; then
	bench_row "burst of 100,000 specs, same" \
		"$(bench_sec "${T[100000.durable]}") ($(bench_ratio "${T[100000.durable]}" "${T[10000.durable]:-}")x the 10,000 burst)" \
		"in memory: $(bench_sec "${T[100000.memory]:-}")" "<= 11x the 10,000 burst"
else
	bench_row "burst of 100,000 specs, same" "skipped (BENCH_BURST_100K=1)" "-" "<= 11x the 10,000 burst"
fi
bench_part_end
