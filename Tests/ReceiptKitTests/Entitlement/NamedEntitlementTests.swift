import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// Rules 7–12 of `docs/entitlements.md` (``EntitlementCatalog/entitlements(of:at:grants:bundleId:)``)
/// on JWS signed under the test PKI, verified, folded into an ``EntitlementLedger`` and evaluated
/// from ``EntitlementLedger/states(at:)``. Each test is a table of instants — before anything was
/// signed, while it runs, and long after — and the answer each should give, worked out by hand
/// from the records. Days are counted from 2025-06-01T00:00:00Z (``PurchaseHistory/day(_:)``).
@Suite("Named entitlements (rules 7–12)")
struct NamedEntitlementTests {
    static let monthly = PurchaseHistory.monthly
    static let yearly = PurchaseHistory.yearly
    static let lifetime = "com.receiptkit.example.premium.lifetime"
    static let removeAds = "com.receiptkit.example.removeads"
    static let pass30 = "com.receiptkit.example.pass.30d"
    static let passMonth = "com.receiptkit.example.pass.month"
    static let passWithoutDuration = "com.receiptkit.example.pass.legacy"
    static let coins = "com.receiptkit.example.coins"
    static let otherApp = "com.receiptkit.other"

    /// Every app's purchases count for every entitlement (no `apps`).
    static let catalogText = """
        {"entitlements": {
           "pro":         {"products": ["\(monthly)", "\(yearly)", "\(lifetime)"]},
           "remove_ads":  {"products": ["\(removeAds)", "\(lifetime)"]},
           "season_pass": {"products": [{"id": "\(pass30)", "duration": "P30D"},
                                        {"id": "\(passMonth)", "duration": "P1M"},
                                        "\(passWithoutDuration)"]},
           "bonus":       {"products": ["\(coins)"]}}}
        """

    /// The same, with the second app's purchases unlocking "remove_ads" only.
    static let appsCatalogText = """
        {"entitlements": {
           "pro":         {"products": ["\(monthly)", "\(yearly)", "\(lifetime)"]},
           "remove_ads":  {"products": ["\(removeAds)", "\(lifetime)"]},
           "season_pass": {"products": [{"id": "\(pass30)", "duration": "P30D"}]},
           "bonus":       {"products": ["\(coins)"]}},
         "apps": {"\(PurchaseHistory.bundleId)": ["pro", "remove_ads", "season_pass", "bonus"],
                  "\(otherApp)": ["remove_ads"]}}
        """

    /// What one answer says, compared as a whole so that a failure shows both sides.
    struct Answer: Equatable, CustomStringConvertible {
        var active = false
        var expires: Timestamp?
        var source: NamedEntitlement.Source?
        var product: String?
        var original: String?
        var grant: String?
        var status: SubscriptionStatus?
        var willRenew: Bool?

        /// Nothing ever gave the entitlement.
        static let never = Answer()

        init(
            active: Bool = false, expires: Timestamp? = nil, source: NamedEntitlement.Source? = nil, product: String? = nil,
            original: String? = nil, grant: String? = nil, status: SubscriptionStatus? = nil, willRenew: Bool? = nil
        ) {
            self.active = active
            self.expires = expires
            self.source = source
            self.product = product
            self.original = original
            self.grant = grant
            self.status = status
            self.willRenew = willRenew
        }

        init(_ entitlement: NamedEntitlement) {
            self.init(
                active: entitlement.isActive, expires: entitlement.expiresDate, source: entitlement.source,
                product: entitlement.productId, original: entitlement.originalTransactionId, grant: entitlement.grantId,
                status: entitlement.status, willRenew: entitlement.willRenew)
        }

        var description: String {
            "active \(active), expires \(expires?.iso8601 ?? "nil"), source \(source?.rawValue ?? "nil"), "
                + "product \(product ?? "nil"), original \(original ?? "nil"), grant \(grant ?? "nil"), "
                + "status \(status?.rawValue ?? "nil"), will_renew \(willRenew.map(String.init) ?? "nil")"
        }
    }

    /// One row of a table: at `instant`, the entitlement `name` answers `answer`.
    struct Row {
        let instant: Timestamp
        let name: String
        let answer: Answer

        init(_ day: Double, _ name: String, _ answer: Answer) {
            instant = PurchaseHistory.day(day)
            self.name = name
            self.answer = answer
        }

        init(_ instant: Timestamp, _ name: String, _ answer: Answer) {
            self.instant = instant
            self.name = name
            self.answer = answer
        }
    }

    let history: PurchaseHistory
    /// Accepts every app's payloads, so the second app's purchases verify too.
    let verifier: AppStoreVerifier
    let catalog: EntitlementCatalog

    init() throws {
        history = try PurchaseHistory()
        verifier = try Fixtures.testVerifier()
        catalog = try EntitlementCatalog(jsonBytes: Array(Self.catalogText.utf8))
    }

    /// The instant of an RFC 3339 text, for dates easier to read on the calendar than as days.
    static func instant(_ text: String) throws -> Timestamp {
        try #require(Timestamp(rfc3339: text), "\(text) is not an instant")
    }

    /// The day (from ``PurchaseHistory/origin``) of an instant, for ``PurchaseHistory``'s builders.
    static func day(_ instant: Timestamp) -> Double {
        Double(instant.millisecondsSince1970 - PurchaseHistory.origin) / 86_400_000
    }

    /// Folds JWS into a new ledger.
    func ledger(_ records: [String]) throws -> EntitlementLedger {
        var ledger = EntitlementLedger()
        for record in records { ledger.add(try verifier.verify(record)) }
        return ledger
    }

    /// The answers for one customer whose records are `records`, at `instant`, by name.
    func answers(
        _ records: [String], grants: [EntitlementGrant] = [], at instant: Timestamp, catalog: EntitlementCatalog? = nil,
        bundleId: String? = nil
    ) throws -> [String: NamedEntitlement] {
        let states = try ledger(records).states(at: instant)
        let list = (catalog ?? self.catalog).entitlements(of: states, at: instant, grants: grants, bundleId: bundleId)
        #expect(list.map(\.name) == list.map(\.name).sorted(), "answers are sorted by name")
        #expect(list.allSatisfy { $0.asOf == instant })
        return Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0) })
    }

    /// Checks every row of `table` against the answers for `records` and `grants`.
    func check(
        _ records: [String], grants: [EntitlementGrant] = [], catalog: EntitlementCatalog? = nil, _ table: [Row],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for row in table {
            let answer = try answers(records, grants: grants, at: row.instant, catalog: catalog)[row.name]
            #expect(answer.map(Answer.init) == row.answer, "\(row.name) at \(row.instant)", sourceLocation: sourceLocation)
        }
    }

    /// A non-consumable (or other one-time) purchase.
    func oneTime(
        _ id: String, product: String, type: String = "Non-Consumable", at day: Double, ownership: String = "PURCHASED",
        token: String? = nil
    ) throws -> String {
        try history.transactionJWS(id: id, original: id, product: product, type: type, purchased: day, expires: nil,
                                   signed: day, ownership: ownership, appAccountToken: token)
    }

    /// A monthly subscription bought on day 0, its period to day 30, and its renewal info.
    func monthlyFromDayZero(autoRenew: Bool = true) throws -> [String] {
        [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0),
            try history.renewalInfoJWS(original: "1001", signed: 0, autoRenew: autoRenew, renewal: autoRenew ? 30 : nil),
        ]
    }

    // MARK: Rule 7

    @Test("rule 7: a subscription entitles while active or in grace, to its period's or grace period's end")
    func subscription() throws {
        let records = try monthlyFromDayZero() + [
            // The renewal fails on day 30: Apple retries, with a grace period to day 36.
            try history.renewalInfoJWS(original: "1001", signed: 30.1, billingRetry: true, gracePeriodEnds: 36, renewal: 30),
        ]
        let paid = Answer(active: true, expires: PurchaseHistory.day(30), source: .subscription, product: Self.monthly,
                          original: "1001", status: .active, willRenew: true)
        var grace = paid
        grace.expires = PurchaseHistory.day(36)
        grace.status = .gracePeriod
        // Once the grace period is over, access ended at its end, not at the period's.
        var retrying = grace
        retrying.active = false
        retrying.status = .billingRetry
        var lapsed = retrying
        lapsed.status = .expired  // 60 days of retry after day 30 are over by day 90
        try check(records, [
            Row(-1, "pro", .never), Row(10, "pro", paid), Row(29.99, "pro", paid), Row(30.05, "pro", Answer(
                active: false, expires: PurchaseHistory.day(30), source: .subscription, product: Self.monthly,
                original: "1001", status: .expired, willRenew: true)),
            Row(33, "pro", grace), Row(40, "pro", retrying), Row(100, "pro", lapsed),
            Row(10, "remove_ads", .never), Row(10, "season_pass", .never), Row(10, "bonus", .never),
        ])
    }

    @Test("rule 7: a refunded subscription ends at its revocation, once the refund is known")
    func refundedSubscription() throws {
        let purchase = try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0)
        let refund = try history.notificationJWS(
            type: "REFUND", signed: 5,
            transaction: try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 5,
                                                    revoked: 4.5, revocationReason: 1))
        let paid = Answer(active: true, expires: PurchaseHistory.day(30), source: .subscription, product: Self.monthly,
                          original: "1001", status: .active)
        let refunded = Answer(active: false, expires: PurchaseHistory.day(4.5), source: .subscription, product: Self.monthly,
                              original: "1001", status: .revoked)
        try check([purchase, refund], [
            Row(-1, "pro", .never), Row(3, "pro", paid), Row(4.9, "pro", paid), Row(6, "pro", refunded),
            Row(400, "pro", refunded),
        ])
    }

    @Test("rule 7: an upgrade within the group keeps pro active across the switch, with no gap")
    func upgrade() throws {
        // Monthly from day 0; upgraded to yearly on day 10: Apple marks the monthly upgraded (and
        // revoked), and the yearly shares its original transaction id.
        let records = [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0),
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 10, revoked: 10,
                                       upgraded: true),
            try history.transactionJWS(id: "1002", original: "1001", product: Self.yearly, purchased: 10, expires: 375,
                                       signed: 10),
        ]
        let monthly = Answer(active: true, expires: PurchaseHistory.day(30), source: .subscription, product: Self.monthly,
                             original: "1001", status: .active)
        let yearly = Answer(active: true, expires: PurchaseHistory.day(375), source: .subscription, product: Self.yearly,
                            original: "1001", status: .active)
        var lapsed = yearly
        lapsed.active = false
        lapsed.status = .expired
        try check(records, [
            Row(-1, "pro", .never), Row(5, "pro", monthly), Row(9.999, "pro", monthly), Row(10, "pro", yearly),
            Row(11, "pro", yearly), Row(400, "pro", lapsed),
        ])
        // Every hour around the switch.
        for hour in 0...48 {
            let instant = PurchaseHistory.day(9 + Double(hour) / 24)
            #expect(try answers(records, at: instant)["pro"]?.isActive == true, "at \(instant)")
        }
    }

    // MARK: Rule 8

    @Test("rules 7 and 8: a monthly subscription and a lifetime purchase: the lifetime wins, with no end")
    func monthlyAndLifetime() throws {
        let records = try monthlyFromDayZero() + [try oneTime("2001", product: Self.lifetime, at: 5)]
        let subscribed = Answer(active: true, expires: PurchaseHistory.day(30), source: .subscription,
                                product: Self.monthly, original: "1001", status: .active, willRenew: true)
        let owned = Answer(active: true, expires: nil, source: .purchase, product: Self.lifetime, original: "2001",
                           status: .active)
        try check(records, [
            Row(-1, "pro", .never), Row(-1, "remove_ads", .never),
            Row(3, "pro", subscribed), Row(3, "remove_ads", .never),
            Row(10, "pro", owned), Row(10, "remove_ads", owned),
            Row(100, "pro", owned), Row(100, "remove_ads", owned),
        ])
    }

    @Test("rule 8: a refunded lifetime purchase is revoked from its revocation date, once the refund is known")
    func refundedLifetime() throws {
        let records = [
            try oneTime("2001", product: Self.lifetime, at: 0),
            try history.notificationJWS(
                type: "REFUND", signed: 20,
                transaction: try history.transactionJWS(id: "2001", original: "2001", product: Self.lifetime,
                                                        type: "Non-Consumable", purchased: 0, expires: nil, signed: 20,
                                                        revoked: 19.5, revocationReason: 0)),
        ]
        let owned = Answer(active: true, source: .purchase, product: Self.lifetime, original: "2001", status: .active)
        let refunded = Answer(active: false, expires: PurchaseHistory.day(19.5), source: .purchase, product: Self.lifetime,
                              original: "2001", status: .revoked)
        try check(records, [
            Row(-1, "pro", .never), Row(10, "pro", owned), Row(19.7, "pro", owned), Row(21, "pro", refunded),
            Row(400, "pro", refunded), Row(21, "remove_ads", refunded),
        ])
    }

    @Test("rules 8 and 12: a family-shared purchase counts like the purchaser's until Family Sharing is withdrawn")
    func familySharingRevoked() throws {
        let records = [
            try oneTime("5001", product: Self.lifetime, at: 0, ownership: "FAMILY_SHARED"),
            // REVOKE: the transaction carries no revocation date, so it is revoked at the
            // notification's signed date, day 12.
            try history.notificationJWS(
                type: "REVOKE", signed: 12,
                transaction: try history.transactionJWS(id: "5001", original: "5001", product: Self.lifetime,
                                                        type: "Non-Consumable", purchased: 0, expires: nil, signed: 12,
                                                        ownership: "FAMILY_SHARED")),
        ]
        let shared = Answer(active: true, source: .purchase, product: Self.lifetime, original: "5001", status: .active)
        let withdrawn = Answer(active: false, expires: PurchaseHistory.day(12), source: .purchase, product: Self.lifetime,
                               original: "5001", status: .revoked)
        try check(records, [
            Row(-1, "pro", .never), Row(6, "pro", shared), Row(11.9, "remove_ads", shared), Row(13, "pro", withdrawn),
            Row(300, "remove_ads", withdrawn),
        ])
    }

    // MARK: Rule 9

    @Test("rule 9: two 30-day passes stack: the second starts at the first's end, so both end at 2 × 30 days")
    func stackedPasses() throws {
        let records = [
            try oneTime("3001", product: Self.pass30, type: "Non-Renewing Subscription", at: 0),
            try oneTime("3002", product: Self.pass30, type: "Non-Renewing Subscription", at: 10),
        ]
        // The first runs from day 0 to 30, the second from 30 (not 10) to 60.
        let first = Answer(active: true, expires: PurchaseHistory.day(30), source: .pass, product: Self.pass30,
                           original: "3001", status: .active)
        var both = first
        both.expires = PurchaseHistory.day(0 + 2 * 30)
        var second = both
        second.original = "3002"
        var over = second
        over.active = false
        over.status = .expired
        try check(records, [
            Row(-1, "season_pass", .never), Row(5, "season_pass", first), Row(15, "season_pass", both),
            Row(29.99, "season_pass", both), Row(30, "season_pass", second), Row(45, "season_pass", second),
            Row(60, "season_pass", over), Row(70, "season_pass", over), Row(15, "pro", .never),
        ])
        let running = try answers(records, at: PurchaseHistory.day(15))["season_pass"]
        #expect(running?.mayChangeAt == PurchaseHistory.day(30), "the first pass hands over to the second on day 30")
    }

    @Test("rule 9: P1M passes add calendar months: Jan 31 + P1M is Feb 28 (Feb 29 in a leap year), and the next stacks from there")
    func monthPasses() throws {
        // Bought at 10:30 UTC on 31 January 2026, and again on 10 February.
        let firstBought = try Self.instant("2026-01-31T10:30:00Z")
        let secondBought = try Self.instant("2026-02-10T00:00:00Z")
        let records = [
            try oneTime("3101", product: Self.passMonth, type: "Non-Renewing Subscription", at: Self.day(firstBought)),
            try oneTime("3102", product: Self.passMonth, type: "Non-Renewing Subscription", at: Self.day(secondBought)),
        ]
        // 2026 is not a leap year: February has 28 days. The second month counts from Feb 28
        // 10:30, so it ends on Mar 28 10:30 (not Mar 31).
        let firstEnd = try Self.instant("2026-02-28T10:30:00Z")
        let secondEnd = try Self.instant("2026-03-28T10:30:00Z")
        let first = Answer(active: true, expires: firstEnd, source: .pass, product: Self.passMonth, original: "3101",
                           status: .active)
        var both = first
        both.expires = secondEnd
        var second = both
        second.original = "3102"
        var over = second
        over.active = false
        over.status = .expired
        try check(records, [
            Row(try Self.instant("2026-01-31T00:00:00Z"), "season_pass", .never),
            Row(try Self.instant("2026-02-06T00:00:00Z"), "season_pass", first),
            Row(try Self.instant("2026-02-15T00:00:00Z"), "season_pass", both),
            Row(firstEnd, "season_pass", second),
            Row(try Self.instant("2026-03-28T10:29:59Z"), "season_pass", second),
            Row(secondEnd, "season_pass", over),
        ])
        // In 2024, a leap year, one month after 31 January is 29 February.
        let leap = try oneTime("3103", product: Self.passMonth, type: "Non-Renewing Subscription",
                               at: Self.day(try Self.instant("2024-01-31T10:30:00Z")))
        try check([leap], [
            Row(try Self.instant("2024-02-10T00:00:00Z"), "season_pass", Answer(
                active: true, expires: try Self.instant("2024-02-29T10:30:00Z"), source: .pass, product: Self.passMonth,
                original: "3103", status: .active)),
        ])
    }

    @Test("rule 9: a pass bought during a subscription starts at its purchase, not at the subscription's end")
    func passDuringSubscription() throws {
        let catalog = try EntitlementCatalog(jsonBytes: Array("""
            {"entitlements": {"pro": {"products": ["\(Self.monthly)", {"id": "\(Self.pass30)", "duration": "P30D"}]}}}
            """.utf8))
        let records = try monthlyFromDayZero(autoRenew: false) + [
            try oneTime("3001", product: Self.pass30, type: "Non-Renewing Subscription", at: 20),
        ]
        let subscribed = Answer(active: true, expires: PurchaseHistory.day(30), source: .subscription, product: Self.monthly,
                                original: "1001", status: .active, willRenew: false)
        // The pass runs from day 20 to day 50: it ends later than the subscription's period, so it
        // is named while both run.
        let pass = Answer(active: true, expires: PurchaseHistory.day(50), source: .pass, product: Self.pass30,
                          original: "3001", status: .active)
        var passOver = pass
        passOver.active = false
        passOver.status = .expired
        try check(records, catalog: catalog, [
            Row(-1, "pro", .never), Row(10, "pro", subscribed), Row(25, "pro", pass), Row(40, "pro", pass),
            Row(60, "pro", passOver),
        ])
    }

    @Test("rule 9: a non-renewing product without a duration never entitles")
    func passWithoutDuration() throws {
        let records = [try oneTime("3201", product: Self.passWithoutDuration, type: "Non-Renewing Subscription", at: 0)]
        try check(records, [Row(-1, "season_pass", .never), Row(1, "season_pass", .never), Row(400, "season_pass", .never)])
        #expect(try ledger(records).states(at: PurchaseHistory.day(1)).map(\.status) == [.active], "it is owned all the same")
        let found = catalog.contradictions(productTypes: [Self.passWithoutDuration: "non_renewing_subscription"])
        #expect(found.count == 1)
        #expect(found.first?.contains(Self.passWithoutDuration) == true)
    }

    @Test("rule 9: a refunded pass gives nothing, and the pass after it starts at its own purchase")
    func refundedPass() throws {
        let records = [
            try oneTime("3001", product: Self.pass30, type: "Non-Renewing Subscription", at: 0),
            try oneTime("3002", product: Self.pass30, type: "Non-Renewing Subscription", at: 10),
            try history.notificationJWS(
                type: "REFUND", signed: 12,
                transaction: try history.transactionJWS(id: "3001", original: "3001", product: Self.pass30,
                                                        type: "Non-Renewing Subscription", purchased: 0, expires: nil,
                                                        signed: 12, revoked: 12, revocationReason: 1)),
        ]
        // Until the refund is known, the second pass waits for the first (30 to 60); once it is,
        // the second runs from its own purchase, day 10, to day 40.
        try check(records, [
            Row(11, "season_pass", Answer(active: true, expires: PurchaseHistory.day(60), source: .pass,
                                          product: Self.pass30, original: "3001", status: .active)),
            Row(13, "season_pass", Answer(active: true, expires: PurchaseHistory.day(40), source: .pass,
                                          product: Self.pass30, original: "3002", status: .active)),
            Row(50, "season_pass", Answer(active: false, expires: PurchaseHistory.day(40), source: .pass,
                                          product: Self.pass30, original: "3002", status: .expired)),
        ])
    }

    // MARK: Rule 10

    @Test("rule 10: a consumable alone entitles nothing, but is still a purchase in the states")
    func consumable() throws {
        let records = [try oneTime("4001", product: Self.coins, type: "Consumable", at: 0)]
        try check(records, [
            Row(-1, "bonus", .never), Row(5, "bonus", .never), Row(100, "bonus", .never), Row(5, "pro", .never),
        ])
        let states = try ledger(records).states(at: PurchaseHistory.day(5))
        #expect(states.map(\.productType) == ["consumable"])
        #expect(states.map(\.status) == [.active])
        #expect(try ledger(records).states(at: PurchaseHistory.day(-1)).isEmpty)
    }

    // MARK: Rule 11

    @Test("rule 11: a grant outlives a lapsed subscription; before it was made it counts for nothing")
    func grantOutlivesSubscription() throws {
        let grant = EntitlementGrant(id: "g1", entitlement: "pro", grantedAt: PurchaseHistory.day(25),
                                     expiresDate: PurchaseHistory.day(45))
        let subscribed = Answer(active: true, expires: PurchaseHistory.day(30), source: .subscription, product: Self.monthly,
                                original: "1001", status: .active, willRenew: false)
        let granted = Answer(active: true, expires: PurchaseHistory.day(45), source: .grant, grant: "g1", status: .active)
        var grantOver = granted
        grantOver.active = false
        grantOver.status = .expired
        let records = try monthlyFromDayZero(autoRenew: false)
        try check(records, grants: [grant], [
            Row(-1, "pro", .never), Row(20, "pro", subscribed), Row(27, "pro", granted), Row(35, "pro", granted),
            Row(50, "pro", grantOver), Row(27, "remove_ads", .never),
        ])
        let both = try answers(records, grants: [grant], at: PurchaseHistory.day(27))["pro"]
        #expect(both?.mayChangeAt == PurchaseHistory.day(30), "the subscription's period ends first")
    }

    @Test("rule 11: a grant ended by hand is revoked from its end; until then it runs to its expiry")
    func grantEndedEarly() throws {
        let grants = [
            EntitlementGrant(id: "g2", entitlement: "pro", grantedAt: PurchaseHistory.day(10),
                             expiresDate: PurchaseHistory.day(40), endedAt: PurchaseHistory.day(20)),
            // A lifetime grant, ended on day 30.
            EntitlementGrant(id: "g3", entitlement: "remove_ads", grantedAt: PurchaseHistory.day(10), expiresDate: nil,
                             endedAt: PurchaseHistory.day(30)),
            // One that expired on day 18, before it was ended on day 20: expired, not revoked.
            EntitlementGrant(id: "g4", entitlement: "season_pass", grantedAt: PurchaseHistory.day(10),
                             expiresDate: PurchaseHistory.day(18), endedAt: PurchaseHistory.day(20)),
        ]
        try check([], grants: grants, [
            Row(5, "pro", .never), Row(5, "remove_ads", .never), Row(5, "season_pass", .never),
            // On day 15 nobody had ended g2 yet: it runs to its expiry.
            Row(15, "pro", Answer(active: true, expires: PurchaseHistory.day(40), source: .grant, grant: "g2", status: .active)),
            Row(25, "pro", Answer(active: false, expires: PurchaseHistory.day(20), source: .grant, grant: "g2", status: .revoked)),
            Row(50, "pro", Answer(active: false, expires: PurchaseHistory.day(20), source: .grant, grant: "g2", status: .revoked)),
            Row(15, "remove_ads", Answer(active: true, expires: nil, source: .grant, grant: "g3", status: .active)),
            Row(35, "remove_ads", Answer(active: false, expires: PurchaseHistory.day(30), source: .grant, grant: "g3",
                                         status: .revoked)),
            Row(15, "season_pass", Answer(active: true, expires: PurchaseHistory.day(18), source: .grant, grant: "g4",
                                          status: .active)),
            Row(25, "season_pass", Answer(active: false, expires: PurchaseHistory.day(18), source: .grant, grant: "g4",
                                          status: .expired)),
        ])
        // Each answer may change when its own grant stops: by hand, by its end or by its expiry.
        let running = try answers([], grants: grants, at: PurchaseHistory.day(15))
        #expect(running["pro"]?.mayChangeAt == PurchaseHistory.day(20))
        #expect(running["remove_ads"]?.mayChangeAt == PurchaseHistory.day(30))
        #expect(running["season_pass"]?.mayChangeAt == PurchaseHistory.day(18))
        #expect(try answers([], grants: grants, at: PurchaseHistory.day(35))["pro"]?.mayChangeAt == nil)
    }

    // MARK: Rule 12

    @Test("rule 12: with apps, a purchase counts only for the entitlements its app lists")
    func apps() throws {
        let catalog = try EntitlementCatalog(jsonBytes: Array(Self.appsCatalogText.utf8))
        var other = history
        other.app = Self.otherApp
        // The lifetime product unlocks pro and remove_ads, but bought in the other app only
        // remove_ads.
        let records = [try other.transactionJWS(id: "6001", original: "6001", product: Self.lifetime,
                                                type: "Non-Consumable", purchased: 0, expires: nil, signed: 0)]
        let owned = Answer(active: true, source: .purchase, product: Self.lifetime, original: "6001", status: .active)
        try check(records, catalog: catalog, [
            Row(-1, "remove_ads", .never), Row(5, "remove_ads", owned), Row(5, "pro", .never), Row(400, "remove_ads", owned),
        ])
        let states = try ledger(records).states(at: PurchaseHistory.day(5))
        let otherApp = catalog.entitlements(of: states, at: PurchaseHistory.day(5), bundleId: Self.otherApp)
        #expect(otherApp.map(\.name) == ["remove_ads"])
        #expect(otherApp.map(Answer.init) == [owned])
        let mainApp = catalog.entitlements(of: states, at: PurchaseHistory.day(5), bundleId: PurchaseHistory.bundleId)
        #expect(mainApp.map(\.name) == ["bonus", "pro", "remove_ads", "season_pass"])
        #expect(mainApp.allSatisfy { !$0.isActive }, "the other app's purchase counts for none of this app's")
        // Without apps, the same purchase unlocks both.
        try check(records, [Row(5, "pro", owned), Row(5, "remove_ads", owned)])
    }

    @Test("rule 12: of sources ending together, a subscription beats a pass, and the greater product id wins")
    func ties() throws {
        let catalog = try EntitlementCatalog(jsonBytes: Array("""
            {"entitlements": {"pro": {"products": ["\(Self.monthly)", {"id": "\(Self.pass30)", "duration": "P30D"}]},
                              "remove_ads": {"products": ["\(Self.removeAds)", "\(Self.lifetime)"]}}}
            """.utf8))
        // The subscription's period and the pass both end on day 30.
        let records = [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0),
            try oneTime("3001", product: Self.pass30, type: "Non-Renewing Subscription", at: 0),
            try oneTime("2001", product: Self.lifetime, at: 1),
            try oneTime("2002", product: Self.removeAds, at: 1),
        ]
        // "com.receiptkit.example.removeads" > "com.receiptkit.example.premium.lifetime" ("r" > "p").
        try check(records, catalog: catalog, [
            Row(10, "pro", Answer(active: true, expires: PurchaseHistory.day(30), source: .subscription, product: Self.monthly,
                                  original: "1001", status: .active)),
            Row(40, "pro", Answer(active: false, expires: PurchaseHistory.day(30), source: .subscription,
                                  product: Self.monthly, original: "1001", status: .expired)),
            Row(10, "remove_ads", Answer(active: true, source: .purchase, product: Self.removeAds, original: "2002",
                                         status: .active)),
        ])
    }

    @Test("the same answers for records and grants shuffled and duplicated, folded or passed as states")
    func orderAndDuplicates() throws {
        let records = try monthlyFromDayZero() + [
            try oneTime("2001", product: Self.lifetime, at: 40),
            try oneTime("3001", product: Self.pass30, type: "Non-Renewing Subscription", at: 0),
            try oneTime("3002", product: Self.pass30, type: "Non-Renewing Subscription", at: 10),
            try oneTime("4001", product: Self.coins, type: "Consumable", at: 3),
            try history.notificationJWS(
                type: "REFUND", signed: 50,
                transaction: try history.transactionJWS(id: "2001", original: "2001", product: Self.lifetime,
                                                        type: "Non-Consumable", purchased: 40, expires: nil, signed: 50,
                                                        revoked: 49, revocationReason: 1)),
        ]
        let grants = [
            EntitlementGrant(id: "g1", entitlement: "remove_ads", grantedAt: PurchaseHistory.day(20),
                             expiresDate: PurchaseHistory.day(70)),
            EntitlementGrant(id: "g2", entitlement: "pro", grantedAt: PurchaseHistory.day(5), expiresDate: nil,
                             endedAt: PurchaseHistory.day(15)),
        ]
        let instants = [-1, 5, 12, 25, 45, 55, 65, 400].map { PurchaseHistory.day($0) }
        let reference = try ledger(records)
        let expected = instants.map { catalog.entitlements(of: reference.states(at: $0), at: $0, grants: grants) }
        // 60 days of passes from day 0 reach day 60, and on day 55 the refunded lifetime has gone.
        #expect(expected[5].first { $0.name == "season_pass" }?.expiresDate == PurchaseHistory.day(60))
        #expect(expected[5].first { $0.name == "pro" }?.isActive == false)
        var random = SplitMix64(seed: 7)
        for _ in 0..<4 {
            var arriving = records + records.filter { _ in random.next() % 2 == 0 }
            arriving.shuffle(using: &random)
            var grantsArriving = grants + grants.filter { _ in random.next() % 2 == 0 }
            grantsArriving.shuffle(using: &random)
            let folded = try ledger(arriving)
            for (index, instant) in instants.enumerated() {
                #expect(catalog.entitlements(of: folded.states(at: instant), at: instant, grants: grantsArriving)
                            == expected[index], "folded, at \(instant)")
                var states = reference.states(at: instant)
                states += states.filter { _ in random.next() % 2 == 0 }
                states.shuffle(using: &random)
                #expect(catalog.entitlements(of: states, at: instant, grants: grantsArriving) == expected[index],
                        "states shuffled and duplicated, at \(instant)")
            }
        }
    }

    // MARK: JSON

    @Test("the JSON of the answers: members in order, dates as in the transaction record")
    func json() throws {
        let records = try monthlyFromDayZero() + [try oneTime("2001", product: Self.lifetime, at: 5)]
        let early = try answers(records, at: PurchaseHistory.day(3))
        let pro = try #require(early["pro"])
        #expect(pro.json() == """
            {"active":true,"expires_date":"2025-07-01T00:00:00.000Z","source":"subscription",\
            "product_id":"\(Self.monthly)","original_transaction_id":"1001","grant_id":null,"status":"active",\
            "will_renew":true}
            """)
        let states = try ledger(records).states(at: PurchaseHistory.day(10))
        let list = catalog.entitlements(of: states, at: PurchaseHistory.day(10))
        let owned = """
            {"active":true,"expires_date":null,"source":"purchase","product_id":"\(Self.lifetime)",\
            "original_transaction_id":"2001","grant_id":null,"status":"active","will_renew":null}
            """
        let never = """
            {"active":false,"expires_date":null,"source":null,"product_id":null,"original_transaction_id":null,\
            "grant_id":null,"status":null,"will_renew":null}
            """
        #expect(NamedEntitlement.json(list) == """
            {"bonus":\(never),"pro":\(owned),"remove_ads":\(owned),"season_pass":\(never)}
            """)
        #expect(NamedEntitlement.json([]) == "{}")
    }
}
