import ReceiptKit

/// Apple's Get Retention Message requests (``RetentionRequests``): what the rules read of a
/// subscription, and the requests recorded in the feed.
extension Store {
    /// What the retention rules read of a subscription, in one snapshot (``RetentionReading``).
    ///
    /// - Parameters:
    ///   - key: The subscription the request names.
    ///   - instant: When the request arrived.
    ///   - request: The request's own facts, completed with the subscription's.
    ///   - needs: What the rules read beyond the state.
    func retentionFacts(
        of key: SubscriptionKey, at instant: Timestamp, request: RetentionFacts, needs: RetentionFacts.Needs
    ) async throws -> RetentionFacts {
        try await backend.read(RetentionReading(key: key, at: instant, facts: request, needs: needs))
    }

    /// Writes a `retention.requested` event and its webhook row, in one transaction
    /// (``RetentionRecording``).
    ///
    /// - Returns: The event's id.
    func recordRetentionRequest(_ event: FeedEvent, at recordedAt: Timestamp) async throws -> Int64 {
        let recorded = try await backend.write(RetentionRecording(event, targets: outboxTargets, recordedAt: recordedAt.millisecondsSince1970))
        features.tell(recorded.commit)
        return recorded.eventId
    }

    /// The `retention.requested` events of the keys linked to a customer, latest first, at most
    /// `limit`.
    func retentionRequests(customerId: String, limit: Int) async throws -> [StoredFeedEvent] {
        try await backend.rows(
            RetentionStatements.customerEventsOfType,
            ["customer_id": .text(customerId), "type": .text(EventType.retentionRequested.rawValue), "limit": .integer(Int64(limit))])
    }
}
