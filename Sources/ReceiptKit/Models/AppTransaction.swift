/// An AppTransaction: Apple's `AppTransaction` (also the payload of `signedAppTransactionInfo`).
public struct AppTransaction: Sendable, Hashable {
    /// `Production`, `Sandbox`, `Xcode`, `LocalTesting`: the environment of an app transaction.
    public let rawReceiptType: String?
    public let appAppleId: Int64?
    public let bundleId: String?
    public let applicationVersion: String?
    public let versionExternalIdentifier: Int64?
    public let receiptCreationDate: Timestamp?
    public let originalPurchaseDate: Timestamp?
    public let originalApplicationVersion: String?
    public let deviceVerification: String?
    public let deviceVerificationNonce: String?
    public let preorderDate: Timestamp?
    public let appTransactionId: String?
    public let rawOriginalPlatform: String?
    public let signedDate: Timestamp?

    /// The typed environment (from `receiptType`), or `nil` when absent or unknown.
    public var environment: AppStoreEnvironment? { rawReceiptType.flatMap(AppStoreEnvironment.init(rawValue:)) }

    init(json: JSONObject) throws {
        rawReceiptType = try json.string("receiptType")
        appAppleId = try json.int64("appAppleId")
        bundleId = try json.string("bundleId")
        applicationVersion = try json.string("applicationVersion")
        versionExternalIdentifier = try json.int64("versionExternalIdentifier")
        receiptCreationDate = try json.timestamp("receiptCreationDate")
        originalPurchaseDate = try json.timestamp("originalPurchaseDate")
        originalApplicationVersion = try json.string("originalApplicationVersion")
        deviceVerification = try json.string("deviceVerification")
        deviceVerificationNonce = try json.string("deviceVerificationNonce")
        preorderDate = try json.timestamp("preorderDate")
        appTransactionId = try json.string("appTransactionId")
        rawOriginalPlatform = try json.string("originalPlatform")
        signedDate = try json.timestamp("signedDate")
    }
}

/// A retention-messaging realtime request: Apple's `DecodedRealtimeRequestBody`.
public struct RealtimeRequest: Sendable, Hashable {
    public let originalTransactionId: String?
    public let appAppleId: Int64?
    public let productId: String?
    public let userLocale: String?
    public let requestIdentifier: String?
    public let rawEnvironment: String?
    public let signedDate: Timestamp?

    /// The typed environment, or `nil` when absent or unknown.
    public var environment: AppStoreEnvironment? { rawEnvironment.flatMap(AppStoreEnvironment.init(rawValue:)) }

    init(json: JSONObject) throws {
        originalTransactionId = try json.string("originalTransactionId")
        appAppleId = try json.int64("appAppleId")
        productId = try json.string("productId")
        userLocale = try json.string("userLocale")
        requestIdentifier = try json.string("requestIdentifier")
        rawEnvironment = try json.string("environment")
        signedDate = try json.timestamp("signedDate")
    }
}
