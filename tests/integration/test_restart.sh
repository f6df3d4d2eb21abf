#!/usr/bin/env bash
# The daemon is killed (SIGKILL) under a running job and restarted on the same
# --state-dir (issue 5): the job keeps its NPUs, generation and rank table, its processes
# are not restarted, the agents carry on reporting (their servers stay ready past the
# heartbeat timeout), the event sequence goes on, and the job can be cancelled after.
# The event history is bounded (event_history: 64 here) in memory and on disk, and its
# sequence numbers go on across restarts. Accounting records of ended jobs outlive a
# resubmission of the name and SIGKILL, bounded too (accounting_history: 16). A job
# array goes on across SIGKILL, one element at a time, to its end.
# Usage: test_restart.sh ASCENDFS ASCEND_AGENT TRAIN_DEMO SRCDIR
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

# 1 s check interval, 3 s heartbeat timeout, agents required, 64 events kept
CONFIG=$W/cluster.yaml
sed -e 's/^  fault_check_interval: 5 .*/  fault_check_interval: 1/' \
	-e "s/^  heartbeat_timeout: 15 .*/  heartbeat_timeout: 3\n  stop_grace_period: 2\n  event_history: 64\n  accounting_history: 16/" \
	-e 's/^  require_agent: false .*/  require_agent: true/' \
	"$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
grep -q 'event_history: 64$' "$CONFIG" || { echo "could not derive the test config"; exit 1; }

declare -A AGENT_PID=()
SERVERS="a2-node-01 a2-node-02"
agents_cleanup() {
	local n
	for n in "${!AGENT_PID[@]}"; do kill -KILL "${AGENT_PID[$n]}" 2>/dev/null; done
	for n in $SERVERS; do it_kill_started "$W/agent-$n.log"; done
}
trap 'agents_cleanup; it_cleanup' EXIT

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
state_of() { json "$M/nodes/$1/info" 'd["state"]' 2>/dev/null; }
status_of() { cat "$M/jobs/$1/status" 2>/dev/null; }
# report_by_hand N: a2-node-05 reports "node OK" N times, 0.5 s apart, in the background
# (its pid in REPORTER), as an agent would; returns once the server is ready
report_by_hand() {
	( for _ in $(seq "$1"); do
		printf 'node OK\n' | dd of="$M/nodes/a2-node-05/health" status=none 2>/dev/null
		sleep 0.5
	done ) &
	REPORTER=$!
	wait_until 5 node05_ready
}
node05_ready() { [ "$(state_of a2-node-05)" = ready ]; }
last_seq() { tail -n1 "$M/cluster/events" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["seq"])'; }

it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || exit 1
for n in $SERVERS; do
	i=$((10#${n#a2-node-}))
	mkdir -p "$W/logs/$n"
	: >"$W/fault-$n"
	{ for d in 0 1 2 3 4 5 6 7; do echo "address_$d=10.20.$d.$i"; done; } >"$W/hccn-$n.conf"
	"$AGENT" --mount "$M" --node "$n" --fault-file "$W/fault-$n" --hccn-conf "$W/hccn-$n.conf" \
		--log-dir "$W/logs/$n" >>"$W/agent-$n.log" 2>&1 &
	AGENT_PID[$n]=$!
done
both_ready() { [ "$(state_of a2-node-01)" = ready ] && [ "$(state_of a2-node-02)" = ready ]; }
wait_until 15 both_ready && ok "two agents report" || not_ok "two agents report"

CK=$W/ckpt
mkdir -p "$CK"
cat >"$W/keep.yaml" <<EOF
name: keep
npus: 16
command: "exec $TRAIN --steps 100000 --step-ms 50 --ckpt-every 20"
checkpoint_dir: $CK
EOF
cp "$W/keep.yaml" "$M/jobs/"
check_eq "the job runs on both servers" running "$(status_of keep)"
started() { grep -q 'started pid' "$W/agent-a2-node-01.log" && grep -q 'started pid' "$W/agent-a2-node-02.log"; }
wait_until 15 started && ok "each agent starts its process" || not_ok "each agent starts its process"
PIDS=$(sed -n 's/.*: started pid \([0-9]*\):.*/\1/p' "$W"/agent-*.log | sort | tr '\n' ' ')
RT_BEFORE=$(cat "$M/jobs/keep/ranktable.json")
GEN_BEFORE=$(json "$M/jobs/keep/status.json" 'd["generation"]')
SEQ_BEFORE=$(last_seq)
wait_until 10 test -f "$CK/demo-1_20.ckpt" && ok "it writes checkpoints" || not_ok "it writes checkpoints"

# ---- SIGKILL the daemon, leave it down for a while, start it again ----------------
AGENT_ID=$(json "$M/nodes/a2-node-01/info" 'd["agent"]')
HIST_BEFORE=$(cat "$M/jobs/keep/history")
STARTED_BEFORE=$(json "$M/jobs/keep/status.json" 'd["started"]')
check_contains "info names a2-node-01's agent" ":" "$AGENT_ID"
# a2-node-01's agent is held still until another agent has tried to take the name
kill -STOP "${AGENT_PID[a2-node-01]}"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
sleep 2
t0=$(date +%s%N)
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
echo "# restart to usable mount: $((($(date +%s%N) - t0) / 1000000)) ms"
# at once: the restart gave a2-node-01 one heartbeat_timeout (3 s); past it, with its agent
# still stopped, the server would be lost and the job moved (so on a loaded machine, the
# checks below ran too late when they came first)
check_fails "before its agent reports again, another agent's report for a2-node-01 is refused" \
	sh -c "printf 'agent impostor:1\nnode OK\n' | dd of='$M/nodes/a2-node-01/health' status=none"
check_eq "the agent from before the restart keeps the server" "$AGENT_ID" \
	"$(json "$M/nodes/a2-node-01/info" 'd["agent"]')"
kill -CONT "${AGENT_PID[a2-node-01]}"
check_eq "the job is still running" running "$(status_of keep)"
check_eq "same generation (no restart)" "$GEN_BEFORE" "$(json "$M/jobs/keep/status.json" 'd["generation"]')"
check_eq "same rank table, byte for byte" "$RT_BEFORE" "$(cat "$M/jobs/keep/ranktable.json")"
first_run() { python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(r["generation"], r["start"], json.dumps(r["placement"]))' "$1"; }
echo "$HIST_BEFORE" >"$W/hist-before"
check_eq "its history's first generation: same start and placement" "$(first_run "$W/hist-before")" \
	"$(first_run "$M/jobs/keep/history")"
check_eq "same first start" "$STARTED_BEFORE" "$(json "$M/jobs/keep/status.json" 'd["started"]')"
alive=0
for p in $PIDS; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
check_eq "its processes were not restarted (both still alive)" 2 "$alive"
check_eq "no process was started again" "$PIDS" \
	"$(sed -n 's/.*: started pid \([0-9]*\):.*/\1/p' "$W"/agent-*.log | sort | tr '\n' ' ')"
# past the heartbeat timeout (3 s) after the restart: the agents carry on writing
sleep 4.5
check_eq "a2-node-01 stays ready past the heartbeat timeout" ready "$(state_of a2-node-01)"
check_eq "a2-node-02 stays ready past the heartbeat timeout" ready "$(state_of a2-node-02)"
check_eq "the job is still running, on the same NPUs" "$RT_BEFORE" "$(cat "$M/jobs/keep/ranktable.json")"
SEQ_AFTER=$(last_seq)
[ "$SEQ_AFTER" -ge "$SEQ_BEFORE" ] && ok "the event sequence goes on ($SEQ_BEFORE -> $SEQ_AFTER)" ||
	not_ok "the event sequence goes on" "before $SEQ_BEFORE, after $SEQ_AFTER"
newest=$(ls "$CK" | sort -t_ -k2 -n | tail -n1)
sleep 2
check_contains "the job keeps checkpointing" ".ckpt" "$(ls "$CK" | sort -t_ -k2 -n | tail -n1)"
[ "$(ls "$CK" | sort -t_ -k2 -n | tail -n1)" != "$newest" ] && ok "a newer checkpoint after the restart" ||
	not_ok "a newer checkpoint after the restart" "still $newest"

# ---- it can be cancelled, and the agents stop its processes --------------------------
check "cancel after the restart" sh -c "echo cancel > '$M/jobs/keep/ctl'"
gone() { for p in $PIDS; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
wait_until 10 gone && ok "the agents stop its processes" || not_ok "the agents stop its processes"
# it holds its NPUs, stopping, until the agents' running lines no longer list it
wait_until 10 bash -c "[ \"\$(cat '$M/jobs/keep/status')\" = cancelled ]"
check_eq "cancelled once its processes are gone" cancelled "$(status_of keep)"
# ---- a job array goes on across SIGKILL: its elements, how they ended, its throttle -----
printf 'npus: 8\narray: 0-2%%1\ncommand: "sleep 2; echo trial $ASCEND_ARRAY_INDEX"\n' >"$M/jobs/arr.yaml"
check "the array's first element runs" wait_until 10 grep -qx running "$M/jobs/arr.0/status"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after SIGKILL: still an array, one element at a time" "array absent" \
	"$(cat "$M/jobs/arr/status") $(test -e "$M/jobs/arr.2" && echo present || echo absent)"
check "its elements run one after another to its end" \
	wait_until 40 grep -qx completed "$M/jobs/arr/status"
check_eq "each element completed" "completed completed completed 3" \
	"$(cat "$M/jobs/arr.0/status" "$M/jobs/arr.1/status" "$M/jobs/arr.2/status" | paste -sd' ') $(json "$M/jobs/arr/status.json" 'd["array"]["completed"]')"
check "an element's log has what it printed, with its index" \
	wait_until 5 grep -q 'trial 2$' "$M/jobs/arr.2/log"
for n in $SERVERS; do kill -TERM "${AGENT_PID[$n]}"; done
for n in $SERVERS; do wait "${AGENT_PID[$n]}" 2>/dev/null; done
AGENT_PID=()
check_eq "the ended job's history: its last generation was cancelled, on 16 NPUs" \
	"$(json "$M/jobs/keep/status.json" 'd["generation"]') cancelled 16 True" \
	"$(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readlines()[-1]); print(r["generation"], r["state"], r["npus"], r["end"] is not None)' "$M/jobs/keep/history")"

# ---- a job's history survives SIGKILL: generations, first start, exit status ---------
# (agents are required here: a2-node-05 gets hand-written reports, at most for 2 min)
lost() { [ "$(state_of a2-node-01)" = unreachable ] && [ "$(state_of a2-node-02)" = unreachable ]; }
wait_until 10 lost || not_ok "the agents' servers are unreachable once they stopped"
report_by_hand 240
H_REPORTER=$REPORTER
printf 'npus: 8\nmax_restarts: 5\n' >"$M/jobs/hist.yaml"
H_SERVER=$(json "$M/jobs/hist/status.json" 'd["placement"][0]["server"]')
H_STARTED=$(json "$M/jobs/hist/status.json" 'd["started"]')
sleep 1.1 # so that generation 2 starts in another second
check "a task fault is reported (exit 1 $H_SERVER 7)" sh -c "echo 'exit 1 $H_SERVER 7' > '$M/jobs/hist/ctl'"
check_eq "generation 2 runs" "running 2" \
	"$(status_of hist) $(json "$M/jobs/hist/status.json" 'd["generation"]')"
H_GEN2=$(json "$M/jobs/hist/status.json" 'd["generation_started"]')
[ "$H_GEN2" != "$H_STARTED" ] && ok "generation_started moved, started did not" ||
	not_ok "generation_started moved, started did not" "both $H_STARTED"
H_BEFORE=$(cat "$M/jobs/hist/history")
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
sleep 1
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after SIGKILL: the same history" "$H_BEFORE" "$(cat "$M/jobs/hist/history")"
check_eq "it holds generation 1 (failed, exit 7, on $H_SERVER) and 2 (running)" \
	"1 failed 7 $H_SERVER $H_STARTED | 2 running None $H_SERVER $H_GEN2" \
	"$(python3 -c 'import json, sys
print(" | ".join("%d %s %s %s %s" % (r["generation"], r["state"], r["exit_code"], r["placement"][0]["server"], r["start"]) for r in map(json.loads, open(sys.argv[1]))))' "$M/jobs/hist/history")"
check_eq "status.json's started is the first start still" "$H_STARTED" \
	"$(json "$M/jobs/hist/status.json" 'd["started"]')"
echo cancel >"$M/jobs/hist/ctl"

# ---- accounting: a record per ended job, kept across resubmission and SIGKILL ---------
wait_until 10 grep -qx cancelled "$M/jobs/hist/status" || not_ok "hist is cancelled" "$(status_of hist)"
acct() { # acct FILE EXPR: EXPR over the records (a list r) of a JSON-lines file
	python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(eval(sys.argv[2]))' "$1" "$2"
}
check_eq "jobs/hist/accounting: one record, cancelled, generations 1-2, 8 NPUs on $H_SERVER, a restart" \
	"1 cancelled [1, 2] 8 ['$H_SERVER'] 1 0" \
	"$(acct "$M/jobs/hist/accounting" '"%d %s %s %d %s %d %d" % (len(r), r[0]["state"], r[0]["generations"], r[0]["npus"], r[0]["servers"], r[0]["restarts"], r[0]["preemptions"])')"
check_eq "it ran some NPU-hours, from its start to its end" "True $H_STARTED" \
	"$(acct "$M/jobs/hist/accounting" '"%s %s" % (r[0]["npu_hours"] > 0 and r[0]["end"] > r[0]["start"], r[0]["start"])')"
# a name submitted, ended, submitted again and ended: both submissions' records
for n in 1 2; do
	printf 'npus: 8\n' >"$M/jobs/again.yaml"
	check "again runs (submission $n)" wait_until 10 grep -qx running "$M/jobs/again/status"
	# the first submission's process exits 0 (it completes), the second is cancelled
	if [ "$n" = 1 ]; then
		echo "exit 1 $(json "$M/jobs/again/status.json" 'd["placement"][0]["server"]') 0" >"$M/jobs/again/ctl"
	else
		echo cancel >"$M/jobs/again/ctl"
	fi
	check "again ends (submission $n)" wait_until 10 grep -qxE 'cancelled|completed' "$M/jobs/again/status"
done
check_eq "jobs/again/accounting: both submissions, the first completed with exit 0" \
	"2 True completed 0 cancelled" \
	"$(acct "$M/jobs/again/accounting" '"%d %s %s %s %s" % (len(r), r[0]["serial"] != r[1]["serial"], r[0]["state"], r[0]["exit_code"], r[1]["state"])')"
check_eq "its history is the newest submission's (one generation)" 1 "$(wc -l <"$M/jobs/again/history")"
check_contains "cluster/accounting has them" '"job":"again"' "$(cat "$M/cluster/accounting")"
A_BEFORE=$(cat "$M/jobs/again/accounting")
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after SIGKILL: the same accounting records" "$A_BEFORE" "$(cat "$M/jobs/again/accounting")"
# 20 more ended jobs: the newest 16 are kept, numbered without a gap, on disk too
for i in $(seq 20); do
	printf 'npus: 1\n' >"$M/jobs/acct-$i.yaml"
	echo cancel >"$M/jobs/acct-$i/ctl"
done
all_ended() { for i in $(seq 20); do grep -qx cancelled "$M/jobs/acct-$i/status" || return 1; done; }
check "the 20 jobs end (their stops wait for the stop deadline)" wait_until 15 all_ended
check_eq "cluster/accounting keeps the newest 16, numbered without a gap, all of them of acct-*" \
	"16 True True" \
	"$(acct "$M/cluster/accounting" '"%d %s %s" % (len(r), all(b["seq"] == a["seq"] + 1 for a, b in zip(r, r[1:])), all(x["job"].startswith("acct-") for x in r))')"
# a reader at the end of the full ring goes on reading new records (tail -f), and opens
# share one copy (a user opens it 300 times)
python3 - "$M" >"$W/acct-follow.txt" <<'PY' &
import os, sys, time
f = open(os.path.join(sys.argv[1], "cluster/accounting"))
f.read()
got, end = [], time.time() + 15
while len(got) < 3 and time.time() < end:
    line = f.readline()
    if line:
        got.append(line)
    else:
        time.sleep(0.1)
print(len(got))
PY
FOLLOW=$!
sleep 0.5
for i in 21 22 23; do
	printf 'npus: 1\n' >"$M/jobs/acct-$i.yaml"
	echo cancel >"$M/jobs/acct-$i/ctl"
done
wait "$FOLLOW"
check_eq "a reader at the end of the full ring (16 kept) reads the 3 new records" 3 "$(cat "$W/acct-follow.txt")"
it_python_as setpriv --reuid=65534 --regid=65534 --clear-groups
check "300 opens of it at once, by a user" setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$PY" - "$M/cluster/accounting" <<'PY'
import sys
files = [open(sys.argv[1]) for _ in range(300)]
assert all(f.read(1) == "{" for f in files)
PY
A_LAST=$(tail -n1 "$M/cluster/accounting")
it_stop
check_eq "the store keeps 16 too" 16 \
	"$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from accounting").fetchone()[0])' "$STATE/ascendfs.db")"
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after a restart the newest record is the same" "$A_LAST" "$(tail -n1 "$M/cluster/accounting")"
check_contains "the restore says how many it read" "16 accounting records" "$(grep restored "$IT_LOG" | tail -1)"
kill "$H_REPORTER" 2>/dev/null
wait "$H_REPORTER" 2>/dev/null

# ---- the event history is bounded, and rotates without losing its numbering --------
for _ in $(seq 40); do
	echo cordon >"$M/nodes/a2-node-16/ctl"
	echo uncordon >"$M/nodes/a2-node-16/ctl"
done
events_ok() { # events_ok FILE: 64 lines, consecutive seqs; prints the last one
	python3 - "$1" <<'PY'
import json, sys
seqs = [json.loads(l)["seq"] for l in open(sys.argv[1])]
ok = len(seqs) == 64 and all(b == a + 1 for a, b in zip(seqs, seqs[1:]))
print(seqs[-1] if ok else f"bad: {len(seqs)} events, {seqs[:3]}...{seqs[-3:]}")
PY
}
LAST=$(events_ok "$M/cluster/events")
case $LAST in
bad*) not_ok "cluster/events keeps the newest 64, numbered without a gap" "$LAST" ;;
*) ok "cluster/events keeps the newest 64, numbered without a gap (last $LAST)" ;;
esac
it_stop
# what the stopped daemon left is what the next one starts from: the newest 64, the
# ones read above among them (a loaded machine may add some before the stop: servers that
# stop reporting)
rows=$(python3 -c 'import sqlite3,sys; print(*sqlite3.connect(sys.argv[1]).execute("select count(*), max(seq) from events").fetchone())' \
	"$STATE/ascendfs.db")
check_eq "the store keeps 64 events too" 64 "${rows% *}"
case $LAST in
bad*) not_ok "the store holds what cluster/events showed" "$LAST" ;;
*) [ "${rows#* }" -ge "$LAST" ] && ok "the store holds what cluster/events showed" ||
	not_ok "the store holds what cluster/events showed" "store's last ${rows#* }, shown $LAST" ;;
esac
LAST=${rows#* }
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "after a restart: the same 64 events" "$LAST" "$(events_ok "$M/cluster/events")"
echo cordon >"$M/nodes/a2-node-16/ctl"
check_eq "numbering goes on after the restart" "$((LAST + 1))" \
	"$(tail -n1 "$M/cluster/events" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["seq"])')"

# ---- a spec written in pieces, the daemon killed before the last piece ----------------
printf 'npus: 8\n' >"$W/part.yaml"
( { cat "$W/part.yaml"; sleep 3; echo "time_limit: 1h"; } >"$M/jobs/half.yaml" ) 2>/dev/null &
half=$!
sleep 1.5 # cat has closed its duplicate; the group has not ended
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
wait "$half" 2>/dev/null
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon restarts"; it_finish; exit 1; }
check_eq "half of a spec (the writer never finished) is not submitted" "" "$(status_of half)"
it_stop

# ---- a stale mount (no auto_unmount: -d) is detected and replaced -------------------
"$ASCENDFS" -d -c "$CONFIG" --state-dir "$STATE" "$M" >"$W/debug.log" 2>&1 &
IT_PID=$!
wait_until 20 answers "$M/jobs" || not_ok "the daemon mounts with -d"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
check_contains "SIGKILL without auto_unmount leaves a stale mount" "not connected" \
	"$(stat "$M" 2>&1)"
it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || { not_ok "the daemon replaces it"; it_finish; exit 1; }
check_contains "the daemon says it replaced the stale mount" "stale mount left by a dead daemon" \
	"$(cat "$IT_LOG")"
check_eq "and serves the state again" cancelled "$(status_of keep)"

# ---- a second daemon on the same state dir, and a store that is not a database ------
mkdir -p "$W/mnt2"
out=$("$ASCENDFS" -f -c "$CONFIG" --state-dir "$STATE" "$W/mnt2" 2>&1)
check_contains "a second daemon on the same --state-dir is refused" \
	"is in use by another ascendfs" "$out"
cat "$M/jobs/keep/history" >"$W/keep-history"
cat "$M/jobs/hist/history" >"$W/hist-history"
it_stop
# ---- the store's schema: a version 1 store is read and made 3, a newer one refused ----
# version 1 held job records of format 1, which wrote every field, defaults too: 'keep'
# is made one again (what format 2 leaves out put back at its default); versions 1 and 2
# had no job_runs: every job's history was in its record, where it is put back
sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchall(); c.commit(); print(*[x for row in r for x in row])' "$@"; }
cp -r "$STATE" "$W/v1"
rm -f "$W/v1/ascendfs.lock"
python3 - "$W/v1/ascendfs.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for serial, doc in db.execute("select serial, doc from jobs").fetchall():
    d = json.loads(doc)
    runs = [json.loads(r) for (r,) in
            db.execute("select doc from job_runs where serial = ? order by run", (serial,))]
    hist = runs + d.get("history", [])
    for r in hist:
        r.pop("run", None)
    if hist:
        d["history"] = hist
    db.execute("update jobs set doc = ? where serial = ?", (json.dumps(d), serial))
db.execute("drop table job_runs")
(doc,) = db.execute("select doc from jobs where name = 'keep'").fetchone()
d = json.loads(doc)
old = {"uid": 0, "gid": 0, "requeue_cause": "none", "reason": "", "spec": None,
       "generation": 0, "restarts": 0, "generation_usec": 0, "start_usec": 0,
       "end_usec": 0, "change_usec": 0, "run_since_usec": 0, "run_accum_usec": 0,
       "stop_deadline_usec": 0, "stop_to": "draft", "stop_cancelled": False,
       "stop_forget": False, "preempted_by": "", "preempted_by_serial": 0,
       "preemptions": 0, "borrowing": False, "sched_port": 0, "checkpoint_step": 0,
       "checkpoint_path": None, "checkpoint_usec": 0, "checkpoint_reported": False,
       "resume_path": None, "resume_scan_pending": False, "resume_scan_since_usec": 0,
       "restart_counted_usec": 0, "restarts_coalesced": 0, "exits_generation": 0,
       "exited_ok": [], "placement": [], "first_start_usec": d.get("start_usec", 0),
       "runs_dropped": 0, "history": []}
d = {**old, **d, "format": 1}
db.execute("update jobs set doc = ? where name = 'keep'", (json.dumps(d),))
db.execute("update meta set value = '1' where key = 'schema'")
db.commit()
PY
check_eq "fixture: a version 1 store" 1 "$(sql "$W/v1/ascendfs.db" "select value from meta where key = 'schema'")"
it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/v1" || { not_ok "a version 1 store is read"; it_finish; exit 1; }
check_eq "a version 1 store is read: its format 1 job is there" cancelled "$(status_of keep)"
check_eq "and its history with it" "$(cat "$W/keep-history")" "$(cat "$M/jobs/keep/history")"
check_eq "and hist's, whose generations were all in its record" "$(cat "$W/hist-history")" \
	"$(cat "$M/jobs/hist/history")"
echo cordon >"$M/nodes/a2-node-16/ctl" # a first write
it_stop
check_eq "and the store is made version 3 by its first write, with job_runs" "3 1" \
	"$(sql "$W/v1/ascendfs.db" "select value from meta where key = 'schema'") $(sql "$W/v1/ascendfs.db" "select count(*) from sqlite_master where name = 'job_runs'")"
it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/v1" || { not_ok "a store made version 3 is read"; it_finish; exit 1; }
check_eq "where the histories are the same" "$(cat "$W/keep-history") $(cat "$W/hist-history")" \
	"$(cat "$M/jobs/keep/history") $(cat "$M/jobs/hist/history")"
it_stop
sql "$W/v1/ascendfs.db" "update meta set value = '4' where key = 'schema'" >/dev/null
jobs_before=$(sql "$W/v1/ascendfs.db" "select count(*) from jobs")
out=$("$ASCENDFS" -f -c "$CONFIG" --state-dir "$W/v1" "$W/mnt2" 2>&1)
check_eq "a store of a newer schema: the daemon exits 1" 1 "$?"
check_contains "and says which version it found and what to do" \
	"has schema version 4; this ascendfs reads versions 1 to 3 (use the ascendfs that wrote it" "$out"
check_eq "and changes nothing in it" "4 $jobs_before" \
	"$(sql "$W/v1/ascendfs.db" "select value from meta where key = 'schema'") $(sql "$W/v1/ascendfs.db" "select count(*) from jobs")"
mkdir -p "$W/junk"
head -c 4096 /dev/urandom >"$W/junk/ascendfs.db"
out=$("$ASCENDFS" -f -c "$CONFIG" --state-dir "$W/junk" "$W/mnt2" 2>&1)
status=$?
check_eq "a store that is not a database: the daemon exits 1" 1 "$status"
check_contains "and says which file and what is wrong" "$W/junk/ascendfs.db" "$out"
check_eq "and mounts nothing" "" "$(awk -v m="$W/mnt2" '$2 == m' /proc/mounts)"

# ---- records the restore cannot read: refused with nothing changed, or set aside ------
# (a loader's bug, a hand edit, a newer ascendfs's record under the same schema: the
# first write after a restore that dropped them used to delete them from the store)
cp -r "$STATE" "$W/bad"
rm -f "$W/bad/ascendfs.lock"
python3 - "$W/bad/ascendfs.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(doc,) = db.execute("select doc from jobs where name = 'keep'").fetchone()
d = json.loads(doc)
d["state"] = "exploded"
db.execute("update jobs set doc = ? where name = 'keep'", (json.dumps(d),))
(doc,) = db.execute("select doc from servers where name = 'a2-node-02'").fetchone()
d = json.loads(doc)
d["state"] = "melted"
db.execute("update servers set doc = ? where name = 'a2-node-02'", (json.dumps(d),))
(doc,) = db.execute("select value from meta where key = 'cluster'").fetchone()
d = json.loads(doc)
d["next_event_seq"] = 0
db.execute("update meta set value = ? where key = 'cluster'", (json.dumps(d),))
(serial,) = db.execute("select serial from jobs where name = 'hist'").fetchone()
(doc,) = db.execute("select doc from job_runs where serial = ? and run = 0", (serial,)).fetchone()
d = json.loads(doc)
d["end"] = "vanished"
db.execute("update job_runs set doc = ? where serial = ? and run = 0", (json.dumps(d), serial))
db.execute("insert into staged values ('future', 'x', '', 0, 0, '', ?)", (b"opaque\n",))
db.execute("insert into staged values ('quota', 'No Queue', '', 0, 0, '', ?)", (b"8\n",))
db.commit()
PY
dump() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print(*r) for t in ("jobs","job_runs","servers","meta","staged","accounting") for r in c.execute("select * from " + t + " order by 1, 2")]' "$1" | md5sum; }
tables() { sql "$1" "select name from sqlite_master where type = 'table' order by name"; }
keep_serial=$(sql "$W/bad/ascendfs.db" "select serial from jobs where name = 'keep'")
hist_serial=$(sql "$W/bad/ascendfs.db" "select serial from jobs where name = 'hist'")
keep_runs=$(sql "$W/bad/ascendfs.db" "select count(*) from job_runs where serial = $keep_serial")
hist_runs=$(sql "$W/bad/ascendfs.db" "select count(*) from job_runs where serial = $hist_serial")
jobs_before=$(sql "$W/bad/ascendfs.db" "select count(*) from jobs")
before=$(dump "$W/bad/ascendfs.db")
# (timeout: a daemon that starts would serve until stopped)
out=$(timeout 30 "$ASCENDFS" -f -c "$CONFIG" --state-dir "$W/bad" "$W/mnt2" 2>&1)
check_eq "a job, a server and the cluster record that cannot be restored: the daemon exits 1" \
	1 "$?"
check_contains "and names the job record and why" \
	"the record of job keep (serial $keep_serial) cannot be restored: job record keep is malformed" "$out"
check_contains "and the server record" \
	"the record of server a2-node-02 cannot be restored: server record a2-node-02 is malformed" "$out"
check_contains "and the cluster record (quotas set at run time)" \
	"the cluster record (sequences, counters, quotas set at run time) cannot be restored: the cluster record is malformed" "$out"
check_contains "and a history record of a job kept apart from its record" \
	"history record 0 of job hist (serial $hist_serial) cannot be restored: a history record of job hist is malformed" "$out"
check_contains "and a staged upload of a kind this ascendfs does not know" \
	"the staged upload (future, x) cannot be restored: a kind this ascendfs does not know" "$out"
check_contains "and a staged quota of a name no queue can have" \
	"the staged upload (quota, No Queue) cannot be restored: a quota under a name or extension no queue has" "$out"
check_contains "and how many, and what to do" \
	"6 records cannot be restored (each is logged above; the first: " "$out"
check_contains "and what to do" "start with --ignore-state-errors" "$out"
check_eq "and changes nothing in the store" "$before" "$(dump "$W/bad/ascendfs.db")"
check_eq "nor adds a table" "accounting events job_runs jobs meta servers staged" "$(tables "$W/bad/ascendfs.db")"
check_eq "and mounts nothing" "" "$(awk -v m="$W/mnt2" '$2 == m' /proc/mounts)"
it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/bad" --ignore-state-errors ||
	{ not_ok "--ignore-state-errors starts"; it_finish; exit 1; }
check_contains "with --ignore-state-errors: the log says where the records went" \
	"set aside in table unrestored" "$(cat "$IT_LOG")"
check_fails "the unreadable job is not restored" test -e "$M/jobs/keep"
check_eq "the other records are" "$((jobs_before - 1))" "$(find "$M/jobs" -mindepth 1 -maxdepth 1 -type d | wc -l)"
check_eq "a2-node-02 starts from the inventory" unknown "$(state_of a2-node-02)"
check_eq "hist is restored, its history without the unreadable generation" 2 \
	"$(python3 -c 'import json,sys; print(*[json.loads(l)["generation"] for l in open(sys.argv[1])])' "$M/jobs/hist/history")"
printf 'npus: 1\n' >"$W/after.yaml"
cp "$W/after.yaml" "$M/jobs/after-bad.yaml" && ok "a submission after it is written" ||
	not_ok "a submission after it is written"
it_stop
check_eq "the unreadable records are kept in the store as they were (keep's history with it)" \
	"meta cluster 0
server a2-node-02 melted
job $keep_serial exploded
job_run $keep_serial 0 cancelled
job_run $hist_serial 0 vanished
staged future x opaque
staged quota No Queue 8" \
	"$(python3 -c 'import json,sqlite3,sys
for k, key, doc in sqlite3.connect(sys.argv[1]).execute("select kind, key, doc from unrestored order by id"):
    if k == "staged":
        print(k, key, doc.decode().strip())
        continue
    d = json.loads(doc)
    print(k, key, d["next_event_seq"] if k == "meta" else d["end"] if k == "job_run" else d["state"])' "$W/bad/ascendfs.db")"
check_eq "keep had one generation" 1 "$keep_runs"
check_eq "with the reason" 5 "$(sql "$W/bad/ascendfs.db" "select count(*) from unrestored where reason like '%malformed%'")"
check_eq "and out of the jobs and job_runs tables" "0 0 $((hist_runs - 1))" \
	"$(sql "$W/bad/ascendfs.db" "select count(*) from jobs where name = 'keep'") $(sql "$W/bad/ascendfs.db" "select count(*) from job_runs where serial = $keep_serial") $(sql "$W/bad/ascendfs.db" "select count(*) from job_runs where serial = $hist_serial")"
it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/bad" ||
	{ not_ok "the next start needs no option"; it_finish; exit 1; }
check_eq "the next start needs no option, and keeps them" 7 \
	"$(sql "$W/bad/ascendfs.db" "select count(*) from unrestored")"
# (pending or running: NPUs may have been freed meanwhile)
case $(status_of after-bad) in
pending | running) ok "and has the job submitted after" ;;
*) not_ok "and has the job submitted after" "status: $(status_of after-bad)" ;;
esac
it_stop

# ---- a job's record does not grow with its generations (issue 16) --------------------
# Each closed generation is a history record written once to job_runs; a fault used to
# rewrite every generation the job ran in its record (150 KB for a 512-NPU job), under
# the daemon's lock. (The example cluster: no agents required.)
it_start "$ASCENDFS" "$SRC/examples/ascend_cluster.yaml" --state-dir "$W/gens" ||
	{ not_ok "start for the generations"; it_finish; exit 1; }
printf 'npus: 16\nmax_restarts: 1000\n' >"$M/jobs/gens.yaml"
record_len() { sql "$W/gens/ascendfs.db" "select length(doc) from jobs where name = 'gens'"; }
task_fault() { # the current generation's process on its first server exits 7
	echo "exit $(json "$M/jobs/gens/status.json" 'd["generation"]') $(json "$M/jobs/gens/status.json" 'd["placement"][0]["server"]') 7" \
		>"$M/jobs/gens/ctl"
}
task_fault
len2=$(record_len)
for _ in $(seq 3 41); do task_fault; done
check_eq "41 generations" "running 41" "$(status_of gens) $(json "$M/jobs/gens/status.json" 'd["generation"]')"
len41=$(record_len)
# (its counters have more digits)
[ "$len41" -le $((len2 + 64)) ] && ok "its record is as long as at generation 2 ($len2, $len41 bytes)" ||
	not_ok "its record is as long as at generation 2" "$len2 bytes then, $len41 now"
serial=$(sql "$W/gens/ascendfs.db" "select serial from jobs where name = 'gens'")
check_eq "its closed generations are records of their own: the first and the newest 30" \
	"31 0 10 39" "$(sql "$W/gens/ascendfs.db" "select count(*), min(run), (select min(run) from job_runs where serial = $serial and run > 0), max(run) from job_runs where serial = $serial")"
GENS_HISTORY=$(cat "$M/jobs/gens/history")
check_eq "its history shows generation 1 and the newest 31" "1 11 41 32" \
	"$(python3 -c 'import json,sys; g=[json.loads(l)["generation"] for l in open(sys.argv[1])]; print(g[0], g[1], g[-1], len(g))' "$M/jobs/gens/history")"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
it_start "$ASCENDFS" "$SRC/examples/ascend_cluster.yaml" --state-dir "$W/gens" ||
	{ not_ok "restart for the generations"; it_finish; exit 1; }
check_eq "after SIGKILL: the same history" "$GENS_HISTORY" "$(cat "$M/jobs/gens/history")"
task_fault
check_eq "the next generation drops the oldest but the first, in the store too" "31 11 40" \
	"$(sql "$W/gens/ascendfs.db" "select count(*), (select min(run) from job_runs where serial = $serial and run > 0), max(run) from job_runs where serial = $serial")"
echo cancel >"$M/jobs/gens/ctl"
rmdir "$M/jobs/gens"
check_eq "a record dropped (rmdir) takes its history records with it" 0 \
	"$(sql "$W/gens/ascendfs.db" "select count(*) from job_runs where serial = $serial")"
it_stop

# ---- a full disk: changes fail with EIO, nothing acknowledged is lost ----------------
# (root only: a small tmpfs holds the store; lib.sh unmounts it on every path)
if [ "$(id -u)" = 0 ] && mkdir -p "$W/small" && mount -t tmpfs -o size=640k tmpfs "$W/small"; then
	it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/small/state" || { not_ok "start on tmpfs"; it_finish; exit 1; }
	dd if=/dev/zero of="$W/small/filler" bs=4k >/dev/null 2>&1
	printf 'npus: 1\n' >"$W/one.yaml"
	out=$(cp "$W/one.yaml" "$M/jobs/full1.yaml" 2>&1)
	check_contains "with the disk full, a submission's close fails with EIO" "Input/output error" "$out"
	check_contains "and the daemon says why" "database or disk is full" "$(cat "$IT_LOG")"
	rm -f "$W/small/filler"
	if wait_until 10 cp "$W/one.yaml" "$M/jobs/full2.yaml"; then ok "with room again, submissions succeed"
	else not_ok "with room again, submissions succeed"; fi
	check_contains "and the daemon says so" "writing works again" "$(cat "$IT_LOG")"
	it_stop
	it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/small/state" || { not_ok "restart on tmpfs"; it_finish; exit 1; }
	# (pending: this cluster requires agents, and none runs now)
	check_eq "after a restart the acknowledged job is there" pending "$(status_of full2)"
	check_eq "and so is the one that got EIO, written once the disk had room" pending \
		"$(status_of full1)"
	it_stop
	# what an agent must run is shown only once it is durable: a placement whose write
	# failed is never started, since a crash (or, on etcd, a failover) would lose it
	it_start "$ASCENDFS" "$CONFIG" --state-dir "$W/small/state2" || { not_ok "start on tmpfs"; it_finish; exit 1; }
	report_by_hand 240
	D_REPORTER=$REPORTER
	dd if=/dev/zero of="$W/small/filler" bs=4k >/dev/null 2>&1
	out=$(cp "$W/one.yaml" "$M/jobs/nd1.yaml" 2>&1)
	check_contains "disk full again: a submission's close fails with EIO" "Input/output error" "$out"
	check_eq "its job is placed all the same, in memory, on the one server that reports" \
		"running a2-node-05" "$(status_of nd1) $(json "$M/jobs/nd1/status.json" 'd["placement"][0]["server"]')"
	out=$(cat "$M/nodes/a2-node-05/jobs" 2>&1)
	check_contains "but that server's job list fails with EIO while it cannot be written" \
		"Input/output error" "$out"
	rm -f "$W/small/filler"
	check "with room again, the job list names the job" \
		wait_until 10 grep -q "^nd1 " "$M/nodes/a2-node-05/jobs"
	kill "$D_REPORTER" 2>/dev/null
	wait "$D_REPORTER" 2>/dev/null
	it_stop
	umount "$W/small"
else
	echo "# SKIP full-disk checks: they need root to mount a small tmpfs"
fi
it_finish
