import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("RECEIPTKIT_APPSTORE_*: reconciliation configured, or off")
struct AppStoreConfigurationTests {
    func environment(_ extra: [String: String]) -> [String: String] {
        Vectors.environment.merging(extra) { $1 }
    }

    func key() throws -> [String: String] {
        [
            "RECEIPTKIT_APPSTORE_KEY_ID": AppleFake.keyId, "RECEIPTKIT_APPSTORE_ISSUER_ID": AppleFake.issuerId,
            "RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE": try AppleFake.keyFile.get(),
        ]
    }

    func error(_ environment: [String: String]) -> String? {
        do {
            _ = try ServerConfiguration(environment: environment)
            return nil
        } catch {
            return error.message
        }
    }

    @Test("none of the variables: off; all three: on, Apple's URL or RECEIPTKIT_APPSTORE_API_URL, every 900 s or RECEIPTKIT_RECONCILE_INTERVAL")
    func readsSettings() throws {
        #expect(try ServerConfiguration(environment: environment([:])).appStoreAPI == nil)
        let on = try #require(try ServerConfiguration(environment: environment(key())).appStoreAPI)
        #expect(on.key.keyId == AppleFake.keyId)
        #expect(on.key.issuerId == AppleFake.issuerId)
        #expect(on.baseURLs.isEmpty)
        #expect(on.reconcileInterval == .seconds(900))
        let configured = try #require(try ServerConfiguration(environment: environment(key().merging([
            "RECEIPTKIT_APPSTORE_API_URL": "http://127.0.0.1:9", "RECEIPTKIT_RECONCILE_INTERVAL": "60",
        ]) { $1 })).appStoreAPI)
        #expect(configured.baseURLs == [.sandbox: "http://127.0.0.1:9"])
        #expect(configured.reconcileInterval == .seconds(60))
        let manual = try #require(try ServerConfiguration(environment: environment(key().merging(["RECEIPTKIT_RECONCILE_INTERVAL": "0"]) { $1 })).appStoreAPI)
        #expect(manual.reconcileInterval == nil)
    }

    @Test("some of the key variables, an unreadable or wrong key file, a bad URL or interval, Xcode: refused, naming the variable")
    func refuses() throws {
        var partial = try key()
        partial["RECEIPTKIT_APPSTORE_ISSUER_ID"] = nil
        #expect(error(environment(partial))?.contains("RECEIPTKIT_APPSTORE_ISSUER_ID is required") == true)
        #expect(error(environment(["RECEIPTKIT_APPSTORE_API_URL": "http://127.0.0.1:9"]))?.contains("RECEIPTKIT_APPSTORE_API_URL is set") == true)
        var missingFile = try key()
        missingFile["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = "/nonexistent/AuthKey.p8"
        #expect(error(environment(missingFile))?.contains("cannot read /nonexistent/AuthKey.p8") == true)
        var wrongKey = try key()
        wrongKey["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = Vectors.path("pki/root.der")
        #expect(error(environment(wrongKey))?.contains("is not an In-App Purchase key") == true)
        #expect(error(environment(try key().merging(["RECEIPTKIT_APPSTORE_API_URL": "ftp://x"]) { $1 }))?
            .contains("RECEIPTKIT_APPSTORE_API_URL") == true)
        #expect(error(environment(try key().merging(["RECEIPTKIT_RECONCILE_INTERVAL": "soon"]) { $1 }))?
            .contains("RECEIPTKIT_RECONCILE_INTERVAL") == true)
        #expect(error(environment(try key().merging(["RECEIPTKIT_ENVIRONMENT": "Xcode"]) { $1 }))?.contains("Xcode") == true)
    }

    @Test("receiptkit-server exits 78 with the reason when the key file is not a key")
    func executableRefusesWrongKey() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-wrong-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let badKey = directory.appendingPathComponent("AuthKey.p8")
        try Data("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n".utf8).write(to: badKey)
        var environment = environment(try key())
        environment["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = badKey.path
        environment["RECEIPTKIT_DATABASE_URL"] = "sqlite:\(directory.appendingPathComponent("store.sqlite").path)"
        environment["PORT"] = "0"
        let result = try await Tools.run(ServerProcess.executable.path, [], environment: environment)
        #expect(result.status == 78, "\(result.text)")
        #expect(result.text.contains("RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"), "\(result.text)")
    }
}
