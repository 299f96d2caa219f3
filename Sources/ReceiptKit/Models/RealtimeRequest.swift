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

extension RealtimeRequest: SignedPayload {
    static var kind: PayloadKind { .realtimeRequest }
    var payloadDate: Timestamp? { signedDate }
    var claims: PayloadClaims { PayloadClaims(appAppleId: .some(appAppleId), environment: rawEnvironment) }
}
