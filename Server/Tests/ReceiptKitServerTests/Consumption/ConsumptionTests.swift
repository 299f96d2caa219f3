import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// Apple's consumption requests: the event, the backend's answer validated and sent through the
/// outbox to a fake App Store Server API before the deadline, and the configured default for
/// consenting customers an hour before it.
@Suite("Consumption requests")
struct ConsumptionTests {
    static let now = Timestamp(AppleFake.now).millisecondsSince1970
    static let hour: Int64 = 3_600_000
    static let token = "5b7b4c2e-9a1d-4b8e-8c5f-0a1b2c3d4e5f"
    static let otherToken = "6c8c5d3f-0b2e-4c9f-9d6a-1b2c3d4e5f60"

    /// A signed `CONSUMPTION_REQUEST` about a purchase of `type`, signed at `signed`.
    static func request(
        transactionId: String, type: String = "Consumable", signed: Int64, token: String = token, reason: String = "UNINTENDED_PURCHASE"
    ) throws -> String {
        let signer = try TestSigner.standard()
        var transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "bundleId": AppleFake.bundleId,
            "productId": "com.receiptkit.example.coins", "purchaseDate": signed - 2 * hour, "originalPurchaseDate": signed - 2 * hour,
            "quantity": 1, "type": type, "inAppOwnershipType": "PURCHASED", "signedDate": signed - 2 * hour,
            "environment": "Sandbox", "appAccountToken": token,
        ]
        if type == "Auto-Renewable Subscription" {
            transaction["expiresDate"] = signed + 28 * 24 * hour
            transaction["subscriptionGroupIdentifier"] = "21000001"
        }
        let notification: [String: Any] = [
            "notificationType": "CONSUMPTION_REQUEST", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": signed,
            "data": [
                "appAppleId": 1_234_567_890, "bundleId": AppleFake.bundleId, "bundleVersion": "42", "environment": "Sandbox",
                "signedTransactionInfo": try signer.sign(json(transaction)), "consumptionRequestReason": reason,
            ] as [String: Any],
        ]
        return try signer.sign(json(notification))
    }

    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    static func fake(_ ids: [(String, String)]) throws -> FakeAppStoreServerAPI {
        try AppleFake.fake(ids.map { id, type in
            FakeAppStoreServerAPI.Transaction(
                transactionId: id, originalTransactionId: id, productId: "com.receiptkit.example.coins", type: type,
                purchaseDate: now - 3 * hour)
        })
    }

    /// A server reaching the fake, delivering quickly and one attempt at a time, its clock at
    /// ``AppleFake/now``.
    static func serve(
        _ backend: Backend, fake: FakeAppStoreServerAPI, default answer: String? = nil,
        _ test: @escaping @Sendable (TestServer) async throws -> Void
    ) async throws {
        try await fake.run { baseURL in
            let settings = try AppleFake.settings(baseURL)
            let answer = try answer.map { try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_CONSUMPTION_DEFAULT": $0]) { $1 }).events.consumptionDefault }
            try await TestServer.run(backend, now: AppleFake.now, configure: { configuration in
                configuration.appStoreAPI = settings
                configuration.events.sweepInterval = .milliseconds(50)
                configuration.events.consumptionDefault = answer ?? nil
                configuration.events.delivery = DeliveryPolicy(
                    firstRetry: .milliseconds(50), maximumWait: .milliseconds(200), timeout: .seconds(5), concurrency: 1,
                    pollInterval: .milliseconds(50))
            }, test)
        }
    }

    @Test("a CONSUMPTION_REQUEST is an event with the transaction, the reason and the deadline; the backend's answer, validated, reaches Apple with Apple's body before the deadline",
          arguments: Backend.available)
    func answered(backend: Backend) async throws {
        let fake = try Self.fake([("8800000001", "Consumable"), ("8800000002", "Auto-Renewable Subscription"), ("8800000003", "Consumable")])
        let signed = Self.now - Self.hour
        let consumable = try Self.request(transactionId: "8800000001", signed: signed)
        let subscription = try Self.request(transactionId: "8800000002", type: "Auto-Renewable Subscription", signed: signed)
        let late = try Self.request(transactionId: "8800000003", signed: Self.now - 13 * Self.hour)
        try await Self.serve(backend, fake: fake) { server in
            for jws in [consumable, subscription, late] { #expect(try await server.notify(jws).status == .ok) }
            let events = try await server.feed(customer: Self.token).events
            let requested = events.filter { $0["type"] as? String == "consumption.requested" }
            #expect(requested.count == 3)
            let first = try #require(requested.first { ($0["consumption_request"] as? [String: Any])?["transaction_id"] as? String == "8800000001" })
            let request = try #require(first["consumption_request"] as? [String: Any])
            #expect(request["reason"] as? String == "UNINTENDED_PURCHASE")
            #expect(request["product_type"] as? String == "consumable")
            #expect(request["deadline"] as? String == Timestamp(millisecondsSince1970: signed + 12 * Self.hour).iso8601)
            #expect(first["status"] as? String == "active" && first["previous_status"] as? String == "active")
            #expect((first["cause"] as? [String: Any])?["notification_type"] as? String == "CONSUMPTION_REQUEST")
            // The purchase itself came first.
            #expect(events.first?["type"] as? String == "purchase.made")

            let path = "/v1/transactions/8800000001/consumption"
            func put(_ path: String, _ body: String) async throws -> TestResponse {
                try await server.client.execute(
                    uri: path, method: .put, headers: [.authorization: "Bearer \(testToken)", .contentType: "application/json"],
                    body: ByteBuffer(string: body))
            }
            let valid = #"{"customer_consented":true,"delivery_status":"DELIVERED","consumption_percentage":25000,"refund_preference":"GRANT_PRORATED","sample_content_provided":false}"#
            try await put(path, valid.replacingOccurrences(of: #""customer_consented":true"#, with: #""customer_consented":false"#))
                .expectError(.badRequest, "customer_consent_required")
            try await put(path, valid.replacingOccurrences(of: "DELIVERED", with: "SHIPPED")).expectError(.badRequest, "invalid_request")
            try await put(path, valid.replacingOccurrences(of: "25000", with: "100001")).expectError(.badRequest, "invalid_request")
            try await put(path, #"{"customer_consented":true,"delivery_status":"DELIVERED"}"#).expectError(.badRequest, "invalid_request")
            try await put(path, valid.replacingOccurrences(of: "DELIVERED", with: "UNDELIVERED_OTHER")).expectError(.badRequest, "invalid_request")
            // A prorated refund of a consumable needs a percentage; an auto-renewable takes none.
            try await put(path, valid.replacingOccurrences(of: #""consumption_percentage":25000,"#, with: ""))
                .expectError(.badRequest, "invalid_request")
            try await put("/v1/transactions/8800000002/consumption", valid).expectError(.badRequest, "invalid_request")
            try await put("/v1/transactions/8800000009/consumption", valid).expectError(.notFound, "consumption_request_not_found")
            try await put("/v1/transactions/8800000003/consumption", valid).expectError(.conflict, "consumption_deadline_passed")
            #expect(fake.requests(to: "/inApps/v2/transactions/consumption").isEmpty, "nothing invalid was sent")

            let answer = try await put(path, valid)
            #expect(answer.status == .ok, "\(answer.text)")
            #expect(try answer.json()["deadline"] as? String == request["deadline"] as? String)
            let subscriptionAnswer = try await put(
                "/v1/transactions/8800000002/consumption",
                #"{"customer_consented":true,"delivery_status":"DELIVERED","refund_preference":"DECLINE","sample_content_provided":true}"#)
            #expect(subscriptionAnswer.status == .ok, "\(subscriptionAnswer.text)")
            try await server.waitUntilDeliveries("both answers reach Apple", state: "delivered") { $0.count == 2 }
            let sent = fake.requests(to: "/inApps/v2/transactions/consumption/8800000001")
            #expect(sent.count == 1)
            let body = try #require(sent.first?.bodyJSON)
            #expect(body as NSDictionary == [
                "customerConsented": true, "consumptionPercentage": 25000, "deliveryStatus": "DELIVERED",
                "refundPreference": "GRANT_PRORATED", "sampleContentProvided": false,
            ] as NSDictionary)
            #expect(sent.first?.authorizationFailure == nil)
            let other = try #require(fake.requests(to: "/inApps/v2/transactions/consumption/8800000002").first?.bodyJSON)
            #expect(other as NSDictionary == [
                "customerConsented": true, "deliveryStatus": "DELIVERED", "refundPreference": "DECLINE", "sampleContentProvided": true,
            ] as NSDictionary)
            let delivered = try await server.deliveries(state: "delivered")
            for delivery in delivered {
                #expect(delivery["kind"] as? String == "consumption")
                let at = try #require((delivery["delivered_at"] as? String).flatMap(Timestamp.init(rfc3339:)))
                #expect(at.millisecondsSince1970 < signed + 12 * Self.hour, "before the deadline")
            }
        }
    }

    @Test("RECEIPTKIT_CONSUMPTION_DEFAULT answers an hour before the deadline, only for a customer recorded as consenting, only what nobody answered",
          arguments: Backend.available)
    func defaultAnswer(backend: Backend) async throws {
        let fake = try Self.fake([
            ("8810000001", "Consumable"), ("8810000002", "Consumable"), ("8810000003", "Consumable"),
            ("8810000004", "Consumable"), ("8810000005", "Consumable"),
        ])
        // Deadlines: in 30 minutes (consenting), in 30 minutes (not consenting), in 11 hours.
        let due = try Self.request(transactionId: "8810000001", signed: Self.now - 11 * Self.hour - 30 * 60_000)
        let unconsented = try Self.request(
            transactionId: "8810000002", signed: Self.now - 11 * Self.hour - 30 * 60_000, token: Self.otherToken)
        let early = try Self.request(transactionId: "8810000003", signed: Self.now - Self.hour)
        let answer = #"{"delivery_status":"DELIVERED","sample_content_provided":false,"refund_preference":"DECLINE"}"#
        try await Self.serve(backend, fake: fake, default: answer) { server in
            let consent = try await server.client.execute(
                uri: "/v1/customers/\(Self.token)/consumption-consent", method: .put,
                headers: [.authorization: "Bearer \(testToken)", .contentType: "application/json"], body: ByteBuffer(string: #"{"consented":true}"#))
            #expect(consent.status == .ok, "\(consent.text)")
            #expect(try consent.json()["consented"] as? Bool == true)
            let refused = try await server.client.execute(
                uri: "/v1/customers/\(Self.otherToken)/consumption-consent", method: .put,
                headers: [.authorization: "Bearer \(testToken)", .contentType: "application/json"], body: ByteBuffer(string: #"{"consented":false}"#))
            #expect(refused.status == .ok)
            for jws in [due, unconsented, early] { #expect(try await server.notify(jws).status == .ok) }
            try await waitUntil("the default answer reaches Apple") {
                !fake.requests(to: "/inApps/v2/transactions/consumption/8810000001").isEmpty
            }
            // An answer that should not be (another request's, or this one's again) would be written
            // by a sweep that read the requests above. Sweeps run one after another: the one
            // that answers a first sentinel read every request above, and it has ended, every
            // row it wrote with it, before the next one answers a second sentinel. With one
            // attempt at a time, the server claims that sentinel's row only once none runs and
            // no earlier row is due: once it has reached Apple, every earlier row has too.
            let sentinels = ["8810000004", "8810000005"]
            for (index, id) in sentinels.enumerated() {
                let sentinel = try Self.request(transactionId: id, signed: Self.now - 11 * Self.hour - Int64(20 - index) * 60_000)
                #expect(try await server.notify(sentinel).status == .ok)
                try await waitUntil("the default answer to sentinel \(index + 1) reaches Apple") {
                    !fake.requests(to: "/inApps/v2/transactions/consumption/\(id)").isEmpty
                }
            }
            let sent = fake.requests(to: "/inApps/v2/transactions/consumption").filter { request in
                !sentinels.contains { request.path == "/inApps/v2/transactions/consumption/\($0)" }
            }
            #expect(sent.map(\.path) == ["/inApps/v2/transactions/consumption/8810000001"])
            #expect(try #require(sent.first?.bodyJSON) as NSDictionary == [
                "customerConsented": true, "deliveryStatus": "DELIVERED", "refundPreference": "DECLINE", "sampleContentProvided": false,
            ] as NSDictionary)
        }
    }

    @Test("RECEIPTKIT_CONSUMPTION_DEFAULT is refused when it is not an answer, or claims the customer's consent")
    func defaultConfiguration() throws {
        for bad in [#"{"delivery_status":"SHIPPED","sample_content_provided":false}"#, "[", #"{"customer_consented":true,"delivery_status":"DELIVERED","sample_content_provided":false}"#] {
            #expect(throws: ConfigurationError.self) {
                try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_CONSUMPTION_DEFAULT": bad]) { $1 })
            }
        }
    }
}
