#!/usr/bin/env bash
# Where a notification's instructions go (issue 15), counted by callgrind: deterministic, so it
# holds on a busy machine where wall times do not. Writes COUNT distinct notifications signed
# under the test PKI (receiptkit-benchmark --write-notifications: SUBSCRIBED, with a nested
# transaction and renewal info, three ES256 signatures each), runs the release verify-receipt
# --jobs 1 under callgrind over them and over the first one alone, and prints, for the whole run
# and per notification (the difference of the two runs, which leaves out the process's start-up
# and the one-time chain validation), the instructions and the shares of OpenSSL's signature
# verify calls (EVP_PKEY_verify, inclusive), jansson (json_loadb), SHA-256 and base64.
# Needs valgrind. Not part of `swift test`.
# Usage: scripts/profile-notifications.sh [COUNT] [--bodies]   (default 1000; --bodies: webhook bodies)
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${1:-1000}"
WRITE="--write-notifications"
[ "${2:-}" = "--bodies" ] && WRITE="--write-notification-bodies"
WORK="$(mktemp -d /tmp/receiptkit-profile.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

swift build -c release --product verify-receipt >&2
swift build -c release --product receiptkit-benchmark >&2
BIN="$(swift build -c release --show-bin-path)"
"$BIN/receiptkit-benchmark" --notifications "$COUNT" "$WRITE" "$WORK/notifications.txt" >&2
head -n 1 "$WORK/notifications.txt" > "$WORK/one.txt"

profile() {  # profile NAME INPUT: callgrind's inclusive table for verify-receipt over INPUT
    valgrind --tool=callgrind --callgrind-out-file="$WORK/$1.out" "$BIN/verify-receipt" \
        --root TestVectors/pki/root.der --jobs 1 "$2" > /dev/null 2> "$WORK/$1.log"
    callgrind_annotate --inclusive=yes --threshold=100 "$WORK/$1.out" > "$WORK/$1.txt" 2> /dev/null
}
profile all "$WORK/notifications.txt"
profile one "$WORK/one.txt"

# The inclusive instructions of the first function whose name ends with $2 in table $1.
cost() {
    awk -v name="$2" '$0 ~ "PROGRAM TOTALS" && name == "TOTAL" { gsub(",", "", $1); print $1; exit }
        { line = $0; sub(/ \[[^]]*\]$/, "", line) }
        name != "TOTAL" && line ~ ("[:$]" name "$") { gsub(",", "", $1); print $1; exit }' "$WORK/$1.txt"
}
report() {  # report LABEL DIVISOR TOTAL VERIFY JANSSON SHA BASE64
    awk -v label="$1" -v n="$2" -v total="$3" -v verify="$4" -v jansson="$5" -v sha="$6" -v base64="$7" 'BEGIN {
        printf "%-42s %6.3f M instructions per notification; verify %5.1f%%, jansson %4.1f%%, SHA-256 %4.1f%%, base64 %4.1f%%\n",
            label, total / n / 1e6, 100 * verify / total, 100 * jansson / total, 100 * sha / total, 100 * base64 / total }'
}
# The decoder's entry (the JWS segments' specialization, the largest), SIMD blocks included.
BASE64='s10ReceiptKit6Base64O6decode_8alphabet10vectorized[0-9A-Za-z_]*'
for run in all one; do
    declare "${run}_total=$(cost $run TOTAL)" "${run}_verify=$(cost $run EVP_PKEY_verify)" \
        "${run}_jansson=$(cost $run json_loadb)" "${run}_sha=$(cost $run SHA256_Update)" \
        "${run}_base64=$(cost $run "$BASE64")"
done
echo "callgrind, release verify-receipt --jobs 1, $COUNT distinct notifications ($WRITE):"
report "whole run ($all_total instructions)" "$COUNT" "$all_total" "$all_verify" "$all_jansson" "$all_sha" "${all_base64:-0}"
n=$((COUNT - 1))
[ "$n" -gt 0 ] && report "per notification (run of $COUNT - run of 1)" "$n" $((all_total - one_total)) \
    $((all_verify - one_verify)) $((all_jansson - one_jansson)) $((all_sha - one_sha)) $((${all_base64:-0} - ${one_base64:-0}))
echo "target: verify >= 75% of a notification's instructions"
