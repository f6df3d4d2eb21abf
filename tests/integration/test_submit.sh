#!/usr/bin/env bash
# What a close of a spec file promises, through a real mount:
# - close() = 0 means the job exists: 32 concurrent submitters at 190 of 200 records
#   (max_job_count) get exactly 10 closes that return 0, each of them a submitted job,
#   and 22 that return EAGAIN, none of them a job (issue 15 item 1); what a close
#   accepted is submitted at release even when, before it, another user took the name
#   (mkdir: EBUSY) or an operator lowered the queue's quota (the job waits).
# Usage: test_submit.sh ASCENDFS SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
. "$SRC/tests/integration/lib.sh"

it_setup
M=$IT_MNT
W=$IT_WORK

CONFIG=$W/cluster.yaml
cat >"$CONFIG" <<EOF
cluster:
  name: submit-test
  scheduler_ip: 10.0.0.1
  stop_grace_period: 0
  max_job_count: 200
resource:
  total_npu: 8
  enable_quota_limit: true
queues:
  - name: default
  - name: capped
    quota_npus: 8
    may_borrow: false
servers:
  - name: n01
    host_ip: 10.0.0.2
    type: atlas800t-a2
    switch: leaf-1
EOF
it_start "$ASCENDFS" "$CONFIG" || exit 1

# ---- item 1: at max_job_count, a close that returned 0 is a job ----
# 190 records that stay: one running job and 189 pending ones (8 NPUs each, 8 in all)
for i in $(seq 1 190); do
	printf 'npus: 8\n' >"$M/jobs/fill-$i.yaml" || { not_ok "fill job $i submitted"; break; }
done
check_eq "190 records before the race" 190 "$(find "$M/jobs" -mindepth 1 -maxdepth 1 -type d | wc -l)"

# 32 processes, released at once, each open/write/close jobs/race-K.yaml; each reports
# "name errno" (0 = the close returned 0)
python3 - "$M" 32 >"$W/race" 2>&1 <<'PY'
import os, sys
m, n = sys.argv[1], int(sys.argv[2])
r, w = os.pipe()
kids = []
for k in range(n):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)  # every child waits here until the parent closes the pipe
        name = f"race-{k}"
        err = 0
        try:
            fd = os.open(f"{m}/jobs/{name}.yaml", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as e:
            os.write(1, f"{name} open {e.errno}\n".encode())  # one write: no interleaving
            os._exit(0)
        try:
            os.write(fd, b"npus: 8\n")
        except OSError as e:
            err = e.errno
        try:
            os.close(fd)
        except OSError as e:
            err = err or e.errno
        os.write(1, f"{name} close {err}\n".encode())
        os._exit(0)
    kids.append(pid)
os.close(r)
os.close(w)
for pid in kids:
    os.waitpid(pid, 0)
PY
accepted=$(awk '$2 == "close" && $3 == 0 { print $1 }' "$W/race" | sort)
refused=$(awk '!($2 == "close" && $3 == 0) { print $1 }' "$W/race" | sort)
check_eq "every submitter answered" 32 "$(wc -l <"$W/race")"
check_eq "exactly the 10 free records were promised" 10 "$(echo "$accepted" | grep -c .)"
check_eq "every refused close said EAGAIN ($(python3 -c 'import errno; print(errno.EAGAIN)'))" "" \
	"$(awk -v e="$(python3 -c 'import errno; print(errno.EAGAIN)')" \
		'!($2 == "close" && ($3 == 0 || $3 == e))' "$W/race")"
missing="" existing=""
for name in $accepted; do
	s=$(cat "$M/jobs/$name/status" 2>/dev/null)
	case $s in pending* | running*) ;; *) missing="$missing $name:${s:-absent}" ;; esac
done
check_eq "every close that returned 0 is a submitted job" "" "$missing"
for name in $refused; do
	[ -e "$M/jobs/$name" ] && existing="$existing $name"
done
check_eq "no refused close left a job" "" "$existing"
check_eq "max_job_count holds: 200 records" 200 \
	"$(find "$M/jobs" -mindepth 1 -maxdepth 1 -type d | wc -l)"


# what a close accepted is not refused at release: between a duplicate's close (which
# accepts) and the last close, another user's mkdir of the name, and a quota lowered
# below the job's size; prints each close's errno, then mkdir's
rmdir "$M"/jobs/race-* 2>/dev/null
python3 - "$M" <<'PY' >"$W/between" 2>&1
import os, subprocess, sys
m = sys.argv[1]
def between(name, spec, act):
    fd = os.open(f"{m}/jobs/{name}.yaml", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, spec)
    out = []
    try:
        os.close(os.dup(fd))  # a close that accepts: the name and a record are held
        out.append("0")
    except OSError as e:
        out.append(str(e.errno))
    out.append(act())
    try:
        os.close(fd)
        out.append("0")
    except OSError as e:
        out.append(str(e.errno))
    print(name, " ".join(out), flush=True)
def mkdir_as_stranger():
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "mkdir", f"{m}/jobs/taken"], capture_output=True, text=True)
    return "mkdir-ok" if p.returncode == 0 else "mkdir-refused:" + p.stderr.strip().split(": ")[-1].replace(" ", "_")
def lower_quota():
    with open(f"{m}/queues/capped/quota", "w") as f:
        f.write("4\n")
    return "quota-4"
between("taken", b"npus: 8\n", mkdir_as_stranger)
between("lowered", b"npus: 8\nqueue: capped\n", lower_quota)
PY
check_eq "a name held by an accepted close is refused to another user's mkdir" \
	"taken 0 mkdir-refused:Device_or_resource_busy 0" "$(grep '^taken' "$W/between")"
check_contains "and the close that returned 0 is that job, ours" "pending" \
	"$(cat "$M/jobs/taken/status" 2>&1)"
check_eq "the job is root's" 0 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["owner_uid"])' \
	"$M/jobs/taken/status.json" 2>&1)"
check_eq "a quota lowered between the accepting close and the last" "lowered 0 quota-4 0" \
	"$(grep '^lowered' "$W/between")"
check_contains "leaves the accepted job pending, not rejected" "pending" \
	"$(cat "$M/jobs/lowered/status" 2>&1)"
echo 8 >"$M/queues/capped/quota"

it_stop
it_finish
