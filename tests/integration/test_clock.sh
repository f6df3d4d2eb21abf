#!/usr/bin/env bash
# The wall clock steps across a restart (issue 15 item 11). The daemon is killed
# (SIGKILL) and started again under libfaketime with its wall clock 2 days ahead, then
# 1 day back from that (monotonic clocks untouched, as in a real step): a running job
# with time_limit: 1d that has run seconds keeps running with seconds of run time, and a
# stopping job gives its NPUs back by its deadline measured in real elapsed time.
# Usage: test_clock.sh ASCENDFS ASCEND_AGENT TRAIN_DEMO SRCDIR
set -u
ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
TRAIN=$(realpath "$3")
SRC=$(realpath "$4")
. "$SRC/tests/integration/lib.sh"

FAKETIME_LIB=
for d in /usr/lib/x86_64-linux-gnu/faketime /usr/lib/aarch64-linux-gnu/faketime /usr/lib/faketime; do
	[ -f "$d/libfaketimeMT.so.1" ] && FAKETIME_LIB=$d/libfaketimeMT.so.1 && break
done
if [ -z "$FAKETIME_LIB" ]; then
	echo "SKIP: needs libfaketime (Debian package faketime; tests/install-deps.sh installs it)"
	exit 77
fi

it_setup
M=$IT_WORK/mnt
W=$IT_WORK
STATE=$W/state

# 1 s check interval, a 6 s grace (a stop takes 7 s at most), agents required; the
# heartbeat timeout is long, so that only the stop's deadline can end the stop here
GRACE=6
STOP_SEC=$((GRACE + 1))
CONFIG=$W/cluster.yaml
sed -e 's/^  fault_check_interval: 5 .*/  fault_check_interval: 1/' \
	-e "s/^  heartbeat_timeout: 15 .*/  heartbeat_timeout: 120\n  stop_grace_period: $GRACE/" \
	-e 's/^  require_agent: false .*/  require_agent: true/' \
	"$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
grep -q "stop_grace_period: $GRACE$" "$CONFIG" || { echo "could not derive the test config"; exit 1; }

declare -A AGENT_PID=()
SERVERS="a2-node-01 a2-node-02"
agents_cleanup() {
	local n
	for n in "${!AGENT_PID[@]}"; do
		kill -CONT "${AGENT_PID[$n]}" 2>/dev/null
		kill -KILL "${AGENT_PID[$n]}" 2>/dev/null
	done
	for n in $SERVERS; do it_kill_started "$W/agent-$n.log"; done
}
trap 'agents_cleanup; it_cleanup' EXIT

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
state_of() { json "$M/nodes/$1/info" 'd["state"]' 2>/dev/null; }
status_of() { cat "$M/jobs/$1/status" 2>/dev/null; }
# run time in seconds of job $1 on a daemon whose clock is $2 seconds ahead of ours
run_sec() {
	python3 - "$M/jobs/$1/status.json" "$2" <<'PY'
import json, sys, time, datetime
d = json.load(open(sys.argv[1]))
ran = d["run_accum_sec"]
if d.get("run_since"):
    since = datetime.datetime.fromisoformat(d["run_since"].replace("Z", "+00:00")).timestamp()
    ran += time.time() + int(sys.argv[2]) - since
print(int(ran))
PY
}
# the daemon again, its wall clock $1 (a libfaketime offset such as +2d) from ours
restart_with_clock() {
	kill -KILL "$IT_PID"
	wait "$IT_PID" 2>/dev/null
	IT_PID=""
	fusermount3 -u "$M" 2>/dev/null
	IT_WRAP="env LD_PRELOAD=$FAKETIME_LIB FAKETIME=$1 FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
		it_start "$ASCENDFS" "$CONFIG" --state-dir "$STATE" || return 1
	grep 'restore: ' "$IT_LOG" | tail -n 2 | sed 's/^/# /'
}

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

for name in day held; do
	limit=
	[ $name = day ] && limit="time_limit: 1d"
	cat >"$W/$name.yaml" <<EOY
name: $name
npus: 8
$limit
command: "exec $TRAIN --steps 100000 --step-ms 50"
EOY
	cp "$W/$name.yaml" "$M/jobs/"
	check_eq "$name runs" running "$(status_of $name)"
done
started() { grep -q 'started pid' "$W/agent-a2-node-01.log" && grep -q 'started pid' "$W/agent-a2-node-02.log"; }
wait_until 15 started && ok "each agent starts its job's process" || not_ok "each agent starts its job's process"
HELD_ON=$(json "$M/jobs/held/status.json" 'd["placement"][0]["server"]' 2>/dev/null)
case "$HELD_ON" in a2-node-0[12]) ok "held runs on $HELD_ON" ;; *) not_ok "held's server" "$HELD_ON" ;; esac

# ---- +2 days: a job with time_limit: 1d that ran seconds keeps running ---------------
restart_with_clock +2d || { not_ok "the daemon restarts 2 days ahead"; it_finish; exit 1; }
grep -q "the wall clock moved +1728" "$IT_LOG" && ok "the restore sees the step and says so" ||
	not_ok "the restore sees the step and says so" "$(grep 'restore:' "$IT_LOG" | tail -n2)"
check_eq "day is still running 2 days ahead" running "$(status_of day)"
r=$(run_sec day 172800)
[ "$r" -ge 0 ] && [ "$r" -lt 120 ] && ok "its run time is seconds ($r s)" ||
	not_ok "its run time is seconds" "$r s"
sleep 2.5 # past two ticks
check_eq "day is still running after the ticks" running "$(status_of day)"

# ---- stopping, then -1 day: the NPUs come back by the real deadline -----------------
# held's agent is held still: its process is not stopped, so held stays stopping until
# its deadline gives its NPUs back
kill -STOP "${AGENT_PID[$HELD_ON]}"
t0=$(date +%s)
check "cancel held" sh -c "echo cancel > '$M/jobs/held/ctl'"
check_eq "held is stopping" stopping "$(status_of held)"
restart_with_clock +1d || { not_ok "the daemon restarts 1 day back"; it_finish; exit 1; }
check_eq "held is still stopping after the restart" stopping "$(status_of held)"
released() { [ "$(status_of held)" = cancelled ]; }
wait_until $((STOP_SEC + 10)) released
t1=$(date +%s)
check_eq "held's NPUs are given back (cancelled)" cancelled "$(status_of held)"
[ $((t1 - t0)) -le $((STOP_SEC + 5)) ] && ok "by its deadline in real time ($((t1 - t0)) s after the cancel, a stop takes $STOP_SEC s)" ||
	not_ok "by its deadline in real time" "$((t1 - t0)) s after the cancel; a stop takes $STOP_SEC s"
check_eq "day is still running 1 day back" running "$(status_of day)"
r=$(run_sec day 86400)
[ "$r" -ge 0 ] && [ "$r" -lt 120 ] && ok "its run time is still seconds ($r s)" ||
	not_ok "its run time is still seconds" "$r s"
kill -CONT "${AGENT_PID[$HELD_ON]}"

# ---- a restore that takes seconds: no step of the clock, no heartbeat lost ---------
# The restore compared the daemon's clock read before the state was read with
# CLOCK_BOOTTIME read after: with 100,000 records on etcd (3 s and more to read) it took
# the reading time for a step of the wall clock, moved every run time back by it and
# rewrote every record before mounting (8 s more). And each server's heartbeat timeout
# counted from the restore's start, while no agent can report before the mount: a restore
# longer than heartbeat_timeout made every server unreachable at once, and their jobs
# moved. Here: heartbeat_timeout 4 s, a restore that waits 6 s first
# (ASCENDFS_TEST_SLOW_RESTORE_MS), the agents reporting every second throughout.
sed 's/^  heartbeat_timeout: 120$/  heartbeat_timeout: 4/' "$CONFIG" >"$W/short-heartbeat.yaml"
grep -q '^  heartbeat_timeout: 4$' "$W/short-heartbeat.yaml" || not_ok "derive a config with heartbeat_timeout 4"
gen_before=$(json "$M/jobs/day/status.json" 'd["generation"]')
from=$(wc -c <"$IT_LOG")
# the same clock as the last daemon's (+1d): no step
CONFIG=$W/short-heartbeat.yaml ASCENDFS_TEST_SLOW_RESTORE_MS=6000 restart_with_clock +1d ||
	{ not_ok "the daemon restarts with a slow restore"; it_finish; exit 1; }
out=$(tail -c +$((from + 1)) "$IT_LOG")
check_fails "a restore that took 6 s is no step of the wall clock" grep -q "the wall clock moved" <<<"$out"
sleep 3 # past the first heartbeat checks, and the agents' first reports
check_eq "both servers stay ready" "ready ready" "$(state_of a2-node-01) $(state_of a2-node-02)"
check_fails "... and no heartbeat was lost" grep -q "heartbeat lost" <<<"$(tail -c +$((from + 1)) "$IT_LOG")"
check_eq "day still runs, in its generation" "running $gen_before" \
	"$(status_of day) $(json "$M/jobs/day/status.json" 'd["generation"]')"
r=$(run_sec day 86400)
[ "$r" -ge 0 ] && [ "$r" -lt 120 ] && ok "its run time is still seconds ($r s)" ||
	not_ok "its run time is still seconds" "$r s"

# ---- it ends as usual ---------------------------------------------------------------
check "cancel day" sh -c "echo cancel > '$M/jobs/day/ctl'"
wait_until 15 bash -c "[ \"\$(cat '$M/jobs/day/status')\" = cancelled ]"
check_eq "day is cancelled once its process is gone" cancelled "$(status_of day)"
for n in $SERVERS; do kill -TERM "${AGENT_PID[$n]}"; done
for n in $SERVERS; do wait "${AGENT_PID[$n]}" 2>/dev/null; done
AGENT_PID=()
it_stop
it_finish
