import Foundation
import Hummingbird
import ReceiptKit

/// The feed of what changed (``FeedDerivation``), oldest first, read with a cursor:
///
/// - `GET /v1/events[?after=ID][&limit=N][&bundle_id=…][&environment=…]`: every event after
///   `ID`, of the app and environment selected.
/// - `GET /v1/customers/{customer_id}/events[?after=ID][&limit=N][&bundle_id=…][&environment=…]`:
///   the events of the subscriptions linked to the customer.
///
/// Both answer `{"events": [event, …], "after": ID, "has_more": bool}`: `after` is the id of the
/// last event returned (or the one given, when none was), to send as `after` next time. A
/// consumer that stores it once it has handled the events never misses one nor sees one twice:
/// ids increase in the order their events committed. `limit` is 1 to 1000, default 100.
struct FeedController {
    let environment: RouteEnvironment

    static let defaultLimit = 100
    static let maximumLimit = 1000

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "events", scope: .read) { request, _ in
            let (after, limit) = try Self.cursor(request)
            let filter = try KeyFilter(request)
            let store = environment.store
            let events = try await environment.read {
                try await store.events(after: after, limit: limit + 1, bundleId: filter.bundleId, environment: filter.environment)
            }
            return try Response.json(EventPage(events, after: after, limit: limit))
        }
        group.route(.get, "customers/{customer_id}/events", scope: .read) { request, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let (after, limit) = try Self.cursor(request)
            let filter = try KeyFilter(request)
            let store = environment.store
            let events = try await environment.read {
                try await store.events(
                    customerId: customerId, after: after, limit: limit + 1, bundleId: filter.bundleId, environment: filter.environment)
            }
            return try Response.json(EventPage(events, after: after, limit: limit, customerId: customerId))
        }
    }

    /// `after` (an event id: decimal digits, default 0) and `limit` (1 to 1000, default 100).
    static func cursor(_ request: Request) throws(APIError) -> (after: Int64, limit: Int) {
        var after: Int64 = 0
        if let text = request.uri.queryParameters.get("after") {
            guard let value = Int64(text), value >= 0, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                throw APIError.invalidRequest("after is \"\(text)\"; expected an event id (the id of the last event handled), or 0")
            }
            after = value
        }
        var limit = defaultLimit
        if let text = request.uri.queryParameters.get("limit") {
            guard let value = Int(text), (1...maximumLimit).contains(value) else {
                throw APIError.invalidRequest("limit is \"\(text)\"; expected 1 to \(maximumLimit)")
            }
            limit = value
        }
        return (after, limit)
    }
}

/// A page of the feed — everyone's, or a customer's (`customer_id` first) — oldest first, each
/// event's JSON exactly as stored and delivered, with the cursor of the next page.
struct EventPage: Encodable {
    let customerId: String?
    let events: [RenderedJSON]
    let after: String
    let hasMore: Bool

    /// The page of at most `limit` events of `events` (read with one more, to know whether there
    /// are more).
    init(_ events: [StoredFeedEvent], after: Int64, limit: Int, customerId: String? = nil) {
        let page = events.prefix(limit)
        self.customerId = customerId
        self.events = page.map { RenderedJSON($0.json) }
        self.after = String(page.last?.id ?? after)
        hasMore = events.count > limit
    }

    private enum CodingKeys: String, CodingKey {
        case events, after
        case customerId = "customer_id"
        case hasMore = "has_more"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let customerId { try container.encode(customerId, forKey: .customerId) }
        try container.encode(events, forKey: .events)
        try container.encode(after, forKey: .after)
        try container.encode(hasMore, forKey: .hasMore)
    }
}
