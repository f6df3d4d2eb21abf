#!/usr/bin/env bash
# Submissions per second against the jobs held (issue 16): 'npus: 1' specs from 32
# threads into the example cluster (128 NPUs, so nearly every job stays pending), each
# close durable before it returns; measured with 0 jobs held, then after filling the
# daemon up to each of BENCH_HELD (default "10000 20000"), with --state-dir=none in the
# same run as the reference. With REF_ASCENDFS=<another ascendfs binary> (e.g. main's,
# built in a scratch dir) that binary is measured too, in the same run, for a
# before/after. Prints one row per binary and store: the rates and rate(held)/rate(0).
# Asserts nothing about time.
# Usage: bench_held.sh ASCENDFS BENCH_SUBMIT SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
HELD=${BENCH_HELD:-10000 20000}
SAMPLE=${BENCH_SAMPLE:-2000}
CLIENTS=32
FILL=2000
. "$SRC/tests/integration/lib.sh"
it_setup
CONFIG=$SRC/examples/ascend_cluster.yaml

# one row: BIN LABEL STATE-ARGS...
measure() {
	local bin=$1 label=$2 held=0 row rate0 rate n=0 k
	shift 2
	it_start "$bin" "$CONFIG" "$@" >/dev/null || return 1
	read -r _ _ _ rate0 < <("$SUBMIT" "$IT_MNT" s0 "$SAMPLE" "$CLIENTS")
	held=$SAMPLE
	row=$(printf '%-28s %9s' "$label" "$rate0")
	for target in $HELD; do
		while [ "$held" -lt "$target" ]; do
			k=$((target - held > FILL ? FILL : target - held))
			"$SUBMIT" "$IT_MNT" "fill$n" "$k" "$CLIENTS" >/dev/null
			held=$((held + k))
			n=$((n + 1))
		done
		read -r _ _ _ rate < <("$SUBMIT" "$IT_MNT" "s$target" "$SAMPLE" "$CLIENTS")
		held=$((held + SAMPLE))
		row+=$(awk -v r="$rate" -v z="$rate0" 'BEGIN { printf " %9s (%.2fx)", r, r / z }')
	done
	it_stop >/dev/null
	rm -rf "$IT_WORK/state"
	# a daemon that defers passes says how many it ran (one before deferral: one each)
	passes=$(grep -o 'scheduling passes: .*' "$IT_LOG" | tail -1)
	: >"$IT_LOG"
	echo "$row${passes:+  [$passes]}"
}

printf '# %s submissions of npus: 1 from %s threads at 0 and at %s jobs held\n' \
	"$SAMPLE" "$CLIENTS" "$HELD"
printf '%-28s %9s' "jobs/s, jobs held:" 0
for target in $HELD; do printf ' %17s' "$target"; done
echo
for bin in "$ASCENDFS" ${REF_ASCENDFS:+"$(realpath "$REF_ASCENDFS")"}; do
	tag=this
	[ "$bin" = "$ASCENDFS" ] || tag=ref
	measure "$bin" "$tag durable (SQLite)" --state-dir "$IT_WORK/state"
	measure "$bin" "$tag in memory (none)" --state-dir=none
done
it_finish
