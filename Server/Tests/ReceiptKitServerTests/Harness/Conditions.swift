import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Waits until `condition` holds, polling every 10 ms, for at most `limit` — a bound generous
/// enough for a busy machine, where the condition usually holds within milliseconds.
///
/// - Throws: `CancellationError` after recording an issue naming `what`, when `limit` passes.
func waitUntil(
    _ what: @autoclosure () -> String, within limit: Duration = .seconds(60),
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("not within \(limit): \(what())", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// ``waitUntil(_:within:sourceLocation:_:)`` for a condition that must itself wait (a request).
func waitUntil(
    _ what: @autoclosure () -> String, within limit: Duration = .seconds(60),
    sourceLocation: SourceLocation = #_sourceLocation, asking condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("not within \(limit): \(what())", sourceLocation: sourceLocation)
    throw CancellationError()
}

extension LoopbackConnection {
    /// Whether the server has read at least the first `count` of the `sent` bytes sent on this
    /// connection so far: its end of the connection (local port `serverPort`, remote this end's
    /// port) is in `/proc/net/tcp` with at most `sent - count` bytes left unread. (Linux. Once it
    /// has read a request's head, the request is in flight; it may read the body only as its
    /// handler asks for it.)
    func serverHasRead(_ count: Int, of sent: Int, serverPort: Int) throws -> Bool {
        guard let fields = try serverEnd(serverPort: serverPort) else { return false }  // not accepted yet
        // sl local_address rem_address st tx_queue:rx_queue …
        let queues = fields[4].split(separator: ":")
        guard queues.count == 2, let unread = Int(queues[1], radix: 16) else { return false }
        return unread <= sent - count
    }

    /// The server's end of this connection in `/proc/net/tcp`, as its fields, if it is there.
    func serverEnd(serverPort: Int) throws -> [Substring]? {
        // Read to the end: a procfs file has no size, and a single read of it stops at a page
        // (about 27 sockets), while the suite's other tests keep many sockets open.
        guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp") else {
            throw SocketError(description: "cannot open /proc/net/tcp")
        }
        defer { try? file.close() }
        let table = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        let local = String(format: ":%04X", serverPort)
        let remote = String(format: ":%04X", try localPort())
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            if fields.count > 4, fields[1].hasSuffix(local), fields[2].hasSuffix(remote) { return fields }
        }
        return nil
    }

    /// The server's end of this connection in `/proc/net/tcp`, for a failure message.
    func describeServerEnd(serverPort: Int) -> String {
        guard let fields = try? serverEnd(serverPort: serverPort) else {
            return "no socket \(String(format: "%04X", serverPort)) ← \((try? localPort()).map { String(format: "%04X", $0) } ?? "?") in /proc/net/tcp"
        }
        return "/proc/net/tcp: " + fields.prefix(6).joined(separator: " ")
    }
}

/// Whether a TCP connection to the loopback port is refused (nothing listens there any more).
func loopbackRefuses(port: Int) -> Bool {
    guard let descriptor = try? connectToLoopback(port: port) else { return true }
    close(descriptor)
    return false
}
