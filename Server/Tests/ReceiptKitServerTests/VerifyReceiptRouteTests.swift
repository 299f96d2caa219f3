import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Testing

@Suite("POST /verifyReceipt")
struct VerifyReceiptRouteTests {
    @Test("Apple's response shape and numeric statuses", arguments: Backend.available)
    func statuses(backend: Backend) async throws {
        let sandbox = try Vectors.text("receipts/receipt-request-body.json")
        let production = Data(try Vectors.bytes("receipts/receipt-production.der")).base64EncodedString()
        try await TestServer.run(backend) { server in
            let verified = try await server.post("/verifyReceipt", sandbox)
            #expect(verified.status == .ok)
            let body = try verified.json()
            #expect(body["status"] as? Int == 0, "\(verified.text)")
            #expect(body["environment"] as? String == "Sandbox")
            let receipt = try #require(body["receipt"] as? [String: Any])
            #expect(receipt["bundle_id"] as? String == "com.receiptkit.example")
            let inApp = try #require(receipt["in_app"] as? [[String: Any]])
            let latest = try #require(body["latest_receipt_info"] as? [[String: Any]])
            let pending = try #require(body["pending_renewal_info"] as? [[String: Any]])
            #expect(!inApp.isEmpty)
            #expect(latest.count == pending.count)
            for info in latest {
                #expect(info["original_transaction_id"] is String)
                #expect(info["status"] is String)
            }

            // A Production receipt sent to this Sandbox service: 21008, as Apple's sandbox said.
            let wrongEnvironment = try await server.post("/verifyReceipt", #"{"receipt-data":"\#(production)"}"#)
            #expect(wrongEnvironment.status == .ok)
            #expect(try wrongEnvironment.json()["status"] as? Int == 21008)
            #expect(try wrongEnvironment.errorCode() == "environment_mismatch")

            for malformed in [#"{"receipt-data":"bm90IGEgcmVjZWlwdA=="}"#, "not json", #"{"password":"x"}"#] {
                let answer = try await server.post("/verifyReceipt", malformed)
                #expect(answer.status == .ok)
                #expect(try answer.json()["status"] as? Int == 21002, "\(malformed): \(answer.text)")
            }

            let tampered = try Vectors.bytes("receipts/invalid_signature-tampered-signature.der")
            let notAuthenticated = try await server.post("/verifyReceipt", #"{"receipt-data":"\#(Data(tampered).base64EncodedString())"}"#)
            #expect(try notAuthenticated.json()["status"] as? Int == 21003)
        }
    }
}
