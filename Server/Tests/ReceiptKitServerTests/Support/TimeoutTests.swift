import ReceiptKitServer
import Synchronization
import Testing

/// ``DeadlineTimer`` and ``withTimeout(_:timer:timedOut:_:)``: a sleeper wakes at its deadline and not
/// before, a cancelled one stops at once and leaves the table, the ticking task stops when the
/// table is empty and starts again for the next sleeper, and a timeout cuts an operation short.
///
/// Serialized: its tests measure sleeps, and run one at a time they do not compete with each
/// other for the cores; each bound is still an order of magnitude, for a machine busy with others.
@Suite("Request timeouts", .serialized)
struct TimeoutTests {
    struct TimedOut: Error {}

    /// What tasks record, shared between them.
    final class Log<Value: Sendable>: Sendable {
        private let values: Mutex<[Value]> = Mutex([])
        func append(_ value: Value) { values.withLock { $0.append(value) } }
        var all: [Value] { values.withLock { $0 } }
    }

    @Test("a sleeper wakes at its deadline: not before, and not ten times later")
    func wakesAtDeadline() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let start = ContinuousClock.now
        try await timer.sleep(until: start + .milliseconds(500))
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(500), "woke after \(elapsed)")
        #expect(elapsed < .seconds(5), "woke after \(elapsed)")
        #expect(timer.sleeperCount == 0)
    }

    @Test("sleepers with different deadlines each wake at theirs, not before, and the timer ticks again after an idle spell")
    func severalSleepers() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(5))
        let lateness = Log<Duration>()
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for delay in [300, 60, 180] {
                group.addTask {
                    let deadline = start + .milliseconds(delay)
                    try await timer.sleep(until: deadline)
                    lateness.append(ContinuousClock.now - deadline)
                }
            }
            try await group.waitForAll()
        }
        // Not before the deadline; how late depends on the machine's load (a few ms when idle).
        #expect(lateness.all.count == 3)
        #expect(lateness.all.allSatisfy { $0 >= .zero && $0 < .seconds(5) }, "\(lateness.all)")
        #expect(timer.sleeperCount == 0)
        // Nothing sleeps: the ticking task has stopped (or stops at its next tick).
        try await Task.sleep(for: .milliseconds(50))
        let again = ContinuousClock.now
        try await timer.sleep(until: again + .milliseconds(30))
        #expect(ContinuousClock.now - again >= .milliseconds(30))
    }

    @Test("a cancelled sleeper throws CancellationError at once and leaves the table")
    func cancelledSleeper() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let sleeper = Task { try await timer.sleep(until: .now + .seconds(60)) }
        let deadline = ContinuousClock.now + .seconds(60)
        while timer.sleeperCount == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(timer.sleeperCount == 1)
        let start = ContinuousClock.now
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        // At once, not at the 60 s deadline.
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(timer.sleeperCount == 0)
    }

    @Test("a sleeper whose task is already cancelled throws at once")
    func alreadyCancelled() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await timer.sleep(until: .now + .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(timer.sleeperCount == 0)
    }

    @Test("withTimeout returns a quick operation's result and leaves no sleeper behind")
    func quickOperation() async throws {
        let timer = DeadlineTimer(resolution: .milliseconds(10))
        let value = try await withTimeout(.seconds(30), timer: timer, timedOut: { TimedOut() }) { 42 }
        #expect(value == 42)
        #expect(timer.sleeperCount == 0)
    }

    @Test("withTimeout throws timedOut() at the timeout and cancels the operation")
    func slowOperation() async throws {
        let cancelled = Log<Bool>()
        let start = ContinuousClock.now
        await #expect(throws: TimedOut.self) {
            try await withTimeout(.milliseconds(500), timedOut: { TimedOut() }) {
                do {
                    try await Task.sleep(for: .seconds(60))
                } catch {
                    cancelled.append(true)
                    throw error
                }
            }
        }
        let elapsed = ContinuousClock.now - start
        // The order of magnitude of the 500 ms timeout: not before it, and not ten times later.
        #expect(elapsed >= .milliseconds(500) && elapsed < .seconds(5), "timed out after \(elapsed)")
        #expect(cancelled.all == [true])
    }

    @Test("withTimeout passes an operation's own error on")
    func failingOperation() async throws {
        struct Own: Error {}
        await #expect(throws: Own.self) {
            try await withTimeout(.seconds(30), timedOut: { TimedOut() }) { () async throws -> Int in throw Own() }
        }
    }
}
