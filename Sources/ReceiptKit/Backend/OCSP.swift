internal import CReceiptKitOpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What one OCSP response says about one certificate, once it has been checked: signed by the
/// certificate's issuer or a responder the issuer authorized, chaining to the verifier's anchors,
/// holding this certificate's status, and current at the check instant.
struct OCSPAnswer: Sendable {
    /// The certificate status the responder gave.
    let status: CertificateStatus
    /// When the responder produced the status (`thisUpdate`).
    let thisUpdate: Timestamp
    /// Until when it may be reused (`nextUpdate`), if the responder said.
    let nextUpdate: Timestamp?
    /// The whole `OCSPResponse`, DER, as received: what the disk cache stores.
    let der: [UInt8]
}

/// A certificate's status, from OCSP or a CRL.
enum CertificateStatus: Sendable, Equatable {
    case good
    case revoked(at: Timestamp?, reason: String?)
    /// The responder does not know the certificate (OCSP `unknown`).
    case unknown
}

/// OCSP through OpenSSL (RFC 6960): building a request, posting it, and checking the answer.
///
/// ```
/// OCSPResponse ::= SEQUENCE {
///    responseStatus         OCSPResponseStatus,
///    responseBytes          [0] EXPLICIT ResponseBytes OPTIONAL }
/// BasicOCSPResponse ::= SEQUENCE {
///    tbsResponseData      ResponseData,
///    signatureAlgorithm   AlgorithmIdentifier,
///    signature            BIT STRING,
///    certs            [0] EXPLICIT SEQUENCE OF Certificate OPTIONAL }
/// SingleResponse ::= SEQUENCE {
///    certID                       CertID,
///    certStatus                   CertStatus,
///    thisUpdate                   GeneralizedTime,
///    nextUpdate         [0]       EXPLICIT GeneralizedTime OPTIONAL, ... }
/// ```
/// OpenSSL parses all of it; ReceiptKit only reads the fields through OpenSSL's accessors.
enum OCSP {
    /// Why no usable answer came: the responder could not be reached, or what it sent fails a check.
    struct Unusable: Error, Sendable {
        let reason: String
    }

    /// How far `thisUpdate` may lie in the future, and `nextUpdate` in the past, of the check
    /// instant: the 5 minutes `OCSP_check_validity` is usually given, for clock skew.
    static let leeway: Int64 = 5 * 60 * 1000

    /// The OCSP responder URLs of the certificate's Authority Information Access extension.
    static func responderURLs(of certificate: Certificate) -> [String] {
        guard let stack = X509_get1_ocsp(certificate.pointer) else { return [] }
        defer { X509_email_free(stack) }
        return (0..<rk_sk_OPENSSL_STRING_num(stack)).compactMap { index in
            rk_sk_OPENSSL_STRING_value(stack, index).map { String(cString: $0) }
        }
    }

    /// Asks the responder at `url` about `certificate` (issued by `issuer`) and checks the answer.
    ///
    /// - Parameters:
    ///   - url: An `http://` responder URL.
    ///   - certificate: The certificate whose status is asked.
    ///   - issuer: Its issuer.
    ///   - anchors: The anchors the responder's own certificate must chain to.
    ///   - timeout: The longest the exchange may take, in seconds (at least 1).
    ///   - now: The check instant.
    /// - Returns: The checked answer.
    /// - Throws: ``Unusable`` saying why there is none.
    static func query(
        url: String, certificate: Certificate, issuer: Certificate, anchors: [Certificate], timeout: Int, now: Timestamp
    ) throws -> OCSPAnswer {
        OpenSSLErrorQueue.clear()
        let target = try Target(url: url)
        let id = try CertificateID(certificate, issuer: issuer)
        guard let request = OCSP_REQUEST_new() else { throw Unusable(reason: "out of memory") }
        defer { OCSP_REQUEST_free(request) }
        guard let copy = OCSP_CERTID_dup(id.pointer), OCSP_request_add0_id(request, copy) != nil else {
            throw Unusable(reason: "the OCSP request could not be built (\(OpenSSLErrorQueue.drain() ?? "OpenSSL failed"))")
        }
        // A fresh nonce (RFC 8954): a replayed old answer to another request cannot pass as this one.
        guard OCSP_request_add1_nonce(request, nil, -1) == 1 else {
            throw Unusable(reason: "the OCSP nonce could not be made (\(OpenSSLErrorQueue.drain() ?? "OpenSSL failed"))")
        }
        guard let response = rk_ocsp_post(target.host, target.port, target.path, request, Int32(max(1, timeout))) else {
            let why = OpenSSLErrorQueue.drain() ?? "no response"
            throw Unusable(reason: "the OCSP responder \(url) gave no answer within \(max(1, timeout)) s (\(why))")
        }
        defer { OCSP_RESPONSE_free(response) }
        return try check(response, certificate: certificate, id: id, anchors: anchors, issuer: issuer, now: now,
                         request: request, source: "the OCSP responder \(url)")
    }

    /// Checks a stored response (the disk cache) for `certificate` as if it had just arrived,
    /// except for the nonce.
    static func check(
        der: [UInt8], certificate: Certificate, issuer: Certificate, anchors: [Certificate], now: Timestamp, source: String
    ) throws -> OCSPAnswer {
        OpenSSLErrorQueue.clear()
        var parsed: OpaquePointer?
        der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            parsed = d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
        }
        guard let response = parsed else {
            throw Unusable(reason: "\(source) is not an OCSP response (\(OpenSSLErrorQueue.drain() ?? "unparsable"))")
        }
        defer { OCSP_RESPONSE_free(response) }
        let id = try CertificateID(certificate, issuer: issuer)
        return try check(response, certificate: certificate, id: id, anchors: anchors, issuer: issuer, now: now,
                         request: nil, source: source)
    }

    private static func check(
        _ response: OpaquePointer, certificate: Certificate, id: CertificateID, anchors: [Certificate],
        issuer: Certificate, now: Timestamp, request: OpaquePointer?, source: String
    ) throws -> OCSPAnswer {
        let responseStatus = OCSP_response_status(response)
        guard responseStatus == rk_ocsp_response_status_successful() else {
            let text = OCSP_response_status_str(Int(responseStatus)).map { String(cString: $0) } ?? "\(responseStatus)"
            throw Unusable(reason: "\(source) answered '\(text)' instead of a status")
        }
        guard let basic = OCSP_response_get1_basic(response) else {
            throw Unusable(reason: "\(source) sent no basic OCSP response (\(OpenSSLErrorQueue.drain() ?? "unparsable"))")
        }
        defer { OCSP_BASICRESP_free(basic) }
        if let request, OCSP_check_nonce(request, basic) == 0 {
            throw Unusable(reason: "\(source) answered with another request's nonce")
        }
        try verifySignature(basic, issuer: issuer, anchors: anchors, now: now, source: source)

        var status: Int32 = -1
        var reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, id.pointer, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1 else {
            _ = OpenSSLErrorQueue.drain()
            throw Unusable(reason: "\(source) holds no status for \(certificate.subjectDescription) (serial \(certificate.serialHex)): it answers for another certificate")
        }
        guard let produced = thisUpdate.flatMap({ Certificate.timestamp(UnsafePointer($0)) }) else {
            throw Unusable(reason: "\(source) has an unreadable thisUpdate")
        }
        let until = nextUpdate.flatMap { Certificate.timestamp(UnsafePointer($0)) }
        guard produced.millisecondsSince1970 <= now.millisecondsSince1970 + leeway else {
            throw Unusable(reason: "\(source) is not yet valid: thisUpdate \(produced.iso8601) is after \(now.iso8601)")
        }
        if let until, until.millisecondsSince1970 < now.millisecondsSince1970 - leeway {
            throw Unusable(reason: "\(source) has expired: nextUpdate \(until.iso8601) is before \(now.iso8601)")
        }
        let certificateStatus: CertificateStatus
        switch status {
        case rk_ocsp_certstatus_good(): certificateStatus = .good
        case rk_ocsp_certstatus_revoked():
            certificateStatus = .revoked(
                at: revokedAt.flatMap { Certificate.timestamp(UnsafePointer($0)) },
                reason: reason >= 0 ? OCSP_crl_reason_str(Int(reason)).map { String(cString: $0) } : nil)
        default: certificateStatus = .unknown
        }
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_OCSP_RESPONSE(response, &der)
        guard length > 0, let der else {
            throw Unusable(reason: "\(source) could not be re-encoded (\(OpenSSLErrorQueue.drain() ?? "OpenSSL failed"))")
        }
        defer { rk_openssl_free(der) }
        return OCSPAnswer(status: certificateStatus, thisUpdate: produced, nextUpdate: until,
                          der: Array(UnsafeBufferPointer(start: der, count: Int(length))))
    }

    /// `OCSP_basic_verify`: the response's signature under its signer, the signer's chain to the
    /// anchors at `now` (the issuer given as untrusted), and the signer's authority: the issuer
    /// itself, or a certificate the issuer issued with the OCSPSigning extended key usage.
    private static func verifySignature(
        _ basic: OpaquePointer, issuer: Certificate, anchors: [Certificate], now: Timestamp, source: String
    ) throws {
        guard let store = X509_STORE_new() else { throw Unusable(reason: "out of memory") }
        defer { X509_STORE_free(store) }
        for anchor in anchors where X509_STORE_add_cert(store, anchor.pointer) != 1 {
            _ = OpenSSLErrorQueue.drain()
        }
        // The responder's chain is validated at the check instant, not at the wall clock.
        X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), time_t(now.secondsSince1970))
        guard let untrusted = rk_sk_X509_new_null() else { throw Unusable(reason: "out of memory") }
        defer { rk_sk_X509_free(untrusted) }
        _ = rk_sk_X509_push(untrusted, issuer.pointer)
        guard OCSP_basic_verify(basic, untrusted, store, 0) == 1 else {
            let why = OpenSSLErrorQueue.drain() ?? "verification failed"
            throw Unusable(reason: "\(source) is not signed by \(issuer.subjectDescription) or a responder it authorized (\(why))")
        }
    }

    /// An OCSP `CertID` (SHA-1 hashes of the issuer's name and key, and the serial), owned.
    final class CertificateID {
        let pointer: OpaquePointer

        init(_ certificate: Certificate, issuer: Certificate) throws {
            guard let id = OCSP_cert_to_id(nil, certificate.pointer, issuer.pointer) else {
                throw Unusable(reason: "no OCSP CertID for \(certificate.subjectDescription) (\(OpenSSLErrorQueue.drain() ?? "OpenSSL failed"))")
            }
            pointer = id
        }

        deinit {
            OCSP_CERTID_free(pointer)
        }
    }

    /// The parts of an `http://` responder URL, as OpenSSL parses them.
    private struct Target {
        let host: String
        let port: String
        let path: String

        init(url: String) throws {
            var ssl: Int32 = 0
            var host: UnsafeMutablePointer<CChar>?
            var port: UnsafeMutablePointer<CChar>?
            var path: UnsafeMutablePointer<CChar>?
            guard OSSL_HTTP_parse_url(url, &ssl, nil, &host, &port, nil, &path, nil, nil) == 1,
                let host, let port, let path
            else {
                _ = OpenSSLErrorQueue.drain()
                throw Unusable(reason: "the OCSP responder URL \(url) cannot be parsed")
            }
            defer {
                rk_openssl_free(host)
                rk_openssl_free(port)
                rk_openssl_free(path)
            }
            guard ssl == 0 else {
                throw Unusable(reason: "the OCSP responder URL \(url) is https, which ReceiptKit does not use (OCSP answers are signed; Apple's responders are http)")
            }
            self.host = String(cString: host)
            self.port = String(cString: port)
            self.path = String(cString: path)
        }
    }
}
