/// A value bound to a statement or read from a row.
enum StoreValue: Sendable, Hashable {
    case integer(Int64)
    case text(String)
    case bytes([UInt8])
    case null

    /// An optional value: the value, or `NULL`.
    static func optional<Value: StoreColumnType>(_ value: Value?) -> StoreValue {
        value.map(\.storeValue) ?? .null
    }

    /// A flag as the store keeps one (`SMALLINT` 1 or 0).
    static func flag(_ value: Bool) -> StoreValue {
        .integer(value ? 1 : 0)
    }
}

/// The type a query reads a column as: PostgreSQL decodes each cell by the type asked for;
/// SQLite's values carry their own.
enum StoreColumn: Sendable, Hashable {
    case integer
    case text
    case bytes
}

/// A Swift type a column is read into, and bound from.
protocol StoreColumnType: Sendable {
    /// The column type read.
    static var storeColumn: StoreColumn { get }
    /// Reads a non-null cell; `nil` when the cell is not of this type.
    init?(storeValue: StoreValue)
    /// The value to bind.
    var storeValue: StoreValue { get }
}

extension Int64: StoreColumnType {
    static var storeColumn: StoreColumn { .integer }
    init?(storeValue: StoreValue) {
        guard case .integer(let value) = storeValue else { return nil }
        self = value
    }
    var storeValue: StoreValue { .integer(self) }
}

extension String: StoreColumnType {
    static var storeColumn: StoreColumn { .text }
    init?(storeValue: StoreValue) {
        guard case .text(let value) = storeValue else { return nil }
        self = value
    }
    var storeValue: StoreValue { .text(self) }
}

extension [UInt8]: StoreColumnType {
    static var storeColumn: StoreColumn { .bytes }
    init?(storeValue: StoreValue) {
        guard case .bytes(let value) = storeValue else { return nil }
        self = value
    }
    var storeValue: StoreValue { .bytes(self) }
}

extension Bool: StoreColumnType {
    /// A flag is an integer column (`SMALLINT` 1 or 0; PostgreSQL has no `BOOLEAN` here).
    static var storeColumn: StoreColumn { .integer }
    init?(storeValue: StoreValue) {
        guard case .integer(let value) = storeValue else { return nil }
        self = value != 0
    }
    var storeValue: StoreValue { .integer(self ? 1 : 0) }
}

/// One SQL statement of the store's, in the text each database runs: written once with `?`
/// placeholders, which PostgreSQL gets numbered (`$1`, `$2`, …). Where the two databases' SQL
/// differs, the statement is written as a function of the ``SQLDialect`` and both texts are made
/// once. The text is a constant of the store's, never built from input: values are always bound.
struct StoreStatement: Sendable, Hashable {
    /// The text SQLite runs.
    let sqlite: String
    /// The text PostgreSQL runs.
    let postgres: String

    /// A statement the two databases share.
    init(_ sql: String) {
        self.init { _ in sql }
    }

    /// A statement whose text depends on the database.
    init(_ sql: (SQLDialect) -> String) {
        sqlite = sql(.sqlite)
        postgres = Self.numbered(sql(.postgres))
    }

    /// The text a database runs.
    func text(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }

    /// `?` placeholders numbered, as PostgreSQL takes them. The store's SQL has no `?` of its own
    /// (no string literal or operator holds one).
    private static func numbered(_ sql: String) -> String {
        var numbered = ""
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                numbered += "$\(index)"
            } else {
                numbered.append(character)
            }
        }
        return numbered
    }
}

/// A statement that reads rows, with the columns it reads and how a row becomes a value, declared
/// together: the column types are those of the decoding closure's parameters, so the two cannot
/// drift apart, and a row with another number of columns than declared is an error, never a
/// silently shortened row.
///
/// ```swift
/// static let eventsAfter = Query("SELECT id, payload FROM change_events WHERE id > ? ORDER BY id LIMIT ?") {
///     (id: Int64, payload: String) in StoredFeedEvent(id: id, json: payload)
/// }
/// ```
struct Query<Row>: Sendable {
    let statement: StoreStatement
    /// The type of each column read, in order.
    let columns: [StoreColumn]
    private let decodeRow: @Sendable ([StoreValue]) throws -> Row

    /// A query the two databases share.
    init<each Column: StoreColumnDecodable>(_ sql: String, row: @escaping @Sendable (repeat each Column) throws -> Row) {
        self.init(StoreStatement(sql), row: row)
    }

    /// A query whose text depends on the database.
    init<each Column: StoreColumnDecodable>(
        _ sql: @escaping (SQLDialect) -> String, row: @escaping @Sendable (repeat each Column) throws -> Row
    ) {
        self.init(StoreStatement(sql), row: row)
    }

    init<each Column: StoreColumnDecodable>(_ statement: StoreStatement, row: @escaping @Sendable (repeat each Column) throws -> Row) {
        var columns: [StoreColumn] = []
        for column in repeat (each Column).self { columns.append(column.storeColumn) }
        self.statement = statement
        self.columns = columns
        let sql = statement.sqlite
        decodeRow = { values in
            var index = 0
            func next<Value: StoreColumnDecodable>(_ type: Value.Type) throws -> Value {
                defer { index += 1 }
                return try Value.decode(values[index], column: index, of: sql)
            }
            return try row(repeat try next((each Column).self))
        }
    }

    /// The fetch of this query with its values, for a ``RowSteps``.
    func fetch(_ values: [StoreValue]) -> Fetch {
        Fetch(statement: statement, columns: columns, values: values)
    }

    /// The rows of a fetch of this query, decoded.
    func decode(_ rows: [[StoreValue]]) throws -> [Row] {
        try rows.map(decodeRow)
    }

    /// The first row of a fetch of this query, decoded, if there is one.
    func decodeFirst(_ rows: [[StoreValue]]) throws -> Row? {
        try rows.first.map(decodeRow)
    }
}

/// What a query's decoding closure may take: a column type, or an optional one for a column
/// that may be `NULL`.
protocol StoreColumnDecodable: Sendable {
    static var storeColumn: StoreColumn { get }
    static func decode(_ value: StoreValue, column: Int, of sql: String) throws -> Self
}

extension StoreColumnDecodable where Self: StoreColumnType {
    static func decode(_ value: StoreValue, column: Int, of sql: String) throws -> Self {
        guard let decoded = Self(storeValue: value) else {
            throw StoreError.damaged("column \(column + 1) is \(value.typeName), expected \(storeColumn) in: \(sql)")
        }
        return decoded
    }
}

extension Int64: StoreColumnDecodable {}
extension String: StoreColumnDecodable {}
extension [UInt8]: StoreColumnDecodable {}
extension Bool: StoreColumnDecodable {}

extension Optional: StoreColumnDecodable where Wrapped: StoreColumnType & StoreColumnDecodable {
    static var storeColumn: StoreColumn { Wrapped.storeColumn }

    static func decode(_ value: StoreValue, column: Int, of sql: String) throws -> Self {
        if case .null = value { return nil }
        return try Wrapped.decode(value, column: column, of: sql)
    }
}

extension StoreValue {
    /// How an error names the value's type.
    var typeName: String {
        switch self {
        case .integer: "an integer"
        case .text: "text"
        case .bytes: "bytes"
        case .null: "NULL"
        }
    }
}

/// A statement that writes, with its values.
struct StoreWrite: Sendable {
    let statement: StoreStatement
    let values: [StoreValue]

    init(_ statement: StoreStatement, _ values: [StoreValue]) {
        self.statement = statement
        self.values = values
    }
}

/// A query with its values, as a ``RowSteps`` asks a backend to run it: the raw rows come back,
/// each checked to have as many columns as declared.
struct Fetch: Sendable {
    let statement: StoreStatement
    let columns: [StoreColumn]
    let values: [StoreValue]
}
