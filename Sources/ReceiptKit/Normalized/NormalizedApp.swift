/// The app a payload describes, in the normalized schema: from an AppTransaction or from a
/// legacy receipt's app attributes.
public struct NormalizedApp: Sendable, Hashable {
    public let bundleId: String?
    public let applicationVersion: String?
    public let originalApplicationVersion: String?
    public let receiptCreationDate: Timestamp?
    public let expirationDate: Timestamp?
    public let originalPurchaseDate: Timestamp?
    public let preorderDate: Timestamp?
    /// The receipt type as written: `Production`, `ProductionSandbox`, `Sandbox`, `Xcode`, …
    public let receiptType: String?
    /// The App Apple ID (a receipt's `app_item_id`, an AppTransaction's `appAppleId`).
    public let appItemId: Int64?
    public let downloadId: Int64?
    public let versionExternalIdentifier: Int64?
    public let appTransactionId: String?
    public let originalPlatform: String?
    public let deviceVerification: String?
    public let deviceVerificationNonce: String?

    /// Creates an app block; a member its source does not carry is left out and stays `nil`.
    init(
        bundleId: String?, applicationVersion: String?, originalApplicationVersion: String?,
        receiptCreationDate: Timestamp?, expirationDate: Timestamp? = nil, originalPurchaseDate: Timestamp?,
        preorderDate: Timestamp? = nil, receiptType: String?, appItemId: Int64?, downloadId: Int64? = nil,
        versionExternalIdentifier: Int64?, appTransactionId: String? = nil, originalPlatform: String? = nil,
        deviceVerification: String? = nil, deviceVerificationNonce: String? = nil
    ) {
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.receiptCreationDate = receiptCreationDate
        self.expirationDate = expirationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.preorderDate = preorderDate
        self.receiptType = receiptType
        self.appItemId = appItemId
        self.downloadId = downloadId
        self.versionExternalIdentifier = versionExternalIdentifier
        self.appTransactionId = appTransactionId
        self.originalPlatform = originalPlatform
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
    }
}

extension NormalizedApp {
    /// Normalizes an AppTransaction.
    ///
    /// - Parameter app: The verified AppTransaction payload.
    public init(_ app: AppTransaction) {
        self.init(
            bundleId: app.bundleId, applicationVersion: app.applicationVersion,
            originalApplicationVersion: app.originalApplicationVersion, receiptCreationDate: app.receiptCreationDate,
            originalPurchaseDate: app.originalPurchaseDate, preorderDate: app.preorderDate,
            receiptType: app.rawReceiptType, appItemId: app.appAppleId,
            versionExternalIdentifier: app.versionExternalIdentifier, appTransactionId: app.appTransactionId,
            originalPlatform: app.rawOriginalPlatform, deviceVerification: app.deviceVerification,
            deviceVerificationNonce: app.deviceVerificationNonce)
    }

    func write(to writer: inout JSONWriter) {
        writer.object { json in
            json.member("bundle_id", bundleId)
            json.member("application_version", applicationVersion)
            json.member("original_application_version", originalApplicationVersion)
            json.member("receipt_creation_date", receiptCreationDate)
            json.member("expiration_date", expirationDate)
            json.member("original_purchase_date", originalPurchaseDate)
            json.member("preorder_date", preorderDate)
            json.member("receipt_type", receiptType)
            json.member("app_item_id", appItemId)
            json.member("download_id", downloadId)
            json.member("version_external_identifier", versionExternalIdentifier)
            json.member("app_transaction_id", appTransactionId)
            json.member("original_platform", originalPlatform)
            json.member("device_verification", deviceVerification)
            json.member("device_verification_nonce", deviceVerificationNonce)
        }
    }
}
