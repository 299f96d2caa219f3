import Foundation
import Logging
import PostgresNIO
import ReceiptKit

/// The store in PostgreSQL through postgres-nio: one `PostgresClient`, which the application runs
/// as a service, every value bound, every change in one transaction.
///
/// Several servers may share the database. Migrations run under a transaction-scoped advisory
/// lock and are recorded in `receiptkit_migrations`. Two inputs for the same key, on any servers,
/// are serialized by the key's row lock (taken by the recording's `INSERT … ON CONFLICT DO UPDATE`
/// of the row, which locks an existing row whether or not it changes it): the second folds into
/// what the first committed, so no update is lost.
final class PostgresBackend: StoreBackend {
    let dialect = SQLDialect.postgres
    /// The client; run it (``PostgresClient/run()``) for as long as the store is used.
    let client: PostgresClient
    private let logger: Logger

    /// An arbitrary constant: the advisory lock that serializes migrations across servers.
    private static let migrationLock: Int64 = 0x5245_4345_4950_544B  // "RECEIPTK"
    /// An arbitrary constant: the first key of the reconcile lock, whose second is the schema's
    /// name hashed (one lock per schema, as there is one cursor per schema). Advisory locks of
    /// two 32-bit keys never collide with those of one 64-bit key, such as ``migrationLock``.
    private static let reconcileLockClass: Int32 = 0x524B_5243  // "RKRC"

    /// Creates the backend and its client (not yet running).
    ///
    /// - Parameters:
    ///   - location: The server and database.
    ///   - searchPath: A schema to use instead of the role's default (`search_path`), if any.
    ///   - logger: Where the client logs.
    init(location: PostgresLocation, searchPath: String?, logger: Logger) {
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
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
    }

    func query(_ fetch: Fetch) async throws -> [[StoreValue]] {
        let logger = self.logger
        return try await client.withConnection { connection in try await connection.rows(fetch, logger: logger) }
    }

    func update(_ fetch: Fetch) async throws -> [[StoreValue]] {
        try await query(fetch)
    }

    func read<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable {
        let logger = self.logger
        return try await client.withConnection { connection in
            // One statement is one snapshot: steps that usually finish after their first read (a
            // key's state now, ``LedgerStatements/current``) take one round trip, not three.
            if Steps.usuallyReadOnce {
                var single = steps
                switch try single.next([]) {
                case .done(let result):
                    return result
                case .fetch(let fetch):
                    if case .done(let result) = try single.next(try await connection.rows(fetch, logger: logger)) {
                        return result
                    }
                case .write, .insert:
                    break
                }
            }
            // Steps that read again, from the start in one snapshot, so that their rows agree.
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            do {
                let result = try await connection.run(steps, logger: logger)
                try await connection.query("COMMIT", logger: logger)
                return result
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    func write<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable {
        let logger = self.logger
        return try await transaction { connection in try await connection.run(steps, logger: logger) }
    }

    /// `client.withTransaction`, with a ``StoreError`` or ``CallerError`` its body threw passed on
    /// as thrown (PostgresNIO wraps it in `PostgresTransactionError`), so that stored data that
    /// cannot be read keeps its answer (500, not 503).
    private func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch let error as PostgresTransactionError {
            if let thrown = error.closureError, thrown is StoreError || thrown is any CallerError { throw thrown }
            throw error
        }
    }

    func record(_ recording: Recording, deadline: ContinuousClock.Instant?) async throws -> Recording.Result {
        guard let deadline else { return try await abandoningOnCancel { try await self.write(recording) } }
        return try await abandoning(at: deadline, timedOut: { StoreError.timedOut }) { try await self.write(recording) }
    }

    func migrate(_ migrations: ArraySlice<Migration>, at now: Timestamp) async throws {
        let logger = self.logger
        try await transaction { connection in
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
            for migration in migrations where !applied.contains(migration.id) {
                for statement in migration.statements(.postgres) {
                    // A constant of Schema, never built from input: the one place SQL is not
                    // bound, because DDL takes no bindings.
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                if let rows = migration.rows {
                    try await connection.run(rows(now), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO receiptkit_migrations (id, applied_at) VALUES (\(migration.id), \(now.millisecondsSince1970))",
                    logger: logger)
            }
        }
    }

    /// The reconcile lock on PostgreSQL: a session-level advisory lock (`pg_try_advisory_lock`)
    /// taken on a connection kept out of the pool for the run. Its session holds it, so it goes
    /// when the process dies (the server ends the session of a closed connection at once) — and
    /// if it is given up while `body` still runs (the session ended under it), the cursor's owner
    /// row stops the run (``ReconcileStatements``).
    func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T? {
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

    func ping() async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            // The lock an INSERT into inputs takes; a lock held against it (LOCK TABLE, a
            // migration) makes this wait, at most 2 s on the server's side.
            try await connection.query("SET LOCAL lock_timeout = '2s'", logger: logger)
            try await connection.query("LOCK TABLE inputs IN ROW EXCLUSIVE MODE", logger: logger)
        }
    }

    func close() async throws {}
}

extension PostgresConnection {
    /// Runs a ``RowSteps`` to its end on this connection.
    func run<Steps: RowSteps>(_ steps: Steps, logger: Logger) async throws -> Steps.Result {
        var steps = steps
        var rows: [[StoreValue]] = []
        while true {
            switch try steps.next(rows) {
            case .fetch(let fetch):
                rows = try await self.rows(fetch, logger: logger)
            case .write(let writes):
                for write in writes {
                    try await query(write.statement.postgres(write.values()), logger: logger)
                }
                rows = []
            case .insert(let write):
                // Its text ends `RETURNING id` (``SQLDialect/returningId``).
                rows = try await self.rows(
                    Fetch(statement: write.statement, columns: [.integer], bindings: write.bindings), logger: logger)
            case .done(let result):
                return result
            }
        }
    }

    /// The rows of a statement of the store's, each cell read as the fetch declares its column;
    /// a row with another number of cells is an error. A named statement
    /// (``PostgresNamedStatements``) runs prepared on this connection; any other unnamed.
    func rows(_ fetch: Fetch, logger: Logger) async throws -> [[StoreValue]] {
        if let named = PostgresNamedStatements.byText[fetch.statement.postgres] {
            return try await rows(named, fetch, logger: logger)
        }
        return try await cells(of: query(fetch.statement.postgres(fetch.values()), logger: logger), as: fetch)
    }

    private func rows<Statement: PostgresNamedStatement>(
        _: Statement.Type, _ fetch: Fetch, logger: Logger
    ) async throws -> [[StoreValue]] {
        let named = PostgresNamed<Statement>(bindings: try fetch.values().postgresBindings)
        return try await cells(of: execute(named, logger: logger), as: fetch)
    }

    private func cells<Rows: AsyncSequence>(of rows: Rows, as fetch: Fetch) async throws -> [[StoreValue]]
    where Rows.Element == PostgresRow {
        let columns = fetch.columns
        var values: [[StoreValue]] = []
        for try await row in rows {
            guard row.count == columns.count else {
                throw StoreError.damaged("the query reads \(row.count) columns and declares \(columns.count): \(fetch.statement.postgres)")
            }
            var cells: [StoreValue] = []
            cells.reserveCapacity(columns.count)
            for (cell, column) in zip(row, columns) {
                switch column {
                case .integer: cells.append(try cell.decode(Int64?.self).map(StoreValue.integer) ?? .null)
                case .text: cells.append(try cell.decode(String?.self).map(StoreValue.text) ?? .null)
                case .bytes: cells.append(try cell.decode(ByteBuffer?.self).map { .bytes(Array($0.readableBytesView)) } ?? .null)
                }
            }
            values.append(cells)
        }
        return values
    }
}

extension StoreStatement {
    /// The statement with its values, for PostgreSQL.
    func postgres(_ values: [StoreValue]) -> PostgresQuery {
        PostgresQuery(unsafeSQL: postgres, binds: values.postgresBindings)
    }
}

extension [StoreValue] {
    /// The values, bound as PostgreSQL takes them.
    var postgresBindings: PostgresBindings {
        var binds = PostgresBindings(capacity: count)
        for value in self {
            switch value {
            case .integer(let integer): binds.append(integer)
            case .text(let text): binds.append(text)
            case .bytes(let bytes): binds.append(ByteBuffer(bytes: bytes))
            case .null: binds.appendNull()
            }
        }
        return binds
    }
}
