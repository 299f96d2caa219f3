public import ReceiptKit

/// The filters of Get Transaction History v2. Every member is optional; a request for the next
/// page must carry the same filters with the revision token (the client's page sequence does).
public struct TransactionHistoryFilter: Sendable, Hashable {
    /// Apple's `sort` values.
    public enum Sort: String, Sendable, Hashable {
        case ascending = "ASCENDING"
        case descending = "DESCENDING"
    }

    /// Apple's `productType` values.
    public enum ProductType: String, Sendable, Hashable {
        case autoRenewable = "AUTO_RENEWABLE"
        case nonRenewable = "NON_RENEWABLE"
        case consumable = "CONSUMABLE"
        case nonConsumable = "NON_CONSUMABLE"
    }

    /// Only transactions purchased at or after this instant (`startDate`, milliseconds).
    public var startDate: Timestamp?
    /// Only transactions purchased before this instant (`endDate`, milliseconds).
    public var endDate: Timestamp?
    /// Only these products (`productId`, repeatable).
    public var productIds: [String]
    /// Only these product types (`productType`, repeatable).
    public var productTypes: [ProductType]
    /// The order by modification date (`sort`).
    public var sort: Sort?
    /// Only these subscription groups (`subscriptionGroupIdentifier`, repeatable).
    public var subscriptionGroupIdentifiers: [String]
    /// Only `PURCHASED` or `FAMILY_SHARED` (`inAppOwnershipType`), raw.
    public var inAppOwnershipType: String?
    /// Only revoked (`true`) or only not revoked (`false`) transactions (`revoked`).
    public var revoked: Bool?

    /// Creates a filter; no argument filters nothing.
    public init(
        startDate: Timestamp? = nil, endDate: Timestamp? = nil, productIds: [String] = [], productTypes: [ProductType] = [],
        sort: Sort? = nil, subscriptionGroupIdentifiers: [String] = [], inAppOwnershipType: String? = nil, revoked: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    /// The query items, in Apple's documented order.
    var queryItems: [(String, String)] {
        var items: [(String, String)] = []
        if let startDate { items.append(("startDate", String(startDate.millisecondsSince1970))) }
        if let endDate { items.append(("endDate", String(endDate.millisecondsSince1970))) }
        items += productIds.map { ("productId", $0) }
        items += productTypes.map { ("productType", $0.rawValue) }
        if let sort { items.append(("sort", sort.rawValue)) }
        items += subscriptionGroupIdentifiers.map { ("subscriptionGroupIdentifier", $0) }
        if let inAppOwnershipType { items.append(("inAppOwnershipType", inAppOwnershipType)) }
        if let revoked { items.append(("revoked", revoked ? "true" : "false")) }
        return items
    }
}

/// Apple's subscription `status` values, the filter of Get All Subscription Statuses.
public enum SubscriptionStatusFilter: Int32, Sendable, Hashable, CaseIterable {
    case active = 1
    case expired = 2
    case billingRetry = 3
    case billingGracePeriod = 4
    case revoked = 5
}

/// The body of Get Notification History: a window of at most 180 days and optional filters.
public struct NotificationHistoryRequest: Sendable, Hashable, Encodable {
    /// The window's start (`startDate`, milliseconds).
    public var startDate: Timestamp
    /// The window's end (`endDate`, milliseconds).
    public var endDate: Timestamp
    /// Only this notification type (`notificationType`), raw.
    public var notificationType: String?
    /// Only this subtype (`notificationSubtype`), raw.
    public var notificationSubtype: String?
    /// Only the notifications of this transaction (`transactionId`); not with the type filters.
    public var transactionId: String?
    /// Only notifications that never reached the server (`onlyFailures`).
    public var onlyFailures: Bool?

    /// Creates a request.
    public init(
        startDate: Timestamp, endDate: Timestamp, notificationType: String? = nil, notificationSubtype: String? = nil,
        transactionId: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}

/// The body of Send Consumption Information (v2, `PUT /inApps/v2/transactions/consumption/{id}`).
/// Enumerations keep Apple's raw strings.
public struct ConsumptionRequest: Sendable, Hashable, Encodable {
    /// Whether the customer consented to share the data (required `true` by Apple).
    public var customerConsented: Bool
    /// How much of the purchase was consumed, 0…100000 (thousandths of a percent).
    public var consumptionPercentage: Int32?
    /// `DELIVERED`, `UNDELIVERED_QUALITY_ISSUE`, `UNDELIVERED_WRONG_ITEM`,
    /// `UNDELIVERED_SERVER_OUTAGE` or `UNDELIVERED_OTHER`.
    public var deliveryStatus: String
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`.
    public var refundPreference: String?
    /// Whether a sample or trial of the content was provided.
    public var sampleContentProvided: Bool

    /// Creates a body.
    public init(
        customerConsented: Bool, consumptionPercentage: Int32? = nil, deliveryStatus: String, refundPreference: String? = nil,
        sampleContentProvided: Bool
    ) {
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }
}

/// The body of Send Consumption Information v1 (`PUT /inApps/v1/transactions/consumption/{id}`),
/// deprecated by Apple in favour of ``ConsumptionRequest``. Enumerations are Apple's raw integers.
public struct ConsumptionRequestV1: Sendable, Hashable, Codable {
    public var customerConsented: Bool?
    public var consumptionStatus: Int32?
    public var platform: Int32?
    public var sampleContentProvided: Bool?
    public var deliveryStatus: Int32?
    /// A UUID, or empty when none was set.
    public var appAccountToken: String?
    public var accountTenure: Int32?
    public var playTime: Int32?
    public var lifetimeDollarsRefunded: Int32?
    public var lifetimeDollarsPurchased: Int32?
    public var userStatus: Int32?
    public var refundPreference: Int32?

    /// Creates a body; members left `nil` are not sent.
    public init(
        customerConsented: Bool? = nil, consumptionStatus: Int32? = nil, platform: Int32? = nil,
        sampleContentProvided: Bool? = nil, deliveryStatus: Int32? = nil, appAccountToken: String? = nil,
        accountTenure: Int32? = nil, playTime: Int32? = nil, lifetimeDollarsRefunded: Int32? = nil,
        lifetimeDollarsPurchased: Int32? = nil, userStatus: Int32? = nil, refundPreference: Int32? = nil
    ) {
        self.customerConsented = customerConsented
        self.consumptionStatus = consumptionStatus
        self.platform = platform
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.appAccountToken = appAccountToken
        self.accountTenure = accountTenure
        self.playTime = playTime
        self.lifetimeDollarsRefunded = lifetimeDollarsRefunded
        self.lifetimeDollarsPurchased = lifetimeDollarsPurchased
        self.userStatus = userStatus
        self.refundPreference = refundPreference
    }
}

/// The body of Extend a Subscription Renewal Date.
public struct ExtendRenewalDateRequest: Sendable, Hashable, Encodable {
    /// Days to extend by, 1…90.
    public var extendByDays: Int32
    /// Apple's reason: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int32
    /// Your identifier for this extension (at most 128 characters), which Apple's answer and
    /// notifications carry back.
    public var requestIdentifier: String

    /// Creates a body.
    public init(extendByDays: Int32, extendReasonCode: Int32, requestIdentifier: String) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}

/// The body of Extend Subscription Renewal Dates for All Active Subscribers.
public struct MassExtendRenewalDateRequest: Sendable, Hashable, Encodable {
    /// Days to extend by, 1…90.
    public var extendByDays: Int32
    /// Apple's reason code (see ``ExtendRenewalDateRequest/extendReasonCode``).
    public var extendReasonCode: Int32
    /// Your UUID for this request, which its status is looked up by.
    public var requestIdentifier: String
    /// Only these storefronts (ISO 3166-1 alpha-3), or all when empty.
    public var storefrontCountryCodes: [String]?
    /// The subscription's product identifier.
    public var productId: String

    /// Creates a body.
    public init(
        extendByDays: Int32, extendReasonCode: Int32, requestIdentifier: String, storefrontCountryCodes: [String]? = nil,
        productId: String
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.productId = productId
    }
}

/// The body of Set App Account Token.
struct UpdateAppAccountTokenRequest: Encodable {
    let appAccountToken: String
}
