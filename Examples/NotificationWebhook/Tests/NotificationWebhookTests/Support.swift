import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NotificationWebhook
import Testing

/// ReceiptKit's own test data, `TestVectors/` at the repository's root (see its README): the
/// test PKIs and what they signed, validated at their signed dates, so these tests never rot.
enum Vectors {
    /// The repository's root: this file is `Examples/NotificationWebhook/Tests/NotificationWebhookTests/Support.swift`.
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The path of a file under `TestVectors/`.
    static func path(_ name: String) -> String {
        repositoryRoot.appendingPathComponent("TestVectors").appendingPathComponent(name).path
    }

    /// A vector's text, without its trailing newline.
    static func text(_ name: String) throws -> String {
        let text = try String(contentsOfFile: path(name), encoding: .utf8)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The webhook body Apple would post for the test PKI's SUBSCRIBED notification.
    static func notificationBody() throws -> String {
        try text("jws/notification-webhook-body.json")
    }

    /// A webhook body around one of the JWS vectors.
    static func notificationBody(wrapping jwsFile: String) throws -> String {
        #"{"signedPayload":"\#(try text(jwsFile))"}"#
    }

    /// The environment of a webhook set up for the test app: the claims the test PKI's
    /// notifications carry, and the JWS and receipt test roots as root files.
    static let environment: [String: String] = [
        "RECEIPTKIT_BUNDLE_ID": "com.receiptkit.example",
        "RECEIPTKIT_APP_APPLE_ID": "1234567890",
        "RECEIPTKIT_ENVIRONMENT": "Sandbox",
        "RECEIPTKIT_ROOT_FILE": "\(path("pki/root.der")),\(path("receipts/pki/root.der"))",
    ]

    /// The SHA-256 of the JWS test root, which the test PKI's tokens also carry as `x5c[2]`.
    static func testRootSHA256() throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: path("pki/fingerprints.json")))
        let fingerprints = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        return try #require(fingerprints["root.der"])
    }
}

/// Runs `test` against the webhook served on a loopback port, through a real HTTP client.
///
/// - Parameters:
///   - environment: The environment variables the webhook is configured from.
///   - logger: The server's logger; silent by default.
///   - test: Sends requests to the server.
func withWebhook(
    environment: [String: String] = Vectors.environment,
    logger: Logger = Logger(label: "NotificationWebhookTests", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ test: @escaping @Sendable (any TestClientProtocol) async throws -> Void
) async throws {
    var environment = environment
    environment["PORT"] = "0"
    let app = buildApplication(try WebhookConfiguration(environment: environment), logger: logger)
    try await app.test(.live, test)
}

extension TestClientProtocol {
    /// Posts a body and returns the response.
    ///
    /// - Parameters:
    ///   - path: The route.
    ///   - body: The body's text.
    ///   - contentType: The Content-Type header, or `nil` for none.
    func post(_ path: String, _ body: String, contentType: String? = "application/json") async throws -> TestResponse {
        var headers = HTTPFields()
        if let contentType { headers[.contentType] = contentType }
        return try await execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
    }
}

extension TestResponse {
    /// The body, parsed as a JSON object.
    func json() throws -> [String: Any] {
        let parsed = try JSONSerialization.jsonObject(with: Data(String(buffer: body).utf8))
        return try #require(parsed as? [String: Any], "not a JSON object: \(String(buffer: body))")
    }

    /// Expects an HTTP `status` and a rejected record with error `code` in the body.
    func expectRejected(
        _ status: HTTPResponse.Status, _ code: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(self.status == status, sourceLocation: sourceLocation)
        #expect(try errorCode() == code, sourceLocation: sourceLocation)
    }

    /// The rejected record's error code, or `nil` when the body is no rejected record.
    func errorCode() throws -> String? {
        let object = try json()
        guard object["status"] as? String == "rejected", let error = object["error"] as? [String: Any],
            error["message"] is String
        else { return nil }
        return error["code"] as? String
    }
}
