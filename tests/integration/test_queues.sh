#!/usr/bin/env bash
# Sharing the cluster through a real mount: queue status and quotas (root writes them,
# others cannot, junk is refused), a queue at its quota waits with the reason, a
# high-priority job preempts whole low-priority jobs that go stopping and then pending
# while the preemptor starts, a time_limit stops its job, job control (hold, release,
# requeue, update priority and time_limit, within the caps), dependencies (after:
# afterok and afterany, a failed step cancelling its chain), job arrays (array: 0-3%2,
# elements made as others end, cancelled with their array), the dry run (cluster/whatif,
# ascend-run --test-only: where it would go, what it would preempt, nothing changed), a
# queue with `groups` refuses
# outsiders (EACCES) and takes members, an elastic job takes what is free; aging across
# queues (priority_weight_age) lets a long wait pass a higher queue, survives SIGKILL,
# and stops at its bound.
# Usage: test_queues.sh ASCENDFS SRCDIR ASCEND_RUN
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
RUN=$(realpath "$3")
. "$SRC/tests/integration/lib.sh"

it_setup
M=$IT_MNT
W=$IT_WORK

# a unix group of our own for the restricted queue, removed on every exit path
GROUP=""
GROUP_GID=""
can_switch_users=false
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && command -v groupadd >/dev/null &&
	command -v groupdel >/dev/null; then
	trap '[ -n "$GROUP" ] && groupdel "$GROUP" 2>/dev/null; it_cleanup' EXIT
	if groupadd "ascq$$" 2>/dev/null; then
		GROUP="ascq$$"
		GROUP_GID=$(getent group "$GROUP" | cut -d: -f3)
		can_switch_users=true
	fi
fi
$can_switch_users || echo "# SKIP group checks: they need root, setpriv, groupadd and groupdel"

CONFIG=$W/cluster.yaml
{
	cat <<EOF
cluster:
  name: queues-test
  scheduler_ip: 10.0.0.1
  fault_check_interval: 1     # the stop deadline of a preempted job: grace + 1 s
  stop_grace_period: 2        # a window wide enough to read a victim while it stops
resource:
  total_npu: 32
  enable_quota_limit: true
queues:
  - name: default
  - name: prod
    priority: 900
  - name: batch
    quota_npus: 16
    may_borrow: true
  - name: capped
    quota_npus: 8
    may_borrow: false
  - name: restricted
    groups: [${GROUP:-ascq-no-such-group}]
servers:
EOF
	for i in 1 2 3 4; do
		printf '  - name: a2-node-%02d\n    host_ip: 10.0.1.%d\n    type: atlas800t-a2\n' "$i" "$i"
		printf '    switch: leaf-1\n    device_ips: [%s]\n' \
			"$(for d in 0 1 2 3 4 5 6 7; do echo "10.20.$d.$i"; done | paste -sd, | sed 's/,/, /g')"
	done
} >"$CONFIG"
it_start "$ASCENDFS" "$CONFIG" || exit 1

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
state() { cat "$M/jobs/$1/status"; }
submit() { # submit NAME SPEC-LINES...: cp a spec file into jobs/, as a user would
	local name=$1
	shift
	printf '%s\n' "$@" >"$W/$name.yaml"
	cp "$W/$name.yaml" "$M/jobs/"
}
cancel_all() {
	local d
	for d in "$M"/jobs/*/; do
		case $(cat "$d/status") in
		pending | running | recovering | stopping) echo cancel >"$d/ctl" ;;
		esac
	done
}
# errno_of PYTHON-OPEN-AND-WRITE: the errno name a write/close raised, or "ok"
errno_of() {
	python3 -c '
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, sys.argv[2].encode())
    finally:
        os.close(fd)
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])' "$@"
}

# ---- queue status ------------------------------------------------------------------
Q=$M/queues
check_eq "queues/ lists the configured queues" "batch capped default prod restricted" \
	"$(ls "$Q" | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "batch: quota, borrowing, enforcement, usage" "16 True True 0 0 0 0 0 []" \
	"$(json "$Q/batch/status" '" ".join(str(d[k]) for k in ("quota_npus", "may_borrow", "enable_quota_limit", "used_npus", "borrowed_npus", "pending", "running", "stopping", "groups"))')"
check_eq "prod: priority 900, weight 1" "prod 900 1" \
	"$(json "$Q/prod/status" '"%s %s %s" % (d["queue"], d["priority"], d["weight"])')"
check_eq "restricted lists its group" "['${GROUP:-ascq-no-such-group}']" \
	"$(json "$Q/restricted/status" 'd["groups"]')"

# ---- quota: root writes, others cannot, junk is refused ----------------------------
check_eq "quota reads as a number" 16 "$(cat "$Q/batch/quota")"
check_eq "quota is rw for root only" "-rw-r--r-- root" "$(stat -c '%A %U' "$Q/batch/quota")"
check "root writes a quota" sh -c "echo 24 > '$Q/batch/quota'"
check_eq "and it reads back" 24 "$(cat "$Q/batch/quota")"
check_eq "queue status agrees" 24 "$(json "$Q/batch/status" 'd["quota_npus"]')"
check_contains "cluster/config shows it" "quota_npus: 24" "$(grep -A1 'name: batch' "$M/cluster/config")"
check_contains "a queue event records it" '"kind":"queue"' "$(grep 'quota set to 24' "$M/cluster/events")"
check_eq "junk is EINVAL" EINVAL "$(errno_of "$Q/batch/quota" 'sixteen')"
check_eq "a number with junk after it is EINVAL" EINVAL "$(errno_of "$Q/batch/quota" $'8\n9\n')"
check_eq "more NPUs than the cluster has is EINVAL" EINVAL "$(errno_of "$Q/batch/quota" '33')"
check_fails "bash's echo sees the refusal too" bash -c "echo junk > '$Q/batch/quota'"
check_eq "refused writes changed nothing" 24 "$(cat "$Q/batch/quota")"
check_contains "a refused quota is a refused event in cluster/events, with uid and reason" \
	'queues/batch/quota by uid 0 refused: a quota is a decimal number of NPUs' \
	"$(grep '"kind":"refused"' "$M/cluster/events")"
if $can_switch_users; then
	check_eq "a non-root write is refused (EACCES)" EACCES \
		"$(setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "$(declare -f errno_of); errno_of '$Q/batch/quota' 4")"
	check_eq "and changed nothing" 24 "$(cat "$Q/batch/quota")"
fi
check "root sets it back" sh -c "printf 16 > '$Q/batch/quota'"
check_eq "without a newline too" 16 "$(cat "$Q/batch/quota")"
# a number written in pieces through duplicated descriptors is applied whole, once
bash -c "exec 3>'$Q/batch/quota'; printf 2 >&3; printf 0 >&3; exec 3>&-"
check_eq "a quota written in pieces counts whole" 20 "$(cat "$Q/batch/quota")"
check_eq "one queue event, not one per piece" 0 \
	"$(grep -c 'quota set to 2 NPUs\|quota set to 0 NPUs' "$M/cluster/events")"
check "root sets it back again" sh -c "echo 16 > '$Q/batch/quota'"

# ---- a queue at its quota waits with the reason ------------------------------------
submit c1 'npus: 8' 'queue: capped'
submit c2 'npus: 4' 'queue: capped'
check_eq "the first job of capped runs" running "$(state c1)"
check_eq "the second waits" pending "$(state c2)"
check_eq "and says why" "queue capped uses 8 of 8 NPUs; job needs 4" \
	"$(json "$M/jobs/c2/status.json" 'd["reason"]')"
check_eq "capped status: 8 used, 1 pending, 1 running" "8 1 1" \
	"$(json "$Q/capped/status" '"%d %d %d" % (d["used_npus"], d["pending"], d["running"])')"
check_contains "metrics: used NPUs per queue" 'ascendfs_queue_used_npus{queue="capped"} 8' \
	"$(cat "$M/cluster/metrics")"
check_contains "metrics: pending jobs per queue" 'ascendfs_queue_pending_jobs{queue="capped"} 1' \
	"$(cat "$M/cluster/metrics")"
echo cancel >"$M/jobs/c1/ctl"
check_eq "when the first ends, the second runs" running "$(state c2)"
cancel_all

# ---- preemption: a high-priority job stops whole low-priority jobs -----------------
for i in 0 1 2 3; do submit "low$i" 'npus: 8' 'priority: low'; done
check_eq "four low-priority jobs fill the cluster" "32 32" \
	"$(json "$M/cluster/status" '"%d %d" % (d["npus"]["allocated"], d["npus"]["total"])')"
# watch cluster/status for the whole preemption: allocated never exceeds total
python3 - "$M/cluster/status" "$W/alloc.txt" "$W/alloc.stop" <<'PY' &
import json, os, sys, time
worst, bad, n = 0, "", 0
end = time.time() + 20
while time.time() < end and not os.path.exists(sys.argv[3]):
    try:
        d = json.load(open(sys.argv[1]))
    except (OSError, ValueError):
        break
    u = d["npus"]
    n += 1
    worst = max(worst, u["allocated"])
    if u["allocated"] > u["total"] or u["allocated"] + u["free"] + u["isolated"] + u["unavailable"] != u["total"]:
        bad = json.dumps(u)
    time.sleep(0.02)
open(sys.argv[2], "w").write("%d %d %s\n" % (n, worst, bad))
PY
poller=$!
t0=$(date +%s%N)
submit hi 'npus: 16' 'queue: prod'
stopping=$(grep -l stopping "$M"/jobs/low*/status | wc -l)
check_eq "two whole low-priority jobs go stopping" 2 "$stopping"
check_eq "the preemptor waits for them" pending "$(state hi)"
check_contains "and says so" "preempting 2 jobs" "$(json "$M/jobs/hi/status.json" 'd["reason"]')"
victims=$(for f in "$M"/jobs/low*/status; do grep -qx stopping "$f" && basename "$(dirname "$f")"; done)
victim=$(echo "$victims" | head -1)
vserver=$(json "$M/jobs/$victim/status.json" 'd["placement"][0]["server"]')
check_eq "victim status.json: preempted_by, preemptions, a stop deadline" "hi 1 True" \
	"$(json "$M/jobs/$victim/status.json" '"%s %d %s" % (d["preempted_by"], d["preemptions"], d["stop_deadline"] is not None)')"
check_fails "the victim is gone from its server's jobs list (its agent stops it)" \
	grep -q "^$victim " "$M/nodes/$vserver/jobs"
check_contains "cluster/events has a preempted line naming the preemptor" "preempted by job hi" \
	"$(grep '"kind":"preempted"' "$M/cluster/events")"
check "within a few seconds the preemptor runs" wait_until 10 grep -qx running "$M/jobs/hi/status"
t1=$(date +%s%N)
echo "# preemption to the preemptor running (grace 2 s, check interval 1 s: no agents, so the stop deadline): $(((t1 - t0) / 1000000)) ms"
check_eq "the victims are pending again" "pending pending" \
	"$(for v in $victims; do state "$v"; done | tr '\n' ' ' | sed 's/ $//')"
check_contains "waiting to resume, and saying who preempted them" 'preempted by job' \
	"$(json "$M/jobs/$victim/status.json" 'd["reason"]')"
check_contains "a requeued event for each" '"kind":"requeued"' "$(cat "$M/jobs/$victim/events")"
check_contains "metrics count the preemptions" "ascendfs_preemptions_total 2" "$(cat "$M/cluster/metrics")"
touch "$W/alloc.stop"
wait "$poller"
read -r samples worst bad <"$W/alloc.txt"
echo "# cluster/status sampled $samples times during the preemption; most allocated: $worst"
check_eq "cluster/status: allocated never exceeded total and the sum held" "" "${bad:-}"
[ "${samples:-0}" -gt 5 ] && ok "the status poller saw the preemption" || not_ok "the status poller saw the preemption" "samples: ${samples:-0}"
cancel_all

# ---- time_limit ----------------------------------------------------------------------
t0=$(date +%s%N)
submit short 'npus: 8' 'time_limit: 2s'
check_eq "a job with time_limit 2s runs" "running 2" \
	"$(state short) $(json "$M/jobs/short/status.json" 'd["time_limit_sec"]')"
check "within ~5 s it stops" wait_until 6 grep -qxE 'stopping|timeout' "$M/jobs/short/status"
t1=$(date +%s%N)
echo "# time_limit 2 s to stopping: $(((t1 - t0) / 1000000)) ms"
check_contains "status.json says the time limit was reached" "time limit of 2 s reached" \
	"$(json "$M/jobs/short/status.json" 'd["reason"]')"
check "then it is timeout" wait_until 10 grep -qx timeout "$M/jobs/short/status"
check_contains "its error file says why" "time limit of 2 s reached" "$(cat "$M/jobs/short/error")"
check_contains "metrics count it" "ascendfs_timeouts_total 1" "$(cat "$M/cluster/metrics")"

# ---- unix groups on a queue ----------------------------------------------------------
if $can_switch_users; then
	printf 'npus: 1\nqueue: restricted\n' >"$W/grp.yaml"
	for n in out in primary; do cp "$W/grp.yaml" "$W/g-$n.yaml"; done
	alloc_before=$(json "$M/cluster/status" 'd["npus"]["allocated"]')
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cp "$W/g-out.yaml" "$M/jobs/" 2>&1)
	check_contains "a user in none of the queue's groups gets EACCES" "Permission denied" "$out"
	check_eq "the job shows rejected" rejected "$(state g-out)"
	check_eq "error says why, and where" "g-out.yaml:2:8: queue \"restricted\" accepts jobs only from groups $GROUP; uid 65534 is in none of them" \
		"$(cat "$M/jobs/g-out/error")"
	check_eq "nothing else changed" "$alloc_before" "$(json "$M/cluster/status" 'd["npus"]["allocated"]')"
	check "bash's echo (no close error) leaves the same rejection" \
		setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "printf 'npus: 1\nqueue: restricted\n' > '$M/jobs/g-echo.yaml'; true"
	check_contains "there too" "accepts jobs only from groups" "$(cat "$M/jobs/g-echo/error")"
	check "a member through a supplementary group may submit" \
		setpriv --reuid=65534 --regid=65534 --groups="$GROUP_GID" cp "$W/g-in.yaml" "$M/jobs/"
	check_eq "and the job runs" running "$(state g-in)"
	check "a member through the primary group may submit" \
		setpriv --reuid=65534 --regid="$GROUP_GID" --clear-groups cp "$W/g-primary.yaml" "$M/jobs/"
	check_eq "and the job runs" running "$(state g-primary)"
	check "root may submit to any queue" cp "$W/grp.yaml" "$M/jobs/g-root.yaml"
	check_eq "and the job runs" running "$(state g-root)"
fi
cancel_all

# ---- job control: hold, release, requeue, update (Slurm's scontrol) -----------------
submit fill 'npus: 32'
submit held 'npus: 8'
submit next 'npus: 8'
check "the owner holds a pending job" sh -c "echo hold > '$M/jobs/held/ctl'"
check_eq "it stays pending, held by its owner" "pending user" \
	"$(state held) $(json "$M/jobs/held/status.json" 'd["hold"]')"
check_contains "its reason says how to release it" "echo release > jobs/held/ctl" \
	"$(json "$M/jobs/held/status.json" 'd["reason"]')"
check_contains "a held event" '"kind":"held"' "$(cat "$M/jobs/held/events")"
check_eq "a running job is not held (EBUSY)" EBUSY "$(errno_of "$M/jobs/fill/ctl" hold)"
check_contains "the refusal says what to do instead" "requeue hold" \
	"$(grep '"kind":"refused"' "$M/jobs/fill/events" | tail -1)"
check_eq "and the job runs on" running "$(state fill)"
echo cancel >"$M/jobs/fill/ctl"
check_eq "the job behind the held one starts" running "$(state next)"
check_eq "the held one still waits" pending "$(state held)"
check "the owner raises its priority" sh -c "echo 'update priority high' > '$M/jobs/held/ctl'"
check_contains "the spec says the new priority" "priority: 900" "$(cat "$M/jobs/held/spec")"
check_eq "a priority out of range is EINVAL" EINVAL "$(errno_of "$M/jobs/held/ctl" 'update priority 2000')"
check_contains "and says the range" "priority 2000 is out of range: a priority is 0 to 1000" \
	"$(grep '"kind":"refused"' "$M/jobs/held/events" | tail -1)"
check "and gives it a time limit" sh -c "echo 'update time_limit 1h' > '$M/jobs/held/ctl'"
check_eq "status.json says both" "900 3600" \
	"$(json "$M/jobs/held/status.json" '"%d %d" % (d["priority"], d["time_limit_sec"])')"
check_contains "an updated event says from and to" "priority 500 -> 900" \
	"$(grep '"kind":"updated"' "$M/jobs/held/events")"
check "the owner releases it" sh -c "echo release > '$M/jobs/held/ctl'"
check_eq "and it runs, no longer held" "running None" \
	"$(state held) $(json "$M/jobs/held/status.json" 'd["hold"]')"
gen=$(json "$M/jobs/held/status.json" 'd["generation"]')
check "the owner requeues it" sh -c "echo requeue > '$M/jobs/held/ctl'"
# no agent here: the stop ends at once, and the next pass starts it again
check "it runs again as a new generation" wait_until 10 \
	sh -c "[ \"\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"generation\"])' '$M/jobs/held/status.json')\" = $((gen + 1)) ]"
check_eq "its history says the generation before was requeued" requeued \
	"$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-2]["state"])' "$M/jobs/held/history")"
check "requeue hold stops it and keeps it pending" sh -c "echo 'requeue hold' > '$M/jobs/held/ctl'"
check "it is pending and held" wait_until 10 grep -qx pending "$M/jobs/held/status"
check_eq "held" user "$(json "$M/jobs/held/status.json" 'd["hold"]')"
if $can_switch_users; then
	check_eq "another user may not hold it (EACCES at open)" EACCES \
		"$(setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "$(declare -f errno_of); errno_of '$M/jobs/next/ctl' hold")"
	printf 'npus: 1\n' >"$W/mine.yaml"
	check "a user submits a job" setpriv --reuid=65534 --regid=65534 --clear-groups cp "$W/mine.yaml" "$M/jobs/"
	check_eq "a user may not raise it past the queue's max_priority (EACCES)" EACCES \
		"$(setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "$(declare -f errno_of); errno_of '$M/jobs/mine/ctl' 'update priority 1000'")"
	check_contains "the refusal names the cap" "max_priority 900" \
		"$(grep '"kind":"refused"' "$M/jobs/mine/events" | tail -1)"
	check_eq "and changed nothing" 500 "$(json "$M/jobs/mine/status.json" 'd["priority"]')"
	check "root may" sh -c "echo 'update priority 1000' > '$M/jobs/mine/ctl'"
	check "root holds it: an admin hold" sh -c "echo 'requeue hold' > '$M/jobs/mine/ctl'"
	check "it is pending" wait_until 10 grep -qx pending "$M/jobs/mine/status"
	check_eq "its owner may not release an admin hold (EPERM)" EPERM \
		"$(setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "$(declare -f errno_of); errno_of '$M/jobs/mine/ctl' release")"
	check_contains "and is told who may" "only root releases it" \
		"$(grep '"kind":"refused"' "$M/jobs/mine/events" | tail -1)"
fi
cancel_all

# ---- dependencies: after: (Slurm's afterok / afterany) --------------------------------
submit prep 'npus: 8'
submit train 'npus: 8' 'after: [prep]'
submit report 'npus: 8' 'after: [afterany:train]'
check_eq "a job after another waits, NPUs free or not" pending "$(state train)"
check_contains "its reason says for what" "waiting for job prep to complete (afterok)" \
	"$(json "$M/jobs/train/status.json" 'd["reason"]')"
check_eq "status.json lists its dependencies" "prep afterok running" \
	"$(json "$M/jobs/train/status.json" '" ".join(e["job"] + " " + e["kind"] + " " + e["state"] for e in d["dependencies"])')"
check_contains "the spec says them as Slurm writes them" "after: ['afterok:prep']" "$(cat "$M/jobs/train/spec")"
check_contains "a dependency event" '"kind":"dependency"' "$(cat "$M/jobs/train/events")"
check_contains "cluster/jobs gives the reason" "waiting for job prep" "$(grep '^train ' "$M/cluster/jobs")"
echo complete >"$M/jobs/prep/ctl"
check_eq "once it completed, the job runs" running "$(state train)"
check_eq "and its dependency reads met" met "$(json "$M/jobs/train/status.json" 'd["dependencies"][0]["state"]')"
check_eq "the afterany job still waits for it" pending "$(state report)"
echo cancel >"$M/jobs/train/ctl"
check_eq "afterany: it ran once that one ended, cancelled or not" running "$(state report)"
submit step1 'npus: 8'
submit step2 'npus: 8' 'after: step1'
submit step3 'npus: 8' 'after: [step2]'
echo cancel >"$M/jobs/step1/ctl"
check_eq "a step after a cancelled one is cancelled, and the step after it" "cancelled cancelled" \
	"$(state step2) $(state step3)"
check_contains "saying why" "dependency never satisfied: job step1 ended cancelled" "$(cat "$M/jobs/step2/events")"
printf 'npus: 8\nafter: [nosuch]\n' >"$W/orphan.yaml"
check_fails "a spec naming no job is refused at close" cp "$W/orphan.yaml" "$M/jobs/"
check_contains "its error says where and why" "orphan.yaml:2:8: after: job nosuch does not exist" \
	"$(cat "$M/jobs/orphan/error")"
printf 'npus: 8\nafter: [step1]\n' >"$W/late.yaml"
check_fails "afterok on a job that ended otherwise is refused" cp "$W/late.yaml" "$M/jobs/"
check_contains "and says how to wait for it instead" "afterany:step1" "$(cat "$M/jobs/late/error")"
cancel_all

# ---- job arrays: array: (Slurm's --array) ----------------------------------------------
submit sweep 'npus: 8' 'array: 0-3%2' 'command: echo trial $ASCEND_ARRAY_INDEX'
check_eq "an array's record is an array" array "$(state sweep)"
check_eq "its first two elements run, at most two at once" "running running" \
	"$(state sweep.0) $(state sweep.1)"
check "the third is not made yet" test ! -e "$M/jobs/sweep.2"
check_contains "an element's environment has its index" "ASCEND_ARRAY_INDEX='1'" \
	"$(cat "$M/jobs/sweep.1/env")"
check_contains "the array's spec says its indexes" "array: 0-3%2" "$(cat "$M/jobs/sweep/spec")"
check_fails "an element's name is the array's while it is active" cp "$W/sweep.yaml" "$M/jobs/sweep.2.yaml"
check_contains "the array is not held as a job is" "is a job array" \
	"$({ echo hold >"$M/jobs/sweep/ctl"; } 2>/dev/null; grep '"kind":"refused"' "$M/jobs/sweep/events" | tail -1)"
echo complete >"$M/jobs/sweep.0/ctl"
check "the next element is made within a tick of one ending" \
	wait_until 10 grep -qx running "$M/jobs/sweep.2/status"
check_eq "status.json counts its elements" "1 2 1 completed" \
	"$(json "$M/jobs/sweep/status.json" '"%d %d %d %s" % (d["array"]["completed"], d["array"]["running"], d["array"]["waiting"], d["array"]["elements"]["0"])')"
check_contains "cluster/jobs lists the array and its elements" "sweep.2" "$(cat "$M/cluster/jobs")"
echo cancel >"$M/jobs/sweep/ctl"
check_eq "cancelling the array cancels its running elements" "cancelled cancelled cancelled" \
	"$(state sweep) $(state sweep.1) $(state sweep.2)"
sleep 1.5
check "and makes no more" test ! -e "$M/jobs/sweep.3"
# ascend-run follows an array to its end, and exits 0 when every element completed
printf 'npus: 8\narray: 0-1\n' >"$W/grid.yaml"
timeout 60 "$RUN" -m "$M" "$W/grid.yaml" >"$W/grid.out" 2>&1 &
run_pid=$!
check "ascend-run submits the array" wait_until 10 test -e "$M/jobs/grid.1/status"
echo complete >"$M/jobs/grid.0/ctl"
echo complete >"$M/jobs/grid.1/ctl"
wait "$run_pid"
check_eq "ascend-run exits 0 when every element completed" 0 "$?"
check_contains "having said how they stood" "every element completed (2)" "$(cat "$W/grid.out")"
cancel_all

# ---- the dry run: cluster/whatif (Slurm's --test-only) ---------------------------------
total=$(json "$M/cluster/status" 'd["npus"]["total"]')
submit busy "npus: $((total - 8))" 'priority: low' # all but one server
check_eq "a low-priority job takes all but one server" running "$(state busy)"
whatif() { # whatif SPEC-TEXT: the answer of cluster/whatif, as a program asks it
	python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, sys.argv[2].encode())
out = b""
while True:
    b = os.read(fd, 65536)
    if not b: break
    out += b
sys.stdout.write(out.decode())' "$M/cluster/whatif" "$1"
}
events_before=$(wc -l <"$M/cluster/events")
jobs_before=$(ls "$M/jobs" | wc -l)
printf '%s\n' "$(whatif $'name: small\nnpus: 8\n')" >"$W/small.json"
check_eq "a job that fits would start, and where" "start 1" \
	"$(json "$W/small.json" 'd["would"] + " " + str(len(d["placement"]))')"
printf '%s\n' "$(whatif $'name: big\nnpus: 16\n')" >"$W/big.json"
check_eq "one that does not would preempt the low-priority job" "wait ['busy']" \
	"$(json "$W/big.json" 'd["would"] + " " + str(d["preempts"])')"
check_contains "and says why it waits" "preempting 1 job" "$(json "$W/big.json" 'd["reason"]')"
printf '%s\n' "$(whatif $'name: huge\nnpus: 3000\n')" >"$W/huge.json"
check_eq "one the cluster refuses: refused, with the reason" "refused" "$(json "$W/huge.json" 'd["would"]')"
printf '%s\n' "$(whatif $'npus: 8\nbogus: 1\n')" >"$W/bogus.json"
check_contains "a spec that does not parse: where and what" 'whatif.yaml:2:1: unknown key \"bogus\"' \
	"$(cat "$W/bogus.json")"
check_eq "asking changed nothing: no event, no job" "$events_before $jobs_before running" \
	"$(wc -l <"$M/cluster/events") $(ls "$M/jobs" | wc -l) $(state busy)"
check_eq "a write-only open is refused (it could not read its answer)" EINVAL \
	"$(python3 -c 'import os,sys
try:
    os.open(sys.argv[1], os.O_WRONLY)
except OSError as e:
    import errno; print(errno.errorcode[e.errno])' "$M/cluster/whatif")"
if $can_switch_users; then
	check "a user asks too" setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDWR); os.write(fd, b"npus: 8\n"); sys.exit(b"would" not in os.read(fd, 65536))' "$M/cluster/whatif"
fi
if $can_switch_users; then
	check_contains "a queue's groups are checked as at a submission (a user outside them)" \
		'"would": "refused"' \
		"$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDWR); os.write(fd, b"npus: 8\nqueue: restricted\n")
out = b""
while True:
    b = os.read(fd, 65536)
    if not b: break
    out += b
sys.stdout.write(out.decode())' "$M/cluster/whatif")"
fi
printf '%s\n' "$(whatif $'npus: 8\ncheckpoint_dir: '"$M"$'/jobs\n')" >"$W/ck.json"
check_contains "a checkpoint_dir inside the mount is refused, with where" "whatif.yaml:2:17: checkpoint_dir:" \
	"$(json "$W/ck.json" 'd["reason"]')"
check_eq "a write after the answer asks again, a new spec" "refused start" "$(python3 -c 'import os,sys,json
def rd(fd):
    out = b""
    while True:
        b = os.read(fd, 65536)
        if not b: return out
        out += b
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, b"npus: 3000\n"); a = rd(fd)
os.write(fd, b"npus: 8\n"); b = rd(fd)
def would(x): return json.loads(x[x.index(b"{"):])["would"]
print(would(a), would(b))' "$M/cluster/whatif")"
printf 'npus: 8\n' >"$W/tiny.yaml"
check_contains "ascend-run --test-only prints the answer and submits nothing" '"would": "start"' \
	"$("$RUN" -m "$M" --test-only "$W/tiny.yaml")"
check "... no job tiny" test ! -e "$M/jobs/tiny"
check_contains "... named by its file, as a submission is" '"job": "tiny"' \
	"$("$RUN" -m "$M" --test-only "$W/tiny.yaml")"
printf '{npus: 8, command: "true"}' >"$W/flow.yaml"
check_contains "... a flow-style spec reads as it does at a submission" '"would": "start"' \
	"$("$RUN" -m "$M" -t "$W/flow.yaml")"
check_contains "... --name that differs from the spec's name is refused as at a submission" \
	'does not match the file name' "$(printf 'name: inner\nnpus: 8\n' >"$W/inner.yaml"; "$RUN" -m "$M" -t -n other "$W/inner.yaml")"
check_eq "... it exits 1 for a spec that would be refused" 1 \
	"$(printf 'npus: 3000\n' >"$W/huge.yaml"; "$RUN" -m "$M" -t "$W/huge.yaml" >/dev/null; echo $?)"
check_contains "... saying where in the file" "huge.yaml:1:7: npus: 3000" \
	"$("$RUN" -m "$M" -t "$W/huge.yaml")"
# the answer is of the cluster as it is: a submission just made counts
printf '%s\n' "$(whatif $'name: next\nnpus: 8\n')" >/dev/null
submit took 'npus: 8'
printf '%s\n' "$(whatif $'name: next\nnpus: 8\n')" >"$W/next.json"
check_eq "an answer right after a submission sees it (the last server is taken)" "wait" \
	"$(json "$W/next.json" 'd["would"]')"
cancel_all

# ---- elastic sizes -----------------------------------------------------------------------
check_eq "the cluster is empty" 0 "$(json "$M/cluster/status" 'd["npus"]["allocated"]')"
printf 'npus: {min: 8, max: 32}\n' >"$W/elastic.yaml"
cp "$W/elastic.yaml" "$M/jobs/"
check_eq "an elastic job on an empty cluster starts with its max" "running 32 8 32" \
	"$(state elastic) $(json "$M/jobs/elastic/status.json" '"%d %d %d" % (d["npus_allocated"], d["npus_min"], d["npus_max"])')"

it_stop

# ---- aging across queues (priority_weight_age), and across SIGKILL -----------------------
# one server; queue hi 10 above lo; one priority unit a second, at most 20
cat >"$W/aging.yaml" <<EOF
cluster:
  name: aging-test
  scheduler_ip: 10.0.0.1
resource:
  total_npu: 8
  priority_weight_age: 20
  priority_max_age: 20s
queues:
  - name: default
  - name: hi
    priority: 510
  - name: lo
    priority: 500
servers:
  - name: a2-node-01
    host_ip: 10.0.1.1
    type: atlas800t-a2
    switch: leaf-1
EOF
it_start "$ASCENDFS" "$W/aging.yaml" --state-dir "$W/aging-state" || { it_finish; exit 1; }
reason() { json "$M/jobs/$1/status.json" 'd["reason"]'; }
young_first() { json "$M/jobs/young/status.json" 'd["reason"]' | grep -q 'first in line:'; }
check_contains "cluster/config shows the aging" "priority_weight_age: 20" "$(cat "$M/cluster/config")"
submit blk 'npus: 8' 'queue: hi'
check_eq "a hi job holds the server" running "$(state blk)"
submit old 'npus: 8' 'queue: lo'
sleep 15
submit young 'npus: 8' 'queue: hi'
check_contains "the lo job that waited 15 s is first in line (500 + 15 > 510 + 0)" "first in line:" \
	"$(reason old)"
check_contains "... and the new hi job waits behind it" 'waiting behind job "old"' "$(reason young)"
eligible=$(json "$M/jobs/old/status.json" 'd["eligible"]')
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
fusermount3 -u "$IT_MNT" 2>/dev/null
it_start "$ASCENDFS" "$W/aging.yaml" --state-dir "$W/aging-state" || { it_finish; exit 1; }
check_eq "after SIGKILL the job is eligible since the same time" "$eligible" \
	"$(json "$M/jobs/old/status.json" 'd["eligible"]')"
check_contains "... and still first in line" "first in line:" "$(reason old)"
# lo's age stops at 20 (520); hi's goes on: past 10 s of age the hi job is first, at a
# tick, with nothing else happening
check "the age stops at priority_weight_age: the hi job becomes first in line" \
	wait_until 20 young_first
echo cancel >"$M/jobs/blk/ctl"
check "the job first in line starts when the server frees" wait_until 10 grep -qx running "$M/jobs/young/status"
check_eq "... not the other" pending "$(state old)"
it_stop
it_finish
