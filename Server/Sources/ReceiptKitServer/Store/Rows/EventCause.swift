package import ReceiptKit

/// Why a change happened: the input that caused it, or the sweep that noticed time passing.
public struct EventCause: Sendable, Hashable {
    /// Where the input came from.
    public enum Source: String, Sendable, Hashable {
        /// `POST /appstore/notifications`: Apple's notification.
        case appleNotification = "webhook"
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
