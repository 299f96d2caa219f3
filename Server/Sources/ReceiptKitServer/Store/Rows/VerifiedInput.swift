public import ReceiptKit

/// One of Apple's inputs — a notification, a transaction, renewal info or a receipt — verified,
/// with what storing it needs: its dedup key, its bytes, its record, the keys it touches, the
/// ledger copies it folds in and the customers it links (made from a verified record only:
/// ``init(record:raw:bundleId:customerId:receivedAt:source:)``).
public struct VerifiedInput: Sendable {
    /// What makes a replay a replay: `notification:UUID`,
    /// `transaction:BUNDLE_ID:ENVIRONMENT:ID:SIGNED_MS`,
    /// `renewal_info:BUNDLE_ID:ENVIRONMENT:ORIGINAL_ID:SIGNED_MS`, `receipt:CREATED_MS:OPAQUE_HEX`.
    public var dedupKey: String
    /// The dedup key a server before v11 gave the same input (`transaction:ID:SIGNED_MS`,
    /// `renewal_info:ORIGINAL_ID:SIGNED_MS`), if it had another: an input stored under it is a
    /// replay too.
    public var legacyDedupKey: String?
    /// The record's kind, as `verify-receipt` prints it (`notification`, `transaction`, …).
    public var kind: String
    /// The input's bytes as received.
    public var raw: [UInt8]
    /// The JWS header segments `raw` carries (as it is, or nested in a JWS's payload): the store
    /// keeps each header once and the input refers to it (``RawCompaction``).
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
    /// Whether the input is left out when its copies only repeat what is stored, each the same
    /// as the stored copy of its transaction (or renewal info) signed last but for a later
    /// signed date (``LedgerCopy/repeats(_:)``): the later signing is then remembered in the
    /// copies' rows and nothing else is stored (``Repeating``). For the items Apple answers the
    /// App Store Server API with, which it signs anew for every answer; a notification is always
    /// stored.
    public var skipsRepeats = false
    /// Where the input came from and what it was, for the events it causes.
    public var cause: EventCause
    /// The consumption request the input is, if it is one.
    public var consumption: ConsumptionNotice?

    /// Creates an input.
    public init(
        dedupKey: String, kind: String, raw: [UInt8], headerSegments: [[UInt8]] = [], record: String, receivedAt: Int64,
        keys: [SubscriptionKey], copies: [LedgerCopy], links: [CustomerLink], cause: EventCause = EventCause(source: .app),
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

    /// The keys deduplicated and sorted: every transaction takes its row locks in the same
    /// order, so two inputs touching the same keys never deadlock.
    var orderedKeys: [SubscriptionKey] { Set(keys).sorted() }

    /// The links deduplicated and sorted.
    var orderedLinks: [CustomerLink] {
        Array(Set(links)).sorted { ($0.customerId, $0.key) < ($1.customerId, $1.key) }
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
