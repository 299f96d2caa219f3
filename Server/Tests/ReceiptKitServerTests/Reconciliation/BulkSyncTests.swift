import AppStoreServerAPIFake
import Foundation
import ReceiptKit
import ReceiptKitServer
import Testing

@Suite("receiptkit-server sync --from FILE: a migration's backfill, resumable")
struct BulkSyncTests {
    @Test("every line fetched and stored, an unknown id reported and counted, progress on stderr; run again, the lines done are skipped")
    func syncFromFile() async throws {
        let transactions = AppleFake.subscription(original: 6_000_000_100, renewals: 3) + AppleFake.subscription(original: 6_000_000_200, renewals: 2)
        // The command's own clock (the real time) signs its tokens.
        let fake = try AppleFake.fake(transactions, clock: { Date() })
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-bulk-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let list = directory.appendingPathComponent("customers.tsv")
        try Data("# customers from the old backend\n6000000100\tcust-a\n6999999999\n\n6000000201\n".utf8).write(to: list)
        let database = directory.appendingPathComponent("store.sqlite").path
        try await fake.run { baseURL in
            var environment = Vectors.environment
            environment["RECEIPTKIT_APPSTORE_KEY_ID"] = AppleFake.keyId
            environment["RECEIPTKIT_APPSTORE_ISSUER_ID"] = AppleFake.issuerId
            environment["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = try AppleFake.keyFile.get()
            environment["RECEIPTKIT_APPSTORE_API_URL"] = baseURL
            environment["RECEIPTKIT_DATABASE_URL"] = "sqlite:\(database)"
            let executable = ServerProcess.executable.path
            let first = try await Tools.run(executable, ["sync", "--from", list.path], environment: environment)
            #expect(first.status == 1, "\(first.text)")
            #expect(first.text.contains("6999999999: transaction_not_found"), "\(first.text)")
            #expect(first.text.contains("done: 2 synced, 1 failed"), "\(first.text)")
            let asked = fake.requests.count

            try await withStore(.sqlite(path: database), searchPath: nil) { store in
                let count = try await store.inputCount(dedupKeys: nil)
                #expect(count == transactions.count + 2)  // and one renewal info per subscription
                // The fake serves one Apple account: its history is both subscriptions'.
                let linked = try await store.keys(customerId: "cust-a").map(\.originalTransactionId)
                #expect(linked == ["6000000100", "6000000200"])
                let revision = try await store.historyRevision(of: SubscriptionKey(
                    bundleId: AppleFake.bundleId, environment: "Sandbox", originalTransactionId: "6000000200"))
                #expect(revision == "r\(transactions.count)")
            }

            let again = try await Tools.run(executable, ["sync", "--from", list.path], environment: environment)
            #expect(again.status == 0, "\(again.text)")
            #expect(fake.requests.count == asked)
            #expect(again.text.contains("0 synced, 0 failed"), "\(again.text)")

            let usage = try await Tools.run(executable, ["sync", list.path], environment: environment)
            #expect(usage.status == 64)
            var off = environment
            off["RECEIPTKIT_APPSTORE_KEY_ID"] = nil
            off["RECEIPTKIT_APPSTORE_ISSUER_ID"] = nil
            off["RECEIPTKIT_APPSTORE_PRIVATE_KEY_FILE"] = nil
            off["RECEIPTKIT_APPSTORE_API_URL"] = nil
            let unconfigured = try await Tools.run(executable, ["sync", "--from", list.path], environment: off)
            #expect(unconfigured.status == 78, "\(unconfigured.text)")
        }
    }
}
