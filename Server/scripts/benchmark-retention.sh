#!/usr/bin/env bash
# receiptkit-server's Get Retention Message endpoint (POST /appstore/retention) at the rate Apple
# calls it, on loopback: the release server on one core (core 1), an open-loop client on the
# other (core 0) sending RATE genuine realtime requests a second, signed under the test PKI by
# receiptkit-benchmark, each at its scheduled instant whether or not earlier ones were answered,
# and timing each from that instant (so a slow answer delays none of the measurements after it).
#
# The server first stores KEYS subscriptions with HISTORY renewals behind each (through
# POST /appstore/notifications, not measured). Three requests in four name one of them and are
# answered by a rule that reads the whole history (min_renewals, storefront, offer_used) and signs
# a promotional offer with an In-App Purchase key made for the run; one in four names a
# subscription the server has not seen and is answered by the status-unknown rule ({}). Every
# answer is checked: 200, and the answer its rule gives. Each answered request writes its
# retention.requested event before the answer, as in production.
#
# It prints p50, p90, p99 and the maximum latency, the server's CPU per request, and whether the
# target is met: p99 < 50 ms at 50 requests/s (Apple gives the endpoint 700 ms). Exits non-zero
# when it is not, or when an answer is wrong. Not part of `swift test`. Needs wrk (Debian),
# taskset and python3. RECEIPTKIT_DATABASE_URL=postgres://… (an empty database) runs it on
# PostgreSQL instead of a new SQLite file.
# Usage: Server/scripts/benchmark-retention.sh [SECONDS]   (default 30 s, after 3 s of warm-up)
# Environment: RATE (requests a second, default 50), KEYS (stored subscriptions, default 200),
# HISTORY (renewals behind each, default 60).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN="${1:-30}"
RATE="${RATE:-50}"
KEYS="${KEYS:-200}"
HISTORY="${HISTORY:-60}"
WARMUP=3
WORK="$(mktemp -d /tmp/receiptkit-retention-bench.XXXXXX)"
SERVER_PID=""
cleanup() { if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi; rm -rf "$WORK"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "benchmark-retention.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
[ $((HISTORY + 1)) -le 1000 ] || { echo "benchmark-retention.sh: HISTORY is at most 999" >&2; exit 1; }

(cd Server && swift build -c release --product receiptkit-server)
swift build -c release --product receiptkit-benchmark
SERVER="$(cd Server && swift build -c release --show-bin-path)/receiptkit-server"
BIN="$(swift build -c release --show-bin-path)"

"$BIN/receiptkit-benchmark" --write-renewal-bodies "$WORK/history.jsonl" --renewal-keys "$KEYS" --renewal-first 0 \
    --renewal-count $((HISTORY + 1))
"$BIN/receiptkit-benchmark" --write-realtime-requests "$WORK/requests.jsonl" --renewal-keys "$KEYS" \
    --renewal-count $((HISTORY + 1)) --realtime-count $((RATE * (SECONDS_PER_RUN + WARMUP)))

# An In-App Purchase key of the run's own (a P-256 PKCS #8 key, as App Store Connect issues), and
# the rules: the server refuses a promotional offer without a key to sign it.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/AuthKey.p8" 2>/dev/null
cat > "$WORK/rules.json" <<JSON
{"rules": [
  {"when": {"status": ["billing_retry", "grace_period"]}, "answer": {"message": "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c01"}},
  {"when": {"min_renewals": $((HISTORY / 2)), "storefront": ["USA"], "offer_used": false},
   "answer": {"promotional_offer": {"message": "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c02", "offer_id": "LOYALTY"}}},
  {"when": {"status": ["unknown"]}, "answer": {"default_message": {}}}
]}
JSON

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Reconciliation stays off (RECEIPTKIT_RECONCILE_INTERVAL=0) and the API URL is a closed port on
# loopback: the key only signs offers here, and nothing leaves the machine.
RECEIPTKIT_BUNDLE_ID=com.receiptkit.example RECEIPTKIT_APP_APPLE_ID=1234567890 RECEIPTKIT_ENVIRONMENT=Sandbox \
RECEIPTKIT_ROOT_FILE=TestVectors/pki/root.der RECEIPTKIT_DATABASE_URL="${RECEIPTKIT_DATABASE_URL:-sqlite:$WORK/store.sqlite}" \
RECEIPTKIT_RETENTION_RULES="$WORK/rules.json" RECEIPTKIT_APPSTORE_KEY_ID=BENCHKEY01 \
RECEIPTKIT_APPSTORE_ISSUER_ID=5d1c4a38-7f0e-4b6a-9c2d-3e4f5a6b7c8d RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE="$WORK/AuthKey.p8" \
RECEIPTKIT_APPSTORE_API_URL=http://127.0.0.1:9 RECEIPTKIT_RECONCILE_INTERVAL=0 \
PORT=$PORT LOG_LEVEL=warning taskset -c 1 "$SERVER" &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done

# The subscriptions' history, through the server, at saturation: wrk runs until the server has
# answered every notification of it (wrk has no request count of its own), then is stopped.
cat > "$WORK/post.lua" <<'LUA'
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("POST", "/appstore/notifications", {["Content-Type"] = "application/json"}, bodies[(counter - 1) % #bodies + 1])
end
LUA
answered() {
    curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v want="$1" '/^receiptkit_http_requests_total\{route="\/appstore\/notifications"/ {
        ok = index($0, "status=\"200\"") > 0; if ((want == "200") == ok) n += $NF } END {print n + 0}'
}
HISTORY_COUNT=$(wc -l < "$WORK/history.jsonl")
BODIES="$WORK/history.jsonl" taskset -c 0 wrk -t1 -c64 -d3600s -s "$WORK/post.lua" "http://127.0.0.1:$PORT" > /dev/null &
WRK_PID=$!
START=$(date +%s)
while [ "$(answered 200)" -lt "$HISTORY_COUNT" ]; do
    [ "$(answered other)" = 0 ] || { kill "$WRK_PID"; echo "benchmark-retention.sh: storing the history failed" >&2; exit 1; }
    kill -0 "$WRK_PID" 2>/dev/null || { echo "benchmark-retention.sh: wrk stopped while storing the history" >&2; exit 1; }
    sleep 1
done
kill -INT "$WRK_PID"; wait "$WRK_PID" || true
echo "stored $KEYS subscriptions with $HISTORY renewals each in $(( $(date +%s) - START )) s"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
TICKS_BEFORE=$(cpu_ticks)
taskset -c 0 python3 - "$PORT" "$WORK/requests.jsonl" "$RATE" "$SECONDS_PER_RUN" "$WARMUP" "$KEYS" > "$WORK/latency.txt" <<'PY'
import asyncio, base64, json, math, sys, time
port, path, rate, seconds, warmup, keys = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
bodies = [line.rstrip("\n").encode() for line in open(path)]

def expected(body):
    """The answer's kind the rules give: an offer for a stored subscription, {} for another."""
    jws = json.loads(body)["signedPayload"]
    payload = jws.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    key = int(claims["originalTransactionId"]) - 4_000_000_000_000_000
    return "promotionalOffer" if key < keys else "{}"

idle = []
async def exchange(body):
    reader, writer = idle.pop() if idle else await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /appstore/retention HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    answer = await reader.readexactly(length)
    idle.append((reader, writer))
    return status, answer

results = []
async def send(index, scheduled, measured):
    await asyncio.sleep(max(0, scheduled - time.monotonic()))
    status, answer = await exchange(bodies[index])
    latency = time.monotonic() - scheduled
    kind = "{}" if answer.strip() == b"{}" else next(iter(json.loads(answer)), "?") if status == 200 else str(status)
    if measured:
        results.append((latency, status, kind, expected(bodies[index])))

async def main():
    start = time.monotonic() + 0.1
    total = rate * (warmup + seconds)
    tasks = [asyncio.create_task(send(i, start + i / rate, i >= rate * warmup)) for i in range(total)]
    await asyncio.gather(*tasks)
    return time.monotonic() - start

elapsed = asyncio.run(main())
wrong = [r for r in results if r[1] != 200 or r[2] != r[3]]
latencies = sorted(r[0] * 1000 for r in results)
def percentile(p):
    """The nearest-rank percentile."""
    return latencies[max(0, math.ceil(p / 100 * len(latencies)) - 1)]
offers = sum(1 for r in results if r[2] == "promotionalOffer")
print(f"{len(results)} {percentile(50):.2f} {percentile(90):.2f} {percentile(99):.2f} {latencies[-1]:.2f} {len(wrong)} {offers} {len(idle)} {elapsed:.1f}")
for latency, status, kind, want in wrong[:5]:
    print(f"wrong answer: {status} {kind}, expected {want}", file=sys.stderr)
PY
TICKS=$(( $(cpu_ticks) - TICKS_BEFORE ))
read -r COUNT P50 P90 P99 MAX WRONG OFFERS CONNECTIONS ELAPSED < "$WORK/latency.txt"
CPU_MS=$(python3 -c "print(round(1000 * $TICKS / $(getconf CLK_TCK) / ($RATE * ($SECONDS_PER_RUN + $WARMUP)), 2))")
echo "POST /appstore/retention, $RATE requests/s for $SECONDS_PER_RUN s (after $WARMUP s of warm-up), $CONNECTIONS connections:"
echo "  $COUNT requests measured ($OFFERS answered with a signed offer, reading $HISTORY renewals; the rest {})"
echo "  latency p50 $P50 ms, p90 $P90 ms, p99 $P99 ms, max $MAX ms; server CPU $CPU_MS ms a request"
[ "$WRONG" = 0 ] || { echo "benchmark-retention.sh: $WRONG answers were not 200 with their rule's answer" >&2; exit 1; }
if python3 -c "import sys; sys.exit(0 if $P99 < 50 else 1)"; then
    echo "p99 $P99 ms at $RATE requests/s  target < 50 ms (at 50 requests/s): met"
else
    echo "p99 $P99 ms at $RATE requests/s  target < 50 ms (at 50 requests/s): NOT MET"
    exit 1
fi
