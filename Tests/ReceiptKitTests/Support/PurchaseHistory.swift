import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// Builds a customer's purchase history as real JWS signed under the test PKI and verified by a
/// real verifier, so entitlement tests fold exactly what a server would receive.
///
/// Instants are given as days (fractions allowed) after ``origin``, 2025-06-01T00:00:00Z, inside
/// the test leaf's validity.
struct PurchaseHistory {
    static let bundleId = "com.receiptkit.example"
    static let origin: Int64 = 1_748_736_000_000
    static let monthly = "com.receiptkit.example.premium.monthly"
    static let yearly = "com.receiptkit.example.premium.yearly"

    let signer: TestSigner
    let verifier: AppStoreVerifier
    var environment = "Sandbox"
    /// The app the transactions and notifications name (``verifier`` accepts only
    /// ``bundleId``'s: verify another app's with a verifier of your own).
    var app = Self.bundleId

    init() throws {
        signer = try TestSigner.standard()
        verifier = try Fixtures.testVerifier(bundleId: Self.bundleId)
    }

    /// The instant `days` after the origin.
    static func day(_ days: Double) -> Timestamp {
        Timestamp(millisecondsSince1970: origin + Int64((days * 86_400_000).rounded()))
    }

    /// The JWS of an auto-renewable subscription transaction (or another type).
    func transactionJWS(
        id: String, original: String, product: String = monthly, type: String = "Auto-Renewable Subscription",
        purchased: Double, expires: Double?, signed: Double, revoked: Double? = nil, revocationReason: Int? = nil,
        upgraded: Bool = false, offerType: Int? = nil, offerDiscountType: String? = nil, offerId: String? = nil,
        ownership: String = "PURCHASED", appAccountToken: String? = nil, group: String? = "21581234"
    ) throws -> String {
        var payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": original, "bundleId": app,
            "productId": product, "type": type, "purchaseDate": Self.day(purchased).millisecondsSince1970,
            "originalPurchaseDate": Self.day(purchased).millisecondsSince1970, "quantity": 1,
            "inAppOwnershipType": ownership, "signedDate": Self.day(signed).millisecondsSince1970,
            "environment": environment, "transactionReason": "PURCHASE",
        ]
        payload["expiresDate"] = expires.map { Self.day($0).millisecondsSince1970 }
        payload["revocationDate"] = revoked.map { Self.day($0).millisecondsSince1970 }
        payload["revocationReason"] = revocationReason
        payload["isUpgraded"] = upgraded ? true : nil
        payload["offerType"] = offerType
        payload["offerDiscountType"] = offerDiscountType
        payload["offerIdentifier"] = offerId
        payload["appAccountToken"] = appAccountToken
        payload["subscriptionGroupIdentifier"] = type == "Auto-Renewable Subscription" ? group : nil
        return try sign(payload)
    }

    /// The JWS of a subscription's renewal info.
    func renewalInfoJWS(
        original: String, signed: Double, autoRenew: Bool = true, autoRenewProduct: String = monthly,
        product: String = monthly, billingRetry: Bool? = nil, gracePeriodEnds: Double? = nil, renewal: Double? = nil,
        expirationIntent: Int? = nil
    ) throws -> String {
        var payload: [String: Any] = [
            "originalTransactionId": original, "productId": product, "autoRenewProductId": autoRenewProduct,
            "autoRenewStatus": autoRenew ? 1 : 0, "signedDate": Self.day(signed).millisecondsSince1970,
            "environment": environment,
        ]
        payload["isInBillingRetryPeriod"] = billingRetry
        payload["gracePeriodExpiresDate"] = gracePeriodEnds.map { Self.day($0).millisecondsSince1970 }
        payload["renewalDate"] = renewal.map { Self.day($0).millisecondsSince1970 }
        payload["expirationIntent"] = expirationIntent
        return try sign(payload)
    }

    /// The JWS of a notification carrying a transaction and renewal info; `signed: nil` leaves
    /// the top-level `signedDate` out.
    func notificationJWS(
        type: String, subtype: String? = nil, uuid: String = UUID().uuidString, signed: Double?,
        transaction: String?, renewalInfo: String? = nil, status: Int? = nil
    ) throws -> String {
        var data: [String: Any] = ["bundleId": app, "environment": environment, "appAppleId": 1_234_567_890]
        data["signedTransactionInfo"] = transaction
        data["signedRenewalInfo"] = renewalInfo
        data["status"] = status
        var payload: [String: Any] = ["notificationType": type, "notificationUUID": uuid, "version": "2.0", "data": data]
        payload["subtype"] = subtype
        payload["signedDate"] = signed.map { Self.day($0).millisecondsSince1970 }
        return try sign(payload)
    }

    /// Signs a payload under the test PKI.
    func sign(_ payload: [String: Any]) throws -> String {
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try signer.sign(payload: String(decoding: json, as: UTF8.self))
    }

    /// Verifies any JWS and returns its record; a test that needs a rejection uses the verifier.
    func record(_ jws: String) throws -> VerificationRecord {
        try verifier.verify(jws)
    }

    /// Folds JWS into a new ledger.
    func ledger(_ jws: [String]) throws -> EntitlementLedger {
        var ledger = EntitlementLedger()
        for token in jws { ledger.add(try record(token)) }
        return ledger
    }

    /// The one state of a ledger built from `jws`, at `day`.
    func state(_ jws: [String], at day: Double) throws -> SubscriptionState? {
        let states = try ledger(jws).states(at: Self.day(day))
        #expect(states.count <= 1, "expected one key, got \(states.map(\.key))")
        return states.first
    }

    /// A random subscription history of two customers: renewals (some signed early), lapses with
    /// billing retry and grace, refunds and reversals, upgrades and one-time purchases, each as a
    /// transaction, renewal info or notification JWS.
    func randomHistory(_ random: inout SplitMix64) throws -> [String] {
        var tokens: [String] = []
        for customer in 0..<2 {
            let original = "\(3000 + customer * 100)"
            var start = Double(random.next() % 5)
            var serial = Int(original)!
            for _ in 0..<(2 + Int(random.next() % 4)) {
                serial += 1
                let end = start + 30
                let signed = start - Double(random.next() % 2) * 0.5
                let upgraded = random.next() % 7 == 0
                let transaction = try transactionJWS(
                    id: "\(serial)", original: original, purchased: start, expires: end, signed: max(signed, 0),
                    revoked: upgraded ? start + 3 : nil, upgraded: upgraded,
                    offerType: serial == Int(original)! + 1 ? 1 : nil,
                    offerDiscountType: serial == Int(original)! + 1 ? "FREE_TRIAL" : nil)
                tokens.append(random.next() % 2 == 0 ? transaction : try notificationJWS(
                    type: "DID_RENEW", signed: max(signed, 0), transaction: transaction,
                    renewalInfo: try renewalInfoJWS(original: original, signed: max(signed, 0), renewal: end)))
                switch random.next() % 4 {
                case 0:
                    tokens.append(try renewalInfoJWS(
                        original: original, signed: end + 0.2, billingRetry: true,
                        gracePeriodEnds: random.next() % 2 == 0 ? end + 6 : nil, renewal: end, expirationIntent: 2))
                    start = end + Double(1 + random.next() % 10)
                case 1:
                    tokens.append(try notificationJWS(
                        type: "REFUND", signed: start + 10,
                        transaction: try transactionJWS(
                            id: "\(serial)", original: original, purchased: start, expires: end, signed: start + 10,
                            revoked: random.next() % 2 == 0 ? start + 9 : nil, revocationReason: 1)))
                    start = end
                default:
                    start = end
                }
            }
            tokens.append(try transactionJWS(
                id: "\(9000 + customer)", original: "\(9000 + customer)", product: "com.receiptkit.example.coins",
                type: "Consumable", purchased: Double(random.next() % 50), expires: nil, signed: Double(random.next() % 50)))
        }
        return tokens
    }
}
