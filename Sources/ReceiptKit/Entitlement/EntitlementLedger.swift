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
/// To store a ledger, ``jsonBytes()`` and ``init(jsonBytes:)`` write and read the same JSON as its
/// `Codable` conformance does with `JSONEncoder` and `JSONDecoder`: writing costs about a seventh
/// of `JSONEncoder`'s instructions, and reading is strict.
///
/// - Warning: Decoding (``init(jsonBytes:)`` or `Codable`) trusts the encoded data: decode only
///   what your own service encoded and stored, never a ledger that reached you from outside.
public struct EntitlementLedger: Sendable, Hashable {
    /// Every distinct copy of every transaction, by key; each array sorted by transaction id, then
    /// signed date, one entry per id and date. Changed only through ``insert(_:under:)``.
    private(set) var transactions: [SubscriptionKey: [LedgerTransaction]] = [:]
    /// Every distinct copy of every renewal info, by environment and original transaction id;
    /// each array sorted by signed date, one entry per date. Changed only through `insert`.
    private(set) var renewalInfos: [RenewalKey: [LedgerRenewalInfo]] = [:]
    /// One shared instance of each distinct repeating value, so a renewal costs its dates and ids.
    private var pool = Pool()

    /// An empty ledger.
    public init() {}

    /// Whether nothing has been folded in.
    public var isEmpty: Bool { transactions.isEmpty }

    /// The keys of every subscription or purchase a transaction was folded in for, sorted.
    public var keys: [SubscriptionKey] { transactions.keys.sorted() }

    public static func == (lhs: EntitlementLedger, rhs: EntitlementLedger) -> Bool {
        lhs.transactions == rhs.transactions && lhs.renewalInfos == rhs.renewalInfos
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(transactions)
        hasher.combine(renewalInfos)
    }

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
        for copy in Self.copies(of: record) { insert(copy) }
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
        if let copy = Self.copy(of: renewalInfo.payload, knownFrom: renewalInfo.payload.signedDate ?? knownSinceAlways) {
            insert(copy)
        }
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
            for copy in copies { insert(copy, under: key) }
        }
        for (key, copies) in other.renewalInfos {
            for copy in copies { insert(copy, under: key) }
        }
    }

    /// The keys a verified record's purchases are folded under, and the key its renewal info
    /// joins, sorted.
    ///
    /// A renewal info carries no bundle id. In the ledger it is kept by environment and original
    /// transaction id and joins every key that has them, whatever its bundle id (Apple's original
    /// transaction ids are unique across apps). Here it names the key under the bundle id of the
    /// notification that carries it (`data.bundleId`, which the verifier matched to a configured
    /// app, as it held the renewal info to that app), or else under `renewalInfoBundleId`. A
    /// renewal info verified on its own while several apps are configured names no app: a store
    /// looks up the keys it holds with the renewal info's environment and original transaction
    /// id, as ``state(for:at:)`` does.
    ///
    /// - Parameters:
    ///   - record: A verified record.
    ///   - renewalInfoBundleId: The bundle id to key a renewal info under when the record does not
    ///     name one (a renewal info on its own), if any.
    /// - Returns: The keys whose state the record can change.
    public static func keys(of record: VerificationRecord, renewalInfoBundleId: String? = nil) -> [SubscriptionKey] {
        var keys = Set(record.transactions.compactMap(SubscriptionKey.init))
        if let bundleId = record.notification?.bundleId ?? renewalInfoBundleId, let info = record.renewalInfo,
            let id = info.originalTransactionId {
            keys.insert(SubscriptionKey(bundleId: bundleId, environment: info.rawEnvironment ?? "", originalTransactionId: id))
        }
        return keys.sorted()
    }

    /// Stores a copy of a transaction — the one way into the ledger, for a fold, a merge or a
    /// decode: its key's strings and its repeating members shared through the pool, once per id
    /// and signed date; of two different copies with the same id and date, the one the fixed
    /// order ranks first.
    mutating func insert(_ copy: LedgerTransaction, under key: SubscriptionKey) {
        let key = SubscriptionKey(bundleId: pool.string(key.bundleId), environment: pool.string(key.environment),
                                  originalTransactionId: pool.string(key.originalTransactionId))
        let copy = copy.sharing(pool.traits(copy.traits))
        Self.insert(copy, into: &transactions[key, default: []], sameCopy: { $0.id == copy.id && $0.knownFrom == copy.knownFrom },
                    isBefore: { $0.isStored(before: $1) }, wins: { $0.supersedes($1) })
    }

    /// Stores a copy of renewal info, as ``insert(_:under:)`` does a transaction's.
    mutating func insert(_ copy: LedgerRenewalInfo, under key: RenewalKey) {
        let key = RenewalKey(environment: pool.string(key.environment),
                             originalTransactionId: pool.string(key.originalTransactionId))
        let copy = copy.sharing(pool.traits(copy.traits))
        Self.insert(copy, into: &renewalInfos[key, default: []], sameCopy: { $0.knownFrom == copy.knownFrom },
                    isBefore: { $0.knownFrom < $1.knownFrom }, wins: { $0.supersedes($1) })
    }

    /// Inserts `copy` into the sorted `copies` by binary search, or keeps the winner of the two
    /// when a copy with the same identity is there.
    private static func insert<Copy: Equatable>(
        _ copy: Copy, into copies: inout [Copy], sameCopy: (Copy) -> Bool, isBefore: (Copy, Copy) -> Bool,
        wins: (Copy, Copy) -> Bool
    ) {
        var low = 0
        var high = copies.count
        while low < high {
            let middle = (low + high) / 2
            if isBefore(copies[middle], copy) { low = middle + 1 } else { high = middle }
        }
        if low < copies.count, sameCopy(copies[low]) {
            if copies[low] != copy, wins(copy, copies[low]) { copies[low] = copy }
        } else {
            // Grow by a quarter, not double: a key holds a handful of copies, and an archive
            // hundreds of thousands of keys.
            if copies.count == copies.capacity { copies.reserveCapacity(copies.count + max(2, copies.count / 4)) }
            copies.insert(copy, at: low)
        }
    }

    /// Shared instances of repeating values.
    ///
    /// What the pool keeps, it keeps in storage of its own: a string parsed on a worker thread
    /// lives in that thread's allocator arena, and one string kept from each record would hold
    /// on to the pages of every record freed around it.
    private struct Pool: Sendable {
        private var strings: Set<String> = []
        private var transactionTraits: Set<TransactionTraits> = []
        private var renewalTraits: Set<RenewalTraits> = []

        mutating func string(_ value: String) -> String {
            if let index = strings.firstIndex(of: value) { return strings[index] }
            let owned = Self.owned(value)
            strings.insert(owned)
            return owned
        }

        mutating func traits(_ value: TransactionTraits) -> TransactionTraits {
            if let index = transactionTraits.firstIndex(of: value) { return transactionTraits[index] }
            let owned = TransactionTraits(
                productId: string(value.productId), productType: string(value.productType),
                subscriptionGroupId: string(value.subscriptionGroupId),
                revocationReason: string(value.revocationReason), ownershipType: string(value.ownershipType),
                offer: value.offer, appAccountToken: value.appAccountToken.map(Self.owned))
            transactionTraits.insert(owned)
            return owned
        }

        mutating func traits(_ value: RenewalTraits) -> RenewalTraits {
            if let index = renewalTraits.firstIndex(of: value) { return renewalTraits[index] }
            let owned = RenewalTraits(
                productId: string(value.productId), autoRenewProductId: string(value.autoRenewProductId),
                appAccountToken: value.appAccountToken.map(Self.owned))
            renewalTraits.insert(owned)
            return owned
        }

        mutating func string(_ value: String?) -> String? {
            guard let value else { return nil }
            return string(value)
        }

        /// A copy of `value` in new storage (a small string has none).
        private static func owned(_ value: String) -> String {
            String(decoding: Array(value.utf8), as: UTF8.self)
        }
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
    ///    latest signed wins (equal dates: the fixed order in `docs/entitlement-state.md`).
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
        // Rule 1. Sorted by id, then signed date (copies signed at the same instant were already
        // reduced to the one `LedgerTransaction.supersedes` ranks first): the last copy of each id
        // signed by `instant` wins.
        var latest: [LedgerTransaction] = []
        var lastSigned = knownSinceAlways
        for copy in copies where copy.knownFrom <= instant {
            lastSigned = max(lastSigned, copy.knownFrom)
            if let last = latest.last, last.id == copy.id {
                latest[latest.count - 1] = copy
            } else {
                latest.append(copy)
            }
        }
        // Rule 3's renewal info in use: the last signed by `instant` (ties reduced as above).
        let renewalInfo = renewalInfos[key.renewalKey]?.last { $0.knownFrom <= instant }
        if let renewalInfo { lastSigned = max(lastSigned, renewalInfo.knownFrom) }
        return SubscriptionState(key: key, transactions: latest, renewalInfo: renewalInfo, lastSignedDate: lastSigned,
                                 at: instant)
    }
}

// MARK: Codable

extension EntitlementLedger: Codable {
    private enum CodingKeys: String, CodingKey {
        case version, transactions
        case renewalInfos = "renewal_infos"
    }

    /// One stored transaction copy with its key, as encoded.
    private struct StoredTransaction: Codable {
        let key: SubscriptionKey
        let transactionId: String
        let knownFrom: Timestamp
        let purchaseDate: Timestamp?
        let expiresDate: Timestamp?
        let revocationDate: Timestamp?
        let isUpgraded: Bool
        let productId: String?
        let productType: String?
        let subscriptionGroupId: String?
        let revocationReason: String?
        let ownershipType: String?
        let offer: NormalizedTransaction.Offer?
        let appAccountToken: String?
    }

    /// One stored renewal info copy with its key, as encoded.
    private struct StoredRenewalInfo: Codable {
        let environment: String
        let originalTransactionId: String
        let knownFrom: Timestamp
        let gracePeriodExpiresDate: Timestamp?
        let renewalDate: Timestamp?
        let autoRenewStatus: Int32?
        let expirationIntent: Int32?
        let isInBillingRetryPeriod: Bool
        let productId: String?
        let autoRenewProductId: String?
        let appAccountToken: String?
    }

    /// The encoding's format, written first so that a later format can still read this one; the
    /// same for `Codable` and ``jsonBytes()``.
    static let formatVersion = 1

    /// Encodes every copy in the ledger's own sorted order, so that equal ledgers encode to the
    /// same bytes with a `JSONEncoder` whose `outputFormatting` includes `.sortedKeys`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.formatVersion, forKey: .version)
        let stored = transactions.keys.sorted().flatMap { key in
            transactions[key, default: []].map { copy in
                StoredTransaction(
                    key: key, transactionId: copy.id.description, knownFrom: copy.knownFrom,
                    purchaseDate: copy.purchaseDate, expiresDate: copy.expiresDate, revocationDate: copy.revocationDate,
                    isUpgraded: copy.isUpgraded, productId: copy.traits.productId, productType: copy.traits.productType,
                    subscriptionGroupId: copy.traits.subscriptionGroupId, revocationReason: copy.traits.revocationReason,
                    ownershipType: copy.traits.ownershipType, offer: copy.traits.offer,
                    appAccountToken: copy.traits.appAccountToken)
            }
        }
        try container.encode(stored, forKey: .transactions)
        let storedRenewalInfos = renewalInfos.keys.sorted().flatMap { key in
            renewalInfos[key, default: []].map { copy in
                StoredRenewalInfo(
                    environment: key.environment, originalTransactionId: key.originalTransactionId,
                    knownFrom: copy.knownFrom, gracePeriodExpiresDate: copy.gracePeriodExpiresDate,
                    renewalDate: copy.renewalDate, autoRenewStatus: copy.autoRenewStatus,
                    expirationIntent: copy.expirationIntent, isInBillingRetryPeriod: copy.isInBillingRetryPeriod,
                    productId: copy.traits.productId, autoRenewProductId: copy.traits.autoRenewProductId,
                    appAccountToken: copy.traits.appAccountToken)
            }
        }
        try container.encode(storedRenewalInfos, forKey: .renewalInfos)
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
        for stored in try container.decode([StoredTransaction].self, forKey: .transactions) {
            let traits = TransactionTraits(
                productId: stored.productId, productType: stored.productType,
                subscriptionGroupId: stored.subscriptionGroupId, revocationReason: stored.revocationReason,
                ownershipType: stored.ownershipType, offer: stored.offer, appAccountToken: stored.appAccountToken)
            insert(LedgerTransaction(
                id: TransactionID(stored.transactionId), knownFrom: stored.knownFrom, purchaseDate: stored.purchaseDate,
                expiresDate: stored.expiresDate, revocationDate: stored.revocationDate, isUpgraded: stored.isUpgraded,
                traits: traits), under: stored.key)
        }
        for stored in try container.decode([StoredRenewalInfo].self, forKey: .renewalInfos) {
            let key = RenewalKey(environment: stored.environment, originalTransactionId: stored.originalTransactionId)
            let traits = RenewalTraits(
                productId: stored.productId, autoRenewProductId: stored.autoRenewProductId,
                appAccountToken: stored.appAccountToken)
            insert(LedgerRenewalInfo(
                knownFrom: stored.knownFrom, gracePeriodExpiresDate: stored.gracePeriodExpiresDate,
                renewalDate: stored.renewalDate, autoRenewStatus: stored.autoRenewStatus,
                expirationIntent: stored.expirationIntent, isInBillingRetryPeriod: stored.isInBillingRetryPeriod,
                traits: traits), under: key)
        }
    }
}
