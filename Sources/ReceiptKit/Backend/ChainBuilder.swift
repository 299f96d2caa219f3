internal import CReceiptKitOpenSSL

/// Path validation by OpenSSL's `X509_verify_cert`, with explicit anchors and an explicit time.
enum ChainBuilder {
    /// Why OpenSSL refused a chain, in ReceiptKit's terms.
    struct Failure: Error {
        let code: ReceiptKitError.Code
        /// OpenSSL's verify error text, e.g. "certificate has expired".
        let openSSLReason: String
        /// The depth in the chain the error refers to (0 = leaf).
        let depth: Int
    }

    /// Validates `leaf` up to one of `anchors` through `intermediates` at `time`.
    ///
    /// Every certificate in `anchors` is a trust anchor in its own right (partial chains are
    /// allowed), no system store is consulted, and no purpose or policy is imposed beyond
    /// RFC 5280's path rules: the callers check Apple's profile themselves.
    ///
    /// - Parameters:
    ///   - leaf: The end-entity certificate.
    ///   - intermediates: Untrusted certificates available for building the path.
    ///   - anchors: Trusted certificates.
    ///   - time: The validation time (seconds resolution).
    ///   - library: The OpenSSL library context to verify in, or `nil` for the default one.
    /// - Returns: The path OpenSSL built, leaf first, as indexes into `[leaf] + intermediates + anchors`
    ///   resolved back to the given objects.
    /// - Throws: ``Failure``.
    static func validate(
        leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], time: Timestamp,
        library: CryptoLibraryContext? = nil
    ) throws -> [Certificate] {
        OpenSSLErrorQueue.clear()
        guard let store = X509_STORE_new() else {
            throw Failure(code: .invalidChain, openSSLReason: OpenSSLErrorQueue.drain() ?? "out of memory", depth: 0)
        }
        defer { X509_STORE_free(store) }
        for anchor in anchors where X509_STORE_add_cert(store, anchor.pointer) != 1 {
            _ = OpenSSLErrorQueue.drain()
        }
        guard let untrusted = rk_sk_X509_new_null() else {
            throw Failure(code: .invalidChain, openSSLReason: "out of memory", depth: 0)
        }
        defer { rk_sk_X509_free(untrusted) }
        for certificate in intermediates {
            _ = rk_sk_X509_push(untrusted, certificate.pointer)
        }
        guard let context = X509_STORE_CTX_new_ex(library?.pointer, nil) else {
            throw Failure(code: .invalidChain, openSSLReason: "out of memory", depth: 0)
        }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            throw Failure(code: .invalidChain, openSSLReason: OpenSSLErrorQueue.drain() ?? "X509_STORE_CTX_init failed", depth: 0)
        }
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_flags(parameters, rk_x509_v_flag_partial_chain())
        X509_VERIFY_PARAM_set_time(parameters, time_t(time.secondsSince1970))

        guard X509_verify_cert(context) == 1 else {
            let error = X509_STORE_CTX_get_error(context)
            let depth = Int(X509_STORE_CTX_get_error_depth(context))
            let text = X509_verify_cert_error_string(Int(error)).map { String(cString: $0) } ?? "error \(error)"
            _ = OpenSSLErrorQueue.drain()
            throw Failure(code: code(forVerifyError: error), openSSLReason: text, depth: depth)
        }
        guard let built = X509_STORE_CTX_get0_chain(context) else {
            throw Failure(code: .invalidChain, openSSLReason: "no chain was built", depth: 0)
        }
        let candidates = [leaf] + intermediates + anchors
        var path: [Certificate] = []
        for index in 0..<rk_sk_X509_num(built) {
            let element = rk_sk_X509_value(built, index)
            guard let match = candidates.first(where: { $0.pointer == element }) else {
                throw Failure(code: .invalidChain, openSSLReason: "chain holds an unexpected certificate", depth: Int(index))
            }
            path.append(match)
        }
        return path
    }

    private static func code(forVerifyError error: Int32) -> ReceiptKitError.Code {
        switch error {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            .certificateExpired
        case X509_V_ERR_CERT_NOT_YET_VALID:
            .certificateNotYetValid
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
            X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_UNTRUSTED:
            .untrustedRoot
        default:
            .invalidChain
        }
    }
}
