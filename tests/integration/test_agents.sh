#!/usr/bin/env bash
# Real processes through a real mount: node agents (one per server, all on this machine)
# report health and run examples/train_demo as the jobs' processes. A Critical NPU moves a
# 32-NPU msrun job and it resumes from its last checkpoint; a SIGKILLed agent makes its
# server unreachable and its job moves; a process exiting non-zero restarts its job from
# its checkpoint, or fails it once max_restarts is spent; per-rank processes run as the
# job's owner; cancel and agent shutdown stop processes (SIGTERM, then SIGKILL). Each job
# generation runs in a cgroup of its own (below $CGROOT): a detached grandchild that
# ignores SIGTERM is stopped with its job, survives a SIGKILLed agent and is adopted by
# the restarted one, or stopped by it once the job is no longer listed; usage is shown.
# Usage: test_agents.sh ASCENDFS ASCEND_AGENT TRAIN_DEMO CHECK_RANKTABLE SRCDIR
set -u
ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
TRAIN=$(realpath "$3")
CHECK=$(realpath "$4")
SRC=$(realpath "$5")
. "$SRC/tests/integration/lib.sh"

it_setup
M=$IT_MNT
W=$IT_WORK
GRACE=2 # stop_grace_period of the test cluster

# The example cluster with a 1 s check interval, a 3 s heartbeat timeout, a 2 s stop
# grace period, and agents required: only the servers whose agents run here are used.
CONFIG=$W/cluster.yaml
sed -e 's/^  fault_check_interval: 5 .*/  fault_check_interval: 1/' \
	-e "s/^  heartbeat_timeout: 15 .*/  heartbeat_timeout: 3\n  stop_grace_period: $GRACE/" \
	-e 's/^  require_agent: false .*/  require_agent: true/' \
	"$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
if ! grep -q 'heartbeat_timeout: 3$' "$CONFIG" || ! grep -q 'require_agent: true$' "$CONFIG"; then
	echo "could not derive the test config"
	exit 1
fi

# ---- per-job cgroups: a cgroup root of this test's own, removed on every path ---------
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
CGROOT=""
if [ -n "$CG2" ] && mkdir "$CG2/ascendfs-it-$$" 2>/dev/null; then
	CGROOT=$CG2/ascendfs-it-$$
else
	echo "# cgroup v2 is not writable here (mount: '${CG2:-none}'): the per-job cgroup checks are skipped"
fi

# ---- agents -----------------------------------------------------------------------
declare -A AGENT_PID=()
FINISHED=""
SERVERS="a2-node-01 a2-node-02 a2-node-03 a2-node-04 a2-node-05 a2-node-06"

# Kill what the agents started (process groups named in their logs), then the agents.
agents_cleanup() {
	local n
	for n in "${!AGENT_PID[@]}"; do
		kill -KILL "${AGENT_PID[$n]}" 2>/dev/null
	done
	[ -n "${DUP:-}" ] && kill -KILL "$DUP" 2>/dev/null
	[ -n "$CGROOT" ] && it_cgroup_kill "$CGROOT"
	# every group was stopped and checked on the normal path: do not touch reused pids
	[ -n "$FINISHED" ] && return
	it_kill_started "$W"/agent-*.log "$W/dup-agent.log" "$W/dup2-agent.log"
	AGENT_PID=()
}
trap 'agents_cleanup; it_cleanup' EXIT

start_agent() { # start_agent SERVER
	local n=$1 i=${1#a2-node-}
	i=$((10#$i))
	mkdir -p "$W/faults" "$W/logs/$n"
	{ for d in 0 1 2 3 4 5 6 7; do echo "address_$d=10.20.$d.$i"; done; } >"$W/hccn-$n.conf"
	# placement variables in the agent's own environment must reach no job process
	# (item 9): a leaked MS_ROLE would make train_demo a scheduler, a leaked
	# RANK_TABLE_FILE would make it wait for a table that does not exist
	ASCEND_RT_VISIBLE_DEVICES=7 DEVICE_ID=9 MS_ROLE=MS_SCHED RANK_TABLE_FILE=/nonexistent/rt.json \
	"$AGENT" --mount "$M" --node "$n" --fault-file "$W/faults/$n" \
		--hccn-conf "$W/hccn-$n.conf" --log-dir "$W/logs/$n" \
		${CGROOT:+--cgroup-root "$CGROOT"} >>"$W/agent-$n.log" 2>&1 &
	AGENT_PID[$n]=$!
}
# all_gone PID...: none of them runs (an exited process whose parent died may stay a zombie
# of pid 1 for a while: that does not run)
all_gone() {
	local p
	for p in "$@"; do
		[ -n "$p" ] || return 1
		[ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && return 1
	done
	return 0
}
# job_cgroup SERVER JOB GEN: the cgroup of that job generation on SERVER (may not exist)
job_cgroup() { echo "$CGROOT"/node-"$1"-*/job-"$2".g"$3"; }

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
state_of() { json "$M/nodes/$1/info" 'd["state"]' 2>/dev/null; }
gen_of() { json "$M/jobs/$1/status.json" 'd["generation"]' 2>/dev/null; }
status_of() { cat "$M/jobs/$1/status" 2>/dev/null; }
servers_of() { json "$M/jobs/$1/status.json" '" ".join(p["server"] for p in d["placement"])'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# log_of JOB GEN SERVER: the msrun process log of that server
log_of() { echo "$W/logs/$3/$1/g$2/node-$3.log"; }
# step_in LOG PATTERN: the number after PATTERN in the last matching line of LOG
step_in() { sed -n "s/.*$2 \([0-9]*\).*/\1/p" "$1" 2>/dev/null | tail -n1; }
# iso_ms TIME: "2025-01-31T12:00:00.123Z" (agent logs, events) as epoch milliseconds
iso_ms() {
	python3 -c 'import sys,datetime as d; print(int(d.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=d.timezone.utc).timestamp()*1000))' "$1"
}
# event_ms TEXT: epoch ms of the first event in cluster/events whose reason has TEXT
event_ms() {
	python3 -c '
import json, sys, datetime as d
for line in open(sys.argv[1]):
    e = json.loads(line)
    if sys.argv[2] in e["reason"]:
        t = d.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        print(int(t.replace(tzinfo=d.timezone.utc).timestamp() * 1000))
        break' "$M/cluster/events" "$1"
}
# stop_ms JOB: epoch ms of JOB's first event in state stopping
stop_ms() {
	python3 -c '
import json, sys, datetime as d
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["state"] == "stopping":
        t = d.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        print(int(t.replace(tzinfo=d.timezone.utc).timestamp() * 1000))
        break' "$M/jobs/$1/events"
}
# log_ms PATTERN FILES...: epoch ms of the last agent log line matching PATTERN
log_ms() {
	local p=$1 t
	shift
	t=$(grep -h -- "$p" "$@" | sort | tail -n1 | cut -d' ' -f1)
	[ -n "$t" ] && iso_ms "$t"
}
submit() { # submit NAME (spec on stdin)
	cat >"$W/$1.yaml"
	cp "$W/$1.yaml" "$M/jobs/$1.yaml"
}

it_start "$ASCENDFS" "$CONFIG" || exit 1
# a little apart, as on real servers: the agents' intervals are not in step
for n in $SERVERS; do
	start_agent "$n"
	sleep 0.17
done
all_ready() {
	for n in $SERVERS; do [ "$(state_of "$n")" = ready ] || return 1; done
}
if wait_until 20 all_ready; then ok "six agents report: their servers are ready"; else
	not_ok "six agents report: their servers are ready" "$(for n in $SERVERS; do echo "$n $(state_of "$n")"; done)"
fi
check_eq "a server without an agent stays unknown (require_agent)" unknown "$(state_of a2-node-07)"

# ---- (a) a 32-NPU msrun job runs on four agents and checkpoints -------------------
CK=$W/ckpt/train32
mkdir -p "$CK"
STEPS=160 EVERY=10 STEP_MS=50
submit train32 <<EOF
name: train32
npus: 32
launch: msrun
command: "exec $TRAIN --steps $STEPS --step-ms $STEP_MS --ckpt-every $EVERY"
checkpoint_dir: $CK
max_restarts: 3
EOF
check_eq "train32 runs" running "$(status_of train32)"
A_SERVERS=$(servers_of train32)
check_eq "on four of the six servers" 4 "$(echo "$A_SERVERS" | wc -w)"
all_started() { # all_started JOB GEN SERVERS...: each server's process passed its start checks
	local j=$1 g=$2 s
	shift 2
	for s in "$@"; do grep -qE "rank table .*status completed|dynamic cluster: " "$(log_of "$j" "$g" "$s")" || return 1; done
}
# shellcheck disable=SC2086
if wait_until 15 all_started train32 1 $A_SERVERS; then ok "a process runs on each of its servers"; else
	not_ok "a process runs on each of its servers" "$(tail -n3 "$W"/agent-*.log)"
fi
# shellcheck disable=SC2086
set -- $A_SERVERS
VICTIM=$1 # node rank 0: the process that writes the checkpoints
# enable_dynamic_network: true (the example's): msrun's environment, no rank table to wait for
check_contains "node rank 0 gets msrun's dynamic cluster: its own server is the scheduler's, 32 workers" \
	"dynamic cluster: msrun, scheduler 10.0.1.$((10#${VICTIM#a2-node-})):" \
	"$(cat "$(log_of train32 1 "$VICTIM")")"
check_contains "none of the agent's placement variables: the job's NPUs, no DEVICE_ID, no MS_ROLE" \
	"environment: ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 DEVICE_ID=(unset) MS_ROLE=(unset)" \
	"$(cat "$(log_of train32 1 "$VICTIM")")"
check_contains "msrun env: node rank 3 is the fourth server" "train_demo[train32 g1 node 3]" \
	"$(cat "$(log_of train32 1 "$4")")"
check "the rank table passes the HCCL checker" \
	"$CHECK" --npus-per-server 8 --completed --ranks 32 "$M/jobs/train32/ranktable.json"
if wait_until 20 test -f "$CK/demo-1_40.ckpt"; then ok "rank 0 writes checkpoints (step 40 seen)"; else
	not_ok "rank 0 writes checkpoints (step 40 seen)" "$(ls "$CK")"
fi
check_contains "and reports them: the job's resume point follows" "demo-1_" \
	"$(cat "$M/jobs/train32/status.json")"
check_eq "a checkpoint holds its step" 40 "$(cat "$CK/demo-1_40.ckpt" 2>/dev/null)"

# ---- (b) Critical on one NPU of node rank 0's server: the job moves and resumes ---
printf 'npu 3 Critical 0x80C98000 HBM uncorrectable ECC\n' >"$W/faults/$VICTIM.tmp"
mv "$W/faults/$VICTIM.tmp" "$W/faults/$VICTIM"
if wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/train32/status.json\"))[\"generation\"])')\" = 2 ]"; then
	ok "the fault restarts train32 as generation 2"
else
	not_ok "the fault restarts train32 as generation 2" "$(status_of train32) $(gen_of train32)"
fi
B_SERVERS=$(servers_of train32)
case " $B_SERVERS " in
*" $VICTIM "*) not_ok "generation 2 left $VICTIM" "placement: $B_SERVERS" ;;
*) ok "generation 2 left $VICTIM" ;;
esac
kept=0
for s in $B_SERVERS; do case " $A_SERVERS " in *" $s "*) kept=$((kept + 1)) ;; esac; done
check_eq "and kept its three healthy servers" 3 "$kept"
# shellcheck disable=SC2086
if wait_until 15 all_started train32 2 $B_SERVERS; then ok "generation 2 runs on its four servers"; else
	not_ok "generation 2 runs on its four servers" "$(tail -n5 "$W"/agent-*.log)"
fi
# what generation 1 had when it was stopped, and where generation 2 started
v1log=$(log_of train32 1 "$VICTIM")
wait_until 5 grep -q "terminated at step" "$v1log"
stopped_at=$(step_in "$v1log" "terminated at step")
# the newest checkpoint the daemon could know when it moved the job: generation 1 goes on
# (and may write more) until its agent stops it, later under load; a file renamed into
# place in the last 250 ms before the move may not have been reported yet. The files'
# times are the wall clock's; so is the agent's log line of the fault's report (written
# just after the move); the daemon's event time may be off by an NTP step since it
# started: the earlier of the two
t_moved=$(event_ms "generation 2")
t_fault=$(grep -m1 "npu 3 Critical" "$W/agent-$VICTIM.log" | cut -d' ' -f1)
[ -n "$t_fault" ] && t_fault=$(iso_ms "$t_fault")
[ -n "$t_fault" ] && { [ -z "$t_moved" ] || [ "$t_fault" -lt "$t_moved" ]; } && t_moved=$t_fault
last_ckpt=$(python3 -c '
import glob, os, re, sys
limit, best = int(sys.argv[2]) - 250, 0
for f in glob.glob(os.path.join(sys.argv[1], "demo-1_*.ckpt")):
    m = re.search(r"_(\d+)\.ckpt$", f)
    if m and os.stat(f).st_mtime_ns // 1000000 <= limit:
        best = max(best, int(m.group(1)))
print(best)' "$CK" "${t_moved:-0}")
resumes=""
for s in $B_SERVERS; do resumes="$resumes $(step_in "$(log_of train32 2 "$s")" "resumed at step")"; done
# shellcheck disable=SC2086 # one step per word
min_resume=$(printf '%s\n' $resumes | sort -n | head -n1)
if [ -n "$last_ckpt" ] && [ "$last_ckpt" -gt 0 ]; then
	ok "generation 1 on $VICTIM was stopped at step $stopped_at; newest checkpoint when the job moved: $last_ckpt"
else
	not_ok "generation 1 on $VICTIM was stopped with a checkpoint" "$(tail -n3 "$v1log")"
	last_ckpt=1
fi
ok_resume=1
for r in $resumes; do [ "$r" -ge "$last_ckpt" ] || ok_resume=0; done
if [ "$ok_resume" = 1 ] && [ "$(echo "$resumes" | wc -w)" = 4 ]; then
	ok "every generation 2 process resumed at the newest checkpoint or later (steps:$resumes), not 0"
else
	not_ok "every generation 2 process resumed at the newest checkpoint or later" \
		"newest checkpoint when the job moved $last_ckpt (event at ${t_moved:-?} ms), resumed at:$resumes" \
		"checkpoints: $(ls --full-time "$CK" | tail -n 4 | tr '\n' '|')"
fi
check_contains "the agent of $VICTIM stopped generation 1 and did not report its exit" \
	"job train32 generation 1: stopping (no longer listed" "$(cat "$W/agent-$VICTIM.log")"
if grep -h "job train32 generation 1 .*reported exit" "$W"/agent-*.log; then
	not_ok "no agent reported an exit of generation 1"
else
	ok "no agent reported an exit of generation 1"
fi
if wait_until 30 bash -c "[ \"\$(cat '$M/jobs/train32/status')\" = completed ]"; then
	ok "train32 completes"
else
	not_ok "train32 completes" "status $(status_of train32): $(cat "$M/jobs/train32/error")"
fi
done_all=0
for s in $B_SERVERS; do grep -q "done at step $STEPS" "$(log_of train32 2 "$s")" && done_all=$((done_all + 1)); done
check_eq "each of its four processes reached step $STEPS and exited 0" 4 "$done_all"
check_contains "its events say why it completed" "every process exited with status 0" \
	"$(cat "$M/jobs/train32/events")"
fault_ms=$(sed -n 's/.*npu 3 Critical .*report written in \([0-9]*\) ms.*/\1/p' "$W/agent-$VICTIM.log" | head -n1)
t_report=$(log_ms "npu 3 Critical" "$W/agent-$VICTIM.log")
t_restarted=$(log_ms "job train32 generation 2 (node rank .*started pid" "$W"/agent-*.log)

# ---- (c) SIGKILL one agent: its server becomes unreachable, the job moves ---------
# $VICTIM keeps NPU 3 isolated (its fault file still says Critical): 5 whole servers
CK2=$W/ckpt/hb
mkdir -p "$CK2"
submit hb <<EOF
name: hb
npus: 16
command: "exec $TRAIN --steps 100 --step-ms 50 --ckpt-every 10"
checkpoint_dir: $CK2
EOF
check_eq "job hb runs" running "$(status_of hb)"
HB_SERVERS=$(servers_of hb)
# shellcheck disable=SC2086
set -- $HB_SERVERS
LOST=$2
# shellcheck disable=SC2086
wait_until 15 all_started hb 1 $HB_SERVERS || not_ok "hb's processes start" "$(tail -n3 "$W"/agent-*.log)"
wait_until 10 test -f "$CK2/demo-1_20.ckpt"
lost_pid=$(sed -n 's/.*job hb generation 1 (node rank 1): started pid \([0-9]*\):.*/\1/p' "$W/agent-$LOST.log")
t_kill=$(now_ms)
kill -KILL "${AGENT_PID[$LOST]}"
wait "${AGENT_PID[$LOST]}" 2>/dev/null
unset "AGENT_PID[$LOST]"
# (hb runs 5 s: see at once whether its process outlived the agent)
if [ -n "$CGROOT" ]; then
	check "the dead agent's process outlives it in its cgroup" kill -0 "${lost_pid:-0}"
fi
# 3 intervals of silence, the daemon's 1 s heartbeat check, slack for slow builds
if wait_until 8 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/nodes/$LOST/info\"))[\"state\"])')\" = unreachable ]"; then
	ok "$LOST is unreachable after its agent was killed"
else
	not_ok "$LOST is unreachable after its agent was killed" "state $(state_of "$LOST")"
fi
t_unreach=$(event_ms "server $LOST unreachable")
if wait_until 5 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/hb/status.json\"))[\"generation\"])')\" = 2 ]"; then
	ok "hb recovers as generation 2"
else
	not_ok "hb recovers as generation 2" "$(status_of hb) $(gen_of hb)"
fi
# shellcheck disable=SC2046
wait_until 10 all_started hb 2 $(servers_of hb)
t_hb_started=$(log_ms "job hb generation 2 (node rank .*started pid" "$W"/agent-*.log)
case " $(servers_of hb) " in
*" $LOST "*) not_ok "hb left $LOST" "placement: $(servers_of hb)" ;;
*) ok "hb left $LOST" ;;
esac
if [ -z "$CGROOT" ]; then
	if [ -n "$lost_pid" ] && wait_until 5 bash -c "! kill -0 $lost_pid"; then
		ok "the dead agent's process died with it (PR_SET_PDEATHSIG)"
	else
		not_ok "the dead agent's process died with it (PR_SET_PDEATHSIG)" "pid '$lost_pid'"
	fi
else
	# the restarted agent stops what is not listed (unless it ended on its own by then)
	still=0
	all_gone "$lost_pid" || still=1
	start_agent "$LOST"
	if wait_until $((GRACE + 8)) all_gone "$lost_pid"; then
		ok "the restarted agent stops the generation it no longer runs"
	else
		not_ok "the restarted agent stops the generation it no longer runs" "pid '$lost_pid'; $(tail -n5 "$W/agent-$LOST.log")"
	fi
	# hb's generation 1 ends on its own after 5 s: alive at the look above, it may end
	# before the restarted agent's first look (its own log then says "done at step")
	if [ "$still" = 1 ] && ! grep -q "job hb generation 1: an earlier agent left" "$W/agent-$LOST.log" &&
		grep -q "done at step" "$(log_of hb 1 "$LOST")"; then
		echo "# hb's generation 1 ended on its own before the restarted agent looked (slow machine)"
	elif [ "$still" = 1 ]; then
		check_contains "and says so" "job hb generation 1: an earlier agent left its processes running" \
			"$(cat "$W/agent-$LOST.log")"
	else
		echo "# hb's generation 1 ended on its own before its agent restarted (slow machine)"
	fi
	wait_until 5 bash -c "! ls -d $(job_cgroup "$LOST" hb 1) >/dev/null 2>&1"
	check_fails "and removes its cgroup" ls -d $(job_cgroup "$LOST" hb 1)
fi
if wait_until 30 bash -c "[ \"\$(cat '$M/jobs/hb/status')\" = completed ]"; then
	ok "hb completes on its new servers"
else
	not_ok "hb completes on its new servers" "status $(status_of hb): $(cat "$M/jobs/hb/error")"
fi
hb_resume=""
for s in $(servers_of hb); do hb_resume="$hb_resume $(step_in "$(log_of hb 2 "$s")" "resumed at step")"; done
check_fails "and its generation 2 did not start over at step 0" grep -qw 0 <<<"$hb_resume"

# ---- (d) a task fault restarts from the checkpoint; max_restarts 0 fails ----------
CK3=$W/ckpt/flaky
mkdir -p "$CK3"
submit flaky <<EOF
name: flaky
npus: 8
command: "exec $TRAIN --steps 40 --step-ms 20 --ckpt-every 10 --fail-at-step 25"
checkpoint_dir: $CK3
max_restarts: 3
EOF
# at once: flaky ends in about 2 s, and an ended job's placement is empty
F_SERVER=$(servers_of flaky)
submit fragile <<EOF
name: fragile
npus: 2
launch: per-rank
command: "exec $TRAIN --steps 40 --step-ms 20 --ckpt-every 10 --fail-at-step 5"
max_restarts: 0
EOF
if wait_until 20 bash -c "[ \"\$(cat '$M/jobs/flaky/status')\" = completed ]"; then
	ok "flaky completes"
else
	not_ok "flaky completes" "status $(status_of flaky): $(cat "$M/jobs/flaky/error")"
fi
check_eq "after one restart (generation 2)" 2 "$(gen_of flaky)"
check_contains "its agent reported the exit of generation 1" \
	"job flaky generation 1 (node rank 0): reported exit status 3" "$(cat "$W/agent-$F_SERVER.log")"
check_contains "generation 2 resumed at the checkpoint before the fault" "resumed at step 20" \
	"$(cat "$(log_of flaky 2 "$F_SERVER")")"
check_contains "the job's events name the task fault" "exited with status 3" \
	"$(cat "$M/jobs/flaky/events")"
if wait_until 20 bash -c "[ \"\$(cat '$M/jobs/fragile/status')\" = failed ]"; then
	ok "fragile (max_restarts 0) fails"
else
	not_ok "fragile (max_restarts 0) fails" "status $(status_of fragile)"
fi
check_contains "with a reason" "max_restarts (0) exhausted" "$(cat "$M/jobs/fragile/error")"
check_contains "naming the rank" "rank " "$(cat "$M/jobs/fragile/error")"
# per-rank in dynamic mode (item 4): MindSpore's workers need an MS_SCHED process, which
# the agent of node rank 0 starts as msrun would; its exit is not a task fault
# (fragile has ended: its server and first rank are in its agent's log)
FR_LOG=$(grep -l "job fragile generation 1 rank [0-9]*: started pid" "$W"/agent-*.log | head -n1)
FR_SERVER=${FR_LOG##*/agent-}
FR_SERVER=${FR_SERVER%.log}
FR_FIRST=$(sed -n 's/.*job fragile generation 1 rank \([0-9]*\): started pid.*/\1/p' "$FR_LOG" | sort -n | head -n1)
check_contains "fragile's ranks are msrun workers (MS_WORKER, MS_NODE_ID = RANK_ID)" \
	"dynamic cluster: MS_WORKER, scheduler " "$(cat "$W/logs/$FR_SERVER/fragile/g1/rank-$FR_FIRST.log")"
check_contains "its agent starts the MindSpore scheduler beside them" \
	"job fragile generation 1 MindSpore scheduler (MS_SCHED): started pid" "$(cat "$W/agent-$FR_SERVER.log")"
check_contains "which gets MS_ROLE MS_SCHED and counts no steps" "dynamic cluster: MS_SCHED, scheduler " \
	"$(cat "$W/logs/$FR_SERVER/fragile/g1/scheduler.log")"
if wait_until $((GRACE + 5)) grep -q "scheduler stopped" "$W/logs/$FR_SERVER/fragile/g1/scheduler.log"; then
	ok "and is stopped with the job"
else
	not_ok "and is stopped with the job" "$(tail -n3 "$W/logs/$FR_SERVER/fragile/g1/scheduler.log")"
fi
check_fails "its exit is not reported as a rank's" grep -q "fragile generation 1 MindSpore scheduler (MS_SCHED): reported" \
	"$W/agent-$FR_SERVER.log"
# in dynamic mode nothing waits for the rank table (item 5); in rank-table mode HCCL does
T5=$W/t5/jobs/t5
mkdir -p "$T5"
echo '{"status": "initializing"}' >"$T5/ranktable.json"
: >"$T5/ctl"
check "dynamic mode: a table still initializing blocks nothing" \
	env -i ASCEND_JOB_ID=t5 ASCEND_JOB_DIR="$T5" RANK_SIZE=2 RANK_ID=1 MS_ROLE=MS_WORKER MS_NODE_ID=1 \
	MS_SCHED_HOST=10.0.1.1 MS_SCHED_PORT=8118 MS_WORKER_NUM=2 timeout 5 "$TRAIN" --steps 2 --step-ms 10 --ranktable-wait 30
check_fails "rank-table mode: the same table is waited for" \
	env -i ASCEND_JOB_ID=t5 RANK_TABLE_FILE="$T5/ranktable.json" RANK_SIZE=2 RANK_ID=1 DEVICE_ID=1 \
	timeout 5 "$TRAIN" --steps 2 --step-ms 10 --ranktable-wait 1

# ---- per-rank processes run as the job's owner; cancel stops them with SIGKILL -----
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	mkdir -p "$W/owner"
	chmod 777 "$W/owner"
	# shellcheck disable=SC2016 # $RANK_ID is for the job's shell
	printf 'name: owned\nnpus: 2\nlaunch: per-rank\ncommand: "trap \\"\\" TERM; id -u > %s/uid-$RANK_ID; exec sleep 60"\n' \
		"$W/owner" >"$W/owned.yaml"
	setpriv --reuid=65534 --regid=65534 --clear-groups cp "$W/owned.yaml" "$M/jobs/"
	check_eq "nobody's per-rank job runs" running "$(status_of owned)"
	O_SERVER=$(servers_of owned)
	first=$(json "$M/jobs/owned/status.json" 'd["placement"][0]["first_rank"]')
	if wait_until 10 test -s "$W/owner/uid-$first" -a -s "$W/owner/uid-$((first + 1))"; then
		ok "one process per rank started"
	else
		not_ok "one process per rank started" "$(ls "$W/owner")"
	fi
	check_eq "as the job's owner" "65534 65534" "$(cat "$W/owner/uid-$first" "$W/owner/uid-$((first + 1))" | xargs)"
	check "with a log per rank" test -f "$W/logs/$O_SERVER/owned/g1/rank-$first.log"
	opids=$(sed -n 's/.*job owned generation 1 rank [0-9]*: started pid \([0-9]*\):.*/\1/p' "$W/agent-$O_SERVER.log" | xargs)
	t0=$(now_ms)
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo cancel > '$M/jobs/owned/ctl'"
	check_contains "its owner cancels it: stopping while its processes run" \
		'"state":"stopping","reason":"cancelled by its owner; stopping' "$(cat "$M/jobs/owned/events")"
	gone() { for p in $opids; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
	if [ -n "$opids" ] && wait_until $((GRACE + 5)) gone; then
		ok "processes that ignore SIGTERM are killed after the grace period ($(($(now_ms) - t0)) ms)"
	else
		not_ok "processes that ignore SIGTERM are killed after the grace period" "pids '$opids'"
	fi
	if wait_until 5 bash -c "[ \"\$(cat '$M/jobs/owned/status')\" = cancelled ]"; then
		ok "then it is cancelled"
	else
		not_ok "then it is cancelled" "$(status_of owned)"
	fi
	# two ranks and, in dynamic mode, the MindSpore scheduler
	check_contains "the agent says so" "job owned generation 1: 3 process groups still running $GRACE s after SIGTERM: SIGKILL" \
		"$(cat "$W/agent-$O_SERVER.log")"
else
	echo "# not root or no setpriv: the owner and SIGKILL checks are skipped"
fi

# ---- cancel holds the NPUs until the processes are gone (issue 14 item 2) -----------
# "hold" fills one server with a process that ignores SIGTERM and sleeps on (SIGKILLed
# after the grace period); every other server is cordoned, so "next" can only start on
# hold's NPUs. next must not start while hold's process lives; and a job whose process
# dies at once frees its NPUs well before grace + interval.
submit hold <<EOF
name: hold
npus: 8
command: "trap '' TERM; exec sleep 300"
EOF
H_SERVER=$(servers_of hold)
wait_until 10 grep -q "job hold generation 1 (node rank 0): started pid" "$W/agent-$H_SERVER.log"
for n in $SERVERS; do [ "$n" = "$H_SERVER" ] || echo cordon >"$M/nodes/$n/ctl"; done
submit next <<EOF
name: next
npus: 8
command: "exec sleep 300"
EOF
check_eq "next waits for hold's server" pending "$(status_of next)"
echo cancel >"$M/jobs/hold/ctl"
# what follows is judged by recorded times (events, status.json, agent logs), not by when
# this shell gets to look: on a loaded machine a check can run seconds late
check_contains "cancelled hold is stopping, its NPUs held" \
	'"state":"stopping","reason":"cancelled by its owner; stopping: its NPUs stay held until its processes are gone' \
	"$(cat "$M/jobs/hold/events")"
t0=$(stop_ms hold)
wait_until $((GRACE + 10)) bash -c "[ \"\$(cat '$M/jobs/next/status')\" = running ]"
check_eq "next starts once hold has stopped" running "$(status_of next)"
check_eq "hold ends cancelled" cancelled "$(status_of hold)"
# hold's end and next's start, both in the log of the one agent they share: one clock
# (the daemon's timestamps are its wall clock at start plus monotonic time since, so
# they drift from an agent's wall clock by every step NTP makes after the daemon started)
wait_until 10 grep -q "job next generation 1 (node rank 0): started pid" "$W/agent-$H_SERVER.log"
t_next=$(log_ms "job next generation 1 (node rank 0): started pid" "$W/agent-$H_SERVER.log")
t_gone=$(log_ms "job hold generation 1 (node rank 0): pid .* ended after the stop" "$W/agent-$H_SERVER.log")
if [ -n "$t_gone" ] && [ -n "$t_next" ] && [ "$t_next" -ge "$t_gone" ]; then
	ok "next started $((t_next - t_gone)) ms after hold's process ended (SIGKILL after the grace period)"
else
	not_ok "next started only after hold's process ended" "next started at ${t_next:-?}, hold's process ended at ${t_gone:-?} (agent log of $H_SERVER)"
fi
t_next=$(iso_ms "$(json "$M/jobs/next/status.json" 'd["started"]')")
hold_ms=$((${t_next:-0} - ${t0:-0}))
[ "$hold_ms" -ge $((GRACE * 1000)) ] && ok "not before the grace period's SIGKILL ($hold_ms ms after the cancel)" ||
	not_ok "not before the grace period's SIGKILL" "$hold_ms ms"
check_fails "released by its agent's report, not by the stop deadline" \
	grep -q "stop deadline" "$M/jobs/hold/status.json"
# the converse: a process that dies on SIGTERM frees the NPUs at once, not after 3 s
N_SERVER=$(servers_of next)
wait_until 10 grep -q "job next generation 1 (node rank 0): started pid" "$W/agent-$N_SERVER.log"
submit after <<EOF
name: after
npus: 8
command: "exec sleep 300"
EOF
check_eq "after waits for next's server" pending "$(status_of after)"
echo cancel >"$M/jobs/next/ctl"
wait_until $((GRACE + 8)) bash -c "[ \"\$(cat '$M/jobs/after/status')\" = running ]"
t0=$(stop_ms next)
quick_ms=$(($(iso_ms "$(json "$M/jobs/after/status.json" 'd["started"]')") - ${t0:-0}))
deadline_ms=$(((GRACE + 1) * 1000))
[ "$quick_ms" -lt $((deadline_ms / 2)) ] &&
	ok "a job whose process exits at once frees its NPUs in $quick_ms ms (deadline $deadline_ms ms)" ||
	not_ok "a job whose process exits at once frees its NPUs well before the deadline" "$quick_ms ms of $deadline_ms ms"
echo cancel >"$M/jobs/after/ctl"
wait_until 10 bash -c "[ \"\$(cat '$M/jobs/after/status')\" = cancelled ]"
for n in $SERVERS; do echo uncordon >"$M/nodes/$n/ctl"; done
# ---- per-job cgroups: what detaches and ignores SIGTERM still stops with its job ------
if [ -n "$CGROOT" ]; then
	# the job's process starts a grandchild that leaves its session and process group
	# (setsid, double fork), ignores SIGTERM, burns some CPU, then sleeps
	cat >"$W/detach.sh" <<'EOF'
#!/bin/sh
( setsid sh -c 'trap "" TERM; echo $$ > "$0"; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 300' "$1" </dev/null >/dev/null 2>&1 & )
exec sleep 300
EOF
	cgjob() { # cgjob NAME: submit a detaching job, wait for its grandchild; sets D_SERVER D_GPID D_PID
		rm -f "$W/$1.gpid"
		submit "$1" <<EOF
name: $1
npus: 1
command: "exec sh $W/detach.sh $W/$1.gpid"
EOF
		D_SERVER=$(servers_of "$1")
		wait_until 10 test -s "$W/$1.gpid"
		D_GPID=$(cat "$W/$1.gpid" 2>/dev/null)
		D_PID=$(sed -n "s/.*job $1 generation 1 (node rank 0): started pid \([0-9]*\):.*/\1/p" "$W/agent-$D_SERVER.log")
	}
	cgjob detached
	check "a job whose grandchild detaches runs" test -n "$D_GPID" -a -n "$D_PID"
	CGD=$(job_cgroup "$D_SERVER" detached 1)
	check_contains "its grandchild is in the generation's cgroup" "$D_GPID" "$(cat "$CGD/node/cgroup.procs" 2>/dev/null)"
	cpu_of() { json "$M/jobs/$1/status.json" 'd.get("usage", {}).get("cpu_usec", 0)' 2>/dev/null; }
	if wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/detached/status.json\")).get(\"usage\", {}).get(\"cpu_usec\", 0))')\" -gt 0 ]"; then
		ok "status.json shows its CPU time ($(cpu_of detached) µs)"
	else
		not_ok "status.json shows its CPU time" "$(json "$M/jobs/detached/status.json" 'd.get("usage")')"
	fi
	check_eq "per server" "$D_SERVER" "$(json "$M/jobs/detached/status.json" 'd["usage"]["servers"][0]["server"]')"
	# SIGKILL the agent: the generation is still listed, so the next agent adopts it
	kill -KILL "${AGENT_PID[$D_SERVER]}"
	wait "${AGENT_PID[$D_SERVER]}" 2>/dev/null
	start_agent "$D_SERVER"
	check "its processes outlive a SIGKILLed agent" kill -0 "${D_PID:-0}"
	if wait_until 10 grep -q "job detached generation 1 (node rank 0): adopted" "$W/agent-$D_SERVER.log"; then
		ok "the restarted agent adopts the generation it left"
	else
		not_ok "the restarted agent adopts the generation it left" "$(tail -n5 "$W/agent-$D_SERVER.log")"
	fi
	sleep 1.5 # a report or two: an adopted generation is not reported as exited
	check_eq "the job runs on as generation 1" "running 1" "$(status_of detached) $(gen_of detached)"
	check_eq "its processes were not started again" 1 "$(grep -c "job detached generation 1 (node rank 0): started pid" "$W/agent-$D_SERVER.log")"
	echo cancel >"$M/jobs/detached/ctl"
	if wait_until $((GRACE + 8)) all_gone "$D_GPID" "$D_PID"; then
		ok "cancel stops all of it, the detached grandchild that ignores SIGTERM included"
	else
		not_ok "cancel stops all of it, the detached grandchild that ignores SIGTERM included" "$(tail -n5 "$W/agent-$D_SERVER.log")"
	fi
	wait_until 5 bash -c "[ ! -d $CGD ]"
	check "and its cgroup is removed" test ! -d "$CGD"
	# SIGKILL the agent, cancel while it is down: the next agent stops what it finds
	cgjob orphaned
	CGD=$(job_cgroup "$D_SERVER" orphaned 1)
	kill -KILL "${AGENT_PID[$D_SERVER]}"
	wait "${AGENT_PID[$D_SERVER]}" 2>/dev/null
	echo cancel >"$M/jobs/orphaned/ctl"
	check "a cancelled job's processes run on while its agent is down" kill -0 "${D_GPID:-0}"
	start_agent "$D_SERVER"
	if wait_until $((GRACE + 8)) all_gone "$D_GPID" "$D_PID"; then
		ok "the restarted agent stops every process of the generation no longer listed"
	else
		not_ok "the restarted agent stops every process of the generation no longer listed" "$(tail -n5 "$W/agent-$D_SERVER.log")"
	fi
	wait_until 5 bash -c "[ ! -d $CGD ]"
	check "and removes its cgroup" test ! -d "$CGD"
fi

# ---- an agent stopped and restarted: the job restarts from its checkpoint ---------

CK4=$W/ckpt/long
mkdir -p "$CK4"
submit long <<EOF
name: long
npus: 8
command: "exec $TRAIN --steps 100000 --step-ms 50 --ckpt-every 10"
checkpoint_dir: $CK4
EOF
L_SERVER=$(servers_of long)
wait_until 10 all_started long 1 "$L_SERVER"
wait_until 10 test -f "$CK4/demo-1_10.ckpt"
lpid=$(sed -n 's/.*job long generation 1 (node rank 0): started pid \([0-9]*\):.*/\1/p' "$W/agent-$L_SERVER.log")
kill -TERM "${AGENT_PID[$L_SERVER]}"
if wait_until $((GRACE + 10)) bash -c "! kill -0 ${AGENT_PID[$L_SERVER]}"; then
	wait "${AGENT_PID[$L_SERVER]}"
	check_eq "an agent exits 0 on SIGTERM" 0 "$?"
else
	not_ok "an agent exits 0 on SIGTERM" "still running"
fi
check_fails "after stopping the job process it ran" kill -0 "${lpid:-0}"
check_contains "which saw SIGTERM" "terminated at step" "$(cat "$(log_of long 1 "$L_SERVER")")"
start_agent "$L_SERVER" # within the heartbeat timeout: the server stays ready
if wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/long/status.json\"))[\"generation\"])')\" = 2 ]"; then
	ok "the restarted agent reports the lost process: long restarts as generation 2"
else
	not_ok "the restarted agent reports the lost process: long restarts as generation 2" \
		"$(status_of long) $(gen_of long); $(tail -n5 "$W/agent-$L_SERVER.log")"
fi
check_contains "as killed (137), per the state file its predecessor left" \
	"was started by an earlier agent" "$(cat "$W/agent-$L_SERVER.log")"
L2_SERVER=$(servers_of long)
if wait_until 10 all_started long 2 "$L2_SERVER"; then ok "generation 2 of long runs"; else
	not_ok "generation 2 of long runs" "$(tail -n5 "$W/agent-$L2_SERVER.log")"
fi
check_fails "from its checkpoint, not from step 0" grep -q "starting at step 0" "$(log_of long 2 "$L2_SERVER")"

# ---- one agent per server and machine (issue 15 item 10) ------------------------------
# A second agent for a server whose agent runs here refuses to start and names the first
# (the instance lock); the first goes on, and the job's process runs once. One the lock
# does not see (another --lock-dir, as in another container) is refused by the daemon and
# runs no job process. Then the first
# is SIGKILLed and a new one started at once: it takes over (the daemon lets it after the
# other's two intervals of silence) and adopts the running generation.
A1=${AGENT_PID[$L2_SERVER]}
LG=$(gen_of long)
procs_of_long() { cat "$(job_cgroup "$L2_SERVER" long "$LG")"/*/cgroup.procs 2>/dev/null | sort; }
started_long() { grep -c "job long generation $LG (node rank 0): started pid" "$W/agent-$L2_SERVER.log"; }
n_started=$(started_long)
procs_before=$(procs_of_long)
DUP_LOG=$W/dup-agent.log # not agent-*.log: its refusal is an error on purpose
mkdir -p "$W/logs/dup"
"$AGENT" --mount "$M" --node "$L2_SERVER" --fault-file "$W/faults/$L2_SERVER" \
	--hccn-conf "$W/hccn-$L2_SERVER.conf" --log-dir "$W/logs/dup" \
	${CGROOT:+--cgroup-root "$CGROOT"} >"$DUP_LOG" 2>&1 &
DUP=$!
if wait_until 10 bash -c "! kill -0 $DUP"; then
	wait "$DUP"
	check_eq "a second agent for $L2_SERVER on this machine refuses to start (exit 1)" 1 "$?"
else
	not_ok "a second agent for $L2_SERVER on this machine refuses to start" "still running after 10 s: $(tail -n3 "$DUP_LOG")"
	kill -TERM "$DUP"
	wait_until $((GRACE + 10)) bash -c "! kill -0 $DUP"
	kill -KILL "$DUP" 2>/dev/null
	wait "$DUP" 2>/dev/null
fi
check_contains "saying which agent runs the server" \
	"another agent already runs node $L2_SERVER of the mount $(realpath "$M"): " "$(cat "$DUP_LOG")"
check_contains "with its pid and how to stop it" "is held by pid $A1 node $L2_SERVER" "$(cat "$DUP_LOG")"
check_contains "(kill -TERM)" "kill -TERM $A1" "$(cat "$DUP_LOG")"
check "the first agent goes on" kill -0 "$A1"
check_fails "the second started or adopted no job process" grep -qE "started pid|adopted" "$DUP_LOG"
check_eq "the job's process was started once" "$n_started" "$(started_long)"
# a second agent the lock does not see (another container, another --lock-dir): the daemon
# refuses its reports while the first reports, and it runs none of the server's jobs
DUP2_LOG=$W/dup2-agent.log
"$AGENT" --mount "$M" --node "$L2_SERVER" --fault-file "$W/faults/$L2_SERVER" \
	--hccn-conf "$W/hccn-$L2_SERVER.conf" --log-dir "$W/logs/dup" --lock-dir "$W/lock2" \
	${CGROOT:+--cgroup-root "$CGROOT"} >"$DUP2_LOG" 2>&1 &
DUP=$!
if wait_until 10 grep -q "count for $L2_SERVER, not this agent's" "$DUP2_LOG"; then
	ok "an agent the lock does not see is refused by the daemon, and says it runs no job"
else
	not_ok "an agent the lock does not see is refused by the daemon, and says it runs no job" "$(tail -n3 "$DUP2_LOG")"
fi
check_contains "the daemon's reason names the first agent's pid" "kill -TERM $A1 there" "$(cat "$DUP2_LOG")"
sleep 2 # two more intervals: its reports go on being refused, it starts nothing
check_fails "it started or adopted no job process" grep -qE "started pid|adopted" "$DUP2_LOG"
check_contains "the first agent's reports still count" "/$A1." "$(json "$M/nodes/$L2_SERVER/info" 'd["agent"]')"
kill -TERM "$DUP"
if wait_until 10 bash -c "! kill -0 $DUP"; then
	wait "$DUP"
	check_eq "it exits 0 on SIGTERM" 0 "$?"
else
	not_ok "it exits 0 on SIGTERM" "still running"
	kill -KILL "$DUP"
fi
DUP=""
check_eq "the job's process was still started once" "$n_started" "$(started_long)"
if [ -n "$CGROOT" ]; then
	check_eq "and only it runs in the generation's cgroup" "$procs_before" "$(procs_of_long)"
	kill -KILL "$A1"
	wait "$A1" 2>/dev/null
	start_agent "$L2_SERVER"
	A2=${AGENT_PID[$L2_SERVER]}
	agent_of() { json "$M/nodes/$1/info" 'd["agent"]' 2>/dev/null; }
	agent_is() { agent_of "$1" | grep -q "/$2\."; } # agent_is SERVER PID: its reports count
	if wait_until 10 agent_is "$L2_SERVER" "$A2"; then
		ok "an agent restarted at once after a SIGKILL takes over: info names it ($(agent_of "$L2_SERVER"))"
	else
		not_ok "an agent restarted at once after a SIGKILL takes over" "info names $(agent_of "$L2_SERVER"), not pid $A2; $(tail -n4 "$W/agent-$L2_SERVER.log")"
	fi
	check_eq "its server stayed ready" ready "$(state_of "$L2_SERVER")"
	if wait_until 10 grep -q "job long generation $LG (node rank 0): adopted" "$W/agent-$L2_SERVER.log"; then
		ok "and it adopts the running generation"
	else
		not_ok "and it adopts the running generation" "$(tail -n5 "$W/agent-$L2_SERVER.log")"
	fi
	check_eq "which runs on as generation $LG, its process started once" "running $LG $n_started" \
		"$(status_of long) $(gen_of long) $(started_long)"
	check_eq "and only it runs in the generation's cgroup" "$procs_before" "$(procs_of_long)"
fi

# ---- agent shutdown stops the processes it runs ----------------------------------
lpid=$(sed -n 's/.*job long generation 2 (node rank 0): started pid \([0-9]*\):.*/\1/p' "$W/agent-$L2_SERVER.log")
for n in "${!AGENT_PID[@]}"; do kill -TERM "${AGENT_PID[$n]}"; done
agents_ok=0
for n in "${!AGENT_PID[@]}"; do
	if wait_until $((GRACE + 10)) bash -c "! kill -0 ${AGENT_PID[$n]}"; then
		wait "${AGENT_PID[$n]}" && agents_ok=$((agents_ok + 1))
	fi
done
check_eq "every agent exits 0 on SIGTERM" "${#AGENT_PID[@]}" "$agents_ok"
AGENT_PID=()
# long's process was adopted by a restarted agent (not its child): once stopped it may stay
# a zombie of pid 1 for a while
check "after stopping the job processes they ran" wait_until 5 all_gone "${lpid:-0}"

# ---- SIGHUP: report now, and go on -----------------------------------------------------
# one report a minute: a2-node-07 turns unreachable after the 3 s heartbeat timeout, and
# only the report SIGHUP asks for brings it back before the next minute
mkdir -p "$W/logs/a2-node-07"
"$AGENT" --mount "$M" --node a2-node-07 --interval 60 --fault-file "$W/faults/a2-node-07" \
	--log-dir "$W/logs/a2-node-07" >>"$W/agent-a2-node-07.log" 2>&1 &
AGENT_PID[a2-node-07]=$!
wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/nodes/a2-node-07/info\"))[\"state\"])')\" = unreachable ]" &&
	ok "an agent reporting once a minute: its server is unreachable after 3 s" ||
	not_ok "an agent reporting once a minute: its server is unreachable after 3 s" "$(state_of a2-node-07)"
kill -HUP "${AGENT_PID[a2-node-07]}"
wait_until 5 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/nodes/a2-node-07/info\"))[\"state\"])')\" = ready ]" &&
	ok "SIGHUP: the agent reports at once (ready again)" ||
	not_ok "SIGHUP: the agent reports at once (ready again)" "$(state_of a2-node-07)"
check "and it is still running" kill -0 "${AGENT_PID[a2-node-07]}"
check_contains "and says why it reported" "SIGHUP: reporting" "$(cat "$W/agent-a2-node-07.log")"
kill -TERM "${AGENT_PID[a2-node-07]}"
wait_until 10 bash -c "! kill -0 ${AGENT_PID[a2-node-07]}"
wait "${AGENT_PID[a2-node-07]}"
check_eq "then exits 0 on SIGTERM" 0 "$?"
AGENT_PID=()

# ---- SIGHUP while the agent stops: it waits for its processes, it does not spin -------
# a job whose process ignores SIGTERM keeps the stopping agent waiting for the grace
# period; a SIGHUP then must not turn that wait into a busy loop
for j in "$M"/jobs/*/; do echo cancel >"$j/ctl" 2>/dev/null; done
for n in $SERVERS a2-node-07; do echo cordon >"$M/nodes/$n/ctl"; done
start_agent a2-node-08
wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/nodes/a2-node-08/info\"))[\"state\"])')\" = ready ]"
submit stubborn <<EOF
name: stubborn
npus: 1
command: "trap '' TERM; exec sleep 300"
EOF
if wait_until 10 grep -q "job stubborn generation 1 .*started pid" "$W/agent-a2-node-08.log"; then
	ok "a process that ignores SIGTERM runs on a2-node-08"
else
	not_ok "a process that ignores SIGTERM runs on a2-node-08" "$(status_of stubborn); $(tail -n3 "$W/agent-a2-node-08.log")"
fi
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
apid=${AGENT_PID[a2-node-08]}
kill -TERM "$apid"
sleep 0.3
kill -HUP "$apid"
t0=$(ticks "$apid")
sleep 1
t1=$(ticks "$apid")
# 1 s of a busy loop is about 100 ticks (USER_HZ); waiting costs none
[ $((t1 - t0)) -lt 20 ] && ok "SIGHUP while stopping: the agent waits ($((t1 - t0)) ticks of CPU in 1 s)" ||
	not_ok "SIGHUP while stopping: the agent waits" "$((t1 - t0)) ticks of CPU in 1 s"
if wait_until $((GRACE + 10)) bash -c "! kill -0 $apid"; then
	wait "$apid"
	check_eq "and exits 0 once the grace period's SIGKILL ended the process" 0 "$?"
else
	not_ok "and exits 0 once the grace period's SIGKILL ended the process" "still running"
fi
AGENT_PID=()
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$W"/agent-*.log; then
	not_ok "agent logs have no sanitizer report" "$(grep -h -m5 -E 'Sanitizer|runtime error' "$W"/agent-*.log)"
else
	ok "agent logs have no sanitizer report"
fi
if grep -h "error: " "$W"/agent-*.log | grep -v "refused\|cannot report"; then
	not_ok "agent logs have no errors"
else
	ok "agent logs have no errors"
fi

# ---- figures --------------------------------------------------------------------
echo "# Critical report: the agent's write of it took ${fault_ms:-?} ms (the daemon isolates the NPU, re-places the job and renders the new rank table inside that write; goal < 100 ms)"
echo "# Critical report to every generation 2 process started: $((${t_restarted:-0} - ${t_report:-0})) ms (kept servers' agents wake on the job's status.json; the new server's agent at its next 1 s interval)"
echo "# agent SIGKILL to server unreachable and job re-placed (daemon event): $((${t_unreach:-0} - t_kill)) ms (heartbeat_timeout 3 s; goal <= 3 intervals + 1 s = 4000 ms)"
echo "# agent SIGKILL to every generation 2 process of hb started: $((${t_hb_started:-0} - t_kill)) ms"
echo "# steps lost to the Critical fault: stopped at step ${stopped_at:-?}, resumed at step ${min_resume:-?}: $((${stopped_at:-0} - ${min_resume:-0})) steps (goal <= the checkpoint interval, $EVERY steps of $STEP_MS ms)"
echo "# cancel of a job whose process ignores SIGTERM to the next job placed on its NPUs: ${hold_ms:-?} ms (stop_grace_period $GRACE s, then SIGKILL; before the fix: at once)"
echo "# cancel of a job whose process exits on SIGTERM to the next job placed on its NPUs: ${quick_ms:-?} ms (the stop deadline, grace + interval, is ${deadline_ms:-?} ms)"
echo "# generation 2 of train32 resumed at steps:$resumes (each agent reads the resume point when it starts its process)"

FINISHED=1
it_stop
it_finish
