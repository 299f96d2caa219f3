import Foundation
import Hummingbird
import ReceiptKit
import ServerSupport

/// The outbox's deliveries (``Delivery``), for the operator:
///
/// - `GET /v1/webhooks/deliveries[?state=failed|pending|delivered][&after=ID][&limit=N]`: the
///   deliveries in a state (default `failed`, the dead letters), oldest first,
///   `{"deliveries": [delivery, …], "after": ID, "has_more": bool}`; each delivery
///   `{"id", "kind", "target", "event_id", "state", "attempts", "created_at", "next_attempt_at",
///   "give_up_at", "last_attempt_at", "last_status", "last_error", "delivered_at"}`.
/// - `POST /v1/webhooks/deliveries/{id}/retry`: sends a failed (or delivered) delivery again,
///   now, with `RECEIPTKIT_WEBHOOK_RETRY_HOURS` more to succeed in: 200 with the delivery; 404
///   `not_found`; 409 `delivery_pending` when it is still being tried; 409
///   `consumption_deadline_passed` for a consumption answer whose deadline is behind.
struct DeliveryController {
    let environment: RouteEnvironment
    /// How long a delivery sent again is tried.
    let retryWindow: Duration

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "webhooks/deliveries", scope: .read) { request, _ in
            var state = Delivery.State.failed
            if let text = request.uri.queryParameters.get("state") {
                guard let value = Delivery.State(rawValue: text) else {
                    throw APIError.invalidRequest("state is \"\(text)\"; expected failed, pending or delivered")
                }
                state = value
            }
            let (after, limit) = try FeedController.cursor(request)
            let outbox = environment.store
            let wanted = state
            let deliveries = try await environment.read { try await outbox.deliveries(state: wanted, after: after, limit: limit + 1) }
            let page = deliveries.prefix(limit)
            return try Response.json(DeliveryPage(
                deliveries: Array(page), after: String(page.last?.id ?? after), hasMore: deliveries.count > limit))
        }
        group.route(.post, "webhooks/deliveries/{id}/retry", scope: .admin) { _, context in
            let text = try RouteEnvironment.pathParameter("id", in: context)
            guard let id = Int64(text), id > 0 else {
                throw APIError.invalidRequest("the delivery id is \"\(text)\"; expected the id a delivery is listed with")
            }
            let retry = DeliveryRetry(store: environment.store, window: retryWindow)
            let delivery = try await retry.retry(id, now: environment.now.millisecondsSince1970)
            return try Response.json(delivery)
        }
    }
}

/// A page of the outbox's deliveries, oldest first, with the cursor of the next page.
struct DeliveryPage: Encodable {
    let deliveries: [Delivery]
    let after: String
    let hasMore: Bool

    private enum CodingKeys: String, CodingKey {
        case deliveries, after
        case hasMore = "has_more"
    }
}
