import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// A leaf issued at test time under the test PKI's intermediate, whose AIA names a real
/// `openssl ocsp` responder on loopback, and JWS signed by it.
final class OCSPScenario: @unchecked Sendable {
    // @unchecked: built and used by one test.
    let ca: TestCA
    let signer: TestCA.Issued
    let port: UInt16
    let leaf: TestCA.Issued
    var responder: OCSPResponder?

    /// 2025-06-01T12:00:00Z: inside the leaf's (2024 .. ten years after the run) and the intermediate's (2021 .. 2040) validity.
    static let signedDate: Int64 = 1_748_779_200_000

    /// - Parameters:
    ///   - start: Whether to start the responder now.
    ///   - signerProfile: The responder certificate's profile (an unauthorized one mis-signs).
    ///   - validityMinutes: The answers' nextUpdate after thisUpdate.
    init(start: Bool = true, signerProfile: TestCA.Profile = .responder, validityMinutes: Int = 60) throws {
        ca = try TestCA.intermediate()
        signer = try ca.issue("ReceiptKit Test OCSP Responder", signerProfile)
        port = try OCSPResponder.freePort()
        leaf = try ca.issue("ReceiptKit Test Leaf \(UUID().uuidString.prefix(8))", .leaf,
                            ocspURL: "http://127.0.0.1:\(port)/ocsp")
        if start { try startResponder(validityMinutes: validityMinutes) }
    }

    func startResponder(validityMinutes: Int = 60) throws {
        responder = try OCSPResponder(ca: ca, signer: signer, port: port, validityMinutes: validityMinutes)
    }

    func stopResponder() {
        responder?.stop()
        responder = nil
    }

    /// Another leaf of the same CA and responder.
    func otherLeaf() throws -> TestCA.Issued {
        try ca.issue("ReceiptKit Test Leaf \(UUID().uuidString.prefix(8))", .leaf, ocspURL: "http://127.0.0.1:\(port)/ocsp")
    }

    /// A transaction JWS signed by `leaf` (default: this scenario's), chain leaf → intermediate → root.
    func jws(leaf: TestCA.Issued? = nil, intermediate: [UInt8]? = nil, transactionId: String = "2000000000000001") throws -> String {
        let leaf = leaf ?? self.leaf
        let signer = TestSigner(
            chain: [leaf.der, try intermediate ?? Fixtures.testVector("pki/intermediate.der"), try Fixtures.testVector("pki/root.der")],
            keyFile: leaf.key.path)
        return try signer.sign(payload: """
            {"transactionId":"\(transactionId)","originalTransactionId":"\(transactionId)","bundleId":"com.receiptkit.example",\
            "productId":"monthly","type":"Consumable","purchaseDate":\(Self.signedDate - 1000),"signedDate":\(Self.signedDate),\
            "environment":"Sandbox","inAppOwnershipType":"PURCHASED"}
            """)
    }

    /// A verifier with the revocation policy `mode`. The default timeout is generous, so that a
    /// responder that answers is never cut off on a busy machine; tests of the timeout set theirs.
    static func verifier(
        _ mode: RevocationPolicy.Mode, cacheDirectory: String? = nil, crls: [URL] = [], timeout: Double = 30,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws -> AppStoreVerifier {
        var configuration = AppStoreVerifier.Configuration(anchors: try Fixtures.testRootAnchors())
        configuration.revocation = RevocationPolicy(
            mode: mode, timeout: timeout, cacheDirectory: cacheDirectory,
            crls: try crls.map { try RevocationPolicy.CRL(contents: Fixtures.bytes($0), name: $0.lastPathComponent) })
        return AppStoreVerifier(configuration, clock: clock)
    }

    /// A fresh, empty directory for an OCSP cache.
    static func cacheDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-ocsp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

@Suite("Revocation: OCSP against a real openssl ocsp responder on loopback, CRLs, offline")
struct RevocationTests {
    @Test("the scenario's leaf and responder certificates stay valid five years after the run, so the suite never expires")
    func certificatesOutliveTheRun() throws {
        let scenario = try OCSPScenario(start: false)
        for certificate in [scenario.leaf, scenario.signer] {
            // `-checkend N` exits 1 (failing runOpenSSL) when the certificate expires within N s.
            try runOpenSSL(["x509", "-in", certificate.pem.path, "-noout", "-checkend", "\(5 * 365 * 86_400)"],
                           in: scenario.ca.directory)
        }
    }

    @Test("off (the default): no request, and no revocation member in the record")
    func off() throws {
        let scenario = try OCSPScenario(start: false)
        let verifier = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors()))
        let record = try verifier.verify(try scenario.jws())
        #expect(record.revocation == nil)
        #expect(try parseJSON(record.json())["revocation"] == nil)
        #expect(verifier.ocspRequestCount == 0)
    }

    @Test("good: verified, \"revocation\": \"good\", and one request however many inputs and threads")
    func good() throws {
        let scenario = try OCSPScenario()
        let verifier = try OCSPScenario.verifier(.ocsp)
        let tokens = try (0..<8).map { try scenario.jws(transactionId: "200000000000000\($0)") }
        // Many threads at once before any answer is known: one request (single flight).
        let outcomes = ReadWriteBox<[Bool]>([])
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            let ok = verifier.verify(input: Array(tokens[index % tokens.count].utf8)).isVerified
            outcomes.mutate { $0.append(ok) }
        }
        #expect(outcomes.value.count == 200 && outcomes.value.allSatisfy { $0 })
        let records = try tokens.map { try verifier.verify($0) }
        #expect(records.allSatisfy { $0.revocation?.status == .good })
        let json = try parseJSON(records[0].json())
        #expect(json["revocation"] as? String == "good")
        #expect(verifier.ocspRequestCount == 1)
        #expect(scenario.responder?.requests == 1)
    }

    @Test("revoked: certificate_revoked naming the leaf, the time, the reason, and after the signed date")
    func revoked() throws {
        let scenario = try OCSPScenario(start: false)
        try scenario.ca.revoke(scenario.leaf, reason: "keyCompromise")
        try scenario.startResponder()
        for mode in [RevocationPolicy.Mode.ocsp, .ocspStrict] {
            let error = expectRejection(.certificateRevoked) { _ = try OCSPScenario.verifier(mode).verify(try scenario.jws()) }
            let reason = error?.reason ?? ""
            #expect(reason.contains("leaf x5c[0]") && reason.contains("ReceiptKit Test Leaf"), "\(reason)")
            #expect(reason.contains("keyCompromise"), "\(reason)")
            #expect(reason.contains("after the payload's signed date 2025-06-01T12:00:00.000Z"), "\(reason)")
        }
        // An answer for the revoked leaf is never used for another leaf of the same responder.
        let other = try scenario.otherLeaf()
        let verifier = try OCSPScenario.verifier(.ocspStrict)
        expectRejection(.certificateRevoked) { _ = try verifier.verify(try scenario.jws()) }
        #expect(try verifier.verify(try scenario.jws(leaf: other)).revocation?.status == .good)
        #expect(verifier.ocspRequestCount == 2)
    }

    @Test("unknown: the responder does not know the leaf — a warning in ocsp, revocation_unknown in ocsp-strict")
    func unknownToResponder() throws {
        let scenario = try OCSPScenario()
        // Same issuer, but another CA database the responder does not read.
        let strangerCA = try TestCA.intermediate()
        let stranger = try strangerCA.issue("ReceiptKit Test Stranger", .leaf, ocspURL: scenario.responder?.url)
        let soft = try OCSPScenario.verifier(.ocsp).verify(try scenario.jws(leaf: stranger))
        #expect(soft.revocation?.status == .unknown)
        #expect(soft.revocation?.warning?.contains("does not know") == true)
        let json = try parseJSON(soft.json())
        #expect(json["status"] as? String == "verified" && json["revocation"] as? String == "unknown")
        #expect((json["revocation_warning"] as? String)?.contains("ReceiptKit Test Stranger") == true)
        expectRejection(.revocationUnknown) { _ = try OCSPScenario.verifier(.ocspStrict).verify(try scenario.jws(leaf: stranger)) }
    }

    @Test("responder down: a warning in ocsp (asked once per retry interval), revocation_unknown in ocsp-strict")
    func responderDown() throws {
        let scenario = try OCSPScenario(start: false)
        let verifier = try OCSPScenario.verifier(.ocsp, timeout: 1)
        for _ in 0..<5 {
            let record = try verifier.verify(try scenario.jws())
            #expect(record.revocation?.status == .unknown)
            #expect(record.revocation?.warning?.contains("gave no answer") == true, "\(String(describing: record.revocation))")
        }
        #expect(verifier.ocspRequestCount == 1)
        let error = expectRejection(.revocationUnknown) { _ = try OCSPScenario.verifier(.ocspStrict, timeout: 1).verify(try scenario.jws()) }
        #expect(error?.reason.contains("leaf x5c[0]") == true)
    }

    @Test("a responder that accepts and never answers is cut off by the timeout")
    func responderHangs() throws {
        let listener = try SilentListener()
        let ca = try TestCA.intermediate()
        let leaf = try ca.issue("ReceiptKit Test Hanging", .leaf, ocspURL: "http://127.0.0.1:\(listener.port)/ocsp")
        let scenario = try OCSPScenario(start: false)
        let token = try scenario.jws(leaf: leaf)
        let verifier = try OCSPScenario.verifier(.ocspStrict, timeout: 1)
        let start = ContinuousClock.now
        let error = expectRejection(.revocationUnknown) { _ = try verifier.verify(token) }
        // The order of magnitude of a 1 s timeout: not before it, and not ten times later.
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(10), "cut off after \(elapsed)")
        #expect(error?.reason.contains("within 1 s") == true, "\(String(describing: error))")
    }

    @Test("an expired answer (past its nextUpdate) is not used")
    func expiredAnswer() throws {
        let scenario = try OCSPScenario(validityMinutes: 10)
        let later: @Sendable () -> Date = { Date().addingTimeInterval(3600) }
        let error = expectRejection(.revocationUnknown) {
            _ = try OCSPScenario.verifier(.ocspStrict, clock: later).verify(try scenario.jws())
        }
        #expect(error?.reason.contains("has expired: nextUpdate") == true, "\(String(describing: error))")
    }

    @Test("a mis-signed answer (a responder the issuer did not authorize) is not used")
    func misSignedAnswer() throws {
        let scenario = try OCSPScenario(signerProfile: .unauthorizedResponder)
        let error = expectRejection(.revocationUnknown) { _ = try OCSPScenario.verifier(.ocspStrict).verify(try scenario.jws()) }
        #expect(error?.reason.contains("or a responder it authorized") == true, "\(String(describing: error))")
        #expect(try OCSPScenario.verifier(.ocsp).verify(try scenario.jws()).revocation?.status == .unknown)
    }

    @Test("the disk cache: a second verifier reuses the first one's answer with the responder stopped")
    func diskCacheAcrossRuns() throws {
        let scenario = try OCSPScenario()
        let directory = try OCSPScenario.cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try OCSPScenario.verifier(.ocsp, cacheDirectory: directory.path)
        #expect(try first.verify(try scenario.jws()).revocation?.status == .good)
        #expect(first.ocspRequestCount == 1)
        scenario.stopResponder()
        for mode in [RevocationPolicy.Mode.ocspStrict, .offline] {
            let second = try OCSPScenario.verifier(mode, cacheDirectory: directory.path)
            #expect(try second.verify(try scenario.jws()).revocation?.status == .good)
            #expect(second.ocspRequestCount == 0)
        }
    }

    @Test("a cached answer for another certificate is never used for this one")
    func answerForAnotherCertificate() throws {
        let scenario = try OCSPScenario()
        let other = try scenario.otherLeaf()
        let directory = try OCSPScenario.cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try OCSPScenario.verifier(.ocsp, cacheDirectory: directory.path).verify(try scenario.jws())
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        try #require(files.count == 1)
        // Put the first leaf's answer where the other leaf's would be.
        let otherName = Digest.hex(other.der) + "-" + Digest.hex(try Fixtures.testVector("pki/intermediate.der")) + ".ocsp"
        try FileManager.default.copyItem(at: directory.appendingPathComponent(files[0]), to: directory.appendingPathComponent(otherName))
        let error = expectRejection(.revocationUnknown) {
            _ = try OCSPScenario.verifier(.offline, cacheDirectory: directory.path).verify(try scenario.jws(leaf: other))
        }
        #expect(error?.reason.contains("answers for another certificate") == true, "\(String(describing: error))")
    }

    @Test("offline without cache or CRL: revocation_unknown, and no request")
    func offlineWithoutStatus() throws {
        let scenario = try OCSPScenario()
        let verifier = try OCSPScenario.verifier(.offline)
        let error = expectRejection(.revocationUnknown) { _ = try verifier.verify(try scenario.jws()) }
        #expect(error?.reason.contains("offline") == true)
        #expect(verifier.ocspRequestCount == 0 && scenario.responder?.requests == 0)
    }

    @Test("offline with a CRL: good when not listed, certificate_revoked when listed (PEM and DER)")
    func offlineWithCRL() throws {
        let scenario = try OCSPScenario(start: false)
        let clean = try scenario.ca.crl()
        #expect(try OCSPScenario.verifier(.offline, crls: [clean]).verify(try scenario.jws()).revocation?.status == .good)
        try scenario.ca.revoke(scenario.leaf, reason: "superseded")
        for crl in [try scenario.ca.crl(), try scenario.ca.crl(der: true)] {
            let error = expectRejection(.certificateRevoked) {
                _ = try OCSPScenario.verifier(.offline, crls: [crl]).verify(try scenario.jws())
            }
            #expect(error?.reason.contains("superseded") == true, "\(String(describing: error))")
        }
    }

    @Test("a CRL that is stale, or signed by another CA, covers nothing")
    func unusableCRL() throws {
        let scenario = try OCSPScenario(start: false)
        let stale = try scenario.ca.crl(hours: 1)
        let later: @Sendable () -> Date = { Date().addingTimeInterval(2 * 3600) }
        let error = expectRejection(.revocationUnknown) {
            _ = try OCSPScenario.verifier(.offline, crls: [stale], clock: later).verify(try scenario.jws())
        }
        #expect(error?.reason.contains("stale") == true, "\(String(describing: error))")
        // A CRL naming the intermediate but signed by another key (the root's) covers nothing.
        let rootKey = Fixtures.testVectors.appendingPathComponent("pki/root.key")
        let impostor = scenario.ca.directory.appendingPathComponent("impostor.der")
        try runOpenSSL(["req", "-x509", "-new", "-key", rootKey.path, "-days", "2", "-outform", "DER", "-out", impostor.path,
                        "-subj", "/CN=ReceiptKit Test WWDR CA - G6/OU=G6/O=ReceiptKit Test (NOT FOR PRODUCTION)/C=US"],
                       in: scenario.ca.directory)
        let impostorCA = try TestCA(certificateDER: Fixtures.bytes(impostor), key: rootKey)
        let forged = try impostorCA.crl()
        expectRejection(.revocationUnknown) { _ = try OCSPScenario.verifier(.offline, crls: [forged]).verify(try scenario.jws()) }
    }

    @Test("a CRL file that is not a CRL is refused when the policy is made")
    func malformedCRL() throws {
        #expect(throws: ReceiptKitError(.unrecognizedInput, "")) {
            _ = try RevocationPolicy.CRL(contents: Array("not a crl".utf8), name: "bad.crl")
        }
    }
}

/// Rotation: what changes at Apple without a ReceiptKit release.
@Suite("Rotation: new leaves, new intermediates, two pinned roots")
struct RotationTests {
    @Test("a new leaf generation under the same intermediate verifies under the pinned root")
    func newLeaf() throws {
        let ca = try TestCA.intermediate()
        let leaf = try ca.issue("ReceiptKit Test Receipt Signing 2031", .leaf)
        let pinned = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [Digest.hex(Fixtures.testVector("pki/root.der"))])))
        let scenario = try OCSPScenario(start: false)
        #expect(try pinned.verify(try scenario.jws(leaf: leaf)).kind == .transaction)
    }

    @Test("a new intermediate under the same pinned root verifies, and is checked by OCSP when it names a responder")
    func newIntermediate() throws {
        let root = try TestCA.root()
        let port = try OCSPResponder.freePort()
        let intermediate = try root.issue("ReceiptKit Test WWDR CA - G7", .intermediate, ocspURL: "http://127.0.0.1:\(port)/ocsp")
        let issuing = try TestCA(certificateDER: intermediate.der, key: intermediate.key)
        let leaf = try issuing.issue("ReceiptKit Test Leaf under G7", .leaf)
        let scenario = try OCSPScenario(start: false)
        let token = try scenario.jws(leaf: leaf, intermediate: intermediate.der)
        let pinned = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [Digest.hex(Fixtures.testVector("pki/root.der"))])))
        #expect(try pinned.verify(token).kind == .transaction)
        // The intermediate names a responder: with the root's responder down it is unknown…
        let soft = try OCSPScenario.verifier(.ocsp, timeout: 1).verify(token)
        #expect(soft.revocation?.warning?.contains("intermediate x5c[1]") == true, "\(String(describing: soft.revocation))")
        // …and revoked by the root, it rejects, naming the intermediate.
        try root.revoke(intermediate, reason: "cACompromise")
        let rootSigner = try root.issue("ReceiptKit Test Root OCSP Responder", .responder)
        let responder = try OCSPResponder(ca: root, signer: rootSigner, port: port)
        defer { responder.stop() }
        let error = expectRejection(.certificateRevoked) { _ = try OCSPScenario.verifier(.ocsp).verify(token) }
        #expect(error?.reason.contains("intermediate x5c[1]") == true && error?.reason.contains("cACompromise") == true,
                "\(String(describing: error))")
    }

    @Test("two roots pinned at once: chains to either verify, a third root does not")
    func twoPinnedRoots() throws {
        let lookalike = try TestCA(certificateDER: Fixtures.testVector("pki/lookalike-root.der"),
                                   key: Fixtures.testVectors.appendingPathComponent("pki/lookalike-root.key"))
        let intermediate = try lookalike.issue("ReceiptKit Test WWDR CA - other root", .intermediate)
        let issuing = try TestCA(certificateDER: intermediate.der, key: intermediate.key)
        let leaf = try issuing.issue("ReceiptKit Test Leaf other root", .leaf)
        let signer = TestSigner(chain: [leaf.der, intermediate.der, try Fixtures.testVector("pki/lookalike-root.der")], keyFile: leaf.key.path)
        let otherToken = try signer.sign(payload: #"{"transactionId":"1","bundleId":"b","signedDate":1748779200000}"#)
        let scenario = try OCSPScenario(start: false)
        let usualToken = try scenario.jws()
        let both = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [
            Digest.hex(Fixtures.testVector("pki/root.der")), Digest.hex(Fixtures.testVector("pki/lookalike-root.der")),
        ])))
        #expect(try both.verify(usualToken).kind == .transaction)
        #expect(try both.verify(otherToken).kind == .transaction)
        let one = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [Digest.hex(Fixtures.testVector("pki/root.der"))])))
        expectRejection(.untrustedRoot) { _ = try one.verify(otherToken) }
    }
}

/// SHA-256 as lowercase hex, as the OCSP cache names its files and pins are written.
enum Digest {
    static func hex(_ bytes: [UInt8]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "dgst", "-sha256", "-r"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try? process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try? input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix(64))
    }
}

/// A value many threads append to.
final class ReadWriteBox<Value>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    func mutate(_ body: (inout Value) -> Void) {
        lock.lock()
        body(&stored)
        lock.unlock()
    }

    var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}

@Suite("verify-receipt --revocation")
struct RevocationCommandLineTests {
    @Test("a batch makes one request, a second run reuses the disk cache offline, strict without status exits 1")
    func batchAndCache() throws {
        let scenario = try OCSPScenario()
        let directory = try OCSPScenario.cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = try (0..<40).map { try scenario.jws(transactionId: "30000000000\(1000 + $0)") }
        let root = ["--root", "TestVectors/pki/root.der"]

        let first = try CLI.run(root + ["--revocation", "ocsp", "--ocsp-timeout", "30", "--ocsp-cache", directory.path,
                                        "--jobs", "4", "--summary"],
                                stdin: tokens.joined(separator: "\n"))
        #expect(first.status == 0, "\(first.stderr)")
        let records = try first.records()
        #expect(records.count == 40 && records.allSatisfy { $0["revocation"] as? String == "good" })
        #expect(first.stderr.contains("revocation: ocsp, 1 OCSP requests"), "\(first.stderr)")
        #expect(scenario.responder?.requests == 1)

        scenario.stopResponder()
        let second = try CLI.run(root + ["--revocation", "offline", "--ocsp-cache", directory.path, "--summary"],
                                 stdin: tokens[0])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try second.records().first?["revocation"] as? String == "good")
        #expect(second.stderr.contains("0 OCSP requests"))

        let strict = try CLI.run(root + ["--revocation", "ocsp-strict", "--ocsp-timeout", "1"], stdin: tokens[0])
        #expect(strict.status == 1)
        let error = try #require(try strict.records().first?["error"] as? [String: Any])
        #expect(error["code"] as? String == "revocation_unknown")

        let soft = try CLI.run(root + ["--revocation", "ocsp", "--ocsp-timeout", "1"], stdin: tokens[0])
        #expect(soft.status == 0)
        #expect(try soft.records().first?["revocation"] as? String == "unknown")
    }

    @Test("without --revocation nothing changes: no revocation member, no request")
    func defaultOff() throws {
        let scenario = try OCSPScenario()
        let result = try CLI.run(["--root", "TestVectors/pki/root.der"], stdin: try scenario.jws())
        #expect(result.status == 0)
        #expect(try result.records().first?["revocation"] == nil)
        #expect(scenario.responder?.requests == 0)
    }

    @Test("usage errors: an unknown mode, --crl or --ocsp-cache without a mode, a cache that is not a directory, a bad CRL",
          arguments: [
            ["--revocation", "sometimes"],
            ["--crl", "TestVectors/pki/root.der"],
            ["--ocsp-cache", "/tmp"],
            ["--revocation", "offline", "--ocsp-cache", "TestVectors/README.md"],
            ["--revocation", "offline", "--crl", "TestVectors/README.md"],
            ["--revocation", "ocsp", "--ocsp-timeout", "0"],
          ])
    func usageErrors(_ arguments: [String]) throws {
        let result = try CLI.run(arguments, stdin: "")
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
    }
}

@Suite("Revocation of legacy receipt chains")
struct ReceiptRevocationTests {
    static func verifier(_ mode: RevocationPolicy.Mode, crls: [URL] = []) throws -> AppStoreVerifier {
        var configuration = AppStoreVerifier.Configuration(
            anchors: try TrustAnchors(rootCertificates: [Fixtures.testVector("receipts/pki/root.der")]))
        configuration.revocation = RevocationPolicy(
            mode: mode, crls: try crls.map { try RevocationPolicy.CRL(contents: Fixtures.bytes($0), name: $0.lastPathComponent) })
        return AppStoreVerifier(configuration)
    }

    @Test("the same policy applies to receipt chains: CRL good, CRL revoked, no status offline, a warning in ocsp")
    func receiptChains() throws {
        let receipt = try Fixtures.testVector("receipts/receipt-sha256-der.der")
        let ca = try TestCA(certificateDER: Fixtures.testVector("receipts/pki/intermediate.der"),
                            key: Fixtures.testVectors.appendingPathComponent("receipts/pki/intermediate.key"))
        let clean = try ca.crl()
        #expect(try Self.verifier(.offline, crls: [clean]).verifyReceipt(receipt).revocation?.status == .good)
        expectRejection(.revocationUnknown) { _ = try Self.verifier(.offline).verifyReceipt(receipt) }
        // The test receipt leaf names no responder: a warning, and no request.
        let soft = try Self.verifier(.ocsp)
        #expect(try soft.verifyReceipt(receipt).revocation?.warning?.contains("names no OCSP responder") == true)
        #expect(soft.ocspRequestCount == 0)

        let leafPEM = ca.directory.appendingPathComponent("receipt-leaf.pem")
        try runOpenSSL(["x509", "-inform", "DER", "-in", Fixtures.testVectors.appendingPathComponent("receipts/pki/leaf.der").path,
                        "-out", leafPEM.path], in: ca.directory)
        try ca.revoke(TestCA.Issued(der: [], pem: leafPEM, key: leafPEM), reason: "keyCompromise")
        let error = expectRejection(.certificateRevoked) {
            _ = try Self.verifier(.offline, crls: [try ca.crl()]).verifyReceipt(receipt)
        }
        #expect(error?.reason.contains("receipt leaf") == true, "\(String(describing: error))")
    }
}
