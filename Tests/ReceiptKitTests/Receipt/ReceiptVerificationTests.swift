import Foundation
import ReceiptKit
import ReceiptKitFormats
import Testing

/// The receipt verifier through its public API, over the project's own receipt vectors.
@Suite("Legacy receipt verification")
struct ReceiptVerificationTests {
    static func verifier(root: String = "root", device: DeviceIdentifier? = nil) throws -> AppStoreVerifier {
        let anchors = try TrustAnchors(rootCertificates: [Fixtures.testVector("receipts/pki/\(root).der")])
        return AppStoreVerifier(.init(anchors: anchors, deviceIdentifier: device), clock: Fixtures.fixedClock)
    }

    static func receipt(_ name: String) throws -> [UInt8] {
        try Fixtures.testVector("receipts/\(name)")
    }

    @Test("a verified receipt exposes every attribute, raw values kept")
    func model() throws {
        let verified = try Self.verifier().verifyReceipt(Self.receipt("receipt-sha256-der.der"))
        let receipt = verified.payload
        #expect(receipt.rawReceiptType == "ProductionSandbox")
        #expect(receipt.environment == .sandbox)
        #expect(receipt.bundleId == "com.receiptkit.example")
        #expect(receipt.applicationVersion == "42")
        #expect(receipt.originalApplicationVersion == "1.0")
        #expect(receipt.receiptCreationDate.iso8601 == "2025-06-01T12:00:00.000Z")
        #expect(receipt.originalPurchaseDate?.iso8601 == "2013-08-01T07:00:00.000Z")
        #expect(receipt.opaqueValue.count == 16)
        #expect(receipt.sha1Hash.count == 20)
        #expect(receipt.inAppPurchases.count == 6)
        #expect(Set(receipt.otherAttributes.map(\.type)) == [6, 8, 10, 13, 14, 25])
        #expect(verified.validatedAt == receipt.receiptCreationDate)
        let types = Set(receipt.inAppPurchases.compactMap(\.productType))
        #expect(types == Set(InAppProductType.allCases))
        let trial = try #require(receipt.inAppPurchases.first { $0.isTrialPeriod })
        #expect(trial.isInIntroOfferPeriod == false)
        #expect(trial.purchaseDate.iso8601 == "2025-02-01T10:00:00.250Z")
        #expect(trial.originalPurchaseDate?.iso8601 == "2025-02-01T10:00:00.250Z")  // written 11:00:00.250+0100
        let refunded = try #require(receipt.inAppPurchases.first { $0.cancellationDate != nil })
        #expect(refunded.quantity == 3)
        #expect(refunded.isInIntroOfferPeriod == nil)
        #expect(refunded.otherAttributes.map(\.type).sorted() == [1709, 1710, 1714, 1722])
    }

    @Test("unknown values are kept raw")
    func unknownValues() throws {
        let verified = try Self.verifier().verifyReceipt(Self.receipt("receipt-unknown-values.der"))
        let purchase = try #require(verified.payload.inAppPurchases.first)
        #expect(purchase.rawProductType == 4)
        #expect(purchase.productType == nil)
        #expect(purchase.otherAttributes == [ReceiptAttribute(type: 1799, version: 3, value: [1, 2, 3])])
        #expect(VerificationRecord(verified).transactions.first?.productType == "4")
        #expect(verified.payload.otherAttributes.contains(ReceiptAttribute(type: 99, version: 1, value: [])))
    }

    @Test("DER, BER, SHA-1 and SHA-256 receipts of one payload decode alike")
    func layouts() throws {
        let verifier = try Self.verifier()
        let reference = try verifier.verifyReceipt(Self.receipt("receipt-sha256-der.der")).payload
        for name in ["receipt-sha1-der.der", "receipt-sha256-ber.der", "receipt-sha1-ber.der"] {
            #expect(try verifier.verifyReceipt(Self.receipt(name)).payload == reference, "\(name)")
        }
        let text = try Fixtures.testVectorText("receipts/receipt-sha256-der.b64")
        #expect(try verifier.verifyReceipt(base64: text).payload == reference)
    }

    @Test("every single-byte change of a test receipt is rejected",
          arguments: ["receipt-sha256-der.der", "receipt-sha1-der.der", "receipt-sha256-ber.der", "receipt-xcode.der"])
    func singleByteChanges(_ name: String) throws {
        let verifier = try Self.verifier(root: name == "receipt-xcode.der" ? "storekit" : "root")
        let bytes = try Self.receipt(name)
        _ = try verifier.verifyReceipt(bytes)
        for mask: UInt8 in [0x01, 0xFF] {
            #expect(offsetsStillVerifying(bytes, mask: mask, with: verifier).isEmpty, "\(name), mask \(mask)")
        }
    }

    @Test("no input crashes: every truncation and extension of a receipt is malformed")
    func truncations() throws {
        let verifier = try Self.verifier()
        for name in ["receipt-sha256-der.der", "receipt-sha256-ber.der"] {
            let bytes = try Self.receipt(name)
            for length in 0..<bytes.count {
                expectRejection(.malformedReceipt) { _ = try verifier.verifyReceipt(Array(bytes.prefix(length))) }
            }
            expectRejection(.malformedReceipt) { _ = try verifier.verifyReceipt(bytes + [0]) }
            expectRejection(.malformedReceipt) { _ = try verifier.verifyReceipt(bytes + [0, 0]) }
        }
    }

    @Test("hostile encodings are refused without crashing")
    func hostileEncodings() throws {
        let verifier = try Self.verifier()
        let cases: [[UInt8]] = [
            [],
            [0x30],
            [0x30, 0x80],
            [0x30, 0x80, 0x00, 0x00],
            [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x30, 0x88, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x30, 0xFF],
            [0x30, 0x81, 0x05, 0x06, 0x03, 0x2A, 0x03, 0x04],
            Array(repeating: [0x30, 0x80], count: 10_000).flatMap { $0 },
            [0x30, 0x80] + Array(repeating: [0xA0, 0x80], count: 10_000).flatMap { $0 },
            [0x30, 0x80, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
                + Array(repeating: [0xA0, 0x80, 0x30, 0x80], count: 5_000).flatMap { $0 },
            [0x3F, 0x80, 0x00, 0x00],
        ]
        for bytes in cases {
            expectRejection(.malformedReceipt) { _ = try verifier.verifyReceipt(bytes) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let random = [0x30] + (0..<Int.random(in: 0..<300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(throws: ReceiptKitError.self) { _ = try verifier.verifyReceipt(random) }
        }
    }

    @Test("random bytes inside the envelope are refused without crashing")
    func randomMutations() throws {
        let verifier = try Self.verifier()
        let bytes = try Self.receipt("receipt-sha256-ber.der")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1_000 {
            var changed = bytes
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                changed[Int.random(in: 0..<changed.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if changed == bytes { continue }
            #expect(throws: ReceiptKitError.self) { _ = try verifier.verifyReceipt(changed) }
        }
    }

    @Test("the size limit is 1 MiB of DER by default, configurable, and applies to base64 too")
    func sizeLimit() throws {
        #expect(AppStoreVerifier.Configuration.defaultMaximumReceiptSize == 1_048_576)
        #expect(AppStoreVerifier.Configuration().maximumReceiptSize == 1_048_576)
        let bytes = try Self.receipt("receipt-sha256-der.der")
        var configuration = AppStoreVerifier.Configuration(
            anchors: try TrustAnchors(rootCertificates: [Fixtures.testVector("receipts/pki/root.der")]))
        configuration.maximumReceiptSize = bytes.count
        _ = try AppStoreVerifier(configuration, clock: Fixtures.fixedClock).verifyReceipt(bytes)
        configuration.maximumReceiptSize = bytes.count - 1
        let small = AppStoreVerifier(configuration, clock: Fixtures.fixedClock)
        expectRejection(.inputTooLarge) { _ = try small.verifyReceipt(bytes) }
        expectRejection(.inputTooLarge) { _ = try small.verifyReceipt(base64: Data(bytes).base64EncodedString() + "AAAA") }
        expectRejection(.inputTooLarge) { _ = try small.verifyReceipt(base64: Data(bytes).base64EncodedString()) }
    }

    @Test("device identifiers: UUIDs and MAC addresses")
    func deviceIdentifiers() throws {
        #expect(DeviceIdentifier("3C5B1D7E-2A4F-4E8B-9C61-0D2E7F4A8B90")?.bytes.count == 16)
        #expect(DeviceIdentifier("3c5b1d7e-2a4f-4e8b-9c61-0d2e7f4a8b90")?.description == "3c5b1d7e2a4f4e8b9c610d2e7f4a8b90")
        #expect(DeviceIdentifier("0A1B2C3D4E5F")?.bytes == [0x0A, 0x1B, 0x2C, 0x3D, 0x4E, 0x5F])
        #expect(DeviceIdentifier("0a:1b:2c:3d:4e:5f")?.bytes == [0x0A, 0x1B, 0x2C, 0x3D, 0x4E, 0x5F])
        #expect(DeviceIdentifier("0a-1b-2c-3d-4e-5f")?.bytes.count == 6)
        for invalid in ["", "3C5B1D7E2A4F4E8B9C610D2E7F4A8B90", "3C5B1D7E-2A4F-4E8B-9C61-0D2E7F4A8B9G",
                        "3C5B1D7E+2A4F-4E8B-9C61-0D2E7F4A8B90", "0A1B2C3D4E5", "0a:1b-2c:3d:4e:5f", "0a:1b:2c:3d:4e:5"] {
            #expect(DeviceIdentifier(invalid) == nil, "\(invalid)")
        }
        let device = try #require(DeviceIdentifier("3C5B1D7E-2A4F-4E8B-9C61-0D2E7F4A8B90"))
        _ = try Self.verifier(device: device).verifyReceipt(Self.receipt("receipt-sha256-der.der"))
        expectRejection(.deviceHashMismatch) {
            _ = try Self.verifier(device: DeviceIdentifier(bytes: Array(repeating: 0, count: 16)))
                .verifyReceipt(Self.receipt("receipt-sha256-der.der"))
        }
    }

    @Test("input detection: binary, base64, request bodies, JWS, forced kinds")
    func inputDetection() throws {
        let verifier = try Self.verifier()
        let der = try Self.receipt("receipt-sha256-der.der")
        let base64 = Data(der).base64EncodedString()
        #expect(verifier.verify(input: der).isVerified)
        #expect(verifier.verify(input: Array((" \t" + base64 + "\r\n").utf8)).isVerified)
        #expect(verifier.verify(input: Array("{\"receipt-data\":\"\(base64)\"}".utf8)).isVerified)
        #expect(verifier.verify(input: Array(base64.utf8), as: .receipt).isVerified)
        func code(_ input: [UInt8], as kind: PayloadKind? = nil) -> String? {
            guard case .rejected(let error) = verifier.verify(input: input, as: kind) else { return nil }
            return error.code.rawValue
        }
        #expect(code(Array(base64.utf8), as: .transaction) == "unrecognized_input")
        #expect(code(Array("{\"receipt-data\":5}".utf8)) == "unrecognized_input")
        #expect(code(Array("{\"receipt-data\":\"\(base64)\",\"signedPayload\":\"a.b.c\"}".utf8)) == "unrecognized_input")
        #expect(code(Array("{\"signedPayload\":\"a.b.c\"}".utf8), as: .receipt) == "unrecognized_input")
        #expect(code(Array("abc.def.ghi".utf8), as: .receipt) == "malformed_receipt")
        #expect(code(Array((base64 + "=").utf8)) == "malformed_receipt")
        // Text with a '.' is a JWS, as before receipts were read.
        #expect(code(Array("abc.def".utf8)) == "malformed_jws")
        let jws = try Fixtures.testVector("jws/transaction-consumable.jws")
        let jwsVerifier = AppStoreVerifier(.init(anchors: try Fixtures.testRootAnchors()), clock: Fixtures.fixedClock)
        #expect(jwsVerifier.verify(input: jws).isVerified)
    }

    @Test("the record: kind receipt, the receipt type's environment, the app block and the chain")
    func record() throws {
        let verified = try Self.verifier().verifyReceipt(Self.receipt("receipt-production.der"))
        let record = VerificationRecord(verified)
        #expect(record.kind == .receipt)
        #expect(record.environment == "Production")
        #expect(record.receipt == verified.payload)
        #expect(record.app?.appItemId == 1_234_567_890)
        #expect(record.app?.receiptType == "Production")
        let json = try parseJSON(record.json())
        #expect(json["kind"] as? String == "receipt")
        let fingerprints = try parseJSON(Fixtures.testVectorText("receipts/pki/fingerprints.json"))
        #expect((json["chain"] as? [String: Any])?["root_sha256"] as? String == fingerprints["root.der"] as? String)
    }

    @Test("receipt types map to environments")
    func receiptTypes() {
        #expect(ReceiptType.production.environment == .production)
        #expect(ReceiptType.productionVPP.environment == .production)
        #expect(ReceiptType.productionSandbox.environment == .sandbox)
        #expect(ReceiptType.productionVPPSandbox.environment == .sandbox)
        #expect(ReceiptType.xcode.environment == .xcode)
    }

    @Test("verifyReceipt statuses for rejections")
    func verifyReceiptStatuses() {
        func status(_ code: ReceiptKitError.Code, _ environment: AppStoreEnvironment? = nil) -> Int {
            VerificationOutcome.rejected(ReceiptKitError(code, "x")).verifyReceiptStatus(expectedEnvironment: environment)
        }
        #expect(status(.malformedReceipt) == 21002)
        #expect(status(.inputTooLarge) == 21002)
        #expect(status(.invalidSignature) == 21003)
        #expect(status(.untrustedRoot) == 21003)
        #expect(status(.deviceHashMismatch) == 21003)
        #expect(status(.environmentMismatch, .production) == 21007)
        #expect(status(.environmentMismatch, .sandbox) == 21008)
        let rejected = VerificationOutcome.rejected(ReceiptKitError(.invalidSignature, "bad"))
        let json = try? parseJSON(rejected.verifyReceiptJSON())
        #expect(json?["status"] as? Int == 21003)
        #expect((json?["error"] as? [String: Any])?["code"] as? String == "invalid_signature")
    }
}
