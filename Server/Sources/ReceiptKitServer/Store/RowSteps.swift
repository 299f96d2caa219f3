/// A piece of store logic written once for both databases, as the statements it runs and what it
/// does with their rows (sans I/O, as postgres-nio's connection state machines are): a backend
/// runs each statement it asks for and hands the rows back, until it is done. SQLite runs the
/// steps synchronously inside GRDB's transaction, PostgreSQL on its connection; the logic is the
/// same.
protocol RowSteps<Result> {
    associatedtype Result
    /// The next step, given the rows of the fetch (or insert) the last step asked for (none at
    /// the first call, and none after writes).
    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Result>

    /// Whether the steps usually finish after their first read, so that a read-only backend may
    /// run that one statement outside a transaction (one statement is one snapshot) and fall back
    /// to a transaction only when they read again. `false` unless a type says otherwise.
    static var usuallyReadOnce: Bool { get }
}

extension RowSteps {
    static var usuallyReadOnce: Bool { false }
}

/// What a backend does next for a ``RowSteps``.
enum RowStep<Result> {
    /// Run this query and hand its rows to the next call.
    case fetch(Fetch)
    /// Run these writes in order, then make the next call with no rows (a later step reads what
    /// they wrote).
    case write([StoreWrite])
    /// Run this `INSERT … ON CONFLICT DO NOTHING` (whose PostgreSQL text ends `RETURNING id`)
    /// and hand the next call one row holding the new row's id, or no row when it inserted none.
    case insert(StoreWrite)
    /// Finished.
    case done(Result)
}

/// A step run inside another: the I/O it asks for, to pass on as the outer step's own, or its
/// result.
enum Nested<Inner, Outer> {
    case io(RowStep<Outer>)
    case done(Inner)

    /// The I/O asked for, if any.
    var io: RowStep<Outer>? {
        if case .io(let io) = self { io } else { nil }
    }
}

extension RowSteps {
    /// Advances this step as part of an outer one (see ``Nested``).
    mutating func nested<Outer>(_ rows: [[StoreValue]], in _: Outer.Type = Outer.self) throws -> Nested<Result, Outer> {
        switch try next(rows) {
        case .fetch(let fetch): .io(.fetch(fetch))
        case .write(let writes): .io(.write(writes))
        case .insert(let write): .io(.insert(write))
        case .done(let result): .done(result)
        }
    }
}

/// One query as a step: its rows, decoded.
struct QueryStep<Row>: RowSteps, Sendable {
    let query: Query<Row>
    let bindings: Bindings
    private var fetched = false

    init(_ query: Query<Row>, _ bindings: Bindings) {
        self.query = query
        self.bindings = bindings
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<[Row]> {
        guard fetched else {
            fetched = true
            return .fetch(query.fetch(bindings))
        }
        return .done(try query.decode(rows))
    }
}

/// One query run once for each set of bindings, in one snapshot: the rows of each run, decoded.
struct EachQueryStep<Row: Sendable>: RowSteps, Sendable {
    let query: Query<Row>
    let bindings: [Bindings]
    private var results: [[Row]] = []
    private var fetched = 0

    init(_ query: Query<Row>, _ bindings: [Bindings]) {
        self.query = query
        self.bindings = bindings
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<[[Row]]> {
        if fetched > 0 { results.append(try query.decode(rows)) }
        guard fetched < bindings.count else { return .done(results) }
        fetched += 1
        return .fetch(query.fetch(bindings[fetched - 1]))
    }
}

/// Writes as a step.
struct WriteStep: RowSteps, Sendable {
    let writes: [StoreWrite]
    private var written = false

    init(_ writes: [StoreWrite]) {
        self.writes = writes
    }

    mutating func next(_ rows: [[StoreValue]]) throws -> RowStep<Void> {
        guard written || writes.isEmpty else {
            written = true
            return .write(writes)
        }
        return .done(())
    }
}
