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

extension AppTransaction: SignedPayload {
    static var kind: PayloadKind { .appTransaction }
    /// An AppTransaction is validated at its receipt's creation, as Apple's libraries do.
    var payloadDate: Timestamp? { receiptCreationDate ?? signedDate }
    var claims: PayloadClaims {
        PayloadClaims(bundleId: .some(bundleId), appAppleId: .some(appAppleId), environment: rawReceiptType)
    }
}
