import Foundation
public import Hummingbird
public import ReceiptKit

/// An answer other than 2xx: an HTTP status and `{"error": {"code": …, "message": …}}`, with
/// ReceiptKit's error codes for inputs that fail verification and the server's own for the rest
/// (`unauthorized`, `not_found`, `invalid_request`, `database_unavailable`, `timeout`,
/// `stored_data_damaged`, `internal_error`). The message never carries SQL, a stack trace or a driver's error text.
public struct APIError: Error, Sendable, CustomStringConvertible, CallerError {
    /// The HTTP status.
    public let status: HTTPResponse.Status
    /// A stable snake_case code.
    public let code: String
    /// What went wrong, for a person.
    public let message: String
    /// Seconds after which a retry may succeed (the `Retry-After` header of a 503), if known.
    public let retryAfterSeconds: Int?
    /// The methods the path is served with (the `Allow` header of a 405), if this is one.
    let allow: [String]?

    /// Creates an error.
    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, retryAfterSeconds: Int? = nil) {
        self.init(status, code, message, retryAfterSeconds: retryAfterSeconds, allow: nil)
    }

    init(_ status: HTTPResponse.Status, _ code: String, _ message: String, retryAfterSeconds: Int? = nil, allow: [String]?) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
        self.allow = allow
    }

    /// `code: message`, for a log or a command's standard error.
    public var description: String { "\(code): \(message)" }

    /// An input that failed verification: 413 when it is too large, 400 otherwise.
    public init(rejected error: ReceiptKitError) {
        self.init(error.code == .inputTooLarge ? .contentTooLarge : .badRequest, error.code.rawValue, error.message)
    }

    /// A request body that is not what the route takes.
    static func invalidRequest(_ message: String) -> APIError {
        APIError(.badRequest, "invalid_request", message)
    }

    /// The database failed, or did not answer within `RECEIPTKIT_DATABASE_TIMEOUT`; the caller
    /// should retry, after ``retryAfterUnavailable`` seconds.
    static let databaseUnavailable = APIError(
        .serviceUnavailable, "database_unavailable", "the database is unavailable; retry later",
        retryAfterSeconds: retryAfterUnavailable)

    /// What the store throws, as an answer: 503 ``databaseUnavailable`` when a retry may succeed,
    /// 500 `stored_data_damaged` when what is stored cannot be read (its description goes to the
    /// log, never into the answer).
    init(_ error: StoreError) {
        switch error.kind {
        case .unavailable: self = .databaseUnavailable
        case .damaged:
            self.init(.internalServerError, "stored_data_damaged", "a stored record cannot be read; the server's log names it")
        }
    }

    /// The request took longer than `RECEIPTKIT_REQUEST_TIMEOUT`; the caller should retry, after
    /// ``retryAfterUnavailable`` seconds.
    static func timeout(after limit: Duration) -> APIError {
        APIError(.serviceUnavailable, "timeout", "the request took longer than \(limit)", retryAfterSeconds: retryAfterUnavailable)
    }

    /// The `Retry-After` of a 503 for the database or a timeout: the server reconnects on its own
    /// within seconds of the database's return (docs/operations.md), so a client's retry need not
    /// wait longer. Apple keeps its own schedule for notifications.
    static let retryAfterUnavailable = 5

    /// The response: the status and the error object.
    func response() -> Response {
        // Strings only: their encoding cannot fail.
        let body = (try? AnswerEncoder.encode(ErrorAnswer(error: .init(code: code, message: message))))
            ?? #"{"error":{"code":"internal_error","message":"the error could not be written"}}"#
        var response = Response.json(body, status: status)
        if let retryAfterSeconds { response.headers[.retryAfter] = String(retryAfterSeconds) }
        if let allow { response.headers[.allow] = allow.joined(separator: ", ") }
        return response
    }
}

/// `{"error": {"code", "message"}}`.
struct ErrorAnswer: Encodable {
    struct Body: Encodable {
        let code: String
        let message: String
    }

    let error: Body
}

extension Response {
    /// A JSON response with the given text as its body, plus a newline.
    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text + "\n")))
    }
}

extension Response {
    /// A 200 (or `status`) answer whose body is `answer` as JSON.
    static func json(_ answer: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        .json(try AnswerEncoder.encode(answer), status: status)
    }
}
