/// A StoreKit 2 transaction: Apple's `JWSTransactionDecodedPayload`.
///
/// Member names follow Apple's documentation. Apple's string enumerations are kept raw
/// (`rawType`, `rawEnvironment`, …) so an unknown value decodes; typed views are computed.
public struct JWSTransaction: Sendable, Hashable {
    public let originalTransactionId: String?
    public let transactionId: String?
    public let webOrderLineItemId: String?
    public let bundleId: String?
    public let productId: String?
    public let subscriptionGroupIdentifier: String?
    public let purchaseDate: Timestamp?
    public let originalPurchaseDate: Timestamp?
    public let expiresDate: Timestamp?
    public let quantity: Int32?
    /// Apple's product type, e.g. `Auto-Renewable Subscription`.
    public let rawType: String?
    public let appAccountToken: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    public let rawInAppOwnershipType: String?
    public let signedDate: Timestamp?
    /// 0 (refunded for another reason) or 1 (refunded due to an issue in the app).
    public let revocationReason: Int32?
    public let revocationDate: Timestamp?
    public let isUpgraded: Bool?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public let offerType: Int32?
    public let offerIdentifier: String?
    public let rawEnvironment: String?
    public let storefront: String?
    public let storefrontId: String?
    /// `PURCHASE` or `RENEWAL`.
    public let rawTransactionReason: String?
    public let currency: String?
    /// The price in milliunits of ``currency``.
    public let price: Int64?
    public let rawOfferDiscountType: String?
    public let appTransactionId: String?
    public let offerPeriod: String?
    public let rawRevocationType: String?
    public let revocationPercentage: Int32?
    public let billingPlanType: String?
    public let advancedCommerceInfo: AdvancedCommerceTransactionInfo?
    public let commitmentInfo: TransactionCommitmentInfo?

    /// The typed environment, or `nil` when absent or unknown.
    public var environment: AppStoreEnvironment? { rawEnvironment.flatMap(AppStoreEnvironment.init(rawValue:)) }

    init(json: JSONObject) throws {
        originalTransactionId = try json.string("originalTransactionId")
        transactionId = try json.string("transactionId")
        webOrderLineItemId = try json.string("webOrderLineItemId")
        bundleId = try json.string("bundleId")
        productId = try json.string("productId")
        subscriptionGroupIdentifier = try json.string("subscriptionGroupIdentifier")
        purchaseDate = try json.timestamp("purchaseDate")
        originalPurchaseDate = try json.timestamp("originalPurchaseDate")
        expiresDate = try json.timestamp("expiresDate")
        quantity = try json.int32("quantity")
        rawType = try json.string("type")
        appAccountToken = try json.string("appAccountToken")
        rawInAppOwnershipType = try json.string("inAppOwnershipType")
        signedDate = try json.timestamp("signedDate")
        revocationReason = try json.int32("revocationReason")
        revocationDate = try json.timestamp("revocationDate")
        isUpgraded = try json.bool("isUpgraded")
        offerType = try json.int32("offerType")
        offerIdentifier = try json.string("offerIdentifier")
        rawEnvironment = try json.string("environment")
        storefront = try json.string("storefront")
        storefrontId = try json.string("storefrontId")
        rawTransactionReason = try json.string("transactionReason")
        currency = try json.string("currency")
        price = try json.int64("price")
        rawOfferDiscountType = try json.string("offerDiscountType")
        appTransactionId = try json.string("appTransactionId")
        offerPeriod = try json.string("offerPeriod")
        rawRevocationType = try json.string("revocationType")
        revocationPercentage = try json.int32("revocationPercentage")
        billingPlanType = try json.string("billingPlanType")
        advancedCommerceInfo = try json.object("advancedCommerceInfo").map(AdvancedCommerceTransactionInfo.init(json:))
        commitmentInfo = try json.object("commitmentInfo").map(TransactionCommitmentInfo.init(json:))
    }
}

extension JWSTransaction: SignedPayload {
    static var kind: PayloadKind { .transaction }
    var payloadDate: Timestamp? { signedDate }
    var claims: PayloadClaims { PayloadClaims(bundleId: .some(bundleId), environment: rawEnvironment) }
}

/// Commitment (billing plan) data on a transaction (`commitmentInfo`).
public struct TransactionCommitmentInfo: Sendable, Hashable {
    public let billingPeriodNumber: Int32?
    public let commitmentExpiresDate: Timestamp?
    public let commitmentPrice: Int64?
    public let totalBillingPeriods: Int32?

    init(json: JSONObject) throws {
        billingPeriodNumber = try json.int32("billingPeriodNumber")
        commitmentExpiresDate = try json.timestamp("commitmentExpiresDate")
        commitmentPrice = try json.int64("commitmentPrice")
        totalBillingPeriods = try json.int32("totalBillingPeriods")
    }
}
