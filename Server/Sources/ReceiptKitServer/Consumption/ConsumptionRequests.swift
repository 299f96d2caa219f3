import ReceiptKit

/// Apple's consumption requests answered: the backend's answer checked against the stored request
/// (`PUT /v1/transactions/{id}/consumption`), and `RECEIPTKIT_CONSUMPTION_DEFAULT` for the
/// customers who consented, an hour before the deadline (the sweep). Each answer is recorded with
/// its outbox row in one transaction, and the row is sent to Send Consumption Information until
/// the deadline (``DeliveryService``).
struct ConsumptionRequests: Sendable {
    let store: Store
    /// Whether the App Store Server API is configured: answers are sent through it.
    let canSend: Bool

    /// How long before the deadline the default answers: the backend had eleven hours.
    static let defaultWindow: Int64 = 3_600_000

    /// Records the backend's answer to the latest request about a transaction, and its outbox row.
    ///
    /// - Returns: The request's deadline and the outbox row.
    /// - Throws: ``ConsumptionRefusal`` (no consent, no such request, its deadline passed),
    ///   ``InvalidInput`` (a field Apple refuses for this purchase), `sendingOff` without the App
    ///   Store Server API; ``StoreError``.
    func answer(_ answer: ConsumptionAnswer, transactionId: String, now: Int64) async throws -> (deadline: Int64, delivery: Delivery?) {
        guard answer.customerConsented == true else {
            throw ConsumptionRefusal.consentRequired
        }
        try answer.validate()
        guard canSend else { throw ConsumptionRefusal.sendingOff }
        guard let pending = try await store.consumptionRequest(transactionId: transactionId) else {
            throw ConsumptionRefusal.requestNotFound(transactionId: transactionId)
        }
        guard pending.deadline > now else {
            throw ConsumptionRefusal.deadlinePassed(deadline: Timestamp(millisecondsSince1970: pending.deadline))
        }
        try answer.validate(productType: pending.productType)
        let body = try answer.appleJSON()
        let delivery = try await store.answerConsumption(ConsumptionAnswering(
            source: .backend, notificationUUID: pending.notificationUUID, answer: body,
            row: Self.row(transactionId: transactionId, body: body, now: now, deadline: pending.deadline)))
        return (pending.deadline, delivery)
    }

    /// Records whether a customer consented to share consumption data.
    func setConsent(customerId: String, consented: Bool, at now: Int64) async throws {
        try await store.setConsumptionConsent(customerId: customerId, consented: consented, at: now)
    }

    /// Answers with `answer` the requests nobody answered whose deadline is less than an hour
    /// away, of keys a consenting customer is linked to: each recorded answered (by one server
    /// only) with its outbox row, in a transaction of its own. A default that does not fit a
    /// purchase (a percentage for an auto-renewable subscription) is not sent.
    ///
    /// - Returns: How many were answered.
    func answerDefaults(with answer: ConsumptionAnswer, now: Int64) async throws -> Int {
        var answered = 0
        for request in try await store.consumptionRequestsDue(now: now, window: Self.defaultWindow) {
            guard (try? answer.validate(productType: request.productType)) != nil else { continue }
            let body = try answer.appleJSON()
            let delivery = try await store.answerConsumption(ConsumptionAnswering(
                source: .default, notificationUUID: request.notificationUUID, answer: body,
                row: Self.row(transactionId: request.transactionId, body: body, now: now, deadline: request.deadline)))
            if delivery != nil { answered += 1 }
        }
        return answered
    }

    /// The outbox row of an answer: to Apple, ordered per transaction, tried until the deadline.
    static func row(transactionId: String, body: [UInt8], now: Int64, deadline: Int64) -> OutboxRow {
        OutboxRow(
            kind: .consumption, target: transactionId, orderingKey: "consumption:\(transactionId)", eventId: nil, body: body,
            createdAt: now, giveUpAt: deadline)
    }
}
