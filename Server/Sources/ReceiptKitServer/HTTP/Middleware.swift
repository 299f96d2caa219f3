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
    /// Each path's methods, for a 405 where the router found no route.
    let methods: RouteMethods

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let response: Response
        do {
            // A 503 `timeout` once `timeout` has passed. A request cut short may still commit,
            // which is harmless: the client retries, and a replay changes nothing.
            let timeout = self.timeout
            // Every store call the request makes is under the database timeout (``StoreCall``).
            response = try await StoreCall.serving {
                try await withTimeout(timeout, timedOut: { APIError.timeout(after: timeout) }) {
                    try await next(request, context)
                }
            }
        } catch let error as any CallerError {
            let error = APIError(error)
            context.notes.update { if $0.verdict == nil { $0.verdict = error.code }; $0.reason = $0.reason ?? error.message }
            response = error.response()
        } catch let error as HTTPError {
            let apiError: APIError
            switch error.status {
            case .notFound, .methodNotAllowed:
                if let allowed = methods.allowed(on: request.uri.path) {
                    apiError = APIError(
                        .methodNotAllowed, "method_not_allowed",
                        "\(request.method) is not allowed on \(request.uri.path); it is served with \(allowed.joined(separator: ", "))",
                        allow: allowed)
                } else {
                    apiError = APIError(.notFound, "not_found", "no route \(request.method) \(request.uri.path)")
                }
            case .contentTooLarge: apiError = APIError(.contentTooLarge, "input_too_large", "the body is too large")
            default: apiError = APIError(error.status, "invalid_request", error.status.reasonPhrase)
            }
            context.notes.update { $0.verdict = apiError.code }
            response = apiError.response()
        } catch let error as StoreError {
            let apiError = APIError(error)
            context.notes.update { $0.verdict = apiError.code; $0.reason = error.description }
            response = apiError.response()
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
        if let token = notes.token { metadata["token"] = .string(token) }
        context.logger.info("\(request.method) \(request.uri.path)", metadata: metadata)
        return response
    }
}

/// Requires `Authorization: Bearer TOKEN` on the routes it guards: a token of ``APITokens``,
/// whose scope each route then checks (``RouterGroup/route(_:_:scope:use:)``). A server without
/// tokens (loopback only) leaves every route open.
struct BearerTokenMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let tokens: APITokens

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        guard !tokens.isEmpty else {
            context.access = .open
            return try await next(request, context)
        }
        let header = request.headers[.authorization] ?? ""
        let prefix = "Bearer "
        guard header.hasPrefix(prefix), let token = tokens.authenticate(Array(header.utf8.dropFirst(prefix.utf8.count))) else {
            var response = APIError(.unauthorized, "unauthorized", "this route requires Authorization: Bearer <an API token>").response()
            response.headers[.wwwAuthenticate] = "Bearer"
            context.notes.update { $0.verdict = "unauthorized" }
            return response
        }
        context.access = .token(token)
        context.notes.update { $0.token = token.name }
        return try await next(request, context)
    }
}

extension RouterGroup where Context == ServerRequestContext {
    /// Adds a route that needs a token of at least `scope` (on a server with tokens): 403
    /// `forbidden`, naming the scope needed, for a token of a lesser one.
    @discardableResult
    func route(
        _ method: HTTPRequest.Method, _ path: RouterPath, scope: TokenScope,
        use handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> Self {
        on(path, method: method) { request, context in
            try Self.require(scope, context)
            return try await handler(request, context)
        }
    }

    /// Throws 403 unless the request may use a route of `scope`.
    static func require(_ scope: TokenScope, _ context: Context) throws(APIError) {
        switch context.access {
        case .open:
            return
        case .token(let token) where token.scope >= scope:
            return
        case .token(let token):
            throw APIError(
                .forbidden, "forbidden",
                "this route needs a token with scope \(scope.rawValue); the token \(token.name) has scope \(token.scope.rawValue)")
        case .unchecked:
            throw APIError(.forbidden, "forbidden", "this route needs a token with scope \(scope.rawValue)")
        }
    }
}
