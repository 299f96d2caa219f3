import Foundation
public import Hummingbird
import Logging
public import ReceiptKit

/// The webhook's routes, all answering from one shared verifier:
///
/// - `POST /appstore/notifications`: the body App Store Server Notifications V2 posts,
///   `{"signedPayload": "…"}`. Apple retries every answer but 200, so only a genuine, verified
///   notification gets 200 (with its normalized record); a rejected one gets 400, a body over
///   ``notificationBodyLimit`` 413, and a body that is not `application/json` or not a JSON
///   object 415.
/// - `POST /verify`: one input as `verify-receipt` reads it — a JWS, a base64 receipt, or a JSON
///   body with `signedPayload` or `receipt-data` — answered with the record the command prints:
///   200 verified, 400 rejected, 413 over ``verifyBodyLimit`` or over the verifier's own limits.
///
/// Every error body is the command's rejected record,
/// `{"status": "rejected", "error": {"code": …, "message": …}}`, with ReceiptKit's error codes.
/// Each request logs one line: method and path, the notification type (`-` when there is none),
/// the verdict (`verified` or the error code) and the HTTP status.
public struct WebhookRoutes: Sendable {
    /// The verifier every request shares: it is immutable and `Sendable`, and its caches of
    /// validated headers and chains serve every request.
    public let verifier: AppStoreVerifier

    /// Creates the routes around a verifier.
    ///
    /// - Parameter verifier: The verifier to share.
    public init(verifier: AppStoreVerifier) {
        self.verifier = verifier
    }

    /// The largest notification body accepted, in bytes: the verifier's JWS limit plus 1 KiB for
    /// the JSON around it (65 KiB by default), the same bound the verifier applies itself.
    public var notificationBodyLimit: Int {
        verifier.configuration.maximumJWSSize + 1024
    }

    /// The largest `/verify` body accepted, in bytes: the base64 of the largest receipt the
    /// verifier accepts, plus 4 KiB for JSON and whitespace (about 1.4 MB by default), or a
    /// notification body, whichever is larger.
    public var verifyBodyLimit: Int {
        let receipt = max(verifier.configuration.maximumReceiptSize, 0)
        let base64 = (receipt + 2) / 3 * 4
        return max(notificationBodyLimit, base64 + 4096)
    }

    /// Adds the routes to a router.
    ///
    /// - Parameter router: The application's router.
    public func add<Context: RequestContext>(to router: Router<Context>) {
        router.post("appstore/notifications") { request, context in
            try await respond(to: request, context: context, answer: notification(request))
        }
        router.post("verify") { request, context in
            try await respond(to: request, context: context, answer: verify(request))
        }
    }

    // MARK: Handlers

    /// Verifies an App Store Server Notifications V2 body and its nested JWS.
    func notification(_ request: Request) async throws -> Answer {
        guard Self.isJSON(request.headers[.contentType]) else {
            let received = request.headers[.contentType].map { "'\($0)'" } ?? "none"
            return .unsupportedMediaType("the body must be application/json; the Content-Type is \(received)")
        }
        guard let body = try await collect(request, upTo: notificationBodyLimit) else {
            return .rejected(ReceiptKitError(
                .inputTooLarge, "the notification body is larger than \(notificationBodyLimit) bytes"))
        }
        do {
            return .verified(VerificationRecord(try verifier.verifyNotificationBody(body)))
        } catch let error as ReceiptKitError {
            // The verifier says unrecognized_input both for a body that is not JSON and for a JSON
            // object without a string signedPayload: only the first is a media type problem.
            if error.code == .unrecognizedInput, !Self.isJSONObject(body) {
                return .unsupportedMediaType("the body is not a JSON object: \(error.reason)")
            }
            return .rejected(error)
        }
    }

    /// Verifies one input as `verify-receipt` reads it.
    func verify(_ request: Request) async throws -> Answer {
        guard let body = try await collect(request, upTo: verifyBodyLimit) else {
            return .rejected(ReceiptKitError(.inputTooLarge, "the body is larger than \(verifyBodyLimit) bytes"))
        }
        switch verifier.verify(input: body) {
        case .verified(let record): return .verified(record)
        case .rejected(let error): return .rejected(error)
        }
    }

    /// Logs the request's line and turns the answer into a response.
    private func respond(to request: Request, context: some RequestContext, answer: Answer) -> Response {
        var metadata: Logger.Metadata = [
            "notification_type": .string(answer.notificationType ?? "-"),
            "verdict": .string(answer.verdict),
            "status": .stringConvertible(answer.status.code),
        ]
        if let reason = answer.reason {
            metadata["reason"] = .string(reason)
        }
        context.logger.info("\(request.method) \(request.uri.path)", metadata: metadata)
        return Response(
            status: answer.status,
            headers: [.contentType: MediaType.applicationJson.description],
            body: ResponseBody(byteBuffer: ByteBuffer(string: answer.json + "\n")))
    }

    // MARK: Helpers

    /// The whole body, or `nil` when it is longer than `limit` bytes.
    private func collect(_ request: Request, upTo limit: Int) async throws -> [UInt8]? {
        do {
            let buffer = try await request.body.collect(upTo: limit)
            return Array(buffer.readableBytesView)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            return nil
        }
    }

    /// Whether a Content-Type is `application/json`, with or without parameters.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType, let mediaType = MediaType(from: contentType) else { return false }
        return mediaType.isType(.applicationJson)
    }

    /// Whether bytes parse as a JSON object. Asked only once the verifier has refused them.
    static func isJSONObject(_ bytes: [UInt8]) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
    }
}

/// What a route answers, and what its log line says.
struct Answer: Sendable {
    /// The HTTP status.
    let status: HTTPResponse.Status
    /// The JSON body: a record, or the command's rejected record.
    let json: String
    /// The verified notification's type, if the input was one.
    let notificationType: String?
    /// `verified`, or the error code.
    let verdict: String
    /// The rejection's message, if any.
    let reason: String?

    /// A verified input: 200 and its record.
    static func verified(_ record: VerificationRecord) -> Answer {
        Answer(
            status: .ok, json: record.json(), notificationType: record.notification?.rawNotificationType,
            verdict: "verified", reason: nil)
    }

    /// A rejected input: 413 when it was too large, 400 otherwise.
    static func rejected(_ error: ReceiptKitError, status: HTTPResponse.Status? = nil) -> Answer {
        Answer(
            status: status ?? (error.code == .inputTooLarge ? .contentTooLarge : .badRequest),
            json: VerificationOutcome.rejected(error).json(), notificationType: nil,
            verdict: error.code.rawValue, reason: error.message)
    }

    /// A body that is not JSON where JSON is required: 415.
    static func unsupportedMediaType(_ reason: String) -> Answer {
        rejected(ReceiptKitError(.unrecognizedInput, reason), status: .unsupportedMediaType)
    }
}
