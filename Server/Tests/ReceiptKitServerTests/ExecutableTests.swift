import Foundation
import HummingbirdTesting
import Hummingbird
import ReceiptKitServer
import Testing

/// The `receiptkit-server` executable itself, which the other suites do not run (they build the
/// application in-process): its configuration from the environment, its executor set-up and its
/// shutdown on SIGTERM, a request in flight at that moment still answered.
@Suite("receiptkit-server, the executable")
struct ExecutableTests {
    @Test("configured from its environment, it stores a notification and times a stalled client out; SIGTERM while a request is in flight: that request is answered 200 and stored, then the process exits 0")
    func servesAndShutsDownGracefully() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-executable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("store.sqlite").path
        let port = try unusedLoopbackPort()
        let server = try ServerProcess(
            environment: Vectors.environment.merging([
                "RECEIPTKIT_DATABASE_URL": "sqlite:\(database)", "RECEIPTKIT_API_TOKEN": testToken,
                "HOST": "127.0.0.1", "PORT": String(port), "LOG_LEVEL": "info", "RECEIPTKIT_REQUEST_TIMEOUT": "5",
            ]) { $1 },
            log: directory.appendingPathComponent("server.log"))
        defer { server.stop() }

        try await Self.waitUntilReady(port: port, server: server)
        let payloads = try Payloads()
        let purchase = ms("2025-06-01T12:00:00Z")
        @Sendable func notification(_ id: String) throws -> String {
            Vectors.body(wrapping: try payloads.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: purchase,
                transaction: payloads.transaction(id: id, original: id, purchase: purchase, expires: purchase + 30 * day, signed: purchase),
                renewalInfo: nil))
        }

        // A whole request over a real client, and the authenticated API reading it back.
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            let stored = try await client.post(
                "/appstore/notifications", headers: [.contentType: "application/json"], body: ByteBuffer(string: try notification("7001")))
            #expect(stored.status == .ok, "\(stored.text)")
            #expect(stored.text.contains(#""stored":true,"duplicate":false"#))
            let refused = try await client.get("/v1/subscriptions/7001")
            #expect(refused.status == .unauthorized)
            let subscription = try await client.get("/v1/subscriptions/7001", headers: [.authorization: "Bearer \(testToken)"])
            #expect(subscription.status == .ok)
            #expect(subscription.text.contains(#""original_transaction_id":"7001""#))
        }

        // A client that stalls mid-body is answered 503 at the timeout (the timer runs on the
        // event loops, Swift Concurrency's executor in this process).
        let head = "POST /appstore/notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        let start = ContinuousClock.now
        let stalled = try await rawExchange(
            port: port, send: Array((head + "Content-Length: 1000\r\n\r\n{\"signedPayload\"").utf8), readFor: .seconds(60))
        let elapsed = ContinuousClock.now - start
        #expect(stalled.hasPrefix("HTTP/1.1 503") && stalled.contains(#""code":"timeout""#), "\(stalled)")
        // The order of magnitude of the 5 s timeout: not before it, and not ten times later. (The
        // request in flight below must outlast SIGTERM and the start of the shutdown: on a busy
        // machine that is more than a second or two.)
        #expect(elapsed >= .seconds(5) && elapsed < .seconds(50), "answered after \(elapsed)")

        // A request in flight: its headers and half its body sent, then SIGTERM, then the rest.
        let body = Array(try notification("7002").utf8)
        let requestHead = Array((head + "Content-Length: \(body.count)\r\n\r\n").utf8)
        let firstPart = requestHead + body[..<(body.count / 2)]
        let connection = try LoopbackConnection(port: port)
        try connection.write(firstPart)
        // Once the server has read the head, the request is in flight: then SIGTERM, and once the
        // server has stopped listening (its graceful shutdown has begun), the rest.
        try await waitUntil("the server reads the request's head (\(connection.describeServerEnd(serverPort: port)))") {
            try connection.serverHasRead(requestHead.count, of: firstPart.count, serverPort: port)
        }
        server.terminate()
        try await waitUntil("the server stops listening after SIGTERM; log:\n\(server.logText)") {
            loopbackRefuses(port: port)
        }
        try connection.write(Array(body[(body.count / 2)...]))
        let answer = try await connection.response(within: .seconds(30))
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        #expect(answer.contains(#""stored":true,"duplicate":false"#), "\(answer)")

        let status = try await server.waitForExit(timeout: .seconds(30))
        #expect(status == 0, "exit status \(status); log:\n\(server.logText)")
        // One log line per request, with its status; and the tasks ran on the event loops.
        let requestLines = server.logText.split(separator: "\n").filter { $0.contains("POST /appstore/notifications") }
        #expect(requestLines.map { $0.contains("status=200") } == [true, false, true], "\(server.logText)")
        #expect(requestLines.count == 3 && requestLines[1].contains("status=503"), "\(server.logText)")
        #expect(!server.logText.contains("keeps its own thread pool"), "\(server.logText)")
        // Without an In-App Purchase key it says so at start, and serves as it always did.
        #expect(server.logText.contains("reconciliation with Apple is off"), "\(server.logText)")

        // Both are in the database the process left.
        let store = try Store(sqlitePath: database)
        for id in ["7001", "7002"] {
            let keys = try await store.keys(originalTransactionId: id)
            #expect(keys.count == 1, "subscription \(id)")
        }
        try await store.close()
    }

    @Test("an entitlements file the stored products contradict stops the start with exit status 78, naming the product, as any configuration error does (the unit does not restart it)")
    func entitlementsFileContradicted() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-executable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try unusedLoopbackPort()
        let environment = Vectors.environment.merging([
            "RECEIPTKIT_DATABASE_URL": "sqlite:\(directory.appendingPathComponent("store.sqlite").path)",
            "RECEIPTKIT_API_TOKEN": testToken, "HOST": "127.0.0.1", "PORT": String(port),
        ]) { $1 }

        // An auto-renewable subscription stored.
        let first = try ServerProcess(environment: environment, log: directory.appendingPathComponent("first.log"))
        defer { first.stop() }
        try await Self.waitUntilReady(port: port, server: first)
        let payloads = try Payloads()
        let purchase = ms("2025-06-01T12:00:00Z")
        let body = Vectors.body(wrapping: try payloads.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", signed: purchase,
            transaction: payloads.transaction(id: "7101", original: "7101", purchase: purchase, expires: purchase + 30 * day, signed: purchase),
            renewalInfo: nil))
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            let stored = try await client.post("/appstore/notifications", headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
            #expect(stored.status == .ok, "\(stored.text)")
        }
        first.terminate()
        #expect(try await first.waitForExit(timeout: .seconds(30)) == 0, "\(first.logText)")

        // A file giving that product a pass's duration: the check after the migration refuses it.
        let file = directory.appendingPathComponent("entitlements.json")
        try #"{"entitlements": {"pro": {"products": [{"id": "\#(Payloads.productId)", "duration": "P30D"}]}}}"#
            .write(to: file, atomically: true, encoding: .utf8)
        let second = try ServerProcess(
            environment: environment.merging(["RECEIPTKIT_ENTITLEMENTS_FILE": file.path]) { $1 },
            log: directory.appendingPathComponent("second.log"))
        defer { second.stop() }
        let status = try await second.waitForExit(timeout: .seconds(60))
        #expect(status == 78, "exit status \(status); log:\n\(second.logText)")
        #expect(second.logText.contains("RECEIPTKIT_ENTITLEMENTS_FILE: \(file.path): \(Payloads.productId) (under pro) is an auto renewable subscription"), "\(second.logText)")
    }

    /// Polls `/readyz` until it answers 200 (a debug build starts in a few seconds).
    static func waitUntilReady(port: Int, server: ServerProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            #expect(server.isRunning, "the server exited; log:\n\(server.logText)")
            guard server.isRunning else { throw CancellationError() }
            let ready = try? await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                try await client.get("/readyz").status == .ok
            }
            if ready == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the server was not ready within 60 s; log:\n\(server.logText)")
        throw CancellationError()
    }
}

extension TestClient.Response {
    var text: String { body.map { String(buffer: $0) } ?? "" }
}

/// The built `receiptkit-server`, started by the test, which alone stops it (by its PID).
final class ServerProcess: Sendable {
    private let process: Process
    private let log: URL

    /// The executable SwiftPM builds beside the test bundle.
    static let executable: URL = {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("receiptkit-server")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return Vectors.repositoryRoot.appendingPathComponent("Server/.build/debug/receiptkit-server")
    }()

    init(environment: [String: String], log: URL) throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)  // FileHandle throws if it failed
        let output = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = Self.executable
        // The test process's environment (its clock included: CI runs the suites again with the
        // wall clock moved, through `LD_PRELOAD`, and the fake App Store Server API in this
        // process checks the server's tokens against it), less the server's own settings, then
        // the test's.
        let inherited = ProcessInfo.processInfo.environment.filter { name, _ in
            !name.hasPrefix("RECEIPTKIT_") && !["HOST", "PORT", "LOG_LEVEL"].contains(name)
        }
        process.environment = inherited.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = output
        try process.run()
        self.process = process
    }

    var isRunning: Bool { process.isRunning }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    func terminate() { process.terminate() }  // SIGTERM

    /// Sends the process a signal (`SIGHUP`: read the API tokens' file again).
    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// SIGKILL, if it still runs (a failed test's clean-up).
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The exit status, once the process has exited.
    func waitForExit(timeout: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                Issue.record("the server did not exit within \(timeout) of SIGTERM; log:\n\(logText)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return process.terminationStatus
    }
}
