import Foundation
import GRDB
import PostgresNIO
import ReceiptKitServer

/// Where a text is stored, found by the database itself: every column of every table of a test's
/// database, text and bytes alike, searched for the text's UTF-8 bytes — what erasing a customer
/// must leave none of, whatever table a later change adds.
enum DatabaseScan {
    /// The columns holding `text` somewhere in their value, as `table.column` with the number of
    /// rows, sorted; an empty list when none does.
    ///
    /// SQLite: each column cast to a BLOB and searched with `instr`. PostgreSQL: each column of
    /// the test's schema from `information_schema.columns`, a `bytea` searched for the text's
    /// bytes, any other type as its text.
    static func columns(holding text: String, location: DatabaseLocation, searchPath: String?) async throws -> [String] {
        var found: [String] = []
        switch location {
        case .sqlite(let path):
            found = try await DatabaseQueue(path: path).read { db in
                var found: [String] = []
                let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
                for table in tables {
                    let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
                    for column in columns {
                        let count = try Int.fetchOne(
                            db, sql: "SELECT COUNT(*) FROM \(quoted(table)) WHERE instr(CAST(\(quoted(column)) AS BLOB), CAST(? AS BLOB)) > 0",
                            arguments: [text]) ?? 0
                        if count > 0 { found.append("\(table).\(column) (\(count))") }
                    }
                }
                return found
            }
        case .postgres:
            let schema = searchPath ?? "public"
            try await Backend.withPostgresClient(location) { client in
                var columns: [(table: String, column: String, type: String)] = []
                let rows = try await client.query(
                    "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns WHERE table_schema = \(schema)")
                for try await (table, column, type) in rows.decode((String, String, String).self) {
                    columns.append((table, column, type))
                }
                for (table, column, type) in columns {
                    let condition =
                        type == "bytea"
                        ? "position(convert_to($1, 'UTF8') in \(quoted(column))) > 0" : "strpos(\(quoted(column))::text, $1) > 0"
                    var binds = PostgresBindings()
                    binds.append(text)
                    let sql = "SELECT COUNT(*) FROM \(quoted(schema)).\(quoted(table)) WHERE \(condition)"
                    for try await count in try await client.query(PostgresQuery(unsafeSQL: sql, binds: binds)).decode(Int64.self)
                    where count > 0 {
                        found.append("\(table).\(column) (\(count))")
                    }
                }
                if columns.isEmpty { found.append("no columns in schema \(schema): the scan saw nothing") }
            }
        }
        return found.sorted()
    }

    /// Puts `prefix` before and `suffix` after an input's stored bytes, its encoding kept: the
    /// test makes a row as an older server left it.
    static func wrapRaw(
        dedupKey: String, prefix: String, suffix: String, location: DatabaseLocation, searchPath: String?
    ) async throws {
        switch location {
        case .sqlite(let path):
            // The server's writer may hold the lock a moment (its delivery service): wait for it.
            var configuration = GRDB.Configuration()
            configuration.busyMode = .timeout(30)
            try await DatabaseQueue(path: path, configuration: configuration).write { db in
                let stored = try Data.fetchOne(db, sql: "SELECT raw FROM inputs WHERE dedup_key = ?", arguments: [dedupKey]) ?? Data()
                try db.execute(
                    sql: "UPDATE inputs SET raw = ? WHERE dedup_key = ?",
                    arguments: [Data(prefix.utf8) + stored + Data(suffix.utf8), dedupKey])
            }
        case .postgres:
            try await Backend.withPostgresClient(location, searchPath: searchPath) { client in
                try await client.query(
                    "UPDATE inputs SET raw = convert_to(\(prefix), 'UTF8') || raw || convert_to(\(suffix), 'UTF8') WHERE dedup_key = \(dedupKey)")
            }
        }
    }

    /// An identifier quoted for SQL.
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
