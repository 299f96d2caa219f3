import ReceiptKit

/// Consumption requests and the customers' consent (``Schema`` v8). A `CONSUMPTION_REQUEST`
/// notification is recorded with its deadline in the transaction that stores it (``Derivation``);
/// an answer — the backend's, or the configured default for a consenting customer an hour before
/// the deadline — is recorded with its outbox row in one transaction (``ConsumptionAnswering``),
/// and the row is sent to Apple until the deadline.
enum ConsumptionStatements {
    static let insertRequest = StoreStatement(
        """
        INSERT INTO consumption_requests
            (notification_uuid, transaction_id, original_transaction_id, bundle_id, environment, product_type, reason,
             requested_at, deadline)
        VALUES (:notification_uuid, :transaction_id, :original_transaction_id, :bundle_id, :environment, :product_type, :reason,
            :requested_at, :deadline)
        ON CONFLICT DO NOTHING
        """)

    /// The write of a request.
    static func requestWrite(_ notice: ConsumptionNotice) -> StoreWrite {
        StoreWrite(insertRequest, [
            "notification_uuid": .text(notice.notificationUUID), "transaction_id": .text(notice.transactionId),
            "product_type": .optional(notice.productType), "reason": .optional(notice.reason),
            "requested_at": .integer(notice.requestedAt), "deadline": .integer(notice.deadline),
        ] + LedgerStatements.key(notice.key))
    }

    /// The latest request about a transaction.
    static let latestRequest = Query(
        """
        SELECT notification_uuid, product_type, deadline, answered_at, bundle_id, environment FROM consumption_requests
        WHERE transaction_id = :transaction_id ORDER BY deadline DESC LIMIT 1
        """
    ) { (uuid: String, productType: String?, deadline: Int64, answeredAt: Int64?, bundleId: String, environment: String) in
        StoredConsumptionRequest(
            notificationUUID: uuid, productType: productType, deadline: deadline, answeredAt: answeredAt, bundleId: bundleId,
            environment: environment)
    }

    /// Records an answer.
    static let answered = Query(
        """
        UPDATE consumption_requests SET answered_at = :answered_at, answer_source = :answer_source, answer = :answer
        WHERE notification_uuid = :notification_uuid
        RETURNING notification_uuid
        """
    ) { (uuid: String) in uuid }

    /// ``answered`` for the default, only while nobody answered: of two servers, only one
    /// answers.
    static let defaultAnswered = Query(
        """
        UPDATE consumption_requests SET answered_at = :answered_at, answer_source = :answer_source, answer = :answer
        WHERE notification_uuid = :notification_uuid AND answered_at IS NULL
        RETURNING notification_uuid
        """
    ) { (uuid: String) in uuid }

    /// The requests nobody answered whose deadline is within `:window` ms of `:now` and not
    /// passed, of a key a consenting customer is linked to.
    static let defaultsDue = Query(
        """
        SELECT r.notification_uuid, r.transaction_id, r.product_type, r.deadline FROM consumption_requests r
        WHERE r.answered_at IS NULL AND r.deadline > :now AND r.deadline <= :now + :window
            AND EXISTS (
                SELECT 1 FROM customer_subscriptions c JOIN consumption_consents k ON k.customer_id = c.customer_id
                WHERE c.original_transaction_id = r.original_transaction_id AND c.bundle_id = r.bundle_id
                    AND c.environment = r.environment AND k.consented = 1)
        ORDER BY r.deadline
        """
    ) { (uuid: String, transactionId: String, productType: String?, deadline: Int64) in
        (notificationUUID: uuid, transactionId: transactionId, productType: productType, deadline: deadline)
    }

    static let setConsent = StoreStatement(
        """
        INSERT INTO consumption_consents (customer_id, consented, updated_at) VALUES (:customer_id, :consented, :updated_at)
        ON CONFLICT (customer_id) DO UPDATE SET consented = excluded.consented, updated_at = excluded.updated_at
        """)
}
