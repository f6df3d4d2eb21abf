#!/usr/bin/env bash
# Many clients at once through a real mount: 32 parallel shell clients submit, read and
# cancel 2,000 jobs in all (1-8 NPUs, some with priorities that preempt). Afterwards:
# every submission is a job directory (none lost), no NPU is held by two jobs, allocated
# equals what the running jobs hold, the event sequence has no gaps, the daemon answered
# within the deadline (no deadlock) and exits cleanly. Meanwhile jobs/ is stat()ed over
# and over (its GETATTR is answered while other requests hold the daemon's lock): it is
# always root's sticky world-writable directory, and afterwards its time is the last
# event's.
# Usage: test_concurrency.sh ASCENDFS SRCDIR [CLIENTS] [JOBS]
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
CLIENTS=${3:-32}
JOBS=${4:-2000}
. "$SRC/tests/integration/lib.sh"

it_setup
M=$IT_MNT
W=$IT_WORK

CONFIG=$W/cluster.yaml
{
	cat <<EOF
cluster:
  name: concurrency-test
  scheduler_ip: 10.0.0.1
  fault_check_interval: 1
  stop_grace_period: 0
resource:
  total_npu: 256
queues:
  - name: default
  - name: prod
    priority: 900
servers:
EOF
	for i in $(seq 1 32); do
		printf '  - name: n%02d\n    host_ip: 10.0.%d.%d\n    type: atlas800t-a2\n' \
			"$i" $((i / 250)) $((i % 250 + 1))
		printf '    switch: leaf-%d\n' $((i % 4))
	done
} >"$CONFIG"
it_start "$ASCENDFS" "$CONFIG" || exit 1

# client K: submits its share of jobs by cp, reads them back, cancels every third
client() {
	local k=$1 n=$2 i name sizes=(1 2 4 8 1 2 8) spec
	for ((i = 0; i < n; i++)); do
		name="c$k-$i"
		spec="$W/spec-$k.yaml"
		printf 'npus: %d\n' "${sizes[$(((k + i) % 7))]}" >"$spec"
		[ $(((k * 7 + i) % 11)) -eq 0 ] && printf 'queue: prod\n' >>"$spec"
		cp "$spec" "$M/jobs/$name.yaml" || echo "submit $name failed" >>"$W/errors"
		cat "$M/jobs/$name/status" >/dev/null 2>&1 || echo "read $name failed" >>"$W/errors"
		if [ $((i % 3)) -eq 2 ]; then
			echo cancel >"$M/jobs/c$k-$((i - 1))/ctl" 2>/dev/null ||
				echo "cancel c$k-$((i - 1)) failed" >>"$W/errors"
		fi
		[ $((i % 5)) -eq 0 ] && cat "$M/cluster/status" >/dev/null
	done
}

# jobs/'s attributes, every 10 ms while the clients run
stat_watch() {
	while [ ! -e "$W/stop-stat" ]; do
		stat -c '%f %u %g' "$M/jobs"
		sleep 0.01
	done >"$W/jobs-stat" 2>&1
}
stat_watch &
stat_pid=$!

per=$((JOBS / CLIENTS))
start=$(date +%s%N)
pids=()
for ((k = 0; k < CLIENTS; k++)); do
	n=$per
	[ "$k" -lt $((JOBS % CLIENTS)) ] && n=$((n + 1))
	client "$k" "$n" &
	pids+=($!)
done
# no deadlock: every client must finish within the deadline
deadline=$(($(date +%s) + 300))
for p in "${pids[@]}"; do
	while kill -0 "$p" 2>/dev/null; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			not_ok "clients finish within 300 s (no deadlock)" "client $p still running"
			kill "${pids[@]}" 2>/dev/null
			exit 1
		fi
		sleep 0.1
	done
	wait "$p"
done
ms=$((($(date +%s%N) - start) / 1000000))
ok "$CLIENTS clients finished $JOBS submissions in $((ms / 1000)).$((ms % 1000 / 100)) s"
echo "# $((JOBS * 1000 / (ms ? ms : 1))) submissions/s with reads and cancels, $CLIENTS clients"

touch "$W/stop-stat"
wait "$stat_pid"
check "jobs/ was stat()ed while the clients ran" test "$(wc -l <"$W/jobs-stat")" -ge 20
# 43ff: S_IFDIR | 01777
check_eq "jobs/ stayed a sticky world-writable directory of root's" "" \
	"$(grep -v -x '43ff 0 0' "$W/jobs-stat" | sort | uniq -c | head -3)"
# the kernel keeps a directory's attributes a second: then jobs/ has the last event's time
last_event=$(tail -n 1 "$M/cluster/events" | python3 -c 'import sys, json, datetime as d
t = json.loads(sys.stdin.read())["time"]
print(int(d.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=d.timezone.utc).timestamp()))')
sleep 1.2
check "jobs/'s time is at least the last event's ($last_event)" \
	test "$(stat -c %Y "$M/jobs")" -ge "$last_event"

check_eq "no client operation failed" "" "$(cat "$W/errors" 2>/dev/null | head -5)"
check_eq "every submission is a job (none lost)" "$JOBS" \
	"$(find "$M/jobs" -mindepth 1 -maxdepth 1 -type d | wc -l)"

python3 - "$M" <<'PY' >"$W/verdict" 2>&1
import json, os, sys
m = sys.argv[1]
held = {}
total_running = 0
problems = []
states = {}
for name in os.listdir(m + "/jobs"):
    d = json.load(open(f"{m}/jobs/{name}/status.json"))
    states[d["state"]] = states.get(d["state"], 0) + 1
    for sl in d.get("placement") or []:
        for dev in sl["device_ids"]:
            key = (sl["server"], dev)
            if key in held:
                problems.append(f"NPU {key} held by {held[key]} and {name}")
            held[key] = name
            total_running += 1
    if d["state"] in ("pending", "rejected") and not d.get("reason"):
        problems.append(f"{name} is {d['state']} without a reason")
st = json.load(open(m + "/cluster/status"))
if st["npus"]["allocated"] != total_running:
    problems.append(f"allocated {st['npus']['allocated']} but jobs hold {total_running}")
seqs = [json.loads(l)["seq"] for l in open(m + "/cluster/events")]
gaps = [b for a, b in zip(seqs, seqs[1:]) if b != a + 1]
if gaps:
    problems.append(f"event sequence has gaps before {gaps[:5]}")
print("states", sorted(states.items()))
print("events", len(seqs))
print("problems", len(problems))
for p in problems[:10]:
    print(p)
PY
sed 's/^/# /' "$W/verdict"
check_eq "no NPU held twice, allocation agrees, no opaque pending, events gapless" \
	"problems 0" "$(grep '^problems' "$W/verdict")"

# (it_stop retries the unmount while the daemon's notifier still touches the files of
# the jobs that changed, for inotify watchers)
it_stop
it_finish
