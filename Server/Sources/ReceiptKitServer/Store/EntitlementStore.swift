import Foundation
public import ReceiptKit

/// Where verified inputs, the state derived from them and the links between customers and
/// subscriptions are kept: SQLite (``SQLiteStore``) or PostgreSQL (``PostgresStore``), with the
/// same schema and migrations (``Schema``).
///
/// Every method that writes runs one database transaction and returns only once it has
/// committed: a route answers 200 only after that.
public protocol EntitlementStore: ReconcileStore, ConsoleStore {
    /// Applies the migrations not yet applied. Safe to call from several servers at once.
    func migrate() async throws
    /// Throws unless the database accepts a write now: takes the lock a write of an event takes,
    /// and releases it, writing nothing. (A read can succeed while every write waits — SQLite in
    /// WAL mode under another connection's write lock, a PostgreSQL table locked by a migration
    /// — and a webhook that cannot write must not look ready.)
    func ping() async throws
    /// Stores a verified input and, if it is new, folds its ledger copies into its keys (a cost
    /// that does not grow with a key's history); adds its customer links in any case. One
    /// transaction.
    ///
    /// Stops waiting as soon as the calling task is cancelled (a request's timeout), throwing
    /// `CancellationError`, even while the database still waits for a lock; the write may then
    /// still commit, which is harmless (the client retries, and a replay changes nothing).
    ///
    /// - Returns: `true` when the event is new, `false` when its dedup key was already stored
    ///   (a replay, which changes no state) or when it only repeats what is stored
    ///   (``NewEvent/skipsRepeats``).
    func record(_ event: NewEvent) async throws -> Bool
    /// The keys linked to a customer, sorted.
    func keys(customerId: String) async throws -> [SubscriptionKey]
    /// The keys with this original transaction id (one per bundle id and environment), sorted.
    func keys(originalTransactionId: String) async throws -> [SubscriptionKey]
    /// A key's state at an instant, evaluated by ReceiptKit's ``EntitlementLedger`` from the
    /// stored copies that decide it (``LedgerRows/Evaluation``), read in one transaction; `nil`
    /// when no transaction of the key is known at that instant.
    func state(of key: SubscriptionKey, at instant: Timestamp) async throws -> SubscriptionState?
    /// The stored events that touched any of these keys (their transactions' or renewal info's
    /// key), each once, in the order they were stored.
    func events(touching keys: [SubscriptionKey]) async throws -> [StoredEvent]
    /// The raw bytes of the event with this dedup key, exactly as received (to pass on what Apple
    /// sent, byte for byte), or `nil` when no such event is stored.
    func raw(dedupKey: String) async throws -> [UInt8]?
    /// The feed's events with an id greater than `after`, oldest first, at most `limit`.
    func changeEvents(after: Int64, limit: Int) async throws -> [FeedEvent]
    /// The events of the keys linked to a customer with an id greater than `after`, oldest first,
    /// at most `limit`.
    func changeEvents(customerId: String, after: Int64, limit: Int) async throws -> [FeedEvent]
    /// Writes the events time alone caused: each key whose `next_change_at` has passed by `now`
    /// (at most `limit` of them, soonest first) is evaluated at each instant its state may have
    /// changed, up to `now`, in a transaction of its own. A key another server's sweep or an
    /// input holds is skipped (PostgreSQL): that one derives it.
    ///
    /// - Returns: How many keys were due, and how many events were written.
    func sweep(now: Timestamp, limit: Int) async throws -> SweepReport
    /// Closes the database (SQLite) or does nothing (PostgreSQL, whose client is a service).
    func close() async throws
}

/// What one ``EntitlementStore/sweep(now:limit:)`` did.
public struct SweepReport: Sendable, Hashable {
    /// Keys whose `next_change_at` had passed.
    public var due = 0
    /// Of those, the keys this sweep derived (not taken by another server, not moved on since).
    public var swept = 0
    /// Events written.
    public var events = 0

    /// Creates a report.
    public init(due: Int = 0, swept: Int = 0, events: Int = 0) {
        self.due = due
        self.swept = swept
        self.events = events
    }
}

/// What the store does besides storing: tell the server what each commit wrote to the feed.
public struct FeedSettings: Sendable {
    /// Where events and notifications are sent: their outbox rows are written with them.
    public var targets: OutboxTargets
    /// Called after each commit that wrote events or outbox rows (metrics, and the delivery
    /// worker's wake-up); never before the commit.
    public var observer: (@Sendable (FeedCommit) -> Void)?

    /// Creates settings.
    public init(targets: OutboxTargets = OutboxTargets(), observer: (@Sendable (FeedCommit) -> Void)? = nil) {
        self.targets = targets
        self.observer = observer
    }

    func tell(_ commit: FeedCommit) {
        if !commit.isEmpty { observer?(commit) }
    }
}

/// What the tests read of a store besides what the routes need.
package protocol StoreInspection: EntitlementStore {
    /// The number of stored events, and of those with the given dedup keys.
    func eventCount(dedupKeys: [String]?) async throws -> Int
}

/// A verified input to store, with the ledger copies it folds in.
public struct NewEvent: Sendable {
    /// What makes a replay a replay: `notification:UUID`, `transaction:ID:SIGNED_MS`,
    /// `renewal_info:ORIGINAL_ID:SIGNED_MS`, `receipt:CREATED_MS:OPAQUE_HEX`.
    public var dedupKey: String
    /// The record's kind, as `verify-receipt` prints it (`notification`, `transaction`, …).
    public var kind: String
    /// The input's bytes as received.
    public var raw: [UInt8]
    /// The JWS header segments `raw` carries (as it is, or nested in a JWS's payload): the store
    /// keeps each header once and the event refers to it (``RawCompaction``).
    public var headerSegments: [[UInt8]]
    /// The record, one JSON object as `verify-receipt` prints it.
    public var record: String
    /// When the server received it, in milliseconds since 1970.
    public var receivedAt: Int64
    /// The keys the input touches, each of which gets a row (``EntitlementLedger/keys(of:renewalInfoBundleId:)``).
    public var keys: [SubscriptionKey]
    /// The ledger copies the input folds in (``EntitlementLedger/copies(of:)``).
    public var copies: [LedgerCopy]
    /// The customers the input's keys are to be linked to.
    public var links: [CustomerLink]
    /// Whether the event is left out when its copies only repeat what is stored, each the same
    /// as the stored copy of its transaction (or renewal info) signed last but for a later
    /// signed date (``LedgerCopy/repeats(_:)``): the later signing is then remembered in the
    /// copies' rows and nothing else is stored (``LedgerRows/Repeating``). For the items Apple
    /// answers the App Store Server API with, which it signs anew for every answer; a
    /// notification is always stored.
    public var skipsRepeats = false
    /// Where the input came from and what it was, for the events it causes.
    public var cause: ChangeCause
    /// The consumption request the input is, if it is one.
    public var consumption: ConsumptionNotice?

    /// Creates an event.
    public init(
        dedupKey: String, kind: String, raw: [UInt8], headerSegments: [[UInt8]] = [], record: String, receivedAt: Int64,
        keys: [SubscriptionKey], copies: [LedgerCopy], links: [CustomerLink], cause: ChangeCause = ChangeCause(source: .app),
        consumption: ConsumptionNotice? = nil
    ) {
        self.cause = cause
        self.consumption = consumption
        self.dedupKey = dedupKey
        self.kind = kind
        self.raw = raw
        self.headerSegments = headerSegments
        self.record = record
        self.receivedAt = receivedAt
        self.keys = keys
        self.copies = copies
        self.links = links
    }
}

/// A customer ↔ subscription link.
public struct CustomerLink: Sendable, Hashable {
    /// The backend's customer id (or the purchase's `appAccountToken`).
    public var customerId: String
    /// The subscription.
    public var key: SubscriptionKey

    /// Creates a link.
    public init(customerId: String, key: SubscriptionKey) {
        self.customerId = customerId
        self.key = key
    }
}

/// A stored event, as ``EntitlementStore/events(touching:)`` reads it back.
public struct StoredEvent: Sendable, Hashable {
    /// The record's kind (`notification`, `transaction`, `renewal_info`, `receipt`).
    public var kind: String
    /// The record, one JSON object as `verify-receipt` prints it.
    public var record: String
    /// When the server received it, in milliseconds since 1970.
    public var receivedAt: Int64

    /// Creates a stored event.
    public init(kind: String, record: String, receivedAt: Int64) {
        self.kind = kind
        self.record = record
        self.receivedAt = receivedAt
    }
}

/// The database failed: the route answers 503 so that Apple (or the backend) retries. Its
/// description is for the log only, never for an answer.
public struct StoreError: Error, CustomStringConvertible {
    /// What failed, for the log.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension EntitlementStore {
    /// The state now or as of an instant of every key linked to a customer that has one, sorted
    /// by key.
    public func states(customerId: String, at instant: Timestamp) async throws -> [SubscriptionState] {
        var states: [SubscriptionState] = []
        for key in try await keys(customerId: customerId) {
            if let state = try await state(of: key, at: instant) { states.append(state) }
        }
        return states
    }

    /// The state of every key with this original transaction id that has one, sorted by key.
    public func states(originalTransactionId: String, at instant: Timestamp) async throws -> [SubscriptionState] {
        var states: [SubscriptionState] = []
        for key in try await keys(originalTransactionId: originalTransactionId) {
            if let state = try await state(of: key, at: instant) { states.append(state) }
        }
        return states
    }
}

extension NewEvent {
    /// The keys deduplicated and sorted, and the links too: every transaction takes its row
    /// locks in the same order, so two events touching the same keys never deadlock.
    var orderedKeys: [SubscriptionKey] { Set(keys).sorted() }
    var orderedLinks: [CustomerLink] {
        Array(Set(links)).sorted { ($0.customerId, $0.key) < ($1.customerId, $1.key) }
    }
}
