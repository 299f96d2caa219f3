import Foundation
import ReceiptKit
import Testing

/// The rule functions ReceiptKit gives a store, a console or a compatibility endpoint, so that none
/// of them restates a rule: rule 1's winning copies, rule 2's rank, and introductory offer
/// eligibility.
@Suite("Rule functions: winning copies, rule 2's rank, introductory offer eligibility")
struct RuleFunctionTests {
    static let key = SubscriptionKey(bundleId: "com.example", environment: "Sandbox", originalTransactionId: "100")

    /// A transaction of ``key`` as a record renders it, with its ledger copy.
    static func transaction(
        _ id: String, product: String = "monthly", group: String? = "g1", purchase: Int64, expires: Int64? = nil,
        signed: Int64, upgraded: Bool = false, revoked: Int64? = nil, offer: [String: Any]? = nil
    ) throws -> (NormalizedTransaction, LedgerCopy) {
        func date(_ seconds: Int64) -> String { Timestamp(millisecondsSince1970: seconds * 1000).iso8601 }
        var members: [String: Any] = [
            "source": "jws", "bundle_id": key.bundleId, "environment": key.environment, "transaction_id": id,
            "original_transaction_id": key.originalTransactionId, "product_id": product,
            "product_type": "auto_renewable_subscription", "purchase_date": date(purchase),
            "expires_date": date(expires ?? purchase + 3600), "signed_date": date(signed), "is_upgraded": upgraded,
        ]
        if let group { members["subscription_group_id"] = group }
        if let revoked { members["revocation_date"] = date(revoked) }
        if let offer { members["offer"] = offer }
        let transaction = try JSONDecoder().decode(NormalizedTransaction.self, from: JSONSerialization.data(withJSONObject: members))
        let copy = try #require(EntitlementLedger.copy(
            of: transaction, receiptCreationDate: nil, notificationSignedDate: nil, isRevocation: false,
            validatedAt: Timestamp(millisecondsSince1970: signed * 1000)))
        return (transaction, copy)
    }

    @Test("the winning copy of each transaction is the ledger's, whatever the order and however many times each is offered")
    func winningCopies() throws {
        let copies = [
            try Self.transaction("1", purchase: 0, signed: 10),
            try Self.transaction("1", purchase: 0, signed: 20, revoked: 15),  // signed later: wins
            try Self.transaction("1", purchase: 0, expires: 7200, signed: 20),  // same instant: the revocation wins
            try Self.transaction("2", purchase: 3600, signed: 30),
        ].map(\.1)
        var orders: [[LedgerCopy]] = [copies, copies.reversed(), copies + copies, [copies[2], copies[0], copies[3], copies[1]]]
        orders.append(orders[0].shuffled())
        var winners: [[String: LedgerCopy]] = []
        for order in orders {
            var fold = WinningCopies<Int>()
            for (index, copy) in order.enumerated() { fold.offer(copy, with: index) }
            #expect(fold.all.count == 2)
            winners.append(Dictionary(uniqueKeysWithValues: fold.all.map { ($0.copy.transactionId ?? "", $0.copy) }))
            #expect(fold.transaction("1", of: Self.key)?.copy == copies[1])
            #expect(fold.transaction("3", of: Self.key) == nil)
        }
        #expect(Set(winners.map { $0["1"] }).count == 1)
        #expect(winners[0]["1"]?.revocationDate != nil)
        // What the ledger keeps of the same copies.
        var ledger = EntitlementLedger()
        for copy in copies { ledger.insert(copy) }
        #expect(ledger.state(for: Self.key, at: Timestamp(millisecondsSince1970: 40_000))?.status == .active)
    }

    @Test("rule 2's rank: not upgraded first, then the later purchase, then the later expiry; the ledger's current transaction ranks highest")
    func rank() throws {
        let old = try Self.transaction("1", purchase: 0, signed: 0).1
        let later = try Self.transaction("2", purchase: 100, expires: 200, signed: 1).1
        let longer = try Self.transaction("3", purchase: 100, expires: 900, signed: 2).1
        let upgraded = try Self.transaction("4", purchase: 500, expires: 1000, signed: 3, upgraded: true).1
        let ranks = try [old, later, longer, upgraded].map { try #require($0.rank) }
        #expect(ranks[3] < ranks[0] && ranks[0] < ranks[1] && ranks[1] < ranks[2])
        #expect(ranks.sorted() == [ranks[3], ranks[0], ranks[1], ranks[2]])
        var ledger = EntitlementLedger()
        for copy in [upgraded, longer, old, later] { ledger.insert(copy) }
        #expect(ledger.state(for: Self.key, at: Timestamp(millisecondsSince1970: 150_000))?.latestTransactionId == "3")
        // Every transaction upgraded away: the highest-ranked of them stands in.
        var upgradedOnly = EntitlementLedger()
        upgradedOnly.insert(upgraded)
        upgradedOnly.insert(try Self.transaction("5", purchase: 600, signed: 4, upgraded: true).1)
        #expect(upgradedOnly.state(for: Self.key, at: Timestamp(millisecondsSince1970: 700_000))?.latestTransactionId == "5")
        let renewalInfo = try LedgerCopy(
            jsonBytes: Array(#"{"environment":"Sandbox","originalTransactionId":"100","knownFrom":0,"isInBillingRetryPeriod":false}"#.utf8),
            kind: .renewalInfo)
        #expect(renewalInfo.rank == nil)
    }

    @Test("introductory offer eligibility: one per subscription group, a free trial counting as one")
    func introductoryOfferEligibility() throws {
        let trial = try Self.transaction("1", purchase: 0, signed: 0, offer: ["type": "introductory", "discount_type": "free_trial"]).0
        let plain = try Self.transaction("2", purchase: 0, signed: 0).0
        let otherGroup = try Self.transaction("3", product: "yearly", group: "g2", purchase: 0, signed: 0).0
        #expect(IntroductoryOfferEligibility.isEligible(productId: "monthly", transactions: []))
        #expect(IntroductoryOfferEligibility.isEligible(productId: "monthly", transactions: [plain]))
        #expect(!IntroductoryOfferEligibility.isEligible(productId: "monthly", transactions: [plain, trial]))
        // Another group's product: its own group had no offer.
        #expect(IntroductoryOfferEligibility.isEligible(productId: "yearly", transactions: [trial, otherGroup]))
        // A product no transaction names: any introductory offer counts.
        #expect(!IntroductoryOfferEligibility.isEligible(productId: "weekly", transactions: [trial]))
        #expect(IntroductoryOfferEligibility.isEligible(productId: "weekly", transactions: [plain]))
        let paidUpFront = try Self.transaction("4", purchase: 0, signed: 0, offer: ["type": "introductory", "discount_type": "pay_up_front"]).0
        #expect(!IntroductoryOfferEligibility.isEligible(productId: "monthly", transactions: [paidUpFront]))
    }
}
