#!/usr/bin/env bash
# receiptkit-server under what production sends. wrk on loopback (core 0) posts genuine
# notifications, signed under the test PKI by receiptkit-benchmark, to the release server on one
# core (core 1):
#   - fresh: first purchases (SUBSCRIBED) of new subscriptions, signed like the aged ones';
#   - aged: renewals (DID_RENEW) of subscriptions that already have HISTORY renewals behind them,
#     stored first through the server itself (not measured);
# each at saturation (128 connections) and at 4 (a webhook's real concurrency), every run posting
# notifications no earlier run posted. For each it prints the rate by wall clock and per server
# CPU-second (user + system, from /proc), and verify-receipt --jobs 1's rate on the same bodies on
# the same core; then the ratios the targets name and whether each is met:
#   - aged ÷ fresh, per server CPU-second, at both concurrencies: ≥ 0.8;
#   - server per CPU-second ÷ verify-receipt --jobs 1, fresh, at both concurrencies: ≥ 0.5;
#   - GET /v1/subscriptions/{id}?as_of=… (an instant inside an aged key's history): p99 < 5 ms.
# It also posts the fresh bodies to a path no route serves (read, answered 404, neither verified
# nor stored) and prints what that exchange alone costs, to split a first purchase's CPU into
# verifying, the HTTP exchange and the rest (storing, deriving, rendering, handing over).
# Not part of `swift test`. Needs wrk (Debian) and taskset. RECEIPTKIT_DATABASE_URL=postgres://…
# (an empty database) runs it on PostgreSQL instead of a new SQLite file.
# Usage: Server/scripts/benchmark.sh [SECONDS]   (default 10 s a run)
# Environment: KEYS (aged subscriptions, default 200), HISTORY (renewals behind each, default 240),
# SERVER (a receiptkit-server binary to measure instead of this checkout's release build).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN="${1:-10}"
KEYS="${KEYS:-200}"
HISTORY="${HISTORY:-240}"
# Enough for four runs at up to about 3,000 notifications/s each.
RENEWALS_PER_KEY=$(( (3000 * SECONDS_PER_RUN * 2 + 129 * 2) / KEYS + 1 ))
FRESH=$(( 3000 * SECONDS_PER_RUN * 2 + 129 * 2 ))
WORK="$(mktemp -d /tmp/receiptkit-bench.XXXXXX)"
SERVER_PID=""
cleanup() { if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi; rm -rf "$WORK"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "benchmark.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
[ $((HISTORY + 1 + RENEWALS_PER_KEY)) -le 1000 ] || { echo "benchmark.sh: HISTORY + renewals exceed 1,000 periods" >&2; exit 1; }

# SERVER names another server binary to measure (an earlier revision's, for a comparison in one
# run of the machine); by default this checkout's release build.
if [ -z "${SERVER:-}" ]; then
    (cd Server && swift build -c release --product receiptkit-server)
    SERVER="$(cd Server && swift build -c release --show-bin-path)/receiptkit-server"
fi
swift build -c release --product verify-receipt
swift build -c release --product receiptkit-benchmark
BIN="$(swift build -c release --show-bin-path)"

# Fresh: the first purchases of subscriptions numbered after the aged ones, the same notifications
# as an aged key's first, so that fresh and aged differ in their history alone.
"$BIN/receiptkit-benchmark" --write-renewal-bodies "$WORK/fresh.jsonl" --renewal-keys "$FRESH" --renewal-first-key "$KEYS" \
    --renewal-first 0 --renewal-count 1
"$BIN/receiptkit-benchmark" --write-renewal-bodies "$WORK/history.jsonl" --renewal-keys "$KEYS" --renewal-first 0 \
    --renewal-count $((HISTORY + 1))
"$BIN/receiptkit-benchmark" --write-renewal-bodies "$WORK/aged.jsonl" --renewal-keys "$KEYS" \
    --renewal-first $((HISTORY + 1)) --renewal-count "$RENEWALS_PER_KEY"
# The files are hundreds of MB: written back now, not in the middle of a run.
sync

# verify-receipt's single-core rate on the first 10,000 bodies of a file, on the server's core.
cli_rate() {
    head -n 10000 "$1" > "$WORK/cli.jsonl"
    local start end
    start=$(date +%s.%N)
    taskset -c 1 "$BIN/verify-receipt" --root TestVectors/pki/root.der --bundle-id com.receiptkit.example \
        --environment Sandbox --jobs 1 "$WORK/cli.jsonl" > /dev/null
    end=$(date +%s.%N)
    python3 -c "print(round($(wc -l < "$WORK/cli.jsonl") / ($end - $start)))"
}

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
RECEIPTKIT_BUNDLE_ID=com.receiptkit.example RECEIPTKIT_APP_APPLE_ID=1234567890 RECEIPTKIT_ENVIRONMENT=Sandbox \
RECEIPTKIT_ROOT_FILE=TestVectors/pki/root.der RECEIPTKIT_DATABASE_URL="${RECEIPTKIT_DATABASE_URL:-sqlite:$WORK/store.sqlite}" \
PORT=$PORT LOG_LEVEL=warning taskset -c 1 "$SERVER" &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done

# post.lua: posts BODIES from line FIRST on, wrapping around at the end (a replay), to TARGET_PATH.
NOTIFICATIONS=/appstore/notifications
cat > "$WORK/post.lua" <<'LUA'
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
local counter = tonumber(os.getenv("FIRST") or "0")
local path = os.getenv("TARGET_PATH")
request = function()
  counter = counter + 1
  local body = bodies[(counter - 1) % #bodies + 1]
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end
LUA
non_2xx() { awk '/Non-2xx/ {print $5; found=1} END {if (!found) print 0}' "$1"; }
# The server's count of webhook answers with a status ("200", or anything but 200 with "other").
answered() {
    curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v want="$1" '/^receiptkit_http_requests_total\{route="\/appstore\/notifications"/ {
        ok = index($0, "status=\"200\"") > 0; if ((want == "200") == ok) n += $NF } END {print n + 0}'
}

# The aged keys' history, through the server, at saturation: wrk runs until the server has
# answered every notification of it (wrk has no request count of its own), then is stopped.
HISTORY_COUNT=$(wc -l < "$WORK/history.jsonl")
BODIES="$WORK/history.jsonl" TARGET_PATH=$NOTIFICATIONS taskset -c 0 wrk -t1 -c128 -d3600s -s "$WORK/post.lua" \
    "http://127.0.0.1:$PORT" > "$WORK/history.txt" &
WRK_PID=$!
START=$(date +%s)
while [ "$(answered 200)" -lt "$HISTORY_COUNT" ]; do
    [ "$(answered other)" = 0 ] || { kill "$WRK_PID"; echo "benchmark.sh: storing the history failed" >&2; exit 1; }
    kill -0 "$WRK_PID" 2>/dev/null || { echo "benchmark.sh: wrk stopped while storing the history" >&2; exit 1; }
    sleep 1
done
kill -INT "$WRK_PID"; wait "$WRK_PID" || true
echo "stored $KEYS subscriptions with $HISTORY renewals each in $(( $(date +%s) - START )) s"

declare -A NEXT=([fresh]=0 [aged]=0)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
# run KIND CONNECTIONS FIRST OUT [TARGET_PATH]: wrk posts KIND's bodies from line FIRST for one run;
# sets REQUESTS (answered) and TICKS (the server's CPU over the run, in clock ticks).
run() {
    local before after
    before=$(cpu_ticks)
    BODIES="$WORK/$1.jsonl" FIRST=$3 TARGET_PATH="${5:-$NOTIFICATIONS}" taskset -c 0 wrk -t1 -c"$2" \
        -d"${SECONDS_PER_RUN}s" --latency -s "$WORK/post.lua" "http://127.0.0.1:$PORT" > "$4"
    after=$(cpu_ticks)
    REQUESTS=$(awk '/requests in/ {print $1}' "$4")
    TICKS=$(( after - before ))
}
# measure KIND CONNECTIONS: one run; sets RATE (wall) and PER_CPU (per server CPU-second).
measure() {
    local kind=$1 connections=$2 out="$WORK/$1-$2.txt"
    run "$kind" "$connections" "${NEXT[$kind]}" "$out"
    [ "$(non_2xx "$out")" = 0 ] || { cat "$out"; echo "benchmark.sh: the $kind run had errors" >&2; exit 1; }
    # Requests still in flight when wrk stopped were sent but not counted: skip one per connection.
    NEXT[$kind]=$(( ${NEXT[$kind]} + REQUESTS + connections ))
    [ "${NEXT[$kind]}" -lt "$(wc -l < "$WORK/$kind.jsonl")" ] || { echo "benchmark.sh: too few $kind notifications" >&2; exit 1; }
    RATE=$(awk '/Requests\/sec/ {print $2}' "$out")
    PER_CPU=$(python3 -c "print(round($REQUESTS * $(getconf CLK_TCK) / max(1, $TICKS)))")
    P99=$(awk '$1 == "99%" {print $2}' "$out")
}

CLI_FRESH_BEFORE=$(cli_rate "$WORK/fresh.jsonl")
CLI_AGED_BEFORE=$(cli_rate "$WORK/aged.jsonl")
declare -A RATES PER_CPUS P99S
for connections in 128 4; do
    for kind in fresh aged; do
        measure "$kind" "$connections"
        RATES[$kind-$connections]=$RATE
        PER_CPUS[$kind-$connections]=$PER_CPU
        P99S[$kind-$connections]=$P99
        echo "$kind, $connections connections: $RATE/s, $PER_CPU per server CPU-second, p99 $P99"
    done
done
# The HTTP exchange alone: the same fresh bodies posted to a path no route serves, so that the
# server reads each body and answers 404 without verifying or storing it.
declare -A HTTP_US
for connections in 128 4; do
    out="$WORK/http-$connections.txt"
    run fresh "$connections" 0 "$out" /benchmark-unrouted
    [ "$(non_2xx "$out")" = "$REQUESTS" ] || { cat "$out"; echo "benchmark.sh: the unrouted path answered 2xx" >&2; exit 1; }
    HTTP_US[$connections]=$(python3 -c "print(round(1e6 * $TICKS / $(getconf CLK_TCK) / $REQUESTS, 1))")
    echo "the HTTP exchange alone, $connections connections: ${HTTP_US[$connections]} µs of server CPU a request"
done
CLI_FRESH_AFTER=$(cli_rate "$WORK/fresh.jsonl")
CLI_AGED_AFTER=$(cli_rate "$WORK/aged.jsonl")
CLI_FRESH=$(( (CLI_FRESH_BEFORE + CLI_FRESH_AFTER) / 2 ))
CLI_AGED=$(( (CLI_AGED_BEFORE + CLI_AGED_AFTER) / 2 ))
python3 -c "import sys; a, b = $CLI_FRESH_BEFORE, $CLI_FRESH_AFTER; sys.exit(0 if abs(a - b) <= 0.1 * max(a, b) else 1)" ||
    echo "benchmark.sh: WARNING: verify-receipt ran at $CLI_FRESH_BEFORE/s before and $CLI_FRESH_AFTER/s after: the machine's speed changed during the run; run it again" >&2

# GET …?as_of= an instant in the middle of an aged key's history: every copy known then is read.
MIDDLE=$(python3 -c "import datetime; print((datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=$HISTORY // 2, hours=12)).strftime('%Y-%m-%dT%H:%M:%SZ'))")
cat > "$WORK/as_of.lua" <<LUA
local counter = 0
request = function()
  counter = counter + 1
  local id = string.format("%.0f", 4000000000000000 + counter % $KEYS)
  return wrk.format("GET", "/v1/subscriptions/" .. id .. "?as_of=$MIDDLE")
end
LUA
taskset -c 0 wrk -t1 -c1 -d"${SECONDS_PER_RUN}s" --latency -s "$WORK/as_of.lua" "http://127.0.0.1:$PORT" > "$WORK/as_of.txt"
[ "$(non_2xx "$WORK/as_of.txt")" = 0 ] || { cat "$WORK/as_of.txt"; echo "benchmark.sh: as_of queries failed" >&2; exit 1; }
AS_OF_P50=$(awk '$1 == "50%" {print $2}' "$WORK/as_of.txt")
AS_OF_P99=$(awk '$1 == "99%" {print $2}' "$WORK/as_of.txt")

python3 - "$CLI_FRESH" "$CLI_AGED" "$AS_OF_P50" "$AS_OF_P99" "$KEYS" "$HISTORY" "$SECONDS_PER_RUN" \
    "${RATES[fresh-128]}" "${PER_CPUS[fresh-128]}" "${P99S[fresh-128]}" "${RATES[aged-128]}" "${PER_CPUS[aged-128]}" "${P99S[aged-128]}" \
    "${RATES[fresh-4]}" "${PER_CPUS[fresh-4]}" "${P99S[fresh-4]}" "${RATES[aged-4]}" "${PER_CPUS[aged-4]}" "${P99S[aged-4]}" \
    "${HTTP_US[128]}" "${HTTP_US[4]}" <<'PY'
import sys
a = sys.argv[1:]
cli_fresh, cli_aged = float(a[0]), float(a[1])
def ms(text):
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise SystemExit(f"benchmark.sh: cannot read latency {text!r}")
as_of_p50, as_of_p99 = ms(a[2]), ms(a[3])
keys, history, seconds = a[4], int(a[5]), a[6]
runs = {}
for index, name in enumerate(["fresh-128", "aged-128", "fresh-4", "aged-4"]):
    rate, per_cpu, p99 = a[7 + 3 * index : 10 + 3 * index]
    runs[name] = (float(rate), float(per_cpu), ms(p99))
print(f"\nverify-receipt --jobs 1: fresh {cli_fresh:.0f}/s, aged {cli_aged:.0f}/s (one core)")
print(f"server on one core, {seconds} s a run; aged = renewals of {keys} subscriptions with {history} renewals behind each:")
print("  run        rate/s  per CPU-s  p99 ms  per CPU-s ÷ verify-receipt")
for name, (rate, per_cpu, p99) in runs.items():
    cli = cli_fresh if name.startswith("fresh") else cli_aged
    print(f"  {name:9} {rate:7.0f}  {per_cpu:9.0f}  {p99:6.1f}  {per_cpu / cli:.2f}")
checks = []
for connections in ("128", "4"):
    fresh, aged = runs[f"fresh-{connections}"], runs[f"aged-{connections}"]
    checks.append((f"aged ÷ fresh per CPU-second, {connections} connections", aged[1] / fresh[1], 0.8))
    checks.append((f"aged ÷ fresh by wall clock, {connections} connections", aged[0] / fresh[0], None))
    checks.append((f"server per CPU-second ÷ verify-receipt, fresh, {connections} connections", fresh[1] / cli_fresh, 0.5))
    checks.append((f"server by wall clock ÷ verify-receipt, fresh, {connections} connections", fresh[0] / cli_fresh, None))
http_us = {"128": float(a[19]), "4": float(a[20])}
verify_us = 1e6 / cli_fresh
print(f"where a first purchase's server CPU goes (verify-receipt: {verify_us:.0f} µs a notification; the target of 0.5 allows {2 * verify_us:.0f}):")
for connections in ("128", "4"):
    server_us = 1e6 / runs[f"fresh-{connections}"][1]
    print(f"  {connections:>3} connections: {server_us:.0f} µs = verifying {verify_us:.0f} + the HTTP exchange alone {http_us[connections]:.0f}"
          f" + the rest {server_us - verify_us - http_us[connections]:.0f} (the target leaves {verify_us - http_us[connections]:.0f} for the rest)")
print(f"  as_of (GET /v1/subscriptions/{{id}}?as_of=…, {history // 2} renewals known): p50 {as_of_p50:.2f} ms, p99 {as_of_p99:.2f} ms")
failed = False
for label, value, target in checks:
    verdict = "" if target is None else ("  target ≥ %.1f: met" % target if value >= target else "  target ≥ %.1f: NOT MET" % target)
    failed |= target is not None and value < target
    print(f"{label}: {value:.3f}{verdict}")
met = as_of_p99 < 5
failed |= not met
print(f"as_of p99 {as_of_p99:.2f} ms  target < 5 ms: {'met' if met else 'NOT MET'}")
sys.exit(1 if failed else 0)
PY
