import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// Each rule of `docs/entitlement-state.md`, on JWS signed under the test PKI and verified.
/// Days are counted from 2025-06-01T00:00:00Z (``PurchaseHistory/day(_:)``).
@Suite("Entitlement state rules")
struct EntitlementRuleTests {
    let history: PurchaseHistory

    init() throws {
        history = try PurchaseHistory()
    }

    /// A one-week free trial bought on day 0, renewing monthly, with its renewal info.
    func trialPurchase() throws -> [String] {
        [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 7, signed: 0,
                                       offerType: 1, offerDiscountType: "FREE_TRIAL",
                                       appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138"),
            try history.renewalInfoJWS(original: "1001", signed: 0, renewal: 7),
        ]
    }

    @Test("a purchase with a free trial is active and entitled, with its offer and token")
    func purchase() throws {
        let state = try #require(try history.state(try trialPurchase(), at: 1))
        #expect(state.status == .active)
        #expect(state.appleStatus == 1)
        #expect(state.isEntitled)
        #expect(state.isTrial)
        #expect(state.offer?.type == "introductory")
        #expect(state.offer?.discountType == "free_trial")
        #expect(state.willRenew == true)
        #expect(state.expiresDate == PurchaseHistory.day(7))
        #expect(state.latestTransactionId == "1001")
        #expect(state.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(state.productType == "auto_renewable_subscription")
        #expect(state.subscriptionGroupId == "21581234")
        #expect(state.lastSignedDate == PurchaseHistory.day(0))
        #expect(state.asOf == PurchaseHistory.day(1))
        #expect(state.key == SubscriptionKey(bundleId: PurchaseHistory.bundleId, environment: "Sandbox",
                                             originalTransactionId: "1001"))
    }

    @Test("a renewal signed before its period starts is the current transaction already")
    func renewalSignedEarly() throws {
        // Apple signs the renewal a day before the trial ends; at day 6.5 its purchase is ahead.
        let renewal = try history.transactionJWS(id: "1002", original: "1001", purchased: 7, expires: 37, signed: 6)
        let state = try #require(try history.state(try trialPurchase() + [renewal], at: 6.5))
        #expect(state.status == .active)
        #expect(state.latestTransactionId == "1002")
        #expect(state.expiresDate == PurchaseHistory.day(37))
        #expect(!state.isTrial)
        // Before the renewal was signed, only the trial was known.
        let before = try #require(try history.state(try trialPurchase() + [renewal], at: 5))
        #expect(before.latestTransactionId == "1001")
    }

    @Test("billing retry: a fresh renewal info in retry after the period ended; expired after 60 days")
    func billingRetry() throws {
        let records = try trialPurchase() + [
            try history.renewalInfoJWS(original: "1001", signed: 7.1, billingRetry: true, renewal: 7, expirationIntent: 2),
        ]
        let state = try #require(try history.state(records, at: 8))
        #expect(state.status == .billingRetry)
        #expect(state.appleStatus == 3)
        #expect(!state.isEntitled)
        #expect(state.expirationIntent == nil)
        let late = try #require(try history.state(records, at: 7 + 60.01))
        #expect(late.status == .expired)
        #expect(late.expirationIntent == "billing_error")
        let justInside = try #require(try history.state(records, at: 7 + 59.99))
        #expect(justInside.status == .billingRetry)
    }

    @Test("grace period: entitled until gracePeriodExpiresDate, then billing retry")
    func gracePeriod() throws {
        let records = try trialPurchase() + [
            try history.renewalInfoJWS(original: "1001", signed: 7.1, billingRetry: true, gracePeriodEnds: 13, renewal: 7),
        ]
        let state = try #require(try history.state(records, at: 10))
        #expect(state.status == .gracePeriod)
        #expect(state.appleStatus == 4)
        #expect(state.isEntitled)
        #expect(state.gracePeriodExpiresDate == PurchaseHistory.day(13))
        let after = try #require(try history.state(records, at: 14))
        #expect(after.status == .billingRetry)
    }

    @Test("statusMayChangeAt: the period's end, then the grace period's end, then the retry window's end; none once expired")
    func statusMayChangeAt() throws {
        let records = try trialPurchase() + [
            try history.renewalInfoJWS(original: "1001", signed: 7.1, billingRetry: true, gracePeriodEnds: 13, renewal: 7),
        ]
        // Each boundary is where the status changes: just before it, the status it names stays.
        let steps: [(at: Double, status: SubscriptionStatus, boundary: Double?)] = [
            (1, .active, 7), (7.05, .expired, nil), (8, .gracePeriod, 13), (14, .billingRetry, 67), (67, .expired, nil),
        ]
        for step in steps {
            let state = try #require(try history.state(records, at: step.at))
            #expect(state.status == step.status, "at day \(step.at)")
            #expect(state.statusMayChangeAt == step.boundary.map(PurchaseHistory.day), "at day \(step.at)")
            if let boundary = step.boundary {
                let before = try #require(try history.state(records, at: boundary - 0.0001))
                let at = try #require(try history.state(records, at: boundary))
                #expect(before.status == step.status)
                #expect(at.status != step.status, "the status changes at day \(boundary)")
            }
        }
        // A one-time purchase changes only with a new record; a revocation dated later is a boundary.
        let bought = try history.transactionJWS(id: "2001", original: "2001", product: "com.receiptkit.example.item",
                                                type: "Non-Consumable", purchased: 0, expires: nil, signed: 0)
        #expect(try history.state([bought], at: 1)?.statusMayChangeAt == nil)
        let refundedLater = try history.notificationJWS(
            type: "REFUND", signed: 2,
            transaction: try history.transactionJWS(id: "2001", original: "2001", product: "com.receiptkit.example.item",
                                                    type: "Non-Consumable", purchased: 0, expires: nil, signed: 2, revoked: 3,
                                                    revocationReason: 0))
        let pending = try #require(try history.state([bought, refundedLater], at: 2.5))
        #expect(pending.status == .active)
        #expect(pending.statusMayChangeAt == PurchaseHistory.day(3))
        #expect(try history.state([bought, refundedLater], at: 3)?.status == .revoked)
    }

    @Test("recovery: a renewal after billing retry makes it active again")
    func recovery() throws {
        let records = try trialPurchase() + [
            try history.renewalInfoJWS(original: "1001", signed: 7.1, billingRetry: true, renewal: 7),
            try history.transactionJWS(id: "1002", original: "1001", purchased: 9, expires: 39, signed: 9),
            try history.renewalInfoJWS(original: "1001", signed: 9, billingRetry: false, renewal: 39),
        ]
        let state = try #require(try history.state(records, at: 9.5))
        #expect(state.status == .active)
        #expect(state.latestTransactionId == "1002")
        #expect(state.expiresDate == PurchaseHistory.day(39))
    }

    @Test("expiry names Apple's intent", arguments: [
        (1, "customer_cancelled"), (2, "billing_error"), (3, "price_increase_declined"),
        (4, "product_unavailable"), (5, "other"), (9, "9"),
    ])
    func expiry(intent: Int, name: String) throws {
        let records = try trialPurchase() + [
            try history.renewalInfoJWS(original: "1001", signed: 7.2, autoRenew: false, expirationIntent: intent),
        ]
        let state = try #require(try history.state(records, at: 8))
        #expect(state.status == .expired)
        #expect(state.appleStatus == 2)
        #expect(state.expirationIntent == name)
        #expect(state.willRenew == false)
        // While the period still runs, cancelling only turns will_renew off ("cancelled").
        let cancelled = try #require(try history.state(try trialPurchase() + [
            try history.renewalInfoJWS(original: "1001", signed: 3, autoRenew: false),
        ], at: 4))
        #expect(cancelled.status == .active)
        #expect(cancelled.willRenew == false)
        #expect(cancelled.expirationIntent == nil)
    }

    @Test("refund: a REFUND notification revokes at the transaction's revocationDate")
    func refund() throws {
        let refunded = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 5,
                                                  revoked: 4.5, revocationReason: 1)
        let refund = try history.notificationJWS(type: "REFUND", signed: 5, transaction: refunded, status: 5)
        let purchase = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0)
        let state = try #require(try history.state([purchase, refund], at: 6))
        #expect(state.status == .revoked)
        #expect(state.appleStatus == 5)
        #expect(!state.isEntitled)
        #expect(state.revocationDate == PurchaseHistory.day(4.5))
        #expect(state.revocationReason == "refunded_due_to_issue")
        // Before the refund was signed the purchase stood.
        #expect(try history.state([purchase, refund], at: 4.9)?.status == .active)
    }

    @Test("a REFUND or REVOKE notification whose transaction carries no revocationDate revokes at its signedDate",
          arguments: ["REFUND", "REVOKE"])
    func refundWithoutDate(type: String) throws {
        let copy = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 5)
        let notification = try history.notificationJWS(type: type, signed: 5.5, transaction: copy)
        let state = try #require(try history.state([notification], at: 6))
        #expect(state.status == .revoked)
        #expect(state.revocationDate == PurchaseHistory.day(5.5))
        // The same copy outside such a notification is not a refund.
        #expect(try history.state([copy], at: 6)?.status == .active)
    }

    @Test("refund reversed: a later copy without a revocation wins")
    func refundReversed() throws {
        let records = [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0),
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 5,
                                       revoked: 5, revocationReason: 0),
            try history.notificationJWS(
                type: "REFUND_REVERSED", signed: 8,
                transaction: try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 8)),
        ]
        #expect(try history.state(records, at: 6)?.status == .revoked)
        #expect(try history.state(records, at: 6)?.revocationReason == "refunded_for_other_reason")
        let state = try #require(try history.state(records, at: 9))
        #expect(state.status == .active)
        #expect(state.revocationDate == nil)
    }

    @Test("upgrade: the upgraded transaction is neither current nor a refund")
    func upgrade() throws {
        // Monthly bought on day 0; upgraded to yearly on day 10: Apple marks the monthly upgraded
        // and revoked, and the yearly shares the original transaction id.
        let upgradedMonthly = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30,
                                                         signed: 10, revoked: 10, upgraded: true)
        let yearly = try history.transactionJWS(id: "1002", original: "1001", product: PurchaseHistory.yearly,
                                                purchased: 10, expires: 375, signed: 10)
        let monthly = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0)
        let state = try #require(try history.state([monthly, upgradedMonthly, yearly], at: 11))
        #expect(state.status == .active)
        #expect(state.productId == PurchaseHistory.yearly)
        #expect(state.latestTransactionId == "1002")
        #expect(state.revocationDate == nil)
        // Only the upgraded copy known: no refund is shown, the paid period still counts.
        let alone = try #require(try history.state([upgradedMonthly], at: 11))
        #expect(alone.status == .active)
        #expect(alone.revocationDate == nil)
    }

    @Test("downgrade at renewal: the renewal info names the next product, the renewal switches it")
    func downgradeAtRenewal() throws {
        let records = [
            try history.transactionJWS(id: "1001", original: "1001", product: PurchaseHistory.yearly,
                                       purchased: 0, expires: 365, signed: 0),
            try history.renewalInfoJWS(original: "1001", signed: 20, autoRenewProduct: PurchaseHistory.monthly,
                                       product: PurchaseHistory.yearly, renewal: 365),
            try history.transactionJWS(id: "1002", original: "1001", product: PurchaseHistory.monthly,
                                       purchased: 365, expires: 395, signed: 364.9),
        ]
        let before = try #require(try history.state(records, at: 100))
        #expect(before.productId == PurchaseHistory.yearly)
        #expect(before.autoRenewProductId == PurchaseHistory.monthly)
        let after = try #require(try history.state(records, at: 366))
        #expect(after.productId == PurchaseHistory.monthly)
        #expect(after.status == .active)
        #expect(after.expiresDate == PurchaseHistory.day(395))
    }

    @Test("family sharing: the family member's copy is its own key, revoked by REVOKE")
    func familySharing() throws {
        let owner = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0)
        let shared = try history.transactionJWS(id: "5001", original: "5001", purchased: 0, expires: 30, signed: 0,
                                                ownership: "FAMILY_SHARED")
        let revoke = try history.notificationJWS(
            type: "REVOKE", signed: 12,
            transaction: try history.transactionJWS(id: "5001", original: "5001", purchased: 0, expires: 30,
                                                    signed: 12, ownership: "FAMILY_SHARED"))
        let states = try history.ledger([owner, shared, revoke]).states(at: PurchaseHistory.day(13))
        #expect(states.map(\.key.originalTransactionId) == ["1001", "5001"])
        #expect(states[0].status == .active)
        #expect(states[0].ownershipType == "purchased")
        #expect(states[1].status == .revoked)
        #expect(states[1].ownershipType == "family_shared")
        #expect(states[1].revocationDate == PurchaseHistory.day(12))
        #expect(try history.ledger([owner, shared, revoke]).states(at: PurchaseHistory.day(11))[1].status == .active)
    }

    @Test("offers other than a free trial are carried, and are not a trial")
    func offers() throws {
        let promotional = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0,
                                                     offerType: 2, offerDiscountType: "PAY_AS_YOU_GO",
                                                     offerId: "spring.promo")
        let state = try #require(try history.state([promotional], at: 1))
        #expect(!state.isTrial)
        #expect(state.offer?.type == "promotional")
        #expect(state.offer?.id == "spring.promo")
        #expect(state.offer?.discountType == "pay_as_you_go")
        // An introductory offer that is not free is not a trial either.
        let introductory = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30,
                                                      signed: 0, offerType: 1, offerDiscountType: "PAY_UP_FRONT")
        #expect(try history.state([introductory], at: 1)?.isTrial == false)
    }

    @Test("one-time products are owned (active) or revoked, with no Apple status", arguments: [
        "Consumable", "Non-Consumable", "Non-Renewing Subscription",
    ])
    func oneTime(type: String) throws {
        let bought = try history.transactionJWS(id: "2001", original: "2001", product: "com.receiptkit.example.item",
                                                type: type, purchased: 0, expires: nil, signed: 0)
        let state = try #require(try history.state([bought], at: 400))
        #expect(state.status == .active)
        #expect(state.appleStatus == nil)
        #expect(state.isEntitled)
        #expect(state.expiresDate == nil)
        #expect(state.willRenew == nil)
        let refunded = try history.notificationJWS(
            type: "REFUND", signed: 3,
            transaction: try history.transactionJWS(id: "2001", original: "2001", product: "com.receiptkit.example.item",
                                                    type: type, purchased: 0, expires: nil, signed: 3, revoked: 2.5,
                                                    revocationReason: 0))
        let revoked = try #require(try history.state([bought, refunded], at: 4))
        #expect(revoked.status == .revoked)
        #expect(revoked.appleStatus == nil)
    }

    @Test("a stale renewal info says nothing about the current period")
    func staleRenewalInfo() throws {
        let records = [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0),
            // Billing retry and grace from the first period's lapse, recovered by a renewal that
            // came without a new renewal info.
            try history.renewalInfoJWS(original: "1001", signed: 30.1, billingRetry: true, gracePeriodEnds: 90,
                                       renewal: 200),
            try history.transactionJWS(id: "1002", original: "1001", purchased: 31, expires: 61, signed: 31),
        ]
        let state = try #require(try history.state(records, at: 62))
        #expect(state.status == .expired)
        #expect(state.gracePeriodExpiresDate == nil)
        #expect(state.expiresDate == PurchaseHistory.day(61))
        // While it was fresh it extended the period end to its renewal date (a later period exists).
        let fresh = try #require(try history.state(records, at: 30.5))
        #expect(fresh.status == .active)
        #expect(fresh.expiresDate == PurchaseHistory.day(200))
    }

    @Test("a revoked current transaction with a later period known is not revoked")
    func revokedWithLaterPeriod() throws {
        let records = [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 20,
                                       revoked: 20, revocationReason: 0),
            try history.renewalInfoJWS(original: "1001", signed: 21, renewal: 60),
        ]
        let state = try #require(try history.state(records, at: 22))
        #expect(state.status == .active)
        #expect(state.expiresDate == PurchaseHistory.day(60))
        #expect(try history.state(Array(records.prefix(1)), at: 22)?.status == .revoked)
    }

    @Test("--as-of in the past and in the future")
    func asOf() throws {
        let records = try trialPurchase()
        #expect(try history.state(records, at: -1) == nil, "nothing was signed yet")
        #expect(try history.state(records, at: 3)?.status == .active)
        let future = try #require(try history.state(records, at: 1000))
        #expect(future.status == .expired)
        #expect(future.asOf == PurchaseHistory.day(1000))
    }

    @Test("of two copies signed at the same instant, the fixed order decides, never input order")
    func equalSignedDates() throws {
        let plain = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 5)
        let revoked = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 5,
                                                 revoked: 5, revocationReason: 0)
        let one = try #require(try history.state([plain, revoked], at: 6))
        let other = try #require(try history.state([revoked, plain], at: 6))
        #expect(one == other)
        #expect(one.status == .revoked)
    }

    @Test("renewal info joins by environment: a Production renewal info does not touch a Sandbox key")
    func renewalInfoEnvironment() throws {
        var production = history
        production.environment = "Production"
        let verifier = try Fixtures.testVerifier(bundleId: PurchaseHistory.bundleId)
        var ledger = try history.ledger([
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 7, signed: 0),
        ])
        ledger.add(try verifier.verifyRenewalInfo(try production.renewalInfoJWS(
            original: "1001", signed: 7.1, billingRetry: true, gracePeriodEnds: 20)))
        let state = try #require(ledger.states(at: PurchaseHistory.day(8)).first)
        #expect(state.status == .expired)
        #expect(state.willRenew == nil)
    }

    @Test("records without purchases add nothing")
    func nothingToFold() throws {
        var ledger = EntitlementLedger()
        ledger.add(try history.verifier.verify(try Fixtures.testVectorText("jws/app-transaction.jws")))
        ledger.add(try history.verifier.verify(try Fixtures.testVectorText("jws/notification-test.jws")))
        ledger.add(try history.verifier.verify(try Fixtures.testVectorText("jws/notification-summary.jws")))
        #expect(ledger.isEmpty)
        // A renewal info alone gives no state: no transaction of its key is known.
        ledger.add(try history.verifier.verifyRenewalInfo(try history.renewalInfoJWS(original: "1001", signed: 0)))
        #expect(ledger.states(at: PurchaseHistory.day(1)).isEmpty)
    }

    @Test("the worked example of docs/entitlement-state.md")
    func workedExample() throws {
        let trial = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 7, signed: 0,
                                               offerType: 1, offerDiscountType: "FREE_TRIAL")
        let renewal = try history.transactionJWS(id: "1002", original: "1001", purchased: 7, expires: 37, signed: 6.9)
        let recovery = try history.transactionJWS(id: "1003", original: "1001", purchased: 39, expires: 69, signed: 39)
        let notifications = [
            try history.notificationJWS(type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: 0, transaction: trial,
                                        renewalInfo: try history.renewalInfoJWS(original: "1001", signed: 0, renewal: 7)),
            try history.notificationJWS(type: "DID_RENEW", signed: 6.9, transaction: renewal,
                                        renewalInfo: try history.renewalInfoJWS(original: "1001", signed: 6.9, renewal: 37)),
            try history.notificationJWS(
                type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signed: 37.1, transaction: renewal,
                renewalInfo: try history.renewalInfoJWS(original: "1001", signed: 37.1, billingRetry: true,
                                                        gracePeriodEnds: 43, renewal: 37)),
            try history.notificationJWS(type: "DID_RENEW", subtype: "BILLING_RECOVERY", signed: 39, transaction: recovery,
                                        renewalInfo: try history.renewalInfoJWS(original: "1001", signed: 39, renewal: 69)),
        ]
        var random = SplitMix64(seed: 1)
        var arriving = notifications + [notifications[2], notifications[0]]
        arriving.shuffle(using: &random)
        let ledger = try history.ledger(arriving)
        let page = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/entitlement-state.md"),
                              encoding: .utf8)
        let block = try #require(page.components(separatedBy: "```json\n").dropFirst().first?
            .components(separatedBy: "\n```").first)
        let instant = try #require(Timestamp(rfc3339: "2025-07-09T00:00:00Z"))
        #expect(ledger.states(at: instant).map { $0.json() } == [block])
        let eleventh = try #require(Timestamp(rfc3339: "2025-07-11T00:00:00Z"))
        let later = try #require(ledger.states(at: eleventh).first)
        #expect(later.status == .active)
        #expect(later.expiresDate?.iso8601 == "2025-08-09T00:00:00.000Z")
        #expect(later.gracePeriodExpiresDate == nil)
        let beforeAll = try #require(Timestamp(rfc3339: "2025-05-31T23:59:59Z"))
        #expect(ledger.states(at: beforeAll).isEmpty)
    }

    @Test("the state line: members, order and formats")
    func json() throws {
        let state = try #require(try history.state(try trialPurchase(), at: 1))
        let line = state.json()
        #expect(!line.contains("\n"))
        let object = try parseJSON(line)
        let keys = [
            "bundle_id", "environment", "original_transaction_id", "status", "apple_status", "entitled", "product_id",
            "product_type", "subscription_group_id", "expires_date", "grace_period_expires_date", "will_renew",
            "auto_renew_product_id", "expiration_intent", "is_trial", "offer", "revocation_date", "revocation_reason",
            "ownership_type", "latest_transaction_id", "app_account_token", "last_signed_date", "as_of",
        ]
        #expect(Set(object.keys) == Set(keys))
        let order = keys.compactMap { line.range(of: "\"\($0)\":")?.lowerBound }
        #expect(order == order.sorted(), "members are written in the documented order")
        #expect(object["status"] as? String == "active")
        #expect(object["apple_status"] as? Int == 1)
        #expect(object["entitled"] as? Bool == true)
        #expect(object["expires_date"] as? String == "2025-06-08T00:00:00.000Z")
        #expect(object["as_of"] as? String == "2025-06-02T00:00:00.000Z")
        #expect(object["grace_period_expires_date"] is NSNull)
    }
}
