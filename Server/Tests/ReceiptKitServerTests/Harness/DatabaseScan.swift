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
    /// bytes, any other type as its text. On both, each text value that is deflated JSON
    /// (``StoredJSON``, starting with `~`) and each deflated `inputs.raw` (``RawEncoding``) is
    /// inflated and searched too: deflating hides nothing.
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
                        var count = try Int.fetchOne(
                            db, sql: "SELECT COUNT(*) FROM \(quoted(table)) WHERE instr(CAST(\(quoted(column)) AS BLOB), CAST(? AS BLOB)) > 0",
                            arguments: [text]) ?? 0
                        let deflated = try String.fetchAll(
                            db, sql: "SELECT \(quoted(column)) FROM \(quoted(table)) WHERE typeof(\(quoted(column))) = 'text' AND substr(\(quoted(column)), 1, 1) = '~'")
                        count += deflated.filter { inflated($0, hold: text) }.count
                        if table == "inputs" && column == "raw" {
                            let rows = try Row.fetchAll(db, sql: "SELECT raw, raw_encoding FROM inputs WHERE raw_encoding >= 2")
                            count += try rows.filter { try inflated(raw: Array($0[0] as Data), encoding: $0[1], hold: text) }.count
                        }
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
                    var count = 0
                    for try await rows in try await client.query(PostgresQuery(unsafeSQL: sql, binds: binds)).decode(Int64.self) {
                        count += Int(rows)
                    }
                    if type == "text" {
                        let deflated = "SELECT \(quoted(column)) FROM \(quoted(schema)).\(quoted(table)) WHERE left(\(quoted(column)), 1) = '~'"
                        for try await stored in try await client.query(PostgresQuery(unsafeSQL: deflated)).decode(String.self)
                        where inflated(stored, hold: text) {
                            count += 1
                        }
                    }
                    if table == "inputs" && column == "raw" {
                        let deflated = "SELECT raw, raw_encoding FROM \(quoted(schema)).inputs WHERE raw_encoding >= 2"
                        for try await (raw, encoding) in try await client.query(PostgresQuery(unsafeSQL: deflated)).decode((ByteBuffer, Int16).self)
                        where try inflated(raw: Array(buffer: raw), encoding: encoding, hold: text) {
                            count += 1
                        }
                    }
                    if count > 0 { found.append("\(table).\(column) (\(count))") }
                }
                if columns.isEmpty { found.append("no columns in schema \(schema): the scan saw nothing") }
            }
        }
        return found.sorted()
    }

    /// Puts `prefix` before and `suffix` after an input's stored bytes, inflated if they are
    /// deflated (servers before deflating did not), its compaction kept: the test makes a row as
    /// an older server left it.
    static func wrapRaw(
        dedupKey: String, prefix: String, suffix: String, location: DatabaseLocation, searchPath: String?
    ) async throws {
        @Sendable func wrapped(_ stored: [UInt8], _ encoding: Int16) throws -> (raw: [UInt8], encoding: Int16) {
            let form = try RawCompaction.inflated(stored: stored, encoding: encoding)
            return (Array(prefix.utf8) + form.bytes + Array(suffix.utf8), form.encoding.rawValue)
        }
        switch location {
        case .sqlite(let path):
            // The server's writer may hold the lock a moment (its delivery service): wait for it.
            var configuration = GRDB.Configuration()
            configuration.busyMode = .timeout(30)
            try await DatabaseQueue(path: path, configuration: configuration).write { db in
                let row = try Row.fetchOne(db, sql: "SELECT raw, raw_encoding FROM inputs WHERE dedup_key = ?", arguments: [dedupKey])
                let stored = try wrapped(Array((row?[0] as Data?) ?? Data()), row?[1] ?? 0)
                try db.execute(
                    sql: "UPDATE inputs SET raw = ?, raw_encoding = ? WHERE dedup_key = ?",
                    arguments: [Data(stored.raw), stored.encoding, dedupKey])
            }
        case .postgres:
            try await Backend.withPostgresClient(location, searchPath: searchPath) { client in
                var stored: (raw: [UInt8], encoding: Int16) = (Array(prefix.utf8) + Array(suffix.utf8), 0)
                for try await (raw, encoding) in try await client.query(
                    "SELECT raw, raw_encoding FROM inputs WHERE dedup_key = \(dedupKey)"
                ).decode((ByteBuffer, Int16).self) {
                    stored = try wrapped(Array(buffer: raw), encoding)
                }
                try await client.query(
                    "UPDATE inputs SET raw = \(ByteBuffer(bytes: stored.raw)), raw_encoding = \(stored.encoding) WHERE dedup_key = \(dedupKey)")
            }
        }
    }

    /// Whether a text value is deflated JSON (``StoredJSON``) that holds `text` once inflated.
    private static func inflated(_ stored: String, hold text: String) -> Bool {
        guard let json = try? StoredJSON(stored: stored) else { return false }
        return json.bytes.firstRange(of: Array(text.utf8)) != nil
    }

    /// Whether a deflated `inputs.raw` holds `text` once inflated.
    private static func inflated(raw: [UInt8], encoding: Int16, hold text: String) throws -> Bool {
        try RawCompaction.inflated(stored: raw, encoding: encoding).bytes.firstRange(of: Array(text.utf8)) != nil
    }

    /// An identifier quoted for SQL.
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
