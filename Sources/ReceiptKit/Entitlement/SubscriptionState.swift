/// Where a subscription (or a one-time purchase) stands at an instant.
public enum SubscriptionStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Paid through a period that has not ended, or a one-time purchase that is owned.
    case active
    /// Renewal failed, but Apple's billing grace period has not ended: still entitled.
    case gracePeriod = "grace_period"
    /// Renewal failed and Apple is still retrying the charge (up to 60 days): not entitled.
    case billingRetry = "billing_retry"
    /// The last period ended and nothing renewed it.
    case expired
    /// Refunded or revoked (Family Sharing withdrawn), and no later period is known.
    case revoked

    /// Apple's own number for the status, as in `data.status` of a notification and Get All
    /// Subscription Statuses: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var appleStatus: Int {
        switch self {
        case .active: 1
        case .expired: 2
        case .billingRetry: 3
        case .gracePeriod: 4
        case .revoked: 5
        }
    }

    /// Whether the customer gets what they paid for: active or in a grace period.
    public var isEntitled: Bool {
        self == .active || self == .gracePeriod
    }
}

/// The state of one subscription or purchase at an instant, derived by ``EntitlementLedger``
/// from verified records only. ``json(pretty:)`` is what `verify-receipt --state` writes.
public struct SubscriptionState: Sendable, Hashable {
    /// The subscription or purchase.
    public let key: SubscriptionKey
    /// Where it stands.
    public let status: SubscriptionStatus
    /// Apple's number for ``status`` for an auto-renewable subscription; `nil` for anything else.
    public let appleStatus: Int?
    /// Whether the customer is entitled now: ``status`` is active or grace period.
    public let isEntitled: Bool
    /// The current transaction's product.
    public let productId: String?
    /// The current transaction's product type, normalized as in the transaction record.
    public let productType: String?
    public let subscriptionGroupId: String?
    /// The end of the period paid for: the current transaction's `expiresDate`, or a fresh
    /// renewal info's later `renewalDate`; `nil` for a one-time purchase.
    public let expiresDate: Timestamp?
    /// From renewal info signed during the current period only.
    public let gracePeriodExpiresDate: Timestamp?
    /// Whether the subscription renews (`autoRenewStatus` of the renewal info in use); `nil`
    /// when there is none.
    public let willRenew: Bool?
    public let autoRenewProductId: String?
    /// Why it expired (`customer_cancelled`, `billing_error`, `price_increase_declined`,
    /// `product_unavailable`, `other`, or Apple's raw number), when ``status`` is expired.
    public let expirationIntent: String?
    /// Whether the current transaction is an introductory free trial.
    public let isTrial: Bool
    /// The current transaction's offer, as in the transaction record.
    public let offer: NormalizedTransaction.Offer?
    /// When ``status`` is revoked.
    public let revocationDate: Timestamp?
    /// When ``status`` is revoked: normalized as in the transaction record.
    public let revocationReason: String?
    /// `purchased` or `family_shared`.
    public let ownershipType: String?
    /// The current transaction's id.
    public let latestTransactionId: String?
    /// The current transaction's app account token, or the renewal info's.
    public let appAccountToken: String?
    /// The latest signed date of every copy of this key folded in and known at ``asOf``; `nil`
    /// when none carried one.
    public let lastSignedDate: Timestamp?
    /// The evaluation instant.
    public let asOf: Timestamp
    /// The current transaction's `purchaseDate`: where a non-renewing subscription's time starts
    /// (``EntitlementCatalog``). Not part of the state line.
    public let purchaseDate: Timestamp?
    /// The first instant after ``asOf`` at which the same records may give another ``status`` by
    /// time alone: the end of the period paid for, of the grace period or of Apple's billing retry
    /// window, or a revocation dated after ``asOf``. `nil` when only a new record can change it
    /// (expired, revoked, a one-time purchase). No status change happens before it; at it, the
    /// status may stay the same (a grace period ending while the period is paid, say). A service
    /// that tells backends what changed evaluates the key again then. Not part of the state line.
    public let statusMayChangeAt: Timestamp?

    /// How long Apple retries a failed renewal: 60 days.
    public static let billingRetryWindowMilliseconds: Int64 = 60 * 86_400_000

    /// Evaluates one key (see ``EntitlementLedger/state(for:at:)`` for the rules).
    ///
    /// - Parameters:
    ///   - transactions: The winning copy of each transaction known at `instant`.
    ///   - renewalInfo: The renewal info in use.
    init?(key: SubscriptionKey, transactions: [LedgerTransaction], renewalInfo: LedgerRenewalInfo?,
          lastSignedDate: Timestamp, at instant: Timestamp) {
        // Rule 2. When every known transaction was upgraded away, the purchase that replaced them
        // is not here yet: the latest of them stands in, and its upgrade is not a refund. The
        // current transaction ranks highest (``LedgerCopy/Rank``: not upgraded, the later
        // purchase, the later expiry), and among equals has the greater id.
        let upgradedOnly = transactions.allSatisfy(\.isUpgraded)
        let candidates = upgradedOnly ? transactions : transactions.filter { !$0.isUpgraded }
        guard let current = candidates.max(by: { $0.rank != $1.rank ? $0.rank < $1.rank : $0.id < $1.id }) else { return nil }

        // Rule 3.
        let fresh = renewalInfo.flatMap { info in
            info.knownFrom >= (current.purchaseDate ?? knownSinceAlways) ? info : nil
        }
        var periodEnd = current.expiresDate
        var laterPeriodKnown = false
        if let renewalDate = fresh?.renewalDate, Timestamp.orderNilFirst(periodEnd, renewalDate) {
            periodEnd = renewalDate
            laterPeriodKnown = true
        }
        let isAutoRenewable = current.traits.productType == "auto_renewable_subscription"
            || (current.traits.productType == nil && current.expiresDate != nil)

        // Rule 4 (and 6: a one-time purchase is owned or revoked).
        let status: SubscriptionStatus
        if !upgradedOnly, let revoked = current.revocationDate, revoked <= instant, !laterPeriodKnown {
            status = .revoked
        } else if !isAutoRenewable || periodEnd.map({ $0 > instant }) == true {
            status = .active
        } else if let grace = fresh?.gracePeriodExpiresDate, grace > instant {
            status = .gracePeriod
        } else if fresh?.isInBillingRetryPeriod == true, let periodEnd,
                  instant.millisecondsSince1970 < periodEnd.millisecondsSince1970 &+ Self.billingRetryWindowMilliseconds {
            status = .billingRetry
        } else {
            status = .expired
        }

        self.key = key
        self.status = status
        appleStatus = isAutoRenewable ? status.appleStatus : nil
        isEntitled = status.isEntitled
        productId = current.traits.productId
        productType = current.traits.productType
        subscriptionGroupId = current.traits.subscriptionGroupId
        expiresDate = isAutoRenewable ? periodEnd : current.expiresDate
        gracePeriodExpiresDate = fresh?.gracePeriodExpiresDate
        willRenew = renewalInfo?.autoRenewStatus.flatMap { $0 == 1 ? true : $0 == 0 ? false : nil }
        autoRenewProductId = renewalInfo?.traits.autoRenewProductId
        expirationIntent = status == .expired ? Self.expirationIntent(renewalInfo?.expirationIntent) : nil
        isTrial = current.traits.offer?.type == "introductory" && current.traits.offer?.discountType == "free_trial"
        offer = current.traits.offer
        revocationDate = status == .revoked ? current.revocationDate : nil
        revocationReason = status == .revoked ? current.traits.revocationReason : nil
        ownershipType = current.traits.ownershipType
        latestTransactionId = current.id.description
        appAccountToken = current.traits.appAccountToken ?? renewalInfo?.traits.appAccountToken
        self.lastSignedDate = lastSignedDate == knownSinceAlways ? nil : lastSignedDate
        asOf = instant
        purchaseDate = current.purchaseDate
        var boundaries: [Timestamp] = []
        if !upgradedOnly, !laterPeriodKnown, let revoked = current.revocationDate { boundaries.append(revoked) }
        if isAutoRenewable, let periodEnd {
            boundaries.append(periodEnd)
            if let grace = fresh?.gracePeriodExpiresDate { boundaries.append(grace) }
            if fresh?.isInBillingRetryPeriod == true {
                boundaries.append(Timestamp(millisecondsSince1970: periodEnd.millisecondsSince1970 &+ Self.billingRetryWindowMilliseconds))
            }
        }
        statusMayChangeAt = boundaries.filter { $0 > instant }.min()
    }

    /// Decimal ids compare as numbers (`"9" < "10"`); any other pair by UTF-8 bytes.
    static func transactionIdPrecedes(_ lhs: String, _ rhs: String) -> Bool {
        func digits(_ id: String) -> Substring.UTF8View? {
            guard !id.isEmpty, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Substring(id.drop(while: { $0 == "0" })).utf8
        }
        if let left = digits(lhs), let right = digits(rhs), left.count != right.count {
            return left.count < right.count
        }
        return lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    /// Apple's `expirationIntent` integers.
    private static func expirationIntent(_ raw: Int32?) -> String? {
        switch raw {
        case nil: nil
        case 1: "customer_cancelled"
        case 2: "billing_error"
        case 3: "price_increase_declined"
        case 4: "product_unavailable"
        case 5: "other"
        case let value?: String(value)
        }
    }
}

extension SubscriptionState {
    /// The state as one line of JSON, exactly as `verify-receipt --state` writes it: snake_case
    /// members in a fixed order, dates as in the transaction record.
    ///
    /// - Parameter pretty: Whether to indent.
    /// - Returns: The JSON text.
    public func json(pretty: Bool = false) -> String {
        var bytes: [UInt8] = []
        appendJSON(pretty: pretty, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the bytes of ``json(pretty:)`` to `buffer`, without a final newline.
    ///
    /// - Parameters:
    ///   - pretty: Whether to indent.
    ///   - buffer: The bytes to append to.
    public func appendJSON(pretty: Bool = false, to buffer: inout [UInt8]) {
        JSONWriter.append(to: &buffer, pretty: pretty) { writer in
            writer.object { json in
                json.member("bundle_id", key.bundleId)
                json.member("environment", key.environment)
                json.member("original_transaction_id", key.originalTransactionId)
                json.member("status", status.rawValue)
                json.member("apple_status", appleStatus)
                json.member("entitled", isEntitled)
                json.member("product_id", productId)
                json.member("product_type", productType)
                json.member("subscription_group_id", subscriptionGroupId)
                json.member("expires_date", expiresDate)
                json.member("grace_period_expires_date", gracePeriodExpiresDate)
                json.member("will_renew", willRenew)
                json.member("auto_renew_product_id", autoRenewProductId)
                json.member("expiration_intent", expirationIntent)
                json.member("is_trial", isTrial)
                json.objectMember("offer", offer) { json, offer in offer.write(to: &json) }
                json.member("revocation_date", revocationDate)
                json.member("revocation_reason", revocationReason)
                json.member("ownership_type", ownershipType)
                json.member("latest_transaction_id", latestTransactionId)
                json.member("app_account_token", appAccountToken)
                json.member("last_signed_date", lastSignedDate)
                json.member("as_of", asOf)
            }
        }
    }
}
