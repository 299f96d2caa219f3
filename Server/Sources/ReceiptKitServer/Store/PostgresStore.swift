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
    /// Who is told what each commit wrote to the feed.
    private let feed: FeedSettings

    /// An arbitrary constant: the advisory lock that serializes migrations across servers.
    private static let migrationLock: Int64 = 0x5245_4345_4950_544B  // "RECEIPTK"
    /// An arbitrary constant: the first key of the reconcile lock, whose second is the schema's
    /// name hashed (one lock per schema, as there is one cursor per schema). Advisory locks of
    /// two 32-bit keys never collide with those of one 64-bit key, such as ``migrationLock``.
    private static let reconcileLockClass: Int32 = 0x524B_5243  // "RKRC"

    /// Creates the store and its client (not yet running).
    ///
    /// - Parameters:
    ///   - location: The server and database.
    ///   - searchPath: A schema to use instead of the role's default (`search_path`), if any.
    ///   - logger: Where the client logs.
    ///   - feed: Who is told what each commit wrote to the feed.
    public init(location: PostgresLocation, searchPath: String? = nil, logger: Logger, feed: FeedSettings = FeedSettings()) {
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
        self.feed = feed
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
                case .baselines:
                    // The edge: a migration runs at the server's start, at the time of day.
                    let now = Timestamp(Date())
                    for key in FeedRows.keys(try await connection.rows(FeedRows.allKeys, [], logger: logger)) {
                        try await connection.execute(
                            try await connection.run(FeedRows.Baseline(key: key, at: now), logger: logger), logger: logger)
                    }
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
        let targets = feed.targets
        let (isNew, found, commit) = try await client.withTransaction(logger: logger) { connection in
            if event.skipsRepeats, let repeated = try await Self.repeated(event, on: connection, logger: logger) {
                for write in repeated + LedgerRows.linkWrites(event) {
                    try await connection.execute(write, logger: logger)
                }
                return (false, [(segment: [UInt8], header: RawCompaction.Header)](), FeedCommit())
            }
            let (stored, encoding, found) = try await Self.storedRaw(of: event, on: connection, headers: headers, logger: logger)
            let raw = ByteBuffer(bytes: stored)
            var eventId: Int64?
            var written = LedgerRows.Written()
            for try await id in try await connection.query(
                """
                INSERT INTO events (dedup_key, kind, raw, raw_encoding, record, received_at, source)
                VALUES (\(event.dedupKey), \(event.kind), \(raw), \(encoding.rawValue), \(event.record), \(event.receivedAt),
                    \(event.cause.source.rawValue))
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
                    let writes = try await connection.run(LedgerRows.Folding(copy), logger: logger)
                    for write in writes {
                        try await connection.execute(write, logger: logger)
                    }
                    written.add(copy, ifStoredBy: writes)
                }
            }
            for write in LedgerRows.linkWrites(event) {
                try await connection.execute(write, logger: logger)
            }
            var commit = FeedCommit()
            if eventId != nil {
                // Last: the feed's counter, which this takes only when there are events, stays
                // locked until the commit (``FeedRows``).
                let plan = try await connection.run(FeedRows.Derivation(event, targets: targets, written: written), logger: logger)
                for write in plan.writes {
                    try await connection.execute(write, logger: logger)
                }
                commit.add(plan)
            }
            return (eventId != nil, found, commit)
        }
        headers.remember(found)
        feed.tell(commit)
        return isNew
    }

    /// The writes that remember `event`'s later signing when it only repeats what is stored
    /// (``LedgerRows/Repeating``), or `nil`; its keys' rows locked first (`FOR UPDATE`, in key
    /// order, as a new event locks them), so that another server folding into them waits.
    private static func repeated(_ event: NewEvent, on connection: PostgresConnection, logger: Logger) async throws -> [StoreWrite]? {
        for key in event.orderedKeys {
            _ = try await connection.rows(LedgerRows.lockSubscription, LedgerRows.keyValues(key), logger: logger)
        }
        return try await connection.run(LedgerRows.Repeating(event), logger: logger)
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

    public func changeEvents(after: Int64, limit: Int) async throws -> [FeedEvent] {
        let logger = self.logger
        return try await client.withConnection { connection in
            FeedRows.feedEvents(
                try await connection.rows(FeedRows.eventsAfter, [.integer(after), .integer(Int64(limit))], logger: logger))
        }
    }

    public func changeEvents(customerId: String, after: Int64, limit: Int) async throws -> [FeedEvent] {
        let logger = self.logger
        return try await client.withConnection { connection in
            FeedRows.feedEvents(try await connection.rows(
                FeedRows.customerEventsAfter, [.text(customerId), .integer(after), .integer(Int64(limit))], logger: logger))
        }
    }

    public func sweep(now: Timestamp, limit: Int) async throws -> SweepReport {
        let logger = self.logger
        let nowValue = StoreValue.integer(now.millisecondsSince1970)
        let due = try await client.withConnection { connection in
            FeedRows.keys(try await connection.rows(FeedRows.dueKeys, [nowValue, .integer(Int64(limit))], logger: logger))
        }
        var report = SweepReport(due: due.count)
        for key in due {
            // One transaction per key, its row locked, or skipped when another transaction holds
            // it (an input folding into it derives it; another server's sweep does this).
            let (commit, swept) = try await client.withTransaction(logger: logger) { connection in
                try await connection.run(
                    FeedRows.Sweeping(key: key, now: now, targets: feed.targets, claim: FeedRows.claimDueKeyPostgres), logger: logger)
            }
            report.swept += swept ? 1 : 0
            report.events += commit.eventTypes.count
            feed.tell(commit)
        }
        return report
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

    /// The reconcile lock on PostgreSQL: a session-level advisory lock
    /// (`pg_try_advisory_lock`) taken on a connection kept out of the pool for the run. Its
    /// session holds it, so it goes when the process dies (the server ends the session of a
    /// closed connection at once) — and if it is given up while `body` still runs (the session
    /// ended under it), the cursor's owner row stops the run (``ReconcileRows``).
    public func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T? {
        let logger = self.logger
        return try await client.withConnection { connection in
            var locked = false
            for try await taken in try await connection.query(
                "SELECT pg_try_advisory_lock(\(Self.reconcileLockClass), hashtext(current_schema()))", logger: logger
            ).decode(Bool.self) {
                locked = taken
            }
            guard locked else { return nil }
            // Given up even when the run was cancelled: in a task of its own. A connection that
            // cannot give it up is closed, which ends its session and the lock with it.
            let unlock = { @Sendable in
                await Task {
                    do {
                        try await connection.query(
                            "SELECT pg_advisory_unlock(\(Self.reconcileLockClass), hashtext(current_schema()))", logger: logger)
                    } catch {
                        logger.warning("giving up the reconcile lock failed; closing its connection", metadata: ["error": "\(error)"])
                        try? await connection.close()
                    }
                }.value
            }
            do {
                let result = try await body()
                await unlock()
                return result
            } catch {
                await unlock()
                throw error
            }
        }
    }

    public func claimReconcileCursor(owner: String) async throws {
        let logger = self.logger
        try await client.withConnection { connection in
            try await connection.execute(StoreWrite(ReconcileRows.claim, [.text(owner)]), logger: logger)
        }
    }

    public func advanceReconcileCursor(to position: Int64, owner: String) async throws -> Bool {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await !connection.rows(
                ReconcileRows.advance, [.integer(position), .integer(position), .text(owner)], logger: logger
            ).isEmpty
        }
    }

    public func releaseReconcileCursor(owner: String) async throws {
        let logger = self.logger
        try await client.withConnection { connection in
            try await connection.execute(StoreWrite(ReconcileRows.release, [.text(owner)]), logger: logger)
        }
    }
}

// MARK: The outbox (``OutboxStore``, statements in ``OutboxRows``)

extension PostgresStore: OutboxStore {
    func claimDeliveries(owner: String, now: Int64, leaseUntil: Int64, limit: Int) async throws -> [Delivery] {
        let logger = self.logger
        return try await client.withConnection { connection in
            guard try await !connection.rows(OutboxRows.anyDue, [.integer(now), .integer(now)], logger: logger).isEmpty else { return [] }
            return OutboxRows.deliveries(try await connection.rows(
                OutboxRows.claimPostgres, [.text(owner), .integer(leaseUntil), .integer(now), .integer(now), .integer(Int64(limit))],
                logger: logger))
        }
    }

    func finishDelivery(_ id: Int64, owner: String, outcome: DeliveryOutcome) async throws -> Bool {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await !connection.rows(OutboxRows.finish, OutboxRows.finishValues(id, owner: owner, outcome: outcome), logger: logger)
                .isEmpty
        }
    }

    func deliveries(state: Delivery.State, after: Int64, limit: Int) async throws -> [Delivery] {
        let logger = self.logger
        return try await client.withConnection { connection in
            OutboxRows.deliveries(try await connection.rows(
                OutboxRows.list, [.text(state.rawValue), .integer(after), .integer(Int64(limit))], logger: logger))
        }
    }

    func delivery(_ id: Int64) async throws -> Delivery? {
        let logger = self.logger
        return try await client.withConnection { connection in
            OutboxRows.deliveries(try await connection.rows(OutboxRows.byId, [.integer(id)], logger: logger)).first
        }
    }

    func retryDelivery(_ id: Int64, now: Int64, giveUpAt: Int64) async throws -> Delivery? {
        let logger = self.logger
        let delivery = try await client.withConnection { connection in
            OutboxRows.deliveries(try await connection.rows(
                OutboxRows.retry, [.integer(now), .integer(giveUpAt), .integer(id)], logger: logger)).first
        }
        if delivery != nil { feed.tell(FeedCommit(outboxRows: 1)) }
        return delivery
    }

    func outboxBacklog() async throws -> [OutboxBacklog] {
        let logger = self.logger
        return try await client.withConnection { connection in
            OutboxRows.backlog(try await connection.rows(OutboxRows.pendingByTarget, [], logger: logger))
        }
    }

    func pruneDelivered(before: Int64) async throws {
        let logger = self.logger
        try await client.withConnection { connection in
            try await connection.execute(StoreWrite(OutboxRows.pruneDelivered, [.integer(before)]), logger: logger)
        }
    }
}

// MARK: Consumption requests (``ConsumptionStore``, statements in ``ConsumptionRows``)

extension PostgresStore: ConsumptionStore {
    func consumptionRequest(transactionId: String) async throws -> StoredConsumptionRequest? {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.rows(ConsumptionRows.latestRequest, [.text(transactionId)], logger: logger).first
                .flatMap(StoredConsumptionRequest.init)
        }
    }

    func answerConsumption(
        _ request: StoredConsumptionRequest, transactionId: String, apple: [UInt8], now: Int64
    ) async throws -> Delivery? {
        let logger = self.logger
        let delivery = try await client.withTransaction(logger: logger) { connection in
            let answer = String(decoding: apple, as: UTF8.self)
            _ = try await connection.rows(
                ConsumptionRows.answered, [.integer(now), .text("backend"), .text(answer), .text(request.notificationUUID)],
                logger: logger)
            let write = ConsumptionRows.outboxWrite(transactionId: transactionId, body: apple, now: now, deadline: request.deadline)
            return OutboxRows.deliveries(try await connection.rows(OutboxRows.insertReturning, write.values, logger: logger)).first
        }
        feed.tell(FeedCommit(outboxRows: 1))
        return delivery
    }

    func setConsumptionConsent(customerId: String, consented: Bool, at now: Int64) async throws {
        let logger = self.logger
        try await client.withConnection { connection in
            try await connection.execute(
                StoreWrite(ConsumptionRows.setConsent, [.text(customerId), .integer(consented ? 1 : 0), .integer(now)]), logger: logger)
        }
    }

    func answerConsumptionDefaults(now: Int64, window: Int64, answer: @Sendable (String?) -> [UInt8]?) async throws -> Int {
        let logger = self.logger
        let due = try await client.withConnection { connection in
            try await connection.rows(ConsumptionRows.defaultsDue, [.integer(now), .integer(now), .integer(window)], logger: logger)
        }
        var answered = 0
        for row in due {
            guard let uuid = row[0].text, let transactionId = row[1].text, let deadline = row[3].integer,
                  let body = answer(row[2].text)
            else { continue }
            let claimed = try await client.withTransaction(logger: logger) { connection in
                let text = String(decoding: body, as: UTF8.self)
                guard try await !connection.rows(
                    ConsumptionRows.defaultAnswered, [.integer(now), .text("default"), .text(text), .text(uuid)], logger: logger
                ).isEmpty
                else { return false }
                try await connection.execute(
                    ConsumptionRows.outboxWrite(transactionId: transactionId, body: body, now: now, deadline: deadline), logger: logger)
                return true
            }
            if claimed { answered += 1 }
        }
        if answered > 0 { feed.tell(FeedCommit(outboxRows: answered)) }
        return answered
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
