import Foundation
import ReceiptKit
import Testing

/// Many threads sharing one verifier and its caches, over mixed valid and invalid inputs of
/// every kind, give exactly the single-threaded results. CI also runs this under thread
/// sanitizer (`scripts/sanitize.sh`).
@Suite("Concurrency")
struct ConcurrencyTests {
    /// Every JWS and receipt test vector, verified and rejected alike, plus garbage.
    static func inputs() throws -> [[UInt8]] {
        let jws = ManifestVector.load("jws").filter { $0.arguments == ["--root", "TestVectors/pki/root.der"] }
        let receipts = ManifestVector.load("receipts").filter { $0.arguments == ["--root", "TestVectors/receipts/pki/root.der"] }
        var inputs = try (jws + receipts).map { try Fixtures.testVector($0.file) }
        inputs.append(Array("not an input".utf8))
        inputs.append([0x30, 0x80, 0x00])
        return inputs
    }

    @Test("16 threads sharing one verifier give the single-threaded results, in any interleaving")
    func threads() throws {
        let inputs = try Self.inputs()
        let anchors = try TrustAnchors(rootCertificates: [
            Fixtures.testVector("pki/root.der"), Fixtures.testVector("receipts/pki/root.der"),
        ])
        let reference = AppStoreVerifier(.init(anchors: anchors, cacheCapacity: 0), clock: Fixtures.fixedClock)
        let expected = inputs.map { reference.verify(input: $0).json() }
        #expect(expected.contains { $0.contains("\"status\":\"verified\"") })
        #expect(expected.contains { $0.contains("\"status\":\"rejected\"") })

        // A small cache, so threads also race on evictions.
        let shared = AppStoreVerifier(.init(anchors: anchors, cacheCapacity: 2), clock: Fixtures.fixedClock)
        let threadCount = 16
        let results = ResultBox(count: threadCount)
        let group = DispatchGroup()
        for thread in 0..<threadCount {
            group.enter()
            let worker = Thread {
                var outputs: [String] = []
                // Each thread walks the inputs from its own offset, three times over.
                for round in 0..<3 {
                    for step in 0..<inputs.count {
                        let index = (step * (thread + 1) + round + thread) % inputs.count
                        outputs.append("\(index)\t" + shared.verify(input: inputs[index]).json())
                    }
                }
                results.set(thread, outputs)
                group.leave()
            }
            worker.start()
        }
        group.wait()
        for thread in 0..<threadCount {
            for line in results.get(thread) {
                let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
                let index = try #require(Int(parts[0]))
                #expect(parts[1] == expected[index], "thread \(thread), input \(index)")
            }
        }
    }
}

/// Per-thread results, written once each.
final class ResultBox: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var results: [[String]]

    init(count: Int) {
        results = Array(repeating: [], count: count)
    }

    func set(_ index: Int, _ value: [String]) {
        lock.lock()
        results[index] = value
        lock.unlock()
    }

    func get(_ index: Int) -> [String] {
        lock.lock()
        defer { lock.unlock() }
        return results[index]
    }
}
