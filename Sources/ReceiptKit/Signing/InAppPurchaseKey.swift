/// An In-App Purchase key from App Store Connect (Users and Access › Integrations › In-App
/// Purchase): its key identifier, the team's issuer identifier and the private key of its `.p8`
/// file. It signs App Store Server API tokens and the offers and requests StoreKit takes.
public struct InAppPurchaseKey: Sendable {
    /// The key's identifier (10 characters in App Store Connect): the JWS header's `kid`.
    public let keyId: String
    /// The issuer identifier (a UUID in App Store Connect): the `iss` claim.
    public let issuerId: String
    /// The private key.
    public let signingKey: ES256SigningKey

    /// Creates a key from its parts.
    ///
    /// - Throws: ``ReceiptKitError`` `invalid_signing_input` when the key or issuer identifier is
    ///   empty.
    public init(keyId: String, issuerId: String, signingKey: ES256SigningKey) throws {
        guard !keyId.isEmpty else { throw ReceiptKitError(.invalidSigningInput, "the key id is empty") }
        guard !issuerId.isEmpty else { throw ReceiptKitError(.invalidSigningInput, "the issuer id is empty") }
        self.keyId = keyId
        self.issuerId = issuerId
        self.signingKey = signingKey
    }

    /// Creates a key from a `.p8` file's PEM text.
    ///
    /// - Throws: ``ReceiptKitError`` `invalid_private_key` or `invalid_signing_input`.
    public init(keyId: String, issuerId: String, privateKeyPEM: String) throws {
        try self.init(keyId: keyId, issuerId: issuerId, signingKey: ES256SigningKey(pem: privateKeyPEM))
    }
}

/// A bearer token for the App Store Server API: an ES256 JWT with the header
/// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}` and the claims `iss`, `iat`, `exp`, `aud`
/// (`appstoreconnect-v1`) and `bid`, times in whole seconds since 1970.
public struct AppStoreServerAPIToken: Sendable {
    /// The `aud` claim Apple requires.
    public static let audience = "appstoreconnect-v1"
    /// The longest lifetime Apple accepts: `exp` at most 60 minutes after `iat`.
    public static let maximumLifetimeSeconds: Int64 = 3600

    /// The compact JWT, for `Authorization: Bearer …`.
    public let token: String
    /// The `iat` claim.
    public let issuedAt: Timestamp
    /// The `exp` claim.
    public let expiresAt: Timestamp

    /// Signs a token.
    ///
    /// - Parameters:
    ///   - key: The In-App Purchase key.
    ///   - bundleId: The app's bundle identifier (`bid`).
    ///   - issuedAt: The `iat` instant (whole seconds are kept).
    ///   - lifetimeSeconds: `exp` − `iat`, 1…3600.
    /// - Throws: ``ReceiptKitError`` `invalid_signing_input` for an empty bundle id or a lifetime
    ///   outside 1…3600 s; `signing_failed` when OpenSSL fails.
    public init(key: InAppPurchaseKey, bundleId: String, issuedAt: Timestamp, lifetimeSeconds: Int64) throws {
        guard !bundleId.isEmpty else { throw ReceiptKitError(.invalidSigningInput, "the bundle id is empty") }
        guard (1...Self.maximumLifetimeSeconds).contains(lifetimeSeconds) else {
            throw ReceiptKitError(
                .invalidSigningInput, "a token's lifetime is 1 to 3600 seconds (Apple's limit), not \(lifetimeSeconds)")
        }
        let iat = issuedAt.secondsSince1970
        var claims = JWTClaims()
        claims.add("iss", key.issuerId)
        claims.add("iat", iat)
        claims.add("exp", iat + lifetimeSeconds)
        claims.add("aud", Self.audience)
        claims.add("bid", bundleId)
        self.token = try key.signingKey.compactJWS(payload: claims.json, keyId: key.keyId, type: "JWT")
        self.issuedAt = Timestamp(millisecondsSince1970: iat * 1000)
        self.expiresAt = Timestamp(millisecondsSince1970: (iat + lifetimeSeconds) * 1000)
    }
}
