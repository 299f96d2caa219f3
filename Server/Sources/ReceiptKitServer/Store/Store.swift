package import struct Foundation.Date
import Logging
package import PostgresNIO
import ReceiptKit

/// Where verified inputs, the state derived from them, the feed, the outbox and the links between
/// customers and subscriptions are kept: one store, written once over the one seam where SQLite
/// and PostgreSQL differ (``StoreBackend``), with the same schema and migrations (``Schema``).
///
/// Every method that writes runs one database transaction and returns only once it has
/// committed: a route answers 200 only after that. Its own operations are in the `Store+…` files
/// beside this one, a feature's in the feature's folder; their statements are in `Statements/`,
/// the ledger's longer ones in `Steps/`. It knows no feature: recording runs the ones it is made
/// with (``StoreFeatures``).
package final class Store: Sendable {
    /// The driver, as every operation reaches it: bounded by ``timeout`` while a request is
    /// served (``BoundedBackend``).
    let backend: BoundedBackend
    /// The features' rules its operations run, and whom to tell what each commit wrote
    /// (the server's `RecordingFeatures`, in `Feed/`).
    let features: any StoreFeatures
    /// The JWS headers committed so far, with their ids.
    let headers = HeaderDirectory()
    /// The PostgreSQL client, which must run (as a service) for as long as the store is used;
    /// `nil` for SQLite.
    package let postgresClient: PostgresClient?
    /// How long one store call made while a request is served (``BoundedBackend``), through
    /// ``run(_:)`` or ``record(_:)``, waits for the database — a connection, a lock, a commit — before it throws ``StoreError`` (503: the
    /// caller retries) instead of hanging for as long as the database is away; `nil`: as long as
    /// the database takes (a command's or a test's store).
    package let timeout: Duration?

    /// What `RECEIPTKIT_DATABASE_TIMEOUT` is when unset: a webhook's 503 then leaves within 5 s
    /// of its request, with room for the rest of the request.
    package static let defaultTimeout = Duration.seconds(3)

    /// Opens (or creates) a SQLite database file.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - features: The features' rules, and whom to tell what each commit wrote.
    ///   - timeout: How long one store call waits for the database (``timeout``).
    /// - Throws: ``StoreError`` when the file cannot be opened as a database.
    init(sqlitePath path: String, features: any StoreFeatures, timeout: Duration? = nil) throws {
        backend = BoundedBackend(driver: try SQLiteBackend(path: path), timeout: timeout)
        self.features = features
        self.timeout = timeout
        postgresClient = nil
    }

    /// Creates a store in PostgreSQL and its client (not yet running: run ``postgresClient``).
    ///
    /// - Parameters:
    ///   - location: The server and database.
    ///   - searchPath: A schema to use instead of the role's default (`search_path`), if any.
    ///   - logger: Where the client logs.
    ///   - features: The features' rules, and whom to tell what each commit wrote.
    ///   - timeout: How long one store call waits for the database (``timeout``).
    init(
        postgres location: PostgresLocation, searchPath: String? = nil, logger: Logger, features: any StoreFeatures,
        timeout: Duration? = nil
    ) {
        let backend = PostgresBackend(location: location, searchPath: searchPath, logger: logger)
        self.backend = BoundedBackend(driver: backend, timeout: timeout)
        self.features = features
        self.timeout = timeout
        postgresClient = backend.client
    }

    /// The store a configuration names.
    convenience init(
        _ database: DatabaseLocation, logger: Logger, postgresSearchPath: String? = nil, features: any StoreFeatures,
        timeout: Duration? = nil
    ) throws {
        switch database {
        case .sqlite(let path): try self.init(sqlitePath: path, features: features, timeout: timeout)
        case .postgres(let location):
            self.init(postgres: location, searchPath: postgresSearchPath, logger: logger, features: features, timeout: timeout)
        }
    }

    /// Runs `body` with the store usable: for PostgreSQL, its client running beside it (a command
    /// outside the server's service group: `sync`, `backup`, the tests).
    package func whileRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let client = postgresClient else { return try await body() }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    /// Runs store operations on behalf of a request or a run: stops waiting after ``timeout``,
    /// or as soon as the caller is cancelled (a request's timeout), even while the database still
    /// waits for a lock or a connection — the operations are cancelled too and finish on their
    /// own; a write they commit after the caller stopped waiting is harmless, since the client
    /// retries and a replay changes nothing. A failure of the database, or no answer within
    /// ``timeout``, is a ``StoreError`` (503: the caller retries); a ``CallerError`` the operations
    /// throw (a feature's refusal) is passed on.
    package func run<T: Sendable>(_ operations: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await StoreCall.$bounded.withValue(true) {
                guard let timeout else { return try await abandoningOnCancel(operations) }
                return try await abandoning(at: ContinuousClock.now + timeout, timedOut: { StoreError.timedOut }, operations)
            }
        } catch let error as StoreError {
            throw error
        } catch let error as any CallerError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw StoreError(String(describing: error))
        }
    }

    /// Applies the migrations not yet applied. Safe to call from several servers at once.
    ///
    /// - Parameter now: The instant they run at, for what their row steps derive from the time
    ///   (the overview chart's last days): the server's clock.
    package func migrate(at now: Date = Date()) async throws {
        try await migrate(through: nil, at: now)
    }

    /// Applies the migrations not yet applied, up to and including the one with this id (all of
    /// them when `nil`): the tests make a database as an older server left it.
    package func migrate(through lastId: String?, at now: Date = Date()) async throws {
        try await backend.migrate(try Schema.migrations(through: lastId), at: Timestamp(now))
    }

    /// Throws unless the database accepts a write now (``StoreBackend/ping()``). A read can
    /// succeed while every write waits — SQLite in WAL mode under another connection's write
    /// lock, a PostgreSQL table locked by a migration — and a webhook that cannot write must not
    /// look ready.
    package func ping() async throws {
        try await backend.ping()
    }

    /// Closes the database (SQLite) or does nothing (PostgreSQL, whose client is a service).
    package func close() async throws {
        try await backend.close()
    }

    /// The SQLite writer's `PRAGMA synchronous` (2 is `FULL`: every commit is synced before it
    /// returns); `nil` on PostgreSQL.
    package func synchronousLevel() async throws -> Int? {
        try await (backend.driver as? SQLiteBackend)?.synchronousLevel()
    }
}

/// The database failed, or what it holds cannot be read. Its description is for the log only,
/// never for an answer.
///
/// A failure that passes (the database unreachable, busy, full, or slower than
/// `RECEIPTKIT_DATABASE_TIMEOUT`) is ``Kind/unavailable``: the route answers 503 with
/// `Retry-After`, so that Apple (or the backend) retries. Stored data this server cannot read (a
/// record or copy that does not decode, a column of another type, a row no version writes) is
/// ``Kind/damaged``: a retry cannot help, so the route answers 500 `stored_data_damaged` and the
/// log names what failed.
public struct StoreError: Error, CustomStringConvertible {
    /// Whether a retry may succeed.
    public enum Kind: Sendable {
        /// The database failed or did not answer in time; it may answer a retry.
        case unavailable
        /// What is stored cannot be read: the store is damaged, or was written by software this
        /// server does not know.
        case damaged
    }

    /// Whether a retry may succeed.
    public let kind: Kind
    /// What failed, for the log.
    public let description: String

    /// The database failed (``Kind/unavailable``).
    init(_ description: String) {
        self.init(.unavailable, description)
    }

    private init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// What is stored cannot be read (``Kind/damaged``).
    static func damaged(_ description: String) -> StoreError {
        StoreError(.damaged, description)
    }

    /// A store call that had no answer from the database within ``Store/timeout``.
    package static var timedOut: StoreError {
        StoreError("the database did not answer within RECEIPTKIT_DATABASE_TIMEOUT")
    }
}
