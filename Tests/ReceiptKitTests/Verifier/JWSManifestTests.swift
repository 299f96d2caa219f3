import Foundation
import ReceiptKit
import Testing

/// Every vector in `TestVectors/jws/manifest.json`, through the library and through the CLI.
@Suite("TestVectors/jws manifest")
struct JWSManifestTests {
    static let vectors = ManifestVector.load("jws")

    @Test("the manifest is present and covers every JWS error code")
    func coverage() throws {
        #expect(Self.vectors.count > 50)
        let codes = Set(Self.vectors.compactMap(\.expectedCode))
        let jwsCodes: [ReceiptKitError.Code] = [
            .inputTooLarge, .malformedJWS, .malformedHeader, .unsupportedAlgorithm, .missingCertificateChain,
            .malformedCertificate, .malformedPayload, .invalidSignature, .invalidChainLength, .invalidChain,
            .untrustedRoot, .certificateExpired, .certificateNotYetValid, .missingAppleExtension,
            .bundleIDMismatch, .appAppleIDMismatch, .environmentMismatch,
        ]
        for code in jwsCodes {
            #expect(codes.contains(code.rawValue), "no vector for \(code.rawValue)")
        }
        let kinds = Set(Self.vectors.compactMap { $0.expected["kind"] as? String })
        for kind in ["transaction", "renewal_info", "notification", "app_transaction", "realtime_request"] {
            #expect(kinds.contains(kind), "no valid vector of kind \(kind)")
        }
    }

    @Test("library outcome matches the expected record", arguments: vectors)
    func library(_ vector: ManifestVector) throws {
        let verifier = try vector.verifier()
        let input = try Fixtures.testVector(vector.file)
        let outcome = verifier.verify(input: input, as: try vector.kind())
        let differences = jsonSubsetDifferences(expected: vector.expected, actual: try parseJSON(outcome.json()))
        #expect(differences.isEmpty, "\(vector.name): \(differences) — \(outcome.json())")
    }

    @Test("verify-receipt prints the expected record", arguments: vectors)
    func commandLine(_ vector: ManifestVector) throws {
        let record = try vector.checkCommandLine(exitStatus: vector.expectedCode == nil ? 0 : 1)
        #expect(record["input"] as? Int == 1)
    }
}
