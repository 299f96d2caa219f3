internal import CReceiptKitOpenSSL

/// A P-256 private key owned by this object (an OpenSSL `EVP_PKEY`), used only to sign ES256.
///
/// OpenSSL allows one `EVP_PKEY` to be used by concurrent signings, each with its own digest
/// context; the key itself is never mutated after it is read.
final class PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is only read after init, and every signing has its own EVP_MD_CTX.
    private let pointer: OpaquePointer

    /// Reads an unencrypted PEM private key (PKCS #8 `PRIVATE KEY`, as App Store Connect's `.p8`
    /// files hold, or SEC 1 `EC PRIVATE KEY`) and requires it to be an EC key on P-256.
    ///
    /// - Parameter pem: The PEM text's bytes.
    /// - Throws: ``ReceiptKitError/Code/invalidPrivateKey`` when the text is not such a key, with
    ///   OpenSSL's error text.
    init(pem: [UInt8]) throws {
        OpenSSLErrorQueue.clear()
        let key: OpaquePointer? = pem.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            // A callback that supplies no password: without it OpenSSL would prompt on the
            // terminal for an encrypted key.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else {
            throw ReceiptKitError(
                .invalidPrivateKey, "the private key is not an unencrypted PEM private key (PKCS #8 '.p8' expected)",
                underlyingError: OpenSSLErrorQueue.drain())
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            EVP_PKEY_free(key)
            throw ReceiptKitError(.invalidPrivateKey, "the private key is not an EC key; ES256 needs a P-256 key")
        }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        let curve: String? = EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1
            ? String(decoding: buffer.prefix(length).map(UInt8.init(bitPattern:)), as: UTF8.self) : nil
        guard curve == "prime256v1" else {
            _ = OpenSSLErrorQueue.drain()
            EVP_PKEY_free(key)
            throw ReceiptKitError(
                .invalidPrivateKey, "the private key is on curve \(curve ?? "unknown"); ES256 needs P-256 (prime256v1)")
        }
        self.pointer = key
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Signs `message` with ECDSA over SHA-256 and returns the DER `Ecdsa-Sig-Value`.
    ///
    ///     Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }
    ///
    /// - Throws: ``ReceiptKitError/Code/signingFailed`` with OpenSSL's error text.
    func signECDSASHA256(_ message: UnsafeRawBufferPointer) throws -> [UInt8] {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_MD_CTX_new() else {
            throw ReceiptKitError(.signingFailed, "OpenSSL could not allocate a digest context",
                                  underlyingError: OpenSSLErrorQueue.drain())
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit_ex(context, nil, "SHA256", nil, nil, pointer, nil) == 1 else {
            throw ReceiptKitError(.signingFailed, "OpenSSL could not start an ECDSA-SHA256 signature",
                                  underlyingError: OpenSSLErrorQueue.drain())
        }
        let bytes = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var length = 0
        guard EVP_DigestSign(context, nil, &length, bytes, message.count) == 1 else {
            throw ReceiptKitError(.signingFailed, "OpenSSL could not size the signature", underlyingError: OpenSSLErrorQueue.drain())
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, bytes, message.count) == 1 else {
            throw ReceiptKitError(.signingFailed, "OpenSSL could not sign", underlyingError: OpenSSLErrorQueue.drain())
        }
        der.removeSubrange(length...)
        return der
    }

    /// The public half as a DER `SubjectPublicKeyInfo` (RFC 5280 §4.1.2.7).
    ///
    ///     SubjectPublicKeyInfo ::= SEQUENCE {
    ///         algorithm         AlgorithmIdentifier,
    ///         subjectPublicKey  BIT STRING }
    func subjectPublicKeyInfo() -> [UInt8] {
        let length = i2d_PUBKEY(pointer, nil)
        guard length > 0 else {
            _ = OpenSSLErrorQueue.drain()
            preconditionFailure("OpenSSL could not encode the public half of a key it read")
        }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_PUBKEY(pointer, &cursor)
        }
        return der
    }
}

extension PublicKey {
    /// Reads a DER `SubjectPublicKeyInfo` and requires an EC key on P-256.
    ///
    /// - Throws: ``ReceiptKitError/Code/invalidPublicKey`` when it is not one.
    static func p256(subjectPublicKeyInfo der: [UInt8]) throws -> PublicKey {
        OpenSSLErrorQueue.clear()
        let pointer: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pointer else {
            throw ReceiptKitError(.invalidPublicKey, "the public key is not a DER SubjectPublicKeyInfo",
                                  underlyingError: OpenSSLErrorQueue.drain())
        }
        let key = PublicKey(owning: pointer)
        guard key.isP256 else {
            throw ReceiptKitError(.invalidPublicKey, "the public key is not an EC key on P-256")
        }
        return key
    }
}

/// Conversions between the two encodings of an ECDSA P-256 signature.
enum ECDSASignatureEncoding {
    /// The JWS form (`r ‖ s`, 32 bytes each, RFC 7518 §3.4) of a DER `Ecdsa-Sig-Value`.
    ///
    ///     Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }
    ///
    /// - Throws: ``ReceiptKitError/Code/signingFailed`` when OpenSSL's own signature does not
    ///   parse or a scalar does not fit 32 bytes.
    static func raw(fromDER der: [UInt8]) throws -> [UInt8] {
        OpenSSLErrorQueue.clear()
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else {
            throw ReceiptKitError(.signingFailed, "the DER signature does not parse", underlyingError: OpenSSLErrorQueue.drain())
        }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(ECDSA_SIG_get0_r(signature), base, 32) == 32
                && BN_bn2binpad(ECDSA_SIG_get0_s(signature), base + 32, 32) == 32
        }
        guard written else {
            throw ReceiptKitError(.signingFailed, "a signature scalar does not fit 32 bytes", underlyingError: OpenSSLErrorQueue.drain())
        }
        return raw
    }
}
