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

/// Advanced Commerce API data on a transaction (`advancedCommerceInfo`).
public struct AdvancedCommerceTransactionInfo: Sendable, Hashable {
    public let descriptors: AdvancedCommerceDescriptors?
    public let estimatedTax: Int64?
    public let items: [AdvancedCommerceTransactionItem]?
    public let period: String?
    public let requestReferenceId: String?
    public let taxCode: String?
    public let taxExclusivePrice: Int64?
    public let taxRate: String?

    init(json: JSONObject) throws {
        descriptors = try json.object("descriptors").map(AdvancedCommerceDescriptors.init(json:))
        estimatedTax = try json.int64("estimatedTax")
        items = try json.objects("items", AdvancedCommerceTransactionItem.init(json:))
        period = try json.string("period")
        requestReferenceId = try json.string("requestReferenceId")
        taxCode = try json.string("taxCode")
        taxExclusivePrice = try json.int64("taxExclusivePrice")
        taxRate = try json.string("taxRate")
    }
}

/// A display name and description (`descriptors`).
public struct AdvancedCommerceDescriptors: Sendable, Hashable {
    public let description: String?
    public let displayName: String?

    init(json: JSONObject) throws {
        description = try json.string("description")
        displayName = try json.string("displayName")
    }
}

/// One item of an Advanced Commerce transaction.
public struct AdvancedCommerceTransactionItem: Sendable, Hashable {
    public let sku: String?
    public let description: String?
    public let displayName: String?
    public let offer: AdvancedCommerceOffer?
    public let price: Int64?
    public let refunds: [AdvancedCommerceRefund]?
    public let revocationDate: Timestamp?

    init(json: JSONObject) throws {
        sku = try json.string("SKU")
        description = try json.string("description")
        displayName = try json.string("displayName")
        offer = try json.object("offer").map(AdvancedCommerceOffer.init(json:))
        price = try json.int64("price")
        refunds = try json.objects("refunds", AdvancedCommerceRefund.init(json:))
        revocationDate = try json.timestamp("revocationDate")
    }
}

/// An Advanced Commerce offer on an item.
public struct AdvancedCommerceOffer: Sendable, Hashable {
    public let period: String?
    public let periodCount: Int32?
    public let price: Int64?
    public let reason: String?

    init(json: JSONObject) throws {
        period = try json.string("period")
        periodCount = try json.int32("periodCount")
        price = try json.int64("price")
        reason = try json.string("reason")
    }
}

/// A refund of an Advanced Commerce item.
public struct AdvancedCommerceRefund: Sendable, Hashable {
    public let refundAmount: Int64?
    public let refundDate: Timestamp?
    public let refundReason: String?
    public let refundType: String?

    init(json: JSONObject) throws {
        refundAmount = try json.int64("refundAmount")
        refundDate = try json.timestamp("refundDate")
        refundReason = try json.string("refundReason")
        refundType = try json.string("refundType")
    }
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
