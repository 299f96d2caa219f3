/// One signed copy of a transaction, or of a subscription's renewal info, as an
/// ``EntitlementLedger`` keeps it: the unit a store persists row by row, so that folding a record
/// costs that record alone whatever the key's history.
///
/// A store keeps every copy (a state as of an earlier instant needs the copies known then),
/// one per identity (``isSameCopy(as:)``): when a second copy with the same identity arrives, it
/// keeps the one that ``supersedes(_:)`` the other. To evaluate a key it puts the copies it
/// read into a ledger (``EntitlementLedger/insert(_:)``) and asks the ledger: the rules are the
/// ledger's alone.
public struct LedgerCopy: Sendable, Hashable {
    /// What a copy is of.
    public enum Kind: Sendable, Hashable {
        /// A transaction: a purchase, a renewal, a refunded or upgraded copy of one.
        case transaction
        /// A subscription's renewal info (keyed by environment and original transaction id:
        /// it carries no bundle id).
        case renewalInfo
    }

    enum Content: Sendable, Hashable {
        case transaction(SubscriptionKey, LedgerTransaction)
        case renewalInfo(RenewalKey, LedgerRenewalInfo)
    }

    let content: Content

    init(_ copy: LedgerTransaction, under key: SubscriptionKey) {
        content = .transaction(key, copy)
    }

    init(_ copy: LedgerRenewalInfo, under key: RenewalKey) {
        content = .renewalInfo(key, copy)
    }

    /// A transaction or renewal info.
    public var kind: Kind {
        switch content {
        case .transaction: .transaction
        case .renewalInfo: .renewalInfo
        }
    }

    /// The key of a transaction's copy; `nil` for renewal info.
    public var key: SubscriptionKey? {
        guard case .transaction(let key, _) = content else { return nil }
        return key
    }

    /// The environment as Apple writes it (empty when absent).
    public var environment: String {
        switch content {
        case .transaction(let key, _): key.environment
        case .renewalInfo(let key, _): key.environment
        }
    }

    /// The original transaction id the copy belongs to.
    public var originalTransactionId: String {
        switch content {
        case .transaction(let key, _): key.originalTransactionId
        case .renewalInfo(let key, _): key.originalTransactionId
        }
    }

    /// The transaction id of a transaction's copy; `nil` for renewal info.
    public var transactionId: String? {
        guard case .transaction(_, let copy) = content else { return nil }
        return copy.id.description
    }

    /// The instant the copy counts from: its `signedDate` (a legacy receipt's creation date).
    public var knownFrom: Timestamp {
        switch content {
        case .transaction(_, let copy): copy.knownFrom
        case .renewalInfo(_, let copy): copy.knownFrom
        }
    }

    /// A transaction's `purchaseDate`; `nil` for renewal info.
    public var purchaseDate: Timestamp? {
        guard case .transaction(_, let copy) = content else { return nil }
        return copy.purchaseDate
    }

    /// A transaction's `expiresDate`; `nil` for renewal info.
    public var expiresDate: Timestamp? {
        guard case .transaction(_, let copy) = content else { return nil }
        return copy.expiresDate
    }

    /// A transaction's revocation date as the ledger counts it (the transaction's own, or the
    /// `REFUND`/`REVOKE` notification's); `nil` for renewal info.
    public var revocationDate: Timestamp? {
        guard case .transaction(_, let copy) = content else { return nil }
        return copy.revocationDate
    }

    /// Whether a transaction's copy says it was upgraded away; `false` for renewal info.
    public var isUpgraded: Bool {
        guard case .transaction(_, let copy) = content else { return false }
        return copy.isUpgraded
    }

    /// The offer a transaction's copy was bought with (its type and identifier: a promotional
    /// offer redeemed, say); `nil` for renewal info and for a transaction without one.
    public var offer: NormalizedTransaction.Offer? {
        guard case .transaction(_, let copy) = content else { return nil }
        return copy.traits.offer
    }

    /// Whether `other` has this copy's identity — the same transaction of the same key (or the
    /// same subscription's renewal info) signed at the same instant — so that a store keeps one
    /// of the two.
    public func isSameCopy(as other: LedgerCopy) -> Bool {
        switch (content, other.content) {
        case let (.transaction(key, copy), .transaction(otherKey, otherCopy)):
            key == otherKey && copy.id == otherCopy.id && copy.knownFrom == otherCopy.knownFrom
        case let (.renewalInfo(key, copy), .renewalInfo(otherKey, otherCopy)):
            key == otherKey && copy.knownFrom == otherCopy.knownFrom
        default:
            false
        }
    }

    /// Whether `other` is a copy of the same transaction (or of the same subscription's renewal
    /// info), signed at any instant.
    public func isCopy(ofTheSameAs other: LedgerCopy) -> Bool {
        switch (content, other.content) {
        case let (.transaction(key, copy), .transaction(otherKey, otherCopy)):
            key == otherKey && copy.id == otherCopy.id
        case let (.renewalInfo(key, _), .renewalInfo(otherKey, _)):
            key == otherKey
        default:
            false
        }
    }

    /// Whether this copy says what `other` says: a copy of the same transaction (or of the same
    /// subscription's renewal info) equal in every member the ledger keeps — dates, revocation,
    /// upgrade, product, offer, ownership, app account token; for renewal info the renewal date,
    /// grace period, billing retry, auto-renew status and product, expiration intent — and
    /// different, if at all, in its signed date alone. Apple signs every answer anew: a store
    /// may keep the first and the last signing of such a run rather than every one (see
    /// `docs/reconciliation.md`).
    public func repeats(_ other: LedgerCopy) -> Bool {
        switch (content, other.content) {
        case let (.transaction(key, copy), .transaction(otherKey, otherCopy)):
            key == otherKey && copy.dated(otherCopy.knownFrom) == otherCopy
        case let (.renewalInfo(key, copy), .renewalInfo(otherKey, otherCopy)):
            key == otherKey && copy.dated(otherCopy.knownFrom) == otherCopy
        default:
            false
        }
    }

    /// Rule 1: of two copies of the same transaction (or renewal info), whether this one wins
    /// over `other` — the later signed; at the same instant, the fixed order of
    /// `docs/entitlement-state.md`, which input order never decides. `false` for copies of
    /// different things.
    public func supersedes(_ other: LedgerCopy) -> Bool {
        guard isCopy(ofTheSameAs: other) else { return false }
        switch (content, other.content) {
        case let (.transaction(_, copy), .transaction(_, otherCopy)): return copy.supersedes(otherCopy)
        case let (.renewalInfo(_, copy), .renewalInfo(_, otherCopy)): return copy.supersedes(otherCopy)
        default: return false
        }
    }

    // MARK: Stored form

    /// The copy as compact JSON: the same object an element of ``EntitlementLedger/jsonBytes()``'s
    /// `transactions` or `renewal_infos` array is, read back by ``init(jsonBytes:kind:)``.
    public func jsonBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(448)
        JSONWriter.append(to: &bytes, pretty: false) { writer in
            switch content {
            case .transaction(let key, let copy): EntitlementLedger.write(copy, under: key, to: &writer)
            case .renewalInfo(let key, let copy): EntitlementLedger.write(copy, under: key, to: &writer)
            }
        }
        return bytes
    }

    /// Reads a copy that ``jsonBytes()`` wrote.
    ///
    /// - Parameters:
    ///   - bytes: The UTF-8 JSON text.
    ///   - kind: What the copy is of (a store keeps the two kinds apart).
    /// - Throws: ``ReceiptKitError`` with code ``ReceiptKitError/Code/malformedLedger`` when the
    ///   text is not a strict JSON object of that kind's members (the reason names the member).
    ///
    /// - Warning: Decoding trusts the encoded data: decode only what your own service encoded
    ///   and stored, never a copy that reached you from outside.
    public init(jsonBytes bytes: [UInt8], kind: Kind) throws {
        let what = kind == .transaction ? "ledger transaction copy" : "ledger renewal info copy"
        let document = try JSONDocument(parsingObject: bytes, code: .malformedLedger, what: what, allowingNUL: true)
        self = try document.withRoot(code: .malformedLedger) { root in
            switch kind {
            case .transaction:
                let (key, copy) = try EntitlementLedger.transaction(root)
                return LedgerCopy(copy, under: key)
            case .renewalInfo:
                let (key, copy) = try EntitlementLedger.renewalInfo(root)
                return LedgerCopy(copy, under: key)
            }
        }
    }
}

extension EntitlementLedger {
    /// The copies a verified record folds in, as ``add(_:)-(VerificationRecord)`` would add them:
    /// each transaction's, dated and revoked as that method says, and its renewal info's.
    ///
    /// - Parameter record: A verified record.
    /// - Returns: Its copies; none for a record of another kind.
    public static func copies(of record: VerificationRecord) -> [LedgerCopy] {
        let notificationDate = record.notification?.signedDate
        let isRevocation = ["REFUND", "REVOKE"].contains(record.notification?.rawNotificationType)
        let receiptDate = record.receipt?.receiptCreationDate
        var copies: [LedgerCopy] = []
        copies.reserveCapacity(record.transactions.count + 1)
        for transaction in record.transactions {
            let knownFrom = transaction.signedDate ?? receiptDate ?? notificationDate ?? knownSinceAlways
            // A notification without a signedDate (early 2022) is dated by its nested JWS; with no
            // date anywhere, by the instant the record was validated at.
            let revokedAt = isRevocation ? notificationDate ?? transaction.signedDate ?? record.validatedAt : nil
            if let copy = copy(of: transaction, knownFrom: knownFrom, revokedAt: revokedAt) { copies.append(copy) }
        }
        if let renewalInfo = record.renewalInfo,
           let copy = copy(of: renewalInfo, knownFrom: renewalInfo.signedDate ?? notificationDate ?? knownSinceAlways) {
            copies.append(copy)
        }
        return copies
    }

    /// The copy of a transaction of a stored record, dated as ``copies(of:)`` dates it: for a
    /// caller that holds a record's parts rather than the record (a record read back from its
    /// JSON, say).
    ///
    /// - Parameters:
    ///   - transaction: One of the record's transactions.
    ///   - receiptCreationDate: The legacy receipt's creation date, when the record is one.
    ///   - notificationSignedDate: The notification's `signedDate`, when the record is one.
    ///   - isRevocation: Whether the notification is a `REFUND` or `REVOKE`.
    ///   - validatedAt: The instant the record was validated at.
    /// - Returns: The copy, or `nil` when the transaction carries no transaction id.
    public static func copy(
        of transaction: NormalizedTransaction, receiptCreationDate: Timestamp?, notificationSignedDate: Timestamp?,
        isRevocation: Bool, validatedAt: Timestamp
    ) -> LedgerCopy? {
        let knownFrom = transaction.signedDate ?? receiptCreationDate ?? notificationSignedDate ?? knownSinceAlways
        let revokedAt = isRevocation ? notificationSignedDate ?? transaction.signedDate ?? validatedAt : nil
        return copy(of: transaction, knownFrom: knownFrom, revokedAt: revokedAt)
    }

    /// The copy of a stored record's renewal info, dated as ``copies(of:)`` dates it (its
    /// `signedDate`, else the notification's): for a caller that holds the record's members
    /// rather than the record.
    ///
    /// - Parameters:
    ///   - originalTransactionId: The renewal info's original transaction id.
    ///   - environment: Its environment as Apple writes it (empty when absent).
    ///   - signedDate: Its `signedDate`.
    ///   - notificationSignedDate: The notification's `signedDate`, when it came in one.
    ///   - renewalDate: `renewalDate`.
    ///   - gracePeriodExpiresDate: `gracePeriodExpiresDate`.
    ///   - autoRenewStatus: `autoRenewStatus` (0 off, 1 on).
    ///   - expirationIntent: `expirationIntent`.
    ///   - isInBillingRetryPeriod: `isInBillingRetryPeriod`.
    ///   - productId: `productId`.
    ///   - autoRenewProductId: `autoRenewProductId`.
    ///   - appAccountToken: `appAccountToken`.
    /// - Returns: The copy.
    public static func renewalInfoCopy(
        originalTransactionId: String, environment: String, signedDate: Timestamp?, notificationSignedDate: Timestamp?,
        renewalDate: Timestamp?, gracePeriodExpiresDate: Timestamp?, autoRenewStatus: Int32?, expirationIntent: Int32?,
        isInBillingRetryPeriod: Bool, productId: String?, autoRenewProductId: String?, appAccountToken: String?
    ) -> LedgerCopy {
        LedgerCopy(LedgerRenewalInfo(
            knownFrom: signedDate ?? notificationSignedDate ?? knownSinceAlways, gracePeriodExpiresDate: gracePeriodExpiresDate,
            renewalDate: renewalDate, autoRenewStatus: autoRenewStatus, expirationIntent: expirationIntent,
            isInBillingRetryPeriod: isInBillingRetryPeriod,
            traits: RenewalTraits(productId: productId, autoRenewProductId: autoRenewProductId, appAccountToken: appAccountToken)),
            under: RenewalKey(environment: environment, originalTransactionId: originalTransactionId))
    }

    private static func copy(of transaction: NormalizedTransaction, knownFrom: Timestamp, revokedAt: Timestamp?) -> LedgerCopy? {
        guard let id = transaction.transactionId, let key = SubscriptionKey(transaction) else { return nil }
        let traits = TransactionTraits(
            productId: transaction.productId, productType: transaction.productType,
            subscriptionGroupId: transaction.subscriptionGroupId, revocationReason: transaction.revocationReason,
            ownershipType: transaction.ownershipType, offer: transaction.offer, appAccountToken: transaction.appAccountToken)
        return LedgerCopy(LedgerTransaction(
            id: TransactionID(id), knownFrom: knownFrom, purchaseDate: transaction.purchaseDate,
            expiresDate: transaction.expiresDate, revocationDate: transaction.revocationDate ?? revokedAt,
            isUpgraded: transaction.isUpgraded == true, traits: traits), under: key)
    }

    static func copy(of renewalInfo: JWSRenewalInfo, knownFrom: Timestamp) -> LedgerCopy? {
        guard let originalTransactionId = renewalInfo.originalTransactionId else { return nil }
        let key = RenewalKey(environment: renewalInfo.rawEnvironment ?? "", originalTransactionId: originalTransactionId)
        let traits = RenewalTraits(
            productId: renewalInfo.productId, autoRenewProductId: renewalInfo.autoRenewProductId,
            appAccountToken: renewalInfo.appAccountToken)
        return LedgerCopy(LedgerRenewalInfo(
            knownFrom: knownFrom, gracePeriodExpiresDate: renewalInfo.gracePeriodExpiresDate,
            renewalDate: renewalInfo.renewalDate, autoRenewStatus: renewalInfo.autoRenewStatus,
            expirationIntent: renewalInfo.expirationIntent, isInBillingRetryPeriod: renewalInfo.isInBillingRetryPeriod == true,
            traits: traits), under: key)
    }

    /// Folds in one copy: kept once per identity, the winner of rule 1 when a copy with the same
    /// identity is there.
    ///
    /// - Parameter copy: A copy from ``copies(of:)``, or one a store read back.
    public mutating func insert(_ copy: LedgerCopy) {
        switch copy.content {
        case .transaction(let key, let transaction): insert(transaction, under: key)
        case .renewalInfo(let key, let renewalInfo): insert(renewalInfo, under: key)
        }
    }

    /// Every copy the ledger holds: the transactions' by key, then the renewal infos' by key,
    /// each in the ledger's own order.
    public var copies: [LedgerCopy] {
        transactions.keys.sorted().flatMap { key in transactions[key, default: []].map { LedgerCopy($0, under: key) } }
            + renewalInfos.keys.sorted().flatMap { key in renewalInfos[key, default: []].map { LedgerCopy($0, under: key) } }
    }
}
