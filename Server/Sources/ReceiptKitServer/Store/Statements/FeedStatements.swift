import ReceiptKit

/// The feed's rows (``Schema`` v8): the state each key's last event was derived from (columns of
/// `subscriptions`), the events (`change_events`), and the counter their ids come from
/// (`feed_counter`).
///
/// Ids increase in commit order. On SQLite one transaction writes at a time. On PostgreSQL,
/// transactions commit in another order than they draw from a sequence, and a reader paging with
/// `after=ID` would skip an id that commits after a greater one it has already read. So ids come
/// from the one row of `feed_counter`, updated in the transaction that writes the events: its row
/// lock is held until that transaction commits, so the next transaction that writes events waits
/// for it and draws the ids after its own. The counter is taken last, after every key is folded
/// and evaluated (``Derivation``), so that the transactions writing events are serialized only
/// for their last statements; an input that changes nothing does not take it.
enum FeedStatements {
    /// The columns of `subscriptions` that hold the state the feed derived last, in the order
    /// ``LedgerStatements/current`` reads them.
    static let derivedColumns = [
        "derived_status", "derived_product_id", "derived_transaction_id", "derived_expires_at", "derived_will_renew",
        "derived_subscription", "derived_family_shared", "next_change_at", "derived_at",
    ]

    /// A derived record from its columns.
    static func derived(
        status: String?, productId: String?, transactionId: String?, expiresAt: Int64?, willRenew: Bool?,
        isSubscription: Bool?, isFamilyShared: Bool?, nextChangeAt: Int64?
    ) -> DerivedRecord {
        var derived = DerivedRecord(nextChangeAt: nextChangeAt)
        if let status = status.flatMap(SubscriptionStatus.init(rawValue:)) {
            derived.state = DerivedState(
                status: status, productId: productId, transactionId: transactionId, expiresAt: expiresAt, willRenew: willRenew,
                isSubscription: isSubscription == true, isFamilyShared: isFamilyShared == true)
        }
        return derived
    }

    static let updateDerived = StoreStatement(
        """
        UPDATE subscriptions SET derived_status = :derived_status, derived_product_id = :derived_product_id,
            derived_transaction_id = :derived_transaction_id, derived_expires_at = :derived_expires_at,
            derived_will_renew = :derived_will_renew, derived_subscription = :derived_subscription,
            derived_family_shared = :derived_family_shared, next_change_at = :next_change_at, derived_at = :derived_at
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
        """)

    /// The write that stores what the feed derived for a key at `instant`.
    static func derivedWrite(_ key: SubscriptionKey, _ derived: DerivedRecord, at instant: Int64) -> StoreWrite {
        let state = derived.state
        return StoreWrite(updateDerived, [
            "derived_status": .optional(state?.status.rawValue), "derived_product_id": .optional(state?.productId),
            "derived_transaction_id": .optional(state?.transactionId), "derived_expires_at": .optional(state?.expiresAt),
            "derived_will_renew": .optional(state?.willRenew), "derived_subscription": .optional(state?.isSubscription),
            "derived_family_shared": .optional(state?.isFamilyShared), "next_change_at": .optional(derived.nextChangeAt),
            "derived_at": .integer(instant),
        ] + LedgerStatements.key(key))
    }

    /// Draws `:count` ids: answers the last one. Its row lock is held until the transaction commits
    /// (see ``FeedStatements``).
    static let drawIds = Query("UPDATE feed_counter SET last_id = last_id + :count WHERE id = 1 RETURNING last_id") {
        (lastId: Int64) in lastId
    }

    static let insertEvent = StoreStatement(
        """
        INSERT INTO change_events (id, type, occurred_at, recorded_at, original_transaction_id, bundle_id, environment, payload)
        VALUES (:id, :type, :occurred_at, :recorded_at, :original_transaction_id, :bundle_id, :environment, :payload)
        """)

    /// One customer's event (a named entitlement's change): its customer kept beside it, so that
    /// the customer's feed has it and no other customer of its purchase does.
    static let insertCustomerEvent = StoreStatement(
        """
        INSERT INTO change_events (id, type, occurred_at, recorded_at, original_transaction_id, bundle_id, environment, payload,
            customer_id)
        VALUES (:id, :type, :occurred_at, :recorded_at, :original_transaction_id, :bundle_id, :environment, :payload,
            :customer_id)
        """)

    /// The write of one event of a key, its JSON rendered.
    static func eventWrite(
        type: EventType, key: SubscriptionKey, occurredAt: Timestamp, id: Int64, json: String, recordedAt: Int64
    ) -> StoreWrite {
        StoreWrite(insertEvent, [
            "id": .integer(id), "type": .text(type.rawValue), "occurred_at": .integer(occurredAt.millisecondsSince1970),
            "recorded_at": .integer(recordedAt), "payload": .text(json),
        ] + LedgerStatements.key(key))
    }

    // MARK: Reading the feed

    /// The events after an id, oldest first.
    static let eventsAfter = Query("SELECT id, payload FROM change_events WHERE id > :after ORDER BY id LIMIT :limit") {
        (id: Int64, payload: String) in StoredFeedEvent(id: id, json: payload)
    }

    /// The events of an app, of an environment, or of both, after an id, oldest first (a `NULL`
    /// bundle id or environment selects all).
    static let selectedEventsAfter = Query(
        """
        SELECT id, payload FROM change_events
        WHERE id > :after AND (CAST(:bundle_id AS TEXT) IS NULL OR bundle_id = :bundle_id)
            AND (CAST(:environment AS TEXT) IS NULL OR environment = :environment)
        ORDER BY id LIMIT :limit
        """
    ) { (id: Int64, payload: String) in StoredFeedEvent(id: id, json: payload) }

    /// A customer's events after an id, oldest first: those of every key linked to the customer
    /// (of the app and environment selected) and the customer's own (a named entitlement's
    /// change, ``insertCustomerEvent``; of a purchase in the app and environment selected, or of a
    /// grant when none is).
    static let customerEventsAfter = Query(
        """
        SELECT id, payload FROM (
            SELECT e.id, e.payload FROM customer_subscriptions c
            JOIN change_events e ON e.original_transaction_id = c.original_transaction_id AND e.bundle_id = c.bundle_id
                AND e.environment = c.environment
            WHERE c.customer_id = :customer_id AND (CAST(:bundle_id AS TEXT) IS NULL OR c.bundle_id = :bundle_id)
                AND (CAST(:environment AS TEXT) IS NULL OR c.environment = :environment) AND e.id > :after
                    AND e.customer_id IS NULL
            UNION ALL
            SELECT e.id, e.payload FROM change_events e
            WHERE e.customer_id = :customer_id AND (CAST(:bundle_id AS TEXT) IS NULL OR e.bundle_id = :bundle_id)
                AND (CAST(:environment AS TEXT) IS NULL OR e.environment = :environment) AND e.id > :after
        ) events
        ORDER BY id LIMIT :limit
        """
    ) { (id: Int64, payload: String) in StoredFeedEvent(id: id, json: payload) }

    // MARK: The sweep

    /// Keys whose derived state may have changed by now, soonest first.
    static let dueKeys = Query(
        """
        SELECT original_transaction_id, bundle_id, environment FROM subscriptions
        WHERE next_change_at <= :now ORDER BY next_change_at LIMIT :limit
        """, row: LedgerStatements.subscriptionKey)

    /// A due key's `next_change_at`, if it is still due (another server, or an input, may have
    /// moved it). On PostgreSQL the row is locked for the rest of the transaction too, or not
    /// read when another transaction holds it (an input folding into the key, or another
    /// server's sweep): that one derives the key.
    static let claimDueKey = Query { dialect in
        """
        SELECT next_change_at FROM subscriptions
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND next_change_at <= :now\(dialect.forUpdateSkipLocked)
        """
    } row: { (nextChangeAt: Int64) in nextChangeAt }

    /// Every key, for the migration that derives each key's state without events.
    static let allKeys = Query(
        "SELECT original_transaction_id, bundle_id, environment FROM subscriptions", row: LedgerStatements.subscriptionKey)
}
