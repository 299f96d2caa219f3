package import ReceiptKit

/// What the feed remembers of a key's derived state, to tell the next change from it: the few
/// members of a ``SubscriptionState`` the event types are decided by. Kept in the key's row of
/// `subscriptions` (``FeedDerivation``).
package struct DerivedState: Sendable, Hashable {
    package var status: SubscriptionStatus
    package var productId: String?
    /// The current transaction's id.
    package var transactionId: String?
    /// The end of the period paid for, in milliseconds.
    package var expiresAt: Int64?
    package var willRenew: Bool?
    /// An auto-renewable subscription (not a one-time purchase).
    package var isSubscription: Bool
    /// The customer has it through Family Sharing.
    package var isFamilyShared: Bool

    package init(
        status: SubscriptionStatus, productId: String? = nil, transactionId: String? = nil, expiresAt: Int64? = nil,
        willRenew: Bool? = nil, isSubscription: Bool = true, isFamilyShared: Bool = false
    ) {
        self.status = status
        self.productId = productId
        self.transactionId = transactionId
        self.expiresAt = expiresAt
        self.willRenew = willRenew
        self.isSubscription = isSubscription
        self.isFamilyShared = isFamilyShared
    }

    /// The members of a state the feed compares.
    package init(_ state: SubscriptionState) {
        self.init(
            status: state.status, productId: state.productId, transactionId: state.latestTransactionId,
            expiresAt: state.expiresDate?.millisecondsSince1970, willRenew: state.willRenew,
            isSubscription: state.appleStatus != nil, isFamilyShared: state.ownershipType == "family_shared")
    }
}

/// What a key's row says of the feed: the state its last event (or the migration) was derived
/// from, and when to look again.
struct DerivedRecord: Sendable, Hashable {
    /// The state the last event was derived from; `nil` before the first.
    var state: DerivedState?
    /// When the state may change by time alone, or a copy signed later becomes known.
    var nextChangeAt: Int64?
}

extension DerivedRecord {
    /// When a key evaluated at `instant` is to be evaluated again without a new input: when its
    /// status may change by time alone (ReceiptKit's ``SubscriptionState/statusMayChangeAt``), or
    /// when a copy signed after `instant` (by a clock ahead of ours) counts.
    static func boundary(_ state: SubscriptionState?, lastKnownFrom: Int64?, at instant: Timestamp) -> Int64? {
        let later = lastKnownFrom.flatMap { $0 > instant.millisecondsSince1970 ? $0 : nil }
        return [state?.statusMayChangeAt?.millisecondsSince1970, later].compactMap { $0 }.min()
    }

    /// What the feed remembers of a key without writing events: what the migration that
    /// introduced the feed stored for every key a server before it had, so that the first input
    /// after the upgrade is compared with the state it found, not with nothing.
    static func baseline(_ state: SubscriptionState?, lastKnownFrom: Int64?, at instant: Timestamp) -> DerivedRecord {
        DerivedRecord(state: state.map(DerivedState.init), nextChangeAt: boundary(state, lastKnownFrom: lastKnownFrom, at: instant))
    }
}
