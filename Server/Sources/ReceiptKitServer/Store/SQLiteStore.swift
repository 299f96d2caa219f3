import Foundation
public import ReceiptKit
import GRDB

/// The store in a SQLite file through GRDB: a `DatabasePool` in WAL mode (readers never wait for
/// the writer), migrated by a `DatabaseMigrator`. SQLite has one writer at a time, so two events
/// for the same key are folded one after the other; events that arrive while a write runs are
/// stored together in the next transaction (``GroupCommit``), each answered after that commit.
public final class SQLiteStore: EntitlementStore, StoreInspection {
    private let pool: DatabasePool
    /// Events are written in batches: those that arrive while a transaction runs share the next.
    private let writes: GroupCommit<NewEvent, Bool>
    /// The JWS headers committed so far, with their ids.
    private let headers = HeaderDirectory()
    /// The most events one transaction stores.
    private static let maximumBatch = 128

    /// Opens (or creates) the database file.
    ///
    /// - Parameter path: The file's path.
    /// - Throws: ``StoreError`` when the file cannot be opened as a database.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.label = "receiptkit"
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw StoreError("cannot open SQLite database \(path): \(error)")
        }
        // GRDB sets `synchronous = NORMAL` on a pool's writer once it turns WAL on: a commit is
        // then written to the WAL but synced only at the next checkpoint, and survives the
        // process's death but not the machine's (a power cut or a kernel crash loses the
        // transactions since). A 200 tells Apple not to send the notification again, so every
        // commit syncs the WAL before it returns (`FULL`). It costs one `fdatasync` a
        // transaction, which group commit shares among the batch. Set here, after the pool has
        // set up WAL mode: `prepareDatabase` runs before that and would be overridden.
        do {
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        } catch {
            throw StoreError("cannot make SQLite database \(path) sync every commit: \(error)")
        }
        self.pool = pool
        let headers = self.headers
        self.writes = GroupCommit(maximumBatch: Self.maximumBatch) { events in
            try await Self.commit(events, to: pool, headers: headers)
        }
    }

    public func migrate() async throws {
        try await migrate(through: nil)
    }

    /// Applies the migrations not yet applied, up to and including the one with this id (all
    /// of them when `nil`): the tests make a database as an older server left it.
    package func migrate(through lastId: String?) async throws {
        var migrator = DatabaseMigrator()
        for migration in try Schema.migrations(through: lastId) {
            migrator.registerMigration(migration.id) { db in
                for statement in migration.statements(.sqlite) {
                    try db.execute(sql: statement)
                }
                switch migration.rows {
                case nil: break
                case .ledgersToCopies: try Self.moveLedgersToCopies(in: db)
                }
            }
        }
        try migrator.migrate(pool)
    }

    /// ``Schema/RowMigration/ledgersToCopies``: each key's whole ledger into rows, folded as a
    /// new event's copies are.
    private static func moveLedgersToCopies(in db: Database) throws {
        for row in try db.rows(Schema.storedLedgers, []) {
            let key = SubscriptionKey(
                bundleId: row[1].text ?? "", environment: row[2].text ?? "", originalTransactionId: row[0].text ?? "")
            let copies = try Schema.storedLedgerCopies(row[3], of: key)
            let updatedAt = row[4].integer ?? 0
            for write in LedgerRows.subscriptionWrites(key, copies: copies, receivedAt: updatedAt) { try db.execute(write) }
            for copy in copies {
                for write in try db.run(LedgerRows.Folding(copy)) { try db.execute(write) }
            }
        }
    }

    /// The writer's `PRAGMA synchronous` (2 is `FULL`: every commit is synced before it returns).
    package func synchronousLevel() async throws -> Int? {
        try await pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
    }

    public func ping() async throws {
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
            try db.execute(sql: "ROLLBACK")
        }
    }

    public func record(_ event: NewEvent) async throws -> Bool {
        try await writes.submit(event)
    }

    /// One transaction over a batch of events (``GroupCommit``). An event that fails (its key's
    /// stored state does not decode, say) must fail alone, so the batch is first tried as a whole
    /// and, should any event fail, rolled back and stored again with each event in a savepoint
    /// of its own (``commitEventByEvent(_:to:headers:)``). Not a savepoint for every event from
    /// the start: SQLite copies each page a savepoint changes into its statement journal first,
    /// which cost the server about 8% of its CPU time per notification.
    private static func commit(
        _ events: [NewEvent], to pool: DatabasePool, headers: HeaderDirectory
    ) async throws -> [Result<Bool, any Error>] {
        let whole: (isNew: [Bool], newHeaders: [(segment: [UInt8], header: RawCompaction.Header)])
        do {
            whole = try await pool.write { db in
                var newHeaders: [(segment: [UInt8], header: RawCompaction.Header)] = []
                let isNew = try events.map { try insert($0, into: db, headers: headers, found: &newHeaders) }
                return (isNew, newHeaders)
            }
        } catch {
            // Nothing of the batch was committed. Event by event, the failure is found again
            // (and reported to its request alone), or, if the database itself failed, the
            // batch fails as before.
            return try await commitEventByEvent(events, to: pool, headers: headers)
        }
        headers.remember(whole.newHeaders)
        return whole.isNew.map { .success($0) }
    }

    /// One transaction over a batch of events, each event in a savepoint of its own, so that an
    /// event that fails is rolled back alone and reported alone. When the transaction itself is
    /// gone (SQLite rolls it back on some errors), the batch fails as a whole: nothing of it is
    /// reported stored.
    private static func commitEventByEvent(
        _ events: [NewEvent], to pool: DatabasePool, headers: HeaderDirectory
    ) async throws -> [Result<Bool, any Error>] {
        let (results, newHeaders) = try await pool.write { db in
            var results: [Result<Bool, any Error>] = []
            results.reserveCapacity(events.count)
            var newHeaders: [(segment: [UInt8], header: RawCompaction.Header)] = []
            for event in events {
                var isNew = false
                // Headers this event inserted count only once its savepoint is released.
                var found: [(segment: [UInt8], header: RawCompaction.Header)] = []
                do {
                    try db.inSavepoint {
                        isNew = try insert(event, into: db, headers: headers, found: &found)
                        return .commit
                    }
                    newHeaders += found
                    results.append(.success(isNew))
                } catch {
                    guard db.isInsideTransaction else { throw error }
                    results.append(.failure(error))
                }
            }
            return (results, newHeaders)
        }
        headers.remember(newHeaders)
        return results
    }

    /// The bytes to store for an event's raw bytes, and their encoding: with its JWS headers
    /// replaced by references when it carries any (looked up, or inserted, in `jws_headers`;
    /// those not yet in `headers` are added to `found`).
    private static func storedRaw(
        of event: NewEvent, in db: Database, headers: HeaderDirectory,
        found: inout [(segment: [UInt8], header: RawCompaction.Header)]
    ) throws -> (bytes: [UInt8], encoding: RawEncoding) {
        var referenced: [RawCompaction.Header] = []
        for segment in event.headerSegments {
            if let header = headers.header(for: segment) {
                referenced.append(header)
                continue
            }
            let text = String(decoding: segment, as: UTF8.self)
            let stored = try db.rows(RawCompaction.headerId, [.text(text)]).first?[0].integer
            guard
                let id = try stored
                    ?? Int64.fetchOne(
                        db.cachedStatement(sql: "INSERT INTO jws_headers (segment) VALUES (?) RETURNING id"), arguments: [text])
            else { throw StoreError("inserting a JWS header returned no id") }
            let header = RawCompaction.Header(id: id, segment: segment)
            referenced.append(header)
            found.append((segment, header))
        }
        guard let compacted = RawCompaction.compact(event.raw, headers: referenced) else { return (event.raw, .verbatim) }
        return (compacted, .headerReferences)
    }

    /// Stores one event and folds it into its keys' states (a replay changes no state); adds its
    /// customer links in any case. The statements are prepared once per connection.
    ///
    /// - Returns: Whether the event is new.
    private static func insert(
        _ event: NewEvent, into db: Database, headers: HeaderDirectory,
        found: inout [(segment: [UInt8], header: RawCompaction.Header)]
    ) throws -> Bool {
        let raw = try storedRaw(of: event, in: db, headers: headers, found: &found)
        try db.cachedStatement(
            sql: """
                INSERT INTO events (dedup_key, kind, raw, raw_encoding, record, received_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (dedup_key) DO NOTHING
                """
        ).execute(arguments: [event.dedupKey, event.kind, Data(raw.bytes), raw.encoding.rawValue, event.record, event.receivedAt])
        // One row inserted, or none for a replay (`RETURNING` would read it back through a cursor).
        let inserted: Int64? = db.changesCount == 1 ? db.lastInsertedRowID : nil
        if let eventId = inserted {
            for write in LedgerRows.keyWrites(event, eventId: eventId) { try db.execute(write) }
            for copy in event.copies {
                for write in try db.run(LedgerRows.Folding(copy)) { try db.execute(write) }
            }
        }
        for write in LedgerRows.linkWrites(event) { try db.execute(write) }
        return inserted != nil
    }

    public func keys(customerId: String) async throws -> [SubscriptionKey] {
        try await pool.read { db in LedgerRows.keys(try db.rows(LedgerRows.keysOfCustomer, [.text(customerId)])) }
    }

    public func keys(originalTransactionId: String) async throws -> [SubscriptionKey] {
        try await pool.read { db in
            LedgerRows.keys(try db.rows(LedgerRows.keysOfOriginalTransactionId, [.text(originalTransactionId)]))
        }
    }

    public func state(of key: SubscriptionKey, at instant: Timestamp) async throws -> SubscriptionState? {
        try await pool.read { db in try db.run(LedgerRows.Evaluation(key: key, at: instant)) }
    }

    public func events(touching keys: [SubscriptionKey]) async throws -> [StoredEvent] {
        try await pool.read { db in
            try LedgerRows.events(Set(keys).map { try db.rows(LedgerRows.eventsOfKey, LedgerRows.keyValues($0)) })
        }
    }

    public func raw(dedupKey: String) async throws -> [UInt8]? {
        try await pool.read { db in try db.run(RawReading(dedupKey: dedupKey)) }
    }

    package func eventCount(dedupKeys: [String]?) async throws -> Int {
        try await pool.read { db in
            guard let dedupKeys else {
                return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0
            }
            var count = 0
            for chunk in stride(from: 0, to: dedupKeys.count, by: 500) {
                let keys = Array(dedupKeys[chunk..<min(chunk + 500, dedupKeys.count)])
                let placeholders = databaseQuestionMarks(count: keys.count)
                count += try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM events WHERE dedup_key IN (\(placeholders))",
                    arguments: StatementArguments(keys)) ?? 0
            }
            return count
        }
    }

    public func close() async throws {
        try pool.close()
    }
}

// MARK: Reconciliation (``ReconcileStore``, statements in ``ReconcileRows``)

extension SQLiteStore {
    public func historyRevision(of key: SubscriptionKey) async throws -> String? {
        try await pool.read { db in try db.rows(ReconcileRows.revision, ReconcileRows.keyValues(key)).first?.first?.text }
    }

    public func setHistoryRevision(_ revision: String, for keys: [SubscriptionKey], at milliseconds: Int64) async throws {
        try await pool.write { db in
            for key in Set(keys).sorted() {
                try db.execute(StoreWrite(ReconcileRows.setRevision, ReconcileRows.keyValues(key) + [.text(revision), .integer(milliseconds)]))
            }
        }
    }

    public func reconcileCursor() async throws -> Int64? {
        try await pool.read { db in try db.rows(ReconcileRows.cursor, []).first?.first?.integer }
    }

    public func takeReconcileLease(owner: String, now: Int64, until: Int64) async throws -> Bool {
        try await pool.write { db in
            try !db.rows(ReconcileRows.takeLease, [.text(owner), .integer(until), .integer(now), .text(owner)]).isEmpty
        }
    }

    public func advanceReconcileCursor(to position: Int64, owner: String, leaseUntil until: Int64) async throws -> Bool {
        try await pool.write { db in
            try !db.rows(ReconcileRows.advance, [.integer(position), .integer(position), .integer(until), .text(owner)]).isEmpty
        }
    }

    public func releaseReconcileLease(owner: String) async throws {
        try await pool.write { db in try db.execute(StoreWrite(ReconcileRows.releaseLease, [.text(owner)])) }
    }
}

// MARK: The console (``ConsoleStore``, statements in ``ConsoleRows``)

extension SQLiteStore {
    public func keys(transactionId: String) async throws -> [SubscriptionKey] {
        try await pool.read { db in LedgerRows.keys(try db.rows(ConsoleRows.keysOfTransactionId, [.text(transactionId)])) }
    }

    public func subscriptionKeys(limit: Int) async throws -> (keys: [SubscriptionKey], total: Int) {
        try await pool.read { db in
            let total = try db.rows(ConsoleRows.subscriptionCount, []).first?.first?.integer ?? 0
            return (LedgerRows.keys(try db.rows(ConsoleRows.firstKeys, [.integer(Int64(limit))])), Int(total))
        }
    }

    public func notificationTypes(before id: Int64, limit: Int) async throws -> [NotificationSighting] {
        try await pool.read { db in
            ConsoleRows.sightings(try db.rows(ConsoleRows.notificationTypes(.sqlite), [.integer(id), .integer(Int64(limit))]))
        }
    }

    public func latestNotifications(limit: Int) async throws -> [IdentifiedEvent] {
        try await pool.read { db in
            ConsoleRows.identifiedEvents(try db.rows(ConsoleRows.latestNotifications, [.integer(Int64(limit))]))
        }
    }

    public func identifiedEvents(touching key: SubscriptionKey) async throws -> [IdentifiedEvent] {
        try await pool.read { db in
            ConsoleRows.identifiedEvents(try db.rows(LedgerRows.eventsOfKey, LedgerRows.keyValues(key))).sorted { $0.id < $1.id }
        }
    }
}
