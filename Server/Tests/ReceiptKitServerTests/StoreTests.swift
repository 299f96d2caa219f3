import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

/// The store's own guarantees, on both databases: migrations, replays, and concurrent writers of
/// one key (each copy stored once, the latest of each transaction marked once).
@Suite("EntitlementStore")
struct StoreTests {
    /// A transaction copy of `key`: transaction `id`, purchased at `purchase` and expiring an hour
    /// later (both in seconds since 1970), signed at `signed` seconds.
    static func copy(
        _ key: SubscriptionKey, id: String, purchase: Int64, signed: Int64, expires: Int64? = nil, upgraded: Bool = false,
        revoked: Int64? = nil
    ) throws -> LedgerCopy {
        func date(_ seconds: Int64) -> String { Timestamp(millisecondsSince1970: seconds * 1000).iso8601 }
        var members: [String: Any] = [
            "source": "jws", "bundle_id": key.bundleId, "environment": key.environment, "transaction_id": id,
            "original_transaction_id": key.originalTransactionId, "product_id": "monthly",
            "product_type": "auto_renewable_subscription", "purchase_date": date(purchase),
            "expires_date": date(expires ?? purchase + 3600), "signed_date": date(signed), "is_upgraded": upgraded,
        ]
        if let revoked { members["revocation_date"] = date(revoked) }
        let transaction = try JSONDecoder().decode(
            NormalizedTransaction.self, from: JSONSerialization.data(withJSONObject: members))
        return try #require(EntitlementLedger.copy(
            of: transaction, receiptCreationDate: nil, notificationSignedDate: nil, isRevocation: false,
            validatedAt: Timestamp(millisecondsSince1970: signed * 1000)))
    }

    func event(_ name: String, keys: [SubscriptionKey], copies: [LedgerCopy] = [], customer: String? = nil) -> VerifiedInput {
        VerifiedInput(
            dedupKey: "test:\(name)", kind: "transaction", raw: Array(name.utf8), record: "{}", receivedAt: 1,
            keys: keys, copies: copies,
            links: customer.map { customer in keys.map { CustomerLink(customerId: customer, key: $0) } } ?? [])
    }

    static let later = Timestamp(millisecondsSince1970: 4_000_000_000_000)

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

    /// A renewal info copy of `key` signed at `signed` seconds.
    static func renewalInfo(_ key: SubscriptionKey, signed: Int64, autoRenew: Bool = true, renewal: Int64 = 3600) throws -> LedgerCopy {
        let info = "{\"environment\":\"\(key.environment)\",\"originalTransactionId\":\"\(key.originalTransactionId)\","
            + "\"knownFrom\":\(signed * 1000),\"renewalDate\":\(renewal * 1000),\"autoRenewStatus\":\(autoRenew ? 1 : 0),"
            + "\"isInBillingRetryPeriod\":false}"
        return try LedgerCopy(jsonBytes: Array(info.utf8), kind: .renewalInfo)
    }

    /// An event of items Apple answered, which it signs anew for every answer.
    func answered(_ name: String, _ key: SubscriptionKey, _ copy: LedgerCopy) -> VerifiedInput {
        var answered = event(name, keys: [key], copies: [copy])
        answered.skipsRepeats = true
        return answered
    }

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

    static func migrate(_ store: Store, through lastId: String?) async throws {
        try await store.migrate(through: lastId)
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

/// The rows a v4 server wrote, for the migration test.
struct V4Rows {
    struct Event {
        let key: SubscriptionKey
        let record: String
    }

    let ledgers: [SubscriptionKey: EntitlementLedger]
    let events: [Event]
    let links: [(customer: String, key: SubscriptionKey)]
}

extension Backend {
    /// Writes what a v4 server stored, through a connection of the test's own: each key's whole
    /// ledger in `subscriptions.state`, its events and their keys, its customer links.
    func insertV4(_ rows: V4Rows, location: DatabaseLocation, searchPath: String?) async throws {
        let ledgers = rows.ledgers.sorted { $0.key < $1.key }
        switch location {
        case .sqlite(let path):
            try await DatabaseQueue(path: path).write { db in
                for (key, ledger) in ledgers {
                    try db.execute(
                        sql: "INSERT INTO subscriptions (bundle_id, environment, original_transaction_id, state, updated_at) VALUES (?, ?, ?, ?, 5)",
                        arguments: [key.bundleId, key.environment, key.originalTransactionId, String(decoding: ledger.jsonBytes(), as: UTF8.self)])
                }
                for (index, event) in rows.events.enumerated() {
                    try db.execute(
                        sql: "INSERT INTO events (dedup_key, kind, raw, record, received_at) VALUES (?, 'transaction', x'7B7D', ?, 5)",
                        arguments: ["v4:\(index)", event.record])
                    try db.execute(
                        sql: "INSERT INTO event_subscriptions (bundle_id, environment, original_transaction_id, event_id) VALUES (?, ?, ?, ?)",
                        arguments: [event.key.bundleId, event.key.environment, event.key.originalTransactionId, db.lastInsertedRowID])
                }
                for (customer, key) in rows.links {
                    try db.execute(
                        sql: "INSERT INTO customer_subscriptions (customer_id, bundle_id, environment, original_transaction_id, linked_at) VALUES (?, ?, ?, ?, 5)",
                        arguments: [customer, key.bundleId, key.environment, key.originalTransactionId])
                }
            }
        case .postgres:
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for (key, ledger) in ledgers {
                    let state = String(decoding: ledger.jsonBytes(), as: UTF8.self)
                    try await client.query(
                        "INSERT INTO subscriptions (bundle_id, environment, original_transaction_id, state, updated_at) VALUES (\(key.bundleId), \(key.environment), \(key.originalTransactionId), \(state), 5)")
                }
                for (index, event) in rows.events.enumerated() {
                    try await client.query(
                        "INSERT INTO events (dedup_key, kind, raw, record, received_at) VALUES (\("v4:\(index)"), 'transaction', '\\x7b7d', \(event.record), 5)")
                    try await client.query(
                        "INSERT INTO event_subscriptions (bundle_id, environment, original_transaction_id, event_id) SELECT \(event.key.bundleId), \(event.key.environment), \(event.key.originalTransactionId), id FROM events WHERE dedup_key = \("v4:\(index)")")
                }
                for (customer, key) in rows.links {
                    try await client.query(
                        "INSERT INTO customer_subscriptions (customer_id, bundle_id, environment, original_transaction_id, linked_at) VALUES (\(customer), \(key.bundleId), \(key.environment), \(key.originalTransactionId), 5)")
                }
            }
        }
    }

    /// Overwrites the stored transaction copies of these original transaction ids with text that
    /// is not a copy.
    func damageCopies(of ids: [String], location: DatabaseLocation, searchPath: String?) async throws {
        switch location {
        case .sqlite(let path):
            try await DatabaseQueue(path: path).write { db in
                for id in ids {
                    try db.execute(sql: "UPDATE transaction_copies SET copy = 'damaged' WHERE original_transaction_id = ?", arguments: [id])
                }
            }
        case .postgres:
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for id in ids {
                    try await client.query("UPDATE transaction_copies SET copy = 'damaged' WHERE original_transaction_id = \(id)")
                }
            }
        }
    }

    /// The copies marked latest of their transaction: transaction id and signed date, sorted.
    func latestCopies(location: DatabaseLocation, searchPath: String?) async throws -> [(transactionId: String, knownFrom: Int64)] {
        var copies: [(transactionId: String, knownFrom: Int64)] = []
        let sql = "SELECT transaction_id, known_from FROM transaction_copies WHERE is_latest = 1 ORDER BY original_transaction_id, transaction_id"
        switch location {
        case .sqlite(let path):
            copies = try await DatabaseQueue(path: path).read { db in
                try Row.fetchAll(db, sql: sql).map { (transactionId: $0[0], knownFrom: $0[1]) }
            }
        case .postgres:
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for try await (id, knownFrom) in try await client.query(PostgresQuery(unsafeSQL: sql)).decode((String, Int64).self) {
                    copies.append((id, knownFrom))
                }
            }
        }
        return copies
    }

    /// The signed dates of every stored transaction copy and renewal info copy, each sorted.
    /// The state the feed derived last for a key (`subscriptions`' derived columns), read with a
    /// connection of the test's own; `nil` when it has none.
    func derivedState(of key: SubscriptionKey, location: DatabaseLocation, searchPath: String?) async throws -> DerivedState? {
        let sql = """
            SELECT derived_status, derived_product_id, derived_transaction_id, derived_expires_at, derived_will_renew,
                derived_subscription, derived_family_shared
            FROM subscriptions WHERE original_transaction_id = '\(key.originalTransactionId)'
            """
        typealias Columns = (String?, String?, String?, Int64?, Int64?, Int64?, Int64?)
        var rows: [Columns] = []
        switch location {
        case .sqlite(let path):
            rows = try await DatabaseQueue(path: path).read { db in
                try Row.fetchAll(db, sql: sql).map { ($0[0], $0[1], $0[2], $0[3], $0[4], $0[5], $0[6]) }
            }
        case .postgres:
            try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                for try await row in try await client.query(PostgresQuery(unsafeSQL: sql))
                    .decode((String?, String?, String?, Int64?, Int16?, Int16?, Int16?).self) {
                    rows.append((row.0, row.1, row.2, row.3, row.4.map(Int64.init), row.5.map(Int64.init), row.6.map(Int64.init)))
                }
            }
        }
        guard let row = rows.first, let raw = row.0 else { return nil }
        let status = try #require(SubscriptionStatus(rawValue: raw))
        return DerivedState(
            status: status, productId: row.1, transactionId: row.2, expiresAt: row.3, willRenew: row.4.map { $0 != 0 },
            isSubscription: row.5 != 0, isFamilyShared: row.6 == 1)
    }

    func copyRows(location: DatabaseLocation, searchPath: String?) async throws -> (transactions: [Int64], renewalInfos: [Int64]) {
        let queries = ["SELECT known_from FROM transaction_copies ORDER BY known_from", "SELECT known_from FROM renewal_info_copies ORDER BY known_from"]
        var dates: [[Int64]] = []
        for sql in queries {
            switch location {
            case .sqlite(let path):
                dates.append(try await DatabaseQueue(path: path).read { db in try Int64.fetchAll(db, sql: sql) })
            case .postgres:
                var column: [Int64] = []
                try await Self.withPostgresClient(location, searchPath: searchPath) { client in
                    for try await value in try await client.query(PostgresQuery(unsafeSQL: sql)).decode(Int64.self) {
                        column.append(value)
                    }
                }
                dates.append(column)
            }
        }
        return (dates[0], dates[1])
    }

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
                let rows = try Row.fetchAll(db, sql: "SELECT length(raw), raw_encoding FROM inputs ORDER BY id")
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
                    "SELECT length(raw), raw_encoding FROM inputs ORDER BY id"
                ).decode((Int32, Int16).self) {
                    events.append((Int(size), encoding))
                }
            }
            return (headers, events)
        }
    }
}

/// A small seeded generator (SplitMix64), so that a failing history can be found again.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
