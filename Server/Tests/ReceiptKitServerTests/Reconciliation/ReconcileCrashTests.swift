import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("Reconciling: a SIGKILL mid-window, and the next run completing it")
struct ReconcileCrashTests {
    /// The app the test servers serve.
    static let bundleId = "com.receiptkit.example"

    @Test("receiptkit-server reconciles at start; SIGKILLed while Apple's second page is pending, what it stored stays, the cursor does not pass it, and a run from another process starts at once (the lock went with the process) and completes the window",
          arguments: Backend.available)
    func killedMidWindow(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 9_000_000_100, renewals: 6)
        // Tokens are checked at the real time, which the killed process and the server after it sign with.
        let fake = try AppleFake.fake(transactions, clock: { Date() })
        fake.pageSize = 2
        fake.enqueue(.stall(.milliseconds(1)), path: "/inApps/v1/notifications/history")
        fake.enqueue(.stall(.seconds(60)), path: "/inApps/v1/notifications/history")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-reconcile-kill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await fake.run { baseURL in
            try await Self.withProcessDatabase(backend, in: directory) { location, url in
                var environment = Vectors.environment
                environment["RECEIPTKIT_APPSTORE_KEY_ID"] = AppleFake.keyId
                environment["RECEIPTKIT_APPSTORE_ISSUER_ID"] = AppleFake.issuerId
                environment["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = try AppleFake.keyFile.get()
                environment["RECEIPTKIT_APPSTORE_API_URL"] = baseURL
                environment["RECEIPTKIT_DATABASE_URL"] = url
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
                #expect(server.logText.contains("reconciliation with Apple is on"), "\(server.logText)")
                let killedAt = Timestamp(Date())
                server.stop()  // SIGKILL, holding the reconcile lock
                _ = try await server.waitForExit(timeout: .seconds(10))

                try await withStore(location, searchPath: nil) { store in
                    let count = try await store.inputCount(dedupKeys: nil)
                    #expect(count == fake.pageSize)  // the first page, committed
                    let cursor = try await store.reconcileCursor(bundleId: Self.bundleId, environment: "Sandbox")
                    #expect((cursor ?? 0) < killedAt.millisecondsSince1970 - 3_600_000, "the cursor passed what was not stored")
                }

                // At once, from this process: the killed server's lock went with it. (PostgreSQL
                // ends a session as soon as it reads its closed connection: a few milliseconds,
                // against the five minutes an expiring lease would have held the window.)
                let next = Date()
                try await AppleFake.serve(baseURL, location: location, searchPath: nil, now: next) { server in
                    let started = ContinuousClock.now
                    var report = try await server.post("/v1/reconcile", "")
                    var busy = 0
                    while report.status == .conflict, ContinuousClock.now < started + .seconds(10) {
                        busy += 1
                        try await Task.sleep(for: .milliseconds(50))
                        report = try await server.post("/v1/reconcile", "")
                    }
                    #expect(report.status == .ok, "\(report.text) after \(busy) answers 409")
                    #expect(try report.json()["notifications"] as? Int == transactions.count)
                    #expect(try report.json()["recovered"] as? Int == transactions.count - fake.pageSize)
                    try await server.withStore { store in
                        let count = try await store.inputCount(dedupKeys: nil)
                        #expect(count == transactions.count)
                        let cursor = try await store.reconcileCursor(bundleId: Self.bundleId, environment: "Sandbox")
                        #expect(cursor == Timestamp(next).millisecondsSince1970)
                    }
                }
            }
        }
    }

    @Test("the reconcile lock: one holder at a time, this process included, free once given up or its body threw, one per database; the cursor moves only for its owner and never back",
          arguments: Backend.available)
    func lock(backend: Backend) async throws {
        struct Thrown: Error {}
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                try await withStore(location, searchPath: searchPath) { other in
                    let held = try await store.withReconcileLock { () async throws -> [Bool?] in
                        // Held: no other store gets it, nor this one again; a store of another
                        // database (schema) has a lock of its own.
                        let elsewhere = try await backend.withDatabase { location, searchPath in
                            var taken: Bool?
                            try await withStore(location, searchPath: searchPath) { third in
                                try await third.migrate()
                                taken = try await third.withReconcileLock { true }
                            }
                            return taken
                        }
                        return [try await other.withReconcileLock { true }, try await store.withReconcileLock { true }, elsewhere]
                    }
                    #expect(held == [nil, nil, true])
                    #expect(try await other.withReconcileLock { true } == true)
                    await #expect(throws: Thrown.self) { _ = try await store.withReconcileLock { () async throws -> Bool in throw Thrown() } }
                    #expect(try await other.withReconcileLock { true } == true)
                }

                #expect(try await store.reconcileCursor(bundleId: Self.bundleId, environment: "Sandbox") == nil)
                try await store.claimReconcileCursor(bundleId: Self.bundleId, environment: "Sandbox", owner: "a")
                #expect(try await store.advanceReconcileCursor(to: 1_200, bundleId: Self.bundleId, environment: "Sandbox", owner: "a"))
                #expect(try await store.advanceReconcileCursor(to: 1_100, bundleId: Self.bundleId, environment: "Sandbox", owner: "a"))
                #expect(try await store.reconcileCursor(bundleId: Self.bundleId, environment: "Sandbox") == 1_200)  // never back
                // b's run claims the cursor (a's lock went while a still ran): a can no longer move it.
                try await store.claimReconcileCursor(bundleId: Self.bundleId, environment: "Sandbox", owner: "b")
                #expect(try await store.advanceReconcileCursor(to: 5_000, bundleId: Self.bundleId, environment: "Sandbox", owner: "a") == false)
                #expect(try await store.reconcileCursor(bundleId: Self.bundleId, environment: "Sandbox") == 1_200)
                try await store.releaseReconcileCursors(owner: "a")  // not a's: nothing
                #expect(try await store.advanceReconcileCursor(to: 1_300, bundleId: Self.bundleId, environment: "Sandbox", owner: "b"))
                try await store.releaseReconcileCursors(owner: "b")
                #expect(try await store.advanceReconcileCursor(to: 1_400, bundleId: Self.bundleId, environment: "Sandbox", owner: "b") == false)
                #expect(try await store.reconcileCursor(bundleId: Self.bundleId, environment: "Sandbox") == 1_300)
            }
        }
    }

    /// A new database that a server process can be started on — a SQLite file in `directory`,
    /// or a PostgreSQL database of its own on the test server (a process takes no schema) — with
    /// its `RECEIPTKIT_DATABASE_URL`; a PostgreSQL database is dropped afterwards.
    static func withProcessDatabase(
        _ backend: Backend, in directory: URL, _ body: (_ location: DatabaseLocation, _ url: String) async throws -> Void
    ) async throws {
        switch backend {
        case .sqlite:
            let path = directory.appendingPathComponent("store.sqlite").path
            try await body(.sqlite(path: path), "sqlite:\(path)")
        case .postgres:
            guard let url = Backend.postgresURL else { throw Prerequisite.Missing(name: Prerequisite.postgres.name) }
            let test = try DatabaseLocation(url: url)
            let name = "receiptkit_process_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            guard var components = URLComponents(string: url) else {
                Issue.record("RECEIPTKIT_TEST_POSTGRES_URL is not a URL")
                return
            }
            components.path = "/" + name
            let processURL = try #require(components.string)
            try await Backend.withPostgresClient(test) { client in
                try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))  // a generated name
            }
            do {
                try await body(try DatabaseLocation(url: processURL), processURL)
            } catch {
                try? await Backend.withPostgresClient(test) { client in
                    try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
                }
                throw error
            }
            try await Backend.withPostgresClient(test) { client in
                try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
            }
        }
    }
}
