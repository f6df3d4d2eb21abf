#!/usr/bin/env bash
# Issue 16's table in one run: runs each part below in turn, keeps its whole output in
# OUTDIR/table-<part>.log, prints its runtime, then prints the table
#   figure | measured | reference (same run) | goal
# from the "TABLE|figure|measured|reference|goal" lines the parts print (for a part
# that prints none, from its ordinary output). Prints figures; asserts nothing about time.
#
# Parts (BENCH_TABLE_PARTS, default all, in this order):
#   held     bench_held.sh: durable submissions/s against jobs held (held.dat, held.png)
#   burst    bench_burst.sh: bursts of 1,000 and 10,000 specs into 1,024 servers
#   sched    bench_sched --part a: one scheduling pass with 10,000 (100,000) pending
#   cat      bench_cat.sh: open+read+close of a 512-rank ranktable.json vs tmpfs
#   store    bench_store.sh: daemon RSS at 8,192 NPUs and 10,000 jobs (and more)
#   restart  bench_restart.sh: restart to a usable mount with N job records
#   place    bench_place: placement of one job at 1,024 and 16,384 servers
#   health   bench_health.sh: health report to the new rank table through the mount
# BENCH_SLOW=1 adds the slow sizes: the 100,000 burst and the restart with 100,000
# records (BENCH_BURST_100K=1, BENCH_RESTART_100K=1; each takes minutes).
#
# Usage: bench_table.sh SRCDIR OUTDIR ASCENDFS BENCH_SUBMIT BENCH_READ BENCH_SCHED \
#                       BENCH_PLACE BENCH_HEALTH BENCH_FUSE_FLOOR
#   or: meson test -C build --benchmark -v table
set -u
SRC=$(realpath "$1")
OUT=$(mkdir -p "$2" && realpath "$2")
ASCENDFS=$(realpath "$3")
SUBMIT=$(realpath "$4")
READ=$(realpath "$5")
SCHED=$(realpath "$6")
PLACE=$(realpath "$7")
HEALTH=$(realpath "$8")
FLOOR=$(realpath "$9")
PARTS=${BENCH_TABLE_PARTS:-held burst sched cat store restart place health}
if [ "${BENCH_SLOW:-0}" = 1 ]; then
	export BENCH_BURST_100K=${BENCH_BURST_100K:-1} BENCH_RESTART_100K=${BENCH_RESTART_100K:-1}
fi
. "$SRC/tests/bench/bench_lib.sh"
B=$SRC/tests/bench
ROWS=$OUT/table.rows
: >"$ROWS"
declare -A SECS=()

run_part() {
	local name=$1 t0 rc
	shift
	t0=$(bench_msec)
	echo "== $name: $*" >&2
	"$@" >"$OUT/table-$name.log" 2>&1
	rc=$?
	SECS[$name]=$((($(bench_msec) - t0) / 1000))
	echo "   $name took ${SECS[$name]} s (exit $rc; output in $OUT/table-$name.log)" >&2
	grep '^TABLE|' "$OUT/table-$name.log" >"$OUT/table-$name.rows"
	[ -s "$OUT/table-$name.rows" ] || fallback "$name" >"$OUT/table-$name.rows"
	[ -s "$OUT/table-$name.rows" ] ||
		echo "TABLE|$name|no figure (exit $rc; see table-$name.log)|-|-" >"$OUT/table-$name.rows"
	sed "s/\$/|${SECS[$name]}/" "$OUT/table-$name.rows" >>"$ROWS"
}

# rows from a part's ordinary output, for parts that print no TABLE lines
fallback() {
	local log=$OUT/table-$1.log
	case $1 in
	sched)
		# "  sched_schedule  p50 p99 max  p50 p99 max  ratio": backfill+preemption, FIFO
		awk '$1 == "sched_schedule" && NF >= 8 { printf "TABLE|one scheduling pass, 10,000 pending, p99|%s ms (p50 %s)|strict FIFO pass: p99 %s ms|< 2 ms; < 20 ms at 100,000 pending\n", $3, $2, $6; exit }' "$log"
		;;
	cat)
		awk '/^through the mount/ { m = $(NF - 2) } /^same bytes on/ { t = $(NF - 2) }
			/^same bytes, FUSE floor/ { f = $(NF - 2) }
			/^ratio mount\/tmpfs/ { r = $4; sub(/,$/, "", r) }
			END { if (f != "") fl = sprintf("; the least a FUSE file system does (bench_fuse_floor): p50 %s us, %.2fx", f, f / t)
			      if (m != "") printf "TABLE|open+read+close of a 512-rank ranktable.json vs the same bytes on tmpfs|%s (p50 %s us)|tmpfs p50 %s us%s|<= 3x\n", r, m, t, fl }' "$log"
		;;
	esac
}

t_all=$(bench_msec)
for p in $PARTS; do
	case $p in
	held) run_part held bash "$B/bench_held.sh" "$ASCENDFS" "$SUBMIT" "$SRC" "$OUT" ;;
	burst) run_part burst bash "$B/bench_burst.sh" "$ASCENDFS" "$SUBMIT" "$SRC" "$FLOOR" ;;
	sched) run_part sched "$SCHED" --part a ;;
	cat) run_part cat bash "$B/bench_cat.sh" "$ASCENDFS" "$READ" "$SRC" "$FLOOR" ;;
	store) run_part store bash "$B/bench_store.sh" "$ASCENDFS" "$SUBMIT" "$SRC" ;;
	restart) run_part restart bash "$B/bench_restart.sh" "$ASCENDFS" "$SUBMIT" "$SRC" ;;
	place) run_part place "$PLACE" ;;
	health) run_part health bash "$B/bench_health.sh" "$ASCENDFS" "$HEALTH" "$SRC" ;;
	*) echo "bench_table: unknown part '$p' (BENCH_TABLE_PARTS)" >&2 ;;
	esac
done

echo
echo "issue 16: figures measured in this run ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| figure | measured | reference (same run) | goal | part's time |"
echo "|---|---|---|---|---|"
awk -F'|' '{ printf "| %s | %s | %s | %s | %s s |\n", $2, $3, $4, $5, $6 }' "$ROWS"
echo
echo "all parts: $((($(bench_msec) - t_all) / 1000)) s; logs and held.dat/held.png in $OUT"
[ -f "$OUT/held.png" ] && echo "plot of submissions/s against jobs held: $OUT/held.png"
exit 0
