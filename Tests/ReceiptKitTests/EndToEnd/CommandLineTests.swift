import Foundation
import ReceiptKit
import Testing

/// The built `verify-receipt` binary: inputs, output records, exit codes.
@Suite("verify-receipt end to end")
struct CommandLineTests {
    static let root = ["--root", "TestVectors/pki/root.der"]

    @Test("a batch file: one record per non-empty line, in order, as batch.expected.json says")
    func batch() throws {
        let result = try CLI.run(Self.root + ["TestVectors/jws/batch.txt"])
        let records = try result.records()
        let expectedData = try Fixtures.testVector("jws/batch.expected.json")
        let expectedRoot = try JSONSerialization.jsonObject(with: Data(expectedData))
        let expected = try #require((expectedRoot as? [String: Any])?["results"] as? [[String: Any]])
        #expect(records.count == expected.count)
        for (index, pair) in zip(records, expected).enumerated() {
            #expect(pair.0["input"] as? Int == index + 1)
            #expect(pair.1["input"] as? Int == index + 1)
            let differences = jsonSubsetDifferences(expected: pair.1["expected"] as Any, actual: pair.0)
            #expect(differences.isEmpty, "record \(index + 1): \(differences)")
        }
        #expect(result.status == 1)
    }

    @Test("standard input, '-' and files mix, numbered across all inputs")
    func inputs() throws {
        let valid = try Fixtures.testVectorText("jws/transaction-consumable.jws")
        let result = try CLI.run(Self.root + ["TestVectors/jws/transaction-auto-renewable.jws", "-"],
                                 stdin: "\n  \(valid)  \r\n\nnot-a-jws\n\(valid)")
        let records = try result.records()
        #expect(records.map { $0["input"] as? Int } == [1, 2, 3, 4])
        #expect(records.map { $0["status"] as? String } == ["verified", "verified", "rejected", "verified"])
        #expect((records[2]["error"] as? [String: Any])?["code"] as? String == "malformed_jws")
        #expect(result.status == 1)
    }

    @Test("exit status 0 when every input verified, and nothing on standard error")
    func success() throws {
        let result = try CLI.run(Self.root + ["TestVectors/jws/transaction-consumable.jws"])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let empty = try CLI.run(Self.root, stdin: "")
        #expect(empty.status == 0)
        #expect(empty.stdout.isEmpty)
    }

    @Test("usage errors exit 64, unreadable files 66", arguments: [
        (["--at", "yesterday"], 64),
        (["--environment", "Staging"], 64),
        (["--kind", "receipt_v3"], 64),
        (["--pin-sha256", "xyz"], 64),
        (["--bogus"], 64),
        (["--max-jws-size", "0"], 64),
        (["/nonexistent/input.txt"], 66),
        (["--root", "/nonexistent/root.der"], 66),
    ])
    func failures(_ arguments: [String], _ status: Int) throws {
        let result = try CLI.run(arguments, stdin: "")
        #expect(Int(result.status) == status, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(!result.stderr.isEmpty)
    }

    @Test("the webhook body {\"signedPayload\": …} is a notification input")
    func webhookBody() throws {
        let result = try CLI.run(Self.root + ["TestVectors/jws/notification-webhook-body.json"])
        let record = try #require(try result.records().first)
        #expect(record["kind"] as? String == "notification")
        #expect((record["transactions"] as? [Any])?.count == 1)
        #expect(record["renewal_info"] != nil)
    }

    @Test("--pretty prints the same record indented")
    func pretty() throws {
        let compact = try CLI.run(Self.root + ["TestVectors/jws/renewal-info.jws"])
        let pretty = try CLI.run(Self.root + ["--pretty", "TestVectors/jws/renewal-info.jws"])
        #expect(pretty.stdout.contains("\n  \"status\": \"verified\""))
        let a = try parseJSON(compact.stdout)
        let b = try parseJSON(pretty.stdout)
        #expect(NSDictionary(dictionary: a) == NSDictionary(dictionary: b))
    }

    @Test("a line far beyond the size limit is one input_too_large record, and the next line still verifies")
    func hugeLine() throws {
        let valid = try Fixtures.testVectorText("jws/transaction-consumable.jws")
        // Beyond the line limit, which covers a maximum-size receipt in base64 (about 1.4 MB).
        let huge = String(repeating: "A", count: 2_000_000)
        let result = try CLI.run(Self.root, stdin: huge + "\n" + valid + "\n")
        let records = try result.records()
        #expect(records.count == 2)
        #expect((records[0]["error"] as? [String: Any])?["code"] as? String == "input_too_large")
        #expect(records[1]["status"] as? String == "verified")
    }

    @Test("binary garbage lines are rejected, never a crash")
    func garbage() throws {
        var bytes: [UInt8] = []
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes.append(UInt8(truncatingIfNeeded: state >> 56))
        }
        let result = try CLI.run(Self.root, stdinBytes: bytes)
        #expect(result.status == 1)
        let records = try result.records()
        #expect(!records.isEmpty)
        #expect(records.allSatisfy { $0["status"] as? String == "rejected" })
    }

    @Test("--kind forces the payload kind")
    func forcedKind() throws {
        let result = try CLI.run(Self.root + ["--kind", "renewal_info", "TestVectors/jws/transaction-consumable.jws"])
        #expect(try result.records().first?["kind"] as? String == "renewal_info")
    }

    @Test("a real Apple transaction verifies with no option at all", .requires(.sharedVectors))
    func realTransaction() throws {
        let jws = try Fixtures.sharedVectorText("jws/real/mingos_2025-02-10_transaction_consumable_sandbox.jws")
        let result = try CLI.run([], stdin: jws + "\n")
        #expect(result.status == 0)
        let record = try #require(try result.records().first)
        #expect(record["status"] as? String == "verified")
        #expect((record["chain"] as? [String: Any])?["root_sha256"] as? String == TrustAnchors.appleRootCAG3SHA256)
        let transaction = try #require((record["transactions"] as? [[String: Any]])?.first)
        #expect(transaction["transaction_id"] as? String == "2000000847061981")
        #expect(transaction["purchase_date"] as? String == "2025-02-04T05:06:00.000Z")
    }
}

/// Apple's real, mock and Xcode JWS through the binary, with the README's stated outcomes.
@Suite("verify-receipt over Apple's vectors", .requires(.sharedVectors))
struct CommandLineAppleVectorTests {
    static let cases: [(file: String, arguments: [String], code: String?)] = [
        ("jws/real/mingos_2025-02-10_transaction_consumable_sandbox.jws", ["--environment", "Sandbox"], nil),
        ("jws/real/goiap_2023-05-23_renewalInfo_sandbox.jws", [], nil),
        ("jws/real/mingos_2025-02-10_transaction_consumable_sandbox.jws", ["--at", "now"], "certificate_expired"),
        ("jws/real/goiap_2023-05-23_renewalInfo_sandbox.jws", ["--at", "now"], "certificate_expired"),
        ("jws/real/mingos_2025-02-10_transaction_consumable_sandbox.jws", ["--environment", "Production"], "environment_mismatch"),
        ("jws/apple-mock/transactionInfo.jws", ["--root", "MOCK", "--bundle-id", "com.example", "--environment", "Sandbox"], nil),
        ("jws/apple-mock/transactionInfo.jws", ["--root", "MOCK", "--bundle-id", "com.example.x"], "bundle_id_mismatch"),
        ("jws/apple-mock/renewalInfo.jws", ["--root", "MOCK", "--environment", "Sandbox"], nil),
        ("jws/apple-mock/testNotification.jws", ["--root", "MOCK", "--bundle-id", "com.example", "--environment", "Sandbox"], nil),
        ("jws/apple-mock/testNotification.jws", ["--root", "MOCK", "--environment", "Production", "--app-apple-id", "1234"], "environment_mismatch"),
        ("jws/apple-mock/testNotification.jws", ["--root", "MOCK", "--app-apple-id", "1235"], "app_apple_id_mismatch"),
        ("jws/apple-mock/wrongBundleId.jws", ["--root", "MOCK", "--bundle-id", "com.example"], "bundle_id_mismatch"),
        ("jws/apple-mock/missingX5CHeaderClaim.jws", ["--root", "MOCK"], "missing_certificate_chain"),
        ("jws/xcode/xcode-signed-transaction.jws", ["--root", "XCODE", "--environment", "Xcode"], nil),
        ("jws/xcode/xcode-signed-renewal-info.jws", ["--root", "XCODE", "--environment", "Xcode"], nil),
        ("jws/xcode/xcode-signed-app-transaction.jws", ["--root", "XCODE", "--environment", "Xcode"], nil),
        ("jws/xcode/xcode-signed-transaction.jws", ["--environment", "Xcode"], "untrusted_root"),
    ]

    @Test("each vector gives its stated outcome", arguments: 0..<cases.count)
    func vector(_ index: Int) throws {
        let (file, template, code) = Self.cases[index]
        let base = try #require(Fixtures.sharedVectors)
        let arguments = template.map { argument -> String in
            switch argument {
            case "MOCK": base.appendingPathComponent("certs/AppleTestCA-mock.der").path
            case "XCODE": base.appendingPathComponent("certs/StoreKitTestingInXcode.der").path
            default: argument
            }
        }
        let result = try CLI.run(arguments + [base.appendingPathComponent(file).path])
        let record = try #require(try result.records().first, "\(result.stderr)")
        #expect(record["status"] as? String == (code == nil ? "verified" : "rejected"), "\(file) \(record)")
        #expect((record["error"] as? [String: Any])?["code"] as? String == code)
        #expect(result.status == (code == nil ? 0 : 1))
    }
}
