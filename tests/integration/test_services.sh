#!/usr/bin/env bash
# Inference services through a real mount (issue 18), on examples/ascend_cluster_serving.yaml
# (4 Atlas 800T A2 for training, 4 Atlas 800I A2 for serving): examples/jobs/
# llama70b-serve.yaml serves as two instances of 16 NPUs, each a job of its own with a
# MindIE rank table (container_ip) the HCCL checker passes, MindIE's env and a
# config.json fragment; endpoints lists them; scale up and down; a Critical NPU moves one
# instance while the other serves on; training shares the cluster; instance names are
# the service's; cancel ends them all; the service and its instances survive a SIGKILL of
# the daemon; bad service specs are refused with the line and the rule.
# Then with agents, on the same cluster with loopback host addresses: the master's agent
# finds the instance's port answering and reports it ready, and not ready once it stops
# answering, and endpoints follows; a crash loop waits out its restart back-off; 3
# replicas behind examples/gateway.py serve a client without one failed request while an
# instance stops answering and another moves off a failed NPU; a drain moves 2 replicas
# one at a time while the gateway serves; a low-priority service shares the training
# queue and is preempted only as its spec allows; a disaggregated service's controller
# runs on its server and starts again when it dies, and its global rank table follows its
# moved prefill instance.
# Usage: test_services.sh ASCENDFS ASCEND_AGENT CHECK_RANKTABLE SERVE_DEMO SRCDIR
set -u
ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
CHECK=$(realpath "$3")
SERVE=$(realpath "$4")
SRC=$(realpath "$5")
. "$SRC/tests/integration/lib.sh"

it_setup
declare -A AGENT_PID=()
# the agents, and the processes they started (process groups named in their logs)
agents_cleanup() {
	local n
	[ -n "${GW_PID:-}" ] && kill "$GW_PID" 2>/dev/null
	[ -n "${CLIENT_PID:-}" ] && kill "$CLIENT_PID" 2>/dev/null
	[ -n "${INW_PID:-}" ] && kill "$INW_PID" 2>/dev/null
	for n in "${!AGENT_PID[@]}"; do
		kill -KILL "${AGENT_PID[$n]}" 2>/dev/null
	done
	it_kill_started "$IT_WORK"/agent-*.log
	AGENT_PID=()
}
trap 'agents_cleanup; it_cleanup' EXIT
M=$IT_MNT
W=$IT_WORK
CONFIG=$SRC/examples/ascend_cluster_serving.yaml
SVC=llama70b-serve

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
status_of() { cat "$M/jobs/$1/status" 2>/dev/null; }
servers_of() { json "$M/jobs/$1/status.json" '" ".join(p["server"] for p in d["placement"])'; }
env_of() { sed -n "s/^export $2='\(.*\)'$/\1/p" "$M/jobs/$1/$3"; }
gen_of() { json "$M/jobs/$1/status.json" 'd["generation"]'; }
# ready INSTANCE: what its master's agent (or the process) writes once the port answers
ready() { echo "ready $(gen_of "$1")" >"$M/jobs/$1/ctl"; }

it_start "$ASCENDFS" "$CONFIG" || exit 1

# ---- a service of two instances, on the inference servers -------------------------
check "cp of the service spec succeeds" cp "$SRC/examples/jobs/$SVC.yaml" "$M/jobs/"
check_eq "the service serves" serving "$(status_of $SVC)"
check_contains "and says how" "serving: 2 replicas of 16 NPUs on port 1025" \
	"$(json "$M/jobs/$SVC/status.json" 'd["reason"]')"
check_eq "two instances run" "running running" "$(status_of $SVC.0) $(status_of $SVC.1)"
check_fails "no third" test -e "$M/jobs/$SVC.2"
check_fails "the service itself holds no rank table" test -e "$M/jobs/$SVC/ranktable.json"
s0=$(servers_of $SVC.0)
s1=$(servers_of $SVC.1)
case "$s0 $s1" in
*train-*) not_ok "instances on the Atlas 800I A2 servers" "$s0 / $s1" ;;
*) ok "instances on the Atlas 800I A2 servers ($s0 / $s1)" ;;
esac
for s in $s0; do
	case " $s1 " in *" $s "*) not_ok "the instances share no server" "$s0 / $s1" ;; esac
done
check "instance 0's rank table passes the HCCL checker" \
	"$CHECK" --npus-per-server 8 --completed --ranks 16 "$M/jobs/$SVC.0/ranktable.json"
check_eq "every server of it names its container_ip (its host IP)" "True" \
	"$(json "$M/jobs/$SVC.0/ranktable.json" 'all(s["container_ip"] == s["host_ip"] for s in d["server_list"])')"
master=$(json "$M/jobs/$SVC.0/ranktable.json" 'd["server_list"][0]["host_ip"]')
check_eq "env: RANK_TABLE_FILE, for MindIE's multi-node start" "$M/jobs/$SVC.0/ranktable.json" \
	"$(env_of $SVC.0 RANK_TABLE_FILE env)"
check_eq "and RANKTABLEFILE, which older releases read" "$M/jobs/$SVC.0/ranktable.json" \
	"$(env_of $SVC.0 RANKTABLEFILE env)"
check_eq "MASTER_IP is rank 0's server" "$master" "$(env_of $SVC.0 MASTER_IP env)"
check_eq "WORLD_SIZE the instance's NPUs" 16 "$(env_of $SVC.0 WORLD_SIZE env)"
check_eq "HCCL_DETERMINISTIC=true" true "$(env_of $SVC.0 HCCL_DETERMINISTIC env)"
check_fails "no MindSpore dynamic-cluster variable" grep -q "MS_SCHED_HOST\|MS_ROLE" "$M/jobs/$SVC.0/env"
second=${s0#* }
host2=$(json "$M/jobs/$SVC.0/ranktable.json" 'd["server_list"][1]["host_ip"]')
check_eq "a server's env: HOST_IP its own" "$host2" "$(env_of $SVC.0 HOST_IP "hosts/$second.env")"
check_eq "and MIES_CONTAINER_IP" "$host2" "$(env_of $SVC.0 MIES_CONTAINER_IP "hosts/$second.env")"
check_eq "mindie.json: multi-node on, port, 8 devices a server" "True 1025 [0, 1, 2, 3, 4, 5, 6, 7] 8" \
	"$(json "$M/jobs/$SVC.0/mindie.json" '" ".join(map(str, [d["BackendConfig"]["multiNodesInferEnabled"], d["ServerConfig"]["port"], d["BackendConfig"]["npuDeviceIds"][0], d["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]["worldSize"]]))')"
check_eq "endpoint of instance 0: its master and the port" "$master:1025" "$(cat "$M/jobs/$SVC.0/endpoint")"
check_eq "endpoints lists no instance before one is ready" "" "$(cat "$M/jobs/$SVC/endpoints")"
check "instance 0 reports ready" ready $SVC.0
check_eq "endpoints lists it" "$SVC.0 $master:1025" "$(cat "$M/jobs/$SVC/endpoints")"
check_contains "an event says so" "ready: $master:1025 answers" "$(cat "$M/jobs/$SVC.0/events")"
check "an earlier generation's report changes nothing" sh -c "echo 'unready 0' > '$M/jobs/$SVC.0/ctl'"
check "instance 1 reports ready" ready $SVC.1
check_eq "endpoints lists both instances" "$SVC.0 $master:1025|$SVC.1 $(cat "$M/jobs/$SVC.1/endpoint")" \
	"$(paste -sd'|' "$M/jobs/$SVC/endpoints")"
check "instance 1 no longer answers" sh -c "echo 'unready $(gen_of $SVC.1)' > '$M/jobs/$SVC.1/ctl'"
check_eq "endpoints drops it" "$SVC.0" "$(cut -d' ' -f1 "$M/jobs/$SVC/endpoints")"
ready $SVC.1
check_fails "the service itself reports no readiness" sh -c "echo 'ready 1' > '$M/jobs/$SVC/ctl'"
check_fails "nor does a bad line" sh -c "echo 'ready x' > '$M/jobs/$SVC.0/ctl'"

# ---- training shares the cluster ----------------------------------------------------
check "a 32-NPU training job is accepted" cp "$SRC/examples/jobs/llama70b-pretrain.yaml" "$M/jobs/"
check_eq "and runs beside the service" running "$(status_of llama70b-pretrain)"
case " $(servers_of llama70b-pretrain) " in
*infer-*) not_ok "on the training servers" "$(servers_of llama70b-pretrain)" ;;
*) ok "on the training servers" ;;
esac

# ---- the names <service>.<index> are the service's --------------------------------------
printf 'npus: 8\n' >"$W/$SVC.7.yaml"
check_fails "a job named $SVC.7 is refused" cp "$W/$SVC.7.yaml" "$M/jobs/"
check_contains "the refusal says whose name it is" "is a name of service $SVC's instances" \
	"$(tail -n 3 "$M/cluster/events")"

# ---- scale: a third instance of 16 finds no room and waits, saying why ------------------
check "scale 3" sh -c "echo 'scale 3' > '$M/jobs/$SVC/ctl'"
check_eq "a third instance waits" pending "$(status_of $SVC.2)"
check_contains "for NPUs" "needs 16 NPUs" "$(json "$M/jobs/$SVC.2/status.json" 'd["reason"]')"
check_contains "spec says replicas: 3" "replicas: 3" "$(cat "$M/jobs/$SVC/spec")"
check_eq "endpoints lists the two that run" 2 "$(wc -l <"$M/jobs/$SVC/endpoints")"
check "scale 1" sh -c "echo 'scale 1' > '$M/jobs/$SVC/ctl'"
wait_until 5 bash -c "[ \"\$(cat '$M/jobs/$SVC.1/status')\" = cancelled ]"
check_eq "the highest indexes went" "running cancelled cancelled" \
	"$(status_of $SVC.0) $(status_of $SVC.1) $(status_of $SVC.2)"
check_contains "saying why" "service $SVC scaled to 1 replica" "$(cat "$M/jobs/$SVC.2/status.json")"
check_eq "endpoints lists one" "$SVC.0" "$(cut -d' ' -f1 "$M/jobs/$SVC/endpoints")"
check_fails "scale 65 is refused" sh -c "echo 'scale 65' > '$M/jobs/$SVC/ctl'"
check_contains "with the range" "a service has 0 to 64 replicas" "$(tail -n1 "$M/jobs/$SVC/events")"
check "scale 0" sh -c "echo 'scale 0' > '$M/jobs/$SVC/ctl'"
wait_until 5 bash -c "[ \"\$(cat '$M/jobs/$SVC.0/status')\" = cancelled ]"
check_eq "it serves on with no instance" "serving cancelled" "$(status_of $SVC) $(status_of $SVC.0)"
check_eq "endpoints is empty" "" "$(cat "$M/jobs/$SVC/endpoints")"
check "scale 1 again" sh -c "echo 'scale 1' > '$M/jobs/$SVC/ctl'"
check_eq "instance 0 runs again" running "$(status_of $SVC.0)"
check_fails "scale on a training job is refused" sh -c "echo 'scale 2' > '$M/jobs/llama70b-pretrain/ctl'"
check "cancel it" sh -c "echo cancel > '$M/jobs/$SVC/ctl'"
wait_until 5 bash -c "[ \"\$(cat '$M/jobs/$SVC.0/status')\" = cancelled ]"
check_eq "the service and its instances are cancelled" "cancelled cancelled cancelled cancelled" \
	"$(status_of $SVC) $(status_of $SVC.0) $(status_of $SVC.1) $(status_of $SVC.2)"
check_contains "saying so" "cancelled with its service $SVC" "$(cat "$M/jobs/$SVC.0/status.json")"
sleep 1.5 # a tick: nothing makes them again
check_eq "and stay so" "cancelled cancelled" "$(status_of $SVC.0) $(status_of $SVC.1)"
check_eq "endpoints is empty" "" "$(cat "$M/jobs/$SVC/endpoints")"
check_eq "training runs on" running "$(status_of llama70b-pretrain)"

# ---- one-server instances: a Critical NPU moves one, the other serves on ---------------
CHAT=chat
printf 'kind: service\nreplicas: 2\nnpus: 8\nport: 8000\nserver_type: atlas800i-a2\nqueue: serving\ncommand: "exec sleep 600"\n' \
	>"$W/$CHAT.yaml"
check "a service of 2 one-server instances" cp "$W/$CHAT.yaml" "$M/jobs/"
check "scale 3" sh -c "echo 'scale 3' > '$M/jobs/$CHAT/ctl'"
check_eq "three instances run" "running running running" \
	"$(status_of $CHAT.0) $(status_of $CHAT.1) $(status_of $CHAT.2)"
for i in 0 1 2; do ready $CHAT.$i; done
check_eq "endpoints lists three" 3 "$(wc -l <"$M/jobs/$CHAT/endpoints")"
check_eq "mindie.json of a one-server instance: multi-node off" "False" \
	"$(json "$M/jobs/$CHAT.0/mindie.json" 'd["BackendConfig"]["multiNodesInferEnabled"]')"
check "scale 2" sh -c "echo 'scale 2' > '$M/jobs/$CHAT/ctl'"
wait_until 5 bash -c "[ \"\$(cat '$M/jobs/$CHAT.2/status')\" = cancelled ]"
other=$(servers_of $CHAT.1)
victim=$(servers_of $CHAT.0)
gen0=$(json "$M/jobs/$CHAT.0/status.json" 'd["generation"]')
check "a Critical NPU of instance 0 is reported" \
	sh -c "printf 'node OK\nnpu 2 Critical 0x80C98000 HBM uncorrectable ECC\n' > '$M/nodes/$victim/health'"
wait_until 5 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/jobs/$CHAT.0/status.json\"))[\"generation\"])')\" != $gen0 ]"
check_eq "instance 0 is placed again" running "$(status_of $CHAT.0)"
case " $(servers_of $CHAT.0) " in
*" $victim "*) not_ok "instance 0 left $victim" "$(servers_of $CHAT.0)" ;;
*) ok "instance 0 left $victim (now on $(servers_of $CHAT.0))" ;;
esac
check_eq "instance 1 was untouched" "running $other" "$(status_of $CHAT.1) $(servers_of $CHAT.1)"
check_eq "until the moved one answers again, endpoints lists instance 1 only" "$CHAT.1" \
	"$(cut -d' ' -f1 "$M/jobs/$CHAT/endpoints")"
ready $CHAT.0
check_eq "then both" 2 "$(wc -l <"$M/jobs/$CHAT/endpoints")"

# ---- a restart of the daemon (SIGKILL) keeps the service and its instances --------------
before=$(cat "$M/jobs/$CHAT/endpoints")
check "a disaggregated service too (its instances wait for room)" cp "$SRC/examples/jobs/llama70b-pd.yaml" "$M/jobs/"
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
it_unmount "$M"
it_start "$ASCENDFS" "$CONFIG" || exit 1
check_eq "after a SIGKILL the service serves" serving "$(status_of $CHAT)"
check_eq "with the same instances where they were" "$before" "$(cat "$M/jobs/$CHAT/endpoints")"
check_eq "an instance still knows its service" "$CHAT" "$(env_of $CHAT.1 ASCEND_SERVICE env)"
check_eq "and the disaggregated one serves, its instances restored" "serving 2" \
	"$(status_of llama70b-pd) $(cat "$M"/jobs/llama70b-pd.[01]/status | grep -c 'pending\|running')"
check "cancel it" sh -c "echo cancel > '$M/jobs/llama70b-pd/ctl'"
check "scale works after the restart" sh -c "echo 'scale 3' > '$M/jobs/$CHAT/ctl'"
check_eq "a third instance again" running "$(status_of $CHAT.2)"
check "cancel it" sh -c "echo cancel > '$M/jobs/$CHAT/ctl'"
wait_until 5 bash -c "[ \"\$(cat '$M/jobs/$CHAT.2/status')\" = cancelled ]"
check_eq "all cancelled" "cancelled cancelled cancelled cancelled" \
	"$(status_of $CHAT) $(status_of $CHAT.0) $(status_of $CHAT.1) $(status_of $CHAT.2)"

# ---- bad service specs: refused with the line and the rule --------------------------------
bad() { # bad NAME SPEC EXPECTED
	printf '%b' "$2" >"$W/$1.yaml"
	cp "$W/$1.yaml" "$M/jobs/" 2>/dev/null && not_ok "$1 refused" "accepted" && return
	check_contains "$1 refused: $3" "$3" "$(cat "$M/jobs/$1/error" 2>/dev/null; tail -n 2 "$M/cluster/events")"
}
bad svc-restarts 'npus: 8\nkind: service\nmax_restarts: 3\n' "svc-restarts.yaml:3:15: max_restarts: a service's instances are started again"
bad svc-big 'npus: 64\nkind: service\n' "svc-big.yaml:1:7: npus: 64 is more than a MindIE instance can span"
bad svc-port 'npus: 8\nkind: service\nport: 80\n' "svc-port.yaml:3:7: port: 80 is out of range; use a whole number from 1024 to 65535"
bad train-replicas 'npus: 8\nreplicas: 2\n' "train-replicas.yaml:2:11: replicas: only a service has replicas"

# ---- training and services share a queue: preemption follows the service's spec -------
# A low-priority service in the training queue fills the 3 healthy inference servers (the
# fourth has a failed NPU); an urgent training job of high priority wants 8 of their NPUs.
svc_low() { printf 'kind: service\nreplicas: 3\nnpus: 8\nserver_type: atlas800i-a2\npriority: low\n%bcommand: "exec sleep 600"\n' "$1"; }
urgent() { printf 'npus: 8\npriority: high\nserver_type: atlas800i-a2\ncommand: "exec sleep 600"\n'; }
svc_low "" >"$W/lowsvc.yaml"
urgent >"$W/urgent.yaml"
check "a low-priority service (preemptible: false, the default)" cp "$W/lowsvc.yaml" "$M/jobs/"
check_eq "fills the inference servers" "running running running" \
	"$(status_of lowsvc.0) $(status_of lowsvc.1) $(status_of lowsvc.2)"
check "an urgent training job" cp "$W/urgent.yaml" "$M/jobs/"
check_eq "waits: the service is not preempted" "pending running running running" \
	"$(status_of urgent) $(status_of lowsvc.0) $(status_of lowsvc.1) $(status_of lowsvc.2)"
check "cancel both" sh -c "echo cancel > '$M/jobs/urgent/ctl' && echo cancel > '$M/jobs/lowsvc/ctl'"
wait_until 5 bash -c "[ \"\$(cat '$M/jobs/lowsvc.2/status')\" = cancelled ]"
svc_low 'preemptible: true\n' >"$W/yieldsvc.yaml"
check "a service that may be preempted, one instance at a time" cp "$W/yieldsvc.yaml" "$M/jobs/"
check "the urgent job again" cp "$W/urgent.yaml" "$M/jobs/urgent2.yaml"
# (no agents here: the victim stops at its grace period's end, which this test does not
# wait for; the mount is stopped next)
check_eq "one instance stops for it, the others serve on" "running running stopping" \
	"$(cat "$M"/jobs/yieldsvc.[012]/status | sort | paste -sd' ')"
check_contains "the instance says who preempted it" 'preempted by job urgent2' \
	"$(cat "$M"/jobs/yieldsvc.[012]/status.json)"
check_eq "the budget is spent" "2 0" "$(json "$M/jobs/yieldsvc/status.json" '"%d %d" % (d["disruption_budget"]["available"], d["disruption_budget"]["disruptions_allowed"])')"
check "a second urgent job" cp "$W/urgent.yaml" "$M/jobs/urgent3.yaml"
check_eq "waits: no second instance is taken" "pending running running stopping" \
	"$(status_of urgent3) $(cat "$M"/jobs/yieldsvc.[012]/status | sort | paste -sd' ')"

# ---- agents: the master's agent reports an instance ready when its port answers ----------
it_stop
LO=$W/serving-loopback.yaml
sed -e 's/host_ip: 10\.0\.4\.\([0-9]\)/host_ip: 127.0.4.\1/' \
	-e 's/^  topology_aware_schedule: true$/&\n  fault_check_interval: 1\n  require_agent: true/' \
	"$CONFIG" >"$LO"
grep -q 'require_agent: true' "$LO" && grep -q 'host_ip: 127.0.4.1' "$LO" ||
	{ not_ok "derive the loopback config" "$(head -20 "$LO")"; it_finish; exit 1; }
it_start "$ASCENDFS" "$LO" --state-dir "$W/state2" || exit 1
for i in 1 2 3 4; do
	n=infer-0$i
	mkdir -p "$W/logs/$n"
	: >"$W/faults-$n"
	# the device IPs of the inventory, as hccn_tool gives them: the rank table waits for
	# them (require_agent), and serve_demo, as MindIE, for the table
	for d in 0 1 2 3 4 5 6 7; do echo "address_$d=10.41.$d.$i"; done >"$W/hccn-$n.conf"
	"$AGENT" --mount "$M" --node "$n" --fault-file "$W/faults-$n" --log-dir "$W/logs/$n" \
		--hccn-conf "$W/hccn-$n.conf" >>"$W/agent-$n.log" 2>&1 &
	AGENT_PID[$n]=$!
done
ready_servers() {
	for i in 1 2 3 4; do
		[ "$(json "$M/nodes/infer-0$i/info" 'd["state"]' 2>/dev/null)" = ready ] || return 1
	done
}
wait_until 20 ready_servers || not_ok "the agents report" "$(tail -n 3 "$W"/agent-*.log)"
# examples/serve_demo, a stand-in for MindIE Server: reads the env and rank table as
# MindIE does, and its master answers HTTP on HOST_IP:ASCEND_SERVICE_PORT; SIGUSR1 closes
# the port, SIGUSR2 opens it again
PORT=$((20000 + $$ % 20000))
# serve_yaml NAME REPLICAS PORT: a service of one-server instances running serve_demo
serve_yaml() {
	printf 'kind: service\nreplicas: %s\nnpus: 8\nport: %s\nserver_type: atlas800i-a2\ncommand: "exec %s"\n' \
		"$2" "$3" "$SERVE" >"$W/$1.yaml"
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
serve_yaml web 2 "$PORT"
t0=$(date +%s%N)
check "a service whose processes listen on its port" cp "$W/web.yaml" "$M/jobs/"
two_ready() { [ "$(wc -l <"$M/jobs/web/endpoints")" = 2 ]; }
if wait_until 20 two_ready; then
	ok "both instances are ready in $(ms_since "$t0") ms from the cp"
else
	not_ok "both instances are ready" "endpoints: $(cat "$M/jobs/web/endpoints"); $(tail -n 3 "$W"/agent-*.log); $(tail -n 4 "$W"/logs/*/web.*/g*/*.log | grep -v "^$" | tail -n 30); error: $(cat "$M/jobs/web.0/error")"
fi
w0=$(cut -d' ' -f2 <"$M/jobs/web.0/endpoint")
# a client of the endpoints, as a gateway: GET /health of every listed instance
health() { python3 -c 'import json, sys, urllib.request
for line in open(sys.argv[1]):
    name, addr = line.split()
    d = json.load(urllib.request.urlopen("http://%s/health" % addr, timeout=2))
    print(d["status"], d["instance"], d["world_size"])' "$M/jobs/web/endpoints"; }
check_eq "every listed instance answers GET /health (examples/serve_demo)" \
	"ok web.0 8|ok web.1 8" "$(health 2>&1 | paste -sd'|')"
check_contains "the master's agent said so" "job web.0 generation 1: $w0 answers; reported ready" \
	"$(cat "$W"/agent-*.log)"
pid=$(sed -n 's/.*job web\.0 generation 1 (node rank 0): started pid \([0-9]*\):.*/\1/p' "$W"/agent-*.log | head -n1)
check "its process closes the port" kill -USR1 "${pid:-0}"
one_ready() { [ "$(cut -d' ' -f1 "$M/jobs/web/endpoints")" = web.1 ]; }
if wait_until 10 one_ready; then ok "endpoints drops it"; else
	not_ok "endpoints drops it" "$(cat "$M/jobs/web/endpoints")"; fi
check_contains "an event says it is not ready" "not ready: $w0 no longer answers" \
	"$(cat "$M/jobs/web.0/events")"
check_eq "it still runs (not ready is not a failure)" "running 1" \
	"$(status_of web.0) $(gen_of web.0)"
check "the port opens again" kill -USR2 "${pid:-0}"
if wait_until 10 two_ready; then ok "endpoints lists it again"; else
	not_ok "endpoints lists it again" "$(cat "$M/jobs/web/endpoints")"; fi
# ---- a crash loop waits out its restart back-off (CrashLoopBackOff) ----------------------
printf 'kind: service\nreplicas: 1\nnpus: 8\nserver_type: atlas800i-a2\ncommand: "exit 3"\n' \
	>"$W/crashy.yaml"
check "a service whose process exits at once" cp "$W/crashy.yaml" "$M/jobs/"
sleep 6
g=$(gen_of crashy.0)
if [ "${g:-0}" -ge 3 ] && [ "${g:-99}" -le 5 ]; then
	ok "in 6 s it started $g times (back-off 0, 1, 2, 4 s), not once per exit"
else
	not_ok "in 6 s it started 3 to 5 times" "generation $g; $(tail -n 5 "$M/jobs/crashy.0/events")"
fi
check_contains "its reason says when it starts again" "back-off: the process on infer-0" \
	"$(cat "$M/jobs/crashy.0/status.json")"
check_contains "an event says so" '"backoff"' "$(cat "$M/jobs/crashy.0/events")"
check_eq "status.json has the held restart" True \
	"$(json "$M/jobs/crashy.0/status.json" 'd["restart_backoff"]["restart_at"] is not None')"
check_eq "and it never became ready" "" "$(grep crashy "$M/jobs/crashy/endpoints")"
check "cancel it" sh -c "echo cancel > '$M/jobs/crashy/ctl'"
check "cancel the service" sh -c "echo cancel > '$M/jobs/web/ctl'"
gone() { ! kill -0 "${pid:-0}" 2>/dev/null; }
if wait_until 10 gone; then ok "its processes are stopped"; else not_ok "its processes are stopped" "pid $pid"; fi

# ---- availability: 3 replicas behind examples/gateway.py through an NPU fault -----------
# A client sends GET /health through the gateway every 20 ms while one instance stops
# answering for a while, then while an NPU of another fails and that instance moves to
# the spare server. Figures: requests that failed, the fewest instances ready, the time
# from the fault to the replacement being ready.
wait_until 10 bash -c "[ \"\$(cat '$M/jobs/crashy.0/status')\" = cancelled ] && [ \"\$(cat '$M/jobs/web.1/status')\" = cancelled ]"
APORT=$((PORT + 1))
GPORT=$((PORT + 2))
serve_yaml avail 3 "$APORT"
t0=$(date +%s%N)
check "a service of 3 replicas" cp "$W/avail.yaml" "$M/jobs/"
three_ready() { [ "$(wc -l <"$M/jobs/avail/endpoints")" = 3 ]; }
if wait_until 20 three_ready; then
	ok "3 instances ready $(ms_since "$t0") ms after the cp"
else
	not_ok "3 instances ready" "$(cat "$M/jobs/avail/endpoints"); $(tail -n 3 "$W"/agent-*.log)"
fi
python3 "$SRC/examples/gateway.py" --listen "127.0.0.1:$GPORT" --timeout 5 \
	"$M/jobs/avail/endpoints" 2>"$W/gateway.log" &
GW_PID=$!
gw_up() { python3 -c 'import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1], timeout=1))
sys.exit(len(d) != 3)' "http://127.0.0.1:$GPORT/gateway/backends"; }
if wait_until 10 gw_up; then ok "the gateway follows endpoints: 3 backends"; else
	not_ok "the gateway follows endpoints" "$(cat "$W/gateway.log")"; fi
victim=$(servers_of avail.1)
vgen=$(gen_of avail.1)
python3 "$SRC/tests/integration/avail_client.py" "http://127.0.0.1:$GPORT/health" \
	"$M/jobs/avail/endpoints" "$W/avail.stop" "$W/avail.json" &
CLIENT_PID=$!
sleep 1
# an instance stops answering: until its agent's probe sees it (endpoints still lists it)
# the gateway's requests to it are refused, and each goes to the next instance
p0=$(sed -n 's/.*job avail\.0 generation 1 (node rank 0): started pid \([0-9]*\):.*/\1/p' "$W"/agent-*.log | head -n1)
check "instance 0 closes its port" kill -USR1 "${p0:-0}"
two_listed() { [ "$(wc -l <"$M/jobs/avail/endpoints")" = 2 ]; }
wait_until 10 two_listed || not_ok "endpoints drops instance 0" "$(cat "$M/jobs/avail/endpoints")"
check_contains "meanwhile the gateway sent its requests on to the next instance" \
	"avail.0 unreachable" "$(cat "$W/gateway.log")"
check "instance 0 opens its port again" kill -USR2 "${p0:-0}"
wait_until 10 three_ready || not_ok "instance 0 is ready again" "$(cat "$M/jobs/avail/endpoints")"
tf=$(date +%s%N)
printf 'npu 3 Critical 0x80C98000 HBM uncorrectable ECC\n' >"$W/faults-$victim.tmp"
mv "$W/faults-$victim.tmp" "$W/faults-$victim"
replaced() { [ "$(gen_of avail.1)" != "$vgen" ] && three_ready; }
if wait_until 20 replaced; then
	ok "instance 1 was replaced and ready $(ms_since "$tf") ms after its NPU failed (moved from $victim to $(servers_of avail.1))"
else
	not_ok "instance 1 was replaced" "gen $(gen_of avail.1); $(cat "$M/jobs/avail/endpoints"); $(tail -n 3 "$M/jobs/avail.1/events")"
fi
sleep 1
touch "$W/avail.stop"
wait "$CLIENT_PID"
a() { json "$W/avail.json" "$1"; }
check_eq "no request failed through the gateway ($(a 'd["requests"]') requests in $(a 'd["seconds"]') s; errors: $(a 'd["errors"]'))" \
	0 "$(a 'd["failed"]')"
check_eq "at least 2 instances were ready throughout (fewest: $(a 'd["min_ready"]'), below 2 for $(a 'd["ms_below_2"]') ms)" \
	True "$(a 'd["min_ready"] >= 2')"
check_eq "never none ready" 0 "$(a 'd["ms_none_ready"]')"
check_eq "every instance answered some requests" True \
	"$(a 'all(d["answered_by"].get("avail.%d" % i, 0) > 0 for i in range(3))')"
echo "# availability: $(cat "$W/avail.json")"
# ---- a drain moves the replicas one at a time, while the gateway serves ------------------
# 2 replicas (max_unavailable 1, the default) and 2 free servers: draining both servers
# that hold them moves one, then the other once the first answers again.
: >"$W/faults-$victim"
check "scale to 2" sh -c "echo 'scale 2' > '$M/jobs/avail/ctl'"
check "return the failed NPU" sh -c "echo 'clear 3' > '$M/nodes/$victim/ctl'"
two_ready() { [ "$(wc -l <"$M/jobs/avail/endpoints")" = 2 ] && [ "$(status_of avail.2)" = cancelled ]; }
wait_until 10 two_ready || not_ok "2 instances ready" "$(cat "$M/jobs/avail/endpoints")"
sa=$(servers_of avail.0)
sb=$(servers_of avail.1)
restarts() { echo "$(json "$M/jobs/avail.0/status.json" 'd["restarts"]') $(json "$M/jobs/avail.1/status.json" 'd["restarts"]')"; }
r0=$(restarts)
python3 "$SRC/tests/integration/avail_client.py" "http://127.0.0.1:$GPORT/health" \
	"$M/jobs/avail/endpoints" "$W/drain.stop" "$W/drain.json" &
CLIENT_PID=$!
sleep 1
td=$(date +%s%N)
check "drain both servers of the service" sh -c "echo 'drain $sa' > '$M/cluster/ctl' && echo 'drain $sb' > '$M/cluster/ctl'"
moved_off() { [ "$(servers_of avail.0)" != "$sa" ] && [ "$(servers_of avail.1)" != "$sb" ] &&
	[ "$(wc -l <"$M/jobs/avail/endpoints")" = 2 ]; }
if wait_until 30 moved_off; then
	ok "both instances moved and ready $(ms_since "$td") ms after the drain (now on $(servers_of avail.0), $(servers_of avail.1))"
else
	not_ok "both instances moved" "$(servers_of avail.0) $(servers_of avail.1); $(grep -h '"moved"' "$M"/jobs/avail.?/events)"
fi
touch "$W/drain.stop"
wait "$CLIENT_PID"
# the order: moved, that one ready, then the other moved
check_eq "one at a time: the second moved only once the first answered again" "moved ready moved" \
	"$(python3 -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
first = next(e for e in ev if e["kind"] == "moved" and "a drain" in e["reason"])
out = ["moved"]
for e in ev:
    if e["seq"] <= first["seq"]:
        continue
    if e["kind"] == "ready" and e["job"] == first["job"] and e["reason"].startswith("ready"):
        out.append("ready")
    elif e["kind"] == "moved" and "a drain" in e["reason"]:
        out.append("moved")
print(" ".join(out[:3]))' "$M/cluster/events")"
check_contains "the other waited for it, and said so" "instances unavailable already (max_unavailable: 1)" \
	"$(cat "$M/jobs/avail.0/events" "$M/jobs/avail.1/events")"
check_eq "a move is not a restart" "$r0" "$(restarts)"
d() { json "$W/drain.json" "$1"; }
check_eq "no request failed during the drain ($(d 'd["requests"]') requests in $(d 'd["seconds"]') s; errors: $(d 'd["errors"]'))" \
	0 "$(d 'd["failed"]')"
check_eq "an instance was ready throughout (1 of 2 for $(d 'd["ms_below_2"]') ms)" 0 "$(d 'd["ms_none_ready"]')"
echo "# drain: $(cat "$W/drain.json")"
drained() { [ "$(json "$M/nodes/$sa/info" 'd["state"]')" = cordoned ] && [ "$(json "$M/nodes/$sb/info" 'd["state"]')" = cordoned ]; }
if wait_until 10 drained; then ok "both servers are drained (cordoned, empty)"; else
	not_ok "both servers are drained" "$(cat "$M/nodes/$sa/info")"; fi
check "uncordon them" sh -c "echo 'uncordon $sa' > '$M/cluster/ctl' && echo 'uncordon $sb' > '$M/cluster/ctl'"
kill "$GW_PID" 2>/dev/null
wait "$GW_PID" 2>/dev/null
check "cancel it" sh -c "echo cancel > '$M/jobs/avail/ctl'"

# ---- the disaggregated layout: the global rank table follows a moved instance ----------
# MindIE Motor (prefill-decode disaggregation): one prefill and one decode instance, the
# controller and coordinator on infer-01; inotifywait stands in for the controller.
wait_until 10 bash -c "[ \"\$(cat '$M/jobs/avail.1/status')\" = cancelled ]"
# ascendfs runs the controller (a stand-in: it writes what MindIE MS's controller reads,
# then waits); the coordinator is the site's (a server name alone).
ROLE_CMD="echo \$ASCEND_JOB_ID \$ASCEND_JOB_GENERATION \$ASCEND_SERVER_NAME \$POD_IP \$GLOBAL_RANK_TABLE_FILE_PATH \$\$ > $W/controller.\$ASCEND_JOB_GENERATION; exec sleep 600"
printf 'kind: service\nnpus: 8\nport: %s\nserver_type: atlas800i-a2\ncommand: "exec %s"\ndisaggregated:\n  prefill: 1\n  decode: 1\n  controller: {server: infer-02, command: "%s"}\n  coordinator: infer-01\n' \
	"$((PORT + 3))" "$SERVE" "$ROLE_CMD" >"$W/pd.yaml"
check "a disaggregated service" cp "$W/pd.yaml" "$M/jobs/"
G=$M/jobs/pd/global_ranktable.json
if wait_until 10 test -s "$W/controller.1"; then ok "its controller runs, started by infer-02's agent"; else
	not_ok "its controller runs" "$(cat "$M/nodes/infer-02/jobs"; tail -n 5 "$W/agent-infer-02.log")"; fi
read -r c_id c_gen c_server c_ip c_table c_pid <"$W/controller.1"
check_eq "with its env: run, generation, server, POD_IP, the global rank table" \
	"pd.controller 1 infer-02 127.0.4.2 $G" "$c_id $c_gen $c_server $c_ip $c_table"
check_contains "infer-02's listing has it, no NPUs" "pd.controller 1 controller 0 0 0 " \
	"$(cat "$M/nodes/infer-02/jobs")"
check_fails "the coordinator (a server name alone) is the site's to run" \
	grep -q coordinator "$M/nodes/infer-01/jobs"
check_eq "status.json: the controller runs, the coordinator is not run by ascendfs" \
	"running 1 False" \
	"$(json "$M/jobs/pd/status.json" '"%s %s %s" % (d["roles"]["controller"]["state"], d["roles"]["controller"]["generation"], d["roles"]["coordinator"]["run_by_ascendfs"])')"
t0=$(date +%s%N)
check "the controller's process dies" kill -KILL "$c_pid"
if wait_until 10 test -s "$W/controller.2"; then
	ok "it runs again as generation 2 ($((($(date +%s%N) - t0) / 1000000)) ms after the kill)"; else
	not_ok "it runs again as generation 2" "$(cat "$M/jobs/pd/events"; tail -n 5 "$W/agent-infer-02.log")"; fi
check_contains "an event says how it ended and that it started again" \
	"controller pd.controller generation 2 on infer-02: generation 1 ended with status 137" \
	"$(cat "$M/jobs/pd/events")"
check_eq "status.json counts the restart and the status" "2 1 137" \
	"$(json "$M/jobs/pd/status.json" '"%s %s %s" % (d["roles"]["controller"]["generation"], d["roles"]["controller"]["restarts"], d["roles"]["controller"]["last_exit_status"])')"
check_fails "the first process is gone" kill -0 "$c_pid"
check_eq "nodes/infer-02/info names the role it runs" "['pd.controller']" \
	"$(json "$M/nodes/infer-02/info" 'd["roles"]')"
# the daemon restarts, and the controller's process ends while it is down: its agent
# reports the end once the daemon is back, and the controller runs again
read -r _ _ _ _ _ c_pid <"$W/controller.2"
# as `systemctl restart ascendfs` stops it: SIGTERM (the agents keep using the mount, so
# a fusermount3 -u of ours could meet one of their opens and be refused)
kill -TERM "$IT_PID"
if wait_until 30 bash -c "! kill -0 $IT_PID"; then
	wait "$IT_PID"
	check_eq "the daemon exits 0 on SIGTERM, agents running" 0 "$?"
else
	not_ok "the daemon exits on SIGTERM" "$(tail -n 3 "$IT_LOG")"
fi
IT_PID=""
check_fails "and its mount is gone" is_mounted "$M"
check "the controller's process ends while the daemon is down" kill -KILL "$c_pid"
sleep 1
it_start "$ASCENDFS" "$LO" --state-dir "$W/state2" || exit 1
if wait_until 20 test -s "$W/controller.3"; then ok "after the restart it runs again as generation 3"; else
	not_ok "it runs again after the restart" "$(cat "$M/nodes/infer-02/jobs"; tail -n 5 "$W/agent-infer-02.log")"; fi
# the table in one line: status, then group:role:servers; FILE, or stdin
table_line() { python3 -c 'import json, sys
t = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
print(t["status"], " ".join("%s:%s:%s" % (g["group_id"], g.get("role", "-"), ",".join(s["server_ip"] for s in g["server_list"])) for g in t["server_group_list"]))' "$@"; }
groups() { table_line "$G"; }
pd_listed() { case "$(groups)" in completed*2:prefill:*3:decode:*) return 0 ;; esac; return 1; }
if wait_until 20 pd_listed; then ok "its global rank table lists both instances: $(groups)"; else
	not_ok "its global rank table lists both instances" "$(groups); $(tail -n 3 "$M/jobs/pd.0/events")"; fi
check_eq "each instance knows its role" "prefill decode" \
	"$(env_of pd.0 ASCEND_SERVICE_ROLE env) $(env_of pd.1 ASCEND_SERVICE_ROLE env)"
check_eq "and where the table is" "$G" "$(env_of pd.0 GLOBAL_RANK_TABLE_FILE_PATH env)"
check_fails "it is not scaled at run time yet" sh -c "echo 'scale 3' > '$M/jobs/pd/ctl'"
inotifywait -q -m -e modify --format '%e' "$G" >"$W/pd.inotify" 2>/dev/null &
INW_PID=$!
sleep 0.5
before=$(groups)
# a reader that opened the table before the move keeps what it opened
exec 9<"$G"
pv=$(servers_of pd.0)
printf 'npu 5 Critical 0x80C98000 HBM uncorrectable ECC\n' >"$W/faults-$pv.tmp"
mv "$W/faults-$pv.tmp" "$W/faults-$pv"
pd_moved() { [ "$(servers_of pd.0)" != "$pv" ] && pd_listed && [ "$(groups)" != "$before" ]; }
if wait_until 20 pd_moved; then ok "after an NPU fault the table lists the prefill instance on $(servers_of pd.0): $(groups)"; else
	not_ok "the table follows the moved instance" "$(groups); was $before"; fi
sleep 0.5
kill "$INW_PID" 2>/dev/null
wait "$INW_PID" 2>/dev/null
check_contains "inotify woke its watcher (IN_MODIFY)" MODIFY "$(cat "$W/pd.inotify")"
check_eq "the earlier open still reads the table as it was then" "$before" "$(table_line <&9)"
exec 9<&-
: >"$W/faults-$pv"
read -r _ _ _ _ _ c_pid <"$W/controller.3"
check "cancel it" sh -c "echo cancel > '$M/jobs/pd/ctl'"
if wait_until 10 bash -c "! kill -0 $c_pid"; then ok "the cancel stopped its controller"; else
	not_ok "the cancel stopped its controller" "$(cat "$M/nodes/infer-02/jobs")"; fi
agents_cleanup

it_stop
it_finish
