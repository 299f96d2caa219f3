#!/usr/bin/env bash
# Crash test of receiptkit-server (not part of `swift test`): see crash_test.py. Builds the
# release binary unless BIN names one; needs python3 with `cryptography` (Debian:
# python3-cryptography). Usage: Server/scripts/crash-test.sh [--count N] [--deadline SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
    swift build -c release --product receiptkit-server
    BIN="$(swift build -c release --show-bin-path)/receiptkit-server"
fi
exec python3 scripts/crash_test.py "$BIN" "$@"
