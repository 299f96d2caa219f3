public import Foundation
public import ReceiptKit

/// Where verified inputs, the state derived from them and the links between customers and
/// subscriptions are kept: SQLite (``SQLiteStore``) or PostgreSQL (``PostgresStore``), with the
/// same schema and migrations (``Schema``).
///
/// Every method that writes runs one database transaction and returns only once it has
/// committed: a route answers 200 only after that.
public protocol EntitlementStore: Sendable {
    /// Applies the migrations not yet applied. Safe to call from several servers at once.
    func migrate() async throws
    /// Throws unless the database accepts a write now: takes the lock a write of an event takes,
    /// and releases it, writing nothing. (A read can succeed while every write waits — SQLite in
    /// WAL mode under another connection's write lock, a PostgreSQL table locked by a migration
    /// — and a webhook that cannot write must not look ready.)
    func ping() async throws
    /// Stores a verified input and, if it is new, folds it into each of its keys' state; adds its
    /// customer links in any case. One transaction.
    ///
    /// Stops waiting as soon as the calling task is cancelled (a request's timeout), throwing
    /// `CancellationError`, even while the database still waits for a lock; the write may then
    /// still commit, which is harmless (the client retries, and a replay changes nothing).
    ///
    /// - Returns: `true` when the event is new, `false` when its dedup key was already stored
    ///   (a replay, which changes no state).
    func record(_ event: NewEvent) async throws -> Bool
    /// The stored state of every key linked to a customer, sorted by key.
    func subscriptions(customerId: String) async throws -> [StoredSubscription]
    /// The stored state of every key with this original transaction id (one per bundle id and
    /// environment), sorted by key.
    func subscriptions(originalTransactionId: String) async throws -> [StoredSubscription]
    /// The stored events that touched any of these keys (their transactions' or renewal info's
    /// key), each once, in the order they were stored.
    func events(touching keys: [SubscriptionKey]) async throws -> [StoredEvent]
    /// The raw bytes of the event with this dedup key, exactly as received, or `nil` when no
    /// such event is stored.
    func raw(dedupKey: String) async throws -> [UInt8]?
    /// The number of stored events, and of those with the given dedup keys.
    func eventCount(dedupKeys: [String]?) async throws -> Int
    /// Closes the database (SQLite) or does nothing (PostgreSQL, whose client is a service).
    func close() async throws
}

/// A verified input to store, with what it changes.
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
    /// The state change of each key the input touches.
    public var folds: [KeyFold]
    /// The customers the input's keys are to be linked to.
    public var links: [CustomerLink]

    /// Creates an event.
    public init(
        dedupKey: String, kind: String, raw: [UInt8], headerSegments: [[UInt8]] = [], record: String, receivedAt: Int64,
        folds: [KeyFold], links: [CustomerLink]
    ) {
        self.dedupKey = dedupKey
        self.kind = kind
        self.raw = raw
        self.headerSegments = headerSegments
        self.record = record
        self.receivedAt = receivedAt
        self.folds = folds
        self.links = links
    }
}

/// How one key's stored state changes with a new event: the store calls ``fold`` inside the
/// transaction, with the key's row locked, on the state stored so far (`nil` for a new key).
public struct KeyFold: Sendable {
    /// The key.
    public var key: SubscriptionKey
    /// The new state from the stored one.
    public var fold: @Sendable (Data?) throws -> Data

    /// Creates a fold.
    public init(key: SubscriptionKey, fold: @escaping @Sendable (Data?) throws -> Data) {
        self.key = key
        self.fold = fold
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

/// A key's stored state.
public struct StoredSubscription: Sendable, Hashable {
    /// The key.
    public var key: SubscriptionKey
    /// The state as its fold last wrote it (`nil`: a key linked to a customer, no event folded).
    public var state: Data?
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

extension NewEvent {
    /// The links, deduplicated and sorted, and the folds sorted by key: every transaction takes
    /// its row locks in the same order, so two events touching the same keys never deadlock.
    var orderedFolds: [KeyFold] { folds.sorted { $0.key < $1.key } }
    var orderedLinks: [CustomerLink] {
        Array(Set(links)).sorted { ($0.customerId, $0.key) < ($1.customerId, $1.key) }
    }
}
