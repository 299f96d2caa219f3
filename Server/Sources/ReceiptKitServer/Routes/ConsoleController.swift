import Foundation
import Hummingbird
import ReceiptKit

/// The operator's console: its page at `/console/` and the JSON it reads.
///
/// The page, its script, style sheet and icon (``ConsoleAssets``, embedded in the binary) carry no
/// data and need no token: everything the page shows it reads from `/v1/*` with the token the
/// operator signs in with, through the same bearer middleware as every other `/v1/*` route.
///
/// - `GET /v1/overview`: ``ConsoleOverview``.
/// - `GET /v1/search?q=TEXT`: `{"query", "matches": [match, …]}`, each match
///   `{"type": "customer" | "subscription" | "transaction", "customer_id"?, "transaction_id"?,
///   "subscriptions": [{"bundle_id", "environment", "original_transaction_id"}, …]}`: the text as a
///   customer id (an `appAccountToken` is linked as one; a token in capitals is looked up in
///   lower case too, as Apple writes it), as an original transaction id, and as the transaction id
///   of any stored copy (a renewal's).
/// - `GET /v1/subscriptions/{original_transaction_id}/timeline`: `{"original_transaction_id",
///   "now", "subscriptions": [timeline, …]}`, one ``SubscriptionTimeline`` per key with that id;
///   404 `not_found` when there is none.
struct ConsoleController {
    let environment: RouteEnvironment
    /// Whether the API requires a token (the page then asks for it before reading anything).
    let tokenRequired: Bool

    /// The page and its assets, which need no token.
    func addPage(to router: Router<ServerRequestContext>) {
        let page = ConsoleAssets.page(tokenRequired: tokenRequired)
        router.get("console") { _, _ in ConsoleAssets.response(page) }
        router.get("console/{asset}") { _, context in
            let name = try RouteEnvironment.pathParameter("asset", in: context)
            guard let asset = ConsoleAssets.asset(named: name) else {
                throw APIError(.notFound, "not_found", "the console has no asset \(name)")
            }
            return ConsoleAssets.response(asset)
        }
    }

    /// The JSON routes, behind the bearer middleware.
    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "overview", scope: .read) { _, _ in
            try Response.json(try await ConsoleOverview(environment: environment).answer(now: environment.now))
        }
        group.route(.get, "search", scope: .read) { request, _ in
            try await search(request)
        }
        group.route(.get, "subscriptions/{original_transaction_id}/timeline", scope: .read) { _, context in
            let id = try RouteEnvironment.pathParameter("original_transaction_id", in: context)
            return try await timeline(originalTransactionId: id)
        }
    }

    func search(_ request: Request) async throws -> Response {
        let query = try Search.query(request.uri.queryParameters.get("q") ?? "")
        let matches = try await Search(store: environment.store).matches(query)
        return try .json(SearchAnswer(query: query, matches: matches.map(SearchAnswer.Match.init)))
    }

    func timeline(originalTransactionId id: String) async throws -> Response {
        let store = environment.store
        let keys = try await environment.read { try await store.keys(originalTransactionId: id) }
        guard !keys.isEmpty else {
            throw APIError(.notFound, "not_found", "no subscription with original transaction id \(id) is stored")
        }
        var timelines: [SubscriptionTimeline] = []
        for key in keys {
            let inputs = try await environment.read { try await store.inputs(of: key) }
            timelines.append(try SubscriptionTimeline(key: key, inputs: inputs))
        }
        return try .json(TimelineAnswer(originalTransactionId: id, now: environment.now.iso8601, subscriptions: timelines))
    }
}

/// `GET /v1/search`'s answer: each way the text names something stored.
struct SearchAnswer: Encodable {
    let query: String
    let matches: [Match]

    /// What the text is: a customer id (`customer_id`), an original transaction id, or a
    /// transaction id (`transaction_id`), with the subscriptions it names.
    struct Match: Encodable {
        let type: String
        let customerId: String?
        let transactionId: String?
        let subscriptions: [SubscriptionKeyAnswer]

        init(_ match: Search.Match) {
            type = match.kind.rawValue
            customerId = match.customerId
            transactionId = match.transactionId
            subscriptions = match.subscriptions.map(SubscriptionKeyAnswer.init)
        }

        private enum CodingKeys: String, CodingKey {
            case type, customerId, transactionId, subscriptions
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(type, forKey: .type)
            if let customerId { try container.encode(customerId, forKey: .customerId) }
            if let transactionId { try container.encode(transactionId, forKey: .transactionId) }
            try container.encode(subscriptions, forKey: .subscriptions)
        }
    }
}

/// A subscription's key: `{"bundle_id", "environment", "original_transaction_id"}`.
struct SubscriptionKeyAnswer: Encodable {
    let bundleId: String
    let environment: String
    let originalTransactionId: String

    init(_ key: SubscriptionKey) {
        bundleId = key.bundleId
        environment = key.environment
        originalTransactionId = key.originalTransactionId
    }
}

/// `GET /v1/subscriptions/{original_transaction_id}/timeline`'s answer: a timeline per key with
/// that id.
struct TimelineAnswer: Encodable {
    let originalTransactionId: String
    let now: String
    let subscriptions: [SubscriptionTimeline]
}
