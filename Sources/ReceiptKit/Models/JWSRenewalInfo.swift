/// Subscription renewal info: Apple's `JWSRenewalInfoDecodedPayload`.
public struct JWSRenewalInfo: Sendable, Hashable {
    /// 1 customer cancelled, 2 billing error, 3 declined price increase, 4 product unavailable, 5 other.
    public let expirationIntent: Int32?
    public let originalTransactionId: String?
    public let autoRenewProductId: String?
    public let productId: String?
    /// 0 off, 1 on.
    public let autoRenewStatus: Int32?
    public let isInBillingRetryPeriod: Bool?
    /// 0 not yet responded, 1 accepted.
    public let priceIncreaseStatus: Int32?
    public let gracePeriodExpiresDate: Timestamp?
    public let offerType: Int32?
    public let offerIdentifier: String?
    public let signedDate: Timestamp?
    public let rawEnvironment: String?
    public let recentSubscriptionStartDate: Timestamp?
    public let renewalDate: Timestamp?
    public let currency: String?
    /// The renewal price in milliunits of ``currency``.
    public let renewalPrice: Int64?
    public let rawOfferDiscountType: String?
    public let eligibleWinBackOfferIds: [String]?
    public let appAccountToken: String?
    public let appTransactionId: String?
    public let offerPeriod: String?
    public let renewalBillingPlanType: String?
    public let advancedCommerceInfo: AdvancedCommerceRenewalInfo?
    public let commitmentInfo: RenewalCommitmentInfo?

    /// The typed environment, or `nil` when absent or unknown.
    public var environment: AppStoreEnvironment? { rawEnvironment.flatMap(AppStoreEnvironment.init(rawValue:)) }

    init(json: JSONObject) throws {
        expirationIntent = try json.int32("expirationIntent")
        originalTransactionId = try json.string("originalTransactionId")
        autoRenewProductId = try json.string("autoRenewProductId")
        productId = try json.string("productId")
        autoRenewStatus = try json.int32("autoRenewStatus")
        isInBillingRetryPeriod = try json.bool("isInBillingRetryPeriod")
        priceIncreaseStatus = try json.int32("priceIncreaseStatus")
        gracePeriodExpiresDate = try json.timestamp("gracePeriodExpiresDate")
        offerType = try json.int32("offerType")
        offerIdentifier = try json.string("offerIdentifier")
        signedDate = try json.timestamp("signedDate")
        rawEnvironment = try json.string("environment")
        recentSubscriptionStartDate = try json.timestamp("recentSubscriptionStartDate")
        renewalDate = try json.timestamp("renewalDate")
        currency = try json.string("currency")
        renewalPrice = try json.int64("renewalPrice")
        rawOfferDiscountType = try json.string("offerDiscountType")
        eligibleWinBackOfferIds = try json.strings("eligibleWinBackOfferIds")
        appAccountToken = try json.string("appAccountToken")
        appTransactionId = try json.string("appTransactionId")
        offerPeriod = try json.string("offerPeriod")
        renewalBillingPlanType = try json.string("renewalBillingPlanType")
        advancedCommerceInfo = try json.object("advancedCommerceInfo").map(AdvancedCommerceRenewalInfo.init(json:))
        commitmentInfo = try json.object("commitmentInfo").map(RenewalCommitmentInfo.init(json:))
    }
}

extension JWSRenewalInfo: SignedPayload {
    static var kind: PayloadKind { .renewalInfo }
    var payloadDate: Timestamp? { signedDate }
    var claims: PayloadClaims { PayloadClaims(environment: rawEnvironment) }
}

/// Commitment (billing plan) data on renewal info.
public struct RenewalCommitmentInfo: Sendable, Hashable {
    public let commitmentAutoRenewProductId: String?
    public let commitmentAutoRenewStatus: Int32?
    public let commitmentRenewalBillingPlanType: String?
    public let commitmentRenewalDate: Timestamp?
    public let commitmentRenewalPrice: Int64?

    init(json: JSONObject) throws {
        commitmentAutoRenewProductId = try json.string("commitmentAutoRenewProductId")
        commitmentAutoRenewStatus = try json.int32("commitmentAutoRenewStatus")
        commitmentRenewalBillingPlanType = try json.string("commitmentRenewalBillingPlanType")
        commitmentRenewalDate = try json.timestamp("commitmentRenewalDate")
        commitmentRenewalPrice = try json.int64("commitmentRenewalPrice")
    }
}
