import Foundation
import Logging
import ReceiptKit
import ServiceLifecycle

/// Runs ``Reconciler`` once the store is migrated, then every interval, until the service group
/// shuts down. A run that fails (Apple or the database unavailable) is logged and tried again at
/// the next interval; the cursor has not moved, so nothing is skipped.
struct ReconcileService: Service {
    let reconciler: Reconciler
    let interval: Duration
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Finishes once the store is migrated.
    let migrated: AsyncStream<Void>

    func run() async throws {
        for await _ in migrated.cancelOnGracefulShutdown() {}
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                switch try await reconciler.run(since: nil, now: Timestamp(clock())) {
                case .busy:
                    logger.debug("another server is reconciling")
                case .ran(let outcomes):
                    for outcome in outcomes {
                        switch outcome {
                        case .ran(let report):
                            logger.info(
                                "reconciled with Apple's notification history",
                                metadata: [
                                    "bundle_id": "\(report.pair.bundleId)", "environment": "\(report.pair.environment.rawValue)",
                                    "start": "\(report.start)", "end": "\(report.end)", "notifications": "\(report.notifications)",
                                    "recovered": "\(report.recovered)", "rejected": "\(report.rejected)",
                                ])
                        case .failed(let pair, let error):
                            logger.warning(
                                "reconciling one app and environment failed; its cursor stays and the next run reads its window again",
                                metadata: [
                                    "bundle_id": "\(pair.bundleId)", "environment": "\(pair.environment.rawValue)", "error": "\(error)",
                                ])
                        }
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("reconciling failed; the cursor stays and the next run reads the window again", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
