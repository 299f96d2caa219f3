#!/usr/bin/env bash
# The whole test suite: installs missing system libraries, then runs every test of the library
# and the command in a debug build and again in a release build (users run release builds, and
# the optimizer has been seen to miscompile code that debug builds run correctly), then
# receiptkit-server's HTTP tests (Server/, its own package) on SQLite — and on PostgreSQL too
# when RECEIPTKIT_TEST_POSTGRES_URL names an empty database, as in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
swift build --build-tests
swift test
swift test -c release
(cd Server && swift build --build-tests && swift test --skip-build)
