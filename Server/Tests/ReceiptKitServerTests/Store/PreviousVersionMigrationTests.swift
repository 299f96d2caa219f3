import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Synchronization
import Testing

/// A database the previous version (schema v9: one app, one environment) wrote, served by this one.
@Suite("a database from the previous version (v9) migrates: every state, event and link as before")
struct PreviousVersionMigrationTests {
    /// Where the previous version's one reconcile cursor was.
    static let oldCursor: Int64 = 1_780_000_000_000

    static func body(_ members: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: members), as: UTF8.self)
    }

    /// What a client sees of the story: each answer's text.
    static func snapshot(_ server: TestServer) async throws -> [String: String] {
        var answers: [String: String] = [:]
        for path in [
            "/v1/subscriptions/\(CustomerStory.original)", "/v1/subscriptions/8001",
            "/v1/customers/\(CustomerStory.customer)/entitlements", "/v1/customers/bob/entitlements",
            "/v1/customers/\(CustomerStory.customer)/events", "/v1/customers/bob/events",
            "/v1/events?limit=1000", "/v1/subscriptions?customer_id=bob",
        ] {
            let answer = try await server.get(path)
            answers[path] = "\(answer.status.code) \(answer.text)"
        }
        return answers
    }

    @Test("v9 → now: the same answers for every subscription, customer and feed; the old dedup keys still make replays; each pair's cursor starts at the old cursor",
          arguments: Backend.available)
    func fromV9(backend: Backend) async throws {
        let payloads = try Payloads()
        let story = try CustomerStory(payloads)
        let t0 = CustomerStory.start
        let bobs = try payloads.transaction(id: "8001", original: "8001", purchase: t0, expires: t0 + 400 * day, signed: t0)
        let clock: @Sendable () -> Date = { Date(timeIntervalSince1970: Double(t0 + 120 * day) / 1000) }

        try await backend.withDatabase { location, searchPath in
            // The story as this version stores it, then the database taken back to v9's shape:
            // v9's table names, its dedup keys, its one cursor, v10 and v11 not applied.
            let before = try await withServer(location, searchPath, clock) { server in
                for notification in story.notifications {
                    let answer = try await server.notify(notification)
                    #expect(answer.status == .ok, "\(answer.text)")
                }
                let purchase = try await server.post("/v1/transactions", Self.body(["signed_transaction": bobs, "customer_id": "bob"]))
                #expect(purchase.status == .ok, "\(purchase.text)")
                return try await Self.snapshot(server)
            }
            let inputs = try await backend.downgradeToV9(location, searchPath: searchPath, cursor: Self.oldCursor)
            #expect(inputs.legacyKeys == 1, "bob's transaction: the one input stored under a transaction key")

            try await withServer(location, searchPath, clock) { server in
                let after = try await Self.snapshot(server)
                for (path, answer) in before {
                    #expect(after[path] == answer, "\(path)")
                }
                // A replay of what v9 stored is found under its old key.
                let replay = try await server.post("/v1/transactions", Self.body(["signed_transaction": bobs, "customer_id": "bob"]))
                #expect(try replay.json()["duplicate"] as? Bool == true, "\(replay.text)")
                let replayedNotification = try await server.notify(story.refund)
                #expect(replayedNotification.status == .ok)
                try await server.withStore { store in
                    let count = try await store.inputCount(dedupKeys: nil)
                    #expect(count == inputs.total)
                    // The app and environment the old cursor served start where it was.
                    try await store.claimReconcileCursor(bundleId: Payloads.bundleId, environment: "Sandbox", owner: "test")
                    let position = try await store.reconcileCursor(bundleId: Payloads.bundleId, environment: "Sandbox")
                    #expect(position == Self.oldCursor)
                    try await store.releaseReconcileCursors(owner: "test")
                }
                // And new inputs fold onto the migrated rows: bob's purchase refunded.
                let refund = try payloads.transaction(
                    id: "8001", original: "8001", purchase: t0, expires: t0 + 400 * day, signed: t0 + 110 * day, revocation: t0 + 110 * day)
                let refunded = try await server.post("/v1/transactions", Self.body(["signed_transaction": refund, "customer_id": "bob"]))
                #expect(try refunded.json()["duplicate"] as? Bool == false, "\(refunded.text)")
                let state = try await server.get("/v1/subscriptions/8001").json()
                #expect(state["status"] as? String == "revoked", "\(state)")
            }
        }
    }

    private func withServer<T: Sendable>(
        _ location: DatabaseLocation, _ searchPath: String?, _ clock: @escaping @Sendable () -> Date,
        _ body: @escaping @Sendable (TestServer) async throws -> T
    ) async throws -> T {
        let result = Mutex<T?>(nil)
        try await TestServer.serve(location: location, searchPath: searchPath, clock: clock) { server in
            let value = try await body(server)
            result.withLock { $0 = value }
        }
        return try #require(result.withLock { $0 })
    }
}

extension Backend {
    /// What ``downgradeToV9(_:searchPath:cursor:)`` found: the inputs, and how many of them had
    /// their dedup key put back in v9's form.
    struct DowngradedInputs {
        let total: Int
        let legacyKeys: Int
    }

    /// Takes a database of this version back to the shape v9 left it in: `inputs` and
    /// `input_subscriptions` (and, on PostgreSQL, their constraints and sequence) under their
    /// old names, transaction and renewal info dedup keys without app and environment, the one
    /// reconcile cursor at `cursor` and no per-pair cursors, and v10 and v11 not applied.
    func downgradeToV9(_ location: DatabaseLocation, searchPath: String?, cursor: Int64) async throws -> DowngradedInputs {
        /// v9's dedup key of a transaction or renewal info key of this version; `nil` for others.
        @Sendable func legacy(_ key: String) -> String? {
            let parts = key.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 5, parts[0] == "transaction" || parts[0] == "renewal_info" else { return nil }
            return "\(parts[0]):\(parts[3]):\(parts[4])"
        }
        let renames = [
            "DROP TABLE reconcile_cursors",
            "ALTER TABLE input_subscriptions RENAME COLUMN input_id TO event_id",
            "ALTER TABLE input_subscriptions RENAME TO event_subscriptions",
            "ALTER TABLE inputs RENAME TO events",
        ]
        switch location {
        case .sqlite(let path):
            // The server just stopped may still be closing its connections.
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            return try await DatabaseQueue(path: path, configuration: configuration).write { db in
                for statement in renames { try db.execute(sql: statement) }
                try db.execute(sql: "UPDATE reconcile_cursor SET position = ? WHERE id = 1", arguments: [cursor])
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier IN ('v10-inputs', 'v11-reconcile-cursors')")
                let keys = try String.fetchAll(db, sql: "SELECT dedup_key FROM events")
                var rewritten = 0
                for key in keys {
                    guard let old = legacy(key) else { continue }
                    try db.execute(sql: "UPDATE events SET dedup_key = ? WHERE dedup_key = ?", arguments: [old, key])
                    rewritten += 1
                }
                return DowngradedInputs(total: keys.count, legacyKeys: rewritten)
            }
        case .postgres:
            var result: DowngradedInputs?
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for statement in renames + [
                    "ALTER TABLE events RENAME CONSTRAINT inputs_pkey TO events_pkey",
                    "ALTER TABLE events RENAME CONSTRAINT inputs_dedup_key_key TO events_dedup_key_key",
                    "ALTER SEQUENCE inputs_id_seq RENAME TO events_id_seq",
                    "ALTER TABLE event_subscriptions RENAME CONSTRAINT input_subscriptions_pkey TO event_subscriptions_pkey",
                    "ALTER TABLE event_subscriptions RENAME CONSTRAINT input_subscriptions_input_id_fkey TO event_subscriptions_event_id_fkey",
                    "DELETE FROM receiptkit_migrations WHERE id IN ('v10-inputs', 'v11-reconcile-cursors')",
                ] {
                    try await client.query(PostgresQuery(unsafeSQL: statement))  // constant text
                }
                try await client.query("UPDATE reconcile_cursor SET position = \(cursor) WHERE id = 1")
                var keys: [String] = []
                for try await key in try await client.query("SELECT dedup_key FROM events").decode(String.self) { keys.append(key) }
                var rewritten = 0
                for key in keys {
                    guard let old = legacy(key) else { continue }
                    try await client.query("UPDATE events SET dedup_key = \(old) WHERE dedup_key = \(key)")
                    rewritten += 1
                }
                result = DowngradedInputs(total: keys.count, legacyKeys: rewritten)
            }
            return try #require(result)
        }
    }
}
