// Apple's Advanced Commerce API data, carried by transactions and renewal info alike.

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

/// Advanced Commerce API data on renewal info.
public struct AdvancedCommerceRenewalInfo: Sendable, Hashable {
    public let consistencyToken: String?
    public let descriptors: AdvancedCommerceDescriptors?
    public let items: [AdvancedCommerceRenewalItem]?
    public let period: String?
    public let requestReferenceId: String?
    public let taxCode: String?

    init(json: JSONObject) throws {
        consistencyToken = try json.string("consistencyToken")
        descriptors = try json.object("descriptors").map(AdvancedCommerceDescriptors.init(json:))
        items = try json.objects("items", AdvancedCommerceRenewalItem.init(json:))
        period = try json.string("period")
        requestReferenceId = try json.string("requestReferenceId")
        taxCode = try json.string("taxCode")
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

/// The members every Advanced Commerce item starts with, a transaction's or a renewal's:
/// `SKU`, `description`, `displayName`, `offer` and `price`, decoded in that order.
private func itemMembers(
    _ json: JSONObject
) throws -> (sku: String?, description: String?, displayName: String?, offer: AdvancedCommerceOffer?, price: Int64?) {
    (try json.string("SKU"), try json.string("description"), try json.string("displayName"),
     try json.object("offer").map(AdvancedCommerceOffer.init(json:)), try json.int64("price"))
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
        (sku, description, displayName, offer, price) = try itemMembers(json)
        refunds = try json.objects("refunds", AdvancedCommerceRefund.init(json:))
        revocationDate = try json.timestamp("revocationDate")
    }
}

/// One item of Advanced Commerce renewal info.
public struct AdvancedCommerceRenewalItem: Sendable, Hashable {
    public let sku: String?
    public let description: String?
    public let displayName: String?
    public let offer: AdvancedCommerceOffer?
    public let price: Int64?
    public let priceIncreaseInfo: AdvancedCommercePriceIncreaseInfo?

    init(json: JSONObject) throws {
        (sku, description, displayName, offer, price) = try itemMembers(json)
        priceIncreaseInfo = try json.object("priceIncreaseInfo").map(AdvancedCommercePriceIncreaseInfo.init(json:))
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

/// A pending or accepted price increase of an Advanced Commerce item.
public struct AdvancedCommercePriceIncreaseInfo: Sendable, Hashable {
    public let dependentSKUs: [String]?
    public let price: Int64?
    public let status: String?

    init(json: JSONObject) throws {
        dependentSKUs = try json.strings("dependentSKUs")
        price = try json.int64("price")
        status = try json.string("status")
    }
}
