import Foundation
import ReceiptKit
import ReceiptKitTestSupport
import Testing

/// `verify-receipt --state … --entitlements FILE`: after the state lines, one line per app account
/// token with what the library's ``EntitlementCatalog`` gives for that customer's states; a bad file
/// is a usage error naming the file and the library's reason.
@Suite("verify-receipt --entitlements")
struct EntitlementsCommandTests {
    static let root = ["--root", "TestVectors/pki/root.der"]
    static let asOf = "2025-06-16T00:00:00Z"
    /// Two customers; "0a…" sorts before "7e…".
    static let first = "0a6f1c9e-6a44-4b8e-9a57-1f2a3b4c5d6e"
    static let second = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let lifetime = "com.receiptkit.example.premium.lifetime"
    static let pass30 = "com.receiptkit.example.pass.30d"
    static let coins = "com.receiptkit.example.coins"
    static let removeAds = "com.receiptkit.example.removeads"

    /// The consumable under "bonus" is a mistake the archive's product types show.
    static let catalogText = """
        {"entitlements": {
           "pro":         {"products": ["\(PurchaseHistory.monthly)", "\(lifetime)"]},
           "remove_ads":  {"products": ["\(removeAds)", "\(lifetime)"]},
           "season_pass": {"products": [{"id": "\(pass30)", "duration": "P30D"}]},
           "bonus":       {"products": ["\(coins)"]}}}
        """

    /// The first customer subscribes and buys the lifetime unlock; the second buys two passes and
    /// coins; a remove-ads purchase carries no token.
    static func records() throws -> [String] {
        let history = try PurchaseHistory()
        func oneTime(_ id: String, _ product: String, _ type: String, at day: Double, token: String?) throws -> String {
            try history.transactionJWS(id: id, original: id, product: product, type: type, purchased: day, expires: nil,
                                       signed: day, appAccountToken: token)
        }
        return [
            try oneTime("3002", pass30, "Non-Renewing Subscription", at: 10, token: second),
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0,
                                       appAccountToken: first),
            try history.renewalInfoJWS(original: "1001", signed: 0, renewal: 30),
            try oneTime("2001", lifetime, "Non-Consumable", at: 5, token: first),
            try oneTime("3001", pass30, "Non-Renewing Subscription", at: 0, token: second),
            try oneTime("4001", coins, "Consumable", at: 3, token: second),
            try oneTime("2002", removeAds, "Non-Consumable", at: 1, token: nil),
        ]
    }

    /// A file holding `text`, removed when the test ends.
    static func file(_ text: String) throws -> StateCommandTests.TemporaryFile {
        let file = StateCommandTests.TemporaryFile()
        try text.write(toFile: file.path, atomically: true, encoding: .utf8)
        return file
    }

    /// What the library gives for the same records: the state lines, then one line per token.
    static func expectedLines(_ records: [String]) throws -> [String] {
        let history = try PurchaseHistory()
        var ledger = EntitlementLedger()
        for record in records { ledger.add(try history.record(record)) }
        let instant = try #require(Timestamp(rfc3339: asOf))
        let catalog = try EntitlementCatalog(jsonBytes: Array(catalogText.utf8))
        let states = ledger.states(at: instant)
        let customers = [first, second].map { token in
            let answers = catalog.entitlements(of: states.filter { $0.appAccountToken == token }, at: instant)
            return "{\"app_account_token\":\"\(token)\",\"as_of\":\"\(instant.iso8601)\","
                + "\"entitled\":\(answers.contains(where: \.isActive)),\"entitlements\":\(NamedEntitlement.json(answers))}"
        }
        return states.map { $0.json() } + customers
    }

    @Test("after the state lines, one line per app account token, sorted, equal to the library's answer")
    func matchesLibrary() throws {
        let records = try Self.records()
        let catalog = try Self.file(Self.catalogText)
        let run = try CLI.run(Self.root + ["--state", "-", "--as-of", Self.asOf, "--entitlements", catalog.path],
                              stdin: records.joined(separator: "\n") + "\n")
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let expected = try Self.expectedLines(records)
        #expect(lines == expected)
        #expect(run.stdout.hasSuffix("\n"))

        // What those lines say, by hand: the first customer owns the lifetime unlock (pro and
        // remove_ads, no end); the second's passes stack from day 0 to day 60 (2025-07-31), and
        // the coins entitle nothing. The purchase without a token is in the states only.
        let customers = try lines.suffix(2).map(parseJSON)
        #expect(customers.map { $0["app_account_token"] as? String } == [Self.first, Self.second])
        #expect(customers.allSatisfy { $0["entitled"] as? Bool == true && $0["as_of"] as? String == "2025-06-16T00:00:00.000Z" })
        let firstOnes = try #require(customers[0]["entitlements"] as? [String: [String: Any]])
        #expect(firstOnes["pro"]?["source"] as? String == "purchase")
        #expect(firstOnes["pro"]?["expires_date"] is NSNull)
        #expect(firstOnes["remove_ads"]?["product_id"] as? String == Self.lifetime)
        #expect(firstOnes["season_pass"]?["active"] as? Bool == false)
        let secondOnes = try #require(customers[1]["entitlements"] as? [String: [String: Any]])
        #expect(secondOnes["season_pass"]?["expires_date"] as? String == "2025-07-31T00:00:00.000Z")
        #expect(secondOnes["bonus"]?["active"] as? Bool == false)
        #expect(secondOnes["pro"]?["source"] is NSNull)
        #expect(lines.dropLast(2).contains { $0.contains(Self.removeAds) })
        #expect(!lines.suffix(2).contains { $0.contains("\"product_id\":\"\(Self.removeAds)\"") })

        // The file puts a consumable under "bonus": a warning, not a failure.
        #expect(run.stderr.contains(
            "verify-receipt: warning: --entitlements \(catalog.path): \(Self.coins) (under bonus) is a consumable"))
    }

    @Test("with a state file, the customers' lines follow the states there, and the records go to standard output")
    func stateFile() throws {
        let records = try Self.records()
        let catalog = try Self.file(Self.catalogText)
        let state = StateCommandTests.TemporaryFile()
        let run = try CLI.run(Self.root + ["--state", state.path, "--as-of", Self.asOf, "--entitlements", catalog.path],
                              stdin: records.joined(separator: "\n"))
        #expect(run.status == 0)
        #expect(try run.records().count == records.count)
        #expect(state.text == (try Self.expectedLines(records)).map { $0 + "\n" }.joined())
    }

    @Test("the example of docs/entitlements.md")
    func documentedExample() throws {
        let page = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/entitlements.md"), encoding: .utf8)
        let section = try #require(page.components(separatedBy: "\n## verify-receipt --entitlements\n").dropFirst().first?
            .components(separatedBy: "\n## ").first)
        let blocks = section.components(separatedBy: "```json\n").dropFirst().compactMap {
            $0.components(separatedBy: "\n```").first
        }
        try #require(blocks.count == 2, "the section shows the file and the line")
        let history = try PurchaseHistory()
        let records = [
            try history.transactionJWS(id: "1001", original: "1001", purchased: 0, expires: 30, signed: 0,
                                       appAccountToken: Self.first),
            try history.renewalInfoJWS(original: "1001", signed: 0, renewal: 30),
            try history.transactionJWS(id: "3001", original: "3001", product: Self.pass30, type: "Non-Renewing Subscription",
                                       purchased: 10, expires: nil, signed: 10, appAccountToken: Self.first),
        ]
        let catalog = try Self.file(blocks[0])
        let run = try CLI.run(Self.root + ["--state", "-", "--as-of", Self.asOf, "--entitlements", catalog.path],
                              stdin: records.joined(separator: "\n"))
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty, "the documented file contradicts nothing")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "two state lines and the customer's")
        #expect(lines.last == blocks[1])
    }

    @Test("a bad file is a usage error naming the file and the library's reason, before anything is written")
    func badFile() throws {
        let text = """
            {"entitlements": {
               "pro": {"products": ["\(PurchaseHistory.monthly)"],
                       "trial": "P7D"}}}
            """
        let catalog = try Self.file(text)
        let state = StateCommandTests.TemporaryFile()
        let run = try CLI.run(Self.root + ["--state", state.path, "--entitlements", catalog.path])
        #expect(run.status == 64)
        #expect(run.stderr.contains(
            "--entitlements \(catalog.path): the entitlements file, line 3, entitlements.pro.trial: an entitlement has no member \"trial\""),
            "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: state.path), "the state file is not created")

        // The comma missing at the end of line 2 is noticed on line 3.
        let notJSON = try Self.file("{\"entitlements\": {\n   \"pro\": {\"products\": []}\n   \"gold\": {}}}")
        let broken = try CLI.run(Self.root + ["--state", "-", "--entitlements", notJSON.path])
        #expect(broken.status == 64)
        #expect(broken.stderr.contains("--entitlements \(notJSON.path): the entitlements file is not valid JSON: "))
        #expect(broken.stderr.contains("at line 3, column "), "\(broken.stderr)")

        let missing = try CLI.run(Self.root + ["--state", "-", "--entitlements", "/nonexistent-dir/entitlements.json"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("cannot read the entitlements file /nonexistent-dir/entitlements.json"))

        let alone = try CLI.run(Self.root + ["--entitlements", catalog.path, "TestVectors/jws/transaction-consumable.jws"])
        #expect(alone.status == 64)
        #expect(alone.stderr.contains("--entitlements applies to --state"))
    }
}
