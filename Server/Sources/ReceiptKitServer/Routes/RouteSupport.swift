import Foundation
import Hummingbird
import ReceiptKit

/// What every route shares: the verifier, the store, the metrics, the clock, how long `/readyz`
/// waits for the database, and the notifications refused since the process started.
struct RouteEnvironment: Sendable {
    let verifier: AppStoreVerifier
    let store: Store
    let metrics: ServerMetrics
    let clock: @Sendable () -> Date
    /// How long `/readyz` waits for the database to accept a write before answering 503.
    let readinessTimeout: Duration
    /// The App Store Server API, or `nil` when reconciliation is off.
    var apple: AppleAPI? = nil
    /// The notifications this process refused, for the console (never stored).
    let rejections: NotificationRejections
    /// The named entitlements (`RECEIPTKIT_ENTITLEMENTS_FILE`), or `nil`.
    var entitlementsFile: EntitlementsFile? = nil


    /// The largest JWS body accepted: the verifier's JWS limit plus 1 KiB of JSON around it.
    var jwsBodyLimit: Int { verifier.configuration.maximumJWSSize + 1024 }

    /// The largest body carrying a receipt's base64 (a third larger than the receipt) plus 4 KiB
    /// of JSON, or a JWS body, whichever is larger.
    var receiptBodyLimit: Int {
        let receipt = max(verifier.configuration.maximumReceiptSize, 0)
        return max(jwsBodyLimit, (receipt + 2) / 3 * 4 + 4096)
    }

    var now: Timestamp { Timestamp(clock()) }

    /// The whole body, or 413 `input_too_large` when it is longer than `limit` bytes.
    func body(of request: Request, upTo limit: Int) async throws -> [UInt8] {
        do {
            let buffer = try await request.body.collect(upTo: limit)
            return Array(buffer.readableBytesView)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw BodyTooLarge(limit: limit)
        }
    }

    /// Apple's inputs in: verified, made into inputs and recorded.
    var ingestion: Ingestion { Ingestion(verifier: verifier, store: store, metrics: metrics) }

    /// Runs store operations for the request: a database failure, or no answer within
    /// `RECEIPTKIT_DATABASE_TIMEOUT`, is a 503, and the request stops waiting at its own timeout
    /// too (``Store/run(_:)``).
    func read<T: Sendable>(_ operations: @escaping @Sendable () async throws -> T) async throws -> T {
        try await store.run(operations)
    }

    /// Notes an input that did not verify for the request's log line, and gives its answer: 413
    /// when it is too large, 400 otherwise.
    static func refused(_ rejected: Ingestion.Rejected, context: ServerRequestContext) -> APIError {
        context.notes.update { $0.verdict = rejected.error.code.rawValue; $0.reason = rejected.error.message }
        return APIError(rejected: rejected.error)
    }

    /// Notes a recorded input for the request's log line.
    static func accepted(_ recorded: Ingestion.Recorded, context: ServerRequestContext) {
        context.notes.update { $0.verdict = "verified"; $0.duplicate = !recorded.isNew }
    }

    /// Returns once the database has accepted a write (``Store/ping()``), or throws
    /// ``StoreError`` when it fails or has not within ``readinessTimeout``.
    func ready() async throws {
        let store = self.store
        let timeout = readinessTimeout
        try await withTimeout(timeout, timedOut: { StoreError("the database did not accept a write within \(timeout)") }) {
            do {
                try await abandoningOnCancel { try await store.ping() }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                throw StoreError("the database refused a write: \(error)")
            }
        }
    }

    /// A path parameter, percent-decoded once as UTF-8: an id that a client encoded for the path
    /// (`encodeURIComponent`, `urllib.parse.quote(id, safe="")`, `rawurlencode`) comes back as it
    /// was stored — `jane%40example.com` is `jane@example.com`, `a%2Fb` is `a/b`, `%25` is `%`.
    /// A `%` not followed by two hex digits, or bytes that are not UTF-8, are 400
    /// `invalid_request` naming the parameter.
    static func pathParameter(_ name: String, in context: ServerRequestContext) throws(APIError) -> String {
        guard let raw = context.parameters.get(name) else {
            throw APIError.invalidRequest("the path has no \(name)")
        }
        guard let decoded = raw.removingPercentEncoding else {
            throw APIError.invalidRequest(
                "\(name) in the path is \"\(raw)\", which is not percent-encoded UTF-8 (a % must be followed by two hex digits: %25 for % itself)")
        }
        return decoded
    }

    /// The `customer_id` path parameter (``pathParameter(_:in:)``), checked as every customer id
    /// is (``customerId(_:name:)``).
    static func customerId(in context: ServerRequestContext) throws(APIError) -> String {
        try customerId(pathParameter("customer_id", in: context), name: "customer_id")
    }

    /// A customer id as the backend gives it: 1 to 256 characters (Unicode scalars, as JSON
    /// Schema's `maxLength` counts them), none of them U+0000, which PostgreSQL's text cannot hold.
    ///
    /// - Throws: 400 `invalid_request` naming `name`.
    static func customerId(_ id: String, name: String) throws(APIError) -> String {
        let count = id.unicodeScalars.count
        guard count >= 1, count <= 256, !id.unicodeScalars.contains("\u{0}") else {
            throw APIError.invalidRequest("\(name) must be 1 to 256 characters, none of them U+0000")
        }
        return id
    }

    /// The `as_of` query parameter (RFC 3339, as ReceiptKit's `Timestamp` reads it: with or
    /// without a fraction of a second, `Z` or an offset), or now.
    func instant(_ request: Request) throws(APIError) -> Timestamp {
        guard let text = request.uri.queryParameters.get("as_of") else { return now }
        if text == "now" { return now }
        if let instant = Timestamp(rfc3339: text) { return instant }
        throw APIError.invalidRequest("as_of is \"\(text)\"; expected an ISO 8601 instant such as 2025-06-01T12:00:00Z")
    }

    /// The named entitlements in use.
    ///
    /// - Throws: 409 `entitlements_off` when the server has no entitlements file.
    func catalog() throws(APIError) -> EntitlementCatalog {
        guard let file = entitlementsFile else {
            throw APIError(
                .conflict, "entitlements_off",
                "this server has no named entitlements: set RECEIPTKIT_ENTITLEMENTS_FILE to a file naming them (docs/entitlements.md)")
        }
        return file.catalog
    }

    /// A customer's entitlements now or as of an instant: every subscription's state and, with an
    /// entitlements file, every named entitlement (of the app `filter` selects, with `apps`).
    func entitlements(customerId: String, at instant: Timestamp, filter: KeyFilter? = nil) async throws -> Entitlements {
        let store = self.store
        guard let catalog = entitlementsFile?.catalog else {
            let states = try await read { try await store.states(customerId: customerId, at: instant) }
                .filter { filter?.admits($0.key) ?? true }
            return Entitlements(customerId: customerId, asOf: instant, states: states)
        }
        let sources = try await read { try await store.entitlementSources(customerId: customerId, at: instant) }
        let states = sources.states.filter { filter?.admits($0.key) ?? true }
        let named = catalog.entitlements(of: states, at: instant, grants: sources.grants.map(\.grant), bundleId: filter?.bundleId)
        return Entitlements(customerId: customerId, asOf: instant, states: states, named: named)
    }
}

/// `{"customer_id", "as_of", "entitled", "subscriptions": [state, …], "entitlements": {name: …}}`:
/// a customer's entitlements, each state exactly as `verify-receipt --state` writes it; `entitled`
/// is true when any of them is and is not a consumable; `entitlements` (with an entitlements file
/// only) each named entitlement as ReceiptKit's rules derive it.
struct Entitlements: Encodable {
    let customerId: String
    let asOf: String
    let entitled: Bool
    let subscriptions: [RenderedJSON]
    /// Every named entitlement by name, with an entitlements file.
    let entitlements: RenderedJSON?

    /// - Parameter named: The named entitlements, with an entitlements file.
    init(customerId: String, asOf instant: Timestamp, states: [SubscriptionState], named: [NamedEntitlement]? = nil) {
        self.customerId = customerId
        asOf = instant.iso8601
        // A consumable never entitles (it is a purchase the customer used up, not access).
        entitled = states.contains { $0.isEntitled && $0.productType != "consumable" }
        subscriptions = states.map { RenderedJSON($0.json()) }
        entitlements = named.map { RenderedJSON(NamedEntitlement.json($0)) }
    }

    private enum CodingKeys: String, CodingKey {
        case customerId = "customer_id"
        case asOf = "as_of"
        case entitled, subscriptions, entitlements
    }

    /// `entitlements` only with an entitlements file: a server without one answers as before.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(customerId, forKey: .customerId)
        try container.encode(asOf, forKey: .asOf)
        try container.encode(entitled, forKey: .entitled)
        try container.encode(subscriptions, forKey: .subscriptions)
        if let entitlements { try container.encode(entitlements, forKey: .entitlements) }
    }
}

/// The `?bundle_id=…&environment=…` a route takes to select among a customer's or an id's
/// subscriptions: either, both or neither.
struct KeyFilter: Sendable {
    let bundleId: String?
    let environment: String?

    /// The filter of a request's query.
    ///
    /// - Throws: 400 `invalid_request` for an empty value or an environment that is not one.
    init(_ request: Request) throws(APIError) {
        let query = request.uri.queryParameters
        bundleId = query.get("bundle_id")
        environment = query.get("environment")
        if bundleId?.isEmpty == true { throw APIError.invalidRequest("bundle_id is empty") }
        if let environment, AppStoreEnvironment(rawValue: environment) == nil {
            throw APIError.invalidRequest("environment is \"\(environment)\"; expected Production, Sandbox, Xcode or LocalTesting")
        }
    }

    /// Whether a subscription is selected.
    func admits(_ key: SubscriptionKey) -> Bool {
        (bundleId == nil || bundleId == key.bundleId) && (environment == nil || environment == key.environment)
    }

    /// The one subscription among `keys` (those an id names, filtered), or `nil` when there is
    /// none.
    ///
    /// - Throws: 409 `ambiguous_subscription` listing them when there are several: one original
    ///   transaction id in Production and in Sandbox, or in two apps, is two subscriptions.
    static func one(of keys: [SubscriptionKey], id: String) throws(APIError) -> SubscriptionKey? {
        guard keys.count <= 1 else {
            let listed = keys.map { "\($0.bundleId) in \($0.environment)" }.joined(separator: ", ")
            throw APIError(
                .conflict, "ambiguous_subscription",
                "original transaction id \(id) names \(keys.count) subscriptions (\(listed)); select one with ?bundle_id= and ?environment=")
        }
        return keys.first
    }
}
