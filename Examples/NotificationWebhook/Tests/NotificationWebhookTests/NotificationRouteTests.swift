import Foundation
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import NotificationWebhook
import Testing

@Suite("POST /appstore/notifications")
struct NotificationRouteTests {
    @Test("a genuine notification gets 200 and its normalized record")
    func genuine() async throws {
        let body = try Vectors.notificationBody()
        try await withWebhook { client in
            let response = try await client.post("/appstore/notifications", body)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json")
            let record = try response.json()
            #expect(record["status"] as? String == "verified")
            #expect(record["kind"] as? String == "notification")
            #expect(record["environment"] as? String == "Sandbox")
            #expect(record["validated_at"] as? String == "2025-06-01T12:00:00.123Z")
            let chain = try #require(record["chain"] as? [String: Any])
            #expect(chain["root_sha256"] as? String == (try Vectors.testRootSHA256()))
            let notification = try #require(record["notification"] as? [String: Any])
            #expect(notification["type"] as? String == "SUBSCRIBED")
            #expect(notification["uuid"] as? String == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
            let transactions = try #require(record["transactions"] as? [[String: Any]])
            #expect(transactions.count == 1)
            #expect(transactions.first?["transaction_id"] as? String == "2000000951236000")
            let renewal = try #require(record["renewal_info"] as? [String: Any])
            #expect(renewal["auto_renew_status"] as? Int == 1)
        }
    }

    @Test("the same body with one byte of its signed payload flipped gets 400 invalid_signature")
    func flippedByte() async throws {
        let genuine = try Vectors.notificationBody()
        let tampered = try Tampering.flipOneByte(in: genuine)
        #expect(tampered.utf8.count == genuine.utf8.count)
        #expect(tampered != genuine)
        try await withWebhook { client in
            #expect(try await client.post("/appstore/notifications", genuine).status == .ok)
            let response = try await client.post("/appstore/notifications", tampered)
            try response.expectRejected(.badRequest, "invalid_signature")
        }
    }

    @Test("a nested JWS that fails gets 400 with its error, the field named")
    func nestedFailure() async throws {
        let badTransaction = try Vectors.notificationBody(wrapping: "jws/invalid_signature-nested-transaction.jws")
        let expiredRenewal = try Vectors.notificationBody(wrapping: "jws/certificate_expired-nested-renewal-info.jws")
        try await withWebhook { client in
            let response = try await client.post("/appstore/notifications", badTransaction)
            try response.expectRejected(.badRequest, "invalid_signature")
            #expect(String(buffer: response.body).contains("data.signedTransactionInfo"))

            let expired = try await client.post("/appstore/notifications", expiredRenewal)
            #expect(expired.status == .badRequest)
            #expect(try expired.errorCode() == "certificate_expired")
        }
    }

    @Test("a body over the limit gets 413 input_too_large")
    func oversized() async throws {
        try await withWebhook { client in
            // One byte over 64 KiB + 1 KiB, and the project's 70,000-byte JWS in a body.
            let padding = String(repeating: "A", count: 65 * 1024 + 1 - #"{"signedPayload":""}"#.utf8.count)
            let overLimit = #"{"signedPayload":"\#(padding)"}"#
            #expect(overLimit.utf8.count == 65 * 1024 + 1)
            let response = try await client.post("/appstore/notifications", overLimit)
            try response.expectRejected(.contentTooLarge, "input_too_large")

            let large = try Vectors.notificationBody(wrapping: "jws/input_too_large-70000-bytes.jws")
            #expect(try await client.post("/appstore/notifications", large).status == .contentTooLarge)

            // The connection is still good for the next notification.
            #expect(try await client.post("/appstore/notifications", try Vectors.notificationBody()).status == .ok)
        }
    }

    @Test(
        "a body that is not JSON gets 415",
        arguments: [
            ("text/plain", "genuine"),
            (nil, "genuine"),
            ("application/x-www-form-urlencoded", "genuine"),
            ("application/json", "not json at all"),
            ("application/json", ""),
            ("application/json", #"{"signedPayload": "eyJ"#),
            ("application/json", #"["signedPayload"]"#),
            ("application/json", #""signedPayload""#),
        ] as [(String?, String)])
    func notJSON(contentType: String?, body: String) async throws {
        let body = body == "genuine" ? try Vectors.notificationBody() : body
        try await withWebhook { client in
            let response = try await client.post("/appstore/notifications", body, contentType: contentType)
            try response.expectRejected(.unsupportedMediaType, "unrecognized_input")
        }
    }

    @Test("a Content-Type with parameters is still JSON")
    func contentTypeParameters() async throws {
        let body = try Vectors.notificationBody()
        try await withWebhook { client in
            let response = try await client.post("/appstore/notifications", body, contentType: "Application/JSON; charset=utf-8")
            #expect(response.status == .ok)
        }
    }

    @Test(
        "a JSON object without a string signedPayload gets 400 unrecognized_input",
        arguments: [
            "{}",
            #"{"signedPayload": 1}"#,
            #"{"signedpayload": "x.y.z"}"#,
            #"{"signedPayload": "a", "signedPayload": "b"}"#,
        ])
    func missingSignedPayload(body: String) async throws {
        try await withWebhook { client in
            let response = try await client.post("/appstore/notifications", body)
            try response.expectRejected(.badRequest, "unrecognized_input")
        }
    }

    @Test("a signedPayload that is not a JWS gets 400 malformed_jws")
    func notAJWS() async throws {
        try await withWebhook { client in
            let response = try await client.post("/appstore/notifications", #"{"signedPayload": "not a jws"}"#)
            try response.expectRejected(.badRequest, "malformed_jws")
        }
    }

    @Test(
        "a notification failing a configured claim gets 400 with that claim's code",
        arguments: [
            // Another app's notification.
            ("RECEIPTKIT_BUNDLE_ID", "com.example.other", "bundle_id_mismatch"),
            // A Production webhook refuses a Sandbox notification.
            ("RECEIPTKIT_ENVIRONMENT", "Production", "environment_mismatch"),
        ])
    func claimMismatch(variable: String, value: String, code: String) async throws {
        var environment = Vectors.environment
        environment[variable] = value
        let body = try Vectors.notificationBody()
        try await withWebhook(environment: environment) { client in
            let response = try await client.post("/appstore/notifications", body)
            try response.expectRejected(.badRequest, code)
        }
    }

    @Test("the test root pinned by its SHA-256 verifies; Apple's built-in pins do not")
    func pins() async throws {
        let body = try Vectors.notificationBody()
        var pinned = Vectors.environment
        pinned["RECEIPTKIT_ROOT_FILE"] = nil
        pinned["RECEIPTKIT_PIN_SHA256"] = try Vectors.testRootSHA256()
        try await withWebhook(environment: pinned) { client in
            let response = try await client.post("/appstore/notifications", body)
            #expect(response.status == .ok)
        }
        var apple = Vectors.environment
        apple["RECEIPTKIT_ROOT_FILE"] = nil
        try await withWebhook(environment: apple) { client in
            let response = try await client.post("/appstore/notifications", body)
            try response.expectRejected(.badRequest, "untrusted_root")
        }
    }

    @Test("each request logs one line with the notification type and the verdict")
    func logLine() async throws {
        let handler = InMemoryLogHandler()
        let logger = Logger(label: "NotificationWebhookTests", factory: { _ in handler })
        let genuine = try Vectors.notificationBody()
        let tampered = try Tampering.flipOneByte(in: genuine)
        try await withWebhook(logger: logger) { client in
            _ = try await client.post("/appstore/notifications", genuine)
            _ = try await client.post("/appstore/notifications", tampered)
            _ = try await client.post("/appstore/notifications", genuine, contentType: "text/plain")
        }
        let lines = handler.entries.filter { $0.message.description.hasPrefix("POST ") }
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.message.description == "POST /appstore/notifications" && $0.level == .info })
        #expect(lines.map { $0.metadata["notification_type"]?.description } == ["SUBSCRIBED", "-", "-"])
        #expect(lines.map { $0.metadata["verdict"]?.description } == ["verified", "invalid_signature", "unrecognized_input"])
        #expect(lines.map { $0.metadata["status"]?.description } == ["200", "400", "415"])
    }
}

/// Changes one byte of a notification body so that one byte of its signed payload changes and
/// the body stays the same length and valid JSON.
enum Tampering {
    /// Flips one bit of the base64url character that encodes a letter of `"SUBSCRIBED"` in the
    /// signedPayload's payload segment: the decoded payload then says, say, `"SUBSCRIFED"`, still
    /// valid JSON of the right types, so the only check left to fail is the signature.
    static func flipOneByte(in body: String) throws -> String {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let jws = try #require(object["signedPayload"] as? String)
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(segments.count == 3)
        var payload = Array(segments[1].utf8)
        let decoded = try #require(decodeBase64URL(segments[1]))
        let value = Array(#""notificationType":"SUBSCRIBED""#.utf8)
        let start = try #require(decoded.firstRange(of: value)).lowerBound + value.count - "SUBSCRIBED\"".count
        // A byte whose top six bits are one whole base64 character: every third byte.
        let byte = try #require((start..<start + 9).first { $0 % 3 == 0 })
        let index = byte / 3 * 4
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let sextet = try #require(alphabet.firstIndex(of: payload[index]))
        payload[index] = alphabet[sextet ^ 1]  // the byte's bit 2: 'S' ↔ 'W', 'B' ↔ 'F', …
        let tamperedJWS = [segments[0], String(decoding: payload, as: UTF8.self), segments[2]].joined(separator: ".")
        try #require(body.contains(jws))
        return body.replacingOccurrences(of: jws, with: tamperedJWS)
    }

    private static func decodeBase64URL(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
