import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// Asking Apple for several apps in both environments: the App Store Server API run as two fakes,
/// one per environment (each a real HTTP server on loopback checking every token's `bid`), the
/// server reaching each environment at its own URL.
@Suite("several apps and both environments at Apple: purchase by id asks Production, then Sandbox; a reconcile cursor per app and environment")
struct SeveralAppsAppleTests {
    static let mac = "com.receiptkit.mac"
    static let macAppleId: Int64 = 1_234_567_891

    /// The test app and its Mac app, in Production and Sandbox.
    static let twoApps = Vectors.environment.merging([
        "RECEIPTKIT_BUNDLE_ID": "", "RECEIPTKIT_APP_APPLE_ID": "", "RECEIPTKIT_ENVIRONMENT": "",
        "RECEIPTKIT_APPS": "\(AppleFake.bundleId):1234567890,\(mac):\(macAppleId)",
        "RECEIPTKIT_ENVIRONMENTS": "Production,Sandbox",
    ]) { $1 }

    /// A port on loopback where nothing listens: an environment whose API is down.
    static let stopped = "http://127.0.0.1:1"

    static func settings(production: String, sandbox: String) throws -> AppStoreAPISettings {
        var settings = try AppleFake.settings(production)
        settings.baseURLs = [.production: production, .sandbox: sandbox]
        return settings
    }

    static func body(_ members: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: members), as: UTF8.self)
    }

    /// `AppleFake.subscription` bought in `bundleId`.
    static func subscription(_ original: Int64, renewals: Int, in bundleId: String) -> [FakeAppStoreServerAPI.Transaction] {
        AppleFake.subscription(original: original, renewals: renewals).map { transaction in
            var transaction = transaction
            transaction.bundleId = bundleId == AppleFake.bundleId ? nil : bundleId
            return transaction
        }
    }

    @Test("a purchase only the Sandbox API knows, reported by id with no environment: Production asked once, then Sandbox; stored once; entitled",
          arguments: Backend.available)
    func sandboxOnlyPurchase(backend: Backend) async throws {
        let transactions = AppleFake.subscription(original: 6_000_000_100, renewals: 3)
        let production = try AppleFake.fake([], environment: "Production")
        let sandbox = try AppleFake.fake(transactions, environment: "Sandbox")
        let deployment = Vectors.environment.merging(["RECEIPTKIT_ENVIRONMENT": "Production"]) { $1 }
        try await production.run { productionURL in
            try await sandbox.run { sandboxURL in
                let settings = try Self.settings(production: productionURL, sandbox: sandboxURL)
                try await TestServer.run(backend, environment: deployment, now: AppleFake.now, configure: { $0.appStoreAPI = settings }) { server in
                    let id = try #require(transactions.last?.transactionId)
                    let answer = try await server.post("/v1/transactions", Self.body(["transaction_id": id, "customer_id": "tester"]))
                    #expect(answer.status == .ok, "\(answer.text)")
                    let json = try answer.json()
                    #expect(json["entitled"] as? Bool == true)
                    #expect(json["duplicate"] as? Bool == false)
                    let line = try #require((json["subscriptions"] as? [[String: Any]])?.first)
                    #expect(line["environment"] as? String == "Sandbox")
                    #expect(line["original_transaction_id"] as? String == "6000000100")

                    // Production once (it knows no such transaction), then Sandbox; every token
                    // for the app, accepted.
                    #expect(production.requests.map(\.path) == ["/inApps/v2/history/\(id)"])
                    #expect(!sandbox.requests(to: "/inApps/v2/history/\(id)").isEmpty)
                    for request in production.requests + sandbox.requests {
                        #expect(request.authorizationFailure == nil, "\(request.path)")
                        #expect(request.claims["bid"] == AppleFake.bundleId, "\(request.path)")
                    }

                    // Stored once: each transaction and the renewal info; a second report is a replay.
                    try await server.withStore { store in
                        let count = try await store.inputCount(dedupKeys: nil)
                        #expect(count == transactions.count + 1)
                    }
                    let again = try await server.post("/v1/transactions", Self.body(["transaction_id": id, "customer_id": "tester"]))
                    #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")
                    try await server.withStore { store in
                        let count = try await store.inputCount(dedupKeys: nil)
                        #expect(count == transactions.count + 1)
                    }
                    let entitlements = try await server.get("/v1/customers/tester/entitlements").json()
                    #expect(entitlements["entitled"] as? Bool == true, "\(entitlements)")
                }
            }
        }
    }

    /// An app and environment, and what Apple knows of it.
    struct Pair: Sendable {
        let bundleId: String
        let environment: String
        let transactions: [FakeAppStoreServerAPI.Transaction]

        init(_ bundleId: String, _ environment: String, _ transactions: [FakeAppStoreServerAPI.Transaction]) {
            (self.bundleId, self.environment, self.transactions) = (bundleId, environment, transactions)
        }
    }

    /// A reconcile answer's line for each pair, by "bundle environment".
    static func byPair(_ report: [String: Any]) throws -> [String: [String: Any]] {
        let lines = try #require(report["pairs"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: lines.map { ("\($0["bundle_id"] as? String ?? "?") \($0["environment"] as? String ?? "?")", $0) })
    }

    /// The status of the pair's subscription, `nil` when it is not stored.
    static func status(_ server: TestServer, _ pair: Pair) async throws -> String? {
        let id = try #require(pair.transactions.first?.originalTransactionId)
        let answer = try await server.get("/v1/subscriptions/\(id)?bundle_id=\(pair.bundleId)&environment=\(pair.environment)")
        return answer.status == .ok ? try answer.json()["status"] as? String : nil
    }

    @Test("2 apps × 2 environments: a reconcile recovers each pair's missed notifications, four cursors; Sandbox's API down holds back neither Production pair, and is caught up later",
          arguments: Backend.available)
    func reconcileEveryPair(backend: Backend) async throws {
        let phone = AppleFake.bundleId
        let pairs: [Pair] = [
            Pair(phone, "Production", Self.subscription(6_000_001_000, renewals: 2, in: phone)),
            Pair(Self.mac, "Production", Self.subscription(6_000_002_000, renewals: 3, in: Self.mac)),
            Pair(phone, "Sandbox", Self.subscription(6_000_003_000, renewals: 1, in: phone)),
            Pair(Self.mac, "Sandbox", Self.subscription(6_000_004_000, renewals: 2, in: Self.mac)),
        ]
        func transactions(in environment: String) -> [FakeAppStoreServerAPI.Transaction] {
            pairs.filter { $0.environment == environment }.flatMap(\.transactions)
        }
        let production = try AppleFake.fake(transactions(in: "Production"), environment: "Production", otherApps: [Self.mac: Self.macAppleId])
        let sandbox = try AppleFake.fake(transactions(in: "Sandbox"), environment: "Sandbox", otherApps: [Self.mac: Self.macAppleId])

        try await backend.withDatabase { location, searchPath in
            try await production.run { productionURL in
                // Sandbox's API down: both Production pairs recover theirs, both Sandbox pairs fail
                // with their cursors not set.
                // Connections refused are retried until the request's timeout: short ones here.
                var down = try Self.settings(production: productionURL, sandbox: Self.stopped)
                down.retry = .init(
                    maximumAttempts: 2, overallTimeout: .seconds(4), requestTimeout: .seconds(1), initialBackoff: .milliseconds(10),
                    maximumBackoff: .milliseconds(20))
                try await TestServer.serve(
                    location: location, searchPath: searchPath, environment: Self.twoApps, clock: { AppleFake.now },
                    configure: { $0.appStoreAPI = down }
                ) { server in
                    let answer = try await server.post("/v1/reconcile", "")
                    #expect(answer.status == .ok, "\(answer.text)")
                    let report = try Self.byPair(answer.json())
                    #expect(report.count == 4)
                    for pair in pairs {
                        let line = try #require(report["\(pair.bundleId) \(pair.environment)"])
                        if pair.environment == "Production" {
                            #expect(line["recovered"] as? Int == pair.transactions.count, "\(line)")
                            #expect(try await Self.status(server, pair) == "active")
                        } else {
                            #expect((line["error"] as? [String: Any])?["code"] as? String == "apple_unavailable", "\(line)")
                            #expect(try await Self.status(server, pair) == nil)
                        }
                    }
                    try await server.withStore { store in
                        let cursors = try await store.reconcileCursors()
                        let set = cursors.filter { $0.position != nil }.map { "\($0.bundleId) \($0.environment)" }.sorted()
                        #expect(set == ["\(phone) Production", "\(Self.mac) Production"], "\(cursors)")
                    }
                }

                // Sandbox back: its pairs catch up from their own start; Production's cursors
                // moved, so nothing is recovered twice.
                try await sandbox.run { sandboxURL in
                    let up = try Self.settings(production: productionURL, sandbox: sandboxURL)
                    try await TestServer.serve(
                        location: location, searchPath: searchPath, environment: Self.twoApps, clock: { AppleFake.now },
                        configure: { $0.appStoreAPI = up }
                    ) { server in
                        let answer = try await server.post("/v1/reconcile", "")
                        #expect(answer.status == .ok, "\(answer.text)")
                        let report = try Self.byPair(answer.json())
                        for pair in pairs {
                            let line = try #require(report["\(pair.bundleId) \(pair.environment)"])
                            #expect(line["error"] as? [String: Any] == nil, "\(line)")
                            #expect(line["recovered"] as? Int == (pair.environment == "Sandbox" ? pair.transactions.count : 0), "\(line)")
                            #expect(try await Self.status(server, pair) == "active")
                        }
                        try await server.withStore { store in
                            let cursors = try await store.reconcileCursors()
                            #expect(cursors.count == 4, "\(cursors)")
                            #expect(cursors.allSatisfy { $0.position != nil }, "\(cursors)")
                            let stored = try await store.inputCount(dedupKeys: nil)
                            #expect(stored == pairs.reduce(0) { $0 + $1.transactions.count })
                        }
                    }
                }
            }
            // Every token named the app it asked for, and each fake answered for its own apps only.
            for request in production.requests + sandbox.requests {
                #expect(request.authorizationFailure == nil, "\(request.path)")
                #expect([phone, Self.mac].contains(request.claims["bid"] ?? ""), "\(request.claims)")
            }
        }
    }
}
