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
trap 'rm -rf "$work"' EXIT

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

echo "1..$n"
[ "$fails" -eq 0 ]
