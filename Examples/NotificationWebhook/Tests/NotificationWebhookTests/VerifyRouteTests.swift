import Foundation
import Hummingbird
import HummingbirdTesting
import NotificationWebhook
import Testing

@Suite("POST /verify")
struct VerifyRouteTests {
    @Test(
        "a genuine input of any format gets 200 and the record verify-receipt prints",
        arguments: [
            ("jws/transaction-auto-renewable.jws", "transaction"),
            ("jws/renewal-info.jws", "renewal_info"),
            ("jws/notification-webhook-body.json", "notification"),
            ("receipts/receipt-sha256-der.b64", "receipt"),
            ("receipts/receipt-request-body.json", "receipt"),
        ])
    func genuine(file: String, kind: String) async throws {
        let body = try Vectors.text(file)
        try await withWebhook { client in
            let response = try await client.post("/verify", body, contentType: "text/plain")
            #expect(response.status == .ok)
            let record = try response.json()
            #expect(record["status"] as? String == "verified")
            #expect(record["kind"] as? String == kind)
            #expect(record["input"] == nil)
        }
    }

    @Test(
        "a rejected input gets 400 and the rejected record",
        arguments: [
            ("not a receipt, not a JWS", "malformed_jws"),
            ("bm90IGEgcmVjZWlwdA==", "malformed_receipt"),
            (#"{"receipt": "data"}"#, "unrecognized_input"),
            ("", "unrecognized_input"),
        ])
    func garbage(body: String, code: String) async throws {
        try await withWebhook { client in
            let response = try await client.post("/verify", body, contentType: "text/plain")
            try response.expectRejected(.badRequest, code)
        }
    }

    @Test("a tampered JWS gets 400 invalid_signature")
    func tampered() async throws {
        let body = try Vectors.text("jws/invalid_signature-tampered-payload.jws")
        try await withWebhook { client in
            let response = try await client.post("/verify", body)
            try response.expectRejected(.badRequest, "invalid_signature")
        }
    }

    @Test("a body over the limit, or an input over the verifier's own limit, gets 413")
    func oversized() async throws {
        let jws = try Vectors.text("jws/input_too_large-70000-bytes.jws")
        try await withWebhook { client in
            // Over the base64 of a 1 MiB receipt plus 4 KiB.
            let overLimit = String(repeating: "A", count: (1024 * 1024 + 2) / 3 * 4 + 4096 + 1)
            let response = try await client.post("/verify", overLimit, contentType: "text/plain")
            try response.expectRejected(.contentTooLarge, "input_too_large")

            // Within the body limit, over the verifier's 64 KiB JWS limit.
            let large = try await client.post("/verify", jws, contentType: "text/plain")
            #expect(large.status == .contentTooLarge)
            #expect(try large.errorCode() == "input_too_large")
        }
    }
}
