import Foundation
import ReceiptKit
import Testing

/// Apple's real, mock and Xcode JWS from `../shared/vectors/jws`, with the outcomes its README
/// states. Skipped when the folder is absent.
@Suite("Apple JWS vectors (../shared/vectors/jws)", .requires(.sharedVectors))
struct AppleJWSVectorTests {
    static let realTransaction = "jws/real/mingos_2025-02-10_transaction_consumable_sandbox.jws"
    static let realRenewalInfo = "jws/real/goiap_2023-05-23_renewalInfo_sandbox.jws"

    static func anchors(_ certificate: String) throws -> TrustAnchors {
        try TrustAnchors(rootCertificates: [Fixtures.sharedVector("certs/\(certificate)")])
    }

    @Test("real transaction verifies under the built-in pin at its signed date, and matches its payload")
    func realTransaction() throws {
        let verified = try AppStoreVerifier().verifyTransaction(Fixtures.sharedVectorText(Self.realTransaction))
        #expect(verified.chain.rootSHA256 == TrustAnchors.appleRootCAG3SHA256)
        #expect(verified.validatedAt.iso8601 == "2025-02-10T04:29:32.561Z")
        let payload = try #require(
            try JSONSerialization.jsonObject(with: Data(Fixtures.sharedVector(
                "jws/real/mingos_2025-02-10_transaction_consumable_sandbox.payload.json"))) as? [String: Any])
        let transaction = NormalizedTransaction(verified.payload)
        #expect(transaction.transactionId == payload["transactionId"] as? String)
        #expect(transaction.productId == payload["productId"] as? String)
        #expect(transaction.productType == "consumable")
        #expect(transaction.price?.milliunits == 230_000)
        #expect(transaction.price?.currency == "JPY")
        #expect(transaction.storefront == "JPN")
        #expect(transaction.purchaseDate?.millisecondsSince1970 == (payload["purchaseDate"] as? NSNumber)?.int64Value)
    }

    @Test("real renewal info verifies at its signed date")
    func realRenewalInfo() throws {
        let verified = try AppStoreVerifier().verifyRenewalInfo(Fixtures.sharedVectorText(Self.realRenewalInfo))
        #expect(verified.payload.originalTransactionId == "2000000335310644")
        #expect(verified.payload.autoRenewStatus == 1)
    }

    @Test("real JWS fail at now: their leaves have expired")
    func realAtNow() throws {
        let now = AppStoreVerifier(.init(validationTime: .now))
        expectRejection(.certificateExpired) { _ = try now.verifyTransaction(Fixtures.sharedVectorText(Self.realTransaction)) }
        expectRejection(.certificateExpired) { _ = try now.verifyRenewalInfo(Fixtures.sharedVectorText(Self.realRenewalInfo)) }
    }

    @Test("real transaction against the wrong claims and the wrong root")
    func realClaims() throws {
        let token = try Fixtures.sharedVectorText(Self.realTransaction)
        expectRejection(.environmentMismatch) {
            _ = try AppStoreVerifier(.init(appAppleId: 1, environment: .production)).verifyTransaction(token)
        }
        expectRejection(.bundleIDMismatch) { _ = try AppStoreVerifier(.init(bundleId: "com.example.other")).verifyTransaction(token) }
        expectRejection(.untrustedRoot) {
            _ = try AppStoreVerifier(.init(anchors: try Self.anchors("AppleTestCA-mock.der"))).verifyTransaction(token)
        }
        // Pinning Apple Root CA - G3 explicitly is the same as the default.
        #expect(throws: Never.self) {
            _ = try AppStoreVerifier(.init(anchors: try TrustAnchors(pinnedSHA256: [TrustAnchors.appleRootCAG3SHA256]))).verifyTransaction(token)
        }
        // So is supplying the G3 certificate file.
        #expect(throws: Never.self) {
            _ = try AppStoreVerifier(.init(anchors: try Self.anchors("AppleRootCA-G3.der"))).verifyTransaction(token)
        }
    }

    @Test("any single changed payload character is rejected")
    func tampered() throws {
        let token = try Fixtures.sharedVectorText(Self.realTransaction)
        let parts = token.split(separator: ".").map(String.init)
        let verifier = AppStoreVerifier()
        var payload = Array(parts[1])
        for index in stride(from: 0, to: payload.count - 1, by: 37) {
            let original = payload[index]
            payload[index] = original == "A" ? "B" : "A"
            let tampered = parts[0] + "." + String(payload) + "." + parts[2]
            #expect(throws: ReceiptKitError.self) { _ = try verifier.verifyTransaction(tampered) }
            payload[index] = original
        }
    }

    @Test("Apple's mock vectors verify under Apple's test CA as a root file")
    func mock() throws {
        let anchors = try Self.anchors("AppleTestCA-mock.der")
        let sandbox = AppStoreVerifier(.init(anchors: anchors, bundleId: "com.example", environment: .sandbox))
        let transaction = try sandbox.verifyTransaction(Fixtures.sharedVectorText("jws/apple-mock/transactionInfo.jws"))
        #expect(transaction.payload.bundleId == "com.example")
        expectRejection(.bundleIDMismatch) {
            _ = try AppStoreVerifier(.init(anchors: anchors, bundleId: "com.example.x"))
                .verifyTransaction(Fixtures.sharedVectorText("jws/apple-mock/transactionInfo.jws"))
        }
        #expect(throws: Never.self) {
            _ = try sandbox.verifyRenewalInfo(Fixtures.sharedVectorText("jws/apple-mock/renewalInfo.jws"))
        }
        let notification = try sandbox.verifyNotification(Fixtures.sharedVectorText("jws/apple-mock/testNotification.jws"))
        #expect(notification.notification.payload.rawNotificationType == "TEST")
        let production = AppStoreVerifier(.init(anchors: anchors, bundleId: "com.example", appAppleId: 1234, environment: .production))
        expectRejection(.environmentMismatch) {
            _ = try production.verifyNotification(Fixtures.sharedVectorText("jws/apple-mock/testNotification.jws"))
        }
        let wrongApp = AppStoreVerifier(.init(anchors: anchors, bundleId: "com.example", appAppleId: 1235, environment: .production))
        expectRejection(.appAppleIDMismatch) {
            _ = try wrongApp.verifyNotification(Fixtures.sharedVectorText("jws/apple-mock/testNotification.jws"))
        }
        expectRejection(.bundleIDMismatch) {
            _ = try AppStoreVerifier(.init(anchors: anchors, bundleId: "com.example"))
                .verifyNotification(Fixtures.sharedVectorText("jws/apple-mock/wrongBundleId.jws"))
        }
        expectRejection(.missingCertificateChain) {
            _ = try AppStoreVerifier(.init(anchors: anchors))
                .verifyNotification(Fixtures.sharedVectorText("jws/apple-mock/missingX5CHeaderClaim.jws"))
        }
    }

    @Test("Apple's mock transaction does not verify when its x5c[2] would have to be pinned")
    func mockSiblingRoot() throws {
        let pinned = AppStoreVerifier(.init(anchors: try TrustAnchors(
            pinnedSHA256: ["48aa70550eab2cd71d51dced44e88f9143b6bc0e1a6f430c19ba9a7cf36654e6"])))
        expectRejection(.untrustedRoot) {
            _ = try pinned.verifyTransaction(Fixtures.sharedVectorText("jws/apple-mock/transactionInfo.jws"))
        }
    }

    @Test("revocation offline (no network): Apple's real leaf and WWDR G6 both name responders, so both need a status")
    func realRevocationOffline() throws {
        var configuration = AppStoreVerifier.Configuration()
        configuration.revocation = RevocationPolicy(mode: .offline)
        let verifier = AppStoreVerifier(configuration)
        let error = expectRejection(.revocationUnknown) {
            _ = try verifier.verifyTransaction(Fixtures.sharedVectorText(Self.realTransaction))
        }
        let reason = error?.reason ?? ""
        #expect(reason.contains("leaf x5c[0]") && reason.contains("Prod ECC Mac App Store and iTunes Store Receipt Signing"), "\(reason)")
        #expect(reason.contains("intermediate x5c[1]") && reason.contains("Apple Worldwide Developer Relations"), "\(reason)")
        #expect(verifier.ocspRequestCount == 0)
        // Xcode's one self-signed certificate is an anchor: nothing to check.
        var xcode = AppStoreVerifier.Configuration(anchors: try Self.anchors("StoreKitTestingInXcode.der"))
        xcode.revocation = RevocationPolicy(mode: .offline)
        let record = try AppStoreVerifier(xcode).verify(Fixtures.sharedVectorText("jws/xcode/xcode-signed-transaction.jws"))
        #expect(record.revocation?.status == .notApplicable)
    }

    @Test("Xcode JWS verify against the StoreKit Testing certificate, and only then")
    func xcode() throws {
        let verifier = AppStoreVerifier(.init(anchors: try Self.anchors("StoreKitTestingInXcode.der"), environment: .xcode))
        let transaction = try verifier.verifyTransaction(Fixtures.sharedVectorText("jws/xcode/xcode-signed-transaction.jws"))
        #expect(transaction.payload.productId == "pass.premium")
        #expect(transaction.payload.purchaseDate?.iso8601 == "2023-10-19T01:45:36.049Z")
        let renewal = try verifier.verifyRenewalInfo(Fixtures.sharedVectorText("jws/xcode/xcode-signed-renewal-info.jws"))
        #expect(renewal.payload.autoRenewProductId == "pass.premium")
        let app = try verifier.verifyAppTransaction(Fixtures.sharedVectorText("jws/xcode/xcode-signed-app-transaction.jws"))
        #expect(app.payload.originalPurchaseDate?.iso8601 == "0000-12-30T00:00:00.000Z")
        #expect(app.validatedAt == app.payload.receiptCreationDate)
        expectRejection(.untrustedRoot) {
            _ = try AppStoreVerifier(.init(environment: .xcode))
                .verifyTransaction(Fixtures.sharedVectorText("jws/xcode/xcode-signed-transaction.jws"))
        }
    }
}
