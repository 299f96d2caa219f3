import Foundation
import ReceiptKit
import Testing

/// Every vector in `TestVectors/receipts/manifest.json`, through the library and through the CLI.
@Suite("TestVectors/receipts manifest")
struct ReceiptManifestTests {
    static let vectors = ManifestVector.load("receipts")

    @Test("the manifest is present and covers every receipt error code")
    func coverage() throws {
        #expect(Self.vectors.count > 80)
        let codes = Set(Self.vectors.compactMap(\.expectedCode))
        let receiptCodes: [ReceiptKitError.Code] = [
            .malformedReceipt, .invalidSignature, .invalidChainLength, .invalidChain, .untrustedRoot,
            .certificateExpired, .certificateNotYetValid, .missingAppleExtension, .bundleIDMismatch,
            .appAppleIDMismatch, .environmentMismatch, .deviceHashMismatch, .inputTooLarge, .unrecognizedInput,
        ]
        for code in receiptCodes {
            #expect(codes.contains(code.rawValue), "no vector for \(code.rawValue)")
        }
        let verified = Self.vectors.filter { $0.expected["status"] as? String == "verified" }
        #expect(verified.count >= 15)
        #expect(verified.allSatisfy { $0.expected["kind"] as? String == "receipt" })
    }

    @Test("library outcome matches the expected record", arguments: vectors)
    func library(_ vector: ManifestVector) throws {
        let arguments = try ManifestArguments(vector.arguments, name: vector.name)
        let input = try Fixtures.testVector(vector.file)
        let outcome = arguments.verifier.verify(input: input, as: arguments.kind)
        let rendered = arguments.render(outcome)
        let differences = jsonSubsetDifferences(expected: vector.expected, actual: try parseJSON(rendered))
        #expect(differences.isEmpty, "\(vector.name): \(differences) — \(rendered.prefix(600))")
    }

    @Test("verify-receipt prints the expected record", arguments: vectors)
    func commandLine(_ vector: ManifestVector) throws {
        let accepted = vector.expected["status"] as? String == "verified" || vector.expected["status"] as? Int == 0
        try vector.checkCommandLine(exitStatus: accepted ? 0 : 1)
    }
}
