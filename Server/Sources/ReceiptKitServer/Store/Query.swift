/// A value bound to a statement or read from a row.
package enum StoreValue: Sendable, Hashable {
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

/// One SQL statement of the store's, in the text each database runs: written once with named
/// parameters (`:customer_id`), which become numbered ones when the statement is made — SQLite's
/// `?1`, PostgreSQL's `$1` — one number per distinct name, so that a value used three times is
/// bound once. Where the two databases' SQL differs, the statement is written as a function of
/// the ``SQLDialect`` and both texts are made once, with the same names. The text is a constant of
/// the store's, never built from input: values are always bound, by name (``Bindings``), and
/// resolved to their numbers by ``values(_:)`` when the statement runs.
///
/// SQL that cannot be read this way — a bare `?` or `$1`, an unterminated literal, names that
/// differ between the dialects — is refused when the statement is made: it keeps the reason, and
/// every run of it throws (``StoreError``), so any test that runs it fails.
package struct StoreStatement: Sendable, Hashable {
    /// The text SQLite runs.
    package let sqlite: String
    /// The text PostgreSQL runs.
    package let postgres: String
    /// The names of its parameters, by number: `names[0]` is `?1` and `$1`.
    package let names: [String]
    /// Its first line as written, by which an error names it.
    package let firstLine: String
    /// Why its SQL was refused, or `nil`: a refused statement never runs.
    package let refusal: String?

    /// The most names a statement may have (one bit each while binding).
    package static let maximumNames = 64

    /// A statement the two databases share.
    package init(_ sql: String) {
        self.init { _ in sql }
    }

    /// A statement whose text depends on the database.
    init(_ sql: (SQLDialect) -> String) {
        let sqliteSource = sql(.sqlite)
        let postgresSource = sql(.postgres)
        firstLine = Self.firstLine(of: sqliteSource)
        do throws(NamedSQL.Refusal) {
            let sqliteParsed = try NamedSQL(sqliteSource)
            let postgresParsed = postgresSource == sqliteSource ? sqliteParsed : try NamedSQL(postgresSource)
            let names = sqliteParsed.distinctNames
            guard Set(postgresParsed.distinctNames) == Set(names) else {
                throw NamedSQL.Refusal("its SQLite and PostgreSQL texts name different parameters")
            }
            guard names.count <= Self.maximumNames else {
                throw NamedSQL.Refusal("it names \(names.count) parameters, more than \(Self.maximumNames)")
            }
            var numbers: [String: Int] = [:]
            for (index, name) in names.enumerated() { numbers[name] = index + 1 }
            sqlite = sqliteParsed.text { "?\(numbers[$0] ?? 0)" }
            postgres = postgresParsed.text { "$\(numbers[$0] ?? 0)" }
            self.names = names
            refusal = nil
        } catch {
            sqlite = sqliteSource
            postgres = postgresSource
            names = []
            refusal = error.reason
        }
    }

    /// The text a database runs.
    func text(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }

    /// The values to bind, by number: each of ``names`` given its value in `bindings`.
    ///
    /// - Throws: ``StoreError`` when the statement was refused, or `bindings` leave out one of
    ///   its names, name one it does not have, or bind one twice; the error names the statement
    ///   (``firstLine``) and the name.
    package func values(_ bindings: Bindings) throws -> [StoreValue] {
        if let refusal { throw StoreError.damaged("the statement \"\(firstLine)\" was refused: \(refusal)") }
        var values = [StoreValue](repeating: .null, count: names.count)
        var bound: UInt64 = 0
        for (name, value) in bindings.pairs {
            guard let index = names.firstIndex(of: name) else {
                throw StoreError.damaged("the statement \"\(firstLine)\" has no parameter :\(name), which is bound")
            }
            let bit: UInt64 = 1 << UInt64(index)
            guard bound & bit == 0 else {
                throw StoreError.damaged("the parameter :\(name) of the statement \"\(firstLine)\" is bound twice")
            }
            bound |= bit
            values[index] = value
        }
        if bound.nonzeroBitCount != names.count, let missing = names.indices.first(where: { bound & (1 << UInt64($0)) == 0 }) {
            throw StoreError.damaged("the parameter :\(names[missing]) of the statement \"\(firstLine)\" is not bound")
        }
        return values
    }

    /// The first line of SQL that is not blank, trimmed.
    private static func firstLine(of sql: String) -> String {
        let line = sql.split(whereSeparator: \.isNewline).first { !$0.allSatisfy(\.isWhitespace) } ?? ""
        return String(line.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}

/// SQL with named parameters (`:name`), split where each stands: what
/// ``StoreStatement`` numbers for each database.
///
/// Read as SQL is: a `:` begins a name only outside string literals (`'…'`, `''` inside),
/// quoted identifiers (`"…"`) and comments (`--`, `/* */`), and only when a letter or `_`
/// follows it; `::` is PostgreSQL's cast. A bare `?` or `$` followed by a digit or `$` (a
/// positional parameter, a dollar-quoted string) is refused, as is a literal, identifier or
/// comment left open.
struct NamedSQL: Equatable {
    /// Why SQL was refused.
    struct Refusal: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The text around the names: one more piece than ``names``.
    private(set) var pieces: [String]
    /// Each name where it stands, in order, repeats included.
    private(set) var names: [String]

    /// Splits SQL at its named parameters.
    ///
    /// - Throws: ``Refusal`` for SQL that cannot be read as the store's (see ``NamedSQL``).
    init(_ sql: String) throws(Refusal) {
        let bytes = Array(sql.utf8)
        var pieces: [String] = []
        var names: [String] = []
        var pieceStart = 0
        var index = 0
        /// The index just past the first `terminator` at or after `from`.
        func skip(past terminator: [UInt8], from: Int, what: String) throws(Refusal) -> Int {
            var at = from
            while at + terminator.count <= bytes.count {
                if Array(bytes[at..<at + terminator.count]) == terminator { return at + terminator.count }
                at += 1
            }
            throw Refusal("\(what) is not closed")
        }
        func isNameStart(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || byte == UInt8(ascii: "_")
        }
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        while index < bytes.count {
            let byte = bytes[index]
            let next = index + 1 < bytes.count ? bytes[index + 1] : nil
            switch byte {
            case UInt8(ascii: "'"):
                index = try skip(past: [UInt8(ascii: "'")], from: index + 1, what: "a string literal")
            case UInt8(ascii: "\""):
                index = try skip(past: [UInt8(ascii: "\"")], from: index + 1, what: "a quoted identifier")
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                index = (try? skip(past: [UInt8(ascii: "\n")], from: index + 2, what: "")) ?? bytes.count
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                index = try skip(past: [UInt8(ascii: "*"), UInt8(ascii: "/")], from: index + 2, what: "a comment")
            case UInt8(ascii: ":") where next == UInt8(ascii: ":"):
                index += 2
            case UInt8(ascii: ":") where next.map(isNameStart) == true:
                var end = index + 1
                while end < bytes.count, isNameStart(bytes[end]) || isDigit(bytes[end]) { end += 1 }
                pieces.append(String(decoding: bytes[pieceStart..<index], as: UTF8.self))
                names.append(String(decoding: bytes[index + 1..<end], as: UTF8.self))
                pieceStart = end
                index = end
            case UInt8(ascii: "?"):
                throw Refusal("it has a bare ? (parameters are named: :name)")
            case UInt8(ascii: "$") where next.map { isDigit($0) || $0 == UInt8(ascii: "$") } == true:
                throw Refusal("it has a positional parameter or a dollar-quoted string ($)")
            default:
                index += 1
            }
        }
        pieces.append(String(decoding: bytes[pieceStart...], as: UTF8.self))
        self.pieces = pieces
        self.names = names
    }

    /// The names, each once, in the order they first stand.
    var distinctNames: [String] {
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }

    /// The SQL with each name replaced by what `parameter` makes of it.
    func text(_ parameter: (String) -> String) -> String {
        var text = pieces[0]
        for (name, piece) in zip(names, pieces.dropFirst()) {
            text += parameter(name)
            text += piece
        }
        return text
    }
}

/// Values bound to a statement's named parameters, by name: a dictionary literal
/// (`["customer_id": .text(id)]`), or several merged with `+` (``LedgerStatements/key(_:)`` and
/// the values that follow it). A name bound twice, left out, or not the statement's is an error
/// when the statement runs (``StoreStatement/values(_:)``).
package struct Bindings: Sendable, ExpressibleByDictionaryLiteral {
    /// Each name with its value, in the order bound.
    package let pairs: [(String, StoreValue)]

    package init(dictionaryLiteral elements: (String, StoreValue)...) {
        pairs = elements
    }

    private init(pairs: [(String, StoreValue)]) {
        self.pairs = pairs
    }

    /// Both bindings' names and values.
    package static func + (lhs: Bindings, rhs: Bindings) -> Bindings {
        Bindings(pairs: lhs.pairs + rhs.pairs)
    }
}

/// A statement that reads rows, with the columns it reads and how a row becomes a value, declared
/// together: the column types are those of the decoding closure's parameters, so the two cannot
/// drift apart, and a row with another number of columns than declared is an error, never a
/// silently shortened row.
///
/// ```swift
/// static let eventsAfter = Query("SELECT id, payload FROM change_events WHERE id > :after ORDER BY id LIMIT :limit") {
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

    /// The fetch of this query with its values, bound by name, for a ``RowSteps``.
    func fetch(_ bindings: Bindings = [:]) -> Fetch {
        Fetch(statement: statement, columns: columns, bindings: bindings)
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

/// A statement that writes, with its values bound by name.
struct StoreWrite: Sendable {
    let statement: StoreStatement
    let bindings: Bindings

    init(_ statement: StoreStatement, _ bindings: Bindings = [:]) {
        self.statement = statement
        self.bindings = bindings
    }

    /// The values to bind, by number (``StoreStatement/values(_:)``).
    func values() throws -> [StoreValue] {
        try statement.values(bindings)
    }
}

/// A query with its values, as a ``RowSteps`` asks a backend to run it: the raw rows come back,
/// each checked to have as many columns as declared.
struct Fetch: Sendable {
    let statement: StoreStatement
    let columns: [StoreColumn]
    let bindings: Bindings

    /// The values to bind, by number (``StoreStatement/values(_:)``).
    func values() throws -> [StoreValue] {
        try statement.values(bindings)
    }
}
