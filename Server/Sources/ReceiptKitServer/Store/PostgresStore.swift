import Foundation
public import ReceiptKit
import Logging
public import PostgresNIO

/// The store in PostgreSQL through postgres-nio: one `PostgresClient`, which the application runs
/// as a service, every query with interpolated bindings, every change in one transaction.
///
/// Several servers may share the database. Migrations run under a transaction-scoped advisory
/// lock and are recorded in `receiptkit_migrations`. Two events for the same key, on any
/// servers, are serialized by the key's row lock (`SELECT … FOR UPDATE`, after an `INSERT … ON
/// CONFLICT DO NOTHING` that makes sure the row exists): the second folds into what the first
/// committed, so no update is lost.
public final class PostgresStore: EntitlementStore, StoreInspection {
    /// The client; run it (``PostgresClient/run()``) for as long as the store is used.
    public let client: PostgresClient
    private let logger: Logger
    /// The JWS headers committed so far, with their ids.
    private let headers = HeaderDirectory()

    /// An arbitrary constant: the advisory lock that serializes migrations across servers.
    private static let migrationLock: Int64 = 0x5245_4345_4950_544B  // "RECEIPTK"

    /// Creates the store and its client (not yet running).
    ///
    /// - Parameters:
    ///   - location: The server and database.
    ///   - searchPath: A schema to use instead of the role's default (`search_path`), if any.
    ///   - logger: Where the client logs.
    public init(location: PostgresLocation, searchPath: String? = nil, logger: Logger) {
        let tls: PostgresClient.Configuration.TLS
        switch location.sslMode {
        case "disable": tls = .disable
        case "require": tls = .require(.makeClientConfiguration())
        default: tls = .prefer(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: tls)
        if let searchPath {
            configuration.options.additionalStartupParameters = [("search_path", searchPath)]
        }
        configuration.options.connectTimeout = .seconds(5)
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
    }

    public func migrate() async throws {
        try await migrate(through: nil)
    }

    /// Applies the migrations not yet applied, up to and including the one with this id (all
    /// of them when `nil`): the tests make a database as an older server left it.
    package func migrate(through lastId: String?) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS receiptkit_migrations (id TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                logger: logger)
            var applied = Set<String>()
            for try await id in try await connection.query("SELECT id FROM receiptkit_migrations", logger: logger)
                .decode(String.self)
            {
                applied.insert(id)
            }
            for migration in try Schema.migrations(through: lastId) where !applied.contains(migration.id) {
                for statement in migration.statements(.postgres) {
                    // A constant of Schema, never built from input: the one place SQL is not
                    // interpolated, because DDL takes no bindings.
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                switch migration.rows {
                case nil: break
                case .ledgersToCopies: try await Self.moveLedgersToCopies(on: connection, logger: logger)
                }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try await connection.query(
                    "INSERT INTO receiptkit_migrations (id, applied_at) VALUES (\(migration.id), \(now))", logger: logger)
            }
        }
    }

    /// ``Schema/RowMigration/ledgersToCopies``: each key's whole ledger into rows, folded as a
    /// new event's copies are (``SQLiteStore``'s twin).
    private static func moveLedgersToCopies(on connection: PostgresConnection, logger: Logger) async throws {
        for row in try await connection.rows(Schema.storedLedgers, [], logger: logger) {
            let key = SubscriptionKey(
                bundleId: row[1].text ?? "", environment: row[2].text ?? "", originalTransactionId: row[0].text ?? "")
            let copies = try Schema.storedLedgerCopies(row[3], of: key)
            for write in LedgerRows.subscriptionWrites(key, copies: copies, receivedAt: row[4].integer ?? 0) {
                try await connection.execute(write, logger: logger)
            }
            for copy in copies {
                for write in try await connection.run(LedgerRows.Folding(copy), logger: logger) {
                    try await connection.execute(write, logger: logger)
                }
            }
        }
    }

    public func ping() async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            // The lock an INSERT into events takes; a lock held against it (LOCK TABLE, a
            // migration) makes this wait, at most 2 s on the server's side.
            try await connection.query("SET LOCAL lock_timeout = '2s'", logger: logger)
            try await connection.query("LOCK TABLE events IN ROW EXCLUSIVE MODE", logger: logger)
        }
    }

    public func record(_ event: NewEvent) async throws -> Bool {
        try await abandoningOnCancel { try await self.write(event) }
    }

    /// ``record(_:)``'s transaction.
    private func write(_ event: NewEvent) async throws -> Bool {
        let logger = self.logger
        let headers = self.headers
        let (isNew, found) = try await client.withTransaction(logger: logger) { connection in
            let (stored, encoding, found) = try await Self.storedRaw(of: event, on: connection, headers: headers, logger: logger)
            let raw = ByteBuffer(bytes: stored)
            var eventId: Int64?
            for try await id in try await connection.query(
                """
                INSERT INTO events (dedup_key, kind, raw, raw_encoding, record, received_at)
                VALUES (\(event.dedupKey), \(event.kind), \(raw), \(encoding.rawValue), \(event.record), \(event.receivedAt))
                ON CONFLICT (dedup_key) DO NOTHING RETURNING id
                """, logger: logger
            ).decode(Int64.self) {
                eventId = id
            }
            if let eventId {
                // The key rows first, each locked (`FOR UPDATE`) in key order: two events
                // folding into one key, on any servers, take turns, and never deadlock.
                for write in LedgerRows.keyWrites(event, eventId: eventId) {
                    try await connection.execute(write, logger: logger)
                }
                for key in event.orderedKeys {
                    _ = try await connection.rows(LedgerRows.lockSubscription, LedgerRows.keyValues(key), logger: logger)
                }
                for copy in event.copies {
                    for write in try await connection.run(LedgerRows.Folding(copy), logger: logger) {
                        try await connection.execute(write, logger: logger)
                    }
                }
            }
            for write in LedgerRows.linkWrites(event) {
                try await connection.execute(write, logger: logger)
            }
            return (eventId != nil, found)
        }
        headers.remember(found)
        return isNew
    }

    /// The bytes to store for an event's raw bytes, their encoding, and the headers looked up or
    /// inserted in `jws_headers` that `headers` did not know (see ``SQLiteStore``'s twin).
    private static func storedRaw(
        of event: NewEvent, on connection: PostgresConnection, headers: HeaderDirectory, logger: Logger
    ) async throws -> (bytes: [UInt8], encoding: RawEncoding, found: [(segment: [UInt8], header: RawCompaction.Header)]) {
        var referenced: [RawCompaction.Header] = []
        var found: [(segment: [UInt8], header: RawCompaction.Header)] = []
        for segment in event.headerSegments {
            if let header = headers.header(for: segment) {
                referenced.append(header)
                continue
            }
            let text = String(decoding: segment, as: UTF8.self)
            var id: Int64?
            // Another server may insert the same header at once: the exclusion constraint makes
            // this insert wait for it and then do nothing, and the select reads its row.
            for try await inserted in try await connection.query(
                "INSERT INTO jws_headers (segment) VALUES (\(text)) ON CONFLICT DO NOTHING RETURNING id", logger: logger
            ).decode(Int64.self) {
                id = inserted
            }
            if id == nil {
                id = try await connection.rows(RawCompaction.headerId, [.text(text)], logger: logger).first?[0].integer
            }
            guard let id else { throw StoreError("a JWS header was neither inserted nor found") }
            let header = RawCompaction.Header(id: id, segment: segment)
            referenced.append(header)
            found.append((segment, header))
        }
        guard let compacted = RawCompaction.compact(event.raw, headers: referenced) else { return (event.raw, .verbatim, found) }
        return (compacted, .headerReferences, found)
    }

    public func keys(customerId: String) async throws -> [SubscriptionKey] {
        let logger = self.logger
        return try await client.withConnection { connection in
            LedgerRows.keys(try await connection.rows(LedgerRows.keysOfCustomer, [.text(customerId)], logger: logger))
        }
    }

    public func keys(originalTransactionId: String) async throws -> [SubscriptionKey] {
        let logger = self.logger
        return try await client.withConnection { connection in
            LedgerRows.keys(
                try await connection.rows(LedgerRows.keysOfOriginalTransactionId, [.text(originalTransactionId)], logger: logger))
        }
    }

    public func state(of key: SubscriptionKey, at instant: Timestamp) async throws -> SubscriptionState? {
        let logger = self.logger
        // One snapshot for every read of the evaluation, so that its rows agree.
        return try await client.withConnection { connection in
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            do {
                let state = try await connection.run(LedgerRows.Evaluation(key: key, at: instant), logger: logger)
                try await connection.query("COMMIT", logger: logger)
                return state
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    public func events(touching keys: [SubscriptionKey]) async throws -> [StoredEvent] {
        let logger = self.logger
        return try await client.withConnection { connection in
            var rows: [[[StoreValue]]] = []
            for key in Set(keys) {
                rows.append(try await connection.rows(LedgerRows.eventsOfKey, LedgerRows.keyValues(key), logger: logger))
            }
            return LedgerRows.events(rows)
        }
    }

    public func raw(dedupKey: String) async throws -> [UInt8]? {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.run(RawReading(dedupKey: dedupKey), logger: logger)
        }
    }

    package func eventCount(dedupKeys: [String]?) async throws -> Int {
        let rows: PostgresRowSequence
        if let dedupKeys {
            rows = try await client.query(
                "SELECT COUNT(*) FROM events WHERE dedup_key = ANY(\(dedupKeys))", logger: logger)
        } else {
            rows = try await client.query("SELECT COUNT(*) FROM events", logger: logger)
        }
        var count = 0
        for try await value in rows.decode(Int64.self) {
            count = Int(value)
        }
        return count
    }

    public func close() async throws {}
}

// MARK: Reconciliation (``ReconcileStore``, statements in ``ReconcileRows``)

extension PostgresStore {
    public func historyRevision(of key: SubscriptionKey) async throws -> String? {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.rows(ReconcileRows.revision, ReconcileRows.keyValues(key), logger: logger).first?.first?.text
        }
    }

    public func setHistoryRevision(_ revision: String, for keys: [SubscriptionKey], at milliseconds: Int64) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            for key in Set(keys).sorted() {
                try await connection.execute(
                    StoreWrite(ReconcileRows.setRevision, ReconcileRows.keyValues(key) + [.text(revision), .integer(milliseconds)]),
                    logger: logger)
            }
        }
    }

    public func reconcileCursor() async throws -> Int64? {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.rows(ReconcileRows.cursor, [], logger: logger).first?.first?.integer
        }
    }

    public func takeReconcileLease(owner: String, now: Int64, until: Int64) async throws -> Bool {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await !connection.rows(
                ReconcileRows.takeLease, [.text(owner), .integer(until), .integer(now), .text(owner)], logger: logger
            ).isEmpty
        }
    }

    public func advanceReconcileCursor(to position: Int64, owner: String, leaseUntil until: Int64) async throws -> Bool {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await !connection.rows(
                ReconcileRows.advance, [.integer(position), .integer(position), .integer(until), .text(owner)], logger: logger
            ).isEmpty
        }
    }

    public func releaseReconcileLease(owner: String) async throws {
        let logger = self.logger
        try await client.withConnection { connection in
            try await connection.execute(StoreWrite(ReconcileRows.releaseLease, [.text(owner)]), logger: logger)
        }
    }
}

// MARK: The console (``ConsoleStore``, statements in ``ConsoleRows``)

extension PostgresStore {
    public func keys(transactionId: String) async throws -> [SubscriptionKey] {
        let logger = self.logger
        return try await client.withConnection { connection in
            LedgerRows.keys(try await connection.rows(ConsoleRows.keysOfTransactionId, [.text(transactionId)], logger: logger))
        }
    }

    public func subscriptionKeys(limit: Int) async throws -> (keys: [SubscriptionKey], total: Int) {
        let logger = self.logger
        return try await client.withConnection { connection in
            let total = try await connection.rows(ConsoleRows.subscriptionCount, [], logger: logger).first?.first?.integer ?? 0
            let keys = LedgerRows.keys(try await connection.rows(ConsoleRows.firstKeys, [.integer(Int64(limit))], logger: logger))
            return (keys, Int(total))
        }
    }

    public func notificationTypes(before id: Int64, limit: Int) async throws -> [NotificationSighting] {
        let logger = self.logger
        return try await client.withConnection { connection in
            ConsoleRows.sightings(try await connection.rows(
                ConsoleRows.notificationTypes(.postgres), [.integer(id), .integer(Int64(limit))], logger: logger))
        }
    }

    public func latestNotifications(limit: Int) async throws -> [IdentifiedEvent] {
        let logger = self.logger
        return try await client.withConnection { connection in
            ConsoleRows.identifiedEvents(try await connection.rows(ConsoleRows.latestNotifications, [.integer(Int64(limit))], logger: logger))
        }
    }

    public func identifiedEvents(touching key: SubscriptionKey) async throws -> [IdentifiedEvent] {
        let logger = self.logger
        return try await client.withConnection { connection in
            ConsoleRows.identifiedEvents(try await connection.rows(LedgerRows.eventsOfKey, LedgerRows.keyValues(key), logger: logger))
                .sorted { $0.id < $1.id }
        }
    }
}
