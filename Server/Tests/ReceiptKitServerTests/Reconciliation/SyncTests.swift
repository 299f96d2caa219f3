import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("POST /v1/subscriptions/{id}/sync and /v1/customers/{id}/sync: backfill and refresh from the stored revision token")
struct SyncTests {
    @Test("a subscriber from before the service existed, backfilled; a second sync fetches only what is new",
          arguments: Backend.available)
    func backfill(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 4_000_000_100, renewals: 5)
        let fake = try AppleFake.fake(transactions)
        fake.pageSize = 2
        try await AppleFake.withServer(backend, fake: fake) { server in
            try await server.get("/v1/subscriptions/4000000100").expectError(.notFound, "not_found")
            let synced = try await server.post("/v1/subscriptions/4000000100/sync", "")
            #expect(synced.status == .ok, "\(synced.text)")
            let state = try synced.json()
            #expect(state["original_transaction_id"] as? String == "4000000100")
            #expect(state["status"] as? String == "active")
            #expect(state["latest_transaction_id"] as? String == transactions.last?.transactionId)
            let firstPages = fake.requests(to: "/inApps/v2/history/4000000100")
            #expect(firstPages.map { $0.queryValues("revision") } == [[], ["r2"], ["r4"]])
            let stored = try await server.get("/v1/subscriptions/4000000100").json()
            #expect(stored["latest_transaction_id"] as? String == transactions.last?.transactionId)
            try await server.withStore { store in
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == transactions.count + 1)  // and the renewal info
            }

            // Nothing new at Apple: one request from the stored token, nothing stored.
            _ = try await server.post("/v1/subscriptions/4000000100/sync", "")
            #expect(fake.requests(to: "/inApps/v2/history/4000000100").last?.queryValues("revision") == ["r\(transactions.count)"])
            try await server.withStore { store in
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == transactions.count + 1)
            }
        }
    }

    @Test("a customer's sync refreshes each linked key: a renewal and a refund since the purchase are folded",
          arguments: Backend.available)
    func customerSync(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 4_000_000_200, renewals: 2)
        let fake = try AppleFake.fake(transactions)
        try await AppleFake.withServer(backend, fake: fake) { server in
            let body = #"{"transaction_id": "4000000201", "customer_id": "cust-sync"}"#
            #expect(try await server.post("/v1/transactions", body).status == .ok)
            try await server.post("/v1/customers/nobody/sync", "").expectError(.notFound, "not_found")
            // At Apple, the latest renewal is refunded.
            var changed = transactions
            changed[changed.count - 1].revocationDate = AppleFake.signedDate - AppleFake.day
            fake.transactions = changed
            fake.signedDate += 60_000  // signed again: a new copy
            let answer = try await server.post("/v1/customers/cust-sync/sync", "")
            #expect(answer.status == .ok, "\(answer.text)")
            let states = try #require(try answer.json()["subscriptions"] as? [[String: Any]])
            #expect(states.first?["status"] as? String == "revoked", "\(states)")
            #expect(try answer.json()["entitled"] as? Bool == false)
        }
    }

    @Test("Apple signs every answer anew: syncs in a row store nothing new; a changed auto-renew status, a refund and a renewal are stored",
          arguments: Backend.available)
    func signedAgain(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 4_000_000_500, renewals: 3)
        let fake = try AppleFake.fake(transactions)
        try await AppleFake.withServer(backend, fake: fake) { server in
            func counts() async throws -> (events: Int, rows: Int) {
                var events = 0
                try await server.withStore { store in events = try await store.inputCount(dedupKeys: nil) }
                let rows = try await backend.copyRows(location: server.location, searchPath: server.searchPath)
                return (events, rows.transactions.count + rows.renewalInfos.count)
            }
            func sync() async throws -> [String: Any] {
                let answer = try await server.post("/v1/subscriptions/4000000500/sync", "")
                #expect(answer.status == .ok, "\(answer.text)")
                return try answer.json()
            }
            _ = try await sync()
            let backfilled = try await counts()
            #expect(backfilled.events == transactions.count + 1)

            // Signed again, twice: no event; the second time not a row either, and the state's
            // last_signed_date is Apple's latest signing.
            fake.signedDate += 60_000
            #expect(try await sync()["last_signed_date"] as? String == Timestamp(millisecondsSince1970: fake.signedDate).iso8601)
            let second = try await counts()
            #expect(second.events == backfilled.events)
            fake.signedDate += 60_000
            let third = try await sync()
            #expect(third["last_signed_date"] as? String == Timestamp(millisecondsSince1970: fake.signedDate).iso8601)
            #expect(third["status"] as? String == "active" && third["will_renew"] as? Bool == true)
            #expect(try await counts() == second)

            // The whole history by id, signed again twice: nothing stored, a duplicate.
            for _ in 0..<2 {
                fake.signedDate += 60_000
                let again = try await server.post("/v1/transactions", #"{"transaction_id": "4000000500", "customer_id": "c"}"#)
                #expect(again.status == .ok, "\(again.text)")
                #expect(try again.json()["duplicate"] as? Bool == true)
                #expect(try await counts().events == backfilled.events)
            }
            let rowsAfterHistory = try await counts().rows
            fake.signedDate += 60_000
            _ = try await server.post("/v1/transactions", #"{"transaction_id": "4000000500", "customer_id": "c"}"#)
            #expect(try await counts().rows == rowsAfterHistory)

            // Renewal turned off at Apple: the renewal info is new.
            let last = try #require(transactions.last)
            fake.renewalInfos = ["4000000500": .init(
                originalTransactionId: "4000000500", productId: last.productId, autoRenewStatus: 0, renewalDate: last.expiresDate)]
            fake.signedDate += 60_000
            #expect(try await sync()["will_renew"] as? Bool == false)
            #expect(try await counts().events == backfilled.events + 1)

            // Refunded: the latest transaction, revoked, is new.
            var refunded = transactions
            refunded[refunded.count - 1].revocationDate = fake.signedDate
            fake.transactions = refunded
            fake.signedDate += 60_000
            #expect(try await sync()["status"] as? String == "revoked")
            #expect(try await counts().events == backfilled.events + 2)

            // Renewed: a new transaction, and renewal info with its renewal date.
            let renewal = FakeAppStoreServerAPI.Transaction(
                transactionId: "4000000599", originalTransactionId: "4000000500", productId: last.productId, type: last.type,
                subscriptionGroupIdentifier: last.subscriptionGroupIdentifier, purchaseDate: fake.signedDate,
                expiresDate: fake.signedDate + AppleFake.month)
            fake.transactions = refunded + [renewal]
            fake.renewalInfos = ["4000000500": .init(
                originalTransactionId: "4000000500", productId: last.productId, renewalDate: renewal.expiresDate)]
            fake.signedDate += 60_000
            let renewed = try await sync()
            #expect(renewed["status"] as? String == "active" && renewed["latest_transaction_id"] as? String == "4000000599", "\(renewed)")
            #expect(try await counts().events == backfilled.events + 4)
        }
    }

    @Test("an item that did not verify keeps the revision token where it was: the next sync reads it again",
          arguments: Backend.available)
    func rejectedKeepsRevision(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 4_000_000_400, renewals: 3)
        let fake = try AppleFake.fake(transactions)
        fake.forgedTransactionIds = [transactions[0].transactionId]
        try await AppleFake.withServer(backend, fake: fake) { server in
            #expect(try await server.post("/v1/subscriptions/4000000400/sync", "").status == .ok)
            fake.forgedTransactionIds = []
            #expect(try await server.post("/v1/subscriptions/4000000400/sync", "").status == .ok)
            let history = fake.requests(to: "/inApps/v2/history/4000000400")
            #expect(history.map { $0.queryValues("revision") } == [[], []])
            #expect(try await server.post("/v1/subscriptions/4000000400/sync", "").status == .ok)
            #expect(fake.requests(to: "/inApps/v2/history/4000000400").last?.queryValues("revision") == ["r\(transactions.count)"])
            try await server.withStore { store in
                let forged = try await store.inputCount(dedupKeys: ["transaction:com.receiptkit.example:Sandbox:\(transactions[0].transactionId):\(AppleFake.signedDate)"])
                #expect(forged == 1)  // stored once it verified
            }
        }
    }

    @Test("sync routes: 400 for an id that is not a transaction id, 404 for one Apple does not know, 409 when off")
    func refusals() async throws {
        let fake = try AppleFake.fake(AppleFake.subscription(original: 4_000_000_300, renewals: 1))
        try await AppleFake.withServer(.sqlite, fake: fake) { server in
            try await server.post("/v1/subscriptions/abc/sync", "").expectError(.badRequest, "invalid_request")
            try await server.post("/v1/subscriptions/4999999999/sync", "").expectError(.notFound, "transaction_not_found")
        }
        try await TestServer.run(.sqlite) { server in
            try await server.post("/v1/subscriptions/4000000300/sync", "").expectError(.conflict, "reconciliation_off")
            try await server.post("/v1/customers/c/sync", "").expectError(.conflict, "reconciliation_off")
            try await server.post("/v1/reconcile", "").expectError(.conflict, "reconciliation_off")
        }
    }
}
