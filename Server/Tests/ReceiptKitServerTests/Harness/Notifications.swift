import Foundation

/// Builds the App Store payloads of a test story and signs them under the test PKI: a
/// transaction, a renewal info, and a notification carrying them, with an app's claims: the test
/// app's in Sandbox unless told otherwise.
struct Payloads: Sendable {
    let signer: TestSigner
    static let bundleId = "com.receiptkit.example"
    static let appAppleId: Int64 = 1_234_567_890
    static let productId = "com.receiptkit.example.premium.monthly"
    /// The app and environment every payload claims.
    let bundleId: String
    let appAppleId: Int64
    let environment: String

    init(bundleId: String = Self.bundleId, appAppleId: Int64 = Self.appAppleId, environment: String = "Sandbox") throws {
        signer = try .standard()
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }

    /// A signed auto-renewable subscription transaction.
    func transaction(
        id: String, original: String, purchase: Int64, expires: Int64, signed: Int64, token: String? = nil,
        freeTrial: Bool = false, revocation: Int64? = nil, revocationReason: Int? = nil, webOrderLineItemId: String? = nil,
        product: String = Self.productId, upgraded: Bool = false
    ) throws -> String {
        var members: [String: Any] = [
            "transactionId": id, "originalTransactionId": original, "bundleId": bundleId,
            "productId": product, "subscriptionGroupIdentifier": "21581234", "purchaseDate": purchase,
            "originalPurchaseDate": purchase, "expiresDate": expires, "quantity": 1,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": signed,
            "environment": environment, "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441",
            "price": freeTrial ? 0 : 9990, "currency": "USD",
        ]
        if let token { members["appAccountToken"] = token }
        if upgraded { members["isUpgraded"] = true }
        if let webOrderLineItemId { members["webOrderLineItemId"] = webOrderLineItemId }
        if freeTrial {
            members["offerType"] = 1
            members["offerDiscountType"] = "FREE_TRIAL"
            members["offerPeriod"] = "P1W"
        }
        if let revocation {
            members["revocationDate"] = revocation
            members["revocationReason"] = revocationReason ?? 0
        }
        return try signer.sign(Self.json(members))
    }

    /// A signed renewal info.
    func renewalInfo(
        original: String, signed: Int64, autoRenew: Bool = true, billingRetry: Bool? = nil, gracePeriodExpires: Int64? = nil,
        renewalDate: Int64? = nil, expirationIntent: Int? = nil, product: String = Self.productId, renewsAs: String? = nil
    ) throws -> String {
        var members: [String: Any] = [
            "originalTransactionId": original, "autoRenewProductId": renewsAs ?? product, "productId": product,
            "autoRenewStatus": autoRenew ? 1 : 0, "signedDate": signed, "environment": environment,
        ]
        if let billingRetry { members["isInBillingRetryPeriod"] = billingRetry }
        if let gracePeriodExpires { members["gracePeriodExpiresDate"] = gracePeriodExpires }
        if let renewalDate { members["renewalDate"] = renewalDate }
        if let expirationIntent { members["expirationIntent"] = expirationIntent }
        return try signer.sign(Self.json(members))
    }

    /// A signed notification with its data.
    func notification(
        type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(), signed: Int64,
        transaction: String?, renewalInfo: String?, status: Int? = nil
    ) throws -> String {
        var data: [String: Any] = [
            "appAppleId": appAppleId, "bundleId": bundleId, "bundleVersion": "42", "environment": environment,
        ]
        if let transaction { data["signedTransactionInfo"] = transaction }
        if let renewalInfo { data["signedRenewalInfo"] = renewalInfo }
        if let status { data["status"] = status }
        var members: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "data": data, "version": "2.0", "signedDate": signed,
        ]
        if let subtype { members["subtype"] = subtype }
        return try signer.sign(Self.json(members))
    }

    private static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}

/// Milliseconds since 1970 of a UTC date and time.
func ms(_ text: String) -> Int64 {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    guard let date = formatter.date(from: text) else { preconditionFailure("bad test date \(text)") }
    return Int64(date.timeIntervalSince1970 * 1000)
}

let day: Int64 = 86_400_000
