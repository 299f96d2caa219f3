// receiptkit-server: reads its configuration from the environment (see ServerConfiguration),
// migrates the database and serves until SIGTERM or SIGINT, finishing the requests in flight.
import Foundation
import Hummingbird
import Logging
import NIOCore
import ReceiptKitServer

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    return handler
}
let logger = Logger(label: "receiptkit-server")
// One event loop thread per CPU the process may run on, before anything starts the loops.
NIOSingletons.groupLoopCountSuggestion = min(System.coreCount, schedulableProcessorCount())

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
