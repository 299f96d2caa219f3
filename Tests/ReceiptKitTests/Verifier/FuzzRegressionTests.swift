import Foundation
import ReceiptKit
import Testing

/// Every input a fuzz target ever flagged (`TestVectors/fuzz-regressions`), replayed through the
/// same invariants as its target.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static let files: [String] = {
        let folder = Fixtures.testVectors.appendingPathComponent("fuzz-regressions")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasPrefix("fuzz-") }.sorted()
    }()

    static func verifiers(cacheCapacity: Int) throws -> AppStoreVerifier {
        let anchors = try TrustAnchors(rootCertificates: [
            Fixtures.testVector("pki/root.der"), Fixtures.testVector("receipts/pki/root.der"),
            Fixtures.testVector("pki/xcode.der"),
        ])
        return AppStoreVerifier(.init(anchors: anchors, cacheCapacity: cacheCapacity), clock: Fixtures.fixedClock)
    }

    @Test("regression inputs exist")
    func present() {
        #expect(Self.files.count >= 2)
    }

    @Test("the outcome is the same with and without caches, and one JSON record", arguments: files)
    func replay(_ name: String) throws {
        var input = try Fixtures.testVector("fuzz-regressions/\(name)")
        var kind: PayloadKind?
        if name.hasPrefix("fuzz-input-"), let first = input.first {
            // fuzz-input: the first byte picks the forced kind.
            let kinds: [PayloadKind?] = [nil] + PayloadKind.allCases.map(Optional.some)
            kind = kinds[Int(first) % kinds.count]
            input.removeFirst()
        }
        let cached = try Self.verifiers(cacheCapacity: 256)
        let uncached = try Self.verifiers(cacheCapacity: 0)
        // Run an input that leaves OpenSSL errors behind first, as the fuzzer's history did.
        _ = cached.verify(input: Array("eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlCIl19.e30.".utf8))
        let first = cached.verify(input: input, as: kind).json()
        let second = cached.verify(input: input, as: kind).json()
        let reference = uncached.verify(input: input, as: kind).json()
        #expect(first == second)
        #expect(first == reference)
        let record = try parseJSON(first)
        #expect(["verified", "rejected"].contains(record["status"] as? String))
    }

    @Test("an OpenSSL error from one input never shows in another input's reason")
    func errorQueueIsolation() throws {
        let signer = try TestSigner.standard()
        // A leaf whose basicConstraints value is a SET instead of a SEQUENCE: it parses as a
        // certificate, but OpenSSL marks its extensions invalid (and queues an error).
        var invalidExtensions = signer
        let leaf = signer.chain[0]
        let basicConstraints: [UInt8] = [0x06, 0x03, 0x55, 0x1D, 0x13]
        let oid = try #require(leaf.firstRange(of: basicConstraints))
        let sequence = try #require(leaf[oid.upperBound...].firstIndex(of: 0x30))
        invalidExtensions.chain[0][sequence] = 0x31
        var notDER = signer
        notDER.chain[0] = Array(leaf.prefix(200))
        let payload = "{\"transactionId\":\"1\",\"signedDate\":1748779200123}"
        let first = try invalidExtensions.sign(payload: payload)
        let second = try notDER.sign(payload: payload)

        let fresh = try Self.verifiers(cacheCapacity: 256).verify(input: Array(second.utf8)).json()
        let verifier = try Self.verifiers(cacheCapacity: 256)
        let invalid = verifier.verify(input: Array(first.utf8)).json()
        #expect(invalid.contains("malformed_certificate"), "\(invalid)")
        #expect(verifier.verify(input: Array(second.utf8)).json() == fresh)
    }
}
