#!/usr/bin/env bash
# receiptkit-server with a real customer base: seeds SUBSCRIBERS subscriptions (default 1,000,000)
# and measures what serving them needs, on SQLite or (RECEIPTKIT_DATABASE_URL=postgres://…, an
# empty database) on PostgreSQL.
#
#  0. Bytes on disk: 200 subscriptions with five years of monthly history (61 genuine notifications
#     each, receiptkit-benchmark) stored through the server in a database of their own, against the
#     floor of Apple's signed bytes (each notification once, each JWS header once).
#  1. The server migrates the empty database; scale_seed.py's SQL then fills it in one transaction,
#     in the database: three apps, Production and Sandbox, a mix of states and 1 to 4 periods of
#     history per key, each transaction's notification, input link and feed event, customers;
#     on PostgreSQL then VACUUM ANALYZE, as after any bulk load.
#  2. Migration v12 is timed on the seeded database: its tables dropped and its record removed,
#     the server started, the time until /readyz answers 200 (it serves nothing before).
#  3. A sample of 500 keys: each status the server evaluates (GET /v1/subscriptions/{id}, ReceiptKit
#     over the stored copies) equals the derived state seeded; the overview's counts equal the
#     seeded states counted by SQL.
#  4. Measured (the release server unpinned, the machine shared): the overview; reads at 4
#     connections (wrk, random keys, after a warm-up of the same reads): subscription, customer
#     entitlements, one named entitlement (an entitlements file naming the seeded plans "pro"); search by transaction id, original transaction id and customer id; a feed
#     page of 500 at the start, the middle and the end (each read once first); a sweep pass over 10,000 keys made due;
#     genuine notifications (scale_notifications.py, signed under the test PKI) ingested at 4 and
#     128 connections, per server CPU-second and as a ratio of OpenSSL's single-core ECDSA P-256
#     verify rate ÷ 3 (a notification carries three signatures); the server's peak memory; one
#     reconcile window (POST /v1/reconcile) of 1,000 notifications, half of them missed, against
#     Get Notification History served by scale_fake_history.py, which checks each token; a backup
#     while the server serves reads (backup --to on SQLite, pg_dump on PostgreSQL); the
#     database's size on disk per subscription.
#  It prints a table and exits non-zero when a target is missed.
#
# Not part of `swift test`. Needs wrk, sqlite3 or psql (and pg_dump), python3 with python3-cryptography.
# Usage: Server/scripts/scale.sh [SUBSCRIBERS]
# Environment: RECEIPTKIT_DATABASE_URL (PostgreSQL, or sqlite:PATH), SECONDS_PER_RUN (default 10),
# WARM_UP_SECONDS (the same reads first, not measured; default 5),
# BUILD (default release), SEEDED_SECONDS (the database at RECEIPTKIT_DATABASE_URL was seeded by
# scale_seed.py with SUBSCRIBERS keys before, in that many seconds: measure it again),
# MIGRATION_MS (migration v12 was timed on it before: skip it), KEEP_WORK (set: the work directory is kept).
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-1000000}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}"
BUILD="${BUILD:-release}"
WORK="$(mktemp -d /tmp/receiptkit-scale.XXXXXX)"
SERVER_PID=""
cleanup() { if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi; [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "scale.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
python3 -c 'import cryptography' 2>/dev/null || { echo "scale.sh: needs python3-cryptography" >&2; exit 1; }

URL="${RECEIPTKIT_DATABASE_URL:-sqlite:$WORK/store.sqlite}"
case "$URL" in
    postgres*) DIALECT=postgres; command -v psql >/dev/null || { echo "scale.sh: needs psql" >&2; exit 1; }
        PSQL_URL="${URL%%\?*}"
        query() { psql "$PSQL_URL" -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; } ;;
    sqlite:*) DIALECT=sqlite; command -v sqlite3 >/dev/null || { echo "scale.sh: needs sqlite3" >&2; exit 1; }
        DB="${URL#sqlite:}"
        query() { sqlite3 -bail "$DB" "$1"; } ;;
    *) echo "scale.sh: RECEIPTKIT_DATABASE_URL must be sqlite:PATH or postgres://…" >&2; exit 1 ;;
esac

(cd Server && swift build -c "$BUILD" --product receiptkit-server)
SERVER="$(cd Server && swift build -c "$BUILD" --show-bin-path)/receiptkit-server"
swift build -c "$BUILD" --product receiptkit-benchmark
BENCHMARK="$(swift build -c "$BUILD" --show-bin-path)/receiptkit-benchmark"
TOKEN=scale-benchmark-token-0123456789
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
# start_server [SWEEP_INTERVAL]: the release server on the database, with the settings in
# SERVER_ENV (NAME=VALUE words) besides.
SERVER_ENV=()
start_server() {
    env "${SERVER_ENV[@]}" RECEIPTKIT_APPS="com.receiptkit.example:1234567890,com.receiptkit.second:1234567891,com.receiptkit.third:1234567892" \
    RECEIPTKIT_ENVIRONMENTS=Production,Sandbox RECEIPTKIT_ROOT_FILE=TestVectors/pki/root.der RECEIPTKIT_DATABASE_URL="${SERVER_DATABASE_URL:-$URL}" \
    RECEIPTKIT_API_TOKEN=$TOKEN RECEIPTKIT_SWEEP_INTERVAL="${1:-60}" PORT=$PORT LOG_LEVEL=warning "$SERVER" >> "$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    until curl -sf "$BASE/readyz" >/dev/null; do
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log"; echo "scale.sh: the server stopped" >&2; exit 1; }
        sleep 0.05
    done
}
stop_server() { kill "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=""; }
now_ms() { date +%s%3N; }
get() { curl -sf -H "Authorization: Bearer $TOKEN" "$BASE$1"; }
# The seconds one GET takes, best and worst of REPEAT.
timed() { local path=$1 repeat=${2:-5} out=()
    for _ in $(seq "$repeat"); do out+=("$(curl -sf -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $TOKEN" "$BASE$path")"); done
    printf '%s\n' "${out[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f %.1f", a[1]*1000, a[NR]*1000}'; }

# The genuine notifications ingested later, signed now (new subscriptions of the first app).
python3 Server/scripts/scale_notifications.py TestVectors/pki "$WORK/fresh.jsonl" 30000 9100000000000000 \
    com.receiptkit.example 1234567890 "$(now_ms)"

# Bytes on disk a subscriber with five years of monthly history, against the floor: genuine
# notifications (receiptkit-benchmark, signed under the test PKI) of BYTES_KEYS subscriptions,
# 61 periods each, stored through the server into a database of their own. The floor is what
# must be kept of Apple's signed records: each notification's bytes once (the transaction and
# renewal info JWS nested in it included) and each distinct JWS header (the certificate chain)
# once — each body with its JWS headers taken out (the nested ones out of the decoded payload,
# encoded again), plus each distinct header.
BYTES_KEYS=200
"$BENCHMARK" --write-renewal-bodies "$WORK/bytes.jsonl" --renewal-keys $BYTES_KEYS --renewal-first 0 --renewal-count 61 > /dev/null
if [ "$DIALECT" = sqlite ]; then
    SERVER_DATABASE_URL="sqlite:$WORK/bytes.sqlite"
    bytes_query() { sqlite3 -bail "$WORK/bytes.sqlite" "$1"; }
    bytes_size() { bytes_query "PRAGMA wal_checkpoint(TRUNCATE);" > /dev/null
        echo $(( $(stat -c %s "$WORK/bytes.sqlite") + $(stat -c %s "$WORK/bytes.sqlite-wal" 2>/dev/null || echo 0) )); }
else
    BYTES_DB="${PSQL_URL##*/}_bytes"
    query "DROP DATABASE IF EXISTS $BYTES_DB" > /dev/null; query "CREATE DATABASE $BYTES_DB" > /dev/null
    SERVER_DATABASE_URL="${PSQL_URL%/*}/$BYTES_DB${URL#"${URL%%\?*}"}"
    bytes_query() { psql "${PSQL_URL%/*}/$BYTES_DB" -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }
    bytes_size() { bytes_query "CHECKPOINT" > /dev/null; bytes_query "SELECT pg_database_size(current_database())"; }
fi
start_server; stop_server
EMPTY_BYTES=$(bytes_size)
start_server
FLOOR_BYTES=$(python3 - "$WORK/bytes.jsonl" "$PORT" <<'PY'
import base64, http.client, json, sys
def decoded(segment):
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
def encoded(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[2]))
floor, headers = 0, set()
for number, line in enumerate(open(sys.argv[1]), 1):
    connection.request("POST", "/appstore/notifications", body=line.strip().encode(), headers={"Content-Type": "application/json"})
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != 200:
        sys.exit(f"scale.sh: notification {number} of the bytes run answered {answer.status}: {body[:300]!r}")
    # The body without its JWS headers: the payload's nested JWS without theirs, encoded again.
    header, payload, signature = json.loads(line)["signedPayload"].split(".")
    headers.add(header)
    text = decoded(payload).decode()
    data = json.loads(text)["data"]
    for member in ("signedTransactionInfo", "signedRenewalInfo"):
        if member in data:
            nested = data[member].split(".")[0]
            headers.add(nested)
            text = text.replace(nested + ".", ".")
    floor += len(line.strip()) - len(header) - len(payload) + len(encoded(text.encode()))
print(floor + sum(len(header) for header in headers))
PY
)
stop_server
STORED_BYTES=$(( $(bytes_size) - EMPTY_BYTES ))
BYTES_INPUTS=$(bytes_query "SELECT COUNT(*) FROM inputs")
[ "$BYTES_INPUTS" = $(( BYTES_KEYS * 61 )) ] || { echo "scale.sh: the bytes run stored $BYTES_INPUTS inputs of $(( BYTES_KEYS * 61 ))" >&2; exit 1; }
[ "$DIALECT" = sqlite ] && rm -f "$WORK"/bytes.sqlite*
[ "$DIALECT" = postgres ] && query "DROP DATABASE $BYTES_DB" > /dev/null
unset SERVER_DATABASE_URL
echo "five years of monthly history: $(( STORED_BYTES / BYTES_KEYS )) bytes a subscriber on disk, floor $(( FLOOR_BYTES / BYTES_KEYS ))"

if [ -z "${SEEDED_SECONDS:-}" ]; then
    start_server; stop_server
    SEED_START=$(now_ms)
    if [ "$DIALECT" = postgres ]; then SEED_TARGET="$PSQL_URL"; else SEED_TARGET="$DB"; fi
    python3 Server/scripts/scale_seed.py "$DIALECT" "$N" "$SEED_START" "$SEED_TARGET"
    SEED_S=$(( ($(now_ms) - SEED_START) / 1000 ))
    echo "seeded $N subscriptions in $SEED_S s"
else
    # A database scale_seed.py seeded before (SEEDED_SECONDS: how long it took), measured again.
    SEED_S=$SEEDED_SECONDS
fi
if [ "$DIALECT" = postgres ]; then
    # As after any bulk load: vacuumed and analyzed once, so that the reads below meet a settled
    # database, as a serving one is, not autovacuum's first pass over a million new rows.
    VACUUM_START=$(now_ms)
    query "VACUUM ANALYZE" > /dev/null
    echo "VACUUM ANALYZE after the seeding: $(( ($(now_ms) - VACUUM_START) / 1000 )) s"
fi

# Migration v12 over the seeded database, through the server's own migration.
if [ "$DIALECT" = sqlite ]; then MIGRATIONS="DELETE FROM grdb_migrations WHERE identifier LIKE 'v12-%'"
else MIGRATIONS="DELETE FROM receiptkit_migrations WHERE id LIKE 'v12-%'"; fi
if [ -z "${MIGRATION_MS:-}" ]; then
    query "DROP TABLE IF EXISTS subscription_counts; DROP TABLE IF EXISTS notification_days; $MIGRATIONS;" > /dev/null
    MIGRATE_START=$(now_ms); start_server 3600; MIGRATE_MS=$(( $(now_ms) - MIGRATE_START ))
    stop_server
else
    # Measured on this database before (MIGRATION_MS): not again.
    MIGRATE_MS=$MIGRATION_MS
fi
# The reads are served with named entitlements (docs/entitlements.md): every app's monthly and
# yearly plans unlock "pro". Not for the sweep and the ingest below, which measure as before.
cat > "$WORK/entitlements.json" <<'JSON'
{"entitlements": {"pro": {"products": [
  "com.receiptkit.example.premium.monthly", "com.receiptkit.example.premium.yearly",
  "com.receiptkit.second.premium.monthly", "com.receiptkit.second.premium.yearly",
  "com.receiptkit.third.premium.monthly", "com.receiptkit.third.premium.yearly"]}}}
JSON
SERVER_ENV=(RECEIPTKIT_ENTITLEMENTS_FILE="$WORK/entitlements.json")
START_START=$(now_ms); start_server 3600; START_MS=$(( $(now_ms) - START_START ))
echo "migration v12 and start: $MIGRATE_MS ms (a start without it: $START_MS ms)"
# The sweep at start moves the keys time changed since the seed (a database seeded earlier).
until [ "$(query "SELECT COUNT(*) FROM subscriptions WHERE next_change_at <= $(now_ms)")" = 0 ]; do sleep 1; done

# The sample: the server's evaluation of 500 keys equals the seeded derived state.
SAMPLE=$(query "SELECT original_transaction_id || ' ' || bundle_id || ' ' || environment || ' ' || derived_status FROM subscriptions ORDER BY original_transaction_id DESC LIMIT 500 OFFSET $(( N / 3 ))")
MISMATCHES=0
while read -r id bundle environment status; do
    answered=$(get "/v1/subscriptions/$id?bundle_id=$bundle&environment=$environment" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
    [ "$answered" = "$status" ] || { MISMATCHES=$((MISMATCHES + 1)); echo "key $id: seeded $status, the server evaluates $answered" >&2; }
done <<< "$SAMPLE"
SEEDED_COUNTS=$(query "SELECT derived_status || ' ' || CAST(COUNT(*) AS TEXT) FROM subscriptions GROUP BY derived_status ORDER BY derived_status")
OVERVIEW_COUNTS=$(get /v1/overview | python3 -c 'import json,sys
s = json.load(sys.stdin)["subscriptions"]
print("\n".join(sorted(i["status"] + " " + str(i["count"]) for i in s["by_status"] if i["count"])))')
[ "$SEEDED_COUNTS" = "$OVERVIEW_COUNTS" ] || { echo "the overview counts $OVERVIEW_COUNTS, the seeded states $SEEDED_COUNTS" >&2; MISMATCHES=$((MISMATCHES + 1)); }
echo "sample: $MISMATCHES mismatches in 500 keys and the overview's counts"

# Latencies.
read -r OVERVIEW_BEST OVERVIEW_WORST <<< "$(timed /v1/overview 10)"
cat > "$WORK/reads.lua" <<LUA
local n, kind, token = $N, os.getenv("KIND"), "$TOKEN"
local apps = {"com.receiptkit.example", "com.receiptkit.second", "com.receiptkit.third"}
math.randomseed(os.time())
request = function()
  local k = math.random(0, n - 1)
  local environment = (math.floor(k / 3) % 10 == 0) and "Sandbox" or "Production"
  local path
  if kind == "subscription" then
    path = string.format("/v1/subscriptions/%d?bundle_id=%s&environment=%s", 5000000000000000 + k * 8, apps[k % 3 + 1], environment)
  elseif kind == "entitlements" then
    k = k - k % 20 + math.random(0, 16)
    if k >= n then k = k % 17 end
    path = string.format("/v1/customers/00000000-0000-4000-8000-%012d/entitlements", k)
  elseif kind == "entitlement" then
    k = k - k % 20 + math.random(0, 16)
    if k >= n then k = k % 17 end
    path = string.format("/v1/customers/00000000-0000-4000-8000-%012d/entitlements/pro", k)
  elseif kind == "search-transaction" then
    path = string.format("/v1/search?q=%d", 5000000000000000 + k * 8 + 1 - ((k * 69069 + 5) % 4 == 0 and 1 or 0))
  elseif kind == "search-original" then
    path = string.format("/v1/search?q=%d", 5000000000000000 + k * 8)
  else
    k = k - k % 20 + math.random(0, 16)
    if k >= n then k = k % 17 end
    path = string.format("/v1/search?q=00000000-0000-4000-8000-%012d", k)
  end
  return wrk.format("GET", path, {["Authorization"] = "Bearer " .. token})
end
LUA
# wrk's percentile in ms.
percentile() { awk -v p="$2" '$1 == p { v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms/, "", v) } else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 } printf "%.2f", v }' "$1"; }
declare -A P50 P99 RATE
for kind in subscription entitlements entitlement search-transaction search-original search-customer; do
    # A warm-up of the same requests first, not measured: a serving database's pages are in
    # memory, where a just-seeded or just-migrated one's are partly not.
    KIND=$kind wrk -t1 -c4 -d"${WARM_UP_SECONDS:-5}s" -s "$WORK/reads.lua" "$BASE" > /dev/null
    KIND=$kind wrk -t1 -c4 -d"${SECONDS_PER_RUN}s" --latency -s "$WORK/reads.lua" "$BASE" > "$WORK/$kind.txt"
    grep -q "Non-2xx" "$WORK/$kind.txt" && { cat "$WORK/$kind.txt"; echo "scale.sh: $kind answered errors" >&2; exit 1; }
    P50[$kind]=$(percentile "$WORK/$kind.txt" 50%); P99[$kind]=$(percentile "$WORK/$kind.txt" 99%)
    RATE[$kind]=$(awk '/Requests\/sec/ {printf "%d", $2}' "$WORK/$kind.txt")
    echo "$kind, 4 connections: ${RATE[$kind]}/s, p50 ${P50[$kind]} ms, p99 ${P99[$kind]} ms"
done
LAST_EVENT=$(query "SELECT MAX(id) FROM change_events")
# Each page read once untimed first, as the reads above are warmed up: the first read of a page no
# request has touched since the seeding is the disk's (217 ms for the first page on PostgreSQL at
# 65e641e, then 5 to 14 ms), not the server's, and a feed consumer reads the pages it reads again.
FEED_COLD=()
for after in 0 $(( LAST_EVENT / 2 )) $(( LAST_EVENT - 500 )); do
    FEED_COLD+=("$(curl -sf -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $TOKEN" "$BASE/v1/events?after=$after&limit=500" |
        awk '{printf "%.1f", $1 * 1000}')")
done
read -r FEED_START_BEST FEED_START <<< "$(timed "/v1/events?after=0&limit=500")"
read -r FEED_MIDDLE_BEST FEED_MIDDLE <<< "$(timed "/v1/events?after=$(( LAST_EVENT / 2 ))&limit=500")"
read -r FEED_END_BEST FEED_END <<< "$(timed "/v1/events?after=$(( LAST_EVENT - 500 ))&limit=500")"
echo "feed pages read first (untimed in the table): ${FEED_COLD[*]} ms"

# A sweep pass over 10,000 keys made due (their state unchanged: the pass evaluates each).
stop_server
SERVER_ENV=()
query "UPDATE subscriptions SET next_change_at = 1 WHERE original_transaction_id IN (SELECT original_transaction_id FROM subscriptions WHERE derived_status = 'active' AND next_change_at IS NOT NULL ORDER BY original_transaction_id LIMIT 10000)" > /dev/null
SWEEP_START=$(now_ms); start_server 1
until [ "$(query "SELECT COUNT(*) FROM subscriptions WHERE next_change_at = 1")" = 0 ]; do sleep 0.2; done
SWEEP_MS=$(( $(now_ms) - SWEEP_START - START_MS ))
read -r OVERVIEW_AFTER_BEST OVERVIEW_AFTER <<< "$(timed /v1/overview 5)"

# Ingest: genuine notifications of new subscriptions, 10^6 keys present.
OPENSSL_VERIFY=$(openssl speed -seconds 3 ecdsap256 2>/dev/null | awk '/256 bits ecdsa \(nistp256\)/ {print $NF}')
cat > "$WORK/post.lua" <<'LUA'
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
local counter = tonumber(os.getenv("FIRST") or "0")
request = function()
  counter = counter + 1
  return wrk.format("POST", "/appstore/notifications", {["Content-Type"] = "application/json"}, bodies[(counter - 1) % #bodies + 1])
end
LUA
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
NEXT=0
declare -A INGEST INGEST_CPU INGEST_P99 INGEST_TIMEOUTS
for connections in 4 128; do
    before=$(cpu_ticks)
    BODIES="$WORK/fresh.jsonl" FIRST=$NEXT wrk -t1 -c"$connections" -d"${SECONDS_PER_RUN}s" --latency -s "$WORK/post.lua" "$BASE" > "$WORK/ingest-$connections.txt"
    after=$(cpu_ticks)
    grep -q "Non-2xx" "$WORK/ingest-$connections.txt" && { cat "$WORK/ingest-$connections.txt"; echo "scale.sh: ingest answered errors" >&2; exit 1; }
    requests=$(awk '/requests in/ {print $1}' "$WORK/ingest-$connections.txt")
    NEXT=$(( NEXT + requests + connections ))
    [ "$NEXT" -lt 30000 ] || { echo "scale.sh: too few notifications signed for the ingest runs" >&2; exit 1; }
    INGEST[$connections]=$(awk '/Requests\/sec/ {printf "%d", $2}' "$WORK/ingest-$connections.txt")
    # Requests wrk gave up on after its 2 s timeout (their answer, if any, unread).
    INGEST_TIMEOUTS[$connections]=$(awk '/Socket errors/ { for (i = 1; i <= NF; i++) if ($i == "timeout") { gsub(",", "", $(i + 1)); print $(i + 1) } }' "$WORK/ingest-$connections.txt")
    INGEST_CPU[$connections]=$(python3 -c "print(round($requests * $(getconf CLK_TCK) / max(1, $(( after - before )))))")
    INGEST_P99[$connections]=$(percentile "$WORK/ingest-$connections.txt" 99%)
done
PEAK_KB=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status")
stop_server

# One reconcile window (POST /v1/reconcile) against Get Notification History served by
# scale_fake_history.py, which checks each token: RECONCILED notifications of the first app in
# Production, half of them posted to the webhook above (replays), half never posted (recovered).
RECONCILED=1000
[ $(( NEXT + RECONCILED / 2 )) -lt 30000 ] || { echo "scale.sh: too few notifications signed for the reconcile window" >&2; exit 1; }
{ head -n $(( RECONCILED / 2 )) "$WORK/fresh.jsonl"; sed -n "$(( NEXT + 1 )),$(( NEXT + RECONCILED / 2 ))p" "$WORK/fresh.jsonl"; } > "$WORK/history.jsonl"
# What the window must recover: those of its notifications not stored now. A posted one may not
# be (a request wrk gave up on at its 2 s timeout, answered 503 or cut short), and reconciling
# is what brings it back.
STORED_BEFORE=$(query "SELECT COUNT(*) FROM inputs WHERE dedup_key IN ($(python3 -c 'import base64, json, sys
for line in open(sys.argv[1]):
    payload = json.loads(line)["signedPayload"].split(".")[1]
    uuid = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["notificationUUID"]
    print(f"\x27notification:{uuid}\x27")' "$WORK/history.jsonl" | paste -sd,))")
python3 -c 'from cryptography.hazmat.primitives import serialization; from cryptography.hazmat.primitives.asymmetric import ec
print(ec.generate_private_key(ec.SECP256R1()).private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())' > "$WORK/key.p8"
python3 Server/scripts/scale_fake_history.py "$WORK/history.jsonl" "$WORK/key.p8" SCALEKEY01 00000000-scale-issuer \
    com.receiptkit.example,com.receiptkit.second,com.receiptkit.third "$WORK/fake.port" > "$WORK/fake.out" 2> "$WORK/fake.err" &
FAKE_PID=$!
until [ -s "$WORK/fake.port" ]; do kill -0 "$FAKE_PID" || { cat "$WORK/fake.err"; exit 1; }; sleep 0.05; done
FAKE="http://127.0.0.1:$(cat "$WORK/fake.port")"
SERVER_ENV=(RECEIPTKIT_APPSTORE_KEY_ID=SCALEKEY01 RECEIPTKIT_APPSTORE_ISSUER_ID=00000000-scale-issuer
    RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE="$WORK/key.p8" RECEIPTKIT_APPSTORE_API_URL="$FAKE"
    RECEIPTKIT_APPSTORE_SANDBOX_API_URL="$FAKE/sandbox" RECEIPTKIT_RECONCILE_INTERVAL=0)
start_server
RECONCILE_START=$(now_ms)
curl -sf -X POST -H "Authorization: Bearer $TOKEN" "$BASE/v1/reconcile" > "$WORK/reconcile.json" ||
    { cat "$WORK/fake.err" "$WORK/server.log" | tail -20; echo "scale.sh: the reconcile window failed" >&2; exit 1; }
RECONCILE_MS=$(( $(now_ms) - RECONCILE_START ))
kill "$FAKE_PID"; wait "$FAKE_PID" || { cat "$WORK/fake.err"; echo "scale.sh: the fake refused a token" >&2; exit 1; }
read -r RECONCILE_FOUND RECONCILE_RECOVERED RECONCILE_REJECTED RECONCILE_PAIRS <<< "$(python3 -c 'import json, sys
a = json.load(open(sys.argv[1])); print(a["notifications"], a["recovered"], a["rejected"], sum(1 for p in a["pairs"] if not p.get("error")))' "$WORK/reconcile.json")"
[ "$RECONCILE_FOUND $RECONCILE_RECOVERED $RECONCILE_REJECTED $RECONCILE_PAIRS" = "$RECONCILED $(( RECONCILED - STORED_BEFORE )) 0 6" ] || {
    cat "$WORK/reconcile.json"; echo "scale.sh: the reconcile window found $RECONCILE_FOUND notifications, recovered $RECONCILE_RECOVERED of the $(( RECONCILED - STORED_BEFORE )) not stored, rejected $RECONCILE_REJECTED, in $RECONCILE_PAIRS pairs of 6" >&2; exit 1; }
echo "reconcile window: $RECONCILED notifications ($RECONCILE_RECOVERED recovered) in $RECONCILE_MS ms"
stop_server
SERVER_ENV=()

# The backup while the server serves subscription reads at 4 connections: SQLite's online backup
# (receiptkit-server backup --to), or pg_dump, the tool docs/operations.md names for PostgreSQL.
start_server
KIND=subscription wrk -t1 -c4 -d3600s --latency -s "$WORK/reads.lua" "$BASE" > "$WORK/backup-reads.txt" &
WRK_PID=$!
sleep 1
BACKUP_START=$(now_ms)
if [ "$DIALECT" = sqlite ]; then
    RECEIPTKIT_DATABASE_URL="$URL" "$SERVER" backup --to "$WORK/backup.sqlite"
    BACKUP_MS=$(( $(now_ms) - BACKUP_START ))
    BACKUP_BYTES=$(stat -c %s "$WORK/backup.sqlite")
    [ "$(sqlite3 "$WORK/backup.sqlite" "PRAGMA quick_check")" = ok ] || { echo "scale.sh: the backup fails quick_check" >&2; exit 1; }
    BACKUP_HOW="backup --to"
else
    pg_dump -Fc -f "$WORK/backup.dump" "$PSQL_URL"
    BACKUP_MS=$(( $(now_ms) - BACKUP_START ))
    BACKUP_BYTES=$(stat -c %s "$WORK/backup.dump")
    BACKUP_HOW="pg_dump -Fc"
fi
kill -INT "$WRK_PID"; wait "$WRK_PID" || true
grep -q "Non-2xx" "$WORK/backup-reads.txt" && { cat "$WORK/backup-reads.txt"; echo "scale.sh: reads failed during the backup" >&2; exit 1; }
BACKUP_READS_P99=$(percentile "$WORK/backup-reads.txt" 99%)
rm -f "$WORK/backup.sqlite" "$WORK/backup.dump"
stop_server

# Size on disk, checkpointed; and what the seeded and the genuine rows weigh.
if [ "$DIALECT" = sqlite ]; then
    query "PRAGMA wal_checkpoint(TRUNCATE);" > /dev/null
    BYTES=$(( $(stat -c %s "$DB") + $(stat -c %s "$DB-wal" 2>/dev/null || echo 0) ))
else
    BYTES=$(query "SELECT pg_database_size(current_database())")
fi
INPUTS=$(query "SELECT COUNT(*) FROM inputs")
GENUINE=$(query "SELECT CAST(AVG(LENGTH(raw)) AS INTEGER) || ' ' || CAST(AVG(LENGTH(record)) AS INTEGER) FROM inputs WHERE dedup_key NOT LIKE 'notification:%-0000-4000-8000-%'")
SEEDED=$(query "SELECT CAST(AVG(LENGTH(raw)) AS INTEGER) || ' ' || CAST(AVG(LENGTH(record)) AS INTEGER) FROM inputs WHERE id <= 1000")

ratio() { python3 -c "print(f'{$1 / ($OPENSSL_VERIFY / 3):.2f}')"; }
MISSED=0
check() { # check NAME FIGURE LIMIT UNIT
    local met=yes; python3 -c "import sys; sys.exit(0 if $2 < $3 else 1)" || { met=no; MISSED=1; }
    printf '| %s | %s %s | < %s %s | %s |\n' "$1" "$2" "$4" "$3" "$4" "$met"; }
echo
echo "receiptkit-server at $N subscriptions, $DIALECT ($(git rev-parse --short HEAD), $(date -u +%Y-%m-%d))"
echo
echo "| measure | figure | target | met |"
echo "|---|---|---|---|"
check "overview, worst of 10" "$OVERVIEW_WORST" 200 ms
check "overview with 10,000 keys just swept, worst of 5" "$OVERVIEW_AFTER" 200 ms
check "subscription read p99, 4 connections (p50 ${P50[subscription]} ms, ${RATE[subscription]}/s)" "${P99[subscription]}" 10 ms
check "customer entitlements p99, 4 connections (p50 ${P50[entitlements]} ms, ${RATE[entitlements]}/s)" "${P99[entitlements]}" 10 ms
check "one named entitlement (GET …/entitlements/pro) p99, 4 connections (p50 ${P50[entitlement]} ms, ${RATE[entitlement]}/s)" "${P99[entitlement]}" 5 ms
check "search by transaction id p99 (p50 ${P50[search-transaction]} ms)" "${P99[search-transaction]}" 20 ms
check "search by original transaction id p99 (p50 ${P50[search-original]} ms)" "${P99[search-original]}" 20 ms
check "search by customer id p99 (p50 ${P50[search-customer]} ms)" "${P99[search-customer]}" 20 ms
check "feed page of 500 from the start, worst of 5 after one" "$FEED_START" 50 ms
check "feed page of 500 from the middle, worst of 5 after one" "$FEED_MIDDLE" 50 ms
check "feed page of 500 at the end, worst of 5 after one" "$FEED_END" 50 ms
check "migration v12 (and start), server not serving meanwhile" "$MIGRATE_MS" 60000 ms
printf '| sweep pass over 10,000 due keys | %s ms (%s keys/s) | follows the due keys | — |\n' "$SWEEP_MS" "$(( 10000 * 1000 / (SWEEP_MS > 0 ? SWEEP_MS : 1) ))"
printf '| ingest, 4 connections | %s /s, %s per server CPU-s, p99 %s ms, %s past 2 s; ÷ (OpenSSL verify ÷ 3) %s | — | — |\n' "${INGEST[4]}" "${INGEST_CPU[4]}" "${INGEST_P99[4]}" "${INGEST_TIMEOUTS[4]:-0}" "$(ratio "${INGEST_CPU[4]}")"
printf '| ingest, 128 connections | %s /s, %s per server CPU-s, p99 %s ms, %s past 2 s; ÷ (OpenSSL verify ÷ 3) %s | — | — |\n' "${INGEST[128]}" "${INGEST_CPU[128]}" "${INGEST_P99[128]}" "${INGEST_TIMEOUTS[128]:-0}" "$(ratio "${INGEST_CPU[128]}")"
printf '| seeding | %s s (%s inputs) | < 900 s | %s |\n' "$SEED_S" "$INPUTS" "$([ "$SEED_S" -lt 900 ] && echo yes || echo no)"
printf '| database on disk | %s MB: %s bytes a subscription, %s an input | — | — |\n' "$(( BYTES / 1000000 ))" "$(( BYTES / N ))" "$(( BYTES / INPUTS ))"
printf '| a subscriber with five years of monthly history (61 genuine notifications through the server), on disk | %s bytes, %s× the floor of %s (Apple'"'"'s signed bytes, each header once) | < 1.5× | %s |\n' \
    "$(( STORED_BYTES / BYTES_KEYS ))" "$(python3 -c "print(f'{$STORED_BYTES / $FLOOR_BYTES:.2f}')")" "$(( FLOOR_BYTES / BYTES_KEYS ))" \
    "$(python3 -c "print('yes' if $STORED_BYTES < 1.5 * $FLOOR_BYTES else 'no')")"
python3 -c "import sys; sys.exit(0 if $STORED_BYTES < 1.5 * $FLOOR_BYTES else 1)" || MISSED=1
printf '| server peak memory (VmHWM) | %s MB | — | — |\n' "$(( PEAK_KB / 1024 ))"
printf '| reconcile window, %s notifications (%s recovered, the rest replays), 6 pairs | %s ms | — | — |\n' "$RECONCILED" "$RECONCILE_RECOVERED" "$RECONCILE_MS"
printf '| backup (%s) while serving reads at 4 connections | %s ms, %s MB; reads p99 %s ms meanwhile | — | — |\n' "$BACKUP_HOW" "$BACKUP_MS" "$(( BACKUP_BYTES / 1000000 ))" "$BACKUP_READS_P99"
echo
echo "OpenSSL ECDSA P-256 verify, one core: $OPENSSL_VERIFY /s. Inputs' raw and record bytes, mean: genuine $GENUINE, seeded $SEEDED."
[ "$MISMATCHES" = 0 ] || { echo "scale.sh: the seeded states disagree with the server's evaluation" >&2; exit 1; }
[ "$MISSED" = 0 ] || { echo "scale.sh: a target was missed" >&2; exit 1; }
