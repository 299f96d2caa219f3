/// A legacy receipt's PKCS #7 SignedData envelope, parsed and checked byte for byte against what
/// Apple writes, but not verified.
///
/// Only the payload is covered by the signature: every other byte of the envelope is under an
/// attacker's control, so each must be exactly what Apple writes or the receipt is refused. OpenSSL's
/// own CMS verification accepts many changes to these fields (another digest OID, another content
/// type, an issuer name in other case); ReceiptKit decides nothing with it.
///
/// Apple writes the envelope in one of two layouts:
/// - **DER** (every App Store receipt): definite, minimal lengths; the payload in a primitive
///   OCTET STRING.
/// - **Xcode BER** (StoreKit Testing receipts): indefinite lengths on ContentInfo, its `[0]`,
///   SignedData, EncapsulatedContentInfo and its `[0]`, and the payload in a constructed OCTET
///   STRING of primitive segments; certificates and signer infos keep definite lengths.
///
/// The layout is told from the first length octet, and the rest of the envelope must follow it.
struct ReceiptEnvelope: Sendable {
    /// How the envelope is encoded.
    enum Layout: String, Sendable {
        case der
        case xcodeBER = "ber"
    }

    /// The digest the signer used.
    enum DigestAlgorithm: String, Sendable {
        case sha1 = "SHA1"
        case sha256 = "SHA256"

        /// The DER contents of the algorithm's object identifier.
        var oid: [UInt8] {
            switch self {
            case .sha1: EnvelopeOID.sha1
            case .sha256: EnvelopeOID.sha256
            }
        }
    }

    /// The most certificates an envelope may carry (Apple's carry three, Xcode's one).
    static let maximumCertificates = 8
    /// The most segments an Xcode constructed OCTET STRING payload may have.
    static let maximumSegments = 4096

    let layout: Layout
    /// The signed bytes: the DER receipt payload (the concatenated segments in Xcode BER).
    let payload: [UInt8]
    /// The embedded certificates' DER, in the envelope's order.
    let certificates: [[UInt8]]
    /// The signer's issuer name, exactly as encoded in the SignerInfo.
    let signerIssuer: [UInt8]
    /// The signer's serial number INTEGER, exactly as encoded in the SignerInfo.
    let signerSerialNumber: [UInt8]
    let digestAlgorithm: DigestAlgorithm
    /// The RSA PKCS #1 v1.5 signature.
    let signature: [UInt8]

    /// Parses an envelope.
    ///
    ///     ContentInfo ::= SEQUENCE {
    ///       contentType ContentType,                -- id-signedData 1.2.840.113549.1.7.2
    ///       content [0] EXPLICIT SignedData }
    ///
    /// Nothing may follow the ContentInfo.
    ///
    /// - Parameter bytes: The receipt, DER or Xcode BER.
    /// - Throws: ``ReceiptKitError/Code/malformedReceipt`` naming the element that differs from
    ///   Apple's encoding.
    init(_ bytes: [UInt8]) throws {
        guard bytes.count >= 2, bytes[0] == DERReader.Tag.sequence else {
            throw ReceiptKitError(.malformedReceipt, "a receipt is a DER or BER SEQUENCE (PKCS #7 ContentInfo)")
        }
        let layout: Layout = bytes[1] == 0x80 ? .xcodeBER : .der
        let ber = layout == .xcodeBER
        let parts = try DERReader.reading(bytes, name: "receipt") { top in
            var contentInfo = try top.enter(DERReader.Tag.sequence, "ContentInfo", indefinite: ber)
            try Self.expectObjectIdentifier(&contentInfo, EnvelopeOID.signedData, "ContentInfo.contentType", "id-signedData")
            var content = try contentInfo.enter(DERReader.Tag.contextSpecific0, "ContentInfo.content", indefinite: ber)
            var signedData = try content.enter(DERReader.Tag.sequence, "SignedData", indefinite: ber)
            let parts = try SignedDataParts(&signedData, layout: layout)
            try content.leave(signedData)
            try contentInfo.leave(content)
            try top.leave(contentInfo)
            try top.finish()
            return parts
        }

        self.layout = layout
        self.payload = parts.payload
        self.certificates = parts.certificates
        self.signerIssuer = parts.signerIssuer
        self.signerSerialNumber = parts.signerSerialNumber
        self.digestAlgorithm = parts.digestAlgorithm
        self.signature = parts.signature
    }

    /// The index of the certificate the SignerInfo names: the one whose issuer name and serial
    /// number are byte-identical to the SignerInfo's.
    ///
    ///     Certificate ::= SEQUENCE {
    ///       tbsCertificate TBSCertificate, ... }
    ///     TBSCertificate ::= SEQUENCE {
    ///       version [0] EXPLICIT Version DEFAULT v1,
    ///       serialNumber CertificateSerialNumber,
    ///       signature AlgorithmIdentifier,
    ///       issuer Name, ... }
    ///
    /// - Throws: ``ReceiptKitError/Code/malformedReceipt`` when no certificate matches.
    func signerCertificateIndex() throws -> Int {
        for (index, der) in certificates.enumerated() {
            let what = "SignedData.certificates[\(index)]"
            let names = try DERReader.reading(der, name: what) { top in
                var certificate = try top.enter(DERReader.Tag.sequence, what)
                var tbs = try certificate.enter(DERReader.Tag.sequence, "\(what).tbsCertificate")
                if tbs.nextTag == DERReader.Tag.contextSpecific0 {
                    _ = try tbs.readEncoding(DERReader.Tag.contextSpecific0, "\(what).version")
                }
                let serial = try tbs.readPrimitive(DERReader.Tag.integer, "\(what).serialNumber")
                _ = try tbs.readEncoding(DERReader.Tag.sequence, "\(what).signature")
                let issuer = try tbs.readEncoding(DERReader.Tag.sequence, "\(what).issuer")
                return serial.elementsEqual(signerSerialNumber) && issuer.elementsEqual(signerIssuer)
            }
            if names {
                return index
            }
        }
        throw ReceiptKitError(
            .malformedReceipt, "no embedded certificate has the issuer name and serial number the SignerInfo names")
    }

    /// The contents of SignedData, read in grammar order.
    private struct SignedDataParts {
        var payload: [UInt8] = []
        var certificates: [[UInt8]] = []
        var signerIssuer: [UInt8] = []
        var signerSerialNumber: [UInt8] = []
        var digestAlgorithm = DigestAlgorithm.sha1
        var signature: [UInt8] = []

        /// Reads SignedData's contents.
        ///
        ///     SignedData ::= SEQUENCE {
        ///       version CMSVersion,                              -- 1
        ///       digestAlgorithms SET OF DigestAlgorithmIdentifier, -- exactly the signer's digest
        ///       encapContentInfo EncapsulatedContentInfo,
        ///       certificates [0] IMPLICIT CertificateSet OPTIONAL, -- present
        ///       crls [1] IMPLICIT RevocationInfoChoices OPTIONAL,  -- absent
        ///       signerInfos SET OF SignerInfo }                  -- exactly one
        init(_ signedData: inout DERReader, layout: Layout) throws {
            try ReceiptEnvelope.expectVersion1(&signedData, "SignedData.version")
            var digestAlgorithms = try signedData.enter(DERReader.Tag.set, "SignedData.digestAlgorithms")
            let listedDigest = try ReceiptEnvelope.digestAlgorithm(&digestAlgorithms, "SignedData.digestAlgorithms[0]")
            guard digestAlgorithms.isAtEnd else {
                throw ReceiptKitError(.malformedReceipt, "SignedData.digestAlgorithms: Apple lists exactly one digest algorithm")
            }
            try signedData.leave(digestAlgorithms)

            payload = try Self.encapsulatedContent(&signedData, layout: layout)

            guard signedData.nextTag == DERReader.Tag.contextSpecific0 else {
                throw ReceiptKitError(.malformedReceipt, "SignedData.certificates: the receipt carries no certificates")
            }
            var certificateSet = try signedData.enter(DERReader.Tag.contextSpecific0, "SignedData.certificates")
            while !certificateSet.isAtEnd {
                guard certificates.count < ReceiptEnvelope.maximumCertificates else {
                    throw ReceiptKitError(.malformedReceipt,
                                          "SignedData.certificates: more than \(ReceiptEnvelope.maximumCertificates) certificates")
                }
                let index = certificates.count
                certificates.append(Array(try certificateSet.readEncoding(DERReader.Tag.sequence, "SignedData.certificates[\(index)]")))
            }
            try signedData.leave(certificateSet)
            guard !certificates.isEmpty else {
                throw ReceiptKitError(.malformedReceipt, "SignedData.certificates: the certificate set is empty")
            }
            if signedData.nextTag == DERReader.Tag.contextSpecific1 {
                throw ReceiptKitError(.malformedReceipt, "SignedData.crls: Apple's receipts carry no CRLs")
            }

            var signerInfos = try signedData.enter(DERReader.Tag.set, "SignedData.signerInfos")
            var signerInfo = try signerInfos.enter(DERReader.Tag.sequence, "SignerInfo")
            try readSignerInfo(&signerInfo)
            try signerInfos.leave(signerInfo)
            guard signerInfos.isAtEnd else {
                throw ReceiptKitError(.malformedReceipt, "SignedData.signerInfos: Apple's receipts have exactly one signer")
            }
            try signedData.leave(signerInfos)
            guard listedDigest == digestAlgorithm else {
                throw ReceiptKitError(
                    .malformedReceipt,
                    "SignedData.digestAlgorithms lists \(listedDigest.rawValue) but the signer used \(digestAlgorithm.rawValue)")
            }
        }

        /// Reads the payload.
        ///
        ///     EncapsulatedContentInfo ::= SEQUENCE {
        ///       eContentType ContentType,               -- id-data 1.2.840.113549.1.7.1
        ///       eContent [0] EXPLICIT OCTET STRING }    -- present
        ///
        /// In Xcode BER the OCTET STRING is constructed, of primitive segments, and the payload is
        /// their concatenation.
        private static func encapsulatedContent(_ signedData: inout DERReader, layout: Layout) throws -> [UInt8] {
            let ber = layout == .xcodeBER
            var info = try signedData.enter(DERReader.Tag.sequence, "EncapsulatedContentInfo", indefinite: ber)
            try ReceiptEnvelope.expectObjectIdentifier(&info, EnvelopeOID.data, "EncapsulatedContentInfo.eContentType", "id-data")
            var explicit = try info.enter(DERReader.Tag.contextSpecific0, "EncapsulatedContentInfo.eContent", indefinite: ber)
            var payload: [UInt8] = []
            if ber {
                var segments = try explicit.enter(DERReader.Tag.constructedOctetString, "eContent OCTET STRING", indefinite: true)
                var count = 0
                repeat {
                    guard count < ReceiptEnvelope.maximumSegments else {
                        throw ReceiptKitError(.malformedReceipt, "eContent: more than \(ReceiptEnvelope.maximumSegments) segments")
                    }
                    let segment = try segments.readPrimitive(DERReader.Tag.octetString, "eContent segment \(count)")
                    guard !segment.isEmpty else {
                        throw ReceiptKitError(.malformedReceipt, "eContent segment \(count) is empty")
                    }
                    payload.append(contentsOf: segment)
                    count += 1
                } while !segments.isAtEnd
                try explicit.leave(segments)
            } else {
                payload = Array(try explicit.readPrimitive(DERReader.Tag.octetString, "eContent OCTET STRING"))
            }
            try info.leave(explicit)
            try signedData.leave(info)
            guard !payload.isEmpty else {
                throw ReceiptKitError(.malformedReceipt, "eContent: the payload is empty")
            }
            return payload
        }

        /// Reads the one signer.
        ///
        ///     SignerInfo ::= SEQUENCE {
        ///       version CMSVersion,                                 -- 1
        ///       sid IssuerAndSerialNumber,
        ///       digestAlgorithm DigestAlgorithmIdentifier,           -- SHA-1 or SHA-256, NULL parameters
        ///       signedAttrs [0] IMPLICIT SET OF Attribute OPTIONAL,  -- absent
        ///       signatureAlgorithm SignatureAlgorithmIdentifier,     -- see signatureAlgorithm
        ///       signature OCTET STRING,
        ///       unsignedAttrs [1] IMPLICIT SET OF Attribute OPTIONAL } -- absent
        ///
        ///     IssuerAndSerialNumber ::= SEQUENCE {
        ///       issuer Name,
        ///       serialNumber CertificateSerialNumber }          -- INTEGER
        private mutating func readSignerInfo(_ signerInfo: inout DERReader) throws {
            try ReceiptEnvelope.expectVersion1(&signerInfo, "SignerInfo.version")
            var sid = try signerInfo.enter(DERReader.Tag.sequence, "SignerInfo.sid")
            signerIssuer = Array(try sid.readEncoding(DERReader.Tag.sequence, "SignerInfo.sid.issuer"))
            let serial = try sid.readPrimitive(DERReader.Tag.integer, "SignerInfo.sid.serialNumber")
            guard !serial.isEmpty else {
                throw ReceiptKitError(.malformedReceipt, "SignerInfo.sid.serialNumber is empty")
            }
            signerSerialNumber = Array(serial)
            try signerInfo.leave(sid)
            digestAlgorithm = try ReceiptEnvelope.digestAlgorithm(&signerInfo, "SignerInfo.digestAlgorithm")
            if signerInfo.nextTag == DERReader.Tag.contextSpecific0 {
                throw ReceiptKitError(.malformedReceipt, "SignerInfo.signedAttrs: Apple's receipts have no signed attributes")
            }
            try ReceiptEnvelope.signatureAlgorithm(&signerInfo, digest: digestAlgorithm)
            signature = Array(try signerInfo.readPrimitive(DERReader.Tag.octetString, "SignerInfo.signature"))
            guard !signature.isEmpty else {
                throw ReceiptKitError(.malformedReceipt, "SignerInfo.signature is empty")
            }
            if signerInfo.nextTag == DERReader.Tag.contextSpecific1 {
                throw ReceiptKitError(.malformedReceipt, "SignerInfo.unsignedAttrs: Apple's receipts have no unsigned attributes")
            }
        }
    }

    // MARK: Shared elements

    /// Reads `CMSVersion ::= INTEGER`, which must be 1 (encoded `02 01 01`).
    private static func expectVersion1(_ reader: inout DERReader, _ what: String) throws {
        let contents = try reader.readPrimitive(DERReader.Tag.integer, what)
        guard contents.elementsEqual([0x01]) else {
            throw ReceiptKitError(.malformedReceipt, "\(what) must be 1, as Apple writes it")
        }
    }

    /// Reads an OBJECT IDENTIFIER that must be `expected` (DER contents).
    private static func expectObjectIdentifier(
        _ reader: inout DERReader, _ expected: [UInt8], _ what: String, _ expectedName: String
    ) throws {
        let contents = try reader.readPrimitive(DERReader.Tag.objectIdentifier, what)
        guard contents.elementsEqual(expected) else {
            throw ReceiptKitError(.malformedReceipt, "\(what) must be \(expectedName)")
        }
    }

    /// Reads `NULL` (encoded `05 00`).
    private static func expectNull(_ reader: inout DERReader, _ what: String) throws {
        let contents = try reader.readPrimitive(DERReader.Tag.null, what)
        guard contents.isEmpty else {
            throw ReceiptKitError(.malformedReceipt, "\(what): NULL has no contents")
        }
    }

    /// Reads a digest algorithm.
    ///
    ///     DigestAlgorithmIdentifier ::= SEQUENCE {
    ///       algorithm OBJECT IDENTIFIER,   -- sha1 1.3.14.3.2.26 or sha256 2.16.840.1.101.3.4.2.1
    ///       parameters NULL }              -- present, as Apple writes it
    private static func digestAlgorithm(_ reader: inout DERReader, _ what: String) throws -> DigestAlgorithm {
        var identifier = try reader.enter(DERReader.Tag.sequence, what)
        let oid = try identifier.readPrimitive(DERReader.Tag.objectIdentifier, "\(what).algorithm")
        let digest: DigestAlgorithm
        if oid.elementsEqual(EnvelopeOID.sha1) {
            digest = .sha1
        } else if oid.elementsEqual(EnvelopeOID.sha256) {
            digest = .sha256
        } else {
            throw ReceiptKitError(.malformedReceipt, "\(what): the digest must be SHA-1 or SHA-256")
        }
        try expectNull(&identifier, "\(what).parameters")
        try reader.leave(identifier)
        return digest
    }

    /// Reads the signature algorithm, which must fit the digest.
    ///
    ///     SignatureAlgorithmIdentifier ::= SEQUENCE {
    ///       algorithm OBJECT IDENTIFIER,   -- rsaEncryption 1.2.840.113549.1.1.1, or
    ///                                      -- sha1WithRSAEncryption 1.2.840.113549.1.1.5 (SHA-1), or
    ///                                      -- sha256WithRSAEncryption 1.2.840.113549.1.1.11 (SHA-256)
    ///       parameters NULL }
    private static func signatureAlgorithm(_ reader: inout DERReader, digest: DigestAlgorithm) throws {
        let what = "SignerInfo.signatureAlgorithm"
        var identifier = try reader.enter(DERReader.Tag.sequence, what)
        let oid = try identifier.readPrimitive(DERReader.Tag.objectIdentifier, "\(what).algorithm")
        let fits: Bool
        if oid.elementsEqual(EnvelopeOID.rsaEncryption) {
            fits = true
        } else if oid.elementsEqual(EnvelopeOID.sha1WithRSAEncryption) {
            fits = digest == .sha1
        } else if oid.elementsEqual(EnvelopeOID.sha256WithRSAEncryption) {
            fits = digest == .sha256
        } else {
            throw ReceiptKitError(.malformedReceipt,
                                  "\(what) must be rsaEncryption, sha1WithRSAEncryption or sha256WithRSAEncryption")
        }
        guard fits else {
            throw ReceiptKitError(.malformedReceipt, "\(what) does not match the \(digest.rawValue) digest algorithm")
        }
        try expectNull(&identifier, "\(what).parameters")
        try reader.leave(identifier)
    }
}

/// The DER contents of the object identifiers a receipt envelope uses.
enum EnvelopeOID {
    /// 1.2.840.113549.1.7.2
    static let signedData: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    /// 1.2.840.113549.1.7.1
    static let data: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
    /// 1.3.14.3.2.26
    static let sha1: [UInt8] = [0x2B, 0x0E, 0x03, 0x02, 0x1A]
    /// 2.16.840.1.101.3.4.2.1
    static let sha256: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]
    /// 1.2.840.113549.1.1.1
    static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    /// 1.2.840.113549.1.1.5
    static let sha1WithRSAEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x05]
    /// 1.2.840.113549.1.1.11
    static let sha256WithRSAEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0B]
}
