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
    var apple: AppleSync? = nil
    /// The notifications this process refused, for the console (never stored).
    let rejections: NotificationRejections

    /// The configured bundle id, which every input must carry (renewal infos carry none).
    var bundleId: String { verifier.configuration.bundleId ?? "" }

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
            throw APIError(.contentTooLarge, "input_too_large", "the body is larger than \(limit) bytes")
        }
    }

    /// Counts a verification and passes its record on, or throws its rejection as a 400/413.
    func verified(_ outcome: VerificationOutcome, context: ServerRequestContext) throws(APIError) -> VerificationRecord {
        switch outcome {
        case .verified(let record):
            metrics.verification(result: "verified")
            context.notes.update { $0.verdict = "verified" }
            return record
        case .rejected(let error):
            metrics.verification(result: error.code.rawValue)
            context.notes.update { $0.verdict = error.code.rawValue; $0.reason = error.message }
            throw APIError(rejected: error)
        }
    }

    /// Stores an input; any database failure is a 503. Stops waiting when the request is
    /// cancelled (its timeout), even while the database still waits for a lock (the store's
    /// ``Store/record(_:)`` promises that).
    func store(_ input: VerifiedInput, context: ServerRequestContext) async throws -> Bool {
        do {
            let isNew = try await store.record(input)
            context.notes.update { $0.duplicate = !isNew }
            return isNew
        } catch let error as APIError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw StoreError(String(describing: error))
        }
    }

    /// Runs a store operation; any database failure is a 503 (an ``APIError`` the operation
    /// throws is its answer). Stops waiting when the request is cancelled, as
    /// ``store(_:context:)`` does.
    func read<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await abandoningOnCancel(body)
        } catch let error as StoreError {
            throw error
        } catch let error as APIError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw StoreError(String(describing: error))
        }
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

    /// The `as_of` query parameter (RFC 3339, as ReceiptKit's `Timestamp` reads it: with or
    /// without a fraction of a second, `Z` or an offset), or now.
    func instant(_ request: Request) throws(APIError) -> Timestamp {
        guard let text = request.uri.queryParameters.get("as_of") else { return now }
        if text == "now" { return now }
        if let instant = Timestamp(rfc3339: text) { return instant }
        throw APIError.invalidRequest("as_of is \"\(text)\"; expected an ISO 8601 instant such as 2025-06-01T12:00:00Z")
    }

    /// `{"customer_id", "as_of", "entitled", "subscriptions": [state, …]}` for a customer, to
    /// which an answer may add members.
    func entitlementsJSON(customerId: String, at instant: Timestamp) async throws -> JSONObjectText {
        let store = self.store
        let states = try await read { try await store.states(customerId: customerId, at: instant) }
        var json = JSONObjectText()
        json.member("customer_id", customerId)
        json.member("as_of", instant.iso8601)
        json.member("entitled", states.contains { $0.isEntitled })
        json.member("subscriptions", jsonArray: states.map { $0.json() })
        return json
    }

}
