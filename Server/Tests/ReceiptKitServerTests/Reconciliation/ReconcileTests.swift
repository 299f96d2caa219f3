import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Synchronization
import Testing

@Suite("POST /v1/reconcile: missed notifications recovered from Get Notification History")
struct ReconcileTests {
    static func uuid(_ transaction: FakeAppStoreServerAPI.Transaction) -> String {
        let id = transaction.transactionId
        return (transaction.revocationDate != nil ? "00000000-0000-4000-8001-" : "00000000-0000-4000-8000-")
            + String(repeating: "0", count: max(0, 12 - id.count)) + id.suffix(12)
    }

    /// A subscription period of `length` from `start` (milliseconds).
    static func period(
        _ id: Int64, of original: Int64, from start: Int64, length: Int64 = AppleFake.month
    ) -> FakeAppStoreServerAPI.Transaction {
        FakeAppStoreServerAPI.Transaction(
            transactionId: String(id), originalTransactionId: String(original), productId: "com.receiptkit.monthly",
            type: "Auto-Renewable Subscription", subscriptionGroupIdentifier: "21000001", purchaseDate: start,
            expiresDate: start + length)
    }

    static func iso(_ milliseconds: Int64) -> String { Timestamp(millisecondsSince1970: milliseconds).iso8601 }

    /// The UUID of the test's notification `number`.
    static func uuid(_ number: Int) -> String { String(format: "6f0b5c2e-0000-4000-8000-%012d", number) }

    @Test("the service stopped while a renewal, a grace period and a refund happen; restarted, one reconcile makes every state right, nothing folded twice",
          arguments: Backend.available)
    func stoppedAndRestarted(backend: Backend) async throws {
        typealias Notification = FakeAppStoreServerAPI.Notification
        typealias RenewalInfo = FakeAppStoreServerAPI.RenewalInfo
        let (signed, hour, day, month) = (AppleFake.signedDate, Int64(3_600_000), AppleFake.day, AppleFake.month)
        // Three monthly subscriptions of one customer: A renews on day 1, B fails to renew on
        // day 1 into a 16-day grace period, C (renewal turned off just after the signed date)
        // is refunded on day 2.
        let a = [Self.period(5_000_000_100, of: 5_000_000_100, from: signed - 2 * month + day),
                 Self.period(5_000_000_101, of: 5_000_000_100, from: signed - month + day)]
        let aRenewal = Self.period(5_000_000_102, of: 5_000_000_100, from: signed + day)
        let b = [Self.period(5_000_000_200, of: 5_000_000_200, from: signed - 2 * month + day),
                 Self.period(5_000_000_201, of: 5_000_000_200, from: signed - month + day)]
        let c = [Self.period(5_000_000_300, of: 5_000_000_300, from: signed - 40 * day),
                 Self.period(5_000_000_301, of: 5_000_000_300, from: signed - 10 * day)]
        let cRefunded = FakeAppStoreServerAPI.Transaction(
            transactionId: c[1].transactionId, originalTransactionId: c[1].originalTransactionId, productId: c[1].productId,
            type: c[1].type, subscriptionGroupIdentifier: c[1].subscriptionGroupIdentifier, purchaseDate: c[1].purchaseDate,
            expiresDate: c[1].expiresDate, revocationDate: signed + 2 * day)
        let cOff = RenewalInfo(originalTransactionId: "5000000300", productId: "com.receiptkit.monthly", autoRenewStatus: 0, renewalDate: c[1].expiresDate)
        let bGrace = RenewalInfo(
            originalTransactionId: "5000000200", productId: "com.receiptkit.monthly", expirationIntent: 2,
            isInBillingRetryPeriod: true, gracePeriodExpiresDate: signed + day + 16 * day, renewalDate: signed + day)
        let aRenewing = RenewalInfo(originalTransactionId: "5000000100", productId: "com.receiptkit.monthly", renewalDate: aRenewal.expiresDate)
        // What Apple sent before the service's first run, delivered, long before its first window;
        // and renewal turned off, twenty minutes after the signed date: the first run recovers it.
        let sent = (a + b + c).enumerated().map { index, transaction in
            Notification(index % 2 == 0 ? "SUBSCRIBED" : "DID_RENEW", uuid: Self.uuid(index), signedDate: transaction.purchaseDate - hour,
                         transaction: transaction, failed: false)
        } + [Notification("DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", uuid: Self.uuid(10),
                          signedDate: signed + 20 * 60_000, transaction: c[1], renewalInfo: cOff)]
        let appleNow = Mutex(AppleFake.now)
        let fake = try AppleFake.fake(a + b + c, clock: { appleNow.withLock { $0 } })
        fake.renewalInfos = ["5000000300": cOff]
        fake.notifications = sent
        fake.signedDate = signed + 40 * 60_000
        let firstNow = AppleFake.now
        try await AppleFake.withDatabase(backend, fake: fake) { baseURL, location, searchPath in
            let eventsBefore = Mutex(0)
            try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: firstNow) { server in
                #expect(try await server.post("/v1/transactions", #"{"transaction_id": "5000000100", "customer_id": "c1"}"#).status == .ok)
                let report = try await server.post("/v1/reconcile", "")
                #expect(report.status == .ok, "\(report.text)")
                #expect(try report.json()["notifications"] as? Int == 1)
                #expect(try report.json()["recovered"] as? Int == 1)
                let stateC = try await server.get("/v1/subscriptions/5000000300").json()
                #expect(stateC["status"] as? String == "active" && stateC["will_renew"] as? Bool == false, "\(stateC)")
                try await server.withStore { store in
                    let count = try await store.inputCount(dedupKeys: nil)
                    eventsBefore.withLock { $0 = count }
                }
            }

            // While the service is down, at Apple: A renews, B fails to renew into its grace
            // period, C is refunded; each sends a notification that reaches nobody.
            fake.transactions = a + [aRenewal] + b + [c[0], cRefunded]
            fake.renewalInfos = ["5000000100": aRenewing, "5000000200": bGrace, "5000000300": cOff]
            fake.notifications = sent + [
                Notification("DID_RENEW", uuid: Self.uuid(11), signedDate: signed + day - hour, transaction: aRenewal, renewalInfo: aRenewing),
                Notification("DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", uuid: Self.uuid(12), signedDate: signed + day + hour,
                             transaction: b[1], renewalInfo: bGrace),
                Notification("REFUND", uuid: Self.uuid(13), signedDate: signed + 2 * day, transaction: cRefunded, renewalInfo: cOff),
            ]
            fake.signedDate = signed + 3 * day + 30 * 60_000
            let laterNow = firstNow.addingTimeInterval(3 * 86_400)
            appleNow.withLock { $0 = laterNow }

            try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: laterNow) { server in
                // Restarted: what it stored says A and B lapsed and C is active — all three wrong.
                for (id, wrong) in [("5000000100", "expired"), ("5000000200", "expired"), ("5000000300", "active")] {
                    let stale = try await server.get("/v1/subscriptions/\(id)").json()
                    #expect(stale["status"] as? String == wrong, "\(id): \(stale)")
                }
                let report = try await server.post("/v1/reconcile", "")
                #expect(report.status == .ok, "\(report.text)")
                let json = try report.json()
                // The window starts an hour before where the first run ended (the stored cursor):
                // C's renewal turned off is in it again, a replay; the three from the downtime are new.
                #expect(json["start"] as? String == Timestamp(firstNow.addingTimeInterval(-3600)).iso8601)
                #expect(json["notifications"] as? Int == 4)
                #expect(json["recovered"] as? Int == 3)

                let stateA = try await server.get("/v1/subscriptions/5000000100").json()
                #expect(stateA["status"] as? String == "active", "\(stateA)")
                #expect(stateA["entitled"] as? Bool == true)
                #expect(stateA["latest_transaction_id"] as? String == "5000000102")
                #expect(stateA["expires_date"] as? String == Self.iso(signed + day + month))
                #expect(stateA["will_renew"] as? Bool == true)

                let stateB = try await server.get("/v1/subscriptions/5000000200").json()
                #expect(stateB["status"] as? String == "grace_period", "\(stateB)")
                #expect(stateB["apple_status"] as? Int == 4)
                #expect(stateB["entitled"] as? Bool == true)
                #expect(stateB["latest_transaction_id"] as? String == "5000000201")
                #expect(stateB["expires_date"] as? String == Self.iso(signed + day))
                #expect(stateB["grace_period_expires_date"] as? String == Self.iso(signed + 17 * day))

                let stateC = try await server.get("/v1/subscriptions/5000000300").json()
                #expect(stateC["status"] as? String == "revoked", "\(stateC)")
                #expect(stateC["apple_status"] as? Int == 5)
                #expect(stateC["entitled"] as? Bool == false)
                #expect(stateC["revocation_date"] as? String == Self.iso(signed + 2 * day))
                #expect(stateC["will_renew"] as? Bool == false)

                let customer = try await server.get("/v1/customers/c1/entitlements").json()
                #expect(customer["entitled"] as? Bool == true)
                #expect((customer["subscriptions"] as? [Any])?.count == 3)

                // Each notification of the window stored once, and nothing else stored.
                let window = (10...13).map { "notification:\(Self.uuid($0))" }
                let expected = eventsBefore.withLock { $0 } + 3
                try await server.withStore { store in
                    let stored = try await store.inputCount(dedupKeys: window)
                    #expect(stored == window.count)
                    let count = try await store.inputCount(dedupKeys: nil)
                    #expect(count == expected)
                }
                // The same window read again: four replays, nothing folded twice.
                let again = try await server.post("/v1/reconcile?since=\(Timestamp(firstNow.addingTimeInterval(-3600)).iso8601)", "")
                #expect(try again.json()["notifications"] as? Int == 4)
                #expect(try again.json()["recovered"] as? Int == 0)
                try await server.withStore { store in
                    let count = try await store.inputCount(dedupKeys: nil)
                    #expect(count == expected)
                }
                let metrics = try await server.get("/metrics", token: nil).text
                #expect(metrics.contains(#"receiptkit_reconcile_recovered_total{bundle_id="com.receiptkit.example",environment="Sandbox"} 3"#), "\(metrics)")
            }
        }
    }

    @Test("two replicas on one database reconciling at once: each notification stored once, recovered once",
          arguments: Backend.available)
    func replicas(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 5_000_000_200, renewals: 30)
        let fake = try AppleFake.fake(transactions)
        fake.pageSize = 3
        try await AppleFake.withDatabase(backend, fake: fake) { baseURL, location, searchPath in
            try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: AppleFake.now) { first in
                try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: AppleFake.now) { second in
                    async let a = first.post("/v1/reconcile", "")
                    async let b = second.post("/v1/reconcile", "")
                    let answers = try await [a, b]
                    var recovered = 0
                    for answer in answers {
                        if answer.status == .ok {
                            recovered += try answer.json()["recovered"] as? Int ?? 0
                        } else {
                            try answer.expectError(.conflict, "reconcile_running")
                            #expect(answer.headers[.retryAfter] != nil)
                        }
                    }
                    #expect(answers.contains { $0.status == .ok })
                    #expect(recovered == transactions.count)
                    try await first.withStore { store in
                        let count = try await store.inputCount(dedupKeys: nil)
                        #expect(count == transactions.count)
                    }
                }
            }
        }
    }

    @Test("Apple failing mid-way: 503, the cursor stays; the next run reads the same window and completes it",
          arguments: Backend.available)
    func failureKeepsCursor(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 5_000_000_300, renewals: 4)
        let fake = try AppleFake.fake(transactions)
        try await AppleFake.withServer(backend, fake: fake) { server in
            let since = Timestamp(AppleFake.now.addingTimeInterval(-2 * 86_400)).iso8601
            for _ in 0..<AppleFake.quickRetry.maximumAttempts {
                fake.enqueue(.status(500), path: "/inApps/v1/notifications/history")
            }
            try await server.post("/v1/reconcile", "").expectError(.serviceUnavailable, "apple_unavailable")
            let first = try await server.post("/v1/reconcile", "")
            #expect(first.status == .ok, "\(first.text)")
            // No cursor yet: the first window, not one after the failed run.
            #expect(try first.json()["start"] as? String == Timestamp(AppleFake.now.addingTimeInterval(-7 * 86_400)).iso8601)
            #expect(try first.json()["recovered"] as? Int == transactions.count)
            let explicit = try await server.post("/v1/reconcile?since=\(since)", "")
            #expect(try explicit.json()["start"] as? String == since)
            #expect(try explicit.json()["recovered"] as? Int == 0)
            try await server.post("/v1/reconcile?since=yesterday", "").expectError(.badRequest, "invalid_request")
        }
    }

    @Test("a forged notification in the history is not stored, counted by its code; the others are",
          arguments: Backend.available)
    func forgedNotification(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 5_000_000_400, renewals: 3)
        let fake = try AppleFake.fake(transactions)
        fake.forgedTransactionIds = [transactions[1].transactionId]
        try await AppleFake.withServer(backend, fake: fake) { server in
            let report = try await server.post("/v1/reconcile", "").json()
            #expect(report["rejected"] as? Int == 1)
            #expect(report["recovered"] as? Int == transactions.count - 1)
            try await server.withStore { store in
                let forged = try await store.inputCount(dedupKeys: ["notification:\(Self.uuid(transactions[1]))"])
                #expect(forged == 0)
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == transactions.count - 1)
            }
            // The forged renewal not folded: the subscription's state has the others only.
            let state = try await server.get("/v1/subscriptions/5000000400").json()
            #expect(state["latest_transaction_id"] as? String == transactions.last?.transactionId)
            let metrics = try await server.get("/metrics", token: nil).text
            #expect(metrics.contains(#"receiptkit_reconcile_rejected_total{code="invalid_signature",bundle_id="com.receiptkit.example",environment="Sandbox"} 1"#), "\(metrics)")
        }
    }

    @Test("the cursor's lag: how far behind the cursor was when a run started, until a run completes; then 0",
          arguments: Backend.available)
    func lag(backend: Backend) async throws {
        let appleNow = Mutex(AppleFake.now)
        let fake = try AppleFake.fake(AppleFake.subscription(original: 5_000_000_500, renewals: 2), clock: { appleNow.withLock { $0 } })
        try await AppleFake.withDatabase(backend, fake: fake) { baseURL, location, searchPath in
            try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: AppleFake.now) { server in
                let first = try await server.post("/v1/reconcile", "")
                #expect(first.status == .ok)
            }
            // Two hours later, Apple failing: the run stops with the cursor two hours behind.
            let later = AppleFake.now.addingTimeInterval(7200)
            appleNow.withLock { $0 = later }
            try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: later) { server in
                for _ in 0..<AppleFake.quickRetry.maximumAttempts {
                    fake.enqueue(.status(500), path: "/inApps/v1/notifications/history")
                }
                try await server.post("/v1/reconcile", "").expectError(.serviceUnavailable, "apple_unavailable")
                let behind = try await server.get("/metrics", token: nil).text
                #expect(behind.contains(#"receiptkit_reconcile_lag_seconds{bundle_id="com.receiptkit.example",environment="Sandbox"} 7200"#), "\(behind)")
                let completed = try await server.post("/v1/reconcile", "")
                #expect(completed.status == .ok)
                let caughtUp = try await server.get("/metrics", token: nil).text
                #expect(caughtUp.contains(#"receiptkit_reconcile_lag_seconds{bundle_id="com.receiptkit.example",environment="Sandbox"} 0"#), "\(caughtUp)")
            }
        }
    }

    @Test("a window never reaches further back than Apple's 180 days (less an hour)")
    func horizon() async throws {
        let fake = try AppleFake.fake(AppleFake.subscription(original: 5_000_000_600, renewals: 1))
        try await AppleFake.withServer(.sqlite, fake: fake) { server in
            let since = Timestamp(AppleFake.now.addingTimeInterval(-200 * 86_400)).iso8601
            let report = try await server.post("/v1/reconcile?since=\(since)", "")
            #expect(report.status == .ok, "\(report.text)")
            let start = Timestamp(AppleFake.now.addingTimeInterval(-180 * 86_400 + 3600))
            #expect(try report.json()["start"] as? String == start.iso8601)
            let asked = try #require(fake.requests(to: "/inApps/v1/notifications/history").last?.bodyJSON)
            #expect((asked["startDate"] as? NSNumber)?.int64Value == start.millisecondsSince1970)
        }
    }
}
