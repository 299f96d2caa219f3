import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ReceiptKitServer
import Testing

/// The request timeout, and the answers while the database cannot take a write: `/readyz` is
/// 503 so that a load balancer stops sending traffic, and the webhook is 503 so that Apple
/// retries (it retries every answer but 200), with the retry stored once the database is back.
@Suite("Request timeout and an unavailable database")
struct AvailabilityTests {
    /// The environment of a server whose requests time out after `seconds`.
    static func environment(timeout seconds: String) -> [String: String] {
        Vectors.environment.merging(["RECEIPTKIT_REQUEST_TIMEOUT": seconds]) { $1 }
    }

    @Test("RECEIPTKIT_REQUEST_TIMEOUT: 30 s by default, decimal seconds, anything else refused")
    func timeoutConfiguration() throws {
        #expect(try ServerConfiguration(environment: Vectors.environment).requestTimeout == .seconds(30))
        #expect(try ServerConfiguration(environment: Self.environment(timeout: "0.2")).requestTimeout == .milliseconds(200))
        #expect(try ServerConfiguration(environment: Self.environment(timeout: "45")).requestTimeout == .seconds(45))
        for bad in ["0", "-1", "abc", "1e9", "nan"] {
            let error = #expect(throws: ConfigurationError.self, "\(bad)") {
                try ServerConfiguration(environment: Self.environment(timeout: bad))
            }
            #expect(error?.message.contains("RECEIPTKIT_REQUEST_TIMEOUT") == true, "\(bad)")
        }
    }

    @Test("a client that sends part of a body and stalls is answered 503 timeout at the configured timeout", arguments: Backend.available)
    func stalledBody(backend: Backend) async throws {
        try await TestServer.run(backend, environment: Self.environment(timeout: "1")) { server in
            let port = try #require(server.client.port)
            let head = "POST /appstore/notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            // The whole (malformed) body: the server answers at once, so the client is sound.
            let whole = head + "Content-Length: 2\r\n\r\n{}"
            let prompt = try await rawExchange(port: port, send: Array(whole.utf8), readFor: .seconds(10))
            #expect(prompt.hasPrefix("HTTP/1.1 400"), "\(prompt)")

            // 1,000 bytes announced, 16 sent, then silence.
            let partial = head + "Content-Length: 1000\r\n\r\n{\"signedPayload\""
            let start = ContinuousClock.now
            let answer = try await rawExchange(port: port, send: Array(partial.utf8), readFor: .seconds(10))
            let elapsed = ContinuousClock.now - start
            #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer)")
            #expect(answer.contains(#""code":"timeout""#), "\(answer)")
            // The order of magnitude of the 1 s timeout: not before it, and not ten times later.
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(10), "answered after \(elapsed)")

            // The server still serves.
            let healthy = try await server.get("/healthz", token: nil)
            #expect(healthy.status == .ok)
        }
    }

    @Test("while another connection holds the write lock: /readyz 503, the webhook 503 (Apple retries), the retry stored once", arguments: Backend.available)
    func lockedDatabase(backend: Backend) async throws {
        let document = try OpenAPIDocument()
        let p = try Payloads()
        let t0 = ms("2025-06-01T12:00:00Z")
        let uuid = UUID().uuidString.lowercased()
        let notification = try p.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid, signed: t0,
            transaction: p.transaction(id: "8001", original: "8001", purchase: t0, expires: t0 + 30 * day, signed: t0),
            renewalInfo: nil)
        try await TestServer.run(backend, environment: Self.environment(timeout: "1")) { server in
            try await Self.expectReady(server)

            try await Backend.holdingWriteLock(server.location, searchPath: server.searchPath) {
                try await Self.expectNotReady(server, document)

                let start = ContinuousClock.now
                let refused = try await server.notify(notification)
                // Cut off by the 1 s request timeout: well under ten times it. On a machine so
                // busy that the timer's tick comes after the database's own 3 s deadline as well,
                // the store's 503 may come first: either is Apple's cue to retry.
                #expect(ContinuousClock.now - start < .seconds(10), "the webhook took \(ContinuousClock.now - start)")
                #expect(refused.status == .serviceUnavailable, "\(refused.text)")
                #expect(["timeout", "database_unavailable"].contains(try refused.errorCode()), "\(refused.text)")
                #expect(refused.headers[.retryAfter] != nil, "\(refused.headers)")
                try document.expect(refused, answers: "post", "/appstore/notifications")

                // The healthz route needs no database.
                #expect(try await server.get("/healthz", token: nil).status == .ok)
            }

            // The lock is gone: ready again, and Apple's retry is 200, stored exactly once
            // (whether or not the write cut short by the timeout committed meanwhile).
            try await Self.expectReady(server)
            let retried = try await server.notify(notification)
            #expect(retried.status == .ok, "\(retried.text)")
            try await server.withStore { store async throws in
                #expect(try await store.inputCount(dedupKeys: ["notification:\(uuid)"]) == 1)
                #expect(try await store.inputCount(dedupKeys: nil) == 1)
            }
        }
    }

    @Test(
        "PostgreSQL gone (nothing listens where it was, its connections reset): /readyz 503, the webhook 503",
        .requires(.postgres))
    func postgresUnreachable() async throws {
        let url = try #require(Backend.postgresURL)
        guard case .postgres(let postgres) = try DatabaseLocation(url: url) else {
            Issue.record("RECEIPTKIT_TEST_POSTGRES_URL is not a PostgreSQL URL: \(url)")
            return
        }
        let document = try OpenAPIDocument()
        let p = try Payloads()
        let t0 = ms("2025-06-01T12:00:00Z")
        let notification = try p.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: t0,
            transaction: p.transaction(id: "8101", original: "8101", purchase: t0, expires: t0 + 30 * day, signed: t0),
            renewalInfo: nil)
        let forwarder = try TCPForwarder(to: postgres.port)
        try await TestServer.run(.postgres, environment: Self.environment(timeout: "1"), postgresPort: forwarder.port) { server in
            try await Self.expectReady(server)

            forwarder.stop()
            try await Self.expectNotReady(server, document)

            // postgres-nio queues a query while it cannot connect: the request timeout answers.
            let start = ContinuousClock.now
            let refused = try await server.notify(notification)
            #expect(ContinuousClock.now - start < .seconds(10), "the webhook took \(ContinuousClock.now - start)")
            #expect(refused.status == .serviceUnavailable, "\(refused.text)")
            #expect(["timeout", "database_unavailable"].contains(try refused.errorCode()), "\(refused.text)")
            try document.expect(refused, answers: "post", "/appstore/notifications")
            #expect(try await server.get("/healthz", token: nil).status == .ok)
        }
    }

    /// `/readyz` answers 200 within a minute: with nothing holding the database, only a machine
    /// so busy that the write lock takes longer than readiness's bound (half the 1 s timeout) to
    /// come answers 503, and the next look is 200.
    static func expectReady(_ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var ready = try await server.get("/readyz", token: nil)
        let deadline = ContinuousClock.now + .seconds(60)
        while ready.status != .ok, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            ready = try await server.get("/readyz", token: nil)
        }
        #expect(ready.status == .ok, "\(ready.text)", sourceLocation: sourceLocation)
    }

    /// `/readyz` answers 503 `database_unavailable` within its own bound (under the request
    /// timeout, checked here to its order of magnitude), as the OpenAPI document says.
    private static func expectNotReady(_ server: TestServer, _ document: OpenAPIDocument) async throws {
        let start = ContinuousClock.now
        let notReady = try await server.get("/readyz", token: nil)
        #expect(ContinuousClock.now - start < .seconds(10), "/readyz took \(ContinuousClock.now - start)")
        try notReady.expectError(.serviceUnavailable, "database_unavailable")
        try document.expect(notReady, answers: "get", "/readyz")
    }
}
