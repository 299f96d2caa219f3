import Foundation
import ReceiptKit
import Testing

/// Batch mode: parallel jobs, order, completeness, determinism, summary and CSV.
@Suite("verify-receipt batches")
struct BatchTests {
    static let root = ["--root", "TestVectors/pki/root.der"]

    /// A mixed batch: every JWS test vector (valid and invalid), a webhook body, garbage, and
    /// blank lines, repeated so that batches of the pipeline interleave.
    static func mixedInput() throws -> String {
        let manifest = ManifestVector.load("jws").filter { $0.file.hasSuffix(".jws") }
        var lines = try manifest.map { try Fixtures.testVectorText($0.file) }
        lines.append(try Fixtures.testVectorText("jws/notification-webhook-body.json"))
        lines.append("{\"signedPayload\": 12}")
        lines.append("%%%")
        lines.append("")
        var text = ""
        for round in 0..<7 {
            for (index, line) in lines.enumerated() where (index + round) % 3 != 0 || round == 0 {
                text += line + "\n"
            }
        }
        return text
    }

    @Test("output is byte-identical and in input order whatever --jobs is")
    func deterministic() throws {
        let input = try Self.mixedInput()
        let expectedCount = input.split(separator: "\n", omittingEmptySubsequences: true).count
        let single = try CLI.run(Self.root + ["--jobs", "1"], stdin: input)
        let records = try single.records()
        #expect(records.count == expectedCount)
        #expect(records.map { $0["input"] as? Int } == Array(1...expectedCount).map(Optional.some))
        for jobs in ["2", "3", "8"] {
            let parallel = try CLI.run(Self.root + ["--jobs", jobs], stdin: input)
            #expect(parallel.stdout == single.stdout, "--jobs \(jobs)")
            #expect(parallel.status == single.status)
        }
        #expect(single.status == 1)
    }

    @Test("--summary counts by status, code, kind and environment on standard error")
    func summary() throws {
        let result = try CLI.run(Self.root + ["--summary", "--jobs", "2", "TestVectors/jws/batch.txt"])
        let records = try result.records()
        let rejected = records.filter { $0["status"] as? String == "rejected" }.count
        #expect(result.stderr.contains("\(records.count) inputs"))
        #expect(result.stderr.contains("verified \(records.count - rejected), rejected \(rejected)"))
        for record in records {
            if let code = (record["error"] as? [String: Any])?["code"] as? String {
                #expect(result.stderr.contains("    \(code) "), "summary names \(code)")
            }
            if let kind = record["kind"] as? String {
                #expect(result.stderr.contains("    \(kind) "), "summary names \(kind)")
            }
        }
        #expect(result.stderr.contains("environment:"))
        #expect(result.stderr.contains("inputs/s"))
        #expect(!result.stderr.contains("\r"), "no progress when standard error is not a terminal")
    }

    @Test("--progress always writes progress to standard error, never to standard output")
    func progress() throws {
        let plain = try CLI.run(Self.root + ["TestVectors/jws/batch.txt"])
        let withProgress = try CLI.run(Self.root + ["--progress", "always", "TestVectors/jws/batch.txt"])
        #expect(withProgress.stdout == plain.stdout)
        #expect(withProgress.stderr.contains("inputs,"))
        #expect(withProgress.stderr.contains("rejected"))
    }

    @Test("--format csv: a header, then one row per transaction, RFC 4180 quoting")
    func csv() throws {
        let result = try CLI.run(Self.root + ["--format", "csv", "TestVectors/jws/batch.txt"])
        let rows = result.stdout.split(separator: "\n").map(String.init)
        #expect(rows.first == VerificationOutcome.csvHeader.joined(separator: ","))
        let json = try CLI.run(Self.root + ["TestVectors/jws/batch.txt"]).records()
        let expectedRows = json.reduce(0) { count, record in
            count + max(1, (record["transactions"] as? [Any])?.count ?? 0)
        }
        #expect(rows.count == 1 + expectedRows)
        // Every row has the header's column count, and rows follow the inputs' order.
        var lastInput = 0
        for row in rows.dropFirst() {
            let fields = row.split(separator: ",", omittingEmptySubsequences: false)
            #expect(fields.count == VerificationOutcome.csvHeader.count, "\(row)")
            let input = try #require(Int(fields[0]))
            #expect(input >= lastInput)
            lastInput = input
        }
        let firstTransaction = try #require((json[0]["transactions"] as? [[String: Any]])?.first)
        let firstRow = rows[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        #expect(firstRow[1] == "verified")
        #expect(firstRow[7] == firstTransaction["transaction_id"] as? String)
        #expect(firstRow[9] == firstTransaction["purchase_date"] as? String)
    }

    @Test("CSV fields are quoted and formula-safe")
    func csvQuoting() throws {
        let signer = try TestSigner.standard()
        let token = try signer.sign(payload: """
            {"transactionId":"1","bundleId":"com.receiptkit.example","productId":"=HYPERLINK(\\"x\\"),\\ny",\
            "signedDate":1748779200123,"price":-5,"currency":"EUR"}
            """)
        let result = try CLI.run(Self.root + ["--format", "csv"], stdin: token + "\n")
        let body = String(result.stdout.split(separator: "\n", maxSplits: 1)[1])
        #expect(body.contains("\"'=HYPERLINK(\"\"x\"\"),\ny\""))
        #expect(body.contains(",-5,EUR"))
    }

    @Test("--jobs must be positive")
    func jobsValidation() throws {
        #expect(try CLI.run(["--jobs", "0"]).status == 64)
    }
}
