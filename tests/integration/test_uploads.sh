#!/usr/bin/env bash
# Specs open for writing (uploads), through a real mount.
#
# 1. Who stages at close (issue 15 item 2). A spec is submitted at its last release,
#    which the kernel sends after close() returned; the close of the process that opened
#    the file ("the opener", a thread group: any of its threads) stages what it accepted,
#    durably, so a daemon killed -9 before the release submits it on restart. A close by
#    another process holding a duplicate (a forked child, a receiver of SCM_RIGHTS)
#    stages nothing: in `{ cat a; echo b; } > x.yaml` that close is cat's and half of the
#    spec. Every scenario below keeps one descriptor open, so no release comes, and the
#    daemon is killed -9; after the restart each job is there or not, as documented.
# 2. Open uploads per user are bounded (issue 15 item 6): a user who is neither root nor
#    an operator holds at most cluster.max_uploads_per_user (200) specs open for
#    writing; the next create fails with EMFILE and says why in cluster/events, while
#    another user and root still submit, and a close makes room again.
#
# 3. Writers waiting for their batch to be durable leave the readers served (issue 16).
#
# 4. A stat of jobs/ while a request holds the daemon's lock (issue 16: such a GETATTR
#    may be answered from the last answer) still shows a change answered before it.
#
# Usage: test_uploads.sh ASCENDFS SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
. "$SRC/tests/integration/lib.sh"

if ! command -v python3 >/dev/null; then
	echo "SKIP: needs python3"
	exit 77
fi
it_setup
M=$IT_MNT
W=$IT_WORK
CONF=$SRC/examples/ascend_cluster.yaml

# hold.py SCENARIO PATH READY: write a spec to PATH the way SCENARIO says, touch READY
# once every close the scenario makes has returned, then hold the last descriptor (and
# any process holding it) until killed. Prints the failed step and errno on failure.
cat >"$W/hold.py" <<'PY'
import os, socket, sys, threading, time
scenario, path, ready = sys.argv[1:4]
spec = b"npus: 8\npriority: 7\n"

def done():
    open(ready, "w").close()
    while True:
        time.sleep(60)

def create():
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

if scenario == "thread":
    # opened and written by a thread that has exited before the main thread closes
    box = []
    t = threading.Thread(target=lambda: box.append(create()) or os.write(box[0], spec))
    t.start()
    t.join()
    fd = box[0]
    keep = os.dup(fd)
    os.close(fd)  # the opener's close (another thread of its process): staged
    done()
elif scenario == "dup":
    fd = create()
    os.write(fd, spec)
    keep = os.dup(fd)
    os.close(fd)  # the opener's close of one duplicate: staged
    done()
elif scenario == "fork-half":
    # `{ cat half; ... } > x`: a child writes a spec that parses, and closes; the
    # opener has not closed yet: nothing staged
    fd = create()
    pid = os.fork()
    if pid == 0:
        os.write(fd, b"npus: 8\n")
        os.close(fd)
        os._exit(0)
    os.waitpid(pid, 0)
    done()
elif scenario == "fork-whole":
    # the opener wrote it all; a child closes its copy first (validated, not staged),
    # then the opener closes one of its descriptors: staged
    fd = create()
    os.write(fd, spec)
    pid = os.fork()
    if pid == 0:
        os.close(fd)
        os._exit(0)
    os.waitpid(pid, 0)
    keep = os.dup(fd)
    os.close(fd)
    done()
elif scenario == "fork-holder":
    # the opener writes and closes while a forked child holds a copy: staged
    fd = create()
    os.write(fd, spec)
    pid = os.fork()
    if pid == 0:
        while True:
            time.sleep(60)
    os.close(fd)
    done()
elif scenario in ("scm-opener", "scm-receiver", "scm-late-opener"):
    # the descriptor goes to another process over a unix socket (SCM_RIGHTS)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        a.close()
        msg, fds, _, _ = socket.recv_fds(b, 16, 1)
        got = fds[0]
        if scenario != "scm-opener":
            b.recv(1)  # the opener's turn first
            # the receiver writes the spec and closes one duplicate: not the opener
            os.write(got, spec)
            keep = os.dup(got)
            os.close(got)
        b.send(b"k")
        while True:
            time.sleep(60)
    b.close()
    fd = create()
    if scenario == "scm-opener":
        os.write(fd, spec)
    socket.send_fds(a, [b"x"], [fd])
    if scenario != "scm-late-opener":
        # scm-opener: the opener's close while the receiver holds it: staged;
        # scm-receiver: before anything is written, nothing to stage, and the
        # receiver's close later is not the opener's
        os.close(fd)
    if scenario != "scm-opener":
        a.send(b"w")
    a.recv(1)
    if scenario == "scm-late-opener":
        # the opener closes after the receiver wrote: stages what the receiver's
        # close accepted
        os.close(fd)
    done()
else:
    sys.exit("unknown scenario " + scenario)
PY

it_start "$ASCENDFS" "$CONF" || { it_finish; exit 1; }

# ---- 1. who stages at close ----------------------------------------------------------
# scenario -> the job exists after kill -9 before the release (1) or not (0)
declare -A WANT=([thread]=1 [dup]=1 [fork-half]=0 [fork-whole]=1 [fork-holder]=1
	[scm-opener]=1 [scm-receiver]=0 [scm-late-opener]=1)
# specs submitted the ordinary way before: staged at close, unstaged at release
for i in 1 2 3 4 5; do
	printf 'npus: 1\n' >"$W/plain-$i.yaml"
	cp "$W/plain-$i.yaml" "$M/jobs/"
done
wait_until 10 test -d "$M/jobs/plain-5"
HOLDERS=()
for s in "${!WANT[@]}"; do
	setsid python3 "$W/hold.py" "$s" "$M/jobs/own-$s.yaml" "$W/ready-$s" \
		>"$W/hold-$s.out" 2>&1 &
	HOLDERS+=("$!")
done
for s in "${!WANT[@]}"; do
	wait_until 20 test -e "$W/ready-$s" ||
		not_ok "$s: the writer got through its closes" "$(cat "$W/hold-$s.out")"
done
kill -KILL "$IT_PID"
wait "$IT_PID" 2>/dev/null
IT_PID=""
# the holders and their children (each its own session) go before the restart
for p in "${HOLDERS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
for p in "${HOLDERS[@]}"; do wait "$p" 2>/dev/null; done
# from here on each RELEASE of a spec comes 300 ms after its close, as on a loaded
# machine: what a close() that returned promises must not depend on the release
export ASCENDFS_TEST_SLOW_RELEASE_MS=300
it_start "$ASCENDFS" "$CONF" || { it_finish; exit 1; }
unset ASCENDFS_TEST_SLOW_RELEASE_MS
for s in "${!WANT[@]}"; do
	if [ "${WANT[$s]}" = 1 ]; then
		# the whole spec (priority 7), admitted: pending or running
		check_eq "$s: the spec the opener's close accepted survives kill -9 before release" \
			"admitted 7" "$(sed 's/^pending$\|^running$/admitted/' "$M/jobs/own-$s/status" \
			2>&1) $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["priority"])' \
			"$M/jobs/own-$s/status.json" 2>&1 | tail -1)"
	else
		check_fails "$s: a close by a process that did not open the file stages nothing" \
			test -e "$M/jobs/own-$s"
	fi
done
n=0
for s in "${!WANT[@]}"; do n=$((n + WANT[$s])); done
check_contains "the restart found exactly the specs still staged (released ones unstaged)" \
	" $n staged uploads" "$(grep 'staged upload' "$IT_LOG" | tail -1)"
grep -q 'spec accepted before the restart' "$IT_LOG" &&
	ok "the log says staged specs were submitted at restart" ||
	not_ok "the log says staged specs were submitted at restart" "$(tail -5 "$IT_LOG")"

# ---- 2. open uploads per user are bounded ---------------------------------------------
# a python3 the other users may run (root's may live under /root)
PY=""
for c in "$(command -v python3)" /usr/bin/python3 /usr/local/bin/python3; do
	if [ -x "$c" ] && setpriv --reuid=65534 --regid=65534 --clear-groups "$c" -c pass \
		2>/dev/null; then
		PY=$c
		break
	fi
done
if [ "$(id -u)" != 0 ] || [ -z "$PY" ]; then
	echo "# SKIP part 2: needs root, setpriv and a python3 uid 65534 may run"
else
	mkdir -m 777 "$W/many"
	# many.py DIR COUNT: create COUNT uploads and hold them; print how the next create
	# ends; after DIR/go appears, five times close one and create one, print how each ends
	cat >"$W/many.py" <<'PY'
import errno, os, sys, time
mnt, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def create(name):
    try:
        return os.open(f"{mnt}/jobs/{name}.yaml", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), "ok"
    except OSError as e:
        return None, errno.errorcode[e.errno]
fds = []
for i in range(n):
    fd, how = create(f"many-{os.getuid()}-{i}")
    if fd is None:
        print(f"upload {i + 1} of {n}: {how}", flush=True)
        sys.exit(1)
    fds.append(fd)
fd, how = create(f"many-{os.getuid()}-over")
print(how, flush=True)
open(f"{d}/held", "w").close()
deadline = time.time() + 60
while not os.path.exists(f"{d}/go") and time.time() < deadline:
    time.sleep(0.05)
# five times over: each close makes room at once, whenever its RELEASE comes
hows = []
for k in range(5):
    os.close(fds.pop())
    fd, how = create(f"many-{os.getuid()}-again-{k}")
    hows.append(how)
    if fd is not None:
        fds.append(fd)
print(" ".join(hows), flush=True)
PY
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$W/many.py" "$M" "$W/many" 200 \
		>"$W/many.out" 2>&1 &
	MANY=$!
	wait_until 120 test -e "$W/many/held"
	check_eq "upload 201 of one user is refused with EMFILE" "EMFILE" "$(head -1 "$W/many.out")"
	check_contains "the refusal says why in cluster/events" "max_uploads_per_user" \
		"$(grep -a 'many-65534-over' "$M/cluster/events" | tail -1)"
	check_eq "another user still submits meanwhile" "ok" \
		"$(setpriv --reuid=65533 --regid=65533 --clear-groups sh -c \
			"echo 'npus: 8' > '$M/jobs/other-user.yaml' && echo ok" 2>&1)"
	check_eq "root still submits meanwhile" "ok" \
		"$(sh -c "echo 'npus: 8' > '$M/jobs/root-meanwhile.yaml' && echo ok" 2>&1)"
	echo 'npus: 1' >"$M/jobs/root-after-close.yaml"
	check_eq "right after the close, the listing has the job's directory" "root-after-close" \
		"$(ls "$M/jobs/" | grep -x 'root-after-close')"
	# the RELEASE that submits it comes 300 ms after the close: what is read right after
	# the close waits for it
	check_eq "right after the close, the job's status is readable" "admitted" \
		"$(sed 's/^pending$\|^running$/admitted/' "$M/jobs/root-after-close/status" 2>&1)"
	touch "$W/many/go"
	wait_until 60 bash -c "! kill -0 $MANY"
	wait "$MANY"
	check_eq "after each close the user may open one again at once" "ok ok ok ok ok" \
		"$(sed -n 2p "$W/many.out")"
	check_eq "the other user's job exists" "pending" "$(sed 's/running/pending/' \
		"$M/jobs/other-user/status" 2>&1)"
fi

it_stop

# ---- 3. writers waiting for a slow write leave the readers served ---------------------
# A request that changed state holds its FUSE thread until its batch is durable. With
# libfuse's 10 threads, 10 `cp`s waiting for a slow disk (here each batch's write waits
# 3 s: ASCENDFS_TEST_SLOW_COMMIT_MS) left no thread to answer anybody: a `cat` of the
# cluster's status waited for the disk too.
export ASCENDFS_TEST_SLOW_COMMIT_MS=3000
it_start "$ASCENDFS" "$CONF" --state-dir "$W/state-slow" || exit 1
unset ASCENDFS_TEST_SLOW_COMMIT_MS
printf 'npus: 1\n' >"$W/one.yaml"
CPS=""
for i in $(seq 16); do
	cp "$W/one.yaml" "$M/jobs/slow-disk-$i.yaml" 2>"$W/cp-$i.err" &
	CPS="$CPS $!"
done
# every cp is in its close by then, waiting for the write (a listing of jobs/ would
# wait for those closes itself: it shows what they submit)
sleep 1
t0=$(date +%s%N)
timeout -s KILL 20 cat "$M/cluster/status" >/dev/null
read_ms=$((($(date +%s%N) - t0) / 1000000))
check "a reader is answered while 16 submissions wait for the disk (took ${read_ms} ms)" \
	test "$read_ms" -lt 1500
failed=0
for p in $CPS; do wait "$p" || failed=$((failed + 1)); done
check_eq "and every cp that waited succeeded" 0 "$failed"
# (each is submitted at its release, which comes after the close and waits for the disk)
sixteen_jobs() { [ "$(ls -d "$M"/jobs/slow-disk-*/ 2>/dev/null | wc -l)" = 16 ]; }
check "their 16 jobs exist" wait_until 30 sixteen_jobs
it_stop

# ---- 4. jobs/'s attributes while another request holds the daemon's lock -------------
# A GETATTR of jobs/ that finds the daemon's lock taken may be answered from the last
# answer, unless something changed since: after a mkdir in jobs/, a stat of jobs/ while a
# health report holds the lock (300 ms here: ASCENDFS_TEST_LOCKED_HEALTH_MS) shows the
# mkdir's event time, not the time before it. (The notify helper's announcement of the
# mkdir, which would ask for jobs/'s attributes first, comes 2 s late:
# ASCENDFS_TEST_SLOW_HELPER_MS.)
export ASCENDFS_TEST_LOCKED_HEALTH_MS=300 ASCENDFS_TEST_SLOW_HELPER_MS=2000
it_start "$ASCENDFS" "$CONF" --state-dir "$W/state-locked" || exit 1
unset ASCENDFS_TEST_LOCKED_HEALTH_MS ASCENDFS_TEST_SLOW_HELPER_MS
mkdir "$M/jobs/locked-draft-0" # jobs/'s attributes are stale in the kernel: asked next
before=$(stat -c %.9Y "$M/jobs")
sleep 0.01
mkdir "$M/jobs/locked-draft-1"
echo "node OK" >"$M/nodes/a2-node-01/health" &
health_pid=$!
sleep 0.03 # its close holds the lock now
t0=$(date +%s%N)
after=$(stat -c %.9Y "$M/jobs")
stat_ms=$((($(date +%s%N) - t0) / 1000000))
wait "$health_pid"
check "a stat of jobs/ after a mkdir there, while a report holds the lock, shows the mkdir ($before, then $after, in $stat_ms ms)" \
	python3 -c 'import sys; sys.exit(float(sys.argv[2]) <= float(sys.argv[1]))' "$before" "$after"
it_stop
it_finish
