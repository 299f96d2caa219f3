#!/usr/bin/env bash
# The whole test suite: installs missing system libraries, then runs every test in a debug
# build and again in a release build (users run release builds, and the optimizer has been
# seen to miscompile code that debug builds run correctly).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
swift build --build-tests
swift test
swift test -c release
