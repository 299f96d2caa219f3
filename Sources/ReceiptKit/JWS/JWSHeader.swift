/// The protected header of an App Store JWS, checked member by member.
///
/// App Store JWS headers are `{"alg":"ES256","x5c":[leaf, intermediate, root]}` (Xcode adds
/// `kid` and sends one self-signed certificate). Unknown members are ignored except `crit`:
/// ReceiptKit understands no header extension, so a critical one is refused (RFC 7515 §4.1.11).
struct JWSHeader: Sendable {
    /// The `x5c` certificates as DER, leaf first, not yet parsed.
    let certificateChain: [[UInt8]]
    /// The largest `x5c` accepted before any entry is decoded.
    static let maximumChainLength = 8

    /// Parses a decoded header.
    ///
    /// - Parameter bytes: The header's JSON text.
    /// - Throws: ``ReceiptKitError`` with `malformed_header`, `unsupported_algorithm`,
    ///   `missing_certificate_chain`, `invalid_chain_length` or `malformed_certificate`.
    init(_ bytes: [UInt8]) throws {
        let document = try JSONDocument(parsingObject: bytes, code: .malformedHeader, what: "JWS header")
        certificateChain = try document.withRoot(code: .malformedHeader) { header in
            if header.contains("crit") {
                throw ReceiptKitError(.malformedHeader, "header has a 'crit' member; no JWS extension is supported")
            }
            guard header.contains("alg") else {
                throw ReceiptKitError(.unsupportedAlgorithm, "header has no 'alg'; only ES256 is accepted")
            }
            let algorithm: String?
            do {
                algorithm = try header.string("alg")
            } catch {
                throw ReceiptKitError(.unsupportedAlgorithm, "header 'alg' is not a string; only ES256 is accepted")
            }
            guard algorithm == "ES256" else {
                throw ReceiptKitError(.unsupportedAlgorithm, "header 'alg' is \(Self.quoted(algorithm)); only ES256 is accepted")
            }
            guard let chain = try header.array("x5c"), chain.count > 0 else {
                throw ReceiptKitError(.missingCertificateChain, "header has no 'x5c' certificate chain")
            }
            guard chain.count <= Self.maximumChainLength else {
                throw ReceiptKitError(.invalidChainLength, "x5c holds \(chain.count) certificates; App Store JWS carry 3")
            }
            return try (0..<chain.count).map { index in
                let text: String
                do {
                    text = try chain.string(at: index)
                } catch {
                    throw ReceiptKitError(.malformedCertificate, "x5c[\(index)] is not a string")
                }
                guard let der = Base64.decode(Array(text.utf8), alphabet: .standardPadded), !der.isEmpty else {
                    throw ReceiptKitError(.malformedCertificate, "x5c[\(index)] is not standard padded base64")
                }
                return der
            }
        }
    }

    private static func quoted(_ value: String?) -> String {
        value.map { "\"\($0)\"" } ?? "null"
    }
}

/// An ES256 signature as JWS carries it: `r ‖ s`, each 32 bytes big-endian (RFC 7518 §3.4).
struct ES256Signature {
    /// The P-256 group order n.
    private static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// The same signature as a DER `Ecdsa-Sig-Value`, the form OpenSSL verifies.
    ///
    ///     Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }
    let der: [UInt8]

    /// Checks the raw form and converts it.
    ///
    /// High-S signatures are valid ECDSA and are accepted, as Apple and OpenSSL accept them.
    ///
    /// - Parameter raw: The decoded signature segment.
    /// - Throws: ``ReceiptKitError/Code/invalidSignature`` when it is not 64 bytes or `r` or `s`
    ///   is not in `[1, n-1]`.
    init(raw: [UInt8]) throws {
        guard raw.count == 64 else {
            throw ReceiptKitError(.invalidSignature, "an ES256 signature is 64 bytes (r ‖ s), found \(raw.count)")
        }
        let r = raw[0..<32]
        let s = raw[32..<64]
        try Self.checkScalar(r, "r")
        try Self.checkScalar(s, "s")
        var der: [UInt8] = []
        der.reserveCapacity(72)  // at most 2 + 2 × (2 + 33)
        der.append(0x30)
        der.append(0)
        Self.appendInteger(r, to: &der)
        Self.appendInteger(s, to: &der)
        der[1] = UInt8(der.count - 2)
        self.der = der
    }

    /// A scalar must lie in [1, n − 1].
    private static func checkScalar(_ scalar: ArraySlice<UInt8>, _ name: String) throws {
        guard scalar.contains(where: { $0 != 0 }) else {
            throw ReceiptKitError(.invalidSignature, "signature \(name) is zero")
        }
        guard scalar.lexicographicallyPrecedes(Self.order) else {
            throw ReceiptKitError(.invalidSignature, "signature \(name) is not less than the P-256 group order")
        }
    }

    /// Appends a DER INTEGER of the unsigned big-endian `magnitude` (non-zero, at most 32 bytes).
    private static func appendInteger(_ magnitude: ArraySlice<UInt8>, to der: inout [UInt8]) {
        let significant = magnitude.drop(while: { $0 == 0 })
        let pad = significant.first.map { $0 & 0x80 != 0 } ?? false
        der.append(0x02)
        der.append(UInt8(significant.count + (pad ? 1 : 0)))
        if pad { der.append(0) }
        der.append(contentsOf: significant)
    }
}
