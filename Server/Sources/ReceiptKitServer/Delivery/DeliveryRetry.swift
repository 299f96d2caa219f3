import ReceiptKit
import ServerSupport

/// Sending a delivery again by hand (`POST /v1/webhooks/deliveries/{id}/retry`): a failed (or
/// delivered) one is pending again, now, with the retry window to succeed in — a consumption
/// answer only until its request's deadline, after which Apple takes none.
struct DeliveryRetry: Sendable {
    let store: Store
    /// How long a delivery sent again is tried (`RECEIPTKIT_WEBHOOK_RETRY_HOURS`).
    let window: Duration

    /// Makes delivery `id` pending again at `now` (milliseconds).
    ///
    /// - Returns: The delivery, pending.
    /// - Throws: ``DeliveryRefusal``; `StoreError` when the database fails.
    func retry(_ id: Int64, now: Int64) async throws -> Delivery {
        let store = self.store
        guard let existing = try await store.run({ try await store.delivery(id) }) else { throw DeliveryRefusal.notFound(id: id) }
        if existing.state == .pending { throw DeliveryRefusal.pending(id: id, nextAttempt: existing.attempts + 1) }
        var giveUpAt = now + window.wholeMilliseconds
        if existing.kind == .consumption {
            guard existing.giveUpAt > now else {
                throw DeliveryRefusal.deadlinePassed(deadline: Timestamp(millisecondsSince1970: existing.giveUpAt))
            }
            giveUpAt = existing.giveUpAt
        }
        let until = giveUpAt
        guard let delivery = try await store.run({ try await store.retryDelivery(id, now: now, giveUpAt: until) }) else {
            // Another request made it pending between the read and the write.
            throw DeliveryRefusal.pending(id: id, nextAttempt: nil)
        }
        return delivery
    }
}

/// Why a delivery is not sent again.
enum DeliveryRefusal: CallerError, Equatable {
    /// No delivery has the id.
    case notFound(id: Int64)
    /// It is still being tried (attempt `nextAttempt` is next, when known).
    case pending(id: Int64, nextAttempt: Int?)
    /// A consumption answer whose request's deadline passed: Apple takes none after it.
    case deadlinePassed(deadline: Timestamp)

    var code: String {
        switch self {
        case .notFound: "not_found"
        case .pending: "delivery_pending"
        case .deadlinePassed: "consumption_deadline_passed"
        }
    }

    var message: String {
        switch self {
        case .notFound(let id): "no delivery \(id)"
        case .pending(let id, let next?): "delivery \(id) is still being tried (attempt \(next) is next)"
        case .pending(let id, nil): "delivery \(id) is being tried already"
        case .deadlinePassed(let deadline): "the deadline of this consumption request passed at \(deadline.iso8601)"
        }
    }
}
