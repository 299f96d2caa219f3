import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import AppStoreServerAPIFake
import ReceiptKitServer
import Testing

/// API tokens with scopes: `RECEIPTKIT_API_TOKENS_FILE` read at start and on SIGHUP, `token new`,
/// 401 for an unknown token, 403 naming the scope needed, and the token's name (never the token)
/// in the log.
@Suite("API tokens and their scopes")
struct TokenTests {
    /// A tokens file's text for these tokens.
    static func file(_ tokens: [(name: String, scope: TokenScope, token: String)]) -> String {
        "# name scope sha256\n" + tokens.map { token in
            APITokens.line(name: token.name, scope: token.scope, token: token.token).replacingOccurrences(of: " ", with: "\t  ")
                + "  # \(token.name)"
        }.joined(separator: "\n") + "\n"
    }

    @Test("the file: comments and white space; a wrong scope, a token in place of its digest, a missing field or a name twice stop the server, naming the line")
    func parsing() throws {
        let (token, line) = APITokens.generate(name: "backend", scope: .write)
        let tokens = try APITokens.parse("# comment\n\n  \(line)   # trailing\nsupport read \(String(repeating: "a", count: 64))\n", path: "t")
        #expect(tokens.map(\.name) == ["backend", "support"])
        #expect(tokens.map(\.scope) == [.write, .read])
        #expect(token.hasPrefix("rk_") && token.count == 46)
        #expect(!line.contains(token))
        let bad: [(String, String)] = [
            ("a owner \(String(repeating: "a", count: 64))", "line 1: the scope is \"owner\""),
            ("a read \(token)", "line 1: expected the SHA-256"),
            ("\n\na read", "line 3: expected NAME SCOPE SHA256_HEX, found 2 fields"),
            ("a read \(String(repeating: "A", count: 64))", "line 1: expected the SHA-256"),
            ("a read \(String(repeating: "a", count: 64))\na write \(String(repeating: "b", count: 64))", "line 2: the name a is used twice"),
        ]
        for (text, message) in bad {
            #expect {
                _ = try APITokens.parse(text, path: "tokens.txt")
            } throws: { error in
                "\(error)".contains("RECEIPTKIT_API_TOKENS_FILE tokens.txt, \(message)")
            }
        }
        // At start: the configuration names the file's line and the server does not start.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tokens").path
        try "support reader \(String(repeating: "a", count: 64))\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect {
            _ = try ServerConfiguration(environment: Vectors.environment.merging(["RECEIPTKIT_API_TOKENS_FILE": path]) { $1 })
        } throws: { error in
            "\(error)".contains("RECEIPTKIT_API_TOKENS_FILE \(path), line 1: the scope is \"reader\"")
        }
    }

    @Test("each scope where it may and where it must not: read reads, write stores, admin reconciles; 403 names the scope needed; /v1/token says who", arguments: Backend.available)
    func scopes(backend: Backend) async throws {
        let tokens = TokenScope.allCases.map { scope in (name: "\(scope.rawValue)-token", scope: scope, token: "rk_test_\(scope.rawValue)_0123456789") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tokens").path
        try Self.file(tokens).write(toFile: path, atomically: true, encoding: .utf8)
        try await TestServer.run(backend, token: nil, configure: { $0.apiTokensFile = path }) { server in
            for token in tokens {
                let who = try await server.get("/v1/token", token: token.token)
                #expect(who.status == .ok)
                #expect(try who.json()["name"] as? String == token.name)
                #expect(try who.json()["scope"] as? String == token.scope.rawValue)
                #expect(try await server.get("/v1/events", token: token.token).status == .ok)

                let purchase = try await server.post("/v1/transactions", "{}", token: token.token)
                if token.scope < .write {
                    try purchase.expectError(.forbidden, "forbidden")
                    #expect(try purchase.errorMessage().contains("needs a token with scope write"))
                    #expect(try purchase.errorMessage().contains("read-token has scope read"))
                } else {
                    try purchase.expectError(.badRequest, "invalid_request")
                }
                let reconcile = try await server.post("/v1/reconcile", "", token: token.token)
                if token.scope < .admin {
                    try reconcile.expectError(.forbidden, "forbidden")
                    #expect(try reconcile.errorMessage().contains("needs a token with scope admin"))
                } else {
                    // Past the scope: reconciliation is off in this configuration.
                    try reconcile.expectError(.conflict, "reconciliation_off")
                }
            }
            try await server.get("/v1/events", token: "rk_unknown").expectError(.unauthorized, "unauthorized")
            try await server.get("/v1/events", token: nil).expectError(.unauthorized, "unauthorized")
        }
    }

    @Test("rotation by SIGHUP under continuous load with no request refused: the new token joins, clients move, the old one goes; the log names tokens, never shows one; token new prints a token and its line",
          arguments: Backend.available)
    func rotation(backend: Backend) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-rotation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tokens").path

        // Two tokens from the command, as an operator makes them.
        func newToken(_ name: String) async throws -> (token: String, line: String) {
            let result = try await ChildProcess.run(ServerProcess.executable, ["token", "new", name, "write"], environment: [:])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            try #require(lines.count == 2, "\(result.stdout)")
            return (lines[0], lines[1])
        }
        let old = try await newToken("backend-2025")
        let new = try await newToken("backend-2026")
        #expect(old.line.hasPrefix("backend-2025 write ") && !old.line.contains(old.token))
        try (old.line + "\n").write(toFile: path, atomically: true, encoding: .utf8)

        try await ReconcileCrashTests.withProcessDatabase(backend, in: directory) { _, databaseURL in
            let port = try unusedLoopbackPort()
            let server = try ServerProcess(
                environment: Vectors.environment.merging([
                    "RECEIPTKIT_DATABASE_URL": databaseURL,
                    "RECEIPTKIT_API_TOKENS_FILE": path, "HOST": "127.0.0.1", "PORT": String(port), "LOG_LEVEL": "info",
                ]) { $1 },
                log: directory.appendingPathComponent("server.log"))
            defer { server.stop() }
            try await ExecutableTests.waitUntilReady(port: port, server: server)

            // Four connections, each sending request after request with the token it was told to
            // use, recording which token each request carried and what it got.
            let current = Locked(old.token)
            let answers = Locked<[(client: Int, token: String, status: Int)]>([])
            let stop = Locked(false)
            let clients = (0..<4).map { index in
                Task {
                    try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                        while !stop.withLockedValue({ $0 }) {
                            let token = current.withLockedValue { $0 }
                            let answer = try await client.get("/v1/events?limit=1", headers: [.authorization: "Bearer \(token)"])
                            answers.withLockedValue { $0.append((index, token, Int(answer.status.code))) }
                        }
                    }
                }
            }
            func status(_ token: String) async throws -> Int {
                try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                    Int(try await client.get("/v1/events", headers: [.authorization: "Bearer \(token)"]).status.code)
                }
            }
            func answered(with token: String) -> Int { answers.withLockedValue { $0.filter { $0.token == token }.count } }
            try await waitUntil("the clients have made requests") { answered(with: old.token) >= 20 }
            #expect(try await status(new.token) == 401)

            // Both lines, SIGHUP (several times, each a reload under load): the new token works
            // while the old one keeps working.
            try (old.line + "\n" + new.line + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            for _ in 0..<3 {
                let before = answered(with: old.token)
                server.signal(SIGHUP)
                try await waitUntil("the old token is used across the reload") { answered(with: old.token) >= before + 20 }
            }
            try await waitUntil("the new token is accepted after SIGHUP", asking: { try await status(new.token) == 200 })

            // The clients move to the new token; once each has sent a request with it, none is in
            // flight with the old one.
            current.withLockedValue { $0 = new.token }
            try await waitUntil("each client has used the new token") {
                answers.withLockedValue { Set($0.filter { $0.token == new.token }.map(\.client)).count } == clients.count
            }
            let usedOld = answered(with: old.token)

            // The old line removed, SIGHUP: the old token is refused, the clients go on.
            try (new.line + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            server.signal(SIGHUP)
            try await waitUntil("the old token is refused after SIGHUP", asking: { try await status(old.token) == 401 })
            let after = answered(with: new.token)
            try await waitUntil("the clients went on after the old token went") { answered(with: new.token) >= after + 20 }

            // A file that does not read leaves the tokens as they were.
            try "backend-2026 write not-a-digest\n".write(toFile: path, atomically: true, encoding: .utf8)
            server.signal(SIGHUP)
            try await waitUntil("the server logs the file it cannot read") {
                server.logText.contains("RECEIPTKIT_API_TOKENS_FILE did not read")
            }
            #expect(try await status(new.token) == 200)

            stop.withLockedValue { $0 = true }
            for client in clients { try await client.value }
            // Every request carried a token valid when it was sent: none was refused.
            let all = answers.withLockedValue { $0 }
            #expect(answered(with: old.token) == usedOld, "no request with the old token after the clients moved")
            let refused = all.filter { $0.status != 200 }
            #expect(refused.isEmpty, "\(refused.count) of \(all.count) requests refused: \(refused.prefix(5).map { "\($0.status) with \($0.token == old.token ? "old" : "new")" })")
            let log = server.logText
            #expect(log.contains("token=backend-2025") && log.contains("token=backend-2026"), "\(log.suffix(2000))")
            #expect(!log.contains(old.token) && !log.contains(new.token))
        }
    }
}
