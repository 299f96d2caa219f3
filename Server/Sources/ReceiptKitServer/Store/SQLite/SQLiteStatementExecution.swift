import GRDB
import GRDBSQLite

// The store's one wall against SQLite's C interface: binding a statement's values, stepping it
// and reading its rows through `sqlite3_*` directly. GRDB prepares and caches the statements
// and owns the connection and its transactions; its arguments and rows would convert every value
// twice more (into `DatabaseValue`s and `Row`s, then into ``StoreValue``s) — a tenth of the
// database writer's CPU time per notification.

extension Database {
    /// Runs a ``RowSteps`` to its end in this connection's transaction.
    func run<Steps: RowSteps>(_ steps: Steps) throws -> Steps.Result {
        var steps = steps
        var rows: [[StoreValue]] = []
        while true {
            switch try steps.next(rows) {
            case .fetch(let fetch):
                rows = try self.rows(fetch)
            case .write(let writes):
                for write in writes { try execute(write) }
                rows = []
            case .insert(let write):
                // One row inserted, or none when `ON CONFLICT DO NOTHING` did nothing
                // (`RETURNING` would read the id back through a cursor).
                try execute(write)
                rows = changesCount == 1 ? [[.integer(lastInsertedRowID)]] : []
            case .done(let result):
                return result
            }
        }
    }

    /// Runs a statement of the store's that writes (prepared once per connection).
    func execute(_ write: StoreWrite) throws {
        try step(cachedStatement(sql: write.statement.sqlite), write.values(), columns: nil) { _ in }
    }

    /// The rows of a statement of the store's, each checked to have the columns the fetch
    /// declares.
    func rows(_ fetch: Fetch) throws -> [[StoreValue]] {
        var rows: [[StoreValue]] = []
        let count = Int32(fetch.columns.count)
        try step(cachedStatement(sql: fetch.statement.sqlite), fetch.values(), columns: count) { handle in
            var row: [StoreValue] = []
            row.reserveCapacity(Int(count))
            for column in 0..<count { row.append(Self.value(handle, column)) }
            rows.append(row)
        }
        return rows
    }

    /// Binds the values to a statement GRDB prepared and steps it to its end, calling `row` for
    /// each row. The statement is reset after its last step, so that it holds no read lock and
    /// keeps no value of the caller's.
    ///
    /// - Parameter columns: How many columns each row must have, or `nil` for a statement whose
    ///   rows (if any) are not read.
    private func step(
        _ statement: Statement, _ values: [StoreValue], columns: Int32?, row: (OpaquePointer) throws -> Void
    ) throws {
        let handle = statement.sqliteStatement
        guard values.count == Int(sqlite3_bind_parameter_count(handle)) else {
            throw StoreError.damaged("\(values.count) values for the \(sqlite3_bind_parameter_count(handle)) parameters of: \(statement.sql)")
        }
        if let columns, columns != sqlite3_column_count(handle) {
            throw StoreError.damaged("the query reads \(sqlite3_column_count(handle)) columns and declares \(columns): \(statement.sql)")
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
