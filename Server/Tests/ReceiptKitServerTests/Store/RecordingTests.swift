import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

/// Recording inputs: concurrent writers, replays, a failing input rolled back alone, raw bytes kept
/// exactly, and every commit synced.
extension StoreTests {
    @Test("concurrent writers of the same keys lose no copy and mark one latest copy; replays change nothing",
          arguments: Backend.available)
    func concurrentWriters(backend: Backend) async throws {
        let a = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "1")
        let b = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "2")
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                try await store.migrate()
                // 40 events, each a renewal of both keys (transaction 100 + i, bought at i hours)
                // and a copy of transaction 1 signed at i hours, listed in a different order, each
                // posted twice at once.
                let names = (0..<40).map { "e\($0)" }
                let events = try names.enumerated().map { index, name in
                    let hour = Int64(index) * 3600
                    let copies = try [a, b].flatMap { key in
                        [try Self.copy(key, id: "\(100 + index)", purchase: hour, signed: hour),
                         try Self.copy(key, id: "1", purchase: 0, signed: hour, expires: hour + 60)]
                    }
                    return event(name, keys: index.isMultiple(of: 2) ? [a, b] : [b, a],
                                 copies: index.isMultiple(of: 2) ? copies : copies.reversed(), customer: "c\(index % 3)")
                }
                let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for event in events {
                        for _ in 0..<2 { group.addTask { try await store.record(event) } }
                    }
                    return try await group.reduce(into: [Bool]()) { $0.append($1) }
                }
                #expect(results.filter { $0 }.count == 40)
                #expect(try await store.inputCount(dedupKeys: nil) == 40)
                #expect(try await store.inputCount(dedupKeys: ["test:e0", "test:e39", "test:none"]) == 2)
                for key in [a, b] {
                    // Every copy is there: as of each hour, that hour's renewal is the latest.
                    for index in 0..<40 {
                        let state = try await store.state(of: key, at: Timestamp(millisecondsSince1970: Int64(index) * 3_600_000))
                        #expect(state?.latestTransactionId == "\(100 + index)", "\(key) at hour \(index)")
                    }
                    // Now: the last renewal, read from the few rows that decide it.
                    let now = try #require(try await store.state(of: key, at: Self.later))
                    #expect(now.latestTransactionId == "139")
                    #expect(now.lastSignedDate == Timestamp(millisecondsSince1970: 39 * 3_600_000))
                }
                #expect(try await store.keys(customerId: "c0") == [a, b])
            }
            // One latest copy per transaction, whatever order the copies came in.
            let latest = try await backend.latestCopies(location: location, searchPath: searchPath)
            #expect(latest.count == 2 * 41)
            let transactionOne: [Int64] = latest.filter { $0.transactionId == "1" }.map(\.knownFrom)
            #expect(transactionOne == [39 * 3_600_000, 39 * 3_600_000])
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
                let store = try Store(sqlitePath: path)
                try await store.migrate()
                // GRDB's pool leaves its writer at NORMAL (1), which syncs only at checkpoints.
                #expect(try await store.synchronousLevel() == 2)
                // Still a working store: the event is new the first time, a replay the second.
                #expect(try await store.record(event("synced", keys: [])) == (opening == 0))
                try await store.close()
            }
        }
    }

    @Test("an event whose fold fails is rolled back alone; events written with it stay", arguments: Backend.available)
    func failingEvent(backend: Backend) async throws {
        let keys = (0..<20).map { SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "\($0)") }
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                for (index, key) in keys.enumerated() {
                    #expect(try await store.record(event("first\(index)", keys: [key], copies: [try Self.copy(key, id: "t", purchase: 0, signed: 0)])))
                }
            }
            // A damaged store: the stored copy of every fifth key no longer decodes.
            try await backend.damageCopies(of: keys.enumerated().filter { $0.offset.isMultiple(of: 5) }.map(\.element.originalTransactionId),
                                           location: location, searchPath: searchPath)
            try await withStore(location, searchPath: searchPath) { store in
                // Posted at once, so that (on SQLite) they share transactions: the failing ones
                // must not take the others with them, and must leave nothing behind.
                let results = await withTaskGroup(of: (Int, Bool?).self) { group in
                    for (index, key) in keys.enumerated() {
                        group.addTask {
                            let renewal = try? Self.copy(key, id: "t", purchase: 0, signed: 60)
                            let event = event("f\(index)", keys: [key], copies: renewal.map { [$0] } ?? [], customer: "c")
                            return (index, try? await store.record(event))
                        }
                    }
                    return await group.reduce(into: [Int: Bool?]()) { $0[$1.0] = $1.1 }
                }
                for (index, result) in results {
                    #expect(result == (index.isMultiple(of: 5) ? nil : true), "event \(index)")
                }
                let stored = try await store.inputCount(dedupKeys: nil)
                #expect(stored == 20 + 16)
                let linked = try await store.keys(customerId: "c")
                #expect(linked.count == 16)
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
            // What the database holds: one header row, and events compacted and deflated to a
            // tenth of their size (the one holding 0x00 deflated only).
            let stored = try await backend.storedRaw(location: location, searchPath: searchPath)
            #expect(stored.headers == 1)
            for (event, row) in zip(events, stored.events) {
                let zero = event.dedupKey == "test:zero"
                #expect(row.encoding == (zero ? RawEncoding.deflatedVerbatim : .deflatedHeaderReferences).rawValue, "\(event.dedupKey)")
                if !zero { #expect(row.size * 10 < event.raw.count, "\(row.size) of \(event.raw.count) bytes") }
            }
        }
    }
}
