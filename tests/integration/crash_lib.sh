# Shared by the crash tests (test_crash.sh, test_failover.sh): a client that submits,
# cancels, removes and resubmits jobs, reports faults and sets a quota through the mount
# at $M, logging each operation to $ACK ("begin OP", then "ack OP" when the syscall
# succeeded or "fail OP"), and verify(), which compares the mounted state with that log.
# Needs $M, $ACK, $CHECK (check-ranktable) and $IT_WORK (lib.sh) set. CLIENT_FAULT_NODES
# (optional, space separated) names the servers whose NPUs the client reports faulty
# (default a2-node-01 to a2-node-16), so that a test can keep servers that run its own
# jobs out of it.

# Write standard input to file $1 and fail when close() does: a report or quota is
# applied, and made durable, at close. A shell's `echo > file` ignores close()'s result,
# so a daemon killed during that close would look like an acknowledgement.
put() {
	dd of="$1" status=none 2>/dev/null
}

# Submit spec $1 as $2 the way a threaded program may: a thread opens and writes it and
# exits, the main thread closes it; exits 0 when close() did (issue 15 item 2).
submit_from_thread() {
	python3 -c 'import os, sys, threading
src, dst, box = sys.argv[1], sys.argv[2], []
def opener():
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    box.append(fd)
    os.write(fd, open(src, "rb").read())
t = threading.Thread(target=opener)
t.start()
t.join()
os.close(box[0])' "$1" "$2"
}

cp_spec() { cp "$1" "$2"; }

# One client doing one operation at a time, logging "begin OP" before and "ack OP" (the
# syscall succeeded) or "fail OP" after. It never stops by itself.
client() {
	local round=$1 i=0 r name node npu q
	local sizes=(1 2 4 8 16) jobs=() gone=() keep=() x k how fnodes
	read -r -a fnodes <<<"${CLIENT_FAULT_NODES:-$(printf 'a2-node-%02d ' $(seq 1 16))}"
	while :; do
		i=$((i + 1))
		r=$RANDOM
		case $((r % 10)) in
		0 | 1 | 2 | 3 | 4)
			name=r$round-$i
			printf 'npus: %s\npriority: %s\n' "${sizes[$((r / 10 % 5))]}" $((r % 900 + 1)) \
				>"$IT_WORK/spec/$name.yaml"
			echo "begin submit $name" >>"$ACK"
			# one in five from a thread that has exited before the close
			how=cp_spec
			[ $((r / 4500 % 5)) = 0 ] && how=submit_from_thread
			if $how "$IT_WORK/spec/$name.yaml" "$M/jobs/$name.yaml" 2>/dev/null; then
				echo "ack submit $name" >>"$ACK"
				jobs+=("$name")
			else
				echo "fail submit $name" >>"$ACK"
			fi
			;;
		5)
			[ ${#jobs[@]} -gt 0 ] || continue
			name=${jobs[$((r % ${#jobs[@]}))]}
			echo "begin cancel $name" >>"$ACK"
			if sh -c "echo cancel > '$M/jobs/$name/ctl'" 2>/dev/null; then
				echo "ack cancel $name" >>"$ACK"
			else
				echo "fail cancel $name" >>"$ACK"
			fi
			;;
		6)
			# rmdir a job (an active one is cancelled first), or submit a removed
			# name again (a new job of an old name)
			if [ ${#gone[@]} -gt 0 ] && [ $((r / 10 % 3)) = 0 ]; then
				k=$((r / 30 % ${#gone[@]}))
				name=${gone[$k]}
				echo "begin submit $name" >>"$ACK"
				if cp "$IT_WORK/spec/$name.yaml" "$M/jobs/" 2>/dev/null; then
					echo "ack submit $name" >>"$ACK"
					jobs+=("$name")
					gone=("${gone[@]:0:k}" "${gone[@]:k+1}")
				else
					echo "fail submit $name" >>"$ACK"
				fi
			elif [ ${#jobs[@]} -gt 0 ]; then
				name=${jobs[$((r % ${#jobs[@]}))]}
				echo "begin remove $name" >>"$ACK"
				if rmdir "$M/jobs/$name" 2>/dev/null; then
					echo "ack remove $name" >>"$ACK"
					gone+=("$name")
					keep=()
					for x in "${jobs[@]}"; do [ "$x" = "$name" ] || keep+=("$x"); done
					jobs=("${keep[@]}")
				else
					echo "fail remove $name" >>"$ACK"
				fi
			fi
			;;
		7 | 8)
			node=${fnodes[$((r % ${#fnodes[@]}))]}
			npu=$((r / 16 % 8))
			echo "begin fault $node $npu" >>"$ACK"
			if echo "npu $npu Critical 0x80C98000 crash test" | put "$M/nodes/$node/health"; then
				echo "ack fault $node $npu" >>"$ACK"
			else
				echo "fail fault $node $npu" >>"$ACK"
			fi
			;;
		9)
			q=$((r % 65))
			echo "begin quota research $q" >>"$ACK"
			if echo "$q" | put "$M/queues/research/quota"; then
				echo "ack quota research $q" >>"$ACK"
			else
				echo "fail quota research $q" >>"$ACK"
			fi
			;;
		esac
	done
}

# Compare the mounted state with the log, and check that no NPU is held by two jobs (and
# cluster/status counts what they hold). Prints "checked N" on success.
verify() {
	python3 - "$M" "$ACK" "$CHECK" "$IT_WORK/last_seq" <<'PY'
import json, os, subprocess, sys, time
mnt, ack, check, seqfile = sys.argv[1:5]
acked, unsure = {}, {}       # op tuple -> True
order = []
for line in open(ack):
    w = line.split()
    if len(w) < 2:
        continue
    tag, op = w[0], tuple(w[1:])
    if tag == "begin":
        unsure[op] = True
    elif tag == "ack":
        unsure.pop(op, None)
        acked[op] = True
        order.append(op)
    elif tag == "fail":
        pass  # stays unsure: the daemon may have made it durable before dying
errors, checked = [], 0
def status(job):
    try:
        return open(f"{mnt}/jobs/{job}/status").read().strip()
    except FileNotFoundError:
        return None
words = {"draft", "pending", "running", "recovering", "stopping", "completed", "failed",
         "cancelled", "rejected", "timeout"}
jobs = sorted(os.listdir(f"{mnt}/jobs"))
for job in jobs:
    s = status(job)
    if s is None:
        continue  # an rmdir'd job whose stop ended after listdir: judged below, as absent
    if s not in words:
        errors.append(f"job {job}: status {s!r} is not a state")
    elif s in ("running",):
        r = subprocess.run([check, "--npus-per-server", "8", f"{mnt}/jobs/{job}/ranktable.json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            errors.append(f"job {job}: rank table refused: {r.stdout}{r.stderr}")
    if ("submit", job) not in acked and ("submit", job) not in unsure:
        errors.append(f"job {job} exists but was never submitted")
# Each job name's possible states after its operations in order: an acknowledged one
# applies, one that was not (in flight, or failed as the daemon died) may or may not.
def apply(op, st):
    if op == "submit":
        return "active"
    if op == "cancel":
        return "cancelled" if st == "active" else st
    return "absent"  # remove
names = {}
for line in open(ack):
    w = line.split()
    if len(w) == 3 and w[1] in ("submit", "cancel", "remove"):
        names.setdefault(w[2], []).append((w[0], w[1]))
for job, ops in names.items():
    possible = {"absent"}
    for i, (tag, op) in enumerate(ops):
        if tag == "begin":
            done = i + 1 < len(ops) and ops[i + 1] == ("ack", op)
            after = {apply(op, st) for st in possible}
            possible = after if done else possible | after
    def judged(s):
        return "absent" if s is None else "cancelled" if s == "cancelled" else \
            "rejected" if s in ("rejected", "draft") else "active"
    s = status(job)
    seen = judged(s)
    if s == "stopping":
        # a cancel or rmdir of a running job holds its NPUs, stopping, until its
        # processes are gone: acknowledged, but not yet at its end
        try:
            st = json.load(open(f"{mnt}/jobs/{job}/status.json"))
            if st.get("state") != "stopping":
                # the stop ended between the two reads (the first tick after a
                # restart ends overdue stops): judge where it ended
                seen = judged(st.get("state"))
            elif st.get("stop_removes"):
                seen = "absent"
            elif st.get("stop_to") == "cancelled":
                seen = "cancelled"
        except FileNotFoundError:
            seen = "absent"
    if seen not in possible:
        errors.append(f"job {job}: {seen} ({s}) after {ops}; expected one of {sorted(possible)}")
    checked += sum(1 for tag, _ in ops if tag == "ack")
for op in acked:
    kind = op[0]
    if kind == "fault":
        node, npu = op[1], op[2]
        line = [l for l in open(f"{mnt}/nodes/{node}/npus") if l.split()[0] == npu]
        if not line or "isolated" not in line[0]:
            errors.append(f"acknowledged fault of {node} NPU {npu} lost: {line}")
        checked += 1
# the quota is the last acknowledged value, or a later one that was in flight
quotas = [op for op in order if op[0] == "quota"]
if quotas:
    last = quotas[-1]
    allowed = {int(last[2])}
    after = False
    for line in open(ack):
        w = line.split()
        if tuple(w[1:]) == last and w[0] == "ack":
            after = True
        elif after and w[0] == "begin" and w[1] == "quota":
            allowed.add(int(w[3]))
    q = json.load(open(f"{mnt}/queues/research/status"))["quota_npus"]
    if q not in allowed:
        errors.append(f"queue research quota {q}, acknowledged {sorted(allowed)}")
    checked += 1
# the event sequence has no gap and never goes back
seqs = [json.loads(l)["seq"] for l in open(f"{mnt}/cluster/events")]
if any(b != a + 1 for a, b in zip(seqs, seqs[1:])):
    errors.append("cluster/events has a gap in its sequence")
last = int(open(seqfile).read()) if os.path.exists(seqfile) else 0
if seqs and seqs[-1] < last:
    errors.append(f"event sequence went back from {last} to {seqs[-1]}")
if seqs:
    open(seqfile, "w").write(str(seqs[-1]))
# no NPU is held by two jobs, and cluster/status counts what the jobs hold. Each file is
# read alone, so a stop that ends between two reads and gives its NPUs to a waiting job
# can look like a double hold: what persists over three reads, a second apart, is one.
def holds():
    held, total, found = {}, 0, []
    for job in sorted(os.listdir(f"{mnt}/jobs")):
        try:
            d = json.load(open(f"{mnt}/jobs/{job}/status.json"))
        except (FileNotFoundError, json.JSONDecodeError):
            continue
        for sl in d.get("placement") or []:
            for dev in sl["device_ids"]:
                key = (sl["server"], dev)
                if key in held:
                    found.append(f"NPU {dev} of {key[0]} held by {held[key]} and {job}")
                held[key] = job
                total += 1
    allocated = json.load(open(f"{mnt}/cluster/status"))["npus"]["allocated"]
    if allocated != total:
        found.append(f"cluster/status counts {allocated} NPUs allocated, the jobs hold {total}")
    return found
for attempt in range(3):
    found = holds()
    if not found:
        break
    time.sleep(1)
errors += found
checked += 1
for e in errors[:10]:
    print("#  ", e)
print(f"checked {checked}")
sys.exit(1 if errors else 0)
PY
}
