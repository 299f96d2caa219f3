import Foundation
import Hummingbird
import ReceiptKit

/// `POST /appstore/notifications`: the body App Store Server Notifications V2 posts,
/// `{"signedPayload": "…"}`. Apple retries every answer but 200, so 200 means stored and
/// folded (committed); a notification that fails verification is 400 (413 over the size limit,
/// 415 when the body is not JSON), and a database failure is 503 so that Apple retries. A replay
/// (the same `notificationUUID`) is 200 and changes nothing. A refusal is counted for the
/// console (``NotificationRejections``).
struct NotificationController {
    let environment: RouteEnvironment

    func add(to router: Router<ServerRequestContext>) {
        router.post("appstore/notifications") { request, context in
            do {
                return try await notification(request, context: context)
            } catch let error as APIError where (400..<500).contains(error.status.code) {
                environment.rejections.record(.init(at: environment.now, code: error.code, message: error.message))
                throw error
            }
        }
    }

    func notification(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard Self.isJSON(request.headers[.contentType]) else {
            let received = request.headers[.contentType].map { "'\($0)'" } ?? "none"
            throw APIError(.unsupportedMediaType, "unrecognized_input", "the body must be application/json; the Content-Type is \(received)")
        }
        let body = try await environment.body(of: request, upTo: environment.jwsBodyLimit)
        let outcome: VerificationOutcome
        do {
            outcome = .verified(VerificationRecord(try environment.verifier.verifyNotificationBody(body)))
        } catch let error as ReceiptKitError {
            // unrecognized_input both for a body that is not JSON and for a JSON object without
            // a string signedPayload: only the first is a media type problem.
            if error.code == .unrecognizedInput, !Self.isJSONObject(body) {
                environment.metrics.verification(result: error.code.rawValue)
                throw APIError(.unsupportedMediaType, error.code.rawValue, "the body is not a JSON object: \(error.reason)")
            }
            outcome = .rejected(error)
        }
        let record = try environment.verified(outcome, context: context)
        let type = record.notification?.rawNotificationType ?? "-"
        context.notes.update { $0.notificationType = type }
        let event = try VerifiedInput(
            record: record, raw: body, bundleId: environment.bundleId, customerId: nil, receivedAt: environment.now, source: .webhook)
        let isNew = try await environment.store(event, context: context)
        environment.metrics.notification(type: type)
        var json = JSONObjectText()
        json.member("stored", true)
        json.member("duplicate", !isNew)
        json.member("notification_uuid", record.notification?.notificationUUID)
        json.member("record", json: event.record)
        return .json(json.text)
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
