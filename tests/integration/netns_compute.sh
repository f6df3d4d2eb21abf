#!/bin/bash
# netns_compute.sh NODE HEAD_ADDR MOUNT WORK AGENT OPTS HOW: one compute server's processes,
# in its own network and mount namespaces; HOW "mount": mount(8) -t fuse.sshfs (sshfs
# goes to the background), "sshfs": sshfs -f with its messages in sshfs-NODE.log. TERM
# stops the agent (which stops its job processes), unmounts sshfs, and exits.
node=$1 head=$2 mnt=$3 work=$4 agent=$5 opts=$6 how=$7
hostname "host-$node" # its own UTS namespace: a host name of its own, as a server has
# This mount namespace began as a private copy of the host's mounts. A copy of an
# ascendfs mount keeps that file system alive after its daemon's fusermount3 -u in the
# host (another test's daemon, running meanwhile, would stop only through its mount
# watch). A compute server needs none of them (the head's own mount included).
awk '$3 == "fuse.ascendfs" { print $2 }' /proc/self/mounts | sort -r |
	while read -r m; do umount -l "$(printf '%b' "$m")" 2>/dev/null; done
sshfs_pid=""
if [ "$how" = mount ]; then
	mount -t fuse.sshfs -o "$opts" "root@$head:$mnt" "$mnt" >>"$work/sshfs-$node.log" 2>&1
else
	sshfs -f -F /dev/null -o "$opts" "root@$head:$mnt" "$mnt" >>"$work/sshfs-$node.log" 2>&1 &
	sshfs_pid=$!
fi
agent_pid=""
stop() {
	[ -n "$agent_pid" ] && kill -TERM "$agent_pid" 2>/dev/null && wait "$agent_pid"
	fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	if [ -n "$sshfs_pid" ]; then
		kill -TERM "$sshfs_pid" 2>/dev/null
		wait "$sshfs_pid"
	fi
	exit 0
}
trap stop TERM INT
for _ in $(seq 100); do
	awk -v m="$mnt" '$2 == m && $3 == "fuse.sshfs" { f = 1 } END { exit !f }' /proc/self/mounts && break
	sleep 0.1
done
"$agent" --mount "$mnt" --node "$node" --fault-file "$work/faults/$node" \
	--hccn-conf "$work/hccn-$node.conf" --log-dir "$work/logs/$node" \
	>>"$work/agent-$node.log" 2>&1 &
agent_pid=$!
while kill -0 "$agent_pid" 2>/dev/null; do wait "$agent_pid"; done
stop
