import NIOConcurrencyHelpers
import ReceiptKit

/// The notifications this server process refused (400, 413, 415 on `POST /appstore/notifications`),
/// for the console's list of the last notifications and their verification result. A refused
/// notification is never stored — nothing unverified is — so what is known of it is kept here, in
/// memory: its time, code and reason, never its bytes. It counts since the process started, on
/// this replica only; `receiptkit_verifications_total` has the same counts for a metrics system
/// that sums replicas.
final class NotificationRejections: Sendable {
    /// One refusal.
    struct Rejection: Sendable {
        let at: Timestamp
        let code: String
        let message: String
    }

    /// What has been counted so far.
    struct Summary: Sendable {
        var total = 0
        var byCode: [String: Int] = [:]
        /// The last ones, newest first.
        var recent: [Rejection] = []
    }

    /// How many of the last refusals are kept.
    static let kept = 50

    /// When counting started (the process's start).
    let since: Timestamp
    private let summary = Locked(Summary())

    init(since: Timestamp) {
        self.since = since
    }

    /// Counts a refusal.
    func record(_ rejection: Rejection) {
        summary.withLockedValue { summary in
            summary.total += 1
            summary.byCode[rejection.code, default: 0] += 1
            summary.recent.insert(rejection, at: 0)
            if summary.recent.count > Self.kept { summary.recent.removeLast() }
        }
    }

    /// What has been counted.
    var snapshot: Summary {
        summary.withLockedValue { $0 }
    }
}
