// What the entitlement ledger keeps of each verified record: only the members subscription state
// depends on, with the instant from which the copy was known.

/// What a subscription's state is keyed by: the app, the environment and the original
/// transaction id that every renewal of the subscription (and every upgrade or downgrade within
/// its group) shares. A family member's copy of a shared purchase has its own original
/// transaction id, so it is a key of its own.
public struct SubscriptionKey: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The bundle identifier (empty when the source carried none).
    public let bundleId: String
    /// The environment as Apple writes it: `Production`, `Sandbox`, `Xcode`, … (empty when absent).
    public let environment: String
    /// The original transaction id.
    public let originalTransactionId: String

    /// Creates a key.
    ///
    /// - Parameters:
    ///   - bundleId: The bundle identifier.
    ///   - environment: The environment as Apple writes it.
    ///   - originalTransactionId: The original transaction id.
    public init(bundleId: String, environment: String, originalTransactionId: String) {
        self.bundleId = bundleId
        self.environment = environment
        self.originalTransactionId = originalTransactionId
    }

    /// Byte order of the UTF-8 of bundle id, then environment, then original transaction id: the
    /// order `verify-receipt --state` writes keys in, the same in every language.
    public static func < (lhs: SubscriptionKey, rhs: SubscriptionKey) -> Bool {
        if lhs.bundleId != rhs.bundleId { return lhs.bundleId.utf8.lexicographicallyPrecedes(rhs.bundleId.utf8) }
        if lhs.environment != rhs.environment {
            return lhs.environment.utf8.lexicographicallyPrecedes(rhs.environment.utf8)
        }
        return lhs.originalTransactionId.utf8.lexicographicallyPrecedes(rhs.originalTransactionId.utf8)
    }

    public var description: String { "\(bundleId)/\(environment)/\(originalTransactionId)" }

    /// The renewal infos of this key: they carry no bundle id, so they join by environment and
    /// original transaction id.
    var renewalKey: RenewalKey {
        RenewalKey(environment: environment, originalTransactionId: originalTransactionId)
    }
}

/// Where renewal infos are kept: environment and original transaction id.
struct RenewalKey: Sendable, Hashable, Codable {
    let environment: String
    let originalTransactionId: String
}

/// The instant a copy was known from when it carries no signed date: before everything, so a
/// dated copy always wins over it.
let knownSinceAlways = Timestamp(millisecondsSince1970: Int64.min)

/// One signed copy of one transaction, as the ledger keeps it.
struct LedgerTransaction: Sendable, Hashable, Codable {
    let transactionId: String
    /// The copy's `signedDate` (a legacy receipt's creation date): it counts from then on.
    let knownFrom: Timestamp
    let productId: String?
    /// Normalized, as in the transaction record: `auto_renewable_subscription`, `consumable`, …
    let productType: String?
    let subscriptionGroupId: String?
    let purchaseDate: Timestamp?
    let expiresDate: Timestamp?
    let revocationDate: Timestamp?
    /// Normalized, as in the transaction record.
    let revocationReason: String?
    let isUpgraded: Bool
    let ownershipType: String?
    let offer: NormalizedTransaction.Offer?
    let appAccountToken: String?

    /// A copy of a normalized transaction.
    ///
    /// - Parameters:
    ///   - transaction: The normalized transaction.
    ///   - knownFrom: When it was signed.
    ///   - revokedAt: When a `REFUND` or `REVOKE` notification carried it: its own revocation
    ///     date, or this instant when it carries none.
    init(_ transaction: NormalizedTransaction, id: String, knownFrom: Timestamp, revokedAt: Timestamp?) {
        self.transactionId = id
        self.knownFrom = knownFrom
        productId = transaction.productId
        productType = transaction.productType
        subscriptionGroupId = transaction.subscriptionGroupId
        purchaseDate = transaction.purchaseDate
        expiresDate = transaction.expiresDate
        revocationDate = transaction.revocationDate ?? revokedAt
        revocationReason = transaction.revocationReason
        isUpgraded = transaction.isUpgraded == true
        ownershipType = transaction.ownershipType
        offer = transaction.offer
        appAccountToken = transaction.appAccountToken
    }

    /// Whether this copy wins over `other`, a copy of the same transaction: the later
    /// ``knownFrom``; on equal dates, the fixed order of ``outranks(_:)``.
    func supersedes(_ other: LedgerTransaction) -> Bool {
        knownFrom != other.knownFrom ? knownFrom > other.knownFrom : outranks(other)
    }

    /// The order between two different copies signed at the same instant, which input order
    /// never decides: a copy that carries a revocation first (the earlier revocation date
    /// first), then the later `expiresDate`, the later `purchaseDate`, an upgraded copy, and last
    /// the greater canonical text of the copy (``canonicalText``).
    func outranks(_ other: LedgerTransaction) -> Bool {
        if (revocationDate == nil) != (other.revocationDate == nil) { return revocationDate != nil }
        if let mine = revocationDate, let theirs = other.revocationDate, mine != theirs { return mine < theirs }
        if expiresDate != other.expiresDate { return Timestamp.orderNilFirst(other.expiresDate, expiresDate) }
        if purchaseDate != other.purchaseDate { return Timestamp.orderNilFirst(other.purchaseDate, purchaseDate) }
        if isUpgraded != other.isUpgraded { return isUpgraded }
        return other.canonicalText.utf8.lexicographicallyPrecedes(canonicalText.utf8)
    }

    /// Every member in a fixed order: the last tie-break between two distinct copies.
    var canonicalText: String {
        let members: [String?] = [
            productId, productType, subscriptionGroupId, revocationReason, ownershipType, appAccountToken,
            offer?.type, offer?.id, offer?.discountType, offer?.period,
        ]
        return members.map { $0.map { "\($0.utf8.count):\($0)" } ?? "-" }.joined(separator: "|")
    }
}

/// One signed copy of a subscription's renewal info, as the ledger keeps it.
struct LedgerRenewalInfo: Sendable, Hashable, Codable {
    /// The copy's `signedDate`: it counts from then on.
    let knownFrom: Timestamp
    let productId: String?
    let autoRenewProductId: String?
    /// 0 off, 1 on.
    let autoRenewStatus: Int32?
    let expirationIntent: Int32?
    let isInBillingRetryPeriod: Bool
    let gracePeriodExpiresDate: Timestamp?
    let renewalDate: Timestamp?
    let appAccountToken: String?

    init(_ renewalInfo: JWSRenewalInfo, knownFrom: Timestamp) {
        self.knownFrom = knownFrom
        productId = renewalInfo.productId
        autoRenewProductId = renewalInfo.autoRenewProductId
        autoRenewStatus = renewalInfo.autoRenewStatus
        expirationIntent = renewalInfo.expirationIntent
        isInBillingRetryPeriod = renewalInfo.isInBillingRetryPeriod == true
        gracePeriodExpiresDate = renewalInfo.gracePeriodExpiresDate
        renewalDate = renewalInfo.renewalDate
        appAccountToken = renewalInfo.appAccountToken
    }

    /// Whether this copy wins over `other`: the later ``knownFrom``; on equal dates, the later
    /// `renewalDate`, then the later grace period end, then billing retry, then the greater
    /// canonical text.
    func supersedes(_ other: LedgerRenewalInfo) -> Bool {
        if knownFrom != other.knownFrom { return knownFrom > other.knownFrom }
        if renewalDate != other.renewalDate { return Timestamp.orderNilFirst(other.renewalDate, renewalDate) }
        if gracePeriodExpiresDate != other.gracePeriodExpiresDate {
            return Timestamp.orderNilFirst(other.gracePeriodExpiresDate, gracePeriodExpiresDate)
        }
        if isInBillingRetryPeriod != other.isInBillingRetryPeriod { return isInBillingRetryPeriod }
        return other.canonicalText.utf8.lexicographicallyPrecedes(canonicalText.utf8)
    }

    var canonicalText: String {
        let members: [String?] = [
            productId, autoRenewProductId, autoRenewStatus.map(String.init), expirationIntent.map(String.init),
            appAccountToken,
        ]
        return members.map { $0.map { "\($0.utf8.count):\($0)" } ?? "-" }.joined(separator: "|")
    }
}

extension Timestamp {
    /// `lhs < rhs`, with `nil` before every instant.
    static func orderNilFirst(_ lhs: Timestamp?, _ rhs: Timestamp?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): false
        case (nil, _): true
        case (_, nil): false
        case let (lhs?, rhs?): lhs < rhs
        }
    }
}
