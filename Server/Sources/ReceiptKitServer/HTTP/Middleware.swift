import Foundation
import Hummingbird
import Logging
import ReceiptKit
import ServerSupport

/// The outermost middleware: turns every error into an ``APIError`` answer (so no stack trace,
/// SQL or driver text reaches a client), bounds each request's time, writes the request's one
/// structured log line and its metrics.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let metrics: ServerMetrics
    let timeout: Duration

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let response: Response
        do {
            // A 503 `timeout` once `timeout` has passed. A request cut short may still commit,
            // which is harmless: the client retries, and a replay changes nothing.
            let timeout = self.timeout
            response = try await withTimeout(
                timeout, timedOut: { APIError(.serviceUnavailable, "timeout", "the request took longer than \(timeout)") }
            ) {
                try await next(request, context)
            }
        } catch let error as APIError {
            context.notes.update { if $0.verdict == nil { $0.verdict = error.code }; $0.reason = $0.reason ?? error.message }
            response = error.response()
        } catch let error as HTTPError {
            let apiError: APIError
            switch error.status {
            case .notFound: apiError = APIError(.notFound, "not_found", "no route \(request.method) \(request.uri.path)")
            case .methodNotAllowed:
                apiError = APIError(.methodNotAllowed, "method_not_allowed", "\(request.method) is not allowed on \(request.uri.path)")
            case .contentTooLarge: apiError = APIError(.contentTooLarge, "input_too_large", "the body is too large")
            default: apiError = APIError(error.status, "invalid_request", error.status.reasonPhrase)
            }
            context.notes.update { $0.verdict = apiError.code }
            response = apiError.response()
        } catch let error as StoreError {
            context.notes.update { $0.verdict = "database_unavailable"; $0.reason = error.description }
            response = APIError.databaseUnavailable.response()
        } catch {
            context.notes.update { $0.verdict = "internal_error"; $0.reason = String(describing: error) }
            response = APIError(.internalServerError, "internal_error", "the server failed; see its log").response()
        }
        let elapsed = ContinuousClock.now - start
        let route = context.endpointPath ?? "unmatched"
        metrics.request(route: route, method: request.method.rawValue, status: response.status.code, duration: elapsed)

        // The log line's metadata is built only when the line is written (LOG_LEVEL info or
        // more verbose): under load it is a measurable part of a request.
        guard context.logger.logLevel <= .info else { return response }
        let notes = context.notes.snapshot
        var metadata: Logger.Metadata = [
            "route": .string(route),
            "status": .stringConvertible(response.status.code),
            "duration_ms": .string(String(format: "%.3f", elapsed.inSeconds * 1000)),
        ]
        if let verdict = notes.verdict { metadata["verdict"] = .string(verdict) }
        if let type = notes.notificationType { metadata["notification_type"] = .string(type) }
        if let duplicate = notes.duplicate { metadata["duplicate"] = .stringConvertible(duplicate) }
        if let reason = notes.reason { metadata["reason"] = .string(reason) }
        context.logger.info("\(request.method) \(request.uri.path)", metadata: metadata)
        return response
    }
}

/// Requires `Authorization: Bearer TOKEN` on the routes it guards, comparing in constant time.
struct BearerTokenMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    /// The token, or `nil` when the API runs without one (loopback only).
    let token: [UInt8]?

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let token else { return try await next(request, context) }
        let header = request.headers[.authorization] ?? ""
        let prefix = "Bearer "
        guard header.hasPrefix(prefix), Self.constantTimeEqual(Array(header.utf8.dropFirst(prefix.utf8.count)), token)
        else {
            var response = APIError(.unauthorized, "unauthorized", "this route requires Authorization: Bearer <RECEIPTKIT_API_TOKEN>").response()
            response.headers[.wwwAuthenticate] = "Bearer"
            context.notes.update { $0.verdict = "unauthorized" }
            return response
        }
        return try await next(request, context)
    }

    /// Whether two byte strings are equal, in a time that depends only on their lengths.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: lhs.count ^ rhs.count)
        if lhs.count != rhs.count { difference |= 1 }
        let count = max(lhs.count, rhs.count)
        for index in 0..<count {
            let left = index < lhs.count ? lhs[index] : 0
            let right = index < rhs.count ? rhs[index] : 0
            difference |= left ^ right
        }
        return difference == 0
    }
}
