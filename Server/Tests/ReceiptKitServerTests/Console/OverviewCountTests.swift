import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// The overview's subscription counts on a database of a few thousand keys whose states change by
/// time alone — periods ending, grace periods and Apple's retry window running out, refunds dated
/// ahead — with no input after the first: at each instant every count equals what evaluating each
/// key with ReceiptKit at that instant gives, with the keys time changed since the last sweep
/// evaluated by the read (days after a sweep) and just after a sweep moved them.
@Suite("The overview's counts")
struct OverviewCountTests {
    typealias Object = [String: Any]

    static let apps = ["com.receiptkit.example", "com.receiptkit.other"]
    static let environments = ["Production", "Sandbox"]
    static let products = ["monthly", "yearly"]
    static let keyCount = 2_000
    /// When every key is stored; the instants below follow it.
    static let start = ms("2025-06-01T00:00:00Z")

    @Test("a few thousand keys whose states change by time alone: each count equals every key evaluated by ReceiptKit, swept or not",
          arguments: Backend.available)
    func countsFollowTime(backend: Backend) async throws {
        let keys = try Self.keys()
        let clock = ManualClock(Date(timeIntervalSince1970: Double(Self.start) / 1000))
        var environment = Vectors.environment
        environment["RECEIPTKIT_BUNDLE_ID"] = nil
        environment["RECEIPTKIT_APP_APPLE_ID"] = nil
        environment["RECEIPTKIT_ENVIRONMENT"] = nil
        environment["RECEIPTKIT_APPS"] = "\(Self.apps[0]):1234567890,\(Self.apps[1]):1234567891"
        environment["RECEIPTKIT_ENVIRONMENTS"] = Self.environments.joined(separator: ",")
        // The sweep runs once, before any key is stored, and not again: the overview alone
        // follows time until the test sweeps.
        let configure: @Sendable (inout ServerConfiguration) -> Void = { $0.events.sweepInterval = .seconds(86_400) }
        try await TestServer.run(backend, environment: environment, clock: { clock.now }, configure: configure) { server in
            try await server.withStore { store in
                for (index, batch) in stride(from: 0, to: keys.count, by: 50).map({ Array(keys[$0..<min($0 + 50, keys.count)]) }).enumerated() {
                    let input = VerifiedInput(
                        dedupKey: "test:batch:\(index)", kind: "transaction", raw: Array("batch \(index)".utf8), record: "{}",
                        receivedAt: Self.start, keys: batch.map(\.key), copies: batch.flatMap(\.copies), links: [],
                        cause: EventCause(source: .app))
                    let stored = try await store.record(input)
                    #expect(stored)
                    // A request between batches: the server closes a connection idle for 60 s,
                    // and recording them all can take longer on a busy database.
                    #expect(try await server.get("/healthz").status == .ok)
                }
            }
            var moved = Set<String>()
            for (days, sweep) in [
                (0, false), (3, false), (9, true), (12, false), (20, true), (27, false), (33, true), (45, false), (50, true),
                (75, true), (80, false), (130, true), (135, false), (400, true), (401, false),
            ] {
                let instant = Self.start + Int64(days) * day
                clock.now = Date(timeIntervalSince1970: Double(instant) / 1000)
                if sweep {
                    try await server.withStore { store in
                        let report = try await store.sweep(now: Timestamp(millisecondsSince1970: instant), limit: Self.keyCount)
                        #expect(report.due == report.swept)
                    }
                }
                let answer = try await server.get("/v1/overview")
                #expect(answer.status == .ok, "\(answer.text)")
                let subscriptions = try #require(try answer.json()["subscriptions"] as? Object)
                let expected = Self.evaluate(keys, at: Timestamp(millisecondsSince1970: instant))
                #expect(subscriptions["total"] as? Int == keys.count, "day \(days)")
                #expect(Self.statusCounts(subscriptions) == expected.all, "day \(days)")
                let byApp = try #require(subscriptions["by_app"] as? [Object])
                #expect(byApp.map { "\($0["bundle_id"] as? String ?? "") \($0["environment"] as? String ?? "")" }
                    == Self.apps.flatMap { app in Self.environments.map { "\(app) \($0)" } })
                #expect(byApp.map { $0["sandbox"] as? Bool } == [false, true, false, true])
                for app in byApp {
                    let pair = "\(app["bundle_id"] as? String ?? "") \(app["environment"] as? String ?? "")"
                    #expect(Self.statusCounts(app) == expected.byPair[pair], "\(pair), day \(days)")
                    for product in app["by_product"] as? [Object] ?? [] {
                        let name = product["product_id"] as? String ?? ""
                        #expect(Self.statusCounts(product) == expected.byProduct["\(pair) \(name)"], "\(pair) \(name), day \(days)")
                    }
                    #expect(Set((app["by_product"] as? [Object] ?? []).compactMap { $0["product_id"] as? String })
                        == Set(expected.byProduct.keys.filter { $0.hasPrefix(pair + " ") }.map { String($0.dropFirst(pair.count + 1)) }))
                }
                moved.formUnion(expected.all.filter { $0.value > 0 }.map(\.key))
            }
            // The instants saw every status, so each kind of time-caused change was counted.
            #expect(moved == Set(SubscriptionStatus.allCases.map(\.rawValue)))
        }
    }

    /// A key, its copies, and the ledger ReceiptKit evaluates them in.
    struct Key {
        var key: SubscriptionKey
        var copies: [LedgerCopy]
        var ledger: EntitlementLedger
    }

    /// Counts by status of a JSON object's `by_status`.
    static func statusCounts(_ object: Object) -> [String: Int] {
        var counts: [String: Int] = [:]
        for item in object["by_status"] as? [Object] ?? [] {
            counts[item["status"] as? String ?? "?"] = item["count"] as? Int
        }
        return counts
    }

    /// What evaluating every key at `instant` counts: over all keys, per app and environment, and
    /// per app, environment and product.
    static func evaluate(
        _ keys: [Key], at instant: Timestamp
    ) -> (all: [String: Int], byPair: [String: [String: Int]], byProduct: [String: [String: Int]]) {
        let zero = Dictionary(uniqueKeysWithValues: SubscriptionStatus.allCases.map { ($0.rawValue, 0) })
        var all = zero
        var byPair: [String: [String: Int]] = [:]
        for app in apps {
            for environment in environments { byPair["\(app) \(environment)"] = zero }
        }
        var byProduct: [String: [String: Int]] = [:]
        for key in keys {
            guard let state = key.ledger.state(for: key.key, at: instant) else { continue }
            let pair = "\(key.key.bundleId) \(key.key.environment)"
            all[state.status.rawValue, default: 0] += 1
            byPair[pair, default: zero][state.status.rawValue, default: 0] += 1
            byProduct["\(pair) \(state.productId ?? "")", default: zero][state.status.rawValue, default: 0] += 1
        }
        return (all, byPair, byProduct)
    }

    /// The keys, of every app and environment, each a history whose state changes by time alone
    /// within the instants the test reads: periods of a week, a month or a year ending, some
    /// renewed twice before; a billing retry with or without a grace period; a refund dated ahead.
    static func keys() throws -> [Key] {
        var random = SplitMix64(seed: 44)
        return try (0..<keyCount).map { index in
            let key = SubscriptionKey(
                bundleId: apps[index % 2], environment: environments[(index / 2) % 2], originalTransactionId: "\(90_000_000 + index)")
            let product = products[(index / 4) % 2]
            let signed = start - 60_000
            let length: Int64 = [7, 30, 30, 365][Int(random.next() % 4)] * day
            // The current period ends between 10 days before the start and 60 after.
            let end = start - 10 * day + Int64(random.next() % UInt64(70 * day))
            let renewals = Int(random.next() % 3)
            var copies: [LedgerCopy] = []
            for period in 0...renewals {
                let periodEnd = end - Int64(renewals - period) * length
                copies.append(try transaction(
                    key, id: "\(key.originalTransactionId)-\(period)", product: product, purchase: periodEnd - length, expires: periodEnd,
                    signed: signed, revoked: period == renewals && index % 7 == 3 ? periodEnd - length / 2 : nil))
            }
            switch index % 5 {
            case 1:  // A failed renewal with a grace period of six days, then Apple's retries.
                copies.append(renewalInfo(key, product: product, signed: signed, billingRetry: true, grace: end + 6 * day))
            case 2:  // A failed renewal, retried without a grace period.
                copies.append(renewalInfo(key, product: product, signed: signed, billingRetry: true, grace: nil))
            default:
                copies.append(renewalInfo(key, product: product, signed: signed, billingRetry: false, grace: nil))
            }
            var ledger = EntitlementLedger()
            for copy in copies { ledger.insert(copy) }
            return Key(key: key, copies: copies, ledger: ledger)
        }
    }

    static func transaction(
        _ key: SubscriptionKey, id: String, product: String, purchase: Int64, expires: Int64, signed: Int64, revoked: Int64?
    ) throws -> LedgerCopy {
        var members: [String: Any] = [
            "source": "jws", "bundle_id": key.bundleId, "environment": key.environment, "transaction_id": id,
            "original_transaction_id": key.originalTransactionId, "product_id": product,
            "product_type": "auto_renewable_subscription", "purchase_date": iso(purchase), "expires_date": iso(expires),
            "signed_date": iso(signed),
        ]
        if let revoked { members["revocation_date"] = iso(revoked) }
        let transaction = try JSONDecoder().decode(NormalizedTransaction.self, from: JSONSerialization.data(withJSONObject: members))
        return try #require(EntitlementLedger.copy(
            of: transaction, receiptCreationDate: nil, notificationSignedDate: nil, isRevocation: false,
            validatedAt: Timestamp(millisecondsSince1970: signed)))
    }

    static func renewalInfo(_ key: SubscriptionKey, product: String, signed: Int64, billingRetry: Bool, grace: Int64?) -> LedgerCopy {
        EntitlementLedger.renewalInfoCopy(
            originalTransactionId: key.originalTransactionId, environment: key.environment,
            signedDate: Timestamp(millisecondsSince1970: signed), notificationSignedDate: nil, renewalDate: nil,
            gracePeriodExpiresDate: grace.map { Timestamp(millisecondsSince1970: $0) }, autoRenewStatus: 1,
            expirationIntent: billingRetry ? 2 : nil, isInBillingRetryPeriod: billingRetry, productId: product,
            autoRenewProductId: product, appAccountToken: nil)
    }

    static func iso(_ milliseconds: Int64) -> String {
        Timestamp(millisecondsSince1970: milliseconds).iso8601
    }
}
