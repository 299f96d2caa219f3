import Foundation
import ReceiptKit
import Testing

/// Anchors (pins and root files), chain rules and the validation time.
@Suite("Trust and validation time")
struct TrustTests {
    static let payload = JWSDecodingTests.transaction

    static func fingerprint(_ name: String) throws -> String {
        let data = try Fixtures.testVector("pki/fingerprints.json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(data)) as? [String: String])
        return try #require(object[name])
    }

    @Test("a pin makes x5c[2] the anchor only when its fingerprint matches")
    func pins() throws {
        let token = try TestSigner.standard().sign(payload: Self.payload)
        let pinned = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [try Self.fingerprint("root.der")])))
        let verified = try pinned.verifyTransaction(token)
        #expect(verified.chain.rootSHA256 == (try Self.fingerprint("root.der")))

        let uppercaseWithColons = try Self.fingerprint("root.der").uppercased()
            .enumerated().map { $0.offset > 0 && $0.offset % 2 == 0 ? ":\($0.element)" : "\($0.element)" }.joined()
        #expect(throws: Never.self) {
            _ = try AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [uppercaseWithColons]))).verifyTransaction(token)
        }
        let other = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [try Self.fingerprint("lookalike-root.der")])))
        expectRejection(.untrustedRoot) { _ = try other.verifyTransaction(token) }
        // The built-in pin is Apple's root: the test PKI is not trusted by default.
        expectRejection(.untrustedRoot) { _ = try AppStoreVerifier().verifyTransaction(token) }
    }

    @Test("a look-alike x5c[2] (same name, other key) is untrusted under a pin and under the root file")
    func lookalike() throws {
        var signer = try TestSigner.standard()
        signer.chain[2] = try Fixtures.testVector("pki/lookalike-root.der")
        let token = try signer.sign(payload: Self.payload)
        let pinned = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [try Self.fingerprint("root.der")])))
        expectRejection(.untrustedRoot) { _ = try pinned.verifyTransaction(token) }
        // A root file is the anchor and x5c[2] is ignored, so the genuine chain still verifies.
        let verified = try Fixtures.testVerifier().verifyTransaction(token)
        #expect(verified.chain.rootSHA256 == (try Self.fingerprint("root.der")))
        // Trusting the look-alike as a file does not make the genuine intermediate chain to it.
        let wrongRoot = AppStoreVerifier(.init(anchors: try TrustAnchors(rootCertificates: [try Fixtures.testVector("pki/lookalike-root.der")])))
        expectRejection(.untrustedRoot) { _ = try wrongRoot.verifyTransaction(token) }
    }

    @Test("root files may be PEM")
    func pemRoot() throws {
        let der = try Fixtures.testVector("pki/root.der")
        let body = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        let pem = Array("-----BEGIN CERTIFICATE-----\n\(body)\n-----END CERTIFICATE-----\n".utf8)
        let verifier = AppStoreVerifier(.init(anchors: try TrustAnchors(rootCertificates: [pem])))
        #expect(throws: Never.self) { _ = try verifier.verifyTransaction(TestSigner.standard().sign(payload: Self.payload)) }
        #expect(throws: ReceiptKitError.self) { _ = try TrustAnchors(rootCertificates: [Array("not a certificate".utf8)]) }
        #expect(throws: ReceiptKitError.self) { _ = try TrustAnchors(pinnedSHA256: ["abcd"]) }
    }

    @Test("the chain must hold exactly three certificates unless it is Xcode's single one")
    func chainLength() throws {
        var signer = try TestSigner.standard()
        let verifier = try Fixtures.testVerifier()
        signer.chain = Array(signer.chain.prefix(2))
        expectRejection(.invalidChainLength) { _ = try verifier.verifyTransaction(signer.sign(payload: Self.payload)) }
        signer = try TestSigner.standard()
        signer.chain.append(signer.chain[2])
        expectRejection(.invalidChainLength) { _ = try verifier.verifyTransaction(signer.sign(payload: Self.payload)) }
    }

    @Test("Apple's profile: leaf not a CA, digitalSignature, P-256; intermediate a CA", arguments: [
        ("pki/leaf-ca.der", "pki/intermediate.der", "invalid_chain"),
        ("pki/leaf-keyusage-keyencipherment.der", "pki/intermediate.der", "invalid_chain"),
        ("pki/leaf-under-intermediate-not-ca.der", "pki/intermediate-not-ca.der", "invalid_chain"),
        ("pki/leaf-no-marker.der", "pki/intermediate.der", "missing_apple_extension"),
        ("pki/leaf-under-intermediate-no-marker.der", "pki/intermediate-no-marker.der", "missing_apple_extension"),
        ("pki/leaf-no-keyusage.der", "pki/intermediate.der", "verified"),
    ])
    func profile(_ leaf: String, _ intermediate: String, _ outcome: String) throws {
        var signer = try TestSigner.standard()
        signer.chain[0] = try Fixtures.testVector(leaf)
        signer.chain[1] = try Fixtures.testVector(intermediate)
        let token = try signer.sign(payload: Self.payload)
        let verifier = try Fixtures.testVerifier()
        if outcome == "verified" {
            #expect(throws: Never.self) { _ = try verifier.verifyTransaction(token) }
        } else {
            expectRejection(outcome) { _ = try verifier.verifyTransaction(token) }
        }
    }

    @Test("a P-384 leaf cannot sign ES256")
    func p384Leaf() throws {
        var signer = try TestSigner.standard()
        signer.chain[0] = try Fixtures.testVector("pki/leaf-p384.der")
        signer.keyFile = "pki/other-leaf.key"
        let error = expectRejection(.invalidChain) { _ = try Fixtures.testVerifier().verifyTransaction(signer.sign(payload: Self.payload)) }
        #expect(error?.reason.contains("P-256") == true)
    }

    @Test("validity is checked at the signed date by default, or at the configured time")
    func validationTime() throws {
        let token = try TestSigner.standard().sign(payload: Self.payload)  // signed 2025-06-01, leaf 2024..2027
        #expect(try Fixtures.testVerifier().verifyTransaction(token).validatedAt.iso8601 == "2025-06-01T12:00:00.123Z")

        let later = try #require(Timestamp(rfc3339: "2027-06-01T00:00:00Z"))
        let expired = expectRejection(.certificateExpired) {
            _ = try Fixtures.testVerifier(validationTime: .fixed(later)).verifyTransaction(token)
        }
        #expect(expired?.underlyingError?.contains("expired") == true)
        let earlier = try #require(Timestamp(rfc3339: "2023-12-31T23:59:59Z"))
        expectRejection(.certificateNotYetValid) {
            _ = try Fixtures.testVerifier(validationTime: .fixed(earlier)).verifyTransaction(token)
        }
        // `.now` reads the verifier's clock (2026-01-01 in tests): inside the leaf's validity.
        let now = try Fixtures.testVerifier(validationTime: .now).verifyTransaction(token)
        #expect(now.validatedAt.iso8601 == "2026-01-01T00:00:00.000Z")
        // A clock past the leaf's expiry rejects at `.now` but not at the signed date.
        let future = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors(), validationTime: .now),
                                      clock: { Date(timeIntervalSince1970: 1_900_000_000) })
        expectRejection(.certificateExpired) { _ = try future.verifyTransaction(token) }
    }

    @Test("a payload without a date is validated at the clock")
    func noDate() throws {
        let token = try TestSigner.standard().sign(payload: "{\"environment\":\"Sandbox\",\"productId\":\"p\"}")
        let verified = try Fixtures.testVerifier().verifyRenewalInfo(token)
        #expect(verified.validatedAt.iso8601 == "2026-01-01T00:00:00.000Z")
    }

    @Test("an app transaction is validated at its receiptCreationDate")
    func appTransactionTime() throws {
        let payload = "{\"receiptType\":\"Sandbox\",\"bundleId\":\"b\",\"receiptCreationDate\":1735689600000,\"signedDate\":1748779200123}"
        let verified = try Fixtures.testVerifier().verifyAppTransaction(TestSigner.standard().sign(payload: payload))
        #expect(verified.validatedAt.iso8601 == "2025-01-01T00:00:00.000Z")
    }

    @Test("Xcode data verifies only against its own certificate supplied as a root")
    func xcode() throws {
        let certificate = try Fixtures.testVector("pki/xcode.der")
        let signer = TestSigner(chain: [certificate], keyFile: "pki/xcode.key")
        let token = try signer.sign(payload: "{\"transactionId\":\"0\",\"environment\":\"Xcode\",\"signedDate\":1748779200123}")
        // The fixed clock: the forged payload below has no signedDate, so it is validated at the
        // clock, and the Xcode certificate expires 2027-01-01.
        let trusted = AppStoreVerifier(
            .init(anchors: try TrustAnchors(rootCertificates: [certificate]), environment: .xcode), clock: Fixtures.fixedClock)
        let verified = try trusted.verifyTransaction(token)
        #expect(verified.chain.rootSHA256 == verified.chain.leafSHA256)
        expectRejection(.untrustedRoot) { _ = try AppStoreVerifier().verifyTransaction(token) }
        expectRejection(.untrustedRoot) { _ = try Fixtures.testVerifier().verifyTransaction(token) }
        // Pinning the Xcode certificate's fingerprint is not enough: it must be supplied as a file.
        let pinned = AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [try Self.fingerprint("xcode.der")])))
        expectRejection(.untrustedRoot) { _ = try pinned.verifyTransaction(token) }
        // Signed by another key than the certificate's: refused.
        var forged = signer
        forged.keyFile = "pki/leaf.key"
        expectRejection(.invalidSignature) { _ = try trusted.verifyTransaction(forged.sign(payload: "{\"environment\":\"Xcode\"}")) }
    }
}
