import ReceiptKit

/// Where the feed's events and the verified notifications are sent, each through the outbox: the
/// rows an input or a sweep writes, decided here once.
public struct OutboxTargets: Sendable, Hashable {
    /// `RECEIPTKIT_WEBHOOK_URL`: each event, signed.
    public var webhookURL: String?
    /// `RECEIPTKIT_WEBHOOK_ENVIRONMENTS`: the environments whose events the webhook gets; `nil`:
    /// all.
    public var webhookEnvironments: Set<String>?
    /// `RECEIPTKIT_FORWARD_URLS`: each verified notification, byte for byte.
    public var forwardURLs: [String]
    /// How long a row is tried before it is dead-lettered (`RECEIPTKIT_WEBHOOK_RETRY_HOURS`).
    public var retryWindowMilliseconds: Int64

    /// Creates targets; none by default.
    public init(
        webhookURL: String? = nil, webhookEnvironments: Set<String>? = nil, forwardURLs: [String] = [],
        retryWindowMilliseconds: Int64 = 72 * 3_600_000
    ) {
        self.webhookURL = webhookURL
        self.webhookEnvironments = webhookEnvironments
        self.forwardURLs = forwardURLs
        self.retryWindowMilliseconds = retryWindowMilliseconds
    }

    /// The webhook's row for an event, if a webhook is configured and takes the event's
    /// environment: its JSON, ordered by its key.
    func webhookRow(eventId: Int64, json: String, key: SubscriptionKey, at now: Int64) -> OutboxRow? {
        guard webhookEnvironments?.contains(key.environment) ?? true else { return nil }
        return webhookURL.map { url in
            OutboxRow(
                kind: .webhook, target: url, orderingKey: Self.orderingKey(key), eventId: eventId, body: Array(json.utf8),
                createdAt: now, giveUpAt: now + retryWindowMilliseconds)
        }
    }

    /// The webhook's row for a customer's event (a named entitlement's change), if a webhook is
    /// configured and takes the event's environment (a grant's, which has none, always): ordered
    /// by the customer, so that a customer's entitlement events arrive in the order they happened.
    func webhookRow(eventId: Int64, json: String, customerId: String, environment: String?, at now: Int64) -> OutboxRow? {
        if let environment, let webhookEnvironments, !webhookEnvironments.contains(environment) { return nil }
        return webhookURL.map { url in
            OutboxRow(
                kind: .webhook, target: url, orderingKey: "customer|\(customerId)", eventId: eventId, body: Array(json.utf8),
                createdAt: now, giveUpAt: now + retryWindowMilliseconds)
        }
    }

    /// The rows forwarding a verified notification, byte for byte, to each forward URL, ordered
    /// by the first key it touches.
    func forwardRows(_ notification: [UInt8], keys: [SubscriptionKey], at now: Int64) -> [OutboxRow] {
        let orderingKey = keys.first.map(Self.orderingKey) ?? "notification"
        return forwardURLs.map { url in
            OutboxRow(
                kind: .forward, target: url, orderingKey: orderingKey, eventId: nil, body: notification, createdAt: now,
                giveUpAt: now + retryWindowMilliseconds)
        }
    }

    /// The key a subscription's rows are ordered by.
    static func orderingKey(_ key: SubscriptionKey) -> String {
        "\(key.bundleId)|\(key.environment)|\(key.originalTransactionId)"
    }
}

extension Store {
    /// Where the feed's events and notifications are sent: the targets the store's features were
    /// given (none without).
    var outboxTargets: OutboxTargets { features.setting(OutboxTargets.self) ?? OutboxTargets() }
}
