/// A legacy App Store receipt's payload: the app attributes and one ``InAppPurchase`` per
/// in-app purchase attribute, decoded from the signed ASN.1 payload.
///
/// Attribute numbers are Apple's (see "Receipt Fields" in Apple's Receipt Validation Programming
/// Guide). Attributes Apple does not document are kept in ``otherAttributes`` exactly as written,
/// so nothing of the receipt is lost.
public struct AppReceipt: Sendable, Hashable {
    /// Attribute 0, the receipt type as written: `Production`, `ProductionSandbox`,
    /// `ProductionVPP`, `ProductionVPPSandbox`, `Xcode`, or another value Apple adds.
    public let rawReceiptType: String?
    /// Attribute 1, the App Store's app identifier (`app_item_id`, `adam_id`); 0 outside Production.
    public let appItemId: Int64?
    /// Attribute 2, the bundle identifier.
    public let bundleId: String
    /// Attribute 3, the app version the receipt was created for (`CFBundleVersion`).
    public let applicationVersion: String
    /// Attribute 4, the opaque value (an input of the device hash).
    public let opaqueValue: [UInt8]
    /// Attribute 5, the SHA-1 device hash.
    public let sha1Hash: [UInt8]
    /// Attribute 12, when the receipt was created: the default validation time.
    public let receiptCreationDate: Timestamp
    /// Attribute 15, the download identifier.
    public let downloadId: Int64?
    /// Attribute 16, the version external identifier (0 in Sandbox).
    public let versionExternalIdentifier: Int64?
    /// Attribute 17, the in-app purchases, in the receipt's own order.
    public let inAppPurchases: [InAppPurchase]
    /// Attribute 18, when the app was first purchased.
    public let originalPurchaseDate: Timestamp?
    /// Attribute 19, the app version first purchased.
    public let originalApplicationVersion: String?
    /// Attribute 21, when a Volume Purchase Program receipt expires (Xcode writes 4001-01-01).
    public let expirationDate: Timestamp?
    /// Every attribute of another type, in the receipt's order.
    public let otherAttributes: [ReceiptAttribute]
    /// The encoded value of attribute 2 (its DER UTF8String), the third input of the device hash.
    let bundleIdEncoding: [UInt8]

    /// The typed receipt type, or `nil` for a value ReceiptKit does not know.
    public var receiptType: ReceiptType? {
        rawReceiptType.flatMap(ReceiptType.init(rawValue:))
    }

    /// The environment the receipt type stands for: `Production`, `Sandbox` or `Xcode`
    /// (Volume Purchase Program types map to their base).
    public var environment: AppStoreEnvironment? {
        receiptType?.environment
    }
}

extension AppReceipt: ClaimablePayload {
    static var kind: PayloadKind { .receipt }
    /// A receipt's app item id is 0 outside Production: that is no App Apple ID.
    var claims: PayloadClaims {
        PayloadClaims(bundleId: .some(bundleId), appAppleId: .some(appItemId.flatMap { $0 == 0 ? nil : $0 }),
                      environment: environment?.rawValue ?? rawReceiptType)
    }
}

/// One in-app purchase of a legacy receipt (attribute 17 of the payload).
public struct InAppPurchase: Sendable, Hashable {
    /// Attribute 1701, the number of items purchased.
    public let quantity: Int64?
    /// Attribute 1702, the product identifier.
    public let productId: String
    /// Attribute 1703, the transaction identifier (`"0"` in Xcode).
    public let transactionId: String
    /// Attribute 1704, when the purchase was made (for a renewal: when it was charged).
    public let purchaseDate: Timestamp
    /// Attribute 1705, the transaction identifier of the original purchase.
    public let originalTransactionId: String?
    /// Attribute 1706, when the original purchase was made.
    public let originalPurchaseDate: Timestamp?
    /// Attribute 1707, the product type as written (see ``InAppProductType``).
    public let rawProductType: Int64?
    /// Attribute 1708, when the subscription expires.
    public let expiresDate: Timestamp?
    /// Attribute 1711, the web order line item identifier (0 when it has none).
    public let webOrderLineItemId: Int64?
    /// Attribute 1712, when Apple customer support cancelled (refunded) the purchase.
    public let cancellationDate: Timestamp?
    /// Attribute 1713 as written: 1 when the period is a free trial.
    public let rawTrialPeriod: Int64?
    /// Attribute 1719 as written: 1 when the period is an introductory price period.
    public let rawIntroductoryOfferPeriod: Int64?
    /// Attribute 1721, the promotional offer's identifier.
    public let promotionalOfferId: String?
    /// Every attribute of another type, in the purchase's order.
    public let otherAttributes: [ReceiptAttribute]

    /// The typed product type, or `nil` when absent or a value ReceiptKit does not know.
    public var productType: InAppProductType? {
        rawProductType.flatMap(InAppProductType.init(rawValue:))
    }

    /// Whether the period is a free trial (attribute 1713 is 1).
    public var isTrialPeriod: Bool {
        rawTrialPeriod == 1
    }

    /// Whether the period is an introductory price period (attribute 1719 is 1), or `nil` when
    /// the receipt does not say (Apple writes the attribute for subscriptions only).
    public var isInIntroOfferPeriod: Bool? {
        rawIntroductoryOfferPeriod.map { $0 == 1 }
    }
}

/// An attribute of a receipt payload or of an in-app purchase, exactly as written.
///
///     ReceiptAttribute ::= SEQUENCE {
///       type    INTEGER,
///       version INTEGER,
///       value   OCTET STRING }
public struct ReceiptAttribute: Sendable, Hashable {
    /// The attribute type.
    public let type: Int64
    /// The attribute version.
    public let version: Int64
    /// The contents of the value OCTET STRING (usually itself DER).
    public let value: [UInt8]

    /// Creates an attribute.
    ///
    /// - Parameters:
    ///   - type: The attribute type.
    ///   - version: The attribute version.
    ///   - value: The contents of the value OCTET STRING.
    public init(type: Int64, version: Int64, value: [UInt8]) {
        self.type = type
        self.version = version
        self.value = value
    }
}

/// A receipt type (payload attribute 0).
public enum ReceiptType: String, Sendable, Hashable, CaseIterable {
    case production = "Production"
    case productionSandbox = "ProductionSandbox"
    case productionVPP = "ProductionVPP"
    case productionVPPSandbox = "ProductionVPPSandbox"
    case xcode = "Xcode"

    /// The environment of the type: Volume Purchase Program types map to their base.
    public var environment: AppStoreEnvironment {
        switch self {
        case .production, .productionVPP: .production
        case .productionSandbox, .productionVPPSandbox: .sandbox
        case .xcode: .xcode
        }
    }
}

/// An in-app purchase's product type (attribute 1707), as the open-source receipt parsers read
/// it and the real receipts confirm. Other values occur (4, for a free subscription in 2015) and
/// are kept in ``InAppPurchase/rawProductType``.
public enum InAppProductType: Int64, Sendable, Hashable, CaseIterable {
    case nonConsumable = 0
    case consumable = 1
    case nonRenewingSubscription = 2
    case autoRenewableSubscription = 3
}
