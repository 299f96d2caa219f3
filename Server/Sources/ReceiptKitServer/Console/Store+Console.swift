package import ReceiptKit

/// What the operator's console reads besides states.
extension Store {
    /// How many keys have each status and product at `instant`, per app and environment: every
    /// key with a known state counted, exactly, in one snapshot (``OverviewCounting``), at a cost
    /// that follows the groups and the keys due by then, not the number of keys.
    package func subscriptionCounts(at instant: Timestamp) async throws -> [SubscriptionCount] {
        try await backend.read(OverviewCounting(at: instant)).compactMap { count in
            SubscriptionStatus(rawValue: count.status).map { status in
                SubscriptionCount(
                    bundleId: count.bundleId, environment: count.environment, status: status,
                    productId: count.productId.isEmpty ? nil : count.productId, count: Int(count.count))
            }
        }
    }

    /// The notifications stored per UTC day and `notificationType` from the day that starts at
    /// `day` (milliseconds since 1970) on, oldest first: a read of the days' counts, not of the
    /// notifications.
    package func notificationDays(from day: Int64) async throws -> [NotificationDay] {
        try await backend.rows(CountStatements.notificationDays, ["first_day": .integer(day)]).map { row in
            NotificationDay(day: row.day, type: row.type.isEmpty ? nil : row.type, count: Int(row.count))
        }
    }

    /// The last `limit` notifications stored, newest first.
    package func latestNotifications(limit: Int) async throws -> [StoredInput] {
        try await backend.rows(ConsoleStatements.latestNotifications, ["limit": .integer(Int64(limit))])
    }

    /// The stored inputs that touched a key, in the order they were stored.
    package func inputs(of key: SubscriptionKey) async throws -> [StoredInput] {
        try await backend.rows(InputStatements.inputsOfKey, LedgerStatements.key(key)).sorted { $0.id < $1.id }
    }
}

/// How many keys of an app and environment have a status and product.
package struct SubscriptionCount: Sendable, Hashable {
    package var bundleId: String
    package var environment: String
    package var status: SubscriptionStatus
    /// The current transaction's product, `nil` when its record names none.
    package var productId: String?
    package var count: Int
}

/// How many notifications of a type were stored on a UTC day.
package struct NotificationDay: Sendable, Hashable {
    /// The day's first instant, in milliseconds since 1970.
    package var day: Int64
    /// Apple's `notificationType`, `nil` when the record has none.
    package var type: String?
    package var count: Int
}
