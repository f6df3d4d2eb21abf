#!/usr/bin/env bash
# Does serving HTTP slow the mount (issue 19: "serving them must not slow placements")?
# One daemon with --http; durable submissions through the mount (bench_submit, 32
# threads, batches of BENCH_HTTP_BATCH `npus: 1` specs) and reads of cluster/status
# through the mount, each measured with nothing on HTTP (the reference), then while a
# client fetches /metrics or /v1/cluster/status about 10 times a second (a dashboard or a
# few scrapers: Prometheus scrapes every 15 s by default), then while it fetches them
# back to back as fast as the daemon answers (a stress: on 2 cores the client itself
# takes one), then while a client fetches what the monitoring panel fetches at each of
# its refreshes (status, jobs, topology.json, the last 40 events, utilization, config)
# once a second (five open panels: one refreshes every 5 s), turn about
# BENCH_HTTP_ROUNDS times. Prints each round's figures and the ratios; asserts nothing
# about time.
# Usage: bench_http.sh ASCENDFS BENCH_SUBMIT SRCDIR
set -u
ASCENDFS=$(realpath "$1")
SUBMIT=$(realpath "$2")
SRC=$(realpath "$3")
BATCH=${BENCH_HTTP_BATCH:-1000}
ROUNDS=${BENCH_HTTP_ROUNDS:-3}
. "$SRC/tests/integration/lib.sh"
it_setup
SCRAPER=""
trap '[ -n "$SCRAPER" ] && kill "$SCRAPER" 2>/dev/null; it_cleanup' EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
it_start "$ASCENDFS" "$SRC/examples/ascend_cluster.yaml" --http "127.0.0.1:$PORT" >/dev/null || exit 1

# reads: the median of 500 open+read+close of cluster/status, in microseconds
reads() {
	python3 - "$IT_MNT/cluster/status" <<'PY'
import sys, time
t = []
for _ in range(500):
    a = time.perf_counter()
    with open(sys.argv[1], "rb") as f:
        f.read()
    t.append((time.perf_counter() - a) * 1e6)
t.sort()
print("%.0f" % t[len(t) // 2])
PY
}
# the scraper: GETs (a pause of PAUSE s between two, or after each round of the panel's
# GETs with "panel") until killed; its count of answers goes to FILE at the end
scrape() {
	python3 - "$PORT" "$1" "$2" "${3:-scrape}" <<'PY' &
import http.client, signal, sys, time
n = 0
pause = float(sys.argv[3])
panel = sys.argv[4] == "panel"
paths = (("/v1/cluster/status", "/v1/cluster/jobs", "/v1/cluster/topology.json",
          "/v1/cluster/events?tail=40", "/v1/cluster/utilization", "/v1/cluster/config")
         if panel else ("/metrics", "/v1/cluster/status"))
def done(*_):
    open(sys.argv[2], "w").write("%d\n" % n)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    if panel:
        time.sleep(pause)
    for path in paths:
        c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        if r.status == 200:
            n += 1
        c.close()
        if pause and not panel:
            time.sleep(pause)
PY
	SCRAPER=$!
}

printf '%-6s %-10s %14s %16s %12s\n' round http "submissions/s" "status read us" "http gets/s"
for r in $(seq 1 "$ROUNDS"); do
	for mode in none 10/s max panel; do
		[ "$mode" = 10/s ] && scrape "$IT_WORK/gets" 0.1
		[ "$mode" = max ] && scrape "$IT_WORK/gets" 0
		[ "$mode" = panel ] && scrape "$IT_WORK/gets" 1 panel
		sleep 0.5
		t0=$(date +%s%N)
		read -r _ _ _ rate < <("$SUBMIT" "$IT_MNT" "r$r-${mode%/s}" "$BATCH" 32)
		us=$(reads)
		t1=$(date +%s%N)
		gets=-
		if [ "$mode" != none ]; then
			kill "$SCRAPER"
			wait "$SCRAPER" 2>/dev/null
			SCRAPER=""
			gets=$(awk -v n="$(cat "$IT_WORK/gets")" -v t=$(((t1 - t0) / 1000000)) \
				'BEGIN { printf "%.0f", n * 1000 / t }')
		fi
		printf '%-6s %-10s %14s %16s %12s\n' "$r" "$mode" "$rate" "$us" "$gets"
	done
done | tee "$IT_WORK/table"
awk '{ s[$2] += $3; r[$2] += $4; n[$2]++ }
	END { for (m in s) if (m != "none" && m != "http")
		printf "mean, HTTP %s: %.0f submissions/s against %.0f without (%.2fx); status read %.0f us against %.0f (%.2fx)\n",
			m, s[m] / n[m], s["none"] / n["none"], (s[m] / n[m]) / (s["none"] / n["none"]),
			r[m] / n[m], r["none"] / n["none"], (r[m] / n[m]) / (r["none"] / n["none"]) }' "$IT_WORK/table"
it_stop >/dev/null
it_finish >/dev/null
