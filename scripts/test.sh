#!/usr/bin/env bash
# The whole test suite: installs missing system libraries, then runs every test of the library
# and the command in a debug build and again in a release build (users run release builds, and
# the optimizer has been seen to miscompile code that debug builds run correctly), then the
# Server/ package's tests (its own package: receiptkit-server's HTTP tests, and the App Store
# Server API client's and appstore-api's against a fake API on loopback, which pipe appstore-api
# into the verify-receipt built above) in a release build, on SQLite — and on PostgreSQL too when
# RECEIPTKIT_TEST_POSTGRES_URL names an empty database, as in CI.
#
# The server's package is built once here, in release: each of its builds compiles SwiftNIO,
# Hummingbird, PostgresNIO, GRDB and two copies of BoringSSL from nothing (on the 2-core machine
# 11.5 min in debug, 21 min in release with the tests, which then run in 4 min), and CI builds it
# once more with the thread sanitizer (scripts/sanitize.sh). `scripts/test.sh --debug` runs its
# suites in a debug build too, as `swift test` in Server/ does while working on it.
#
# In CI (CI=true) every test must run: a test whose prerequisite is missing (../shared/vectors,
# RECEIPTKIT_TEST_POSTGRES_URL) fails, naming it, where it is skipped elsewhere; and each run
# below fails if it ran no test (scripts/lib/checks.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/checks.sh

scripts/install-deps.sh
swift build --build-tests
swift_test "debug" --skip-build
# Built by the run itself (only `swift test` builds the root's @testable imports in release), so
# its hang limit leaves room for the build.
RECEIPTKIT_TEST_RUN_LIMIT="${RECEIPTKIT_TEST_RUN_LIMIT:-2400}" swift_test "release" -c release
if [ "${1:-}" = "--debug" ]; then
    (cd Server && swift build --build-tests && swift_test "Server, debug" --skip-build)
fi
(cd Server && swift build -c release --build-tests && swift_test "Server, release" -c release --skip-build)
