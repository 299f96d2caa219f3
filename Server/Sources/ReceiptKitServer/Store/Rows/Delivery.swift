import ReceiptKit

/// One row of the durable outbox: what the server must send, written in the transaction that
/// causes it — a feed event for the webhook, a notification to forward, a consumption answer for
/// Apple — and sent later by ``DeliveryService``.
///
/// A row is `pending` until a receiver accepts it (`delivered`) or its time runs out (`failed`,
/// the dead letters, sent again only by `POST /v1/webhooks/deliveries/{id}/retry`). Rows of one
/// receiver (`target`) and one subscription (`ordering_key`) go out in id order: a row is not
/// claimed while an earlier one of the same pair is pending, in flight or waiting for its next
/// attempt. Within a key, ids follow commit order (the key's row lock serializes the
/// transactions that write them). A server killed mid-attempt leaves its lease to expire: the row
/// is sent again, with the same event id — at least once.
public struct Delivery: Sendable, Hashable {
    /// Where a row is.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Waiting to be sent, in flight, or waiting for its next attempt.
        case pending
        /// A receiver accepted it (2xx).
        case delivered
        /// Its time ran out: a dead letter, sent again only when asked.
        case failed
    }

    /// What a row sends.
    enum Kind: String, Sendable {
        /// A feed event, signed, to `RECEIPTKIT_WEBHOOK_URL`.
        case webhook
        /// A verified notification, byte for byte, to one of `RECEIPTKIT_FORWARD_URLS`.
        case forward
        /// A consumption answer to Apple's Send Consumption Information.
        case consumption
    }

    public var id: Int64
    var kind: Kind
    /// The URL (webhook, forward), or the transaction id (consumption).
    public var target: String
    public var orderingKey: String
    /// The feed event a webhook carries.
    public var eventId: Int64?
    public var state: State
    public var attempts: Int
    public var createdAt: Int64
    public var nextAttemptAt: Int64
    public var giveUpAt: Int64
    public var lastAttemptAt: Int64?
    public var lastStatus: Int?
    public var lastError: String?
    public var deliveredAt: Int64?
    /// What is sent.
    public var body: [UInt8]

    /// What it sends, as the API names it: `webhook`, `forward` or `consumption`.
    public var kindName: String { kind.rawValue }
}

extension Delivery: Encodable {
    private enum CodingKeys: String, CodingKey {
        case id, kind, target, state, attempts
        case eventId = "event_id"
        case createdAt = "created_at"
        case nextAttemptAt = "next_attempt_at"
        case giveUpAt = "give_up_at"
        case lastAttemptAt = "last_attempt_at"
        case lastStatus = "last_status"
        case lastError = "last_error"
        case deliveredAt = "delivered_at"
    }

    /// `{"id", "kind", "target", "event_id", "state", "attempts", "created_at", …}`, ids as
    /// strings, instants as ISO 8601, `next_attempt_at` only while pending (the body is not
    /// shown).
    public func encode(to encoder: any Encoder) throws {
        func instant(_ milliseconds: Int64?) -> String? { milliseconds.map { Timestamp(millisecondsSince1970: $0).iso8601 } }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(String(id), forKey: .id)
        try container.encode(kind.rawValue, forKey: .kind)
        try container.encode(target, forKey: .target)
        try container.encodeIfPresent(eventId.map { String($0) }, forKey: .eventId)
        try container.encode(state.rawValue, forKey: .state)
        try container.encode(attempts, forKey: .attempts)
        try container.encodeIfPresent(instant(createdAt), forKey: .createdAt)
        try container.encodeIfPresent(state == .pending ? instant(nextAttemptAt) : nil, forKey: .nextAttemptAt)
        try container.encodeIfPresent(instant(giveUpAt), forKey: .giveUpAt)
        try container.encodeIfPresent(instant(lastAttemptAt), forKey: .lastAttemptAt)
        try container.encodeIfPresent(lastStatus, forKey: .lastStatus)
        try container.encodeIfPresent(lastError, forKey: .lastError)
        try container.encodeIfPresent(instant(deliveredAt), forKey: .deliveredAt)
    }
}

/// How an attempt ended, as ``OutboxStore/finishDelivery(_:owner:outcome:)`` records it.
package struct DeliveryOutcome: Sendable {
    package var state: Delivery.State
    package var nextAttemptAt: Int64
    package var attemptedAt: Int64
    package var status: Int?
    package var error: String?
}

/// The pending rows of one receiver.
struct OutboxBacklog: Sendable, Hashable {
    var kind: Delivery.Kind
    var target: String
    var pending: Int
    var oldestCreatedAt: Int64
}

/// A row to write to the outbox, in the transaction that causes it.
struct OutboxRow: Sendable, Hashable {
    var kind: Delivery.Kind
    /// The URL (webhook, forward), or the transaction id (consumption).
    var target: String
    /// What orders the rows of one target: a subscription's, or a transaction's.
    var orderingKey: String
    /// The feed event a webhook carries.
    var eventId: Int64?
    /// What is sent.
    var body: [UInt8]
    /// When it is written, and first due.
    var createdAt: Int64
    /// When it is dead-lettered if no attempt succeeded.
    var giveUpAt: Int64
}
