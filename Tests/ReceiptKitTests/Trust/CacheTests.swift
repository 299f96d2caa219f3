import Foundation
import ReceiptKit
import Testing

/// The verifier's header and chain caches never change an outcome.
@Suite("Validation caches")
struct CacheTests {
    static func payload(signedDate: Int64) -> String {
        "{\"transactionId\":\"1\",\"bundleId\":\"com.receiptkit.example\",\"signedDate\":\(signedDate),\"environment\":\"Sandbox\"}"
    }

    @Test("a chain cached as valid at one time is still rejected at a time outside its window")
    func validationTime() throws {
        let signer = try TestSigner.standard()
        let verifier = try Fixtures.testVerifier()
        // Leaf valid 2024-01-01 .. 2027-01-01.
        #expect(throws: Never.self) { _ = try verifier.verifyTransaction(signer.sign(payload: Self.payload(signedDate: 1_748_779_200_123))) }
        expectRejection(.certificateExpired) {
            _ = try verifier.verifyTransaction(signer.sign(payload: Self.payload(signedDate: 1_893_456_000_000)))  // 2030
        }
        expectRejection(.certificateNotYetValid) {
            _ = try verifier.verifyTransaction(signer.sign(payload: Self.payload(signedDate: 1_672_531_200_000)))  // 2023
        }
        // And the cached chain still serves inputs inside the window afterwards.
        #expect(throws: Never.self) { _ = try verifier.verifyTransaction(signer.sign(payload: Self.payload(signedDate: 1_767_225_600_000))) }
    }

    @Test("a cached header does not skip the signature")
    func signatureStillVerified() throws {
        let signer = try TestSigner.standard()
        let verifier = try Fixtures.testVerifier()
        let token = try signer.sign(payload: Self.payload(signedDate: 1_748_779_200_123))
        _ = try verifier.verifyTransaction(token)
        let parts = token.split(separator: ".").map(String.init)
        let forged = Base64URL.string(Array(Self.payload(signedDate: 1_748_779_200_124).utf8))
        expectRejection(.invalidSignature) { _ = try verifier.verifyTransaction(parts[0] + "." + forged + "." + parts[2]) }
        // The same header with the all-zero signature is refused too.
        expectRejection(.invalidSignature) {
            _ = try verifier.verifyTransaction(parts[0] + "." + parts[1] + "." + Base64URL.string([UInt8](repeating: 0, count: 64)))
        }
    }

    @Test("results are identical with and without caches, across many threads")
    func concurrentSameAsUncached() async throws {
        let tokens = try ManifestVector.load("jws").filter { $0.arguments == ["--root", "TestVectors/pki/root.der"] }
            .map { try Fixtures.testVector($0.file) }
        let cached = try Fixtures.testVerifier()
        let uncached = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors(), cacheCapacity: 0), clock: Fixtures.fixedClock)
        let expected = tokens.map { uncached.verify(input: $0).json() }
        let results = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<5).flatMap { _ in tokens.map { cached.verify(input: $0).json() } } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for result in results {
            #expect(result == Array((0..<5).map { _ in expected }.joined()))
        }
    }
}

/// The receipt chain cache: reused inside the chain's validity window only.
@Suite("Receipt chain cache")
struct ReceiptCacheTests {
    /// A clock tests can move.
    final class MovableClock: @unchecked Sendable {
        // @unchecked: every access goes through `lock`.
        private let lock = NSLock()
        private var now: Date

        init(_ now: Date) { self.now = now }

        func set(_ date: Date) {
            lock.lock()
            now = date
            lock.unlock()
        }

        func read() -> Date {
            lock.lock()
            defer { lock.unlock() }
            return now
        }
    }

    @Test("a receipt chain cached as valid is still rejected at a time outside its window, and served again inside it")
    func validationTime() throws {
        let receipt = try Fixtures.testVector("receipts/receipt-sha256-der.der")
        let clock = MovableClock(Date(timeIntervalSince1970: 1_748_779_200))  // 2025-06-01, leaf 2024..2027
        let verifier = AppStoreVerifier(
            .init(anchors: try TrustAnchors(rootCertificates: [Fixtures.testVector("receipts/pki/root.der")]), validationTime: .now),
            clock: { clock.read() })
        #expect(throws: Never.self) { _ = try verifier.verifyReceipt(receipt) }
        clock.set(Date(timeIntervalSince1970: 1_893_456_000))  // 2030
        expectRejection(.certificateExpired) { _ = try verifier.verifyReceipt(receipt) }
        clock.set(Date(timeIntervalSince1970: 1_672_531_200))  // 2023
        expectRejection(.certificateNotYetValid) { _ = try verifier.verifyReceipt(receipt) }
        clock.set(Date(timeIntervalSince1970: 1_767_225_600))  // 2026
        #expect(throws: Never.self) { _ = try verifier.verifyReceipt(receipt) }
    }

    @Test("a cached receipt chain does not skip the signature")
    func signatureStillVerified() throws {
        var receipt = try Fixtures.testVector("receipts/receipt-sha256-der.der")
        let verifier = AppStoreVerifier(.init(anchors: try TrustAnchors(rootCertificates: [Fixtures.testVector("receipts/pki/root.der")])))
        _ = try verifier.verifyReceipt(receipt)
        receipt[receipt.count - 10] ^= 0x01  // inside the signature
        expectRejection(.invalidSignature) { _ = try verifier.verifyReceipt(receipt) }
    }
}
