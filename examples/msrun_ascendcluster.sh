#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# msrun_ascendcluster.sh - start this server's part of an ascendfs job with msrun.
#
# Usage: msrun_ascendcluster.sh [--dry-run] JOB [SCRIPT [ARGS...]]
#
# Run it on every server of the job (by hand, over ssh, or from the node agent). It
#   1. waits until $ASCEND_MOUNT/jobs/JOB/status says "running" (at most
#      ASCEND_WAIT_SEC seconds, polling once a second; it gives up at once when the
#      job has completed, failed, been cancelled or been rejected);
#   2. sources $ASCEND_MOUNT/jobs/JOB/env (job-wide) and then
#      $ASCEND_MOUNT/jobs/JOB/hosts/$NODE.env (this server's part) with every
#      assignment exported: MS_WORKER_NUM, MS_LOCAL_WORKER, MS_SCHED_HOST,
#      MS_SCHED_PORT, MS_NODE_RANK, ASCEND_JOB_DIR, RANK_TABLE_FILE (rank-table
#      mode only), ASCEND_RT_VISIBLE_DEVICES,
#      HCCL_* ... and MSRUN_ARGS, the ready msrun options for this server, e.g.
#      "--worker_num=32 --local_worker_num=8 --master_addr=10.0.1.1
#       --master_port=8118 --node_rank=0 --log_dir=/ckpt/llama/logs --join=True";
#   3. replaces itself with: msrun $MSRUN_ARGS SCRIPT ARGS...
#
# MSRUN_ARGS is split into words on purpose: on blanks only, with no quote removal and
# no globbing (read -a, not eval), so its values cannot contain blanks. ascendfs
# writes one --option=value per word. SCRIPT and ARGS are passed on untouched.
#
# Options:
#   --dry-run   print the msrun command (shell-quoted) instead of running it
#   -h, --help  this text
#
# Environment:
#   ASCEND_MOUNT     where ascendfs is mounted (default /ascend)
#   NODE             this server's name in the job (default: hostname -s)
#   ASCEND_WAIT_SEC  how long to wait for "running" (default 600)
#
# Exit status: msrun's own once it runs; 1 when the job is missing, ends, never runs
# within the wait, or holds no part on this server; 2 on usage errors.
#
# Example (on each of the job's servers):
#   ./msrun_ascendcluster.sh llama70b train.py --config llama70b.yaml

set -euo pipefail

prog=${0##*/}
mount=${ASCEND_MOUNT:-/ascend}
wait_sec=${ASCEND_WAIT_SEC:-600}
dry_run=0

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

usage() {
	# the header comment, from its title line to the line before "set -euo"
	sed -n '4,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"
}

while [ $# -gt 0 ]; do
	case $1 in
	--dry-run) dry_run=1; shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) printf '%s: unknown option %s (see --help)\n' "$prog" "$1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ $# -lt 1 ]; then
	printf 'usage: %s [--dry-run] JOB [SCRIPT [ARGS...]]\n' "$prog" >&2
	exit 2
fi
job=$1
shift

# Job names follow the filesystem's rule; this also keeps "../" out of the paths.
if ! [[ $job =~ ^[a-z0-9][a-z0-9._-]{0,62}$ ]]; then
	printf '%s: "%s" is not a job name ([a-z0-9][a-z0-9._-]{0,62})\n' "$prog" "$job" >&2
	exit 2
fi
if ! [[ $wait_sec =~ ^[0-9]+$ ]]; then
	printf '%s: ASCEND_WAIT_SEC="%s" is not a number of seconds\n' "$prog" "$wait_sec" >&2
	exit 2
fi
node=${NODE:-$(hostname -s)}
if ! [[ $node =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
	printf '%s: NODE="%s" is not a server name\n' "$prog" "$node" >&2
	exit 2
fi

[ -d "$mount/jobs" ] ||
	die "$mount/jobs does not exist (is ascendfs mounted there? set ASCEND_MOUNT)"
job_dir=$mount/jobs/$job
[ -d "$job_dir" ] || die "no job \"$job\" in $mount/jobs (submit its spec first)"

# The reason a job ended, from its error file when it has one.
job_error() {
	local msg=""

	if [ -r "$job_dir/error" ]; then
		msg=$(head -c 1024 "$job_dir/error" 2>/dev/null || true)
	fi
	[ -n "$msg" ] && printf ': %s' "$msg"
	return 0
}

# 1. wait for "running"
deadline=$((SECONDS + wait_sec))
last=""
while :; do
	status=""
	if [ -r "$job_dir/status" ]; then
		read -r status <"$job_dir/status" || true
	fi
	case $status in
	running) break ;;
	completed | failed | cancelled | canceled | rejected)
		die "job $job is $status$(job_error)" ;;
	esac
	[ -d "$job_dir" ] || die "job $job disappeared while waiting for it to run"
	if [ "$status" != "$last" ]; then
		printf '%s: job %s is %s, waiting up to %ss for it to run\n' \
			"$prog" "$job" "${status:-without a status}" "$((deadline - SECONDS))" >&2
		last=$status
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		die "job $job is still ${status:-without a status} after ${wait_sec}s (see $job_dir/status.json)"
	fi
	sleep 1
done

# 2. this server's part
host_env=$job_dir/hosts/$node.env
if [ ! -r "$host_env" ]; then
	servers=""
	for f in "$job_dir"/hosts/*.env; do
		[ -e "$f" ] || continue
		f=${f##*/}
		servers+="${servers:+ }${f%.env}"
	done
	die "server $node holds no part of job $job; its servers are: ${servers:-none} (run this there, or set NODE)"
fi
[ -r "$job_dir/env" ] || die "$job_dir/env is missing"

set -a
# shellcheck source=/dev/null
. "$job_dir/env"
# shellcheck source=/dev/null
. "$host_env"
set +a

# 3. msrun; MSRUN_ARGS split on blanks, deliberately (see the header)
msrun_args=()
IFS=$' \t\n' read -r -a msrun_args <<<"${MSRUN_ARGS:-}" || true
[ "${#msrun_args[@]}" -gt 0 ] || die "$host_env does not set MSRUN_ARGS"

if [ "$dry_run" -eq 1 ]; then
	printf '%q' msrun
	printf ' %q' "${msrun_args[@]}" "$@"
	printf '\n'
	exit 0
fi
command -v msrun >/dev/null 2>&1 ||
	die "msrun is not in PATH (activate the MindSpore environment on $node)"
exec msrun "${msrun_args[@]}" "$@"
