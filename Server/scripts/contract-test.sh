#!/usr/bin/env bash
# The HTTP contract: Schemathesis (a property-based API tester, pinned in
# scripts/contract/requirements.txt) reads Server/openapi.yaml, generates requests from it — valid
# ones, ones the document forbids, undeclared methods, and sequences that follow its links — and
# checks every answer against it (status, content type, headers, body schema) with every check on.
# The server is the release build (BIN, or built here) on a new SQLite database with an admin
# token and an entitlements file (so that grants and named entitlements answer), on loopback.
# Every check Schemathesis has is on (its default, which the settings below narrow only where
# they say why); any finding fails the run.
#
# What no schema can express is said once, per operation, in scripts/contract/schemathesis.toml
# (an input Apple did not sign is a 400 whatever its shape).
#
# Usage: Server/scripts/contract-test.sh [--max-time SECONDS] (default 120) [--seed N] (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."

max_time=120 seed=1
while [ $# -gt 0 ]; do
    case "$1" in
        --max-time) max_time="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        *) echo "contract-test: unknown option $1" >&2; exit 64 ;;
    esac
done

if [ -z "${BIN:-}" ]; then
    swift build -c release --product receiptkit-server
    BIN="$(swift build -c release --show-bin-path)/receiptkit-server"
fi

# Schemathesis in a virtual environment of its own (.build-schemathesis, git-ignored), installed
# once per pinned version.
venv=.build-schemathesis/venv
pinned="$(sed -n 's/^schemathesis==//p' scripts/contract/requirements.txt)"
if [ "$("$venv/bin/st" --version 2>/dev/null | awk '{print $3}')" != "$pinned" ]; then
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        fi
        python3 -m venv "$venv" || { echo "contract-test: FAILED, python3 cannot create a virtual environment (python3-venv)" >&2; exit 1; }
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/contract/requirements.txt ||
        { echo "contract-test: FAILED, pip cannot install schemathesis==$pinned (no access to PyPI?)" >&2; exit 1; }
fi

work="$(mktemp -d /tmp/receiptkit-contract.XXXXXX)"
server_pid=
stop() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap stop EXIT

# A free port on loopback, and a token no one else knows.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
token="$(openssl rand -hex 24)"
RECEIPTKIT_BUNDLE_ID=com.receiptkit.example RECEIPTKIT_APP_APPLE_ID=1234567890 RECEIPTKIT_ENVIRONMENT=Sandbox \
RECEIPTKIT_ROOT_FILE=../TestVectors/pki/root.der,../TestVectors/receipts/pki/root.der \
RECEIPTKIT_DATABASE_URL="sqlite:$work/receiptkit.sqlite" RECEIPTKIT_API_TOKEN="$token" \
RECEIPTKIT_ENTITLEMENTS_FILE=scripts/contract/entitlements.json \
HOST=127.0.0.1 PORT="$port" LOG_LEVEL=warning \
    "$BIN" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 100); do
    python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
        "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "contract-test: FAILED, the server did not start" >&2; exit 1; }
    sleep 0.1
done

echo "contract-test: schemathesis $pinned, $max_time s, seed $seed, against $BIN" >&2
# One worker: the server is on the same two cores, and a seeded run is repeatable only in one.
"$venv/bin/st" --config-file scripts/contract/schemathesis.toml run openapi.yaml \
    --url "http://127.0.0.1:$port" -H "Authorization: Bearer $token" \
    --phases examples,coverage,fuzzing,stateful --max-time "$max_time" --seed "$seed" \
    --workers 1 --generation-database none --no-color --report junit --report-dir "$work/report"
