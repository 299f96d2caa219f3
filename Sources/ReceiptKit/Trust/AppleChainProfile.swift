/// Apple's certificate profile for App Store signing chains, shared by JWS and legacy receipt
/// chains: three certificates (leaf, intermediate, root), the roles each must play, OpenSSL's path
/// validation at the validation time, Apple's marker extensions, and the window in which a
/// validated path stays valid.
///
/// What differs between the two validators stays in them: the leaf's key (EC P-256 for ES256,
/// RSA for receipts), where the anchors come from, and the order of their checks.
struct AppleChainProfile: Sendable {
    /// OID 1.2.840.113635.100.6.11.1: Apple's App Store receipt-signing leaf marker.
    static let leafMarker = ASN1ObjectIdentifier("1.2.840.113635.100.6.11.1")
    /// OID 1.2.840.113635.100.6.2.1: Apple's WWDR intermediate marker.
    static let intermediateMarker = ASN1ObjectIdentifier("1.2.840.113635.100.6.2.1")
    /// How many certificates an Apple chain holds: leaf, intermediate, root.
    static let length = 3

    /// How reasons name the leaf, the intermediate and the root, in path order.
    let names: [String]

    /// The profile with reasons naming the certificates `leaf`, `intermediate` and `root`.
    init(leaf: String, intermediate: String, root: String) {
        self.names = [leaf, intermediate, root]
    }

    /// Checks the leaf's role: not a CA, and a keyUsage (if any) that allows digitalSignature.
    ///
    /// - Throws: `invalid_chain` naming the leaf.
    func checkLeafRole(_ leaf: Certificate) throws {
        guard !leaf.isCA else {
            throw ReceiptKitError(.invalidChain, "\(names[0]) \(leaf.subjectDescription) is a CA certificate")
        }
        guard leaf.allowsDigitalSignature else {
            throw ReceiptKitError(.invalidChain, "\(names[0]) \(leaf.subjectDescription) keyUsage does not allow digitalSignature")
        }
    }

    /// Checks the intermediate's role: a CA.
    ///
    /// - Throws: `invalid_chain` naming the intermediate.
    func checkIntermediateRole(_ intermediate: Certificate) throws {
        guard intermediate.isCA else {
            throw ReceiptKitError(.invalidChain, "\(names[1]) \(intermediate.subjectDescription) is not a CA")
        }
    }

    /// Runs OpenSSL's path validation from `leaf` through `intermediate` to one of `anchors` at
    /// `time`, naming the certificate at a failing depth by this profile's names.
    ///
    /// - Returns: The path OpenSSL built, leaf first.
    func buildPath(
        leaf: Certificate, intermediate: Certificate, anchors: [Certificate], at time: Timestamp,
        library: CryptoLibraryContext? = nil
    ) throws -> [Certificate] {
        try Self.buildPath(leaf: leaf, intermediates: [intermediate], anchors: anchors, at: time, names: names, library: library)
    }

    /// Checks Apple's marker extensions on the leaf and the intermediate.
    ///
    /// - Throws: `missing_apple_extension` naming the certificate and the OID.
    func checkMarkers(leaf: Certificate, intermediate: Certificate) throws {
        guard leaf.hasExtension(Self.leafMarker) else {
            throw ReceiptKitError(
                .missingAppleExtension,
                "\(names[0]) \(leaf.subjectDescription) lacks Apple's marker extension \(Self.leafMarker.dotted)")
        }
        guard intermediate.hasExtension(Self.intermediateMarker) else {
            throw ReceiptKitError(
                .missingAppleExtension,
                "\(names[1]) \(intermediate.subjectDescription) lacks Apple's marker extension \(Self.intermediateMarker.dotted)")
        }
    }

    /// The validity window of a path: from the latest notBefore to the earliest notAfter, `nil`
    /// when a date cannot be read or the dates leave no window.
    static func window(of path: [Certificate]) -> ClosedRange<Timestamp>? {
        let starts = path.compactMap(\.notBefore)
        let ends = path.compactMap(\.notAfter)
        guard starts.count == path.count, ends.count == path.count,
            let start = starts.max(), let end = ends.min(), start <= end
        else { return nil }
        return start...end
    }

    /// Runs OpenSSL's path validation and turns its failure into a ``ReceiptKitError`` that names
    /// the certificate at the failing depth; also the path of a one-certificate Xcode chain.
    ///
    /// - Parameter library: The library context to validate in (`nil`: OpenSSL's default).
    /// - Returns: The path OpenSSL built, leaf first.
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
