#!/usr/bin/env bash
# Cost of a close with many uploads open (issue 15 item 6): one client holds N specs of
# 60 KiB open for writing (N = 1, the reference, then 100, 300, 800) and closes them. Each spec is
# held through a second descriptor, so the first close of each is only the flush that
# stages it durably (before it returns); then the second closes send the releases that
# submit the jobs. Prints milliseconds per close for both phases and the ratio to N = 1
# measured in the same run; asserts nothing about time (style.md). On a daemon whose
# staging rewrote the whole staged table at every change, the per-close cost grew with N.
# "submit ms/upload" is from the first release sent to the last job visible.
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
it_stop >/dev/null
it_finish >/dev/null
