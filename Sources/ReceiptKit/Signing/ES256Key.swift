/// A P-256 private key that makes ES256 signatures: the In-App Purchase key App Store Connect
/// issues as a `.p8` file (PKCS #8 PEM).
///
/// The key is read and used by OpenSSL; it is immutable and may sign from any number of threads
/// at once.
public struct ES256SigningKey: Sendable {
    let key: PrivateKey
    /// The public half, to check signatures this key made.
    public let publicKey: ES256PublicKey

    /// Reads an unencrypted PEM private key on P-256: PKCS #8 (`-----BEGIN PRIVATE KEY-----`, a
    /// `.p8` file's content) or SEC 1 (`-----BEGIN EC PRIVATE KEY-----`).
    ///
    /// - Parameter pem: The PEM text.
    /// - Throws: ``ReceiptKitError`` `invalid_private_key` when it is not such a key.
    public init(pem: String) throws {
        try self.init(pemBytes: Array(pem.utf8))
    }

    /// Reads an unencrypted PEM private key on P-256 from its bytes (see ``init(pem:)``).
    public init(pemBytes: [UInt8]) throws {
        self.key = try PrivateKey(pem: pemBytes)
        self.publicKey = try ES256PublicKey(subjectPublicKeyInfo: key.subjectPublicKeyInfo())
    }

    /// Signs `message` (ECDSA P-256 over its SHA-256) and returns the JWS form `r ‖ s`, 64 bytes
    /// (RFC 7518 §3.4).
    ///
    /// - Throws: ``ReceiptKitError`` `signing_failed` with OpenSSL's error text.
    public func signature(for message: some Collection<UInt8>) throws -> [UInt8] {
        try ECDSASignatureEncoding.raw(fromDER: derSignature(for: message))
    }

    /// Signs `message` (ECDSA P-256 over its SHA-256) and returns the DER `Ecdsa-Sig-Value`, the
    /// form StoreKit's promotional offer signature (V1) carries.
    ///
    /// - Throws: ``ReceiptKitError`` `signing_failed` with OpenSSL's error text.
    public func derSignature(for message: some Collection<UInt8>) throws -> [UInt8] {
        try Array(message).withUnsafeBytes { try key.signECDSASHA256($0) }
    }
}

/// A P-256 public key that checks ES256 signatures.
public struct ES256PublicKey: Sendable {
    let key: PublicKey
    /// The key as a DER `SubjectPublicKeyInfo`.
    public let subjectPublicKeyInfo: [UInt8]

    /// Reads a DER `SubjectPublicKeyInfo` holding a P-256 key.
    ///
    /// - Throws: ``ReceiptKitError`` `invalid_public_key` when it is not one.
    public init(subjectPublicKeyInfo der: [UInt8]) throws {
        self.key = try PublicKey.p256(subjectPublicKeyInfo: der)
        self.subjectPublicKeyInfo = der
    }

    /// Whether `signature`, in the JWS form `r ‖ s`, is this key's ES256 signature of `message`.
    ///
    /// - Returns: `false` for a malformed signature as for a wrong one.
    public func isValidSignature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
        guard let converted = try? ES256Signature(raw: signature) else { return false }
        return isValidDERSignature(converted.der, for: message)
    }

    /// Whether `signature`, a DER `Ecdsa-Sig-Value`, is this key's ECDSA-SHA256 signature of
    /// `message`.
    public func isValidDERSignature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
        key.verifyECDSA(derSignature: signature, digest: Digest.sha256(Array(message)))
    }
}
