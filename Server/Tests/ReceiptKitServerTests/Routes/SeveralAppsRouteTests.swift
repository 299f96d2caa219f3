import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// One deployment for a real app: Production and Sandbox side by side, several apps of one team.
@Suite("several apps and both environments: App Review, one id in two environments, the filters, what is refused")
struct SeveralAppsRouteTests {
    static let mac = "com.receiptkit.mac"
    static let macAppleId: Int64 = 1_234_567_891
    let t0 = ms("2026-05-01T12:00:00Z")

    /// The test app and its Mac app, in Production and Sandbox.
    static let twoApps = Vectors.environment.merging([
        "RECEIPTKIT_BUNDLE_ID": "", "RECEIPTKIT_APP_APPLE_ID": "", "RECEIPTKIT_ENVIRONMENT": "",
        "RECEIPTKIT_APPS": "\(Payloads.bundleId):\(Payloads.appAppleId),\(mac):\(macAppleId)",
        "RECEIPTKIT_ENVIRONMENTS": "Production,Sandbox",
    ]) { $1 }

    func body(_ members: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: members), as: UTF8.self)
    }

    var now: Date { Date(timeIntervalSince1970: Double(t0 + day) / 1000) }

    /// The `(bundle_id, environment, original_transaction_id, status)` of each line of an answer's
    /// `subscriptions`.
    func lines(_ answer: [String: Any]) throws -> [String] {
        try #require(answer["subscriptions"] as? [[String: Any]]).map { line in
            [line["bundle_id"], line["environment"], line["original_transaction_id"], line["status"]]
                .map { $0 as? String ?? "-" }.joined(separator: " ")
        }.sorted()
    }

    @Test("App Review: RECEIPTKIT_ENVIRONMENT=Production takes the reviewer's Sandbox purchase, entitled, the line saying Sandbox; RECEIPTKIT_ENVIRONMENTS=Production refuses it",
          arguments: Backend.available)
    func appReview(backend: Backend) async throws {
        let sandbox = try Payloads(environment: "Sandbox")
        let purchase = try sandbox.transaction(id: "7100", original: "7100", purchase: t0, expires: t0 + 7 * day, signed: t0)
        let production = Vectors.environment.merging(["RECEIPTKIT_ENVIRONMENT": "Production"]) { $1 }
        let configuration = try ServerConfiguration(environment: production)
        #expect(configuration.verifier.environments == [.production, .sandbox])
        #expect(configuration.notices.contains { $0.contains("serves Sandbox too") }, "\(configuration.notices)")

        try await TestServer.run(backend, environment: production, now: now) { server in
            let answer = try await server.post("/v1/transactions", body(["signed_transaction": purchase, "customer_id": "reviewer"]))
            #expect(answer.status == .ok, "\(answer.text)")
            #expect(try answer.json()["entitled"] as? Bool == true)
            #expect(try lines(answer.json()) == ["\(Payloads.bundleId) Sandbox 7100 active"])
            let entitlements = try await server.get("/v1/customers/reviewer/entitlements").json()
            #expect(entitlements["entitled"] as? Bool == true)
            #expect(try lines(entitlements) == ["\(Payloads.bundleId) Sandbox 7100 active"])
        }

        let strict = Vectors.environment.merging(["RECEIPTKIT_ENVIRONMENT": "", "RECEIPTKIT_ENVIRONMENTS": "Production"]) { $1 }
        #expect(try ServerConfiguration(environment: strict).notices.isEmpty)
        try await TestServer.run(backend, environment: strict, now: now) { server in
            let answer = try await server.post("/v1/transactions", body(["signed_transaction": purchase, "customer_id": "reviewer"]))
            try answer.expectError(.badRequest, "environment_mismatch")
            #expect(try answer.errorMessage().contains("Sandbox"), "\(answer.text)")
            let entitlements = try await server.get("/v1/customers/reviewer/entitlements").json()
            #expect(entitlements["entitled"] as? Bool == false)
            try await server.withStore { store in
                let stored = try await store.inputCount(dedupKeys: nil)
                #expect(stored == 0)
            }
        }
    }

    @Test("two apps in two environments, one original transaction id in each: every customer sees exactly their lines; ?bundle_id= and ?environment= select; /v1/subscriptions/{id} without them is 409",
          arguments: Backend.available)
    func oneIdInEveryPair(backend: Backend) async throws {
        let phoneProduction = try Payloads(environment: "Production")
        let phoneSandbox = try Payloads(environment: "Sandbox")
        let macProduction = try Payloads(bundleId: Self.mac, appAppleId: Self.macAppleId, environment: "Production")
        let active = try phoneProduction.transaction(id: "9100", original: "9100", purchase: t0, expires: t0 + 30 * day, signed: t0)
        let refunded = try phoneSandbox.transaction(
            id: "9100", original: "9100", purchase: t0, expires: t0 + 30 * day, signed: t0 + 3_600_000, revocation: t0 + 3_600_000)
        let mac = try macProduction.transaction(id: "9100", original: "9100", purchase: t0, expires: t0 + 30 * day, signed: t0)
        let phone = Payloads.bundleId

        try await TestServer.run(backend, environment: Self.twoApps, now: now) { server in
            for (jws, customer) in [(active, "customer"), (refunded, "tester"), (mac, "customer")] {
                let answer = try await server.post("/v1/transactions", body(["signed_transaction": jws, "customer_id": customer]))
                #expect(answer.status == .ok, "\(answer.text)")
                #expect(try answer.json()["duplicate"] as? Bool == false, "the same id in another pair is another transaction")
            }

            let customer = try await server.get("/v1/customers/customer/entitlements").json()
            #expect(customer["entitled"] as? Bool == true)
            #expect(try lines(customer) == ["\(phone) Production 9100 active", "\(Self.mac) Production 9100 active"])
            let tester = try await server.get("/v1/customers/tester/entitlements").json()
            #expect(tester["entitled"] as? Bool == false)
            #expect(try lines(tester) == ["\(phone) Sandbox 9100 revoked"])

            // The filters select among a customer's lines.
            let macOnly = try await server.get("/v1/customers/customer/entitlements?bundle_id=\(Self.mac)").json()
            #expect(try lines(macOnly) == ["\(Self.mac) Production 9100 active"])
            let sandboxOnly = try await server.get("/v1/customers/customer/entitlements?environment=Sandbox").json()
            #expect(try lines(sandboxOnly).isEmpty)
            #expect(sandboxOnly["entitled"] as? Bool == false)
            try await server.get("/v1/customers/customer/entitlements?environment=Staging").expectError(.badRequest, "invalid_request")

            // One id, three subscriptions: ambiguous until selected.
            let ambiguous = try await server.get("/v1/subscriptions/9100")
            try ambiguous.expectError(.conflict, "ambiguous_subscription")
            for pair in ["\(phone) in Production", "\(phone) in Sandbox", "\(Self.mac) in Production"] {
                #expect(try ambiguous.errorMessage().contains(pair), "\(ambiguous.text)")
            }
            try await server.get("/v1/subscriptions/9100?bundle_id=\(phone)").expectError(.conflict, "ambiguous_subscription")
            let selected = try await server.get("/v1/subscriptions/9100?environment=Sandbox")
            #expect(selected.status == .ok, "\(selected.text)")
            #expect(try selected.json()["status"] as? String == "revoked")
            #expect(try selected.json()["bundle_id"] as? String == phone)
            let macLine = try await server.get("/v1/subscriptions/9100?bundle_id=\(Self.mac)").json()
            #expect(macLine["environment"] as? String == "Production")
            #expect(macLine["status"] as? String == "active")
            try await server.get("/v1/subscriptions/9100?bundle_id=\(Self.mac)&environment=Sandbox").expectError(.notFound, "not_found")

            // The feed and a customer's events, selected the same way.
            func pairs(_ path: String) async throws -> [String] {
                let events = try #require(try await server.get(path).json()["events"] as? [[String: Any]])
                return events.map { "\($0["bundle_id"] as? String ?? "-") \($0["environment"] as? String ?? "-")" }
            }
            let all = try await pairs("/v1/events")
            #expect(Set(all) == ["\(phone) Production", "\(phone) Sandbox", "\(Self.mac) Production"])
            let sandboxEvents = try await pairs("/v1/events?environment=Sandbox")
            #expect(!sandboxEvents.isEmpty && sandboxEvents.allSatisfy { $0 == "\(phone) Sandbox" })
            #expect(sandboxEvents.count == all.filter { $0 == "\(phone) Sandbox" }.count)
            let macEvents = try await pairs("/v1/customers/customer/events?bundle_id=\(Self.mac)")
            #expect(!macEvents.isEmpty && macEvents.allSatisfy { $0 == "\(Self.mac) Production" })
            #expect(try await pairs("/v1/customers/tester/events?environment=Production").isEmpty)
        }
    }

    @Test("an app or environment not configured is refused naming the claim, and nothing is stored",
          arguments: Backend.available)
    func unconfigured(backend: Backend) async throws {
        let stranger = try Payloads(bundleId: "com.someone.else", appAppleId: 999, environment: "Production")
        let xcode = try Payloads(environment: "Xcode")
        let wrongAppleId = try Payloads(bundleId: Self.mac, appAppleId: Self.macAppleId + 1, environment: "Production")
        try await TestServer.run(backend, environment: Self.twoApps, now: now) { server in
            let foreign = try stranger.transaction(id: "9300", original: "9300", purchase: t0, expires: t0 + 30 * day, signed: t0)
            let answer = try await server.post("/v1/transactions", body(["signed_transaction": foreign, "customer_id": "c"]))
            try answer.expectError(.badRequest, "bundle_id_mismatch")
            #expect(try answer.errorMessage().contains("com.someone.else"), "\(answer.text)")

            let local = try xcode.transaction(id: "9301", original: "9301", purchase: t0, expires: t0 + 30 * day, signed: t0)
            let refused = try await server.post("/v1/transactions", body(["signed_transaction": local, "customer_id": "c"]))
            try refused.expectError(.badRequest, "environment_mismatch")
            #expect(try refused.errorMessage().contains("Xcode"), "\(refused.text)")

            let notification = try stranger.notification(
                type: "SUBSCRIBED", signed: t0,
                transaction: try stranger.transaction(id: "9302", original: "9302", purchase: t0, expires: t0 + 30 * day, signed: t0),
                renewalInfo: nil)
            try await server.notify(notification).expectError(.badRequest, "bundle_id_mismatch")
            let misattributed = try wrongAppleId.notification(
                type: "SUBSCRIBED", signed: t0,
                transaction: try wrongAppleId.transaction(id: "9303", original: "9303", purchase: t0, expires: t0 + 30 * day, signed: t0),
                renewalInfo: nil)
            try await server.notify(misattributed).expectError(.badRequest, "app_apple_id_mismatch")

            try await server.withStore { store in
                let stored = try await store.inputCount(dedupKeys: nil)
                #expect(stored == 0)
                let keys = try await store.keys(customerId: "c")
                #expect(keys.isEmpty)
            }
            let events = try await server.get("/v1/events").json()["events"] as? [Any]
            #expect(events?.isEmpty == true)
        }
    }
}
