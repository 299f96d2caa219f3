import Foundation
import ReceiptKit
import Testing

/// One entry of a `TestVectors/*/manifest.json`: an input file, the `verify-receipt` arguments
/// to verify it with, and a deep subset of the record expected.
struct ManifestVector: Sendable, CustomTestStringConvertible {
    let name: String
    let file: String
    let arguments: [String]
    /// The expected record subset, as JSON text (kept as text so the value is `Sendable`).
    let expectedJSON: String

    var testDescription: String { name }

    var expected: [String: Any] {
        (try? parseJSON(expectedJSON)) ?? [:]
    }

    var expectedCode: String? {
        (expected["error"] as? [String: Any])?["code"] as? String
    }

    /// Loads `TestVectors/<folder>/manifest.json`.
    static func load(_ folder: String) -> [ManifestVector] {
        let url = Fixtures.testVectors.appendingPathComponent(folder).appendingPathComponent("manifest.json")
        guard let data = try? Data(contentsOf: url),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let vectors = root["vectors"] as? [[String: Any]]
        else { return [] }
        return vectors.compactMap { vector in
            guard let name = vector["name"] as? String, let file = vector["file"] as? String,
                let arguments = vector["args"] as? [String], let expected = vector["expected"],
                let expectedData = try? JSONSerialization.data(withJSONObject: expected, options: [.sortedKeys])
            else { return nil }
            return ManifestVector(name: name, file: file, arguments: arguments,
                                  expectedJSON: String(decoding: expectedData, as: UTF8.self))
        }
    }

    /// A verifier configured as `verify-receipt` would be by ``arguments``, with the fixed
    /// test clock.
    func verifier() throws -> AppStoreVerifier {
        try ManifestArguments(arguments, name: name).verifier
    }

    /// The forced `--kind`, if the arguments name one.
    func kind() throws -> PayloadKind? {
        try ManifestArguments(arguments, name: name).kind
    }

    /// Runs the vector through the built `verify-receipt` and checks that it prints exactly one
    /// record matching ``expected`` and exits with `exitStatus`; returns that record.
    @discardableResult
    func checkCommandLine(exitStatus: Int32, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let result = try CLI.run(arguments + ["TestVectors/" + file])
        let records = try result.records()
        try #require(records.count == 1, "\(name): \(result.stdout) \(result.stderr)", sourceLocation: sourceLocation)
        let differences = jsonSubsetDifferences(expected: expected, actual: records[0])
        #expect(differences.isEmpty, "\(name): \(differences)", sourceLocation: sourceLocation)
        #expect(result.status == exitStatus, "\(name): exit status \(result.status)", sourceLocation: sourceLocation)
        return records[0]
    }
}
