import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// Named entitlements over HTTP (`docs/entitlements.md`): purchases through the webhook and
/// `POST /v1/transactions`, a grant, a refund and the sweep, each `entitlement.*` event told
/// once, in order, to a real webhook receiver; grants' bodies refused naming the member with
/// nothing stored; a file the products stored contradict refused.
@Suite("Named entitlements in receiptkit-server")
struct NamedEntitlementServerTests {
    static let t0 = ms("2025-06-01T12:00:00Z")
    static let day: Int64 = 86_400_000
    static let lifetime = "com.receiptkit.example.pro.lifetime"
    static let removeAds = "com.receiptkit.example.removeads"
    static let coins = "com.receiptkit.example.coins100"
    static let pass = "com.receiptkit.example.pass.30d"
    static let file = """
        {"entitlements": {
           "pro":         {"products": ["\(Payloads.productId)", "\(lifetime)"]},
           "remove_ads":  {"products": ["\(removeAds)", "\(lifetime)"]},
           "season_pass": {"products": [{"id": "\(pass)", "duration": "P30D"}]}}}
        """

    static func catalog() throws -> EntitlementCatalog {
        try EntitlementCatalog(jsonBytes: Array(file.utf8))
    }

    /// A signed one-time purchase (no `expiresDate`), of `type` as Apple writes it.
    static func purchase(
        _ p: Payloads, id: String, product: String, type: String, at instant: Int64, signed: Int64? = nil, token: String? = nil,
        revocation: Int64? = nil
    ) throws -> String {
        var members: [String: Any] = [
            "transactionId": id, "originalTransactionId": id, "bundleId": p.bundleId, "productId": product,
            "purchaseDate": instant, "originalPurchaseDate": instant, "quantity": 1, "type": type,
            "inAppOwnershipType": "PURCHASED", "signedDate": signed ?? instant, "environment": p.environment,
            "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 1990, "currency": "USD",
        ]
        if let token { members["appAccountToken"] = token }
        if let revocation {
            members["revocationDate"] = revocation
            members["revocationReason"] = 0
        }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: members, options: [.sortedKeys]), as: UTF8.self)
        return try p.signer.sign(json)
    }

    static func body(_ members: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: members, options: [.sortedKeys]), as: UTF8.self)
    }

    /// The server configuration of these tests: the entitlements, a webhook, no sweep unless asked.
    static func configure(
        receiver: WebhookReceiver? = nil, sweep: Duration = .seconds(3600)
    ) -> @Sendable (inout ServerConfiguration) -> Void {
        let url = receiver?.url
        return { configuration in
            configuration.entitlements = EntitlementsFile(path: "entitlements.json", catalog: try! Self.catalog())
            configuration.events.sweepInterval = sweep
            if let url {
                configuration.events.webhookURL = url
                configuration.events.webhookSecret = "whsec-entitlements"
                // The story's clock moves weeks while a failed delivery waits: keep it trying.
                configuration.events.retryWindow = .seconds(365 * 86_400)
                configuration.events.delivery = DeliveryPolicy(
                    firstRetry: .milliseconds(50), maximumWait: .milliseconds(400), timeout: .seconds(5), concurrency: 4,
                    pollInterval: .milliseconds(50), keepDelivered: .seconds(365 * 86_400))
            }
        }
    }

    @Test("purchases, a grant, a refund and the sweep: each entitlement event accepted once, in order, by a webhook that fails first; the answers agree",
          arguments: Backend.available)
    func story(backend: Backend) async throws {
        let p = try Payloads()
        let (t0, day) = (Self.t0, Self.day)
        let customer = "cust-named-1"
        let clock = TestClock(milliseconds: t0)
        let receiver = try WebhookReceiver()
        // A monthly subscription the app reports, auto-renew off: it ends at t0 + 30 days.
        let monthly = try p.transaction(id: "9101", original: "9101", purchase: t0, expires: t0 + 30 * day, signed: t0)
        // A pack of coins (a consumable) the app reports too.
        let coins = try Self.purchase(p, id: "9201", product: Self.coins, type: "Consumable", at: t0 + 1000)
        // Remove Ads bought: Apple's notification, the customer named by its appAccountToken.
        let removeAds = try Self.purchase(p, id: "9301", product: Self.removeAds, type: "Non-Consumable", at: t0 + 2000, token: customer)
        let bought = try p.notification(type: "ONE_TIME_CHARGE", signed: t0 + 2000, transaction: removeAds, renewalInfo: nil)
        // Refunded two days later.
        let refunded = try Self.purchase(
            p, id: "9301", product: Self.removeAds, type: "Non-Consumable", at: t0 + 2000, signed: t0 + 2 * day, token: customer,
            revocation: t0 + 2 * day)
        let refund = try p.notification(type: "REFUND", signed: t0 + 2 * day, transaction: refunded, renewalInfo: nil)
        let renewalOff = try p.renewalInfo(original: "9101", signed: t0 + 3000, autoRenew: false)

        // The receiver fails its first requests: each event is retried, and a customer's next one
        // waits behind it.
        receiver.answer(next: [.status(500), .status(503), .status(500), .status(502)])
        try await receiver.run {
            try await TestServer.run(backend, clock: clock.read, configure: Self.configure(receiver: receiver, sweep: .milliseconds(50))) { server in
                var answer = try await server.post("/v1/transactions", Self.body(["signed_transaction": monthly, "customer_id": customer]))
                #expect(answer.status == .ok, "\(answer.text)")
                let first = try #require(try answer.json()["entitlements"] as? [String: Any], "\(answer.text)")
                #expect((first["pro"] as? [String: Any])?["active"] as? Bool == true)
                answer = try await server.post("/v1/transactions", Self.body(["signed_transaction": coins, "customer_id": customer]))
                #expect(answer.status == .ok, "\(answer.text)")
                clock.set(milliseconds: t0 + 2000)
                #expect(try await server.notify(bought).status == .ok)
                #expect(try await server.notify(try p.notification(
                    type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: t0 + 3000, transaction: monthly,
                    renewalInfo: renewalOff)).status == .ok)

                // A free week of the season pass from support.
                clock.set(milliseconds: t0 + day)
                answer = try await server.post("/v1/customers/\(customer)/grants", Self.body([
                    "entitlement": "season_pass", "duration": "P7D", "reason": "sorry about the outage",
                ]))
                #expect(answer.status == .created, "\(answer.text)")
                let grant = try answer.json()
                #expect(grant["active"] as? Bool == true)
                #expect(grant["granted_by"] as? String == "RECEIPTKIT_API_TOKEN")
                #expect(grant["expires_date"] as? String == Timestamp(millisecondsSince1970: t0 + 8 * day).iso8601)
                let grantId = try #require(grant["grant_id"] as? String)

                // Everything at once: the consumable lists as a purchase and entitles nothing.
                var all = try await server.get("/v1/customers/\(customer)/entitlements").json()
                #expect(all["entitled"] as? Bool == true)
                #expect((all["subscriptions"] as? [[String: Any]])?.count == 3)
                var by = try #require(all["entitlements"] as? [String: [String: Any]])
                #expect(Set(by.keys) == ["pro", "remove_ads", "season_pass"])
                #expect(by["pro"]?["source"] as? String == "subscription")
                #expect(by["pro"]?["expires_date"] as? String == Timestamp(millisecondsSince1970: t0 + 30 * day).iso8601)
                #expect(by["pro"]?["will_renew"] as? Bool == false)
                #expect(by["remove_ads"]?["source"] as? String == "purchase")
                #expect(by["remove_ads"]?["expires_date"] is NSNull)
                #expect(by["season_pass"]?["source"] as? String == "grant")
                #expect(by["season_pass"]?["grant_id"] as? String == grantId)

                // The refund.
                clock.set(milliseconds: t0 + 2 * day)
                #expect(try await server.notify(refund).status == .ok)
                let one = try await server.get("/v1/customers/\(customer)/entitlements/remove_ads").json()
                #expect(one["active"] as? Bool == false)
                #expect(one["status"] as? String == "revoked")
                #expect(one["name"] as? String == "remove_ads")
                // As of before the refund, it was active.
                let before = try await server.get(
                    "/v1/customers/\(customer)/entitlements/remove_ads?as_of=\(Timestamp(millisecondsSince1970: t0 + day).iso8601)").json()
                #expect(before["active"] as? Bool == true)

                // Time passes: the grant runs out (t0 + 8 days), then the subscription (t0 + 30 days).
                clock.set(milliseconds: t0 + 40 * day)
                let expected = [
                    ("entitlement.activated", "pro"), ("entitlement.activated", "remove_ads"), ("entitlement.activated", "season_pass"),
                    ("entitlement.deactivated", "remove_ads"), ("entitlement.deactivated", "season_pass"), ("entitlement.deactivated", "pro"),
                ]
                func named(_ events: [[String: Any]]) -> [[String: Any]] {
                    events.filter { ($0["type"] as? String)?.hasPrefix("entitlement.") == true }
                }
                try await server.waitForFeed { named($0).count == expected.count }
                let events = named(try await server.feed().events)
                #expect(events.map { "\($0["type"] ?? "") \($0["name"] ?? "")" } == expected.map { "\($0.0) \($0.1)" })
                #expect(events.map { $0["occurred_at"] as? String } == [t0, t0 + 2000, t0 + day, t0 + 2 * day, t0 + 8 * day, t0 + 30 * day]
                    .map { Timestamp(millisecondsSince1970: $0).iso8601 })
                #expect(events.map { ($0["cause"] as? [String: Any])?["source"] as? String }
                    == ["app", "webhook", "grant", "webhook", "sweep", "sweep"])
                #expect(events.allSatisfy { $0["customer_ids"] as? [String] == [customer] })
                #expect(events[2]["bundle_id"] is NSNull && events[2]["source"] as? String == "grant")
                // The customer's feed has them all, the grant's too, among its purchases' events.
                let own = named(try await server.feed(customer: customer).events)
                #expect(own.map { $0["id"] as? String } == events.map { $0["id"] as? String })
                // The webhook got each once, in order.
                try await waitUntil("the receiver has every entitlement event") {
                    receiver.accepted.compactMap(\.json).filter { ($0["type"] as? String)?.hasPrefix("entitlement.") == true }.count
                        >= expected.count
                }
                let delivered = receiver.accepted.compactMap(\.json).filter { ($0["type"] as? String)?.hasPrefix("entitlement.") == true }
                #expect(delivered.map { $0["id"] as? String } == events.map { $0["id"] as? String })
                #expect(receiver.received.count > receiver.accepted.count, "the receiver's failures were retried")
                all = try await server.get("/v1/customers/\(customer)/entitlements").json()
                by = try #require(all["entitlements"] as? [String: [String: Any]])
                #expect(by.values.allSatisfy { $0["active"] as? Bool == false })
                #expect(by["pro"]?["status"] as? String == "expired")
                #expect(all["entitled"] as? Bool == false, "a consumable does not entitle")
                // Ending the grant afterwards changes nothing told: it had run out.
                let ended = try await server.delete("/v1/customers/\(customer)/grants/\(grantId)")
                #expect(ended.status == .ok, "\(ended.text)")
                #expect(named(try await server.feed().events).count == expected.count)
            }
        }
    }

    @Test("a grant ended early ends the entitlement at once; a lifetime grant outlives everything; erasing the customer erases its grants",
          arguments: Backend.available)
    func grants(backend: Backend) async throws {
        let t0 = Self.t0
        let clock = TestClock(milliseconds: t0)
        try await TestServer.run(backend, clock: clock.read, configure: Self.configure()) { server in
            let customer = "cust-grants"
            var answer = try await server.post("/v1/customers/\(customer)/grants", Self.body(["entitlement": "pro", "lifetime": true]))
            #expect(answer.status == .created, "\(answer.text)")
            let lifetime = try #require(try answer.json()["grant_id"] as? String)
            clock.set(milliseconds: t0 + 1000)
            answer = try await server.post("/v1/customers/\(customer)/grants", Self.body([
                "entitlement": "remove_ads", "expires_date": Timestamp(millisecondsSince1970: t0 + 30 * Self.day).iso8601,
            ]))
            #expect(answer.status == .created, "\(answer.text)")
            let month = try #require(try answer.json()["grant_id"] as? String)
            var pro = try await server.get("/v1/customers/\(customer)/entitlements/pro").json()
            #expect(pro["active"] as? Bool == true && pro["expires_date"] is NSNull && pro["grant_id"] as? String == lifetime)

            clock.set(milliseconds: t0 + Self.day)
            answer = try await server.delete("/v1/customers/\(customer)/grants/\(month)")
            #expect(answer.status == .ok, "\(answer.text)")
            #expect(try answer.json()["ended_by"] as? String == "RECEIPTKIT_API_TOKEN")
            #expect(try answer.json()["active"] as? Bool == false)
            let removeAds = try await server.get("/v1/customers/\(customer)/entitlements/remove_ads").json()
            #expect(removeAds["active"] as? Bool == false)
            #expect(removeAds["status"] as? String == "revoked")
            #expect(removeAds["expires_date"] as? String == Timestamp(millisecondsSince1970: t0 + Self.day).iso8601)
            let types = try await server.feed().events.map { "\($0["type"] ?? "") \($0["name"] ?? "")" }
            #expect(types == ["entitlement.activated pro", "entitlement.activated remove_ads", "entitlement.deactivated remove_ads"])
            #expect(try await server.feed(customer: customer).events.count == 3, "a customer's feed has its grants' events")
            #expect(try await server.feed(customer: "someone-else").events.isEmpty)
            // Both grants are kept, the ended one with who and when.
            let listed = try #require(try await server.get("/v1/customers/\(customer)/grants").json()["grants"] as? [[String: Any]])
            #expect(listed.map { $0["grant_id"] as? String } == [lifetime, month])
            #expect(listed.map { $0["ended_at"] is NSNull } == [true, false])
            // An unknown grant, an unknown entitlement.
            try await server.delete("/v1/customers/\(customer)/grants/no-such-grant").expectError(.notFound, "not_found")
            try await server.get("/v1/customers/\(customer)/entitlements/gold").expectError(.notFound, "unknown_entitlement")

            clock.set(milliseconds: t0 + 3650 * Self.day)
            pro = try await server.get("/v1/customers/\(customer)/entitlements/pro").json()
            #expect(pro["active"] as? Bool == true)

            answer = try await server.delete("/v1/customers/\(customer)")
            #expect(answer.status == .ok, "\(answer.text)")
            #expect((try await server.get("/v1/customers/\(customer)/grants").json()["grants"] as? [Any])?.isEmpty == true)
            pro = try await server.get("/v1/customers/\(customer)/entitlements/pro").json()
            #expect(pro["active"] as? Bool == false)
            #expect(try await server.feed().events.allSatisfy { ($0["customer_ids"] as? [String])?.isEmpty == true })
            #expect(try await server.feed(customer: customer).events.isEmpty, "the erased id names no event")
        }
    }

    @Test("a bad grant body is 400 naming the member, and nothing is stored", arguments: Backend.available)
    func badGrants(backend: Backend) async throws {
        let past = Timestamp(millisecondsSince1970: Self.t0 - 1000).iso8601
        let later = Timestamp(millisecondsSince1970: Self.t0 + Self.day).iso8601
        let raw: [([String: Any], String)] = [
            (["entitlement": "gold", "duration": "P1M"], "entitlement"),
            (["entitlement": "pro", "expires_date": past], "expires_date"),
            (["entitlement": "pro", "expires_date": "tomorrow"], "expires_date"),
            (["entitlement": "pro", "expires_date": later, "duration": "P1M"], "expires_date and duration"),
            (["entitlement": "pro"], "none of expires_date, duration and lifetime"),
            (["entitlement": "pro", "duration": "P1.5D"], "duration"),
            (["entitlement": "pro", "lifetime": false], "lifetime"),
            (["entitlement": 7, "lifetime": true], "entitlement"),
            (["lifetime": true], "entitlement"),
        ]
        let cases = try raw.map { (try Self.body($0.0), $0.1) }
        try await TestServer.run(backend, clock: { Date(timeIntervalSince1970: Double(Self.t0) / 1000) }, configure: Self.configure()) { server in
            for (body, named) in cases {
                let answer = try await server.post("/v1/customers/cust-bad/grants", body)
                try answer.expectError(.badRequest, "invalid_request")
                #expect(try answer.errorMessage().contains(named), "\(body): \(answer.text)")
            }
            #expect((try await server.get("/v1/customers/cust-bad/grants").json()["grants"] as? [Any])?.isEmpty == true)
            #expect(try await server.feed().events.isEmpty)
        }
        // Without an entitlements file: no named answers, and grants are refused.
        try await TestServer.run(backend, configure: { $0.events.sweepInterval = .seconds(3600) }) { server in
            try await server.post("/v1/customers/c/grants", Self.body(["entitlement": "pro", "lifetime": true]))
                .expectError(.conflict, "entitlements_off")
            try await server.get("/v1/customers/c/entitlements/pro").expectError(.conflict, "entitlements_off")
            #expect(try await server.get("/v1/customers/c/entitlements").json()["entitlements"] == nil)
        }
    }

    @Test("an entitlements file the products stored contradict is refused, naming the product", arguments: Backend.available)
    func contradictedFile(backend: Backend) async throws {
        let p = try Payloads()
        let monthly = try p.transaction(id: "9501", original: "9501", purchase: Self.t0, expires: Self.t0 + 30 * Self.day, signed: Self.t0)
        let coins = try Self.purchase(p, id: "9502", product: Self.coins, type: "Consumable", at: Self.t0)
        try await TestServer.run(backend, configure: Self.configure()) { server in
            for jws in [monthly, coins] {
                let answer = try await server.post("/v1/transactions", Self.body(["signed_transaction": jws, "customer_id": "c"]))
                #expect(answer.status == .ok, "\(answer.text)")
            }
            try await server.withStore { store in
                let now = Timestamp(millisecondsSince1970: Self.t0 + 1000)
                try await EntitlementsFile.check(try Self.catalog(), path: "good.json", against: store, at: now)
                let bad = try EntitlementCatalog(jsonBytes: Array("""
                    {"entitlements": {"pro": {"products": [{"id": "\(Payloads.productId)", "duration": "P1M"}]},
                                      "coins": {"products": ["\(Self.coins)"]}}}
                    """.utf8))
                do {
                    try await EntitlementsFile.check(bad, path: "bad.json", against: store, at: now)
                    Issue.record("a duration on an auto-renewable subscription was accepted")
                } catch let error as ConfigurationError {
                    #expect(error.message.contains("bad.json"))
                    #expect(error.message.contains("\(Payloads.productId) (under pro) is an auto renewable subscription"), "\(error)")
                    #expect(error.message.contains("\(Self.coins) (under coins) is a consumable"), "\(error)")
                }
            }
        }
    }

    @Test("a bad entitlements file stops the configuration, naming the line and member")
    func badFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-entitlements-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cases: [(String, [String])] = [
            ("{\"entitlements\": {\n  \"pro\": {\"products\": [\"a\",]}}}", ["line 2"]),
            ("{\"entitlements\": {\"pro\": {\"products\": [\"a\"]}},\n \"tiers\": {}}", ["line 2", "tiers"]),
            ("{\"entitlements\": {\n \"pass\": {\"products\": [{\"id\": \"p\", \"duration\": \"30 days\"}]}}}", ["line 2", "entitlements.pass.products[0].duration"]),
            ("{\"entitlements\": {\"pro\": {\"products\": [\"a\"]}},\n \"apps\": {\"com.x\": [\"gold\"]}}", ["line 2", "apps.com.x[0]", "gold"]),
            ("{\"entitlements\": {\"pro\": {\"products\": [\"a\"]},\n \"ads\": {\"products\": [\"b\"]}},\n \"apps\": {\"com.x\": [\"pro\"]}}", ["line 2", "entitlements.ads", "no app"]),
        ]
        for (index, (text, named)) in cases.enumerated() {
            let path = directory.appendingPathComponent("\(index).json").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            do {
                _ = try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_ENTITLEMENTS_FILE": path]) { $1 })
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.message.contains("RECEIPTKIT_ENTITLEMENTS_FILE") && error.message.contains(path), "\(error)")
                for part in named { #expect(error.message.contains(part), "\(text): \(error)") }
            }
        }
    }
}

extension NamedEntitlementServerTests {
    @Test("one purchase, two customers: each is told of its own entitlement, and each customer's feed has its own events only",
          arguments: Backend.available)
    func twoCustomersOfOnePurchase(backend: Backend) async throws {
        let p = try Payloads()
        let monthly = try p.transaction(id: "9601", original: "9601", purchase: Self.t0, expires: Self.t0 + 30 * Self.day, signed: Self.t0)
        try await TestServer.run(backend, clock: { Date(timeIntervalSince1970: Double(Self.t0) / 1000) }, configure: Self.configure()) { server in
            for customer in ["first", "second"] {
                let answer = try await server.post("/v1/transactions", Self.body(["signed_transaction": monthly, "customer_id": customer]))
                #expect(answer.status == .ok, "\(answer.text)")
            }
            let all = try await server.feed().events.filter { ($0["type"] as? String)?.hasPrefix("entitlement.") == true }
            #expect(all.map { $0["customer_ids"] as? [String] } == [["first"], ["second"]])
            for customer in ["first", "second"] {
                let own = try await server.feed(customer: customer).events.filter { ($0["type"] as? String)?.hasPrefix("entitlement.") == true }
                #expect(own.map { $0["customer_ids"] as? [String] } == [[customer]])
            }
        }
    }
}

extension NamedEntitlementServerTests {
    @Test("the server's named entitlements are the library's for the same records, at every instant", arguments: Backend.available)
    func agreesWithTheLibrary(backend: Backend) async throws {
        let p = try Payloads()
        let (t0, day) = (Self.t0, Self.day)
        // Three customers (their appAccountTokens), through Apple's notifications only.
        let tokens = ["a1b2c3d4-0000-4000-8000-000000000001", "a1b2c3d4-0000-4000-8000-000000000002", "a1b2c3d4-0000-4000-8000-000000000003"]
        var bodies: [String] = []
        func notify(_ type: String, _ transaction: String, _ renewalInfo: String? = nil, at instant: Int64) throws {
            bodies.append(try p.notification(type: type, signed: instant, transaction: transaction, renewalInfo: renewalInfo))
        }
        // The first: a monthly plan renewed once, then a lifetime purchase.
        try notify("SUBSCRIBED", try p.transaction(id: "9701", original: "9701", purchase: t0, expires: t0 + 30 * day, signed: t0, token: tokens[0]), at: t0)
        try notify("DID_RENEW", try p.transaction(id: "9702", original: "9701", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day, token: tokens[0]), at: t0 + 30 * day)
        try notify("ONE_TIME_CHARGE", try Self.purchase(p, id: "9703", product: Self.lifetime, type: "Non-Consumable", at: t0 + 40 * day, token: tokens[0]), at: t0 + 40 * day)
        // The second: two stacked passes, one refunded remove-ads, coins.
        try notify("ONE_TIME_CHARGE", try Self.purchase(p, id: "9711", product: Self.pass, type: "Non-Renewing Subscription", at: t0, token: tokens[1]), at: t0)
        try notify("ONE_TIME_CHARGE", try Self.purchase(p, id: "9712", product: Self.pass, type: "Non-Renewing Subscription", at: t0 + 10 * day, token: tokens[1]), at: t0 + 10 * day)
        try notify("ONE_TIME_CHARGE", try Self.purchase(p, id: "9713", product: Self.removeAds, type: "Non-Consumable", at: t0 + day, token: tokens[1]), at: t0 + day)
        try notify("REFUND", try Self.purchase(p, id: "9713", product: Self.removeAds, type: "Non-Consumable", at: t0 + day, signed: t0 + 5 * day, token: tokens[1], revocation: t0 + 5 * day), at: t0 + 5 * day)
        try notify("ONE_TIME_CHARGE", try Self.purchase(p, id: "9714", product: Self.coins, type: "Consumable", at: t0 + 2 * day, token: tokens[1]), at: t0 + 2 * day)
        // The third: a subscription refunded, and its renewal info turned off before.
        try notify("SUBSCRIBED", try p.transaction(id: "9721", original: "9721", purchase: t0, expires: t0 + 30 * day, signed: t0, token: tokens[2]),
                   try p.renewalInfo(original: "9721", signed: t0, autoRenew: false), at: t0)
        try notify("REFUND", try p.transaction(id: "9721", original: "9721", purchase: t0, expires: t0 + 30 * day, signed: t0 + 3 * day, token: tokens[2], revocation: t0 + 3 * day), at: t0 + 3 * day)

        let configuration = try ServerConfiguration(environment: Vectors.environment)
        let verifier = AppStoreVerifier(configuration.verifier)
        var ledger = EntitlementLedger()
        for body in bodies { ledger.add(try verifier.verifyNotification(body)) }
        let catalog = try Self.catalog()
        let clock = TestClock(milliseconds: t0 + 100 * day)
        let (posted, folded) = (bodies, ledger)
        try await TestServer.run(backend, clock: clock.read, configure: Self.configure()) { server in
            for body in posted { #expect(try await server.notify(body).status == .ok) }
            for at in [t0 - day, t0 + 1000, t0 + 2 * day, t0 + 6 * day, t0 + 35 * day, t0 + 45 * day, t0 + 65 * day, t0 + 100 * day] {
                let instant = Timestamp(millisecondsSince1970: at)
                for token in tokens {
                    let states = folded.states(at: instant).filter { $0.appAccountToken == token }
                    let expected = NamedEntitlement.json(catalog.entitlements(of: states, at: instant))
                    let answer = try await server.get("/v1/customers/\(token)/entitlements?as_of=\(instant.iso8601)")
                    let served = try #require(try answer.json()["entitlements"] as? NSDictionary, "\(answer.text)")
                    let library = try #require(try JSONSerialization.jsonObject(with: Data(expected.utf8)) as? NSDictionary)
                    #expect(served == library, "\(token) at \(instant): served \(answer.text), the library \(expected)")
                }
            }
        }
    }
}
