/// The store's schema, one migration per change, the SQLite and PostgreSQL text of each side by
/// side so that they stay the same schema. A released migration is never edited: a change is a
/// new migration appended to ``migrations``.
///
/// Tables:
/// - `events`: every verified input, once per dedup key (the unique constraint makes a replay a
///   no-op): its raw bytes, its record as `verify-receipt` prints it, its kind.
/// - `subscriptions`: the derived state per key (bundle id, environment, original transaction
///   id), rewritten in the transaction that stores each new event touching the key.
/// - `customer_subscriptions`: which customer owns which key.
enum Schema {
    struct Migration: Sendable {
        /// Its name, recorded once applied.
        let id: String
        /// The statements for SQLite.
        let sqlite: [String]
        /// The statements for PostgreSQL.
        let postgres: [String]
    }

    static let migrations: [Migration] = [
        Migration(
            id: "v1-events-subscriptions-customers",
            sqlite: [
                """
                CREATE TABLE events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    dedup_key TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL,
                    raw BLOB NOT NULL,
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
            ],
            postgres: [
                """
                CREATE TABLE events (
                    id BIGSERIAL PRIMARY KEY,
                    dedup_key TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL,
                    raw BYTEA NOT NULL,
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
            ]),
    ]
}
