import Foundation
import GRDB

/// `receiptkit-server backup --to FILE`: a consistent copy of a live SQLite database, taken
/// while servers keep writing to it.
///
/// SQLite's online backup API (`sqlite3_backup_*`, through GRDB) copies every page in one step,
/// inside one read transaction of the source: in WAL mode that is a snapshot, so the copy holds
/// exactly the transactions committed before it began, and writers are never blocked. The copy
/// is written beside `FILE` under a temporary name, checked with `PRAGMA integrity_check`, synced,
/// and only then renamed to `FILE` — a backup that fails or is interrupted leaves no `FILE`.
///
/// PostgreSQL has its own tools for this (`pg_dump`, point-in-time recovery: docs/operations.md).
public enum DatabaseBackup {
    /// What a backup copied.
    public struct Report: Sendable {
        /// The copy's path.
        public let path: String
        /// Its size in database pages.
        public let pages: Int
        /// Its size in bytes.
        public let bytes: Int
    }

    /// Why a backup was not taken.
    public enum Failure: Error, CustomStringConvertible {
        /// The database is PostgreSQL's.
        case postgres
        /// The SQLite file does not exist (a backup never creates an empty database).
        case noDatabase(path: String)
        /// `FILE` exists: a backup never replaces a file.
        case destinationExists(path: String)
        /// The copy could not be written, or did not check out.
        case failed(String)

        public var description: String {
            switch self {
            case .postgres:
                "backup copies SQLite databases; RECEIPTKIT_DATABASE_URL names PostgreSQL: use pg_dump (docs/operations.md, Backups)"
            case .noDatabase(let path):
                "no SQLite database at \(path) (RECEIPTKIT_DATABASE_URL)"
            case .destinationExists(let path):
                "\(path) exists; a backup never replaces a file: name a new one"
            case .failed(let reason):
                reason
            }
        }
    }

    /// Copies the database at `location` to `file`.
    ///
    /// - Parameters:
    ///   - location: The database, as `RECEIPTKIT_DATABASE_URL` names it.
    ///   - file: Where the copy goes; it must not exist.
    /// - Returns: What was copied.
    /// - Throws: ``Failure``.
    public static func run(_ location: DatabaseLocation, to file: String) throws(Failure) -> Report {
        guard case .sqlite(let source) = location else { throw .postgres }
        guard FileManager.default.fileExists(atPath: source) else { throw .noDatabase(path: source) }
        guard !FileManager.default.fileExists(atPath: file) else { throw .destinationExists(path: file) }
        let partial = file + ".partial-\(ProcessInfo.processInfo.processIdentifier)"
        do {
            let pages = try copy(from: source, to: partial)
            try sync(partial)
            // link(2), not rename(2): it fails, rather than replaces, when FILE appeared meanwhile.
            guard link(partial, file) == 0 else {
                let code = errno
                if code == EEXIST { throw Failure.destinationExists(path: file) }
                throw Failure.failed("cannot create \(file): \(String(cString: strerror(code)))")
            }
            unlink(partial)
            try sync(URL(fileURLWithPath: file).deletingLastPathComponent().path)
            let bytes = ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int) ?? 0
            return Report(path: file, pages: pages, bytes: bytes)
        } catch {
            removeCopy(partial)
            if let failure = error as? Failure { throw failure }
            throw .failed("the backup of \(source) failed: \(error)")
        }
    }

    /// Copies every page of `source` into a new database at `destination`, in one backup step,
    /// then checks the copy.
    ///
    /// - Returns: The number of pages copied.
    private static func copy(from source: String, to destination: String) throws -> Int {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "receiptkit-backup-source"
        // A server holding the write lock makes the source wait, as a reader of its own would.
        configuration.busyMode = .timeout(10)
        let reader = try DatabaseQueue(path: source, configuration: configuration)
        let writer = try DatabaseQueue(path: destination)
        var pages = 0
        try reader.backup(to: writer) { progress in
            if progress.isCompleted { pages = progress.totalPageCount }
        }
        try reader.close()
        let check = try writer.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        try writer.close()
        guard check == ["ok"] else {
            throw Failure.failed("the copy failed PRAGMA integrity_check: \(check.prefix(5).joined(separator: "; "))")
        }
        return pages
    }

    /// `fsync`s a file or a directory.
    private static func sync(_ path: String) throws(Failure) {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw .failed("cannot open \(path) to sync it: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .failed("cannot sync \(path): \(String(cString: strerror(errno)))") }
    }

    /// Removes a partial copy and the journal files SQLite may have left beside it.
    private static func removeCopy(_ path: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(path + suffix) }
    }
}
