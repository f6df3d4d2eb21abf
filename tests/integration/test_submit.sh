#!/usr/bin/env bash
# What a close of a spec file promises, through a real mount:
# - close() = 0 means the job exists: 32 concurrent submitters at 190 of 200 records
#   (max_job_count) get exactly 10 closes that return 0, each of them a submitted job,
#   and 22 that return EAGAIN, none of them a job (issue 15 item 1); what a close
#   accepted is submitted at release even when, before it, another user took the name
#   (mkdir: EBUSY) or an operator lowered the queue's quota (the job waits);
# - a resubmission right after a close sees the old job or a clean slot, never EBUSY or
#   ENOENT from the upload still being released: a rejected spec written twice in a row,
#   from the shell and from Python, 100 times each; the same for a job resubmitted at
#   once after cancel or rmdir, for a draft's spec, and for name.json after name.yaml
#   (issue 15 item 12);
# - a spec truncated to nothing after a close accepted it is refused at its last close.
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

# make room for the rest: drop the pending fillers and the race's jobs
for d in "$M"/jobs/fill-* "$M"/jobs/race-* "$M"/jobs/taken "$M"/jobs/lowered; do
	rmdir "$d" 2>/dev/null
done
wait_until 10 bash -c "[ \$(ls '$M/jobs' | wc -l) -eq 0 ]"
check_eq "the jobs are gone" "" "$(ls "$M/jobs")"

# ---- item 12: resubmission right after a close ----
# a spurious error is one from open (EBUSY, ENOENT): the spec itself is refused at close
# with EINVAL, which bash does not report for a redirection
spurious=0
for i in $(seq 1 100); do
	echo bad 2>>"$W/sh-errors" >"$M/jobs/x.yaml" || spurious=$((spurious + 1))
	echo bad 2>>"$W/sh-errors" >"$M/jobs/x.yaml" || spurious=$((spurious + 1))
done
check_eq "shell: 100 back-to-back rejected resubmissions open every time" 0 "$spurious"
check_eq "shell: no open error" "" "$(sort -u "$W/sh-errors" | head -3)"
check_contains "the job holds the last rejection" "rejected" "$(cat "$M/jobs/x/status")"

# Python: open/write/close twice per round; prints "<where> <errno>" per failure
py_resubmit() {
	python3 - "$@" <<'PY'
import errno, os, sys
m, mode = sys.argv[1], sys.argv[2]
bad = {}
def note(where, e):
    key = f"{where} {errno.errorcode.get(e.errno, e.errno)}"
    bad[key] = bad.get(key, 0) + 1
def write(path, data, expect_close):
    try:
        f = open(path, "w")
    except OSError as e:
        note("open", e)
        return False
    try:
        f.write(data)
        f.close()
    except OSError as e:
        if e.errno != expect_close:
            note("close", e)
    return True
for i in range(100):
    if mode == "rejected":
        write(f"{m}/jobs/x.yaml", "bad\n", errno.EINVAL)
        write(f"{m}/jobs/x.yaml", "bad\n", errno.EINVAL)
    elif mode == "ext":
        write(f"{m}/jobs/e.yaml", "bad\n", errno.EINVAL)
        write(f"{m}/jobs/e.json", '{"npus": "x"}\n', errno.EINVAL)
    elif mode == "cancel":
        write(f"{m}/jobs/c.yaml", "npus: 8\n", 0)
        write(f"{m}/jobs/c/ctl", "cancel\n", 0)
    elif mode == "rmdir":
        write(f"{m}/jobs/r.yaml", "npus: 8\n", 0)
        try:
            os.rmdir(f"{m}/jobs/r")
        except OSError as e:
            note("rmdir", e)
    elif mode == "draft":
        if i == 0:
            os.mkdir(f"{m}/jobs/d")
        write(f"{m}/jobs/d/spec", "bad\n", errno.EINVAL)
        write(f"{m}/jobs/d/spec", "bad\n", errno.EINVAL)
print(" ".join(f"{k}:{v}" for k, v in sorted(bad.items())))
PY
}
check_eq "python: 100 back-to-back rejected resubmissions, no spurious error" "" \
	"$(py_resubmit "$M" rejected)"
check_eq "python: name.json right after a rejected name.yaml, no spurious error" "" \
	"$(py_resubmit "$M" ext)"
check_eq "python: resubmission right after cancel, no spurious error" "" \
	"$(py_resubmit "$M" cancel)"
check_eq "python: resubmission right after rmdir, no spurious error" "" \
	"$(py_resubmit "$M" rmdir)"
check_eq "python: a draft's spec rewritten right after its rejection, no spurious error" "" \
	"$(py_resubmit "$M" draft)"

# ---- a spec emptied after a close accepted it: the close says EINVAL, no job ----
# A dup's close accepts the spec (a hold is taken); ftruncate(fd, 0) and the last close
# then submit nothing: that close fails with EINVAL and the record is the rejection
# "the spec is empty" (on the first version of the hold, the close returned 0 and the
# release recorded that rejection, so close() = 0 was not a job).
check_eq "an accepted spec truncated to nothing: its last close fails with EINVAL" "dup:0 last:EINVAL" \
	"$(python3 - "$M/jobs/emptied.yaml" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"npus: 1\n")
os.close(os.dup(fd))
out = ["dup:0"]
os.ftruncate(fd, 0)
try:
    os.close(fd)
    out.append("last:0")
except OSError as e:
    out.append("last:" + errno.errorcode[e.errno])
print(" ".join(out))
PY
)"
check_contains "and the job is the rejection of an empty spec" "spec is empty" \
	"$(cat "$M/jobs/emptied/status" "$M/jobs/emptied/error" 2>&1)"
check_eq "the name is free again: a spec written now is submitted" 0 \
	"$(rmdir "$M/jobs/emptied" && printf 'npus: 1\n' >"$M/jobs/emptied.yaml"; echo $?)"

# ---- a stat() right after the close sees the upload gone ----
# The kernel keeps a new upload's attributes from its CREATE (its open then needs no
# GETATTR), and its flush says they are stale: a spec closed with no write (no write
# made them stale either) is not there afterwards, whether or not it made a job.
check_eq "an upload closed without a write: stat() after the close says it is gone" \
	"during:0 after:ENOENT" "$(python3 - "$M/jobs/nowrite.yaml" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
out = ["during:%d" % os.stat(sys.argv[1]).st_size]
try:
    os.close(fd)
except OSError:
    pass
try:
    os.stat(sys.argv[1])
    out.append("after:present")
except OSError as e:
    out.append("after:" + errno.errorcode[e.errno])
print(" ".join(out))
PY
)"

# ---- an upload cut short by ftruncate(2) reads its new size, and submits that ----
# The size stat() gives an upload while it is written followed its writes but not a
# truncation: after ftruncate(fd, 8) of 28 bytes, stat() still said 28.
check_eq "ftruncate of an upload: stat() gives the new size, the close submits it" \
	"during:28 cut:8 close:0" "$(python3 - "$M/jobs/cut.yaml" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"npus: 1\n# some words to cut\n")
out = ["during:%d" % os.stat(sys.argv[1]).st_size]
os.ftruncate(fd, 8)
out.append("cut:%d" % os.stat(sys.argv[1]).st_size)
try:
    os.close(fd)
    out.append("close:0")
except OSError as e:
    out.append("close:" + errno.errorcode[e.errno])
print(" ".join(out))
PY
)"
check_contains "and the job is what was left: npus 1" "npus: 1" "$(cat "$M/jobs/cut/spec")"

# ---- a daemon started without -f (it daemonizes: fork) acknowledges closes too ----
# Threads do not survive fork(): a committer started before fuse_daemonize() was gone in
# the daemon, and every close of a spec waited for a commit that never came.
BG=$W/bg
mkdir -p "$BG/mnt"
"$ASCENDFS" -c "$CONFIG" --state-dir "$BG/state" "$BG/mnt" >"$BG/log" 2>&1
check_eq "started without -f, the daemon returns 0 once mounted" 0 $?
wait_until 10 is_mounted "$BG/mnt"
# (a writer stuck on the mount must not hold this script's pipes: output to files)
timeout -s KILL 10 sh -c "printf 'npus: 1\n' >'$BG/mnt/jobs/bg1.yaml'" </dev/null >/dev/null 2>&1
bg_close=$?
check_eq "and a durable close there returns within 10 s" 0 $bg_close
[ "$bg_close" = 0 ] && timeout -s KILL 5 cat "$BG/mnt/jobs/bg1/status" </dev/null >"$BG/status" 2>&1
check_eq "its job is running" "running" "$(cat "$BG/status")"
BG_PID=$(pgrep -f -- "--state-dir $BG/state $BG/mnt")
# a daemon that stopped answering must not keep the mount: abort its connection first
if [ "$bg_close" != 0 ]; then
	mi=$(awk -v m="$BG/mnt" '$5 == m { print $3 }' /proc/self/mountinfo | cut -d: -f2)
	[ -n "$mi" ] && echo 1 >"/sys/fs/fuse/connections/$mi/abort" 2>/dev/null
fi
fusermount3 -u "$BG/mnt" 2>/dev/null || umount -l "$BG/mnt"
wait_until 10 bash -c "! pgrep -f -- '--state-dir $BG/state $BG/mnt' >/dev/null"
[ -n "$BG_PID" ] && kill -KILL $BG_PID 2>/dev/null

it_stop
it_finish
