import ReceiptKit

/// Apple's verified inputs (`inputs`, named `events` before v10): each stored once by its dedup
/// key, its raw bytes with their JWS headers kept once in `jws_headers` (``RawCompaction``), and
/// listed under every key it touched (`input_subscriptions`).
enum InputStatements {
    /// Stores an input unless its dedup key is stored (a replay); run as a ``RowStep/insert(_:)``.
    static let insert = StoreStatement { dialect in
        """
        INSERT INTO inputs (dedup_key, kind, raw, raw_encoding, record, received_at, source)
        VALUES (:dedup_key, :kind, :raw, :raw_encoding, :record, :received_at, :source)
        ON CONFLICT (dedup_key) DO NOTHING\(dialect.returningId)
        """
    }

    /// Which inputs touched which key.
    static let insertInputKey = StoreStatement(
        """
        INSERT INTO input_subscriptions (original_transaction_id, bundle_id, environment, input_id)
            VALUES (:original_transaction_id, :bundle_id, :environment, :input_id)
        """)

    /// The inputs listed under a key, with their ids.
    static let inputsOfKey = Query(
        """
        SELECT i.id, i.kind, i.record, i.received_at
        FROM input_subscriptions k JOIN inputs i ON i.id = k.input_id
        WHERE k.original_transaction_id = :original_transaction_id AND k.bundle_id = :bundle_id AND k.environment = :environment
        """, row: storedInput)

    @Sendable static func storedInput(id: Int64, kind: String, record: StoredJSON, receivedAt: Int64) -> StoredInput {
        StoredInput(id: id, kind: kind, record: record.text, receivedAt: receivedAt)
    }

    /// An input's stored bytes and their encoding, by dedup key.
    static let raw = Query("SELECT raw, raw_encoding FROM inputs WHERE dedup_key = :dedup_key") {
        (raw: [UInt8], encoding: Int64) in (stored: raw, encoding: encoding)
    }

    /// A stored header's id, by its segment.
    static let headerId = Query("SELECT id FROM jws_headers WHERE segment = :segment") { (id: Int64) in id }

    /// Stores a header unless another transaction stored it first; run as a
    /// ``RowStep/insert(_:)``. On PostgreSQL the exclusion constraint makes it wait for that
    /// transaction and then do nothing.
    static let insertHeader = StoreStatement { dialect in
        "INSERT INTO jws_headers (segment) VALUES (:segment) ON CONFLICT DO NOTHING\(dialect.returningId)"
    }

    /// A header's segment, by id.
    static let header = Query("SELECT segment FROM jws_headers WHERE id = :id") { (segment: String) in segment }

    /// How many inputs are stored.
    static let count = Query("SELECT COUNT(*) FROM inputs") { (count: Int64) in count }

    /// Whether an input with a dedup key is stored.
    static let stored = Query("SELECT 1 FROM inputs WHERE dedup_key = :dedup_key") { (_: Int64) in () }
}
