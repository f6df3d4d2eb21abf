#!/usr/bin/env bash
# Memory of open snapshots (issue 15 item 4): a read-only file holds the bytes rendered at
# open(), and an unprivileged user (setpriv, uid 65534) can open many. Here that user
# makes events (refused creates), then opens cluster/events N times, each right after a
# refusal of their own, so that no two opens see the same file. The daemon's VmRSS must
# grow by a few renders, not by N renders, must come back near where it was once the
# descriptors are closed, and every descriptor must still read its own snapshot. Then
# the per-user bound: past fs.h's FS_SNAPSHOTS_PER_USER open snapshots, open() fails with
# EMFILE for that user and for nobody else.
# Usage: test_snapshots.sh ASCENDFS SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
. "$SRC/tests/integration/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v python3 >/dev/null; then
	echo "SKIP: needs root, setpriv and python3"
	exit 77
fi
it_setup
M=$IT_MNT
W=$IT_WORK
STRANGER=65534
as_stranger() { setpriv --reuid=$STRANGER --regid=$STRANGER --clear-groups "$@"; }
PY=""
for c in "$(command -v python3)" /usr/bin/python3 /usr/local/bin/python3; do
	if [ -x "$c" ] && as_stranger "$c" -c pass 2>/dev/null; then
		PY=$c
		break
	fi
done
if [ -z "$PY" ]; then
	echo "SKIP: no python3 that uid $STRANGER may run"
	exit 77
fi

it_cluster_a2 "$W/c.yaml" 2 "fault_check_interval: 60"
it_start "$ASCENDFS" "$W/c.yaml" || { not_ok "daemon starts"; it_finish; exit 1; }

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$IT_PID/status"; }

# holder.py M FILL N: FILL refused creates, then N times: one refused create and one open
# of cluster/events, held. Prints "held <bytes of one render>", waits for a line, checks
# that descriptors read their own snapshots (each ending at the refusal before its open,
# an earlier one a prefix of a later one), closes them all and prints "closed <verdict>".
cat >"$W/holder.py" <<'PY'
import os, sys
m, fill, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def refuse(i):
    try:
        os.close(os.open("%s/jobs/Bad!%07d%s.yaml" % (m, i, "x" * 180),
                         os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError:
        pass
for i in range(fill):
    refuse(i)
fds, sizes = [], []
for i in range(n):
    refuse(fill + i)
    sizes.append(os.stat(m + "/cluster/events").st_size)
    fds.append(os.open(m + "/cluster/events", os.O_RDONLY))
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

# ---- 1. N opens after N changes cost about one render ---------------------------------
FILL=4000
N=1000
# one open, for the reference: the daemon's RSS with one snapshot held
coproc ONE { as_stranger "$PY" "$W/holder.py" "$M" "$FILL" 1; }
read -r -t 120 tag render <&"${ONE[0]}"
check_eq "uid $STRANGER made events and holds one snapshot" held "$tag"
rss_one=$(rss_kib)
echo >&"${ONE[1]}"
read -r -t 60 tag verdict <&"${ONE[0]}"
wait "$ONE_PID" 2>/dev/null
sleep 0.5
rss_base=$(rss_kib)
coproc MANY { as_stranger "$PY" "$W/holder.py" "$M" 0 "$N"; }
read -r -t 300 tag render <&"${MANY[0]}"
check_eq "uid $STRANGER holds $N snapshots of cluster/events" held "$tag"
rss_many=$(rss_kib)
echo >&"${MANY[1]}"
read -r -t 300 tag verdict <&"${MANY[0]}"
wait "$MANY_PID" 2>/dev/null
check_eq "each of the $N descriptors read its own snapshot" "closed ok" "$tag $verdict"
# memory goes back as the descriptors close: wait for it rather than sleeping a fixed time
render_kib=$((render / 1024))
back_ok() { [ "$(rss_kib)" -le $((rss_base + 2 * render_kib + 16384)) ]; }
wait_until 10 back_ok
rss_after=$(rss_kib)
echo "# cluster/events: $render bytes; VmRSS KiB: 1 open $rss_one, base $rss_base," \
	"$N opens $rss_many, after closing $rss_after"
bound=$((rss_base + 4 * render_kib + 32768))
if [ "$rss_many" -le "$bound" ]; then
	ok "$N open snapshots cost a few renders ($((rss_many - rss_base)) KiB, render $render_kib KiB)"
else
	not_ok "$N open snapshots cost a few renders" \
		"VmRSS grew by $((rss_many - rss_base)) KiB for a render of $render_kib KiB (bound $((bound - rss_base)) KiB)"
fi
if back_ok; then
	ok "VmRSS returns near its baseline after closing ($rss_after KiB, base $rss_base KiB)"
else
	not_ok "VmRSS returns near its baseline after closing" "base $rss_base KiB, after $rss_after KiB"
fi

it_stop
it_finish
