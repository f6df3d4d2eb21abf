#!/usr/bin/env bash
# Trace replay (issue 6): ascend-sim on the Philly trace mapped to 8-NPU servers, with
# ascendfs's policies against the static rank-table workflow in the same run, without
# and with NPU faults, and on the example week. Prints the tables; the CSV files and
# figures go to OUTDIR. Asserts nothing about time.
# Usage: bench_sim.sh ASCEND_SIM SRCDIR OUTDIR PHILLY_CSV
#   (BENCH_SIM_JOBS=N: the first N Philly jobs, default 20000; 0 = all)
set -u
sim=$1
src=$2
out=$3
philly=$4
jobs=${BENCH_SIM_JOBS:-20000}
slice=":$jobs"
[ "$jobs" = 0 ] && slice=":"
mkdir -p "$out"
status=0

run() {
	local name=$1
	shift
	echo
	echo "== $name"
	echo "\$ ascend-sim $*"
	"$sim" "$@" --out "$out/$name" || status=1
}

if [ -r "$philly" ]; then
	run philly "--trace" "$philly" --servers 64 --switch-size 16 --slice "$slice"
	run philly-faults --trace "$philly" --servers 64 --switch-size 16 --slice "$slice" \
		--mtbf 5000h --repair 8h --checkpoint-interval 30m --restart-cost 5m
	# issue 20: Llama 2 70B and MoE jobs arriving every 72 h into the Philly replay
	if python3 "$src/tests/bench/philly_llm_trace.py" "$philly" "$out/philly-llm.csv" \
		"${jobs/#0/82247}" 72; then
		run philly-llm --trace "$out/philly-llm.csv" --servers 64 --switch-size 16
	else
		status=1
	fi
else
	echo "== Philly replay skipped: no trace at $philly (meson -Dphilly_trace=PATH)"
fi
run week --trace "$src/examples/traces/week.csv" --config "$src/examples/ascend_cluster.yaml" \
	--mtbf 20000h --restart-cost 5m
run fragmented --trace "$src/examples/traces/fragmented.csv" --servers 32 --switch-size 4
echo
echo "files and figures: $out/*/"
exit $status
