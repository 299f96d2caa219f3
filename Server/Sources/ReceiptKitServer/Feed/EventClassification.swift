import ReceiptKit

/// Decides which changes one step of a key's derived state is: the one place the event types are
/// defined. Pure: the same two states give the same changes, whatever input or sweep led there.
/// The entitlement rules themselves stay ReceiptKit's; this only names the difference.
package enum EventClassification {
    /// The changes from `previous` (`nil`: the key had no state yet) to `current`, in the order
    /// they are written; empty when nothing a backend acts on changed.
    package static func changes(from previous: DerivedState?, to current: DerivedState) -> [EventType] {
        guard current.isSubscription else { return purchaseChanges(from: previous, to: current) }
        var changes: [EventType] = []
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
    private static func purchaseChanges(from previous: DerivedState?, to current: DerivedState) -> [EventType] {
        switch (previous?.status, current.status) {
        case (let before, let after) where before == after: return []
        case (nil, .active): return [.purchaseMade]
        case (.revoked?, .active): return [.purchaseRefundReversed]
        case (_, .revoked): return [current.isFamilyShared ? .purchaseRevoked : .purchaseRefunded]
        default: return []
        }
    }
}
