import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("Reconciling: a SIGKILL mid-window, and the next run completing it")
struct ReconcileCrashTests {
    @Test("receiptkit-server reconciles at start; killed while Apple's second page is pending, what it stored stays, the cursor does not pass it, and the next run (once the lease expired) completes the window")
    func killedMidWindow() async throws {
        let transactions = AppleFake.subscription(original: 9_000_000_100, renewals: 6)
        // The fake checks tokens six minutes ahead of the real clock: the killed process signs
        // with the real time, the server that follows with a clock past the dead one's lease.
        let fake = try AppleFake.fake(transactions, clock: { Date().addingTimeInterval(360) })
        fake.pageSize = 2
        fake.enqueue(.stall(.milliseconds(1)), path: "/inApps/v1/notifications/history")
        fake.enqueue(.stall(.seconds(60)), path: "/inApps/v1/notifications/history")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-reconcile-kill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("store.sqlite").path
        try await fake.run { baseURL in
            var environment = Vectors.environment
            environment["RECEIPTKIT_APPSTORE_KEY_ID"] = AppleFake.keyId
            environment["RECEIPTKIT_APPSTORE_ISSUER_ID"] = AppleFake.issuerId
            environment["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = try AppleFake.keyFile.get()
            environment["RECEIPTKIT_APPSTORE_API_URL"] = baseURL
            environment["RECEIPTKIT_DATABASE_URL"] = "sqlite:\(database)"
            environment["RECEIPTKIT_RECONCILE_INTERVAL"] = "3600"
            environment["PORT"] = "0"
            let server = try ServerProcess(environment: environment, log: directory.appendingPathComponent("server.log"))
            defer { server.stop() }
            let deadline = ContinuousClock.now + .seconds(60)
            while fake.requests(to: "/inApps/v1/notifications/history").count < 2 {
                guard ContinuousClock.now < deadline, server.isRunning else {
                    Issue.record("the server did not ask for the second page; log:\n\(server.logText)")
                    return
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            let killedAt = Timestamp(Date())
            server.stop()  // SIGKILL
            _ = try await server.waitForExit(timeout: .seconds(10))

            try await withStore(.sqlite(path: database), searchPath: nil) { store in
                let count = try await store.eventCount(dedupKeys: nil)
                #expect(count == fake.pageSize)  // the first page, committed
                let cursor = try await store.reconcileCursor()
                #expect((cursor ?? 0) < killedAt.millisecondsSince1970 - 3_600_000, "the cursor passed what was not stored")
            }

            let later = Date().addingTimeInterval(360)
            try await AppleFake.serve(baseURL, location: .sqlite(path: database), searchPath: nil, now: later) { next in
                let report = try await next.post("/v1/reconcile", "")
                #expect(report.status == .ok, "\(report.text)")
                #expect(try report.json()["notifications"] as? Int == transactions.count)
                #expect(try report.json()["recovered"] as? Int == transactions.count - fake.pageSize)
                try await next.withStore { store in
                    let count = try await store.eventCount(dedupKeys: nil)
                    #expect(count == transactions.count)
                    let cursor = try await store.reconcileCursor()
                    #expect(cursor == Timestamp(later).millisecondsSince1970)
                }
            }
        }
    }

    @Test("the reconcile lease: one owner at a time, taken over once expired; the cursor moves only for its holder and never back",
          arguments: Backend.available)
    func lease(backend: Backend) async throws {
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                #expect(try await store.reconcileCursor() == nil)
                #expect(try await store.takeReconcileLease(owner: "a", now: 1_000, until: 2_000))
                #expect(try await store.takeReconcileLease(owner: "b", now: 1_500, until: 2_500) == false)
                #expect(try await store.advanceReconcileCursor(to: 1_200, owner: "a", leaseUntil: 2_000))
                #expect(try await store.advanceReconcileCursor(to: 1_100, owner: "a", leaseUntil: 2_000))
                #expect(try await store.reconcileCursor() == 1_200)  // never back
                // a dies; its lease expires, and b takes over: a can no longer move the cursor.
                #expect(try await store.takeReconcileLease(owner: "b", now: 2_001, until: 3_000))
                #expect(try await store.advanceReconcileCursor(to: 5_000, owner: "a", leaseUntil: 6_000) == false)
                #expect(try await store.reconcileCursor() == 1_200)
                try await store.releaseReconcileLease(owner: "a")  // not a's: nothing
                #expect(try await store.takeReconcileLease(owner: "c", now: 2_500, until: 3_500) == false)
                try await store.releaseReconcileLease(owner: "b")
                #expect(try await store.takeReconcileLease(owner: "c", now: 2_500, until: 3_500))
            }
        }
    }
}
