#!/usr/bin/env bash
# Build ascendfs, mount the embedded example cluster (16 Atlas 800T A2 servers,
# 128 NPUs, examples/ascend_cluster.yaml) and run the main job on it: the 70B
# pre-training spec on 32 NPUs. The daemon keeps running so you can go on with
# cat/cp/echo; `fusermount3 -u MOUNTPOINT` stops it.
#
# Usage: examples/quickstart.sh [MOUNTPOINT]     (as root; default /ascend)
set -euo pipefail
cd "$(dirname "$0")/.."
MNT=${1:-/ascend}
JOB=llama70b-pretrain

tests/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
echo "built: build/fs/ascendfs ($(build/fs/ascendfs --version))"

mkdir -p "$MNT"
if awk -v m="$(realpath "$MNT")" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; then
	echo "$MNT is mounted already; unmounting it to start afresh"
	fusermount3 -u "$MNT"
	sleep 0.5
fi
LOG=$PWD/build/ascendfs.log
# durable state (SQLite) lives here; a fresh one each run, so the demo starts empty
STATE=$PWD/build/quickstart-state
rm -rf "$STATE"
nohup build/fs/ascendfs -f -c examples/ascend_cluster.yaml --state-dir "$STATE" "$MNT" >"$LOG" 2>&1 &
for _ in $(seq 100); do
	[ -d "$MNT/jobs" ] && break
	sleep 0.1
done
[ -d "$MNT/jobs" ] || { echo "ascendfs did not mount; see $LOG" >&2; cat "$LOG" >&2; exit 1; }
echo "mounted the example cluster at $MNT (daemon pid $!, log $LOG)"

run() { printf '\n$ %s\n' "$*"; "$@"; }
run cp "examples/jobs/$JOB.yaml" "$MNT/jobs/"
run cat "$MNT/jobs/$JOB/status"
run build/tests/unit/check-ranktable --npus-per-server 8 --completed --ranks 32 "$MNT/jobs/$JOB/ranktable.json"
printf '\n$ head -n 16 %s\n' "$MNT/jobs/$JOB/ranktable.json"
head -n 16 "$MNT/jobs/$JOB/ranktable.json"
run cat "$MNT/jobs/$JOB/env"
run ls "$MNT/jobs/$JOB/hosts"
HOST=$(ls "$MNT/jobs/$JOB/hosts" | head -n 1)
run grep -E 'MS_NODE_RANK|MS_LOCAL_WORKER|ASCEND_RT_VISIBLE_DEVICES|MSRUN_ARGS' "$MNT/jobs/$JOB/hosts/$HOST"
run env ASCEND_MOUNT="$MNT" NODE="${HOST%.env}" examples/msrun_ascendcluster.sh --dry-run "$JOB" train.py

cat <<EOT

The job is placed. Try:
  cat $MNT/cluster/status                     # NPUs total/allocated/free, jobs by state
  cat $MNT/nodes/${HOST%.env}/npus            # which job and rank holds each NPU
  echo 'npus: 12' > $MNT/jobs/bad.yaml; cat $MNT/jobs/bad/error
  echo cancel > $MNT/jobs/$JOB/ctl            # frees its 32 NPUs
  fusermount3 -u $MNT                         # stop the daemon
EOT
