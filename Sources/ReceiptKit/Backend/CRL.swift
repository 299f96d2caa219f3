internal import CReceiptKitOpenSSL

/// A certificate revocation list (RFC 5280 §5) parsed by OpenSSL, owning its `X509_CRL`.
///
/// ```
/// CertificateList  ::=  SEQUENCE  {
///      tbsCertList          TBSCertList,
///      signatureAlgorithm   AlgorithmIdentifier,
///      signatureValue       BIT STRING  }
/// TBSCertList  ::=  SEQUENCE  {
///      version                 Version OPTIONAL,
///      signature               AlgorithmIdentifier,
///      issuer                  Name,
///      thisUpdate              Time,
///      nextUpdate              Time OPTIONAL,
///      revokedCertificates     SEQUENCE OF SEQUENCE  {
///           userCertificate         CertificateSerialNumber,
///           revocationDate          Time,
///           crlEntryExtensions      Extensions OPTIONAL } OPTIONAL,
///      crlExtensions           [0]  EXPLICIT Extensions OPTIONAL }
/// ```
/// OpenSSL parses it; ReceiptKit reads it only through OpenSSL's accessors.
final class CertificateRevocationList: @unchecked Sendable {
    // @unchecked: the X509_CRL is never mutated after parsing; OpenSSL locks its lazy caches.
    let pointer: OpaquePointer
    /// Where it came from (a file name), for reasons.
    let name: String

    /// Parses a CRL file's contents: DER, or PEM (`-----BEGIN X509 CRL-----`).
    ///
    /// - Throws: ``ReceiptKitError/Code/unrecognizedInput`` when it is neither.
    init(derOrPEM contents: [UInt8], name: String) throws {
        OpenSSLErrorQueue.clear()
        var parsed: OpaquePointer?
        if contents.firstRange(of: Array("-----BEGIN X509 CRL-----".utf8)) != nil {
            parsed = contents.withUnsafeBytes { buffer in
                let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
                defer { BIO_free(bio) }
                return PEM_read_bio_X509_CRL(bio, nil, nil, nil)
            }
        } else {
            contents.withUnsafeBufferPointer { buffer in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                parsed = d2i_X509_CRL(nil, &cursor, buffer.count)
            }
        }
        guard let parsed else {
            throw ReceiptKitError(.unrecognizedInput, "CRL \(name) is not a DER or PEM certificate revocation list",
                                  underlyingError: OpenSSLErrorQueue.drain())
        }
        self.pointer = parsed
        self.name = name
    }

    deinit {
        X509_CRL_free(pointer)
    }

    /// Whether the CRL names `issuer`'s subject as its issuer (its signature is checked separately).
    func names(issuer: Certificate) -> Bool {
        guard let crlIssuer = X509_CRL_get_issuer(pointer), let subject = X509_get_subject_name(issuer.pointer) else {
            return false
        }
        return X509_NAME_cmp(crlIssuer, subject) == 0
    }

    /// Whether the CRL's signature verifies under `issuer`'s key.
    func isSigned(by issuer: Certificate) -> Bool {
        guard let key = X509_get0_pubkey(issuer.pointer) else { return false }
        defer { _ = OpenSSLErrorQueue.drain() }
        return X509_CRL_verify(pointer, key) == 1
    }

    var thisUpdate: Timestamp? { Certificate.timestamp(X509_CRL_get0_lastUpdate(pointer)) }
    var nextUpdate: Timestamp? { Certificate.timestamp(X509_CRL_get0_nextUpdate(pointer)) }

    /// The status the CRL gives `certificate`: revoked with its date and reason when listed,
    /// good otherwise. Call only for a CRL that ``names(issuer:)`` its issuer and is signed by it.
    func status(of certificate: Certificate) -> CertificateStatus {
        var entry: OpaquePointer?
        guard X509_CRL_get0_by_cert(pointer, &entry, certificate.pointer) == 1, let entry else {
            return .good
        }
        let date = Certificate.timestamp(X509_REVOKED_get0_revocationDate(entry))
        var reason: String?
        if let raw = X509_REVOKED_get_ext_d2i(entry, NID_crl_reason, nil, nil) {
            let enumerated = raw.assumingMemoryBound(to: ASN1_ENUMERATED.self)
            reason = OCSP_crl_reason_str(ASN1_ENUMERATED_get(enumerated)).map { String(cString: $0) }
            ASN1_ENUMERATED_free(enumerated)
        }
        return .revoked(at: date, reason: reason)
    }
}
