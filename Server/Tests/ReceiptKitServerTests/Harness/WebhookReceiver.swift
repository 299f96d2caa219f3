import CServerTestOpenSSL
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import Testing

/// A backend's webhook endpoint on loopback, for the delivery tests: a real HTTP server that
/// records every request (headers, body, what it answered) and answers as the test says — 200,
/// another status, or nothing for a while (a timeout) — and that a test can stop and start again
/// on the same port (connections refused meanwhile).
final class WebhookReceiver: Sendable {
    /// One request as received, and what it was answered.
    struct Received: Sendable {
        let path: String
        let headers: [String: String]
        let body: [UInt8]
        /// The status answered, or `nil` when the request was stalled (the sender gave up).
        let status: Int?

        var text: String { String(decoding: body, as: UTF8.self) }
        var eventId: String? { headers["receiptkit-event-id"] }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    }

    /// How a request is answered.
    enum Answer: Sendable {
        case status(Int)
        /// Nothing for this long, then 200 (the sender has timed out by then).
        case stall(Duration)
    }

    private struct State {
        var received: [Received] = []
        /// Answers for the next requests, in order; then ``standing``.
        var queued: [Answer] = []
        var standing = Answer.status(200)
        var inFlight = 0
        var mostInFlight = 0
    }

    private let state = NIOLockedValueBox(State())
    let port: Int

    /// A receiver for a port of its own (not listening until ``run(_:)``).
    init() throws {
        port = try unusedLoopbackPort()
    }

    var url: String { "http://127.0.0.1:\(port)/hooks/receiptkit" }

    var received: [Received] { state.withLockedValue { $0.received } }

    /// The most requests it was answering at once.
    var mostInFlight: Int { state.withLockedValue { $0.mostInFlight } }

    /// The requests answered 2xx.
    var accepted: [Received] { received.filter { ($0.status ?? 0) / 100 == 2 } }

    func answer(next answers: [Answer]) {
        state.withLockedValue { $0.queued += answers }
    }

    func answer(always answer: Answer) {
        state.withLockedValue { $0.standing = answer }
    }

    /// Listens on ``port`` for the time of `body`.
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "WebhookReceiver")
        logger.logLevel = .critical
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { [self] request, _ in try await self.respond(request) },
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                // A server that could not start ends the wait for its port, not only its task.
                defer { continuation.finish() }
                try await app.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard await iterator.next() == port else {
                group.cancelAll()
                try await group.waitForAll()  // why it did not start
                throw ReceiverError(description: "the webhook receiver did not start on port \(port)")
            }
            do {
                let result = try await body()
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    private func respond(_ request: Request) async throws -> Response {
        var buffer = try await request.body.collect(upTo: 1 << 20)
        let body = buffer.readBytes(length: buffer.readableBytes) ?? []
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let answer = state.withLockedValue { state -> Answer in
            state.inFlight += 1
            state.mostInFlight = max(state.mostInFlight, state.inFlight)
            return state.queued.isEmpty ? state.standing : state.queued.removeFirst()
        }
        defer { state.withLockedValue { $0.inFlight -= 1 } }
        switch answer {
        case .status(let status):
            state.withLockedValue {
                $0.received.append(Received(path: request.uri.path, headers: headers, body: body, status: status))
            }
            return Response(status: .init(code: status))
        case .stall(let duration):
            state.withLockedValue { $0.received.append(Received(path: request.uri.path, headers: headers, body: body, status: nil)) }
            try await Task.sleep(for: duration)
            return Response(status: .ok)
        }
    }

    struct ReceiverError: Error, CustomStringConvertible {
        let description: String
    }
}

/// Checks a webhook's `ReceiptKit-Signature` as a receiver must (`docs/events.md`): HMAC-SHA256
/// under the secret of `t + "." + body`, computed here with libcrypto directly.
func signatureIsValid(_ received: WebhookReceiver.Received, secret: String) -> Bool {
    guard let header = received.headers["receiptkit-signature"] else { return false }
    var timestamp: String?
    var signatures: [String] = []
    for part in header.split(separator: ",") {
        let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
        guard pair.count == 2 else { return false }
        if pair[0] == "t" { timestamp = pair[1] }
        if pair[0] == "v1" { signatures.append(pair[1]) }
    }
    guard let timestamp, Int64(timestamp) != nil else { return false }
    let expected = testHMACSHA256(key: Array(secret.utf8), data: Array("\(timestamp).".utf8) + received.body)
        .map { String(format: "%02x", $0) }.joined()
    return signatures.contains(expected)
}

/// HMAC-SHA256 through libcrypto's one-shot MAC: the tests' own, independent of the server's.
func testHMACSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var written = 0
    _ = key.withUnsafeBufferPointer { key in
        data.withUnsafeBufferPointer { data in
            out.withUnsafeMutableBufferPointer { out in
                EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, key.baseAddress, key.count, data.baseAddress, data.count,
                          out.baseAddress, 32, &written)
            }
        }
    }
    return written == 32 ? out : []
}
