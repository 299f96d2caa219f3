import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Synchronization
import Testing

/// Migrations from earlier servers' databases keep every state, link and input.
extension StoreTests {
    @Test("v5 moves the whole ledgers a v4 server stored into rows: every state, link and event kept",
          arguments: Backend.available)
    func ledgersMigration(backend: Backend) async throws {
        let keys = [
            SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "1"),
            SubscriptionKey(bundleId: "b", environment: "Production", originalTransactionId: "1"),
            SubscriptionKey(bundleId: "a", environment: "Sandbox", originalTransactionId: "1"),
            SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "2"),
        ]
        // What a v4 server stored for each key: its ledger, whole, as `jsonBytes()` wrote it —
        // renewals, a late refunded copy, an upgrade — and each event's record.
        var ledgers: [SubscriptionKey: EntitlementLedger] = [:]
        var rows: [V4Rows.Event] = []
        for (number, key) in keys.enumerated() {
            var ledger = EntitlementLedger()
            for month in 0..<(6 + number) {
                let start = Int64(month) * 2_592_000
                let copy = try Self.copy(key, id: "\(number)\(month)", purchase: start, signed: start, expires: start + 2_592_000)
                ledger.insert(copy)
                rows.append(V4Rows.Event(key: key, record: "{\"copy\":\(rows.count)}"))
            }
            ledger.insert(try Self.copy(key, id: "\(number)2", purchase: 2 * 2_592_000, signed: 9_000_000,
                                        expires: 3 * 2_592_000, revoked: 9_000_000))
            if number == 3 {
                ledger.insert(try Self.copy(key, id: "\(number)5", purchase: 5 * 2_592_000, signed: 14_000_000,
                                            expires: 6 * 2_592_000, upgraded: true))
            }
            ledgers[key] = ledger
        }
        let instants = stride(from: Int64(0), through: 30_000_000, by: 700_000).map { Timestamp(millisecondsSince1970: $0 * 1000) }
            + [Self.later]
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await Self.migrate(store, through: "v4-keys-led-by-original-transaction-id")
            }
            try await backend.insertV4(
                V4Rows(ledgers: ledgers, events: rows, links: [("c0", keys[0]), ("c0", keys[3]), ("c1", keys[1])]),
                location: location, searchPath: searchPath)
            try await withStore(location, searchPath: searchPath) { store in
                try await Self.migrate(store, through: nil)
                for (key, ledger) in ledgers {
                    for instant in instants {
                        #expect(try await store.state(of: key, at: instant) == ledger.state(for: key, at: instant),
                                "\(key) at \(instant.iso8601)")
                    }
                    #expect(try await store.inputs(touching: [key]).map(\.record)
                        == rows.filter { $0.key == key }.map(\.record))
                }
                #expect(try await store.keys(customerId: "c0") == [keys[0], keys[3]].sorted())
                #expect(try await store.keys(customerId: "c1") == [keys[1]])
                #expect(try await store.keys(originalTransactionId: "1") == Array(keys[0..<3]).sorted())
                // Folds continue from the migrated rows.
                var ledger = try #require(ledgers[keys[0]])
                let renewal = try Self.copy(keys[0], id: "next", purchase: 20_000_000, signed: 20_000_000)
                ledger.insert(renewal)
                #expect(try await store.record(event("after", keys: [keys[0]], copies: [renewal])))
                for instant in instants {
                    #expect(try await store.state(of: keys[0], at: instant) == ledger.state(for: keys[0], at: instant))
                }
            }
        }
    }

    @Test("v12 counts the derived states and the chart's month of notifications a v11 server stored: the counts kept since",
          arguments: Backend.available)
    func countsMigration(backend: Backend) async throws {
        let start = ms("2025-06-01T00:00:00Z") / 1000
        let keys = (0..<6).map { SubscriptionKey(bundleId: $0 < 4 ? "a" : "b", environment: $0 % 2 == 0 ? "Sandbox" : "Production",
                                                 originalTransactionId: "\(700 + $0)") }
        try await backend.withDatabase { location, searchPath in
            var counts: [SubscriptionCount] = []
            var days: [NotificationDay] = []
            let now = Timestamp(millisecondsSince1970: (start + 5 * 86_400) * 1000)
            try await withStore(location, searchPath: searchPath) { store in
                try await Self.migrate(store, through: nil)
                for (index, key) in keys.enumerated() {
                    // Periods ending before `now` and after it; one refunded.
                    let copy = try Self.copy(key, id: "\(key.originalTransactionId)-1", purchase: start - 86_400, signed: start,
                                             expires: start + Int64(index) * 86_400 * 2, revoked: index == 5 ? start + 3_600 : nil)
                    var input = event("key \(index)", keys: [key], copies: [copy])
                    input.receivedAt = (start + 60) * 1000
                    #expect(try await store.record(input))
                }
                // Notifications of the last days, at noon UTC, and one 40 days old (the migration runs
                // at the time of day and fills the chart's 31 days only).
                let noon = (Int64(Date().timeIntervalSince1970) / 86_400 - 3) * 86_400_000 + 43_200_000
                for (index, type) in ["DID_RENEW", "DID_RENEW", "EXPIRED", "TEST", "SUBSCRIBED"].enumerated() {
                    let notification = VerifiedInput(
                        dedupKey: "test:notification:\(index)", kind: "notification", raw: Array("n\(index)".utf8),
                        record: type == "TEST" ? #"{"notification":{}}"# : #"{"notification":{"type":"\#(type)"}}"#,
                        receivedAt: index == 4 ? noon - 40 * 86_400_000 : noon + Int64(index / 2) * 86_400_000, keys: [], copies: [], links: [],
                        cause: EventCause(source: .appleNotification, notificationType: type == "TEST" ? nil : type))
                    #expect(try await store.record(notification))
                }
                counts = try await store.subscriptionCounts(at: now)
                days = try await store.notificationDays(from: 0)
            }
            #expect(counts.reduce(0) { $0 + $1.count } == keys.count)
            #expect(Set(counts.map(\.status)) == [.active, .expired, .revoked])
            // Kept as the keys were stored: each key's derived state (at its input) in a count.
            #expect(try await backend.scalar("SELECT CAST(SUM(count) AS BIGINT) FROM subscription_counts", location: location, searchPath: searchPath)
                == Int64(keys.count))
            #expect(days.map(\.count) == [1, 2, 1, 1])
            #expect(days.map(\.type) == ["SUBSCRIBED", "DID_RENEW", nil, "EXPIRED"])
            // What a v11 server left: the keys' derived states and the notifications, no counts,
            // records as text (two of them here; the others stay deflated, as this server stores
            // them: the migration reads both).
            try await backend.execute([
                "UPDATE inputs SET record = '{\"notification\":{\"type\":\"DID_RENEW\"}}' WHERE dedup_key = 'test:notification:0'",
                "UPDATE inputs SET record = '{\"notification\":{\"type\":\"EXPIRED\"}}' WHERE dedup_key = 'test:notification:2'",
                "DROP TABLE subscription_counts", "DROP TABLE notification_days",
                location.isSQLite
                    ? "DELETE FROM grdb_migrations WHERE identifier LIKE 'v12-%'" : "DELETE FROM receiptkit_migrations WHERE id LIKE 'v12-%'",
            ], location: location, searchPath: searchPath)
            try await withStore(location, searchPath: searchPath) { store in
                try await Self.migrate(store, through: nil)
                #expect(try await store.subscriptionCounts(at: now) == counts)
                #expect(try await store.notificationDays(from: 0) == Array(days.dropFirst()))
                // And the counts move on from there.
                let renewal = try Self.copy(keys[0], id: "700-2", purchase: start, signed: start + 60, expires: start + 40 * 86_400)
                var input = event("renewal", keys: [keys[0]], copies: [renewal])
                input.receivedAt = (start + 120) * 1000
                #expect(try await store.record(input))
                let after = try await store.subscriptionCounts(at: now)
                #expect(after.first { $0.bundleId == "a" && $0.environment == "Sandbox" && $0.status == .active }?.count
                    == (counts.first { $0.bundleId == "a" && $0.environment == "Sandbox" && $0.status == .active }?.count ?? 0) + 1)
            }
        }
    }

    static func migrate(_ store: Store, through lastId: String?) async throws {
        try await store.migrate(through: lastId)
    }
}

extension Backend {
    /// Runs statements through a connection of the test's own.
    func execute(_ statements: [String], location: DatabaseLocation, searchPath: String?) async throws {
        switch location {
        case .sqlite(let path):
            try await DatabaseQueue(path: path).write { db in
                for statement in statements { try db.execute(sql: statement) }
            }
        case .postgres:
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for statement in statements { try await client.query(PostgresQuery(unsafeSQL: statement)) }
            }
        }
    }
}

extension Backend {
    /// The one integer a query answers, through a connection of the test's own.
    func scalar(_ query: String, location: DatabaseLocation, searchPath: String?) async throws -> Int64? {
        switch location {
        case .sqlite(let path):
            return try await DatabaseQueue(path: path).read { db in try Int64.fetchOne(db, sql: query) }
        case .postgres:
            let result = Mutex<Int64?>(nil)
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for try await value in try await client.query(PostgresQuery(unsafeSQL: query)).decode(Int64?.self) {
                    result.withLock { $0 = value }
                }
            }
            return result.withLock { $0 }
        }
    }
}

extension DatabaseLocation {
    var isSQLite: Bool {
        if case .sqlite = self { return true }
        return false
    }
}
