#!/usr/bin/env bash
# Issue 16, row 1: durable submissions per second through the mount, 32 threads, as a
# function of the jobs the daemon already holds. One daemon with a state dir on the
# 16-server example cluster (128 NPUs, so almost every held job stays pending): for each
# H of BENCH_HELD_LEVELS, fill up to H jobs held, then time a batch of BENCH_HELD_BATCH
# submissions (bench_submit: open+write+close, as cp; a close returns once the job is
# durable and accepted). References from the same run: the rate at 0 held, and the same
# daemon with --state-dir=none (at 0 held; at every level too with BENCH_HELD_MEM=curve).
# Writes held.dat and, when gnuplot is there, held.png into OUTDIR. Prints figures;
# asserts nothing about time.
# Usage: bench_held.sh ASCENDFS BENCH_SUBMIT SRCDIR OUTDIR
#   BENCH_HELD_LEVELS="0 1000 2500 5000 10000 20000"  BENCH_HELD_BATCH=1000
#   BENCH_HELD_MEM=zero|curve  BENCH_HELD_CONFIG=cluster.yaml
#   BENCH_HELD_SPECS='npus: 1\ntime_limit: 1h\n|npus: 8\nqueue: research\n' (specs taken in
#   turn, separated by |, \n as newline; default 'npus: 1\n')
#   BENCH_HELD_MIX=0: without the second durable curve. By default (no BENCH_HELD_SPECS)
#   the same levels are run again with a mix in which new jobs come before the held
#   ones (a research queue of priority 700, job priorities 700 and 300): each such job
#   makes a full scheduling pass, O(jobs waiting), and only passes shared by the
#   submissions of a batch keep that curve flat. Its passes per submission come from the
#   daemon's exit line.
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
OUT=$(mkdir -p "$4" && realpath "$4")
LEVELS=${BENCH_HELD_LEVELS:-0 1000 2500 5000 10000 20000}
BATCH=${BENCH_HELD_BATCH:-1000}
MEM=${BENCH_HELD_MEM:-zero}
CLIENTS=32
SPECS=()
IFS='|' read -r -a raw <<<"${BENCH_HELD_SPECS:-npus: 1\n}"
for x in "${raw[@]}"; do SPECS+=("$(printf '%b' "$x")"$'\n'); done
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/bench/bench_lib.sh"
it_setup
CONFIG=${BENCH_HELD_CONFIG:-$SRC/examples/ascend_cluster.yaml}
t_part=$(bench_msec)

# curve STATE_ARGS...: one daemon; prints "H rate" per level
curve() {
	local held=0 h n=0 ok fail sec rate
	it_start "$ASCENDFS" "$CONFIG" "$@" >/dev/null || return 1
	for h in $LEVELS; do
		while [ "$held" -lt "$h" ]; do
			k=$((h - held > 5000 ? 5000 : h - held))
			read -r ok fail _ _ < <("$SUBMIT" "$IT_MNT" "fill$n" "$k" $CLIENTS "${SPECS[@]}")
			held=$((held + ok))
			n=$((n + 1))
			[ "$fail" = 0 ] || { echo "# fill: $fail submissions failed" >&2; break 2; }
		done
		read -r ok fail sec rate < <("$SUBMIT" "$IT_MNT" "at$h" "$BATCH" $CLIENTS "${SPECS[@]}")
		[ "$fail" = 0 ] || echo "# $fail of $BATCH submissions at $h held failed" >&2
		echo "$h $rate"
		held=$((held + ok))
	done
	it_stop > >(grep -v '^ok ' >&2)
}

echo "# $BATCH submissions of ${BENCH_HELD_SPECS:-npus: 1} from $CLIENTS threads at each number of jobs held"
echo "# (cluster: $(basename "$CONFIG"); fills between levels are not timed)"
t0=$(bench_msec)
mapfile -t dur < <(curve --state-dir "$IT_WORK/state")
dur_sec=$(( ($(bench_msec) - t0) / 1000 ))
if [ "$MEM" = curve ]; then
	mapfile -t mem < <(curve --state-dir=none)
else
	mapfile -t mem < <(LEVELS=0 curve --state-dir=none)
fi
[ ${#dur[@]} -gt 0 ] || { echo "no figures"; exit 1; }
mix=()
if [ -z "${BENCH_HELD_SPECS:-}" ] && [ "${BENCH_HELD_MIX:-1}" = 1 ]; then
	SPECS=($'npus: 1\n' $'npus: 8\nqueue: research\n' $'npus: 2\nqueue: finetune\n'
		$'npus: 4\npriority: 700\ntime_limit: 2h\n' $'npus: 16\nqueue: research\npriority: 300\n')
	mapfile -t mix < <(curve --state-dir "$IT_WORK/state-mix")
	mix_passes=$(grep 'scheduling passes:' "$IT_LOG" | tail -1 | sed 's/.*info: //')
fi

printf '%10s %14s %14s %10s %14s %10s\n' "held" "durable /s" "in memory /s" "vs 0 held" \
	"mix durable /s" "vs 0 held"
rate0=${dur[0]#* }
mix0=-
[ ${#mix[@]} -gt 0 ] && mix0=${mix[0]#* }
: >"$OUT/held.dat.tmp"
echo "# jobs_held durable_per_sec in_memory_per_sec mix_durable_per_sec (batch $BATCH, $CLIENTS threads)" >>"$OUT/held.dat.tmp"
declare -A at=() mat=()
for i in "${!dur[@]}"; do
	h=${dur[$i]% *}
	r=${dur[$i]#* }
	m=-
	for x in "${mem[@]}"; do [ "${x% *}" = "$h" ] && m=${x#* }; done
	x=-
	for y in "${mix[@]}"; do [ "${y% *}" = "$h" ] && x=${y#* }; done
	at[$h]=$r
	mat[$h]=$x
	printf '%10s %14s %14s %9sx %14s %9sx\n' "$h" "$r" "$m" "$(bench_ratio "$r" "$rate0")" \
		"$x" "$(bench_ratio "$x" "$mix0")"
	echo "$h $r $([ "$m" = - ] && echo NaN || echo "$m") $([ "$x" = - ] && echo NaN || echo "$x")" \
		>>"$OUT/held.dat.tmp"
done
[ ${#mix[@]} -gt 0 ] && echo "mix: ${mix_passes:-no exit line}"
mv "$OUT/held.dat.tmp" "$OUT/held.dat"
echo "durable curve: ${dur_sec} s in all (fills included); data: $OUT/held.dat"
if command -v gnuplot >/dev/null; then
	if gnuplot -e "set terminal pngcairo size 800,500 2>/dev/null" -e "" 2>/dev/null; then
		term="pngcairo size 800,500"
	else
		term="png size 800,500"
	fi
	gnuplot -e "set terminal $term; set output '$OUT/held.png';
		set title 'ascendfs: submissions/s through the mount, $CLIENTS threads, vs jobs held';
		set xlabel 'jobs held (mostly pending)'; set ylabel 'submissions per second';
		set yrange [0:*]; set key top right; set grid;
		plot '$OUT/held.dat' using 1:2 with linespoints lw 2 title 'durable (SQLite, fsync)',
		     '' using 1:3 with points pt 7 ps 1.5 title 'in memory (--state-dir=none)',
		     '' using 1:4 with linespoints lw 2 title 'durable, new jobs before the held ones',
		     $rate0 * 0.8 with lines dt 2 title '0.8 x durable at 0 held (goal: above)'" &&
		echo "plot: $OUT/held.png"
else
	echo "plot skipped: gnuplot is not installed (apt-get install gnuplot-nox); the data is in $OUT/held.dat"
fi
m0=${mem[0]#* }
pick() { echo "${at[$1]:-n/a}"; }
bench_row "durable submissions/s, 32 threads, at 0 / 5k / 10k / 20k jobs held" \
	"$(pick 0) / $(pick 5000) / $(pick 10000) / $(pick 20000)" \
	"in memory at 0: $m0/s; 20k held / 0 held: $(bench_ratio "$(pick 20000)" "$rate0")x" \
	">= 5,000/s at 0, 20k >= 0.8x of 0"
[ ${#mix[@]} -gt 0 ] && bench_row "same, new jobs before the held ones (five-spec mix)" \
	"${mat[0]:-n/a} / ${mat[5000]:-n/a} / ${mat[10000]:-n/a} / ${mat[20000]:-n/a}" \
	"20k held / 0 held: $(bench_ratio "${mat[20000]:-}" "$mix0")x; ${mix_passes:-}" \
	"20k >= 0.8x of 0"
echo "part took $(( ($(bench_msec) - t_part) / 1000 )) s"
it_finish
