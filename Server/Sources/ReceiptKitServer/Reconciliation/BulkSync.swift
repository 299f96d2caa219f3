public import Foundation
public import Logging
import AppStoreServerAPI
import Hummingbird
import PostgresNIO
import ReceiptKit

/// `receiptkit-server sync --from FILE`: a migration's backfill. Each line of the file is a
/// transaction id, optionally followed by a tab and a customer id, and a tab and the app's bundle
/// id (required when several apps are served); blank lines and lines starting with `#` are
/// skipped. For each, the customer's history (every page) and statuses are fetched — from
/// Production, or from Sandbox when Production does not know the transaction — verified and
/// stored as `POST /v1/transactions {"transaction_id"}` stores them, and the key's revision token
/// remembered.
///
/// Within Apple's rate limits: the client honours 429's `Retry-After` and backs off on 5xx; a
/// line Apple stays unavailable for is tried again after its `Retry-After`, up to
/// ``maximumTries`` times. Resumable: the number of lines done is written to `FILE.progress`
/// after each line, and a new run starts after them (delete the file to start over; a line done
/// twice only replays). Progress goes to standard error, one line per input line.
public enum BulkSync {
    /// How often one line is tried while Apple is unavailable before the run stops (exit 75).
    static let maximumTries = 8

    /// What a run did.
    public struct Summary: Sendable {
        /// Lines fetched and stored.
        public var synced = 0
        /// Lines skipped as done by an earlier run.
        public var resumed = 0
        /// Lines Apple knows nothing of, or that are not transaction ids.
        public var failed = 0
        /// Events stored for the first time.
        public var stored = 0
        /// Items that did not verify (never stored).
        public var rejected = 0
        /// Whether the run stopped early because Apple stayed unavailable.
        public var interrupted = false
    }

    /// Runs the sync of `file` with the configuration's store and In-App Purchase key.
    ///
    /// - Parameters:
    ///   - progress: Receives one line per input line (standard error, for the command).
    ///   - clock: The time each event is received at.
    /// - Throws: ``ConfigurationError`` without RECEIPTKIT_APPSTORE_* or when the file cannot be
    ///   read; a store error when the database fails; ``AppleFailure`` when Apple refuses the key.
    public static func run(
        configuration: ServerConfiguration, file: String, logger: Logger,
        progress: @escaping @Sendable (String) -> Void, clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> Summary {
        guard configuration.appStoreAPI != nil else {
            throw ConfigurationError(
                "sync needs the App Store Server API: set RECEIPTKIT_APPSTORE_KEY_ID, RECEIPTKIT_APPSTORE_ISSUER_ID and RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE")
        }
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError("sync --from: cannot read \(file) as UTF-8 text")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // The events the backfill causes are sent by the servers (whose delivery polls the outbox).
        let store = try Store(
            configuration.database, logger: logger, features: RecordingFeatures(targets: configuration.events.targets),
            timeout: configuration.databaseTimeout)
        return try await store.whileRunning {
            try await run(lines: lines, file: file, store: store, configuration: configuration, logger: logger, progress: progress, clock: clock)
        }
    }

    private static func run(
        lines: [String], file: String, store: Store, configuration: ServerConfiguration, logger: Logger,
        progress: @escaping @Sendable (String) -> Void, clock: @escaping @Sendable () -> Date
    ) async throws -> Summary {
        try await store.migrate(at: clock())
        let metrics = ServerMetrics()
        let ingestion = Ingestion(verifier: AppStoreVerifier(configuration.verifier), store: store, metrics: metrics)
        guard let apple = try AppleAPI.make(configuration, ingestion: ingestion, metrics: metrics, logger: logger, clock: clock)
        else { throw ConfigurationError("sync needs RECEIPTKIT_APPSTORE_*") }
        let progressFile = file + ".progress"
        let done = (try? String(contentsOfFile: progressFile, encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        var summary = Summary()
        let total = lines.count
        for (index, line) in lines.enumerated() {
            let number = index + 1
            if number <= done {
                summary.resumed += 1
                continue
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if !trimmed.isEmpty, !trimmed.hasPrefix("#") {
                let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                let transactionId = fields[0]
                let customerId = fields.count > 1 && !fields[1].isEmpty ? fields[1] : nil
                let bundleId = fields.count > 2 && !fields[2].isEmpty ? fields[2] : nil
                var tries = 0
                while true {
                    tries += 1
                    do {
                        try AppleSync.checkTransactionId(transactionId, name: "the transaction id")
                        let now = Timestamp(clock())
                        let syncs = try apple.syncs(bundleId: apple.bundleId(bundleId), environment: nil)
                        let (sync, fetched) = try await apple.fetch(transactionId: transactionId, from: syncs)
                        let stored = try await sync.store(fetched, customerId: customerId, receivedAt: now)
                        try await sync.remember(fetched, keys: stored.keys, at: now)
                        summary.synced += 1
                        summary.stored += stored.new
                        summary.rejected += fetched.rejected.count
                        progress(
                            "sync: line \(number)/\(total) \(transactionId): \(fetched.transactions.count + fetched.renewalInfos.count) items, \(stored.new) new, \(fetched.rejected.count) rejected, \(stored.keys.count) subscriptions")
                        break
                    } catch AppleFailure.unavailable(_, _, let retryAfterSeconds) where tries < maximumTries {
                        let wait = max(1, retryAfterSeconds)
                        progress("sync: line \(number)/\(total) \(transactionId): Apple unavailable; trying again in \(wait) s")
                        try await Task.sleep(for: .seconds(wait))
                    } catch AppleFailure.unavailable {
                        progress("sync: line \(number)/\(total) \(transactionId): Apple still unavailable after \(tries) tries; stopping (run again to resume here)")
                        summary.interrupted = true
                        return summary
                    } catch let error as AppleFailure {
                        // A line Apple knows nothing of is failed and the next is read; any other
                        // refusal (the key) stops the sync.
                        guard case .transactionNotFound = error else { throw error }
                        summary.failed += 1
                        progress("sync: line \(number)/\(total) \(transactionId): \(error.code): \(error.message)")
                        break
                    } catch let error as InvalidInput {
                        summary.failed += 1
                        progress("sync: line \(number)/\(total) \(transactionId): \(error.code): \(error.message)")
                        break
                    }
                }
            }
            // Written after the line committed: a crash repeats at most this line.
            try String(number).write(toFile: progressFile, atomically: true, encoding: .utf8)
        }
        progress(
            "sync: done: \(summary.synced) synced, \(summary.failed) failed, \(summary.resumed) lines done before, \(summary.stored) events stored, \(summary.rejected) rejected")
        return summary
    }
}
