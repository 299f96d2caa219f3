import Foundation
import ReceiptKitServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server of the test's own, which it may stop, start again and cut off without
/// touching the shared test database: `initdb` into a temporary directory (as the `postgres` user
/// when the tests run as root, as in CI), started on a free loopback port with its socket in that
/// directory, with one database, `receiptkit`. Stopped by its data directory (`pg_ctl`) and
/// removed at the end, whatever the test's outcome.
final class OwnPostgres: Sendable {
    /// PostgreSQL's server programs: the newest `/usr/lib/postgresql/*/bin` with `initdb`, or
    /// `nil`.
    static let binaries: URL? = {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.compactMap(Int.init).sorted().reversed()
            .map { root.appendingPathComponent("\($0)/bin") }
            .first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path) }
    }()

    /// Whether the tests run as root, where PostgreSQL refuses to run: its programs then run as
    /// the `postgres` user (`runuser`).
    static let asRoot = geteuid() == 0

    /// What a test of its own server needs.
    static let prerequisite = Prerequisite(
        name: "PostgreSQL's server programs (initdb and pg_ctl under /usr/lib/postgresql/*/bin: Debian's postgresql) and, as root, the postgres user and runuser"
    ) {
        guard binaries != nil else { return false }
        guard asRoot else { return true }
        return getpwnam("postgres") != nil && Tools.path(of: "runuser") != nil
    }

    /// The port it listens on, on 127.0.0.1.
    let port: Int
    /// The temporary directory: the data directory, the socket and the log.
    let directory: URL
    private let bin: URL

    /// The URL of one of its databases (`receiptkit`, the one created at start, by default), for
    /// `RECEIPTKIT_DATABASE_URL` and PostgreSQL's client programs.
    func url(database: String = "receiptkit") -> String {
        "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// The location of one of its databases.
    func location(database: String = "receiptkit") throws -> DatabaseLocation {
        try DatabaseLocation(url: url(database: database))
    }

    /// The path of one of PostgreSQL's client programs of the same version (`pg_dump`,
    /// `pg_restore`, `createdb`), which connect over TCP as the `postgres` role whoever runs them.
    func program(_ name: String) -> String {
        bin.appendingPathComponent(name).path
    }

    private init(port: Int, directory: URL, bin: URL) {
        self.port = port
        self.directory = directory
        self.bin = bin
    }

    /// Runs `body` with a new server, started; stops it and removes its directory afterwards.
    static func with<T>(_ body: (OwnPostgres) async throws -> T) async throws -> T {
        guard let bin = binaries else { throw Prerequisite.Missing(name: prerequisite.name) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-own-postgres-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if asRoot {
            try await run("/bin/chown", ["postgres", directory.path], asPostgres: false)
        }
        let server = OwnPostgres(port: try unusedLoopbackPort(), directory: directory, bin: bin)
        do {
            try await server.run("initdb", ["-D", server.data, "-A", "trust", "-U", "postgres", "--no-sync"])
            try await server.start()
            try await server.run("createdb", ["-h", "127.0.0.1", "-p", String(server.port), "-U", "postgres", "receiptkit"])
            let result = try await body(server)
            await server.remove()
            return result
        } catch {
            await server.remove()
            throw error
        }
    }

    private var data: String { directory.appendingPathComponent("data").path }

    /// Starts the server and returns once it accepts connections.
    func start() async throws {
        // fsync off: a test's server, never crashed, that must start and stop quickly.
        try await run("pg_ctl", [
            "-D", data, "-l", directory.appendingPathComponent("log").path, "-w", "-t", "60",
            "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory.path) -c fsync=off -c max_connections=100",
            "start",
        ])
    }

    /// Stops the server as an operator's `pg_ctl stop` does (`-m fast`: every session ended, the
    /// server shut down cleanly) and returns once it has stopped.
    func stop() async throws {
        try await run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"])
    }

    /// The server's log, for a failure's message.
    var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("log"), encoding: .utf8)) ?? ""
    }

    /// Stops the server, if it runs, and removes its directory.
    private func remove() async {
        _ = try? await run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", "60", "stop"], mayFail: true)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs one of PostgreSQL's programs, as the postgres user when the tests run as root.
    private func run(_ program: String, _ arguments: [String], mayFail: Bool = false) async throws {
        try await Self.run(bin.appendingPathComponent(program).path, arguments, asPostgres: Self.asRoot, mayFail: mayFail)
    }

    /// Runs a program to its end, its output in a file and none of this process's other
    /// descriptors inherited: `pg_ctl start` leaves the server running with what it inherited,
    /// and a pipe or Foundation's `Process` monitoring socket held by the server would keep the
    /// test (or another test's program) waiting for an end that never comes.
    private static func run(_ executable: String, _ arguments: [String], asPostgres: Bool, mayFail: Bool = false) async throws {
        let runuser = Tools.path(of: "runuser") ?? "/usr/sbin/runuser"
        let (command, all) = asPostgres ? (runuser, ["-u", "postgres", "--", executable] + arguments) : (executable, arguments)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("receiptkit-own-postgres-\(UUID().uuidString).out")
        let descriptor = open(output.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw OwnPostgresError(description: "open \(output.path): errno \(errno)") }
        defer {
            close(descriptor)
            try? FileManager.default.removeItem(at: output)
        }
        let status = try await spawn(command, all, output: descriptor)
        if status != 0, !mayFail {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw OwnPostgresError(description: "\(([executable] + arguments).joined(separator: " ")) exited \(status): \(text)")
        }
    }

    /// `posix_spawn`s `path` with standard input from `/dev/null`, standard output and error to
    /// `output`, every other descriptor closed, and waits for it on a thread of its own.
    ///
    /// - Returns: Its exit status (128 plus the signal when a signal ended it).
    private static func spawn(_ path: String, _ arguments: [String], output: Int32) async throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        // Each descriptor open now (one opened meanwhile by another thread may still pass; only
        // those of the test process are at stake). Closing one closed since is not an error.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int32($0) } ?? []
        for descriptor in open where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw OwnPostgresError(description: "posix_spawn \(path): error \(spawned)") }
        let child = pid
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) < 0, errno == EINTR {}
                let signal = status & 0x7F
                continuation.resume(returning: signal == 0 ? (status >> 8) & 0xFF : 128 + signal)
            }
        }
    }
}

struct OwnPostgresError: Error, CustomStringConvertible {
    let description: String
}
