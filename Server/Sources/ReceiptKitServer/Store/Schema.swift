import ReceiptKit

/// The store's schema, one migration per change, written once for both databases: the few words
/// in which SQLite and PostgreSQL differ come from ``SQLDialect``, so the two cannot drift apart. A
/// released migration is never edited (its text on either database stays what it was): a change
/// is a new migration appended to ``migrations``.
///
/// Tables (their names as of the last migration):
/// - `inputs` (`events` before v10): every verified input, once per dedup key (the unique
///   constraint makes a replay a no-op): its raw bytes, its record as `verify-receipt` prints it,
///   its kind, and (from v8) where it came from (`source`).
/// - `subscriptions`: one row per key (bundle id, environment, original transaction id), naming
///   the key's transaction copy signed last (from v5; before, the key's whole ledger as JSON),
///   and (from v8) the state the feed last derived for it, with `next_change_at`.
/// - `transaction_copies`, `renewal_info_copies` (from v5): every signed copy of every
///   transaction and renewal info, the key's ledger as rows (``LedgerStatements``).
/// - `customer_subscriptions`: which customer owns which key.
/// - `input_subscriptions` (from v2, `event_subscriptions` before v10): which inputs touched which
///   key, so that what the service knows of a subscription can be listed.
/// - `jws_headers` (from v3): each JWS header segment once; an input whose `raw_encoding` is 1
///   (or 2, deflated) refers to them instead of carrying them (``RawCompaction``). Inputs stored
///   before v3 keep `raw_encoding` 0, their bytes as received (3: deflated).
///
/// The JSON in `inputs.record`, `transaction_copies.copy` and `renewal_info_copies.copy` is
/// stored deflated (``StoredJSON``); rows that servers before deflating wrote hold the JSON text,
/// and both read alike, so that change needed no migration.
/// - `history_revisions` (from v7): per key, the revision token Get Transaction History last
///   answered (``ReconcileStatements``).
/// - `reconcile_cursors` (from v11; `reconcile_cursor`, one row, from v7): per app and
///   environment, the instant up to which Get Notification History has been read and committed.
/// - `change_events`, `feed_counter` (from v8): the feed's events, their ids drawn from the
///   counter in commit order (``FeedStatements``).
/// - `outbox` (from v8): what is to be sent — webhooks, forwarded notifications, consumption
///   answers — until it is accepted or its time runs out (``OutboxStatements``).
/// - `consumption_requests`, `consumption_consents` (from v8): Apple's consumption requests with
///   their deadline and answer, and the customers who consented (``ConsumptionStatements``).
/// - `entitlement_grants`, `customer_entitlements`, `entitlement_checks` (from v13): grants made
///   by hand, what the feed last told of each customer's named entitlements, and when each
///   customer's may next change by time alone (``EntitlementStatements``); `change_events.customer_id`
///   (from v13): the customer a named entitlement's event is about (`NULL` for a key's event).
/// - `subscription_counts`, `notification_days` (from v12): how many keys have each derived
///   status and product per app and environment, and the notifications stored per day and type:
///   the overview's figures, kept in the transactions that change them (``CountStatements``).
enum Schema {
    static let migrations: [Migration] = [
        Migration(id: "v1-events-subscriptions-customers") { dialect in
            [
                """
                CREATE TABLE events (
                    id \(dialect.autoIncrementingKey),
                    dedup_key TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL,
                    raw \(dialect.bytes) NOT NULL,
                    record TEXT NOT NULL,
                    received_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE subscriptions (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    state TEXT,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, environment, original_transaction_id)
                )
                """,
                "CREATE INDEX subscriptions_original_transaction_id ON subscriptions (original_transaction_id)",
                """
                CREATE TABLE customer_subscriptions (
                    customer_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    linked_at BIGINT NOT NULL,
                    PRIMARY KEY (customer_id, bundle_id, environment, original_transaction_id)
                )
                """,
            ]
        },
        // Events stored before this migration (by a pre-release server) are not linked: the
        // server had no release without it.
        Migration(id: "v2-event-subscriptions") { _ in
            [
                """
                CREATE TABLE event_subscriptions (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    event_id BIGINT NOT NULL REFERENCES events (id),
                    PRIMARY KEY (bundle_id, environment, original_transaction_id, event_id)
                )
                """
            ]
        },
        Migration(id: "v3-jws-headers") { dialect in
            [
                "CREATE TABLE jws_headers (id \(dialect.autoIncrementingKey), segment TEXT NOT NULL)",
                dialect.uniqueLongText(table: "jws_headers", column: "segment"),
                "ALTER TABLE events ADD COLUMN raw_encoding SMALLINT NOT NULL DEFAULT 0",
            ]
        },
        // Every lookup of `subscriptions` and `event_subscriptions` gives the original
        // transaction id, and one of them gives nothing else: with both keys led by it, that one
        // needs no index of its own. On SQLite both tables keep their rows in their key's
        // B-tree. An event of a new subscription changed seven B-trees (the event's two, the
        // link's two, the subscription's three) and changes four: fewer pages to write, log and
        // checkpoint for every event.
        Migration(id: "v4-keys-led-by-original-transaction-id") { dialect in
            let subscriptions = [
                """
                CREATE TABLE subscriptions_v4 (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    state TEXT,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (original_transaction_id, bundle_id, environment)
                )\(dialect.clusteredOnPrimaryKey)
                """,
                """
                INSERT INTO subscriptions_v4 (bundle_id, environment, original_transaction_id, state, updated_at)
                SELECT bundle_id, environment, original_transaction_id, state, updated_at FROM subscriptions
                """,
                "DROP TABLE subscriptions",
                "ALTER TABLE subscriptions_v4 RENAME TO subscriptions",
            ]
            let eventSubscriptions = [
                """
                CREATE TABLE event_subscriptions_v4 (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    event_id BIGINT NOT NULL REFERENCES events (id),
                    PRIMARY KEY (original_transaction_id, bundle_id, environment, event_id)
                )\(dialect.clusteredOnPrimaryKey)
                """,
                """
                INSERT INTO event_subscriptions_v4 (bundle_id, environment, original_transaction_id, event_id)
                SELECT bundle_id, environment, original_transaction_id, event_id FROM event_subscriptions
                """,
                "DROP TABLE event_subscriptions",
                "ALTER TABLE event_subscriptions_v4 RENAME TO event_subscriptions",
            ]
            // PostgreSQL's constraints keep the names they were made with.
            let constraintNames = dialect.postgresOnly([
                "ALTER TABLE subscriptions RENAME CONSTRAINT subscriptions_v4_pkey TO subscriptions_pkey",
                "ALTER TABLE event_subscriptions RENAME CONSTRAINT event_subscriptions_v4_pkey TO event_subscriptions_pkey",
                """
                ALTER TABLE event_subscriptions
                RENAME CONSTRAINT event_subscriptions_v4_event_id_fkey TO event_subscriptions_event_id_fkey
                """,
            ])
            return subscriptions + eventSubscriptions + constraintNames
        },
        // A fold rewrote the key's whole ledger: a cost that grew with every renewal. Its copies
        // become rows, so a fold inserts the record's copies alone and a state is read from the
        // few rows that decide it (``Evaluation``). The ledgers move in Swift (``LedgersToCopies``).
        Migration(id: "v5-ledger-copies", rows: { _ in LedgersToCopies() }) { dialect in
            [
                """
                CREATE TABLE transaction_copies (
                    original_transaction_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    known_from BIGINT NOT NULL,
                    is_latest SMALLINT NOT NULL,
                    is_upgraded SMALLINT NOT NULL,
                    purchase_date BIGINT NOT NULL,
                    expires_date BIGINT NOT NULL,
                    copy TEXT NOT NULL,
                    PRIMARY KEY (original_transaction_id, bundle_id, environment, transaction_id, known_from)
                )\(dialect.clusteredOnPrimaryKey)
                """,
                """
                CREATE INDEX transaction_copies_current ON transaction_copies
                    (original_transaction_id, bundle_id, environment, is_upgraded, purchase_date DESC, expires_date DESC)
                    WHERE is_latest = 1
                """,
                """
                CREATE TABLE renewal_info_copies (
                    original_transaction_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    known_from BIGINT NOT NULL,
                    copy TEXT NOT NULL,
                    PRIMARY KEY (original_transaction_id, environment, known_from)
                )\(dialect.clusteredOnPrimaryKey)
                """,
                "ALTER TABLE subscriptions ADD COLUMN last_known_from BIGINT",
                "ALTER TABLE subscriptions ADD COLUMN last_known_transaction_id TEXT",
            ]
        },
        // v5 moved every ledger into rows.
        Migration(id: "v6-drop-subscription-state") { _ in
            ["ALTER TABLE subscriptions DROP COLUMN state"]
        },
        // Reconciling with Apple: where each key's transaction history was last read to
        // (Get Transaction History's revision token), and the reconcile cursor with the lease
        // that lets one server at a time run a window of Get Notification History.
        Migration(id: "v7-reconciliation") { dialect in
            [
                """
                CREATE TABLE history_revisions (
                    original_transaction_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    revision TEXT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (original_transaction_id, bundle_id, environment)
                )\(dialect.clusteredOnPrimaryKey)
                """,
                """
                CREATE TABLE reconcile_cursor (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    position BIGINT,
                    lease_owner TEXT,
                    lease_until BIGINT NOT NULL
                )
                """,
                "INSERT INTO reconcile_cursor (id, position, lease_owner, lease_until) VALUES (1, NULL, NULL, 0)",
            ]
        },
        // The feed (``FeedStatements``): each key's derived state as its last event saw it, when to
        // look again without an input (the sweep's index), the events, the counter their ids
        // come from, and where each input came from. The keys a server before it stored get
        // their state now, without events (``Baselines``). Customers are read by
        // key when an event names them.
        Migration(id: "v8-change-events", rows: { Baselines(at: $0) }) { dialect in
            [
                "ALTER TABLE subscriptions ADD COLUMN derived_status TEXT",
                "ALTER TABLE subscriptions ADD COLUMN derived_product_id TEXT",
                "ALTER TABLE subscriptions ADD COLUMN derived_transaction_id TEXT",
                "ALTER TABLE subscriptions ADD COLUMN derived_expires_at BIGINT",
                "ALTER TABLE subscriptions ADD COLUMN derived_will_renew SMALLINT",
                "ALTER TABLE subscriptions ADD COLUMN derived_subscription SMALLINT",
                "ALTER TABLE subscriptions ADD COLUMN derived_family_shared SMALLINT",
                "ALTER TABLE subscriptions ADD COLUMN next_change_at BIGINT",
                "ALTER TABLE subscriptions ADD COLUMN derived_at BIGINT",
                "CREATE INDEX subscriptions_next_change_at ON subscriptions (next_change_at) WHERE next_change_at IS NOT NULL",
                "ALTER TABLE events ADD COLUMN source TEXT",
                """
                CREATE TABLE change_events (
                    id \(dialect.int64PrimaryKey),
                    type TEXT NOT NULL,
                    occurred_at BIGINT NOT NULL,
                    recorded_at BIGINT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    payload TEXT NOT NULL
                )
                """,
                "CREATE INDEX change_events_key ON change_events (original_transaction_id, bundle_id, environment, id)",
                "CREATE TABLE feed_counter (id INTEGER PRIMARY KEY CHECK (id = 1), last_id BIGINT NOT NULL)",
                "INSERT INTO feed_counter (id, last_id) VALUES (1, 0)",
                "CREATE INDEX customer_subscriptions_key ON customer_subscriptions (original_transaction_id, bundle_id, environment)",
            ]
        },
        // The durable outbox (``OutboxStatements``): what is sent later — webhooks, forwarded
        // notifications, consumption answers — written in the transaction that causes it. The
        // first index finds the pending rows in order and lists a state's rows; the second,
        // whether an earlier row of the same receiver and key is still pending.
        Migration(id: "v8-outbox") { dialect in
            [
                """
                CREATE TABLE outbox (
                    id \(dialect.autoIncrementingKey),
                    kind TEXT NOT NULL,
                    target TEXT NOT NULL,
                    ordering_key TEXT NOT NULL,
                    event_id BIGINT,
                    body \(dialect.bytes) NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    created_at BIGINT NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    give_up_at BIGINT NOT NULL,
                    lease_owner TEXT,
                    lease_until BIGINT NOT NULL,
                    last_attempt_at BIGINT,
                    last_status INTEGER,
                    last_error TEXT,
                    delivered_at BIGINT
                )
                """,
                "CREATE INDEX outbox_state ON outbox (state, id)",
                "CREATE INDEX outbox_order ON outbox (target, ordering_key, id) WHERE state = 'pending'",
            ]
        },
        // Consumption requests, their answers, and which customers consented to share
        // consumption data (``ConsumptionStatements``).
        Migration(id: "v8-consumption-requests") { _ in
            [
                """
                CREATE TABLE consumption_requests (
                    notification_uuid TEXT PRIMARY KEY,
                    transaction_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    product_type TEXT,
                    reason TEXT,
                    requested_at BIGINT NOT NULL,
                    deadline BIGINT NOT NULL,
                    answered_at BIGINT,
                    answer_source TEXT,
                    answer TEXT
                )
                """,
                "CREATE INDEX consumption_requests_transaction ON consumption_requests (transaction_id, deadline)",
                "CREATE INDEX consumption_requests_open ON consumption_requests (deadline) WHERE answered_at IS NULL",
                """
                CREATE TABLE consumption_consents (
                    customer_id TEXT PRIMARY KEY,
                    consented SMALLINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
            ]
        },
        // The console finds a purchase by any of its transaction ids, a renewal's included (the
        // first is the original transaction id, which `subscriptions` leads with): without this,
        // a scan of every copy. One more B-tree entry per transaction copy stored.
        Migration(id: "v9-transaction-copies-by-transaction-id") { _ in
            ["CREATE INDEX transaction_copies_transaction_id ON transaction_copies (transaction_id)"]
        },
        // "Event" means the feed's events only: Apple's verified inputs, and the keys they
        // touched, are `inputs` and `input_subscriptions`. Renaming changes no row: instant at
        // any size, on either database.
        Migration(id: "v10-inputs") { dialect in
            [
                "ALTER TABLE events RENAME TO inputs",
                "ALTER TABLE event_subscriptions RENAME TO input_subscriptions",
                "ALTER TABLE input_subscriptions RENAME COLUMN event_id TO input_id",
            ] + dialect.postgresOnly([
                "ALTER TABLE inputs RENAME CONSTRAINT events_pkey TO inputs_pkey",
                "ALTER TABLE inputs RENAME CONSTRAINT events_dedup_key_key TO inputs_dedup_key_key",
                "ALTER SEQUENCE events_id_seq RENAME TO inputs_id_seq",
                "ALTER TABLE input_subscriptions RENAME CONSTRAINT event_subscriptions_pkey TO input_subscriptions_pkey",
                """
                ALTER TABLE input_subscriptions
                RENAME CONSTRAINT event_subscriptions_event_id_fkey TO input_subscriptions_input_id_fkey
                """,
            ])
        },
        // One reconcile cursor per app and environment served (its lease with it); a pair's first
        // cursor starts where the one cursor before this was (``ReconcileStatements/claim``).
        Migration(id: "v11-reconcile-cursors") { dialect in
            [
                """
                CREATE TABLE reconcile_cursors (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    position BIGINT,
                    lease_owner TEXT,
                    PRIMARY KEY (bundle_id, environment)
                )\(dialect.clusteredOnPrimaryKey)
                """
            ]
        },
        // The overview's counts, complete at any size (``CountStatements``): how many keys have
        // each derived status and product, per app and environment, kept by the transaction that
        // moves a key's derived state. Filled from the derived states stored: one pass over
        // `subscriptions` (seconds at a million keys).
        Migration(id: "v12-subscription-counts") { dialect in
            [
                """
                CREATE TABLE subscription_counts (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    status TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    count BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, environment, status, product_id)
                )\(dialect.clusteredOnPrimaryKey)
                """,
                """
                INSERT INTO subscription_counts (bundle_id, environment, status, product_id, count)
                SELECT bundle_id, environment, derived_status, COALESCE(derived_product_id, ''), COUNT(*) FROM subscriptions
                WHERE derived_status IS NOT NULL
                GROUP BY bundle_id, environment, derived_status, COALESCE(derived_product_id, '')
                """,
            ]
        },
        // The overview's chart without a walk down the inputs: notifications stored per UTC day
        // and `notificationType` ('' for none), kept by the transaction that stores each. Filled
        // with the days the chart shows (``NotificationDaysBackfill``): a month of inputs read,
        // not the whole history.
        Migration(id: "v12-notification-days", rows: { NotificationDaysBackfill(at: $0) }) { dialect in
            [
                """
                CREATE TABLE notification_days (
                    day BIGINT NOT NULL,
                    type TEXT NOT NULL,
                    count BIGINT NOT NULL,
                    PRIMARY KEY (day, type)
                )\(dialect.clusteredOnPrimaryKey)
                """
            ]
        },
        // Named entitlements (``EntitlementStatements``): the grants support makes by hand (kept
        // when ended, with who and when), what the feed last told of each customer's
        // entitlements, and when a customer's entitlements may next change by time alone (a
        // pass, a grant or a period ending), for the sweep.
        Migration(id: "v13-entitlement-grants") { dialect in
            [
                """
                CREATE TABLE entitlement_grants (
                    grant_id TEXT NOT NULL PRIMARY KEY,
                    customer_id TEXT NOT NULL,
                    entitlement TEXT NOT NULL,
                    granted_at BIGINT NOT NULL,
                    expires_at BIGINT,
                    reason TEXT,
                    granted_by TEXT NOT NULL,
                    ended_at BIGINT,
                    ended_by TEXT
                )
                """,
                "CREATE INDEX entitlement_grants_customer ON entitlement_grants (customer_id, granted_at)",
                """
                CREATE TABLE customer_entitlements (
                    customer_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    active SMALLINT NOT NULL,
                    PRIMARY KEY (customer_id, name)
                )\(dialect.clusteredOnPrimaryKey)
                """,
                """
                CREATE TABLE entitlement_checks (
                    customer_id TEXT NOT NULL PRIMARY KEY,
                    next_change_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX entitlement_checks_due ON entitlement_checks (next_change_at)",
                // A named entitlement's event belongs to one customer (``EntitlementEvent``), not
                // to every customer of the purchase that gives it: a customer's feed reads it here.
                "ALTER TABLE change_events ADD COLUMN customer_id TEXT",
                "CREATE INDEX change_events_customer ON change_events (customer_id, id) WHERE customer_id IS NOT NULL",
            ]
        },
    ]

    /// The migrations up to and including the one with this id, or all of them.
    static func migrations(through lastId: String?) throws -> ArraySlice<Migration> {
        guard let lastId else { return migrations[...] }
        guard let last = migrations.firstIndex(where: { $0.id == lastId }) else {
            throw StoreError("no migration \(lastId)")
        }
        return migrations[...last]
    }
}

/// One change to the schema: its statements in each dialect, and what it does to the rows that SQL
/// alone cannot, in Swift, after them and in the same transaction (a ``RowSteps`` each backend
/// runs).
struct Migration: Sendable {
    /// Its name, recorded once applied.
    let id: String
    /// What it does to the rows besides its statements, given the instant it runs at.
    let rows: (@Sendable (Timestamp) -> any RowSteps<Void> & Sendable)?
    /// Its statements in a dialect.
    let statements: @Sendable (SQLDialect) -> [String]

    init(
        id: String, rows: (@Sendable (Timestamp) -> any RowSteps<Void> & Sendable)? = nil,
        statements: @escaping @Sendable (SQLDialect) -> [String]
    ) {
        self.id = id
        self.rows = rows
        self.statements = statements
    }
}
