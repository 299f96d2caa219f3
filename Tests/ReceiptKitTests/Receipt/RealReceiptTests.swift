import Foundation
import ReceiptKit
import ReceiptKitFormats
import Testing

/// The real receipts in `../shared/vectors/receipts` with the outcomes its README gives; skipped
/// when that folder is absent (a fresh clone).
@Suite("Real App Store and Xcode receipts", .requires(.sharedVectors))
struct RealReceiptTests {
    /// A clock after every real leaf certificate expired.
    static let laterClock: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_893_456_000) }  // 2030-01-01

    static func storeKitAnchors() throws -> TrustAnchors {
        try TrustAnchors(rootCertificates: [SharedReceipts.certificate("StoreKitTestCertificate.der")])
    }

    @Test("App Store receipts verify at their creation date under the built-in Apple Inc. Root pin",
          arguments: SharedReceipts.appStore)
    func builtInPin(_ receipt: SharedReceipts.AppStore) throws {
        let verified = try AppStoreVerifier(clock: Fixtures.fixedClock).verifyReceipt(SharedReceipts.bytes(receipt.file))
        #expect(verified.payload.bundleId == receipt.bundleId)
        #expect(verified.payload.inAppPurchases.count == receipt.purchases)
        #expect(verified.payload.receiptType == .productionSandbox)
        #expect(verified.validatedAt.iso8601 == receipt.created)
        #expect(verified.chain.rootSHA256 == TrustAnchors.appleIncRootCASHA256)
        let record = VerificationRecord(verified)
        #expect(record.kind == .receipt)
        #expect(record.environment == "Sandbox")
        #expect(record.transactions.count == receipt.purchases)
        #expect(record.transactions.allSatisfy { $0.source == .receipt && $0.transactionId?.isEmpty == false })
        #expect(record.app?.bundleId == receipt.bundleId)
    }

    @Test("App Store receipts verify against AppleIncRootCA.der as --root, and fail at a later now",
          arguments: SharedReceipts.appStore)
    func rootFileAndNow(_ receipt: SharedReceipts.AppStore) throws {
        let bytes = try SharedReceipts.bytes(receipt.file)
        let anchors = try TrustAnchors(rootCertificates: [SharedReceipts.certificate("AppleIncRootCA.der")])
        _ = try AppStoreVerifier(.init(anchors: anchors), clock: Fixtures.fixedClock).verifyReceipt(bytes)
        expectRejection(.certificateExpired) {
            _ = try AppStoreVerifier(.init(validationTime: .now), clock: Self.laterClock).verifyReceipt(bytes)
        }
        expectRejection(.untrustedRoot) {
            _ = try AppStoreVerifier(.init(anchors: Self.storeKitAnchors()), clock: Fixtures.fixedClock).verifyReceipt(bytes)
        }
        expectRejection(.environmentMismatch) {
            _ = try AppStoreVerifier(.init(environment: .production), clock: Fixtures.fixedClock).verifyReceipt(bytes)
        }
    }

    @Test("Xcode receipts verify only against the StoreKit certificate", arguments: SharedReceipts.xcode)
    func xcode(_ file: String) throws {
        let bytes = try SharedReceipts.bytes(file)
        expectRejection(.untrustedRoot) { _ = try AppStoreVerifier(clock: Fixtures.fixedClock).verifyReceipt(bytes) }
        expectRejection(.untrustedRoot) {
            let pinned = try TrustAnchors(pinnedSHA256: ["ff0ba36e721d2db741d2aa11e6112ef78bf7131b46c7f035b00891d045c864fe"])
            _ = try AppStoreVerifier(.init(anchors: pinned), clock: Fixtures.fixedClock).verifyReceipt(bytes)
        }
        let verifier = AppStoreVerifier(.init(anchors: try Self.storeKitAnchors(), environment: .xcode), clock: Fixtures.fixedClock)
        let verified = try verifier.verifyReceipt(bytes)
        #expect(verified.payload.receiptType == .xcode)
        #expect(VerificationRecord(verified).environment == "Xcode")
        #expect(verified.chain.rootSHA256 == "ff0ba36e721d2db741d2aa11e6112ef78bf7131b46c7f035b00891d045c864fe")
    }

    @Test("the tpinappreceipt Xcode receipt has an offset creation date and one purchase")
    func xcodeDetails() throws {
        let verifier = AppStoreVerifier(.init(anchors: try Self.storeKitAnchors()), clock: Fixtures.fixedClock)
        let receipt = try verifier.verifyReceipt(SharedReceipts.bytes("tpinappreceipt-xcode.der")).payload
        #expect(receipt.receiptCreationDate.iso8601 == "2020-07-22T17:33:15.000Z")  // 18:33:15+0100
        #expect(receipt.expirationDate?.iso8601 == "4001-01-01T00:00:00.000Z")
        #expect(receipt.inAppPurchases.map(\.productId) == ["CYCLEMAPS_PREMIUM"])
        #expect(receipt.inAppPurchases.first?.transactionId == "0")
    }

    @Test("device hash vectors: the device matches, any other does not")
    func deviceHash() throws {
        let data = Data(try Fixtures.sharedVector("receipts/device-hash-vectors.json"))
        let entries = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        try #require(!entries.isEmpty)
        for entry in entries {
            let file = try #require((entry["receipt"] as? String)?.replacingOccurrences(of: "receipts/", with: ""))
            let hex = try #require(entry["device_identifier_hex"] as? String)
            let device = try #require(DeviceIdentifier(hex.count == 32 ? uuid(hex) : hex))
            let bytes = try SharedReceipts.bytes(file)
            let verified = try AppStoreVerifier(.init(deviceIdentifier: device), clock: Fixtures.fixedClock).verifyReceipt(bytes)
            #expect(verified.payload.isIssued(to: device))
            #expect(verified.payload.sha1Hash == bytesFromHex(try #require(entry["expected_sha1_hex"] as? String)))
            var other = device.bytes
            other[0] ^= 0x01
            expectRejection(.deviceHashMismatch) {
                _ = try AppStoreVerifier(.init(deviceIdentifier: DeviceIdentifier(bytes: other)), clock: Fixtures.fixedClock)
                    .verifyReceipt(bytes)
            }
        }
    }

    @Test("the golden pair: Apple's own verifyReceipt response, field for field except request_date")
    func goldenVerifyReceipt() throws {
        let text = try Fixtures.sharedVectorText("receipts/revenuecat-sandbox-sample1.b64")
        let outcome = AppStoreVerifier(clock: Fixtures.fixedClock).verify(input: Array(text.utf8))
        let mine = try parseJSON(outcome.verifyReceiptJSON())
        let golden = try parseJSON(try Fixtures.sharedVectorText("receipts/revenuecat-sandbox-sample1.verifyReceipt.json"))
        #expect(mine["status"] as? Int == 0)
        #expect(mine["environment"] as? String == golden["environment"] as? String)
        func withoutRequestDate(_ value: Any?) -> [String: Any] {
            (value as? [String: Any] ?? [:]).filter { !$0.key.hasPrefix("request_date") }
        }
        let ours = withoutRequestDate(mine["receipt"])
        let apples = withoutRequestDate(golden["receipt"])
        #expect(!apples.isEmpty)
        for key in Set(ours.keys).union(apples.keys).sorted() {
            let same = NSDictionary(dictionary: ["value": ours[key] ?? NSNull()])
                .isEqual(to: ["value": apples[key] ?? NSNull()])
            #expect(same, "receipt.\(key) differs: ours \(ours[key] ?? "absent"), Apple's \(apples[key] ?? "absent")")
        }
    }

    @Test("the golden pair with a request date renders it in Apple's three forms")
    func requestDate() throws {
        let text = try Fixtures.sharedVectorText("receipts/revenuecat-sandbox-sample1.b64")
        let outcome = AppStoreVerifier(clock: Fixtures.fixedClock).verify(input: Array(text.utf8))
        let golden = try parseJSON(try Fixtures.sharedVectorText("receipts/revenuecat-sandbox-sample1.verifyReceipt.json"))
        let goldenReceipt = try #require(golden["receipt"] as? [String: Any])
        let requestDate = try #require(goldenReceipt["request_date_ms"] as? String)
        let instant = Timestamp(millisecondsSince1970: try #require(Int64(requestDate)))
        let rendered = try parseJSON(outcome.verifyReceiptJSON(requestDate: instant))
        let mine = try #require(rendered["receipt"] as? [String: Any])
        for key in ["request_date", "request_date_pst"] {
            #expect(mine[key] as? String == goldenReceipt[key] as? String)
        }
        #expect(mine["request_date_ms"] as? String == goldenReceipt["request_date_ms"] as? String)
    }

    @Test("every single-byte change of a real receipt is rejected",
          arguments: ["tpinappreceipt-sandbox-g5.der", "goapplereceipt-sandbox-g7.der", "xcode-with-transaction.der"])
    func singleByteChanges(_ file: String) throws {
        let bytes = try SharedReceipts.bytes(file)
        let anchors = try TrustAnchors(rootCertificates: [
            SharedReceipts.certificate("AppleIncRootCA.der"), SharedReceipts.certificate("StoreKitTestCertificate.der"),
        ])
        let verifier = AppStoreVerifier(.init(anchors: anchors), clock: Fixtures.fixedClock)
        _ = try verifier.verifyReceipt(bytes)
        for mask: UInt8 in [0x01, 0x80] {
            #expect(offsetsStillVerifying(bytes, mask: mask, with: verifier).isEmpty, "\(file), mask \(mask)")
        }
    }

    @Test("verify-receipt reads a DER file argument, base64 lines and request bodies")
    func commandLine() throws {
        let g5 = try #require(Fixtures.sharedVectors).appendingPathComponent("receipts/tpinappreceipt-sandbox-g5.der")
        let file = try CLI.run([g5.path])
        #expect(file.status == 0, "\(file.stdout) \(file.stderr)")
        let record = try #require(try file.records().first)
        #expect(record["kind"] as? String == "receipt")
        let base64 = Data(try SharedReceipts.bytes("tpinappreceipt-sandbox-g5.der")).base64EncodedString()
        let body = "{\"receipt-data\":\"\(base64)\",\"password\":\"x\",\"exclude-old-transactions\":false}"
        let lines = try CLI.run(["--device-id", "956328D9-CC6A-47F4-BE40-6953FB0AB6C7"], stdin: base64 + "\n\n" + body + "\n")
        let records = try lines.records()
        #expect(lines.status == 0)
        #expect(records.map { $0["input"] as? Int } == [1, 2])
        #expect(records.allSatisfy { $0["status"] as? String == "verified" })
    }

    private func uuid(_ hex: String) -> String {
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }

    private func bytesFromHex(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }
}
