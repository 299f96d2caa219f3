import AppStoreServerAPI
import AppStoreServerAPIFake
import Foundation
import ReceiptKit
import Synchronization
import Testing

/// The set-up every test shares: an In-App Purchase key made for the run, the fake App Store
/// Server API signing with the project's test PKI (`TestVectors/pki`), and a verifier that trusts
/// the test root, at the signed date of what the fake signs.
enum Fixture {
    static let keyId = "TESTKEY123"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundleId = "com.receiptkit.example"
    /// 2026-06-01T00:00:00Z: the `signedDate` of everything the fake signs (the test leaf is
    /// valid 2024–2027), so chains are validated at a fixed instant.
    static let signedDate: Int64 = 1_780_272_000_000

    /// The repository's root: this file is `Server/Tests/AppStoreServerAPITests/Support/Fixture.swift`.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func testVector(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: repositoryRoot.appendingPathComponent("TestVectors").appendingPathComponent(name)))
    }

    static func testVectorPath(_ name: String) -> String {
        repositoryRoot.appendingPathComponent("TestVectors").appendingPathComponent(name).path
    }

    /// A directory of this run's files: the `.p8` key, the command's request files.
    static let directory = TestKeyFile.directory(label: "appstore-api-tests")

    /// A new P-256 In-App Purchase key for this run (a `.p8` file).
    static let keyFile: Result<String, any Error> = Result { try TestKeyFile.make(keyId: keyId, label: "appstore-api-tests") }

    static func key() throws -> InAppPurchaseKey {
        let pem = try String(contentsOfFile: keyFile.get(), encoding: .utf8)
        return try InAppPurchaseKey(keyId: keyId, issuerId: issuerId, privateKeyPEM: pem)
    }

    static func verifier() throws -> AppStoreVerifier {
        AppStoreVerifier(.init(
            anchors: try TrustAnchors(rootCertificates: [testVector("pki/root.der")]), bundleId: bundleId,
            environment: .sandbox))
    }

    /// The customer: a monthly subscription renewed 40 times (the last one active at the signed
    /// date, one renewal refunded), and five one-time purchases: 45 transactions, three pages.
    static func transactions() -> [FakeAppStoreServerAPI.Transaction] {
        let day: Int64 = 86_400_000
        let month: Int64 = 30 * day
        let first: Int64 = signedDate - 40 * month + day
        var transactions: [FakeAppStoreServerAPI.Transaction] = []
        for index in 0..<40 {
            let start: Int64 = first + Int64(index) * month
            let revoked: Int64? = index == 12 ? start + day : nil
            transactions.append(FakeAppStoreServerAPI.Transaction(
                transactionId: String(2_000_000_100 + index), originalTransactionId: "2000000100",
                productId: "com.receiptkit.monthly", type: "Auto-Renewable Subscription",
                subscriptionGroupIdentifier: "21000001", purchaseDate: start, expiresDate: start + month, revocationDate: revoked))
        }
        for index in 0..<5 {
            let id = String(2_000_000_200 + index)
            let purchased: Int64 = first + Int64(index) * day
            transactions.append(FakeAppStoreServerAPI.Transaction(
                transactionId: id, originalTransactionId: id, productId: "com.receiptkit.pack\(index)", type: "Non-Consumable",
                purchaseDate: purchased))
        }
        return transactions
    }

    /// A fake serving ``transactions()``, playing `environment` (`Sandbox` or `Production`).
    static func fake(environment: String = "Sandbox", clock: @escaping @Sendable () -> Date = { Date() }) throws -> FakeAppStoreServerAPI {
        let signer = FakeAppStoreServerAPI.Signer(
            key: try ES256SigningKey(pemBytes: testVector("pki/leaf.key")),
            chain: try ["pki/leaf.der", "pki/intermediate.der", "pki/root.der"].map(testVector))
        let forger = FakeAppStoreServerAPI.Signer(key: try ES256SigningKey(pemBytes: testVector("pki/other-leaf.key")), chain: signer.chain)
        let fake = FakeAppStoreServerAPI(
            credentials: .init(keyId: keyId, issuerId: issuerId, bundleId: bundleId, publicKey: try key().signingKey.publicKey),
            signer: signer, forger: forger, environment: environment, signedDate: signedDate, clock: clock)
        fake.transactions = transactions()
        return fake
    }

    /// A retry policy for tests: quick back-off, short timeouts.
    static let quickRetry = AppStoreServerAPIClient.RetryPolicy(
        maximumAttempts: 3, overallTimeout: .seconds(10), requestTimeout: .seconds(5), initialBackoff: .milliseconds(10),
        maximumBackoff: .milliseconds(40))

    static func client(
        _ baseURL: String, key: InAppPurchaseKey? = nil, retry: AppStoreServerAPIClient.RetryPolicy = quickRetry,
        maximumResponseSize: Int = 8 << 20, clock: @escaping @Sendable () -> Date = { Date() }
    ) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(
            configuration: .init(
                key: key ?? Fixture.key(), bundleId: bundleId, environment: .sandbox, baseURL: baseURL, retry: retry,
                maximumResponseSize: maximumResponseSize),
            verifier: verifier(), clock: clock)
    }

    /// Runs `body` with a fake serving ``transactions()`` and a client of it.
    static func withFake<Result: Sendable>(
        configure: (FakeAppStoreServerAPI) -> Void = { _ in },
        _ body: @Sendable (FakeAppStoreServerAPI, AppStoreServerAPIClient) async throws -> Result
    ) async throws -> Result {
        let fake = try fake()
        configure(fake)
        return try await fake.run { baseURL in
            try await body(fake, try client(baseURL))
        }
    }
}

/// A clock tests move by hand.
final class ManualClock: Sendable {
    private let now: Mutex<Date>

    init(_ start: Date) {
        now = Mutex(start)
    }

    func read() -> Date { now.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        now.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
