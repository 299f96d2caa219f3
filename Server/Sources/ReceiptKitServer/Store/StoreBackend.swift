import ReceiptKit

/// The one seam between the store and a database: the few things SQLite and PostgreSQL do
/// differently — how a transaction, a snapshot and a group of writes run, how servers sharing a
/// database take turns, how migrations are recorded — and the dialect their SQL is written in.
/// Everything else (every statement and what is done with its rows, recording an input, the
/// sweep, the outbox, consumption answers, the migrations themselves) is written once above it,
/// in ``Store``, its ``RowSteps`` and the features'.
///
/// A backend runs what a step asks for and nothing else: it never decides what to read or write.
protocol StoreBackend: Sendable {
    /// The SQL a statement is run in.
    var dialect: SQLDialect { get }

    /// Runs one statement that only reads, and answers its rows.
    func query(_ fetch: Fetch) async throws -> [[StoreValue]]

    /// Runs one statement that writes, in a transaction of its own, and answers its rows (none
    /// without `RETURNING`).
    func update(_ fetch: Fetch) async throws -> [[StoreValue]]

    /// Runs steps that only read, every read in one snapshot, so that their rows agree.
    func read<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable

    /// Runs steps in one write transaction of their own, committed before this returns.
    func write<Steps: RowSteps & Sendable>(_ steps: Steps) async throws -> Steps.Result where Steps.Result: Sendable

    /// Runs a recording's steps in a write transaction, committed before this returns. SQLite
    /// has one writer: recordings that arrive while a transaction runs share the next (group
    /// commit), each rolled back alone if it fails. PostgreSQL runs each in a transaction of its
    /// own, the recording's steps locking the rows of its keys (``SQLDialect/locksRows``).
    ///
    /// Stops waiting at `deadline`, if any, throwing ``StoreError``, or as soon as the calling task is
    /// cancelled (a request's timeout), throwing `CancellationError`, even while the database
    /// still waits for a lock or a connection; the write may then still commit, which is
    /// harmless (the client retries, and a replay changes nothing).
    func record(_ recording: Recording, deadline: ContinuousClock.Instant?) async throws -> Recording.Result

    /// Applies the migrations not yet applied, in order, each in one transaction: its statements
    /// in ``dialect``, then its row steps, given `now`. Safe to call from several servers at once.
    func migrate(_ migrations: ArraySlice<Migration>, at now: Timestamp) async throws

    /// Runs `body` holding the reconcile lock: one holder at a time among every server sharing
    /// the database, and gone as soon as its process dies, so that a server killed mid-window
    /// holds up no one.
    ///
    /// - Returns: `body`'s result, or `nil` when another run holds the lock.
    func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T?

    /// Throws unless the database accepts a write now: takes the lock recording an input takes,
    /// and releases it, writing nothing.
    func ping() async throws

    /// Closes the database (SQLite) or does nothing (PostgreSQL, whose client is a service).
    func close() async throws
}

extension StoreBackend {
    /// The rows of one query that only reads, decoded.
    func rows<Row>(_ query: Query<Row>, _ bindings: Bindings = [:]) async throws -> [Row] {
        try query.decode(try await self.query(query.fetch(bindings)))
    }

    /// The first row of one query that only reads, decoded, if there is one.
    func first<Row>(_ query: Query<Row>, _ bindings: Bindings = [:]) async throws -> Row? {
        try query.decodeFirst(try await self.query(query.fetch(bindings)))
    }

    /// The rows one statement that writes answers (`RETURNING`), decoded.
    func updating<Row>(_ query: Query<Row>, _ bindings: Bindings) async throws -> [Row] {
        try query.decode(try await update(query.fetch(bindings)))
    }

    /// Runs one statement that writes and answers nothing.
    func execute(_ write: StoreWrite) async throws {
        _ = try await update(Fetch(statement: write.statement, columns: [], bindings: write.bindings))
    }
}
