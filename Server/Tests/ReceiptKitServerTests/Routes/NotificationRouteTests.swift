import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("POST /appstore/notifications")
struct NotificationRouteTests {
    let payloads: Payloads

    init() throws {
        payloads = try Payloads()
    }

    func subscribed(uuid: String = UUID().uuidString.lowercased()) throws -> String {
        let signed = ms("2025-06-01T12:00:00Z")
        return try payloads.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid, signed: signed,
            transaction: payloads.transaction(
                id: "1000", original: "1000", purchase: signed, expires: signed + 7 * day, signed: signed, token: "customer-a"),
            renewalInfo: payloads.renewalInfo(original: "1000", signed: signed))
    }

    @Test("a genuine notification is stored once: 200, and a replay is 200 and changes nothing", arguments: Backend.available)
    func storedOnce(backend: Backend) async throws {
        let jws = try subscribed(uuid: "5f0c1f9e-0000-4000-8000-000000000001")
        try await TestServer.run(backend) { server in
            let first = try await server.notify(jws)
            #expect(first.status == .ok, "\(first.text)")
            let answer = try first.json()
            #expect(answer["duplicate"] as? Bool == false)
            #expect(answer["notification_uuid"] as? String == "5f0c1f9e-0000-4000-8000-000000000001")
            let record = try #require(answer["record"] as? [String: Any])
            #expect(record["kind"] as? String == "notification")
            #expect((record["notification"] as? [String: Any])?["type"] as? String == "SUBSCRIBED")

            let replay = try await server.notify(jws)
            #expect(replay.status == .ok)
            #expect(try replay.json()["duplicate"] as? Bool == true)
            try await server.withStore { store async throws in
                #expect(try await store.inputCount(dedupKeys: nil) == 1)
                #expect(try await store.inputCount(dedupKeys: ["notification:5f0c1f9e-0000-4000-8000-000000000001"]) == 1)
                // The body as received, byte for byte (stored with its JWS headers by reference).
                let raw = try await store.raw(dedupKey: "notification:5f0c1f9e-0000-4000-8000-000000000001")
                #expect(raw == Array(Vectors.body(wrapping: jws).utf8))
                let keys = try await store.keys(originalTransactionId: "1000")
                #expect(keys.count == 1)
                #expect(try await store.state(of: try #require(keys.first), at: Timestamp(millisecondsSince1970: .max)) != nil)
                // The transaction's appAccountToken is linked as a customer.
                #expect(try await store.keys(customerId: "customer-a").map(\.originalTransactionId) == ["1000"])
            }
        }
    }

    @Test("what fails verification is 400 with ReceiptKit's code and is not stored", arguments: Backend.available)
    func rejected(backend: Backend) async throws {
        let genuine = try subscribed()
        // One byte of the signature changed.
        var bytes = Array(genuine.utf8)
        let index = bytes.count - 10
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let tampered = String(decoding: bytes, as: UTF8.self)
        let signed = ms("2025-06-01T12:00:00Z")
        let otherApp = try payloads.signer.sign(
            #"{"notificationType":"TEST","notificationUUID":"\#(UUID())","signedDate":\#(signed),"data":{"bundleId":"com.other.app","appAppleId":1234567890,"environment":"Sandbox"}}"#)
        let nested = try Vectors.text("jws/invalid_signature-nested-transaction.jws")
        try await TestServer.run(backend) { server in
            try await server.notify(tampered).expectError(.badRequest, "invalid_signature")
            try await server.notify(otherApp).expectError(.badRequest, "bundle_id_mismatch")
            let nestedAnswer = try await server.notify(nested)
            try nestedAnswer.expectError(.badRequest, "invalid_signature")
            #expect(nestedAnswer.text.contains("data.signedTransactionInfo"))
            try await server.post("/appstore/notifications", #"{"signedPayload":42}"#, token: nil)
                .expectError(.badRequest, "unrecognized_input")
            try await server.post("/appstore/notifications", "signedPayload", token: nil)
                .expectError(.unsupportedMediaType, "unrecognized_input")
            try await server.post("/appstore/notifications", Vectors.body(wrapping: genuine), contentType: "text/plain", token: nil)
                .expectError(.unsupportedMediaType, "unrecognized_input")
            let padding = String(repeating: "A", count: 65 * 1024 + 1)
            try await server.notify(padding).expectError(.contentTooLarge, "input_too_large")
            try await server.withStore { store async throws in
                #expect(try await store.inputCount(dedupKeys: nil) == 0)
            }
            // The connection is still good.
            #expect(try await server.notify(genuine).status == .ok)
        }
    }

    @Test("a database failure is 503 database_unavailable, without SQL or driver text", arguments: Backend.available)
    func databaseUnavailable(backend: Backend) async throws {
        let jws = try subscribed()
        try await TestServer.run(backend) { server in
            try await breakDatabase(server)
            let answer = try await server.notify(jws)
            try answer.expectError(.serviceUnavailable, "database_unavailable")
            #expect(!answer.text.lowercased().contains("events"))
            #expect(!answer.text.lowercased().contains("sql"))
        }
    }

    @Test("stored data that cannot be read is 500 stored_data_damaged, without Retry-After, and the other keys still answer",
          arguments: Backend.available)
    func storedDataDamaged(backend: Backend) async throws {
        let signed = ms("2025-06-01T12:00:00Z")
        func purchase(_ id: String) throws -> String {
            try payloads.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: UUID().uuidString.lowercased(), signed: signed,
                transaction: payloads.transaction(id: id, original: id, purchase: signed, expires: signed + 7 * day, signed: signed),
                renewalInfo: payloads.renewalInfo(original: id, signed: signed))
        }
        let purchases = try ["2000", "2001"].map(purchase)
        // A renewal that must fold into the key whose copies are damaged below.
        let renewal = try payloads.notification(
            type: "DID_RENEW", subtype: nil, uuid: UUID().uuidString.lowercased(), signed: signed + 7 * day,
            transaction: payloads.transaction(id: "2000-2", original: "2000", purchase: signed + 7 * day,
                                              expires: signed + 14 * day, signed: signed + 7 * day),
            renewalInfo: payloads.renewalInfo(original: "2000", signed: signed + 7 * day))
        try await TestServer.run(backend) { server in
            for purchase in purchases {
                let stored = try await server.notify(purchase)
                #expect(stored.status == .ok, "\(stored.text)")
            }
            try await backend.damageCopies(of: ["2000"], location: server.location, searchPath: server.searchPath)

            let read = try await server.get("/v1/subscriptions/2000")
            try read.expectError(.internalServerError, "stored_data_damaged")
            #expect(read.headers[.retryAfter] == nil)
            #expect(!read.text.contains("transaction_copies") && !read.text.contains("damaged'"), "\(read.text)")
            #expect(try await server.get("/v1/subscriptions/2001").status == .ok)

            // The renewal cannot fold: the same answer, and nothing stored.
            let notified = try await server.notify(renewal)
            try notified.expectError(.internalServerError, "stored_data_damaged")
            #expect(notified.headers[.retryAfter] == nil)
            try await server.withStore { store async throws in
                #expect(try await store.inputCount(dedupKeys: nil) == 2)
            }
        }
    }
}

/// Renames the events table behind the server's back, so that every write fails.
func breakDatabase(_ server: TestServer) async throws {
    switch server.location {
    case .sqlite(let path):
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in try db.execute(sql: "ALTER TABLE inputs RENAME TO inputs_gone") }
        try queue.close()
    case .postgres:
        try await Backend.withPostgresClient(server.location, searchPath: server.searchPath) { client in
            try await client.query("ALTER TABLE inputs RENAME TO inputs_gone")
        }
    }
}
