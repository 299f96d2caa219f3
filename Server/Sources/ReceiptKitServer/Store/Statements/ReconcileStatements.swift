import ReceiptKit

/// The statements of reconciliation's own tables (``Schema`` v7).
///
/// The reconcile cursor is one row. A server runs a window of Get Notification History only while
/// it holds the store's reconcile lock (``StoreBackend/withReconcileLock(_:)``), which goes with
/// its process; holding it, the server writes itself into the row as the cursor's owner
/// (`lease_owner`), and the cursor moves only for that owner, and only forward — so a run whose
/// lock went while it still ran (its PostgreSQL session ended under it) finds another owner there
/// and stops. (`lease_until`, which v7's expiring lease used, is no longer read.)
enum ReconcileStatements {
    static let revision = Query(
        """
        SELECT revision FROM history_revisions WHERE original_transaction_id = ? AND bundle_id = ? AND environment = ?
        """
    ) { (revision: String) in revision }

    static let setRevision = StoreStatement(
        """
        INSERT INTO history_revisions (original_transaction_id, bundle_id, environment, revision, updated_at)
        VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (original_transaction_id, bundle_id, environment)
        DO UPDATE SET revision = excluded.revision, updated_at = excluded.updated_at
        """)

    static let cursor = Query("SELECT position FROM reconcile_cursor WHERE id = 1") { (position: Int64?) in position }

    /// Makes an owner the cursor's owner.
    static let claim = StoreStatement("UPDATE reconcile_cursor SET lease_owner = ?, lease_until = 0 WHERE id = 1")

    /// Moves the cursor forward (never back), if the owner still owns it.
    static let advance = Query(
        """
        UPDATE reconcile_cursor
        SET position = CASE WHEN position IS NULL OR position < ? THEN ? ELSE position END
        WHERE id = 1 AND lease_owner = ?
        RETURNING id
        """
    ) { (id: Int64) in id }

    static let release = StoreStatement("UPDATE reconcile_cursor SET lease_owner = NULL WHERE id = 1 AND lease_owner = ?")
}
