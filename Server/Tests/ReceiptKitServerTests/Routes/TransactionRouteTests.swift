import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Testing

@Suite("POST /v1/transactions, GET /v1/customers/{id}/entitlements, GET /v1/subscriptions/{id}")
struct TransactionRouteTests {
    let payloads: Payloads
    let t0 = ms("2025-06-01T12:00:00Z")

    init() throws {
        payloads = try Payloads()
    }

    func body(_ members: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: members), as: UTF8.self)
    }

    @Test("a transaction links to the customer_id given, or to its appAccountToken", arguments: Backend.available)
    func links(backend: Backend) async throws {
        let withToken = try payloads.transaction(
            id: "8001", original: "8001", purchase: t0, expires: t0 + 30 * day, signed: t0, token: "token-b")
        let withoutToken = try payloads.transaction(id: "8101", original: "8101", purchase: t0, expires: t0 + 30 * day, signed: t0)
        try await TestServer.run(backend, now: Date(timeIntervalSince1970: Double(t0 + day) / 1000)) { server in
            let first = try await server.post("/v1/transactions", try body(["signed_transaction": withToken, "customer_id": "cust-1"]))
            #expect(first.status == .ok, "\(first.text)")
            let answer = try first.json()
            #expect(answer["customer_id"] as? String == "cust-1")
            #expect(answer["entitled"] as? Bool == true)
            #expect(answer["duplicate"] as? Bool == false)
            #expect((answer["record"] as? [String: Any])?["kind"] as? String == "transaction")
            let states = try #require(answer["subscriptions"] as? [[String: Any]])
            #expect(states.map { $0["original_transaction_id"] as? String } == ["8001"])
            #expect(states.first?["status"] as? String == "active")

            // Again: a replay, and the token's customer is linked too.
            let again = try await server.post("/v1/transactions", try body(["signed_transaction": withToken]))
            #expect(again.status == .ok)
            #expect(try again.json()["customer_id"] as? String == "token-b")
            #expect(try again.json()["duplicate"] as? Bool == true)
            let byToken = try await server.get("/v1/customers/token-b/entitlements").json()
            #expect(byToken["entitled"] as? Bool == true)

            // No customer_id and no appAccountToken: nothing to link it to.
            try await server.post("/v1/transactions", try body(["signed_transaction": withoutToken]))
                .expectError(.badRequest, "invalid_request")
            let linked = try await server.post("/v1/transactions", try body(["signed_transaction": withoutToken, "customer_id": "cust-1"]))
            #expect(linked.status == .ok)
            #expect(try (linked.json()["subscriptions"] as? [Any])?.count == 2)

            let subscription = try await server.get("/v1/subscriptions/8101")
            #expect(subscription.status == .ok)
            #expect(try subscription.json()["original_transaction_id"] as? String == "8101")
            try await server.get("/v1/subscriptions/9999").expectError(.notFound, "not_found")
            try await server.get("/v1/customers/cust-1/entitlements?as_of=yesterday").expectError(.badRequest, "invalid_request")
            let unknown = try await server.get("/v1/customers/nobody/entitlements").json()
            #expect(unknown["entitled"] as? Bool == false)
        }
    }

    @Test("customer ids with @, /, space, %, +, non-ASCII, quotes, backslashes and control characters round-trip through the path, percent-encoded",
          arguments: Backend.available)
    func encodedIds(backend: Backend) async throws {
        let ids = ["jane@example.com", "team/alpha", "Jane Doe", "100%", "a+b", "Zoë 日本", #"say "hi" \ back"#, "tab\tline\nend\u{1}\u{1F}"]
        try await TestServer.run(backend, now: Date(timeIntervalSince1970: Double(t0 + day) / 1000)) { server in
            for (index, id) in ids.enumerated() {
                let jws = try payloads.transaction(
                    id: "86\(index)", original: "86\(index)", purchase: t0, expires: t0 + 30 * day, signed: t0)
                let stored = try await server.post("/v1/transactions", try body(["signed_transaction": jws, "customer_id": id]))
                #expect(stored.status == .ok, "\(stored.text)")
                // As encodeURIComponent writes it: every byte but A–Z a–z 0–9 - _ . ! ~ * ' ( ) escaped.
                let encoded = try #require(id.addingPercentEncoding(withAllowedCharacters: .init(charactersIn:
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()")))
                let answer = try await server.get("/v1/customers/\(encoded)/entitlements")
                #expect(answer.status == .ok, "\(id): \(answer.text)")
                let json = try answer.json()
                #expect(json["customer_id"] as? String == id)
                #expect(json["entitled"] as? Bool == true, "\(id): \(answer.text)")
                #expect((json["subscriptions"] as? [[String: Any]])?.map { $0["original_transaction_id"] as? String } == ["86\(index)"])
            }
            // The original transaction id is decoded too.
            let subscription = try await server.get("/v1/subscriptions/%38%36%30")
            #expect(try subscription.json()["original_transaction_id"] as? String == "860")
            // A % that starts no escape is named, not guessed at.
            try await server.get("/v1/customers/100%/entitlements").expectError(.badRequest, "invalid_request")
            try await server.get("/v1/customers/%FF%FE/entitlements").expectError(.badRequest, "invalid_request")
        }
    }

    @Test("the README's Node example finds a customer whose id is an email", .requires(.node), arguments: Backend.available)
    func readmeNodeExample(backend: Backend) async throws {
        let node = try #require(Tools.path(of: "node"))
        let readme = try String(contentsOf: Vectors.repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        // The first ```js block after "From a Node backend".
        let after = try #require(readme.range(of: "From a Node backend"), "the README has no Node example")
        let start = try #require(readme.range(of: "```js\n", range: after.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let example = String(readme[start.upperBound..<end.lowerBound])
        let jws = try payloads.transaction(id: "8700", original: "8700", purchase: t0, expires: t0 + 30 * day, signed: t0)
        try await TestServer.run(backend, now: Date(timeIntervalSince1970: Double(t0 + day) / 1000)) { server in
            let stored = try await server.post("/v1/transactions", try body(["signed_transaction": jws, "customer_id": "jane@example.com"]))
            #expect(stored.status == .ok, "\(stored.text)")
            let port = try #require(server.client.port)
            let script = "(async () => { const userId = process.argv[1];\n"
                + example.replacingOccurrences(of: "http://127.0.0.1:8080", with: "http://127.0.0.1:\(port)")
                + "\nconsole.log(JSON.stringify({ status: response.status, premium })); })()"
            let output = try await Tools.run(node, ["-e", script, "jane@example.com"],
                                             environment: ["RECEIPTKIT_API_TOKEN": testToken])
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"status":200,"premium":true}"#, "\(output.text)")
        }
    }

    @Test("a legacy receipt's purchases are stored and linked", arguments: Backend.available)
    func receipt(backend: Backend) async throws {
        let request = try JSONSerialization.jsonObject(with: Data(try Vectors.bytes("receipts/receipt-request-body.json")))
        let base64 = try #require((request as? [String: Any])?["receipt-data"] as? String)
        try await TestServer.run(backend) { server in
            let answer = try await server.post("/v1/transactions", try body(["receipt_data": base64, "customer_id": "legacy-1"]))
            #expect(answer.status == .ok, "\(answer.text)")
            let json = try answer.json()
            #expect((json["record"] as? [String: Any])?["kind"] as? String == "receipt")
            let states = try #require(json["subscriptions"] as? [[String: Any]])
            #expect(!states.isEmpty)
        }
    }

    @Test("bad bodies get a specific 400, and nothing is stored", arguments: Backend.available)
    func badBodies(backend: Backend) async throws {
        let jws = try payloads.transaction(id: "8201", original: "8201", purchase: t0, expires: t0 + 30 * day, signed: t0, token: "t")
        var bytes = Array(jws.utf8)
        bytes[bytes.count - 5] = bytes[bytes.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let tampered = bytes
        try await TestServer.run(backend) { server in
            try await server.post("/v1/transactions", "not json").expectError(.badRequest, "invalid_request")
            try await server.post("/v1/transactions", "{}").expectError(.badRequest, "invalid_request")
            try await server.post("/v1/transactions", try body(["signed_transaction": 5])).expectError(.badRequest, "invalid_request")
            try await server.post("/v1/transactions", try body(["signed_transaction": jws, "receipt_data": "AAAA"]))
                .expectError(.badRequest, "invalid_request")
            try await server.post("/v1/transactions", try body(["signed_transaction": jws, "customer_id": ""]))
                .expectError(.badRequest, "invalid_request")
            try await server.post("/v1/transactions", try body(["signed_transaction": String(decoding: tampered, as: UTF8.self)]))
                .expectError(.badRequest, "invalid_signature")
            try await server.post("/v1/transactions", try body(["signed_transaction": "a.b"]))
                .expectError(.badRequest, "malformed_jws")
            try await server.post("/v1/transactions", try body(["receipt_data": "bm90IGEgcmVjZWlwdA=="]))
                .expectError(.badRequest, "malformed_receipt")
            // A member twice: refused, the member named, whichever copy would have won.
            let twice = #"{"customer_id":"a","signed_transaction":"\#(jws)","customer_id":"b"}"#
            let duplicate = try await server.post("/v1/transactions", twice)
            try duplicate.expectError(.badRequest, "invalid_request")
            #expect(duplicate.text.contains("duplicate") && duplicate.text.contains("customer_id"), "\(duplicate.text)")
            try await server.post("/v1/transactions", try body(["signed_transaction": jws, "customer_id": 42]))
                .expectError(.badRequest, "invalid_request")
            let oversized = try body(["receipt_data": String(repeating: "A", count: 1_500_000)])
            try await server.post("/v1/transactions", oversized).expectError(.contentTooLarge, "input_too_large")
            try await server.withStore { store async throws in
                #expect(try await store.inputCount(dedupKeys: nil) == 0)
            }
        }
    }
}
