import Foundation
import Testing

/// ReceiptKit's own test data, `TestVectors/` at the repository's root (see its README).
enum Vectors {
    /// The repository's root: this file is `Server/Tests/ReceiptKitServerTests/Harness/Vectors.swift`.
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The path of a file under `TestVectors/`.
    static func path(_ name: String) -> String {
        repositoryRoot.appendingPathComponent("TestVectors").appendingPathComponent(name).path
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path(name))))
    }

    /// A vector's text, without its trailing newline.
    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: path(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A webhook body around a JWS.
    static func body(wrapping jws: String) -> String {
        #"{"signedPayload":"\#(jws)"}"#
    }

    /// The environment of a server set up for the test app: the claims the test PKI's payloads
    /// carry, and the JWS and receipt test roots as root files.
    static let environment: [String: String] = [
        "RECEIPTKIT_BUNDLE_ID": "com.receiptkit.example",
        "RECEIPTKIT_APP_APPLE_ID": "1234567890",
        "RECEIPTKIT_ENVIRONMENT": "Sandbox",
        "RECEIPTKIT_ROOT_FILE": "\(path("pki/root.der")),\(path("receipts/pki/root.der"))",
    ]
}
