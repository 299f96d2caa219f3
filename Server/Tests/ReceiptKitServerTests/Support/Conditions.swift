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
    _ what: String, within limit: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("not within \(limit): \(what)", sourceLocation: sourceLocation)
    throw CancellationError()
}

extension LoopbackConnection {
    /// Whether the server has read every byte sent on this connection so far: its end of the
    /// connection (local port `serverPort`, remote this end's port) is in `/proc/net/tcp` with
    /// nothing left in its receive queue. (Linux; a request whose head the server has read is in
    /// flight.)
    func serverHasReadEverything(serverPort: Int) throws -> Bool {
        let table = try String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)
        let local = String(format: ":%04X", serverPort)
        let remote = String(format: ":%04X", try localPort())
        for line in table.split(separator: "\n").dropFirst() {
            // sl local_address rem_address st tx_queue:rx_queue …
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[1].hasSuffix(local), fields[2].hasSuffix(remote) else { continue }
            let queues = fields[4].split(separator: ":")
            return queues.count == 2 && Int(queues[1], radix: 16) == 0
        }
        return false  // not accepted yet
    }
}

/// Whether a TCP connection to the loopback port is refused (nothing listens there any more).
func loopbackRefuses(port: Int) -> Bool {
    guard let descriptor = try? connectToLoopback(port: port) else { return true }
    close(descriptor)
    return false
}
