import AppStoreServerAPIFake
import Foundation
import Testing

/// Runs a built executable (`appstore-api`, or the root package's `verify-receipt`) as its own
/// process (``ChildProcess``): the fake it talks to runs in this process.
enum Command {
    struct Result: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String

        var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        /// Each output line as a JSON object.
        func objects() throws -> [[String: Any]] {
            try lines.map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
            }
        }
    }

    /// `appstore-api`, which SwiftPM builds beside the test bundle.
    static let appstoreAPI: URL = beside(named: "appstore-api")
        ?? Fixture.repositoryRoot.appendingPathComponent("Server/.build/debug/appstore-api")

    /// The root package's `verify-receipt` of the same configuration (scripts/test.sh builds the
    /// root package first), or `nil` when it has not been built.
    static let verifyReceipt: URL? = {
        let configuration = beside(named: "appstore-api")?.deletingLastPathComponent().lastPathComponent ?? "debug"
        for candidate in [configuration, "debug", "release"] {
            let url = Fixture.repositoryRoot.appendingPathComponent(".build/\(candidate)/verify-receipt")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }()

    private static func beside(named name: String) -> URL? {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }

    /// The environment of a user of the test app: the key and app from APPSTORE_* variables, on
    /// top of the test process's own environment — so that the command runs on the same clock as
    /// the fake it calls (CI runs the suites again with the wall clock moved, through
    /// `LD_PRELOAD`) — less any APPSTORE_* credentials of the developer's.
    static func environment(baseURL: String? = nil) throws -> [String: String] {
        let inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("APPSTORE_") }
        return inherited.merging([
            "APPSTORE_API_KEY_ID": Fixture.keyId, "APPSTORE_API_ISSUER_ID": Fixture.issuerId,
            "APPSTORE_API_PRIVATE_KEY_FILE": try Fixture.keyFile.get(), "APPSTORE_BUNDLE_ID": Fixture.bundleId,
            "APPSTORE_ENVIRONMENT": "Sandbox",
        ]) { $1 }
    }

    /// Runs `appstore-api` against the fake at `baseURL`, trusting the test root.
    static func appstoreAPI(_ arguments: [String], baseURL: String, extraEnvironment: [String: String] = [:]) async throws -> Result {
        try await run(
            appstoreAPI, arguments + ["--base-url", baseURL, "--root", Fixture.testVectorPath("pki/root.der")],
            environment: try environment().merging(extraEnvironment) { $1 })
    }

    /// Runs `executable`; the process is this test's alone and ends by itself.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String], stdin: String = "") async throws -> Result {
        let result = try await ChildProcess.run(executable, arguments, environment: environment, stdin: stdin)
        return Result(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }
}

