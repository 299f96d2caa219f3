import Foundation
import GRDB
import PostgresNIO
import ReceiptKit
import ReceiptKitServer
import Testing

/// The store's own guarantees, on both databases: migrations, replays, and concurrent writers of
/// one key (each copy stored once, the latest of each transaction marked once). The tests are in
/// the files beside this one, by what they test; this file holds what they share.
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

    static let later = Timestamp(millisecondsSince1970: 4_000_000_000_000)
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
