/// The durable outbox's statements (``Schema`` v8; what a row means and how it is sent:
/// ``Delivery``, ``DeliveryService``).
///
/// A server sends a row only under its lease: claiming sets `lease_owner` and `lease_until` in one
/// statement (on PostgreSQL over rows locked `FOR UPDATE SKIP LOCKED`, so two servers never claim
/// one row), and the attempt's outcome is recorded only while the lease is still the claimer's.
enum OutboxStatements {
    /// The columns a delivery is read with, in ``delivery`` order.
    private static let columns = """
        id, kind, target, ordering_key, event_id, state, attempts, created_at, next_attempt_at, give_up_at,
        last_attempt_at, last_status, last_error, delivered_at, body
        """

    @Sendable private static func delivery(
        id: Int64, kind: String, target: String, orderingKey: String, eventId: Int64?, state: String, attempts: Int64,
        createdAt: Int64, nextAttemptAt: Int64, giveUpAt: Int64, lastAttemptAt: Int64?, lastStatus: Int64?,
        lastError: String?, deliveredAt: Int64?, body: [UInt8]
    ) throws -> Delivery {
        guard let kind = Delivery.Kind(rawValue: kind), let state = Delivery.State(rawValue: state) else {
            throw StoreError.damaged("outbox row \(id) has kind \(kind) and state \(state), which this server does not know")
        }
        return Delivery(
            id: id, kind: kind, target: target, orderingKey: orderingKey, eventId: eventId, state: state, attempts: Int(attempts),
            createdAt: createdAt, nextAttemptAt: nextAttemptAt, giveUpAt: giveUpAt, lastAttemptAt: lastAttemptAt,
            lastStatus: lastStatus.map { Int($0) }, lastError: lastError, deliveredAt: deliveredAt, body: body)
    }

    static let insert = StoreStatement(
        """
        INSERT INTO outbox (kind, target, ordering_key, event_id, body, state, attempts, created_at, next_attempt_at,
            give_up_at, lease_until)
        VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, 0)
        """)

    /// ``insert``, answering the row.
    static let insertReturning = Query(insert.sqlite + " RETURNING \(columns)", row: delivery)

    /// The values of ``insert`` for a row.
    static func values(_ row: OutboxRow) -> [StoreValue] {
        [
            .text(row.kind.rawValue), .text(row.target), .text(row.orderingKey), .optional(row.eventId), .bytes(row.body),
            .integer(row.createdAt), .integer(row.createdAt), .integer(row.giveUpAt),
        ]
    }

    /// The write of a row.
    static func write(_ row: OutboxRow) -> StoreWrite {
        StoreWrite(insert, values(row))
    }

    /// Whether any row is due: read before claiming, so that an idle outbox costs a read, not a
    /// write, per poll. Values: now, now.
    static let anyDue = Query("SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= ? AND lease_until <= ? LIMIT 1") {
        (id: Int64) in id
    }

    /// Claims up to `?` rows due by `?` whose lease has run out and that no earlier pending row of
    /// their receiver and key holds back: sets the lease (owner, until) and answers them.
    /// Values: owner, lease until, now, now, limit.
    static let claim = Query({ dialect in
        """
        UPDATE outbox SET lease_owner = ?, lease_until = ?
        WHERE id IN (
            SELECT o.id FROM outbox o
            WHERE o.state = 'pending' AND o.next_attempt_at <= ? AND o.lease_until <= ?
                AND NOT EXISTS (
                    SELECT 1 FROM outbox p
                    WHERE p.state = 'pending' AND p.target = o.target AND p.ordering_key = o.ordering_key AND p.id < o.id)
            ORDER BY o.id LIMIT ?\(dialect.forUpdateSkipLocked)
        )
        RETURNING \(columns)
        """
    }, row: delivery)

    /// Records an attempt's outcome if `?` still holds the lease. Values: state, next attempt,
    /// attempted at, status, error, delivered at, id, owner.
    static let finish = Query(
        """
        UPDATE outbox SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?, last_status = ?,
            last_error = ?, delivered_at = ?, lease_owner = NULL, lease_until = 0
        WHERE id = ? AND lease_owner = ?
        RETURNING id
        """
    ) { (id: Int64) in id }

    /// The values of ``finish``.
    static func finishValues(_ id: Int64, owner: String, outcome: DeliveryOutcome) -> [StoreValue] {
        [
            .text(outcome.state.rawValue), .integer(outcome.nextAttemptAt), .integer(outcome.attemptedAt),
            .optional(outcome.status.map { Int64($0) }), .optional(outcome.error),
            .optional(outcome.state == .delivered ? outcome.attemptedAt : nil), .integer(id), .text(owner),
        ]
    }

    /// The deliveries in a state after an id, oldest first.
    static let list = Query("SELECT \(columns) FROM outbox WHERE state = ? AND id > ? ORDER BY id LIMIT ?", row: delivery)

    static let byId = Query("SELECT \(columns) FROM outbox WHERE id = ?", row: delivery)

    /// Sends a row that is not pending again, from `?` until `?`.
    static let retry = Query(
        """
        UPDATE outbox SET state = 'pending', next_attempt_at = ?, give_up_at = ?, lease_owner = NULL, lease_until = 0
        WHERE id = ? AND state <> 'pending'
        RETURNING \(columns)
        """, row: delivery)

    /// The pending rows per receiver: how many, and when the oldest was written.
    static let pendingByTarget = Query(
        "SELECT kind, target, COUNT(*), MIN(created_at) FROM outbox WHERE state = 'pending' GROUP BY kind, target"
    ) { (kind: String, target: String, pending: Int64, oldest: Int64) in
        Delivery.Kind(rawValue: kind).map { OutboxBacklog(kind: $0, target: target, pending: Int(pending), oldestCreatedAt: oldest) }
    }

    /// How many rows are in a state, counting up to `?` at most.
    static let countInState = Query("SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE state = ? LIMIT ?) rows") {
        (count: Int64) in Int(count)
    }

    /// Removes up to 1000 delivered rows delivered before `?`.
    static let pruneDelivered = StoreStatement(
        """
        DELETE FROM outbox WHERE id IN (
            SELECT id FROM outbox WHERE state = 'delivered' AND delivered_at < ? ORDER BY id LIMIT 1000)
        """)
}
