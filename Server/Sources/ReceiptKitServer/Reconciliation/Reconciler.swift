import AppStoreServerAPI
import Foundation
import Hummingbird
import Logging
import ReceiptKit

/// Recovers the notifications `POST /appstore/notifications` missed: asks Get Notification History for the window
/// since the reconcile cursor (less an overlap, within Apple's 180-day horizon), verifies each
/// notification (the client does) and stores it exactly as the notification endpoint would have — the same raw
/// body `{"signedPayload": …}`, the same dedup key `notification:UUID` — so one the notification endpoint
/// delivered is a replay and changes nothing.
///
/// Each app and environment has its own cursor, and a window each run: one failing (Apple
/// unavailable for it, a key it refuses) keeps its cursor and holds back none of the others.
///
/// One server at a time: a run holds the store's reconcile lock (``Store/withReconcileLock(_:)``)
/// and owns the cursors meanwhile; another run answers ``Outcome/busy``. The lock goes with its process, so a server killed mid-window delays the
/// next run not at all. Each notification is its own committed event; the cursor advances to the
/// window's end only once every page is stored, so a run cut short (the process killed, Apple
/// failing) leaves the cursor where it was and the next run reads the window again, finding what
/// was stored as replays.
struct Reconciler: Sendable {
    /// The App Store Server API of each app and environment: one cursor each.
    let api: AppleAPI
    let store: Store
    /// Who owns the cursors during a run: this process.
    let owner: String
    /// How far before the cursor a window starts: a notification Apple records a little late
    /// (its send attempt after the instant we read up to) is still found.
    var overlap: Int64 = 60 * 60 * 1000
    /// The window of the first run, when there is no cursor yet.
    var firstWindow: Int64 = 7 * 86_400_000
    /// Apple's horizon: Get Notification History answers the last 180 days (less a margin).
    var horizon: Int64 = 180 * 86_400_000 - 60 * 60 * 1000

    /// What a run found for one app and environment.
    struct Report: Sendable {
        let pair: AppleAPI.Pair
        var start: Timestamp
        var end: Timestamp
        var pages = 0
        /// Notifications that verified.
        var notifications = 0
        /// Of those, the ones not stored before (what the notification endpoint missed).
        var recovered = 0
        /// Notifications that did not verify (never stored).
        var rejected = 0
    }

    /// How one app and environment's window went: read, or failed (its cursor stays).
    enum PairOutcome: Sendable {
        case ran(Report)
        /// The pair's window failed: an ``AppleFailure``, a ``ReconcileConflict``, or a
        /// `StoreError`.
        case failed(AppleAPI.Pair, any Error)
    }

    enum Outcome: Sendable {
        /// Each pair's window, in ``AppleAPI/pairs`` order.
        case ran([PairOutcome])
        /// Another run holds the reconcile lock.
        case busy
    }

    /// Runs one window for every app and environment side by side, each from `since` (or its
    /// cursor) to `now`. A pair whose window fails keeps its cursor and does not hold back the
    /// others.
    ///
    /// - Throws: The first pair's error when every pair failed (an ``AppleFailure``, or a
    ///   `StoreError` when the database failed); `CancellationError` when the run was cancelled.
    func run(since: Timestamp?, now: Timestamp) async throws -> Outcome {
        let store = self.store
        let owner = self.owner
        let pairs = api.pairs
        let ran = try await store.withReconcileLock { () async throws -> [PairOutcome] in
            // Given up even when the run was cancelled (a request's timeout, a shutdown): in a
            // task of its own, which the caller's cancellation does not reach.
            let release = { @Sendable in _ = await Task { try? await store.releaseReconcileCursors(owner: owner) }.value }
            // The pairs side by side: one whose API is slow or down (retried until its
            // timeout) delays none of the others.
            let outcomes: [PairOutcome]
            do {
                outcomes = try await withThrowingTaskGroup(of: (Int, PairOutcome).self) { group in
                    for (index, pair) in pairs.enumerated() {
                        group.addTask { (index, try await self.outcome(of: pair, since: since, now: now)) }
                    }
                    var outcomes: [PairOutcome?] = Array(repeating: nil, count: pairs.count)
                    for try await (index, outcome) in group { outcomes[index] = outcome }
                    return outcomes.compactMap { $0 }
                }
            } catch {
                await release()
                throw error
            }
            let firstError = outcomes.lazy.compactMap { if case .failed(_, let error) = $0 { error } else { nil } }.first
            await release()
            if let firstError, !outcomes.contains(where: { if case .ran = $0 { true } else { false } }) { throw firstError }
            return outcomes
        }
        return ran.map(Outcome.ran) ?? .busy
    }

    /// One pair's window: its report, or the error that stopped it (its cursor stays).
    ///
    /// - Throws: `CancellationError` only: the run was cancelled.
    private func outcome(of pair: AppleAPI.Pair, since: Timestamp?, now: Timestamp) async throws -> PairOutcome {
        let store = self.store
        let owner = self.owner
        do {
            try await store.run { try await store.claimReconcileCursor(bundleId: pair.bundleId, environment: pair.environment.rawValue, owner: owner) }
            return .ran(try await window(pair, since: since, now: now))
        } catch let error as any CallerError {
            return .failed(pair, error)
        } catch let error as CancellationError {
            throw error
        } catch let error as StoreError {
            return .failed(pair, error)
        } catch {
            return .failed(pair, StoreError(String(describing: error)))
        }
    }

    private func window(_ pair: AppleAPI.Pair, since: Timestamp?, now: Timestamp) async throws -> Report {
        guard let sync = api.syncs[pair] else { throw AppleFailure.notConfigured }
        let store = self.store
        let owner = self.owner
        let (bundleId, environment) = (pair.bundleId, pair.environment.rawValue)
        let nowMs = now.millisecondsSince1970
        let cursor = try await store.run { try await store.reconcileCursor(bundleId: bundleId, environment: environment) }
        if let cursor { sync.metrics.reconcileLag(seconds: Double(max(0, nowMs - cursor)) / 1000, bundleId: bundleId, environment: environment) }
        let start = max(since?.millisecondsSince1970 ?? cursor.map { $0 - overlap } ?? (nowMs - firstWindow), nowMs - horizon)
        var report = Report(pair: pair, start: Timestamp(millisecondsSince1970: start), end: now)
        guard start < nowMs else { return report }
        let request = NotificationHistoryRequest(startDate: report.start, endDate: now)
        var token: String?
        var seen: Set<String> = []
        for _ in 0..<AppleSync.maximumPages {
            let page = try await sync.call("notification_history") { [token] in
                try await sync.client.notificationHistory(request, paginationToken: token)
            }
            report.pages += 1
            for item in page.items {
                let signedPayload = item.notification.signedPayload
                let raw = Array(#"{"signedPayload":"\#(signedPayload)"}"#.utf8)
                let record = VerificationRecord(item.notification.verified)
                let recorded = try await sync.ingestion.record(
                    record, raw: raw, customerId: nil, receivedAt: now, source: .reconcile, bundleId: bundleId)
                report.notifications += 1
                if recorded.isNew {
                    report.recovered += 1
                    sync.metrics.notification(type: record.notification?.rawNotificationType ?? "-", bundleId: bundleId, environment: environment)
                }
            }
            report.rejected += page.rejected.count
            for item in page.rejected {
                sync.metrics.reconcileRejected(code: item.error.code.rawValue, bundleId: bundleId, environment: environment)
                sync.logger.warning(
                    "a notification Apple's history answered did not verify and is not stored",
                    metadata: [
                        "bundle_id": "\(bundleId)", "environment": "\(environment)", "field": "\(item.field)",
                        "code": "\(item.error.code.rawValue)", "reason": "\(item.error.message)",
                    ])
            }
            // Still ours? (Moving the cursor to the window's start leaves it where it is.)
            guard try await store.run({ try await store.advanceReconcileCursor(to: start, bundleId: bundleId, environment: environment, owner: owner) })
            else { throw ReconcileConflict.takenOver }
            guard page.hasMore, let next = page.paginationToken, seen.insert(next).inserted else { break }
            token = next
        }
        guard try await store.run({ try await store.advanceReconcileCursor(to: nowMs, bundleId: bundleId, environment: environment, owner: owner) })
        else { throw ReconcileConflict.takenOver }
        sync.metrics.reconcileRecovered(report.recovered, bundleId: bundleId, environment: environment)
        sync.metrics.reconcileLag(seconds: 0, bundleId: bundleId, environment: environment)
        return report
    }
}
