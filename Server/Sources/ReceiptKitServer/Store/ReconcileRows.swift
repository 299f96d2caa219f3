public import ReceiptKit

/// The statements of reconciliation's own tables (``Schema`` v7), written once for both
/// databases.
///
/// The reconcile cursor is one row. A server runs a window of Get Notification History only
/// while it holds the row's lease (`lease_owner`, `lease_until`): taking it is one conditional
/// `UPDATE`, atomic on SQLite and PostgreSQL alike, so of several servers sharing a database only
/// one runs at a time; a server that dies holding it leaves it to expire. The cursor moves only
/// with the lease held, and only forward.
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

    /// Takes the lease when it is free, expired or already this owner's; a row back when taken.
    static let takeLease = StoreStatement(
        """
        UPDATE reconcile_cursor SET lease_owner = ?, lease_until = ?
        WHERE id = 1 AND (lease_owner IS NULL OR lease_until < ? OR lease_owner = ?)
        RETURNING id
        """, columns: [.integer])

    /// Moves the cursor forward (never back) and extends the lease, if the owner still holds it.
    static let advance = StoreStatement(
        """
        UPDATE reconcile_cursor
        SET position = CASE WHEN position IS NULL OR position < ? THEN ? ELSE position END, lease_until = ?
        WHERE id = 1 AND lease_owner = ?
        RETURNING id
        """, columns: [.integer])

    static let releaseLease = StoreStatement(
        "UPDATE reconcile_cursor SET lease_owner = NULL, lease_until = 0 WHERE id = 1 AND lease_owner = ?")

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
    /// Takes the reconcile lease until `until` for `owner` when no other owner holds an
    /// unexpired one at `now`.
    /// - Returns: Whether `owner` holds it now.
    func takeReconcileLease(owner: String, now: Int64, until: Int64) async throws -> Bool
    /// Moves the cursor to `position` (never back) and extends the lease to `until`, if `owner`
    /// still holds it.
    /// - Returns: Whether it did (`false`: the lease was lost, the cursor unchanged).
    func advanceReconcileCursor(to position: Int64, owner: String, leaseUntil until: Int64) async throws -> Bool
    /// Gives the lease up, if `owner` holds it.
    func releaseReconcileLease(owner: String) async throws
}
