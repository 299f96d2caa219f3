internal import CReceiptKitOpenSSL

/// SHA-256 with a fixed prefix already absorbed: the digest of `prefix ‖ suffix` is finished from
/// this state for any suffix, without hashing the prefix again.
///
/// Every JWS signed by one leaf starts its signing input with the same `BASE64URL(header) "."`,
/// 3–4 KB of a 4–6 KB token, so a validated header keeps this state and each token hashes only
/// its payload segment. The state is only ever copied from, so any number of threads share it.
final class SHA256Prefix: @unchecked Sendable {
    // @unchecked: `context` is written once, in init, and afterwards only read (copied from).
    private let context: OpaquePointer

    /// Absorbs `prefix`; `nil` only if OpenSSL cannot allocate or initialize a digest.
    init?(_ prefix: UnsafeRawBufferPointer) {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_MD_CTX_new() else { return nil }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1,
            EVP_DigestUpdate(context, prefix.baseAddress, prefix.count) == 1
        else {
            _ = OpenSSLErrorQueue.drain()
            EVP_MD_CTX_free(context)
            return nil
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// SHA-256 of the prefix followed by `suffix`, or `nil` if OpenSSL fails (its errors are
    /// drained, not reported).
    func digest(appending suffix: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let work = EVP_MD_CTX_new() else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        defer { EVP_MD_CTX_free(work) }
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        guard EVP_MD_CTX_copy_ex(work, context) == 1,
            EVP_DigestUpdate(work, suffix.baseAddress, suffix.count) == 1,
            EVP_DigestFinal_ex(work, &digest, &length) == 1,
            Int(length) == digest.count
        else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        return digest
    }
}
