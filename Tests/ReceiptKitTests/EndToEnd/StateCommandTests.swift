import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// `verify-receipt --state`: the state file after a batch, the same whatever the input order,
/// duplication and `--jobs`, with stdout and the exit status of the batch unchanged.
@Suite("verify-receipt --state")
struct StateCommandTests {
    static let root = ["--root", "TestVectors/pki/root.der"]

    /// A temporary path that is removed when the test ends.
    final class TemporaryFile {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("receiptkit-state-\(UUID().uuidString).jsonl").path

        var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// A customer history as JWS lines, plus a rejected token and garbage that must add nothing.
    static func historyLines() throws -> (good: [String], bad: [String]) {
        let history = try PurchaseHistory()
        var random = SplitMix64(seed: 2024)
        let good = try history.randomHistory(&random)
        var tampered = Array(good[0])
        tampered[tampered.count - 5] = tampered[tampered.count - 5] == "A" ? "B" : "A"
        return (good, [String(tampered), "%%%", "{\"signedPayload\": 12}"])
    }

    @Test("the state file is byte-identical whatever the input order, duplication and --jobs")
    func deterministic() throws {
        let (good, bad) = try Self.historyLines()
        let reference = TemporaryFile()
        let first = try CLI.run(Self.root + ["--state", reference.path, "--as-of", "2025-07-15T00:00:00Z", "--jobs", "1"],
                                stdin: (good + bad).joined(separator: "\n") + "\n")
        #expect(first.status == 1, "a rejected input still fails the batch")
        #expect(try first.records().count == good.count + bad.count, "stdout is the per-input records, as without --state")
        let expected = reference.text
        #expect(expected.split(separator: "\n").count >= 4)
        #expect(expected.hasSuffix("\n"))

        var random = SplitMix64(seed: 5)
        for jobs in ["1", "2", "8"] {
            var lines = good + good.filter { _ in random.next() % 2 == 0 } + bad
            lines.shuffle(using: &random)
            let file = TemporaryFile()
            let run = try CLI.run(Self.root + ["--state", file.path, "--as-of", "2025-07-15T00:00:00Z", "--jobs", jobs],
                                  stdin: lines.joined(separator: "\n") + "\n")
            #expect(run.status == 1)
            #expect(file.text == expected, "--jobs \(jobs), shuffled and duplicated")
        }
    }

    @Test("the state file matches the library's states, sorted by key; rejected inputs add nothing")
    func matchesLibrary() throws {
        let (good, bad) = try Self.historyLines()
        let history = try PurchaseHistory()
        var ledger = EntitlementLedger()
        for token in good { ledger.add(try history.record(token)) }
        let instant = try #require(Timestamp(rfc3339: "2025-08-01T12:00:00Z"))
        let expected = ledger.states(at: instant).map { $0.json() + "\n" }.joined()
        let run = try CLI.run(Self.root + ["--state", "-", "--as-of", "2025-08-01T12:00:00Z"],
                              stdin: (bad + good).joined(separator: "\n"))
        #expect(run.stdout == expected, "--state - writes the states instead of the records")
        #expect(run.status == 1)
        let keys = ledger.states(at: instant).map(\.key)
        #expect(keys == keys.sorted())
    }

    @Test("--as-of defaults to now; a state file is written even when no input carries a purchase")
    func defaults() throws {
        let empty = TemporaryFile()
        let run = try CLI.run(Self.root + ["--state", empty.path, "TestVectors/jws/notification-test.jws"])
        #expect(run.status == 0)
        #expect(FileManager.default.fileExists(atPath: empty.path))
        #expect(empty.text.isEmpty)

        let now = try CLI.run(Self.root + ["--state", "-", "TestVectors/jws/transaction-consumable.jws"])
        let asOf = try #require(try parseJSON(now.stdout)["as_of"] as? String)
        let instant = try #require(Timestamp(rfc3339: asOf))
        #expect(abs(instant.date.timeIntervalSinceNow) < 600)
    }

    @Test("usage errors: --as-of without --state, or not an instant; an uncreatable state file")
    func errors() throws {
        let alone = try CLI.run(Self.root + ["--as-of", "now", "TestVectors/jws/transaction-consumable.jws"])
        #expect(alone.status == 64)
        #expect(alone.stderr.contains("--as-of"))
        let bad = try CLI.run(Self.root + ["--state", "-", "--as-of", "yesterday", "TestVectors/jws/transaction-consumable.jws"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("ISO 8601"))
        let unwritable = try CLI.run(Self.root + ["--state", "/nonexistent-dir/state.jsonl",
                                                  "TestVectors/jws/transaction-consumable.jws"])
        #expect(unwritable.status == 73)
        #expect(unwritable.stderr.contains("cannot create /nonexistent-dir/state.jsonl"))
        #expect(unwritable.stdout.isEmpty, "nothing is verified before the state file can be written")
    }
}
