import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ReceiptKit
import Synchronization
import ServerSupport

/// The HTTP methods the API uses.
enum HTTPMethodName: String, Sendable {
    case GET, POST, PUT, DELETE
}

/// Which failures a request may be retried after.
enum RetryScope: Sendable {
    /// 429, 5xx, timeouts and connection failures: the request is a read or idempotent.
    case allFailures
    /// Only 429, which Apple answers before doing anything: the request has an effect that a
    /// second copy would repeat (a test notification is sent again).
    case onlyRateLimited
}

/// One API request, before authorization.
struct Request: Sendable {
    let method: HTTPMethodName
    /// The path's segments, each percent-encoded when the URL is made.
    let path: [String]
    let query: [(String, String)]
    let body: [UInt8]?
    let retry: RetryScope
    /// The body's media type: JSON for every endpoint but Upload Image (`image/png`).
    var contentType = "application/json"
}

/// Signs bearer tokens and reuses one until a minute before it expires.
final class TokenCache: Sendable {
    private let key: InAppPurchaseKey
    private let bundleId: String
    private let lifetimeSeconds: Int64
    private let clock: @Sendable () -> Date
    private let current = Mutex<AppStoreServerAPIToken?>(nil)
    /// A token is replaced this long before its `exp`.
    static let refreshMarginSeconds: Int64 = 60

    init(key: InAppPurchaseKey, bundleId: String, lifetimeSeconds: Int64, clock: @escaping @Sendable () -> Date) {
        self.key = key
        self.bundleId = bundleId
        self.lifetimeSeconds = lifetimeSeconds
        self.clock = clock
    }

    /// A token valid for at least another minute at the clock's time.
    func token() throws -> AppStoreServerAPIToken {
        let now = Timestamp(clock())
        return try current.withLock { cached in
            if let cached, cached.issuedAt <= now,
               now.secondsSince1970 + Self.refreshMarginSeconds < cached.expiresAt.secondsSince1970 {
                return cached
            }
            do {
                let token = try AppStoreServerAPIToken(key: key, bundleId: bundleId, issuedAt: now, lifetimeSeconds: lifetimeSeconds)
                cached = token
                return token
            } catch let error as ReceiptKitError {
                throw AppStoreServerAPIError(.signingFailed, "the bearer token cannot be signed: \(error)")
            }
        }
    }
}

/// Sends requests: authorization, the per-request timeout, Apple's error bodies, and retries
/// with back-off within the attempt count and the overall deadline.
struct Transport: Sendable {
    let baseURL: String
    let configuration: AppStoreServerAPIClient.Configuration
    let httpClient: HTTPClient
    let tokens: TokenCache
    let clock: @Sendable () -> Date

    private var policy: AppStoreServerAPIClient.RetryPolicy { configuration.retry }

    /// Sends `request` until it succeeds or may not be retried, and returns the 2xx answer's body.
    func send(_ request: Request) async throws -> [UInt8] {
        // An empty or dot segment would name another resource ("/transactions/" or "/transactions/..").
        if let segment = request.path.first(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            throw AppStoreServerAPIError(.invalidRequest, "an identifier in the request path is '\(segment)'")
        }
        let monotonic = ContinuousClock()
        let deadline = monotonic.now + policy.overallTimeout
        var attempt = 0
        while true {
            attempt += 1
            let remaining = deadline - monotonic.now
            guard remaining > .zero else {
                throw AppStoreServerAPIError(.timeout, "the call's overall timeout (\(policy.overallTimeout)) passed", attempts: attempt - 1)
            }
            let failure: Failure
            do {
                return try await sendOnce(request, timeout: min(policy.requestTimeout, remaining))
            } catch let caught as Failure {
                failure = caught
            }
            let retryable = failure.isRetryable(under: request.retry)
            guard retryable, attempt < policy.maximumAttempts else {
                throw failure.error.after(attempts: attempt)
            }
            let delay = failure.retryAfter ?? backoff(beforeAttempt: attempt + 1)
            guard monotonic.now + delay < deadline else {
                let wait = failure.retryAfter.map { " (Apple asked to wait \(Self.seconds($0)) s)" } ?? ""
                throw AppStoreServerAPIError(
                    failure.error.code, failure.error.reason + "; no retry fits in the overall timeout\(wait)",
                    httpStatus: failure.error.httpStatus, apiErrorCode: failure.error.apiErrorCode,
                    apiErrorMessage: failure.error.apiErrorMessage, retryAfterSeconds: failure.error.retryAfterSeconds,
                    attempts: attempt)
            }
            try await Task.sleep(for: delay)
        }
    }

    /// Equal jitter: half the exponential back-off plus a random part of the other half.
    private func backoff(beforeAttempt attempt: Int) -> Duration {
        let exponent = min(attempt - 2, 30)
        let ceiling = min(policy.initialBackoff * (1 << exponent), policy.maximumBackoff)
        let half = ceiling / 2
        return half + half * Double.random(in: 0...1)
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.3g", duration.inSeconds)
    }

    /// One failed attempt, with what decides whether to retry.
    struct Failure: Error {
        enum Kind { case rateLimited, serverError, timeout, connection, final }
        let kind: Kind
        let error: AppStoreServerAPIError
        let retryAfter: Duration?

        func isRetryable(under scope: RetryScope) -> Bool {
            switch kind {
            case .rateLimited: true
            case .serverError, .timeout, .connection: scope == .allFailures
            case .final: false
            }
        }
    }

    private func sendOnce(_ request: Request, timeout: Duration) async throws -> [UInt8] {
        let token: AppStoreServerAPIToken
        do {
            token = try tokens.token()
        } catch let error as AppStoreServerAPIError {
            throw Failure(kind: .final, error: error, retryAfter: nil)
        }
        var http = HTTPClientRequest(url: url(for: request))
        http.method = HTTPMethod(rawValue: request.method.rawValue)
        http.headers.add(name: "Authorization", value: "Bearer \(token.token)")
        http.headers.add(name: "Accept", value: "application/json")
        http.headers.add(name: "User-Agent", value: "ReceiptKit-AppStoreServerAPI")
        if let body = request.body {
            http.headers.add(name: "Content-Type", value: request.contentType)
            http.body = .bytes(ByteBuffer(bytes: body))
        }
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
        do {
            // AsyncHTTPClient's own deadline ends when the head arrives: the race also bounds the body.
            (status, headers, body) = try await Self.within(timeout) { [httpClient, configuration, http] in
                let response = try await httpClient.execute(http, timeout: .nanoseconds(timeout.wholeNanoseconds))
                var buffer = try await response.body.collect(upTo: configuration.maximumResponseSize)
                return (Int(response.status.code), response.headers, buffer.readBytes(length: buffer.readableBytes) ?? [])
            }
        } catch is RequestTimedOut {
            throw Failure(kind: .timeout, error: AppStoreServerAPIError(
                .timeout, "no complete answer from \(baseURL) within \(Self.seconds(timeout)) s"), retryAfter: nil)
        } catch is CancellationError {
            throw CancellationError()
        } catch is NIOTooManyBytesError {
            throw Failure(kind: .final, error: AppStoreServerAPIError(
                .malformedResponse, "Apple's answer is larger than \(configuration.maximumResponseSize) bytes"), retryAfter: nil)
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw Failure(kind: .timeout, error: AppStoreServerAPIError(
                .timeout, "no answer from \(baseURL) within \(Self.seconds(timeout)) s (\(error))"), retryAfter: nil)
        } catch {
            throw Failure(kind: .connection, error: AppStoreServerAPIError(
                .connectionFailed, "cannot reach \(baseURL): \(error)"), retryAfter: nil)
        }
        if (200..<300).contains(status) { return body }
        throw failure(status: status, headers: headers, body: body, token: token)
    }

    /// Thrown by ``within(_:_:)`` when the time is up.
    struct RequestTimedOut: Error {}

    /// The result of `body`, or ``RequestTimedOut`` when it takes longer than `timeout` (`body`
    /// is then cancelled).
    static func within<Result: Sendable>(
        _ timeout: Duration, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Result.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw RequestTimedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw RequestTimedOut() }
            return first
        }
    }

    /// The failure an HTTP status other than 2xx stands for.
    private func failure(status: Int, headers: HTTPHeaders, body: [UInt8], token: AppStoreServerAPIToken) -> Failure {
        let apple = try? JSONDecoder().decode(ErrorPayloadBody.self, from: Data(body))
        let code = apple?.errorCode.map(APIErrorCode.init(rawValue:))
        let message = apple?.errorMessage
        let said = [code.map { "errorCode \($0)" }, message.map { "\"\($0)\"" }].compactMap { $0 }.joined(separator: " ")
        let answer = "HTTP \(status)" + (said.isEmpty ? "" : " \(said)")
        func error(_ code: AppStoreServerAPIError.Code, _ reason: String, retryAfter: Double? = nil) -> AppStoreServerAPIError {
            AppStoreServerAPIError(code, reason, httpStatus: status, apiErrorCode: apple?.errorCode.map(APIErrorCode.init(rawValue:)),
                                   apiErrorMessage: message, retryAfterSeconds: retryAfter)
        }
        switch status {
        case 401:
            let claims = "kid \(configuration.key.keyId), iss \(configuration.key.issuerId), bid \(configuration.bundleId), "
                + "iat \(token.issuedAt), exp \(token.expiresAt)"
            return Failure(kind: .final, error: error(.unauthorized,
                "Apple refused the bearer token (\(answer)): check that the key id (kid) is the In-App Purchase key's, "
                + "that the issuer id (iss) is the team's, that the bundle id (bid) is an app of that team, that the private "
                + "key is that key id's .p8, and that this machine's clock is right (iat/exp) [\(claims)]"), retryAfter: nil)
        case 429:
            let wait = retryAfter(headers)
            return Failure(
                kind: .rateLimited,
                error: error(.rateLimited, "Apple's rate limit was reached (\(answer))", retryAfter: wait.map(\.inSeconds)),
                retryAfter: wait)
        case 500...599:
            return Failure(kind: .serverError, error: error(.serverError, "Apple's server failed (\(answer))"), retryAfter: nil)
        default:
            return Failure(kind: .final, error: error(.apiError, "Apple refused the request (\(answer))"), retryAfter: nil)
        }
    }

    /// A number in `Retry-After` at least this large is Apple's UNIX time in milliseconds, not
    /// RFC 9110's delta-seconds: as seconds it would be a wait of over three thousand years, and
    /// as milliseconds it is an instant after March 1973.
    static let unixMillisecondsThreshold: Int64 = 100_000_000_000

    /// `Retry-After` as a wait: delta-seconds or an HTTP date (RFC 9110 §10.2.3), or the UNIX
    /// time in milliseconds that Apple documents for its rate limits ("Identifying rate
    /// limits"); an instant is read against the clock.
    private func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        guard let value = headers.first(name: "Retry-After")?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
            return nil
        }
        if value.allSatisfy(\.isASCIIDigit), let number = Int64(value) {
            guard number >= Self.unixMillisecondsThreshold else { return .seconds(number) }
            let now = Int64((clock().timeIntervalSince1970 * 1000).rounded(.down))
            return .milliseconds(max(0, number - now))
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: value) else { return nil }
        let milliseconds = max(0, Int64((date.timeIntervalSince(clock()) * 1000).rounded(.up)))
        return .milliseconds(milliseconds)
    }


    /// The base URL, the percent-encoded path segments, and the query.
    func url(for request: Request) -> String {
        var url = baseURL
        for segment in request.path {
            url += "/" + Self.percentEncoded(segment)
        }
        if !request.query.isEmpty {
            url += "?" + request.query.map { Self.percentEncoded($0.0) + "=" + Self.percentEncoded($0.1) }.joined(separator: "&")
        }
        return url
    }

    /// Every byte but RFC 3986's unreserved characters percent-encoded.
    static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.append(Character(Unicode.Scalar(byte)))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

/// The pages of a paginated endpoint as an `AsyncSequence`, in Apple's order: each page is
/// fetched when the loop asks for it, with the previous page's token.
///
/// A page whose token Apple already gave before ends the sequence with `malformed_response`
/// instead of looping.
public struct AppStoreServerAPIPages<Page: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Page
    typealias Fetch = @Sendable (_ token: String?) async throws -> (page: Page, next: String?, hasMore: Bool)
    let fetch: Fetch

    init(_ fetch: @escaping Fetch) {
        self.fetch = fetch
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(fetch: fetch)
    }

    /// Fetches one page per call to `next()`.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let fetch: Fetch
        var token: String?
        var finished = false
        var seen: Set<String> = []
        /// A fault of the last page's token, thrown by the next call: that page is still returned.
        var pendingFailure: AppStoreServerAPIError?

        init(fetch: @escaping Fetch) {
            self.fetch = fetch
        }

        public mutating func next() async throws -> Page? {
            if let failure = pendingFailure {
                pendingFailure = nil
                finished = true
                throw failure
            }
            guard !finished else { return nil }
            let (page, next, hasMore) = try await fetch(token)
            if hasMore {
                if let next, !next.isEmpty, seen.insert(next).inserted {
                    token = next
                } else if let next, !next.isEmpty {
                    pendingFailure = AppStoreServerAPIError(
                        .malformedResponse, "Apple's page repeats the token '\(next)' of an earlier page")
                } else {
                    pendingFailure = AppStoreServerAPIError(
                        .malformedResponse, "Apple's page says hasMore but carries no token for the next page")
                }
            } else {
                finished = true
            }
            return page
        }
    }
}
