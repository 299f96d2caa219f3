import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("POST /verifyReceipt")
struct VerifyReceiptRouteTests {
    @Test("Apple's response shape and numeric statuses", arguments: Backend.available)
    func statuses(backend: Backend) async throws {
        // The vector asks for exclude-old-transactions; the same receipt without it, too.
        let sandbox = try Vectors.text("receipts/receipt-request-body.json")
        let request = try #require(try JSONSerialization.jsonObject(with: Data(sandbox.utf8)) as? [String: Any])
        #expect(request["exclude-old-transactions"] as? Bool == true)
        let allTransactions = #"{"receipt-data":"\#(try #require(request["receipt-data"] as? String))"}"#
        let production = Data(try Vectors.bytes("receipts/receipt-production.der")).base64EncodedString()
        try await TestServer.run(backend) { server in
            let verified = try await server.post("/verifyReceipt", allTransactions)
            #expect(verified.status == .ok)
            let body = try verified.json()
            #expect(body["status"] as? Int == 0, "\(verified.text)")
            #expect(body["environment"] as? String == "Sandbox")
            let receipt = try #require(body["receipt"] as? [String: Any])
            #expect(receipt["bundle_id"] as? String == "com.receiptkit.example")
            let inApp = try #require(receipt["in_app"] as? [[String: Any]])
            let latest = try #require(body["latest_receipt_info"] as? [[String: Any]])
            #expect(!inApp.isEmpty)
            #expect(latest.count == inApp.count, "\(verified.text)")
            Self.expectAppleShape(latest)
            // Nothing newer is known of these transactions than the receipt itself, and both
            // arrays come from ReceiptKit's one renderer (VerifyReceiptTransaction), so each
            // element is its in_app element member for member, with no member more or less —
            // but is_in_intro_offer_period: the stored (normalized) transaction always states it,
            // the receipt writes it for subscriptions only.
            for purchase in inApp {
                let id = try #require(purchase["transaction_id"] as? String)
                var info = try #require(latest.first { $0["transaction_id"] as? String == id }, "\(id) is not in latest_receipt_info")
                var own = purchase
                let storedFlag = try #require(info.removeValue(forKey: "is_in_intro_offer_period") as? String, "\(id)")
                if let written = own.removeValue(forKey: "is_in_intro_offer_period") {
                    #expect(storedFlag == written as? String, "\(id).is_in_intro_offer_period")
                }
                #expect(Set(info.keys) == Set(own.keys), "\(id): \(info.keys.sorted()) ≠ \(own.keys.sorted())")
                for (member, value) in own {
                    #expect(info[member] as? String == value as? String, "\(id).\(member): \(info[member] ?? "absent") ≠ \(value)")
                }
            }
            // Each of the receipt's auto-renewable subscriptions has an element, though no
            // renewal info is known yet: its id and product.
            let pending = try #require(body["pending_renewal_info"] as? [[String: Any]])
            let subscriptions = Set(inApp.filter { $0["web_order_line_item_id"] != nil }.compactMap { $0["original_transaction_id"] as? String })
            #expect(Set(pending.compactMap { $0["original_transaction_id"] as? String }) == subscriptions, "\(pending)")
            #expect(subscriptions.contains("2000000901234567"))
            for element in pending {
                #expect(element["product_id"] is String && element["auto_renew_status"] == nil, "\(element)")
            }

            // exclude-old-transactions: each subscription's latest transaction only.
            let excluding = try await server.post("/verifyReceipt", sandbox).json()
            let latestOnly = try #require(excluding["latest_receipt_info"] as? [[String: Any]])
            let subscriptionIds = latestOnly.filter { $0["web_order_line_item_id"] != nil }.compactMap { $0["original_transaction_id"] as? String }
            #expect(subscriptionIds.count == Set(subscriptionIds).count && subscriptionIds.count == subscriptions.count, "\(latestOnly)")
            #expect(latestOnly.count < latest.count)

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

    /// The test receipt's subscription renewed, then refunded, by notification after the receipt.
    struct RenewalStory {
        /// The receipt's subscription: original 2000000901234567, its latest period bought
        /// 2025-05-20T08:15:30Z, expiring 2025-06-20T08:15:30Z (see TestVectors/receipts).
        static let original = "2000000901234567"
        static let renewed = ms("2025-06-20T08:15:30Z")
        static let refunded = ms("2025-06-25T10:00:00Z")
        /// After both notifications.
        static let now = Date(timeIntervalSince1970: Double(ms("2025-07-01T00:00:00Z")) / 1000)

        let receiptData: String
        let receiptBody: String
        let didRenew: String
        let refund: String

        init() throws {
            let request = try #require(
                try JSONSerialization.jsonObject(with: Data(Vectors.text("receipts/receipt-request-body.json").utf8)) as? [String: Any])
            receiptData = try #require(request["receipt-data"] as? String)
            receiptBody = #"{"receipt-data":"\#(receiptData)"}"#
            let p = try Payloads()
            let (original, renewed, refunded) = (Self.original, Self.renewed, Self.refunded)
            let renewal = try p.transaction(
                id: "2000000951239999", original: original, purchase: renewed, expires: renewed + 30 * day, signed: renewed + 1000,
                token: "5a4c1e0c-6a0b-4d8f-9a8e-2f1d3c4b5a69", webOrderLineItemId: "2000000098769999")
            let renewalInfo = try p.renewalInfo(original: original, signed: renewed + 1000, renewalDate: renewed + 30 * day)
            didRenew = try p.notification(type: "DID_RENEW", signed: renewed + 2000, transaction: renewal, renewalInfo: renewalInfo)
            refund = try p.notification(
                type: "REFUND", signed: refunded + 1000,
                transaction: p.transaction(
                    id: "2000000951239999", original: original, purchase: renewed, expires: renewed + 30 * day, signed: refunded,
                    token: "5a4c1e0c-6a0b-4d8f-9a8e-2f1d3c4b5a69", revocation: refunded, revocationReason: 1,
                    webOrderLineItemId: "2000000098769999"),
                renewalInfo: p.renewalInfo(original: original, signed: refunded, autoRenew: false, expirationIntent: 1))
        }
    }

    @Test("latest_receipt_info lists renewals and refunds that arrived by notification after the receipt, newest first", arguments: Backend.available)
    func renewalsAfterTheReceipt(backend: Backend) async throws {
        let story = try RenewalStory()
        let (receiptData, receiptBody, didRenew, refund) = (story.receiptData, story.receiptBody, story.didRenew, story.refund)
        let (original, renewed, refunded) = (RenewalStory.original, RenewalStory.renewed, RenewalStory.refunded)

        try await TestServer.run(backend, now: RenewalStory.now) { server in
            let before = try await server.post("/verifyReceipt", receiptBody).json()
            let countBefore = try #require(before["latest_receipt_info"] as? [[String: Any]]).count

            #expect(try await server.notify(didRenew).status == .ok)
            let afterRenewal = try await server.post("/verifyReceipt", receiptBody).json()
            let latest = try #require(afterRenewal["latest_receipt_info"] as? [[String: Any]])
            #expect(latest.count == countBefore + 1)
            Self.expectAppleShape(latest)
            let newest = try #require(latest.first)
            #expect(newest["transaction_id"] as? String == "2000000951239999", "\(latest)")
            #expect(newest["original_transaction_id"] as? String == original)
            #expect(newest["product_id"] as? String == Payloads.productId)
            #expect(newest["purchase_date"] as? String == "2025-06-20 08:15:30 Etc/GMT")
            #expect(newest["purchase_date_ms"] as? String == String(renewed))
            #expect(newest["purchase_date_pst"] as? String == "2025-06-20 01:15:30 America/Los_Angeles")
            #expect(newest["expires_date_ms"] as? String == String(renewed + 30 * day))
            #expect(newest["quantity"] as? String == "1")
            #expect(newest["is_trial_period"] as? String == "false")
            #expect(newest["is_in_intro_offer_period"] as? String == "false")
            #expect(newest["web_order_line_item_id"] as? String == "2000000098769999")
            #expect(newest["subscription_group_identifier"] as? String == "21581234")
            #expect(newest["in_app_ownership_type"] as? String == "PURCHASED")
            #expect(newest["cancellation_date"] == nil)
            let pending = try #require(afterRenewal["pending_renewal_info"] as? [[String: Any]])
            let renewalElement = try #require(pending.first { $0["original_transaction_id"] as? String == original }, "\(pending)")
            #expect(renewalElement["auto_renew_status"] as? String == "1")
            #expect(renewalElement["auto_renew_product_id"] as? String == Payloads.productId)
            #expect(renewalElement["product_id"] as? String == Payloads.productId)
            #expect(renewalElement.values.allSatisfy { $0 is String })

            // exclude-old-transactions: the latest transaction of each subscription only.
            let excluding = #"{"receipt-data":"\#(receiptData)","exclude-old-transactions":true}"#
            let onlyLatest = try #require(try await server.post("/verifyReceipt", excluding).json()["latest_receipt_info"] as? [[String: Any]])
            let ofOriginal = onlyLatest.filter { $0["original_transaction_id"] as? String == original }
            #expect(ofOriginal.map { $0["transaction_id"] as? String } == ["2000000951239999"], "\(onlyLatest)")
            #expect(onlyLatest.count < latest.count)

            // The refund: the same transaction, revoked, is listed once, with its cancellation.
            #expect(try await server.notify(refund).status == .ok)
            let afterRefund = try await server.post("/verifyReceipt", receiptBody).json()
            let revokedList = try #require(afterRefund["latest_receipt_info"] as? [[String: Any]])
            #expect(revokedList.count == countBefore + 1)
            Self.expectAppleShape(revokedList)
            let revoked = try #require(revokedList.first)
            #expect(revoked["transaction_id"] as? String == "2000000951239999")
            #expect(revoked["cancellation_date_ms"] as? String == String(refunded))
            #expect(revoked["cancellation_date"] as? String == "2025-06-25 10:00:00 Etc/GMT")
            #expect(revoked["cancellation_reason"] as? String == "1")
            let pendingAfterRefund = try #require(afterRefund["pending_renewal_info"] as? [[String: Any]])
            let stopped = try #require(pendingAfterRefund.first { $0["original_transaction_id"] as? String == original })
            #expect(stopped["auto_renew_status"] as? String == "0")
            #expect(stopped["expiration_intent"] as? String == "1")
        }
    }

    @Test("/verifyReceipt and the entitlement routes agree on tied and revoked copies, in either order",
          arguments: Backend.available, [false, true])
    func agreesWithEntitlements(backend: Backend, refundFirst: Bool) async throws {
        let request = try #require(
            try JSONSerialization.jsonObject(with: Data(Vectors.text("receipts/receipt-request-body.json").utf8)) as? [String: Any])
        let receiptBody = #"{"receipt-data":"\#(try #require(request["receipt-data"] as? String))"}"#
        let p = try Payloads()
        // The receipt's subscription (TestVectors/receipts) renewed by notification, and two
        // copies of that renewal signed at the same instant: one plain, one refunded. Rule 1's
        // fixed order picks the refunded one whichever arrives last.
        let original = "2000000901234567"
        let renewed = ms("2025-06-20T08:15:30Z")
        let signed = ms("2025-06-25T10:00:00Z")
        let refundedAt = signed - 60_000
        func copy(revoked: Bool) throws -> String {
            try p.transaction(
                id: "2000000951239999", original: original, purchase: renewed, expires: renewed + 30 * day, signed: signed,
                token: "5a4c1e0c-6a0b-4d8f-9a8e-2f1d3c4b5a69", revocation: revoked ? refundedAt : nil,
                revocationReason: revoked ? 1 : nil, webOrderLineItemId: "2000000098769999")
        }
        let plain = try p.notification(type: "DID_RENEW", signed: signed + 1000, transaction: try copy(revoked: false), renewalInfo: nil)
        let refund = try p.notification(type: "REFUND", signed: signed + 2000, transaction: try copy(revoked: true), renewalInfo: nil)
        try await TestServer.run(backend, now: Date(timeIntervalSince1970: Double(ms("2025-07-01T00:00:00Z")) / 1000)) { server in
            for jws in refundFirst ? [refund, plain] : [plain, refund] {
                #expect(try await server.notify(jws).status == .ok)
            }
            let state = try await server.get("/v1/subscriptions/\(original)").json()
            #expect(state["status"] as? String == "revoked", "\(state)")
            #expect(state["latest_transaction_id"] as? String == "2000000951239999")
            #expect(state["revocation_date"] as? String == Timestamp(millisecondsSince1970: refundedAt).iso8601)
            let latest = try #require(try await server.post("/verifyReceipt", receiptBody).json()["latest_receipt_info"] as? [[String: Any]])
            let listed = try #require(latest.first { $0["transaction_id"] as? String == "2000000951239999" }, "\(latest)")
            #expect(listed["cancellation_date_ms"] as? String == String(refundedAt), "\(listed)")
            #expect(listed["cancellation_reason"] as? String == "1", "\(listed)")
        }
    }

    @Test("a body with a duplicate member is refused, the member named", arguments: Backend.available)
    func duplicateMembers(backend: Backend) async throws {
        try await TestServer.run(backend) { server in
            let answer = try await server.post("/verifyReceipt", #"{"receipt-data":"AAAA","receipt-data":"BBBB"}"#)
            #expect(answer.status == .ok)
            let json = try answer.json()
            #expect(json["status"] as? Int == 21002, "\(json)")
            #expect(answer.text.contains("duplicate") && answer.text.contains("receipt-data"), "\(answer.text)")
        }
    }

    /// Apple's rules for `latest_receipt_info`: string values only, dates as `X` (Etc/GMT), `X_ms`
    /// and `X_pst` (America/Los_Angeles), newest purchase first. (Apple's own members:
    /// ``appleMembers()``.)
    static func expectAppleShape(_ latest: [[String: Any]], sourceLocation: SourceLocation = #_sourceLocation) {
        let dateMembers = ["purchase_date", "original_purchase_date", "expires_date", "cancellation_date"]
        for info in latest {
            #expect(info.values.allSatisfy { $0 is String }, "not all strings: \(info)", sourceLocation: sourceLocation)
            for member in ["quantity", "product_id", "transaction_id", "original_transaction_id", "purchase_date", "is_trial_period"] {
                #expect(info[member] != nil, "no \(member) in \(info)", sourceLocation: sourceLocation)
            }
            #expect(info["status"] == nil && info["entitled"] == nil, "a state, not a transaction: \(info)", sourceLocation: sourceLocation)
            for date in dateMembers where info[date] != nil {
                let text = info[date] as? String ?? ""
                let pst = info[date + "_pst"] as? String ?? ""
                #expect(text.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d Etc/GMT$"#, options: .regularExpression) != nil, "\(date): \(text)", sourceLocation: sourceLocation)
                #expect(pst.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d America/Los_Angeles$"#, options: .regularExpression) != nil, "\(date)_pst: \(pst)", sourceLocation: sourceLocation)
                #expect(Int64(info[date + "_ms"] as? String ?? "") != nil, "\(date)_ms", sourceLocation: sourceLocation)
            }
        }
        let purchases = latest.map { Int64($0["purchase_date_ms"] as? String ?? "") ?? 0 }
        #expect(purchases == purchases.sorted(by: >), "not newest first: \(purchases)", sourceLocation: sourceLocation)

    }

    @Test("a renewed subscription's element carries every member Apple's own carry (Apple's 2020 sandbox response in ../shared/vectors)",
          .requires(.sharedVectors))
    func appleMembers() async throws {
        let golden = try #require(Prerequisite.sharedVectorsURL).appendingPathComponent("receipts/revenuecat-sandbox-sample1.verifyReceipt.json")
        let apple = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: golden)) as? [String: Any])
        let appleElement = try #require((apple["latest_receipt_info"] as? [[String: Any]])?.first, "no latest_receipt_info in \(golden.path)")
        let appleMembers = Set(appleElement.keys)
        #expect(appleMembers.isSuperset(of: ["subscription_group_identifier", "web_order_line_item_id"]),
                "Apple's element is a subscription's: \(appleMembers.sorted())")
        let story = try RenewalStory()
        try await TestServer.run(.sqlite, now: RenewalStory.now) { server in
            #expect(try await server.notify(story.didRenew).status == .ok)
            let body = try await server.post("/verifyReceipt", story.receiptBody).json()
            let latest = try #require(body["latest_receipt_info"] as? [[String: Any]])
            let renewed = try #require(latest.first { $0["transaction_id"] as? String == "2000000951239999" }, "\(latest)")
            let missing = appleMembers.subtracting(renewed.keys)
            #expect(missing.isEmpty, "members Apple's elements carry and this one lacks: \(missing.sorted())")
        }
    }
}
