#!/usr/bin/env bash
# Webhook benchmark (issue 15): wrk on loopback posts distinct genuine notifications to
# receiptkit-server on one core (taskset), and verify-receipt verifies the same notifications on
# one core (--jobs 1); prints both rates, their ratio, and wrk's latency at half the server's
# rate. Debian's wrk has no -R, and a wrk script's delay() pauses each connection *after* its
# answer, so a connection's cycle is latency + pause: the pause is computed as
# connections / target rate - mean latency, the latency measured at that load by a short
# calibration run (twice), and the run reports the rate it achieved and its ratio to the
# saturated rate. Every run posts notifications no earlier run posted (no replays). Not part of
# `swift test`.
# Needs wrk (Debian), python3-cryptography and taskset; RECEIPTKIT_DATABASE_URL=postgres://… to
# measure on PostgreSQL instead of a new SQLite file.
# Usage: Server/scripts/benchmark.sh [COUNT] [SECONDS]   (default 100000 notifications, 10 s)
# The runs post about twice the saturated rate × SECONDS (saturated, two calibrations, half load):
# 100,000 covers 10 s runs up to about 4,500 requests/s.
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT="${1:-100000}"
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
# The bodies file is hundreds of MB: flush it now, or the kernel writes it back 30 s later
# (vm.dirty_expire_centisecs), in the middle of the server's runs, and the device that is busy
# with it delays the server's commits (fsync) — a tail that is the script's, not the server's.
sync

# verify-receipt's single-core rate on the same bodies (one input per line), on the core the
# server gets. Measured just before the server's saturated run and again just after it: this
# machine's speed drifts, and the ratio uses the mean of the two.
cli_rate() {
    local start end
    start=$(date +%s.%N)
    taskset -c 1 "$VERIFY" --root TestVectors/pki/root.der --bundle-id com.receiptkit.example --environment Sandbox \
        --jobs 1 "$WORK/bodies.jsonl" > /dev/null
    end=$(date +%s.%N)
    python3 -c "print(round($COUNT / ($end - $start)))"
}
CLI_RATE_BEFORE=$(cli_rate)

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
RECEIPTKIT_BUNDLE_ID=com.receiptkit.example RECEIPTKIT_APP_APPLE_ID=1234567890 RECEIPTKIT_ENVIRONMENT=Sandbox \
RECEIPTKIT_ROOT_FILE=TestVectors/pki/root.der RECEIPTKIT_DATABASE_URL="${RECEIPTKIT_DATABASE_URL:-sqlite:$WORK/store.sqlite}" \
PORT=$PORT LOG_LEVEL=warning taskset -c 1 "$SERVER" &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done

cat > "$WORK/post.lua" <<LUA
local bodies = {}
for line in io.lines("$WORK/bodies.jsonl") do bodies[#bodies + 1] = line end
local counter = tonumber(os.getenv("FIRST") or "0")
local pause = tonumber(os.getenv("PAUSE_MS") or "0")
if pause > 0 then delay = function() return pause end end
request = function()
  counter = counter + 1
  local body = bodies[(counter - 1) % #bodies + 1]
  return wrk.format("POST", "/appstore/notifications", {["Content-Type"] = "application/json"}, body)
end
LUA
# Saturated: enough connections that the server's core has work while a batch's commit waits
# for fsync (with 16 it sat idle 8% of the time, with 32 still 5-7%). Half load: the 16 of the
# earlier runs, each pausing between requests.
SATURATING_CONNECTIONS=128
HALF_LOAD_CONNECTIONS=16
CONNECTIONS=$SATURATING_CONNECTIONS
NEXT=0  # the first body the next run posts: each run posts bodies no earlier run posted
# run_wrk PAUSE_MS SECONDS OUTPUT: wrk on core 0, each connection pausing PAUSE_MS after each answer.
run_wrk() {
    FIRST=$NEXT PAUSE_MS=$1 taskset -c 0 wrk -t1 -c$CONNECTIONS -d"$2s" --latency -s "$WORK/post.lua" \
        "http://127.0.0.1:$PORT" > "$3"
    # Requests still in flight when wrk stopped were sent but not counted: skip one per connection.
    NEXT=$((NEXT + $(awk '/requests in/ {print $1}' "$3") + CONNECTIONS))
    [ "$NEXT" -lt "$COUNT" ] || { echo "benchmark.sh: $COUNT notifications are too few for these runs" >&2; exit 1; }
}
rate_of() { awk '/Requests\/sec/ {print $2}' "$1"; }
# wrk's mean latency in milliseconds ("Latency 12.34ms …" in its thread stats).
mean_latency_ms() {
    awk '$1 == "Latency" {v = $2; u = v; gsub(/[0-9.]/, "", u); gsub(/[a-z]/, "", v);
        print (u == "us" ? v / 1000 : u == "s" ? v * 1000 : v); exit}' "$1"
}

# Saturated: the server's rate on one core, and the CPU time it used (user + system, from
# /proc), so that its rate per CPU-second can be compared too.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
TICKS_BEFORE=$(cpu_ticks)
run_wrk 0 "$SECONDS_PER_RUN" "$WORK/full.txt"
TICKS_AFTER=$(cpu_ticks)
cat "$WORK/full.txt"
SERVER_RATE=$(rate_of "$WORK/full.txt")
SERVER_CPU_SECONDS=$(python3 -c "print(($TICKS_AFTER - $TICKS_BEFORE) / $(getconf CLK_TCK))")
PER_CPU_SECOND=$(python3 -c "print(round($(awk '/requests in/ {print $1}' "$WORK/full.txt") / $SERVER_CPU_SECONDS))")
# verify-receipt again right after the saturated run, so the two rates compared are measured
# within half a minute of each other.
CLI_RATE_AFTER=$(cli_rate)
TARGET=$(python3 -c "print($SERVER_RATE / 2)")
# Half that load. A connection's cycle is its answer's latency plus the pause, so the pause is
# connections / target - latency; the latency at the target load is not known before running at
# it, so start from the saturated one and correct twice from short calibration runs.
CONNECTIONS=$HALF_LOAD_CONNECTIONS
LATENCY=$(mean_latency_ms "$WORK/full.txt")
CALIBRATION_SECONDS=$(( SECONDS_PER_RUN / 3 > 2 ? SECONDS_PER_RUN / 3 : 2 ))
for step in 1 2; do
    PAUSE=$(python3 -c "print(max(1, round($CONNECTIONS * 1000 / $TARGET - $LATENCY)))")
    run_wrk "$PAUSE" "$CALIBRATION_SECONDS" "$WORK/calibration-$step.txt"
    RATE=$(rate_of "$WORK/calibration-$step.txt")
    # The latency that run really had: its cycle (connections / rate) less the pause.
    LATENCY=$(python3 -c "print(max(0.0, $CONNECTIONS * 1000 / $RATE - $PAUSE))")
    echo "calibration $step: pause $PAUSE ms -> $RATE/s (target $TARGET/s; latency at that load ${LATENCY} ms)"
done
PAUSE=$(python3 -c "print(max(1, round($CONNECTIONS * 1000 / $TARGET - $LATENCY)))")
run_wrk "$PAUSE" "$SECONDS_PER_RUN" "$WORK/half.txt"
cat "$WORK/half.txt"
HALF_RATE=$(rate_of "$WORK/half.txt")
CLI_RATE=$(( (CLI_RATE_BEFORE + CLI_RATE_AFTER) / 2 ))
# This machine's speed can change within a run (a shared host): say so when the two
# measurements of verify-receipt disagree by more than 10%, for the ratio is then not to be trusted.
python3 -c "import sys; a, b = $CLI_RATE_BEFORE, $CLI_RATE_AFTER; sys.exit(0 if abs(a - b) <= 0.1 * max(a, b) else 1)" ||
    echo "benchmark.sh: WARNING: verify-receipt ran at $CLI_RATE_BEFORE/s before and $CLI_RATE_AFTER/s after the server: the machine's speed changed during the run, so the ratio is not reliable; run it again" >&2
echo "verify-receipt --jobs 1: $CLI_RATE notifications/s ($CLI_RATE_BEFORE before, $CLI_RATE_AFTER after);" \
    "server on one core: $SERVER_RATE/s;" \
    "ratio $(python3 -c "print(round($SERVER_RATE / $CLI_RATE, 2))");" \
    "server CPU ${SERVER_CPU_SECONDS} s in ${SECONDS_PER_RUN} s: $PER_CPU_SECOND requests per CPU-second," \
    "ratio $(python3 -c "print(round($PER_CPU_SECOND / $CLI_RATE, 2))");" \
    "half load (pause $PAUSE ms): $HALF_RATE/s, $(python3 -c "print(round($HALF_RATE / $SERVER_RATE, 2))") of saturated;" \
    "p50 $(awk '$1 == "50%" {print $2}' "$WORK/half.txt"), p99 $(awk '$1 == "99%" {print $2}' "$WORK/half.txt");" \
    "saturated p50 $(awk '$1 == "50%" {print $2}' "$WORK/full.txt"), p99 $(awk '$1 == "99%" {print $2}' "$WORK/full.txt")"
