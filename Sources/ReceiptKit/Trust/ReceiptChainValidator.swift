/// Validates the certificates a legacy receipt embeds against the trust anchors.
///
/// A receipt's certificates are not covered by its signature, so nothing the envelope says is
/// taken on trust. The rules, in order:
/// 1. Every certificate parses as DER, outside its signed part too (`malformed_certificate`).
/// 2. One certificate: Xcode's StoreKit Testing receipts. It must be the signer and is trusted
///    only if byte-identical to a root certificate the user supplied; never under a pin
///    (`untrusted_root`). Its key must be RSA of at least 2048 bits (`invalid_chain`).
/// 3. Otherwise exactly three, as Apple embeds them: leaf, intermediate, root
///    (`invalid_chain_length`).
/// 4. Apple's profile (``AppleChainProfile``): the leaf is the signer the SignerInfo names, is not a CA, its keyUsage (if
///    any) allows digitalSignature, its key is RSA of at least 2048 bits; the intermediate is a CA
///    (`invalid_chain`).
/// 5. Anchor: the embedded root, when its SHA-256 is pinned or it is byte-identical to a supplied
///    root (`untrusted_root`). A supplied root never stands in for the embedded one: they must be
///    the same certificate.
/// 6. OpenSSL path validation at the validation time (`untrusted_root`, `certificate_expired`,
///    `certificate_not_yet_valid`, `invalid_chain`), in ReceiptKit's own library context so SHA-1
///    certificates verify whatever the system's crypto policy, and with no purpose check: Xcode's
///    certificate carries a critical code-signing extended key usage. The path must be
///    leaf → intermediate → root.
/// 7. Apple's marker extensions on the leaf and the intermediate (`missing_apple_extension`);
///    the leaf's common name has changed over the years and is not checked.
struct ReceiptChainValidator: Sendable {
    let anchors: TrustAnchors
    let library: CryptoLibraryContext
    /// Chains this verifier already validated, keyed by the exact bytes of the certificates and
    /// the signer's index; reused only inside their validity window.
    let cache: BoundedCache<ReceiptChainKey, CachedChain>

    /// Apple's profile, with reasons naming the certificates by their place in the envelope.
    static let profile = AppleChainProfile(
        leaf: "leaf certificate 0", intermediate: "intermediate certificate 1", root: "root certificate 2")

    /// The smallest RSA key a receipt signer may have.
    static let minimumRSAKeyBits = 2048

    /// Validates `certificates` (DER, in the envelope's order) at `time`.
    ///
    /// - Parameters:
    ///   - certificates: The envelope's certificates.
    ///   - signerIndex: The index of the certificate the SignerInfo names.
    ///   - time: The validation time.
    /// - Returns: The chain, with the signer's key.
    /// - Throws: ``ReceiptKitError`` naming the failed rule and certificate.
    func validate(_ certificates: [[UInt8]], signerIndex: Int, at time: Timestamp) throws -> ValidatedChain {
        let key = ReceiptChainKey(certificates: ChainKey(certificates), signerIndex: signerIndex)
        if let cached = cache.value(for: key), cached.covers(time) {
            return cached.chain
        }
        let (validated, path) = try validateUncached(certificates, signerIndex: signerIndex, at: time)
        if let window = AppleChainProfile.window(of: path) {
            cache.insert(CachedChain(chain: validated, window: window), for: key)
        }
        return validated
    }

    /// Validates a receipt's chain from scratch. One function on purpose: it runs the checks in
    /// the order `docs/security.md` gives them (decoding, count, roles, key, path, markers), each
    /// with its own error, so the order is read in one place.
    private func validateUncached(
        _ certificates: [[UInt8]], signerIndex: Int, at time: Timestamp
    ) throws -> (ValidatedChain, [Certificate]) {
        let parsed = try certificates.enumerated().map { index, der in
            do {
                let certificate = try Certificate(der: der, library: library)
                guard certificate.isDistinguishedEncoding else {
                    throw ReceiptKitError(.malformedCertificate, "the certificate is not DER-encoded")
                }
                return certificate
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "receipt certificate \(index): \(error.reason)", underlyingError: error.underlyingError)
            }
        }
        if parsed.count == 1 {
            return try validateSelfSigned(parsed[0], at: time)
        }
        guard parsed.count == AppleChainProfile.length else {
            throw ReceiptKitError(.invalidChainLength,
                                  "the receipt embeds \(parsed.count) certificates; App Store receipts embed exactly 3")
        }
        guard signerIndex == 0 else {
            throw ReceiptKitError(.invalidChain,
                                  "the SignerInfo names receipt certificate \(signerIndex); Apple's signer is the first certificate")
        }
        let leaf = parsed[0]
        let intermediate = parsed[1]
        let embeddedRoot = parsed[2]
        let profile = Self.profile
        let leafKey = try Self.signingKey(of: leaf, "leaf certificate 0")
        try profile.checkLeafRole(leaf)
        try profile.checkIntermediateRole(intermediate)

        let pinned = anchors.receiptPins.contains(embeddedRoot.sha256)
        guard pinned || anchors.roots.contains(where: { $0.isByteIdentical(to: embeddedRoot) }) else {
            let root = "root certificate 2 \(embeddedRoot.subjectDescription) (SHA-256 \(Hex.encode(embeddedRoot.sha256)))"
            throw ReceiptKitError(
                .untrustedRoot,
                anchors.roots.isEmpty
                    ? "\(root) is not a pinned root"
                    : "\(root) is neither pinned nor byte-identical to a supplied root; a receipt's certificates are not signed, so a supplied root must be the one it embeds")
        }

        let path = try profile.buildPath(leaf: leaf, intermediate: intermediate, anchors: [embeddedRoot], at: time, library: library)
        guard path.count == 3, path[1] === intermediate, path[2] === embeddedRoot else {
            throw ReceiptKitError(.invalidChain, "the path OpenSSL built is not leaf → intermediate → root (\(path.count) certificates)")
        }
        try profile.checkMarkers(leaf: leaf, intermediate: intermediate)
        let validated = ValidatedChain(
            leafKey: leafKey,
            summary: ChainSummary(rootSHA256: Hex.encode(embeddedRoot.sha256), leafSHA256: Hex.encode(leaf.sha256),
                                  leafNotAfter: leaf.notAfter),
            path: path, names: ["receipt leaf", "receipt intermediate", "receipt root"])
        return (validated, path)
    }

    /// Xcode's StoreKit Testing receipts: one self-signed certificate, trusted only when the user
    /// supplied that exact certificate as a root.
    private func validateSelfSigned(_ certificate: Certificate, at time: Timestamp) throws -> (ValidatedChain, [Certificate]) {
        guard anchors.roots.contains(where: { $0.isByteIdentical(to: certificate) }) else {
            throw ReceiptKitError(
                .untrustedRoot,
                "the receipt embeds one certificate \(certificate.subjectDescription) (Xcode StoreKit Testing); it verifies only against a root file byte-identical to it")
        }
        let key = try Self.signingKey(of: certificate, "certificate 0")
        let path = try AppleChainProfile.buildPath(
            leaf: certificate, intermediates: [], anchors: [certificate], at: time, names: ["certificate 0"], library: library)
        let fingerprint = Hex.encode(certificate.sha256)
        let validated = ValidatedChain(
            leafKey: key,
            summary: ChainSummary(rootSHA256: fingerprint, leafSHA256: fingerprint, leafNotAfter: certificate.notAfter),
            path: path, names: ["receipt signer"])
        return (validated, path)
    }

    /// The signer's key, which must be RSA of at least ``minimumRSAKeyBits`` bits.
    private static func signingKey(of certificate: Certificate, _ name: String) throws -> PublicKey {
        let key = try certificate.publicKey()
        guard key.isRSA, key.bits >= minimumRSAKeyBits else {
            throw ReceiptKitError(
                .invalidChain,
                "\(name) \(certificate.subjectDescription) key is \(key.isRSA ? "RSA-\(key.bits)" : "not RSA"); receipts are signed with RSA of at least \(minimumRSAKeyBits) bits")
        }
        return key
    }
}

/// A receipt's certificates and the index of the one its SignerInfo names.
struct ReceiptChainKey: Hashable, Sendable {
    let certificates: ChainKey
    let signerIndex: Int
}
