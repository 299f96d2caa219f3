import ReceiptKit

/// The overview's figures (``Schema`` v12), kept exact by the transactions that change them, so
/// that reading them costs the same at a thousand keys as at a million.
///
/// - `subscription_counts`: per app, environment, derived status and product (`''` for none), how
///   many keys' rows of `subscriptions` say so. A derivation that moves a key's derived status or
///   product moves its count in the same transaction (``Derivation``), after drawing the feed's ids
///   (``FeedStatements/drawIds``): every transaction that changes a count holds the feed's counter
///   first, so on PostgreSQL they take the counts' row locks one after another and never deadlock.
/// - `notification_days`: per UTC day (its first millisecond) and `notificationType` (`''` for
///   none), how many notifications were stored; the transaction that stores one adds it, last.
///
/// A count says what the derived states stored say, which lag time by up to a sweep: the
/// overview adds what the keys due by now evaluate to (``OverviewCounting``).
enum CountStatements {
    /// One key's move from one derived status and product to another: -1 for the one it leaves,
    /// +1 for the one it takes.
    struct Delta: Sendable, Hashable, Comparable {
        var bundleId: String
        var environment: String
        var status: String
        var productId: String

        static func < (lhs: Delta, rhs: Delta) -> Bool {
            (lhs.bundleId, lhs.environment, lhs.status, lhs.productId) < (rhs.bundleId, rhs.environment, rhs.status, rhs.productId)
        }
    }

    /// The counts a key's derived state moves, from `old` to `new` (each `nil` when the key has
    /// none): empty when its status and product stay.
    static func deltas(of key: SubscriptionKey, from old: DerivedState?, to new: DerivedState?) -> [Delta: Int64] {
        func delta(_ state: DerivedState) -> Delta {
            Delta(bundleId: key.bundleId, environment: key.environment, status: state.status.rawValue, productId: state.productId ?? "")
        }
        guard old?.status != new?.status || old?.productId != new?.productId else { return [:] }
        var deltas: [Delta: Int64] = [:]
        if let old { deltas[delta(old), default: 0] -= 1 }
        if let new { deltas[delta(new), default: 0] += 1 }
        return deltas
    }

    static let addToCount = StoreStatement(
        """
        INSERT INTO subscription_counts (bundle_id, environment, status, product_id, count)
        VALUES (:bundle_id, :environment, :status, :product_id, :count)
        ON CONFLICT (bundle_id, environment, status, product_id) DO UPDATE SET count = subscription_counts.count + excluded.count
        """)

    /// The writes of summed deltas, in the counts' key order (the order their row locks are taken
    /// in); none for a delta that sums to zero.
    static func countWrites(_ deltas: [Delta: Int64]) -> [StoreWrite] {
        deltas.filter { $0.value != 0 }.sorted { $0.key < $1.key }.map { delta, change in
            StoreWrite(addToCount, [
                "bundle_id": .text(delta.bundleId), "environment": .text(delta.environment), "status": .text(delta.status),
                "product_id": .text(delta.productId), "count": .integer(change),
            ])
        }
    }

    static let addNotification = StoreStatement(
        """
        INSERT INTO notification_days (day, type, count) VALUES (:day, :type, 1)
        ON CONFLICT (day, type) DO UPDATE SET count = notification_days.count + 1
        """)

    /// The write that counts a notification stored at `receivedAt` (milliseconds since 1970).
    static func notificationWrite(type: String?, receivedAt: Int64) -> StoreWrite {
        StoreWrite(addNotification, ["day": .integer(Self.day(of: receivedAt)), "type": .text(type ?? "")])
    }

    /// The first millisecond of the UTC day of an instant.
    static func day(of milliseconds: Int64) -> Int64 {
        let remainder = milliseconds % millisecondsPerDay
        return milliseconds - (remainder < 0 ? remainder + millisecondsPerDay : remainder)
    }

    static let millisecondsPerDay: Int64 = 86_400_000

    // MARK: Reading

    /// A stored count.
    struct Count: Sendable, Hashable {
        var bundleId: String
        var environment: String
        var status: String
        var productId: String
        var count: Int64
    }

    /// Every count not zero.
    static let counts = Query(
        "SELECT bundle_id, environment, status, product_id, count FROM subscription_counts WHERE count <> 0"
    ) { (bundleId: String, environment: String, status: String, productId: String, count: Int64) in
        Count(bundleId: bundleId, environment: environment, status: status, productId: productId, count: count)
    }

    /// A key whose derived state may have changed by now, with the status and product its row says.
    struct DueKey: Sendable, Hashable {
        var key: SubscriptionKey
        var status: String?
        var productId: String?
    }

    /// The keys due by an instant (`next_change_at <= :instant`), through the sweep's index.
    static let dueKeys = Query(
        """
        SELECT original_transaction_id, bundle_id, environment, derived_status, derived_product_id FROM subscriptions
        WHERE next_change_at <= :instant
        """
    ) { (originalTransactionId: String, bundleId: String, environment: String, status: String?, productId: String?) in
        DueKey(
            key: LedgerStatements.subscriptionKey(originalTransactionId, bundleId, environment), status: status, productId: productId)
    }

    /// The notifications stored per day and type from a day on.
    static let notificationDays = Query("SELECT day, type, count FROM notification_days WHERE day >= :first_day ORDER BY day, type") {
        (day: Int64, type: String, count: Int64) in (day: day, type: type, count: count)
    }
}
