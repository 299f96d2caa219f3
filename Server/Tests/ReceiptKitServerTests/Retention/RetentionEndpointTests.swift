import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// `POST /appstore/retention`, Apple's Get Retention Message request, over loopback on each
/// database: genuine requests answered by the operator's rules from stored state, the offer signed
/// with the In-App Purchase key, every refusal counted, and one `retention.requested` event per
/// request answered.
@Suite("The Get Retention Message endpoint")
struct RetentionEndpointTests {
    /// The rules of `docs/retention.md`'s example, with the test app's products.
    static let rules = """
        {"rules": [
          {"when": {"status": ["billing_retry", "grace_period"]}, "answer": {"message": "\(Retention.billingMessage)"}},
          {"when": {"product_id": "\(Retention.monthly)", "is_trial": true},
           "answer": {"promotional_offer": {"message": "\(Retention.offerMessage)", "offer_id": "TRIAL_SAVE"}}},
          {"when": {"status": ["unknown"]}, "answer": {"default_message": {}}}
        ]}
        """

    /// A customer on a free trial (7001, linked to `alice`) and one in billing retry (7101).
    static func store(_ server: TestServer) async throws {
        let p = try Payloads()
        let now = Retention.now
        let trial = try Retention.transaction(
            id: "7001", original: "7001", purchase: now - day, expires: now + 6 * day, freeTrial: true, token: "alice")
        let started = try await server.notify(p.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: now - day, transaction: trial,
            renewalInfo: p.renewalInfo(original: "7001", signed: now - day)))
        #expect(started.status == .ok, "\(started.text)")
        let lapsed = try Retention.transaction(id: "7101", original: "7101", purchase: now - 40 * day, expires: now - 10 * day)
        let failed = try await server.notify(p.notification(
            type: "DID_FAIL_TO_RENEW", signed: now - 10 * day, transaction: lapsed,
            renewalInfo: p.renewalInfo(original: "7101", signed: now - 10 * day, billingRetry: true)))
        #expect(failed.status == .ok, "\(failed.text)")
        let states = try await server.get("/v1/subscriptions/7101")
        #expect(try states.json()["status"] as? String == "billing_retry", "\(states.text)")
    }

    @Test("a free trial, a billing retry and an unknown subscription each get their rule's answer; no rule, {}", arguments: Backend.available)
    func answers(backend: Backend) async throws {
        try await Retention.withServer(backend, rules: Self.rules) { server, _, _ in
            try await Self.store(server)

            let trial = try Retention.request(original: "7001")
            let offered = try await server.post("/appstore/retention", trial.body, token: nil)
            #expect(offered.status == .ok, "\(offered.text)")
            #expect(offered.headers[.contentType]?.hasPrefix("application/json") == true)
            let offer = try #require(try offered.json()["promotionalOffer"] as? [String: Any], "\(offered.text)")
            #expect(try offered.json().count == 1)
            #expect(offer["messageIdentifier"] as? String == Retention.offerMessage)
            let jws = try #require(offer["promotionalOfferSignatureV2"] as? String)
            let (header, claims) = try await OfferSignatureTests.verifiedClaims(jws)
            #expect(header["kid"] as? String == AppleFake.keyId && header["alg"] as? String == "ES256")
            #expect(claims["productId"] as? String == Retention.monthly)
            #expect(claims["offerIdentifier"] as? String == "TRIAL_SAVE")
            #expect(claims["transactionId"] as? String == "7001")
            #expect(claims["bid"] as? String == Payloads.bundleId && claims["aud"] as? String == "promotional-offer")
            #expect(claims["iss"] as? String == AppleFake.issuerId)
            #expect((claims["iat"] as? NSNumber)?.int64Value == Retention.now / 1000)

            let billing = try Retention.request(original: "7101", locale: "fr-FR")
            let message = try await server.post("/appstore/retention", billing.body, token: nil)
            #expect(message.status == .ok)
            #expect(message.text == #"{"message":{"messageIdentifier":"\#(Retention.billingMessage)"}}"# + "\n")

            // Unknown to the server: the product's default message, which Apple shows for `{}`.
            let unknown = try Retention.request(original: "7999", product: Retention.monthly)
            let byDefault = try await server.post("/appstore/retention", unknown.body, token: nil)
            #expect(byDefault.status == .ok && byDefault.text == "{}\n", "\(byDefault.text)")

            // The trial's subscription asked about another product: no rule holds.
            let other = try Retention.request(original: "7001", product: "com.receiptkit.example.other")
            let none = try await server.post("/appstore/retention", other.body, token: nil)
            #expect(none.status == .ok && none.text == "{}\n")

            // One event each, in order, with the request and its answer.
            let events = try await Retention.requestEvents(server)
            #expect(events.count == 4)
            let requests = events.compactMap { $0["retention_request"] as? [String: Any] }
            #expect(requests.compactMap { $0["request_identifier"] as? String } == [trial.id, billing.id, unknown.id, other.id])
            let answers = requests.compactMap { $0["answer"] as? [String: Any] }
            #expect(answers.compactMap { $0["kind"] as? String } == ["promotional_offer", "message", "default_message", "none"])
            #expect(requests.map { ($0["rule"] as? NSNumber)?.intValue } == [2, 1, 3, nil])
            #expect(answers[0]["offer_id"] as? String == "TRIAL_SAVE" && answers[0]["product_id"] as? String == Retention.monthly)
            #expect(answers[0]["message_id"] as? String == Retention.offerMessage)
            #expect(answers[1]["message_id"] as? String == Retention.billingMessage && answers[1]["offer_id"] is NSNull)
            #expect(answers[2]["message_id"] is NSNull && answers[3]["message_id"] is NSNull)
            #expect(requests[1]["user_locale"] as? String == "fr-FR")
            #expect(events[0]["customer_ids"] as? [String] == ["alice"] && events[0]["status"] as? String == "active")
            #expect((events[0]["subscription"] as? [String: Any])?["is_trial"] as? Bool == true)
            #expect(events[1]["status"] as? String == "billing_retry" && events[1]["entitled"] as? Bool == false)
            #expect(events[2]["status"] is NSNull && events[2]["subscription"] is NSNull && events[2]["customer_ids"] as? [String] == [])
            #expect(events[2]["original_transaction_id"] as? String == "7999" && events[2]["bundle_id"] as? String == Payloads.bundleId)
            #expect(events.allSatisfy { ($0["cause"] as? [String: Any])?["source"] as? String == "retention" })

            // The customer's requests, latest first, as the console reads them.
            let mine = try await server.get("/v1/customers/alice/retention-requests")
            #expect(mine.status == .ok, "\(mine.text)")
            let listed = try #require(try mine.json()["retention_requests"] as? [[String: Any]])
            #expect(listed.compactMap { ($0["retention_request"] as? [String: Any])?["request_identifier"] as? String } == [other.id, trial.id])
            let counted = try await Retention.counter(server, "receiptkit_retention_requests_total", [#"result="promotional_offer""#])
            #expect(counted == 1)
        }
    }

    @Test("a forged request, another app's and another environment's are refused, counted, and leave no event", arguments: Backend.available)
    func refusals(backend: Backend) async throws {
        try await Retention.withServer(backend, rules: Self.rules) { server, _, _ in
            try await Self.store(server)
            let cases: [(String, String)] = [
                (try Retention.request(original: "7001", signer: Retention.forger()).body, "invalid_signature"),
                (try Retention.request(original: "7001", appAppleId: 987_654_321).body, "app_apple_id_mismatch"),
                (try Retention.request(original: "7001", environment: "Production").body, "environment_mismatch"),
            ]
            for (body, code) in cases {
                let refused = try await server.post("/appstore/retention", body, token: nil)
                try refused.expectError(.badRequest, code)
                #expect(try await Retention.counter(server, "receiptkit_retention_requests_total", [#"result="\#(code)""#]) == 1)
                #expect(try await Retention.counter(server, "receiptkit_verifications_total", [#"result="\#(code)""#]) >= 1)
            }
            let notJSON = try await server.post("/appstore/retention", "signedPayload=x", contentType: "text/plain", token: nil)
            try notJSON.expectError(.unsupportedMediaType, "unrecognized_input")
            let notObject = try await server.post("/appstore/retention", "[]", token: nil)
            try notObject.expectError(.unsupportedMediaType, "unrecognized_input")
            // A notification is not a realtime request, though Apple signed it.
            let p = try Payloads()
            let notification = try p.notification(type: "TEST", signed: Retention.now, transaction: nil, renewalInfo: nil)
            let wrongKind = try await server.post("/appstore/retention", Vectors.body(wrapping: notification), token: nil)
            #expect(wrongKind.status == .badRequest, "\(wrongKind.text)")
            // Nothing refused is in the feed; a genuine request after them is.
            let genuine = try await server.post("/appstore/retention", try Retention.request(original: "7101").body, token: nil)
            #expect(genuine.status == .ok)
            #expect(try await Retention.requestEvents(server).count == 1)
        }
    }

    @Test("several apps and both environments: each request answered for its own app and environment, any other refused", arguments: Backend.available)
    func severalApps(backend: Backend) async throws {
        let other = "com.receiptkit.other"
        let rules = """
            {"rules": [{"when": {"status": ["unknown"]},
              "answer": {"promotional_offer": {"message": "\(Retention.offerMessage)", "offer_id": "WINBACK"}}}]}
            """
        try await Retention.withServer(backend, rules: rules, configure: { environment, baseURL in
            environment["RECEIPTKIT_BUNDLE_ID"] = nil
            environment["RECEIPTKIT_APP_APPLE_ID"] = nil
            environment["RECEIPTKIT_ENVIRONMENT"] = nil
            environment["RECEIPTKIT_APPS"] = "\(Payloads.bundleId):\(Retention.appAppleId),\(other):2222222222"
            environment["RECEIPTKIT_ENVIRONMENTS"] = "Sandbox,Production"
            environment["RECEIPTKIT_APPSTORE_SANDBOX_API_URL"] = baseURL
        }) { server, _, _ in
            let asked = [
                (try Retention.request(original: "9001", appAppleId: 2_222_222_222), other, "Sandbox"),
                (try Retention.request(original: "9002", environment: "Production"), Payloads.bundleId, "Production"),
            ]
            for (request, bundleId, environment) in asked {
                let answered = try await server.post("/appstore/retention", request.body, token: nil)
                #expect(answered.status == .ok, "\(answered.text)")
                let offer = try #require(try answered.json()["promotionalOffer"] as? [String: Any], "\(answered.text)")
                let (_, claims) = try await OfferSignatureTests.verifiedClaims(try #require(offer["promotionalOfferSignatureV2"] as? String))
                #expect(claims["bid"] as? String == bundleId && claims["offerIdentifier"] as? String == "WINBACK")
                #expect(try await Retention.counter(
                    server, "receiptkit_retention_requests_total",
                    [#"result="promotional_offer""#, #"bundle_id="\#(bundleId)""#, #"environment="\#(environment)""#]) == 1)
            }
            let refused = [
                (try Retention.request(original: "9003", appAppleId: 3_333_333_333), "app_apple_id_mismatch"),
                (try Retention.request(original: "9004", environment: "Xcode"), "environment_mismatch"),
            ]
            for (request, code) in refused {
                try await server.post("/appstore/retention", request.body, token: nil).expectError(.badRequest, code)
            }
            let events = try await Retention.requestEvents(server)
            #expect(events.map { $0["bundle_id"] as? String } == [other, Payloads.bundleId])
            #expect(events.map { $0["environment"] as? String } == ["Sandbox", "Production"])
            #expect(events.map { $0["original_transaction_id"] as? String } == ["9001", "9002"])
        }
    }
}
