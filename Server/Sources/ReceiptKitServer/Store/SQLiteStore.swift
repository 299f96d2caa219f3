import Foundation
public import ReceiptKit
import GRDB

/// The store in a SQLite file through GRDB: a `DatabasePool` in WAL mode (readers never wait for
/// the writer), migrated by a `DatabaseMigrator`. SQLite has one writer at a time, so two events
/// for the same key are folded one after the other; events that arrive while a write runs are
/// stored together in the next transaction (``GroupCommit``), each answered after that commit.
public final class SQLiteStore: EntitlementStore, StoreInspection {
    private let pool: DatabasePool
    /// The file whose `flock` is the reconcile lock: the database's path and `-reconcile-lock`.
    private let reconcileLockPath: String
    /// Events are written in batches: those that arrive while a transaction runs share the next.
    private let writes: GroupCommit<NewEvent, Recorded>
    /// Who is told what each commit wrote to the feed.
    private let feed: FeedSettings
    /// The JWS headers committed so far, with their ids.
    private let headers = HeaderDirectory()
    /// The most events one transaction stores.
    private static let maximumBatch = 128

    /// Opens (or creates) the database file.
    ///
    /// - Parameters:
    ///   - path: The file's path.
    ///   - feed: Who is told what each commit wrote to the feed.
    /// - Throws: ``StoreError`` when the file cannot be opened as a database.
    public init(path: String, feed: FeedSettings = FeedSettings()) throws {
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
        self.reconcileLockPath = path + "-reconcile-lock"
        self.feed = feed
        let headers = self.headers
        self.writes = GroupCommit(maximumBatch: Self.maximumBatch) { events in
            let results = try await Self.commit(events, to: pool, headers: headers, targets: feed.targets)
            var commit = FeedCommit()
            for case .success(let recorded) in results { commit.merge(recorded.feed) }
            feed.tell(commit)
            return results
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
                case .baselines:
                    // The edge: a migration runs at the server's start, at the time of day.
                    let now = Timestamp(Date())
                    for key in FeedRows.keys(try db.rows(FeedRows.allKeys, [])) {
                        try db.execute(try db.run(FeedRows.Baseline(key: key, at: now)))
                    }
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
        try await writes.submit(event).isNew
    }

    /// One transaction over a batch of events (``GroupCommit``). An event that fails (its key's
    /// stored state does not decode, say) must fail alone, so the batch is first tried as a whole
    /// and, should any event fail, rolled back and stored again with each event in a savepoint
    /// of its own (``commitEventByEvent(_:to:headers:)``). Not a savepoint for every event from
    /// the start: SQLite copies each page a savepoint changes into its statement journal first,
    /// which cost the server about 8% of its CPU time per notification.
    private static func commit(
        _ events: [NewEvent], to pool: DatabasePool, headers: HeaderDirectory, targets: OutboxTargets
    ) async throws -> [Result<Recorded, any Error>] {
        let whole: (recorded: [Recorded], newHeaders: [(segment: [UInt8], header: RawCompaction.Header)])
        do {
            whole = try await pool.write { db in
                var newHeaders: [(segment: [UInt8], header: RawCompaction.Header)] = []
                let recorded = try events.map { try insert($0, into: db, headers: headers, targets: targets, found: &newHeaders) }
                return (recorded, newHeaders)
            }
        } catch {
            // Nothing of the batch was committed. Event by event, the failure is found again
            // (and reported to its request alone), or, if the database itself failed, the
            // batch fails as before.
            return try await commitEventByEvent(events, to: pool, headers: headers, targets: targets)
        }
        headers.remember(whole.newHeaders)
        return whole.recorded.map { .success($0) }
    }

    /// One transaction over a batch of events, each event in a savepoint of its own, so that an
    /// event that fails is rolled back alone and reported alone. When the transaction itself is
    /// gone (SQLite rolls it back on some errors), the batch fails as a whole: nothing of it is
    /// reported stored.
    private static func commitEventByEvent(
        _ events: [NewEvent], to pool: DatabasePool, headers: HeaderDirectory, targets: OutboxTargets
    ) async throws -> [Result<Recorded, any Error>] {
        let (results, newHeaders) = try await pool.write { db in
            var results: [Result<Recorded, any Error>] = []
            results.reserveCapacity(events.count)
            var newHeaders: [(segment: [UInt8], header: RawCompaction.Header)] = []
            for event in events {
                var recorded = Recorded(isNew: false)
                // Headers this event inserted count only once its savepoint is released.
                var found: [(segment: [UInt8], header: RawCompaction.Header)] = []
                do {
                    try db.inSavepoint {
                        recorded = try insert(event, into: db, headers: headers, targets: targets, found: &found)
                        return .commit
                    }
                    newHeaders += found
                    results.append(.success(recorded))
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

    /// Stores one event and folds it into its keys' states (a replay changes no state) — or, when
    /// it only repeats what is stored (``NewEvent/skipsRepeats``), remembers its later signing
    /// in the copies' rows instead; adds its customer links in any case; then, for a new event,
    /// writes the feed's events of the changes it caused (``FeedRows/Derivation``). The
    /// statements are prepared once per connection.
    ///
    /// - Returns: Whether the event is new, and what it wrote to the feed.
    private static func insert(
        _ event: NewEvent, into db: Database, headers: HeaderDirectory, targets: OutboxTargets,
        found: inout [(segment: [UInt8], header: RawCompaction.Header)]
    ) throws -> Recorded {
        if event.skipsRepeats, let repeated = try db.run(LedgerRows.Repeating(event)) {
            for write in repeated { try db.execute(write) }
            for write in LedgerRows.linkWrites(event) { try db.execute(write) }
            return Recorded(isNew: false)
        }
        let raw = try storedRaw(of: event, in: db, headers: headers, found: &found)
        try db.cachedStatement(
            sql: """
                INSERT INTO events (dedup_key, kind, raw, raw_encoding, record, received_at, source) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (dedup_key) DO NOTHING
                """
        ).execute(arguments: [
            event.dedupKey, event.kind, Data(raw.bytes), raw.encoding.rawValue, event.record, event.receivedAt,
            event.cause.source.rawValue,
        ])
        // One row inserted, or none for a replay (`RETURNING` would read it back through a cursor).
        let inserted: Int64? = db.changesCount == 1 ? db.lastInsertedRowID : nil
        var written = LedgerRows.Written()
        if let eventId = inserted {
            for write in LedgerRows.keyWrites(event, eventId: eventId) { try db.execute(write) }
            for copy in event.copies {
                let writes = try db.run(LedgerRows.Folding(copy))
                for write in writes { try db.execute(write) }
                written.add(copy, ifStoredBy: writes)
            }
        }
        for write in LedgerRows.linkWrites(event) { try db.execute(write) }
        guard inserted != nil else { return Recorded(isNew: false) }
        let plan = try db.run(FeedRows.Derivation(event, targets: targets, written: written))
        for write in plan.writes { try db.execute(write) }
        var recorded = Recorded(isNew: true)
        recorded.feed.add(plan)
        return recorded
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

    public func changeEvents(after: Int64, limit: Int) async throws -> [FeedEvent] {
        try await pool.read { db in FeedRows.feedEvents(try db.rows(FeedRows.eventsAfter, [.integer(after), .integer(Int64(limit))])) }
    }

    public func changeEvents(customerId: String, after: Int64, limit: Int) async throws -> [FeedEvent] {
        try await pool.read { db in
            FeedRows.feedEvents(
                try db.rows(FeedRows.customerEventsAfter, [.text(customerId), .integer(after), .integer(Int64(limit))]))
        }
    }

    public func sweep(now: Timestamp, limit: Int) async throws -> SweepReport {
        let due = try await pool.read { db in
            FeedRows.keys(try db.rows(FeedRows.dueKeys, [.integer(now.millisecondsSince1970), .integer(Int64(limit))]))
        }
        var report = SweepReport(due: due.count)
        for key in due {
            // One transaction per key: SQLite has one writer, so the claim holds until the commit.
            let (commit, swept) = try await pool.write { db in
                try db.run(FeedRows.Sweeping(key: key, now: now, targets: feed.targets, claim: FeedRows.claimDueKey))
            }
            report.swept += swept ? 1 : 0
            report.events += commit.eventTypes.count
            feed.tell(commit)
        }
        return report
    }

    public func close() async throws {
        try pool.close()
    }
}

// MARK: The outbox (``OutboxStore``, statements in ``OutboxRows``)

extension SQLiteStore: OutboxStore {
    func claimDeliveries(owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [Delivery] {
        guard try await pool.read({ db in try !db.rows(OutboxRows.anyDue, [.integer(now), .integer(now)]).isEmpty }) else { return [] }
        return try await pool.write { db in
            OutboxRows.deliveries(try db.rows(
                OutboxRows.claimSQLite, [.text(owner), .integer(leaseUntil), .integer(now), .integer(now), .integer(Int64(limit))]))
        }
    }

    func finishDelivery(_ id: Int64, owner: String, outcome: DeliveryOutcome) async throws -> Bool {
        try await pool.write { db in
            try !db.rows(OutboxRows.finish, OutboxRows.finishValues(id, owner: owner, outcome: outcome)).isEmpty
        }
    }

    func deliveries(state: Delivery.State, after: Int64, limit: Int) async throws -> [Delivery] {
        try await pool.read { db in
            OutboxRows.deliveries(try db.rows(OutboxRows.list, [.text(state.rawValue), .integer(after), .integer(Int64(limit))]))
        }
    }

    func delivery(_ id: Int64) async throws -> Delivery? {
        try await pool.read { db in OutboxRows.deliveries(try db.rows(OutboxRows.byId, [.integer(id)])).first }
    }

    func retryDelivery(_ id: Int64, now: Int64, giveUpAt: Int64) async throws -> Delivery? {
        let delivery = try await pool.write { db in
            OutboxRows.deliveries(try db.rows(OutboxRows.retry, [.integer(now), .integer(giveUpAt), .integer(id)])).first
        }
        if delivery != nil { feed.tell(FeedCommit(outboxRows: 1)) }
        return delivery
    }

    func outboxBacklog() async throws -> [OutboxBacklog] {
        try await pool.read { db in OutboxRows.backlog(try db.rows(OutboxRows.pendingByTarget, [])) }
    }

    func pruneDelivered(before: Int64) async throws {
        try await pool.write { db in try db.execute(StoreWrite(OutboxRows.pruneDelivered, [.integer(before)])) }
    }
}

// MARK: Consumption requests (``ConsumptionStore``, statements in ``ConsumptionRows``)

extension SQLiteStore: ConsumptionStore {
    func consumptionRequest(transactionId: String) async throws -> StoredConsumptionRequest? {
        try await pool.read { db in
            try db.rows(ConsumptionRows.latestRequest, [.text(transactionId)]).first.flatMap(StoredConsumptionRequest.init)
        }
    }

    func answerConsumption(
        _ request: StoredConsumptionRequest, transactionId: String, apple: [UInt8], now: Int64
    ) async throws -> Delivery? {
        let delivery = try await pool.write { db in
            let answer = String(decoding: apple, as: UTF8.self)
            _ = try db.rows(ConsumptionRows.answered, [.integer(now), .text("backend"), .text(answer), .text(request.notificationUUID)])
            let write = ConsumptionRows.outboxWrite(transactionId: transactionId, body: apple, now: now, deadline: request.deadline)
            return OutboxRows.deliveries(try db.rows(OutboxRows.insertReturning, write.values)).first
        }
        feed.tell(FeedCommit(outboxRows: 1))
        return delivery
    }

    func setConsumptionConsent(customerId: String, consented: Bool, at now: Int64) async throws {
        try await pool.write { db in
            try db.execute(StoreWrite(ConsumptionRows.setConsent, [.text(customerId), .integer(consented ? 1 : 0), .integer(now)]))
        }
    }

    func answerConsumptionDefaults(now: Int64, window: Int64, answer: @Sendable (String?) -> [UInt8]?) async throws -> Int {
        let due = try await pool.read { db in
            try db.rows(ConsumptionRows.defaultsDue, [.integer(now), .integer(now), .integer(window)])
        }
        var answered = 0
        for row in due {
            guard let uuid = row[0].text, let transactionId = row[1].text, let deadline = row[3].integer,
                  let body = answer(row[2].text)
            else { continue }
            let claimed = try await pool.write { db in
                let text = String(decoding: body, as: UTF8.self)
                guard try !db.rows(ConsumptionRows.defaultAnswered, [.integer(now), .text("default"), .text(text), .text(uuid)]).isEmpty
                else { return false }
                try db.execute(ConsumptionRows.outboxWrite(transactionId: transactionId, body: body, now: now, deadline: deadline))
                return true
            }
            if claimed { answered += 1 }
        }
        if answered > 0 { feed.tell(FeedCommit(outboxRows: answered)) }
        return answered
    }
}

/// What storing one event did: whether it was new, and what it wrote to the feed.
struct Recorded: Sendable {
    var isNew: Bool
    var feed = FeedCommit()
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

    /// The reconcile lock on SQLite, whose servers share one host: an `flock` on the file
    /// beside the database named by the path and `-reconcile-lock` (``FileLock``), which the
    /// kernel releases when the process dies.
    public func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T? {
        try await FileLock.withLock(at: reconcileLockPath, body)
    }

    public func claimReconcileCursor(owner: String) async throws {
        try await pool.write { db in try db.execute(StoreWrite(ReconcileRows.claim, [.text(owner)])) }
    }

    public func advanceReconcileCursor(to position: Int64, owner: String) async throws -> Bool {
        try await pool.write { db in
            try !db.rows(ReconcileRows.advance, [.integer(position), .integer(position), .text(owner)]).isEmpty
        }
    }

    public func releaseReconcileCursor(owner: String) async throws {
        try await pool.write { db in try db.execute(StoreWrite(ReconcileRows.release, [.text(owner)])) }
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
