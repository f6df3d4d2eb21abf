#!/usr/bin/env bash
# Crash test (issue 5): a client submits, cancels, removes (rmdir) and resubmits jobs,
# reports faults and sets a quota in a
# loop while the daemon is killed with SIGKILL at a random moment, many times. After
# each restart on the same --state-dir, the state must hold everything that was
# acknowledged (the syscall returned success) and nothing half applied: an operation
# in flight when the daemon died may be there or not, but whole.
#
# With CRASH_BACKEND=etcd the state is kept in a 3-member etcd cluster (state: {backend:
# etcd}, issue 21): each restart first stands by (a read-only view) until the killed
# head's lease ends, and is checked once it leads; halfway one etcd member is killed for
# good (the quorum goes on).
# test_failover.sh runs two heads, one standing by.
#
# Usage: test_crash.sh ASCENDFS CHECK_RANKTABLE SRCDIR   (CRASH_ROUNDS=N, default 20;
#        CRASH_BACKEND=sqlite (default) or etcd)
set -u
ASCENDFS=$1
CHECK=$2
SRC=$3
ROUNDS=${CRASH_ROUNDS:-20}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
it_setup
M=$IT_MNT
STATE=$IT_WORK/state
ACK=$IT_WORK/ack.log
BACKEND=${CRASH_BACKEND:-sqlite}
CONFIG=$SRC/examples/ascend_cluster.yaml
mkdir -p "$IT_WORK/spec"
: >"$ACK"
if [ "$BACKEND" = etcd ]; then
	it_etcd_start 3 || { not_ok "a 3-member etcd cluster starts"; it_finish; exit 1; }
	CONFIG=$IT_WORK/cluster.yaml
	{
		cat "$SRC/examples/ascend_cluster.yaml"
		printf 'state:\n  backend: etcd\n  etcd_servers: %s\n' "$IT_ETCD_ENDPOINTS"
		printf '  leader_lease_duration: 2s\n'
	} >"$CONFIG"
fi

start_daemon() {
	"$ASCENDFS" -f -c "$CONFIG" --state-dir "$STATE" "$M" \
		>>"$IT_LOG" 2>&1 &
	IT_PID=$!
	# (with etcd, until the killed head's lease ends it stands by: cluster/leader says)
	wait_until 20 answers "$M/jobs" && wait_until 20 grep -qx 'role: leader' "$M/cluster/leader"
}

# shellcheck source=crash_lib.sh
. "$(dirname "$0")/crash_lib.sh"

start_daemon || { not_ok "daemon starts"; it_finish; exit 1; }
crashes=0
ops=0
for round in $(seq "$ROUNDS"); do
	client "$round" &
	cpid=$!
	# a random moment: 0.2 to 2.2 s of operations
	sleep "$((RANDOM % 2)).$(printf '%03d' $((RANDOM % 1000)))"
	sleep 0.2
	kill -KILL "$IT_PID"
	wait "$IT_PID" 2>/dev/null
	kill -TERM "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	IT_PID=""
	crashes=$((crashes + 1))
	# etcd: one member of three gone for good from halfway on
	if [ "$BACKEND" = etcd ] && [ "$round" = $((ROUNDS / 2)) ]; then
		kill -KILL "${IT_ETCD_PIDS[0]}"
		echo "# round $round: etcd member e0 killed; two of three go on"
	fi
	if ! start_daemon; then
		not_ok "round $round: the daemon restarts after SIGKILL" "$(tail -5 "$IT_LOG")"
		break
	fi
	if out=$(verify); then
		n=${out##*checked }
		ops=$n
	else
		not_ok "round $round: state after the crash holds what was acknowledged" "$out"
		# evidence for a failure that is rare (one in about ten runs of one build)
		echo "# fault operations, last 20:"
		grep ' fault ' "$ACK" | tail -20 | sed 's/^/#   /'
		echo "# health events after the restart, last 30:"
		timeout 10 grep '"health"' "$M/cluster/events" 2>/dev/null | tail -30 | sed 's/^/#   /'
		echo "# daemon log, last 40 lines:"
		tail -40 "$IT_LOG" | sed 's/^/#   /'
		break
	fi
done
check_eq "survived every crash" "$ROUNDS" "$crashes"
acks=$(grep -c '^ack' "$ACK")
echo "# survived $crashes SIGKILLs; $acks operations acknowledged; after the last restart" \
	"$ops checked (every submission, cancel and rmdir; each NPU's fault; the quota)"
[ "$ops" -gt 0 ] && ok "acknowledged operations were checked ($ops)" || not_ok "operations were checked"
it_stop
it_finish
