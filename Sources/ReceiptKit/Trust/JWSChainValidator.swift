/// Validates a JWS `x5c` chain against the trust anchors, as App Store data requires.
///
/// The rules, in order:
/// 1. One certificate: Xcode's StoreKit Testing path. It is trusted only if byte-identical to a
///    root certificate the user supplied; never under a pin.
/// 2. Otherwise exactly three: leaf, intermediate, root (`invalid_chain_length`).
/// 3. Apple's profile: the leaf is not a CA, its keyUsage (if any) allows digitalSignature, its key
///    is EC P-256; the intermediate is a CA (`invalid_chain`).
/// 4. Anchors: the supplied roots, plus `x5c[2]` if its fingerprint is pinned (`untrusted_root`).
/// 5. OpenSSL path validation at the validation time (`untrusted_root`, `certificate_expired`,
///    `certificate_not_yet_valid`, `invalid_chain`); the path must be leaf → x5c[1] → anchor.
/// 6. Apple's marker extensions on the leaf and intermediate (`missing_apple_extension`).
struct JWSChainValidator: Sendable {
    /// OID 1.2.840.113635.100.6.11.1: Apple's App Store receipt-signing leaf marker.
    static let leafMarker = ASN1ObjectIdentifier("1.2.840.113635.100.6.11.1")
    /// OID 1.2.840.113635.100.6.2.1: Apple's WWDR intermediate marker.
    static let intermediateMarker = ASN1ObjectIdentifier("1.2.840.113635.100.6.2.1")

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

    /// The validity window of a path: from the latest notBefore to the earliest notAfter.
    static func window(of path: [Certificate]) -> ClosedRange<Timestamp>? {
        let starts = path.compactMap(\.notBefore)
        let ends = path.compactMap(\.notAfter)
        guard starts.count == path.count, ends.count == path.count,
            let start = starts.max(), let end = ends.min(), start <= end
        else { return nil }
        return start...end
    }

    private func validateUncached(_ chain: [[UInt8]], at time: Timestamp) throws -> (ValidatedChain, ClosedRange<Timestamp>?) {
        if chain.count == 1 {
            return try validateSelfSigned(chain[0], at: time)
        }
        guard chain.count == 3 else {
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

        let leafKey = try checkLeafProfile(leaf)
        guard intermediate.isCA else {
            throw ReceiptKitError(.invalidChain, "intermediate x5c[1] \(intermediate.subjectDescription) is not a CA")
        }

        var trusted = anchors.roots
        if anchors.jwsPins.contains(carriedRoot.sha256) {
            trusted.append(carriedRoot)
        }
        guard !trusted.isEmpty else {
            throw ReceiptKitError(
                .untrustedRoot,
                "x5c[2] \(carriedRoot.subjectDescription) (SHA-256 \(Hex.encode(carriedRoot.sha256))) is not a pinned root")
        }

        let path = try Self.buildPath(leaf: leaf, intermediates: [intermediate], anchors: trusted, at: time, names: ["leaf x5c[0]", "intermediate x5c[1]", "root"])
        guard path.count == 3, path[1] === intermediate else {
            throw ReceiptKitError(.invalidChain, "the path OpenSSL built is not leaf → x5c[1] → root (\(path.count) certificates)")
        }

        guard leaf.hasExtension(Self.leafMarker) else {
            throw ReceiptKitError(.missingAppleExtension,
                                  "leaf x5c[0] \(leaf.subjectDescription) lacks Apple's marker extension \(Self.leafMarker.dotted)")
        }
        guard intermediate.hasExtension(Self.intermediateMarker) else {
            throw ReceiptKitError(.missingAppleExtension,
                                  "intermediate x5c[1] \(intermediate.subjectDescription) lacks Apple's marker extension \(Self.intermediateMarker.dotted)")
        }
        let validated = ValidatedChain(
            leafKey: leafKey,
            summary: ChainSummary(rootSHA256: Hex.encode(path[2].sha256), leafSHA256: Hex.encode(leaf.sha256), leafNotAfter: leaf.notAfter),
            path: path, names: ["leaf x5c[0]", "intermediate x5c[1]", "root"])
        return (validated, Self.window(of: path))
    }

    /// The leaf rules of Apple's profile; returns the leaf's key.
    private func checkLeafProfile(_ leaf: Certificate) throws -> PublicKey {
        guard !leaf.isCA else {
            throw ReceiptKitError(.invalidChain, "leaf x5c[0] \(leaf.subjectDescription) is a CA certificate")
        }
        guard leaf.allowsDigitalSignature else {
            throw ReceiptKitError(.invalidChain, "leaf x5c[0] \(leaf.subjectDescription) keyUsage does not allow digitalSignature")
        }
        let key = try leaf.publicKey()
        guard key.isP256 else {
            throw ReceiptKitError(.invalidChain,
                                  "leaf x5c[0] \(leaf.subjectDescription) key is \(key.ellipticCurveName ?? "not EC"), ES256 needs P-256")
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
        let key = try certificate.publicKey()
        guard key.isP256 else {
            throw ReceiptKitError(.invalidChain, "x5c[0] key is \(key.ellipticCurveName ?? "not EC"), ES256 needs P-256")
        }
        let path = try Self.buildPath(leaf: certificate, intermediates: [], anchors: [anchor], at: time, names: ["x5c[0]"])
        let validated = ValidatedChain(
            leafKey: key,
            summary: ChainSummary(rootSHA256: Hex.encode(anchor.sha256), leafSHA256: Hex.encode(certificate.sha256),
                                  leafNotAfter: certificate.notAfter),
            path: path, names: ["x5c[0]"])
        return (validated, Self.window(of: path))
    }

    /// Runs OpenSSL's path validation and turns its failure into a ``ReceiptKitError`` that names
    /// the certificate at the failing depth.
    static func buildPath(
        leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], at time: Timestamp, names: [String],
        library: CryptoLibraryContext? = nil
    ) throws -> [Certificate] {
        do {
            return try ChainBuilder.validate(
                leaf: leaf, intermediates: intermediates, anchors: anchors, time: time, library: library)
        } catch let failure as ChainBuilder.Failure {
            let name = failure.depth < names.count ? names[failure.depth] : "certificate at depth \(failure.depth)"
            let reason: String
            switch failure.code {
            case .certificateExpired, .certificateNotYetValid:
                reason = "\(name) is not valid at \(time.iso8601)"
            case .untrustedRoot:
                reason = "\(name) does not chain to a trusted anchor"
            default:
                reason = "\(name) failed path validation"
            }
            throw ReceiptKitError(failure.code, reason, underlyingError: failure.openSSLReason)
        }
    }
}
