#!/usr/bin/env bash
# Crash test of receiptkit-server (not part of `swift test`): see crash_test.py. Builds the
# release binary unless BIN names one, and signs the notifications with receiptkit-benchmark
# (release, the root package) under the test PKI.
# Usage: Server/scripts/crash-test.sh [--count N] [--deadline SECONDS] [--database postgres://…]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
    swift build -c release --product receiptkit-server
    BIN="$(swift build -c release --show-bin-path)/receiptkit-server"
fi
COUNT=3000
arguments=("$@")
for ((index = 0; index < ${#arguments[@]}; index++)); do
    [ "${arguments[$index]}" = --count ] && COUNT="${arguments[$((index + 1))]:-$COUNT}"
done
BODIES="$(mktemp /tmp/receiptkit-crash-bodies.XXXXXX)"
trap 'rm -f "$BODIES"' EXIT
(cd .. && swift build -c release --product receiptkit-benchmark >/dev/null &&
    "$(swift build -c release --show-bin-path)/receiptkit-benchmark" --write-notification-bodies "$BODIES" --notifications "$COUNT")
python3 scripts/crash_test.py "$BIN" --bodies "$BODIES" "$@"
