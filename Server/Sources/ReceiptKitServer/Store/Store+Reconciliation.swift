package import ReceiptKit

/// What reconciling with Apple keeps besides inputs: each key's history revision, and the reconcile
/// cursor with its lock (``ReconcileStatements``).
extension Store {
    /// The revision token Get Transaction History last answered for a key, if any.
    package func historyRevision(of key: SubscriptionKey) async throws -> String? {
        try await backend.first(ReconcileStatements.revision, LedgerStatements.key(key))
    }

    /// Remembers a revision token for these keys (one transaction).
    package func setHistoryRevision(_ revision: String, for keys: [SubscriptionKey], at milliseconds: Int64) async throws {
        try await backend.write(WriteStep(Set(keys).sorted().map { key in
            StoreWrite(
                ReconcileStatements.setRevision, LedgerStatements.key(key) + ["revision": .text(revision), "updated_at": .integer(milliseconds)])
        }))
    }

    /// The instant (milliseconds) up to which an app and environment's notification history has
    /// been read and committed, or `nil` before its first window.
    package func reconcileCursor(bundleId: String, environment: String) async throws -> Int64? {
        try await backend.first(ReconcileStatements.cursor, ["bundle_id": .text(bundleId), "environment": .text(environment)]) ?? nil
    }

    /// Every app and environment's cursor.
    package func reconcileCursors() async throws -> [(bundleId: String, environment: String, position: Int64?)] {
        try await backend.rows(ReconcileStatements.cursors)
    }

    /// Runs `body` holding the reconcile lock (``StoreBackend/withReconcileLock(_:)``): one holder
    /// at a time among every server sharing the database, gone as soon as its process dies.
    ///
    /// - Returns: `body`'s result, or `nil` when another run holds the lock.
    package func withReconcileLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T? {
        try await backend.withReconcileLock(body)
    }

    /// Makes `owner` the owner of an app and environment's cursor: from now on only `owner` moves
    /// it. Called with the reconcile lock held.
    package func claimReconcileCursor(bundleId: String, environment: String, owner: String) async throws {
        try await backend.execute(StoreWrite(
            ReconcileStatements.claim, ["bundle_id": .text(bundleId), "environment": .text(environment), "lease_owner": .text(owner)]))
    }

    /// Moves an app and environment's cursor to `position` (never back), if `owner` still owns it.
    ///
    /// - Returns: Whether it did (`false`: another run claimed the cursor, which stays).
    package func advanceReconcileCursor(to position: Int64, bundleId: String, environment: String, owner: String) async throws -> Bool {
        try await !backend.updating(
            ReconcileStatements.advance,
            ["position": .integer(position), "bundle_id": .text(bundleId), "environment": .text(environment), "lease_owner": .text(owner)]
        ).isEmpty
    }

    /// Gives up every cursor `owner` owns.
    package func releaseReconcileCursors(owner: String) async throws {
        try await backend.execute(StoreWrite(ReconcileStatements.release, ["lease_owner": .text(owner)]))
    }
}
