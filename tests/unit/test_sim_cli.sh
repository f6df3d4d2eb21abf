#!/bin/bash
# ascend-sim's command line: a replay of the example week on the example cluster writes
# its files and meets its goals; bad arguments and bad input exit 2 with a sentence
# that says where; the same seed gives the same figures.
# Usage: test_sim_cli.sh ASCEND_SIM SRCDIR
set -u
sim=$1
src=$2
fails=0
n=0
work=$(mktemp -d /tmp/ascend-sim-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
week=$src/examples/traces/week.csv
config=$src/examples/ascend_cluster.yaml

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; fails=$((fails + 1)); }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

# expect DESC STATUS PATTERN CMD...: CMD exits STATUS and its stderr matches PATTERN
expect() {
	local desc=$1 want=$2 pattern=$3
	shift 3
	local err status
	err=$("$@" 2>&1 >/dev/null)
	status=$?
	if [ "$status" -eq "$want" ] && grep -qE -- "$pattern" <<<"$err"; then
		ok "$desc"
	else
		not_ok "$desc (exit $status, want $want)"
		echo "#   stderr: ${err:0:400}"
	fi
}

# a replay of the example week with faults, files and a figure
"$sim" --trace "$week" --config "$config" --mtbf 20000h --seed 3 --out "$work/out" \
	>"$work/out.txt" 2>"$work/err.txt"
check "the example replay exits 0" "[ $? -eq 0 ]"
for f in summary.csv utilization.csv jobs.csv utilization.gp; do
	check "it wrote $f" "[ -s '$work/out/$f' ]"
done
check "summary.csv has its header" \
	"head -1 '$work/out/summary.csv' | grep -qx 'metric,unit,static,ascendfs,ratio,blind,ratio_blind'"
rows=$(($(wc -l <"$week") - 1))
check "jobs.csv has one row per trace job ($rows)" \
	"[ \$((\$(wc -l <'$work/out/jobs.csv') - 1)) -eq $rows ]"
# columns 11, 22 and 25: the static and ascendfs outcomes, ascendfs's preemptions. Under
# ascendfs a job may be preempted until its time limit (the 64-NPU pre-training job at
# job priority 300 of the research queue is, with this seed and the example's aging),
# but none ends otherwise
check "every job completed under static" \
	"[ \$(awk -F, '\$11 == \"completed\"' '$work/out/jobs.csv' | wc -l) -eq $rows ]"
check "under ascendfs every job completed, or timed out after preemptions" \
	"[ \$(awk -F, 'NR > 1 && (\$22 == \"completed\" || (\$22 == \"timeout\" && \$25 > 0))' '$work/out/jobs.csv' | wc -l) -eq $rows ]"
check "jobs.csv has the blind engine's columns" \
	"head -1 '$work/out/jobs.csv' | grep -q ',blind_outcome,'"
check "the table has a blind column" "grep -qE '^ +\\(rank table\\) +\\(this config\\) +as/st +\\(binpack\\) +as/bl' '$work/out.txt'"
if command -v gnuplot >/dev/null; then
	check "gnuplot drew utilization.svg" "grep -q '<svg' '$work/out/utilization.svg'"
else
	check "without gnuplot it says how to get the figure" \
		"grep -q 'apt-get install gnuplot-nox' '$work/err.txt'"
fi
for goal in "allocation \(NPUs running jobs\) while jobs wait >= 90%" \
	"mean queueing delay below static FIFO" \
	"p99 queueing delay no worse than static FIFO" \
	"no tensor-parallel group across servers" \
	"work lost per interruption <= checkpoint interval"; do
	check "goal met: $goal" "grep -E '$goal' '$work/out.txt' | grep -q ': met'"
done
check "the table prints ratios" "grep -qE 'queueing delay, mean +[0-9.]+ h +[0-9.]+ h +[0-9.]+x' '$work/out.txt'"

# the same seed gives the same figures; another seed other faults
"$sim" --trace "$week" --config "$config" --mtbf 20000h --seed 3 --out "$work/again" \
	--plot none >/dev/null 2>&1
check "the same seed gives the same summary" "cmp -s '$work/out/summary.csv' '$work/again/summary.csv'"
check "--plot none draws nothing" "[ ! -e '$work/again/utilization.svg' ]"
"$sim" --trace "$week" --config "$config" --mtbf 2000h --seed 4 --out "$work/other" \
	--plot none >/dev/null 2>&1
check "another seed and MTBF give other faults" \
	"! cmp -s '$work/out/summary.csv' '$work/other/summary.csv'"

# a generated cluster, a slice and load scaling
"$sim" --trace "$week" --servers 8 --slice 10:60 --load-scale 2 >"$work/gen.txt" 2>&1
check "--servers, --slice and --load-scale run" "[ $? -eq 0 ]"
check "the slice keeps 50 jobs" "grep -q ': 50 of $rows jobs' '$work/gen.txt'"
check "the generated cluster has 64 NPUs" "grep -q '8 servers, 64 NPUs' '$work/gen.txt'"

# refusals: exit 2, a sentence on stderr
printf 'submit_sec,duration_sec,npus,queue,priority\n0,60,8,,\n10,60,eight,,\n' >"$work/bad.csv"
printf 'submit_sec,duration_sec,npus,queue,priority\n0,60,9999,,\n' >"$work/huge.csv"
printf 'cluster:\n  name: x\n  bogus: 1\n' >"$work/bad.yaml"
expect "no --trace" 2 "give the trace with --trace" "$sim" --servers 4
expect "no cluster" 2 "give the cluster with --config FILE or --servers N" "$sim" --trace "$week"
expect "both --config and --servers" 2 "one of them" \
	"$sim" --trace "$week" --servers 4 --config "$config"
expect "a missing trace file is named" 2 "$work/none.csv: No such file" \
	"$sim" --trace "$work/none.csv" --servers 4
expect "a bad trace row says file and line" 2 "bad.csv:3: npus: 'eight' is not a whole number" \
	"$sim" --trace "$work/bad.csv" --servers 4
expect "a bad config says file and line" 2 "bad.yaml:3" \
	"$sim" --trace "$week" --config "$work/bad.yaml"
expect "an empty slice" 2 "--slice 500:600 keeps no job" \
	"$sim" --trace "$week" --servers 4 --slice 500:600
expect "a bad slice" 2 "--slice: 'x' is not A:B" "$sim" --trace "$week" --servers 4 --slice x
expect "a bad duration" 2 "--mtbf: 'soon' is not a duration" \
	"$sim" --trace "$week" --servers 4 --mtbf soon
expect "a bad load scale" 2 "--load-scale: '0' is not a number from 0.001 to 1000" \
	"$sim" --trace "$week" --servers 4 --load-scale 0
expect "a bad plot format" 2 "--plot: 'gif' is not svg, png or none" \
	"$sim" --trace "$week" --servers 4 --plot gif
expect "a bad --stretch-runs" 2 "--stretch-runs: 'maybe' is not on or off" \
	"$sim" --trace "$week" --servers 4 --stretch-runs maybe
expect "jobs larger than the cluster" 2 "no job of the trace fits this cluster \(32 NPUs\)" \
	"$sim" --trace "$work/huge.csv" --servers 4
expect "an output directory that cannot be made, before any replay" 2 "--out $work/bad.csv/out: cannot make the directory" \
	"$sim" --trace "$week" --servers 4 --out "$work/bad.csv/out"
"$sim" --help | grep -q -- "--checkpoint-interval DURATION"
check "--help lists the options" "[ $? -eq 0 ]"

echo "1..$n"
[ "$fails" -eq 0 ]
