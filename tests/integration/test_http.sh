#!/usr/bin/env bash
# HTTP (issue 19, part 1): `ascendfs --http ADDR:PORT` serves /metrics and the mount's
# read-only files (GET /v1/<path>) as a read through the mount gives them; writes and
# paths outside the tree are refused; a bad address or a port another process holds
# stops the daemon before it mounts, saying why. Then the real Prometheus from Debian
# scrapes it: a PromQL query over Prometheus' HTTP API returns the NPUs allocated that
# cluster/status counts, every query of the shipped Grafana dashboard runs, and the
# shipped alerting rules load (promtool checks them too).
# Usage: test_http.sh ASCENDFS SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SRC=$(realpath "$2")
. "$SRC/tests/integration/lib.sh"

it_setup
PROM_PID=""
HOLD_PID=""
stop_helpers() {
	[ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
	[ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null && wait "$HOLD_PID" 2>/dev/null
	PROM_PID=""
	HOLD_PID=""
}
trap 'stop_helpers; it_cleanup' EXIT
M=$IT_MNT
W=$IT_WORK
CONFIG=$SRC/examples/ascend_cluster.yaml

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# http METHOD PATH [PORT]: "STATUS CONTENT-TYPE" on the first line, then the body; the
# path is sent as given (no client-side clean-up of "..")
http() {
	python3 - "$1" "$2" "${3:-$PORT}" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[3]), timeout=10)
c.request(sys.argv[1], sys.argv[2])
r = c.getresponse()
body = r.read().decode("utf-8", "replace")
print(r.status, r.getheader("Content-Type"), r.getheader("Allow") or "")
sys.stdout.write(body)
PY
}
json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# ---- the address is checked before the daemon mounts ------------------------------------
out=$("$ASCENDFS" -f -c "$CONFIG" --state-dir=none --http nonsense "$M" 2>&1)
check_eq "--http nonsense: the daemon exits 1" 1 "$?"
check_contains "saying what to give" "--http nonsense: not an address and port; give e.g. 127.0.0.1:9101" "$out"
check_fails "and mounts nothing" is_mounted "$M"
HOLD=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(60)' "$HOLD" &
HOLD_PID=$!
wait_until 5 python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$HOLD"
out=$("$ASCENDFS" -f -c "$CONFIG" --state-dir=none --http "127.0.0.1:$HOLD" "$M" 2>&1)
check_eq "a port another process listens on: exit 1" 1 "$?"
check_contains "saying so" "cannot listen there: Address already in use (another process has the port; give another)" "$out"
check_fails "and mounts nothing" is_mounted "$M"
stop_helpers

# ---- what it serves ---------------------------------------------------------------
PORT=$(free_port)
it_start "$ASCENDFS" "$CONFIG" --http "127.0.0.1:$PORT" || exit 1
check "a 32-NPU job" cp "$SRC/examples/jobs/llama70b-pretrain.yaml" "$M/jobs/"
out=$(http GET /metrics)
check_eq "GET /metrics: 200, Prometheus' text format" "200 text/plain; version=0.0.4; charset=utf-8" \
	"$(head -n1 <<<"$out" | sed 's/ *$//')"
check_eq "it counts what cluster/metrics counts" \
	"$(grep '^ascendfs_npus{' "$M/cluster/metrics")" "$(grep '^ascendfs_npus{' <<<"$out")"
check_eq "and says this head leads (the only one, without etcd)" "ascendfs_leader 1" \
	"$(grep '^ascendfs_leader ' <<<"$out")"
check_contains "32 NPUs allocated" 'ascendfs_npus{state="allocated"} 32' "$out"
check_contains "NPU Exporter's health metric too" 'npu_chip_info_health_status{id="0",node="a2-node-01"} ' "$out"
check_eq "GET /v1/cluster/status is cluster/status" "$(cat "$M/cluster/status")" \
	"$(http GET /v1/cluster/status | tail -n +2)"
check_eq "GET /v1/jobs lists the jobs (a JSON array)" '["llama70b-pretrain"]' \
	"$(http GET /v1/jobs | tail -n +2)"
out=$(http GET /v1/jobs/llama70b-pretrain/status.json)
check_eq "a job's status.json: application/json" "200 application/json" "$(head -n1 <<<"$out" | sed 's/ *$//')"
check_eq "the job runs, as the mount says" "running" "$(tail -n +2 <<<"$out" | json 'd["state"]')"
for r in 3 0 3; do
	printf '1 rank-%s a2-node-01 said %s\n' "$r" "$r" >>"$M/jobs/llama70b-pretrain/log"
done
check_eq "GET /v1/jobs/<job>/logs lists the processes that printed" '["rank-0","rank-3"]' \
	"$(http GET /v1/jobs/llama70b-pretrain/logs | tail -n +2)"
check_eq "GET /v1/jobs/<job>/logs/rank-3 is logs/rank-3: that rank's lines" \
	"$(printf '[g1 rank-3 a2-node-01] said 3\n%.0s' 1 2)" \
	"$(http GET /v1/jobs/llama70b-pretrain/logs/rank-3 | tail -n +2)"
check_eq "... as the mount reads it" "$(cat "$M/jobs/llama70b-pretrain/logs/rank-3")" \
	"$(http GET /v1/jobs/llama70b-pretrain/logs/rank-3 | tail -n +2)"
printf 'npus: 1\n' >"$M/jobs/ended.yaml"
echo cancel >"$M/jobs/ended/ctl"
check_eq "GET /v1/cluster/accounting is cluster/accounting (the job that ended)" \
	"$(cat "$M/cluster/accounting")" "$(http GET /v1/cluster/accounting | tail -n +2)"
check_contains "with its record" '"job":"ended"' "$(http GET /v1/jobs/ended/accounting)"
check_eq "?tail=2: the last 2 lines of cluster/events" "$(tail -n 2 "$M/cluster/events")" \
	"$(http GET '/v1/cluster/events?tail=2' | tail -n +2)"
check_eq "?tail= more than it has: all of it" "$(cat "$M/cluster/accounting")" \
	"$(http GET '/v1/cluster/accounting?tail=1000' | tail -n +2)"
for t in 0 -1 x 100001 ''; do
	check_contains "?tail=$t is refused (400)" '400 application/json' "$(http GET "/v1/cluster/events?tail=$t" | head -n1)"
done
check_eq "GET /v1/ lists the top directory" '["cluster","nodes","queues","jobs"]' "$(http GET /v1/ | tail -n +2)"
out=$(http GET /v1/jobs/nope/status)
check_eq "a job that does not exist: 404" "404 application/json" "$(head -n1 <<<"$out" | sed 's/ *$//')"
check_eq "with the reason" "/jobs/nope/status: no such file in the mount now" "$(tail -n +2 <<<"$out" | json 'd["error"]')"
out=$(http POST /v1/jobs)
check_eq "POST: 405, Allow: GET, HEAD" "405 application/json GET, HEAD" "$(head -n1 <<<"$out")"
check_contains "saying where changes go" "change the cluster through the mount" "$out"
out=$(http DELETE /v1/jobs/llama70b-pretrain)
check_eq "DELETE: 405" "405" "$(head -n1 <<<"$out" | cut -d' ' -f1)"
check_eq "and the job runs on" running "$(cat "$M/jobs/llama70b-pretrain/status")"
check_eq "a path out of the tree: 404" "404" "$(http GET /v1/../../etc/passwd | head -n1 | cut -d' ' -f1)"
check_eq "another path: 404" "404" "$(http GET /etc/passwd | head -n1 | cut -d' ' -f1)"
check_eq "a file's path with a trailing slash: 404, as the mount's ENOTDIR" "404" \
	"$(http GET /v1/cluster/status/ | head -n1 | cut -d' ' -f1)"
out=$(http GET '/v1/cluster/%ff%c3%28')
check_eq "bytes that are not UTF-8 in the path: a 404 with a JSON error all the same" \
	"404 /cluster/??(: no such file in the mount" \
	"$(head -n1 <<<"$out" | cut -d' ' -f1) $(tail -n +2 <<<"$out" | json 'd["error"]')"
check_eq "a NUL byte (%00) in the path: 404, not the file before it" "404" \
	"$(http GET '/v1/cluster/status%00junk' | head -n1 | cut -d' ' -f1)"
check_eq "the absolute form (GET http://host/v1/...): the file" "$(cat "$M/cluster/status")" \
	"$(http GET "http://127.0.0.1:$PORT/v1/cluster/status" | tail -n +2)"
check_eq "two requests on one HTTP/1.1 connection: both answered (keep-alive)" "200 200" \
	"$(python3 -c 'import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
out = []
for p in ("/metrics", "/v1/cluster/status"):
    c.request("GET", p)
    r = c.getresponse()
    r.read()
    out.append(str(r.status))
print(" ".join(out))' "$PORT")"
out=$(http HEAD /v1/cluster/status)
check_eq "HEAD: 200 and no body" "200 text/plain; charset=utf-8|" "$(head -n1 <<<"$out" | sed 's/ *$//')|$(tail -n +2 <<<"$out")"

# ---- the real Prometheus scrapes it ---------------------------------------------------
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	not_ok "prometheus and promtool are installed (tests/install-deps.sh installs them)"
else
	check "promtool checks the shipped alerting rules" promtool check rules \
		"$SRC/examples/prometheus/ascendfs-alerts.yml"
	PPORT=$(free_port)
	cp "$SRC/examples/prometheus/ascendfs-alerts.yml" "$W/"
	sed -e 's/scrape_interval: 15s/scrape_interval: 1s/' -e 's/evaluation_interval: 15s/evaluation_interval: 1s/' \
		-e "s/127.0.0.1:9101/127.0.0.1:$PORT/" "$SRC/examples/prometheus/prometheus.yml" >"$W/prometheus.yml"
	check "promtool checks the shipped configuration (pointed at this daemon)" \
		promtool check config "$W/prometheus.yml"
	prometheus --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/prom" \
		--web.listen-address="127.0.0.1:$PPORT" >"$W/prometheus.log" 2>&1 &
	PROM_PID=$!
	# query EXPR: the JSON answer of Prometheus' instant query API
	query() { python3 -c 'import json, sys, urllib.parse, urllib.request
u = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
print(json.dumps(json.load(urllib.request.urlopen(u, timeout=5))))' "$PPORT" "$1"; }
	allocated() { query 'ascendfs_npus{state="allocated"}' | json 'd["data"]["result"][0]["value"][1]'; }
	want=$(json 'd["npus"]["allocated"]' <"$M/cluster/status")
	prom_sees() { [ "$(allocated 2>/dev/null)" = "$want" ]; }
	if wait_until 30 prom_sees; then
		ok "PromQL over Prometheus' API: $want NPUs allocated, as cluster/status counts"
	else
		not_ok "PromQL returns the NPUs allocated ($want)" "$(allocated 2>&1)" \
			"$(tail -n 5 "$W/prometheus.log")"
	fi
	check_eq "PromQL: the scraped head leads" 1 \
		"$(query 'ascendfs_leader' | json 'd["data"]["result"][0]["value"][1]')"
	check_eq "the scrape target is up" 1 "$(query 'up{job="ascendfs"}' | json 'd["data"]["result"][0]["value"][1]')"
	bad=""
	while IFS= read -r expr; do
		[ "$(query "$expr" | json 'd["status"]')" = success ] || bad="$bad [$expr]"
	done < <(python3 -c 'import json, sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]:
        print(t["expr"])' "$SRC/examples/grafana/ascendfs-dashboard.json")
	check_eq "every query of the Grafana dashboard runs" "" "$bad"
	# and the share of NPUs allocated (its first panel) is the share cluster/status gives
	share=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["panels"][0]["targets"][0]["expr"])' "$SRC/examples/grafana/ascendfs-dashboard.json")
	check_eq "the dashboard's allocated share is cluster/status's" \
		"$(json '"%.4f" % (d["npus"]["allocated"] / d["npus"]["total"])' <"$M/cluster/status")" \
		"$(query "$share" | json '"%.4f" % float(d["data"]["result"][0]["value"][1]) if d["data"]["result"] else "no result"')"
	rules_ok() { python3 -c 'import json, sys, urllib.request
d = json.load(urllib.request.urlopen("http://127.0.0.1:%s/api/v1/rules" % sys.argv[1], timeout=5))
r = [x for g in d["data"]["groups"] for x in g["rules"]]
sys.exit(0 if len(r) == 10 and all(x["health"] == "ok" for x in r) else 1)' "$PPORT"; }
	if wait_until 10 rules_ok; then ok "Prometheus loaded and evaluated the 10 alerting rules"; else
		not_ok "the alerting rules load" "$(tail -n 5 "$W/prometheus.log")"; fi
	stop_helpers
fi

it_stop
check_fails "after the unmount nothing listens on the port" python3 -c \
	'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)' "$PORT"
it_finish
