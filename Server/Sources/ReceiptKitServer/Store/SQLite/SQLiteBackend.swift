import Foundation
import GRDB
import ReceiptKit

/// The store in a SQLite file through GRDB: a `DatabasePool` in WAL mode (readers never wait for
/// the writer), migrated by a `DatabaseMigrator`. SQLite has one writer at a time: inputs that
/// arrive while a transaction runs are recorded together in the next (``GroupCommit``), each
/// answered after that commit.
final class SQLiteBackend: StoreBackend {
    let dialect = SQLDialect.sqlite
    private let pool: DatabasePool
    /// The file whose `flock` is the reconcile lock: the database's path and `-reconcile-lock`.
    private let reconcileLockPath: String
    /// Inputs are recorded in batches: those that arrive while a transaction runs share the next.
    private let recordings: GroupCommit<Recording, Recording.Result>
    /// The most inputs one transaction records.
    private static let maximumBatch = 128

    /// Opens (or creates) the database file.
    ///
    /// - Throws: ``StoreError`` when the file cannot be opened as a database.
    init(path: String) throws {
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
        reconcileLockPath = path + "-reconcile-lock"
        recordings = GroupCommit(maximumBatch: Self.maximumBatch) { batch in try await Self.commit(batch, to: pool) }
    }

    func query(_ fetch: Fetch) async throws -> [[StoreValue]] {
        try await pool.read { db in try db.rows(fetch) }
    }

    func update(_ fetch: Fetch) async throws -> [[StoreValue]] {
        try await pool.write { db in try db.rows(fetch) }
    }

    func read<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable {
        try await pool.read { db in try db.run(steps) }
    }

    func write<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable {
        try await pool.write { db in try db.run(steps) }
    }

    func record(_ recording: Recording, deadline: ContinuousClock.Instant?) async throws -> Recording.Result {
        try await recordings.submit(recording, deadline: deadline, timedOut: { StoreError.timedOut })
    }

    /// One transaction over a batch of recordings (``GroupCommit``). A recording that fails (its
    /// key's stored copy does not decode, say) must fail alone, so the batch is first tried as a
    /// whole and, should any fail, rolled back and run again with each recording in a savepoint
    /// of its own. Not a savepoint for each from the start: SQLite copies each page a savepoint
    /// changes into its statement journal first, which cost the server about 8% of its CPU time
    /// per notification. When the transaction itself is gone (SQLite rolls it back on some
    /// errors), the batch fails as a whole: nothing of it is reported recorded.
    private static func commit(_ batch: [Recording], to pool: DatabasePool) async throws -> [Result<Recording.Result, any Error>] {
        do {
            return try await pool.write { db in try batch.map { .success(try db.run($0)) } }
        } catch {
            return try await pool.write { db in
                batch.map { recording in
                    do {
                        var recorded: Recording.Result?
                        try db.inSavepoint {
                            recorded = try db.run(recording)
                            return .commit
                        }
                        guard let recorded else { throw StoreError("a savepoint committed without running its recording") }
                        return .success(recorded)
                    } catch {
                        return .failure(error)
                    }
                }
            }
        }
    }

    func migrate(_ migrations: ArraySlice<Migration>, at now: Timestamp) async throws {
        var migrator = DatabaseMigrator()
        for migration in migrations {
            migrator.registerMigration(migration.id) { db in
                for statement in migration.statements(.sqlite) {
                    try db.execute(sql: statement)
                }
                if let rows = migration.rows {
                    try db.run(rows(now))
                }
            }
        }
        try migrator.migrate(pool)
    }

    /// The reconcile lock on SQLite, whose servers share one host: an `flock` on the file beside
    /// the database named by the path and `-reconcile-lock` (``FileLock``), which the kernel
    /// releases when the process dies.
    func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T? {
        try await FileLock.withLock(at: reconcileLockPath, body)
    }

    func ping() async throws {
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
            try db.execute(sql: "ROLLBACK")
        }
    }

    func close() async throws {
        try pool.close()
    }

    /// The writer's `PRAGMA synchronous` (2 is `FULL`: every commit is synced before it returns).
    func synchronousLevel() async throws -> Int? {
        try await pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
    }
}
