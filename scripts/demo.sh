#!/usr/bin/env bash
# Builds verify-receipt (release) and runs it over the bundled sample vectors: a batch of valid
# and invalid JWS signed by the project's test PKI, trusted through its root certificate.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
swift build -c release --product verify-receipt
bin="$(swift build -c release --show-bin-path)/verify-receipt"
echo "\$ verify-receipt --root TestVectors/pki/root.der TestVectors/jws/batch.txt" >&2
"$bin" --root TestVectors/pki/root.der TestVectors/jws/batch.txt || status=$?
echo "exit status ${status:-0} (1 means some inputs were rejected, as this batch expects)" >&2
