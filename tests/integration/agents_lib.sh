# shellcheck shell=bash
# Helpers for scripts that run node agents on this machine, one per server of the
# example cluster, with train_demo as the jobs' processes (test_recovery.sh,
# bench_recovery.sh). Needs M (the mount), W (a work dir) and AGENT (ascend-agent);
# sourced after lib.sh. SERVERS lists the servers agents_start starts agents for.
declare -A AGENT_PID=()
SERVERS="a2-node-01 a2-node-02 a2-node-03 a2-node-04 a2-node-05 a2-node-06"
agents_cleanup() {
	local n
	for n in "${!AGENT_PID[@]}"; do
		kill -KILL "${AGENT_PID[$n]}" 2>/dev/null
		wait "${AGENT_PID[$n]}" 2>/dev/null # reaped here: no "Killed" line later
	done
	it_kill_started "$W"/agent-*.log
	AGENT_PID=()
}
start_agent() { # start_agent SERVER
	local n=$1 i=${1#a2-node-}
	i=$((10#$i))
	mkdir -p "$W/faults" "$W/logs/$n"
	{ for d in 0 1 2 3 4 5 6 7; do echo "address_$d=10.20.$d.$i"; done; } >"$W/hccn-$n.conf"
	"$AGENT" --mount "$M" --node "$n" --fault-file "$W/faults/$n" \
		--hccn-conf "$W/hccn-$n.conf" --log-dir "$W/logs/$n" >>"$W/agent-$n.log" 2>&1 &
	AGENT_PID[$n]=$!
}
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
state_of() { json "$M/nodes/$1/info" 'd["state"]' 2>/dev/null; }
gen_of() { json "$M/jobs/$1/status.json" 'd["generation"]' 2>/dev/null; }
status_of() { cat "$M/jobs/$1/status" 2>/dev/null; }
servers_of() { json "$M/jobs/$1/status.json" '" ".join(p["server"] for p in d["placement"])'; }
log_of() { echo "$W/logs/$3/$1/g$2/node-$3.log"; } # log_of JOB GEN SERVER
step_in() { sed -n "s/.*$2 \([0-9]*\).*/\1/p" "$1" 2>/dev/null | tail -n1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
submit() { cat >"$W/$1.yaml" && cp "$W/$1.yaml" "$M/jobs/$1.yaml"; }
fault() { # fault SERVER: NPU 3 of SERVER reports Critical
	printf 'npu 3 Critical 0x80C98000 HBM uncorrectable ECC\n' >"$W/faults/$1.tmp"
	mv "$W/faults/$1.tmp" "$W/faults/$1"
}
all_started() { # all_started JOB GEN SERVERS...
	local j=$1 g=$2 s
	shift 2
	for s in "$@"; do grep -q "dynamic cluster: " "$(log_of "$j" "$g" "$s")" 2>/dev/null || return 1; done
}

agents_start() { # agents_start: an agent per server of SERVERS, then wait until all are ready
	local n
	for n in $SERVERS; do start_agent "$n"; sleep 0.1; done
	wait_until 20 all_ready
}
all_ready() { for n in $SERVERS; do [ "$(state_of "$n")" = ready ] || return 1; done; }
