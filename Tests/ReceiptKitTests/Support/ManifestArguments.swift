import ArgumentParser
import Foundation
import ReceiptKit
import ReceiptKitFormats
import Testing
@testable import verify_receipt

/// `verify-receipt` arguments as the manifests use them, read by the command's own parser and
/// turned into library calls: the configuration the command builds, with the fixed test clock.
struct ManifestArguments {
    var configuration: AppStoreVerifier.Configuration
    var kind: PayloadKind?
    var verifyReceiptFormat: Bool

    /// Parses `arguments` as `verify-receipt` does (root certificate paths relative to the
    /// package root).
    init(_ arguments: [String], name: String) throws {
        var command: VerifyReceipt
        do {
            command = try VerifyReceipt.parse(arguments)
        } catch {
            Issue.record("\(name): \(VerifyReceipt.message(for: error))")
            throw error
        }
        command.roots = command.roots.map { Fixtures.packageRoot.appendingPathComponent($0).path }
        configuration = try command.makeConfiguration()
        kind = try command.parseKind()
        verifyReceiptFormat = command.format == .verifyreceipt
    }

    var verifier: AppStoreVerifier {
        AppStoreVerifier(configuration, clock: Fixtures.fixedClock)
    }

    /// The outcome rendered as the CLI would print it (without the input number).
    func render(_ outcome: VerificationOutcome) -> String {
        verifyReceiptFormat
            ? outcome.verifyReceiptJSON(expectedEnvironment: configuration.environment)
            : outcome.json()
    }
}
