import Foundation
import Hummingbird
import HummingbirdTesting
import GRDB
import ReceiptKitServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Operations {
    /// The disk under a SQLite database fills up under a webhook load of 4 connections: a real full
    /// disk, a size-limited tmpfs that the test mounts (and unmounts) and fills with a file of its
    /// own until the kernel answers `ENOSPC`. SQLite then fails its writes with `SQLITE_FULL`:
    /// the server answers 503 `database_unavailable` with `Retry-After` and carries on; the database
    /// stays intact (`PRAGMA integrity_check`) and keeps every notification answered 200; once the
    /// file is removed, new notifications commit without a restart.
    @Suite("The disk fills")
    struct DiskFullTests {
        /// Mounting a tmpfs needs root (CI runs as root).
        static let tmpfs = Prerequisite(name: "root, to mount a size-limited tmpfs (the full disk of the SQLite test)") {
            geteuid() == 0 && Tools.path(of: "mount") != nil && Tools.path(of: "umount") != nil
        }

        @Test(
            "SQLite's disk full under 4-connection webhook load (a 16 MiB tmpfs filled by a file): 503 database_unavailable with Retry-After within 5 s, integrity_check ok, every 200 kept; once the file is removed, new notifications commit without a restart",
            .requires(tmpfs))
        func diskFull() async throws {
            let notifications = try await LoadNotifications(count: 500, prefix: 4_300_000)
            try await Self.withTmpfs(megabytes: 16) { mount in
                let database = mount.appendingPathComponent("store.sqlite").path
                let filler = mount.appendingPathComponent("filler")
                try await TestServer.serve(
                    location: .sqlite(path: database), searchPath: nil, clock: { Date(timeIntervalSince1970: 1_750_000_000) }
                ) { server in
                    let port = try #require(server.client.port)
                    let load = WebhookLoad(port: port, notifications: notifications.all, pace: .milliseconds(20))
                    let outcomes: [LoadOutcome]
                    let full: ContinuousClock.Instant
                    let freed: ContinuousClock.Instant
                    do {
                        try await load.wait(for: "40 notifications stored", upTo: .seconds(60)) { $0.filter(\.isStored).count >= 40 }
                        let filled = try await Self.offThePool { try Self.fill(filler) }
                        full = ContinuousClock.now
                        // Refused once the database needs a page the disk no longer has.
                        try await load.wait(for: "5 notifications refused on the full disk", upTo: .seconds(60)) { outcomes in
                            outcomes.filter { $0.start >= full && $0.status == 503 }.count >= 5
                        }
                        #expect(try await Self.integrityCheck(database) == ["ok"], "while the disk is full")
                        try FileManager.default.removeItem(at: filler)
                        freed = ContinuousClock.now
                        try await load.wait(for: "40 notifications stored after the disk was freed", upTo: .seconds(60)) { outcomes in
                            outcomes.filter { $0.start >= freed && $0.isStored }.count >= 40
                        }
                        outcomes = try await load.stop()
                        print("operations: the disk filled with \(filled) bytes of filler")
                    } catch {
                        _ = try? await load.stop()
                        throw error
                    }

                    let failures = outcomes.filter { $0.status == nil }
                    #expect(failures.isEmpty, "no answer: \(failures.prefix(3).map { $0.failure ?? "" })")
                    let slowest = try #require(outcomes.map(\.latency).max())
                    #expect(slowest < .seconds(5), "the slowest answer took \(slowest)")
                    let refused = outcomes.filter { $0.status != nil && !$0.isStored }
                    for outcome in refused {
                        #expect(outcome.status == 503 && outcome.code == "database_unavailable", "\(outcome)")
                        #expect(outcome.retryAfter.flatMap(Int.init).map { $0 > 0 } == true, "Retry-After: \(outcome.retryAfter ?? "none")")
                    }
                    let recovered = try #require(outcomes.filter { $0.start >= freed && $0.isStored }.map(\.end).min())
                    print(
                        "operations: \(outcomes.count) webhook requests, \(outcomes.filter(\.isStored).count) answered 200, \(refused.count) 503 on the full disk; slowest answer \(slowest); first 200 \(recovered - freed) after the disk was freed")
                    #expect(try await server.get("/healthz", token: nil).status == .ok)
                    #expect(try await Self.integrityCheck(database) == ["ok"], "once the disk was freed")
                    try await DatabaseOutageTests.expectStored(outcomes, notifications, server)
                }
            }
        }

        /// Runs `body` with a tmpfs of `megabytes` mounted on a new directory, unmounted afterwards.
        static func withTmpfs<T>(megabytes: Int, _ body: (URL) async throws -> T) async throws -> T {
            let mount = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-full-disk-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
            let (status, text) = try await Tools.run(
                Tools.path(of: "mount") ?? "/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "receiptkit-test", mount.path])
            guard status == 0 else {
                try? FileManager.default.removeItem(at: mount)
                throw TmpfsError(description: "mount -t tmpfs exited \(status): \(text)")
            }
            func unmount() async {
                // Lazily, should a file of the finished server still be open: detached at once,
                // released when closed.
                _ = try? await Tools.run(Tools.path(of: "umount") ?? "/bin/umount", ["--lazy", mount.path])
                try? FileManager.default.removeItem(at: mount)
            }
            do {
                let result = try await body(mount)
                await unmount()
                return result
            } catch {
                await unmount()
                throw error
            }
        }

        /// Writes `file` until the disk has no room left (`ENOSPC`).
        ///
        /// - Returns: The bytes written.
        static func fill(_ file: URL) throws -> Int {
            let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard descriptor >= 0 else { throw TmpfsError(description: "open \(file.path): errno \(errno)") }
            defer { close(descriptor) }
            let chunk = [UInt8](repeating: 0x5A, count: 4096)
            var written = 0
            while true {
                let count = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if count < 0 {
                    guard errno == ENOSPC else { throw TmpfsError(description: "write \(file.path): errno \(errno)") }
                    return written
                }
                written += count
            }
        }

        /// `PRAGMA integrity_check` on a connection of its own, on a thread of its own: the server
        /// under test runs in this process, and a check that held one of Swift Concurrency's two
        /// threads for seconds would delay the answers it measures.
        static func integrityCheck(_ path: String) async throws -> [String] {
            try await offThePool {
                var configuration = Configuration()
                configuration.readonly = true
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                defer { try? queue.close() }
                return try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            }
        }

        /// Runs blocking work on a thread of its own.
        static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
            }
        }
    }
}

struct TmpfsError: Error, CustomStringConvertible {
    let description: String
}
