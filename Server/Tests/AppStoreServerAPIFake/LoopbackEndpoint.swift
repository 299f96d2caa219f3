import Hummingbird
import Logging

/// A developer's HTTP endpoint for tests — the Get Retention Message endpoint a performance test
/// calls, say: a real HTTP server on a loopback port that answers every request with `respond`.
public enum LoopbackEndpoint {
    /// An answer: a status and a body, sent as JSON.
    public struct Answer: Sendable {
        public var status: Int
        public var body: [UInt8]

        public init(status: Int = 200, body: [UInt8]) {
            self.status = status
            self.body = body
        }
    }

    /// Runs the endpoint on `127.0.0.1` on a free port for the time of `body`, which gets its
    /// URL (`http://127.0.0.1:PORT/retention`).
    ///
    /// - Parameters:
    ///   - respond: The answer to a request's body.
    ///   - body: What the test does while the endpoint runs.
    public static func run<Result: Sendable>(
        respond: @escaping @Sendable (_ requestBody: [UInt8]) async -> Answer,
        _ body: @Sendable (_ url: String) async throws -> Result
    ) async throws -> Result {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "LoopbackEndpoint")
        logger.logLevel = .critical
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in
                var buffer = try await request.body.collect(upTo: 1 << 20)
                let answer = await respond(buffer.readBytes(length: buffer.readableBytes) ?? [])
                return Response(
                    status: .init(code: answer.status), headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
            },
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                defer { continuation.finish() }
                try await app.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else {
                group.cancelAll()
                try await group.waitForAll()
                throw FakeAppStoreServerAPI.FakeError("the loopback endpoint did not start")
            }
            let result = try await body("http://127.0.0.1:\(port)/retention")
            group.cancelAll()
            return result
        }
    }
}
