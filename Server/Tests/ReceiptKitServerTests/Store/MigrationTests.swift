import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
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

    static func migrate(_ store: Store, through lastId: String?) async throws {
        try await store.migrate(through: lastId)
    }
}
