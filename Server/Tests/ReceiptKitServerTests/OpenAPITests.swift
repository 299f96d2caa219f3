import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// Checks the server against `Server/openapi.yaml`: every operation in the document exists, and
/// the server's answers to sample requests have a documented status and media type and a body
/// that conforms to the documented schema (``OpenAPIDocument/expect(_:answers:_:uri:sourceLocation:)``).
@Suite("Server/openapi.yaml")
struct OpenAPITests {
    /// One request per documented (operation, status) this test makes the server answer.
    struct Sample: Sendable {
        let method: String
        let path: String
        let uri: String
        let body: String?
        let token: Bool
    }

    static let consumptionAnswer = #"{"customer_consented":true,"delivery_status":"DELIVERED","sample_content_provided":false}"#

    /// The named entitlements of the server the samples run on: `pro` from the samples'
    /// subscription, `remove_ads` from a product nobody buys (a grant gives it).
    static let entitlements = #"{"entitlements": {"pro": {"products": ["\#(Payloads.productId)"]}, "remove_ads": {"products": ["com.receiptkit.example.removeads"]}}}"#

    @Test("every documented operation answers with a documented status, media type and body", arguments: Backend.available)
    func conformance(backend: Backend) async throws {
        let document = try OpenAPIDocument()

        let p = try Payloads()
        let t0 = ms("2025-06-01T12:00:00Z")
        let transaction = try p.transaction(id: "6001", original: "6001", purchase: t0, expires: t0 + 30 * day, signed: t0, token: "o")
        let notification = try p.notification(type: "DID_RENEW", signed: t0, transaction: transaction, renewalInfo: nil)
        let receipt = try Vectors.text("receipts/receipt-request-body.json")
        let samples = [
            Sample(method: "post", path: "/appstore/notifications", uri: "/appstore/notifications", body: Vectors.body(wrapping: notification), token: false),
            Sample(method: "post", path: "/appstore/notifications", uri: "/appstore/notifications", body: Vectors.body(wrapping: "x.y.z"), token: false),
            Sample(method: "post", path: "/appstore/notifications", uri: "/appstore/notifications", body: "[", token: false),
            Sample(method: "post", path: "/appstore/retention", uri: "/appstore/retention", body: try Retention.request(original: "6001").body, token: false),
            Sample(method: "post", path: "/appstore/retention", uri: "/appstore/retention", body: try Retention.request(original: "6001", signer: Retention.forger()).body, token: false),
            Sample(method: "post", path: "/appstore/retention", uri: "/appstore/retention", body: "[", token: false),
            Sample(method: "get", path: "/v1/customers/{customer_id}/retention-requests", uri: "/v1/customers/o/retention-requests", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/retention-requests", uri: "/v1/customers/o/retention-requests?limit=0", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/retention-requests", uri: "/v1/customers/o/retention-requests", body: nil, token: false),
            Sample(method: "post", path: "/v1/transactions", uri: "/v1/transactions", body: #"{"signed_transaction":"\#(transaction)"}"#, token: true),
            Sample(method: "post", path: "/v1/transactions", uri: "/v1/transactions", body: "{}", token: true),
            Sample(method: "post", path: "/v1/transactions", uri: "/v1/transactions", body: "{}", token: false),
            // A grant of what the purchase does not give: an entitlement event with no key.
            Sample(method: "post", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: #"{"entitlement":"remove_ads","lifetime":true,"reason":"ticket 1"}"#, token: true),
            Sample(method: "post", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: #"{"entitlement":"pro","duration":"P1M","lifetime":true}"#, token: true),
            Sample(method: "post", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: #"{"entitlement":"pro","reason":"\#(String(repeating: "x", count: 17_000))"}"#, token: true),
            Sample(method: "post", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: "{}", token: false),
            Sample(method: "get", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: nil, token: false),
            Sample(method: "delete", path: "/v1/customers/{customer_id}/grants/{grant_id}", uri: "/v1/customers/o/grants/none", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements/{name}", uri: "/v1/customers/o/entitlements/pro", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements/{name}", uri: "/v1/customers/o/entitlements/remove_ads?as_of=2025-06-02T00:00:00Z", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements/{name}", uri: "/v1/customers/o/entitlements/gold", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements/{name}", uri: "/v1/customers/o/entitlements/pro?as_of=x", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements/{name}", uri: "/v1/customers/o/entitlements/pro", body: nil, token: false),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements", uri: "/v1/customers/o/entitlements", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements", uri: "/v1/customers/o/entitlements?as_of=x", body: nil, token: true),
            Sample(method: "get", path: "/v1/subscriptions/{original_transaction_id}", uri: "/v1/subscriptions/6001?as_of=2025-06-02T00:00:00Z", body: nil, token: true),
            Sample(method: "get", path: "/v1/subscriptions/{original_transaction_id}", uri: "/v1/subscriptions/404", body: nil, token: true),
            Sample(method: "post", path: "/verifyReceipt", uri: "/verifyReceipt", body: receipt, token: true),
            Sample(method: "post", path: "/verifyReceipt", uri: "/verifyReceipt", body: "{}", token: true),
            Sample(method: "post", path: "/verifyReceipt", uri: "/verifyReceipt", body: "{}", token: false),
            Sample(method: "get", path: "/v1/overview", uri: "/v1/overview", body: nil, token: true),
            Sample(method: "get", path: "/v1/token", uri: "/v1/token", body: nil, token: true),
            Sample(method: "get", path: "/v1/token", uri: "/v1/token", body: nil, token: false),
            Sample(method: "get", path: "/v1/overview", uri: "/v1/overview", body: nil, token: false),
            Sample(method: "get", path: "/v1/search", uri: "/v1/search?q=6001", body: nil, token: true),
            Sample(method: "get", path: "/v1/search", uri: "/v1/search?q=", body: nil, token: true),
            Sample(method: "get", path: "/v1/search", uri: "/v1/search?q=6001", body: nil, token: false),
            Sample(method: "get", path: "/v1/subscriptions/{original_transaction_id}/timeline", uri: "/v1/subscriptions/6001/timeline", body: nil, token: true),
            Sample(method: "get", path: "/v1/subscriptions/{original_transaction_id}/timeline", uri: "/v1/subscriptions/404/timeline", body: nil, token: true),
            Sample(method: "get", path: "/v1/subscriptions/{original_transaction_id}/timeline", uri: "/v1/subscriptions/6001/timeline", body: nil, token: false),
            Sample(method: "get", path: "/console/", uri: "/console/", body: nil, token: false),
            Sample(method: "get", path: "/console/{asset}", uri: "/console/console.mjs", body: nil, token: false),
            Sample(method: "get", path: "/console/{asset}", uri: "/console/console.css", body: nil, token: false),
            Sample(method: "get", path: "/console/{asset}", uri: "/console/missing", body: nil, token: false),
            Sample(method: "get", path: "/healthz", uri: "/healthz", body: nil, token: false),
            Sample(method: "get", path: "/readyz", uri: "/readyz", body: nil, token: false),
            Sample(method: "get", path: "/metrics", uri: "/metrics", body: nil, token: false),
            Sample(method: "get", path: "/v1/events", uri: "/v1/events?after=0&limit=10", body: nil, token: true),
            Sample(method: "get", path: "/v1/events", uri: "/v1/events?limit=0", body: nil, token: true),
            Sample(method: "get", path: "/v1/events", uri: "/v1/events", body: nil, token: false),
            Sample(method: "get", path: "/v1/customers/{customer_id}/events", uri: "/v1/customers/o/events", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/events", uri: "/v1/customers/o/events?after=x", body: nil, token: true),
            Sample(method: "get", path: "/v1/webhooks/deliveries", uri: "/v1/webhooks/deliveries?state=failed", body: nil, token: true),
            Sample(method: "get", path: "/v1/webhooks/deliveries", uri: "/v1/webhooks/deliveries?state=x", body: nil, token: true),
            // The webhook's rows and the forwards' (no event id), which nothing receives.
            Sample(method: "get", path: "/v1/webhooks/deliveries", uri: "/v1/webhooks/deliveries?state=pending", body: nil, token: true),
            Sample(method: "post", path: "/v1/webhooks/deliveries/{id}/retry", uri: "/v1/webhooks/deliveries/1/retry", body: "", token: true),
            Sample(method: "post", path: "/v1/webhooks/deliveries/{id}/retry", uri: "/v1/webhooks/deliveries/x/retry", body: "", token: true),
            Sample(method: "put", path: "/v1/customers/{customer_id}/consumption-consent", uri: "/v1/customers/o/consumption-consent", body: #"{"consented":true}"#, token: true),
            Sample(method: "put", path: "/v1/customers/{customer_id}/consumption-consent", uri: "/v1/customers/o/consumption-consent", body: "{}", token: true),
            Sample(method: "put", path: "/v1/transactions/{transaction_id}/consumption", uri: "/v1/transactions/6001/consumption", body: Self.consumptionAnswer, token: true),
            // Last: the customer the samples above stored, erased; then unknown.
            Sample(method: "delete", path: "/v1/customers/{customer_id}", uri: "/v1/customers/o", body: nil, token: false),
            Sample(method: "delete", path: "/v1/customers/{customer_id}", uri: "/v1/customers/o", body: nil, token: true),
            Sample(method: "delete", path: "/v1/customers/{customer_id}", uri: "/v1/customers/o", body: nil, token: true),
        ]
        // The routes that ask Apple, answered by a server reaching the fake App Store Server API
        // (and, with no key configured, 409).
        let apple = [
            Sample(method: "post", path: "/v1/transactions", uri: "/v1/transactions", body: #"{"transaction_id":"8000000101","customer_id":"a"}"#, token: true),
            Sample(method: "post", path: "/v1/transactions", uri: "/v1/transactions", body: #"{"transaction_id":"8999999999","customer_id":"a"}"#, token: true),
            Sample(method: "post", path: "/v1/subscriptions/{original_transaction_id}/sync", uri: "/v1/subscriptions/8000000100/sync", body: "", token: true),
            Sample(method: "post", path: "/v1/subscriptions/{original_transaction_id}/sync", uri: "/v1/subscriptions/x/sync", body: "", token: true),
            Sample(method: "post", path: "/v1/subscriptions/{original_transaction_id}/sync", uri: "/v1/subscriptions/8999999999/sync", body: "", token: true),
            Sample(method: "post", path: "/v1/customers/{customer_id}/sync", uri: "/v1/customers/a/sync", body: "", token: true),
            Sample(method: "post", path: "/v1/customers/{customer_id}/sync", uri: "/v1/customers/nobody/sync", body: "", token: true),
            Sample(method: "post", path: "/v1/customers/{customer_id}/sync", uri: "/v1/customers/a/sync", body: "", token: false),
            Sample(method: "post", path: "/v1/reconcile", uri: "/v1/reconcile", body: "", token: true),
            Sample(method: "post", path: "/v1/reconcile", uri: "/v1/reconcile?since=x", body: "", token: true),
            Sample(method: "post", path: "/v1/offers/signature", uri: "/v1/offers/signature", body: #"{"type":"promotional_offer","product_id":"p","offer_id":"o"}"#, token: true),
            Sample(method: "post", path: "/v1/offers/signature", uri: "/v1/offers/signature", body: #"{"type":"intro_eligibility","product_id":"p","transaction_id":"8000000100"}"#, token: true),
            Sample(method: "post", path: "/v1/offers/signature", uri: "/v1/offers/signature", body: #"{"type":"intro_eligibility"}"#, token: true),
            Sample(method: "put", path: "/v1/transactions/{transaction_id}/consumption", uri: "/v1/transactions/8000000100/consumption", body: Self.consumptionAnswer, token: true),
            Sample(method: "put", path: "/v1/transactions/{transaction_id}/consumption", uri: "/v1/transactions/8000000100/consumption", body: "{}", token: true),
            Sample(method: "put", path: "/v1/transactions/{transaction_id}/consumption", uri: "/v1/transactions/8000000100/consumption", body: Self.consumptionAnswer, token: false),
        ]
        // A server without an entitlements file: what needs one is 409, the rest answers as
        // without named entitlements.
        let withoutEntitlements = [
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements/{name}", uri: "/v1/customers/o/entitlements/pro", body: nil, token: true),
            Sample(method: "post", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: #"{"entitlement":"pro","lifetime":true}"#, token: true),
            Sample(method: "delete", path: "/v1/customers/{customer_id}/grants/{grant_id}", uri: "/v1/customers/o/grants/none", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/grants", uri: "/v1/customers/o/grants", body: nil, token: true),
            Sample(method: "get", path: "/v1/customers/{customer_id}/entitlements", uri: "/v1/customers/o/entitlements", body: nil, token: true),
        ]
        // Every documented operation has a sample.
        for (method, path) in try document.operations {
            #expect(
                (samples + apple + withoutEntitlements).contains { $0.path == path && $0.method == method }, "no sample for \(method) \(path)")
        }
        @Sendable func answer(_ sample: Sample, _ server: TestServer) async throws {
            let token = sample.token ? testToken : nil
            let response: TestResponse
            switch sample.method {
            case "get": response = try await server.get(sample.uri, token: token)
            case "put": response = try await server.put(sample.uri, sample.body ?? "", token: token)
            case "delete": response = try await server.delete(sample.uri, token: token)
            default: response = try await server.post(sample.uri, sample.body ?? "", token: token)
            }
            try document.expect(response, answers: sample.method, sample.path, uri: sample.uri)
        }
        let nowhere = "http://127.0.0.1:\(try unusedLoopbackPort())/"
        let catalog = try EntitlementCatalog(jsonBytes: Array(Self.entitlements.utf8))
        try await TestServer.run(backend, configure: { configuration in
            configuration.events.webhookURL = nowhere + "hook"
            configuration.events.webhookSecret = WebhookDeliveryTests.secret
            configuration.events.forwardURLs = [nowhere + "forward"]
            configuration.entitlements = EntitlementsFile(path: "entitlements.json", catalog: catalog)
        }) { server in
            for sample in samples + apple { try await answer(sample, server) }

            // A grant made, then ended twice (the second answers it as it is), and the events it
            // wrote: after the samples, since its id is the server's.
            let customer = "g"
            let made = try await server.post("/v1/customers/\(customer)/grants", #"{"entitlement":"remove_ads","duration":"P1M"}"#)
            try document.expect(made, answers: "post", "/v1/customers/{customer_id}/grants")
            let grantId = try #require(try made.json()["grant_id"] as? String, "\(made.text)")
            for _ in 0..<2 {
                let ended = try await server.delete("/v1/customers/\(customer)/grants/\(grantId)")
                try document.expect(ended, answers: "delete", "/v1/customers/{customer_id}/grants/{grant_id}")
                #expect(ended.status == .ok, "\(ended.text)")
            }
            for (path, uri) in [
                ("/v1/customers/{customer_id}/grants", "/v1/customers/\(customer)/grants"),
                ("/v1/customers/{customer_id}/entitlements/{name}", "/v1/customers/\(customer)/entitlements/remove_ads"),
                ("/v1/events", "/v1/events?limit=1000"),
            ] {
                try document.expect(try await server.get(uri), answers: "get", path, uri: uri)
            }
            // Each kind of event the samples wrote was checked above: a subscription's, and an
            // entitlement's from a purchase and from a grant, activated and deactivated.
            let events = try #require(try await server.get("/v1/events?limit=1000").json()["events"] as? [[String: Any]])
            let kinds = Set(events.map { "\($0["type"] ?? "") \($0["bundle_id"] is NSNull ? "grant" : "key")" })
            for kind in ["subscription.started key", "entitlement.activated key", "entitlement.activated grant", "entitlement.deactivated grant"] {
                #expect(kinds.contains(kind), "no \(kind) event among \(kinds.sorted())")
            }
        }
        try await TestServer.run(backend) { server in
            for sample in withoutEntitlements { try await answer(sample, server) }
        }
        let fake = try AppleFake.fake(AppleFake.subscription(original: 8_000_000_100, renewals: 2))
        try await AppleFake.withServer(backend, fake: fake) { server in
            for sample in apple { try await answer(sample, server) }
        }
    }
}
