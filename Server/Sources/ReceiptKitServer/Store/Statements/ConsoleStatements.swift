import ReceiptKit

/// What the operator's console reads besides states and inputs of a key.
enum ConsoleStatements {
    /// The keys of a transaction id, through `transaction_copies_transaction_id` (v9).
    static let keysOfTransactionId = Query(
        """
        SELECT DISTINCT original_transaction_id, bundle_id, environment FROM transaction_copies
            WHERE transaction_id = :transaction_id
        """, row: LedgerStatements.subscriptionKey)

    /// The last notifications stored, newest first.
    static let latestNotifications = Query(
        """
        SELECT id, kind, record, received_at FROM inputs WHERE kind = 'notification' ORDER BY id DESC LIMIT :limit
        """, row: InputStatements.storedInput)
}
