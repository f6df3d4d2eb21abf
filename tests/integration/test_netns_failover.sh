#!/usr/bin/env bash
# Failover in a real network (issue 21): two heads, two compute servers and a 3-member
# etcd cluster, each in network namespaces of their own on one Linux bridge (a "switch"
# namespace), on 10.232.0.0/24 only. Each head has its own mount namespace too, where it
# runs ascendfs at the same path, sshd (the same host key on both heads; the agents' key
# may run sftp-server only) and a keepalived-like loop that holds the floating address
# 10.232.0.100 while `grep -qx 'role: leader' $M/cluster/leader` holds there (the
# README's vrrp_script). The compute servers mount root@10.232.0.100:$M with sshfs and the
# README's fstab options, each in its own mount and UTS namespace, and run ascend-agent
# through that mount; a 16-NPU train_demo job runs on both.
#
# Rounds: a client (crash_lib.sh) submits, cancels, removes, reports faults and sets a
# quota through the active head's own mount while that head is killed (SIGKILL) at a
# random moment; the standby takes over, the floating address follows it, the compute
# servers' sshfs reconnects to the new head, every acknowledged operation is there
# (verify()), the job keeps its generation and processes, and the killed head comes
# back as the standby. Once the active head's link is cut instead (ip link set down): cut
# off from etcd's quorum and from the compute servers, it must stop acting once its lease
# lapses and exit 1 ("this head lost the leadership"), and drop the address.
#
# Every namespace, mount and process of the test goes on every path. Exit 77 only when
# the kernel refuses a network namespace; a missing program is a failure.
# Usage: test_netns_failover.sh ASCENDFS ASCEND_AGENT TRAIN_DEMO CHECK_RANKTABLE SRCDIR
#        (FAILOVER_ROUNDS=N kill rounds, default 3; the partition round comes after;
#        FAILOVER_HEARTBEAT_TIMEOUT=S the cluster's heartbeat_timeout, default 15)
#
# Why heartbeat_timeout 15 s (the example cluster's) and not test_netns.sh's 4 s: the new
# leader gives each server a heartbeat_timeout from its takeover, and the compute
# servers' sshfs reconnects only when its TCP connection to the floating address fails.
# That connection was black-holed from the failure (or the cut) until the address moved,
# so TCP's retransmission backoff has grown by then: the reset from the new head came 3.7
# to 8.9 s after the address moved (gratuitous ARP seen at once). With 4 s (and with 8 s
# on a link cut) the new leader declared both servers unreachable first, and the job was
# requeued, its processes stopped by their agents.
set -u
ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
TRAIN=$(realpath "$3")
CHECK=$(realpath "$4")
SRC=$(realpath "$5")
ROUNDS=${FAILOVER_ROUNDS:-3}
LEASE=2
HB=${FAILOVER_HEARTBEAT_TIMEOUT:-15}
. "$SRC/tests/integration/lib.sh"

it_need_ssh_net ip sshd ssh-keygen sshfs unshare nsenter setsid fusermount3 python3 etcd etcdctl timeout

it_setup
M=$IT_MNT # the same path on both heads (each in its own mount namespace) and on c1, c2
W=$IT_WORK
ACK=$W/ack.log
mkdir -p "$W/spec"
: >"$ACK"
P=nf$$ # prefix of this run's namespaces and links (interface names: at most 15 bytes)
NS_SW=$P-sw
declare -A NS=([1]=$P-h1 [2]=$P-h2 [c1]=$P-c1 [c2]=$P-c2)
declare -A ADDR=([1]=10.232.0.1 [2]=10.232.0.2 [c1]=10.232.0.21 [c2]=10.232.0.22)
VIP=10.232.0.100
if ! ip netns add "$NS_SW" 2>"$W/netns.err"; then
	echo "SKIP: the kernel does not let this test create a network namespace" \
		"(ip netns add: $(cat "$W/netns.err")); it needs CAP_SYS_ADMIN and CONFIG_NET_NS"
	exit 77
fi

declare -A HOLDER=() HEAD_PID=() COMPUTE_PID=()
CLIENT=""
net_cleanup() {
	set +e
	local n pid
	[ -n "$CLIENT" ] && kill -KILL -- "-$CLIENT" 2>/dev/null
	for n in "${!COMPUTE_PID[@]}"; do kill -TERM "${COMPUTE_PID[$n]}" 2>/dev/null; done
	for n in "${!COMPUTE_PID[@]}"; do
		pid=${COMPUTE_PID[$n]}
		wait_until 15 bash -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null
	done
	it_kill_started "$W"/agent-*.log # should an agent have died without stopping them
	for n in "${!HEAD_PID[@]}"; do kill -KILL "${HEAD_PID[$n]}" 2>/dev/null; done
	if [ "$IT_FAIL" -gt 0 ]; then # the evidence, before the work dir goes
		for f in "$W"/h[12].log "$W"/agent-*.log "$W"/sshfs-*.log "$W"/ssh/sshd-*.log "$W"/vip-*.log; do
			[ -f "$f" ] && echo "# ---- $f (last 15 lines)" && tail -n 15 "$f" | sed 's/^/#   /'
		done
		[ -n "${NETNS_KEEP:-}" ] && cp -r "$W" "$NETNS_KEEP" 2>/dev/null
	fi
	for n in "${NS[@]}" "$NS_SW"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	done
	for n in "${NS[@]}" "$NS_SW"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do [ -z "$(ip netns pids "$n" 2>/dev/null)" ] && break; sleep 0.2; done
		ip netns del "$n" 2>/dev/null
	done
	it_cleanup
}
trap net_cleanup EXIT

# ---- the network: a bridge in the switch namespace, a veth to each other namespace ---
# switch side $P-sX (on the bridge), node side $P-X; etcd's members on the bridge itself
BR=$P-br
net_ok=true
ip -n "$NS_SW" link add "$BR" type bridge && ip -n "$NS_SW" link set "$BR" up &&
	ip -n "$NS_SW" link set lo up || net_ok=false
for a in 11 12 13; do ip -n "$NS_SW" addr add "10.232.0.$a/24" dev "$BR" || net_ok=false; done
for x in 1 2 c1 c2; do
	ip netns add "${NS[$x]}" &&
		ip -n "$NS_SW" link add "$P-s$x" type veth peer name "$P-$x" netns "${NS[$x]}" &&
		ip -n "$NS_SW" link set "$P-s$x" master "$BR" && ip -n "$NS_SW" link set "$P-s$x" up &&
		ip -n "${NS[$x]}" addr add "${ADDR[$x]}/24" dev "$P-$x" &&
		ip -n "${NS[$x]}" link set "$P-$x" up && ip -n "${NS[$x]}" link set lo up || net_ok=false
done
if $net_ok; then ok "five namespaces on one bridge"; else
	not_ok "five namespaces on one bridge"
	exit 1
fi
tcp_open() { timeout 3 ip netns exec "$1" bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; } # NS ADDR PORT
check_eq "the host's own namespace holds none of the test's addresses or links" "" \
	"$(ip -o addr show | grep -e '10\.232\.' -e "$P-" || true)"

# ---- etcd: three members on the switch, so that a head cut off loses the quorum -----
# shellcheck disable=SC2034 # read by it_etcd_start (lib.sh)
IT_ETCD_ADDRS="10.232.0.11 10.232.0.12 10.232.0.13" IT_ETCD_NETNS=$NS_SW
if it_etcd_start 3; then ok "a 3-member etcd cluster runs on the switch"; else
	not_ok "a 3-member etcd cluster runs on the switch" "$(tail -n 3 "$W"/etcd-*.log)"
	exit 1
fi
check "a head's namespace reaches every etcd member" \
	bash -c "for a in 11 12 13; do timeout 3 ip netns exec '${NS[1]}' bash -c \"exec 3<>/dev/tcp/10.232.0.\$a/2379\" || exit 1; done"

# ---- configuration: the example cluster (test_netns.sh's changes) on etcd --------------
CONFIG=$W/cluster.yaml
{
	sed -e 's/^  fault_check_interval: 5 .*/  fault_check_interval: 1/' \
		-e 's/^  enable_dynamic_network: true .*/  enable_dynamic_network: false/' \
		-e "s/^  heartbeat_timeout: 15 .*/  heartbeat_timeout: $HB\n  stop_grace_period: 2/" \
		-e 's/^  require_agent: false .*/  require_agent: true/' \
		"$SRC/examples/ascend_cluster.yaml"
	printf 'state:\n  backend: etcd\n  etcd_servers: [%s]\n' "$IT_ETCD_ENDPOINTS"
	printf '  leader_lease_duration: %ss\n' "$LEASE"
} >"$CONFIG"
grep -q "heartbeat_timeout: $HB\$" "$CONFIG" && grep -q 'require_agent: true$' "$CONFIG" &&
	grep -q 'enable_dynamic_network: false$' "$CONFIG" ||
	{ echo "could not derive the test config"; exit 1; }

# ---- ssh: one host key for both heads; the agents' key runs sftp-server only ----------
mkdir -p "$W/ssh" /run/sshd
ssh-keygen -q -t ed25519 -N '' -C "test heads" -f "$W/ssh/host_ed25519" </dev/null &&
	ssh-keygen -q -t ed25519 -N '' -C "ascend agents" -f "$W/ssh/id_ed25519" </dev/null ||
	exit 1
echo "restrict,command=\"$SFTP_SERVER\" $(cat "$W/ssh/id_ed25519.pub")" >"$W/ssh/authorized_keys"
echo "$VIP $(cut -d' ' -f1,2 "$W/ssh/host_ed25519.pub")" >"$W/ssh/known_hosts"
for h in 1 2; do
	cat >"$W/ssh/sshd_config-h$h" <<EOF
ListenAddress 0.0.0.0
HostKey $W/ssh/host_ed25519
PidFile $W/ssh/sshd-h$h.pid
AuthorizedKeysFile $W/ssh/authorized_keys
PermitRootLogin forced-commands-only
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp $SFTP_SERVER
EOF
	check "head $h: sshd accepts its configuration" "$SSHD" -t -f "$W/ssh/sshd_config-h$h"
done

# ---- a head's holder: its network, mount and UTS namespaces, sshd, the address loop ---
cat >"$W/head.sh" <<'EOF'
#!/bin/bash
# head.sh NAME IFACE MOUNT WORK SSHD VIP: in the head's own network, mount and UTS
# namespaces: sshd (sharing this mount namespace, so that it serves the head's ascendfs
# mount, a restarted daemon's too), then a keepalived-like loop: every 0.2 s the floating
# address is on IFACE exactly when this namespace's cluster/leader says role: leader; when
# it takes the address it sends gratuitous ARPs (as keepalived does; arping -U, written in
# python3 since no arping is installed), so that the compute servers' next packet to it
# reaches this head.
name=$1 ifc=$2 mnt=$3 work=$4 sshd=$5 vip=$6
hostname "$name"
# this mount namespace began as a copy of the host's: copies of other daemons' mounts
# would keep those daemons alive after their own unmount
awk '$3 == "fuse.ascendfs" { print $2 }' /proc/self/mounts | sort -r |
	while read -r m; do umount -l "$(printf '%b' "$m")" 2>/dev/null; done
"$sshd" -f "$work/ssh/sshd_config-$name" -E "$work/ssh/sshd-$name.log"
trap 'exit 0' TERM
has() { ip -o addr show dev "$ifc" | grep -q " $vip/"; }
garp() { # three gratuitous ARP requests for $vip from $ifc's MAC
	python3 - "$ifc" "$vip" <<'PY'
import socket, sys, time
ifc, ip = sys.argv[1], socket.inet_aton(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifc, 0))
mac = s.getsockname()[4]
frame = (b"\xff" * 6 + mac + b"\x08\x06" + b"\x00\x01\x08\x00\x06\x04\x00\x01" +
         mac + ip + b"\x00" * 6 + ip)
for _ in range(3):
    s.send(frame)
    time.sleep(0.05)
PY
}
while :; do
	if timeout 2 grep -qx 'role: leader' "$mnt/cluster/leader" 2>/dev/null; then
		has || { ip addr add "$vip/24" dev "$ifc" && echo "$(date +%s%3N) add" >>"$work/vip-$name.log" &&
			garp; }
	elif has; then
		ip addr del "$vip/24" dev "$ifc" && echo "$(date +%s%3N) del" >>"$work/vip-$name.log"
	fi
	sleep 0.2
done
EOF
for h in 1 2; do
	nsenter --net="/run/netns/${NS[$h]}" unshare --mount --propagation private --uts \
		bash "$W/head.sh" "h$h" "$P-$h" "$M" "$W" "$SSHD" "$VIP" &
	HOLDER[$h]=$!
done
for h in 1 2; do
	check "head $h: sshd runs in its namespaces" wait_until 10 test -s "$W/ssh/sshd-h$h.pid"
done
on() { local h=$1; shift; nsenter -t "${HOLDER[$h]}" -m "$@"; } # on HEAD CMD: in its mounts
answers_on() { on "$1" stat --cached=never -c %F "$M/$2" >/dev/null 2>&1; }
head_start() { # head_start HEAD: ascendfs in the head's namespaces; HEAD_PID[HEAD]
	local h=$1
	nsenter -t "${HOLDER[$h]}" -m -n -u "$ASCENDFS" -f -c "$CONFIG" --state-dir "$W/state-h$h" \
		"$M" >>"$W/h$h.log" 2>&1 &
	HEAD_PID[$h]=$!
	IT_OTHER_PIDS="$IT_OTHER_PIDS $!"
	it_exec_wait "$!"
}
vip_on() { ip -n "${NS[$1]}" -o addr show | grep -q " $VIP/"; }
vip_only_on() { local o=$((3 - $1)); vip_on "$1" && ! vip_on "$o"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

head_start 1
check "head 1 mounts" wait_until 20 answers_on 1 jobs
head_start 2
check "head 2 mounts" wait_until 20 answers_on 2 jobs
leader_of() { on "$1" cat "$M/cluster/leader" 2>/dev/null; }
check "head 1 leads (cluster/leader: role: leader)" wait_until 10 on 1 grep -qx 'role: leader' "$M/cluster/leader"
check "head 2 stands by, naming the leader" \
	wait_until 10 grep -q "standing by: h1 pid ${HEAD_PID[1]} leads" "$W/h2.log"
check_contains "head 2's cluster/leader says role: standby" "role: standby" "$(leader_of 2)"
check_fails "and not role: leader" on 2 grep -qx 'role: leader' "$M/cluster/leader"
check "the floating address is on head 1 only" wait_until 5 vip_only_on 1
ACTIVE=1 STANDBY=2

# ---- compute servers: own mount and UTS namespaces, sshfs to the floating address ------
FSTAB_OPTS=$(awk '$1 == "root@HEAD:/ascend" && $3 == "fuse.sshfs" { print $4; exit }' "$SRC/README.md")
check_contains "the README has the fstab line of the compute mounts" "reconnect" "$FSTAB_OPTS"
SSHFS_OPTS=$(echo "$FSTAB_OPTS" | sed "s#IdentityFile=[^,]*#IdentityFile=$W/ssh/id_ed25519#" |
	tr ',' '\n' | grep -v -e '^_netdev$' -e '^x-systemd\.' | paste -sd,)
SSHFS_OPTS="$SSHFS_OPTS,UserKnownHostsFile=$W/ssh/known_hosts,StrictHostKeyChecking=yes"
mkdir -p "$W/faults" "$W/logs"
for c in c1 c2; do
	node=a2-node-0${c#c}
	for d in 0 1 2 3 4 5 6 7; do echo "address_$d=10.20.$d.${c#c}"; done >"$W/hccn-$node.conf"
	nsenter --net="/run/netns/${NS[$c]}" unshare --mount --propagation private --uts \
		bash "$SRC/tests/integration/netns_compute.sh" "$node" "$VIP" "$M" "$W" "$AGENT" \
		"$SSHFS_OPTS" sshfs &
	COMPUTE_PID[$node]=$!
done

json_on() { # json_on HEAD FILE EXPR: EXPR of the JSON file $M/FILE read on HEAD
	on "$1" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$M/$2" "$3" 2>/dev/null
}
state_of() { json_on "$ACTIVE" "nodes/$1/info" 'd["state"]'; }
age_of() { json_on "$ACTIVE" "nodes/$1/info" 'd["heartbeat_age_sec"]'; }
gen_of() { json_on "$ACTIVE" "jobs/$1/status.json" 'd["generation"]'; }
status_of() { on "$ACTIVE" cat "$M/jobs/$1/status" 2>/dev/null; }
servers_of() { json_on "$ACTIVE" "jobs/$1/status.json" '" ".join(p["server"] for p in d["placement"])'; }
both_ready() { [ "$(state_of a2-node-01)" = ready ] && [ "$(state_of a2-node-02)" = ready ]; }
fresh() { # both ready, each reported in the last 2 s
	local n a
	for n in a2-node-01 a2-node-02; do
		[ "$(state_of $n)" = ready ] || return 1
		a=$(age_of $n)
		python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 2 else 1)' "${a:-99}" || return 1
	done
}
accepted_from() { grep -c "Accepted publickey for root from $2 " "$W/ssh/sshd-h$1.log" 2>/dev/null; }
first_report_after() { # T0_MS NODE: ms from T0 to the agent's first "report written again" after it
	python3 -c '
import sys, datetime as d
t0 = int(sys.argv[1])
for line in open(sys.argv[2]):
    if "report written again" in line:
        t = d.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
        ms = int(t.replace(tzinfo=d.timezone.utc).timestamp() * 1000)
        if ms > t0:
            print(ms - t0)
            break
else:
    print("none")' "$1" "$W/agent-$2.log"
}
reconnected() { [ "$(accepted_from "$1" "${ADDR[$2]}")" -gt "$3" ]; } # HEAD COMPUTE SEEN
mac_of() { ip -n "${NS[$1]}" -o link show "$P-$1" | sed -n 's#.*link/ether \([0-9a-f:]*\).*#\1#p'; }
mac_seen() { ip -n "${NS[$1]}" neigh show "$VIP" | grep -q "lladdr $(mac_of "$2") "; } # COMPUTE HEAD

if wait_until 30 both_ready; then ok "both agents report through sshfs: their servers are ready"; else
	not_ok "both agents report through sshfs: their servers are ready" \
		"$(tail -n3 "$W"/agent-*.log "$W"/sshfs-*.log)"
	exit 1
fi
check "through head 1's sshd (c1)" test "$(accepted_from 1 "${ADDR[c1]}")" -ge 1
check "through head 1's sshd (c2)" test "$(accepted_from 1 "${ADDR[c2]}")" -ge 1
check_eq "a server without an agent stays unknown" unknown "$(state_of a2-node-03)"

# ---- a 16-NPU job on both servers -------------------------------------------------------
log_of() { echo "$W/logs/$3/$1/g$2/node-$3.log"; } # log_of JOB GEN SERVER
all_started() { # all_started JOB GEN SERVERS...
	local j=$1 g=$2 s
	shift 2
	for s in "$@"; do grep -q "rank table .*status completed" "$(log_of "$j" "$g" "$s")" 2>/dev/null || return 1; done
}
started_pids() { sed -n 's/.*: started pid \([0-9]*\):.*/\1/p' "$W"/agent-*.log | sort -n | tr '\n' ' '; }
# priority 1000 (root's): none of the client's jobs (at most 900) preempts it
printf 'name: tr\nnpus: 16\npriority: 1000\ncommand: "exec %s --steps 1000000 --step-ms 20 --ckpt-every 0"\n' \
	"$TRAIN" >"$W/tr.yaml"
echo "begin submit tr" >>"$ACK" # verify() judges it as the client's submissions
if on 1 cp "$W/tr.yaml" "$M/jobs/tr.yaml"; then
	echo "ack submit tr" >>"$ACK"
	ok "the 16-NPU job is accepted by the leader"
else
	not_ok "the 16-NPU job is accepted by the leader"
fi
check_eq "it is placed on a2-node-01 and a2-node-02" "a2-node-01 a2-node-02" "$(servers_of tr)"
check "train_demo runs on both servers, started through sshfs" \
	wait_until 20 all_started tr 1 a2-node-01 a2-node-02
TR_GEN=$(gen_of tr)
TR_PIDS=$(started_pids)
check_eq "generation 1" 1 "$TR_GEN"
check_contains "its processes" " " "$TR_PIDS"
echo "# job tr: generation $TR_GEN, processes $TR_PIDS"

# ---- the client through the active head's mount ----------------------------------------
export M ACK CHECK IT_WORK
CLIENT_FAULT_NODES=$(printf "a2-node-%02d " $(seq 3 16)) # not tr's servers
export CLIENT_FAULT_NODES
client_start() { # client_start HEAD ROUND: in HEAD's mount namespace, its own session
	setsid nsenter -t "${HOLDER[$1]}" -m bash -c '. "$0"; client "$1"' \
		"$SRC/tests/integration/crash_lib.sh" "$2" &
	CLIENT=$!
}
client_stop() {
	[ -n "$CLIENT" ] || return 0
	kill -KILL -- "-$CLIENT" 2>/dev/null
	wait "$CLIENT" 2>/dev/null
	CLIENT=""
}
verify_on() { on "$1" bash -c '. "$0"; verify' "$SRC/tests/integration/crash_lib.sh"; }

# until_accepts LIMIT SINCE HEAD: a submission through HEAD's mount is accepted within
# LIMIT s: 0, and TOOK_MS since SINCE (ms). Logged as the client logs (verify() judges it)
until_accepts() {
	local limit=$1 since=$2 h=$3 deadline
	deadline=$(($(now_ms) + limit * 1000))
	printf 'npus: 1\n' >"$W/spec/probe.yaml"
	while [ "$(now_ms)" -lt "$deadline" ]; do
		if answers_on "$h" jobs; then
			echo "begin submit probe-$since" >>"$ACK"
			if on "$h" cp "$W/spec/probe.yaml" "$M/jobs/probe-$since.yaml" 2>/dev/null; then
				echo "ack submit probe-$since" >>"$ACK"
				TOOK_MS=$(($(now_ms) - since))
				return 0
			fi
			echo "fail submit probe-$since" >>"$ACK"
		fi
		sleep 0.02
	done
	return 1
}

# after_takeover ROUND T0: the checks every takeover passes (the new leader is ACTIVE)
after_takeover() {
	local r=$1 t0=$2 out alive p c1 c2 t_vip
	if out=$(verify_on "$ACTIVE"); then
		ok "round $r: the new leader holds every acknowledged operation (${out##*checked } checked)"
	else
		not_ok "round $r: the new leader holds every acknowledged operation" "$out"
	fi
	check_contains "round $r: cluster/leader names the new leader" \
		"leader: h$ACTIVE pid ${HEAD_PID[$ACTIVE]}" "$(leader_of "$ACTIVE")"
	check "round $r: with role: leader" on "$ACTIVE" grep -qx 'role: leader' "$M/cluster/leader"
	if wait_until 10 vip_only_on "$ACTIVE"; then
		t_vip=$(tail -n 1 "$W/vip-h$ACTIVE.log" | cut -d' ' -f1)
		ok "round $r: the floating address moved to head $ACTIVE ($((t_vip - t0)) ms after the failure)"
	else
		not_ok "round $r: the floating address moved to head $ACTIVE" \
			"$(ip -n "${NS[1]}" -o addr; ip -n "${NS[2]}" -o addr)"
	fi
	# the new head's gratuitous ARP reached the compute servers
	check "round $r: c1's neighbour entry for the floating address names the new head" \
		wait_until 5 mac_seen c1 "$ACTIVE"
	check "round $r: c2's too" wait_until 5 mac_seen c2 "$ACTIVE"
	if wait_until 30 reconnected "$ACTIVE" c1 "${C1_SEEN[$ACTIVE]:-0}"; then
		ok "round $r: c1's sshfs reconnects to the new head ($(($(now_ms) - t0)) ms after the failure)"
	else
		not_ok "round $r: c1's sshfs reconnects to the new head"
	fi
	if wait_until 30 reconnected "$ACTIVE" c2 "${C2_SEEN[$ACTIVE]:-0}"; then
		ok "round $r: c2's sshfs reconnects to the new head ($(($(now_ms) - t0)) ms after the failure)"
	else
		not_ok "round $r: c2's sshfs reconnects to the new head"
	fi
	# past the heartbeat timeout from the takeover: a server whose agent did not reach
	# the new leader would be unreachable by now, and the job would have recovered
	while [ $(($(now_ms) - t0)) -lt $(((LEASE + HB + 2) * 1000)) ]; do sleep 0.2; done
	if wait_until 15 fresh; then
		ok "round $r: both agents report to the new leader (servers ready)"
	else
		not_ok "round $r: both agents report to the new leader (servers ready)" \
			"$(state_of a2-node-01) $(age_of a2-node-01) / $(state_of a2-node-02) $(age_of a2-node-02)" \
			"$(tail -n 3 "$W"/agent-*.log "$W"/sshfs-*.log)"
	fi
	echo "# round $r: after the failure: address moved +$((${t_vip:-0} - t0)) ms;" \
		"agents' first report after it: $(first_report_after "$t0" a2-node-01) ms (a2-node-01)," \
		"$(first_report_after "$t0" a2-node-02) ms (a2-node-02)"
	check_eq "round $r: the job still runs" running "$(status_of tr)"
	check_eq "round $r: at its generation" "$TR_GEN" "$(gen_of tr)"
	alive=""
	for p in $TR_PIDS; do kill -0 "$p" 2>/dev/null && alive="$alive$p "; done
	check_eq "round $r: with the same processes, alive" "$TR_PIDS" "$alive"
	check_eq "round $r: and no process started since" "$TR_PIDS" "$(started_pids)"
	C1_SEEN[$ACTIVE]=$(accepted_from "$ACTIVE" "${ADDR[c1]}")
	C2_SEEN[$ACTIVE]=$(accepted_from "$ACTIVE" "${ADDR[c2]}")
}
declare -A C1_SEEN=([1]=$(accepted_from 1 "${ADDR[c1]}") [2]=0) C2_SEEN=([1]=$(accepted_from 1 "${ADDR[c2]}") [2]=0)

times=()
kinds=()
for round in $(seq $((ROUNDS + 1))); do
	A=$ACTIVE S=$STANDBY
	partition=false
	[ "$round" = $((ROUNDS + 1)) ] && partition=true
	client_start "$A" "$round"
	sleep "$((RANDOM % 2)).$(printf '%03d' $((RANDOM % 1000)))"
	sleep 0.2
	t0=$(now_ms)
	if $partition; then
		ip -n "${NS[$A]}" link set "$P-$A" down
		kinds+=("cut")
	else
		kill -KILL "${HEAD_PID[$A]}"
		# the client may wait on the dead head's mount: a FUSE wait ends with SIGKILL
		client_stop
		kinds+=("kill")
	fi
	if ! until_accepts $((LEASE + 15)) "$t0" "$S"; then
		not_ok "round $round: the standby takes over and accepts a submission within $((LEASE + 15)) s" \
			"$(tail -5 "$W/h$S.log")"
		break
	fi
	ok "round $round ($(${partition} && echo cut || echo kill)): head $S took over; a submission accepted after $TOOK_MS ms"
	times+=("$TOOK_MS")
	ACTIVE=$S STANDBY=$A
	if $partition; then
		# the cut-off head stops by itself once its lease lapses; the client on its
		# mount meanwhile had nothing acknowledged that the new leader lacks
		if wait_until 20 bash -c "! kill -0 ${HEAD_PID[$A]}"; then
			wait "${HEAD_PID[$A]}"
			st=$?
		else
			st="still running 20 s after the cut"
		fi
		client_stop
	fi
	after_takeover "$round" "$t0"
	if $partition; then
		ip -n "${NS[$A]}" link set "$P-$A" up
		check_eq "round $round: the deposed head exits with status 1" 1 "$st"
		if [ "$st" != 1 ] && wait_until 20 bash -c "! kill -0 ${HEAD_PID[$A]}"; then
			wait "${HEAD_PID[$A]}"
			echo "# the deposed head exited with status $? after its link came back"
		fi
		check "round $round: and says it lost the leadership" \
			grep -q "this head lost the leadership" "$W/h$A.log"
		acted=$(sed -n '/this head lost the leadership/,$p' "$W/h$A.log" |
			grep -E ' by uid |submitted now|placed|took the leadership' || true)
		if [ -z "$acted" ]; then
			ok "round $round: its log shows nothing submitted or placed after that"
		else
			# what the client was told about those jobs, and whether the new leader has them
			told=$(echo "$acted" | sed -n 's/.*job \([^ ]*\) submitted by uid.*/\1/p' | while read -r j; do
				printf '%s: client %s, on the new leader: %s; ' "$j" \
					"$(grep " submit $j\$" "$ACK" | cut -d' ' -f1 | paste -sd/)" \
					"$(status_of "$j" || echo absent)"
			done)
			not_ok "round $round: its log shows nothing submitted or placed after that" \
				"$acted" "$told"
		fi
		check_fails "round $round: its mount is gone" on "$A" awk -v m="$M" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts
		check "round $round: its address loop dropped the floating address" \
			wait_until 5 bash -c "! ip -n '${NS[$A]}' -o addr show | grep -q ' $VIP/'"
		sleep 1 # a few more of its loop's turns, with the link up
		check "round $round: the floating address stays on head $ACTIVE only" vip_only_on "$ACTIVE"
		if out=$(verify_on "$ACTIVE"); then
			ok "round $round: the deposed head changed nothing (verify again: ${out##*checked } checked)"
		else
			not_ok "round $round: the deposed head changed nothing" "$out"
		fi
		check "round $round: the new leader still accepts a submission" until_accepts 10 "$(now_ms)" "$ACTIVE"
	else
		wait "${HEAD_PID[$A]}" 2>/dev/null
		wait_until 10 bash -c "! nsenter -t ${HOLDER[$A]} -m awk -v m='$M' '\$2 == m { f = 1 } END { exit !f }' /proc/self/mounts"
	fi
	# the old head comes back in its namespaces, as the standby
	head_start "$A"
	check "round $round: the restarted head $A stands by, naming the new leader" \
		wait_until 15 on "$A" grep -q "leader: h$ACTIVE pid ${HEAD_PID[$ACTIVE]}" "$M/cluster/leader"
	check "round $round: its cluster/leader says role: standby" on "$A" grep -qx 'role: standby' "$M/cluster/leader"
	check_fails "round $round: and it does not take the floating address" \
		wait_until 2 vip_on "$A"
done
check_eq "every failover happened" $((ROUNDS + 1)) "${#times[@]}"
line=""
for i in "${!times[@]}"; do line="$line ${kinds[$i]}:${times[$i]}"; done
echo "# failover, SIGKILL or link cut of the active head to the first submission the new leader accepted (ms; lease $LEASE s):$line"
for t in "${times[@]}"; do
	[ "$t" -lt $(((LEASE + 15) * 1000)) ] || not_ok "a failover took $t ms (lease $LEASE s)"
done

# ---- the end: everything goes ------------------------------------------------------------
on "$ACTIVE" sh -c "echo cancel > '$M/jobs/tr/ctl'"
check "the job is cancelled, its processes stopped by the agents" \
	wait_until 30 bash -c "[ \"\$(nsenter -t ${HOLDER[$ACTIVE]} -m cat '$M/jobs/tr/status')\" = cancelled ]"
for n in a2-node-01 a2-node-02; do kill -TERM "${COMPUTE_PID[$n]}"; done
for n in a2-node-01 a2-node-02; do
	if wait_until 20 bash -c "! kill -0 ${COMPUTE_PID[$n]}"; then
		wait "${COMPUTE_PID[$n]}"
		check_eq "$n: agent and sshfs stop on SIGTERM" 0 "$?"
	else
		not_ok "$n: agent and sshfs stop on SIGTERM"
	fi
	unset "COMPUTE_PID[$n]"
done
check_eq "no train_demo is left" "" "$(pgrep -f "$TRAIN" || true)"
kill -TERM "${HEAD_PID[$STANDBY]}"
wait "${HEAD_PID[$STANDBY]}" 2>/dev/null
# (EBUSY while the sftp-server of a compute server's last session still has it open)
check "the active head's mount unmounts" wait_until 15 on "$ACTIVE" fusermount3 -u "$M"
if wait_until 30 bash -c "! kill -0 ${HEAD_PID[$ACTIVE]}"; then
	wait "${HEAD_PID[$ACTIVE]}"
	check_eq "the active head exits 0 after fusermount3 -u" 0 "$?"
else
	not_ok "the active head exits 0 after fusermount3 -u" "$(tail -n 5 "$W/h$ACTIVE.log")"
fi
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$W"/h[12].log; then
	not_ok "the heads' logs have no sanitizer report" "$(grep -h -m5 -E 'Sanitizer|runtime error' "$W"/h[12].log)"
else
	ok "the heads' logs have no sanitizer report"
fi
HEAD_PID=()
for h in 1 2; do kill -TERM "$(cat "$W/ssh/sshd-h$h.pid")" "${HOLDER[$h]}" 2>/dev/null; done
for h in 1 2; do wait "${HOLDER[$h]}" 2>/dev/null; done
for n in "${NS[@]}" "$NS_SW"; do
	ip netns pids "$n" | xargs -r kill -TERM 2>/dev/null # etcd
done
for n in "${NS[@]}" "$NS_SW"; do
	wait_until 10 test -z "$(ip netns pids "$n")"
	ip netns del "$n"
done
check_eq "no namespace of this test is left" "" "$(ip netns list | grep "^$P-" || true)"
check_eq "no link of this test is left" "" "$(ip -o link show | grep "$P-" || true)"
check_eq "no mount under the work dir is left" "" "$(awk -v w="$W" 'index($2, w) == 1' /proc/mounts)"
it_finish
