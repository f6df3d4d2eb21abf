#!/usr/bin/env bash
# Cost of a close with many uploads open (issue 15 item 6): one client holds N specs of
# 60 KiB open for writing (N = 1, the reference, then 100, 300, 800) and closes them. Each spec is
# held through a second descriptor, so the first close of each is only the flush that
# stages it durably (before it returns); then the second closes send the releases that
# submit the jobs. Prints milliseconds per close for both phases and the ratio to N = 1
# measured in the same run; asserts nothing about time (style.md). On a daemon whose
# staging rewrote the whole staged table at every change, the per-close cost grew with N.
# "submit ms/upload" is from the first release sent to the last job visible.
# Then the latency of another user's reads while one client holds BENCH_UPLOADS_HELD
# (19,000) uploads open, against the same reads with none held.
# Usage: bench_uploads.sh ASCENDFS SRCDIR   (BENCH_UPLOADS="1 100 300 800")
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
COUNTS=${BENCH_UPLOADS:-1 100 300 800}
. "$SRC/tests/integration/lib.sh"
it_setup
cat >"$IT_WORK/uploads.py" <<'PY'
import os, sys, time
mnt, prefix, n, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# near the 64 KiB cap, as the specs that found it: a rewrite of every staged one at each
# close then costs N x 60 KiB, which shows
spec = b"npus: 1\npriority: 5\n# " + b"x" * 60000 + b"\n"
stage = submit = 0.0
for r in range(rounds):
    names = [f"{prefix}-{r}-{i}" for i in range(n)]
    fds = []
    for name in names:
        fd = os.open(f"{mnt}/jobs/{name}.yaml", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, spec)
        fds.append((fd, os.dup(fd)))
    t0 = time.monotonic()
    for fd, _ in fds:
        os.close(fd)   # flush: validated and staged (durable) before it returns
    t1 = time.monotonic()
    for _, keep in fds:
        os.close(keep) # the last close: its release submits the job
    # until every job is there (a lookup waits for a closing upload's release)
    for name in names:
        while not os.path.isdir(f"{mnt}/jobs/{name}"):
            time.sleep(0.001)
    t2 = time.monotonic()
    stage += t1 - t0
    submit += t2 - t1
print("%.3f %.3f" % (stage * 1e3 / (n * rounds), submit * 1e3 / (n * rounds)))
PY
it_start "$ASCENDFS" "$SRC/examples/ascend_cluster.yaml" >/dev/null || exit 1
printf '%-14s %16s %8s %17s %8s\n' "open uploads" "stage ms/close" "vs 1" "submit ms/upload" "vs 1"
ref_s="" ref_r=""
for n in $COUNTS; do
	# the reference (one open upload) is the mean of 50 rounds
	rounds=1
	[ "$n" = 1 ] && rounds=50
	read -r s r < <(python3 "$IT_WORK/uploads.py" "$IT_MNT" "u$n" "$n" "$rounds")
	[ -n "$ref_s" ] || { ref_s=$s; ref_r=$r; }
	awk -v n="$n" -v s="$s" -v r="$r" -v a="$ref_s" -v b="$ref_r" 'BEGIN {
		printf "%-14d %16.2f %7.1fx %17.2f %7.1fx\n", n, s, s / a, r, r / b }'
	# the submitted jobs go, so that every round starts from an empty cluster
	for d in "$IT_MNT"/jobs/u"$n"-*; do rmdir "$d" 2>/dev/null; done
done

# ---- another user's reads while one client holds many uploads open ------------------
# Each open by a user other than root is counted against that user's bound on open files;
# the count once walked every open file of everybody, so one client holding 19,000
# uploads made every other user's `cat` 7x slower. Reference: the same reads with none
# held, in the same run. Needs root (to hold that many) and setpriv.
HELD=${BENCH_UPLOADS_HELD:-19000}
READS=3000
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "# reads beside $HELD open uploads: skipped (needs root and setpriv)"
else
	it_python_as as_nobody
	cat >"$IT_WORK/hold.py" <<'PY'
import os, resource, sys
mnt, n = sys.argv[1], int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, n + 64))
fds = [os.open(f"{mnt}/jobs/held-{i}.yaml", os.O_WRONLY | os.O_CREAT, 0o644) for i in range(n)]
print(len(fds), flush=True)
sys.stdin.readline()
PY
	cat >"$IT_WORK/reads.py" <<'PY'
import os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
ts = []
for _ in range(n):
    t = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    while os.read(fd, 65536):
        pass
    os.close(fd)
    ts.append(time.perf_counter() - t)
ts.sort()
print("%.0f %.0f" % (ts[n // 2] * 1e6, ts[n * 99 // 100] * 1e6))
PY
	chmod 644 "$IT_WORK/reads.py"
	read -r p50_0 p99_0 < <(as_nobody "$PY" "$IT_WORK/reads.py" "$IT_MNT/cluster/status" "$READS")
	coproc HOLD { python3 "$IT_WORK/hold.py" "$IT_MNT" "$HELD"; }
	read -r -t 600 held <&"${HOLD[0]}"
	read -r p50_n p99_n < <(as_nobody "$PY" "$IT_WORK/reads.py" "$IT_MNT/cluster/status" "$READS")
	echo >&"${HOLD[1]}"
	wait "$HOLD_PID" 2>/dev/null
	printf '\nopen+read+close of cluster/status by uid 65534, %d times: us\n' "$READS"
	printf '%-34s %8s %8s\n' "" p50 p99
	printf '%-34s %8s %8s\n' "none held (reference)" "$p50_0" "$p99_0"
	printf '%-34s %8s %8s\n' "root holds ${held:-?} uploads open" "$p50_n" "$p99_n"
	awk -v a="$p50_0" -v b="$p50_n" 'BEGIN { if (a > 0) printf "p50 ratio: %.2fx\n", b / a }'
	# the held uploads' releases leave drafts, which the notifier announces: the unmount
	# waits until the daemon is idle again (less than 10 ms of CPU in a second)
	ticks() { awk '{ print $14 + $15 }' "/proc/$IT_PID/stat"; }
	for _ in $(seq 1 300); do
		t=$(ticks)
		sleep 1
		[ $((($(ticks) - t) * 1000 / $(getconf CLK_TCK))) -lt 10 ] && break
	done
fi
it_stop > >(grep -v '^ok ' >&2)
it_finish >/dev/null
