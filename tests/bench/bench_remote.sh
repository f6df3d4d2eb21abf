#!/usr/bin/env bash
# Remote access through sshfs, measured against ascendfs's own mount in the same run:
#  1. how long after a change on the head an agent sees it: a job is submitted on the
#     head, and the time until the agent of its server starts the job's process is
#     taken from the agent's log; once for an agent on an sshfs mount (it polls every
#     --poll-interval, default 1 s), once for an agent on the daemon's own mount
#     (inotify). The goal: within one report interval (fault_check_interval, 5 s here).
#  2. `cat ranktable.json` of a 512-rank job through sshfs vs through the local mount.
# sshd, the daemon and the sshfs mount run in a network and mount namespace of their
# own (sshd on that namespace's loopback), all removed at the end. Prints figures;
# asserts nothing about time. Exit 77 when the kernel cannot make the namespace.
# Usage: bench_remote.sh ASCENDFS ASCEND_AGENT BENCH_READ SRCDIR
set -u
if [ -z "${ASCENDFS_BENCH_INNER:-}" ]; then
	NS=afsbench$$
	if ! ip netns add "$NS" 2>/dev/null; then
		echo "SKIP: the kernel does not let this benchmark create a network namespace"
		exit 77
	fi
	ip netns exec "$NS" unshare --mount --propagation private \
		env ASCENDFS_BENCH_INNER=1 bash "$0" "$@"
	rc=$?
	ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns del "$NS"
	exit $rc
fi

ASCENDFS=$(realpath "$1")
AGENT=$(realpath "$2")
BENCH_READ=$(realpath "$3")
SRC=$(realpath "$4")
. "$SRC/tests/integration/lib.sh"
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
SFTP_SERVER=/usr/lib/openssh/sftp-server
for p in sshfs "$SSHD" "$SFTP_SERVER"; do
	command -v "$p" >/dev/null || { echo "missing $p: run tests/install-deps.sh"; exit 1; }
done
it_setup
W=$IT_WORK
M=$IT_MNT
R=$W/remote # the sshfs mount of the head's $M
mkdir -p "$R" "$W/ssh" /run/sshd "$W/logs"
ip link set lo up

declare -a AGENTS=()
bench_cleanup() {
	set +e
	for p in "${AGENTS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${AGENTS[@]}"; do wait "$p" 2>/dev/null; done
	is_mounted "$R" && { fusermount3 -u "$R" || umount -l "$R"; }
	[ -f "$W/ssh/sshd.pid" ] && kill -TERM "$(cat "$W/ssh/sshd.pid")"
	it_cleanup
}
trap bench_cleanup EXIT

# 64 Atlas 800T A2 servers (512 NPUs) under 4 leaf switches; 5 s reports
CONFIG=$W/cluster64.yaml
it_cluster_a2 "$CONFIG" 64 "fault_check_interval: 5"
it_start "$ASCENDFS" "$CONFIG" --state-dir none || exit 1

ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/host" </dev/null
ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/id" </dev/null
echo "restrict,command=\"$SFTP_SERVER\" $(cat "$W/ssh/id.pub")" >"$W/ssh/authorized_keys"
echo "127.0.0.1 $(cut -d' ' -f1,2 "$W/ssh/host.pub")" >"$W/ssh/known_hosts"
cat >"$W/ssh/sshd_config" <<EOF
ListenAddress 127.0.0.1
HostKey $W/ssh/host
PidFile $W/ssh/sshd.pid
AuthorizedKeysFile $W/ssh/authorized_keys
PermitRootLogin forced-commands-only
PasswordAuthentication no
UsePAM no
StrictModes no
Subsystem sftp $SFTP_SERVER
EOF
"$SSHD" -f "$W/ssh/sshd_config" -E "$W/ssh/sshd.log" || exit 1
# the README's option set
sshfs -F /dev/null -o "reconnect,ServerAliveInterval=5,ServerAliveCountMax=3,ConnectTimeout=5,BatchMode=yes,IdentityFile=$W/ssh/id,UserKnownHostsFile=$W/ssh/known_hosts,dir_cache=no,attr_timeout=0,entry_timeout=0,negative_timeout=0,direct_io,allow_other,default_permissions,umask=0022" \
	"root@127.0.0.1:$M" "$R" || { cat "$W/ssh/sshd.log"; exit 1; }
echo "sshfs: $(awk -v m="$R" '$2 == m { print $1, $3 }' /proc/mounts)"

# ---- 1. a change on the head, seen by an agent -------------------------------------
# node-01's agent reads through sshfs, node-02's through the daemon's own mount
"$AGENT" --mount "$R" --node node-01 --fault-file "$W/none" --log-dir "$W/logs" \
	>"$W/agent-sshfs.log" 2>&1 &
AGENTS+=($!)
"$AGENT" --mount "$M" --node node-02 --fault-file "$W/none" --log-dir "$W/logs" \
	>"$W/agent-local.log" 2>&1 &
AGENTS+=($!)
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
wait_until 20 bash -c "[ \"\$(python3 -c 'import json;print(json.load(open(\"$M/nodes/node-02/info\"))[\"state\"])')\" = ready ]"
iso_ms() {
	python3 -c 'import sys,datetime as d; print(int(d.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=d.timezone.utc).timestamp()*1000))' "$1"
}
# seen AGENT_LOG SERVER CORDON N: N jobs placed on SERVER (CORDON cordoned), each at a
# random moment of the report cycle; prints the ms from submission to the process start
seen() {
	local log=$1 server=$2 other=$3 n=$4 i t0 t1 line
	echo cordon >"$M/nodes/$other/ctl"
	for i in $(seq "$n"); do
		sleep "0.$((RANDOM % 1000))"
		printf 'name: probe%d\nnpus: 8\nlaunch: msrun\ncommand: "sleep 600"\n' "$i" >"$W/p.yaml"
		t0=$(($(date +%s%N) / 1000000))
		cp "$W/p.yaml" "$M/jobs/probe$i.yaml"
		[ "$(json "$M/jobs/probe$i/status.json" '" ".join(p["server"] for p in d["placement"])')" = "$server" ] ||
			{ echo "probe$i not on $server" >&2; return 1; }
		wait_until 20 grep -q "job probe$i generation 1 .*started pid" "$log" || return 1
		line=$(grep -m1 "job probe$i generation 1 .*started pid" "$log")
		t1=$(iso_ms "${line%% *}")
		echo $((t1 - t0))
		rmdir "$M/jobs/probe$i" 2>/dev/null || { echo cancel >"$M/jobs/probe$i/ctl"; rmdir "$M/jobs/probe$i"; }
		wait_until 20 grep -q "job probe$i generation 1: stopped" "$log"
	done
	echo uncordon >"$M/nodes/$other/ctl"
}
N=20
stats() { sort -n | awk '{ v[NR] = $1; s += $1 } END { printf "%d %d %d %d", v[int((NR + 1) / 2)], v[NR], s / NR, NR }'; }
read -r p50_r max_r mean_r n_r < <(seen "$W/agent-sshfs.log" node-01 node-02 $N | stats)
read -r p50_l max_l mean_l n_l < <(seen "$W/agent-local.log" node-02 node-01 $N | stats)
printf '\nsubmission on the head -> the agent starts the job process (%d jobs each; report interval 5 s)\n' $N
printf '%-34s %8s %8s %8s\n' "" "p50 ms" "max ms" "mean ms"
printf '%-34s %8s %8s %8s\n' "agent on sshfs (polls every 1 s)" "$p50_r" "$max_r" "$mean_r"
printf '%-34s %8s %8s %8s\n' "agent on the local mount (inotify)" "$p50_l" "$max_l" "$mean_l"
awk -v m="$max_r" 'BEGIN { printf "sshfs worst case: %.2f of a report interval (goal <= 1)\n", m / 5000 }'
check_eq "both agents saw all $N jobs" "$N $N" "${n_r:-0} ${n_l:-0}"
grep -q "is a fuse.sshfs mount" "$W/agent-sshfs.log" && ok "the sshfs agent polls" ||
	not_ok "the sshfs agent polls" "$(head -n4 "$W/agent-sshfs.log")"

# ---- 2. cat ranktable.json of a 512-rank job -----------------------------------------
for p in "${AGENTS[@]}"; do kill -TERM "$p"; wait "$p"; done
AGENTS=()
printf 'npus: 512\nparallel: {tp: 8, pp: 8}\n' >"$M/jobs/big512.yaml"
[ "$(cat "$M/jobs/big512/status")" = running ] || { echo "big512: $(cat "$M/jobs/big512/status.json")"; exit 1; }
N=1000
read -r bytes_l p50_l p99_l mean_l < <("$BENCH_READ" "$M/jobs/big512/ranktable.json" $N)
read -r bytes_r p50_r p99_r mean_r < <("$BENCH_READ" "$R/jobs/big512/ranktable.json" $N)
K=200
start=$(date +%s%N)
for _ in $(seq $K); do cat "$M/jobs/big512/ranktable.json" >/dev/null; done
cat_l=$((($(date +%s%N) - start) / K / 1000))
start=$(date +%s%N)
for _ in $(seq $K); do cat "$R/jobs/big512/ranktable.json" >/dev/null; done
cat_r=$((($(date +%s%N) - start) / K / 1000))
printf '\ncat ranktable.json of a 512-rank job (%s bytes), %d reads each\n' "$bytes_l" $N
printf '%-28s %10s %10s %10s\n' "" "p50 us" "p99 us" "mean us"
printf '%-28s %10s %10s %10s\n' "local ascendfs mount" "$p50_l" "$p99_l" "$mean_l"
printf '%-28s %10s %10s %10s\n' "sshfs (loopback)" "$p50_r" "$p99_r" "$mean_r"
awk -v a="$p50_r" -v b="$p50_l" -v c="$mean_r" -v d="$mean_l" \
	'BEGIN { printf "ratio sshfs/local: p50 %.2fx, mean %.2fx (open+read+close in one process)\n", a / b, c / d }'
printf 'whole `cat` process, mean of %d: local %d us, sshfs %d us, ratio %s\n' $K "$cat_l" "$cat_r" \
	"$(awk -v a=$cat_r -v b=$cat_l 'BEGIN { printf "%.2fx", a / b }')"
check_eq "sshfs and the local mount give the same bytes" \
	"$(sha256sum <"$M/jobs/big512/ranktable.json")" "$(sha256sum <"$R/jobs/big512/ranktable.json")"
fusermount3 -u "$R"
kill -TERM "$(cat "$W/ssh/sshd.pid")"
it_stop
it_finish
