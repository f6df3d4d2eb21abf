#!/usr/bin/env bash
# The monitoring panel (issue 19, part 2): `ascendfs --http` serves one page at "/" that
# a real browser (Debian's chromium, headless) loads against a live daemon with running,
# pending and faulted jobs and a job with two generations; the numbers it shows are
# those of cluster/status, the heatmap has a cell per NPU in its state, the pending
# reason, the fault's event and the job's generations are on it, and nothing but the
# daemon's own API was fetched. A screenshot is kept as the test's artifact.
# Usage: test_panel.sh ASCENDFS SRCDIR ARTIFACT_DIR
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
ART=$3
. "$SRC/tests/integration/lib.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	echo "SKIP: needs chromium (Debian package chromium; tests/install-deps.sh installs it)"
	exit 77
fi
it_setup
M=$IT_MNT
W=$IT_WORK
# the example cluster, its heartbeat timeout long enough that the servers reported by
# hand stay ready while the browser reads (a loaded machine takes its time)
CONFIG=$W/cluster.yaml
sed 's/^  heartbeat_timeout: 15 .*/  heartbeat_timeout: 600/' "$SRC/examples/ascend_cluster.yaml" >"$CONFIG"
grep -q '^  heartbeat_timeout: 600$' "$CONFIG" || { echo "could not derive the test config"; exit 1; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# browser URL OUT...: chromium, headless, its own profile in the work dir, the page given
# 6 s of its (virtual) time to fetch and draw
browser() {
	local url=$1
	shift
	timeout 90 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
		--no-first-run --disable-extensions --user-data-dir="$W/chromium" \
		--window-size=1400,1600 --virtual-time-budget=6000 "$@" "$url" 2>>"$W/chromium.log"
}

PORT=$(free_port)
it_start "$ASCENDFS" "$CONFIG" --http "127.0.0.1:$PORT" || exit 1
# running, pending and faulted: two jobs run, one waits for the whole cluster, an NPU
# of a2-node-05 is Critical (isolated), and llama's first server fails (generation 2)
check "a 16-NPU job" sh -c "printf 'npus: 16\n' > '$M/jobs/llama.yaml'"
check "an 8-NPU job" sh -c "printf 'npus: 8\n' > '$M/jobs/small.yaml'"
check "a job for the whole cluster (pending)" sh -c "printf 'npus: 128\n' > '$M/jobs/huge.yaml'"
check "an NPU fault on a2-node-05" sh -c \
	"printf 'node OK\nnpu 3 Critical 0x80C98000 HBM ECC\n' > '$M/nodes/a2-node-05/health'"
LSERVER=$(json "$M/jobs/llama/status.json" 'd["placement"][0]["server"]')
check "a fault on llama's server $LSERVER" sh -c \
	"printf 'node OK\nnpu 0 Critical 0x80C98000 HBM ECC\n' > '$M/nodes/$LSERVER/health'"
check_eq "llama runs again, generation 2" "running 2" \
	"$(cat "$M/jobs/llama/status") $(json "$M/jobs/llama/status.json" 'd["generation"]')"
check_eq "huge is pending" pending "$(cat "$M/jobs/huge/status")"
check "a job that ran and ended" sh -c "printf 'npus: 1\n' > '$M/jobs/done.yaml' && echo cancel > '$M/jobs/done/ctl'"

# the page, as a browser shows it once its scripts ran
if browser "http://127.0.0.1:$PORT/#job=llama" --dump-dom >"$W/dom.html"; then
	ok "chromium loads the panel"
else
	not_ok "chromium loads the panel" "$(tail -n 5 "$W/chromium.log")"
fi
cp "$M/cluster/status" "$W/status.json"
python3 - "$W/dom.html" "$W/status.json" "$M/cluster/topology.json" >"$W/compare.txt" <<'PY'
import html.parser, json, sys

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.fields, self.cells, self.gens, self.stack, self.text = {}, {}, [], [], []
        self.ended = []
        self.loaded = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.loaded = a.get("data-loaded")
        if "data-npu" in a:
            self.cells[a["data-npu"]] = a.get("data-state")
        if "data-ended" in a:
            self.ended.append(a["data-ended"])
        if "data-generation" in a:
            self.gens.append((a["data-generation"], a.get("data-state")))
        self.stack.append(a.get("data-field"))
    def handle_endtag(self, tag):
        if self.stack:
            f = self.stack.pop()
            if f:
                self.fields[f] = self.fields.get(f, "")
    def handle_data(self, data):
        self.text.append(data)
        if self.stack and self.stack[-1]:
            self.fields[self.stack[-1]] = self.fields.get(self.stack[-1], "") + data

p = Page()
p.feed(open(sys.argv[1]).read())
st = json.load(open(sys.argv[2]))
topo = json.load(open(sys.argv[3]))
bad = []
if p.loaded != "1":
    bad.append("the page did not finish loading (data-loaded=%s)" % p.loaded)
for k in ("total", "allocated", "free", "isolated", "unavailable"):
    if p.fields.get("npus." + k) != str(st["npus"][k]):
        bad.append("npus.%s: page %s, cluster/status %s" % (k, p.fields.get("npus." + k), st["npus"][k]))
for k, v in st["jobs"].items():
    if p.fields.get("jobs." + k) != str(v):
        bad.append("jobs.%s: page %s, cluster/status %s" % (k, p.fields.get("jobs." + k), v))
for k, v in st["servers"].items():
    if p.fields.get("servers." + k) != str(v):
        bad.append("servers.%s: page %s, cluster/status %s" % (k, p.fields.get("servers." + k), v))
want = {"%s/%d" % (s["name"], n["device_id"]): n["state"] for s in topo["servers"] for n in s["npus"]}
if p.cells != want:
    diff = [k for k in want if p.cells.get(k) != want[k]]
    bad.append("heatmap: %d cells, %d differ from topology.json (%s)" % (len(p.cells), len(diff), diff[:3]))
text = " ".join(p.text)
print("cells", len(p.cells), "allocated", sum(1 for v in p.cells.values() if v == "allocated"))
print("generations", " ".join("%s:%s" % g for g in p.gens))
print("utilization", p.fields.get("utilization"))
print("has_fault_event", "Critical 0x80C98000 HBM ECC" in text)
print("has_pending_reason", "needs 128 NPUs" in text)
print("ended", " ".join(p.ended))
print("bad", "; ".join(bad) if bad else "none")
PY
cat "$W/compare.txt" | sed 's/^/# /'
check_eq "every number the panel shows is cluster/status's, and its heatmap topology.json's" \
	"bad none" "$(grep '^bad ' "$W/compare.txt")"
check_eq "a cell per NPU: 128, of them allocated as cluster/status counts" \
	"cells 128 allocated $(json "$W/status.json" 'd["npus"]["allocated"]')" "$(grep '^cells ' "$W/compare.txt")"
check_eq "llama's two generations (the first ended by the fault)" "generations 1:node_fail 2:running" \
	"$(grep '^generations ' "$W/compare.txt")"
check_eq "the fault is among the recent events" "has_fault_event True" "$(grep '^has_fault_event' "$W/compare.txt")"
check_eq "the pending job's reason is shown" "has_pending_reason True" "$(grep '^has_pending_reason' "$W/compare.txt")"
check_eq "the job that ended is among the recently ended (cluster/accounting)" "ended done" \
	"$(grep '^ended ' "$W/compare.txt")"
check_eq "utilization as a percentage" \
	"utilization $(python3 -c 'import json,sys; print("%.1f %%" % (100 * json.load(open(sys.argv[1]))["utilization"]))' "$W/status.json")" \
	"$(grep '^utilization ' "$W/compare.txt")"

# on a head that leads (every head without etcd) no banner says "standby"
check_contains "the leader's panel shows no standby banner" \
	'<div id="standby" data-role="leader" hidden=""' "$(cat "$W/dom.html")"

# a job named in the link that is not there (removed, mistyped): the page goes on
browser "http://127.0.0.1:$PORT/#job=nosuch" --dump-dom >"$W/dom2.html"
check_contains "/#job=<no such job>: the page still loads" 'data-loaded="1"' "$(grep -o 'data-loaded="[01]"' "$W/dom2.html")"
check_contains "and says there is no such job" "no job nosuch now" "$(cat "$W/dom2.html")"

# what the page may do: its own API only (the policy the daemon sends with it)
hdr=$(python3 - "$PORT" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/")
r = c.getresponse()
r.read()
print(r.status, r.getheader("Content-Type"), "|", r.getheader("Content-Security-Policy"))
PY
)
check_contains "GET /: the page, as HTML" "200 text/html; charset=utf-8" "$hdr"
check_contains "with a policy that allows fetches of its own origin only" "connect-src 'self'" "$hdr"
check_contains "and nothing else by default" "default-src 'none'" "$hdr"
check_fails "the page names no other host" grep -qE "(src|href)=\"(https?:)?//" "$SRC/fs/panel.html"

# the screenshot, kept where meson keeps the test's log
mkdir -p "$ART"
rm -f "$ART/panel.png"
browser "http://127.0.0.1:$PORT/#job=llama" --screenshot="$ART/panel.png" >/dev/null
size=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); print("%dx%d" % struct.unpack(">II", d[16:24]) if d[:8] == b"\x89PNG\r\n\x1a\n" else "not a PNG")' "$ART/panel.png")
check_eq "it is a 1400x1600 PNG" 1400x1600 "$size"
echo "# screenshot: $ART/panel.png"

it_stop
it_finish
