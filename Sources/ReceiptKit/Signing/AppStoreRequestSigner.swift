public import struct Foundation.UUID

/// Signs the JWS StoreKit takes from a server ("Generating JWS to sign App Store requests"):
/// promotional offers (V2), introductory offer eligibility and Advanced Commerce in-app requests.
///
/// Each is a compact JWS with the header `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}` and the claims
/// `iss` (issuer id), `bid`, `aud` (the request's audience), `iat` (whole seconds) and a fresh
/// `nonce` (a lowercase UUID), followed by the request's own claims.
public struct AppStoreRequestSigner: Sendable {
    /// The `aud` of a promotional offer (V2) signature.
    public static let promotionalOfferAudience = "promotional-offer"
    /// The `aud` of an introductory offer eligibility signature.
    public static let introductoryOfferEligibilityAudience = "introductory-offer-eligibility"
    /// The `aud` of an Advanced Commerce in-app request.
    public static let advancedCommerceAudience = "advanced-commerce-api"

    /// The key that signs.
    public let key: InAppPurchaseKey
    /// The app's bundle identifier (`bid`).
    public let bundleId: String

    /// Creates a signer.
    ///
    /// - Throws: ``ReceiptKitError`` `invalid_signing_input` when the bundle id is empty.
    public init(key: InAppPurchaseKey, bundleId: String) throws {
        guard !bundleId.isEmpty else { throw ReceiptKitError(.invalidSigningInput, "the bundle id is empty") }
        self.key = key
        self.bundleId = bundleId
    }

    /// A promotional offer signature (V2): claims `productId`, `offerIdentifier` and, when given,
    /// `transactionId`.
    ///
    /// - Parameters:
    ///   - productId: The subscription's product identifier.
    ///   - offerIdentifier: The promotional offer's identifier in App Store Connect.
    ///   - transactionId: Any transaction id of the customer (an `appTransactionId` too); optional
    ///     but recommended by Apple.
    ///   - issuedAt: The `iat` instant.
    ///   - nonce: The `nonce`; a new one by default.
    /// - Throws: ``ReceiptKitError`` `invalid_signing_input` or `signing_failed`.
    public func promotionalOfferV2(
        productId: String, offerIdentifier: String, transactionId: String? = nil, issuedAt: Timestamp, nonce: UUID = UUID()
    ) throws -> String {
        try requireNonEmpty(("product id", productId), ("offer identifier", offerIdentifier))
        if let transactionId { try requireNonEmpty(("transaction id", transactionId)) }
        var claims = baseClaims(audience: Self.promotionalOfferAudience, issuedAt: issuedAt, nonce: nonce)
        claims.add("productId", productId)
        claims.add("offerIdentifier", offerIdentifier)
        claims.add("transactionId", transactionId)
        return try sign(claims)
    }

    /// An introductory offer eligibility signature: claims `productId`, `allowIntroductoryOffer`
    /// and `transactionId`.
    ///
    /// - Parameters:
    ///   - productId: The subscription's product identifier.
    ///   - allowIntroductoryOffer: Whether the customer may take the introductory offer.
    ///   - transactionId: Any transaction id of the customer (an `appTransactionId` too).
    ///   - issuedAt: The `iat` instant.
    ///   - nonce: The `nonce`; a new one by default.
    /// - Throws: ``ReceiptKitError`` `invalid_signing_input` or `signing_failed`.
    public func introductoryOfferEligibility(
        productId: String, allowIntroductoryOffer: Bool, transactionId: String, issuedAt: Timestamp, nonce: UUID = UUID()
    ) throws -> String {
        try requireNonEmpty(("product id", productId), ("transaction id", transactionId))
        var claims = baseClaims(audience: Self.introductoryOfferEligibilityAudience, issuedAt: issuedAt, nonce: nonce)
        claims.add("productId", productId)
        claims.add("allowIntroductoryOffer", allowIntroductoryOffer)
        claims.add("transactionId", transactionId)
        return try sign(claims)
    }

    /// An Advanced Commerce in-app request: the claim `request` is the standard base64 of the
    /// request's JSON text, exactly as given.
    ///
    /// - Parameters:
    ///   - requestJSON: The request object (for example a `SubscriptionCreateRequest`) as UTF-8
    ///     JSON text.
    ///   - issuedAt: The `iat` instant.
    ///   - nonce: The `nonce`; a new one by default.
    /// - Throws: ``ReceiptKitError`` `invalid_signing_input` when the request is not a strict JSON
    ///   object; `signing_failed` when OpenSSL fails.
    public func advancedCommerceRequest(_ requestJSON: [UInt8], issuedAt: Timestamp, nonce: UUID = UUID()) throws -> String {
        _ = try JSONDocument(parsingObject: requestJSON, code: .invalidSigningInput, what: "the Advanced Commerce request")
        var claims = baseClaims(audience: Self.advancedCommerceAudience, issuedAt: issuedAt, nonce: nonce)
        claims.add("request", Base64.encodeStandard(requestJSON))
        return try sign(claims)
    }

    private func baseClaims(audience: String, issuedAt: Timestamp, nonce: UUID) -> JWTClaims {
        var claims = JWTClaims()
        claims.add("iss", key.issuerId)
        claims.add("bid", bundleId)
        claims.add("aud", audience)
        claims.add("iat", issuedAt.secondsSince1970)
        claims.add("nonce", nonce.uuidString.lowercased())
        return claims
    }

    private func sign(_ claims: JWTClaims) throws -> String {
        try key.signingKey.compactJWS(payload: claims.json, keyId: key.keyId, type: "JWT")
    }

    private func requireNonEmpty(_ fields: (String, String)...) throws {
        for (name, value) in fields where value.isEmpty {
            throw ReceiptKitError(.invalidSigningInput, "the \(name) is empty")
        }
    }
}
