import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

/// `RECEIPTKIT_APPS` and `RECEIPTKIT_ENVIRONMENTS`: which apps and environments one deployment
/// serves, and every way of getting them wrong refused at start, naming the variable.
@Suite("RECEIPTKIT_APPS and RECEIPTKIT_ENVIRONMENTS: the apps and environments served")
struct DeploymentConfigurationTests {
    /// The roots, and no app or environment.
    static let roots = ["RECEIPTKIT_ROOT_FILE": Vectors.environment["RECEIPTKIT_ROOT_FILE"] ?? ""]

    static func configuration(_ variables: [String: String]) throws -> ServerConfiguration {
        try ServerConfiguration(environment: roots.merging(variables) { $1 })
    }

    static func error(_ variables: [String: String]) -> String? {
        do {
            _ = try ServerConfiguration(environment: roots.merging(variables) { $1 })
            return nil
        } catch {
            return error.message
        }
    }

    static func apps(_ configuration: ServerConfiguration) -> [String] {
        configuration.verifier.apps.map { "\($0.bundleId ?? "-"):\($0.appAppleId.map(String.init) ?? "-")" }
    }

    @Test("several apps in both environments; one app the old way; Production alone serves Sandbox too, said at start; Sandbox alone needs no App Apple ID")
    func accepted() throws {
        let two = try Self.configuration([
            "RECEIPTKIT_APPS": "com.example.phone:1234567890, com.example.mac:1234567891",
            "RECEIPTKIT_ENVIRONMENTS": "Production,Sandbox",
        ])
        #expect(Self.apps(two) == ["com.example.phone:1234567890", "com.example.mac:1234567891"])
        #expect(two.verifier.environments == [.production, .sandbox])
        #expect(two.notices.isEmpty)

        let legacy = try Self.configuration([
            "RECEIPTKIT_BUNDLE_ID": "com.example.phone", "RECEIPTKIT_APP_APPLE_ID": "1234567890", "RECEIPTKIT_ENVIRONMENT": "Production",
        ])
        #expect(Self.apps(legacy) == ["com.example.phone:1234567890"])
        #expect(legacy.verifier.environments == [.production, .sandbox])
        #expect(legacy.notices.count == 1)
        #expect(legacy.notices.first?.contains("RECEIPTKIT_ENVIRONMENTS=Production") == true, "\(legacy.notices)")

        let strict = try Self.configuration(["RECEIPTKIT_APPS": "com.example.phone:1234567890", "RECEIPTKIT_ENVIRONMENTS": "Production"])
        #expect(strict.verifier.environments == [.production])
        #expect(strict.notices.isEmpty)

        let sandbox = try Self.configuration(["RECEIPTKIT_APPS": "com.example.phone,com.example.mac", "RECEIPTKIT_ENVIRONMENT": "Sandbox"])
        #expect(Self.apps(sandbox) == ["com.example.phone:-", "com.example.mac:-"])
        #expect(sandbox.verifier.environments == [.sandbox])
    }

    @Test("refused, naming the variable and what is wrong", arguments: [
        (["RECEIPTKIT_APPS": "a:1", "RECEIPTKIT_ENVIRONMENTS": "Sandbox", "RECEIPTKIT_ENVIRONMENT": "Sandbox"],
         "RECEIPTKIT_ENVIRONMENTS and RECEIPTKIT_ENVIRONMENT are both set"),
        (["RECEIPTKIT_APPS": "a:1", "RECEIPTKIT_BUNDLE_ID": "a", "RECEIPTKIT_ENVIRONMENTS": "Sandbox"],
         "RECEIPTKIT_APPS and RECEIPTKIT_BUNDLE_ID are both set"),
        (["RECEIPTKIT_APPS": "a:1", "RECEIPTKIT_APP_APPLE_ID": "1", "RECEIPTKIT_ENVIRONMENTS": "Sandbox"],
         "RECEIPTKIT_APPS and RECEIPTKIT_APP_APPLE_ID are both set"),
        (["RECEIPTKIT_APPS": "a:1,b", "RECEIPTKIT_ENVIRONMENTS": "Production,Sandbox"], "RECEIPTKIT_APPS: b has no App Apple ID"),
        (["RECEIPTKIT_BUNDLE_ID": "a", "RECEIPTKIT_ENVIRONMENT": "Production"], "RECEIPTKIT_APP_APPLE_ID is required when Production is served"),
        (["RECEIPTKIT_APPS": "a:1,a:2", "RECEIPTKIT_ENVIRONMENTS": "Sandbox"], "RECEIPTKIT_APPS: bundle id \"a\" is given twice"),
        (["RECEIPTKIT_APPS": "a:one", "RECEIPTKIT_ENVIRONMENTS": "Sandbox"], "RECEIPTKIT_APPS:"),
        (["RECEIPTKIT_APPS": "a:1", "RECEIPTKIT_ENVIRONMENTS": "Production,Staging"], "RECEIPTKIT_ENVIRONMENTS: environment \"Staging\""),
        (["RECEIPTKIT_APPS": "a:1", "RECEIPTKIT_ENVIRONMENT": "Staging"], "RECEIPTKIT_ENVIRONMENT is \"Staging\""),
        (["RECEIPTKIT_APPS": "a:1"], "RECEIPTKIT_ENVIRONMENTS is required"),
        (["RECEIPTKIT_ENVIRONMENTS": "Sandbox"], "RECEIPTKIT_APPS is required"),
    ])
    func refused(variables: [String: String], reason: String) {
        let message = Self.error(variables)
        #expect(message?.contains(reason) == true, "\(message ?? "accepted")")
    }

    @Test("with both environments, RECEIPTKIT_APPSTORE_API_URL is Production's and RECEIPTKIT_APPSTORE_SANDBOX_API_URL Sandbox's; a Sandbox URL with Sandbox not served is refused")
    func apiURLs() throws {
        let key = [
            "RECEIPTKIT_APPSTORE_KEY_ID": AppleFake.keyId, "RECEIPTKIT_APPSTORE_ISSUER_ID": AppleFake.issuerId,
            "RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE": try AppleFake.keyFile.get(),
            "RECEIPTKIT_APPS": "com.example.phone:1234567890",
        ]
        let both = try Self.configuration(key.merging([
            "RECEIPTKIT_ENVIRONMENTS": "Production,Sandbox",
            "RECEIPTKIT_APPSTORE_API_URL": "http://127.0.0.1:9001", "RECEIPTKIT_APPSTORE_SANDBOX_API_URL": "http://127.0.0.1:9002",
        ]) { $1 })
        #expect(both.appStoreAPI?.baseURLs == [.production: "http://127.0.0.1:9001", .sandbox: "http://127.0.0.1:9002"])
        let apple = try Self.configuration(key.merging(["RECEIPTKIT_ENVIRONMENTS": "Production,Sandbox"]) { $1 })
        #expect(apple.appStoreAPI?.baseURLs[.production] == nil, "Apple's URL of each environment, chosen by the client")
        let message = Self.error(key.merging([
            "RECEIPTKIT_ENVIRONMENTS": "Production", "RECEIPTKIT_APPSTORE_SANDBOX_API_URL": "http://127.0.0.1:9002",
        ]) { $1 })
        #expect(message?.contains("RECEIPTKIT_APPSTORE_SANDBOX_API_URL is set but Sandbox is not served") == true, "\(message ?? "accepted")")
    }

    @Test("receiptkit-server exits 78 naming the app when Production is served without its App Apple ID")
    func executableRefuses() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-apps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = Self.roots.merging([
            "RECEIPTKIT_APPS": "com.example.phone:1234567890,com.example.mac", "RECEIPTKIT_ENVIRONMENTS": "Production,Sandbox",
            "RECEIPTKIT_DATABASE_URL": "sqlite:\(directory.appendingPathComponent("store.sqlite").path)", "PORT": "0",
        ]) { $1 }
        let result = try await Tools.run(ServerProcess.executable.path, [], environment: environment)
        #expect(result.status == 78, "\(result.text)")
        #expect(result.text.contains("RECEIPTKIT_APPS: com.example.mac has no App Apple ID"), "\(result.text)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("store.sqlite").path), "refused before the database is opened")
    }
}
