import ReceiptKit

/// Consumption requests and the customers' consent (``Schema`` v8), written once for both
/// databases. A `CONSUMPTION_REQUEST` notification is recorded with its deadline in the
/// transaction that stores it (``FeedRows/Derivation``); an answer — the backend's, or the
/// configured default for a consenting customer an hour before the deadline — is recorded with
/// its outbox row in one transaction, and the row is sent to Apple until the deadline.
enum ConsumptionRows {
    static let insertRequest = StoreStatement(
        """
        INSERT INTO consumption_requests
            (notification_uuid, transaction_id, original_transaction_id, bundle_id, environment, product_type, reason,
             requested_at, deadline)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO NOTHING
        """)

    static func insertWrite(_ notice: ConsumptionNotice) -> StoreWrite {
        StoreWrite(insertRequest, [
            .text(notice.notificationUUID), .text(notice.transactionId), .text(notice.key.originalTransactionId),
            .text(notice.key.bundleId), .text(notice.key.environment), notice.productType.map(StoreValue.text) ?? .null,
            notice.reason.map(StoreValue.text) ?? .null, .integer(notice.requestedAt), .integer(notice.deadline),
        ])
    }

    /// The latest request about a transaction.
    static let latestRequest = StoreStatement(
        """
        SELECT notification_uuid, product_type, deadline, answered_at FROM consumption_requests
        WHERE transaction_id = ? ORDER BY deadline DESC LIMIT 1
        """, columns: [.text, .text, .integer, .integer])

    /// Records an answer; values: answered at, source, answer, notification UUID. With a
    /// condition on `answered_at` for the default (``defaultAnswered``), so that of two servers
    /// only one answers.
    static let answered = StoreStatement(
        """
        UPDATE consumption_requests SET answered_at = ?, answer_source = ?, answer = ?
        WHERE notification_uuid = ?
        RETURNING notification_uuid
        """, columns: [.text])

    static let defaultAnswered = StoreStatement(
        """
        UPDATE consumption_requests SET answered_at = ?, answer_source = ?, answer = ?
        WHERE notification_uuid = ? AND answered_at IS NULL
        RETURNING notification_uuid
        """, columns: [.text])

    /// The requests nobody answered whose deadline is within `?` ms of `?` and not passed, of a
    /// key a consenting customer is linked to. Values: now, now, window.
    static let defaultsDue = StoreStatement(
        """
        SELECT r.notification_uuid, r.transaction_id, r.product_type, r.deadline FROM consumption_requests r
        WHERE r.answered_at IS NULL AND r.deadline > ? AND r.deadline <= ? + ?
            AND EXISTS (
                SELECT 1 FROM customer_subscriptions c JOIN consumption_consents k ON k.customer_id = c.customer_id
                WHERE c.original_transaction_id = r.original_transaction_id AND c.bundle_id = r.bundle_id
                    AND c.environment = r.environment AND k.consented = 1)
        ORDER BY r.deadline
        """, columns: [.text, .text, .text, .integer])

    static let setConsent = StoreStatement(
        """
        INSERT INTO consumption_consents (customer_id, consented, updated_at) VALUES (?, ?, ?)
        ON CONFLICT (customer_id) DO UPDATE SET consented = excluded.consented, updated_at = excluded.updated_at
        """)

    /// The outbox row of an answer: to Apple, ordered per transaction, tried until the deadline.
    static func outboxWrite(transactionId: String, body: [UInt8], now: Int64, deadline: Int64) -> StoreWrite {
        OutboxRows.insertWrite(
            kind: .consumption, target: transactionId, orderingKey: "consumption:\(transactionId)", eventId: nil, body: body,
            now: now, giveUpAt: deadline)
    }
}

/// A consumption request as stored.
struct StoredConsumptionRequest: Sendable, Hashable {
    var notificationUUID: String
    var productType: String?
    var deadline: Int64
    var answeredAt: Int64?

    init?(_ row: [StoreValue]) {
        guard let uuid = row[0].text, let deadline = row[2].integer else { return nil }
        notificationUUID = uuid
        productType = row[1].text
        self.deadline = deadline
        answeredAt = row[3].integer
    }
}

/// What consumption requests keep in the store besides the rows the feed writes.
protocol ConsumptionStore: Sendable {
    /// The latest consumption request about a transaction, if any.
    func consumptionRequest(transactionId: String) async throws -> StoredConsumptionRequest?
    /// Records the backend's answer to a request and writes its outbox row, in one transaction.
    /// - Returns: The outbox row.
    func answerConsumption(
        _ request: StoredConsumptionRequest, transactionId: String, apple: [UInt8], now: Int64
    ) async throws -> Delivery?
    /// Records whether a customer consented to share consumption data.
    func setConsumptionConsent(customerId: String, consented: Bool, at now: Int64) async throws
    /// Answers with `answer` the requests nobody answered whose deadline is less than `window`
    /// ms away, of keys a consenting customer is linked to: each request recorded answered (by
    /// one server only) with its outbox row, in a transaction of its own. `answer` gives Apple's
    /// body for a product type, or `nil` when the default does not fit it.
    /// - Returns: How many were answered.
    func answerConsumptionDefaults(
        now: Int64, window: Int64, answer: @Sendable (String?) -> [UInt8]?
    ) async throws -> Int
}
