/// An App Store Server Notification V2: Apple's `ResponseBodyV2DecodedPayload`.
///
/// Exactly one of ``data``, ``summary``, ``externalPurchaseToken`` or ``appData`` is expected;
/// the nested signed JWS inside ``data`` and ``appData`` are verified separately by
/// ``AppStoreVerifier/verifyNotification(_:)``.
public struct NotificationPayload: Sendable, Hashable {
    public let rawNotificationType: String?
    public let rawSubtype: String?
    public let notificationUUID: String?
    public let data: NotificationData?
    public let version: String?
    /// The version as the early-2022 notifications wrote it (`notificationVersion` "2.0", with
    /// no `version` and no `signedDate`).
    public let notificationVersion: String?
    public let signedDate: Timestamp?
    public let summary: NotificationSummary?
    public let externalPurchaseToken: ExternalPurchaseToken?
    public let appData: NotificationAppData?

    init(json: JSONObject) throws {
        rawNotificationType = try json.string("notificationType")
        rawSubtype = try json.string("subtype")
        notificationUUID = try json.string("notificationUUID")
        data = try json.object("data").map(NotificationData.init(json:))
        version = try json.string("version")
        notificationVersion = try json.string("notificationVersion")
        signedDate = try json.timestamp("signedDate")
        summary = try json.object("summary").map(NotificationSummary.init(json:))
        externalPurchaseToken = try json.object("externalPurchaseToken").map(ExternalPurchaseToken.init(json:))
        appData = try json.object("appData").map(NotificationAppData.init(json:))
    }

    /// The bundle identifier from `data`, `summary`, `externalPurchaseToken` or `appData`.
    public var bundleId: String? {
        data?.bundleId ?? summary?.bundleId ?? externalPurchaseToken?.bundleId ?? appData?.bundleId
    }

    /// The App Apple ID from `data`, `summary`, `externalPurchaseToken` or `appData`.
    public var appAppleId: Int64? {
        data?.appAppleId ?? summary?.appAppleId ?? externalPurchaseToken?.appAppleId ?? appData?.appAppleId
    }

    /// The raw environment: from `data`, `summary` or `appData`, or derived as Apple does for an
    /// external purchase token (an id starting with `SANDBOX` is Sandbox, any other Production).
    public var rawEnvironment: String? {
        if let data { return data.rawEnvironment }
        if let summary { return summary.rawEnvironment }
        if let externalPurchaseToken {
            guard let id = externalPurchaseToken.externalPurchaseId else { return nil }
            return id.hasPrefix("SANDBOX") ? AppStoreEnvironment.sandbox.rawValue : AppStoreEnvironment.production.rawValue
        }
        return appData?.rawEnvironment
    }

    /// The typed environment, or `nil` when absent or unknown.
    public var environment: AppStoreEnvironment? { rawEnvironment.flatMap(AppStoreEnvironment.init(rawValue:)) }
}

extension NotificationPayload: SignedPayload {
    static var kind: PayloadKind { .notification }
    var payloadDate: Timestamp? { signedDate }
    var claims: PayloadClaims {
        PayloadClaims(bundleId: .some(bundleId), appAppleId: .some(appAppleId), environment: rawEnvironment)
    }
}

/// The `data` of a notification about a transaction or subscription.
public struct NotificationData: Sendable, Hashable {
    public let rawEnvironment: String?
    public let appAppleId: Int64?
    public let bundleId: String?
    public let bundleVersion: String?
    /// The nested transaction JWS, verified with the notification.
    public var signedTransactionInfo: String? { signedTransactionInfoBytes.map { String(decoding: $0, as: UTF8.self) } }
    /// The nested renewal info JWS, verified with the notification.
    public var signedRenewalInfo: String? { signedRenewalInfoBytes.map { String(decoding: $0, as: UTF8.self) } }
    /// The nested JWS as read, the bytes the verifier checks: a string is made only when asked for.
    let signedTransactionInfoBytes: [UInt8]?
    let signedRenewalInfoBytes: [UInt8]?
    /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public let status: Int32?
    public let rawConsumptionRequestReason: String?

    init(json: JSONObject) throws {
        rawEnvironment = try json.string("environment")
        appAppleId = try json.int64("appAppleId")
        bundleId = try json.string("bundleId")
        bundleVersion = try json.string("bundleVersion")
        signedTransactionInfoBytes = try json.utf8String("signedTransactionInfo")
        signedRenewalInfoBytes = try json.utf8String("signedRenewalInfo")
        status = try json.int32("status")
        rawConsumptionRequestReason = try json.string("consumptionRequestReason")
    }
}

/// The `summary` of a notification about a completed mass renewal-date extension.
public struct NotificationSummary: Sendable, Hashable {
    public let rawEnvironment: String?
    public let appAppleId: Int64?
    public let bundleId: String?
    public let productId: String?
    public let requestIdentifier: String?
    public let storefrontCountryCodes: [String]?
    public let succeededCount: Int64?
    public let failedCount: Int64?

    init(json: JSONObject) throws {
        rawEnvironment = try json.string("environment")
        appAppleId = try json.int64("appAppleId")
        bundleId = try json.string("bundleId")
        productId = try json.string("productId")
        requestIdentifier = try json.string("requestIdentifier")
        storefrontCountryCodes = try json.strings("storefrontCountryCodes")
        succeededCount = try json.int64("succeededCount")
        failedCount = try json.int64("failedCount")
    }
}

/// The `externalPurchaseToken` of an `EXTERNAL_PURCHASE_TOKEN` notification.
public struct ExternalPurchaseToken: Sendable, Hashable {
    public let externalPurchaseId: String?
    public let tokenCreationDate: Timestamp?
    public let appAppleId: Int64?
    public let bundleId: String?

    init(json: JSONObject) throws {
        externalPurchaseId = try json.string("externalPurchaseId")
        tokenCreationDate = try json.timestamp("tokenCreationDate")
        appAppleId = try json.int64("appAppleId")
        bundleId = try json.string("bundleId")
    }
}

/// The `appData` of a notification about the app itself (e.g. `RESCIND_CONSENT`).
public struct NotificationAppData: Sendable, Hashable {
    public let appAppleId: Int64?
    public let bundleId: String?
    public let rawEnvironment: String?
    /// The nested app transaction JWS, verified with the notification.
    public var signedAppTransactionInfo: String? {
        signedAppTransactionInfoBytes.map { String(decoding: $0, as: UTF8.self) }
    }
    /// The nested JWS as read, the bytes the verifier checks.
    let signedAppTransactionInfoBytes: [UInt8]?

    init(json: JSONObject) throws {
        appAppleId = try json.int64("appAppleId")
        bundleId = try json.string("bundleId")
        rawEnvironment = try json.string("environment")
        signedAppTransactionInfoBytes = try json.utf8String("signedAppTransactionInfo")
    }
}
