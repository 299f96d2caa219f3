import Foundation
import GRDB
import GRDBSQLite
import PostgresNIO

/// A SQL statement written once for both databases, with `?` placeholders: SQLite binds them as
/// they are; PostgreSQL, whose placeholders are numbered, gets the same text with `$1`, `$2`, …
/// (made once per statement). The text is a constant of the store's, never built from input;
/// its values are always bound.
struct StoreStatement: Sendable {
    /// The text with `?` placeholders (SQLite).
    let sql: String
    /// The text with numbered placeholders (PostgreSQL).
    let postgresSQL: String
    /// The type of each column a query reads (PostgreSQL decodes by type; SQLite's values carry
    /// theirs).
    let columns: [StoreColumn]

    init(_ sql: String, columns: [StoreColumn] = []) {
        self.sql = sql
        self.columns = columns
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
        postgresSQL = numbered
    }

    /// The statement with its values, for PostgreSQL.
    func postgres(_ values: [StoreValue]) -> PostgresQuery {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .integer(let integer): binds.append(integer)
            case .text(let text): binds.append(text)
            case .bytes(let bytes): binds.append(ByteBuffer(bytes: bytes))
            case .null: binds.appendNull()
            }
        }
        return PostgresQuery(unsafeSQL: postgresSQL, binds: binds)
    }
}

/// A value bound to a ``StoreStatement`` or read from one of its rows.
enum StoreValue: Sendable, Hashable {
    case integer(Int64)
    case text(String)
    case bytes([UInt8])
    case null

    var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    var bytes: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }
}

/// A write a store executes: a statement and its values.
struct StoreWrite: Sendable {
    let statement: StoreStatement
    let values: [StoreValue]

    init(_ statement: StoreStatement, _ values: [StoreValue]) {
        self.statement = statement
        self.values = values
    }
}

/// The type of a column a ``StoreStatement`` reads.
enum StoreColumn: Sendable {
    case integer
    case text
    case bytes
}

extension Database {
    /// Runs a statement of the store's (prepared once per connection).
    func execute(_ write: StoreWrite) throws {
        try step(cachedStatement(sql: write.statement.sql), write.values) { _ in }
    }

    /// The rows of a statement of the store's.
    func rows(_ statement: StoreStatement, _ values: [StoreValue]) throws -> [[StoreValue]] {
        var rows: [[StoreValue]] = []
        try step(cachedStatement(sql: statement.sql), values) { handle in
            let count = sqlite3_column_count(handle)
            var row: [StoreValue] = []
            row.reserveCapacity(Int(count))
            for column in 0..<count { row.append(Self.value(handle, column)) }
            rows.append(row)
        }
        return rows
    }

    /// Binds the values to a statement GRDB prepared and steps it to its end, calling `row` for
    /// each row. Through SQLite's own functions: GRDB's arguments and rows would convert every
    /// value twice more (into its `DatabaseValue`s and `Row`s, then into ``StoreValue``s) — a
    /// tenth of the database writer's CPU time per notification. The statement is reset after
    /// its last step, so that it holds no read lock and keeps no value of the caller's.
    private func step(_ statement: Statement, _ values: [StoreValue], row: (OpaquePointer) throws -> Void) throws {
        let handle = statement.sqliteStatement
        guard values.count == Int(sqlite3_bind_parameter_count(handle)) else {
            throw StoreError("\(values.count) values for the \(sqlite3_bind_parameter_count(handle)) parameters of: \(statement.sql)")
        }
        sqlite3_reset(handle)
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        for (index, value) in zip(Int32(1)..., values) {
            let code = Self.bind(value, to: handle, at: index)
            guard code == SQLITE_OK else { throw failure(code, statement) }
        }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: try row(handle)
            case SQLITE_DONE: return
            case let code: throw failure(code, statement)
            }
        }
    }

    private func failure(_ code: Int32, _ statement: Statement) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: code), message: sqliteConnection.map { String(cString: sqlite3_errmsg($0)) },
            sql: statement.sql)
    }

    /// SQLite copies what it is given (`SQLITE_TRANSIENT`): the values live only for the call.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private static func bind(_ value: StoreValue, to handle: OpaquePointer, at index: Int32) -> Int32 {
        switch value {
        case .integer(let integer):
            return sqlite3_bind_int64(handle, index, integer)
        case .text(var text):
            // An empty buffer may have no address, and a null address would bind NULL.
            guard !text.isEmpty else { return sqlite3_bind_text(handle, index, "", 0, transient) }
            return text.withUTF8 { sqlite3_bind_text(handle, index, $0.baseAddress, Int32($0.count), transient) }
        case .bytes(let bytes):
            guard !bytes.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
            return bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), transient) }
        case .null:
            return sqlite3_bind_null(handle, index)
        }
    }

    /// A column of the current row (a real number, which the store never writes, read as an integer).
    private static func value(_ handle: OpaquePointer, _ column: Int32) -> StoreValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_TEXT:
            let bytes = sqlite3_column_text(handle, column)
            let count = Int(sqlite3_column_bytes(handle, column))
            return .text(bytes.map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) } ?? "")
        case SQLITE_BLOB:
            let bytes = sqlite3_column_blob(handle, column)
            let count = Int(sqlite3_column_bytes(handle, column))
            return .bytes(bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? [])
        case SQLITE_FLOAT:
            return .integer(Int64(sqlite3_column_double(handle, column)))
        default:
            return .null
        }
    }
}

extension PostgresConnection {
    /// Runs a statement of the store's.
    func execute(_ write: StoreWrite, logger: Logger) async throws {
        try await query(write.statement.postgres(write.values), logger: logger)
    }

    /// The rows of a statement of the store's, each column read as the statement says.
    func rows(_ statement: StoreStatement, _ values: [StoreValue], logger: Logger) async throws -> [[StoreValue]] {
        let columns = statement.columns
        var rows: [[StoreValue]] = []
        for try await row in try await query(statement.postgres(values), logger: logger) {
            var values: [StoreValue] = []
            values.reserveCapacity(columns.count)
            for (cell, column) in zip(row, columns) {
                switch column {
                case .integer: values.append(try cell.decode(Int64?.self).map(StoreValue.integer) ?? .null)
                case .text: values.append(try cell.decode(String?.self).map(StoreValue.text) ?? .null)
                case .bytes: values.append(try cell.decode(ByteBuffer?.self).map { .bytes(Array($0.readableBytesView)) } ?? .null)
                }
            }
            rows.append(values)
        }
        return rows
    }
}

extension Database {
    /// Runs a ``RowSteps`` to its end in this transaction.
    func run<Steps: RowSteps>(_ steps: Steps) throws -> Steps.Result {
        var steps = steps
        var step = try steps.next([])
        while true {
            switch step {
            case .fetch(let statement, let values):
                step = try steps.next(try rows(statement, values))
            case .write(let writes):
                for write in writes { try execute(write) }
                step = try steps.next([])
            case .done(let result):
                return result
            }
        }
    }
}

extension PostgresConnection {
    /// Runs a ``RowSteps`` to its end on this connection.
    func run<Steps: RowSteps>(_ steps: Steps, logger: Logger) async throws -> Steps.Result {
        var steps = steps
        var step = try steps.next([])
        while true {
            switch step {
            case .fetch(let statement, let values):
                step = try steps.next(try await rows(statement, values, logger: logger))
            case .write(let writes):
                for write in writes { try await execute(write, logger: logger) }
                step = try steps.next([])
            case .done(let result):
                return result
            }
        }
    }
}
