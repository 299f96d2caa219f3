import AppStoreServerAPI
import Foundation
import Hummingbird
import Logging
import ReceiptKit

/// Recovers the notifications the webhook missed: asks Get Notification History for the window
/// since the reconcile cursor (less an overlap, within Apple's 180-day horizon), verifies each
/// notification (the client does) and stores it exactly as the webhook would have — the same raw
/// body `{"signedPayload": …}`, the same dedup key `notification:UUID` — so one the webhook
/// delivered is a replay and changes nothing.
///
/// One server at a time: a run holds the store's reconcile lock
/// (``ReconcileStore/withReconcileLock(_:)``) and owns the cursor meanwhile; another run answers
/// ``Outcome/busy``. The lock goes with its process, so a server killed mid-window delays the
/// next run not at all. Each notification is its own committed event; the cursor advances to the
/// window's end only once every page is stored, so a run cut short (the process killed, Apple
/// failing) leaves the cursor where it was and the next run reads the window again, finding what
/// was stored as replays.
struct Reconciler: Sendable {
    let sync: AppleSync
    /// Who owns the cursor during a run: this process.
    let owner: String
    /// How far before the cursor a window starts: a notification Apple records a little late
    /// (its send attempt after the instant we read up to) is still found.
    var overlap: Int64 = 60 * 60 * 1000
    /// The window of the first run, when there is no cursor yet.
    var firstWindow: Int64 = 7 * 86_400_000
    /// Apple's horizon: Get Notification History answers the last 180 days (less a margin).
    var horizon: Int64 = 180 * 86_400_000 - 60 * 60 * 1000

    /// What a run found.
    struct Report: Sendable {
        var start: Timestamp
        var end: Timestamp
        var pages = 0
        /// Notifications that verified.
        var notifications = 0
        /// Of those, the ones not stored before (what the webhook missed).
        var recovered = 0
        /// Notifications that did not verify (never stored).
        var rejected = 0
    }

    enum Outcome: Sendable {
        case ran(Report)
        /// Another run holds the reconcile lock.
        case busy
    }

    /// Runs one window, from `since` (or the cursor) to `now`.
    ///
    /// - Throws: ``APIError`` when Apple fails (the cursor stays), ``StoreError`` when the database does.
    func run(since: Timestamp?, now: Timestamp) async throws -> Outcome {
        let store = sync.ingestion.store
        let owner = self.owner
        let ran = try await store.withReconcileLock { () async throws -> Report in
            try await store.run { try await store.claimReconcileCursor(owner: owner) }
            // Given up even when the run was cancelled (a request's timeout, a shutdown): in a
            // task of its own, which the caller's cancellation does not reach.
            let release = { @Sendable in _ = await Task { try? await store.releaseReconcileCursor(owner: owner) }.value }
            do {
                let report = try await window(since: since, now: now)
                await release()
                return report
            } catch {
                await release()
                throw error
            }
        }
        return ran.map(Outcome.ran) ?? .busy
    }

    private func window(since: Timestamp?, now: Timestamp) async throws -> Report {
        let store = sync.ingestion.store
        let owner = self.owner
        let nowMs = now.millisecondsSince1970
        let cursor = try await store.run { try await store.reconcileCursor() }
        if let cursor { sync.metrics.reconcileLag(seconds: Double(max(0, nowMs - cursor)) / 1000) }
        let start = max(since?.millisecondsSince1970 ?? cursor.map { $0 - overlap } ?? (nowMs - firstWindow), nowMs - horizon)
        var report = Report(start: Timestamp(millisecondsSince1970: start), end: now)
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
                let recorded = try await sync.ingestion.record(record, raw: raw, customerId: nil, receivedAt: now, source: .reconcile)
                report.notifications += 1
                if recorded.isNew {
                    report.recovered += 1
                    sync.metrics.notification(type: record.notification?.rawNotificationType ?? "-")
                }
            }
            report.rejected += page.rejected.count
            for item in page.rejected {
                sync.metrics.reconcileRejected(code: item.error.code.rawValue)
                sync.logger.warning(
                    "a notification Apple's history answered did not verify and is not stored",
                    metadata: ["field": "\(item.field)", "code": "\(item.error.code.rawValue)", "reason": "\(item.error.message)"])
            }
            // Still ours? (Moving the cursor to the window's start leaves it where it is.)
            guard try await store.run({ try await store.advanceReconcileCursor(to: start, owner: owner) })
            else { throw APIError(.conflict, "reconcile_taken_over", "another server's run took the reconcile cursor over; this run stopped") }
            guard page.hasMore, let next = page.paginationToken, seen.insert(next).inserted else { break }
            token = next
        }
        guard try await store.run({ try await store.advanceReconcileCursor(to: nowMs, owner: owner) })
        else { throw APIError(.conflict, "reconcile_taken_over", "another server's run took the reconcile cursor over; this run stopped") }
        sync.metrics.reconcileRecovered(report.recovered)
        sync.metrics.reconcileLag(seconds: 0)
        return report
    }
}
