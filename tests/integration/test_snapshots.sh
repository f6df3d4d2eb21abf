#!/usr/bin/env bash
# Memory of open snapshots (issue 15 item 4): a read-only file holds the bytes rendered at
# open(), and an unprivileged user (setpriv, uid 65534) can open many. Here that user
# makes events (refused creates), then opens cluster/events N times, each right after a
# refusal of their own, so that no two opens see the same file. The daemon's VmRSS must
# grow by a few renders, not by N renders, must come back near where it was once the
# descriptors are closed, and every descriptor must still read its own snapshot. The
# same for a job's events file, made by bogus lines in the job's own ctl. Then the
# per-user bound: past fs.h's FS_OPEN_FILES_PER_USER open snapshots (ctl files count too),
# open() fails with EMFILE for that user and for nobody else.
# Usage: test_snapshots.sh ASCENDFS SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
. "$SRC/tests/integration/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v python3 >/dev/null; then
	echo "SKIP: needs root, setpriv and python3"
	exit 77
fi
# under AddressSanitizer, freed memory waits in a quarantine (256 MiB) before it is
# reused or unmapped: without it, RSS measures the daemon's own frees here too
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
it_setup
M=$IT_MNT
W=$IT_WORK
STRANGER=65534
as_stranger() { setpriv --reuid=$STRANGER --regid=$STRANGER --clear-groups "$@"; }
it_python_as as_stranger

it_cluster_a2 "$W/c.yaml" 2 "fault_check_interval: 60"
# a RELEASE comes 300 ms after its close (one at a time), as on a loaded machine: what
# a close() that returned makes room for must not depend on when the release comes
export ASCENDFS_TEST_SLOW_RELEASE_MS=300
it_start "$ASCENDFS" "$W/c.yaml" || { not_ok "daemon starts"; it_finish; exit 1; }
unset ASCENDFS_TEST_SLOW_RELEASE_MS

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$IT_PID/status"; }

# holder.py M FILE HOW FILL N: FILL refusals, then N times: one refusal and one open of
# FILE (cluster/events, jobs/<job>/events), held. HOW "create" refuses a create in jobs/
# (a bad name), "ctl:<job>" a bogus line in that job's ctl. Prints "held <bytes of the
# last snapshot>", waits for a line, checks that descriptors read their own snapshots
# (each ending at the refusal before its open, an earlier one a prefix of a later one),
# closes them all and prints "closed <verdict>".
cat >"$W/holder.py" <<'PY'
import os, sys
m, target, how, fill, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
path = m + "/" + target
ctl = os.open("%s/jobs/%s/ctl" % (m, how[4:]), os.O_WRONLY) if how.startswith("ctl:") else -1
def refuse(i):
    try:
        if ctl >= 0:
            os.write(ctl, b"Bad!%07d%s\n" % (i, b"x" * 100))
        else:
            os.close(os.open("%s/jobs/Bad!%07d%s.yaml" % (m, i, "x" * 180),
                             os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError:
        pass
for i in range(fill):
    refuse(i)
fds, sizes = [], []
for i in range(n):
    refuse(fill + i)
    sizes.append(os.stat(path).st_size)
    fds.append(os.open(path, os.O_RDONLY))
print("held %d" % sizes[-1], flush=True)
sys.stdin.readline()
# a read of exactly its size is the whole snapshot (a read past its end would take newer
# lines: events files grow like `tail -f`)
verdict, prev = "ok", b""
for i in list(range(0, n, max(1, n // 10))) + [n - 1]:
    got = os.pread(fds[i], sizes[i], 0)
    if len(got) != sizes[i] or not got.endswith(b"\n"):
        verdict = "descriptor %d read %d bytes, not its %d" % (i, len(got), sizes[i])
    elif b"Bad!%07d" % (fill + i) not in got.splitlines()[-1]:
        verdict = "descriptor %d does not end at the refusal before its open" % i
    elif not got.startswith(prev):
        verdict = "descriptor %d does not start with the bytes of an earlier one" % i
    if verdict != "ok":
        break
    prev = got
for fd in fds:
    os.close(fd)
print("closed " + verdict, flush=True)
PY
chmod 644 "$W/holder.py"

# many_opens FILE HOW FILL N: the measurement, for one events file
many_opens() {
	local file=$1 how=$2 fill=$3 n=$4 tag render verdict rss_one rss_base rss_many rss_after
	local render_kib bound
	# one open, for the reference: the daemon's RSS with one snapshot held
	coproc ONE { as_stranger "$PY" "$W/holder.py" "$M" "$file" "$how" "$fill" 1; }
	read -r -t 120 tag render <&"${ONE[0]}"
	check_eq "uid $STRANGER made events and holds one snapshot of $file" held "$tag"
	rss_one=$(rss_kib)
	echo >&"${ONE[1]}"
	read -r -t 60 tag verdict <&"${ONE[0]}"
	wait "$ONE_PID" 2>/dev/null
	rss_base=$(rss_kib)
	coproc MANY { as_stranger "$PY" "$W/holder.py" "$M" "$file" "$how" 0 "$n"; }
	read -r -t 300 tag render <&"${MANY[0]}"
	check_eq "uid $STRANGER holds $n snapshots of $file" held "$tag"
	rss_many=$(rss_kib)
	echo >&"${MANY[1]}"
	read -r -t 300 tag verdict <&"${MANY[0]}"
	wait "$MANY_PID" 2>/dev/null
	check_eq "each of the $n descriptors of $file read its own snapshot" "closed ok" \
		"$tag $verdict"
	# memory goes back as the descriptors close: wait for it, not a fixed time
	render_kib=$((render / 1024))
	back_ok() { [ "$(rss_kib)" -le $((rss_base + 2 * render_kib + 16384)) ]; }
	wait_until 10 back_ok
	rss_after=$(rss_kib)
	echo "# $file: $render bytes; VmRSS KiB: 1 open $rss_one, then $rss_base;" \
		"$n opens $rss_many; after closing $rss_after"
	bound=$((rss_base + 4 * render_kib + 32768))
	if [ "$rss_many" -le "$bound" ]; then
		ok "$n open snapshots of $file cost a few renders ($((rss_many - rss_base)) KiB, render $render_kib KiB)"
	else
		not_ok "$n open snapshots of $file cost a few renders" \
			"VmRSS grew by $((rss_many - rss_base)) KiB for a render of $render_kib KiB (bound $((bound - rss_base)) KiB)"
	fi
	if back_ok; then
		ok "VmRSS returns near its baseline after closing $file ($rss_after KiB, then $rss_base KiB)"
	else
		not_ok "VmRSS returns near its baseline after closing $file" \
			"base $rss_base KiB, after $rss_after KiB"
	fi
}

# ---- 1. N opens of cluster/events after N changes cost about one render ---------------
many_opens cluster/events create 4000 1000

# ---- 2. the same for a job's events, made by bogus lines in its own ctl -----------------
check "uid $STRANGER makes a job directory" as_stranger mkdir "$M/jobs/mine"
many_opens jobs/mine/events ctl:mine 4000 1000

# ---- 3. the per-user bound: EMFILE past FS_OPEN_FILES_PER_USER, for that user alone ----
LIMIT=$(sed -n 's/^#define FS_OPEN_FILES_PER_USER \([0-9]*\).*/\1/p' "$SRC/fs/fs.h")
cat >"$W/limit.py" <<'PY'
import errno, os, resource, sys
path, limit, ctl = sys.argv[1], int(sys.argv[2]), sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and hard < limit + 64:
    print("skip: RLIMIT_NOFILE hard limit %d" % hard, flush=True)
    sys.exit(0)
resource.setrlimit(resource.RLIMIT_NOFILE, (limit + 64, hard))
fds = [os.open(path, os.O_RDONLY) for _ in range(limit)]
def one_more(p=path, flags=os.O_RDONLY):
    try:
        fds.append(os.open(p, flags))
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
first = one_more()
# a ctl file buffers a line: it counts with the snapshots
ctl_open = one_more(ctl, os.O_WRONLY)
print("held %d, one more: %s, a ctl file: %s" % (len(fds), first, ctl_open), flush=True)
sys.stdin.readline()
os.close(fds.pop())
print("after closing one: %s" % one_more(), flush=True)
for fd in fds:
    os.close(fd)
PY
chmod 644 "$W/limit.py"
if [ -z "$LIMIT" ]; then
	not_ok "FS_OPEN_FILES_PER_USER is in fs/fs.h"
else
	coproc LIM { as_stranger "$PY" "$W/limit.py" "$M/cluster/status" "$LIMIT" "$M/jobs/mine/ctl"; }
	read -r -t 120 line <&"${LIM[0]}"
	case $line in
	skip:*) echo "# $line: the per-user bound is not tried" ;;
	*)
		check_eq "uid $STRANGER holding $LIMIT snapshots opens no more" \
			"held $LIMIT, one more: EMFILE, a ctl file: EMFILE" "$line"
		check "root still opens cluster/status" cat "$M/cluster/status"
		check "another user still opens cluster/status" \
			setpriv --reuid=65533 --regid=65533 --clear-groups cat "$M/cluster/status"
		echo >&"${LIM[1]}"
		read -r -t 60 line <&"${LIM[0]}"
		check_eq "uid $STRANGER opens again after closing one" "after closing one: ok" "$line"
		;;
	esac
	wait "$LIM_PID" 2>/dev/null
fi

it_stop
it_finish
