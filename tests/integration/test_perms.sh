#!/usr/bin/env bash
# Permissions through a real mount, as a second, unprivileged user (setpriv, uid 65534):
# it reads everything, cannot change root's job (exact errno, job unchanged), cannot
# write node health, node or cluster ctl or a quota, and owns its own jobs. Then the same
# with the kernel's default_permissions left out (--no-default-permissions), so that the
# daemon's own checks answer: a refused job ctl line is a "refused" event of the job.
# Then cluster.operator_group: its members (supplementary or primary group) write node
# health, node and cluster ctl and quotas, which show as 0664 root:<group>; others still
# cannot. Then job caps: a stranger's spec over a queue's max_priority, max_npus or
# max_time_limit is refused at close with the reason, root's and an operator's are not.
# Then job-count limits: a stranger stops at max_job_count_per_user, root's cp still works.
# Usage: test_perms.sh ASCENDFS SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
. "$SRC/tests/integration/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v groupadd >/dev/null ||
	! command -v groupdel >/dev/null || ! command -v python3 >/dev/null; then
	echo "SKIP: needs root, setpriv, groupadd, groupdel and python3"
	exit 77
fi
it_setup
M=$IT_MNT
W=$IT_WORK

# the operator group, removed on every exit path
GROUP=""
trap '[ -n "$GROUP" ] && groupdel "$GROUP" 2>/dev/null; it_cleanup' EXIT
if ! groupadd "ascop$$" 2>/dev/null; then
	echo "SKIP: groupadd ascop$$ failed"
	exit 77
fi
GROUP="ascop$$"
GID=$(getent group "$GROUP" | cut -d: -f3)

STRANGER=65534
MEMBER=65533
as_stranger() { setpriv --reuid=$STRANGER --regid=$STRANGER --clear-groups "$@"; }
as_member() { setpriv --reuid=$MEMBER --regid=$MEMBER --groups="$GID" "$@"; }
as_primary_member() { setpriv --reuid=$MEMBER --regid="$GID" --clear-groups "$@"; }

# a python3 the other users may run (root's may live under /root)
it_python_as as_stranger

# fsop OP PATH [ARG]: do one thing with plain syscalls and print "ok" or
# "<step>:<ERRNO>", the step being open, write or close for writes
cat >"$W/fsop.py" <<'PY'
import errno, os, sys
op, path = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
step = op
try:
    if op == "write":  # as `echo ARG > PATH` does it
        step = "open"
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        step = "write"
        try:
            os.write(fd, (arg + "\n").encode())
        except OSError:
            os.close(fd)
            raise
        step = "close"
        os.close(fd)
    elif op == "create":
        step = "open"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        step = "write"
        os.write(fd, (arg + "\n").encode())
        step = "close"
        os.close(fd)
    elif op == "truncate":
        os.truncate(path, 0)
    elif op == "chmod":
        os.chmod(path, 0o666)
    elif op == "chown":
        os.chown(path, os.getuid(), os.getgid())
    elif op == "touch":
        os.utime(path, None)
    elif op == "utime":
        os.utime(path, (1, 1))
    elif op == "rename":
        os.rename(path, arg)
    elif op == "rmdir":
        os.rmdir(path)
    elif op == "unlink":
        os.unlink(path)
    elif op == "mkdir":
        os.mkdir(path)
    else:
        sys.exit("unknown op " + op)
    print("ok")
except OSError as e:
    print("%s:%s" % (step, errno.errorcode[e.errno]))
PY
chmod 644 "$W/fsop.py"
fsop() { "$PY" "$W/fsop.py" "$@"; }
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

make_config() { # make_config FILE [OPERATOR_GROUP]
	{
		cat <<EOF
cluster:
  name: perms-test
  scheduler_ip: 10.0.0.1
  fault_check_interval: 60      # no heartbeat expires during the test
EOF
		[ $# -gt 1 ] && echo "  operator_group: $2"
		cat <<EOF
resource:
  total_npu: 16
queues:
  - name: default
  - name: batch
    quota_npus: 8
servers:
EOF
		for i in 1 2; do
			printf '  - name: a2-node-%02d\n    host_ip: 10.0.1.%d\n' "$i" "$i"
			printf '    type: atlas800t-a2\n    switch: leaf-1\n'
		done
	} >"$1"
}
make_config "$W/plain.yaml"
make_config "$W/ops.yaml" "$GROUP"

ok_report() { { echo "node OK"; for d in 0 1 2 3 4 5 6 7; do echo "npu $d OK"; done; } >"$M/nodes/$1/health"; }
# what a job is: status, generation, events that are not "refused" (a refusal adds one)
job_fp() {
	printf '%s %s %s' "$(cat "$M/jobs/$1/status")" \
		"$(json "$M/jobs/$1/status.json" 'd["generation"]')" \
		"$(grep -vc '"kind":"refused"' "$M/jobs/$1/events")"
}
refused_count() { grep -c '"kind":"refused"' "$M/jobs/$1/events"; }
# what a server is: its health, its state, its cordon, and whether it reported recently
node_fp() {
	printf '%s|%s' "$(cat "$M/nodes/$1/health" | tr '\n' ' ')" \
		"$(json "$M/nodes/$1/info" '"%s %s" % (d["state"], d["schedulable"])')"
}
heartbeat_age() { json "$M/nodes/$1/info" 'd["heartbeat_age_sec"]'; }

# ---- 1. default_permissions, no operator group ---------------------------------------
it_start "$ASCENDFS" "$W/plain.yaml" || exit 1
ok_report a2-node-01
printf 'npus: 8\n' >"$W/rj.yaml"
cp "$W/rj.yaml" "$M/jobs/"
printf 'npus: 1\n' >"$W/rf.yaml"
cp "$W/rf.yaml" "$M/jobs/"
echo cancel >"$M/jobs/rf/ctl"
check_eq "root's job rj runs, rf is cancelled" "running cancelled" \
	"$(cat "$M/jobs/rj/status") $(cat "$M/jobs/rf/status")"

check_eq "the stranger reads every readable file" "" \
	"$(as_stranger bash -c 'find "$1" -type f | while read -r f; do cat "$f" >/dev/null 2>&1 || echo "$f"; done' _ "$M" 2>&1)"
check "and lists every directory" as_stranger ls -R "$M"
for f in cluster/ctl nodes/a2-node-01/health nodes/a2-node-01/ctl queues/batch/quota; do
	check_eq "$f is -rw-r--r-- root:root" "-rw-r--r-- root root" "$(stat -c '%A %U %G' "$M/$f")"
done

stranger_on_roots_job() { # stranger_on_roots_job CTL-ERRNO UNLINK-ERRNO MODE
	local fp verb
	fp=$(job_fp rj)
	for verb in cancel complete "checkpoint 100 /tmp/ckpt/rj-1_100.ckpt"; do
		check_eq "$3: a stranger's \"$verb\" on root's job: $1" "$1" \
			"$(as_stranger "$PY" "$W/fsop.py" write "$M/jobs/rj/ctl" "$verb")"
	done
	check_eq "$3: a stranger's rmdir of root's job: EPERM (sticky jobs/)" rmdir:EPERM \
		"$(as_stranger "$PY" "$W/fsop.py" rmdir "$M/jobs/rj")"
	check_eq "$3: a stranger's rename of root's job: EPERM" rename:EPERM \
		"$(as_stranger "$PY" "$W/fsop.py" rename "$M/jobs/rj" "$M/jobs/mine")"
	check_eq "$3: a stranger writing root's finished job's spec: EACCES" open:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/jobs/rf/spec" 'npus: 1')"
	check_eq "$3: a stranger replacing root's finished job: EPERM" open:EPERM \
		"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/rf.yaml" 'npus: 1')"
	check_eq "$3: a stranger submitting over root's active job: EEXIST" open:EEXIST \
		"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/rj.yaml" 'npus: 1')"
	check_eq "$3: truncate(2) of root's job ctl: EACCES" truncate:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" truncate "$M/jobs/rj/ctl")"
	check_eq "$3: chmod of root's job ctl: EPERM" chmod:EPERM \
		"$(as_stranger "$PY" "$W/fsop.py" chmod "$M/jobs/rj/ctl")"
	check_eq "$3: chown of root's job dir: EPERM" chown:EPERM \
		"$(as_stranger "$PY" "$W/fsop.py" chown "$M/jobs/rj")"
	check_eq "$3: touch of root's job ctl: EACCES" touch:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" touch "$M/jobs/rj/ctl")"
	check_eq "$3: setting root's job's times: EPERM" utime:EPERM \
		"$(as_stranger "$PY" "$W/fsop.py" utime "$M/jobs/rj/status")"
	check_eq "$3: unlink in root's job: $2" "$2" \
		"$(as_stranger "$PY" "$W/fsop.py" unlink "$M/jobs/rj/status")"
	check_eq "$3: root's job is unchanged (status, generation, events)" "$fp" "$(job_fp rj)"
	check_eq "$3: root's finished job too" "cancelled 0" \
		"$(cat "$M/jobs/rf/status") $(stat -c %u "$M/jobs/rf")"
}

stranger_on_cluster() { # stranger_on_cluster MODE: node health, ctl, quota: all EACCES at open
	local before01 before02 quota
	before01=$(node_fp a2-node-01)
	before02=$(node_fp a2-node-02)
	quota=$(cat "$M/queues/batch/quota")
	sleep 1.1 # a heartbeat now would show as an age below 1 s
	check_eq "$1: a stranger's health report: EACCES" open:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/nodes/a2-node-01/health" 'npu 3 Critical 0x80C98000 hbm')"
	check_eq "$1: on a server that never reported too" open:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/nodes/a2-node-02/health" 'node OK')"
	check_eq "$1: truncate(2) of node health: EACCES" truncate:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" truncate "$M/nodes/a2-node-01/health")"
	check_eq "$1: a stranger's cordon through node ctl: EACCES" open:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/nodes/a2-node-01/ctl" cordon)"
	check_eq "$1: a stranger's clear through node ctl: EACCES" open:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/nodes/a2-node-01/ctl" 'clear 0')"
	check_eq "$1: a stranger's cordon through cluster/ctl: EACCES" open:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/cluster/ctl" 'cordon a2-node-02')"
	check_eq "$1: a stranger's quota: EACCES" open:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/queues/batch/quota" 4)"
	check_eq "$1: truncate(2) of a quota: EACCES" truncate:EACCES \
		"$(as_stranger "$PY" "$W/fsop.py" truncate "$M/queues/batch/quota")"
	check_eq "$1: a2-node-01's health and state are unchanged" "$before01" "$(node_fp a2-node-01)"
	check_eq "$1: a2-node-02's too" "$before02" "$(node_fp a2-node-02)"
	check_eq "$1: no heartbeat from the stranger's report" 1 \
		"$(python3 -c 'import sys; print(int(float(sys.argv[1]) >= 1))' "$(heartbeat_age a2-node-01)")"
	check_eq "$1: the quota is unchanged" "$quota" "$(cat "$M/queues/batch/quota")"
}

stranger_own_job() { # stranger_own_job NAME MODE
	check_eq "$2: the stranger submits its own job" ok \
		"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/$1.yaml" 'npus: 1')"
	check_eq "$2: it runs and belongs to the stranger" "running $STRANGER" \
		"$(cat "$M/jobs/$1/status") $(stat -c %u "$M/jobs/$1")"
	check_eq "$2: the stranger cancels it" ok \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/jobs/$1/ctl" cancel)"
	check_eq "$2: cancelled" cancelled "$(cat "$M/jobs/$1/status")"
	check_eq "$2: 'complete' on its cancelled job: EBUSY" write:EBUSY \
		"$(as_stranger "$PY" "$W/fsop.py" write "$M/jobs/$1/ctl" complete)"
	check_contains "$2: the refused line is a refused event with the reason" \
		"job $1 is cancelled; \\\"complete\\\" needs an active job" \
		"$(grep '"kind":"refused"' "$M/jobs/$1/events")"
	check_eq "$2: the stranger removes its own job" ok \
		"$(as_stranger "$PY" "$W/fsop.py" rmdir "$M/jobs/$1")"
}

stranger_on_roots_job open:EACCES unlink:EACCES default_permissions
check_eq "default_permissions: the kernel refused at open, so no refused event" 0 "$(refused_count rj)"
stranger_on_cluster default_permissions
stranger_own_job nj1 default_permissions
it_stop

# ---- 2. the daemon's own checks (no default_permissions) -----------------------------
it_start "$ASCENDFS" "$W/plain.yaml" --no-default-permissions || exit 1
check_contains "no default_permissions on this mount" "fuse.ascendfs" "$(awk -v m="$M" '$2 == m' /proc/mounts)"
check_eq "default_permissions is off" "" "$(awk -v m="$M" '$2 == m && /default_permissions/' /proc/mounts)"
check_eq "root's jobs came back from the state dir" "running cancelled" \
	"$(cat "$M/jobs/rj/status") $(cat "$M/jobs/rf/status")"
stranger_on_roots_job write:EPERM unlink:EPERM daemon
check_eq "daemon: each refused line is a refused event of root's job" 3 "$(refused_count rj)"
check_contains "daemon: saying who may" \
	'job rj belongs to uid 0; uid 65534 may not \"cancel\" it (only its owner or root may)' \
	"$(grep '"kind":"refused"' "$M/jobs/rj/events")"
stranger_on_cluster daemon
stranger_own_job nj2 daemon
# chmod/chown of a spec being written: its writer's (cp -p), nobody else's
exec 3>"$M/jobs/up.yaml"
check_eq "daemon: a stranger's chmod of root's upload: EPERM" chmod:EPERM \
	"$(as_stranger "$PY" "$W/fsop.py" chmod "$M/jobs/up.yaml")"
check_eq "daemon: a stranger's touch of root's upload: EACCES" touch:EACCES \
	"$(as_stranger "$PY" "$W/fsop.py" touch "$M/jobs/up.yaml")"
check_eq "daemon: root's chmod of its upload is accepted" ok "$(fsop chmod "$M/jobs/up.yaml")"
printf 'npus: 1\n' >&3
exec 3>&-
check_eq "daemon: the upload is submitted as root's" "running 0" \
	"$(cat "$M/jobs/up/status") $(stat -c %u "$M/jobs/up")"
it_stop

# ---- 3. operator_group ---------------------------------------------------------------
it_start "$ASCENDFS" "$W/ops.yaml" || exit 1
check_contains "cluster/config shows operator_group" "operator_group: $GROUP" "$(cat "$M/cluster/config")"
for f in cluster/ctl nodes/a2-node-01/health nodes/a2-node-02/ctl queues/batch/quota; do
	check_eq "operator_group: $f is -rw-rw-r-- root:$GROUP" "-rw-rw-r-- root $GROUP" \
		"$(stat -c '%A %U %G' "$M/$f")"
done
check_contains "ls -l shows it" "-rw-rw-r-- 1 root $GROUP" "$(ls -l "$M/nodes/a2-node-02/health")"
check_eq "job files keep their owner's modes" "-rw-r--r-- root root" "$(stat -c '%A %U %G' "$M/jobs/rj/ctl")"

operator_checks() { # operator_checks MODE
	local q t0
	t0=$(date +%s.%N)
	check_eq "$1: a member writes a health report" ok \
		"$(as_member "$PY" "$W/fsop.py" write "$M/nodes/a2-node-02/health" 'node OK')"
	# the heartbeat is that write: younger than the time since just before it (however
	# slowly a loaded machine runs the test)
	check_eq "$1: it is the server's heartbeat" 1 \
		"$(python3 -c 'import sys, time; print(int(float(sys.argv[1]) <= time.time() - float(sys.argv[2]) + 0.05))' \
			"$(heartbeat_age a2-node-02)" "$t0")"
	check_eq "$1: a member cordons a server through node ctl" ok \
		"$(as_member "$PY" "$W/fsop.py" write "$M/nodes/a2-node-02/ctl" cordon)"
	check_eq "$1: it is cordoned" cordoned "$(json "$M/nodes/a2-node-02/info" 'd["state"]')"
	check_eq "$1: and uncordons it" ok \
		"$(as_member "$PY" "$W/fsop.py" write "$M/nodes/a2-node-02/ctl" uncordon)"
	check_eq "$1: it is not cordoned" ready "$(json "$M/nodes/a2-node-02/info" 'd["state"]')"
	check_eq "$1: a member cordons through cluster/ctl" ok \
		"$(as_member "$PY" "$W/fsop.py" write "$M/cluster/ctl" 'cordon a2-node-02')"
	check_eq "$1: cordoned" cordoned "$(json "$M/nodes/a2-node-02/info" 'd["state"]')"
	check_eq "$1: a member in the primary group uncordons" ok \
		"$(as_primary_member "$PY" "$W/fsop.py" write "$M/cluster/ctl" 'uncordon a2-node-02')"
	check_eq "$1: not cordoned" ready "$(json "$M/nodes/a2-node-02/info" 'd["state"]')"
	check_eq "$1: a member sets a quota" ok \
		"$(as_member "$PY" "$W/fsop.py" write "$M/queues/batch/quota" 12)"
	check_eq "$1: it reads back" 12 "$(cat "$M/queues/batch/quota")"
	check_eq "$1: a member in the primary group sets it back" ok \
		"$(as_primary_member "$PY" "$W/fsop.py" write "$M/queues/batch/quota" 8)"
	check_eq "$1: it reads back" 8 "$(cat "$M/queues/batch/quota")"
	check_eq "$1: a member still cannot cancel root's job" "$2" \
		"$(as_member "$PY" "$W/fsop.py" write "$M/jobs/rj/ctl" cancel)"
	check_eq "$1: which still runs" running "$(cat "$M/jobs/rj/status")"
	q=$(cat "$M/queues/batch/quota")
	for f in nodes/a2-node-02/health nodes/a2-node-02/ctl cluster/ctl queues/batch/quota; do
		check_eq "$1: a non-member still cannot write $f: EACCES" open:EACCES \
			"$(as_stranger "$PY" "$W/fsop.py" write "$M/$f" 'cordon a2-node-02')"
	done
	check_eq "$1: nothing changed" "ready $q" \
		"$(json "$M/nodes/a2-node-02/info" 'd["state"]') $(cat "$M/queues/batch/quota")"
}
operator_checks "operator_group" open:EACCES
it_stop

# ---- 4. operator_group, the daemon's own checks ----------------------------------------
it_start "$ASCENDFS" "$W/ops.yaml" --no-default-permissions || exit 1
operator_checks "operator_group, daemon" write:EPERM
it_stop

# ---- 5. an operator_group that does not resolve admits nobody ---------------------------
make_config "$W/nogroup.yaml" "ascop-none-$$"
it_start "$ASCENDFS" "$W/nogroup.yaml" || exit 1
check_eq "an unknown operator_group: the files stay -rw-r--r-- root:root" "-rw-r--r-- root root" \
	"$(stat -c '%A %U %G' "$M/nodes/a2-node-01/health")"
check_contains "and the daemon says so" "operator_group ascop-none-$$ is not a known group" "$(cat "$IT_LOG")"
check "root still writes health" ok_report a2-node-02
it_stop

# ---- 6. job caps (issue 14 item 1): a user cannot take the cluster ---------------------
# A queue's max_priority (default 900), max_npus and max_time_limit bound what a user
# may ask for; a spec over a cap is refused at close (EACCES) with the reason in
# jobs/<name>/error and nothing changes; root and operator_group members are exempt.
make_config "$W/caps.yaml" "$GROUP"
sed -i 's/^  - name: batch$/  - name: capped\n    max_priority: 500\n    max_npus: 8\n    max_time_limit: 1h\n  - name: batch/' "$W/caps.yaml"
it_start "$ASCENDFS" "$W/caps.yaml" || exit 1
fp=$(job_fp rj)
used=$(json "$M/queues/default/status" 'd["used_npus"]')
check_eq "caps: root's job rj runs" running "$(cat "$M/jobs/rj/status")"
check_eq "caps: a stranger's priority-1000 spec for the whole cluster: EACCES at close" \
	close:EACCES "$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/grab.yaml" "$(printf 'npus: 16\npriority: 1000')")"
check_eq "caps: it is rejected" rejected "$(cat "$M/jobs/grab/status")"
check_contains "caps: its error names the cap, the queue, the uid and who may exceed it" \
	"priority 1000 exceeds queue \"default\"'s max_priority 900 for uid $STRANGER (only root and members of operator_group \"$GROUP\" may exceed it); lower priority to at most 900 or ask an operator" \
	"$(cat "$M/jobs/grab/error")"
check_eq "caps: root's job is unchanged" "$fp" "$(job_fp rj)"
check_eq "caps: a stranger's 16 NPUs in queue capped (max_npus 8): EACCES" close:EACCES \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/wide.yaml" "$(printf 'npus: 16\nqueue: capped\npriority: low')")"
check_contains "caps: saying so" "npus 16 exceeds queue \"capped\"'s max_npus 8 for uid $STRANGER" \
	"$(cat "$M/jobs/wide/error")"
check_eq "caps: an elastic max over it too" close:EACCES \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/el.yaml" "$(printf 'npus: {min: 1, max: 16}\nqueue: capped')")"
check_eq "caps: a stranger's time_limit 2h in queue capped (max_time_limit 1h): EACCES" close:EACCES \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/long.yaml" "$(printf 'npus: 1\nqueue: capped\ntime_limit: 2h')")"
check_contains "caps: saying so" "time_limit 2h exceeds queue \"capped\"'s max_time_limit 1h" \
	"$(cat "$M/jobs/long/error")"
check_eq "caps: a draft filled over the cap: EACCES" "ok close:EACCES" \
	"$(as_stranger "$PY" "$W/fsop.py" mkdir "$M/jobs/dr") $(as_stranger "$PY" "$W/fsop.py" write "$M/jobs/dr/spec" "$(printf 'npus: 1\npriority: 1000')")"
check_eq "caps: it is rejected" rejected "$(cat "$M/jobs/dr/status")"
check_eq "caps: root's job still runs, no refused job holds NPUs" "$fp $used" \
	"$(job_fp rj) $(json "$M/queues/default/status" 'd["used_npus"]')"
check_eq "caps: a stranger's spec within the caps is accepted" ok \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/fine.yaml" "$(printf 'npus: 1\nqueue: capped')")"
check_contains "caps: and gets the queue's time limit (max_time_limit, no default_time_limit)" \
	"time_limit: 1h" "$(cat "$M/jobs/fine/spec")"
check_eq "caps: an operator may exceed the caps" ok \
	"$(as_member "$PY" "$W/fsop.py" create "$M/jobs/opjob.yaml" "$(printf 'npus: 1\nqueue: capped\npriority: 1000\ntime_limit: 3h')")"
check_eq "caps: root may too" ok \
	"$(fsop create "$M/jobs/rootjob.yaml" "$(printf 'npus: 1\nqueue: capped\npriority: 1000')")"
check_eq "caps: both are accepted" "running running" \
	"$(cat "$M/jobs/opjob/status") $(cat "$M/jobs/rootjob/status")"
check_eq "caps: queues/capped/status shows the caps" "500 8 3600 0" \
	"$(json "$M/queues/capped/status" '"%s %s %s %s" % (d["max_priority"], d["max_npus"], d["max_time_limit_sec"], d["default_time_limit_sec"])')"
check_contains "caps: cluster/config shows the cluster default" "  max_priority: 900" \
	"$(cat "$M/cluster/config")"
for j in fine opjob rootjob; do echo cancel >"$M/jobs/$j/ctl"; done
it_stop

# ---- 7. job-count limits (issue 15 item 5): one user cannot fill max_job_count ----------
# With max_job_count 40 and no other limit configured, a user holds at most 4 drafts and
# active jobs (max_job_count_per_user, a tenth); over it a spec fails at close and a
# mkdir fails (EAGAIN), nothing is recorded and cluster/events says why; finished jobs do
# not count; a queue's max_submit_jobs_per_user binds within it; root and operators are
# exempt. On main the user filled all 40 records and root's cp failed.
make_config "$W/limits.yaml" "$GROUP"
sed -i 's/^cluster:$/cluster:\n  max_job_count: 40/; s/^  - name: batch$/  - name: limited\n    max_submit_jobs_per_user: 1\n  - name: batch/' \
	"$W/limits.yaml"
it_start "$ASCENDFS" "$W/limits.yaml" --state-dir "$W/state-limits" || exit 1
cat >"$W/sweep.py" <<'PY'
import errno, os, sys
# create PREFIX0..PREFIX(N-1).yaml of one NPU each; print how many closes succeeded and
# the first failure as "<name>:<ERRNO>"
prefix, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    path = "%s%d.yaml" % (prefix, i)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"npus: 1\n")
    try:
        os.close(fd)
    except OSError as e:
        print(i, "%s:%s" % (os.path.basename(path), errno.errorcode[e.errno]))
        sys.exit(0)
print(n, "none")
PY
chmod 644 "$W/sweep.py"
check_eq "limits: a stranger's sweep of 40 specs stops at 4 (EAGAIN at the 5th close)" \
	"4 sw4.yaml:EAGAIN" "$(as_stranger "$PY" "$W/sweep.py" "$M/jobs/sw" 40)"
check_fails "limits: the refused spec left no record" test -e "$M/jobs/sw4"
check_contains "limits: cluster/events says why, naming the limit and the fix" \
	"job sw4 by uid $STRANGER not submitted: uid $STRANGER already has 4 drafts and active jobs, the cluster's max_job_count_per_user 4 (only root and members of operator_group \\\"$GROUP\\\" may exceed it); wait for some to end, cancel some or remove drafts you do not need (rmdir jobs/<name>; finished jobs do not count), or ask an operator" \
	"$(cat "$M/cluster/events")"
check_eq "limits: a draft is a record too: mkdir fails with EAGAIN" mkdir:EAGAIN \
	"$(as_stranger "$PY" "$W/fsop.py" mkdir "$M/jobs/swdraft")"
check_contains "limits: and says so" "mkdir jobs/swdraft by uid $STRANGER refused: uid $STRANGER already has 4" \
	"$(cat "$M/cluster/events")"
printf 'npus: 1\n' >"$W/root.yaml"
check "limits: root's cp still works after the user hit their limit" cp "$W/root.yaml" "$M/jobs/rootjob.yaml"
check_eq "limits: and root's job exists" running "$(cat "$M/jobs/rootjob/status" 2>&1)"
check_eq "limits: an operator's sweep is not bound by the per-user limit" "6 none" \
	"$(as_member "$PY" "$W/sweep.py" "$M/jobs/op" 6)"
echo cancel | as_stranger tee "$M/jobs/sw0/ctl" >/dev/null
check_eq "limits: a finished job does not count: the stranger submits again" ok \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/again.yaml" 'npus: 1')"
check_eq "limits: and is at the limit again" close:EAGAIN \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/more.yaml" 'npus: 1')"
check_eq "limits: its finished record stays readable" cancelled "$(cat "$M/jobs/sw0/status")"
for j in again sw1 sw2; do echo cancel >"$M/jobs/$j/ctl"; done
check_eq "limits: in queue limited (max_submit_jobs_per_user 1), a first job is accepted" ok \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/lim1.yaml" "$(printf 'npus: 1\nqueue: limited')")"
check_eq "limits: a second is refused at close" close:EAGAIN \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/lim2.yaml" "$(printf 'npus: 1\nqueue: limited')")"
check_contains "limits: naming the queue and the limit" \
	"uid $STRANGER already has 1 pending or running jobs in queue \\\"limited\\\", its max_submit_jobs_per_user 1" \
	"$(cat "$M/cluster/events")"
check_eq "limits: queues/limited/status shows the limits" "1 0" \
	"$(json "$M/queues/limited/status" '"%s %s" % (d["max_submit_jobs_per_user"], d["max_submit_jobs"])')"
check_contains "limits: cluster/config shows the effective cluster limits" \
	"  max_job_count: 40
  max_job_count_per_user: 4
  reserved_job_count: 2" "$(cat "$M/cluster/config")"
check_eq "limits: the stranger fills its share again" "2 none" \
	"$(as_stranger "$PY" "$W/sweep.py" "$M/jobs/fill" 2)"
it_stop
# a restart counts what it restored: the stranger is still at the limit, root is not
it_start "$ASCENDFS" "$W/limits.yaml" --state-dir "$W/state-limits" || exit 1
check_eq "limits: after a restart the stranger is still at the limit" close:EAGAIN \
	"$(as_stranger "$PY" "$W/fsop.py" create "$M/jobs/more.yaml" 'npus: 1')"
check "limits: and root's cp still works" cp "$W/root.yaml" "$M/jobs/rootjob2.yaml"
it_stop

it_finish
