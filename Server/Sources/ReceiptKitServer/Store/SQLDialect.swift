/// The few words in which SQLite's and PostgreSQL's SQL differ. Every statement and migration is
/// written once, with these where the two disagree, so the two cannot drift apart.
enum SQLDialect: Sendable, Hashable {
    case sqlite
    case postgres

    /// An auto-incrementing 64-bit primary key column's type and constraint.
    var autoIncrementingKey: String {
        switch self {
        case .sqlite: "INTEGER PRIMARY KEY AUTOINCREMENT"
        case .postgres: "BIGSERIAL PRIMARY KEY"
        }
    }

    /// A 64-bit primary key column given by the writer (SQLite: the rowid itself).
    var int64PrimaryKey: String {
        switch self {
        case .sqlite: "INTEGER PRIMARY KEY"
        case .postgres: "BIGINT PRIMARY KEY"
        }
    }

    /// The type of a column of raw bytes.
    var bytes: String {
        switch self {
        case .sqlite: "BLOB"
        case .postgres: "BYTEA"
        }
    }

    /// Makes a long text column unique. A PostgreSQL B-tree cannot hold a key of more than
    /// about 2.7 KB, and an App Store JWS header is 4.4 KB: there, uniqueness is an exclusion
    /// constraint over a hash index, which `ON CONFLICT DO NOTHING` honours too.
    func uniqueLongText(table: String, column: String) -> String {
        switch self {
        case .sqlite: "CREATE UNIQUE INDEX \(table)_\(column) ON \(table) (\(column))"
        case .postgres: "ALTER TABLE \(table) ADD CONSTRAINT \(table)_\(column) EXCLUDE USING hash (\(column) WITH =)"
        }
    }

    /// What follows a `CREATE TABLE (…)` whose rows are to live in its primary key's B-tree.
    /// A SQLite table otherwise keeps its rows in a B-tree of rowids and its primary key in an
    /// index beside it: two B-trees to change for each row. PostgreSQL has no such choice (its
    /// tables are heaps beside their indexes).
    var clusteredOnPrimaryKey: String {
        switch self {
        case .sqlite: " WITHOUT ROWID"
        case .postgres: ""
        }
    }

    /// Statements that only PostgreSQL needs (none on SQLite).
    func postgresOnly(_ statements: [String]) -> [String] {
        switch self {
        case .sqlite: []
        case .postgres: statements
        }
    }

    /// What follows a `SELECT` whose rows the transaction locks until it ends: on PostgreSQL,
    /// where servers share the database, `FOR UPDATE`; SQLite, whose one writer holds the whole
    /// database, needs none.
    var forUpdate: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE"
        }
    }

    /// ``forUpdate``, skipping rows another transaction holds (PostgreSQL's `SKIP LOCKED`).
    var forUpdateSkipLocked: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE SKIP LOCKED"
        }
    }

    /// Whether a transaction locks the rows of the keys it folds into (``forUpdate``) before it
    /// reads them: PostgreSQL, where servers folding into one key must take turns.
    var locksRows: Bool {
        self == .postgres
    }

    /// What follows an `INSERT` whose new row's id is read (``RowStep/insert(_:)``): PostgreSQL
    /// returns it; SQLite's backend reads `sqlite3_last_insert_rowid` instead, which costs no
    /// cursor.
    var returningId: String {
        switch self {
        case .sqlite: ""
        case .postgres: " RETURNING id"
        }
    }

    /// An SQL expression: the text at a path of members of a JSON object kept as text in
    /// `column`, or NULL. The column and path are constants of the store's, never input.
    func jsonText(_ column: String, _ path: [String]) -> String {
        switch self {
        case .sqlite: "json_extract(\(column), '$.\(path.joined(separator: "."))')"
        case .postgres: "(\(column)::json #>> '{\(path.joined(separator: ","))}')"
        }
    }
}
