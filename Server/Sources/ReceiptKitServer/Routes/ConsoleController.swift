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

    /// The longest search text taken, in characters (Unicode scalars).
    static let maximumQueryLength = 1_024

    /// ECMA-262's WhiteSpace and LineTerminator: what a search text is trimmed of.
    static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: true
        default: false
        }
    }

    func search(_ request: Request) async throws -> Response {
        // Trimmed of the white space JSON Schema's `\s` names (ECMA-262's WhiteSpace and
        // LineTerminator), so that the document's pattern says exactly which texts are empty.
        let given = request.uri.queryParameters.get("q") ?? ""
        guard given.unicodeScalars.count <= Self.maximumQueryLength, !given.unicodeScalars.contains("\u{0}") else {
            throw APIError.invalidRequest("q must be at most \(Self.maximumQueryLength) characters, none of them U+0000")
        }
        let query = String(String.UnicodeScalarView(
            given.unicodeScalars.drop(while: Self.isSpace).reversed().drop(while: Self.isSpace).reversed()))
        guard !query.isEmpty else {
            throw APIError.invalidRequest("q is empty; give a customer id, an original transaction id, a transaction id or an appAccountToken")
        }
        let store = environment.store
        var matches: [SearchAnswer.Match] = []
        var customerIds = [query]
        // Apple writes an appAccountToken, a UUID, in lower case; one copied from elsewhere may not be.
        if let uuid = UUID(uuidString: query), uuid.uuidString.lowercased() != query {
            customerIds.append(uuid.uuidString.lowercased())
        }
        for customerId in customerIds {
            let keys = try await environment.read { try await store.keys(customerId: customerId) }
            guard !keys.isEmpty else { continue }
            matches.append(.init(type: "customer", customerId: customerId, transactionId: nil, subscriptions: keys))
        }
        let subscriptionKeys = try await environment.read { try await store.keys(originalTransactionId: query) }
        if !subscriptionKeys.isEmpty {
            matches.append(.init(type: "subscription", customerId: nil, transactionId: nil, subscriptions: subscriptionKeys))
        }
        // A first purchase's transaction id is its original transaction id, found above.
        let transactionKeys = try await environment.read { try await store.keys(transactionId: query) }
            .filter { !subscriptionKeys.contains($0) }
        if !transactionKeys.isEmpty {
            matches.append(.init(type: "transaction", customerId: nil, transactionId: query, subscriptions: transactionKeys))
        }
        return try .json(SearchAnswer(query: query, matches: matches))
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

        init(type: String, customerId: String?, transactionId: String?, subscriptions: [SubscriptionKey]) {
            self.type = type
            self.customerId = customerId
            self.transactionId = transactionId
            self.subscriptions = subscriptions.map(SubscriptionKeyAnswer.init)
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
