package import ReceiptKit

/// The kinds of change the feed tells a backend about (`docs/events.md` has an example of each).
/// A subscription's and a one-time purchase's come from comparing the key's derived state before
/// and after an input or the passing of time (``ChangeClassification``); a consumption request
/// comes from Apple's notification itself.
package enum ChangeType: String, Sendable, CaseIterable {
    /// A key's first state: active (its `subscription.is_trial` says whether a free trial).
    case subscriptionStarted = "subscription.started"
    /// Still active, same product, its period moved later.
    case subscriptionRenewed = "subscription.renewed"
    /// Still active, another product of the group (an upgrade, or a crossgrade or downgrade at
    /// renewal).
    case subscriptionProductChanged = "subscription.product_changed"
    /// The customer turned auto-renew off: the subscription ends at `expires_date` (*cancelled*).
    case subscriptionAutoRenewDisabled = "subscription.auto_renew_disabled"
    /// The customer turned auto-renew back on.
    case subscriptionAutoRenewEnabled = "subscription.auto_renew_enabled"
    /// A renewal failed: now in a grace period (still entitled) or in billing retry (not).
    case subscriptionBillingIssue = "subscription.billing_issue"
    /// The grace period ran out while Apple still retries the charge: no longer entitled.
    case subscriptionGracePeriodExpired = "subscription.grace_period_expired"
    /// Active again after a grace period or billing retry.
    case subscriptionRecovered = "subscription.recovered"
    /// The last period ended and nothing renewed it.
    case subscriptionExpired = "subscription.expired"
    /// Active again after it had expired, or a new purchase after a refund.
    case subscriptionResubscribed = "subscription.resubscribed"
    /// Apple refunded the current transaction.
    case subscriptionRefunded = "subscription.refunded"
    /// Family Sharing withdrawn: the family member's access ended.
    case subscriptionRevoked = "subscription.revoked"
    /// A refund Apple reversed: the same transaction active again.
    case subscriptionRefundReversed = "subscription.refund_reversed"
    /// A one-time purchase (consumable, non-consumable, non-renewing subscription) made.
    case purchaseMade = "purchase.made"
    /// A one-time purchase refunded.
    case purchaseRefunded = "purchase.refunded"
    /// A one-time purchase shared through Family Sharing, withdrawn.
    case purchaseRevoked = "purchase.revoked"
    /// A one-time purchase's refund reversed.
    case purchaseRefundReversed = "purchase.refund_reversed"
    /// Apple asks for consumption information about a refund request (`CONSUMPTION_REQUEST`):
    /// answer with `PUT /v1/transactions/{id}/consumption` before the deadline.
    case consumptionRequested = "consumption.requested"
}

/// What the feed remembers of a key's derived state, to tell the next change from it: the few
/// members of a ``SubscriptionState`` the event types are decided by. Kept in the key's row of
/// `subscriptions` (``FeedRows``).
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

/// Decides which changes one step of a key's derived state is: the one place the event types are
/// defined. Pure: the same two states give the same changes, whatever input or sweep led there.
/// The entitlement rules themselves stay ReceiptKit's; this only names the difference.
package enum ChangeClassification {
    /// The changes from `previous` (`nil`: the key had no state yet) to `current`, in the order
    /// they are written; empty when nothing a backend acts on changed.
    package static func changes(from previous: DerivedState?, to current: DerivedState) -> [ChangeType] {
        guard current.isSubscription else { return purchaseChanges(from: previous, to: current) }
        var changes: [ChangeType] = []
        switch (previous?.status, current.status) {
        case (let before, let after) where before == after:
            if after == .active, let previous {
                if previous.productId != current.productId {
                    changes.append(.subscriptionProductChanged)
                } else if let end = current.expiresAt, end > (previous.expiresAt ?? .min) {
                    changes.append(.subscriptionRenewed)
                }
            }
        case (nil, .active): changes.append(.subscriptionStarted)
        case (.gracePeriod?, .active), (.billingRetry?, .active): changes.append(.subscriptionRecovered)
        case (.revoked?, .active) where previous?.transactionId == current.transactionId:
            changes.append(.subscriptionRefundReversed)
        case (_, .active): changes.append(.subscriptionResubscribed)
        case (.gracePeriod?, .billingRetry): changes.append(.subscriptionGracePeriodExpired)
        case (_, .gracePeriod), (_, .billingRetry): changes.append(.subscriptionBillingIssue)
        case (_, .expired): changes.append(.subscriptionExpired)
        case (_, .revoked): changes.append(current.isFamilyShared ? .subscriptionRevoked : .subscriptionRefunded)
        }
        // Auto-renew turned off or on, while the subscription is still alive (once it expired or
        // was refunded, the switch no longer decides anything).
        if let before = previous?.willRenew, let after = current.willRenew, before != after,
           [.active, .gracePeriod, .billingRetry].contains(current.status) {
            changes.append(after ? .subscriptionAutoRenewEnabled : .subscriptionAutoRenewDisabled)
        }
        return changes
    }

    /// A one-time purchase is owned (active) or revoked.
    private static func purchaseChanges(from previous: DerivedState?, to current: DerivedState) -> [ChangeType] {
        switch (previous?.status, current.status) {
        case (let before, let after) where before == after: return []
        case (nil, .active): return [.purchaseMade]
        case (.revoked?, .active): return [.purchaseRefundReversed]
        case (_, .revoked): return [current.isFamilyShared ? .purchaseRevoked : .purchaseRefunded]
        default: return []
        }
    }
}

/// Why a change happened: the input that caused it, or the sweep that noticed time passing.
public struct ChangeCause: Sendable, Hashable {
    /// Where the input came from.
    public enum Source: String, Sendable, Hashable {
        /// `POST /appstore/notifications`: Apple's notification.
        case webhook
        /// `POST /v1/transactions` with a signed transaction or a receipt: the app's purchase.
        case app
        /// Fetched from the App Store Server API: a purchase by id, a sync, a missed
        /// notification recovered from Get Notification History.
        case reconcile
        /// No input: a period, a grace period or a retry window ended (``SweepService``).
        case sweep
    }

    public var source: Source
    public var notificationUUID: String?
    public var notificationType: String?
    public var notificationSubtype: String?
    /// The transaction the input carried, if any.
    public var transactionId: String?

    /// Creates a cause.
    public init(
        source: Source, notificationUUID: String? = nil, notificationType: String? = nil, notificationSubtype: String? = nil,
        transactionId: String? = nil
    ) {
        self.source = source
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
    }

    /// The cause of the passing of time.
    static let sweep = ChangeCause(source: .sweep)

    /// `{"source", "notification_uuid", "notification_type", "notification_subtype", "transaction_id"}`.
    var json: String {
        var json = JSONObjectText()
        json.member("source", source.rawValue)
        json.member("notification_uuid", notificationUUID)
        json.member("notification_type", notificationType)
        json.member("notification_subtype", notificationSubtype)
        json.member("transaction_id", transactionId)
        return json.text
    }
}

/// One event of the feed before its id is known: what ``ChangeEvent/json(id:)`` renders.
struct ChangeEvent: Sendable {
    var type: ChangeType
    var key: SubscriptionKey
    /// When the change happened: the request's instant, or the instant time changed the state.
    var occurredAt: Timestamp
    /// The customers linked to the key when the event was written, sorted.
    var customerIds: [String]
    var previousStatus: SubscriptionStatus?
    /// The state after the change, or `nil` for an event that is not a state's change and comes
    /// before any state of the key is known.
    var state: SubscriptionState?
    var cause: ChangeCause
    /// The `consumption_request` member of a ``ChangeType/consumptionRequested`` event,
    /// rendered JSON.
    var consumptionRequest: String?

    /// The event as the feed serves it and a webhook carries it:
    /// `{"id", "type", "occurred_at", "bundle_id", "environment", "original_transaction_id",
    /// "customer_ids", "status", "entitled", "previous_status", "subscription", "cause"}` (and
    /// `consumption_request` for a consumption request). `id` is a string of decimal digits.
    func json(id: Int64) -> String {
        var json = JSONObjectText()
        json.member("id", String(id))
        json.member("type", type.rawValue)
        json.member("occurred_at", occurredAt.iso8601)
        json.member("bundle_id", key.bundleId)
        json.member("environment", key.environment)
        json.member("original_transaction_id", key.originalTransactionId)
        json.member("customer_ids", strings: customerIds)
        json.member("status", state?.status.rawValue)
        json.member("entitled", state?.isEntitled ?? false)
        json.member("previous_status", previousStatus?.rawValue)
        json.member("subscription", json: state?.json() ?? "null")
        json.member("cause", json: cause.json)
        if let consumptionRequest { json.member("consumption_request", json: consumptionRequest) }
        return json.text
    }
}
