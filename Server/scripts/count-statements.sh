#!/usr/bin/env bash
# The statements receiptkit-server sends the database for one notification, as PostgreSQL logs
# them (log_statement = all): a first purchase (SUBSCRIBED), then renewals (DID_RENEW) of the same
# subscription, each posted alone to the webhook and counted from the log between its request and
# its answer: reads (SELECT), writes (INSERT, UPDATE, DELETE) and the transaction's own statements
# (BEGIN, COMMIT, SAVEPOINT, advisory locks). No webhook is configured and the sweep waits an hour,
# so no background work runs meanwhile.
#
# Any server binary can be counted, an older commit's included, to compare two versions on the
# same notifications. Needs PostgreSQL's server binaries (Debian's postgresql) and curl; runs as
# root (the database as user postgres) in a temporary directory, on loopback, and stops what it
# started.
# Usage: Server/scripts/count-statements.sh [SERVER_BINARY]   (default: the debug receiptkit-server)
# SHOW=1 also prints each notification's statements on standard error.
# Environment: RENEWALS (renewals after the first purchase, default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
SERVER="${1:-$(cd Server && swift build --show-bin-path)/receiptkit-server}"
RENEWALS="${RENEWALS:-3}"
[ -x "$SERVER" ] || { echo "count-statements.sh: no server binary at $SERVER (swift build --package-path Server)" >&2; exit 64; }
command -v curl >/dev/null || { echo "count-statements.sh: needs curl" >&2; exit 1; }
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -n "$PG_BIN" ] || { echo "count-statements.sh: needs PostgreSQL's server (apt-get install postgresql)" >&2; exit 1; }

WORK="$(mktemp -d /tmp/receiptkit-count.XXXXXX)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    su postgres -c "'$PG_BIN/pg_ctl' -D '$WORK/data' -m fast stop" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
chown postgres "$WORK"

# A free loopback port: bind to 0 and read what the kernel gave.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PG_PORT="$(free_port)"
HTTP_PORT="$(free_port)"
su postgres -c "'$PG_BIN/initdb' -D '$WORK/data' -A trust -U postgres" >/dev/null
su postgres -c "'$PG_BIN/pg_ctl' -D '$WORK/data' -l '$WORK/postgres.log' -w \
    -o \"-c listen_addresses=127.0.0.1 -p $PG_PORT -k '$WORK' -c log_statement=all -c log_line_prefix='%p '\" start" >/dev/null
su postgres -c "'$PG_BIN/createdb' -h 127.0.0.1 -p $PG_PORT receiptkit_count"

swift build --product receiptkit-benchmark >/dev/null
"$(swift build --show-bin-path)/receiptkit-benchmark" --write-renewal-bodies "$WORK/bodies.jsonl" --renewal-keys 1 \
    --renewal-first 0 --renewal-count $((RENEWALS + 1))

RECEIPTKIT_BUNDLE_ID=com.receiptkit.example RECEIPTKIT_APP_APPLE_ID=1234567890 RECEIPTKIT_ENVIRONMENT=Sandbox \
RECEIPTKIT_ROOT_FILE=TestVectors/pki/root.der RECEIPTKIT_SWEEP_INTERVAL=3600 LOG_LEVEL=error PORT="$HTTP_PORT" \
RECEIPTKIT_DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/receiptkit_count?sslmode=disable" \
    "$SERVER" 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/readyz" >/dev/null 2>&1 && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.1
done
curl -sf "http://127.0.0.1:$HTTP_PORT/readyz" >/dev/null || { echo "count-statements.sh: the server did not become ready" >&2; exit 1; }
sleep 1  # whatever the server does once at start (its first reconcile, sweep and delivery rounds) is done

# The statements PostgreSQL logged since line $1 of its log, by kind.
show() { tail -n +"$(($1 + 1))" "$WORK/postgres.log" | grep -E "LOG:  (statement|execute [^:]*):" | sed -E "s/.*LOG:  (statement|execute [^:]*): *//" | cut -c1-150; }
count() {
    tail -n +"$(($1 + 1))" "$WORK/postgres.log" | grep -E 'LOG:  (statement|execute [^:]*):' |
        sed -E 's/.*LOG:  (statement|execute [^:]*): *//' | awk '
            { verb = toupper($1) }
            verb == "SELECT" && $0 ~ /pg_(try_)?advisory/ { control++; next }
            verb == "SELECT" || verb == "WITH" { reads++; next }
            verb == "INSERT" || verb == "UPDATE" || verb == "DELETE" { writes++; next }
            { control++ }
            END { printf "%d reads, %d writes, %d transaction statements", reads, writes, control }'
}

printf '%-34s %s\n' "notification" "statements (PostgreSQL log)"
number=0
while IFS= read -r body; do
    mark="$(wc -l < "$WORK/postgres.log")"
    status="$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary "$body" \
        "http://127.0.0.1:$HTTP_PORT/appstore/notifications")"
    [ "$status" = 200 ] || { echo "count-statements.sh: notification $number answered $status" >&2; exit 1; }
    if [ "$number" = 0 ]; then name="first purchase (SUBSCRIBED)"; else name="renewal $number (DID_RENEW)"; fi
    printf '%-34s %s\n' "$name" "$(count "$mark")"
    [ -z "${SHOW:-}" ] || show "$mark" >&2
    number=$((number + 1))
done < "$WORK/bodies.jsonl"
