#!/usr/bin/env python3
"""Seeds a migrated, empty receiptkit-server database with N subscriptions, for
Server/scripts/scale.sh: bulk INSERT … SELECT statements, the rows generated in the database.

Usage: scale_seed.py sqlite N NOW_MS PATH | scale_seed.py postgres N NOW_MS URL

The JSON the server keeps of each record and copy is stored deflated, as the server stores it
(Store/StoredJSON.swift, with the dictionary beside it): on SQLite by a function of this script's
that the statements call (one transaction), on PostgreSQL, which cannot deflate, by three steps —
the rows are generated into unlogged tables with their JSON as text, each JSON streamed through
this script (`\copy` out, deflated, `\copy` in), then inserted with it and the tables dropped.

What each key gets (every value derived from its number k, so a run is repeatable):
- an app of three (com.receiptkit.example, .second, .third) and an environment (one key in ten
  Sandbox, the rest Production);
- a history of 1 to 4 periods (monthly, or yearly for one key in five), the first a free trial
  for two keys in five, each period a transaction copy signed a minute after it starts;
- a state now: active (55%), expired with auto-renew off (25%), in a grace period with Apple's
  retries (5%), in billing retry without grace (7%), refunded (4%, a revocation dated three days
  into the last period), or active on a yearly plan (4%);
- the renewal info that state needs; one customer linked (85%), a second on some (5%);
- per transaction, the verified notification that brought it (SUBSCRIBED, DID_RENEW; and
  DID_FAIL_TO_RENEW, DID_CHANGE_RENEWAL_STATUS or REFUND for the last), its link to the key, and
  the feed event it caused;
- its row of `subscriptions` with the derived state ReceiptKit evaluates the copies to now and
  `next_change_at`, the instant that state may change by time alone (scale.sh checks both against
  the server's own evaluation on a sample of keys).
The overview's counts (`subscription_counts`, `notification_days`) are then filled by the same
statements as migration v12's, which scale.sh times.

The rows are in the formats the server writes (copies as `LedgerCopy.jsonBytes()`, records in
verify-receipt's schema, both deflated; events as the feed's JSON); a notification's raw bytes are
not a signed JWS but incompressible bytes of a real notification's stored size (RAW_BYTES).
"""
import base64
import os
import shlex
import sqlite3
import struct
import subprocess
import sys
import zlib

RAW_BYTES = 1_248  # a stored notification's raw bytes, compacted and deflated (scale.sh prints the real mean)
DAY = 86_400_000
APPS = ["com.receiptkit.example", "com.receiptkit.second", "com.receiptkit.third"]


DICTIONARY = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "ReceiptKitServer", "Store",
                               "stored-json-dictionary-1.txt"), "rb").read()


def stored_json(json: str) -> str:
    """The server's stored form of a JSON text (StoredJSON.storeValue): `~` and the base64url of
    format 1, the length as LEB128, the CRC-32 little-endian and a raw deflate stream made as the
    server's shim makes it (level 9, an 8 KB window, memory level 7, the dictionary preset)."""
    data = json.encode()
    length, prefix = len(data), bytearray([1])
    while True:
        byte, length = length & 0x7F, length >> 7
        prefix.append(byte | (0x80 if length else 0))
        if not length:
            break
    deflate = zlib.compressobj(9, zlib.DEFLATED, -13, 7, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
    stream = deflate.compress(data) + deflate.flush()
    return "~" + base64.urlsafe_b64encode(bytes(prefix) + struct.pack("<I", zlib.crc32(data)) + stream).rstrip(b"=").decode()


# The tables whose JSON column is stored deflated, with their other columns.
STORED = {
    "transaction_copies": ("copy", ["original_transaction_id", "bundle_id", "environment", "transaction_id", "known_from",
                                    "is_latest", "is_upgraded", "purchase_date", "expires_date"]),
    "renewal_info_copies": ("copy", ["original_transaction_id", "environment", "known_from"]),
    "inputs": ("record", ["id", "dedup_key", "kind", "raw", "received_at", "raw_encoding", "source"]),
}
# The order rows are stored in on PostgreSQL, as the server would have stored them: by key, and the
# inputs by id (a join's order would group them by their raw stand-in, which a dump's compression
# then folds).
ORDER = {"transaction_copies": "original_transaction_id, transaction_id", "renewal_info_copies": "original_transaction_id, known_from",
         "inputs": "id"}


def stored_insert(postgres: bool, table: str, select: str) -> str:
    """The statement that stores `select`'s rows (its columns those of STORED[table], then the JSON
    as `json`): on SQLite straight into the table, the JSON deflated by `stored_json`; on PostgreSQL
    into the unlogged table seed_json_TABLE, numbered, for the steps after the transaction."""
    column, columns = STORED[table]
    if postgres:
        return f"CREATE UNLOGGED TABLE seed_json_{table} AS SELECT ROW_NUMBER() OVER (ORDER BY {ORDER[table]}) AS n, r.* FROM ({select}) AS r;"
    names = ", ".join(columns)
    return f"INSERT INTO {table} ({names}, {column}) SELECT {names}, stored_json(json) FROM ({select}) AS r;"


def deflate_postgres(url: str) -> None:
    """Each seed_json_TABLE's JSON through `scale_seed.py stream` into the table: two pipelines at
    once (one per core), `\\copy` out, deflated, `\\copy` in; then the unlogged tables dropped."""
    psql = f"psql {shlex.quote(url)} -X -q -v ON_ERROR_STOP=1"
    for table, (column, columns) in STORED.items():
        subprocess.run(f"{psql} -c 'CREATE UNLOGGED TABLE seed_stored_{table} (n BIGINT NOT NULL, stored TEXT NOT NULL)'",
                       shell=True, check=True)
        pipelines = [subprocess.Popen(
            f"set -o pipefail; {psql} -c '\\copy (SELECT n, json FROM seed_json_{table} WHERE n % 2 = {part}) TO STDOUT'"
            f" | {shlex.quote(sys.executable)} {shlex.quote(os.path.abspath(__file__))} stream"
            f" | {psql} -c '\\copy seed_stored_{table} (n, stored) FROM STDIN'",
            shell=True, executable="/bin/bash") for part in range(2)]
        if any(pipeline.wait() != 0 for pipeline in pipelines):
            sys.exit(f"scale_seed.py: streaming {table}'s JSON failed")
        names = ", ".join(columns)
        selected = ", ".join(f"j.{name}" for name in columns)
        subprocess.run(f"{psql} -c {shlex.quote(f'INSERT INTO {table} ({names}, {column}) SELECT {selected}, s.stored FROM seed_json_{table} j JOIN seed_stored_{table} s ON s.n = j.n ORDER BY j.n')}"
                       f" -c 'DROP TABLE seed_json_{table}, seed_stored_{table}'", shell=True, check=True)


def stream() -> None:
    """COPY text lines `n<TAB>json` in, `n<TAB>stored` out (the seeded JSON holds no character
    COPY's text format escapes: checked)."""
    for line in sys.stdin.buffer:
        number, json = line.rstrip(b"\n").split(b"\t", 1)
        if b"\\" in json:
            sys.exit("scale_seed.py: a seeded JSON holds a backslash, which COPY's text format escapes")
        sys.stdout.buffer.write(number + b"\t" + stored_json(json.decode()).encode() + b"\n")


def main() -> None:
    if sys.argv[1:] == ["stream"]:
        return stream()
    dialect, count, now, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    postgres = dialect == "postgres"

    def pad(column: str, width: int) -> str:
        """The column's number as text, zero-padded to `width` digits."""
        if postgres:
            return f"lpad(CAST({column} AS TEXT), {width}, '0')"
        return f"substr('{'0' * width}' || CAST({column} AS TEXT), -{width}, {width})"
    def iso(column: str) -> str:
        """The column's milliseconds since 1970 as a record's date: ISO 8601 UTC with milliseconds."""
        if postgres:
            return f"""to_char(to_timestamp({column} / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""
        return f"strftime('%Y-%m-%dT%H:%M:%fZ', {column} / 1000.0, 'unixepoch')"
    if postgres:
        numbers = f"(SELECT CAST(k AS BIGINT) AS k FROM generate_series(0, {count - 1}) AS k) AS n"
        pool = ("SELECT i, decode(string_agg(md5(CAST(i * 1000 + j AS TEXT)), '' ORDER BY j), 'hex') AS raw "
                f"FROM generate_series(0, 999) AS i, generate_series(0, {RAW_BYTES // 16 - 1}) AS j GROUP BY i")
        begin, temp = "BEGIN;", "CREATE TEMP TABLE"
    else:
        numbers = (f"(WITH RECURSIVE r(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM r WHERE k < {count - 1}) "
                   "SELECT k FROM r) AS n")
        pool = (f"WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 999) "
                f"SELECT i, randomblob({RAW_BYTES // 16 * 16}) AS raw FROM r")
        begin, temp = "PRAGMA journal_mode = DELETE;\nPRAGMA synchronous = OFF;\nPRAGMA temp_store = FILE;\nBEGIN;", "CREATE TEMP TABLE"

    app = "CASE k % 3 " + " ".join(f"WHEN {i} THEN '{name}'" for i, name in enumerate(APPS)) + " END"
    sql = [begin, f"{temp} seed_raw AS {pool};"]
    # Each key's shape: h1 picks the state, h2 the instant, h3 the history's length.
    sql.append(f"""{temp} seed_shape AS
SELECT k, {app} AS bundle_id, CASE WHEN (k / 3) % 10 = 0 THEN 'Sandbox' ELSE 'Production' END AS environment,
    CAST(5000000000000000 + k * 8 AS TEXT) AS otid, 5000000000000000 + k * 8 AS tx0,
    CASE WHEN (k * 2654435761) % 100 < 55 THEN 'active' WHEN (k * 2654435761) % 100 < 80 THEN 'expired'
         WHEN (k * 2654435761) % 100 < 85 THEN 'grace_period' WHEN (k * 2654435761) % 100 < 92 THEN 'billing_retry'
         WHEN (k * 2654435761) % 100 < 96 THEN 'revoked' ELSE 'yearly' END AS shape,
    (k * 40503 + 17) % 999983 AS h2, 1 + (k * 69069 + 5) % 4 AS periods, (k * 7) % 5 < 2 AS trial
FROM {numbers};""")
    sql.append(f"""{temp} seed_keys AS
SELECT k, bundle_id, environment, otid, tx0, periods, trial AND shape <> 'yearly' AS trial,
    CASE WHEN shape = 'yearly' THEN 'active' ELSE shape END AS status,
    bundle_id || CASE WHEN shape = 'yearly' THEN '.premium.yearly' ELSE '.premium.monthly' END AS product,
    CASE WHEN shape = 'yearly' THEN {365 * DAY} ELSE {30 * DAY} END AS len,
    CASE shape
        WHEN 'active' THEN {now} + 3600000 + h2 * 2500
        WHEN 'yearly' THEN {now} + 3600000 + h2 * 31000
        WHEN 'expired' THEN {now} - {DAY} - h2 * 60000
        WHEN 'grace_period' THEN {now} - 3600000 - h2 * 400
        WHEN 'billing_retry' THEN {now} - {DAY} - h2 * 4300
        ELSE {now} + 3600000 + h2 * 1700 END AS period_end
FROM seed_shape;""")
    # The periods: t = 0 the first, periods - 1 the current.
    sql.append(f"{temp} seed_periods AS SELECT CAST(t AS BIGINT) AS t FROM generate_series(0, 3) AS t;" if postgres
               else f"{temp} seed_periods AS WITH RECURSIVE r(t) AS (SELECT 0 UNION ALL SELECT t + 1 FROM r WHERE t < 3) SELECT t FROM r;")
    sql.append(f"""{temp} seed_transactions AS
SELECT s.k, s.bundle_id, s.environment, s.otid, CAST(s.tx0 + p.t AS TEXT) AS transaction_id, p.t, s.periods, s.status, s.product,
    s.period_end - (s.periods - p.t) * s.len AS purchase_date, s.period_end - (s.periods - 1 - p.t) * s.len AS expires_date,
    CASE WHEN s.status = 'revoked' AND p.t = s.periods - 1 THEN s.period_end - s.len + {3 * DAY} END AS revocation_date,
    s.trial AND p.t = 0 AS trial
FROM seed_keys s JOIN seed_periods p ON p.t < s.periods;""")
    known = "COALESCE(revocation_date, purchase_date + 60000)"
    sql.append(stored_insert(postgres, "transaction_copies", f"""
SELECT otid AS original_transaction_id, bundle_id, environment, transaction_id, {known} AS known_from, 1 AS is_latest,
    0 AS is_upgraded, purchase_date, expires_date,
    '{{"key":{{"bundleId":"' || bundle_id || '","environment":"' || environment || '","originalTransactionId":"' || otid
    || '"}},"transactionId":"' || transaction_id || '","knownFrom":' || CAST({known} AS TEXT)
    || ',"purchaseDate":' || CAST(purchase_date AS TEXT) || ',"expiresDate":' || CAST(expires_date AS TEXT)
    || COALESCE(',"revocationDate":' || CAST(revocation_date AS TEXT), '') || ',"isUpgraded":false,"productId":"' || product
    || '","productType":"auto_renewable_subscription","subscriptionGroupId":"21581234"'
    || COALESCE(CASE WHEN revocation_date IS NOT NULL THEN ',"revocationReason":"other"' END, '')
    || ',"ownershipType":"purchased"'
    || CASE WHEN trial THEN ',"offer":{{"type":"introductory","discountType":"free_trial","period":"P1M"}}' ELSE '' END
    || ',"appAccountToken":"00000000-0000-4000-8000-' || {pad("k", 12)} || '"}}' AS json
FROM seed_transactions"""))
    # The renewal info the state needs: signed at the last period's start, or (retries) at its end.
    sql.append(stored_insert(postgres, "renewal_info_copies", f"""
SELECT otid AS original_transaction_id, environment, info_known AS known_from,
    '{{"environment":"' || environment || '","originalTransactionId":"' || otid || '","knownFrom":' || CAST(info_known AS TEXT)
    || CASE WHEN status = 'grace_period' THEN ',"gracePeriodExpiresDate":' || CAST(period_end + {6 * DAY} AS TEXT) ELSE '' END
    || ',"autoRenewStatus":' || CASE WHEN status = 'expired' THEN '0,"expirationIntent":1' WHEN status IN ('grace_period', 'billing_retry') THEN '1,"expirationIntent":2' ELSE '1' END
    || ',"isInBillingRetryPeriod":' || CASE WHEN status IN ('grace_period', 'billing_retry') THEN 'true' ELSE 'false' END
    || ',"productId":"' || product || '","autoRenewProductId":"' || product || '"}}' AS json
FROM (SELECT k, otid, environment, status, product, period_end,
        CASE WHEN status IN ('grace_period', 'billing_retry') THEN period_end + 60000
             WHEN status = 'expired' THEN period_end - len + {DAY} ELSE period_end - len + 60000 END AS info_known
      FROM seed_keys) AS i"""))
    # Each key's row: the derived state now, and when it may change by time alone.
    sql.append(f"""INSERT INTO subscriptions (bundle_id, environment, original_transaction_id, updated_at, last_known_from,
    last_known_transaction_id, derived_status, derived_product_id, derived_transaction_id, derived_expires_at, derived_will_renew,
    derived_subscription, derived_family_shared, next_change_at, derived_at)
SELECT bundle_id, environment, otid, {now},
    CASE WHEN status = 'revoked' THEN period_end - len + {3 * DAY} ELSE period_end - len + 60000 END,
    CAST(tx0 + periods - 1 AS TEXT), status, product, CAST(tx0 + periods - 1 AS TEXT), period_end,
    CASE WHEN status = 'expired' THEN 0 ELSE 1 END, 1, 0,
    CASE status WHEN 'active' THEN period_end WHEN 'revoked' THEN period_end WHEN 'grace_period' THEN period_end + {6 * DAY}
                WHEN 'billing_retry' THEN period_end + {60 * DAY} END,
    {now}
FROM seed_keys;""")
    # The notifications, in the order received: one per transaction, and one more for the last
    # change of a key that did not renew.
    sql.append(f"""{temp} seed_inputs AS
SELECT ROW_NUMBER() OVER (ORDER BY received_at, k, n) AS id, k, n, received_at, type, bundle_id, environment, otid, transaction_id,
    product, purchase_date, expires_date, event
FROM (
    SELECT k, t AS n, purchase_date + 60000 AS received_at, CASE WHEN t = 0 THEN 'SUBSCRIBED' ELSE 'DID_RENEW' END AS type,
        bundle_id, environment, otid, transaction_id, product, purchase_date, expires_date,
        CASE WHEN t = 0 THEN 'subscription.started' ELSE 'subscription.renewed' END AS event
    FROM seed_transactions
    UNION ALL
    SELECT k, periods, CASE status WHEN 'revoked' THEN revocation_date WHEN 'expired' THEN expires_date - len + {DAY} ELSE expires_date + 60000 END,
        CASE status WHEN 'revoked' THEN 'REFUND' WHEN 'expired' THEN 'DID_CHANGE_RENEWAL_STATUS' ELSE 'DID_FAIL_TO_RENEW' END,
        bundle_id, environment, otid, transaction_id, product, purchase_date, expires_date,
        CASE status WHEN 'revoked' THEN 'subscription.refunded' WHEN 'expired' THEN 'subscription.auto_renew_disabled'
                    ELSE 'subscription.billing_issue' END
    FROM (SELECT t.*, s.len FROM seed_transactions t JOIN seed_keys s ON s.k = t.k
          WHERE t.t = t.periods - 1 AND t.status IN ('revoked', 'expired', 'grace_period', 'billing_retry')) AS last
) AS i;""")
    uuid = f"{pad('k', 8)} || '-0000-4000-8000-' || {pad('n', 12)}"
    sql.append(stored_insert(postgres, "inputs", f"""
SELECT i.id, 'notification:' || {uuid} AS dedup_key, 'notification' AS kind, r.raw,
    '{{"valid":true,"kind":"notification","environment":"' || environment || '","bundle_id":"' || bundle_id
    || '","chain":{{"leaf_sha256":"4f1b0c6e8a2d9e7f3b5a1c0d2e4f6a8b9c7d5e3f1a2b4c6d8e0f1a3b5c7d9e1f","root_sha256":"63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"}}'
    || ',"transactions":[{{"source":"jws","transaction_id":"' || transaction_id || '","original_transaction_id":"' || otid || '","bundle_id":"'
    || bundle_id || '","product_id":"' || product || '","product_type":"auto_renewable_subscription","purchase_date":"' || {iso("purchase_date")}
    || '","expires_date":"' || {iso("expires_date")} || '","environment":"' || environment
    || '","ownership_type":"purchased","quantity":1,"storefront":"USA","price":{{"milliunits":9990,"currency":"USD"}},"transaction_reason":"purchase"}}]'
    || ',"renewal_info":{{"original_transaction_id":"' || otid || '","product_id":"' || product || '","auto_renew_product_id":"' || product
    || '","auto_renew_status":1,"environment":"' || environment || '"}}'
    || ',"notification":{{"type":"' || type || '","uuid":"' || {uuid} || '","version":"2.0","environment":"' || environment
    || '","bundle_id":"' || bundle_id || '","app_apple_id":1234567890,"bundle_version":"42"}}}}' AS json,
    received_at, 0 AS raw_encoding, 'webhook' AS source
FROM seed_inputs i JOIN seed_raw r ON r.i = i.id % 1000"""))
    # On PostgreSQL the inputs are stored after the transaction (their JSON deflated), and the
    # links, which reference them, after that.
    links = "INSERT INTO input_subscriptions (bundle_id, environment, original_transaction_id, input_id) SELECT bundle_id, environment, otid, id FROM {};"
    if postgres:
        sql.append("CREATE UNLOGGED TABLE seed_input_keys AS SELECT bundle_id, environment, otid, id FROM seed_inputs;")
    else:
        sql.append(links.format("seed_inputs"))
    sql.append(f"""INSERT INTO change_events (id, type, occurred_at, recorded_at, original_transaction_id, bundle_id, environment, payload)
SELECT id, event, received_at, received_at, otid, bundle_id, environment,
    '{{"id":' || CAST(id AS TEXT) || ',"type":"' || event || '","occurred_at":' || CAST(received_at AS TEXT) || ',"bundle_id":"' || bundle_id
    || '","environment":"' || environment || '","original_transaction_id":"' || otid || '","customer_ids":["00000000-0000-4000-8000-'
    || {pad("k", 12)} || '"],"status":"active","entitled":true,"subscription":{{"product_id":"'
    || product || '","transaction_id":"' || transaction_id || '","expires_date":' || CAST(expires_date AS TEXT)
    || ',"will_renew":true}},"cause":{{"source":"webhook","notification_uuid":"' || {uuid} || '","notification_type":"' || type
    || '","transaction_id":"' || transaction_id || '"}}}}'
FROM seed_inputs;""")
    sql.append("UPDATE feed_counter SET last_id = (SELECT MAX(id) FROM change_events) WHERE id = 1;")
    sql.append(f"""INSERT INTO customer_subscriptions (customer_id, bundle_id, environment, original_transaction_id, linked_at)
SELECT '00000000-0000-4000-8000-' || {pad("k", 12)}, bundle_id, environment, otid, {now}
FROM seed_keys WHERE k % 20 < 17
UNION ALL
SELECT 'family-' || CAST(k / 2 AS TEXT), bundle_id, environment, otid, {now} FROM seed_keys WHERE k % 20 = 17;""")
    sql.append("COMMIT;")
    if postgres:
        with open(os.devnull, "w") as quiet:
            if subprocess.run(["psql", target, "-X", "-q", "-v", "ON_ERROR_STOP=1"], input="\n".join(sql).encode(),
                              stdout=quiet).returncode != 0:
                sys.exit("scale_seed.py: the seeding statements failed")
        deflate_postgres(target)
        subprocess.run(["psql", target, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", links.format("seed_input_keys"),
                        "-c", "DROP TABLE seed_input_keys", "-c", "SELECT setval('inputs_id_seq', (SELECT MAX(id) FROM inputs))"],
                       stdout=subprocess.DEVNULL, check=True)
    else:
        connection = sqlite3.connect(target, isolation_level=None)
        connection.create_function("stored_json", 1, stored_json, deterministic=True)
        connection.executescript("\n".join(sql))
        connection.close()


if __name__ == "__main__":
    main()
