#!/usr/bin/env bash
# Build ascendfs twice, a normal build (build/) and an ASan+UBSan build (build-asan/),
# run every test in both (unit tests and the integration tests that mount the daemon),
# and end with one line "N passed, N failed" counted from meson's test logs.
# Exit status: 0 when nothing failed.
set -u
cd "$(dirname "$0")/.."
tests/install-deps.sh || exit 1

declare -A OPTS=(
	[build]="-Dbuildtype=debugoptimized"
	[build-asan]="-Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fno-sanitize-recover=all"
)
status=0
for b in build build-asan; do
	echo "== $b: ${OPTS[$b]}"
	if [ ! -f "$b/build.ninja" ]; then
		# shellcheck disable=SC2086 # the options are words on purpose
		meson setup "$b" ${OPTS[$b]} >"/tmp/meson-setup-$$.log" 2>&1 ||
			{ cat "/tmp/meson-setup-$$.log"; status=1; continue; }
	fi
	ninja -C "$b" || { status=1; continue; }
	meson test -C "$b" --print-errorlogs --num-processes 2 || status=1
done
rm -f "/tmp/meson-setup-$$.log"

python3 - build build-asan <<'PY'
import json, sys, os
passed = failed = skipped = 0
for b in sys.argv[1:]:
    log = os.path.join(b, "meson-logs", "testlog.json")
    if not os.path.exists(log):
        failed += 1  # the build did not get as far as its tests
        continue
    for line in open(log):
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
[ $? -eq 0 ] || status=1
exit $status
