import Foundation
import Hummingbird
import HummingbirdTesting
import OpenAPIKit
import Testing
import Yams

/// `Server/openapi.yaml`, parsed by OpenAPIKit, for checking an answer of the server against it.
struct OpenAPIDocument: Sendable {
    let document: OpenAPI.Document
    let validator: SchemaValidator

    /// Reads and parses `Server/openapi.yaml`.
    ///
    /// - Throws: When the file cannot be read, or is not an OpenAPI 3.1 document OpenAPIKit reads.
    init() throws {
        let text = try String(
            contentsOf: Vectors.repositoryRoot.appendingPathComponent("Server/openapi.yaml"), encoding: .utf8)
        document = try YAMLDecoder().decode(OpenAPI.Document.self, from: text)
        validator = SchemaValidator(components: document.components)
    }

    /// Every documented operation, as (lowercase method, path template).
    var operations: [(method: String, path: String)] {
        get throws {
            try document.paths.flatMap { path, item in
                try document.components.lookup(item).endpoints.map { (method: $0.method.rawValue.lowercased(), path: path.rawValue) }
            }
        }
    }

    /// Expects `response`, the answer to `method path` (requested as `uri`), to be documented:
    /// its status among the operation's responses, its media type among that response's content
    /// types, and its body conforming to that content's schema — JSON parsed and checked
    /// member by member (``SchemaValidator``), other media types as text.
    ///
    /// - Parameters:
    ///   - response: The server's answer.
    ///   - method: The operation's method, lowercase (`get`).
    ///   - path: The operation's path template, as the document has it (`/v1/subscriptions/{original_transaction_id}`).
    ///   - uri: What was requested, for the messages (`path` when `nil`).
    /// - Throws: When the operation, status or media type is not documented (after recording the issue).
    func expect(
        _ response: TestResponse, answers method: String, _ path: String, uri: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let request = "\(method) \(uri ?? path)"
        let item = try #require(
            document.paths[OpenAPI.Path(rawValue: path)], "\(method) \(path) is not documented", sourceLocation: sourceLocation)
        let httpMethod = try #require(OpenAPI.HttpMethod(rawValue: method.uppercased()), sourceLocation: sourceLocation)
        let operation = try #require(
            try document.components.lookup(item)[httpMethod], "\(method) \(path) is not documented", sourceLocation: sourceLocation)
        let code = Int(response.status.code)
        let documented = try #require(
            operation.responses[.status(code: code)], "\(request) answered \(code), which is not documented: \(response.text)",
            sourceLocation: sourceLocation)
        let answer = try document.components.lookup(documented)
        let bytes = Array(response.body.readableBytesView)
        guard !answer.content.isEmpty else {
            #expect(bytes.isEmpty, "\(request) → \(code): a body where none is documented: \(response.text)", sourceLocation: sourceLocation)
            return
        }
        let contentType = try #require(
            response.headers[.contentType], "\(request) → \(code): no Content-Type", sourceLocation: sourceLocation)
        let mediaType = (contentType.split(separator: ";").first.map(String.init) ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        let (_, content) = try #require(
            answer.content.first { $0.key.typeAndSubtype.lowercased() == mediaType },
            "\(request) → \(code): \(contentType) is not among the documented \(answer.content.keys.map(\.rawValue))",
            sourceLocation: sourceLocation)
        let schema = try #require(
            try document.components.lookup(content).schema, "\(request) → \(code): \(mediaType) has no schema",
            sourceLocation: sourceLocation)
        let instance: JSONValue
        if mediaType == "application/json" || mediaType.hasSuffix("+json") {
            do {
                instance = try JSONValue(parsing: bytes)
            } catch {
                Issue.record("\(request) → \(code): not JSON (\(error)): \(response.text)", sourceLocation: sourceLocation)
                return
            }
        } else {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                Issue.record("\(request) → \(code): \(mediaType) that is not UTF-8 text", sourceLocation: sourceLocation)
                return
            }
            instance = .string(text)
        }
        let violations = validator.violations(of: instance, against: schema)
        #expect(
            violations.isEmpty, "\(request) → \(code) \(mediaType) breaks its schema:\n\(violations.joined(separator: "\n"))\n\(response.text)",
            sourceLocation: sourceLocation)
    }
}
