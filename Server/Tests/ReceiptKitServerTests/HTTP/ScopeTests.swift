import Foundation
import Hummingbird
import HummingbirdTesting
import OpenAPIKit
import ReceiptKitServer
import Testing
import Yams

/// Every operation of `Server/openapi.yaml` against a token of each scope, on a server whose
/// routes are exactly the document's: the scope each operation's `security` names is the one the
/// server enforces.
@Suite("Each scope against each route of Server/openapi.yaml")
struct ScopeTests {
    /// One documented operation: its method, its path template, the scope its `security` names
    /// (`nil`: no token needed), whether it takes a body, and its documented statuses.
    struct Operation: CustomStringConvertible {
        let method: String
        let path: String
        let scope: TokenScope?
        let hasBody: Bool
        /// Whether it takes a query parameter it requires (`GET /v1/search?q=`).
        let requiresQuery: Bool
        let statuses: Set<Int>

        var description: String { "\(method) \(path)" }

        /// The path with each `{parameter}` made up: an id nothing is stored under.
        var uri: String {
            path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
                segment.hasPrefix("{") && segment.hasSuffix("}") ? "made-up-\(segment.dropFirst().dropLast())" : String(segment)
            }.joined(separator: "/")
        }
    }

    /// The document's operations, parsed by OpenAPIKit.
    static func operations() throws -> [Operation] {
        let text = try String(contentsOf: Vectors.repositoryRoot.appendingPathComponent("Server/openapi.yaml"), encoding: .utf8)
        let document = try YAMLDecoder().decode(OpenAPI.Document.self, from: text)
        var operations: [Operation] = []
        for (path, item) in document.paths {
            let pathItem = try document.components.lookup(item)
            for endpoint in pathItem.endpoints {
                let scopes = (endpoint.operation.security ?? document.security).flatMap { $0.values.flatMap { $0 } }
                var scope: TokenScope?
                if let name = scopes.first {
                    scope = try #require(TokenScope(rawValue: name), "\(endpoint.method.rawValue) \(path.rawValue): no scope \(name)")
                }
                let statuses = endpoint.operation.responses.keys.compactMap { key -> Int? in
                    if case .status(let code) = key.value { return code }
                    return nil
                }
                let parameters = try pathItem.parameters.map { try document.components.lookup($0) }
                    + endpoint.operation.parameters.map { try document.components.lookup($0) }
                operations.append(Operation(
                    method: endpoint.method.rawValue.uppercased(), path: path.rawValue, scope: scope,
                    hasBody: endpoint.operation.requestBody != nil,
                    requiresQuery: parameters.contains { $0.location == .query && $0.required }, statuses: Set(statuses)))
            }
        }
        return operations
    }

    /// A path as compared: Hummingbird matches one with or without its final slash
    /// (`/console/` is the route `/console`).
    static func normalized(_ path: String) -> String {
        path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    @Test("the document's operations are the server's routes; a token below an operation's scope gets 403 naming it, one at or above never 401 or 403, and a documented status",
          arguments: Backend.available)
    func everyRouteEveryScope(backend: Backend) async throws {
        let operations = try Self.operations()
        try #require(!operations.isEmpty)
        let tokens = TokenScope.allCases.map { scope in (name: "\(scope.rawValue)-token", scope: scope, token: "rk_scope_\(scope.rawValue)_0123456789") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-scopes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tokens").path
        try TokenTests.file(tokens).write(toFile: path, atomically: true, encoding: .utf8)

        try await backend.withDatabase { location, searchPath in
            var configuration = try ServerConfiguration(environment: Vectors.environment.merging(["PORT": "0"]) { $1 })
            configuration.database = location
            configuration.apiToken = nil
            configuration.apiTokensFile = path
            let built = try buildServer(
                configuration: configuration, logger: .silent, postgresSearchPath: searchPath,
                clock: { Date(timeIntervalSince1970: 1_750_000_000) })

            // The routes are the document's, no more, no fewer.
            let registered = Set(built.routes.map { "\($0.method) \(Self.normalized($0.path))" })
            let documented = Set(operations.map { "\($0.method) \(Self.normalized($0.path))" })
            #expect(registered.subtracting(documented).isEmpty, "routes not in Server/openapi.yaml: \(registered.subtracting(documented).sorted())")
            #expect(documented.subtracting(registered).isEmpty, "documented but not routes: \(documented.subtracting(registered).sorted())")
            #expect(registered.count == built.routes.count, "a route registered twice: \(built.routes.map { "\($0.method) \($0.path)" })")

            try await built.application.test(.live) { client in
                for operation in operations {
                    if let scope = operation.scope, scope > .read {
                        #expect(operation.statuses.contains(403), "\(operation) needs \(scope) but documents no 403")
                    }
                    // Without a token: 401 where a scope is named, never where none is.
                    let anonymous = try await Self.send(operation, token: nil, client: client)
                    if operation.scope != nil {
                        try anonymous.expectError(.unauthorized, "unauthorized")
                    } else {
                        #expect(![401, 403].contains(Int(anonymous.status.code)), "\(operation) without a token: \(anonymous.status) \(anonymous.text)")
                    }
                    for token in tokens {
                        let response = try await Self.send(operation, token: token.token, client: client)
                        let status = Int(response.status.code)
                        if let needed = operation.scope, token.scope < needed {
                            try response.expectError(.forbidden, "forbidden")
                            #expect(
                                try response.errorMessage().contains("needs a token with scope \(needed.rawValue)"),
                                "\(operation) with \(token.scope): \(response.text)")
                        } else {
                            #expect(![401, 403].contains(status), "\(operation) with a \(token.scope) token: \(status) \(response.text)")
                            #expect(operation.statuses.contains(status), "\(operation) with a \(token.scope) token answered \(status), not documented: \(response.text)")
                            // Nothing made up or missing to refuse: a 2xx.
                            if operation.method == "GET", !operation.path.contains("{"), !operation.requiresQuery {
                                #expect((200..<300).contains(status), "\(operation) with a \(token.scope) token: \(status) \(response.text)")
                            }
                        }
                    }
                }
            }
        }
    }

    /// Sends an operation's request: its path made up, `{}` as the body it takes.
    static func send(_ operation: Operation, token: String?, client: some TestClientProtocol) async throws -> TestResponse {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if operation.hasBody {
            headers[.contentType] = "application/json"
            body = ByteBuffer(string: "{}")
        } else if operation.method != "GET" {
            body = ByteBuffer()
        }
        let method = try #require(HTTPRequest.Method(rawValue: operation.method))
        return try await client.execute(uri: operation.uri, method: method, headers: headers, body: body)
    }
}
