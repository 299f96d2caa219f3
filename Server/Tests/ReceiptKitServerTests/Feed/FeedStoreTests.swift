import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

/// The feed's rows in the store: a key an older server stored gets its state at the migration,
/// so its next input is told as the change it is.
@Suite("The event feed in the store")
struct FeedStoreTests {
    @Test("migration v8 derives the state of every key stored before it, without events: the next renewal is a renewal, not a start",
          arguments: Backend.available)
    func baselines(backend: Backend) async throws {
        let key = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "1")
        let now = Int64(Date().timeIntervalSince1970)  // the migration evaluates at the time of day
        let day: Int64 = 86_400
        var ledger = EntitlementLedger()
        ledger.insert(try StoreTests.copy(key, id: "t1", purchase: now - 10 * day, signed: now - 10 * day, expires: now + 20 * day))
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await StoreTests.migrate(store, through: "v4-keys-led-by-original-transaction-id")
            }
            try await backend.insertV4(
                V4Rows(ledgers: [key: ledger], events: [V4Rows.Event(key: key, record: "{}")], links: [("c", key)]),
                location: location, searchPath: searchPath)
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                #expect(try await store.events(after: 0, limit: 10).isEmpty)
                // Nothing is due before the period ends.
                #expect(try await store.sweep(now: Timestamp(millisecondsSince1970: (now + day) * 1000), limit: 10).due == 0)
                let renewal = try StoreTests.copy(key, id: "t2", purchase: now + 20 * day, signed: now + 19 * day, expires: now + 50 * day)
                var event = VerifiedInput(
                    dedupKey: "test:renewal", kind: "transaction", raw: [0x7B, 0x7D], record: "{}",
                    receivedAt: (now + 19 * day + 60) * 1000, keys: [key], copies: [renewal], links: [],
                    cause: EventCause(source: .app, transactionId: "t2"))
                #expect(try await store.record(event))
                let events = try await store.events(after: 0, limit: 10)
                #expect(events.count == 1)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(events[0].json.utf8)) as? [String: Any])
                #expect(json["type"] as? String == "subscription.renewed")
                #expect(json["previous_status"] as? String == "active")
                #expect(json["customer_ids"] as? [String] == ["c"])
                #expect((json["cause"] as? [String: Any])?["transaction_id"] as? String == "t2")
                #expect((json["cause"] as? [String: Any])?["source"] as? String == "app")
                // A replay of the input writes nothing.
                event.receivedAt += 1000
                #expect(try await store.record(event) == false)
                #expect(try await store.events(after: 0, limit: 10).count == 1)
                // Once the renewed period ends, the sweep tells it.
                let report = try await store.sweep(now: Timestamp(millisecondsSince1970: (now + 51 * day) * 1000), limit: 10)
                #expect(report == SweepReport(due: 1, swept: 1, events: 1))
                let expired = try await store.events(after: events[0].id, limit: 10)
                #expect(expired.count == 1 && expired[0].json.contains(#""type":"subscription.expired""#))
            }
        }
    }
}
