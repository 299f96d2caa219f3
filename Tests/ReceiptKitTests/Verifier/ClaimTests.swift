import Foundation
import ReceiptKit
import Testing

/// Configured claims: bundle id, App Apple ID, environment, per payload type, identity first.
@Suite("Claims")
struct ClaimTests {
    let signer: TestSigner

    init() throws {
        signer = try TestSigner.standard()
    }

    static let notification = """
        {"notificationType":"SUBSCRIBED","subtype":"RESUBSCRIBE","notificationUUID":"u","signedDate":1748779200123,\
        "data":{"bundleId":"com.receiptkit.example","appAppleId":42,"environment":"Sandbox"}}
        """

    @Test("bundle id is checked for transactions, notifications and app transactions, absent or not")
    func bundleId() throws {
        let verifier = try Fixtures.testVerifier(bundleId: "com.other")
        expectRejection(.bundleIDMismatch) { _ = try verifier.verifyTransaction(signer.sign(payload: JWSDecodingTests.transaction)) }
        expectRejection(.bundleIDMismatch) { _ = try verifier.verifyNotification(signer.sign(payload: Self.notification)) }
        expectRejection(.bundleIDMismatch) {
            _ = try verifier.verifyAppTransaction(signer.sign(payload: "{\"receiptType\":\"Sandbox\",\"bundleId\":\"x\"}"))
        }
        expectRejection(.bundleIDMismatch) {
            _ = try verifier.verifyTransaction(signer.sign(payload: "{\"transactionId\":\"1\",\"signedDate\":1748779200123}"))
        }
        // Renewal info and realtime requests define no bundle id.
        #expect(throws: Never.self) {
            _ = try verifier.verifyRenewalInfo(signer.sign(payload: "{\"environment\":\"Sandbox\",\"signedDate\":1748779200123}"))
            _ = try verifier.verifyRealtimeRequest(signer.sign(payload: "{\"requestIdentifier\":\"r\",\"signedDate\":1748779200123}"))
        }
    }

    @Test("App Apple ID: compared when present; missing fails only for Production")
    func appAppleId() throws {
        let token = try signer.sign(payload: Self.notification)
        expectRejection(.appAppleIDMismatch) { _ = try Fixtures.testVerifier(appAppleId: 43).verifyNotification(token) }
        #expect(throws: Never.self) { _ = try Fixtures.testVerifier(appAppleId: 42).verifyNotification(token) }
        let withoutId = try signer.sign(payload: Self.notification.replacingOccurrences(of: "\"appAppleId\":42,", with: ""))
        #expect(throws: Never.self) { _ = try Fixtures.testVerifier(appAppleId: 42, environment: .sandbox).verifyNotification(withoutId) }
        expectRejection(.appAppleIDMismatch) {
            _ = try Fixtures.testVerifier(appAppleId: 42, environment: .production).verifyNotification(withoutId)
        }
        // Realtime requests and app transactions carry it too; transactions do not define it.
        expectRejection(.appAppleIDMismatch) {
            _ = try Fixtures.testVerifier(appAppleId: 43).verifyRealtimeRequest(
                signer.sign(payload: "{\"requestIdentifier\":\"r\",\"appAppleId\":42,\"signedDate\":1748779200123}"))
        }
        #expect(throws: Never.self) {
            _ = try Fixtures.testVerifier(appAppleId: 43).verifyTransaction(signer.sign(payload: JWSDecodingTests.transaction))
        }
    }

    @Test("identity is checked before environment")
    func order() throws {
        let token = try signer.sign(payload: Self.notification)
        expectRejection(.bundleIDMismatch) {
            _ = try Fixtures.testVerifier(bundleId: "com.other", appAppleId: 43, environment: .production).verifyNotification(token)
        }
        expectRejection(.appAppleIDMismatch) {
            _ = try Fixtures.testVerifier(bundleId: "com.receiptkit.example", appAppleId: 43, environment: .production).verifyNotification(token)
        }
        expectRejection(.environmentMismatch) {
            _ = try Fixtures.testVerifier(bundleId: "com.receiptkit.example", appAppleId: 42, environment: .production).verifyNotification(token)
        }
    }

    @Test("environment comes from data, summary, appData, or an external purchase token's id", arguments: [
        ("{\"notificationType\":\"X\",\"summary\":{\"environment\":\"Production\"}}", "Production"),
        ("{\"notificationType\":\"X\",\"appData\":{\"environment\":\"Production\"}}", "Production"),
        ("{\"notificationType\":\"X\",\"externalPurchaseToken\":{\"externalPurchaseId\":\"SANDBOX_1\"}}", "Sandbox"),
        ("{\"notificationType\":\"X\",\"externalPurchaseToken\":{\"externalPurchaseId\":\"abc\"}}", "Production"),
    ])
    func notificationEnvironment(_ payload: String, _ environment: String) throws {
        let token = try signer.sign(payload: payload)
        let record = try Fixtures.testVerifier().verify(token)
        #expect(record.environment == environment)
        let expected = try #require(AppStoreEnvironment(rawValue: environment))
        #expect(throws: Never.self) { _ = try Fixtures.testVerifier(environment: expected).verifyNotification(token) }
        let other: AppStoreEnvironment = expected == .production ? .sandbox : .production
        expectRejection(.environmentMismatch) { _ = try Fixtures.testVerifier(environment: other).verifyNotification(token) }
    }

    @Test("claims apply to the JWS nested in a notification")
    func nested() throws {
        let nestedTransaction = try signer.sign(payload: JWSDecodingTests.transaction.replacingOccurrences(
            of: "com.receiptkit.example", with: "com.other"))
        let payload = Self.notification.replacingOccurrences(
            of: "\"environment\":\"Sandbox\"}", with: "\"environment\":\"Sandbox\",\"signedTransactionInfo\":\"\(nestedTransaction)\"}")
        let error = expectRejection(.bundleIDMismatch) {
            _ = try Fixtures.testVerifier(bundleId: "com.receiptkit.example").verifyNotification(signer.sign(payload: payload))
        }
        #expect(error?.reason.hasPrefix("data.signedTransactionInfo") == true)
    }
}
