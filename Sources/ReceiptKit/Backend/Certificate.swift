internal import CReceiptKitOpenSSL

/// An X.509 certificate parsed by OpenSSL from DER, owning its `X509` object.
///
/// Instances are immutable after parsing; OpenSSL guards its lazily computed extension cache
/// with the object's own lock, so one certificate can be read from many threads.
final class Certificate: @unchecked Sendable {
    // @unchecked: the X509 is never mutated after d2i, and OpenSSL locks its lazy caches.
    let pointer: OpaquePointer
    /// The exact DER the certificate was parsed from.
    let der: [UInt8]
    /// SHA-256 of ``der``: the fingerprint pins are matched against.
    let sha256: [UInt8]

    /// Parses exactly one DER certificate; trailing bytes are an error.
    ///
    /// - Parameters:
    ///   - der: The DER bytes.
    ///   - library: The OpenSSL library context the certificate's own signature is verified in
    ///     (legacy receipts' SHA-1 certificates), or `nil` for OpenSSL's default context.
    /// - Throws: ``ReceiptKitError/Code/malformedCertificate`` when OpenSSL cannot parse all of it.
    init(der: [UInt8], library: CryptoLibraryContext? = nil) throws {
        OpenSSLErrorQueue.clear()
        var parsed: OpaquePointer?
        if let library {
            // d2i_X509 into an object made by X509_new_ex keeps that object's library context.
            guard let empty = X509_new_ex(library.pointer, nil) else {
                throw ReceiptKitError(.malformedCertificate, "out of memory", underlyingError: OpenSSLErrorQueue.drain())
            }
            parsed = empty
        }
        var consumed = 0
        der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            // On failure d2i_X509 frees a given object and sets it to NULL.
            let result = d2i_X509(&parsed, &cursor, buffer.count)
            if result == nil { parsed = nil }
            if let cursor, let base = buffer.baseAddress {
                consumed = cursor - base
            }
        }
        guard let parsed else {
            throw ReceiptKitError(.malformedCertificate, "not a DER X.509 certificate", underlyingError: OpenSSLErrorQueue.drain())
        }
        guard consumed == der.count else {
            X509_free(parsed)
            OpenSSLErrorQueue.clear()
            throw ReceiptKitError(.malformedCertificate, "\(der.count - consumed) bytes follow the DER certificate")
        }
        self.pointer = parsed
        self.der = der
        self.sha256 = Digest.sha256(der)
        // Compute OpenSSL's extension cache now, once, so readers never race to fill it.
        if X509_get_extension_flags(parsed) & rk_exflag_invalid() != 0 {
            throw ReceiptKitError(.malformedCertificate, "certificate \(Self.describe(parsed)) has invalid extensions",
                                  underlyingError: OpenSSLErrorQueue.drain())
        }
    }

    /// Parses a root certificate file's contents: DER, or PEM (`-----BEGIN CERTIFICATE-----`).
    ///
    /// - Parameter contents: The file's bytes.
    /// - Throws: ``ReceiptKitError/Code/malformedCertificate`` when it holds neither.
    convenience init(derOrPEM contents: [UInt8]) throws {
        let marker = Array("-----BEGIN CERTIFICATE-----".utf8)
        guard let start = contents.firstRange(of: marker) else {
            try self.init(der: contents)
            return
        }
        let end = Array("-----END CERTIFICATE-----".utf8)
        guard let stop = contents[start.upperBound...].firstRange(of: end) else {
            throw ReceiptKitError(.malformedCertificate, "PEM certificate has no END line")
        }
        let body = contents[start.upperBound..<stop.lowerBound].filter {
            $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t")
        }
        guard let der = Base64.decode(body, alphabet: .standardPadded) else {
            throw ReceiptKitError(.malformedCertificate, "PEM certificate body is not base64")
        }
        try self.init(der: der)
    }

    deinit {
        X509_free(pointer)
    }

    /// The subject as a one-line distinguished name, for error reasons.
    var subjectDescription: String { Self.describe(pointer) }

    private static func describe(_ certificate: OpaquePointer) -> String {
        guard let name = X509_get_subject_name(certificate),
            let line = X509_NAME_oneline(name, nil, 0)
        else { return "(unnamed)" }
        defer { rk_openssl_free(line) }
        return "\"" + String(cString: line) + "\""
    }

    /// Whether the certificate carries the extension `oid` (critical or not).
    func hasExtension(_ oid: ASN1ObjectIdentifier) -> Bool {
        X509_get_ext_by_OBJ(pointer, oid.pointer, -1) >= 0
    }

    /// Whether basicConstraints marks the certificate as a CA.
    var isCA: Bool {
        X509_get_extension_flags(pointer) & rk_exflag_ca() != 0
    }

    /// The keyUsage bits, or `nil` when the certificate has no keyUsage extension.
    var keyUsage: UInt32? {
        guard X509_get_extension_flags(pointer) & rk_exflag_kusage() != 0 else { return nil }
        return X509_get_key_usage(pointer)
    }

    /// Whether keyUsage, if present, includes digitalSignature.
    var allowsDigitalSignature: Bool {
        guard let keyUsage else { return true }
        return keyUsage & rk_ku_digital_signature() != 0
    }

    /// The end of the validity period.
    var notAfter: Timestamp? { Self.timestamp(X509_get0_notAfter(pointer)) }

    /// The start of the validity period.
    var notBefore: Timestamp? { Self.timestamp(X509_get0_notBefore(pointer)) }

    /// An ASN.1 UTCTime or GeneralizedTime as a timestamp, or `nil` when OpenSSL cannot read it.
    static func timestamp(_ time: UnsafePointer<ASN1_TIME>?) -> Timestamp? {
        guard let time else { return nil }
        var parsed = tm()
        guard ASN1_TIME_to_tm(time, &parsed) == 1 else { return nil }
        let days = CivilCalendar.daysSince1970(
            year: Int64(parsed.tm_year) + 1900, month: Int64(parsed.tm_mon) + 1, day: Int64(parsed.tm_mday))
        let seconds = days * 86_400 + Int64(parsed.tm_hour) * 3600 + Int64(parsed.tm_min) * 60 + Int64(parsed.tm_sec)
        return Timestamp(millisecondsSince1970: seconds * 1000)
    }

    /// The serial number as uppercase hexadecimal, for reasons that name a certificate.
    var serialHex: String {
        guard let serial = X509_get0_serialNumber(pointer), let number = ASN1_INTEGER_to_BN(serial, nil) else {
            return "?"
        }
        defer { BN_free(number) }
        guard let hex = BN_bn2hex(number) else { return "?" }
        defer { rk_openssl_free(hex) }
        return String(cString: hex)
    }

    /// The subject public key, owned by the returned value.
    func publicKey() throws -> PublicKey {
        OpenSSLErrorQueue.clear()
        guard let key = X509_get_pubkey(pointer) else {
            throw ReceiptKitError(.invalidChain, "certificate \(subjectDescription) has an unreadable public key",
                                  underlyingError: OpenSSLErrorQueue.drain())
        }
        return PublicKey(owning: key)
    }

    /// Whether OpenSSL re-encodes the certificate to exactly the bytes it was parsed from, i.e.
    /// whether the parts outside the signed TBSCertificate are DER too.
    var isDistinguishedEncoding: Bool {
        var output: UnsafeMutablePointer<UInt8>?
        let count = i2d_X509(pointer, &output)
        guard count > 0, let output else {
            _ = OpenSSLErrorQueue.drain()
            return false
        }
        defer { rk_openssl_free(output) }
        return Int(count) == der.count && UnsafeBufferPointer(start: output, count: Int(count)).elementsEqual(der)
    }

    /// Whether the two certificates have the same DER encoding.
    func isByteIdentical(to other: Certificate) -> Bool {
        der == other.der
    }
}
