// receiptkit-server: reads its configuration from the environment (see ServerConfiguration),
// migrates the database and serves until SIGTERM or SIGINT, finishing the requests in flight.
//
// receiptkit-server token new NAME SCOPE: prints a fresh API token on standard output, then the
// line of RECEIPTKIT_API_TOKENS_FILE that accepts it (the token's SHA-256, never the token).
//
// receiptkit-server backup --to FILE: copies the SQLite database RECEIPTKIT_DATABASE_URL names to
// FILE, consistently, while servers keep writing to it (see DatabaseBackup); exits 0 once the copy
// is checked and synced, 73 when FILE exists, 66 when there is no database, 78 for PostgreSQL
// (pg_dump is its tool), 1 when the copy failed.
//
// receiptkit-server --version: the version, and the commit of a release build (Release).
//
// receiptkit-server sync --from FILE: backfills from Apple the customers of FILE (one transaction
// id per line, optionally a tab and a customer id), resumably (see BulkSync); exits 0 when every
// line synced, 1 when some line failed, 75 when Apple stayed unavailable, 78 for a configuration
// error, 64 for a usage error.
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ReceiptKitRelease
import ReceiptKitServer

// Before anything else is set up or read.
if Array(CommandLine.arguments.dropFirst()) == ["--version"] {
    print(Release.versionLine)
    exit(0)
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    return handler
}
let logger = Logger(label: "receiptkit-server")
// One event loop thread per CPU the process may run on, before anything starts the loops.
NIOSingletons.groupLoopCountSuggestion = min(System.coreCount, schedulableProcessorCount())
// Those event loops are Swift Concurrency's global executor too, installed before any task
// starts: a request's handler then runs on the thread that read the request and writes the
// answer there, where it would otherwise hop to the cooperative pool and back (a pool of one
// thread per CPU as well, so nothing that ran in parallel now waits). See docs/server.md,
// Benchmark. Where the runtime has no hook for it, the default executor stays: slower, as correct.
if !NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
    logger.notice("Swift Concurrency keeps its own thread pool: this runtime cannot run tasks on the event loops")
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "token" {
    guard arguments.count == 4, arguments[1] == "new", let scope = TokenScope(rawValue: arguments[3]),
          !arguments[2].isEmpty, !arguments[2].contains(where: { $0.isWhitespace || $0 == "#" })
    else {
        FileHandle.standardError.write(Data(
            "usage: receiptkit-server token new NAME SCOPE (NAME without spaces or #; SCOPE read, write or admin)\n".utf8))
        exit(64)  // EX_USAGE
    }
    let (token, line) = APITokens.generate(name: arguments[2], scope: scope)
    print(token)
    print(line)
    FileHandle.standardError.write(Data(
        "give the first line to the client; add the second to RECEIPTKIT_API_TOKENS_FILE and send the server SIGHUP\n".utf8))
    exit(0)
}

if arguments.first == "backup" {
    guard arguments.count == 3, arguments[1] == "--to", !arguments[2].isEmpty else {
        FileHandle.standardError.write(Data("usage: receiptkit-server backup --to FILE\n".utf8))
        exit(64)  // EX_USAGE
    }
    // The database alone: a backup needs none of the server's other settings.
    let location: DatabaseLocation
    do {
        location = try DatabaseLocation(url: ProcessInfo.processInfo.environment["RECEIPTKIT_DATABASE_URL"] ?? "sqlite:receiptkit.sqlite")
    } catch {
        FileHandle.standardError.write(Data("receiptkit-server: \(error)\n".utf8))
        exit(78)  // EX_CONFIG
    }
    do throws(DatabaseBackup.Failure) {
        let report = try DatabaseBackup.run(location, to: arguments[2])
        FileHandle.standardError.write(Data(
            "receiptkit-server: backed up \(report.pages) pages (\(report.bytes) bytes) to \(report.path); integrity_check ok\n".utf8))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("receiptkit-server: backup: \(error)\n".utf8))
        switch error {
        case .postgres: exit(78)  // EX_CONFIG
        case .noDatabase: exit(66)  // EX_NOINPUT
        case .destinationExists: exit(73)  // EX_CANTCREAT
        case .failed: exit(1)
        }
    }
}

let configuration: ServerConfiguration
do {
    configuration = try ServerConfiguration(environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("receiptkit-server: \(error)\n".utf8))
    exit(78)  // EX_CONFIG
}

if let command = arguments.first {
    guard command == "sync", arguments.count == 3, arguments[1] == "--from" else {
        FileHandle.standardError.write(Data("usage: receiptkit-server [sync --from FILE | backup --to FILE | token new NAME SCOPE | --version]\n".utf8))
        exit(64)  // EX_USAGE
    }
    do {
        let summary = try await BulkSync.run(
            configuration: configuration, file: arguments[2], logger: logger,
            progress: { FileHandle.standardError.write(Data("\($0)\n".utf8)) })
        exit(summary.interrupted ? 75 : summary.failed > 0 ? 1 : 0)  // 75: EX_TEMPFAIL
    } catch let error as ConfigurationError {
        FileHandle.standardError.write(Data("receiptkit-server: \(error)\n".utf8))
        exit(78)
    } catch {
        FileHandle.standardError.write(Data("receiptkit-server: sync: \(error)\n".utf8))
        exit(1)
    }
}

do {
    let app = try buildApplication(configuration: configuration, logger: logger)
    try await app.runService()
} catch let error as ConfigurationError {
    // A file the database contradicts, found once it is migrated (RECEIPTKIT_ENTITLEMENTS_FILE's
    // products): a configuration error like any other, which a restart cannot mend.
    FileHandle.standardError.write(Data("receiptkit-server: \(error)\n".utf8))
    exit(78)  // EX_CONFIG
} catch {
    FileHandle.standardError.write(Data("receiptkit-server: \(error)\n".utf8))
    exit(1)
}
