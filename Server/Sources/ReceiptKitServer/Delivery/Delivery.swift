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

    /// `{"id", "kind", "target", "event_id", "state", "attempts", "created_at", …}`, instants
    /// as ISO 8601 (the body is not shown).
    var json: String {
        func instant(_ milliseconds: Int64?) -> String? { milliseconds.map { Timestamp(millisecondsSince1970: $0).iso8601 } }
        var json = JSONObjectText()
        json.member("id", String(id))
        json.member("kind", kind.rawValue)
        json.member("target", target)
        json.member("event_id", eventId.map { String($0) })
        json.member("state", state.rawValue)
        json.member("attempts", attempts)
        json.member("created_at", instant(createdAt))
        json.member("next_attempt_at", state == .pending ? instant(nextAttemptAt) : nil)
        json.member("give_up_at", instant(giveUpAt))
        json.member("last_attempt_at", instant(lastAttemptAt))
        json.member("last_status", lastStatus.map { Int64($0) })
        json.member("last_error", lastError)
        json.member("delivered_at", instant(deliveredAt))
        return json.text
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
