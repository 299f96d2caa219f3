import ReceiptKit

/// The statements of reconciliation's own tables (``Schema`` v7).
///
/// Each app and environment has a reconcile cursor, a row of `reconcile_cursors` (v11; before, the
/// one row of `reconcile_cursor`, where a pair's first cursor starts). A server runs windows of Get
/// Notification History only while it holds the store's reconcile lock
/// (``StoreBackend/withReconcileLock(_:)``), which goes with its process; holding it, the server
/// writes itself into a pair's row as its owner (`lease_owner`), and the cursor moves only for that
/// owner, and only forward — so a run whose lock went while it still ran (its PostgreSQL session
/// ended under it) finds another owner there and stops.
enum ReconcileStatements {
    static let revision = Query(
        """
        SELECT revision FROM history_revisions WHERE original_transaction_id = :original_transaction_id
            AND bundle_id = :bundle_id AND environment = :environment
        """
    ) { (revision: String) in revision }

    static let setRevision = StoreStatement(
        """
        INSERT INTO history_revisions (original_transaction_id, bundle_id, environment, revision, updated_at)
        VALUES (:original_transaction_id, :bundle_id, :environment, :revision, :updated_at)
        ON CONFLICT (original_transaction_id, bundle_id, environment)
        DO UPDATE SET revision = excluded.revision, updated_at = excluded.updated_at
        """)

    /// An app and environment's cursor: the instant up to which its notification history is
    /// stored, or `NULL` before its first window.
    static let cursor = Query("SELECT position FROM reconcile_cursors WHERE bundle_id = :bundle_id AND environment = :environment") {
        (position: Int64?) in position
    }

    /// Every app and environment's cursor.
    static let cursors = Query("SELECT bundle_id, environment, position FROM reconcile_cursors ORDER BY bundle_id, environment") {
        (bundleId: String, environment: String, position: Int64?) in (bundleId: bundleId, environment: environment, position: position)
    }

    /// Makes an owner an app and environment's cursor's owner; a pair's first cursor starts where
    /// the one cursor of servers before v11 was (`reconcile_cursor`), if anywhere.
    static let claim = StoreStatement(
        """
        INSERT INTO reconcile_cursors (bundle_id, environment, position, lease_owner)
        VALUES (:bundle_id, :environment, (SELECT position FROM reconcile_cursor WHERE id = 1), :lease_owner)
        ON CONFLICT (bundle_id, environment) DO UPDATE SET lease_owner = excluded.lease_owner
        """)

    /// Moves a cursor forward (never back), if the owner still owns it.
    static let advance = Query(
        """
        UPDATE reconcile_cursors
        SET position = CASE WHEN position IS NULL OR position < :position THEN :position ELSE position END
        WHERE bundle_id = :bundle_id AND environment = :environment AND lease_owner = :lease_owner
        RETURNING 1
        """
    ) { (_: Int64) in () }

    /// Gives up every cursor an owner owns.
    static let release = StoreStatement("UPDATE reconcile_cursors SET lease_owner = NULL WHERE lease_owner = :lease_owner")
}
