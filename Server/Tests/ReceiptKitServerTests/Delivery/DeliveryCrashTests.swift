import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ReceiptKitServer
import Testing

/// `receiptkit-server` killed between the commit of its events and their delivery: nothing is
/// lost. The events are committed (answered 200), the receiver holds the first delivery without
/// answering, the process is SIGKILLed; a new process on the same database delivers every event,
/// the one in flight again (same id) once its lease has expired.
@Suite("Webhooks: SIGKILL between commit and delivery")
struct DeliveryCrashTests {
    @Test("killed while a delivery is in flight, the next process delivers every event, in order per subscription",
          arguments: Backend.available)
    func killedMidDelivery(backend: Backend) async throws {
        let receiver = try WebhookReceiver()
        receiver.answer(always: .stall(.seconds(600)))
        let bodies = try WebhookDeliveryTests.changes(of: ["7701", "7801", "7901"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-delivery-kill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await receiver.run {
            try await Self.withDatabaseURL(backend, directory: directory) { databaseURL in
                var environment = Vectors.environment
                environment["RECEIPTKIT_DATABASE_URL"] = databaseURL
                environment["RECEIPTKIT_API_TOKEN"] = testToken
                environment["RECEIPTKIT_WEBHOOK_URL"] = receiver.url
                environment["RECEIPTKIT_WEBHOOK_SECRET"] = WebhookDeliveryTests.secret
                environment["RECEIPTKIT_WEBHOOK_TIMEOUT"] = "1"  // a lease of 6 s
                environment["RECEIPTKIT_SWEEP_INTERVAL"] = "3600"

                let port = try unusedLoopbackPort()
                environment["PORT"] = String(port)
                let first = try ServerProcess(environment: environment, log: directory.appendingPathComponent("first.log"))
                defer { first.stop() }
                try await ExecutableTests.waitUntilReady(port: port, server: first)
                try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                    for body in bodies {
                        let answer = try await client.post(
                            "/appstore/notifications", headers: [.contentType: "application/json"],
                            body: ByteBuffer(string: Vectors.body(wrapping: body)))
                        #expect(answer.status == .ok, "\(answer.text)")
                    }
                }
                try await waitUntil("the first delivery reaches the receiver; log:\n\(first.logText)") { !receiver.received.isEmpty }
                first.stop()  // SIGKILL, the delivery in flight
                _ = try await first.waitForExit(timeout: .seconds(10))
                let inFlight = try #require(receiver.received.first?.eventId)

                receiver.answer(always: .status(200))
                let secondPort = try unusedLoopbackPort()
                environment["PORT"] = String(secondPort)
                let second = try ServerProcess(environment: environment, log: directory.appendingPathComponent("second.log"))
                defer { second.stop() }
                try await ExecutableTests.waitUntilReady(port: secondPort, server: second)
                try await waitUntil("every event is accepted (\(receiver.accepted.count)); log:\n\(second.logText)") {
                    Set(receiver.accepted.compactMap(\.eventId)).count == bodies.count
                }
                try await TestClient.withClient(host: "127.0.0.1", port: secondPort) { client in
                    let feed = try await client.get("/v1/events?limit=1000", headers: [.authorization: "Bearer \(testToken)"])
                    let json = try JSONSerialization.jsonObject(with: Data(feed.text.utf8)) as? [String: Any]
                    let events = try #require(json?["events"] as? [[String: Any]])
                    #expect(events.count == bodies.count)
                    #expect(Set(events.compactMap { $0["id"] as? String }) == Set(receiver.accepted.compactMap(\.eventId)))
                    // Per subscription, accepted in the feed's order. An event may be accepted
                    // twice in a row: a 2xx that came after the sender's 1 s timeout is sent again,
                    // which is at-least-once delivery (docs/events.md), not disorder.
                    for key in ["7701", "7801", "7901"] {
                        let ids = events.filter { $0["original_transaction_id"] as? String == key }.compactMap { $0["id"] as? String }
                        let accepted = receiver.accepted.filter { $0.json?["original_transaction_id"] as? String == key }.compactMap(\.eventId)
                        let resendsMerged = accepted.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
                        #expect(resendsMerged == ids, "key \(key): accepted \(accepted)")
                    }
                }
                #expect(receiver.accepted.contains { $0.eventId == inFlight }, "the delivery killed in flight was sent again")
                for request in receiver.received { #expect(signatureIsValid(request, secret: WebhookDeliveryTests.secret)) }
            }
        }
    }

    /// A database URL for the processes: a SQLite file in `directory`, or a new PostgreSQL
    /// database beside the test database (dropped afterwards).
    static func withDatabaseURL(_ backend: Backend, directory: URL, _ body: (String) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            try await body("sqlite:\(directory.appendingPathComponent("store.sqlite").path)")
        case .postgres:
            guard let url = Backend.postgresURL, var components = URLComponents(string: url) else {
                throw Prerequisite.Missing(name: Prerequisite.postgres.name)
            }
            let location = try DatabaseLocation(url: url)
            let name = "receiptkit_kill_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            try await Backend.withPostgresClient(location) { client in
                try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))  // a generated name
            }
            components.path = "/\(name)"
            do {
                try await body(components.string ?? url)
            } catch {
                try? await Backend.withPostgresClient(location) { client in
                    try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
                }
                throw error
            }
            try await Backend.withPostgresClient(location) { client in
                try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
            }
        }
    }
}
