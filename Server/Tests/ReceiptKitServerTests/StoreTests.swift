import Foundation
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
}
