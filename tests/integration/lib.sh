# shellcheck shell=bash
# Helpers for integration tests that mount ascendfs. Source it; then call it_setup.
#
# Every wait has a deadline, and the EXIT trap unmounts and stops the daemon on every
# path, assertion failures included.

IT_PASS=0
IT_FAIL=0
IT_N=0
IT_WORK=""
IT_MNT=""
IT_LOG=""
IT_PID=""
IT_OTHER_PIDS="" # more daemons a test started (stopped ones too): killed at exit

ok() {
	IT_N=$((IT_N + 1))
	IT_PASS=$((IT_PASS + 1))
	printf 'ok %d - %s\n' "$IT_N" "$1"
}

not_ok() {
	IT_N=$((IT_N + 1))
	IT_FAIL=$((IT_FAIL + 1))
	printf 'not ok %d - %s\n' "$IT_N" "$1"
	[ $# -gt 1 ] && printf '#   %s\n' "${@:2}"
	return 0
}

# check DESC CMD...: passes when CMD exits 0
check() {
	local desc=$1
	shift
	local out
	if out=$("$@" 2>&1); then ok "$desc"; else not_ok "$desc" "command: $*" "output: ${out:0:600}"; fi
}

# check_fails DESC CMD...: passes when CMD exits non-zero
check_fails() {
	local desc=$1
	shift
	if "$@" >/dev/null 2>&1; then not_ok "$desc" "expected failure: $*"; else ok "$desc"; fi
}

# check_eq DESC EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "expected: ${2:0:400}" "actual:   ${3:0:400}"; fi
}

# check_contains DESC NEEDLE HAYSTACK
check_contains() {
	case $3 in
	*"$2"*) ok "$1" ;;
	*) not_ok "$1" "expected to contain: $2" "actual: ${3:0:600}" ;;
	esac
}

is_mounted() {
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

# answers PATH: does a live daemon answer for PATH? A GETATTR the kernel must send: the
# names and attributes it keeps (fs_lowlevel.c) answer a plain stat() on a dead mount too
answers() {
	stat --cached=never -c %F "$1" >/dev/null 2>&1
}

# wait_until SECONDS CMD...: poll every 50 ms
wait_until() {
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s%N)" -gt "$deadline" ] && return 1
		sleep 0.05
	done
	return 0
}

it_unmount() {
	local mnt=$1
	if is_mounted "$mnt"; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
		wait_until 10 bash -c "! awk -v m='$mnt' '\$2 == m { f = 1 } END { exit !f }' /proc/mounts"
	fi
}

# it_cgroup_kill DIR: kill every process of cgroup DIR and below (cgroup.kill, else one
# by one), wait for it to empty, and remove it and the cgroups below it
it_cgroup_kill() {
	local d=$1 f
	[ -d "$d" ] || return 0
	echo 1 >"$d/cgroup.kill" 2>/dev/null ||
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	wait_until 5 grep -q "populated 0" "$d/cgroup.events"
	find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	for f in 1 2 3; do [ -d "$d" ] && { sleep 0.2; find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; }; done
	[ ! -d "$d" ]
}

# it_cgroup_cleanup: the per-job cgroups that agents of this test's mount left where they
# put them by default (ascend-agent(8): <own cgroup>/node-<node>-<hash of --mount>)
it_cgroup_cleanup() {
	local mnt own h d
	[ -n "$IT_MNT" ] || return 0
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$mnt" ] || return 0
	own=$(sed -n 's/^0:://p' /proc/self/cgroup)
	compgen -G "$mnt${own%/}/node-*" >/dev/null || return 0
	h=$(python3 -c 'import sys
h = 2166136261
for b in sys.argv[1].encode(): h = ((h ^ b) * 16777619) & 0xffffffff
print("%08x" % h)' "$IT_MNT")
	for d in "$mnt${own%/}"/node-*-"$h"; do
		[ -d "$d" ] && it_cgroup_kill "$d"
	done
	return 0
}

it_cleanup() {
	local p
	set +e
	# first: a stopped daemon of these would keep its mount hanging
	for p in $IT_OTHER_PIDS; do
		kill -KILL "$p" 2>/dev/null
		kill -CONT "$p" 2>/dev/null
	done
	it_cgroup_cleanup
	[ -n "$IT_MNT" ] && it_unmount "$IT_MNT"
	if [ -n "$IT_PID" ] && kill -0 "$IT_PID" 2>/dev/null; then
		kill -TERM "$IT_PID" 2>/dev/null
		wait_until 10 bash -c "! kill -0 $IT_PID"
		kill -KILL "$IT_PID" 2>/dev/null
	fi
	if [ -n "$IT_WORK" ]; then
		# a test may have stacked another mount below the work dir: clean all of them
		awk -v w="$IT_WORK" 'index($2, w) == 1 { print $2 }' /proc/mounts | while read -r m; do
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m"
		done
		rm -rf "$IT_WORK"
	fi
}

# it_cluster_a2 FILE SERVERS [LINE...]: write a configuration of SERVERS Atlas 800T A2
# servers (8 NPUs each, node-01 ...) under leaf switches of 16 to FILE; each LINE (such as
# "fault_check_interval: 5") goes under cluster:
it_cluster_a2() {
	local file=$1 n=$2 s d
	shift 2
	{
		printf 'cluster:\n  name: bench-%d\n' $((n * 8))
		for d in "$@"; do printf '  %s\n' "$d"; done
		printf 'resource:\n  total_npu: %d\nservers:\n' $((n * 8))
		for s in $(seq 1 "$n"); do
			printf '  - name: node-%02d\n    host_ip: 10.1.%d.%d\n    type: atlas800t-a2\n' \
				"$s" $((s / 200)) $((s % 200 + 1))
			printf '    switch: leaf-%d\n    device_ips: [' $(((s - 1) / 16 + 1))
			for d in 0 1 2 3 4 5 6 7; do
				printf '%s10.30.%d.%d' "$([ $d = 0 ] || echo ', ')" "$d" "$s"
			done
			printf ']\n'
		done
	} >"$file"
}

# it_python_as RUNNER...: set PY to a python3 that the command prefix RUNNER (such as a
# setpriv wrapper) may run: root's may live under /root, out of other users' reach.
# Skips the test (77) when there is none.
it_python_as() {
	local c
	PY=""
	for c in "$(command -v python3)" /usr/bin/python3 /usr/local/bin/python3; do
		if [ -x "$c" ] && "$@" "$c" -c pass 2>/dev/null; then
			PY=$c
			return 0
		fi
	done
	echo "SKIP: no python3 that '$*' may run"
	exit 77
}

# it_kill_started LOG...: kill -KILL the process groups that agent logs say they started
# (lines "...: started pid N: ..."); a log that does not exist is skipped
it_kill_started() {
	local f pg
	for f in "$@"; do
		[ -f "$f" ] || continue
		sed -n 's/.*: started pid \([0-9]*\):.*/\1/p' "$f" | while read -r pg; do
			kill -KILL -- "-$pg" 2>/dev/null
		done
	done
}

# it_exec_wait PID: until the background job PID has become its program (a job started
# with & is a copy of this shell until its exec: a signal that reaches it before would
# run this shell's traps there, it_cleanup included)
it_exec_wait() {
	wait_until 10 bash -c "[ \"\$(readlink /proc/$1/exe)\" != \"$(readlink /proc/$$/exe)\" ]"
}

# it_etcd_start N: start an etcd cluster of N members (Debian's etcd-server) on free
# loopback ports, data under $IT_WORK/etcd; sets IT_ETCD_ENDPOINTS (comma separated) and
# IT_ETCD_PIDS; each member is killed by it_cleanup (IT_OTHER_PIDS). Skips (77) without
# etcd. Returns 1 when the cluster is not healthy within 30 s.
# Optional: IT_ETCD_ADDRS="A B C" gives each member an address of its own (ports 2379
# and 2380 on it; N is then their count) and IT_ETCD_NETNS the network namespace (`ip
# netns` name) the members run in (and the health check, and it_etcdctl).
it_etcd_start() {
	local n=$1 i ports initial="" name curl=() purl=() addrs=() wrap=()
	command -v etcd >/dev/null && command -v etcdctl >/dev/null ||
		{ echo "SKIP: needs etcd and etcdctl (Debian package etcd-server, etcd-client)"; exit 77; }
	if [ -n "${IT_ETCD_ADDRS:-}" ]; then
		read -r -a addrs <<<"$IT_ETCD_ADDRS"
		n=${#addrs[@]}
		for i in $(seq 0 $((n - 1))); do
			curl+=("http://${addrs[$i]}:2379")
			purl+=("http://${addrs[$i]}:2380")
		done
	else
		ports=$(python3 -c 'import socket, sys
s = []
for _ in range(2 * int(sys.argv[1])):
    k = socket.socket(); k.bind(("127.0.0.1", 0)); s.append(k)
print(" ".join(str(k.getsockname()[1]) for k in s))' "$n")
		read -r -a IT_ETCD_PORTS <<<"$ports"
		for i in $(seq 0 $((n - 1))); do
			curl+=("http://127.0.0.1:${IT_ETCD_PORTS[$((2 * i))]}")
			purl+=("http://127.0.0.1:${IT_ETCD_PORTS[$((2 * i + 1))]}")
		done
	fi
	IT_ETCD_ENDPOINTS=""
	for i in $(seq 0 $((n - 1))); do
		initial+="${initial:+,}e$i=${purl[$i]}"
		IT_ETCD_ENDPOINTS+="${IT_ETCD_ENDPOINTS:+,}${curl[$i]}"
	done
	IT_ETCD_PIDS=()
	# not through it_etcd_ns: $! must be etcd's pid, not a subshell's
	[ -n "${IT_ETCD_NETNS:-}" ] && wrap=(nsenter --net="/run/netns/$IT_ETCD_NETNS")
	for i in $(seq 0 $((n - 1))); do
		name=e$i
		"${wrap[@]}" etcd --name "$name" --data-dir "$IT_WORK/etcd/$name" \
			--listen-client-urls "${curl[$i]}" \
			--advertise-client-urls "${curl[$i]}" \
			--listen-peer-urls "${purl[$i]}" \
			--initial-advertise-peer-urls "${purl[$i]}" \
			--initial-cluster "$initial" --initial-cluster-token "$IT_WORK" \
			--heartbeat-interval 50 --election-timeout 500 \
			>>"$IT_WORK/etcd-$name.log" 2>&1 &
		IT_ETCD_PIDS+=("$!")
		IT_OTHER_PIDS="$IT_OTHER_PIDS $!"
		disown "$!" # killed by it_cleanup: no "Killed" line from this shell
	done
	wait_until 30 it_etcdctl endpoint health
}

# it_etcd_ns CMD...: CMD in the etcd members' network namespace (IT_ETCD_NETNS), if any
it_etcd_ns() {
	if [ -n "${IT_ETCD_NETNS:-}" ]; then
		nsenter --net="/run/netns/$IT_ETCD_NETNS" "$@"
	else
		"$@"
	fi
}

# it_etcdctl ARGS...: etcdctl on it_etcd_start's cluster
it_etcdctl() {
	it_etcd_ns etcdctl --endpoints="$IT_ETCD_ENDPOINTS" "$@"
}

# it_need_ssh_net PROGRAM...: the network-namespace tests' programs (the given ones, and
# sftp-server); sets SFTP_SERVER and SSHD. A missing one fails the test (exit 1): CI
# installs them (tests/install-deps.sh).
it_need_ssh_net() {
	local missing="" p
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || missing="$missing $p"
	done
	SFTP_SERVER=""
	for p in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server /usr/lib/ssh/sftp-server; do
		[ -x "$p" ] && SFTP_SERVER=$p && break
	done
	[ -n "$SFTP_SERVER" ] || missing="$missing sftp-server"
	if [ -n "$missing" ]; then
		echo "missing:$missing; install them with tests/install-deps.sh (iproute2, openssh-server, sshfs, etcd-server)"
		exit 1
	fi
	SSHD=$(command -v sshd || echo /usr/sbin/sshd)
}

# it_setup: skip (77) where FUSE cannot run; make a work dir and the EXIT trap
it_setup() {
	if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		echo "SKIP: needs /dev/fuse and fusermount3 (Debian package fuse3)"
		exit 77
	fi
	IT_WORK=$(mktemp -d /tmp/ascendfs-it.XXXXXX)
	chmod 755 "$IT_WORK"
	IT_MNT=$IT_WORK/mnt
	IT_LOG=$IT_WORK/daemon.log
	mkdir -p "$IT_MNT"
	trap it_cleanup EXIT
	trap 'exit 1' INT TERM
}

# it_start BINARY CONFIG [extra args]: start the daemon in the foreground, wait for it
it_start() {
	local bin=$1 config=$2
	shift 2
	# durable state in the work dir unless the test names its own
	case " $* " in
	*" --state-dir"*) ;;
	*) set -- --state-dir "$IT_WORK/state" "$@" ;;
	esac
	# IT_WRAP runs the daemon under a tool, e.g.
	#   IT_WRAP="valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99"
	# (its exit status and report then count in it_stop)
	# shellcheck disable=SC2086 # IT_WRAP is words on purpose
	${IT_WRAP:-} "$bin" -f -c "$config" "$@" "$IT_MNT" >>"$IT_LOG" 2>&1 &
	IT_PID=$!
	if ! wait_until 20 is_mounted "$IT_MNT"; then
		echo "# daemon did not mount within 20 s; log:"
		sed 's/^/#   /' "$IT_LOG"
		return 1
	fi
	wait_until 5 answers "$IT_MNT/jobs"
}

# it_stop: unmount, require exit status 0 and a log free of sanitizer reports
it_stop() {
	local status
	# one try, as a person would: the daemon's own announcements never make it EBUSY
	fusermount3 -u "$IT_MNT"
	if wait_until 30 bash -c "! kill -0 $IT_PID"; then
		wait "$IT_PID"
		status=$?
		IT_PID=""
		check_eq "daemon exits 0 after fusermount3 -u" 0 "$status"
	else
		# the evidence of a daemon that did not exit: is the mount still there, what
		# do its threads wait in, and what did it log last
		not_ok "daemon exits 0 after fusermount3 -u" "still running 30 s after it" \
			"mounted: $(is_mounted "$IT_MNT" && echo yes || echo no);" \
			"fusermount3 -u now says: $(fusermount3 -u "$IT_MNT" 2>&1 || true)" \
			"threads (name wchan): $(for t in /proc/"$IT_PID"/task/*; do
				printf '%s %s; ' "$(cat "$t/comm" 2>/dev/null)" "$(cat "$t/wchan" 2>/dev/null)"
			done)" \
			"processes with files in the mount: $(ls -l /proc/[0-9]*/fd /proc/[0-9]*/cwd 2>/dev/null |
				grep -c -- "$IT_MNT" || true)" \
			"daemon log, last lines: $(tail -n 8 "$IT_LOG" | tr '\n' '|')"
		# IT_PID stays set: it_cleanup still stops it
	fi
	if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer|definitely lost: [1-9]|ERROR SUMMARY: [1-9]' "$IT_LOG"; then
		not_ok "daemon log has no sanitizer report" "$(grep -m5 -E 'Sanitizer|runtime error' "$IT_LOG")"
	else
		ok "daemon log has no sanitizer report"
	fi
}

it_finish() {
	echo "# $IT_PASS passed, $IT_FAIL failed"
	[ "$IT_FAIL" -eq 0 ]
}
