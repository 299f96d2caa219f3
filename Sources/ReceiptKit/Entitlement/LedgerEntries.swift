// What the entitlement ledger keeps of each verified record: only the members subscription state
// depends on, with the instant from which the copy was known, stored compactly — an archive holds
// hundreds of thousands of transactions, and most of their members repeat.

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

    /// The key a purchase is folded under, or `nil` without a transaction id (it cannot be told
    /// from another; Apple always writes one). A missing original transaction id stands for the
    /// transaction's own; a missing bundle id or environment is empty.
    ///
    /// - Parameter transaction: A verified record's normalized transaction.
    public init?(_ transaction: NormalizedTransaction) {
        guard let id = transaction.transactionId else { return nil }
        self.init(bundleId: transaction.bundleId ?? "", environment: transaction.environment ?? "",
                  originalTransactionId: transaction.originalTransactionId ?? id)
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
struct RenewalKey: Sendable, Hashable, Codable, Comparable {
    let environment: String
    let originalTransactionId: String

    static func < (lhs: RenewalKey, rhs: RenewalKey) -> Bool {
        if lhs.environment != rhs.environment {
            return lhs.environment.utf8.lexicographicallyPrecedes(rhs.environment.utf8)
        }
        return lhs.originalTransactionId.utf8.lexicographicallyPrecedes(rhs.originalTransactionId.utf8)
    }
}

/// The instant a copy was known from when it carries no signed date: before everything, so a
/// dated copy always wins over it.
let knownSinceAlways = Timestamp(millisecondsSince1970: Int64.min)

/// A transaction id: Apple's are decimal numbers, kept as one (no allocation); any other text is
/// kept as written.
enum TransactionID: Sendable, Hashable, Comparable, CustomStringConvertible {
    case number(UInt64)
    case text(String)

    init(_ text: String) {
        // Canonical decimal only ("0", or no leading zero), up to 19 digits: it prints back the same.
        let digits = text.utf8
        if !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
           digits.first != 0x30 || digits.count == 1, let value = UInt64(text) {
            self = .number(value)
        } else {
            self = .text(text)
        }
    }

    var description: String {
        switch self {
        case .number(let value): String(value)
        case .text(let text): text
        }
    }

    /// The documented order of "the higher transaction id": numerically when both are decimal,
    /// else by UTF-8 bytes.
    static func < (lhs: TransactionID, rhs: TransactionID) -> Bool {
        if case .number(let left) = lhs, case .number(let right) = rhs { return left < right }
        return SubscriptionState.transactionIdPrecedes(lhs.description, rhs.description)
    }
}

/// An optional instant in 8 bytes: `Int64.min` stands for `nil` (no date Apple writes is that).
struct PackedInstant: Sendable, Hashable {
    private let milliseconds: Int64

    init(_ timestamp: Timestamp?) {
        milliseconds = timestamp.map { max($0.millisecondsSince1970, Int64.min + 1) } ?? Int64.min
    }

    var value: Timestamp? {
        milliseconds == Int64.min ? nil : Timestamp(millisecondsSince1970: milliseconds)
    }
}

/// The members of a transaction that repeat from copy to copy and renewal to renewal (product,
/// type, group, offer, ownership, token, revocation reason): one shared instance per distinct
/// value in a ledger.
final class TransactionTraits: Sendable, Hashable {
    let productId: String?
    /// Normalized, as in the transaction record: `auto_renewable_subscription`, `consumable`, …
    let productType: String?
    let subscriptionGroupId: String?
    /// Normalized, as in the transaction record.
    let revocationReason: String?
    let ownershipType: String?
    let offer: NormalizedTransaction.Offer?
    let appAccountToken: String?

    init(productId: String?, productType: String?, subscriptionGroupId: String?, revocationReason: String?,
         ownershipType: String?, offer: NormalizedTransaction.Offer?, appAccountToken: String?) {
        self.productId = productId
        self.productType = productType
        self.subscriptionGroupId = subscriptionGroupId
        self.revocationReason = revocationReason
        self.ownershipType = ownershipType
        self.offer = offer
        self.appAccountToken = appAccountToken
    }

    static func == (lhs: TransactionTraits, rhs: TransactionTraits) -> Bool {
        lhs === rhs || (lhs.productId == rhs.productId && lhs.productType == rhs.productType
            && lhs.subscriptionGroupId == rhs.subscriptionGroupId && lhs.revocationReason == rhs.revocationReason
            && lhs.ownershipType == rhs.ownershipType && lhs.offer == rhs.offer
            && lhs.appAccountToken == rhs.appAccountToken)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(productId)
        hasher.combine(productType)
        hasher.combine(subscriptionGroupId)
        hasher.combine(revocationReason)
        hasher.combine(ownershipType)
        hasher.combine(offer)
        hasher.combine(appAccountToken)
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

/// The members of renewal info that repeat from copy to copy: one shared instance per distinct
/// value in a ledger.
final class RenewalTraits: Sendable, Hashable {
    let productId: String?
    let autoRenewProductId: String?
    let appAccountToken: String?

    init(productId: String?, autoRenewProductId: String?, appAccountToken: String?) {
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.appAccountToken = appAccountToken
    }

    static func == (lhs: RenewalTraits, rhs: RenewalTraits) -> Bool {
        lhs === rhs || (lhs.productId == rhs.productId && lhs.autoRenewProductId == rhs.autoRenewProductId
            && lhs.appAccountToken == rhs.appAccountToken)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(productId)
        hasher.combine(autoRenewProductId)
        hasher.combine(appAccountToken)
    }
}

/// One signed copy of one transaction, as the ledger keeps it.
struct LedgerTransaction: Sendable, Hashable {
    // Eight-byte members first and the id last: 64 bytes a copy.
    /// The copy's `signedDate` (a legacy receipt's creation date): it counts from then on.
    let knownFrom: Timestamp
    private let packedPurchaseDate: PackedInstant
    private let packedExpiresDate: PackedInstant
    private let packedRevocationDate: PackedInstant
    let traits: TransactionTraits
    let id: TransactionID
    let isUpgraded: Bool

    init(id: TransactionID, knownFrom: Timestamp, purchaseDate: Timestamp?, expiresDate: Timestamp?,
         revocationDate: Timestamp?, isUpgraded: Bool, traits: TransactionTraits) {
        self.id = id
        self.knownFrom = knownFrom
        packedPurchaseDate = PackedInstant(purchaseDate)
        packedExpiresDate = PackedInstant(expiresDate)
        packedRevocationDate = PackedInstant(revocationDate)
        self.isUpgraded = isUpgraded
        self.traits = traits
    }

    var purchaseDate: Timestamp? { packedPurchaseDate.value }
    var expiresDate: Timestamp? { packedExpiresDate.value }
    var revocationDate: Timestamp? { packedRevocationDate.value }

    /// Rule 1: whether this copy wins over `other`, a copy of the same transaction: the later
    /// ``knownFrom``; on equal dates, the fixed order of ``outranks(_:)``.
    func supersedes(_ other: LedgerTransaction) -> Bool {
        knownFrom != other.knownFrom ? knownFrom > other.knownFrom : outranks(other)
    }

    /// The order between two different copies signed at the same instant, which input order
    /// never decides: a copy that carries a revocation first (the earlier revocation date
    /// first), then the later `expiresDate`, the later `purchaseDate`, an upgraded copy, and last
    /// the greater canonical text of the copy (``TransactionTraits/canonicalText``).
    func outranks(_ other: LedgerTransaction) -> Bool {
        if (revocationDate == nil) != (other.revocationDate == nil) { return revocationDate != nil }
        if let mine = revocationDate, let theirs = other.revocationDate, mine != theirs { return mine < theirs }
        if expiresDate != other.expiresDate { return Timestamp.orderNilFirst(other.expiresDate, expiresDate) }
        if purchaseDate != other.purchaseDate { return Timestamp.orderNilFirst(other.purchaseDate, purchaseDate) }
        if isUpgraded != other.isUpgraded { return isUpgraded }
        return other.traits.canonicalText.utf8.lexicographicallyPrecedes(traits.canonicalText.utf8)
    }

    /// The same copy signed at another instant.
    func dated(_ knownFrom: Timestamp) -> LedgerTransaction {
        LedgerTransaction(id: id, knownFrom: knownFrom, purchaseDate: purchaseDate, expiresDate: expiresDate,
                          revocationDate: revocationDate, isUpgraded: isUpgraded, traits: traits)
    }

    /// The same copy with `traits` (an equal value, shared from another ledger's pool).
    func sharing(_ traits: TransactionTraits) -> LedgerTransaction {
        LedgerTransaction(id: id, knownFrom: knownFrom, purchaseDate: purchaseDate, expiresDate: expiresDate,
                          revocationDate: revocationDate, isUpgraded: isUpgraded, traits: traits)
    }

    /// The order copies are stored in within a key: transaction id, then signed date.
    func isStored(before other: LedgerTransaction) -> Bool {
        id != other.id ? id < other.id : knownFrom < other.knownFrom
    }
}

/// One signed copy of a subscription's renewal info, as the ledger keeps it.
struct LedgerRenewalInfo: Sendable, Hashable {
    /// The copy's `signedDate`: it counts from then on.
    let knownFrom: Timestamp
    private let packedGracePeriodExpiresDate: PackedInstant
    private let packedRenewalDate: PackedInstant
    /// 0 off, 1 on.
    let autoRenewStatus: Int32?
    let expirationIntent: Int32?
    let isInBillingRetryPeriod: Bool
    let traits: RenewalTraits

    init(knownFrom: Timestamp, gracePeriodExpiresDate: Timestamp?, renewalDate: Timestamp?, autoRenewStatus: Int32?,
         expirationIntent: Int32?, isInBillingRetryPeriod: Bool, traits: RenewalTraits) {
        self.knownFrom = knownFrom
        packedGracePeriodExpiresDate = PackedInstant(gracePeriodExpiresDate)
        packedRenewalDate = PackedInstant(renewalDate)
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.traits = traits
    }

    /// The same copy signed at another instant.
    func dated(_ knownFrom: Timestamp) -> LedgerRenewalInfo {
        LedgerRenewalInfo(knownFrom: knownFrom, gracePeriodExpiresDate: gracePeriodExpiresDate, renewalDate: renewalDate,
                          autoRenewStatus: autoRenewStatus, expirationIntent: expirationIntent,
                          isInBillingRetryPeriod: isInBillingRetryPeriod, traits: traits)
    }

    /// The same copy with `traits` (an equal value, shared from another ledger's pool).
    func sharing(_ traits: RenewalTraits) -> LedgerRenewalInfo {
        LedgerRenewalInfo(knownFrom: knownFrom, gracePeriodExpiresDate: gracePeriodExpiresDate, renewalDate: renewalDate,
                          autoRenewStatus: autoRenewStatus, expirationIntent: expirationIntent,
                          isInBillingRetryPeriod: isInBillingRetryPeriod, traits: traits)
    }

    var gracePeriodExpiresDate: Timestamp? { packedGracePeriodExpiresDate.value }
    var renewalDate: Timestamp? { packedRenewalDate.value }

    /// Rule 1 for renewal info (rule 3 uses the winner): whether this copy wins over `other`: the
    /// later ``knownFrom``; on equal dates, the later `renewalDate`, then the later grace period
    /// end, then billing retry, then the greater canonical text.
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
            traits.productId, traits.autoRenewProductId, autoRenewStatus.map(String.init),
            expirationIntent.map(String.init), traits.appAccountToken,
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
