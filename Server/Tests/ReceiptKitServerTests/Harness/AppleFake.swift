import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKit
import ReceiptKitServer
import Testing

/// The App Store Server API the reconciliation tests run against: AppStoreServerAPIFake, a real
/// HTTP server on loopback that checks every token against an In-App Purchase key made for this
/// run and signs its answers under the test PKI (`TestVectors/pki`), for the test app of
/// ``Vectors/environment``.
enum AppleFake {
    static let keyId = "TESTKEY123"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundleId = "com.receiptkit.example"
    /// 2026-06-01T00:00:00Z: the `signedDate` of everything the fake signs (the test leaf is
    /// valid 2024–2027).
    static let signedDate: Int64 = 1_780_272_000_000
    /// The servers' clock in these tests: an hour after the signed date.
    static let now = Date(timeIntervalSince1970: Double(signedDate) / 1000 + 3600)
    static let day: Int64 = 86_400_000
    static let month: Int64 = 30 * day

    /// A new P-256 In-App Purchase key for this run (a `.p8` file).
    static let keyFile: Result<String, any Error> = Result { try TestKeyFile.make(keyId: keyId, label: "receiptkit-server-apple") }

    static func key() throws -> InAppPurchaseKey {
        try InAppPurchaseKey(keyId: keyId, issuerId: issuerId, privateKeyPEM: String(contentsOfFile: keyFile.get(), encoding: .utf8))
    }

    /// A monthly subscription `original` renewed `renewals` times, its last period running at
    /// the signed date, `refunded` (by index) revoked a day after it started.
    static func subscription(
        original: Int64, renewals: Int, refunded: Set<Int> = [], product: String = "com.receiptkit.monthly", group: String = "21000001"
    ) -> [FakeAppStoreServerAPI.Transaction] {
        let first = signedDate - Int64(renewals) * month + day
        return (0..<renewals).map { index in
            let start = first + Int64(index) * month
            return FakeAppStoreServerAPI.Transaction(
                transactionId: String(original + Int64(index)), originalTransactionId: String(original), productId: product,
                type: "Auto-Renewable Subscription", subscriptionGroupIdentifier: group, purchaseDate: start,
                expiresDate: start + month, revocationDate: refunded.contains(index) ? start + day : nil)
        }
    }

    /// A fake serving `transactions` in `environment`, its tokens checked at `clock` (``now`` by
    /// default), for the test app and `otherApps` (bundle id: App Apple ID) under the same key.
    static func fake(
        _ transactions: [FakeAppStoreServerAPI.Transaction], environment: String = "Sandbox", otherApps: [String: Int64] = [:],
        clock: @escaping @Sendable () -> Date = { now }
    ) throws -> FakeAppStoreServerAPI {
        let signer = FakeAppStoreServerAPI.Signer(
            key: try ES256SigningKey(pemBytes: Vectors.bytes("pki/leaf.key")),
            chain: try ["pki/leaf.der", "pki/intermediate.der", "pki/root.der"].map(Vectors.bytes))
        let forger = FakeAppStoreServerAPI.Signer(key: try ES256SigningKey(pemBytes: Vectors.bytes("pki/other-leaf.key")), chain: signer.chain)
        let fake = FakeAppStoreServerAPI(
            credentials: .init(
                keyId: keyId, issuerId: issuerId, bundleId: bundleId, otherApps: otherApps, publicKey: try key().signingKey.publicKey),
            signer: signer, forger: forger, environment: environment, signedDate: signedDate, clock: clock)
        fake.transactions = transactions
        return fake
    }

    /// Quick back-off and short timeouts.
    static let quickRetry = AppStoreServerAPIClient.RetryPolicy(
        maximumAttempts: 3, overallTimeout: .seconds(10), requestTimeout: .seconds(5), initialBackoff: .milliseconds(10),
        maximumBackoff: .milliseconds(40))

    /// The settings of a server reaching `baseURL`, reconciling only when asked.
    static func settings(_ baseURL: String) throws -> AppStoreAPISettings {
        AppStoreAPISettings(
            key: try key(), baseURLs: [.production: baseURL, .sandbox: baseURL], retry: quickRetry, reconcileInterval: nil)
    }

    /// Runs `test` with the fake running and a server on `backend` reaching it.
    static func withServer(
        _ backend: Backend, fake: FakeAppStoreServerAPI,
        _ test: @escaping @Sendable (TestServer) async throws -> Void
    ) async throws {
        try await fake.run { baseURL in
            let settings = try settings(baseURL)
            try await TestServer.run(backend, now: now, configure: { $0.appStoreAPI = settings }, test)
        }
    }
}

extension FakeAppStoreServerAPI {
    /// The requests whose path starts with `prefix`.
    func requests(to prefix: String) -> [RecordedRequest] {
        requests.filter { $0.path.hasPrefix(prefix) }
    }
}

extension AppleFake {
    /// Runs `body` on a new database of `backend` with the fake running; `body` starts servers
    /// on that database (``serve(_:location:searchPath:now:_:)``) as it likes — one after the
    /// other (a restart) or side by side (replicas).
    static func withDatabase(
        _ backend: Backend, fake: FakeAppStoreServerAPI,
        _ body: @escaping @Sendable (_ baseURL: String, _ location: DatabaseLocation, _ searchPath: String?) async throws -> Void
    ) async throws {
        try await fake.run { baseURL in
            try await backend.withDatabase { location, searchPath in
                try await body(baseURL, location, searchPath)
            }
        }
    }

    /// A server on `location` reaching the fake at `baseURL`, its clock at `now`, for the time of `test`.
    static func serve(
        _ baseURL: String, location: DatabaseLocation, searchPath: String?, now: Date,
        _ test: @escaping @Sendable (TestServer) async throws -> Void
    ) async throws {
        var configuration = try ServerConfiguration(environment: Vectors.environment.merging(["PORT": "0"]) { $1 })
        configuration.database = location
        configuration.apiToken = testToken
        configuration.appStoreAPI = try settings(baseURL)
        let app = try buildApplication(configuration: configuration, logger: .silent, postgresSearchPath: searchPath, clock: { now })
        try await app.test(.live) { client in
            try await test(TestServer(client: client, location: location, searchPath: searchPath))
        }
    }
}
