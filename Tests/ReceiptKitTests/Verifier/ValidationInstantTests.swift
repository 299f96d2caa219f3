import Foundation
import ReceiptKit
import Testing

/// The instant each payload kind is validated at, in particular the early-2022 notification shape
/// that has no top-level `signedDate`.
@Suite("Validation instant")
struct ValidationInstantTests {
    /// 2030-01-01: the test leaf (2024 .. 2027) has expired, so only a payload's own date verifies.
    static let lateClock: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_893_456_000) }
    static let transactionSigned: Int64 = 1_717_243_200_000  // 2024-06-01T12:00:00Z
    static let renewalSigned: Int64 = 1_717_243_260_500  // 2024-06-01T12:01:00.500Z

    static func verifier() throws -> AppStoreVerifier {
        AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors()), clock: lateClock)
    }

    /// A DID_RENEW notification as Apple sent them in early 2022: `notificationVersion` instead of
    /// `version`, no `signedDate`, nested transaction and renewal info.
    static func earlyNotification(transactionDate: Int64?, renewalDate: Int64?) throws -> String {
        let signer = try TestSigner.standard()
        func date(_ value: Int64?) -> String { value.map { ",\"signedDate\":\($0)" } ?? "" }
        let transaction = try signer.sign(payload: """
            {"transactionId":"1000000950000001","originalTransactionId":"1000000950000000",\
            "bundleId":"com.receiptkit.example","productId":"monthly","type":"Auto-Renewable Subscription",\
            "purchaseDate":1717243100000,"expiresDate":1719835100000,"inAppOwnershipType":"PURCHASED"\
            \(date(transactionDate))}
            """)
        let renewal = try signer.sign(payload: """
            {"originalTransactionId":"1000000950000000","autoRenewProductId":"monthly","productId":"monthly",\
            "autoRenewStatus":1\(date(renewalDate))}
            """)
        return try signer.sign(payload: """
            {"notificationType":"DID_RENEW","notificationUUID":"6b9c6f1e-8f2e-4c55-9d7a-2e1f4c3b2a10",\
            "notificationVersion":"2.0","data":{"bundleId":"com.receiptkit.example","bundleVersion":"1",\
            "environment":"Sandbox","signedTransactionInfo":"\(transaction)","signedRenewalInfo":"\(renewal)"}}
            """)
    }

    @Test("a notification without signedDate is validated at the latest nested signedDate, and says so")
    func nestedSignedDate() throws {
        let jws = try Self.earlyNotification(transactionDate: Self.transactionSigned, renewalDate: Self.renewalSigned)
        let verified = try Self.verifier().verifyNotification(jws)
        #expect(verified.notification.validatedAt == Timestamp(millisecondsSince1970: Self.renewalSigned))
        #expect(verified.notification.validationTimeSource == .nestedSignedDate)
        #expect(verified.notification.payload.notificationVersion == "2.0")
        #expect(verified.transaction?.validatedAt == Timestamp(millisecondsSince1970: Self.transactionSigned))
        #expect(verified.renewalInfo?.validationTimeSource == .payloadDate)
        let record = try parseJSON(VerificationRecord(verified).json())
        #expect(record["validated_at"] as? String == "2024-06-01T12:01:00.500Z")
        #expect(record["validation_time_source"] as? String == "nested_signed_date")
        let notification = try #require(record["notification"] as? [String: Any])
        #expect(notification["version"] as? String == "2.0")
        #expect(notification["signed_date"] is NSNull)
    }

    @Test("the same shape with no date anywhere falls back to the clock, is rejected then, and says so")
    func noDateAnywhere() throws {
        let jws = try Self.earlyNotification(transactionDate: nil, renewalDate: nil)
        let error = expectRejection(.certificateExpired) { _ = try Self.verifier().verifyNotification(jws) }
        #expect(error?.reason.contains("2030-01-01") == true, "\(String(describing: error))")
        let clock2026 = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors()), clock: Fixtures.fixedClock)
        let record = try parseJSON(try clock2026.verify(jws).json())
        #expect(record["validation_time_source"] as? String == "clock")
    }

    @Test("a nested date outside the leaf's validity rejects the notification itself")
    func nestedDateOutsideValidity() throws {
        let jws = try Self.earlyNotification(transactionDate: 1_672_531_200_000, renewalDate: nil)  // 2023-01-01
        let error = expectRejection(.certificateNotYetValid) { _ = try Self.verifier().verifyNotification(jws) }
        #expect(error?.reason.contains("leaf x5c[0]") == true)
    }

    @Test("--at now and --at INSTANT still win over the nested date")
    func explicitTimeWins() throws {
        let jws = try Self.earlyNotification(transactionDate: Self.transactionSigned, renewalDate: Self.renewalSigned)
        let now = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors(), validationTime: .now), clock: Self.lateClock)
        expectRejection(.certificateExpired) { _ = try now.verifyNotification(jws) }
    }

    @Test("records of payloads with their own date are unchanged: no validation_time_source member")
    func ordinaryRecordsUnchanged() throws {
        let outcome = try Fixtures.testVerifier().verify(input: try Fixtures.testVector("jws/notification-subscribed.jws"))
        #expect(outcome.isVerified)
        #expect(!outcome.json().contains("validation_time_source"))
    }

    @Test("TestVectors/jws/notification-did-renew-no-signed-date.jws verifies long after its leaf expired")
    func vectorFile() throws {
        let outcome = try Self.verifier().verify(input: try Fixtures.testVector("jws/notification-did-renew-no-signed-date.jws"))
        let record = try parseJSON(outcome.json())
        #expect(record["status"] as? String == "verified", "\(outcome.json())")
        #expect(record["validation_time_source"] as? String == "nested_signed_date")
        #expect((record["notification"] as? [String: Any])?["type"] as? String == "DID_RENEW")
    }
}
