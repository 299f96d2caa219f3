/// Apple's consumption requests as stored (``ConsumptionStatements``); what they mean and how
/// they are answered: ``ConsumptionRequests``.
extension Store {
    /// The latest consumption request about a transaction, if any.
    func consumptionRequest(transactionId: String) async throws -> StoredConsumptionRequest? {
        try await backend.first(ConsumptionStatements.latestRequest, ["transaction_id": .text(transactionId)])
    }

    /// Records an answer to a request and writes its outbox row, in one transaction
    /// (``ConsumptionAnswering``).
    ///
    /// - Returns: The outbox row, or `nil` when a default found the request answered already.
    func answerConsumption(_ answering: ConsumptionAnswering) async throws -> Delivery? {
        let delivery = try await backend.write(answering)
        if delivery != nil { features.tell(FeedCommit(outboxRows: 1)) }
        return delivery
    }

    /// Records whether a customer consented to share consumption data.
    func setConsumptionConsent(customerId: String, consented: Bool, at now: Int64) async throws {
        try await backend.execute(StoreWrite(
            ConsumptionStatements.setConsent, ["customer_id": .text(customerId), "consented": .flag(consented), "updated_at": .integer(now)]))
    }

    /// The requests nobody answered whose deadline is after `now` and within `window` ms of it,
    /// of keys a consenting customer is linked to, soonest first.
    func consumptionRequestsDue(now: Int64, window: Int64) async throws
        -> [(notificationUUID: String, transactionId: String, productType: String?, deadline: Int64)]
    {
        try await backend.rows(ConsumptionStatements.defaultsDue, ["now": .integer(now), "window": .integer(window)])
    }
}
