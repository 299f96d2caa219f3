import Foundation
import Logging
import ReceiptKit
import ServiceLifecycle

/// Notices the changes time alone makes — a period that ends with no notification, a grace
/// period or Apple's retry window that runs out — and writes their events
/// (``Store/sweep(now:limit:)``): once the store is migrated, then every interval,
/// until the service group shuts down. Several servers may sweep one database: each key is
/// derived by one of them (PostgreSQL's row lock, skipped when taken). A failed sweep is logged
/// and tried again at the next interval; nothing is marked done before its events commit. With
/// an entitlements file, each sweep then derives the customers whose named entitlements time may
/// have changed (a pass, a grant or a period ending; ``Store/sweepEntitlements(now:limit:catalog:)``). With
/// `RECEIPTKIT_CONSUMPTION_DEFAULT`, each sweep also answers the consumption requests nobody
/// answered whose deadline is less than an hour away, for customers who consented.
struct SweepService: Service {
    let store: Store
    let interval: Duration
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Finishes once the store is migrated.
    let migrated: AsyncStream<Void>
    /// The most keys one transaction batch reads; a sweep continues while batches come full.
    var batch = 500
    /// `RECEIPTKIT_CONSUMPTION_DEFAULT` and where to answer with it, when configured.
    var consumptionDefault: (requests: ConsumptionRequests, answer: ConsumptionAnswer)?

    func run() async throws {
        for await _ in migrated.cancelOnGracefulShutdown() {}
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await sweepOnce()
            } catch is CancellationError {
                return
            } catch {
                logger.warning("the sweep failed; the next one finds the same keys due", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// Sweeps until fewer keys than a batch were due.
    func sweepOnce() async throws {
        var total = SweepReport()
        repeat {
            let report = try await store.sweep(now: Timestamp(clock()), limit: batch)
            total.due += report.due
            total.events += report.events
            guard report.due == batch, report.swept > 0, !Task.isCancelled else { break }
        } while true
        if total.due > 0 {
            logger.info("swept the keys time changed", metadata: ["due": "\(total.due)", "events": "\(total.events)"])
        }
        // After the keys, so that a customer's entitlements are derived from the keys' states
        // the sweep left (a customer derives its keys' states itself, at its own instants).
        if let file = store.entitlementsFile {
            var customers = SweepReport()
            repeat {
                let report = try await store.sweepEntitlements(now: Timestamp(clock()), limit: batch, catalog: file.catalog)
                customers.due += report.due
                customers.events += report.events
                guard report.due == batch, report.swept > 0, !Task.isCancelled else { break }
            } while true
            if customers.due > 0 {
                logger.info(
                    "swept the customers whose named entitlements time changed",
                    metadata: ["due": "\(customers.due)", "events": "\(customers.events)"])
            }
        }
        if let (requests, answer) = consumptionDefault {
            let answered = try await requests.answerDefaults(with: answer, now: Timestamp(clock()).millisecondsSince1970)
            if answered > 0 {
                logger.info("answered consumption requests with RECEIPTKIT_CONSUMPTION_DEFAULT", metadata: ["answered": "\(answered)"])
            }
        }
    }
}
