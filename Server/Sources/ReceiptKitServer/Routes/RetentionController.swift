import Foundation
import Hummingbird
import ReceiptKit

/// Apple's Retention Messaging, the server's side (``RetentionRequests``):
///
/// - `POST /appstore/retention`: the Get Retention Message endpoint Apple calls (no bearer token:
///   the request is Apple's signed `{"signedPayload": …}`, verified as every Apple input is —
///   chain, signature, App Apple ID, environment). 200 with Apple's `RealtimeResponseBody`
///   chosen by the operator's rules (`{}` when none answers) once the `retention.requested`
///   event has committed; 400 with ReceiptKit's code for a request that does not verify (a forged
///   one, another app's, an environment not served), 413 over the size limit, 415 for a body
///   that is not a JSON object, 503 when the database fails (Apple then shows the default message).
/// - `GET /v1/customers/{customer_id}/retention-requests[?limit=N]`: the customer's
///   `retention.requested` events, latest first (`limit` 1 to 100, default 20):
///   `{"customer_id", "retention_requests": [event, …]}`.
struct RetentionController {
    let environment: RouteEnvironment
    let requests: RetentionRequests

    static let defaultLimit = 20
    static let maximumLimit = 100

    /// Adds Apple's endpoint, outside the bearer token's routes.
    func add(to router: Router<ServerRequestContext>) {
        router.post("appstore/retention") { request, context in
            try await retention(request, context: context)
        }
    }

    /// Adds the customer's retention requests to `/v1`.
    func addReads(to group: RouterGroup<ServerRequestContext>) {
        group.route(.get, "customers/{customer_id}/retention-requests", scope: .read) { request, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let limit = try Self.limit(request)
            let store = environment.store
            let events = try await environment.read { try await store.retentionRequests(customerId: customerId, limit: limit) }
            return try Response.json(RetentionRequestList(customerId: customerId, retentionRequests: events.map { RenderedJSON($0.json) }))
        }
    }

    func retention(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard NotificationController.isJSON(request.headers[.contentType]) else {
            let received = request.headers[.contentType].map { "'\($0)'" } ?? "none"
            throw refused(APIError(
                .unsupportedMediaType, "unrecognized_input", "the body must be application/json; the Content-Type is \(received)"))
        }
        let body = try await environment.body(of: request, upTo: environment.jwsBodyLimit)
        guard body.first(where: { !Self.isWhitespace($0) }) == UInt8(ascii: "{") else {
            throw refused(APIError(.unsupportedMediaType, "unrecognized_input", "the body is not a JSON object: expected {\"signedPayload\": …}"))
        }
        let outcome = environment.verifier.verify(input: body, as: .realtimeRequest)
        let record: VerificationRecord
        switch Result(catching: { () throws(Ingestion.Rejected) in try environment.ingestion.verified(outcome) }) {
        case .success(let verified): record = verified
        case .failure(let rejected): throw refused(RouteEnvironment.refused(rejected, context: context))
        }
        let bundleId = environment.ingestion.bundleId(of: record)
        guard let realtime = record.realtimeRequest, !bundleId.isEmpty else {
            throw refused(APIError(.badRequest, "malformed_payload", "the request is not a realtime request of a configured app"))
        }
        context.notes.update { $0.verdict = "verified" }
        let requests = self.requests
        let now = environment.now
        let answered = try await environment.read {
            try await requests.answer(realtime, bundleId: bundleId, receivedAt: now)
        }
        environment.metrics.retentionRequest(
            result: answered.notice.answer?.kind ?? "none", bundleId: bundleId, environment: realtime.rawEnvironment ?? "-")
        return Response.json(try answered.body.json())
    }

    /// The `limit` query parameter: 1 to ``maximumLimit``, ``defaultLimit`` when absent.
    static func limit(_ request: Request) throws(APIError) -> Int {
        guard let text = request.uri.queryParameters.get("limit") else { return defaultLimit }
        guard let value = Int(text), (1...maximumLimit).contains(value) else {
            throw APIError.invalidRequest("limit is \"\(text)\"; expected 1 to \(maximumLimit)")
        }
        return value
    }

    /// Counts a refused request and passes its answer on.
    private func refused(_ error: APIError) -> APIError {
        environment.metrics.retentionRequest(result: error.code)
        return error
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

/// A customer's retention requests, latest first, each the feed's event.
struct RetentionRequestList: Encodable {
    let customerId: String
    let retentionRequests: [RenderedJSON]
}
