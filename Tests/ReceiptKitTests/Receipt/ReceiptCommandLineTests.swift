import Foundation
import ReceiptKit
import Testing

/// `verify-receipt` with legacy receipts: input forms, output formats, options and exit statuses.
@Suite("verify-receipt with legacy receipts")
struct ReceiptCommandLineTests {
    static let root = ["--root", "TestVectors/receipts/pki/root.der"]

    @Test("a binary receipt on standard input is one input")
    func binaryStandardInput() throws {
        let der = try Fixtures.testVector("receipts/receipt-sha256-ber.der")
        let result = try CLI.run(Self.root, stdinBytes: der)
        let records = try result.records()
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(records.count == 1)
        #expect(records.first?["kind"] as? String == "receipt")
    }

    @Test("files of each form in one run: binary, base64 line, request body; numbered in order")
    func mixedFiles() throws {
        let files = ["receipt-sha256-der.der", "receipt-sha256-der.b64", "receipt-request-body.json", "receipt-sha1-ber.der"]
        let result = try CLI.run(Self.root + files.map { "TestVectors/receipts/" + $0 })
        let records = try result.records()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(records.map { $0["input"] as? Int } == [1, 2, 3, 4])
        #expect(records.allSatisfy { $0["status"] as? String == "verified" && $0["kind"] as? String == "receipt" })
    }

    @Test("a batch mixing receipts and JWS")
    func mixedBatch() throws {
        let receipt = try Fixtures.testVectorText("receipts/receipt-sha256-der.b64")
        let jws = try Fixtures.testVectorText("jws/transaction-consumable.jws")
        let arguments = Self.root + ["--root", "TestVectors/pki/root.der"]
        let result = try CLI.run(arguments, stdin: [receipt, jws, "not a receipt"].joined(separator: "\n") + "\n")
        let records = try result.records()
        #expect(result.status == 1)
        #expect(records.map { $0["kind"] as? String } == ["receipt", "transaction", nil])
        #expect((records.last?["error"] as? [String: Any])?["code"] as? String == "malformed_jws")
    }

    @Test("--format verifyreceipt: Apple's body, 21002 for a JWS, no input numbers, exit 1 unless all are 0")
    func verifyReceiptFormat() throws {
        let receipt = try Fixtures.testVectorText("receipts/receipt-sha256-der.b64")
        let jws = try Fixtures.testVectorText("jws/transaction-consumable.jws")
        let arguments = Self.root + ["--root", "TestVectors/pki/root.der", "--format", "verifyreceipt"]
        let result = try CLI.run(arguments, stdin: receipt + "\n" + jws + "\n")
        let records = try result.records()
        #expect(result.status == 1)
        #expect(records.map { $0["status"] as? Int } == [0, 21002])
        #expect(records.allSatisfy { $0["input"] == nil })
        let body = try #require(records.first?["receipt"] as? [String: Any])
        #expect(body["bundle_id"] as? String == "com.receiptkit.example")
        #expect(body["request_date_ms"] is String)
        #expect((body["in_app"] as? [Any])?.count == 6)
        let single = try CLI.run(Self.root + ["--format", "verifyreceipt"], stdin: receipt + "\n")
        #expect(single.status == 0)
    }

    @Test("usage errors: a bad --device-id, --format or --max-receipt-size exits 64")
    func usageErrors() throws {
        for arguments in [["--device-id", "nope"], ["--format", "xml"], ["--max-receipt-size", "0"]] {
            let result = try CLI.run(arguments, stdin: "")
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
        }
    }

    @Test("--kind receipt reads a base64 line as a receipt")
    func kindReceipt() throws {
        let receipt = try Fixtures.testVectorText("receipts/receipt-sha256-der.b64")
        let result = try CLI.run(Self.root + ["--kind", "receipt"], stdin: receipt + "\n")
        #expect(result.status == 0)
    }

    @Test("a receipt file larger than the line limit is one input_too_large, not a crash")
    func hugeBinary() throws {
        let result = try CLI.run(Self.root + ["--max-receipt-size", "100"], stdinBytes: [0x30] + Array(repeating: 0x41, count: 300_000))
        let records = try result.records()
        #expect(result.status == 1)
        #expect(records.count == 1)
        #expect((records.first?["error"] as? [String: Any])?["code"] as? String == "input_too_large")
    }
}
