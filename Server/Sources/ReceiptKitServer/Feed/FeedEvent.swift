import ReceiptKit

/// One event of the feed before its id is known: what ``FeedEvent/json(id:)`` renders.
struct FeedEvent: Sendable {
    var type: EventType
    var key: SubscriptionKey
    /// When the change happened: the request's instant, or the instant time changed the state.
    var occurredAt: Timestamp
    /// The customers linked to the key when the event was written, sorted.
    var customerIds: [String]
    var previousStatus: SubscriptionStatus?
    /// The state after the change, or `nil` for an event that is not a state's change and comes
    /// before any state of the key is known.
    var state: SubscriptionState?
    var cause: EventCause
    /// The consumption request a ``EventType/consumptionRequested`` event is about.
    var consumptionRequest: ConsumptionNotice?
    /// The Get Retention Message request a ``EventType/retentionRequested`` event is, and its answer,
    /// as the retention requests encode it (`RetentionRequestNotice`).
    var retentionRequest: (any Encodable & Sendable)? = nil

    /// The event as the feed serves it and a webhook carries it:
    /// `{"id", "type", "occurred_at", "bundle_id", "environment", "original_transaction_id",
    /// "customer_ids", "status", "entitled", "previous_status", "subscription", "cause"}` (and
    /// `consumption_request` for a consumption request, `retention_request` for a Get Retention
    /// Message request). `id` is a string of decimal digits;
    /// `subscription` is the state exactly as `verify-receipt --state` writes it.
    func json(id: Int64) throws -> String {
        try AnswerEncoder.encode(Payload(event: self, id: id))
    }

    /// The write of this event as the feed's row, its JSON rendered
    /// (``FeedStatements/eventWrite(type:key:occurredAt:id:json:recordedAt:)``).
    func write(id: Int64, json: String, recordedAt: Int64) -> StoreWrite {
        FeedStatements.eventWrite(type: type, key: key, occurredAt: occurredAt, id: id, json: json, recordedAt: recordedAt)
    }

    private struct Payload: Encodable {
        let event: FeedEvent
        let id: Int64

        private enum CodingKeys: String, CodingKey {
            case id, type, occurredAt, bundleId, environment, originalTransactionId, customerIds, status, entitled
            case previousStatus, subscription, cause, consumptionRequest, retentionRequest
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(String(id), forKey: .id)
            try container.encode(event.type.rawValue, forKey: .type)
            try container.encode(event.occurredAt.iso8601, forKey: .occurredAt)
            try container.encode(event.key.bundleId, forKey: .bundleId)
            try container.encode(event.key.environment, forKey: .environment)
            try container.encode(event.key.originalTransactionId, forKey: .originalTransactionId)
            try container.encode(event.customerIds, forKey: .customerIds)
            try container.encodeIfPresent(event.state?.status.rawValue, forKey: .status)
            try container.encode(event.state?.isEntitled ?? false, forKey: .entitled)
            try container.encodeIfPresent(event.previousStatus?.rawValue, forKey: .previousStatus)
            try container.encodeIfPresent(event.state.map { RenderedJSON($0.json()) }, forKey: .subscription)
            try container.encode(event.cause, forKey: .cause)
            if let request = event.consumptionRequest { try container.encode(request, forKey: .consumptionRequest) }
            if let request = event.retentionRequest { try container.encode(request, forKey: .retentionRequest) }
        }
    }
}
