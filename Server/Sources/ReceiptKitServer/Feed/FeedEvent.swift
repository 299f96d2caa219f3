package import ReceiptKit

/// Why a change happened: the input that caused it, or the sweep that noticed time passing.
public struct EventCause: Sendable, Hashable {
    /// Where the input came from.
    public enum Source: String, Sendable, Hashable {
        /// `POST /appstore/notifications`: Apple's notification.
        case webhook
        /// `POST /v1/transactions` with a signed transaction or a receipt: the app's purchase.
        case app
        /// Fetched from the App Store Server API: a purchase by id, a sync, a missed
        /// notification recovered from Get Notification History.
        case reconcile
        /// No input: a period, a grace period or a retry window ended (``SweepService``).
        case sweep
        /// `POST /appstore/retention`: Apple's Get Retention Message request (no input stored).
        case retention
        /// `POST /v1/customers/{id}/grants` or `DELETE …/grants/{grant_id}`: access given or
        /// ended by hand (no input stored).
        case grant
    }

    public var source: Source
    public var notificationUUID: String?
    public var notificationType: String?
    public var notificationSubtype: String?
    /// The transaction the input carried, if any.
    public var transactionId: String?

    /// Creates a cause.
    public init(
        source: Source, notificationUUID: String? = nil, notificationType: String? = nil, notificationSubtype: String? = nil,
        transactionId: String? = nil
    ) {
        self.source = source
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
    }

    /// The cause of the passing of time.
    static let sweep = EventCause(source: .sweep)

}

extension EventCause: Encodable {
    private enum CodingKeys: String, CodingKey {
        case source, notificationUUID, notificationType, notificationSubtype, transactionId
    }

    /// `{"source", "notification_uuid", "notification_type", "notification_subtype", "transaction_id"}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source.rawValue, forKey: .source)
        try container.encodeIfPresent(notificationUUID, forKey: .notificationUUID)
        try container.encodeIfPresent(notificationType, forKey: .notificationType)
        try container.encodeIfPresent(notificationSubtype, forKey: .notificationSubtype)
        try container.encodeIfPresent(transactionId, forKey: .transactionId)
    }
}

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
    /// The Get Retention Message request a ``EventType/retentionRequested`` event is, and its answer.
    var retentionRequest: RetentionRequestNotice? = nil

    /// The event as the feed serves it and a webhook carries it:
    /// `{"id", "type", "occurred_at", "bundle_id", "environment", "original_transaction_id",
    /// "customer_ids", "status", "entitled", "previous_status", "subscription", "cause"}` (and
    /// `consumption_request` for a consumption request, `retention_request` for a Get Retention
    /// Message request). `id` is a string of decimal digits;
    /// `subscription` is the state exactly as `verify-receipt --state` writes it.
    func json(id: Int64) throws -> String {
        try AnswerEncoder.encode(Payload(event: self, id: id))
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

/// One event of the feed as stored: its id and its JSON, exactly as served and delivered.
public struct StoredFeedEvent: Sendable, Hashable {
    /// Its position in the feed.
    public var id: Int64
    /// ``FeedEvent/json(id:)``.
    public var json: String
}
