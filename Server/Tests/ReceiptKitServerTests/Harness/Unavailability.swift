import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ReceiptKitServer
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Backend {
    /// Runs `body` while another connection holds the lock every write of an event needs:
    /// SQLite's write lock (`BEGIN EXCLUSIVE` on a connection of its own; in WAL mode readers
    /// still read), or an `ACCESS EXCLUSIVE` lock on PostgreSQL's `events` table. The database
    /// answers, but nothing can be stored until the lock is released, as during another
    /// process's long write or a migration.
    static func holdingWriteLock(
        _ location: DatabaseLocation, searchPath: String?, _ body: () async throws -> Void
    ) async throws {
        switch location {
        case .sqlite(let path):
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true  // the lock is held across accesses
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.inDatabase { try $0.execute(sql: "BEGIN EXCLUSIVE TRANSACTION") }
            do {
                try await body()
            } catch {
                try? queue.inDatabase { try $0.execute(sql: "ROLLBACK") }
                throw error
            }
            try queue.inDatabase { try $0.execute(sql: "ROLLBACK") }
            try queue.close()
        case .postgres(let postgres):
            let store = Store(postgres: postgres, searchPath: searchPath, logger: Logger.silent)
            guard let client = store.postgresClient else { return }
            try await store.whileRunning {
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: .silent)
                    try await connection.query("LOCK TABLE inputs IN ACCESS EXCLUSIVE MODE", logger: .silent)
                    do {
                        try await body()
                    } catch {
                        _ = try? await connection.query("ROLLBACK", logger: .silent)
                        throw error
                    }
                    try await connection.query("ROLLBACK", logger: .silent)
                }
            }
        }
    }
}

/// An HTTP/1.1 exchange over a plain loopback socket, for what a well-behaved client never does:
/// sends `bytes` (say, a request's head and part of its body), then sends nothing more and reads
/// until it has a whole response (by its Content-Length), the server closes, or `limit` passes.
///
/// - Returns: What the server sent, as text ("" when nothing came).
func rawExchange(port: Int, send bytes: [UInt8], readFor limit: Duration) async throws -> String {
    let connection = try LoopbackConnection(port: port)
    try connection.write(bytes)
    return try await connection.response(within: limit)
}

/// A plain TCP connection to a loopback port, for requests sent in pieces, at the test's pace.
final class LoopbackConnection: Sendable {
    private let descriptor: Int32

    init(port: Int) throws {
        descriptor = try connectToLoopback(port: port)
    }

    deinit { close(descriptor) }

    /// This end's port.
    func localPort() throws -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard status == 0 else { throw SocketError(description: "getsockname: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw SocketError(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads, on a thread of its own, until a whole response has come (by its Content-Length),
    /// the server closes, or `limit` passes.
    ///
    /// - Returns: What the server sent, as text ("" when nothing came).
    func response(within limit: Duration) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: self.blockingResponse(within: limit))
            }
        }
    }

    private func blockingResponse(within limit: Duration) -> String {
        let deadline = ContinuousClock.now + limit
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            if isComplete(String(decoding: received, as: UTF8.self)) { break }
            var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let remaining = deadline - ContinuousClock.now
            let milliseconds = max(1, Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
            guard poll(&pollDescriptor, 1, milliseconds) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }  // closed, or reset
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

struct SocketError: Error, CustomStringConvertible {
    let description: String
}

/// Whether `text` holds a response's head and as many body bytes as its Content-Length says.
private func isComplete(_ text: String) -> Bool {
    guard let end = text.range(of: "\r\n\r\n") else { return false }
    let head = text[..<end.lowerBound].lowercased()
    guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
        let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
    else { return false }
    return text[end.upperBound...].utf8.count >= length
}

/// A loopback port nothing listens on, for a server a test starts later (and may stop and start
/// again on it): a free port below the kernel's ephemeral range, bound once to find it free, then
/// closed. Not port 0's choice: that comes from the ephemeral range, where every outgoing
/// connection of the run (HTTP clients, PostgreSQL) also takes its local port — one of them could
/// take the port before the server binds it. Never the same port twice in a run: two tests that
/// pick one at once would otherwise both find it free, and the second to bind would fail.
func unusedLoopbackPort() throws -> Int {
    let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
        .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
    let range = 10_000..<max(10_001, min(ephemeralStart, 65_536))
    for _ in 0..<1_000 {
        let port = Int.random(in: range)
        guard handedOutPorts.withLockedValue({ $0.insert(port).inserted }) else { continue }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        if bound { return port }
    }
    throw SocketError(description: "no free loopback port in \(range)")
}

/// The ports ``unusedLoopbackPort()`` has handed out (or found taken) in this run.
private let handedOutPorts = Locked<Set<Int>>([])

/// A loopback TCP forwarder to a port: a database server that a test can make unreachable.
/// ``stop()`` closes its listening socket (so nothing listens on ``port`` any more) and resets
/// every connection it forwards, as a crashed database host or a network partition would.
final class TCPForwarder: @unchecked Sendable {  // the sockets are guarded by `lock`
    /// The port it listens on.
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var connections: [Int32] = []

    /// Starts forwarding connections to `127.0.0.1:targetPort`.
    init(to targetPort: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw SocketError(description: "socket: errno \(errno)") }
        self.listener = listener
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 64) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard listening else { throw SocketError(description: "bind/listen: errno \(errno)") }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in accept(forwardingTo: targetPort) }
    }

    /// Stops listening and resets every forwarded connection.
    func stop() {
        lock.withLock {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
            for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func accept(forwardingTo targetPort: Int) {
        while true {
            let client = Glibc.accept(listener, nil, nil)
            guard client >= 0 else { return }  // stopped
            guard let upstream = try? connectToLoopback(port: targetPort) else {
                close(client)
                continue
            }
            lock.withLock { connections += [client, upstream] }
            Thread.detachNewThread { Self.pump(from: client, to: upstream) }
            Thread.detachNewThread { Self.pump(from: upstream, to: client) }
        }
    }

    /// Copies bytes until either side ends, then ends both (the descriptors stay open until
    /// the process exits: a test leaks a few).
    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        copying: while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            var sent = 0
            while sent < count {
                let written = buffer[sent..<count].withUnsafeBytes { Glibc.send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { break copying }
                sent += written
            }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }
}

private func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// A TCP connection to `127.0.0.1:port`: its socket, which the caller closes.
func connectToLoopback(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SocketError(description: "socket: errno \(errno)") }
    var address = loopback(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        let code = errno
        close(fd)
        throw SocketError(description: "connect: errno \(code)")
    }
    return fd
}
