import Foundation
import ReceiptKit
import ReceiptKitFormats
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

/// `--with-ids`: records joinable to their source rows.
@Suite("verify-receipt --with-ids")
struct WithIDsTests {
    static let root = ["--root", "TestVectors/pki/root.der"]

    static func input() throws -> String {
        let valid = try Fixtures.testVectorText("jws/transaction-consumable.jws")
        let renewal = try Fixtures.testVectorText("jws/renewal-info.jws")
        let huge = String(repeating: "A", count: 2_000_000)
        return "row-1\t\(valid)\nrow-2\tnot.a.jws\nno tab on this line\n\n0123\t\(renewal)\nbig-1\t\(huge)\n"
            + "\t\(valid)\nünïcode id\t\(valid)\n"
    }

    @Test("each record carries its line's id, in order; a line without a tab is rejected with a null id")
    func ids() throws {
        let result = try CLI.run(Self.root + ["--with-ids"], stdin: try Self.input())
        let records = try result.records()
        #expect(records.count == 7)
        #expect(records.map { $0["input"] as? Int } == [1, 2, 3, 4, 5, 6, 7])
        #expect(records.map { $0["id"] as? String } == ["row-1", "row-2", nil, "0123", "big-1", "", "ünïcode id"])
        #expect(records[2]["id"] is NSNull)
        #expect(records.map { $0["status"] as? String }
                == ["verified", "rejected", "rejected", "verified", "rejected", "verified", "verified"])
        #expect((records[2]["error"] as? [String: Any])?["code"] as? String == "unrecognized_input")
        #expect((records[4]["error"] as? [String: Any])?["code"] as? String == "input_too_large")
        #expect(records[3]["kind"] as? String == "renewal_info", "an id starting with 0 is not taken for a binary receipt")
    }

    @Test("ids do not depend on --jobs, and the CSV gets an id column")
    func jobsAndCSV() throws {
        let input = try Self.input()
        let one = try CLI.run(Self.root + ["--with-ids", "--jobs", "1"], stdin: input)
        let two = try CLI.run(Self.root + ["--with-ids", "--jobs", "2"], stdin: input)
        #expect(one.stdout == two.stdout)
        let csv = try CLI.run(Self.root + ["--with-ids", "--format", "csv"], stdin: input)
        let rows = csv.stdout.split(separator: "\n").map(String.init)
        #expect(rows.first == VerificationOutcome.csvHeader(withIDs: true).joined(separator: ","))
        #expect(rows.first?.hasPrefix("input,id,status,") == true)
        #expect(rows[1].hasPrefix("1,row-1,verified,"))
        #expect(rows[3].hasPrefix("3,,rejected,unrecognized_input"))
    }

    @Test("without the flag nothing changes: no id member, tabs are part of the input")
    func withoutFlag() throws {
        let valid = try Fixtures.testVectorText("jws/transaction-consumable.jws")
        let result = try CLI.run(Self.root, stdin: "\(valid)\nrow-1\t\(valid)\n")
        let records = try result.records()
        #expect(records.count == 2)
        #expect(records.allSatisfy { $0["id"] == nil })
        #expect(records[0]["status"] as? String == "verified")
        #expect(records[1]["status"] as? String == "rejected")
    }

    @Test("the library labels records the same way")
    func library() throws {
        let outcome = try Fixtures.testVerifier().verify(input: Fixtures.testVector("jws/transaction-consumable.jws"))
        let labelled = try parseJSON(outcome.json(label: InputLabel(number: 3, id: "abc")))
        #expect(labelled["input"] as? Int == 3)
        #expect(labelled["id"] as? String == "abc")
        let unlabelled = try parseJSON(outcome.json(input: 3))
        #expect(unlabelled["id"] == nil)
        #expect(outcome.csvRows(label: InputLabel(number: 3, id: "a,b")).hasPrefix("3,\"a,b\",verified,"))
    }
}
