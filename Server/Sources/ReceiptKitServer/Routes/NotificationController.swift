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
        let recorded: Ingestion.Recorded
        do {
            recorded = try await environment.ingestion.notification(body, receivedAt: environment.now)
        } catch let rejected as Ingestion.Rejected {
            // unrecognized_input both for a body that is not JSON and for a JSON object without
            // a string signedPayload: only the first is a media type problem.
            if rejected.error.code == .unrecognizedInput, !Self.isJSONObject(body) {
                throw APIError(.unsupportedMediaType, rejected.error.code.rawValue, "the body is not a JSON object: \(rejected.error.reason)")
            }
            throw RouteEnvironment.refused(rejected, context: context)
        }
        RouteEnvironment.accepted(recorded, context: context)
        context.notes.update { $0.notificationType = recorded.record.notification?.rawNotificationType ?? "-" }
        return try .json(NotificationAnswer(
            stored: true, duplicate: !recorded.isNew, notificationUUID: recorded.record.notification?.notificationUUID,
            record: RenderedJSON(recorded.input.record)))
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

/// The answer to a stored notification.
struct NotificationAnswer: Encodable {
    let stored: Bool
    let duplicate: Bool
    let notificationUUID: String?
    /// The notification's record, as `verify-receipt` prints it.
    let record: RenderedJSON

    private enum CodingKeys: String, CodingKey {
        case stored, duplicate, record
        case notificationUUID = "notification_uuid"
    }
}
