/// Validates a JWS `x5c` chain against the trust anchors, as App Store data requires.
///
/// The rules, in order:
/// 1. One certificate: Xcode's StoreKit Testing path. It is trusted only if byte-identical to a
///    root certificate the user supplied; never under a pin.
/// 2. Otherwise exactly three: leaf, intermediate, root (`invalid_chain_length`).
/// 3. Apple's profile (``AppleChainProfile``): the leaf is not a CA, its keyUsage (if any) allows
///    digitalSignature, its key is EC P-256; the intermediate is a CA (`invalid_chain`).
/// 4. Anchors: the supplied roots, plus `x5c[2]` if its fingerprint is pinned (`untrusted_root`).
/// 5. OpenSSL path validation at the validation time (`untrusted_root`, `certificate_expired`,
///    `certificate_not_yet_valid`, `invalid_chain`); the path must be leaf → x5c[1] → anchor.
/// 6. Apple's marker extensions on the leaf and intermediate (`missing_apple_extension`).
struct JWSChainValidator: Sendable {
    /// Apple's profile, with reasons naming the certificates by their place in `x5c`.
    static let profile = AppleChainProfile(leaf: "leaf x5c[0]", intermediate: "intermediate x5c[1]", root: "root")

    let anchors: TrustAnchors
    /// Chains already validated by this verifier, keyed by the exact DER of their certificates.
    let cache: BoundedCache<ChainKey, CachedChain>

    init(anchors: TrustAnchors, cacheCapacity: Int) {
        self.anchors = anchors
        self.cache = BoundedCache(capacity: cacheCapacity)
    }

    /// Validates `chain` (DER, leaf first) at `time`, reusing a chain this validator already
    /// validated when `time` falls inside its validity window.
    ///
    /// - Returns: The validated chain, and the window in which it stays valid (`nil` when the
    ///   certificates' dates cannot be read, which makes the chain uncacheable).
    /// - Throws: ``ReceiptKitError`` naming the failed rule and certificate.
    func validate(_ chain: [[UInt8]], at time: Timestamp) throws -> (chain: ValidatedChain, window: ClosedRange<Timestamp>?) {
        let key = ChainKey(chain)
        if let cached = cache.value(for: key), cached.covers(time) {
            return (cached.chain, cached.window)
        }
        let (validated, window) = try validateUncached(chain, at: time)
        if let window {
            cache.insert(CachedChain(chain: validated, window: window), for: key)
        }
        return (validated, window)
    }

    private func validateUncached(_ chain: [[UInt8]], at time: Timestamp) throws -> (ValidatedChain, ClosedRange<Timestamp>?) {
        if chain.count == 1 {
            return try validateSelfSigned(chain[0], at: time)
        }
        guard chain.count == AppleChainProfile.length else {
            throw ReceiptKitError(.invalidChainLength, "x5c holds \(chain.count) certificates; App Store JWS carry exactly 3")
        }
        let certificates = try chain.enumerated().map { index, der in
            do {
                return try Certificate(der: der)
            } catch let error as ReceiptKitError {
                throw ReceiptKitError(error.code, "x5c[\(index)]: \(error.reason)", underlyingError: error.underlyingError)
            }
        }
        let leaf = certificates[0]
        let intermediate = certificates[1]
        let carriedRoot = certificates[2]

        let profile = Self.profile
        try profile.checkLeafRole(leaf)
        let leafKey = try Self.p256Key(of: leaf, "leaf x5c[0] \(leaf.subjectDescription)")
        try profile.checkIntermediateRole(intermediate)

        var trusted = anchors.roots
        if anchors.jwsPins.contains(carriedRoot.sha256) {
            trusted.append(carriedRoot)
        }
        guard !trusted.isEmpty else {
            throw ReceiptKitError(
                .untrustedRoot,
                "x5c[2] \(carriedRoot.subjectDescription) (SHA-256 \(Hex.encode(carriedRoot.sha256))) is not a pinned root")
        }

        let path = try profile.buildPath(leaf: leaf, intermediate: intermediate, anchors: trusted, at: time)
        guard path.count == 3, path[1] === intermediate else {
            throw ReceiptKitError(.invalidChain, "the path OpenSSL built is not leaf → x5c[1] → root (\(path.count) certificates)")
        }
        try profile.checkMarkers(leaf: leaf, intermediate: intermediate)
        let validated = ValidatedChain(
            leafKey: leafKey,
            summary: ChainSummary(rootSHA256: Hex.encode(path[2].sha256), leafSHA256: Hex.encode(leaf.sha256), leafNotAfter: leaf.notAfter),
            path: path, names: profile.names)
        return (validated, AppleChainProfile.window(of: path))
    }

    /// The signing key of `certificate`, which ES256 needs to be EC P-256.
    ///
    /// - Parameter name: How the reason names the certificate (built only on failure).
    private static func p256Key(of certificate: Certificate, _ name: @autoclosure () -> String) throws -> PublicKey {
        let key = try certificate.publicKey()
        guard key.isP256 else {
            throw ReceiptKitError(.invalidChain, "\(name()) key is \(key.ellipticCurveName ?? "not EC"), ES256 needs P-256")
        }
        return key
    }

    /// Xcode's StoreKit Testing data: one self-signed certificate, trusted only when the user
    /// supplied that exact certificate as a root.
    private func validateSelfSigned(_ der: [UInt8], at time: Timestamp) throws -> (ValidatedChain, ClosedRange<Timestamp>?) {
        let certificate: Certificate
        do {
            certificate = try Certificate(der: der)
        } catch let error as ReceiptKitError {
            throw ReceiptKitError(error.code, "x5c[0]: \(error.reason)", underlyingError: error.underlyingError)
        }
        guard let anchor = anchors.roots.first(where: { $0.isByteIdentical(to: certificate) }) else {
            throw ReceiptKitError(
                .untrustedRoot,
                "x5c holds one self-signed certificate \(certificate.subjectDescription) (Xcode StoreKit Testing); it verifies only against a root file byte-identical to it")
        }
        let key = try Self.p256Key(of: certificate, "x5c[0]")
        let path = try AppleChainProfile.buildPath(leaf: certificate, intermediates: [], anchors: [anchor], at: time, names: ["x5c[0]"])
        let validated = ValidatedChain(
            leafKey: key,
            summary: ChainSummary(rootSHA256: Hex.encode(anchor.sha256), leafSHA256: Hex.encode(certificate.sha256),
                                  leafNotAfter: certificate.notAfter),
            path: path, names: ["x5c[0]"])
        return (validated, AppleChainProfile.window(of: path))
    }
}
