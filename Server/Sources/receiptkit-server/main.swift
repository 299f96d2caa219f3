// receiptkit-server: reads its configuration from the environment (see ServerConfiguration),
// migrates the database and serves until SIGTERM or SIGINT, finishing the requests in flight.
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ReceiptKitServer

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

let configuration: ServerConfiguration
do {
    configuration = try ServerConfiguration(environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("receiptkit-server: \(error)\n".utf8))
    exit(78)  // EX_CONFIG
}

do {
    let app = try buildApplication(configuration: configuration, logger: logger)
    try await app.runService()
} catch {
    FileHandle.standardError.write(Data("receiptkit-server: \(error)\n".utf8))
    exit(1)
}
