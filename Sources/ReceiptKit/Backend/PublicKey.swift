internal import CReceiptKitOpenSSL

/// A public key owned by this object (an OpenSSL `EVP_PKEY`), used only to verify.
///
/// OpenSSL allows one `EVP_PKEY` to be used by concurrent verifications; it is never mutated.
final class PublicKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is only read, and OpenSSL locks its provider-side caches.
    private let pointer: OpaquePointer
    /// Verification contexts for this key not in use by any thread (`EVP_PKEY_CTX`).
    private let verificationContexts = ContextPool()

    init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)  // pooled contexts hold their own reference to the key
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

    /// Verifies a DER `Ecdsa-Sig-Value` over a SHA-256 `digest` (ES256 once the signing input
    /// is hashed; see ``SHA256Prefix``).
    ///
    /// The verification context is taken from a small pool: creating one and initializing it for
    /// verification costs OpenSSL a provider lookup, a sizeable part of what is left per token
    /// once the chain is cached. A context is reused only after a successful verification.
    ///
    /// No OpenSSL error is reported from here, so the error queue is only drained on failure
    /// (which leaves it empty for the next reported operation), not cleared up front.
    ///
    /// - Returns: `true` when the signature verifies; `false` for any other outcome.
    func verifyECDSA(derSignature: [UInt8], digest: [UInt8]) -> Bool {
        guard let context = verificationContexts.take() ?? newVerificationContext() else {
            _ = OpenSSLErrorQueue.drain()
            return false
        }
        let result = EVP_PKEY_verify(context, derSignature, derSignature.count, digest, digest.count)
        guard result == 1 else {
            _ = OpenSSLErrorQueue.drain()
            EVP_PKEY_CTX_free(context)
            return false
        }
        verificationContexts.give(context)
        return true
    }

    /// A context for this key, initialized for verification.
    private func newVerificationContext() -> OpaquePointer? {
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { return nil }
        guard EVP_PKEY_verify_init(context) == 1 else {
            EVP_PKEY_CTX_free(context)
            return nil
        }
        return context
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

/// Key contexts (`EVP_PKEY_CTX`) that no thread is using, at most ``capacity`` of them.
///
/// A context is used by one thread at a time: ``take()`` removes it, ``give(_:)`` returns it
/// (or frees it when the pool is full).
private final class ContextPool: Sendable {
    private let free = ReadWriteLocked<[OpaquePointer]>([])
    /// Enough for one context per worker thread of a busy server.
    private let capacity = 64

    func take() -> OpaquePointer? {
        free.write { $0.popLast() }
    }

    func give(_ context: OpaquePointer) {
        let kept = free.write { contexts -> Bool in
            guard contexts.count < capacity else { return false }
            contexts.append(context)
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context) }
    }

    deinit {
        free.write { contexts in contexts.forEach { EVP_PKEY_CTX_free($0) } }
    }
}
