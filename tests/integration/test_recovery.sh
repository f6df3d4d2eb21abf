#!/usr/bin/env bash
# The recovery ladder through a real mount (issue 17): node agents run
# examples/train_demo as a 2-server msrun job with recovery: [dump, job].
#  (a) a Critical NPU on the server of node rank 0: the surviving process is asked
#      through jobs/<id>/recovery, saves the step it finished and answers; the job
#      restarts from that checkpoint (the steps lost are printed), the MindSpore
#      scheduler role moves with the rank table;
#  (b) a job whose processes ignore the protocol: the dump times out after
#      recovery_timeout and job-level recovery restarts it from its newest periodic
#      checkpoint;
#  (c) the daemon is SIGKILLed during a dump and restarted: the request is still open,
#      and the answer written after the restart restarts the job from it;
#  (d) recovery: [in-place, job]: a process is killed (SIGKILL); only it starts again,
#      on the same server in the same generation, while the other pauses at the step
#      boundary and keeps its pid; both go on from the step paused at. Then, with the
#      survivor stopped (it cannot pause), the step waits recovery_timeout and falls
#      back to job-level;
#  (e) the daemon is SIGKILLed during an in-place restart (the survivor stopped, the
#      restarted process joined) and restarted: the step, the join and the share's
#      attempt are still there, and once the survivor pauses both resume in place.
#  (f) recovery: [process, job]: a Critical NPU on the server of node rank 0 (the
#      scheduler's): a spare server takes its place and rank 0 as generation 2 at once;
#      the process on the other server keeps its pid, pauses, rebuilds from the new rank
#      table and answers; the new process joins; both go on from the step paused at.
#  (g) recovery: [retry, job]: a Critical NPU whose code is in retry_fault_codes, gone a
#      moment later: the NPU stays in service, both processes drop the step in flight
#      and recompute it, none restarts, the generation stays.
#  (h) recovery: [process, job] with the survivor stopped (it cannot answer) and then
#      the replacement failing too, during the step: the step falls back to job-level,
#      which keeps the healthy server and leaves both failed ones.
#  (i) the daemon is SIGKILLed during a process step (the kept process stopped, the new
#      one joined) and restarted: the step, the join and the kept share are still
#      there; continued, the kept process rebuilds and both go on in generation 2.
# Usage: test_recovery.sh ASCENDFS ASCEND_AGENT TRAIN_DEMO SRCDIR
set -u
ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
TRAIN=$(realpath "$3")
SRC=$(realpath "$4")
. "$SRC/tests/integration/lib.sh"

it_setup
M=$IT_MNT
W=$IT_WORK
STATE=$W/state
TIMEOUT=8 # recovery_timeout of the test cluster

# The example cluster, 1 s check interval, 3 s heartbeat timeout, agents required, and
# a recovery_timeout short enough to wait for here.
CONFIG=$W/cluster.yaml
sed -e 's/^  fault_check_interval: 5 .*/  fault_check_interval: 1/' \
	-e 's/^  heartbeat_timeout: 15 .*/  heartbeat_timeout: 3\n  stop_grace_period: 2/' \
	-e "s/^  require_agent: false .*/  require_agent: true\n  recovery_timeout: $TIMEOUT\n  retry_fault_codes: [80C98008]/" \
	"$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
if ! grep -q "recovery_timeout: $TIMEOUT$" "$CONFIG" || ! grep -q 'require_agent: true$' "$CONFIG"; then
	echo "could not derive the test config"
	exit 1
fi

. "$SRC/tests/integration/agents_lib.sh"
trap 'agents_cleanup; it_cleanup' EXIT

it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || exit 1
if agents_start; then ok "six agents report"; else
	not_ok "six agents report" "$(for n in $SERVERS; do echo "$n $(state_of "$n")"; done)"
fi

# ---- (a) dump: the survivor saves the step it finished, the job resumes there --------
CK=$W/ckpt/dg
mkdir -p "$CK"
# one checkpoint interval (200 steps of 20 ms = 4 s) is longer than the job runs before
# the fault: job-level recovery would start it again from step 0
submit dg <<EOF
name: dg
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 200"
checkpoint_dir: $CK
recovery: [dump, job]
EOF
check_eq "dg runs" running "$(status_of dg)"
check_contains "its spec keeps the ladder" "recovery: [dump, job]" "$(cat "$M/jobs/dg/spec")"
read -r A0 A1 <<<"$(servers_of dg)"
if wait_until 20 all_started dg 1 "$A0" "$A1"; then ok "a process runs on each of its two servers"; else
	not_ok "a process runs on each of its two servers" "$(tail -n3 "$W"/agent-*.log)"
fi
sleep 1.5
check_contains "no request yet" '"action":"none"' "$(cat "$M/jobs/dg/recovery")"
t_fault=$(now_ms)
fault "$A0" # the server of node rank 0, the scheduler's
if wait_until 10 grep -q "dying-gasp save (request 1)" "$(log_of dg 1 "$A1")"; then
	ok "the survivor on $A1 is asked to save and answers"
else
	not_ok "the survivor on $A1 is asked to save and answers" "$(cat "$M/jobs/dg/recovery")" \
		"$(tail -n3 "$(log_of dg 1 "$A1")")"
fi
saved=$(step_in "$(log_of dg 1 "$A1")" "dying-gasp save (request 1) at step")
if wait_until 15 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/dg/status.json\"))[\"generation\"])')\" = 2 ]"; then
	ok "dg restarts as generation 2"
else
	not_ok "dg restarts as generation 2" "$(status_of dg) $(gen_of dg): $(tail -n4 "$M/jobs/dg/events")"
fi
read -r B0 B1 <<<"$(servers_of dg)"
case " $B0 $B1 " in *" $A0 "*) not_ok "generation 2 left $A0" "$B0 $B1" ;; *) ok "generation 2 left $A0" ;; esac
if wait_until 20 all_started dg 2 "$B0" "$B1"; then ok "generation 2 runs on both servers"; else
	not_ok "generation 2 runs on both servers" "$(tail -n3 "$W"/agent-*.log)"
fi
t_running=$(now_ms)
r0=$(step_in "$(log_of dg 2 "$B0")" "resumed at step")
r1=$(step_in "$(log_of dg 2 "$B1")" "resumed at step")
check_eq "node rank 0 of generation 2 resumes at the saved step" "${saved:-no save}" "$r0"
check_eq "node rank 1 of generation 2 resumes at the saved step" "${saved:-no save}" "$r1"
paused=$(step_in "$(log_of dg 1 "$A1")" "terminated at step")
failed_at=$(step_in "$(log_of dg 1 "$A0")" "terminated at step")
check_eq "the survivor did no step after its save" "${saved:-no save}" "$paused"
if [ -n "$saved" ] && [ -n "$failed_at" ] && [ "$saved" -gt 0 ]; then
	ok "steps lost by the dump: $((failed_at > saved ? failed_at - saved : 0)) (failed process at step $failed_at when it was stopped, survivor saved $saved; job-level would resume at 0)"
else
	not_ok "the dump saved a step" "saved '$saved', failed process at '$failed_at'"
fi
echo "# (a) fault report to generation 2 running on both servers: $((t_running - t_fault)) ms (polled)"
check_contains "the event says what was saved" "dump: 1 process saved step $saved" "$(cat "$M/jobs/dg/events")"
check_contains "the recovery file's outcome says so too" "saved step $saved" "$(cat "$M/jobs/dg/recovery")"
check_contains "the scheduler moves with the rank table: node rank 0 of generation 2 names its own server's" \
	"dynamic cluster: msrun, scheduler 10.0.1.$((10#${B0#a2-node-})):" "$(cat "$(log_of dg 2 "$B0")")"
echo "cancel" >"$M/jobs/dg/ctl"

# ---- (b) processes that ignore the protocol: the dump times out, job-level follows --
CK=$W/ckpt/ig
mkdir -p "$CK"
submit ig <<EOF
name: ig
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 25 --ignore-recovery"
checkpoint_dir: $CK
recovery: [dump, job]
EOF
read -r A0 A1 <<<"$(servers_of ig)"
wait_until 20 all_started ig 1 "$A0" "$A1"
if wait_until 20 test -f "$CK/demo-1_50.ckpt"; then ok "ig writes periodic checkpoints"; else
	not_ok "ig writes periodic checkpoints" "$(ls "$CK")"
fi
t_fault=$(now_ms)
fault "$A1"
wait_until 10 bash -c "[ \"\$(cat '$M/jobs/ig/status')\" = recovering ]"
check_eq "ig recovers: a dump waits for its survivor" recovering "$(status_of ig)"
if wait_until $((TIMEOUT + 15)) bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/ig/status.json\"))[\"generation\"])')\" = 2 ]"; then
	ok "after recovery_timeout, ig restarts as generation 2"
else
	not_ok "after recovery_timeout, ig restarts as generation 2" "$(status_of ig): $(tail -n4 "$M/jobs/ig/events")"
fi
waited=$(($(now_ms) - t_fault))
if [ "$waited" -ge $(((TIMEOUT - 1) * 1000)) ]; then ok "it waited for recovery_timeout ($waited ms)"; else
	not_ok "it waited for recovery_timeout" "$waited ms"
fi
check_contains "the event says the dump timed out and fell back" \
	"dump timed out: 0 of 1 surviving processes answered within $TIMEOUT s (recovery_timeout); falling back to job" \
	"$(cat "$M/jobs/ig/events")"
read -r B0 B1 <<<"$(servers_of ig)"
wait_until 20 all_started ig 2 "$B0" "$B1"
r0=$(step_in "$(log_of ig 2 "$B0")" "resumed at step")
if [ -n "$r0" ] && [ "$r0" -ge 50 ]; then ok "generation 2 resumes from a periodic checkpoint (step $r0)"; else
	not_ok "generation 2 resumes from a periodic checkpoint" "resumed at '$r0'"
fi
echo "cancel" >"$M/jobs/ig/ctl"

# ---- (c) the daemon restarts during a dump: the request stays open -------------------
CK=$W/ckpt/rs
mkdir -p "$CK"
submit rs <<EOF
name: rs
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 0 --ignore-recovery"
checkpoint_dir: $CK
recovery: [dump, job]
EOF
read -r A0 A1 <<<"$(servers_of rs)"
wait_until 20 all_started rs 1 "$A0" "$A1"
fault "$A0"
wait_until 10 bash -c "[ \"\$(cat '$M/jobs/rs/status')\" = recovering ]"
check_eq "rs recovers: a dump waits" recovering "$(status_of rs)"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after the restart rs still recovers" recovering "$(status_of rs)"
check_eq "its request is still open" "save 1" \
	"$(json "$M/jobs/rs/recovery" 'd["action"] + " " + str(d["request"])')"
check_eq "it waits for the process on $A1" "$A1" "$(json "$M/jobs/rs/recovery" 'd["processes"][0]["server"]')"
# what a framework's process would do: save, then answer
echo 777 >"$CK/demo-1_777.ckpt"
check "the answer is accepted after the restart" sh -c "echo 'saved 1 $A1 - 777 $CK/demo-1_777.ckpt' >'$M/jobs/rs/ctl'"
if wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/rs/status.json\"))[\"generation\"])')\" = 2 ]"; then
	ok "rs restarts as generation 2"
else
	not_ok "rs restarts as generation 2" "$(status_of rs): $(tail -n4 "$M/jobs/rs/events")"
fi
read -r B0 B1 <<<"$(servers_of rs)"
wait_until 20 all_started rs 2 "$B0" "$B1"
check_eq "generation 2 resumes from the answer's checkpoint" 777 \
	"$(step_in "$(log_of rs 2 "$B0")" "resumed at step")"
check_fails "a late answer is refused (the request is over)" \
	sh -c "echo 'saved 1 $A1 - 778 $CK/demo-1_777.ckpt' >'$M/jobs/rs/ctl'"
check_contains "and says why" "no open recovery request" "$(tail -n 3 "$M/cluster/events")"
echo "cancel" >"$M/jobs/rs/ctl"

# ---- (d) in-place: only the process that died starts again --------------------------
pid_of() { sed -n 's/^started \([0-9]*\) .*/\1/p' "$W/logs/$3/$1/g$2/node-$3.state" 2>/dev/null; }
gen_is() { [ "$(gen_of "$1")" = "$2" ]; }
submit ip <<EOF
name: ip
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 0"
recovery: [in-place, job]
EOF
check_contains "the spec takes in-place" "recovery: [in-place, job]" "$(cat "$M/jobs/ip/spec")"
read -r A0 A1 <<<"$(servers_of ip)"
wait_until 20 all_started ip 1 "$A0" "$A1"
sleep 1
p0=$(pid_of ip 1 "$A0")
p1=$(pid_of ip 1 "$A1")
t_fault=$(now_ms)
kill -KILL "$p1"
if wait_until 10 grep -q "resumed in place at step" "$(log_of ip 1 "$A0")"; then
	ok "the process on $A0 paused and resumed in place"
else
	not_ok "the process on $A0 paused and resumed in place" "$(cat "$M/jobs/ip/recovery")" \
		"$(tail -n4 "$(log_of ip 1 "$A0")")" "$(tail -n4 "$(log_of ip 1 "$A1")")"
fi
t_resumed=$(now_ms)
wait_until 5 grep -q "resumed in place at step" "$(log_of ip 1 "$A1")"
check_eq "ip runs again" running "$(status_of ip)"
check_eq "in the same generation" 1 "$(gen_of ip)"
check_eq "the process on $A0 was not restarted (same pid)" "$p0" "$(pid_of ip 1 "$A0")"
check "the process on $A1 is a new one" test "$(pid_of ip 1 "$A1")" != "$p1"
check_contains "its agent started it as attempt 1" "restarted in place: attempt 1" \
	"$(cat "$(log_of ip 1 "$A1")")"
paused=$(step_in "$(log_of ip 1 "$A0")" "paused at step")
joined=$(step_in "$(log_of ip 1 "$A1")" "resumed in place at step")
check_eq "the restarted process goes on from the step the other paused at" "${paused:-none}" "$joined"
check_contains "the event says who restarted and from which step" \
	"in-place: the process on $A1 started again on the same NPUs and 1 survivor goes on from step $paused" \
	"$(cat "$M/jobs/ip/events")"
check_eq "the recovery file says resume, from that step" "resume $paused" \
	"$(json "$M/jobs/ip/recovery" 'd["action"] + " " + str(d["step"])')"
echo "# (d) in-place: SIGKILL to both processes stepping again: $((t_resumed - t_fault)) ms (polled); steps lost: 0 (paused at $paused, restarted process resumed at $joined)"
# the restarted process crashes too: its exit names attempt 1 (one of attempt 0 would be
# taken for a report sent again and ignored), and it starts again as attempt 2
kill -KILL "$(pid_of ip 1 "$A1")"
if wait_until 10 grep -q "restarted in place: attempt 2" "$(log_of ip 1 "$A1")"; then
	ok "the restarted process crashes: it starts again as attempt 2"
else
	not_ok "the restarted process crashes: it starts again as attempt 2" \
		"$(tail -n3 "$M/jobs/ip/events")" "$(tail -n3 "$W/agent-$A1.log")"
fi
if wait_until 10 bash -c "[ \$(grep -c 'resumed in place at step' '$(log_of ip 1 "$A0")') = 2 ]"; then
	ok "and both resume in place again, generation 1"
else
	not_ok "and both resume in place again, generation 1" "$(cat "$M/jobs/ip/recovery")"
fi
check_eq "still the same process on $A0" "$p0" "$(pid_of ip 1 "$A0")"
# a survivor that cannot pause (stopped): in-place waits recovery_timeout, then job-level
sleep 1
kill -STOP "$(pid_of ip 1 "$A1")"
t_fault=$(now_ms)
kill -KILL "$(pid_of ip 1 "$A0")"
if wait_until $((TIMEOUT + 15)) gen_is ip 2; then
	ok "a survivor that does not pause: job-level after recovery_timeout, generation 2"
else
	not_ok "a survivor that does not pause: job-level after recovery_timeout, generation 2" \
		"$(status_of ip): $(tail -n4 "$M/jobs/ip/events")"
fi
waited=$(($(now_ms) - t_fault))
if [ "$waited" -ge $(((TIMEOUT - 1) * 1000)) ]; then ok "it waited for recovery_timeout ($waited ms)"; else
	not_ok "it waited for recovery_timeout" "$waited ms"
fi
check_contains "the event says why it fell back" \
	"in-place timed out: 0 of 1 surviving processes paused and the restarted process joined within $TIMEOUT s (recovery_timeout); falling back to job" \
	"$(cat "$M/jobs/ip/events")"
check_contains "the restarted process had joined" "joined (request " "$(cat "$(log_of ip 1 "$A0")")"
echo "cancel" >"$M/jobs/ip/ctl"

# ---- (e) the daemon restarts during an in-place restart: the step goes on -------------
submit ir <<EOF
name: ir
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 0"
recovery: [in-place, job]
EOF
# (it waits for ip's processes to be gone: the NPU faults above left few whole servers)
wait_until 30 bash -c "[ \"\$(cat '$M/jobs/ir/status')\" = running ]"
check_eq "ir runs" running "$(status_of ir)"
read -r A0 A1 <<<"$(servers_of ir)"
wait_until 20 all_started ir 1 "$A0" "$A1"
sleep 1
p0=$(pid_of ir 1 "$A0")
kill -STOP "$p0" # it cannot pause until it is continued
kill -KILL "$(pid_of ir 1 "$A1")"
wait_until 10 bash -c "[ \"\$(cat '$M/jobs/ir/status')\" = recovering ]"
wait_until 10 grep -q "joined (request 1)" "$(log_of ir 1 "$A1")"
check_eq "ir recovers in place: the restarted process joined, the other has not paused" \
	"pause 1 False True" \
	"$(json "$M/jobs/ir/recovery" 'd["action"] + " " + str(d["request"]) + " " + str(d["processes"][0]["answered"]) + " " + str(d["processes"][1]["answered"])')"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after the restart the step still waits for the pause, the join kept" \
	"recovering pause 1 True" \
	"$(status_of ir) $(json "$M/jobs/ir/recovery" 'd["action"] + " " + str(d["request"]) + " " + str(d["processes"][1]["answered"])')"
check_eq "its agent still lists the share's attempt" 1 \
	"$(awk '$1 == "ir" { print $10 }' "$M/nodes/$A1/jobs")"
kill -CONT "$p0"
if wait_until 10 grep -q "resumed in place at step" "$(log_of ir 1 "$A0")"; then
	ok "continued, the other pauses and both resume in place"
else
	not_ok "continued, the other pauses and both resume in place" "$(cat "$M/jobs/ir/recovery")"
fi
check_eq "ir runs again in generation 1" "running 1" "$(status_of ir) $(gen_of ir)"
check_eq "the process on $A0 is the same one" "$p0" "$(pid_of ir 1 "$A0")"
echo "cancel" >"$M/jobs/ir/ctl"

# ---- (f) process-level: only the failed server's process starts, on a spare ----------
submit pl <<EOF
name: pl
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 0"
recovery: [process, job]
EOF
# (it waits for ir's processes to be gone: three servers are whole and clean)
wait_until 30 bash -c "[ \"\$(cat '$M/jobs/pl/status')\" = running ]"
check_eq "pl runs" running "$(status_of pl)"
read -r A0 A1 <<<"$(servers_of pl)"
wait_until 20 all_started pl 1 "$A0" "$A1"
sleep 1
p1=$(pid_of pl 1 "$A1")
t_fault=$(now_ms)
fault "$A0" # node rank 0's server: its replacement takes rank 0 and the scheduler
if wait_until 15 grep -q "resumed in the new generation at step" "$(log_of pl 1 "$A1")"; then
	ok "the process on $A1 paused, rebuilt and went on"
else
	not_ok "the process on $A1 paused, rebuilt and went on" "$(cat "$M/jobs/pl/recovery")" \
		"$(tail -n4 "$(log_of pl 1 "$A1")")" "$(tail -n4 "$M/jobs/pl/events")"
fi
t_resumed=$(now_ms)
read -r B0 B1 <<<"$(servers_of pl)"
check_eq "generation 2 runs, rank 0 on a new server, node rank 1 kept" "running 2 $A1 new" \
	"$(status_of pl) $(gen_of pl) $B1 $([ "$B0" != "$A0" ] && [ "$B0" != "$A1" ] && echo new)"
check_eq "the process on $A1 was not restarted (same pid)" "$p1" "$(pid_of pl 1 "$A1")"
check_eq "its agent lists it in generation 2, kept from 1" "2 1" \
	"$(awk '$1 == "pl" { print $2, $11 }' "$M/nodes/$A1/jobs")"
check_contains "its agent carried the run over" "kept running from generation 1" \
	"$(cat "$W/agent-$A1.log")"
wait_until 5 grep -q "resumed in the new generation at step" "$(log_of pl 2 "$B0")"
check_contains "the new process on $B0 joined" "started on a replacement server: joined" \
	"$(cat "$(log_of pl 2 "$B0")")"
check_contains "and is the scheduler of generation 2 (rank 0 moved with the rank table)" \
	"dynamic cluster: msrun, scheduler 10.0.1.$((10#${B0#a2-node-})):" "$(cat "$(log_of pl 2 "$B0")")"
check_contains "the survivor read the new rank table" "and rebuilt the communicator: kept from generation 1" \
	"$(cat "$(log_of pl 1 "$A1")")"
paused=$(step_in "$(log_of pl 1 "$A1")" "paused at step")
joined=$(step_in "$(log_of pl 2 "$B0")" "resumed in the new generation at step")
check_eq "the new process goes on from the step the survivor paused at" "${paused:-none}" "$joined"
check_contains "the event says so" \
	"process: 1 new process joined and 1 survivor rebuilt the communicator and goes on from step $paused" \
	"$(cat "$M/jobs/pl/events")"
check_eq "the rank table of generation 2 has $B0 first" "$B0" \
	"$(json "$M/jobs/pl/status.json" 'd["placement"][0]["server"]')"
echo "# (f) process-level: fault report to both processes stepping again: $((t_resumed - t_fault)) ms (polled); steps lost: 0 (paused at $paused, new process resumed at $joined); processes restarted: 1"
echo "cancel" >"$M/jobs/pl/ctl"

# ---- (g) retry: a transient NPU fault; the step is recomputed, nothing restarts ------
submit rt <<EOF
name: rt
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 0"
recovery: [retry, job]
EOF
wait_until 30 bash -c "[ \"\$(cat '$M/jobs/rt/status')\" = running ]"
check_eq "rt runs" running "$(status_of rt)"
read -r A0 A1 <<<"$(servers_of rt)"
wait_until 20 all_started rt 1 "$A0" "$A1"
sleep 1
p0=$(pid_of rt 1 "$A0")
p1=$(pid_of rt 1 "$A1")
t_fault=$(now_ms)
# a code of the test cluster's retry_fault_codes; the agent sees it gone a moment later
printf 'npu 3 Critical 80C98008 HBM multi-bit ECC\n' >"$W/faults/$A1.tmp"
mv "$W/faults/$A1.tmp" "$W/faults/$A1"
if wait_until 10 grep -q "recomputing from step" "$(log_of rt 1 "$A0")"; then
	ok "the processes dropped the step in flight and went on"
else
	not_ok "the processes dropped the step in flight and went on" "$(cat "$M/jobs/rt/recovery")" \
		"$(tail -n4 "$M/jobs/rt/events")"
fi
t_resumed=$(now_ms)
printf 'npu 3 OK\n' >"$W/faults/$A1.tmp"
mv "$W/faults/$A1.tmp" "$W/faults/$A1"
wait_until 5 grep -q "recomputing from step" "$(log_of rt 1 "$A1")"
sleep 2.5 # two report intervals: a fault still reported then would be a lasting one
check_eq "rt runs on in generation 1, both processes the same" "running 1 $p0 $p1" \
	"$(status_of rt) $(gen_of rt) $(pid_of rt 1 "$A0") $(pid_of rt 1 "$A1")"
check_eq "the NPU stayed in service" "npu 3 OK" "$(grep '^npu 3 ' "$M/nodes/$A1/health")"
check_eq "and the job still holds it" "$A0 $A1" "$(servers_of rt)"
paused=$(step_in "$(log_of rt 1 "$A1")" "paused at step")
paused0=$(step_in "$(log_of rt 1 "$A0")" "paused at step")
[ -n "$paused0" ] && [ -n "$paused" ] && [ "$paused0" -lt "$paused" ] && paused=$paused0
again=$(step_in "$(log_of rt 1 "$A1")" "recomputing from step")
# (train_demo's processes step on their own clocks: one may be a step ahead)
check_eq "both go on from the last step every process finished" "${paused:-none}" "$again"
check_contains "the event says what happened" "retry: 2 processes go on from step" \
	"$(cat "$M/jobs/rt/events")"
check_contains "and the NPU's event why it stayed" "a transient fault (retry_fault_codes): stays in service, job rt recomputes its step" \
	"$(cat "$M/cluster/events")"
echo "# (g) retry: fault report to both processes stepping again: $((t_resumed - t_fault)) ms (polled); steps lost: 0 (the step in flight recomputed); processes restarted: 0"
echo "cancel" >"$M/jobs/rt/ctl"

# ---- (h) process-level, and the replacement fails too during the step ---------------
# every NPU back in service first (the faults above left servers with one isolated)
isolated_none() { [ "$(json "$M/cluster/status" 'd["npus"]["isolated"]')" = 0 ]; }
heal_all() {
	local n
	for n in $SERVERS; do
		printf 'npu 3 OK\n' >"$W/faults/$n.tmp" && mv "$W/faults/$n.tmp" "$W/faults/$n"
	done
	if ! wait_until 10 isolated_none; then
		for n in $SERVERS; do echo "clear 3" >"$M/nodes/$n/ctl" 2>/dev/null; done
	fi
}
heal_all
check "every NPU is back in service" wait_until 10 isolated_none
submit ph <<EOF
name: ph
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 0"
recovery: [process, job]
EOF
wait_until 30 bash -c "[ \"\$(cat '$M/jobs/ph/status')\" = running ]"
read -r A0 A1 <<<"$(servers_of ph)"
wait_until 20 all_started ph 1 "$A0" "$A1"
sleep 1
kill -STOP "$(pid_of ph 1 "$A1")" # the survivor cannot answer: the step waits
fault "$A0"
wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/ph/status.json\"))[\"generation\"])' 2>/dev/null)\" = 2 ]"
read -r B0 B1 <<<"$(servers_of ph)"
check_eq "ph recovers at process level: generation 2 on a replacement for $A0" \
	"recovering rebuild $A1 new" \
	"$(status_of ph) $(json "$M/jobs/ph/recovery" 'd["action"]') $B1 $([ "$B0" != "$A0" ] && echo new)"
wait_until 10 grep -q "started on a replacement server: joined" "$(log_of ph 2 "$B0")"
fault "$B0" # the replacement fails too, before the step ends
if wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/ph/status.json\"))[\"generation\"])' 2>/dev/null)\" = 3 ]"; then
	ok "the replacement fails during the step: job-level, generation 3"
else
	not_ok "the replacement fails during the step: job-level, generation 3" \
		"$(status_of ph) $(gen_of ph): $(tail -n4 "$M/jobs/ph/events")"
fi
check_contains "the event says why the step fell back" \
	"during the step; falling back to job" "$(cat "$M/jobs/ph/events")"
read -r C0 C1 <<<"$(servers_of ph)"
check_eq "generation 3 keeps $A1 and leaves both failed servers" "kept ok" \
	"$(case " $C0 $C1 " in *" $A1 "*) echo kept ;; *) echo "not kept" ;; esac) $(case " $A0 $B0 " in *" $C0 "* | *" $C1 "*) echo "on a failed one" ;; *) echo ok ;; esac)"
if wait_until 20 all_started ph 3 "$C0" "$C1"; then ok "generation 3 runs on both servers"; else
	not_ok "generation 3 runs on both servers" "$(tail -n3 "$W"/agent-*.log)"
fi
check_eq "ph runs" running "$(status_of ph)"
echo "cancel" >"$M/jobs/ph/ctl"

# ---- (i) the daemon restarts during a process step: the step and the kept run go on --
heal_all
check "every NPU is back in service again" wait_until 10 isolated_none
submit pr <<EOF
name: pr
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 20 --ckpt-every 0"
recovery: [process, job]
EOF
wait_until 30 bash -c "[ \"\$(cat '$M/jobs/pr/status')\" = running ]"
read -r A0 A1 <<<"$(servers_of pr)"
wait_until 20 all_started pr 1 "$A0" "$A1"
sleep 1
p1=$(pid_of pr 1 "$A1")
kill -STOP "$p1" # it cannot rebuild until it is continued
fault "$A0"
wait_until 10 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/pr/status.json\"))[\"generation\"])' 2>/dev/null)\" = 2 ]"
read -r B0 B1 <<<"$(servers_of pr)"
wait_until 10 grep -q "started on a replacement server: joined" "$(log_of pr 2 "$B0")"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after the restart the step still waits: rebuild, the join kept, $A1 kept from 1" \
	"recovering rebuild True 2 1" \
	"$(status_of pr) $(json "$M/jobs/pr/recovery" 'd["action"] + " " + str(d["processes"][0]["answered"])') $(awk '$1 == "pr" { print $2, $11 }' "$M/nodes/$A1/jobs")"
kill -CONT "$p1"
if wait_until 10 grep -q "resumed in the new generation at step" "$(log_of pr 1 "$A1")"; then
	ok "continued, the kept process rebuilds and both go on"
else
	not_ok "continued, the kept process rebuilds and both go on" "$(cat "$M/jobs/pr/recovery")" \
		"$(tail -n4 "$M/jobs/pr/events")"
fi
check_eq "pr runs in generation 2, the kept process the same" "running 2 $p1" \
	"$(status_of pr) $(gen_of pr) $(pid_of pr 1 "$A1")"
echo "cancel" >"$M/jobs/pr/ctl"

agents_cleanup
it_stop
it_finish
