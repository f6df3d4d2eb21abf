#!/bin/bash
# The man pages pass `mandoc -Tlint` with no message at all (style notes included).
# Usage: test_man_lint.sh PAGE...   Exit 77 (skipped) when mandoc is not installed.
set -u
if ! command -v mandoc >/dev/null; then
	echo "SKIP: mandoc is not installed (tests/install-deps.sh installs it)"
	exit 77
fi
out=$(mandoc -Tlint "$@" 2>&1)
status=$?
if [ "$status" -ne 0 ] || [ -n "$out" ]; then
	printf '%s\n' "$out"
	echo "FAIL: mandoc -Tlint exited $status"
	exit 1
fi
echo "ok: $# pages lint clean"
