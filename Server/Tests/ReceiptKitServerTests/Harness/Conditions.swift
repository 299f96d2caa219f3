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

extension TestServer {
    /// The value of one sample of `/metrics` (`name{labels}`, as the exposition writes it), if
    /// the server exposes it.
    func metric(_ sample: String) async throws -> Double? {
        let exposition = try await get("/metrics").text
        for line in exposition.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }

    /// The backlog gauge `receiptkit_outbox_oldest_pending_seconds` of a destination
    /// (`webhook`, `forward:HOST:PORT`, `apple`).
    static func oldestPending(_ destination: String) -> String {
        #"receiptkit_outbox_oldest_pending_seconds{destination="\#(destination)"}"#
    }

    /// Waits until the delivery service has begun a round after this call, and so has run
    /// that round's claim, with the outbox and the clock as they are now.
    ///
    /// Each round claims what is due (when it has room), then updates the backlog gauges. With a
    /// row of `destination` pending and a clock that moves (the wall clock), the gauge of its
    /// age changes at every update: a value other than the one read here comes from an update
    /// after this call, and the round of the next change began after that update ended.
    func waitForDeliveryRound(pending destination: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let sample = Self.oldestPending(destination)
        var last = try await metric(sample)
        for change in 1...2 {
            var value = last
            try await waitUntil("change \(change) of \(sample) (\(value.map { String($0) } ?? "not exposed"))", sourceLocation: sourceLocation, asking: {
                value = try await metric(sample)
                return value != nil && value != last
            })
            last = value
        }
    }

    /// Waits until the delivery service has updated its backlog gauges at `now` — the instant the
    /// test's clock was set to, `pendingSince` the oldest pending row of `destination` — and so
    /// has run, at that instant, the round's claim and (once a poll interval) its pruning before.
    ///
    /// A round claims, then updates the gauges, then prunes: the pruning at an earlier instant
    /// has ended once the gauges show a later one.
    func waitForDeliveryRound(
        at now: Int64, pending destination: String, since pendingSince: Int64, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let sample = Self.oldestPending(destination)
        let expected = Double(now - pendingSince) / 1000
        var value: Double?
        try await waitUntil("\(sample) \(expected) (\(value.map { String($0) } ?? "not exposed"))", sourceLocation: sourceLocation, asking: {
            value = try await metric(sample)
            return value == expected
        })
    }
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
