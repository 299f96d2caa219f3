/// What each customer is entitled to, folded from verified records only: one
/// ``SubscriptionState`` per ``SubscriptionKey`` at any instant, offline and deterministically.
///
/// The ledger accepts nothing but what ``AppStoreVerifier`` produced — verified transactions,
/// renewal infos, notifications (their nested transaction and renewal info), legacy receipts (their
/// in-app purchases) and ``VerificationRecord``s — so unverified data cannot enter it. It keeps
/// every distinct signed copy of each transaction and renewal info, because a state as of an
/// earlier instant needs the copies known then; a copy folded twice is stored once.
///
/// The result depends on the set of records alone: folding the same records in any order, any
/// number of times, or as two ledgers merged, gives the same states. The rules are in
/// ``state(for:at:)`` and in `docs/entitlement-state.md`.
///
/// ```swift
/// var ledger = EntitlementLedger()
/// ledger.add(try verifier.verifyNotification(signedPayload))
/// for state in ledger.states(at: Timestamp(Date())) where state.isEntitled { … }
/// ```
///
/// - Warning: Decoding (`Codable`) trusts the encoded data: decode only what your own service
///   encoded and stored, never a ledger that reached you from outside.
public struct EntitlementLedger: Sendable, Hashable {
    /// Every distinct copy of every transaction, by key, transaction id and signed date.
    private var transactions: [SubscriptionKey: [CopyID: LedgerTransaction]] = [:]
    /// Every distinct copy of every renewal info, by environment, original transaction id and
    /// signed date.
    private var renewalInfos: [RenewalKey: [Timestamp: LedgerRenewalInfo]] = [:]

    /// One copy of one transaction: its id and when it was signed.
    struct CopyID: Sendable, Hashable {
        let transactionId: String
        let knownFrom: Timestamp
    }

    /// An empty ledger.
    public init() {}

    /// Whether nothing has been folded in.
    public var isEmpty: Bool { transactions.isEmpty }

    /// The keys of every subscription or purchase a transaction was folded in for, sorted.
    public var keys: [SubscriptionKey] { transactions.keys.sorted() }

    // MARK: Folding

    /// Folds in a verified record's purchases and renewal info; records of other kinds (an
    /// AppTransaction, a realtime request, a notification without a transaction) add nothing.
    ///
    /// A transaction counts from its `signedDate`; a legacy receipt's in-app purchases from the
    /// receipt's creation date. A transaction nested in a `REFUND` or `REVOKE` notification counts
    /// as revoked at its `revocationDate`, or at the notification's `signedDate` when it carries
    /// none.
    ///
    /// - Parameter record: A verified record.
    public mutating func add(_ record: VerificationRecord) {
        let notificationDate = record.notification?.signedDate
        let isRevocation = ["REFUND", "REVOKE"].contains(record.notification?.rawNotificationType)
        let receiptDate = record.receipt?.receiptCreationDate
        for transaction in record.transactions {
            let knownFrom = transaction.signedDate ?? receiptDate ?? notificationDate ?? knownSinceAlways
            // A notification without a signedDate (early 2022) is dated by its nested JWS; with no
            // date anywhere, by the instant the record was validated at.
            let revokedAt = isRevocation ? notificationDate ?? transaction.signedDate ?? record.validatedAt : nil
            add(transaction, knownFrom: knownFrom, revokedAt: revokedAt)
        }
        if let renewalInfo = record.renewalInfo {
            add(renewalInfo, knownFrom: renewalInfo.signedDate ?? notificationDate ?? knownSinceAlways)
        }
    }

    /// Folds in a verified transaction.
    ///
    /// - Parameter transaction: A verified StoreKit 2 transaction.
    public mutating func add(_ transaction: Verified<JWSTransaction>) {
        add(VerificationRecord(transaction))
    }

    /// Folds in verified renewal info.
    ///
    /// - Parameter renewalInfo: Verified subscription renewal info.
    public mutating func add(_ renewalInfo: Verified<JWSRenewalInfo>) {
        add(renewalInfo.payload, knownFrom: renewalInfo.payload.signedDate ?? knownSinceAlways)
    }

    /// Folds in a verified notification's nested transaction and renewal info.
    ///
    /// - Parameter notification: A verified App Store Server Notification V2.
    public mutating func add(_ notification: VerifiedNotification) {
        add(VerificationRecord(notification))
    }

    /// Folds in a verified legacy receipt's in-app purchases, known from its creation date.
    ///
    /// - Parameter receipt: A verified legacy receipt.
    public mutating func add(_ receipt: Verified<AppReceipt>) {
        add(VerificationRecord(receipt))
    }

    /// Folds in everything another ledger holds.
    ///
    /// - Parameter other: Another ledger.
    public mutating func merge(_ other: EntitlementLedger) {
        for (key, copies) in other.transactions {
            for copy in copies.values { insert(copy, under: key) }
        }
        for (key, copies) in other.renewalInfos {
            for copy in copies.values { insert(copy, under: key) }
        }
    }

    private mutating func add(_ transaction: NormalizedTransaction, knownFrom: Timestamp, revokedAt: Timestamp?) {
        // A purchase without a transaction id cannot be told from another; Apple always writes one.
        guard let id = transaction.transactionId else { return }
        let key = SubscriptionKey(
            bundleId: transaction.bundleId ?? "", environment: transaction.environment ?? "",
            originalTransactionId: transaction.originalTransactionId ?? id)
        insert(LedgerTransaction(transaction, id: id, knownFrom: knownFrom, revokedAt: revokedAt), under: key)
    }

    private mutating func add(_ renewalInfo: JWSRenewalInfo, knownFrom: Timestamp) {
        guard let originalTransactionId = renewalInfo.originalTransactionId else { return }
        let key = RenewalKey(environment: renewalInfo.rawEnvironment ?? "", originalTransactionId: originalTransactionId)
        insert(LedgerRenewalInfo(renewalInfo, knownFrom: knownFrom), under: key)
    }

    private mutating func insert(_ copy: LedgerTransaction, under key: SubscriptionKey) {
        let id = CopyID(transactionId: copy.transactionId, knownFrom: copy.knownFrom)
        transactions[key, default: [:]][id, default: copy] = Self.winner(copy, transactions[key]?[id])
    }

    private mutating func insert(_ copy: LedgerRenewalInfo, under key: RenewalKey) {
        renewalInfos[key, default: [:]][copy.knownFrom, default: copy] = Self.winner(copy, renewalInfos[key]?[copy.knownFrom])
    }

    /// Of two copies with the same id and signed date (normally the same copy, folded twice), the
    /// one the fixed order ranks first.
    private static func winner(_ new: LedgerTransaction, _ old: LedgerTransaction?) -> LedgerTransaction {
        guard let old, old != new else { return new }
        return new.outranks(old) ? new : old
    }

    private static func winner(_ new: LedgerRenewalInfo, _ old: LedgerRenewalInfo?) -> LedgerRenewalInfo {
        guard let old, old != new else { return new }
        return new.supersedes(old) ? new : old
    }

    // MARK: State

    /// The state of every key with a transaction known at `instant`, sorted by key.
    ///
    /// - Parameter instant: The evaluation instant.
    /// - Returns: One state per key.
    public func states(at instant: Timestamp) -> [SubscriptionState] {
        keys.compactMap { state(for: $0, at: instant) }
    }

    /// The state of one key at `instant`, or `nil` when no transaction of it was known then.
    ///
    /// The rules, in `docs/entitlement-state.md` with examples:
    /// 1. Only copies signed at or before `instant` count. Of the copies of one transaction, the
    ///    latest signed wins (equal dates: ``LedgerTransaction/outranks(_:)``).
    /// 2. The current transaction: the latest `purchaseDate` among those not upgraded (ties: the
    ///    later `expiresDate`, then the higher transaction id); it may start after `instant`.
    /// 3. The renewal info in use: the latest signed at or before `instant`; *fresh* when signed
    ///    at or after the current transaction's purchase. The period end is the current
    ///    transaction's `expiresDate`, or a fresh renewal info's later `renewalDate`.
    /// 4. Status, first match wins: revoked, active, grace period, billing retry, expired
    ///    (see ``SubscriptionStatus``).
    ///
    /// - Parameters:
    ///   - key: The subscription or purchase.
    ///   - instant: The evaluation instant.
    /// - Returns: Its state, or `nil`.
    public func state(for key: SubscriptionKey, at instant: Timestamp) -> SubscriptionState? {
        guard let copies = transactions[key] else { return nil }
        var latest: [String: LedgerTransaction] = [:]
        var lastSigned = knownSinceAlways
        for copy in copies.values where copy.knownFrom <= instant {
            lastSigned = max(lastSigned, copy.knownFrom)
            if let kept = latest[copy.transactionId], !copy.supersedes(kept) { continue }
            latest[copy.transactionId] = copy
        }
        var renewalInfo: LedgerRenewalInfo?
        for copy in renewalInfos[key.renewalKey]?.values ?? [:].values where copy.knownFrom <= instant {
            lastSigned = max(lastSigned, copy.knownFrom)
            if let kept = renewalInfo, !copy.supersedes(kept) { continue }
            renewalInfo = copy
        }
        return SubscriptionState(key: key, transactions: Array(latest.values), renewalInfo: renewalInfo,
                                 lastSignedDate: lastSigned, at: instant)
    }
}

// MARK: Codable

extension EntitlementLedger: Codable {
    private enum CodingKeys: String, CodingKey {
        case version, transactions
        case renewalInfos = "renewal_infos"
    }

    private struct KeyedTransaction: Codable {
        let key: SubscriptionKey
        let copy: LedgerTransaction
    }

    private struct KeyedRenewalInfo: Codable {
        let key: RenewalKey
        let copy: LedgerRenewalInfo
    }

    /// The encoding's format, written first so that a later format can still read this one.
    private static let formatVersion = 1

    /// Encodes every copy, sorted, so that equal ledgers encode to the same bytes with a
    /// `JSONEncoder` whose `outputFormatting` includes `.sortedKeys`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.formatVersion, forKey: .version)
        let keyedTransactions = transactions.flatMap { key, copies in
            copies.values.map { KeyedTransaction(key: key, copy: $0) }
        }.sorted { lhs, rhs in
            if lhs.key != rhs.key { return lhs.key < rhs.key }
            if lhs.copy.transactionId != rhs.copy.transactionId {
                return lhs.copy.transactionId.utf8.lexicographicallyPrecedes(rhs.copy.transactionId.utf8)
            }
            return lhs.copy.knownFrom < rhs.copy.knownFrom
        }
        try container.encode(keyedTransactions, forKey: .transactions)
        let keyedRenewalInfos = renewalInfos.flatMap { key, copies in
            copies.values.map { KeyedRenewalInfo(key: key, copy: $0) }
        }.sorted { lhs, rhs in
            if lhs.key.environment != rhs.key.environment {
                return lhs.key.environment.utf8.lexicographicallyPrecedes(rhs.key.environment.utf8)
            }
            if lhs.key.originalTransactionId != rhs.key.originalTransactionId {
                return lhs.key.originalTransactionId.utf8.lexicographicallyPrecedes(rhs.key.originalTransactionId.utf8)
            }
            return lhs.copy.knownFrom < rhs.copy.knownFrom
        }
        try container.encode(keyedRenewalInfos, forKey: .renewalInfos)
    }

    /// Decodes a ledger this type encoded.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decode(Int.self, forKey: .version)
        guard version == Self.formatVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: container,
                debugDescription: "entitlement ledger format \(version) is not \(Self.formatVersion)")
        }
        self.init()
        for entry in try container.decode([KeyedTransaction].self, forKey: .transactions) {
            insert(entry.copy, under: entry.key)
        }
        for entry in try container.decode([KeyedRenewalInfo].self, forKey: .renewalInfos) {
            insert(entry.copy, under: entry.key)
        }
    }
}
