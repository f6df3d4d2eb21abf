#!/usr/bin/env bash
# `cat ranktable.json` of a 512-rank job through the mount vs the same bytes on tmpfs,
# measured in one run: in-process open+read+close (bench_read) and whole `cat`
# processes. With BENCH_FUSE_FLOOR (bench_fuse_floor.c), the same bytes through the least
# a FUSE file system can do (one OPEN round trip an open, bytes in the page cache) too:
# what no FUSE file system with a per-open answer does better on this machine.
# Prints figures and ratios; asserts nothing about time.
# Usage: bench_cat.sh ASCENDFS BENCH_READ SRCDIR [BENCH_FUSE_FLOOR]
set -u
ASCENDFS=$(realpath "$1")
BENCH_READ=$(realpath "$2")
SRC=$(realpath "$3")
FLOOR=${4:+$(realpath "$4")}
. "$SRC/tests/integration/lib.sh"
it_setup

# 64 Atlas 800T A2 servers (512 NPUs) under 4 leaf switches
CONFIG=$IT_WORK/cluster64.yaml
it_cluster_a2 "$CONFIG" 64
it_start "$ASCENDFS" "$CONFIG" || exit 1
printf 'npus: 512\nparallel: {tp: 8, pp: 8}\n' >"$IT_MNT/jobs/big512.yaml"
RT=$IT_MNT/jobs/big512/ranktable.json
if [ "$(cat "$IT_MNT/jobs/big512/status")" != running ]; then
	echo "the 512-rank job did not start: $(cat "$IT_MNT/jobs/big512/status.json")"
	exit 1
fi
TMPFS_DIR=/dev/shm
[ -d "$TMPFS_DIR" ] && [ -w "$TMPFS_DIR" ] || TMPFS_DIR=$IT_WORK
REF=$(mktemp "$TMPFS_DIR/ascendfs-bench.XXXXXX.json")
cat "$RT" >"$REF"

N=2000
read -r bytes_m p50_m p99_m mean_m < <("$BENCH_READ" "$RT" $N)
read -r bytes_t p50_t p99_t mean_t < <("$BENCH_READ" "$REF" $N)
p50_f=""
if [ -n "$FLOOR" ]; then
	mkdir -p "$IT_WORK/floor"
	"$FLOOR" "$REF" "$IT_WORK/floor" >>"$IT_LOG" 2>&1 &
	IT_OTHER_PIDS="$IT_OTHER_PIDS $!"
	if wait_until 10 test -s "$IT_WORK/floor/f"; then
		read -r bytes_f p50_f p99_f mean_f < <("$BENCH_READ" "$IT_WORK/floor/f" $N)
	fi
	it_unmount "$IT_WORK/floor"
fi
K=300
start=$(date +%s%N)
for _ in $(seq $K); do cat "$RT" >/dev/null; done
cat_m=$((($(date +%s%N) - start) / K / 1000))
start=$(date +%s%N)
for _ in $(seq $K); do cat "$REF" >/dev/null; done
cat_t=$((($(date +%s%N) - start) / K / 1000))
rm -f "$REF"

printf '\ncat ranktable.json of a 512-rank job (%s bytes), %d reads each\n' "$bytes_m" $N
printf '%-28s %10s %10s %10s\n' "" "p50 us" "p99 us" "mean us"
printf '%-28s %10s %10s %10s\n' "through the mount" "$p50_m" "$p99_m" "$mean_m"
printf '%-28s %10s %10s %10s\n' "same bytes on $TMPFS_DIR" "$p50_t" "$p99_t" "$mean_t"
[ -n "$p50_f" ] && printf '%-28s %10s %10s %10s\n' "same bytes, FUSE floor" "$p50_f" "$p99_f" "$mean_f"
awk -v a="$p50_m" -v b="$p50_t" -v c="$mean_m" -v d="$mean_t" \
	'BEGIN { printf "ratio mount/tmpfs: p50 %.2fx, mean %.2fx (open+read+close in one process)\n", a / b, c / d }'
[ -n "$p50_f" ] && awk -v a="$p50_f" -v b="$p50_t" -v c="$p50_m" \
	'BEGIN { printf "ratio FUSE floor/tmpfs: p50 %.2fx; mount/FUSE floor: p50 %.2fx\n", a / b, c / a }'
printf 'whole `cat` process, mean of %d: mount %d us, tmpfs %d us, ratio %s\n' $K "$cat_m" "$cat_t" \
	"$(awk -v a=$cat_m -v b=$cat_t 'BEGIN { printf "%.2fx", a / b }')"
[ "$bytes_m" = "$bytes_t" ] && ok "mount and tmpfs bytes are equal" || not_ok "mount and tmpfs bytes are equal"
if [ -n "$FLOOR" ]; then
	check_eq "FUSE floor and tmpfs bytes are equal" "$bytes_t" "${bytes_f:-}"
fi
it_stop
it_finish
