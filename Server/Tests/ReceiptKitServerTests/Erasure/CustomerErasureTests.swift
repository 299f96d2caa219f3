import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// `DELETE /v1/customers/{customer_id}`: the id erased from every column of every table, checked
/// in the database itself, while the subscriptions and their states stay.
@Suite("Deleting a customer")
struct CustomerErasureTests {
    static let t0 = ms("2025-06-01T12:00:00Z")
    static let now = Date(timeIntervalSince1970: Double(t0 + 3 * day) / 1000)

    @Test("DELETE erases the id from every table (links, consent, events, webhook bodies, purchase bodies) and their appAccountToken's links; entitlements empty, search finds nothing, states unchanged; again 404",
          arguments: Backend.available)
    func erasesEverywhere(backend: Backend) async throws {
        let p = try Payloads()
        let customer = "erase-me-" + UUID().uuidString.lowercased()
        let token = UUID().uuidString.lowercased()
        let other = "keep-me-" + UUID().uuidString.lowercased()
        let first = try p.transaction(id: "9100000001", original: "9100000001", purchase: Self.t0, expires: Self.t0 + 30 * day, signed: Self.t0, token: token)
        let renewal = try p.transaction(
            id: "9100000011", original: "9100000001", purchase: Self.t0 + day, expires: Self.t0 + 31 * day, signed: Self.t0 + day, token: token)
        let renewed = try p.notification(type: "DID_RENEW", signed: Self.t0 + day, transaction: renewal, renewalInfo: nil)
        let othersPurchase = try p.transaction(id: "9100000002", original: "9100000002", purchase: Self.t0, expires: Self.t0 + 30 * day, signed: Self.t0)
        // A one-time purchase Apple asks consumption information about, linked by the token alone.
        let consumption = try ConsumptionTests.request(transactionId: "9100000003", signed: Self.t0 + 3 * day - 3_600_000, token: token)
        let receiver = try WebhookReceiver()
        try await receiver.run {
            try await TestServer.run(backend, now: Self.now, configure: WebhookDeliveryTests.sending(to: receiver)) { server in
                let purchase = try await server.post("/v1/transactions", #"{"signed_transaction":"\#(first)","customer_id":"\#(customer)"}"#)
                #expect(purchase.status == .ok, "\(purchase.text)")
                #expect(try await server.notify(renewed).status == .ok)
                #expect(try await server.notify(consumption).status == .ok)
                let others = try await server.post("/v1/transactions", #"{"signed_transaction":"\#(othersPurchase)","customer_id":"\#(other)"}"#)
                #expect(others.status == .ok, "\(others.text)")
                #expect(try await server.put("/v1/customers/\(customer)/consumption-consent", #"{"consented":true}"#).status == .ok)
                // The purchase's body as a server before this one stored it, the customer id inside
                // (its JWS headers still referenced, as compacted).
                #expect(try await server.withStoreRaw("transaction:\(Payloads.bundleId):Sandbox:9100000001:\(Self.t0)") == Array(first.utf8))
                try await DatabaseScan.wrapRaw(
                    dedupKey: "transaction:\(Payloads.bundleId):Sandbox:9100000001:\(Self.t0)",
                    prefix: #"{"signed_transaction":""#, suffix: #"","customer_id":"\#(customer)"}"#,
                    location: server.location, searchPath: server.searchPath)
                let events = try await server.feed().events
                try await waitUntil("every event reached the webhook (\(receiver.accepted.count) of \(events.count))") {
                    receiver.accepted.count >= events.count
                }

                // Before: the id is where a deletion must reach, so the scan can find it.
                let before = try await DatabaseScan.columns(holding: customer, location: server.location, searchPath: server.searchPath)
                for column in ["customer_subscriptions.customer_id", "consumption_consents.customer_id", "change_events.payload", "outbox.body", "inputs.raw"] {
                    #expect(before.contains { $0.hasPrefix(column + " ") }, "\(column) holds the id before: \(before)")
                }
                let paths = ["/v1/subscriptions/9100000001", "/v1/subscriptions/9100000002", "/v1/subscriptions/9100000003"]
                var states: [String] = []
                for path in paths { states.append(try await server.get(path).text) }
                let othersEntitlements = try await server.get("/v1/customers/\(other)/entitlements").text

                let erased = try await server.delete("/v1/customers/\(customer)")
                #expect(erased.status == .ok, "\(erased.text)")
                let answer = try erased.json()
                #expect(answer["customer_id"] as? String == customer)
                #expect(answer["app_account_token_kept"] as? Bool == false)
                let keys = (answer["subscriptions"] as? [[String: Any]] ?? []).compactMap { $0["original_transaction_id"] as? String }
                #expect(keys.sorted() == ["9100000001", "9100000003"], "the customer's, and the one their token alone was linked to")

                // Nothing answers for the customer or their token.
                for id in [customer, token] {
                    let entitlements = try await server.get("/v1/customers/\(id)/entitlements").json()
                    #expect(entitlements["entitled"] as? Bool == false)
                    #expect((entitlements["subscriptions"] as? [Any])?.isEmpty == true)
                    #expect((try await server.get("/v1/search?q=\(id)").json()["matches"] as? [Any])?.isEmpty == true)
                    #expect(try await server.feed(customer: id).events.isEmpty)
                }
                // The subscriptions stay as they were, and another customer's link.
                for (path, state) in zip(paths, states) { #expect(try await server.get(path).text == state, "\(path)") }
                #expect(try await server.get("/v1/customers/\(other)/entitlements").text == othersEntitlements)
                // The feed is whole, its events linked to no one.
                let after = try await server.feed().events
                #expect(after.count == events.count)
                for event in after where ["9100000001", "9100000003"].contains(event["original_transaction_id"] as? String ?? "") {
                    #expect((event["customer_ids"] as? [String]) == [], "\(event)")
                }
                #expect(after.contains { ($0["customer_ids"] as? [String]) == [other] })
                // The purchase keeps Apple's bytes, whole.
                #expect(try await server.withStoreRaw("transaction:\(Payloads.bundleId):Sandbox:9100000001:\(Self.t0)") == Array(first.utf8))

                // No column of any table holds the id; the token only in what Apple signed.
                let remaining = try await DatabaseScan.columns(holding: customer, location: server.location, searchPath: server.searchPath)
                #expect(remaining.isEmpty, "the id is still in \(remaining)")
                let tokenColumns = try await DatabaseScan.columns(holding: token, location: server.location, searchPath: server.searchPath)
                #expect(!tokenColumns.contains { $0.hasPrefix("customer_subscriptions.") }, "\(tokenColumns)")
                #expect(tokenColumns.contains { $0.hasPrefix("transaction_copies.copy ") }, "Apple's signed data stays: \(tokenColumns)")

                try await server.delete("/v1/customers/\(customer)").expectError(.notFound, "not_found")
            }
        }
    }

    @Test("a customer known by their appAccountToken alone: links erased, the answer says Apple's signed data keeps the token",
          arguments: Backend.available)
    func tokenAsCustomerId(backend: Backend) async throws {
        let p = try Payloads()
        let token = UUID().uuidString.lowercased()
        let purchase = try p.transaction(id: "9200000001", original: "9200000001", purchase: Self.t0, expires: Self.t0 + 30 * day, signed: Self.t0, token: token)
        try await TestServer.run(backend, now: Self.now) { server in
            #expect(try await server.post("/v1/transactions", #"{"signed_transaction":"\#(purchase)"}"#).status == .ok)
            let state = try await server.get("/v1/subscriptions/9200000001").text
            #expect(try await server.get("/v1/customers/\(token)/entitlements").json()["entitled"] as? Bool == true)

            let erased = try await server.delete("/v1/customers/\(token)")
            #expect(erased.status == .ok, "\(erased.text)")
            #expect(try erased.json()["app_account_token_kept"] as? Bool == true)
            #expect(try await server.get("/v1/customers/\(token)/entitlements").json()["entitled"] as? Bool == false)
            #expect((try await server.get("/v1/search?q=\(token)").json()["matches"] as? [Any])?.isEmpty == true)
            #expect(try await server.get("/v1/subscriptions/9200000001").text == state)
            let columns = try await DatabaseScan.columns(holding: token, location: server.location, searchPath: server.searchPath)
            #expect(!columns.contains { $0.hasPrefix("customer_subscriptions.") }, "\(columns)")
            try await server.delete("/v1/customers/\(token)").expectError(.notFound, "not_found")
            try await server.delete("/v1/customers/nobody-\(UUID().uuidString)").expectError(.notFound, "not_found")
        }
    }

    @Test("an event's customer_ids are rewritten in place, every other byte kept; one written otherwise is re-encoded whole")
    func redacting() throws {
        let written = #"{"id":"7","type":"subscription.renewed","customer_ids":["a\"b","keep","gone"],"subscription":{"x":1}}"#
        #expect(try CustomerErasure.redacting(["gone", "a\"b"], from: written) == #"{"id":"7","type":"subscription.renewed","customer_ids":["keep"],"subscription":{"x":1}}"#)
        #expect(try CustomerErasure.redacting(["other"], from: written) == nil)
        let spaced = #"{ "id": "7", "customer_ids": [ "gone", "keep" ] }"#
        let rewritten = try #require(try CustomerErasure.redacting(["gone"], from: spaced))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(rewritten.utf8)) as? [String: Any])
        #expect(object["customer_ids"] as? [String] == ["keep"])
        #expect(object["id"] as? String == "7")
        #expect(throws: StoreError.self) { try CustomerErasure.redacting(["gone"], from: "[1]") }
    }
}

extension TestServer {
    /// An input's bytes as received, read back through a second view of the database.
    func withStoreRaw(_ dedupKey: String) async throws -> [UInt8]? {
        var raw: [UInt8]?
        try await withStore { raw = try await $0.raw(dedupKey: dedupKey) }
        return raw
    }
}
