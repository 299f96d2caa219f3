import AppStoreServerAPIFake
import Foundation
import Hummingbird
import HummingbirdTesting
import ReceiptKitServer
import Testing

extension Operations {
    /// `receiptkit-server backup --to FILE`, the built executable, copying a SQLite database that a
    /// server is writing under a webhook load of 4 connections: the copy holds everything committed
    /// before the backup began, passes `PRAGMA integrity_check`, and a server started on it answers
    /// as the original does.
    @Suite("Backups")
    struct BackupTests {
        @Test("backup --to FILE during 4-connection webhook load: integrity_check ok, and a server on the copy answers every subscription committed before the backup began as the original does")
        func backupUnderLoad() async throws {
            let notifications = try await LoadNotifications(count: 400, prefix: 4_400_000)
            try await Self.withDirectory { directory in
                let database = directory.appendingPathComponent("store.sqlite").path
                let copy = directory.appendingPathComponent("backup.sqlite").path
                let clock: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_750_000_000) }
                try await TestServer.serve(location: .sqlite(path: database), searchPath: nil, clock: clock) { original in
                    let port = try #require(original.client.port)
                    let load = WebhookLoad(port: port, notifications: notifications.all, pace: .milliseconds(20))
                    let outcomes: [LoadOutcome]
                    let began: ContinuousClock.Instant
                    let ended: ContinuousClock.Instant
                    let backup: (status: Int32, text: String)
                    do {
                        try await load.wait(for: "100 notifications stored", upTo: .seconds(60)) { $0.filter(\.isStored).count >= 100 }
                        began = ContinuousClock.now
                        backup = try await Tools.run(
                            ServerProcess.executable.path, ["backup", "--to", copy], environment: ["RECEIPTKIT_DATABASE_URL": "sqlite:\(database)"])
                        ended = ContinuousClock.now
                        // The load goes on after the backup, so that the copy is compared with a
                        // database that has moved on.
                        try await load.wait(for: "20 notifications stored after the backup", upTo: .seconds(60)) { outcomes in
                            outcomes.filter { $0.start > ended && $0.isStored }.count >= 20
                        }
                        outcomes = try await load.stop()
                    } catch {
                        _ = try? await load.stop()
                        throw error
                    }
                    #expect(backup.status == 0, "\(backup.text)")
                    #expect(backup.text.contains("integrity_check ok"), "\(backup.text)")
                    #expect(try await DiskFullTests.integrityCheck(copy) == ["ok"])

                    // Served while the backup ran, and nothing refused.
                    let during = outcomes.filter { $0.isStored && $0.start < ended && $0.end > began }
                    #expect(!during.isEmpty, "no notification was stored while the backup ran (\(ended - began))")
                    #expect(outcomes.allSatisfy { $0.isStored }, "\(outcomes.filter { !$0.isStored }.prefix(3))")
                    let before = outcomes.filter { $0.isStored && $0.end < began }.map { notifications.all[$0.index] }
                    let after = outcomes.filter { $0.isStored && $0.start > ended }.map { notifications.all[$0.index] }
                    print(
                        "operations: backup took \(ended - began) under load; \(during.count) notifications stored meanwhile; \(before.count) before it began")

                    try await Self.expectRestored(.sqlite(path: copy), answersAs: original, before: before, after: after, clock: clock)
                }
            }
        }

        @Test(
            "PostgreSQL, as docs/operations.md says: pg_dump during 4-connection webhook load, pg_restore into a new database, and a server on it answers every subscription committed before the dump began as the original does",
            .requires(OwnPostgres.prerequisite))
        func pgDumpUnderLoad() async throws {
            let notifications = try await LoadNotifications(count: 400, prefix: 4_500_000)
            try await OwnPostgres.with { postgres in
                try await Self.withDirectory { directory in
                    let dump = directory.appendingPathComponent("receiptkit.dump").path
                    let clock: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_750_000_000) }
                    try await TestServer.serve(location: try postgres.location(), searchPath: nil, clock: clock) { original in
                        let port = try #require(original.client.port)
                        let load = WebhookLoad(port: port, notifications: notifications.all, pace: .milliseconds(20))
                        let outcomes: [LoadOutcome]
                        let began: ContinuousClock.Instant
                        let ended: ContinuousClock.Instant
                        do {
                            try await load.wait(for: "100 notifications stored", upTo: .seconds(60)) { $0.filter(\.isStored).count >= 100 }
                            began = ContinuousClock.now
                            let dumped = try await Tools.run(postgres.program("pg_dump"), ["--format=custom", "--file=\(dump)", postgres.url()])
                            #expect(dumped.status == 0, "\(dumped.text)")
                            ended = ContinuousClock.now
                            try await load.wait(for: "20 notifications stored after the dump", upTo: .seconds(60)) { outcomes in
                                outcomes.filter { $0.start > ended && $0.isStored }.count >= 20
                            }
                            outcomes = try await load.stop()
                        } catch {
                            _ = try? await load.stop()
                            throw error
                        }
                        #expect(outcomes.allSatisfy { $0.isStored }, "\(outcomes.filter { !$0.isStored }.prefix(3))")
                        let created = try await Tools.run(postgres.program("createdb"), ["--host=127.0.0.1", "--port=\(postgres.port)", "--username=postgres", "receiptkit_restored"])
                        #expect(created.status == 0, "\(created.text)")
                        let restored = try await Tools.run(postgres.program("pg_restore"), ["--no-owner", "--dbname=\(postgres.url(database: "receiptkit_restored"))", dump])
                        #expect(restored.status == 0, "\(restored.text)")
                        let before = outcomes.filter { $0.isStored && $0.end < began }.map { notifications.all[$0.index] }
                        let after = outcomes.filter { $0.isStored && $0.start > ended }.map { notifications.all[$0.index] }
                        print("operations: pg_dump took \(ended - began) under load; \(before.count) notifications stored before it began")
                        try await Self.expectRestored(
                            try postgres.location(database: "receiptkit_restored"), answersAs: original, before: before, after: after, clock: clock)
                    }
                }
            }
        }

        /// A server on `restored` answers `GET /v1/subscriptions/{id}` for each of `before` as
        /// `original` does, byte for byte, and knows none of the first of `after`.
        static func expectRestored(
            _ restored: DatabaseLocation, answersAs original: TestServer, before: [LoadNotifications.Notification],
            after: [LoadNotifications.Notification], clock: @escaping @Sendable () -> Date
        ) async throws {
            #expect(!before.isEmpty)
            try await TestServer.serve(location: restored, searchPath: nil, clock: clock) { server in
                for notification in before {
                    let path = "/v1/subscriptions/\(notification.originalTransactionId)"
                    let expected = try await original.get(path)
                    let answer = try await server.get(path)
                    #expect(expected.status == .ok, "\(path): \(expected.text)")
                    #expect(answer.status == expected.status && answer.text == expected.text, "\(path): \(answer.text)")
                }
                // What was stored after the copy ended is not in it.
                for notification in after.prefix(5) {
                    let answer = try await server.get("/v1/subscriptions/\(notification.originalTransactionId)")
                    #expect(answer.status == .notFound, "\(notification.originalTransactionId): \(answer.text)")
                }
            }
        }

        @Test("backup --to refuses an existing FILE (73), a missing database (66) and PostgreSQL (78, naming pg_dump), and leaves no file behind")
        func backupRefusals() async throws {
            try await Self.withDirectory { directory in
                let database = directory.appendingPathComponent("store.sqlite").path
                let existing = directory.appendingPathComponent("existing.sqlite")
                try Data("not a backup".utf8).write(to: existing)
                try await withStore(.sqlite(path: database), searchPath: nil) { store async throws in try await store.migrate() }

                let run = { (arguments: [String], url: String) in
                    try await Tools.run(ServerProcess.executable.path, arguments, environment: ["RECEIPTKIT_DATABASE_URL": url])
                }
                let exists = try await run(["backup", "--to", existing.path], "sqlite:\(database)")
                #expect(exists.status == 73 && exists.text.contains("exists"), "\(exists)")
                #expect(try Data(contentsOf: existing) == Data("not a backup".utf8))

                let target = directory.appendingPathComponent("copy.sqlite").path
                let missing = try await run(["backup", "--to", target], "sqlite:\(directory.appendingPathComponent("none.sqlite").path)")
                #expect(missing.status == 66 && missing.text.contains("no SQLite database"), "\(missing)")
                #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("none.sqlite").path))

                let postgres = try await run(["backup", "--to", target], "postgres://postgres@127.0.0.1:1/receiptkit")
                #expect(postgres.status == 78 && postgres.text.contains("pg_dump"), "\(postgres)")

                let usage = try await run(["backup", target], "sqlite:\(database)")
                #expect(usage.status == 64 && usage.text.contains("usage"), "\(usage)")
                #expect(!FileManager.default.fileExists(atPath: target))
                // Nothing partial was left beside the targets.
                let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("partial") }
                #expect(left.isEmpty, "\(left)")

                // And with a stopped server's database, the copy is whole.
                let copied = try await run(["backup", "--to", target], "sqlite:\(database)")
                #expect(copied.status == 0, "\(copied)")
                #expect(try await DiskFullTests.integrityCheck(target) == ["ok"])
            }
        }

        static func withDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-backup-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            return try await body(directory)
        }
    }
}
