/// What the Get Retention Message endpoint reads of a subscription besides its state
/// (``RetentionReading``), and the retention requests recorded in the feed. Each reads the rows of
/// one key, by the keys its tables are led by; none writes.
enum RetentionStatements {
    /// How many transactions the key has stored: one row per transaction carries `is_latest`
    /// (the partial index `transaction_copies_current` holds exactly those).
    static let transactionCount = Query(
        """
        SELECT COUNT(*) FROM transaction_copies
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND is_latest = 1
        """
    ) { (count: Int64) in Int(count) }

    /// The copy signed last of each of the key's transactions.
    static let latestCopies = Query(
        """
        SELECT copy FROM transaction_copies
        WHERE original_transaction_id = :original_transaction_id AND bundle_id = :bundle_id AND environment = :environment
            AND is_latest = 1
        """
    ) { (copy: StoredJSON) in copy }

    /// The inputs that touched the key before an input id (`:before`), latest first: a page of
    /// them.
    static let inputsBefore = Query(
        """
        SELECT i.id, i.kind, i.record, i.received_at
        FROM input_subscriptions k JOIN inputs i ON i.id = k.input_id
        WHERE k.original_transaction_id = :original_transaction_id AND k.bundle_id = :bundle_id
            AND k.environment = :environment AND k.input_id < :before
        ORDER BY k.input_id DESC LIMIT :limit
        """, row: InputStatements.storedInput)

    /// The feed's events of one type of the keys linked to a customer, latest first.
    static let customerEventsOfType = Query(
        """
        SELECT e.id, e.payload FROM customer_subscriptions c
        JOIN change_events e ON e.original_transaction_id = c.original_transaction_id AND e.bundle_id = c.bundle_id
            AND e.environment = c.environment
        WHERE c.customer_id = :customer_id AND e.type = :type
        ORDER BY e.id DESC LIMIT :limit
        """
    ) { (id: Int64, payload: String) in StoredFeedEvent(id: id, json: payload) }
}
