#!/usr/bin/env bash
# Webhook benchmark (issue 15): wrk on loopback posts distinct genuine notifications to
# receiptkit-server on one core (taskset), and verify-receipt verifies the same notifications on
# one core (--jobs 1); prints both rates, their ratio, and wrk's latency at half the server's
# rate (paced by the script's delay(), since Debian's wrk has no -R). Not part of `swift test`.
# Needs wrk (Debian), python3-cryptography and taskset; RECEIPTKIT_DATABASE_URL=postgres://… to
# measure on PostgreSQL instead of a new SQLite file.
# Usage: Server/scripts/benchmark.sh [COUNT] [SECONDS]   (default 20000 notifications, 10 s)
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT="${1:-20000}"
SECONDS_PER_RUN="${2:-10}"
WORK="$(mktemp -d /tmp/receiptkit-bench.XXXXXX)"
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

(cd Server && swift build -c release --product receiptkit-server)
swift build -c release --product verify-receipt
SERVER="$(cd Server && swift build -c release --show-bin-path)/receiptkit-server"
VERIFY="$(swift build -c release --show-bin-path)/verify-receipt"

python3 Server/scripts/make_notifications.py "$COUNT" "$WORK/bodies.jsonl"

# verify-receipt's single-core rate on the same bodies (one input per line).
START=$(date +%s.%N)
taskset -c 1 "$VERIFY" --root TestVectors/pki/root.der --bundle-id com.receiptkit.example --environment Sandbox \
    --jobs 1 "$WORK/bodies.jsonl" > /dev/null
END=$(date +%s.%N)
CLI_RATE=$(python3 -c "print(round($COUNT / ($END - $START)))")

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
RECEIPTKIT_BUNDLE_ID=com.receiptkit.example RECEIPTKIT_APP_APPLE_ID=1234567890 RECEIPTKIT_ENVIRONMENT=Sandbox \
RECEIPTKIT_ROOT_FILE=TestVectors/pki/root.der RECEIPTKIT_DATABASE_URL="${RECEIPTKIT_DATABASE_URL:-sqlite:$WORK/store.sqlite}" \
PORT=$PORT LOG_LEVEL=warning taskset -c 1 "$SERVER" &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done

cat > "$WORK/post.lua" <<LUA
local bodies = {}
for line in io.lines("$WORK/bodies.jsonl") do bodies[#bodies + 1] = line end
local counter = 0
local pause = tonumber(os.getenv("PAUSE_MS") or "0")
if pause > 0 then delay = function() return pause end end
request = function()
  counter = counter + 1
  local body = bodies[(counter - 1) % #bodies + 1]
  return wrk.format("POST", "/appstore/notifications", {["Content-Type"] = "application/json"}, body)
end
LUA
# Saturated: the server's rate on one core.
taskset -c 0 wrk -t1 -c16 -d"${SECONDS_PER_RUN}s" --latency -s "$WORK/post.lua" "http://127.0.0.1:$PORT" | tee "$WORK/full.txt"
SERVER_RATE=$(awk '/Requests\/sec/ {print int($2)}' "$WORK/full.txt")
# Half that load: 16 connections, each pausing 16 / (rate / 2) seconds between requests.
PAUSE_MS=$(python3 -c "print(max(1, round(16 * 1000 / ($SERVER_RATE / 2))))") \
    taskset -c 0 wrk -t1 -c16 -d"${SECONDS_PER_RUN}s" --latency -s "$WORK/post.lua" "http://127.0.0.1:$PORT" | tee "$WORK/half.txt"
echo "verify-receipt --jobs 1: $CLI_RATE notifications/s; server on one core: $SERVER_RATE/s;" \
    "ratio $(python3 -c "print(round($SERVER_RATE / $CLI_RATE, 2))");" \
    "at $(awk '/Requests\/sec/ {print int($2)}' "$WORK/half.txt")/s: p50 $(awk '$1 == "50%" {print $2}' "$WORK/half.txt")," \
    "p99 $(awk '$1 == "99%" {print $2}' "$WORK/half.txt")"
