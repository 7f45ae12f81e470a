#!/usr/bin/env bash
# Runs the Go test suite with the race detector and, when it fails, ends with a
# summary of what failed: which tests, and for a package that hit its timeout,
# the tests it was running. CI keeps only the tail of the output, and a
# timeout's goroutine dump would otherwise push the names out of it.
set -uo pipefail
GO=${GO:-go}
log=$(mktemp /tmp/flyfs-test.XXXXXX.log)
"$GO" test -race -timeout "${FLYFS_TEST_TIMEOUT:-20m}" "$@" ./... 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
	echo
	echo "==== test summary (full log: $log) ===="
	grep -E -A12 '^panic: test timed out|^running tests:' "$log" | grep -v '^goroutine ' | head -60
	grep -E -B2 -A20 '^--- FAIL|^    --- FAIL' "$log" | head -150
	grep -E '^(FAIL|ok) ' "$log"
fi
exit "$rc"
