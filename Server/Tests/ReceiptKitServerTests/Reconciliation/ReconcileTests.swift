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

    @Test("the service stopped while a renewal and a refund happen; restarted, one reconcile makes every state right, nothing folded twice",
          arguments: Backend.available)
    func stoppedAndRestarted(backend: Backend) async throws {
        let before = AppleFake.subscription(original: 5_000_000_100, renewals: 3)
        let appleNow = Mutex(AppleFake.now)
        let fake = try AppleFake.fake(before, clock: { appleNow.withLock { $0 } })
        let firstNow = AppleFake.now
        try await AppleFake.withDatabase(backend, fake: fake) { baseURL, location, searchPath in
            try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: firstNow) { server in
                #expect(try await server.post("/v1/transactions", #"{"transaction_id": "5000000100", "customer_id": "c1"}"#).status == .ok)
                let report = try await server.post("/v1/reconcile", "")
                #expect(report.status == .ok, "\(report.text)")
                #expect(try report.json()["notifications"] as? Int == before.count)
                #expect(try report.json()["recovered"] as? Int == before.count)
            }

            // While the service is down: the last renewal refunded, a new renewal after it.
            var changed = before
            let last = changed[changed.count - 1]
            changed[changed.count - 1].revocationDate = last.purchaseDate + AppleFake.day
            let renewal = FakeAppStoreServerAPI.Transaction(
                transactionId: "5000000103", originalTransactionId: "5000000100", productId: last.productId,
                type: last.type, subscriptionGroupIdentifier: last.subscriptionGroupIdentifier,
                purchaseDate: last.purchaseDate + 2 * AppleFake.day, expiresDate: (last.expiresDate ?? 0) + AppleFake.month)
            let after = changed + [renewal]
            fake.transactions = after
            fake.signedDate += 3 * AppleFake.day
            let laterNow = firstNow.addingTimeInterval(3 * 86_400)
            appleNow.withLock { $0 = laterNow }

            try await AppleFake.serve(baseURL, location: location, searchPath: searchPath, now: laterNow) { server in
                let report = try await server.post("/v1/reconcile", "")
                #expect(report.status == .ok, "\(report.text)")
                let json = try report.json()
                #expect(json["notifications"] as? Int == after.count)
                #expect(json["recovered"] as? Int == 2)  // the refund and the renewal
                // The window starts an hour before where the first run ended (the stored cursor).
                #expect(json["start"] as? String == Timestamp(firstNow.addingTimeInterval(-3600)).iso8601)
                let state = try await server.get("/v1/subscriptions/5000000100").json()
                #expect(state["status"] as? String == "active", "\(state)")
                #expect(state["latest_transaction_id"] as? String == "5000000103")
                let customer = try await server.get("/v1/customers/c1/entitlements").json()
                #expect(customer["entitled"] as? Bool == true)

                let again = try await server.post("/v1/reconcile", "")
                #expect(try again.json()["recovered"] as? Int == 0)
                try await server.withStore { store in
                    let keys = Set((before + after).map { "notification:\(Self.uuid($0))" })
                    let notifications = try await store.eventCount(dedupKeys: Array(keys))
                    #expect(notifications == keys.count)
                }
                let metrics = try await server.get("/metrics", token: nil).text
                #expect(metrics.contains("receiptkit_reconcile_recovered_total 2"), "\(metrics)")
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
                        let count = try await store.eventCount(dedupKeys: nil)
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

    @Test("a forged notification in the history is not stored; the others are")
    func forgedNotification() async throws {
        let transactions = AppleFake.subscription(original: 5_000_000_400, renewals: 3)
        let fake = try AppleFake.fake(transactions)
        fake.forgedTransactionIds = [transactions[1].transactionId]
        try await AppleFake.withServer(.sqlite, fake: fake) { server in
            let report = try await server.post("/v1/reconcile", "").json()
            #expect(report["rejected"] as? Int == 1)
            #expect(report["recovered"] as? Int == transactions.count - 1)
            try await server.withStore { store in
                let forged = try await store.eventCount(dedupKeys: ["notification:\(Self.uuid(transactions[1]))"])
                #expect(forged == 0)
            }
        }
    }
}
