import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

/// Copies Apple signed again for an answer: remembered, not stored again.
extension StoreTests {
    @Test("a copy Apple signed again is not stored again: a run keeps its first and last signing; a change is stored",
          arguments: Backend.available)
    func signedAgain(backend: Backend) async throws {
        let key = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "7")
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                #expect(try await store.record(event("first", keys: [key], copies: [
                    try Self.copy(key, id: "7", purchase: 0, signed: 1000, expires: 90_000),
                    try Self.renewalInfo(key, signed: 1000, renewal: 90_000),
                ])))
                // Signed again four times: nothing new; the rows keep the first signing and the last.
                for signed in [2000, 3000, 4000, 5000] as [Int64] {
                    #expect(try await store.record(answered("t\(signed)", key, try Self.copy(key, id: "7", purchase: 0, signed: signed, expires: 90_000))) == false)
                    #expect(try await store.record(answered("r\(signed)", key, try Self.renewalInfo(key, signed: signed, renewal: 90_000))) == false)
                    let rows = try await backend.copyRows(location: location, searchPath: searchPath)
                    #expect(rows.transactions == [1_000_000, signed * 1000], "after the signing at \(signed)")
                    #expect(rows.renewalInfos == [1_000_000, signed * 1000])
                    #expect(try await backend.latestCopies(location: location, searchPath: searchPath).map(\.knownFrom) == [signed * 1000])
                }
                // The same item posted again, and an earlier signing arriving late: nothing new either.
                #expect(try await store.record(answered("t5000-again", key, try Self.copy(key, id: "7", purchase: 0, signed: 5000, expires: 90_000))) == false)
                #expect(try await store.inputCount(dedupKeys: nil) == 1)
                let now = try #require(try await store.state(of: key, at: Timestamp(millisecondsSince1970: 50_000_000)))
                #expect(now.lastSignedDate == Timestamp(millisecondsSince1970: 5_000_000))
                #expect(now.status == .active && now.willRenew == true)
                // As of an instant within the run: the first signing stands for the ones in between.
                let within = try #require(try await store.state(of: key, at: Timestamp(millisecondsSince1970: 2_500_000)))
                #expect(within.lastSignedDate == Timestamp(millisecondsSince1970: 1_000_000))
                #expect(within.status == .active)

                // A refund, renewal turned off, a renewal: each says something new, each stored.
                #expect(try await store.record(answered("refund", key, try Self.copy(key, id: "7", purchase: 0, signed: 6000, expires: 90_000, revoked: 6000))))
                #expect(try await store.state(of: key, at: Timestamp(millisecondsSince1970: 50_000_000))?.status == .revoked)
                #expect(try await store.record(answered("off", key, try Self.renewalInfo(key, signed: 6000, autoRenew: false, renewal: 90_000))))
                #expect(try await store.state(of: key, at: Timestamp(millisecondsSince1970: 50_000_000))?.willRenew == false)
                #expect(try await store.record(answered("renewal", key, try Self.copy(key, id: "8", purchase: 90_000, signed: 89_000, expires: 180_000))))
                #expect(try await store.state(of: key, at: Timestamp(millisecondsSince1970: 100_000_000))?.latestTransactionId == "8")
                #expect(try await store.inputCount(dedupKeys: nil) == 4)
                // The refunded copy signed again: a run of its own, not the first copy's.
                #expect(try await store.record(answered("refund-again", key, try Self.copy(key, id: "7", purchase: 0, signed: 7000, expires: 90_000, revoked: 6000))) == false)
                #expect(try await store.state(of: key, at: Timestamp(millisecondsSince1970: 100_000_000))?.status == .active)  // 8 is current
                let rows = try await backend.copyRows(location: location, searchPath: searchPath)
                #expect(rows.transactions == [1_000_000, 5_000_000, 6_000_000, 7_000_000, 89_000_000])
            }
        }
    }

    @Test("copies signed again, changes and late copies in any order: the state now is the one every copy stored gives",
          arguments: Backend.available)
    func signedAgainInAnyOrder(backend: Backend) async throws {
        var random = SplitMix64(seed: 0x5245_5349_474E_4544)
        try await backend.withDatabase { location, searchPath in
            try await withStore(location, searchPath: searchPath) { store in
                try await store.migrate()
                for history in 0..<30 {
                    let key = SubscriptionKey(bundleId: "b", environment: "Sandbox", originalTransactionId: "s\(history)")
                    // A few transactions and the renewal info, each signed again and again over
                    // 40 instants, its content changing now and then (a refund, a refund
                    // reversed, a longer period; renewal turned off and on) and mostly not.
                    var copies: [(copy: LedgerCopy, answered: Bool)] = []
                    for transaction in 0..<3 {
                        var content = 0
                        for signed in stride(from: Int64(1), through: 40, by: 1) where random.next() % 2 == 0 {
                            if random.next() % 4 == 0 { content = Int(random.next() % 3) }
                            let copy = try Self.copy(
                                key, id: "\(transaction)", purchase: Int64(transaction) * 10, signed: signed,
                                expires: Int64(transaction) * 10 + (content == 2 ? 20 : 10), revoked: content == 1 ? 15 : nil)
                            copies.append((copy, random.next() % 4 != 0))
                        }
                    }
                    var autoRenew = true
                    for signed in stride(from: Int64(1), through: 40, by: 1) where random.next() % 2 == 0 {
                        if random.next() % 4 == 0 { autoRenew.toggle() }
                        copies.append((try Self.renewalInfo(key, signed: signed, autoRenew: autoRenew, renewal: 30), random.next() % 4 != 0))
                    }
                    var ledger = EntitlementLedger()
                    for (copy, _) in copies { ledger.insert(copy) }
                    // One event per copy — Apple's answers and notifications — in a shuffled
                    // order, some twice.
                    let order = copies.indices.map { ($0, random.next()) }.sorted { $0.1 < $1.1 }.map(\.0)
                    for (position, index) in order.enumerated() {
                        for again in 0..<(random.next() % 5 == 0 ? 2 : 1) {
                            let (copy, isAnswered) = copies[index]
                            let name = "s\(history)-\(position)-\(again)"
                            _ = try await store.record(isAnswered ? answered(name, key, copy) : event(name, keys: [key], copies: [copy]))
                        }
                    }
                    let expected = ledger.state(for: key, at: Self.later)
                    #expect(try await store.state(of: key, at: Self.later) == expected, "history \(history)")
                }
            }
        }
    }
}
