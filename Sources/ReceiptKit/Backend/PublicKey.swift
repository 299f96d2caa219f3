internal import CReceiptKitOpenSSL

/// A public key owned by this object (an OpenSSL `EVP_PKEY`), used only to verify.
///
/// OpenSSL allows one `EVP_PKEY` to be used by concurrent verifications; it is never mutated.
final class PublicKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is only read, and OpenSSL locks its provider-side caches.
    private let pointer: OpaquePointer

    init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// The curve name for an EC key (`prime256v1` for P-256), or `nil` for other key types.
    var ellipticCurveName: String? {
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &buffer, buffer.count, &length) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        return String(decoding: buffer.prefix(length).map(UInt8.init(bitPattern:)), as: UTF8.self)
    }

    /// Whether this is an EC key on P-256, the only key ES256 is defined for.
    var isP256: Bool { ellipticCurveName == "prime256v1" }

    /// Whether this is an RSA key.
    var isRSA: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA }

    /// The key's size in bits.
    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// Verifies a DER `Ecdsa-Sig-Value` over SHA-256 of `message`.
    ///
    /// - Returns: `true` when the signature verifies; `false` for any other outcome.
    func verifyECDSASHA256(derSignature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
        OpenSSLErrorQueue.clear()
        // Hash with the one-shot SHA256 and verify the digest: this skips fetching the digest
        // implementation by name and a digest context per call, the costs that matter when the
        // chain is cached and one ECDSA verification is nearly all that is left.
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = SHA256(message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count, &digest)
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_verify_init(context) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return false
        }
        let result = EVP_PKEY_verify(context, derSignature, derSignature.count, digest, digest.count)
        if result != 1 {
            _ = OpenSSLErrorQueue.drain()
        }
        return result == 1
    }

    /// Verifies an RSA PKCS #1 v1.5 signature over `message` hashed with `digest`
    /// (`"SHA1"` or `"SHA256"`).
    ///
    /// The padding is set explicitly, and the digest is fetched from `library` when given, so
    /// neither OpenSSL's defaults nor a system policy decide what verifies.
    ///
    /// - Returns: `true` when the key is RSA and the signature verifies; `false` otherwise.
    func verifyRSAPKCS1(
        digest: String, signature: [UInt8], message: UnsafeRawBufferPointer, library: CryptoLibraryContext? = nil
    ) -> Bool {
        guard isRSA else { return false }
        return verify(digest: digest, signature: signature, message: message, library: library, rsaPadding: RSA_PKCS1_PADDING)
    }

    private func verify(
        digest: String, signature: [UInt8], message: UnsafeRawBufferPointer,
        library: CryptoLibraryContext? = nil, rsaPadding: Int32? = nil
    ) -> Bool {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        guard EVP_DigestVerifyInit_ex(context, &keyContext, digest, library?.pointer, nil, pointer, nil) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            return false
        }
        if let rsaPadding {
            guard let keyContext, EVP_PKEY_CTX_set_rsa_padding(keyContext, rsaPadding) > 0 else {
                _ = OpenSSLErrorQueue.drain()
                return false
            }
        }
        let result = signature.withUnsafeBufferPointer { signature in
            EVP_DigestVerify(
                context, signature.baseAddress, signature.count,
                message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count)
        }
        if result != 1 {
            _ = OpenSSLErrorQueue.drain()
        }
        return result == 1
    }
}
