import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("POST /v1/transactions {transaction_id}: the customer's history and statuses from Apple")
struct PurchaseByIdTests {
    static func body(_ members: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: members), as: UTF8.self)
    }

    @Test("a purchase reported by id: every history page fetched, verified, stored once, linked; a second report is a replay",
          arguments: Backend.available)
    func purchaseById(backend: Backend) async throws {
        // 40 renewals, one refunded, and 5 one-time purchases: 45 transactions, three pages of 20.
        let transactions = AppleFake.subscription(original: 2_000_000_100, renewals: 40, refunded: [12]) + (0..<5).map { index in
            let id = String(2_000_000_200 + index)
            return FakeAppStoreServerAPI.Transaction(
                transactionId: id, originalTransactionId: id, productId: "com.receiptkit.pack\(index)", type: "Non-Consumable",
                purchaseDate: AppleFake.signedDate - 90 * AppleFake.day)
        }
        let fake = try AppleFake.fake(transactions)
        let pages = (transactions.count + fake.pageSize - 1) / fake.pageSize
        try await AppleFake.withServer(backend, fake: fake) { server in
            let latest = try #require(transactions.first { $0.transactionId == "2000000139" })
            let answer = try await server.post("/v1/transactions", Self.body(["transaction_id": "2000000139", "customer_id": "cust-apple"]))
            #expect(answer.status == .ok, "\(answer.text)")
            let json = try answer.json()
            #expect(json["customer_id"] as? String == "cust-apple")
            #expect(json["duplicate"] as? Bool == false)
            #expect(json["entitled"] as? Bool == true)
            let record = try #require(json["record"] as? [String: Any])
            #expect(record["kind"] as? String == "transaction")
            let states = try #require(json["subscriptions"] as? [[String: Any]])
            let originals = Set(transactions.map(\.originalTransactionId))
            #expect(Set(states.compactMap { $0["original_transaction_id"] as? String }) == originals)
            let subscription = try #require(states.first { $0["original_transaction_id"] as? String == latest.originalTransactionId })
            #expect(subscription["status"] as? String == "active", "\(subscription)")

            // Every page of the history, then the statuses; the token Apple's API checks.
            #expect(fake.requests(to: "/inApps/v2/history/2000000139").count == pages)
            #expect(fake.requests(to: "/inApps/v1/subscriptions/2000000139").count == 1)
            #expect(fake.requests.allSatisfy { $0.authorizationFailure == nil })

            // One event per transaction (the statuses' latest transaction is the history's
            // copy, a replay) and one for the renewal info.
            try await server.withStore { store in
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == transactions.count + 1)
            }
            let again = try await server.post("/v1/transactions", Self.body(["transaction_id": "2000000100", "customer_id": "cust-apple"]))
            #expect(again.status == .ok, "\(again.text)")
            #expect(try again.json()["duplicate"] as? Bool == true)
            try await server.withStore { store in
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == transactions.count + 1)
            }
            let byCustomer = try await server.get("/v1/customers/cust-apple/entitlements").json()
            #expect((byCustomer["subscriptions"] as? [Any])?.count == originals.count)
        }
    }

    @Test("an id Apple does not know is 404 transaction_not_found; an id that is not one is 400 before Apple is asked",
          arguments: Backend.available)
    func unknown(backend: Backend) async throws {
        let fake = try AppleFake.fake(AppleFake.subscription(original: 3_000_000_100, renewals: 2))
        try await AppleFake.withServer(backend, fake: fake) { server in
            try await server.post("/v1/transactions", Self.body(["transaction_id": "3999999999", "customer_id": "c"]))
                .expectError(.notFound, "transaction_not_found")
            let asked = fake.requests.count
            try await server.post("/v1/transactions", Self.body(["transaction_id": "12ab", "customer_id": "c"]))
                .expectError(.badRequest, "invalid_request")
            try await server.post(
                "/v1/transactions", Self.body(["transaction_id": "3000000100", "signed_transaction": "x.y.z", "customer_id": "c"])
            ).expectError(.badRequest, "invalid_request")
            #expect(fake.requests.count == asked)
            try await server.withStore { store in
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == 0)
            }
        }
    }

    @Test("429 with Retry-After and 500 from Apple are retried; Apple failing every attempt is 503 with Retry-After, nothing stored",
          arguments: Backend.available)
    func unavailable(backend: Backend) async throws {
        let fake = try AppleFake.fake(AppleFake.subscription(original: 3_000_000_200, renewals: 3))
        try await AppleFake.withServer(backend, fake: fake) { server in
            fake.enqueue(.status(429, retryAfter: "1"), path: "/inApps/v2/history")
            fake.enqueue(.status(500), path: "/inApps/v1/subscriptions")
            let started = ContinuousClock.now
            let retried = try await server.post("/v1/transactions", Self.body(["transaction_id": "3000000202", "customer_id": "c"]))
            #expect(retried.status == .ok, "\(retried.text)")
            #expect(ContinuousClock.now - started >= .seconds(1), "the 429's Retry-After: 1 was not waited out")
            #expect(fake.requests(to: "/inApps/v2/history").count == 2)
            #expect(fake.requests(to: "/inApps/v1/subscriptions").count == 2)

            for _ in 0..<AppleFake.quickRetry.maximumAttempts {
                fake.enqueue(.status(429, retryAfter: "2"), path: "/inApps/v2/history")
            }
            let limited = try await server.post("/v1/transactions", Self.body(["transaction_id": "3000000202", "customer_id": "d"]))
            try limited.expectError(.serviceUnavailable, "apple_unavailable")
            #expect(limited.headers[.retryAfter] == "2")

            for _ in 0..<AppleFake.quickRetry.maximumAttempts {
                fake.enqueue(.status(500), path: "/inApps/v2/history")
            }
            let failing = try await server.post("/v1/transactions", Self.body(["transaction_id": "3000000202", "customer_id": "e"]))
            try failing.expectError(.serviceUnavailable, "apple_unavailable")
            #expect(Int(failing.headers[.retryAfter] ?? "") ?? 0 > 0)
            let unlinked = try await server.get("/v1/customers/e/entitlements").json()
            #expect((unlinked["subscriptions"] as? [Any])?.isEmpty == true)

            // Each call counted by endpoint, Apple's HTTP status (of its last attempt) and outcome.
            let metrics = try await server.get("/metrics", token: nil).text
            for line in [
                #"receiptkit_appstore_api_calls_total{endpoint="transaction_history",status="200",result="ok",bundle_id="com.receiptkit.example",environment="Sandbox"} 1"#,
                #"receiptkit_appstore_api_calls_total{endpoint="transaction_history",status="429",result="rate_limited",bundle_id="com.receiptkit.example",environment="Sandbox"} 1"#,
                #"receiptkit_appstore_api_calls_total{endpoint="transaction_history",status="500",result="server_error",bundle_id="com.receiptkit.example",environment="Sandbox"} 1"#,
                #"receiptkit_appstore_api_calls_total{endpoint="subscription_statuses",status="200",result="ok",bundle_id="com.receiptkit.example",environment="Sandbox"} 1"#,
            ] {
                #expect(metrics.contains(line), "\(line) in:\n\(metrics)")
            }
        }
    }

    @Test("Apple unreachable: 503 apple_unavailable, the call counted with status none; /readyz still 200")
    func unreachable() async throws {
        // Nothing listens on port 1 of the loopback: no attempt gets an answer (the HTTP client
        // tries to connect until the request's deadline).
        let retry = AppStoreServerAPIClient.RetryPolicy(
            maximumAttempts: 2, overallTimeout: .seconds(2), requestTimeout: .milliseconds(500), initialBackoff: .milliseconds(10),
            maximumBackoff: .milliseconds(20))
        let settings = AppStoreAPISettings(
            key: try AppleFake.key(), baseURLs: [.sandbox: "http://127.0.0.1:1"], retry: retry, reconcileInterval: nil)
        try await TestServer.run(.sqlite, configure: { $0.appStoreAPI = settings }) { server in
            try await server.post("/v1/transactions", Self.body(["transaction_id": "3000000202", "customer_id": "c"]))
                .expectError(.serviceUnavailable, "apple_unavailable")
            let metrics = try await server.get("/metrics", token: nil).text
            // The outcome is the client's (a refused connection or the deadline); the status is none.
            let counted = metrics.split(separator: "\n").filter {
                $0.hasPrefix(#"receiptkit_appstore_api_calls_total{endpoint="transaction_history",status="none",result=""#) && $0.hasSuffix("} 1")
            }
            #expect(counted.count == 1, "\(metrics)")
            // Apple unreachable is no reason to take the service out of rotation.
            #expect(try await server.get("/readyz", token: nil).status == .ok)
        }
    }

    @Test("a forged transaction in Apple's answer is not stored, counted by its code; the rest is",
          arguments: Backend.available)
    func forged(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 3_000_000_300, renewals: 4)
        let fake = try AppleFake.fake(transactions)
        let forged = try #require(transactions.last)
        fake.forgedTransactionIds = [forged.transactionId]
        try await AppleFake.withServer(backend, fake: fake) { server in
            let answer = try await server.post("/v1/transactions", Self.body(["transaction_id": "3000000300", "customer_id": "f"]))
            #expect(answer.status == .ok, "\(answer.text)")
            let state = try #require((try answer.json()["subscriptions"] as? [[String: Any]])?.first)
            // The forged last renewal was not folded: the subscription ended with the one before.
            #expect(state["status"] as? String != "active", "\(state)")
            try await server.withStore { store in
                // The forged transaction, and the statuses' item carrying it, left out.
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == transactions.count - 1)
                #expect(try await store.inputCount(dedupKeys: ["transaction:com.receiptkit.example:Sandbox:\(forged.transactionId):\(AppleFake.signedDate)"]) == 0)
            }
            let metrics = try await server.get("/metrics", token: nil).text
            #expect(metrics.contains("receiptkit_reconcile_rejected_total{code=\"invalid_signature\",bundle_id=\"com.receiptkit.example\",environment=\"Sandbox\"} 2"), "\(metrics)")
        }
    }

    @Test("without the App Store Server API configured, transaction_id is 409 reconciliation_off")
    func notConfigured() async throws {
        try await TestServer.run(.sqlite) { server in
            try await server.post("/v1/transactions", Self.body(["transaction_id": "2000000100", "customer_id": "c"]))
                .expectError(.conflict, "reconciliation_off")
        }
    }
}
