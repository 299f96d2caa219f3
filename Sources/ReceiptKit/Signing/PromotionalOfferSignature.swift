public import struct Foundation.UUID

/// A promotional offer signature of the original StoreKit API (V1): what
/// `SKPaymentDiscount` / `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`
/// take.
///
/// The signature is ECDSA P-256 over SHA-256 of the UTF-8 text
///
///     bundleId ⁣ keyId ⁣ productId ⁣ offerId ⁣ appAccountToken ⁣ nonce ⁣ timestamp
///
/// joined by U+2063 (INVISIBLE SEPARATOR), the app account token and the nonce in lowercase,
/// the timestamp in decimal milliseconds; it is written as base64 of its DER encoding.
public struct PromotionalOfferSignatureV1: Sendable, Hashable {
    /// The In-App Purchase key's identifier.
    public let keyId: String
    /// The nonce, a lowercase UUID.
    public let nonce: String
    /// When the signature was made, milliseconds since 1970 (StoreKit accepts it for 24 hours).
    public let timestamp: Int64
    /// Base64 of the DER ECDSA signature.
    public let signature: String

    /// The text a V1 signature signs (see the type's description).
    ///
    /// - Parameters:
    ///   - appAccountToken: The app account token, a UUID, or empty when the purchase sets none.
    public static func payload(
        bundleId: String, keyId: String, productId: String, offerId: String, appAccountToken: String, nonce: UUID,
        timestamp: Int64
    ) -> String {
        [bundleId, keyId, productId, offerId, appAccountToken.lowercased(), nonce.uuidString.lowercased(), String(timestamp)]
            .joined(separator: "\u{2063}")
    }

    /// Signs a promotional offer.
    ///
    /// - Parameters:
    ///   - key: The In-App Purchase key.
    ///   - bundleId: The app's bundle identifier.
    ///   - productId: The subscription's product identifier.
    ///   - offerId: The promotional offer's identifier in App Store Connect.
    ///   - appAccountToken: The purchase's app account token (a UUID), or empty.
    ///   - nonce: A UUID used once.
    ///   - timestamp: The signing instant, milliseconds since 1970.
    /// - Throws: ``ReceiptKitError`` `invalid_signing_input` for an empty identifier or an app
    ///   account token that is neither empty nor a UUID; `signing_failed` when OpenSSL fails.
    public init(
        key: InAppPurchaseKey, bundleId: String, productId: String, offerId: String, appAccountToken: String = "",
        nonce: UUID, timestamp: Int64
    ) throws {
        try self.init(
            keyId: key.keyId, signingKey: key.signingKey, bundleId: bundleId, productId: productId, offerId: offerId,
            appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
    }

    /// Signs a promotional offer with a key given by its id and private key (V1 needs no issuer
    /// id); see ``init(key:bundleId:productId:offerId:appAccountToken:nonce:timestamp:)``.
    public init(
        keyId: String, signingKey: ES256SigningKey, bundleId: String, productId: String, offerId: String,
        appAccountToken: String = "", nonce: UUID, timestamp: Int64
    ) throws {
        let fields = [("key id", keyId), ("bundle id", bundleId), ("product id", productId), ("offer id", offerId)]
        for (name, value) in fields where value.isEmpty {
            throw ReceiptKitError(.invalidSigningInput, "the \(name) is empty")
        }
        guard appAccountToken.isEmpty || UUID(uuidString: appAccountToken) != nil else {
            throw ReceiptKitError(.invalidSigningInput, "the app account token '\(appAccountToken)' is not a UUID")
        }
        let payload = Self.payload(
            bundleId: bundleId, keyId: keyId, productId: productId, offerId: offerId,
            appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
        self.keyId = keyId
        self.nonce = nonce.uuidString.lowercased()
        self.timestamp = timestamp
        self.signature = Base64.encodeStandard(try signingKey.derSignature(for: Array(payload.utf8)))
    }
}
