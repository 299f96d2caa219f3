import struct Foundation.Data
import struct Foundation.URL
import class Foundation.NSCondition

/// Checks the certificates of validated chains for revocation under one ``RevocationPolicy``,
/// shared by every thread of one verifier.
///
/// Which certificates: the leaf always; the intermediate where its Authority Information Access
/// names an OCSP responder or a given CRL is signed by its issuer. Roots are anchors and are not
/// checked. For each certificate, in order:
/// 1. CRLs signed by its issuer and current at the check instant: listed is revoked.
/// 2. An OCSP answer remembered in memory, until its `nextUpdate`.
/// 3. With a cache directory, an answer stored there, checked again in full as if it had just
///    arrived (signature, responder authority, that it is about this very certificate, freshness).
/// 4. In the OCSP modes, the responder its AIA names, once per certificate whatever the number
///    of threads waiting for it (single flight); an answer with a `nextUpdate` is stored on disk.
///
/// A revoked certificate throws `certificate_revoked`. A certificate whose status could not be
/// had is a warning in ``RevocationPolicy/Mode/ocsp`` (unless a current CRL covered it), and
/// throws `revocation_unknown` in the strict and offline modes.
final class RevocationChecker: Sendable {
    let policy: RevocationPolicy
    private let crls: [CertificateRevocationList]
    /// OCSP answers and failed exchanges, by certificate and issuer.
    private let entries = BoundedCache<CheckKey, Entry>(capacity: 4096)
    /// Each certificate's AIA responder URLs, read once.
    private let responders = BoundedCache<ByteKey, [String]>(capacity: 4096)
    /// Indexes of the CRLs an issuer signed, found once per issuer.
    private let crlsByIssuer = BoundedCache<ByteKey, [Int]>(capacity: 4096)
    private let flight = SingleFlight()
    private let requestCounter = ReadWriteLocked(0)

    /// A certificate and its issuer, by the SHA-256 of their DER: an answer is only ever found
    /// for the certificate it was stored for.
    struct CheckKey: Hashable, Sendable {
        let certificate: [UInt8]
        let issuer: [UInt8]
    }

    enum Entry: Sendable {
        case answer(OCSPAnswer)
        case failure(reason: String, retryAfter: Timestamp)
    }

    /// Creates a checker for a policy other than off.
    init(policy: RevocationPolicy) {
        self.policy = policy
        self.crls = policy.crls.map(\.list)
    }

    /// How many OCSP requests this checker has sent.
    var requestCount: Int { requestCounter.read { $0 } }

    /// Checks a validated path (leaf first, anchor last).
    ///
    /// - Parameters:
    ///   - path: The validated certificates, leaf first.
    ///   - names: How reasons name each certificate of the path (`leaf x5c[0]`, …).
    ///   - signedAt: The payload's validation instant, to say whether a revocation came before it.
    ///   - now: The check instant (the verifier's clock).
    /// - Returns: The result the record carries.
    /// - Throws: ``ReceiptKitError`` `certificate_revoked` or `revocation_unknown`.
    func check(path: [Certificate], names: [String], signedAt: Timestamp, now: Timestamp) throws -> RevocationResult {
        guard path.count >= 2 else { return RevocationResult(status: .notApplicable, warning: nil) }
        let anchors = [path[path.count - 1]]
        var warnings: [String] = []
        for index in 0..<(path.count - 1) {
            let certificate = path[index]
            let issuer = path[index + 1]
            // Built only for a reason: naming a certificate costs more than a remembered answer.
            var name: String {
                "\(index < names.count ? names[index] : "certificate at depth \(index)") \(certificate.subjectDescription) (serial \(certificate.serialHex))"
            }
            let urls = responderURLs(of: certificate)
            let issuerCRLs = crlIndexes(issuedBy: issuer)
            guard index == 0 || !urls.isEmpty || !issuerCRLs.isEmpty else { continue }
            switch status(of: certificate, issuer: issuer, urls: urls, crlIndexes: issuerCRLs, anchors: anchors, now: now) {
            case .known(.good):
                continue
            case .known(.revoked(let at, let reason)):
                var text = "\(name) is revoked"
                if let at {
                    text += " since \(at.iso8601)"
                    text += at <= signedAt
                        ? ", before the payload's signed date \(signedAt.iso8601)"
                        : ", after the payload's signed date \(signedAt.iso8601) (a leaked key can back-date)"
                }
                text += " (reason: \(reason ?? "unspecified"))"
                throw ReceiptKitError(.certificateRevoked, text)
            case .known(.unknown):
                warnings.append("\(name): the OCSP responder does not know the certificate")
            case .unavailable(let why):
                warnings.append("\(name): \(why)")
            }
        }
        guard warnings.isEmpty else {
            let warning = warnings.joined(separator: "; ")
            guard policy.mode == .ocsp else {
                throw ReceiptKitError(.revocationUnknown, "no revocation status: \(warning)")
            }
            return RevocationResult(status: .unknown, warning: warning)
        }
        return RevocationResult(status: .good, warning: nil)
    }

    private enum Status {
        case known(CertificateStatus)
        case unavailable(String)
    }

    private func status(
        of certificate: Certificate, issuer: Certificate, urls: [String], crlIndexes: [Int], anchors: [Certificate],
        now: Timestamp
    ) -> Status {
        var notes: [String] = []
        var coveredByCRL = false
        for index in crlIndexes {
            let crl = crls[index]
            guard let thisUpdate = crl.thisUpdate, thisUpdate.millisecondsSince1970 <= now.millisecondsSince1970 + OCSP.leeway
            else {
                notes.append("CRL \(crl.name) is not yet valid")
                continue
            }
            guard let nextUpdate = crl.nextUpdate, nextUpdate >= now else {
                notes.append("CRL \(crl.name) is stale (nextUpdate \(crl.nextUpdate?.iso8601 ?? "absent"), now \(now.iso8601))")
                continue
            }
            let status = crl.status(of: certificate)
            if case .revoked = status { return .known(status) }
            coveredByCRL = true
        }
        switch ocspAnswer(for: certificate, issuer: issuer, urls: urls, anchors: anchors, now: now) {
        case .success(let answer):
            if answer.status != .unknown || !coveredByCRL { return .known(answer.status) }
        case .failure(let failure):
            notes.append(failure.reason)
        }
        if coveredByCRL { return .known(.good) }
        return .unavailable(notes.joined(separator: "; "))
    }

    // MARK: OCSP answers: memory, disk, network

    private func ocspAnswer(
        for certificate: Certificate, issuer: Certificate, urls: [String], anchors: [Certificate], now: Timestamp
    ) -> Result<OCSPAnswer, OCSP.Unusable> {
        let key = CheckKey(certificate: certificate.sha256, issuer: issuer.sha256)
        if let remembered = remembered(key, now: now) { return remembered }
        // Single flight: the first thread asks; the others wait for its answer.
        return flight.run(key: key, recheck: { remembered(key, now: now) }) {
            let result = fetch(certificate, issuer: issuer, key: key, urls: urls, anchors: anchors, now: now)
            switch result {
            case .success(let answer):
                entries.insert(.answer(answer), for: key)
            case .failure(let failure):
                let retry = Timestamp(millisecondsSince1970: now.millisecondsSince1970 + Int64(policy.retryInterval * 1000))
                entries.insert(.failure(reason: failure.reason, retryAfter: retry), for: key)
            }
            return result
        }
    }

    /// The remembered answer or failure for `key`, if still usable at `now`.
    private func remembered(_ key: CheckKey, now: Timestamp) -> Result<OCSPAnswer, OCSP.Unusable>? {
        switch entries.value(for: key) {
        case .answer(let answer)?:
            guard answer.thisUpdate.millisecondsSince1970 <= now.millisecondsSince1970 + OCSP.leeway,
                let until = answer.nextUpdate, until >= now
            else { return nil }
            return .success(answer)
        case .failure(let reason, let retryAfter)? where now < retryAfter:
            return .failure(OCSP.Unusable(reason: reason))
        default:
            return nil
        }
    }

    private func fetch(
        _ certificate: Certificate, issuer: Certificate, key: CheckKey, urls: [String], anchors: [Certificate], now: Timestamp
    ) -> Result<OCSPAnswer, OCSP.Unusable> {
        var reasons: [String] = []
        if let file = cacheFile(for: key) {
            if let stored = try? Data(contentsOf: file) {
                do {
                    return .success(try OCSP.check(der: Array(stored), certificate: certificate, issuer: issuer,
                                                   anchors: anchors, now: now, source: "cached OCSP answer \(file.lastPathComponent)"))
                } catch let failure as OCSP.Unusable {
                    reasons.append(failure.reason)
                } catch {
                    reasons.append("cached OCSP answer \(file.lastPathComponent): \(error)")
                }
            } else if policy.mode == .offline {
                reasons.append("no cached OCSP answer in \(policy.cacheDirectory ?? "")")
            }
        } else if policy.mode == .offline {
            reasons.append("offline, and no OCSP cache directory")
        }
        guard policy.mode == .ocsp || policy.mode == .ocspStrict else {
            return .failure(OCSP.Unusable(reason: reasons.joined(separator: "; ")))
        }
        guard !urls.isEmpty else {
            reasons.append("the certificate names no OCSP responder")
            return .failure(OCSP.Unusable(reason: reasons.joined(separator: "; ")))
        }
        for url in urls {
            requestCounter.write { $0 += 1 }
            do {
                let answer = try OCSP.query(url: url, certificate: certificate, issuer: issuer, anchors: anchors,
                                            timeout: Int(policy.timeout.rounded(.up)), now: now)
                store(answer, key: key)
                return .success(answer)
            } catch let failure as OCSP.Unusable {
                reasons.append(failure.reason)
            } catch {
                reasons.append("\(url): \(error)")
            }
        }
        return .failure(OCSP.Unusable(reason: reasons.joined(separator: "; ")))
    }

    /// Writes an answer with a `nextUpdate` to the cache directory, atomically; a failure to
    /// write only costs a request in a later run.
    private func store(_ answer: OCSPAnswer, key: CheckKey) {
        guard answer.nextUpdate != nil, answer.status != .unknown, let file = cacheFile(for: key) else { return }
        try? Data(answer.der).write(to: file, options: .atomic)
    }

    /// `DIR/<SHA-256 of the certificate>-<SHA-256 of its issuer>.ocsp`.
    private func cacheFile(for key: CheckKey) -> URL? {
        guard let directory = policy.cacheDirectory else { return nil }
        return URL(fileURLWithPath: directory, isDirectory: true)
            .appendingPathComponent("\(Hex.encode(key.certificate))-\(Hex.encode(key.issuer)).ocsp")
    }

    // MARK: Per-certificate facts, read once

    private func responderURLs(of certificate: Certificate) -> [String] {
        let key = ByteKey(certificate.sha256)
        if let urls = responders.value(for: key) { return urls }
        let urls = OCSP.responderURLs(of: certificate)
        responders.insert(urls, for: key)
        return urls
    }

    private func crlIndexes(issuedBy issuer: Certificate) -> [Int] {
        guard !crls.isEmpty else { return [] }
        let key = ByteKey(issuer.sha256)
        if let indexes = crlsByIssuer.value(for: key) { return indexes }
        let indexes = crls.indices.filter { crls[$0].names(issuer: issuer) && crls[$0].isSigned(by: issuer) }
        crlsByIssuer.insert(indexes, for: key)
        return indexes
    }
}

/// Runs one computation per key at a time: callers that arrive while it runs wait for it and
/// then find its result through `recheck`.
final class SingleFlight: @unchecked Sendable {
    // @unchecked: `running` is only touched with `condition` locked.
    private let condition = NSCondition()
    private var running: Set<RevocationChecker.CheckKey> = []

    func run<Result>(
        key: RevocationChecker.CheckKey, recheck: () -> Result?, _ compute: () -> Result
    ) -> Result {
        condition.lock()
        while true {
            if let result = recheck() {
                condition.unlock()
                return result
            }
            if !running.contains(key) { break }
            condition.wait()
        }
        running.insert(key)
        condition.unlock()
        let result = compute()
        condition.lock()
        running.remove(key)
        condition.broadcast()
        condition.unlock()
        return result
    }
}
