import Foundation
import ReceiptKit
import Testing

/// `verify-receipt` with several apps and environments: repeated and comma-listed `--bundle-id`,
/// `--environment` and `--app`, the records of a mixed batch, and `--state` keeping every
/// (bundle id, environment, original transaction id) apart.
@Suite("verify-receipt with several apps")
struct MultiAppCommandTests {
    static let root = ["--root", "TestVectors/pki/root.der"]
    static let example = "com.receiptkit.example"
    static let pro = "com.receiptkit.pro"

    let history: PurchaseHistory

    init() throws {
        history = try PurchaseHistory()
    }

    func transaction(_ bundleId: String, _ environment: String, id: String, original: String) throws -> String {
        try history.sign([
            "transactionId": id, "originalTransactionId": original, "bundleId": bundleId, "productId": "m",
            "type": "Auto-Renewable Subscription", "purchaseDate": PurchaseHistory.day(1).millisecondsSince1970,
            "expiresDate": PurchaseHistory.day(31).millisecondsSince1970,
            "signedDate": PurchaseHistory.day(1).millisecondsSince1970, "environment": environment,
        ])
    }

    func renewalInfo(_ environment: String, original: String) throws -> String {
        try history.sign([
            "originalTransactionId": original, "autoRenewStatus": 0, "environment": environment,
            "signedDate": PurchaseHistory.day(2).millisecondsSince1970,
        ])
    }

    /// Transactions of both apps in both environments, all of original transaction id 1, one
    /// more of each app, a notification of the second app, a renewal info on its own; then two
    /// inputs of an app and an environment not configured.
    func batch() throws -> (accepted: [String], refused: [String]) {
        var accepted: [String] = []
        for bundleId in [Self.example, Self.pro] {
            for environment in ["Production", "Sandbox"] {
                accepted.append(try transaction(bundleId, environment, id: "1", original: "1"))
            }
        }
        accepted.append(try transaction(Self.example, "Production", id: "2", original: "2"))
        accepted.append(try renewalInfo("Production", original: "2"))
        accepted.append(try history.sign([
            "notificationType": "DID_CHANGE_RENEWAL_STATUS", "notificationUUID": "u",
            "signedDate": PurchaseHistory.day(2).millisecondsSince1970,
            "data": [
                "bundleId": Self.pro, "environment": "Sandbox", "appAppleId": 43,
                "signedTransactionInfo": try transaction(Self.pro, "Sandbox", id: "5", original: "5"),
                "signedRenewalInfo": try renewalInfo("Sandbox", original: "5"),
            ] as [String: Any],
        ]))
        let refused = [
            try transaction("com.receiptkit.other", "Production", id: "3", original: "3"),
            try transaction(Self.example, "Xcode", id: "4", original: "4"),
        ]
        return (accepted, refused)
    }

    @Test("--state over a mixed batch: one line per (bundle id, environment, original transaction id), as the library folds it")
    func state() throws {
        let (accepted, refused) = try batch()
        let input = (accepted + refused).joined(separator: "\n") + "\n"
        let asOf = "2025-06-04T00:00:00Z"

        let verifier = AppStoreVerifier(
            .init(anchors: try Fixtures.testRootAnchors(), apps: [.init(bundleId: Self.example), .init(bundleId: Self.pro)],
                  environments: [.production, .sandbox]),
            clock: Fixtures.fixedClock)
        var ledger = EntitlementLedger()
        for token in accepted { ledger.add(try verifier.verify(token)) }
        let instant = try #require(Timestamp(rfc3339: asOf))
        let states = ledger.states(at: instant)
        #expect(states.map(\.key.description) == [
            "com.receiptkit.example/Production/1", "com.receiptkit.example/Production/2", "com.receiptkit.example/Sandbox/1",
            "com.receiptkit.pro/Production/1", "com.receiptkit.pro/Sandbox/1", "com.receiptkit.pro/Sandbox/5",
        ])
        #expect(states.map(\.willRenew) == [nil, false, nil, nil, nil, false], "each renewal info joins its own key only")
        let expected = states.map { $0.json() + "\n" }.joined()

        let forms: [[String]] = [
            ["--bundle-id", Self.example, "--bundle-id", Self.pro, "--environment", "Production", "--environment", "Sandbox"],
            ["--bundle-id", "\(Self.example),\(Self.pro)", "--environment", "Production,Sandbox"],
            ["--app", "\(Self.example)", "--app", "\(Self.pro):43", "--environment", "Sandbox, Production"],
            ["--bundle-id", Self.example, "--app", "\(Self.pro):43", "--environment", "Production", "--environment", "Sandbox",
             "--jobs", "2"],
        ]
        for form in forms {
            let run = try CLI.run(Self.root + form + ["--state", "-", "--as-of", asOf], stdin: input)
            #expect(run.stdout == expected, "\(form)")
            #expect(run.status == 1, "the inputs of an app and an environment not configured fail the batch")
        }
    }

    @Test("the records of a mixed batch: each configured pair verified, the others refused naming the claim and the set")
    func records() throws {
        let (accepted, refused) = try batch()
        let run = try CLI.run(
            Self.root + ["--bundle-id", "\(Self.example),\(Self.pro)", "--environment", "Production", "--environment", "Sandbox"],
            stdin: (accepted + refused).joined(separator: "\n"))
        #expect(run.status == 1)
        let records = try run.records()
        #expect(records.count == accepted.count + refused.count)
        #expect(records.prefix(accepted.count).allSatisfy { $0["status"] as? String == "verified" })
        let errors = records.suffix(refused.count).map { $0["error"] as? [String: Any] }
        #expect(errors.map { $0?["code"] as? String } == ["bundle_id_mismatch", "environment_mismatch"])
        #expect(errors.map { $0?["message"] as? String } == [
            "transaction bundle id is \"com.receiptkit.other\", expected one of \"com.receiptkit.example\", \"com.receiptkit.pro\"",
            "transaction environment is \"Xcode\", expected one of \"Production\", \"Sandbox\"",
        ])
    }

    @Test("--app pairs each App Apple ID with its app: another app's is refused")
    func appAppleIds() throws {
        let notification = try history.sign([
            "notificationType": "TEST", "notificationUUID": "u", "signedDate": PurchaseHistory.day(2).millisecondsSince1970,
            "data": ["bundleId": Self.pro, "environment": "Sandbox", "appAppleId": 42] as [String: Any],
        ])
        let run = try CLI.run(Self.root + ["--app", "\(Self.example):42,\(Self.pro):43"], stdin: notification)
        #expect(run.status == 1)
        let error = try #require(try run.records().first?["error"] as? [String: Any])
        #expect(error["code"] as? String == "app_apple_id_mismatch")
        #expect(error["message"] as? String == "notification appAppleId is 42, expected 43 for \"com.receiptkit.pro\"")
        let right = try CLI.run(Self.root + ["--app", "\(Self.example):43,\(Self.pro):42"], stdin: notification)
        #expect(right.status == 0)
    }

    @Test("usage errors: an App Apple ID that could belong to several apps, a bundle id twice, a bad item", arguments: [
        (["--bundle-id", "com.a", "--bundle-id", "com.b", "--app-apple-id", "42"], "--app BUNDLE_ID:APP_APPLE_ID"),
        (["--bundle-id", "com.a,com.b", "--app-apple-id", "42"], "--app BUNDLE_ID:APP_APPLE_ID"),
        (["--app", "com.a", "--app-apple-id", "42"], "--app BUNDLE_ID:APP_APPLE_ID"),
        (["--bundle-id", "com.a:42"], "--app BUNDLE_ID:APP_APPLE_ID"),
        (["--bundle-id", "com.a", "--app", "com.a:42"], "bundle id \"com.a\" is given twice"),
        (["--app", "com.a:0"], "app \"com.a:0\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID"),
        (["--environment", "Production,Prod"], "environment \"Prod\" is not one of Production, Sandbox, Xcode, LocalTesting"),
    ])
    func usageErrors(_ arguments: [String], _ message: String) throws {
        let run = try CLI.run(Self.root + arguments + ["TestVectors/jws/transaction-consumable.jws"])
        #expect(run.status == 64)
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test("the single-app form is unchanged: --bundle-id with --app-apple-id, and --app-apple-id alone")
    func singleAppForm() throws {
        let notification = try history.notificationJWS(
            type: "TEST", signed: 1, transaction: try history.transactionJWS(id: "1", original: "1", purchased: 1, expires: 31, signed: 1))
        let paired = try CLI.run(Self.root + ["--bundle-id", Self.example, "--app-apple-id", "1234567890", "--environment", "Sandbox"],
                                 stdin: notification)
        #expect(paired.status == 0)
        let alone = try CLI.run(Self.root + ["--app-apple-id", "1"], stdin: notification)
        #expect(alone.status == 1)
        let error = try #require(try alone.records().first?["error"] as? [String: Any])
        #expect(error["code"] as? String == "app_apple_id_mismatch")
    }
}
