import Foundation
import ReceiptKit
import ReceiptKitFormats
import Testing

/// `VerifyReceiptTransaction`: the one renderer of verifyReceipt's per-transaction objects.
@Suite("verifyReceipt transaction objects")
struct VerifyReceiptTransactionTests {
    static func receipt(_ name: String = "receipt-sha256-der.der") throws -> AppReceipt {
        try ReceiptVerificationTests.verifier().verifyReceipt(ReceiptVerificationTests.receipt(name)).payload
    }

    static func object(_ json: String) throws -> [String: String] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String], "\(json)")
    }

    @Test("receipt.in_app is the renderer's output, element for element, byte for byte")
    func inAppIsTheRenderer() throws {
        for name in ["receipt-sha256-der.der", "receipt-unknown-values.der", "receipt-vpp-sandbox.der"] {
            let verifier = try ReceiptVerificationTests.verifier()
            let outcome = verifier.verify(input: try ReceiptVerificationTests.receipt(name))
            let receipt = try #require(try? verifier.verifyReceipt(ReceiptVerificationTests.receipt(name)).payload)
            let elements = receipt.inAppPurchases.map { VerifyReceiptTransaction($0, of: receipt).json }
            #expect(outcome.verifyReceiptJSON().contains(#""in_app":[\#(elements.joined(separator: ","))]}"#), "\(name)")
        }
    }

    @Test("a receipt's purchase renders alike from the receipt and from its normalized transaction, but for attribute 1719")
    func receiptAndNormalizedAgree() throws {
        let receipt = try Self.receipt()
        var introFlags: Set<String?> = []
        for purchase in receipt.inAppPurchases {
            let fromReceipt = VerifyReceiptTransaction(purchase, of: receipt)
            let fromRecord = VerifyReceiptTransaction(NormalizedTransaction(purchase, of: receipt))
            #expect(fromReceipt.transaction == fromRecord.transaction)
            var inApp = try Self.object(fromReceipt.json)
            var latest = try Self.object(fromRecord.json)
            introFlags.insert(inApp["is_in_intro_offer_period"])
            // The normalized transaction keeps the offer, not whether 1719 was written: the
            // receipt's own element follows the receipt, the stored one always says.
            if let written = inApp.removeValue(forKey: "is_in_intro_offer_period") {
                #expect(latest["is_in_intro_offer_period"] == written, "\(purchase.transactionId)")
            }
            #expect(latest.removeValue(forKey: "is_in_intro_offer_period") != nil)
            #expect(inApp == latest, "\(purchase.transactionId)")
        }
        #expect(introFlags == [nil, "true", "false"])
    }

    @Test("a StoreKit 2 transaction: Apple's members, in Apple's order")
    func jwsTransaction() throws {
        let transactions = try NormalizedTransactionDecodingTests.records().filter { $0.kind != .receipt }.flatMap(\.transactions)
        let subscription = try #require(transactions.first { $0.productType == "auto_renewable_subscription" && $0.ownershipType != nil })
        let json = VerifyReceiptTransaction(subscription).json
        let object = try Self.object(json)
        #expect(object["in_app_ownership_type"] == subscription.ownershipType?.uppercased())
        #expect(object["subscription_group_identifier"] == subscription.subscriptionGroupId)
        #expect(object["purchase_date_ms"] == subscription.purchaseDate.map { String($0.millisecondsSince1970) })
        let order = ["quantity", "product_id", "transaction_id", "original_transaction_id", "purchase_date", "original_purchase_date",
                     "expires_date", "cancellation_date", "web_order_line_item_id", "is_trial_period", "is_in_intro_offer_period",
                     "cancellation_reason", "promotional_offer_id", "offer_code_ref_name", "subscription_group_identifier",
                     "is_upgraded", "in_app_ownership_type", "app_account_token"]
        let written = json.matches(of: /"([a-z_]+)":/).map { String($0.1) }
            .filter { !$0.hasSuffix("_ms") && !$0.hasSuffix("_pst") }
        #expect(written == order.filter(written.contains), "\(json)")
        #expect(written.contains("subscription_group_identifier") && written.contains("in_app_ownership_type"))
    }

    @Test("cancellation: the transaction's revocation, or one the caller knows of, with Apple's reason code")
    func cancellation() throws {
        let decoded = try JSONDecoder().decode(NormalizedTransaction.self, from: Data(
            #"{"source":"jws","transaction_id":"7","purchase_date":"2025-06-20T08:15:30.000Z","revocation_reason":"refunded_due_to_issue","offer":{"type":"introductory","id":null,"discount_type":"pay_as_you_go","period":"P1M"}}"#.utf8))
        var element = VerifyReceiptTransaction(decoded)
        #expect(element.json == #"{"transaction_id":"7","purchase_date":"2025-06-20 08:15:30 Etc/GMT","purchase_date_ms":"1750407330000","purchase_date_pst":"2025-06-20 01:15:30 America/Los_Angeles","is_trial_period":"false","is_in_intro_offer_period":"true"}"#)
        element.cancellationDate = Timestamp(millisecondsSince1970: 1_750_845_600_000)
        let object = try Self.object(element.json)
        #expect(object["cancellation_date"] == "2025-06-25 10:00:00 Etc/GMT")
        #expect(object["cancellation_date_pst"] == "2025-06-25 03:00:00 America/Los_Angeles")
        #expect(object["cancellation_reason"] == "1")
    }
}
