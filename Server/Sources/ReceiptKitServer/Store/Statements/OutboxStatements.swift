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

    /// ``insert``'s SQL.
    private static let insertSQL = """
        INSERT INTO outbox (kind, target, ordering_key, event_id, body, state, attempts, created_at, next_attempt_at,
            give_up_at, lease_until)
        VALUES (:kind, :target, :ordering_key, :event_id, :body, 'pending', 0, :created_at, :created_at, :give_up_at, 0)
        """

    static let insert = StoreStatement(insertSQL)

    /// ``insert``, answering the row.
    static let insertReturning = Query(insertSQL + " RETURNING \(columns)", row: delivery)

    /// The bindings of ``insert`` for a row: first tried when written.
    static func bindings(_ row: OutboxRow) -> Bindings {
        [
            "kind": .text(row.kind.rawValue), "target": .text(row.target), "ordering_key": .text(row.orderingKey),
            "event_id": .optional(row.eventId), "body": .bytes(row.body), "created_at": .integer(row.createdAt),
            "give_up_at": .integer(row.giveUpAt),
        ]
    }

    /// The write of a row.
    static func write(_ row: OutboxRow) -> StoreWrite {
        StoreWrite(insert, bindings(row))
    }

    /// Whether any row is due: read before claiming, so that an idle outbox costs a read, not a
    /// write, per poll.
    static let anyDue = Query("SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= :now AND lease_until <= :now LIMIT 1") {
        (id: Int64) in id
    }

    /// Claims up to `:limit` rows due by `:now` whose lease has run out and that no earlier pending
    /// row of their receiver and key holds back: sets the lease (`:owner`, `:lease_until`) and
    /// answers them.
    static let claim = Query({ dialect in
        """
        UPDATE outbox SET lease_owner = :owner, lease_until = :lease_until
        WHERE id IN (
            SELECT o.id FROM outbox o
            WHERE o.state = 'pending' AND o.next_attempt_at <= :now AND o.lease_until <= :now
                AND NOT EXISTS (
                    SELECT 1 FROM outbox p
                    WHERE p.state = 'pending' AND p.target = o.target AND p.ordering_key = o.ordering_key AND p.id < o.id)
            ORDER BY o.id LIMIT :limit\(dialect.forUpdateSkipLocked)
        )
        RETURNING \(columns)
        """
    }, row: delivery)

    /// Records an attempt's outcome if `:owner` still holds the lease.
    static let finish = Query(
        """
        UPDATE outbox SET state = :state, attempts = attempts + 1, next_attempt_at = :next_attempt_at,
            last_attempt_at = :last_attempt_at, last_status = :last_status,
            last_error = :last_error, delivered_at = :delivered_at, lease_owner = NULL, lease_until = 0
        WHERE id = :id AND lease_owner = :owner
        RETURNING id
        """
    ) { (id: Int64) in id }

    /// The bindings of ``finish``.
    static func finishBindings(_ id: Int64, owner: String, outcome: DeliveryOutcome) -> Bindings {
        [
            "state": .text(outcome.state.rawValue), "next_attempt_at": .integer(outcome.nextAttemptAt),
            "last_attempt_at": .integer(outcome.attemptedAt), "last_status": .optional(outcome.status.map { Int64($0) }),
            "last_error": .optional(outcome.error), "delivered_at": .optional(outcome.state == .delivered ? outcome.attemptedAt : nil),
            "id": .integer(id), "owner": .text(owner),
        ]
    }

    /// The deliveries in a state after an id, oldest first.
    static let list = Query("SELECT \(columns) FROM outbox WHERE state = :state AND id > :after ORDER BY id LIMIT :limit", row: delivery)

    static let byId = Query("SELECT \(columns) FROM outbox WHERE id = :id", row: delivery)

    /// Sends a row that is not pending again, from `:next_attempt_at` until `:give_up_at`.
    static let retry = Query(
        """
        UPDATE outbox SET state = 'pending', next_attempt_at = :next_attempt_at, give_up_at = :give_up_at, lease_owner = NULL,
            lease_until = 0
        WHERE id = :id AND state <> 'pending'
        RETURNING \(columns)
        """, row: delivery)

    /// The pending rows per receiver: how many, and when the oldest was written.
    static let pendingByTarget = Query(
        "SELECT kind, target, COUNT(*), MIN(created_at) FROM outbox WHERE state = 'pending' GROUP BY kind, target"
    ) { (kind: String, target: String, pending: Int64, oldest: Int64) in
        Delivery.Kind(rawValue: kind).map { OutboxBacklog(kind: $0, target: target, pending: Int(pending), oldestCreatedAt: oldest) }
    }

    /// How many rows are in a state, counting up to `:limit` at most.
    static let countInState = Query("SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE state = :state LIMIT :limit) rows") {
        (count: Int64) in Int(count)
    }

    /// Removes up to 1000 delivered rows delivered before `:before`.
    static let pruneDelivered = StoreStatement(
        """
        DELETE FROM outbox WHERE id IN (
            SELECT id FROM outbox WHERE state = 'delivered' AND delivered_at < :before ORDER BY id LIMIT 1000)
        """)
}
