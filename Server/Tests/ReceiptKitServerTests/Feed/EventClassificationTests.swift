import ReceiptKit
import ReceiptKitServer
import Testing

/// ``EventClassification``: the one function that names a change, from the state before (or
/// none) and the state after.
@Suite("Change classification")
struct ChangeClassificationTests {
    static let day: Int64 = 86_400_000

    static func subscription(
        _ status: SubscriptionStatus, product: String = "monthly", transaction: String = "1", expires: Int64? = 30 * day,
        willRenew: Bool? = true, familyShared: Bool = false
    ) -> DerivedState {
        DerivedState(
            status: status, productId: product, transactionId: transaction, expiresAt: expires, willRenew: willRenew,
            isSubscription: true, isFamilyShared: familyShared)
    }

    static func purchase(_ status: SubscriptionStatus, familyShared: Bool = false) -> DerivedState {
        DerivedState(
            status: status, productId: "coins", transactionId: "9", expiresAt: nil, willRenew: nil, isSubscription: false,
            isFamilyShared: familyShared)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let previous: DerivedState?
        let current: DerivedState
        let expected: [String]
        var testDescription: String { "\(previous?.status.rawValue ?? "none") → \(current.status.rawValue): \(expected)" }
    }

    static let cases: [Case] = [
        Case(previous: nil, current: subscription(.active), expected: ["subscription.started"]),
        Case(previous: subscription(.active), current: subscription(.active, transaction: "2", expires: 60 * day),
             expected: ["subscription.renewed"]),
        // A later copy of the same period (a renewal info, the same renewal again) is no change.
        Case(previous: subscription(.active), current: subscription(.active, transaction: "2"), expected: []),
        Case(previous: subscription(.active), current: subscription(.active), expected: []),
        Case(previous: subscription(.active), current: subscription(.active, product: "yearly", transaction: "2", expires: 365 * day),
             expected: ["subscription.product_changed"]),
        Case(previous: subscription(.active), current: subscription(.active, willRenew: false),
             expected: ["subscription.auto_renew_disabled"]),
        Case(previous: subscription(.active, willRenew: false), current: subscription(.active),
             expected: ["subscription.auto_renew_enabled"]),
        // A renewal that also turns auto-renew off: both.
        Case(previous: subscription(.active), current: subscription(.active, transaction: "2", expires: 60 * day, willRenew: false),
             expected: ["subscription.renewed", "subscription.auto_renew_disabled"]),
        Case(previous: subscription(.active), current: subscription(.gracePeriod), expected: ["subscription.billing_issue"]),
        Case(previous: subscription(.active), current: subscription(.billingRetry), expected: ["subscription.billing_issue"]),
        Case(previous: subscription(.expired), current: subscription(.billingRetry), expected: ["subscription.billing_issue"]),
        Case(previous: subscription(.gracePeriod), current: subscription(.billingRetry), expected: ["subscription.grace_period_expired"]),
        Case(previous: subscription(.gracePeriod), current: subscription(.active, transaction: "2", expires: 60 * day),
             expected: ["subscription.recovered"]),
        Case(previous: subscription(.billingRetry), current: subscription(.active, transaction: "2", expires: 60 * day),
             expected: ["subscription.recovered"]),
        Case(previous: subscription(.billingRetry), current: subscription(.expired), expected: ["subscription.expired"]),
        Case(previous: subscription(.active), current: subscription(.expired, willRenew: false), expected: ["subscription.expired"]),
        Case(previous: subscription(.expired), current: subscription(.active, transaction: "3", expires: 90 * day),
             expected: ["subscription.resubscribed"]),
        Case(previous: subscription(.active), current: subscription(.revoked), expected: ["subscription.refunded"]),
        Case(previous: subscription(.active, familyShared: true), current: subscription(.revoked, familyShared: true),
             expected: ["subscription.revoked"]),
        Case(previous: subscription(.revoked), current: subscription(.active), expected: ["subscription.refund_reversed"]),
        Case(previous: subscription(.revoked), current: subscription(.active, transaction: "4", expires: 120 * day),
             expected: ["subscription.resubscribed"]),
        Case(previous: nil, current: subscription(.expired), expected: ["subscription.expired"]),
        // Auto-renew switched while it is over: nothing to act on.
        Case(previous: subscription(.expired, willRenew: true), current: subscription(.expired, willRenew: false), expected: []),
        Case(previous: subscription(.billingRetry), current: subscription(.billingRetry, willRenew: false),
             expected: ["subscription.auto_renew_disabled"]),
        Case(previous: nil, current: purchase(.active), expected: ["purchase.made"]),
        Case(previous: purchase(.active), current: purchase(.active), expected: []),
        Case(previous: purchase(.active), current: purchase(.revoked), expected: ["purchase.refunded"]),
        Case(previous: purchase(.active, familyShared: true), current: purchase(.revoked, familyShared: true),
             expected: ["purchase.revoked"]),
        Case(previous: purchase(.revoked), current: purchase(.active), expected: ["purchase.refund_reversed"]),
        Case(previous: nil, current: purchase(.revoked), expected: ["purchase.refunded"]),
    ]

    @Test("each step of a key's state is named once", arguments: cases)
    func classify(_ test: Case) {
        #expect(EventClassification.changes(from: test.previous, to: test.current).map(\.rawValue) == test.expected)
    }

    @Test("every type but a consumption or retention request or a named entitlement's change is the name of some step")
    func everyTypeIsReachable() {
        let named = Set(Self.cases.flatMap(\.expected))
        let types = Set(EventType.allCases.map(\.rawValue)).subtracting(["consumption.requested", "retention.requested", "entitlement.activated", "entitlement.deactivated"])
        #expect(named == types)
    }
}
