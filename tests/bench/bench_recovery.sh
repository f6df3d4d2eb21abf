#!/usr/bin/env bash
# Issue 17's figures on real processes: steps lost per fault, the time from the fault
# to every process stepping again, and the processes restarted, for each strategy
# against job-level recovery ([job]) in the same run. Six agents on this machine run
# examples/train_demo as a 2-server msrun job (20 ms steps, a checkpoint every 100
# steps = 2 s), and a fault comes at a random moment 1-3 s after both processes
# started, on one of its two servers (alternating, so node rank 0's server fails half
# the time):
#  - an NPU fault (a Critical NPU reported): recovery: [dump, job] and [process, job]
#    against [job]; steps lost = the most steps a generation-1 process had computed
#    when it stopped (or paused, for the one process-level keeps), minus the step
#    generation 2 resumed (or went on) at;
#  - a process crash (SIGKILL to one process): recovery: [in-place, job] against [job];
#    steps lost = the step the surviving process had reached when it stopped (job) or
#    paused (in-place), minus the step the job went on from (the killed process's
#    step in flight is lost either way). Asserts nothing about time.
# Usage: bench_recovery.sh ASCENDFS ASCEND_AGENT TRAIN_DEMO SRCDIR
#        (BENCH_RECOVERY_REPS=5 faults per strategy, BENCH_RECOVERY_SEED=1,
#         BENCH_RECOVERY_PARTS="npu crash": the NPU faults, the process crashes)
set -u
ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
TRAIN=$(realpath "$3")
SRC=$(realpath "$4")
REPS=${BENCH_RECOVERY_REPS:-5}
PARTS=${BENCH_RECOVERY_PARTS:-npu crash}
RANDOM=${BENCH_RECOVERY_SEED:-1}
. "$SRC/tests/integration/lib.sh"
it_setup
M=$IT_MNT
W=$IT_WORK
CONFIG=$W/cluster.yaml
sed -e 's/^  fault_check_interval: 5 .*/  fault_check_interval: 1/' \
	-e 's/^  heartbeat_timeout: 15 .*/  heartbeat_timeout: 3\n  stop_grace_period: 2\n  fault_hold_time: 1\n  fault_escalate_count: 0/' \
	-e 's/^  require_agent: false .*/  require_agent: true\n  recovery_timeout: 10/' \
	"$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
. "$SRC/tests/integration/agents_lib.sh"
trap 'agents_cleanup; it_cleanup' EXIT
it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/state" >/dev/null || exit 1
agents_start || { echo "the agents did not all report"; exit 1; }
mkdir -p "$W/ckpt"

# (fault_escalate_count 0: the same NPU fails again and again here, and escalation would
# take it out of service until `clear`, leaving too few whole servers)
# one fault: prints "strategy rep server lost_steps fault_to_running_ms restarted"
one() {
	local strategy=$1 rep=$2 name=b-$1-$2 a0 a1 victim kept t0 lost done1 r s restarted=2
	local ladder="[job]"
	[ "$strategy" = dump ] && ladder="[dump, job]"
	[ "$strategy" = process ] && ladder="[process, job]"
	mkdir -p "$W/ckpt/$name"
	submit "$name" <<SPEC
name: $name
npus: 16
command: "exec $TRAIN --steps 1000000 --step-ms 20 --ckpt-every 100"
checkpoint_dir: $W/ckpt/$name
recovery: $ladder
SPEC
	read -r a0 a1 <<<"$(servers_of "$name")"
	wait_until 20 all_started "$name" 1 "$a0" "$a1" || { echo "# $name did not start"; return 1; }
	sleep "$((1 + RANDOM % 2)).$((RANDOM % 10))"
	victim=$a0
	[ $((rep % 2)) = 1 ] && victim=$a1
	kept=$a1
	[ "$victim" = "$a1" ] && kept=$a0
	t0=$(now_ms)
	fault "$victim"
	wait_until 30 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/$name/status.json\"))[\"generation\"])' 2>/dev/null)\" = 2 ]" ||
		{ echo "# $name did not restart"; echo cancel >"$M/jobs/$name/ctl"; return 1; }
	read -r b0 b1 <<<"$(servers_of "$name")"
	if [ "$strategy" = process ]; then
		# the kept process logs on in generation 1's file; the new one in 2's
		local new=$b0
		[ "$b0" = "$kept" ] && new=$b1
		wait_until 30 bash -c "grep -q 'resumed in the new generation at step' '$(log_of "$name" 1 "$kept")' && grep -q 'resumed in the new generation at step' '$(log_of "$name" 2 "$new")'" ||
			{ echo "# $name did not go on"; echo cancel >"$M/jobs/$name/ctl"; return 1; }
		done1=$(($(now_ms) - t0))
		wait_until 10 grep -q 'terminated at step' "$(log_of "$name" 1 "$victim")"
		r=$(step_in "$(log_of "$name" 2 "$new")" "resumed in the new generation at step")
		local p t
		p=$(step_in "$(log_of "$name" 1 "$kept")" "paused at step")
		t=$(step_in "$(log_of "$name" 1 "$victim")" "terminated at step")
		lost=$(( (${t:-0} > ${p:-0} ? ${t:-0} : ${p:-0}) - ${r:-0} ))
		restarted=1
	else
		wait_until 30 all_started "$name" 2 "$b0" "$b1" ||
			{ echo "# $name generation 2 did not start"; echo cancel >"$M/jobs/$name/ctl"; return 1; }
		done1=$(($(now_ms) - t0))
		wait_until 10 bash -c "grep -q 'terminated at step' '$(log_of "$name" 1 "$a0")' && grep -q 'terminated at step' '$(log_of "$name" 1 "$a1")'"
		lost=0
		r=$(step_in "$(log_of "$name" 2 "$b0")" "resumed at step")
		for s in "$a0" "$a1"; do
			local t
			t=$(step_in "$(log_of "$name" 1 "$s")" "terminated at step")
			[ -n "$t" ] && [ $((t - ${r:-0})) -gt "$lost" ] && lost=$((t - ${r:-0}))
		done
	fi
	echo "$strategy $rep $victim $lost $done1 $restarted"
	echo cancel >"$M/jobs/$name/ctl"
	printf 'npu 3 OK\n' >"$W/faults/$victim.tmp" && mv "$W/faults/$victim.tmp" "$W/faults/$victim"
	wait_until 20 bash -c "[ \"\$(cat '$M/jobs/$name/status')\" = cancelled ]"
	sleep 3 # the NPU's hold time, then it is back in service
}

# one process crash: prints "strategy rep server lost_steps crash_to_running_ms restarted"
pid_of() { sed -n 's/^started \([0-9]*\) .*/\1/p' "$W/logs/$3/$1/g$2/node-$3.state" 2>/dev/null; }
crash() {
	local strategy=$1 rep=$2 name=c-$1-$2 a0 a1 victim other pid_other t0 lost ms restarted
	local ladder="[job]" paused resumed t
	[ "$strategy" = in-place ] && ladder="[in-place, job]"
	mkdir -p "$W/ckpt/$name"
	submit "$name" <<SPEC
name: $name
npus: 16
command: "exec $TRAIN --steps 1000000 --step-ms 20 --ckpt-every 100"
checkpoint_dir: $W/ckpt/$name
recovery: $ladder
SPEC
	read -r a0 a1 <<<"$(servers_of "$name")"
	wait_until 20 all_started "$name" 1 "$a0" "$a1" || { echo "# $name did not start"; return 1; }
	sleep "$((1 + RANDOM % 2)).$((RANDOM % 10))"
	victim=$a0 other=$a1
	[ $((rep % 2)) = 1 ] && victim=$a1 other=$a0
	pid_other=$(pid_of "$name" 1 "$other")
	t0=$(now_ms)
	kill -KILL "$(pid_of "$name" 1 "$victim")"
	if [ "$strategy" = in-place ]; then
		wait_until 30 bash -c "grep -q 'resumed in place at step' '$(log_of "$name" 1 "$a0")' && grep -q 'resumed in place at step' '$(log_of "$name" 1 "$a1")'" ||
			{ echo "# $name did not resume in place"; echo cancel >"$M/jobs/$name/ctl"; return 1; }
		ms=$(($(now_ms) - t0))
		paused=$(step_in "$(log_of "$name" 1 "$other")" "paused at step")
		resumed=$(step_in "$(log_of "$name" 1 "$victim")" "resumed in place at step")
		lost=$((${paused:-0} - ${resumed:-0}))
		restarted=1
		[ "$(pid_of "$name" 1 "$other")" = "$pid_other" ] || restarted=2
	else
		wait_until 30 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/$name/status.json\"))[\"generation\"])' 2>/dev/null)\" = 2 ]" ||
			{ echo "# $name did not restart"; echo cancel >"$M/jobs/$name/ctl"; return 1; }
		wait_until 30 all_started "$name" 2 "$a0" "$a1" ||
			{ echo "# $name generation 2 did not start"; echo cancel >"$M/jobs/$name/ctl"; return 1; }
		ms=$(($(now_ms) - t0))
		wait_until 10 grep -q 'terminated at step' "$(log_of "$name" 1 "$other")"
		t=$(step_in "$(log_of "$name" 1 "$other")" "terminated at step")
		resumed=$(step_in "$(log_of "$name" 2 "$a0")" "resumed at step")
		lost=$((${t:-0} - ${resumed:-0}))
		restarted=2
	fi
	echo "$strategy $rep $victim $lost $ms $restarted"
	echo cancel >"$M/jobs/$name/ctl"
	wait_until 20 bash -c "[ \"\$(cat '$M/jobs/$name/status')\" = cancelled ]"
}

echo "# recovery benchmark: $REPS faults per strategy, seed ${BENCH_RECOVERY_SEED:-1}"
: >"$W/rows"
: >"$W/crash-rows"
# the crashes first: a process that dies on a server with a recent NPU fault is taken
# for that server's fault (a suspect server), which no in-place restart is for
case " $PARTS " in *" crash "*)
	for rep in $(seq 1 "$REPS"); do
		for strategy in job in-place; do crash "$strategy" "$rep" | tee -a "$W/crash-rows"; done
	done ;;
esac
case " $PARTS " in *" npu "*)
	for rep in $(seq 1 "$REPS"); do
		for strategy in job dump process; do one "$strategy" "$rep" | tee -a "$W/rows"; done
	done ;;
esac
python3 - "$W/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
by = {}
for strategy, rep, server, lost, ms, restarted in rows:
    by.setdefault(strategy, []).append((int(lost), int(ms), int(restarted)))
print("| strategy | faults | steps lost, mean / max | fault report to both processes stepping, p50 / max ms | processes started per fault |")
print("|---|---:|---|---|---:|")
for s in ("job", "dump", "process"):
    v = by.get(s, [])
    if not v:
        continue
    lost = [x for x, _, _ in v]
    ms = sorted(y for _, y, _ in v)
    print(f"| {s} | {len(v)} | {st.mean(lost):.0f} / {max(lost)} | {ms[len(ms) // 2]} / {ms[-1]} | {st.mean(z for _, _, z in v):.1f} |")
PY
echo "# process crashes (SIGKILL to one of the two processes)"
python3 - "$W/crash-rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
by = {}
for strategy, rep, server, lost, ms, restarted in rows:
    by.setdefault(strategy, []).append((int(lost), int(ms), int(restarted)))
print("| strategy | crashes | steps lost, mean / max | crash to both processes stepping, p50 / max ms | processes restarted per crash |")
print("|---|---:|---|---|---:|")
for s in ("job", "in-place"):
    v = by.get(s, [])
    if not v:
        continue
    lost = [x for x, _, _ in v]
    ms = sorted(y for _, y, _ in v)
    print(f"| {s} | {len(v)} | {st.mean(lost):.0f} / {max(lost)} | {ms[len(ms) // 2]} / {ms[-1]} | {st.mean(z for _, _, z in v):.1f} |")
PY
agents_cleanup
it_stop > >(grep -v '^ok ' >&2)
