import Foundation

/// The customer story of ``CustomerStoryTests``: one subscription from a free trial through
/// renewals, billing retry, recovery, a grace period, recovery again and a refund, each step a
/// notification signed under the test PKI. The console's tests fill their server with it too.
struct CustomerStory: Sendable {
    /// When the free trial starts.
    static let start = ms("2025-06-01T12:00:00Z")
    static let hour: Int64 = 3_600_000
    static let original = "7000"
    /// The customer, as the transactions' `appAccountToken`.
    static let customer = "alice-token"

    let purchase: String
    let renewal1: String
    let renewal2: String
    let billingRetry: String
    let recovery1: String
    let grace: String
    let recovery2: String
    let refund: String

    /// Every notification, in the order the story happens.
    var notifications: [String] { [purchase, renewal1, renewal2, billingRetry, recovery1, grace, recovery2, refund] }

    init(_ p: Payloads) throws {
        let (t0, hour, original) = (Self.start, Self.hour, Self.original)
        func transaction(_ id: String, _ start: Int64, _ days: Int64, signed: Int64? = nil, trial: Bool = false, revoked: Int64? = nil) throws -> String {
            try p.transaction(
                id: id, original: original, purchase: start, expires: start + days * day, signed: signed ?? start,
                token: Self.customer, freeTrial: trial, revocation: revoked, revocationReason: revoked == nil ? nil : 0)
        }
        purchase = try p.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: t0, transaction: transaction("7001", t0, 7, trial: true),
            renewalInfo: p.renewalInfo(original: original, signed: t0, renewalDate: t0 + 7 * day))
        renewal1 = try p.notification(
            type: "DID_RENEW", signed: t0 + 7 * day, transaction: transaction("7002", t0 + 7 * day, 30),
            renewalInfo: p.renewalInfo(original: original, signed: t0 + 7 * day, renewalDate: t0 + 37 * day))
        renewal2 = try p.notification(
            type: "DID_RENEW", signed: t0 + 37 * day, transaction: transaction("7003", t0 + 37 * day, 30),
            renewalInfo: p.renewalInfo(original: original, signed: t0 + 37 * day, renewalDate: t0 + 67 * day))
        billingRetry = try p.notification(
            type: "DID_FAIL_TO_RENEW", signed: t0 + 67 * day + hour, transaction: transaction("7003", t0 + 37 * day, 30),
            renewalInfo: p.renewalInfo(original: original, signed: t0 + 67 * day + hour, billingRetry: true, expirationIntent: 2))
        recovery1 = try p.notification(
            type: "DID_RENEW", subtype: "BILLING_RECOVERY", signed: t0 + 70 * day, transaction: transaction("7004", t0 + 70 * day, 30),
            renewalInfo: p.renewalInfo(original: original, signed: t0 + 70 * day, billingRetry: false, renewalDate: t0 + 100 * day))
        grace = try p.notification(
            type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signed: t0 + 100 * day + hour,
            transaction: transaction("7004", t0 + 70 * day, 30),
            renewalInfo: p.renewalInfo(
                original: original, signed: t0 + 100 * day + hour, billingRetry: true, gracePeriodExpires: t0 + 106 * day,
                expirationIntent: 2))
        recovery2 = try p.notification(
            type: "DID_RENEW", subtype: "BILLING_RECOVERY", signed: t0 + 103 * day, transaction: transaction("7005", t0 + 103 * day, 30),
            renewalInfo: p.renewalInfo(original: original, signed: t0 + 103 * day, billingRetry: false, renewalDate: t0 + 133 * day))
        refund = try p.notification(
            type: "REFUND", signed: t0 + 110 * day,
            transaction: transaction("7005", t0 + 103 * day, 30, signed: t0 + 110 * day, revoked: t0 + 110 * day),
            renewalInfo: nil)
    }
}
