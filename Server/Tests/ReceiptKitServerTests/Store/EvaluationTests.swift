import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

/// A state read from the few rows that decide it is the ledger's, and the state the feed derives
/// in each input's transaction.
extension StoreTests {
    @Test("a state read from the rows that decide it is the ledger's, for histories with ties, upgrades, refunds and late copies",
          arguments: Backend.available)
    func rowsAgreeWithTheLedger(backend: Backend) async throws {
        var random = SplitMix64(seed: 0x5245_4345_4950_5431)
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                for history in 0..<24 {
                    let (key, copies) = try Self.randomHistory(history, &random)
                    var ledger = EntitlementLedger()
                    for copy in copies { ledger.insert(copy) }
                    // One event per copy, in a shuffled order, some twice.
                    let order = copies.indices.map { ($0, random.next()) }.sorted { $0.1 < $1.1 }.map(\.0)
                    for (position, index) in order.enumerated() {
                        let first = event("h\(history)-\(position)", keys: [key], copies: [copies[index]])
                        #expect(try await store.record(first))
                        if random.next() % 3 == 0 {
                            #expect(try await store.record(event("h\(history)-\(position)-again", keys: [key], copies: [copies[index]])))
                        }
                    }
                    for at in stride(from: Int64(-1000), through: 14_000, by: 500).map(Timestamp.init(millisecondsSince1970:)) + [Self.later] {
                        #expect(try await store.state(of: key, at: at) == ledger.state(for: key, at: at), "history \(history) at \(at)")
                    }
                }
            }
        }
    }

    /// A random history of one key for ``rowsAgreeWithTheLedger(backend:)`` and
    /// ``derivedAfterEachEvent(backend:)``: transaction copies whose purchases, expiries and signed
    /// dates tie often (every other history buys at one of three instants only: ties of several
    /// transactions at the top of rule 2's order), some upgraded or revoked, and renewal infos.
    static func randomHistory(_ history: Int, _ random: inout SplitMix64) throws -> (key: SubscriptionKey, copies: [LedgerCopy]) {
        let key = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "h\(history)")
        // Few distinct dates, so that purchases, expiries and signed dates tie often.
        func instant() -> Int64 { Int64(random.next() % 12) * 1000 }
        var copies: [LedgerCopy] = []
        for _ in 0..<(2 + Int(random.next() % 20)) {
            let transactionId = String(random.next() % 10)
            let purchase = history.isMultiple(of: 2) ? Int64(random.next() % 3) * 1000 : instant()
            var members: [String] = [
                "\"key\":{\"bundleId\":\"b\",\"environment\":\"Sandbox\",\"originalTransactionId\":\"\(key.originalTransactionId)\"}",
                "\"transactionId\":\"\(transactionId)\"", "\"knownFrom\":\(instant())",
                "\"purchaseDate\":\(purchase)", "\"expiresDate\":\(purchase + Int64(random.next() % 2) * 1000)",
                "\"isUpgraded\":\(random.next() % 4 == 0)", "\"productType\":\"auto_renewable_subscription\"",
                "\"productId\":\"p\(random.next() % 2)\"",
            ]
            if random.next() % 5 == 0 { members.append("\"revocationDate\":\(instant())") }
            copies.append(try LedgerCopy(jsonBytes: Array("{\(members.joined(separator: ","))}".utf8), kind: .transaction))
        }
        for _ in 0..<Int(random.next() % 4) {
            let info = "{\"environment\":\"Sandbox\",\"originalTransactionId\":\"\(key.originalTransactionId)\","
                + "\"knownFrom\":\(instant()),\"renewalDate\":\(instant() + 1000),\"autoRenewStatus\":\(random.next() % 2),"
                + "\"isInBillingRetryPeriod\":\(random.next() % 2 == 0)}"
            copies.append(try LedgerCopy(jsonBytes: Array(info.utf8), kind: .renewalInfo))
        }
        return (key, copies)
    }

    @Test("the state the feed derives in each event's transaction is the ledger's of the copies stored so far, whichever copy won a tie",
          arguments: Backend.available)
    func derivedAfterEachEvent(backend: Backend) async throws {
        var random = SplitMix64(seed: 0x4445_5249_5645_4431)
        // After every copy's signed date: the derivation then reads the few rows that decide the
        // state, and the copies its own event stored from memory.
        let receivedAt = Timestamp(millisecondsSince1970: 20_000)
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                for history in 0..<24 {
                    let (key, copies) = try Self.randomHistory(history, &random)
                    var ledger = EntitlementLedger()
                    let order = copies.indices.map { ($0, random.next()) }.sorted { $0.1 < $1.1 }.map(\.0)
                    for (position, index) in order.enumerated() {
                        // The same copy again, as another event, now and then: its row keeps the winner.
                        for name in random.next() % 3 == 0 ? ["", "-again"] : [""] {
                            var event = event("d\(history)-\(position)\(name)", keys: [key], copies: [copies[index]])
                            event.receivedAt = receivedAt.millisecondsSince1970
                            ledger.insert(copies[index])
                            #expect(try await store.record(event))
                            let expected = ledger.state(for: key, at: receivedAt).map(DerivedState.init)
                            #expect(try await backend.derivedState(of: key, location: location, searchPath: searchPath) == expected,
                                    "history \(history), event \(position)\(name)")
                        }
                    }
                }
            }
        }
    }
}
