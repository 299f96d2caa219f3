import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

/// The store's own guarantees, on both databases: migrations, replays, and concurrent writers of
/// one key (the second folds into what the first committed).
@Suite("EntitlementStore")
struct StoreTests {
    /// A fold that appends the event's name to a JSON array of names: a lost update would lose a
    /// name.
    func appending(_ name: String, key: SubscriptionKey) -> KeyFold {
        KeyFold(key: key) { stored in
            var names = try stored.map { try JSONDecoder().decode([String].self, from: $0) } ?? []
            names.append(name)
            return try JSONEncoder().encode(names)
        }
    }

    func event(_ name: String, keys: [SubscriptionKey], customer: String? = nil) -> NewEvent {
        NewEvent(
            dedupKey: "test:\(name)", kind: "transaction", raw: Array(name.utf8), record: "{}", receivedAt: 1,
            folds: keys.map { appending(name, key: $0) },
            links: customer.map { customer in keys.map { CustomerLink(customerId: customer, key: $0) } } ?? [])
    }

    @Test("concurrent writers of the same keys lose no update; replays change nothing", arguments: Backend.available)
    func concurrentWriters(backend: Backend) async throws {
        let a = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "1")
        let b = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "2")
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                try await store.migrate()
                // 40 events, each touching both keys in a different order, and each posted twice at once.
                let names = (0..<40).map { "e\($0)" }
                let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for (index, name) in names.enumerated() {
                        let keys = index.isMultiple(of: 2) ? [a, b] : [b, a]
                        for _ in 0..<2 {
                            group.addTask { try await store.record(event(name, keys: keys, customer: "c\(index % 3)")) }
                        }
                    }
                    return try await group.reduce(into: [Bool]()) { $0.append($1) }
                }
                #expect(results.filter { $0 }.count == 40)
                #expect(try await store.eventCount(dedupKeys: nil) == 40)
                #expect(try await store.eventCount(dedupKeys: ["test:e0", "test:e39", "test:none"]) == 2)
                for key in [a, b] {
                    let stored = try #require(try await store.subscriptions(originalTransactionId: key.originalTransactionId).first)
                    let folded = try JSONDecoder().decode([String].self, from: try #require(stored.state))
                    #expect(folded.sorted() == names.sorted())
                }
                #expect(try await store.subscriptions(customerId: "c0").map(\.key) == [a, b])
            }
        }
    }

    @Test("SQLite syncs the WAL on every commit, in a new database and in one opened again")
    func sqliteCommitsAreSynced() async throws {
        try await Backend.sqlite.withDatabase { location, _ in
            guard case .sqlite(let path) = location else {
                Issue.record("Backend.sqlite gave \(location)")
                return
            }
            for opening in 0..<2 {
                let store = try SQLiteStore(path: path)
                try await store.migrate()
                // GRDB's pool leaves its writer at NORMAL (1), which syncs only at checkpoints.
                #expect(try await store.synchronousLevel() == 2)
                // Still a working store: the event is new the first time, a replay the second.
                #expect(try await store.record(event("synced", keys: [])) == (opening == 0))
                try await store.close()
            }
        }
    }

    @Test("v4's new keys keep every subscription, link and event of a database an older server left", arguments: Backend.available)
    func keysMigration(backend: Backend) async throws {
        let keys = [
            SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "1"),
            SubscriptionKey(bundleId: "b", environment: "Production", originalTransactionId: "1"),
            SubscriptionKey(bundleId: "a", environment: "Sandbox", originalTransactionId: "1"),
            SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "2"),
        ]
        func migrate(_ store: any EntitlementStore, through lastId: String?) async throws {
            switch store {
            case let store as SQLiteStore: try await store.migrate(through: lastId)
            case let store as PostgresStore: try await store.migrate(through: lastId)
            default: Issue.record("a store of another kind")
            }
        }
        func snapshot(_ store: any EntitlementStore) async throws -> [String] {
            var lines: [String] = []
            for id in ["1", "2"] {
                for stored in try await store.subscriptions(originalTransactionId: id) {
                    lines.append("\(stored.key): \(String(decoding: stored.state ?? Data(), as: UTF8.self))")
                }
            }
            for customer in ["c0", "c1"] {
                lines.append("\(customer): \(try await store.subscriptions(customerId: customer).map(\.key))")
            }
            for key in keys {
                lines.append("\(key): \(try await store.events(touching: [key]).map(\.record))")
            }
            return lines
        }
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await migrate(store, through: "v3-jws-headers")
                for index in 0..<8 {
                    var event = event("m\(index)", keys: [keys[index % 4], keys[(index + 1) % 4]], customer: "c\(index % 2)")
                    event.record = "{\"n\":\(index)}"
                    #expect(try await store.record(event))
                }
                let before = try await snapshot(store)
                #expect(before.count == 4 + 2 + 4)
                try await migrate(store, through: nil)
                #expect(try await snapshot(store) == before)
                // Folds continue from the migrated state.
                #expect(try await store.record(event("after", keys: [keys[0]])))
                let state = try #require(try await store.subscriptions(originalTransactionId: "1").first { $0.key == keys[0] }?.state)
                #expect(try JSONDecoder().decode([String].self, from: state) == ["m0", "m3", "m4", "m7", "after"])
            }
        }
    }

    @Test("an event whose fold fails is rolled back alone; events written with it stay", arguments: Backend.available)
    func failingEvent(backend: Backend) async throws {
        struct FoldFailure: Error {}
        let keys = (0..<20).map { SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "\($0)") }
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                // Posted at once, so that (on SQLite) they share transactions: the failing ones
                // must not take the others with them, and must leave nothing behind.
                let results = await withTaskGroup(of: (Int, Bool?).self) { group in
                    for (index, key) in keys.enumerated() {
                        group.addTask {
                            var event = event("f\(index)", keys: [key], customer: "c")
                            if index.isMultiple(of: 5) {
                                event.folds = [KeyFold(key: key) { _ in throw FoldFailure() }]
                            }
                            return (index, try? await store.record(event))
                        }
                    }
                    return await group.reduce(into: [Int: Bool?]()) { $0[$1.0] = $1.1 }
                }
                for (index, result) in results {
                    #expect(result == (index.isMultiple(of: 5) ? nil : true), "event \(index)")
                }
                #expect(try await store.eventCount(dedupKeys: nil) == 16)
                #expect(try await store.subscriptions(customerId: "c").count == 16)
                for (index, key) in keys.enumerated() {
                    let stored = try await store.subscriptions(originalTransactionId: key.originalTransactionId)
                    #expect(stored.isEmpty == index.isMultiple(of: 5), "key \(index)")
                }
            }
        }
    }

    @Test("raw bytes come back exactly; a JWS header is stored once and events refer to it", arguments: Backend.available)
    func rawBytes(backend: Backend) async throws {
        let payloads = try Payloads()
        let bodies = try (0..<3).map { index in
            let transaction = try payloads.transaction(id: "\(index)", original: "1", purchase: 1, expires: 2, signed: 1)
            let renewal = try payloads.renewalInfo(original: "1", signed: Int64(index))
            let jws = try payloads.notification(type: "DID_RENEW", signed: 1, transaction: transaction, renewalInfo: renewal)
            return (raw: Array(Vectors.body(wrapping: jws).utf8), nested: [transaction, renewal])
        }
        let key = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "1")
        var events = bodies.enumerated().map { index, body in
            var event = event("n\(index)", keys: [key])
            event.raw = body.raw
            event.headerSegments = RawCompaction.headerSegments(in: body.raw, nested: body.nested)
            return event
        }
        // Bytes holding 0x00 are kept as they are, headers or not.
        var zero = event("zero", keys: [key])
        zero.raw = bodies[0].raw + [0]
        zero.headerSegments = events[0].headerSegments
        events.append(zero)
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                for event in events {
                    #expect(try await store.record(event))
                }
                for event in events {
                    #expect(try await store.raw(dedupKey: event.dedupKey) == event.raw, "\(event.dedupKey)")
                }
                #expect(try await store.raw(dedupKey: "test:none") == nil)
            }
            // What the database holds: one header row, and events a third of their size.
            let stored = try await backend.storedRaw(location: location, searchPath: searchPath)
            #expect(stored.headers == 1)
            for (event, row) in zip(events, stored.events) {
                #expect(row.encoding == (event.dedupKey == "test:zero" ? 0 : 1), "\(event.dedupKey)")
                if row.encoding == 1 { #expect(row.size * 3 < event.raw.count, "\(row.size) of \(event.raw.count) bytes") }
            }
        }
    }
}

extension Backend {
    /// The number of stored JWS headers, and each event's stored raw size and encoding, in the
    /// order the events were stored, read with a connection of the test's own.
    func storedRaw(location: DatabaseLocation, searchPath: String?) async throws
        -> (headers: Int, events: [(size: Int, encoding: Int16)])
    {
        switch self {
        case .sqlite:
            guard case .sqlite(let path) = location else {
                Issue.record("a SQLite backend with a PostgreSQL location")
                return (0, [])
            }
            return try await DatabaseQueue(path: path).read { db in
                let headers = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM jws_headers") ?? 0
                let rows = try Row.fetchAll(db, sql: "SELECT length(raw), raw_encoding FROM events ORDER BY id")
                return (headers, rows.map { (size: $0[0], encoding: $0[1]) })
            }
        case .postgres:
            var headers = 0
            var events: [(size: Int, encoding: Int16)] = []
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for try await count in try await client.query("SELECT COUNT(*) FROM jws_headers").decode(Int64.self) {
                    headers = Int(count)
                }
                for try await (size, encoding) in try await client.query(
                    "SELECT length(raw), raw_encoding FROM events ORDER BY id"
                ).decode((Int32, Int16).self) {
                    events.append((Int(size), encoding))
                }
            }
            return (headers, events)
        }
    }
}
