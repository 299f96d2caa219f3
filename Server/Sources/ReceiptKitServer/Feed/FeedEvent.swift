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

    /// `{"source", "notification_uuid", "notification_type", "notification_subtype", "transaction_id"}`.
    var json: String {
        var json = JSONObjectText()
        json.member("source", source.rawValue)
        json.member("notification_uuid", notificationUUID)
        json.member("notification_type", notificationType)
        json.member("notification_subtype", notificationSubtype)
        json.member("transaction_id", transactionId)
        return json.text
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
    /// The `consumption_request` member of a ``EventType/consumptionRequested`` event,
    /// rendered JSON.
    var consumptionRequest: String?

    /// The event as the feed serves it and a webhook carries it:
    /// `{"id", "type", "occurred_at", "bundle_id", "environment", "original_transaction_id",
    /// "customer_ids", "status", "entitled", "previous_status", "subscription", "cause"}` (and
    /// `consumption_request` for a consumption request). `id` is a string of decimal digits.
    func json(id: Int64) -> String {
        var json = JSONObjectText()
        json.member("id", String(id))
        json.member("type", type.rawValue)
        json.member("occurred_at", occurredAt.iso8601)
        json.member("bundle_id", key.bundleId)
        json.member("environment", key.environment)
        json.member("original_transaction_id", key.originalTransactionId)
        json.member("customer_ids", strings: customerIds)
        json.member("status", state?.status.rawValue)
        json.member("entitled", state?.isEntitled ?? false)
        json.member("previous_status", previousStatus?.rawValue)
        json.member("subscription", json: state?.json() ?? "null")
        json.member("cause", json: cause.json)
        if let consumptionRequest { json.member("consumption_request", json: consumptionRequest) }
        return json.text
    }
}

/// One event of the feed as stored: its id and its JSON, exactly as served and delivered.
public struct StoredFeedEvent: Sendable, Hashable {
    /// Its position in the feed.
    public var id: Int64
    /// ``FeedEvent/json(id:)``.
    public var json: String
}
