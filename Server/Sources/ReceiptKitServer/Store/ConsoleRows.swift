public import ReceiptKit

/// The statements of the operator's console (``ConsoleStore``), written once for both databases
/// but for the one member of JSON text read in SQL, where SQLite and PostgreSQL differ
/// (``Schema/Dialect/jsonText(_:_:)``).
enum ConsoleRows {
    /// The keys of a transaction id, through `transaction_copies_transaction_id` (v9).
    static let keysOfTransactionId = StoreStatement(
        """
        SELECT DISTINCT original_transaction_id, bundle_id, environment FROM transaction_copies WHERE transaction_id = ?
        """, columns: [.text, .text, .text])

    static let subscriptionCount = StoreStatement("SELECT COUNT(*) FROM subscriptions", columns: [.integer])

    /// The first keys in the order of `subscriptions`' primary key.
    static let firstKeys = StoreStatement(
        """
        SELECT original_transaction_id, bundle_id, environment FROM subscriptions
        ORDER BY original_transaction_id, bundle_id, environment LIMIT ?
        """, columns: [.text, .text, .text])

    /// The notifications stored before an event id, newest first, with their type: a page of a
    /// walk down the events' primary key (no index on `received_at` to keep up on every write).
    static func notificationTypes(_ dialect: Schema.Dialect) -> StoreStatement {
        switch dialect {
        case .sqlite: notificationTypesSQLite
        case .postgres: notificationTypesPostgres
        }
    }

    private static let notificationTypesSQLite = notificationTypesStatement(.sqlite)
    private static let notificationTypesPostgres = notificationTypesStatement(.postgres)

    private static func notificationTypesStatement(_ dialect: Schema.Dialect) -> StoreStatement {
        StoreStatement(
            """
            SELECT id, received_at, \(dialect.jsonText("record", ["notification", "type"])) FROM events
            WHERE kind = 'notification' AND id < ? ORDER BY id DESC LIMIT ?
            """, columns: [.integer, .integer, .text])
    }

    static let latestNotifications = StoreStatement(
        """
        SELECT id, kind, record, received_at FROM events WHERE kind = 'notification' ORDER BY id DESC LIMIT ?
        """, columns: [.integer, .text, .text, .integer])

    /// Events from rows of ``latestNotifications`` or ``LedgerRows/eventsOfKey`` (id, kind,
    /// record, received at), in the rows' order.
    static func identifiedEvents(_ rows: [[StoreValue]]) -> [IdentifiedEvent] {
        rows.compactMap { row in
            row[0].integer.map {
                IdentifiedEvent(
                    id: $0, event: StoredEvent(kind: row[1].text ?? "", record: row[2].text ?? "", receivedAt: row[3].integer ?? 0))
            }
        }
    }

    static func sightings(_ rows: [[StoreValue]]) -> [NotificationSighting] {
        rows.compactMap { row in
            row[0].integer.map { NotificationSighting(id: $0, receivedAt: row[1].integer ?? 0, type: row[2].text) }
        }
    }
}

extension Schema.Dialect {
    /// An SQL expression: the text at a path of members of a JSON object kept as text in
    /// `column`, or NULL. The column and path are constants of the store's, never input.
    func jsonText(_ column: String, _ path: [String]) -> String {
        switch self {
        case .sqlite: "json_extract(\(column), '$.\(path.joined(separator: "."))')"
        case .postgres: "(\(column)::json #>> '{\(path.joined(separator: ","))}')"
        }
    }
}

/// What the operator's console reads besides states: keys by transaction id, every key, the
/// notifications received lately, and a key's events with their ids.
public protocol ConsoleStore: Sendable {
    /// The keys of the transactions with this transaction id (a renewal's, say), sorted.
    func keys(transactionId: String) async throws -> [SubscriptionKey]
    /// The first `limit` keys (in the order of their original transaction id), and how many
    /// keys there are.
    func subscriptionKeys(limit: Int) async throws -> (keys: [SubscriptionKey], total: Int)
    /// Up to `limit` stored notifications with an event id below `id`, newest first, with their
    /// type.
    func notificationTypes(before id: Int64, limit: Int) async throws -> [NotificationSighting]
    /// The last `limit` notifications stored, newest first.
    func latestNotifications(limit: Int) async throws -> [IdentifiedEvent]
    /// The stored events that touched a key, with their ids, in the order they were stored.
    func identifiedEvents(touching key: SubscriptionKey) async throws -> [IdentifiedEvent]
}

/// A stored event with its id, which orders events as they were stored.
public struct IdentifiedEvent: Sendable, Hashable {
    /// The event's row id.
    public var id: Int64
    /// The event.
    public var event: StoredEvent

    /// Creates an identified event.
    public init(id: Int64, event: StoredEvent) {
        self.id = id
        self.event = event
    }
}

/// A stored notification's id, time of receipt and `notificationType`.
public struct NotificationSighting: Sendable, Hashable {
    /// The event's row id.
    public var id: Int64
    /// When the server received it, in milliseconds since 1970.
    public var receivedAt: Int64
    /// Apple's `notificationType`, or `nil` when the record has none.
    public var type: String?

    /// Creates a sighting.
    public init(id: Int64, receivedAt: Int64, type: String?) {
        self.id = id
        self.receivedAt = receivedAt
        self.type = type
    }
}
