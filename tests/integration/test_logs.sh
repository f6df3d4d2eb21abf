#!/usr/bin/env bash
# Nobody can forge a log record or an event (issue 15 item 7): every kind of input the
# daemon quotes in its log or its events (a refused path, a mkdir, job ctl, cluster ctl
# and node ctl lines, spec fields that make a job rejected, a health report, a quota
# write) is sent with a newline, a carriage return, an escape and a "<3>" priority in it.
# The daemon writes to a log that it takes for the journal (JOURNAL_STREAM names it), as
# under systemd, so a forged line would be a record of its own priority there. Then every
# line of the log is one record with the daemon's own prefix, none starts with the
# forged text, and every line of cluster/events and the jobs' events is one JSON object.
# One node agent runs a job whose command holds the forged text; its log is checked the
# same way.
# Usage: test_logs.sh ASCENDFS ASCEND_AGENT SRCDIR
set -u
ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
SRC=$(realpath "$3")
. "$SRC/tests/integration/lib.sh"

it_setup
M=$IT_MNT
W=$IT_WORK
CONFIG=$W/cluster.yaml
# the example cluster, agents required: the one agent's server takes the first job
sed -e 's/^  require_agent: false .*/  require_agent: true/' \
	"$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
AGENT_PID=""
agent_stop() {
	[ -n "$AGENT_PID" ] || return 0
	kill -TERM "$AGENT_PID" 2>/dev/null
	wait_until 15 bash -c "! kill -0 $AGENT_PID"
	kill -KILL "$AGENT_PID" 2>/dev/null
	AGENT_PID=""
}
trap 'agent_stop; it_cleanup' EXIT

# stderr is the log file; JOURNAL_STREAM names its device and inode (systemd.exec(5))
: >"$IT_LOG"
JOURNAL_STREAM=$(stat -c '%d:%i' "$IT_LOG")
export JOURNAL_STREAM
it_start "$ASCENDFS" "$CONFIG" || exit 1
unset JOURNAL_STREAM

# the forged text: a record of its own priority, and a line that reads as the daemon's
NL=$'\n'
FORGE="${NL}<3>error: FORGED by a user${NL}job llama70b-pretrain removed by uid 0"
FORGE_CTL=$'\r\033[2K'"<3>error: FORGED by a user" # a ctl line ends at the newline

# ---- the agent: a job command with a newline and <3> -----------------------------
ALOG=$W/agent.log
: >"$ALOG"
mkdir -p "$W/faults" "$W/logs"
{ for d in 0 1 2 3 4 5 6 7; do echo "address_$d=10.20.$d.1"; done; } >"$W/hccn.conf"
JOURNAL_STREAM=$(stat -c '%d:%i' "$ALOG") "$AGENT" --mount "$M" --node a2-node-01 \
	--fault-file "$W/faults/a2-node-01" --hccn-conf "$W/hccn.conf" --log-dir "$W/logs" \
	>>"$ALOG" 2>&1 &
AGENT_PID=$!
check "the agent's server becomes ready" wait_until 20 grep -q '"ready"' "$M/nodes/a2-node-01/info"
printf 'npus: 8\ncommand: |\n  true\n  # <3>error: FORGED by a user\n  # job llama70b-pretrain removed by uid 0\n' \
	>"$M/jobs/forge-agent.yaml"
check "the agent runs it" wait_until 20 grep -q 'forge-agent.*started pid' "$ALOG"
check "and it completes" wait_until 20 grep -qx completed "$M/jobs/forge-agent/status"

# ---- every kind of input, each refused or logged --------------------------------
check_fails "a create whose name holds a newline and <3> is refused" \
	touch "$M/jobs/x${FORGE}.yaml"
check_fails "so is such a mkdir" mkdir "$M/jobs/d${FORGE}"
check_fails "and a create of a non-spec name" touch "$M/jobs/${FORGE}"

J=forge-ctl
printf 'npus: 8\ncommand: "sleep 1000"\n' >"$M/jobs/$J.yaml"
wait_until 10 test -e "$M/jobs/$J/status"
check_fails "a job ctl line with a newline and <3> is refused" \
	sh -c "printf 'bogus%s\n' \"\$1\" > '$M/jobs/$J/ctl'" _ "$FORGE"
check_fails "and one with a carriage return and an escape" \
	sh -c "printf 'cancel %s\n' \"\$1\" > '$M/jobs/$J/ctl'" _ "$FORGE_CTL"
check_fails "a cluster/ctl line likewise" \
	sh -c "printf 'cordon a2-node-01%s\n' \"\$1\" > '$M/cluster/ctl'" _ "$FORGE"
check_fails "a cluster/ctl line naming a server with an escape" \
	sh -c "printf 'cordon %s\n' \"\$1\" > '$M/cluster/ctl'" _ "$FORGE_CTL"
check_fails "a nodes/<server>/ctl line likewise" \
	sh -c "printf 'clear 1%s\n' \"\$1\" > '$M/nodes/a2-node-02/ctl'" _ "$FORGE"
check_fails "a health report with a newline and <3> is refused" \
	sh -c "printf 'node OK\nnpu 0 Critical 0x80C98000 bad%s\n' \"\$1\" > '$M/nodes/a2-node-03/health'" _ "$FORGE"
check_fails "a health report with an escape in a message is refused" \
	sh -c "printf 'node OK\nnpu 0 Critical 0x80C98000 %s\n' \"\$1\" > '$M/nodes/a2-node-03/health'" _ "$FORGE_CTL"
check_fails "a quota write with a newline and <3> is refused" \
	sh -c "printf '16%s\n' \"\$1\" > '$M/queues/research/quota'" _ "$FORGE"

# spec fields quoted in a rejection: YAML double quotes carry any byte
yq() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
F=$(yq "x${FORGE}")
n=0
for field in "queue: $F" "name: $F" "launch: $F" "server_type: $F" "priority: $F" \
	"time_limit: $F" "npus: $F" "checkpoint_dir: $F" "checkpoint_dir: $(yq "/data${FORGE}")" \
	"env: {A: $F}" "env: {$F: 1}" "parallel: {tp: $F}" "max_restarts: $F" "$F: 1" \
	"command: $F${NL}frobnicate: 1"; do
	n=$((n + 1))
	printf 'npus: 8\n%s\n' "$field" >"$M/jobs/forge-$n.yaml" 2>/dev/null
	wait_until 10 test -e "$M/jobs/forge-$n/status"
	check_eq "spec field '${field%%:*}' with a newline and <3>: the job is rejected" \
		rejected "$(cat "$M/jobs/forge-$n/status" 2>/dev/null)"
done
# an accepted job whose command holds the same text is logged too
printf 'npus: 8\ncommand: %s\n' "$(yq "sleep 1000${FORGE}")" >"$M/jobs/forge-ok.yaml"
wait_until 10 test -e "$M/jobs/forge-ok/status"
check_contains "a command with a newline and <3> is a job" \
	" $(cat "$M/jobs/forge-ok/status" 2>/dev/null) " " pending running "

# ---- the log: one record a line, none forged ------------------------------------
# the daemon logs refusals and rejections as it handles them; wait for the last one
wait_until 10 grep -q 'forge-15' "$IT_LOG"
lines=$(wc -l <"$IT_LOG")
check "the log has the records (more than 20 lines)" test "$lines" -gt 20
bad=$(grep -nvE '^<[3467]>' "$IT_LOG" | head -n 3)
check_eq "every line of the log starts with the daemon's own priority prefix" "" "$bad"
bad=$(grep -nE '^<[0-7]>(error: )?FORGED|^<[0-7]>job llama70b-pretrain' "$IT_LOG" | head -n 3)
check_eq "no line starts with the forged text" "" "$bad"
check "the refused create is in the log, its newline escaped" \
	grep -qF 'create "/jobs/x\x0a<3>error: FORGED by a user\x0ajob llama70b-pretrain removed by uid 0.yaml"' "$IT_LOG"
check "the refused job ctl line is in the log" grep -qF 'ctl "cancel ' "$IT_LOG"
check "the refused health report is in the log" grep -qF 'health report' "$IT_LOG"
check "the refused quota is in the log" grep -qF 'queues/research/quota' "$IT_LOG"
check "every rejected spec is in the log" test "$(grep -c 'job forge-[0-9]* rejected' "$IT_LOG")" -eq 15
check "no log line holds a raw escape or carriage return" bash -c "! grep -q \$'[\\r\\033]' '$IT_LOG'"

# ---- the events: one JSON object a line, none forged ----------------------------
events_ok() {
	python3 - "$@" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    for i, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        try:
            json.loads(line)
        except ValueError:
            sys.exit("%s:%d: not one JSON object: %r" % (path, i, line[:120]))
        if line.startswith(("<", "job ", "FORGED")):
            sys.exit("%s:%d: forged: %r" % (path, i, line[:120]))
EOF
}
check "cluster/events is one JSON object a line" events_ok "$M/cluster/events"
check "so are the jobs' events" events_ok "$M/jobs/$J/events" "$M/jobs/forge-1/events" \
	"$M/jobs/forge-ok/events"
check_contains "the refused create is a refused event, escaped" \
	'create \"/jobs/x\\x0a<3>error: FORGED' "$(grep '"kind":"refused"' "$M/cluster/events")"
check "nodes/a2-node-03/info is JSON" python3 -m json.tool "$M/nodes/a2-node-03/info"

agent_stop
bad=$(grep -nvE '^<[346]>' "$ALOG" | head -n 3)
check_eq "every line of the agent's log starts with its own priority prefix" "" "$bad"
bad=$(grep -nE '^<[0-7]>(error: )?(# )?FORGED|^<[0-7]>(# )?job llama70b-pretrain' "$ALOG" | head -n 3)
check_eq "no line of the agent's log starts with the forged text" "" "$bad"
check "the agent logged the command, its newlines escaped" \
	grep -qF 'sh -c true\x0a# <3>error: FORGED by a user\x0a# job llama70b-pretrain' "$ALOG"

it_stop
bad=$(grep -nvE '^<[3467]>' "$IT_LOG" | head -n 3)
check_eq "through the unmount, every line of the log is a record of its own" "" "$bad"
it_finish
