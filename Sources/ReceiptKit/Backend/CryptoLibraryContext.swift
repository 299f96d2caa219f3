internal import CReceiptKitOpenSSL

/// A private OpenSSL library context with exactly OpenSSL's default provider loaded: the context
/// legacy receipts are verified in.
///
/// Every App Store receipt before 2023 is signed with SHA-1, and Apple Root CA and the older WWDR
/// intermediates are SHA-1 certificates. Distributions increasingly turn SHA-1 signatures off
/// through the system OpenSSL configuration (a "crypto policy"), which would silently make every
/// archived receipt fail. A context made by `OSSL_LIB_CTX_new()` reads no configuration file, so
/// no such policy applies in it; which digests a receipt may use is decided by ReceiptKit's own
/// envelope checks (SHA-1 or SHA-256, nothing else), not by the system.
final class CryptoLibraryContext: @unchecked Sendable {
    // @unchecked: the OSSL_LIB_CTX is created once and only used for fetches, which OpenSSL locks.
    let pointer: OpaquePointer
    private let provider: OpaquePointer

    /// The context for legacy receipts, or `nil` when OpenSSL could not create it.
    static let receipts = CryptoLibraryContext()

    private init?() {
        guard let context = OSSL_LIB_CTX_new() else {
            _ = OpenSSLErrorQueue.drain()
            return nil
        }
        guard let provider = OSSL_PROVIDER_load(context, "default") else {
            _ = OpenSSLErrorQueue.drain()
            OSSL_LIB_CTX_free(context)
            return nil
        }
        self.pointer = context
        self.provider = provider
    }

    deinit {
        OSSL_PROVIDER_unload(provider)
        OSSL_LIB_CTX_free(pointer)
    }
}
