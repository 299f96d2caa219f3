#!/usr/bin/env bash
# The sanitizer checks CI runs:
#   1. the whole test suite under address sanitizer;
#   2. the concurrency tests (many threads sharing one verifier and its caches) under thread
#      sanitizer;
#   3. receiptkit-server's concurrency tests (group commit, the deadline timer, concurrent writes
#      to the store, webhook delivery) under thread sanitizer — on PostgreSQL too when
#      RECEIPTKIT_TEST_POSTGRES_URL is set, as in CI;
#   4. verify-receipt, built with address sanitizer, over every vector in TestVectors/ with
#      LeakSanitizer on: every OpenSSL and jansson object must have one owner that frees it — and
#      over Apple's vectors in ../shared/vectors, which CI requires (CI=true).
# Each uses its own build folder, so a normal build is not disturbed. Each test step fails when it
# ran no test, and the thread sanitizer steps when a suite they name no longer exists
# (scripts/lib/checks.sh): `swift test --filter` passes when it matches nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/checks.sh

scripts/install-deps.sh

# The suites the thread sanitizer runs. First, from the normal debug build (seconds when it is
# built, as in CI after scripts/test.sh), that each still exists: a renamed suite fails here.
tsan_suites=(CacheTests ConcurrencyTests)
server_tsan_suites=(GroupCommitTests TimeoutTests StoreTests WebhookDeliveryTests)
require_suites "thread sanitizer" "${tsan_suites[@]}"
# The server's suites are checked by name once its thread-sanitizer build exists (below): listing
# them now would build its package in debug, which nothing else here needs.

echo "== address sanitizer: swift test" >&2
# Memory errors fail the suite; leaks are checked on verify-receipt below, where every object is
# ReceiptKit's (the test harness keeps its own objects alive until exit).
swift build --build-tests --sanitize=address --scratch-path .build-asan
ASAN_OPTIONS=detect_leaks=0 swift_test "address sanitizer" --sanitize=address --scratch-path .build-asan --skip-build

# The Swift concurrency runtime's hand-off of a resumed continuation is not announced to the
# thread sanitizer on Swift 6.3.1: scripts/lib/tsan.supp names that one false report, and
# print_suppressions lists each report it hid.
export TSAN_OPTIONS="suppressions=$PWD/scripts/lib/tsan.supp:print_suppressions=1"

echo "== thread sanitizer: concurrency tests" >&2
swift build --build-tests --sanitize=thread --scratch-path .build-tsan
swift_test_suites "thread sanitizer" "${tsan_suites[@]}" -- --sanitize=thread --scratch-path .build-tsan --skip-build

echo "== thread sanitizer: receiptkit-server's concurrency tests" >&2
(cd Server && swift build --build-tests --sanitize=thread --scratch-path .build-tsan &&
    swift_test_suites "thread sanitizer (Server)" "${server_tsan_suites[@]}" -- \
    --sanitize=thread --scratch-path .build-tsan --skip-build)

echo "== leak check: verify-receipt over TestVectors/" >&2
swift build --sanitize=address --scratch-path .build-asan --product verify-receipt
bin="$(swift build --sanitize=address --scratch-path .build-asan --show-bin-path)/verify-receipt"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export LSAN_OPTIONS=exitcode=99
check() {
    local status=0
    "$@" > /dev/null 2> /tmp/receiptkit-leakcheck.err || status=$?
    if [ "$status" -gt 1 ]; then
        cat /tmp/receiptkit-leakcheck.err >&2
        echo "leak check failed (exit $status): $*" >&2
        exit 1
    fi
}
jws_root=(--root TestVectors/pki/root.der --root TestVectors/pki/xcode.der)
receipt_root=(--root TestVectors/receipts/pki/root.der --root TestVectors/receipts/pki/storekit.der)
check "$bin" "${jws_root[@]}" TestVectors/jws/*.jws TestVectors/jws/*.json TestVectors/jws/batch.txt
check "$bin" --pin-sha256 "$(python3 -c 'import json;print(json.load(open("TestVectors/pki/fingerprints.json"))["root.der"])')" TestVectors/jws/*.jws
for f in TestVectors/receipts/*.der TestVectors/receipts/*.b64 TestVectors/receipts/*.json; do
    check "$bin" "${receipt_root[@]}" "$f"
done
check "$bin" "${receipt_root[@]}" --format verifyreceipt --jobs 2 TestVectors/receipts/receipt-sha256-der.b64 TestVectors/jws/batch.txt
if [ -d ../shared/vectors ] || required "../shared/vectors (Apple's vectors, for the leak check)"; then
    check "$bin" ../shared/vectors/jws/real/*.jws
    check "$bin" --root ../shared/vectors/certs/AppleTestCA-mock.der ../shared/vectors/jws/apple-mock/*.jws
    for f in ../shared/vectors/receipts/*.der; do check "$bin" "$f"; done
fi
echo "sanitizers: clean" >&2
