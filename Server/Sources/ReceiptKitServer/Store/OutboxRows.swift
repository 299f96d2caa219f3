import ReceiptKit

/// The durable outbox (``Schema`` v8): what the server must send, written in the transaction
/// that causes it — a feed event for the webhook, a notification to forward, a consumption
/// answer for Apple — and sent later by ``DeliveryService``, written once for both databases.
///
/// A row is `pending` until a receiver accepts it (`delivered`) or its time runs out (`failed`,
/// the dead letters, sent again only by `POST /v1/webhooks/deliveries/{id}/retry`). Rows of one
/// receiver (`target`) and one subscription (`ordering_key`) go out in id order: a row is not
/// claimed while an earlier one of the same pair is pending, in flight or waiting for its next
/// attempt. Within a key, ids follow commit order (the key's row lock serializes the
/// transactions that write them).
///
/// A server sends a row only under its lease: claiming sets `lease_owner` and `lease_until` in
/// one statement (on PostgreSQL over rows locked `FOR UPDATE SKIP LOCKED`, so two servers never
/// claim one row), and the attempt's outcome is recorded only while the lease is still the
/// claimer's. A server killed mid-attempt leaves the lease to expire: the row is sent again,
/// with the same event id — at least once.
enum OutboxRows {
    /// What a row sends.
    enum Kind: String, Sendable {
        /// A feed event, signed, to `RECEIPTKIT_WEBHOOK_URL`.
        case webhook
        /// A verified notification, byte for byte, to one of `RECEIPTKIT_FORWARD_URLS`.
        case forward
        /// A consumption answer to Apple's Send Consumption Information.
        case consumption
    }

    /// The columns a delivery is read with, in ``delivery(_:)``'s order.
    static let columns = """
        id, kind, target, ordering_key, event_id, state, attempts, created_at, next_attempt_at, give_up_at,
        last_attempt_at, last_status, last_error, delivered_at, body
        """
    static let columnTypes: [StoreColumn] = [
        .integer, .text, .text, .text, .integer, .text, .integer, .integer, .integer, .integer, .integer, .integer, .text,
        .integer, .bytes,
    ]

    static let insert = StoreStatement(
        """
        INSERT INTO outbox (kind, target, ordering_key, event_id, body, state, attempts, created_at, next_attempt_at,
            give_up_at, lease_until)
        VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, 0)
        """)

    /// ``insert``, answering the row.
    static let insertReturning = StoreStatement(insert.sql + " RETURNING \(columns)", columns: columnTypes)

    /// A row to send from `now` until `giveUpAt`.
    static func insertWrite(
        kind: Kind, target: String, orderingKey: String, eventId: Int64?, body: [UInt8], now: Int64, giveUpAt: Int64
    ) -> StoreWrite {
        StoreWrite(insert, [
            .text(kind.rawValue), .text(target), .text(orderingKey), eventId.map(StoreValue.integer) ?? .null, .bytes(body),
            .integer(now), .integer(now), .integer(giveUpAt),
        ])
    }

    /// Claims up to `?` rows due by `?` whose lease has run out and that no earlier pending row of
    /// their receiver and key holds back: sets the lease (owner, until) and answers them.
    /// Values: owner, lease until, now, now, limit.
    static func claim(_ dialect: Schema.Dialect) -> StoreStatement {
        let lock = dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
        return StoreStatement(
            """
            UPDATE outbox SET lease_owner = ?, lease_until = ?
            WHERE id IN (
                SELECT o.id FROM outbox o
                WHERE o.state = 'pending' AND o.next_attempt_at <= ? AND o.lease_until <= ?
                    AND NOT EXISTS (
                        SELECT 1 FROM outbox p
                        WHERE p.state = 'pending' AND p.target = o.target AND p.ordering_key = o.ordering_key AND p.id < o.id)
                ORDER BY o.id LIMIT ?\(lock)
            )
            RETURNING \(columns)
            """, columns: columnTypes)
    }

    /// Whether any row is due: read before claiming, so that an idle outbox costs a read, not a
    /// write, per poll. Values: now, now.
    static let anyDue = StoreStatement(
        "SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= ? AND lease_until <= ? LIMIT 1", columns: [.integer])

    /// Removes up to 1000 delivered rows delivered before `?`.
    static let pruneDelivered = StoreStatement(
        """
        DELETE FROM outbox WHERE id IN (
            SELECT id FROM outbox WHERE state = 'delivered' AND delivered_at < ? ORDER BY id LIMIT 1000)
        """)

    static let claimSQLite = claim(.sqlite)
    static let claimPostgres = claim(.postgres)

    /// Records an attempt's outcome if `?` still holds the lease. Values: state, next attempt,
    /// attempted at, status, error, delivered at, id, owner.
    static let finish = StoreStatement(
        """
        UPDATE outbox SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?, last_status = ?,
            last_error = ?, delivered_at = ?, lease_owner = NULL, lease_until = 0
        WHERE id = ? AND lease_owner = ?
        RETURNING id
        """, columns: [.integer])

    /// The deliveries in a state after an id, oldest first.
    static let list = StoreStatement(
        "SELECT \(columns) FROM outbox WHERE state = ? AND id > ? ORDER BY id LIMIT ?", columns: columnTypes)

    /// Sends a row that is not pending again, from `?` until `?`.
    static let retry = StoreStatement(
        """
        UPDATE outbox SET state = 'pending', next_attempt_at = ?, give_up_at = ?, lease_owner = NULL, lease_until = 0
        WHERE id = ? AND state <> 'pending'
        RETURNING \(columns)
        """, columns: columnTypes)

    static let byId = StoreStatement("SELECT \(columns) FROM outbox WHERE id = ?", columns: columnTypes)

    /// The pending rows per receiver: how many, and when the oldest was written.
    static let pendingByTarget = StoreStatement(
        "SELECT kind, target, COUNT(*), MIN(created_at) FROM outbox WHERE state = 'pending' GROUP BY kind, target",
        columns: [.text, .text, .integer, .integer])

    /// A row of ``columns``.
    static func delivery(_ row: [StoreValue]) -> Delivery? {
        guard row.count == columnTypes.count, let id = row[0].integer, let kind = row[1].text.flatMap(Kind.init(rawValue:)),
              let state = row[5].text.flatMap(Delivery.State.init(rawValue:))
        else { return nil }
        return Delivery(
            id: id, kind: kind, target: row[2].text ?? "", orderingKey: row[3].text ?? "", eventId: row[4].integer, state: state,
            attempts: Int(row[6].integer ?? 0), createdAt: row[7].integer ?? 0, nextAttemptAt: row[8].integer ?? 0,
            giveUpAt: row[9].integer ?? 0, lastAttemptAt: row[10].integer, lastStatus: row[11].integer.map { Int($0) },
            lastError: row[12].text, deliveredAt: row[13].integer, body: row[14].bytes ?? [])
    }

    static func deliveries(_ rows: [[StoreValue]]) -> [Delivery] {
        rows.compactMap(delivery).sorted { $0.id < $1.id }
    }

    /// The values of ``finish``.
    static func finishValues(_ id: Int64, owner: String, outcome: DeliveryOutcome) -> [StoreValue] {
        [
            .text(outcome.state.rawValue), .integer(outcome.nextAttemptAt), .integer(outcome.attemptedAt),
            outcome.status.map { .integer(Int64($0)) } ?? .null, outcome.error.map(StoreValue.text) ?? .null,
            outcome.state == .delivered ? .integer(outcome.attemptedAt) : .null, .integer(id), .text(owner),
        ]
    }

    /// Rows of ``pendingByTarget``.
    static func backlog(_ rows: [[StoreValue]]) -> [OutboxBacklog] {
        rows.compactMap { row in
            guard let kind = row[0].text.flatMap(Kind.init(rawValue:)), let target = row[1].text else { return nil }
            return OutboxBacklog(kind: kind, target: target, pending: Int(row[2].integer ?? 0), oldestCreatedAt: row[3].integer ?? 0)
        }
    }

    /// The key a subscription's rows are ordered by.
    static func orderingKey(_ key: SubscriptionKey) -> String {
        "\(key.bundleId)|\(key.environment)|\(key.originalTransactionId)"
    }
}

/// One row of the outbox.
public struct Delivery: Sendable, Hashable {
    /// Where a row is.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Waiting to be sent, in flight, or waiting for its next attempt.
        case pending
        /// A receiver accepted it (2xx).
        case delivered
        /// Its time ran out: a dead letter, sent again only when asked.
        case failed
    }

    public var id: Int64
    var kind: OutboxRows.Kind
    /// The URL (webhook, forward), or the transaction id (consumption).
    public var target: String
    public var orderingKey: String
    /// The feed event a webhook carries.
    public var eventId: Int64?
    public var state: State
    public var attempts: Int
    public var createdAt: Int64
    public var nextAttemptAt: Int64
    public var giveUpAt: Int64
    public var lastAttemptAt: Int64?
    public var lastStatus: Int?
    public var lastError: String?
    public var deliveredAt: Int64?
    /// What is sent.
    public var body: [UInt8]

    /// What it sends, as the API names it: `webhook`, `forward` or `consumption`.
    public var kindName: String { kind.rawValue }

    /// `{"id", "kind", "target", "event_id", "state", "attempts", "created_at", …}`, instants
    /// as ISO 8601 (the body is not shown).
    var json: String {
        func instant(_ milliseconds: Int64?) -> String? { milliseconds.map { Timestamp(millisecondsSince1970: $0).iso8601 } }
        var json = JSONObjectText()
        json.member("id", String(id))
        json.member("kind", kind.rawValue)
        json.member("target", target)
        json.member("event_id", eventId.map { String($0) })
        json.member("state", state.rawValue)
        json.member("attempts", attempts)
        json.member("created_at", instant(createdAt))
        json.member("next_attempt_at", state == .pending ? instant(nextAttemptAt) : nil)
        json.member("give_up_at", instant(giveUpAt))
        json.member("last_attempt_at", instant(lastAttemptAt))
        json.member("last_status", lastStatus.map { Int64($0) })
        json.member("last_error", lastError)
        json.member("delivered_at", instant(deliveredAt))
        return json.text
    }
}

/// How an attempt ended, as ``OutboxStore/finishDelivery(_:owner:outcome:)`` records it.
package struct DeliveryOutcome: Sendable {
    package var state: Delivery.State
    package var nextAttemptAt: Int64
    package var attemptedAt: Int64
    package var status: Int?
    package var error: String?
}

/// The pending rows of one receiver.
struct OutboxBacklog: Sendable, Hashable {
    var kind: OutboxRows.Kind
    var target: String
    var pending: Int
    var oldestCreatedAt: Int64
}

/// What the outbox keeps in the store besides the rows the feed writes.
protocol OutboxStore: Sendable {
    /// Claims up to `limit` rows due at `now` for `owner` until `leaseUntil` (``OutboxRows``).
    func claimDeliveries(owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [Delivery]
    /// Records an attempt's outcome, if `owner` still holds the row's lease.
    /// - Returns: Whether it did.
    func finishDelivery(_ id: Int64, owner: String, outcome: DeliveryOutcome) async throws -> Bool
    /// The rows in a state after an id, oldest first.
    func deliveries(state: Delivery.State, after: Int64, limit: Int) async throws -> [Delivery]
    /// The row with this id.
    func delivery(_ id: Int64) async throws -> Delivery?
    /// Makes a row that is not pending pending again, due at `now`, given up at `giveUpAt`.
    /// - Returns: The row, or `nil` when there is no such row or it is pending already.
    func retryDelivery(_ id: Int64, now: Int64, giveUpAt: Int64) async throws -> Delivery?
    /// The pending rows per receiver.
    func outboxBacklog() async throws -> [OutboxBacklog]
    /// Removes delivered rows delivered before `before` (at most 1000 a call).
    func pruneDelivered(before: Int64) async throws
}
