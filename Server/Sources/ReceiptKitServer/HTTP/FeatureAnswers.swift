import Hummingbird
import ReceiptKit

/// Each feature's error as its HTTP answer, in one place: the status and `Retry-After` are
/// decided here, the code and the message are the feature's own.
extension APIError {
    /// The answer to a feature's refusal.
    init(_ error: any CallerError) {
        switch error {
        case let error as APIError:
            self = error
        case let error as AppleFailure:
            switch error {
            // A feature this server is not configured for: no server failure (a 5xx would say
            // "our fault" to every client and alert).
            case .notConfigured: self.init(.conflict, error)
            case .transactionNotFound: self.init(.notFound, error)
            case .unavailable(_, _, let seconds): self.init(.serviceUnavailable, error, retryAfterSeconds: seconds)
            case .keyRefused, .failed, .answerRejected: self.init(.badGateway, error)
            }
        case let error as ReconcileConflict:
            switch error {
            case .running: self.init(.conflict, error, retryAfterSeconds: 30)
            case .takenOver: self.init(.conflict, error)
            }
        case let error as ConsumptionRefusal:
            switch error {
            case .consentRequired: self.init(.badRequest, error)
            case .requestNotFound: self.init(.notFound, error)
            case .deadlinePassed, .sendingOff: self.init(.conflict, error)
            }
        case let error as DeliveryRefusal:
            switch error {
            case .notFound: self.init(.notFound, error)
            case .pending, .deadlinePassed: self.init(.conflict, error)
            }
        case is InvalidInput, is IncompleteRealtimeRequest:
            self.init(.badRequest, error)
        case is BodyTooLarge:
            self.init(.contentTooLarge, error)
        default:
            // A new feature error not given its answer here is a request the server could not
            // serve, and says so in its own words.
            self.init(.internalServerError, error)
        }
    }

    /// The answer to any error an operation threw: a feature's refusal, the store's failure
    /// (``APIError/init(_:)-(StoreError)``), or `nil` for one that has no answer of its own.
    static func answering(_ error: any Error) -> APIError? {
        switch error {
        case let error as any CallerError: APIError(error)
        case let error as StoreError: APIError(error)
        default: nil
        }
    }

    private init(_ status: HTTPResponse.Status, _ error: any CallerError, retryAfterSeconds: Int? = nil) {
        self.init(status, error.code, error.message, retryAfterSeconds: retryAfterSeconds)
    }
}

/// A request body longer than its route takes (`input_too_large`, 413, as ReceiptKit names an
/// input over its limit).
struct BodyTooLarge: CallerError {
    /// The most the route takes, in bytes.
    let limit: Int

    var code: String { "input_too_large" }
    var message: String { "the body is larger than \(limit) bytes" }
}
