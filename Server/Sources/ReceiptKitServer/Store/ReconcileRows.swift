public import ReceiptKit

/// The statements of reconciliation's own tables (``Schema`` v7), written once for both
/// databases.
///
/// The reconcile cursor is one row. A server runs a window of Get Notification History only
/// while it holds the store's reconcile lock (``ReconcileStore/withReconcileLock(_:)``), which
/// goes with its process; holding it, the server writes itself into the row as the cursor's
/// owner (`lease_owner`), and the cursor moves only for that owner, and only forward — so a run
/// whose lock went while it still ran (its PostgreSQL session ended under it) finds another
/// owner there and stops. (`lease_until`, which v7's expiring lease used, is no longer read.)
enum ReconcileRows {
    static let revision = StoreStatement(
        """
        SELECT revision FROM history_revisions WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ?
        """, columns: [.text])

    static let setRevision = StoreStatement(
        """
        INSERT INTO history_revisions (original_transaction_id, bundle_id, environment, revision, updated_at)
        VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (original_transaction_id, bundle_id, environment)
        DO UPDATE SET revision = excluded.revision, updated_at = excluded.updated_at
        """)

    static let cursor = StoreStatement("SELECT position FROM reconcile_cursor WHERE id = 1", columns: [.integer])

    /// Makes an owner the cursor's owner.
    static let claim = StoreStatement("UPDATE reconcile_cursor SET lease_owner = ?, lease_until = 0 WHERE id = 1")

    /// Moves the cursor forward (never back), if the owner still owns it.
    static let advance = StoreStatement(
        """
        UPDATE reconcile_cursor
        SET position = CASE WHEN position IS NULL OR position < ? THEN ? ELSE position END
        WHERE id = 1 AND lease_owner = ?
        RETURNING id
        """, columns: [.integer])

    static let release = StoreStatement("UPDATE reconcile_cursor SET lease_owner = NULL WHERE id = 1 AND lease_owner = ?")

    static func keyValues(_ key: SubscriptionKey) -> [StoreValue] {
        [.text(key.originalTransactionId), .text(key.bundleId), .text(key.environment)]
    }
}

/// What reconciling with Apple keeps in the store besides events.
public protocol ReconcileStore: Sendable {
    /// The revision token Get Transaction History last answered for a key, if any.
    func historyRevision(of key: SubscriptionKey) async throws -> String?
    /// Remembers a revision token for these keys (one transaction).
    func setHistoryRevision(_ revision: String, for keys: [SubscriptionKey], at milliseconds: Int64) async throws
    /// The instant (milliseconds) up to which Get Notification History has been read and
    /// committed, or `nil` before the first run.
    func reconcileCursor() async throws -> Int64?
    /// Runs `body` holding the reconcile lock: one holder at a time among every server sharing
    /// the database, and gone as soon as its process dies, so that a server killed mid-window
    /// holds up no one. PostgreSQL: a session advisory lock on a connection kept for the run
    /// (``PostgresStore``); SQLite: an `flock` on a file beside the database (``SQLiteStore``).
    ///
    /// - Returns: `body`'s result, or `nil` when another run holds the lock.
    func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T?
    /// Makes `owner` the owner of the cursor: from now on only `owner` moves it. Called with the
    /// reconcile lock held.
    func claimReconcileCursor(owner: String) async throws
    /// Moves the cursor to `position` (never back), if `owner` still owns it.
    /// - Returns: Whether it did (`false`: another run claimed the cursor, which stays).
    func advanceReconcileCursor(to position: Int64, owner: String) async throws -> Bool
    /// Gives the cursor up, if `owner` owns it.
    func releaseReconcileCursor(owner: String) async throws
}
