#!/usr/bin/env bash
# The whole test suite: installs missing system libraries, then runs every test of the library
# and the command in a debug build and again in a release build (users run release builds, and
# the optimizer has been seen to miscompile code that debug builds run correctly), then
# the Server/ package's tests (its own package: receiptkit-server's HTTP tests, and the App Store
# Server API client's and appstore-api's against a fake API on loopback, which pipe appstore-api
# into the verify-receipt built above), debug and release for the same reason, on SQLite — and
# on PostgreSQL too when RECEIPTKIT_TEST_POSTGRES_URL names an empty database, as in CI. (On the 2-core development machine, shared with other builds, the
# server's release build with its tests took 20 min from nothing built (25.5 min of CPU), and
# its release test run 10 s: CI grows from about 30 to about 50 minutes.)
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
(cd Server && swift build --build-tests && swift_test "Server, debug" --skip-build)
(cd Server && swift build -c release --build-tests && swift_test "Server, release" -c release --skip-build)
