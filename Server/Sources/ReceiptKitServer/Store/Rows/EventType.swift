/// The kinds of change the feed tells a backend about (`docs/events.md` has an example of each).
/// A subscription's and a one-time purchase's come from comparing the key's derived state before
/// and after an input or the passing of time (``EventClassification``); a consumption request
/// comes from Apple's notification itself, a retention request from Apple's Get Retention Message
/// request.
package enum EventType: String, Sendable, CaseIterable {
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
    /// A customer may now use a named entitlement (a purchase, a renewal, a grant): the
    /// entitlements file's name, and what gives it.
    case entitlementActivated = "entitlement.activated"
    /// A customer may no longer use a named entitlement (a lapse, a refund, a pass or a grant
    /// ending).
    case entitlementDeactivated = "entitlement.deactivated"
    /// Apple asks for consumption information about a refund request (`CONSUMPTION_REQUEST`):
    /// answer with `PUT /v1/transactions/{id}/consumption` before the deadline.
    case consumptionRequested = "consumption.requested"
    /// Apple asked which retention message to show a customer on the cancel screen
    /// (`POST /appstore/retention`); the event says what the rules answered.
    case retentionRequested = "retention.requested"
}
