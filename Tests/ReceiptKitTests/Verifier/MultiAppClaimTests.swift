import Foundation
import ReceiptKit
import Testing

/// Claims against several apps and environments: every payload kind that carries claims,
/// accepted for each configured (app, environment) and refused, the claim named with the
/// configured set, for anything else; a JWS nested in a notification held to its app and
/// environment.
@Suite("Claims of several apps and environments")
struct MultiAppClaimTests {
    static let example = AppStoreVerifier.App(bundleId: "com.receiptkit.example", appAppleId: 42)
    static let pro = AppStoreVerifier.App(bundleId: "com.receiptkit.pro", appAppleId: 43)
    /// An app configured without an App Apple ID.
    static let lite = AppStoreVerifier.App(bundleId: "com.receiptkit.lite")
    static let signedDate = 1_748_779_200_123

    /// Every configured (app, environment) pair.
    static let pairs: [(AppStoreVerifier.App, AppStoreEnvironment)] = [
        (example, .production), (example, .sandbox), (pro, .production), (pro, .sandbox),
    ]

    let signer: TestSigner
    let verifier: AppStoreVerifier

    init() throws {
        signer = try TestSigner.standard()
        verifier = AppStoreVerifier(
            .init(anchors: try Fixtures.testRootAnchors(), apps: [Self.example, Self.pro],
                  environments: [.production, .sandbox]),
            clock: Fixtures.fixedClock)
    }

    // MARK: Payloads

    func sign(_ payload: [String: Any]) throws -> String {
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try signer.sign(payload: String(decoding: json, as: UTF8.self))
    }

    func transaction(_ bundleId: String, _ environment: String, id: String = "1") throws -> String {
        try sign([
            "transactionId": id, "originalTransactionId": id, "bundleId": bundleId, "productId": "p",
            "type": "Non-Consumable", "purchaseDate": Self.signedDate, "signedDate": Self.signedDate,
            "environment": environment, "inAppOwnershipType": "PURCHASED",
        ])
    }

    func renewalInfo(_ environment: String, original: String = "1") throws -> String {
        try sign(["originalTransactionId": original, "autoRenewStatus": 1, "signedDate": Self.signedDate,
                  "environment": environment])
    }

    func appTransaction(_ bundleId: String, _ environment: String, appAppleId: Int64?) throws -> String {
        var payload: [String: Any] = [
            "bundleId": bundleId, "receiptType": environment, "receiptCreationDate": Self.signedDate,
            "signedDate": Self.signedDate,
        ]
        payload["appAppleId"] = appAppleId
        return try sign(payload)
    }

    func realtimeRequest(_ environment: String, appAppleId: Int64?) throws -> String {
        var payload: [String: Any] = [
            "requestIdentifier": "r", "environment": environment, "signedDate": Self.signedDate,
        ]
        payload["appAppleId"] = appAppleId
        return try sign(payload)
    }

    /// A notification about a transaction (`data`), carrying the nested JWS given.
    func notification(
        _ bundleId: String, _ environment: String, appAppleId: Int64?, transaction: String? = nil,
        renewalInfo: String? = nil
    ) throws -> String {
        var data: [String: Any] = ["bundleId": bundleId, "environment": environment]
        data["appAppleId"] = appAppleId
        data["signedTransactionInfo"] = transaction
        data["signedRenewalInfo"] = renewalInfo
        return try sign(["notificationType": "DID_RENEW", "notificationUUID": "u", "signedDate": Self.signedDate,
                         "data": data])
    }

    /// A notification about the app (`appData`), carrying an app transaction.
    func appNotification(_ bundleId: String, _ environment: String, appAppleId: Int64?, appTransaction: String) throws
        -> String
    {
        var appData: [String: Any] = [
            "bundleId": bundleId, "environment": environment, "signedAppTransactionInfo": appTransaction,
        ]
        appData["appAppleId"] = appAppleId
        return try sign(["notificationType": "RESCIND_CONSENT", "notificationUUID": "u", "signedDate": Self.signedDate,
                         "appData": appData])
    }

    // MARK: Accepted

    @Test("every configured (app, environment) is accepted for every kind, and names its app",
          arguments: 0..<4)
    func accepted(_ index: Int) throws {
        let (app, environment) = Self.pairs[index]
        let bundleId = try #require(app.bundleId)
        let env = environment.rawValue

        let verifiedTransaction = try verifier.verifyTransaction(transaction(bundleId, env))
        #expect(verifiedTransaction.matchedApp == app)
        #expect(verifiedTransaction.payload.environment == environment)

        let verifiedApp = try verifier.verifyAppTransaction(appTransaction(bundleId, env, appAppleId: app.appAppleId))
        #expect(verifiedApp.matchedApp == app)

        let realtime = try verifier.verifyRealtimeRequest(realtimeRequest(env, appAppleId: app.appAppleId))
        #expect(realtime.matchedApp == app, "found by its App Apple ID")

        // Renewal info names no app: on its own, with two configured, it matches none.
        let renewal = try verifier.verifyRenewalInfo(renewalInfo(env))
        #expect(renewal.matchedApp == nil)

        let verified = try verifier.verifyNotification(notification(
            bundleId, env, appAppleId: app.appAppleId, transaction: transaction(bundleId, env), renewalInfo: renewalInfo(env)))
        #expect(verified.notification.matchedApp == app)
        #expect(verified.transaction?.matchedApp == app)
        #expect(verified.renewalInfo?.matchedApp == app, "a nested renewal info is its notification's app's")
        let record = VerificationRecord(verified)
        #expect(record.matchedApp == app)
        #expect(record.environment == env)

        let appNotification = try verifier.verifyNotification(appNotification(
            bundleId, env, appAppleId: app.appAppleId,
            appTransaction: appTransaction(bundleId, env, appAppleId: app.appAppleId)))
        #expect(appNotification.appTransaction?.matchedApp == app)

        // The same through the detecting entry point the command uses.
        guard case .verified(let detected) = verifier.verify(input: Array(try self.transaction(bundleId, env).utf8)) else {
            Issue.record("the transaction did not verify through verify(input:)")
            return
        }
        #expect(detected.matchedApp == app)
    }

    // MARK: Refused

    @Test("an app not configured is refused for every kind that names one, the configured set in the reason")
    func appNotConfigured() throws {
        let set = "one of \"com.receiptkit.example\", \"com.receiptkit.pro\""
        let rejections: [(String, () throws -> Void)] = [
            ("transaction", { _ = try verifier.verifyTransaction(transaction("com.other", "Production")) }),
            ("app transaction", { _ = try verifier.verifyAppTransaction(appTransaction("com.other", "Sandbox", appAppleId: 42)) }),
            ("notification", { _ = try verifier.verifyNotification(notification("com.other", "Production", appAppleId: 42)) }),
        ]
        for (kind, body) in rejections {
            let error = expectRejection(.bundleIDMismatch, body)
            #expect(error?.reason == "\(kind) bundle id is \"com.other\", expected \(set)")
        }
        let absent = expectRejection(.bundleIDMismatch) {
            _ = try verifier.verifyTransaction(sign(["transactionId": "1", "signedDate": Self.signedDate, "environment": "Sandbox"]))
        }
        #expect(absent?.reason == "transaction bundle id is absent, expected \(set)")
    }

    @Test("an App Apple ID is its own app's: another configured app's is refused, naming the app")
    func appAppleIdOfItsApp() throws {
        // com.receiptkit.example with com.receiptkit.pro's App Apple ID.
        let error = expectRejection(.appAppleIDMismatch) {
            _ = try verifier.verifyNotification(notification("com.receiptkit.example", "Production", appAppleId: 43))
        }
        #expect(error?.reason == "notification appAppleId is 43, expected 42 for \"com.receiptkit.example\"")
        expectRejection(.appAppleIDMismatch) {
            _ = try verifier.verifyAppTransaction(appTransaction("com.receiptkit.pro", "Sandbox", appAppleId: 42))
        }
        let realtime = expectRejection(.appAppleIDMismatch) {
            _ = try verifier.verifyRealtimeRequest(realtimeRequest("Sandbox", appAppleId: 44))
        }
        #expect(realtime?.reason == "realtime request appAppleId is 44, expected one of 42, 43")
    }

    @Test("a missing App Apple ID is refused in Production only, and only for an app configured with one")
    func missingAppAppleId() throws {
        let production = expectRejection(.appAppleIDMismatch) {
            _ = try verifier.verifyNotification(notification("com.receiptkit.pro", "Production", appAppleId: nil))
        }
        #expect(production?.reason == "notification has no appAppleId; a Production verifier expects 43 for \"com.receiptkit.pro\"")
        #expect(throws: Never.self) {
            _ = try verifier.verifyNotification(notification("com.receiptkit.pro", "Sandbox", appAppleId: nil))
        }
        expectRejection(.appAppleIDMismatch) { _ = try verifier.verifyRealtimeRequest(realtimeRequest("Production", appAppleId: nil)) }
        let sandbox = try verifier.verifyRealtimeRequest(realtimeRequest("Sandbox", appAppleId: nil))
        #expect(sandbox.matchedApp == nil)

        // An app without an App Apple ID: nothing to compare, in any environment; and a realtime
        // request with an App Apple ID not listed may be that app's.
        let withLite = AppStoreVerifier(
            .init(anchors: try Fixtures.testRootAnchors(), apps: [Self.example, Self.lite], environments: [.production]),
            clock: Fixtures.fixedClock)
        let lite = try withLite.verifyNotification(notification("com.receiptkit.lite", "Production", appAppleId: nil))
        #expect(lite.notification.matchedApp == Self.lite)
        #expect(try withLite.verifyNotification(notification("com.receiptkit.lite", "Production", appAppleId: 99))
            .notification.matchedApp == Self.lite)
        #expect(try withLite.verifyRealtimeRequest(realtimeRequest("Production", appAppleId: 99)).matchedApp == Self.lite)
        #expect(try withLite.verifyRealtimeRequest(realtimeRequest("Production", appAppleId: 42)).matchedApp == Self.example)
        expectRejection(.appAppleIDMismatch) {
            _ = try withLite.verifyNotification(notification("com.receiptkit.example", "Production", appAppleId: nil))
        }
    }

    @Test("an environment not configured is refused for every kind, the configured set in the reason")
    func environmentNotConfigured() throws {
        let set = "one of \"Production\", \"Sandbox\""
        let rejections: [(String, String?, () throws -> Void)] = [
            ("transaction", "Xcode", { _ = try verifier.verifyTransaction(transaction("com.receiptkit.example", "Xcode")) }),
            ("renewal info", "LocalTesting", { _ = try verifier.verifyRenewalInfo(renewalInfo("LocalTesting")) }),
            ("app transaction", "Xcode", {
                _ = try verifier.verifyAppTransaction(appTransaction("com.receiptkit.pro", "Xcode", appAppleId: 43))
            }),
            ("realtime request", "Xcode", { _ = try verifier.verifyRealtimeRequest(realtimeRequest("Xcode", appAppleId: 42)) }),
            ("notification", "Xcode", {
                _ = try verifier.verifyNotification(notification("com.receiptkit.example", "Xcode", appAppleId: 42))
            }),
            ("renewal info", nil, { _ = try verifier.verifyRenewalInfo(sign(["signedDate": Self.signedDate])) }),
        ]
        for (kind, environment, body) in rejections {
            let error = expectRejection(.environmentMismatch, body)
            #expect(error?.reason == "\(kind) environment is \(environment.map { "\"\($0)\"" } ?? "absent"), expected \(set)")
        }
    }

    @Test("identity is checked before environment with several apps too")
    func order() throws {
        expectRejection(.bundleIDMismatch) { _ = try verifier.verifyTransaction(transaction("com.other", "Xcode")) }
        expectRejection(.appAppleIDMismatch) {
            _ = try verifier.verifyNotification(notification("com.receiptkit.example", "Xcode", appAppleId: 43))
        }
    }

    // MARK: Nested JWS

    @Test("a nested JWS of another configured app or environment is refused, naming the notification's")
    func nestedOfAnotherPair() throws {
        let cases: [(ReceiptKitError.Code, String, () throws -> String)] = [
            (.bundleIDMismatch, "data.signedTransactionInfo: transaction bundle id is \"com.receiptkit.pro\", expected \"com.receiptkit.example\", the notification's", {
                try notification("com.receiptkit.example", "Production", appAppleId: 42,
                                 transaction: transaction("com.receiptkit.pro", "Production"))
            }),
            (.environmentMismatch, "data.signedTransactionInfo: transaction environment is \"Sandbox\", expected \"Production\", the notification's", {
                try notification("com.receiptkit.example", "Production", appAppleId: 42,
                                 transaction: transaction("com.receiptkit.example", "Sandbox"))
            }),
            (.environmentMismatch, "data.signedRenewalInfo: renewal info environment is \"Production\", expected \"Sandbox\", the notification's", {
                try notification("com.receiptkit.pro", "Sandbox", appAppleId: 43,
                                 transaction: transaction("com.receiptkit.pro", "Sandbox"), renewalInfo: renewalInfo("Production"))
            }),
            (.bundleIDMismatch, "appData.signedAppTransactionInfo: app transaction bundle id is \"com.receiptkit.example\", expected \"com.receiptkit.pro\", the notification's", {
                try appNotification("com.receiptkit.pro", "Sandbox", appAppleId: 43,
                                    appTransaction: appTransaction("com.receiptkit.example", "Sandbox", appAppleId: 42))
            }),
            (.environmentMismatch, "appData.signedAppTransactionInfo: app transaction environment is \"Production\", expected \"Sandbox\", the notification's", {
                try appNotification("com.receiptkit.pro", "Sandbox", appAppleId: 43,
                                    appTransaction: appTransaction("com.receiptkit.pro", "Production", appAppleId: 43))
            }),
        ]
        for (code, reason, token) in cases {
            let signedPayload = try token()
            let error = expectRejection(code) { _ = try verifier.verifyNotification(signedPayload) }
            #expect(error?.reason == reason)
            // Each nested JWS alone is of a configured pair: only the pairing is wrong.
            guard case .rejected(let rejected) = verifier.verify(input: Array(signedPayload.utf8)) else {
                Issue.record("verify(input:) accepted \(reason)")
                continue
            }
            #expect(rejected.code == code)
        }
    }

    @Test("a nested JWS of an app or environment not configured names the configured set while the notification's own claims fail")
    func nestedWhenTheNotificationFails() throws {
        // The notification itself is of no configured app: its nested JWS are checked against the
        // whole set first, as a single-app verifier does, then the notification's own claims.
        let error = expectRejection(.bundleIDMismatch) {
            _ = try verifier.verifyNotification(notification(
                "com.other", "Production", appAppleId: 42, transaction: transaction("com.receiptkit.pro", "Production")))
        }
        #expect(error?.reason == "notification bundle id is \"com.other\", expected one of \"com.receiptkit.example\", \"com.receiptkit.pro\"")
        let nested = expectRejection(.bundleIDMismatch) {
            _ = try verifier.verifyNotification(notification(
                "com.other", "Production", appAppleId: 42, transaction: transaction("com.another", "Production")))
        }
        #expect(nested?.reason.hasPrefix("data.signedTransactionInfo: transaction bundle id is \"com.another\", expected one of") == true)
    }

    // MARK: Receipts

    @Test("legacy receipts: each configured app and environment accepted, others refused naming the claim")
    func receipts() throws {
        let anchors = try TrustAnchors(rootCertificates: [
            Fixtures.testVector("receipts/pki/root.der"), Fixtures.testVector("receipts/pki/storekit.der"),
        ])
        func verifier(_ apps: [AppStoreVerifier.App]) -> AppStoreVerifier {
            AppStoreVerifier(.init(anchors: anchors, apps: apps, environments: [.production, .sandbox]), clock: Fixtures.fixedClock)
        }
        let example = AppStoreVerifier.App(bundleId: "com.receiptkit.example", appAppleId: 1_234_567_890)
        let both = verifier([.init(bundleId: "com.receiptkit.pro", appAppleId: 7), example])
        let production = try both.verifyReceipt(Fixtures.testVector("receipts/receipt-production.der"))
        #expect(production.matchedApp == example)
        #expect(production.payload.environment == .production)
        let sandbox = try both.verifyReceipt(Fixtures.testVector("receipts/receipt-sha256-der.der"))
        #expect(sandbox.matchedApp == example)
        #expect(VerificationRecord(sandbox).matchedApp == example)

        let xcode = expectRejection(.environmentMismatch) {
            _ = try both.verifyReceipt(Fixtures.testVector("receipts/receipt-xcode.der"))
        }
        #expect(xcode?.reason == "receipt environment is \"Xcode\", expected one of \"Production\", \"Sandbox\"")
        let other = expectRejection(.bundleIDMismatch) {
            _ = try verifier([.init(bundleId: "com.receiptkit.pro"), .init(bundleId: "com.receiptkit.lite")])
                .verifyReceipt(Fixtures.testVector("receipts/receipt-production.der"))
        }
        #expect(other?.reason == "receipt bundle id is \"com.receiptkit.example\", expected one of \"com.receiptkit.pro\", \"com.receiptkit.lite\"")
        expectRejection(.appAppleIDMismatch) {
            _ = try verifier([.init(bundleId: "com.receiptkit.example", appAppleId: 7), .init(bundleId: "com.receiptkit.pro")])
                .verifyReceipt(Fixtures.testVector("receipts/receipt-production.der"))
        }
    }

    // MARK: The single-app form

    @Test("the single-app initializer is one app in one environment; its conveniences read one of each")
    func singleAppForm() throws {
        let single = AppStoreVerifier.Configuration(bundleId: "com.receiptkit.example", appAppleId: 42, environment: .production)
        #expect(single.apps == [Self.example])
        #expect(single.environments == [.production])
        #expect(single.bundleId == "com.receiptkit.example")
        #expect(single.appAppleId == 42)
        #expect(single.environment == .production)

        let idOnly = AppStoreVerifier.Configuration(appAppleId: 42)
        #expect(idOnly.apps == [AppStoreVerifier.App(appAppleId: 42)])
        #expect(idOnly.bundleId == nil)
        #expect(idOnly.appAppleId == 42)
        #expect(idOnly.environments.isEmpty)
        #expect(AppStoreVerifier.Configuration().apps.isEmpty)

        let several = AppStoreVerifier.Configuration(apps: [Self.example, Self.pro], environments: [.production, .sandbox])
        #expect(several.bundleId == nil)
        #expect(several.appAppleId == nil)
        #expect(several.environment == nil)
    }

    @Test("one app and one environment through either initializer check alike")
    func initializersAgree() throws {
        let anchors = try Fixtures.testRootAnchors()
        let single = AppStoreVerifier(.init(anchors: anchors, bundleId: "com.receiptkit.example", appAppleId: 42,
                                            environment: .sandbox), clock: Fixtures.fixedClock)
        let set = AppStoreVerifier(.init(anchors: anchors, apps: [Self.example], environments: [.sandbox]),
                                   clock: Fixtures.fixedClock)
        let tokens = [
            try transaction("com.receiptkit.example", "Sandbox"), try transaction("com.receiptkit.pro", "Sandbox"),
            try transaction("com.receiptkit.example", "Production"),
            try notification("com.receiptkit.example", "Sandbox", appAppleId: 43),
            try notification("com.receiptkit.example", "Sandbox", appAppleId: nil),
            try realtimeRequest("Sandbox", appAppleId: 43), try renewalInfo("Xcode"),
        ]
        for token in tokens {
            let expected = single.verify(input: Array(token.utf8)).json()
            #expect(set.verify(input: Array(token.utf8)).json() == expected)
        }
        #expect(try single.verifyRenewalInfo(renewalInfo("Sandbox")).matchedApp == Self.example, "the only app")
    }

    // MARK: Reading the set from text

    @Test("apps(parsing:) reads BUNDLE_ID[:APP_APPLE_ID] lists; environments(parsing:) Apple's names")
    func parsing() throws {
        typealias Configuration = AppStoreVerifier.Configuration
        #expect(try Configuration.apps(parsing: ["com.a:42, com.b", "com.c:1"]) == [
            .init(bundleId: "com.a", appAppleId: 42), .init(bundleId: "com.b"), .init(bundleId: "com.c", appAppleId: 1),
        ])
        #expect(try Configuration.apps(parsing: []).isEmpty)
        #expect(try Configuration.environments(parsing: ["Production, Sandbox", "Sandbox"]) == [.production, .sandbox])
        let refused: [(String, String)] = [
            ("com.a:0", "app \"com.a:0\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)"),
            ("com.a:-1", "app \"com.a:-1\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)"),
            ("com.a:x", "app \"com.a:x\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)"),
            ("com.a:1:2", "app \"com.a:1:2\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)"),
            ("com.a,,com.b", "app \"\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)"),
            (":42", "app \":42\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)"),
            ("com.a b", "app \"com.a b\" is not BUNDLE_ID or BUNDLE_ID:APP_APPLE_ID (a positive decimal number)"),
            ("com.a:1,com.a:2", "bundle id \"com.a\" is given twice"),
        ]
        for (text, reason) in refused {
            let error = expectRejection(.unrecognizedInput) { _ = try Configuration.apps(parsing: [text]) }
            #expect(error?.reason == reason, "\(text)")
        }
        let environment = expectRejection(.unrecognizedInput) { _ = try Configuration.environments(parsing: ["Production,production"]) }
        #expect(environment?.reason == "environment \"production\" is not one of Production, Sandbox, Xcode, LocalTesting")

        for app in [Self.example, Self.lite, AppStoreVerifier.App(appAppleId: 7)] {
            #expect(app.bundleId == nil || AppStoreVerifier.App(app.description) == app, "\(app)")
        }
        #expect(AppStoreVerifier.App(appAppleId: 7).description == ":7")
    }
}
