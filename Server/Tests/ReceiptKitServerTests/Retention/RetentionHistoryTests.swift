import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// The conditions a rule reads of a subscription's history — `min_renewals`, `storefront`,
/// `offer_used` — and of the request — `locale` — read from what the server stored, on each
/// database.
@Suite("Retention rules on a subscription's history")
struct RetentionHistoryTests {
    static let rules = """
        {"rules": [
          {"when": {"offer_used": false, "storefront": ["usa"], "min_renewals": 2, "locale": ["en"]},
           "answer": {"promotional_offer": {"message": "\(Retention.offerMessage)", "offer_id": "SPRING", "product_id": "\(Retention.yearly)"}}},
          {"when": {"min_renewals": 2}, "answer": {"message": "\(Retention.billingMessage)"}},
          {"when": {"storefront": ["FRA"]},
           "answer": {"alternate_product": {"message": "\(Retention.switchMessage)", "product_id": "\(Retention.monthly)"}}}
        ]}
        """

    /// Three transactions of `original`, a month apart, the last running now; the second bought
    /// with `offer`, if given.
    static func renewals(_ server: TestServer, original: Int64, storefront: String = "USA", offer: String? = nil, count: Int = 3) async throws {
        let p = try Payloads()
        let month = 30 * day
        for index in 0..<count {
            let purchase = Retention.now - Int64(count - index) * month + day
            let transaction = try Retention.transaction(
                id: String(original + Int64(index)), original: String(original), purchase: purchase, expires: purchase + month,
                storefront: storefront, promotionalOffer: index == 1 ? offer : nil)
            let stored = try await server.notify(p.notification(
                type: index == 0 ? "SUBSCRIBED" : "DID_RENEW", signed: purchase, transaction: transaction, renewalInfo: nil))
            #expect(stored.status == .ok, "\(stored.text)")
        }
    }

    @Test("renewals, the storefront, an offer redeemed and the locale decide the rule", arguments: Backend.available)
    func history(backend: Backend) async throws {
        try await Retention.withServer(backend, rules: Self.rules) { server, _, _ in
            try await Self.renewals(server, original: 7201)
            try await Self.renewals(server, original: 7301, offer: "SPRING")
            try await Self.renewals(server, original: 7401, storefront: "FRA", count: 1)

            // Two renewals in the USA, the offer never redeemed, an English locale: the offer,
            // signed for the rule's product.
            let offered = try await server.post("/appstore/retention", try Retention.request(original: "7201", locale: "en-GB").body, token: nil)
            let offer = try #require(try offered.json()["promotionalOffer"] as? [String: Any], "\(offered.text)")
            let (_, claims) = try await OfferSignatureTests.verifiedClaims(try #require(offer["promotionalOfferSignatureV2"] as? String))
            #expect(claims["productId"] as? String == Retention.yearly && claims["offerIdentifier"] as? String == "SPRING")
            #expect(claims["transactionId"] as? String == "7201")

            // The same subscription in French: the next rule.
            let french = try await server.post("/appstore/retention", try Retention.request(original: "7201", locale: "fr-FR").body, token: nil)
            #expect(try french.json()["message"] as? [String: String] == ["messageIdentifier": Retention.billingMessage], "\(french.text)")

            // The offer redeemed already on 7301: the next rule.
            let redeemed = try await server.post("/appstore/retention", try Retention.request(original: "7301").body, token: nil)
            #expect(try redeemed.json()["message"] as? [String: String] == ["messageIdentifier": Retention.billingMessage], "\(redeemed.text)")

            // No renewal, bought in France: the switch-plan message.
            let france = try await server.post("/appstore/retention", try Retention.request(original: "7401").body, token: nil)
            let alternate = try #require(try france.json()["alternateProduct"] as? [String: Any], "\(france.text)")
            #expect(alternate["productId"] as? String == Retention.monthly)

            // Unknown to the server: no condition on a subscription holds.
            let unknown = try await server.post("/appstore/retention", try Retention.request(original: "7999").body, token: nil)
            #expect(unknown.text == "{}\n")

            let requests = try await Retention.requestEvents(server).compactMap { $0["retention_request"] as? [String: Any] }
            #expect(requests.map { $0["storefront"] as? String } == ["USA", "USA", "USA", "FRA", nil])
            #expect(requests.compactMap { ($0["answer"] as? [String: Any])?["kind"] as? String }
                == ["promotional_offer", "message", "message", "alternate_product", "none"])
            #expect((requests[0]["answer"] as? [String: Any])?["product_id"] as? String == Retention.yearly)
        }
    }

    @Test("Apple's performance test against the endpoint: every request verified and answered from the stored subscription", arguments: Backend.available)
    func performanceTest(backend: Backend) async throws {
        let fake = try AppleFake.fake(AppleFake.subscription(original: 8_000_000_100, renewals: 3))
        fake.retention.performanceTestSettings = .init(
            maxConcurrentRequests: 3, totalRequests: 12, responseTimeThreshold: 10_000, successRateThreshold: 100)
        let rules = """
            {"rules": [{"when": {"status": ["active"], "min_renewals": 2}, "answer": {"message": "\(Retention.billingMessage)"}}]}
            """
        try await Retention.withServer(backend, rules: rules, fake: fake) { server, fake, baseURL in
            let synced = try await server.post("/v1/subscriptions/8000000100/sync", "")
            #expect(synced.status == .ok, "\(synced.text)")
            let port = try #require(server.client.port)
            let client = try AppStoreServerAPIClient(
                configuration: .init(
                    key: try AppleFake.key(), bundleId: AppleFake.bundleId, environment: .sandbox, baseURL: baseURL,
                    retry: AppleFake.quickRetry),
                verifier: AppStoreVerifier(try ServerConfiguration(environment: Vectors.environment).verifier), clock: { AppleFake.now })
            try await client.configureRealtimeURL("http://127.0.0.1:\(port)/appstore/retention")
            let started = try await client.initiatePerformanceTest(originalTransactionId: "8000000100")
            let requestId = try #require(started.requestId)
            await fake.retention.performanceTestFinished(requestId)
            let result = try await client.performanceTestResult(requestId: requestId)
            #expect(result.result == .pass && result.successRate == 100, "\(result)")
            let events = try await Retention.requestEvents(server)
            #expect(events.count == 12)
            #expect(events.allSatisfy {
                (($0["retention_request"] as? [String: Any])?["answer"] as? [String: Any])?["message_id"] as? String == Retention.billingMessage
            })
        }
    }
}
