#!/usr/bin/env bash
# libFuzzer targets for ReceiptKit's parsers, built with address sanitizer.
#
#   scripts/fuzz.sh --list            the target names, one per line
#   scripts/fuzz.sh NAME SECONDS      build NAME and fuzz it for SECONDS; exit non-zero if
#                                     libFuzzer found a crash, a leak or a broken invariant
#
# Seed corpora come from TestVectors/ (copied into fuzz-corpus/NAME, which keeps what libFuzzer
# finds across runs); crashing inputs land in fuzz-artifacts/NAME/. Both folders are git-ignored.
# Every input that ever crashed becomes a regression test under Tests/ReceiptKitTests.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(fuzz-jws fuzz-payload fuzz-receipt fuzz-input fuzz-timestamp)

if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "${targets[@]}"
    exit 0
fi
if [ $# -ne 2 ] || ! [[ " ${targets[*]} " == *" $1 "* ]] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
    echo "usage: scripts/fuzz.sh --list | scripts/fuzz.sh NAME SECONDS" >&2
    exit 64
fi
name=$1
seconds=$2

scripts/install-deps.sh
scratch=.build-fuzz
swift build --package-path Fuzz --scratch-path "$scratch" --product "$name" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld >&2
binary="$(swift build --package-path Fuzz --scratch-path "$scratch" --show-bin-path)/$name"

corpus=fuzz-corpus/$name
artifacts=fuzz-artifacts/$name
mkdir -p "$corpus" "$artifacts"
seed() { [ -f "$1" ] && cp -n "$1" "$corpus/seed-$(basename "$1")" || true; }
case $name in
    fuzz-jws)
        for f in TestVectors/jws/*.jws TestVectors/jws/*.json; do seed "$f"; done ;;
    fuzz-payload)
        python3 - "$corpus" <<'PY'
import base64, glob, os, sys
for path in glob.glob("TestVectors/jws/*.jws"):
    parts = open(path).read().strip().split(".")
    if len(parts) != 3:
        continue
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
    except Exception:
        continue
    open(os.path.join(sys.argv[1], "seed-" + os.path.basename(path)), "wb").write(payload)
PY
        ;;
    fuzz-receipt)
        for f in TestVectors/receipts/*.der; do seed "$f"; done ;;
    fuzz-input)
        # The first byte picks the forced kind (0: none).
        for f in TestVectors/jws/*.json TestVectors/receipts/*.b64 TestVectors/receipts/*.json TestVectors/jws/transaction-consumable.jws; do
            [ -f "$f" ] && { printf '\0'; cat "$f"; } > "$corpus/seed-$(basename "$f")"
        done ;;
    fuzz-timestamp)
        for t in 2025-01-01T00:00:00Z 2020-07-22T18:33:15+0100 2025-02-10T04:29:32.561Z 2020-10-16T14:29:30+03:00; do
            printf '%s' "$t" > "$corpus/seed-$t"
        done ;;
esac

echo "fuzzing $name for $seconds s (corpus $corpus)" >&2
log="$(mktemp /tmp/receiptkit-fuzz.XXXXXX)"
status=0
ASAN_OPTIONS=detect_leaks=1 "$binary" "$corpus" -max_total_time="$seconds" -timeout=10 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 -max_len=131072 2>&1 | tee "$log" || status=$?
# A run that executed nothing checked nothing: fail it too.
runs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)"
rm -f "$log"
if [ "$status" -ne 0 ]; then
    echo "fuzz $name: FAILED (exit status $status; inputs in $artifacts/)" >&2
    exit "$status"
fi
if [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
    echo "fuzz $name: FAILED, no input was executed" >&2
    exit 1
fi
echo "fuzz $name: $runs inputs in $seconds s, no crash, leak or broken invariant" >&2
