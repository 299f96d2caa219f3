import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// The ledger's contract: order, duplication and merging never change a state; it is Codable;
/// legacy receipts fold in; and its status agrees with the one Apple writes into notifications.
@Suite("Entitlement ledger")
struct EntitlementLedgerTests {
    let history: PurchaseHistory

    init() throws {
        history = try PurchaseHistory()
    }

    /// The state lines of a ledger at each of `days`, as `verify-receipt --state` writes them.
    static func lines(_ ledger: EntitlementLedger, at days: [Double]) -> [String] {
        days.flatMap { day in ledger.states(at: PurchaseHistory.day(day)).map { $0.json() } }
    }

    @Test("random histories, shuffled, duplicated and merged, give identical states", arguments: 0..<12)
    func orderIndependence(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let records = try history.randomHistory(&random).map(history.record)
        let reference = EntitlementLedger.folding(records)
        let days = stride(from: -1.0, through: 130, by: 3.5).map { $0 }
        let expected = Self.lines(reference, at: days)
        #expect(!expected.isEmpty)

        var duplicated = records + records.filter { _ in random.next() % 3 == 0 }
        duplicated.shuffle(using: &random)
        let shuffled = EntitlementLedger.folding(duplicated)
        #expect(Self.lines(shuffled, at: days) == expected)
        #expect(shuffled == reference, "duplicates are stored once")

        let split = Int(random.next() % UInt64(duplicated.count + 1))
        var merged = EntitlementLedger.folding(Array(duplicated[..<split]))
        merged.merge(EntitlementLedger.folding(Array(duplicated[split...])))
        merged.merge(merged)
        #expect(Self.lines(merged, at: days) == expected)
        #expect(merged == reference)
    }

    @Test("folding the same records again costs nothing: the ledger is unchanged")
    func duplicatesCostNothing() throws {
        var random = SplitMix64(seed: 99)
        let records = try history.randomHistory(&random).map(history.record)
        let once = EntitlementLedger.folding(records)
        var many = once
        for _ in 0..<50 { for record in records { many.add(record) } }
        #expect(many == once)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(try encoder.encode(many) == encoder.encode(once))
    }

    @Test("Codable: a decoded ledger equals the original and gives the same states; equal ledgers encode alike")
    func codable() throws {
        var random = SplitMix64(seed: 7)
        let records = try history.randomHistory(&random).map(history.record)
        let ledger = EntitlementLedger.folding(records)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(ledger)
        let decoded = try JSONDecoder().decode(EntitlementLedger.self, from: data)
        #expect(decoded == ledger)
        #expect(Self.lines(decoded, at: [1, 40, 90]) == Self.lines(ledger, at: [1, 40, 90]))
        #expect(try encoder.encode(EntitlementLedger.folding(records.reversed())) == data)
        let future = Data(String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\"version\":1", with: "\"version\":2").utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(EntitlementLedger.self, from: future) }
    }

    @Test("keys(of:) names the keys a record folds into: the ledger's own, and the renewal info's on request")
    func keysOfRecord() throws {
        let notification = try history.record(try history.notificationJWS(
            type: "DID_RENEW", signed: 1,
            transaction: try history.transactionJWS(id: "1002", original: "1001", purchased: 1, expires: 31, signed: 1),
            renewalInfo: try history.renewalInfoJWS(original: "1001", signed: 1)))
        let key = SubscriptionKey(bundleId: PurchaseHistory.bundleId, environment: "Sandbox", originalTransactionId: "1001")
        #expect(EntitlementLedger.keys(of: notification) == [key])
        #expect(EntitlementLedger.keys(of: notification, renewalInfoBundleId: PurchaseHistory.bundleId) == [key])
        var ledger = EntitlementLedger()
        ledger.add(notification)
        #expect(ledger.keys == EntitlementLedger.keys(of: notification))
        let renewalOnly = try history.record(try history.renewalInfoJWS(original: "7", signed: 1))
        #expect(EntitlementLedger.keys(of: renewalOnly).isEmpty)
        #expect(EntitlementLedger.keys(of: renewalOnly, renewalInfoBundleId: "b").map(\.originalTransactionId) == ["7"])
    }

    @Test("several apps: a notification's renewal info keys under its own app; one on its own names none, and joins by environment and id")
    func keysOfSeveralApps() throws {
        let pro = "com.receiptkit.pro"
        let verifier = AppStoreVerifier(
            .init(anchors: try Fixtures.testRootAnchors(), apps: [.init(bundleId: PurchaseHistory.bundleId), .init(bundleId: pro)],
                  environments: [.sandbox]),
            clock: Fixtures.fixedClock)
        let renewal = try history.renewalInfoJWS(original: "7", signed: 2, autoRenew: false)
        let notification = try verifier.verify(history.sign([
            "notificationType": "DID_CHANGE_RENEWAL_STATUS", "notificationUUID": "u",
            "signedDate": PurchaseHistory.day(2).millisecondsSince1970,
            "data": ["bundleId": pro, "environment": "Sandbox", "signedRenewalInfo": renewal] as [String: Any],
        ]))
        let key = SubscriptionKey(bundleId: pro, environment: "Sandbox", originalTransactionId: "7")
        #expect(EntitlementLedger.keys(of: notification) == [key])
        #expect(EntitlementLedger.keys(of: notification, renewalInfoBundleId: PurchaseHistory.bundleId) == [key],
                "the notification's own bundle id, which the verifier matched")

        let alone = try verifier.verify(renewal)
        #expect(alone.matchedApp == nil)
        #expect(EntitlementLedger.keys(of: alone).isEmpty)
        #expect(EntitlementLedger.keys(of: alone, renewalInfoBundleId: pro) == [key])

        // In the ledger, the renewal info on its own joins the key of pro's transaction 7, and
        // only that one: the other app's purchase 8 keeps its own state.
        var transaction: [String: Any] = [
            "transactionId": "7", "originalTransactionId": "7", "bundleId": pro, "productId": "m",
            "type": "Auto-Renewable Subscription", "purchaseDate": PurchaseHistory.day(1).millisecondsSince1970,
            "expiresDate": PurchaseHistory.day(31).millisecondsSince1970,
            "signedDate": PurchaseHistory.day(1).millisecondsSince1970, "environment": "Sandbox",
        ]
        var ledger = EntitlementLedger()
        ledger.add(try verifier.verify(history.sign(transaction)))
        transaction["transactionId"] = "8"
        transaction["originalTransactionId"] = "8"
        transaction["bundleId"] = PurchaseHistory.bundleId
        ledger.add(try verifier.verify(history.sign(transaction)))
        ledger.add(alone)
        let states = ledger.states(at: PurchaseHistory.day(3))
        #expect(states.map(\.key) == [
            SubscriptionKey(bundleId: PurchaseHistory.bundleId, environment: "Sandbox", originalTransactionId: "8"), key,
        ])
        #expect(states.map(\.willRenew) == [nil, false])
    }

    @Test("a verified legacy receipt's in-app purchases count from its creation date; cancellation revokes")
    func legacyReceipt() throws {
        let verifier = AppStoreVerifier(
            .init(anchors: try TrustAnchors(rootCertificates: [Fixtures.testVector("receipts/pki/root.der")])),
            clock: Fixtures.fixedClock)
        let receipt = try verifier.verifyReceipt(Fixtures.testVector("receipts/receipt-sha256-der.der"))
        var ledger = EntitlementLedger()
        ledger.add(receipt)
        let created = receipt.payload.receiptCreationDate
        #expect(ledger.states(at: Timestamp(millisecondsSince1970: created.millisecondsSince1970 - 1)).isEmpty)
        let states = ledger.states(at: created)
        #expect(states.count == Set(receipt.payload.inAppPurchases.map { $0.originalTransactionId ?? $0.transactionId }).count)
        for purchase in receipt.payload.inAppPurchases {
            let state = try #require(states.first { $0.key.originalTransactionId == purchase.originalTransactionId })
            #expect(state.key.bundleId == receipt.payload.bundleId)
            #expect(state.key.environment == "Sandbox")
            #expect(state.lastSignedDate == created)
            if purchase.cancellationDate != nil, state.latestTransactionId == purchase.transactionId {
                #expect(state.status == .revoked)
                #expect(state.revocationDate == purchase.cancellationDate)
            }
        }
        #expect(states.contains { $0.status == .revoked }, "the test receipt has a cancelled purchase")
        #expect(states.contains { $0.status == .active })
    }

    @Test("Apple's real sandbox receipt: its latest renewal decides, with Apple's status numbers",
          .requires(.sharedVectors))
    func realReceipt() throws {
        let receipt = try AppStoreVerifier().verifyReceipt(SharedReceipts.bytes("revenuecat-sandbox-sample1.b64"))
        var ledger = EntitlementLedger()
        ledger.add(receipt)
        let latest = try #require(receipt.payload.inAppPurchases.max { $0.purchaseDate < $1.purchaseDate })
        let expires = try #require(latest.expiresDate)
        let during = ledger.states(at: Timestamp(millisecondsSince1970: expires.millisecondsSince1970 - 1))
        #expect(during.count == 1)
        #expect(during.first?.latestTransactionId == latest.transactionId)
        #expect(during.first?.status == .active)
        #expect(during.first?.appleStatus == 1)
        #expect(ledger.states(at: expires).first?.status == .expired)
    }

    // MARK: Apple's own status

    /// A notification's state, from that notification alone, as of its `signedDate`.
    static func appleAgreement(_ notification: VerificationRecord) throws {
        let payload = try #require(notification.notification)
        let status = try #require(payload.data?.status)
        var ledger = EntitlementLedger()
        ledger.add(notification)
        let states = ledger.states(at: try #require(payload.signedDate))
        #expect(states.count == 1, "\(payload.rawNotificationType ?? "?")")
        let state = try #require(states.first)
        #expect(state.status.appleStatus == Int(status),
                "\(payload.rawNotificationType ?? "?"): Apple wrote \(status), the ledger says \(state.status.rawValue)")
        // Apple documents `status` for auto-renewable subscriptions; the state's `apple_status`
        // is null for anything else (a test vector may still carry one, for a consumable).
        let isAutoRenewable = notification.transactions.first?.productType == "auto_renewable_subscription"
        #expect(state.appleStatus == (isAutoRenewable ? Int(status) : nil))
    }

    @Test("every project notification vector with data.status: the ledger agrees with Apple's status")
    func appleStatusProjectVectors() throws {
        // Which vectors carry a status, a transaction and renewal info, read from their
        // payloads without verifying, so that a vector that stops verifying fails the test
        // instead of dropping out of it.
        let carryingStatus = try ManifestVector.load("jws").filter { vector in
            guard vector.file.hasSuffix(".jws"), vector.expectedCode == nil else { return false }
            let segments = try Fixtures.testVectorText(vector.file).split(separator: ".", omittingEmptySubsequences: false)
            guard segments.count == 3, let payload = Self.base64URLDecoded(segments[1]),
                  let json = try? JSONSerialization.jsonObject(with: payload) as? [String: Any],
                  let data = json["data"] as? [String: Any]
            else { return false }
            return data["status"] != nil && data["signedTransactionInfo"] != nil && data["signedRenewalInfo"] != nil
        }
        try #require(!carryingStatus.isEmpty, "no vector in TestVectors/jws/manifest.json carries data.status")
        for vector in carryingStatus {
            let record = try vector.verifier().verify(Fixtures.testVectorText(vector.file))
            #expect(record.notification?.data?.status != nil, "\(vector.name)")
            #expect(!record.transactions.isEmpty && record.renewalInfo != nil, "\(vector.name)")
            try Self.appleAgreement(record)
        }
    }

    /// A base64url segment of a compact JWS, decoded.
    static func base64URLDecoded(_ segment: Substring) -> Data? {
        var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Data(base64Encoded: text)
    }

    @Test("Apple's model notifications in ../shared/vectors, signed under the test PKI: the ledger agrees",
          .requires(.sharedVectors),
          arguments: ["signedNotification.json", "signedConsumptionRequestNotification.json"])
    func appleStatusSharedModels(file: String) throws {
        func model(_ name: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(Fixtures.sharedVector("jws/models/" + name))) as? [String: Any])
        }
        var notification = try model(file)
        var data = try #require(notification["data"] as? [String: Any])
        data["signedTransactionInfo"] = try history.sign(try model("signedTransaction.json"))
        data["signedRenewalInfo"] = try history.sign(try model("signedRenewalInfo.json"))
        notification["data"] = data
        // Apple's models are dated 2023-10, before the test leaf's validity: validate in it.
        let verifier = try Fixtures.testVerifier(validationTime: .fixed(PurchaseHistory.day(0)))
        try Self.appleAgreement(try verifier.verify(try history.sign(notification)))
    }

    @Test("a customer's notifications, each carrying Apple's status, agree with the ledger's at every step")
    func appleStatusStory() throws {
        let steps: [(type: String, transaction: String, renewal: String, status: Int, at: Double)] = [
            ("SUBSCRIBED",
             try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 7, signed: 0,
                                        offerType: 1, offerDiscountType: "FREE_TRIAL"),
             try history.renewalInfoJWS(original: "1001", signed: 0, renewal: 7), 1, 0),
            ("DID_RENEW",
             try history.transactionJWS(id: "1002", original: "1001", purchased: 7, expires: 37, signed: 6.99),
             try history.renewalInfoJWS(original: "1001", signed: 6.99, renewal: 37), 1, 6.99),
            ("DID_FAIL_TO_RENEW",
             try history.transactionJWS(id: "1002", original: "1001", purchased: 7, expires: 37, signed: 37.01),
             try history.renewalInfoJWS(original: "1001", signed: 37.01, billingRetry: true, gracePeriodEnds: 43,
                                        renewal: 37, expirationIntent: 2), 4, 37.01),
            ("GRACE_PERIOD_EXPIRED",
             try history.transactionJWS(id: "1002", original: "1001", purchased: 7, expires: 37, signed: 43.01),
             try history.renewalInfoJWS(original: "1001", signed: 43.01, billingRetry: true, gracePeriodEnds: 43,
                                        renewal: 37, expirationIntent: 2), 3, 43.01),
            ("DID_RENEW",
             try history.transactionJWS(id: "1003", original: "1001", purchased: 45, expires: 75, signed: 45),
             try history.renewalInfoJWS(original: "1001", signed: 45, renewal: 75), 1, 45),
            ("EXPIRED",
             try history.transactionJWS(id: "1003", original: "1001", purchased: 45, expires: 75, signed: 75.01),
             try history.renewalInfoJWS(original: "1001", signed: 75.01, autoRenew: false, expirationIntent: 1), 2, 75.01),
            ("REFUND",
             try history.transactionJWS(id: "1003", original: "1001", purchased: 45, expires: 75, signed: 76,
                                        revoked: 76, revocationReason: 0),
             try history.renewalInfoJWS(original: "1001", signed: 76, autoRenew: false, expirationIntent: 1), 5, 76),
        ]
        for step in steps {
            let notification = try history.notificationJWS(
                type: step.type, signed: step.at, transaction: step.transaction, renewalInfo: step.renewal,
                status: step.status)
            try Self.appleAgreement(try history.record(notification))
        }
    }
}

extension EntitlementLedger {
    static func folding(_ records: some Sequence<VerificationRecord>) -> EntitlementLedger {
        var ledger = EntitlementLedger()
        for record in records { ledger.add(record) }
        return ledger
    }
}
