import ReceiptKit

/// What the operator's console reads besides states and inputs of a key.
enum ConsoleStatements {
    /// The keys of a transaction id, through `transaction_copies_transaction_id` (v9).
    static let keysOfTransactionId = Query(
        """
        SELECT DISTINCT original_transaction_id, bundle_id, environment FROM transaction_copies WHERE transaction_id = ?
        """, row: LedgerStatements.subscriptionKey)

    static let subscriptionCount = Query("SELECT COUNT(*) FROM subscriptions") { (count: Int64) in count }

    /// The first keys in the order of `subscriptions`' primary key.
    static let firstKeys = Query(
        """
        SELECT original_transaction_id, bundle_id, environment FROM subscriptions
        ORDER BY original_transaction_id, bundle_id, environment LIMIT ?
        """, row: LedgerStatements.subscriptionKey)

    /// The notifications stored before an input id, newest first, with their type: a page of a
    /// walk down the inputs' primary key (no index on `received_at` to keep up on every write).
    static let notificationTypes = Query { dialect in
        """
        SELECT id, received_at, \(dialect.jsonText("record", ["notification", "type"])) FROM inputs
        WHERE kind = 'notification' AND id < ? ORDER BY id DESC LIMIT ?
        """
    } row: { (id: Int64, receivedAt: Int64, type: String?) in NotificationSighting(id: id, receivedAt: receivedAt, type: type) }

    /// The last notifications stored, newest first.
    static let latestNotifications = Query(
        """
        SELECT id, kind, record, received_at FROM inputs WHERE kind = 'notification' ORDER BY id DESC LIMIT ?
        """, row: InputStatements.storedInput)
}
