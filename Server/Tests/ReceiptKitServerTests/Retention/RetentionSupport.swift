import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// What the retention tests share: Apple's realtime requests and the transactions of their
/// stories, signed under the test PKI, and a server answering them by a rules file of the test's,
/// its In-App Purchase key the fake App Store Server API's.
enum Retention {
    static let appAppleId: Int64 = 1_234_567_890
    static let monthly = Payloads.productId
    static let yearly = "com.receiptkit.example.premium.yearly"
    /// The servers' clock in these tests (``AppleFake/now``), in milliseconds.
    static let now = Timestamp(AppleFake.now).millisecondsSince1970

    /// Message ids, as a rules file names them.
    static let billingMessage = "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c01"
    static let offerMessage = "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c02"
    static let switchMessage = "6b1c9e3a-2f4d-4a5b-8c7d-9e0f1a2b3c03"

    /// A realtime request's body, `{"signedPayload": …}`, signed by `signer` (the test PKI's leaf
    /// by default).
    static func request(
        original: String, product: String = monthly, locale: String = "en-US", environment: String = "Sandbox",
        appAppleId: Int64 = appAppleId, signed: Int64 = now, id: String = UUID().uuidString.lowercased(), signer: TestSigner? = nil
    ) throws -> (body: String, id: String) {
        let payload: [String: Any] = [
            "originalTransactionId": original, "appAppleId": appAppleId, "productId": product, "userLocale": locale,
            "requestIdentifier": id, "environment": environment, "signedDate": signed,
        ]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]), as: UTF8.self)
        return (Vectors.body(wrapping: try (signer ?? .standard()).sign(json)), id)
    }

    /// The test PKI's chain, signed by another key: a forgery.
    static func forger() throws -> TestSigner {
        TestSigner(chain: try TestSigner.standard().chain, keyPEM: try Vectors.bytes("pki/other-leaf.key"))
    }

    /// A signed auto-renewable transaction of the test app, with its storefront and offer.
    static func transaction(
        id: String, original: String, purchase: Int64, expires: Int64, product: String = monthly, storefront: String = "USA",
        promotionalOffer: String? = nil, freeTrial: Bool = false, token: String? = nil
    ) throws -> String {
        var members: [String: Any] = [
            "transactionId": id, "originalTransactionId": original, "bundleId": Payloads.bundleId, "productId": product,
            "subscriptionGroupIdentifier": "21581234", "purchaseDate": purchase, "originalPurchaseDate": purchase,
            "expiresDate": expires, "quantity": 1, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
            "signedDate": purchase, "environment": "Sandbox", "transactionReason": id == original ? "PURCHASE" : "RENEWAL",
            "storefront": storefront, "storefrontId": "143441", "price": 9990, "currency": "USD",
        ]
        if let promotionalOffer {
            members["offerType"] = 2
            members["offerIdentifier"] = promotionalOffer
            members["offerDiscountType"] = "PAY_AS_YOU_GO"
        }
        if freeTrial {
            members["offerType"] = 1
            members["offerDiscountType"] = "FREE_TRIAL"
            members["offerPeriod"] = "P1W"
            members["price"] = 0
        }
        if let token { members["appAccountToken"] = token }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: members, options: [.sortedKeys]), as: UTF8.self)
        return try TestSigner.standard().sign(json)
    }

    /// Runs `test` against a server on `backend` answering by `rules` (a rules file's text), its
    /// In-App Purchase key the fake's, the fake running with `fake`'s transactions; `configure`
    /// changes the server's environment last (given the fake's base URL); `test` is given the
    /// fake and its base URL too.
    static func withServer(
        _ backend: Backend, rules: String, fake: FakeAppStoreServerAPI? = nil,
        configure: @escaping @Sendable (inout [String: String], _ baseURL: String) -> Void = { _, _ in },
        _ test: @escaping @Sendable (TestServer, FakeAppStoreServerAPI, _ baseURL: String) async throws -> Void
    ) async throws {
        let fake = try fake ?? AppleFake.fake([])
        let file = try rulesFile(rules)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await fake.run { baseURL in
            var environment = Vectors.environment
            environment["RECEIPTKIT_RETENTION_RULES"] = file
            environment["RECEIPTKIT_APPSTORE_KEY_ID"] = AppleFake.keyId
            environment["RECEIPTKIT_APPSTORE_ISSUER_ID"] = AppleFake.issuerId
            environment["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = try AppleFake.keyFile.get()
            environment["RECEIPTKIT_APPSTORE_API_URL"] = baseURL
            environment["RECEIPTKIT_RECONCILE_INTERVAL"] = "0"
            configure(&environment, baseURL)
            try await TestServer.run(backend, environment: environment, now: AppleFake.now) { server in
                try await test(server, fake, baseURL)
            }
        }
    }

    /// Writes a rules file for a test; the caller removes it.
    static func rulesFile(_ text: String) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("retention-rules-\(UUID().uuidString).json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// The feed's `retention.requested` events, oldest first.
    static func requestEvents(_ server: TestServer) async throws -> [[String: Any]] {
        let page = try await server.get("/v1/events?after=0&limit=1000")
        #expect(page.status == .ok, "\(page.text)")
        let events = try #require(try page.json()["events"] as? [[String: Any]])
        return events.filter { $0["type"] as? String == "retention.requested" }
    }

    /// The value of a counter of `GET /metrics` whose labels include every one of `labels`
    /// (`result="invalid_signature"`), or 0.
    static func counter(_ server: TestServer, _ name: String, _ labels: [String]) async throws -> Double {
        let text = try await server.get("/metrics").text
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") && labels.allSatisfy({ line.contains($0) }) {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }
}
