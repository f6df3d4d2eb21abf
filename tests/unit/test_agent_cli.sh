#!/bin/bash
# ascend-agent's command line and start-up refusals, without a mount: exit status 2 for
# usage errors, 1 with a sentence on stderr when it cannot start.
# Usage: test_agent_cli.sh ASCEND_AGENT SRCDIR
set -u
agent=$1
src=$2
fails=0
n=0
work=$(mktemp -d /tmp/ascend-agent-cli.XXXXXX)
trap 'chattr -i "$work/nodes/n3/health" 2>/dev/null; rm -rf "$work"' EXIT

# expect DESC STATUS PATTERN CMD...: CMD exits STATUS and its stderr matches PATTERN
expect() {
	local desc=$1 want=$2 pattern=$3
	shift 3
	local err status
	err=$("$@" 2>&1 >/dev/null)
	status=$?
	n=$((n + 1))
	if [ "$status" -eq "$want" ] && grep -qE -- "$pattern" <<<"$err"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc (exit $status, want $want)"
		echo "#   stderr: ${err:0:400}"
		fails=$((fails + 1))
	fi
}

expect "no arguments is a usage error" 2 "--mount and --node are required" "$agent"
expect "an invalid node name is a usage error" 2 '"A2 node" is not a server name' \
	"$agent" --mount "$work" --node "A2 node"
expect "a bad interval is a usage error" 2 '"0" is not 1 to 3600 seconds' \
	"$agent" --mount "$work" --node n1 --interval 0
expect "stray arguments are a usage error" 2 "unexpected arguments" \
	"$agent" --mount "$work" --node n1 extra
expect "no npu-smi and no fault file: says so, exits 1" 1 \
	"no health source: npu-smi is not in PATH and no --fault-file was given" \
	env PATH="$work" "$agent" --mount "$work" --node n1 --once
expect "a missing --npu-smi is named" 1 "cannot run npu-smi at $work/none" \
	"$agent" --mount "$work" --node n1 --npu-smi "$work/none" --once
expect "a missing --hccn-conf is named" 1 "cannot read $work/none" \
	"$agent" --mount "$work" --node n1 --fault-file "$work/faults" --hccn-conf "$work/none"
expect "not a mount: says so, exits 1" 1 "$work is not an ascendfs mount" \
	"$agent" --mount "$work" --node n1 --fault-file "$work/faults" --once
# A directory that looks like a mount but does not know the node: the known ones listed.
mkdir -p "$work/nodes/n2"
expect "an unknown node lists the known ones" 1 \
	"node \"n1\" is not in the cluster mounted at $work; its nodes are: n2" \
	"$agent" --mount "$work" --node n1 --npu-smi "$src/tests/data/agent/fake-npu-smi" --once
expect "--help exits 0" 0 "" "$agent" --help
expect "an interval past 64 bits is a usage error, not a wrapped one" 2 \
	'"18446744073709551616s" is not 1 to 3600 seconds' \
	"$agent" --mount "$work" --node n1 --interval 18446744073709551616s
expect "the longest interval is 3600 seconds" 2 '"3601" is not 1 to 3600 seconds' \
	"$agent" --mount "$work" --node n1 --interval 3601
expect "a bad --poll-interval is a usage error" 2 '"fast" is not 0 to 3600 seconds' \
	"$agent" --mount "$work" --node n1 --poll-interval fast

# A directory that is not ascendfs's own mount stands for a network mount (sshfs, NFS),
# whose close() does not carry the daemon's refusal: the agent reads nodes/<node>/info
# back to confirm each report.
mkdir -p "$work/nodes/n3"
: >"$work/nodes/n3/health"
info() { # HEARTBEAT_AGE REFUSAL_JSON
	printf '{"name": "n3", "npu_count": 8, "heartbeat_age_sec": %s, "last_refused_report": %s}\n' \
		"$1" "$2" >"$work/nodes/n3/info"
}
info 0.0 null
expect "a report the info confirms: exit 0" 0 "first report written" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
info 42.5 '{"reason": "n3/health:1:5: npu 9: no such NPU", "age_sec": 0.0}'
expect "a refusal in the info: logged with its reason, exit 1" 1 \
	"the daemon refused the report written to $work/nodes/n3/health: n3/health:1:5: npu 9: no such NPU \\(read from nodes/n3/info" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
info 42.5 null
expect "a heartbeat that did not move: exit 1" 1 \
	"the heartbeat in $work/nodes/n3/info did not move in [0-9]+ ms \\(older than this write\\)" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
info null '{"reason": "old", "age_sec": 900.0}'
expect "an old refusal is not this report's; no heartbeat yet: exit 1" 1 \
	"did not move in [0-9]+ ms \\(no report accepted yet\\)" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
# another agent's report moved the heartbeat (two agents with one node name): not ours
printf '{"name": "n3", "npu_count": 8, "heartbeat_age_sec": 0.0, "agent": "other-host:42", "last_refused_report": null}\n' \
	>"$work/nodes/n3/info"
expect "a heartbeat moved by another agent: exit 1, both named" 1 \
	"nodes/n3/info says the reports that count come from agent other-host:42, not this one \\($(hostname)[:)].*two agents use the node name n3" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
me=$(hostname)
[ -r /etc/machine-id ] && me="$me:$(tr -cd '0-9a-fA-F' </etc/machine-id | head -c 40)"
# the identity ends in the agent's pid and boot id: the shell writes the info with its own
# pid, then becomes the agent (exec keeps the pid)
boot=$(tr -cd '0-9a-f' </proc/sys/kernel/random/boot_id | head -c 8)
expect "a heartbeat moved by this agent ($me/<pid>.$boot): exit 0" 0 "as agent $me/[0-9]+\\.$boot: " \
	bash -c 'printf "{\"name\": \"n3\", \"npu_count\": 8, \"heartbeat_age_sec\": 0.0, \"agent\": \"%s/%s.%s\", \"last_refused_report\": null}\n" "$1" "$$" "$2" >"$3/nodes/n3/info"
		exec "$4" --mount "$3" --node n3 --fault-file "$3/none" --once' _ "$me" "$boot" "$work" "$agent"
# an info that names this machine but another agent process (one restarted, or a second
# one beside it) is not this agent's
printf '{"name": "n3", "npu_count": 8, "heartbeat_age_sec": 0.0, "agent": "%s/1.%s", "last_refused_report": null}\n' \
	"$me" "$boot" >"$work/nodes/n3/info"
expect "a heartbeat moved by another agent of this machine: exit 1" 1 \
	"come from agent $me/1\\.$boot, not this one \\($me/[0-9]+\\.$boot\\)" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
# sshfs sends the SFTP close (where the head applies the report) after close() returned
# here: a heartbeat that moves a moment later still confirms the report
info 42.5 null
(sleep 0.15 && info 0.0 null) &
expect "a heartbeat that moves within the retries confirms the report: exit 0" 0 \
	"first report written" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
wait
printf '{"name": "n3", "npu_count": 8}\n' >"$work/nodes/n3/info"
expect "a daemon without the fields: warned, the report counts as written" 0 \
	"no \"heartbeat_age_sec\" number or null; reports are not confirmed" \
	"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once

# sshfs returns EPERM for every head-side failure SFTP has no code for (a dead ascendfs
# mount on the head: ENOTCONN there); an immutable file gives EPERM to root here too
if chattr +i "$work/nodes/n3/health" 2>/dev/null; then
	expect "EPERM on a network mount points at the head, not at the agent's user" 1 \
		"Operation not permitted; through a network mount this is also how the head's own failures arrive" \
		"$agent" --mount "$work" --node n3 --fault-file "$work/none" --once
	chattr -i "$work/nodes/n3/health"
fi
expect "a bad --log-level is a usage error" 2 '--log-level: "verbose" is not a level' \
	"$agent" --mount "$work" --node n1 --log-level verbose
# getopt keeps the last --node: what the service's ASCEND_AGENT_OPTS="--node NAME" relies on
expect "the last --node wins" 1 "node \"n4\" is not in the cluster" \
	"$agent" --mount "$work" --node n2 --node n4 --fault-file "$work/faults" --once

# Logging, on a directory that looks enough like a mount for --once: nodes/n2/info
# gives the NPU count, the report lands in nodes/n2/health (which must exist).
echo '{"npu_count": 8}' >"$work/nodes/n2/info"
: >"$work/nodes/n2/health"
once=("$agent" --mount "$work" --node n2 --fault-file "$work/faults" --once)
# run_once [OPTIONS...]: one report, stderr into $work/log
run_once() {
	"${once[@]}" "$@" 2>"$work/log"
}
n=$((n + 1))
if run_once && grep -qE '^[0-9T:.-]+Z ascend-agent\[n2\]: reporting to ' "$work/log" &&
	! grep -q '^<' "$work/log"; then
	echo "ok $n - without the journal, lines start with the time and the agent's name"
else
	echo "not ok $n - without the journal, lines start with the time and the agent's name"
	sed 's/^/#   /' "$work/log"
	fails=$((fails + 1))
fi
# stderr is the journal when JOURNAL_STREAM names its device and inode (systemd.exec(5))
: >"$work/log"
stream=$(stat -c '%d:%i' "$work/log")
n=$((n + 1))
if JOURNAL_STREAM=$stream run_once && grep -q '^<6>reporting to ' "$work/log" &&
	! grep -qvE '^<[0-7]>' "$work/log" && ! grep -q 'ascend-agent\[' "$work/log"; then
	echo "ok $n - on the journal, lines start with their syslog priority and no time"
else
	echo "not ok $n - on the journal, lines start with their syslog priority and no time"
	sed 's/^/#   /' "$work/log"
	fails=$((fails + 1))
fi
# another file's JOURNAL_STREAM (stderr redirected away from the journal): plain lines
n=$((n + 1))
if JOURNAL_STREAM=$(stat -c '%d:%i' "$work") run_once && ! grep -q '^<' "$work/log" &&
	grep -q 'ascend-agent\[n2\]: reporting to ' "$work/log"; then
	echo "ok $n - a JOURNAL_STREAM of another file leaves the lines plain"
else
	echo "not ok $n - a JOURNAL_STREAM of another file leaves the lines plain"
	sed 's/^/#   /' "$work/log"
	fails=$((fails + 1))
fi
: >"$work/log"
n=$((n + 1))
if JOURNAL_STREAM=$stream run_once --log-level error && [ ! -s "$work/log" ] &&
	[ -s "$work/nodes/n2/health" ]; then
	echo "ok $n - --log-level error leaves the info lines out (the report is still written)"
else
	echo "not ok $n - --log-level error leaves the info lines out (the report is still written)"
	sed 's/^/#   /' "$work/log"
	fails=$((fails + 1))
fi
# an error still shows at --log-level error, with its priority
rm "$work/nodes/n2/health" # the write fails (ENOENT: the daemon would not know the node)
n=$((n + 1))
if ! JOURNAL_STREAM=$stream run_once --log-level=error &&
	grep -q "^<3>error: cannot write $work/nodes/n2/health" "$work/log" &&
	[ "$(wc -l <"$work/log")" -eq 1 ]; then
	echo "ok $n - --log-level error keeps errors, with the <3> prefix"
else
	echo "not ok $n - --log-level error keeps errors, with the <3> prefix"
	sed 's/^/#   /' "$work/log"
	fails=$((fails + 1))
fi

# A3 (issue 14 item 6): the report carries each die's SDID, super pod and server index
# from `npu-smi info -t spod-info`, and no address hccn_tool gives HCCL could not use
mkdir -p "$work/nodes/a3"
: >"$work/nodes/a3/health"
printf '{"name": "a3", "npu_count": 16, "heartbeat_age_sec": 0.0, "last_refused_report": null}\n' \
	>"$work/nodes/a3/info"
n=$((n + 1))
if FAKE_NPU_SMI_OUTPUT="$src/tests/data/agent/npu-smi-a3.txt" FAKE_SPOD_SERVER_INDEX=5 \
	FAKE_SPOD_ID=3 FAKE_HCCN_IP_FORMAT=127.0.0.%d "$agent" --mount "$work" --node a3 \
	--npu-smi "$src/tests/data/agent/fake-npu-smi" \
	--hccn-tool "$src/tests/data/agent/fake-hccn-tool" --once >"$work/a3.log" 2>&1 &&
	grep -qx "sdid 3 $((5 * 4194304 + 1 * 262144 + 1 * 65536 + 3)) 3 5" "$work/nodes/a3/health" &&
	[ "$(grep -c '^sdid ' "$work/nodes/a3/health")" -eq 16 ] &&
	! grep -q '^ip ' "$work/nodes/a3/health" &&
	grep -q "127.0.0.0 is the unspecified\|is a loopback address" "$work/a3.log"; then
	echo "ok $n - A3: sdid lines from npu-smi spod-info; loopback hccn_tool addresses not sent"
else
	echo "not ok $n - A3: sdid lines from npu-smi spod-info; loopback hccn_tool addresses not sent"
	sed 's/^/#   /' "$work/nodes/a3/health" "$work/a3.log"
	fails=$((fails + 1))
fi

# One agent per server and machine (issue 15 item 10): with npu-smi the lock is the
# machine's, whatever --node says, so a second agent, even for another node name, refuses
# to start and names the first; the first goes on; once it is gone a new one starts.
# (--lock-dir keeps this test's lock apart from /run/ascend-agent.)
lockdir=$work/lock
canon=$(realpath "$work")
for nn in n5 n6; do
	mkdir -p "$work/nodes/$nn"
	echo '{"npu_count": 8}' >"$work/nodes/$nn/info"
	: >"$work/nodes/$nn/health"
done
# holds_lock PID: the lock file names PID (bounded: 5 s)
holds_lock() {
	for _ in $(seq 100); do
		grep -q "^pid $1 " "$lockdir/npus.lock" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# ended PID: PID exited within 10 s (it is reaped by wait afterwards)
ended() {
	for _ in $(seq 200); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}
# tap DESC CMD...: one result line
tap() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $desc"; else
		echo "not ok $n - $desc"
		fails=$((fails + 1))
	fi
}
"$agent" --mount "$work" --node n5 --interval 60 --npu-smi "$src/tests/data/agent/fake-npu-smi" \
	--lock-dir "$lockdir" >"$work/first.log" 2>&1 &
first=$!
tap "an agent in npu-smi mode holds the machine's lock ($lockdir/npus.lock)" holds_lock "$first"
expect "a second agent of this machine, for another node, refuses to start: exit 1, the first named" 1 \
	"another agent already runs the NPUs of this machine: $lockdir/npus.lock is held by pid $first node n5 mount $canon; one agent per server and machine .*kill -TERM $first" \
	"$agent" --mount "$work" --node n6 --interval 60 --npu-smi "$src/tests/data/agent/fake-npu-smi" \
	--lock-dir "$lockdir"
tap "the first goes on" kill -0 "$first"
tap "and still holds the lock" holds_lock "$first"
kill -TERM "$first"
tap "the first stops on SIGTERM" ended "$first"
wait "$first"
"$agent" --mount "$work" --node n6 --interval 60 --npu-smi "$src/tests/data/agent/fake-npu-smi" \
	--lock-dir "$lockdir" >"$work/second.log" 2>&1 &
second=$!
tap "once it is gone, a new agent takes the lock" holds_lock "$second"
kill -TERM "$second"
tap "and stops on SIGTERM" ended "$second"
wait "$second"
mkdir -m 0777 "$work/open"
chmod 0777 "$work/open"
expect "a lock directory others may write: refused, exit 1" 1 \
	"cannot take the lock $work/open/npus.lock .*Operation not permitted \(the directory must belong to this user or root and be writable by it alone\)" \
	"$agent" --mount "$work" --node n6 --interval 60 --npu-smi "$src/tests/data/agent/fake-npu-smi" \
	--lock-dir "$work/open"

echo "1..$n"
[ "$fails" -eq 0 ]
