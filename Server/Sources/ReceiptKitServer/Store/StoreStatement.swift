import Foundation
import GRDB
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

    /// The value of a SQLite column.
    init(_ value: DatabaseValue) {
        switch value.storage {
        case .int64(let integer): self = .integer(integer)
        case .string(let text): self = .text(text)
        case .double(let double): self = .integer(Int64(double))
        case .blob(let data): self = .bytes(Array(data))
        case .null: self = .null
        }
    }

    /// GRDB's form of the value.
    var databaseValue: DatabaseValue {
        switch self {
        case .integer(let integer): integer.databaseValue
        case .text(let text): text.databaseValue
        case .bytes(let bytes): Data(bytes).databaseValue
        case .null: .null
        }
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
        try cachedStatement(sql: write.statement.sql).execute(arguments: Self.arguments(write.values))
    }

    /// The rows of a statement of the store's.
    func rows(_ statement: StoreStatement, _ values: [StoreValue]) throws -> [[StoreValue]] {
        try Row.fetchAll(cachedStatement(sql: statement.sql), arguments: Self.arguments(values))
            .map { row in row.databaseValues.map(StoreValue.init) }
    }

    /// Arguments through GRDB's initializer of optional existentials: its initializer of a
    /// sequence of one concrete type maps through a key path, which, not specialized across the
    /// module boundary, is instantiated at run time on every call (2% of the server's CPU).
    private static func arguments(_ values: [StoreValue]) -> StatementArguments {
        StatementArguments(values.map { $0.databaseValue as (any DatabaseValueConvertible)? })
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
