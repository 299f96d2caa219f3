package import ReceiptKit

/// What the operator's console reads besides states.
extension Store {
    /// The first `limit` keys (in the order of their original transaction id), and how many keys
    /// there are.
    package func subscriptionKeys(limit: Int) async throws -> (keys: [SubscriptionKey], total: Int) {
        let total = try await backend.first(ConsoleStatements.subscriptionCount) ?? 0
        let keys = try await backend.rows(ConsoleStatements.firstKeys, [.integer(Int64(limit))]).sorted()
        return (keys, Int(total))
    }

    /// Up to `limit` stored notifications with an input id below `id`, newest first, with their
    /// type.
    package func notificationTypes(before id: Int64, limit: Int) async throws -> [NotificationSighting] {
        try await backend.rows(ConsoleStatements.notificationTypes, [.integer(id), .integer(Int64(limit))])
    }

    /// The last `limit` notifications stored, newest first.
    package func latestNotifications(limit: Int) async throws -> [StoredInput] {
        try await backend.rows(ConsoleStatements.latestNotifications, [.integer(Int64(limit))])
    }

    /// The stored inputs that touched a key, in the order they were stored.
    package func inputs(of key: SubscriptionKey) async throws -> [StoredInput] {
        try await backend.rows(InputStatements.inputsOfKey, LedgerStatements.key(key)).sorted { $0.id < $1.id }
    }
}

/// A stored notification's id, time of receipt and `notificationType`.
package struct NotificationSighting: Sendable, Hashable {
    /// The input's row id.
    package var id: Int64
    /// When the server received it, in milliseconds since 1970.
    package var receivedAt: Int64
    /// Apple's `notificationType`, or `nil` when the record has none.
    package var type: String?
}
